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
Σ_roots (w_r^{1/q} + E_{k_r}^{1/q})^q.

*Which columns are tight.* Column j sums x over the chain j, j + lowbit(j), ... (its ancestors). An
odd j is a level-0 node, whose forest below is empty (E_0 = 0), so β_j = 1 and x_j is the whole
budget left by its ancestors; the chain then telescopes, x_j + Σ_a β_a Π_{above a}(1 - β) = 1, so
**every odd column sums to exactly 1**. An even j is a node of level k >= 1 with β_j < 1: its
column stops at node j and sums to 1 - (1 - β_j)·budget_j < 1 (the share left to j's subtree is
spent only in the columns below it). Column 1 is odd, so the largest column constraint is exactly 1
(the sensitivity of ΣM is 1). Since the problem is strictly convex the optimum is unique,
which the generic cross-check (:func:`generic_weights`) confirms numerically: a sparse log-barrier
interior-point method that only sees w and Mᵀ and stops on a certified duality gap <= 1e-8, so FDA
is sandwiched between its dual lower bound and its exactly feasible (rescaled) primal objective.

Cost: O(N) vectorised work in O(log N) level passes (≈ 10 ms for N = 2^20).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Literal

import numpy as np

from dpviz.errors import InputError
from dpviz.core.noise import Family
from dpviz.stream.fenwick import (
    check_horizon,
    column_chain_sum,
    column_norms_sq_b,
    lowbit,
    nodes,
    popcount,
    strategy_matrix,
)

if TYPE_CHECKING:  # SciPy is imported by the generic cross-check solvers only (fast CLI startup)
    import scipy.sparse as sp

GENERIC_MAX_HORIZON = 4096  # barrier method
SLSQP_MAX_HORIZON = 1024


@dataclass(frozen=True)
class Weights:
    """λ (node i at entry i-1), the objective f(λ) of (5.10) and how it was obtained.

    ``lower_bound``: a certified lower bound on the optimum of (5.10) when the method provides one
    (the barrier solver's dual bound), else None.
    """

    lam: np.ndarray
    objective: float
    noise: Family
    method: str
    lower_bound: float | None = None


def _power(noise: Family) -> int:
    if noise == "laplace":
        return 2
    if noise == "gaussian":
        return 1
    raise InputError(f"noise: expected 'laplace' or 'gaussian', got {noise!r}")


def subtree_optima(levels: int, noise: Family = "laplace") -> np.ndarray:
    """E_k = optimum of (5.10) on the forest F(2^k - 1), k = 0..levels (E_0 = 0); Thm 5.4 recursion.

    Loop over the O(log N) levels only.
    """
    q = _power(noise) + 1
    e = np.zeros(levels + 1)
    for k in range(levels):
        e[k + 1] = e[k] + (2.0 ** (k / q) + e[k] ** (1.0 / q)) ** q
    return e


def split_fraction(w: np.ndarray, e_sub: np.ndarray, noise: Family = "laplace") -> np.ndarray:
    """Lemma 1: the share β of a tree's budget its root takes, β = w^{1/q} / (w^{1/q} + E^{1/q}).

    (Thm 5.4's α = 1 - β is the share left to the subtrees.)
    """
    q = _power(noise) + 1
    wq = np.asarray(w, dtype=float) ** (1.0 / q)
    return wq / (wq + np.asarray(e_sub, dtype=float) ** (1.0 / q))


def fda_weights(horizon: int, noise: Family = "laplace") -> Weights:
    """FDA (Thm 5.4, generalised to any N — see the module docstring): optimal λ of (5.10).

    λ is scaled so the largest column constraint (Mᵀλ for Laplace, Mᵀλ² for Gaussian) is exactly 1.
    Cached per (N, noise family): λ depends on nothing else (not on ε, ρ or the data); the returned
    array is read-only.
    """
    return _fda_weights(check_horizon(horizon), _family(noise))


def _family(noise: Family) -> Family:
    _power(noise)
    return noise


@lru_cache(maxsize=64)
def _fda_weights(n: int, noise: Family) -> Weights:
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
    lam.flags.writeable = False
    return Weights(lam=lam, objective=fda_objective(n, noise), noise=noise, method="fda")


def fda_objective(horizon: int, noise: Family = "laplace") -> float:
    """Closed-form optimum of (5.10): Σ over the forest roots r of (w_r^{1/q} + E_{k_r}^{1/q})^q."""
    n = check_horizon(horizon)
    q = _power(noise) + 1
    e = subtree_optima(n.bit_length(), noise)
    bits = [k for k in range(n.bit_length()) if n >> k & 1]
    roots_rem = [n & ((1 << k) - 1) for k in bits]  # N mod 2^k: steps after the tree's root
    return float(sum(((rem + 1) ** (1.0 / q) + e[k] ** (1.0 / q)) ** q for k, rem in zip(bits, roots_rem, strict=True)))


def objective(lam: np.ndarray, horizon: int, noise: Family = "laplace") -> float:
    """f(λ) = Σ_i ||B(:,i)||² / λ_i² (Eq. 5.10), the constant 2/ε² of (5.9) left out."""
    lam = np.asarray(lam, dtype=float)
    _power(noise)
    return float(np.sum(column_norms_sq_b(horizon) / lam**2))


