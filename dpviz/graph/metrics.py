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
the readings chosen here are stated with each function. The cut queries live in :mod:`dpviz.graph.cuts`
(listed here with the other metrics), the validated graph pair every metric reads in
:mod:`dpviz.graph.compare`. Clustering, modularity and eigenvector
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
from collections import OrderedDict
from threading import Lock

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as sla
from scipy.special import rel_entr
from scipy.stats import rankdata

from dpviz.core.accounting import positive, probability
from dpviz.errors import InputError
from dpviz.graph.compare import G, as_graph, check_n_nodes, graph_pair, relative, top_k
from dpviz.graph.cuts import (CUT_SIZES, check_cut_args, cut_error, cut_error_by_size, cut_error_by_size_of,
                              cut_queries, cut_sets)

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
# Degree distribution and degree centrality
# --------------------------------------------------------------------------------------

def degree_histogram(edges: np.ndarray, n_nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """Degrees present in the graph and how many vertices have each (for a log-log plot).

    Returns ``(degrees, counts)``, int64 arrays sorted by degree, only degrees with a non-zero count
    (degree 0 is included when there are isolated vertices; drop it on a log axis).
    """
    g = as_graph("edges", edges, check_n_nodes(n_nodes))
    counts = np.bincount(g.degree)
    degrees = np.flatnonzero(counts)
    return degrees.astype(np.int64), counts[degrees].astype(np.int64)


def _degree_kl(t: G, r: G, alpha: float) -> float:
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
    t, r = graph_pair(true_edges, released_edges, n_nodes)
    return _degree_kl(t, r, positive("alpha", alpha))


def _rrdc(t: G, r: G, top: float) -> float:
    n = t.n
    if n < 2:
        return 0.0
    k = top_k(n, top)
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
    t, r = graph_pair(true_edges, released_edges, n_nodes)
    return _rrdc(t, r, probability("top", top))


# --------------------------------------------------------------------------------------
# Triangles and clustering
# --------------------------------------------------------------------------------------

def _triangles(g: G) -> np.ndarray:
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
    return _triangles(as_graph("edges", edges, check_n_nodes(n_nodes)))


_KINDS = ("average", "global")


def _clustering(g: G, kind: str) -> float:
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
    return _clustering(as_graph("edges", edges, check_n_nodes(n_nodes)), kind)


def clustering_rel_error(true_edges: np.ndarray, released_edges: np.ndarray, n_nodes: int, *,
                         kind: str = "average") -> float:
    """|C(G̃) - C(G)| / C(G) for the clustering coefficient C of :func:`clustering_coefficient`.

    The DRF paper reports no clustering metric. We use the average local coefficient by default (it
    weighs every vertex equally, as the degree metrics do); ``kind="global"`` gives the transitivity.
    """
    if kind not in _KINDS:
        raise InputError(f"kind: expected one of {', '.join(_KINDS)}, got {kind!r}")
    t, r = graph_pair(true_edges, released_edges, n_nodes)
    return relative(_clustering(t, kind), _clustering(r, kind))


# --------------------------------------------------------------------------------------
# Modularity
# --------------------------------------------------------------------------------------

_COMMUNITY_CACHE: OrderedDict[tuple, np.ndarray] = OrderedDict()
_COMMUNITY_CACHE_SIZE = 8
_COMMUNITY_LOCK = Lock()


def _louvain(g: G, seed: int, resolution: float) -> np.ndarray:
    import networkx as nx

    graph = nx.Graph()
    graph.add_nodes_from(range(g.n))
    graph.add_edges_from(zip(g.u.tolist(), g.v.tolist()))
    communities = nx.community.louvain_communities(graph, seed=seed, resolution=resolution)
    labels = np.empty(g.n, np.int64)
    for i, members in enumerate(communities):  # one pass over networkx's output sets (O(|V|) once)
        labels[np.fromiter(members, np.int64, len(members))] = i
    return labels


def _communities(g: G, seed: int, resolution: float) -> np.ndarray:
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
    g = as_graph("edges", edges, check_n_nodes(n_nodes))
    return _communities(g, int(seed), positive("resolution", resolution))


def _labels(name: str, labels: object, n: int) -> np.ndarray:
    lab = np.asarray(labels)
    if lab.shape != (n,) or not np.issubdtype(lab.dtype, np.integer) or (n and int(lab.min()) < 0):
        raise InputError(f"{name}: expected {n} non-negative integer community labels, one per vertex")
    return lab.astype(np.int64, copy=False)


def _modularity(g: G, labels: np.ndarray, resolution: float) -> float:
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
    n = check_n_nodes(n_nodes)
    return _modularity(as_graph("edges", edges, n), _labels("labels", labels, n), positive("resolution", resolution))


def modularity_rel_error(true_edges: np.ndarray, released_edges: np.ndarray, n_nodes: int, *,
                         communities: np.ndarray | None = None, seed: int = 0) -> float:
    """|Q(G̃, C) - Q(G, C)| / |Q(G, C)| for the communities C found on the **true** graph.

    C is Louvain on the true graph with a fixed seed (:func:`true_communities`), or ``communities`` if
    given (one label per vertex). Evaluating both graphs on the same partition asks whether the release
    keeps the true community structure; letting each graph choose its own best partition would reward
    any release with *some* clustered structure, true or not. The DRF paper reports no modularity.
    """
    t, r = graph_pair(true_edges, released_edges, n_nodes)
    labels = (_communities(t, int(seed), 1.0) if communities is None
              else _labels("communities", communities, t.n))
    return relative(_modularity(t, labels, 1.0), _modularity(r, labels, 1.0))


# --------------------------------------------------------------------------------------
# Eigenvector centrality
# --------------------------------------------------------------------------------------

_DENSE_EIGEN_MAX = 500


def _eigenvector(g: G) -> np.ndarray:
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
    return _eigenvector(as_graph("edges", edges, check_n_nodes(n_nodes)))


def _top_set(x: np.ndarray, k: int) -> np.ndarray:
    """The k most central vertices, among those with centrality > 0 (fewer if the leading component
    has fewer than k vertices). Values are rounded to 12 significant decimals relative to the maximum
    so that floating-point noise (≈0 entries off the leading component, unequal roundings of equal
    values) neither enters the set nor breaks ties; remaining ties go to the smaller vertex id."""
    scaled = np.round(x / x.max(), 12)
    order = np.lexsort((np.arange(x.shape[0]), -scaled))[:k]
    return order[scaled[order] > 0]


def _eigen_overlap(t: G, r: G, top: float) -> float:
    if t.m == 0 or r.m == 0:
        return 1.0 if t.m == r.m else 0.0
    k = top_k(t.n, top)
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
    t, r = graph_pair(true_edges, released_edges, n_nodes)
    return _eigen_overlap(t, r, probability("top", top))


# --------------------------------------------------------------------------------------
# Edge overlap and the summary
# --------------------------------------------------------------------------------------

def _jaccard(t: G, r: G) -> float:
    union = t.m + r.m
    if union == 0:
        return 1.0
    shared = np.intersect1d(t.keys, r.keys, assume_unique=True).size
    return shared / (union - shared)


def edge_jaccard(true_edges: np.ndarray, released_edges: np.ndarray, n_nodes: int) -> float:
    """|E ∩ Ẽ| / |E ∪ Ẽ| (1 for two empty graphs)."""
    t, r = graph_pair(true_edges, released_edges, n_nodes)
    return _jaccard(t, r)


def evaluate(true_edges: np.ndarray, released_edges: np.ndarray, n_nodes: int, rng: np.random.Generator, *,
             n_queries: int = 100, communities: np.ndarray | None = None) -> dict[str, float]:
    """All metrics of :data:`METRIC_INFO`, in its order, with their default settings.

    ``rng`` draws the cut-query vertex sets (the only random step). ``communities`` overrides the
    Louvain partition of the true graph used by the modularity error (otherwise computed and cached).
    Validates both edge arrays once.
    """
    t, r = graph_pair(true_edges, released_edges, n_nodes)
    sizes = check_cut_args(rng, CUT_SIZES, n_queries, "complement", t.n) if t.n >= 2 else ()
    labels = (_communities(t, 0, 1.0) if communities is None else _labels("communities", communities, t.n))
    cut = (float(np.mean(list(cut_error_by_size_of(t, r, rng, sizes, int(n_queries), "complement").values())))
           if sizes else 0.0)
    return {
        "n_edges_true": t.m,
        "n_edges_released": r.m,
        "edge_jaccard": _jaccard(t, r),
        "degree_kl": _degree_kl(t, r, 0.5),
        "rrdc": _rrdc(t, r, 0.01),
        "cut_error": cut,
        "clustering_rel_error": relative(_clustering(t, "average"), _clustering(r, "average")),
        "modularity_rel_error": relative(_modularity(t, labels, 1.0), _modularity(r, labels, 1.0)),
        "eigen_top1_overlap": _eigen_overlap(t, r, 0.01),
    }
