"""Error curves: what a capability's ``plan_curves`` hook hands the planner (MSE against the budget).

Every analytic mechanism of dpviz is *linear with independent noise*, so the variance of any released
quantity is the noise variance times a constant of the structure (never of the data). With continuous
noise calibrated to a budget (:class:`dpviz.core.noise.Noise`):

* Laplace (pure ε-DP): scale b = Δ₁/ε, variance 2b² ∝ 1/ε² (Dwork, McSherry, Nissim & Smith, TCC 2006);
* Gaussian (ρ-zCDP): σ² = Δ₂²/(2ρ) ∝ 1/ρ (Bun & Steinke, TCC 2016, Prop. 1.6).

So a mechanism's mean squared error is ``MSE(ε) = a/ε²`` or ``MSE(ρ) = a/ρ`` with a = its MSE at unit
budget (:attr:`Curve.unit_mse`, read off at :func:`unit_noise`), and the smallest budget meeting a target
RMSE R is ε* = √a / R (Laplace) or ρ* = a / R² (Gaussian) (:mod:`dpviz.planner.curves` plans with them).
Mechanisms with no closed form are tabulated by Monte-Carlo (:class:`MonteCarloCurve`); the dots next to
an analytic curve come from a capability's simulation (:class:`DotGroup`, :func:`mse_dots`).

These types live in core so that a capability's hooks build them without importing the planner.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from dpviz.core.accounting import gaussian_epsilon, gaussian_rho, positive, zcdp_epsilon, zcdp_rho
from dpviz.core.noise import FAMILIES, Family, Noise
from dpviz.errors import InputError

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["MAX_BISECTION_STEPS", "bisect_epsilon", "Conversion", "Curve", "DotGroup", "epsilon_at", "metric_dots",
           "MonteCarloCost", "MonteCarloCurve", "MonteCarloPlan", "mse_dots", "rho_at", "unit_noise"]

Conversion = Literal["exact", "cks"]
"""How a capability's simulation turns Gaussian (ε, δ) into ρ: the exact Gaussian profile or the CKS bound."""


def unit_noise(family: Family) -> Noise:
    """Continuous noise at unit budget: Laplace ε = 1 or Gaussian ρ = 1 (the unit of :attr:`Curve.unit_mse`)."""
    if family not in FAMILIES:
        raise InputError(f"noise: expected 'laplace' or 'gaussian', got {family!r}")
    return Noise.laplace(1.0) if family == "laplace" else Noise.gaussian(1.0)


def check_families(families: Iterable[str]) -> tuple[Family, ...]:
    """``families`` without repeats, each 'laplace' or 'gaussian' (InputError otherwise, or when empty)."""
    out = tuple(dict.fromkeys(families))
    bad = [f for f in out if f not in FAMILIES]
    if bad or not out:
        raise InputError(f"noise: expected laplace and/or gaussian, got {', '.join(map(str, bad)) or 'none'}")
    return out  # type: ignore[return-value]


def plan_families(noise: Any) -> tuple[Family, ...]:
    """A planned release's ``noise`` setting — laplace (or None), gaussian, both, or a list of families — as the
    families to plan."""
    if noise in (None, "laplace"):
        return ("laplace",)
    if noise == "gaussian":
        return ("gaussian",)
    if noise == "both":
        return ("laplace", "gaussian")
    if isinstance(noise, (list, tuple)):
        return check_families(noise)
    raise InputError(f"noise: expected laplace, gaussian or both, got {noise!r}")


def rho_at(epsilon: float, delta: float, conversion: Conversion) -> float:
    return gaussian_rho(epsilon, delta) if conversion == "exact" else zcdp_rho(epsilon, delta)


def epsilon_at(rho: float, delta: float, conversion: Conversion) -> float:
    return gaussian_epsilon(rho, delta) if conversion == "exact" else zcdp_epsilon(rho, delta)


