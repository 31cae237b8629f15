"""pages/1_Tree.py: AppTest layer (in-process) + real-browser tests (Playwright)."""

import json
import re

import numpy as np
import pandas as pd
import pytest
from playwright.sync_api import expect

from dpviz.core.modes import SIMULATION_NOTICE
from dpviz.core.noise import Noise
from dpviz.core.registry import PAGE_SKELETON
from dpviz.tree import synthetic
from dpviz.tree.generation import consistency_matrix
from dpviz.tree.io import load as load_source, load_tree_file
from dpviz.tree.propagation import partial_propagation
from dpviz.tree.release import RELEASE_COLUMNS, node_scales, unit_noise
from tests.apptest_helpers import (plotly_charts, input_error_message, ROOT, app_test, decode_plotly_array, metrics, ok, plotly_json, plotly_z,
                                   upload_bytes, walk)
from tests.e2e_helpers import (draw_private_release, metric_value, open_page, set_slider_keys, upload, wait_for_number,
                               wait_idle, wait_plotly)

PAGE = "pages/1_Tree.py"
GMC = "RMSE per node, GMC (rmse_NQ)"
RAW = "RMSE per node, raw noisy (rmse_NQ)"
EXPECTED = "Expected sq. error, GMC (Thm 5)"
GM_OPEN = "tree_gm_open"  # the Generation Matrix expander's state (it builds its views only when open)
DATA = ROOT / "tests" / "data"
BAD_FILES = ["tree_bad_cycle.csv", "tree_bad_unknown_parent.csv", "tree_bad_negative.csv",
             "tree_bad_mismatch.csv", "tree_bad_empty.csv"]






def release_section(at) -> list:
    """The elements after the 'Private release' subheader."""
    els = list(walk(at.main))
    start = next(i for i, e in enumerate(els) if type(e).__name__ == "Subheader" and "Private release" in e.value)
    return els[start:]


def release_table(at):
    """The released table shown by the Private release panel, or None."""
    frames = [e for e in release_section(at) if type(e).__name__ == "Dataframe"]
    return frames[0].value if frames else None


@pytest.fixture(scope="module")
def county():
    return load_source("sample:county")


def num(text: str) -> float:
    """A number as the page writes it for people ("157,100")."""
    return float(text.replace(",", ""))


def truth_in_file_order(data) -> np.ndarray:
    return data.v[np.argsort(data.tree.order)]




@pytest.fixture
def at():
    return ok(app_test(PAGE))


def upload_file(at, name: str):
    return upload_bytes(at, "upload", name, (DATA / name).read_bytes())


def validator_message(name: str) -> str:
    return input_error_message(load_tree_file, (DATA / name).read_bytes(), name=name)


def test_loads_bundled_county_tree(at):
    m = metrics(at)
    assert m["Nodes n"] == "3,207" and m["Height h"] == "5"
    assert num(m[GMC]) < num(m[RAW])
    titles = [plotly_json(at, i)["layout"]["title"]["text"] for i in range(len(plotly_charts(at)))]
    assert len(titles) == 4, titles  # error by level, methods, tree, propagation (the matrices are one click away)
    assert not at.error
    assert "simulation" in at.get("download_button")[0].proto.label
    assert [plotly_json(at, i)["data"][0]["type"] for i in range(4)].count("icicle") == 2
    # the simulation table has every method with Theorem 5 next to the empirical error
    df = at.dataframe[0].value
    assert len(df) == 6 and {"total sq. error", "expected (Thm 5)"} <= set(df.columns)
    assert len(df.columns) == 8


def test_no_developer_text_above_the_title(at):
    """A bare string literal in a page is printed by Streamlit's magic: the title comes first."""
    first = [type(e).__name__ for e in at.main.children.values()][:3]
    assert first == ["Title", "Caption", "Expander"], first
    assert not any("level picker" in md.value for md in at.markdown)


def test_what_am_i_looking_at_explains_every_figure_with_the_paper(at):
    exp = next(e for e in at.expander if e.label == "What am I looking at?")
    text = exp.markdown[0].value
    paragraphs = [p for p in text.split("\n\n") if p.strip()]
    assert len(paragraphs) == 5
    for ref in ("Alg. 2", "Eq. (36)", "Theorem 5", "Props. 2-3", "Def. 7", "Alg. 1"):
        assert ref in text, ref


