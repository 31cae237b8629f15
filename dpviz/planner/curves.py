"""Error curves and accuracy-first plans: the smallest budget that meets a target error.

Every analytic mechanism of dpviz is *linear with independent noise*, so the variance of any released
quantity is the noise variance times a constant of the structure (never of the data). With continuous
noise calibrated to a budget (:class:`dpviz.core.noise.Noise`):

* Laplace (pure ε-DP): scale b = Δ₁/ε, variance 2b² ∝ 1/ε² (Dwork, McSherry, Nissim & Smith, TCC 2006);
* Gaussian (ρ-zCDP): σ² = Δ₂²/(2ρ) ∝ 1/ρ (Bun & Steinke, TCC 2016, Prop. 1.6).

So a mechanism's mean squared error is ``MSE(ε) = a/ε²`` or ``MSE(ρ) = a/ρ`` with a = its MSE at unit
budget (:attr:`Curve.unit_mse`), and the smallest budget that meets a target RMSE R is, in closed form,

    ε* = √a / R            (Laplace)          ρ* = a / R²          (Gaussian).

A Gaussian budget stated as (ε, δ) is then ρ* turned into ε at that δ by :mod:`dpviz.core.accounting`,
numerically: the exact Gaussian privacy profile (Balle & Wang, ICML 2018, Thm. 8) for continuous noise
(what :class:`~dpviz.core.noise.Noise` uses to simulate tree and stream releases), or the
Canonne–Kamath–Steinke conversion (NeurIPS 2020, Prop. 12 / Cor. 13) for discrete releases and for the
marginals pipeline (which converts (ε, δ) that way in both modes).

Discrete noise (a private release) has a variance *at most* that of the continuous noise at the same
scale: the discrete Laplace variance is 1/(2 sinh²(1/(2b))) ≤ 2b² and the discrete Gaussian's is ≤ σ²
(CKS 2020, Cor. 9). A release at the planned budget therefore meets the target as well; only a
Gaussian (ε, δ) budget differs between the modes, and :class:`Plan` reports both ε values.

Mechanisms with no closed form (a graph release and its structural metrics) are planned by Monte-Carlo
and described by a :class:`MonteCarloCurve` (tabulated mean and 95% interval at a grid of ε).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Literal

import numpy as np

from dpviz.core.accounting import (
    gaussian_epsilon,
    gaussian_rho,
    positive,
    probability,
    zcdp_epsilon,
    zcdp_rho,
)
from dpviz.core.budget import Budget
from dpviz.core.noise import FAMILIES, Family, Noise
from dpviz.errors import InputError

__all__ = [
    "Conversion",
    "Curve",
    "MonteCarloCurve",
    "Plan",
    "best_by_epsilon",
    "plan_target",
    "plans_table",
    "rmse_at_epsilon",
    "unit_noise",
]

Conversion = Literal["exact", "cks"]
"""How a capability's simulation turns Gaussian (ε, δ) into ρ: the exact Gaussian profile or the CKS bound."""


def unit_noise(family: Family) -> Noise:
    """Continuous noise at unit budget: Laplace ε = 1 or Gaussian ρ = 1 (the unit of :attr:`Curve.unit_mse`)."""
    if family not in FAMILIES:
        raise InputError(f"noise: expected 'laplace' or 'gaussian', got {family!r}")
    return Noise.laplace(1.0) if family == "laplace" else Noise.gaussian(1.0)


def _rho_at(epsilon: float, delta: float, conversion: Conversion) -> float:
    return gaussian_rho(epsilon, delta) if conversion == "exact" else zcdp_rho(epsilon, delta)


def _epsilon_at(rho: float, delta: float, conversion: Conversion) -> float:
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
        return _rho_at(epsilon, delta, self.conversion)

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
class Plan:
    """The smallest budget at which one mechanism meets the target error.

    ``budget`` is pure ε (Laplace), ρ (Gaussian, no δ given) or (ε, δ) with ε from the capability's
    simulation conversion; ``release_epsilon`` is the ε a *discrete* release needs at that δ (the CKS
    conversion; equal to ``epsilon`` for Laplace). ``rmse`` is the analytic error at the plan (= target).
    """

    capability: str
    mechanism: str
    label: str
    metric: str
    family: Family
    target: float
    epsilon: float | None
    delta: float | None
    rho: float | None
    release_epsilon: float | None
    rmse: float
    unit_mse: float

    @property
    def budget(self) -> Budget:
        if self.family == "laplace":
            return Budget.pure(self.epsilon)
        return Budget.zcdp(self.rho) if self.delta is None else Budget.approx(self.epsilon, self.delta)

    @property
    def sort_key(self) -> float:
        """ε when there is one, else ρ: plans of one request compare on the same currency."""
        return float(self.epsilon if self.epsilon is not None else self.rho)

    def as_dict(self) -> dict:
        out = asdict(self)
        out["budget"] = self.budget.describe
        return out


