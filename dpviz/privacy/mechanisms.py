"""Additive noise mechanisms (Laplace, Gaussian), their analytic variances, and :class:`Noise`,
the one description of "which noise at which budget" shared by every capability.

Every sampler takes a ``numpy.random.Generator``; nothing here touches global random state.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from dpviz.errors import InputError
from dpviz.privacy.accounting import approx_dp_to_zcdp

NoiseKind = Literal["laplace", "gaussian"]


def laplace_scale(l1_sensitivity: float, epsilon: float) -> float:
    """Scale b of the Laplace mechanism Lap(Δ₁/ε) (Dwork et al. 2006)."""
    _check_positive(epsilon=epsilon, l1_sensitivity=l1_sensitivity)
    return float(l1_sensitivity) / float(epsilon)


def laplace_variance(scale: float | np.ndarray) -> float | np.ndarray:
    """Var Lap(b) = 2 b²."""
    return 2.0 * np.square(scale)


def gaussian_sigma_zcdp(l2_sensitivity: float, rho: float) -> float:
    """σ of the Gaussian mechanism that satisfies ρ-zCDP: σ = Δ₂ / sqrt(2ρ) (Bun & Steinke 2016, Prop. 1.6)."""
    _check_positive(rho=rho, l2_sensitivity=l2_sensitivity)
    return float(l2_sensitivity) / np.sqrt(2.0 * float(rho))


def fresh_seed() -> int:
    """A new noise seed from OS entropy, small enough to show and type back (< 2³¹ - 1)."""
    return int(np.random.SeedSequence().entropy % (2**31 - 1))


def laplace_noise(scale: float | np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
    """``size`` independent Lap(scale) draws (``scale`` may be a per-coordinate array)."""
    return rng.laplace(0.0, 1.0, size) * scale


def gaussian_noise(sigma: float | np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
    """``size`` independent N(0, sigma²) draws (``sigma`` may be a per-coordinate array)."""
    return rng.standard_normal(size) * sigma


def _check_positive(**values: float) -> None:
    for name, value in values.items():
        if not np.isfinite(value) or value <= 0:
            raise ValueError(f"{name} must be a positive finite number, got {value!r}")


@dataclass(frozen=True)
class Noise:
    """Laplace noise for ε-DP (L1 sensitivity) or Gaussian noise for ρ-zCDP (L2 sensitivity)."""

    kind: NoiseKind
    epsilon: float | None = None
    rho: float | None = None

    def __post_init__(self) -> None:
        if self.kind == "laplace":
            _positive("epsilon", self.epsilon)
        elif self.kind == "gaussian":
            _positive("rho", self.rho)
        else:
            raise InputError(f"noise: expected 'laplace' or 'gaussian', got {self.kind!r}")

    @classmethod
    def laplace(cls, epsilon: float) -> Noise:
        return cls("laplace", epsilon=epsilon)

    @classmethod
    def gaussian(cls, rho: float) -> Noise:
        return cls("gaussian", rho=rho)

    @classmethod
    def gaussian_approx(cls, epsilon: float, delta: float) -> Noise:
        """Gaussian noise at the largest ρ whose zCDP guarantee implies (ε, δ)-DP."""
        _positive("epsilon", epsilon)
        if not 0.0 < delta < 1.0:
            raise InputError(f"delta: expected a number in (0, 1), got {delta!r}")
        return cls("gaussian", rho=approx_dp_to_zcdp(epsilon, delta))

    def scale(self, sensitivity: float) -> float:
        """Laplace scale Δ₁/ε or Gaussian σ = Δ₂/sqrt(2ρ)."""
        if self.kind == "laplace":
            return laplace_scale(sensitivity, self.epsilon)
        return gaussian_sigma_zcdp(sensitivity, self.rho)

    def variance(self, sensitivity: float) -> float:
        """Variance of one noise draw: 2(Δ₁/ε)² or Δ₂²/(2ρ)."""
        s = self.scale(sensitivity)
        return float(laplace_variance(s)) if self.kind == "laplace" else s * s

    def standard(self, rng: np.random.Generator, shape: int | tuple[int, ...]) -> np.ndarray:
        """Unit-scale draws (Lap(1) or N(0, 1)); callers multiply by :meth:`scale`."""
        return Noise.standard_draws(self.kind, rng, shape)

    @staticmethod
    def standard_draws(kind: NoiseKind, rng: np.random.Generator, shape: int | tuple[int, ...]) -> np.ndarray:
        """Lap(1) or N(0, 1) draws of ``shape`` from ``rng`` (the only source of randomness)."""
        if kind == "laplace":
            return laplace_noise(1.0, shape, rng)
        if kind == "gaussian":
            return gaussian_noise(1.0, shape, rng)
        raise InputError(f"noise: expected 'laplace' or 'gaussian', got {kind!r}")

    def norm(self, vectors: np.ndarray) -> np.ndarray:
        """The sensitivity norm of each row: L1 (Laplace) or L2 (Gaussian)."""
        v = np.abs(np.asarray(vectors, dtype=float))
        return v.sum(axis=-1) if self.kind == "laplace" else np.sqrt((v * v).sum(axis=-1))

    @property
    def describe(self) -> str:
        return f"Laplace, ε = {self.epsilon:g}" if self.kind == "laplace" else f"Gaussian, ρ = {self.rho:g}"


def _positive(name: str, value: float | None) -> None:
    if value is None or isinstance(value, bool) or not np.isfinite(value) or value <= 0:
        raise InputError(f"{name}: expected a positive finite number, got {value!r}")