def test_methods_table_words_not_none_and_every_column(at):
    df = at.dataframe[0].value
    cells = df.astype(str).to_numpy().ravel().tolist()
    assert not {"None", "nan", "NaN", "inf", "Infinity"} & set(cells)
    row = df[df["method"].str.startswith("Boosting")].iloc[0]
    assert row["expected (Thm 5)"] == "no closed form"
    assert list(df.columns) == ["method", "node RMSE", "range RMSE", "bias", "negatives", "time (ms)",
                                "total sq. error", "expected (Thm 5)"]
    config = {k: c for k, c in json.loads(at.dataframe[0].proto.columns).items() if not c.get("hidden")}
    assert all(c.get("help") for c in config.values())  # every column says what it is
    widths = [c.get("width") for c in config.values()]
    assert all(isinstance(w, int) for w in widths) and sum(widths) <= 810  # all fit beside the sidebar at 1280 px


def test_tree_views_are_bounded_and_zoom_into_a_node(at, county):
    charts = [plotly_json(at, i) for i in range(len(plotly_charts(at)))]
    icicles = [c["data"][0] for c in charts if c["data"][0]["type"] == "icicle"]
    assert [len(decode_plotly_array(t["ids"])) for t in icicles] == [65, 65]  # top 4 levels, not 3,207 tiles
    tree = county.tree
    opts = at.selectbox(key="tree_zoom").options
    assert len(opts) == 65 and opts[0] == "the whole tree"
    state = next(i for i in range(1, tree.n1) if tree.depth[i] == 4)
    ok(at.selectbox(key="tree_zoom").set_value(state).run())
    charts = [plotly_json(at, i) for i in range(len(plotly_charts(at)))]
    icicles = [c for c in charts if c["data"][0]["type"] == "icicle"]
    kids = int((tree.parent == state).sum())
    for c in icicles:
        ids = decode_plotly_array(c["data"][0]["ids"]).astype(int)
        assert ids.size == 1 + kids and ids[0] == state
        assert "under " in c["layout"]["title"]["text"]


def test_epsilon_updates_every_simulated_view_and_keeps_the_others_unchanged(at):
    """One ε move redraws the views that depend on the noise (table, error charts, tree colours, noisy propagation)
    and sends the others byte-identical (the browser skips them)."""
    def specs():
        return {json.loads(c.proto.spec)["layout"]["title"]["text"].split("<br>")[0]: c.proto.spec
                for c in plotly_charts(at)}

    before, table = specs(), at.dataframe[0].value
    ok(at.select_slider(key="epsilon").set_value(0.5).run())
    after = specs()
    assert not at.dataframe[0].value.equals(table)
    changed = {t for t in before if before[t] != after[t]}
    assert changed == {"Error by level", "Methods compared (same noise draw)", "Error per node of GMC (Alg. 2, Eq. 36)"}
    ok(at.radio(key="prop_vector").set_value("noisy").run())
    noisy = specs()
    ok(at.select_slider(key="epsilon").set_value(2.0).run())
    assert [t for t in noisy if t.startswith("Noisy") and noisy[t] != specs()[t]]  # the propagation follows ε


def test_a_setting_seen_before_is_not_simulated_again(at):
    """The simulation and its views are cached by (source, ε, family, δ, split, seed, methods): back at ε = 1 the
    page shows the very same run (its measured seconds included), not a new one."""
    first = at.dataframe[0].value
    ok(at.select_slider(key="epsilon").set_value(0.5).run())
    assert not at.dataframe[0].value.equals(first)
    ok(at.select_slider(key="epsilon").set_value(1.0).run())
    pd.testing.assert_frame_equal(at.dataframe[0].value, first)


def test_generation_matrix_is_built_only_when_its_expander_is_open(at):
    exp = next(e for e in at.expander if e.label.startswith("Generation Matrix G (Def. 7)"))
    assert "Structure Matrix G⁽¹'¹⁾" in exp.label and "weighted G(T⁽¹⁾←T)" in exp.label
    assert not list(exp.children.values())  # closed: nothing computed or sent
    at.session_state[GM_OPEN] = True
    ok(at.run())
    titles = [plotly_json(at, i)["layout"]["title"]["text"] for i in range(len(plotly_charts(at)))]
    assert any(t.startswith("Structure Matrix G⁽¹'¹⁾ of T⁽1⁾") for t in titles), titles
    assert any(t.startswith("Its inverse G⁻¹ of T⁽1⁾") for t in titles)
    assert any(t.startswith("Weighted Generation Matrix G(T⁽¹⁾←T)") for t in titles)


