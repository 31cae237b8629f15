"""The square-root factorisation with re-weighted rows (``sqrt-weighted``): W = (L D⁻¹)(D L), D = diag(d).

The square-root factor L (Fichtenberger, Henzinger & Upadhyay, ICML 2023; :mod:`dpviz.stream.estimators`) has
its worst error at the last step and its largest sensitivity in the first column: max_t ‖row_t(L)‖ ·
max_j ‖col_j(L)‖ = Σ_{k<N} c_k² ≈ 1 + ln N/π. Measuring the rows of L with weights d_i (the strategy D L, the
decoder L D⁻¹: the diagonal Σ of the weighted Fenwick mechanism, Eq. 5.8, on the square root) trades the two:

    γ₂(d) = max_j √(Σ_i d_i² L_ij²) · max_t √(Σ_i L_ti² / d_i²).

Minimising it over d (d increasing from d_0 = 1 by about 20%: later rows, which every late column and the
worst step share, are measured more precisely) comes within about 1.5% of the issue's "best explicit
factorisation" figure 0.846 + ln N/π at N = 2^16..2^20 (1.013× and 1.015× measured), where the square root is
1.05× and 1.04×. No Toeplitz factorisation optimised here (BLT with up to 8 buffers, banded, the full Toeplitz
at N ≤ 64) went below the square root's worst-step error: the gain needs the non-Toeplitz D.
``blt-weighted`` puts the same weights on the BLT strategy (:mod:`dpviz.stream.blt`, the square root to ~10^-4):
the same worst-step error with O(d) streaming state.

**Weights.** :func:`row_weights` minimises a log-sum-exp smoothing of log γ₂(d) (sharpness 20 → 2000, L-BFGS,
dense N×N, exact gradient) for N ≤ :data:`DENSE_MAX`; a longer horizon takes the N0 = :data:`DENSE_MAX` optimum
stretched in i/N (its γ₂ is computed exactly for that N, by FFT). Public: a function of N only.

**Measurement and release.** Node i is the integer-count query (L a)_i with noise of scale σ/d_i (the weighted
measurement of :mod:`dpviz.stream.strategy`): one event at step j costs Σ_i d_i² L_ij²/(2σ²) ≤ Δ²/(2σ²) = ρ with
Δ = max_j ‖D L e_j‖₂. The release rounds L to the lattice 2^−k ℤ like :mod:`dpviz.stream.lattice` (the same
exact integer convolution) and draws N_ℤ(0, (σ 2^k/d_i)²) per coordinate, charging

    Δ̃ = (1 + 10^−9) max_j ‖D L e_j‖₂ + max_i d_i · √N · 2^−k,

which bounds max_j ‖D L̃ e_j‖₂ (triangle inequality: each rounding error ≤ 2^{−k−1}, weighted by ≤ max d; the
10^−9 covers the float error of the FFT column norms, ~10^−15 relative). Gaussian (ρ-zCDP) only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Any

import numpy as np

from dpviz.core.noise import Family, Noise
from dpviz.core.protocols import measure, require_integral
from dpviz.core.samplers import MAX_SCALE
from dpviz.errors import InputError
from dpviz.stream.estimators import readonly, sqrt_coefficients, toeplitz_apply
from dpviz.stream.lattice import (
    LAPLACE_REFUSAL,
    LATTICE_BITS,
    Lattice,
    LatticeMeasurement,
    exact_causal_convolution,
    quantised_coefficients,
)
from dpviz.stream.strategy import StreamStrategy, _padded, check_family
from dpviz.stream.toeplitz import ToeplitzEstimator

__all__ = ["DENSE_MAX", "FLOAT_MARGIN", "row_weights", "weighted_gamma2", "WeightedSqrtStrategy", "WeightedBLTStrategy",
           "WeightedLattice", "weighted_lattice_measure"]

DENSE_MAX = 512
"""Horizons up to this are optimised directly (dense N×N); longer ones stretch this horizon's optimum."""
FLOAT_MARGIN = 1e-9
"""Relative margin on the float (FFT) weighted column norm in the charged sensitivity (module docstring)."""


