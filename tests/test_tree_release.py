"""The tree strategy, estimators, simulate() and release() (Python API) of the tree capability."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpviz.core import samplers
from dpviz.core.accounting import bun_steinke_rho, gaussian_rho, zcdp_rho
from dpviz.core.noise import Noise
from dpviz.core.protocols import Estimator, LinearMeasurement, Strategy, measure
from dpviz.core.structure import STRUCTURE_FROM_DATA_NOTICE, StructureSource
from dpviz.errors import InputError
from dpviz.tree.estimators import GMC, METHODS, estimator, plan_for
from dpviz.tree.gmc import gmc, plan
from dpviz.tree.io import load as load_source, load_tree_file
from dpviz.tree.model import TreeData, build_tree
from dpviz.tree.metrics import consistency_bias
from dpviz.tree.model import tree_from_parents
from dpviz.tree.release import (RELEASE_COLUMNS, Simulation, TreeRelease, expected_variance, node_scales,
                                published_variance,
                                node_variances, release, simulate)
from dpviz.tree.strategy import TreeLevels, level_shares
from dpviz.tree.synthetic import complete_tree, path_like_tree, random_fanout_tree

LAPLACE = Noise.laplace(1.0, discrete=True)


@pytest.fixture(scope="module")
def county():
    return load_source("sample:county")


@pytest.fixture(scope="module")
def fanout():
    return random_fanout_tree(1000, 10.0, np.random.default_rng(4))


def input_order(tree, doh: np.ndarray) -> np.ndarray:
    return np.asarray(doh)[np.argsort(tree.order)]


# ---- strategy: sensitivity, scales, accounting -----------------------------------------------------------
def test_tree_levels_implements_the_core_protocols(county):
    s = TreeLevels(county.tree, "geometric")
    assert isinstance(s, Strategy)
    for m in METHODS:
        assert isinstance(estimator(m, county.tree), Estimator)
    assert s.sensitivity("laplace") == 5 and s.sensitivity("gaussian") == pytest.approx(np.sqrt(5))
    with pytest.raises(InputError, match="split"):
        TreeLevels(county.tree, "linear")


@pytest.mark.parametrize("noise", [Noise.laplace(0.7), Noise.laplace(0.7, discrete=True), Noise.gaussian(0.3),
                                   Noise.gaussian_approx(1.0, 1e-6, discrete=True)])
@pytest.mark.parametrize("split", ["uniform", "geometric"])
def test_scales_spend_exactly_the_budget(noise, split):
    """Sequential composition over levels, recomputed from the scales: Σ 1/b_ℓ = ε, Σ 1/(2σ_ℓ²) = ρ."""
    tree = complete_tree(2, 6, 1.0, np.random.default_rng(0)).tree
    s = TreeLevels(tree, split)
    budget = noise.epsilon if noise.family == "laplace" else noise.rho
    assert s.spent(noise) == pytest.approx(budget, rel=1e-12)
    shares = level_shares(tree.h, split)
    assert shares.shape == (6,) and shares.sum() == pytest.approx(1.0) and np.all(shares > 0)
    scales = s.scales(noise)
    for lev in range(1, tree.h + 1):  # one scale per depth level
        assert np.unique(scales[tree.depth == lev]).size == 1
    if split == "uniform":  # the whole-budget scale for Δ₁ = h / Δ₂ = √h: Lap(h/ε), Alg. 2 step 3
        np.testing.assert_allclose(scales, noise.scale(s.sensitivity(noise.family)), rtol=1e-15)
    else:  # more budget (less noise) for the deeper levels
        assert np.all(np.diff(s.level_scales(noise)) < 0)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.integers(0, 10**6), min_size=1, max_size=60), st.data())
def test_neighbouring_inputs_stay_within_the_reported_sensitivity(parent_seeds, data):
    """Add or remove one person in one leaf: each depth level the leaf reaches changes by exactly 1,
    deeper levels by 0; L1 ≤ h and L2 ≤ √h (= at the deepest leaf) as the strategy reports; and the
    privacy loss with the per-node scales of either split is at most the budget."""
    n = len(parent_seeds)
    tree = tree_from_parents(np.array([-1] + [parent_seeds[i] % i for i in range(1, n)]))
    s_uni = TreeLevels(tree, "uniform")
    x = np.array(data.draw(st.lists(st.integers(0, 50), min_size=tree.m, max_size=tree.m)), float)
    j = data.draw(st.integers(0, tree.m - 1))
    sign = data.draw(st.sampled_from([1.0, -1.0]))
    if sign < 0 and x[j] == 0:
        x[j] = 1.0  # removing a person needs one to be there
    x2 = x.copy()
    x2[j] += sign
    diff = s_uni.answer(x2) - s_uni.answer(x)
    assert set(np.unique(diff)) <= {0.0, sign}
    per_level = np.bincount(tree.depth, weights=np.abs(diff), minlength=tree.h + 1)[1:]
    reach = int(tree.depth[tree.n1 + j])
    np.testing.assert_array_equal(per_level, (np.arange(1, tree.h + 1) <= reach).astype(float))
    l1, l2 = np.abs(diff).sum(), np.sqrt((diff**2).sum())
    assert l1 <= s_uni.sensitivity("laplace") and l2 <= s_uni.sensitivity("gaussian") + 1e-12
    assert (l1 == tree.h) == (reach == tree.h)
    for split in ("uniform", "geometric"):
        s = TreeLevels(tree, split)
        lap, gau = Noise.laplace(0.9, discrete=True), Noise.gaussian(0.4, discrete=True)
        assert np.sum(np.abs(diff) / s.scales(lap)) <= 0.9 * (1 + 1e-12)
        assert np.sum(diff**2 / (2 * s.scales(gau) ** 2)) <= 0.4 * (1 + 1e-12)
    deepest = int(np.argmax(tree.depth[tree.n1:]))
    x3 = x.copy()
    x3[deepest] += 1
    assert np.abs(s_uni.answer(x3) - s_uni.answer(x)).sum() == s_uni.sensitivity("laplace")


def test_gaussian_calibration_uses_the_exact_profile_and_cks_for_discrete(county):
    """Continuous (simulate): σ² = h/(2ρ) with ρ = gaussian_rho(ε, δ), below the old Bun–Steinke σ²;
    discrete (release): ρ from the CKS bound, valid for any ρ-zCDP mechanism."""
    h = county.tree.h
    d = node_variances(county.tree, Noise.gaussian_approx(1.0, 1e-6), "uniform")
    exact = h / (2 * gaussian_rho(1.0, 1e-6))
    np.testing.assert_allclose(d, exact, rtol=1e-12)
    assert exact < h / (2 * bun_steinke_rho(1.0, 1e-6))
    dd = node_variances(county.tree, Noise.gaussian_approx(1.0, 1e-6, discrete=True), "uniform")
    sigma = np.sqrt(h / (2 * zcdp_rho(1.0, 1e-6)))
    np.testing.assert_allclose(dd, samplers.discrete_gaussian_variance(sigma), rtol=1e-12)


def test_discrete_variances_are_the_samplers_not_the_continuous_formula():
    tree = complete_tree(2, 4, 1.0, np.random.default_rng(0)).tree
    noise = Noise.laplace(8.0, discrete=True)  # b = 0.5 at the uniform split: far from 2b²
    b = node_scales(tree, noise)
    d = node_variances(tree, noise)
    np.testing.assert_allclose(d, samplers.discrete_laplace_variance(b), rtol=1e-12)
    assert np.all(np.abs(d / (2 * b**2) - 1) > 0.1)


# ---- Monte-Carlo: discrete releases have the exact per-node variance ---------------------------------------
@pytest.mark.parametrize("noise", [Noise.laplace(6.0, discrete=True), Noise.gaussian(12.0, discrete=True)],
                         ids=["laplace", "gaussian"])
@pytest.mark.parametrize("split", ["uniform", "geometric"])
def test_release_noise_monte_carlo_matches_exact_variance(noise, split):
    """3000 releases (seeded Generator): the empirical variance of noisy − v, pooled per level, is within
    5 standard errors of the exact discrete variance — and the continuous formula is rejected at some
    level (scales of about 1, where they differ), so the test can tell the two apart."""
    rng = np.random.default_rng(21)
    data = complete_tree(2, 5, 6.0, rng)
    tree, v = data.tree, data.v
    draws = np.array([release(data, noise, split=split, method="processless", rng=rng).noisy - v for _ in range(3000)])
    exact = node_variances(tree, noise, split)
    cont = noise.as_discrete(False).variance_at(node_scales(tree, noise, split))
    rejected_continuous = False
    for lev in range(1, tree.h + 1):
        e = draws[:, tree.depth == lev].ravel()
        var, se = (e**2).mean(), np.sqrt(((e**2 - (e**2).mean()) ** 2).mean() / e.size)
        target = exact[tree.depth == lev][0]
        assert abs(var - target) < 5 * se, (lev, var, target, se)
        assert abs(e.mean()) < 5 * np.sqrt(var / e.size)
        rejected_continuous |= abs(var - cont[tree.depth == lev][0]) > 5 * se
    assert rejected_continuous


def test_theorem5_monte_carlo_on_the_county_tree(county):
    """Mean total squared error of GMC over 2000 continuous draws within 3% of 2 m h² / ε² (Eq. 28),
    and of the raw noisy vector within 3% of 2 n h² / ε² (Eq. 27)."""
    tree, v = county.tree, county.v
    eps = 0.5
    rng = np.random.default_rng(11)
    p = plan(tree)
    draws = 2000
    after, before = np.empty(draws), np.empty(draws)
    for i in range(draws):
        noisy = v + rng.laplace(0.0, tree.h / eps, tree.n)
        before[i] = np.sum((noisy - v) ** 2)
        after[i] = np.sum((gmc(p, noisy) - v) ** 2)
    assert abs(after.mean() / (2 * tree.m * tree.h**2 / eps**2) - 1) < 0.03
    assert abs(before.mean() / (2 * tree.n * tree.h**2 / eps**2) - 1) < 0.03
    assert expected_variance(tree, Noise.laplace(eps)).sum() == pytest.approx(2 * tree.m * tree.h**2 / eps**2)


def test_gls_estimate_variance_monte_carlo_gaussian_geometric():
    """The Estimate's analytic variance (weighted Theorem 5) against 2000 measured draws per node level."""
    rng = np.random.default_rng(12)
    data = random_fanout_tree(400, 20.0, rng)
    tree = data.tree
    noise = Noise.gaussian_approx(1.0, 1e-6)
    strategy = TreeLevels(tree, "geometric")
    est = GMC(tree)
    outs = []
    for _ in range(2000):
        fit = est.fit(measure(strategy, data, noise, rng))
        outs.append(fit.values)
    emp = np.var(np.array(outs) - data.v, axis=0)
    for lev in range(1, tree.h + 1):
        sel = tree.depth == lev
        assert emp[sel].mean() == pytest.approx(fit.variance[sel].mean(), rel=0.08), lev
    np.testing.assert_allclose(fit.variance, expected_variance(tree, noise, "geometric"), rtol=1e-12)


