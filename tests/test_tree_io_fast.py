"""The fast paths of ``tree release`` (issue 11, File IO) against their slow references.

* The typed CSV read (ids and counts as int64, :func:`dpviz.tree.reading._canonical_integers`) gives exactly
  the tree, counts and error messages of the string read, on many random files in many spellings
  (leading zeros, ``-0``, spaces, quotes, CRLF, blank lines, shuffled rows, negative and sparse ids).
* :func:`_decimal_chars` against ``len(str(v))``; :func:`number_text` against Arrow's own cast.
* ``release(..., csv_text=True)`` (variance text formatted while the noise is drawn) and its ``columns()``
  write byte for byte what ``release`` + ``table()`` write, for every method, split, and labelled or unlabelled trees.
* ``require_integral`` against a Python reference; the writer's early writeback keeps the bytes.
"""

from __future__ import annotations

import io

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from dpviz.core.noise import Noise
from dpviz.core.protocols import require_integral
from dpviz.core.structure import STRUCTURE_FROM_DATA_NOTICE
from dpviz.errors import InputError
from dpviz.tree.estimators import METHODS
from dpviz.core.csv_writer import Writeback, number_text
from dpviz.tree.formats import tree_from_table
from dpviz.tree.io import load_tree_file, node_table, write_tree_csv
from dpviz.tree.reading import MAX_COUNT, _decimal_chars, read_table
from dpviz.tree.release import NOTICE_COLUMN, NOTICE_VALUE, published_variance, release
from dpviz.tree.synthetic import fanout_parents

LAPLACE = Noise.laplace(1.0, discrete=True)
GAUSS = Noise.gaussian(0.5, discrete=True)


def _string_path(raw: bytes):
    """The reference: every column read as strings (no integer_columns), then the same builder."""
    return tree_from_table(read_table(raw))


def _outcome(fn, raw: bytes):
    try:
        d = fn(raw)
    except InputError as exc:
        return ("error", str(exc))
    t = d.tree
    return ("tree", t.parent.tolist(), t.order.tolist(), d.x.tolist(), [str(v) for v in d.node_ids])


def _random_file(rng: np.random.Generator) -> bytes:
    n = int(rng.integers(1, 40))
    p = fanout_parents(n, rng) if n > 1 else np.array([-1])
    perm = rng.permutation(n) if rng.random() < 0.5 else np.arange(n)
    style = rng.integers(0, 4)
    if style == 0:  # 0..n-1 in DOH order, as `tree generate` writes
        ids = np.arange(n)
    elif style == 1:  # sparse, possibly negative integers
        ids = rng.choice(np.arange(-50, 10**6), n, replace=False)
    elif style == 2:
        ids = np.arange(n) * 7 + 3
    else:  # string ids: only the counts can be read as integers
        ids = np.array([f"n{i}" for i in range(n)])
    leaf = np.ones(n, bool)
    leaf[p[p >= 0]] = False
    rows = []
    for i in perm:
        node = str(ids[i])
        par = "" if p[i] < 0 else str(ids[p[i]])
        count = str(int(rng.integers(0, 1000))) if leaf[i] else ""
        rows.append([node, par, count])
    for _ in range(int(rng.integers(0, 3))):  # hostile spellings, a few per file
        r, c = int(rng.integers(0, n)), int(rng.integers(0, 3))
        kind = int(rng.integers(0, 9))
        v = rows[r][c]
        if kind == 0 and v:
            rows[r][c] = "0" + v  # leading zero: another id on the string path
        elif kind == 1 and v == "0":
            rows[r][c] = "-0"
        elif kind == 2:
            rows[r][c] = f" {v}"
        elif kind == 3:
            rows[r][c] = f'"{v}"'
        elif kind == 4 and c == 2:
            rows[r][c] = "2.5" if v else "1"  # a fractional count, or a count on an internal node
        elif kind == 5 and c == 1 and v:
            rows[r][c] = "-1"
        elif kind == 6:
            rows[r][c] = "9007199254740993" if c == 2 else "x"
        elif kind == 7 and c == 0:
            rows[r][c] = rows[(r + 1) % n][0]  # a duplicate id
        elif kind == 8:
            rows[r][c] = ""
    end = "\r\n" if rng.random() < 0.2 else "\n"
    text = "node,parent,count" + end + end.join(",".join(row) for row in rows)
    if rng.random() < 0.2:
        text = text.replace(end, end + end, 1)  # a blank line after the header
    if rng.random() < 0.7:
        text += end
    return text.encode()


