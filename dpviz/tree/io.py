"""Reading trees with counts: node/parent tables, one-column-per-level tables, parent arrays.

Every reader validates and raises :class:`dpviz.errors.InputError` naming the line (CSV: the header is
line 1, so data row r is line r + 1) or JSON record and what was expected. The result is a
:class:`TreeData`: the structure (:class:`~dpviz.tree.model.Tree`) plus the leaf counts ``x``.

Formats (CSV or JSON; JSON is a list of records or an object of columns):

* ``node,parent[,count]`` — ids are arbitrary strings, rows in any order, the root's parent empty.
  Counts are required on leaves; counts given on internal nodes must equal the sum of their leaves.
* one column per level plus a count column, e.g. ``region,division,state,county,population``
  (the count column is the one named count/population/pop/value/n, else the last column).
  Node ids are the paths ``"South / Texas / Travis County"`` under a root ``"(all)"``.
* a parent array: a ``parent`` column of 0-based row indices (-1 or empty for the root) with an
  optional ``count`` column, or a JSON object ``{"parent": [...], "count": [...]}``.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np
import pandas as pd

from dpviz.errors import InputError
from dpviz.tree.model import Tree, tree_from_parents
from dpviz.tree.propagation import upward

MAX_NODES = 5_000_000
ROOT_ID = "(all)"
PATH_SEP = " / "
COUNT_NAMES = ("count", "population", "pop", "value", "n")

__all__ = [
    "TreeData",
    "MAX_NODES",
    "read_table",
    "tree_from_table",
    "tree_from_node_parent",
    "node_parent_structure",
    "noisy_tree_from_table",
    "tree_from_levels",
    "tree_from_parent_array",
    "load_tree_file",
    "build_tree",
    "node_table",
    "load_source",
    "load_county_sample",
]


@dataclass(frozen=True, eq=False)
class TreeData:
    """A tree structure with its private unit counts ``x`` (one per leaf, in leaf order)."""

    tree: Tree
    x: np.ndarray
    name: str = "tree"

    @cached_property
    def v(self) -> np.ndarray:
        """The node vector v = BuildTree(x) (Eq. 25)."""
        return build_tree(self.tree, self.x)

    @property
    def node_ids(self) -> np.ndarray:
        return self.tree.label_of(np.arange(self.tree.n))

    @property
    def parent_ids(self) -> np.ndarray:
        return _parent_ids(self.tree, self.node_ids)


def _parent_ids(tree: Tree, ids: np.ndarray) -> np.ndarray:
    out = np.full(tree.n, "", dtype=object)
    out[1:] = ids[tree.parent[1:]]
    return out


def node_table(tree: Tree, **columns: np.ndarray) -> pd.DataFrame:
    """``node,parent`` plus per-node ``columns`` (arrays in DOH order), rows back in the input order:
    the one writer of every per-node CSV (CLI outputs, the page's download)."""
    ids = tree.label_of(np.arange(tree.n))
    return pd.DataFrame({"node": ids, "parent": _parent_ids(tree, ids), **columns}).iloc[np.argsort(tree.order)]


def build_tree(tree: Tree, x: np.ndarray) -> np.ndarray:
    """BuildTree_T(x) = G_T^{-T} H_Hᵀ x (Eq. 25): place x on the leaves, propagate upward."""
    x = np.asarray(x, float)
    if x.shape != (tree.m,):
        raise ValueError(f"expected {tree.m} leaf counts, got shape {x.shape}")
    placed = np.zeros(tree.n)
    placed[tree.n1 :] = x
    return upward(tree, placed)


# ---------------------------------------------------------------------------------------------
def read_table(source: str | Path | bytes, name: str | None = None) -> pd.DataFrame:
    """Read a CSV or JSON table from a path or raw bytes (the format is sniffed from the content)."""
    if isinstance(source, (str, Path)):
        path = Path(source)
        name = name or path.name
        raw = path.read_bytes()
    else:
        raw = bytes(source)
        name = name or "upload"
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = raw.decode("latin-1")
    if not text.strip():
        raise InputError(f"{name} is empty: expected a header line and at least one data row")
    if text.lstrip()[:1] in "[{":
        return _json_table(text, name)
    try:
        df = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False, skipinitialspace=True)
    except pd.errors.ParserError as exc:
        raise InputError(f"{name} is not a valid CSV file: {exc}") from None
    df.columns = [str(c).strip().lower() for c in df.columns]
    if df.empty:
        raise InputError(f"{name} has a header but no data rows")
    return df


