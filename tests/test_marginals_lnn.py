"""GReM-LNN (dpviz.marginals.lnn): Mullins et al., NeurIPS 2024, Eq. 8/9 and Alg. 6.

References are dense and independent of the solver's algebra: α stacked over 𝒲↓, A_{γ,τ} = M_γ pinv(R_τ)
from the np.kron builders, K⁻¹ = inv(w D_τD_τᵀ) with D_τ built here, and scipy's SLSQP on the same
objective F(α) = ½ Σ (α − z)ᵀK⁻¹(α − z) + η Σ ‖A_{ν,ν}α_ν‖² (the App. F scaling the module documents).
"""

from __future__ import annotations

import math
import time
from dataclasses import FrozenInstanceError
from itertools import combinations

import numpy as np
import pytest
from scipy.optimize import minimize

from dpviz.errors import InputError
from dpviz.marginals.model import Domain, downward_closure, subsets
import dpviz.marginals.lnn as lnn_module
from dpviz.marginals.lnn import (
    ETA,
    SOLVER_ACCELERATED,
    SOLVER_PLAIN,
    LNNResult,
    _Problem,
    grem_lnn,
    lnn_objective,
)
from dpviz.marginals.estimators import ResidualMeasurement, grem_mle
from dpviz.marginals.residuals import (
    dense_marginal_matrix,
    dense_residual_matrix,
    marginal_to_residual,
    residual_to_marginal,
)

DOM = Domain(("a", "b", "c"), (3, 4, 2))
W2 = list(combinations(range(3), 2))
FULL = downward_closure(W2)
PARTIAL = [(), (0,), (1,), (2,), (0, 1)]  # (0,2) and (1,2) unmeasured: S ⊊ 𝒲↓


# --------------------------------------------------------------------------- dense reference


def _d(n: int) -> np.ndarray:
    return np.eye(n - 1, n) - np.eye(n - 1, n, k=1)


def _d_tau(dom: Domain, tau) -> np.ndarray:
    out = np.ones((1, 1))
    for k in tau:
        out = np.kron(out, _d(dom.sizes[k]))
    return out


def _a_dense(dom: Domain, g, t) -> np.ndarray:
    return dense_marginal_matrix(dom, g) @ np.linalg.pinv(dense_residual_matrix(dom, t))


class DenseQP:
    """F(α) = ½ αᵀHα − linᵀα + const, constraints Gα ≥ 0 (rows: workload cells in order)."""

    def __init__(self, dom, workload, meas, eta, weights="heuristic", base=2.0):
        self.cl, self.W = downward_closure(workload), list(workload)
        self.off, o = {}, 0
        for t in self.cl:
            self.off[t] = slice(o, o + dom.residual_size(t))
            o += dom.residual_size(t)
        self.H, self.lin, self.const = np.zeros((o, o)), np.zeros(o), 0.0
        self.measured = {m.tau for m in meas}
        for t in self.cl:
            sl, kinv = self.off[t], np.linalg.inv(_d_tau(dom, t) @ _d_tau(dom, t).T)
            if t in self.measured:
                for m in (m for m in meas if m.tau == t):
                    w = m.sigma2 if weights == "noise" else base ** len(t)
                    self.H[sl, sl] += kinv / w
                    self.lin[sl] += kinv @ m.values / w
                    self.const += 0.5 * m.values @ kinv @ m.values / w
            else:
                a = _a_dense(dom, t, t)
                self.H[sl, sl] += 2 * eta * a.T @ a
        blocks, self.rows, r = [], {}, 0
        for g in self.W:
            gm = np.zeros((dom.size(g), o))
            for t in subsets(g):
                gm[:, self.off[t]] = _a_dense(dom, g, t)
            blocks.append(gm)
            self.rows[g] = slice(r, r + dom.size(g))
            r += dom.size(g)
        self.G = np.vstack(blocks)

    def F(self, x):
        return 0.5 * x @ self.H @ x - self.lin @ x + self.const

    def grad(self, x):
        return self.H @ x - self.lin

    def stack(self, alpha):
        return np.concatenate([alpha[t] for t in self.cl])

    def stack_w(self, d):
        return np.concatenate([d[g] for g in self.W])

    def unconstrained(self):
        return np.linalg.solve(self.H, self.lin)

    def solve(self):
        res = minimize(self.F, self.unconstrained(), jac=self.grad, method="SLSQP",
                       constraints=[{"type": "ineq", "fun": lambda x: self.G @ x, "jac": lambda x: self.G}],
                       options={"ftol": 1e-15, "maxiter": 2000})
        assert res.success, res.message
        return res

    def marginals(self, x):
        return {g: self.G[sl] @ x for g, sl in self.rows.items()}

    def dual_hessian(self):
        """−∇²g = G H⁻¹ Gᵀ for g(λ) = min_α F(α) + λᵀGα."""
        return self.G @ np.linalg.solve(self.H, self.G.T)


