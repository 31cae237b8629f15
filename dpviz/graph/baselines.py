"""Edge-DP baselines for graph release: kd-hybrid, quadtree, Random and a degree-sequence (Chung–Lu) model.

Every function has the signature of :data:`dpviz.graph.strategy.METHODS`,
``f(edges, n_nodes, epsilon, *, rng=None, **options) -> GraphOutput``, and is ε-edge-DP. Every noisy count
is drawn by :func:`dpviz.core.protocols.measure` (:class:`dpviz.graph.strategy.RegionCounts`,
:class:`~dpviz.graph.strategy.DegreeSequence`), every selection by :mod:`dpviz.core.exponential`.

Unit of privacy and sensitivities
---------------------------------
Neighbouring graphs G, G' on the same public vertex set {0..n-1} differ in one undirected edge {u, v}.
All counting is done on the upper triangle of the adjacency matrix (cells (i, j) with i < j), where that
edge is exactly **one** cell, (min(u,v), max(u,v)). Hence:

* the number of edges in a region (a rectangle of cells) changes by at most 1, and the counts of a
  family of *disjoint* regions (one level of a space-partitioning tree) change by at most 1 in total:
  L1 sensitivity Δ₁ = 1 per tree level;
* the total edge count |E| has Δ₁ = 1;
* the degree sequence (d_0..d_{n-1}) changes in two coordinates, d_u and d_v, by 1 each: Δ₁ = 2;
* the rank-based median utility of a kd split (below) changes by at most 1: Δu = 1.

Noise: with a ``numpy.random.Generator`` (simulation) continuous Laplace of scale b = Δ₁/ε from
:class:`dpviz.core.noise.Noise`; with ``rng=None`` (a release) the discrete Laplace P(k) ∝ e^{-|k|/b}
on the integer counts, drawn by :func:`dpviz.core.samplers.discrete_laplace` from the OS CSPRNG (Canonne,
Kamath & Steinke, "The Discrete Gaussian for Differential Privacy", NeurIPS 2020): for integer queries of
L1 sensitivity Δ₁ the output densities of neighbours differ by at most e^{Δ₁/b} = e^{ε}. The option
``discrete=True`` forces the discrete sampler with a Generator (reproducible tests of the release path).
Everything after the noise (least squares, rounding, placing edges, sampling a Chung–Lu graph) reads only
noisy outputs and public numbers (n, ε, the options): it is post-processing and costs no budget
(Dwork & Roth, "The Algorithmic Foundations of Differential Privacy", FnT-TCS 2014, Prop. 2.1). Its
randomness therefore need not be secret: with ``rng=None`` it comes from a fresh ``numpy`` Generator
seeded by the OS, while every privacy-relevant random bit (count noise, exponential mechanism) comes from
the OS CSPRNG.

The methods
-----------
* :func:`quadtree` — the data-independent quadtree of G. Cormode, C. Procopiuc, D. Srivastava, E. Shen,
  T. Yu, "Differentially Private Spatial Decompositions", ICDE 2012 ("Cormode et al." below) on the
  n × n adjacency matrix: every region is cut at its midpoints into four, children with no upper-triangle
  cell are dropped (their count is 0, publicly), every node up to the leaves gets a noisy count with
  Cormode et al.'s *geometric* budget ε_d = 2^{d/3}(2^{1/3} − 1) ε / (2^{(h+1)/3} − 1) at depth d
  (root d = 0, leaves d = h: more budget where there are more nodes), then their least-squares
  consistency post-processing: the generalised-least-squares (inverse-variance-weighted) projection of
  the noisy counts onto consistent trees (parent = sum of children). Cormode et al. compute this
  "OLS" estimate for per-level budgets with a three-phase pass (weights ε_d²); here it is computed by
  :func:`dpviz.graph.estimators.least_squares`, two passes with per-node variances d_i (the projection
  GMC computes: Yang et al., "Generation Matrix: An Embeddable Matrix Representation for Hierarchical
  Trees", Theoretical Computer Science 2023, Alg. 2), for any tree shape. The leaf estimates are turned into integer counts in
  [0, #upper cells] and that many edges are placed uniformly at random in each leaf
  (:func:`dpviz.graph.regions.place_uniform`). Integer counts: by default (``rounding="top-down"``,
  :func:`~dpviz.graph.estimators.top_down_counts`) the root's estimate, rounded, is shared out level by level in proportion to
  the children's clipped estimates, so the released edge count stays at the private estimate of |E|;
  ``rounding="clip"`` rounds and clips every leaf on its own. The latter is biased upwards — an empty
  leaf gets E[max(0, noise)] ≈ b/2 edges — and with the ~10⁵ leaves of a height-9 tree it multiplies the
  edge count of a sparse graph (measured at ε = 1: 6,594 → ~270,000 edges on the US power grid, 15,751
  → ~280,000 on hep-th; top-down: ~6,560 and ~15,720).
  Privacy: the structure is data-independent; level d's regions are disjoint, so its count vector has
  Δ₁ = 1 and Laplace(1/ε_d) makes it ε_d-DP; sequential composition over the h+1 levels gives Σ ε_d = ε.
* :func:`kd_hybrid` — Cormode et al.'s kd-hybrid tree: the first ``kd_levels`` levels are data-dependent
  kd splits at *private medians*, the remaining levels data-independent quadtree splits (Cormode et al.:
  private medians are worth their budget near the root, where nodes hold many points, and not deeper
  down; public implementations of their kd-hybrid do the same: private medians for the first levels,
  domain mid-points below). ``kd_first=False`` gives the reverse order (quadtree levels on top, kd
  levels below). Of Cormode et al.'s private-median methods we use the exponential mechanism
  (McSherry & Talwar, "Mechanism Design via Differential Privacy", FOCS 2007), the one they found most
  accurate: a node
  holding c points with coordinates x in [lo, hi) along the split axis (rows on even kd levels, columns
  on odd ones; the other axis if that one has a single row/column) picks its cut s ∈ {lo+1, …, hi−1}
  with probability ∝ exp(ε_t · u(s) / 2), u(s) = −|2·rank(s) − c|, rank(s) = #{x < s}. One edge
  changes c by 1 and rank(s) by 0 or 1 with it, so 2·rank(s) − c moves by exactly ±1: Δu = 1, and the
  mechanism is ε_t-DP for one node; the nodes of a level are disjoint, so only one node's utility
  changes between neighbours and the whole level is ε_t-DP (parallel composition). The median budget
  ε_median = ``median_share`` · ε is split equally over the kd levels (as in Cormode et al.'s hybrid
  trees); the count budget ε_count = ε − ε_median is split geometrically over depths with the same rule
  as the quadtree, generalised to mixed fan-outs: Cormode et al. choose ε_d ∝ (nodes a range query
  touches at depth d)^{1/3}, which for a 2-d tree is ∝ N_d^{1/6} with N_d the nominal number of nodes at
  depth d (the product of the fan-outs, 4 per quadtree level and 2 per kd level) — for a pure quadtree
  this is their 2^{d/3}. Counting, least squares and reconstruction are as for the quadtree. The number
  of levels is fixed before looking at the data (a data-dependent depth would make the budget split
  itself leak); a region that cannot be cut any more is carried down as its own child and measured
  again with the next depth's budget.
  Privacy: adaptive sequential composition of the kd levels (ε_median in total) and the count levels
  (ε_count in total) gives ε.
* :func:`random_uniform` — the paper's "Random" baseline (Gong, Lessoy, Lu & Lv, "Differential Privacy
  Spatial Decomposition via Flattening Kd-Tree", 2020, §4: "Random is, in the fourth step, without the
  exponential mechanism. 1 element is randomly arranged in the adjacency matrix"). In the published
  Step 4 the exponential mechanism decides how many *true* edges to copy; without it, only the noisy
  count remains and every 1 is placed at random. Applied to DRF's own leaf regions this private reading
  is exactly what ``drf-dp``'s private reconstruction already does, so as a separate baseline the whole
  upper triangle is one region: a noisy edge count m̃ = |E| + Lap(1/ε) (Δ₁ = 1, ε-DP), rounded and
  clipped to [0, n(n−1)/2], and m̃ edges placed uniformly at random (an Erdős–Rényi G(n, m̃) graph,
  post-processing).
* :func:`degree_chung_lu` — noisy degree sequence d̃ = d + Lap(2/ε)^n (Δ₁ = 2, ε-DP), post-processed to
  integers in [0, n−1] with an even sum, then a Chung–Lu random graph with expected degrees w = d̃:
  F. Chung & L. Lu, "Connected Components in Random Graphs with Given Expected Degree Sequences",
  Annals of Combinatorics 6, 2002; edge {i, j} present independently with p_ij = min(1, w_i w_j / S),
  S = Σ w. Sampled in O(n + S) expected time, never over all n² pairs (see :func:`chung_lu`).

Sparse throughout: regions and their counts are arrays over tree nodes (at most ~4^h of them, with the
height h capped by ``max_height``); edges are counted by :func:`dpviz.graph.regions.count_upper` from the
sorted edge list and placed by :func:`dpviz.graph.regions.place_uniform`; nothing of size n² is built.

Floating point in the exponential mechanism: the selection uses the Gumbel-max trick on float64
log-weights (uniforms with 53 random bits, from the OS CSPRNG when ``rng`` is None), and the cut inside
the chosen run of equal-utility positions is ⌊U·len⌋. Each selection probability therefore carries a
relative error of order 2^-52 per candidate run, and runs whose weight is below about e^{-37} of the
best are never drawn — the implemented mechanism is within a total variation of ~1e-15 per node of the
ideal one, as for :func:`dpviz.marginals.strategy.exponential_mechanism` (the exact guarantee is for the
ideal distribution).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpviz.core.accounting import positive, probability
from dpviz.errors import InputError
from dpviz.graph.estimators import degree_postprocess, least_squares, released_counts, top_down_counts
from dpviz.graph.hierarchy import kd_hybrid_hierarchy, quadtree_hierarchy, whole_number
from dpviz.graph.model import GraphOutput, canonical_edges
from dpviz.graph.regions import Partition, place_uniform
from dpviz.graph.strategy import EdgeCells, geometric_budgets, measure_degrees, measure_regions

__all__ = [
    "DEFAULT_MAX_HEIGHT", "DEFAULT_MEDIAN_SHARE", "DEFAULT_MU", "DEFAULT_ROUNDING", "ROUNDINGS", "Measurement",
    "kd_hybrid", "quadtree", "random_uniform", "degree_chung_lu", "default_height", "measure_counts",
    "noisy_degrees", "chung_lu",
]
"""(The trees are built by :mod:`dpviz.graph.hierarchy`, their budgets are :func:`dpviz.graph.strategy.geometric_budgets`
and their estimates come from :mod:`dpviz.graph.estimators`.)"""

DEFAULT_MU = 1.0
"""Leaf-size rule of :func:`default_height`: a leaf must cover at least μ × (its count's noise s.d.) cells
(the criterion of the DRF paper's Eq. (3), with the same μ role)."""

DEFAULT_MAX_HEIGHT = 9
"""Cap on the quadtree(-equivalent) height: at most 4⁹ = 262,144 leaves (about half of them, those that
meet the upper triangle, are kept), whatever n is."""

DEFAULT_MEDIAN_SHARE = 0.3
"""Share of ε spent on kd-hybrid's private medians: 3 : 7 against the counts, the split-point : count
ratio ε_D^d : ε_D^c the DRF paper uses, so that the two decompositions are compared at equal shares."""

ROUNDINGS = ("clip", "top-down")
DEFAULT_ROUNDING = "top-down"
"""How leaf estimates become integer edge counts: ``"clip"`` rounds every leaf and clips it to
[0, #upper cells]; ``"top-down"`` is :func:`~dpviz.graph.estimators.top_down_counts` (keeps the estimated total)."""

_QUAD, _KD = 4, 2  # nominal fan-outs of a quadtree level and of a kd level


# --------------------------------------------------------------------------------------------- helpers


def _canonical(edges: object, n_nodes: int) -> tuple[np.ndarray, int]:
    """Canonical edges (u < v, unique, sorted) and n. How many rows were dropped is *not* reported: for
    a directed input the number of "duplicates" is the number of reciprocated pairs, a statistic of the
    data that no release may contain (the readers' notices say it in simulation)."""
    c = canonical_edges(edges, n_nodes)
    return c.edges, int(n_nodes)


def _discrete(rng: np.random.Generator | None, discrete: bool | None) -> bool:
    if rng is not None and not isinstance(rng, np.random.Generator):
        raise InputError(f"rng: expected a numpy.random.Generator or None, got {type(rng).__name__}")
    return rng is None if discrete is None else bool(discrete)


def _noise_text(rng: np.random.Generator | None, discrete: bool) -> str:
    if discrete:
        return "discrete Laplace (OS CSPRNG)" if rng is None else "discrete Laplace"
    return "continuous Laplace (simulation)"


def _post_rng(rng: np.random.Generator | None) -> np.random.Generator:
    """Randomness for post-processing only (edge placement, Chung–Lu): the caller's Generator, or a fresh
    OS-seeded one for a release (post-processing needs no secret randomness; see the module docstring)."""
    return rng if rng is not None else np.random.default_rng()


def _rounding(value: object) -> str:
    if value not in ROUNDINGS:
        raise InputError(f"rounding: expected one of {', '.join(ROUNDINGS)}, got {value!r}")
    return str(value)


def _sorted_edges(e: np.ndarray) -> np.ndarray:
    """Rows sorted lexicographically (u, then v), int64 (k, 2)."""
    e = np.asarray(e, dtype=np.int64).reshape(-1, 2)
    if e.shape[0] == 0:
        return np.zeros((0, 2), dtype=np.int64)
    order = np.lexsort((e[:, 1], e[:, 0]))
    return np.ascontiguousarray(e[order])


# --------------------------------------------------------------------------------------------- budgets


def default_height(n_nodes: int, epsilon_count: float, *, mu: float = DEFAULT_MU,
                   max_height: int = DEFAULT_MAX_HEIGHT) -> int:
    """The quadtree height used when none is given: the largest h ≤ min(max_height, ⌈log₂ n⌉) whose
    nominal leaf area n²/4^h is at least μ times the noise standard deviation √2/ε_h of a leaf count
    (ε_h the geometric leaf budget of :func:`geometric_budgets`) — the DRF paper's Eq. (3) criterion.
    Depends only on public numbers (n, ε, μ, the cap)."""
    n = whole_number("n_nodes", n_nodes, 1)
    epsilon_count = positive("epsilon", epsilon_count)
    mu = positive("mu", mu)
    cap = min(whole_number("max_height", max_height, 0), math.ceil(math.log2(n)) if n > 1 else 0)
    best = 0
    for h in range(cap + 1):  # at most ~30 candidate heights: public arithmetic, no data
        eps_leaf = float(geometric_budgets([_QUAD] * h, epsilon_count)[-1])
        if n * n / 4.0**h >= mu * math.sqrt(2.0) / eps_leaf:
            best = h
    return best


# --------------------------------------------------------------------------------------------- counts


@dataclass(frozen=True)
class Measurement:
    """Noisy counts of every region of a hierarchy, their exact noise variances, and the budget by depth."""

    noisy: np.ndarray
    variance: np.ndarray
    epsilon_by_depth: np.ndarray


def measure_counts(h: Partition, edges: np.ndarray, epsilon_count: float,
                   rng: np.random.Generator | None, discrete: bool) -> Measurement:
    """Noisy upper-triangle edge counts of every region: depth d gets Laplace(1/ε_d) with the geometric
    budgets ε_d of :func:`~dpviz.graph.strategy.geometric_budgets` over depths 0..L (Δ₁ = 1 per level:
    regions of one depth are disjoint), drawn by :func:`dpviz.core.protocols.measure`. True counts by range
    counting over the sorted edge coordinates (:class:`dpviz.graph.strategy.RegionCounts`)."""
    eps_d = geometric_budgets(h.fanouts, epsilon_count)
    e = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    meas = measure_regions((h.r0, h.r1, h.c0, h.c1), EdgeCells(e[:, 0], e[:, 1]), eps_d[h.depth], epsilon_count,
                           rng, discrete=discrete)
    return Measurement(meas.values, np.array(meas.variance, dtype=np.float64), eps_d)


def _tree_release(method: str, h: Partition, edges: np.ndarray, n: int, epsilon: float,
                  budget: dict[str, float], epsilon_count: float, rng: np.random.Generator | None,
                  discrete: bool, rounding: str, info: dict) -> GraphOutput:
    """Counts, least squares, rounding and uniform placement shared by the quadtree and kd-hybrid."""
    meas = measure_counts(h, edges, epsilon_count, rng, discrete)
    for d, e in enumerate(meas.epsilon_by_depth):
        budget[f"count_depth_{d}"] = float(e)
    est = least_squares(h.parent, meas.noisy, meas.variance)
    leaves = np.flatnonzero(h.leaf)
    cap = h.upper()[leaves]
    if rounding == "clip":
        k = np.clip(np.rint(est[leaves]), 0, cap).astype(np.int64)
    else:
        k = top_down_counts(h.parent, h.depth, h.leaf, h.upper(), est)
    placed = place_uniform(h.r0[leaves], h.r1[leaves], h.c0[leaves], h.c1[leaves], k, _post_rng(rng))
    released = released_counts(h, k)
    part = h.released(released.astype(np.float64))
    info = {**info, "rounding": rounding, "levels": list(h.kinds), "n_regions": h.n_regions,
            "n_leaves": int(leaves.size),
            "count_epsilon_by_depth": meas.epsilon_by_depth.tolist(), "noise": _noise_text(rng, discrete),
            "estimate": est}
    _check_budget(budget, epsilon)
    return GraphOutput(edges=_sorted_edges(placed), budget=budget, method=method, n_nodes=n, private=True,
                       label=f"edge-DP ({method})", partition=part, order=None, info=info)


def _check_budget(budget: dict[str, float], epsilon: float) -> None:
    if abs(sum(budget.values()) - epsilon) > 1e-9 * max(1.0, epsilon):  # pragma: no cover - internal
        raise AssertionError(f"budget sums to {sum(budget.values())!r}, not {epsilon!r}")


# --------------------------------------------------------------------------------------------- methods


def quadtree(edges: object, n_nodes: int, epsilon: float, *, rng: np.random.Generator | None = None,
             height: int | None = None, mu: float = DEFAULT_MU, max_height: int = DEFAULT_MAX_HEIGHT,
             rounding: str = DEFAULT_ROUNDING, discrete: bool | None = None) -> GraphOutput:
    """Quadtree on the adjacency matrix with geometric per-level budgets and least-squares consistency
    (Cormode et al., ICDE 2012), then uniform placement in the leaves (module docstring: privacy proof).

    ``height``: number of quadtree levels (default :func:`default_height`, at most ``max_height``;
    never more than ⌈log₂ n⌉, where every leaf is a single cell). ``rounding``: see :data:`ROUNDINGS`.
    Budget keys ``count_depth_d``.
    """
    e, n = _canonical(edges, n_nodes)
    epsilon = positive("epsilon", epsilon)
    disc = _discrete(rng, discrete)
    full = math.ceil(math.log2(n)) if n > 1 else 0
    h = default_height(n, epsilon, mu=mu, max_height=max_height) if height is None else \
        min(whole_number("height", height, 0), full)
    hier = quadtree_hierarchy(n, h)
    return _tree_release("quadtree", hier, e, n, epsilon, {}, epsilon, rng, disc, _rounding(rounding),
                         {"height": h, "source": "Cormode et al., ICDE 2012 (quadtree, geometric budget, "
                                                 "least squares)"})


def kd_hybrid(edges: object, n_nodes: int, epsilon: float, *, rng: np.random.Generator | None = None,
              height: int | None = None, kd_levels: int | None = None,
              median_share: float = DEFAULT_MEDIAN_SHARE, mu: float = DEFAULT_MU,
              max_height: int = DEFAULT_MAX_HEIGHT, rounding: str = DEFAULT_ROUNDING, kd_first: bool = True,
              discrete: bool | None = None) -> GraphOutput:
    """kd-hybrid tree (Cormode et al., ICDE 2012): ``kd_levels`` kd levels with exponential-mechanism
    medians on top, then quadtree levels; geometric count budgets over depths, least-squares
    consistency, uniform placement in the leaves (module docstring: privacy proof).

    ``height``: quadtree-equivalent height H (nominal leaf area n²/4^H; default :func:`default_height`
    at the count budget). ``kd_levels``: default 2·⌈H/2⌉ — the top half of the tree is data-dependent,
    each quadtree level it replaces becoming two kd levels — followed by H − ⌈H/2⌉ quadtree levels.
    An explicit ``kd_levels`` k uses ⌈k/2⌉ of the H levels. ``median_share``: share of ε for the medians
    (split equally over the kd levels; none is spent when there are no kd levels). ``kd_first``: True is
    Cormode et al.'s order (private medians near the root, quadtree cuts below); False puts the
    quadtree levels on top and the kd levels below them. ``rounding``: see :data:`ROUNDINGS`.
    Budget keys ``median_level_t`` and ``count_depth_d``.
    """
    e, n = _canonical(edges, n_nodes)
    epsilon = positive("epsilon", epsilon)
    share = probability("median_share", median_share)
    disc = _discrete(rng, discrete)
    full = math.ceil(math.log2(n)) if n > 1 else 0
    if height is None:
        big_h = default_height(n, (1.0 - share) * epsilon, mu=mu, max_height=max_height)
    else:
        big_h = min(whole_number("height", height, 0), full)
    if kd_levels is None:
        kd = 2 * math.ceil(big_h / 2)
    else:
        kd = min(whole_number("kd_levels", kd_levels, 0), 2 * full)
    quad = max(big_h - math.ceil(kd / 2), 0)
    eps_median = share * epsilon if kd else 0.0
    eps_count = epsilon - eps_median
    budget = {f"median_level_{t}": eps_median / kd for t in range(kd)}
    hier = kd_hybrid_hierarchy(e, n, kd, quad, eps_median / kd if kd else 1.0, rng, kd_first=bool(kd_first))
    return _tree_release("kdh", hier, e, n, epsilon, budget, eps_count, rng, disc, _rounding(rounding),
                         {"height": big_h, "kd_levels": kd, "quad_levels": quad, "kd_first": bool(kd_first),
                          "median_epsilon": eps_median, "source": "Cormode et al., ICDE 2012 (kd-hybrid, "
                          "exponential-mechanism medians, geometric budget, least squares)"})


def random_uniform(edges: object, n_nodes: int, epsilon: float, *, rng: np.random.Generator | None = None,
                   discrete: bool | None = None) -> GraphOutput:
    """The DRF paper's "Random" baseline in edge-DP form: a noisy edge count m̃ = |E| + Lap(1/ε)
    (Δ₁ = 1), rounded and clipped to [0, n(n−1)/2], and m̃ edges placed uniformly at random among the
    upper-triangle cells (module docstring: why the whole matrix is one region). Budget key
    ``total_count``."""
    e, n = _canonical(edges, n_nodes)
    epsilon = positive("epsilon", epsilon)
    disc = _discrete(rng, discrete)
    root = tuple(np.array([x], dtype=np.int64) for x in (0, n, 0, n))
    noisy = measure_regions(root, EdgeCells(e[:, 0], e[:, 1], np.zeros(e.shape[0], dtype=np.int64)),
                            np.array([epsilon]), epsilon, rng, discrete=disc).values
    cells = n * (n - 1) // 2
    k = np.clip(np.rint(noisy), 0, cells).astype(np.int64)
    one = np.zeros(1, dtype=np.int64)
    full = np.full(1, n, dtype=np.int64)
    placed = place_uniform(one, full, one, full, k, _post_rng(rng))
    part = Partition(r0=one, r1=full, c0=one.copy(), c1=full.copy(), depth=one.copy(),
                     parent=np.full(1, -1, dtype=np.int64), leaf=np.ones(1, dtype=bool),
                     noisy=k.astype(np.float64))
    budget = {"total_count": epsilon}
    return GraphOutput(edges=_sorted_edges(placed), budget=budget, method="random", n_nodes=n, private=True,
                        label="edge-DP (random)", partition=part, order=None,
                        info={"noisy_edge_count": int(k[0]), "noise": _noise_text(rng, disc),
                              "source": "Gong et al. 2020, §4 'Random' (edge-DP form: one noisy total)"})


def noisy_degrees(edges: np.ndarray, n_nodes: int, epsilon: float, rng: np.random.Generator | None,
                  discrete: bool) -> np.ndarray:
    """d + Lap(2/ε) for the degree sequence d of canonical ``edges`` (Δ₁ = 2: one edge moves two
    degrees by 1): ε-DP. int64 for discrete noise, float64 otherwise."""
    n = whole_number("n_nodes", n_nodes, 1)
    epsilon = positive("epsilon", epsilon)
    e = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    return measure_degrees(e, n, epsilon, rng, discrete=discrete).values


def chung_lu(w: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A Chung–Lu graph with integer expected degrees ``w``: every pair {i, j}, i ≠ j, independently
    present with p_ij = min(1, w_i w_j / S), S = Σ w (Chung & Lu, Annals of Combinatorics 2002).
    Returns canonical edges (u < v, sorted). Exact, in O(n + S) expected time and memory:

    * "heavy" pairs, 2·w_i·w_j ≥ S (p ≥ 1/2): at most 2S of them, enumerated from the weights sorted in
      decreasing order (for each i the partners are a prefix; one ``searchsorted``), each kept with
      probability min(1, w_i w_j / S);
    * light pairs: a Poisson number M ~ Poi(c·S/2), c = 2 ln 2, of endpoint pairs drawn i.i.d. ∝ w gives
      every unordered pair {i, j} a Poisson(c·x_ij) multiplicity, x_ij = w_i w_j / S, independently
      across pairs; self-pairs and heavy pairs are discarded, repeats merged, and a distinct light pair
      kept with probability x_ij / (1 − e^{−c·x_ij}) (≤ 1 for x ≤ 1/2 since 1 − e^{−c x} is concave and
      equals x at 0 and 1/2): present with probability exactly x_ij.
    """
    w = np.asarray(w, dtype=np.int64)
    n = w.shape[0]
    if w.size and w.min() < 0:
        raise InputError("chung_lu: expected weights >= 0")
    s = int(w.sum())
    if s == 0 or n < 2:
        return np.zeros((0, 2), dtype=np.int64)
    # heavy pairs: 2 w_i w_j >= S, exact integer test
    order = np.argsort(-w, kind="stable")
    ws = w[order]
    pos = np.flatnonzero(ws > 0)
    thr = (s + 2 * ws[pos] - 1) // (2 * ws[pos])  # ceil(S / (2 w_a)): partner weight needed
    upto = np.searchsorted(-ws, -thr, side="right")  # positions b < upto have ws[b] >= thr
    cnt = np.maximum(upto - pos - 1, 0)
    a = np.repeat(pos, cnt)
    b = (np.arange(int(cnt.sum())) - np.repeat(np.cumsum(cnt) - cnt, cnt)) + a + 1
    hi_u, hi_v = order[a], order[b]
    ph = np.minimum(1.0, w[hi_u] * w[hi_v] / s)
    keep_h = rng.random(hi_u.shape[0]) < ph
    heavy = np.column_stack([np.minimum(hi_u, hi_v), np.maximum(hi_u, hi_v)])[keep_h]
    # light pairs: Poissonised endpoint sampling + thinning
    c = 2.0 * math.log(2.0)
    m = int(rng.poisson(c * s / 2.0))
    cum = np.cumsum(w)
    ends = np.searchsorted(cum, rng.integers(0, s, size=2 * m), side="right").reshape(-1, 2)
    u, v = np.minimum(ends[:, 0], ends[:, 1]), np.maximum(ends[:, 0], ends[:, 1])
    ok = (u != v) & (2 * w[u] * w[v] < s)
    codes = np.unique(u[ok] * np.int64(n) + v[ok])
    u, v = codes // n, codes % n
    x = w[u] * w[v] / s
    keep = rng.random(codes.shape[0]) * (-np.expm1(-c * x)) < x
    light = np.column_stack([u[keep], v[keep]])
    return _sorted_edges(np.concatenate([heavy, light]))


def degree_chung_lu(edges: object, n_nodes: int, epsilon: float, *, rng: np.random.Generator | None = None,
                    discrete: bool | None = None) -> GraphOutput:
    """Degree-sequence baseline: noisy degrees (Laplace 2/ε, ε-DP), post-processed by
    :func:`degree_postprocess`, and a Chung–Lu graph with those expected degrees (:func:`chung_lu`).
    Budget key ``degrees``; ``info["degrees"]`` holds the post-processed (released) degree sequence."""
    e, n = _canonical(edges, n_nodes)
    epsilon = positive("epsilon", epsilon)
    disc = _discrete(rng, discrete)
    w = degree_postprocess(noisy_degrees(e, n, epsilon, rng, disc))
    out = chung_lu(w, _post_rng(rng))
    return GraphOutput(edges=out, budget={"degrees": epsilon}, method="degree", n_nodes=n, private=True,
                       label="edge-DP (degree)", partition=None, order=None,
                       info={"degrees": w, "noise": _noise_text(rng, disc),
                              "source": "noisy degrees (Δ₁ = 2) + Chung & Lu 2002"})