def _dense_optimum(n: int) -> np.ndarray:
    """d² minimising the smoothed max column × max row norm of (D L, L D⁻¹) at horizon n (d_0 = 1)."""
    from scipy.optimize import minimize
    from scipy.special import logsumexp

    c = sqrt_coefficients(n)
    i, j = np.indices((n, n))
    l2 = np.where(i >= j, c[np.clip(i - j, 0, n - 1)], 0.0) ** 2

    def f(x: np.ndarray, p: float) -> tuple[float, np.ndarray]:
        d2 = np.exp(x)
        col, row = d2 @ l2, l2 @ (1.0 / d2)
        lc, lr = p * np.log(col), p * np.log(row)
        zc, zr = logsumexp(lc), logsumexp(lr)
        grad = (l2 @ (np.exp(lc - zc) / col)) * d2 - (l2.T @ (np.exp(lr - zr) / row)) / d2
        return (zc + zr) / p, grad

    x = np.zeros(n)
    for p in (20.0, 100.0, 500.0, 2000.0):  # continuation towards the max
        x = minimize(f, x, jac=True, args=(p,), method="L-BFGS-B", options={"maxiter": 3000}).x
    return np.exp(x - x.min())


@lru_cache(maxsize=64)
def _row_weights(n: int) -> np.ndarray:
    if n == 1:
        return readonly(np.ones(1))
    if n <= DENSE_MAX:
        return readonly(np.sqrt(_dense_optimum(n)))
    base = _row_weights(DENSE_MAX) ** 2
    d2 = np.interp(np.arange(n) / (n - 1), np.arange(DENSE_MAX) / (DENSE_MAX - 1), base)
    return readonly(np.sqrt(d2 / d2.min()))


def row_weights(horizon: int) -> np.ndarray:
    """d_0..d_{N−1} (min 1) of ``sqrt-weighted`` at horizon N (read-only, cached per N)."""
    from dpviz.stream.fenwick import check_horizon

    return _row_weights(check_horizon(horizon))


def _weighted_norms(weights: np.ndarray, strategy: np.ndarray | None = None,
                    decoder: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(‖D C e_j‖₂², ‖row_t(B D⁻¹)‖₂²) for every j, t, by FFT; C = B = L (the square root) unless given."""
    d2 = np.square(np.asarray(weights, dtype=float))
    root = sqrt_coefficients(d2.size)
    c2 = np.square(root if strategy is None else np.asarray(strategy, dtype=float))
    b2 = np.square(root if decoder is None else np.asarray(decoder, dtype=float))
    col = toeplitz_apply(c2, d2[::-1])[::-1]  # Σ_k c_k² d²_{j+k}
    row = toeplitz_apply(b2, 1.0 / d2)  # Σ_k b_k² / d²_{t−k}
    return col, row


def weighted_gamma2(weights: np.ndarray, strategy: np.ndarray | None = None, decoder: np.ndarray | None = None) -> float:
    """γ₂(d) = max column norm of D C × max row norm of B D⁻¹ (C = B = L unless given)."""
    col, row = _weighted_norms(weights, strategy, decoder)
    return math.sqrt(float(col.max()) * float(row.max()))


@dataclass(frozen=True, eq=False)
class WeightedSqrtStrategy(StreamStrategy):
    """Q = D L (queries (L a)_i with weights d_i), R = L D⁻¹ (module docstring). Gaussian only."""

    @property
    def discrete_ok(self) -> bool:
        return False

    @cached_property
    def weights(self) -> np.ndarray:
        return row_weights(self.horizon)

    @property
    def lattice_coefficients(self) -> np.ndarray:
        """C's coefficients (the square root's: C = B = L)."""
        return self.estimator.coefficients

    @property
    def lattice_weights(self) -> np.ndarray:
        return self.weights

    @cached_property
    def estimator(self) -> ToeplitzEstimator:
        return ToeplitzEstimator(self.horizon, readonly(sqrt_coefficients(self.horizon)), "sqrt-weighted-decoder")

    @property
    def size(self) -> int:
        return self.horizon

    @cached_property
    def _l2(self) -> float:
        return math.sqrt(float(_weighted_norms(self.weights, self.lattice_coefficients)[0].max()))

    def sensitivity(self, family: Family | None = None) -> float:
        if check_family(family or self.family) != "gaussian":
            raise InputError(f"mechanism {self.name!r}: a real factorisation needs Gaussian noise (ρ-zCDP)")
        return self._l2

    def answer(self, data: Any) -> np.ndarray:
        return toeplitz_apply(self.lattice_coefficients, _padded(data, self.horizon))


@dataclass(frozen=True, eq=False)
class WeightedBLTStrategy(WeightedSqrtStrategy):
    """``blt-weighted``: the same row weights on the BLT strategy C (:func:`dpviz.stream.blt.blt`, the square root
    to ~10^-4 in the worst step), decoder B D⁻¹ with the BLT decoder B: the worst-step error of ``sqrt-weighted``
    with the BLT's O(d) streaming state (the noise of row k enters the d buffers at its scale σ/d_k)."""

    @cached_property
    def factor(self) -> Any:
        from dpviz.stream.blt import blt

        return blt(self.horizon)

    @property
    def lattice_coefficients(self) -> np.ndarray:
        return self.factor.coefficients

    @cached_property
    def estimator(self) -> ToeplitzEstimator:
        return ToeplitzEstimator(self.horizon, readonly(np.array(self.factor.decoder, dtype=float)),
                                 "blt-weighted-decoder")


