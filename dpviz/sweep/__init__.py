"""Monte-Carlo sweeps: many simulated releases over an ε grid × trials × methods, in-process or on Dask.

Teaching and planning need the *distribution* of a mechanism's error, not one draw: the mean and its
95% interval at each ε, per method, next to the analytic variance where one exists. A sweep runs a
capability's own simulation code — the :class:`dpviz.core.trials.Target` its ``sweep_target`` hook builds
(``dpviz/<cap>/hooks.py``, reached through the registry) — once per (ε, trial) and collects a tidy table:
one row per ε, trial, method and metric.

* :class:`~dpviz.sweep.spec.SweepSpec` — what to run (capability, data, ε grid, trials, methods, seed).
* :func:`~dpviz.sweep.runner.run` — ``run(spec, *, client=None, progress=None) -> pandas.DataFrame``:
  sequential in this process with ``client=None``, or as Dask tasks (several trials per task) on a
  ``distributed.Client`` — a :class:`distributed.LocalCluster` or a real cluster, same code.
* :func:`~dpviz.sweep.runner.summarise` — mean, 95% confidence interval of the mean, central 95% of the
  trials and the analytic value, per ε × method × metric.

Seeds: trial j at ε index i draws from ``numpy.random.default_rng(SeedSequence(seed, spawn_key=(i, j)))``
(= ``SeedSequence(seed).spawn(...)[i].spawn(...)[j]``), so the numbers do not depend on how trials are
batched or which worker runs them: a sharded sweep equals the in-process one, bit for bit.

Everything here is a **simulation** (seeded continuous noise, errors against the truth), never a release.
This package imports nothing heavy until a name is used (``python -m dpviz --help`` stays fast).
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "CAPABILITIES",
    "SUMMARY_COLUMNS",
    "TIDY_COLUMNS",
    "SweepSpec",
    "Task",
    "open_client",
    "parse_epsilons",
    "plan_tasks",
    "prepare",
    "run",
    "summarise",
    "trial_seed",
    "write_parquet",
]

_HOME = {
    "SweepSpec": "dpviz.sweep.spec", "Task": "dpviz.sweep.spec", "trial_seed": "dpviz.sweep.spec",
    "plan_tasks": "dpviz.sweep.spec", "parse_epsilons": "dpviz.sweep.spec", "CAPABILITIES": "dpviz.sweep.spec",
    "prepare": "dpviz.sweep.targets",
    "run": "dpviz.sweep.runner", "summarise": "dpviz.sweep.runner", "open_client": "dpviz.sweep.runner",
    "write_parquet": "dpviz.sweep.runner", "TIDY_COLUMNS": "dpviz.sweep.runner",
    "SUMMARY_COLUMNS": "dpviz.sweep.runner",
}


def __getattr__(name: str) -> Any:  # PEP 562: import the heavy modules on first use only
    if name in _HOME:
        import importlib

        return getattr(importlib.import_module(_HOME[name]), name)
    raise AttributeError(f"module 'dpviz.sweep' has no attribute {name!r}")
