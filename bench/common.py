"""Helpers shared by the benchmark scripts (run as `python bench/NAME.py`, so this folder is on sys.path)."""

from __future__ import annotations

import fcntl
import json
import math
import os
import shlex
import sys
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path


def best_of(fn: Callable[[], object], repeat: int = 3) -> float:
    """Smallest wall-clock time of ``repeat`` calls of ``fn`` (seconds)."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def ratio(a: float | None, b: float | None) -> str:
    """``a / b`` as "1.23x", or "—" when either is missing or not finite, or b ≤ 0."""
    if a is None or b is None or not (math.isfinite(a) and math.isfinite(b)) or b <= 0:
        return "—"
    return f"{a / b:.3g}x"


def table(header: list[str], rows: list[list[str]]) -> None:
    """Print a plain left-aligned text table (header, dashes, rows) and a blank line."""
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows, strict=True)]
    print("  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip())
    print("  ".join("-" * w for w in widths))
    for r in rows:
        print("  ".join(str(x).ljust(w) for x, w in zip(r, widths, strict=True)).rstrip())
    print()


# ---- machine-readable results: bench/out/results.json, read by bench/readme_table.py -------------------
BENCH = Path(__file__).resolve().parent
RESULTS_ENV = "DPVIZ_BENCH_RESULTS"
if str(BENCH.parent) not in sys.path:  # the repository, for dpviz (record writes through its atomic writer)
    sys.path.insert(1, str(BENCH.parent))


def results_path() -> Path:
    """Where ``record`` writes: ``$DPVIZ_BENCH_RESULTS`` if set (smoke runs), else bench/out/results.json."""
    return Path(os.environ.get(RESULTS_ENV) or BENCH / "out" / "results.json")


def load_results(path: Path) -> dict[str, dict]:
    """The records in ``path`` keyed by row, or {} when there is no file yet."""
    if not path.exists():
        return {}
    return json.loads(path.read_text(encoding="utf-8"))


def record(key: str, now: str, reference: str, goal: str, *, quick: bool, source: str,
           values: dict[str, float] | None = None) -> None:
    """Merge one README row into the results file: the cells as the bench formatted them (``now``,
    ``reference``, ``goal`` with its verdict), the raw numbers, the script, the command line, the UTC
    time and whether it was a ``--quick`` run. Written atomically (``dpviz.core.tables.write_text``)
    under a lock, so two benches may record at once."""
    from dpviz.core.tables import write_text

    path = results_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    entry = {"now": now, "reference": reference, "goal": goal, "values": values or {}, "source": source,
             "command": shlex.join(["python", *(_relative(a) for a in sys.argv)]),
             "utc": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"), "quick": quick}
    with open(path.with_name(path.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        results = load_results(path)
        results[key] = entry
        write_text(json.dumps(dict(sorted(results.items())), indent=1, ensure_ascii=False) + "\n", path)


def _relative(arg: str) -> str:
    """A path inside the repository as ``bench/x.py``; anything else as given."""
    p = Path(arg)
    if p.is_absolute() and p.is_relative_to(BENCH.parent):
        return str(p.relative_to(BENCH.parent))
    return arg


def cell_s(seconds: float) -> str:
    """A duration as the README writes it: "0.703 µs", "18.8 ms", "0.116 s", "25.9 s"."""
    if seconds < 1e-3:
        return f"{seconds * 1e6:.3g} µs"
    if seconds < 0.1:
        return f"{seconds * 1e3:.3g} ms"
    return f"{seconds:.0f} s" if seconds >= 100 else f"{seconds:.3g} s"


def cell_range(lo: float, hi: float) -> str:
    """Two durations as "0.753–0.761 s" (one unit written once), or one when they print alike."""
    a, b = cell_s(lo), cell_s(hi)
    if a == b:
        return a
    (number, unit), other_unit = a.split(" "), b.split(" ")[1]
    return f"{number}–{b}" if unit == other_unit else f"{a}–{b}"


def cell_x(r: float) -> str:
    """A ratio as "3.44×"."""
    return f"{r:.3g}×"


def cell_verdict(ok: bool) -> str:
    """A goal cell's verdict: "pass" or "**not met**"."""
    return "pass" if ok else "**not met**"
