"""GMC: Generation-Matrix-based optimally consistent release (paper Sec. 5.3, Alg. 1-2).

Source: "Generation Matrix: An Embeddable Matrix Representation for Hierarchical Trees", Theoretical
Computer Science, 2023 (arXiv:2201.11297).

Given noisy node values ṽ with independent noise of variances ``d`` (all equal for the paper's
uniform budget), the optimally consistent release is the weighted least-squares projection

    v̄ = ṽ - D M (Mᵀ D M)⁻¹ Mᵀ ṽ,                       D = diag(d)          (Eq. 8, weighted)

For D = I this is Eq. (8). Thm. 8/9: Mᵀ D M = G_{T⁽¹⁾←T}ᵀ G_{T⁽¹⁾←T}, where G_{T⁽¹⁾←T} is a
Generation Matrix of the internal-node tree T⁽¹⁾ with

    w_i = sqrt(t_i),   w_{i→f_i} = d_i / w_i,   t_i = d_i + Σ_{c∈C_i} d_c - Σ_{c∈C_i, c internal} d_c² / t_c.

With d ≡ 1, t_i = 1 + θ_i and the recursion is exactly Thm. 9 / Eq. (38) (Alg. 1). Deriving it: match
the diagonal and the (i, f_i) entries of GᵀG with those of Mᵀ D M (its (j,j) entry is
d_j + Σ_{c∈C_j} d_c and its (i, f_i) entry is -d_i). ``t`` are the pivots of the leaves-first
Cholesky factorisation of Mᵀ D M, which has no fill-in on a tree.

Stage 1 (structure, independent of the data and of ε): :func:`plan` computes ``t``.
Stage 2 (per release): :func:`gmc` applies Eq. (36) — two propagations on T⁽¹⁾ — or its
square-root-free form Eq. (39).

On shallow trees both stages run over the height blocks in the tree's :class:`~dpviz.tree.propagation.Workspace`
(index arrays and scratch built once per structure). Stage 2 is three compiled passes: upward over
the children lists with Mᵀṽ folded in (each finished node sends its parent w_{c→f} z_c − ṽ_c, each
leaf −ṽ_c), downward over the parent pointers of T⁽¹⁾, and v̄ = ṽ − D M y over all parent
pointers. The only n-sized array it writes is the result (pass ``out=`` to reuse one); the scratch
is one n₁-vector of the workspace.

Deep trees (``sparse`` engine, :mod:`dpviz.tree.sweeps`) replay the tree-contraction schedule of T⁽¹⁾
instead of h height blocks: the pivots as one sweep of Möbius maps (a node's term d_c − d_c²/t_c is a
Möbius function of t_c), and y = (MᵀDM)⁻¹Mᵀṽ as the two triangular sweeps of the leaves-first
factorisation MᵀDM = L diag(t) Lᵀ: s_i = u_i + Σ_{c∈C_i} (d_c/t_c) s_c upward (u = Mᵀṽ), then
y_i = s_i/t_i + (d_i/t_i) y_{f_i} downward — the same numbers as Eq. (36)/(39) (s = w ∘ z), with no
factorisation and no Python loop over levels.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Literal

import numpy as np

from dpviz.tree.model import Tree
from dpviz.tree.propagation import Engine, Workspace, downward, use_sparse, workspace
from dpviz.tree.sweeps import down_affine, up_affine, up_pivots

Form = Literal["sqrt", "nosqrt"]

__all__ = ["GMCPlan", "theta", "pivots", "plan", "gmc", "m_transpose", "m_times", "output_variance", "Form"]


def theta(tree: Tree) -> np.ndarray:
    """θ of Alg. 1 (Thm. 9, Eq. 38) for the n₁ internal nodes:
    θ_i = |C_i| - Σ_{j∈C_i, j≤n₁} (1 + θ_j)⁻¹, computed bottom-up one height block at a time."""
    return pivots(tree) - 1.0


def _variances(tree: Tree, d) -> np.ndarray | None:
    if d is None:
        return None
    dd = np.ascontiguousarray(d, dtype=float)
    if dd.shape != (tree.n,) or not np.all(np.isfinite(dd)) or not np.all(dd > 0):
        raise ValueError("per-node variances must be a positive finite vector of length n")
    return dd


def pivots(tree: Tree, d: np.ndarray | None = None, engine: Engine = "auto") -> np.ndarray:
    """t_i (i < n₁): the generalised θ' = 1 + θ for per-node noise variances ``d`` (module docstring).

    ``levels`` engine: one step per height block (h - 1 steps); on a perfect layout (complete k-ary
    tree) with variances constant per level, one number per level. ``sparse`` engine (deep trees):
    one tree-contraction sweep (:func:`_pivots_deep`).
    """
    return plan(tree, d, engine).t


def _pivots_nodes(tree: Tree, ws: Workspace, dd: np.ndarray | None) -> np.ndarray:
    """t_i = d_i + Σ_{c∈C_i} (d_c − [c internal] d_c²/t_c) (Alg. 1 with d ≡ 1: 1 + |C_i| − Σ 1/t_c),
    one block at a time: each finished node leaves its term in ``msg`` for its parent's row sum."""
    n, n1, h = tree.n, tree.n1, tree.h
    t = np.empty(n1)
    msg = np.empty(n)  # stage 1 only: freed before stage 2 allocates its result
    msg[n1:] = 1.0 if dd is None else dd[n1:]
    for k in range(2, h + 1):
        s, e = ws.block(k)
        tb = t[s:e]
        tb[...] = 1.0 if dd is None else dd[s:e]
        ws.child_sum(k, msg, t)
        if k < h:
            mb = msg[s:e]
            if dd is None:
                np.divide(1.0, tb, out=mb)
                np.subtract(1.0, mb, out=mb)
            else:
                np.square(dd[s:e], out=mb)
                mb /= tb
                np.subtract(dd[s:e], mb, out=mb)
    return t


