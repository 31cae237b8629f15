"""Noise: the one description of "which noise, at which budget" every capability uses.

A :class:`Noise` is a family (Laplace or Gaussian), a :class:`~dpviz.core.budget.Budget` and whether
draws are discrete (integers, for a release on integer data) or continuous (floats, for simulation).
From a sensitivity it gives the scale and the exact variance of one draw, and it draws:

* Laplace: pure ε-DP with L1 sensitivity Δ₁, scale b = Δ₁/ε (Dwork, McSherry, Nissim & Smith,
  "Calibrating Noise to Sensitivity in Private Data Analysis", TCC 2006). Discrete: P(k) ∝ e^{-|k|/b},
  ε-DP for integer queries of sensitivity Δ₁ (Canonne, Kamath & Steinke, NeurIPS 2020).
* Gaussian: ρ-zCDP with L2 sensitivity Δ₂, σ = Δ₂/√(2ρ) (Bun & Steinke, TCC 2016, Prop. 1.6; the
  discrete Gaussian satisfies the same, CKS 2020 Thm. 4). An (ε, δ) budget becomes ρ by the exact
  Gaussian profile for continuous noise, and by the CKS bound for discrete noise (the exact profile of
  a continuous Gaussian is not a proven bound for the discrete one).

Impossible combinations (Laplace with ρ or δ, Gaussian with a pure ε) raise ``InputError``.

A budget so large that the noise vanishes (``--epsilon 1e300`` gives variance 0: the "release" is the
data) is refused by every release (:func:`check_release_budget`, above :data:`MAX_RELEASE_EPSILON` or
:data:`MAX_RELEASE_RHO`) and flagged in simulations (:func:`vanishing_noise_warning`), which refuse only
a budget so large that variances ∝ 1/ε² lose all meaning (:func:`check_simulation_budget`, above
:data:`MAX_SIMULATION_EPSILON`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

import numpy as np

from dpviz.core import samplers
from dpviz.core.accounting import positive
from dpviz.core.budget import Budget
from dpviz.errors import InputError

Family = Literal["laplace", "gaussian"]
FAMILIES: tuple[Family, ...] = ("laplace", "gaussian")

__all__ = ["FAMILIES", "Family", "Noise", "MAX_RELEASE_EPSILON", "MAX_RELEASE_RHO", "MAX_SIMULATION_EPSILON",
           "MAX_SIMULATION_RHO", "MIN_EPSILON", "MIN_RHO", "check_release_budget", "check_simulation_budget", "vanishing_noise_warning"]

MAX_RELEASE_EPSILON = 30.0
"""The largest total ε a release accepts (pure ε, or the ε of an (ε, δ) budget). Why 30: it is above every
published deployment we know of (the largest, the 2020 US Census redistricting data, spent ε ≈ 19.6 in
all at δ = 1e-10), while at ε = 30 the guarantee already allows a likelihood ratio of e³⁰ ≈ 10¹³ and the
noise is at most Δ/30 (discrete Laplace on a count of sensitivity 1 at ε = 30 is 0 with probability
1 − 2e⁻³⁰/(1 + e⁻³⁰) ≈ 1 − 2·10⁻¹³). Above it a "release" is the data with a privacy label. A library caller
who must go higher assigns this module constant."""
MAX_RELEASE_RHO = MAX_RELEASE_EPSILON**2 / 2
"""The largest ρ (zCDP) a release accepts: 450 = 30²/2, the ρ that pure ε = 30 implies (Bun & Steinke 2016,
Prop. 1.4), where Gaussian noise has σ = Δ₂/30, the scale of Laplace noise at ε = 30."""
MAX_SIMULATION_EPSILON = 1e6
"""The largest ε a simulation accepts (it warns above :data:`MAX_RELEASE_EPSILON`). At 10⁶ the noise is a
millionth of the sensitivity, already nothing to see; far above it the variances ∝ 1/ε² lose precision and
finally underflow to 0 (``--epsilon 1e300``), which the estimators (GMC, least squares) cannot take."""
MAX_SIMULATION_RHO = MAX_SIMULATION_EPSILON**2 / 2
"""The largest ρ a simulation accepts (5·10¹¹, the ρ that ε = 10⁶ implies)."""
MIN_EPSILON = 1.0 / MAX_SIMULATION_EPSILON
"""The smallest ε any command accepts (simulate, release, sweep, plan, audit): 10⁻⁶. Below it the noise scale
(∝ 1/ε) is above 10⁶ per unit of sensitivity, the output is noise alone, and variances ∝ 1/ε² overflow towards
inf (``--epsilon 1e-300``) with RuntimeWarnings in the estimators."""
MIN_RHO = MIN_EPSILON**2 / 2
"""The smallest ρ any command accepts (5·10⁻¹³, the ρ of ε = 10⁻⁶)."""


@dataclass(frozen=True)
class Noise:
    """Laplace noise for ε-DP (L1 sensitivity) or Gaussian noise for ρ-zCDP (L2 sensitivity).

    >>> Noise.laplace(0.5).scale(3)
    6.0
    >>> Noise.gaussian(0.5).variance(2)
    4.0
    """

    family: Family
    budget: Budget
    discrete: bool = False

    def __post_init__(self) -> None:
        if self.family not in FAMILIES:
            raise InputError(f"noise: expected 'laplace' or 'gaussian', got {self.family!r}")
        if not isinstance(self.budget, Budget):
            raise InputError(f"noise: expected a Budget, got {type(self.budget).__name__}")
        kind = self.budget.kind
        if self.family == "laplace" and kind != "pure":
            raise InputError(f"Laplace noise gives pure ε-DP: give epsilon only, not {self.budget.describe}")
        if self.family == "gaussian" and kind == "pure":
            raise InputError("Gaussian noise needs delta (with epsilon) or rho (zCDP); "
                             f"got {self.budget.describe} (use Laplace noise for pure ε-DP)")

    # -- constructors ------------------------------------------------------------------------------
    @classmethod
    def laplace(cls, epsilon: float, *, discrete: bool = False) -> Noise:
        return cls("laplace", Budget.pure(epsilon), discrete)

    @classmethod
    def gaussian(cls, rho: float, *, discrete: bool = False) -> Noise:
        return cls("gaussian", Budget.zcdp(rho), discrete)

    @classmethod
    def gaussian_approx(cls, epsilon: float, delta: float, *, discrete: bool = False) -> Noise:
        """Gaussian noise at the largest ρ whose guarantee implies (ε, δ)-DP (see module docstring)."""
        return cls("gaussian", Budget.approx(epsilon, delta), discrete)

    @classmethod
    def from_params(cls, family: str, *, epsilon: float | None = None, delta: float | None = None,
                    rho: float | None = None, discrete: bool = False) -> Noise:
        """The one place user-typed numbers (CLI flags, page widgets) become a Noise."""
        if family == "laplace":
            if rho is not None or delta is not None:
                raise InputError("--rho/--delta: only for Gaussian noise (Laplace gives pure ε-DP)")
            if epsilon is None:
                raise InputError("--epsilon: required for Laplace noise")
            return cls.laplace(epsilon, discrete=discrete)
        if family == "gaussian":
            if rho is not None:
                if epsilon is not None or delta is not None:
                    raise InputError("--rho: give either --rho or --epsilon with --delta, not both")
                return cls.gaussian(rho, discrete=discrete)
            if epsilon is None or delta is None:
                raise InputError("Gaussian noise: give --rho, or --epsilon together with --delta")
            return cls.gaussian_approx(epsilon, delta, discrete=discrete)
        raise InputError(f"noise: expected 'laplace' or 'gaussian', got {family!r}")

    def with_budget(self, budget: Budget) -> Noise:
        return replace(self, budget=budget)

    def as_discrete(self, discrete: bool = True) -> Noise:
        return replace(self, discrete=discrete)

    # -- calibration -------------------------------------------------------------------------------
    @property
    def epsilon(self) -> float | None:
        """ε of the budget (pure or approximate); None for a ρ budget."""
        return self.budget.epsilon

    @property
    def rho(self) -> float:
        """ρ of the zCDP guarantee: the Gaussian's calibration ρ, or ε²/2 implied by Laplace."""
        return self.budget.as_rho(gaussian_only=not self.discrete)

    def scale(self, sensitivity: float) -> float:
        """Laplace scale b = Δ₁/ε, or Gaussian σ = Δ₂/√(2ρ)."""
        s = positive("sensitivity", sensitivity)
        if self.family == "laplace":
            return s / float(self.budget.epsilon)
        return s / float(np.sqrt(2.0 * self.rho))

    def variance_at(self, scale: float | np.ndarray) -> float | np.ndarray:
        """Exact variance of one draw at a given scale (b or σ), for this family and discreteness."""
        if self.discrete:
            if self.family == "laplace":
                return samplers.discrete_laplace_variance(scale)
            return samplers.discrete_gaussian_variance(scale)
        sq = np.square(scale)
        return 2.0 * sq if self.family == "laplace" else sq

    def variance(self, sensitivity: float) -> float:
        """Variance of one draw calibrated to ``sensitivity``: 2b² / σ² (continuous) or exact discrete."""
        return float(self.variance_at(self.scale(sensitivity)))

    # -- drawing -----------------------------------------------------------------------------------
    def draw(self, scale: float | np.ndarray, shape: int | tuple[int, ...],
             rng: np.random.Generator | None) -> np.ndarray:
        """Noise of the given scale(s): int64 from the discrete samplers (OS CSPRNG when ``rng`` is
        None), or float64 from ``rng`` (continuous: simulation only, ``rng`` required)."""
        if self.discrete:
            if self.family == "laplace":
                return samplers.discrete_laplace(scale, shape, rng)
            return samplers.discrete_gaussian(scale, shape, rng)
        if rng is None:
            raise InputError("continuous noise is for simulation: pass a numpy Generator "
                             "(releases use discrete noise from the OS CSPRNG)")
        return self.standard(rng, shape) * scale

    def standard(self, rng: np.random.Generator, shape: int | tuple[int, ...]) -> np.ndarray:
        """Unit-scale continuous draws Lap(1) or N(0, 1) from ``rng`` (simulation: one draw can be
        rescaled across ε values). Refused for discrete noise, which cannot be rescaled."""
        if self.discrete:
            raise InputError("discrete noise cannot be drawn at unit scale and rescaled; use draw()")
        if not isinstance(rng, np.random.Generator):
            raise InputError("simulation noise needs a numpy Generator (numpy.random.default_rng(seed))")
        return rng.laplace(0.0, 1.0, shape) if self.family == "laplace" else rng.standard_normal(shape)

    def norm(self, vectors: np.ndarray) -> np.ndarray:
        """The sensitivity norm of each row: L1 (Laplace) or L2 (Gaussian)."""
        v = np.abs(np.asarray(vectors, dtype=float))
        return v.sum(axis=-1) if self.family == "laplace" else np.sqrt((v * v).sum(axis=-1))

    @property
    def describe(self) -> str:
        """E.g. 'Laplace, ε = 1', 'discrete Gaussian, ρ = 0.0716 (from (ε, δ) = (1, 1e-06))'."""
        name = ("discrete " if self.discrete else "") + ("Laplace" if self.family == "laplace" else "Gaussian")
        if self.family == "laplace":
            return f"{name}, ε = {self.budget.epsilon:g}"
        if self.budget.kind == "zcdp":
            return f"{name}, ρ = {self.rho:g}"
        return f"{name}, ρ = {self.rho:.4g} (from {self.budget.describe})"

    def as_dict(self) -> dict:
        out = {"family": self.family, "discrete": self.discrete, "budget": self.budget.as_dict()}
        if self.family == "gaussian":
            out["calibrated_rho"] = self.rho
        return out