# ---- GMC plans must match the measurement -------------------------------------------------------------------
def test_mismatched_gmc_plan_raises_instead_of_a_silently_wrong_answer(fanout):
    tree = fanout.tree
    uniform_plan = plan(tree)
    rng = np.random.default_rng(5)
    meas = measure(TreeLevels(tree, "geometric"), fanout, Noise.laplace(1.0), rng)
    right = GMC(tree).fit(meas).values
    wrong = gmc(uniform_plan, np.asarray(meas.values, float))  # what used to be returned with no error
    assert np.max(np.abs(right - wrong)) > 0.5
    with pytest.raises(InputError, match="do not match"):
        GMC(tree, plan=uniform_plan).fit(meas)
    with pytest.raises(InputError, match="do not match"):
        release(fanout, LAPLACE, split="geometric", method="gmc", rng=rng, plan=uniform_plan)
    geo_plan = plan_for(tree, node_variances(tree, Noise.laplace(1.0), "geometric"))
    with pytest.raises(InputError, match="do not match"):
        release(fanout, LAPLACE, split="uniform", method="gmc", rng=rng, plan=geo_plan)
    for m in ("lee", "privtrie"):
        with pytest.raises(InputError, match="do not match"):
            release(fanout, LAPLACE, split="geometric", method=m, rng=rng, plan=uniform_plan)
    other = random_fanout_tree(999, 1.0, np.random.default_rng(6)).tree
    with pytest.raises(InputError, match="another tree"):
        release(fanout, LAPLACE, split="uniform", method="gmc", rng=rng, plan=plan(other))
    # a matching plan is used (uniform: any ε), and gives the same answer as building one
    rel = release(fanout, LAPLACE, split="uniform", method="gmc", rng=rng, plan=uniform_plan)
    np.testing.assert_allclose(rel.released, gmc(plan(tree), rel.noisy.astype(float)), atol=1e-9)


