"""Graph baselines (dpviz.graph.baselines): kd-hybrid, quadtree, Random and degree/Chung–Lu.

Budgets, canonical outputs, exactness at huge ε, least squares against a dense generic solver, noise
variances by Monte-Carlo, the exponential-mechanism medians by χ², Chung–Lu edge probabilities and
expected degrees, the release path, and the sparse path on a large vertex set.
"""

from __future__ import annotations

import math
import tracemalloc

import numpy as np
import pytest
from scipy import stats

from dpviz.core.noise import Noise
from dpviz.core.samplers import discrete_laplace_variance
from dpviz.errors import InputError
from dpviz.graph import baselines as B
from dpviz.graph.release import release
from dpviz.graph.estimators import degree_postprocess, least_squares, released_counts, top_down_counts
from dpviz.graph.hierarchy import kd_hybrid_hierarchy, private_medians, quadtree_hierarchy
from dpviz.graph.strategy import geometric_budgets
from dpviz.graph.model import Graph, canonical_edges
from dpviz.graph.regions import count_upper

METHODS = {"kdh": B.kd_hybrid, "quadtree": B.quadtree, "random": B.random_uniform, "degree": B.degree_chung_lu}


def clustered_graph(seed: int, n: int, m: int) -> np.ndarray:
    """Raw edge rows (with duplicates, reversed pairs, self-loops) concentrated near the diagonal."""
    rng = np.random.default_rng(seed)
    u = rng.integers(0, n, m)
    v = np.clip(u + rng.geometric(8.0 / n, m) - 1, 0, n - 1)
    e = np.column_stack([u, v])
    flip = rng.random(m) < 0.5
    e[flip] = e[flip][:, ::-1]
    return e


def assert_canonical(edges: np.ndarray, n: int) -> None:
    assert edges.dtype == np.int64 and edges.ndim == 2 and edges.shape[1] == 2
    if edges.shape[0] == 0:
        return
    assert (edges[:, 0] < edges[:, 1]).all()
    assert edges.min() >= 0 and edges.max() < n
    codes = edges[:, 0] * n + edges[:, 1]
    assert (np.diff(codes) > 0).all()  # sorted lexicographically and unique


# ----------------------------------------------------------------------------------- budgets, outputs


@pytest.mark.parametrize("name", list(METHODS))
@pytest.mark.parametrize("epsilon", [0.1, 1.0, 7.3])
def test_budget_sums_to_epsilon_and_output_is_canonical(name, epsilon):
    n = 90
    raw = clustered_graph(1, n, 400)
    out = METHODS[name](raw, n, epsilon, rng=np.random.default_rng(2))
    assert math.isclose(sum(out.budget.values()), epsilon, rel_tol=0, abs_tol=1e-9)
    assert all(v > 0 for v in out.budget.values())
    assert out.method == name and out.n_nodes == n and out.private
    assert_canonical(out.edges, n)


def test_budget_keys_name_every_sub_budget():
    n = 70
    raw = clustered_graph(3, n, 300)
    kdh = B.kd_hybrid(raw, n, 2.0, rng=np.random.default_rng(0), height=3, kd_levels=4, median_share=0.25)
    med = {k: v for k, v in kdh.budget.items() if k.startswith("median_level_")}
    cnt = {k: v for k, v in kdh.budget.items() if k.startswith("count_depth_")}
    assert sorted(med) == [f"median_level_{t}" for t in range(4)]
    assert np.allclose(list(med.values()), 0.5 / 4)
    assert sorted(cnt, key=lambda k: int(k.rsplit("_", 1)[1])) == [f"count_depth_{d}" for d in range(4 + 1 + 1)]
    assert math.isclose(sum(cnt.values()), 1.5)
    quad = B.quadtree(raw, n, 2.0, rng=np.random.default_rng(0), height=4)
    assert set(quad.budget) == {f"count_depth_{d}" for d in range(5)}
    assert B.random_uniform(raw, n, 2.0, rng=np.random.default_rng(0)).budget == {"total_count": 2.0}
    assert B.degree_chung_lu(raw, n, 2.0, rng=np.random.default_rng(0)).budget == {"degrees": 2.0}