def test_typed_read_equals_the_string_read_on_random_files():
    rng = np.random.default_rng(11)
    typed_used = counts_only = errors = 0
    for _ in range(600):
        raw = _random_file(rng)
        fast, slow = _outcome(load_tree_file, raw), _outcome(_string_path, raw)
        assert fast == slow, raw
        errors += fast[0] == "error"
        table = read_table(raw, integer_columns=lambda cols: ["node", "parent", "count"])
        typed_used += pa.types.is_integer(table.col("node").type)
        counts_only += pa.types.is_integer(table.col("count").type) and not pa.types.is_integer(table.col("node").type)
    assert typed_used > 150 and counts_only > 25 and errors > 50  # every path and both outcomes are exercised


@pytest.mark.parametrize("raw, node_typed, count_typed", [
    (b"node,parent,count\n0,,\n1,0,3\n2,0,4\n", True, True),
    (b"node,parent,count\n0,,\n1,0,03\n2,0,4\n", False, False),  # 03: not canonical, all strings
    (b"node,parent,count\n0,,\n1,-0,3\n2,0,4\n", False, False),
    (b"node,parent,count\n0,,\n1, 0,3\n2,0,4\n", True, True),  # parent ' 0' is read as text
    (b'node,parent,count\n0,,\n1,"0",3\n2,0,4\n', False, False),  # quotes: the length proof fails, all text
    (b"node,parent,count\n0,,\n1,0,3\n2,0,0007\n", False, False),
    (b"node,parent,count\r\n0,,\r\n1,0,3\r\n\r\n2,0,4", True, True),
    (b"node,parent,count\n0,,\n1,0,3.0\n2,0,4\n", True, False),  # fractional counts: read as text
    (b"node,parent,count,name\n0,,,r\n1,0,3,a b\n2,0,4,\n", True, True),
    (b"node,parent,count\nr,,\na,r,3\nb,r,4\n", False, True),  # string ids: the counts alone are typed
    (b"node,parent,count\nr,,\n a,r,3\nb,r,4\n", False, True),
])
def test_the_typed_read_is_taken_only_for_canonical_integers(raw, node_typed, count_typed):
    table = read_table(raw, integer_columns=lambda cols: ["node", "parent", "count"])
    assert pa.types.is_integer(table.col("node").type) is node_typed
    assert pa.types.is_integer(table.col("count").type) is count_typed
    assert _outcome(load_tree_file, raw) == _outcome(_string_path, raw)


def test_leading_zero_ids_stay_distinct_and_big_counts_are_refused_exactly():
    d = load_tree_file(b"node,parent,count\n7,,\n07,7,1\n8,7,2\n")  # 07 is its own id
    assert sorted(map(str, d.node_ids)) == ["07", "7", "8"]
    for raw in (b"node,parent,count\n0,,\n1,0,9007199254740993\n",  # typed: exact int64
                b"node,parent,count\nr,,\na,r,9007199254740993\n"):  # strings: 2^53 + 1 rounds to 2^53 as a float
        with pytest.raises(InputError, match="above the largest count"):
            load_tree_file(raw)
    assert load_tree_file(b"node,parent,count\n0,,\n1,0,9007199254740992\n").x[0] == MAX_COUNT


def test_typed_errors_name_the_line_and_show_ids_as_written():
    with pytest.raises(InputError, match=r"line 3 \(node '1'\): parent '5' is not a node"):
        load_tree_file(b"node,parent,count\n0,,\n1,5,3\n")
    with pytest.raises(InputError, match=r"line 4: duplicate node id '1' \(first on line 3\)"):
        load_tree_file(b"node,parent,count\n0,,\n1,0,3\n1,0,4\n")
    with pytest.raises(InputError, match=r"count -3 is negative"):
        load_tree_file(b"node,parent,count\n0,,\n1,0,-3\n")


def test_decimal_chars_matches_python():
    rng = np.random.default_rng(3)
    edge = np.array([0, 9, 10, 99, 100, -1, -10, 2**63 - 1, -(2**63), 10**18, 10**18 - 1], np.int64)
    for v in (edge, rng.integers(-(2**63), 2**63 - 1, 5000, dtype=np.int64), rng.integers(-1000, 1000, 5000)):
        arr = pa.array(v)
        assert _decimal_chars(arr) == sum(len(str(int(x))) for x in v)
    with_nulls = pa.array([5, None, -12, None])
    assert _decimal_chars(with_nulls) == 1 + 3


