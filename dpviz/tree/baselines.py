"""Baseline post-processings the paper compares GMC with (Sec. 6.1, Tab. 2), each as in its source.

* Processless: release ṽ as is.
* Boosting (Hay, Rastogi, Miklau, Suciu, "Boosting the Accuracy of Differentially Private Histograms
  Through Consistency", PVLDB 3(1), VLDB 2010, Sec. 4): the two-pass estimator for complete
  k-ary trees; on other trees k is the root fan-out, as the GMC paper does (so it is not consistent).
* PrivTrie-style consistency (Wang, Xiao, Yang, Hoang, Shin, Shin, Yu, "PrivTrie: Effective Frequent
  Term Discovery under Local Differential Privacy", ICDE 2018, following Hay et al.'s general form): a
  recursive bottom-up inverse-variance combination and a top-down redistribution of the parent's
  residual in proportion to the children's variances. Written as plain recursion, like the original.
* Lee, Wang & Kifer, "Maximum Likelihood Postprocessing for Differential Privacy under Consistency
  Constraints", KDD 2015: the closed form Eq. (8), dense for small trees, a sparse direct
  solve (SuperLU) above.
"""

from __future__ import annotations

import sys
import threading

import numpy as np

from dpviz.tree.generation import consistency_matrix
from dpviz.tree.model import Tree
from dpviz.tree.propagation import downward, upward, workspace

DENSE_LIMIT = 2000

__all__ = ["processless", "boosting", "privtrie", "lee_closed_form", "DENSE_LIMIT"]


def processless(tree: Tree, noisy: np.ndarray, d: np.ndarray | None = None) -> np.ndarray:
    """No post-processing."""
    return np.array(noisy, float, copy=True)


def boosting(tree: Tree, noisy: np.ndarray, d: np.ndarray | None = None) -> np.ndarray:
    """Hay et al. 2010, Theorem 3 with k = fan-out of the root and ℓ = node height (leaves ℓ = 1).

    z[v] = ṽ[v] at leaves, else z[v] = (k^ℓ - k^{ℓ-1})/(k^ℓ - 1) ṽ[v] + (k^{ℓ-1} - 1)/(k^ℓ - 1) Σ_{u∈C_v} z[u];
    h̄[root] = z[root], h̄[u] = z[u] + (h̄[f_u] - Σ_{s∈C_{f_u}} z[s]) / k.
    Each pass is one compiled step per height block (the workspace steps of
    :mod:`dpviz.tree.propagation`); on deep trees each pass is one tree-contraction sweep instead
    (:mod:`dpviz.tree.sweeps`, O(n) work in O(log n) vectorised rounds):
    z = G⁻ᵀ v' with node weights 1/b_ℓ and v' = (a_ℓ/b_ℓ) ṽ on internal nodes (1 and ṽ on leaves),
    then h̄ = G⁻¹ c with edge weights 1/k and c_u = z_u - Σ_{s∈C_{f_u}} z_s / k. Ignores ``d`` (the
    estimator assumes equal noise on all nodes).
    """
    noisy = np.asarray(noisy, float)
    n, h, n1 = tree.n, tree.h, tree.n1
    if n1 == 0:
        return noisy.copy()
    ws = workspace(tree)
    k = float(ws.fanout(0))
    ell = np.arange(h + 1, dtype=float)
    ell[0] = 1.0  # index 0 unused; avoids 0/0
    if k == 1.0:  # limit k → 1 of the coefficients
        a_coef, b_coef = 1.0 / ell, (ell - 1.0) / ell
    else:  # written with k^{-ℓ} so tall trees do not overflow
        a_coef = (1.0 - 1.0 / k) / (1.0 - k ** (-ell))
        b_coef = (1.0 - k ** (1.0 - ell)) / (k * (1.0 - k ** (-ell)))
    if tree.is_deep:  # h ~ n: two contraction sweeps (dpviz.tree.sweeps; the schedule kept per tree) instead of h steps
        w_level, v_level = np.ones(h + 1), np.ones(h + 1)  # by height; leaves (ℓ = 1) keep ṽ
        w_level[2:] = 1.0 / b_coef[2:]
        v_level[2:] = a_coef[2:] / b_coef[2:]
        z = upward(tree, v_level[tree.height] * noisy, w_level[tree.height], 1.0, key="boosting-up")
        child_sum = np.zeros(n1)
        ws.child_sum_all(z, child_sum)
        c = np.zeros(n)
        ws.parent_add_all(child_sum, c)  # Σ_{s∈C_{f_u}} z[s]
        c *= -1.0 / k
        c += z
        return downward(tree, c, 1.0, 1.0 / k, key="boosting-down")
    z = noisy.copy()
    child_sum = np.zeros(n1)
    for lev in range(2, h + 1):  # the formulas above, one height block at a time
        s, e = ws.block(lev)
        ws.child_sum(lev, z, child_sum)
        np.multiply(noisy[s:e], a_coef[lev], out=z[s:e])
        z[s:e] += b_coef[lev] * child_sum[s:e]
    out = np.empty(n)
    out[0] = z[0]
    share = np.empty(n1)  # (h̄[v] - Σ_{s∈C_v} z[s]) / k, handed to v's children
    share[0] = (out[0] - child_sum[0]) / k
    for lev in range(h - 1, 0, -1):
        s, e = ws.block(lev)
        ws.parent_add(lev, share, out, init=z)
        if lev > 1:
            np.subtract(out[s:e], child_sum[s:e], out=share[s:e])
            share[s:e] /= k
    return out


