"""What one trial of a sweep does: the capability's own simulation, scored — reached through its hook.

:func:`prepare` turns a :class:`~dpviz.sweep.spec.SweepSpec` into a *target* (:class:`dpviz.core.trials.Target`)
by calling the capability's ``sweep_target`` hook (``dpviz/<cap>/hooks.py``, resolved by the registry): the data
(loaded once, on the client, then shipped to the workers), the validated methods and whatever can be computed
once. ``target.trial(epsilon, seed)`` runs one simulated release of every method at ``epsilon`` from the trial's
:class:`numpy.random.SeedSequence` and returns records ``(method, metric, value, analytic)``; ``analytic`` is the
exact expectation of ``value`` where the capability has one (NaN otherwise). Each capability's hooks module
documents its metrics and its settings (``SWEEP_OPTIONS``, the defaults of ``SweepSpec.options``).
"""

from __future__ import annotations

from typing import Any

from dpviz.core.registry import capability
from dpviz.core.trials import Record, Target, continuous_noise
from dpviz.sweep.spec import SweepSpec

__all__ = ["Record", "Target", "continuous_noise", "prepare", "sweep_options"]


def sweep_options(capability_name: str) -> dict[str, Any]:
    """The settings a capability's sweep takes and their defaults (its hooks module's ``SWEEP_OPTIONS``)."""
    import sys

    hook = capability(capability_name).hook("sweep_target")
    return dict(getattr(sys.modules[hook.__module__], "SWEEP_OPTIONS", {}))


def prepare(spec: SweepSpec) -> Target:
    """The target of ``spec``: data loaded, methods and options checked, shared work done once (the
    capability's ``sweep_target`` hook)."""
    return capability(spec.capability).hook("sweep_target")(spec)
