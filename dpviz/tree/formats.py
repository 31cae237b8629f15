"""The three tree formats: a parsed :class:`~dpviz.tree.reading.Table` → :class:`~dpviz.tree.model.TreeData`.

Every function validates and raises :class:`dpviz.errors.InputError` naming the line (CSV: as in an
editor, the header is line 1) or JSON record and what was expected. Formats:

* ``node,parent[,count]`` (:func:`tree_from_node_parent`) — ids are arbitrary strings, rows in any
  order, the root's parent empty. Counts are required on leaves; counts given on internal nodes must
  equal the sum of their leaves.
* one column per level plus a count column (:func:`tree_from_levels`), e.g.
  ``region,division,state,county,population`` (the count column is ``count_column`` if given, else the
  one named count/population/pop/value/n, else the last column). Node ids are the paths
  ``"South / Texas / Travis County"`` under a root ``"(all)"``.
* a parent array (:func:`tree_from_parent_array`): a ``parent`` column of 0-based row indices (-1 or
  empty for the root) with an optional ``count`` column, or a JSON object ``{"parent": [...], "count":
  [...]}``. An index must be an exact integer in range (``4294967296`` is an error, never row 0).

:func:`tree_format` tells the format from the header alone, so a file that is no tree is refused before
its body is parsed; :func:`tree_from_table` dispatches. Counts are capped by :data:`MAX_COUNT` = 2⁵³,
each and in total, checked in integers (above it float64 counts and their sums stop being exact).
A noisy tree released elsewhere (``node,parent,value[,variance]``) is read by :func:`noisy_tree_from_table`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dpviz.core import arrow
from dpviz.errors import InputError
from dpviz.tree.model import Tree, TreeData, build_tree, tree_from_parents
from dpviz.tree.reading import _NODE_CAP, MAX_COUNT, MAX_NODES, WORDING, Table, _column_names, _json_texts, _string_array

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["COUNT_NAMES", "MAX_VARIANCE", "MIN_VARIANCE", "PATH_SEP", "ROOT_ID", "node_parent_structure",
           "noisy_columns", "noisy_tree_from_table", "tree_format", "tree_from_levels", "tree_from_node_parent",
           "tree_from_parent_array", "tree_from_table"]


ROOT_ID = "(all)"


PATH_SEP = " / "


COUNT_NAMES = ("count", "population", "pop", "value", "n")


MIN_VARIANCE = 1e-12


MAX_VARIANCE = 1e30


def _numbers(text: pa.Array) -> np.ndarray:
    """float64 of a string column: NaN where empty or not a number (vectorised; Arrow's parser first)."""
    text = text.combine_chunks() if isinstance(text, pa.ChunkedArray) else text
    empty = pc.equal(text, arrow.string_scalar(""))
    try:
        vals = pc.cast(pc.if_else(empty, arrow.string_scalar("nan"), text), pa.float64())
        out = np.array(arrow.values(vals), dtype=float)  # a copy (the view is read-only); no pandas
        if vals.null_count:
            out[~arrow.valid(vals)] = np.nan
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):  # some value is not a number: find which (slow path)
        import pandas as pd  # the slow path only: a value that is not a number
        num = pd.to_numeric(pd.Series(text.to_numpy(zero_copy_only=False), dtype=object), errors="coerce")
        out = np.array(num.to_numpy(dtype=float, na_value=np.nan), dtype=float)
    out[arrow.bools(empty)] = np.nan
    return out


