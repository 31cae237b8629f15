"""Buffered-Linear-Toeplitz (BLT) factorisations of the prefix-sum workload, optimised for a horizon N.

Dvijotham, McMahan, Pillutla, Steinke & Thakurta, "Efficient and Near-Optimal Noise Generation for Streaming
Differential Privacy", FOCS 2024 (BLT matrices, Def. 3.1; the inverse of a BLT is a BLT, Thm 3.3; the
closed-form losses, Sec. 5) and McMahan, Pillutla et al., "Hassle-free ..." (optimising the BLT parameters).

**The factorisation.** W = B C with C the lower-triangular Toeplitz matrix of the d-buffer BLT sequence

    c_0 = 1,   c_k = Σ_{i<d} ω_i θ_i^{k−1}   (k ≥ 1, 0 < θ_i < 1, ω_i > 0)

(generating function c(x) = 1 + Σ_i ω_i x/(1 − θ_i x)) and the decoder B = W C⁻¹, Toeplitz with the
coefficients b of 1/((1 − x) c(x)). C is the *strategy* of :mod:`dpviz.stream.strategy` (Q = C, measured with
y = C a + η), B its estimator (ŝ = B y = W a + B η). C⁻¹ is itself a BLT (Thm 3.3): its parameters are the
eigenvalues λ_j of Θ − 1ωᵀ (real, distinct, interlacing the θ_i: the secular equation Σ_i ω_i/(θ_i − λ) = 1)
and the matching weights, so b has the closed form b_k = 1 + Σ_j ω'_j (1 − λ_j^k)/(1 − λ_j).

**Losses, O(d³ log N) per evaluation (no N×N matrix).** With unit ℓ₂ sensitivity per event:

* sensitivity² = ‖C e_1‖² = 1 + Σ_{i,j} ω_i ω_j (1 − (θ_iθ_j)^{N−1})/(1 − θ_iθ_j) (column 1 is the longest);
* worst-step variance ∝ ‖B e_N^T‖² = Σ_{k<N} b_k² (the last row is the longest);
* mean per-step variance ∝ (1/N) Σ_{k<N} (N − k) b_k².

b_k = hᵀ F^{k−1} g (k ≥ 1) for the (d+1)-state linear system of the streaming form below, so the two sums
of b_k² are finite Gramians Σ_{m<M} F^m g gᵀ F^{mT} (and the (M − m)-weighted one), computed by doubling
(:func:`blt_losses`). :func:`optimise_blt` minimises log(sensitivity² × loss) over (log τ_i, log ω_i),
θ_i = e^{−τ_i}, with L-BFGS-B (gradient by batched central differences), from a quadrature fit of the square
root factor's coefficients 1/√(πk) (a sum of exponentials in k). ``objective="max"`` is the worst-step error
(max row norm of B × max column norm of C), ``"mean"`` the Frobenius (mean-variance) one.

**Streaming form (O(d) state and work per step).** (B z)_t = Σ_{j≤t} (C⁻¹ z)_j with, per step,
y_t = z_t − Σ_i ω_i S_i, then S_i ← θ_i S_i + y_t (buffer i holds Σ_{k≥1} θ_i^{k−1} y_{t−k}): the released
total is s_t + σ Σ_{j≤t} y_j (:class:`dpviz.stream.mechanism.Mechanism` streamers).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Literal

import numpy as np

from dpviz.errors import InputError
from dpviz.stream.estimators import readonly
from dpviz.stream.fenwick import check_horizon

__all__ = ["DEFAULT_BUFFERS", "Objective", "BLT", "blt_losses", "optimise_blt", "blt"]

DEFAULT_BUFFERS = 8
"""d of the registered ``blt`` mechanism: O(d) state per step; at N = 2^20 d = 8 is within 0.05% of the square
root factorisation's worst-step error (d = 4: 1.6%)."""
Objective = Literal["max", "mean"]
_FD_STEP = 1e-6  # central-difference step in the log-parameters


def _check_objective(objective: str) -> Objective:
    if objective not in ("max", "mean"):
        raise InputError(f"objective: expected 'max' or 'mean', got {objective!r}")
    return objective  # type: ignore[return-value]


