"""dpviz.viz.marginals: pure figure builders and tables of the Marginals page (no Streamlit)."""

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest

from dpviz.errors import InputError
from dpviz.marginals import residuals as R
from dpviz.marginals.model import Domain
from dpviz.viz import marginals as vm

DOM = Domain(("sex", "cls", "age"), (2, 3, 4))
CATS = (("f", "m"), ("1", "2", "3"), ("0-9", "10-19", "20-29", "30+"))


def arr(x):
    return np.asarray(x, dtype=float)


# ---- labels ---------------------------------------------------------------------------------------
def test_labels_follow_row_major_attribute_order():
    assert vm.clique_label(DOM, (0, 2)) == "sex × age" and vm.clique_label(DOM, ()) == "total"
    cells = vm.cell_labels(DOM, (0, 1), CATS)
    assert cells == ["sex=f, cls=1", "sex=f, cls=2", "sex=f, cls=3", "sex=m, cls=1", "sex=m, cls=2", "sex=m, cls=3"]
    assert vm.cell_labels(DOM, (1,)) == ["cls=0", "cls=1", "cls=2"]  # codes when no categories
    assert vm.cell_labels(DOM, ()) == ["all"]


# ---- error tables ---------------------------------------------------------------------------------
@pytest.fixture
def errors():
    truth = {(0,): arr([10, 20]), (0, 1): arr([1, 2, 3, 4, 5, 6])}
    est = {"mle": {(0,): arr([13, 16]), (0, 1): arr([1, 2, 3, 4, 5, 6]) + arr([1, -1, 1, -1, 1, 5])},
           "lnn": {(0,): arr([10, 21]), (0, 1): arr([0, 2, 3, 4, 5, 6])}}
    var = {"mle": {(0,): 4.0, (0, 1): 1.0}, "lnn": None}
    return vm.per_marginal_errors(DOM, truth, est, var, labels={"mle": "GReM-MLE"})


def test_per_marginal_errors_numbers(errors):
    assert list(errors["method"]) == ["GReM-MLE", "GReM-MLE", "lnn", "lnn"]
    assert list(errors["marginal"]) == ["sex", "sex × cls"] * 2
    mle = errors[errors.key == "mle"].set_index("marginal")
    assert mle.loc["sex", "rmse per cell"] == pytest.approx(np.sqrt((9 + 16) / 2))
    assert mle.loc["sex", "mean |error| per cell"] == pytest.approx(3.5)
    assert mle.loc["sex", "max |error|"] == 4
    assert mle.loc["sex", "sigma"] == 2.0 and mle.loc["sex", "within 2σ"] == 1.0  # |3|, |-4| <= 4
    assert mle.loc["sex × cls", "sigma"] == 1.0
    assert mle.loc["sex × cls", "within 2σ"] == pytest.approx(5 / 6)  # the error 5 is outside ±2
    assert mle.loc["sex × cls", "cells"] == 6
    lnn = errors[errors.key == "lnn"].set_index("marginal")
    assert lnn["sigma"].isna().all() and lnn["within 2σ"].isna().all()
    assert lnn.loc["sex × cls", "rmse per cell"] == pytest.approx(np.sqrt(1 / 6))
    neg = vm.per_marginal_errors(DOM, {(0,): arr([1, 1])}, {"x": {(0,): arr([-1, 0.5])}})
    assert neg["negative cells"].item() == 1


def test_per_marginal_error_figure_bars_and_sigma_marks(errors):
    fig = vm.per_marginal_error_figure(errors)
    names = [t.name for t in fig.data]
    assert names == ["GReM-MLE", "lnn", "GReM-MLE: analytic σ", "GReM-MLE: analytic 2σ"]
    assert [t.type for t in fig.data] == ["bar", "bar", "scatter", "scatter"]
    assert list(fig.data[0].x) == ["sex", "sex × cls"]
    np.testing.assert_allclose(fig.data[0].y, errors[errors.key == "mle"]["rmse per cell"])
    np.testing.assert_allclose(fig.data[1].y, errors[errors.key == "lnn"]["rmse per cell"])
    np.testing.assert_allclose(fig.data[2].y, [2.0, 1.0])
    np.testing.assert_allclose(fig.data[3].y, [4.0, 2.0])
    np.testing.assert_allclose(fig.data[3].customdata, [1.0, 5 / 6])
    assert fig.layout.barmode == "group"