def _level_variances(tree: Tree, ws: Workspace, dd: np.ndarray | None) -> np.ndarray | None:
    """d by height (index K) on a perfect layout when d is constant on every height block, else None."""
    if ws.fanouts is None:
        return None
    d_lv = np.ones(tree.h + 1)
    if dd is not None:
        for k in range(1, tree.h + 1):
            s, e = ws.block(k)
            lo = dd[s:e].min()
            if lo != dd[s:e].max():
                return None
            d_lv[k] = lo
    return d_lv


def _pivots_levels(ws: Workspace, d_lv: np.ndarray) -> np.ndarray:
    """The recursion of :func:`_pivots_nodes` with one value per level:
    t_K = d_K + k_K (d_{K-1} − d_{K-1}²/t_{K-1})."""
    t = np.ones(d_lv.shape[0])  # entries 0 and 1 unused
    for k in range(2, t.shape[0]):
        below = d_lv[k - 1] - (d_lv[k - 1] ** 2 / t[k - 1] if k > 2 else 0.0)
        t[k] = d_lv[k] + ws.fanouts[k] * below
    return t


def _pivots_deep(tree: Tree, ws: Workspace, dd: np.ndarray | None) -> np.ndarray:
    """The pivots of :func:`_pivots_nodes` by tree contraction (:func:`dpviz.tree.sweeps.up_pivots`):
    t_i = a_i − Σ_{c∈C_i internal} d_c²/t_c with a_i = d_i + Σ_{c∈C_i} d_c."""
    n1 = tree.n1
    a = np.ones(n1) if dd is None else dd[:n1].copy()
    ws.child_sum_all(ws.ones if dd is None else dd, a)
    return up_pivots(ws.contraction, a, np.ones(n1) if dd is None else np.square(dd[:n1]))