@dataclass(frozen=True)
class Curve:
    """The analytic error of one mechanism: MSE = ``unit_mse``/ε² (Laplace) or ``unit_mse``/ρ (Gaussian).

    ``metric`` says what the error measures (e.g. "RMSE per node"); ``conversion`` how the capability's
    simulation turns Gaussian (ε, δ) into ρ.

    >>> c = Curve("stream", "naive", "Naive", "max per-step RMSE", "laplace", 8.0)
    >>> round(c.budget_for(2.0), 6)
    1.414214
    """

    capability: str
    mechanism: str
    label: str
    metric: str
    family: Family
    unit_mse: float
    conversion: Conversion = "exact"

    def __post_init__(self) -> None:
        if self.family not in FAMILIES:
            raise InputError(f"noise: expected 'laplace' or 'gaussian', got {self.family!r}")
        object.__setattr__(self, "unit_mse", positive(f"{self.mechanism}: MSE at unit budget", self.unit_mse))

    @property
    def currency(self) -> str:
        """The budget parameter the MSE is a power law of: ε (Laplace) or ρ (Gaussian)."""
        return "epsilon" if self.family == "laplace" else "rho"

    @property
    def power(self) -> int:
        """MSE ∝ x^-power: 2 for ε (Laplace), 1 for ρ (Gaussian)."""
        return 2 if self.family == "laplace" else 1

    def mse(self, x: float | np.ndarray) -> float | np.ndarray:
        """MSE at budget x (ε for Laplace, ρ for Gaussian)."""
        return self.unit_mse / np.power(np.asarray(x, dtype=float), self.power)

    def rmse(self, x: float | np.ndarray) -> float | np.ndarray:
        return np.sqrt(self.mse(x))

    def budget_for(self, target_rmse: float) -> float:
        """The smallest x (ε or ρ) with RMSE ≤ ``target_rmse``: (a / R²)^(1/power), computed in logs (inf or
        0.0 where it overflows or underflows a float, never an exception)."""
        r = positive("target RMSE", target_rmse)
        log_x = (math.log(self.unit_mse) - 2.0 * math.log(r)) / self.power
        return math.exp(log_x) if log_x < 709.0 else math.inf

    def rho_at(self, epsilon: float, delta: float) -> float:
        """ρ this capability's simulation spends for Gaussian (ε, δ) (exact profile or CKS)."""
        return rho_at(epsilon, delta, self.conversion)

    def rmse_at(self, epsilon: np.ndarray | float, delta: float | None = None) -> np.ndarray:
        """RMSE at each ε: Laplace directly; Gaussian through ρ(ε, δ) (needs ``delta``)."""
        eps = np.atleast_1d(np.asarray(epsilon, dtype=float))
        if self.family == "laplace":
            return np.sqrt(self.mse(eps))
        if delta is None:
            raise InputError(f"{self.label}: Gaussian noise needs δ to be drawn against ε (or plan in ρ)")
        rho = np.array([self.rho_at(float(e), delta) for e in eps])
        return np.sqrt(self.mse(rho))


@dataclass(frozen=True)
class MonteCarloCurve:
    """A tabulated error curve (no closed form): the mean metric and its 95% interval at a grid of ε.

    ``lower_is_better`` False for metrics such as an overlap in [0, 1]; :meth:`loss` is then 1 − value.
    Between grid points the mean is interpolated as a power law (linear in log ε, log loss) after
    making it monotone in ε (more budget never hurts on average; the raw means are Monte-Carlo noisy);
    below the grid the first segment's power law is extended, above it the last value is kept.
    """

    capability: str
    mechanism: str
    label: str
    metric: str
    epsilons: tuple[float, ...]
    mean: tuple[float, ...]
    lo: tuple[float, ...]
    hi: tuple[float, ...]
    trials: int
    lower_is_better: bool = True
    family: Family = "laplace"

    def __post_init__(self) -> None:
        eps = np.asarray(self.epsilons, dtype=float)
        if eps.size < 2 or np.any(np.diff(eps) <= 0) or np.any(eps <= 0):
            raise InputError(f"{self.label}: a Monte-Carlo curve needs at least two increasing ε values")
        for name in ("mean", "lo", "hi"):
            if len(getattr(self, name)) != eps.size:
                raise InputError(f"{self.label}: {name} has {len(getattr(self, name))} values for {eps.size} ε")

    def loss_points(self) -> np.ndarray:
        """The loss (lower is better) at each grid ε, made non-increasing in ε."""
        m = np.asarray(self.mean, dtype=float)
        loss = m if self.lower_is_better else 1.0 - m
        return np.minimum.accumulate(np.maximum(loss, 1e-12))

    def loss(self, epsilon: np.ndarray | float) -> np.ndarray:
        """Interpolated loss at ε (power law between and below the grid points, flat above)."""
        x = np.log(np.atleast_1d(np.asarray(epsilon, dtype=float)))
        gx, gy = np.log(np.asarray(self.epsilons, dtype=float)), np.log(self.loss_points())
        y = np.interp(x, gx, gy)
        slope = (gy[1] - gy[0]) / (gx[1] - gx[0])
        below = x < gx[0]
        y[below] = gy[0] + slope * (x[below] - gx[0])
        return np.exp(y)

    def value(self, epsilon: np.ndarray | float) -> np.ndarray:
        """The interpolated metric itself (1 − loss for a higher-is-better metric)."""
        loss = self.loss(epsilon)
        return loss if self.lower_is_better else 1.0 - loss

    def budget_for(self, target: float) -> float | None:
        """Smallest ε of the grid's range whose interpolated metric meets ``target``: None if even the
        largest ε does not, the smallest ε of the grid if it already does (no extrapolation below it)."""
        want = float(target) if self.lower_is_better else 1.0 - float(target)
        pts = self.loss_points()
        if pts[-1] > want:
            return None
        grid = np.geomspace(self.epsilons[0], self.epsilons[-1], 4001)
        ok = self.loss(grid) <= want
        return float(grid[np.argmax(ok)])


