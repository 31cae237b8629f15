"""Post-processing of the continual-counting measurements: ŝ = R y with the exact per-step variance.

Each estimator is the R of a factorisation W = R Q of the running-totals workload (Eq. 5.4; the
strategies Q are in :mod:`dpviz.stream.strategy`). It is a :class:`~dpviz.core.protocols.Estimator`:
it sees only the noisy values and their per-query variances, never the data, so everything it returns
is safe to publish.

* :class:`CumulativeSum` — naive: ŝ_t = Σ_{j≤t} y_j.
* :class:`ChainSum` — Fenwick reconstruction B (Alg. 5.3, Eq. 5.6), B Σ⁻¹ for the weighted measurement
  (Eq. 5.8); its total variance is Eq. (5.9).
* :class:`HonakerEstimator` — Honaker's efficient estimator on the dyadic tree (J. Honaker, "Efficient
  Use of Differentially Private Binary Trees", TPDP 2015), online.
* :class:`SquareRootEstimator` — ŝ = L y with L = W^{1/2} (Fichtenberger, Henzinger & Upadhyay, ICML 2023).

Variances are diag(R diag(v) Rᵀ) for independent query noise of variance v, cached per vector v.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from dpviz.core.protocols import Estimate, LinearMeasurement
from dpviz.errors import InputError
from dpviz.stream.fenwick import chain_sum, check_horizon, lowbit, nodes

__all__ = ["StreamEstimator", "CumulativeSum", "ChainSum", "HonakerEstimator", "SquareRootEstimator",
           "sqrt_coefficients", "honaker_factors", "toeplitz_apply", "readonly"]

_CACHE_LOCK = threading.Lock()


# ---------------------------------------------------------------------------------------------
# helpers


def readonly(a: np.ndarray) -> np.ndarray:
    """``a`` made read-only (cached arrays are shared between sessions)."""
    a.flags.writeable = False
    return a


def sqrt_coefficients(horizon: int) -> np.ndarray:
    """c_k = binom(2k, k)/4^k, k = 0..N-1: the Taylor coefficients of (1 - x)^{-1/2}.

    L = Toeplitz lower-triangular(c) satisfies L·L = W (since ((1-x)^{-1/2})² = 1/(1-x)).
    Computed by the ratio c_k / c_{k-1} = (2k - 1)/(2k), vectorised with cumprod.
    """
    k = np.arange(1, check_horizon(horizon), dtype=float)
    return np.concatenate([[1.0], np.cumprod((2.0 * k - 1.0) / (2.0 * k))])


def toeplitz_apply(c: np.ndarray, x: np.ndarray) -> np.ndarray:
    """(L x)_t = Σ_{k<=t} c_k x_{t-k} along the last axis, by FFT convolution (O(N log N))."""
    from scipy.signal import fftconvolve  # here, not at import: the CLI starts without scipy.signal

    x = np.asarray(x, dtype=float)
    kernel = np.asarray(c, dtype=float).reshape((1,) * (x.ndim - 1) + (-1,))
    return fftconvolve(x, kernel, axes=-1)[..., : x.shape[-1]]


def honaker_factors(levels: int) -> np.ndarray:
    """h_k: variance of the bottom-up estimate of a level-k node in units of one node's variance.

    h_0 = 1, h_k = 1/(1 + 1/(2 h_{k-1})) (inverse-variance combination of the node and its two
    children's estimates; Honaker 2015, upward pass). h_k is also the weight on the node itself.
    """
    h = np.ones(levels)
    for k in range(1, levels):  # loop over O(log N) levels
        h[k] = 1.0 / (1.0 + 1.0 / (2.0 * h[k - 1]))
    return h


def _bits_sum(horizon: int, per_level: np.ndarray) -> np.ndarray:
    """Σ_{bits j of t} per_level[j] for t = 1..N (a loop over the O(log N) bits, vectorised in t)."""
    t = nodes(horizon)
    out = np.zeros(horizon)
    for j in range(per_level.size):
        out += np.where(t >> j & 1, per_level[j], 0.0)
    return out


# ---------------------------------------------------------------------------------------------
# estimators


class StreamEstimator:
    """Linear post-processing ŝ = R y of a stream measurement, with the exact variance of ŝ_t.

    :meth:`fit` is the :class:`~dpviz.core.protocols.Estimator` protocol: it sees only the noisy values
    and their per-query variances. :meth:`apply` is R (linear, so R(Q a + η) = W a + R η: the
    simulation reuses it on the noise alone), :meth:`variance` is diag(R diag(v) Rᵀ). Variances are
    cached per vector of query variances, so redraws at the same noise never recompute them.
    """

    name: str = "estimator"
    horizon: int

    def apply(self, values: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def _variance(self, query_variance: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def variance(self, query_variance: np.ndarray) -> np.ndarray:
        """Per-step variance of ŝ for independent query noise of variance ``query_variance`` (read-only)."""
        v = np.ascontiguousarray(query_variance, dtype=float)
        key = hashlib.blake2b(v.tobytes(), digest_size=16).digest() + str(v.shape).encode()
        with _CACHE_LOCK:  # the page's sessions share cached strategies
            cache: OrderedDict = self.__dict__.setdefault("_var_cache", OrderedDict())
            if key in cache:
                cache.move_to_end(key)
                return cache[key]
        out = readonly(np.asarray(self._variance(v), dtype=float))
        with _CACHE_LOCK:
            cache[key] = out
            if len(cache) > 16:
                cache.popitem(last=False)
        return out

    def fit(self, measurement: LinearMeasurement) -> Estimate:
        """Released prefix sums ŝ = R y and their analytic variance (from the measurement's variances)."""
        values = np.asarray(measurement.values)
        if values.shape[-1] != self.size:
            raise InputError(f"{self.name}: expected {self.size} measured values, got {values.shape[-1]}")
        return Estimate(self.name, self.apply(values), self.variance(measurement.variance))

    @property
    def size(self) -> int:  # pragma: no cover - abstract
        raise NotImplementedError


@dataclass(frozen=True, eq=False)
class StructureEstimator(StreamEstimator):
    """R y of a mechanism whose blocks a ``structure`` object describes (smooth binary, k-ary tree): R y is
    ``structure.apply``; Var(ŝ_t) applies |R| to the per-query variances (``structure.abs_apply``, or ``apply``
    when R is 0/1 and has no ``abs_apply``)."""

    structure: Any

    @property
    def horizon(self) -> int:  # type: ignore[override]
        return self.structure.horizon

    @property
    def size(self) -> int:
        return self.structure.size

    def apply(self, values: np.ndarray) -> np.ndarray:
        return self.structure.apply(values)

    def _variance(self, query_variance: np.ndarray) -> np.ndarray:
        v = np.broadcast_to(np.asarray(query_variance, dtype=float), (self.size,))
        return getattr(self.structure, "abs_apply", self.structure.apply)(v)


@dataclass(frozen=True, eq=False)
class CumulativeSum(StreamEstimator):
    """Naive: ŝ_t = Σ_{j<=t} y_j; Var(ŝ_t) = Σ_{j<=t} v_j (cumulative sums of the query variances)."""

    horizon: int
    name: str = "cumulative-sum"

    @property
    def size(self) -> int:
        return self.horizon

    def apply(self, values: np.ndarray) -> np.ndarray:
        return np.cumsum(values, axis=-1)

    def _variance(self, query_variance: np.ndarray) -> np.ndarray:
        return np.cumsum(np.broadcast_to(query_variance, (self.horizon,)))


@dataclass(frozen=True, eq=False)
class ChainSum(StreamEstimator):
    """Fenwick reconstruction B (Alg. 5.3, Eq. 5.6) on the measured integer node sums.

    y_i measures c_i (with noise of scale b/λ_i), so ŝ_p = Σ_{i ∈ chain(p)} y_i — this is B Σ⁻¹ applied
    to the weighted measurement Σ M a + noise (Eq. 5.8). Var(ŝ_p) = Σ_{i ∈ chain(p)} v_i, the
    diagonal of B diag(v) Bᵀ; with continuous noise v_i = 2 b²/λ_i² and its sum over p is Eq. (5.9).
    """

    horizon: int
    name: str = "fenwick-chain"

    @property
    def size(self) -> int:
        return self.horizon

    def apply(self, values: np.ndarray) -> np.ndarray:
        return chain_sum(values)

    def _variance(self, query_variance: np.ndarray) -> np.ndarray:
        return chain_sum(np.broadcast_to(query_variance, (self.horizon,)).astype(float))


@dataclass(frozen=True, eq=False)
class HonakerEstimator(StreamEstimator):
    """Honaker (2015) on the dyadic tree, online: at time t the complete subtrees are the ones rooted
    at t's Fenwick chain; each root's best linear unbiased estimate from its subtree is the upward
    pass est_k = h_k y_node + (1 − h_k)(est_left + est_right), and the subtrees are independent, so
    ŝ_t = Σ_{bits j of t} est_j is the BLUE given the nodes released so far, with
    Var(ŝ_t) = v · Σ_{bits j of t} h_j for equal node variances v (all nodes have one noise scale).

    Values come in draw order: time t contributes its nodes of levels 0..tz(t) (tz = trailing zeros).
    """

    horizon: int
    name: str = "honaker"

    @cached_property
    def levels(self) -> int:
        return check_horizon(self.horizon).bit_length()

    @cached_property
    def _index(self) -> tuple[np.ndarray, list[np.ndarray]]:
        """start[t] = first draw of time t (1-based t), and the end times of the level-k nodes."""
        t = nodes(self.horizon)
        per_time = np.log2(lowbit(t)).astype(np.int64) + 1
        start = np.concatenate([[0, 0], np.cumsum(per_time)[:-1]])
        times = [np.arange(1, self.horizon // (1 << k) + 1, dtype=np.int64) << k for k in range(self.levels)]
        return start, times

    @property
    def size(self) -> int:
        return int(self._index[0][-1] + lowbit(self.horizon).bit_length())

    def apply(self, values: np.ndarray) -> np.ndarray:
        y = np.asarray(values, dtype=float)
        start, times = self._index
        h = honaker_factors(self.levels)
        t_all = nodes(self.horizon)
        out = np.zeros(y.shape[:-1] + (self.horizon,))
        est = None
        for k, tk in enumerate(times):  # loop over the O(log N) levels
            own = y[..., start[tk] + k]
            if k == 0:
                est = own
            else:
                est = h[k] * own + (1.0 - h[k]) * (est[..., 0 : 2 * tk.size : 2] + est[..., 1 : 2 * tk.size : 2])
            has_bit = (t_all >> k & 1).astype(bool)
            out[..., has_bit] += est[..., (t_all[has_bit] >> k) - 1]
        return out

    def _variance(self, query_variance: np.ndarray) -> np.ndarray:
        v = np.broadcast_to(query_variance, (self.size,))
        if not np.allclose(v, v[0], rtol=1e-12, atol=0.0):
            raise InputError("honaker: the efficient estimator here assumes one noise scale for every node")
        return float(v[0]) * _bits_sum(self.horizon, honaker_factors(self.levels))


@dataclass(frozen=True, eq=False)
class SquareRootEstimator(StreamEstimator):
    """ŝ = L y for y = L a + z (W = L·L): Var(ŝ_t) = Σ_{k<t} c_k² v_{t−k} (a causal convolution)."""

    horizon: int
    name: str = "sqrt-factor"

    @property
    def size(self) -> int:
        return self.horizon

    @cached_property
    def coefficients(self) -> np.ndarray:
        return readonly(sqrt_coefficients(self.horizon))

    def apply(self, values: np.ndarray) -> np.ndarray:
        return toeplitz_apply(self.coefficients, values)

    def _variance(self, query_variance: np.ndarray) -> np.ndarray:
        v = np.broadcast_to(query_variance, (self.horizon,))
        c2 = self.coefficients**2
        if np.all(v == v[0]):
            return float(v[0]) * np.cumsum(c2)
        return np.maximum(toeplitz_apply(c2, v), 0.0)
