"""Continual-counting mechanisms as core :class:`~dpviz.core.protocols.Strategy` / ``Estimator`` pairs.

Workload: the running totals s = W a of a count stream a_1..a_N, W the N×N lower-triangular ones
(Eq. 5.4). Every mechanism here is a factorisation W = R Q: a :class:`StreamStrategy` measures
y = Q a + η (:func:`dpviz.core.protocols.measure`, the one place noise is drawn) and its
:class:`StreamEstimator` releases ŝ = R y, together with the exact per-step variance computed from
the measurement's per-query variances (never from the data).

**Unit of privacy: one event.** Neighbouring streams differ by one event, i.e. one step's count
changes by 1 (a_t ± 1). This is *event-level* privacy: a person who contributes many events (many
flights, many bike rentals) is protected only per event, and user-level privacy is **not** offered.
(:data:`UNIT_OF_PRIVACY` is the registry's wording.)

Mechanisms (``name``: strategy Q → estimator R):

* ``naive``: Q = I (every a_t, sensitivity 1) → R = W (cumulative sums).
* ``binary``: Chan, Shi & Song, "Private and Continual Release of Statistics", ACM TISSEC 14(3), 2011.
  Its p-sum released at time t covers (t − lowbit(t), t], i.e. it *is* Fenwick node t, and s_t adds
  the p-sums of t's set bits (the Fenwick chain): the Fenwick strategy with λ = 1.
* ``fenwick``: Fenwick-tree strategy M (Alg. 5.2; node i holds c_i = Σ_{j ∈ (i − lowbit(i), i]} a_j,
  Eq. 5.5) → R = B (Alg. 5.3, s_p = Σ over the chain p, p − lowbit(p), ... of c, Eq. 5.6), λ = 1 (Eq. 5.7).
* ``fenwick-fda``: the weighted Fenwick mechanism B Σ⁻¹ (Σ M a + noise) with the optimal diagonal
  Σ = diag(λ) of problem (5.10) (Eq. 5.8, Thm 5.4; FDA closed form, :mod:`dpviz.stream.weights`).
* ``honaker``: every dyadic node (m 2^k − 2^k, m 2^k] ≤ N (the binary tree) → Honaker's efficient
  estimator (J. Honaker, "Efficient Use of Differentially Private Binary Trees", TPDP 2015).
* ``sqrt``: square-root factorisation W = L·L with L the lower-triangular Toeplitz matrix of the
  coefficients of (1 − x)^{-1/2} (Fichtenberger, Henzinger & Upadhyay, "Constant Matters: Fine-grained
  Error Bound on Differentially Private Continual Observation", ICML 2023; Henzinger, Upadhyay &
  Upadhyay, SODA 2023). Q = L has non-integer entries: its release rounds L to the lattice 2^−k ℤ and
  adds discrete Gaussian noise there (:mod:`dpviz.stream.lattice`); Gaussian (ρ-zCDP) only.

**Weighted measurement and discrete noise.** The weighted Fenwick mechanism measures λ_i c_i with
noise of scale b = Δ/ε (Laplace) or σ = Δ₂/√(2ρ) (Gaussian), Δ the largest column norm of ΣM. That
is the same as measuring the *integer* node sum c_i with noise of scale b/λ_i (divide by λ_i), which
is what :meth:`StreamStrategy.scales` returns and what lets discrete noise apply to integer counts.

*Accounting (proof).* One event at step t changes c_i by ±1 exactly for the nodes i ∋ t (i on the
column-t chain of M) and leaves every other node unchanged. With discrete Laplace noise of scale
b/λ_i on c_i (Canonne, Kamath & Steinke, "The Discrete Gaussian for Differential Privacy",
NeurIPS 2020: Lap_Z(s) on a sensitivity-1 integer query is (1/s)-DP), node i spends λ_i/b, so by
basic composition the event costs Σ_{i∋t} λ_i / b ≤ max_j Σ_{i∋j} λ_i / b = Δ₁/b = ε. With discrete
Gaussian noise of scale σ/λ_i (CKS 2020, Thm. 4: N_Z(0, s²) on a sensitivity-1 integer query is
1/(2s²)-zCDP) node i spends λ_i²/(2σ²), and zCDP composes additively:
Σ_{i∋t} λ_i²/(2σ²) ≤ Δ₂²/(2σ²) = ρ. The unweighted strategies are the case λ = 1.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Any

import numpy as np

from dpviz.core.noise import FAMILIES, Family, Noise
from dpviz.core.protocols import Estimate, LinearMeasurement
from dpviz.core.registry import capability
from dpviz.errors import InputError
from dpviz.stream.fenwick import (
    bound_violation,
    chain_sum,
    check_horizon,
    column_chain_sum,
    lowbit,
    node_sums,
    nodes,
)
from dpviz.stream.weights import fda_weights

MECHANISM_NAMES: tuple[str, ...] = ("naive", "binary", "fenwick", "fenwick-fda", "honaker", "sqrt")
RELEASABLE: tuple[str, ...] = ("naive", "binary", "fenwick", "fenwick-fda", "honaker")
"""Mechanisms releasable with either noise family: the integer strategies (discrete noise on their answers).
:func:`releasable` is the full list for one family: it adds ``sqrt`` for Gaussian noise (released on the
lattice 2^−k ℤ, :mod:`dpviz.stream.lattice`)."""
LATTICE_RELEASABLE: tuple[str, ...] = ("sqrt",)
"""Real-valued factorisations released on the lattice 2^−k ℤ with discrete Gaussian noise (ρ-zCDP only)."""
LABELS: dict[str, str] = {
    "naive": "Naive (noisy increments)",
    "binary": "Binary tree (Chan-Shi-Song)",
    "fenwick": "Fenwick (λ = 1)",
    "fenwick-fda": "Fenwick + FDA (optimal λ)",
    "honaker": "Honaker estimator (binary tree)",
    "sqrt": "Square-root factorisation (Gaussian)",
}
UNIT_OF_PRIVACY: str = capability("stream").unit_of_privacy
_CACHE_LOCK = threading.Lock()

__all__ = ["MECHANISM_NAMES", "RELEASABLE", "LATTICE_RELEASABLE", "LABELS", "UNIT_OF_PRIVACY", "StreamStrategy", "StreamEstimator",
           "strategy", "available", "releasable", "sqrt_coefficients", "honaker_factors", "toeplitz_apply", "as_series"]


# ---------------------------------------------------------------------------------------------
# helpers


def check_family(family: str) -> Family:
    if family not in FAMILIES:
        raise InputError(f"noise: expected 'laplace' or 'gaussian', got {family!r}")
    return family  # type: ignore[return-value]


def as_series(series: Any, horizon: int) -> np.ndarray:
    """Validate a stream for horizon N: 1-D, finite, 1..N entries (a shorter stream is a prefix), every
    count within ±:data:`~dpviz.stream.fenwick.MAX_COUNT` and every running total within
    ±:data:`~dpviz.stream.fenwick.MAX_TOTAL` (so float64 totals of integer counts are exact and int64
    sums cannot overflow).

    Integer input stays int64 (exact node sums for a release); anything else becomes float64.
    """
    a = np.asarray(series)
    if a.dtype.kind not in "iub":
        try:
            a = a.astype(float)
        except (TypeError, ValueError):
            raise InputError("series: expected numbers (counts per step)") from None
    if a.ndim != 1 or a.size == 0:
        raise InputError(f"series: expected a non-empty 1-D sequence of counts, got shape {a.shape}")
    if a.size > horizon:
        raise InputError(f"series: {a.size} steps exceed the horizon N = {horizon}")
    if a.dtype.kind == "f":
        bad = np.flatnonzero(~np.isfinite(a))
        if bad.size:
            raise InputError(f"series: step {bad[0] + 1} is not a finite number ({a[bad[0]]!r})")
    bad = bound_violation(a)
    if bad is not None:
        raise InputError(f"series: step {bad[0] + 1}: {bad[1]}")
    return a.astype(np.int64, copy=False) if a.dtype.kind in "iub" else a


def _padded(series: Any, horizon: int) -> np.ndarray:
    """The series zero-padded to N steps (steps after the series are not observed yet)."""
    a = as_series(series, horizon)
    return np.concatenate([a, np.zeros(horizon - a.size, dtype=a.dtype)])


def _readonly(a: np.ndarray) -> np.ndarray:
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
        out = _readonly(np.asarray(self._variance(v), dtype=float))
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
        return _readonly(sqrt_coefficients(self.horizon))

    def apply(self, values: np.ndarray) -> np.ndarray:
        return toeplitz_apply(self.coefficients, values)

    def _variance(self, query_variance: np.ndarray) -> np.ndarray:
        v = np.broadcast_to(query_variance, (self.horizon,))
        c2 = self.coefficients**2
        if np.all(v == v[0]):
            return float(v[0]) * np.cumsum(c2)
        return np.maximum(toeplitz_apply(c2, v), 0.0)


# ---------------------------------------------------------------------------------------------
# strategies


@dataclass(frozen=True, eq=False)
class StreamStrategy:
    """A continual-counting strategy as a core :class:`~dpviz.core.protocols.Strategy`.

    ``family`` is the noise family it was built for (FDA's λ depends on it: L1 or L2 sensitivity);
    ``weights`` λ_i multiply the measured node sums (1 except for FDA). :meth:`answer` returns the
    *unweighted* node sums in draw order (int64 for integer counts), :meth:`scales` the noise scale of
    each, (Δ/ε)/λ_i or (Δ₂/√(2ρ))/λ_i, and :meth:`sensitivity` Δ of the weighted query set ΣQ, so
    that ``‖Λ (answer(a') − answer(a))‖ ≤ sensitivity`` for neighbouring streams (module docstring).
    """

    name: str
    horizon: int
    family: Family

    @property
    def label(self) -> str:
        return LABELS.get(self.name, self.name)

    @property
    def discrete_ok(self) -> bool:
        """True when the strategy's answers are integers on integer counts (discrete noise applies as is)."""
        return True

    @property
    def lattice_coefficients(self) -> np.ndarray | None:
        """A real lower-triangular Toeplitz Q's coefficients (released on a lattice, :mod:`dpviz.stream.lattice`);
        None for the integer strategies."""
        return None

    @cached_property
    def weights(self) -> np.ndarray:
        return _readonly(np.ones(self.size))

    @property
    def size(self) -> int:
        return self.estimator.size

    @cached_property
    def estimator(self) -> StreamEstimator:  # pragma: no cover - abstract
        raise NotImplementedError

    def sensitivity(self, family: Family | None = None) -> float:  # pragma: no cover - abstract
        raise NotImplementedError

    def answer(self, data: Any) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def scales(self, noise: Noise) -> np.ndarray:
        """Per-query noise scale: the base scale noise.scale(Δ) divided by the node weight λ_i."""
        return _readonly(noise.scale(self.sensitivity(noise.family)) / self.weights)

    @cached_property
    def unit_profile(self) -> np.ndarray:
        """Per-step variance of ŝ_t for continuous noise of base scale 1 and unit variance per unit
        scale², i.e. diag(R diag(λ⁻²) Rᵀ); cached per strategy (per mechanism, N, family)."""
        return self.estimator.variance(self.weights**-2.0)

    def query_variance(self, noise: Noise) -> np.ndarray:
        """Exact variance of each query's noise (discrete or continuous sampler)."""
        return np.broadcast_to(np.asarray(noise.variance_at(self.scales(noise)), dtype=float), (self.size,))

    def per_step_variance(self, noise: Noise) -> np.ndarray:
        """Var(ŝ_t), t = 1..N, under ``noise`` (read-only), computed once per (mechanism, N, family,
        noise) and then served from a cache (:func:`_step_variance`): a release, a redraw or a page
        rerun at the same noise does no work here.

        Continuous noise: κ b² × :attr:`unit_profile` (κ = 2 Laplace, 1 Gaussian; b the base scale),
        no structural work per ε. Discrete noise: from the exact per-node variances.
        """
        if not isinstance(noise, Noise):
            raise InputError(f"noise: expected a dpviz.core.noise.Noise, got {type(noise).__name__}")
        return _step_variance(self.name, self.horizon, self.family, noise)

    def _step_variance(self, noise: Noise) -> np.ndarray:
        if noise.discrete:
            return self.estimator.variance(self.query_variance(noise))
        base = noise.variance_at(noise.scale(self.sensitivity(noise.family)))
        return _readonly(float(base) * self.unit_profile)

    def estimate(self, measurement: LinearMeasurement) -> Estimate:
        """ŝ = R y for a measurement of this strategy (:func:`dpviz.core.protocols.measure`), with the
        cached :meth:`per_step_variance` of its noise: the estimator's :meth:`~StreamEstimator.fit`
        without recomputing the per-query variances of every release."""
        if measurement.strategy != self.name or np.shape(measurement.values)[-1:] != (self.size,):
            raise InputError(f"{self.name}: the measurement is not one of this strategy (N = {self.horizon})")
        est = self.estimator
        return Estimate(est.name, est.apply(measurement.values), self.per_step_variance(measurement.noise))


@dataclass(frozen=True, eq=False)
class NaiveStrategy(StreamStrategy):
    """Q = I: measure every a_t (one event changes one query by 1: Δ₁ = Δ₂ = 1)."""

    @cached_property
    def estimator(self) -> StreamEstimator:
        return CumulativeSum(self.horizon)

    @property
    def size(self) -> int:
        return self.horizon

    def sensitivity(self, family: Family | None = None) -> float:
        check_family(family or self.family)
        return 1.0

    def answer(self, data: Any) -> np.ndarray:
        return _padded(data, self.horizon)


@dataclass(frozen=True, eq=False)
class FenwickStrategy(StreamStrategy):
    """Fenwick nodes c = M a (Alg. 5.2, Eq. 5.5) with weights λ (λ = 1: Eq. 5.7; FDA: Eq. 5.8).

    Δ = max column norm of ΣM: L1 max_j Σ_{i∋j} λ_i (= floor(log2 N) + 1 for λ = 1, Thm 5.1) or
    L2 √(max_j Σ_{i∋j} λ_i²); the FDA λ is scaled so that this is exactly 1.
    """

    fda: bool = False

    @cached_property
    def estimator(self) -> StreamEstimator:
        return ChainSum(self.horizon)

    @property
    def size(self) -> int:
        return self.horizon

    @cached_property
    def weights(self) -> np.ndarray:
        if self.fda:
            return fda_weights(self.horizon, self.family).lam
        return _readonly(np.ones(self.horizon))

    @cached_property
    def _sensitivities(self) -> dict[str, float]:
        lam = np.asarray(self.weights)
        return {"laplace": float(column_chain_sum(lam).max()),
                "gaussian": float(np.sqrt(column_chain_sum(lam**2).max()))}

    def sensitivity(self, family: Family | None = None) -> float:
        return self._sensitivities[check_family(family or self.family)]

    def answer(self, data: Any) -> np.ndarray:
        return node_sums(_padded(data, self.horizon))


@dataclass(frozen=True, eq=False)
class DyadicStrategy(StreamStrategy):
    """Every dyadic node (m 2^k − 2^k, m 2^k] ≤ N, in draw order (time t: levels 0..tz(t)).

    Each step lies in one node per level: Δ₁ = levels = floor(log2 N) + 1, Δ₂ = √levels.
    """

    @cached_property
    def estimator(self) -> StreamEstimator:
        return HonakerEstimator(self.horizon)

    @cached_property
    def _draw_nodes(self) -> tuple[np.ndarray, np.ndarray]:
        """(end time t, length 2^k) of every node in draw order."""
        t = nodes(self.horizon)
        per_time = np.log2(lowbit(t)).astype(np.int64) + 1
        ends = np.repeat(t, per_time)
        first = np.cumsum(per_time) - per_time
        k = np.arange(ends.size) - np.repeat(first, per_time)
        return ends, np.int64(1) << k

    def sensitivity(self, family: Family | None = None) -> float:
        levels = check_horizon(self.horizon).bit_length()
        return float(levels) if check_family(family or self.family) == "laplace" else float(np.sqrt(levels))

    def answer(self, data: Any) -> np.ndarray:
        a = _padded(data, self.horizon)
        s = np.concatenate([np.zeros(1, dtype=a.dtype), np.cumsum(a)])
        ends, length = self._draw_nodes
        return s[ends] - s[ends - length]


@dataclass(frozen=True, eq=False)
class SquareRootStrategy(StreamStrategy):
    """Q = L (the square root of W): Δ₂ = ‖L e_1‖₂ = √(Σ_{k<N} c_k²) (column 1 is the longest).

    Gaussian noise only. L a is not an integer vector, and discrete noise added to non-integer values
    is not a private mechanism (it would reveal the fractional parts), so a release rounds L to the
    lattice 2^−k ℤ first (:attr:`lattice_coefficients`, :func:`dpviz.stream.lattice.lattice_measure`).
    """

    @property
    def discrete_ok(self) -> bool:
        return False

    @property
    def lattice_coefficients(self) -> np.ndarray:
        return self.estimator.coefficients

    @cached_property
    def estimator(self) -> StreamEstimator:
        return SquareRootEstimator(self.horizon)

    @property
    def size(self) -> int:
        return self.horizon

    def sensitivity(self, family: Family | None = None) -> float:
        if check_family(family or self.family) != "gaussian":
            raise InputError("mechanism 'sqrt': the square-root factorisation needs Gaussian noise (ρ-zCDP)")
        return float(np.sqrt(np.sum(self.estimator.coefficients**2)))

    def answer(self, data: Any) -> np.ndarray:
        return toeplitz_apply(self.estimator.coefficients, _padded(data, self.horizon))


@lru_cache(maxsize=128)
def _strategy(name: str, horizon: int, family: Family) -> StreamStrategy:
    if name == "naive":
        return NaiveStrategy(name, horizon, family)
    if name in ("binary", "fenwick"):
        return FenwickStrategy(name, horizon, family)
    if name == "fenwick-fda":
        return FenwickStrategy(name, horizon, family, fda=True)
    if name == "honaker":
        return DyadicStrategy(name, horizon, family)
    if name == "sqrt":
        if family != "gaussian":
            raise InputError("mechanism 'sqrt': the square-root factorisation needs Gaussian noise (ρ-zCDP)")
        return SquareRootStrategy(name, horizon, family)
    raise InputError(f"mechanism: expected one of {', '.join(MECHANISM_NAMES)}, got {name!r}")


@lru_cache(maxsize=32)
def _step_variance(name: str, horizon: int, family: Family, noise: Noise) -> np.ndarray:
    """Per-step variances, once per (mechanism, N, family, noise): :meth:`StreamStrategy.per_step_variance`."""
    return _strategy(name, horizon, family)._step_variance(noise)


def strategy(name: str, horizon: int, family: Family = "laplace") -> StreamStrategy:
    """The strategy ``name`` for horizon N and a noise family; cached per (name, N, family), so λ, the
    sensitivities and the unit variance profile are computed once."""
    return _strategy(str(name), check_horizon(horizon), check_family(family))


def available(family: Family | Noise) -> tuple[str, ...]:
    """Mechanism names valid for a noise family (``sqrt`` is Gaussian only)."""
    fam = family.family if isinstance(family, Noise) else check_family(family)
    return MECHANISM_NAMES if fam == "gaussian" else tuple(m for m in MECHANISM_NAMES if m != "sqrt")


def releasable(family: Family | Noise) -> tuple[str, ...]:
    """Mechanism names a release accepts for a noise family (``sqrt``: discrete Gaussian on a lattice only)."""
    fam = family.family if isinstance(family, Noise) else check_family(family)
    return RELEASABLE + (LATTICE_RELEASABLE if fam == "gaussian" else ())

