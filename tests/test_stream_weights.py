"""Optimal weights (5.10): Eq. (5.9) worked example, FDA vs the SciPy solver, feasibility, Thm 5.4."""

import os

import numpy as np
import pytest

from dpviz.errors import InputError
from dpviz.stream import fenwick as F
from dpviz.stream import weights as Wt

SLOW = os.environ.get("DPVIZ_SLOW") == "1"


def mse_eq_5_9(lam, n, epsilon=1.0):
    """(2/ε²)·Δ²_{ΣM}·trace(Bᵀ B Σ⁻²), dense."""
    m, b = F.strategy_matrix(n).toarray(), F.reconstruction_matrix(n).toarray()
    sig = np.diag(lam)
    delta = np.abs(sig @ m).sum(axis=0).max()
    return 2 / epsilon**2 * delta**2 * np.trace(b.T @ b @ np.linalg.inv(sig) ** 2)


def test_worked_example_n3_32_to_26():
    assert mse_eq_5_9(np.array([1.0, 1.0, 1.0]), 3) == pytest.approx(32.0)
    assert mse_eq_5_9(np.array([1.0, 1.0, 2.0]), 3) == pytest.approx(26.0)
    # the same through the objective of (5.10) once λ is scaled to be tight (Δ = 1)
    lam = Wt.rescale_feasible(np.array([1.0, 1.0, 2.0]))
    assert 2 * Wt.objective(lam, 3) == pytest.approx(26.0)
    # and FDA does better still
    assert 2 * Wt.fda_weights(3).objective < 26.0


def _check_against_generic(n, noise):
    fda = Wt.fda_weights(n, noise)
    gen = Wt.generic_weights(n, noise)
    assert gen.objective == pytest.approx(fda.objective, rel=1e-6)
    # FDA is optimal, so the (feasible) solver point cannot beat it beyond round-off
    assert fda.objective <= gen.objective * (1 + 1e-9)
    np.testing.assert_allclose(gen.lam, fda.lam, rtol=2e-2)


def test_fda_equals_generic_optimum_laplace_all_n_up_to_128():
    for n in range(1, 129):
        _check_against_generic(n, "laplace")


@pytest.mark.parametrize("n", list(range(1, 33)) + [47, 64, 100, 127, 128])
def test_fda_equals_generic_optimum_gaussian(n):
    _check_against_generic(n, "gaussian")


@pytest.mark.parametrize("n", [255, 256])
def test_fda_equals_generic_optimum_laplace_large(n):
    _check_against_generic(n, "laplace")


@pytest.mark.skipif(not SLOW, reason="SLSQP takes ~10 s (Gaussian 255/256) and ~9 min (N=1000); set DPVIZ_SLOW=1")
@pytest.mark.parametrize(("n", "noise"), [(255, "gaussian"), (256, "gaussian"), (1000, "laplace")])
def test_fda_equals_generic_optimum_slow(n, noise):
    _check_against_generic(n, noise)


@pytest.mark.parametrize("noise", ["laplace", "gaussian"])
def test_fda_weights_are_feasible_and_tight(noise):
    for n in list(range(1, 600)) + [1023, 1024, 1025, 4095, 5000, 2**20]:
        w = Wt.fda_weights(n, noise)
        cons = Wt.constraint_values(w.lam, noise)
        assert np.all(w.lam > 0)
        assert cons.max() == pytest.approx(1.0, abs=1e-12)
        assert np.all(cons <= 1 + 1e-12)
        assert w.objective == pytest.approx(Wt.fda_objective(n, noise), rel=1e-12)


def test_thm_5_4_recursion():
    for m in range(2, 12):
        big, small = Wt.fda_weights(2**m - 1).lam, Wt.fda_weights(2 ** (m - 1) - 1).lam
        h = 2 ** (m - 1) - 1
        alpha = 1.0 - big[h]
        np.testing.assert_allclose(big[:h], alpha * small, rtol=1e-12)
        np.testing.assert_allclose(big[h + 1 :], small, rtol=1e-12)
        # α minimises err/α² + 2^{m-1}/(1-α)² + err (closed form of Lemma 1)
        err = Wt.fda_objective(h)
        f = lambda a: err / a**2 + 2 ** (m - 1) / (1 - a) ** 2 + err  # noqa: E731
        grid = np.linspace(1e-3, 1 - 1e-3, 20001)
        assert f(alpha) <= f(grid).min() + 1e-9
        assert Wt.fda_objective(2**m - 1) == pytest.approx(f(alpha), rel=1e-12)


def test_fda_is_not_beaten_by_random_feasible_weights():
    rng = np.random.default_rng(5)
    for n in [5, 17, 40]:
        best = Wt.fda_weights(n).objective
        for _ in range(200):
            lam = Wt.rescale_feasible(rng.uniform(0.05, 1.0, n))
            assert Wt.objective(lam, n) >= best * (1 - 1e-12)


@pytest.mark.parametrize("noise", ["laplace", "gaussian"])
def test_single_node_weight_matches_batch(noise):
    for n in [1, 2, 3, 10, 37, 64, 100]:
        lam = Wt.fda_weights(n, noise).lam
        got = [Wt.fda_weight_at(i, n, noise) for i in range(1, n + 1)]
        np.testing.assert_allclose(got, lam, rtol=1e-14)


def test_bad_inputs():
    with pytest.raises(InputError, match="noise"):
        Wt.fda_weights(5, "cauchy")
    with pytest.raises(InputError, match="horizon"):
        Wt.fda_weights(0)
    with pytest.raises(InputError, match="generic solver"):
        Wt.generic_weights(5000)
