"""dpviz.core.tables: output checks, writing a release with its sidecar together, formula escaping."""

import os

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from dpviz.cli import error_line, main
from dpviz.core import tables
from dpviz.errors import InputError

HOSTILE = ["=1+1", "@SUM(A1)", '=HYPERLINK("http://x","y")', "-2", "+x", "\tq", "\rr", "plain", "a=b", "-3.5e2"]
ESCAPED = ["'=1+1", "'@SUM(A1)", '\'=HYPERLINK("http://x","y")', "-2", "'+x", "'\tq", "'\rr", "plain", "a=b",
           "-3.5e2"]


# ------------------------------------------------------------------------------------ formula escaping
def test_cells_are_escaped_numbers_and_plain_number_text_are_not():
    assert [tables.escape_formula_cell(t) for t in HOSTILE] == ESCAPED
    keep = [k for k, t in enumerate(HOSTILE) if "\r" not in t]  # (a lone CR is a line break to a CSV reader)
    df = pd.DataFrame({"=1+1": [HOSTILE[k] for k in keep], "n": np.arange(-4, 5), "x": np.linspace(-1, 1, 9)})
    back = pd.read_csv(pd.io.common.StringIO(tables.to_csv_text(df)), keep_default_na=False)
    assert list(back.columns) == ["'=1+1", "n", "x"]
    assert back["'=1+1"].tolist() == [ESCAPED[k] for k in keep]
    assert back["n"].tolist() == list(range(-4, 5))  # numbers untouched (negative numbers too)
    raw = pd.read_csv(pd.io.common.StringIO(tables.to_csv_text(df, raw_text=True)), keep_default_na=False)
    assert list(raw.columns)[0] == "=1+1" and raw["=1+1"].iloc[0] == "=1+1"


@pytest.mark.parametrize("column", [
    pd.Series(HOSTILE, dtype=object),
    pd.Series(HOSTILE, dtype="string"),
    pd.Series(HOSTILE, dtype="category"),
    pd.Series(["=x", 1, None, 2.5, "-y"], dtype=object),  # text mixed with numbers: only the text changes
])
def test_every_text_column_kind_is_escaped(column):
    out = tables.escape_formula_frame(pd.DataFrame({"c": column}))["c"].tolist()
    want = [tables.escape_formula_cell(v) if isinstance(v, str) else v for v in column.astype(object)]
    assert [None if isinstance(v, float) and np.isnan(v) else v for v in out] == \
        [None if isinstance(v, float) and np.isnan(v) else v for v in want]


def test_arrow_escaping_is_vectorised_and_free_when_nothing_needs_it():
    clean = pa.array([f"n{i}" for i in range(100_000)])
    assert tables.escape_formula_array(clean) is clean  # no copy, no regex: one gather over the offsets
    arr = pa.array(["a", "=b", None, "-3.5", "+1e5", "", "@x", "-x"])
    assert tables.escape_formula_array(arr).to_pylist() == ["a", "'=b", None, "-3.5", "+1e5", "", "'@x", "'-x"]
    assert tables.escape_formula_array(arr.slice(1, 3)).to_pylist() == ["'=b", None, "-3.5"]  # offsets honoured
    chunked = pa.chunked_array([arr.slice(0, 4), arr.slice(4)])
    assert tables.escape_formula_array(chunked).to_pylist() == tables.escape_formula_array(arr).to_pylist()
    big = pa.array(["=1", "x"] * 50_000, pa.large_string())
    assert tables.escape_formula_array(big).to_pylist()[:2] == ["'=1", "x"]


def test_tree_arrow_writer_escapes_ids_and_honours_raw_text(tmp_path):
    from dpviz.tree.io import write_tree_csv

    table = pa.table({"node": ["=1+1", "@SUM(A1)", "-2", "+x"], "parent": ["", "=1+1", "=1+1", "=1+1"],
                      "count": [1.5, -2.0, 3.0, 4.0]})
    out = tables.Path(tmp_path / "t.csv")
    write_tree_csv(table, out, meta={"mode": "release"})
    assert out.read_text().splitlines() == ["node,parent,count", "'=1+1,,1.5", "'@SUM(A1),'=1+1,-2",
                                            "-2,'=1+1,3", "'+x,'=1+1,4"]
    write_tree_csv(table, out, meta={"mode": "release"}, raw_text=True)
    assert out.read_text().splitlines()[1:3] == ["=1+1,,1.5", "@SUM(A1),=1+1,-2"]