# --------------------------------------------------------------------------- problems


def _poisson(seed: int, rate: float) -> np.ndarray:
    return np.random.default_rng(seed).poisson(rate, size=int(np.prod(DOM.sizes))).astype(float)


def _measure(p, taus, sigmas, seed):
    """z_τ = D_τ(μ_τ + σξ) (ResidualPlanner's sampler), covariance σ² D_τD_τᵀ."""
    rng = np.random.default_rng(seed)
    out = []
    for t, s in zip(taus, sigmas, strict=True):
        mu = dense_marginal_matrix(DOM, t) @ p
        out.append(ResidualMeasurement(t, marginal_to_residual(DOM, t, t, mu + s * rng.standard_normal(mu.size)),
                                       s * s))
    return out


@pytest.fixture(scope="module")
def full_case():
    """Sparse Poisson counts, S = 𝒲↓ once each, σ = 3: the MLE has negative cells."""
    p = _poisson(1, 0.5)
    return p, _measure(p, FULL, [3.0] * len(FULL), seed=11)


@pytest.fixture(scope="module")
def partial_case():
    """S ⊊ 𝒲↓ with repeats of unequal σ (an EMP-like multiset)."""
    p = _poisson(1, 0.5)
    taus = PARTIAL + [(0,), (0, 1)]
    return p, _measure(p, taus, [2.0] * len(PARTIAL) + [4.0, 1.5], seed=12)


@pytest.fixture(params=["dense", "lattice"])
def path(request, monkeypatch):
    """Both ways of running a round: the dense affine map (small workloads, the default here) and the lattice
    transforms (forced by a zero cell limit)."""
    monkeypatch.setattr(lnn_module, "DENSE_MAX_CELLS", 10**9 if request.param == "dense" else 0)
    return request.param


QP_CASES = [  # (id, case, eta, weights, weight_base)
    ("full-2^|τ|", "full", 40.0, "heuristic", 2.0),
    ("full-4^|τ|", "full", 40.0, "heuristic", 4.0),
    ("partial-eta0.5", "partial", 0.5, "heuristic", 2.0),
    ("partial-eta40", "partial", 40.0, "heuristic", 2.0),
    ("partial-noise", "partial", 40.0, "noise", 2.0),
]


@pytest.mark.parametrize("case,eta,weights,base", [c[1:] for c in QP_CASES], ids=[c[0] for c in QP_CASES])
@pytest.mark.parametrize("accelerate", [True, False], ids=["fista", "alg6"])
def test_matches_generic_qp_solver(request, case, eta, weights, base, accelerate, path):
    _, meas = request.getfixturevalue(f"{case}_case")
    qp = DenseQP(DOM, W2, meas, eta, weights, base)
    assert (qp.G @ qp.unconstrained()).min() < -0.5, "constraints must be active for this test to mean anything"
    ref = qp.solve()
    r = grem_lnn(DOM, W2, meas, eta=eta, weights=weights, weight_base=base, early_stopping=False, rounds=1500,
                 accelerate=accelerate)
    assert r.restarts == 0 and r.iterations == 1500 and r.stop_reason == "rounds"
    x = qp.stack(r.alpha)
    assert r.objective == pytest.approx(qp.F(x), rel=1e-10)  # the documented objective, evaluated densely
    assert r.objective == pytest.approx(ref.fun, rel=1e-4)
    assert abs(r.objective - ref.fun) <= 1e-7 * abs(ref.fun)  # observed: ≤ 1e-11 relative
    mq = qp.marginals(ref.x)
    for g in W2:
        np.testing.assert_allclose(r.marginals[g], mq[g], atol=1e-3)
        np.testing.assert_allclose(r.marginals[g], mq[g], atol=1e-5)  # observed: ≤ 2e-7
    assert lnn_objective(DOM, W2, meas, r.alpha, eta=eta, weights=weights, weight_base=base) == pytest.approx(
        r.objective, rel=1e-12)


