"""dpviz.stream.release: discrete noise on integer node sums, OS CSPRNG by default, one mechanism, no truth,
fresh noise every call; analytic variance = Monte-Carlo variance of discrete releases."""

import json
import re
import zlib

import numpy as np
import pytest

from dpviz.core.noise import Noise
from dpviz.core.protocols import measure
from dpviz.errors import InputError
from dpviz.stream import fenwick as F
from dpviz.stream import release as R
from dpviz.stream.model import StreamData
from dpviz.stream.strategy import RELEASABLE, UNIT_OF_PRIVACY, best_releasable, releasable, strategy

LAP = Noise.laplace(1.0, discrete=True)
GAU = Noise.gaussian(0.5, discrete=True)
SERIES = np.random.default_rng(0).poisson(30, 50).astype(np.int64)
INTEGER = RELEASABLE  # the integer strategies; sqrt's lattice release: tests/test_stream_lattice.py


@pytest.mark.parametrize("noise", [LAP, GAU], ids=["laplace", "gaussian"])
@pytest.mark.parametrize("name", INTEGER)
def test_release_draws_integer_noise_on_integer_node_sums(name, noise):
    rel = R.release(SERIES, noise, mechanism=name)
    m = rel.measurement
    answer = strategy(name, SERIES.size, noise.family).answer(SERIES)
    assert answer.dtype == np.int64 and m.values.dtype == np.int64
    noise_part = m.values - answer
    assert noise_part.dtype == np.int64 and np.any(noise_part != 0)
    assert m.noise.discrete and m.sensitivity == rel.sensitivity
    assert rel.prefix_sums.shape == rel.variance.shape == (SERIES.size,)
    assert not np.array_equal(rel.prefix_sums, np.cumsum(SERIES))
    if name != "honaker":  # chain / cumulative sums of integers stay integers
        assert rel.prefix_sums.dtype == np.int64


@pytest.mark.parametrize("name", INTEGER)
def test_release_never_rescales_fresh_noise_each_call(name):
    a = R.release(SERIES, LAP, mechanism=name).measurement.values - strategy(name, 50, "laplace").answer(SERIES)
    b = R.release(SERIES, LAP, mechanism=name).measurement.values - strategy(name, 50, "laplace").answer(SERIES)
    assert not np.array_equal(a, b)
    # a release at another ε is a fresh draw, not the old draw times a factor
    c = R.release(SERIES, Noise.laplace(0.5, discrete=True), mechanism=name).measurement.values - strategy(name, 50, "laplace").answer(SERIES)
    nz = a != 0
    assert not np.allclose(c[nz] / a[nz], 2.0)


@pytest.mark.parametrize("name", ["naive", "fenwick", "fenwick-fda", "honaker"])
@pytest.mark.parametrize("noise", [Noise.laplace(2.0, discrete=True), Noise.laplace(0.4, discrete=True),
                                   Noise.gaussian(2.0, discrete=True), Noise.gaussian_approx(1.0, 1e-6, discrete=True)],
                         ids=["lap-eps2", "lap-eps0.4", "gauss-rho2", "gauss-eps1-delta1e-6"])
def test_monte_carlo_variance_of_discrete_releases(name, noise):
    """Empirical per-step variance of 2500 seeded discrete releases matches the estimator's analytic
    variance (exact discrete variances: at ε = 2 the discrete Laplace variance is far below 2b²)."""
    n, draws = 23, 2500
    rng = np.random.default_rng(zlib.crc32(f"{name}-{noise.describe}".encode()))
    a = np.arange(n, dtype=np.int64)
    out = np.array([R.release(a, noise, mechanism=name, rng=rng).prefix_sums for _ in range(draws)], dtype=float)
    analytic = R.release(a, noise, mechanism=name, rng=rng).variance
    emp = out.var(axis=0)
    assert np.max(np.abs(emp / analytic - 1)) < 0.15
    assert abs(emp.sum() / analytic.sum() - 1) < 0.06  # the total, much tighter
    assert np.all(np.abs(out.mean(axis=0) - np.cumsum(a)) < 5 * np.sqrt(analytic / draws))


