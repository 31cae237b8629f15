"""Simulation of continual counting — **not a private release** (mode ``simulate``, :mod:`dpviz.core.modes`).

For teaching and what-if questions: seeded continuous noise from a ``numpy.random.Generator``, the true
running totals and the empirical error shown, several mechanisms compared on one seed, and an ε / ρ
slider that only *rescales* one cached draw. Every one of those is what makes a simulation unsafe to
publish (the seed regenerates the noise; two rescaled outputs reveal the truth), which is why
:func:`dpviz.stream.private_release.release` does none of them.

One draw, many budgets: every mechanism is linear, ŝ = W a + R η with η = b·z, z a unit-scale draw
(Lap(1) or N(0, 1), divided by the node weights λ_i) and b = noise.scale(Δ) the base scale. So
:func:`unit_errors` draws R z once per (mechanism, N, family, seed) and :func:`simulated_release`
multiplies it by b for any ε or ρ. The streaming interface (:meth:`Mechanism.streamer`, one ``step``
per arriving count, O(log N) state for the tree mechanisms) draws the same variates in the same order
per time step, so it releases the same numbers as the batch form.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Protocol

import numpy as np

from dpviz.core.modes import check_seed
from dpviz.core.noise import Family, Noise
from dpviz.errors import InputError
from dpviz.stream.fenwick import check_horizon, lowbit
from dpviz.stream.strategies import (
    MECHANISM_NAMES,
    StreamStrategy,
    as_series,
    available,
    honaker_factors,
    strategy,
)
from dpviz.stream.weights import fda_weight_at, subtree_optima

__all__ = ["SimulatedRelease", "Mechanism", "Simulation", "make_mechanism", "with_noise", "unit_errors",
           "simulated_release", "simulate", "mechanism_list", "checked_horizon", "Streamer"]


@dataclass(frozen=True, eq=False)
class SimulatedRelease:
    """Simulated prefix sums of one mechanism and the analytic variance of each (continuous noise)."""

    mechanism: str
    prefix_sums: np.ndarray
    variance: np.ndarray
    sensitivity: float

    def empirical_rmse(self, series: np.ndarray) -> float:
        """Root-mean-square error of this draw against the true running totals s = W a (simulation only)."""
        truth = np.cumsum(np.asarray(series, float)[: self.prefix_sums.shape[0]])
        return float(np.sqrt(np.mean((self.prefix_sums - truth) ** 2)))


class Streamer(Protocol):
    def step(self, a_t: float) -> tuple[float, float]:
        """Consume the next count; return (released running total, its analytic variance)."""


@dataclass(frozen=True, eq=False)
class Mechanism:
    """A strategy bound to one noise level: the simulation's view of a mechanism.

    ``per_step_variance`` is analytic (exact for the noise, discrete or continuous); ``errors``,
    ``simulate`` and ``streamer`` draw continuous noise from a Generator (simulation only).
    """

    strategy: StreamStrategy
    noise: Noise

    def __post_init__(self) -> None:
        if self.noise.family != self.strategy.family:
            raise InputError(f"noise: {self.name} was built for {self.strategy.family} noise, got {self.noise.family}")

    @property
    def name(self) -> str:
        return self.strategy.name

    @property
    def label(self) -> str:
        return self.strategy.label

    @property
    def horizon(self) -> int:
        return self.strategy.horizon

    @property
    def lam(self) -> np.ndarray:
        """Node weights λ (1 except for Fenwick + FDA)."""
        return self.strategy.weights

    @property
    def sensitivity(self) -> float:
        return self.strategy.sensitivity(self.noise.family)

    @property
    def base_scale(self) -> float:
        """b = Δ₁/ε (Laplace) or σ = Δ₂/√(2ρ) (Gaussian); node i's scale is b/λ_i."""
        return self.noise.scale(self.sensitivity)

    def per_step_variance(self) -> np.ndarray:
        return self.strategy.per_step_variance(self.noise)

    def total_mse(self) -> float:
        return float(np.sum(self.per_step_variance()))

    def unit_errors(self, rng: np.random.Generator, draws: int = 1) -> np.ndarray:
        """R z for a unit-scale draw z / λ (shape (draws, N)); the error at this noise is b times it."""
        z = self.noise.standard(rng, (draws, self.strategy.size)) / self.lam
        return self.strategy.estimator.apply(z)

    def errors(self, rng: np.random.Generator, draws: int = 1) -> np.ndarray:
        """Errors ŝ − s of ``draws`` simulated releases (shape (draws, N))."""
        return self.base_scale * self.unit_errors(rng, draws)

    def simulate(self, series: np.ndarray, rng: np.random.Generator) -> SimulatedRelease:
        """One simulated release of ``series`` (a prefix of the horizon is fine)."""
        return simulated_release(self, series, self.unit_errors(rng, 1)[0])

    def streamer(self, rng: np.random.Generator) -> Streamer:
        """The streaming form: ``step(a_t)`` per arriving count (simulation tool, continuous noise)."""
        if self.name == "naive":
            return _NaiveStreamer(self, rng)
        if self.name in ("binary", "fenwick", "fenwick-fda"):
            return _FenwickStreamer(self, rng)
        if self.name == "honaker":
            return _HonakerStreamer(self, rng)
        return _SquareRootStreamer(self, rng)


