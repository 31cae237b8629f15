"""Stream figure builders: pure, no streamlit, right traces; long lines reduced for drawing."""

import numpy as np
import pytest

from dpviz.core.noise import Noise
from dpviz.errors import InputError
from dpviz.stream.mechanism import make_mechanism
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
    assert not hasattr(V, "release_frame")  # tables come from dpviz.stream.release only
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


def test_log_ticks_are_human():
    t = V.log_ticks(2.0, 900.0)  # 2.65 decades: 1-2-5
    assert t["tickvals"] == [2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0]
    assert t["ticktext"] == ["2", "5", "10", "20", "50", "100", "200", "500"]
    wide = V.log_ticks(2.0, 3.5e8)  # 8 decades: powers of ten, superscripts from a million on
    assert wide["ticktext"] == ["10", "100", "1,000", "10,000", "100,000", "10⁶", "10⁷", "10⁸"]
    assert V.log_ticks(30.0, 60.0)["tickvals"] == [30.0, 50.0]  # narrow: finer steps, still two ticks
    assert V.log_ticks(0.004, 0.2)["ticktext"][:2] == ["0.005", "0.01"]
    assert V.log_ticks(0.0, 1.0) == {} and V.log_ticks(float("nan"), 1.0) == {}


def test_human_number():
    assert [V.human_number(v) for v in (32945.3, 223.04, 3.5612, 0.0123, 0.0)] == ["32,945", "223", "3.561", "0.0123", "0"]
    assert V.human_number(3.2e8) == "320,000,000" and V.human_number(float("inf")) == "not defined"


def test_variance_figure_uses_human_ticks_and_fixed_colours():
    mechs = [make_mechanism(m, 181, Noise.laplace(1.0)) for m in ("naive", "fenwick-fda")]
    fig = V.variance_figure(mechs)
    assert fig.layout.yaxis.ticktext and "10" in fig.layout.yaxis.ticktext
    assert [t.line.color for t in fig.data] == [V.COLORS["naive"], V.COLORS["fenwick-fda"]]
    rels = {m.name: m.simulate(np.ones(181), np.random.default_rng(0)) for m in mechs}
    rel = V.release_figure(np.ones(181), rels)
    assert [t.line.color for t in rel.data if t.mode == "lines" and t.name in (V.LABELS["naive"], V.LABELS["fenwick-fda"])] \
        == [V.COLORS["naive"], V.COLORS["fenwick-fda"]]  # the same colour for a mechanism in every figure


def test_mse_table_without_fda_has_no_empty_ratio_column():
    mechs = [make_mechanism(m, 40, Noise.laplace(1.0)) for m in ("naive", "binary")]
    assert "ratio to FDA" not in V.mse_table(mechs).columns
    shown = V.for_display(V.mse_table(mechs + [make_mechanism("fenwick-fda", 40, Noise.laplace(1.0))]))
    assert shown["total MSE"].tolist() == [float(f"{v:.4g}") for v in V.mse_table(
        mechs + [make_mechanism("fenwick-fda", 40, Noise.laplace(1.0))])["total MSE"]]


def test_best_summary_names_the_error_and_the_reason():
    lap = [make_mechanism(m, 181, Noise.laplace(1.0)) for m in ("naive", "honaker", "fenwick-fda")]
    assert V.best_mechanisms(lap) == ("naive", "naive")
    text = V.best_summary(lap, default="fenwick-fda", target="mean")
    assert "Lowest mean error per step" in text and "Lowest worst-step error" in text and "(182)" in text
    assert "Why the default differs" in text and "N = 1,810" in text
    ratio = float(text.split("would be ")[1].split("×")[0])
    assert 0 < ratio < 1  # ten times longer, FDA is ahead of Naive on the mean
    long = [make_mechanism(m, 4095, Noise.laplace(1.0)) for m in ("naive", "honaker", "fenwick-fda")]
    assert V.best_mechanisms(long) == ("fenwick-fda", "fenwick-fda")
    assert "Why the default" not in V.best_summary(long, default="fenwick-fda")
    pair = [make_mechanism(m, 181, Noise.laplace(1.0)) for m in ("smooth-binary", "kary")]
    text = V.best_summary(pair, default="smooth-binary", target="max")  # kary: lower mean, not the target
    assert "the default minimises the worst-step error" in text and "lower on the mean error" in text
    gauss = [make_mechanism(m, 181, Noise.gaussian(0.5)) for m in ("naive", "sqrt", "fenwick-fda")]
    text = V.best_summary(gauss, default="fenwick-fda", releasable=("naive", "fenwick-fda"))
    assert V.best_mechanisms(gauss) == ("sqrt", "sqrt") and "cannot be released with this noise" in text
    assert V.best_summary([]) == ""


