"""bench/readme_table.py: the README's speed table is the benches' records, verbatim, and is up to date."""

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import common  # noqa: E402 - bench/ is not a package
import readme_table  # noqa: E402

RESULTS = ROOT / "bench" / "out" / "results.json"


def rec(now: str, reference: str = "—", goal: str = "—", quick: bool = False, utc: str = "2025-01-02T03:04:05Z"):
    return {"now": now, "reference": reference, "goal": goal, "values": {"seconds": 123.0}, "source": "bench/x.py",
            "command": "python bench/x.py", "utc": utc, "quick": quick}


def readme(tmp_path: Path) -> Path:
    path = tmp_path / "README.md"
    path.write_text(f"# T\n\nabove\n\n{readme_table.BEGIN}\nold table\n{readme_table.END}\n\nbelow\n",
                    encoding="utf-8")
    return path


def write(tmp_path: Path, results: dict) -> Path:
    path = tmp_path / "results.json"
    path.write_text(json.dumps(results), encoding="utf-8")
    return path


def test_renders_the_records_verbatim_and_missing_rows_as_not_measured(tmp_path):
    # deliberately inconsistent numbers: the generator must copy the cells, never recompute a ratio or verdict
    results = write(tmp_path, {
        "startup.help": rec("0.05 s", '`python -c "import numpy"` 0.1 s: 9.99×', "≤ 3×: **not met**"),
        "tree.huge": rec("25.9 s, 6.6 GB", goal="≤ 30 s, ≤ 12 GB: pass", utc="2025-01-05T00:00:00Z"),
        "tree_io.release": rec("0.8 s wall", "pyarrow 0.15 s: **5.3×**", "≤ 4×: **not met**"),
        "not.a.row": rec("ignored", utc="1999-01-01T00:00:00Z"),
    })
    path = readme(tmp_path)
    assert readme_table.main(["--results", str(results), "--readme", str(path)]) == 0
    text = path.read_text(encoding="utf-8")
    assert text.startswith("# T\n\nabove\n\n") and text.endswith(f"{readme_table.END}\n\nbelow\n")
    assert "old table" not in text and "ignored" not in text
    rows = {line.split(" | ")[0][2:]: line.split(" | ")[1:] for line in text.splitlines() if line.startswith("| ")}
    by_key = {r.key: rows[r.what] for r in readme_table.ROWS}
    assert len(by_key) == len(readme_table.ROWS) == len(rows) - 1  # every row once, plus the header
    assert by_key["startup.help"] == ["1.7–2.1 s", "0.05 s", '`python -c "import numpy"` 0.1 s: 9.99×',
                                      "≤ 3×: **not met** |"]
    assert by_key["tree.huge"][1:] == ["25.9 s, 6.6 GB", "—", "≤ 30 s, ≤ 12 GB: pass |"]
    assert by_key["tree_io.release"][3].startswith("≤ 4×: **not met** (formatting")  # the known reason
    missing = [k for k, cells in by_key.items() if cells[1:] == ["not measured"] * 2 + ["not measured |"]]
    assert sorted(missing) == sorted(r.key for r in readme_table.ROWS if r.key not in ("startup.help", "tree.huge",
                                                                                      "tree_io.release"))
    assert "123" not in text  # the raw values are not shown
    assert "from `" + str(results) + "` (records of 2025-01-02 to 2025-01-05, UTC" in text
    assert readme_table.main(["--results", str(results), "--readme", str(path), "--check"]) == 0


def test_quick_records_are_refused_unless_allowed(tmp_path, capsys):
    results = write(tmp_path, {"stream.step": rec("0.7 µs", quick=True)})
    path = readme(tmp_path)
    before = path.read_text(encoding="utf-8")
    assert readme_table.main(["--results", str(results), "--readme", str(path)]) == 2
    assert "stream.step" in capsys.readouterr().err and path.read_text(encoding="utf-8") == before
    assert readme_table.main(["--results", str(results), "--readme", str(path), "--allow-quick"]) == 0
    assert "0.7 µs (`--quick` run)" in path.read_text(encoding="utf-8")


def test_check_reports_a_stale_readme_and_a_missing_results_file(tmp_path, capsys):
    results = write(tmp_path, {"tree.huge": rec("25.9 s, 6.6 GB")})
    path = readme(tmp_path)
    assert readme_table.main(["--results", str(results), "--readme", str(path), "--check"]) == 1
    assert "-old table" in capsys.readouterr().out
    assert readme_table.main(["--results", str(tmp_path / "none.json"), "--readme", str(path)]) == 2


def test_record_merges_rows_atomically(tmp_path, monkeypatch):
    out = tmp_path / "out" / "results.json"
    monkeypatch.setenv(common.RESULTS_ENV, str(out))
    common.record("tree.huge", "1 s", "—", "pass", quick=True, source="bench/tree_bench.py", values={"s": 1.0})
    common.record("stream.step", "2 µs", "ref", "pass", quick=False, source="bench/stream_bench.py")
    common.record("tree.huge", "3 s", "—", "pass", quick=False, source="bench/tree_bench.py")
    got = json.loads(out.read_text(encoding="utf-8"))
    assert sorted(got) == ["stream.step", "tree.huge"]
    assert got["tree.huge"]["now"] == "3 s" and got["tree.huge"]["quick"] is False
    assert got["stream.step"]["source"] == "bench/stream_bench.py" and got["stream.step"]["utc"].endswith("Z")
    assert [p.name for p in out.parent.iterdir() if p.name != "results.json.lock"] == ["results.json"]


def test_the_readme_is_generated_from_the_committed_results(capsys):
    if not RESULTS.exists():
        pytest.skip("bench/out/results.json not produced yet (run the benches, then bench/readme_table.py)")
    rc = readme_table.main(["--results", str(RESULTS), "--check"])
    assert rc == 0, "README.md is not what bench/readme_table.py generates:\n" + capsys.readouterr().out
