"""dpviz.core: Budget, Noise, modes and measure() — the one privacy vocabulary."""

import numpy as np
import pytest

from dpviz.core.accounting import bun_steinke_rho, gaussian_rho, zcdp_epsilon, zcdp_rho
from dpviz.core.budget import Budget, compose
from dpviz.core.modes import check_seed, output_name
from dpviz.core.noise import Noise
from dpviz.core.protocols import LinearMeasurement, measure, require_integral
from dpviz.core.samplers import discrete_gaussian_variance, discrete_laplace_variance
from dpviz.errors import InputError


# ---- Budget ----------------------------------------------------------------------------------------
def test_budget_kinds_and_rho():
    assert Budget.pure(2.0).kind == "pure" and Budget.pure(2.0).as_rho(gaussian_only=True) == 2.0
    b = Budget.approx(1.0, 1e-6)
    assert b.kind == "approx"
    assert b.as_rho(gaussian_only=True) == pytest.approx(gaussian_rho(1.0, 1e-6), rel=1e-12)
    assert b.as_rho(gaussian_only=False) == pytest.approx(zcdp_rho(1.0, 1e-6), rel=1e-12)
    assert b.as_rho(gaussian_only=False) < b.as_rho(gaussian_only=True)  # CKS is looser than the exact profile
    assert Budget.zcdp(0.3).as_rho(gaussian_only=False) == 0.3
    assert Budget.approx(1.0, 1e-6).scaled(0.25) == Budget.approx(0.25, 0.25e-6)
    assert Budget.zcdp(0.4).scaled(0.5).rho == pytest.approx(0.2)


@pytest.mark.parametrize("kwargs", [
    {}, {"epsilon": 0}, {"epsilon": -1}, {"epsilon": float("nan")}, {"epsilon": float("inf")},
    {"epsilon": True}, {"epsilon": 1, "delta": 0}, {"epsilon": 1, "delta": 1}, {"rho": 0},
    {"rho": 1, "epsilon": 1}, {"rho": 1, "delta": 1e-6}, {"delta": 1e-6},
])
def test_bad_budgets_are_input_errors(kwargs):
    with pytest.raises(InputError):
        Budget(**kwargs)


def test_compose_reports_both_ways():
    out = compose([Budget.pure(0.5), Budget.pure(0.5), Budget.zcdp(0.1)], delta=1e-6)
    assert out["rho"] == pytest.approx(0.5**2 / 2 * 2 + 0.1)
    assert out["basic_epsilon"] == pytest.approx(1.0 + zcdp_epsilon(0.1, 1e-6))
    assert out["zcdp_epsilon"] == pytest.approx(zcdp_epsilon(out["rho"], 1e-6))
    # many small pure releases: zCDP composition beats basic composition
    many = compose([Budget.pure(0.01)] * 1000, delta=1e-6)
    assert many["basic_epsilon"] == pytest.approx(10.0) and many["zcdp_epsilon"] < 3.0


# ---- Noise -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("make", [
    lambda: Noise("laplace", Budget.zcdp(0.5)),            # Laplace with rho
    lambda: Noise("laplace", Budget.approx(1.0, 1e-6)),    # Laplace with delta
    lambda: Noise("gaussian", Budget.pure(1.0)),           # Gaussian with a pure budget
    lambda: Noise("cauchy", Budget.pure(1.0)),
    lambda: Noise.from_params("laplace", epsilon=1.0, rho=0.5),
    lambda: Noise.from_params("laplace"),
    lambda: Noise.from_params("gaussian", epsilon=1.0),
    lambda: Noise.from_params("gaussian", rho=0.5, epsilon=1.0),
    lambda: Noise.laplace(-1.0),
])
def test_impossible_noise_is_an_input_error(make):
    with pytest.raises(InputError):
        make()


def test_gaussian_calibration_uses_exact_profile_for_continuous_and_cks_for_discrete():
    cont = Noise.gaussian_approx(1.0, 1e-6)
    disc = Noise.gaussian_approx(1.0, 1e-6, discrete=True)
    assert cont.rho == pytest.approx(gaussian_rho(1.0, 1e-6))
    assert disc.rho == pytest.approx(zcdp_rho(1.0, 1e-6))
    old_variance = 1.0 / (2 * bun_steinke_rho(1.0, 1e-6))
    factor = old_variance / cont.variance(1.0)
    assert 1.26 <= factor <= 2.1, factor  # the exact profile's gain at (1, 1e-6)
    assert disc.variance(1.0) < old_variance  # even the discrete release beats the old calibration