def _json_table(text: str, name: str) -> pd.DataFrame:
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{name} is not valid JSON: {exc.msg} at line {exc.lineno}") from None
    if isinstance(obj, dict):
        if not obj or not all(isinstance(v, list) for v in obj.values()):
            raise InputError(f"{name}: expected a list of records or an object of equal-length column lists")
        lengths = {len(v) for v in obj.values()}
        if len(lengths) != 1:
            raise InputError(f"{name}: the column lists have different lengths {sorted(lengths)}")
        obj = pd.DataFrame(obj)
    elif isinstance(obj, list):
        if not obj:
            raise InputError(f"{name} has no records")
        bad = [i for i, r in enumerate(obj) if not isinstance(r, dict)]
        if bad:
            raise InputError(f"{name}: record {bad[0]} is not an object")
        obj = pd.DataFrame.from_records(obj)
    else:
        raise InputError(f"{name}: expected a list of records or an object of columns")
    df = obj.map(lambda v: "" if v is None or (isinstance(v, float) and np.isnan(v)) else str(v))
    df.columns = [str(c).strip().lower() for c in df.columns]
    df.attrs["json"] = True
    return df


def _where(df: pd.DataFrame, ids: np.ndarray | None = None):
    json_mode = df.attrs.get("json", False)

    def where(i: int) -> str:
        loc = f"record {i}" if json_mode else f"line {i + 2}"
        return f"{loc} (node {ids[i]!r})" if ids is not None else loc

    return where


def tree_from_table(df: pd.DataFrame, name: str = "tree", max_nodes: int = MAX_NODES) -> TreeData:
    """Detect the format of ``df`` (see module docstring) and build the tree."""
    cols = set(df.columns)
    if {"node", "parent"} <= cols:
        return tree_from_node_parent(df, name, max_nodes)
    if "parent" in cols:
        counts = df["count"] if "count" in cols else None
        return tree_from_parent_array(df["parent"], counts, name, max_nodes, where=_where(df))
    return tree_from_levels(df, name=name, max_nodes=max_nodes)


def load_tree_file(path: str | Path | bytes, name: str | None = None, max_nodes: int = MAX_NODES) -> TreeData:
    """Read and validate a tree file (CSV/JSON, any of the three formats)."""
    df = read_table(path, name)
    label = name or (Path(path).name if isinstance(path, (str, Path)) else "upload")
    return tree_from_table(df, label, max_nodes)


def _check_size(n: int, max_nodes: int) -> None:
    if n > max_nodes:
        raise InputError(f"the tree has {n:,} nodes, more than the limit of {max_nodes:,}")


def _parse_counts(raw: pd.Series, where, required: np.ndarray | None = None) -> np.ndarray:
    """Counts as floats (NaN = missing). Non-numeric, NaN/inf and negative values are errors."""
    text = raw.astype(str).str.strip()
    missing = ((text == "") | raw.isna()).to_numpy()  # NaN here only from non-text input (None)
    vals = pd.to_numeric(text.where(~missing, None), errors="coerce").to_numpy(dtype=float)
    bad = np.flatnonzero(~missing & ~np.isfinite(vals))
    if bad.size:
        i = int(bad[0])
        raise InputError(f"{where(i)}: count {text.iloc[i]!r} is not a finite number (expected a count >= 0)")
    neg = np.flatnonzero(vals < 0)
    if neg.size:
        i = int(neg[0])
        raise InputError(f"{where(i)}: count {text.iloc[i]} is negative (expected a count >= 0)")
    if required is not None:
        lack = np.flatnonzero(required & missing)
        if lack.size:
            raise InputError(f"{where(int(lack[0]))}: leaf has no count (every leaf needs a count)")
    return vals


