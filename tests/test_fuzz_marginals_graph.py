"""Fuzzing the marginals and graph loaders: only InputError may escape (issue 12's contract).

Loaders: :func:`dpviz.marginals.io.read_table` (CSV, any bytes), :func:`~dpviz.marginals.io.parse_workload`
(k, JSON or CSV text), MEAS.json (:func:`~dpviz.marginals.io.read_measurements` then
:func:`dpviz.marginals.estimators.reconstruct`) and :func:`dpviz.graph.io.read_edges`. Inputs are raw bytes and
CSV/JSON-shaped text built from hostile pieces (byte-order marks, NUL bytes, ragged rows, stray quotes, CR line
ends, huge and non-finite numbers, deep nesting, gzip), with small caps now and then so the cap paths run too.
Whatever loads must satisfy the loader's invariants. Derandomized, no example database: every run is the same
(about 1,000 examples, a few seconds). ``bench/fuzz.py`` runs 10⁵ per loader.
"""

from __future__ import annotations

import gzip
import json

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpviz.errors import InputError
from dpviz.graph.io import read_edges
from dpviz.marginals.io import parse_workload, read_measurements, read_table
from dpviz.marginals.model import Domain
from dpviz.marginals.estimators import reconstruct

FUZZ = settings(max_examples=150, derandomize=True, database=None, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large])
DOMAIN = Domain(("age", "sex", "edu"), (3, 2, 4))

BOM = "\ufeff"
_TOKENS = ["", "a", "b", "x y", "é", "NA", "nan", "inf", "-inf", "1e400", "-0", "0", "1", "2", "17", "2.5",
           "4294967296", "99999999999999999999", "-1", '"', '"q,uoted"', "\0", "a\0", BOM, "#", "%", " ", "\t",
           "\r", "u", "v", "source", "?"]
TOKEN = st.one_of(st.sampled_from(_TOKENS), st.integers(-3, 40).map(str), st.text(max_size=4))
SEP = st.sampled_from([",", ";", "\t", " ", ",,"])
EOL = st.sampled_from(["\n", "\r\n", "\r"])


@st.composite
def table_text(draw, min_cols: int = 1, max_cols: int = 5, max_rows: int = 20) -> bytes:
    """CSV-like bytes: rows of hostile tokens, mostly but not always as wide as the header."""
    width = draw(st.integers(min_cols, max_cols))
    sep, eol = draw(SEP), draw(EOL)
    rows = []
    for _ in range(draw(st.integers(0, max_rows))):
        n = width if draw(st.integers(0, 9)) else draw(st.integers(0, width + 2))  # ragged 1 time in 10
        rows.append(sep.join(draw(st.lists(TOKEN, min_size=n, max_size=n))))
    text = BOM * draw(st.integers(0, 2)) + eol.join(rows) + draw(st.sampled_from(["", eol]))
    data = text.encode("utf-8") if draw(st.integers(0, 7)) else text.encode("utf-16")
    if draw(st.integers(0, 7)) == 0:
        data = gzip.compress(data, mtime=0)
        if draw(st.booleans()):
            data = data[: draw(st.integers(0, len(data)))]  # truncated gzip
    return data


def _check_dataset(ds) -> None:
    assert ds.N >= 1 and ds.codes.shape == (ds.N, ds.domain.d)
    assert all(len(c) == n >= 2 for c, n in zip(ds.categories, ds.domain.sizes, strict=True))
    assert all(len(set(c)) == len(c) for c in ds.categories)
    assert all("\0" not in label for c in ds.categories for label in c)
    assert all("\0" not in a for a in ds.domain.attrs) and not ds.domain.attrs[0].startswith(BOM)
    codes = np.asarray(ds.codes)
    assert codes.min() >= 0 and (codes.max(axis=0) < np.asarray(ds.domain.sizes)).all()


def loaded(load, *args, **kwargs):
    """``load(*args, **kwargs)``, or None if it raised InputError (with a message); anything else escapes."""
    try:
        return load(*args, **kwargs)
    except InputError as exc:
        assert str(exc)
        return None


def _read_table(data: bytes, **kwargs) -> None:
    ds = loaded(read_table, data, **kwargs)
    if ds is not None:
        _check_dataset(ds)


# ------------------------------------------------------------------------------------- marginals CSV


@FUZZ
@given(st.binary(max_size=400))
def test_read_table_any_bytes(data):
    _read_table(data)


@FUZZ
@given(table_text(), st.integers(2, 6), st.sampled_from(["quantile", "width"]), st.booleans(),
       st.sampled_from([None, 1, 3, 10**6]), st.sampled_from([None, 1, 2]), st.sampled_from([None, 30, 10**6]))
def test_read_table_csv_shaped(data, bins, binning, skip_constant, max_rows, max_columns, max_bytes):
    caps = {k: v for k, v in (("max_rows", max_rows), ("max_columns", max_columns), ("max_bytes", max_bytes))
            if v is not None}
    _read_table(data, bins=bins, binning=binning, skip_constant=skip_constant, **caps)


# ------------------------------------------------------------------------------------- workload

JSON_SCALAR = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(),
                        st.sampled_from(["age", "sex", "edu", "age,sex", "", "nosuch", "\0", BOM + "age"]))
JSON = st.recursive(JSON_SCALAR, lambda inner: st.lists(inner, max_size=4)
                    | st.dictionaries(st.sampled_from(["age", "a", ""]), inner, max_size=3), max_leaves=12)