def _parse_counts(text: pa.Array, where, required: np.ndarray | None = None, field_name: str = "count") -> np.ndarray:
    """Counts as floats (NaN = missing). Non-numeric, NaN/inf, negative and too large values are errors.
    ``text`` is a string column, or an int64 one (null = missing) from a typed read: checked exactly."""
    if pa.types.is_integer(text.type):
        missing = ~arrow.valid(text)
        ints = np.where(missing, 0, arrow.values(text)) if text.null_count else arrow.values(text)
        lo, hi = (int(v) for v in (ints.min(), ints.max())) if ints.size else (0, 0)
        vals = ints.astype(float)
        if text.null_count:
            vals[missing] = np.nan
    else:
        vals = _numbers(text)
        missing = arrow.bools(pc.equal(text, arrow.string_scalar("")))
        bad = np.flatnonzero(~missing & ~np.isfinite(vals))
        if bad.size:
            i = int(bad[0])
            raise InputError(f"{where(i)}: {field_name} {text[i].as_py()!r} is not a finite number (expected a "
                             "count >= 0)")
        lo, hi = 0, 0  # checked on the floats below
    if lo < 0 or hi > MAX_COUNT:  # exact integers: 2^53 + 1 is above the cap (as a float it would equal it)
        ints_bad = np.flatnonzero((ints < 0) | (ints > MAX_COUNT))
        i = int(ints_bad[0])
        what = "is negative (expected a count >= 0)" if ints[i] < 0 else (
            f"is above the largest count 2^53 = {MAX_COUNT:,} (MAX_COUNT; larger counts lose exactness in float64)")
        raise InputError(f"{where(i)}: {field_name} {int(ints[i])} {what}")
    neg = np.flatnonzero(vals < 0)
    if neg.size:
        i = int(neg[0])
        raise InputError(f"{where(i)}: {field_name} {text[i].as_py()} is negative (expected a count >= 0)")
    big = np.flatnonzero(vals > MAX_COUNT)
    if not big.size and not pa.types.is_integer(text.type):  # text that rounds to 2^53 may be above it
        edge = np.flatnonzero(vals == MAX_COUNT)
        big = edge[[_decimal(text[int(i)].as_py()) > MAX_COUNT for i in edge[:1000]]]  # rare: Python per value
    if big.size:
        i = int(big[0])
        raise InputError(f"{where(i)}: {field_name} {text[i].as_py()} is above the largest count 2^53 = "
                         f"{MAX_COUNT:,} (MAX_COUNT; larger counts lose exactness in float64)")
    if required is not None:
        lack = np.flatnonzero(required & missing)
        if lack.size:
            raise InputError(f"{where(int(lack[0]))}: leaf has no count (every leaf needs a count)")
    return vals


def _decimal(text: str):
    """The exact value of a number's text (``9007199254740993`` is not 2^53)."""
    from decimal import Decimal, InvalidOperation

    try:
        return Decimal(text.strip())
    except InvalidOperation:
        return Decimal(0)


def _exact_total(x: np.ndarray) -> int | float:
    """Σ x exactly: integer counts (each <= 2^53) summed in two 32-bit halves, in int64 without overflow."""
    if x.size and np.array_equal(x, np.floor(x)):
        xi = x.astype(np.uint64)
        return (int(np.sum(xi >> np.uint64(32), dtype=np.uint64)) << 32) + int(
            np.sum(xi & np.uint64(0xFFFFFFFF), dtype=np.uint64))
    return float(np.sum(x))


def _check_total(x: np.ndarray, name: str) -> None:
    """Refuse counts (>= 0) whose total is above MAX_COUNT; exact, but one float sum decides the usual
    case: a float64 sum of at most 2^52 is far from 2^53 whatever its rounding error."""
    if float(np.sum(x)) <= 2.0**52:
        return
    total = _exact_total(x)
    if total > MAX_COUNT:
        raise InputError(f"{name}: the counts add up to {total:,.0f}, above the largest total 2^53 = {MAX_COUNT:,} "
                         "(MAX_COUNT; larger totals lose exactness in float64); scale the counts down")


def _finish(tree: Tree, counts_in: np.ndarray, where, name: str) -> TreeData:
    """Check the total and the given internal counts against their leaves and return the TreeData."""
    counts = counts_in if tree.in_input_order else counts_in[tree.order]  # DOH order
    x = counts[tree.n1 :]
    leaves_missing = np.flatnonzero(np.isnan(x))
    if leaves_missing.size:
        raise InputError(f"{where(int(tree.order[tree.n1 + leaves_missing[0]]))}: leaf has no count")
    _check_total(x, name)
    given = counts[: tree.n1]
    has = ~np.isnan(given)
    if has.any():
        v = build_tree(tree, x)
        off = np.flatnonzero(has & ~np.isclose(given, v[: tree.n1], rtol=1e-9, atol=1e-9))
        if off.size:
            i = int(off[0])
            raise InputError(
                f"{where(int(tree.order[i]))}: count {given[i]:g} disagrees with the sum of its leaves "
                f"({v[i]:g}); leave internal counts empty or make them consistent"
            )
    return TreeData(tree=tree, x=np.ascontiguousarray(x), name=name)


