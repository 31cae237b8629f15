"""Fuzzing the tree loaders (Hypothesis, derandomized): whatever the bytes, :func:`load_tree_file` either
returns a valid TreeData or raises :class:`~dpviz.errors.InputError` — no other exception escapes
(issue 12: the old loader raised 61 other exceptions in 30,000 inputs). The same for the noisy-tree
loader of ``tree consistency``. About 850 examples in all; ``bench/fuzz.py`` runs 10^5 per loader.

Inputs are built from the formats' own pieces (headers, ids, numbers, JSON records and columns) and
then damaged (cut, duplicated, spliced with hostile bytes: NUL, BOMs, quotes, separators, huge and
non-integer numbers, deep nesting), plus plain random bytes.
"""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from dpviz.errors import InputError
from dpviz.tree.formats import noisy_tree_from_table
from dpviz.tree.io import load_tree_file
from dpviz.tree.reading import MAX_COUNT, read_table

FUZZ = settings(derandomize=True, database=None, deadline=None, suppress_health_check=list(HealthCheck))

HEADERS = ["node", "parent", "count", "value", "variance", "population", "pop", "n", "region", "state",
           "county", "Node", " parent ", "\ufeffnode", "", "count\x00", "a,b", '"node"']
IDS = st.one_of(
    st.sampled_from(["", "a", "b", "r", "root", "a\x00", "\x00", "a ", " a", "(all)", "a / b", "é", "\ufeff",
                     '"q"', "x,y", "a\nb", "a\rb", "0", "1", "-1", "007"]),
    st.text(max_size=6),
)
NUMBERS = st.one_of(
    st.sampled_from(["", "0", "1", "-1", "-2", "1.5", "2.0", "1e308", "-1e308", "nan", "NaN", "inf", "-inf",
                     "Infinity", "4294967296", "18446744073709551617", "9007199254740993", "1e16", "0x10",
                     "1_000", "+3", " 3", "3 ", "1e", ".", "-0", "00", "1e-320", str(MAX_COUNT),
                     str(MAX_COUNT + 2), "abc"]),
    st.integers(-5, 50).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
)
CELLS = st.one_of(IDS, NUMBERS)
MOSTLY_COUNTS = st.one_of(st.integers(0, 99).map(str), st.integers(0, 99).map(str), st.just(""), NUMBERS)
"""A count cell: usually a valid count (so that deeper checks run), sometimes anything."""
HOSTILE = st.sampled_from([b"\x00", b"\xef\xbb\xbf", b"\xef\xbb\xbf\xef\xbb\xbf", b'"', b",", b"\n", b"\r\n", b"\r",
                           b"\xff\xfe", b"\xc3", b"[" * 2000, b"{" * 50, b"]", b"}", b"\t", b" ", b";",
                           b"9" * 5000])


@st.composite
def csv_tables(draw) -> bytes:
    """A CSV in one of the tree formats (or close to one), then damaged."""
    kind = draw(st.sampled_from(["node_parent", "levels", "parent_array", "noisy", "random"]))
    if kind == "node_parent":
        header = ["node", "parent", "count"]
    elif kind == "levels":
        header = draw(st.lists(st.sampled_from(["region", "state", "county", "x", "y"]), min_size=1, max_size=3,
                               unique=True)) + [draw(st.sampled_from(["count", "pop", "value", "z"]))]
    elif kind == "parent_array":
        header = ["parent"] + draw(st.sampled_from([[], ["count"]]))
    elif kind == "noisy":
        header = ["node", "parent", "value", "variance"]
    else:
        header = draw(st.lists(st.sampled_from(HEADERS), min_size=1, max_size=5))
    n = draw(st.integers(1, 8))
    ids = [str(i) for i in range(n)] if draw(st.booleans()) else [f"v{i}" for i in range(n)]  # ints: the typed read
    rows = []
    for i in range(n):
        row = []
        for col in header:
            good = draw(st.integers(0, 9)) > 0
            if col == "node":
                cell = ids[i] if good else draw(IDS)
            elif col == "parent" and kind != "parent_array":
                # usually an earlier node; sometimes any node (cycles, self loops, forests) or anything
                target = draw(st.integers(0, i - 1)) if i else -1
                if draw(st.integers(0, 9)) == 0:
                    target = draw(st.integers(-1, n - 1))
                cell = ("" if target < 0 else ids[target]) if good else draw(IDS)
            elif col == "parent":
                target = draw(st.integers(0, i - 1)) if i else -1
                cell = str(target) if good else draw(NUMBERS)
            elif col in ("count", "pop", "value", "z", "variance"):
                cell = draw(MOSTLY_COUNTS)
            elif kind == "levels":
                cell = draw(st.sampled_from(["A", "B", "C"])) if good else draw(IDS)
            else:
                cell = draw(CELLS)
            row.append(cell)
        if draw(st.integers(0, 19)) == 0:  # ragged: a field too many or too few
            row = row + ["5"] if draw(st.booleans()) else row[:-1]
        rows.append(row)
    text = "\n".join(",".join(r) for r in [header, *rows])
    raw = text.encode("utf-8", "surrogatepass") if draw(st.booleans()) else text.encode("latin-1", "replace")
    return draw(_damaged(raw))


