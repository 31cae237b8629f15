"""What one trial of a sweep does, per capability: the capability's own simulation, scored.

:func:`prepare` turns a :class:`~dpviz.sweep.spec.SweepSpec` into a *target*: the data (loaded once, on
the client, then shipped to the workers), the validated methods and whatever can be computed once
(the tree's GMC stage 1, the graph's Louvain communities). ``target.trial(epsilon, seed)`` runs one
simulated release of every method at ``epsilon`` from the trial's :class:`numpy.random.SeedSequence` and
returns records ``(method, metric, value, analytic)``; ``analytic`` is the exact expectation of ``value``
where the capability has one (NaN otherwise):

* tree — :func:`dpviz.tree.release.simulate`: one continuous noise draw, every method on it.
  Metrics rmse_NQ (Eq. 40), rmse_RQ (Eq. 41), bias (Eq. 42), negatives and total_sq_error, whose
  expectation is Σ_i Var(v̄_i): Theorem 5 / Eq. 28 for the GLS methods (GMC, Lee, PrivTrie), Σ d_i
  (Eq. 27) for Processless, none for Boosting (Yang et al., "Generation Matrix: An Embeddable Matrix Representation
  for Hierarchical Trees", Theoretical Computer Science, 2023, arXiv:2201.11297).
* stream — :meth:`dpviz.stream.simulation.Mechanism.errors` (the released totals minus the true ones;
  every mechanism is linear, so the error does not depend on the counts, only on the number of steps
  T the data has). Every mechanism starts from the trial's seed, as ``stream simulate`` does. Metrics:
  mse = (1/T) Σ_t e_t² (expectation: the mean analytic per-step variance), rmse, max_abs_error and
  final_sq_error = e_T² (expectation: the last step's variance).
* marginals — :func:`dpviz.marginals.pipeline.simulate` (one measurement, every reconstruction on it):
  l1, l2 (average workload error per cell), cell_mse (mean squared error over all workload cells;
  expectation: the MLE/EMP's mean analytic per-cell variance), negative_cells, negative_mass.
* graph — :func:`dpviz.graph.release.release` + :func:`dpviz.graph.metrics.evaluate`; a method's noise
  stream is child ``k`` of the trial's seed, k its place in :data:`dpviz.graph.release.METHODS` (as
  ``graph simulate`` does), the cut-query sets child 1000, the same for every method. No analytic values.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, ClassVar, Protocol

import numpy as np

from dpviz.core.noise import Noise
from dpviz.errors import InputError
from dpviz.sweep.spec import SweepSpec

__all__ = [
    "MAX_CUT_QUERIES",
    "MAX_QUERIES",
    "OPTIONS",
    "GraphTarget",
    "MarginalsTarget",
    "Record",
    "StreamTarget",
    "Target",
    "TreeTarget",
    "prepare",
]

Record = tuple[str, str, float, float]
"""(method, metric, value, analytic expectation or NaN)."""

NAN = math.nan
MAX_QUERIES = 10_000_000
"""The most random leaf ranges a tree trial scores (``--queries``): 10⁷ ranges already hold each range's
error to well under 1%; the ranges' memory grows with their number."""
MAX_CUT_QUERIES = 10_000
"""The most cut queries per size a graph trial scores (``--cut-queries``): each is a random vertex set, O(n)."""

OPTIONS: dict[str, dict[str, Any]] = {
    "tree": {"split": "uniform", "queries": 10_000},
    "stream": {"horizon": None, "count_column": None, "time_column": None},
    "marginals": {"workload": 2, "mechanism": "rp", "rounds": None},
    "graph": {"budget_split": None, "cut_queries": 100},
}
"""Each capability's settings (``SweepSpec.options``) and their defaults."""


class Target(Protocol):
    capability: ClassVar[str]
    methods: tuple[str, ...]

    @property
    def name(self) -> str: ...

    def trial(self, epsilon: float, seed: np.random.SeedSequence) -> list[Record]: ...


