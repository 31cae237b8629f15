"""DRF (published) and drf-dp: accounting, the exponential mechanism, noise, the kd-tree, the output."""

from __future__ import annotations

import math
import tracemalloc

import numpy as np
import pytest
from scipy.stats import chisquare

from dpviz.core.exponential import exponential_mechanism, exponential_mechanism_grouped
from dpviz.errors import InputError
from dpviz.graph import NOT_PRIVATE_LABEL
from dpviz.graph.release import release
from dpviz.core.noise import Noise
from dpviz.graph.drf import drf_dp, drf_published, q_labelling, relabel
from dpviz.graph.estimators import project_capped
from dpviz.graph.model import Graph
from dpviz.graph.strategy import count_budgets, drf_account, max_height
from dpviz.graph.regions import count_upper


def _random_graph(rng, n, m):
    e = rng.integers(0, n, size=(3 * m, 2))
    e = e[e[:, 0] != e[:, 1]]
    e = np.unique(np.sort(e, axis=1), axis=0)
    return e[rng.permutation(e.shape[0])[:m]]


def _heavy_tailed_graph(rng, n, m):
    w = rng.pareto(1.5, n) + 1.0
    p = w / w.sum()
    e = np.column_stack([rng.choice(n, 3 * m, p=p), rng.choice(n, 3 * m, p=p)])
    e = e[e[:, 0] != e[:, 1]]
    e = np.unique(np.sort(e, axis=1), axis=0)
    return e[rng.permutation(e.shape[0])[:m]]


def _check_canonical(edges, n):
    assert edges.dtype == np.int64 and edges.ndim == 2 and edges.shape[1] == 2
    if edges.shape[0]:
        assert (edges[:, 0] < edges[:, 1]).all()  # u < v: no self-loops, one row per undirected edge
        assert edges.min() >= 0 and edges.max() < n
        codes = edges[:, 0] * n + edges[:, 1]
        assert np.unique(codes).size == codes.size
        assert (np.diff(codes) > 0).all()  # sorted lexicographically


# ------------------------------------------------------------------------------------------- accounting


@pytest.mark.parametrize("method", [drf_dp, drf_published])
@pytest.mark.parametrize("split", [(3, 7, 3), (1, 1, 1), (0.5, 8, 2)])
@pytest.mark.parametrize("epsilon", [0.1, 1.0, 7.5])
def test_budget_sums_to_epsilon(method, split, epsilon):
    rng = np.random.default_rng(0)
    edges = _random_graph(rng, 120, 300)
    out = method(edges, 120, epsilon, rng=rng, split=split)
    assert abs(math.fsum(out.budget.values()) - epsilon) <= 1e-9
    assert all(v > 0 for v in out.budget.values())
    h = out.info["h_max"]
    names = list(out.budget)
    assert sum(name.startswith("split points depth") for name in names) == h
    assert sum(name.startswith("counts depth") for name in names) == h + 1
    share_d, share_c, share_r = (s / sum(split) for s in split)
    split_total = math.fsum(v for k, v in out.budget.items() if k.startswith("split points"))
    count_total = math.fsum(v for k, v in out.budget.items() if k.startswith("counts"))
    assert split_total == pytest.approx(epsilon * share_d, rel=1e-12)
    assert count_total == pytest.approx(epsilon * share_c, rel=1e-12)
    third = "relabel (noisy degrees)" if method is drf_dp else "reconstruction EM (ε_R)"
    assert out.budget[third] == pytest.approx(epsilon * share_r, rel=1e-12)


def test_count_budgets_are_geometric_and_sum_exactly():
    eps = count_budgets(0.7, 9)
    assert eps.size == 10
    assert math.fsum(eps) == pytest.approx(0.7, abs=1e-15)
    assert np.allclose(eps[1:] / eps[:-1], 2 ** (1 / 3))


def test_max_height_solves_equation_3():
    for n, eps_c, mu in [(8361, 7 / 13, 4.0), (36692, 0.3, 1.0), (500, 5.0, 2.0), (10**6, 0.01, 4.0)]:
        h = max_height(n, eps_c, mu)
        rhs = (2 ** (1 / 3) - 1) * n * n * eps_c / (mu * math.sqrt(2))

        def lhs(k):
            return 2 ** (1 / 3) * 4.0 ** k - 2.0 ** (5 * k / 3)

        assert h >= 1
        assert h == math.ceil(math.log2(n)) or lhs(h + 1) > rhs  # h + 1 violates Eq. (3) (or the cap)
        assert h == 1 or lhs(h) <= rhs


