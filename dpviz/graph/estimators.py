"""Reconstruction from noisy counts: post-processing of released numbers only (it never sees the data).

* DRF Step 3 (drf-dp, :mod:`dpviz.graph.drf`): :func:`total_estimate` (inverse-variance combination of two
  unbiased estimates of |E|), :func:`project_capped` (the Euclidean projection of the leaf estimates onto
  {0 ≤ x ≤ U, Σx = T}) and :func:`round_random` (unbiased integer rounding).
* The baselines' trees (:mod:`dpviz.graph.baselines`, Cormode et al., ICDE 2012): :func:`least_squares`
  (the inverse-variance-weighted least-squares consistent tree, in two passes), :func:`top_down_counts`
  (mass-preserving integer leaf counts), :func:`released_counts` (the counts implied by the leaves).
* The degree baseline: :func:`degree_postprocess` (noisy degrees → a plausible degree sequence).

Analytic variances: the measurements carry theirs (:attr:`dpviz.core.protocols.LinearMeasurement.variance`,
exact for the sampler used); :func:`least_squares` weights by them.
"""

from __future__ import annotations

import numpy as np

from dpviz.errors import InputError
from dpviz.graph.regions import Partition

__all__ = ["total_estimate", "project_capped", "round_random", "least_squares", "released_counts",
           "top_down_counts", "degree_postprocess"]


# ------------------------------------------------------------------------------------------- DRF Step 3


def total_estimate(root: float, root_var: float, leaf_sum: float, leaf_var: float) -> float:
    """Inverse-variance combination of two estimates of the number of edges (both released).

    The leaf sum is unbiased given the tree (fresh Step-3 counts and depth-h_max counts, none of which
    decided its own stop); the root count is unbiased but for the event "the root did not stop", which
    is negligible unless the graph is nearly empty. ``root_var = 0`` means: leaves only.
    """
    if root_var <= 0.0:
        return leaf_sum
    if leaf_var <= 0.0:
        return leaf_sum
    w0, w1 = 1.0 / root_var, 1.0 / leaf_var
    return (w0 * root + w1 * leaf_sum) / (w0 + w1)


def project_capped(y: np.ndarray, cap: np.ndarray, total: float) -> np.ndarray:
    """Euclidean projection of y onto {x : 0 ≤ x ≤ cap, Σ x = total}: x = clip(y − τ, 0, cap).

    The least-squares leaf counts that are non-negative, fit in their regions and add up to the
    released total (post-processing). Σ clip(y − τ, 0, cap) is continuous and non-increasing in τ, so τ
    is found by bisection (~100 vectorised steps). ``total`` is clipped to [0, Σ cap].
    """
    y = np.asarray(y, dtype=np.float64)
    cap = np.asarray(cap, dtype=np.float64)
    if y.size == 0:
        return y.copy()
    total = float(total)
    if total <= 0.0:
        return np.zeros_like(y)
    if total >= float(cap.sum()):
        return cap.copy()
    lo = float((y - cap).min()) - 1.0  # f(lo) = Σ cap >= total
    hi = float(y.max())  # f(hi) = 0 <= total
    for _ in range(100):  # bisection on a scalar: each step is one vectorised sum
        mid = 0.5 * (lo + hi)
        if np.clip(y - mid, 0.0, cap).sum() > total:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-12 * max(1.0, abs(hi)):
            break
    return np.clip(y - 0.5 * (lo + hi), 0.0, cap)


