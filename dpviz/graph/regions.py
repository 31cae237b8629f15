"""Sparse region arithmetic on the adjacency matrix, shared by every decomposition method.

A *region* is a half-open rectangle ``[r0, r1) x [c0, c1)`` of the |V| x |V| adjacency matrix (rows and
columns are vertex positions). Edges are stored once, as points (u, v) with u < v: their cells in the
**upper triangle**, where one edge is one cell (the unit of privacy, see :mod:`dpviz.graph.release`).
Every function here is vectorised over many regions at once and never allocates anything of size |V|²:

* :func:`upper_cells` / :func:`offdiag_cells`: how many cells (i, j) with i < j (resp. i != j) a region
  has, in closed form.
* :class:`Partition`: the one region-array type of ``dpviz.graph`` — the regions of a decomposition
  (DRF's flattening kd-tree, the baselines' quadtree and kd-hybrid trees) as parallel arrays, with
  their depth, parent and leaf flags, and, once released, their noisy counts.
* :class:`EdgeIndex` / :func:`count_upper`: how many edge points fall in each of many arbitrary
  rectangles. The points are sorted by row once; a *merge-sort tree* over that order (level l holds the
  column values sorted inside consecutive blocks of 2^l points) answers the dominance count
  #{u < a, v < b} with one ``searchsorted`` per level, and a rectangle is four dominance counts
  (inclusion–exclusion). Build O(m log m) time and O(m log m) memory (m = number of points); a query
  costs O(log² m). This is the classical offline orthogonal range counting structure (e.g. M. de Berg,
  O. Cheong, M. van Kreveld, M. Overmars, *Computational Geometry*, 3rd ed., Springer 2008, §5.3–5.6).
* :func:`count_below`: #{points of group g with coordinate < p} for many (g, p) pairs — the counts of
  all split candidates of all regions of one kd-tree depth in one ``searchsorted`` (the points are
  partitioned by region, so this is the "kd build that partitions the point index set").
* :func:`place_uniform`: for each region, k distinct cells drawn uniformly at random without
  replacement — the reconstruction step of DRF (Gong, Lessoy, Lu & Lv, "Differential Privacy Spatial
  Decomposition via Flattening Kd-Tree", Int. J. of Performability Engineering, 2020, §3 Step 4), of
  Random, kd-hybrid and quadtree. It is post-processing of released counts: it never looks at the data.
  Big regions are sampled by rejection (uniform integer pairs in the region's bounding box of valid
  cells, at least half of which are valid, then de-duplicated); only regions with few valid cells
  relative to k are enumerated, so the work is O(Σk + number of regions).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from dpviz.errors import InputError

__all__ = ["Partition", "EdgeIndex", "count_upper", "count_below", "upper_cells", "offdiag_cells", "place_uniform",
           "ragged_arange"]

_ENUMERATE_SLACK = 64
"""A region is enumerated (not rejection-sampled) when it has at most 2k + this many valid cells."""


# ------------------------------------------------------------------------------------------- helpers


def _int_array(name: str, value: object) -> np.ndarray:
    """``value`` as a 1-D int64 array (a scalar becomes length 1); InputError for non-integers."""
    arr = np.asarray(value)
    if arr.ndim == 0:
        arr = arr.reshape(1)
    if arr.ndim != 1:
        raise InputError(f"{name}: expected a 1-D array of integers, got shape {arr.shape}")
    if arr.size == 0:
        return np.zeros(0, dtype=np.int64)
    if arr.dtype.kind in "iu":
        return arr.astype(np.int64, copy=False)
    if arr.dtype.kind == "f" and np.isfinite(arr).all() and (arr == np.round(arr)).all():
        return arr.astype(np.int64)
    raise InputError(f"{name}: expected whole numbers, got values of type {arr.dtype}")


def _rects(r0: object, r1: object, c0: object, c1: object) -> tuple[np.ndarray, ...]:
    """The four bounds as equal-length int64 arrays (scalars broadcast)."""
    arrs = [_int_array(n, v) for n, v in (("r0", r0), ("r1", r1), ("c0", c0), ("c1", c1))]
    try:
        out = np.broadcast_arrays(*arrs)
    except ValueError:
        raise InputError("regions: r0, r1, c0, c1 must have the same length, got "
                         f"{[a.size for a in arrs]}") from None
    return tuple(np.ascontiguousarray(a) for a in out)


def ragged_arange(starts: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Concatenation of ``arange(starts[g], starts[g] + lengths[g])`` over g, and the group g of each value.

    Vectorised (one ``repeat`` and one ``cumsum``); lengths <= 0 contribute nothing.
    """
    starts = np.asarray(starts, dtype=np.int64)
    lengths = np.maximum(np.asarray(lengths, dtype=np.int64), 0)
    total = int(lengths.sum())
    group = np.repeat(np.arange(lengths.size, dtype=np.int64), lengths)
    if total == 0:
        return np.zeros(0, dtype=np.int64), group
    offsets = np.cumsum(lengths) - lengths  # first output index of each group
    values = np.arange(total, dtype=np.int64) + np.repeat(starts - offsets, lengths)
    return values, group


