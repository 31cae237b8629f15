"""Residual-basis algebra against dense np.kron references (digest §8 groups 1–4).

Groups: (1) closed-form per-fibre operators vs dense D, pinv(D), (DDᵀ)⁻¹; (2) residual structure
(R_τR_τ'ᵀ = 0, R_τM_γᵀ = 0 for τ ⊄ γ, full row rank, Σ m_τ = n_γ, the full stack is invertible);
(3) Prop. 1 for arbitrary S and random z; (4) Lemma 1 and Thm 2 (A⁺ is the pseudoinverse, the
decomposed residual covariances, the round trip); plus batching and InputError cases.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from dpviz.errors import InputError
from dpviz.marginals.model import Domain, all_kway, downward_closure, subsets
from dpviz.marginals.residuals import (
    check_clique,
    d_apply,
    dense_D,
    dense_marginal_matrix,
    dense_residual_matrix,
    dpinv_apply,
    dpinv_t_apply,
    dt_apply,
    marginal_to_residual,
    residual_cov_apply,
    residual_cov_solve,
    residual_to_marginal,
    residual_to_marginal_t,
)

DOM3 = Domain(("a", "b", "c"), (3, 4, 2))
DOM4 = Domain(("a", "b", "c", "d"), (2, 3, 2, 3))
DOMAINS = [DOM3, DOM4]


def all_cliques(domain):
    return subsets(tuple(range(domain.d)))


def pairs(domain):
    """Every (γ, τ) with τ ⊆ γ."""
    return [(g, t) for g in all_cliques(domain) for t in subsets(g)]


def dense_A(domain, gamma, tau):
    return dense_marginal_matrix(domain, gamma) @ np.linalg.pinv(dense_residual_matrix(domain, tau))


def as_matrix(f, domain, gamma, tau, m):
    """The dense matrix of the linear map v ↦ f(domain, γ, τ, v) on R^m (columns = images of unit vectors)."""
    return f(domain, gamma, tau, np.eye(m)).T


# ----------------------------------------------------------------------------- group 1: per-fibre operators


@pytest.mark.parametrize("n", range(2, 11))
def test_fibre_operators_match_dense(n):
    rng = np.random.default_rng(n)
    D = dense_D(n)
    Dp = np.linalg.pinv(D)
    v, w = rng.normal(size=n - 1), rng.normal(size=n)
    np.testing.assert_allclose(d_apply(w), D @ w, atol=1e-12)
    np.testing.assert_allclose(dt_apply(v), D.T @ v, atol=1e-12)
    np.testing.assert_allclose(dpinv_apply(v), Dp @ v, atol=1e-12)
    np.testing.assert_allclose(dpinv_t_apply(w), Dp.T @ w, atol=1e-12)
    # closed forms of the digest: (D⁺)_{ij} = 1[i ≤ j] − j/n and (DDᵀ)⁻¹_{ij} = min(i,j)(n − max(i,j))/n
    i, j = np.meshgrid(np.arange(1, n + 1), np.arange(1, n), indexing="ij")
    np.testing.assert_allclose(Dp, (i <= j) - j / n, atol=1e-12)
    i, j = np.meshgrid(np.arange(1, n), np.arange(1, n), indexing="ij")
    np.testing.assert_allclose(np.linalg.inv(D @ D.T), np.minimum(i, j) * (n - np.maximum(i, j)) / n, atol=1e-12)
    np.testing.assert_allclose(Dp @ D, np.eye(n) - 1 / n, atol=1e-12)


def along(M, a, axis):
    return np.moveaxis(np.tensordot(M, a, axes=([1], [axis])), 0, axis)


def test_fibre_operators_along_any_axis():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(3, 5, 4))
    for axis in range(3):
        n = x.shape[axis]
        D, Dp = dense_D(n), np.linalg.pinv(dense_D(n))
        np.testing.assert_allclose(d_apply(x, axis), along(D, x, axis), atol=1e-12)
        np.testing.assert_allclose(dpinv_t_apply(x, axis), along(Dp.T, x, axis), atol=1e-12)
        u = along(D, x, axis)
        np.testing.assert_allclose(dt_apply(u, axis), along(D.T, u, axis), atol=1e-12)
        np.testing.assert_allclose(dpinv_apply(u, axis), along(Dp, u, axis), atol=1e-12)


@pytest.mark.parametrize("domain", DOMAINS)
def test_residual_cov_apply_and_solve(domain):
    rng = np.random.default_rng(1)
    for tau in all_cliques(domain):
        m = domain.residual_size(tau)
        Dt = np.ones((1, 1))
        for k in tau:
            Dt = np.kron(Dt, dense_D(domain.sizes[k]))
        K = Dt @ Dt.T
        v = rng.normal(size=m)
        np.testing.assert_allclose(residual_cov_apply(domain, tau, v), K @ v, atol=1e-12)
        np.testing.assert_allclose(residual_cov_solve(domain, tau, v), np.linalg.solve(K, v), atol=1e-10)


# ----------------------------------------------------------------------------- group 2: residual structure


@pytest.mark.parametrize("domain", DOMAINS)
def test_residual_structure(domain):
    cl = all_cliques(domain)
    R = {t: dense_residual_matrix(domain, t) for t in cl}
    M = {g: dense_marginal_matrix(domain, g) for g in cl}
    for t in cl:
        assert R[t].shape == (domain.residual_size(t), int(np.prod(domain.sizes)))
        assert np.linalg.matrix_rank(R[t]) == domain.residual_size(t)
    for t, u in itertools.combinations(cl, 2):
        assert np.abs(R[t] @ R[u].T).max() < 1e-12
    for t in cl:
        for g in cl:
            if not set(t) <= set(g):
                assert np.abs(R[t] @ M[g].T).max() < 1e-12
    for g in cl:
        assert sum(domain.residual_size(t) for t in subsets(g)) == domain.size(g)
    full = np.vstack([R[t] for t in cl])
    assert full.shape[0] == full.shape[1]
    assert np.linalg.matrix_rank(full) == full.shape[0]
    # R_τ = D_τ M_τ
    for t in cl:
        Dt = np.ones((1, 1))
        for k in t:
            Dt = np.kron(Dt, dense_D(domain.sizes[k]))
        np.testing.assert_allclose(R[t], Dt @ M[t], atol=1e-12)


# ----------------------------------------------------------------------------- group 3: Prop. 1


@pytest.mark.parametrize("domain", DOMAINS)
def test_A_maps_match_dense(domain):
    for g, t in pairs(domain):
        A = dense_A(domain, g, t)
        m, ng = domain.residual_size(t), domain.size(g)
        np.testing.assert_allclose(as_matrix(residual_to_marginal, domain, g, t, m), A, atol=1e-12)
        np.testing.assert_allclose(as_matrix(residual_to_marginal_t, domain, g, t, ng), A.T,
                                   atol=1e-12)
        Ap = as_matrix(marginal_to_residual, domain, g, t, ng)
        np.testing.assert_allclose(Ap, np.linalg.pinv(A), atol=1e-10)  # Lemma 1: A⁺ is the pseudoinverse
        # the Kronecker form of A⁺_{γ,τ}
        ref = np.ones((1, 1))
        for k in g:
            ref = np.kron(ref, dense_D(domain.sizes[k]) if k in t else np.ones((1, domain.sizes[k])))
        np.testing.assert_allclose(Ap, ref, atol=1e-12)


@pytest.mark.parametrize("domain", DOMAINS)
def test_prop1_arbitrary_S(domain):
    rng = np.random.default_rng(2)
    cl = all_cliques(domain)
    for trial in range(6):
        S = [t for t in cl if rng.random() < 0.5] or [()]
        z = {t: rng.normal(size=domain.residual_size(t)) for t in S}
        RS = np.vstack([dense_residual_matrix(domain, t) for t in S])
        p_hat = np.linalg.pinv(RS) @ np.concatenate([z[t] for t in S])
        for g in cl:
            fast = sum((residual_to_marginal(domain, g, t, z[t]) for t in S if set(t) <= set(g)),
                       np.zeros(domain.size(g)))
            np.testing.assert_allclose(fast, dense_marginal_matrix(domain, g) @ p_hat, atol=1e-10)


# ----------------------------------------------------------------------------- group 4: Lemma 1 and Thm 2


@pytest.mark.parametrize("domain", DOMAINS)
def test_lemma1_and_theorem2(domain):
    rng = np.random.default_rng(3)
    p = rng.poisson(2.0, size=int(np.prod(domain.sizes))).astype(float)
    for g in all_cliques(domain):
        M = dense_marginal_matrix(domain, g)
        mu = M @ p
        ng = domain.size(g)
        H = []
        for t in subsets(g):
            Ap = as_matrix(marginal_to_residual, domain, g, t, ng)
            H.append(Ap)
            np.testing.assert_allclose(Ap @ M, dense_residual_matrix(domain, t), atol=1e-12)  # R_τ = A⁺ M_γ
            Dt = np.ones((1, 1))
            for k in t:
                Dt = np.kron(Dt, dense_D(domain.sizes[k]))
            factor = np.prod([domain.sizes[k] for k in g if k not in t])
            np.testing.assert_allclose(Ap @ Ap.T, factor * Dt @ Dt.T, atol=1e-12)  # Thm 2 covariance
            for u in subsets(g):
                if u != t:
                    Au = as_matrix(marginal_to_residual, domain, g, u, ng)
                    assert np.abs(Ap @ Au.T).max() < 1e-12  # independence of the decomposed residuals
        H = np.vstack(H)
        assert H.shape == (ng, ng) and np.linalg.matrix_rank(H) == ng
        # round trip μ_γ = Σ_{τ⊆γ} A_{γ,τ} A⁺_{γ,τ} μ_γ
        back = sum(residual_to_marginal(domain, g, t, marginal_to_residual(domain, g, t, mu)) for t in subsets(g))
        np.testing.assert_allclose(back, mu, atol=1e-9)


def test_batching_and_empty_clique():
    rng = np.random.default_rng(4)
    g, t = (0, 2), (2,)
    z = rng.normal(size=(7, 5, DOM3.residual_size(t)))
    out = residual_to_marginal(DOM3, g, t, z)
    assert out.shape == (7, 5, DOM3.size(g))
    np.testing.assert_allclose(out[3, 2], residual_to_marginal(DOM3, g, t, z[3, 2]))
    y = rng.normal(size=(4, DOM3.size(g)))
    np.testing.assert_allclose(marginal_to_residual(DOM3, g, t, y)[1], marginal_to_residual(DOM3, g, t, y[1]))
    np.testing.assert_allclose(residual_to_marginal_t(DOM3, g, t, y)[2], residual_to_marginal_t(DOM3, g, t, y[2]))
    np.testing.assert_allclose(residual_cov_solve(DOM3, g, rng.normal(size=(3, 2))).shape, (3, 2))
    # the empty clique: m_∅ = n_∅ = 1; A_{γ,∅} spreads the total uniformly
    assert residual_to_marginal(DOM3, (), (), [5.0]).tolist() == [5.0]
    np.testing.assert_allclose(residual_to_marginal(DOM3, (0, 1), (), [24.0]), np.full(12, 2.0))
    assert marginal_to_residual(DOM3, (0, 1), (), np.arange(12.0)).tolist() == [66.0]
    assert residual_cov_apply(DOM3, (), [3.0]).tolist() == [3.0]
    assert residual_cov_solve(DOM3, (), [3.0]).tolist() == [3.0]


def test_input_errors():
    with pytest.raises(InputError, match="not a subset"):
        residual_to_marginal(DOM3, (0,), (1,), np.zeros(3))
    with pytest.raises(InputError, match="not a subset"):
        marginal_to_residual(DOM3, (0, 1), (2,), np.zeros(12))
    with pytest.raises(InputError, match="expected 6 values"):
        residual_to_marginal(DOM3, (0, 1), (0, 1), np.zeros(5))
    with pytest.raises(InputError, match="expected 12 values"):
        residual_to_marginal_t(DOM3, (0, 1), (0,), np.zeros(11))
    with pytest.raises(InputError, match="increasing"):
        check_clique(DOM3, (1, 0))
    with pytest.raises(InputError, match="out of range"):
        residual_cov_apply(DOM3, (5,), np.zeros(2))
    with pytest.raises(InputError, match="scalar"):
        d_apply(np.float64(1.0))
    with pytest.raises(InputError, match="tiny test domains"):
        dense_marginal_matrix(Domain(tuple("abcdefghijklmnopq"), (2,) * 17), (0,))
    big = Domain(tuple(f"x{i}" for i in range(4)), (10_000,) * 4)
    with pytest.raises(InputError, match="limit"):
        residual_to_marginal(big, (0, 1), (), [1.0])


def test_no_big_allocations_on_huge_domain():
    """n = 10^30: the maps only touch n_γ-sized arrays."""
    dom = Domain(tuple(f"x{i}" for i in range(30)), (10,) * 30)
    for g in all_kway(dom, 2)[:20]:
        for t in downward_closure([g]):
            z = np.ones(dom.residual_size(t))
            y = residual_to_marginal(dom, g, t, z)
            assert y.shape == (100,)
            assert marginal_to_residual(dom, g, t, y).shape == z.shape