def test_number_text_is_arrows_cast_with_empty_cells_for_nan():
    rng = np.random.default_rng(4)
    levels = np.repeat(rng.standard_normal(50), rng.integers(1, 2000, 50))  # long runs: run-length path
    noisy = rng.standard_normal(10_000)  # no runs: the direct cast
    for v in (levels, noisy, np.array([np.nan, np.nan, 1.5, 1.5]), np.array([2.0])):
        got = number_text(v)
        want = pc.cast(pa.array(v, from_pandas=True), pa.string())
        assert got.equals(want)
    assert number_text(np.array([np.nan, 1.0, 1.0])).null_count == 1
    runs = number_text(levels, dictionary=True)  # runs: each run's text once, decoded as the CSV is written
    assert pa.types.is_dictionary(runs.type) and len(runs.dictionary) == 50
    assert pc.cast(runs, pa.string()).equals(number_text(levels))
    assert number_text(noisy, dictionary=True).equals(number_text(noisy))  # no runs: plain strings


@pytest.mark.parametrize("ids", [["a", "b", "c", "d"], ["a", "b,c", "d", "e"]])  # no quotes; quotes needed
def test_dictionary_number_text_writes_as_the_plain_text(tmp_path, ids):
    v = np.array([0.1, 0.1, 2.5e-7, 2.5e-7])
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    write_tree_csv(pa.table({"node": ids, "v": number_text(v, dictionary=True)}), a, plain=("v",))
    write_tree_csv(pa.table({"node": ids, "v": number_text(v)}), b, plain=("v",))
    assert a.read_bytes() == b.read_bytes() and a.read_bytes().count(b",2.5e-7\n") == 2


def _trees():
    rng = np.random.default_rng(5)
    n = 3000
    p = fanout_parents(n, rng)
    counts = rng.integers(0, 50, n)
    leaf = np.ones(n, bool)
    leaf[p[p >= 0]] = False
    unlabelled = "node,parent,count\n" + "".join(
        f"{i},{'' if p[i] < 0 else p[i]},{counts[i] if leaf[i] else ''}\n" for i in range(n))
    perm = rng.permutation(n)
    labelled = "node,parent,count\n" + "".join(
        f"n{i},{'' if p[i] < 0 else f'n{p[i]}'},{counts[i] if leaf[i] else ''}\n" for i in perm)
    quoted = labelled.replace("n0,", '"n0, the root",').replace(",n0,", ',"n0, the root",')  # forces quoting
    return [load_tree_file(unlabelled.encode()), load_tree_file(labelled.encode()), load_tree_file(quoted.encode())]


@pytest.mark.parametrize("split", ["uniform", "geometric"])
@pytest.mark.parametrize("noise", [LAPLACE, GAUSS], ids=["laplace", "gaussian"])
def test_release_for_csv_writes_what_release_table_writes(tmp_path, split, noise):
    for k, data in enumerate(_trees()):
        assert data.tree.in_input_order is (k == 0)
        for method in METHODS:
            rel = release(data, noise, split=split, method=method, rng=np.random.default_rng(9), csv_text=True)
            table, meta = rel.columns(), rel.metadata()
            ref = release(data, noise, split=split, method=method, rng=np.random.default_rng(9))
            np.testing.assert_array_equal(rel.released, ref.released)
            np.testing.assert_array_equal(published_variance(data.tree, noise, split, method), ref.variance)
            df, ref_meta = ref.table(), ref.metadata()
            # the structure was read from the data: the table says the notice on every row, the file NOTICE_VALUE
            assert set(df[NOTICE_COLUMN]) == {STRUCTURE_FROM_DATA_NOTICE}
            assert table.column(NOTICE_COLUMN).to_pylist() == [NOTICE_VALUE] * data.tree.n
            df[NOTICE_COLUMN] = NOTICE_VALUE
            a, b = tmp_path / "fast.csv", tmp_path / "ref.csv"
            assert rel.text_columns == ("variance", "std")
            write_tree_csv(table, a, plain=rel.text_columns)
            write_tree_csv(df, b)
            assert a.read_bytes() == b.read_bytes(), (k, method)
            if k == 2:  # ids quoted, numbers (preformatted or not) never
                assert b'"n0, the root"' in a.read_bytes() and b',"1' not in a.read_bytes().split(b"\n", 2)[1]
            assert {**meta, "created_utc": None} == {**ref_meta, "created_utc": None}


