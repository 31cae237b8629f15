"""pages/4_Graph.py: AppTest layer (in-process) + one real-browser test (Playwright)."""

import json
import re

import numpy as np
import pytest
from playwright.sync_api import expect

from dpviz.core.registry import PAGE_SKELETON, capability
from dpviz.graph import METHODS, NOT_PRIVATE_LABEL
from dpviz.graph.samples import load_graph_sample
from dpviz.graph.io import read_edges
from dpviz.viz.graph import MEASURES, METHOD_SHORT, TIME_ROW, method_label
from tests.apptest_helpers import plotly_charts, app_test, decode_plotly_array, input_error_message, metrics, ok, plotly_json, \
    upload_bytes
from tests.e2e_helpers import metric_value, open_page, set_slider_keys, wait_idle, wait_plotly

PAGE = "pages/4_Graph.py"
GOOD = b"source,target\nalice,bob\nbob,carol\ncarol,alice\ncarol,dave\ndave,erin\nerin,alice\nbob,alice\n"
BAD = b"u,v\n1,2\n3\n4,5\n"  # line 3 has one field


SEED = 20_240_613


@pytest.fixture
def at():
    return ok(app_test(PAGE, session_state={"graph_seed": SEED}))  # a fixed simulation seed: reproducible


def metrics_table(at):
    tables = [d.value for d in at.dataframe if "measure" in d.value.columns]
    return tables[0] if tables else None


def measure_row(table, key: str) -> dict:
    """method header -> the number shown for measure ``key`` of dpviz.viz.graph.MEASURES (or "time")."""
    name = TIME_ROW if key == "time" else MEASURES[key][0]
    row = table[table["measure"].str.startswith(name.split(" (")[0])]
    assert len(row) == 1, (key, list(table["measure"]))
    return {c: float(str(v).replace(",", "")) for c, v in row.iloc[0].drop("measure").items()}


def budget_table(at):
    return next(d.value for d in at.dataframe if "sub-budget" in d.value.columns)


def release_tables(at) -> list:
    return [d.value for d in at.dataframe if list(d.value.columns) == ["u", "v"]]


def chart(at, key: str) -> dict:
    figs = [plotly_json(at, i) for i, c in enumerate(plotly_charts(at)) if c.proto.id.endswith(key)]
    assert len(figs) == 1, f"{key}: {len(figs)} charts"
    return figs[0]


LEFT, RIGHT = "graph_view_left", "graph_view_right"  # the inspect view's two charts (both views draw there)


def title(at, key: str) -> str:
    return chart(at, key)["layout"]["title"]["text"]


def chart_keys(at) -> set[str]:
    return {c.proto.id.rsplit("-", 1)[-1] for c in plotly_charts(at)}


def upload_graph(at, name="friends.csv", raw=GOOD):
    if at.radio(key="graph_source").value != "upload":
        ok(at.radio(key="graph_source").set_value("upload").run())
    return upload_bytes(at, "graph_upload_file", name, raw)


