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
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Literal

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import splu

from dpviz.tree.model import Tree
from dpviz.tree.propagation import Engine, downward, scatter_add, upward

Form = Literal["sqrt", "nosqrt"]

__all__ = ["GMCPlan", "theta", "pivots", "plan", "gmc", "m_transpose", "m_times", "Form"]


def theta(tree: Tree) -> np.ndarray:
    """θ of Alg. 1 (Thm. 9, Eq. 38) for the n₁ internal nodes:
    θ_i = |C_i| - Σ_{j∈C_i, j≤n₁} (1 + θ_j)⁻¹, computed bottom-up one height block at a time."""
    return pivots(tree) - 1.0


def pivots(tree: Tree, d: np.ndarray | None = None, engine: Engine = "auto") -> np.ndarray:
    """t_i (i < n₁): the generalised θ' = 1 + θ for per-node noise variances ``d`` (module docstring).

    ``levels`` engine: one vectorised step per height block (h - 1 steps). ``sparse`` engine (deep
    trees): the same numbers read off SciPy's compiled sparse LU of Mᵀ D M in leaves-first order,
    which has no fill-in and no pivoting.
    """
    n, n1 = tree.n, tree.n1
    if n1 == 0:
        return np.zeros(0)
    if d is None:  # the paper's case: a_i = 1 + |C_i| (Alg. 1 line 1: θ_i = |C_i|)
        dd = None
        a = 1.0 + tree.children_count[:n1]
    else:
        dd = np.asarray(d, float)
        if dd.shape != (n,) or np.any(~np.isfinite(dd)) or np.any(dd <= 0):
            raise ValueError("per-node variances must be a positive finite vector of length n")
        a = dd[:n1] + np.bincount(tree.parent[1:], weights=dd[1:], minlength=n1)
    use_sparse = engine == "sparse" or (engine == "auto" and tree.is_deep)
    if use_sparse:
        return _pivots_sparse(tree, np.ones(n) if dd is None else dd, a)
    t = np.empty(n1)
    acc = np.zeros(n1)  # Σ_{c internal child} d_c² / t_c  (Alg. 1 line 2: Σ (1 + θ_c)⁻¹)
    for k in range(2, tree.h + 1):
        blk = tree.block(k)
        t[blk] = a[blk] - acc[blk]
        if k < tree.h:
            contrib = 1.0 / t[blk] if dd is None else dd[blk] ** 2 / t[blk]
            scatter_add(acc, tree.parent[blk], contrib)
    return t


def _pivots_sparse(tree: Tree, dd: np.ndarray, a: np.ndarray) -> np.ndarray:
    n1 = tree.n1
    child = np.arange(1, n1)
    par = tree.parent[1:n1]
    rev = n1 - 1  # reverse the DOH order so that leaves of T⁽¹⁾ are eliminated first
    rows = np.concatenate([rev - np.arange(n1), rev - child, rev - par])
    cols = np.concatenate([rev - np.arange(n1), rev - par, rev - child])
    vals = np.concatenate([a, -dd[child], -dd[child]])
    mat = sp.csc_matrix((vals, (rows, cols)), shape=(n1, n1))
    lu = splu(mat, permc_spec="NATURAL", diag_pivot_thresh=0.0, options={"SymmetricMode": True})
    if not (np.array_equal(lu.perm_r, np.arange(n1)) and np.array_equal(lu.perm_c, np.arange(n1))):
        raise RuntimeError("SuperLU reordered a tree matrix; pivots are not the θ' recursion")
    return lu.U.diagonal()[::-1].copy()


@dataclass(frozen=True, eq=False)
class GMCPlan:
    """Stage 1 of GMC for one tree and one relative variance profile ``d`` (None = uniform).

    GLS is invariant to scaling ``d``, so one plan serves every ε for a fixed budget split.
    """

    tree: Tree
    t: np.ndarray
    d: np.ndarray | None = None

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
    def variance(self) -> np.ndarray:
        """:func:`output_variance` of this plan, computed once (read-only; scale it by c for d = c·self.d)."""
        out = output_variance(self)
        out.flags.writeable = False
        return out


def plan(tree: Tree, d: np.ndarray | None = None, engine: Engine = "auto") -> GMCPlan:
    """Stage 1: Alg. 1 (construct G_{T⁽¹⁾←T}, represented by its pivots t)."""
    return GMCPlan(tree=tree, t=pivots(tree, d, engine), d=None if d is None else np.asarray(d, float))


def m_transpose(tree: Tree, v: np.ndarray) -> np.ndarray:
    """Mᵀ v (Def. 5): v_j - Σ_{c∈C_j} v_c for the n₁ internal nodes (zero iff v is consistent)."""
    n1 = tree.n1
    return v[:n1] - np.bincount(tree.parent[1:], weights=v[1:], minlength=n1)  # parents are < n₁


def m_times(tree: Tree, y: np.ndarray) -> np.ndarray:
    """M y for y ∈ R^{n₁}: (M y)_i = y_i [i internal] - y_{f_i} [i non-root]."""
    out = np.zeros(tree.n)
    out[: tree.n1] = y
    out[1:] -= y[tree.parent[1:]]
    return out


def gmc(p: GMCPlan, noisy: np.ndarray, form: Form = "sqrt", engine: Engine = "auto") -> np.ndarray:
    """Stage 2: the optimally consistent release v̄ (Alg. 2 step 5).

    ``sqrt``:   v̄ = ṽ - D M G⁻¹(G⁻ᵀ(Mᵀ ṽ))                          (Eq. 36), G = G_{T⁽¹⁾←T}
    ``nosqrt``: v̄ = ṽ - D M G'⁻¹(t ∘ G'⁻ᵀ(Mᵀ ṽ)), G' = G_{T⁽¹⁾}^(t, d)   (Eq. 39; d ≡ 1 in the paper)
    """
    tree = p.tree
    noisy = np.asarray(noisy, float)
    if noisy.shape != (tree.n,):
        raise ValueError(f"noisy vector has shape {noisy.shape}, expected ({tree.n},)")
    if tree.n1 == 0:
        return noisy.copy()
    sub = p.sub
    u = m_transpose(tree, noisy)
    if form == "sqrt":
        y = downward(sub, upward(sub, u, p.w, p.w_edge, engine), p.w, p.w_edge, engine)
    elif form == "nosqrt":
        y = downward(sub, p.t * upward(sub, u, p.t, p.d1, engine), p.t, p.d1, engine)
    else:
        raise ValueError(f"form must be 'sqrt' or 'nosqrt', got {form!r}")
    if p.d is None:  # v̄ = ṽ - M y without materialising M y: two passes over ṽ's copy
        out = noisy.copy()
        out[: tree.n1] -= y
        out[1:] += y[tree.parent[1:]]
        return out
    return noisy - p.d * m_times(tree, y)


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
    ratio = p.d1 / p.t
    s = downward(p.sub, 1.0 / p.t, 1.0, ratio**2)
    q = np.empty(n)
    q[n1:] = s[tree.parent[n1:]]
    q[0] = s[0]
    if n1 > 1:
        par = tree.parent[1:n1]
        q[1:n1] = 1.0 / p.t[1:] + (ratio[1:] - 1.0) ** 2 * s[par]
    return d - d * d * q
