"""Audit targets: a neighbouring pair, a release function and default events — from each capability's hook.

Every target is a **simulation**: the release function draws its noise from the seeded
``numpy.random.Generator`` the auditor passes in (the same discrete samplers a release uses, but
reproducible), so an audit is repeatable and never a private release. A capability builds its target in its
``audit_target(epsilon, **options)`` hook (``dpviz/<cap>/hooks.py``, reached through the registry:
:func:`target`); the inputs are tiny so that one trial costs well under a millisecond, or a few.

:func:`run` audits a target with :func:`dpviz.audit.auditor.audit`; :func:`check_audit` refuses an audit
that would not fit in time or memory before any of it runs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpviz.audit.auditor import AuditResult, Progress, audit
from dpviz.core.events import AuditTarget
from dpviz.core.registry import capability
from dpviz.errors import InputError

__all__ = ["AuditTarget", "TRIAL_BYTES", "check_audit", "run", "target"]

TRIAL_BYTES = 64
"""Peak memory per trial and event of an audit: the feature of each input (2 × 8 bytes) and the threshold
fit's pooled, sorted and unique copies, rounded up."""


def target(capability_name: str, epsilon: float = 1.0, **options: Any) -> AuditTarget:
    """The audit target of a capability at ``epsilon`` (its ``audit_target`` hook, ``options`` passed on)."""
    return capability(capability_name).hook("audit_target")(epsilon, **options)


def run(target: AuditTarget, *, trials: int, rng: np.random.Generator, progress: Progress | None = None,
        alpha: float = 0.05) -> AuditResult:
    """Audit ``target`` with ``trials`` releases on each input (:func:`dpviz.audit.auditor.audit`)."""
    if not isinstance(target, AuditTarget):
        raise InputError(f"target: expected an AuditTarget, got {type(target).__name__}")
    return audit(target.release_fn, target.D0, target.D1, trials=trials, event=target.events, rng=rng,
                 progress=progress, alpha=alpha, epsilon=target.epsilon, delta=target.delta)


def check_audit(target: AuditTarget, trials: object, *, max_seconds: float, raise_with: str = "--max-seconds S",
                calls: int = 3) -> int:
    """``trials`` as an int if an audit of ``target`` with that many releases on each input fits: its memory
    (:data:`TRIAL_BYTES` per trial and event) in what is available, and its time — ``2 × trials`` releases at
    the median time of ``calls`` timed releases (on a generator of their own: the audit's seed is untouched)
    — within ``max_seconds``. InputError (one line) otherwise, before any of the audit runs."""
    from dpviz.core.limits import check_work, seconds_per_call

    if isinstance(trials, bool) or not isinstance(trials, (int, np.integer)) or trials < 1:
        raise InputError(f"--trials: expected a positive integer, got {trials!r}")
    n = int(trials)
    what = f"an audit with --trials {n:,} ({2 * n:,} releases)"
    check_work(what, memory=float(n) * len(target.events) * TRIAL_BYTES, cheaper="lower --trials")
    rng = np.random.default_rng(0)
    per = seconds_per_call(lambda: target.release_fn(target.D0, rng), calls=calls)
    check_work(what, seconds=2.0 * n * per, max_seconds=max_seconds, raise_with=raise_with, cheaper="lower --trials")
    return n