def test_per_marginal_error_figure_keeps_the_worst():
    truth = {(k,): arr([0, 0]) for k in range(3)}
    est = {"m": {(0,): arr([1, 1]), (1,): arr([5, 5]), (2,): arr([3, 3])}}
    fig = vm.per_marginal_error_figure(vm.per_marginal_errors(DOM, truth, est), max_bars=2)
    assert list(fig.data[0].x) == ["cls", "age"]  # workload order, the two worst
    np.testing.assert_allclose(fig.data[0].y, [5, 3])
    assert "2 worst of 3" in fig.layout.title.text
    assert len(vm.per_marginal_error_figure(errors_empty := vm.per_marginal_errors(DOM, {}, {})).data) == 0
    assert errors_empty.empty


def test_method_summary_ratio():
    t = pd.DataFrame({"method": ["mle", "lnn"], "l1": [4.0, 1.0]})
    s = vm.method_summary(t, {"mle": "GReM-MLE", "lnn": "GReM-LNN"}, baseline="mle", error_col="l1")
    assert list(s["method"]) == ["GReM-MLE", "GReM-LNN"]
    np.testing.assert_allclose(s["l1 / GReM-MLE"], [1.0, 0.25])
    assert list(vm.method_summary(t).columns) == ["method", "l1"]


# ---- marginal explorer ----------------------------------------------------------------------------
def test_explorer_one_way_grouped_bars():
    series = {"true": arr([3, 4, 5]), "GReM-MLE": arr([2.5, 4.5, -1])}
    fig = vm.marginal_explorer_figure(DOM, (1,), series, CATS)
    assert [t.type for t in fig.data] == ["bar", "bar"] and [t.name for t in fig.data] == ["true", "GReM-MLE"]
    assert list(fig.data[0].x) == ["1", "2", "3"]
    np.testing.assert_allclose(fig.data[1].y, [2.5, 4.5, -1])
    assert fig.layout.barmode == "group" and fig.layout.xaxis.title.text == "cls"
    total = vm.marginal_explorer_figure(DOM, (), {"true": arr([7])})
    assert list(total.data[0].x) == ["total"] and list(total.data[0].y) == [7]


def test_explorer_two_way_side_by_side_heatmaps():
    true = np.arange(8.0)
    series = {"true": true, "GReM-MLE": true - 2, "GReM-LNN": true + 1}
    fig = vm.marginal_explorer_figure(DOM, (0, 2), series, CATS)
    assert [t.type for t in fig.data] == ["heatmap"] * 3
    for j, (t, v) in enumerate(zip(fig.data, series.values())):
        np.testing.assert_allclose(np.asarray(t.z), v.reshape(2, 4))  # rows sex, columns age
        assert list(t.y) == ["f", "m"] and t.coloraxis == "coloraxis"
        # every panel on the one pair of axes (issue 19: one subplot redraws far less), a blank column between
        assert list(t.x) == [5 * j + i for i in range(4)] and t.xaxis in (None, "x") and t.yaxis in (None, "y")
        assert [list(r) for r in t.customdata] == [list(CATS[2])] * 2  # hover names the column's category
    assert [a.text for a in fig.layout.annotations] == list(series)
    assert [a.x for a in fig.layout.annotations] == [1.5, 6.5, 11.5]  # each panel's name above its middle
    assert {a.xref for a in fig.layout.annotations} == {"x"}
    assert list(fig.layout.xaxis.tickvals) == [5 * j + i for j in range(3) for i in range(4)]
    assert list(fig.layout.xaxis.ticktext) == list(CATS[2]) * 3 and "age" in fig.layout.xaxis.title.text
    assert "xaxis2" not in fig.to_dict()["layout"]
    go.Figure(fig.to_dict())  # valid for plotly (validated)
    wide = Domain(("a", "b"), (3, 30))  # 5 panels × 30 columns: every 3rd label, at most 60 under the panels
    many = vm.marginal_explorer_figure(wide, (0, 1), {str(i): np.arange(90.0) for i in range(5)})
    assert len(many.layout.xaxis.tickvals) <= vm.MAX_EXPLORER_TICKS
    assert list(many.layout.xaxis.ticktext[:2]) == ["0", "3"] and many.layout.xaxis.tickvals[:2] == (0, 3)
    # one colour scale for all panels: white at 0 (a fifth of the way up from −2 to 8), red below, blue above
    ax = fig.layout.coloraxis
    assert ax.cmin == -2 and ax.cmax == 8
    assert [c[0] for c in ax.colorscale] == [0.0, 0.2, 1.0] and ax.colorscale[1][1] == vm.ZERO_COLOR
    assert ax.colorscale[0][1] == vm.NEGATIVE_COLOR
    pos = vm.marginal_explorer_figure(DOM, (0, 1), {"true": np.arange(6.0)})
    assert pos.layout.coloraxis.cmin == 0 and pos.layout.coloraxis.cmax == 5
    assert pos.layout.coloraxis.colorscale[0][1] == vm.ZERO_COLOR


