"""Monte-Carlo trials of a capability's simulation: what a sweep (and the planner's dots) runs.

A capability's ``sweep_target`` hook (``dpviz/<cap>/hooks.py``) turns a sweep's settings into a
:class:`Target`: the data loaded once, the methods checked, shared work done once. ``target.trial(ε, seed)``
runs one simulated release of every method at ε from the trial's :class:`numpy.random.SeedSequence` and
returns :data:`Record` rows ``(method, metric, value, analytic)`` (``analytic``: the exact expectation of
``value`` where the capability has one, NaN otherwise). The tools (:mod:`dpviz.sweep`, :mod:`dpviz.planner`)
run targets; the types and the generic in-process pieces live here so that a capability never imports a tool.

Seeds: trial j at ε index i draws from ``SeedSequence(seed, spawn_key=(i, j))`` (= ``SeedSequence(seed)
.spawn(...)[i].spawn(...)[j]``, NumPy's recommended parallel streams; M. E. O'Neill, "PCG", HMC-CS-2014-0905),
so the numbers do not depend on how trials are batched or which worker runs them.

Everything here is a **simulation** (seeded continuous noise, errors against the truth), never a release.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

import numpy as np

from dpviz.core.modes import check_seed
from dpviz.core.accounting import positive
from dpviz.core.noise import MIN_EPSILON, MIN_RHO, Noise
from dpviz.errors import InputError

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["MIN_SIMULATION_EPSILON", "MIN_SIMULATION_RHO", "NAN", "ROW_BYTES", "SUMMARY_COLUMNS", "TIDY_COLUMNS",
           "categorical", "check_options", "check_trials", "child_seed", "continuous_noise",
           "estimate_trials", "int_seed", "is_path", "noise_text", "parse_epsilons", "pick_methods",
           "Record", "run_trials", "simulation_epsilon", "simulation_rho", "summarise", "Target",
           "trial_frame", "trial_seed", "TrialEstimate"]

Record = tuple[str, str, float, float]
"""(method, metric, value, analytic expectation or NaN)."""

NAN = math.nan
TIDY_COLUMNS = ("epsilon", "trial", "method", "metric", "value", "analytic")
"""One row per ε, trial, method and metric; ``analytic`` is the exact expectation of ``value`` (or NaN)."""
SUMMARY_COLUMNS = ("epsilon", "method", "metric", "trials", "mean", "std", "ci_low", "ci_high", "q025", "q975",
                   "analytic")
ROW_BYTES = 200
"""Peak memory per tidy row (the rows as built, their concatenation and the categorical columns), rounded up."""


class Target(Protocol):
    """One capability's simulation, ready to run trials (what the ``sweep_target`` hook returns).

    ``noise``: how the trials draw their noise, in words (stored with a sweep's results)."""

    capability: ClassVar[str]
    methods: tuple[str, ...]

    @property
    def name(self) -> str: ...

    @property
    def noise(self) -> str: ...

    def trial(self, epsilon: float, seed: np.random.SeedSequence) -> list[Record]: ...


@lru_cache(maxsize=64)
def continuous_noise(epsilon: float, delta: float | None) -> Noise:
    """Simulation noise at ``epsilon``: Laplace (pure ε-DP), or Gaussian calibrated to (ε, δ) when
    ``delta`` is given (the exact Gaussian profile, :meth:`Noise.gaussian_approx`). Cached: a sweep asks
    for the same few ε thousands of times."""
    return Noise.laplace(epsilon) if delta is None else Noise.gaussian_approx(epsilon, delta)


def noise_text(delta: float | None) -> str:
    """Words for :func:`continuous_noise` at ``delta``."""
    return "Laplace (pure ε-DP)" if delta is None else f"Gaussian calibrated to (ε, δ = {delta:g})"


def pick_methods(methods: str | tuple[str, ...], known: Sequence[str], what: str) -> tuple[str, ...]:
    """``"all"`` → every known method; otherwise each name checked against ``known`` (order kept)."""
    if methods == "all":
        return tuple(known)
    for m in methods:
        if m not in known:
            raise InputError(f"--methods: unknown {what} {m!r}; choose from {', '.join(known)} or all")
    return tuple(dict.fromkeys(methods))


def check_options(capability: str, defaults: Mapping[str, Any], options: Mapping[str, Any]) -> dict[str, Any]:
    """``options`` over ``defaults`` (a capability's ``SWEEP_OPTIONS``); an unknown name is an InputError."""
    unknown = sorted(set(options) - set(defaults))
    if unknown:
        raise InputError(f"{capability} sweep: unknown option {unknown[0]!r}; known: {', '.join(defaults)}")
    return {**defaults, **options}


def child_seed(seed: np.random.SeedSequence, k: int) -> np.random.SeedSequence:
    """Child ``k`` of ``seed`` (as ``seed.spawn`` would give it), without mutating ``seed``."""
    return np.random.SeedSequence(seed.entropy, spawn_key=(*seed.spawn_key, k))


def int_seed(seed: np.random.SeedSequence) -> int:
    """A 128-bit integer seed from ``seed`` (for functions that take an int seed, not a Generator)."""
    words = seed.generate_state(2, np.uint64)
    return int(words[0]) << 64 | int(words[1])


def is_path(source: object) -> bool:
    """A source still to be loaded (``sample:NAME`` or a file path), not data already in memory."""
    return isinstance(source, (str, Path))


def trial_seed(seed: int, eps_index: int, trial: int) -> np.random.SeedSequence:
    """The seed of trial ``trial`` at ε index ``eps_index``: ``SeedSequence(seed, spawn_key=(i, j))``,
    the same as ``SeedSequence(seed).spawn(n_eps)[i].spawn(n_trials)[j]`` (module docstring)."""
    return np.random.SeedSequence(check_seed(seed), spawn_key=(int(eps_index), int(trial)))


# ---- simulation bounds -------------------------------------------------------------------------------------
MIN_SIMULATION_EPSILON = MIN_EPSILON
"""The smallest ε a sweep, an audit or a plan accepts: :data:`dpviz.core.noise.MIN_EPSILON`, as simulate."""
MIN_SIMULATION_RHO = MIN_RHO
"""The smallest ρ accepted: :data:`dpviz.core.noise.MIN_RHO`."""


def simulation_epsilon(name: str, value: object) -> float:
    """``float(value)`` if it is a finite ε from :data:`MIN_SIMULATION_EPSILON` to
    :data:`~dpviz.core.noise.MAX_SIMULATION_EPSILON` (the bounds ``simulate`` has above), else InputError."""
    from dpviz.core.budget import Budget
    from dpviz.core.noise import MAX_SIMULATION_EPSILON, check_simulation_budget

    x = positive(name, value)
    if x < MIN_SIMULATION_EPSILON:
        raise InputError(f"{name}: ε = {x:g} is below MIN_SIMULATION_EPSILON = {MIN_SIMULATION_EPSILON:g}: the noise "
                         f"variances (∝ 1/ε²) would be meaningless or overflow; a simulation takes ε from "
                         f"{MIN_SIMULATION_EPSILON:g} to {MAX_SIMULATION_EPSILON:g}")
    try:
        check_simulation_budget(Budget.pure(x))
    except InputError as exc:
        raise InputError(f"{name}: {exc}") from None
    return x


def simulation_rho(name: str, value: object) -> float:
    """``float(value)`` if it is a finite ρ from :data:`MIN_SIMULATION_RHO` to
    :data:`~dpviz.core.noise.MAX_SIMULATION_RHO`, else InputError."""
    from dpviz.core.noise import MAX_SIMULATION_RHO

    x = positive(name, value)
    if not MIN_SIMULATION_RHO <= x <= MAX_SIMULATION_RHO:
        raise InputError(f"{name}: ρ = {x:g} is outside {MIN_SIMULATION_RHO:g}..{MAX_SIMULATION_RHO:g} "
                         f"(MIN_SIMULATION_RHO..MAX_SIMULATION_RHO, the ρ of ε = {MIN_SIMULATION_EPSILON:g}..1e+06): "
                         "the noise variances (∝ 1/ρ) would be meaningless, overflow or underflow")
    return x


def parse_epsilons(text: str | Sequence[float]) -> tuple[float, ...]:
    """``"0.1,0.5,1,2"`` (or a sequence of numbers) → (0.1, 0.5, 1.0, 2.0): distinct, each within the
    simulation bounds (:func:`simulation_epsilon`).

    >>> parse_epsilons("0.1, 1,2")
    (0.1, 1.0, 2.0)
    """
    if isinstance(text, str):
        parts = [p.strip() for p in text.split(",") if p.strip()]
        try:
            values: list[object] = [float(p) for p in parts]
        except ValueError:
            raise InputError(f"--epsilons: expected comma-separated positive numbers, e.g. 0.1,0.5,1,2; got {text!r}")
    elif isinstance(text, (int, float)) and not isinstance(text, bool):
        values = [text]
    else:
        values = list(text)
    if not values:
        raise InputError("--epsilons: expected at least one ε, e.g. 0.1,0.5,1,2")
    eps = tuple(simulation_epsilon("--epsilons", v) for v in values)
    if len(set(eps)) != len(eps):
        raise InputError(f"--epsilons: each ε once, got {', '.join(f'{e:g}' for e in eps)}")
    return eps


# ---- running trials in this process ------------------------------------------------------------------------
def trial_frame(target: Target, epsilon: float, eps_index: int, start: int, stop: int, seed: int) -> pd.DataFrame:
    """The tidy rows (:data:`TIDY_COLUMNS`) of trials ``start .. stop - 1`` at ``epsilon`` (index ``eps_index``)."""
    import pandas as pd

    records, trials = [], []
    for j in range(start, stop):
        rows = target.trial(epsilon, trial_seed(seed, eps_index, j))
        records += rows
        trials += [j] * len(rows)
    method, metric, value, analytic = zip(*records) if records else ((), (), (), ())
    return pd.DataFrame({"epsilon": np.full(len(records), epsilon), "trial": np.asarray(trials, np.int64),
                         "method": list(method), "metric": list(metric), "value": np.asarray(value, float),
                         "analytic": np.asarray(analytic, float)})


def run_trials(target: Target, epsilons: Sequence[float], trials: int, seed: int) -> pd.DataFrame:
    """Every trial of ``target`` at every ε, in this process, ε-major: the tidy table a sweep of the same
    settings gives (the same seeds, so the same numbers), ``method``/``metric`` as ordered categoricals."""
    import pandas as pd

    df = pd.concat([trial_frame(target, float(e), i, 0, int(trials), seed) for i, e in enumerate(epsilons)],
                   ignore_index=True)
    return categorical(df, target.methods)


def categorical(df: pd.DataFrame, methods: Sequence[str]) -> pd.DataFrame:
    """``method`` (in ``methods`` order) and ``metric`` (in order of appearance) as ordered categoricals."""
    import pandas as pd

    metrics = list(dict.fromkeys(df["metric"]))
    df["method"] = pd.Categorical(df["method"], categories=list(methods), ordered=True)
    df["metric"] = pd.Categorical(df["metric"], categories=metrics, ordered=True)
    return df


def summarise(df: pd.DataFrame) -> pd.DataFrame:
    """Per ε × method × metric: trials, mean, std, the 95% confidence interval of the mean
    (``ci_low``, ``ci_high``: mean ± t₀.₉₇₅,ₙ₋₁ · s/√n, Student's t), the central 95% of the trials
    (``q025``, ``q975``: where one release's value lands) and the analytic expectation (or NaN)."""
    from scipy.stats import t as student_t

    missing = [c for c in TIDY_COLUMNS if c not in df.columns]
    if missing:
        raise InputError(f"summarise: expected a sweep table with columns {', '.join(TIDY_COLUMNS)}; "
                         f"missing {', '.join(missing)}")
    keys = ["epsilon", "method", "metric"]
    g = df.groupby(keys, sort=False, observed=True)
    out = g["value"].agg(trials="count", mean="mean", std="std")
    q = g["value"].quantile([0.025, 0.975]).unstack()
    out["q025"], out["q975"] = q[0.025], q[0.975]
    out["analytic"] = g["analytic"].first()
    n = out["trials"].to_numpy(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        half = student_t.ppf(0.975, n - 1) * out["std"].to_numpy(float) / np.sqrt(n)
    out["ci_low"], out["ci_high"] = out["mean"] - half, out["mean"] + half
    out = out.reset_index()
    out["trials"] = out["trials"].astype(np.int64)
    out = out.sort_values(keys, kind="stable", ignore_index=True)
    return out[list(SUMMARY_COLUMNS)]


# ---- what trials cost --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TrialEstimate:
    """What running trials will cost: wall ``seconds`` (over ``parallel`` processes), peak ``memory`` of the tidy
    table (bytes) and its ``rows``; from two or three timed trials (:func:`estimate_trials`): ``per_trial``
    seconds per trial and ``setup`` seconds per ε (work done once per ε, e.g. a stream mechanism's structure)."""

    seconds: float
    memory: float
    rows: int
    per_trial: float
    parallel: int
    setup: float = 0.0


def _timed_trial(target: Target, epsilon: float, k: int) -> tuple[float, int]:
    """One trial's CPU seconds on this thread (:func:`time.thread_time`), and its rows. CPU time, not wall time:
    an estimate of the work, not of the moment's contention — timed in a niced background warm-up, or while
    another thread of the server holds the GIL, the wall time could be many times the work and the estimate
    (cached, then read by a person's run) would cut that person's trials for nothing."""
    t0 = time.thread_time()
    rows = target.trial(epsilon, np.random.SeedSequence(0, spawn_key=(k,)))
    return time.thread_time() - t0, len(rows)


def estimate_trials(target: Target, epsilons: Sequence[float], trials: int, *, parallel: int = 1,
                    at_largest: bool = True) -> TrialEstimate:
    """Estimate the cost of ``trials`` trials at every ε of ``epsilons`` by timing a few (seeds of their own:
    the results do not change): one at the smallest ε twice (the first pays any per-ε setup) and, with
    ``at_largest`` (for methods whose cost moves with ε), one at the largest. ``parallel``: processes at once."""
    eps = tuple(epsilons)
    first, rows = _timed_trial(target, min(eps), 0)
    steady, _ = _timed_trial(target, min(eps), 1)
    setup = max(0.0, first - steady)
    if at_largest and len(eps) > 1:
        last, _ = _timed_trial(target, max(eps), 2)
        steady = max(steady, last - setup)
    n = len(eps) * int(trials)
    seconds = (len(eps) * setup + n * steady) / max(1, int(parallel))
    return TrialEstimate(seconds, float(n) * rows * ROW_BYTES, n * rows, steady, max(1, int(parallel)), setup)


def check_trials(target: Target, epsilons: Sequence[float], trials: int, *, parallel: int = 1, max_seconds: float,
                 raise_with: str = "--max-seconds S") -> TrialEstimate:
    """:func:`estimate_trials`, then refuse (InputError, one line) work above ``max_seconds`` or the memory
    available."""
    from dpviz.core.limits import check_work

    est = estimate_trials(target, epsilons, trials, parallel=parallel)
    where = "" if est.parallel == 1 else f" on {est.parallel} workers"
    check_work(f"the sweep ({len(tuple(epsilons))} ε × {int(trials):,} trials, {est.rows:,} result rows{where})",
               seconds=est.seconds, memory=est.memory, max_seconds=max_seconds, raise_with=raise_with,
               cheaper="lower --trials or give fewer ε")
    return est
