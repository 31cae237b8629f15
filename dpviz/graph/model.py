"""The graph data model: a simple undirected graph on the vertex set {0, ..., n-1}.

Every graph method takes an int array ``edges`` of shape (m, 2) and the number of vertices ``n_nodes``
and first calls :func:`canonical_edges`, which returns the *canonical* form used everywhere in
``dpviz.graph``: each undirected edge {u, v} once, as the row (u, v) with u < v (its cell in the upper
triangle of the adjacency matrix, the unit of privacy), rows sorted lexicographically, self-loops and
repeated edges dropped and counted. It never allocates anything of size n²: duplicates are found by
sorting the m codes u·n + v, so it costs O(m log m) time and O(m) memory.

:class:`Graph` is what the readers return (:func:`dpviz.graph.io.read_edges`, the bundled samples of
:mod:`dpviz.graph.samples`): the canonical edges plus the original vertex labels (to map ids back on
output), notices about what was changed while reading, and a name.

:class:`GraphOutput` is what every method of :data:`dpviz.graph.strategy.METHODS` returns on the vertex ids
0..n-1: the released edges, the sub-budgets it spent, its partition (:class:`dpviz.graph.regions.Partition`)
and vertex order; :class:`dpviz.graph.release.GraphRelease` wraps it with the noise and the declared vertex
set.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from dpviz.errors import InputError

if TYPE_CHECKING:
    from dpviz.graph.regions import Partition

__all__ = ["CanonicalEdges", "Graph", "GraphOutput", "canonical_edges", "check_n_nodes", "dropped_notices", "sorted_unique",
           "COUNT_SENSITIVITY", "DEGREE_SENSITIVITY"]

COUNT_SENSITIVITY = 1.0
"""L1 sensitivity of edge counts over disjoint regions of the upper triangle (one edge is one cell there):
the scale of every Laplace count in ``dpviz.graph`` is ``COUNT_SENSITIVITY / ε``."""
DEGREE_SENSITIVITY = 2.0
"""L1 sensitivity of the degree sequence (one edge {u, v} moves d_u and d_v by 1 each): the noisy degrees of
``degree`` and of drf-dp's relabelling have Laplace scale ``DEGREE_SENSITIVITY / ε``."""

_CODE_LIMIT = 3_037_000_499
"""Largest n for which the code u·n + v of every cell fits in int64 (n² < 2⁶³)."""


@dataclass(frozen=True)
class CanonicalEdges:
    """``edges``: int64 (m, 2), u < v, unique, sorted lexicographically (by u, then v).

    ``self_loops``: input rows (u, u) dropped; ``duplicates``: input rows dropped because the same
    undirected edge came earlier, in either direction ((a, b) twice, or (a, b) and (b, a)).
    """

    edges: np.ndarray
    self_loops: int
    duplicates: int

    @property
    def n_edges(self) -> int:
        return int(self.edges.shape[0])


def check_n_nodes(n_nodes: object) -> int:
    """``n_nodes`` as an int >= 1, or InputError."""
    if isinstance(n_nodes, (bool, np.bool_)) or not isinstance(n_nodes, (int, np.integer)):
        if isinstance(n_nodes, (float, np.floating)) and float(n_nodes).is_integer():
            n_nodes = int(n_nodes)
        else:
            raise InputError(f"n_nodes: expected a whole number of vertices >= 1, got {n_nodes!r}")
    if int(n_nodes) < 1:
        raise InputError(f"n_nodes: expected a whole number of vertices >= 1, got {int(n_nodes)}")
    return int(n_nodes)