# ------------------------------------------------------------------------------------------- cell counts


def upper_cells(r0: object, r1: object, c0: object, c1: object) -> np.ndarray:
    """Number of cells (i, j) with i < j in each rectangle [r0, r1) x [c0, c1) (closed form, int64).

    Row i contributes max(0, c1 - max(c0, i + 1)) cells: c1 - c0 for the rows i < c0 (part A) and
    c1 - 1 - i for the rows c0 <= i < c1 - 1 (part B, an arithmetic series).
    """
    r0, r1, c0, c1 = _rects(r0, r1, c0, c1)
    width = np.maximum(c1 - c0, 0)
    rows_a = np.maximum(np.minimum(r1, c0) - r0, 0)
    a = np.maximum(r0, c0)
    b = np.minimum(r1, c1 - 1)
    nb = np.maximum(b - a, 0)
    # sum_{i=a}^{b-1} (c1 - 1 - i) = nb * (2 c1 - a - b - 1) / 2, an integer (one factor is even)
    part_b = nb * (2 * c1 - a - b - 1) // 2
    return np.where(width > 0, rows_a * width + np.where(nb > 0, part_b, 0), 0).astype(np.int64)


def offdiag_cells(r0: object, r1: object, c0: object, c1: object) -> np.ndarray:
    """Number of cells (i, j) with i != j in each rectangle [r0, r1) x [c0, c1) (int64)."""
    r0, r1, c0, c1 = _rects(r0, r1, c0, c1)
    area = np.maximum(r1 - r0, 0) * np.maximum(c1 - c0, 0)
    diag = np.maximum(np.minimum(r1, c1) - np.maximum(r0, c0), 0)
    return (area - diag).astype(np.int64)


# ------------------------------------------------------------------------------------------- region arrays