@dataclass(frozen=True, eq=False)
class GMCPlan:
    """Stage 1 of GMC for one tree and one relative variance profile ``d`` (None = uniform).

    GLS is invariant to scaling ``d``, so one plan serves every ε for a fixed budget split. The
    pivots are held per internal node (``nodes``) or, on a perfect layout with variances constant per
    level, per height (``levels``, with the variances ``d_levels``); ``t`` is the per-node vector
    either way.
    """

    tree: Tree
    d: np.ndarray | None = None
    nodes: np.ndarray | None = field(default=None, repr=False)
    levels: np.ndarray | None = field(default=None, repr=False)
    d_levels: np.ndarray | None = field(default=None, repr=False)

    @cached_property
    def t(self) -> np.ndarray:
        """t_i for the n₁ internal nodes (= 1 + θ_i when d ≡ 1)."""
        if self.nodes is not None:
            return self.nodes
        ws, h = workspace(self.tree), self.tree.h
        sizes = [ws.block(k)[1] - ws.block(k)[0] for k in range(h, 1, -1)]
        return np.repeat(self.levels[h:1:-1], sizes)

    @cached_property
    def sub(self) -> Tree:
        """T⁽¹⁾, on which G_{T⁽¹⁾←T} lives."""
        return self.tree.subtree(1)

    @cached_property
    def d1(self) -> np.ndarray:
        """Noise variances of the internal nodes (ones for the paper's uniform case)."""
        return np.ones(self.tree.n1) if self.d is None else self.d[: self.tree.n1]

    @cached_property
    def w(self) -> np.ndarray:
        """Node weights of G_{T⁽¹⁾←T}: w_i = sqrt(t_i) (Eq. 37)."""
        return np.sqrt(self.t)

    @cached_property
    def w_edge(self) -> np.ndarray:
        """Edge weights of G_{T⁽¹⁾←T}: w_{i→f_i} = d_i / w_i (Eq. 37 with d ≡ 1: 1 / w_i)."""
        return self.d1 / self.w

    @cached_property
    def coefficients(self) -> dict:
        """Stage 2's factors, per height (``levels``) or per internal node: 1/w, d/t (the parent's
        weight in the downward step), and for each form the node scale and edge weight (None = 1)."""
        lv = self.levels is not None
        t = self.levels if lv else self.t
        d1 = None if self.d is None else (self.d_levels if lv else self.d[: self.tree.n1])
        inv_w = np.sqrt(t)
        np.divide(1.0, inv_w, out=inv_w)
        ratio = 1.0 / t if d1 is None else d1 / t
        inv_t = ratio if d1 is None else 1.0 / t
        d = None if d1 is None else (self.d_levels if lv else self.d)
        return {"per_level": lv, "inv_w": inv_w, "ratio": ratio, "d": d,
                "scale": {"sqrt": inv_w, "nosqrt": inv_t},
                "edge": {"sqrt": inv_w if d1 is None else d1 * inv_w, "nosqrt": d1}}

    @cached_property
    def variance(self) -> np.ndarray:
        """:func:`output_variance` of this plan, computed once (read-only; scale it by c for d = c·self.d)."""
        out = output_variance(self)
        out.flags.writeable = False
        return out


def plan(tree: Tree, d: np.ndarray | None = None, engine: Engine = "auto") -> GMCPlan:
    """Stage 1: Alg. 1 (construct G_{T⁽¹⁾←T}, represented by its pivots t)."""
    dd = _variances(tree, d)
    sparse = use_sparse(tree, engine)
    if tree.n1 == 0:
        return GMCPlan(tree, dd, nodes=np.zeros(0))
    ws = workspace(tree)
    if sparse:
        return GMCPlan(tree, dd, nodes=_pivots_deep(tree, ws, dd))
    d_lv = _level_variances(tree, ws, dd)
    if d_lv is not None:
        return GMCPlan(tree, dd, levels=_pivots_levels(ws, d_lv), d_levels=d_lv)
    return GMCPlan(tree, dd, nodes=_pivots_nodes(tree, ws, dd))


def m_transpose(tree: Tree, v: np.ndarray) -> np.ndarray:
    """Mᵀ v (Def. 5): v_j - Σ_{c∈C_j} v_c for the n₁ internal nodes (zero iff v is consistent)."""
    v = np.ascontiguousarray(v, dtype=float)
    u = np.negative(v[: tree.n1])
    workspace(tree).child_sum_all(v, u)
    return np.negative(u, out=u)


def m_times(tree: Tree, y: np.ndarray) -> np.ndarray:
    """M y for y ∈ R^{n₁}: (M y)_i = y_i [i internal] - y_{f_i} [i non-root]."""
    out = np.zeros(tree.n)
    out[: tree.n1] = y
    out[1:] -= y[tree.parent[1:]]
    return out