def test_geometric_budget_is_cormode_formula_for_quadtrees():
    h, eps = 6, 1.7
    got = geometric_budgets([4] * h, eps)
    d = np.arange(h + 1)
    want = 2.0 ** (d / 3) * (2.0 ** (1 / 3) - 1) * eps / (2.0 ** ((h + 1) / 3) - 1)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    mixed = geometric_budgets([2, 2, 4], 1.0)  # N_d = 1, 2, 4, 16: eps_d ∝ N_d^(1/6)
    np.testing.assert_allclose(mixed / mixed[0], [1, 2 ** (1 / 6), 4 ** (1 / 6), 16 ** (1 / 6)])


def test_release_dispatch_and_input_errors():
    n = 40
    raw = clustered_graph(4, n, 100)
    out = release(Graph.from_edges(raw, n), Noise.laplace(1.0), method="kdh", rng=np.random.default_rng(1))
    assert out.method == "kdh"
    with pytest.raises(InputError, match="rounding"):
        B.quadtree(raw, n, 1.0, rng=np.random.default_rng(1), rounding="nearest")
    with pytest.raises(InputError, match="median_share"):
        B.kd_hybrid(raw, n, 1.0, rng=np.random.default_rng(1), median_share=1.0)
    with pytest.raises(InputError, match="height"):
        B.quadtree(raw, n, 1.0, rng=np.random.default_rng(1), height=-1)
    with pytest.raises(InputError, match="rng"):
        B.random_uniform(raw, n, 1.0, rng=1234)
    with pytest.raises(InputError, match="epsilon"):
        B.degree_chung_lu(raw, n, 0.0, rng=np.random.default_rng(1))
    with pytest.raises(InputError, match="vertex ids"):
        B.quadtree(np.array([[0, n]]), n, 1.0, rng=np.random.default_rng(1))


# ----------------------------------------------------------------------------------- exactness


@pytest.mark.parametrize("name", ["kdh", "quadtree"])
@pytest.mark.parametrize("rounding", ["clip", "top-down"])
def test_huge_epsilon_reproduces_every_region_count(name, rounding):
    n = 75
    raw = clustered_graph(5, n, 500)
    e = canonical_edges(raw, n).edges
    out = METHODS[name](raw, n, 1e9, rng=np.random.default_rng(6), rounding=rounding)
    p = out.partition
    true = count_upper(e[:, 0], e[:, 1], p.r0, p.r1, p.c0, p.c1)
    np.testing.assert_array_equal(p.noisy, true)  # every region, leaves and internal nodes
    np.testing.assert_allclose(out.info["estimate"], true, atol=1e-4)  # least squares of exact counts
    assert out.edges.shape[0] == e.shape[0]
    # the released edges lie in the leaves in the released numbers
    got = count_upper(out.edges[:, 0], out.edges[:, 1], p.r0, p.r1, p.c0, p.c1)
    np.testing.assert_array_equal(got, true)


def test_kd_first_false_puts_the_quadtree_levels_on_top():
    n = 80
    raw = clustered_graph(30, n, 400)
    e = canonical_edges(raw, n).edges
    out = B.kd_hybrid(raw, n, 1e9, rng=np.random.default_rng(31), height=4, kd_first=False)
    assert out.info["levels"] == ["quad", "quad", "kd", "kd", "kd", "kd"]
    p = out.partition
    np.testing.assert_array_equal(p.noisy, count_upper(e[:, 0], e[:, 1], p.r0, p.r1, p.c0, p.c1))
    assert out.edges.shape[0] == e.shape[0]
    lvl1 = np.flatnonzero(p.depth == 1)  # midpoint cuts: rows and columns at 40
    assert set(p.r0[lvl1]) | set(p.r1[lvl1]) == {0, 40, 80}


