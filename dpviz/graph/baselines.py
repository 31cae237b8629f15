"""Edge-DP baselines for graph release: kd-hybrid, quadtree, Random and a degree-sequence (Chung–Lu) model.

Every function has the signature of :data:`dpviz.graph.release.METHODS`,
``f(edges, n_nodes, epsilon, *, rng=None, **options) -> GraphRelease``, and is ε-edge-DP.

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
  :func:`dpviz.tree.gmc.gmc` (Yang et al., "Generation Matrix: An Embeddable Matrix Representation for
  Hierarchical Trees", Theoretical Computer Science 2023, Alg. 2 with per-node variances d_i), which
  returns the same projection for any tree shape. The leaf estimates are turned into integer counts in
  [0, #upper cells] and that many edges are placed uniformly at random in each leaf
  (:func:`dpviz.graph.regions.place_uniform`). Integer counts: by default (``rounding="top-down"``,
  :func:`top_down_counts`) the root's estimate, rounded, is shared out level by level in proportion to
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
ideal one, as for :func:`dpviz.marginals.measure.exponential_mechanism` (the exact guarantee is for the
ideal distribution).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dpviz.core.accounting import positive, probability
from dpviz.core.noise import Noise
from dpviz.core.exponential import gumbel, uniform53
from dpviz.errors import InputError
from dpviz.graph.model import COUNT_SENSITIVITY, DEGREE_SENSITIVITY, canonical_edges
from dpviz.graph.regions import count_upper, place_uniform, upper_cells
from dpviz.graph.release import GraphRelease, Partition
from dpviz.tree.gmc import gmc, plan
from dpviz.tree.model import tree_from_parents

__all__ = [
    "DEFAULT_MAX_HEIGHT", "DEFAULT_MEDIAN_SHARE", "DEFAULT_MU", "DEFAULT_ROUNDING", "ROUNDINGS",
    "Hierarchy", "Measurement",
    "kd_hybrid", "quadtree", "random_uniform", "degree_chung_lu",
    "geometric_budgets", "default_height", "quadtree_hierarchy", "kd_hybrid_hierarchy",
    "private_medians", "measure_counts", "least_squares", "released_counts", "top_down_counts",
    "noisy_degrees", "degree_postprocess", "chung_lu",
]

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
[0, #upper cells]; ``"top-down"`` is :func:`top_down_counts` (keeps the estimated total)."""

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


def _whole(name: str, value: object, lo: int, hi: int | None = None) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise InputError(f"{name}: expected a whole number, got {value!r}")
    v = int(value)
    if v < lo or (hi is not None and v > hi):
        rng_txt = f">= {lo}" if hi is None else f"in {lo}..{hi}"
        raise InputError(f"{name}: expected a whole number {rng_txt}, got {v}")
    return v


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


def _laplace(true: np.ndarray, scales: np.ndarray, rng: np.random.Generator | None,
             discrete: bool, epsilon: float) -> tuple[np.ndarray, np.ndarray]:
    """``true`` + Laplace noise of per-entry ``scales`` and the exact per-entry noise variance.

    Discrete (int64, OS CSPRNG when ``rng`` is None) or continuous (float64, from ``rng``).
    ``epsilon`` only labels the :class:`Noise` (the scales are already calibrated)."""
    noise = Noise.laplace(epsilon, discrete=discrete)
    scales = np.asarray(scales, dtype=np.float64)
    eta = noise.draw(scales, true.shape, rng)
    variance = np.broadcast_to(np.asarray(noise.variance_at(scales), dtype=np.float64), true.shape).copy()
    return true + eta, variance


# --------------------------------------------------------------------------------------------- budgets


def geometric_budgets(fanouts: Sequence[int], epsilon: float) -> np.ndarray:
    """Per-depth count budgets ε_0..ε_L for a tree whose level d splits every node into ``fanouts[d]``.

    ε_d = ε · N_d^{1/6} / Σ_k N_k^{1/6}, N_d = Π_{k<d} fanouts[k] (the nominal number of nodes at
    depth d). This is Cormode et al. (ICDE 2012)'s geometric budget — ε_d proportional to the cube root of
    the number of depth-d nodes a range query touches, which in two dimensions grows as N_d^{1/2} — and
    for a quadtree (fan-out 4 everywhere) it is exactly their 2^{d/3}(2^{1/3} − 1) ε / (2^{(h+1)/3} − 1).
    The values sum to ε (to rounding).
    """
    epsilon = positive("epsilon", epsilon)
    log_n = np.concatenate([[0.0], np.cumsum(np.log(np.asarray(fanouts, dtype=np.float64)))])
    w = np.exp((log_n - log_n[-1]) / 6.0)  # shifted for range: only ratios matter
    return epsilon * w / w.sum()


