"""DRF — decomposition and reconstruction via a flattening kd-tree — as published, and made edge-DP.

Source: G. Gong, C. Lessoy, C. Lu and K. Lv, "Differential Privacy Spatial Decomposition via Flattening
Kd-Tree", International Journal of Performability Engineering 16(6), 2020 (``the paper``; §3). The
flattening kd-tree is from G. Cormode, C. Procopiuc, E. Shen, D. Srivastava and T. Yu, "Differentially
Private Spatial Decompositions", ICDE 2012; the reconstruction idea from R. Chen, B. C. M. Fung,
P. S. Yu and B. C. Desai, "Correlated Network Data Publication via Differential Privacy", VLDB Journal
23(4), 2014 (DER).

What the paper does (§3, four steps)
====================================
Budget ε = ε_D^d + ε_D^c + ε_R, split 3 : 7 : 3 (§3, last paragraph).

Step 1 (Alg. 1, Def. 6, Thm. 3, Eq. 1) — *adjusting vertex labelling*. Start from a random labelling L;
repeat t times: draw a candidate set of swaps (a random matching: "each point involves only one
exchange, and each iteration only needs to exchange ⌊|V|/2⌋ times"), and swap the labels of (v_m, v_n)
when (deg_m − deg_n)(|v_m − ⌊|V|/2⌋| − |v_n − ⌊|V|/2⌋|) > 0 (Eq. 2). A labelling is measured by
q(L) = Σ_ij A_ij (|i − c| + |j − c|) (Eq. 1, c = ⌊|V|/2⌋), which for a symmetric A without self-loops
is 2 Σ_i deg(i)|i − c|; every such swap lowers it (Thm. 3). High-degree vertices move to the centre,
so dense and sparse areas form in the adjacency matrix. "No privacy budget is allocated in this part".

Step 2 (Alg. 2, Eqs. 3–5) — *decomposition*. Each level of the flattening kd-tree splits a region
horizontally, then each half vertically (four children). h_max is the largest integer with
∛2 (2^h)² − (2^h)^{5/3} ≤ (∛2 − 1)|V|² ε_D^c / (μ √2 GS(f)) (Eq. 3: the leaf area |V|²/4^h at least μ
noise standard deviations). Split points lie in the [1/4, 3/4] band of the region's side and are drawn
by the exponential mechanism (Eq. 5) with the utility q(R, p) = max den(R') − min den(R') over the two
parts (Eq. 4), sensitivity GS(q) = 4/S (S = area of R), budget ε_D^d/(2h_max) per split. Every node of
depth i gets a noisy count with the geometric budget ε_i = 2^{i/3}(∛2 − 1)ε_D^c / (2^{(h_max+1)/3} − 1),
i = 0..h_max (Σ_i ε_i = ε_D^c). A node stops when it is dense (den(R) ≥ 80%), sparse (noisy count
≤ 80% of |V|²/4^{h_max+1}) or at depth h_max.

Step 3 (Eq. 6) — *post-processing*. A leaf that stopped at depth i < h_max did not use the count budget
of the deeper levels; its count is recomputed with budget Σ_{j=i}^{h_max} ε_j.

Step 4 — *reconstruction*. In each leaf with true count c and noisy count c̃, the exponential mechanism
(budget ε_R, GS = 1) picks q ∈ [0, min(c, c̃)] with probability ∝ exp(q ε_R / 2); q of the leaf's
true ones are copied into Ã at random, and c̃ − q ones are put on random 0 elements of A off the main
diagonal.

Our check of the published algorithm: it is not edge-DP
=======================================================
Unit of privacy: one edge; neighbouring graphs G, G' = G + {u, v} on the same public vertex set.

1. **Step 1 spends no budget, yet its output depends on the data.** Alg. 1 is a function of the true
   degree sequence (and of data-independent randomness). Adding {u, v} raises deg_u and deg_v by one,
   which changes the sign of Eq. 2 for every candidate pair (u, w) with deg_w = deg_u + 1 (from
   positive or negative to zero) or deg_w = deg_u (from zero to non-zero): for the same random matchings
   a swap happens in one world and not in the other. Take w with deg_w = deg_u + 1 in G: the event
   "u is nearer the centre than w" has a probability that goes to 0 as t grows in G, but about 1/2 in
   G', where the two degrees are equal and ties are never swapped (their order stays that of the random
   initial labelling). The layout — released as ``order`` and visible through which vertices land in dense regions —
   therefore has an unbounded privacy loss. The paper's argument ("the characteristic
   and structure of the graph will not change") is about isomorphism, not privacy. **Confirmed.**
2. **Step 4 publishes true edges.** The candidate range [0, min(c, c̃)] depends on the true count c, and
   the selected q true ones are copied to the output. Take a sparse leaf with Z zero cells and c small:
   without {u, v} its cell is set only if it is among the c̃ − q random zeros (probability
   (c̃ − q)/Z, often 0 because q = c̃ whenever c̃ ≤ c); with {u, v} the exponential mechanism puts most mass
   on q = min(c, c̃) and the cell is kept with probability ≈ q/c ≈ 1. The ratio is ≈ Z/(c̃ − q) or
   infinite, far above e^ε. The "GS(q) = 1" only bounds the choice of q, not the copying of the data.
   **Confirmed** (``dpviz.audit`` measures it).
3. **The symmetric matrix doubles the count sensitivity.** One edge is two cells, (u, v) and (v, u). A
   region that contains both — any region that straddles the diagonal around them, the root first of
   all — changes its count by 2, so Laplace noise of scale 1/ε_i (the paper's GS(f) = 1) is only
   2ε_i-DP there; for the same reason the split utility (Eq. 4) has sensitivity 8/S, not 4/S, when both
   cells fall in one part. **Confirmed.**

Further points found while implementing (all kept in ``drf_published``, which is faithful):

4. The dense stop rule uses the true density den(R) (Def. 5 is defined from A; only the sparse rule is
   said to use "the noise count"): the shape of the tree depends on the data without noise.
5. Step 3 re-measures an early leaf at depth i with Σ_{j=i}^{h} ε_j although its depth-i count (budget
   ε_i) was already released and used by the stop rules: that leaf's path spends ε_D^c + ε_i.
6. The split budget is stated three ways: "ε_D^d / 2^{h_max}" per split (text), ε_D^d / (2 h_max) per
   split (Eq. 5) and Σ_{i=0}^{h_max} ε_D^d / (2 h_max) (Eq. 7, which sums to (h_max + 1) ε_D^d /(2 h_max),
   not ε_D^d). We read Eq. 5: 2 h_max sequential splits on every root-to-leaf path, ε_D^d/(2 h_max) each.

Conclusion: the published DRF is not ε-edge-DP for any finite ε (1 and 2 alone give unbounded loss).
``drf_published`` implements it faithfully for comparison with the paper only: ``private=False``,
``label = NOT_PRIVATE_LABEL``, and its ``budget`` is the paper's nominal accounting, not a guarantee.

The private version, ``drf_dp`` (the default method)
====================================================
The same four steps, with every data access accounted. The three names of the paper's split keep their
shares (default 3 : 7 : 3) but cover:

* ε_R → **relabelling** (Step 4 no longer needs a budget: it is post-processing), spent on noisy degrees;
* ε_D^d → **split points**, 2 h_max exponential-mechanism stages of ε_s = ε_D^d / (2 h_max);
* ε_D^c → **counts**, geometric per depth (the paper's ε_i, i = 0..h_max).

Steps:

1. d̃ = deg(G) + Lap(2/ε_R)^|V| (discrete Laplace in a release). Alg. 1 runs on d̃ (q(L) of Eq. 1 is
   evaluated on d̃ and reported per iteration).
2. The decomposition counts the **upper triangle** of the relabelled matrix: cell (i, j) with i < j,
   one cell per edge. Regions entirely below the diagonal hold no cell; their count is 0 on every graph
   and is released exactly, at no cost. Split utility (Eq. 4 on the upper triangle):
   q(R, p) = |c(R'_1)/N_1 − c(R'_2)/N_2| with N_k = max(U(R'_k), U(R)/16), U = number of upper cells
   (the floor U(R)/16 is the paper's "leaf area at least S/16", needed because a part that touches the
   diagonal can have very few upper cells). Stop rules use only noisy counts and public geometry:
   sparse (noisy ≤ 0.8 |V|²/4^{h_max+1}, as published), dense (noisy / U ≥ 0.8), depth h_max, a side
   shorter than 2 (no split in the band), or U = 0.
3. A leaf that stopped at depth i < h_max is counted again with the unspent count budget
   ε'_i = Σ_{j>i} ε_j, and this fresh count replaces the first (Eq. 6: "its noise count is
   recalculated"). The first count decided the stop, so it is biased given the tree (a sparse leaf is
   one whose noise came out low): averaging it in shifted the leaf total by about −29,000 edges on a
   graph with 10^6 vertices and 3,000 edges. Then (``estimator="project"``, the default) the leaf estimates y are
   replaced by their Euclidean projection onto {0 ≤ x ≤ U(leaf), Σ x = T}, x = clip(y − τ, 0, U), where
   T is the inverse-variance combination of the root's noisy count and Σ y (both unbiased for |E|, up
   to the root's negligible "did not stop" selection). Clipping each leaf at 0 alone
   (``estimator="clip"``, the paper's DRF-2 reading) adds about b/2 false edges to every empty leaf of
   noise scale b — on hep-th at ε = 1 about 30,000 edges for 15,751 (μ = 4; ~135,000 with μ = 1); the
   projection keeps the released total (~15,800). Both are post-processing of released numbers.
4. Reconstruction: k = floor(x) + Bernoulli(frac(x)) (``clip``: round(x)) distinct upper cells drawn
   uniformly in each leaf (:func:`dpviz.graph.regions.place_uniform`). No true edge is ever placed.

Proof of the accounting (ε = ε_R + ε_D^d + ε_D^c)
-------------------------------------------------
Fix neighbours G and G' = G + e, e = {u, v}. Write the run as a sequence of stages, each drawing its
randomness afresh given everything released before it (the transcript prefix o_<k). The likelihood of
a transcript o factorises as Π_k Pr[o_k | o_<k], so Pr_G[o] / Pr_G'[o] ≤ exp(Σ_k b_k(o_<k)) whenever
stage k's conditional likelihood ratio is at most exp(b_k(o_<k)). It suffices to show
Σ_k b_k ≤ ε on every transcript (then the mechanism is ε-DP; post-processing does not change that).

* Relabelling: deg(G') − deg(G) = 1_u + 1_v, so the degree vector has L1 sensitivity exactly 2 (1 per
  endpoint, two endpoints) and Lap(2/ε_R) noise on it is ε_R-DP (Dwork, McSherry, Nissim & Smith,
  TCC 2006; the discrete Laplace on integers likewise: Canonne, Kamath & Steinke, NeurIPS 2020).
  b = ε_R. The order is post-processing of d̃ with data-independent randomness; given the order, G and
  G' differ in exactly one upper cell e* = (min(π u, π v), max(π u, π v)).
* Count stage at depth j: the regions alive at depth j are disjoint, so e* lies in at most one of them
  and the count vector has L1 sensitivity 1 (upper triangle; on the paper's symmetric matrix it would be
  2 — problem 3): Lap(1/ε_j) noise gives b = ε_j if e* is in an alive region of depth j, else 0.
* Split stage (rows or columns) at depth j: the split of region R depends only on the counts of R's
  parts; e* is in at most one region, and there it changes exactly one of c(R'_1), c(R'_2) by 1, so
  |Δq(R, p)| ≤ 1/N_k ≤ Δ(R) := max over candidates p and parts k with U(R'_k) > 0 of 1/N_k (a public
  function of the geometry, ≤ 16/U(R); = 4/U(R) for regions above the diagonal, as in the paper). The
  exponential mechanism with ε_s and Δ(R) is ε_s-DP (McSherry & Talwar, FOCS 2007); the other regions'
  selections do not depend on e*. b = ε_s if e* is in an alive region, else 0 (parallel composition).
* Step 3 stage: the early leaves are disjoint; e* is in at most one leaf ℓ, stopped at depth i(ℓ), which
  is counted again with ε'_{i(ℓ)}: b = ε'_{i(ℓ)} (or 0). (Discarding the first count is
  post-processing; it was released and is still paid for.)

Step 3's projection and rounding use only released numbers (post-processing).

On any transcript, e* lies in the alive region of every depth j ≤ i, where i is the depth of the leaf
that finally contains it (fixed by the transcript), and in no alive region deeper. So
Σ_k b_k ≤ ε_R + Σ_{j≤i} ε_j + ε'_i + 2 min(i, h_max) ε_s ≤ ε_R + ε_D^c + ε_D^d = ε, since
Σ_{j≤i} ε_j + Σ_{j>i} ε_j = ε_D^c and at most 2 h_max split stages lie above depth h_max. (The
same bound follows from reading Step 3 as one extra ε_j-measurement of the early leaves at every depth
j > i, where they are disjoint from the alive regions of depth j: parallel composition per depth,
sequential composition over depths — the accountant lists it that way.) h_max (Eq. 3), the band, the
thresholds and the floor depend only on |V|, ε and the split, which are public. Reconstruction reads
only the released partition, estimates and order, with data-independent randomness: post-processing.

Numerics: every noisy count and degree is drawn by :func:`dpviz.core.protocols.measure` (the queries are
:class:`dpviz.graph.strategy.RegionCounts` and :class:`~dpviz.graph.strategy.DegreeSequence`). In a release
(``rng=None``) that is discrete Laplace noise from the OS CSPRNG
(:func:`dpviz.core.samplers.discrete_laplace`, TV error ≤ 7.9e-17 per draw), the exponential mechanism
draws its Gumbel variates from the OS CSPRNG (:mod:`dpviz.core.exponential`, float64 caveat there);
post-processing (Alg. 1 swaps, placement) uses a Generator seeded from OS entropy. In a simulation
(``rng`` given) everything comes from ``rng`` and the noise is continuous Laplace
(:class:`dpviz.core.noise.Noise`).

Readings where the paper is vague (each is an option)
-----------------------------------------------------
* t of Alg. 1 is not given: ``iterations=100`` (q(L) is within ~1.5% of its minimum after 100 random
  matchings on a Zipf(2.2) degree sequence of 8,361 vertices, within ~0.1% after 1,000).
* μ of Eq. 3 is not given ("the size of the leaf area is greater than μ times the noise standard
  deviation"): ``mu=4``. With drf-dp at ε = 1 on hep-th, email-Enron and the power grid, μ ∈ {2, 4}
  gave the lowest degree-distribution KL on average over μ ∈ {1, 2, 4, 10, 30} (μ = 1 adds one level
  and up to 7x more leaves: 3x slower and no better). h_max is capped at ⌈log2 |V|⌉ (leaves of one
  cell on average) and is at least 1.
* "Generate candidate regions for split points": the integers p in the band [r0 + ⌈s/4⌉, r0 + ⌊3s/4⌋]
  (so each part has at least a quarter of the side and each child at least S/16 of its parent's area),
  thinned to at most ``max_candidates=256`` evenly spaced ones (a public grid; ``None`` = every
  integer). The cost of a split stage is proportional to the number of candidates, not of edges: on a
  graph with 10^6 vertices and 3,000 edges every integer means ~10^6 candidates per stage (10 s, 0.5 GB),
  256 per region a few hundred thousand; on hep-th, email-Enron and the power grid the degree KL did not
  change beyond its seed-to-seed spread (1024, 256, 64 or all candidates).
* The region density (Def. 5) divides by the region's area; the published version counts ones of the
  symmetric matrix over the rectangle area, as written; the private version counts upper cells over
  the upper-cell area (with the floor above).
* The noisy count c̃ of Step 4 is rounded to an integer and clipped to [0, off-diagonal cells]; the
  published output Ã is symmetrised by taking the edge {i, j} for every one placed at (i, j) or (j, i).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from dpviz.core.accounting import positive
from dpviz.core.exponential import exponential_mechanism_grouped
from dpviz.errors import InputError
from dpviz.graph.estimators import project_capped, round_random, total_estimate
from dpviz.graph.kdtree import DrfTree, decompose
from dpviz.graph.model import GraphOutput, canonical_edges
from dpviz.graph.regions import offdiag_cells, place_uniform, ragged_arange
from dpviz.graph.strategy import (DEFAULT_MU_DRF, DEFAULT_SPLIT, NOT_PRIVATE_LABEL, DrfAccount, EdgeCells,
                                  drf_account, measure_degrees, measure_regions, split_shares)

__all__ = ["DEFAULT_ITERATIONS", "DEFAULT_MU", "DEFAULT_MAX_CANDIDATES", "ESTIMATORS", "DENSE_THRESHOLD",
           "SPARSE_FRACTION", "relabel", "q_labelling", "drf_dp", "drf_published"]

DEFAULT_ITERATIONS = 100
"""t of Alg. 1 (not given in the paper; see the module docstring)."""
DEFAULT_MU = DEFAULT_MU_DRF
"""μ of Eq. (3) (not given in the paper): :data:`dpviz.graph.strategy.DEFAULT_MU_DRF`."""
DEFAULT_MAX_CANDIDATES = 256
"""At most this many evenly spaced split candidates per region and stage (the paper gives no number)."""
DENSE_THRESHOLD = 0.8
"""Stop rule "dense": density ≥ 80% (paper §3, Step 2)."""
SPARSE_FRACTION = 0.8
"""Stop rule "sparse": noisy count ≤ 80% of |V|²/4^{h_max+1} (paper §3, Step 2, after Chen et al.)."""
# ------------------------------------------------------------------------------------------- randomness


def _check_rng(rng: object) -> None:
    if rng is not None and not isinstance(rng, np.random.Generator):
        raise InputError(f"rng: expected a numpy.random.Generator (simulation) or None (release), "
                         f"got {type(rng).__name__}")


def _post_rng(rng: np.random.Generator | None) -> np.random.Generator:
    """Randomness for post-processing only (Alg. 1 swaps on noisy degrees, placement)."""
    return rng if rng is not None else np.random.default_rng()


def _discrete(rng: np.random.Generator | None, discrete: bool | None) -> bool:
    """Discrete noise: as asked, else exactly when the noise comes from the OS CSPRNG (a release)."""
    return rng is None if discrete is None else bool(discrete)


def _noise_text(rng: np.random.Generator | None, discrete: bool) -> str:
    if discrete:
        return "discrete Laplace (OS CSPRNG)" if rng is None else "discrete Laplace"
    return "continuous Laplace (simulation)"


# ------------------------------------------------------------------------------------------- Step 1


def q_labelling(degrees_at_position: np.ndarray, dist: np.ndarray | None = None) -> float:
    """q(L) of Eq. (1) for a symmetric A without self-loops: 2 Σ_i deg(i) |i − ⌊|V|/2⌋| (i = position).

    ``dist``: the precomputed |i − ⌊|V|/2⌋| (optional)."""
    n = degrees_at_position.size
    if dist is None:
        dist = np.abs(np.arange(n) - n // 2)
    return 2.0 * float((degrees_at_position * dist).sum())  # no BLAS call: cheap and thread-free


def relabel(degrees: np.ndarray, iterations: int, rng: np.random.Generator) -> tuple[np.ndarray, list[float]]:
    """Alg. 1 (Thm. 3): the vertex order (``order[i]`` = vertex at position i) and q(L) per iteration.

    Starts from a random labelling; each iteration draws a random matching of the positions
    (⌊|V|/2⌋ candidate swaps, each vertex in one) and swaps every pair with
    (deg_m − deg_n)(|v_m − c| − |v_n − c|) > 0 (Eq. 2), c = ⌊|V|/2⌋. ``degrees`` may be noisy.
    The loop runs over the t iterations; each is vectorised over the |V| vertices.
    """
    d_all = np.asarray(degrees, dtype=np.float64)
    n = d_all.size
    order = rng.permutation(n).astype(np.int64)
    d = d_all[order]
    dist = np.abs(np.arange(n, dtype=np.int64) - n // 2).astype(np.float64)
    history = [q_labelling(d, dist)]
    half = n // 2
    for _ in range(int(iterations)):
        perm = rng.permutation(n)
        a, b = perm[:half], perm[half:2 * half]
        swap = (d[a] - d[b]) * (dist[a] - dist[b]) > 0
        a, b = a[swap], b[swap]
        order[a], order[b] = order[b], order[a].copy()
        d[a], d[b] = d[b], d[a].copy()
        history.append(q_labelling(d, dist))
    return order, history


# ------------------------------------------------------------------------------------------- shared


_KNOWN_OPTIONS = ("iterations", "mu", "dense", "sparse", "max_height", "max_candidates", "estimator")
ESTIMATORS = ("project", "clip")


def _options(options: Mapping[str, object]) -> dict[str, object]:
    unknown = sorted(set(options) - set(_KNOWN_OPTIONS))
    if unknown:
        raise InputError(f"DRF: unknown option(s) {', '.join(unknown)}; expected any of {', '.join(_KNOWN_OPTIONS)}")
    out: dict[str, object] = {"iterations": DEFAULT_ITERATIONS, "mu": DEFAULT_MU, "dense": DENSE_THRESHOLD,
                              "sparse": SPARSE_FRACTION, "max_height": None,
                              "max_candidates": DEFAULT_MAX_CANDIDATES,
                              "estimator": "project"}
    out.update(options)
    if out["estimator"] not in ESTIMATORS:
        raise InputError(f"estimator: expected one of {', '.join(ESTIMATORS)}, got {out['estimator']!r}")
    it = out["iterations"]
    if isinstance(it, bool) or not isinstance(it, (int, np.integer)) or int(it) < 0:
        raise InputError(f"iterations: expected a whole number >= 0 (t of Alg. 1), got {it!r}")
    out["iterations"] = int(it)
    out["mu"] = positive("mu", out["mu"])
    out["dense"] = positive("dense", out["dense"])
    out["sparse"] = positive("sparse", out["sparse"])
    mc = out["max_candidates"]
    if mc is not None:
        if isinstance(mc, bool) or not isinstance(mc, (int, np.integer)) or int(mc) < 2:
            raise InputError(f"max_candidates: expected a whole number >= 2 or None (all), got {mc!r}")
        out["max_candidates"] = int(mc)
    return out


def _measure_eps(tree: DrfTree, acc: DrfAccount) -> np.ndarray:
    return np.asarray(acc.eps_counts)[tree.regions.depth]


def _remeasure(tree: DrfTree, early: np.ndarray, eps: np.ndarray, pu: np.ndarray, pv: np.ndarray, *, upper: bool,
               rng: np.random.Generator | None, discrete: bool) -> np.ndarray:
    """Step 3 (Eq. 6): fresh noisy counts of the early leaves ``early``, leaf i with budget ``eps[i]``
    (Laplace 1/ε through core ``measure``; the leaves are disjoint: the stage costs max ε on any edge)."""
    reg = tree.regions
    pos = np.full(len(reg), -1, dtype=np.int64)
    pos[early] = np.arange(early.size)
    cells = EdgeCells(pu, pv, pos[tree.point_leaf])
    bounds = (reg.r0[early], reg.r1[early], reg.c0[early], reg.c1[early])
    meas = measure_regions(bounds, cells, eps, float(eps.max()), rng, discrete=discrete, upper=upper)
    return np.asarray(meas.values, dtype=np.float64)


def _to_caller_ids(cells: np.ndarray, order: np.ndarray, n: int) -> np.ndarray:
    """Cells in matrix positions → canonical edges (u < v, unique, sorted) in the caller's vertex ids."""
    if cells.shape[0] == 0:
        return np.zeros((0, 2), dtype=np.int64)
    return canonical_edges(order[cells], n).edges