def make_mechanism(name: str, horizon: int, noise: Noise) -> Mechanism:
    """Mechanism ``name`` (one of :data:`MECHANISM_NAMES`) for horizon N under ``noise``; the structure
    (λ, sensitivities, variance profile) comes from the cached :func:`~dpviz.stream.strategies.strategy`."""
    if not isinstance(noise, Noise):
        raise InputError(f"noise: expected a dpviz.core.noise.Noise, got {type(noise).__name__}")
    return Mechanism(strategy(name, horizon, noise.family), noise)


def with_noise(mech: Mechanism, noise: Noise) -> Mechanism:
    """The same mechanism (same cached structure) under another noise level of the same family."""
    return replace(mech, noise=noise)


def mechanism_list(spec: str | Sequence[str], family: Family) -> list[str]:
    """``"fenwick-fda"``, ``"naive,fenwick"``, ``"all"`` or a list → validated names (``all`` = every
    mechanism valid for the family)."""
    names = spec.split(",") if isinstance(spec, str) else list(spec)
    names = [n.strip() for n in names if n.strip()]
    if names == ["all"]:
        return list(available(family))
    if not names:
        raise InputError(f"--mechanism: expected one or more of {', '.join(MECHANISM_NAMES)} (comma-separated) or all")
    for n in names:
        if n not in MECHANISM_NAMES:
            raise InputError(f"--mechanism: expected one of {', '.join(MECHANISM_NAMES)} or all, got {n!r}")
        if n not in available(family):
            raise InputError(f"mechanism {n!r}: the square-root factorisation needs Gaussian noise "
                             "(--noise gaussian with --rho, or --epsilon and --delta)")
    return list(dict.fromkeys(names))


@lru_cache(maxsize=16)
def _unit_errors(name: str, horizon: int, family: Family, seed: int) -> np.ndarray:
    unit = Noise.laplace(1.0) if family == "laplace" else Noise.gaussian(0.5)  # only its family matters
    e = Mechanism(strategy(name, horizon, family), unit).unit_errors(np.random.default_rng(seed), 1)[0]
    e.flags.writeable = False
    return e


def unit_errors(name: str, horizon: int, family: Family, seed: int) -> np.ndarray:
    """The unit-scale error draw R (z/λ) of mechanism ``name`` with ``numpy.random.default_rng(seed)``
    (read-only; cached per (mechanism, N, family, seed)). Every mechanism starts from the same seed."""
    return _unit_errors(name, check_horizon(horizon), family, check_seed(seed))


def simulated_release(mech: Mechanism, series: np.ndarray, unit: np.ndarray) -> SimulatedRelease:
    """ŝ = W a + b·``unit`` for the mechanism's noise: one cached unit draw serves every ε or ρ.

    A series shorter than N is a prefix (its first steps). Simulation only: a release never rescales.
    """
    a = as_series(series, mech.horizon)
    unit = np.asarray(unit, dtype=float)
    if unit.shape != (mech.horizon,):
        raise InputError(f"errors: expected shape ({mech.horizon},), got {unit.shape}")
    err = mech.base_scale * unit[: a.size]
    return SimulatedRelease(mech.name, np.cumsum(a) + err, mech.per_step_variance()[: a.size], mech.sensitivity)


def checked_horizon(series: np.ndarray, horizon: int | None) -> tuple[int, np.ndarray]:
    """(N, validated series): N defaults to the series length and may not be shorter than it."""
    length = int(np.asarray(series).size)
    n = max(length, 1) if horizon is None else check_horizon(horizon)
    if n < length:
        raise InputError(f"--horizon: {n} is shorter than the stream ({length} steps)")
    return n, as_series(series, n)


@dataclass(frozen=True, eq=False)
class Simulation:
    """Several mechanisms on one seed: their releases, the noise and the seed (shown: it protects nothing)."""

    seed: int
    noise: Noise
    horizon: int
    releases: dict[str, SimulatedRelease]
    mechanisms: dict[str, Mechanism]

    def rmse(self, series: np.ndarray) -> dict[str, float]:
        return {name: rel.empirical_rmse(series) for name, rel in self.releases.items()}


