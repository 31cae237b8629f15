"""Measurements and accounting for marginal workloads (digest §8 groups 8, 9, 11).

* accounting: the dense max-diagonal of R_τᵀΣ_τ⁻¹R_τ/2 is p_τ/(2σ²) and constant; the budget identity
  Σ cost = ρ to 1e-12 for both costs; the closed-form σ_τ² is optimal (v_τ over attribute INDICES, on a
  domain with indices ≥ 10) and matches the summed analytic variances;
* Monte-Carlo: reconstructed cells are unbiased and their variance is within 5% of the analytic
  variance, for continuous and discrete residual measurements (ResidualPlanner + GReM-MLE) and for
  continuous and discrete marginal measurements (EMP with repeats and unequal σ);
* the exponential mechanism's frequencies vs exp(ε q/(2Δ)) by χ² (seeded Generator and OS CSPRNG);
* a scalability smoke test at n = 10^30; InputError cases.
"""

from __future__ import annotations

import math
import tracemalloc

import numpy as np
import pytest
from scipy.stats import chisquare

from dpviz.core.samplers import discrete_gaussian_variance
from dpviz.errors import InputError
from dpviz.marginals.model import Dataset, Domain, all_kway, downward_closure, subsets
from dpviz.marginals.strategy import (
    exponential_mechanism,
    marginal_rho,
    measure_marginal,
    measure_residuals,
    residual_p,
    residual_rho,
    rp_sigmas,
)
from dpviz.marginals.estimators import emp, grem_mle, reconstruction_variance
from dpviz.marginals.residuals import dense_D, dense_residual_matrix

DOM3 = Domain(("a", "b", "c"), (3, 4, 2))
DOM12 = Domain(tuple(f"x{i}" for i in range(12)), (2, 3, 4, 2, 5, 3, 2, 2, 3, 4, 6, 3))


def dataset(domain, n, seed=0):
    rng = np.random.default_rng(seed)
    return Dataset(domain, np.stack([rng.integers(0, s, n) for s in domain.sizes], axis=1))


# ----------------------------------------------------------------------------- accounting (group 8)


@pytest.mark.parametrize("tau", subsets((0, 1, 2)))
def test_correlated_gaussian_cost_dense(tau):
    sigma2 = 2.5
    R = dense_residual_matrix(DOM3, tau)
    Dt = np.ones((1, 1))
    for k in tau:
        Dt = np.kron(Dt, dense_D(DOM3.sizes[k]))
    diag = np.diag(R.T @ np.linalg.solve(sigma2 * Dt @ Dt.T, R))
    np.testing.assert_allclose(diag, diag[0], rtol=1e-12)  # constant diagonal
    assert diag.max() / 2 == pytest.approx(residual_p(DOM3, tau) / (2 * sigma2), rel=1e-12)
    assert residual_rho(DOM3, {tau: sigma2}, "residual") == pytest.approx(diag.max() / 2, rel=1e-12)
    assert residual_rho(DOM3, {tau: sigma2}, "marginal") == pytest.approx(1 / (2 * sigma2), rel=1e-15)


WORKLOADS = [
    (DOM3, all_kway(DOM3, 2)),
    (DOM3, [(0, 1, 2)]),
    (DOM3, [(0,), (1, 2)]),
    (DOM12, all_kway(DOM12, 2)),
    (DOM12, [(0, 10, 11), (3, 10), (1, 2, 11), (5,), (10, 11)]),
]


@pytest.mark.parametrize(("domain", "workload"), WORKLOADS)
@pytest.mark.parametrize("cost", ["residual", "marginal"])
def test_budget_identity_exact(domain, workload, cost):
    for rho in (1e-4, 0.3, 1.0, 1e3):
        s2 = rp_sigmas(domain, workload, rho, cost=cost)
        assert set(s2) == set(downward_closure(workload))
        assert residual_rho(domain, s2, cost) == pytest.approx(rho, rel=1e-12, abs=0)


def summed_variance(domain, workload, s2):
    """Σ_{γ∈𝒲} n_γ · Var μ̂_γ(cell): the loss ResidualPlanner's closed form minimises."""
    return sum(domain.size(g) * reconstruction_variance(domain, g, s2) for g in workload)


