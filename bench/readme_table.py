"""Regenerate the README's speed table ("Speed: startup, files, big trees, streams, pages") from the records
the benches wrote into bench/out/results.json (``common.record``). This script measures and computes
nothing: the "now", "reference" and "goal" cells are the benches' own text; the "what" and "before"
columns are history (numbers from before the optimisations, which cannot be re-measured) kept below.

Run: ``python bench/readme_table.py [--check] [--allow-quick] [--results PATH] [--readme PATH]``
(``--check``: exit 1 and print a diff when README.md differs from what would be written).
"""

from __future__ import annotations

import argparse
import difflib
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import load_results, results_path  # noqa: E402 - bench/ is on sys.path when run as a script

ROOT = Path(__file__).resolve().parents[1]
BEGIN, END = "<!-- bench-table:begin -->", "<!-- bench-table:end -->"
MISSING = "not measured"
HEADER = "| what | before | now | reference, same run | goal |\n|---|---|---|---|---|"


@dataclass(frozen=True)
class Row:
    key: str  # the record's key in results.json
    what: str
    before: str
    why_not_met: str = ""  # shown after the goal cell when the bench says "not met"


ROWS = [
    Row("startup.help", "`python -m dpviz --help` (`bench/startup_bench.py`; only the named command group is "
        "imported)", "1.7–2.1 s"),
    Row("startup.county", "small release, `tree release sample:county`", "—"),
    Row("tree_io.release", "`tree release` of a 10⁶-node CSV, ids 0..n−1, in process (`bench/tree_io_bench.py`; "
        "the goal's measure)", "6.0–6.2 s (43×), 574 MB",
        "formatting 3·10⁶ shortest round-trip floats alone is 0.3 s"),
    Row("tree_io.release_deep", "the same size, a deep tree (height ~3.9·10⁴: node i hangs from i − U{1..50}), "
        "in process (issue 21: deep trees in O(n))", "9.8× pyarrow (two sparse LU factorisations; issue 21)"),
    Row("tree_io.release_labelled", "the same CSV with string ids (hashed), in process", "—"),
    Row("tree_io.release_process", "the same CSV as a fresh `python -m dpviz` process (startup included, as the "
        "issue measured it)", "6.1 s, 660 MB (issue 11)"),
    Row("tree_io.junk", "200 MB junk file, tree (a fresh `python -m dpviz tree release`)", "9.6 s, 1.8 GB"),
    Row("stream.junk", "200 MB junk file, stream (`read_stream_csv`, in process; `bench/stream_bench.py`)",
        "15.4 s, 1.5 GB"),
    Row("tree.gmc_per_release", "GMC per release, complete binary tree of 16,777,215 nodes (`bench/tree_bench.py`)",
        "0.58–3.5 s"),
    Row("tree.gmc_whole", "whole call from the parent array, same tree (`tree_from_parents`: one pass recognises "
        "BFS-ordered input, heights from the level structure)", "2.1–7.2 s, 1.73 GB (`tree_from_parents` 0.35 s)"),
    Row("tree.huge", "complete binary tree of 2²⁷ − 1 = 134,217,727 nodes, end to end (`--huge`)", "—"),
    Row("records.tree", "records → counts (`bench/records_bench.py --rows 100000000`): a 10⁸-row Parquet person "
        "file (10 columns, 50 files) → tree release by 4 geography levels, in process (streaming batches); "
        "peak = VmHWM of the step's process", "— (issue 21: trees arrived as counts)"),
    Row("records.marginals", "the same file → all 15 2-way marginals of 6 columns (dpviz: the 6-way count summed "
        "down; DuckDB: the fastest of 15 `GROUP BY`s, `GROUPING SETS`, the 6-way `GROUP BY` summed down)",
        "3·10⁶ rows × 6 columns: 8.6 s, 480 MB, read whole (issue 21)"),
    Row("records.dask", "the same counts on a 2-worker `distributed.LocalCluster` (per-partition Arrow counts "
        "merged on the workers; peak = VmHWM of client + workers + nannies)", "—"),
    Row("stream.step", "streaming Fenwick + FDA, one step (`bench/stream_bench.py`)", "24–86 µs"),
    Row("stream.variances", "per-step variances, N = 10⁶, a second release", "15–130 ms recomputed"),
    Row("page.tree_path", "Tree page, path-like 10⁶ nodes (h = 500,001), ε move (`bench/tree_page_latency.py`; "
        "level pickers are plain sliders above 200 levels)", "10.4 s (stepper 3.3 s, Boosting 3.3 s)"),
    Row("page.tree_big", "Tree page, complete / random fan-out 10⁶ nodes, ε move", "—"),
    Row("browser.home", "**In the browser** (`bench/browser_latency.py`: headless Chromium at 1280 px on a real "
        "`streamlit run`, action → last chart painted; the rows above are the server side, AppTest script time): "
        "Home", "—"),
    Row("browser.tree", "browser: Tree (county sample), ε move and each control's first change",
        "ε move 4.4–5.5 s, load 9–21 s, New noise draw 12.7 s (issue 19)"),
    Row("browser.stream", "browser: Stream (flights sample)", "ε move 0.5 s (issue 19)"),
    Row("browser.marginals", "browser: Marginals (titanic sample)",
        "ε move 0.3 s, but results cleared (not live; issue 19)"),
    Row("browser.graph", "browser: Graph (karate sample)", "ε move 1.3–1.7 s (4.1 s on netscience; issue 19)"),
    Row("browser.histogram", "browser: Histogram (education sample)", "— (new in issue 18)"),
    Row("browser.planner", "browser: Planner", "0.3–0.9 s (issue 19)"),
    Row("browser.ledger", "browser: Privacy ledger", "1–2 s (issue 19)"),
]