def test_explorer_three_way_one_panel_per_version():
    true = np.arange(24.0)
    fig = vm.marginal_explorer_figure(DOM, (0, 1, 2), {"true": true, "noisy": true + 0.5}, CATS)
    # sex (2 values, the fewest) joins the rows: one heatmap per version, rows cls · sex, columns age
    assert len(fig.data) == 2 and all(t.type == "heatmap" for t in fig.data)
    cube = true.reshape(2, 3, 4)  # (sex, cls, age) -> rows (cls, sex), columns age
    want = np.moveaxis(cube, (1, 0, 2), (0, 1, 2)).reshape(6, 4)
    np.testing.assert_allclose(np.asarray(fig.data[0].z), want)
    np.testing.assert_allclose(np.asarray(fig.data[1].z), want + 0.5)
    assert list(fig.data[0].y)[:2] == [f"{CATS[1][0]} · {CATS[0][0]}", f"{CATS[1][0]} · {CATS[0][1]}"]
    assert list(fig.layout.xaxis.ticktext) == list(CATS[2]) * 2 and list(fig.data[1].x) == [5, 6, 7, 8]
    assert [a.text for a in fig.layout.annotations] == ["true", "noisy"]
    dom = Domain(("a", "b", "c"), (9, 8, 7))  # c (7 values) joins a in the rows: 63 rows × 8 columns
    cube = np.arange(9 * 8 * 7.0)
    big = vm.marginal_explorer_figure(dom, (0, 1, 2), {"true": cube})
    assert len(big.data) == 1 and "rows a · c, columns b" in big.layout.title.text
    z = np.asarray(big.data[0].z)
    assert z.shape == (63, 8)
    np.testing.assert_allclose(z[2 * 7 + 3], cube.reshape(9, 8, 7)[2, :, 3])  # row (a=2, c=3): b varies
    with pytest.raises(InputError, match="1-, 2- and 3-way"):
        vm.marginal_explorer_figure(Domain(("a", "b", "c", "d"), (2, 2, 2, 2)), (0, 1, 2, 3), {"t": np.ones(16)})


# ---- LNN convergence ------------------------------------------------------------------------------
def test_lnn_convergence_figure_from_rows_and_frame():
    rows = [(1, -10.0, 5.0), (2, -4.0, 2.0), (3, -3.5, 0.0)]
    fig = vm.lnn_convergence_figure(rows)
    assert [t.name for t in fig.data] == ["dual objective", "negative mass"]
    np.testing.assert_allclose(fig.data[0].x, [1, 2, 3])
    np.testing.assert_allclose(fig.data[0].y, [-10, -4, -3.5])
    np.testing.assert_allclose(fig.data[1].y, [5, 2, 0])
    assert fig.data[1].yaxis == "y2" and "3 iterations" in fig.layout.title.text
    df = pd.DataFrame(rows, columns=["iteration", "dual objective", "negative mass"])
    np.testing.assert_allclose(vm.lnn_convergence_figure(df).data[1].y, [5, 2, 0])
    assert len(vm.lnn_convergence_figure([]).data[0].x) == 0


# ---- teaching view --------------------------------------------------------------------------------
TINY = Domain(("a", "b", "c"), (2, 3, 2))