def round_random(x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """floor(x) + Bernoulli(frac(x)): integer counts with the same expectation (post-processing)."""
    base = np.floor(x)
    return (base + (rng.random(x.size) < x - base)).astype(np.int64)


# ------------------------------------------------------------------------------------------- trees


def _depths(parent: np.ndarray) -> np.ndarray:
    """Depth of every node of the forest ``parent`` (-1: a root) by pointer doubling (O(log height) vectorised
    steps); InputError for a parent out of range or a cycle."""
    n = parent.size
    if n and (int(parent.min()) < -1 or int(parent.max()) >= n):
        raise InputError("least_squares: parent ids must be -1 (root) or a node index")
    if n and not (parent == -1).any():
        raise InputError("least_squares: the tree has no root (parent -1)")
    up = parent.copy()
    dist = (up >= 0).astype(np.int64)  # distance from i to up[i]; up[i] = -1 once i's root is reached
    for _ in range(int(n).bit_length() + 1):  # list ranking: each step doubles the span of every pointer
        live = up >= 0
        if not live.any():
            return dist
        nxt = np.where(live, up, 0)
        dist, up = np.where(live, dist + dist[nxt], dist), np.where(live, up[nxt], -1)
    raise InputError("least_squares: the parent array has a cycle")


def least_squares(parent: np.ndarray, noisy: np.ndarray, variance: np.ndarray) -> np.ndarray:
    """The consistent (every parent = sum of its children) estimate closest to ``noisy`` in the
    inverse-variance-weighted least-squares sense: Cormode et al. (ICDE 2012)'s least-squares
    post-processing for per-level budgets, for any tree shape (the GLS v̄ = ṽ − D M (MᵀDM)⁻¹ Mᵀ ṽ,
    D = diag(variance), that GMC computes: Yang et al., TCS 2023, Alg. 2). ``parent``: -1 for the root, in
    any order.

    Two vectorised passes over the depths (Hay, Rastogi, Miklau & Suciu, PVLDB 2010, §4, with per-node
    variances — exact Gaussian belief propagation on a tree):

    * up: z_v, s_v = the best estimate of node v's total from the measurements in its subtree and its
      variance: a leaf has (y_v, d_v); an inner node combines y_v (variance d_v) with C_v = Σ_c z_c
      (variance S_v = Σ_c s_c) by inverse-variance weights, s_v = 1 / (1/d_v + 1/S_v);
    * down: the root keeps x = z; a child c of a node with final x_p gets x_c = z_c + (s_c / S_p)(x_p − C_p),
      the constrained best estimate given its parent (children's totals then add up to x_p).
    """
    parent = np.asarray(parent, dtype=np.int64)
    y = np.asarray(noisy, dtype=np.float64)
    d = np.asarray(variance, dtype=np.float64)
    if not (parent.shape == y.shape == d.shape) or parent.ndim != 1:
        raise InputError("least_squares: parent, noisy and variance must be 1-d arrays of one length")
    if d.size and not (np.all(np.isfinite(d)) and float(d.min()) > 0.0):
        raise InputError("least_squares: variances must be positive and finite")
    n = y.size
    depth = _depths(parent)
    levels = [np.flatnonzero(depth == k) for k in range(int(depth.max(initial=0)) + 1)]
    z, s = y.copy(), d.copy()
    c_sum = np.zeros(n)
    s_sum = np.zeros(n)
    for idx in reversed(levels[1:]):  # up: the children of depth k complete their parents (depth k − 1)
        par = parent[idx]
        c_sum += np.bincount(par, weights=z[idx], minlength=n)
        s_sum += np.bincount(par, weights=s[idx], minlength=n)
        p = np.unique(par)
        w_own, w_kids = 1.0 / d[p], 1.0 / s_sum[p]
        z[p] = (y[p] * w_own + c_sum[p] * w_kids) / (w_own + w_kids)
        s[p] = 1.0 / (w_own + w_kids)
    x = z.copy()
    for idx in levels[1:]:  # down: depth by depth, parents final before their children
        par = parent[idx]
        x[idx] = z[idx] + s[idx] / s_sum[par] * (x[par] - c_sum[par])
    return x


def released_counts(h: Partition, leaf_counts: np.ndarray) -> np.ndarray:
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


# ------------------------------------------------------------------------------------------- degrees


def degree_postprocess(noisy: np.ndarray) -> np.ndarray:
    """Noisy degrees → a plausible degree sequence: rounded, clipped to [0, n−1], and with an even sum
    (one is taken from the largest degree if the sum is odd). Post-processing only."""
    x = np.asarray(noisy, dtype=np.float64)
    n = x.shape[0]
    w = np.clip(np.rint(x), 0, max(n - 1, 0)).astype(np.int64)
    if int(w.sum()) % 2:
        w[int(np.argmax(w))] -= 1
    return w