# ---- release(): no truth, discrete, integer, fresh -------------------------------------------------------------
def test_release_api_publishes_no_truth(fanout):
    fanout = dataclasses.replace(fanout, structure=StructureSource("declared", "fanout.csv"))
    tree, v = fanout.tree, fanout.v
    rel = release(fanout, LAPLACE)  # OS CSPRNG
    assert isinstance(rel, TreeRelease) and rel.mode == "release"
    assert not hasattr(rel, "x") and not hasattr(rel, "v")
    table, meta = rel.table(), rel.metadata()
    assert tuple(table.columns) == RELEASE_COLUMNS and len(table) == tree.n
    assert table["noisy"].dtype == np.int64
    v_in = input_order(tree, v)
    for col in ("noisy", "released", "variance", "std"):
        assert not np.allclose(table[col].to_numpy(float), v_in), col
    assert (table.node.to_numpy() == input_order(tree, fanout.node_ids)).all()
    assert consistency_bias(tree, rel.released) < 1e-6 * v[0]
    np.testing.assert_allclose(rel.variance, expected_variance(tree, LAPLACE, "uniform"), rtol=1e-12)
    assert meta["mode"] == "release" and meta["capability"] == "tree" and meta["method"] == "gmc"
    assert meta["noise"] == LAPLACE.as_dict() and meta["split"] == "uniform"
    assert meta["structure"] == {"n": tree.n, "m": tree.m, "h": tree.h, "source": "declared",
                                 "declaration": "fanout.csv"}
    assert meta["sensitivity"] == {"norm": "L1", "value": float(tree.h)}
    assert meta["level_scales"] == [tree.h / 1.0] * tree.h
    assert "CSPRNG" in meta["samplers"] and "dpviz.core.samplers" in meta["samplers"] and meta["randomness"] == "OS CSPRNG"
    # the description depends on the structure and the settings only: other counts, same description
    other = TreeData(tree, fanout.x + np.arange(tree.m) % 7, name=fanout.name, structure=fanout.structure)
    meta2 = release(other, LAPLACE).metadata()
    assert {k: x for k, x in meta.items() if k != "created_utc"} == {k: x for k, x in meta2.items()
                                                                      if k != "created_utc"}
    assert str(int(v[0])) not in json.dumps(meta)
    again = release(fanout, LAPLACE)
    assert not np.array_equal(again.noisy, rel.noisy)  # fresh noise every call


