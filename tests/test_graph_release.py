"""The graph capability's one release API (issue 18): release/simulate, GraphRelease as a core Release, the one
metadata function, one region-array type, and noise drawn through core.protocols.measure."""

from __future__ import annotations

import numpy as np
import pytest

from dpviz.core import protocols
from dpviz.core.noise import Noise
from dpviz.core.release import BudgetSplit, Release
from dpviz.errors import InputError
from dpviz.graph.model import Graph
from dpviz.graph.regions import Partition
from dpviz.graph.release import BUDGET_NOTE, GraphRelease, method_rng, metrics_rng, release, simulate
from dpviz.graph.strategy import METHODS, DegreeSequence, EdgeCells, RegionCounts
from dpviz.graph.structure import VertexSet


def _graph(n: int = 60, m: int = 120, seed: int = 0) -> Graph:
    rng = np.random.default_rng(seed)
    return Graph.from_edges(rng.integers(0, n, size=(m, 2)), n)


@pytest.mark.parametrize("method", ["drf-dp", "kdh", "quadtree", "random", "degree"])
def test_release_is_a_core_release_whose_budget_composes(method):
    g = _graph()
    rel = release(g, Noise.laplace(1.0, discrete=True), method=method)  # OS CSPRNG
    assert isinstance(rel, Release) and isinstance(rel, GraphRelease) and rel.capability == "graph"
    assert isinstance(rel.budget, BudgetSplit) and rel.budget.total == rel.noise.budget
    assert [label for label, _ in rel.budget.parts] == list(rel.steps)
    assert rel.edges.dtype == np.int64 and list(rel.table().columns) == ["u", "v"]
    meta = rel.metadata()
    assert meta["budget_note"] == BUDGET_NOTE and meta["method"] == method
    assert [p["part"] for p in meta["budget_parts"]] == list(rel.steps)
    assert meta["n_edges_released"] == rel.edges.shape[0]
    assert meta["structure"]["source"] == "data"  # no declaration given: read from the data, and said so


def test_release_puts_the_graph_on_the_declared_vertex_set():
    g = Graph.from_edges(np.array([[0, 1], [1, 2], [2, 9]]), 10)
    vs = VertexSet.count(5)
    rel = release(g, Noise.laplace(1.0, discrete=True), vertices=vs, source="edges", split=(1, 1, 1))
    assert rel.n_nodes == 5 and rel.vertices is vs and rel.metadata()["structure"]["source"] == "declared"
    assert rel.metadata()["options"] == {"split": [1, 1, 1]} and rel.source == "edges"


def test_release_refuses_bad_noise_and_modes():
    g = _graph()
    with pytest.raises(InputError, match="Laplace"):
        release(g, Noise.gaussian(0.5, discrete=True))
    with pytest.raises(InputError, match="continuous noise is for simulation"):
        release(g, Noise.laplace(1.0))
    with pytest.raises(InputError, match="Graph"):
        release(g.edges, Noise.laplace(1.0, discrete=True))
    with pytest.raises(InputError, match="unknown graph method"):
        release(g, Noise.laplace(1.0, discrete=True), method="nope")


def test_simulate_uses_each_methods_own_stream_of_the_seed():
    g = _graph(seed=3)
    sim = simulate(g, Noise.laplace(1.0), ["kdh", "drf-dp"], 11, split=(3, 7, 3))
    alone = release(g, Noise.laplace(1.0), rng=method_rng(11, "drf-dp"), method="drf-dp", split=(3, 7, 3))
    assert np.array_equal(sim.releases["drf-dp"].edges, alone.edges)  # independent of the other methods
    # a Generator made from the seed gives the same streams as the seed itself
    again = simulate(g, Noise.laplace(1.0), ["kdh"], np.random.default_rng(11), evaluate=False)
    assert np.array_equal(again.releases["kdh"].edges, sim.releases["kdh"].edges) and again.metrics == {}
    assert metrics_rng(np.random.default_rng(11)).random() == metrics_rng(11).random()
    assert list(sim.table()["method"]) == ["kdh", "drf-dp"] and "degree_kl" in sim.table()


def test_one_region_array_type_everywhere():
    g = _graph()
    for method in ("drf-dp", "drf", "kdh", "quadtree", "random"):
        p = release(g, Noise.laplace(1.0), rng=np.random.default_rng(1), method=method).partition
        assert type(p) is Partition and p.noisy is not None and len(p.to_json()["r0"]) == len(p)
    from dpviz.graph.hierarchy import quadtree_hierarchy

    h = quadtree_hierarchy(16, 2)
    assert type(h) is Partition and h.kinds == ("quad", "quad") and h.fanouts == (4, 4) and h.noisy is None
    with pytest.raises(InputError, match="no released counts"):
        h.to_json()


def test_strategies_are_core_strategies_with_edge_dp_sensitivities():
    bounds = tuple(np.array([x]) for x in (0, 4, 0, 4))
    counts = RegionCounts(bounds, 0.5)
    assert isinstance(counts, protocols.Strategy) and isinstance(DegreeSequence(4), protocols.Strategy)
    assert counts.sensitivity("laplace") == 1.0 and RegionCounts(bounds, 0.5, upper=False).sensitivity("laplace") == 2
    assert DegreeSequence(4).sensitivity("laplace") == 2.0
    cells = EdgeCells(np.array([0, 1, 2]), np.array([1, 3, 2]))  # (2, 2) is not an upper cell
    assert counts.answer(cells).tolist() == [2]
    assert counts.answer(EdgeCells(cells.u, cells.v, np.array([0, -1, 0]))).tolist() == [2]
    np.testing.assert_allclose(counts.scales(Noise.laplace(0.5)), 2.0)


def test_every_noisy_count_is_drawn_by_core_measure(monkeypatch):
    """Counting the calls of core.protocols.measure: no graph method draws noise by itself."""
    calls: list[str] = []
    real = protocols.measure

    def spy(strategy, data, noise, rng):
        calls.append(strategy.name)
        return real(strategy, data, noise, rng)

    import dpviz.graph.strategy as strategy_mod

    monkeypatch.setattr(strategy_mod, "measure", spy)
    g = _graph(seed=5)
    for method in METHODS:
        calls.clear()
        release(g, Noise.laplace(1.0), rng=np.random.default_rng(2), method=method)
        assert calls, method
        if method in ("drf-dp", "degree"):
            assert "graph degree sequence" in calls


def test_least_squares_in_two_passes_takes_any_node_order_and_refuses_a_cycle():
    """graph.estimators.least_squares (no tree-capability import): the same GLS for a permuted node order."""
    from dpviz.graph.estimators import least_squares
    from dpviz.graph.hierarchy import quadtree_hierarchy

    h = quadtree_hierarchy(32, 3)
    rng = np.random.default_rng(4)
    y, d = rng.normal(5, 3, len(h)), rng.uniform(0.5, 4, len(h))
    x = least_squares(h.parent, y, d)
    kids = np.bincount(h.parent[1:], weights=x[1:], minlength=len(h))
    inner = ~h.leaf
    np.testing.assert_allclose(kids[inner], x[inner], rtol=1e-10)  # consistent
    perm = rng.permutation(len(h))
    inv = np.argsort(perm)
    parent_p = np.where(h.parent[perm] >= 0, inv[np.maximum(h.parent[perm], 0)], -1)
    np.testing.assert_allclose(least_squares(parent_p, y[perm], d[perm]), x[perm], rtol=1e-10, atol=1e-10)
    with pytest.raises(InputError, match="cycle|root"):
        least_squares(np.array([-1, 2, 1]), np.ones(3), np.ones(3))
