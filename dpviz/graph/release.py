"""The graph capability's one release API: ``release`` and ``simulate`` (issue 18's shape).

Unit of privacy: **one edge** (edge-level DP) on a public vertex set (:mod:`dpviz.graph.strategy`).

* ``release(data, noise, *, rng=None, method="drf-dp", vertices=None, source=None, **options) -> GraphRelease``:
  ``data`` is a :class:`~dpviz.graph.model.Graph` (as read from the data, e.g. by
  :func:`dpviz.graph.io.read_edges`, or built with ``Graph.from_edges(edges, n)``), put on its **declared**
  vertex set ``vertices`` (:class:`dpviz.graph.structure.VertexSet`: edges touching an undeclared vertex
  dropped, the count never published; None = the vertex set the graph shows, which every output then says
  was read from the data). ``noise`` is Laplace (pure ε-edge-DP): discrete for a release (OS CSPRNG when
  ``rng`` is None), continuous for a simulation (``rng`` a Generator). The method (:data:`METHODS`,
  dispatched by name) draws every noisy count through :func:`dpviz.core.protocols.measure` and every
  selection through :mod:`dpviz.core.exponential`.
* ``simulate(data, noise, methods, rng, **options) -> GraphSimulation``: several methods on the same graph,
  each with its own noise stream derived from the seed (:func:`method_rng`: a method's draw does not depend
  on which other methods run), and their metrics against the truth (:func:`dpviz.graph.metrics.evaluate`):
  not a private release.

A :class:`GraphRelease` satisfies :class:`dpviz.core.release.Release`: ``capability = "graph"``, ``edges``
(released, in vertex ids 0..n-1), ``noise``, ``budget`` (a :class:`~dpviz.core.release.BudgetSplit`: the
method's phases, composing to ε), ``table()`` (the edge list ``u, v`` in the declared labels) and
``metadata()`` (``OUT.meta.json``, built by :func:`dpviz.core.release.release_metadata`).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from dpviz.core.accounting import positive
from dpviz.core.budget import Budget
from dpviz.core.noise import Noise
from dpviz.core.registry import resolve
from dpviz.core.release import BudgetSplit, release_metadata
from dpviz.errors import InputError
from dpviz.graph.model import Graph, GraphOutput
from dpviz.graph.regions import Partition
from dpviz.graph.strategy import (DEFAULT_METHOD, L1_SENSITIVITIES, METHODS, NOT_PRIVATE_LABEL, check_method,
                                  method_options, sensitivity)
from dpviz.graph.structure import VertexSet

__all__ = ["GraphRelease", "GraphSimulation", "release", "simulate", "method_rng", "metrics_rng", "partition_json",
           "BUDGET_NOTE"]

BUDGET_NOTE = ("every sub-budget is spent by one mechanism on the edge set (discrete Laplace on integer queries of the "
               "L1 sensitivity listed under sensitivities, or the exponential mechanism); the sub-budgets compose "
               "sequentially to ε: pure ε-edge-DP")
"""The ``budget_note`` of every graph release's metadata."""

_METRICS_KEY = 1_000
"""Spawn key of the cut-query stream of a simulation (the methods use 0..len(METHODS)-1)."""


def _seed_sequence(seed: int | np.random.Generator) -> np.random.SeedSequence:
    if isinstance(seed, np.random.Generator):
        seq = seed.bit_generator.seed_seq
        if not isinstance(seq, np.random.SeedSequence):
            raise InputError("rng: expected a Generator made by numpy.random.default_rng(seed)")
        return seq
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
        raise InputError(f"seed: expected a whole number or a numpy Generator, got {type(seed).__name__}")
    return np.random.SeedSequence(int(seed))


def _child(seed: int | np.random.Generator, key: int) -> np.random.Generator:
    seq = _seed_sequence(seed)
    return np.random.default_rng(np.random.SeedSequence(seq.entropy, spawn_key=(*seq.spawn_key, key)))


def method_rng(seed: int | np.random.Generator, method: str) -> np.random.Generator:
    """Simulation noise stream of one method, from the seed (or the Generator ``default_rng(seed)``) and the
    method's place in :data:`METHODS`, so a method's draw does not depend on which other methods run (the
    CLI and the page use the same streams)."""
    return _child(seed, list(METHODS).index(check_method(method)))


def metrics_rng(seed: int | np.random.Generator) -> np.random.Generator:
    """The cut-query vertex sets of a simulation: the same for every method (a fresh Generator per call)."""
    return _child(seed, _METRICS_KEY)