def test_release_default_reason_names_the_target_the_runner_up_and_a_costlier_choice():
    ranking = (("kary", 76.0), ("smooth-binary", 144.0), ("naive", 182.0))
    text = V.release_default_reason("mean", "laplace", 181, ranking, "naive")
    assert text.startswith("Default: **" + V.LABELS["kary"] + "**") and "mean per-step error at N = 181" in text
    assert "1.89× its variance" in text and "Your choice, " + V.LABELS["naive"] + ", has 2.39×" in text
    tie = V.release_default_reason("max", "laplace", 181, (("smooth-binary", 144.0), ("kary", 144.0)), "smooth-binary")
    assert "ties with it" in tie and "Your choice" not in tie


def test_heatmaps_and_lambda_figure_layout():
    lam = make_mechanism("fenwick-fda", 31, Noise.laplace(1.0)).lam
    maps = V.strategy_heatmaps(lam)
    for fig in maps.values():
        assert fig.layout.title.yanchor == "top" and fig.layout.margin.t >= 100 and fig.layout.yaxis.scaleanchor == "x"
    fig = V.lambda_figure(lam, 2.0 / lam)
    assert len(fig.data) == 2 and fig.layout.yaxis2.type == "log" and fig.layout.yaxis.title.text == "weight λᵢ"
    np.testing.assert_allclose(fig.data[1].y, 2.0 / lam)
    big = make_mechanism("fenwick-fda", 20_000, Noise.laplace(1.0)).lam
    assert len(V.lambda_figure(big).data[0].x) <= V.MAX_POINTS + 2  # long profiles are reduced


def test_timestamps_are_sent_as_epoch_milliseconds_on_a_date_axis():
    n = 5
    mech = make_mechanism("naive", n, Noise.laplace(1.0))
    rel = {"naive": mech.simulate(np.ones(n), np.random.default_rng(0))}
    days = np.arange("2001-01-01", "2001-01-06", dtype="datetime64[D]").astype("datetime64[ns]")
    fig = V.release_figure(np.ones(n), rel, days)
    assert fig.layout.xaxis.type == "date"
    want = (days.astype("datetime64[ms]") - np.datetime64("1970-01-01T00:00:00", "ms")).astype(float)
    np.testing.assert_array_equal(np.asarray(fig.data[-1].x, dtype=float), want)
    hours = np.arange(np.datetime64("2011-01-01T00:00"), np.datetime64("2011-01-01T05:00"), np.timedelta64(1, "h"))
    x = np.asarray(V.release_figure(np.ones(n), rel, hours).data[-1].x, dtype=float)
    assert np.all(np.diff(x) == 3_600_000.0)  # an hour in milliseconds
    assert V.release_figure(np.ones(n), rel).layout.xaxis.type is None  # steps: a linear axis


@pytest.mark.parametrize("name", ["naive", "fenwick-fda", "honaker", "smooth-binary", "kary", "sqrt", "blt"])
def test_factor_matrices_multiply_to_the_running_total_matrix(name):
    from dpviz.stream.strategy import strategy

    fam = "gaussian" if name in ("sqrt", "blt") else "laplace"
    q, r = V.factor_matrices(strategy(name, 13, fam))
    np.testing.assert_allclose(r @ q, np.tril(np.ones((13, 13))), atol=1e-9)  # W = R Q
    figs = V.factor_heatmaps(strategy(name, 13, fam))
    if q.shape[0] > V.MATRIX_MAX:  # smooth binary measures 91 values at N = 13: too many rows to label
        assert figs == {}
    else:
        assert set(figs) == {"Q", "R"} and "W = R Q" in figs["R"].layout.title.text


def test_short_labels_fit_a_metric_value():
    """A metric value in a third of the page at 1280 px shows about 15 characters (no "Square root, re…")."""
    from dpviz.stream.strategy import MECHANISM_NAMES

    assert all(len(V.short_label(m)) <= 15 for m in MECHANISM_NAMES), [V.short_label(m) for m in MECHANISM_NAMES]
