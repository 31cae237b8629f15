"""dpviz.planner: analytic curves, plans (the smallest budget for a target) and the best mechanism per ε."""

import math

import numpy as np
import pytest

from dpviz.core.accounting import gaussian_rho, zcdp_rho
from dpviz.errors import InputError
from dpviz.marginals.hooks import marginals_curves
from dpviz.stream.hooks import stream_curves
from dpviz.stream.strategy import best_releasable
from dpviz.tree.hooks import lattice_ranges, range_variance, tree_curves, tree_unit_variances
from dpviz.planner.curves import (
    Curve,
    MonteCarloCurve,
    best_by_epsilon,
    plan_target,
    unit_noise,
)
from dpviz.tree.model import tree_from_parents
from dpviz.tree.release import node_variances


@pytest.fixture(scope="module")
def county():
    from dpviz.tree.samples import load_county_sample

    return load_county_sample()


def small_tree(seed: int = 1, n: int = 30):
    rng = np.random.default_rng(seed)
    return tree_from_parents(np.array([-1] + [int(rng.integers(0, i)) for i in range(1, n)]))


def test_laplace_plan_is_closed_form_and_meets_target():
    c = Curve("stream", "naive", "Naive", "max per-step RMSE", "laplace", 362.0)
    (p,) = plan_target([c], 20.0)
    assert p.epsilon == pytest.approx(math.sqrt(362.0) / 20.0, rel=1e-12)
    assert p.rmse == pytest.approx(20.0, rel=1e-12) and p.delta is None and p.rho is None
    assert p.release_epsilon == p.epsilon and p.budget.describe.startswith("ε = ")


def test_gaussian_plan_inverts_the_exact_profile_and_cks_for_release():
    c = Curve("tree", "gmc/uniform/gaussian", "GMC", "RMSE per node", "gaussian", 30.0)
    (p,) = plan_target([c], 2.0, delta=1e-6)
    assert p.rho == pytest.approx(30.0 / 4.0)
    # the simulation's conversion: the exact Gaussian profile gives back (at least) the planned ρ
    assert gaussian_rho(p.epsilon, 1e-6) == pytest.approx(p.rho, rel=1e-6)
    assert gaussian_rho(p.epsilon, 1e-6) >= p.rho * (1 - 1e-12)
    # a discrete release converts by CKS, which is looser: it needs a larger ε for the same ρ
    assert p.release_epsilon > p.epsilon
    assert zcdp_rho(p.release_epsilon, 1e-6) == pytest.approx(p.rho, rel=1e-6)
    (q,) = plan_target([c], 2.0)  # no δ: plan ρ only
    assert q.epsilon is None and q.rho == p.rho and q.budget.describe.startswith("ρ = ")


def test_marginals_plan_uses_cks_in_simulation_too():
    c = Curve("marginals", "rp", "RP", "per-cell RMSE", "gaussian", 23.0, "cks")
    (p,) = plan_target([c], 1.0, delta=1e-6)
    assert zcdp_rho(p.epsilon, 1e-6) == pytest.approx(23.0, rel=1e-6)
    assert p.epsilon == pytest.approx(p.release_epsilon)


def test_plan_rejects_bad_targets_and_mixed_families_without_delta():
    lap = Curve("stream", "a", "A", "m", "laplace", 1.0)
    gau = Curve("stream", "b", "B", "m", "gaussian", 1.0)
    for bad in (0, -1, float("nan"), float("inf")):
        with pytest.raises(InputError, match="target"):
            plan_target([lap], bad)
    with pytest.raises(InputError, match="δ"):
        plan_target([lap, gau], 1.0)
    with pytest.raises(InputError, match="delta"):
        plan_target([gau], 1.0, delta=2.0)
    with pytest.raises(InputError):
        Curve("stream", "a", "A", "m", "laplace", 0.0)