def test_account_is_data_independent_and_validated():
    a = drf_account(1.0, 8361)
    assert a.h_max == max_height(8361, 7 / 13, 4.0)
    assert a.eps_split_stage == pytest.approx(3 / 13 / (2 * a.h_max))
    with pytest.raises(InputError, match="split"):
        drf_account(1.0, 100, split=(1, 2))
    with pytest.raises(InputError, match="split"):
        drf_account(1.0, 100, split=(1, -2, 3))
    with pytest.raises(InputError, match="epsilon"):
        drf_account(0.0, 100)


# ------------------------------------------------------------------------------------------- mechanisms


def test_exponential_mechanism_frequencies_chi_square():
    rng = np.random.default_rng(1)
    scores = np.array([0.0, 1.0, 2.0, 3.5, 0.5])
    reps = 20000
    for eps, sens in [(1.0, 1.0), (2.0, 0.5), (0.3, 2.0)]:
        group = np.repeat(np.arange(reps), scores.size)
        pick = exponential_mechanism_grouped(np.tile(scores, reps), group, eps, sens, rng)
        freq = np.bincount(pick - np.arange(reps) * scores.size, minlength=scores.size)
        w = np.exp(eps * scores / (2 * sens))
        assert chisquare(freq, reps * w / w.sum()).pvalue > 1e-3


def test_exponential_mechanism_per_group_parameters_and_release_path():
    reps = 6000
    scores = np.array([0.0, 1.0, 2.0])
    group = np.repeat(np.arange(2 * reps), 3)
    eps = np.r_[np.full(reps, 1.0), np.full(reps, 4.0)]
    for rng in (np.random.default_rng(2), None):  # None: Gumbel variates from the OS CSPRNG
        pick = exponential_mechanism_grouped(np.tile(scores, 2 * reps), group, eps, 1.0, rng)
        local = pick - np.arange(2 * reps) * 3
        for sl, e in ((slice(0, reps), 1.0), (slice(reps, None), 4.0)):
            freq = np.bincount(local[sl], minlength=3)
            w = np.exp(e * scores / 2)
            assert chisquare(freq, reps * w / w.sum()).pvalue > 1e-3
    # unsorted groups and one selection
    pick = exponential_mechanism_grouped(np.array([5.0, 0.0, 0.0, 5.0]), np.array([1, 0, 1, 0]), 1e6, 1.0,
                                         np.random.default_rng(3))
    assert pick.tolist() == [3, 0]
    assert exponential_mechanism([0.0, 10.0, 0.0], 1e6, 1.0, None) == 1


def test_noisy_count_variance_monte_carlo():
    """(measured − true) · ε_depth is Lap(1) at every measured node: variance 2 (±5%)."""
    rng = np.random.default_rng(4)
    n = 1500
    edges = _random_graph(rng, n, 6000)
    z = []
    while sum(map(len, z)) < 25000:
        out = drf_dp(edges, n, 1.0, rng=rng, max_height=6, sparse=1e-9, dense=1e9, iterations=5)
        p = out.partition
        position = np.empty(n, dtype=np.int64)
        position[out.order] = np.arange(n)
        a, b = position[edges[:, 0]], position[edges[:, 1]]
        true = count_upper(np.minimum(a, b), np.maximum(a, b), p.r0, p.r1, p.c0, p.c1)
        measured = out.info["measured"]
        live = ~np.isnan(measured)
        z.append((measured[live] - true[live]) * out.info["measure_epsilon"][live])
    z = np.concatenate(z)
    assert abs(z.mean()) < 0.05
    assert np.var(z) == pytest.approx(2.0, rel=0.05)


# ------------------------------------------------------------------------------------------- the tree


