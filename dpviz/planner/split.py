"""One total budget, several planned releases: the split that minimises the weighted total error.

Release i gets budget x_i (ε_i or ρ_i, Σ x_i = X) and suffers loss L_i(x_i): its MSE for an analytic curve
(:class:`~dpviz.planner.curves.Curve`), its metric's loss for a Monte-Carlo one. The split minimises
Σ_i w_i L_i(x_i) with the user's weights w_i.

* **Pure ε total, basic composition** (ε's add up; Dwork & Roth, "The Algorithmic Foundations of
  Differential Privacy", 2014, Thm. 3.16). Laplace releases have L_i = a_i/ε_i²; the Lagrange condition
  2 w_i a_i / ε_i³ = λ gives the closed form ε_i = X (w_i a_i)^{1/3} / Σ_j (w_j a_j)^{1/3}.
* **ρ total, zCDP composition** (ρ's add up; Bun & Steinke, TCC 2016, Lemma 2.3). Gaussian releases have
  L_i = a_i/ρ_i; a Laplace release at ε_i is ε_i²/2-zCDP (Prop. 1.4), so it may spend ρ_i as
  ε_i = √(2ρ_i) and L_i = a_i/(2ρ_i). Then w_i a_i / ρ_i² = λ gives ρ_i = X √(w_i a_i) / Σ_j √(w_j a_j).
* **(ε, δ) total**: turned into ρ by the Canonne–Kamath–Steinke conversion
  (:func:`dpviz.core.accounting.zcdp_rho`), which holds for any mix of zCDP mechanisms, discrete ones
  included; when every release is pure ε, basic composition of ε is tried too and the better of the
  two splits is kept (each is a valid (ε, δ)-DP guarantee for the whole).
* **Numeric otherwise** (a Monte-Carlo curve has no power law): SLSQP (scipy.optimize) over the
  shares s_i = x_i/X on the simplex, started from the closed form of a power law fitted to each curve.

:func:`what_if` re-solves the split for a range of totals: every release's error as the total moves.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from dpviz.core.accounting import positive, zcdp_rho
from dpviz.core.budget import Budget
from dpviz.core.reader import strict_json
from dpviz.errors import InputError
from dpviz.planner.curves import Curve, MonteCarloCurve

__all__ = ["MAX_RELEASES", "SPLIT_COLUMNS", "Allocation", "PlannedRelease", "SplitResult", "parse_releases", "split_budget", "what_if"]

AnyCurve = Curve | MonteCarloCurve
MAX_RELEASES = 100
"""The most releases one split divides a budget over."""
SPLIT_COLUMNS = ("name", "capability", "mechanism", "weight", "share", "epsilon", "rho", "error", "metric")


@dataclass(frozen=True)
class PlannedRelease:
    """One release to plan: a name, its error curve and its weight in the total error."""

    name: str
    curve: AnyCurve
    weight: float = 1.0

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise InputError("release: every release needs a non-empty name")
        object.__setattr__(self, "weight", positive(f"release {self.name!r}: weight", self.weight))


@dataclass(frozen=True)
class Allocation:
    """What one release gets: its share of the total, its ε (and ρ under zCDP) and the error it then has
    (RMSE for an analytic curve, the metric for a Monte-Carlo one)."""

    name: str
    capability: str
    mechanism: str
    weight: float
    share: float
    epsilon: float | None
    rho: float | None
    error: float
    metric: str
    loss: float


@dataclass(frozen=True)
class SplitResult:
    """The optimal split of ``total``: one :class:`Allocation` per release, the composition used, how it was
    solved, and the objective Σ w_i L_i."""

    total: Budget
    composition: str
    method: str
    allocations: tuple[Allocation, ...]
    objective: float

    def table(self) -> pd.DataFrame:
        return pd.DataFrame([{k: getattr(a, k) for k in SPLIT_COLUMNS} for a in self.allocations],
                            columns=list(SPLIT_COLUMNS))

    def as_dict(self) -> dict:
        return {"total": self.total.as_dict(), "total_text": self.total.describe, "composition": self.composition,
                "method": self.method, "objective": self.objective,
                "releases": [{k: getattr(a, k) for k in (*SPLIT_COLUMNS, "loss")} for a in self.allocations]}


# ---- losses in a currency ------------------------------------------------------------------------------
def _loss(curve: AnyCurve, x: np.ndarray, currency: str) -> np.ndarray:
    """Loss at budget x in ``currency`` ("epsilon": basic composition; "rho": zCDP)."""
    if isinstance(curve, MonteCarloCurve):
        eps = x if currency == "epsilon" else np.sqrt(2.0 * x)
        return curve.loss(eps)
    if currency == "epsilon":
        return curve.mse(x)
    return curve.mse(x) if curve.family == "gaussian" else curve.unit_mse / (2.0 * x)


def _power_coefficient(curve: AnyCurve, currency: str) -> tuple[float, float]:
    """(a, p) with loss ≈ a / x^p in ``currency``: exact for analytic curves, fitted (log-log least squares)
    to the grid of a Monte-Carlo curve."""
    if isinstance(curve, Curve):
        if currency == "epsilon":
            return curve.unit_mse, 2.0
        return (curve.unit_mse if curve.family == "gaussian" else curve.unit_mse / 2.0), 1.0
    eps = np.asarray(curve.epsilons, dtype=float)
    x = eps if currency == "epsilon" else eps**2 / 2.0
    slope, icpt = np.polyfit(np.log(x), np.log(curve.loss_points()), 1)
    return float(np.exp(icpt)), float(max(-slope, 1e-3))


def _closed_form(weights: np.ndarray, coeffs: np.ndarray, power: float) -> np.ndarray:
    """Shares minimising Σ w_i a_i / x_i^p on the simplex: ∝ (w_i a_i)^{1/(p+1)}."""
    z = (weights * coeffs) ** (1.0 / (power + 1.0))
    return z / z.sum()


def _numeric(releases: Sequence[PlannedRelease], total: float, currency: str, start: np.ndarray) -> np.ndarray:
    from scipy.optimize import minimize

    w = np.array([r.weight for r in releases])

    def objective(s: np.ndarray) -> float:
        s = np.maximum(s, 1e-12)
        return float(sum(wi * _loss(r.curve, np.array([si * total]), currency)[0]
                         for wi, r, si in zip(w, releases, s)))

    scale = objective(start) or 1.0
    res = minimize(lambda s: objective(s) / scale, start, method="SLSQP", bounds=[(1e-9, 1.0)] * len(releases),
                   constraints=({"type": "eq", "fun": lambda s: np.sum(s) - 1.0},),
                   options={"ftol": 1e-12, "maxiter": 500})
    s = np.clip(res.x if res.success else start, 1e-12, None)
    s = s / s.sum()
    return s if objective(s) <= objective(start) else start


def _solve(releases: Sequence[PlannedRelease], total: float, currency: str) -> tuple[np.ndarray, str]:
    w = np.array([r.weight for r in releases])
    ap = [_power_coefficient(r.curve, currency) for r in releases]
    coeffs = np.array([a for a, _ in ap])
    powers = {p for _, p in ap}
    analytic = all(isinstance(r.curve, Curve) for r in releases)
    if analytic and len(powers) == 1:
        p = powers.pop()
        how = ("closed form ε_i ∝ (w_i a_i)^(1/3)" if currency == "epsilon" else "closed form ρ_i ∝ √(w_i a_i)")
        return _closed_form(w, coeffs, p), how
    start = _closed_form(w, coeffs, float(np.mean([p for _, p in ap])))
    return _numeric(releases, total, currency, start), "numeric (SLSQP on the shares)"


def _result(releases: Sequence[PlannedRelease], total: Budget, budget: float, currency: str) -> SplitResult:
    shares, how = _solve(releases, budget, currency)
    allocs = []
    objective = 0.0
    for r, s in zip(releases, shares):
        x = float(s * budget)
        loss = float(_loss(r.curve, np.array([x]), currency)[0])
        objective += r.weight * loss
        eps = x if currency == "epsilon" else (math.sqrt(2.0 * x) if r.curve.family == "laplace" else None)
        rho = None if currency == "epsilon" else x
        if isinstance(r.curve, MonteCarloCurve):
            error = float(r.curve.value(np.array([eps]))[0])
        else:
            error = math.sqrt(loss)
        allocs.append(Allocation(r.name, r.curve.capability, r.curve.mechanism, r.weight, float(s), eps, rho, error,
                                 r.curve.metric, loss))
    comp = "basic composition of ε" if currency == "epsilon" else "zCDP composition of ρ"
    return SplitResult(total, comp, how, tuple(allocs), objective)


def split_budget(releases: Sequence[PlannedRelease], total: Budget) -> SplitResult:
    """The split of ``total`` minimising Σ w_i L_i (module docstring) and the error each release gets."""
    releases = list(releases)
    if not releases:
        raise InputError("split: no releases to plan")
    names = [r.name for r in releases]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise InputError(f"split: release names must be unique; {dup[0]!r} appears twice")
    if not isinstance(total, Budget):
        raise InputError(f"split: the total must be a Budget, got {type(total).__name__}")
    all_pure = all(r.curve.family == "laplace" for r in releases)
    if total.kind == "pure":
        if not all_pure:
            bad = next(r.name for r in releases if r.curve.family != "laplace")
            raise InputError(f"split: release {bad!r} uses Gaussian noise, which has no pure ε-DP guarantee; "
                             "give the total as (ε, δ) or ρ")
        return _result(releases, total, float(total.epsilon), "epsilon")
    if total.kind == "zcdp":
        return _result(releases, total, float(total.rho), "rho")
    zcdp = _result(releases, total, zcdp_rho(total.epsilon, total.delta), "rho")
    if not all_pure:
        return zcdp
    basic = _result(releases, total, float(total.epsilon), "epsilon")
    return basic if basic.objective <= zcdp.objective else zcdp


def what_if(releases: Sequence[PlannedRelease], totals: Iterable[Budget]) -> pd.DataFrame:
    """The optimal split at each total: one row per (total, release) with its ε/ρ and error."""
    rows = []
    for t in totals:
        res = split_budget(releases, t)
        x = t.epsilon if t.kind != "zcdp" else t.rho
        for a in res.allocations:
            rows.append({"total": float(x), "name": a.name, "epsilon": a.epsilon, "rho": a.rho, "error": a.error,
                         "share": a.share})
    return pd.DataFrame(rows, columns=["total", "name", "epsilon", "rho", "error", "share"])


# ---- releases from JSON ----------------------------------------------------------------------------------
RELEASE_KEYS = ("name", "capability", "params", "weight")


def parse_releases(text: str | bytes) -> list[dict[str, Any]]:
    """A JSON list of releases ``{name, capability, params, weight}`` (weight optional, default 1), checked
    for shape only; :func:`dpviz.planner.specs.curve_for` builds each curve."""
    expected = "a JSON list of {name, capability, params, weight}"
    if isinstance(text, (bytes, bytearray)):
        try:
            text = bytes(text).decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise InputError(f"releases: not UTF-8 text ({exc.reason} at byte {exc.start}); expected {expected}") from None
    obj = strict_json(text, "releases", expected)  # NaN/inf, huge numbers and deep nesting: one InputError line
    if not isinstance(obj, list) or not obj:
        raise InputError("releases: expected a non-empty JSON list of {name, capability, params, weight}")
    if len(obj) > MAX_RELEASES:
        raise InputError(f"releases: {len(obj):,} entries, more than MAX_RELEASES = {MAX_RELEASES}")
    out = []
    for i, item in enumerate(obj, 1):
        if not isinstance(item, Mapping):
            raise InputError(f"releases: entry {i} is not an object")
        unknown = sorted(set(item) - set(RELEASE_KEYS))
        if unknown:
            raise InputError(f"releases: entry {i}: unknown key {unknown[0]!r}; expected {', '.join(RELEASE_KEYS)}")
        for key in ("name", "capability"):
            if not isinstance(item.get(key), str) or not item[key].strip():
                raise InputError(f"releases: entry {i}: {key!r} must be a non-empty string")
        params = item.get("params", {})
        if not isinstance(params, Mapping):
            raise InputError(f"releases: entry {i} ({item['name']}): 'params' must be an object")
        weight = item.get("weight", 1.0)
        if isinstance(weight, bool) or not isinstance(weight, (int, float)):
            raise InputError(f"releases: entry {i} ({item['name']}): 'weight' must be a number, got {weight!r}")
        out.append({"name": item["name"], "capability": item["capability"], "params": dict(params),
                    "weight": float(weight)})
    return out