def default_height(n_nodes: int, epsilon_count: float, *, mu: float = DEFAULT_MU,
                   max_height: int = DEFAULT_MAX_HEIGHT) -> int:
    """The quadtree height used when none is given: the largest h ≤ min(max_height, ⌈log₂ n⌉) whose
    nominal leaf area n²/4^h is at least μ times the noise standard deviation √2/ε_h of a leaf count
    (ε_h the geometric leaf budget of :func:`geometric_budgets`) — the DRF paper's Eq. (3) criterion.
    Depends only on public numbers (n, ε, μ, the cap)."""
    n = _whole("n_nodes", n_nodes, 1)
    epsilon_count = positive("epsilon", epsilon_count)
    mu = positive("mu", mu)
    cap = min(_whole("max_height", max_height, 0), math.ceil(math.log2(n)) if n > 1 else 0)
    best = 0
    for h in range(cap + 1):  # at most ~30 candidate heights: public arithmetic, no data
        eps_leaf = float(geometric_budgets([_QUAD] * h, epsilon_count)[-1])
        if n * n / 4.0**h >= mu * math.sqrt(2.0) / eps_leaf:
            best = h
    return best


# --------------------------------------------------------------------------------------------- hierarchy


@dataclass(frozen=True)
class Hierarchy:
    """Regions of a space-partitioning tree of the adjacency matrix, as parallel arrays (BFS order:
    parents before children, depth non-decreasing).

    Region i is rows [r0, r1) × columns [c0, c1); ``parent`` is -1 for the root; ``leaf`` marks regions
    without children. ``kinds[d]`` is how level d was split ("quad" or "kd"). Every region but the root
    of a one-vertex graph meets the upper triangle (children without an upper cell are never created).
    """

    r0: np.ndarray
    r1: np.ndarray
    c0: np.ndarray
    c1: np.ndarray
    depth: np.ndarray
    parent: np.ndarray
    leaf: np.ndarray
    kinds: tuple[str, ...]

    @property
    def n_regions(self) -> int:
        return int(self.r0.shape[0])

    @property
    def levels(self) -> int:
        """Number of planned split levels L (depths 0..L get a count budget)."""
        return len(self.kinds)

    @property
    def fanouts(self) -> tuple[int, ...]:
        return tuple(_KD if k == "kd" else _QUAD for k in self.kinds)

    def upper(self) -> np.ndarray:
        """Number of upper-triangle cells of every region."""
        return upper_cells(self.r0, self.r1, self.c0, self.c1)


def _children(r0: np.ndarray, r1: np.ndarray, c0: np.ndarray, c1: np.ndarray,
              row_cut: np.ndarray, col_cut: np.ndarray) -> tuple[np.ndarray, ...]:
    """Children of nodes cut at ``row_cut`` ∈ (r0, r1] and ``col_cut`` ∈ (c0, c1] (a cut equal to the
    upper bound means "not cut along that axis").

    Returns (node, slot, r0, r1, c0, c1) of the kept children, slot = 2·[lower rows] + [right columns]:
    children must be non-empty and meet the upper triangle (a child without an upper cell has count 0
    publicly and is not created)."""
    k = r0.shape[0]
    node = np.repeat(np.arange(k), 4)
    slot = np.tile(np.arange(4), k)
    bottom, right = slot >= 2, (slot % 2) == 1
    cr0 = np.where(bottom, row_cut[node], r0[node])
    cr1 = np.where(bottom, r1[node], row_cut[node])
    cc0 = np.where(right, col_cut[node], c0[node])
    cc1 = np.where(right, c1[node], col_cut[node])
    keep = (cr1 > cr0) & (cc1 > cc0) & (cc1 - 1 > cr0)  # non-empty and some cell (i, j) with i < j
    return node[keep], slot[keep], cr0[keep], cr1[keep], cc0[keep], cc1[keep]


