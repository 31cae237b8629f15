"""The Planner page plans a capability it has no widgets of its own for (the histogram) through the registry's
``plan_curves``/``plan_dots`` hooks alone, and the numbers match the planner's own."""

from __future__ import annotations

from dpviz.core.registry import hook
from dpviz.planner.curves import plan_target
from tests.apptest_helpers import plotly_charts, app_test, metrics, ok

PAGE = "pages/5_Planner.py"


def test_histogram_is_planned_on_the_page_by_its_hooks() -> None:
    at = ok(app_test(PAGE, timeout=120))
    assert "Histogram release" in at.radio(key="plan_cap").options  # its registry title
    ok(at.radio(key="plan_cap").set_value("histogram").run())
    (label, value), = [(k, v) for k, v in metrics(at).items() if k.startswith("Best: ")]
    expected = plan_target(hook("histogram", "plan_curves")({"data": "sample:education", "noise": "laplace"}), 5.0)
    assert label == f"Best: {expected[0].mechanism}" and value == expected[0].budget.describe
    assert any("error_chart" in c.proto.id for c in plotly_charts(at))
