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

__all__ = ["FAMILIES", "Family", "Noise"]


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