def test_objective_scaling_is_half_data_plus_eta_regulariser(partial_case):
    """The factor-of-2 note: at the solution, the η-term uses η (not η/2 or 2η) next to ½·data."""
    _, meas = partial_case
    r = grem_lnn(DOM, W2, meas, eta=0.5, early_stopping=False, rounds=1500)
    for eta in (0.25, 1.0):  # a wrong scaling of the regulariser would be optimal for one of these instead
        other = DenseQP(DOM, W2, meas, eta).solve()
        assert max(np.abs(r.marginals[g] - DenseQP(DOM, W2, meas, eta).marginals(other.x)[g]).max()
                   for g in W2) > 1e-3


@pytest.mark.parametrize("case,eta,weights", [("full", 40.0, "heuristic"), ("partial", 0.5, "heuristic"),
                                              ("partial", 40.0, "noise")])
def test_kkt_conditions(request, case, eta, weights, path):
    _, meas = request.getfixturevalue(f"{case}_case")
    qp = DenseQP(DOM, W2, meas, eta, weights)
    r = grem_lnn(DOM, W2, meas, eta=eta, weights=weights, early_stopping=False, rounds=1500)
    x, lam = qp.stack(r.alpha), qp.stack_w(r.multipliers)
    mu = qp.G @ x
    # primal feasibility (after the final feasibility step) and consistency with α
    assert min(float(m.min()) for m in r.marginals.values()) >= -1e-9
    np.testing.assert_allclose(qp.stack_w(r.marginals), mu, atol=1e-9)
    # dual feasibility, complementary slackness, stationarity of ℒ(α, λ) = F(α) + λᵀGα in α
    assert lam.max() <= 0.0
    assert (lam < -1e-6).any(), "some constraint must be active"
    assert abs(lam @ mu) < 1e-8
    assert np.abs(lam * mu).max() < 1e-8
    assert np.abs(qp.grad(x) + qp.G.T @ lam).max() < 1e-8
    assert r.converged and abs(r.complementary_slackness) < 1e-8


def test_inactive_constraints_return_the_mle():
    """S = 𝒲↓ once each and an MLE with no negative cell: LNN returns GReM-MLE, whatever the weights."""
    p = _poisson(3, 40.0)
    meas = _measure(p, FULL, [1.0] * len(FULL), seed=5)
    mle = grem_mle(DOM, W2, meas)
    assert min(float(m.min()) for m in mle.marginals.values()) > 1.0
    for kw in ({}, {"weight_base": 4.0}, {"weights": "noise"}):
        r = grem_lnn(DOM, W2, meas, **kw)
        assert r.converged and r.feasibility_mix == 0.0
        for g in W2:
            np.testing.assert_allclose(r.marginals[g], mle.marginals[g], rtol=0, atol=1e-9)
        assert all(np.all(lam == 0.0) for lam in r.multipliers.values())


def test_noise_free_residuals_give_exact_marginals():
    p = _poisson(4, 0.3)
    meas = _measure(p, FULL, [0.0] * len(FULL), seed=0)
    assert min(float((dense_marginal_matrix(DOM, g) @ p).min()) for g in W2) == 0.0  # zero cells: degenerate
    # the code-style early stop (negative mass > −1 at iteration 300) leaves λ slightly below 0 on zero cells
    for kw, atol in (({}, 1e-6), ({"early_stopping": False, "rounds": 1000}, 1e-9), ({"lam0": 0.0}, 1e-9)):
        r = grem_lnn(DOM, W2, meas, **kw)
        for g in W2:
            np.testing.assert_allclose(r.marginals[g], dense_marginal_matrix(DOM, g) @ p, rtol=0, atol=atol)


