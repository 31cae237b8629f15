"""Hostile input on every tree command (issue 12) and its size arguments (issue 11 "Bounded resources"):
each case exits with code 2 and exactly one line on stderr naming what was wrong, writes no output file,
and costs nothing (caps are checked before the work). The loader cases are also checked at the library
level (the parser raises InputError naming the line or record, not the caller)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from dpviz.errors import InputError
from dpviz.tree import synthetic
from dpviz.tree.io import load_tree_file
from dpviz.tree.reading import MAX_COUNT, read_table
from dpviz.tree.model import tree_from_parents
from tests.test_tree_io_cli import call_main

ROOT = Path(__file__).resolve().parents[1]
BIG_COUNT = MAX_COUNT // 2 + 1  # two of them exceed the total cap, each is allowed

# name -> (file content, expected text in the message); files for `tree release/simulate/...`
FILES: dict[str, tuple[bytes, str]] = {
    "deep json": (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
    "deep json object": (b'{"a":' * 50_000 + b"1" + b"}" * 50_000, "nested too deeply"),
    "empty record": (b"[{}]", "no fields"),
    "record not an object": (b'[{"node": "a", "parent": null, "count": 1}, 5]', "record 1 is not an object"),
    "nested json value": (b'[{"node": "r", "parent": null}, {"node": "a", "parent": "r", "count": [1]}]',
                          "record 1, field 'count': expected a string or a number"),
    "huge json integer": (b'[{"node": "r", "parent": null, "count": ' + b"9" * 5000 + b"}]", "cannot be read"),
    "lone surrogate": (b'[{"node": "\\ud800", "parent": null, "count": 1}]', "not valid Unicode"),
    "NUL duplicate ids": (b"node,parent,count\nroot,,\na\x00,root,3\na\x00,root,4\n",
                          "line 4: duplicate node id 'a\\x00' (first on line 3)"),
    "NUL duplicate level rows": (b"region,state,count\nx,y\x00,3\nx,y\x00,4\n", "line 3: duplicate row for 'x / y\\x00'"),
    "NUL duplicate level ids": (b"region,count\na\x00,3\na\x00,4\n", "line 3: duplicate row for 'a\\x00'"),
    "two BOMs": (b"\xef\xbb\xbf\xef\xbb\xbf", "is empty"),
    "BOMs and blanks": (b"\xef\xbb\xbf\xef\xbb\xbf \n\n", "is empty"),
    "header only": (b"node,parent,count\n", "no data rows"),
    "ragged row": (b"a,count\nx,1,5\ny,2,6\n", "line 2 has 3 field(s), more than the 2 column(s)"),
    "ragged after blank lines": (b"a,count\n\nx,1\n\ny,2,6\n", "line 5 has 3 field(s)"),
    "short row": (b"node,parent,count\nr,,\na,r\n", "line 3 has 2 field(s), fewer than the 3"),
    "parent 2^32": (b"parent,count\n-1,\n4294967296,3\n0,4\n", "parent index 4294967296 is out of range at line 3"),
    "parent 2^64+1": (b"parent,count\n-1,\n18446744073709551617,3\n0,4\n", "line 3: parent '18446744073709551617'"),
    "parent fraction": (b"parent,count\n-1,\n0.5,3\n0,4\n", "line 3: parent '0.5' is not a row index"),
    "parent -2": (b"parent,count\n-1,\n-2,3\n0,4\n", "parent index -2 is out of range at line 3"),
    "parent text": (b"parent,count\n-1,\nzero,3\n", "line 3: parent 'zero' is not a row index"),
    "json parent 2^32": (b'{"parent": [-1, 4294967296, 0], "count": [null, 3, 4]}', "parent index 4294967296"),
    "counts overflow": (b"node,parent,count\nroot,,\na,root,1e308\nb,root,1e308\n", "line 3 (node 'a'): count 1e308 is above"),
    "count above 2^53": (f"node,parent,count\nroot,,\na,root,{MAX_COUNT + 2}\n".encode(), "above the largest count 2^53"),
    "total above 2^53": (f"node,parent,count\nroot,,\na,root,{BIG_COUNT}\nb,root,{BIG_COUNT}\n".encode(),
                         "the counts add up to 9,007,199,254,740,994, above the largest total"),
    "level counts overflow": (b"region,pop\nx,1e308\ny,1e308\n", "line 2 column 'pop': count 1e308 is above"),
    "count inf": (b"node,parent,count\nroot,,\na,root,inf\n", "count 'inf' is not a finite number"),
    "duplicate column": (b"node,Node,parent,count\nr,r,,\n", "column 'node' appears twice"),
    "cycle": (b"node,parent,count\nr,,\na,b,1\nb,a,1\n", "cycle"),
    "row-index ids, parent -1": (b"node,parent,count\n0,,\n1,-1,3\n", "line 3 (node '1'): parent '-1' is not a node"),
    "row-index ids, parent 7": (b"node,parent,count\n0,,\n1,7,3\n", "line 3 (node '1'): parent '7' is not a node"),
    "row-index ids, parent 01": (b"node,parent,count\n0,,\n1,00,3\n", "line 3 (node '1'): parent '00' is not a node"),
    "integer ids, cycle": (b"node,parent,count\n5,,\n7,9,3\n9,7,1\n", "cycle"),
    "junk, one column": (b"qwertyuiop\n" * 1000, "expected node,parent,count columns or one column per level"),
    "junk header, then anything": (b"qwertyuiop\n" + b"a,b,c\n" * 10 + bytes(range(256)),
                                   "expected node,parent,count columns"),  # refused from the header alone
    "self loop": (b"node,parent,count\nr,,\na,a,1\n", "line 3 (node 'a') is its own parent"),
}


def _release_args(path: Path, out: Path) -> list[str]:
    return ["tree", "release", str(path), "--structure-from-data", "--epsilon", "1", "--output", str(out)]


@pytest.fixture
def cli(capsys):
    """``python -m dpviz ARGS`` in process: a CompletedProcess (exit code, stdout, stderr)."""
    return lambda *args: call_main(capsys, *args)


def assert_refused(result: subprocess.CompletedProcess, expected: str, *outputs: Path) -> None:
    rc, err = result.returncode, result.stderr
    lines = err.strip().splitlines()
    assert rc == 2, err
    assert len(lines) == 1 and lines[0].startswith("dpviz: error: "), err
    assert expected in lines[0], lines[0]
    assert "Traceback" not in err
    for out in outputs:
        assert not out.exists() and not out.with_name(out.name + ".meta.json").exists(), out


@pytest.mark.parametrize("name", list(FILES))
def test_hostile_file_is_refused_by_the_parser_and_the_cli(name, cli, tmp_path):
    """The loader raises InputError naming where; ``tree release`` exits 2 with that one line."""
    raw, expected = FILES[name]
    try:
        load_tree_file(raw, name="t.csv")
    except InputError as exc:
        assert expected in str(exc), str(exc)
    else:
        raise AssertionError("accepted")
    src = tmp_path / ("in.json" if raw.lstrip()[:1] in (b"[", b"{") else "in.csv")
    src.write_bytes(raw)
    out = tmp_path / "o.csv"
    assert_refused(cli(*_release_args(src, out)), expected, out)


@pytest.mark.parametrize("command", ["simulate", "consistency", "properties", "propagate", "matrix"])
def test_deep_json_and_ragged_rows_on_every_reading_command(command, cli, tmp_path):
    for name in ("deep json", "ragged row", "NUL duplicate ids"):
        raw, expected = FILES[name]
        if command == "consistency":  # a noisy tree: node,parent,value
            raw = {"ragged row": b"node,parent,value\nr,,1\na,r,1,5\n"}.get(name, raw)
            raw = raw.replace(b"count", b"value").replace(b"root,,\n", b"root,,7\n")
            expected = {"ragged row": "line 3 has 4 field(s)"}.get(name, expected)
        src = tmp_path / "in.csv"
        src.write_bytes(raw)
        out = tmp_path / "o.csv"
        args = ["tree", command, str(src), "--output", str(out)]
        if command == "simulate":
            args += ["--epsilon", "1", "--seed", "1"]
        assert_refused(cli(*args), expected, out)


GOOD = b"node,parent,count\nroot,,\na,root,3\nb,root,4\n"

# (arguments after `tree`, expected text); {src} is a good tree file, {out} the output path
ARGS: dict[str, tuple[list[str], str]] = {
    "count column unknown": (["release", "{src}", "--structure-from-data", "--epsilon", "1", "--count-column", "nosuch", "--output", "{out}"],
                             "count column 'nosuch' not found"),
    "queries 0": (["simulate", "{src}", "--epsilon", "1", "--queries", "0"], "--queries: expected a positive integer"),
    "queries -5": (["simulate", "{src}", "--epsilon", "1", "--queries", "-5"], "--queries: expected a positive integer"),
    "queries huge": (["simulate", "{src}", "--epsilon", "1", "--queries", "1000000000000"], "at most 1,000,000"),
    "steps 0": (["propagate", "{src}", "--steps", "0", "--output", "{out}"], "--steps: expected a positive integer"),
    "steps -1": (["propagate", "{src}", "--steps", "-1", "--output", "{out}"], "--steps: expected a positive integer"),
    "steps above h": (["propagate", "{src}", "--steps", "3", "--output", "{out}"], "--steps must lie in 1..2"),
    "matrix k": (["matrix", "{src}", "--k", "5", "--output", "{out}"], "--k must lie in 0..1"),
    "matrix nnz": (["matrix", "{src}", "--which", "Ginv", "--max-nnz", "3", "--output", "{out}"],
                   "5 non-zeros, more than the limit of 3"),
    "lam -1": (["generate", "--lam", "-1", "--output", "{out}"], "--lam: expected a positive finite number"),
    "lam nan": (["generate", "--lam", "nan", "--output", "{out}"], "--lam: expected a positive finite number"),
    "lam inf": (["generate", "--lam", "inf", "--output", "{out}"], "--lam: expected a positive finite number"),
    "lam huge": (["generate", "--lam", "1e300", "--output", "{out}"], "largest total count 2^53"),
    "generate seed -1": (["generate", "--seed", "-1", "--output", "{out}"], "non-negative integer"),
    "generate k 0": (["generate", "--k", "0", "--output", "{out}"], "--k: expected a positive integer"),
    "generate nodes 0": (["generate", "--kind", "path-like", "--nodes", "0", "--output", "{out}"],
                         "--nodes: expected a positive integer"),
    "random-fanout 10^12": (["generate", "--kind", "random-fanout", "--nodes", "1000000000000", "--output", "{out}"],
                            "1,000,000,000,000 nodes (about"),
    "random-fanout 10^12 raised cap": (["generate", "--kind", "random-fanout", "--nodes", "1000000000000",
                                        "--max-nodes", "1000000000000", "--output", "{out}"],
                                       "this machine has available"),
    "complete height 40": (["generate", "--kind", "complete", "--height", "40", "--output", "{out}"],
                           "1,099,511,627,775 nodes (about"),
    "complete height 10^9": (["generate", "--kind", "complete", "--height", "1000000000", "--output", "{out}"],
                             "more than the limit of 5,000,000 nodes; raise it with --max-nodes N"),
    "complete k 10^18": (["generate", "--kind", "complete", "--k", "1000000000000000000", "--height", "3",
                          "--output", "{out}"], "more than the limit"),
    "output folder missing": (["release", "{src}", "--structure-from-data", "--epsilon", "1", "--output", "/nonexistent/dir/o.csv"],
                              "the folder /nonexistent/dir does not exist"),
    "output is a folder": (["release", "{src}", "--structure-from-data", "--epsilon", "1", "--output", "{dir}"], "is a directory"),
    "node cap": (["release", "{src}", "--structure-from-data", "--epsilon", "1", "--max-nodes", "2", "--output", "{out}"],
                 "more than the limit of 2 nodes"),
    "byte cap": (["release", "{src}", "--structure-from-data", "--epsilon", "1", "--max-bytes", "10", "--output", "{out}"],
                 "bytes, above the size cap; the limit is 10 bytes (MAX_BYTES); raise it with the CLI flag --max-bytes"),
    "max-nodes 0": (["release", "{src}", "--structure-from-data", "--epsilon", "1", "--max-nodes", "0", "--output", "{out}"],
                    "--max-nodes: expected a positive integer"),
    "consistency byte cap": (["consistency", "{src}", "--max-bytes", "10", "--output", "{out}"], "the limit is 10 bytes"),
}


@pytest.mark.parametrize("name", list(ARGS))
def test_bad_arguments_exit_2_one_line_no_output(name, cli, tmp_path):
    args, expected = ARGS[name]
    src = tmp_path / "good.csv"
    src.write_bytes(GOOD)
    out = tmp_path / "o.csv"
    t0 = time.perf_counter()
    result = cli("tree", *[a.format(src=src, out=out, dir=tmp_path) for a in args])
    assert_refused(result, expected, out)
    assert time.perf_counter() - t0 < 5  # refused before any work (generous: the box is shared)


def test_a_big_junk_file_is_refused_from_its_size_without_reading_it(tmp_path, cli):
    """A sparse file far above the byte cap: refused from ``stat`` (reading it would take seconds)."""
    junk = tmp_path / "junk.csv"
    with junk.open("wb") as fh:
        fh.truncate(200_000_000)  # 200 MB of NULs, no disk blocks
    out = tmp_path / "o.csv"
    t0 = time.perf_counter()
    assert_refused(cli(*_release_args(junk, out)), "200,000,000 bytes, above the size cap", out)
    assert time.perf_counter() - t0 < 2


def test_too_many_rows_are_refused_while_reading(tmp_path):
    """Rows are counted on the raw bytes while reading (before parsing): blank lines do not count."""
    many = b"node,parent,count\n" + b"x\n" * 50
    with pytest.raises(InputError, match="more than 10 data rows .counted while reading."):
        load_tree_file(many, max_nodes=10)
    ok = b"node,parent,count\n\n\nr,,\n\n\r\n" + b"".join(b"a%d,r,1\n\n\n" % i for i in range(9))
    assert load_tree_file(ok, max_nodes=10).tree.n == 10  # 10 rows, 30 lines


def test_cap_messages_say_the_limit_and_how_to_raise_it():
    with pytest.raises(InputError) as exc:
        load_tree_file(GOOD, max_bytes=5)
    assert "the limit is 5 bytes (MAX_BYTES)" in str(exc.value) and "--max-bytes N" in str(exc.value)
    with pytest.raises(InputError) as exc:
        load_tree_file(b"region,pop\na,1\nb,1\nc,1\n", max_nodes=3)  # 3 rows but 4 nodes (the root)
    assert "4 nodes, more than the limit of 3" in str(exc.value) and "--max-nodes N" in str(exc.value)


def test_help_states_the_caps():
    out = subprocess.run([sys.executable, "-m", "dpviz", "tree", "release", "--help"], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout
    flat = " ".join(out.split())
    assert "5,000,000 nodes" in flat and "100,000,000 bytes" in flat and "2^53" in flat
    assert "--max-nodes" in flat and "--max-bytes" in flat and "--count-column" in flat


# ---- the parsers at the right depth ------------------------------------------------------------------------
def test_parent_indices_are_checked_before_any_narrowing():
    with pytest.raises(InputError, match="parent index 4294967296 is out of range at position 1"):
        tree_from_parents(np.array([-1, 2**32, 0], np.int64))
    with pytest.raises(InputError, match="out of range"):
        tree_from_parents(np.array([-1, 2**63 - 1], np.int64))
    with pytest.raises(InputError, match="must be integers"):
        tree_from_parents(np.array([-1.0, 0.0]))
    with pytest.raises(InputError, match="must be integers"):
        tree_from_parents(np.array([True, False]))
    assert tree_from_parents(np.array([-1, 0, 0], np.uint64 if False else np.int8)).n == 3


def test_exact_integers_and_totals_are_accepted_at_the_bound():
    d = load_tree_file(f"node,parent,count\nroot,,\na,root,{MAX_COUNT - 1}\nb,root,1\n".encode())
    assert d.v[0] == MAX_COUNT
    d = load_tree_file(b"parent,count\n-1,\n0.0,2\n0,3\n")  # an index written as a float is exact
    assert d.tree.n == 3 and d.v[0] == 5


def test_latin1_and_bom_files_still_read():
    d = load_tree_file("\ufeffnode,parent,count\nr,,\nZürich,r,2\n".encode("latin-1", "replace").replace(b"?", b""))
    assert "Zürich" in set(d.node_ids)
    d = load_tree_file(b"\xef\xbb\xbf\xef\xbb\xbfnode,parent,count\nr,,\na,r,2\n")  # two BOMs, then a table
    assert d.v[0] == 2


def test_quoted_ids_with_commas_round_trip_through_the_writer(tmp_path, cli):
    src = tmp_path / "q.csv"
    src.write_bytes(b'node,parent,count\n"r, 1",,\n"a ""x""","r, 1",2\n')
    out = tmp_path / "p.csv"
    proc = cli("tree", "properties", str(src), "--output", str(out))
    assert proc.returncode == 0, proc.stderr
    back = read_table(out)
    assert back.col("node").to_pylist() == ["r, 1", 'a "x"'] and back.col("parent").to_pylist() == ["", "r, 1"]