def _check_planned(curve: Curve, target: float, x: float, currency: str) -> float:
    """``x`` (the planned ε or ρ) if it lies within the simulation bounds (those of ``simulate`` and ``sweep``:
    :data:`~dpviz.sweep.spec.MIN_SIMULATION_EPSILON` to :data:`~dpviz.core.noise.MAX_SIMULATION_EPSILON`, or
    the ρ of those); else one InputError line saying whether the target is out of reach or met by any budget."""
    from dpviz.core.noise import MAX_SIMULATION_EPSILON, MAX_SIMULATION_RHO
    from dpviz.sweep.spec import MIN_SIMULATION_EPSILON, MIN_SIMULATION_RHO

    lo, hi = (MIN_SIMULATION_EPSILON, MAX_SIMULATION_EPSILON) if currency == "ε" else \
        (MIN_SIMULATION_RHO, MAX_SIMULATION_RHO)
    names = "EPSILON" if currency == "ε" else "RHO"
    if x > hi:
        raise InputError(f"--target-rmse {target:g}: {curve.mechanism} would need {currency} = {x:.3g}, above "
                         f"MAX_SIMULATION_{names} = {hi:g}, where the noise is already negligible: no budget meets "
                         "this target; accept a larger error")
    if not x >= lo:
        raise InputError(f"--target-rmse {target:g}: {curve.mechanism} meets it at every {currency} down to "
                         f"MIN_SIMULATION_{names} = {lo:g}, where the noise is already a million times the "
                         "sensitivity: the target says nothing; ask for a smaller error")
    return x


def plan_target(curves: Iterable[Curve], target_rmse: float, delta: float | None = None) -> list[Plan]:
    """For each curve, the smallest budget meeting ``target_rmse``; best (smallest ε, or ρ) first.

    Laplace: ε = √a/R. Gaussian: ρ = a/R², and with ``delta`` the ε of that ρ at δ (numerically, by
    :mod:`dpviz.core.accounting`: the capability's simulation conversion, and CKS for a release).
    """
    target = positive("target RMSE", target_rmse)
    if delta is not None:
        delta = probability("delta", delta)
    plans = []
    for c in curves:
        x = c.budget_for(target)
        if c.family == "laplace":
            _check_planned(c, target, x, "ε")
            eps, rho, rel = x, None, x
        else:
            rho = _check_planned(c, target, x, "ρ")
            eps = None if delta is None else _check_planned(c, target, _epsilon_at(rho, delta, c.conversion), "ε")
            rel = None if delta is None else zcdp_epsilon(rho, delta)
        plans.append(Plan(c.capability, c.mechanism, c.label, c.metric, c.family, target, eps,
                          None if c.family == "laplace" else delta, rho, rel, float(c.rmse(x)), c.unit_mse))
    families = {p.family for p in plans}
    if len(families) > 1 and delta is None:
        raise InputError("comparing Laplace and Gaussian mechanisms needs δ (ε is the common currency)")
    return sorted(plans, key=lambda p: p.sort_key)


def plans_table(plans: Sequence[Plan]):
    """The plans as a DataFrame (one row per mechanism, best first) for the page and the CLI."""
    import pandas as pd

    rows = [{"mechanism": p.mechanism, "label": p.label, "noise": p.family, "epsilon": p.epsilon,
             "delta": p.delta, "rho": p.rho, "release_epsilon": p.release_epsilon, "rmse": p.rmse,
             "budget": p.budget.describe} for p in plans]
    return pd.DataFrame(rows)


def rmse_at_epsilon(curve: Curve | MonteCarloCurve, epsilon: np.ndarray, delta: float | None = None) -> np.ndarray:
    """The error of either kind of curve at each ε (RMSE, or the Monte-Carlo metric)."""
    if isinstance(curve, MonteCarloCurve):
        return curve.value(epsilon)
    return curve.rmse_at(epsilon, delta)


def best_by_epsilon(curves: Sequence[Curve], epsilons: np.ndarray, delta: float | None = None
                    ) -> list[tuple[float, float, str]]:
    """Which mechanism has the smallest error at each ε of ``epsilons``, as runs (ε_from, ε_to, mechanism).

    With one noise family the ranking does not depend on ε (every MSE is a/ε² or a/ρ), so there is one
    run; Laplace and Gaussian mechanisms (with δ) cross: Gaussian noise wins at large ε.
    """
    if not curves:
        return []
    eps = np.asarray(epsilons, dtype=float)
    err = np.vstack([c.rmse_at(eps, delta) for c in curves])
    best = np.argmin(err, axis=0)
    runs: list[tuple[float, float, str]] = []
    start = 0
    for i in range(1, eps.size + 1):
        if i == eps.size or best[i] != best[start]:
            runs.append((float(eps[start]), float(eps[i - 1]), curves[int(best[start])].mechanism))
            start = i
    return runs