@pytest.mark.parametrize(("domain", "workload"), WORKLOADS)
@pytest.mark.parametrize("cost", ["residual", "marginal"])
def test_rp_sigmas_are_optimal(domain, workload, cost):
    """KKT: σ_τ⁴ v_τ / w_τ is the same for every τ (v_τ computed from the analytic variances, so over
    attribute indices), and no random budget-preserving perturbation does better."""
    rho = 0.5
    s2 = rp_sigmas(domain, workload, rho, cost=cost)
    v = {t: summed_variance(domain, workload, {t: 1.0}) for t in s2}
    w = {t: residual_p(domain, t) if cost == "residual" else 1.0 for t in s2}
    kkt = np.array([s2[t] ** 2 * v[t] / w[t] for t in s2])
    np.testing.assert_allclose(kkt, kkt[0], rtol=1e-10)
    best = summed_variance(domain, workload, s2)
    rng = np.random.default_rng(0)
    for _ in range(20):
        pert = {t: s * math.exp(rng.normal(0, 0.3)) for t, s in s2.items()}
        c = residual_rho(domain, pert, cost) / rho  # σ² ↦ cσ² divides the cost by c
        pert = {t: s * c for t, s in pert.items()}
        assert residual_rho(domain, pert, cost) == pytest.approx(rho, rel=1e-12)
        assert summed_variance(domain, workload, pert) >= best * (1 - 1e-12)


def test_marginal_cost_and_measure_marginal():
    data = dataset(DOM3, 200)
    assert marginal_rho(2.0) == 1 / 8
    a = measure_marginal(data, (0, 2), 2.0, np.random.default_rng(1))
    b = measure_marginal(data, [0, 2], 2.0, np.random.default_rng(1))
    np.testing.assert_array_equal(a.values, b.values)
    assert a.clique == (0, 2) and a.sigma == 2.0 and a.values.size == 6
    np.testing.assert_allclose(a.values - data.marginal((0, 2)), 2.0 * np.random.default_rng(1).standard_normal(6))
    d = measure_marginal(data, (0, 2), 0.5, None, discrete=True)  # OS CSPRNG
    assert np.array_equal(d.values, np.round(d.values))
    assert d.sigma == pytest.approx(math.sqrt(discrete_gaussian_variance(0.5)))
    with pytest.raises(InputError, match="simulation"):
        measure_marginal(data, (0,), 1.0, None)
    with pytest.raises(InputError, match="sigma"):
        measure_marginal(data, (0,), 0.0, np.random.default_rng(0))
    with pytest.raises(InputError, match="increasing"):
        measure_marginal(data, (2, 0), 1.0, np.random.default_rng(0))


def test_measure_residuals_records():
    data = dataset(DOM3, 300)
    W = all_kway(DOM3, 2)
    rng = np.random.default_rng(2)
    ms = measure_residuals(data, DOM3, W, 1.0, rng)
    s2 = rp_sigmas(DOM3, W, 1.0)
    assert [m.tau for m in ms] == downward_closure(W)
    assert all(m.sigma2 == s2[m.tau] and m.values.size == DOM3.residual_size(m.tau) for m in ms)
    assert residual_rho(DOM3, {m.tau: m.sigma2 for m in ms}, "residual") == pytest.approx(1.0, rel=1e-12)
    # discrete: integer marginals + integer noise, then differenced → integer residuals; marginal-cost σ's
    for r in (np.random.default_rng(3), None):
        dm = measure_residuals(data, DOM3, W, 1.0, r, discrete=True)
        s2m = rp_sigmas(DOM3, W, 1.0, cost="marginal")
        for m in dm:
            assert np.array_equal(m.values, np.round(m.values))
            assert m.sigma2 == pytest.approx(discrete_gaussian_variance(math.sqrt(s2m[m.tau])), rel=1e-12)
        assert residual_rho(DOM3, s2m, "marginal") == pytest.approx(1.0, rel=1e-12)
    # σ → 0 (huge ρ) gives the true marginals
    rec = grem_mle(DOM3, W, measure_residuals(data, DOM3, W, 1e14, rng))
    for g in W:
        np.testing.assert_allclose(rec.marginals[g], data.marginal(g), atol=1e-4)


def test_measure_input_errors():
    data = dataset(DOM3, 50)
    W = all_kway(DOM3, 2)
    with pytest.raises(InputError, match="rho"):
        rp_sigmas(DOM3, W, 0.0)
    with pytest.raises(InputError, match="rho"):
        rp_sigmas(DOM3, W, math.nan)
    with pytest.raises(InputError, match="cost"):
        rp_sigmas(DOM3, W, 1.0, cost="gaussian")
    with pytest.raises(InputError, match="no marginals"):
        rp_sigmas(DOM3, [], 1.0)
    with pytest.raises(InputError, match="simulation"):
        measure_residuals(data, DOM3, W, 1.0, None)
    with pytest.raises(InputError, match="Generator"):
        measure_residuals(data, DOM3, W, 1.0, 42)
    with pytest.raises(InputError, match="domain differs"):
        measure_residuals(data, DOM12, [(0,)], 1.0, np.random.default_rng(0))
    with pytest.raises(InputError, match="σ_τ²"):
        residual_rho(DOM3, {(0,): 0.0})


