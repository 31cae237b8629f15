"""Mechanisms as core strategies/estimators: analytic variance vs dense algebra, Monte-Carlo (continuous,
simulation), Gaussian references, streaming = batch, sensitivity on neighbouring streams."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpviz.core.noise import Noise
from dpviz.core.protocols import Estimator, Strategy
from dpviz.errors import InputError
from dpviz.stream import fenwick as F
from dpviz.stream.estimators import sqrt_coefficients
from dpviz.stream.mechanism import Mechanism, SimulatedRelease, make_mechanism
from dpviz.stream.strategy import MECHANISM_NAMES, available, strategy

NOISES = [Noise.laplace(0.7), Noise.gaussian(0.3)]
CASES = [(name, noise) for noise in NOISES for name in available(noise)]
IDS = [f"{name}-{noise.family}" for name, noise in CASES]
DISCRETE = [Noise.laplace(0.7, discrete=True), Noise.gaussian(0.3, discrete=True)]


def test_protocols_and_registry():
    for name, noise in CASES:
        s = strategy(name, 9, noise.family)
        assert isinstance(s, Strategy) and isinstance(s.estimator, Estimator)
        assert s is strategy(name, 9, noise.family)  # cached per (mechanism, N, family)
        assert isinstance(make_mechanism(name, 9, noise), Mechanism)
    assert set(available(NOISES[1])) == set(MECHANISM_NAMES)
    with pytest.raises(InputError, match="Gaussian"):
        make_mechanism("sqrt", 9, Noise.laplace(1.0))
    with pytest.raises(InputError, match="mechanism"):
        make_mechanism("magic", 9, Noise.laplace(1.0))
    with pytest.raises(InputError, match="epsilon"):
        Noise.laplace(0.0)
    with pytest.raises(InputError, match="rho"):
        Noise.gaussian(-1.0)
    with pytest.raises(InputError, match="delta"):
        Noise.gaussian_approx(1.0, 2.0)


@pytest.mark.parametrize("n", [1, 2, 3, 6, 15, 16, 23, 50])
@pytest.mark.parametrize("noise", NOISES, ids=["laplace", "gaussian"])
@pytest.mark.parametrize("weights", ["ones", "fda"])
def test_fenwick_variance_is_diag_of_b_sigma_inv(n, noise, weights):
    mech = make_mechanism("fenwick" if weights == "ones" else "fenwick-fda", n, noise)
    m, b = F.strategy_matrix(n).toarray(), F.reconstruction_matrix(n).toarray()
    sig_m = np.diag(mech.lam) @ m
    if noise.family == "laplace":
        delta = np.abs(sig_m).sum(axis=0).max()
        node_var = 2 * (delta / noise.epsilon) ** 2
    else:
        delta = np.sqrt((sig_m**2).sum(axis=0).max())
        node_var = delta**2 / (2 * noise.rho)
    bs = b @ np.diag(1 / mech.lam)
    assert mech.sensitivity == pytest.approx(delta, rel=1e-12)
    np.testing.assert_allclose(mech.per_step_variance(), np.diag(bs @ bs.T) * node_var, rtol=1e-12)
    if noise.family == "laplace":  # Eq. (5.9)
        eq59 = 2 / noise.epsilon**2 * delta**2 * np.trace(b.T @ b @ np.diag(mech.lam**-2.0))
        assert mech.total_mse() == pytest.approx(eq59, rel=1e-12)
    if weights == "ones":
        assert mech.sensitivity == pytest.approx(F.delta_m(n) ** (1.0 if noise.family == "laplace" else 0.5))
    # the estimator computes the same from the per-query variances of a measurement's noise
    s = mech.strategy
    np.testing.assert_allclose(s.estimator.variance(noise.variance_at(s.scales(noise))), mech.per_step_variance(),
                               rtol=1e-12)


def _dyadic_nodes(n):
    """Every dyadic interval (m 2^k - 2^k, m 2^k] with end <= n, as (start, end) 1-based inclusive."""
    return [(m * 2**k - 2**k + 1, m * 2**k) for k in range(n.bit_length()) for m in range(1, n // 2**k + 1)]


@pytest.mark.parametrize("n", [1, 2, 3, 7, 8, 12, 21, 32])
def test_honaker_variance_is_the_dense_blue(n):
    """Reference: generalised least squares on all nodes complete at time t (dense inverse)."""
    noise = Noise.gaussian(0.5)
    mech = make_mechanism("honaker", n, noise)
    node_var = noise.variance(mech.sensitivity)
    ref = []
    for t in range(1, n + 1):
        rows = [(s, e) for s, e in _dyadic_nodes(n) if e <= t]
        a = np.zeros((len(rows), t))
        for r, (s, e) in enumerate(rows):
            a[r, s - 1 : e] = 1
        ones = np.ones(t)
        ref.append(node_var * ones @ np.linalg.solve(a.T @ a, ones))
    np.testing.assert_allclose(mech.per_step_variance(), ref, rtol=1e-10)
    cover = np.zeros(n)
    for s, e in _dyadic_nodes(n):
        cover[s - 1 : e] += 1
    assert mech.sensitivity**2 == pytest.approx(cover.max())
    # the measured nodes are exactly the dyadic intervals, in draw order (by end time, then level)
    x = np.random.default_rng(n).integers(0, 9, n)
    order = sorted(_dyadic_nodes(n), key=lambda se: (se[1], se[1] - se[0]))
    np.testing.assert_array_equal(mech.strategy.answer(x), [x[s - 1 : e].sum() for s, e in order])
    # and the estimator is unbiased on exact node sums: R Q a = W a
    np.testing.assert_allclose(mech.strategy.estimator.apply(mech.strategy.answer(x)), np.cumsum(x), atol=1e-9)


@pytest.mark.parametrize("n", [1, 2, 5, 40])
def test_sqrt_factorisation_dense(n):
    c = sqrt_coefficients(n)
    big_l = np.array([[c[i - j] if i >= j else 0.0 for j in range(n)] for i in range(n)])
    np.testing.assert_allclose(big_l @ big_l, F.workload_matrix(n), atol=1e-12)
    noise = Noise.gaussian(0.5)
    mech = make_mechanism("sqrt", n, noise)
    delta = np.sqrt((big_l**2).sum(axis=0).max())
    assert mech.sensitivity == pytest.approx(delta)
    np.testing.assert_allclose(mech.per_step_variance(), np.diag(big_l @ big_l.T) * delta**2 / (2 * 0.5))
    x = np.random.default_rng(1).normal(size=n)
    np.testing.assert_allclose(mech.strategy.answer(x), big_l @ x, atol=1e-10)
    v = np.random.default_rng(2).uniform(1, 2, n)  # unequal query variances: diag(L diag(v) Lᵀ)
    np.testing.assert_allclose(mech.strategy.estimator.variance(v), np.diag(big_l @ np.diag(v) @ big_l.T), rtol=1e-9)


def test_naive_variance():
    mech = make_mechanism("naive", 10, Noise.laplace(0.5))
    np.testing.assert_allclose(mech.per_step_variance(), np.arange(1, 11) * 2 / 0.25)
    assert mech.total_mse() == pytest.approx(55 * 8)


@pytest.mark.parametrize(("name", "noise"), CASES, ids=IDS)
def test_monte_carlo_variance_within_5_percent(name, noise):
    """Simulation errors (continuous): 40000 vectorised draws, per-step variance within 5% of analytic."""
    n, draws = 23, 40_000
    mech = make_mechanism(name, n, noise)
    err = mech.errors(np.random.default_rng(MECHANISM_NAMES.index(name)), draws)
    assert err.shape == (draws, n)
    analytic = mech.per_step_variance()
    np.testing.assert_allclose(err.var(axis=0), analytic, rtol=0.05)
    assert np.all(np.abs(err.mean(axis=0)) < 5 * np.sqrt(analytic / draws))


def test_monte_carlo_through_simulate():
    """The public simulation (not just ``errors``) has the analytic variance; 5000 seeded draws."""
    n, noise = 12, Noise.laplace(1.0)
    a = np.arange(n, dtype=float)
    for name in ["fenwick-fda", "honaker"]:
        mech = make_mechanism(name, n, noise)
        rng = np.random.default_rng(3)
        out = np.array([mech.simulate(a, rng).prefix_sums for _ in range(5000)])
        np.testing.assert_allclose(out.var(axis=0), mech.per_step_variance(), rtol=0.1)
        np.testing.assert_allclose(out.mean(axis=0), np.cumsum(a), atol=5 * np.sqrt(mech.per_step_variance().max() / 5000))


@pytest.mark.parametrize(
    ("n", "name", "vmax", "vmean"),
    [(1023, "binary", 100, 50.0), (1023, "sqrt", 10.71, 9.67), (65535, "binary", 256, 128), (65535, "sqrt", 21.13, 19.66)],
)
def test_gaussian_reference_values(n, name, vmax, vmean):
    """ρ = 1/2: noise variance = Δ₂²; binary: Δ₂² = levels, Var(t) = popcount(t)·levels."""
    v = make_mechanism(name, n, Noise.gaussian(0.5)).per_step_variance()
    assert round(v.max(), 2) == pytest.approx(vmax)
    assert round(v.mean(), 2 if name == "sqrt" else 1) == pytest.approx(vmean)


def test_binary_is_fenwick_with_unit_weights():
    noise, a = Noise.laplace(1.0), np.arange(37.0)
    b = make_mechanism("binary", 37, noise).simulate(a, np.random.default_rng(9))
    f = make_mechanism("fenwick", 37, noise).simulate(a, np.random.default_rng(9))
    np.testing.assert_array_equal(b.prefix_sums, f.prefix_sums)


def test_fda_beats_unit_weights_and_ranking():
    noise = Noise.laplace(1.0)
    mse = {m: make_mechanism(m, 1000, noise).total_mse() for m in available(noise)}
    assert mse["fenwick-fda"] < mse["honaker"] < mse["fenwick"] == pytest.approx(mse["binary"])
    g = Noise.gaussian(0.5)
    mse = {m: make_mechanism(m, 1000, g).total_mse() for m in available(g)}
    assert mse["sqrt"] < mse["fenwick-fda"] < mse["fenwick"]


@pytest.mark.parametrize(("name", "noise"), CASES, ids=IDS)
@pytest.mark.parametrize("n", [1, 2, 7, 16, 29])
def test_streaming_equals_batch(name, noise, n):
    mech = make_mechanism(name, n, noise)
    a = np.random.default_rng(n).poisson(20, n).astype(float)
    for length in {n, max(1, n // 2)}:  # a prefix of the horizon too
        batch = mech.simulate(a[:length], np.random.default_rng(77))
        streamer = mech.streamer(np.random.default_rng(77))
        out = np.array([streamer.step(x) for x in a[:length]])
        np.testing.assert_allclose(out[:, 0], batch.prefix_sums, rtol=0, atol=1e-9 * (1 + np.abs(batch.prefix_sums).max()))
        np.testing.assert_allclose(out[:, 1], batch.variance, rtol=1e-12)
    streamer = mech.streamer(np.random.default_rng(0))
    for x in a:
        streamer.step(x)
    with pytest.raises(InputError, match="horizon"):
        streamer.step(1.0)


def _privacy_loss(noise, diff, scales):
    """ε spent (Laplace: Σ|Δc_i|/b_i) or ρ spent (Gaussian: Σ Δc_i²/(2σ_i²)) by one neighbouring change."""
    d = np.abs(np.asarray(diff, dtype=float))
    return float((d / scales).sum()) if noise.family == "laplace" else float(((d / scales) ** 2).sum() / 2)


@settings(max_examples=80, deadline=None)
@given(case=st.sampled_from(CASES), n=st.integers(1, 70), data=st.data())
def test_sensitivity_on_neighbouring_streams(case, n, data):
    """One event (a_t ± 1) moves the measured node vector (weighted by λ) by at most the strategy's
    reported sensitivity, and spends at most the budget at the strategy's per-node scales."""
    name, noise = case
    s = strategy(name, n, noise.family)
    a = np.array(data.draw(st.lists(st.integers(0, 50), min_size=n, max_size=n)), dtype=np.int64)
    t = data.draw(st.integers(0, n - 1))
    b = a.copy()
    b[t] += data.draw(st.sampled_from([-1, 1]))
    diff = s.answer(b) - s.answer(a)
    assert noise.norm(diff * s.weights) <= s.sensitivity(noise.family) * (1 + 1e-9) + 1e-12
    budget = noise.epsilon if noise.family == "laplace" else noise.rho
    assert _privacy_loss(noise, diff, s.scales(noise)) <= budget * (1 + 1e-9)
    if s.discrete_ok:  # integer strategies: integer answers on integer counts, changes of 0 or ±1
        assert s.answer(a).dtype == np.int64 and set(np.unique(diff)) <= {-1, 0, 1}


