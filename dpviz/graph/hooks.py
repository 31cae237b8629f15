"""The graph's entries into the tools (registry hooks): an audit target, a sweep target and the planner's curves.

* :func:`audit_target` / :func:`graph_target` — a small sparse graph G (40 nodes, 8 edges) and G plus one edge
  {u, v} (edge-level DP, the unit of privacy of :mod:`dpviz.graph`): :func:`dpviz.graph.release.release` with
  the chosen method on the auditor's seeded Generator. Events: "{u, v} appears in the released edge list"
  (boolean), and "the number of released edges at u or v exceeds τ". On this pair ``drf-dp`` must come out
  consistent with its ε and the published ``drf`` (not edge-DP: it places true edges, Step 4) violating it.
* :func:`sweep_target` — :func:`dpviz.graph.release.release` + :func:`dpviz.graph.metrics.evaluate`; a method's
  noise stream is child ``k`` of the trial's seed, k its place in :data:`dpviz.graph.strategy.METHODS` (as
  ``graph simulate`` does), the cut-query sets child 1000, the same for every method. No analytic values.
* :func:`plan_curves` — no closed form: a :class:`~dpviz.core.curves.MonteCarloCurve` per method, the mean
  metric and its 95% interval at a grid of ε from seeded trials (:func:`graph_curves`); :func:`graph_plan`
  finds, per method, the smallest ε whose mean metric over ``trials`` simulated releases meets a target, by
  bisection on log ε (:func:`dpviz.core.curves.bisect_epsilon`, the same trial seeds at every ε: common
  random numbers). Planning a graph simulates releases of the true graph (a simulation, for planning only).

Module constants and functions the tools read from here: ``AUDIT_HELP``/``AUDIT_ARGS`` (the ``audit graph``
verb), ``SWEEP_HELP``/``SWEEP_ARGS``/``SWEEP_OPTIONS`` (``sweep graph``), ``PLAN_PARAMS``/``PLAN_PRESETS`` (a
planned release's keys and ready-made ones), ``plan_dots`` (the planner's Monte-Carlo dots, analytic
capabilities), ``PLAN_HELP``/``plan_args``/``plan_command`` (``plan graph``), ``LEDGER_ARGS`` and
``ledger_load`` (the ledger). Light on import: NumPy and the core types are imported when a hook runs, so the
tools' CLI registrars can read the constants cheaply.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from dpviz.errors import InputError

if TYPE_CHECKING:
    import numpy as np
    from dpviz.core.curves import MonteCarloCost, MonteCarloCurve, MonteCarloPlan
    from dpviz.core.events import AuditTarget
    from dpviz.core.trials import Record

__all__ = ["AUDIT_ARGS", "AUDIT_HELP", "GRAPH_ADDED", "GRAPH_EDGES", "GRAPH_EPSILONS", "GRAPH_METRICS", "GRAPH_NODES",
           "LEDGER_ARGS", "MAX_CUT_QUERIES", "MAX_GRAPH_EPSILONS", "MAX_GRAPH_TRIALS", "PLAN_HELP",
           "PLAN_PARAMS", "PLAN_PRESETS", "SWEEP_ARGS", "SWEEP_HELP", "SWEEP_OPTIONS", "audit_target",
           "check_graph_plan", "check_private_method", "graph_cost", "graph_curves", "graph_metric",
           "graph_plan", "graph_sweep_target", "graph_target", "GraphTarget", "ledger_load",
           "metric_lower_is_better", "plan_args", "plan_command", "plan_curves", "sweep_target"]

# ---- audit ------------------------------------------------------------------------------------------------
AUDIT_HELP = "a small sparse graph G and G plus one edge"
AUDIT_ARGS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("--method", {"default": "drf-dp",
                  "help": "graph method: drf-dp (default), drf (published, not edge-DP), kdh, quadtree, random, "
                          "degree"}),
)
GRAPH_NODES = 40
"""The default audit graph: 40 nodes, 8 edges (a 4-cycle, a path, two single edges), most nodes isolated."""
GRAPH_EDGES: tuple[tuple[int, int], ...] = ((0, 1), (1, 2), (2, 3), (0, 3), (4, 5), (5, 6), (8, 9), (10, 11))
GRAPH_ADDED = (20, 35)
"""The edge that D1 adds: between two isolated nodes, the sparse case where a true edge stands out."""


def graph_target(method: str = "drf-dp", epsilon: float = 1.0, *, edges: np.ndarray | None = None,
                 n_nodes: int | None = None, added: tuple[int, int] | None = None, **options: Any) -> AuditTarget:
    """Graph: G and G + {u, v}, released by ``dpviz.graph.release.release(G, Laplace(ε), rng=..., method=...)``.

    Defaults: :data:`GRAPH_EDGES` on :data:`GRAPH_NODES` nodes plus :data:`GRAPH_ADDED`. ``options`` go
    to the method (e.g. a budget split). The claim audited is ε for every method, including the
    published ``drf``, whose paper claims ε-DP (the audit shows it is not edge-DP).
    """
    import numpy as np

    from dpviz.core.accounting import positive
    from dpviz.core.events import AuditTarget, boolean_event, threshold_event
    from dpviz.core.noise import Noise
    from dpviz.graph.model import Graph
    from dpviz.graph.release import release
    from dpviz.graph.strategy import METHODS

    if method not in METHODS:
        raise InputError(f"--method: unknown graph method {method!r}; expected one of {', '.join(METHODS)}")
    epsilon = positive("epsilon", epsilon)
    g_edges = np.asarray(GRAPH_EDGES if edges is None else edges)
    n = GRAPH_NODES if n_nodes is None else n_nodes
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 2:
        raise InputError(f"n_nodes: expected an integer >= 2, got {n!r}")
    u, v = sorted(GRAPH_ADDED if added is None else (int(added[0]), int(added[1])))
    if not (0 <= u < v < n):
        raise InputError(f"added edge: expected two distinct node ids in 0..{n - 1}, got {added!r}")
    if g_edges.ndim != 2 or g_edges.shape[1] != 2:
        raise InputError(f"edges: expected an integer array of shape (m, 2), got shape {g_edges.shape}")
    g_edges = g_edges.astype(np.int64)
    lo, hi = np.minimum(g_edges[:, 0], g_edges[:, 1]), np.maximum(g_edges[:, 0], g_edges[:, 1])
    if np.any((lo == u) & (hi == v)):
        raise InputError(f"added edge: {{{u}, {v}}} is already in G; neighbours must differ in one edge")
    e1 = np.vstack([g_edges, [[u, v]]])
    noise = Noise.laplace(epsilon)  # continuous: the auditor's seeded Generator makes every trial a simulation
    g0, g1 = Graph.from_edges(g_edges, int(n), name="audit G"), Graph.from_edges(e1, int(n), name="audit G + 1")

    def release_fn(g: Any, rng: np.random.Generator) -> Any:
        return release(g, noise, rng=rng, method=method, **options)

    def has_edge(r: Any) -> bool:
        out = r.edges
        return bool(np.any((out[:, 0] == u) & (out[:, 1] == v)))

    def incident(r: Any) -> float:
        out = r.edges
        return float(np.count_nonzero((out == u).any(axis=1) | (out == v).any(axis=1)))

    return AuditTarget(
        capability="graph", mechanism=method + (" (published; not edge-DP)" if method == "drf" else ""),
        neighbours=f"G ({n} nodes, {len(g_edges)} edges) and G + {{{u}, {v}}}", D0=g0, D1=g1,
        release_fn=release_fn,
        events=(boolean_event(f"edge {{{u}, {v}}} appears in the output", has_edge),
                threshold_event(f"released edges at node {u} or {v}", incident)),
        epsilon=epsilon)


def audit_target(epsilon: float = 1.0, *, method: str = "drf-dp", **options: Any) -> AuditTarget:
    """The registry's ``audit_target`` hook: :func:`graph_target` at ``epsilon``."""
    return graph_target(method, epsilon, **options)