def _gramians(f: np.ndarray, g: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
    """(S, T) = (Σ_{k<m} F^k g gᵀ F^{kT}, Σ_{k<m} (m − k) F^k g gᵀ F^{kT}), batched over leading axes, by the
    binary method: S(a+b) = S(a) + F^a S(b) F^{aT}, T(a+b) = T(a) + b S(a) + F^a T(b) F^{aT}. O(log m) products."""
    n = f.shape[-1]
    gg = g[..., :, None] * g[..., None, :]
    p2, s2, t2, len2 = f, gg, gg, 1  # block of length 2^j
    pa = np.broadcast_to(np.eye(n), f.shape).copy()
    sa = np.zeros_like(gg)
    ta = np.zeros_like(gg)
    while m:  # O(log N) doublings
        if m & 1:
            pat = np.swapaxes(pa, -1, -2)
            ta = ta + len2 * sa + pa @ t2 @ pat
            sa = sa + pa @ s2 @ pat
            pa = pa @ p2
        m >>= 1
        if m:
            pt = np.swapaxes(p2, -1, -2)
            t2 = t2 + len2 * s2 + p2 @ t2 @ pt
            s2 = s2 + p2 @ s2 @ pt
            p2 = p2 @ p2
            len2 *= 2
    return sa, ta


def blt_losses(tau: np.ndarray, omega: np.ndarray, horizon: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(‖c‖², Σ_{k<N} b_k², Σ_{k<N} (N − k) b_k²) for BLTs θ = e^{−τ}, ω (batched over leading axes).

    Closed form for ‖c‖² (geometric sums, expm1 for θθ near 1); the b sums from the Gramians of the state
    x = (S_1..S_d, Σ y) with F = [[Θ − 1ωᵀ, 0], [−ωᵀ, 1]], g = 1, h = (−ω, 1): b_k = hᵀ F^{k−1} g, k ≥ 1.
    """
    tau = np.asarray(tau, dtype=float)
    w = np.asarray(omega, dtype=float)
    d = tau.shape[-1]
    s = tau[..., :, None] + tau[..., None, :]
    geo = np.expm1(-(horizon - 1) * s) / np.expm1(-s)
    c2 = 1.0 + np.einsum("...i,...ij,...j->...", w, geo, w)
    theta = np.exp(-tau)
    f = np.zeros(tau.shape[:-1] + (d + 1, d + 1))
    f[..., :d, :d] = theta[..., :, None] * np.eye(d) - w[..., None, :]
    f[..., d, :d] = -w
    f[..., d, d] = 1.0
    g = np.ones(tau.shape[:-1] + (d + 1,))
    h = np.concatenate([-w, np.ones(tau.shape[:-1] + (1,))], axis=-1)
    sm, tm = _gramians(f, g, horizon - 1)
    b2 = 1.0 + np.einsum("...i,...ij,...j->...", h, sm, h)
    bm = float(horizon) + np.einsum("...i,...ij,...j->...", h, tm, h)
    return c2, b2, bm


def _start(buffers: int, horizon: int) -> np.ndarray:
    """Quadrature fit of c_k ≈ 1/√(πk) = (1/π) ∫ t^{1/2} e^{−kt} d(log t): nodes τ_i log-spaced in [1/N, 2]."""
    u = np.linspace(math.log(1.0 / horizon), math.log(2.0), buffers)
    step = (u[1] - u[0]) if buffers > 1 else 1.0
    tau = np.exp(u)
    omega = step / math.pi * np.sqrt(tau) * np.exp(-tau)
    return np.concatenate([u, np.log(omega)])


@dataclass(frozen=True, eq=False)
class BLT:
    """A d-buffer BLT strategy C for horizon N and its decoder B = W C⁻¹ (module docstring).

    ``theta``/``omega``: the buffers' decays and weights; ``objective``: what it was optimised for.
    """

    horizon: int
    theta: tuple[float, ...]
    omega: tuple[float, ...]
    objective: Objective = "max"

    @property
    def buffers(self) -> int:
        return len(self.theta)

    @cached_property
    def _losses(self) -> tuple[float, float, float]:
        if self.horizon == 1 or not self.theta:
            return 1.0, 1.0, 1.0
        tau = -np.log(np.asarray(self.theta))
        c2, b2, bm = blt_losses(tau, np.asarray(self.omega), self.horizon)
        return float(c2), float(b2), float(bm)

    @property
    def max_loss(self) -> float:
        """γ₂-type worst-step error: max column norm of C × max row norm of B = ‖c‖ ‖b‖."""
        c2, b2, _ = self._losses
        return math.sqrt(c2 * b2)

    @property
    def mean_loss(self) -> float:
        """Mean per-step variance at unit sensitivity and unit noise: ‖c‖² (1/N) Σ_k (N − k) b_k²."""
        c2, _, bm = self._losses
        return c2 * bm / self.horizon

    @cached_property
    def coefficients(self) -> np.ndarray:
        """c_0..c_{N−1} of the strategy C (non-negative: ω, θ > 0)."""
        k = np.arange(self.horizon - 1, dtype=float)
        c = np.zeros(self.horizon)
        c[0] = 1.0
        for th, om in zip(self.theta, self.omega):  # O(d) buffers, vectorised over steps
            c[1:] += om * np.power(th, k)
        return readonly(c)

    @cached_property
    def inverse(self) -> tuple[np.ndarray, np.ndarray]:
        """(λ, ω') of the BLT C⁻¹ (Thm 3.3): (C⁻¹)_k = Σ_j ω'_j λ_j^{k−1}, k ≥ 1, λ the eigenvalues of Θ − 1ωᵀ."""
        th, om = np.asarray(self.theta), np.asarray(self.omega)
        m = np.diag(th) - np.outer(np.ones(th.size), om)
        lam, vec = np.linalg.eig(m)
        left = -(om @ vec)
        right = np.linalg.solve(vec, np.ones(th.size))
        return np.real(lam), np.real(left * right)

    @cached_property
    def decoder(self) -> np.ndarray:
        """b_0..b_{N−1} of B = W C⁻¹: the running sums of the coefficients of C⁻¹ (closed form)."""
        y = np.zeros(self.horizon)
        y[0] = 1.0
        if self.theta:
            lam, wt = self.inverse
            k = np.arange(self.horizon - 1, dtype=float)
            for lj, wj in zip(lam.tolist(), wt.tolist()):  # O(d) buffers
                y[1:] += wj * np.power(lj, k)
        return readonly(np.cumsum(y))


def _objective(x: np.ndarray, d: int, horizon: int, objective: Objective) -> np.ndarray:
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        c2, b2, bm = blt_losses(np.exp(x[..., :d]), np.exp(x[..., d:]), horizon)
        val = np.log(c2 * (b2 if objective == "max" else bm / horizon))
    return np.where(np.isfinite(val), val, 1e6)


@lru_cache(maxsize=32)
def optimise_blt(horizon: int, buffers: int = DEFAULT_BUFFERS, objective: Objective = "max") -> BLT:
    """The d-buffer BLT minimising the worst-step (``"max"``) or mean (``"mean"``) error at horizon N.

    At most min(d, ⌈(log2 N + 1)/2⌉) buffers are used (more gain nothing measurable at small N: at N = 23,
    3 and 8 buffers agree to 10^-7; at N = 1024, 6 and 8 to 10^-5).
    L-BFGS-B over (log τ, log ω) (bounded so θ ∈ (e^{−30}, 1 − 10^{−3}/N), ω ∈ (e^{−40}, e^5)), gradients by
    batched central differences of :func:`blt_losses` (4d + 1 evaluations in one batched call): about 1 s
    at N = 2^20, d = 8 (2-3 s on a loaded 2-core box). Cached per (N, d, objective).
    """
    from scipy.optimize import minimize  # here: the CLI starts without SciPy's optimiser

    n = check_horizon(horizon)
    objective = _check_objective(objective)
    if isinstance(buffers, bool) or not isinstance(buffers, int) or not 1 <= buffers <= 32:
        raise InputError(f"buffers: expected 1..32, got {buffers!r}")
    d = min(buffers, max(1, (n.bit_length() + 1) // 2))  # more buffers than ~log2(N)/2 gain nothing
    if n == 1:  # c = (1): nothing to optimise
        return BLT(n, (), (), objective)
    x0 = _start(d, n)
    lo = [math.log(1e-3 / n)] * d + [-40.0] * d
    hi = [math.log(30.0)] * d + [5.0] * d
    x0 = np.clip(x0, lo, hi)
    eye = np.eye(2 * d) * _FD_STEP

    def fun(x: np.ndarray) -> tuple[float, np.ndarray]:
        pts = np.concatenate([x[None, :], x + eye, x - eye])
        v = _objective(pts, d, n, objective)
        return float(v[0]), (v[1 : 2 * d + 1] - v[2 * d + 1 :]) / (2 * _FD_STEP)

    res = minimize(fun, x0, jac=True, method="L-BFGS-B", bounds=list(zip(lo, hi)),
                   options={"maxiter": 400, "ftol": 1e-10, "gtol": 1e-9})
    x = res.x if res.fun <= fun(x0)[0] else x0
    order = np.argsort(x[:d])
    theta = tuple(float(v) for v in np.exp(-np.exp(x[:d][order])))
    omega = tuple(float(v) for v in np.exp(x[d:][order]))
    return BLT(n, theta, omega, objective)


def blt(horizon: int) -> BLT:
    """The registered ``blt`` mechanism's factorisation: :data:`DEFAULT_BUFFERS` buffers, worst-step objective."""
    return optimise_blt(check_horizon(horizon), DEFAULT_BUFFERS, "max")
