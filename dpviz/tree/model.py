"""The hierarchical tree model in Descending Order of Height (paper Def. 2, Def. 6, Def. 9).

A :class:`Tree` is built once per structure (stage 1 of GMC) from a parent array in any node order.
It stores the tree renumbered so that ``i < j ⇒ h_i ≥ h_j`` (Def. 6, Eq. 9): the root is node 0,
the ``n₁`` internal nodes come first (they form the 1-order subtree T⁽¹⁾, Def. 3) and the ``m``
leaves last. Nodes of equal height keep their input order, so leaves keep the user's left-to-right
order, which is the order of the leaf vector ``x`` and of range queries (Eq. 41).

Because heights strictly decrease from parent to child, every height class is a contiguous block
and a bottom-up (or top-down) pass over the tree is a pass over ``h`` blocks: the propagation
routines in :mod:`dpviz.tree.propagation` vectorise inside each block. Depths and heights are
computed without recursion, so a 10⁶-node path is as safe as a star.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from dpviz.core.structure import StructureSource
from dpviz.errors import InputError

INDEX = np.int32  # node indices; trees up to 2^31 - 1 nodes

__all__ = ["Tree", "tree_from_parents", "INDEX"]


@dataclass(frozen=True, eq=False)
class Tree:
    """A rooted tree numbered in Descending Order of Height (Def. 6).

    Attributes (all arrays indexed by the DOH number ``i = 0..n-1``; node 1 of the paper is ``i = 0``):
        parent: ``f_i``, the parent of node ``i``; ``parent[0] == -1`` (the root).
        height: ``h_i`` of Def. 2 / Eq. (1): 1 for a leaf, else 1 + max over children.
        depth:  1 for the root (Prop. 6 convention), ``depth[f_i] + 1`` otherwise.
        order:  ``order[i]`` = input position of DOH node ``i`` (the inverse of the ordered set S of Def. 9).
        labels: node ids as given by the user, in DOH order (``None`` for synthetic trees: ids are input positions);
            a NumPy object array, made on first use from the Arrow strings a file reader passes
            (:attr:`label_array` gives them without a Python object per node).
    """

    parent: np.ndarray
    height: np.ndarray
    depth: np.ndarray
    order: np.ndarray
    label_source: Any = field(repr=False, default=None)
    """The ids in DOH order as given (a NumPy array, or Arrow strings); read them as ``labels``/``label_array``."""
    block_start: np.ndarray = field(repr=False, default=None)  # type: ignore[assignment]
    schedule: Any = field(repr=False, default=None)
    """The tree-contraction schedule of T⁽¹⁾ (:class:`dpviz.tree.sweeps.Contraction`, DOH numbers) when
    :func:`tree_from_parents` built one to find the depths and heights of a deep tree, else None (the deep
    engine then builds it on first use)."""

    # ---- sizes ---------------------------------------------------------------------------
    @property
    def n(self) -> int:
        """Number of nodes."""
        return int(self.parent.shape[0])

    @property
    def h(self) -> int:
        """Tree height = h of the root = number of levels = L1 sensitivity of the node vector."""
        return int(self.height[0])

    @cached_property
    def n1(self) -> int:
        """n₁: number of internal (non-leaf) nodes = size of the 1-order subtree T⁽¹⁾."""
        return self.n_k(1)

    @property
    def m(self) -> int:
        """Number of leaves (unit counts x_1..x_m)."""
        return self.n - self.n1

    def n_k(self, k: int) -> int:
        """n_k: number of nodes of the k-order subtree T⁽ᵏ⁾ (nodes with h_i > k, Def. 3)."""
        if k <= 0:
            return self.n
        if k >= self.h:
            return 0
        return int(self.block_start[k])

    # ---- level blocks --------------------------------------------------------------------
    def block(self, height: int) -> slice:
        """DOH index range of the nodes of height ``height`` (1 = leaves, h = root)."""
        return slice(int(self.block_start[height]), int(self.block_start[height - 1]))

    def blocks_bottom_up(self, min_height: int = 1) -> list[slice]:
        """Height blocks from ``min_height`` up to the root block (for upward propagation)."""
        return [self.block(k) for k in range(min_height, self.h + 1)]

    # ---- derived structure (cached: computed once per structure) --------------------------
    @cached_property
    def in_input_order(self) -> bool:
        """Whether the input was already in DOH order (``order`` is the identity: as every generator
        here writes trees): per-node arrays then need no reordering on the way in or out."""
        o = self.order
        return bool(o[0] == 0 and o[-1] == o.size - 1 and np.all(o[1:] > o[:-1]))

    @cached_property
    def input_positions(self) -> np.ndarray:
        """DOH number of each input row (the inverse of ``order``), O(n) without a sort, read-only; as ``intp``,
        the index type NumPy gathers with (any other is converted on every gather). Computed once per tree:
        a release needs it on two threads (the variance text and the published columns)."""
        inv = np.empty(self.n, np.intp)
        inv[self.order] = np.arange(self.n, dtype=np.intp)
        inv.setflags(write=False)
        return inv

    @cached_property
    def children_count(self) -> np.ndarray:
        """|C_i| for every node (Prop. 4 gives the same vector as (I - Gᵀ)1)."""
        return np.bincount(self.parent[1:], minlength=self.n).astype(np.int64)

    @cached_property
    def leaf_labels(self) -> np.ndarray:
        """Labels of the leaves in leaf order (x_1..x_m)."""
        return self.label_of(np.arange(self.n1, self.n))

    @cached_property
    def labels(self) -> np.ndarray | None:
        """User ids in DOH order (object array), or None for an unlabelled tree."""
        src = self.label_source
        if src is None or isinstance(src, np.ndarray):
            return src
        return src.to_numpy(zero_copy_only=False)  # Arrow strings

    @cached_property
    def label_array(self):
        """User ids in DOH order as Arrow strings (``pyarrow.StringArray``), or None for an unlabelled tree."""
        src = self.label_source
        if src is None or not isinstance(src, np.ndarray):
            return src
        import pyarrow as pa

        return pa.array(src, type=pa.string())

    def label_of(self, idx: np.ndarray) -> np.ndarray:
        """User ids of DOH nodes ``idx`` (input positions as strings for unlabelled trees)."""
        if self.labels is None:
            return self.order[idx].astype(str)
        return self.labels[idx]

    @cached_property
    def depth_levels(self) -> int:
        """Maximum depth (= h for every tree: the deepest leaf has height 1 and depth h)."""
        return int(self.depth.max())

    @property
    def is_deep(self) -> bool:
        """True when a Python-level pass per height block would dominate (paths, caterpillars).

        Propagation and GMC then replay a tree-contraction schedule (:mod:`dpviz.tree.sweeps`) instead of
        h per-block NumPy steps; on 10⁶ nodes the two break even near h ≈ 7,000 (bench/tree_io_bench.py).
        """
        return self.h > 64 and self.h * 128 > self.n

    def subtree(self, k: int) -> "Tree":
        """The k-order subtree T⁽ᵏ⁾ (Def. 3): the leading n_k nodes; its structure matrix is G's
        leading principal n_k × n_k submatrix (Fig. 3)."""
        nk = self.n_k(k)
        if nk == 0:
            raise InputError(f"the {k}-order subtree of a tree of height {self.h} is empty")
        return Tree(
            parent=self.parent[:nk],
            height=self.height[:nk] - k,
            depth=self.depth[:nk],
            order=self.order[:nk],
            label_source=None if self.label_source is None else self.label_source[:nk],
            block_start=self.block_start[k:] ,
        )


def tree_from_parents(
    parent: np.ndarray,
    labels: Any = None,
    where: Callable[[int], str] = lambda i: f"position {i}",
) -> Tree:
    """Build a :class:`Tree` from a parent array in input order (``-1`` marks the root).

    Validates: integer indices, exactly one root (``-1``), every other entry an index in ``0..n-1``
    (checked on the given dtype, before any narrowing: ``2**32`` is out of range, not row 0), no cycles
    (a cycle or a second component is a set of nodes the root cannot reach). ``where(i)`` names input
    position ``i`` in error messages (e.g. ``"line 7 (node 'x')"``).

    O(n) vectorised, no Python loop over nodes: a compiled breadth-first order (skipped when the input
    is already in BFS order, as every generator here writes it: one chunked pass, :func:`_bfs_shape`,
    then proves the array a valid tree; skipped too when parents come before their children, root first,
    :func:`_parents_first`: tree contraction then works in input positions), then depths and heights in BFS
    positions — one NumPy pass per
    depth level for shallow trees (none when every leaf is on the last level: height = h + 1 − depth),
    tree contraction of the internal nodes for deep ones (O(n) work in O(log n) rounds; its schedule is kept
    as ``Tree.schedule`` for the deep engine) — and a stable radix sort by height for the
    DOH numbering.
    """
    p = np.asarray(parent)
    if p.ndim != 1 or p.shape[0] == 0:
        raise InputError("the tree is empty: expected at least one node")
    if p.dtype == bool or not np.issubdtype(p.dtype, np.integer):
        raise InputError("parent indices must be integers")
    n = int(p.shape[0])
    if n >= np.iinfo(INDEX).max:
        raise InputError(f"too many nodes: {n:,} (at most {np.iinfo(INDEX).max - 1:,})")
    shape = _bfs_shape(p)  # BFS input: the range, the root and acyclicity follow from it
    copied = p.dtype != INDEX
    if shape is not None:
        p = p.astype(INDEX, copy=False)
        root, bfs = 0, None
    else:
        if int(p.min()) < -1 or int(p.max()) >= n:  # on the input dtype: no truncation before the check
            bad = np.flatnonzero((p < -1) | (p >= n))
            raise InputError(f"parent index {int(p[bad[0]])} is out of range at {_fmt(bad, where)} (expected -1 "
                             f"for the root or a row index 0..{n - 1})")
        p = p.astype(INDEX, copy=False)
        roots = np.flatnonzero(p < 0)
        if roots.size == 0:
            raise InputError("no root: every node has a parent (expected exactly one node without a parent)")
        if roots.size > 1:
            raise InputError(
                f"several roots: {_fmt(roots, where)} have no parent (expected exactly one root)"
            )
        root = int(roots[0])
        # parents before their children (root first, p[i] < i): a valid tree as it is, whose depths and heights
        # tree contraction computes in input positions (no breadth-first renumbering)
        bfs = None if root == 0 and _parents_first(p) else _bfs_order(p, root)
    if bfs is not None and bfs.shape[0] != n:
        self_loop = np.flatnonzero(p == np.arange(n, dtype=INDEX))
        if self_loop.size:
            raise InputError(f"cycle: {where(int(self_loop[0]))} is its own parent")
        seen = np.zeros(n, bool)
        seen[bfs] = True
        lost = np.flatnonzero(~seen)
        raise InputError(
            f"cycle: {lost.size} node(s) cannot reach the root, e.g. {_fmt(lost, where)}"
        )
    levels = None
    if bfs is None and shape is None:  # parents first, not in BFS order: no level pass applies
        depth, height, sched = _depths_heights_deep(p)
        if int(height[0]) <= LEVEL_LOOP_MAX:  # in BFS order the level pass would have served it: no schedule
            sched = None
    elif bfs is None:
        depth, height, levels, sched = _depths_heights(p, gapless=shape == "gapless")
    else:  # relabel to BFS positions (parents non-decreasing, before their children), then back
        bfs = bfs.astype(np.intp)  # gathers and scatters index with intp (another type is converted each time)
        pos = np.empty(n, np.intp)
        pos[bfs] = np.arange(n, dtype=np.intp)
        q = p[bfs]
        q[0] = 0
        q = pos[q]
        q[0] = -1
        del pos
        d_b, h_b, _, sched = _depths_heights(q)
        del q
        depth, height = np.empty(n, np.int32), np.empty(n, np.int32)
        depth[bfs], height[bfs] = d_b, h_b
        del d_b, h_b
    h = int(height[root])
    doh = None  # DOH number of each input row (None: the same)
    if levels is not None or not np.any(height[1:] > height[:-1]):  # already in DOH order (complete trees)
        order = np.arange(n, dtype=INDEX)
        parent_doh, height_doh, depth_doh = (p if copied else p.copy()), height, depth
    else:
        ix = _by_height(height, h)  # Def. 6 (intp: it indexes below)
        order = ix.astype(INDEX)
        inv = np.empty(n, INDEX)
        inv[ix] = np.arange(n, dtype=INDEX)
        pp = p[ix]
        pp[0] = 0  # the root comes first in DOH order (largest height); restored below
        parent_doh = inv[pp]
        parent_doh[0] = -1
        del pp
        if sched is not None:
            doh = inv
        del inv
        height_doh, depth_doh = height[ix], depth[ix]
        del ix
    # block_start[k] = first DOH index with height <= k (= n_k); heights are non-increasing in DOH order
    if levels is not None:  # every leaf on the last level: height blocks are the depth levels
        block_start = np.asarray(levels[::-1], dtype=np.int64)
    else:
        block_start = _block_start(height_doh, h)
    schedule = None
    if sched is not None:  # the schedule of T⁽¹⁾ in BFS positions: renamed to DOH numbers (the leading n₁)
        contracted, internal = sched
        rows = internal if bfs is None else bfs[internal]
        schedule = contracted.relabel((rows if doh is None else doh[rows]).astype(INDEX, copy=False))
    return Tree(
        parent=parent_doh,
        height=height_doh,
        depth=depth_doh,
        order=order,
        label_source=_labels_in_order(labels, order, n),
        block_start=block_start,
        schedule=schedule,
    )


def _parents_first(p: np.ndarray, chunk: int = 1 << 17) -> bool:
    """Whether every non-root entry of ``p`` (root at 0, indices checked in range) is below its position
    (``p[i] < i``): parents come before their children. One pass in cache-sized chunks."""
    for a in range(1, p.shape[0], chunk):
        b = min(p.shape[0], a + chunk)
        if np.any(p[a:b] >= np.arange(a, b, dtype=p.dtype)):
            return False
    return True


def _by_height(height: np.ndarray, h: int) -> np.ndarray:
    """Node indices by decreasing height, ties in index order (the DOH numbering, Def. 6): NumPy's stable
    sort is a radix sort for 16-bit keys, so a height above 2^15 is sorted as two 16-bit digits (low
    digit first, then the high one: LSD radix, stable), never by a comparison sort. ``intp`` indices."""
    if h < np.iinfo(np.int16).max:
        key = height.astype(np.int16)
        np.negative(key, out=key)
        return np.argsort(key, kind="stable")
    key = (h - height).astype(np.uint32)  # 0 for the root, increasing as the height decreases
    order = np.argsort((key & 0xFFFF).astype(np.uint16), kind="stable")
    high = (key >> 16).astype(np.uint16)[order]
    return order[np.argsort(high, kind="stable")]


def _labels_in_order(labels: Any, order: np.ndarray, n: int) -> Any:
    """``labels`` (a sequence, NumPy array or Arrow string array, in input order) in DOH order."""
    if labels is None:
        return None
    if hasattr(labels, "take") and not isinstance(labels, np.ndarray):  # Arrow: stays Arrow
        if len(labels) != n:
            raise InputError(f"{len(labels)} labels for {n} nodes")
        identity = order[0] == 0 and order[-1] == n - 1 and not np.any(np.diff(order) != 1)
        return labels if identity else labels.take(order)
    arr = np.asarray(labels, dtype=object)
    if arr.shape != (n,):
        raise InputError(f"{arr.shape[0] if arr.ndim else 0} labels for {n} nodes")
    return arr[order]


def _bfs_order(p: np.ndarray, root: int) -> np.ndarray:
    """Nodes reachable from the root in breadth-first order (compiled csgraph traversal); used when the
    input is not already in BFS order (:func:`_bfs_shape`)."""
    n = p.shape[0]
    child = np.flatnonzero(p >= 0).astype(INDEX, copy=False)
    import scipy.sparse as sp  # imported here: scipy.sparse is 0.1-0.2 s of every tree command's start-up, and
    from scipy.sparse import csgraph  # csgraph pulls in scipy.sparse.linalg (90 ms more)

    g = sp.csr_matrix((np.ones(child.size, np.int8), (p[child], child)), shape=(n, n))

    return csgraph.breadth_first_order(g, root, directed=True, return_predecessors=False).astype(INDEX)


def _bfs_shape(p: np.ndarray, chunk: int = 1 << 17) -> str | None:
    """``"gapless"``, ``"bfs"`` or ``None``: is the parent array (any integer dtype, unchecked) already in
    BFS order — root ``-1`` first, then parents non-decreasing and each before its child (``p[i] < i``),
    as every generator here writes it? Such an array is a valid tree (one root, indices in range, no
    cycle), so the caller skips those checks. ``"gapless"`` adds that consecutive parents differ by at
    most 1, i.e. every node up to ``p[-1]`` has a child (complete and perfect trees); ``p[i] < i`` then
    follows by induction and is not re-checked. One pass in cache-sized chunks, no n-sized temporary.
    """
    n = p.shape[0]
    if p[0] != -1:
        return None
    if n == 1:
        return "gapless"
    if p[1] != 0:
        return None
    gapless = True
    for a in range(2, n, chunk):
        b = min(n, a + chunk)
        cur, prev = p[a:b], p[a - 1 : b - 1]
        if np.any(cur < prev):  # values stay >= p[1] = 0: the subtraction below cannot overflow
            return None
        if gapless and int((cur - prev).max()) <= 1:
            continue  # p[a-1] < a-1 and steps of at most 1: p[i] < i on this chunk
        gapless = False
        if np.any(cur >= np.arange(a, b, dtype=p.dtype)):
            return None
    return "gapless" if gapless else "bfs"


def _block_start(height: np.ndarray, h: int) -> np.ndarray:
    """``block_start[k]`` = first index with ``height <= k`` for k = 0..h, ``height`` non-increasing:
    a vectorised bisection (h + 1 searches at once, ⌈log₂ n⌉ steps) for shallow trees, else one
    searchsorted on the ascending copy."""
    n = height.shape[0]
    if (h + 1) * 64 > n:
        ascending = np.ascontiguousarray(height[::-1])
        return (n - np.searchsorted(ascending, np.arange(h + 1, dtype=ascending.dtype), side="right")).astype(
            np.int64, copy=False)
    k = np.arange(h + 1, dtype=height.dtype)
    lo, hi = np.zeros(h + 1, np.int64), np.full(h + 1, n, np.int64)
    while np.any(lo < hi):
        mid = (lo + hi) >> 1
        below = height[np.minimum(mid, n - 1)] <= k
        hi = np.where(below, mid, hi)
        lo = np.where(below, lo, np.minimum(mid + 1, hi))
    return lo


LEVEL_LOOP_MAX = 2048
"""Depth levels handled one NumPy pass each; deeper trees switch to tree contraction (O(n),
:func:`_depths_heights_deep`)."""


def _depths_heights(q: np.ndarray, gapless: bool = False) -> tuple[np.ndarray, np.ndarray, list[int] | None, Any]:
    """(depth, height) of a tree in BFS order: ``q[0] = -1``, ``q`` non-decreasing and ``q[i] < i``.

    Level ``j + 1`` is then the contiguous run of nodes whose parent lies in level ``j`` (one
    ``searchsorted`` per level), and the children of a node are a contiguous run, so a level's
    heights are one ``maximum.reduceat``. Trees with more than :data:`LEVEL_LOOP_MAX` levels use tree
    contraction instead (:func:`_depths_heights_deep`), whose schedule is returned too (else None).

    ``gapless`` (:func:`_bfs_shape`): nodes ``0..q[-1]`` all have children. If moreover the first
    leaf ``q[-1] + 1`` starts the last level, every leaf is on the last level and height = levels + 1 −
    depth (no per-level pass); the level starts are then returned too (else ``None``).
    """
    n = q.shape[0]
    key = q.dtype.type  # a scalar of q's dtype: searchsorted must not cast q on every call
    starts = [0, 1]
    while starts[-1] < n and len(starts) <= LEVEL_LOOP_MAX:
        starts.append(int(np.searchsorted(q, key(starts[-1]), side="left")))
    if starts[-1] < n:
        depth, height, sched = _depths_heights_deep(q)
        return depth, height, None, sched
    sizes = np.diff(np.asarray(starts))
    depth = np.repeat(np.arange(1, sizes.size + 1, dtype=np.int32), sizes)
    if gapless and (n == 1 or int(q[-1]) + 1 == starts[-2]):
        return depth, np.repeat(np.arange(sizes.size, 0, -1, dtype=np.int32), sizes), starts, None
    height = np.ones(n, np.int32)
    for lev in range(sizes.size - 1, 0, -1):  # children block of each level, deepest first
        a, b = starts[lev], starts[lev + 1]
        kids = q[a:b]
        run = np.flatnonzero(kids[1:] != kids[:-1]) + 1
        run = np.concatenate(([0], run))
        height[kids[run]] = np.maximum.reduceat(height[a:b], run) + 1
    return depth, height, None, None


def _depths_heights_deep(q: np.ndarray) -> tuple[np.ndarray, np.ndarray, tuple[Any, np.ndarray]]:
    """(depth, height, (schedule, internal)) of a deep tree in BFS order (``q[i] < i``, root 0) by tree
    contraction of its internal nodes (:mod:`dpviz.tree.sweeps`, Miller & Reif, FOCS 1985): depths are
    root-to-node path sums of ones (``down_affine``), heights the deepest depth below each node
    (``up_max``) minus its own depth, plus one; the leaves read their parent's depth. O(n) work in
    O(log n) rounds. ``internal``: the BFS positions of the internal nodes (increasing), the nodes of the
    schedule (numbered 0..n₁-1 in that order)."""
    from dpviz.tree.sweeps import contraction, down_affine, up_max

    n = q.shape[0]
    has_child = np.bincount(q[1:], minlength=n) > 0
    internal = np.flatnonzero(has_child)  # intp: it indexes below
    index = np.zeros(n, INDEX)
    index[internal] = np.arange(internal.size, dtype=INDEX)
    q_int = index[np.maximum(q[internal], 0)]  # parents among the internal nodes, order kept: q_int[i] < i
    q_int[0] = -1
    schedule = contraction(q_int)
    d_int = down_affine(schedule, np.ones(internal.size)).astype(np.int32)
    depth = np.empty(n, np.int32)
    depth[internal] = d_int
    leaves = np.flatnonzero(~has_child)
    depth[leaves] = depth[q[leaves]] + 1
    height = np.ones(n, np.int32)
    height[internal] = up_max(schedule, d_int + 1) - d_int + 1  # every internal node has a child one deeper
    return depth, height, (schedule, internal)


def _fmt(idx: np.ndarray, where: Callable[[int], str] = str, limit: int = 3) -> str:
    shown = ", ".join(where(int(i)) for i in idx[:limit])
    return shown + (f" (and {idx.size - limit} more)" if idx.size > limit else "")


@dataclass(frozen=True, eq=False)
class TreeData:
    """A tree structure with its private unit counts ``x`` (one per leaf, in leaf order). ``structure``:
    where the hierarchy came from (a declaration, :mod:`dpviz.tree.hierarchy`); None = read from the data."""

    tree: Tree
    x: np.ndarray
    name: str = "tree"
    structure: StructureSource | None = None

    @cached_property
    def v(self) -> np.ndarray:
        """The node vector v = BuildTree(x) (Eq. 25)."""
        return build_tree(self.tree, self.x)

    @property
    def node_ids(self) -> np.ndarray:
        return self.tree.label_of(np.arange(self.tree.n))

    @property
    def parent_ids(self) -> np.ndarray:
        ids = self.node_ids
        out = np.full(self.tree.n, "", dtype=object)
        out[1:] = ids[self.tree.parent[1:]]
        return out


def build_tree(tree: Tree, x: np.ndarray) -> np.ndarray:
    """BuildTree_T(x) = G_T^{-T} H_Hᵀ x (Eq. 25): place x on the leaves, propagate upward."""
    from dpviz.tree.propagation import upward  # propagation imports this module

    x = np.asarray(x, float)
    if x.shape != (tree.m,):
        raise ValueError(f"expected {tree.m} leaf counts, got shape {x.shape}")
    placed = np.zeros(tree.n)
    placed[tree.n1 :] = x
    return upward(tree, placed)