# ---- sweep ------------------------------------------------------------------------------------------------
MAX_CUT_QUERIES = 10_000
"""The most cut queries per size a graph trial scores (``--cut-queries``): each is a random vertex set, O(n)."""
SWEEP_HELP = "graph methods (drf-dp, drf, kdh, quadtree, random, degree) on an edge list"
SWEEP_OPTIONS: dict[str, Any] = {"budget_split": None, "cut_queries": 100}
SWEEP_ARGS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("--budget-split", {"metavar": "A:B:C", "default": None, "help": "ε_D^d:ε_D^c:ε_R for drf and drf-dp"}),
    ("--cut-queries", {"type": int, "default": 100, "help": "cut queries per size (default 100)"}),
)


@dataclass(frozen=True, eq=False)
class GraphTarget:
    capability: ClassVar[str] = "graph"
    metric_seed: ClassVar[int] = 1000

    graph: Any  # dpviz.graph.model.Graph
    methods: tuple[str, ...]
    communities: np.ndarray
    budget_split: tuple[float, float, float] | None
    cut_queries: int

    @property
    def name(self) -> str:
        return str(self.graph.name)

    @property
    def noise(self) -> str:
        return "Laplace (pure ε-DP), as each graph method draws it"

    def trial(self, epsilon: float, seed: np.random.SeedSequence) -> list[Record]:
        import numpy as np

        from dpviz.core.noise import Noise
        from dpviz.core.trials import NAN, child_seed
        from dpviz.graph.metrics import evaluate
        from dpviz.graph.release import release
        from dpviz.graph.strategy import METHODS, method_options

        g = self.graph
        noise = Noise.laplace(epsilon)
        out: list[Record] = []
        for name in self.methods:
            rel = release(g, noise, rng=np.random.default_rng(child_seed(seed, list(METHODS).index(name))),
                          method=name, **method_options(name, self.budget_split))
            scores = evaluate(g.edges, rel.edges, g.n_nodes, np.random.default_rng(child_seed(seed, self.metric_seed)),
                              n_queries=self.cut_queries, communities=self.communities)
            out += [(name, k, float(v), NAN) for k, v in scores.items() if k != "n_edges_true"]
        return out