def test_node_table_keeps_string_ids_for_unlabelled_trees():
    data = _trees()[0]
    df = node_table(data.tree, x=np.arange(data.tree.n, dtype=float))
    assert df["node"].iloc[0] == "0" and df["parent"].iloc[0] == "" and df["parent"].iloc[1] == "0"
    assert str(df["node"].dtype) == "str"


def _integral_reference(a: np.ndarray):
    out = []
    for v in a.tolist():
        if not np.isfinite(v) or v != round(v) or abs(v) >= 2**62:
            return None
        out.append(int(v))
    return out


def test_require_integral_matches_a_python_reference():
    rng = np.random.default_rng(6)
    cases = [np.array([0.0, 1.0, -5.0, 2.0**53, 2.0**61]), np.array([1.0, 0.5]), np.array([np.nan]),
             np.array([np.inf, 1.0]), np.array([2.0**62]), np.array([-(2.0**63)]), np.array([1e300]),
             rng.integers(-(10**12), 10**12, 1000).astype(float), np.array([])]
    for a in cases:
        want = _integral_reference(a)
        if want is None:
            with pytest.raises(InputError):
                require_integral(a, "x")
        else:
            got = require_integral(a, "x")
            assert got.dtype == np.int64 and got.tolist() == want


def test_writeback_writer_keeps_every_byte(tmp_path):
    chunks = [bytes([i % 251]) * (100_000 + i) for i in range(7)]
    path = tmp_path / "w.bin"
    with path.open("wb") as fh:
        fh.write(b"head")
        w = Writeback(fh)
        assert w.fd is not None  # a regular file: writeback is started
        for c in chunks:
            w.write(c)
    assert path.read_bytes() == b"head" + b"".join(chunks)
    sink = io.BytesIO()
    w = Writeback(sink)
    for c in chunks:
        w.write(c)
    w.finish()
    assert sink.getvalue() == b"".join(chunks)


def test_writeback_syncs_in_the_background_and_reports_its_error(tmp_path, monkeypatch):
    """The fdatasync beside the formatting: it runs (on the written file), and a write error it is told of
    reaches the writer (Linux reports such an error once: the closing fsync would not see it again)."""
    import errno
    import os

    synced = []
    monkeypatch.setattr(os, "fdatasync", lambda fd: synced.append(fd))
    with (tmp_path / "ok.bin").open("wb") as fh:
        w = Writeback(fh)
        w.write(b"x" * 1000)
        w.finish()
        assert synced == [fh.fileno()]

    def failing(fd):
        raise OSError(errno.EIO, "I/O error")

    monkeypatch.setattr(os, "fdatasync", failing)
    with (tmp_path / "bad.bin").open("wb") as fh:
        w = Writeback(fh)
        w.write(b"x" * 1000)
        with pytest.raises(OSError, match="I/O error"):
            w.finish()


