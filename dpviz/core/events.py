"""What an empirical privacy audit needs from a capability: events on one output and a neighbouring pair.

An ε-DP (or (ε, δ)-DP) mechanism M satisfies, for neighbouring inputs D0, D1 and every event E on its
output, P[M(D1) ∈ E] ≤ e^ε · P[M(D0) ∈ E] + δ (Dwork, McSherry, Nissim & Smith, TCC 2006, Def. 2.4), so a
frequency gap of an event between the two inputs bounds ε from below (Jagielski, Ullman & Oprea, NeurIPS
2020). A capability's ``audit_target`` hook (``dpviz/<cap>/hooks.py``) builds an :class:`AuditTarget`:
the pair, a seeded release function and the events to try. The auditor (:mod:`dpviz.audit.auditor`)
runs it; these types live here so that a capability never imports the audit tool.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from dpviz.core.modes import SIMULATION_NOTICE
from dpviz.errors import InputError

if TYPE_CHECKING:
    import numpy as np

__all__ = ["AUDIT_NOTICE", "AuditTarget", "Event", "EventKind", "ReleaseFn", "boolean_event", "threshold_event"]

AUDIT_NOTICE = (f"{SIMULATION_NOTICE}: an audit runs the mechanism many times with seeded noise and can only "
                "refute a privacy claim, never prove one")

EventKind = Literal["boolean", "threshold"]
ReleaseFn = Callable[[Any, "np.random.Generator"], Any]


@dataclass(frozen=True)
class Event:
    """An event on one output: ``feature(output)`` is a bool (``kind="boolean"``) or a number whose
    threshold is chosen on the fit half (``kind="threshold"``); ``description`` names it in words."""

    description: str
    feature: Callable[[Any], Any]
    kind: EventKind = "boolean"

    def __post_init__(self) -> None:
        if self.kind not in ("boolean", "threshold"):
            raise InputError(f"event kind: expected 'boolean' or 'threshold', got {self.kind!r}")
        if not callable(self.feature):
            raise InputError(f"event {self.description!r}: feature must be callable")


def boolean_event(description: str, predicate: Callable[[Any], bool]) -> Event:
    """Event (a): a boolean feature of the output, e.g. "the added edge appears in the output"."""
    return Event(description, predicate, "boolean")


def threshold_event(description: str, statistic: Callable[[Any], float]) -> Event:
    """Event (b): "``statistic`` > τ", τ chosen on the held-out fit half of the trials."""
    return Event(description, statistic, "threshold")


@dataclass(frozen=True)
class AuditTarget:
    """A neighbouring pair (``D0``, ``D1``), the release ``release_fn(D, rng)`` and the events to try,
    with the privacy claim (``epsilon``, ``delta``) of the mechanism as configured."""

    capability: str
    mechanism: str
    neighbours: str
    D0: Any
    D1: Any
    release_fn: ReleaseFn
    events: tuple[Event, ...]
    epsilon: float
    delta: float = 0.0
    notice: str = AUDIT_NOTICE

    @property
    def title(self) -> str:
        claim = f"ε = {self.epsilon:g}" + (f", δ = {self.delta:g}" if self.delta else "")
        return f"audit {self.capability} — {self.mechanism} at {claim}; neighbours: {self.neighbours}"