@dataclass(frozen=True)
class Partition:
    """Rectangular regions of the (relabelled) adjacency matrix, as parallel arrays of length k: the one
    region-array type of ``dpviz.graph`` (DRF's flattening kd-tree, the baselines' trees, a release).

    Region i is the half-open rectangle rows [r0[i], r1[i]) x columns [c0[i], c1[i]) of the matrix
    whose rows/columns are the relabelled vertices (``GraphRelease.order``). ``depth`` is the tree depth
    at which the region was created, ``parent`` the index of its parent region in the same arrays (-1 for
    the root), ``leaf`` whether it is a final region. ``noisy``: its released (noisy, post-processed) edge
    count on the upper triangle, once released (None while the tree is being built). ``kinds[d]``: how
    level d was split, for trees planned level by level ("quad" or "kd"; empty otherwise). Internal nodes
    are kept so that a page can step through the decomposition depth by depth.
    """

    r0: np.ndarray
    r1: np.ndarray
    c0: np.ndarray
    c1: np.ndarray
    depth: np.ndarray
    parent: np.ndarray
    leaf: np.ndarray
    noisy: np.ndarray | None = None
    kinds: tuple[str, ...] = ()

    def __len__(self) -> int:
        return int(self.r0.shape[0])

    @property
    def n_regions(self) -> int:
        return len(self)

    @property
    def levels(self) -> int:
        """Number of planned split levels L (depths 0..L get a count budget)."""
        return len(self.kinds)

    @property
    def fanouts(self) -> tuple[int, ...]:
        """Nominal fan-out of every planned level: 2 for a kd level, 4 for a quadtree level."""
        return tuple(2 if k == "kd" else 4 for k in self.kinds)

    def upper(self) -> np.ndarray:
        """Number of upper-triangle cells (i < j) of every region."""
        return upper_cells(self.r0, self.r1, self.c0, self.c1)

    def offdiag(self) -> np.ndarray:
        """Number of off-diagonal cells (i != j) of every region."""
        return offdiag_cells(self.r0, self.r1, self.c0, self.c1)

    def released(self, noisy: np.ndarray) -> Partition:
        """These regions with their released counts ``noisy`` (float64, one per region)."""
        return replace(self, noisy=np.asarray(noisy, dtype=np.float64))

    def to_json(self) -> dict:
        """A JSON-ready mapping (lists), for ``--partitions P.json`` and the page's download."""
        if self.noisy is None:
            raise InputError("partition: no released counts to write")
        return {name: getattr(self, name).tolist() for name in
                ("r0", "r1", "c0", "c1", "depth", "parent", "leaf", "noisy")}


# ------------------------------------------------------------------------------------------- range counting