def _check_size(n: int, max_nodes: int) -> None:
    if n > max_nodes:
        raise WORDING.error("the tree", f"has {n:,} nodes", _NODE_CAP, max_nodes)


def _as_table(data: Table | pd.DataFrame, name: str) -> Table:
    if isinstance(data, Table):
        return data
    cols = _column_names(list(data.columns), name)
    arrays = {c: _strings(data[k]) for c, k in zip(cols, data.columns)}
    return Table(name=name, columns=arrays, n=len(data), json=bool(data.attrs.get("json", False)))


def _strings(values: Any, what: str = "value") -> pa.Array:
    """Any column (Arrow, pandas, NumPy, list) as stripped strings, missing values as ``""``."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if isinstance(values, pa.Array) and pa.types.is_string(values.type):
        return pc.utf8_trim_whitespace(values.fill_null(""))
    if isinstance(values, np.ndarray) and values.dtype.kind in "iu":
        return pa.array(values).cast(pa.string())
    seq = values.tolist() if hasattr(values, "tolist") else list(values)
    return _string_array(_json_texts(seq, lambda i: f"position {i}"), lambda i: f"position {i}")


def tree_format(columns: Iterable[str], name: str = "tree", count_column: str | None = None) -> tuple[str, str | None]:
    """The format a table with these (lower-cased) columns is read as, and its count column:
    ``("node_parent", count)``, ``("parent_array", count or None)`` or ``("levels", count)``. Known from
    the header alone, so a file that is no tree is refused before its body is parsed."""
    cols = list(columns)
    if count_column is not None:
        key = count_column.strip().lower()
        if key not in cols:
            raise InputError(f"{name}: count column {count_column!r} not found; columns are {cols}")
        count_column = key
    if "node" in cols and "parent" in cols:
        ccol = count_column or "count"
        if ccol not in cols:
            raise InputError(f"{name}: no 'count' column (expected node,parent,count with counts on leaves)")
        return "node_parent", ccol
    if "parent" in cols:
        return "parent_array", count_column or ("count" if "count" in cols else None)
    if count_column is None:
        named = [c for c in cols if c in COUNT_NAMES]
        count_column = named[0] if named else cols[-1]
    if not [c for c in cols if c != count_column]:
        raise InputError(
            f"{name}: expected node,parent,count columns or one column per level plus a count column; "
            f"got {[c[:40] for c in cols[:10]]}"
        )
    return "levels", count_column


def tree_from_table(table: Table | pd.DataFrame, name: str = "tree", max_nodes: int = MAX_NODES,
                    count_column: str | None = None) -> TreeData:
    """Detect the format of ``table`` (see module docstring) and build the tree."""
    table = _as_table(table, name)
    kind, ccol = tree_format(table.columns, name, count_column)
    if kind == "node_parent":
        return tree_from_node_parent(table, name, max_nodes, count_column=ccol)
    if kind == "parent_array":
        counts = table.col(ccol) if ccol else None
        return tree_from_parent_array(table.col("parent"), counts, name, max_nodes, where=table.where())
    return tree_from_levels(table, count_col=ccol, name=name, max_nodes=max_nodes)


def node_parent_structure(table: Table | pd.DataFrame, max_nodes: int = MAX_NODES, name: str = "tree"):
    """Validate the ``node`` and ``parent`` columns and build the Tree; returns (tree, where).

    One hash pass over ids and parents together (Arrow ``dictionary_encode``, codes in order of first
    appearance): the ids are distinct iff they get codes 0..n-1 in row order, and a parent's code below
    n is the row of its node."""
    table = _as_table(table, name)
    _check_size(table.n, max_nodes)
    n = table.n
    ids = table.col("node")
    where_row = table.where()
    empty = np.flatnonzero(~arrow.valid(ids) if pa.types.is_integer(ids.type)
                           else pc.equal(ids, "").to_numpy(zero_copy_only=False))
    if empty.size:
        raise InputError(f"{where_row(int(empty[0]))}: empty node id")
    parents = table.col("parent")
    typed = pa.types.is_integer(ids.type)  # read as int64 (canonical integers, see read_table): no strings
    if typed != pa.types.is_integer(parents.type):  # one column typed, not the other: compare as text
        # (a typed value is canonical, so its text is exactly what the file holds)
        ids, parents = (_as_text(c) for c in (ids, parents))
        typed = False
    if typed:
        is_root = ~arrow.valid(parents)
        first = arrow.values(ids)[:1]  # the root's parent: any id (its code is overwritten below)
        keys = [ids, arrow.from_numpy(np.where(is_root, first, arrow.values(parents)))]
    else:
        is_root = pc.equal(parents, "").to_numpy(zero_copy_only=False)
        keys = _integer_keys(ids, parents)  # integer ids hash much faster than strings
    if keys is not None and _is_row_index(keys[0]):  # ids 0..n-1 in row order (as `tree generate` writes)
        pidx = np.array(arrow.values(keys[1]))
        where = table.where(ids)
        unknown = np.flatnonzero(((pidx < 0) & ~is_root) | (pidx >= n))
        if unknown.size:
            i = int(unknown[0])
            raise InputError(f"{where(i)}: parent {str(parents[i].as_py())!r} is not a node of the table")
        pidx[is_root] = -1
        return tree_from_parents(pidx, where=where), where  # labels are the row indices: no label array
    codes = pa.concat_arrays(keys or [ids, parents]).dictionary_encode().indices.to_numpy(zero_copy_only=False)
    id_codes, pidx = codes[:n], codes[n:].astype(np.int64)
    dup = np.flatnonzero(id_codes != np.arange(n, dtype=id_codes.dtype))
    if dup.size:
        i = int(dup[0])
        first = int(np.flatnonzero(id_codes == id_codes[i])[0])
        raise InputError(f"{where_row(i)}: duplicate node id {str(ids[i].as_py())!r} (first on {where_row(first)})")
    where = table.where(ids)
    unknown = np.flatnonzero((pidx >= n) & ~is_root)
    if unknown.size:
        i = int(unknown[0])
        raise InputError(f"{where(i)}: parent {str(parents[i].as_py())!r} is not a node of the table")
    pidx[is_root] = -1
    return tree_from_parents(pidx, labels=ids.cast(pa.string()) if typed else ids, where=where), where


def _as_text(col: pa.Array) -> pa.Array:
    return col if pa.types.is_string(col.type) else col.cast(pa.string()).fill_null("")


def _is_row_index(iid: pa.Array) -> bool:
    values = arrow.values(iid)
    return values.size > 0 and values[0] == 0 and values[-1] == values.size - 1 and bool(
        np.all(np.diff(values) == 1))


def _integer_keys(ids: pa.Array, parents: pa.Array) -> list[pa.Array] | None:
    """(ids, parents) as int64 when every id and parent is an integer in canonical decimal form (so
    that equal integers are equal strings: ``7`` and ``07`` stay different ids); None otherwise. An
    empty parent becomes -1, which is never an id of this form... unless an id is ``-1`` (then None)."""
    sample = ids.slice(0, 8).to_pylist() + ids.slice(max(0, len(ids) - 8)).to_pylist()
    if not all(v.lstrip("-").isdigit() and v.isascii() for v in sample):  # a failed cast costs a full pass
        return None
    try:
        iid = pc.cast(ids, pa.int64())
        is_root = pc.equal(parents, "")
        ipar = pc.cast(pc.if_else(is_root, "-1", parents), pa.int64())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    if not (_canonical(ids) and _canonical(parents)) or pc.any(pc.equal(iid, -1)).as_py():
        return None
    return [iid, ipar]


def _canonical(ints: pa.Array) -> bool:
    """Whether integer strings (already parsed by Arrow) are in canonical decimal form: no sign ``+``,
    no leading zero, no ``-0``."""
    lead0 = pc.and_(pc.starts_with(ints, "0"), pc.greater(pc.binary_length(ints), 1))
    bad = pc.or_(pc.or_(pc.starts_with(ints, "+"), pc.starts_with(ints, "-0")), lead0)
    return not pc.any(bad).as_py()


def tree_from_node_parent(table: Table | pd.DataFrame, name: str = "tree", max_nodes: int = MAX_NODES, *,
                          count_column: str | None = None) -> TreeData:
    """``node,parent[,count]`` table → TreeData (see module docstring)."""
    table = _as_table(table, name)
    kind, ccol = tree_format(table.columns, name, count_column)
    if kind != "node_parent":
        raise InputError(f"{name}: expected node,parent,count columns; got {list(table.columns)[:10]}")
    tree, where = node_parent_structure(table, max_nodes, name)
    leaf_in = np.zeros(table.n, bool)
    leaf_in[tree.order[tree.n1 :]] = True
    counts = _parse_counts(table.col(ccol), where, required=leaf_in)
    return _finish(tree, counts, where, name)


def noisy_tree_from_table(
    table: Table | pd.DataFrame, name: str = "tree", max_nodes: int = MAX_NODES
) -> tuple[Tree, np.ndarray, np.ndarray | None]:
    """``node,parent,value[,variance]`` (a noisy tree released elsewhere) → (tree, value, variance)
    in DOH order. Values may be negative, |value| <= 2^53; every node needs one. Variances must lie in
    [1e-12, 1e30] (a ratio of weights GMC can represent)."""
    table = _as_table(table, name)
    noisy_columns(table.columns, name)
    tree, where = node_parent_structure(table, max_nodes, name)
    value = _parse_numbers(table.col("value"), where, "value", low=-float(MAX_COUNT), high=float(MAX_COUNT))
    var = None
    if "variance" in table:
        var = _parse_numbers(table.col("variance"), where, "variance", low=MIN_VARIANCE, high=MAX_VARIANCE)[tree.order]
    return tree, value[tree.order], var


def noisy_columns(columns: Iterable[str], name: str = "tree") -> None:
    """Refuse a noisy-tree table (``tree consistency``) without node, parent and value columns (from the
    header alone: usable as ``read_table(..., check_header=noisy_columns)``)."""
    cols = list(columns)
    missing = [c for c in ("node", "parent", "value") if c not in cols]
    if missing:
        raise InputError(f"{name}: missing column(s) {', '.join(missing)} (expected node,parent,value[,variance])")


def _parse_numbers(text: pa.Array, where, field_name: str, low: float, high: float) -> np.ndarray:
    vals = _numbers(text)
    bad = np.flatnonzero(~np.isfinite(vals))
    if bad.size:
        i = int(bad[0])
        shown = text[i].as_py()
        what = "empty" if shown == "" else f"{shown!r}, not a finite number"
        raise InputError(f"{where(i)}: {field_name} is {what} (every node needs a {field_name})")
    out = np.flatnonzero((vals < low) | (vals > high))
    if out.size:
        i = int(out[0])
        raise InputError(f"{where(i)}: {field_name} {text[i].as_py()} is outside [{low:g}, {high:g}]")
    return vals


def _parent_indices(text: pa.Array, where) -> np.ndarray:
    """Exact integer row indices (int64; ``""`` → -1). Anything else — a fraction, a float that is not
    exact, more than int64 — is an error naming the row; the range is checked by tree_from_parents."""
    filled = pc.if_else(pc.equal(text, ""), "-1", text)
    try:
        return pc.cast(filled, pa.int64()).to_numpy(zero_copy_only=False)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        pass
    raw = filled.to_numpy(zero_copy_only=False)
    vals = _numbers(filled)
    ok = np.isfinite(vals) & (vals == np.round(vals)) & (np.abs(vals) < 2**53)
    bad = np.flatnonzero(~ok)
    if bad.size:
        i = int(bad[0])
        raise InputError(f"{where(i)}: parent {raw[i]!r} is not a row index (expected an integer 0..n-1, "
                         "-1 or empty for the root)")
    return vals.astype(np.int64)


def tree_from_parent_array(
    parent, counts=None, name: str = "tree", max_nodes: int = MAX_NODES, where=None
) -> TreeData:
    """Parent array (0-based indices, -1/empty for the root) + optional counts → TreeData.

    Without counts every leaf gets count 0 (a structure-only tree).
    """
    text = _strings(parent)
    _check_size(len(text), max_nodes)
    if len(text) == 0:
        raise InputError(f"{name}: the parent array is empty: expected at least one node")
    where = where or (lambda i: f"position {i}")
    tree = tree_from_parents(_parent_indices(text, where), where=where)
    if counts is None:
        c = np.zeros(tree.n)
    else:
        ctext = _strings(counts)
        if len(ctext) != tree.n:
            raise InputError(f"{name}: {len(ctext)} counts for {tree.n} parents; expected one count per node")
        leaf_in = np.zeros(tree.n, bool)
        leaf_in[tree.order[tree.n1 :]] = True
        c = _parse_counts(ctext, where, required=leaf_in)
    return _finish(tree, c, where, name)


def _first_rows(codes: np.ndarray) -> np.ndarray:
    """Rows where each code first appears, in code order (codes numbered by first appearance)."""
    seen = np.maximum.accumulate(codes)
    new = np.empty(codes.size, bool)
    new[0] = True
    new[1:] = codes[1:] > seen[:-1]
    return np.flatnonzero(new)


def _indices(enc: pa.DictionaryArray | pa.ChunkedArray) -> np.ndarray:
    """The indices of a dictionary-encoded column as NumPy (no pandas; nulls are not expected here)."""
    if isinstance(enc, pa.ChunkedArray):
        return np.concatenate([_indices(c) for c in enc.chunks]) if enc.num_chunks else np.zeros(0, np.int32)
    return arrow.values(enc.indices)


def tree_from_levels(
    table: Table | pd.DataFrame,
    level_cols: list[str] | None = None,
    count_col: str | None = None,
    name: str = "tree",
    max_nodes: int = MAX_NODES,
) -> TreeData:
    """One column per level (top to bottom) + a count column → TreeData under a root ``(all)``."""
    table = _as_table(table, name)
    cols = list(table.columns)
    if count_col is None:
        named = [c for c in cols if c in COUNT_NAMES]
        count_col = named[0] if named else cols[-1]
    if level_cols is None:
        level_cols = [c for c in cols if c != count_col]
    if not level_cols:
        raise InputError(
            f"{name}: expected node,parent,count columns or one column per level plus a count column; "
            f"got {cols}"
        )
    where_row = table.where()
    cells = [table.col(c) for c in level_cols]
    empty_rows = [np.flatnonzero(arrow.bools(pc.equal(c, arrow.string_scalar("")))) for c in cells]
    firsts = [(int(e[0]), k) for k, e in enumerate(empty_rows) if e.size]
    if firsts:
        r, k = min(firsts)
        raise InputError(f"{where_row(r)}: empty value in level column {level_cols[k]!r}")
    n_rows = table.n
    ids: list[Any] = [arrow.strings([ROOT_ID])]
    parent_of_level: list[np.ndarray] = [np.array([-1], np.int64)]
    offset, n_nodes, prev_n = 1, 1, 0
    prev_codes = np.zeros(n_rows, np.int64)
    path = None
    for lev, cell in enumerate(cells):
        path = cell if lev == 0 else pc.binary_join_element_wise(path, cell, arrow.string_scalar(PATH_SEP))
        enc = path.dictionary_encode()
        codes = _indices(enc).astype(np.int64, copy=False)
        first = _first_rows(codes)
        n_nodes += first.size
        _check_size(n_nodes + (n_rows if lev < len(cells) - 1 else 0), max_nodes)
        parent_of_level.append(np.zeros(first.size, np.int64) if lev == 0 else offset - prev_n + prev_codes[first])
        ids.append(enc.dictionary)
        prev_codes, prev_n = codes, first.size
        offset += first.size
    leaf_codes = prev_codes
    if prev_n != n_rows:  # two rows with the same full path
        new = np.zeros(n_rows, bool)
        new[_first_rows(leaf_codes)] = True
        i = int(np.flatnonzero(~new)[0])
        first_row = int(np.flatnonzero(leaf_codes == leaf_codes[i])[0])
        raise InputError(f"{where_row(i)}: duplicate row for {path[i].as_py()!r} (first on {where_row(first_row)})")
    node_ids = pa.concat_arrays(ids)
    parent = np.concatenate(parent_of_level)
    tree = tree_from_parents(parent, labels=node_ids)
    counts_raw = _parse_counts(table.col(count_col), lambda i: f"{where_row(i)} column {count_col!r}")
    lack = np.flatnonzero(np.isnan(counts_raw))
    if lack.size:
        raise InputError(f"{where_row(int(lack[0]))}: empty count in column {count_col!r}")
    counts = np.full(len(node_ids), np.nan)
    counts[offset - n_rows :] = counts_raw  # leaves are the last level, one per row, in row order
    return _finish(tree, counts, lambda i: f"node {node_ids[i].as_py()!r}", name)