def test_arrow_helpers_round_trip_without_pandas_and_their_doctests():
    import doctest
    import subprocess
    import sys

    from dpviz.core import arrow

    assert doctest.testmod(arrow).failed == 0
    rng = np.random.default_rng(8)
    for dtype in (np.int64, np.int32, np.float64):
        v = rng.integers(-1000, 1000, 257).astype(dtype)
        ok = rng.random(257) < 0.8
        a = arrow.from_numpy(v, valid=ok)
        assert a.null_count == int((~ok).sum())
        assert a.to_pylist() == [x if k else None for x, k in zip(v.tolist(), ok)]  # Arrow's own view
        for sl in (a, a.slice(3, 100)):  # offsets are honoured
            lo = sl.offset
            np.testing.assert_array_equal(arrow.valid(sl), ok[lo:lo + len(sl)])
            np.testing.assert_array_equal(arrow.values(sl)[arrow.valid(sl)], v[lo:lo + len(sl)][ok[lo:lo + len(sl)]])
    code = ("import sys; import pyarrow as pa, numpy as np; from dpviz.core import arrow; "
            "a = arrow.from_numpy(np.arange(5), valid=np.arange(5) > 1); arrow.values(a); arrow.valid(a); "
            "print('pandas' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "False"


@pytest.mark.parametrize("declared", [True, False, "sample"])
def test_tree_release_of_a_generated_file_never_imports_pandas_or_scipy_sparse(tmp_path, declared):
    """pyarrow imports pandas on its first pa.array()/to_numpy(); the release path avoids both, which
    saves a quarter of a second of every ``tree release`` (issue 11, Startup): with a declared hierarchy
    (read, joined), with the structure read from the data, and for the bundled ``sample:county`` (a
    region/division/state/county table joined onto its declaration). A tree this small never imports
    scipy.sparse either (0.1-0.2 s more: :data:`dpviz.tree.propagation._SMALL_TREE`)."""
    import os
    import subprocess
    import sys

    rng = np.random.default_rng(12)
    n = 5000
    p = fanout_parents(n, rng)
    leaf = np.ones(n, bool)
    leaf[p[p >= 0]] = False
    src, out = tmp_path / "t.csv", tmp_path / "o.csv"
    src.write_text("node,parent,count\n" + "".join(
        f"{i},{'' if p[i] < 0 else p[i]},{rng.integers(0, 9) if leaf[i] else ''}\n" for i in range(n)))
    hier = tmp_path / "h.csv"
    hier.write_text("node,parent\n" + "".join(f"{i},{'' if p[i] < 0 else p[i]}\n" for i in range(n)))
    flags = ["--hierarchy", str(hier)] if declared is True else ["--structure-from-data"] if not declared else []
    source = "sample:county" if declared == "sample" else str(src)
    code = ("import sys\nfrom dpviz.cli import main\n"
            f"assert main(['tree', 'release', {source!r}, *{flags!r}, '--epsilon', '1', '--output', {str(out)!r}]) "
            "== 0\n"
            "print(sorted({k.split('.')[0] for k in sys.modules if k.split('.')[0] == 'pandas'} | "
            "{k for k in sys.modules if k.startswith('scipy.sparse')}))\n")
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "xdg")}
    env.pop("DPVIZ_LEDGER", None)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "[]"
    lines = out.read_text().splitlines()
    notice = "" if declared else ",structure"
    rows = 3207 if declared == "sample" else n  # the county declaration: 3,142 counties and the levels above
    assert lines[0] == "node,parent,noisy,released,variance,std" + notice and len(lines) == rows + 1


def test_meta_json_keeps_the_values_and_puts_long_number_lists_on_one_line():
    import doctest
    import json

    from dpviz.core import tables

    assert doctest.testmod(tables).failed == 0
    meta = {"mode": "release", "level_scales": [0.1 * k for k in range(1, 5001)], "nested": {"ids": list(range(50)),
            "names": ["a"] * 50, "short": [1.5, 2.5]}, "flags": [True] * 40, "value": np.float64(2.5)}
    text = tables.meta_json(meta)
    back = json.loads(text)
    assert back == json.loads(json.dumps(meta, default=tables._json_default))  # the same JSON values
    lines = text.splitlines()
    assert len(lines) < 120  # 5,000 scales, 50 ids: one line each (the 90 strings and booleans one per line)
    assert any(line.strip().startswith('"level_scales": [0.1, 0.2') for line in lines)
    assert "\\u0000" not in text


def test_number_lists_are_written_as_json_writes_them():
    """:func:`dpviz.core.tables._number_list` (distinct values formatted once; a fast path for one type) against
    ``json.dumps`` on random lists drawn from small pools: ints, floats, ±0.0, NaN, inf, bools, mixed types."""
    import json

    from dpviz.core import tables

    rng = np.random.default_rng(7)
    pools = [[1, 2, 3, 10**20], [0.5, 2.5e-05, 39119.0, 1e300], [0.0, -0.0, 1.5], [float("nan"), 1.0],
             [float("inf"), -float("inf"), 2.0], [1, 1.0, 2], [True, 1, 2], [1.5, "a"], [3, 0]]
    for pool in pools:
        for n in (33, 200, 1000):
            values = [pool[i] for i in rng.integers(0, len(pool), n)]
            got = tables._number_list(values)
            if any(isinstance(v, (bool, str)) for v in values):
                assert got is None
            else:
                assert got == json.dumps(values), pool


def test_scales_text_lists_short_trees_and_elides_deep_ones():
    import doctest

    from dpviz.tree import strategy

    assert doctest.testmod(strategy).failed == 0
    text = strategy.scales_text(np.linspace(1.0, 2.0, 500_001))
    assert text.startswith("1, 1, ") and text.endswith("2, 2 (500,001 levels)") and len(text) < 120


