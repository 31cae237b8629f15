"""Continual-counting mechanisms behind one interface (batch ``release`` and streaming ``step``).

Every mechanism is a linear matrix mechanism W a + (noise seen through B): it adds i.i.d. noise
calibrated to the sensitivity of a strategy vector (L1 for Laplace / ε-DP, L2 for Gaussian / ρ-zCDP)
and reports that sensitivity, the per-step analytic variance of the released prefix sum and the
total MSE. Mechanisms: ``naive``, ``binary`` (Chan-Shi-Song 2011), ``fenwick`` (λ = 1, Eq. 5.7),
``fenwick-fda`` (optimal λ, Eq. 5.8 + Thm 5.4), ``honaker`` (Honaker 2015 on the dyadic tree) and
``sqrt`` (square-root factorisation, Fichtenberger-Henzinger-Upadhyay 2023, Gaussian only).

Randomness: only the ``numpy.random.Generator`` passed in. The batch release and the streaming
``step`` draw the same standard variates in the same order (per time step), so with the same seed
they release the same numbers (up to floating-point summation order).

Gaussian reference convention (checked in the tests): with ρ = 1/2 and unit sensitivity the noise
variance is Δ₂²/(2ρ) = Δ₂². The binary / Fenwick strategy has Δ₂² = number of levels =
floor(log2 N) + 1 = log2(N + 1) for N = 2^m - 1, and step t sums popcount(t) nodes, so
Var(t) = popcount(t)·levels: N = 1023 gives max 100, mean 50.05; N = 65535 gives 256, 128.0.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Literal, Protocol, runtime_checkable

import numpy as np
from scipy.signal import fftconvolve

from dpviz.errors import InputError
from dpviz.privacy.mechanisms import Noise, NoiseKind
from dpviz.stream.fenwick import (
    chain_sum,
    check_horizon,
    column_chain_sum,
    lowbit,
    node_sums,
    nodes,
)
from dpviz.stream.weights import fda_weight_at, fda_weights, subtree_optima

MECHANISM_NAMES: tuple[str, ...] = ("naive", "binary", "fenwick", "fenwick-fda", "honaker", "sqrt")
LABELS: dict[str, str] = {
    "naive": "Naive (noisy increments)",
    "binary": "Binary tree (Chan-Shi-Song)",
    "fenwick": "Fenwick (λ = 1)",
    "fenwick-fda": "Fenwick + FDA (optimal λ)",
    "honaker": "Honaker estimator (binary tree)",
    "sqrt": "Square-root factorisation (Gaussian)",
}


# ---------------------------------------------------------------------------------------------
# interface


@dataclass(frozen=True)
class Release:
    """Released prefix sums and the analytic variance of each."""

    prefix_sums: np.ndarray
    variance: np.ndarray

    def empirical_rmse(self, series: np.ndarray) -> float:
        """Root-mean-square error of this draw against the true running totals s = W a."""
        truth = np.cumsum(np.asarray(series, float)[: self.prefix_sums.shape[0]])
        return float(np.sqrt(np.mean((self.prefix_sums - truth) ** 2)))


class Streamer(Protocol):
    def step(self, a_t: float) -> tuple[float, float]:
        """Consume the next count; return (released running total, its analytic variance)."""


@runtime_checkable
class StreamMechanism(Protocol):
    name: str
    horizon: int
    noise: Noise

    @property
    def sensitivity(self) -> float: ...
    def per_step_variance(self) -> np.ndarray: ...
    def total_mse(self) -> float: ...
    def strategy(self, series: np.ndarray) -> np.ndarray: ...
    def errors(self, rng: np.random.Generator, draws: int = 1) -> np.ndarray: ...
    def release(self, series: np.ndarray, rng: np.random.Generator) -> Release: ...
    def streamer(self, rng: np.random.Generator) -> Streamer: ...


def as_series(series: np.ndarray, horizon: int) -> np.ndarray:
    """Validate a stream for horizon N: 1-D, finite, 1..N entries (a shorter stream is a prefix)."""
    a = np.asarray(series, dtype=float)
    if a.ndim != 1 or a.size == 0:
        raise InputError(f"series: expected a non-empty 1-D sequence of counts, got shape {a.shape}")
    if a.size > horizon:
        raise InputError(f"series: {a.size} steps exceed the horizon N = {horizon}")
    bad = np.flatnonzero(~np.isfinite(a))
    if bad.size:
        raise InputError(f"series: step {bad[0] + 1} is not a finite number ({a[bad[0]]!r})")
    return a


class _Base:
    """Shared batch plumbing: release = W a + errors (B applied to the scaled noise)."""

    name: str
    horizon: int
    noise: Noise

    def total_mse(self) -> float:
        return float(np.sum(self.per_step_variance()))

    def release(self, series: np.ndarray, rng: np.random.Generator) -> Release:
        a = as_series(series, self.horizon)
        err = self.errors(rng, 1)[0, : a.size]
        return Release(prefix_sums=np.cumsum(a) + err, variance=self.per_step_variance()[: a.size])

    def _padded(self, series: np.ndarray) -> np.ndarray:
        a = as_series(series, self.horizon)
        return np.concatenate([a, np.zeros(self.horizon - a.size)])


class _StepGuard:
    """Counts steps and rejects more than N or a non-finite count."""

    def __init__(self, horizon: int) -> None:
        self.horizon = horizon
        self.t = 0
        self.total = 0.0

    def advance(self, a_t: float) -> float:
        a = float(a_t)
        if not np.isfinite(a):
            raise InputError(f"step {self.t + 1}: expected a finite count, got {a_t!r}")
        if self.t >= self.horizon:
            raise InputError(f"step {self.t + 1}: the horizon N = {self.horizon} is exhausted")
        self.t += 1
        self.total += a
        return a


# ---------------------------------------------------------------------------------------------
# naive


@dataclass(frozen=True)
class Naive(_Base):
    """Noisy increments: release Σ_{j<=t} (a_j + Lap(1/ε)); sensitivity 1, Var(t) = t·2/ε²."""

    horizon: int
    noise: Noise
    name: str = "naive"

    @property
    def sensitivity(self) -> float:
        return 1.0

    def per_step_variance(self) -> np.ndarray:
        return nodes(self.horizon) * self.noise.variance(self.sensitivity)

    def strategy(self, series: np.ndarray) -> np.ndarray:
        return self._padded(series)

    def errors(self, rng: np.random.Generator, draws: int = 1) -> np.ndarray:
        eta = self.noise.standard(rng, (draws, self.horizon)) * self.noise.scale(self.sensitivity)
        return np.cumsum(eta, axis=1)

    def streamer(self, rng: np.random.Generator) -> Streamer:
        return _NaiveStreamer(self, rng)


class _NaiveStreamer:
    def __init__(self, mech: Naive, rng: np.random.Generator) -> None:
        self.guard, self.rng, self.mech = _StepGuard(mech.horizon), rng, mech
        self.scale = mech.noise.scale(mech.sensitivity)
        self.err = 0.0

    def step(self, a_t: float) -> tuple[float, float]:
        self.guard.advance(a_t)
        self.err += float(self.mech.noise.standard(self.rng, 1)[0]) * self.scale
        return self.guard.total + self.err, self.guard.t * self.mech.noise.variance(self.mech.sensitivity)


# ---------------------------------------------------------------------------------------------
# Fenwick (λ = 1 or FDA) and the binary mechanism


@dataclass(frozen=True)
class Fenwick(_Base):
    """Weighted Fenwick matrix mechanism B Σ⁻¹ (Σ M a + noise) (Eq. 5.8; λ = 1 is Eq. 5.7).

    Node i carries λ_i c_i plus noise of scale Δ/ε (Laplace; Δ = max column L1 norm of ΣM) or
    σ = Δ₂/sqrt(2ρ) (Gaussian; Δ₂ = max column L2 norm); the estimate of s_p divides each node on
    p's chain by λ_i. Per-step variance = noise variance · Σ_{i in chain(p)} λ_i⁻², the diagonal of
    B Σ⁻¹ Σ⁻ᵀ Bᵀ times the noise variance; its sum is Eq. (5.9).
    ``weights='fda'`` uses the optimal λ for the noise (Thm 5.4 generalised, see ``weights``).
    """

    horizon: int
    noise: Noise
    weights: Literal["ones", "fda"] = "ones"
    name: str = "fenwick"
    lam: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        n = check_horizon(self.horizon)
        if self.weights == "ones":
            lam = np.ones(n)
        elif self.weights == "fda":
            lam = fda_weights(n, self.noise.kind).lam
        else:
            raise InputError(f"weights: expected 'ones' or 'fda', got {self.weights!r}")
        object.__setattr__(self, "lam", lam)

    @property
    def sensitivity(self) -> float:
        """Max column norm of Σ M (Thm 5.1 for λ = 1: floor(log2 N) + 1, or its square root for L2)."""
        if self.noise.kind == "laplace":
            return float(column_chain_sum(self.lam).max())
        return float(np.sqrt(column_chain_sum(self.lam**2).max()))

    def per_step_variance(self) -> np.ndarray:
        return self.noise.variance(self.sensitivity) * chain_sum(self.lam**-2.0)

    def strategy(self, series: np.ndarray) -> np.ndarray:
        return self.lam * node_sums(self._padded(series))

    def errors(self, rng: np.random.Generator, draws: int = 1) -> np.ndarray:
        eta = self.noise.standard(rng, (draws, self.horizon)) * self.noise.scale(self.sensitivity)
        return chain_sum(eta / self.lam)

    def streamer(self, rng: np.random.Generator) -> Streamer:
        return _FenwickStreamer(self, rng)


class _FenwickStreamer:
    """O(log N) state: per level the exact partial sum α_k and the de-weighted noisy node α̂_k/λ.

    This is Chan-Shi-Song's binary-mechanism bookkeeping: at time t the node of level
    k = log2(lowbit(t)) is c_t = a_t + Σ_{j<k} α_j; lower levels are cleared.
    """

    def __init__(self, mech: Fenwick, rng: np.random.Generator) -> None:
        self.mech, self.rng, self.guard = mech, rng, _StepGuard(mech.horizon)
        levels = mech.horizon.bit_length()
        self.alpha = np.zeros(levels)  # exact p-sums
        self.noisy = np.zeros(levels)  # noisy node value divided by λ
        self.inv_lam_sq = np.zeros(levels)
        self.scale = mech.noise.scale(mech.sensitivity)
        self.var_unit = mech.noise.variance(mech.sensitivity)
        self.e_sub = subtree_optima(levels, mech.noise.kind) if mech.weights == "fda" else None

    def _lam(self, t: int) -> float:
        if self.e_sub is None:
            return 1.0
        return fda_weight_at(t, self.mech.horizon, self.mech.noise.kind, self.e_sub)

    def step(self, a_t: float) -> tuple[float, float]:
        a = self.guard.advance(a_t)
        t = self.guard.t
        k = lowbit(t).bit_length() - 1
        c_t = a + float(self.alpha[:k].sum())
        lam = self._lam(t)
        y = lam * c_t + float(self.mech.noise.standard(self.rng, 1)[0]) * self.scale
        self.alpha[:k] = 0.0
        self.noisy[:k] = 0.0
        self.inv_lam_sq[:k] = 0.0
        self.alpha[k], self.noisy[k], self.inv_lam_sq[k] = c_t, y / lam, lam**-2.0
        bits = [j for j in range(t.bit_length()) if t >> j & 1]  # the chain of t, lowest node first
        return float(sum(self.noisy[j] for j in bits)), self.var_unit * float(sum(self.inv_lam_sq[j] for j in bits))


def fenwick_fda(horizon: int, noise: Noise) -> Fenwick:
    """Fenwick strategy with the FDA-optimal weights for this noise."""
    return Fenwick(horizon, noise, weights="fda", name="fenwick-fda")


def binary(horizon: int, noise: Noise) -> Fenwick:
    """Chan-Shi-Song (2011) binary mechanism.

    Its p-sum α_i released at time t covers (t - 2^i, t] with 2^i = lowbit(t), i.e. it is Fenwick
    node t, and s_t is the sum of the p-sums of t's set bits (the Fenwick chain). Each a_j lies in
    at most floor(log2 N) + 1 = ceil(log2(N + 1)) p-sums, which is the sensitivity (Thm 5.1). So the
    binary mechanism *is* the Fenwick strategy with λ = 1; its streaming form is the α / α̂ state.
    """
    return Fenwick(horizon, noise, weights="ones", name="binary")


# ---------------------------------------------------------------------------------------------
# Honaker on the dyadic tree


def honaker_factors(levels: int) -> np.ndarray:
    """h_k: variance of the bottom-up estimate of a level-k node in units of one node's variance.

    h_0 = 1, h_k = 1/(1 + 1/(2 h_{k-1})) (inverse-variance combination of the node and its two
    children's estimates; Honaker 2015, upward pass). h_k is also the weight on the node itself.
    """
    h = np.ones(levels)
    for k in range(1, levels):  # loop over O(log N) levels
        h[k] = 1.0 / (1.0 + 1.0 / (2.0 * h[k - 1]))
    return h


@dataclass(frozen=True)
class Honaker(_Base):
    """Dyadic tree (all intervals (m 2^k - 2^k, m 2^k] ending <= N) with Honaker's efficient estimator.

    Every tree node gets noise (sensitivity = levels = floor(log2 N) + 1, each a_j is in one node per
    level). At time t the complete subtrees are those rooted at t's Fenwick chain; each root's
    best linear unbiased estimate from its subtree is the upward pass, and the subtrees are
    independent, so s_t = Σ_{bits j of t} est_j is the BLUE given the nodes released so far, with
    Var(t) = node variance · Σ_{bits j of t} h_j.
    """

    horizon: int
    noise: Noise
    name: str = "honaker"

    @property
    def levels(self) -> int:
        return check_horizon(self.horizon).bit_length()

    @property
    def sensitivity(self) -> float:
        return float(self.levels) if self.noise.kind == "laplace" else float(np.sqrt(self.levels))

    def per_step_variance(self) -> np.ndarray:
        h = honaker_factors(self.levels)
        t = nodes(self.horizon)
        out = np.zeros(self.horizon)
        for j in range(self.levels):  # loop over levels
            out += np.where(t >> j & 1, h[j], 0.0)
        return self.noise.variance(self.sensitivity) * out

    def _node_times(self) -> list[np.ndarray]:
        return [np.arange(1, self.horizon // (1 << k) + 1, dtype=np.int64) << k for k in range(self.levels)]

    def strategy(self, series: np.ndarray) -> np.ndarray:
        """All node sums, level by level (level k: the sums over (t - 2^k, t] for t = m 2^k <= N)."""
        s = np.concatenate([[0.0], np.cumsum(self._padded(series))])
        return np.concatenate([s[t] - s[t - (1 << k)] for k, t in enumerate(self._node_times())])

    def _draw_index(self) -> tuple[int, np.ndarray]:
        """Draw order: time t draws its nodes of levels 0..tz(t); start[t] = first draw of time t."""
        t = nodes(self.horizon)
        per_time = np.log2(lowbit(t)).astype(np.int64) + 1
        start = np.concatenate([[0, 0], np.cumsum(per_time)[:-1]])  # index by t (1-based)
        return int(per_time.sum()), start

    def errors(self, rng: np.random.Generator, draws: int = 1) -> np.ndarray:
        total, start = self._draw_index()
        eta = self.noise.standard(rng, (draws, total)) * self.noise.scale(self.sensitivity)
        h = honaker_factors(self.levels)
        t_all = nodes(self.horizon)
        out = np.zeros((draws, self.horizon))
        est = None
        for k, times in enumerate(self._node_times()):  # loop over levels
            own = eta[:, start[times] + k]
            if k == 0:
                est = own
            else:
                est = h[k] * own + (1.0 - h[k]) * (est[:, 0 : 2 * times.size : 2] + est[:, 1 : 2 * times.size : 2])
            has_bit = (t_all >> k & 1).astype(bool)
            out[:, has_bit] += est[:, (t_all[has_bit] >> k) - 1]
        return out

    def streamer(self, rng: np.random.Generator) -> Streamer:
        return _HonakerStreamer(self, rng)


class _HonakerStreamer:
    """O(log N) state: per level the last completed node's exact sum and Honaker estimate."""

    def __init__(self, mech: Honaker, rng: np.random.Generator) -> None:
        self.mech, self.rng, self.guard = mech, rng, _StepGuard(mech.horizon)
        levels = mech.levels
        self.exact = np.zeros(levels)
        self.est = np.zeros(levels)
        self.h = honaker_factors(levels)
        self.scale = mech.noise.scale(mech.sensitivity)
        self.var_unit = mech.noise.variance(mech.sensitivity)

    def step(self, a_t: float) -> tuple[float, float]:
        a = self.guard.advance(a_t)
        t = self.guard.t
        top = lowbit(t).bit_length() - 1  # nodes of levels 0..top end at t
        eta = self.mech.noise.standard(self.rng, top + 1) * self.scale
        exact, est = a, a + float(eta[0])
        for k in range(1, top + 1):  # O(log N) levels
            left_exact, left_est = self.exact[k - 1], self.est[k - 1]
            self.exact[k - 1], self.est[k - 1] = exact, est
            exact = left_exact + exact
            est = self.h[k] * (exact + float(eta[k])) + (1.0 - self.h[k]) * (left_est + est)
        self.exact[top], self.est[top] = exact, est
        bits = [j for j in range(t.bit_length()) if t >> j & 1]
        return float(sum(self.est[j] for j in bits)), self.var_unit * float(sum(self.h[j] for j in bits))


# ---------------------------------------------------------------------------------------------
# square-root factorisation


def sqrt_coefficients(horizon: int) -> np.ndarray:
    """c_k = binom(2k, k)/4^k, k = 0..N-1: the Taylor coefficients of (1 - x)^{-1/2}.

    L = Toeplitz lower-triangular(c) satisfies L·L = W (since ((1-x)^{-1/2})² = 1/(1-x)).
    Computed by the ratio c_k / c_{k-1} = (2k - 1)/(2k), vectorised with cumprod.
    """
    k = np.arange(1, check_horizon(horizon), dtype=float)
    return np.concatenate([[1.0], np.cumprod((2.0 * k - 1.0) / (2.0 * k))])


@dataclass(frozen=True)
class SquareRoot(_Base):
    """Square-root factorisation W = L·L (Fichtenberger-Henzinger-Upadhyay 2023), Gaussian only.

    Release L (L a + z) = W a + L z, z ~ N(0, σ² I) with σ = Δ₂/sqrt(2ρ) and Δ₂ = max column L2 norm
    of L = sqrt(Σ_{k<N} c_k²). Var(t) = σ² Σ_{k<t} c_k². L z is a causal convolution, done by FFT
    (O(N log N), no dense N×N matrix).
    """

    horizon: int
    noise: Noise
    name: str = "sqrt"

    def __post_init__(self) -> None:
        check_horizon(self.horizon)
        if self.noise.kind != "gaussian":
            raise InputError("mechanism 'sqrt': the square-root factorisation needs Gaussian noise (ρ-zCDP)")

    @property
    def coefficients(self) -> np.ndarray:
        return sqrt_coefficients(self.horizon)

    @property
    def sensitivity(self) -> float:
        return float(np.sqrt(np.sum(self.coefficients**2)))

    def per_step_variance(self) -> np.ndarray:
        return self.noise.scale(self.sensitivity) ** 2 * np.cumsum(self.coefficients**2)

    def strategy(self, series: np.ndarray) -> np.ndarray:
        return toeplitz_apply(self.coefficients, self._padded(series))

    def errors(self, rng: np.random.Generator, draws: int = 1) -> np.ndarray:
        z = self.noise.standard(rng, (draws, self.horizon)) * self.noise.scale(self.sensitivity)
        return toeplitz_apply(self.coefficients, z)

    def streamer(self, rng: np.random.Generator) -> Streamer:
        return _SquareRootStreamer(self, rng)


def toeplitz_apply(c: np.ndarray, x: np.ndarray) -> np.ndarray:
    """(L x)_t = Σ_{k<=t} c_k x_{t-k} along the last axis, by FFT convolution."""
    x = np.asarray(x, dtype=float)
    kernel = c.reshape((1,) * (x.ndim - 1) + (-1,))
    return fftconvolve(x, kernel, axes=-1)[..., : x.shape[-1]]


class _SquareRootStreamer:
    """The factorisation is dense (every past z_k affects s_t), so the state is the z history: O(t).

    Each step costs O(t) (a dot product); use the batch release for long streams.
    """

    def __init__(self, mech: SquareRoot, rng: np.random.Generator) -> None:
        self.mech, self.rng, self.guard = mech, rng, _StepGuard(mech.horizon)
        self.c = mech.coefficients
        self.z = np.zeros(mech.horizon)
        self.sigma = mech.noise.scale(mech.sensitivity)
        self.var = mech.per_step_variance()

    def step(self, a_t: float) -> tuple[float, float]:
        self.guard.advance(a_t)
        t = self.guard.t
        self.z[t - 1] = float(self.mech.noise.standard(self.rng, 1)[0]) * self.sigma
        return self.guard.total + float(self.c[:t] @ self.z[t - 1 :: -1]), float(self.var[t - 1])


# ---------------------------------------------------------------------------------------------
# registry


def make_mechanism(name: str, horizon: int, noise: Noise) -> StreamMechanism:
    """Build a mechanism by name (one of :data:`MECHANISM_NAMES`)."""
    n = check_horizon(horizon)
    if name == "naive":
        return Naive(n, noise)
    if name == "binary":
        return binary(n, noise)
    if name == "fenwick":
        return Fenwick(n, noise)
    if name == "fenwick-fda":
        return fenwick_fda(n, noise)
    if name == "honaker":
        return Honaker(n, noise)
    if name == "sqrt":
        return SquareRoot(n, noise)
    raise InputError(f"mechanism: expected one of {', '.join(MECHANISM_NAMES)}, got {name!r}")


def unit_noise(kind: NoiseKind) -> Noise:
    """The reference noise of a kind: Laplace with ε = 1 or Gaussian with ρ = 1/2 (variance Δ²)."""
    return Noise.laplace(1.0) if kind == "laplace" else Noise.gaussian(0.5)


def with_noise(mech: StreamMechanism, noise: Noise) -> StreamMechanism:
    """The same mechanism under another noise level of the same kind, reusing its structure (λ, ...).

    Sensitivities are norms of the strategy, which depend on the noise *kind* only, so this is
    ``make_mechanism(mech.name, mech.horizon, noise)`` without recomputing the weights.
    """
    if noise.kind != mech.noise.kind:
        raise InputError(f"noise: {mech.name} was built for {mech.noise.kind} noise, got {noise.kind}")
    out = copy.copy(mech)
    object.__setattr__(out, "noise", noise)
    return out


def rescaled_release(
    mech: StreamMechanism, noise: Noise, series: np.ndarray, errors: np.ndarray
) -> tuple[StreamMechanism, Release]:
    """Release ``series`` under ``noise`` from ``errors`` = ``mech.errors(rng, 1)[0]`` drawn under ``mech.noise``.

    The error is linear in the noise scale and the scale ratio does not depend on the sensitivity
    (Δ/ε vs Δ/ε₀, or Δ/sqrt(2ρ) vs Δ/sqrt(2ρ₀)), so a new ε or ρ only rescales one cached draw. The
    result equals ``make_mechanism(mech.name, N, noise).release(series, rng)`` for the same ``rng``
    state (up to rounding). A series shorter than N is a prefix (the first ``len(series)`` steps).
    """
    new = with_noise(mech, noise)
    a = as_series(series, mech.horizon)
    ratio = noise.scale(1.0) / mech.noise.scale(1.0)
    err = np.asarray(errors, dtype=float)
    if err.shape != (mech.horizon,):
        raise InputError(f"errors: expected shape ({mech.horizon},), got {err.shape}")
    return new, Release(prefix_sums=np.cumsum(a) + ratio * err[: a.size],
                        variance=new.per_step_variance()[: a.size])


def available(noise: Noise) -> tuple[str, ...]:
    """Mechanism names valid for this noise (``sqrt`` is Gaussian only)."""
    return MECHANISM_NAMES if noise.kind == "gaussian" else tuple(m for m in MECHANISM_NAMES if m != "sqrt")
