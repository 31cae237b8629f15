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

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from functools import lru_cache

import numpy as np

from dpviz.core.accounting import positive, probability, zcdp_epsilon
from dpviz.core.budget import Budget
from dpviz.core.curves import Conversion, Curve, MonteCarloCurve, epsilon_at, rho_at, unit_noise
from dpviz.core.noise import Family
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


_epsilon_at = lru_cache(maxsize=4096)(epsilon_at)  # root-findings: a page replans the same curves on every rerun
_zcdp_epsilon = lru_cache(maxsize=4096)(zcdp_epsilon)


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
            rel = None if delta is None else _zcdp_epsilon(rho, delta)
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


@lru_cache(maxsize=64)
def _rho_grid(epsilons: bytes, delta: float, conversion: Conversion) -> np.ndarray:
    """ρ(ε, δ) at each ε of a grid (its float64 bytes), for one conversion: the same for every Gaussian curve
    of a capability, so a chart of many mechanisms converts its grid once (read-only; cached)."""
    out = np.array([rho_at(float(e), delta, conversion) for e in np.frombuffer(epsilons)])
    out.flags.writeable = False
    return out


def rmse_at_epsilon(curve: Curve | MonteCarloCurve, epsilon: np.ndarray, delta: float | None = None) -> np.ndarray:
    """The error of either kind of curve at each ε (RMSE, or the Monte-Carlo metric); a Gaussian curve's
    :meth:`Curve.rmse_at`, its ρ(ε, δ) grid shared by every curve of the same conversion."""
    if isinstance(curve, MonteCarloCurve):
        return curve.value(epsilon)
    if curve.family == "laplace" or delta is None:
        return curve.rmse_at(epsilon, delta)
    eps = np.ascontiguousarray(np.atleast_1d(np.asarray(epsilon, dtype=float)))
    return np.sqrt(curve.mse(_rho_grid(eps.tobytes(), float(delta), curve.conversion)))


def best_by_epsilon(curves: Sequence[Curve], epsilons: np.ndarray, delta: float | None = None
                    ) -> list[tuple[float, float, str]]:
    """Which mechanism has the smallest error at each ε of ``epsilons``, as runs (ε_from, ε_to, mechanism).

    With one noise family the ranking does not depend on ε (every MSE is a/ε² or a/ρ), so there is one
    run; Laplace and Gaussian mechanisms (with δ) cross: Gaussian noise wins at large ε.
    """
    if not curves:
        return []
    eps = np.asarray(epsilons, dtype=float)
    err = np.vstack([rmse_at_epsilon(c, eps, delta) for c in curves])
    best = np.argmin(err, axis=0)
    runs: list[tuple[float, float, str]] = []
    start = 0
    for i in range(1, eps.size + 1):
        if i == eps.size or best[i] != best[start]:
            runs.append((float(eps[start]), float(eps[i - 1]), curves[int(best[start])].mechanism))
            start = i
    return runs