def _canonical_reference(data) -> bytes:
    """The ledger's tree form as it was first written (dpviz/ledger/identity.py ``_tree``): one sorted JSON
    line per node, built in Python."""
    import json

    def number(v: float):
        v = float(v)
        return int(v) if v.is_integer() else v

    t = data.tree
    ids = data.node_ids
    parents = np.full(t.n, "", dtype=object)
    parents[1:] = ids[t.parent[1:]]
    counts = [None] * t.n1 + [number(v) for v in data.x.tolist()]
    lines = sorted(json.dumps([str(i), str(p), c], ensure_ascii=False, separators=(",", ":"))
                   for i, p, c in zip(ids.tolist(), parents.tolist(), counts))
    return ("\n".join(lines) + "\n").encode("utf-8")


def test_canonical_bytes_of_sample_county_keep_their_ledger_identity():
    """The ledger identity of ``sample:county`` (SHA-256 of the tree hook's bytes, computed before the
    hook moved out of dpviz/ledger/identity.py) does not change: existing ledgers keep their budgets."""
    import hashlib

    from dpviz.tree.io import canonical_bytes, load as load_source

    data = load_source("sample:county")
    got = canonical_bytes("sample:county", data)
    assert hashlib.sha256(got).hexdigest() == "35056a3ed065db7d9eaa926b5dca39e5a02fc6edf38cbdfdacd884bfdda97c7a"
    assert hashlib.sha256(b"dpviz-ledger/1 tree\n" + got).hexdigest() == (
        "b3c1ebac2bbf9157f4367ae8672db0cf284cb2cea7c62487afaf6afc5c789aa9")


def test_canonical_bytes_equal_the_python_reference_on_odd_labels_and_counts():
    from dpviz.tree.io import canonical_bytes
    from dpviz.tree.model import TreeData, tree_from_parents

    labels = np.array(["r", 'a"b', "c\\d", "e\nf", "é", "\x01", "zz", "日本", 7, "\x7f", "", " s "], dtype=object)
    p = np.array([-1, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5])
    for lab in (labels, pa.array([str(v) for v in labels]), None):
        tree = tree_from_parents(p, labels=lab)
        for x in (np.arange(tree.m, dtype=float), np.array([1.5, 2.0, 1e20, 3.25, 0.1, -0.0, 2.0**53])[:tree.m]):
            data = TreeData(tree, x)
            assert canonical_bytes("x", data) == _canonical_reference(data)
    rng = np.random.default_rng(3)
    for n in (1, 2, 50, 3000):
        tree = tree_from_parents(fanout_parents(n, rng) if n > 1 else np.array([-1]))
        data = TreeData(tree, rng.integers(0, 10**6, tree.m).astype(float))
        assert canonical_bytes("x", data) == _canonical_reference(data)
        perm = rng.permutation(n)  # the same tree with its rows shuffled and string ids: same bytes
        inv = np.argsort(perm)  # input row r of the tree is row inv[r] of the shuffled file
        par_in = np.full(n, -1)  # the tree's parent array in input order
        par_in[tree.order] = np.where(tree.parent >= 0, tree.order[np.maximum(tree.parent, 0)], -1)
        shuffled = tree_from_parents(np.where(par_in[perm] >= 0, inv[np.maximum(par_in[perm], 0)], -1),
                                     labels=np.array([str(v) for v in perm], dtype=object))
        pos = {int(tree.order[k]): float(data.v[k]) for k in range(tree.n)}
        x = np.array([pos[int(perm[shuffled.order[k]])] for k in range(shuffled.n1, shuffled.n)])
        assert canonical_bytes("y", TreeData(shuffled, x)) == canonical_bytes("x", data)


def test_decimal_order_is_the_string_order_of_the_ids():
    from dpviz.tree.io import decimal_order

    for n in (0, 1, 2, 9, 10, 11, 99, 100, 101, 999, 1000, 1001, 12_345):
        assert decimal_order(n).tolist() == sorted(range(n), key=str)