def test_a_structure_read_from_the_data_is_said_in_the_table_and_the_metadata(fanout):
    """No declaration (``structure`` None): the notice is a column on every row and in the metadata."""
    assert fanout.structure is None
    rel = release(fanout, LAPLACE)
    table, meta = rel.table(), rel.metadata()
    assert tuple(table.columns) == (*RELEASE_COLUMNS, "structure") and len(table) == fanout.tree.n
    assert set(table["structure"]) == {STRUCTURE_FROM_DATA_NOTICE}
    assert meta["structure"]["source"] == "data" and meta["structure"]["notice"] == STRUCTURE_FROM_DATA_NOTICE


def test_release_with_a_seeded_generator_is_reproducible_and_each_method_works(fanout):
    a = release(fanout, LAPLACE, rng=np.random.default_rng(1))
    b = release(fanout, LAPLACE, rng=np.random.default_rng(1))
    np.testing.assert_array_equal(a.noisy, b.noisy)
    assert "not private" in a.randomness
    gauss = Noise.gaussian_approx(1.0, 1e-6, discrete=True)
    for m in METHODS:
        r = release(fanout, gauss, split="geometric", method=m, rng=np.random.default_rng(2))
        np.testing.assert_array_equal(r.noisy, release(fanout, gauss, split="geometric", method="processless",
                                                        rng=np.random.default_rng(2)).noisy)
        t, meta = r.table(), r.metadata()
        assert meta["method"] == m and meta["sensitivity"]["norm"] == "L2"
        if m == "boosting":  # no closed form on general trees
            assert t["variance"].isna().all() and meta["expected_total_squared_error"] is None
        else:
            assert np.isfinite(t["variance"]).all() and meta["expected_total_squared_error"] > 0