# ------------------------------------------------------------------------------------------- drf-dp


def drf_dp(edges: np.ndarray, n_nodes: int, epsilon: float, *, rng: np.random.Generator | None = None,
           split: Sequence[float] = DEFAULT_SPLIT, discrete: bool | None = None, **options) -> GraphOutput:
    """DRF made edge-DP (the default method): ε-edge-DP for the whole output (module docstring proof).

    Options: ``iterations`` (t of Alg. 1, default 100), ``mu`` (Eq. 3, default 4), ``dense`` (0.8),
    ``sparse`` (0.8), ``max_height`` (override h_max), ``max_candidates`` (split candidates per region
    and stage, default 256; None = every integer in the band), ``estimator`` ("project", default, or
    "clip": Step 3 leaf estimates, module docstring).
    ``split`` = ε_D^d : ε_D^c : ε_R, here split points : counts : relabelling (default 3 : 7 : 3).
    ``rng``: a Generator (simulation: continuous Laplace, reproducible) or None (release: discrete
    Laplace and exponential-mechanism draws from the OS CSPRNG). ``discrete``: discrete Laplace counts
    (default: when ``rng`` is None). Every count is drawn by :func:`dpviz.core.protocols.measure`.
    """
    _check_rng(rng)
    disc = _discrete(rng, discrete)
    opts = _options(options)
    canon = canonical_edges(edges, n_nodes)
    n = int(n_nodes)
    acc = drf_account(epsilon, n, split=split, mu=opts["mu"], private=True, max_height_override=opts["max_height"])
    post = _post_rng(rng)

    # Step 1: noisy degrees (L1 sensitivity 2), Alg. 1 on them (post-processing)
    noisy_deg = np.asarray(measure_degrees(canon.edges, n, acc.eps_relabel, rng, discrete=disc).values,
                           dtype=np.float64)
    order, history = relabel(noisy_deg, opts["iterations"], post)
    position = np.empty(n, dtype=np.int64)
    position[order] = np.arange(n, dtype=np.int64)
    a = position[canon.edges[:, 0]]
    b = position[canon.edges[:, 1]]
    pu, pv = np.minimum(a, b), np.maximum(a, b)  # the edge's upper-triangle cell after relabelling

    # Step 2: decomposition on the upper triangle
    tree = decompose(pu, pv, n, acc, private=True, dense=opts["dense"], sparse=opts["sparse"],
                     max_candidates=opts["max_candidates"], rng=rng, discrete=disc)
    reg = tree.regions

    # Step 3 (Eq. 6): early leaves are counted again with the unspent budget Σ_{j>i} ε_j; the fresh count
    # replaces the first, which decided the stop and is therefore biased (low for a sparse leaf)
    eps_c = np.asarray(acc.eps_counts)
    cap = reg.upper()
    est = np.where(np.isnan(tree.measured), 0.0, tree.measured)
    var = np.where(np.isnan(tree.measured), 0.0, 2.0 / eps_c[reg.depth] ** 2)
    remainder = np.concatenate([np.cumsum(eps_c[::-1])[::-1][1:], [0.0]])  # Σ_{j>i} ε_j
    early = np.flatnonzero(reg.leaf & (reg.depth < acc.h_max) & (cap > 0))
    if early.size:
        e2 = remainder[reg.depth[early]]
        est[early] = _remeasure(tree, early, e2, pu, pv, upper=True, rng=rng, discrete=disc)
        var[early] = 2.0 / (e2 * e2)
    leaves = np.flatnonzero(reg.leaf)
    if opts["estimator"] == "project":
        root_var = var[0] if not reg.leaf[0] else 0.0  # a stopped root is itself the one leaf
        total = total_estimate(float(tree.measured[0]), root_var, float(est[leaves].sum()),
                                float(var[leaves].sum()))
        leaf_x = project_capped(est[leaves], cap[leaves].astype(np.float64), total)
    else:  # "clip": the paper's DRF-2 reading, each leaf clipped to [0, U]
        total = float("nan")
        leaf_x = np.clip(est[leaves], 0.0, cap[leaves])
    noisy = est.copy()
    noisy[leaves] = leaf_x

    # Step 4: uniform placement of the (randomly) rounded leaf estimates (post-processing only)
    k = round_random(leaf_x, post) if opts["estimator"] == "project" else np.rint(leaf_x).astype(np.int64)
    cells = place_uniform(reg.r0[leaves], reg.r1[leaves], reg.c0[leaves], reg.c1[leaves], k, post)
    out_edges = _to_caller_ids(cells, order, n)

    info = {
        "h_max": acc.h_max, "mu": opts["mu"], "split": split_shares(split), "iterations": opts["iterations"],
        "q_labelling_noisy": history, "sparse_threshold": opts["sparse"] * n * n / 4.0 ** (acc.h_max + 1),
        "regions_per_depth": tree.regions_per_depth, "n_leaves": int(leaves.size),
        "measured": tree.measured, "measure_epsilon": _measure_eps(tree, acc),
        "noise": _noise_text(rng, disc),
    }  # nothing here is computed from the data without noise (not even the dropped-row counts)
    return GraphOutput(edges=out_edges, budget=acc.budget(), method="drf-dp", n_nodes=n, private=True,
                       label="edge-DP (drf-dp)", partition=reg.released(noisy), order=order, info=info)