def _finish(tree: Tree, counts_in: np.ndarray, where, name: str) -> TreeData:
    """Check given internal counts against their leaves and return the TreeData."""
    counts = counts_in[tree.order]  # DOH order
    x = counts[tree.n1 :]
    leaves_missing = np.flatnonzero(np.isnan(x))
    if leaves_missing.size:
        raise InputError(f"{where(int(tree.order[tree.n1 + leaves_missing[0]]))}: leaf has no count")
    v = build_tree(tree, x)
    given = counts[: tree.n1]
    has = ~np.isnan(given)
    off = np.flatnonzero(has & ~np.isclose(given, v[: tree.n1], rtol=1e-9, atol=1e-9))
    if off.size:
        i = int(off[0])
        raise InputError(
            f"{where(int(tree.order[i]))}: count {given[i]:g} disagrees with the sum of its leaves "
            f"({v[i]:g}); leave internal counts empty or make them consistent"
        )
    return TreeData(tree=tree, x=x, name=name)


def node_parent_structure(df: pd.DataFrame, max_nodes: int = MAX_NODES):
    """Validate the ``node`` and ``parent`` columns and build the Tree; returns (tree, where)."""
    _check_size(len(df), max_nodes)
    ids = df["node"].astype(str).str.strip().to_numpy(dtype=object)
    where_row = _where(df)
    empty = np.flatnonzero(ids == "")
    if empty.size:
        raise InputError(f"{where_row(int(empty[0]))}: empty node id")
    dup = pd.Series(ids).duplicated(keep="first").to_numpy()
    if dup.any():
        i = int(np.flatnonzero(dup)[0])
        first = int(np.flatnonzero(ids == ids[i])[0])
        raise InputError(f"{where_row(i)}: duplicate node id {ids[i]!r} (first on {where_row(first)})")
    parents = df["parent"].astype(str).str.strip().to_numpy(dtype=object)
    pidx = pd.Index(ids).get_indexer(parents)
    is_root = parents == ""
    unknown = np.flatnonzero((pidx < 0) & ~is_root)
    where = _where(df, ids)
    if unknown.size:
        i = int(unknown[0])
        raise InputError(f"{where(i)}: parent {parents[i]!r} is not a node of the table")
    pidx = np.where(is_root, -1, pidx)
    return tree_from_parents(pidx, labels=ids, where=where), where


def tree_from_node_parent(df: pd.DataFrame, name: str = "tree", max_nodes: int = MAX_NODES) -> TreeData:
    """``node,parent[,count]`` table → TreeData (see module docstring)."""
    if "count" not in df.columns:
        raise InputError(f"{name}: no 'count' column (expected node,parent,count with counts on leaves)")
    tree, where = node_parent_structure(df, max_nodes)
    leaf_in = np.zeros(len(df), bool)
    leaf_in[tree.order[tree.n1 :]] = True
    counts = _parse_counts(df["count"], where, required=leaf_in)
    return _finish(tree, counts, where, name)


def noisy_tree_from_table(
    df: pd.DataFrame, name: str = "tree", max_nodes: int = MAX_NODES
) -> tuple[Tree, np.ndarray, np.ndarray | None]:
    """``node,parent,value[,variance]`` (a noisy tree released elsewhere) → (tree, value, variance)
    in DOH order. Values may be negative; every node needs one. Variances must be positive."""
    missing = [c for c in ("node", "parent", "value") if c not in df.columns]
    if missing:
        raise InputError(f"{name}: missing column(s) {', '.join(missing)} (expected node,parent,value[,variance])")
    tree, where = node_parent_structure(df, max_nodes)
    value = _parse_numbers(df["value"], where, "value", positive=False)
    var = None
    if "variance" in df.columns:
        var = _parse_numbers(df["variance"], where, "variance", positive=True)[tree.order]
    return tree, value[tree.order], var


def _parse_numbers(raw: pd.Series, where, field: str, positive: bool) -> np.ndarray:
    text = raw.astype(str).str.strip()
    vals = pd.to_numeric(text.where(text != "", None), errors="coerce").to_numpy(dtype=float)
    bad = np.flatnonzero(~np.isfinite(vals))
    if bad.size:
        i = int(bad[0])
        what = "empty" if text.iloc[i] == "" else f"{text.iloc[i]!r}, not a finite number"
        raise InputError(f"{where(i)}: {field} is {what} (every node needs a {field})")
    if positive:
        bad = np.flatnonzero(vals <= 0)
        if bad.size:
            i = int(bad[0])
            raise InputError(f"{where(i)}: {field} {text.iloc[i]} must be > 0")
    return vals


