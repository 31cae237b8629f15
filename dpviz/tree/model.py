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

import numpy as np
import scipy.sparse as sp
from scipy.sparse import csgraph

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
        labels: node ids as given by the user, in DOH order (``None`` for synthetic trees: ids are input positions).
    """

    parent: np.ndarray
    height: np.ndarray
    depth: np.ndarray
    order: np.ndarray
    labels: np.ndarray | None = None
    block_start: np.ndarray = field(repr=False, default=None)  # type: ignore[assignment]

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
    def children_count(self) -> np.ndarray:
        """|C_i| for every node (Prop. 4 gives the same vector as (I - Gᵀ)1)."""
        return np.bincount(self.parent[1:], minlength=self.n).astype(np.int64)

    @cached_property
    def leaf_labels(self) -> np.ndarray:
        """Labels of the leaves in leaf order (x_1..x_m)."""
        return self.label_of(np.arange(self.n1, self.n))

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

        Propagation then uses compiled sparse triangular solves instead of per-block NumPy calls.
        """
        return self.h > 64 and self.h * 512 > self.n

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
            labels=None if self.labels is None else self.labels[:nk],
            block_start=self.block_start[k:] ,
        )


def tree_from_parents(
    parent: np.ndarray,
    labels: np.ndarray | None = None,
    where: Callable[[int], str] = lambda i: f"position {i}",
) -> Tree:
    """Build a :class:`Tree` from a parent array in input order (``-1`` marks the root).

    Validates: exactly one root, parents in range, no cycles; ``where(i)`` names input position ``i``
    in error messages (e.g. ``"line 7 (node 'x')"``). Runs in O(n) NumPy/compiled passes plus one
    loop over depth levels of O(log n) work each (a 10⁶-node path takes about a second).
    """
    p = np.asarray(parent)
    if p.ndim != 1 or p.shape[0] == 0:
        raise InputError("the tree is empty: expected at least one node")
    if not np.issubdtype(p.dtype, np.integer):
        raise InputError("parent indices must be integers")
    n = int(p.shape[0])
    if n >= np.iinfo(INDEX).max:
        raise InputError(f"too many nodes: {n}")
    p = p.astype(INDEX, copy=False)
    roots = np.flatnonzero(p < 0)
    if roots.size == 0:
        raise InputError("no root: every node has a parent (expected exactly one node without a parent)")
    if roots.size > 1:
        raise InputError(
            f"several roots: {_fmt(roots, where)} have no parent (expected exactly one root)"
        )
    if int(p.max()) >= n:
        bad = np.flatnonzero(p >= n)
        raise InputError(f"parent index out of range at {_fmt(bad, where)}")
    root = int(roots[0])
    bfs = _bfs_order(p, root)
    if bfs is not None and bfs.shape[0] != n:
        self_loop = np.flatnonzero(p == np.arange(n))
        if self_loop.size:
            raise InputError(f"cycle: {where(int(self_loop[0]))} is its own parent")
        seen = np.zeros(n, bool)
        seen[bfs] = True
        lost = np.flatnonzero(~seen)
        raise InputError(
            f"cycle: {lost.size} node(s) cannot reach the root, e.g. {_fmt(lost, where)}"
        )
    depth = _depth_from_bfs(p, bfs)
    height = _heights(p, depth, bfs)
    h = int(height[root])
    if not np.any(height[1:] > height[:-1]):  # input already in DOH order (e.g. complete trees)
        order = np.arange(n, dtype=INDEX)
        parent_doh, height_doh, depth_doh = p.copy(), height, depth
    else:
        key = height.astype(np.int16 if h < np.iinfo(np.int16).max else np.int32)
        order = np.argsort(-key, kind="stable").astype(INDEX)  # Def. 6; radix sort for int16 keys
        del key
        inv = np.empty(n, INDEX)
        inv[order] = np.arange(n, dtype=INDEX)
        pp = p[order]
        pp[0] = 0  # the root comes first in DOH order (largest height); restored below
        parent_doh = inv[pp]
        parent_doh[0] = -1
        del inv, pp
        height_doh, depth_doh = height[order], depth[order]
    # block_start[k] = first DOH index with height <= k  (= n_k); block_start[0] = n
    counts = np.bincount(height_doh, minlength=h + 1)  # counts[k] nodes of height k
    block_start = np.empty(h + 1, np.int64)
    block_start[:] = n - np.cumsum(counts)
    block_start[0] = n
    return Tree(
        parent=parent_doh,
        height=height_doh,
        depth=depth_doh,
        order=order,
        labels=None if labels is None else np.asarray(labels, dtype=object)[order],
        block_start=block_start,
    )