def _above_bound(budget: Budget | Noise, max_eps: float, max_rho: float, names: str = "RELEASE") -> str | None:
    """What in ``budget`` is above (max_eps, max_rho) (None if nothing)."""
    b = budget.budget if isinstance(budget, Noise) else budget
    if not isinstance(b, Budget):
        raise InputError(f"budget: expected a Budget or a Noise, got {type(budget).__name__}")
    if b.epsilon is not None and b.epsilon > max_eps:
        return f"ε = {b.epsilon:g} is above MAX_{names}_EPSILON = {max_eps:g}"
    if b.kind == "zcdp" and b.rho > max_rho:
        return f"ρ = {b.rho:g} is above MAX_{names}_RHO = {max_rho:g} (= {max_eps:g}²/2)"
    return None


def _below_bound(budget: Budget | Noise) -> str | None:
    """What in ``budget`` is below (:data:`MIN_EPSILON`, :data:`MIN_RHO`) (None if nothing)."""
    b = budget.budget if isinstance(budget, Noise) else budget
    if b.epsilon is not None and b.epsilon < MIN_EPSILON:
        return (f"ε = {b.epsilon:g} is below MIN_EPSILON = {MIN_EPSILON:g}: the noise (scale ∝ 1/ε) would drown "
                f"everything; use ε from {MIN_EPSILON:g} to {float(MAX_SIMULATION_EPSILON):g}")
    if b.kind == "zcdp" and b.rho < MIN_RHO:
        return (f"ρ = {b.rho:g} is below MIN_RHO = {MIN_RHO:g} (= {MIN_EPSILON:g}²/2): the noise would drown "
                "everything")
    return None