# ---- default load ---------------------------------------------------------------------------------
def test_default_load_karate_all_methods(at):
    assert [h.value.split(" ", 1)[-1] for h in at.subheader] == list(PAGE_SKELETON)
    m = metrics(at)
    assert (m["Vertices |V|"], m["Edges |E|"]) == ("34", "78")
    banner = [i.value for i in at.info if "Simulation — not a private release" in i.value]
    assert len(banner) == 1 and capability("graph").unit_of_privacy in banner[0]
    table = metrics_table(at)  # one row per measure, one column per method: fits at 1280 px
    assert list(table.columns) == ["measure"] + [METHOD_SHORT[k] for k in METHODS]
    assert "not DP" in METHOD_SHORT["drf"] and any(NOT_PRIVATE_LABEL in c.value and "DRF (not DP)" in c.value
                                                  for c in at.caption)
    assert table["measure"].iloc[0] == "Edges released (true graph: 78)"
    assert list(table["measure"].iloc[1:-1]) == [v[0] for k, v in MEASURES.items() if k != "n_edges_released"]
    assert table["measure"].iloc[-1] == TIME_ROW
    assert np.all(np.isfinite(list(measure_row(table, "degree_kl").values())))
    assert not table.isin(["None", "nan", "inf"]).any().any()
    assert any(NOT_PRIVATE_LABEL in w.value for w in at.warning)  # drf is selected: the warning is shown
    assert "graph_budget_chart" not in chart_keys(at)  # the table's share bars say it: one figure fewer
    # one step at a time (issue 19: fewer charts per ε move): Steps 2-4 by default, Step 1 on its view
    assert {"graph_degree_chart", LEFT, RIGHT} <= chart_keys(at) and "graph_labelling_chart" not in chart_keys(at)
    assert "decomposition (Step 2)" in title(at, LEFT) and "Reconstructed adjacency" in title(at, RIGHT)
    ok(at.radio(key="graph_view").set_value("relabel").run())  # the same two charts, Step 1's figures in them
    assert {LEFT, RIGHT} <= chart_keys(at) and "graph_labelling_chart" not in chart_keys(at)
    assert "True adjacency, input order" in title(at, LEFT) and "relabelled by drf-dp" in title(at, RIGHT)
    ok(at.toggle(key="graph_show_labelling").set_value(True).run())  # Step 1's q(L) history waits for its toggle
    assert "graph_labelling_chart" in chart_keys(at)
    # the degree chart: the true distribution first, then one series per method
    names = [t["name"] for t in chart(at, "graph_degree_chart")["data"]]
    assert names == ["true"] + [method_label(k) for k in METHODS]
    # the input-order adjacency is the true 0/1 matrix (karate: the labelled heatmap)
    g = load_graph_sample("karate")
    z = np.asarray(decode_plotly_array(chart(at, LEFT)["data"][0]["z"]), float)
    assert z.sum() == 2 * g.n_edges and np.all(z[g.edges[:, 0], g.edges[:, 1]] == 1)
    # accounting of the inspected drf-dp: sums to ε, the relabelling gets 3/13 of it
    budget = budget_table(at)
    assert budget["ε"].iloc[-1] == pytest.approx(1.0) and budget["ε"].iloc[:-1].sum() == pytest.approx(1.0)
    assert budget.loc[budget["sub-budget"] == "relabel (noisy degrees)", "ε"].item() == pytest.approx(3 / 13)
    labels = [b.proto.label for b in at.get("download_button")]
    assert "Simulated release of drf-dp (CSV edge list, original labels)" in labels
    assert "Its partition (JSON)" in labels and not release_tables(at) and not at.error


# ---- widgets --------------------------------------------------------------------------------------
def test_epsilon_split_and_method_selection(at):
    first = metrics_table(at)
    ok(at.select_slider(key="graph_epsilon").set_value(50.0).run())
    second = metrics_table(at)
    assert measure_row(second, "n_edges_released") != measure_row(first, "n_edges_released")
    budget = budget_table(at)
    assert budget["ε"].iloc[-1] == pytest.approx(50.0)
    ok(at.select_slider(key="graph_split_r").set_value(10).run())  # 3 : 7 : 10
    budget = budget_table(at)
    assert budget.loc[budget["sub-budget"] == "relabel (noisy degrees)", "ε"].item() == pytest.approx(50 * 10 / 20)
    # a fixed seed reproduces the draw; kdh does not take the split, so its row is unchanged
    assert metrics_table(at)["kd-hybrid"].tolist() == second["kd-hybrid"].tolist()
    assert metrics_table(at)["DRF-DP"].tolist() != second["DRF-DP"].tolist()
    ok(at.multiselect(key="graph_methods").set_value(["drf-dp", "kdh"]).run())
    assert list(metrics_table(at).columns) == ["measure", "DRF-DP", "kd-hybrid"]
    assert not any(NOT_PRIVATE_LABEL in w.value for w in at.warning)  # drf no longer on the page
    ok(at.selectbox(key="graph_inspect").set_value("degree").run())
    assert LEFT not in chart_keys(at) and "Reconstructed adjacency" in title(at, RIGHT)
    assert any("no spatial decomposition" in i.value for i in at.info)
    assert budget_table(at)["sub-budget"].tolist()[0] == "degrees"
    ok(at.multiselect(key="graph_methods").set_value([]).run())
    assert metrics_table(at) is None and any("at least one method" in w.value for w in at.warning)


def test_depth_slider_steps_through_the_decomposition(at):
    depth = at.slider(key="graph_depth")
    assert depth.value == 2 and depth.max >= 2
    titles = {}
    for d in range(int(depth.max) + 1):
        ok(at.slider(key="graph_depth").set_value(d).run())
        fig = chart(at, LEFT)
        titles[d] = fig["layout"]["title"]["subtitle"]["text"]
        assert f"depth {d}: " in titles[d]
    assert "depth 0: 1 regions" in titles[0]
    z0 = np.asarray(decode_plotly_array(chart(at, LEFT)["data"][0]["z"]), float)
    ok(at.slider(key="graph_depth").set_value(0).run())
    z1 = np.asarray(decode_plotly_array(chart(at, LEFT)["data"][0]["z"]), float)
    assert np.nanstd(z1) == 0 and np.nanstd(z0) > 0  # the root is one colour; the leaves are not
    ok(at.selectbox(key="graph_inspect").set_value("random").run())  # one region: slider disabled
    assert at.slider(key="graph_depth").disabled