@st.composite
def json_tables(draw) -> bytes:
    """JSON records or columns (or another JSON value), then damaged."""
    scalar = st.one_of(st.none(), st.booleans(), st.integers(-3, 2**70), st.floats(), IDS, NUMBERS)
    value = st.recursive(scalar, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                        st.dictionaries(st.sampled_from(HEADERS), inner, max_size=3)),
                         max_leaves=6)
    kind = draw(st.sampled_from(["records", "columns", "parent_columns", "any", "deep"]))
    if kind == "records":
        n = draw(st.integers(0, 6))
        count = st.one_of(st.integers(0, 99), st.integers(0, 99), st.none(), scalar)
        obj = [{"node": f"v{i}", "parent": None if i == 0 else f"v{draw(st.integers(0, i - 1))}",
                "count": draw(count)} for i in range(n)]
        for rec in obj:
            if draw(st.integers(0, 4)) == 0:
                rec[draw(st.sampled_from(HEADERS))] = draw(value)
    elif kind == "columns":
        n = draw(st.integers(0, 6))
        obj = {draw(st.sampled_from(HEADERS)): draw(st.lists(scalar, min_size=n, max_size=n)) for _ in range(3)}
    elif kind == "parent_columns":
        n = draw(st.integers(1, 6))
        count = st.one_of(st.integers(0, 99), st.integers(0, 99), st.none(), scalar)
        obj = {"parent": [-1] + [draw(st.one_of(st.integers(0, i - 1), st.integers(0, i - 1), scalar))
                                 for i in range(1, n)],
               "count": draw(st.lists(count, min_size=n, max_size=n + draw(st.sampled_from([0, 0, 0, 1]))))}
    elif kind == "deep":
        depth = draw(st.sampled_from([10, 900, 1100, 5000, 100_000]))
        return draw(st.sampled_from(["[", "{\"a\":"])).encode() * depth + b"1" + b"]" * depth
    else:
        obj = draw(value)
    raw = json.dumps(obj, allow_nan=draw(st.booleans()) or True).encode()
    return draw(_damaged(raw))


@st.composite
def _damaged(draw, raw: bytes) -> bytes:
    for _ in range(draw(st.sampled_from([0, 0, 0, 0, 1, 2, 3]))):
        op = draw(st.sampled_from(["cut", "insert", "duplicate", "none"]))
        at = draw(st.integers(0, len(raw)))
        if op == "cut":
            raw = raw[:at] + raw[at + draw(st.integers(1, 8)):]
        elif op == "insert":
            raw = raw[:at] + draw(HOSTILE) + raw[at:]
        elif op == "duplicate":
            raw = raw + raw[at:]
    if draw(st.integers(0, 9)) == 0:
        raw = draw(st.sampled_from([b"\xef\xbb\xbf", b"\xef\xbb\xbf\xef\xbb\xbf", b"  \n\n", b""])) + raw
    return raw


def _only_input_error(raw: bytes) -> None:
    try:
        data = load_tree_file(raw, name="fuzz.csv")
    except InputError:
        event("InputError")
        return
    event("accepted")
    # accepted: the result must be a valid tree with finite, non-negative, bounded counts
    t = data.tree
    assert t.n >= 1 and data.x.shape == (t.m,)
    assert np.all(np.isfinite(data.x)) and np.all(data.x >= 0) and data.x.sum() <= MAX_COUNT
    assert t.parent[0] == -1 and np.all(t.parent[1:] < np.arange(1, t.n))  # DOH: parents come first
    assert np.isfinite(data.v).all()


@settings(FUZZ, max_examples=150)
@given(csv_tables())
def test_csv_loader_raises_only_input_error(raw):
    _only_input_error(raw)


def _outcome(load, raw: bytes):
    try:
        d = load(raw)
    except InputError as exc:
        return ("error", str(exc))
    return ("tree", d.tree.parent.tolist(), d.tree.order.tolist(), d.x.tolist(), [str(v) for v in d.node_ids])


@settings(FUZZ, max_examples=150)
@given(csv_tables())
def test_typed_read_agrees_with_the_string_read(raw):
    """Differential: the typed read of integer ids and counts (``read_table(..., integer_columns=...)``)
    gives exactly the tree, counts or error message of reading every column as strings."""
    from dpviz.tree.formats import tree_format, tree_from_table

    def strings(b: bytes):  # load_tree_file without integer_columns: every column read as text
        return tree_from_table(read_table(b, name="fuzz.csv", check_header=tree_format), "fuzz.csv")

    fast = _outcome(lambda b: load_tree_file(b, name="fuzz.csv"), raw)
    slow = _outcome(strings, raw)
    event(fast[0])
    try:
        table = read_table(raw, name="fuzz.csv", integer_columns=lambda cols: ["node", "parent", "count"])
        typed = [c for c in ("node", "count") if c in table and pa.types.is_integer(table.col(c).type)]
        event("typed: " + (" and ".join(typed) or "none"))
    except InputError:
        pass
    assert fast == slow


@settings(FUZZ, max_examples=200)
@given(json_tables())
def test_json_loader_raises_only_input_error(raw):
    _only_input_error(raw)


@settings(FUZZ, max_examples=150)
@given(st.binary(max_size=200))
def test_random_bytes_raise_only_input_error(raw):
    _only_input_error(raw)


@settings(FUZZ, max_examples=200)
@given(st.one_of(csv_tables(), json_tables()))
def test_noisy_tree_loader_raises_only_input_error(raw):
    try:
        tree, value, var = noisy_tree_from_table(read_table(raw, name="noisy.csv"), name="noisy.csv")
    except InputError:
        return
    assert value.shape == (tree.n,) and np.all(np.isfinite(value))
    assert var is None or (np.all(var > 0) and np.all(np.isfinite(var)))
