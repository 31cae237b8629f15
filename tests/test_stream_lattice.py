"""Releases of real-valued factorisations on the lattice 2^−k ℤ (dpviz.stream.lattice): ``sqrt``."""

import json
import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from dpviz import cli
from dpviz.audit.targets import run
from dpviz.stream.hooks import audit_target as stream_target
from dpviz.core.noise import Noise
from dpviz.core.samplers import MAX_SCALE
from dpviz.errors import InputError
from dpviz.stream import lattice as LT
from dpviz.stream.estimators import sqrt_coefficients
from dpviz.stream.release import release
from dpviz.stream.strategy import LATTICE_RELEASABLE, RELEASABLE, releasable, strategy

RHO = Noise.gaussian(0.5, discrete=True)


def _sq(v):
    """‖v‖₂² of an object array of Python ints, exactly."""
    return sum(int(e) * int(e) for e in v)


def test_real_shift_has_disjoint_support_without_the_lattice():
    """R e_i is not an integer vector: integer noise on R x and R x' would have disjoint supports."""
    shift = sqrt_coefficients(6)  # R e_1
    assert np.any(shift != np.rint(shift))


@pytest.mark.parametrize("n", [4, 5, 6, 7, 8, 40])
def test_neighbours_share_the_lattice_and_the_charged_sensitivity_covers_every_step(n):
    coef = sqrt_coefficients(n)
    lat, c = LT.charged_lattice(coef, RHO)
    assert lat.bits <= LT.LATTICE_BITS and lat.integer_sigma <= MAX_SCALE
    assert lat.slack == pytest.approx(math.sqrt(n) * 2.0**-lat.bits)
    assert lat.sensitivity == pytest.approx(np.sqrt(np.sum(coef**2)) + lat.slack, rel=1e-15)
    bound = (Fraction(lat.sensitivity) * 2**lat.bits) ** 2
    rng = np.random.default_rng(n)
    steps = range(n) if n <= 8 else (0, 1, n // 2, n - 1)
    for _ in range(8 if n <= 8 else 2):
        x = rng.integers(0, 6, n)
        a = LT.lattice_answer(coef, x, lat.bits)
        assert all(isinstance(v, int) for v in a)  # on the lattice: same support ℤ^N for every neighbour
        for i in steps:
            for sign in (1, -1):
                x1 = x.copy()
                x1[i] += sign
                b = LT.lattice_answer(coef, x1, lat.bits)
                assert Fraction(_sq(a - b)) <= bound  # ‖a − b‖₂ ≤ Δ (in lattice units)
                # the difference is the rounded column i, whatever x is (exact integer arithmetic)
                assert list(b - a) == [0] * i + [sign * int(v) for v in c[: n - i]]
    # ρ = Δ²/(2σ²) is what the budget says
    assert lat.sensitivity**2 / (2 * lat.sigma**2) == pytest.approx(0.5, rel=1e-12)


def test_exact_log_ratio_on_a_coarse_lattice():
    """k = 3 (coefficients really rounded): the log-ratio of the two output pmfs at any lattice point is
    Σ((y−b)² − (y−a)²)/(2s²) in lattice units, and the zCDP divergence ‖a−b‖²/(2s²) ≤ ρ."""
    n = 4
    coef = sqrt_coefficients(n)
    lat, c = LT.charged_lattice(coef, RHO, finest=3)
    assert lat.bits == 3 and np.any(c != np.ldexp(coef, 3))  # 5/16 is not on 2^-3 Z: rounded
    s = lat.integer_sigma
    x = np.array([2, 0, 1, 3])
    a = np.array(LT.lattice_answer(coef, x, 3), dtype=float)
    x1 = x.copy()
    x1[0] += 1
    b = np.array(LT.lattice_answer(coef, x1, 3), dtype=float)
    grid = np.arange(-400, 401, dtype=float)

    def log_pmf(y, mu):  # product discrete Gaussian on ℤ^n centred at mu, normalised by direct summation
        norm = np.log(np.exp(-((grid[:, None] + mu.round() - mu) ** 2) / (2 * s * s)).sum(axis=0))
        return float(np.sum(-((y - mu) ** 2) / (2 * s * s) - norm))

    rng = np.random.default_rng(1)
    for _ in range(20):
        y = np.round(a + rng.normal(0, 2 * s, n))
        exact = log_pmf(y, a) - log_pmf(y, b)
        assert exact == pytest.approx(float(np.sum((y - b) ** 2 - (y - a) ** 2) / (2 * s * s)), abs=1e-9)
    assert float(np.sum((a - b) ** 2)) / (2 * s * s) <= 0.5 * (1 + 1e-12)
    # KL (α → 1 Rényi) by exact summation per coordinate equals ‖a − b‖²/(2s²)
    kl = 0.0
    for t in range(n):
        ys = grid + a[t]
        p = np.exp(-((ys - a[t]) ** 2) / (2 * s * s))
        p /= p.sum()
        kl += float(np.sum(p * ((ys - b[t]) ** 2 - (ys - a[t]) ** 2) / (2 * s * s)))
    assert kl == pytest.approx(float(np.sum((a - b) ** 2)) / (2 * s * s), rel=1e-9)


def test_exact_convolution_matches_python_integers_at_the_extremes():
    rng = np.random.default_rng(3)
    c = rng.integers(0, 2**40, 33)
    x = rng.integers(-(10**12), 10**12, 33)
    z = LT.exact_causal_convolution(c, x)
    assert list(z) == [sum(int(c[j]) * int(x[t - j]) for j in range(t + 1)) for t in range(33)]
    with pytest.raises(InputError):
        LT.exact_causal_convolution(c, x[:5])


def test_lattice_shrinks_when_sigma_is_large():
    small = LT.choose_bits(2.0, 1000, Noise.gaussian(1e-6, discrete=True))
    assert small.bits < LT.LATTICE_BITS and small.integer_sigma <= MAX_SCALE < 2 * small.integer_sigma
    assert LT.choose_bits(0.5, 4, Noise.gaussian(50.0, discrete=True)).bits == LT.LATTICE_BITS


def test_monte_carlo_unbiased_and_variance_matches_analytic():
    series = np.array([3, 0, 5, 1, 2, 4])
    rng = np.random.default_rng(11)
    draws = 3000  # variance ratio SE sqrt(2/3000) ~ 2.6% per step: the 8% tolerance is 3 SE
    out = np.empty((draws, series.size))
    for j in range(draws):
        rel = release(series, RHO, mechanism="sqrt", rng=rng)
        out[j] = rel.prefix_sums
    analytic = np.asarray(rel.variance)
    lat = rel.lattice
    c2 = sqrt_coefficients(series.size) ** 2
    np.testing.assert_allclose(analytic, lat.value_variance * np.cumsum(c2), rtol=1e-12)
    np.testing.assert_allclose(analytic, lat.sigma**2 * np.cumsum(c2), rtol=1e-9)
    assert np.all(np.abs(out.mean(axis=0) - np.cumsum(series)) < 5 * np.sqrt(analytic / draws))
    np.testing.assert_allclose(out.var(axis=0, ddof=1), analytic, rtol=0.05)


def test_release_metadata_states_the_lattice():
    rel = release(np.array([1, 2, 3]), RHO, mechanism="sqrt", horizon=16)
    meta = rel.metadata()
    lat = meta["lattice"]
    assert lat["bits"] == rel.lattice.bits and lat["spacing"] == f"2^-{rel.lattice.bits}"
    assert lat["sensitivity_l2"] == meta["sensitivity"]["value"] == rel.sensitivity
    assert lat["sensitivity_l2"] == lat["base_sensitivity_l2"] + lat["rounding_slack"]
    assert lat["base_sensitivity_l2"] == strategy("sqrt", 16, "gaussian").sensitivity()
    assert lat["sigma"] == pytest.approx(RHO.scale(rel.sensitivity))
    assert "lattice" not in release(np.array([1, 2, 3]), RHO, mechanism="naive").metadata()


def test_releasable_lists():
    assert "sqrt" not in RELEASABLE and LATTICE_RELEASABLE == ("sqrt", "banded", "blt", "sqrt-weighted", "blt-weighted")
    assert releasable("gaussian") == RELEASABLE + LATTICE_RELEASABLE and releasable(Noise.laplace(1.0)) == RELEASABLE
    with pytest.raises(InputError, match="discrete Gaussian noise only"):
        release(np.array([1, 2]), Noise.laplace(1.0, discrete=True), mechanism="sqrt")


def test_cli_release_sqrt(tmp_path, capsys):
    out = tmp_path / "o.csv"
    assert cli.main(["stream", "release", "sample:flights", "--mechanism", "sqrt", "--rho", "0.5",
                     "--output", str(out)]) == 0
    assert "discrete Gaussian" in capsys.readouterr().out
    df = pd.read_csv(out)
    assert list(df.columns) == ["t", "date", "released_total", "variance", "std"] and "true_total" not in df
    assert np.all(np.isfinite(df["released_total"]))
    meta = json.loads((tmp_path / "o.csv.meta.json").read_text())
    assert meta["mechanism"] == "sqrt" and meta["noise"]["discrete"] is True
    assert 0 < meta["lattice"]["bits"] <= LT.LATTICE_BITS
    assert meta["lattice"]["sensitivity_l2"] == meta["sensitivity"]["value"]


def test_audit_finds_no_violation_for_the_sqrt_release():
    target = stream_target(1.0, mechanism="sqrt")
    assert target.delta == 1e-6 and "Gaussian" in target.mechanism
    result = run(target, trials=400, rng=np.random.default_rng(5))
    assert result.consistent and result.epsilon_lower <= 1.0


def test_lattice_release_is_exact_above_int64():
    """Z = 2^k R̃ x exceeds int64 for large counts; the noise is drawn by core's measure on the low words and the
    released values equal 2^-k (Z + G) exactly (G: the same discrete Gaussian draws)."""
    from dpviz.core.samplers import discrete_gaussian

    counts = np.array([10**12, 10**12 - 1, 7, 10**12], dtype=np.int64)
    noise = Noise.gaussian(0.5, discrete=True)
    m, lat = LT.lattice_measure("sqrt", sqrt_coefficients(4), counts, noise, np.random.default_rng(8))
    z = LT.lattice_answer(sqrt_coefficients(4), counts, lat.bits)
    assert max(abs(int(v)) for v in z) > 2**63
    g = discrete_gaussian(np.full(4, lat.integer_sigma), (4,), np.random.default_rng(8))
    want = np.ldexp((z + g.astype(object)).astype(np.float64), -lat.bits)
    np.testing.assert_array_equal(m.values, want)
    assert m.sensitivity == lat.sensitivity and m.bits == lat.bits