def simulate(series: np.ndarray, mechanisms: str | Iterable[str], noise: Noise, *, seed: int,
             horizon: int | None = None) -> Simulation:
    """Simulate ``mechanisms`` (a name, a comma list, ``"all"`` or a list) on ``series`` under
    continuous ``noise``, every one from ``numpy.random.default_rng(seed)``.

    Not a private release: the output depends on a reproducible seed and is compared with the truth.
    """
    if not isinstance(noise, Noise):
        raise InputError(f"noise: expected a dpviz.core.noise.Noise, got {type(noise).__name__}")
    if noise.discrete:
        raise InputError("simulate draws seeded continuous noise; pass a continuous Noise "
                         "(discrete noise is for dpviz.stream.private_release.release)")
    seed = check_seed(seed)
    n, a = checked_horizon(series, horizon)
    names = mechanism_list(mechanisms if isinstance(mechanisms, str) else list(mechanisms), noise.family)
    mechs = {m: make_mechanism(m, n, noise) for m in names}
    rels = {m: simulated_release(mech, a, unit_errors(m, n, noise.family, seed)) for m, mech in mechs.items()}
    return Simulation(seed, noise, n, rels, mechs)


# ---------------------------------------------------------------------------------------------
# streaming (simulation tool: continuous noise, seeded Generator)


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


class _NaiveStreamer:
    def __init__(self, mech: Mechanism, rng: np.random.Generator) -> None:
        self.guard, self.rng, self.mech = _StepGuard(mech.horizon), rng, mech
        self.scale = mech.base_scale
        self.var = mech.per_step_variance()
        self.err = 0.0

    def step(self, a_t: float) -> tuple[float, float]:
        self.guard.advance(a_t)
        self.err += float(self.mech.noise.standard(self.rng, 1)[0]) * self.scale
        return self.guard.total + self.err, float(self.var[self.guard.t - 1])


class _FenwickStreamer:
    """O(log N) state: per level the exact partial sum α_k and the de-weighted noisy node α̂_k/λ.

    This is Chan-Shi-Song's binary-mechanism bookkeeping: at time t the node of level
    k = log2(lowbit(t)) is c_t = a_t + Σ_{j<k} α_j; lower levels are cleared.
    """

    def __init__(self, mech: Mechanism, rng: np.random.Generator) -> None:
        self.mech, self.rng, self.guard = mech, rng, _StepGuard(mech.horizon)
        levels = mech.horizon.bit_length()
        self.alpha = np.zeros(levels)  # exact p-sums
        self.noisy = np.zeros(levels)  # noisy node value divided by λ
        self.scale = mech.base_scale
        self.var = mech.per_step_variance()
        self.family = mech.noise.family
        self.e_sub = subtree_optima(levels, self.family) if mech.name == "fenwick-fda" else None

    def _lam(self, t: int) -> float:
        if self.e_sub is None:
            return 1.0
        return fda_weight_at(t, self.mech.horizon, self.family, self.e_sub)

    def step(self, a_t: float) -> tuple[float, float]:
        a = self.guard.advance(a_t)
        t = self.guard.t
        k = lowbit(t).bit_length() - 1
        c_t = a + float(self.alpha[:k].sum())
        lam = self._lam(t)
        y = lam * c_t + float(self.mech.noise.standard(self.rng, 1)[0]) * self.scale
        self.alpha[:k] = 0.0
        self.noisy[:k] = 0.0
        self.alpha[k], self.noisy[k] = c_t, y / lam
        bits = [j for j in range(t.bit_length()) if t >> j & 1]  # the chain of t, lowest node first
        return float(sum(self.noisy[j] for j in bits)), float(self.var[t - 1])


class _HonakerStreamer:
    """O(log N) state: per level the last completed node's exact sum and Honaker estimate."""

    def __init__(self, mech: Mechanism, rng: np.random.Generator) -> None:
        self.mech, self.rng, self.guard = mech, rng, _StepGuard(mech.horizon)
        levels = mech.horizon.bit_length()
        self.exact = np.zeros(levels)
        self.est = np.zeros(levels)
        self.h = honaker_factors(levels)
        self.scale = mech.base_scale
        self.var = mech.per_step_variance()

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
        return float(sum(self.est[j] for j in bits)), float(self.var[t - 1])


class _SquareRootStreamer:
    """The factorisation is dense (every past z_k affects s_t), so the state is the z history: O(t).

    Each step costs O(t) (a dot product); use the batch form for long streams.
    """

    def __init__(self, mech: Mechanism, rng: np.random.Generator) -> None:
        self.mech, self.rng, self.guard = mech, rng, _StepGuard(mech.horizon)
        self.c = mech.strategy.estimator.coefficients
        self.z = np.zeros(mech.horizon)
        self.sigma = mech.base_scale
        self.var = mech.per_step_variance()

    def step(self, a_t: float) -> tuple[float, float]:
        self.guard.advance(a_t)
        t = self.guard.t
        self.z[t - 1] = float(self.mech.noise.standard(self.rng, 1)[0]) * self.sigma
        return self.guard.total + float(self.c[:t] @ self.z[t - 1 :: -1]), float(self.var[t - 1])