def _above_release_bound(budget: Budget | Noise) -> str | None:
    return _above_bound(budget, float(MAX_RELEASE_EPSILON), float(MAX_RELEASE_RHO))


def check_release_budget(budget: Budget | Noise) -> Budget | Noise:
    """``budget`` unchanged if a release may spend it; InputError if the noise would vanish (ε above
    :data:`MAX_RELEASE_EPSILON`, or ρ above :data:`MAX_RELEASE_RHO`). Every release checks it before any work."""
    low = _below_bound(budget)
    if low is not None:
        raise InputError(f"release refused: {low}")
    problem = _above_release_bound(budget)
    if problem is not None:
        raise InputError(f"release refused: {problem}: the noise would be negligible and the release would publish "
                         "the data almost unchanged; "
                         f"spend at most ε = {float(MAX_RELEASE_EPSILON):g} (ρ = {float(MAX_RELEASE_RHO):g}), or "
                         "use simulate for a what-if (the bound is dpviz.core.noise.MAX_RELEASE_EPSILON / "
                         "MAX_RELEASE_RHO for library callers)")
    return budget


def vanishing_noise_warning(budget: Budget | Noise) -> str | None:
    """A one-line warning for a simulation whose budget a release would refuse (None if the budget is fine):
    its noise is negligible and the simulated output is the truth almost unchanged."""
    problem = _above_release_bound(budget)
    if problem is None:
        return None
    return f"{problem}: the noise is negligible, so this simulation shows the data almost unchanged (a release refuses it)"


def check_simulation_budget(budget: Budget | Noise) -> Budget | Noise:
    """``budget`` unchanged unless it is above :data:`MAX_SIMULATION_EPSILON` / :data:`MAX_SIMULATION_RHO`
    (InputError: the variances would be meaningless or 0) or below :data:`MIN_EPSILON` / :data:`MIN_RHO`."""
    low = _below_bound(budget)
    if low is not None:
        raise InputError(low)
    problem = _above_bound(budget, float(MAX_SIMULATION_EPSILON), float(MAX_SIMULATION_RHO), "SIMULATION")
    if problem is not None:
        raise InputError(f"{problem}: the noise variances (∝ 1/ε²) would be meaningless or underflow to 0; a "
                         f"simulation takes at most ε = {float(MAX_SIMULATION_EPSILON):g} "
                         f"(ρ = {float(MAX_SIMULATION_RHO):g}), where the noise is already negligible")
    return budget
