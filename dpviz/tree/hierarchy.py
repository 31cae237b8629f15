"""Declared tree hierarchies: the public node list a release publishes, given apart from the counts.

A tree release publishes its hierarchy (node ids, parents, hence n, m, h). If that hierarchy were read
from the counts file, a file listing only the nodes with a non-zero count would leak which nodes are
empty. So a release takes the hierarchy from a **declaration** (``tree release --hierarchy FILE``, or
the declaration a bundled sample ships) and joins the counts onto it by node id:

* every declared node is in the release, whatever the counts file holds; a declared leaf missing from
  the counts counts 0;
* a count row whose node is not declared is **dropped**, and how many were is never published (not in
  the output, the metadata, stdout or a page);
* the counts file's own structure (its ``parent`` column, its levels above the leaves) is not used
  for the released hierarchy; counts given on declared internal nodes must equal the sum of their
  declared leaves (as in every tree file).

A declaration is a CSV or JSON table in one of the tree reader's structure formats, with no count
column: ``node,parent`` (the root's parent empty; what ``tree describe-structure`` writes), one column
per level (node ids are then the paths ``"South / Texas"`` under ``"(all)"``, as for a level table of
counts), or a ``parent`` array (ids are row positions). Errors name the line.

Library API (the Tree page uses it for uploads): :func:`read_hierarchy` (path or bytes →
:class:`Hierarchy`), :func:`read_counts` (a counts file → :class:`NodeCounts`, structure ignored),
:func:`join_counts` (hierarchy + counts or a loaded :class:`~dpviz.tree.model.TreeData` → the TreeData to
release), :func:`sample_hierarchy` (a bundled sample's declaration), :func:`describe_structure`
(``node,parent`` of a loaded tree, for a declaration template).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dpviz.core import arrow
from dpviz.core.structure import StructureSource
from dpviz.errors import InputError
from dpviz.tree.formats import (
    COUNT_NAMES,
    PATH_SEP,
    _canonical,
    _finish,
    _parse_counts,
    node_parent_structure,
    tree_format,
    tree_from_levels,
    tree_from_parent_array,
)
from dpviz.tree.io import node_columns
from dpviz.tree.reading import MAX_BYTES, MAX_NODES, Table, read_table
from dpviz.tree.model import Tree, TreeData

__all__ = ["Hierarchy", "NodeCounts", "read_hierarchy", "read_counts", "counts_of", "join_counts",
           "sample_hierarchy", "describe_structure", "HIERARCHY_HELP",
           "SAMPLE_DECLARATIONS"]

SAMPLE_DECLARATIONS = {"county": "us_county_hierarchy_2019.csv"}
"""Bundled samples' public declarations (files in ``dpviz/assets/``)."""
HIERARCHY_HELP = ("the public tree hierarchy, declared: a node,parent CSV/JSON (the root's parent empty; write a "
                  "template with `tree describe-structure`), or one column per level, or a parent array; no count "
                  "column. The released nodes are exactly these: counts are joined on by node id, a declared node "
                  "missing from the counts counts 0, count rows of undeclared nodes are dropped (their number is "
                  "never published), and the input's own parent column is ignored")


@dataclass(frozen=True, eq=False)
class Hierarchy:
    """A declared hierarchy: the :class:`~dpviz.tree.model.Tree` and where it was declared (``origin``)."""

    tree: Tree
    origin: str

    @cached_property
    def ids(self) -> pa.Array:
        """The node ids in DOH order as Arrow strings (row positions for a parent array)."""
        return _ids(self.tree, np.arange(self.tree.n))

    @property
    def source(self) -> StructureSource:
        return StructureSource("declared", self.origin)


@dataclass(frozen=True, eq=False)
class NodeCounts:
    """Counts by node id, as a counts file gives them (its structure ignored): ``counts`` float, NaN where
    a row's count is empty; ``where(row)`` names a row in messages."""

    name: str
    ids: pa.Array
    counts: np.ndarray
    where: Callable[[int], str]


def _ids(tree: Tree, doh: np.ndarray) -> pa.Array:
    """Ids of DOH nodes ``doh`` as Arrow strings (input positions for an unlabelled tree)."""
    labels = tree.label_array
    if labels is None:
        return pc.cast(arrow.from_numpy(np.ascontiguousarray(tree.order[doh], dtype=np.int64)), pa.string())
    if isinstance(labels, pa.ChunkedArray):
        labels = labels.combine_chunks()
    labels = labels.cast(pa.string())
    if doh.size == tree.n:
        return labels
    return labels.slice(int(doh[0]), doh.size) if doh.size and np.all(np.diff(doh) == 1) else labels.take(doh)


def _prefixed(exc: InputError, what: str, label: str) -> InputError:
    """``exc`` naming ``what`` and the file once: ``--hierarchy h.csv: line 3: ...``."""
    msg = str(exc)
    return InputError(f"{what} {msg}" if msg.startswith(label) else f"{what} {label}: {msg}")


