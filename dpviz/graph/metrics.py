"""Utility metrics comparing a true graph with a released one on the same vertex set {0..n-1}.

Simulation only: every function here reads the *true* graph, so nothing it returns may be published.
Inputs are canonical edge arrays (int, shape (k, 2), u < v, no duplicates; see
``dpviz.graph.model.canonical_edges``); a non-canonical array raises :class:`dpviz.errors.InputError`.
Everything is sparse (``scipy.sparse``) and vectorised: on email-Enron (36,692 nodes, 183,831 edges)
all metrics together take about a second once the true graph's communities are known (Louvain on
the true graph costs about 3 s once; it is cached per true graph, see :func:`true_communities`).

Source paper: G. Gong, C. Lessoy, C. Lu and K. Lv, "Differential Privacy Spatial Decomposition via
Flattening Kd-Tree", International Journal of Performability Engineering (Totem Publisher), 2020, §4.
Its experiments evaluate "Degree Distribution, Degree Centrality and Cut Query" (the KL divergence of
Figs. 5-6, the "RRDC" of Figs. 7-9 and the cut-query error of Table 2) without defining any of them;
the readings chosen here are stated with each function. Clustering, modularity and eigenvector
centrality are not in the paper; they are the usual extra structural checks of synthetic-graph papers.

Conventions for degenerate inputs (an empty released graph must not crash anything):

* relative errors are ``|x̃ - x| / |x|``; when the true value ``x`` is 0 the error is 0 if ``x̃ = 0``
  and 1 otherwise (so an empty release scores 1 against a true graph with triangles/communities);
* cut queries divide by ``max(Q(G), 1)`` (counts are integers), so an empty release scores 1;
* the eigenvector top-1% overlap is 0 when exactly one of the two graphs has no edge, 1 when both have
  none; the edge Jaccard index is 1 for two empty graphs.
"""

from __future__ import annotations

import hashlib
import math
import numbers
from collections import OrderedDict
from dataclasses import dataclass
from threading import Lock

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as sla
from scipy.special import rel_entr
from scipy.stats import rankdata

from dpviz.core.accounting import positive, probability
from dpviz.errors import InputError

__all__ = [
    "LOWER",
    "HIGHER",
    "REFERENCE",
    "METRIC_INFO",
    "CUT_SIZES",
    "degree_histogram",
    "degree_kl",
    "rrdc",
    "cut_sets",
    "cut_queries",
    "cut_error_by_size",
    "cut_error",
    "triangles",
    "clustering_coefficient",
    "clustering_rel_error",
    "true_communities",
    "modularity",
    "modularity_rel_error",
    "eigenvector_centrality",
    "eigen_top1_overlap",
    "edge_jaccard",
    "evaluate",
]

CUT_SIZES: tuple[float, ...] = (0.2, 0.4, 0.6, 0.8)
"""Query sizes |S|/|V| of the paper's Table 2."""

LOWER = "lower is better"
HIGHER = "higher is better"
REFERENCE = "for reference"

METRIC_INFO: dict[str, tuple[str, str, str]] = {
    "n_edges_true": ("Edges (true)", REFERENCE, "number of edges of the input graph"),
    "n_edges_released": ("Edges (released)", REFERENCE, "number of edges of the released graph"),
    "edge_jaccard": ("Edge Jaccard", HIGHER,
                     "|E ∩ Ẽ| / |E ∪ Ẽ|: share of the released edges that are true edges, over the union"),
    "degree_kl": ("Degree KL", LOWER,
                  "KL(P_true || P_released) of the degree distributions (add-½ smoothing), in nats"),
    "rrdc": ("RRDC", LOWER,
             "mean |rank change| / (|V|-1) of the true top-1% vertices by degree centrality"),
    "cut_error": ("Cut-query error", LOWER,
                  "mean |Q̃ - Q| / max(Q, 1) of edges between random S and V∖S, |S| = 0.2..0.8 |V|"),
    "clustering_rel_error": ("Clustering rel. error", LOWER,
                             "relative error of the average local clustering coefficient"),
    "modularity_rel_error": ("Modularity rel. error", LOWER,
                             "relative error of the modularity of the true graph's Louvain communities"),
    "eigen_top1_overlap": ("Eigenvector top-1% overlap", HIGHER,
                           "share of the true top-1% eigenvector-centrality vertices also top-1% after release"),
}
"""Metric key -> (label, direction, one-line definition), in the order :func:`evaluate` returns them."""