@dataclass(frozen=True)
class DotGroup:
    """Monte-Carlo dots of some analytic curves: ``run()`` gives them (columns method — the curve's mechanism —,
    epsilon, trials, value, low, high); ``target`` and ``epsilons`` are what it simulates (a
    :class:`dpviz.core.trials.Target`; for the cost estimate, :func:`dpviz.core.trials.estimate_trials`)."""

    target: Any
    epsilons: tuple[float, ...]
    run: Callable[[], pd.DataFrame]


def mse_dots(tidy: pd.DataFrame, metric: str, square: bool) -> pd.DataFrame:
    """Summarise one metric of a tidy trial table, per ε × method: √ of the mean of value² (or of value)
    and √ of its 95% confidence interval (:func:`dpviz.core.trials.summarise`); ``square=False`` for values
    that are already squared errors. √mean of the squared errors estimates the analytic RMSE."""
    import pandas as pd

    from dpviz.core.trials import summarise

    part = tidy[tidy["metric"] == metric].copy()
    if part.empty:
        raise InputError(f"Monte-Carlo: the sweep returned no {metric!r} values")
    if square:
        part["value"] = part["value"].to_numpy(float) ** 2
    s = summarise(part)
    return pd.DataFrame({"method": s["method"].astype(str), "epsilon": s["epsilon"], "trials": s["trials"],
                         "value": np.sqrt(s["mean"].clip(lower=0)), "low": np.sqrt(s["ci_low"].clip(lower=0)),
                         "high": np.sqrt(s["ci_high"].clip(lower=0))})


def metric_dots(tidy: pd.DataFrame, metric: str) -> pd.DataFrame:
    """The mean of one metric per ε × method and its 95% confidence interval (no square roots)."""
    import pandas as pd

    from dpviz.core.trials import summarise

    s = summarise(tidy[tidy["metric"] == metric])
    return pd.DataFrame({"method": s["method"].astype(str), "epsilon": s["epsilon"], "trials": s["trials"],
                         "value": s["mean"], "low": s["ci_low"], "high": s["ci_high"]})


@dataclass(frozen=True)
class MonteCarloCost:
    """The estimated cost of Monte-Carlo work over ``n_eps`` values of ε: ``setup`` seconds per ε (e.g. a
    stream mechanism's structure) and ``per_trial`` seconds per trial and ε, from timed trials."""

    n_eps: int
    setup: float
    per_trial: float

    def seconds(self, trials: int) -> float:
        return self.n_eps * (self.setup + int(trials) * self.per_trial)

    def most_trials(self, choices: Sequence[int], max_seconds: float) -> int | None:
        """The largest of ``choices`` whose estimate is within ``max_seconds`` (None if none is)."""
        fit = [int(t) for t in choices if self.seconds(int(t)) <= max_seconds]
        return max(fit) if fit else None

    def trials_within(self, trials: int, choices: Sequence[int], max_seconds: float) -> int | None:
        """``trials`` if its estimate is within ``max_seconds``, else the most of ``choices`` below it that are
        (None if none is): what a page asked for ``trials`` simulates."""
        if self.seconds(trials) <= max_seconds:
            return int(trials)
        return self.most_trials([t for t in choices if int(t) < int(trials)], max_seconds)