def partition_json(rel: GraphRelease | GraphOutput, labels: Sequence[str] | None = None) -> dict:
    """The released partition as JSON (``--partitions`` and the page's download): regions, the vertex order
    and, when the input had labels, the order as labels. Released quantities only."""
    out_ = rel.output if isinstance(rel, GraphRelease) else rel
    if out_.partition is None:
        raise InputError(f"method {out_.method!r} has no partition to write")
    order = None if out_.order is None else [int(x) for x in out_.order]
    out = {"method": out_.method, "n_nodes": int(out_.n_nodes), "mode": "release",
           "note": "regions are half-open rectangles [r0, r1) x [c0, c1) of the adjacency matrix whose row i is "
                   "vertex order[i]; noisy = released (noisy, post-processed) edge count on the upper triangle",
           "order": order, "partition": out_.partition.to_json()}
    if labels is not None and order is not None:
        out["order_labels"] = [labels[i] for i in order]
    return out


@dataclass(frozen=True)
class GraphRelease:
    """A graph released on its vertex set (a :class:`dpviz.core.release.Release`).

    ``output``: the method's result on vertex ids 0..n-1 (:class:`~dpviz.graph.model.GraphOutput`);
    ``noise``: the total Laplace noise (ε, discrete or not); ``vertices``: the vertex set (declared, or read
    from the data: then every output says so); ``source``: the input's name; ``options``: the method's
    options; ``seeded``: noise from a Generator (a simulation or a test), not the OS CSPRNG. Everything
    published here depends on the vertex set and the mechanism's output only."""

    output: GraphOutput
    noise: Noise
    vertices: VertexSet
    source: str = "graph"
    options: Mapping[str, Any] = field(default_factory=dict)
    seeded: bool = False
    capability: str = field(default="graph", init=False)

    # the method's output
    @property
    def edges(self) -> np.ndarray:
        """The released edges, int64 (k, 2), u < v, in vertex ids 0..n-1 of ``vertices``."""
        return self.output.edges

    @property
    def method(self) -> str:
        return self.output.method

    @property
    def n_nodes(self) -> int:
        return int(self.output.n_nodes)

    @property
    def private(self) -> bool:
        return self.output.private

    @property
    def label(self) -> str:
        return self.output.label

    @property
    def partition(self) -> Partition | None:
        return self.output.partition

    @property
    def order(self) -> np.ndarray | None:
        return self.output.order

    @property
    def info(self) -> Mapping[str, object]:
        return self.output.info

    @property
    def steps(self) -> Mapping[str, float]:
        """Sub-budget name -> ε, in spending order (the method's phases; :attr:`budget` as numbers)."""
        return self.output.budget

    @property
    def budget(self) -> BudgetSplit:
        """The sub-budget of every phase of the method (relabelling, split points and counts per depth, ...);
        they compose sequentially to ``noise.budget`` (checked)."""
        return BudgetSplit(self.noise.budget, tuple((str(k), Budget.pure(float(v))) for k, v in self.steps.items()))

    @property
    def structure(self) -> dict[str, Any]:
        """The ``structure`` entry of every output (``.meta.json``, report, partitions)."""
        return self.vertices.source.as_dict()

    def table(self) -> pd.DataFrame:
        """The published edge list ``u, v`` in the vertex set's labels."""
        from dpviz.graph.io import edges_frame

        return edges_frame(self.edges, self.vertices.labels)

    def partition_json(self) -> dict:
        """:func:`partition_json` with the vertex labels and the ``structure`` entry."""
        return {**partition_json(self.output, self.vertices.labels), "structure": self.structure}

    def metadata(self) -> dict[str, Any]:
        """The ``.meta.json`` of the release (CLI and page; :func:`dpviz.core.release.release_metadata`): noise,
        the sensitivity the method's noise uses, the sub-budgets and how they compose, the vertex set;
        nothing computed from the data but the released edge count."""
        method = self.method
        split = self.options.get("split")
        return release_metadata(
            "graph", self.noise, seeded=self.seeded, sensitivity=sensitivity(method), budget_split=self.budget,
            sensitivities=dict(L1_SENSITIVITIES[method]), method=method,
            budget={str(k): float(v) for k, v in self.steps.items()}, budget_note=BUDGET_NOTE,
            options={"split": list(split)} if split is not None else {},
            n_nodes=int(self.vertices.n_nodes), structure=self.structure,
            vertex_set=("declared public (edge-level DP protects edges, not vertices)" if self.vertices.declared
                        else self.vertices.source.describe),
            n_edges_released=int(self.edges.shape[0]), source=self.source,
            columns={"u": "vertex label", "v": "vertex label"})