class QuickRecords(ValueError):
    """Records from a ``--quick`` run (smaller sizes): not the README's figures."""


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _shown(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def render(results: dict[str, dict], source: Path, allow_quick: bool = False) -> str:
    """The table, its footer line and nothing else (the text between the markers)."""
    quick = [r.key for r in ROWS if results.get(r.key, {}).get("quick")]
    if quick and not allow_quick:
        raise QuickRecords(f"records from a --quick run (smaller sizes): {', '.join(quick)}; rerun those benches "
                           "without --quick, or pass --allow-quick")
    lines = [HEADER]
    for row in ROWS:
        rec = results.get(row.key)
        if rec is None:
            now = reference = goal = MISSING
        else:
            now, reference, goal = rec["now"], rec["reference"], rec["goal"]
            now += " (`--quick` run)" if rec.get("quick") else ""
            goal += f" ({row.why_not_met})" if row.why_not_met and "not met" in goal else ""
        lines.append("| " + " | ".join(_cell(c) for c in (row.what, row.before, now, reference, goal)) + " |")
    days = sorted(results[r.key]["utc"][:10] for r in ROWS if r.key in results)
    span = (days[0] if days[0] == days[-1] else f"{days[0]} to {days[-1]}") if days else "none yet"
    lines += ["", f"Generated by `python bench/readme_table.py` from `{_shown(source)}` (records of {span}, UTC; "
              f"\"{MISSING}\": no record yet). \"before\" is history, from before the optimisations."]
    return "\n".join(lines)


def splice(readme: str, block: str) -> str:
    """``readme`` with the text between the markers replaced by ``block``."""
    head, sep, rest = readme.partition(BEGIN)
    _, sep2, tail = rest.partition(END)
    if not (sep and sep2):
        raise ValueError(f"README has no {BEGIN} ... {END} block")
    return f"{head}{BEGIN}\n\n{block}\n\n{END}{tail}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", type=Path, default=None, help="default: $DPVIZ_BENCH_RESULTS or bench/out/results.json")
    ap.add_argument("--readme", type=Path, default=ROOT / "README.md")
    ap.add_argument("--allow-quick", action="store_true", help="accept records of --quick runs (marked as such)")
    ap.add_argument("--check", action="store_true", help="exit 1 and print a diff if README.md is not up to date")
    a = ap.parse_args(argv)
    source = (a.results or results_path()).resolve()
    old = a.readme.read_text(encoding="utf-8")
    try:
        if not source.exists():
            raise ValueError(f"no {source}: run the benches first (see the README's speed section)")
        new = splice(old, render(load_results(source), source, a.allow_quick))
    except ValueError as exc:  # also a malformed results file (json.JSONDecodeError)
        print(f"readme_table: {exc}", file=sys.stderr)
        return 2
    if a.check:
        if old == new:
            return 0
        sys.stdout.writelines(difflib.unified_diff(old.splitlines(True), new.splitlines(True), str(a.readme),
                                                   "generated"))
        return 1
    if old != new:
        a.readme.write_text(new, encoding="utf-8")
    print(f"readme_table: {a.readme} {'rewritten' if old != new else 'already up to date'} from {source}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
