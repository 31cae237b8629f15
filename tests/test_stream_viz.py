"""Stream figure builders: pure, no streamlit, right traces; long lines reduced for drawing."""

import numpy as np
import pytest

from dpviz.core.noise import Noise
from dpviz.errors import InputError
from dpviz.stream.simulation import make_mechanism
from dpviz.viz import stream as V


def test_figures_and_tables():
    noise, n = Noise.laplace(1.0), 40
    counts = np.arange(n, dtype=float)
    mechs = [make_mechanism(m, n, noise) for m in ["naive", "fenwick", "fenwick-fda"]]
    rels = {m.name: m.simulate(counts, np.random.default_rng(0)) for m in mechs}
    fig = V.release_figure(counts, rels, upto=10)
    assert len(fig.data) == 2 * 3 + 1 and len(fig.data[-1].y) == 10
    assert V.variance_figure(mechs).layout.yaxis.type == "log"
    table = V.mse_table(mechs)
    assert table["ratio to FDA"].iloc[2] == pytest.approx(1.0)
    maps = V.strategy_heatmaps(mechs[2].lam)
    assert set(maps) == {"M", "B", "Σ"} and np.asarray(maps["M"].data[0].z).shape == (n, n)
    assert len(V.lambda_figure(mechs[2].lam).data[0].x) == n
    assert not hasattr(V, "release_frame")  # tables come from dpviz.stream.private_release only
    with pytest.raises(InputError, match="too large"):
        V.matrix_heatmap(np.eye(65), "big")  # the shared helper, re-exported
    assert "streamlit" not in open(V.__file__, encoding="utf-8").read()


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
    rels = {m.name: m.simulate(counts, np.random.default_rng(0)) for m in mechs}
    fig = V.release_figure(counts, rels)
    assert all(len(t.x) <= 2 * (V.MAX_POINTS + 2) for t in fig.data)
    assert fig.data[-1].x[-1] == n  # the last step is always drawn
    assert all(len(t.x) <= V.MAX_POINTS + 2 for t in V.variance_figure(mechs).data)
    assert len(V.release_figure(counts, rels, max_points=None).data[-1].x) == n


def test_error_view_subtracts_the_truth():
    n = 30
    mech = make_mechanism("fenwick-fda", n, Noise.laplace(1.0))
    counts = np.arange(n, dtype=float)
    rel = mech.simulate(counts, np.random.default_rng(1))
    fig = V.release_figure(counts, {"fenwick-fda": rel}, error=True, upto=20)
    np.testing.assert_allclose(fig.data[1].y, (rel.prefix_sums - np.cumsum(counts))[:20])
    np.testing.assert_array_equal(fig.data[-1].y, np.zeros(20))
    assert fig.layout.yaxis.title.text == "released − true"