def test_page_skeleton_and_the_simulation_banner_above_every_truth(at):
    """Data → Privacy → Strategy and estimator → Simulation → Private release; the simulation banner opens
    the Simulation section and every error metric / truth view sits between it and the release panel."""
    els = list(walk(at.main))
    names = [type(e).__name__ for e in els]
    subheaders = [(i, e.value) for i, e in enumerate(els) if names[i] == "Subheader"]
    assert [v.split(": ", 1)[1] for _, v in subheaders] == list(PAGE_SKELETON)
    sim_at, rel_at = subheaders[3][0], subheaders[4][0]
    assert names[sim_at + 1] == "Info" and "Simulation — not a private release" in els[sim_at + 1].value
    for i, e in enumerate(els):
        truthy = (names[i] == "Metric" and "rmse" in e.label) or names[i] == "Dataframe" or \
            (names[i] == "Caption" and ("rmse" in e.value or "seed" in e.value))
        if truthy:
            assert sim_at < i < rel_at, (names[i], i)
    charts = [i for i, n in enumerate(names) if n == "UnknownElement"]
    titles = [plotly_json(at, k)["layout"]["title"]["text"] for k in range(len(charts))]
    for i, title in zip(charts, titles, strict=True):
        if "true" in title.lower() or "error" in title.lower() or "methods" in title.lower() or "→" in title \
                or "counts" in title.lower():
            assert sim_at < i < rel_at, title
    assert SIMULATION_NOTICE.split(" —")[0].lower() in els[sim_at + 1].value.lower()


def test_seed_starts_fresh_not_zero():
    seeds = {ok(app_test(PAGE)).session_state["tree_seed"] for _ in range(2)}
    assert len(seeds) == 2 and 0 not in seeds


def test_epsilon_changes_metrics_and_only_rescales_noise(at):
    before = metrics(at)
    ok(at.select_slider(key="epsilon").set_value(0.1).run())
    after = metrics(at)
    assert after[GMC] != before[GMC]
    assert after[RAW] != before[RAW]
    # same unit draw rescaled: the error scales exactly with 1/ε (Laplace, uniform split)
    assert num(after[GMC]) == pytest.approx(10 * num(before[GMC]), rel=1e-3)
    assert num(after[EXPECTED]) == pytest.approx(
        100 * num(before[EXPECTED]), rel=1e-2)


def test_gaussian_and_geometric_split(at):
    ok(at.radio(key="tree_noise").set_value("gaussian").run())
    assert not at.select_slider(key="delta").disabled
    g = metrics(at)[GMC]
    ok(at.select_slider(key="delta").set_value(1e-3).run())
    assert metrics(at)[GMC] != g
    uniform = num(metrics(at)[EXPECTED])
    ok(at.radio(key="split").set_value("geometric").run())
    geometric = num(metrics(at)[EXPECTED])  # weighted form of Theorem 5
    assert np.isfinite(geometric) and geometric != uniform


def test_synthetic_small_tree_shows_labelled_matrices(at):
    at.session_state[GM_OPEN] = True
    ok(at.radio(key="tree_source").set_value("synthetic").run())
    ok(at.select_slider(key="synthetic_size").set_value(15).run())
    m = metrics(at)
    assert m["Nodes n"] == "15" and m["Height h"] == "4"
    zs = [plotly_z(at, i) for i, c in enumerate(plotly_charts(at))
          if plotly_json(at, i)["data"][0]["type"] == "heatmap"]
    assert [z.shape for z in zs] == [(15, 15), (15, 15), (7, 7)]
    g, ginv, gw = zs
    np.testing.assert_allclose(g @ ginv, np.eye(15), atol=1e-12)
    # the weighted Generation Matrix of the release: Gᵀ G = Mᵀ M (uniform split, Thm. 9), lower triangular
    tree = synthetic.make("complete", 15, 10.0, np.random.default_rng(0)).tree
    mm = consistency_matrix(tree).toarray()
    np.testing.assert_allclose(gw.T @ gw, mm.T @ mm, atol=1e-9)
    assert np.allclose(np.triu(gw, 1), 0) and not np.allclose(np.diag(gw), 1)  # weighted, not G_T^(1,1)
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
def test_bad_upload_shows_validator_message_and_clears_the_earlier_file(at, bad):
    """A rejected file names the problem and leaves nothing of the earlier upload: the bundled tree is shown."""
    ok(at.radio(key="tree_source").set_value("upload").run())
    upload_file(at, "tree_good.csv")
    before = metrics(at)
    assert before["Nodes n"] == "8"
    upload_file(at, bad)
    [err] = [e.value for e in at.error]
    assert err.startswith(f"{bad} was rejected: {validator_message(bad)}")
    assert metrics(at)["Nodes n"] == "3,207"  # the bundled tree, said so by the page
    assert any("still showing" in i.value and "county" in i.value for i in at.info)
    ok(at.select_slider(key="epsilon").set_value(0.5).run())  # page stays usable
    assert metrics(at)["Nodes n"] == "3,207" and metrics(at)[GMC] != before[GMC]