# ---- the declaration -------------------------------------------------------------------------------------
def _hierarchy_format(cols: list[str], label: str) -> str:
    """``node_parent``, ``parent_array`` or ``levels``, from the header; a count column is refused (a
    declaration lists nodes, not counts: a counts file passed as the declaration would publish its node list)."""
    counts = [c for c in cols if c in COUNT_NAMES]
    if counts:
        raise InputError(f"{label}: has a count column {counts[0]!r}; a declared hierarchy lists nodes only "
                         "(node,parent): write one with `python -m dpviz tree describe-structure DATA --output "
                         "FILE`, review it, and pass the counts as the input")
    if "parent" in cols:
        return "node_parent" if "node" in cols else "parent_array"
    if "node" in cols:
        raise InputError(f"{label}: has a node column but no parent column; expected node,parent (the root's "
                         "parent empty), or one column per level")
    return "levels"


def read_hierarchy(source: str | Path | bytes, name: str | None = None, *, max_nodes: int = MAX_NODES,
                   max_bytes: int = MAX_BYTES, what: str = "hierarchy") -> Hierarchy:
    """Read a declared hierarchy (path or the bytes of an upload) under the tree reader's caps; errors
    are InputError naming ``what``, the file and the line."""
    label = name or (Path(source).name if isinstance(source, (str, Path)) else "upload")
    try:
        table = read_table(source, label, max_bytes=max_bytes, max_rows=max_nodes, check_header=_hierarchy_format,
                           integer_columns=lambda cols: ["node", "parent"] if {"node", "parent"} <= set(cols) else [])
        kind = _hierarchy_format(list(table.columns), label)
        if kind == "node_parent":
            tree, _ = node_parent_structure(table, max_nodes, label)
        elif kind == "parent_array":
            tree = tree_from_parent_array(table.col("parent"), None, label, max_nodes, where=table.where()).tree
        else:
            levels = list(table.columns)
            zeros = pc.cast(arrow.from_numpy(np.zeros(table.n, np.int64)), pa.string())
            with_counts = Table(table.name, {**table.columns, "\0count": zeros}, table.n, table.json, table.raw)
            tree = tree_from_levels(with_counts, levels, "\0count", label, max_nodes).tree
    except InputError as exc:
        raise _prefixed(exc, what, label) from None
    return Hierarchy(tree, label)


@lru_cache(maxsize=4)
def sample_hierarchy(name: str) -> Hierarchy | None:
    """The declaration a bundled tree sample ships (``"county"``), or None."""
    file = SAMPLE_DECLARATIONS.get(name.removeprefix("sample:"))
    if file is None:
        return None
    from dpviz.core.assets import asset

    hier = read_hierarchy(asset(file), file)
    return Hierarchy(hier.tree, f"{file}, bundled with sample:{name.removeprefix('sample:')}")


# ---- the counts ------------------------------------------------------------------------------------------
def _counts_format(cols: list[str], label: str, count_column: str | None) -> tuple[list[str], str]:
    """(id columns, count column): ``node`` (a node,count or node,parent,count table), or the level
    columns (a leaf's id is their path)."""
    if count_column is not None and count_column.strip().lower() not in cols:
        raise InputError(f"{label}: count column {count_column!r} not found; columns are {cols[:10]}")
    if "node" in cols:
        named = [c for c in cols if c in COUNT_NAMES]
        ccol = count_column.strip().lower() if count_column is not None else (named[0] if named else None)
        if ccol is None:
            raise InputError(f"{label}: no count column (expected node,count or node,parent,count)")
        return ["node"], ccol
    if "parent" in cols:
        raise InputError(f"{label}: a parent array has no node ids to join onto the declared hierarchy; give the "
                         "counts as node,count (or node,parent,count, the parent column ignored)")
    _, ccol = tree_format(cols, label, count_column)
    return [c for c in cols if c != ccol], ccol


def read_counts(source: str | Path | bytes, name: str | None = None, *, max_nodes: int = MAX_NODES,
                max_bytes: int = MAX_BYTES, count_column: str | None = None) -> NodeCounts:
    """Counts by node id from a tree file (``node,count``, ``node,parent,count`` or a level table), its
    structure ignored: the ids and the count text are checked, the tree is not built."""
    label = name or (Path(source).name if isinstance(source, (str, Path)) else "upload")

    def typed(cols: list[str]) -> list[str]:  # node ids and counts read as int64 when they are integers
        id_cols, ccol = _counts_format(cols, label, count_column)
        return [*id_cols, ccol] if id_cols == ["node"] else []

    table = read_table(source, name, max_bytes=max_bytes, max_rows=max_nodes, integer_columns=typed,
                       check_header=lambda cols, label: _counts_format(cols, label, count_column))
    id_cols, ccol = _counts_format(list(table.columns), table.name, count_column)
    ids = table.col(id_cols[0])
    for col in id_cols[1:]:
        ids = pc.binary_join_element_wise(ids, table.col(col), PATH_SEP)
    if not pa.types.is_integer(ids.type):
        ids = ids.cast(pa.string())
    located = table.where(ids)

    def where(i: int) -> str:
        return f"{table.name}: {located(i)}"

    counts = _parse_counts(table.col(ccol), where)
    return NodeCounts(table.name, ids, counts, where)