def _result_array(out: np.ndarray | None, noisy: np.ndarray) -> np.ndarray:
    if out is None:
        return np.empty(noisy.shape[0])
    if (not isinstance(out, np.ndarray) or out.shape != noisy.shape or out.dtype != np.float64
            or not out.flags.c_contiguous or not out.flags.writeable):
        raise ValueError(f"out must be a writeable contiguous float64 array of shape {noisy.shape}")
    if np.shares_memory(out, noisy):
        raise ValueError("out must not overlap the noisy vector")
    return out


def gmc(p: GMCPlan, noisy: np.ndarray, form: Form = "sqrt", engine: Engine = "auto",
        out: np.ndarray | None = None) -> np.ndarray:
    """Stage 2: the optimally consistent release v̄ (Alg. 2 step 5), written into ``out`` if given.

    ``sqrt``:   v̄ = ṽ - D M G⁻¹(G⁻ᵀ(Mᵀ ṽ))                          (Eq. 36), G = G_{T⁽¹⁾←T}
    ``nosqrt``: v̄ = ṽ - D M G'⁻¹(t ∘ G'⁻ᵀ(Mᵀ ṽ)), G' = G_{T⁽¹⁾}^(t, d)   (Eq. 39; d ≡ 1 in the paper)
    """
    tree = p.tree
    noisy = np.ascontiguousarray(noisy, dtype=float)
    if noisy.shape != (tree.n,):
        raise ValueError(f"noisy vector has shape {noisy.shape}, expected ({tree.n},)")
    if form not in ("sqrt", "nosqrt"):
        raise ValueError(f"form must be 'sqrt' or 'nosqrt', got {form!r}")
    sparse = use_sparse(tree, engine)
    out = _result_array(out, noisy)
    if tree.n1 == 0:
        np.copyto(out, noisy)
        return out
    ws = workspace(tree)
    weighted_steps = ws.fanouts is not None and p.d is not None  # v̄'s parent step needs a product buffer
    with ws.scratch(tree.n1, ws.max_internal_block if weighted_steps else 0) as (y, tmp):
        if sparse:
            _solve_deep(p, ws, noisy, y)
        else:
            _propagate(p, ws, noisy, form, y, out)
        _subtract_m_times(p, ws, noisy, y, out, tmp)
    return out


def _at(c, per_level: bool, k: int, s: int, e: int):
    """Coefficient ``c`` on block k = [s, e): a number (per-level plans) or a slice (per-node)."""
    if c is None:
        return None
    return float(c[k]) if per_level else c[s:e]


def _on(c, per_level: bool, k: int):
    """Coefficient ``c`` for a step over block k: a number (per-level plans) or the whole array."""
    if c is None:
        return None
    return float(c[k]) if per_level else c


def _propagate(p: GMCPlan, ws: Workspace, noisy: np.ndarray, form: Form, y: np.ndarray, msg: np.ndarray) -> None:
    """y = G⁻¹ G⁻ᵀ Mᵀ ṽ (Eq. 36) or G'⁻¹(t ∘ G'⁻ᵀ Mᵀ ṽ) (Eq. 39); ``msg`` (n) is scratch.

    Upward, z_i = (u_i + Σ_{c internal} w_{c→i} z_c) / w_i with u = Mᵀṽ folded in: node c sends its
    parent w_{c→f} z_c − ṽ_c (a leaf −ṽ_c); the nodes of height 2 have only leaves below them, so
    their row sums read ṽ directly. Downward, y_i = z_i / w_i + (d_i/t_i) y_{f_i} (Eq. 39: z_i + ...).
    """
    n1, h = p.tree.n1, p.tree.h
    c = p.coefficients
    lv = c["per_level"]
    scale, edge = c["scale"][form], c["edge"][form]
    if ws.fanouts is None and h > 2:  # leaves can hang from any internal node
        np.negative(noisy[n1:], out=msg[n1:])
    for k in range(2, h + 1):
        s, e = ws.block(k)
        zb = y[s:e]
        if k == 2:
            ws.child_sum(2, noisy, y, init=noisy, negate=True)
        else:
            ws.child_sum(k, msg, y, init=noisy)
        zb *= _at(scale, lv, k, s, e)
        if k < h:
            mb = msg[s:e]
            eg = _at(edge, lv, k, s, e)
            if eg is None:
                np.subtract(zb, noisy[s:e], out=mb)
            else:
                np.multiply(zb, eg, out=mb)
                mb -= noisy[s:e]
    if form == "sqrt":
        if lv:
            for k in range(2, h + 1):
                s, e = ws.block(k)
                y[s:e] *= c["inv_w"][k]
        else:
            y *= c["inv_w"]
    for k in range(h - 1, 1, -1):  # the messages are spent: msg is the product buffer now
        ws.parent_add(k, y, y, _on(c["ratio"], lv, k), tmp=msg)