def test_generators_refuse_before_allocating():
    with pytest.raises(InputError, match="this machine has available"):
        synthetic.complete_tree(2, 60, 10.0, np.random.default_rng(0))
    with pytest.raises(InputError, match="more than the limit of 10 nodes"):
        synthetic.check_size(synthetic.planned_size("complete", k=3, height=4), 10)
    assert synthetic.complete_size(2, 10**9) == 2**200  # no giant integer is built
    with pytest.raises(InputError, match="--lam"):
        synthetic.random_fanout_tree(10, -1.0, np.random.default_rng(0))


# ---- declared hierarchies (issue 17): declaration errors name the line; FIFOs are refused at once ----------------
HIERARCHIES: dict[str, tuple[bytes, str]] = {
    "duplicate id": (b"node,parent\nr,\na,r\na,r\n",
                     "--hierarchy h.csv: line 4: duplicate node id 'a' (first on line 3)"),
    "unknown parent": (b"node,parent\nr,\na,q\n", "--hierarchy h.csv: line 3 (node 'a'): parent 'q' is not a node"),
    "two roots": (b"node,parent\nr,\ns,\na,r\n", "--hierarchy h.csv: several roots: line 2 (node 'r'), line 3"),
    "cycle": (b"node,parent\nr,\na,b\nb,a\n", "--hierarchy h.csv: cycle: 2 node(s) cannot reach the root"),
    "self loop": (b"node,parent\nr,\na,a\n", "--hierarchy h.csv: cycle: line 3 (node 'a') is its own parent"),
    "empty id": (b"node,parent\nr,\n,r\n", "--hierarchy h.csv: line 3: empty node id"),
    "ragged row": (b"node,parent\nr,\na,r,5\n", "line 3 has 3 field(s), more than the 2 column(s)"),
    "count column": (b"node,parent,count\nr,,\na,r,3\n", "--hierarchy h.csv: has a count column 'count'"),
    "node without parent": (b"node\nr\na\n", "--hierarchy h.csv: has a node column but no parent column"),
    "duplicate level row": (b"region,state\nx,y\nx,y\n", "--hierarchy h.csv: line 3: duplicate row for 'x / y'"),
    "empty level": (b"region,state\nx,y\n,z\n", "--hierarchy h.csv: line 3: empty value in level column 'region'"),
    "parent index out of range": (b"parent\n-1\n5\n", "--hierarchy h.csv: parent index 5 is out of range at line 3"),
    "empty file": (b"", "is empty"),
    "header only": (b"node,parent\n", "no data rows"),
    "deep json": (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
    "NUL duplicate ids": (b"node,parent\nr,\na\x00,r\na\x00,r\n",
                          "line 4: duplicate node id 'a\\x00' (first on line 3)"),
}


@pytest.mark.parametrize("name", list(HIERARCHIES))
def test_hostile_hierarchy_is_refused_naming_the_line(name, cli, tmp_path):
    raw, expected = HIERARCHIES[name]
    src = tmp_path / "t.csv"
    src.write_bytes(GOOD)
    hier = tmp_path / "h.csv"
    hier.write_bytes(raw)
    out = tmp_path / "o.csv"
    assert_refused(cli("tree", "release", str(src), "--hierarchy", str(hier), "--epsilon", "1", "--output", str(out)),
                   expected, out)


def _fifo(tmp_path: Path) -> Path:
    import os

    fifo = tmp_path / "fifo.csv"
    os.mkfifo(fifo)
    return fifo


FIFO_COMMANDS = {  # (arguments after `tree`, expected); {fifo} is a named pipe nobody writes to
    "release input": (["release", "{fifo}", "--structure-from-data", "--epsilon", "1", "--output", "{out}"],
                      "input: {fifo} is a FIFO (named pipe)"),
    "release input with a hierarchy": (["release", "{fifo}", "--hierarchy", "{src}", "--epsilon", "1", "--output",
                                        "{out}"], "is a FIFO (named pipe)"),
    "release --hierarchy": (["release", "{src}", "--hierarchy", "{fifo}", "--epsilon", "1", "--output", "{out}"],
                            "--hierarchy: {fifo} is a FIFO (named pipe)"),
    "simulate --hierarchy": (["simulate", "{src}", "--hierarchy", "{fifo}", "--epsilon", "1"],
                             "--hierarchy: {fifo} is"),
    "simulate input": (["simulate", "{fifo}", "--epsilon", "1"], "is a FIFO (named pipe)"),
    "describe-structure input": (["describe-structure", "{fifo}", "--output", "{out}"], "is a FIFO (named pipe)"),
    "consistency input": (["consistency", "{fifo}", "--output", "{out}"], "is a FIFO (named pipe)"),
}


@pytest.mark.parametrize("name", list(FIFO_COMMANDS))
def test_a_fifo_is_refused_at_once(name, tmp_path):
    """A named pipe nobody writes to: refused before it is opened (opening it would block forever).
    A real process with a timeout, so that a regression fails instead of hanging the suite."""
    args, expected = FIFO_COMMANDS[name]
    src = tmp_path / "good.csv"
    src.write_bytes(b"node,parent\nroot,\na,root\nb,root\n" if "input with" in name else GOOD)
    fifo, out = _fifo(tmp_path), tmp_path / "o.csv"
    fill = {"fifo": fifo, "src": src, "out": out}
    t0 = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "dpviz", "tree", *[a.format(**fill) for a in args]], cwd=ROOT,
                            capture_output=True, text=True, timeout=60)
    assert_refused(result, expected.format(**fill), out)
    assert time.perf_counter() - t0 < 30