def test_default_run_stops_early_and_is_feasible(full_case):
    _, meas = full_case
    mle = grem_mle(DOM, W2, meas)
    assert sum(float(np.minimum(m, 0).sum()) for m in mle.marginals.values()) < -1.0
    r = grem_lnn(DOM, W2, meas)
    assert isinstance(r, LNNResult) and r.method == "GReM-LNN"
    assert r.stop_reason in ("negative_mass", "complementary_slackness") and r.converged
    assert r.iterations < 4000 and r.iterations % 100 == 0
    assert [h[0] for h in r.history] == list(range(100, r.iterations + 1, 100))
    assert min(float(m.min()) for m in r.marginals.values()) >= 0.0
    with pytest.raises(FrozenInstanceError):
        r.step = 1.0  # type: ignore[misc]


@pytest.mark.parametrize("scale", [1.0, 1e7])
def test_feasibility_step_after_a_short_run(full_case, scale):
    """Stopped after 3 rounds the dual iterate is infeasible; the final step makes every cell ≥ 0 while the
    marginals stay the reconstruction of one α with the same total (also with counts of order 10^7, where
    rounding at the binding cells is far above 1e-9 in absolute terms)."""
    meas = [ResidualMeasurement(m.tau, m.values * scale, m.sigma2 * scale**2) for m in full_case[1]]
    r = grem_lnn(DOM, W2, meas, rounds=3, early_stopping=False)
    assert r.min_cell_before < -0.1 * scale and 0.0 < r.feasibility_mix < 1.0
    assert not r.converged
    assert min(float(m.min()) for m in r.marginals.values()) >= 0.0
    assert min(float(m.min()) for m in r.marginals.values()) <= 1e-12 * scale  # smallest move: a cell binds
    for g in W2:
        rebuilt = sum(_a_dense(DOM, g, t) @ r.alpha[t] for t in subsets(g))
        np.testing.assert_allclose(r.marginals[g], rebuilt, atol=1e-9 * scale)
        assert r.marginals[g].sum() == pytest.approx(float(r.alpha[()][0]), rel=1e-12)


def test_dual_objective_increases(full_case):
    _, meas = full_case
    r = grem_lnn(DOM, W2, meas, rounds=300, early_stopping=False, check_every=1)
    dual = np.array([h[1] for h in r.history])
    assert len(dual) == 300
    assert np.all(np.diff(dual) >= -1e-9 * np.abs(dual[1:]))
    assert dual[-1] == pytest.approx(r.objective, rel=1e-8)  # zero duality gap at the optimum


def test_huge_step_restarts_with_smaller_step_and_converges(full_case):
    _, meas = full_case
    good = grem_lnn(DOM, W2, meas, early_stopping=False, rounds=1000)
    r = grem_lnn(DOM, W2, meas, step=100.0, early_stopping=False, rounds=1000, accelerate=False)
    assert r.restarts >= 2 and r.solver == SOLVER_PLAIN
    assert r.step == pytest.approx(100.0 / math.sqrt(10.0) ** r.restarts, rel=1e-12)
    assert r.converged and r.stop_reason == "rounds"
    for g in W2:
        np.testing.assert_allclose(r.marginals[g], good.marginals[g], atol=1e-6)
    with pytest.raises(InputError, match="diverged"):
        grem_lnn(DOM, W2, meas, step=100.0, max_restarts=0, accelerate=False)


def test_accelerated_step_is_capped_by_the_dual_lipschitz_constant(full_case):
    """FISTA needs s ≤ 1/L: a huge step is capped at 0.9/L̂ up front (no divergence, no restart), with L̂ the
    largest eigenvalue of the dual Hessian, checked against a dense eigen-decomposition."""
    _, meas = full_case
    qp = DenseQP(DOM, W2, meas, ETA, "heuristic", 2.0)
    lip = float(np.linalg.eigvalsh(qp.dual_hessian()).max())
    r = grem_lnn(DOM, W2, meas, step=100.0, early_stopping=False, rounds=1000)
    assert r.restarts == 0 and r.solver == SOLVER_ACCELERATED
    assert r.step == pytest.approx(0.9 / lip, rel=1e-3)
    good = grem_lnn(DOM, W2, meas, early_stopping=False, rounds=3000, accelerate=False)
    for g in W2:
        np.testing.assert_allclose(r.marginals[g], good.marginals[g], atol=1e-6)


