"""What a dataset has spent and what still fits: the ledger's composition rules.

Every release is charged in the currency its mechanism is proved in:

* **pure ε** — Laplace noise, the exponential mechanism (graph): ε-DP. Pure releases compose by
  **basic composition** (ε's add up; Dwork, McSherry, Nissim & Smith, TCC 2006; Dwork & Roth,
  *The Algorithmic Foundations of Differential Privacy*, 2014, Thm. 3.16).
* **ρ-zCDP** — (discrete) Gaussian noise, whether the user typed ρ or (ε, δ): the release is
  calibrated to the ρ of :attr:`dpviz.core.noise.Noise.rho` (for discrete noise the
  Canonne–Kamath–Steinke conversion, NeurIPS 2020, Cor. 13). Gaussian releases compose in **zCDP**
  (ρ's add up; Bun & Steinke, TCC 2016, Lemma 2.3).

The total is reported both ways, at the dataset's δ (or :data:`REPORT_DELTA` if it has none):

* ``basic``: Σε of the pure releases + the CKS ε of Σρ of the Gaussian ones (two blocks, composed
  basically: valid, δ = δ_budget);
* ``zcdp``: every release in zCDP (an ε-DP release is ε²/2-zCDP, Bun & Steinke 2016, Prop. 1.4),
  Σρ turned into ε by the CKS conversion.

Both are valid (ε, δ) guarantees, so the spent ε is the smaller one. A release **fits** a budget
(ε_B, δ_B) when, with it, the totals fit under at least one of the two ways; the largest pure ε
(or Gaussian ρ) that still fits is given in closed form through :func:`~dpviz.core.accounting.zcdp_rho`
(the largest ρ whose CKS ε is ≤ ε). A pure budget (no δ) admits pure releases only, by basic
composition. The comparison allows a relative slack of :data:`TOLERANCE` for floating-point sums
(0.1 + 0.2 > 0.3 in binary).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from dpviz.core.accounting import positive, probability, zcdp_epsilon, zcdp_rho
from dpviz.core.budget import Budget

__all__ = ["Charge", "Spent", "Room", "DatasetBudget", "REPORT_DELTA", "TOLERANCE"]

Accounting = Literal["pure", "zcdp"]
REPORT_DELTA = 1e-6
"""δ at which zCDP totals are shown as ε for a dataset whose budget has no δ (or no budget)."""
TOLERANCE = 1e-12
"""Relative slack when comparing a charge with the room left (floating-point sums only)."""


@dataclass(frozen=True)
class Charge:
    """What one release costs: ``pure`` ε, or ``zcdp`` ρ; ``stated`` is the budget the user typed."""

    accounting: Accounting
    epsilon: float | None
    rho: float
    family: str
    stated: Budget

    @classmethod
    def of_noise(cls, noise) -> Charge:
        """The charge of a release made with ``noise`` (a :class:`dpviz.core.noise.Noise`): Laplace is
        pure ε; Gaussian is the ρ the noise is calibrated to (CKS from (ε, δ) for discrete noise)."""
        if noise.family == "laplace":
            eps = float(noise.budget.epsilon)
            return cls("pure", eps, 0.5 * eps * eps, "laplace", noise.budget)
        return cls("zcdp", None, float(noise.rho), "gaussian", noise.budget)

    @property
    def describe(self) -> str:
        if self.accounting == "pure":
            return f"ε = {self.epsilon:g} (pure)"
        extra = "" if self.stated.kind == "zcdp" else f", from {self.stated.describe}"
        return f"ρ = {self.rho:.6g} (zCDP{extra})"


@dataclass(frozen=True)
class DatasetBudget:
    """A dataset's total budget: ε, and δ (None: pure ε-DP)."""

    epsilon: float
    delta: float | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", positive("--epsilon", self.epsilon))
        if self.delta is not None:
            object.__setattr__(self, "delta", probability("--delta", self.delta))

    @property
    def describe(self) -> str:
        return f"ε = {self.epsilon:g}" if self.delta is None else f"(ε, δ) = ({self.epsilon:g}, {self.delta:.3g})"

    @property
    def rho(self) -> float:
        """ρ room of the budget for zCDP releases (0 for a pure budget)."""
        return 0.0 if self.delta is None else zcdp_rho(self.epsilon, self.delta)