@pytest.mark.parametrize("bad, message", [
    (dict(noise=Noise.laplace(1.0)), "must be discrete"),
    (dict(method="all"), "ONE post-processing method"),
    (dict(method=["gmc", "lee"]), "ONE post-processing method"),
    (dict(method="nope"), "unknown 'nope'"),
    (dict(split="levels"), "split"),
    (dict(rng=7), "rng"),
])
def test_release_refuses_what_is_not_a_private_release(fanout, bad, message):
    kwargs = dict(noise=LAPLACE, split="uniform", method="gmc", rng=None) | bad
    with pytest.raises(InputError, match=message):
        release(fanout, **kwargs)


def test_release_needs_integer_counts_and_names_the_leaf():
    data = load_tree_file(b"node,parent,count\nroot,,\na,root,2\nb,root,2.5\n", name="frac.csv")
    with pytest.raises(InputError, match=r"leaf 'b' has count 2.5.*integer"):
        release(data, LAPLACE)
    sim = simulate(data, Noise.laplace(1.0), ["gmc"], np.random.default_rng(0))  # simulate accepts them
    assert isinstance(sim, Simulation) and sim.mode == "simulate"


def test_deep_path_like_tree_release_without_recursion_limit():
    rng = np.random.default_rng(16)
    data = path_like_tree(20_001, 3.0, rng)
    assert data.tree.h > 5000
    for m in ("gmc", "privtrie"):
        r = release(data, LAPLACE, method=m, rng=rng)
        assert consistency_bias(data.tree, r.released) < 1e-6


# ---- simulate() ---------------------------------------------------------------------------------------------------
def test_simulate_reports_every_method_on_one_draw(county):
    rng = np.random.default_rng(15)
    sim = simulate(county, Noise.laplace(1.0), ["gmc", "gmc-nosqrt", "privtrie", "lee", "boosting", "processless"],
                   rng, q=2000)
    assert sim.mode == "simulate" and "not a private release" in sim.notice
    by = sim.table.set_index("method")
    for m in ("gmc", "gmc-nosqrt", "privtrie", "lee"):
        assert by.loc[m, "bias"] < 1e-6 * county.v[0]
        np.testing.assert_allclose(sim.results[m].released, sim.results["gmc"].released, rtol=1e-9, atol=1e-6)
    assert by.loc["processless", "bias"] > 1.0 and by.loc["boosting", "bias"] > 1.0
    np.testing.assert_array_equal(sim.results["processless"].released, sim.noisy)  # one draw for all
    assert by.loc["gmc", "rmse_RQ"] < by.loc["processless", "rmse_RQ"]
    assert np.isclose(by.loc["gmc", "expected_sq_error"], 2 * county.tree.m * 25)  # Thm 5: 2mh²/ε²
    assert np.isclose(by.loc["processless", "expected_sq_error"], 2 * county.tree.n * 25)  # Eq. 27
    assert np.isnan(by.loc["boosting", "expected_sq_error"])
    geo = simulate(county, Noise.laplace(1.0), ["gmc"], rng, split="geometric", q=100)
    assert np.isfinite(geo.table.loc[0, "expected_sq_error"])
    assert geo.table.loc[0, "expected_sq_error"] < 0.5 * by.loc["gmc", "expected_sq_error"]