@pytest.mark.parametrize("name", ["kdh", "quadtree"])
def test_default_rounding_keeps_the_edge_count_of_a_sparse_graph(name):
    n, m = 2000, 3000
    raw = clustered_graph(32, n, m)
    m = canonical_edges(raw, n).n_edges
    top = METHODS[name](raw, n, 1.0, rng=np.random.default_rng(33), height=7)
    assert top.info["rounding"] == "top-down"
    assert abs(top.edges.shape[0] - m) < 0.1 * m
    clip = METHODS[name](raw, n, 1.0, rng=np.random.default_rng(33), height=7, rounding="clip")
    assert clip.edges.shape[0] > 3 * m  # every empty leaf keeps the positive part of its noise


def test_random_uniform_huge_epsilon_keeps_the_edge_count():
    n = 200
    raw = clustered_graph(7, n, 900)
    m = canonical_edges(raw, n).n_edges
    out = B.random_uniform(raw, n, 1e9, rng=np.random.default_rng(8))
    assert out.edges.shape[0] == m
    # not the input edges: uniform placement among ~20,000 cells overlaps the input by chance only
    inter = np.intersect1d(out.edges[:, 0] * n + out.edges[:, 1], canonical_edges(raw, n).edges @ [n, 1])
    assert inter.size < 0.2 * m


def test_partition_structure_and_released_counts():
    n = 100
    raw = clustered_graph(9, n, 600)
    out = B.kd_hybrid(raw, n, 1.0, rng=np.random.default_rng(10), height=4)
    p = out.partition
    assert p.parent[0] == -1 and (p.parent[1:] >= 0).all() and (p.parent[1:] < np.arange(1, len(p))).all()
    np.testing.assert_array_equal(p.depth[1:], p.depth[p.parent[1:]] + 1)
    kids = p.parent[1:]
    assert (p.r0[1:] >= p.r0[kids]).all() and (p.r1[1:] <= p.r1[kids]).all()
    assert (p.c0[1:] >= p.c0[kids]).all() and (p.c1[1:] <= p.c1[kids]).all()
    has_child = np.zeros(len(p), bool)
    has_child[kids] = True
    np.testing.assert_array_equal(p.leaf, ~has_child)
    sums = np.bincount(kids, weights=p.noisy[1:], minlength=len(p))
    np.testing.assert_array_equal(sums[has_child], p.noisy[has_child])  # consistent counts
    assert p.noisy[p.leaf].sum() == out.edges.shape[0]
    # the first kd level cuts rows (children keep the root's columns), the second cuts columns
    lvl1 = np.flatnonzero(p.depth == 1)
    assert (p.c0[lvl1] == 0).all() and (p.c1[lvl1] == n).all() and len(set(p.r0[lvl1])) == lvl1.size
    lvl2 = np.flatnonzero(p.depth == 2)
    np.testing.assert_array_equal(p.r0[lvl2], p.r0[p.parent[lvl2]])
    np.testing.assert_array_equal(p.r1[lvl2], p.r1[p.parent[lvl2]])


# ----------------------------------------------------------------------------------- least squares


def dense_weighted_lstsq(parent: np.ndarray, noisy: np.ndarray, variance: np.ndarray) -> np.ndarray:
    """Generic reference: x = A ẑ, ẑ = argmin ‖D^{-1/2}(A z − y)‖ by np.linalg.lstsq, A the node ×
    leaf subtree-membership matrix (every consistent tree is A z for leaf values z)."""
    n = parent.size
    has_child = np.zeros(n, bool)
    has_child[parent[parent >= 0]] = True
    leaves = np.flatnonzero(~has_child)
    a = np.zeros((n, leaves.size))
    for col, leaf in enumerate(leaves):
        node = leaf
        while node >= 0:
            a[node, col] = 1.0
            node = parent[node]
    s = 1.0 / np.sqrt(variance)
    z, *_ = np.linalg.lstsq(a * s[:, None], noisy * s, rcond=None)
    return a @ z