@lru_cache(maxsize=64)
def continuous_noise(epsilon: float, delta: float | None) -> Noise:
    """Simulation noise at ``epsilon``: Laplace (pure ε-DP), or Gaussian calibrated to (ε, δ) when
    ``delta`` is given (the exact Gaussian profile, :meth:`Noise.gaussian_approx`). Cached: a sweep asks
    for the same few ε thousands of times."""
    return Noise.laplace(epsilon) if delta is None else Noise.gaussian_approx(epsilon, delta)


def _pick(methods: str | tuple[str, ...], known: Sequence[str], what: str) -> tuple[str, ...]:
    """``"all"`` → every known method; otherwise each name checked against ``known`` (order kept)."""
    if methods == "all":
        return tuple(known)
    for m in methods:
        if m not in known:
            raise InputError(f"--methods: unknown {what} {m!r}; choose from {', '.join(known)} or all")
    return tuple(dict.fromkeys(methods))


def _options(spec: SweepSpec) -> dict[str, Any]:
    defaults = OPTIONS[spec.capability]
    unknown = sorted(set(spec.options) - set(defaults))
    if unknown:
        raise InputError(f"{spec.capability} sweep: unknown option {unknown[0]!r}; known: {', '.join(defaults)}")
    return {**defaults, **spec.options}


def _child(seed: np.random.SeedSequence, k: int) -> np.random.SeedSequence:
    """Child ``k`` of ``seed`` (as ``seed.spawn`` would give it), without mutating ``seed``."""
    return np.random.SeedSequence(seed.entropy, spawn_key=(*seed.spawn_key, k))


def _is_path(source: object) -> bool:
    return isinstance(source, (str, Path))


# ------------------------------------------------------------------------------------------------ tree
@dataclass(frozen=True, eq=False)
class TreeTarget:
    capability: ClassVar[str] = "tree"
    metrics: ClassVar[tuple[str, ...]] = ("rmse_NQ", "rmse_RQ", "bias", "negatives", "total_sq_error")

    data: Any  # dpviz.tree.io.TreeData
    methods: tuple[str, ...]
    delta: float | None
    split: str
    queries: int
    plan: Any  # dpviz.tree.gmc.GMCPlan | None: stage 1 of GMC, the same for every ε (variances scale)

    @property
    def name(self) -> str:
        return str(self.data.name)

    def trial(self, epsilon: float, seed: np.random.SeedSequence) -> list[Record]:
        from dpviz.tree.release import simulate

        sim = simulate(self.data, continuous_noise(epsilon, self.delta), self.methods, np.random.default_rng(seed),
                       split=self.split, plan=self.plan, q=self.queries)
        out: list[Record] = []
        for row in sim.table.to_dict("records"):
            for metric in self.metrics:
                analytic = float(row["expected_sq_error"]) if metric == "total_sq_error" else NAN
                out.append((row["method"], metric, float(row[metric]), analytic))
        return out


def _tree(spec: SweepSpec, opts: dict[str, Any]) -> TreeTarget:
    from dpviz.tree.estimators import GLS_METHODS, METHODS, plan_for
    from dpviz.tree.io import TreeData, load_source
    from dpviz.tree.release import node_variances
    from dpviz.tree.strategy import check_split

    split = check_split(opts["split"])
    queries = opts["queries"]
    if isinstance(queries, bool) or not isinstance(queries, int) or not 1 <= queries <= MAX_QUERIES:
        raise InputError(f"--queries: expected an integer from 1 to {MAX_QUERIES:,} (MAX_QUERIES), got {queries!r}")
    methods = _pick(spec.methods, list(METHODS), "tree method")
    data = load_source(spec.source) if _is_path(spec.source) else spec.source
    if not isinstance(data, TreeData):
        raise InputError(f"tree sweep: expected sample:NAME, a tree file or a TreeData, got {type(data).__name__}")
    plan = None
    if set(methods) & set(GLS_METHODS):
        noise = continuous_noise(spec.epsilons[0], spec.delta)
        plan = plan_for(data.tree, node_variances(data.tree, noise, split))
    return TreeTarget(data, methods, spec.delta, split, queries, plan)


# ---------------------------------------------------------------------------------------------- stream
@lru_cache(maxsize=64)
def _stream_mechanism(name: str, horizon: int, noise: Noise) -> tuple[Any, np.ndarray]:
    from dpviz.stream.simulation import make_mechanism

    mech = make_mechanism(name, horizon, noise)
    var = mech.per_step_variance()
    var.flags.writeable = False
    return mech, var