def test_teaching_matrices_closed_forms():
    m = vm.teaching_matrices(TINY, (0, 1), (1,))
    assert m["k"] == 1
    assert vm.teaching_matrices(TINY, (0, 1), (0, 1))["k"] == 1  # the largest attribute of τ: b (3 values)
    assert vm.teaching_matrices(TINY, (0, 2), ())["k"] == 0  # τ = ∅: the largest of γ (a tie: the first)
    np.testing.assert_array_equal(m["D"], [[1, -1, 0], [0, 1, -1]])
    n = 3  # (D⁺)_ij = 1[i <= j] − j/n (1-based)
    expect = np.array([[float(i <= j) - j / n for j in (1, 2)] for i in (1, 2, 3)])
    np.testing.assert_allclose(m["D+"], expect, atol=1e-12)
    np.testing.assert_allclose(m["D"] @ m["D+"], np.eye(2), atol=1e-12)
    assert m["R"].shape == (2, 12) and m["M"].shape == (6, 12)
    # A_{γ,τ} = (1/n_a) 1_a ⊗ D⁺_b (a ∈ γ\τ, b ∈ τ, c ∉ γ)
    np.testing.assert_allclose(m["A"], np.kron(np.ones((2, 1)) / 2, expect), atol=1e-12)
    z = np.array([1.5, -2.0])
    np.testing.assert_allclose(m["A"] @ z, R.residual_to_marginal(TINY, (0, 1), (1,), z), atol=1e-12)
    with pytest.raises(InputError, match="not a subset"):
        vm.teaching_matrices(TINY, (0,), (1,))
    with pytest.raises(InputError, match="at most 64"):
        vm.teaching_matrices(Domain(("a", "b", "c"), (4, 4, 5)), (0,), ())


def test_teaching_figures_are_labelled_heatmaps_of_the_matrices():
    figs = vm.teaching_figures(TINY, (0, 1), (0, 1))
    m = vm.teaching_matrices(TINY, (0, 1), (0, 1))
    assert set(figs) == {"D", "D+", "R", "A"}
    for key in figs:
        assert isinstance(figs[key], go.Figure) and figs[key].data[0].type == "heatmap"
        np.testing.assert_allclose(np.asarray(figs[key].data[0].z), m[key], atol=1e-12)
    np.testing.assert_array_equal(m["R"], np.kron(np.kron(R.dense_D(2), R.dense_D(3)), np.ones((1, 2))))
    assert list(figs["R"].data[0].x)[:3] == ["000", "001", "010"]  # universe cells by code, row-major
    assert list(figs["A"].data[0].y)[:2] == ["a=0, b=0", "a=0, b=1"]
    assert figs["D"].data[0].zmid == 0  # D has −1s: diverging scale of matrix_heatmap


def test_orthogonality_table_zero_off_the_diagonal():
    t = vm.orthogonality_table(TINY)
    norms = t.drop(columns="m_τ").to_numpy()
    assert norms.shape == (8, 8) and list(t.index)[:2] == ["∅", "{a}"] and t.index[-1] == "{a,b,c}"
    assert np.all(norms[~np.eye(8, dtype=bool)] == 0)  # exact: integer Kronecker factors
    assert np.all(np.diag(norms) > 0)
    assert t.loc["∅", "∅"] == 12  # R_∅ = 1ᵀ: ‖1ᵀ1‖ = n
    assert list(t["m_τ"]) == [1, 1, 2, 1, 2, 1, 2, 2]
    # Σ_{τ ⊆ [d]} m_τ = n (the residuals span the universe)
    assert t["m_τ"].sum() == 12
    fig = vm.orthogonality_figure(t)
    np.testing.assert_allclose(np.asarray(fig.data[0].z), norms)
    assert list(fig.data[0].x) == list(t.index)


# ---- download table -------------------------------------------------------------------------------
def test_marginals_long_table():
    series = {"true": {(0,): arr([1, 2]), (0, 1): np.arange(6.0)},
              "GReM-LNN": {(0,): arr([1.5, 2.5]), (0, 1): np.arange(6.0) + 1}}
    df = vm.marginals_long_table(DOM, series, CATS)
    assert list(df.columns) == ["marginal", "cell", "true", "GReM-LNN"] and len(df) == 8
    assert list(df["marginal"]) == ["sex"] * 2 + ["sex × cls"] * 6
    assert df["cell"].iloc[2] == "sex=f, cls=1" and df["cell"].iloc[7] == "sex=m, cls=3"
    np.testing.assert_allclose(df["GReM-LNN"], [1.5, 2.5, 1, 2, 3, 4, 5, 6])
    only = vm.marginals_long_table(DOM, series, cliques=[(0,)])
    assert len(only) == 2 and list(only["cell"]) == ["sex=0", "sex=1"]