def test_canonical_bytes_of_unlabelled_trees_equal_the_python_reference(monkeypatch):
    """The lines of a tree with ids 0..n-1 are made in their sorted order as fixed-width byte blocks (no sort
    of the lines): the same bytes as the Python reference on many random small trees, rows shuffled (DOH
    order differs from the input order), counts from 0 to 2^53, blocks of a few lines; a count that is
    not a non-negative integer takes the general path."""
    import dpviz.tree.io as tio
    from dpviz.tree.model import TreeData, tree_from_parents

    rng = np.random.default_rng(21)
    monkeypatch.setattr(tio, "_LINE_ROWS", 7)  # several blocks even for small trees
    for case in range(80):
        n = int(rng.integers(1, 130))
        p = fanout_parents(n, rng) if n > 1 else np.array([-1])
        perm = rng.permutation(n) if case % 3 else np.arange(n)
        inv = np.argsort(perm)
        q = np.where(p[perm] >= 0, inv[np.maximum(p[perm], 0)], -1)
        tree = tree_from_parents(q)
        top = [10, 10**4, 2**53][case % 3]
        x = rng.integers(0, top, tree.m, endpoint=True).astype(float)
        data = TreeData(tree, x)
        assert tio._canonical_unlabelled(tree, x) is not None
        assert tio.canonical_bytes("x", data) == _canonical_reference(data), case
    tree = tree_from_parents(np.array([-1, 0, 0, 1]))
    for x in (np.array([1.5, 2.0]), np.array([-1.0, 2.0]), np.array([np.nan, 1.0])):
        assert tio._canonical_unlabelled(tree, x) is None
        assert tio.canonical_bytes("x", TreeData(tree, x)) == _canonical_reference(TreeData(tree, x))


def test_canonical_bytes_ahead_gives_the_same_bytes_once():
    """``tree release`` starts the ledger's identity beside the release (canonical_bytes_ahead); the ledger's
    call takes that result (the same bytes), once; an error surfaces at that call."""
    import dpviz.tree.io as tio
    from dpviz.tree.model import TreeData, tree_from_parents

    rng = np.random.default_rng(4)
    for labels in (None, np.array([f"n{i}" for i in range(40)], dtype=object)):
        data = TreeData(tree_from_parents(fanout_parents(40, rng), labels=labels), np.zeros(0))
        data = TreeData(data.tree, rng.integers(0, 9, data.tree.m).astype(float))
        tio.canonical_bytes_ahead(data)
        assert data in tio._AHEAD
        assert tio.canonical_bytes("x", data) == _canonical_reference(data)
        assert data not in tio._AHEAD
        assert tio.canonical_bytes("x", data) == _canonical_reference(data)
    bad = TreeData(data.tree, np.zeros(3))  # wrong number of counts: the worker's error, raised by the call
    tio.canonical_bytes_ahead(bad)
    with pytest.raises(Exception):
        tio.canonical_bytes("x", bad)


