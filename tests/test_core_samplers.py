"""Tests for dpviz.core.samplers: exact-as-documented discrete Laplace / discrete Gaussian noise.

Distribution checks use 10^6 draws against the exact pmf.  Cases with a seeded Generator are
deterministic (threshold p > 1e-4); cases with ``rng=None`` (OS CSPRNG) or OpenDP draws are random
by design and use p > 1e-7, so a correct sampler fails one of them with probability 1e-7.
"""

from __future__ import annotations

import math
import os
from decimal import Decimal, localcontext

import numpy as np
import pytest
from scipy import stats

from dpviz.core import samplers
from dpviz.core.samplers import (
    MAX_SCALE,
    csprng_uint64,
    discrete_gaussian,
    discrete_gaussian_variance,
    discrete_laplace,
    discrete_laplace_variance,
)
from dpviz.errors import InputError

SCALES = [0.3, 1.0, 2.5, 7.5, 40.0]
N = 10**6
P_SEEDED = 1e-4
P_RANDOM = 1e-7


# ----------------------------------------------------------------------------- exact references


def laplace_pmf(k: np.ndarray, t: float) -> np.ndarray:
    r = math.exp(-1.0 / t)
    return (1 - r) / (1 + r) * np.exp(-np.abs(k) / t)


def gaussian_pmf(k: np.ndarray, sigma: float) -> np.ndarray:
    m = int(40 * sigma) + 40
    grid = np.arange(-m, m + 1)
    norm = np.exp(-(grid**2) / (2 * sigma**2)).sum()
    return np.exp(-(np.asarray(k, dtype=float) ** 2) / (2 * sigma**2)) / norm


def support(t: float) -> np.ndarray:
    """Integers carrying all but ~1e-30 of the mass for either distribution with scale t."""
    m = int(70 * t) + 60
    return np.arange(-m, m + 1)


PMF = {"laplace": laplace_pmf, "gaussian": gaussian_pmf}
SAMPLER = {"laplace": discrete_laplace, "gaussian": discrete_gaussian}
VARIANCE = {"laplace": discrete_laplace_variance, "gaussian": discrete_gaussian_variance}


def binned(x: np.ndarray, pmf, t: float, expected_min: float) -> tuple[np.ndarray, np.ndarray]:
    """Observed counts and bin probabilities: single integers in the bulk, both tails merged so that
    every bin has ``len(x) * p >= expected_min`` (symmetric pmfs)."""
    ks = support(t)
    p = pmf(ks, t)
    keep = np.flatnonzero(p * len(x) >= expected_min)
    c = ks[keep].max()  # bins: (-inf, -c], -c+1 .. c-1, [c, inf)
    inner = np.arange(-c + 1, c)
    probs = np.concatenate([[p[ks <= -c].sum()], pmf(inner, t), [p[ks >= c].sum()]])
    clipped = np.clip(x, -c, c)
    counts = np.bincount(clipped + c, minlength=2 * c + 1).astype(float)
    return counts, probs


def chi2_p(x: np.ndarray, pmf, t: float) -> float:
    counts, probs = binned(x, pmf, t, expected_min=20)
    assert len(counts) >= 3
    return stats.chisquare(counts, probs / probs.sum() * counts.sum()).pvalue


def moments(pmf, t: float) -> tuple[float, float]:
    ks = support(t).astype(float)
    p = pmf(ks, t)
    return float((ks**2 * p).sum()), float((ks**4 * p).sum())


# ----------------------------------------------------------------------------- goodness of fit


@pytest.mark.parametrize("kind", ["laplace", "gaussian"])
@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("seeded", [True, False], ids=["generator", "csprng"])
def test_chi_square_against_exact_pmf(kind: str, scale: float, seeded: bool) -> None:
    rng = np.random.default_rng(1000 + int(10 * scale)) if seeded else None
    x = SAMPLER[kind](scale, N, rng)
    assert x.dtype == np.int64 and x.shape == (N,)
    p = chi2_p(x, PMF[kind], scale)
    assert p > (P_SEEDED if seeded else P_RANDOM), (kind, scale, p)


@pytest.mark.parametrize("kind", ["laplace", "gaussian"])
def test_chi_square_detects_a_wrong_scale(kind: str) -> None:
    """The goodness-of-fit check has power: 10^6 draws at scale 2.5 are rejected against 2.55."""
    x = SAMPLER[kind](2.5, N, np.random.default_rng(7))
    assert chi2_p(x, PMF[kind], 2.55) < 1e-6