@pytest.mark.parametrize("method", [drf_dp, drf_published])
def test_kd_tree_splits_in_band_and_children_tile_parents(method):
    rng = np.random.default_rng(5)
    n = 700
    edges = _heavy_tailed_graph(rng, n, 3000)
    out = method(edges, n, 2.0, rng=rng)
    p = out.partition
    assert p.parent[0] == -1 and p.depth[0] == 0
    assert (p.r0[0], p.r1[0], p.c0[0], p.c1[0]) == (0, n, 0, n)
    area = (p.r1 - p.r0) * (p.c1 - p.c0)
    internal = np.flatnonzero(~p.leaf)
    assert internal.size > 5 and p.depth.max() >= 3  # a real decomposition happened
    for node in internal:
        kids = np.flatnonzero(p.parent == node)
        assert kids.size == 4
        assert (p.depth[kids] == p.depth[node] + 1).all()
        assert area[kids].sum() == area[node]
        s_rows = p.r1[node] - p.r0[node]
        # the horizontal split p: every child starts at the parent's first row or at p
        row_cut = np.unique(p.r0[kids][p.r0[kids] != p.r0[node]])
        assert row_cut.size == 1
        assert p.r0[node] + s_rows / 4 <= row_cut[0] <= p.r0[node] + 3 * s_rows / 4
        # each half is split vertically inside the band of the parent's columns
        s_cols = p.c1[node] - p.c0[node]
        for top in (True, False):
            half = kids[(p.r0[kids] == p.r0[node]) == top]
            assert half.size == 2
            col_cut = half[p.c0[half] != p.c0[node]]
            assert col_cut.size == 1
            c = p.c0[col_cut[0]]
            assert p.c0[node] + s_cols / 4 <= c <= p.c0[node] + 3 * s_cols / 4
    # leaf (every node's) area is at least S/16 of its parent's area S
    child = np.flatnonzero(p.parent >= 0)
    assert (16 * area[child] >= area[p.parent[child]]).all()
    # the leaves tile the matrix: disjoint and covering
    assert area[p.leaf].sum() == n * n
    grid = np.zeros((n, n), dtype=np.int8)
    for node in np.flatnonzero(p.leaf):
        grid[p.r0[node]:p.r1[node], p.c0[node]:p.c1[node]] += 1
    assert (grid == 1).all()


def test_relabel_lowers_q_every_iteration():
    rng = np.random.default_rng(6)
    deg = rng.zipf(2.2, 3000).astype(float)
    order, history = relabel(deg, 60, rng)
    assert np.array_equal(np.sort(order), np.arange(3000))
    assert all(b <= a + 1e-9 for a, b in zip(history, history[1:]))  # Thm. 3: no swap increases q(L)
    assert history[-1] < 0.7 * history[0]
    assert history[-1] == pytest.approx(q_labelling(deg[order]))
    # the highest degree ends near the centre
    top = int(np.argmax(deg))
    assert abs(int(np.flatnonzero(order == top)[0]) - 1500) < 150


def test_project_capped():
    rng = np.random.default_rng(7)
    y = rng.normal(0, 5, 500)
    cap = rng.integers(0, 20, 500).astype(float)
    x = project_capped(y, cap, 800.0)
    assert x.sum() == pytest.approx(800.0, abs=1e-6)
    assert (x >= 0).all() and (x <= cap).all()
    inside = (x > 1e-9) & (x < cap - 1e-9)
    shift = y[inside] - x[inside]
    assert np.ptp(shift) < 1e-6  # x = clip(y − τ, 0, cap) with one τ
    assert project_capped(y, cap, -5.0).sum() == 0.0
    assert project_capped(y, cap, 1e9).sum() == pytest.approx(cap.sum())


# ------------------------------------------------------------------------------------------- outputs


@pytest.mark.parametrize("method", [drf_dp, drf_published])
def test_output_is_canonical_in_caller_ids(method):
    rng = np.random.default_rng(8)
    n = 300
    edges = _heavy_tailed_graph(rng, n, 900)
    noisy_input = np.vstack([edges, edges[:50, ::-1], [[3, 3], [7, 7]]])  # duplicates and self-loops
    out = method(noisy_input, n, 1.0, rng=rng)
    _check_canonical(out.edges, n)
    assert out.n_nodes == n
    clean = method(edges, n, 1.0, rng=np.random.default_rng(8))
    again = method(noisy_input, n, 1.0, rng=np.random.default_rng(8))
    assert np.array_equal(clean.edges, again.edges)  # the dropped rows change nothing
    assert np.array_equal(np.sort(out.order), np.arange(n))