@pytest.mark.parametrize(("name", "noise"), CASES, ids=IDS)
@pytest.mark.parametrize("n", [1, 5, 16, 45])
def test_sensitivity_is_tight(name, noise, n):
    """Some neighbouring pair attains the sensitivity (so the noise is not over-calibrated), and then
    the whole budget is spent."""
    s = strategy(name, n, noise.family)
    base = s.answer(np.zeros(n, dtype=np.int64))
    diffs = [s.answer(np.eye(n, dtype=np.int64)[t]) - base for t in range(n)]
    worst = max(noise.norm(d * s.weights) for d in diffs)
    assert worst == pytest.approx(s.sensitivity(noise.family), rel=1e-9)
    budget = noise.epsilon if noise.family == "laplace" else noise.rho
    assert max(_privacy_loss(noise, d, s.scales(noise)) for d in diffs) == pytest.approx(budget, rel=1e-9)


@pytest.mark.parametrize("noise", DISCRETE, ids=["laplace", "gaussian"])
def test_discrete_variance_is_exact_per_node(noise):
    """Release variances use the discrete samplers' exact variance at every node's own scale."""
    s = strategy("fenwick-fda", 40, noise.family)
    per_node = noise.variance_at(s.scales(noise))
    np.testing.assert_allclose(s.per_step_variance(noise), F.chain_sum(per_node), rtol=1e-12)
    assert s.per_step_variance(noise) is s.per_step_variance(noise)  # cached, not recomputed per draw


def test_simulate_validates_series():
    mech = make_mechanism("fenwick", 5, Noise.laplace(1.0))
    rng = np.random.default_rng(0)
    with pytest.raises(InputError, match="exceed the horizon"):
        mech.simulate(np.ones(6), rng)
    with pytest.raises(InputError, match="step 2"):
        mech.simulate(np.array([1.0, np.nan]), rng)
    with pytest.raises(InputError, match="non-empty"):
        mech.simulate(np.array([]), rng)
    with pytest.raises(InputError, match="finite"):
        mech.streamer(rng).step(float("inf"))


def test_simulated_empirical_rmse_against_running_totals():
    a = np.array([3.0, 1.0, 4.0, 1.0])
    rel = make_mechanism("naive", 4, Noise.laplace(1.0)).simulate(a, np.random.default_rng(5))
    expect = np.sqrt(np.mean((rel.prefix_sums - np.cumsum(a)) ** 2))
    assert rel.empirical_rmse(a) == pytest.approx(expect)
    assert SimulatedRelease("naive", np.cumsum(a), np.ones(4), 1.0).empirical_rmse(a) == 0.0