def test_discrete_variance_differs_from_continuous_when_it_matters():
    s = strategy("naive", 5, "laplace")
    noise = Noise.laplace(2.0, discrete=True)
    assert s.per_step_variance(noise)[0] < 0.8 * s.per_step_variance(noise.as_discrete(False))[0]


def test_release_refuses_sqrt_laplace_continuous_noise_and_several_mechanisms():
    with pytest.raises(InputError, match="discrete Gaussian noise only"):
        R.release(SERIES, Noise.laplace(1.0, discrete=True), mechanism="sqrt")
    with pytest.raises(InputError, match="discrete noise"):
        R.release(SERIES, Noise.gaussian(0.5), mechanism="sqrt")
    with pytest.raises(InputError, match="discrete noise"):
        R.release(SERIES, Noise.laplace(1.0), mechanism="fenwick-fda")
    with pytest.raises(InputError, match="one mechanism"):
        R.release(SERIES, LAP, mechanism=["naive", "fenwick"])
    with pytest.raises(InputError, match="one mechanism"):
        R.release(SERIES, LAP, mechanism="naive,fenwick")
    with pytest.raises(InputError, match="rng"):
        R.release(SERIES, LAP, mechanism="naive", rng=3)


def test_release_needs_integer_counts_and_names_the_step():
    a = SERIES.astype(float)
    a[6] = 2.5
    with pytest.raises(InputError, match=r"step 7: the count 2.5 is not an integer.*simulate"):
        R.release(a, LAP, mechanism="fenwick-fda")
    a[6] = np.nan
    with pytest.raises(InputError, match="step 7"):
        R.release(a, LAP, mechanism="naive")
    # integer-valued floats (what CSV parsing gives) are fine
    assert R.release(SERIES.astype(float), LAP, mechanism="naive").measurement.values.dtype == np.int64


def test_horizon_prefix_and_validation():
    rel = R.release(SERIES, LAP, mechanism="fenwick-fda", horizon=64)
    assert rel.horizon == 64 and rel.steps == 50 and rel.prefix_sums.size == 50
    np.testing.assert_allclose(rel.variance, strategy("fenwick-fda", 64, "laplace").per_step_variance(LAP)[:50])
    with pytest.raises(InputError, match="shorter"):
        R.release(SERIES, LAP, mechanism="naive", horizon=10)


def test_estimator_fit_is_the_release():
    s = strategy("fenwick-fda", 50, "laplace")
    m = measure(s, SERIES, LAP, np.random.default_rng(1))
    est = s.estimator.fit(m)
    np.testing.assert_array_equal(est.values, np.cumsum(m.values)[:0].tolist() + list(F.chain_sum(m.values)))
    np.testing.assert_allclose(est.variance, s.per_step_variance(LAP))
    rel = R.release(SERIES, LAP, mechanism="fenwick-fda", rng=np.random.default_rng(1))
    np.testing.assert_array_equal(rel.prefix_sums, est.values)


def test_release_table_and_metadata_hold_no_truth():
    stamps = np.arange("2024-01-01", "2024-02-20", dtype="datetime64[D]")
    rel = R.release(StreamData(SERIES, stamps, "count", "date"), GAU, mechanism="fenwick-fda")
    df = rel.table()
    assert list(df.columns) == ["t", "date", "released_total", "variance", "std"] and len(df) == 50
    np.testing.assert_allclose(df["std"] ** 2, df["variance"])
    truth = np.cumsum(SERIES)
    assert not any(np.array_equal(df[c].to_numpy(), truth) for c in df.columns if c != "date")
    assert list(R.release(SERIES, GAU, mechanism="fenwick-fda").table().columns) == ["t", "released_total", "variance",
                                                                                    "std"]
    meta = rel.metadata()
    assert meta["mode"] == "release" and meta["capability"] == "stream" and meta["mechanism"] == "fenwick-fda"
    assert meta["noise"] == GAU.as_dict() and meta["horizon"] == 50
    assert meta["sensitivity"] == {"norm": "L2", "value": rel.sensitivity}
    assert meta["unit_of_privacy"] == UNIT_OF_PRIVACY and "event" in UNIT_OF_PRIVACY
    assert "CSPRNG" in meta["samplers"] and meta["dpviz_version"] and meta["created_utc"].endswith("+00:00")
    text = json.dumps({k: v for k, v in meta.items() if k != "created_utc"}, default=str)  # a clock may read "42"
    for v in (int(truth[-1]), int(SERIES.sum()), int(SERIES.max())):
        assert not re.search(rf"(?<![\d.]){v}(?![\d.])", text), v  # the number itself, not a digit run inside one
    seeded = R.release(SERIES, LAP, mechanism="naive", rng=np.random.default_rng(0))
    assert "NOT a private release" in seeded.metadata()["samplers"]


