"""The simulation machinery of continual counting: a strategy bound to one noise level (:class:`Mechanism`),
its unit-scale error draws, rescaled simulated releases and its streaming form — **not a private release**
(mode ``simulate``, :mod:`dpviz.core.modes`; :func:`dpviz.stream.release.simulate` is the entry point).

For teaching and what-if questions: seeded continuous noise from a ``numpy.random.Generator``, the true
running totals and the empirical error shown, several mechanisms compared on one seed, and an ε / ρ
slider that only *rescales* one cached draw. Every one of those is what makes a simulation unsafe to
publish (the seed regenerates the noise; two rescaled outputs reveal the truth), which is why
:func:`dpviz.stream.release.release` does none of them.

One draw, many budgets: every mechanism is linear, ŝ = W a + R η with η = b·z, z a unit-scale draw
(Lap(1) or N(0, 1), divided by the node weights λ_i) and b = noise.scale(Δ) the base scale. So
:func:`unit_errors` draws R z once per (mechanism, N, family, seed) and :func:`simulated_release`
multiplies it by b for any ε or ρ. The streaming interface (:meth:`Mechanism.streamer`, one ``step``
per arriving count, O(log N) state for the tree mechanisms) draws the same variates in the same order
per time step, so it releases the same numbers as the batch form.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cached_property, lru_cache
from typing import Protocol

import numpy as np

from dpviz.core.modes import check_seed
from dpviz.core.noise import Family, Noise
from dpviz.errors import InputError
from dpviz.stream.fenwick import MAX_COUNT, MAX_TOTAL, check_horizon
from dpviz.stream.estimators import honaker_factors
from dpviz.stream.metrics import empirical_rmse
from dpviz.stream.strategy import LATTICE_RELEASABLE, MECHANISM_NAMES, StreamStrategy, as_series, available, strategy

__all__ = ["SimulatedRelease", "Mechanism", "make_mechanism", "with_noise", "unit_errors", "simulated_release",
           "mechanism_list", "checked_horizon", "Streamer"]


@dataclass(frozen=True, eq=False)
class SimulatedRelease:
    """Simulated prefix sums of one mechanism and the analytic variance of each (continuous noise)."""

    mechanism: str
    prefix_sums: np.ndarray
    variance: np.ndarray
    sensitivity: float

    def empirical_rmse(self, series: np.ndarray) -> float:
        """Root-mean-square error of this draw against the true running totals s = W a (simulation only)."""
        return empirical_rmse(self.prefix_sums, series)


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
        """Var(ŝ_t), t = 1..N (cached per (mechanism, N, noise): :meth:`StreamStrategy.per_step_variance`)."""
        return self.strategy.per_step_variance(self.noise)

    @cached_property
    def node_scales(self) -> np.ndarray:
        """Noise scale of each measured query, b/λ_i (what a streamer looks up per step)."""
        return self.strategy.scales(self.noise)

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
        if self.name == "smooth-binary":
            return _SmoothBinaryStreamer(self, rng)
        if self.name == "kary":
            return _KaryStreamer(self, rng)
        if self.name == "blt":
            return _BLTStreamer(self, rng)
        if self.name == "banded":
            return _BandedStreamer(self, rng)
        if self.name == "sqrt-weighted":
            return _WeightedSquareRootStreamer(self, rng)
        if self.name == "blt-weighted":
            return _WeightedBLTStreamer(self, rng)
        return _SquareRootStreamer(self, rng)


def make_mechanism(name: str, horizon: int, noise: Noise) -> Mechanism:
    """Mechanism ``name`` (one of :data:`MECHANISM_NAMES`) for horizon N under ``noise``; the structure
    (λ, sensitivities, variance profile) comes from the cached :func:`~dpviz.stream.strategy.strategy`."""
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
            raise InputError(f"mechanism {n!r}: a real-valued factorisation ({', '.join(LATTICE_RELEASABLE)}) needs "
                             "Gaussian noise (--noise gaussian with --rho, or --epsilon and --delta)")
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


# ---------------------------------------------------------------------------------------------
# streaming (simulation tool: continuous noise, seeded Generator)
#
# A step is plain Python on floats and ints (no numpy call, no allocation but the returned tuple): the
# per-step tables (λ_t through the node scales b/λ_t, and Var(ŝ_t)) are the mechanism's cached arrays,
# and the unit noise comes from the Generator in blocks. numpy's Laplace and normal samplers consume
# the bit stream one variate at a time, so block draws are the very variates the batch form draws in
# one call, in the same order: a streamer releases the batch numbers (up to rounding).


class _Streamer:
    """Step counter, exact running total (both bounds checked) and block-drawn unit noise."""

    BLOCK = 4096

    def __init__(self, mech: Mechanism, rng: np.random.Generator) -> None:
        mech.noise.standard(rng, 0)  # continuous noise and a Generator, or InputError (draws nothing)
        self.mech, self.rng, self.n = mech, rng, mech.horizon
        self.t, self.total = 0, 0.0
        self.scale = mech.base_scale
        self.var = mech.per_step_variance()  # cached per (mechanism, N, noise)
        self._buf: list[float] = []
        self._i = 0
        self._left = mech.strategy.size  # variates the batch form draws in all

    def _advance(self, a_t: float) -> float:
        """Check and count one step; returns the count as a float (updates ``t`` and ``total``)."""
        try:
            a = float(a_t)
        except (TypeError, ValueError):
            raise InputError(f"step {self.t + 1}: expected a count, got {a_t!r}") from None
        if not -MAX_COUNT <= a <= MAX_COUNT:  # also refuses nan and ±inf
            raise InputError(f"step {self.t + 1}: expected a finite count of at most {MAX_COUNT:,} in absolute "
                             f"value (MAX_COUNT), got {a_t!r}")
        if self.t >= self.n:
            raise InputError(f"step {self.t + 1}: the horizon N = {self.n} is exhausted")
        total = self.total + a
        if not -MAX_TOTAL <= total <= MAX_TOTAL:
            raise InputError(f"step {self.t + 1}: the running total {total:.6g} is above the largest total "
                             f"accepted, 2^53 - 1 (MAX_TOTAL)")
        self.t += 1
        self.total = total
        return a

    def _z(self) -> float:
        """The next unit-scale variate (Lap(1) or N(0, 1))."""
        i = self._i
        if i == len(self._buf):
            k = min(self.BLOCK, self._left)
            self._buf = self.mech.noise.standard(self.rng, k).tolist()
            self._left -= k
            i = 0
        self._i = i + 1
        return self._buf[i]


class _NaiveStreamer(_Streamer):
    def __init__(self, mech: Mechanism, rng: np.random.Generator) -> None:
        super().__init__(mech, rng)
        self.err = 0.0

    def step(self, a_t: float) -> tuple[float, float]:
        self._advance(a_t)
        self.err += self._z() * self.scale
        return self.total + self.err, self.var.item(self.t - 1)


class _FenwickStreamer(_Streamer):
    """O(log N) state, O(1) work per step: the exact total S and the released total ŝ at the end of the
    last node of each level.

    At time t (level k = tz(t)) node t covers (u, t] with u = t - lowbit(t) = t & (t - 1); node u is the
    last node of level tz(u) > k (the nodes in between have lower levels), so c_t = S_t - S_u and
    ŝ_t = ŝ_u + c_t + z_t b/λ_t: the Fenwick chain of t, one node per step (Chan–Shi–Song's p-sums,
    with the FDA weights through the node scale b/λ_t).
    """

    def __init__(self, mech: Mechanism, rng: np.random.Generator) -> None:
        super().__init__(mech, rng)
        levels = self.n.bit_length()
        self.sums = [0.0] * levels  # S at the end of the last node of each level
        self.est = [0.0] * levels  # ŝ at the end of the last node of each level
        self.node_scale = mech.node_scales  # b/λ_t, cached with the mechanism's strategy

    def step(self, a_t: float) -> tuple[float, float]:
        self._advance(a_t)
        t, total = self.t, self.total
        u = t & (t - 1)
        if u:
            j = (u & -u).bit_length() - 1
            est = self.est[j] + (total - self.sums[j])
        else:
            est = total
        est += self._z() * self.node_scale.item(t - 1)
        k = (t & -t).bit_length() - 1
        self.sums[k] = total
        self.est[k] = est
        return est, self.var.item(t - 1)


class _HonakerStreamer(_Streamer):
    """O(log N) state: per level the last completed node's exact sum and Honaker estimate."""

    def __init__(self, mech: Mechanism, rng: np.random.Generator) -> None:
        super().__init__(mech, rng)
        levels = self.n.bit_length()
        self.exact = [0.0] * levels
        self.est = [0.0] * levels
        self.h = honaker_factors(levels).tolist()

    def step(self, a_t: float) -> tuple[float, float]:
        a = self._advance(a_t)
        t = self.t
        top = (t & -t).bit_length() - 1  # nodes of levels 0..top end at t
        exact, est = a, a + self._z() * self.scale
        for k in range(1, top + 1):  # O(log N) levels
            left_exact, left_est = self.exact[k - 1], self.est[k - 1]
            self.exact[k - 1], self.est[k - 1] = exact, est
            exact = left_exact + exact
            h = self.h[k]
            est = h * (exact + self._z() * self.scale) + (1.0 - h) * (left_est + est)
        self.exact[top], self.est[top] = exact, est
        out, rest, j = 0.0, t, 0
        while rest:  # the completed subtrees: one per set bit of t
            if rest & 1:
                out += self.est[j]
            rest >>= 1
            j += 1
        return out, self.var.item(t - 1)


