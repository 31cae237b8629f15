"""Noise, sensitivity, Theorem 5 (Monte-Carlo) and the release pipeline of the tree capability."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpviz.privacy.accounting import approx_dp_to_zcdp, pure_dp_to_zcdp, zcdp_to_approx_dp
from dpviz.tree.cli import load_input
from dpviz.tree.gmc import gmc, plan
from dpviz.tree.io import build_tree
from dpviz.tree.model import tree_from_parents
from dpviz.tree.release import NoiseSpec, compare, level_shares, node_scales, node_variances, release, unit_noise
from dpviz.tree.synthetic import complete_tree, path_like_tree, random_fanout_tree


@pytest.fixture(scope="module")
def county():
    return load_input("county")


def test_theorem5_monte_carlo_on_the_county_tree(county):
    """Mean total squared error of GMC over 2000 draws within 3% of 2 m h² / ε² (Eq. 28),
    and of the raw noisy vector within 3% of 2 n h² / ε² (Eq. 27)."""
    tree, v = county.tree, county.v
    eps = 0.5
    rng = np.random.default_rng(11)
    p = plan(tree)
    draws = 2000
    after = np.empty(draws)
    before = np.empty(draws)
    for i in range(draws):
        noisy = v + rng.laplace(0.0, tree.h / eps, tree.n)
        before[i] = np.sum((noisy - v) ** 2)
        after[i] = np.sum((gmc(p, noisy) - v) ** 2)
    expect_after = 2 * tree.m * tree.h**2 / eps**2
    expect_before = 2 * tree.n * tree.h**2 / eps**2
    assert abs(after.mean() / expect_after - 1) < 0.03
    assert abs(before.mean() / expect_before - 1) < 0.03


def test_gaussian_noise_post_processing_variance_monte_carlo():
    """Gaussian option: GMC's total error is m σ² with σ² = h / (2ρ) (uniform split)."""
    rng = np.random.default_rng(12)
    data = random_fanout_tree(400, 20.0, rng)
    spec = NoiseSpec(epsilon=1.0, mechanism="gaussian", delta=1e-6)
    sigma2 = data.tree.h / (2 * spec.rho)
    np.testing.assert_allclose(node_variances(data.tree, spec), sigma2)
    p = plan(data.tree)
    errs = [np.sum((release(data, spec, "gmc", rng, gmc_plan=p).released - data.v) ** 2) for _ in range(2000)]
    assert abs(np.mean(errs) / (data.tree.m * sigma2) - 1) < 0.03


@pytest.mark.parametrize("mechanism", ["laplace", "gaussian"])
@pytest.mark.parametrize("split", ["uniform", "geometric"])
def test_node_noise_variance_monte_carlo(mechanism, split):
    """Empirical per-level variance of the added noise agrees with the analytic one (5000 draws)."""
    rng = np.random.default_rng(13)
    data = complete_tree(2, 5, 5.0, rng)
    tree = data.tree
    spec = NoiseSpec(epsilon=0.7, mechanism=mechanism, split=split)
    scales = node_scales(tree, spec)
    noise = np.stack([unit_noise(tree.n, mechanism, rng) for _ in range(5000)]) * scales
    emp = noise.var(axis=0)
    ana = node_variances(tree, spec)
    for lev in range(1, tree.h + 1):  # pool nodes of a level (same variance) for a tight estimate
        sel = tree.depth == lev
        assert abs(emp[sel].mean() / ana[sel].mean() - 1) < 0.06, (lev, emp[sel].mean(), ana[sel].mean())


@pytest.mark.parametrize("split", ["uniform", "geometric"])
def test_budget_split_composes_to_epsilon(split):
    for h in (1, 2, 5, 24):
        shares = level_shares(h, split)
        assert shares.shape == (h,) and np.isclose(shares.sum(), 1.0) and np.all(shares > 0)
    tree = complete_tree(2, 6, 1.0, np.random.default_rng(0)).tree
    spec = NoiseSpec(epsilon=2.0, split=split)
    b = node_scales(tree, spec)
    # a record touches one node per level: Σ_levels 1/b_ℓ = Σ ε_ℓ = ε
    per_level = np.array([1.0 / b[tree.depth == lev][0] for lev in range(1, tree.h + 1)])
    assert np.isclose(per_level.sum(), 2.0)
    if split == "uniform":
        np.testing.assert_allclose(b, tree.h / 2.0)  # Lap(h/ε), Alg. 2 step 3