def test_published_is_labelled_not_private_and_drf_dp_is_default():
    rng = np.random.default_rng(9)
    edges = _random_graph(rng, 80, 150)
    pub = release(Graph.from_edges(edges, 80), Noise.laplace(1.0), method="drf", rng=rng)
    assert pub.private is False and pub.label == NOT_PRIVATE_LABEL and pub.method == "drf"
    dp = release(Graph.from_edges(edges, 80), Noise.laplace(1.0), rng=rng)
    assert dp.private is True and dp.method == "drf-dp"


def test_published_with_huge_epsilon_reproduces_the_graph():
    rng = np.random.default_rng(10)
    n = 60
    edges = _random_graph(rng, n, 90)
    out = drf_published(edges, n, 1e6, rng=rng)
    a = set(map(tuple, edges.tolist()))
    b = set(map(tuple, out.edges.tolist()))
    assert len(a & b) / len(a | b) >= 0.95
    assert out.info["true_edges_kept"] > 0  # it copies true edges (problem 2 of the module docstring)


def test_drf_dp_with_huge_epsilon_keeps_the_edge_count():
    rng = np.random.default_rng(11)
    n = 200
    edges = _heavy_tailed_graph(rng, n, 600)
    out = drf_dp(edges, n, 1e6, rng=rng)
    assert abs(out.edges.shape[0] - edges.shape[0]) <= 1
    # every leaf estimate is its true count (no noise left): the partition is exact
    p = out.partition
    position = np.empty(n, dtype=np.int64)
    position[out.order] = np.arange(n)
    a, b = position[edges[:, 0]], position[edges[:, 1]]
    true = count_upper(np.minimum(a, b), np.maximum(a, b), p.r0, p.r1, p.c0, p.c1)
    assert np.allclose(p.noisy[p.leaf], true[p.leaf], atol=0.01)


def test_drf_dp_release_path_with_os_csprng():
    rng = np.random.default_rng(12)
    n = 400
    edges = _heavy_tailed_graph(rng, n, 1200)
    out = drf_dp(edges, n, 1.0)  # rng=None: discrete Laplace and EM from the OS CSPRNG
    _check_canonical(out.edges, n)
    assert abs(math.fsum(out.budget.values()) - 1.0) <= 1e-9
    measured = out.info["measured"]
    live = ~np.isnan(measured)
    assert np.array_equal(measured[live], np.round(measured[live]))  # integer (discrete) noise
    assert "discrete" in out.info["noise"]


def test_no_dense_allocation_on_a_huge_sparse_graph():
    rng = np.random.default_rng(13)
    n = 10**6
    edges = np.column_stack([rng.integers(0, n, 3000), rng.integers(0, n, 3000)])
    tracemalloc.start()
    try:
        out = drf_dp(edges, n, 1.0, rng=rng, iterations=5)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    _check_canonical(out.edges, n)
    assert peak < 5e8  # an n^2 bit matrix alone would be 1.25e11 bytes
    assert out.partition.leaf.sum() > 100


def test_bad_options_raise_input_error():
    edges = np.array([[0, 1], [1, 2]])
    with pytest.raises(InputError, match="unknown option"):
        drf_dp(edges, 5, 1.0, rng=np.random.default_rng(0), colour="red")
    with pytest.raises(InputError, match="rng"):
        drf_dp(edges, 5, 1.0, rng=123)
    with pytest.raises(InputError, match="estimator"):
        drf_dp(edges, 5, 1.0, rng=np.random.default_rng(0), estimator="magic")
    with pytest.raises(InputError, match="vertex ids"):
        drf_published(np.array([[0, 9]]), 5, 1.0, rng=np.random.default_rng(0))
    with pytest.raises(InputError, match="max_height"):
        drf_dp(edges, 5, 1.0, rng=np.random.default_rng(0), max_height=0)


def test_tiny_and_empty_graphs():
    rng = np.random.default_rng(14)
    for method in (drf_dp, drf_published):
        out = method(np.zeros((0, 2), dtype=np.int64), 1, 1.0, rng=rng)
        assert out.edges.shape == (0, 2)
        out = method(np.array([[0, 1]]), 2, 1.0, rng=rng)
        _check_canonical(out.edges, 2)
        assert abs(math.fsum(out.budget.values()) - 1.0) <= 1e-9