@pytest.mark.parametrize("seed", range(6))
def test_least_squares_matches_dense_solver(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 40))
    if seed % 2:
        h = quadtree_hierarchy(n, int(rng.integers(1, 4)))
    else:
        e = canonical_edges(clustered_graph(seed, n, 80), n).edges
        h = kd_hybrid_hierarchy(e, n, int(rng.integers(1, 4)), int(rng.integers(0, 2)), 0.5, rng)
    noisy = rng.normal(0, 5, h.n_regions) + rng.integers(0, 10, h.n_regions)
    variance = rng.uniform(0.5, 20.0, h.n_regions)
    got = least_squares(h.parent, noisy, variance)
    np.testing.assert_allclose(got, dense_weighted_lstsq(h.parent, noisy, variance), atol=1e-8)
    has_child = np.zeros(h.n_regions, bool)
    has_child[h.parent[1:]] = True
    sums = np.bincount(h.parent[1:], weights=got[1:], minlength=h.n_regions)
    np.testing.assert_allclose(sums[has_child], got[has_child], atol=1e-9)


def test_top_down_counts_keep_the_total_and_the_capacities():
    rng = np.random.default_rng(11)
    n = 50
    h = quadtree_hierarchy(n, 3)
    cap = h.upper()
    est = rng.normal(0.0, 4.0, h.n_regions)
    est[0] = 123.4
    k = top_down_counts(h.parent, h.depth, h.leaf, cap, est)
    assert k.sum() == 123
    assert (k >= 0).all() and (k <= cap[h.leaf]).all()
    # consistent integer estimates are kept as they are
    leaf_true = rng.integers(0, np.minimum(cap[h.leaf], 5) + 1)
    exact = released_counts(h, leaf_true).astype(float)
    np.testing.assert_array_equal(top_down_counts(h.parent, h.depth, h.leaf, cap, exact), leaf_true)
    full = est.copy()
    full[0] = cap[0] + 50.0  # more than fits: every leaf full
    np.testing.assert_array_equal(top_down_counts(h.parent, h.depth, h.leaf, cap, full), cap[h.leaf])


# ----------------------------------------------------------------------------------- noise


@pytest.mark.parametrize("discrete", [False, True])
def test_noisy_count_variance_monte_carlo(discrete):
    n = 64
    e = canonical_edges(clustered_graph(12, n, 400), n).edges
    h = quadtree_hierarchy(n, 4)
    eps = 0.8
    true = count_upper(e[:, 0], e[:, 1], h.r0, h.r1, h.c0, h.c1)
    rng = np.random.default_rng(13)
    reps = [B.measure_counts(h, e, eps, rng, discrete) for _ in range(250)]
    eps_d = geometric_budgets([4] * 4, eps)
    b = 1.0 / eps_d[h.depth]
    want = discrete_laplace_variance(b) if discrete else 2.0 * b**2
    np.testing.assert_allclose(reps[0].variance, want, rtol=1e-12)
    resid = np.stack([r.noisy - true for r in reps])  # (reps, regions)
    assert abs(resid.mean()) < 0.05 * math.sqrt(want.mean())
    ratio = (resid**2).mean(axis=0) / want  # per region, then pooled
    assert abs(ratio.mean() - 1.0) < 0.05
    for d in range(5):  # per depth where there are enough samples
        sel = h.depth == d
        if sel.sum() * len(reps) >= 8000:
            assert abs((resid[:, sel] ** 2).mean() / want[sel].mean() - 1.0) < 0.05


def test_least_squares_reduces_the_root_variance():
    n = 64
    e = canonical_edges(clustered_graph(14, n, 300), n).edges
    h = quadtree_hierarchy(n, 3)
    true = count_upper(e[:, 0], e[:, 1], h.r0, h.r1, h.c0, h.c1)
    rng = np.random.default_rng(15)
    raw, ls = [], []
    for _ in range(400):
        m = B.measure_counts(h, e, 1.0, rng, False)
        raw.append(m.noisy[0] - true[0])
        ls.append(least_squares(h.parent, m.noisy, m.variance)[0] - true[0])
    assert np.var(ls) < 0.8 * np.var(raw)


# ----------------------------------------------------------------------------------- medians


