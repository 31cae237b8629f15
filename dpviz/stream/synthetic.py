"""Synthetic count streams: Poisson counts with an optional sinusoidal (daily/weekly-like) rate."""

from __future__ import annotations

import numpy as np

from dpviz.errors import InputError


def poisson_stream(
    length: int,
    rate: float,
    rng: np.random.Generator,
    *,
    amplitude: float = 0.0,
    period: float = 24.0,
) -> np.ndarray:
    """``length`` Poisson counts with rate_t = rate·(1 + amplitude·sin(2π t / period)), t = 1..length."""
    if isinstance(length, bool) or not isinstance(length, (int, np.integer)) or length < 1:
        raise InputError(f"length: expected a positive integer, got {length!r}")
    if not np.isfinite(rate) or rate < 0:
        raise InputError(f"rate: expected a non-negative number, got {rate!r}")
    if not 0.0 <= amplitude <= 1.0:
        raise InputError(f"amplitude: expected a number in [0, 1], got {amplitude!r}")
    if not np.isfinite(period) or period <= 0:
        raise InputError(f"period: expected a positive number, got {period!r}")
    t = np.arange(1, length + 1)
    lam = rate * (1.0 + amplitude * np.sin(2.0 * np.pi * t / period))
    return rng.poisson(lam).astype(np.int64)