def _epsilon(noise: Noise, rng: np.random.Generator | None) -> float:
    if not isinstance(noise, Noise):
        raise InputError(f"noise: expected a dpviz.core.noise.Noise, got {type(noise).__name__}")
    if noise.family != "laplace":
        raise InputError(f"graph release: Laplace noise only (pure ε-edge-DP), got {noise.describe}")
    if rng is not None and not isinstance(rng, np.random.Generator):
        raise InputError(f"rng: expected a numpy.random.Generator (simulation) or None (release), "
                         f"got {type(rng).__name__}")
    if rng is None and not noise.discrete:
        raise InputError("continuous noise is for simulation: pass a numpy Generator (releases use discrete noise "
                         "from the OS CSPRNG)")
    return positive("epsilon", noise.epsilon)


def release(data: Graph, noise: Noise, *, rng: np.random.Generator | None = None, method: str = DEFAULT_METHOD,
            vertices: VertexSet | None = None, source: str | None = None, **options) -> GraphRelease:
    """Release ``data`` with ``method`` under ``noise`` (edge-DP for every method but ``"drf"``).

    ``vertices``: the declared vertex set (None: the graph's own, read from the data). ``rng=None`` draws
    discrete noise from the OS CSPRNG (a release); a Generator makes the run reproducible (a simulation,
    continuous noise unless ``noise.discrete``). ``options`` go to the method (e.g. ``split`` for DRF).
    """
    if not isinstance(data, Graph):
        raise InputError(f"data: expected a dpviz.graph.model.Graph (Graph.from_edges(edges, n_nodes)), got "
                         f"{type(data).__name__}")
    check_method(method)
    epsilon = _epsilon(noise, rng)
    if vertices is None:
        vertices, graph = VertexSet.from_data(data), data
    else:
        graph = vertices.restrict(data)
    out = resolve(METHODS[method])(graph.edges, graph.n_nodes, epsilon, rng=rng, discrete=noise.discrete,
                                   **options)
    return GraphRelease(out, noise, vertices, source=data.name if source is None else str(source),
                        options=dict(options), seeded=rng is not None)


@dataclass(frozen=True)
class GraphSimulation:
    """Several methods on one graph (seeded, continuous noise): not a private release. ``graph``: the graph
    the methods ran on (on the declared vertex set, when one was given); ``releases[m]``, ``seconds[m]``:
    each method's release and run time; ``metrics[m]``: its metrics against the truth (empty when not
    evaluated)."""

    graph: Graph
    noise: Noise
    releases: dict[str, GraphRelease]
    seconds: dict[str, float]
    metrics: dict[str, dict[str, float]]

    def table(self) -> pd.DataFrame:
        """One row per method (the published DRF marked not private) with its metrics."""
        return pd.DataFrame([{"method": m if r.private else f"{m} ({NOT_PRIVATE_LABEL})", **self.metrics.get(m, {})}
                             for m, r in self.releases.items()])


def simulate(data: Graph, noise: Noise, methods: Sequence[str], rng: int | np.random.Generator, *,
             vertices: VertexSet | None = None, evaluate: bool = True, **options) -> GraphSimulation:
    """Run ``methods`` on ``data`` with seeded noise (:func:`method_rng` streams of ``rng``, a seed or the
    Generator ``default_rng(seed)``) and, with ``evaluate``, score each against the true graph
    (:func:`dpviz.graph.metrics.evaluate`, cut queries from :func:`metrics_rng`). ``options["split"]`` goes
    to :data:`~dpviz.graph.strategy.SPLIT_METHODS` only; other options go to every method."""
    from dpviz.graph import metrics

    split = options.pop("split", None)
    graph = data if vertices is None else vertices.restrict(data)
    releases: dict[str, GraphRelease] = {}
    seconds: dict[str, float] = {}
    scores: dict[str, dict[str, float]] = {}
    with np.errstate(all="ignore"):  # degenerate graphs (no edge) give 0/0 in ratios: reported as nan, no warning
        communities = metrics.true_communities(graph.edges, graph.n_nodes) if evaluate else None
        for method in methods:
            t0 = time.perf_counter()
            releases[method] = release(graph, noise, rng=method_rng(rng, method), method=method,
                                       **options, **method_options(method, split))
            seconds[method] = time.perf_counter() - t0
            if evaluate:
                scores[method] = metrics.evaluate(graph.edges, releases[method].edges, graph.n_nodes,
                                                  metrics_rng(rng), communities=communities)
    return GraphSimulation(graph, noise, releases, seconds, scores)
