"""pages/5_Planner.py: AppTest layer (in-process) + one real-browser test (Playwright)."""

import re

import pytest
from playwright.sync_api import expect

from dpviz.stream.hooks import stream_curves
from dpviz.tree.hooks import tree_curves
from dpviz.planner.curves import plan_target
from tests.apptest_helpers import plotly_charts, app_test, metrics, ok, plotly_json
from tests.e2e_helpers import (
    metric_value,
    open_page,
    set_slider_keys,
    wait_idle,
    wait_plotly,
)

PAGE = "pages/5_Planner.py"


@pytest.fixture
def at():
    return ok(app_test(PAGE, timeout=120))


def best(at) -> tuple[str, str]:
    (label, value), = [(k, v) for k, v in metrics(at).items() if k.startswith("Best: ")]
    return label.removeprefix("Best: "), value


def chart(at, key: str) -> dict:
    i = next(i for i, c in enumerate(plotly_charts(at)) if key in c.proto.id)
    return plotly_json(at, i)


def dotted(fig: dict) -> list[str]:
    """The mechanisms with Monte-Carlo dots in an error chart (one trace holds every mechanism's dots, each named
    in its hover text), each once, in order."""
    return list(dict.fromkeys(name for t in fig["data"] if "error_y" in t for name in t["text"]))


def test_default_view_plans_the_county_tree_with_dots_and_a_split(at):
    from dpviz.tree.samples import load_county_sample

    plan = plan_target(tree_curves(load_county_sample().tree, query="range"), 50.0)[0]
    assert best(at) == (plan.mechanism, plan.budget.describe)
    table = at.table[0].value  # a static table: long names wrap, every column shows at 1280 px
    assert list(table["mechanism"])[0] == plan.label and len(table) == 4
    assert list(table.columns) == ["mechanism", "noise", "ε (simulation)", "ε (release)", "error", "planned budget"]
    fig = chart(at, "error_chart")
    lines = [t for t in fig["data"] if t.get("mode") == "lines"]
    assert len(lines) == 4 and len(dotted(fig)) == 4  # an analytic line and Monte-Carlo dots per mechanism
    assert sum("error_y" in t for t in fig["data"]) == 1  # every mechanism's dots in one trace
    planned = [t for t in fig["data"] if t.get("marker", {}).get("symbol") == "x"]
    assert len(planned) == 1 and len(planned[0]["x"]) == 4  # ... and every planned budget in one
    assert fig["layout"]["xaxis"]["type"] == "log" and fig["layout"]["xaxis"]["title"]["text"] == "ε"
    assert plotly_charts(at) and {"split_chart", "what_if_chart"} <= {
        k for c in plotly_charts(at) for k in ("split_chart", "what_if_chart") if k in c.proto.id}
    assert {"county-nodes: error", "flights: error", "adult-2way: error"} <= set(metrics(at))
    assert "Simulation — not a private release" in " ".join(i.value for i in at.info)


def test_stream_short_and_long_horizons_and_target(at):
    ok(at.radio(key="plan_cap").set_value("stream").run())
    ok(at.radio(key="plan_metric").set_value("mean").run())
    ok(at.number_input(key="plan_horizon").set_value(16).run())
    assert best(at)[0] == "naive"  # short streams: naive beats FDA
    ok(at.number_input(key="plan_horizon").set_value(4096).run())
    name, value = best(at)
    expected = plan_target(stream_curves(4096, metric="mean"), 20.0)[0]
    assert name == expected.mechanism == "kary" and value == expected.budget.describe  # the best pure-ε counter
    ok(at.number_input(key="plan_target_stream_mean").set_value(40.0).run())
    eps = float(best(at)[1].removeprefix("ε = "))
    assert eps == pytest.approx(expected.epsilon / 2, rel=1e-5)  # ε ∝ 1/target for Laplace