@pytest.mark.parametrize("noise, sensitivity, variance", [
    (Noise.laplace(0.5), 3.0, 2 * 6.0**2),
    (Noise.gaussian(0.25), 2.0, 2.0**2 / 0.5),
    (Noise.laplace(0.5, discrete=True), 3.0, discrete_laplace_variance(6.0)),
    (Noise.gaussian(0.25, discrete=True), 2.0, discrete_gaussian_variance(8.0**0.5)),
    (Noise.laplace(4.0, discrete=True), 1.0, discrete_laplace_variance(0.25)),  # tiny scale: far from 2b²
])
def test_noise_monte_carlo_variance(noise, sensitivity, variance):
    """200,000 draws at the calibrated scale: empirical variance within 2% of the analytic one."""
    assert noise.variance(sensitivity) == pytest.approx(variance, rel=1e-12)
    x = noise.draw(noise.scale(sensitivity), 200_000, np.random.default_rng(1))
    assert x.dtype == (np.int64 if noise.discrete else np.float64)
    assert x.var() == pytest.approx(variance, rel=0.02)
    assert abs(x.mean()) < 5 * np.sqrt(variance / x.size)


def test_discrete_variance_differs_from_continuous_where_it_should():
    lap = Noise.laplace(4.0, discrete=True)  # scale 1/4: mostly zeros, Var = 2r/(1-r)², r = e^-4
    r = np.exp(-4.0)
    assert lap.variance(1.0) == pytest.approx(2 * r / (1 - r) ** 2) and lap.variance(1.0) < 0.35 * 0.125
    gauss = Noise.gaussian(8.0, discrete=True)  # σ = 1/4: P(0) ≈ 1 - 2e^-8
    assert gauss.variance(1.0) == pytest.approx(2 * np.exp(-8.0), rel=1e-3)  # vs σ² = 0.0625


def test_continuous_noise_needs_a_generator_and_discrete_cannot_be_rescaled():
    with pytest.raises(InputError, match="simulation"):
        Noise.laplace(1.0).draw(1.0, 3, None)
    with pytest.raises(InputError, match="rescaled"):
        Noise.laplace(1.0, discrete=True).standard(np.random.default_rng(0), 3)
    fresh = [Noise.laplace(0.1, discrete=True).draw(10.0, 50, None) for _ in range(2)]
    assert not np.array_equal(*fresh)  # OS CSPRNG: two releases differ


def test_describe_names_discreteness_and_budget():
    assert Noise.gaussian_approx(1.0, 1e-6, discrete=True).describe.startswith("discrete Gaussian, ρ = ")
    assert "(ε, δ) = (1, 1e-06)" in Noise.gaussian_approx(1.0, 1e-6).describe
    assert Noise.laplace(0.5).describe == "Laplace, ε = 0.5"
    meta = Noise.gaussian_approx(1.0, 1e-6, discrete=True).as_dict()
    assert meta["discrete"] is True and meta["calibrated_rho"] == pytest.approx(zcdp_rho(1.0, 1e-6))


# ---- modes -----------------------------------------------------------------------------------------
def test_modes():
    with pytest.raises(InputError, match="--seed"):
        check_seed(-1)
    with pytest.raises(InputError):
        check_seed(1.5)
    assert output_name("tree", "release", "county") == "county.tree-release.csv"
    assert "simulation" in output_name("stream", "simulate")


# ---- measure() -------------------------------------------------------------------------------------
class _Counts:
    """A toy strategy: release every count with unit sensitivity."""

    name = "identity"

    def sensitivity(self, family):
        return 1.0

    def scales(self, noise):
        return np.full(4, noise.scale(1.0))

    def answer(self, data):
        return np.asarray(data)


def test_measure_discrete_release_is_integer_and_fresh():
    noise = Noise.laplace(0.5, discrete=True)
    data = np.array([3, 0, 7, 12])
    a, b = measure(_Counts(), data, noise, None), measure(_Counts(), data, noise, None)
    assert isinstance(a, LinearMeasurement) and a.values.dtype == np.int64
    assert not np.array_equal(a.values, b.values)
    np.testing.assert_allclose(a.variance, discrete_laplace_variance(2.0))
    with pytest.raises(InputError, match="integer"):
        measure(_Counts(), np.array([1.5, 0, 0, 0]), noise, None)


def test_measure_simulation_is_reproducible():
    noise = Noise.laplace(0.5)
    data = np.array([3.0, 0.5, 7.0, 12.0])
    a = measure(_Counts(), data, noise, np.random.default_rng(5))
    b = measure(_Counts(), data, noise, np.random.default_rng(5))
    np.testing.assert_array_equal(a.values, b.values)
    assert a.values.dtype == np.float64


def test_require_integral():
    np.testing.assert_array_equal(require_integral(np.array([1.0, 2.0]), "x"), [1, 2])
    with pytest.raises(InputError, match="entry 2"):
        require_integral(np.array([1.0, 2.5]), "x")
    with pytest.raises(InputError, match="entry 2: the count inf"):
        require_integral(np.array([1.0, np.inf]), "x")  # inf is not an integer