# --------------------------------------------------------------------------------------
# Inputs
# --------------------------------------------------------------------------------------

def _n_nodes(n_nodes: object) -> int:
    if isinstance(n_nodes, (bool, np.bool_)) or not isinstance(n_nodes, numbers.Integral) or n_nodes < 1:
        raise InputError(f"n_nodes: expected a positive integer, got {n_nodes!r}")
    return int(n_nodes)


@dataclass(frozen=True)
class _G:
    """A validated canonical graph: endpoints, sorted edge keys u*n+v, degrees."""

    n: int
    u: np.ndarray
    v: np.ndarray
    keys: np.ndarray
    degree: np.ndarray

    @property
    def m(self) -> int:
        return int(self.u.shape[0])

    def adjacency(self) -> sp.csr_matrix:
        """Symmetric 0/1 adjacency matrix A (CSR, float64, 2m stored entries; never dense)."""
        rows = np.concatenate([self.u, self.v])
        cols = np.concatenate([self.v, self.u])
        return sp.csr_matrix((np.ones(rows.shape[0]), (rows, cols)), shape=(self.n, self.n))


def _graph(name: str, edges: object, n: int) -> _G:
    """Validate a canonical edge array (int, (k, 2), 0 <= u < v < n, unique)."""
    e = np.asarray(edges)
    if e.size == 0:
        e = e.reshape(0, 2)
    if e.ndim != 2 or e.shape[1] != 2:
        raise InputError(f"{name}: expected an edge array of shape (k, 2), got shape {e.shape}")
    if not np.issubdtype(e.dtype, np.integer):
        raise InputError(f"{name}: expected integer vertex ids, got dtype {e.dtype}")
    e = e.astype(np.int64, copy=False)
    u, v = e[:, 0], e[:, 1]
    if e.shape[0]:
        if int(u.min()) < 0 or int(v.max()) >= n:
            raise InputError(f"{name}: vertex ids must lie in 0..{n - 1}")
        bad = np.flatnonzero(u >= v)
        if bad.size:
            i = int(bad[0])
            raise InputError(f"{name}: row {i} is ({int(u[i])}, {int(v[i])}); expected canonical edges with "
                             "u < v (use dpviz.graph.model.canonical_edges)")
    keys = np.sort(u * n + v)
    if keys.size > 1 and not np.all(np.diff(keys) > 0):
        raise InputError(f"{name}: duplicate edges; expected canonical edges "
                         "(use dpviz.graph.model.canonical_edges)")
    degree = np.bincount(u, minlength=n) + np.bincount(v, minlength=n)
    return _G(n, np.ascontiguousarray(u), np.ascontiguousarray(v), keys, degree.astype(np.int64))


def _pair(true_edges: object, released_edges: object, n_nodes: object) -> tuple[_G, _G]:
    n = _n_nodes(n_nodes)
    return _graph("true_edges", true_edges, n), _graph("released_edges", released_edges, n)


def _relative(true: float, released: float) -> float:
    """|x̃ - x| / |x|, with 0 (x̃ = x = 0) or 1 (x = 0 != x̃) when the true value is 0."""
    if true == 0.0:
        return 0.0 if released == 0.0 else 1.0
    return abs(released - true) / abs(true)


def _top_k(n: int, fraction: float) -> int:
    return min(n, max(1, math.ceil(fraction * n)))


# --------------------------------------------------------------------------------------
# Degree distribution and degree centrality
# --------------------------------------------------------------------------------------