def em_probabilities(coords: np.ndarray, lo: int, hi: int, eps: float) -> np.ndarray:
    s = np.arange(lo + 1, hi)
    rank = np.searchsorted(np.sort(coords), s, side="left")
    logw = -0.5 * eps * np.abs(2 * rank - coords.size)
    w = np.exp(logw - logw.max())
    return w / w.sum()


def test_private_medians_follow_the_exponential_mechanism():
    coords = np.array([2, 3, 3, 7, 9])
    lo, hi, eps, k = 0, 12, 1.0, 40000
    cuts = private_medians(np.tile(coords, k), np.full(k, coords.size), np.full(k, lo), np.full(k, hi), eps,
                             np.random.default_rng(16))
    assert cuts.min() >= lo + 1 and cuts.max() <= hi - 1
    observed = np.bincount(cuts - (lo + 1), minlength=hi - lo - 1)
    expected = em_probabilities(coords, lo, hi, eps) * k
    assert stats.chisquare(observed, expected).pvalue > 1e-3


def test_private_medians_many_nodes_and_release_path():
    rng = np.random.default_rng(17)
    k = 300
    lo = rng.integers(0, 50, k)
    hi = lo + rng.integers(2, 60, k)
    counts = rng.integers(0, 30, k)
    coords = np.concatenate([np.sort(rng.integers(lo[i], hi[i], counts[i])) for i in range(k)])
    for gen in (rng, None):  # simulation Generator, then OS CSPRNG words
        cuts = private_medians(coords, counts, lo, hi, 2.0, gen)
        assert cuts.dtype == np.int64 and (cuts > lo).all() and (cuts < hi).all()
    # very large ε: the cut is a position where the rank is as close to c/2 as possible
    cuts = private_medians(coords, counts, lo, hi, 1e6, rng)
    for i in range(k):
        block = coords[counts[:i].sum():counts[:i + 1].sum()]
        s = np.arange(lo[i] + 1, hi[i])
        dev = np.abs(2 * np.searchsorted(block, s) - counts[i])
        assert abs(2 * np.searchsorted(block, cuts[i]) - counts[i]) == dev.min()


def test_release_mode_em_distribution_is_plausible():
    coords = np.array([1, 4, 4, 5])
    lo, hi, eps, k = 0, 8, 1.5, 20000
    cuts = private_medians(np.tile(coords, k), np.full(k, 4), np.full(k, lo), np.full(k, hi), eps, None)
    observed = np.bincount(cuts - 1, minlength=hi - lo - 1)
    assert stats.chisquare(observed, em_probabilities(coords, lo, hi, eps) * k).pvalue > 1e-6


# ----------------------------------------------------------------------------------- degrees, Chung–Lu


def test_noisy_degree_variance_is_two_b_squared():
    n = 3000
    e = canonical_edges(clustered_graph(18, n, 9000), n).edges
    deg = np.bincount(e.ravel(), minlength=n)
    eps = 0.7
    b = 2.0 / eps
    rng = np.random.default_rng(19)
    resid = np.concatenate([B.noisy_degrees(e, n, eps, rng, False) - deg for _ in range(30)])
    assert abs(resid.var() / (2 * b * b) - 1.0) < 0.05
    disc = np.concatenate([B.noisy_degrees(e, n, eps, rng, True) - deg for _ in range(30)])
    assert disc.dtype == np.int64
    assert abs(disc.var() / discrete_laplace_variance(b) - 1.0) < 0.05


def test_degree_postprocess_gives_a_valid_sequence():
    w = degree_postprocess(np.array([-3.2, 0.4, 2.6, 99.0, 4.5]))
    assert w.dtype == np.int64 and (w >= 0).all() and (w <= 4).all() and w.sum() % 2 == 0
    np.testing.assert_array_equal(w, [0, 0, 3, 3, 4])  # 0+0+3+4+4 = 11 is odd: one off the largest


