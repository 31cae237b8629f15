"""Privacy budgets: pure ε-DP, approximate (ε, δ)-DP and ρ-zCDP, in one validated type.

A :class:`Budget` is what a user spends on one release. Noise calibration needs it in one of two
currencies: ε (Laplace, pure DP) or ρ (Gaussian, zCDP). Turning an (ε, δ) budget into ρ depends on
what the pipeline is made of:

* only continuous Gaussian noise: the exact Gaussian privacy profile (Balle & Wang 2018), because any
  composition of Gaussian mechanisms with total ρ is exactly μ-GDP with μ = √(2ρ)
  (:func:`dpviz.core.accounting.gaussian_rho`);
* anything else that is ρ-zCDP (discrete Gaussian noise, the exponential mechanism, mixtures): the
  Canonne–Kamath–Steinke conversion (:func:`dpviz.core.accounting.zcdp_rho`), which holds for every
  ρ-zCDP mechanism.

Composition (:func:`compose`) is reported both ways: basic composition of pure ε, and zCDP
composition (ρ adds up; ε-DP is ε²/2-zCDP).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from dpviz.core.accounting import (
    gaussian_rho,
    positive,
    probability,
    pure_to_zcdp,
    zcdp_epsilon,
    zcdp_rho,
)
from dpviz.errors import InputError

BudgetKind = Literal["pure", "approx", "zcdp"]

__all__ = ["Budget", "BudgetKind", "compose"]


@dataclass(frozen=True)
class Budget:
    """A privacy budget: ε (pure), (ε, δ) (approximate) or ρ (zCDP). Validated once, here.

    >>> Budget.pure(1).describe
    'ε = 1'
    >>> Budget.approx(1, 1e-6).kind
    'approx'
    """

    epsilon: float | None = None
    delta: float | None = None
    rho: float | None = None

    def __post_init__(self) -> None:
        if self.rho is not None:
            if self.epsilon is not None or self.delta is not None:
                raise InputError("budget: give either rho (zCDP) or epsilon [with delta], not both")
            object.__setattr__(self, "rho", positive("rho", self.rho))
            return
        if self.epsilon is None:
            raise InputError("budget: expected epsilon (pure DP), epsilon with delta, or rho (zCDP)")
        object.__setattr__(self, "epsilon", positive("epsilon", self.epsilon))
        if self.delta is not None:
            object.__setattr__(self, "delta", probability("delta", self.delta))

    @classmethod
    def pure(cls, epsilon: float) -> Budget:
        return cls(epsilon=epsilon)

    @classmethod
    def approx(cls, epsilon: float, delta: float) -> Budget:
        return cls(epsilon=epsilon, delta=delta)

    @classmethod
    def zcdp(cls, rho: float) -> Budget:
        return cls(rho=rho)

    @property
    def kind(self) -> BudgetKind:
        if self.rho is not None:
            return "zcdp"
        return "pure" if self.delta is None else "approx"

    def as_rho(self, *, gaussian_only: bool) -> float:
        """ρ of the zCDP guarantee this budget allows.

        ``gaussian_only=True``: the pipeline adds continuous Gaussian noise only, so (ε, δ) → ρ by the
        exact Gaussian profile; otherwise by the CKS bound that holds for any ρ-zCDP mechanism.
        A pure budget allows ε²/2 (Bun & Steinke 2016, Prop. 1.4).
        """
        if self.kind == "zcdp":
            return float(self.rho)
        if self.kind == "pure":
            return pure_to_zcdp(self.epsilon)
        return gaussian_rho(self.epsilon, self.delta) if gaussian_only else zcdp_rho(self.epsilon, self.delta)

    def scaled(self, share: float) -> Budget:
        """This budget times ``share`` (a part of a split): ε·share (δ·share) or ρ·share."""
        share = positive("share", share)
        if self.kind == "zcdp":
            return Budget.zcdp(self.rho * share)
        return Budget(epsilon=self.epsilon * share, delta=None if self.delta is None else self.delta * share)

    @property
    def describe(self) -> str:
        if self.kind == "zcdp":
            return f"ρ = {self.rho:g}"
        if self.kind == "pure":
            return f"ε = {self.epsilon:g}"
        return f"(ε, δ) = ({self.epsilon:g}, {self.delta:.3g})"

    def as_dict(self) -> dict[str, float | str | None]:
        return {"kind": self.kind, "epsilon": self.epsilon, "delta": self.delta, "rho": self.rho}


def compose(budgets: Iterable[Budget], delta: float = 1e-6) -> dict[str, float]:
    """Total privacy of running every release in ``budgets`` on one dataset, reported both ways.

    * ``basic_epsilon`` / ``basic_delta``: basic composition (ε and δ add up); ρ-zCDP parts enter as
      their CKS (ε, ``delta``) guarantee.
    * ``rho``: zCDP composition (ρ adds up; pure ε counts as ε²/2, approximate (ε, δ) parts cannot be
      expressed in zCDP and are added separately as ``rho_extra_delta``/``rho_extra_epsilon``).
    * ``zcdp_epsilon``: the total ρ turned into (ε, ``delta``) by the CKS bound.
    """
    delta = probability("delta", delta)
    eps = dlt = rho = extra_eps = extra_delta = 0.0
    for b in budgets:
        if b.kind == "zcdp":
            eps += zcdp_epsilon(b.rho, delta)
            dlt += delta
            rho += b.rho
        elif b.kind == "pure":
            eps += b.epsilon
            rho += pure_to_zcdp(b.epsilon)
        else:
            eps += b.epsilon
            dlt += b.delta
            extra_eps += b.epsilon
            extra_delta += b.delta
    out = {"basic_epsilon": eps, "basic_delta": dlt, "rho": rho,
           "rho_extra_epsilon": extra_eps, "rho_extra_delta": extra_delta}
    out["zcdp_epsilon"] = zcdp_epsilon(rho, delta) + extra_eps if rho > 0 else extra_eps
    return out
