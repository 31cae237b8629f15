"""Declared tree hierarchies (issue 17, item 5): a release publishes exactly the declared node list, with the
counts joined on by node id; which nodes the counts file lists (zeros omitted, undeclared rows) leaves no
trace in the output, the metadata or stdout. Without a declaration a release of a file exits 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow.csv as pa_csv
import pytest

from dpviz.core.structure import DESCRIBE_NOTICE, STRUCTURE_FROM_DATA_NOTICE, missing_declaration
from dpviz.errors import InputError
from dpviz.tree.hierarchy import (
    Hierarchy,
    counts_of,
    describe_structure,
    join_counts,
    read_counts,
    read_hierarchy,
    sample_hierarchy,
)
from dpviz.tree.io import load as load_source, load_tree_file
from tests.test_tree_io_cli import ROOT, call_main

HIER = b"node,parent\nr,\na,r\nb,r\nc,a\nd,a\ne,b\n"  # leaves c, d, e
FULL = b"node,parent,count\nr,,\na,r,\nb,r,\nc,a,3\nd,a,0\ne,b,4\n"
SPARSE = b"node,count\nc,3\ne,4\n"  # only the non-zero leaves, no structure


@pytest.fixture
def cli(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))  # no default ledger
    monkeypatch.delenv("DPVIZ_LEDGER", raising=False)
    return lambda *args: call_main(capsys, *map(str, args))


def _write(folder: Path, name: str, raw: bytes) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_bytes(raw)
    return path


def _release(cli, src: Path, *flags, out: Path | None = None):
    out = out or src.with_name("o.csv")
    proc = cli("tree", "release", src, *flags, "--epsilon", "1", "--output", out)
    assert proc.returncode == 0, proc.stderr
    meta = json.loads(out.with_name(out.name + ".meta.json").read_text())
    return proc, out.read_text().splitlines(), meta


def _public(lines: list[str]) -> list[str]:
    """node,parent of every released row."""
    return [",".join(line.split(",")[:2]) for line in lines]


def _timeless(meta: dict) -> dict:
    return {k: v for k, v in meta.items() if k != "created_utc"}


# ---- the join ------------------------------------------------------------------------------------------------
def test_a_sparse_counts_file_gives_the_node_list_of_the_full_file(cli, tmp_path):
    hier = _write(tmp_path, "h.csv", HIER)
    _, full, meta_full = _release(cli, _write(tmp_path / "full", "t.csv", FULL), "--hierarchy", hier)
    _, sparse, meta_sparse = _release(cli, _write(tmp_path / "sparse", "t.csv", SPARSE), "--hierarchy", hier)
    _, own, _ = _release(cli, _write(tmp_path / "own", "t.csv", FULL), "--structure-from-data")
    assert _public(sparse) == _public(full) == _public(own)[:1] + _public(own)[1:]
    assert _public(full)[1:] == ["r,", "a,r", "b,r", "c,a", "d,a", "e,b"]
    assert _timeless(meta_full) == _timeless(meta_sparse)
    assert meta_full["structure"] == {"n": 6, "m": 3, "h": 3, "source": "declared", "declaration": "h.csv"}


def test_neighbouring_files_give_identical_public_structure(cli, tmp_path):
    """One leaf 0 (omitted from the file) vs 1: same node and parent columns, same metadata (but its
    time), same stdout."""
    hier = _write(tmp_path, "h.csv", HIER)
    zero = _write(tmp_path / "zero", "t.csv", b"node,count\nc,3\ne,4\n")
    one = _write(tmp_path / "one", "t.csv", b"node,count\nc,3\nd,1\ne,4\n")
    p0, rows0, meta0 = _release(cli, zero, "--hierarchy", hier)
    p1, rows1, meta1 = _release(cli, one, "--hierarchy", hier)
    assert _public(rows0) == _public(rows1) and len(rows0) == 7
    assert _timeless(meta0) == _timeless(meta1)
    assert p0.stdout.replace(str(zero.parent), "D") == p1.stdout.replace(str(one.parent), "D")


def test_undeclared_rows_are_dropped_without_trace(cli, tmp_path):
    hier = _write(tmp_path, "h.csv", HIER)
    clean = _write(tmp_path / "a", "t.csv", b"node,parent,count\nc,a,3\ne,b,4\n")
    extra = _write(tmp_path / "b", "t.csv", b"node,parent,count\nc,a,3\nzed,a,9\ne,b,4\nyon,q,7\n")
    p0, rows0, meta0 = _release(cli, clean, "--hierarchy", hier)
    p1, rows1, meta1 = _release(cli, extra, "--hierarchy", hier)
    assert _public(rows0) == _public(rows1)
    assert _timeless(meta0) == _timeless(meta1)
    assert p0.stdout.replace(str(clean.parent), "D") == p1.stdout.replace(str(extra.parent), "D")
    text = "\n".join([*rows1, json.dumps(meta1), p1.stdout, p1.stderr]).replace(str(tmp_path), "D")
    for trace in ("zed", "yon", "drop", "undeclared", "2 row"):
        assert trace not in text, trace


def test_the_input_parent_column_is_ignored(cli, tmp_path):
    """The counts file's own structure (here: everything under the root) does not change the release."""
    hier = _write(tmp_path, "h.csv", HIER)
    flat = _write(tmp_path, "flat.csv", b"node,parent,count\nr,,\nc,r,3\nd,r,0\ne,r,4\n")
    _, rows, _ = _release(cli, flat, "--hierarchy", hier)
    assert _public(rows)[1:] == ["r,", "a,r", "b,r", "c,a", "d,a", "e,b"]