def test_tree_node_curves_are_theorem_5(county):
    t = county.tree
    curves = {c.mechanism: c for c in tree_curves(t, query="node", families=("laplace", "gaussian"))}
    # uniform split, Laplace ε = 1: every node has σ² = 2h², and Σ Var(v̄_i) = m σ² (Theorem 5, Eq. 28)
    assert curves["gmc/uniform"].unit_mse == pytest.approx(t.m * 2 * t.h**2 / t.n, rel=1e-9)
    assert curves["processless/uniform"].unit_mse == pytest.approx(2 * t.h**2, rel=1e-12)
    # Gaussian ρ = 1: σ² = h/2 per node
    assert curves["gmc/uniform/gaussian"].unit_mse == pytest.approx(t.m * (t.h / 2) / t.n, rel=1e-9)
    assert curves["gmc/geometric"].unit_mse < curves["gmc/uniform"].unit_mse  # more budget to the many leaves
    assert all(c.metric == "RMSE per node" for c in curves.values())


@pytest.mark.parametrize("split", ["uniform", "geometric"])
def test_range_variance_matches_the_dense_covariance(split):
    t = small_tree()
    d = node_variances(t, unit_noise("laplace"), split)
    n, n1 = t.n, t.n1
    m_mat = np.zeros((n, n1))
    m_mat[np.arange(n1), np.arange(n1)] = 1.0
    m_mat[np.arange(1, n), t.parent[1:]] -= 1.0
    dd = np.diag(d)
    cov = dd - dd @ m_mat @ np.linalg.solve(m_mat.T @ dd @ m_mat, m_mat.T @ dd)
    a, b = lattice_ranges(t.m)
    dense = np.array([cov[n1 + x:n1 + y + 1, n1 + x:n1 + y + 1].sum() for x, y in zip(a, b)])
    np.testing.assert_allclose(range_variance(t, d, (a, b), gls=True), dense, rtol=1e-10)
    noisy = np.array([d[n1 + x:n1 + y + 1].sum() for x, y in zip(a, b)])
    np.testing.assert_allclose(range_variance(t, d, (a, b), gls=False), noisy, rtol=1e-12)
    # the node variances of the same GLS release (diagonal of cov) are Theorem 5's
    np.testing.assert_allclose(tree_unit_variances(t, "laplace", split, "gmc"), np.diag(cov), rtol=1e-9)


def _range_variance_by_passes(t, d, a, b):
    """The slow reference: Cov(v̄) r = c · gmc(plan, d_rel ∘ r), one GMC pass per range (what range_variance did
    before its matrix solve)."""
    from dpviz.tree.estimators import check_plan, plan_for
    from dpviz.tree.gmc import gmc

    p = plan_for(t, d)
    c = check_plan(p, t, d)
    ref = np.ones(t.n) if p.d is None else p.d
    out = []
    for x, y in zip(a, b):
        r = np.zeros(t.n)
        lo, hi = t.n1 + int(x), t.n1 + int(y) + 1
        r[lo:hi] = ref[lo:hi]
        out.append(c * gmc(p, r)[lo:hi].sum())
    return np.array(out)