@dataclass(frozen=True)
class WeightedLattice(Lattice):
    """A :class:`~dpviz.stream.lattice.Lattice` whose coordinate i has noise σ/d_i; ``max_weight`` = max d."""

    max_weight: float = 1.0

    def as_dict(self) -> dict[str, Any]:
        out = super().as_dict()
        out.update({"slack_formula": "max(d) * sqrt(N) * 2^-k", "row_weights": "coordinate i: sigma / d_i",
                    "max_weight": self.max_weight, "float_margin": FLOAT_MARGIN,
                    "noise": "discrete Gaussian N_Z(0, (sigma 2^k / d_i)^2) on Z, scaled by 2^-k"})
        return out


def _choose(base: float, dmax: float, horizon: int, noise: Noise) -> WeightedLattice:
    root_n = math.sqrt(horizon)
    for k in range(LATTICE_BITS, -1, -1):
        slack = math.ldexp(dmax * root_n, -k)
        sigma = noise.scale(base + slack)
        if math.ldexp(sigma, k) <= MAX_SCALE:  # d_i ≥ 1: every coordinate's scale is at most σ 2^k
            return WeightedLattice(k, horizon, base, slack, float(sigma), dmax)
    raise InputError(f"noise: σ = {noise.scale(base):g} is above the sampler's MAX_SCALE = 2^40")


_WORD = 1 << 32


@dataclass(frozen=True, eq=False)
class _WeightedLowWords:
    """What core's ``measure`` sees: the low 32-bit words of Z = 2^k L̃ x, coordinate i with scale σ 2^k/d_i."""

    name: str
    lattice: WeightedLattice
    weights: np.ndarray

    def sensitivity(self, family: str) -> float:
        return self.lattice.sensitivity

    def scales(self, noise: Noise) -> np.ndarray:
        return self.lattice.integer_sigma / self.weights

    def answer(self, data: np.ndarray) -> np.ndarray:
        return data


def weighted_lattice_measure(name: str, coefficients: np.ndarray, weights: np.ndarray, base_sensitivity: float,
                             counts: Any, noise: Noise, rng: np.random.Generator | None = None
                             ) -> tuple[LatticeMeasurement, WeightedLattice]:
    """y_i = 2^−k (Z_i + G_i), Z = 2^k L̃ x exactly, G_i ~ N_ℤ(0, (σ 2^k/d_i)²) (module docstring)."""
    if noise.family != "gaussian":
        raise InputError(LAPLACE_REFUSAL)
    if not noise.discrete:
        raise InputError("a lattice release needs discrete noise (Noise(..., discrete=True))")
    d = np.asarray(weights, dtype=float)
    if d.size != np.size(coefficients) or not np.all(d >= 1.0):
        raise InputError("lattice: expected one weight ≥ 1 per coefficient")
    lat = _choose(float(base_sensitivity) * (1.0 + FLOAT_MARGIN), float(d.max()), d.size, noise)
    c = quantised_coefficients(coefficients, lat.bits)
    x = require_integral(counts, "series", unit="step")
    if x.ndim != 1 or x.size > c.size:
        raise InputError(f"series: expected at most {c.size} counts in one dimension")
    z = exact_causal_convolution(c, np.concatenate([x, np.zeros(c.size - x.size, dtype=np.int64)]))
    high = z // _WORD
    low = z - high * _WORD
    noisy = measure(_WeightedLowWords(name, lat, d), low.astype(np.int64), noise, rng).values
    values = np.ldexp((high * _WORD + noisy.astype(object)).astype(np.float64), -lat.bits)
    scales = lat.sigma / d
    scales.flags.writeable = False
    return LatticeMeasurement(name, values, scales, noise, lat.sensitivity, bits=lat.bits), lat
