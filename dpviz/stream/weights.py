"""Optimal diagonal weights Σ = diag(λ) for the Fenwick strategy: FDA closed form and a SciPy cross-check.

Problem (5.10): minimise f(λ) = Σ_i ||B(:,i)||² / λ_i²  subject to  Mᵀλ <= 1, λ > 0,
so that the MSE (5.9) (2/ε²)·Δ²_{ΣM}·trace(BᵀB Σ⁻²) is minimal with Δ_{ΣM} = 1.
Under Gaussian noise / zCDP the sensitivity is the L2 column norm, the constraint becomes
Mᵀ(λ²) <= 1 and the same method applies to μ = λ² (objective Σ w_i / μ_i).

Both cases are "minimise Σ w_i / x_i^p subject to Mᵀx <= 1, x > 0" with p = 2 (Laplace, x = λ)
or p = 1 (Gaussian, x = λ²); write q = p + 1 and w_i = ||B(:,i)||² = min(lowbit(i), N - i + 1).

**FDA for any N (generalises Thm 5.4).**

*Lemma 1 (one split).* For c, E > 0, min_{0<β<1} c/β^p + E/(1-β)^p = (c^{1/q} + E^{1/q})^q, attained at
β = c^{1/q} / (c^{1/q} + E^{1/q}). (The function is strictly convex; setting the derivative
-p c/β^q + p E/(1-β)^q to zero gives ((1-β)/β)^q = E/c; substituting gives the value.)
For p = 2 this is the closed form of Thm 5.4's α = 1 - β with c = 2^{m-1}, E = err_{m-1}.

*Lemma 2 (homogeneity).* If x* solves the problem for a node set with budget 1, then t·x* solves it
with budget t (constraints Mᵀx <= t) and the optimum scales as t^{-p}.

*Structure.* Node i (level k, lowbit(i) = 2^k) covers (i - 2^k, i]; its parent is i + 2^k when that is
<= N, otherwise i is a root. Column j's constraint sums x over the ancestor chain j, j + lowbit(j), ...
of node j. So the constraints split over the trees of the forest and the problem is separable by tree.
The roots are the prefixes of the binary expansion N = 2^{k_1} + 2^{k_2} + ... (k_1 > k_2 > ...):
root r_t = 2^{k_1} + ... + 2^{k_t}, a complete tree T_{k_t} whose leaves are r_{t-1}+1..r_t.

*Complete tree T_k.* Below its root sit the nodes of the forest F(2^k - 1) (shifted): every column of
the tree except the root's own leaf has the root on its chain plus one chain of F(2^k - 1); the root's
leaf is constrained only by x_root <= 1 (never tight). With x_root = β fixed, the rest is F(2^k-1)
with budget 1 - β, so by Lemma 2 its optimum is (1-β)·x*_{F(2^k-1)} with value E_k / (1-β)^p, where
E_k is the optimum of F(2^k - 1). By Lemma 1 the best β is w_r^{1/q}/(w_r^{1/q} + E_k^{1/q}) and the
tree costs (w_r^{1/q} + E_k^{1/q})^q, where w_r = ||B(:,root)||². The weights of inner nodes equal
lowbit because those nodes are never within lowbit(i) - 1 of N (their parent is <= N).

*Recursion for E_k.* F(2^{k+1} - 1) = T_k (root 2^k, w = 2^k) ∪ shifted F(2^k - 1), so
E_0 = 0,  E_{k+1} = E_k + (2^{k/q} + E_k^{1/q})^q;  for p = 2 this is exactly Thm 5.4 / Eq. (5.11).

*Result.* Every node i of level k gets β_i = w_i^{1/q} / (w_i^{1/q} + E_k^{1/q}) (w_i = 2^k for inner
nodes, N - i + 1 for roots) and x_i = β_i · Π_{ancestors a of i} (1 - β_a); the optimum is
Σ_roots (w_r^{1/q} + E_{k_r}^{1/q})^q. Every column except tree-root leaves sums to exactly 1, so the
largest column constraint is exactly 1. Since the problem is strictly convex the optimum is unique,
which the SciPy cross-check (:func:`generic_weights`) confirms numerically.

Cost: O(N) vectorised work in O(log N) level passes (≈ 10 ms for N = 2^20).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy.optimize import minimize

from dpviz.errors import InputError
from dpviz.stream.fenwick import (
    check_horizon,
    column_chain_sum,
    column_norms_sq_b,
    lowbit,
    nodes,
    popcount,
    strategy_matrix,
)

NoiseKind = Literal["laplace", "gaussian"]
GENERIC_MAX_HORIZON = 1024


@dataclass(frozen=True)
class Weights:
    """λ (node i at entry i-1), the objective f(λ) of (5.10) and how it was obtained."""

    lam: np.ndarray
    objective: float
    noise: NoiseKind
    method: str


def _power(noise: NoiseKind) -> int:
    if noise == "laplace":
        return 2
    if noise == "gaussian":
        return 1
    raise InputError(f"noise: expected 'laplace' or 'gaussian', got {noise!r}")


def subtree_optima(levels: int, noise: NoiseKind = "laplace") -> np.ndarray:
    """E_k = optimum of (5.10) on the forest F(2^k - 1), k = 0..levels (E_0 = 0); Thm 5.4 recursion.

    Loop over the O(log N) levels only.
    """
    q = _power(noise) + 1
    e = np.zeros(levels + 1)
    for k in range(levels):
        e[k + 1] = e[k] + (2.0 ** (k / q) + e[k] ** (1.0 / q)) ** q
    return e


def split_fraction(w: np.ndarray, e_sub: np.ndarray, noise: NoiseKind = "laplace") -> np.ndarray:
    """Lemma 1: the share β of a tree's budget its root takes, β = w^{1/q} / (w^{1/q} + E^{1/q}).

    (Thm 5.4's α = 1 - β is the share left to the subtrees.)
    """
    q = _power(noise) + 1
    wq = np.asarray(w, dtype=float) ** (1.0 / q)
    return wq / (wq + np.asarray(e_sub, dtype=float) ** (1.0 / q))


def fda_weights(horizon: int, noise: NoiseKind = "laplace") -> Weights:
    """FDA (Thm 5.4, generalised to any N — see the module docstring): optimal λ of (5.10).

    λ is scaled so the largest column constraint (Mᵀλ for Laplace, Mᵀλ² for Gaussian) is exactly 1.
    """
    n = check_horizon(horizon)
    p = _power(noise)
    levels = n.bit_length()
    e = subtree_optima(levels, noise)
    # inner nodes of level k have w = 2^k, so β depends on the level only (a table of log N values)
    beta_level = split_fraction(2.0 ** np.arange(levels), e[:levels], noise)
    level = popcount(lowbit(nodes(n)) - 1)
    beta = np.concatenate([[0.0], beta_level[level]])  # 1-based, entry 0 unused
    # the forest roots (prefixes of N's binary expansion) have w = N - r + 1 instead
    roots = np.array([n >> k << k for k in range(levels) if n >> k & 1], dtype=np.int64)
    beta[roots] = split_fraction(n - roots + 1.0, e[popcount(lowbit(roots) - 1)], noise)
    keep = 1.0 - beta
    budget = np.ones(n + 1)
    # top-down over levels (a loop over the O(log N) levels): the parent of node 2^k(2m+1) is
    # 2^{k+1}(m+1); strided slices, so no fancy indexing. Level-k nodes without a parent are roots.
    for k in range(levels - 1, -1, -1):
        step = 1 << k
        count = n // (2 * step)  # level-k nodes whose parent is <= N
        parents = slice(2 * step, 2 * step * (count + 1), 2 * step)
        budget[step : step + 2 * step * count : 2 * step] = budget[parents] * keep[parents]
    x = budget[1:] * beta[1:]
    lam = x if p == 2 else np.sqrt(x)
    return Weights(lam=lam, objective=fda_objective(n, noise), noise=noise, method="fda")


def fda_objective(horizon: int, noise: NoiseKind = "laplace") -> float:
    """Closed-form optimum of (5.10): Σ over the forest roots r of (w_r^{1/q} + E_{k_r}^{1/q})^q."""
    n = check_horizon(horizon)
    q = _power(noise) + 1
    e = subtree_optima(n.bit_length(), noise)
    bits = [k for k in range(n.bit_length()) if n >> k & 1]
    roots_rem = [n & ((1 << k) - 1) for k in bits]  # N mod 2^k: steps after the tree's root
    return float(sum(((rem + 1) ** (1.0 / q) + e[k] ** (1.0 / q)) ** q for k, rem in zip(bits, roots_rem, strict=True)))


def objective(lam: np.ndarray, horizon: int, noise: NoiseKind = "laplace") -> float:
    """f(λ) = Σ_i ||B(:,i)||² / λ_i² (Eq. 5.10), the constant 2/ε² of (5.9) left out."""
    lam = np.asarray(lam, dtype=float)
    _power(noise)
    return float(np.sum(column_norms_sq_b(horizon) / lam**2))


def constraint_values(lam: np.ndarray, noise: NoiseKind = "laplace") -> np.ndarray:
    """Column sensitivities of ΣM: Mᵀλ (Laplace, L1) or Mᵀλ² (Gaussian, squared L2)."""
    lam = np.asarray(lam, dtype=float)
    return column_chain_sum(lam if _power(noise) == 2 else lam**2)


def rescale_feasible(lam: np.ndarray, noise: NoiseKind = "laplace") -> np.ndarray:
    """Scale λ so that the largest column constraint is exactly 1 (solvers stop slightly outside)."""
    lam = np.asarray(lam, dtype=float)
    top = float(constraint_values(lam, noise).max())
    return lam / (top if _power(noise) == 2 else np.sqrt(top))


def generic_weights(horizon: int, noise: NoiseKind = "laplace", *, max_iter: int = 2000) -> Weights:
    """Solve (5.10) with SciPy's SLSQP (the thesis' SQP baseline) — a slow, independent cross-check.

    Works on x = λ (Laplace) or x = λ² (Gaussian) so constraints are linear, starts from the uniform
    feasible point 1/Δ_M and returns λ rescaled to be exactly feasible. Raises ``RuntimeError`` when
    the solver does not converge. Intended for N <= 256 (cost grows like N³ per iteration).
    """
    n = check_horizon(horizon)
    if n > GENERIC_MAX_HORIZON:
        raise InputError(f"horizon: the generic solver is for N <= {GENERIC_MAX_HORIZON}, got {n}")
    p = _power(noise)
    w = column_norms_sq_b(n)
    mt = strategy_matrix(n).T.toarray()
    x0 = np.full(n, 1.0 / n.bit_length())
    scale = float(np.sum(w / x0**p))

    def f(x: np.ndarray) -> float:
        return float(np.sum(w / x**p)) / scale

    def grad(x: np.ndarray) -> np.ndarray:
        return -p * w / x ** (p + 1) / scale

    cons = {"type": "ineq", "fun": lambda x: 1.0 - mt @ x, "jac": lambda x: -mt}
    res = minimize(
        f, x0, jac=grad, method="SLSQP", bounds=[(1e-9, 1.0)] * n, constraints=[cons],
        options={"maxiter": max_iter, "ftol": 1e-12},
    )
    if not res.success:
        raise RuntimeError(f"SLSQP did not converge for N={n}: {res.message}")
    lam = res.x if p == 2 else np.sqrt(res.x)
    lam = rescale_feasible(lam, noise)
    return Weights(lam=lam, objective=objective(lam, n, noise), noise=noise, method="slsqp")


def fda_weight_at(node: int, horizon: int, noise: NoiseKind = "laplace", e_sub: np.ndarray | None = None) -> float:
    """λ of one node in O(log N) (for streaming): walk the ancestor chain i, i + lowbit(i), ... <= N.

    Same arithmetic, in the same order (root first), as :func:`fda_weights`.
    """
    n = check_horizon(horizon)
    if not 1 <= node <= n:
        raise InputError(f"node: expected 1..{n}, got {node}")
    e = subtree_optima(n.bit_length(), noise) if e_sub is None else e_sub
    chain = [node]
    while chain[-1] + lowbit(chain[-1]) <= n:
        chain.append(chain[-1] + lowbit(chain[-1]))
    idx = np.array(chain, dtype=np.int64)
    w = np.minimum(lowbit(idx), n - idx + 1).astype(float)
    beta = split_fraction(w, e[np.log2(lowbit(idx)).astype(np.int64)], noise)
    budget = 1.0
    for b in beta[:0:-1]:  # ancestors from the root down (O(log N) of them)
        budget = budget * (1.0 - b)
    x = budget * beta[0]
    return float(x if _power(noise) == 2 else np.sqrt(x))
