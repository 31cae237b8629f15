"""dpviz support for the Stream page: rescaled releases (ε move = rescale one draw), the CLI's
release table, and the min/max reduction used to keep long lines fast to draw."""

import numpy as np
import pytest

from dpviz.errors import InputError
from dpviz.stream.io import release_frame
from dpviz.stream.mechanisms import (
    MECHANISM_NAMES,
    Noise,
    available,
    make_mechanism,
    rescaled_release,
    unit_noise,
    with_noise,
)
from dpviz.viz import stream as V

NOISES = [Noise.laplace(0.3), Noise.laplace(4.0), Noise.gaussian(0.02), Noise.gaussian_approx(1.0, 1e-6)]


@pytest.mark.parametrize("noise", NOISES, ids=lambda n: n.describe)
@pytest.mark.parametrize("n", [1, 7, 64, 1000])
def test_rescaled_release_equals_direct_release(noise, n):
    a = np.random.default_rng(n).poisson(20, n).astype(float)
    for name in available(noise):
        unit = make_mechanism(name, n, unit_noise(noise.kind))
        errors = unit.errors(np.random.default_rng(11), 1)[0]
        mech, rel = rescaled_release(unit, noise, a, errors)
        direct = make_mechanism(name, n, noise)
        ref = direct.release(a, np.random.default_rng(11))
        np.testing.assert_allclose(rel.prefix_sums, ref.prefix_sums, rtol=1e-12, atol=1e-9 * (1 + a.sum()))
        np.testing.assert_allclose(rel.variance, ref.variance, rtol=1e-12)
        assert mech.sensitivity == pytest.approx(direct.sensitivity, rel=1e-12)
        assert mech.total_mse() == pytest.approx(direct.total_mse(), rel=1e-12)
        # a prefix of the series releases the first steps only
        _, pre = rescaled_release(unit, noise, a[: max(1, n // 2)], errors)
        np.testing.assert_allclose(pre.prefix_sums, rel.prefix_sums[: max(1, n // 2)])


def test_with_noise_reuses_structure_and_checks_kind():
    unit = make_mechanism("fenwick-fda", 100, unit_noise("laplace"))
    other = with_noise(unit, Noise.laplace(0.5))
    assert other.lam is unit.lam and other.noise.epsilon == 0.5 and unit.noise.epsilon == 1.0
    assert other.name == "fenwick-fda"
    with pytest.raises(InputError, match="laplace"):
        with_noise(unit, Noise.gaussian(1.0))
    with pytest.raises(InputError, match="shape"):
        rescaled_release(unit, Noise.laplace(2.0), np.ones(10), np.zeros(10))


def test_unit_noise_variance_is_sensitivity_squared_times_constant():
    assert unit_noise("laplace").variance(1.0) == pytest.approx(2.0)
    assert unit_noise("gaussian").variance(1.0) == pytest.approx(1.0)
    assert set(MECHANISM_NAMES) - set(available(unit_noise("laplace"))) == {"sqrt"}


def test_release_frame_has_cli_columns():
    mech = make_mechanism("binary", 5, Noise.laplace(1.0))
    rel = mech.release(np.arange(5.0), np.random.default_rng(0))
    df = release_frame(rel)
    assert list(df.columns) == ["t", "released_total", "variance", "std"]
    np.testing.assert_allclose(df["std"] ** 2, rel.variance)
    stamps = np.arange("2024-01-01", "2024-01-06", dtype="datetime64[D]")
    assert list(release_frame(rel, stamps, "date").columns) == ["t", "date", "released_total", "variance", "std"]


def test_minmax_index_keeps_extremes_and_bounds_points():
    y = np.random.default_rng(3).normal(size=17_544)
    y[12_345] = 100.0
    y[777] = -100.0
    idx = V.minmax_index(y, 2000)
    assert idx.size <= 2002 and idx[0] == 0 and idx[-1] == y.size - 1
    assert {777, 12_345} <= set(idx.tolist()) and np.all(np.diff(idx) > 0)
    np.testing.assert_array_equal(V.minmax_index(y[:50], 2000), np.arange(50))
    np.testing.assert_array_equal(V.minmax_index(y, None), np.arange(y.size))
    for n in (2001, 2999, 4001, 10_007):
        idx = V.minmax_index(np.arange(n, dtype=float), 2000)
        assert idx.max() == n - 1 and idx.size <= 2002


def test_long_lines_are_reduced_for_drawing():
    n = 20_000
    mechs = [make_mechanism(m, n, Noise.laplace(1.0)) for m in ("naive", "fenwick-fda")]
    counts = np.ones(n)
    rels = {m.name: m.release(counts, np.random.default_rng(0)) for m in mechs}
    fig = V.release_figure(counts, rels)
    assert all(len(t.x) <= 2 * (V.MAX_POINTS + 2) for t in fig.data)
    assert fig.data[-1].x[-1] == n  # the last step is always drawn
    assert all(len(t.x) <= V.MAX_POINTS + 2 for t in V.variance_figure(mechs).data)
    assert len(V.release_figure(counts, rels, max_points=None).data[-1].x) == n


def test_error_view_subtracts_the_truth():
    n = 30
    mech = make_mechanism("fenwick-fda", n, Noise.laplace(1.0))
    counts = np.arange(n, dtype=float)
    rel = mech.release(counts, np.random.default_rng(1))
    fig = V.release_figure(counts, {"fenwick-fda": rel}, error=True, upto=20)
    np.testing.assert_allclose(fig.data[1].y, (rel.prefix_sums - np.cumsum(counts))[:20])
    np.testing.assert_array_equal(fig.data[-1].y, np.zeros(20))
    assert fig.layout.yaxis.title.text == "released − true"