def test_join_counts_library_api():
    hier = read_hierarchy(HIER, "h.csv")
    assert isinstance(hier, Hierarchy) and hier.tree.n == 6 and hier.source.kind == "declared"
    data = join_counts(hier, read_counts(SPARSE, "t.csv"))
    full = load_tree_file(FULL)
    np.testing.assert_array_equal(data.x, full.x)
    np.testing.assert_array_equal(data.v, full.v)
    assert data.structure.as_dict() == {"source": "declared", "declaration": "h.csv"} and data.name == "t.csv"
    # a loaded TreeData (e.g. an upload read with its own structure) joins by leaf id
    again = join_counts(hier, load_tree_file(b"node,parent,count\nroot,,\nc,root,3\ne,root,4\nzz,root,5\n"))
    np.testing.assert_array_equal(again.x, full.x)
    assert counts_of(full).ids.to_pylist() == ["c", "d", "e"]


def test_declarations_in_the_other_structure_formats():
    levels = read_hierarchy(b"region,state\nSouth,Texas\nSouth,Utah\nWest,Oregon\n", "levels.csv")
    assert levels.tree.n == 6 and levels.ids.to_pylist()[0] == "(all)"
    counts = read_counts(b"region,state,pop\nSouth,Texas,5\nWest,Oregon,2\nNorth,Yukon,9\n", "c.csv")
    assert join_counts(levels, counts).v[0] == 7  # Utah 0, Yukon undeclared
    array = read_hierarchy(b'{"parent": [-1, 0, 0, 1]}', "p.json")
    data = join_counts(array, read_counts(b"node,count\n2,5\n3,1\n", "c.csv"))
    assert data.tree.n == 4 and data.v[0] == 6
    as_json = read_hierarchy(b'[{"node": "r", "parent": null}, {"node": "a", "parent": "r"}]', "h.json")
    assert as_json.tree.n == 2


def test_integer_ids_join_exactly_and_07_is_not_7():
    hier = read_hierarchy(b"node,parent\n10,\n7,10\n8,10\n", "h.csv")  # integer ids, not row positions
    data = join_counts(hier, read_counts(b"node,count\n7,2\n8,3\n", "c.csv"))
    assert data.v[0] == 5
    data = join_counts(hier, read_counts(b"node,count\n07,2\n8,3\n", "c.csv"))  # '07' is another id
    assert data.v[0] == 3
    rows = read_hierarchy(b"node,parent\n0,\n1,0\n2,0\n", "h.csv")  # ids = row positions
    assert join_counts(rows, read_counts(b"node,count\n2,4\n5,9\n-1,3\n", "c.csv")).v[0] == 4


COUNT_ERRORS = {  # counts file -> message (the hierarchy is HIER)
    "duplicate declared id": (b"node,count\nc,3\ne,4\nc,5\n", "t.csv: line 4 (node 'c'): duplicate node id 'c' "
                                                              "(first on line 2 (node 'c'))"),
    "empty count on a declared leaf": (b"node,parent,count\nc,a,\ne,b,4\n", "t.csv: line 2 (node 'c'): leaf has no"),
    "inner count disagrees": (b"node,count\na,9\nc,3\n", "t.csv: line 2 (node 'a'): count 9 disagrees"),
    "negative": (b"node,count\nc,-3\n", "line 2 (node 'c'): count -3 is negative"),
    "no count column": (b"node,parent\nc,a\n", "no count column"),
    "parent array": (b"parent,count\n-1,\n0,3\n", "a parent array has no node ids"),
}


@pytest.mark.parametrize("name", list(COUNT_ERRORS))
def test_counts_errors_name_the_line(name):
    raw, expected = COUNT_ERRORS[name]
    with pytest.raises(InputError) as exc:
        join_counts(read_hierarchy(HIER, "h.csv"), read_counts(raw, "t.csv"))
    assert expected in str(exc.value)