def partition_z(at):
    return np.asarray(decode_plotly_array(chart(at, LEFT)["data"][0]["z"]), float)


def test_chosen_depth_is_kept_when_epsilon_moves(at):
    """The defect: a new ε gives a tree of another depth, Streamlit then drops the slider's state and the
    view fell back to depth 0 (one rectangle) for good. The reader's depth must survive every ε move."""
    tops = {}
    for eps in (50.0, 0.05, 1.0):  # the tree depth h_max (Eq. 3) grows with ε
        ok(at.select_slider(key="graph_epsilon").set_value(eps).run())
        tops[eps] = int(at.slider(key="graph_depth").max)
    assert tops[50.0] > tops[1.0] >= 2 and tops[0.05] < tops[50.0]
    ok(at.select_slider(key="graph_epsilon").set_value(50.0).run())
    deepest = tops[50.0]
    ok(at.slider(key="graph_depth").set_value(deepest).run())
    z_deep = partition_z(at)
    ok(at.select_slider(key="graph_epsilon").set_value(20.0).run())  # one step down: the same depth if possible
    top20 = int(at.slider(key="graph_depth").max)
    assert at.slider(key="graph_depth").value == min(deepest, top20) > 0
    ok(at.select_slider(key="graph_epsilon").set_value(0.05).run())  # a shallower tree: clamped, not reset
    assert at.slider(key="graph_depth").value == min(deepest, tops[0.05])
    ok(at.select_slider(key="graph_epsilon").set_value(50.0).run())  # back: the reader's depth again
    assert at.slider(key="graph_depth").value == deepest
    assert f"depth {deepest}: " in chart(at, LEFT)["layout"]["title"]["subtitle"]["text"]
    np.testing.assert_array_equal(partition_z(at), z_deep)  # the cached figure of (ε, seed, depth)
    ok(at.slider(key="graph_depth").set_value(1).run())
    ok(at.select_slider(key="graph_epsilon").set_value(20.0).run())
    assert at.slider(key="graph_depth").value == 1


def test_every_view_follows_epsilon(at):
    before = {k: chart(at, k)["data"] for k in ("graph_degree_chart", LEFT, RIGHT)}
    ok(at.select_slider(key="graph_epsilon").set_value(5.0).run())
    for key, data in before.items():
        assert chart(at, key)["data"] != data, key
    ok(at.radio(key="graph_view").set_value("relabel").run())
    ok(at.toggle(key="graph_show_labelling").set_value(True).run())
    before = {k: chart(at, k)["data"] for k in (LEFT, RIGHT, "graph_labelling_chart")}
    ok(at.select_slider(key="graph_epsilon").set_value(1.0).run())
    for key in (RIGHT, "graph_labelling_chart"):
        assert chart(at, key)["data"] != before[key], key
    assert chart(at, LEFT)["data"] == before[LEFT]  # the true graph: no ε in it


def test_figures_are_light_and_titles_clear_the_axes(at):
    """Small enough to redraw on every ε step; the title sits in the top margin and the column axis at the
    bottom, so no title collides with an axis title; the 0/1 matrix says "edge" / "no edge"."""
    for c in plotly_charts(at):
        assert len(c.proto.spec) < 120_000, c.proto.id
    part = chart(at, LEFT)
    released = chart(at, RIGHT)
    ok(at.radio(key="graph_view").set_value("relabel").run())
    for fig in (chart(at, LEFT), chart(at, RIGHT), released):
        assert fig["layout"]["xaxis"].get("side", "bottom") == "bottom"
        assert fig["layout"]["title"]["yref"] == "container"
        heat = fig["data"][0]
        assert heat["colorbar"]["ticktext"] == ["no edge", "edge"] and "texttemplate" not in heat
    assert part["layout"]["xaxis"].get("side", "bottom") == "bottom"
    assert "released edges" in part["data"][0]["colorbar"]["title"]["text"]
    assert any("What am I looking at?" in e.proto.label for e in at.expander)
    text = next(m.value for m in at.markdown if "What drf-dp changes" in m.value)
    assert all(s in text for s in ("Alg. 1", "Alg. 2", "Eq. 1", "Eq. 3", "Eq. 6", "Step 4", "upper triangle"))


