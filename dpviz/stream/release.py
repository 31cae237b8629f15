"""The stream capability's two entry points (issue 18): :func:`release` (publish) and :func:`simulate` (teach).

**Release** (mode ``release``, :mod:`dpviz.core.modes`): safe to publish. :func:`release` is
:func:`dpviz.core.protocols.measure` (y = Q a + η) followed by the mechanism's estimator (ŝ = R y), for
**one** mechanism, with

* **discrete** noise (discrete Laplace for ε-DP, discrete Gaussian for ρ-zCDP; Canonne, Kamath &
  Steinke, NeurIPS 2020) on the *integer* node sums — no floating-point Laplace/Gaussian on integer
  counts, whose low-order bits leak the data (Mironov, "On Significance of the Least Significant Bits
  for Differential Privacy", CCS 2012);
* noise from the OS CSPRNG (``rng=None``, the default), fresh at every call: no seed, no rescaling
  of an earlier draw, no several mechanisms on one draw;
* the accounting of :mod:`dpviz.stream.strategy` (per-node scales b/λ_i, Σ_{i∋t} λ_i/b ≤ ε, or
  Σ λ_i²/(2σ²) ≤ ρ for one event). Unit of privacy: one event (event-level; not user-level).

The result is a :class:`StreamRelease` (a :class:`dpviz.core.release.Release`): ``values`` (the released
running totals), ``budget`` (one part: the whole budget), ``table()`` (the released totals and their
analytic variances only) and ``metadata()`` (built by :func:`dpviz.core.release.release_metadata`; nothing
in it is computed from the counts). The real factorisations (``sqrt``, ``banded``, ``blt``, ``sqrt-weighted``,
``blt-weighted``: C a is not an integer vector) are released on the lattice 2^−k ℤ with discrete Gaussian noise
(:mod:`dpviz.stream.lattice`, :mod:`dpviz.stream.weighted`: the strategy rounded to the lattice, the answers
computed exactly, the ℓ₂ sensitivity charged with the rounding slack); the metadata states the lattice. A Laplace
(pure ε) release of a real factorisation is refused. With no mechanism named, :func:`release` takes the best
releasable one for its ``target`` (worst step or mean) and says why in the metadata (``mechanism_choice``).

**Simulation** — **not a private release**: :func:`simulate` draws seeded continuous noise, runs several
mechanisms on one seed and is compared with the truth (the machinery: :mod:`dpviz.stream.mechanism`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from dpviz.core.modes import check_seed
from dpviz.core.noise import Noise
from dpviz.core.protocols import Estimate, LinearMeasurement, measure, require_integral
from dpviz.core.release import BudgetSplit, release_metadata
from dpviz.errors import InputError
from dpviz.stream.lattice import LAPLACE_REFUSAL, Lattice, lattice_measure
from dpviz.stream.mechanism import (
    Mechanism,
    SimulatedRelease,
    checked_horizon,
    make_mechanism,
    mechanism_list,
    simulated_release,
    unit_errors,
)
from dpviz.stream.model import StreamData
from dpviz.stream.strategy import (
    LABELS,
    LATTICE_RELEASABLE,
    StreamStrategy,
    releasable,
    releasable_ranking,
    strategy,
)

if TYPE_CHECKING:  # pandas is imported where a table is built (fast CLI startup)
    import pandas as pd

__all__ = ["DEFAULT_MECHANISM", "DEFAULT_TARGET", "choose_mechanism", "StreamRelease", "Simulation", "release", "simulate", "simulation_table",
           "integer_counts", "check_release", "release_strategy"]

DEFAULT_MECHANISM = "fenwick-fda"
"""The seed's default mechanism (the Fenwick tree with its optimal weights, FDA). :func:`release` no longer uses
it blindly: with no mechanism named it releases :func:`~dpviz.stream.strategy.best_releasable` for its target
(which is FDA only where nothing releasable beats it) and states the choice in the metadata."""
DEFAULT_TARGET = "max"
"""What the default mechanism minimises: ``max`` (the worst step's variance) or ``mean`` (the mean per-step one)."""

COLUMNS = {"t": "step (1-based)", "released_total": "released running total",
           "variance": "analytic variance of the released total (exact for the discrete noise)",
           "std": "square root of variance"}
"""The published columns, described in the metadata."""


def _series(data: Any) -> tuple[Any, np.ndarray | None, str | None]:
    """(counts, timestamps, time column) of a :class:`StreamData` or a bare array of counts."""
    if isinstance(data, StreamData):
        return data.counts, data.timestamps, data.time_column
    return data, None, None


# ---------------------------------------------------------------------------------------------
# release


@dataclass(frozen=True, eq=False)
class StreamRelease:
    """One private release: the measurement (noisy integer node sums) and the released prefix sums.

    ``values`` (= ``prefix_sums``) / ``variance`` cover the released steps (the series length); the
    measurement and the estimate cover the horizon N (steps not observed yet are zero). ``timestamps``
    and ``time_column`` are the input's (public, as the file gives them), for :meth:`table`.
    """

    capability: ClassVar[str] = "stream"
    mechanism: str
    horizon: int
    steps: int
    noise: Noise
    measurement: LinearMeasurement
    estimate: Estimate
    seeded: bool = False
    lattice: Lattice | None = None
    """The lattice 2^−k ℤ of a real-valued factorisation's release (``sqrt``, ``banded``, ``blt``, ...); None for
    integer strategies."""
    choice: dict[str, Any] | None = None
    """Why this mechanism, when :func:`release` chose it (no mechanism named): the target and the ranking of
    the releasable mechanisms by analytic variance at unit noise (public: N and the family only)."""
    timestamps: np.ndarray | None = None
    time_column: str | None = None

    @property
    def sensitivity(self) -> float:
        return self.measurement.sensitivity

    @property
    def values(self) -> np.ndarray:
        """The released running totals ŝ_1..ŝ_steps."""
        return self.estimate.values[: self.steps]

    @property
    def prefix_sums(self) -> np.ndarray:
        return self.values

    @property
    def variance(self) -> np.ndarray:
        return self.estimate.variance[: self.steps]

    @property
    def budget(self) -> BudgetSplit:
        """One measurement (the mechanism's query set) spends the whole budget (ρ for an (ε, δ) total)."""
        total = self.noise.budget
        return BudgetSplit.whole(total, self.mechanism, rho=self.noise.rho if total.kind == "approx" else None)

    def table(self) -> pd.DataFrame:
        """The published table: ``t``, the time column (when the input has one), ``released_total``,
        ``variance``, ``std`` — one row per released step, nothing else (no truth)."""
        return _table(self.values, self.variance, self.timestamps, self.time_column)

    def metadata(self) -> dict[str, Any]:
        """Description of the release for its ``.meta.json``: mode, mechanism, noise, budget (and its one part),
        sensitivity, horizon, version, time, unit of privacy, samplers (and, for a real factorisation, its
        ``lattice``: k, the sensitivity with its rounding slack, σ). Nothing in it is computed from the counts."""
        extra = {} if self.lattice is None else {"lattice": self.lattice.as_dict()}
        if self.choice is not None:
            extra["mechanism_choice"] = self.choice
        return release_metadata(
            self.capability, self.noise, seeded=self.seeded, sensitivity=self.sensitivity, budget_split=self.budget,
            mechanism=self.mechanism, mechanism_label=LABELS[self.mechanism], estimator=self.estimate.estimator,
            horizon=self.horizon, **extra, columns=COLUMNS)


def integer_counts(series: Any) -> np.ndarray:
    """The counts as int64, or InputError naming the first step that is not a finite integer."""
    return require_integral(series, "series", unit="step")


def check_release(mechanism: str, noise: Noise) -> None:
    """Release-mode checks: one releasable mechanism (the real factorisations with Gaussian noise only) and discrete
    noise."""
    if not isinstance(noise, Noise):
        raise InputError(f"noise: expected a dpviz.core.noise.Noise, got {type(noise).__name__}")
    if not isinstance(mechanism, str):
        raise InputError("mechanism: a private release runs exactly one mechanism (a name such as 'fenwick-fda')")
    if mechanism in LATTICE_RELEASABLE and noise.family != "gaussian":
        raise InputError(LAPLACE_REFUSAL.replace("mechanism 'sqrt'", f"mechanism {mechanism!r}"))
    if mechanism not in releasable(noise.family):
        raise InputError(f"mechanism: expected one of {', '.join(releasable(noise.family))} for a release, "
                         f"got {mechanism!r}"
                         + (" (one mechanism per release)" if "," in mechanism or mechanism == "all" else ""))
    if not noise.discrete:
        raise InputError("a private release needs discrete noise (Noise(..., discrete=True)); continuous "
                         "floating-point noise on integer counts is for simulation only")


def release_strategy(mechanism: str, horizon: int, noise: Noise) -> StreamStrategy:
    """The (cached) strategy a release uses, after :func:`check_release`."""
    check_release(mechanism, noise)
    return strategy(mechanism, horizon, noise.family)


def choose_mechanism(target: str, noise: Noise, horizon: int) -> tuple[str, dict[str, Any]]:
    """The best releasable mechanism for ``target`` (``max``/``mean``) at horizon N under ``noise``'s family, and
    the reason (the metadata's ``mechanism_choice``): every releasable mechanism's unit-noise variance, best first."""
    ranking = releasable_ranking(target, noise.family, horizon)
    what = "worst-step variance max_t Var(s_t)" if target == "max" else "mean per-step variance"
    best = ranking[0][0]
    return best, {"target": target, "chosen": best,
                  "why": f"least {what} among the mechanisms releasable with {noise.family} noise at N = {horizon}",
                  "unit_variance": {name: value for name, value in ranking}}


def release(data: StreamData | Any, noise: Noise, *, rng: np.random.Generator | None = None,
            mechanism: str | None = None, horizon: int | None = None, target: str = DEFAULT_TARGET) -> StreamRelease:
    """Privately release the running totals of the integer count stream ``data`` (a :class:`StreamData`
    or an array of counts) with one ``mechanism``; none named: the best releasable one for ``target``
    (``"max"``: the worst step's variance, ``"mean"``: the mean per-step variance; :func:`choose_mechanism`,
    stated in the metadata).

    ``noise`` must be discrete; ``rng=None`` (the default, and the only choice for a real release)
    draws from the OS CSPRNG, a fresh draw every call. A seeded ``numpy.random.Generator`` is accepted
    for tests only (the metadata then says so). ``horizon`` N defaults to the series length.
    """
    if rng is not None and not isinstance(rng, np.random.Generator):
        raise InputError("rng: expected None (OS CSPRNG) or a numpy Generator (tests only)")
    if target not in ("max", "mean"):
        raise InputError(f"target: expected 'max' or 'mean', got {target!r}")
    if mechanism is not None:
        check_release(mechanism, noise)  # before touching the data
    elif not isinstance(noise, Noise):
        raise InputError(f"noise: expected a dpviz.core.noise.Noise, got {type(noise).__name__}")
    series, stamps, time_column = _series(data)
    n, _ = checked_horizon(series, horizon)
    choice = None
    if mechanism is None:
        mechanism, choice = choose_mechanism(target, noise, n)
    strat = release_strategy(mechanism, n, noise)
    counts = integer_counts(series)
    common = {"seeded": rng is not None, "timestamps": stamps, "time_column": time_column, "choice": choice}
    coefficients = strat.lattice_coefficients
    if coefficients is not None:  # a real factorisation: exact answers on the lattice 2^-k Z
        if strat.lattice_weights is None:
            lm, lat = lattice_measure(strat.name, coefficients, counts, noise, rng)
        else:  # row i with noise σ/d_i (sqrt-weighted)
            from dpviz.stream.weighted import weighted_lattice_measure

            lm, lat = weighted_lattice_measure(strat.name, coefficients, strat.lattice_weights,
                                               strat.sensitivity(noise.family), counts, noise, rng)
        var = strat.estimator.variance(np.asarray(lm.variance))  # exact lattice noise variance, per row
        est = Estimate(strat.estimator.name, strat.estimator.apply(lm.values), var)
        return StreamRelease(mechanism, n, int(counts.size), noise, lm, est, lattice=lat, **common)
    m = measure(strat, counts, noise, rng)
    est = strat.estimate(m)  # R y, with the per-step variances cached per (mechanism, N, noise)
    return StreamRelease(mechanism, n, int(counts.size), noise, m, est, **common)


# ---------------------------------------------------------------------------------------------
# simulation


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


def _seed(rng: int | np.random.Generator) -> int:
    """A simulation seed: the integer given, or one drawn from a Generator (so it can be shown and retyped)."""
    if isinstance(rng, np.random.Generator):
        return int(rng.integers(0, 2**31 - 1))
    return check_seed(rng)


def simulate(data: StreamData | Any, noise: Noise, methods: str | Iterable[str], rng: int | np.random.Generator,
             *, horizon: int | None = None) -> Simulation:
    """Simulate ``methods`` (a mechanism name, a comma list, ``"all"`` or a list) on ``data`` (a
    :class:`StreamData` or an array of counts) under continuous ``noise``.

    ``rng``: the seed (every mechanism draws from ``numpy.random.default_rng(seed)``, so one seed gives
    one draw per mechanism, cached and rescaled across ε), or a Generator from which one seed is drawn
    (:attr:`Simulation.seed`). ``horizon`` N defaults to the series length.
    Not a private release: the output depends on a reproducible seed and is compared with the truth.
    """
    if not isinstance(noise, Noise):
        raise InputError(f"noise: expected a dpviz.core.noise.Noise, got {type(noise).__name__}")
    if noise.discrete:
        raise InputError("simulate draws seeded continuous noise; pass a continuous Noise "
                         "(discrete noise is for dpviz.stream.release.release)")
    seed = _seed(rng)
    n, a = checked_horizon(_series(data)[0], horizon)
    names = mechanism_list(methods if isinstance(methods, str) else list(methods), noise.family)
    mechs = {m: make_mechanism(m, n, noise) for m in names}
    rels = {m: simulated_release(mech, a, unit_errors(m, n, noise.family, seed)) for m, mech in mechs.items()}
    return Simulation(seed, noise, n, rels, mechs)


# ---------------------------------------------------------------------------------------------
# tables


def simulation_table(sim: SimulatedRelease, series: np.ndarray, timestamps: np.ndarray | None = None,
                     time_column: str | None = None) -> pd.DataFrame:
    """A simulation's download: the release columns plus ``true_total`` (a simulation may show it)."""
    df = _table(sim.prefix_sums, sim.variance, timestamps, time_column)
    df.insert(0, "mechanism", sim.mechanism)
    df["true_total"] = np.cumsum(np.asarray(series, dtype=float))[: len(df)]
    return df


def _table(prefix_sums: np.ndarray, variance: np.ndarray, timestamps: np.ndarray | None,
           time_column: str | None) -> pd.DataFrame:
    """The one column builder of the stream capability."""
    import pandas as pd

    n = int(np.asarray(prefix_sums).size)
    out: dict[str, np.ndarray] = {"t": np.arange(1, n + 1)}
    if timestamps is not None:
        out[time_column or "time"] = np.asarray(timestamps)[:n]
    var = np.asarray(variance, dtype=float)[:n]
    out |= {"released_total": np.asarray(prefix_sums), "variance": var, "std": np.sqrt(var)}
    return pd.DataFrame(out)