def test_duplicates_among_undeclared_rows_are_dropped_like_the_rest():
    data = join_counts(read_hierarchy(HIER, "h.csv"), read_counts(b"node,count\nc,3\nzz,1\nzz,2\n", "t.csv"))
    assert data.v[0] == 3


# ---- the CLI --------------------------------------------------------------------------------------------------
def test_a_release_without_declaration_exits_2_and_says_what_to_pass(cli, tmp_path):
    src = _write(tmp_path, "t.csv", FULL)
    out = tmp_path / "o.csv"
    t0 = time.perf_counter()
    proc = cli("tree", "release", src, "--epsilon", "1", "--output", out)
    assert proc.returncode == 2 and proc.stderr.strip().splitlines() == [
        f"dpviz: error: {missing_declaration('--hierarchy', 'the tree hierarchy (node list)', 'tree')}"]
    assert "--structure-from-data" in proc.stderr and "describe-structure" in proc.stderr
    assert not out.exists() and not tmp_path.joinpath("o.csv.meta.json").exists()
    assert time.perf_counter() - t0 < 5
    both = cli("tree", "release", src, "--hierarchy", src, "--structure-from-data", "--epsilon", "1", "--output", out)
    assert both.returncode == 2 and "exclude each other" in both.stderr and not out.exists()


def test_the_opt_out_says_so_in_the_csv_the_metadata_and_stdout(cli, tmp_path):
    proc, rows, meta = _release(cli, _write(tmp_path, "t.csv", FULL), "--structure-from-data")
    assert rows[0] == "node,parent,noisy,released,variance,std,structure"
    assert all(r.endswith(",data") for r in rows[1:]) and len(rows) == 7  # the file: where it came from, each row
    assert meta["structure"]["source"] == "data" and meta["structure"]["notice"] == STRUCTURE_FROM_DATA_NOTICE
    assert STRUCTURE_FROM_DATA_NOTICE in meta["columns"]["structure"]  # the notice in full: once, in the meta
    assert STRUCTURE_FROM_DATA_NOTICE in proc.stdout


def test_sample_county_ships_its_declaration(cli, tmp_path):
    proc, rows, meta = _release(cli, Path("sample:county"), out=tmp_path / "o.csv")
    assert meta["structure"]["source"] == "declared" and "us_county_hierarchy_2019.csv" in meta["structure"][
        "declaration"]
    assert rows[0] == "node,parent,noisy,released,variance,std" and len(rows) == 3208
    assert STRUCTURE_FROM_DATA_NOTICE not in proc.stdout and "declared public structure" in proc.stdout
    county = load_source("sample:county")
    assert county.structure is not None and county.tree.n == 3207 and county.v[0] == 328_239_523
    assert sample_hierarchy("county").tree.n == 3207 and sample_hierarchy("nosuch") is None


def test_a_level_table_of_a_few_counties_joins_onto_the_county_declaration(cli, tmp_path):
    few = _write(tmp_path, "few.csv", b"region,division,state,county,population\n"
                                      b"South,West South Central,Texas,Travis County,1000\n"
                                      b"Nowhere,X,Y,Z,77\n")
    out = tmp_path / "o.csv"
    _, rows, meta = _release(cli, few, "--hierarchy", ROOT / "dpviz/assets/us_county_hierarchy_2019.csv", out=out)
    assert len(rows) == 3208 and meta["structure"]["n"] == 3207 and "Nowhere" not in "\n".join(rows)


def test_describe_structure_writes_a_template_that_releases_the_same_nodes(cli, tmp_path):
    src = _write(tmp_path, "t.csv", FULL)
    hier = tmp_path / "h.csv"
    proc = cli("tree", "describe-structure", src, "--output", hier)
    assert proc.returncode == 0, proc.stderr
    assert DESCRIBE_NOTICE in proc.stdout
    assert hier.read_text().splitlines() == ["node,parent", "r,", "a,r", "b,r", "c,a", "d,a", "e,b"]
    _, rows, _ = _release(cli, _write(tmp_path / "s", "t.csv", SPARSE), "--hierarchy", hier)
    assert _public(rows)[1:] == hier.read_text().splitlines()[1:]
    assert describe_structure(load_tree_file(FULL)).column_names == ["node", "parent"]


def test_simulate_accepts_a_hierarchy(cli, tmp_path):
    hier = _write(tmp_path, "h.csv", HIER)
    out = tmp_path / "sim.csv"
    proc = cli("tree", "simulate", _write(tmp_path, "t.csv", SPARSE), "--hierarchy", hier, "--epsilon", "1",
               "--seed", "1", "--output", out)
    assert proc.returncode == 0, proc.stderr
    assert "n=6 nodes" in proc.stdout and len(out.read_text().splitlines()) == 7


