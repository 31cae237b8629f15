"""Residual-basis algebra: per-fibre O(n_k) operators and the maps A_{γ,τ} (digest §1.3, §2.1–2.2).

Primary sources: B. Mullins, M. Fuentes, Y. Xiao, D. Kifer, C. Musco, D. Sheldon, "Efficient and Private
Marginal Reconstruction with Local Non-Negativity", NeurIPS 2024 (Prop. 1, Lemma 1, App. C, Lemmas 4–5);
Y. Xiao, G. He, D. Toksoz, D. Ding, D. Zhang, D. Kifer, "An Optimal and Scalable Matrix Mechanism for
Noisy Marginals under Convex Loss Functions" (ResidualPlanner), NeurIPS 2023.

Notation (digest §1.3). For attribute k with n_k values, D = D_(k) is the (n_k−1)×n_k differencing
matrix, (Dv)_i = v_i − v_{i+1} (the matrix printed in the paper; its prose has the opposite sign). For a
clique τ, D_τ = ⊗_{k∈τ} D_(k) (m_τ × n_τ, m_τ = ∏_{k∈τ}(n_k−1); D_∅ = [1]). The τ-residual of the data
is α_τ = R_τ p = D_τ μ_τ. For τ ⊆ γ (Prop. 1, Lemma 1):

    A_{γ,τ}  = M_γ R_τ⁺ = ⊗_k ( D⁺ if k∈τ ; 1_k/n_k if k∈γ\\τ ; 1 if k∉γ )     (n_γ × m_τ)
    A⁺_{γ,τ}            = ⊗_k ( D  if k∈τ ; 1_kᵀ    if k∈γ\\τ ; 1 if k∉γ )     (m_τ × n_γ)

Vectors are flattened row-major with axes in increasing attribute order (Kronecker order, as
``Dataset.marginal``). Every function here applies an operator one axis at a time with closed-form
O(n_k)-per-fibre formulas (cost O(|γ| n_γ)); nothing builds the n = ∏ n_k data vector, an n-column
matrix, or any dense Kronecker matrix — except the ``dense_*`` reference builders at the end, which exist
for tests only and refuse domains with n > 10^5.

Batching: every map accepts values of shape (..., m) (or (..., n_γ)) and acts on the last axis, so a
stack of measurements (e.g. Monte-Carlo trials) goes through in one call.

Closed forms (1-indexed; digest §1.3, verified against ``np.linalg.pinv`` in the tests):

* Dᵀu:      (Dᵀu)_i = u_i − u_{i−1} with u_0 = u_n = 0;
* D⁺v:      r_i = Σ_{j≥i} v_j (so r_n = 0), D⁺v = r − mean(r) = mean(c) − c with c_i = Σ_{j<i} v_j;
* (D⁺)ᵀw:   ((D⁺)ᵀw)_j = Σ_{i≤j} (w_i − mean(w)), j = 1..n−1;
* (DDᵀ)⁻¹ = (D⁺)ᵀD⁺ (entries min(i,j)(n−max(i,j))/n), so the solve is D⁺ followed by (D⁺)ᵀ.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise

import numpy as np

from dpviz.errors import InputError
from dpviz.marginals.model import Clique, Domain

__all__ = [
    "DENSE_LIMIT",
    "check_clique",
    "check_subset",
    "d_apply",
    "dense_D",
    "dense_marginal_matrix",
    "dense_residual_matrix",
    "dpinv_apply",
    "dpinv_t_apply",
    "dt_apply",
    "marginal_to_residual",
    "residual_cov_apply",
    "residual_cov_solve",
    "residual_to_marginal",
    "residual_to_marginal_t",
]

DENSE_LIMIT = 100_000
"""Largest universe size n = ∏ n_k the dense reference builders accept."""


# --------------------------------------------------------------------------- per-fibre operators


def _take(x: np.ndarray, axis: int, sl: slice) -> np.ndarray:
    index = [slice(None)] * x.ndim
    index[axis] = sl
    return x[tuple(index)]


def _zeros_like_slab(x: np.ndarray, axis: int) -> np.ndarray:
    shape = list(x.shape)
    shape[axis] = 1
    return np.zeros(shape, dtype=x.dtype)


def _float(x: np.ndarray | Sequence[float]) -> np.ndarray:
    return np.asarray(x, dtype=np.float64)


def _length(x: np.ndarray, axis: int, minimum: int, what: str) -> int:
    if x.ndim == 0:
        raise InputError(f"{what}: expected an array with at least one axis, got a scalar")
    n = x.shape[axis]
    if n < minimum:
        raise InputError(f"{what}: axis {axis} has length {n}, expected at least {minimum}")
    return n


def d_apply(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """D along ``axis``: length n → n−1, (Dv)_i = v_i − v_{i+1}."""
    x = _float(x)
    _length(x, axis, 1, "d_apply")
    return _take(x, axis, slice(None, -1)) - _take(x, axis, slice(1, None))


def dt_apply(u: np.ndarray, axis: int = -1) -> np.ndarray:
    """Dᵀ along ``axis``: length n−1 → n, (Dᵀu)_i = u_i − u_{i−1} with u_0 = u_n = 0."""
    u = _float(u)
    _length(u, axis, 0, "dt_apply")
    z = _zeros_like_slab(u, axis)
    return np.concatenate([u, z], axis=axis) - np.concatenate([z, u], axis=axis)


def dpinv_apply(v: np.ndarray, axis: int = -1) -> np.ndarray:
    """D⁺ along ``axis``: length n−1 → n.

    With c = (0, v_1, v_1+v_2, …, Σ_j v_j) (length n), the reverse cumulative sum is r = c_n − c, so
    D⁺v = r − mean(r) = mean(c) − c: one cumulative sum per fibre.
    """
    v = _float(v)
    n = _length(v, axis, 0, "dpinv_apply") + 1
    axis = axis % v.ndim
    c = np.cumsum(v, axis=axis)
    mean = np.add.reduce(c, axis=axis, keepdims=True) * (1.0 / n)   # mean of (0, c)
    shape = list(v.shape)
    shape[axis] = n
    out = np.empty(shape)
    head = (slice(None),) * axis
    out[head + (slice(0, 1),)] = mean
    np.subtract(mean, c, out=out[head + (slice(1, None),)])
    return out


def dpinv_t_apply(w: np.ndarray, axis: int = -1) -> np.ndarray:
    """(D⁺)ᵀ along ``axis``: length n → n−1, ((D⁺)ᵀw)_j = Σ_{i≤j} (w_i − mean(w))."""
    w = _float(w)
    _length(w, axis, 1, "dpinv_t_apply")
    c = np.cumsum(w - w.mean(axis=axis, keepdims=True), axis=axis)
    return _take(c, axis, slice(None, -1))


# --------------------------------------------------------------------------- validation


def check_clique(domain: Domain, clique: Sequence[int], what: str = "clique") -> Clique:
    """``clique`` as a Clique: distinct attribute indices in increasing order; InputError otherwise."""
    try:
        items = tuple(clique)
    except TypeError:
        raise InputError(f"{what}: expected a tuple of attribute indices, got {clique!r}") from None
    out = []
    for a in items:
        if isinstance(a, bool) or not isinstance(a, (int, np.integer)):
            raise InputError(f"{what}: expected attribute indices (ints), got {a!r} in {items!r}")
        if not 0 <= int(a) < domain.d:
            raise InputError(f"{what}: attribute index {int(a)} is out of range 0..{domain.d - 1}")
        out.append(int(a))
    if any(b <= a for a, b in pairwise(out)):
        raise InputError(f"{what}: attribute indices must be distinct and increasing, got {tuple(out)} "
                         f"(use {tuple(sorted(set(out)))})")
    return tuple(out)


def check_subset(domain: Domain, gamma: Sequence[int], tau: Sequence[int]) -> tuple[Clique, Clique]:
    """Validated (γ, τ) with τ ⊆ γ; InputError naming both otherwise."""
    g = check_clique(domain, gamma, "γ (marginal clique)")
    t = check_clique(domain, tau, "τ (residual clique)")
    if not set(t) <= set(g):
        raise InputError(f"residual τ = {domain.names(t)} is not a subset of the marginal γ = {domain.names(g)} "
                         "(A_{γ,τ} needs τ ⊆ γ)")
    return g, t


def _as_batch(values: np.ndarray | Sequence[float], size: int, what: str) -> np.ndarray:
    v = _float(values)
    if v.ndim == 0 or v.shape[-1] != size:
        got = "a scalar" if v.ndim == 0 else f"last axis {v.shape[-1]} (shape {v.shape})"
        raise InputError(f"{what}: expected {size} values on the last axis, got {got}")
    return v


# --------------------------------------------------------------------------- A maps


def residual_to_marginal(domain: Domain, gamma: Clique, tau: Clique, z: np.ndarray) -> np.ndarray:
    """A_{γ,τ} z (Prop. 1): D⁺ along the τ axes, spread uniformly (÷ n_k) along the γ\\τ axes.

    ``z``: shape (..., m_τ) → returns (..., n_γ), flattened row-major in γ order. Cost O(|γ| n_γ).
    """
    gamma, tau = check_subset(domain, gamma, tau)
    domain.check_cells(gamma)
    z = _as_batch(z, domain.residual_size(tau), f"A_{{γ,τ}} z for τ = {domain.names(tau)}")
    batch = z.shape[:-1]
    b = len(batch)
    x = z.reshape(batch + tuple(domain.sizes[k] - 1 for k in tau))
    for i in range(len(tau)):
        x = dpinv_apply(x, axis=b + i)
    spread = [k for k in gamma if k not in tau]
    if spread:
        x = x / float(np.prod([domain.sizes[k] for k in spread]))
        x = np.expand_dims(x, tuple(b + gamma.index(k) for k in spread))
        x = np.broadcast_to(x, batch + domain.shape(gamma))
    return np.array(x.reshape(batch + (domain.size(gamma),)), dtype=np.float64)


def residual_to_marginal_t(domain: Domain, gamma: Clique, tau: Clique, y: np.ndarray) -> np.ndarray:
    """A_{γ,τ}ᵀ y: sum over the γ\\τ axes ÷ ∏_{k∈γ\\τ} n_k, then (D⁺)ᵀ along the τ axes.

    ``y``: shape (..., n_γ) → returns (..., m_τ). Cost O(|γ| n_γ).
    """
    gamma, tau = check_subset(domain, gamma, tau)
    x, b = _sum_out(domain, gamma, tau, y, "A_{γ,τ}ᵀ y")
    spread = [k for k in gamma if k not in tau]
    if spread:
        x = x / float(np.prod([domain.sizes[k] for k in spread]))
    for i in range(len(tau)):
        x = dpinv_t_apply(x, axis=b + i)
    return x.reshape(x.shape[:b] + (domain.residual_size(tau),))


def marginal_to_residual(domain: Domain, gamma: Clique, tau: Clique, y: np.ndarray) -> np.ndarray:
    """A⁺_{γ,τ} y (Lemma 1): sum over the γ\\τ axes, then D along the τ axes.

    ``y``: shape (..., n_γ) → returns (..., m_τ). A⁺_{γ,τ} μ_γ = α_τ = R_τ p. Cost O(|γ| n_γ).
    """
    gamma, tau = check_subset(domain, gamma, tau)
    x, b = _sum_out(domain, gamma, tau, y, "A⁺_{γ,τ} y")
    for i in range(len(tau)):
        x = d_apply(x, axis=b + i)
    return x.reshape(x.shape[:b] + (domain.residual_size(tau),))


def _sum_out(domain: Domain, gamma: Clique, tau: Clique, y: np.ndarray, what: str) -> tuple[np.ndarray, int]:
    """y reshaped to (batch..., γ axes) with the γ\\τ axes summed out; returns it and the batch rank."""
    y = _as_batch(y, domain.size(gamma), f"{what} for γ = {domain.names(gamma)}")
    batch = y.shape[:-1]
    b = len(batch)
    x = y.reshape(batch + domain.shape(gamma))
    spread = tuple(b + i for i, k in enumerate(gamma) if k not in tau)
    if spread:
        x = x.sum(axis=spread)
    return x, b


def _per_axis(domain: Domain, tau: Clique, v: np.ndarray, what: str, ops) -> np.ndarray:
    tau = check_clique(domain, tau, "τ (residual clique)")
    v = _as_batch(v, domain.residual_size(tau), f"{what} for τ = {domain.names(tau)}")
    batch = v.shape[:-1]
    b = len(batch)
    x = v.reshape(batch + tuple(domain.sizes[k] - 1 for k in tau))
    for i in range(len(tau)):
        for op in ops:
            x = op(x, axis=b + i)
    return np.array(x.reshape(batch + (domain.residual_size(tau),)), dtype=np.float64)


def residual_cov_apply(domain: Domain, tau: Clique, v: np.ndarray) -> np.ndarray:
    """D_τ D_τᵀ v (the shape of a τ-residual's noise covariance): Dᵀ then D along each τ axis."""
    return _per_axis(domain, tau, v, "D_τD_τᵀ v", (dt_apply, d_apply))


def residual_cov_solve(domain: Domain, tau: Clique, v: np.ndarray) -> np.ndarray:
    """(D_τ D_τᵀ)⁻¹ v = ⊗_k (D⁺)ᵀD⁺ v: D⁺ then (D⁺)ᵀ along each τ axis (O(n_k) per fibre, no banded solve)."""
    return _per_axis(domain, tau, v, "(D_τD_τᵀ)⁻¹ v", (dpinv_apply, dpinv_t_apply))


# --------------------------------------------------------------------------- dense references (tests only)


def _dense_guard(domain: Domain) -> int:
    n = 1
    for s in domain.sizes:
        n *= s
    if n > DENSE_LIMIT:
        raise InputError(f"dense reference matrices are for tiny test domains only: n = {n:,} > {DENSE_LIMIT:,}")
    return n


def dense_D(n: int) -> np.ndarray:
    """Dense D_(k) ((n−1)×n, rows e_i − e_{i+1}); tests only."""
    n = int(n)
    if not 1 <= n <= DENSE_LIMIT:
        raise InputError(f"dense_D: n = {n} must lie in 1..{DENSE_LIMIT}")
    return np.eye(n - 1, n) - np.eye(n - 1, n, k=1)


def _kron(factors: list[np.ndarray]) -> np.ndarray:
    out = np.ones((1, 1))
    for f in factors:
        out = np.kron(out, f)
    return out


def dense_marginal_matrix(domain: Domain, gamma: Clique) -> np.ndarray:
    """Dense M_γ = ⊗_k (I if k∈γ else 1ᵀ) (n_γ × n), built with np.kron; tests only (n ≤ 10^5)."""
    _dense_guard(domain)
    gamma = check_clique(domain, gamma, "γ")
    return _kron([np.eye(s) if k in gamma else np.ones((1, s)) for k, s in enumerate(domain.sizes)])


def dense_residual_matrix(domain: Domain, tau: Clique) -> np.ndarray:
    """Dense R_τ = ⊗_k (D if k∈τ else 1ᵀ) (m_τ × n), built with np.kron; tests only (n ≤ 10^5)."""
    _dense_guard(domain)
    tau = check_clique(domain, tau, "τ")
    return _kron([dense_D(s) if k in tau else np.ones((1, s)) for k, s in enumerate(domain.sizes)])