class _SmoothBinaryStreamer(_Streamer):
    """O(log N) state and work: the nodes on the current leaf's path (:class:`~dpviz.stream.smooth_binary.SmoothBinaryState`)."""

    def __init__(self, mech: Mechanism, rng: np.random.Generator) -> None:
        from dpviz.stream.smooth_binary import SmoothBinaryState

        super().__init__(mech, rng)
        self.state = SmoothBinaryState(mech.strategy.structure)  # type: ignore[attr-defined]

    def _node_noise(self) -> float:
        return self._z() * self.scale

    def step(self, a_t: float) -> tuple[float, float]:
        self._advance(a_t)
        return self.state.step(self.total, self._node_noise), self.var.item(self.t - 1)


class _KaryStreamer(_SmoothBinaryStreamer):
    """O(k log_k N) state: the block noises of the current parents (:class:`~dpviz.stream.pure.KaryState`)."""

    def __init__(self, mech: Mechanism, rng: np.random.Generator) -> None:
        from dpviz.stream.pure import KaryState

        _Streamer.__init__(self, mech, rng)
        self.state = KaryState(mech.strategy.structure)  # type: ignore[attr-defined,assignment]


class _SquareRootStreamer(_Streamer):
    """The factorisation is dense (every past z_k affects s_t), so the state is the z history: O(t).

    Each step costs O(t) (a dot product); use the batch form for long streams.
    """

    def __init__(self, mech: Mechanism, rng: np.random.Generator) -> None:
        super().__init__(mech, rng)
        self.c = mech.strategy.estimator.coefficients
        self.z = np.zeros(self.n)

    def step(self, a_t: float) -> tuple[float, float]:
        self._advance(a_t)
        t = self.t
        self.z[t - 1] = self._z() * self.scale
        return self.total + float(self.c[:t] @ self.z[t - 1 :: -1]), self.var.item(t - 1)