def test_range_variance_matrix_solve_matches_one_gmc_pass_per_range_on_random_trees(monkeypatch):
    """The matrix solve (Gram of the lattice's boundaries, or scattered ranges' own u) against one GMC pass per
    range, on random small trees (random parents, so leaves hang at every depth; a star; a path), both
    gls settings, both splits, random per-node variances too; and its fallback for large trees (forced)."""
    import dpviz.tree.hooks as hooks

    rng = np.random.default_rng(19)
    trees = [small_tree(seed, int(n)) for seed, n in enumerate(rng.integers(2, 60, size=25))]
    trees += [tree_from_parents(np.array([-1] + [0] * 9)), tree_from_parents(np.array([-1, 0, 1, 2, 3, 3]))]
    for i, t in enumerate(trees):
        for d in (node_variances(t, unit_noise("laplace"), "uniform"),
                  node_variances(t, unit_noise("gaussian"), "geometric"), rng.uniform(0.2, 5.0, t.n)):
            lattice = lattice_ranges(t.m, 6)
            lo = rng.integers(0, t.m, 12)
            scattered = (lo, np.minimum(t.m - 1, lo + rng.integers(0, 4, 12)))
            for a, b in (lattice, scattered):
                slow = _range_variance_by_passes(t, d, a, b)
                np.testing.assert_allclose(range_variance(t, d, (a, b), gls=True), slow, rtol=1e-9,
                                           err_msg=f"tree {i}")
                noisy = np.array([d[t.n1 + x:t.n1 + y + 1].sum() for x, y in zip(a, b)])
                np.testing.assert_allclose(range_variance(t, d, (a, b), gls=False), noisy, rtol=1e-12)
                assert np.all(range_variance(t, d, (a, b), gls=True) <= noisy * (1 + 1e-12))  # GLS never hurts
    monkeypatch.setattr(hooks, "RANGE_BLOCK", 0)  # the per-range passes of very large trees
    t, a, b = trees[3], *lattice_ranges(trees[3].m)
    d = node_variances(t, unit_noise("laplace"), "geometric")
    np.testing.assert_allclose(range_variance(t, d, (a, b), gls=True), _range_variance_by_passes(t, d, a, b),
                               rtol=1e-12)


def test_lattice_ranges_cover_every_range_of_small_trees_and_spread_on_big_ones():
    a, b = lattice_ranges(5)
    assert len(a) == 15 and np.all(a <= b)
    a, b = lattice_ranges(3142, 64)
    assert len(a) == 64 * 65 // 2 and a.min() >= 0 and b.max() < 3142 and np.all(a <= b)
    with pytest.raises(InputError):
        lattice_ranges(0)


def test_stream_curves_naive_closed_form_and_short_vs_long_streams():
    c = {x.mechanism: x for x in stream_curves(100, metric="max")}
    assert c["naive"].unit_mse == pytest.approx(2 * 100)  # Var ŝ_N = N·2/ε²
    m = {x.mechanism: x for x in stream_curves(100, metric="mean")}
    assert m["naive"].unit_mse == pytest.approx(2 * 101 / 2)  # mean of 2t/ε², t = 1..N
    assert "sqrt" not in c  # Gaussian only
    assert "sqrt" in {x.mechanism for x in stream_curves(100, families=("gaussian",))}
    short = plan_target(stream_curves(16, metric="mean"), 10.0)
    long = plan_target(stream_curves(4096, metric="mean"), 10.0)
    assert short[0].mechanism == "naive"  # naive beats FDA on short streams ...
    ranks = [p.mechanism for p in long]
    assert ranks.index("fenwick-fda") < ranks.index("naive")  # ... and FDA (optimal λ for the mean) beats it on long ones
    assert long[0].mechanism == best_releasable("mean", "laplace", 4096)  # the best: the release default's choice
    worst = plan_target(stream_curves(4096, metric="max"), 10.0)
    assert worst[0].mechanism == best_releasable("max", "laplace", 4096)  # the worst step
    assert [p.mechanism for p in worst].index("honaker") < [p.mechanism for p in worst].index("fenwick-fda")
    for metric in ("max", "mean"):  # Gaussian: the optimised factorisations are among the candidates
        g = plan_target(stream_curves(4096, metric=metric, families=("gaussian",)), 10.0)
        assert {"blt", "banded", "sqrt"} <= {p.mechanism for p in g}
        assert g[0].mechanism == best_releasable(metric, "gaussian", 4096)
    with pytest.raises(InputError):
        stream_curves(100, metric="median")
    with pytest.raises(InputError):
        stream_curves(0)


def test_best_by_epsilon_crosses_between_noise_families():
    curves = [c for c in stream_curves(1024, families=("laplace", "gaussian")) if c.mechanism.startswith("fenwick-fda")]
    runs = best_by_epsilon(curves, np.geomspace(0.01, 100, 200), 1e-6)
    assert [r[2] for r in runs] == ["fenwick-fda/gaussian", "fenwick-fda"]  # Laplace wins at large ε
    assert 5 < runs[1][0] < 60
    one_family = best_by_epsilon(stream_curves(1024), np.geomspace(0.01, 100, 50))
    assert len(one_family) == 1  # a/ε² for all: the ranking does not move with ε