def degree_histogram(edges: np.ndarray, n_nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """Degrees present in the graph and how many vertices have each (for a log-log plot).

    Returns ``(degrees, counts)``, int64 arrays sorted by degree, only degrees with a non-zero count
    (degree 0 is included when there are isolated vertices; drop it on a log axis).
    """
    g = _graph("edges", edges, _n_nodes(n_nodes))
    counts = np.bincount(g.degree)
    degrees = np.flatnonzero(counts)
    return degrees.astype(np.int64), counts[degrees].astype(np.int64)


def _degree_kl(t: _G, r: _G, alpha: float) -> float:
    size = int(max(t.degree.max(initial=0), r.degree.max(initial=0))) + 1
    p = np.bincount(t.degree, minlength=size) + alpha
    q = np.bincount(r.degree, minlength=size) + alpha
    return float(rel_entr(p / p.sum(), q / q.sum()).sum())


def degree_kl(true_edges: np.ndarray, released_edges: np.ndarray, n_nodes: int, *, alpha: float = 0.5) -> float:
    """KL divergence KL(P || P̃) = Σ_d P(d) ln(P(d) / P̃(d)) of the degree distributions, in nats.

    Fig. 5 of the paper ("KL-divergence vs. Privacy budget") gives no formula; we use the usual one.
    ``P`` is the true graph's degree distribution, ``P̃`` the released graph's (the direction that asks
    how well the release explains the true data). Both are histograms over the degrees 0..D (D the larger
    of the two maximum degrees, isolated vertices included) with add-``alpha`` smoothing, P(d) =
    (h(d) + α) / (|V| + α(D+1)), so that a degree absent from the release costs a finite amount; the
    default α = ½ is the Krichevsky-Trofimov / Jeffreys estimator. Identical graphs give exactly 0.
    """
    t, r = _pair(true_edges, released_edges, n_nodes)
    return _degree_kl(t, r, positive("alpha", alpha))


def _rrdc(t: _G, r: _G, top: float) -> float:
    n = t.n
    if n < 2:
        return 0.0
    k = _top_k(n, top)
    # Degree centrality is d/(|V|-1): the same order as the degree. Rank 1 = largest; ties share the
    # average rank, in both graphs alike, so identical graphs give exactly 0.
    rank_true = rankdata(-t.degree, method="average")
    rank_released = rankdata(-r.degree, method="average")
    top_vertices = np.lexsort((np.arange(n), -t.degree))[:k]  # ties at the k-th degree: smaller id first
    return float(np.mean(np.abs(rank_released[top_vertices] - rank_true[top_vertices])) / (n - 1))


def rrdc(true_edges: np.ndarray, released_edges: np.ndarray, n_nodes: int, *, top: float = 0.01) -> float:
    """Rank error of degree centrality (the paper's "RRDC"), in [0, 1]; 0 is perfect.

    The paper names the metric only: "Figures 7 and 8 give various results of RRDC." and explains that
    "RRDC is mainly affected by the second step Decomposition and the third step Post_Processing" (the
    region counts, i.e. the row sums that make the degrees), and it concludes that DRF does well in
    "degree of centrality". We read RRDC as the **relative rank error of degree centrality** on the
    vertices that matter most: take the k = ⌈top·|V|⌉ vertices of highest degree centrality
    C_D(v) = d(v)/(|V|-1) in the true graph (default top 1%), and average how far each moves in the
    released graph's ranking, relative to the length of the ranking:

        RRDC = (1/k) Σ_{v ∈ top_k(G)} |rank_G̃(v) - rank_G(v)| / (|V| - 1)

    Ranks are descending (1 = most central) with tied vertices sharing their average rank. A release
    that keeps the hubs' order scores 0; one with no information about degrees (e.g. every vertex
    tied) scores about ½ — the empty release scores ≈ ½, as does a random ranking on average.
    """
    t, r = _pair(true_edges, released_edges, n_nodes)
    return _rrdc(t, r, probability("top", top))


# --------------------------------------------------------------------------------------
# Cut queries (Table 2)
# --------------------------------------------------------------------------------------

_QUERIES = ("complement", "split")
_BLOCK_CELLS = 4_000_000  # memory bound: one (queries x |V|) boolean block at a time


def _vertex_sets(n: int, k: int, k_s: int, q: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """q independent uniform random vertex sets U of size k, as boolean rows (q, n), split into S (the
    k_s vertices of U with the smallest uniform keys, i.e. a uniformly random k_s-subset of U) and
    T = U∖S (empty when k_s = k).

    Each row of uniform keys is cut at its k_s-th and k-th order statistics (an O(n) partition per row,
    vectorised over the rows). Rows whose keys tie at a cut (probability ~n²/2⁵³) are redrawn.
    """
    keys = rng.random((q, n))
    cut = np.partition(keys, sorted({k_s - 1, k - 1}), axis=1)
    s = keys <= cut[:, k_s - 1:k_s]
    t = (keys <= cut[:, k - 1:k]) & ~s
    bad = np.flatnonzero((s.sum(axis=1) != k_s) | (t.sum(axis=1) != k - k_s))
    if bad.size:  # pragma: no cover - ties between 53-bit uniforms
        s[bad], t[bad] = _vertex_sets(n, k, k_s, bad.size, rng)
    return s, t


def _cut_counts(g: _G, s: np.ndarray, t: np.ndarray, query: str) -> np.ndarray:
    """Q_{S,T}(G) for each row: edges with one end in S and the other in T (T = V∖S for "complement")."""
    su = np.take(s, g.u, axis=1)
    sv = np.take(s, g.v, axis=1)
    if query == "complement":
        return np.count_nonzero(su ^ sv, axis=1)
    tu = np.take(t, g.u, axis=1)
    tv = np.take(t, g.v, axis=1)
    return np.count_nonzero((su & tv) | (tu & sv), axis=1)


def _query_size(n: int, size: float, query: str) -> tuple[int, int]:
    """(|U|, |S|) for a query of relative size ``size``: |S| = round(s|V|) in 1..|V|-1 for "complement";
    |U| = round(s|V|) in 2..|V| with |S| = ⌊|U|/2⌋ for "split"."""
    if query == "complement":
        k = min(n - 1, max(1, round(size * n)))
        return k, k
    k = min(n, max(2, round(size * n)))
    return k, k // 2


def _cut_queries(t: _G, r: _G, rng: np.random.Generator, size: float, n_queries: int,
                 query: str) -> tuple[np.ndarray, np.ndarray]:
    n = t.n
    k, k_s = _query_size(n, size, query)
    block = max(1, _BLOCK_CELLS // n)
    q_true, q_released = [], []
    for start in range(0, n_queries, block):  # loop over query blocks (memory bound), not over vertices
        s, tt = _vertex_sets(n, k, k_s, min(block, n_queries - start), rng)
        q_true.append(_cut_counts(t, s, tt, query))
        q_released.append(_cut_counts(r, s, tt, query))
    return np.concatenate(q_true).astype(np.int64), np.concatenate(q_released).astype(np.int64)


def cut_sets(n_nodes: int, size: float, n_queries: int, rng: np.random.Generator, *,
             query: str = "complement") -> tuple[np.ndarray, np.ndarray]:
    """The vertex sets (S, T) of :func:`cut_queries` as boolean arrays (n_queries, n), row i = query i.

    Same draws as :func:`cut_queries` for the same ``rng`` state; for ``"complement"`` T = V∖S.
    """
    n = _n_nodes(n_nodes)
    (size,) = _check_cut_args(rng, (size,), n_queries, query, n)
    k, k_s = _query_size(n, size, query)
    block = max(1, _BLOCK_CELLS // n)
    pairs = [_vertex_sets(n, k, k_s, min(block, n_queries - start), rng) for start in range(0, n_queries, block)]
    s = np.concatenate([p[0] for p in pairs])
    t = ~s if query == "complement" else np.concatenate([p[1] for p in pairs])
    return s, t


def _check_cut_args(rng: object, sizes: object, n_queries: object, query: object, n: int) -> tuple[float, ...]:
    if not isinstance(rng, np.random.Generator):
        raise InputError(f"rng: expected a numpy.random.Generator (metrics are simulation only), got {rng!r}")
    if isinstance(n_queries, (bool, np.bool_)) or not isinstance(n_queries, numbers.Integral) or n_queries < 1:
        raise InputError(f"n_queries: expected a positive integer, got {n_queries!r}")
    if query not in _QUERIES:
        raise InputError(f"query: expected one of {', '.join(_QUERIES)}, got {query!r}")
    if n < 2:
        raise InputError(f"n_nodes: cut queries need at least 2 vertices, got {n}")
    sizes = tuple(probability("sizes", s) for s in np.atleast_1d(np.asarray(sizes, dtype=object)))
    if not sizes:
        raise InputError("sizes: expected at least one query size in (0, 1)")
    return sizes


def cut_queries(true_edges: np.ndarray, released_edges: np.ndarray, n_nodes: int, rng: np.random.Generator,
                *, size: float = 0.2, n_queries: int = 100,
                query: str = "complement") -> tuple[np.ndarray, np.ndarray]:
    """Answers (Q_{S,T}(G), Q_{S,T}(G̃)) of ``n_queries`` random cut queries of one size, on the same sets.

    See :func:`cut_error_by_size` for the query definition. Returns two int64 arrays of length n_queries.
    """
    t, r = _pair(true_edges, released_edges, n_nodes)
    (size,) = _check_cut_args(rng, (size,), n_queries, query, t.n)
    return _cut_queries(t, r, rng, size, int(n_queries), query)


def _cut_error_by_size(t: _G, r: _G, rng: np.random.Generator, sizes: tuple[float, ...], n_queries: int,
                       query: str) -> dict[float, float]:
    out: dict[float, float] = {}
    for size in sizes:
        q, q_rel = _cut_queries(t, r, rng, size, n_queries, query)
        out[size] = float(np.mean(np.abs(q_rel - q) / np.maximum(q, 1)))
    return out


def cut_error_by_size(true_edges: np.ndarray, released_edges: np.ndarray, n_nodes: int,
                      rng: np.random.Generator, *, sizes: tuple[float, ...] = CUT_SIZES, n_queries: int = 100,
                      query: str = "complement") -> dict[float, float]:
    """Mean relative cut-query error per query size (one row of the paper's Table 2).

    The paper: "For the cutting query, Table 2 gives the performance with ε = 1 for the four data sets
    under the query size of 0.2|V|, 0.4|V|, 0.6|V|, 0.8|V|", its caption being "Error (Q_{s,T}(G̃)) in
    cut query". Following the cut queries of the DER paper it compares with (R. Chen, B. C. M. Fung,
    P. S. Yu and B. C. Desai, "Correlated network data publication via differential privacy", VLDB
    Journal 23(4), 2014), Q_{S,T}(G) is the number of edges with one end in S and the other in T. For
    each size s we draw ``n_queries`` vertex sets uniformly at random (the same sets for both graphs)
    and report the mean relative error

        (1/N) Σ_i |Q_{S_i,T_i}(G̃) - Q_{S_i,T_i}(G)| / max(Q_{S_i,T_i}(G), 1).

    ``query="complement"`` (default): |S| = round(s|V|), T = V∖S — the cut (S, V∖S), the reading a
    query "size" most directly suggests. Note that cut(S) = cut(V∖S), so sizes s and 1-s have the same
    error distribution; the paper's Table 2 instead shows the error falling from 0.2|V| to 0.8|V|,
    which this reading cannot produce. ``query="split"`` is the alternative that does: a random set U
    of round(s|V|) vertices split uniformly into S (⌊|U|/2⌋ vertices) and T = U∖S, so the answer grows
    like s²|E|/2 and the relative error falls with s. Vectorised over queries: membership rows are
    built by order-statistic partition, and each edge's endpoints are gathered once per block.
    """
    t, r = _pair(true_edges, released_edges, n_nodes)
    sizes = _check_cut_args(rng, sizes, n_queries, query, t.n)
    return _cut_error_by_size(t, r, rng, sizes, int(n_queries), query)


def cut_error(true_edges: np.ndarray, released_edges: np.ndarray, n_nodes: int, rng: np.random.Generator,
              sizes: tuple[float, ...] = CUT_SIZES, n_queries: int = 100, query: str = "complement") -> float:
    """Mean over ``sizes`` of :func:`cut_error_by_size` (``n_queries`` random queries per size)."""
    by_size = cut_error_by_size(true_edges, released_edges, n_nodes, rng, sizes=sizes, n_queries=n_queries,
                                query=query)
    return float(np.mean(list(by_size.values())))


# --------------------------------------------------------------------------------------
# Triangles and clustering
# --------------------------------------------------------------------------------------

def _triangles(g: _G) -> np.ndarray:
    """Per-vertex triangle counts by degree-ordered orientation (three sparse products, no A @ A).

    Orient each edge from the endpoint of lower (degree, id) to the higher one: L is acyclic with
    out-degrees ≤ √(2m), so every triangle has a unique source a, middle b and sink c (a→b, b→c, a→c):
    (L L ∘ L)[a, c] counts triangles by (source, sink), and (Lᵀ L ∘ L)[b, c] by (middle, sink). Row and
    column sums then give each vertex's count in all three roles. Work O(m^{3/2}) (Chiba & Nishizeki,
    "Arboricity and subgraph listing algorithms", SIAM J. Computing, 1985; the degree-ordered
    "forward" variant of T. Schank and D. Wagner, "Finding, counting and listing all triangles in large
    graphs, an experimental study", WEA 2005).
    """
    n = g.n
    if g.m == 0:
        return np.zeros(n, np.int64)
    order = np.empty(n, np.int64)
    order[np.lexsort((np.arange(n), g.degree))] = np.arange(n)
    forward = order[g.u] < order[g.v]
    a = np.where(forward, g.u, g.v)
    c = np.where(forward, g.v, g.u)
    L = sp.csr_matrix((np.ones(g.m), (a, c)), shape=(n, n))
    by_source_sink = (L @ L).multiply(L)
    by_middle_sink = (L.T.tocsr() @ L).multiply(L)
    total = (np.asarray(by_source_sink.sum(axis=1)).ravel() + np.asarray(by_source_sink.sum(axis=0)).ravel()
             + np.asarray(by_middle_sink.sum(axis=1)).ravel())
    return np.rint(total).astype(np.int64)


def triangles(edges: np.ndarray, n_nodes: int) -> np.ndarray:
    """Number of triangles through each vertex (int64, length n), as ``networkx.triangles``."""
    return _triangles(_graph("edges", edges, _n_nodes(n_nodes)))


_KINDS = ("average", "global")


def _clustering(g: _G, kind: str) -> float:
    tri = _triangles(g).astype(np.float64)
    d = g.degree.astype(np.float64)
    pairs = d * (d - 1.0) / 2.0  # connected triples centred at each vertex
    if kind == "global":
        total = pairs.sum()
        return float(tri.sum() / total) if total > 0 else 0.0
    local = np.divide(tri, pairs, out=np.zeros_like(tri), where=pairs > 0)
    return float(local.mean())


def clustering_coefficient(edges: np.ndarray, n_nodes: int, *, kind: str = "average") -> float:
    """Average local clustering coefficient (``kind="average"``) or global transitivity (``"global"``).

    Average: (1/|V|) Σ_v c(v), c(v) = t(v) / (d(v)(d(v)-1)/2) and c(v) = 0 when d(v) < 2 (D. J. Watts
    and S. H. Strogatz, "Collective dynamics of 'small-world' networks", Nature, 1998; as
    ``networkx.average_clustering``). Global: 3 × triangles / connected triples (``networkx.transitivity``).
    """
    if kind not in _KINDS:
        raise InputError(f"kind: expected one of {', '.join(_KINDS)}, got {kind!r}")
    return _clustering(_graph("edges", edges, _n_nodes(n_nodes)), kind)


def clustering_rel_error(true_edges: np.ndarray, released_edges: np.ndarray, n_nodes: int, *,
                         kind: str = "average") -> float:
    """|C(G̃) - C(G)| / C(G) for the clustering coefficient C of :func:`clustering_coefficient`.

    The DRF paper reports no clustering metric. We use the average local coefficient by default (it
    weighs every vertex equally, as the degree metrics do); ``kind="global"`` gives the transitivity.
    """
    if kind not in _KINDS:
        raise InputError(f"kind: expected one of {', '.join(_KINDS)}, got {kind!r}")
    t, r = _pair(true_edges, released_edges, n_nodes)
    return _relative(_clustering(t, kind), _clustering(r, kind))


# --------------------------------------------------------------------------------------
# Modularity
# --------------------------------------------------------------------------------------

_COMMUNITY_CACHE: OrderedDict[tuple, np.ndarray] = OrderedDict()
_COMMUNITY_CACHE_SIZE = 8
_COMMUNITY_LOCK = Lock()


def _louvain(g: _G, seed: int, resolution: float) -> np.ndarray:
    import networkx as nx

    graph = nx.Graph()
    graph.add_nodes_from(range(g.n))
    graph.add_edges_from(zip(g.u.tolist(), g.v.tolist()))
    communities = nx.community.louvain_communities(graph, seed=seed, resolution=resolution)
    labels = np.empty(g.n, np.int64)
    for i, members in enumerate(communities):  # one pass over networkx's output sets (O(|V|) once)
        labels[np.fromiter(members, np.int64, len(members))] = i
    return labels


def _communities(g: _G, seed: int, resolution: float) -> np.ndarray:
    key = (g.n, hashlib.blake2b(g.keys.tobytes(), digest_size=20).hexdigest(), seed, resolution)
    with _COMMUNITY_LOCK:
        if key in _COMMUNITY_CACHE:
            _COMMUNITY_CACHE.move_to_end(key)
            return _COMMUNITY_CACHE[key]
    labels = _louvain(g, seed, resolution)
    labels.setflags(write=False)
    with _COMMUNITY_LOCK:
        _COMMUNITY_CACHE[key] = labels
        while len(_COMMUNITY_CACHE) > _COMMUNITY_CACHE_SIZE:
            _COMMUNITY_CACHE.popitem(last=False)
    return labels


def true_communities(edges: np.ndarray, n_nodes: int, *, seed: int = 0, resolution: float = 1.0) -> np.ndarray:
    """Community label of each vertex (int64, length n, read-only) from Louvain with a fixed seed.

    V. D. Blondel, J.-L. Guillaume, R. Lambiotte and E. Lefebvre, "Fast unfolding of communities in
    large networks", J. Stat. Mech., 2008, as ``networkx.community.louvain_communities``. Results are
    cached per graph (the last 8 graphs), since a simulation evaluates many releases against one true
    graph and Louvain is the slowest metric step (~3 s on email-Enron).
    """
    g = _graph("edges", edges, _n_nodes(n_nodes))
    return _communities(g, int(seed), positive("resolution", resolution))


def _labels(name: str, labels: object, n: int) -> np.ndarray:
    lab = np.asarray(labels)
    if lab.shape != (n,) or not np.issubdtype(lab.dtype, np.integer) or (n and int(lab.min()) < 0):
        raise InputError(f"{name}: expected {n} non-negative integer community labels, one per vertex")
    return lab.astype(np.int64, copy=False)


def _modularity(g: _G, labels: np.ndarray, resolution: float) -> float:
    if g.m == 0:
        return 0.0  # undefined (0/0); an edgeless graph has no community structure
    k = int(labels.max()) + 1
    same = labels[g.u] == labels[g.v]
    inside = np.bincount(labels[g.u][same], minlength=k)
    volume = np.bincount(labels, weights=g.degree, minlength=k)
    return float(inside.sum() / g.m - resolution * np.sum((volume / (2.0 * g.m)) ** 2))


def modularity(edges: np.ndarray, n_nodes: int, labels: np.ndarray, *, resolution: float = 1.0) -> float:
    """Newman-Girvan modularity Q = Σ_c [L_c/m - γ (D_c/2m)²] of the partition ``labels``.

    L_c: edges inside community c, D_c: total degree of c, m: edges (M. E. J. Newman and M. Girvan,
    "Finding and evaluating community structure in networks", Phys. Rev. E, 2004). 0 for an edgeless
    graph (where the formula is 0/0).
    """
    n = _n_nodes(n_nodes)
    return _modularity(_graph("edges", edges, n), _labels("labels", labels, n), positive("resolution", resolution))


def modularity_rel_error(true_edges: np.ndarray, released_edges: np.ndarray, n_nodes: int, *,
                         communities: np.ndarray | None = None, seed: int = 0) -> float:
    """|Q(G̃, C) - Q(G, C)| / |Q(G, C)| for the communities C found on the **true** graph.

    C is Louvain on the true graph with a fixed seed (:func:`true_communities`), or ``communities`` if
    given (one label per vertex). Evaluating both graphs on the same partition asks whether the release
    keeps the true community structure; letting each graph choose its own best partition would reward
    any release with *some* clustered structure, true or not. The DRF paper reports no modularity.
    """
    t, r = _pair(true_edges, released_edges, n_nodes)
    labels = (_communities(t, int(seed), 1.0) if communities is None
              else _labels("communities", communities, t.n))
    return _relative(_modularity(t, labels, 1.0), _modularity(r, labels, 1.0))


# --------------------------------------------------------------------------------------
# Eigenvector centrality
# --------------------------------------------------------------------------------------

_DENSE_EIGEN_MAX = 500


def _eigenvector(g: _G) -> np.ndarray:
    n = g.n
    if g.m == 0:
        return np.zeros(n)
    A = g.adjacency()
    if n <= _DENSE_EIGEN_MAX:  # small: exact dense solver (n ≤ 500, so never |V|² for |V| > 5000)
        x = np.linalg.eigh(A.toarray())[1][:, -1]
    else:  # Lanczos on the sparse A, deterministic start vector, machine-precision tolerance
        x = sla.eigsh(A, k=1, which="LA", v0=np.full(n, 1.0 / math.sqrt(n)), tol=0.0)[1][:, 0]
    x = np.abs(x * (1.0 if x.sum() >= 0 else -1.0))
    return x / np.linalg.norm(x)


def eigenvector_centrality(edges: np.ndarray, n_nodes: int) -> np.ndarray:
    """Eigenvector centrality: the leading eigenvector of the adjacency matrix, non-negative, unit norm.

    P. Bonacich, "Factoring and weighting approaches to status scores and clique identification",
    J. Mathematical Sociology, 1972; as ``networkx.eigenvector_centrality_numpy``. By Perron-Frobenius
    the eigenvector of the largest (algebraic) eigenvalue of a non-negative symmetric matrix can be
    taken non-negative; on a disconnected graph it lives on the component(s) of largest spectral
    radius and is 0 elsewhere. All zeros for an edgeless graph.
    """
    return _eigenvector(_graph("edges", edges, _n_nodes(n_nodes)))


def _top_set(x: np.ndarray, k: int) -> np.ndarray:
    """The k most central vertices, among those with centrality > 0 (fewer if the leading component
    has fewer than k vertices). Values are rounded to 12 significant decimals relative to the maximum
    so that floating-point noise (≈0 entries off the leading component, unequal roundings of equal
    values) neither enters the set nor breaks ties; remaining ties go to the smaller vertex id."""
    scaled = np.round(x / x.max(), 12)
    order = np.lexsort((np.arange(x.shape[0]), -scaled))[:k]
    return order[scaled[order] > 0]


def _eigen_overlap(t: _G, r: _G, top: float) -> float:
    if t.m == 0 or r.m == 0:
        return 1.0 if t.m == r.m else 0.0
    k = _top_k(t.n, top)
    a, b = _top_set(_eigenvector(t), k), _top_set(_eigenvector(r), k)
    return np.intersect1d(a, b, assume_unique=True).size / max(a.size, b.size)


def eigen_top1_overlap(true_edges: np.ndarray, released_edges: np.ndarray, n_nodes: int, *,
                       top: float = 0.01) -> float:
    """|A ∩ B| / k, A and B the k = ⌈top·|V|⌉ vertices of highest eigenvector centrality in G and G̃.

    Default top 1%. Ties are broken by vertex id. Only vertices of positive centrality count: when a
    graph's leading component has fewer than k vertices its set is smaller, and the denominator is then
    max(|A|, |B|) instead of k (vertices of centrality 0 are not "central", whatever their id). 1 = the
    same central vertices; 0 when exactly one of the two graphs is edgeless (its centrality is
    undefined), 1 when both are.
    """
    t, r = _pair(true_edges, released_edges, n_nodes)
    return _eigen_overlap(t, r, probability("top", top))


# --------------------------------------------------------------------------------------
# Edge overlap and the summary
# --------------------------------------------------------------------------------------

def _jaccard(t: _G, r: _G) -> float:
    union = t.m + r.m
    if union == 0:
        return 1.0
    shared = np.intersect1d(t.keys, r.keys, assume_unique=True).size
    return shared / (union - shared)


def edge_jaccard(true_edges: np.ndarray, released_edges: np.ndarray, n_nodes: int) -> float:
    """|E ∩ Ẽ| / |E ∪ Ẽ| (1 for two empty graphs)."""
    t, r = _pair(true_edges, released_edges, n_nodes)
    return _jaccard(t, r)


def evaluate(true_edges: np.ndarray, released_edges: np.ndarray, n_nodes: int, rng: np.random.Generator, *,
             n_queries: int = 100, communities: np.ndarray | None = None) -> dict[str, float]:
    """All metrics of :data:`METRIC_INFO`, in its order, with their default settings.

    ``rng`` draws the cut-query vertex sets (the only random step). ``communities`` overrides the
    Louvain partition of the true graph used by the modularity error (otherwise computed and cached).
    Validates both edge arrays once.
    """
    t, r = _pair(true_edges, released_edges, n_nodes)
    sizes = _check_cut_args(rng, CUT_SIZES, n_queries, "complement", t.n) if t.n >= 2 else ()
    labels = (_communities(t, 0, 1.0) if communities is None else _labels("communities", communities, t.n))
    cut = (float(np.mean(list(_cut_error_by_size(t, r, rng, sizes, int(n_queries), "complement").values())))
           if sizes else 0.0)
    return {
        "n_edges_true": t.m,
        "n_edges_released": r.m,
        "edge_jaccard": _jaccard(t, r),
        "degree_kl": _degree_kl(t, r, 0.5),
        "rrdc": _rrdc(t, r, 0.01),
        "cut_error": cut,
        "clustering_rel_error": _relative(_clustering(t, "average"), _clustering(r, "average")),
        "modularity_rel_error": _relative(_modularity(t, labels, 1.0), _modularity(r, labels, 1.0)),
        "eigen_top1_overlap": _eigen_overlap(t, r, 0.01),
    }
