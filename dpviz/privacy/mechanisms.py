"""Additive noise mechanisms (Laplace, Gaussian) and their analytic variances.

Every sampler takes a ``numpy.random.Generator``; nothing here touches global random state.
"""

from __future__ import annotations

import numpy as np


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