def _solve_deep(p: GMCPlan, ws: Workspace, noisy: np.ndarray, y: np.ndarray) -> None:
    """y = (Mᵀ D M)⁻¹ Mᵀ ṽ by the two contraction sweeps of the module docstring (deep trees)."""
    n1 = p.tree.n1
    np.negative(noisy[:n1], out=y)
    ws.child_sum_all(noisy, y)
    np.negative(y, out=y)  # u = Mᵀ ṽ
    ratio = p.d1 / p.t if p.d is not None else 1.0 / p.t
    up_affine(ws.contraction, y, ratio, out=y)
    y /= p.t
    y[:] = down_affine(ws.contraction, y, ratio)


def _subtract_m_times(p: GMCPlan, ws: Workspace, noisy: np.ndarray, y: np.ndarray, out: np.ndarray,
                      tmp: np.ndarray) -> None:
    """out = ṽ - D M y: ṽ_i - d_i y_i [i internal] + d_i y_{f_i} [i non-root], block by block."""
    n1, h = p.tree.n1, p.tree.h
    c = p.coefficients
    lv, d = c["per_level"], c["d"]
    if d is None:
        np.subtract(noisy[:n1], y, out=out[:n1])
    else:
        for k in range(2, h + 1):
            s, e = ws.block(k)
            np.multiply(y[s:e], _at(d, lv, k, s, e), out=out[s:e])
            np.subtract(noisy[s:e], out[s:e], out=out[s:e])
    if ws.fanouts is None:  # one compiled pass over every parent pointer
        np.copyto(out[n1:], noisy[n1:])
        ws.parent_add_all(y, out, d)
        return
    for k in range(h - 1, 1, -1):  # perfect layout: the leaves' copy of ṽ is folded into their step
        ws.parent_add(k, y, out, _on(d, lv, k), tmp=tmp)
    ws.parent_add(1, y, out, _on(d, lv, 1), init=noisy, tmp=tmp)


def output_variance(p: GMCPlan) -> np.ndarray:
    """Per-node variance of the GMC release v̄ for noise variances ``p.d`` (1 when uniform), in O(n).

    Var(v̄) = D - D M (MᵀDM)⁻¹ Mᵀ D, so Var(v̄_i) = d_i - d_i² q_i with q_i = ||G⁻ᵀ Mᵀ e_i||² and
    G = G_{T⁽¹⁾←T}. By Prop. 2, r_j = G⁻ᵀ e_j lives on j and its ancestors with r_j = e_j/w_j +
    (w_{j→f_j}/w_j) r_{f_j}, so S_j = ||r_j||² obeys the downward recursion
    S_j = 1/t_j + (d_j/t_j)² S_{f_j} (one downward propagation, Prop. 3), and
    q_root = S_root, q_leaf = S_{f_i}, q_i = 1/t_i + (d_i/t_i - 1)² S_{f_i} for other internal nodes.
    With d ≡ σ² the sum is m σ², Theorem 5 (Eq. 28); for a per-level split it is its weighted form.
    Scaling every variance by c scales the result by c.
    """
    tree = p.tree
    n, n1 = tree.n, tree.n1
    d = np.ones(n) if p.d is None else p.d
    if n1 == 0:
        return d.copy()
    inv_t = 1.0 / p.t
    ratio = p.d1 * inv_t if p.d is not None else inv_t
    k = ratio**2
    s = down_affine(workspace(tree).contraction, inv_t, k) if p.sub.is_deep else downward(p.sub, inv_t, 1.0, k)
    q = np.empty(n)
    q[n1:] = s[tree.parent[n1:]]
    q[0] = s[0]
    if n1 > 1:
        par = tree.parent[1:n1]
        q[1:n1] = inv_t[1:] + (ratio[1:] - 1.0) ** 2 * s[par]
    return d - d * d * q