def test_gaussian_rho_and_both_families(at):
    ok(at.radio(key="plan_cap").set_value("stream").run())
    ok(at.radio(key="plan_noise").set_value("gaussian-rho").run())
    assert best(at)[1].startswith("ρ = ")
    assert chart(at, "error_chart")["layout"]["xaxis"]["title"]["text"] == "ρ (zCDP)"
    ok(at.radio(key="plan_noise").set_value("both").run())
    mechs = list(at.table[0].value["mechanism"])
    assert {"Naive (noisy increments)", "Square-root factorisation (Gaussian)",
            "Fenwick + FDA (optimal λ), Gaussian"} <= set(mechs)
    assert {"ε (release)", "ρ"} <= set(at.table[0].value.columns)


def test_marginals_and_graph_views(at):
    ok(at.radio(key="plan_cap").set_value("marginals").run())
    assert best(at)[0] == "rp" and best(at)[1].startswith("(ε, δ) = (")
    ok(at.selectbox(key="plan_marg_sample").set_value("titanic").run())
    ok(at.toggle(key="plan_dots_marginals").set_value(True).run())
    assert len(dotted(chart(at, "error_chart"))) == 1  # ResidualPlanner simulated; the release accounting has no simulation
    ok(at.radio(key="plan_cap").set_value("graph").run())
    name, value = best(at)
    assert name in {"drf-dp", "kdh", "quadtree"} and (value.startswith("ε ≈") or value == "not reached")
    fig = chart(at, "error_chart")
    assert any(t.get("line", {}).get("dash") == "dot" for t in fig["data"])  # Monte-Carlo curves


def test_likely_next_changes_are_warmed_so_their_first_change_simulates_nothing(at, monkeypatch):
    """After a run, the page warms (ui.prefetch, here run in place so an error would surface) the curves and dots
    of the other noise family, the other "Error of" and the next noise draw: those first changes then read every
    Monte-Carlo dot from the cache."""
    import threading

    from dpviz import ui
    from dpviz.planner import montecarlo

    calls = []
    real = montecarlo.dots
    for t in threading.enumerate():  # the first (tree) run's own warm-up, still in the background (niced): it
        if t.name.startswith("dpviz-prefetch-"):  # ends first, so the stream run below runs alone
            t.join(timeout=300)
            assert not t.is_alive(), f"{t.name} still warming after 300 s"
    monkeypatch.setattr(ui, "prefetch", lambda key, fn, *args: fn(*args))
    ok(at.radio(key="plan_cap").set_value("stream").run())  # warms stream (N = 181, Laplace, max) alternatives
    monkeypatch.setattr(ui, "prefetch", lambda *args: None)  # the next runs warm nothing more
    monkeypatch.setattr(montecarlo, "dots", lambda *a, **k: calls.append((k["seed"], k["delta"], k["options"], k["trials"], len(a[0]))) or real(*a, **k))
    seed = at.session_state["planner_seed"]
    ok(at.radio(key="plan_noise").set_value("gaussian-delta").run())
    ok(at.radio(key="plan_noise").set_value("laplace").run())
    ok(at.radio(key="plan_metric").set_value("mean").run())
    ok(at.radio(key="plan_metric").set_value("max").run())
    ok(at.button(key="new_draw").click().run())
    assert calls == [] and at.session_state["planner_seed"] != seed  # every dot was warmed; a new seed drawn
    assert len(dotted(chart(at, "error_chart"))) == 7  # one Monte-Carlo series per Laplace stream mechanism


def test_long_horizon_never_keeps_a_person_waiting(at):
    """Horizon 10⁶ with 20 trials per ε took 61 s per run: the dots are now estimated first (a few timed trials)
    and run with fewer trials, or not at all, with a warning; the analytic plan is shown at once."""
    import time

    ok(at.radio(key="plan_cap").set_value("stream").run())
    ok(at.select_slider(key="plan_trials_stream").set_value(20).run())
    t0 = time.perf_counter()
    ok(at.number_input(key="plan_horizon").set_value(1_000_000).run())
    elapsed = time.perf_counter() - t0
    warning = " ".join(w.value for w in at.warning)
    assert "with 20 trials per ε would take about" in warning and "python -m dpviz sweep stream" in warning
    assert elapsed < 60, elapsed
    expected = plan_target(stream_curves(1_000_000, metric="max"), 20.0)[0]
    assert best(at) == (expected.mechanism, expected.budget.describe)
    assert (not dotted(chart(at, "error_chart"))) == ("not run" in warning)