def test_simulate_rescales_one_unit_draw_and_refuses_discrete_noise(county):
    unit = np.random.default_rng(3).laplace(0.0, 1.0, county.tree.n)
    ranges = (np.array([0]), np.array([5]))
    a = simulate(county, Noise.laplace(1.0), [], None, unit=unit, ranges=ranges)
    b = simulate(county, Noise.laplace(2.0), [], None, unit=unit, ranges=ranges)
    np.testing.assert_allclose(b.noisy - county.v, (a.noisy - county.v) / 2, atol=1e-6)  # v up to 3e8
    assert a.table.empty and a.results == {}
    with pytest.raises(InputError, match="continuous"):
        simulate(county, LAPLACE, ["gmc"], np.random.default_rng(0))
    with pytest.raises(InputError, match="unknown"):
        simulate(county, Noise.laplace(1.0), ["gmc", "magic"], np.random.default_rng(0))


def test_strategy_answer_rejects_other_trees_and_shapes(fanout, county):
    with pytest.raises(InputError, match="not the tree"):
        TreeLevels(county.tree).answer(fanout)
    with pytest.raises(InputError, match="leaf counts"):
        TreeLevels(county.tree).answer(np.ones(3))
    np.testing.assert_array_equal(TreeLevels(fanout.tree).answer(fanout.x), build_tree(fanout.tree, fanout.x))
    meas = LinearMeasurement("x", np.zeros(3), np.ones(3), Noise.laplace(1.0), 1.0)
    with pytest.raises(InputError, match="expected 1 node values"):
        GMC(tree_from_parents(np.array([-1]))).fit(meas)


def test_simulate_on_a_deep_tree_every_method_from_one_plan():
    """Issue 11: a deep caterpillar (h ≈ n/2, the sparse engine) through simulate() with every method:
    the GLS methods agree and are consistent, the expected total error is m σ² (Theorem 5), and a second
    draw on the same plan (the page's ε move) rescales the same noise."""
    rng = np.random.default_rng(1102)
    data = path_like_tree(20_001, 5.0, rng)
    tree = data.tree
    assert tree.is_deep
    noise = Noise.laplace(1.0)
    d = node_variances(tree, noise, "uniform")
    p = plan_for(tree, d)
    unit = rng.laplace(0.0, 1.0, tree.n)
    sim = simulate(data, noise, list(METHODS), rng, split="uniform", unit=unit, plan=p)
    gmc_out = sim.results["gmc"].released
    for m in ("gmc-nosqrt", "lee", "privtrie"):
        np.testing.assert_allclose(sim.results[m].released, gmc_out, rtol=0, atol=1e-6 * np.abs(gmc_out).max())
    assert consistency_bias(tree, gmc_out) < 1e-6
    assert sim.results["gmc"].variance.sum() == pytest.approx(tree.m * d[0], rel=1e-9)
    sim2 = simulate(data, Noise.laplace(2.0), ["gmc", "boosting"], rng, split="uniform", unit=unit, plan=p)
    np.testing.assert_allclose(sim2.noisy - data.v, (sim.noisy - data.v) / 2.0, rtol=1e-12, atol=1e-9)
    assert np.all(np.isfinite(sim2.results["boosting"].released))