# ----------------------------------------------------------------------------- Monte Carlo (group 9)


def check_moments(samples, truth, variance, what):
    """Unbiased (every cell within 4.5 standard errors) and pooled variance within 5% of the analytic one."""
    K = samples.shape[0]
    se = math.sqrt(variance / K)
    assert np.abs(samples.mean(axis=0) - truth).max() < 4.5 * se, what
    ratio = samples.var(axis=0, ddof=1).mean() / variance
    assert abs(ratio - 1) < 0.05, f"{what}: empirical/analytic variance = {ratio:.4f}"


@pytest.mark.parametrize(("discrete", "trials"), [(False, 1000), (True, 700)])
def test_monte_carlo_residualplanner_variance(discrete, trials):
    data = dataset(DOM3, 300, seed=4)
    W = all_kway(DOM3, 2)
    rho = 0.02
    rng = np.random.default_rng(10 + discrete)
    s2 = rp_sigmas(DOM3, W, rho, cost="marginal" if discrete else "residual")
    assert min(s2.values()) > 4  # σ ≥ 2: the discrete Gaussian's variance is σ² to 1e-15
    out = {g: np.empty((trials, DOM3.size(g))) for g in W}
    for i in range(trials):
        rec = grem_mle(DOM3, W, measure_residuals(data, DOM3, W, rho, rng, discrete=discrete))
        for g in W:
            out[g][i] = rec.marginals[g]
    for g in W:
        analytic = reconstruction_variance(DOM3, g, s2)
        assert rec.variance[g] == pytest.approx(analytic, rel=1e-12)
        check_moments(out[g], data.marginal(g), analytic, f"γ = {g}, discrete = {discrete}")


@pytest.mark.parametrize("discrete", [False, True])
def test_monte_carlo_emp_variance(discrete):
    data = dataset(DOM3, 300, seed=5)
    W = all_kway(DOM3, 2) + [(0, 1, 2)]
    Q = [((), 3.0), ((0, 1), 2.0), ((0, 1), 4.0), ((1, 2), 2.5), ((0,), 1.5)]
    rng = np.random.default_rng(20 + discrete)
    trials = 1000  # pooled over the cells of four marginals: the variance ratio's standard error is ~1-2%
    out = {g: np.empty((trials, DOM3.size(g))) for g in W}
    for i in range(trials):
        rec = emp(DOM3, W, [measure_marginal(data, g, s, rng, discrete=discrete) for g, s in Q])
        for g in W:
            out[g][i] = rec.marginals[g]
    for g in [(0, 1), (1, 2)]:  # every τ ⊆ γ measured: unbiased
        check_moments(out[g], data.marginal(g), rec.variance[g], f"EMP γ = {g}, discrete = {discrete}")
    for g in [(0, 2), (0, 1, 2)]:  # (2,)-related residuals partly unmeasured: only the variance is checked
        ratio = out[g].var(axis=0, ddof=1).mean() / rec.variance[g]
        assert abs(ratio - 1) < 0.05, f"EMP γ = {g}: {ratio:.4f}"


# ----------------------------------------------------------------------------- exponential mechanism


def em_probabilities(scores, rho, sensitivity):
    logw = math.sqrt(8 * rho) / (2 * sensitivity) * np.asarray(scores, float)
    w = np.exp(logw - logw.max())
    return w / w.sum()


@pytest.mark.parametrize(("scores", "rho", "sensitivity"), [
    ([0.0, 1.0, 2.0, 4.0, 4.5, -3.0], 0.125, 1.0),  # ε = 1: weights exp(q/2)
    ([10.0, 12.0, 11.0, 9.0], 0.5, 2.0),            # ε = 2, Δ = 2: weights exp(q/2)
    ([3.0, 3.0, 3.0], 1.0, 1.0),                    # ties: uniform
])
def test_exponential_mechanism_frequencies(scores, rho, sensitivity):
    rng = np.random.default_rng(30)
    n = 20_000
    draws = np.array([exponential_mechanism(scores, rho, rng, sensitivity) for _ in range(n)])
    counts = np.bincount(draws, minlength=len(scores))
    p = em_probabilities(scores, rho, sensitivity)
    assert chisquare(counts, n * p).pvalue > 1e-3


