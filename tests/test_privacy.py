"""dpviz.privacy: the shared noise description, its Monte-Carlo variances and conversions."""

import numpy as np
import pytest

from dpviz.errors import InputError
from dpviz.privacy.accounting import approx_dp_to_zcdp, zcdp_to_approx_dp
from dpviz.privacy.mechanisms import Noise, gaussian_sigma_zcdp, laplace_scale, laplace_variance


@pytest.mark.parametrize(
    "noise, sensitivity, variance",
    [
        (Noise.laplace(0.5), 3.0, 2 * (3.0 / 0.5) ** 2),  # Lap(Δ₁/ε): 2b²
        (Noise.gaussian(0.25), 2.0, 2.0**2 / (2 * 0.25)),  # N(0, Δ₂²/(2ρ))
    ],
)
def test_noise_monte_carlo_variance(noise, sensitivity, variance):
    """200,000 draws: empirical variance within 2% of the analytic one, mean within 5 s.e."""
    assert noise.variance(sensitivity) == pytest.approx(variance)
    x = noise.standard(np.random.default_rng(1), 200_000) * noise.scale(sensitivity)
    assert x.var() == pytest.approx(variance, rel=0.02)
    assert abs(x.mean()) < 5 * np.sqrt(variance / x.size)


def test_scales_and_norms():
    assert laplace_scale(2.0, 0.5) == 4.0 and laplace_variance(4.0) == 32.0
    assert gaussian_sigma_zcdp(1.0, 0.5) == pytest.approx(1.0)
    v = np.array([[3.0, -4.0]])
    assert Noise.laplace(1.0).norm(v)[0] == 7.0 and Noise.gaussian(1.0).norm(v)[0] == 5.0


def test_gaussian_from_eps_delta_is_the_largest_rho_within_the_budget():
    n = Noise.gaussian_approx(1.0, 1e-6)
    assert zcdp_to_approx_dp(n.rho, 1e-6) == pytest.approx(1.0)
    assert n.rho == pytest.approx(approx_dp_to_zcdp(1.0, 1e-6))


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), float("inf"), None])
def test_bad_budgets_are_input_errors(bad):
    with pytest.raises(InputError):
        Noise.laplace(bad)
    with pytest.raises(InputError):
        Noise.gaussian(bad)


def test_draws_come_only_from_the_generator():
    a = Noise.laplace(1.0).standard(np.random.default_rng(3), 5)
    b = Noise.laplace(1.0).standard(np.random.default_rng(3), 5)
    assert np.array_equal(a, b)
