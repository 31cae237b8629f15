"""The one release shape every capability returns, and the one function that describes it.

Every capability exposes the same two entry points in its ``release.py`` (issue 18)::

    release(data, noise: Noise, *, rng=None, **options) -> Release        # publish: discrete noise, OS CSPRNG
    simulate(data, noise: Noise, methods, rng, **options) -> Simulation    # teach / what-if: seeded, truth shown

A :class:`Release` (a Protocol: each capability's frozen dataclass satisfies it) carries

* ``capability`` — the registry name;
* ``values`` (a vector of released numbers) **or** ``edges`` (a released edge list), never the truth;
* ``noise`` — the total :class:`~dpviz.core.noise.Noise` (family, budget, discrete);
* ``budget`` — a :class:`BudgetSplit`: the sub-budgets the mechanism spent (per tree level, per DRF phase,
  per marginal measurement, ...), checked to compose to the total;
* ``table()`` — the published table; ``metadata()`` — ``OUT.meta.json``, built by :func:`release_metadata`
  (the one place the description of a release is assembled: mode, notice, capability, noise, budget and
  its parts, sensitivity, unit of privacy, samplers, version, time, plus the capability's settings).

Nothing in a Release is computed from the private data except through the noise.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from dpviz.core.budget import Budget
from dpviz.core.modes import RELEASE_NOTICE, SAMPLERS_NOTE, SEEDED_NOTE
from dpviz.errors import InputError

__all__ = ["BudgetSplit", "Release", "release_metadata", "SPLIT_RTOL"]

SPLIT_RTOL = 1e-9
"""Relative tolerance of :meth:`BudgetSplit.__post_init__`: parts are computed in floating point."""


def _amount(b: Budget, currency: str) -> float:
    """A budget in the currency of a split: ε (pure parts) or ρ (zCDP parts; pure ε counts ε²/2)."""
    if currency == "epsilon":
        if b.kind != "pure":
            raise InputError(f"budget split: a pure-ε total cannot hold the part {b.describe}")
        return float(b.epsilon)
    return b.as_rho(gaussian_only=False)


@dataclass(frozen=True)
class BudgetSplit:
    """The sub-budgets of one release and their total: pure parts add up in ε (basic composition); zCDP parts
    add up in ρ (Bun & Steinke 2016, Lemma 2.3). An (ε, δ) total is split in the ρ its noise was calibrated
    to, given as ``rho``. ``parts`` is ``((label, Budget), ...)``; a single part is the whole budget."""

    total: Budget
    parts: tuple[tuple[str, Budget], ...]
    rho: float | None = None

    def __post_init__(self) -> None:
        if not self.parts:
            raise InputError("budget split: no parts")
        currency = "epsilon" if self.total.kind == "pure" else "rho"
        want = float(self.total.epsilon) if currency == "epsilon" else (
            float(self.rho) if self.rho is not None else self.total.as_rho(gaussian_only=False))
        got = math.fsum(_amount(b, currency) for _, b in self.parts)
        if not math.isclose(got, want, rel_tol=SPLIT_RTOL, abs_tol=0.0):
            raise InputError(f"budget split: the parts add up to {currency} = {got:.12g}, not the total {want:.12g}")

    @classmethod
    def whole(cls, total: Budget, label: str = "all", rho: float | None = None) -> BudgetSplit:
        """One part: the whole budget (a single measurement)."""
        part = total if total.kind != "approx" else Budget.zcdp(rho if rho is not None else
                                                                total.as_rho(gaussian_only=False))
        return cls(total, ((label, part),), rho)

    @classmethod
    def shares(cls, total: Budget, labels: Iterable[str], shares: Iterable[float], rho: float | None = None
               ) -> BudgetSplit:
        """Parts ``share_i × total`` (shares summing to 1), in the split's currency."""
        labels, shares = list(labels), [float(s) for s in shares]
        if total.kind == "pure":
            parts = tuple((lab, Budget.pure(total.epsilon * s)) for lab, s in zip(labels, shares, strict=True))
        else:
            r = float(rho) if rho is not None else total.as_rho(gaussian_only=False)
            parts = tuple((lab, Budget.zcdp(r * s)) for lab, s in zip(labels, shares, strict=True))
        return cls(total, parts, rho)

    def as_dict(self) -> dict[str, Any]:
        return {"total": self.total.as_dict(), **({"rho": self.rho} if self.rho is not None else {}),
                "parts": [{"part": lab, **b.as_dict()} for lab, b in self.parts]}


@runtime_checkable
class Release(Protocol):
    """What every capability's ``release(...)`` returns (see the module docstring)."""

    capability: str
    noise: Any  # dpviz.core.noise.Noise

    @property
    def budget(self) -> BudgetSplit: ...

    def table(self) -> Any: ...

    def metadata(self) -> dict[str, Any]: ...


def release_metadata(capability: str, noise: Any, *, seeded: bool, sensitivity: float,
                     budget_split: BudgetSplit | None = None, **fields: Any) -> dict[str, Any]:
    """The description every release writes beside its table (``OUT.meta.json``): mode, capability,
    noise and budget (and its parts, ``budget_split``, when given), sensitivity, unit of privacy, samplers, version and time,
    plus the capability's own ``fields`` (settings and structure only). Nothing in it may be computed from
    the private data. Every release builds it, so it also refuses a budget whose noise vanishes
    (:func:`dpviz.core.noise.check_release_budget`; the commands check it earlier, before any work)."""
    import datetime as _dt

    import dpviz
    from dpviz.core.noise import check_release_budget
    from dpviz.core.registry import capability as _capability

    check_release_budget(noise)
    parts = {} if budget_split is None else {"budget_parts": budget_split.as_dict()["parts"]}
    return {
        "mode": "release",
        "notice": RELEASE_NOTICE,
        "capability": capability,
        "noise": noise.as_dict(),
        "noise_text": noise.describe,
        "budget_text": noise.budget.describe,
        **parts,
        "sensitivity": {"norm": "L1" if noise.family == "laplace" else "L2", "value": float(sensitivity)},
        **fields,
        "unit_of_privacy": _capability(capability).unit_of_privacy,
        "samplers": SEEDED_NOTE if seeded else SAMPLERS_NOTE,
        "dpviz_version": dpviz.__version__,
        "created_utc": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
    }
