"""Monte-Carlo for the planner: the dots next to the analytic lines, and graph plans (no closed form).

**Dots.** :func:`dots` runs a sweep (:func:`dpviz.sweep.run`, in this process) of the capability's own
simulation at a few ε and turns each trial's error into a squared error (rmse_NQ² or rmse_RQ² for a tree,
the per-cell MSE for marginals, the mean per-step MSE for a stream), whose mean estimates the analytic
MSE; the dot is √mean and its 95% band √ of the t-interval of the mean
(:func:`dpviz.sweep.summarise`). A stream's ``max`` metric is the squared error at the step where the
analytic variance peaks; the sweep does not record that step, so those trials are drawn here with the
sweep's own seeds (:func:`dpviz.sweep.spec.trial_seed`) and the same simulation
(:meth:`dpviz.stream.simulation.Mechanism.errors`). Graph metrics are used as they are.

**Graph plans.** :func:`graph_plan` finds, per method, the smallest ε whose mean metric over ``trials``
simulated releases meets a target, by bisection on log ε between ``lo`` and ``hi``. The same trial seeds
are used at every ε (common random numbers: the comparison between two ε is not swamped by the noise of
two independent draws). The answer is a Monte-Carlo estimate: it reports the mean and its standard error
at the chosen ε and the last bracket, and it can move by a bisection step between seeds.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from dpviz.errors import InputError
from dpviz.planner.curves import Curve, MonteCarloCurve

__all__ = [
    "DOT_COLUMNS",
    "GRAPH_METRICS",
    "GraphPlan",
    "MonteCarloCost",
    "MAX_BISECTION_STEPS",
    "MAX_GRAPH_TRIALS",
    "check_graph_plan",
    "dots",
    "dots_cost",
    "dots_from_sweep",
    "graph_cost",
    "graph_curves",
    "graph_metric",
    "graph_plan",
    "metric_lower_is_better",
]

DOT_COLUMNS = ("mechanism", "epsilon", "trials", "value", "low", "high")
"""One row per mechanism and ε: the Monte-Carlo error (RMSE or metric) and its 95% interval."""
MAX_BISECTION_STEPS = 50
"""The most bisection steps of a graph plan: each halves the log-ε bracket, so 50 steps already pin ε to a
factor (hi/lo)^(2^-50) ≈ 1 + 10^-14, far finer than the Monte-Carlo noise of the metric."""
MAX_GRAPH_TRIALS = 1000
"""The most simulated releases per ε of a graph plan or curve."""
MAX_GRAPH_EPSILONS = 100
"""The most grid points of a graph curve (``epsilons`` of a releases JSON)."""


def _mse_summary(tidy: pd.DataFrame, metric: str, square: bool) -> pd.DataFrame:
    """Summarise one metric of a sweep's tidy table, per ε × method: √ of the mean of value² (or of value)
    and √ of its 95% confidence interval; ``square=False`` for values that are already squared errors."""
    from dpviz.sweep import summarise

    part = tidy[tidy["metric"] == metric].copy()
    if part.empty:
        raise InputError(f"Monte-Carlo: the sweep returned no {metric!r} values")
    if square:
        part["value"] = part["value"].to_numpy(float) ** 2
    s = summarise(part)
    return pd.DataFrame({"method": s["method"].astype(str), "epsilon": s["epsilon"], "trials": s["trials"],
                         "value": np.sqrt(s["mean"].clip(lower=0)), "low": np.sqrt(s["ci_low"].clip(lower=0)),
                         "high": np.sqrt(s["ci_high"].clip(lower=0))})


def _metric_summary(tidy: pd.DataFrame, metric: str) -> pd.DataFrame:
    from dpviz.sweep import summarise

    s = summarise(tidy[tidy["metric"] == metric])
    return pd.DataFrame({"method": s["method"].astype(str), "epsilon": s["epsilon"], "trials": s["trials"],
                         "value": s["mean"], "low": s["ci_low"], "high": s["ci_high"]})


def dots_from_sweep(spec: Any, metric: str, *, square: bool = True) -> pd.DataFrame:
    """Run ``spec`` (a :class:`dpviz.sweep.SweepSpec`) in this process and summarise ``metric`` per ε and
    method: √mean of the squared errors (``square``) or the mean metric (``square=None``)."""
    from dpviz.sweep import run

    tidy = run(spec)
    return _metric_summary(tidy, metric) if square is None else _mse_summary(tidy, metric, square)


def _stream_max_dots(curves: Sequence[Curve], horizon: int, epsilons: Sequence[float], trials: int, seed: int,
                     delta: float | None) -> pd.DataFrame:
    """The squared error at each mechanism's peak-variance step, with the sweep's per-trial seeds."""
    from dpviz.stream.simulation import make_mechanism
    from dpviz.sweep.spec import trial_seed
    from dpviz.sweep.targets import continuous_noise

    rows = []
    for c in curves:
        name = c.mechanism.split("/")[0]
        for i, eps in enumerate(epsilons):
            mech = make_mechanism(name, horizon, continuous_noise(float(eps), delta))
            t_star = int(np.argmax(mech.per_step_variance()))
            sq = np.array([mech.errors(np.random.default_rng(trial_seed(seed, i, j)), 1)[0, t_star] ** 2
                           for j in range(trials)])
            rows += [{"epsilon": float(eps), "trial": j, "method": c.mechanism, "metric": "peak_sq_error",
                      "value": float(v), "analytic": math.nan} for j, v in enumerate(sq)]
    return _mse_summary(pd.DataFrame(rows), "peak_sq_error", square=False)


def _dot_groups(curves: Sequence[Curve], source: Any, epsilons: Sequence[float], *, trials: int, seed: int,
                delta: float | None, options: dict | None) -> list[tuple[Any, Callable[[], pd.DataFrame]]]:
    """The work of :func:`dots`, one (sweep spec, run) pair per group of curves: ``run()`` gives the group's
    dots; the spec is what it simulates (for a stream's ``max`` metric, a sweep of the same cost), so the work
    can be estimated (:func:`dots_cost`) before it is done."""
    from dpviz.sweep import SweepSpec

    if not curves:
        return []
    opts = dict(options or {})
    cap = curves[0].capability
    eps = tuple(float(e) for e in epsilons)
    out: list[tuple[Any, Callable[[], pd.DataFrame]]] = []
    for fam in ("laplace", "gaussian"):
        group = [c for c in curves if c.family == fam]
        d = None if fam == "laplace" else delta
        if not group or (fam == "gaussian" and delta is None):
            continue
        if cap == "tree":
            query = opts.get("query", "node")
            for split in dict.fromkeys(c.mechanism.split("/")[1] for c in group):
                names = {c.mechanism.split("/")[0]: c.mechanism for c in group if c.mechanism.split("/")[1] == split}
                spec = SweepSpec("tree", source, eps, trials, tuple(names), seed, d,
                                 options={"split": split, "queries": int(opts.get("queries", 2000))})

                def run(spec=spec, names=names, query=query) -> pd.DataFrame:
                    s = dots_from_sweep(spec, "rmse_NQ" if query == "node" else "rmse_RQ")
                    s["method"] = s["method"].map(names)
                    return s
                out.append((spec, run))
        elif cap == "stream":
            horizon = int(source)
            names = {c.mechanism.split("/")[0]: c.mechanism for c in group}
            spec = SweepSpec("stream", np.zeros(horizon, dtype=np.int64), eps, trials, tuple(names), seed, d)
            if opts.get("metric", "max") == "max":
                def run(group=group, d=d) -> pd.DataFrame:
                    return _stream_max_dots(group, horizon, eps, trials, seed, d)
            else:
                def run(spec=spec, names=names) -> pd.DataFrame:
                    s = dots_from_sweep(spec, "mse", square=False)
                    s["method"] = s["method"].map(names)
                    return s
            out.append((spec, run))
        elif cap == "marginals":
            if not any(c.mechanism == "rp" for c in group):
                continue
            wl = opts.get("workload", 2)
            wl = wl if isinstance(wl, (int, str)) else [list(g) for g in wl]
            spec = SweepSpec("marginals", source, eps, trials, ("mle",), seed, d,
                             options={"workload": wl, "mechanism": "rp"})

            def run(spec=spec) -> pd.DataFrame:
                s = dots_from_sweep(spec, "cell_mse", square=False)
                s["method"] = "rp"
                return s
            out.append((spec, run))
        else:
            raise InputError(f"Monte-Carlo dots: no analytic curves for capability {cap!r}")
    return out


def dots(curves: Sequence[Curve], source: Any, epsilons: Sequence[float], *, trials: int, seed: int,
         delta: float | None = None, options: dict | None = None) -> pd.DataFrame:
    """Monte-Carlo dots (:data:`DOT_COLUMNS`) for the analytic ``curves`` of one capability and metric.

    ``source``: the data the curves describe (a tree ``TreeData`` or ``sample:NAME``; a marginals
    ``Dataset``; a stream horizon N as an int). ``options``: tree ``query`` (node|range); stream ``metric``
    (max|mean); marginals ``workload``. Gaussian curves are simulated at (ε, δ) (the sweep calibrates
    Gaussian noise to (ε, δ)), so they need ``delta``; curves the simulation cannot draw (ρ only, the
    release accounting of marginals) get no dots. :func:`dots_cost` estimates the time beforehand.
    """
    parts = [run() for _, run in _dot_groups(curves, source, epsilons, trials=trials, seed=seed, delta=delta,
                                             options=options)]
    if not parts:
        return pd.DataFrame(columns=list(DOT_COLUMNS))
    out = pd.concat(parts, ignore_index=True).rename(columns={"method": "mechanism"})
    return out[list(DOT_COLUMNS)]


@dataclass(frozen=True)
class MonteCarloCost:
    """The estimated cost of Monte-Carlo work over ``n_eps`` values of ε: ``setup`` seconds per ε (e.g. a
    stream mechanism's structure) and ``per_trial`` seconds per trial and ε, from timed trials."""

    n_eps: int
    setup: float
    per_trial: float

    def seconds(self, trials: int) -> float:
        return self.n_eps * (self.setup + int(trials) * self.per_trial)

    def most_trials(self, choices: Sequence[int], max_seconds: float) -> int | None:
        """The largest of ``choices`` whose estimate is within ``max_seconds`` (None if none is)."""
        fit = [int(t) for t in choices if self.seconds(int(t)) <= max_seconds]
        return max(fit) if fit else None


def _cost(specs: Sequence[Any], *, at_largest: bool) -> MonteCarloCost:
    from dpviz.sweep.runner import estimate

    if not specs:
        return MonteCarloCost(0, 0.0, 0.0)
    ests = [estimate(spec, at_largest=at_largest) for spec in specs]
    return MonteCarloCost(len(specs[0].epsilons), sum(e.setup for e in ests), sum(e.per_trial for e in ests))


def dots_cost(curves: Sequence[Curve], source: Any, epsilons: Sequence[float], *, delta: float | None = None,
              options: dict | None = None) -> MonteCarloCost:
    """What :func:`dots` of these settings costs, from a few timed trials of each group (their own seeds);
    ``cost.seconds(trials)`` then estimates any number of trials without timing again."""
    groups = _dot_groups(curves, source, epsilons, trials=1, seed=0, delta=delta, options=options)
    return _cost([spec for spec, _ in groups], at_largest=False)  # tree, stream, marginals: cost does not move with ε


# ---- graph ----------------------------------------------------------------------------------------------
def _graph_metric_functions() -> dict[str, Callable[..., float]]:
    from dpviz.graph import metrics as gm

    return {
        "degree_kl": lambda t, r, n, rng: gm.degree_kl(t, r, n),
        "rrdc": lambda t, r, n, rng: gm.rrdc(t, r, n),
        "cut_error": lambda t, r, n, rng: gm.cut_error(t, r, n, rng),
        "clustering_rel_error": lambda t, r, n, rng: gm.clustering_rel_error(t, r, n),
        "modularity_rel_error": lambda t, r, n, rng: gm.modularity_rel_error(t, r, n),
        "eigen_top1_overlap": lambda t, r, n, rng: gm.eigen_top1_overlap(t, r, n),
        "edge_jaccard": lambda t, r, n, rng: gm.edge_jaccard(t, r, n),
    }


GRAPH_METRICS: tuple[str, ...] = ("degree_kl", "rrdc", "cut_error", "clustering_rel_error", "modularity_rel_error",
                                  "eigen_top1_overlap", "edge_jaccard")
"""The graph metrics a plan can target (:data:`dpviz.graph.metrics.METRIC_INFO` without the edge counts)."""


def metric_lower_is_better(metric: str) -> bool:
    from dpviz.graph.metrics import HIGHER, METRIC_INFO

    if metric not in GRAPH_METRICS:
        raise InputError(f"--metric: expected one of {', '.join(GRAPH_METRICS)}, got {metric!r}")
    return METRIC_INFO[metric][1] != HIGHER


def graph_metric(graph: Any, method: str, metric: str, epsilon: float, seeds: Sequence[np.random.SeedSequence]
                 ) -> np.ndarray:
    """``metric`` of ``len(seeds)`` simulated releases of ``graph`` by ``method`` at ε (one seed each:
    child 0 draws the release, child 1 the metric's own randomness, e.g. the cut queries)."""
    from dpviz.graph.release import PRIVATE_METHODS, release

    metric_lower_is_better(metric)
    if method not in PRIVATE_METHODS:
        raise InputError(f"--method: a plan is for an edge-DP method ({', '.join(PRIVATE_METHODS)}), got {method!r}")
    f = _graph_metric_functions()[metric]
    out = np.empty(len(seeds))
    for k, s in enumerate(seeds):
        rel_seed, metric_seed = s.spawn(2)
        rel = release(graph.edges, graph.n_nodes, epsilon, method, np.random.default_rng(rel_seed))
        out[k] = f(graph.edges, rel.edges, graph.n_nodes, np.random.default_rng(metric_seed))
    return out


@dataclass(frozen=True)
class GraphPlan:
    """A Monte-Carlo plan for one graph method: the smallest ε tried whose mean metric met the target.

    ``epsilon`` is None when even ``hi`` did not meet it. ``mean``/``se``: the metric at ``epsilon`` (or at
    ``hi``) over ``trials`` releases. ``bracket``: the last (failed, met) pair of ε; the true answer lies in
    it up to Monte-Carlo noise. ``evaluations``: every (ε, mean, se) tried, in order."""

    method: str
    metric: str
    target: float
    lower_is_better: bool
    epsilon: float | None
    mean: float
    se: float
    trials: int
    bracket: tuple[float, float]
    evaluations: tuple[tuple[float, float, float], ...] = field(default=())

    @property
    def note(self) -> str:
        if self.epsilon is None:
            return (f"not reached: at ε = {self.bracket[1]:g} the mean {self.metric} is {self.mean:.4g} ± {self.se:.2g} "
                    f"(target {self.target:g}); the method may have an error floor")
        return (f"Monte-Carlo: mean of {self.trials} releases = {self.mean:.4g} ± {self.se:.2g} (s.e.) at "
                f"ε = {self.epsilon:.4g}; the answer lies in ({self.bracket[0]:.4g}, {self.bracket[1]:.4g}] up to "
                "that noise")

    def as_dict(self) -> dict:
        return {"method": self.method, "metric": self.metric, "target": self.target,
                "lower_is_better": self.lower_is_better, "epsilon": self.epsilon, "mean": self.mean, "se": self.se,
                "trials": self.trials, "bracket": list(self.bracket), "note": self.note,
                "evaluations": [list(e) for e in self.evaluations]}


def check_graph_plan(metric: str, target: float, *, trials: int, lo: float, hi: float, steps: int
                     ) -> tuple[float, float, float, int, int]:
    """The settings of a graph plan checked (no data read yet): (target, lo, hi, trials, steps). ``target``
    finite; ``lo`` < ``hi`` within the simulation bounds (:func:`dpviz.sweep.spec.simulation_epsilon`);
    ``trials`` 1..:data:`MAX_GRAPH_TRIALS`; ``steps`` 1..:data:`MAX_BISECTION_STEPS`."""
    from dpviz.sweep.spec import simulation_epsilon

    metric_lower_is_better(metric)
    if isinstance(target, bool) or not isinstance(target, (int, float)) or not math.isfinite(target):
        raise InputError(f"--target: expected a finite number, got {target!r}")
    lo, hi = simulation_epsilon("--lo", lo), simulation_epsilon("--hi", hi)
    if not lo < hi:
        raise InputError(f"ε range: expected --lo < --hi, got {lo:g} and {hi:g}")
    if isinstance(trials, bool) or not isinstance(trials, int) or not 1 <= trials <= MAX_GRAPH_TRIALS:
        raise InputError(f"--trials: expected an integer from 1 to {MAX_GRAPH_TRIALS}, got {trials!r}")
    if isinstance(steps, bool) or not isinstance(steps, int) or not 1 <= steps <= MAX_BISECTION_STEPS:
        raise InputError(f"--steps: expected an integer from 1 to {MAX_BISECTION_STEPS} (MAX_BISECTION_STEPS: each "
                         f"step halves the log-ε bracket), got {steps!r}")
    return float(target), lo, hi, trials, steps


def _check_graph_time(graph: Any, metric: str, methods: Sequence[str], epsilon: float, releases: int,
                      max_seconds: float, what: str, cheaper: str) -> None:
    """Time one simulated release (and its metric) per method at ``epsilon`` and refuse (one line) if
    ``releases`` of each are estimated to take more than ``max_seconds``."""
    from dpviz.core.limits import check_work, seconds_per_call

    per = sum(seconds_per_call(lambda m=m: graph_metric(graph, m, metric, epsilon, [np.random.SeedSequence(0)]),
                               calls=1) for m in methods)
    check_work(what, seconds=per * releases, max_seconds=max_seconds, cheaper=cheaper)


def graph_plan(graph: Any, metric: str, target: float, methods: Sequence[str], *, seed: int, trials: int = 4,
               lo: float = 0.05, hi: float = 20.0, steps: int = 7, max_seconds: float | None = None
               ) -> list[GraphPlan]:
    """Bisection on log ε in [lo, hi] per method (module docstring); best (smallest ε) first, unreachable last.
    ``max_seconds``: refuse (InputError, before the bisection) a plan estimated, from one timed release per
    method at ``hi``, to take longer (None: no limit)."""
    from dpviz.core.modes import check_seed

    lower = metric_lower_is_better(metric)
    target, lo, hi, trials, steps = check_graph_plan(metric, target, trials=trials, lo=lo, hi=hi, steps=steps)
    root = check_seed(seed)
    if max_seconds is not None:
        _check_graph_time(graph, metric, methods, hi, (steps + 2) * trials, max_seconds,
                          f"a graph plan of {len(methods)} method(s) × {steps + 2} ε × {trials} trials",
                          "lower --trials or --steps, or plan fewer methods")
    plans = []
    for k, method in enumerate(methods):
        seeds = [np.random.SeedSequence(root, spawn_key=(k, j)) for j in range(trials)]
        plans.append(_bisect(graph, method, metric, target, lower, seeds, lo, hi, int(steps)))
    return sorted(plans, key=lambda p: (p.epsilon is None, p.epsilon or 0.0))


def _bisect(graph: Any, method: str, metric: str, target: float, lower: bool,
            seeds: list[np.random.SeedSequence], lo: float, hi: float, steps: int) -> GraphPlan:
    """One method's bisection (see :func:`graph_plan`): hi first (reachable at all?), then lo, then the middle."""
    evals: list[tuple[float, float, float]] = []
    trials = len(seeds)

    def at(eps: float) -> tuple[float, float, bool]:
        v = graph_metric(graph, method, metric, eps, seeds)
        mean = float(v.mean())
        se = float(v.std(ddof=1) / math.sqrt(v.size)) if v.size > 1 else math.nan
        evals.append((eps, mean, se))
        return mean, se, (mean <= target) if lower else (mean >= target)

    m_hi, se_hi, ok_hi = at(hi)
    if not ok_hi:
        return GraphPlan(method, metric, target, lower, None, m_hi, se_hi, trials, (hi, hi), tuple(evals))
    m_lo, se_lo, ok_lo = at(lo)
    if ok_lo:
        return GraphPlan(method, metric, target, lower, lo, m_lo, se_lo, trials, (lo, lo), tuple(evals))
    a, b, best = lo, hi, (m_hi, se_hi)
    for _ in range(steps):
        mid = math.sqrt(a * b)
        m, se, ok = at(mid)
        if ok:
            b, best = mid, (m, se)
        else:
            a = mid
    return GraphPlan(method, metric, target, lower, b, best[0], best[1], trials, (a, b), tuple(evals))


def graph_cost(graph: Any, methods: Sequence[str], epsilons: Sequence[float]) -> MonteCarloCost:
    """What :func:`graph_curves` of ``methods`` over ``epsilons`` costs (a few timed trials of its sweep)."""
    from dpviz.sweep import SweepSpec

    return _cost([SweepSpec("graph", graph, tuple(float(e) for e in epsilons), 1, tuple(methods), 0)], at_largest=True)


def graph_curves(graph: Any, metric: str, methods: Sequence[str], epsilons: Sequence[float], *, trials: int,
                 seed: int, max_seconds: float | None = None, raise_with: str = "--max-seconds S"
                 ) -> tuple[list[MonteCarloCurve], pd.DataFrame]:
    """Tabulated curves of a graph metric (mean and 95% interval per ε, from a sweep) and the dots.
    ``trials`` at most :data:`MAX_GRAPH_TRIALS`, ``epsilons`` at most :data:`MAX_GRAPH_EPSILONS` values within
    the simulation bounds; ``max_seconds``: refuse a sweep estimated to take longer (None: no limit)."""
    from dpviz.graph.metrics import METRIC_INFO
    from dpviz.sweep import SweepSpec
    from dpviz.sweep.spec import parse_epsilons

    lower = metric_lower_is_better(metric)
    if isinstance(trials, bool) or not isinstance(trials, int) or not 1 <= trials <= MAX_GRAPH_TRIALS:
        raise InputError(f"trials: expected an integer from 1 to {MAX_GRAPH_TRIALS}, got {trials!r}")
    eps = parse_epsilons(epsilons)  # each within the simulation bounds
    if len(eps) > MAX_GRAPH_EPSILONS:
        raise InputError(f"epsilons: expected at most {MAX_GRAPH_EPSILONS} grid points, got {len(eps)}")
    spec = SweepSpec("graph", graph, eps, trials, tuple(methods), seed)
    if max_seconds is not None:
        from dpviz.sweep.runner import check_sweep

        check_sweep(spec, parallel=1, max_seconds=max_seconds, raise_with=raise_with)
    d = dots_from_sweep(spec, metric, square=None).rename(columns={"method": "mechanism"})[list(DOT_COLUMNS)]
    curves = []
    for m in methods:
        part = d[d["mechanism"] == m].sort_values("epsilon")
        curves.append(MonteCarloCurve("graph", m, m, METRIC_INFO[metric][0], tuple(part["epsilon"]),
                                      tuple(part["value"]), tuple(part["low"]), tuple(part["high"]), trials, lower))
    return curves, d
