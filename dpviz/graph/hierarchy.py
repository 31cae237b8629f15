"""The baselines' space-partitioning trees of the adjacency matrix: the data-independent quadtree and the
kd-hybrid tree with private medians (G. Cormode, C. Procopiuc, D. Srivastava, E. Shen, T. Yu,
"Differentially Private Spatial Decompositions", ICDE 2012; the privacy argument is in
:mod:`dpviz.graph.baselines`).

A tree is a :class:`dpviz.graph.regions.Partition` (the one region-array type) in BFS order — parents
before children, depth non-decreasing — with ``kinds[d]`` saying how level d was split ("quad" or "kd").
Every region but the root of a one-vertex graph meets the upper triangle (children without an upper cell
are never created: their count is 0 publicly). Private medians (:func:`private_medians`) are drawn by the
core exponential mechanism (:func:`dpviz.core.exponential.exponential_mechanism_grouped`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dpviz.core.accounting import positive
from dpviz.core.exponential import exponential_mechanism_grouped, uniform53
from dpviz.errors import InputError
from dpviz.graph.regions import Partition

__all__ = ["whole_number", "quadtree_hierarchy", "kd_hybrid_hierarchy", "private_medians"]

_NEVER = -1e300
"""The score of an empty run in :func:`private_medians`: its exponential-mechanism weight underflows to 0."""


def whole_number(name: str, value: object, lo: int, hi: int | None = None) -> int:
    """``value`` as an int in [lo, hi] (hi None: no upper bound), or InputError naming ``name``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise InputError(f"{name}: expected a whole number, got {value!r}")
    v = int(value)
    if v < lo or (hi is not None and v > hi):
        rng_txt = f">= {lo}" if hi is None else f"in {lo}..{hi}"
        raise InputError(f"{name}: expected a whole number {rng_txt}, got {v}")
    return v


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
           rng: np.random.Generator | None) -> Partition:
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
    return Partition(np.concatenate(r0), np.concatenate(r1), np.concatenate(c0), np.concatenate(c1),
                     np.concatenate(depth), par, leaf, kinds=tuple(kinds))


def quadtree_hierarchy(n_nodes: int, height: int) -> Partition:
    """The data-independent quadtree of the n × n adjacency matrix with ``height`` levels (children at
    the midpoints; an axis of length 1 is not cut; children without an upper-triangle cell dropped)."""
    n = whole_number("n_nodes", n_nodes, 1)
    h = whole_number("height", height, 0, 62)
    return _build(n, ["quad"] * h, None, 0.0, None)


def kd_hybrid_hierarchy(edges: np.ndarray, n_nodes: int, kd_levels: int, quad_levels: int,
                        median_epsilon: float, rng: np.random.Generator | None, *,
                        kd_first: bool = True) -> Partition:
    """kd-hybrid tree: ``kd_levels`` kd levels at private medians (``median_epsilon`` each, see
    :func:`private_medians`), then ``quad_levels`` quadtree levels (``kd_first=False``: the quadtree
    levels first). ``edges``: canonical (u < v)."""
    n = whole_number("n_nodes", n_nodes, 1)
    kd_part = ["kd"] * whole_number("kd_levels", kd_levels, 0, 62)
    quad_part = ["quad"] * whole_number("quad_levels", quad_levels, 0, 62)
    kinds = kd_part + quad_part if kd_first else quad_part + kd_part
    eps = positive("median epsilon", median_epsilon) if kd_levels else 0.0
    return _build(n, kinds, np.asarray(edges, dtype=np.int64).reshape(-1, 2), eps, rng)


def private_medians(coords: np.ndarray, counts: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                    epsilon: float, rng: np.random.Generator | None) -> np.ndarray:
    """Private median cuts of K nodes by the exponential mechanism (McSherry & Talwar, FOCS 2007), as in
    Cormode et al. (ICDE 2012): node k picks s ∈ {lo_k+1, …, hi_k−1} with probability
    ∝ exp(ε·u_k(s)/(2Δu)), u_k(s) = −|2·rank_k(s) − c_k|, Δu = 1 (module docstring).

    ``coords``: the nodes' point coordinates along their split axis, concatenated node by node, each
    node's block sorted and inside [lo_k, hi_k); ``counts[k]`` = c_k its length. Needs hi_k − lo_k ≥ 2.

    rank_k is constant on the c_k + 1 runs s ∈ [x_j + 1, x_{j+1}] (x_0 = −∞, x_{c+1} = +∞), so the
    mechanism picks a run j with weight len_j · exp(−ε|2j − c|/2) (the core exponential mechanism over the
    runs of all nodes at once: O(Σ c_k + K), never O(hi − lo)) and then a uniform position inside it. Random
    bits from ``rng``, or from the OS CSPRNG when ``rng`` is None.
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
    # run j has weight len_j · exp(−ε|2j − c|/2) = exp(ε·s_j/2) with the score s_j = −|2j − c| + (2/ε) log len_j
    # (the run's length folded into its score, Δu = 1); an empty run never wins
    score = np.where(ok, -np.abs(2 * j - c) + (2.0 / epsilon) * np.log(np.maximum(length, 1)), _NEVER)
    pick = exponential_mechanism_grouped(score, node, epsilon, 1.0, rng, n_groups=kk)
    u = uniform53(kk, rng)
    offset = np.minimum(np.floor(u * length[pick]).astype(np.int64), length[pick] - 1)
    return a[pick] + offset
