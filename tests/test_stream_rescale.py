"""Rescaling one draw across ε is a SIMULATION feature only; a release never rescales.

Simulation: one unit-scale draw per (mechanism, N, family, seed), multiplied by the base scale b for any
ε or ρ, equals a direct seeded simulation at that budget. Release: fresh discrete noise every call, so
two releases (at the same or another ε) are never one draw rescaled.
"""

import numpy as np
import pytest

from dpviz.core.noise import Noise
from dpviz.errors import InputError
from dpviz.stream import release as R
from dpviz.stream.mechanism import make_mechanism, simulated_release, unit_errors, with_noise
from dpviz.stream.release import simulate
from dpviz.stream.strategy import LATTICE_RELEASABLE, MECHANISM_NAMES, available, strategy

NOISES = [Noise.laplace(0.3), Noise.laplace(4.0), Noise.gaussian(0.02), Noise.gaussian_approx(1.0, 1e-6)]


@pytest.mark.parametrize("noise", NOISES, ids=lambda n: n.describe)
@pytest.mark.parametrize("n", [1, 7, 64, 1000])
def test_simulation_rescaled_draw_equals_direct_simulation(noise, n):
    a = np.random.default_rng(n).poisson(20, n).astype(float)
    for name in available(noise):
        mech = make_mechanism(name, n, noise)
        rel = simulated_release(mech, a, unit_errors(name, n, noise.family, 11))
        ref = mech.simulate(a, np.random.default_rng(11))
        np.testing.assert_allclose(rel.prefix_sums, ref.prefix_sums, rtol=1e-12, atol=1e-9 * (1 + a.sum()))
        np.testing.assert_allclose(rel.variance, ref.variance, rtol=1e-12)
        # a prefix of the series simulates the first steps only
        pre = simulated_release(mech, a[: max(1, n // 2)], unit_errors(name, n, noise.family, 11))
        np.testing.assert_allclose(pre.prefix_sums, rel.prefix_sums[: max(1, n // 2)])


def test_simulation_epsilon_move_rescales_the_same_draw():
    a = np.arange(100.0)
    one = simulate(a, Noise.laplace(1.0), "fenwick-fda", 5).releases["fenwick-fda"]
    half = simulate(a, Noise.laplace(0.5), "fenwick-fda", 5).releases["fenwick-fda"]
    np.testing.assert_allclose(half.prefix_sums - np.cumsum(a), 2 * (one.prefix_sums - np.cumsum(a)), rtol=1e-9)
    np.testing.assert_allclose(half.variance, 4 * one.variance, rtol=1e-12)


def test_unit_draw_is_cached_and_read_only():
    e = unit_errors("fenwick-fda", 100, "laplace", 3)
    assert e is unit_errors("fenwick-fda", 100, "laplace", 3) and not e.flags.writeable
    with pytest.raises(InputError, match="seed"):
        unit_errors("naive", 10, "laplace", -1)


def test_with_noise_reuses_structure_and_checks_family():
    mech = make_mechanism("fenwick-fda", 100, Noise.laplace(1.0))
    other = with_noise(mech, Noise.laplace(0.5))
    assert other.lam is mech.lam and other.strategy is mech.strategy and other.noise.epsilon == 0.5
    with pytest.raises(InputError, match="laplace"):
        with_noise(mech, Noise.gaussian(1.0))
    with pytest.raises(InputError, match="shape"):
        simulated_release(mech, np.ones(10), np.zeros(10))
    assert set(MECHANISM_NAMES) - set(available("laplace")) == set(LATTICE_RELEASABLE)  # the real factorisations


def test_simulate_refuses_discrete_noise_and_release_refuses_continuous():
    with pytest.raises(InputError, match="continuous"):
        simulate(np.ones(5), Noise.laplace(1.0, discrete=True), "naive", 1)
    with pytest.raises(InputError, match="discrete noise"):
        R.release(np.ones(5, dtype=int), Noise.laplace(1.0), mechanism="naive")


@pytest.mark.parametrize("name", ["naive", "fenwick", "fenwick-fda", "honaker"])
def test_release_never_rescales(name):
    """Two releases at ε and ε/2 are fresh discrete draws: the second's noise is not twice the first's,
    and two releases at the same ε differ (no cached draw, no seed)."""
    a = np.random.default_rng(1).poisson(50, 300).astype(np.int64)
    answer = strategy(name, a.size, "laplace").answer(a)
    e1 = R.release(a, Noise.laplace(1.0, discrete=True), mechanism=name).measurement.values - answer
    e1b = R.release(a, Noise.laplace(1.0, discrete=True), mechanism=name).measurement.values - answer
    e2 = R.release(a, Noise.laplace(0.5, discrete=True), mechanism=name).measurement.values - answer
    assert e1.dtype == e2.dtype == np.int64
    assert not np.array_equal(e1, e1b)
    assert not np.array_equal(e2, 2 * e1)
    assert abs(np.corrcoef(e1, e2)[0, 1]) < 0.3  # independent draws, not one draw rescaled