# ----------------------------------------------------------------------------- moments


@pytest.mark.parametrize("kind", ["laplace", "gaussian"])
@pytest.mark.parametrize("scale", SCALES)
def test_monte_carlo_variance_and_mean(kind: str, scale: float) -> None:
    x = SAMPLER[kind](scale, N, np.random.default_rng(2000 + int(10 * scale))).astype(float)
    var, m4 = moments(PMF[kind], scale)
    assert VARIANCE[kind](scale) == pytest.approx(var, rel=1e-12)
    se_var = math.sqrt((m4 - var**2) / N)
    assert abs(np.mean(x**2) - var) < 5 * se_var
    assert abs(x.mean()) < 5 * math.sqrt(var / N)


BRUTE_SCALES = [0.02, 0.1, 0.3, 0.7, 0.99, 1.0, 1.01, 1.5, 2.0, 2.5, 7.5, 40.0, 333.3]


@pytest.mark.parametrize("kind", ["laplace", "gaussian"])
def test_variance_functions_match_brute_force_sums(kind: str) -> None:
    brute = np.array([moments(PMF[kind], s)[0] for s in BRUTE_SCALES])
    for s, b in zip(BRUTE_SCALES, brute):
        got = VARIANCE[kind](s)
        assert isinstance(got, float)
        assert got == pytest.approx(b, rel=1e-12, abs=1e-300), s
    arr = VARIANCE[kind](np.array(BRUTE_SCALES[:12]).reshape(3, 4))  # vectorised, shape kept
    assert isinstance(arr, np.ndarray) and arr.shape == (3, 4)
    np.testing.assert_allclose(arr.ravel(), brute[:12], rtol=1e-12, atol=1e-300)


def test_variance_closed_forms() -> None:
    t = np.array([0.5, 3.0, 1e3, 1e6, 1e9])
    r = np.exp(-1 / t)
    np.testing.assert_allclose(discrete_laplace_variance(t), 2 * r / (1 - r) ** 2, rtol=1e-6)  # cancellation in 1-r
    assert discrete_laplace_variance(1e6) == pytest.approx(2e12 - 1 / 6, rel=1e-15)  # 2t^2 - 1/6 + O(1/t^2)
    sig = np.array([2.0, 3.7, 50.0, 1e6])
    assert np.array_equal(discrete_gaussian_variance(sig), sig**2)  # sigma^2 to machine precision
    assert discrete_gaussian_variance(1.0) < 1.0  # ... but not for small sigma
    assert discrete_gaussian_variance(0.1) == pytest.approx(2 * math.exp(-50), rel=1e-12)
    assert discrete_laplace_variance(1e-3) == 0.0 and discrete_gaussian_variance(1e-3) == 0.0


@pytest.mark.parametrize("kind", ["laplace", "gaussian"])
@pytest.mark.parametrize("scale", [1.0, 7.5])
def test_symmetric_tails(kind: str, scale: float) -> None:
    x = SAMPLER[kind](scale, N, np.random.default_rng(3000 + int(scale)))
    for k in (1, 2, int(scale) + 1, int(2 * scale) + 1):
        up, down = int((x >= k).sum()), int((x <= -k).sum())
        assert up + down > 100
        assert stats.binomtest(up, up + down, 0.5).pvalue > P_SEEDED, (k, up, down)


# ----------------------------------------------------------------------------- shapes and per-element scales


@pytest.mark.parametrize("kind", ["laplace", "gaussian"])
def test_dtype_and_shapes(kind: str) -> None:
    f = SAMPLER[kind]
    rng = np.random.default_rng(4)
    assert f(2.0, 7, rng).shape == (7,)
    assert f(2.0, np.int64(7), rng).shape == (7,)
    assert f(2.0, (2, 3, 4), rng).shape == (2, 3, 4) and f(2.0, [2, 3], rng).shape == (2, 3)
    assert f(2.0, (), rng).shape == ()
    assert f(2.0, 0, rng).shape == (0,) and f(2.0, (3, 0), rng).shape == (3, 0)
    assert f(np.array([1.0, 2.0, 3.0]), (4, 3), rng).shape == (4, 3)
    assert f(np.array([[1.0], [50.0]]), (2, 5), rng).shape == (2, 5)
    for out in (f(2.0, (2, 3), rng), f(2.0, (2, 3)), f(np.full((2, 3), 2.0), (2, 3))):
        assert out.dtype == np.int64