# hostile uploads (issue 12): each shows the parser's InputError, raises nothing, keeps the last good tree
HOSTILE_UPLOADS = {
    "deep.json": b"[" * 100_000 + b"]" * 100_000,
    "empty_record.json": b"[{}]",
    "nul_ids.csv": b"node,parent,count\nroot,,\na\x00,root,3\na\x00,root,4\n",
    "nul_levels.csv": b"region,state,count\nx,y\x00,3\nx,y\x00,4\n",
    "two_boms.csv": b"\xef\xbb\xbf\xef\xbb\xbf",
    "ragged.csv": b"a,count\nx,1,5\ny,2,6\n",
    "parent_2_32.csv": b"parent,count\n-1,\n4294967296,3\n0,4\n",
    "overflow.csv": b"node,parent,count\nroot,,\na,root,1e308\nb,root,1e308\n",
    "total_overflow.csv": b"node,parent,count\nroot,,\na,root,4503599627370497\nb,root,4503599627370497\n",
    "binary.csv": bytes(range(256)) * 4,
}


@pytest.mark.parametrize("name", list(HOSTILE_UPLOADS))
def test_hostile_upload_shows_the_parser_error_and_drops_the_earlier_file(at, name):
    raw = HOSTILE_UPLOADS[name]
    ok(at.radio(key="tree_source").set_value("upload").run())
    upload_file(at, "tree_good.csv")
    upload_bytes(at, "upload", name, raw)  # asserts no exception
    [err] = [e.value for e in at.error]
    assert err.startswith(f"{name} was rejected: {input_error_message(load_tree_file, raw, name=name)}")
    assert metrics(at)["Nodes n"] == "3,207"  # nothing of the earlier upload stays
    ok(at.select_slider(key="epsilon").set_value(0.5).run())  # the page stays usable, the message stays
    assert metrics(at)["Nodes n"] == "3,207" and len(at.error) == 1


def test_hostile_first_upload_keeps_the_bundled_tree(at):
    ok(at.radio(key="tree_source").set_value("upload").run())
    upload_bytes(at, "upload", "deep.json", HOSTILE_UPLOADS["deep.json"])
    assert len(at.error) == 1 and "nested too deeply" in at.error[0].value
    assert any("still showing" in i.value and "county" in i.value for i in at.info)
    assert metrics(at)["Nodes n"] == "3,207"


def test_upload_caps_are_stated_and_enforced(at, monkeypatch):
    ok(at.radio(key="tree_source").set_value("upload").run())
    assert any("5,000,000 nodes" in c.value and "100 MB" in c.value for c in at.caption)
    monkeypatch.setattr("dpviz.tree.io.MAX_NODES", 5)  # the page reads the module's caps on every run
    raw = (DATA / "tree_good.csv").read_bytes()
    upload_bytes(at, "upload", "tree_good.csv", raw)
    assert len(at.error) == 1 and "more than the limit of 5" in at.error[0].value
    assert metrics(at)["Nodes n"] == "3,207"


def test_new_noise_draw_changes_seed_and_numbers(at):
    seed0 = at.session_state["tree_seed"]
    before = metrics(at)[GMC]
    ok(at.button(key="new_draw").click().run())
    assert at.session_state["tree_seed"] != seed0
    assert at.number_input(key="tree_seed").value == at.session_state["tree_seed"]
    assert any(f"seed **{at.session_state['tree_seed']}**" in c.value for c in at.caption)
    assert metrics(at)[GMC] != before
    ok(at.number_input(key="tree_seed").set_value(seed0).run())  # a typed seed reproduces the draw
    assert metrics(at)[GMC] == before


