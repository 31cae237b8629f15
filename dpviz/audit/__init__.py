"""dpviz.audit: empirical privacy auditing — a Clopper–Pearson lower bound on ε from repeated releases.

* :mod:`~dpviz.audit.auditor` — ``audit(release_fn, D0, D1, *, trials, event, rng, progress=None,
  alpha=0.05, epsilon=None, delta=0.0) -> AuditResult``, events (boolean feature, or a threshold on
  a statistic chosen on a held-out half), exact Clopper–Pearson bounds with a Bonferroni correction
  (Jagielski, Ullman & Oprea, NeurIPS 2020; Nasr, Song, Thakurta, Papernot & Carlini, IEEE S&P 2021;
  Google's DP-Auditorium, 2024);
* :mod:`~dpviz.audit.targets` — :func:`~dpviz.audit.targets.target`: a capability's neighbouring pair, release
  function and default events, from its ``audit_target`` hook (a :class:`dpviz.core.events.AuditTarget`, a
  simulation with a seeded Generator); ``run`` and ``check_audit``;
* :mod:`~dpviz.audit.cli` — ``python -m dpviz audit CAPABILITY``, one verb per registered capability.

Names are imported lazily (``python -m dpviz --help`` does not load SciPy for this package).
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "audit": "auditor", "AuditResult": "auditor", "EventResult": "auditor", "Event": "auditor",
    "boolean_event": "auditor", "threshold_event": "auditor", "clopper_pearson": "auditor",
    "epsilon_lower_bound": "auditor", "format_result": "auditor", "AUDIT_NOTICE": "auditor",
    "AuditTarget": "targets", "run": "targets", "target": "targets", "check_audit": "targets",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"dpviz.audit.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module 'dpviz.audit' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