def _as_int_pairs(edges: object) -> np.ndarray:
    """``edges`` as an int64 array (m, 2); InputError for a wrong shape or non-integer entries."""
    try:
        arr = np.asarray(edges)
    except (TypeError, ValueError) as exc:
        raise InputError(f"edges: expected an integer array of shape (m, 2), got {type(edges).__name__} "
                         f"({exc})") from None
    if arr.size == 0:
        return np.zeros((0, 2), dtype=np.int64)
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise InputError(f"edges: expected an integer array of shape (m, 2) (one row u, v per edge), "
                         f"got shape {arr.shape}")
    if arr.dtype.kind in "iu":
        if arr.dtype == np.uint64 and int(arr.max()) > np.iinfo(np.int64).max:
            raise InputError(f"edges: vertex id {int(arr.max())} is too large")
        return arr.astype(np.int64, copy=False)
    if arr.dtype.kind == "f":
        bad = ~np.isfinite(arr) | (arr != np.round(arr))
        if bad.any():
            row = int(np.flatnonzero(bad.any(axis=1))[0])
            raise InputError(f"edges: row {row} is {arr[row].tolist()}; vertex ids must be whole numbers "
                             "(map other labels to 0..n-1 first, e.g. with dpviz.graph.io.read_edges)")
        if np.abs(arr).max() >= 2.0**62:
            raise InputError("edges: a vertex id is too large")
        return arr.astype(np.int64)
    if arr.dtype.kind == "b":
        raise InputError("edges: expected integer vertex ids, got booleans")
    raise InputError(f"edges: expected integer vertex ids, got values of type {arr.dtype} "
                     "(map other labels to 0..n-1 first, e.g. with dpviz.graph.io.read_edges)")


def sorted_unique(values: np.ndarray) -> np.ndarray:
    """Sorted distinct values of a 1-d array, by sorting (``np.unique`` without ``return_inverse`` takes a
    hashing path in NumPy 2.x that is tens of times slower on int64 codes)."""
    s = np.sort(values)
    if s.size < 2:
        return s
    keep = np.empty(s.size, dtype=bool)
    keep[0] = True
    np.not_equal(s[1:], s[:-1], out=keep[1:])
    return s[keep]


def canonical_edges(edges: object, n_nodes: int) -> CanonicalEdges:
    """The canonical simple undirected edge list of ``edges`` on the vertices 0..n_nodes-1.

    Each row (a, b) becomes (min, max); rows with a == b (self-loops) are dropped; of rows naming the
    same undirected edge only one is kept. Vectorised: one sort of the int64 codes u·n + v (:func:`sorted_unique`),
    which also sorts the edges lexicographically. InputError for a wrong shape, non-integer ids, or an
    id outside 0..n_nodes-1 (naming the first bad row, 0-based).
    """
    n = check_n_nodes(n_nodes)
    arr = _as_int_pairs(edges)
    if arr.shape[0]:
        bad = (arr < 0) | (arr >= n)
        if bad.any():
            row = int(np.flatnonzero(bad.any(axis=1))[0])
            raise InputError(f"edges: row {row} is {arr[row].tolist()}; vertex ids must be in 0..{n - 1} "
                             f"(n_nodes = {n})")
    u = np.minimum(arr[:, 0], arr[:, 1])
    v = np.maximum(arr[:, 0], arr[:, 1])
    keep = u != v
    loops = int(arr.shape[0] - np.count_nonzero(keep))
    u, v = u[keep], v[keep]
    if n <= _CODE_LIMIT:
        codes = sorted_unique(u * np.int64(n) + v)
        out = np.empty((codes.size, 2), dtype=np.int64)
        np.floor_divide(codes, n, out=out[:, 0])
        np.subtract(codes, out[:, 0] * np.int64(n), out=out[:, 1])
    else:  # pragma: no cover - more than 3·10⁹ vertices: sort the pairs instead of their codes
        out = np.unique(np.column_stack([u, v]), axis=0).astype(np.int64, copy=False)
    return CanonicalEdges(edges=np.ascontiguousarray(out), self_loops=loops, duplicates=int(u.size - out.shape[0]))