def test_propagation_steps_and_k_order(at):
    ok(at.select_slider(key="prop_step").set_value(1).run())
    assert any("After step 1 of 5: 3,142 of 3,207 nodes reached" in c.value for c in at.caption)
    ok(at.radio(key="prop_direction").set_value("down").run())
    assert any("After step 1 of 5: 1 of 3,207 nodes reached" in c.value for c in at.caption)
    ok(at.radio(key="prop_vector").set_value("noisy").run())
    at.session_state[GM_OPEN] = True
    ok(at.run())
    ok(at.select_slider(key="k_order").set_value(2).run())
    titles = [plotly_json(at, i)["layout"]["title"]["text"] for i in range(len(plotly_charts(at)))]
    assert any(t.startswith("Structure Matrix G⁽¹'¹⁾ of T⁽2⁾<br><sup>14×14") for t in titles), titles


def test_methods_default_on_big_tree_excludes_slow_baselines(at):
    assert set(at.multiselect(key="methods").value) == {"gmc", "gmc-nosqrt", "boosting", "privtrie", "lee",
                                                        "processless"}
    ok(at.radio(key="tree_source").set_value("synthetic").run())
    ok(at.select_slider(key="synthetic_size").set_value(100_000).run())  # complete binary: 131,071 nodes
    assert metrics(at)["Nodes n"] == "131,071"
    assert at.multiselect(key="methods").value == ["gmc", "gmc-nosqrt", "boosting", "processless"]
    assert any("off by default" in c.value for c in at.caption)
    assert all(len(decode_plotly_array(plotly_json(at, i)["data"][0].get("ids", []))) <= 400
               for i in range(len(plotly_charts(at))))
    ok(at.select_slider(key="synthetic_size").set_value(1_000).run())
    assert "privtrie" in at.multiselect(key="methods").value


def test_no_methods_selected_keeps_page_alive(at):
    ok(at.multiselect(key="methods").set_value([]).run())
    assert at.warning and metrics(at)[GMC] == "—"


def test_noisy_propagation_view_shows_the_noisy_draw_without_methods(at, county):
    """With no method selected, 'Noisy counts' still propagates ṽ = v + unit · scales of the current draw
    (it used to fall back to the true v)."""
    ok(at.multiselect(key="methods").set_value([]).run())
    ok(at.radio(key="prop_vector").set_value("noisy").run())
    seed = at.session_state["tree_seed"]
    tree = county.tree
    unit = unit_noise(Noise.laplace(1.0), tree.n, np.random.default_rng(seed))
    noisy = county.v + unit * node_scales(tree, Noise.laplace(1.0), "uniform")
    chart = plotly_json(at, len(plotly_charts(at)) - 1)
    assert chart["layout"]["title"]["text"].startswith("Noisy counts")
    trace = chart["data"][0]
    shown = np.asarray(decode_plotly_array(trace["customdata"]), float)
    idx = np.asarray(decode_plotly_array(trace["ids"])).astype(int)
    np.testing.assert_allclose(shown, partial_propagation(tree, noisy, "up", tree.h)[idx], rtol=1e-12)
    assert not np.allclose(shown, partial_propagation(tree, county.v, "up", tree.h)[idx], rtol=1e-9, atol=0)


# ---- Private release panel ----------------------------------------------------------------------------------
def test_private_release_panel_publishes_no_truth_and_fresh_noise(at, county):
    assert release_table(at) is None
    ok(at.button(key="tree_release_button").click().run())
    df = release_table(at)  # the panel previews the first rows (input order); the download has them all
    assert tuple(df.columns) == RELEASE_COLUMNS and 100 <= len(df) <= county.tree.n
    assert any(f"of {county.tree.n:,} rows" in c.value for c in at.caption)
    noisy = df["noisy"].to_numpy()
    assert np.issubdtype(noisy.dtype, np.integer)
    v = truth_in_file_order(county)[: len(df)]
    for col in ("noisy", "released", "variance", "std"):
        assert not np.allclose(df[col].to_numpy(float), v, rtol=1e-12, atol=0), col
    assert np.abs(noisy - v).max() > 0 and np.abs(noisy - v).max() < 200  # noise of scale h/ε = 5
    assert {"Download the release (CSV)", "Download its description (JSON)"} <= {
        b.proto.label for b in at.get("download_button")}
    section = release_section(at)
    ledger = {"Spent ε on this dataset", "Remaining ε", "Releases charged"}  # the budget, not an error
    assert not [e for e in section if type(e).__name__ == "Metric" and e.label not in ledger]  # no error metric
    ok(at.button(key="tree_release_button").click().run())
    assert not np.array_equal(release_table(at)["noisy"].to_numpy(), noisy)  # a second click: fresh noise
    ok(at.select_slider(key="epsilon").set_value(0.5).run())  # settings changed: the stale release is dropped
    assert release_table(at) is None
    assert any("No private release drawn for these settings yet" in c.value for c in at.caption)


