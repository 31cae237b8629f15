"""pages/1_Tree.py: AppTest layer (in-process) + real-browser tests (Playwright)."""

import re

import numpy as np
import pytest
from playwright.sync_api import expect

from dpviz.errors import InputError
from dpviz.tree.io import load_tree_file
from tests.apptest_helpers import ROOT, app_test, plotly_json, plotly_z
from tests.e2e_helpers import open_page, set_slider_keys, upload, wait_idle, wait_plotly

PAGE = "pages/1_Tree.py"
DATA = ROOT / "tests" / "data"
BAD_FILES = ["tree_bad_cycle.csv", "tree_bad_unknown_parent.csv", "tree_bad_negative.csv",
             "tree_bad_mismatch.csv", "tree_bad_empty.csv"]


def metrics(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def ok(at):
    assert not at.exception, at.exception
    return at


@pytest.fixture
def at():
    return ok(app_test(PAGE))


def upload_file(at, name: str):
    at.file_uploader(key="upload").upload(name, (DATA / name).read_bytes(), "text/csv")
    return ok(at.run())


def validator_message(name: str) -> str:
    with pytest.raises(InputError) as exc:
        load_tree_file((DATA / name).read_bytes(), name=name)
    return str(exc.value)


def test_loads_bundled_county_tree(at):
    m = metrics(at)
    assert m["Nodes n"] == "3,207" and m["Height h"] == "5"
    assert float(m["GMC rmse_NQ"]) < float(m["Processless rmse_NQ"])
    assert len(at.get("plotly_chart")) == 6  # tree, error by level, methods, G, G^-1, propagation
    assert not at.error
    assert at.get("download_button")[0].proto.label.startswith("Released tree (CSV")
    tree_trace = plotly_json(at, 0)["data"][0]
    assert tree_trace["type"] == "icicle"
    # the release table has every method with Theorem 5 next to the empirical error
    df = at.dataframe[0].value
    assert len(df) == 6 and {"total sq. error", "expected (Thm 5)"} <= set(df.columns)


def test_epsilon_changes_metrics_and_only_rescales_noise(at):
    before = metrics(at)
    ok(at.select_slider(key="epsilon").set_value(0.1).run())
    after = metrics(at)
    assert after["GMC rmse_NQ"] != before["GMC rmse_NQ"]
    assert after["Processless rmse_NQ"] != before["Processless rmse_NQ"]
    # same unit draw rescaled: the error scales exactly with 1/ε (Laplace, uniform split)
    assert float(after["GMC rmse_NQ"]) == pytest.approx(10 * float(before["GMC rmse_NQ"]), rel=1e-3)
    assert float(after["Expected sq. error (GMC)"]) == pytest.approx(
        100 * float(before["Expected sq. error (GMC)"]), rel=1e-2)


def test_gaussian_and_geometric_split(at):
    ok(at.radio(key="mechanism").set_value("gaussian").run())
    assert not at.select_slider(key="delta").disabled
    g = metrics(at)["GMC rmse_NQ"]
    ok(at.select_slider(key="delta").set_value(1e-3).run())
    assert metrics(at)["GMC rmse_NQ"] != g
    uniform = float(metrics(at)["Expected sq. error (GMC)"])
    ok(at.radio(key="split").set_value("geometric").run())
    geometric = float(metrics(at)["Expected sq. error (GMC)"])  # weighted form of Theorem 5
    assert np.isfinite(geometric) and geometric != uniform


def test_synthetic_small_tree_shows_labelled_matrices(at):
    ok(at.radio(key="tree_source").set_value("synthetic").run())
    ok(at.select_slider(key="synthetic_size").set_value(15).run())
    m = metrics(at)
    assert m["Nodes n"] == "15" and m["Height h"] == "4"
    zs = [plotly_z(at, i) for i, c in enumerate(at.get("plotly_chart"))
          if plotly_json(at, i)["data"][0]["type"] == "heatmap"]
    assert [z.shape for z in zs] == [(15, 15), (15, 15)]
    g, ginv = zs
    np.testing.assert_allclose(g @ ginv, np.eye(15), atol=1e-12)
    ok(at.selectbox(key="synthetic_kind").set_value("path-like").run())
    assert int(metrics(at)["Nodes n"]) in (14, 15)  # "about" 15: the caterpillar generator rounds
    assert int(metrics(at)["Height h"]) >= 7


def test_upload_good_csv_changes_the_tree(at):
    ok(at.radio(key="tree_source").set_value("upload").run())
    assert at.info and "county" in at.info[0].value  # previous data shown until a file is loaded
    upload_file(at, "tree_good.csv")
    assert metrics(at)["Nodes n"] == "8" and metrics(at)["Height h"] == "3"
    assert not at.error
    ok(at.select_slider(key="epsilon").set_value(2.0).run())  # the upload persists across reruns
    assert metrics(at)["Nodes n"] == "8"
    upload_file(at, "tree_good2.csv")
    assert metrics(at)["Nodes n"] == "11"


@pytest.mark.parametrize("bad", BAD_FILES)
def test_bad_upload_shows_validator_message_and_keeps_data(at, bad):
    ok(at.radio(key="tree_source").set_value("upload").run())
    upload_file(at, "tree_good.csv")
    before = metrics(at)
    upload_file(at, bad)
    assert [e.value for e in at.error] == [validator_message(bad)]
    assert metrics(at) == before  # the last good upload is still shown
    ok(at.select_slider(key="epsilon").set_value(0.5).run())  # page stays usable
    assert metrics(at)["Nodes n"] == "8" and metrics(at)["GMC rmse_NQ"] != before["GMC rmse_NQ"]


def test_bad_upload_first_keeps_bundled_data(at):
    ok(at.radio(key="tree_source").set_value("upload").run())
    upload_file(at, "tree_bad_cycle.csv")
    assert "cycle" in at.error[0].value
    assert metrics(at)["Nodes n"] == "3,207"


def test_new_noise_draw_changes_seed_and_numbers(at):
    seed0 = at.session_state["seed"]
    before = metrics(at)["GMC rmse_NQ"]
    ok(at.button(key="new_draw").click().run())
    assert at.session_state["seed"] != seed0
    assert at.number_input(key="seed").value == at.session_state["seed"]
    assert any(f"seed **{at.session_state['seed']}**" in c.value for c in at.caption)
    assert metrics(at)["GMC rmse_NQ"] != before
    ok(at.number_input(key="seed").set_value(seed0).run())  # a typed seed reproduces the draw
    assert metrics(at)["GMC rmse_NQ"] == before


def test_propagation_steps_and_k_order(at):
    ok(at.select_slider(key="prop_step").set_value(1).run())
    assert any("After step 1 of 5: 3,142 of 3,207 nodes reached" in c.value for c in at.caption)
    ok(at.radio(key="prop_direction").set_value("down").run())
    assert any("After step 1 of 5: 1 of 3,207 nodes reached" in c.value for c in at.caption)
    ok(at.radio(key="prop_vector").set_value("noisy").run())
    ok(at.select_slider(key="k_order").set_value(2).run())
    titles = [plotly_json(at, i)["layout"]["title"]["text"] for i in range(len(at.get("plotly_chart")))]
    assert any(t.startswith("G of T⁽2⁾ — 14×14") for t in titles), titles


def test_methods_default_on_big_tree_excludes_slow_baselines(at):
    assert set(at.multiselect(key="methods").value) == {"gmc", "gmc-nosqrt", "boosting", "privtrie", "lee",
                                                        "processless"}
    ok(at.radio(key="tree_source").set_value("synthetic").run())
    ok(at.select_slider(key="synthetic_size").set_value(100_000).run())  # complete binary: 131,071 nodes
    assert metrics(at)["Nodes n"] == "131,071"
    assert at.multiselect(key="methods").value == ["gmc", "gmc-nosqrt", "boosting", "processless"]
    assert any("off by default" in c.value for c in at.caption)
    assert all(len(plotly_json(at, i)["data"][0].get("ids", [])) <= 4000 for i in range(len(at.get("plotly_chart"))))
    ok(at.select_slider(key="synthetic_size").set_value(1_000).run())
    assert "privtrie" in at.multiselect(key="methods").value


def test_no_methods_selected_keeps_page_alive(at):
    ok(at.multiselect(key="methods").set_value([]).run())
    assert at.warning and metrics(at)["GMC rmse_NQ"] == "—"


# ---- real browser --------------------------------------------------------------------------------
def metric_value(page, label):
    return page.locator("[data-testid=stMetric]").filter(has_text=label).locator("[data-testid=stMetricValue]")


def test_browser_epsilon_slider_changes_metrics(page, streamlit_server):
    open_page(page, streamlit_server, "Tree")
    wait_plotly(page, 3)
    gmc, pl = metric_value(page, "GMC rmse_NQ"), metric_value(page, "Processless rmse_NQ")
    expect(gmc).to_have_text(re.compile(r"^\d"))
    g0, p0 = gmc.inner_text(), pl.inner_text()
    set_slider_keys(page, "Privacy budget ε (log scale)", "ArrowLeft", 3)  # 1 -> 0.7 -> 0.5 -> 0.3
    expect(gmc).not_to_have_text(g0)
    wait_idle(page)
    expect(page.get_by_role("slider", name="Privacy budget ε (log scale)")).to_have_attribute("aria-valuetext", "0.3")
    expect(gmc).not_to_have_text(g0)
    expect(pl).not_to_have_text(p0)
    assert float(gmc.inner_text()) == pytest.approx(float(g0) / 0.3, rel=2e-3)
    expect(page.locator("[data-testid=stException]")).to_have_count(0)


def test_browser_upload_changes_tree(page, streamlit_server):
    open_page(page, streamlit_server, "Tree")
    n = metric_value(page, "Nodes n")
    expect(n).to_have_text("3,207")
    page.locator("[data-testid=stRadio]").first.get_by_text("Upload a file").click()
    expect(page.locator("[data-testid=stFileUploader]")).to_be_visible()
    wait_idle(page)
    upload(page, DATA / "tree_good.csv")
    expect(n).to_have_text("8")
    wait_idle(page)
    expect(metric_value(page, "Height h")).to_have_text("3")
    upload(page, DATA / "tree_bad_negative.csv")
    expect(page.locator("[data-testid=stAlertContentError]")).to_contain_text("count -4 is negative")
    wait_idle(page)
    expect(n).to_have_text("8")
    expect(page.locator("[data-testid=stException]")).to_have_count(0)