def test_chung_lu_pair_probabilities_are_exact():
    w = np.array([3, 2, 2, 1])  # S = 8: heavy pairs (x >= 1/2) and light ones
    s = w.sum()
    rng = np.random.default_rng(20)
    reps = 6000
    freq = np.zeros((4, 4))
    for _ in range(reps):
        e = B.chung_lu(w, rng)
        freq[e[:, 0], e[:, 1]] += 1
    iu = np.triu_indices(4, 1)
    p = np.minimum(1.0, np.outer(w, w) / s)[iu]
    got = freq[iu] / reps
    sd = np.sqrt(np.maximum(p * (1 - p), 1e-12) / reps)
    assert (np.abs(got - p) < 4.5 * sd + 1e-12).all(), (got, p)


def test_chung_lu_expected_degrees():
    rng = np.random.default_rng(21)
    n = 500
    w = rng.integers(1, 30, n)
    w[:5] = [160, 150, 140, 120, 100]  # saturating pairs: p = min(1, w_i w_j / S)
    s = w.sum()
    p = np.minimum(1.0, np.outer(w, w) / s)
    np.fill_diagonal(p, 0.0)
    expect, var = p.sum(axis=1), (p * (1 - p)).sum(axis=1)
    reps = 150
    deg = np.zeros(n)
    for _ in range(reps):
        e = B.chung_lu(w, rng)
        assert_canonical(e, n)
        deg += np.bincount(e.ravel(), minlength=n)
    z = (deg / reps - expect) / np.sqrt(var / reps)
    assert np.abs(z).max() < 5.0
    assert abs((z**2).sum() - n) < 6 * math.sqrt(2 * n)
    small = w < 20  # where w_i w_j / S stays small, the expected degree is ≈ w_i (- w_i²/S)
    assert np.abs(deg[small] / reps - w[small]).mean() < 0.1 * w[small].mean()


def test_degree_baseline_releases_the_postprocessed_degrees():
    n = 400
    raw = clustered_graph(22, n, 1500)
    out = B.degree_chung_lu(raw, n, 1e9, rng=np.random.default_rng(23))
    deg = np.bincount(canonical_edges(raw, n).edges.ravel(), minlength=n)
    np.testing.assert_array_equal(out.info["degrees"], deg)  # huge ε: exact degrees (sum is even)
    assert abs(out.edges.shape[0] - deg.sum() / 2) < 0.1 * deg.sum() / 2


# ----------------------------------------------------------------------------------- release, sparse


@pytest.mark.parametrize("name", list(METHODS))
def test_release_path_runs_and_returns_ints(name):
    n = 60
    raw = clustered_graph(24, n, 200)
    out = METHODS[name](raw, n, 1.0)  # rng=None: discrete Laplace and EM from the OS CSPRNG
    assert_canonical(out.edges, n)
    assert math.isclose(sum(out.budget.values()), 1.0, abs_tol=1e-9)
    if out.partition is not None:
        assert np.array_equal(out.partition.noisy, np.rint(out.partition.noisy))
        assert out.info["noise"] == "discrete Laplace (OS CSPRNG)"


def test_discrete_noise_with_a_generator_is_reproducible():
    n = 60
    raw = clustered_graph(25, n, 200)
    a = B.kd_hybrid(raw, n, 1.0, rng=np.random.default_rng(26), discrete=True)
    b = B.kd_hybrid(raw, n, 1.0, rng=np.random.default_rng(26), discrete=True)
    np.testing.assert_array_equal(a.edges, b.edges)
    assert a.info["noise"] == "discrete Laplace"


def test_sparse_path_never_allocates_n_squared():
    n = 300_000  # n² = 9·10¹⁰ cells: any dense n × n object would need ≥ 90 GB
    rng = np.random.default_rng(27)
    u = rng.integers(0, n - 1, 3000)
    raw = np.column_stack([u, u + rng.integers(1, 50, 3000)]).clip(0, n - 1)
    assert B.default_height(n, 1.0) <= B.DEFAULT_MAX_HEIGHT
    tracemalloc.start()
    try:
        for name, opts in (("quadtree", {"height": 5}), ("kdh", {"height": 4}), ("random", {}), ("degree", {})):
            out = METHODS[name](raw, n, 1.0, rng=np.random.default_rng(28), **opts)
            assert_canonical(out.edges, n)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 200e6