# ---- data upload ----------------------------------------------------------------------------------
def test_new_noise_draw_is_computed_ahead_and_its_click_computes_nothing(monkeypatch):
    """After a run the page computes the next "New noise draw" (the seed ui.sections.next_seed drew for it) in the
    background (ui.precompute, here run in place): every method's release and metrics and the shown charts. The
    click then takes that very seed and finds everything cached: no release, no metric, no figure is built."""
    from dpviz import ui
    from dpviz.graph import metrics as graph_metrics, release as graph_release
    from dpviz.viz import graph as viz_graph

    monkeypatch.setattr(ui, "precompute", lambda key, fn, *args: fn(*args))
    at = ok(app_test(PAGE, session_state={"graph_seed": SEED}))
    ahead = at.session_state["graph_next_seed"]
    assert ahead != SEED
    calls = []
    monkeypatch.setattr(ui, "precompute", lambda *args: None)  # the click's own run warms nothing more
    for module, names in ((graph_release, ("release",)), (graph_metrics, ("evaluate",)),
                          (viz_graph, ("degree_figure", "adjacency_figure", "partition_figure"))):
        for name in names:
            real = getattr(module, name)
            monkeypatch.setattr(module, name, lambda *a, _n=name, _f=real, **k: calls.append(_n) or _f(*a, **k))
    ok(at.button(key="new_draw").click().run())
    assert at.session_state["graph_seed"] == ahead and at.session_state["graph_next_seed"] != ahead
    assert calls == [] and metrics_table(at) is not None and len(plotly_charts(at)) >= 3
    ok(at.button(key="new_draw").click().run())  # not warmed this time: the same page computes it
    assert {"release", "evaluate", "degree_figure"} <= set(calls)


def test_upload_good_then_malformed_clears_the_earlier_upload(at):
    ok(at.radio(key="graph_view").set_value("relabel").run())  # the input adjacency is on Step 1's view
    ok(at.radio(key="graph_source").set_value("upload").run())
    assert any("still showing karate" in i.value for i in at.info) and metrics(at)["Vertices |V|"] == "34"
    upload_graph(at)
    m = metrics(at)
    assert (m["Vertices |V|"], m["Edges |E|"]) == ("5", "6") and not at.error
    assert any("duplicate" in c.value or "both directions" in c.value for c in at.caption)  # bob,alice again
    z = chart(at, LEFT)["data"][0]
    assert list(z["x"]) == ["alice", "bob", "carol", "dave", "erin"]  # original labels on the axes
    upload_graph(at, "bad.csv", BAD)
    expected = input_error_message(read_edges, BAD, name="bad")
    (error,) = [e.value for e in at.error]
    assert error.startswith("bad.csv was rejected: " + expected) and "line 3" in expected
    # ui.handle_upload drops the earlier upload's results (issue 19): the page falls back to karate, says so
    assert metrics(at)["Vertices |V|"] == "34" and any("still showing karate" in i.value for i in at.info)
    assert metrics_table(at) is not None and metrics_table(at)["measure"].iloc[0].endswith("(true graph: 78)")


def test_bad_first_upload_keeps_karate(at):
    upload_graph(at, "empty.csv", b"")
    assert at.error and "empty" in at.error[0].value
    assert metrics(at)["Vertices |V|"] == "34" and metrics_table(at) is not None


# ---- audit ----------------------------------------------------------------------------------------
def test_audit_panel_runs_and_shows_the_violation_of_published_drf(at):
    ok(at.selectbox(key="graph_audit_method").set_value("drf").run())
    ok(at.select_slider(key="graph_audit_trials").set_value(100).run())
    assert any("Press **Run the audit**" in c.value for c in at.caption)
    ok(at.button(key="graph_audit_run").click().run())
    m = metrics(at)
    assert m["Trials per input"] == "100" and m["Claimed ε"] == "1"
    result = at.session_state["graph_audit"][1]
    assert not result.consistent and result.epsilon_lower > 1.0  # published DRF: the claim is refuted
    assert float(m["ε lower bound (95%)"]) == pytest.approx(result.epsilon_lower, abs=1e-3)
    table = next(d.value for d in at.dataframe if "ε lower bound" in d.value.columns)
    assert len(table) == 2 and table["n"].tolist() == [r.n for r in result.events]
    verdict = [e.value for e in at.error if e.value.startswith(("VIOLATION", "CONSISTENT"))] + \
              [s.value for s in at.success if s.value.startswith("CONSISTENT")]
    assert verdict == [result.verdict]
    assert "graph_audit_chart" in chart_keys(at)
    ok(at.select_slider(key="graph_audit_epsilon").set_value(2.0).run())  # other settings: result dropped
    assert "graph_audit_chart" not in chart_keys(at) and any("settings changed" in c.value for c in at.caption)