def privtrie(tree: Tree, noisy: np.ndarray, d: np.ndarray | None = None) -> np.ndarray:
    """Optimal consistency by two recursive passes (PrivTrie-style; exact GLS on any tree).

    up(v): z_v = inverse-variance mean of ṽ_v and Σ_{c∈C_v} z_c, with var(z_v) = (1/d_v + 1/Σ var z_c)⁻¹.
    down(v, value): v̄_v = value; each child c gets z_c + (value - Σ z) · var(z_c) / Σ var(z).
    Plain recursion over nodes as in the original; deep trees run in a thread with a large stack.
    """
    noisy_l = np.asarray(noisy, float).tolist()
    n = tree.n
    var_l = [1.0] * n if d is None else np.asarray(d, float).tolist()
    children: list[list[int]] = [[] for _ in range(n)]
    for c, p in enumerate(tree.parent.tolist()[1:], start=1):
        children[p].append(c)
    z = [0.0] * n
    vz = [0.0] * n
    out = [0.0] * n

    def up(v: int) -> None:
        kids = children[v]
        if not kids:
            z[v], vz[v] = noisy_l[v], var_l[v]
            return
        s = vs = 0.0
        for c in kids:
            up(c)
            s += z[c]
            vs += vz[c]
        prec = 1.0 / var_l[v] + 1.0 / vs
        z[v] = (noisy_l[v] / var_l[v] + s / vs) / prec
        vz[v] = 1.0 / prec

    def down(v: int, value: float) -> None:
        out[v] = value
        kids = children[v]
        if not kids:
            return
        s = sum(z[c] for c in kids)
        vs = sum(vz[c] for c in kids)
        resid = value - s
        for c in kids:
            down(c, z[c] + resid * vz[c] / vs)

    def run() -> None:
        up(0)
        down(0, z[0])

    _run_deep(run, tree.h)
    return np.asarray(out)


def _run_deep(fn, depth: int) -> None:
    """Run a recursive function; for deep trees in a thread with room for ``depth`` frames."""
    if depth < 500:
        fn()
        return
    old_limit = sys.getrecursionlimit()
    old_stack = threading.stack_size()
    errors: list[BaseException] = []

    def target() -> None:
        try:
            fn()
        except BaseException as exc:  # re-raised in the caller's thread
            errors.append(exc)

    try:
        sys.setrecursionlimit(max(old_limit, 2 * depth + 1000))
        threading.stack_size(min(1 << 30, max(64 << 20, depth * 1024)))
        th = threading.Thread(target=target)
        th.start()
        th.join()
    finally:
        threading.stack_size(old_stack)
        sys.setrecursionlimit(old_limit)
    if errors:
        raise errors[0]


def lee_closed_form(
    tree: Tree, noisy: np.ndarray, d: np.ndarray | None = None, dense: bool | None = None
) -> np.ndarray:
    """v̄ = ṽ - D M (Mᵀ D M)⁻¹ Mᵀ ṽ (Eq. 8; D = I in the paper): dense solve for n <= DENSE_LIMIT,
    else a sparse direct solve of the n₁ × n₁ normal equations."""
    noisy = np.asarray(noisy, float)
    if tree.n1 == 0:
        return noisy.copy()
    dd = np.ones(tree.n) if d is None else np.asarray(d, float)
    m_mat = consistency_matrix(tree)
    dense = tree.n <= DENSE_LIMIT if dense is None else dense
    if dense:
        m_dense = m_mat.toarray()
        dm = m_dense * dd[:, None]
        y = np.linalg.solve(m_dense.T @ dm, m_dense.T @ noisy)
        return noisy - dm @ y
    import scipy.sparse as sp  # imported here: scipy.sparse costs 0.1-0.2 s of every tree command's start-up
    from scipy.sparse.linalg import spsolve

    dm = sp.diags(dd) @ m_mat

    y = spsolve(sp.csc_matrix(m_mat.T @ dm), m_mat.T @ noisy)
    return noisy - dm @ y