class _BLTStreamer(_Streamer):
    """O(d) state (Dvijotham et al., FOCS 2024): the released total is s_t + σ (B z)_t, B = W C⁻¹ (:mod:`dpviz.stream.blt`).

    The noise part σ (B z)_t does not depend on the counts, so it is produced a block of :attr:`BLOCK` variates at a
    time (the variates :meth:`_z` would draw, in the same order) in the BLT's parallel form: C⁻¹ is a BLT with real
    distinct poles λ_j (Thm 3.3), (C⁻¹ u)_t = u_t + Σ_j ω'_j Σ_{k≥1} λ_j^{k−1} u_{t−k}, i.e. d first-order filters
    (``scipy.signal.lfilter``, one state each) and one running sum. A step is plain Python: the count checks, one
    read of the block, one addition. Memory: d filter states and one block, whatever N."""

    def __init__(self, mech: Mechanism, rng: np.random.Generator) -> None:
        super().__init__(mech, rng)
        factor = mech.strategy.factor  # type: ignore[attr-defined]
        self.buffers = len(factor.theta)
        lam, weight = factor.inverse if self.buffers else (np.zeros(0), np.zeros(0))
        self.poles = [(float(lj), float(wj), np.zeros(1)) for lj, wj in zip(lam, weight)]
        self.acc = 0.0
        self.block: list[float] = []
        self.k = 0

    def _unit_scales(self, start: int, k: int) -> np.ndarray | float:
        """The noise scale of steps start..start+k−1 (one base scale; per row for ``blt-weighted``)."""
        return self.scale

    def _refill(self) -> None:
        from scipy.signal import lfilter

        k = min(self.BLOCK, self._left)
        u = self.mech.noise.standard(self.rng, k) * self._unit_scales(self.t - 1, k)
        self._left -= k
        y = u.copy()
        for j, (lj, wj, zi) in enumerate(self.poles):  # O(d) first-order filters, vectorised over the block
            f, zf = lfilter([0.0, 1.0], [1.0, -lj], u, zi=zi)
            y += wj * f
            self.poles[j] = (lj, wj, zf)
        acc = self.acc + np.cumsum(y)
        self.acc = float(acc[-1])
        self.block, self.k = acc.tolist(), 0

    def step(self, a_t: float) -> tuple[float, float]:
        self._advance(a_t)
        if self.k == len(self.block):
            self._refill()
        noise = self.block[self.k]
        self.k += 1
        return self.total + noise, self.var.item(self.t - 1)