@dataclass(frozen=True, eq=False)
class StreamTarget:
    capability: ClassVar[str] = "stream"
    metrics: ClassVar[tuple[str, ...]] = ("mse", "rmse", "max_abs_error", "final_sq_error")

    source: str
    steps: int  # T: the released steps (the data's length)
    horizon: int  # N ≥ T: the mechanism's horizon
    methods: tuple[str, ...]
    delta: float | None

    @property
    def name(self) -> str:
        return self.source

    def trial(self, epsilon: float, seed: np.random.SeedSequence) -> list[Record]:
        noise = continuous_noise(epsilon, self.delta)
        t = self.steps
        out: list[Record] = []
        for name in self.methods:
            mech, var = _stream_mechanism(name, self.horizon, noise)
            err = mech.errors(np.random.default_rng(seed), 1)[0, :t]
            sq = err * err
            mse = float(sq.mean())
            out += [(name, "mse", mse, float(var[:t].mean())), (name, "rmse", math.sqrt(mse), NAN),
                    (name, "max_abs_error", float(np.abs(err).max()), NAN),
                    (name, "final_sq_error", float(sq[-1]), float(var[t - 1]))]
        return out


def _stream(spec: SweepSpec, opts: dict[str, Any]) -> StreamTarget:
    from dpviz.stream.io import load_source
    from dpviz.stream.model import StreamData
    from dpviz.stream.simulation import checked_horizon
    from dpviz.stream.strategies import available

    family = "laplace" if spec.delta is None else "gaussian"
    methods = _pick(spec.methods, list(available(family)), f"stream mechanism ({family} noise)")
    src = spec.source
    if _is_path(src):
        data = load_source(src, count_column=opts["count_column"], time_column=opts["time_column"])
        counts, name = data.counts, str(src)
    elif isinstance(src, StreamData):
        counts, name = src.counts, getattr(src, "name", "stream")
    else:
        counts, name = np.asarray(src, dtype=float), "counts"
    horizon, series = checked_horizon(counts, opts["horizon"])
    if series.size == 0:
        raise InputError("stream sweep: the stream has no steps")
    return StreamTarget(name, int(series.size), horizon, methods, spec.delta)


# ------------------------------------------------------------------------------------------- marginals
def _int_seed(seed: np.random.SeedSequence) -> int:
    """A 128-bit integer seed from ``seed`` (for functions that take an int seed, not a Generator)."""
    words = seed.generate_state(2, np.uint64)
    return int(words[0]) << 64 | int(words[1])


@dataclass(frozen=True, eq=False)
class MarginalsTarget:
    capability: ClassVar[str] = "marginals"
    metrics: ClassVar[tuple[str, ...]] = ("l1", "l2", "cell_mse", "negative_cells", "negative_mass")

    data: Any  # dpviz.marginals.domain.Dataset
    workload: tuple[Any, ...]
    mechanism: str
    rounds: int | None
    methods: tuple[str, ...]
    delta: float

    @property
    def name(self) -> str:
        return str(getattr(self.data, "name", "data"))

    def trial(self, epsilon: float, seed: np.random.SeedSequence) -> list[Record]:
        from dpviz.marginals.pipeline import simulate

        sim = simulate(self.data, list(self.workload), epsilon=epsilon, delta=self.delta, mechanism=self.mechanism,
                       rounds=self.rounds, methods=self.methods, seed=_int_seed(seed))
        cells = sum(mu.size for mu in sim.truth.values())
        out: list[Record] = []
        for name, r in sim.results.items():
            sq = math.fsum(float(np.sum((np.asarray(r.marginals[g], float) - mu) ** 2)) for g, mu in sim.truth.items())
            out += [(name, "l1", r.l1, NAN), (name, "l2", r.l2, NAN), (name, "cell_mse", sq / cells, r.mean_variance),
                    (name, "negative_cells", float(r.negative_cells), NAN),
                    (name, "negative_mass", float(r.negative_mass), NAN)]
        return out