def test_private_release_geometric_gaussian_and_method_choice(at, county):
    ok(at.radio(key="tree_noise").set_value("gaussian").run())
    ok(at.radio(key="split").set_value("geometric").run())
    ok(at.selectbox(key="release_method").set_value("processless").run())
    ok(at.button(key="tree_release_button").click().run())
    df = release_table(at)
    assert tuple(df.columns) == RELEASE_COLUMNS
    np.testing.assert_array_equal(df["released"].to_numpy(float), df["noisy"].to_numpy(float))  # processless
    assert df["variance"].nunique() == county.tree.h  # one exact variance per level (geometric split)
    assert any("discrete Gaussian" in c.value for c in at.caption)
    ok(at.selectbox(key="release_method").set_value("gmc").run())  # another method: the old release is dropped
    assert release_table(at) is None


# ---- real browser --------------------------------------------------------------------------------


def test_browser_epsilon_slider_changes_metrics_then_a_private_release(page, streamlit_server):
    """One page load for both (each browser test's load costs CI several seconds)."""
    open_page(page, streamlit_server, "Tree")
    wait_plotly(page, 3)
    gmc, pl = metric_value(page, GMC), metric_value(page, RAW)
    expect(gmc).to_have_text(re.compile(r"^\d"))
    g0, p0 = gmc.inner_text(), pl.inner_text()
    set_slider_keys(page, "Privacy budget ε (log scale)", "ArrowLeft", 3)  # 1 -> 0.7 -> 0.5 -> 0.3
    expect(gmc).not_to_have_text(g0)
    wait_idle(page)
    expect(page.get_by_role("slider", name="Privacy budget ε (log scale)")).to_have_attribute("aria-valuetext", "0.3")
    expect(gmc).not_to_have_text(g0)
    expect(pl).not_to_have_text(p0)
    assert wait_for_number(gmc, float(g0) / 0.3) == pytest.approx(float(g0) / 0.3, rel=2e-3)
    expect(page.locator("[data-testid=stException]")).to_have_count(0)
    wait_idle(page)
    _, name, header = draw_private_release(page, "Private release ready")
    assert name == "county.tree-release.csv"
    assert header == ",".join(RELEASE_COLUMNS)
    sim = page.get_by_role("button", name=re.compile("^Simulated tree"))
    with page.expect_download() as sim_info:
        sim.click()
    assert sim_info.value.suggested_filename == "county.tree-simulation.csv"
    assert open(sim_info.value.path(), encoding="utf-8").readline().startswith("node,parent,true,noisy,released_gmc")
    expect(page.locator("[data-testid=stException]")).to_have_count(0)


def test_browser_upload_changes_tree(page, streamlit_server):
    open_page(page, streamlit_server, "Tree")
    n = metric_value(page, "Nodes n")
    expect(n).to_have_text("3,207")
    page.locator("[data-testid=stRadio]").first.get_by_text("Upload a file").click()
    expect(page.locator("[data-testid=stFileUploader]")).to_be_visible(timeout=30_000)  # after the rerun the click starts
    wait_idle(page)
    upload(page, DATA / "tree_good.csv")
    expect(n).to_have_text("8")
    wait_idle(page)
    expect(metric_value(page, "Height h")).to_have_text("3")
    upload(page, DATA / "tree_bad_negative.csv")
    expect(page.locator("[data-testid=stAlertContentError]")).to_contain_text("count -4 is negative")
    wait_idle(page)
    expect(n).to_have_text("3,207")  # nothing of the earlier file stays: the bundled tree, said so
    expect(page.locator("[data-testid=stException]")).to_have_count(0)