def test_geometric_shares_on_deep_trees_do_not_overflow():
    """2^{ℓ/3} overflows past h ≈ 3,000; the shares are computed relative to the deepest level, and a tree so
    deep that the root's share is 0 in floating point is refused (it would get infinite noise)."""

    deep = level_shares(2_000, "geometric")
    assert np.isfinite(deep).all() and deep[0] > 0 and abs(deep.sum() - 1) < 1e-12
    assert deep[-1] / deep[-2] == pytest.approx(2 ** (1 / 3))
    with pytest.raises(InputError, match="uniform split"):
        level_shares(500_001, "geometric")


# ---- the one release shape (issue 18): Release protocol, per-level budget, one pass -------------------------
def test_tree_release_is_a_core_release_with_a_per_level_budget(fanout):
    from dpviz.core.budget import Budget
    from dpviz.core.release import Release

    rel = release(fanout, LAPLACE, split="geometric", rng=np.random.default_rng(3))
    assert isinstance(rel, Release) and rel.capability == "tree" and rel.values is rel.released
    h = fanout.tree.h
    split = rel.budget
    assert split.total == LAPLACE.budget and [lab for lab, _ in split.parts] == [f"level {i}" for i in range(1, h + 1)]
    np.testing.assert_allclose([b.epsilon for _, b in split.parts], level_shares(h, "geometric") * 1.0, rtol=1e-12)
    np.testing.assert_allclose([1.0 / b.epsilon for _, b in split.parts], rel.level_scales, rtol=1e-12)  # b_ℓ = 1/ε_ℓ
    meta = rel.metadata()
    assert meta["budget_parts"] == split.as_dict()["parts"] and len(meta["budget_parts"]) == h
    gauss = Noise.gaussian_approx(1.0, 1e-6, discrete=True)
    g = release(fanout, gauss, rng=np.random.default_rng(3)).budget
    assert g.rho == pytest.approx(gauss.rho) and all(b == Budget.zcdp(gauss.rho / h) for _, b in g.parts)
    deep = path_like_tree(2_001, 3.0, np.random.default_rng(2))
    (only,) = release(deep, LAPLACE, method="processless", rng=np.random.default_rng(1)).budget.parts
    assert only == (f"levels 1–{deep.tree.h:,} (1/{deep.tree.h:,} each)", LAPLACE.budget)


def test_csv_text_formats_the_published_variance_and_columns_use_it(fanout):
    from dpviz.core.csv_writer import number_text

    plain = release(fanout, LAPLACE, rng=np.random.default_rng(4))
    assert plain.variance_text is None and plain.columns().schema.field("variance").type == "double"
    rel = release(fanout, LAPLACE, rng=np.random.default_rng(4), csv_text=True)
    np.testing.assert_array_equal(rel.variance, plain.variance)
    var, std = rel.variance_text
    assert var.equals(number_text(rel.variance, dictionary=True))
    assert std.equals(number_text(np.sqrt(rel.variance), dictionary=True))
    assert pc.cast(var, pa.string()).equals(number_text(rel.variance))  # the same text, runs decoded
    assert rel.columns().schema.field("variance").type in (pa.string(), pa.dictionary(pa.int32(), pa.string()))
    assert plain.text_columns == () and rel.text_columns == ("variance", "std")  # the writer's plain columns