def test_graph_trials_are_bounded_by_the_estimate(at):
    ok(at.radio(key="plan_cap").set_value("graph").run())
    ok(at.selectbox(key="plan_graph_sample").set_value("netscience").run())
    ok(at.select_slider(key="plan_trials_graph").set_value(100).run())
    text = " ".join(w.value for w in at.warning) + " ".join(e.value for e in at.error)
    assert "with 100 trials per ε would take about" in text and "python -m dpviz sweep graph" in text


def test_what_if_total_moves_every_error(at):
    ok(at.multiselect(key="split_releases").set_value(["county-nodes", "flights"]).run())
    ok(at.radio(key="split_comp").set_value("pure").run())
    before = {k: float(v) for k, v in metrics(at).items() if k.endswith(": error")}
    ok(at.select_slider(key="split_total").set_value(2.0).run())
    after = {k: float(v) for k, v in metrics(at).items() if k.endswith(": error")}
    assert set(before) == {"county-nodes: error", "flights: error"}
    for k in before:  # MSE ∝ 1/ε² and the shares stay put: every error halves
        assert after[k] == pytest.approx(before[k] / 2, rel=2e-3)
    table = at.dataframe[-1].value
    assert table["epsilon"].sum() == pytest.approx(2.0)


def test_pure_total_with_a_gaussian_release_explains_and_still_splits_the_laplace_ones(at):
    """The default releases include adult-2way (Gaussian): a pure ε total showed a red error and no split. Now it
    says why that release has no pure ε share and splits the Laplace ones."""
    ok(at.radio(key="split_comp").set_value("pure").run())
    assert not at.error
    info = " ".join(i.value for i in at.info)
    assert "adult-2way uses Gaussian noise" in info and "no pure ε-DP guarantee" in info
    m = metrics(at)
    assert {"county-nodes: error", "flights: error"} <= set(m) and "adult-2way: error" not in m
    table = at.dataframe[-1].value
    assert list(table["name"]) == ["county-nodes", "flights"] and table["epsilon"].sum() == pytest.approx(1.0)
    assert {"split_chart", "what_if_chart"} <= {k for c in plotly_charts(at)
                                                for k in ("split_chart", "what_if_chart") if k in c.proto.id}
    ok(at.multiselect(key="split_releases").set_value(["adult-2way"]).run())
    assert "No chosen release uses Laplace noise" in " ".join(i.value for i in at.info) and not at.error
    assert not any("split_chart" in c.proto.id for c in plotly_charts(at))
    ok(at.radio(key="split_comp").set_value("zcdp").run())
    assert not at.error and "adult-2way: error" in metrics(at)


def test_tables_show_no_none_and_gaps_are_explained(at):
    """(ε, δ) total with a Gaussian release: its ε cell was "None"; now empty, with a footnote."""
    table = at.dataframe[-1].value
    eps = list(table["epsilon"])
    assert eps[-1] == "" and all(e != "" for e in eps[:-1]) and "None" not in eps
    assert any("εᵢ empty" in c.value for c in at.caption)
    import json

    config = json.loads(at.dataframe[-1].proto.columns)  # a number column would draw the empty cell as "None"
    assert config["epsilon"]["type_config"]["type"] == "text" and config["rho"]["type_config"]["type"] == "number"
    ok(at.radio(key="plan_noise").set_value("both").run())
    shown = at.table[0].value.astype(str).to_numpy().ravel()
    assert "" in shown  # a Laplace plan's ρ: an empty cell (a footnote says why)
    assert not any(v in ("None", "nan") for v in shown)
    ok(at.radio(key="plan_cap").set_value("graph").run())
    graph = at.dataframe[0].value
    assert list(graph.columns) == ["mechanism", "ε for the target"]
    assert all(v == "not reached" or float(v) > 0 for v in graph["ε for the target"])