def _bfs_order(p: np.ndarray, root: int) -> np.ndarray | None:
    """Nodes reachable from the root in breadth-first order (compiled csgraph traversal).

    Fast path: ``None`` when the input is already in BFS order (root first, parents non-decreasing
    and before their children, as every generator here produces): the identity order.
    """
    n = p.shape[0]
    if root == 0 and (
        n == 1
        or (not np.any(p[2:] < p[1:-1]) and np.all(p[1:] < np.arange(1, n, dtype=p.dtype)))
    ):
        return None  # parents non-decreasing and before their children: already BFS
    child = np.flatnonzero(p >= 0)
    g = sp.csr_matrix(
        (np.ones(child.size, np.int8), (p[child], child)), shape=(n, n)
    )
    return csgraph.breadth_first_order(g, root, directed=True, return_predecessors=False).astype(INDEX)


def _depth_from_bfs(p: np.ndarray, bfs: np.ndarray | None) -> np.ndarray:
    """Depth (root = 1) from a BFS order: levels are contiguous runs of ``bfs``.

    With ``pp[k]`` = BFS position of the parent of ``bfs[k]`` (non-decreasing in k), level j+1 is the
    run of positions whose parent lies in level j, found by one ``searchsorted``. The loop is over
    depth levels (O(log n) each), not over nodes.
    """
    n = p.shape[0]
    if bfs is None:
        pp = p.astype(np.int64)  # searchsorted must not cast the array on every call
    else:
        pos = np.empty(n, np.int64)
        pos[bfs] = np.arange(n)
        pp = np.full(n, -1, np.int64)
        pp[1:] = pos[p[bfs[1:]]]
    bounds = [0, 1]
    while bounds[-1] < n:
        bounds.append(int(np.searchsorted(pp, bounds[-1], side="left")))
    sizes = np.diff(np.asarray(bounds))
    by_bfs = np.repeat(np.arange(1, sizes.size + 1, dtype=np.int32), sizes)
    if bfs is None:
        return by_bfs
    depth = np.empty(n, np.int32)
    depth[bfs] = by_bfs
    return depth


def _heights(p: np.ndarray, depth: np.ndarray, bfs: np.ndarray | None) -> np.ndarray:
    """Node heights h_i of Eq. (1) without recursion.

    Shallow trees: one ``np.maximum.at`` per depth level from the bottom (levels are contiguous in
    BFS order). Deep trees: pointer jumping — after round r every node holds the max height over its
    descendants within distance < 2^r, so ⌈log₂ depth⌉ rounds of O(n) vectorised work suffice.
    """
    n = p.shape[0]
    levels = int(depth.max())
    height = np.ones(n, np.int32)
    if levels == 1:
        return height
    if levels <= 4096:
        d_sorted = depth if bfs is None else depth[bfs]
        starts = np.searchsorted(d_sorted, np.arange(1, levels + 2))
        for lev in range(levels, 1, -1):  # loop over depth levels, vectorised inside
            sl = slice(starts[lev - 1], starts[lev])
            nodes = sl if bfs is None else bfs[sl]
            np.maximum.at(height, p[nodes], height[nodes] + 1)
        return height
    # pointer jumping: val[i] = max_{descendants j within distance < 2^r} (depth_j), anc = 2^r-th ancestor
    val = depth.astype(np.int64)
    anc = p.astype(np.int64)
    while True:
        has = np.flatnonzero(anc >= 0)
        if has.size == 0:
            break
        np.maximum.at(val, anc[has], val[has])
        nxt = np.full(n, -1, np.int64)
        nxt[has] = anc[anc[has]]
        anc = nxt
    return (val - depth + 1).astype(np.int32)


def _fmt(idx: np.ndarray, where: Callable[[int], str] = str, limit: int = 3) -> str:
    shown = ", ".join(where(int(i)) for i in idx[:limit])
    return shown + (f" (and {idx.size - limit} more)" if idx.size > limit else "")