@st.composite
def workload_text(draw) -> bytes:
    kind = draw(st.integers(0, 3))
    if kind == 0:
        text = json.dumps(draw(JSON))
    elif kind == 1:
        depth = draw(st.sampled_from([1, 10, 999, 5000, 100_000]))
        text = "[" * depth + draw(st.sampled_from(["", '"age"', "1e400", "NaN"])) + "]" * draw(st.sampled_from([0, depth]))
    elif kind == 2:
        lines = draw(st.lists(st.lists(st.sampled_from(["age", "sex", "edu", " age ", "#c", "", "x", '"', "\0"]),
                                       max_size=4).map(",".join), max_size=6))
        text = draw(EOL).join(lines)
    else:
        text = draw(st.sampled_from(["0", "1", "3", "4", "99999999999999999999", "-1", " 2 ", "1.5"]))
    return (BOM * draw(st.integers(0, 2)) + text).encode("utf-8")


@FUZZ
@given(workload_text(), st.booleans())
def test_parse_workload_any_text(data, as_text):
    out = loaded(parse_workload, data.decode("utf-8") if as_text else data, DOMAIN)
    if out is None:
        return
    assert out and len(out) == len(set(out))
    assert all(g == tuple(sorted(g)) and all(0 <= a < DOMAIN.d for a in g) for g in out)


# ------------------------------------------------------------------------------------- MEAS.json

NAMES = st.sampled_from(["a", "b", "c", "", "\0"])
SIZE = st.one_of(st.integers(0, 4), st.sampled_from([10**9, 2**63, 2**70, -1, 1.5, 2.0, "3", True, None, 1e300]))
NUMBER = st.one_of(st.integers(-5, 5), st.floats(-1e6, 1e6, allow_nan=False), st.sampled_from([1e308, -0.0, True, "1"]))


@st.composite
def meas_json(draw) -> bytes:
    domain = draw(st.dictionaries(NAMES, SIZE, max_size=3))
    names = list(domain) + ["zz"]

    def attrs():
        return draw(st.one_of(st.lists(st.sampled_from(names), max_size=3), st.sampled_from(["a", 3, None])))

    def measurement():
        g = attrs()
        n = 1
        if isinstance(g, list):
            for a in g:
                s = domain.get(a)
                n *= s if isinstance(s, int) and not isinstance(s, bool) and 0 <= s <= 4 else 1
        n = n if draw(st.integers(0, 4)) else draw(st.integers(0, 6))
        return {"attributes": g, "values": draw(st.lists(NUMBER, min_size=n, max_size=n)),
                "sigma": draw(st.one_of(st.floats(0, 10), st.sampled_from([-1, 0, None, "1"])))}

    obj = {"domain": domain, "measurements": [measurement() for _ in range(draw(st.integers(0, 3)))],
           "workload": [attrs() for _ in range(draw(st.integers(0, 2)))]}
    for key in draw(st.lists(st.sampled_from(["domain", "measurements", "workload"]), max_size=1)):
        obj.pop(key)
    text = json.dumps(obj, allow_nan=True)
    cut = draw(st.integers(0, 9))
    if cut == 0:
        text = text[: draw(st.integers(0, len(text)))]
    elif cut == 1:
        text = text.replace(draw(st.sampled_from(["1", "0.", '"a"', "["])),
                            draw(st.sampled_from(["1e400", "NaN", "Infinity", "[" * 50_000, "\0", "9" * 5000])), 1)
    return (BOM * draw(st.integers(0, 1)) + text).encode("utf-8")


@FUZZ
@given(meas_json(), st.sampled_from(["mle", "mle", "mle", "lnn"]))
def test_meas_json_any_structure(data, method):
    out = loaded(lambda: reconstruct(read_measurements(data), method, lnn_options={"rounds": 5}))
    if out is None:
        return
    assert out["marginals"] and all(np.isfinite(m["values"]).all() for m in out["marginals"])


@FUZZ
@given(st.binary(max_size=300))
def test_meas_json_any_bytes(data):
    obj = loaded(read_measurements, data)
    assert obj is None or isinstance(obj, dict)


# ------------------------------------------------------------------------------------- graph edge list


def _read_edges(data: bytes, **kwargs) -> None:
    g = loaded(read_edges, data, **kwargs)
    if g is None:
        return
    e = np.asarray(g.edges)
    assert e.ndim == 2 and e.shape[1] == 2 and g.n_nodes >= 1
    if e.size:
        assert (e[:, 0] < e[:, 1]).all() and e.min() >= 0 and e.max() < g.n_nodes
        keys = e[:, 0] * g.n_nodes + e[:, 1]
        assert (np.diff(keys) > 0).all()  # sorted, no duplicates
    if g.labels is not None:
        assert len(g.labels) == g.n_nodes == len(set(g.labels))
        assert not any("\0" in x for x in g.labels)


@FUZZ
@given(st.binary(max_size=400))
def test_read_edges_any_bytes(data):
    _read_edges(data)


@FUZZ
@given(table_text(min_cols=1, max_cols=5), st.sampled_from([None, True, False]), st.sampled_from([None, 1, 5, 50]),
       st.sampled_from([None, 1, 3]), st.sampled_from([None, 2, 40]))
def test_read_edges_edge_list_shaped(data, header, n_nodes, max_edges, max_nodes):
    caps = {k: v for k, v in (("max_edges", max_edges), ("max_nodes", max_nodes)) if v is not None}
    _read_edges(data, header=header, n_nodes=n_nodes, **caps)