def test_registry_and_docstrings_state_the_unit_of_privacy():
    from dpviz.core.registry import capability
    from dpviz.stream import strategy as strategies

    assert UNIT_OF_PRIVACY == capability("stream").unit_of_privacy
    doc = strategies.__doc__
    assert "event-level" in doc and "user-level" in doc and "not** offered" in doc


def test_release_is_a_core_release_with_one_budget_part():
    from dpviz.core.budget import Budget
    from dpviz.core.release import BudgetSplit, Release

    rel = R.release(SERIES, LAP, mechanism="fenwick-fda", rng=np.random.default_rng(3))
    assert isinstance(rel, Release) and rel.capability == "stream"
    np.testing.assert_array_equal(rel.values, rel.prefix_sums)
    assert rel.values.size == SERIES.size
    assert rel.budget == BudgetSplit(LAP.budget, (("fenwick-fda", LAP.budget),))
    assert rel.metadata()["budget_parts"] == [{"part": "fenwick-fda", **LAP.budget.as_dict()}]
    approx = Noise.gaussian_approx(1.0, 1e-6, discrete=True)  # (ε, δ): the part is the ρ the noise spends
    split = R.release(SERIES, approx, mechanism="honaker").budget
    assert split.parts == (("honaker", Budget.zcdp(approx.rho)),) and split.rho == approx.rho


def test_release_default_mechanism_and_streamdata_table():
    stamps = np.arange("2024-01-01", "2024-02-20", dtype="datetime64[D]")
    data = StreamData(SERIES.astype(float), stamps, "flights", "day")
    rel = R.release(data, LAP, rng=np.random.default_rng(4))
    best = best_releasable("max", "laplace", SERIES.size)  # the default: the best releasable for the worst step
    assert rel.mechanism == best and rel.metadata()["mechanism_choice"]["chosen"] == best
    ranking = rel.metadata()["mechanism_choice"]["unit_variance"]
    assert list(ranking)[0] == best and ranking[best] == min(ranking.values())
    assert set(ranking) == set(releasable("laplace"))
    ref = R.release(SERIES, LAP, mechanism=best, rng=np.random.default_rng(4))
    assert "mechanism_choice" not in ref.metadata()  # named: nothing chosen
    np.testing.assert_array_equal(rel.values, ref.values)  # same draw: the StreamData is only its counts + stamps
    df = rel.table()
    assert list(df.columns) == ["t", "day", "released_total", "variance", "std"]
    np.testing.assert_array_equal(df["day"].to_numpy(), stamps)
    with pytest.raises(InputError, match="noise: expected"):
        R.release(SERIES, "fenwick-fda")  # the old positional order is refused in one line


def test_simulate_takes_a_seed_or_a_generator():
    from dpviz.stream.mechanism import make_mechanism

    noise = Noise.laplace(0.7)
    sim = R.simulate(StreamData(SERIES.astype(float), None, "count", None), noise, "naive,fenwick-fda", 12)
    for name, rel in sim.releases.items():  # every mechanism from default_rng(seed), as before
        ref = make_mechanism(name, 50, noise).simulate(SERIES, np.random.default_rng(12))
        np.testing.assert_allclose(rel.prefix_sums, ref.prefix_sums, rtol=1e-12)
    drawn = R.simulate(SERIES, noise, ["naive"], np.random.default_rng(5))
    again = R.simulate(SERIES, noise, ["naive"], drawn.seed)
    assert drawn.seed == int(np.random.default_rng(5).integers(0, 2**31 - 1))
    np.testing.assert_array_equal(drawn.releases["naive"].prefix_sums, again.releases["naive"].prefix_sums)
    with pytest.raises(InputError, match="seed"):
        R.simulate(SERIES, noise, "naive", -1)
