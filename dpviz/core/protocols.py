"""The shapes every capability shares: measurements, strategies and estimators.

In the spirit of Private-PGM's ``mbi/estimation.py`` (one typed protocol, many interchangeable
estimators, measurements as plain data):

* a :class:`Strategy` says what to measure for a workload — tree levels, Fenwick nodes, dyadic
  nodes, later residuals or kd-tree regions: the true answers ``Q x`` (:meth:`Strategy.answer`), the
  sensitivity of the query set, and the noise scale of every query (:meth:`Strategy.scales`);
* :func:`measure` is the one place noise is drawn on private data: ``y = Q x + η``, discrete noise
  (int64, OS CSPRNG when ``rng`` is None) for a release on integer data, continuous for simulation;
* a :class:`LinearMeasurement` is the result as plain data (no truth in it);
* an :class:`Estimator` post-processes a measurement (GMC, Boosting, Fenwick/FDA reconstruction,
  Honaker; later GReM-MLE/LNN, DRF reconstruction) into an :class:`Estimate` with its analytic
  variance. It never sees the data, so everything it returns is safe to publish.

Unit-scale continuous draws that a simulation rescales across ε are not measurements: they live in
each capability's simulation helpers, which never run in release mode.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from dpviz.core.noise import Family, Noise
from dpviz.errors import InputError

__all__ = ["LinearMeasurement", "Strategy", "Estimate", "Estimator", "measure", "require_integral"]


@dataclass(frozen=True, eq=False)
class LinearMeasurement:
    """``values`` = Q x + η with independent noise of scale ``scales`` (per query) drawn from ``noise``;
    ``sensitivity`` is the query set's Δ₁ (Laplace) or Δ₂ (Gaussian) under the unit of privacy."""

    strategy: str
    values: np.ndarray
    scales: np.ndarray
    noise: Noise
    sensitivity: float

    @property
    def variance(self) -> np.ndarray:
        """Per-query noise variance (exact for the sampler used)."""
        return np.broadcast_to(np.asarray(self.noise.variance_at(self.scales), dtype=float), self.values.shape[-1:])


@runtime_checkable
class Strategy(Protocol):
    """What to measure: true answers, sensitivity and per-query noise scales."""

    name: str

    def sensitivity(self, family: Family) -> float:
        """Δ₁ (Laplace) or Δ₂ (Gaussian) of the whole query set for one unit of privacy."""

    def scales(self, noise: Noise) -> np.ndarray:
        """Noise scale of every query (b for Laplace, σ for Gaussian) so that the release meets ``noise``'s budget."""

    def answer(self, data: Any) -> np.ndarray:
        """The true answers Q x (integers when the data are integer counts)."""


@dataclass(frozen=True, eq=False)
class Estimate:
    """Post-processed output and its analytic per-entry variance (computed without the data)."""

    estimator: str
    values: np.ndarray
    variance: np.ndarray


@runtime_checkable
class Estimator(Protocol):
    """Post-processing of a measurement: sees only the noisy values and their variances."""

    name: str

    def fit(self, measurement: LinearMeasurement) -> Estimate: ...


def require_integral(values: np.ndarray, what: str, unit: str = "entry") -> np.ndarray:
    """``values`` as int64, or InputError naming the first bad ``unit`` (1-based): discrete noise is
    only private on integer answers."""
    a = np.asarray(values)
    if a.dtype.kind in "iu":
        return a.astype(np.int64, copy=False)
    try:
        a = a.astype(float)
    except (TypeError, ValueError):
        raise InputError(f"{what}: expected integer counts") from None
    with np.errstate(invalid="ignore"):  # NaN, inf and huge values cast to garbage, caught just below
        r = a.astype(np.int64)
    if r.size and (not np.array_equal(r, a) or not float(np.abs(a).max()) < 2.0**62):  # int vs float: exact below 2^62
        return _integral_error(a, what, unit)
    return r


def _integral_error(a: np.ndarray, what: str, unit: str) -> np.ndarray:
    """Raise the InputError of :func:`require_integral` for the first bad entry (error path only)."""
    r = np.rint(a)
    bad = np.flatnonzero(~np.isfinite(a) | (r != a))
    if bad.size:
        i = int(bad[0])
        raise InputError(f"{what}: {unit} {i + 1}: the count {float(a.flat[i]):g} is not an integer; a private "
                         "release adds discrete noise and needs integer counts (round or rescale your data "
                         "first, or use simulate)")
    if np.abs(r).max(initial=0) >= 2**62:
        raise InputError(f"{what}: counts above 2^62 cannot be released exactly")
    return r.astype(np.int64)


def measure(strategy: Strategy, data: Any, noise: Noise, rng: np.random.Generator | None) -> LinearMeasurement:
    """y = Q x + η: the one place noise is drawn on private data.

    Discrete noise (a release) needs integer answers and returns int64 values; ``rng=None`` means the
    OS CSPRNG. Continuous noise (simulation) needs a Generator.
    """
    y = np.asarray(strategy.answer(data))
    scales = np.asarray(strategy.scales(noise), dtype=float)
    if noise.discrete:
        y = require_integral(y, f"{strategy.name} answers")
    eta = noise.draw(scales, y.shape, rng)
    return LinearMeasurement(strategy.name, y + eta, scales, noise, float(strategy.sensitivity(noise.family)))