def constraint_values(lam: np.ndarray, noise: Family = "laplace") -> np.ndarray:
    """Column sensitivities of ΣM: Mᵀλ (Laplace, L1) or Mᵀλ² (Gaussian, squared L2)."""
    lam = np.asarray(lam, dtype=float)
    return column_chain_sum(lam if _power(noise) == 2 else lam**2)


def rescale_feasible(lam: np.ndarray, noise: Family = "laplace") -> np.ndarray:
    """Scale λ so that the largest column constraint is exactly 1 (solvers stop slightly outside)."""
    lam = np.asarray(lam, dtype=float)
    top = float(constraint_values(lam, noise).max())
    return lam / (top if _power(noise) == 2 else np.sqrt(top))


def dual_lower_bound(w: np.ndarray, p: int, a: sp.sparray, z: np.ndarray) -> float:
    """Lagrange dual g(z) of "min Σ w_i x_i^{-p} s.t. A x <= 1": a certified lower bound for any z >= 0.

    g(z) = min_{x>0} Σ w_i x_i^{-p} + zᵀ(A x - 1). With c = Aᵀz the minimum over each x_i is
    attained at x_i = (p w_i / c_i)^{1/(p+1)} with value (1 + p) w_i (c_i / (p w_i))^{p/(p+1)}
    (0 when c_i = 0), so g(z) = Σ_i (1 + p) w_i (c_i / (p w_i))^{p/(p+1)} - Σ_j z_j. Weak duality:
    every feasible x has Σ w_i x_i^{-p} >= g(z).
    """
    import scipy.sparse as sp

    z = np.maximum(np.asarray(z, dtype=float), 0.0)
    c = np.maximum(sp.csr_array(a).T @ z, 0.0)
    return float(np.sum((1.0 + p) * w * (c / (p * w)) ** (p / (p + 1.0))) - z.sum())


@dataclass(frozen=True)
class BarrierResult:
    """Output of :func:`barrier_solve`: a feasible x (max(Ax) = 1 exactly), f(x), a dual bound, work done."""

    x: np.ndarray
    objective: float
    lower_bound: float
    newton_steps: int


def barrier_solve(
    w: np.ndarray,
    a: sp.sparray,
    p: int,
    *,
    tol: float = 1e-8,
    mu: float = 30.0,
    max_newton: int = 1000,
) -> BarrierResult:
    """Generic log-barrier interior-point method for  min Σ_i w_i x_i^{-p}  s.t.  A x <= 1,  x > 0.

    Knows nothing about Fenwick trees: the data are the weights w > 0, the power p >= 1 and any
    sparse nonnegative A in which every variable appears in some row (so the problem is bounded).
    Textbook barrier method (Boyd & Vandenberghe §11.3): for t = t0, μ t0, μ² t0, ... minimise
    φ_t(x) = t f(x) - Σ_j log(1 - (A x)_j) by damped Newton steps with a backtracking (Armijo)
    line search that keeps x > 0 and A x < 1; each Newton system (t ∇²f + Aᵀ diag(1/s²) A) dx = -∇φ_t
    (∇²f is diagonal, so it is as sparse as AᵀA) is solved with SciPy's sparse LU (SuperLU,
    minimum-degree ordering on AᵀA + A). Centring stops when the Newton decrement² <= 1e-10.
    Start: the uniform point x = 0.5 / (largest row sum of A) — strictly feasible, generic.

    Stopping rule is a *certificate*, not a step size: after each centring the primal point is
    rescaled to be exactly feasible (max A x = 1), giving an upper bound f(x), and the dual estimate
    z_j = (1 + (A dx)_j / s_j) / (t s_j) (z = 1/(t s) corrected by the last Newton step) gives a lower
    bound g(z) (:func:`dual_lower_bound`). It returns once f(x) - g(z) <= tol · f(x), so the returned
    objective is within ``tol`` (relative) of the true optimum, whatever the path. Raises
    ``RuntimeError`` when ``max_newton`` Newton steps do not reach that.
    """
    import scipy.sparse as sp
    from scipy.sparse.linalg import splu

    w = np.asarray(w, dtype=float)
    a = sp.csr_array(a, dtype=float)
    at = sp.csr_array(a.T)
    m, _ = a.shape

    def f(x: np.ndarray) -> float:
        return float(np.sum(w / x**p))

    def to_boundary(v: np.ndarray, dv: np.ndarray) -> float:
        neg = dv < 0
        return float(np.min(-v[neg] / dv[neg])) if neg.any() else np.inf

    x = np.full(w.size, 0.5 / float(a.sum(axis=1).max()))
    t = m / f(x)
    newton = 0
    while True:
        for _ in range(100):  # centring on φ_t
            s = 1.0 - a @ x
            grad = -t * p * w / x ** (p + 1) + at @ (1.0 / s)
            hess_f = sp.diags_array(t * p * (p + 1) * w / x ** (p + 2))  # ∇²(t f) is diagonal
            hess = sp.csc_array(at @ sp.diags_array(1.0 / s**2) @ a + hess_f)
            dx = -splu(hess, permc_spec="MMD_AT_PLUS_A").solve(grad)
            ds = -(a @ dx)
            dec = float(-grad @ dx)
            newton += 1
            if dec <= 1e-10 or newton >= max_newton:
                break
            step = min(1.0, 0.99 * to_boundary(x, dx), 0.99 * to_boundary(s, ds))
            if dec > 1e-3:  # Armijo backtracking; near the centre φ_t's rounding exceeds the decrease
                phi0 = t * f(x) - float(np.sum(np.log(s)))
                for _ in range(60):
                    xn = x + step * dx
                    if t * f(xn) - float(np.sum(np.log(1.0 - a @ xn))) <= phi0 - 0.25 * step * dec:
                        break
                    step *= 0.5
            x = x + step * dx
        z = np.maximum((1.0 - ds / s) / (t * s), 0.0)
        feasible = x / float((a @ x).max())
        upper, lower = f(feasible), dual_lower_bound(w, p, a, z)
        if upper - lower <= tol * upper:
            return BarrierResult(x=feasible, objective=upper, lower_bound=lower, newton_steps=newton)
        if newton >= max_newton:
            raise RuntimeError(
                f"barrier method: relative gap {(upper - lower) / upper:.2e} > {tol:g} after {newton} Newton steps"
            )
        t *= mu


