"""ReM / GReM-MLE / EMP / Trunc(+Rescale) and the error metrics (digest §8 groups 4–7, 12).

Dense references on tiny domains ((3,4,2) and (2,3,2,3)) built with np.kron:

* Thm 2 decomposition (z_τ = A⁺_{γ,τ}y_γ, σ²_{τ} = σ_γ²∏_{k∈γ\\τ} n_k);
* EMP = M_γ pinv(V_𝒬) v (Thm 3/5) with REPEATS in 𝒬 and UNEQUAL σ_γ, for every γ including γ not
  covered by 𝒬;
* GReM-MLE = M_γ pinv(R_S) z on ResidualPlanner-style measurements, and = the dense generalised least
  squares estimate with repeated residual measurements of unequal σ (Alg. 3);
* the analytic per-cell variance = the diagonal of the dense covariance (which is constant);
* noise-free exactness, unmeasured residuals → 0 (uniform spread), the generic ReM hook;
* Trunc / Trunc+Rescale, workload_error / negative_mass / negative_cells; InputError cases.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpviz.errors import InputError
from dpviz.marginals.model import Domain, downward_closure, subsets
from dpviz.marginals.metrics import negative_cells, negative_mass, workload_error
from dpviz.marginals.estimators import (
    MarginalMeasurement,
    Reconstruction,
    ResidualMeasurement,
    decompose,
    emp,
    grem_mle,
    reconstruction_variance,
    rem,
    trunc,
    trunc_rescale,
)
from dpviz.marginals.residuals import (
    dense_D,
    dense_marginal_matrix,
    dense_residual_matrix,
    marginal_to_residual,
)

DOM3 = Domain(("a", "b", "c"), (3, 4, 2))
DOM4 = Domain(("a", "b", "c", "d"), (2, 3, 2, 3))
DOMAINS = [DOM3, DOM4]


def all_cliques(domain):
    return subsets(tuple(range(domain.d)))


def data_vector(domain, seed=0):
    return np.random.default_rng(seed).poisson(3.0, size=math.prod(domain.sizes)).astype(float)


def dense_Dtau(domain, tau):
    out = np.ones((1, 1))
    for k in tau:
        out = np.kron(out, dense_D(domain.sizes[k]))
    return out


# ----------------------------------------------------------------------------- records


def test_measurement_validation():
    with pytest.raises(InputError, match="finite"):
        ResidualMeasurement((0,), [1.0, np.nan], 1.0)
    with pytest.raises(InputError, match="sigma2"):
        ResidualMeasurement((0,), [1.0, 2.0], -1.0)
    with pytest.raises(InputError, match="sigma2"):
        ResidualMeasurement((0,), [1.0, 2.0], math.inf)
    with pytest.raises(InputError, match="sigma"):
        MarginalMeasurement((0,), [1.0, 2.0, 3.0], math.nan)
    with pytest.raises(InputError, match="sigma"):
        MarginalMeasurement((0,), [1.0, 2.0, 3.0], -0.5)
    with pytest.raises(InputError, match="increasing"):
        MarginalMeasurement((1, 0), np.zeros(12), 1.0)
    with pytest.raises(InputError, match="1-D"):
        MarginalMeasurement((0,), np.zeros((3, 1)), 1.0)
    # lengths are checked against the domain, naming the clique, expected and got
    with pytest.raises(InputError, match=r"γ = \('a', 'b'\): expected n_γ = 12 values, got 11"):
        emp(DOM3, [(0, 1)], [MarginalMeasurement((0, 1), np.zeros(11), 1.0)])
    with pytest.raises(InputError, match=r"τ = \('b',\): expected m_τ = 3 values, got 4"):
        grem_mle(DOM3, [(0, 1)], [ResidualMeasurement((1,), np.zeros(4), 1.0)])
    with pytest.raises(InputError, match="out of range"):
        grem_mle(DOM3, [(0, 1)], [ResidualMeasurement((7,), np.zeros(4), 1.0)])
    with pytest.raises(InputError, match="ResidualMeasurement"):
        grem_mle(DOM3, [(0, 1)], [MarginalMeasurement((0,), np.zeros(3), 1.0)])
    with pytest.raises(InputError, match="no marginals"):
        grem_mle(DOM3, [], [])
    m = ResidualMeasurement([0], [1, 2], 0)
    assert m.tau == (0,) and m.values.dtype == np.float64 and not m.values.flags.writeable and m.sigma2 == 0.0


# ----------------------------------------------------------------------------- Thm 2 / EMP (group 5)


@pytest.mark.parametrize("domain", DOMAINS)
def test_decompose_theorem2(domain):
    rng = np.random.default_rng(5)
    g = (0, 2)
    y = rng.normal(size=domain.size(g))
    out = decompose(domain, [MarginalMeasurement(g, y, 1.5)])
    assert [m.tau for m in out] == subsets(g)
    for m in out:
        t = m.tau
        Ap = dense_Dtau(domain, t) if t == g else None
        factor = math.prod(domain.sizes[k] for k in g if k not in t)
        assert m.sigma2 == pytest.approx(1.5**2 * factor, rel=1e-15)
        np.testing.assert_allclose(m.values, marginal_to_residual(domain, g, t, y))
        if Ap is not None:
            np.testing.assert_allclose(m.values, Ap @ y, atol=1e-12)


def emp_reference(domain, Q, p):
    """Dense M_γ pinv(V_𝒬) v for noisy y (returned) with V_γ = M_γ/σ_γ, v_γ = y_γ/σ_γ."""
    rng = np.random.default_rng(11)
    meas, V, v = [], [], []
    for g, s in Q:
        M = dense_marginal_matrix(domain, g)
        y = M @ p + s * rng.normal(size=M.shape[0])
        meas.append(MarginalMeasurement(g, y, s))
        V.append(M / s)
        v.append(y / s)
    V, v = np.vstack(V), np.concatenate(v)
    Vp = np.linalg.pinv(V)
    return meas, Vp @ v, Vp


@pytest.mark.parametrize("domain", DOMAINS)
def test_emp_equals_weighted_pinv_with_repeats_and_unequal_sigma(domain):
    p = data_vector(domain)
    Q = [((0, 1), 1.0), ((0, 1), 3.0), ((1, 2), 0.5), ((0,), 2.0), ((), 4.0), ((1, 2), 0.7)]
    meas, p_hat, Vp = emp_reference(domain, Q, p)
    W = all_cliques(domain)  # includes γ not covered by 𝒬 (e.g. (0, 2) and anything with the last attribute)
    rec = emp(domain, W, meas)
    assert rec.method == "emp"
    cov_p = Vp @ Vp.T
    for g in W:
        M = dense_marginal_matrix(domain, g)
        np.testing.assert_allclose(rec.marginals[g], M @ p_hat, atol=1e-9)
        # analytic per-cell variance = diagonal of the dense covariance M_γ V⁺V⁺ᵀ M_γᵀ (constant)
        diag = np.einsum("ij,jk,ik->i", M, cov_p, M)
        np.testing.assert_allclose(diag, rec.variance[g], rtol=1e-9, atol=1e-12)
    # combined σ̄_τ² = (Σ σ_{τ,i}^{-2})^{-1}: the total is measured by all six marginals
    inv = sum(1 / (s**2 * math.prod(domain.sizes[k] for k in g)) for g, s in Q)
    assert rec.sigma2[()] == pytest.approx(1 / inv, rel=1e-12)
    assert set(rec.alpha) == set(downward_closure([g for g, _ in Q]))


# ----------------------------------------------------------------------------- GReM-MLE (groups 6, 7)


@pytest.mark.parametrize("domain", DOMAINS)
def test_grem_mle_equals_residualplanner_and_pinv(domain):
    rng = np.random.default_rng(6)
    p = data_vector(domain, 1)
    W = [(0, 1), (1, 2)]
    S = downward_closure(W)
    z = {t: dense_residual_matrix(domain, t) @ p + rng.normal(size=domain.residual_size(t)) for t in S}
    rec = grem_mle(domain, W, [ResidualMeasurement(t, z[t], 2.0) for t in S])
    RS = np.vstack([dense_residual_matrix(domain, t) for t in S])
    p_hat = np.linalg.pinv(RS) @ np.concatenate([z[t] for t in S])
    for g in W:
        np.testing.assert_allclose(rec.marginals[g], dense_marginal_matrix(domain, g) @ p_hat, atol=1e-9)
    for t in S:
        np.testing.assert_array_equal(rec.alpha[t], z[t])  # one measurement per τ: α̂_τ = z_τ


@pytest.mark.parametrize("domain", DOMAINS)
def test_grem_mle_is_generalised_least_squares_with_repeats(domain):
    """Alg. 3 with repeats of unequal σ and an arbitrary S: equals the dense GLS / min-norm estimate."""
    rng = np.random.default_rng(7)
    p = data_vector(domain, 2)
    plan = [((), 1.0), ((0,), 2.0), ((0,), 0.5), ((1, 2), 1.0), ((1, 2), 3.0), ((1, 2), 1.5), ((2,), 0.8)]
    meas, V, v = [], [], []
    for t, s in plan:
        R = dense_residual_matrix(domain, t)
        K = dense_Dtau(domain, t) @ dense_Dtau(domain, t).T
        L = np.linalg.cholesky(K)
        zt = R @ p + s * (L @ rng.normal(size=R.shape[0]))
        meas.append(ResidualMeasurement(t, zt, s * s))
        V.append(np.linalg.solve(L, R) / s)
        v.append(np.linalg.solve(L, zt) / s)
    V, v = np.vstack(V), np.concatenate(v)
    Vp = np.linalg.pinv(V)
    p_hat = Vp @ v
    W = all_cliques(domain)
    rec = grem_mle(domain, W, meas)
    for g in W:
        M = dense_marginal_matrix(domain, g)
        np.testing.assert_allclose(rec.marginals[g], M @ p_hat, atol=1e-9)
        np.testing.assert_allclose(np.einsum("ij,jk,ik->i", M, Vp @ Vp.T, M), rec.variance[g], rtol=1e-9,
                                   atol=1e-12)
    assert rec.sigma2[(1, 2)] == pytest.approx(1 / (1 + 1 / 9 + 1 / 2.25), rel=1e-12)


@pytest.mark.parametrize("domain", DOMAINS)
def test_noise_free_exactness(domain):
    p = data_vector(domain, 3)
    W = [g for g in all_cliques(domain) if len(g) == 2]
    S = downward_closure(W)
    exact = [ResidualMeasurement(t, dense_residual_matrix(domain, t) @ p, 0.0) for t in S]
    noisy = [ResidualMeasurement(t, np.full(domain.residual_size(t), 1e6), 1.0) for t in S]
    for rec in (grem_mle(domain, W, exact), grem_mle(domain, W, exact + noisy),  # σ² = 0 wins outright
                emp(domain, W, [MarginalMeasurement(g, dense_marginal_matrix(domain, g) @ p, 0.0) for g in W]),
                grem_mle(domain, W, [ResidualMeasurement(t, dense_residual_matrix(domain, t) @ p, 5.0) for t in S])):
        for g in W:
            np.testing.assert_allclose(rec.marginals[g], dense_marginal_matrix(domain, g) @ p, atol=1e-9)
    assert grem_mle(domain, W, exact).variance[W[0]] == 0.0


def test_unmeasured_residuals_contribute_zero():
    rec = grem_mle(DOM3, [(0, 1), (2,), ()], [ResidualMeasurement((), [240.0], 4.0)])
    np.testing.assert_allclose(rec.marginals[(0, 1)], np.full(12, 20.0))
    np.testing.assert_allclose(rec.marginals[(2,)], [120.0, 120.0])
    assert rec.marginals[()].tolist() == [240.0]
    assert rec.variance[(0, 1)] == pytest.approx(4.0 / 144)
    assert reconstruction_variance(DOM3, (0, 1), {(): 4.0}) == pytest.approx(4.0 / 144)
    # measurements of τ outside 𝒲↓ are estimated (alpha) but do not touch the workload
    rec2 = grem_mle(DOM3, [(0,)], [ResidualMeasurement((1, 2), np.ones(3), 1.0), ResidualMeasurement((), [9.0], 1.0)])
    np.testing.assert_allclose(rec2.marginals[(0,)], [3.0, 3.0, 3.0])
    assert (1, 2) in rec2.alpha


def test_generic_rem_hook():
    rng = np.random.default_rng(8)
    W = [(0, 1)]
    meas = [ResidualMeasurement(t, rng.normal(size=DOM3.residual_size(t)), 1.0)
            for t in downward_closure(W) for _ in range(3)]
    seen = []

    def median(tau, ms):
        seen.append((tau, len(ms)))
        return np.median(np.stack([m.values for m in ms]), axis=0)

    rec = rem(DOM3, W, meas, median)
    assert rec.method == "rem" and math.isnan(rec.variance[(0, 1)]) and rec.sigma2 == {}
    assert sorted(seen) == sorted((t, 3) for t in downward_closure(W))
    ref = grem_mle(DOM3, W, [ResidualMeasurement(t, a, 1.0) for t, a in rec.alpha.items()])
    np.testing.assert_allclose(rec.marginals[(0, 1)], ref.marginals[(0, 1)])
    with_var = rem(DOM3, W, meas, lambda t, ms: (ms[0].values, 2.0))
    assert with_var.variance[(0, 1)] == pytest.approx(reconstruction_variance(DOM3, (0, 1), dict.fromkeys(
        downward_closure(W), 2.0)))
    with pytest.raises(InputError, match=r"τ = \('a', 'b'\): expected 6 finite values, got 5"):
        rem(DOM3, W, meas, lambda t, ms: np.zeros(DOM3.residual_size(t) if t != (0, 1) else 5))
    with pytest.raises(InputError, match="not finite"):
        rem(DOM3, W, meas, lambda t, ms: np.full(DOM3.residual_size(t), np.nan))


# ----------------------------------------------------------------------------- baselines (group 12)


def test_trunc_and_trunc_rescale():
    mu = {(0,): np.array([5.0, -1.0, 2.0]), (1,): np.array([-1.0, -2.0, 0.0, -3.0]), (2,): np.array([-3.0, 1.0])}
    rec = Reconstruction(mu, dict.fromkeys(mu, 1.0), {}, "grem-mle")
    t = trunc(rec)
    assert t.method == "grem-mle+trunc" and all(math.isnan(v) for v in t.variance.values())
    np.testing.assert_array_equal(t.marginals[(0,)], [5.0, 0.0, 2.0])
    r = trunc_rescale(rec)
    assert r.method == "grem-mle+trunc-rescale"
    np.testing.assert_allclose(r.marginals[(0,)], np.array([5.0, 0.0, 2.0]) * 6 / 7)
    assert r.marginals[(0,)].sum() == pytest.approx(mu[(0,)].sum())
    np.testing.assert_array_equal(r.marginals[(1,)], np.zeros(4))  # every cell ≤ 0: zeros, no 0/0
    np.testing.assert_array_equal(r.marginals[(2,)], np.zeros(2))  # untruncated total ≤ 0: zeros
    for out in (t, r):
        assert all((m >= 0).all() and not m.flags.writeable for m in out.marginals.values())
    assert negative_cells(mu) == 5 and negative_mass(mu) == 10.0
    assert negative_cells(r.marginals) == 0 and negative_mass(r.marginals) == 0.0


def test_workload_error():
    true = {(0,): np.array([4.0, 6.0]), (0, 1): np.array([1.0, 3.0, 2.0, 4.0])}
    est = {(0,): np.array([5.0, 4.0]), (0, 1): np.array([1.0, 3.0, 5.0, 0.0]), (1,): np.zeros(2)}
    assert workload_error(true, est) == pytest.approx((3 / 2 + 7 / 4) / 2)
    assert workload_error(true, est, scale="none") == pytest.approx((3 + 7) / 2)
    assert workload_error(true, est, scale="N") == pytest.approx((3 + 7) / 2 / 10)
    assert workload_error(true, est, scale="N", N=20) == pytest.approx((3 + 7) / 2 / 20)
    assert workload_error(true, est, norm="l2", scale="none") == pytest.approx((math.sqrt(5) + 5) / 2)
    assert workload_error(true, true) == 0.0
    with pytest.raises(InputError, match="norm"):
        workload_error(true, est, norm="linf")
    with pytest.raises(InputError, match="scale"):
        workload_error(true, est, scale="rows")
    with pytest.raises(InputError, match="no marginal for"):
        workload_error({(2,): np.zeros(2)}, est)
    with pytest.raises(InputError, match="2 true cells but 3"):
        workload_error({(0,): np.zeros(2)}, {(0,): np.zeros(3)})
    with pytest.raises(InputError, match="no marginals"):
        workload_error({}, est)