def test_method_labels():
    assert vm.method_label("mle") == "GReM-MLE" and vm.method_label("mle", "mwem") == "EMP"
    assert vm.method_label("trunc-rescale", "mwem") == "Trunc+Rescale" and vm.method_label("other") == "other"


def test_method_error_table_words_not_none():
    t = pd.DataFrame({"method": ["mle", "lnn"], "l1": [2.0, 1.0], "l2": [0.5, 0.4], "negative_cells": [3, 0],
                      "negative_mass": [4.0, 0.0], "seconds": [0.01, 0.3], "analytic_variance": [12.5, np.nan]})
    view, helps = vm.method_error_table(t, {"mle": "GReM-MLE", "lnn": "GReM-LNN"}, baseline="mle")
    assert list(view.columns) == ["method", "|error| (ℓ1)", "ℓ1 ÷ GReM-MLE", "ℓ2 per cell",
                                  "negative cells", "negative mass", "variance σ²", "seconds"]
    assert list(view["variance σ²"]) == ["12.5", "no closed form"]
    assert list(view["ℓ1 ÷ GReM-MLE"]) == ["1", "0.5"]
    assert not view.isna().any().any() and set(helps) == set(view.columns) and all(helps.values())
    assert "ℓ1 ÷ GReM-MLE" not in vm.method_error_table(t)[0].columns  # no baseline: no ratio


def test_method_error_view_is_text_for_a_static_table():
    t = pd.DataFrame({"method": ["mle", "trunc"], "l1": [2.123456, 1.0], "l2": [0.5, 0.4],
                      "negative_cells": [1234, 0], "negative_mass": [4.0, 0.0], "seconds": [0.012345, 0.3],
                      "analytic_variance": [12.5, np.nan]})
    labels = {"mle": "GReM-MLE", "trunc": "Trunc", "lnn": "GReM-LNN"}
    view, helps = vm.method_error_view(t, labels, baseline="mle", waiting=["lnn"])
    assert list(view.columns) == list(vm.method_error_table(t, labels, baseline="mle")[0].columns)
    assert list(view["method"]) == ["GReM-MLE", "Trunc", "GReM-LNN"]  # the waiting method keeps its row
    assert list(view["|error| (ℓ1)"]) == ["2.123", "1", vm.NOT_IN_DRAW]
    assert list(view["negative cells"]) == ["1,234", "0", "—"] and list(view["seconds"]) == ["0.01235", "0.3", "—"]
    assert list(view["variance σ²"]) == ["12.5", "no closed form", "—"]
    cells = view.to_numpy().ravel()
    assert all(isinstance(c, str) and c and c.lower() not in ("none", "nan", "inf") for c in cells)
    assert set(helps) == set(view.columns) and all(helps.values())
    assert len(vm.method_error_view(t, labels)[0]) == 2  # nothing waiting: one row per method of the draw


def test_lnn_convergence_ticks_are_for_people():
    flat = [(100, 132.6096874499884279, -5.0), (200, 132.60968744998843, -2e-14), (300, 132.60968744998844, 0.0)]
    fig = vm.lnn_convergence_figure(flat)
    assert fig.layout.yaxis.tickformat == fig.layout.yaxis2.tickformat == vm.HUMAN_TICKS == ",.4~r"
    lo, hi = fig.layout.yaxis.range  # flat to the eye: a readable range around it, not 1e-13 wide
    assert lo < 132.5 < 132.7 < hi and hi - lo < 1
    np.testing.assert_array_equal(fig.data[1].y, [5.0, 0.0, 0.0])  # rounding noise (2e-14, "20f") drawn as 0
    assert fig.data[0].mode == "lines+markers" and fig.layout.xaxis2.tickformat == ",d"
    moving = vm.lnn_convergence_figure([(100, 10.0, -5.0), (200, 50.0, -1.0)])
    assert moving.layout.yaxis.range is None