def test_canonical_bytes_of_a_large_path_tree_without_pandas():
    """The ledger hash of a 10^5-node path-like tree: vectorised (Arrow kernels, no Python per node) and
    pandas stays unimported (it is computed in every charged ``tree release``)."""
    import subprocess
    import sys

    code = ("import sys, numpy as np\nfrom dpviz.tree.io import canonical_bytes\n"
            "from dpviz.tree.model import TreeData, tree_from_parents\n"
            "n = 10**5\nb = canonical_bytes('x', TreeData(tree_from_parents(np.arange(-1, n - 1)), np.array([5.0])))\n"
            "print(len(b.splitlines()), b.splitlines()[-1].decode(), 'pandas' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["100000", '["99999","99998",5]', "False"]


def test_identity_started_from_the_file_equals_the_loaded_trees(monkeypatch):
    """Under ``identity_early`` (``tree release``), load_tree_file starts the ledger's identity bytes from the
    parsed columns (ids 0..n-1 read as integers) beside the building of the tree, and canonical_bytes_ahead
    takes them for that tree (and counts): on random, partly hostile files the same bytes as the Python
    reference; files the loader refuses still raise its error; other counts for the tree recompute."""
    import dataclasses

    import dpviz.tree.io as tio
    from dpviz.tree.model import TreeData

    monkeypatch.setattr(tio, "_LINE_ROWS", 7)  # several blocks even for small trees
    rng = np.random.default_rng(31)
    early = ids_early = 0
    for case in range(160):
        raw = _random_file(rng)
        with tio.identity_early():
            try:
                data = load_tree_file(raw)
            except InputError as exc:
                assert _outcome(load_tree_file, raw) == ("error", str(exc))
                continue
        started = tio._EARLY.get(data.tree)
        early += started is not None and started[1].result() is not None
        text = tio._ID_TEXT.get(data.tree)  # the id text formatted from the file: the same as from the tree
        if text is not None and text.result() is not None:
            ids_early += 1
            got = tio.node_columns(data.tree)
            del tio._ID_TEXT[data.tree]
            want = tio.node_columns(data.tree)
            assert got.column("node").to_pylist() == want.column("node").cast(pa.string()).to_pylist(), case
            assert got.column("parent").to_pylist() == want.column("parent").cast(pa.string()).to_pylist(), case
        data = dataclasses.replace(data, name="x") if case % 2 else data  # as the CLI marks the structure
        tio.canonical_bytes_ahead(data)
        assert tio.canonical_bytes("x", data) == _canonical_reference(data), case
    assert early >= 5 and ids_early >= 5
    plain = load_tree_file(b"node,parent,count\n0,,\n1,0,3\n2,0,4\n")  # not under identity_early: nothing started
    assert plain.tree not in tio._EARLY
    with tio.identity_early():
        data = load_tree_file(b"node,parent,count\n0,,\n1,0,3\n2,0,4\n")
    other = TreeData(data.tree, np.array([5.0, 6.0]))  # the same tree, other counts: not the file's bytes
    tio.canonical_bytes_ahead(other)
    assert tio.canonical_bytes("x", other) == _canonical_reference(other) != _canonical_reference(data)


def test_float_text_is_arrows_cast_byte_for_byte():
    """:func:`float_text` (orjson's digits, Arrow's where the two spell a number differently) against Arrow's own
    cast, on random floats of every magnitude, integral values, ±0, NaN, ±inf, subnormals and float32 values."""
    from dpviz.core.csv_writer import _FAST_BLOCK, _FAST_MIN, float_text, number_column

    rng = np.random.default_rng(11)
    for trial in range(12):
        n = int(rng.integers(_FAST_MIN, 40_000))
        e = rng.uniform(-325, 308, n) if trial % 3 == 0 else rng.uniform(-8, 13, n)
        with np.errstate(all="ignore"):
            v = rng.choice([-1.0, 1.0], n) * 10.0**e
            k = rng.integers(0, 9, n)
            v = np.where(k == 0, np.round(v), v)  # integral: orjson writes "3.0", Arrow "3"
            v = np.where(k == 1, np.round(v * 100) / 100, v)
            v = np.where(k == 2, v.astype(np.float32).astype(float), v)
            v[k == 3] = rng.choice([np.nan, np.inf, -np.inf, 0.0, -0.0, 5e-324, 1e-5, 1e10, 1e-6, 9.999999e9],
                                   int((k == 3).sum()))
        got, want = float_text(v), pc.cast(number_column(v), pa.string())
        got.validate(full=True)
        assert got.equals(want), trial
        assert got.null_count == int(np.isnan(v).sum())
    for n in (_FAST_MIN * 4, 3 * _FAST_BLOCK + 1, 2 * _FAST_BLOCK + 777):  # the common case (no value takes
        fast = rng.normal(3e6, 1e5, n)  # Arrow's path), in one block and across blocks (a last block of 1)
        fast[::5000] = np.round(fast[::5000])  # and Arrow's text spliced into several blocks
        assert float_text(fast).equals(pc.cast(number_column(fast), pa.string())), n
    assert float_text(np.array([1.5, np.nan])).equals(pc.cast(number_column(np.array([1.5, np.nan])), pa.string()))


def test_arrow_bools_and_string_scalar_without_pandas():
    """:func:`dpviz.core.arrow.bools` equals the Python values (nulls False) for every slice offset and chunking;
    :func:`~dpviz.core.arrow.string_scalar` is the string's scalar."""
    from dpviz.core.arrow import bools, string_scalar

    base = pa.array([True, None, False, True, True, False, True, True, True, False, None, True] * 3)
    for off in range(9):
        part = base.slice(off, 17)
        assert bools(part).tolist() == [bool(v) for v in part.to_pylist()], off
    chunked = pa.chunked_array([base.slice(1, 5), base.slice(7, 9)])
    assert bools(chunked).tolist() == [bool(v) for v in chunked.to_pylist()]
    assert string_scalar("a / b").as_py() == "a / b" and string_scalar("").as_py() == ""
    from dpviz.core.arrow import strings

    assert strings(["(all)", "", "é / x"]).to_pylist() == ["(all)", "", "é / x"] and len(strings([])) == 0
    assert bools(pc.equal(pa.array(["", "x", ""]), string_scalar(""))).tolist() == [True, False, True]