def graph_sweep_target(source: Any, methods: str | tuple[str, ...], delta: float | None = None,
                       budget_split: Any = None, cut_queries: int = 100) -> GraphTarget:
    """The graph trials of ``source`` (``sample:NAME``, an edge list or a ``Graph``)."""
    from dpviz.core.trials import is_path, pick_methods
    from dpviz.graph.io import load
    from dpviz.graph.metrics import true_communities
    from dpviz.graph.model import Graph
    from dpviz.graph.strategy import METHODS, parse_split

    if delta is not None:
        raise InputError("graph sweep: the graph methods are pure ε-DP; leave --delta out")
    split = budget_split
    split = parse_split(split) if isinstance(split, str) or split is None else tuple(float(x) for x in split)
    cut = cut_queries
    if isinstance(cut, bool) or not isinstance(cut, int) or not 1 <= cut <= MAX_CUT_QUERIES:
        raise InputError(f"--cut-queries: expected an integer from 1 to {MAX_CUT_QUERIES:,} (MAX_CUT_QUERIES), "
                         f"got {cut!r}")
    methods = pick_methods(methods, list(METHODS), "graph method")
    graph = load(source) if is_path(source) else source
    if not isinstance(graph, Graph):
        raise InputError(f"graph sweep: expected sample:NAME, an edge list or a Graph, got {type(graph).__name__}")
    communities = true_communities(graph.edges, graph.n_nodes)
    return GraphTarget(graph, methods, communities, split, cut)


def sweep_target(spec: Any) -> GraphTarget:
    """The target of a sweep ``spec`` (a :class:`dpviz.sweep.spec.SweepSpec` of this capability)."""
    from dpviz.core.trials import check_options

    opts = check_options("graph", SWEEP_OPTIONS, spec.options)
    return graph_sweep_target(spec.source, spec.methods, spec.delta, opts["budget_split"], opts["cut_queries"])


# ---- plan -------------------------------------------------------------------------------------------------
GRAPH_EPSILONS = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0)
PLAN_PARAMS: dict[str, Any] = {"data": "sample:karate", "metric": "degree_kl", "mechanism": "drf-dp",
                               "epsilons": GRAPH_EPSILONS, "trials": 4}