@pytest.mark.parametrize("csv_text", [False, True])
@pytest.mark.parametrize("method", ["gmc", "lee", "processless"])
def test_a_release_checks_builds_and_computes_each_thing_once(fanout, monkeypatch, csv_text, method):
    """One pass: the arguments checked once, the strategy built once, one GMC plan, the variance computed once
    (Theorem 5 from the noise variances) and the estimate computed once (no fit that recomputes it)."""
    import dpviz.tree.estimators as E
    import dpviz.tree.release as R

    calls: dict[str, int] = {}

    def counted(name, fn):
        def wrapper(*a, **k):
            calls[name] = calls.get(name, 0) + 1
            return fn(*a, **k)
        return wrapper

    monkeypatch.setattr(R, "_check_release", counted("check", R._check_release))
    monkeypatch.setattr(R, "TreeLevels", counted("strategy", R.TreeLevels))
    monkeypatch.setattr(R, "plan_for", counted("plan", R.plan_for))
    monkeypatch.setattr(E, "plan_for", counted("plan", E.plan_for))
    cls = type(estimator(method, fanout.tree))
    for name in ("variance", "values", "fit"):
        monkeypatch.setattr(cls, name, counted(name, getattr(cls, name)))
    rel = release(fanout, LAPLACE, method=method, rng=np.random.default_rng(5), csv_text=csv_text)
    want = {"check": 1, "strategy": 1, "variance": 1, "values": 1} | ({"plan": 1} if method != "processless" else {})
    assert calls == want
    np.testing.assert_allclose(rel.variance, published_variance(fanout.tree, LAPLACE, "uniform", method), rtol=0)


@pytest.mark.parametrize("csv_text", [False, True])
def test_a_plan_that_does_not_fit_is_refused_before_any_noise_is_drawn(fanout, monkeypatch, csv_text):
    import dpviz.tree.release as R

    def no_draw(*a, **k):
        raise AssertionError("noise drawn")

    monkeypatch.setattr(R, "measure", no_draw)
    geo = plan_for(fanout.tree, node_variances(fanout.tree, LAPLACE, "geometric"))
    with pytest.raises(InputError, match="do not match"):
        release(fanout, LAPLACE, split="uniform", plan=geo, csv_text=csv_text)


@pytest.mark.parametrize("split", ["uniform", "geometric"])
def test_estimators_split_fit_into_values_and_a_variance_known_before_the_draw(fanout, split):
    """``fit(m)`` = ``values(m)`` + ``variance(d)``, d the noise variances alone (no measurement needed)."""
    tree = fanout.tree
    noise = Noise.gaussian(0.5)
    meas = measure(TreeLevels(tree, split), fanout, noise, np.random.default_rng(8))
    d = node_variances(tree, noise, split)
    for m in METHODS:
        est = estimator(m, tree)
        fit = est.fit(meas)
        np.testing.assert_array_equal(est.values(meas), fit.values)
        np.testing.assert_array_equal(est.variance(d), fit.variance)
    with pytest.raises(InputError, match="noise variances"):
        estimator("gmc", tree).variance(d[:-1])


def test_a_level_whose_noise_cannot_be_drawn_is_refused_before_any_work():
    """A geometric split on a 2,001-level path gives the root σ ≈ 5e100, above the samplers' 2^40: one
    InputError naming the level, before the variance is computed (no overflow warnings) or noise drawn."""
    import warnings

    data = path_like_tree(4_001, 3.0, np.random.default_rng(0))
    for csv_text in (False, True):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with pytest.raises(InputError, match=r"depth level 1 of 2,001 .*MAX_SCALE.*uniform split"):
                release(data, Noise.gaussian(0.5, discrete=True), split="geometric", csv_text=csv_text)


@pytest.mark.parametrize("split", ["uniform", "geometric"])
@pytest.mark.parametrize("noise", [LAPLACE, Noise.gaussian_approx(1.0, 1e-6, discrete=True)], ids=["laplace", "gauss"])
def test_the_release_reuses_the_node_variances_it_computed_and_they_are_the_measurements_own(fanout, split, noise):
    import dpviz.tree.release as R

    tree = fanout.tree
    strategy = R.TreeLevels(tree, split)
    d = np.asarray(noise.variance_at(strategy.level_scales(noise)), dtype=float)[tree.depth - 1]
    meas = measure(strategy, fanout, noise, np.random.default_rng(3))
    np.testing.assert_array_equal(R._with_variance(meas, d).variance, meas.variance)  # bit for bit