@pytest.mark.parametrize("kind", ["laplace", "gaussian"])
def test_per_element_scales_give_per_element_distributions(kind: str) -> None:
    n = N
    scale = np.where(np.arange(n) % 2 == 0, 20.0, 0.5)  # interleaved: catches any mix-up of elements
    x = SAMPLER[kind](scale, n, np.random.default_rng(5)).astype(float)
    for s, part in ((20.0, x[0::2]), (0.5, x[1::2])):
        var, m4 = moments(PMF[kind], s)
        assert abs(np.mean(part**2) - var) < 5 * math.sqrt((m4 - var**2) / len(part)), (s, np.mean(part**2), var)
        assert chi2_p(part.astype(np.int64), PMF[kind], s) > P_SEEDED
    # a (2, n/2) size with a (2, 1) scale column broadcasts along rows
    y = SAMPLER[kind](np.array([[20.0], [0.5]]), (2, n // 2), np.random.default_rng(6))
    assert chi2_p(y[0], PMF[kind], 20.0) > P_SEEDED and chi2_p(y[1], PMF[kind], 0.5) > P_SEEDED


@pytest.mark.parametrize("kind", ["laplace", "gaussian"])
def test_an_array_of_equal_scales_draws_as_its_one_value(kind: str) -> None:
    """An all-equal scale array (a tree's per-node scales under the uniform split) is sampled as one scale:
    the same samples, word for word, as the per-element engine on that array, and a value that differs
    anywhere keeps the per-element path."""
    make = samplers._gaussian_params if kind == "gaussian" else samplers._laplace_params
    n = 3000
    for s in (0.3, 3.0, 40.0, 1e5):
        got = SAMPLER[kind](np.full(n, s), n, np.random.default_rng(7))
        draw = samplers._word_source(np.random.default_rng(7))
        ref = samplers._sample_flat(np.full(n, s), make, draw, n)
        assert np.array_equal(got, ref), s
        assert np.array_equal(got, SAMPLER[kind](s, n, np.random.default_rng(7)))
    assert samplers._per_element(np.full(5, 2.0), "scale", (5,)).ndim == 0
    assert samplers._per_element(np.array([[2.0], [2.0]]), "scale", (2, 3)).ndim == 0
    assert samplers._per_element(np.array([2.0, 2.0, 3.0]), "scale", (3,)).shape == (3,)


def laplace_cdf(k: np.ndarray, t: np.ndarray) -> np.ndarray:
    """P(X <= k) of the discrete Laplace, elementwise."""
    k = np.asarray(k, dtype=float)
    r = np.exp(-1.0 / t)
    upper = 1 - np.exp(-np.maximum(k + 1, 0) / t) / (1 + r)  # k >= 0
    lower = np.exp(np.minimum(k, 0) / t) / (1 + r)  # k < 0
    return np.where(k >= 0, upper, lower)


def test_laplace_all_distinct_scales_randomised_pit() -> None:
    """10^6 coordinates, every one with its own scale: the randomised probability integral
    transform F(X-1) + V·P(X) with each coordinate's own exact cdf must be uniform."""
    rng = np.random.default_rng(8)
    t = rng.uniform(0.2, 300.0, size=N)
    x = discrete_laplace(t, N, rng)
    lo, hi = laplace_cdf(x - 1, t), laplace_cdf(x, t)
    u = lo + rng.random(N) * (hi - lo)
    assert stats.kstest(u, "uniform").pvalue > P_SEEDED
    # the same transform with the scales reversed (a wrong per-element mapping) is far from uniform
    lo, hi = laplace_cdf(x - 1, t[::-1]), laplace_cdf(x, t[::-1])
    assert stats.kstest(lo + rng.random(N) * (hi - lo), "uniform").pvalue < 1e-6


def test_gaussian_all_distinct_scales_normalised_second_moment() -> None:
    rng = np.random.default_rng(9)
    s = rng.uniform(0.2, 300.0, size=N)
    x = discrete_gaussian(s, N, rng).astype(float)
    z = x**2 / discrete_gaussian_variance(s)  # mean 1
    big = s >= 2  # there E X^4 = 3 sigma^4 to < 1e-30 (Poisson summation), so Var(z) = 2
    assert abs(z[big].mean() - 1) < 5 * math.sqrt(2 / big.sum())
    shuffled = x**2 / discrete_gaussian_variance(s[::-1])  # a wrong per-element mapping is detected
    assert shuffled[big].mean() > 1.5


# ----------------------------------------------------------------------------- randomness sources


def test_csprng_uint64_is_one_bulk_urandom_call(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    real = os.urandom

    def counting(n: int) -> bytes:
        calls.append(n)
        return real(n)

    monkeypatch.setattr(os, "urandom", counting)
    w = csprng_uint64((100, 1000))
    assert calls == [8 * 100 * 1000]
    assert w.dtype == np.uint64 and w.shape == (100, 1000)
    bits = ((w.ravel()[:, None] >> np.arange(64, dtype=np.uint64)) & np.uint64(1)).mean(axis=0)
    assert np.all(np.abs(bits - 0.5) < 0.01)  # each bit position ~ fair (5 sd = 0.0079)


def fixed_urandom(seed: int):
    """An os.urandom replacement returning a deterministic byte stream."""
    rng = np.random.default_rng(seed)

    def fake(n: int) -> bytes:
        return rng.bytes(n)

    return fake


@pytest.mark.parametrize("kind", ["laplace", "gaussian"])
def test_rng_none_takes_every_bit_from_os_urandom(kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    f = SAMPLER[kind]
    scale = np.geomspace(0.5, 500.0, 20_000)
    state = np.random.get_state()

    def forbidden(*args, **kwargs):
        raise AssertionError("must not create an unseeded numpy Generator")

    streams = [fixed_urandom(11), fixed_urandom(11), fixed_urandom(12)]
    outputs = []
    with monkeypatch.context() as m:
        m.setattr(np.random, "default_rng", forbidden)
        for stream in streams:
            m.setattr(os, "urandom", stream)
            outputs.append(f(scale, scale.shape))
    first, again, other = outputs
    assert np.array_equal(first, again)  # the output is a function of the os.urandom bytes alone
    assert not np.array_equal(first, other)
    after = np.random.get_state()
    assert state[0] == after[0] and np.array_equal(state[1], after[1]) and state[2:] == after[2:]
    # the real CSPRNG: two unseeded calls differ
    assert not np.array_equal(f(100.0, 1000), f(100.0, 1000))


@pytest.mark.parametrize("kind", ["laplace", "gaussian"])
def test_seeded_generator_reproduces_and_is_the_only_source(kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    f = SAMPLER[kind]

    def forbidden(n: int) -> bytes:
        raise AssertionError("a Generator was given: os.urandom must not be used")

    monkeypatch.setattr(os, "urandom", forbidden)
    a = f(np.array([0.7, 3.0, 90.0]), (1000, 3), np.random.default_rng(123))
    b = f(np.array([0.7, 3.0, 90.0]), (1000, 3), np.random.default_rng(123))
    c = f(np.array([0.7, 3.0, 90.0]), (1000, 3), np.random.default_rng(124))
    assert np.array_equal(a, b) and not np.array_equal(a, c)


# ----------------------------------------------------------------------------- exact decisions


def block_size(t: float) -> int:
    """K = 2^max(0, floor(log2 t) - 3), as documented."""
    return 2 ** max(0, math.floor(math.log2(t)) - 3)


def words(*values: int):
    """An os.urandom replacement serving the given 64-bit words (little-endian), then failing."""
    buf = bytearray(np.array(values, dtype=np.uint64).tobytes())

    def fake(n: int) -> bytes:
        assert n <= len(buf), "sampler asked for more words than the test planned"
        out = bytes(buf[:n])
        del buf[:n]
        return out

    return fake


def test_laplace_inversion_boundary_is_exact(monkeypatch: pytest.MonkeyPatch) -> None:
    """Word A's low 63 bits v at the threshold 2^63 (1-p0) r^{qK}: v + 1 <= threshold gives
    |X| = 1 + q (Q = q); one more gives Q = q - 1 (X = 0 for q = 0).  Scales below 16 use K = 1
    and one word per sample, so the sample is a function of this single word."""
    checked = 0
    for t in (0.05, 0.37, 1.0, 2.5, 13.0):
        assert block_size(t) == 1
        for q in range(4):
            with localcontext() as ctx:
                ctx.prec = 60
                r = (-1 / Decimal(t)).exp()
                threshold = Decimal(2) ** 63 * 2 * r / (1 + r) * r**q
            edge = int(threshold)  # v + 1 <= threshold  <=>  v <= edge - 1
            if edge < 1:
                continue
            for v, expected in ((edge - 1, 1 + q), (edge, q)):
                for sign_bit, sign in ((0, 1), (1, -1)):
                    monkeypatch.setattr(os, "urandom", words(v | (sign_bit << 63)))
                    assert int(discrete_laplace(t, 1)[0]) == sign * expected, (t, q, v, edge)
                    checked += 1
    assert checked >= 60


def test_laplace_acceptance_boundary_is_exact(monkeypatch: pytest.MonkeyPatch) -> None:
    """t = 40: K = 4, and R0 = 3 is accepted iff W < 2^64 e^{-3/40}, where W is the top 27 bits of
    word B followed by 37 fresh bits (a third word, drawn because the 27 bits do not decide).
    A rejected proposal is followed by one with R0 = 0 (always accepted)."""
    t, k, r0 = 40.0, 4, 3
    assert block_size(t) == k
    v = 1 << 62  # U = (v + 1) / 2^63 ~ 1/2
    with localcontext() as ctx:
        ctx.prec = 60
        r = (-1 / Decimal(t)).exp()
        w_star = int(Decimal(2) ** 64 * (-Decimal(r0) / Decimal(t)).exp()) + 1  # smallest rejected W
        tail = Decimal(2) ** 63 * 2 * r / (1 + r)  # 2^63 (1 - p0)
        q = int((Decimal(t) / k) * (tail / (v + 1)).ln())  # Q: far from a boundary for this v
    assert w_star >> 37 == (w_star - 1) >> 37  # both W share the coarse bits: refinement needed
    for w, expected in ((w_star - 1, 1 + k * q + r0), (w_star, 1 + k * q)):
        b = ((w >> 37) << 37) | r0
        refine = (w & ((1 << 37) - 1)) << 27
        monkeypatch.setattr(os, "urandom", words(v, b, refine, v, 0))
        assert int(discrete_laplace(t, 1)[0]) == expected


def force_exact_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(samplers, "_Q_GUARD", 0.5)
    monkeypatch.setattr(samplers, "_ACC_GUARD", 1e300)


@pytest.mark.parametrize("kind", ["laplace", "gaussian"])
@pytest.mark.parametrize("acc_bits", [27, 3])
def test_exact_path_reproduces_the_fast_path(kind: str, acc_bits: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Deciding every comparison in decimal arithmetic gives the identical output (same words, same
    decisions).  With 3 coarse acceptance bits the refinement word is needed often."""
    monkeypatch.setattr(samplers, "_ACC_BITS", acc_bits)
    scale = np.concatenate([np.geomspace(0.05, 1e9, 300), [0.3, 2.5, 40.0, 2.0**40]])
    fast = SAMPLER[kind](scale, scale.shape, np.random.default_rng(21))
    force_exact_path(monkeypatch)
    exact = SAMPLER[kind](scale, scale.shape, np.random.default_rng(21))
    assert np.array_equal(fast, exact)


@pytest.mark.parametrize("kind,scale", [("laplace", 40.0), ("gaussian", 1.5)])
def test_refinement_path_distribution(kind: str, scale: float, monkeypatch: pytest.MonkeyPatch) -> None:
    """With 3 coarse bits ~1/8 of acceptance tests draw the refinement word; still the exact law."""
    monkeypatch.setattr(samplers, "_ACC_BITS", 3)
    x = SAMPLER[kind](scale, 30_000, np.random.default_rng(22))
    assert chi2_p(x, PMF[kind], scale) > P_SEEDED


def test_undecided_cases_are_rare(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    real = samplers._propose_exact

    def counting(*args):
        calls.append(args)
        return real(*args)

    monkeypatch.setattr(samplers, "_propose_exact", counting)
    discrete_gaussian(np.geomspace(0.3, 1e6, N), N, np.random.default_rng(23))
    discrete_laplace(np.geomspace(0.3, 1e6, N), N, np.random.default_rng(24))
    assert len(calls) < 20  # expected about 0.2 per 10^6 samples


# ----------------------------------------------------------------------------- OpenDP agreement


@pytest.mark.parametrize("kind,scale", [("laplace", 1.0), ("gaussian", 4.0)])  # other scales: the exact-PMF tests
def test_agrees_with_opendp(kind: str, scale: float) -> None:
    import opendp.prelude as dp  # a dev requirement: never skipped
    dp.enable_features("contrib")
    make = dp.m.make_laplace if kind == "laplace" else dp.m.make_gaussian
    meas = make(dp.atom_domain(T=int), dp.absolute_distance(T=int), scale=scale)
    theirs = np.array([meas(0) for _ in range(8_000)], dtype=np.int64)  # a Python call per draw: kept small
    ours = SAMPLER[kind](scale, N, np.random.default_rng(31))
    _, probs = binned(theirs, PMF[kind], scale, expected_min=10)
    c = (len(probs) - 1) // 2
    table = np.stack([np.bincount(np.clip(v, -c, c) + c, minlength=2 * c + 1) for v in (theirs, ours)])
    assert stats.chi2_contingency(table).pvalue > P_RANDOM


# ----------------------------------------------------------------------------- bad arguments, extreme scales


BAD_SCALES = [0.0, -1.0, math.nan, math.inf, -math.inf, 2 * MAX_SCALE, "abc", [1.0, 0.0], [[1.0, math.nan]]]


@pytest.mark.parametrize("kind", ["laplace", "gaussian"])
@pytest.mark.parametrize("bad", BAD_SCALES)
def test_bad_scale_raises_input_error(kind: str, bad) -> None:
    name = "scale" if kind == "laplace" else "sigma"
    with pytest.raises(InputError, match=name):
        SAMPLER[kind](bad, 2)
    if not (isinstance(bad, float) and bad == 2 * MAX_SCALE):
        with pytest.raises(InputError, match=name):
            VARIANCE[kind](bad)


@pytest.mark.parametrize("kind", ["laplace", "gaussian"])
@pytest.mark.parametrize("bad", [-1, (3, -2), 2.5, None, "3", True, (2, 1.0)])
def test_bad_size_raises_input_error(kind: str, bad) -> None:
    with pytest.raises(InputError, match="size"):
        SAMPLER[kind](1.0, bad)


def test_bad_broadcast_and_rng_raise_input_error() -> None:
    with pytest.raises(InputError, match=r"scale of shape \(3,\) cannot be broadcast to size \(4,\)"):
        discrete_laplace(np.ones(3), 4)
    with pytest.raises(InputError, match="sigma"):
        discrete_gaussian(np.ones((2, 2)), (2,))
    with pytest.raises(InputError, match="rng"):
        discrete_laplace(1.0, 3, rng=42)
    with pytest.raises(InputError, match="at index"):
        discrete_laplace(np.array([1.0, 2.0, -3.0]), 3)
    assert issubclass(InputError, ValueError)


@pytest.mark.parametrize("kind", ["laplace", "gaussian"])
@pytest.mark.parametrize("scale", [1e9, MAX_SCALE])
def test_huge_scales_do_not_overflow(kind: str, scale: float) -> None:
    n = 200_000
    x = SAMPLER[kind](scale, n, np.random.default_rng(41))
    assert x.dtype == np.int64
    assert np.abs(x).max() < 44 * scale + 1
    var = VARIANCE[kind](scale)
    xf = x.astype(float)
    kurt = 6.0 if kind == "laplace" else 3.0  # E X^4 / Var^2 for huge scale
    assert abs(np.mean(xf**2) / var - 1) < 5 * math.sqrt((kurt - 1) / n)
    assert abs(xf.mean()) < 5 * math.sqrt(var / n)
    assert len(np.unique(x)) > n // 2  # really spread out, not stuck on a lattice


def test_tiny_scales_are_zero_with_the_right_tiny_probability(monkeypatch: pytest.MonkeyPatch) -> None:
    assert not discrete_laplace(1e-3, N).any()
    assert not discrete_gaussian(1e-3, N, np.random.default_rng(51)).any()
    assert not discrete_laplace(5e-324, 10).any()
    with monkeypatch.context() as m:  # below 1/45 nothing is drawn at all
        m.setattr(os, "urandom", words())
        assert not discrete_laplace(np.full(5, 0.02), 5).any()
    for kind, scale in (("laplace", 0.1), ("gaussian", 0.25)):
        x = SAMPLER[kind](scale, N, np.random.default_rng(52))
        p_nonzero = 1 - PMF[kind](np.array([0]), scale)[0]  # laplace: 9.1e-5, gaussian: 6.7e-4
        nonzero = int((x != 0).sum())
        assert set(np.unique(x)) <= {-1, 0, 1}
        assert stats.poisson.cdf(nonzero, N * p_nonzero) > P_SEEDED / 2
        assert stats.poisson.sf(nonzero - 1, N * p_nonzero) > P_SEEDED / 2