# ---- private release ------------------------------------------------------------------------------
def test_private_release_draws_fresh_drf_dp_output_without_truth(at):
    g = load_graph_sample("karate")
    ok(at.button(key="graph_release_button").click().run())
    (first,) = release_tables(at)
    true_set = set(map(tuple, g.edges.tolist()))
    released = set(map(tuple, first[["u", "v"]].to_numpy().tolist()))
    assert released and released != true_set and all(u < v for u, v in released)
    success = at.success[-1].value
    assert success.startswith(f"Private release ready: {len(first)} rows") and "discrete Laplace" in success
    settings, _, meta = at.session_state["graph_private_release"]
    assert meta["mode"] == "release" and meta["method"] == "drf-dp" and sum(meta["budget"].values()) == \
        pytest.approx(1.0)
    assert meta["n_edges_released"] == len(first) and "n_edges" not in meta  # no true edge count
    assert not any("true" in str(k).lower() for k in meta)
    labels = [b.proto.label for b in at.get("download_button")]
    assert {"Download the release (CSV)", "Download its description (JSON)",
            "Download the released partition (JSON)"} <= set(labels)
    part = json.loads(at.session_state["graph_release_partition"][1])
    assert part["method"] == "drf-dp" and part["mode"] == "release" and sorted(part["order"]) == list(range(34))
    ok(at.button(key="graph_release_button").click().run())  # a second click: fresh noise
    (second,) = release_tables(at)
    assert set(map(tuple, second[["u", "v"]].to_numpy().tolist())) != released
    ok(at.select_slider(key="graph_epsilon").set_value(2.0).run())  # other settings: the release is dropped
    assert not release_tables(at)
    assert "Download the released partition (JSON)" not in [b.proto.label for b in at.get("download_button")]


# ---- real browser ---------------------------------------------------------------------------------
def test_browser_graph_page_renders(page, streamlit_server):
    open_page(page, streamlit_server, "Graph")
    for name in PAGE_SKELETON:
        expect(page.get_by_role("heading", name=re.compile(rf"{name}$"))).to_be_visible()
    expect(metric_value(page, "Vertices |V|")).to_have_text("34")
    expect(metric_value(page, "Edges |E|")).to_have_text("78")
    charts = wait_plotly(page, 3, timeout=60_000)  # degree, decomposition, reconstruction (Step 1 on its own view)
    expect(charts.filter(has_text="Degree distribution")).to_have_count(1)
    expect(charts.filter(has_text="decomposition")).to_have_count(1)
    expect(page.locator("[data-testid=stDataFrame]")).not_to_have_count(0)
    expect(page.get_by_text(NOT_PRIVATE_LABEL).first).to_be_visible()
    expect(page.get_by_role("button", name="Run the audit")).to_be_visible()
    expect(page.get_by_role("button", name="Draw a private release")).to_be_visible()
    wait_idle(page)
    expect(page.locator("[data-testid=stException]")).to_have_count(0)
    # the defect: the depth fell back to 0 (one rectangle) after an ε move; the reader's depth is kept
    set_slider_keys(page, "Privacy budget ε", "End")  # ε = 50: the deepest tree of the ε range
    expect(page.get_by_text("at ε = 50").first).to_be_attached(timeout=60_000)
    wait_idle(page, 60_000)
    box = page.locator("[data-testid=stSlider]").filter(has_text="Depth of the decomposition")
    depth = page.get_by_role("slider", name="Depth of the decomposition")
    depth.focus()
    depth.press("End")
    top = box.locator("[data-testid=stSliderTickBar]").inner_text().split()[-1]
    expect(box.locator("[data-testid=stSliderThumbValue]")).to_have_text(top)
    expect(charts.filter(has_text=f"depth {top}: ")).to_have_count(1, timeout=30_000)
    wait_idle(page)
    set_slider_keys(page, "Privacy budget ε", "ArrowLeft")  # ε = 20: a tree at most as deep
    expect(page.get_by_text("at ε = 20").first).to_be_attached(timeout=60_000)
    wait_idle(page, 60_000)
    shown = int(box.locator("[data-testid=stSliderThumbValue]").inner_text())
    assert 0 < shown == min(int(top), int(box.locator("[data-testid=stSliderTickBar]").inner_text().split()[-1]))
    set_slider_keys(page, "Privacy budget ε", "ArrowRight")  # back to 50: the chosen depth again
    expect(page.get_by_text("at ε = 50").first).to_be_attached(timeout=60_000)
    wait_idle(page, 60_000)
    expect(box.locator("[data-testid=stSliderThumbValue]")).to_have_text(top)
    expect(charts.filter(has_text=f"depth {top}: ")).to_have_count(1)