# ------------------------------------------------------------------------------------------- published


def drf_published(edges: np.ndarray, n_nodes: int, epsilon: float, *, rng: np.random.Generator | None = None,
                  split: Sequence[float] = DEFAULT_SPLIT, discrete: bool | None = None, **options) -> GraphOutput:
    """DRF exactly as published (§3, Steps 1–4) — NOT edge-DP (module docstring): for comparison only.

    Step 1 on the true degrees; Step 2 on the symmetric matrix (both cells of every edge) with the
    published sensitivities and the true-density stop rule; Step 3 by Eq. (6); Step 4 with the
    exponential mechanism over q ∈ [0, min(c, c̃)] and true ones copied to the output. Same options as
    :func:`drf_dp`. The budget is the paper's nominal accounting.
    """
    _check_rng(rng)
    disc = _discrete(rng, discrete)
    opts = _options(options)
    canon = canonical_edges(edges, n_nodes)
    n = int(n_nodes)
    acc = drf_account(epsilon, n, split=split, mu=opts["mu"], private=False, max_height_override=opts["max_height"])
    post = _post_rng(rng)

    # Step 1: Alg. 1 on the TRUE degrees, no budget (problem 1)
    deg = np.bincount(canon.edges.ravel(), minlength=n).astype(np.float64)
    order, history = relabel(deg, opts["iterations"], post)
    position = np.empty(n, dtype=np.int64)
    position[order] = np.arange(n, dtype=np.int64)
    a = position[canon.edges[:, 0]]
    b = position[canon.edges[:, 1]]
    pu = np.concatenate([a, b])  # the symmetric matrix: both cells of every edge (problem 3)
    pv = np.concatenate([b, a])

    # Step 2
    tree = decompose(pu, pv, n, acc, private=False, dense=opts["dense"], sparse=opts["sparse"],
                     max_candidates=opts["max_candidates"], rng=rng, discrete=disc)
    reg = tree.regions

    # Step 3 (Eq. 6): early leaves are counted again with Σ_{j=i}^{h} ε_j (replacing the first count)
    eps_c = np.asarray(acc.eps_counts)
    tail = np.cumsum(eps_c[::-1])[::-1]  # Σ_{j>=i} ε_j
    est = tree.measured.copy()
    early = np.flatnonzero(reg.leaf & (reg.depth < acc.h_max))
    if early.size:
        est[early] = _remeasure(tree, early, tail[reg.depth[early]], pu, pv, upper=False, rng=rng, discrete=disc)
    offd = offdiag_cells(reg.r0, reg.r1, reg.c0, reg.c1)
    noisy = np.where(reg.leaf, np.clip(est, 0.0, offd), est)

    # Step 4: EM over q in [0, min(c, c~)] (score q, GS = 1, ε_R), q true ones kept (problem 2)
    leaves = np.flatnonzero(reg.leaf)
    c_tilde = np.rint(noisy[leaves]).astype(np.int64)
    c_true = tree.count[leaves]
    top = np.minimum(c_true, c_tilde)
    cand, grp = ragged_arange(np.zeros(leaves.size, dtype=np.int64), top + 1)
    pick = exponential_mechanism_grouped(cand.astype(np.float64), grp, acc.eps_relabel, 1.0, rng,
                                         n_groups=leaves.size)
    q = cand[pick]
    # q true ones per leaf, uniformly among the leaf's ones of A
    leaf_pos = np.full(len(reg), -1, dtype=np.int64)
    leaf_pos[leaves] = np.arange(leaves.size)
    pl = leaf_pos[tree.point_leaf]
    ordr = np.lexsort((post.random(pl.size), pl))
    pl_sorted = pl[ordr]
    rank = np.arange(pl.size) - np.searchsorted(pl_sorted, pl_sorted, side="left")
    kept = ordr[rank < q[pl_sorted]]
    true_cells = np.column_stack([pu[kept], pv[kept]])
    # c~ - q further ones on the 0 elements of A off the main diagonal
    zeros_needed = c_tilde - q
    sym = np.column_stack([pu, pv])
    extra = place_uniform(reg.r0[leaves], reg.r1[leaves], reg.c0[leaves], reg.c1[leaves], zeros_needed, post,
                          upper=False, exclude=sym)
    cells = np.concatenate([true_cells, extra]).astype(np.int64)
    out_edges = _to_caller_ids(cells, order, n)

    info = {
        "h_max": acc.h_max, "mu": opts["mu"], "split": split_shares(split), "iterations": opts["iterations"],
        "q_labelling": history, "sparse_threshold": opts["sparse"] * n * n / 4.0 ** (acc.h_max + 1),
        "regions_per_depth": tree.regions_per_depth, "n_leaves": int(leaves.size),
        "measured": tree.measured, "measure_epsilon": _measure_eps(tree, acc),
        "true_edges_kept": int(kept.size), "warning": NOT_PRIVATE_LABEL,
    }
    return GraphOutput(edges=out_edges, budget=acc.budget(), method="drf", n_nodes=n, private=False,
                       label=NOT_PRIVATE_LABEL, partition=reg.released(noisy), order=order, info=info)