def test_a_release_never_overwrites_its_hierarchy(cli, tmp_path):
    hier = _write(tmp_path, "h.csv", HIER)
    before = hier.read_bytes()
    proc = cli("tree", "release", _write(tmp_path, "t.csv", SPARSE), "--hierarchy", hier, "--epsilon", "1",
               "--output", hier)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1 and hier.read_bytes() == before


# ---- speed ----------------------------------------------------------------------------------------------------
def test_a_million_node_join_is_vectorised(tmp_path):
    """10^6 declared nodes, the counts of a third of them: the join is one lookup (no loop per node)."""
    n = 1_000_000
    rng = np.random.default_rng(0)
    parent = np.concatenate(([-1], rng.integers(0, np.arange(1, n))))  # a random recursive tree
    ids = np.arange(n) + 7  # integer ids that are not row positions
    hier_csv, counts_csv = tmp_path / "h.csv", tmp_path / "c.csv"
    import pyarrow as pa

    pa_csv.write_csv(pa.table({"node": ids, "parent": pa.array(np.where(parent < 0, 0, ids[parent]),
                                                               mask=parent < 0)}), hier_csv)
    leaves = np.setdiff1d(np.arange(n), parent[1:])
    some = leaves[::3]
    pa_csv.write_csv(pa.table({"node": ids[some], "count": np.ones(some.size, np.int64)}), counts_csv)
    hier, counts = read_hierarchy(hier_csv), read_counts(counts_csv)
    t0 = time.perf_counter()
    data = join_counts(hier, counts)
    seconds = time.perf_counter() - t0
    assert data.tree.n == n and data.v[0] == some.size
    assert seconds < 2.0, seconds  # about 0.1-0.3 s; generous on a shared machine


def test_release_help_says_the_parent_column_is_ignored():
    out = subprocess.run([sys.executable, "-m", "dpviz", "tree", "release", "--help"], cwd=ROOT, capture_output=True,
                         text=True, check=True, env={**os.environ, "COLUMNS": "200"}).stdout
    flat = " ".join(out.split())
    assert "--hierarchy FILE" in flat and "parent column is ignored" in flat and "--structure-from-data" in flat


def test_a_template_keeps_formula_like_ids_as_they_are_so_that_they_join(cli, tmp_path):
    """Release CSVs escape ``=...`` cells for spreadsheets; a declaration template is read back by dpviz, so its
    ids stay exact (else the node would silently count 0)."""
    src = _write(tmp_path, "t.csv", b"node,parent,count\nr,,\n=1+1,r,3\nb,r,4\n")
    hier = tmp_path / "h.csv"
    assert cli("tree", "describe-structure", src, "--output", hier).returncode == 0
    assert hier.read_text().splitlines()[2] == "=1+1,r"
    data = join_counts(read_hierarchy(hier), read_counts(src))
    assert data.v[0] == 7 and sorted(data.x.tolist()) == [3, 4]


def test_a_budget_set_with_the_hierarchy_refuses_the_release_that_uses_it(cli, tmp_path):
    """`ledger set-budget --hierarchy` names the dataset that `tree release --hierarchy` charges (the counts
    joined onto the declaration), so the budget binds: a sparse counts file is the same dataset as the full file."""
    hier, sparse = _write(tmp_path, "h.csv", HIER), _write(tmp_path, "c.csv", SPARSE)
    full = _write(tmp_path, "full.csv", FULL)
    led = tmp_path / "l.sqlite3"
    set_b = cli("ledger", "set-budget", sparse, "--capability", "tree", "--hierarchy", hier, "--epsilon", "1.5",
                "--ledger", led)
    assert set_b.returncode == 0, set_b.stderr
    ok = cli("tree", "release", sparse, "--hierarchy", hier, "--epsilon", "1", "--output", tmp_path / "a.csv",
             "--ledger", led)
    assert ok.returncode == 0, ok.stderr
    # the full file (zeros listed) released on the same declaration is the same dataset: 0.5 is left
    refused = cli("tree", "release", full, "--hierarchy", hier, "--epsilon", "1", "--output", tmp_path / "b.csv",
                  "--ledger", led)
    assert refused.returncode == 3 and not (tmp_path / "b.csv").exists(), refused.stderr
    bad = cli("ledger", "set-budget", "sample:flights", "--hierarchy", hier, "--epsilon", "1", "--ledger", led)
    assert bad.returncode == 2 and "only a tree" in bad.stderr