def _build(n: int, kinds: Sequence[str], edges: np.ndarray | None, median_eps: float,
           rng: np.random.Generator | None) -> Hierarchy:
    """Grow the tree level by level (a loop over the L ≤ ~60 levels; each level is vectorised over its
    nodes). kd levels need ``edges`` (u < v) and spend ``median_eps`` per level on private medians.

    A region that cannot be cut any more (one row and one column) is carried down unchanged as its own
    only child: every depth is measured with its own budget anyway, so the region's count is measured
    again instead of that budget going unused, and all leaves end at depth L."""
    r0, r1, c0, c1 = ([np.array([a], dtype=np.int64)] for a in (0, n, 0, n))
    depth = [np.zeros(1, dtype=np.int64)]
    parent = [np.full(1, -1, dtype=np.int64)]
    first = 0  # index of the first node of the current frontier
    track = edges is not None and "kd" in kinds
    where = np.zeros(edges.shape[0] if track else 0, dtype=np.int64)  # frontier-local node of every edge
    total = 1
    kd_seen = 0
    for d, kind in enumerate(kinds):
        fr0, fr1, fc0, fc1 = r0[-1], r1[-1], c0[-1], c1[-1]
        k = fr0.shape[0]
        if k == 0:
            break
        hgt, wid = fr1 - fr0, fc1 - fc0
        if kind == "quad":
            row_cut = np.where(hgt >= 2, (fr0 + fr1) // 2, fr1)
            col_cut = np.where(wid >= 2, (fc0 + fc1) // 2, fc1)
        elif kind == "kd":
            by_rows = np.where(kd_seen % 2 == 0, hgt >= 2, wid < 2) & (hgt >= 2)
            by_cols = ~by_rows & (wid >= 2)
            lo = np.where(by_rows, fr0, fc0)
            hi = np.where(by_rows, fr1, fc1)
            split = by_rows | by_cols
            cut = hi.copy()
            idx = np.flatnonzero(split)
            if idx.size:
                coord = np.where(by_rows[where], edges[:, 0], edges[:, 1]) if track else np.zeros(0, np.int64)
                sel = split[where] if track else np.zeros(0, bool)
                # the points of every node to split, sorted by (node, coordinate along its axis)
                pn, pc = where[sel], coord[sel]
                order = np.lexsort((pc, pn))
                pn, pc = pn[order], pc[order]
                local = np.full(k, -1, dtype=np.int64)
                local[idx] = np.arange(idx.size)
                counts = np.bincount(local[pn], minlength=idx.size)
                cut[idx] = private_medians(pc, counts, lo[idx], hi[idx], median_eps, rng)
            row_cut = np.where(by_rows, cut, fr1)
            col_cut = np.where(by_cols, cut, fc1)
            kd_seen += 1
        else:  # pragma: no cover - internal
            raise ValueError(kind)
        node, slot, nr0, nr1, nc0, nc1 = _children(fr0, fr1, fc0, fc1, row_cut, col_cut)
        if track:
            child_of = np.full((k, 4), -1, dtype=np.int64)
            child_of[node, slot] = np.arange(node.size)
            pslot = 2 * (edges[:, 0] >= row_cut[where]) + (edges[:, 1] >= col_cut[where])
            where = child_of[where, pslot]
            if where.size and where.min() < 0:  # pragma: no cover - an edge always lies in a kept child
                raise AssertionError("an edge fell outside every child region")
        r0.append(nr0)
        r1.append(nr1)
        c0.append(nc0)
        c1.append(nc1)
        depth.append(np.full(node.size, d + 1, dtype=np.int64))
        parent.append(first + node)
        first = total
        total += node.size
    par = np.concatenate(parent)
    leaf = np.ones(total, dtype=bool)
    leaf[par[par >= 0]] = False
    return Hierarchy(np.concatenate(r0), np.concatenate(r1), np.concatenate(c0), np.concatenate(c1),
                     np.concatenate(depth), par, leaf, tuple(kinds))


def quadtree_hierarchy(n_nodes: int, height: int) -> Hierarchy:
    """The data-independent quadtree of the n × n adjacency matrix with ``height`` levels (children at
    the midpoints; an axis of length 1 is not cut; children without an upper-triangle cell dropped)."""
    n = _whole("n_nodes", n_nodes, 1)
    h = _whole("height", height, 0, 62)
    return _build(n, ["quad"] * h, None, 0.0, None)


def kd_hybrid_hierarchy(edges: np.ndarray, n_nodes: int, kd_levels: int, quad_levels: int,
                        median_epsilon: float, rng: np.random.Generator | None, *,
                        kd_first: bool = True) -> Hierarchy:
    """kd-hybrid tree: ``kd_levels`` kd levels at private medians (``median_epsilon`` each, see
    :func:`private_medians`), then ``quad_levels`` quadtree levels (``kd_first=False``: the quadtree
    levels first). ``edges``: canonical (u < v)."""
    n = _whole("n_nodes", n_nodes, 1)
    kd_part = ["kd"] * _whole("kd_levels", kd_levels, 0, 62)
    quad_part = ["quad"] * _whole("quad_levels", quad_levels, 0, 62)
    kinds = kd_part + quad_part if kd_first else quad_part + kd_part
    eps = positive("median epsilon", median_epsilon) if kd_levels else 0.0
    return _build(n, kinds, np.asarray(edges, dtype=np.int64).reshape(-1, 2), eps, rng)


# --------------------------------------------------------------------------------------------- medians


def private_medians(coords: np.ndarray, counts: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                    epsilon: float, rng: np.random.Generator | None) -> np.ndarray:
    """Private median cuts of K nodes by the exponential mechanism (McSherry & Talwar, FOCS 2007), as in
    Cormode et al. (ICDE 2012): node k picks s ∈ {lo_k+1, …, hi_k−1} with probability
    ∝ exp(ε·u_k(s)/(2Δu)), u_k(s) = −|2·rank_k(s) − c_k|, Δu = 1 (module docstring).

    ``coords``: the nodes' point coordinates along their split axis, concatenated node by node, each
    node's block sorted and inside [lo_k, hi_k); ``counts[k]`` = c_k its length. Needs hi_k − lo_k ≥ 2.

    rank_k is constant on the c_k + 1 runs s ∈ [x_j + 1, x_{j+1}] (x_0 = −∞, x_{c+1} = +∞), so the
    mechanism picks a run j with weight len_j · exp(−ε|2j − c|/2) (Gumbel-max over the runs of all nodes
    at once: O(Σ c_k + K), never O(hi − lo)) and then a uniform position inside it. Random bits from
    ``rng``, or from the OS CSPRNG when ``rng`` is None.
    """
    counts = np.asarray(counts, dtype=np.int64)
    lo = np.asarray(lo, dtype=np.int64)
    hi = np.asarray(hi, dtype=np.int64)
    coords = np.asarray(coords, dtype=np.int64)
    kk = counts.shape[0]
    if kk == 0:
        return np.zeros(0, dtype=np.int64)
    if np.any(hi - lo < 2):
        raise InputError("private_medians: every node needs at least two positions along its axis")
    if coords.shape[0] != int(counts.sum()):
        raise InputError("private_medians: coords must hold counts.sum() coordinates")
    off = np.concatenate([[0], np.cumsum(counts)[:-1]])
    nseg = counts + 1
    seg_start = np.concatenate([[0], np.cumsum(nseg)[:-1]])
    node = np.repeat(np.arange(kk), nseg)
    j = np.arange(int(nseg.sum())) - seg_start[node]
    c = counts[node]
    pts = coords if coords.size else np.zeros(1, dtype=np.int64)
    last = pts.shape[0] - 1
    prev = pts[np.clip(off[node] + j - 1, 0, last)]
    nxt = pts[np.clip(off[node] + j, 0, last)]
    a = np.where(j >= 1, np.maximum(lo[node] + 1, prev + 1), lo[node] + 1)
    b = np.where(j < c, np.minimum(hi[node] - 1, nxt), hi[node] - 1)
    length = b - a + 1
    ok = length > 0
    with np.errstate(divide="ignore"):
        logw = np.where(ok, np.log(np.maximum(length, 1)) - 0.5 * epsilon * np.abs(2 * j - c), -np.inf)
    key = np.where(ok, logw + gumbel(logw.shape[0], rng), -np.inf)
    best = np.maximum.reduceat(key, seg_start)
    hit = np.flatnonzero(key == best[node])
    _, first = np.unique(node[hit], return_index=True)
    pick = hit[first]
    u = uniform53(kk, rng)
    offset = np.minimum(np.floor(u * length[pick]).astype(np.int64), length[pick] - 1)
    return a[pick] + offset


# --------------------------------------------------------------------------------------------- counts


@dataclass(frozen=True)
class Measurement:
    """Noisy counts of every region of a hierarchy, their exact noise variances, and the budget by depth."""

    noisy: np.ndarray
    variance: np.ndarray
    epsilon_by_depth: np.ndarray


def measure_counts(h: Hierarchy, edges: np.ndarray, epsilon_count: float,
                   rng: np.random.Generator | None, discrete: bool) -> Measurement:
    """Noisy upper-triangle edge counts of every region: depth d gets Laplace(1/ε_d) with the geometric
    budgets ε_d of :func:`geometric_budgets` over depths 0..L (Δ₁ = 1 per level: regions of one depth are
    disjoint). True counts by :func:`dpviz.graph.regions.count_upper` (sorted edge coordinates)."""
    eps_d = geometric_budgets(h.fanouts, epsilon_count)
    e = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    true = np.asarray(count_upper(e[:, 0], e[:, 1], h.r0, h.r1, h.c0, h.c1), dtype=np.int64)
    noisy, var = _laplace(true if discrete else true.astype(np.float64), COUNT_SENSITIVITY / eps_d[h.depth], rng,
                          discrete, epsilon_count)
    return Measurement(noisy, var, eps_d)


def least_squares(parent: np.ndarray, noisy: np.ndarray, variance: np.ndarray) -> np.ndarray:
    """The consistent (every parent = sum of its children) estimate closest to ``noisy`` in the
    inverse-variance-weighted least-squares sense: Cormode et al. (ICDE 2012)'s least-squares
    post-processing for per-level budgets, for any tree shape, computed in O(nodes) by
    :func:`dpviz.tree.gmc.gmc` (GLS v̄ = ṽ − D M (MᵀDM)⁻¹ Mᵀ ṽ, D = diag(variance)).
    ``parent``: -1 for the root, in any order."""
    parent = np.asarray(parent, dtype=np.int64)
    y = np.asarray(noisy, dtype=np.float64)
    d = np.asarray(variance, dtype=np.float64)
    if not (parent.shape == y.shape == d.shape) or parent.ndim != 1:
        raise InputError("least_squares: parent, noisy and variance must be 1-d arrays of one length")
    tree = tree_from_parents(parent)
    out = np.empty_like(y)
    out[tree.order] = gmc(plan(tree, d[tree.order]), y[tree.order])
    return out


def released_counts(h: Hierarchy, leaf_counts: np.ndarray) -> np.ndarray:
    """Count of every region implied by ``leaf_counts`` (one per leaf, in region order): the number of
    released edges inside it. One bottom-up pass per depth (O(levels) vectorised steps)."""
    out = np.zeros(h.n_regions, dtype=np.int64)
    out[h.leaf] = leaf_counts
    for d in range(int(h.depth.max(initial=0)), 0, -1):
        idx = np.flatnonzero(h.depth == d)
        np.add.at(out, h.parent[idx], out[idx])
    return out


def top_down_counts(parent: np.ndarray, depth: np.ndarray, leaf: np.ndarray, cap: np.ndarray,
                    estimate: np.ndarray) -> np.ndarray:
    """Integer leaf counts that keep the estimated total: a top-down, mass-preserving rounding of a
    consistent tree estimate (any tree given as parallel arrays: ``parent`` −1 at the root, ``depth``
    0 at the root, ``leaf`` flags, ``cap`` = the upper-triangle cells of each region).

    The root gets T = round(estimate) clipped to [0, cap]; each node's integer target T_p is shared among
    its children c with weights w_c = estimate_c clipped to [0, cap_c]: x_c = T_p·w_c/W if T_p ≤ W = Σw,
    else x_c = w_c + (T_p − W)(cap_c − w_c)/(cap_p − W) (so x_c ≤ cap_c and Σ x_c = T_p); then ⌊x_c⌋
    plus one for the T_p − Σ⌊x⌋ children with the largest fractional parts. Rounding and clipping every
    leaf instead adds the positive part of the noise, about b/2 edges per empty leaf of noise scale b,
    which multiplies the edge count of a sparse graph; here the released total stays at the root's
    estimate. Post-processing only; one vectorised step per depth. Returns one count per leaf, in
    region order."""
    parent = np.asarray(parent, dtype=np.int64)
    depth = np.asarray(depth, dtype=np.int64)
    leaf = np.asarray(leaf, dtype=bool)
    cap = np.asarray(cap, dtype=np.int64)
    est = np.asarray(estimate, dtype=np.float64)
    size = parent.shape[0]
    target = np.zeros(size, dtype=np.int64)
    roots = np.flatnonzero(depth == 0)
    target[roots] = np.clip(np.rint(est[roots]), 0, cap[roots]).astype(np.int64)
    for d in range(1, int(depth.max(initial=0)) + 1):  # one vectorised step per depth
        kids = np.flatnonzero(depth == d)
        par = parent[kids]
        w = np.clip(est[kids], 0.0, cap[kids].astype(np.float64))
        big_w = np.bincount(par, weights=w, minlength=size)[par]
        t = target[par].astype(np.float64)
        room = np.maximum(cap[par] - big_w, 0.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            x = np.where(t <= big_w, np.where(big_w > 0, t * w / big_w, 0.0),
                         w + np.where(room > 0, (t - big_w) * (cap[kids] - w) / room, 0.0))
        x = np.clip(x, 0.0, cap[kids])
        base = np.floor(x).astype(np.int64)
        short = target[par] - np.bincount(par, weights=base, minlength=size).astype(np.int64)[par]
        frac = np.where(base < cap[kids], x - base, -1.0)
        order = np.lexsort((-frac, par))  # by parent, largest fractional part first
        ps = par[order]
        rank = np.arange(ps.size) - np.searchsorted(ps, ps, side="left")
        bump = np.zeros(kids.size, dtype=np.int64)
        bump[order] = ((rank < short[order]) & (base[order] < cap[kids][order])).astype(np.int64)
        target[kids] = base + bump
    return target[leaf]


def _tree_release(method: str, h: Hierarchy, edges: np.ndarray, n: int, epsilon: float,
                  budget: dict[str, float], epsilon_count: float, rng: np.random.Generator | None,
                  discrete: bool, rounding: str, info: dict) -> GraphRelease:
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
    part = Partition(r0=h.r0, r1=h.r1, c0=h.c0, c1=h.c1, depth=h.depth, parent=h.parent, leaf=h.leaf,
                     noisy=released.astype(np.float64))
    info = {**info, "rounding": rounding, "levels": list(h.kinds), "n_regions": h.n_regions,
            "n_leaves": int(leaves.size),
            "count_epsilon_by_depth": meas.epsilon_by_depth.tolist(), "noise": _noise_text(rng, discrete),
            "estimate": est}
    _check_budget(budget, epsilon)
    return GraphRelease(edges=_sorted_edges(placed), budget=budget, method=method, n_nodes=n, private=True,
                        label=f"edge-DP ({method})", partition=part, order=None, info=info)


def _check_budget(budget: dict[str, float], epsilon: float) -> None:
    if abs(sum(budget.values()) - epsilon) > 1e-9 * max(1.0, epsilon):  # pragma: no cover - internal
        raise AssertionError(f"budget sums to {sum(budget.values())!r}, not {epsilon!r}")


# --------------------------------------------------------------------------------------------- methods


def quadtree(edges: object, n_nodes: int, epsilon: float, *, rng: np.random.Generator | None = None,
             height: int | None = None, mu: float = DEFAULT_MU, max_height: int = DEFAULT_MAX_HEIGHT,
             rounding: str = DEFAULT_ROUNDING, discrete: bool | None = None) -> GraphRelease:
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
        min(_whole("height", height, 0), full)
    hier = quadtree_hierarchy(n, h)
    return _tree_release("quadtree", hier, e, n, epsilon, {}, epsilon, rng, disc, _rounding(rounding),
                         {"height": h, "source": "Cormode et al., ICDE 2012 (quadtree, geometric budget, "
                                                 "least squares)"})


def kd_hybrid(edges: object, n_nodes: int, epsilon: float, *, rng: np.random.Generator | None = None,
              height: int | None = None, kd_levels: int | None = None,
              median_share: float = DEFAULT_MEDIAN_SHARE, mu: float = DEFAULT_MU,
              max_height: int = DEFAULT_MAX_HEIGHT, rounding: str = DEFAULT_ROUNDING, kd_first: bool = True,
              discrete: bool | None = None) -> GraphRelease:
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
        big_h = min(_whole("height", height, 0), full)
    if kd_levels is None:
        kd = 2 * math.ceil(big_h / 2)
    else:
        kd = min(_whole("kd_levels", kd_levels, 0), 2 * full)
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
                   discrete: bool | None = None) -> GraphRelease:
    """The DRF paper's "Random" baseline in edge-DP form: a noisy edge count m̃ = |E| + Lap(1/ε)
    (Δ₁ = 1), rounded and clipped to [0, n(n−1)/2], and m̃ edges placed uniformly at random among the
    upper-triangle cells (module docstring: why the whole matrix is one region). Budget key
    ``total_count``."""
    e, n = _canonical(edges, n_nodes)
    epsilon = positive("epsilon", epsilon)
    disc = _discrete(rng, discrete)
    true = np.array([e.shape[0]], dtype=np.int64)
    noisy, _ = _laplace(true if disc else true.astype(np.float64), np.array([COUNT_SENSITIVITY / epsilon]), rng, disc,
                        epsilon)
    cells = n * (n - 1) // 2
    k = np.clip(np.rint(noisy), 0, cells).astype(np.int64)
    one = np.zeros(1, dtype=np.int64)
    full = np.full(1, n, dtype=np.int64)
    placed = place_uniform(one, full, one, full, k, _post_rng(rng))
    part = Partition(r0=one, r1=full, c0=one.copy(), c1=full.copy(), depth=one.copy(),
                     parent=np.full(1, -1, dtype=np.int64), leaf=np.ones(1, dtype=bool),
                     noisy=k.astype(np.float64))
    budget = {"total_count": epsilon}
    return GraphRelease(edges=_sorted_edges(placed), budget=budget, method="random", n_nodes=n, private=True,
                        label="edge-DP (random)", partition=part, order=None,
                        info={"noisy_edge_count": int(k[0]), "noise": _noise_text(rng, disc),
                              "source": "Gong et al. 2020, §4 'Random' (edge-DP form: one noisy total)"})


def noisy_degrees(edges: np.ndarray, n_nodes: int, epsilon: float, rng: np.random.Generator | None,
                  discrete: bool) -> np.ndarray:
    """d + Lap(2/ε) for the degree sequence d of canonical ``edges`` (Δ₁ = 2: one edge moves two
    degrees by 1): ε-DP. int64 for discrete noise, float64 otherwise."""
    n = _whole("n_nodes", n_nodes, 1)
    epsilon = positive("epsilon", epsilon)
    e = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    deg = np.bincount(e.ravel(), minlength=n).astype(np.int64)
    noisy, _ = _laplace(deg if discrete else deg.astype(np.float64), np.full(n, DEGREE_SENSITIVITY / epsilon), rng,
                        discrete, epsilon)
    return noisy


def degree_postprocess(noisy: np.ndarray) -> np.ndarray:
    """Noisy degrees → a plausible degree sequence: rounded, clipped to [0, n−1], and with an even sum
    (one is taken from the largest degree if the sum is odd). Post-processing only."""
    x = np.asarray(noisy, dtype=np.float64)
    n = x.shape[0]
    w = np.clip(np.rint(x), 0, max(n - 1, 0)).astype(np.int64)
    if int(w.sum()) % 2:
        w[int(np.argmax(w))] -= 1
    return w


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
                    discrete: bool | None = None) -> GraphRelease:
    """Degree-sequence baseline: noisy degrees (Laplace 2/ε, ε-DP), post-processed by
    :func:`degree_postprocess`, and a Chung–Lu graph with those expected degrees (:func:`chung_lu`).
    Budget key ``degrees``; ``info["degrees"]`` holds the post-processed (released) degree sequence."""
    e, n = _canonical(edges, n_nodes)
    epsilon = positive("epsilon", epsilon)
    disc = _discrete(rng, discrete)
    w = degree_postprocess(noisy_degrees(e, n, epsilon, rng, disc))
    out = chung_lu(w, _post_rng(rng))
    return GraphRelease(edges=out, budget={"degrees": epsilon}, method="degree", n_nodes=n, private=True,
                        label="edge-DP (degree)", partition=None, order=None,
                        info={"degrees": w, "noise": _noise_text(rng, disc),
                              "source": "noisy degrees (Δ₁ = 2) + Chung & Lu 2002"})