def test_acceleration_needs_fewer_rounds(full_case):
    """Same stopping rule, same answer, fewer rounds than Alg. 6's plain ascent."""
    _, meas = full_case
    fast = grem_lnn(DOM, W2, meas, neg_tol=1e-6, cs_tol=1e-6, neg_after=0, cs_after=0, check_every=10)
    slow = grem_lnn(DOM, W2, meas, neg_tol=1e-6, cs_tol=1e-6, neg_after=0, cs_after=0, check_every=10,
                    accelerate=False)
    assert fast.converged and slow.converged
    assert fast.iterations < slow.iterations
    for g in W2:
        np.testing.assert_allclose(fast.marginals[g], slow.marginals[g], atol=1e-3)


def test_time_limit_stops(full_case):
    _, meas = full_case
    t0 = time.perf_counter()
    r = grem_lnn(DOM, W2, meas, rounds=10**7, early_stopping=False, time_limit=0.2)
    assert time.perf_counter() - t0 < 5.0
    assert r.stop_reason == "time_limit" and 0 < r.iterations < 10**7
    assert r.elapsed >= 0.2
    assert min(float(m.min()) for m in r.marginals.values()) >= -1e-9


def test_callback_called_and_can_stop(full_case):
    _, meas = full_case
    calls = []

    def cb(iteration, dual, neg):
        calls.append((iteration, dual, neg))
        return True if len(calls) == 3 else None

    r = grem_lnn(DOM, W2, meas, rounds=4000, early_stopping=False, check_every=50, callback=cb)
    assert [c[0] for c in calls] == [50, 100, 150]
    assert r.stop_reason == "callback" and r.iterations == 150
    assert list(r.history) == calls
    assert all(isinstance(c[1], float) and isinstance(c[2], float) and c[2] <= 0.0 for c in calls)
    seen = []
    grem_lnn(DOM, W2, meas, rounds=250, early_stopping=False, callback=lambda *a: seen.append(a))
    assert [s[0] for s in seen] == [100, 200]


def test_large_domain_never_builds_the_data_vector():
    """d = 12 attributes of 10 values (n = 10^12): only the workload marginals are touched."""
    dom = Domain(tuple(f"x{i}" for i in range(12)), (10,) * 12)
    wl = [(0, 1, 2), (2, 5, 7), (3, 8, 11)]
    rng = np.random.default_rng(0)
    meas = [ResidualMeasurement(t, rng.normal(0, 5, dom.residual_size(t)) + (50.0 if t == () else 0.0), 25.0)
            for t in downward_closure(wl)]
    r = grem_lnn(dom, wl, meas, rounds=30, early_stopping=False)
    assert set(r.marginals) == set(wl) and all(r.marginals[g].shape == (1000,) for g in wl)
    assert min(float(m.min()) for m in r.marginals.values()) >= -1e-9


@pytest.mark.parametrize("kwargs,match", [
    ({"step": 0.0}, "step"), ({"step": -1.0}, "step"), ({"step": float("nan")}, "step"),
    ({"eta": 0.0}, "eta"), ({"eta": -2.0}, "eta"), ({"lam0": 0.5}, "lam0"), ({"rounds": 0}, "rounds"),
    ({"weight_base": 0.0}, "weight_base"), ({"weights": "bogus"}, "weights"), ({"time_limit": 0.0}, "time_limit"),
    ({"check_every": 0}, "check_every"), ({"callback": 3}, "callback"),
])
def test_bad_parameters(full_case, kwargs, match):
    _, meas = full_case
    with pytest.raises(InputError, match=match):
        grem_lnn(DOM, W2, meas, **kwargs)