"""The keys of a planned graph release and their defaults (a Monte-Carlo curve: needs a seed)."""
PLAN_PRESETS: dict[str, tuple[str, dict[str, Any]]] = {
    "karate-cuts": ("Karate club: cut-query error (kdh, Monte-Carlo)",
                    {"data": "sample:karate", "metric": "cut_error", "mechanism": "kdh", "trials": 4}),
}
"""Ready-made planned releases on the bundled data (name → (title, params))."""
MAX_GRAPH_TRIALS = 1000
"""The most simulated releases per ε of a graph plan or curve."""
MAX_GRAPH_EPSILONS = 100
"""The most grid points of a graph curve (``epsilons`` of a releases JSON)."""
GRAPH_METRICS: tuple[str, ...] = ("degree_kl", "rrdc", "cut_error", "clustering_rel_error", "modularity_rel_error",
                                  "eigen_top1_overlap", "edge_jaccard")
"""The graph metrics a plan can target (:data:`dpviz.graph.metrics.METRIC_INFO` without the edge counts)."""


def _metric_functions() -> dict[str, Callable[..., float]]:
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


def metric_lower_is_better(metric: str) -> bool:
    from dpviz.graph.metrics import HIGHER, METRIC_INFO

    if metric not in GRAPH_METRICS:
        raise InputError(f"--metric: expected one of {', '.join(GRAPH_METRICS)}, got {metric!r}")
    return METRIC_INFO[metric][1] != HIGHER


def check_private_method(method: str) -> str:
    from dpviz.graph.strategy import PRIVATE_METHODS

    if method not in PRIVATE_METHODS:
        raise InputError(f"--method: a plan is for an edge-DP method ({', '.join(PRIVATE_METHODS)}), got {method!r}")
    return method


def graph_metric(graph: Any, method: str, metric: str, epsilon: float, seeds: Sequence[np.random.SeedSequence]
                 ) -> np.ndarray:
    """``metric`` of ``len(seeds)`` simulated releases of ``graph`` by ``method`` at ε (one seed each:
    child 0 draws the release, child 1 the metric's own randomness, e.g. the cut queries)."""
    import numpy as np

    from dpviz.core.noise import Noise
    from dpviz.graph.release import release

    metric_lower_is_better(metric)
    check_private_method(method)
    f = _metric_functions()[metric]
    noise = Noise.laplace(epsilon)
    out = np.empty(len(seeds))
    for k, s in enumerate(seeds):
        rel_seed, metric_seed = s.spawn(2)
        rel = release(graph, noise, rng=np.random.default_rng(rel_seed), method=method)
        out[k] = f(graph.edges, rel.edges, graph.n_nodes, np.random.default_rng(metric_seed))
    return out


def check_graph_plan(metric: str, target: float, *, trials: int, lo: float, hi: float, steps: int
                     ) -> tuple[float, float, float, int, int]:
    """The settings of a graph plan checked (no data read yet): (target, lo, hi, trials, steps). ``target``
    finite; ``lo`` < ``hi`` within the simulation bounds; ``trials`` 1..:data:`MAX_GRAPH_TRIALS`; ``steps``
    1..:data:`~dpviz.core.curves.MAX_BISECTION_STEPS`."""
    from dpviz.core.curves import MAX_BISECTION_STEPS
    from dpviz.core.trials import simulation_epsilon

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
    import numpy as np

    from dpviz.core.limits import check_work, seconds_per_call

    per = sum(seconds_per_call(lambda m=m: graph_metric(graph, m, metric, epsilon, [np.random.SeedSequence(0)]),
                               calls=1) for m in methods)
    check_work(what, seconds=per * releases, max_seconds=max_seconds, cheaper=cheaper)


def graph_plan(graph: Any, metric: str, target: float, methods: Sequence[str], *, seed: int, trials: int = 4,
               lo: float = 0.05, hi: float = 20.0, steps: int = 7, max_seconds: float | None = None
               ) -> list[MonteCarloPlan]:
    """Bisection on log ε in [lo, hi] per method (module docstring); best (smallest ε) first, unreachable last.
    ``max_seconds``: refuse (InputError, before the bisection) a plan estimated, from one timed release per
    method at ``hi``, to take longer (None: no limit)."""
    import numpy as np

    from dpviz.core.curves import bisect_epsilon
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
        plans.append(bisect_epsilon(lambda eps, m=method, s=seeds: graph_metric(graph, m, metric, eps, s), method,
                                    metric, target, lower, trials, lo, hi, int(steps)))
    return sorted(plans, key=lambda p: (p.epsilon is None, p.epsilon or 0.0))