class _BandedStreamer(_Streamer):
    """O(b) state and work per step: y_t = z_t − Σ_{1≤k<b} c_k y_{t−k} (the last b − 1 values of y, newest first)
    and the released total s_t + σ Σ_{j≤t} y_j (:mod:`dpviz.stream.banded`)."""

    def __init__(self, mech: Mechanism, rng: np.random.Generator) -> None:
        super().__init__(mech, rng)
        self.c = list(mech.strategy.factor.band_coefficients[1:])  # type: ignore[attr-defined]
        self.hist = [0.0] * len(self.c)
        self.acc = 0.0

    def step(self, a_t: float) -> tuple[float, float]:
        self._advance(a_t)
        y = self._z() - sum([c * h for c, h in zip(self.c, self.hist)])
        if self.hist:
            self.hist.pop()
            self.hist.insert(0, y)
        self.acc += y
        return self.total + self.scale * self.acc, self.var.item(self.t - 1)


class _WeightedSquareRootStreamer(_SquareRootStreamer):
    """``sqrt-weighted``: the square root's O(t) history, row k's noise at its own scale σ/d_k."""

    def step(self, a_t: float) -> tuple[float, float]:
        self._advance(a_t)
        t = self.t
        self.z[t - 1] = self._z() * self.mech.node_scales.item(t - 1)
        return self.total + float(self.c[:t] @ self.z[t - 1 :: -1]), self.var.item(t - 1)


class _WeightedBLTStreamer(_BLTStreamer):
    """``blt-weighted``: the BLT's O(d) filters, row k's noise entering at its own scale σ/d_k."""

    def _unit_scales(self, start: int, k: int) -> np.ndarray | float:
        return self.mech.node_scales[start : start + k]