def test_bad_workload_and_measurements(full_case):
    _, meas = full_case
    with pytest.raises(InputError, match="workload"):
        grem_lnn(DOM, [], meas)
    with pytest.raises(InputError, match="not in the downward closure"):
        grem_lnn(DOM, [(0, 1)], meas)  # measurements of (2,), (0,2), (1,2) lie outside {(0,1)}↓
    with pytest.raises(InputError, match="empty"):
        grem_lnn(DOM, W2, [])
    with pytest.raises(InputError, match="ResidualMeasurement"):
        grem_lnn(DOM, W2, [(m.tau, m.values, m.sigma2) for m in meas])
    with pytest.raises(InputError, match="m_τ"):
        grem_lnn(DOM, W2, [ResidualMeasurement((0, 1), np.zeros(5), 1.0)])
    exact = [ResidualMeasurement(m.tau, m.values, 0.0) for m in meas]
    with pytest.raises(InputError, match="σ² > 0"):
        grem_lnn(DOM, W2, exact, weights="noise")


def _random_workload(rng: np.random.Generator):
    """A random domain (2-5 attributes of 2-5 values) and a mixed workload of 1-3-way cliques, some nested."""
    d = int(rng.integers(2, 6))
    domain = Domain(tuple(f"a{i}" for i in range(d)), tuple(int(s) for s in rng.integers(2, 6, size=d)))
    cliques = [c for r in range(1, min(d, 3) + 1) for c in combinations(range(d), r)]
    picks = rng.choice(len(cliques), size=int(rng.integers(1, min(len(cliques), 6) + 1)), replace=False)
    return domain, sorted({cliques[i] for i in picks}, key=lambda t: (len(t), t))


@pytest.mark.parametrize("seed", range(12))
def test_lattice_transforms_equal_the_per_pair_maps(seed):
    """The solver's two lattice passes (superset sums on the λ side, subset sums on the α side) equal the
    per-pair A⁺_{γ,τ} / A_{γ,τ} maps of dpviz.marginals.residuals, on random domains and mixed workloads
    (cliques of different sizes, some nested in others)."""
    rng = np.random.default_rng(seed)
    domain, workload = _random_workload(rng)
    closure = downward_closure(workload)
    measured = {t: (rng.normal(size=domain.residual_size(t)), float(rng.uniform(0.5, 2.0)), 0.0)
                for t in closure if rng.random() < 0.7}
    prob = _Problem(domain, workload, measured, eta=3.0)
    lam = {g: -rng.random(domain.size(g)) for g in workload}
    # λ side, pair by pair: b̃_τ = Σ_{γ⊇τ} ∏_{k∈γ∖τ} n_k⁻¹ A⁺_{γ,τ} λ_γ
    bt = {t: np.zeros(domain.residual_size(t)) for t in closure}
    for g in workload:
        for t in subsets(g):
            bt[t] += domain.size(t) / domain.size(g) * marginal_to_residual(domain, g, t, lam[g])
    alpha = prob.alpha(lam)
    for t in closure:
        want = measured[t][0] - measured[t][1] * bt[t] if t in measured else -bt[t] / (2 * 3.0)
        np.testing.assert_allclose(alpha[t], want, rtol=1e-10, atol=1e-10)
    # α side, pair by pair: μ_γ = Σ_{τ⊆γ} A_{γ,τ} α_τ
    mu = prob.marginals(alpha)
    for g in workload:
        want = sum(residual_to_marginal(domain, g, t, alpha[t]) for t in subsets(g))
        np.testing.assert_allclose(mu[g], want, rtol=1e-10, atol=1e-10)


def _random_problem(seed: int):
    """A random domain, a mixed workload (nested cliques of 1-3 attributes) and noisy measurements of a random
    part S of its closure (S = 𝒲↓ on even seeds: ResidualPlanner; S ⊊ 𝒲↓ on odd ones: an MWEM-like EMP)."""
    rng = np.random.default_rng(seed)
    domain, workload = _random_workload(rng)
    closure = downward_closure(workload)
    taus = closure if seed % 2 == 0 else [()] + [t for t in closure if t and rng.random() < 0.6]
    every = tuple(range(domain.d))
    counts = rng.poisson(0.4, size=domain.size(every)).astype(float)
    meas = [ResidualMeasurement(t, marginal_to_residual(domain, every, t, counts)
                                + rng.normal(scale=2.0, size=domain.residual_size(t)), 4.0) for t in taus]
    return domain, workload, meas