def generic_weights(
    horizon: int,
    noise: Family = "laplace",
    *,
    method: Literal["barrier", "slsqp"] = "barrier",
    tol: float = 1e-8,
    max_iter: int = 2000,
) -> Weights:
    """Solve (5.10) with a generic solver that ignores the FDA structure — an independent cross-check.

    Both methods work on x = λ (Laplace, p = 2) or x = λ² (Gaussian, p = 1) so the constraint Mᵀx <= 1
    is linear; the only problem data they see are w_i = ||B(:,i)||² and the sparse matrix Mᵀ, and
    both start from the uniform feasible point (a fraction of 1/Δ_M). The returned λ is rescaled to be
    exactly feasible (largest column constraint = 1) and ``objective`` is f of that rescaled λ, so it
    is a true upper bound on the optimum and is what gets compared with FDA.

    * ``"barrier"`` (default, N <= ``GENERIC_MAX_HORIZON``): :func:`barrier_solve`, sparse Newton
      steps; stops on a certified duality gap <= ``tol`` (relative, default 1e-8) and reports the
      dual bound as ``lower_bound``, so lower_bound <= optimum <= objective. ≈ 0.05 s at N = 256,
      ≈ 0.2 s at N = 1000, ≈ 1.5 s at N = 4096 (one core).
    * ``"slsqp"`` (N <= ``SLSQP_MAX_HORIZON``): SciPy's SLSQP (the thesis' SQP baseline), dense,
      O(N³) per iteration, ``ftol`` 1e-12 on the objective normalised to 1 at the start; ≈ 4 s at
      N = 255, minutes at N = 1000. No certificate (``lower_bound`` is None).

    Raises ``RuntimeError`` when the solver does not converge.
    """
    n = check_horizon(horizon)
    if method not in ("barrier", "slsqp"):
        raise InputError(f"method: expected 'barrier' or 'slsqp', got {method!r}")
    limit = GENERIC_MAX_HORIZON if method == "barrier" else SLSQP_MAX_HORIZON
    if n > limit:
        raise InputError(f"horizon: the generic solver ({method}) is for N <= {limit}, got {n}")
    p = _power(noise)
    w = column_norms_sq_b(n)
    if method == "barrier":
        res = barrier_solve(w, strategy_matrix(n).T, p, tol=tol, max_newton=max_iter)
        lam = res.x if p == 2 else np.sqrt(res.x)
        lam = rescale_feasible(lam, noise)
        return Weights(lam=lam, objective=objective(lam, n, noise), noise=noise, method="barrier",
                       lower_bound=res.lower_bound)
    from scipy.optimize import minimize

    mt = strategy_matrix(n).T.toarray()
    x0 = np.full(n, 1.0 / n.bit_length())
    scale = float(np.sum(w / x0**p))

    def fun(x: np.ndarray) -> float:
        return float(np.sum(w / x**p)) / scale

    def grad(x: np.ndarray) -> np.ndarray:
        return -p * w / x ** (p + 1) / scale

    cons = {"type": "ineq", "fun": lambda x: 1.0 - mt @ x, "jac": lambda x: -mt}
    res = minimize(
        fun, x0, jac=grad, method="SLSQP", bounds=[(1e-9, 1.0)] * n, constraints=[cons],
        options={"maxiter": max_iter, "ftol": 1e-12},
    )
    if not res.success:
        raise RuntimeError(f"SLSQP did not converge for N={n}: {res.message}")
    lam = res.x if p == 2 else np.sqrt(res.x)
    lam = rescale_feasible(lam, noise)
    return Weights(lam=lam, objective=objective(lam, n, noise), noise=noise, method="slsqp")


def fda_weight_at(node: int, horizon: int, noise: Family = "laplace", e_sub: np.ndarray | None = None) -> float:
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
