"""DRF Step 2 (Gong, Lessoy, Lu & Lv 2020, §3, Alg. 2, Eqs. 3–5): the flattening kd-tree, built depth by depth.

Each level splits every alive region horizontally, then each half vertically (four children), at split
points chosen by the exponential mechanism (Eq. 5, :func:`dpviz.core.exponential.exponential_mechanism_grouped`)
with the density-difference utility (Eq. 4), and gives every child a noisy edge count with its depth's
budget ε_i (:func:`dpviz.graph.strategy.measure_regions`, i.e. :func:`dpviz.core.protocols.measure`). A
region stops (becomes a leaf) when it is dense, sparse, at depth h_max, too narrow to split, or (drf-dp)
holds no upper cell. ``private=True`` is drf-dp (upper triangle, noisy stop rules, the floored utility);
``private=False`` the published reading (the symmetric matrix, the true-density stop rule, GS(q) = 4/S).
The privacy argument of every stage is in :mod:`dpviz.graph.drf`.

The tree is returned as a :class:`DrfTree`: its regions (:class:`dpviz.graph.regions.Partition`, the one
region-array type) plus the internal per-node arrays the later steps need (true counts, never released).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpviz.core.exponential import exponential_mechanism_grouped
from dpviz.graph.regions import Partition, count_below, ragged_arange, upper_cells
from dpviz.graph.strategy import DrfAccount, EdgeCells, measure_regions

__all__ = ["AREA_FLOOR", "DrfTree", "decompose"]

AREA_FLOOR = 1.0 / 16.0
"""drf-dp: a part's upper-cell area in the split utility is at least this fraction of its region's."""


@dataclass(frozen=True)
class DrfTree:
    """Every node of the flattening kd-tree (node 0 is the root): ``regions`` (bounds, depth, parent, leaf),
    ``count`` (true count: internal use only, never released), ``measured`` (the noisy count released at
    the node's own depth; NaN: not measured), ``point_leaf`` (leaf node of each input point) and the
    number of regions created at every depth."""

    regions: Partition
    count: np.ndarray
    measured: np.ndarray
    point_leaf: np.ndarray
    regions_per_depth: tuple[int, ...]


def _choose_split(axis: int, r0: np.ndarray, r1: np.ndarray, c0: np.ndarray, c1: np.ndarray,
                  point_region: np.ndarray, point_coord: np.ndarray, eps_stage: float, private: bool,
                  max_candidates: int | None, rng: np.random.Generator | None) -> np.ndarray:
    """One exponential-mechanism split per region (all regions of one stage at once), Eqs. (4)–(5).

    Candidates: every integer p in [start + ⌈s/4⌉, start + ⌊3s/4⌋] (s = side along ``axis``, ≥ 2).
    """
    g_n = r0.size
    start, end = (r0, r1) if axis == 0 else (c0, c1)
    s = end - start
    lo = start + (s + 3) // 4
    n_band = start + (3 * s) // 4 - lo + 1
    if max_candidates is not None:
        n_c = np.minimum(n_band, max_candidates)
        t, grp = ragged_arange(np.zeros(g_n, dtype=np.int64), n_c)
        step_num = np.maximum(n_band - 1, 0)[grp]
        step_den = np.maximum(n_c - 1, 1)[grp]
        cand = lo[grp] + (t * step_num) // step_den  # evenly spaced, distinct (public)
    else:
        n_c = n_band
        cand, grp = ragged_arange(lo, n_band)
    below = count_below(point_region, point_coord, grp, cand)
    total = np.bincount(point_region, minlength=g_n).astype(np.int64)
    above = total[grp] - below
    if axis == 0:
        p1 = (r0[grp], cand, c0[grp], c1[grp])
        p2 = (cand, r1[grp], c0[grp], c1[grp])
    else:
        p1 = (r0[grp], r1[grp], c0[grp], cand)
        p2 = (r0[grp], r1[grp], cand, c1[grp])
    if private:
        a1 = upper_cells(*p1).astype(np.float64)
        a2 = upper_cells(*p2).astype(np.float64)
        floor = (AREA_FLOOR * upper_cells(r0, r1, c0, c1).astype(np.float64))[grp]
        n1 = np.maximum(a1, floor)
        n2 = np.maximum(a2, floor)
        # A part without upper cells has count 0 on every graph: density 0, no sensitivity. (A half
        # with no upper cell at all gets a constant utility: its column split is uniform.)
        inv1 = np.divide(1.0, n1, out=np.zeros_like(n1), where=a1 > 0)
        inv2 = np.divide(1.0, n2, out=np.zeros_like(n2), where=a2 > 0)
        util = np.abs(below * inv1 - above * inv2)
        inv = np.maximum(inv1, inv2)
        offsets = np.cumsum(n_c) - n_c
        sens = np.maximum.reduceat(inv, offsets)  # Δ(R): max over the region's candidates
        sens = np.where(sens > 0, sens, 1.0)  # no upper cell in any part: the utility is constant
    else:
        a1 = ((p1[1] - p1[0]) * (p1[3] - p1[2])).astype(np.float64)
        a2 = ((p2[1] - p2[0]) * (p2[3] - p2[2])).astype(np.float64)
        util = np.abs(below / a1 - above / a2)
        sens = 4.0 / ((r1 - r0) * (c1 - c0)).astype(np.float64)  # GS(q) = 4/S as published
    chosen = exponential_mechanism_grouped(util, grp, eps_stage, sens, rng, n_groups=g_n)
    return cand[chosen]


def decompose(pu: np.ndarray, pv: np.ndarray, n: int, acc: DrfAccount, *, private: bool, dense: float,
              sparse: float, max_candidates: int | None, rng: np.random.Generator | None,
              discrete: bool) -> DrfTree:
    """Alg. 2: the flattening kd-tree over the points (pu[i], pv[i]), depth by depth, all regions of a depth
    vectorised. ``discrete``: discrete Laplace counts (a release; OS CSPRNG when ``rng`` is None).

    The Python loop runs over the h_max depths (two split stages and one count stage each); every
    operation inside is vectorised over the regions and the points of that depth.
    """
    h = acc.h_max
    eps_c = np.asarray(acc.eps_counts)
    eps_s = acc.eps_split_stage
    sparse_thr = sparse * float(n) * float(n) / 4.0 ** (h + 1)
    n_pts = pu.size

    def cells(r0, r1, c0, c1):
        return upper_cells(r0, r1, c0, c1) if private else (r1 - r0) * (c1 - c0)

    def measure(bounds, counts, cap, eps, pts_u, pts_v, pts_region):
        """The depth's noisy counts (Laplace 1/ε_depth through core ``measure``) of the live regions."""
        out = counts.astype(np.float64)
        live = cap > 0 if private else np.ones(counts.size, dtype=bool)  # U = 0: exactly 0, no noise
        index = np.where(live, np.cumsum(live) - 1, -1)
        meas = measure_regions(tuple(b[live] for b in bounds), EdgeCells(pts_u, pts_v, index[pts_region]), eps,
                               eps, rng, discrete=discrete, upper=private)
        out[live] = meas.values
        return out, live

    def stops(r0, r1, c0, c1, counts, measured, cap, depth):
        leaf = (depth >= h) | (r1 - r0 < 2) | (c1 - c0 < 2) | (measured <= sparse_thr)
        if private:
            leaf |= cap == 0
            leaf |= measured >= dense * np.maximum(cap, 1)
        else:
            leaf |= counts >= dense * cap  # the published rule reads the true density
        return leaf

    zero = np.zeros(1, dtype=np.int64)
    nn = np.array([n], dtype=np.int64)
    root_cap = cells(zero, nn, zero, nn)
    root_count = np.array([n_pts], dtype=np.int64)
    root_meas, root_live = measure((zero, nn, zero, nn), root_count, root_cap, eps_c[0], pu, pv,
                                   np.zeros(n_pts, dtype=np.int64))
    root_leaf = stops(zero, nn, zero, nn, root_count, root_meas, root_cap, 0)
    blocks = {k: [v] for k, v in dict(r0=zero, r1=nn, c0=zero, c1=nn, depth=zero, parent=np.array([-1]),
                                      leaf=root_leaf, count=root_count,
                                      measured=np.where(root_live, root_meas, np.nan)).items()}
    point_leaf = np.full(n_pts, -1, dtype=np.int64)
    per_depth = [1]
    next_id = 1
    alive_nodes = np.flatnonzero(~root_leaf)
    ar0, ar1, ac0, ac1 = zero[alive_nodes], nn[alive_nodes], zero[alive_nodes], nn[alive_nodes]
    if root_leaf[0]:
        point_leaf[:] = 0
        pid = np.zeros(0, dtype=np.int64)
    else:
        pid = np.arange(n_pts, dtype=np.int64)
    preg = np.zeros(pid.size, dtype=np.int64)
    u, v = pu[pid], pv[pid]
    for d in range(h):  # h_max depths; everything inside is vectorised over regions and points
        g_n = alive_nodes.size
        if g_n == 0:
            break
        # stage 1: horizontal split of every alive region (rows)
        p = _choose_split(0, ar0, ar1, ac0, ac1, preg, u, eps_s, private, max_candidates, rng)
        half = 2 * preg + (u >= p[preg])
        hr0 = np.column_stack([ar0, p]).ravel()
        hr1 = np.column_stack([p, ar1]).ravel()
        hc0 = np.repeat(ac0, 2)
        hc1 = np.repeat(ac1, 2)
        # stage 2: vertical split of every half (columns)
        q = _choose_split(1, hr0, hr1, hc0, hc1, half, v, eps_s, private, max_candidates, rng)
        quarter = 2 * half + (v >= q[half])
        kr0 = np.repeat(hr0, 2)
        kr1 = np.repeat(hr1, 2)
        kc0 = np.column_stack([hc0, q]).ravel()
        kc1 = np.column_stack([q, hc1]).ravel()
        counts = np.bincount(quarter, minlength=4 * g_n).astype(np.int64)
        cap = cells(kr0, kr1, kc0, kc1)
        meas, live = measure((kr0, kr1, kc0, kc1), counts, cap, eps_c[d + 1], u, v, quarter)
        leaf = stops(kr0, kr1, kc0, kc1, counts, meas, cap, d + 1)
        ids = next_id + np.arange(4 * g_n, dtype=np.int64)
        next_id += 4 * g_n
        for key, val in dict(r0=kr0, r1=kr1, c0=kc0, c1=kc1, depth=np.full(4 * g_n, d + 1),
                             parent=np.repeat(alive_nodes, 4), leaf=leaf, count=counts,
                             measured=np.where(live, meas, np.nan)).items():
            blocks[key].append(val)
        per_depth.append(4 * g_n)
        in_leaf = leaf[quarter]
        point_leaf[pid[in_leaf]] = ids[quarter[in_leaf]]
        keep = ~in_leaf
        new_index = np.cumsum(~leaf) - 1  # child -> index among the alive children
        pid, u, v, preg = pid[keep], u[keep], v[keep], new_index[quarter[keep]]
        alive = ~leaf
        alive_nodes = ids[alive]
        ar0, ar1, ac0, ac1 = kr0[alive], kr1[alive], kc0[alive], kc1[alive]
    arrays = {k: np.concatenate(v) for k, v in blocks.items()}
    regions = Partition(r0=arrays["r0"].astype(np.int64), r1=arrays["r1"].astype(np.int64),
                        c0=arrays["c0"].astype(np.int64), c1=arrays["c1"].astype(np.int64),
                        depth=arrays["depth"].astype(np.int64), parent=arrays["parent"].astype(np.int64),
                        leaf=arrays["leaf"].astype(bool))
    return DrfTree(regions=regions, count=arrays["count"], measured=arrays["measured"], point_leaf=point_leaf,
                   regions_per_depth=tuple(per_depth))