def tree_from_parent_array(
    parent, counts=None, name: str = "tree", max_nodes: int = MAX_NODES, where=None
) -> TreeData:
    """Parent array (0-based indices, -1/empty for the root) + optional counts → TreeData.

    Without counts every leaf gets count 0 (a structure-only tree).
    """
    raw = pd.Series(parent).astype(str).str.strip()
    _check_size(len(raw), max_nodes)
    where = where or (lambda i: f"position {i}")
    vals = pd.to_numeric(raw.where(raw != "", "-1"), errors="coerce").to_numpy(dtype=float)
    bad = np.flatnonzero(~np.isfinite(vals) | (vals != np.round(vals)))
    if bad.size:
        i = int(bad[0])
        raise InputError(f"{where(i)}: parent {raw.iloc[i]!r} is not a row index (expected an integer, -1 for the root)")
    tree = tree_from_parents(vals.astype(np.int64), where=where)
    if counts is None:
        c = np.zeros(tree.n)
    else:
        leaf_in = np.zeros(tree.n, bool)
        leaf_in[tree.order[tree.n1 :]] = True
        c = _parse_counts(pd.Series(counts), where, required=leaf_in)
    return _finish(tree, c, where, name)


def tree_from_levels(
    df: pd.DataFrame,
    level_cols: list[str] | None = None,
    count_col: str | None = None,
    name: str = "tree",
    max_nodes: int = MAX_NODES,
) -> TreeData:
    """One column per level (top to bottom) + a count column → TreeData under a root ``(all)``."""
    cols = list(df.columns)
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
    where_row = _where(df)
    cells = df[level_cols].astype(str).apply(lambda s: s.str.strip())
    empty = np.argwhere((cells == "").to_numpy())
    if empty.size:
        r, c = empty[0]
        raise InputError(f"{where_row(int(r))}: empty value in level column {level_cols[int(c)]!r}")
    # node ids are paths; level l's path = path(l-1) + sep + value
    paths = [cells[level_cols[0]]]
    for col in level_cols[1:]:
        paths.append(paths[-1] + PATH_SEP + cells[col])
    leaf_paths = paths[-1].to_numpy(dtype=object)
    dup = pd.Series(leaf_paths).duplicated().to_numpy()
    if dup.any():
        i = int(np.flatnonzero(dup)[0])
        first = int(np.flatnonzero(leaf_paths == leaf_paths[i])[0])
        raise InputError(f"{where_row(i)}: duplicate row for {leaf_paths[i]!r} (first on {where_row(first)})")
    ids: list[np.ndarray] = [np.array([ROOT_ID], dtype=object)]
    parent_of_level: list[np.ndarray] = [np.array([-1])]
    offset, prev_codes = 1, np.zeros(len(df), np.int64)
    for lev, path in enumerate(paths):
        codes, uniques = pd.factorize(path, sort=False)
        first_row = pd.Series(np.arange(len(df))).groupby(codes).first().to_numpy()
        parents = (0 if lev == 0 else offset - prev_n) + prev_codes[first_row]
        ids.append(np.asarray(uniques, dtype=object))
        parent_of_level.append(parents if lev else np.zeros(len(uniques), np.int64))
        prev_codes, prev_n = codes, len(uniques)
        offset += len(uniques)
    node_ids = np.concatenate(ids)
    parent = np.concatenate(parent_of_level).astype(np.int64)
    _check_size(node_ids.size, max_nodes)
    tree = tree_from_parents(parent, labels=node_ids)
    counts_raw = _parse_counts(df[count_col], lambda i: f"{where_row(i)} column {count_col!r}")
    lack = np.flatnonzero(np.isnan(counts_raw))
    if lack.size:
        raise InputError(f"{where_row(int(lack[0]))}: empty count in column {count_col!r}")
    counts = np.full(node_ids.size, np.nan)
    counts[offset - len(df) :] = counts_raw  # leaves are the last level, one per row, in row order
    return _finish(tree, counts, lambda i: f"node {node_ids[i]!r}", name)


def load_source(spec: str | Path) -> TreeData:
    """A tree file path, or bundled data named ``sample:NAME`` (e.g. ``sample:county``)."""
    from dpviz.core.registry import load_source as _load_source

    return _load_source("tree", spec, load_tree_file)


def load_county_sample() -> TreeData:
    """``sample:county``: the bundled US Region > Division > State > County population tree (2019)."""
    from dpviz.data.samples import ASSETS, COUNTY_POPULATION_CSV

    return load_tree_file(ASSETS / COUNTY_POPULATION_CSV, name="sample:county")