def test_graph_release_table_escapes_vertex_labels(tmp_path):
    from dpviz.graph.io import edges_frame

    frame = edges_frame(np.array([[0, 1], [2, 3]]), ["=1+1", "@SUM(A1)", '=HYPERLINK("http://x","y")', "-2"])
    out = tables.write_release(frame, tmp_path / "e.csv", {"mode": "release"})
    assert out.read_text() == "u,v\n'=1+1,'@SUM(A1)\n\"'=HYPERLINK(\"\"http://x\"\",\"\"y\"\")\",-2\n"


def test_release_commands_take_raw_text():
    import argparse

    from dpviz.core import cliargs

    p = argparse.ArgumentParser()
    cliargs.add_release_args(p)
    assert p.parse_args(["--output", "x"]).raw_text is False
    assert p.parse_args(["--output", "x", "--raw-text"]).raw_text is True


# ------------------------------------------------------------------------------------ output checks
def test_check_outputs_refuses_collisions_between_outputs_and_sidecars(tmp_path):
    a, b = tmp_path / "a.csv", tmp_path / "b.json"
    assert tables.check_outputs(a, [b]) == [a, b]
    with pytest.raises(InputError, match="same file"):
        tables.check_outputs(a, [a])  # --output X --report X
    with pytest.raises(InputError, match="meta.json"):
        tables.check_outputs(a, [tables.meta_path(a)])  # --output A --report A.meta.json
    with pytest.raises(InputError, match="same file"):
        tables.check_outputs(a, [b, tmp_path / "." / "b.json"])  # two extras, one file
    b.write_text("x")
    os.link(b, tmp_path / "hard.json")
    with pytest.raises(InputError, match="same file"):
        tables.check_outputs(a, [b, tmp_path / "hard.json"])  # the same inode under two names
    src = tmp_path / "a.csv.meta.json"
    src.write_text("node,parent\n")
    with pytest.raises(InputError, match="is the input file"):
        tables.check_outputs(a, [], [src])  # an input named like the output's description


def test_check_destination_refuses_the_ledger_and_its_files(tmp_path):
    led = tmp_path / "l.sqlite3"
    led.write_bytes(b"x")
    for out in (led, tmp_path / "l.sqlite3-wal", tmp_path / "sub" / ".." / "l.sqlite3"):
        (tmp_path / "sub").mkdir(exist_ok=True)
        with pytest.raises(InputError, match="privacy ledger"):
            tables.check_destination(out, ledger=led)
    with pytest.raises(InputError, match="privacy ledger"):  # its description would replace the ledger
        tables.check_destination(tmp_path / "o.csv", ledger=tmp_path / "o.csv.meta.json", sidecar=True)


def test_check_destination_names_and_folders(tmp_path, monkeypatch):
    (tmp_path / "afile").write_text("x")
    with pytest.raises(InputError, match="not a folder"):
        tables.check_destination(tmp_path / "afile" / "o.csv")
    with pytest.raises(InputError, match="File name too long"):
        tables.check_destination(tmp_path / ("a" * 300 + ".csv"))
    fits = tmp_path / ("a" * 230 + ".csv")  # fits NAME_MAX, but not its temporary name nor its .meta.json
    with pytest.raises(InputError, match="too long"):
        tables.check_destination(fits, sidecar=True)
    with pytest.raises(InputError, match="is a file, not a folder"):
        tables.check_destination(tmp_path / "afile" / ".." / "o.csv")  # the parent "afile/.." of a file
    monkeypatch.setattr(os, "access", lambda *a, **k: False)  # as a non-root user sees a read-only folder
    with pytest.raises(InputError, match="not writable"):
        tables.check_destination(tmp_path / "o.csv")


def test_the_probe_finds_a_folder_that_takes_no_file(tmp_path, monkeypatch):
    import errno
    import tempfile

    def refuse(*a, **k):
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(tempfile, "mkstemp", refuse)  # os.access says yes (root), the file system says no
    with pytest.raises(InputError, match="read-only file system"):
        tables.check_destination(tmp_path / "o.csv")