def test_exponential_mechanism_csprng_and_extremes():
    scores = [0.0, 1.0, 3.0]
    n = 4000
    counts = np.bincount([exponential_mechanism(scores, 0.5, None) for _ in range(n)], minlength=3)
    assert chisquare(counts, n * em_probabilities(scores, 0.5, 1.0)).pvalue > 1e-6
    rng = np.random.default_rng(0)
    assert all(exponential_mechanism([0.0, 1e6, -1e300], 1.0, rng) == 1 for _ in range(50))  # no overflow
    assert exponential_mechanism([7.0], 1.0, rng) == 0
    with pytest.raises(InputError, match="non-empty"):
        exponential_mechanism([], 1.0, rng)
    with pytest.raises(InputError, match="finite"):
        exponential_mechanism([1.0, math.inf], 1.0, rng)
    with pytest.raises(InputError, match="rho"):
        exponential_mechanism([1.0, 2.0], -1.0, rng)
    with pytest.raises(InputError, match="sensitivity"):
        exponential_mechanism([1.0, 2.0], 1.0, rng, sensitivity=0)
    with pytest.raises(InputError, match="Generator"):
        exponential_mechanism([1.0, 2.0], 1.0, 7)


# ----------------------------------------------------------------------------- scalability (group 11)


def test_scalability_smoke_n_1e30():
    """30 attributes of size 10 (n = 10^30), all 435 2-way marginals: measure + GReM-MLE touch only
    marginal-sized arrays (peak traced memory well under 50 MB)."""
    dom = Domain(tuple(f"x{i}" for i in range(30)), (10,) * 30)
    data = dataset(dom, 1000, seed=6)
    W = all_kway(dom, 2)
    tracemalloc.start()
    try:
        ms = measure_residuals(data, dom, W, 1.0, np.random.default_rng(7))
        rec = grem_mle(dom, W, ms)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(ms) == 1 + 30 + 435
    assert residual_rho(dom, {m.tau: m.sigma2 for m in ms}) == pytest.approx(1.0, rel=1e-12)
    assert len(rec.marginals) == 435 and all(v.shape == (100,) for v in rec.marginals.values())
    assert all(a.shape == (dom.residual_size(t),) for t, a in rec.alpha.items())
    assert all(math.isfinite(v) and v > 0 for v in rec.variance.values())
    assert peak < 50e6, f"peak traced memory {peak / 1e6:.1f} MB"


def test_measurements_are_one_core_strategy_measure():
    """MarginalQueries is a core Strategy: measure_marginal / measure_residuals are exactly
    dpviz.core.protocols.measure of it (same draws for the same Generator), Δ₂ = √(number of marginals)."""
    from dpviz.core.noise import Noise
    from dpviz.core.protocols import Strategy, measure
    from dpviz.marginals.strategy import MarginalQueries

    rng = np.random.default_rng(0)
    data = Dataset(DOM3, np.column_stack([rng.integers(0, n, 300) for n in DOM3.sizes]))
    q = MarginalQueries(DOM3, ((0, 1), (2,)), (1.5, 3.0))
    assert isinstance(q, Strategy)
    assert q.sensitivity("gaussian") == pytest.approx(math.sqrt(2)) and q.sensitivity("laplace") == 2
    np.testing.assert_array_equal(q.scales(Noise.gaussian(1.0)), np.r_[np.full(12, 1.5), np.full(2, 3.0)])
    np.testing.assert_array_equal(q.answer(data), np.r_[data.marginal((0, 1)), data.marginal((2,))])
    for discrete in (False, True):
        one = MarginalQueries(DOM3, ((0, 2),), (1.7,))
        m = measure(one, data, Noise.gaussian(marginal_rho(1.7), discrete=discrete), np.random.default_rng(9))
        y = measure_marginal(data, (0, 2), 1.7, np.random.default_rng(9), discrete=discrete)
        np.testing.assert_array_equal(y.values, m.values)
    wl = all_kway(DOM3, 2)
    s2 = rp_sigmas(DOM3, wl, 0.3)
    closure = MarginalQueries(DOM3, tuple(s2), tuple(math.sqrt(v) for v in s2.values()))
    m = measure(closure, data, Noise.gaussian(0.3), np.random.default_rng(4))
    res = measure_residuals(data, DOM3, wl, 0.3, np.random.default_rng(4))
    from dpviz.marginals.residuals import marginal_to_residual

    for r, y in zip(res, closure.split(m.values), strict=True):
        np.testing.assert_array_equal(r.values, marginal_to_residual(DOM3, r.tau, r.tau, y))
    with pytest.raises(InputError, match="sampler's limit"):
        MarginalQueries(DOM3, ((0,),), (2.0**41,)).scales(Noise.gaussian(1.0, discrete=True))