def test_marginals_curves_match_the_pipeline_variance():
    from dpviz.marginals.samples import load_titanic_sample
    from dpviz.core.noise import Noise
    from dpviz.marginals.model import workload_cliques
    from dpviz.marginals.release import simulate

    data = load_titanic_sample()
    wl = workload_cliques(data.domain, 2)
    curves = {c.mechanism: c for c in marginals_curves(data.domain, wl)}
    sim = simulate(data, Noise.gaussian(1.0), ["mle"], 3, workload=2)
    assert curves["rp"].unit_mse == pytest.approx(sim.results["mle"].mean_variance, rel=1e-12)
    assert curves["rp-release"].unit_mse > curves["rp"].unit_mse  # the conservative per-marginal charge
    assert curves["rp"].family == "gaussian" and curves["rp"].conversion == "cks"


def test_monte_carlo_curve_interpolates_a_monotone_power_law():
    c = MonteCarloCurve("graph", "kdh", "kdh", "Cut", (0.5, 1.0, 2.0), (0.4, 0.2, 0.25), (0.3, 0.1, 0.2),
                        (0.5, 0.3, 0.3), 4)
    np.testing.assert_allclose(c.loss_points(), [0.4, 0.2, 0.2])  # made non-increasing
    np.testing.assert_allclose(c.loss(np.array([0.5, 1.0, 4.0])), [0.4, 0.2, 0.2])
    assert c.loss(0.25)[0] == pytest.approx(0.8)  # the first segment's power law (∝ 1/ε) extended
    assert c.budget_for(0.3) == pytest.approx(2 / 3, rel=0.01)  # loss = 0.2/ε between 0.5 and 1
    assert c.budget_for(0.1) is None
    assert c.budget_for(0.45) == 0.5  # met at the grid's first ε: no extrapolation below the grid
    up = MonteCarloCurve("graph", "kdh", "kdh", "Jaccard", (1.0, 2.0), (0.2, 0.6), (0.1, 0.5), (0.3, 0.7), 4,
                         lower_is_better=False)
    assert up.value(2.0)[0] == pytest.approx(0.6) and up.budget_for(0.5) < 2.0
    with pytest.raises(InputError):
        MonteCarloCurve("graph", "x", "x", "m", (1.0,), (0.1,), (0.1,), (0.1,), 1)


def test_bisect_epsilon_brackets_the_smallest_budget_of_a_known_curve():
    """core.curves.bisect_epsilon (the generic Monte-Carlo search every capability without a closed form uses):
    on an exact error 2/ε with target 0.5 the answer is ε = 4, bracketed after hi, lo and ``steps`` midpoints."""
    import numpy as np

    from dpviz.core.curves import bisect_epsilon

    plan = bisect_epsilon(lambda eps: np.full(3, 2.0 / eps), "m", "err", 0.5, True, 3, 0.1, 100.0, 30)
    assert [e[0] for e in plan.evaluations[:2]] == [100.0, 0.1] and len(plan.evaluations) == 32
    assert plan.bracket[0] < 4.0 <= plan.bracket[1] and plan.epsilon == pytest.approx(4.0, rel=1e-6)
    assert plan.se == 0.0 and "the answer lies in" in plan.note
    never = bisect_epsilon(lambda eps: np.full(2, 1.0), "m", "err", 0.5, True, 2, 0.1, 100.0, 5)
    assert never.epsilon is None and "not reached" in never.note and len(never.evaluations) == 1
    higher = bisect_epsilon(lambda eps: np.full(2, 1.0 - 1.0 / (1.0 + eps)), "m", "overlap", 0.8, False, 2, 0.1,
                            100.0, 40)
    assert higher.epsilon == pytest.approx(4.0, rel=1e-6)  # 1 - 1/(1+ε) ≥ 0.8 from ε = 4
