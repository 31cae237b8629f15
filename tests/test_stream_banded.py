"""Banded Toeplitz factorisations (dpviz.stream.banded): decoder and losses against dense algebra, the exact
gradient (with the tail at its limit), the optimiser, sensitivity by brute force, O(b) streaming, release, audit."""

import numpy as np
import pytest
from scipy.optimize import approx_fprime

from dpviz.audit.targets import run
from dpviz.core.noise import Noise
from dpviz.errors import InputError
from dpviz.stream import banded as BD
from dpviz.stream.estimators import sqrt_coefficients
from dpviz.stream.hooks import audit_target
from dpviz.stream.mechanism import make_mechanism
from dpviz.stream.release import release
from dpviz.stream.strategy import strategy


def _toeplitz(c, n):
    c = np.concatenate([np.asarray(c, dtype=float), np.zeros(max(0, n - len(c)))])[:n]
    i, j = np.indices((n, n))
    return np.where(i >= j, c[np.clip(i - j, 0, n - 1)], 0.0)


@pytest.mark.parametrize("seed", range(8))
def test_decoder_and_losses_match_dense_algebra(seed):
    rng = np.random.default_rng(seed)
    n, band = int(rng.integers(1, 40)), int(rng.integers(1, 8))
    c = np.concatenate([[1.0], np.sort(rng.uniform(0, 0.7, band - 1))[::-1]])
    big_c = _toeplitz(c, n)
    big_b = np.tril(np.ones((n, n))) @ np.linalg.inv(big_c)
    np.testing.assert_allclose(BD.banded_decoder(c, n), big_b[:, 0], atol=1e-10)
    c2, b2, bm = BD.banded_losses(c, n)
    assert c2 == pytest.approx((big_c**2).sum(axis=0).max(), rel=1e-12)
    assert b2 == pytest.approx((big_b**2).sum(axis=1).max(), rel=1e-10)
    assert bm == pytest.approx((big_b**2).sum(), rel=1e-10)


@pytest.mark.parametrize("objective", ["max", "mean"])
@pytest.mark.parametrize("n", [50, 6000])  # 6000 > the exact head K = 4096: the tail at its limit 1/c(1)
def test_gradient_is_exact_and_the_tail_is_accurate(objective, n):
    free = sqrt_coefficients(6)[1:] * 0.9
    loss, grad = BD._loss_and_grad(free, n, objective)
    c2, b2, bm = BD.banded_losses(np.concatenate([[1.0], free]), n)
    assert loss == pytest.approx(np.log(c2 * (b2 if objective == "max" else bm)), abs=1e-10)
    fd = approx_fprime(free, lambda v: BD._loss_and_grad(v, n, objective)[0], 1e-7)
    np.testing.assert_allclose(grad, fd, rtol=1e-4, atol=1e-6)


def test_optimiser_beats_the_banded_square_root():
    for n, band in ((30, 64), (500, 16)):
        start = sqrt_coefficients(min(band, n))
        for objective in ("max", "mean"):
            f = BD.optimise_banded(n, band, objective)
            c2, b2, bm = BD.banded_losses(start, n)
            ref = np.sqrt(c2 * b2) if objective == "max" else c2 * bm / n
            got = f.max_loss if objective == "max" else f.mean_loss
            assert got <= ref * (1 + 1e-12) and min(f.band_coefficients) >= 0 and f.band == min(band, n)
    # full band, mean objective: strictly better than the square root on the mean (it optimises it)
    sq = sqrt_coefficients(30)
    assert BD.optimise_banded(30, 64, "mean").mean_loss < (sq**2).sum() * np.mean(np.cumsum(sq**2)) * 0.99
    with pytest.raises(InputError, match="band"):
        BD.optimise_banded(10, 0)


@pytest.mark.parametrize("n", [2, 9, 70])
def test_sensitivity_is_the_brute_force_maximum(n):
    s = strategy("banded", n, "gaussian")
    a = np.random.default_rng(n).integers(0, 9, n)
    diffs = []
    for t in range(n):
        for sign in (1, -1):
            a1 = a.copy()
            a1[t] += sign
            diffs.append(float(np.linalg.norm(s.answer(a1) - s.answer(a))))
    assert max(diffs) == pytest.approx(s.sensitivity(), rel=1e-12)
    assert s.factor.band == min(BD.DEFAULT_BAND, n)


def test_streaming_state_is_o_of_b_and_equals_batch():
    n = 200  # beyond the band: the ring buffer wraps
    mech = make_mechanism("banded", n, Noise.gaussian(0.4))
    a = np.random.default_rng(2).poisson(5, n)
    batch = mech.simulate(a, np.random.default_rng(4))
    st = mech.streamer(np.random.default_rng(4))
    out = np.array([st.step(x) for x in a])
    np.testing.assert_allclose(out[:, 0], batch.prefix_sums, atol=1e-9 * (1 + np.abs(batch.prefix_sums).max()))
    np.testing.assert_allclose(out[:, 1], batch.variance, rtol=1e-12)
    assert len(st.hist) == BD.DEFAULT_BAND - 1


def test_release_and_audit():
    noise = Noise.gaussian(0.5, discrete=True)
    rel = release(np.array([4, 1, 0, 2]), noise, mechanism="banded", horizon=8)
    s = strategy("banded", 8, "gaussian")
    assert rel.lattice is not None and rel.sensitivity == pytest.approx(s.sensitivity() + np.sqrt(8) * 2.0**-rel.lattice.bits)
    assert rel.metadata()["mechanism"] == "banded"
    result = run(audit_target(1.0, mechanism="banded"), trials=200, rng=np.random.default_rng(3))
    assert result.consistent and result.epsilon_lower == 0.0