def test_what_if_covers_the_whole_slider_with_readable_ticks(at):
    ok(at.radio(key="split_comp").set_value("pure").run())
    ok(at.select_slider(key="split_total").set_value(5.0).run())
    fig = chart(at, "what_if_chart")
    lines = [t for t in fig["data"] if t.get("mode") == "lines"]
    from tests.apptest_helpers import decode_plotly_array

    for t in lines:  # every curve spans the slider's range 0.1 .. 10, not total/10 .. total·10
        x = decode_plotly_array(t["x"])
        assert x.min() == pytest.approx(0.1) and x.max() == pytest.approx(10.0)
    xa = fig["layout"]["xaxis"]
    assert xa["ticktext"] == ["0.1", "0.2", "0.5", "1", "2", "5", "10"]
    assert fig["layout"]["shapes"][0]["x0"] == 5.0  # the current total
    import math

    # labels of lines on log axes sit at log10 of the value (add_vline/add_hline's own sat at 10^value: off-chart)
    (label,) = [a for a in fig["layout"]["annotations"] if a["text"] == "total ε = 5"]
    assert label["x"] == pytest.approx(math.log10(5.0))
    (target,) = [a for a in chart(at, "error_chart")["layout"]["annotations"] if a["text"] == "target 50"]
    assert target["y"] == pytest.approx(math.log10(50.0)) and target["yref"] == "y"


def test_uploaded_files_are_planned(at, tmp_path):
    """Every capability plans an uploaded file, read from bytes by the capability page's reader."""
    from dpviz.tree.io import load_tree_file
    from tests.apptest_helpers import ROOT, upload_bytes

    data = ROOT / "tests" / "data"
    raw = (data / "tree_good.csv").read_bytes()
    ok(at.radio(key="plan_source_tree").set_value("upload").run())
    upload_bytes(at, "plan_upload_file_tree", "tree_good.csv", raw)
    tree = load_tree_file(raw, name="tree_good.csv").tree
    assert best(at) == (lambda p: (p.mechanism, p.budget.describe))(plan_target(tree_curves(tree, query="range"),
                                                                                50.0)[0])
    upload_bytes(at, "plan_upload_file_tree", "bad.csv", (data / "tree_bad_cycle.csv").read_bytes())
    assert any("bad.csv was rejected" in e.value for e in at.error)
    assert "planning a bundled sample" in " ".join(c.value for c in at.caption)

    ok(at.radio(key="plan_cap").set_value("stream").run())
    ok(at.radio(key="plan_metric").set_value("mean").run())
    ok(at.radio(key="plan_source_stream").set_value("upload").run())
    upload_bytes(at, "plan_upload_file_stream", "stream_good.csv", (data / "stream_good.csv").read_bytes())
    assert any("Horizon N = 20 " in c.value for c in at.caption)
    assert best(at) == (lambda p: (p.mechanism, p.budget.describe))(plan_target(stream_curves(20, metric="mean"),
                                                                                20.0)[0])

    ok(at.radio(key="plan_cap").set_value("marginals").run())
    ok(at.radio(key="plan_source_marginals").set_value("upload").run())
    upload_bytes(at, "plan_upload_file_marginals", "people.csv", (data / "marginals_good.csv").read_bytes())
    assert best(at)[0] == "rp" and not at.error

    ok(at.radio(key="plan_cap").set_value("graph").run())
    ok(at.radio(key="plan_source_graph").set_value("upload").run())
    edges = "\n".join(f"{i},{j}" for i in range(12) for j in range(i + 1, 12) if (i + j) % 3 == 0).encode()
    upload_bytes(at, "plan_upload_file_graph", "small.csv", edges)
    assert not at.error and best(at)[0] in {"drf-dp", "kdh", "quadtree"}
    assert "sweep graph FILE" in " ".join(w.value for w in at.warning) or not at.warning


def test_banner_names_no_release_panel_on_this_page(at):
    text = " ".join(i.value for i in at.info)
    assert "Simulation — not a private release" in text and "Private release** below" not in text
    assert "This page publishes nothing" in text
    assert [e.label for e in at.expander][0] == "What am I looking at?"
    assert not any("longest Monte-Carlo work" in m.value for m in at.markdown)  # no stray text above the title


# ---- real browser --------------------------------------------------------------------------------------------