@dataclass(frozen=True)
class Graph:
    """A simple undirected graph on the vertices 0..n_nodes-1.

    ``edges``: canonical (see :func:`canonical_edges`; build with :meth:`from_edges` to canonicalise).
    ``labels``: the original id of each vertex (``labels[i]`` is written for vertex i on output), or
    None when the ids are 0..n-1 themselves. Vertices that appear in no edge (isolated) count in
    ``n_nodes``. ``notices``: what reading changed (self-loops and duplicates dropped, a directed input
    symmetrised, a weight column ignored ...). ``name``: a short name for titles and output files.
    """

    n_nodes: int
    edges: np.ndarray
    labels: tuple[str, ...] | None = None
    notices: tuple[str, ...] = ()
    name: str = "graph"

    def __post_init__(self) -> None:
        n = check_n_nodes(self.n_nodes)
        object.__setattr__(self, "n_nodes", n)
        e = self.edges
        if not isinstance(e, np.ndarray) or e.dtype != np.int64 or e.ndim != 2 or e.shape[1] != 2:
            raise InputError("Graph.edges: expected an int64 array of shape (m, 2); build the graph with "
                             "Graph.from_edges(edges, n_nodes)")
        if e.shape[0] and (int(e.min()) < 0 or int(e.max()) >= n or bool((e[:, 0] >= e[:, 1]).any())):
            raise InputError("Graph.edges: expected canonical edges (0 <= u < v < n_nodes); build the graph "
                             "with Graph.from_edges(edges, n_nodes)")
        if self.labels is not None:
            labels = tuple(self.labels)
            if len(labels) != n:
                raise InputError(f"Graph.labels: expected {n} labels (one per vertex), got {len(labels)}")
            object.__setattr__(self, "labels", labels)
        object.__setattr__(self, "notices", tuple(self.notices))

    @classmethod
    def from_edges(cls, edges: object, n_nodes: int, *, labels: tuple[str, ...] | None = None,
                   notices: tuple[str, ...] = (), name: str = "graph") -> Graph:
        """Canonicalise ``edges`` and add a notice for dropped self-loops and duplicates."""
        c = canonical_edges(edges, n_nodes)
        return cls(n_nodes=n_nodes, edges=c.edges, labels=labels,
                   notices=tuple(notices) + dropped_notices(c.self_loops, c.duplicates), name=name)

    @property
    def n_edges(self) -> int:
        return int(self.edges.shape[0])

    def label_array(self) -> np.ndarray:
        """The label of every vertex as an array (``np.arange(n)`` when ``labels`` is None)."""
        if self.labels is None:
            return np.arange(self.n_nodes, dtype=np.int64)
        return np.asarray(self.labels, dtype=object)

    def degrees(self) -> np.ndarray:
        """Degree of every vertex (int64, length n_nodes)."""
        return np.bincount(self.edges.ravel(), minlength=self.n_nodes).astype(np.int64, copy=False)


def dropped_notices(self_loops: int, duplicates: int) -> tuple[str, ...]:
    """The notices for rows dropped by :func:`canonical_edges` (none when nothing was dropped)."""
    out = []
    if self_loops:
        out.append(f"{self_loops:,} self-loop{'s' if self_loops != 1 else ''} (u, u) dropped: the graph is simple")
    if duplicates:
        out.append(f"{duplicates:,} duplicate edge{'s' if duplicates != 1 else ''} dropped (the same undirected "
                   "edge listed again, in either direction)")
    return tuple(out)


@dataclass(frozen=True)
class GraphOutput:
    """What one graph method returns, on the vertex ids 0..n-1.

    ``edges``: int64 (k, 2), u < v, no duplicates, no self-loops, in the caller's vertex ids 0..n-1.
    ``budget``: sub-budget name -> ε spent, in spending order; the values sum to the requested ε (to 1e-9).
    ``private``: False only for the published DRF; ``label`` then says it is not edge-DP.
    ``partition``: the regions and their released counts (None for methods without one).
    ``order``: the vertex order used for the matrix layout (``order[i]`` = vertex at row i), if any.
    ``info``: the method's public facts (heights, per-depth budgets, noise wording).
    """

    edges: np.ndarray
    budget: Mapping[str, float]
    method: str
    n_nodes: int
    private: bool = True
    label: str = ""
    partition: Partition | None = None
    order: np.ndarray | None = None
    info: Mapping[str, object] = field(default_factory=dict)