@settings(max_examples=80, deadline=None)
@given(st.lists(st.integers(0, 10**6), min_size=1, max_size=60), st.data())
def test_sensitivity_one_record_changes_l1_by_depth_at_most_h(parent_seeds, data):
    """Adding or removing one record at leaf j changes v by exactly depth(j) in L1 (≤ h, = h at the
    deepest leaves); h is what Lap(h/ε) calibrates to."""
    n = len(parent_seeds)
    tree = tree_from_parents(np.array([-1] + [parent_seeds[i] % i for i in range(1, n)]))
    x = np.array(data.draw(st.lists(st.integers(0, 50), min_size=tree.m, max_size=tree.m)), float)
    j = data.draw(st.integers(0, tree.m - 1))
    sign = data.draw(st.sampled_from([1.0, -1.0]))
    if sign < 0 and x[j] == 0:
        x[j] = 1.0  # removing a record needs one to be there
    x2 = x.copy()
    x2[j] += sign
    l1 = np.abs(build_tree(tree, x2) - build_tree(tree, x)).sum()
    assert l1 == tree.depth[tree.n1 + j] <= tree.h
    deepest = int(np.argmax(tree.depth[tree.n1 :]))
    x3 = x.copy()
    x3[deepest] += 1
    assert np.abs(build_tree(tree, x3) - build_tree(tree, x)).sum() == tree.h


def test_sensitivity_is_exactly_h_on_complete_trees():
    rng = np.random.default_rng(14)
    data = complete_tree(3, 5, 4.0, rng)
    for j in rng.choice(data.tree.m, 20, replace=False):
        x2 = data.x.copy()
        x2[j] += 1
        assert np.abs(build_tree(data.tree, x2) - data.v).sum() == data.tree.h


def test_compare_reports_every_method_on_one_draw(county):
    rng = np.random.default_rng(15)
    table, results = compare(county, NoiseSpec(epsilon=1.0), ["gmc", "gmc-nosqrt", "privtrie", "lee",
                                                               "boosting", "processless"], rng, q=2000)
    by = table.set_index("method")
    for m in ("gmc", "gmc-nosqrt", "privtrie", "lee"):
        assert by.loc[m, "bias"] < 1e-6 * county.v[0]
        np.testing.assert_allclose(results[m].released, results["gmc"].released, rtol=1e-9, atol=1e-6)
    assert by.loc["processless", "bias"] > 1.0 and by.loc["boosting", "bias"] > 1.0
    # same noise for all methods
    assert all(np.array_equal(r.noisy, results["gmc"].noisy) for r in results.values())
    # optimal post-processing beats raw noise on range queries
    assert by.loc["gmc", "rmse_RQ"] < by.loc["processless", "rmse_RQ"]
    assert np.isclose(by.loc["gmc", "expected_sq_error"], 2 * county.tree.m * 25)  # Thm 5: 2mh²/ε²
    assert np.isclose(by.loc["processless", "expected_sq_error"], 2 * county.tree.n * 25)  # Eq. 27
    assert np.isnan(by.loc["boosting", "expected_sq_error"])
    geo, _ = compare(county, NoiseSpec(epsilon=1.0, split="geometric"), ["gmc"], rng, q=100)
    assert np.isfinite(geo.loc[0, "expected_sq_error"])


def test_deep_path_like_tree_release_without_recursion_limit():
    rng = np.random.default_rng(16)
    data = path_like_tree(20_001, 3.0, rng)
    assert data.tree.h > 5000
    r = release(data, NoiseSpec(epsilon=1.0), "gmc", rng)
    r2 = release(data, NoiseSpec(epsilon=1.0), "privtrie", rng)
    from dpviz.tree.metrics import consistency_bias

    assert consistency_bias(data.tree, r.released) < 1e-6
    assert consistency_bias(data.tree, r2.released) < 1e-6


def test_accounting_round_trips():
    for rho in (0.01, 0.5, 3.0):
        for delta in (1e-9, 1e-5):
            assert np.isclose(approx_dp_to_zcdp(zcdp_to_approx_dp(rho, delta), delta), rho)
    assert pure_dp_to_zcdp(2.0) == 2.0
    with pytest.raises(ValueError):
        approx_dp_to_zcdp(1.0, 0.0)
    with pytest.raises(ValueError):
        NoiseSpec(epsilon=-1.0)