def test_a_new_seed_redraws_the_split_only_when_a_split_release_depends_on_it():
    """The first section is a fragment: a new noise seed reruns the whole page (the split section too) only when
    a planned release of the split is Monte-Carlo (its curve moves with the seed); analytic ones never move."""
    from dpviz.ui.planner import split_drawn, split_stale

    analytic = split_drawn(["county-nodes", "flights", "adult-2way"], 11)
    assert analytic == (("county-nodes", "flights", "adult-2way"), (0, 0, 0))
    assert not split_stale(analytic, 12) and not split_stale(analytic, 11)
    graph = split_drawn(["county-nodes", "karate-cuts"], 11)
    assert graph[1] == (0, 11)
    assert split_stale(graph, 12) and not split_stale(graph, 11)
    assert not split_stale(None, 12) and not split_stale(graph, None)  # nothing drawn yet, or no seed yet


def test_the_split_section_records_what_it_drew(at):
    """What accuracy_section compares a new seed with: the split section's releases and their seeds, kept in
    the session by every run of the split section (analytic releases: seed 0 whatever the page's seed)."""
    drawn = (("county-nodes", "flights", "adult-2way"), (0, 0, 0))
    assert at.session_state["planner_split_drawn"] == drawn
    seed = at.session_state["planner_seed"]
    ok(at.multiselect(key="split_releases").set_value(["flights", "county-nodes"]).run())
    assert at.session_state["planner_split_drawn"] == (("flights", "county-nodes"), (0, 0))
    ok(at.button(key="new_draw").click().run())
    assert at.session_state["planner_seed"] != seed
    assert at.session_state["planner_split_drawn"] == (("flights", "county-nodes"), (0, 0))


def test_a_single_bundled_sample_is_named_not_offered_in_a_picker(at):
    """The tree has one bundled sample: the page names it instead of a drop-down with nothing else to pick (the
    browser bench could not change such a picker: its only option is the selected one)."""
    from dpviz.core.registry import capability

    (only,) = capability("tree").samples
    assert not [s for s in at.selectbox if s.key == "plan_tree_sample"]
    assert any(only.title in m.value and "bundled sample" in m.value for m in at.markdown)
    ok(at.radio(key="plan_cap").set_value("marginals").run())
    assert [s.key for s in at.selectbox if s.key == "plan_marg_sample"] == ["plan_marg_sample"]


def test_browser_planner_what_if_slider(page, streamlit_server):
    import time

    open_page(page, streamlit_server, "Planner", timeout=120_000)  # first run: imports + Monte-Carlo dots
    wait_plotly(page, 3, timeout=120_000)
    expect(page.get_by_text(re.compile(r"^Best: gmc/geometric"))).to_be_visible()
    expect(page.get_by_text("Simulation — not a private release.")).to_be_visible()
    main = page.locator("[data-testid=stMain]")
    for word in ("None", "nan", "Infinity"):  # visible text (the tables are canvases: checked in AppTest)
        expect(main.get_by_text(re.compile(rf"\b{word}\b"))).to_have_count(0)
    expect(main.get_by_text("Private release** below")).to_have_count(0)
    flights = metric_value(page, "flights: error")
    expect(flights).to_have_text(re.compile(r"^\d"))
    f0 = float(flights.inner_text())
    label = "What if the total ε were …"
    t0 = time.perf_counter()
    set_slider_keys(page, label, "ArrowRight", 1)  # 1 -> 1.5
    expect(flights).not_to_have_text(str(f0))
    wait_idle(page)
    print(f"Planner total move, key press -> repainted: {time.perf_counter() - t0:.2f} s")
    expect(page.get_by_role("slider", name=label)).to_have_attribute("aria-valuetext", "1.5")
    assert float(flights.inner_text()) < f0
    page.get_by_text("pure ε total (basic composition)").click()
    expect(page.get_by_text(re.compile("adult-2way uses Gaussian noise"))).to_be_visible()
    wait_idle(page)
    expect(page.locator("[data-testid=stAlertContentError]")).to_have_count(0)
    expect(page.locator("[data-testid=stException]")).to_have_count(0)
