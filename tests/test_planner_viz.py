"""dpviz.viz.planner: the Planner's figures, built from plain dicts without plotly.py's validation, stay valid
plotly figures (rebuilt here with validation) and draw what the page promises."""

import numpy as np
import plotly.graph_objects as go
import pytest

from dpviz.core.budget import Budget
from dpviz.planner import montecarlo, specs
from dpviz.planner.curves import plan_target, rmse_at_epsilon
from dpviz.planner.split import PlannedRelease, split_budget, what_if
from dpviz.stream.hooks import stream_curves
from dpviz.viz import planner as vp


def validated(fig: go.Figure) -> go.Figure:
    """The same figure rebuilt with plotly.py's validation (a bad property or value raises ValueError)."""
    out = go.Figure(fig.to_dict())
    assert out.to_plotly_json()["data"] and len(out.data) == len(fig.data)
    return out


@pytest.fixture(scope="module")
def curves():
    return stream_curves(16, metric="max", families=("laplace", "gaussian"))


def test_error_figure_is_valid_with_lines_dots_plans_target_and_best_strip(curves):
    grid = vp.epsilon_grid(0.05, 10.0)
    lap = [c for c in curves if c.family == "laplace"]
    dots = montecarlo.dots(lap[:2], 16, (0.5, 2.0), trials=2, seed=3, options={"horizon": 16, "metric": "max"})
    fig = validated(vp.error_figure(lap, grid, dots=dots, target=20.0, plans=plan_target(lap, 20.0)))
    modes = [t.mode for t in fig.data]
    assert modes.count("lines") == len(lap) and sum(t.error_y.array is not None for t in fig.data) == 1
    trace = next(t for t in fig.data if t.error_y.array is not None)  # both mechanisms' dots, one trace
    assert set(trace.text) == {c.mechanism for c in lap[:2]} and len(trace.text) == len(dots)
    assert len(set(trace.marker.color)) == 2  # each mechanism's dots in its line's colour
    assert fig.layout.xaxis.title.text == "ε" and fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log"
    kinds = [s.type for s in fig.layout.shapes]
    assert kinds[0] == "line" and fig.layout.shapes[0].y0 == 20.0 and "rect" in kinds  # target, best-by-ε strip
    assert any(a.text == "target 20" for a in fig.layout.annotations)
    gauss = [c for c in curves if c.family == "gaussian"]
    fig = validated(vp.error_figure(gauss, grid, axis="rho", target=20.0, plans=plan_target(gauss, 20.0)))
    assert fig.layout.xaxis.title.text == "ρ (zCDP)"
    validated(vp.error_figure(curves, grid, delta=1e-6, target=20.0, plans=plan_target(curves, 20.0, 1e-6)))


def test_split_and_what_if_figures_are_valid():
    rel = [PlannedRelease(n, specs.curve_for(specs.PRESETS[n][1], specs.PRESETS[n][2]), 1.0)
           for n in ("county-nodes", "flights")]
    for total in (Budget.approx(1.0, 1e-6), Budget.zcdp(0.1)):
        fig = validated(vp.split_figure(split_budget(rel, total)))
        assert fig.data[0].type == "bar" and len(fig.data[0].x) == 2 and fig.layout.yaxis.range[0] == 0
    frame = what_if(rel, [Budget.pure(float(x)) for x in np.geomspace(0.1, 10.0, 9)])
    fig = validated(vp.what_if_figure(frame, 2.0))
    assert len(fig.data) == 2 and fig.layout.shapes[0].x0 == 2.0 and fig.layout.xaxis.title.text == "total ε"


def test_rmse_at_epsilon_shares_one_rho_grid_and_matches_each_curve(curves):
    eps = np.geomspace(0.1, 5.0, 17)
    for c in curves:
        np.testing.assert_array_equal(rmse_at_epsilon(c, eps, 1e-6 if c.family == "gaussian" else None),
                                      c.rmse_at(eps, 1e-6 if c.family == "gaussian" else None))


def test_plans_view_names_mechanisms_in_words_with_no_none_and_readable_numbers():
    """The page's plans table: the mechanism in words (not its id), numbers to 4 significant digits, an empty cell
    where a number does not apply (a Laplace plan's ρ), plain headers in order."""
    from dpviz.planner.curves import plans_table

    plans = plan_target(stream_curves(1000, metric="max", families=("laplace", "gaussian")), 20.0, 1e-6)
    view, gaps = vp.plans_view(plans_table(plans).drop(columns=["delta"]))
    assert list(view.columns) == ["mechanism", "noise", "ε (simulation)", "ε (release)", "ρ", "error", "planned budget"]
    assert list(view["mechanism"]) == [p.label for p in plans] and gaps == ["rho"]
    cells = view.astype(str).to_numpy().ravel()
    assert not any(c in ("None", "nan", "NaN") for c in cells)
    laplace = [i for i, p in enumerate(plans) if p.family == "laplace"]
    assert laplace and all(view["ρ"].iloc[i] == "" for i in laplace)
    assert all(len(v.replace(".", "").lstrip("0")) <= 4 for v in view["ε (release)"])