def _marginals(spec: SweepSpec, opts: dict[str, Any]) -> MarginalsTarget:
    from dpviz.core.registry import load_source
    from dpviz.marginals.data import parse_workload, read_table
    from dpviz.marginals.domain import Dataset
    from dpviz.marginals.pipeline import MECHANISMS, METHODS

    if spec.delta is None:
        raise InputError("marginals sweep: give --delta (the Gaussian noise's ρ comes from (ε, δ))")
    if opts["mechanism"] not in MECHANISMS:
        raise InputError(f"--mechanism: expected one of {', '.join(MECHANISMS)}, got {opts['mechanism']!r}")
    methods = _pick(spec.methods, list(METHODS), "marginals method")
    data = load_source("marginals", spec.source, read_table) if _is_path(spec.source) else spec.source
    if not isinstance(data, Dataset):
        raise InputError(f"marginals sweep: expected sample:NAME, a CSV file or a Dataset, got {type(data).__name__}")
    workload = opts["workload"]
    if isinstance(workload, str) and workload.strip().isdigit():
        workload = int(workload)
    wl = parse_workload(workload, data.domain)
    rounds = opts["rounds"]
    if rounds is not None and (isinstance(rounds, bool) or not isinstance(rounds, int)
                               or not 1 <= rounds <= len(wl)):
        raise InputError(f"--rounds: expected an integer from 1 to {len(wl)} (MWEM selects each of the {len(wl)} "
                         f"workload marginals at most once), got {rounds!r}")
    return MarginalsTarget(data, tuple(wl), opts["mechanism"], rounds, methods, spec.delta)


# ----------------------------------------------------------------------------------------------- graph
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

    def trial(self, epsilon: float, seed: np.random.SeedSequence) -> list[Record]:
        from dpviz.graph.cli import SPLIT_METHODS
        from dpviz.graph.metrics import evaluate
        from dpviz.graph.release import METHODS, release

        g = self.graph
        out: list[Record] = []
        for name in self.methods:
            opts = {"split": self.budget_split} if self.budget_split is not None and name in SPLIT_METHODS else {}
            rel = release(g.edges, g.n_nodes, epsilon, name, rng=np.random.default_rng(_child(seed, list(METHODS).index(name))),
                          **opts)
            scores = evaluate(g.edges, rel.edges, g.n_nodes, np.random.default_rng(_child(seed, self.metric_seed)),
                              n_queries=self.cut_queries, communities=self.communities)
            out += [(name, k, float(v), NAN) for k, v in scores.items() if k != "n_edges_true"]
        return out


def _graph(spec: SweepSpec, opts: dict[str, Any]) -> GraphTarget:
    from dpviz.core.registry import load_source
    from dpviz.graph.cli import parse_split
    from dpviz.graph.io import read_edges
    from dpviz.graph.metrics import true_communities
    from dpviz.graph.model import Graph
    from dpviz.graph.release import METHODS

    if spec.delta is not None:
        raise InputError("graph sweep: the graph methods are pure ε-DP; leave --delta out")
    split = opts["budget_split"]
    split = parse_split(split) if isinstance(split, str) or split is None else tuple(float(x) for x in split)
    cut = opts["cut_queries"]
    if isinstance(cut, bool) or not isinstance(cut, int) or not 1 <= cut <= MAX_CUT_QUERIES:
        raise InputError(f"--cut-queries: expected an integer from 1 to {MAX_CUT_QUERIES:,} (MAX_CUT_QUERIES), "
                         f"got {cut!r}")
    methods = _pick(spec.methods, list(METHODS), "graph method")
    graph = load_source("graph", spec.source, read_edges) if _is_path(spec.source) else spec.source
    if not isinstance(graph, Graph):
        raise InputError(f"graph sweep: expected sample:NAME, an edge list or a Graph, got {type(graph).__name__}")
    communities = true_communities(graph.edges, graph.n_nodes)
    return GraphTarget(graph, methods, communities, split, cut)


_PREPARE = {"tree": _tree, "stream": _stream, "marginals": _marginals, "graph": _graph}


def prepare(spec: SweepSpec) -> Target:
    """The target of ``spec``: data loaded, methods and options checked, shared work done once."""
    return _PREPARE[spec.capability](spec, _options(spec))
