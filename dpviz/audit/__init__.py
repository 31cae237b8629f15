"""dpviz.audit: empirical privacy auditing — a Clopper–Pearson lower bound on ε from repeated releases.

* :mod:`~dpviz.audit.auditor` — ``audit(release_fn, D0, D1, *, trials, event, rng, progress=None,
  alpha=0.05, epsilon=None, delta=0.0) -> AuditResult``, events (boolean feature, or a threshold on
  a statistic chosen on a held-out half), exact Clopper–Pearson bounds with a Bonferroni correction
  (Jagielski, Ullman & Oprea, NeurIPS 2020; Nasr, Song, Thakurta, Papernot & Carlini, IEEE S&P 2021;
  Google's DP-Auditorium, 2024);
* :mod:`~dpviz.audit.targets` — neighbouring pairs, release functions and default events for every
  capability (tree, stream, marginals, graph), all simulations with a seeded Generator;
* :mod:`~dpviz.audit.cli` — ``python -m dpviz audit tree|stream|marginals|graph``.

Names are imported lazily (``python -m dpviz --help`` does not load SciPy for this package).
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "audit": "auditor", "AuditResult": "auditor", "EventResult": "auditor", "Event": "auditor",
    "boolean_event": "auditor", "threshold_event": "auditor", "clopper_pearson": "auditor",
    "epsilon_lower_bound": "auditor", "format_result": "auditor", "AUDIT_NOTICE": "auditor",
    "AuditTarget": "targets", "TARGETS": "targets", "run": "targets", "tree_target": "targets",
    "stream_target": "targets", "marginals_target": "targets", "graph_target": "targets",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"dpviz.audit.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module 'dpviz.audit' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