@dataclass(frozen=True)
class Room:
    """The largest next release that still fits: a pure ε, or a Gaussian ρ."""

    epsilon: float
    rho: float

    @property
    def describe(self) -> str:
        gauss = f"a Gaussian release of ρ ≤ {self.rho:.6g}" if self.rho > 0 else "no Gaussian release"
        return f"a Laplace (pure) release of ε ≤ {self.epsilon:.6g}, or {gauss}"

    def admits(self, charge: Charge) -> bool:
        room, cost = (self.epsilon, charge.epsilon) if charge.accounting == "pure" else (self.rho, charge.rho)
        return cost <= room * (1.0 + TOLERANCE)


def _cks_epsilon(rho: float, delta: float) -> float:
    return zcdp_epsilon(rho, delta) if rho > 0 else 0.0


@dataclass(frozen=True)
class Spent:
    """Totals of the releases charged to one dataset."""

    pure_epsilon: float = 0.0
    """Σε of the pure releases (basic composition)."""
    pure_rho: float = 0.0
    """Σε²/2 of the same releases (their zCDP view)."""
    gauss_rho: float = 0.0
    """Σρ of the Gaussian releases (zCDP composition)."""
    releases: int = 0

    def plus(self, charge: Charge) -> Spent:
        if charge.accounting == "pure":
            return Spent(self.pure_epsilon + charge.epsilon, self.pure_rho + charge.rho, self.gauss_rho,
                         self.releases + 1)
        return Spent(self.pure_epsilon, self.pure_rho, self.gauss_rho + charge.rho, self.releases + 1)

    @property
    def rho(self) -> float:
        """Every release in zCDP: Σρ."""
        return self.pure_rho + self.gauss_rho

    def epsilon_basic(self, delta: float | None) -> float:
        """Σε of the pure releases plus the CKS ε of the Gaussian block at ``delta``; inf if Gaussian
        releases exist and ``delta`` is None (they give no pure guarantee)."""
        if self.gauss_rho > 0 and delta is None:
            return math.inf
        return self.pure_epsilon + (_cks_epsilon(self.gauss_rho, delta) if self.gauss_rho > 0 else 0.0)

    def epsilon_zcdp(self, delta: float | None) -> float:
        """The CKS ε of Σρ at ``delta`` (inf for ``delta`` None unless nothing was spent)."""
        if delta is None:
            return math.inf if self.rho > 0 else 0.0
        return _cks_epsilon(self.rho, delta)

    def epsilon(self, delta: float | None) -> float:
        """The spent ε at ``delta``: the smaller of the two valid totals."""
        return min(self.epsilon_basic(delta), self.epsilon_zcdp(delta))

    def room(self, budget: DatasetBudget) -> Room:
        """The largest pure ε / Gaussian ρ a next release may spend within ``budget`` (see module doc)."""
        if budget.delta is None:
            eps = budget.epsilon - self.pure_epsilon if self.gauss_rho == 0 else 0.0
            return Room(max(0.0, eps), 0.0)
        delta, rho_b = budget.delta, budget.rho
        eps_basic = budget.epsilon - self.epsilon_basic(delta)
        eps_zcdp = math.sqrt(2.0 * max(0.0, rho_b - self.rho))
        left = budget.epsilon - self.pure_epsilon
        rho_basic = zcdp_rho(left, delta) - self.gauss_rho if left > 0 else 0.0
        return Room(max(0.0, eps_basic, eps_zcdp), max(0.0, rho_basic, rho_b - self.rho))

    def report(self, budget: DatasetBudget | None) -> dict[str, float | None]:
        """Spent (both ways) and, with a budget, what is left; δ is the budget's or :data:`REPORT_DELTA`."""
        delta = budget.delta if budget is not None and budget.delta is not None else REPORT_DELTA
        pure_only = budget is not None and budget.delta is None
        out: dict[str, float | None] = {
            "releases": self.releases,
            "delta": None if pure_only else delta,
            "epsilon_basic": self.epsilon_basic(None if pure_only else delta),
            "epsilon_zcdp": self.epsilon_zcdp(None if pure_only else delta),
            "rho": self.rho,
            "pure_epsilon": self.pure_epsilon,
            "gauss_rho": self.gauss_rho,
        }
        spent = min(out["epsilon_basic"], out["epsilon_zcdp"])
        out["epsilon_spent"] = spent
        if budget is not None:
            room = self.room(budget)
            out.update(epsilon_remaining=budget.epsilon - spent, room_epsilon=room.epsilon, room_rho=room.rho)
        return out