# ---- Monte-Carlo budget search (no closed form) ----------------------------------------------------------------
MAX_BISECTION_STEPS = 50
"""The most bisection steps of a Monte-Carlo plan: each halves the log-ε bracket, so 50 steps already pin ε to a
factor (hi/lo)^(2^-50) ≈ 1 + 10^-14, far finer than the Monte-Carlo noise of the metric."""


@dataclass(frozen=True)
class MonteCarloPlan:
    """A Monte-Carlo plan for one method: the smallest ε tried whose mean metric met the target.

    ``epsilon`` is None when even ``hi`` did not meet it. ``mean``/``se``: the metric at ``epsilon`` (or at
    ``hi``) over ``trials`` releases. ``bracket``: the last (failed, met) pair of ε; the true answer lies in
    it up to Monte-Carlo noise. ``evaluations``: every (ε, mean, se) tried, in order."""

    method: str
    metric: str
    target: float
    lower_is_better: bool
    epsilon: float | None
    mean: float
    se: float
    trials: int
    bracket: tuple[float, float]
    evaluations: tuple[tuple[float, float, float], ...] = ()

    @property
    def note(self) -> str:
        if self.epsilon is None:
            return (f"not reached: at ε = {self.bracket[1]:g} the mean {self.metric} is {self.mean:.4g} "
                    f"± {self.se:.2g} (target {self.target:g}); the method may have an error floor")
        return (f"Monte-Carlo: mean of {self.trials} releases = {self.mean:.4g} ± {self.se:.2g} (s.e.) at "
                f"ε = {self.epsilon:.4g}; the answer lies in ({self.bracket[0]:.4g}, {self.bracket[1]:.4g}] up to "
                "that noise")

    def as_dict(self) -> dict:
        return {"method": self.method, "metric": self.metric, "target": self.target,
                "lower_is_better": self.lower_is_better, "epsilon": self.epsilon, "mean": self.mean, "se": self.se,
                "trials": self.trials, "bracket": list(self.bracket), "note": self.note,
                "evaluations": [list(e) for e in self.evaluations]}


def bisect_epsilon(values: Callable[[float], np.ndarray], method: str, metric: str, target: float, lower: bool,
                   trials: int, lo: float, hi: float, steps: int) -> MonteCarloPlan:
    """Bisection on log ε in [lo, hi] for the smallest ε whose mean metric (``values(ε)``: one value per trial,
    the same trial seeds at every ε — common random numbers) meets ``target``: hi first (reachable at all?),
    then lo, then the geometric middle ``steps`` times."""
    evals: list[tuple[float, float, float]] = []

    def at(eps: float) -> tuple[float, float, bool]:
        v = values(eps)
        mean = float(v.mean())
        se = float(v.std(ddof=1) / math.sqrt(v.size)) if v.size > 1 else math.nan
        evals.append((eps, mean, se))
        return mean, se, (mean <= target) if lower else (mean >= target)

    m_hi, se_hi, ok_hi = at(hi)
    if not ok_hi:
        return MonteCarloPlan(method, metric, target, lower, None, m_hi, se_hi, trials, (hi, hi), tuple(evals))
    m_lo, se_lo, ok_lo = at(lo)
    if ok_lo:
        return MonteCarloPlan(method, metric, target, lower, lo, m_lo, se_lo, trials, (lo, lo), tuple(evals))
    a, b, best = lo, hi, (m_hi, se_hi)
    for _ in range(steps):
        mid = math.sqrt(a * b)
        m, se, ok = at(mid)
        if ok:
            b, best = mid, (m, se)
        else:
            a = mid
    return MonteCarloPlan(method, metric, target, lower, b, best[0], best[1], trials, (a, b), tuple(evals))