@pytest.mark.parametrize("seed", range(16))
def test_dense_map_equals_the_lattice_transforms(seed):
    """The dense affine map μ(α*(λ)) = μ₀ − Mλ (and α*(λ)) built from identity matrices equals the lattice
    passes on random multipliers, and M is symmetric positive semi-definite (the negated dual Hessian)."""
    domain, workload, meas = _random_problem(seed)
    closure = downward_closure(workload)
    prob = _Problem(domain, workload, lnn_module._measurements(domain, set(closure), meas, "heuristic", 2.0), ETA)
    rng = np.random.default_rng(100 + seed)
    lams = [-rng.random(prob.total_cells) * 5 for _ in range(3)]
    lattice = [(prob.alpha(prob.views(x)), prob.marginals(prob.alpha(prob.views(x)))) for x in lams]
    prob.dense()
    assert prob.M is not None and prob.M.shape == (prob.total_cells, prob.total_cells)
    np.testing.assert_allclose(prob.M, prob.M.T, atol=1e-10 * max(1.0, np.abs(prob.M).max()))
    assert np.linalg.eigvalsh(0.5 * (prob.M + prob.M.T)).min() > -1e-9 * max(1.0, np.abs(prob.M).max())
    for x, (alpha, mu) in zip(lams, lattice):
        got = np.empty(prob.total_cells)
        prob.mu_into(x, got)
        for g in workload:
            np.testing.assert_allclose(prob.views(got)[g], mu[g], rtol=1e-10, atol=1e-9)
        dense_alpha = prob.alpha_of(x)
        for t in closure:
            np.testing.assert_allclose(dense_alpha[t], alpha[t], rtol=1e-10, atol=1e-9)


@pytest.mark.parametrize("seed", range(16))
@pytest.mark.parametrize("accelerate", [True, False], ids=["fista", "alg6"])
def test_dense_rounds_give_the_lattice_result(seed, accelerate, monkeypatch):
    """GReM-LNN on random small problems: the same iterations, stopping reason, step and marginals (to rounding)
    whichever way a round is computed; the dense way is the one taken by default at this size."""
    domain, workload, meas = _random_problem(seed)
    built = []
    real_dense = _Problem.dense
    monkeypatch.setattr(_Problem, "dense", lambda self: built.append(1) or real_dense(self))
    # the paper's settings per mechanism (App. H): S = 𝒲↓ step 0.1; S ⊊ 𝒲↓ (Scalable MWEM) step 0.02, η = 1/40
    opts = {"step": 0.1} if seed % 2 == 0 else {"step": 0.02, "eta": ETA}
    dense = grem_lnn(domain, workload, meas, rounds=700, accelerate=accelerate, **opts)
    assert built, "a workload this small runs its rounds on the dense map"
    monkeypatch.setattr(lnn_module, "DENSE_MAX_CELLS", 0)
    lattice = grem_lnn(domain, workload, meas, rounds=700, accelerate=accelerate, **opts)
    assert len(built) == 1, "with no dense budget the lattice transforms run the rounds"
    assert (dense.iterations, dense.stop_reason, dense.restarts) == (lattice.iterations, lattice.stop_reason,
                                                                    lattice.restarts)
    assert dense.step == pytest.approx(lattice.step, rel=1e-9)
    scale = max(1.0, max(float(np.abs(m).max()) for m in lattice.marginals.values()))
    assert scale < 1e4, "a run that converges (a diverging one amplifies rounding: nothing to compare)"
    for g in workload:
        np.testing.assert_allclose(dense.marginals[g], lattice.marginals[g], atol=1e-8 * scale)
    assert dense.objective == pytest.approx(lattice.objective, rel=1e-9, abs=1e-9)