def counts_of(data: TreeData) -> NodeCounts:
    """The leaf counts of a loaded tree by leaf id (its inner nodes and their sums are not used)."""
    t = data.tree
    ids = _ids(t, np.arange(t.n1, t.n))

    def where(i: int) -> str:
        return f"{data.name}: leaf {ids[i].as_py()!r}"

    return NodeCounts(data.name, ids, np.asarray(data.x, dtype=float), where)


# ---- the join --------------------------------------------------------------------------------------------
def join_counts(hierarchy: Hierarchy, counts: NodeCounts | TreeData) -> TreeData:
    """The tree to release: exactly the declared nodes, with the counts joined on by node id (vectorised:
    one Arrow hash lookup). A declared leaf without a count row counts 0; rows of undeclared nodes are
    dropped without trace; a duplicate declared id, an empty count on a declared leaf, or an inner count
    that is not the sum of its declared leaves is an InputError naming the counts file's line."""
    if isinstance(counts, TreeData):
        counts = counts_of(counts)
    if not isinstance(hierarchy, Hierarchy):
        raise InputError(f"hierarchy: expected a dpviz.tree.hierarchy.Hierarchy, got {type(hierarchy).__name__}")
    tree = hierarchy.tree
    n = tree.n
    hit = _lookup(hierarchy, counts.ids)
    rows = np.flatnonzero(hit >= 0)  # count rows of declared nodes; the others are dropped here
    pos = hit[rows]
    _refuse_duplicates(pos, rows, counts)
    row_of = np.full(n, -1, np.int64)  # counts row of each declared node (input order of the hierarchy)
    row_of[pos] = rows
    given = np.full(n, np.nan)
    given[tree.order[tree.n1:]] = 0.0  # declared leaves not in the counts: 0
    given[pos] = counts.counts[rows]
    labels = hierarchy.ids

    def where(i: int) -> str:  # i: the hierarchy's input position
        r = int(row_of[i])
        if r >= 0:
            return counts.where(r)
        inv = np.flatnonzero(tree.order == i)
        return f"{hierarchy.origin}: node {labels[int(inv[0])].as_py()!r}"

    data = _finish(tree, given, where, counts.name)
    return dataclasses.replace(data, structure=hierarchy.source)


def _lookup(hierarchy: Hierarchy, ids: pa.Array) -> np.ndarray:
    """The hierarchy's input position of each id (int64), -1 where the id is not declared. Ids read as
    integers (canonical decimal text, :func:`dpviz.tree.reading.read_table`) are matched as integers: row
    positions index directly, other integer ids by a sorted search; any other ids by one Arrow hash lookup."""
    tree = hierarchy.tree
    if pa.types.is_integer(ids.type):
        ok = arrow.valid(ids)
        v = np.asarray(arrow.values(ids.cast(pa.int64())), dtype=np.int64)
        if tree.label_source is None:  # ids 0..n-1 in row order: an id is its own position
            return np.where(ok & (v >= 0) & (v < tree.n), v, -1)
        declared = _integer_labels(hierarchy.ids)
        if declared is not None:
            by_id = np.argsort(declared, kind="stable")
            at = np.minimum(np.searchsorted(declared[by_id], v), declared.size - 1)
            doh = by_id[at]
            return np.where(ok & (declared[doh] == v), tree.order[doh].astype(np.int64), -1)
        ids = ids.cast(pa.string())
    hit = pc.index_in(ids, value_set=hierarchy.ids)
    doh = np.asarray(arrow.values(hit), dtype=np.int64)
    return np.where(arrow.valid(hit), tree.order[np.where(arrow.valid(hit), doh, 0)].astype(np.int64), -1)


def _integer_labels(labels: pa.Array) -> np.ndarray | None:
    """Node ids as int64 when every one is an integer in canonical decimal form (``7``, not ``07``), so
    that equal integers are equal ids; None otherwise."""
    try:
        ints = labels.cast(pa.int64())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    return np.asarray(arrow.values(ints), dtype=np.int64) if _canonical(labels) else None


def _refuse_duplicates(pos: np.ndarray, rows: np.ndarray, counts: NodeCounts) -> None:
    if pos.size < 2:
        return
    by_node = np.argsort(pos, kind="stable")  # rows of one node stay in file order
    same = np.flatnonzero(pos[by_node][1:] == pos[by_node][:-1])
    if not same.size:
        return
    second = by_node[same + 1]
    k = int(np.argmin(rows[second]))
    r, first = int(rows[second[k]]), int(rows[by_node[same[k]]])
    raise InputError(f"{counts.where(r)}: duplicate node id {counts.ids[r].as_py()!r} (first on "
                     f"{counts.where(first).removeprefix(counts.name + ': ')})")


def describe_structure(data: TreeData) -> pa.Table:
    """``node,parent`` of a loaded tree (input order): a declaration template, read from the data."""
    return node_columns(data.tree)