def graph_cost(graph: Any, methods: Sequence[str], epsilons: Sequence[float]) -> MonteCarloCost:
    """What :func:`graph_curves` of ``methods`` over ``epsilons`` costs (a few timed trials; the cost moves
    with ε)."""
    from dpviz.core.curves import MonteCarloCost
    from dpviz.core.trials import estimate_trials

    eps = tuple(float(e) for e in epsilons)
    est = estimate_trials(graph_sweep_target(graph, tuple(methods)), eps, 1, at_largest=True)
    return MonteCarloCost(len(eps), est.setup, est.per_trial)


def graph_curves(graph: Any, metric: str, methods: Sequence[str], epsilons: Sequence[float], *, trials: int,
                 seed: int, max_seconds: float | None = None, raise_with: str = "--max-seconds S"
                 ) -> tuple[list[MonteCarloCurve], Any]:
    """Tabulated curves of a graph metric (mean and 95% interval per ε, from seeded trials: those of a sweep)
    and the dots (columns mechanism, epsilon, trials, value, low, high). ``trials`` at most
    :data:`MAX_GRAPH_TRIALS`, ``epsilons`` at most :data:`MAX_GRAPH_EPSILONS` values within the simulation
    bounds; ``max_seconds``: refuse trials estimated to take longer (None: no limit)."""
    from dpviz.core.curves import MonteCarloCurve, metric_dots
    from dpviz.core.modes import check_seed
    from dpviz.core.trials import check_trials, parse_epsilons, run_trials
    from dpviz.graph.metrics import METRIC_INFO

    lower = metric_lower_is_better(metric)
    if isinstance(trials, bool) or not isinstance(trials, int) or not 1 <= trials <= MAX_GRAPH_TRIALS:
        raise InputError(f"trials: expected an integer from 1 to {MAX_GRAPH_TRIALS}, got {trials!r}")
    eps = parse_epsilons(epsilons)  # each within the simulation bounds
    if len(eps) > MAX_GRAPH_EPSILONS:
        raise InputError(f"epsilons: expected at most {MAX_GRAPH_EPSILONS} grid points, got {len(eps)}")
    target = graph_sweep_target(graph, tuple(methods))
    seed = check_seed(seed)
    if max_seconds is not None:
        check_trials(target, eps, trials, parallel=1, max_seconds=max_seconds, raise_with=raise_with)
    d = metric_dots(run_trials(target, eps, trials, seed), metric).rename(columns={"method": "mechanism"})
    d = d[["mechanism", "epsilon", "trials", "value", "low", "high"]]
    curves = []
    for m in target.methods:
        part = d[d["mechanism"] == m].sort_values("epsilon")
        curves.append(MonteCarloCurve("graph", m, m, METRIC_INFO[metric][0], tuple(part["epsilon"]),
                                      tuple(part["value"]), tuple(part["low"]), tuple(part["high"]), trials, lower))
    return curves, d


def plan_curves(params: Mapping[str, Any], *, seed: int | None = None,
                max_seconds: float | None = None) -> list[MonteCarloCurve]:
    """The Monte-Carlo curve of one planned graph release (:data:`PLAN_PARAMS`): ``seed`` drives the trials;
    ``trials`` and ``epsilons`` are checked against :func:`graph_curves`' bounds and, with ``max_seconds``,
    its time estimate."""
    from dpviz.graph.io import load

    if seed is None:
        raise InputError("graph: a Monte-Carlo curve needs a seed")
    p = {**PLAN_PARAMS, **params}
    graph = load(p["data"]) if isinstance(p["data"], str) else p["data"]
    from dpviz.graph.strategy import PRIVATE_METHODS

    method = p["mechanism"]
    if method not in PRIVATE_METHODS:
        raise InputError(f"graph params: 'mechanism' must be an edge-DP method ({', '.join(PRIVATE_METHODS)}), "
                         f"got {method!r}")
    curves, _ = graph_curves(graph, p["metric"], [method], p["epsilons"], trials=p["trials"], seed=seed,
                             max_seconds=max_seconds)
    return curves


