"""Parquet and Arrow everywhere (issue 21): every capability's loader reads a Parquet file, a folder of Parquet
files (a dataset) and the bytes of an upload as it reads the same table in CSV, under the same caps and
one-line messages; the text readers name a Parquet file instead of refusing "a NUL byte"."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dpviz.core.reader import read_capped
from dpviz.core.records import is_parquet, parquet_csv, read_parquet
from dpviz.errors import InputError


def _write(table: pa.Table, path: Path, parts: int = 1) -> Path:
    """``table`` as one Parquet file, or with ``parts`` > 1 as a folder of that many files."""
    if parts == 1:
        pq.write_table(table, path)
        return path
    path.mkdir()
    bounds = np.linspace(0, table.num_rows, parts + 1).astype(int)
    for i in range(parts):
        pq.write_table(table.slice(bounds[i], bounds[i + 1] - bounds[i]), path / f"part-{i:03d}.parquet")
    return path


def test_detection_by_magic_bytes_and_folder(tmp_path):
    t = pa.table({"a": [1, 2]})
    f = _write(t, tmp_path / "x.data")  # any name: the magic bytes decide
    assert is_parquet(f) and is_parquet(f.read_bytes())
    assert is_parquet(_write(t, tmp_path / "ds", parts=2))
    (tmp_path / "c.csv").write_text("a\n1\n")
    (tmp_path / "empty").mkdir()
    assert not is_parquet(tmp_path / "c.csv") and not is_parquet(tmp_path / "empty")
    assert not is_parquet(tmp_path / "missing")


def test_read_parquet_is_column_selective_and_capped(tmp_path):
    t = pa.table({"a": np.arange(50), "b": ["x"] * 50, "c": np.ones(50)})
    f = _write(t, tmp_path / "t.parquet")
    got = read_parquet(f, ["c", "a"], max_bytes=10**6)
    assert got.column_names == ["c", "a"] and got.num_rows == 50
    with pytest.raises(InputError, match=r"'t.parquet' has more than 10 data rows.*the limit is 10 rows \(MAX_ROWS\)"):
        read_parquet(f, max_bytes=10**6, max_rows=10)
    with pytest.raises(InputError, match=r"is \d[\d,]* bytes, above the size cap; the limit is 100 bytes"):
        read_parquet(f, max_bytes=100)
    with pytest.raises(InputError, match=r"no column 'zz'"):
        read_parquet(f, ["zz"], max_bytes=10**6)
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"PAR1" + b"\0" * 40)
    with pytest.raises(InputError, match="not a readable Parquet"):
        read_parquet(bad, max_bytes=10**6)
    assert parquet_csv(f, ["a"], max_bytes=10**6).startswith(b'"a"\n0\n1\n') or \
        parquet_csv(f, ["a"], max_bytes=10**6).startswith(b"a\n0\n1\n")


def test_text_reader_names_a_parquet_file(tmp_path):
    f = _write(pa.table({"a": [1]}), tmp_path / "t.parquet")
    with pytest.raises(InputError, match=r"'t.parquet' is a Parquet file; this input is read as text"):
        read_capped(f, max_bytes=10**6, refuse_nul=True)


def test_tree_from_parquet_equals_csv(tmp_path):
    from dpviz.tree.io import load, load_tree_file

    df = pd.DataFrame({"region": ["N", "N", "S"], "state": ["a", "b", "c"], "population": [3, 4, 5]})
    df.to_csv(tmp_path / "t.csv", index=False)
    csv = load_tree_file(tmp_path / "t.csv")
    for src in (_write(pa.Table.from_pandas(df), tmp_path / "t.parquet"),
                _write(pa.Table.from_pandas(df, preserve_index=False), tmp_path / "ds", parts=3)):
        got = load(str(src))
        assert got.tree.n == csv.tree.n and np.array_equal(got.x, csv.x)
        assert list(got.node_ids) == list(csv.node_ids)
    up = load_tree_file((tmp_path / "t.parquet").read_bytes(), "upload")
    assert np.array_equal(up.x, csv.x)
    with pytest.raises(InputError, match="so the tree has more than the limit of 2 nodes"):
        load_tree_file(tmp_path / "t.parquet", max_nodes=2)


def test_stream_from_parquet_reads_only_its_columns(tmp_path):
    from dpviz.stream.io import load, read_stream_csv

    t = pa.table({"date": pd.date_range("2024-01-01", periods=6).to_numpy(), "count": [1, 0, 2, 5, 3, 1],
                  "other": [[1], [2], [3], [4], [5], [6]]})  # a list column the CSV writer cannot write
    f = _write(t, tmp_path / "s.parquet")
    got = read_stream_csv(f)
    assert got.counts.tolist() == [1, 0, 2, 5, 3, 1] and got.timestamps[0] == np.datetime64("2024-01-01")
    assert load(str(_write(t, tmp_path / "ds", parts=2))).counts.tolist() == got.counts.tolist()
    with pytest.raises(InputError, match="too long for a stream"):
        read_stream_csv(f, max_steps=3)


def test_marginals_graph_histogram_from_parquet(tmp_path):
    from dpviz.graph.io import read_edges
    from dpviz.histogram.io import Bins, read_data
    from dpviz.marginals.io import canonical_bytes, read_table

    m = pd.DataFrame({"age": [20, 30, 40, 50] * 5, "sex": ["m", "f"] * 10, "note": ["a,b"] * 20})
    m.to_csv(tmp_path / "m.csv", index=False)
    pm = _write(pa.Table.from_pandas(m, preserve_index=False), tmp_path / "m.parquet")
    a, b = read_table(tmp_path / "m.csv", attributes=["age", "sex"]), read_table(pm, attributes=["age", "sex"])
    assert a.domain == b.domain and np.array_equal(a.codes, b.codes) and b.name == "m"
    assert canonical_bytes(str(pm)) == canonical_bytes(str(tmp_path / "m.csv"))
    g = _write(pa.table({"src": ["a", "b", "c"], "dst": ["b", "c", "a"], "w": ["x", "y", "z"]}), tmp_path / "g.parquet")
    graph = read_edges(g)
    assert graph.n_nodes == 3 and graph.edges.shape == (3, 2) and graph.name == "g"
    h = _write(pa.table({"v": [1.0, 2.5, 3.5, 9.0]}), tmp_path / "h.parquet")
    assert read_data(h, Bins.from_edges([0, 2, 4, 10])).x.tolist() == [1, 2, 1]


def test_cli_reads_parquet_folder(tmp_path, capsys):
    from dpviz.cli import main

    df = pd.DataFrame({"node": ["r", "a", "b"], "parent": ["", "r", "r"], "count": [None, 3, 4]})
    src = _write(pa.Table.from_pandas(df, preserve_index=False), tmp_path / "ds", parts=2)
    out = tmp_path / "o.csv"
    assert main(["tree", "simulate", str(src), "--epsilon", "1", "--seed", "1", "--output", str(out)]) == 0
    assert out.read_text().count("\n") == 4
    (tmp_path / "gz.csv.gz").write_bytes(gzip.compress(b"node,parent,count\nr,,\na,r,3\nb,r,4\n"))
    assert main(["tree", "simulate", str(tmp_path / "gz.csv.gz"), "--epsilon", "1", "--seed", "1"]) == 0


def test_uploads_as_parquet_bytes(tmp_path):
    """A page's upload (the file's bytes) may be Parquet: every loader takes it."""
    from dpviz.graph.io import read_edges
    from dpviz.marginals.io import read_table
    from dpviz.stream.io import read_stream_csv

    def raw(table: pa.Table) -> bytes:
        sink = pa.BufferOutputStream()
        pq.write_table(table, sink)
        return sink.getvalue().to_pybytes()

    assert read_stream_csv(raw(pa.table({"count": [3, 1, 2]}))).counts.tolist() == [3, 1, 2]
    assert read_table(raw(pa.table({"a": ["x", "y", "x"]}))).domain.sizes == (2,)
    assert read_edges(raw(pa.table({"u": [0, 1], "v": [1, 2]}))).n_nodes == 3
    with pytest.raises(InputError, match="above the size cap"):
        read_stream_csv(raw(pa.table({"count": list(range(1000))})), max_bytes=500)
