"""The result type every graph method returns, and the one ``release`` entry point.

Unit of privacy: **one edge** (edge-level DP). Neighbouring graphs on the same, public vertex set
{0..n-1} differ in exactly one undirected edge {u, v}; in the symmetric adjacency matrix that is two
cells, (u, v) and (v, u), so counts are taken on the upper triangle (u < v) only, where it is one cell.

``release(edges, n_nodes, epsilon, method="drf-dp", rng=None)`` dispatches by name to the functions in
:data:`METHODS` (``"module:function"`` targets, imported lazily), each with the signature
``f(edges, n_nodes, epsilon, *, rng=None, **options) -> GraphRelease``.

``release`` works on vertex ids 0..n-1. A release of a graph read from a file goes through
:func:`release_graph`, which first puts the graph on its **declared** vertex set
(:class:`dpviz.graph.structure.VertexSet`: edges touching an undeclared vertex dropped, the count never
published) and keeps the labels for output; :func:`release_meta` writes the ``.meta.json`` every release
(CLI and page) publishes, with the declaration's ``structure`` entry and the sensitivity each method's
noise is calibrated to (:data:`L1_SENSITIVITIES`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from dpviz.core.accounting import positive
from dpviz.core.registry import resolve
from dpviz.errors import InputError
from dpviz.graph.model import COUNT_SENSITIVITY, DEGREE_SENSITIVITY

if TYPE_CHECKING:
    import pandas as pd

    from dpviz.graph.model import Graph
    from dpviz.graph.structure import VertexSet

__all__ = ["Partition", "GraphRelease", "METHODS", "DEFAULT_METHOD", "PRIVATE_METHODS", "NOT_PRIVATE_LABEL",
           "release", "method_rng", "metrics_rng", "partition_json", "L1_SENSITIVITIES", "sensitivity",
           "DeclaredRelease", "release_graph", "release_meta"]

NOT_PRIVATE_LABEL = "not edge-DP as published"
DEFAULT_METHOD = "drf-dp"

METHODS: dict[str, str] = {
    "drf-dp": "dpviz.graph.drf:drf_dp",
    "drf": "dpviz.graph.drf:drf_published",
    "kdh": "dpviz.graph.baselines:kd_hybrid",
    "quadtree": "dpviz.graph.baselines:quadtree",
    "random": "dpviz.graph.baselines:random_uniform",
    "degree": "dpviz.graph.baselines:degree_chung_lu",
}
"""Method name -> ``"module:function"``. ``drf`` is the algorithm as published (not edge-DP)."""

PRIVATE_METHODS: tuple[str, ...] = ("drf-dp", "kdh", "quadtree", "random", "degree")
"""Every method except the published DRF is edge-DP; only these may run in release mode."""

_COUNTS = "edge counts of disjoint regions (upper triangle)"
_DEGREES = "degree sequence"
L1_SENSITIVITIES: dict[str, dict[str, float]] = {
    "drf-dp": {_COUNTS: COUNT_SENSITIVITY, f"{_DEGREES} (relabelling)": DEGREE_SENSITIVITY},
    "drf": {_COUNTS: COUNT_SENSITIVITY},
    "kdh": {_COUNTS: COUNT_SENSITIVITY},
    "quadtree": {_COUNTS: COUNT_SENSITIVITY},
    "random": {"total edge count": COUNT_SENSITIVITY},
    "degree": {_DEGREES: DEGREE_SENSITIVITY},
}
"""Method -> the L1 sensitivity of each query its Laplace noise is calibrated to (scale = Δ₁ / sub-budget ε),
the same module constants the mechanisms use. (Exponential-mechanism steps state their utility's
sensitivity in their own documentation.)"""


def sensitivity(method: str) -> float:
    """The largest L1 sensitivity among ``method``'s Laplace queries (:data:`L1_SENSITIVITIES`): the value a
    release's metadata states."""
    if method not in L1_SENSITIVITIES:
        raise InputError(f"method: unknown graph method {method!r}; expected one of {', '.join(METHODS)}")
    return max(L1_SENSITIVITIES[method].values())


@dataclass(frozen=True)
class Partition:
    """Rectangular regions of the (relabelled) adjacency matrix, as parallel arrays of length k.

    Region i is the half-open rectangle rows [r0[i], r1[i]) x columns [c0[i], c1[i]) of the matrix
    whose rows/columns are the relabelled vertices (``GraphRelease.order``). ``depth`` is the kd-tree
    depth at which the region was created, ``parent`` the index of its parent region in the same arrays
    (-1 for the root), ``leaf`` whether it is a final region, and ``noisy`` its released (noisy,
    post-processed) edge count on the upper triangle. Internal nodes are kept so that a page can step
    through the decomposition depth by depth.
    """

    r0: np.ndarray
    r1: np.ndarray
    c0: np.ndarray
    c1: np.ndarray
    depth: np.ndarray
    parent: np.ndarray
    leaf: np.ndarray
    noisy: np.ndarray

    def __len__(self) -> int:
        return int(self.r0.shape[0])

    def to_json(self) -> dict:
        """A JSON-ready mapping (lists), for ``--partitions P.json`` and the page's download."""
        return {name: getattr(self, name).tolist() for name in
                ("r0", "r1", "c0", "c1", "depth", "parent", "leaf", "noisy")}


