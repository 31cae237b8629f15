"""Upward and downward propagation of a Generation Matrix (Props. 2-3, Eqs. 14-15).

``upward`` solves G^T z = v (children before parents), ``downward`` solves G z = v (parents before
children), both in O(n) with no Python loop over nodes:

* ``levels`` engine: one step per height block (nodes of equal height never depend on each other,
  Def. 6), i.e. h steps. A step is one compiled pass over the block's rows of the children incidence
  (upward: y_i += Σ_{c∈C_i} x_c) or of the parent incidence (downward: y_i += a_i x_{f_i}), written
  in place into a slice of the result (SciPy's ``csr_matvec`` kernel, y += A x), so a step allocates
  nothing;
* ``sparse`` engine (the deep-tree engine; the name is kept from when it was a sparse triangular solve):
  tree contraction (:mod:`dpviz.tree.sweeps`) on T⁽¹⁾ — a rake/compress schedule of O(log n) rounds built
  once per structure, replayed by each pass with a few NumPy calls per round, O(n) work in all and no
  factorisation — for deep trees (paths, caterpillars) where h Python-level steps would dominate; the
  leaves reach their parents (upward) or read them (downward) in one compiled pass each.

The index arrays and scratch buffers of a tree live in its :class:`Workspace`, built once per tree
structure and cached (weakly) by the :class:`~dpviz.tree.model.Tree` object: repeated calls on one
tree allocate only their result (:mod:`dpviz.tree.gmc` can write even that into a caller's array).

:func:`partial_propagation` (the teaching stepper: the vector after s height blocks) is the finished
propagation with the nodes not reached yet masked, in O(n) for any s: upward, the first s blocks
finish exactly the nodes of height <= s (a subtree lies in lower blocks); downward, s steps finish
the nodes of height >= h - s + 1 (ancestors lie in higher blocks).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cached_property
from typing import Literal

import numpy as np

from dpviz.errors import InputError
from dpviz.tree.model import Tree
from dpviz.tree.sweeps import Contraction, contraction, down_affine, up_affine

_UNLOADED = object()
_csr_matvec: object = _UNLOADED
"""y += A x for a CSR row range, in place: the compiled kernel behind scipy.sparse's A @ x, imported on first use
(scipy.sparse is 0.1-0.2 s of a tree command's start-up, and most trees never need it); None: the NumPy fallback."""


def _kernel():
    global _csr_matvec
    if _csr_matvec is _UNLOADED:
        try:
            from scipy.sparse._sparsetools import csr_matvec as kernel
        except ImportError:  # pragma: no cover - private SciPy module moved: the NumPy fallback
            kernel = None
        _csr_matvec = kernel
    return _csr_matvec

Engine = Literal["auto", "levels", "sparse"]

__all__ = ["upward", "downward", "partial_propagation", "workspace", "Workspace", "use_sparse", "Engine"]


_SMALL_TREE = 1 << 16
"""Trees with fewer nodes use the NumPy form of :func:`_rows_matvec` until something else has loaded the compiled
kernel: a small release (``tree release sample:county``) then never imports scipy.sparse."""


def _rows_matvec(n_row: int, ptr: np.ndarray, idx: np.ndarray, data: np.ndarray,
                 x: np.ndarray, y: np.ndarray, n: int | None = None) -> None:
    """y[r] += Σ_{j ∈ [ptr[r], ptr[r+1])} data[j] x[idx[j]] for r < n_row (``ptr`` holds absolute
    offsets into ``idx``/``data``, so a row range of a CSR matrix is just a slice of its pointers). ``n``: the
    tree's size (below :data:`_SMALL_TREE`, NumPy unless the compiled kernel is loaded already)."""
    if n_row <= 0:
        return
    kernel = None if n is not None and n < _SMALL_TREE and _csr_matvec is _UNLOADED else _kernel()
    if kernel is not None:
        kernel(n_row, x.shape[0], ptr, idx, data, x, y)
        return
    lo, hi = int(ptr[0]), int(ptr[n_row])
    seg = np.repeat(np.arange(n_row), np.diff(ptr[: n_row + 1]))
    y[:n_row] += np.bincount(seg, weights=data[lo:hi] * x[idx[lo:hi]], minlength=n_row)


class Workspace:
    """Index arrays and scratch buffers of one tree structure (see :func:`workspace`).

    Two layouts of the same steps, chosen once per structure:

    * ``perfect`` (``fanouts`` is not None): every internal node of height K has the same number
      k_K of children and they are exactly the next block, in order (complete k-ary trees, the
      paper's SynData). A step is then k strided slice operations and needs no index array at all;
    * otherwise the CSR children lists of the internal nodes (``children``: children of i are
      ``idx[ptr[i]:ptr[i+1]]``, increasing) for upward steps, and the parent pointers (``rows`` =
      0..n, one entry per row, column ``parent[i]``) for downward steps, run by one compiled
      ``csr_matvec`` call per block. ``ones``: unit coefficients.

    Everything is built on first use; nothing holds a reference to the tree itself.
    """

    def __init__(self, tree: Tree):
        n = tree.n
        dt = np.int32 if n < np.iinfo(np.int32).max else np.int64
        self.n, self.n1, self.h, self.deep = n, tree.n1, tree.h, tree.is_deep
        self.parent = np.ascontiguousarray(tree.parent, dtype=dt)
        self.bounds = np.asarray(tree.block_start, dtype=np.int64).tolist()  # block K = [bounds[K], bounds[K-1])
        self._lock = threading.Lock()
        self._buffers: dict[int, np.ndarray] = {}
        self._schedule = tree.schedule  # built with the tree (deep trees), or None

    def block(self, k: int) -> tuple[int, int]:
        """Index range [s, e) of the nodes of height k (1 = leaves, h = the root)."""
        return self.bounds[k], self.bounds[k - 1]

    @cached_property
    def max_internal_block(self) -> int:
        """Size of the largest block of internal nodes (scratch for the strided steps)."""
        return max((self.bounds[k - 1] - self.bounds[k] for k in range(2, self.h + 1)), default=0)

    @cached_property
    def fanouts(self) -> list[int] | None:
        """k_K by height K (entries 0, 1 unused) when the layout is perfect (class docstring), else None.

        Checked in O(n) without index arrays, given non-decreasing parents: block K-1 has k_K times as
        many nodes as block K, their parents lie in block K and not beyond it, and each run of k_K
        slots starts and ends on the same parent. (Every node of height K has a child of height
        K-1, so the m constant runs take the m parents of block K in order.)"""
        p, h = self.parent, self.h
        if self.n1 == 0 or self.deep or np.any(p[2:] < p[1:-1]):
            return None
        ks = [0, 0]
        for k_h in range(2, h + 1):
            s, e = self.block(k_h)
            c, ce = self.block(k_h - 1)
            m = e - s
            k = (ce - c) // m
            if (ce - c) != k * m or p[c] < s or p[ce - 1] >= e or (ce < self.n and p[ce] < e):
                return None
            if k > 1 and not np.array_equal(p[c:ce:k], p[c + k - 1 : ce : k]):
                return None
            ks.append(k)
        return ks

    @cached_property
    def rows(self) -> np.ndarray:
        return np.arange(self.n + 1, dtype=self.parent.dtype)

    @cached_property
    def ones(self) -> np.ndarray:
        out = np.ones(self.n)
        out.flags.writeable = False
        return out

    @cached_property
    def children(self) -> tuple[np.ndarray, np.ndarray]:
        n, n1, dt = self.n, self.n1, self.parent.dtype
        p = self.parent[1:]
        ptr = np.empty(n1 + 1, dt)
        ptr[0] = 0
        if n1 == 0:
            return ptr, np.empty(0, dt)
        if not np.any(p[1:] < p[:-1]):
            # parents non-decreasing: the children of i are one run, and as every internal node
            # 0..n₁-1 has a child, the runs are those of 0, 1, ..., n₁-1 in this order
            starts = np.flatnonzero(p[1:] != p[:-1])
            if starts.size != n1 - 1:  # pragma: no cover - Tree invariant (internal nodes first)
                raise RuntimeError("internal nodes are not the first n1 nodes")
            starts += 1
            ptr[1:n1] = starts
            ptr[n1] = n - 1
            return ptr, self.rows[1:n]
        np.cumsum(np.bincount(p, minlength=n1), out=ptr[1:])
        idx = np.argsort(p, kind="stable").astype(dt)
        idx += 1
        return ptr, idx

    def fanout(self, i: int) -> int:
        """|C_i|."""
        if i >= self.n1:
            return 0
        if self.fanouts is not None:  # the fan-out of i's block (blocks run from height h down)
            return self.fanouts[next(k for k in range(2, self.h + 1) if self.bounds[k] <= i)]
        ptr = self.children[0]
        return int(ptr[i + 1] - ptr[i])

    # ---- the two steps ------------------------------------------------------------------------
    def child_sum(self, k_h: int, x: np.ndarray, y: np.ndarray, init: np.ndarray | None = None,
                  negate: bool = False) -> None:
        """y_i = (init_i or y_i) ± Σ_{c∈C_i} x_c for the nodes i of height ``k_h`` >= 2, in place."""
        s, e = self.block(k_h)
        yb = y[s:e]
        ks = self.fanouts
        if ks is not None:
            k, m = ks[k_h], e - s
            op = np.subtract if negate else np.add
            if init is None or k == 1 or init is y:  # (in place: init must be read before yb is written)
                op(yb if init is None else init[s:e], x[e : e + k * m : k], out=yb)
                for r in range(1, k):
                    op(yb, x[e + r : e + k * m : k], out=yb)
                return
            np.add(x[e : e + k * m : k], x[e + 1 : e + k * m : k], out=yb)  # children read once
            for r in range(2, k):
                yb += x[e + r : e + k * m : k]
            op(init[s:e], yb, out=yb)
            return
        if init is not None and negate:
            np.negative(init[s:e], out=yb)
        elif init is not None:
            np.copyto(yb, init[s:e])
        elif negate:
            np.negative(yb, out=yb)
        ptr, idx = self.children
        _rows_matvec(e - s, ptr[s : e + 1], idx, self.ones, x, yb, self.n)
        if negate:
            np.negative(yb, out=yb)

    def child_sum_all(self, x: np.ndarray, y: np.ndarray) -> None:
        """y_i += Σ_{c∈C_i} x_c for every internal node i: one ``bincount`` over the parent pointers (no
        children lists: a deep tree never builds them), each node's children summed in index order."""
        if self.fanouts is not None:
            for k_h in range(2, self.h + 1):
                self.child_sum(k_h, x, y)
            return
        if self.n1:
            y[: self.n1] += np.bincount(self._parent_intp, weights=x[1 : self.n], minlength=self.n1)

    @cached_property
    def _parent_intp(self) -> np.ndarray:
        """The non-root parent pointers as ``intp`` (what ``bincount`` takes without a conversion per call)."""
        return self.parent[1:].astype(np.intp)

    def parent_add(self, k_h: int, x: np.ndarray, y: np.ndarray, coef=None, init: np.ndarray | None = None,
                   tmp: np.ndarray | None = None) -> None:
        """y_i = (init_i or y_i) + coef_i x_{f_i} for the nodes i of height ``k_h`` < h, in place.
        ``coef``: None (1), a number, or an array indexed by node; ``tmp``: optional scratch of at
        least the parents' block size (perfect layout with a coefficient)."""
        s, e = self.block(k_h)
        ks = self.fanouts
        if ks is not None:
            ps = self.bounds[k_h + 1]
            k, m = ks[k_h + 1], s - ps
            xp = x[ps:s]
            src = xp
            if coef is not None and np.ndim(coef) == 0:
                src = np.multiply(xp, coef, out=None if tmp is None else tmp[:m])
            for r in range(k):
                ysl = y[s + r : e : k]
                add = src
                if coef is not None and np.ndim(coef) == 1:
                    add = np.multiply(coef[s + r : e : k], xp, out=None if tmp is None else tmp[:m])
                np.add(ysl if init is None else init[s + r : e : k], add, out=ysl)
            return
        if init is not None:
            np.copyto(y[s:e], init[s:e])
        if coef is not None and np.ndim(coef) == 0:
            coef = np.full(self.n, float(coef))
        _rows_matvec(e - s, self.rows[s : e + 1], self.parent, self.ones if coef is None else coef, x, y[s:e], self.n)

    def parent_add_all(self, x: np.ndarray, y: np.ndarray, coef: np.ndarray | None = None) -> None:
        """y_i += coef_i x_{f_i} for every non-root node i (``coef`` None or an array by node)."""
        if self.fanouts is not None:
            for k_h in range(self.h - 1, 0, -1):
                self.parent_add(k_h, x, y, coef)
            return
        _rows_matvec(self.n - 1, self.rows[1:], self.parent, self.ones if coef is None else coef, x, y[1:], self.n)

    # ---- scratch --------------------------------------------------------------------------------
    @contextmanager
    def scratch(self, *sizes: int) -> Iterator[list[np.ndarray]]:
        """Uninitialised float buffers of these sizes, reused across calls; a concurrent caller (another
        thread, e.g. another Streamlit session) gets fresh ones instead of waiting."""
        if not self._lock.acquire(blocking=False):
            yield [np.empty(s) for s in sizes]
            return
        try:
            out = []
            for slot, size in enumerate(sizes):
                buf = self._buffers.get(slot)
                if buf is None or buf.shape[0] != size:
                    buf = self._buffers[slot] = np.empty(size)
                out.append(buf)
            yield out
        finally:
            self._lock.release()

    # ---- deep trees: the tree-contraction schedule of T⁽¹⁾ ---------------------------------------
    @cached_property
    def contraction(self) -> Contraction:
        """The rake/compress schedule (:mod:`dpviz.tree.sweeps`) of the internal-node tree T⁽¹⁾ (the leading
        n₁ nodes), built once per structure (or taken from the tree, which :func:`dpviz.tree.model.tree_from_parents`
        built it with: ``Tree.schedule``); the leaves are handled around it in one compiled pass each."""
        if self._schedule is not None:
            return self._schedule
        return contraction(self.parent[: max(self.n1, 1)])


_WORKSPACES: weakref.WeakKeyDictionary[Tree, Workspace] = weakref.WeakKeyDictionary()
_WORKSPACES_LOCK = threading.Lock()


def workspace(tree: Tree) -> Workspace:
    """The :class:`Workspace` of ``tree``: built on first use, then reused while the tree lives."""
    with _WORKSPACES_LOCK:
        ws = _WORKSPACES.get(tree)
        if ws is None:
            ws = _WORKSPACES[tree] = Workspace(tree)
        return ws


# ---- public propagation -----------------------------------------------------------------------
def use_sparse(tree: Tree, engine: Engine) -> bool:
    """Whether ``engine`` means the sparse (deep-tree) engine for this tree."""
    if engine not in ("auto", "levels", "sparse"):
        raise ValueError(f"engine must be 'auto', 'levels' or 'sparse', got {engine!r}")
    return engine == "sparse" or (engine == "auto" and tree.is_deep)


def _is_one(w) -> bool:
    return np.ndim(w) == 0 and float(w) == 1.0


def _vector(tree: Tree, v) -> np.ndarray:
    v = np.ascontiguousarray(v, dtype=float)
    if v.shape != (tree.n,):
        raise ValueError(f"expected a vector of length {tree.n}, got shape {v.shape}")
    return v


def _full(w, n: int) -> np.ndarray:
    return np.ascontiguousarray(np.broadcast_to(np.asarray(w, float), (n,)))


def _coefficients(n: int, w_node, w_edge) -> tuple[np.ndarray | None, np.ndarray | None]:
    """(1/w, w_edge/w) as n-vectors, None where they are all ones."""
    inv = None if _is_one(w_node) else np.divide(1.0, _full(w_node, n))
    if _is_one(w_edge):
        return inv, inv
    k = _full(w_edge, n)
    return inv, (k if inv is None else k * inv)


def _upward_deep(tree: Tree, v: np.ndarray, w_node, w_edge, out: np.ndarray | None) -> np.ndarray:
    """Deep engine of :func:`upward`: with s = w ∘ z, s_i = v_i + Σ_{c∈C_i} (w_{c→i}/w_c) s_c; the leaves'
    terms reach their parents in one compiled pass, T⁽¹⁾ is swept by :func:`dpviz.tree.sweeps.up_affine`."""
    ws = workspace(tree)
    n, n1 = tree.n, tree.n1
    inv, k = _coefficients(n, w_node, w_edge)
    a = np.array(v[:n1], dtype=float, copy=True)
    if n1:
        msg = np.zeros(n)
        if k is None:
            msg[n1:] = v[n1:]
        else:
            np.multiply(k[n1:], v[n1:], out=msg[n1:])
        ws.child_sum_all(msg, a)
        del msg
        a = up_affine(ws.contraction, a, None if k is None else k[:n1], out=a)
    z = np.empty(n) if out is None else out
    z[n1:] = v[n1:] if inv is None else v[n1:] * inv[n1:]
    z[:n1] = a if inv is None else a * inv[:n1]
    return z


def _downward_deep(tree: Tree, v: np.ndarray, w_node, w_edge) -> np.ndarray:
    """Deep engine of :func:`downward`: z_i = v_i/w_i + (w_{i→f_i}/w_i) z_{f_i} on T⁽¹⁾ by
    :func:`dpviz.tree.sweeps.down_affine`, then every leaf from its parent in one vectorised step."""
    n, n1 = tree.n, tree.n1
    inv, k = _coefficients(n, w_node, w_edge)
    b = np.array(v, dtype=float, copy=True) if inv is None else v * inv
    if n1:
        b[:n1] = down_affine(workspace(tree).contraction, b[:n1], None if k is None else k[:n1])
        par = tree.parent[n1:]
        b[n1:] += b[par] if k is None else k[n1:] * b[par]
    return b


def upward(tree: Tree, v: np.ndarray, w_node=1.0, w_edge=1.0, engine: Engine = "auto",
           key: str | None = None, out: np.ndarray | None = None) -> np.ndarray:
    """Upward propagation z = G^{-T} v (Prop. 2, Eq. 14).

    z_i = (v_i + Σ_{j∈C_i} w_{j→i} z_j) / w_i; with unit weights z_i is the subtree sum of v.
    ``key``: accepted for callers that name a fixed weight set; no engine needs it any more.
    ``out``: write z there (``levels`` engine; may be ``v`` itself: each entry of v is read before
    its own z is written, so BuildTree of a 10⁸-node tree needs one vector, not two).
    """
    v = _vector(tree, v)
    n, n1 = tree.n, tree.n1
    if out is not None and (out.shape != (n,) or out.dtype != np.float64 or not out.flags.c_contiguous):
        raise ValueError(f"out must be a contiguous float64 vector of length {n}")
    if use_sparse(tree, engine):
        return _upward_deep(tree, v, w_node, w_edge, out)
    ws = workspace(tree)
    unit_node, unit_edge = _is_one(w_node), _is_one(w_edge)
    wn = None if unit_node else _full(w_node, n)
    z = np.empty(n) if out is None else out
    if unit_node:
        np.copyto(z[n1:], v[n1:])
    else:
        np.divide(v[n1:], wn[n1:], out=z[n1:])
    if n1 == 0:
        return z
    msg = z  # what each finished node sends to its parent: w_{j→f_j} z_j
    if not unit_edge:
        we = _full(w_edge, n)
        msg = np.empty(n)
        np.multiply(we[n1:], z[n1:], out=msg[n1:])
    for k in range(2, tree.h + 1):
        s, e = ws.block(k)
        ws.child_sum(k, msg, z, init=v)
        if not unit_node:
            z[s:e] /= wn[s:e]
        if not unit_edge and k < tree.h:
            np.multiply(we[s:e], z[s:e], out=msg[s:e])
    return z


def downward(tree: Tree, v: np.ndarray, w_node=1.0, w_edge=1.0, engine: Engine = "auto",
             key: str | None = None) -> np.ndarray:
    """Downward propagation z = G^{-1} v (Prop. 3, Eq. 15).

    z_i = (v_i + w_{i→f_i} z_{f_i}) / w_i; with unit weights z_i is the sum of v over i's ancestors and i.
    ``key``: as in :func:`upward`.
    """
    v = _vector(tree, v)
    if use_sparse(tree, engine):
        return _downward_deep(tree, v, w_node, w_edge)
    ws = workspace(tree)
    n = tree.n
    unit_node = _is_one(w_node)
    wn = None if unit_node else _full(w_node, n)
    coef = None  # z_i = v_i / w_i + (w_{i→f_i} / w_i) z_{f_i}
    if not (unit_node and _is_one(w_edge)):
        coef = _full(w_edge, n) if unit_node else np.divide(_full(w_edge, n), wn)
    z = np.empty(n)
    z[0] = v[0] if unit_node else v[0] / wn[0]
    for k in range(tree.h - 1, 0, -1):
        s, e = ws.block(k)
        if unit_node:
            ws.parent_add(k, z, z, coef, init=v)
        else:
            np.divide(v[s:e], wn[s:e], out=z[s:e])
            ws.parent_add(k, z, z, coef)
    return z


def partial_propagation(tree: Tree, v: np.ndarray, direction: str = "up", step: int | None = None) -> np.ndarray:
    """The vector after ``step`` height blocks of upward (G^{-T} v, leaves first) or downward
    (G^{-1} v, root first) propagation with unit weights; entries not reached yet are NaN. ``step``
    None or >= h gives the finished result; ``step`` < 1 is an InputError. Returns a new array."""
    if direction not in ("up", "down"):
        raise ValueError(f"direction must be 'up' or 'down', got {direction!r}")
    last = tree.h
    if step is not None:
        if int(step) != step or step < 1:
            raise InputError(f"step must be a whole number of height levels >= 1 (1..{tree.h}), got {step}")
        last = min(int(step), tree.h)
    if direction == "up":
        z = upward(tree, v)
        z[: tree.n_k(last)] = np.nan  # not reached: height > last
    else:
        z = downward(tree, v)
        z[tree.n_k(tree.h - last):] = np.nan  # not reached: height <= h - last
    return z