# ---- plan CLI (``python -m dpviz plan graph``; ``common``: dpviz.planner.cli.COMMON) --------------------------
PLAN_HELP = "smallest ε per edge-DP method for a target graph metric (Monte-Carlo)"


def plan_args(p: Any, common: Any) -> None:
    """The ``plan graph`` flags."""
    p.add_argument("data", metavar="DATA", help="edge list or sample:NAME (karate, netscience, ...)")
    p.add_argument("--metric", default="degree_kl", help="graph metric (default degree_kl; see dpviz.graph.metrics)")
    p.add_argument("--target", type=float, required=True, help="target value of the metric (finite)")
    p.add_argument("--method", default="all", help="edge-DP method, comma list, or all (default)")
    p.add_argument("--trials", type=int, default=4, help="simulated releases per ε tried (default 4, at most 1000)")
    p.add_argument("--lo", type=float, default=0.05, help="smallest ε tried (default 0.05; at least 1e-6)")
    p.add_argument("--hi", type=float, default=20.0, help="largest ε tried (default 20; at most 1e6)")
    p.add_argument("--steps", type=int, default=7,
                   help="bisection steps (default 7; at most MAX_BISECTION_STEPS = 50 of dpviz.core.curves)")
    p.add_argument("--seed", type=int, help="simulation seed (default: fresh, printed)")
    common.max_seconds(p, "a plan")
    common.output(p)


def _plan_methods(spec: str) -> list[str]:
    from dpviz.graph.strategy import PRIVATE_METHODS

    names = list(PRIVATE_METHODS) if spec.strip() == "all" else [m.strip() for m in spec.split(",") if m.strip()]
    bad = [m for m in names if m not in PRIVATE_METHODS]
    if bad or not names:
        raise InputError(f"--method: expected all or edge-DP methods among {', '.join(PRIVATE_METHODS)}, "
                         f"got {', '.join(bad) or 'none'}")
    return names


def plan_command(args: Any, common: Any) -> int:
    """``plan graph``: per edge-DP method, the smallest ε whose mean metric meets ``--target`` (:func:`graph_plan`)."""
    from dpviz.core.modes import SIMULATION_NOTICE
    from dpviz.graph.io import load

    inputs = [common.input_path(args.data)]
    common.check_output(args, inputs)
    methods = _plan_methods(args.method)
    seed = common.seed(args)
    check_graph_plan(args.metric, args.target, trials=args.trials, lo=args.lo, hi=args.hi, steps=args.steps)
    graph = load(args.data)
    plans = graph_plan(graph, args.metric, args.target, methods, seed=seed, trials=args.trials, lo=args.lo,
                       hi=args.hi, steps=args.steps, max_seconds=args.max_seconds)
    word = "≤" if plans[0].lower_is_better else "≥"
    print(f"plan: graph {args.data} ({graph.n_nodes:,} nodes); {args.metric} {word} {args.target:g} — Monte-Carlo "
          f"({SIMULATION_NOTICE}), seed {seed}")
    for p in plans:
        print(f"  {p.method:<10} ε = {common.fmt(p.epsilon):>8}  {p.note}")
    common.write_json(args, {"plan": "graph", "mode": "Monte-Carlo simulation", "data": args.data,
                             "metric": args.metric, "target": args.target, "seed": seed,
                             "plans": [p.as_dict() for p in plans]}, inputs)
    return 0


# ---- ledger (dpviz.ledger.identity) ----------------------------------------------------------------------------
LEDGER_ARGS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("--n-nodes", {"type": int, "default": None, "help": "graph: vertex count (integer ids 0..N-1)"}),
    ("--header", {"choices": ("auto", "yes", "no"), "default": None, "help": "graph: header line (default auto)"}),
)
"""The options a graph is loaded with for the ledger (those of ``graph release``)."""


def ledger_load(source: str, *, n_nodes: int | None = None, header: str | bool | None = None) -> Any:
    """A graph as ``graph release`` reads it (``header``: auto, yes or no)."""
    from dpviz.graph.io import load

    head = {"auto": None, "yes": True, "no": False}.get(header, header) if isinstance(header, str) else header
    return load(source, n_nodes=n_nodes, header=head)