@dataclass(frozen=True)
class GraphRelease:
    """A released graph.

    ``edges``: int64 (k, 2), u < v, no duplicates, no self-loops, in the caller's vertex ids 0..n-1.
    ``budget``: sub-budget name -> ε spent; the values sum to the requested ε (to 1e-9).
    ``private``: False only for the published DRF; ``label`` then says :data:`NOT_PRIVATE_LABEL`.
    ``order``: the vertex order used for the matrix layout (``order[i]`` = vertex at row i), if any.
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


def release(edges: np.ndarray, n_nodes: int, epsilon: float, method: str = DEFAULT_METHOD,
            rng: np.random.Generator | None = None, **options) -> GraphRelease:
    """Release a graph with ``method`` at ``epsilon`` (edge-DP for every method but ``"drf"``).

    ``rng=None`` draws from the OS CSPRNG (release mode); a ``numpy.random.Generator`` makes the run
    reproducible (simulation).
    """
    if method not in METHODS:
        raise InputError(f"method: unknown graph method {method!r}; expected one of {', '.join(METHODS)}")
    epsilon = positive("epsilon", epsilon)
    return resolve(METHODS[method])(edges, n_nodes, epsilon, rng=rng, **options)


def method_rng(seed: int, method: str) -> np.random.Generator:
    """Simulation noise stream of one method, from the seed and the method's place in :data:`METHODS`, so a
    method's draw does not depend on which other methods run (the CLI and the page use the same streams)."""
    if method not in METHODS:
        raise InputError(f"method: unknown graph method {method!r}; expected one of {', '.join(METHODS)}")
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(list(METHODS).index(method),)))


def metrics_rng(seed: int) -> np.random.Generator:
    """The cut-query vertex sets of a simulation: the same for every method (a fresh Generator per call)."""
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(1_000,)))


def partition_json(rel: GraphRelease, labels=None) -> dict:
    """The released partition as JSON (``--partitions`` and the page's download): regions, the vertex order
    and, when the input had labels, the order as labels. Released quantities only."""
    if rel.partition is None:
        raise InputError(f"method {rel.method!r} has no partition to write")
    order = None if rel.order is None else [int(x) for x in rel.order]
    out = {"method": rel.method, "n_nodes": int(rel.n_nodes), "mode": "release",
           "note": "regions are half-open rectangles [r0, r1) x [c0, c1) of the adjacency matrix whose row i is "
                   "vertex order[i]; noisy = released (noisy, post-processed) edge count on the upper triangle",
           "order": order, "partition": rel.partition.to_json()}
    if labels is not None and order is not None:
        out["order_labels"] = [labels[i] for i in order]
    return out


# ----------------------------------------------------------------------------------------------- declared releases


@dataclass(frozen=True)
class DeclaredRelease:
    """A release of a graph on its declared vertex set: ``release`` (vertex ids 0..n-1 of ``vertices``),
    ``vertices`` (the declaration: labels, source). Everything published here depends on the
    declaration and the mechanism's output only."""

    release: GraphRelease
    vertices: VertexSet

    @property
    def structure(self) -> dict[str, Any]:
        """The ``structure`` entry of every output (``.meta.json``, report, partitions)."""
        return self.vertices.source.as_dict()

    def edges_frame(self) -> pd.DataFrame:
        """The released edge list ``u, v`` in the declared vertex labels."""
        from dpviz.graph.io import edges_frame

        return edges_frame(self.release.edges, self.vertices.labels)

    def partition_json(self) -> dict:
        """:func:`partition_json` with the declared labels and the ``structure`` entry."""
        return {**partition_json(self.release, self.vertices.labels), "structure": self.structure}


def release_graph(graph: Graph, vertices: VertexSet, epsilon: float, *, method: str = DEFAULT_METHOD,
                  rng: np.random.Generator | None = None, **options) -> DeclaredRelease:
    """Release ``graph`` (as read from the data, e.g. by :func:`dpviz.graph.io.read_edges`) on the declared
    vertex set ``vertices``: edges touching an undeclared vertex are dropped before the mechanism (how many
    is not published), then :func:`release`. ``rng=None``: OS CSPRNG noise (a private release)."""
    declared = vertices.restrict(graph)
    return DeclaredRelease(release(declared.edges, declared.n_nodes, epsilon, method=method, rng=rng, **options),
                           vertices)


def release_meta(rel: DeclaredRelease, epsilon: float, *, source: str,
                 split: tuple[float, float, float] | None = None) -> dict[str, Any]:
    """The ``.meta.json`` of a private graph release (CLI and page): noise, the sensitivity the method's
    noise uses, the sub-budgets, the declared structure; nothing computed from the data but the released
    edge count."""
    from dpviz.core.modes import release_metadata
    from dpviz.core.noise import Noise

    method = rel.release.method
    budget = {str(k): float(v) for k, v in rel.release.budget.items()}
    return release_metadata(
        "graph", Noise.laplace(epsilon, discrete=True), seeded=False, sensitivity=sensitivity(method),
        sensitivities=dict(L1_SENSITIVITIES[method]), method=method, budget=budget,
        budget_note="every sub-budget is spent by one mechanism on the edge set (discrete Laplace on integer "
                    "queries of the L1 sensitivity listed under sensitivities, or the exponential mechanism); "
                    "the sub-budgets compose sequentially to ε: pure ε-edge-DP",
        options={"split": list(split)} if split is not None else {},
        n_nodes=int(rel.vertices.n_nodes), structure=rel.structure,
        vertex_set=("declared public (edge-level DP protects edges, not vertices)" if rel.vertices.declared
                    else rel.vertices.source.describe),
        n_edges_released=int(rel.release.edges.shape[0]), source=source,
        columns={"u": "vertex label", "v": "vertex label"})