@dataclass(frozen=True)
class EdgeIndex:
    """Static orthogonal range counting over points (u, v) (a merge-sort tree on the u order).

    ``u_sorted``: the u of every point, sorted. ``levels[l]``: int64 keys ``block * width + v`` of the
    points in u order, sorted inside consecutive blocks of 2^l points (block = position >> l), so one
    global ``searchsorted`` counts v < b inside any block. Memory: (levels + 1) x m x 8 bytes.
    """

    u_sorted: np.ndarray
    levels: tuple[np.ndarray, ...]
    width: int

    @property
    def n_points(self) -> int:
        return int(self.u_sorted.size)

    @classmethod
    def build(cls, points_u: object, points_v: object) -> EdgeIndex:
        """Index the points (u[i], v[i]) (non-negative integers)."""
        u = _int_array("points_u", points_u)
        v = _int_array("points_v", points_v)
        if u.size != v.size:
            raise InputError(f"points: points_u and points_v must have the same length, got {u.size} and {v.size}")
        if u.size and (int(u.min()) < 0 or int(v.min()) < 0):
            raise InputError("points: vertex positions must be >= 0")
        m = u.size
        width = int(v.max()) + 2 if m else 2  # keys use v <= width - 2; queries clip b to width - 1
        order = np.argsort(u, kind="stable")
        u_sorted = u[order]
        vals = v[order]
        pos = np.arange(m, dtype=np.int64)
        levels = []
        n_levels = max(1, int(m).bit_length())  # blocks of 2^l for 2^l <= m
        for lvl in range(n_levels):  # O(log m) levels, each a vectorised sort: not a loop over points
            keys = (pos >> lvl) * width + vals
            if lvl:
                keys.sort(kind="stable")  # the level below left sorted runs of 2^(l-1): cheap merges
            levels.append(keys)
            vals = keys - (pos >> lvl) * width
        return cls(u_sorted=u_sorted, levels=tuple(levels), width=width)

    def dominance(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """#{points with u < a and v < b} for each pair (a[i], b[i])."""
        a = np.asarray(a, dtype=np.int64)
        b = np.clip(np.asarray(b, dtype=np.int64), 0, self.width - 1)
        out = np.zeros(a.shape, dtype=np.int64)
        if self.n_points == 0:
            return out
        k = np.searchsorted(self.u_sorted, a, side="left").astype(np.int64)
        # The prefix [0, k) of the u order is the union of the blocks of size 2^l for the set bits l
        # of k, the block of level l being number (k >> l) - 1.
        for lvl, keys in enumerate(self.levels):  # O(log m) levels
            sel = np.flatnonzero((k >> lvl) & 1)
            if sel.size == 0:
                continue
            block = (k[sel] >> lvl) - 1
            found = np.searchsorted(keys, block * self.width + b[sel], side="left")
            out[sel] += found - (block << lvl)
        return out

    def count(self, r0: object, r1: object, c0: object, c1: object) -> np.ndarray:
        """#{points with r0 <= u < r1 and c0 <= v < c1} for each rectangle (int64)."""
        r0, r1, c0, c1 = _rects(r0, r1, c0, c1)
        n = r0.size
        a = np.concatenate([r1, r0, r1, r0])
        b = np.concatenate([c1, c1, c0, c0])
        d = self.dominance(a, b)
        out = d[:n] - d[n:2 * n] - d[2 * n:3 * n] + d[3 * n:]
        return np.where((r1 > r0) & (c1 > c0), out, 0)


def count_upper(points_u: object, points_v: object, r0: object, r1: object, c0: object, c1: object, *,
                index: EdgeIndex | None = None) -> np.ndarray:
    """Number of edges (u < v) with r0 <= u < r1 and c0 <= v < c1, for each rectangle (int64).

    ``points_u``, ``points_v``: the edges' cells (points with u >= v are ignored). Vectorised over the
    rectangles; never |V|². Pass ``index=EdgeIndex.build(u, v)`` (built from u < v points) to reuse one
    index over many calls; then ``points_u``/``points_v`` are not read.
    """
    if index is None:
        u = _int_array("points_u", points_u)
        v = _int_array("points_v", points_v)
        if u.size != v.size:
            raise InputError(f"points: points_u and points_v must have the same length, got {u.size} and {v.size}")
        keep = u < v
        index = EdgeIndex.build(u[keep], v[keep])
    return index.count(r0, r1, c0, c1)


def count_below(point_group: object, point_coord: object, query_group: object, query_pos: object) -> np.ndarray:
    """#{points i with point_group[i] == g and point_coord[i] < p} for each query (g, p) (int64).

    Groups and coordinates are non-negative integers. One sort of the points by (group, coordinate) and
    one ``searchsorted`` per query: the split-candidate counts of every region of a kd-tree depth at once.
    """
    pg = _int_array("point_group", point_group)
    pc = _int_array("point_coord", point_coord)
    qg = _int_array("query_group", query_group)
    qp = _int_array("query_pos", query_pos)
    if pg.size != pc.size or qg.size != qp.size:
        raise InputError("count_below: groups and coordinates must have matching lengths")
    if qg.size == 0:
        return np.zeros(0, dtype=np.int64)
    if pg.size == 0:
        return np.zeros(qg.size, dtype=np.int64)
    if min(int(pg.min()), int(pc.min()), int(qg.min())) < 0:
        raise InputError("count_below: groups and point coordinates must be >= 0")
    width = int(pc.max()) + 2
    keys = np.sort(pg * width + pc)
    q = np.clip(qp, 0, width - 1)
    return (np.searchsorted(keys, qg * width + q, side="left")
            - np.searchsorted(keys, qg * width, side="left")).astype(np.int64)


# ------------------------------------------------------------------------------------------- placement


def _check_rng(rng: object) -> np.random.Generator:
    if rng is None:
        # Placement is post-processing of released counts (it never reads the data), so its randomness
        # needs no cryptographic strength: a Generator seeded from OS entropy.
        return np.random.default_rng()
    if not isinstance(rng, np.random.Generator):
        raise InputError(f"rng: expected a numpy.random.Generator or None, got {type(rng).__name__}")
    return rng


def _valid_box(r0, r1, c0, c1, upper: bool) -> tuple[np.ndarray, ...]:
    """The smallest box holding every valid cell; for ``upper`` at least half its cells are valid.

    Upper: rows [r0, min(r1, c1 - 1)), columns [max(c0, r0 + 1), c1). In that box the invalid cells
    (j <= i) form a triangle of side s = rows_end - cols_start with s(s+1)/2 cells, and the box has at
    least (s+1)² cells, so the valid fraction is > 1/2.
    """
    if not upper:
        return r0, r1, c0, c1
    rb1 = np.minimum(r1, c1 - 1)
    cb0 = np.maximum(c0, r0 + 1)
    return r0, np.maximum(rb1, r0), cb0, np.maximum(c1, cb0)


def _cell_keys(i: np.ndarray, j: np.ndarray, width: int) -> np.ndarray:
    return i * np.int64(width) + j


def _select_k(group: np.ndarray, i: np.ndarray, j: np.ndarray, k: np.ndarray,
              rng: np.random.Generator) -> np.ndarray:
    """Indices of a uniformly random subset of size k[g] of the (distinct) cells of each group g."""
    if group.size == 0:
        return np.zeros(0, dtype=np.int64)
    if int(group.max()) < 2**22:  # one int64 key: group in the high bits, 40 random bits below
        key = (group << 40) | rng.integers(0, 2**40, size=group.size, dtype=np.int64)
        order = np.argsort(key)
    else:
        order = np.lexsort((rng.random(group.size), group))
    g_sorted = group[order]
    starts = np.searchsorted(g_sorted, g_sorted, side="left")
    rank = np.arange(group.size) - starts
    return order[rank < k[g_sorted]]


def _dedupe(group: np.ndarray, i: np.ndarray, j: np.ndarray, width: int) -> np.ndarray:
    """Indices of one occurrence of each distinct (group, i, j) (cells < ``width``)."""
    if group.size == 0:
        return np.zeros(0, dtype=np.int64)
    if (int(group.max()) + 1) * width * width < 2**62:  # one int64 key: one sort instead of a lexsort
        _, first = np.unique((group * width + i) * width + j, return_index=True)
        return first
    order = np.lexsort((j, i, group))
    g, ii, jj = group[order], i[order], j[order]
    new = np.ones(order.size, dtype=bool)
    new[1:] = (g[1:] != g[:-1]) | (ii[1:] != ii[:-1]) | (jj[1:] != jj[:-1])
    return order[new]


def _is_excluded(i: np.ndarray, j: np.ndarray, excl_keys: np.ndarray | None, width: int) -> np.ndarray:
    if excl_keys is None or excl_keys.size == 0:
        return np.zeros(i.size, dtype=bool)
    keys = _cell_keys(i, j, width)
    pos = np.searchsorted(excl_keys, keys)
    pos = np.minimum(pos, excl_keys.size - 1)
    return excl_keys[pos] == keys


def _enumerate(r0, r1, c0, c1, upper: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every valid cell of each region (only called on regions with few cells): (group, i, j)."""
    rows, rgroup = ragged_arange(r0, r1 - r0)
    lo = np.maximum(c0[rgroup], rows + 1) if upper else c0[rgroup]
    hi = c1[rgroup]
    cols, row_idx = ragged_arange(lo, hi - lo)
    i = rows[row_idx]
    group = rgroup[row_idx]
    if not upper:
        keep = cols != i
        return group[keep], i[keep], cols[keep]
    return group, i, cols


def place_uniform(r0: object, r1: object, c0: object, c1: object, k: object,
                  rng: np.random.Generator | None = None, *, upper: bool = True,
                  exclude: np.ndarray | None = None, return_region: bool = False):
    """For each region, ``k[i]`` distinct cells drawn uniformly at random without replacement.

    ``upper=True`` (default): cells (i, j) with i < j (the upper triangle: one cell per edge).
    ``upper=False``: cells with i != j (both triangles, as in the paper's symmetric matrix).
    ``exclude``: int64 (E, 2) distinct cells that are never drawn (used by the published DRF, which puts
    its extra ones on the 0 elements of A). ``k`` is clipped to [0, valid cells of the region].

    Returns an int64 array (K, 2) of (row, column) cells, grouped by region in region order, and with
    ``return_region=True`` also the region index of each cell. Regions may overlap; each is sampled on
    its own. Uniformity: the distinct cells of i.i.d. uniform draws form an exchangeable random set, and
    a uniformly random k-subset of it is therefore a uniform k-subset of the region's valid cells; small
    or nearly full regions are enumerated and a uniform k-subset is taken directly.
    """
    r0, r1, c0, c1 = _rects(r0, r1, c0, c1)
    kk = np.broadcast_to(_int_array("k", k), r0.shape).astype(np.int64)
    gen = _check_rng(rng)
    n_reg = r0.size
    empty = np.zeros((0, 2), dtype=np.int64)
    if n_reg == 0:
        return (empty, np.zeros(0, dtype=np.int64)) if return_region else empty
    if r0.size and (int(np.minimum(r0, c0).min()) < 0):
        raise InputError("place_uniform: region bounds must be >= 0")
    cap = upper_cells(r0, r1, c0, c1) if upper else offdiag_cells(r0, r1, c0, c1)
    excl_keys = None
    width = int(max(int(r1.max()), int(c1.max()), 1)) + 1
    if exclude is not None:
        ex = np.asarray(exclude, dtype=np.int64).reshape(-1, 2)
        if ex.size:
            valid = (ex[:, 0] != ex[:, 1]) & ((ex[:, 0] < ex[:, 1]) | (not upper))
            ex = ex[valid & (ex >= 0).all(axis=1)]
            width = max(width, int(ex.max()) + 1) if ex.size else width
            excl_keys = np.unique(_cell_keys(ex[:, 0], ex[:, 1], width))
            index = EdgeIndex.build(ex[:, 0], ex[:, 1])
            cap = cap - index.count(r0, r1, c0, c1)
    kk = np.clip(kk, 0, cap)

    b_r0, b_r1, b_c0, b_c1 = _valid_box(r0, r1, c0, c1, upper)
    box = (b_r1 - b_r0) * (b_c1 - b_c0)
    active = kk > 0
    enum = active & (cap <= 2 * kk + _ENUMERATE_SLACK)
    rej = active & ~enum

    groups, rows, cols = [], [], []
    # --- enumeration of small / nearly full regions
    if enum.any():
        e_idx = np.flatnonzero(enum)
        g, i, j = _enumerate(r0[e_idx], r1[e_idx], c0[e_idx], c1[e_idx], upper)
        keep = ~_is_excluded(i, j, excl_keys, width)
        g, i, j = e_idx[g[keep]], i[keep], j[keep]
        sel = _select_k(g, i, j, kk, gen)
        groups.append(g[sel]), rows.append(i[sel]), cols.append(j[sel])
    # --- rejection sampling of the others (k < cap / 2: most draws are new)
    if rej.any():
        pending = np.flatnonzero(rej)
        have = np.zeros(n_reg, dtype=np.int64)
        cg = np.zeros(0, dtype=np.int64)
        ci = np.zeros(0, dtype=np.int64)
        cj = np.zeros(0, dtype=np.int64)
        while pending.size:  # a few rounds: each draws about twice the missing cells
            need = kk[pending] - have[pending]
            ratio = box[pending] / np.maximum(cap[pending], 1)
            n_draw = np.ceil(2.0 * need * ratio).astype(np.int64) + 8
            g = np.repeat(pending, n_draw)
            i = gen.integers(b_r0[g], b_r1[g])
            j = gen.integers(b_c0[g], b_c1[g])
            ok = (i < j) if upper else (i != j)
            ok &= ~_is_excluded(i, j, excl_keys, width)
            cg = np.concatenate([cg, g[ok]])
            ci = np.concatenate([ci, i[ok]])
            cj = np.concatenate([cj, j[ok]])
            first = _dedupe(cg, ci, cj, width)
            cg, ci, cj = cg[first], ci[first], cj[first]
            have = np.bincount(cg, minlength=n_reg)
            pending = np.flatnonzero(rej & (have < kk))
        sel = _select_k(cg, ci, cj, kk, gen)
        groups.append(cg[sel]), rows.append(ci[sel]), cols.append(cj[sel])
    if not groups:
        return (empty, np.zeros(0, dtype=np.int64)) if return_region else empty
    g = np.concatenate(groups)
    i = np.concatenate(rows)
    j = np.concatenate(cols)
    order = np.lexsort((j, i, g))
    cells = np.column_stack([i[order], j[order]]).astype(np.int64)
    return (cells, g[order]) if return_region else cells