# ------------------------------------------------------------------------------------ writing together
def test_a_failed_output_rename_removes_the_sidecar_and_every_temp(tmp_path, monkeypatch):
    out = tmp_path / "r.csv"
    real = os.replace

    def fail_on_output(src, dst):
        if str(dst) == str(out):
            raise OSError(28, "No space left on device", str(dst))
        return real(src, dst)

    monkeypatch.setattr(os, "replace", fail_on_output)
    with pytest.raises(OSError):
        tables.write_release(pd.DataFrame({"a": [1]}), out, {"mode": "release"})
    assert list(tmp_path.iterdir()) == []  # no output, no orphan sidecar, no temporary file


def test_a_failed_body_write_leaves_nothing(tmp_path):
    def boom(fh):
        fh.write(b"partial")
        raise MemoryError

    with pytest.raises(MemoryError):
        tables.write_release_text(boom, tmp_path / "r.json", "{}")
    assert list(tmp_path.iterdir()) == []


def test_stale_temporary_files_of_dead_processes_are_removed(tmp_path):
    import subprocess
    import sys

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True).stdout.strip()
    stale = [tmp_path / f".r.csv.{dead}.abcdefgh.tmp", tmp_path / f".r.csv.meta.json.{dead}.a1b2c3d4.tmp"]
    live = tmp_path / f".r.csv.{os.getppid()}.zzzzzzzz.tmp"  # a live process: maybe writing right now
    other = tmp_path / f".other.csv.{dead}.abcdefgh.tmp"  # another output's: not ours to remove
    for p in (*stale, live, other):
        p.write_text("partial")
    tables.write_release(pd.DataFrame({"a": [1]}), tmp_path / "r.csv", {"mode": "release"})
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([live.name, other.name, "r.csv", "r.csv.meta.json"])


# ------------------------------------------------------------------------------------ error lines
def test_error_lines_are_one_line_and_cut():
    line = error_line("head\n" + "x" * 10**6 + "\nthe advice")
    assert "\n" not in line and len(line) <= 520 and line.startswith("dpviz: error: head x")
    assert line.endswith("the advice") and " … " in line


@pytest.mark.parametrize("exc, needle", [(MemoryError(), "out of memory"), (RecursionError(), "nested too deeply"),
                                         (OSError(36, "File name too long", "x" * 5000), "File name too long")])
def test_escaping_errors_become_one_line(exc, needle, monkeypatch, capsys):
    from dpviz.ledger import cli as ledger_cli

    def raise_it(args):
        raise exc

    monkeypatch.setattr(ledger_cli, "cmd_show", raise_it)
    assert main(["ledger", "show"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("dpviz: error: ") and needle in err and len(err) < 600


# ------------------------------------------------------------------------------------ digests while writing
@pytest.mark.parametrize("rows, block", [(5, None), (300_000, None), (300_000, 1 << 13)])  # one block; several
# blocks formatted on threads; 37 blocks, more than the writer's window of pending slices and pending digests
def test_the_csv_writer_hashes_what_it_writes_and_the_digest_is_forgotten_when_the_file_changes(tmp_path, rows, block,
                                                                                                monkeypatch):
    import hashlib

    from dpviz.core import csv_writer
    from dpviz.core.csv_writer import write_csv

    if block:
        monkeypatch.setattr(csv_writer, "_WRITE_ROWS", block)

    table = pa.table({"a": np.arange(rows), "b": np.linspace(0.0, 1.0, rows), "c": pa.array(["x,y"] * rows)})
    out = tmp_path / "t.csv"
    write_csv(table, out, meta={"mode": "release"})
    want = hashlib.sha256(out.read_bytes()).hexdigest()
    assert tables.written_sha256(out) == want and tables.written_sha256(tmp_path / "." / "t.csv") == want
    assert tables.written_sha256(tables.meta_path(out)) is None  # written from bytes: no digest known
    out.write_bytes(out.read_bytes() + b"\n")  # rewritten in place (same inode): another size
    assert tables.written_sha256(out) is None
    write_csv(table.slice(0, 3), out)
    assert tables.written_sha256(out) == hashlib.sha256(out.read_bytes()).hexdigest()
    os.replace(tmp_path / "t.csv", tmp_path / "u.csv")  # the name now holds nothing
    assert tables.written_sha256(out) is None
    tables.write_text("other\n", out)  # a writer that does not hash: the old digest is dropped
    assert tables.written_sha256(out) is None
