"""Banded Toeplitz factorisations of the prefix-sum workload, optimised for a horizon N.

McMahan, Choquette-Choo, Ganesh, Jain, Pillutla, Thakurta et al., "(Amplified) Banded Matrix Factorization: A
unified approach to private training", NeurIPS 2023 (b-banded strategies C, optimised for the workload's
squared error; Sec. 3-4); Kalinin & Lampert, "Banded Square Root Matrix Factorization for Differentially
Private Model Training", NeurIPS 2024 (the banded square root: the square-root factor's first b coefficients,
here the starting point of the optimisation).

**The factorisation.** W = B C with C the lower-triangular Toeplitz matrix of c_0 = 1, c_1..c_{b−1} (zero
beyond the band b) and the decoder B = W C⁻¹, Toeplitz with the coefficients of 1/((1 − x) c(x)) — an IIR
filter with a degree-b denominator, computed in O(N b) (``scipy.signal.lfilter``). C is the *strategy*
(y = C a + η), B the estimator. Sensitivity (one event, ℓ₂): ‖c‖₂ (every column holds the whole band but
the last b − 1 shorter ones).

**Optimisation.** :func:`optimise_banded` minimises log ‖c‖² + log Σ_k w_k b_k² over c_1..c_{b−1} ≥ 0, with
w_k = 1 (``"max"``: the worst step is the last, Σ_{k<N} b_k²) or w_k = N − k (``"mean"``: the mean per-step
variance, the Frobenius objective of McMahan et al.). The gradient is exact: ∂b/∂c_j = −x^j b(x)/c(x), so
∂/∂c_j Σ w_k b_k² = −2 Σ_k w_k b_k h_{k−j} with h the coefficients of 1/((1 − x) c(x)²) — a correlation
(FFT). Non-negative coefficients keep the strategy releasable on the lattice (:mod:`dpviz.stream.lattice`).

A band b < N pays for its O(b) state: b_k → 1/c(1) ≥ 1/(√b ‖c‖), so the worst-step variance grows like N/b
once N ≫ b (McMahan et al. use banded strategies for amplification, not for one long stream).

**Streaming form (O(b) state and work per step).** (B z)_t = Σ_{j≤t} y_j with y_t = z_t − Σ_{1≤k<b} c_k
y_{t−k} (the last b − 1 values of y in a ring buffer).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property, lru_cache

import numpy as np

from dpviz.errors import InputError
from dpviz.stream.blt import Objective
from dpviz.stream.estimators import readonly, sqrt_coefficients
from dpviz.stream.fenwick import check_horizon

__all__ = ["DEFAULT_BAND", "Banded", "banded_decoder", "banded_losses", "optimise_banded", "banded"]

DEFAULT_BAND = 64
"""b of the registered ``banded`` mechanism (O(b) state and work per step)."""


def banded_decoder(coefficients: np.ndarray, horizon: int) -> np.ndarray:
    """b_0..b_{N−1}: the coefficients of 1/((1 − x) c(x)) (O(N b), an IIR filter)."""
    from scipy.signal import lfilter

    c = np.asarray(coefficients, dtype=float)
    impulse = np.zeros(horizon)
    impulse[0] = 1.0
    return lfilter([1.0], np.convolve(c, [1.0, -1.0]), impulse)


def banded_losses(coefficients: np.ndarray, horizon: int) -> tuple[float, float, float]:
    """(‖c‖², Σ_{k<N} b_k², Σ_{k<N} (N − k) b_k²) of the banded strategy with ``coefficients``."""
    c = np.asarray(coefficients, dtype=float)
    b2 = banded_decoder(c, horizon) ** 2
    return float(c @ c), float(b2.sum()), float(b2 @ np.arange(horizon, 0, -1, dtype=float))


@dataclass(frozen=True, eq=False)
class Banded:
    """A b-banded Toeplitz strategy C (``band`` coefficients, c_0 = 1) for horizon N and its decoder."""

    horizon: int
    band_coefficients: tuple[float, ...]
    objective: Objective = "mean"

    @property
    def band(self) -> int:
        return len(self.band_coefficients)

    @cached_property
    def coefficients(self) -> np.ndarray:
        """c_0..c_{N−1} (zero beyond the band; non-negative)."""
        c = np.zeros(self.horizon)
        c[: self.band] = self.band_coefficients
        return readonly(c)

    @cached_property
    def decoder(self) -> np.ndarray:
        return readonly(banded_decoder(np.asarray(self.band_coefficients), self.horizon))

    @cached_property
    def _losses(self) -> tuple[float, float, float]:
        c2 = float(np.sum(np.square(self.band_coefficients)))
        b2 = np.square(self.decoder)
        return c2, float(b2.sum()), float(b2 @ np.arange(self.horizon, 0, -1, dtype=float))

    @property
    def max_loss(self) -> float:
        """Max column norm of C × max row norm of B = ‖c‖ ‖b‖."""
        c2, b2, _ = self._losses
        return math.sqrt(c2 * b2)

    @property
    def mean_loss(self) -> float:
        """Mean per-step variance at unit sensitivity and unit noise."""
        c2, _, bm = self._losses
        return c2 * bm / self.horizon


def _head(horizon: int, band: int) -> int:
    """Steps computed exactly in the optimisation; beyond them b_k = 1/c(1) to rounding (checked)."""
    return min(horizon, max(4096, 128 * band))


def _loss_and_grad(free: np.ndarray, horizon: int, objective: Objective) -> tuple[float, np.ndarray]:
    """log ‖c‖² + log Σ w_k b_k² and its exact gradient in c_1..c_{b−1} (module docstring).

    The first K = :func:`_head` coefficients exactly; the tail k ≥ K at its limit b_∞ = 1/c(1) (the poles of
    1/c lie outside the unit disc for c_0 ≥ c_1 ≥ ... ≥ 0, Eneström-Kakeya, so b_k − b_∞ decays geometrically;
    when it has not decayed to 10^-12 relative by K, K is quadrupled until it has or K = N).
    """
    from scipy.signal import correlate, lfilter

    c = np.concatenate([[1.0], free])
    total = float(c.sum())
    k = _head(horizon, c.size)
    b = banded_decoder(c, k)
    while k < horizon and not abs(b[-1] * total - 1.0) <= 1e-12:  # O(log N) extensions at most
        k = min(horizon, 4 * k)
        b = banded_decoder(c, k)
    w = 1.0 if objective == "max" else np.arange(horizon, horizon - k, -1, dtype=float)
    with np.errstate(over="ignore", invalid="ignore"):
        wb = w * b
        s = float(wb @ b)
    if not math.isfinite(s) or s <= 0.0:
        return 1e6, np.zeros_like(free)
    h = lfilter([1.0], c, b)  # 1/((1 − x) c(x)²)
    corr = correlate(wb, h, mode="full", method="auto")[k : k + c.size - 1]  # lags 1..b−1
    tail = float(horizon - k) if objective == "max" else (horizon - k) * (horizon - k + 1) / 2.0  # Σ_{j≥K} w_j
    s += tail / total**2
    corr += tail / total**3
    c2 = float(c @ c)
    return math.log(c2) + math.log(s), 2.0 * free / c2 - 2.0 * corr / s


@lru_cache(maxsize=32)
def optimise_banded(horizon: int, band: int = DEFAULT_BAND, objective: Objective = "mean") -> Banded:
    """The b-banded Toeplitz strategy (c_j ≥ 0) minimising the ``"mean"`` or ``"max"`` error at horizon N.

    L-BFGS-B from the banded square root (Kalinin & Lampert 2024), exact gradients (O(K b + K log K) each,
    K = :func:`_head`: under a second at N = 2^20, b = 64);
    b = min(band, N). Cached per (N, b, objective).
    """
    from scipy.optimize import minimize

    n = check_horizon(horizon)
    if objective not in ("max", "mean"):
        raise InputError(f"objective: expected 'max' or 'mean', got {objective!r}")
    if isinstance(band, bool) or not isinstance(band, int) or band < 1:
        raise InputError(f"band: expected a positive integer, got {band!r}")
    b = min(band, n)
    start = sqrt_coefficients(b)
    if b == 1:
        return Banded(n, (1.0,), objective)
    res = minimize(_loss_and_grad, start[1:], args=(n, objective), jac=True, method="L-BFGS-B",
                   bounds=[(0.0, 1.0)] * (b - 1), options={"maxiter": 300, "ftol": 1e-10, "gtol": 1e-9})
    best = res.x if res.fun <= _loss_and_grad(start[1:], n, objective)[0] else start[1:]
    return Banded(n, (1.0,) + tuple(float(v) for v in best), objective)


def banded(horizon: int) -> Banded:
    """The registered ``banded`` mechanism's factorisation: band :data:`DEFAULT_BAND`, mean-error objective."""
    return optimise_banded(check_horizon(horizon), DEFAULT_BAND, "mean")
