"""Monte-Carlo for the planner: the dots next to the analytic lines (from each capability's simulation).

**Dots.** :func:`dots` runs, in this process, the trials of a capability's own simulation at a few ε — the
groups its hooks module's ``plan_dots`` builds (:class:`dpviz.core.curves.DotGroup`: a
:class:`dpviz.core.trials.Target`, the same trials and seeds a sweep of those settings runs) — and turns each
trial's error into a squared error (e.g. rmse_NQ² for a tree, the per-cell MSE for marginals, the mean per-step
MSE for a stream), whose mean estimates the analytic MSE; the dot is √mean and its 95% band √ of the t-interval
of the mean (:func:`dpviz.core.curves.mse_dots`). :func:`dots_cost` estimates the time beforehand from a few
timed trials.

Capabilities with no closed form (a graph's structural metrics) are planned by Monte-Carlo inside their own
``plan_curves`` hook (:class:`dpviz.core.curves.MonteCarloCurve`, :func:`dpviz.core.curves.bisect_epsilon`).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import pandas as pd

from dpviz.core.curves import Curve, DotGroup, MonteCarloCost
from dpviz.core.registry import capability
from dpviz.errors import InputError

__all__ = ["DOT_COLUMNS", "MonteCarloCost", "dot_groups", "dots", "dots_cost"]

DOT_COLUMNS = ("mechanism", "epsilon", "trials", "value", "low", "high")
"""One row per mechanism and ε: the Monte-Carlo error (RMSE or metric) and its 95% interval."""


def dot_groups(curves: Sequence[Curve], source: Any, epsilons: Sequence[float], *, trials: int, seed: int,
               delta: float | None = None, options: dict | None = None) -> list[DotGroup]:
    """The work of :func:`dots`: per noise family of ``curves`` (Gaussian ones only with ``delta``), the groups
    of the capability's ``plan_dots`` (its hooks module), each a target to simulate and a ``run()`` giving its
    dots, so the work can be estimated (:func:`dots_cost`) before it is done."""
    if not curves:
        return []
    cap = curves[0].capability
    module = sys.modules[capability(cap).hook("plan_curves").__module__]
    plan_dots = getattr(module, "plan_dots", None)
    if plan_dots is None:
        raise InputError(f"Monte-Carlo dots: no analytic curves for capability {cap!r}")
    from dpviz.core.trials import parse_epsilons
    from dpviz.sweep.spec import MAX_TRIALS

    opts = dict(options or {})
    eps = parse_epsilons(epsilons)  # each within the simulation bounds, as a sweep of these settings checks
    if isinstance(trials, bool) or not isinstance(trials, int) or not 1 <= trials <= MAX_TRIALS:
        raise InputError(f"--trials: expected an integer from 1 to {MAX_TRIALS:,}, got {trials!r}")
    out: list[DotGroup] = []
    for fam in ("laplace", "gaussian"):
        group = [c for c in curves if c.family == fam]
        if not group or (fam == "gaussian" and delta is None):
            continue
        out += plan_dots(group, source, eps, trials=trials, seed=seed, delta=None if fam == "laplace" else delta,
                         options=opts)
    return out


def dots(curves: Sequence[Curve], source: Any, epsilons: Sequence[float], *, trials: int, seed: int,
         delta: float | None = None, options: dict | None = None) -> pd.DataFrame:
    """Monte-Carlo dots (:data:`DOT_COLUMNS`) for the analytic ``curves`` of one capability and metric.

    ``source``: the data the curves describe (e.g. a tree ``TreeData`` or ``sample:NAME``; a marginals
    ``Dataset``; a stream horizon N as an int). ``options``: the capability's plan settings (e.g. a tree's
    ``query``, a stream's ``metric``, the marginals ``workload``). Gaussian curves are simulated at (ε, δ), so
    they need ``delta``; curves the simulation cannot draw (ρ only, the release accounting of marginals) get
    no dots. :func:`dots_cost` estimates the time beforehand.
    """
    parts = [g.run() for g in dot_groups(curves, source, epsilons, trials=trials, seed=seed, delta=delta,
                                         options=options)]
    if not parts:
        return pd.DataFrame(columns=list(DOT_COLUMNS))
    out = pd.concat(parts, ignore_index=True).rename(columns={"method": "mechanism"})
    return out[list(DOT_COLUMNS)]


def dots_cost(curves: Sequence[Curve], source: Any, epsilons: Sequence[float], *, delta: float | None = None,
              options: dict | None = None) -> MonteCarloCost:
    """What :func:`dots` of these settings costs, from a few timed trials of each group (their own seeds);
    ``cost.seconds(trials)`` then estimates any number of trials without timing again (the cost of these
    analytic capabilities does not move with ε)."""
    from dpviz.core.trials import estimate_trials

    groups = dot_groups(curves, source, epsilons, trials=1, seed=0, delta=delta, options=options)
    if not groups:
        return MonteCarloCost(0, 0.0, 0.0)
    ests = [estimate_trials(g.target, g.epsilons, 1, at_largest=False) for g in groups]
    return MonteCarloCost(len(groups[0].epsilons), sum(e.setup for e in ests), sum(e.per_trial for e in ests))
