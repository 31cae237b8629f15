"""pages/3_Marginals.py: AppTest layer (in-process) + real-browser tests (Playwright)."""

import re

import numpy as np
import pytest
from playwright.sync_api import expect

from dpviz.core.registry import PAGE_SKELETON, capability
from dpviz.marginals.io import read_table
from dpviz.marginals.samples import load_titanic_sample
from dpviz.marginals.release import METHODS
from dpviz.ui.marginals import TEACHING_OPEN
from dpviz.viz.marginals import method_label
from tests.apptest_helpers import (plotly_charts, input_error_message, 
    ROOT,
    app_test,
    decode_plotly_array,
    metrics,
    ok,
    plotly_json,
    upload_bytes,
)
from tests.e2e_helpers import CHART, draw_private_release, metric_value, open_page, wait_idle

PAGE = "pages/3_Marginals.py"
DATA = ROOT / "tests" / "data"
GOOD = (DATA / "marginals_cli_good.csv").read_bytes()  # 240 rows: color 3, size 4, age 10 bins, flag 2
ALL_LABELS = [method_label(m) for m in METHODS]
L1, L2, VAR = "|error| (ℓ1)", "ℓ2 per cell", "variance σ²"


@pytest.fixture(scope="module")
def titanic():
    return load_titanic_sample()  # class 3, sex 2, age_group 6, survived 2; 1,312 records


@pytest.fixture
def at():
    return ok(app_test(PAGE))


def run(at):
    """Press the Run button when the page shows one (a slow simulation), else just rerun (a live one)."""
    buttons = [b for b in at.button if b.key == "marginals_run"]
    return ok(buttons[0].click().run()) if buttons else ok(at.run())


def chart(at, key: str) -> dict:
    figs = [plotly_json(at, i) for i, c in enumerate(plotly_charts(at)) if c.proto.id.endswith(key)]
    assert len(figs) == 1, f"{key}: {len(figs)} charts"
    return figs[0]


def chart_keys(at) -> set[str]:
    return {c.proto.id.rsplit("-", 1)[-1] for c in plotly_charts(at)}


def error_table(at):
    """The error-per-method table: a static table of text (numbers to 4 significant digits)."""
    tables = [t.value for t in at.table if L1 in t.value.columns]
    return tables[0] if tables else None


def release_tables(at) -> list:
    return [d.value for d in at.dataframe if "released" in d.value.columns]


def draw_release(at):
    return ok(at.button(key="marginals_release_button").click().run())


def workload_caption(at) -> str:
    return next(c.value for c in at.caption if c.value.startswith("Workload 𝒲"))


def upload_data(at, name="good.csv", raw=GOOD):
    if at.radio(key="marginals_source").value != "upload":
        ok(at.radio(key="marginals_source").set_value("upload").run())
    return upload_bytes(at, "marginals_upload_file", name, raw)


def bytes_message(raw: bytes) -> str:
    return input_error_message(read_table, raw)


# ---- load and skeleton ----------------------------------------------------------------------------
def test_loads_titanic_and_follows_the_skeleton(at):
    m = metrics(at)
    assert m["Records N"] == "1,312" and m["Attributes d"] == "4" and m["Cells of the full table"] == "72"
    heads = [h.value.split(": ", 1)[-1] for h in at.subheader]
    assert heads == list(PAGE_SKELETON)
    banner = [i.value for i in at.info if "Simulation — not a private release" in i.value]
    assert len(banner) == 1 and capability("marginals").unit_of_privacy in banner[0]
    assert "4 marginals" in workload_caption(at)  # all 3-way of 4 attributes (the paper's workload)
    # live: the default simulation (titanic, all 3-way, every method) runs without a click
    assert not [b for b in at.button if b.key == "marginals_run"]
    assert any("Recomputed automatically" in c.value for c in at.caption)
    assert list(error_table(at)["method"]) == ALL_LABELS and not at.error
    assert any("ρ = 0.0149731" in c.value for c in at.caption)  # (ε, δ) = (1, 1e-9), the paper's value
    assert at.multiselect(key="marginals_methods").value == list(METHODS)


# ---- simulation -----------------------------------------------------------------------------------
def test_run_simulation_error_table_and_charts(at, titanic):
    run(at)
    table = error_table(at)
    assert list(table["method"]) == ALL_LABELS
    for col in (L1, L2, "negative mass", "seconds"):
        assert np.all(np.isfinite(table[col].to_numpy(float))), col
    assert float(table.loc[0, "ℓ1 ÷ GReM-MLE"]) == pytest.approx(1.0)
    # the analytic variance: a number for GReM-MLE, words for the others (never None/NaN on screen)
    assert float(table.loc[0, VAR]) > 0 and list(table[VAR][1:]) == ["no closed form"] * 3
    assert not table.isna().any().any()
    # GReM-LNN and the truncations have no negative cells
    assert list(table.loc[1:, "negative cells"]) == ["0"] * 3  # text: a static table, numbers to 4 digits
    m = metrics(at)
    assert m["Workload marginals"] == "4" and m["Lowest ℓ1 error"] in ALL_LABELS
    best = table[L1].astype(float).min()
    assert float(m[f"{m['Lowest ℓ1 error']} ℓ1 error per cell"]) == pytest.approx(best, rel=1e-3)
    assert {"marginals_error_bars", "marginals_explorer"} <= chart_keys(at)
    bars = chart(at, "marginals_error_bars")
    names = [t["name"] for t in bars["data"]]
    assert names[:4] == ALL_LABELS and names[4:] == ["GReM-MLE: analytic σ", "GReM-MLE: analytic 2σ"]
    assert len(bars["data"][0]["x"]) == 4
    sigma, two = decode_plotly_array(bars["data"][4]["y"]), decode_plotly_array(bars["data"][5]["y"])
    np.testing.assert_allclose(two, 2 * sigma)
    assert np.all(sigma > 0)
    # explorer: the first 3-way marginal class × sex × age_group, sex (2 values) joined to the rows: one panel
    # per version (true + 4 methods), rows class · sex, columns age_group
    exp = chart(at, "marginals_explorer")
    assert len(exp["data"]) == 5 and all(t["type"] == "heatmap" for t in exp["data"])
    cube = titanic.marginal((0, 1, 2)).reshape(3, 2, 6)
    np.testing.assert_allclose(decode_plotly_array(exp["data"][0]["z"]).reshape(6, 6), cube.reshape(6, 6))
    labels = [b.proto.label for b in at.get("download_button")]
    assert labels[:2] == ["Simulated marginals (CSV: true and every method)", "Simulated marginals (JSON)"]


@pytest.mark.work_ahead
def test_a_mechanism_flip_reads_the_simulation_done_ahead_and_it_matches_a_direct_run(at, titanic):
    """After a run the page simulates the other mechanism in the background (ui.precompute); the flip shows
    that very result, and it is what a direct simulate() with the page's settings gives."""
    import time

    from dpviz.core.noise import Noise
    from dpviz.marginals.lnn import lnn_defaults
    from dpviz.marginals.model import all_kway
    from dpviz.marginals.release import simulate
    from dpviz.ui import background as bg

    ok(at.multiselect(key="marginals_methods").set_value(["mle", "trunc"]).run())  # (GReM-LNN: slow for a test)
    seed = at.session_state["marginals_seed"]
    ahead = [k for k in list(bg._RESULTS) if k[0] == "marginals" and k[1][0][-1] == seed and k[1][0][2] == "mwem"
             and k[1][-1] == ("mle", "trunc")]  # (the first run's methods may have queued theirs too)
    assert len(ahead) == 1, [k[1] for k in ahead]
    t0 = time.monotonic()
    while not bg._RESULTS[ahead[0]].done() and time.monotonic() - t0 < 60:
        time.sleep(0.02)
    done = bg._RESULTS[ahead[0]].result()
    ok(at.radio(key="marginals_mechanism").set_value("mwem").run())
    sim = at.session_state["marginals_sim"][1]
    assert sim is done and sim.mechanism == "mwem" and sim.seed == seed
    direct = simulate(titanic, Noise.from_params("gaussian", epsilon=1.0, delta=1e-9), ["mle", "trunc"], seed,
                      workload=all_kway(titanic.domain, 3), mechanism="mwem", rounds=4,
                      lnn_options={**lnn_defaults("mwem"), "rounds": 4000, "time_limit": None})
    assert sim.selected == direct.selected
    for m in ("mle", "trunc"):
        assert sim.results[m].l1 == pytest.approx(direct.results[m].l1, rel=1e-12), m
        np.testing.assert_allclose(sim.results[m].marginals[(0, 1, 2)], direct.results[m].marginals[(0, 1, 2)])
    assert list(error_table(at)["method"]) == ["EMP", "Trunc"]


def test_method_pickers_keep_their_labels_when_the_mechanism_flips(at):
    """The browser holds a multiselect's choice by its option labels and sends them back on the next change:
    a label that changed with the mechanism (GReM-MLE -> EMP) dropped GReM-MLE from the methods on the first
    change after a flip (and made the next GReM-LNN cap move a new simulation)."""
    keys = ("marginals_methods", "marginals_release_method")
    before = [list(at.multiselect(key=keys[0]).options), list(at.selectbox(key=keys[1]).options)]
    ok(at.radio(key="marginals_mechanism").set_value("mwem").run())
    after = [list(at.multiselect(key=keys[0]).options), list(at.selectbox(key=keys[1]).options)]
    assert before == after and "GReM-MLE / EMP" in after[0]
    assert at.multiselect(key=keys[0]).value == list(METHODS)
    assert list(error_table(at)["method"])[0] == "EMP"  # results still name it as the mechanism does
    ok(at.multiselect(key=keys[0]).set_value(["mle", "trunc"]).run())
    assert list(error_table(at)["method"]) == ["EMP", "Trunc"]


def test_methods_and_epsilon_are_live(at):
    ok(at.multiselect(key="marginals_methods").set_value(["mle", "trunc"]).run())
    assert list(error_table(at)["method"]) == ["GReM-MLE", "Trunc"]  # no click: recomputed at once
    assert "marginals_lnn_chart" not in chart_keys(at)
    first = error_table(at)
    ok(at.select_slider(key="marginals_epsilon").set_value(0.1).run())
    assert not any("press" in i.value.lower() for i in at.info)
    assert float(error_table(at)[L1][0]) > float(first[L1][0])  # ε = 0.1: much more noise, without another click
    assert at.session_state["marginals_sim"][1].budget_text.find("(ε, δ) = (0.1,") > 0
    ok(at.select_slider(key="marginals_epsilon").set_value(1.0).run())  # back: the same seed, the same draw
    assert list(error_table(at)[L1]) == list(first[L1])
    ok(at.multiselect(key="marginals_methods").set_value([]).run())
    assert error_table(at) is None and at.warning


def test_explorer_switches_between_one_and_two_way(at, titanic):
    ok(at.select_slider(key="marginals_k").set_value(2).run())
    ok(at.checkbox(key="marginals_lower").check().run())
    assert "10 marginals" in workload_caption(at)  # 4 one-way + 6 two-way
    run(at)
    assert at.selectbox(key="marginals_explore").options[:5] == ["class", "sex", "age_group", "survived", "class × sex"]
    ok(at.selectbox(key="marginals_explore").set_value("age_group").run())
    exp = chart(at, "marginals_explorer")
    assert [t["type"] for t in exp["data"]] == ["bar"] * 5
    assert [t["name"] for t in exp["data"]] == ["true"] + ALL_LABELS
    np.testing.assert_allclose(decode_plotly_array(exp["data"][0]["y"]), titanic.marginal((2,)))
    assert list(exp["data"][0]["x"])[-1] == "(missing)"
    lnn = decode_plotly_array(exp["data"][2]["y"])
    assert np.all(lnn >= -1e-9) and lnn.sum() == pytest.approx(titanic.N, rel=0.1)
    ok(at.selectbox(key="marginals_explore").set_value("class × sex").run())
    exp = chart(at, "marginals_explorer")
    assert [t["type"] for t in exp["data"]] == ["heatmap"] * 5
    np.testing.assert_allclose(decode_plotly_array(exp["data"][0]["z"]), titanic.marginal((0, 1)).reshape(3, 2))
    assert list(exp["data"][0]["y"]) == ["1st", "2nd", "3rd"]
    assert exp["layout"]["xaxis"]["ticktext"][:2] == ["female", "male"]
    assert error_table(at) is not None  # exploring does not drop the run


def test_scalable_mwem(at):
    ok(at.radio(key="marginals_mechanism").set_value("mwem").run())
    box = at.number_input(key="marginals_rounds")
    assert not box.disabled and box.value == 4 and box.max == 4  # no repeats: T <= |W|
    ok(box.set_value(2).run())
    run(at)
    assert list(error_table(at)["method"]) == ["EMP", "GReM-LNN", "Trunc", "Trunc+Rescale"]
    assert any(c.value.startswith("Marginals selected by Scalable MWEM") and c.value.count("×") == 4
               for c in at.caption)  # two 3-way marginals selected


def test_adult_one_way(at):
    ok(at.selectbox(key="marginals_sample").set_value("adult").run())
    m = metrics(at)
    assert m["Records N"] == "48,842" and m["Attributes d"] == "14" and "364 marginals" in workload_caption(at)
    # all 3-way of 14 attributes: too slow to follow every change; a button says how long it takes
    (button,) = [b for b in at.button if b.key == "marginals_run"]
    assert re.search(r"^Run the simulation \(about \d+ (s|min)\)$", button.label)
    assert error_table(at) is None and any("press the button" in i.value for i in at.info)
    ok(at.select_slider(key="marginals_k").set_value(1).run())  # 1-way: live again
    assert not [b for b in at.button if b.key == "marginals_run"]
    assert metrics(at)["Workload marginals"] == "14" and list(error_table(at)["method"]) == ALL_LABELS
    ok(at.selectbox(key="marginals_explore").set_value("native_country").run())
    exp = chart(at, "marginals_explorer")
    assert len(exp["data"]) == 5 and len(exp["data"][0]["x"]) == 42


def test_rho_budget(at):
    ok(at.radio(key="marginals_budget").set_value("rho").run())
    assert at.select_slider(key="marginals_epsilon").disabled and not at.select_slider(key="marginals_rho").disabled
    ok(at.select_slider(key="marginals_rho").set_value(0.5).run())
    assert any(c.value.startswith("**ρ = 0.5** (zCDP)") for c in at.caption)
    run(at)
    assert any("ρ = 0.5 (zCDP)" in c.value for c in at.caption)


def test_heavy_lnn_waits_behind_a_button_that_says_how_long(at):
    ok(at.selectbox(key="marginals_sample").set_value("adult").run())
    ok(at.select_slider(key="marginals_k").set_value(2).run())  # 91 two-way marginals: GReM-LNN takes seconds
    (button,) = [b for b in at.button if b.key == "marginals_run"]
    assert re.search(r"^Run the simulation with GReM-LNN \(about \d+ s\)$", button.label)
    table = error_table(at)  # the fast ones: live; GReM-LNN keeps its row (one table size, issue 19)
    assert list(table["method"]) == ["GReM-MLE", "Trunc", "Trunc+Rescale", "GReM-LNN"]
    assert table.iloc[-1, 1] == "waits for the Run button" and set(table.iloc[-1, 2:]) == {"—"}
    assert np.all(np.isfinite(table[L1].iloc[:-1].to_numpy(float)))
    assert any("GReM-LNN is not in this draw" in c.value for c in at.caption)
    ok(at.select_slider(key="marginals_epsilon").set_value(2.0).run())
    assert at.session_state["marginals_sim"][1].budget_text.find("(ε, δ) = (2,") > 0  # still live without LNN


def test_lnn_convergence_chart(at):
    ok(at.multiselect(key="marginals_methods").set_value(["mle", "lnn"]).run())
    run(at)
    sim = at.session_state["marginals_sim"][1]
    info = sim.results["lnn"].info
    assert any(c.value.startswith(f"GReM-LNN: {info['iterations']} iterations") for c in at.caption)
    assert len(info["history"]) >= 1
    assert "marginals_lnn_chart" not in chart_keys(at)  # behind its toggle: one chart less per ε move
    ok(at.toggle(key="marginals_show_lnn").set_value(True).run())
    fig = chart(at, "marginals_lnn_chart")
    assert [t["name"] for t in fig["data"]] == ["dual objective", "negative mass"]
    assert len(decode_plotly_array(fig["data"][0]["x"])) >= 1
    layout = fig["layout"]
    assert layout["yaxis"]["tickformat"] == layout["yaxis2"]["tickformat"] == ",.4~r"  # no '20f', no 18 digits
    assert layout["xaxis2"]["tickformat"] == ",d"
    assert not any("negative_mass" in c.value for c in at.caption)  # the stop reason in words


# ---- data upload ----------------------------------------------------------------------------------
def test_upload_pick_attributes_and_bins(at):
    ok(at.radio(key="marginals_source").set_value("upload").run())
    assert any("still showing titanic" in i.value for i in at.info) and metrics(at)["Records N"] == "1,312"
    upload_data(at)
    m = metrics(at)
    assert m["Records N"] == "240" and m["Attributes d"] == "4" and not at.error
    assert at.multiselect(key="marginals_attrs").value == ["color", "size", "age", "flag"]
    domain_table = next(d.value for d in at.dataframe if "attribute" in d.value.columns)
    assert list(domain_table["values"]) == [3, 4, 10, 2]
    ok(at.select_slider(key="marginals_bins").set_value(4).run())
    domain_table = next(d.value for d in at.dataframe if "attribute" in d.value.columns)
    assert list(domain_table["values"]) == [3, 4, 4, 2]
    ok(at.multiselect(key="marginals_attrs").set_value(["color", "flag"]).run())
    assert metrics(at)["Attributes d"] == "2" and "1 marginals" in workload_caption(at)  # all 2-way of 2
    run(at)
    assert list(error_table(at)["method"]) == ALL_LABELS


PNG = bytes.fromhex("89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489")  # a PNG's first bytes
RANDOM = np.random.default_rng(19).integers(1, 256, 300, dtype=np.uint8).tobytes()  # 300 random bytes, no NUL
GARBAGE_ONE_COLUMN = b"%%##!!\nfoo\nbar\nfoo\nbaz\n"  # one column, a header that is no column name


@pytest.mark.parametrize("bad", ["marginals_bad_ragged.csv", "marginals_bad_empty.csv",
                                 "marginals_bad_header_only.csv", "random.csv", "photo.csv", "garbage.csv"])
def test_rejected_upload_clears_results_release_and_downloads(at, bad):
    raw = {"random.csv": RANDOM, "photo.csv": PNG, "garbage.csv": GARBAGE_ONE_COLUMN}.get(bad)
    raw = (DATA / bad).read_bytes() if raw is None else raw
    upload_data(at)
    assert metrics(at)["Records N"] == "240" and error_table(at) is not None  # live on the good upload
    ok(at.checkbox(key="marginals_structure_from_data").check().run())  # an upload declares or opts out
    draw_release(at)
    assert release_tables(at) and "Download the release (CSV)" in [b.proto.label for b in at.get("download_button")]
    upload_data(at, bad, raw)
    (error,) = at.error
    assert bytes_message(raw) in error.value  # what was wrong: line, column, what was expected
    assert re.search(r"line \d+", error.value) or bad in ("marginals_bad_empty.csv", "marginals_bad_header_only.csv")
    # nothing of the earlier upload is left: its records, its simulation, its drawn release and downloads
    assert metrics(at)["Records N"] == "1,312" and any("still showing titanic" in i.value for i in at.info)
    assert not release_tables(at)
    labels = [b.proto.label for b in at.get("download_button")]
    assert "Download the release (CSV)" not in labels and "Download its description (JSON)" not in labels
    assert at.session_state["marginals_sim"][0][0][0] == ("bundled", "titanic")  # the fallback's own draw
    assert not any(k[0][0][0] == "upload" for k in at.session_state["marginals_memo"])
    ok(at.run())  # later reruns keep the fallback's results (cleared once, not on every rerun)
    assert error_table(at) is not None


@pytest.mark.parametrize("raw,words", [(RANDOM, "control character"), (PNG, "PNG image"),
                                       (GARBAGE_ONE_COLUMN, "has no letter or digit")])
def test_reader_refuses_files_that_are_not_tables(raw, words):
    message = bytes_message(raw)
    assert words in message and "line 1, column" in message and "expected a CSV table" in message


def test_single_valued_column_is_left_out_not_fatal(at):
    upload_data(at, "one_country.csv", (DATA / "marginals_bad_single_value.csv").read_bytes())
    assert not at.error
    assert "country" not in at.multiselect(key="marginals_attrs").options
    assert set(at.multiselect(key="marginals_attrs").value) <= {"age", "sex"}


def test_bad_first_upload_keeps_titanic(at):
    upload_data(at, "bad.csv", (DATA / "marginals_bad_ragged.csv").read_bytes())
    assert at.error and "line 4: 4 fields" in at.error[0].value
    assert metrics(at)["Records N"] == "1,312"


def test_workload_upload(at):
    upload_data(at)
    ok(at.radio(key="marginals_workload_mode").set_value("upload").run())
    assert any("using all 2-way marginals" in i.value for i in at.info) and "6 marginals" in workload_caption(at)
    wl = at.file_uploader(key="marginals_workload_file")
    wl.upload("w.json", (DATA / "marginals_cli_workload.json").read_bytes(), "application/json")
    ok(at.run())
    assert "3 marginals" in workload_caption(at) and not at.error
    run(at)
    assert at.selectbox(key="marginals_explore").options == ["color × size", "size × flag", "color × age × flag"]
    wl = at.file_uploader(key="marginals_workload_file")
    wl.upload("bad.json", (DATA / "marginals_cli_workload_unknown.json").read_bytes(), "application/json")
    ok(at.run())
    assert at.error and "weight" in at.error[0].value
    # a rejected workload file leaves nothing of the earlier one: back to all 2-way marginals, said so
    assert "6 marginals" in workload_caption(at) and any("using all 2-way marginals" in i.value for i in at.info)


def test_pick_marginals(at):
    ok(at.radio(key="marginals_workload_mode").set_value("pick").run())
    ok(at.multiselect(key="marginals_pick").set_value(["sex", "class × survived"]).run())
    assert "2 marginals" in workload_caption(at)
    run(at)
    assert at.selectbox(key="marginals_explore").options == ["sex", "class × survived"]
    ok(at.multiselect(key="marginals_pick").set_value([]).run())
    assert at.warning and "4 marginals" in workload_caption(at)  # falls back to all 3-way


# ---- teaching view --------------------------------------------------------------------------------
def test_teaching_view(at):
    toys = {"toy_D", "toy_Dplus", "toy_R", "toy_A", "toy_ortho"}
    assert not toys & chart_keys(at) and not [s for s in at.select_slider if s.key == "toy_b"]  # closed: not built
    at.session_state[TEACHING_OPEN] = True
    ok(at.run())
    assert toys <= chart_keys(at)
    z = np.asarray(decode_plotly_array(chart(at, "toy_ortho")["data"][0]["z"]), float)
    assert z.shape == (8, 8) and np.all(z[~np.eye(8, dtype=bool)] == 0) and np.all(np.diag(z) > 0)
    a = np.asarray(decode_plotly_array(chart(at, "toy_A")["data"][0]["z"]), float)
    assert a.shape == (6, 2)  # γ = τ = {a, b}, sizes (2, 3, 2): n_γ = 6, m_τ = 2
    ok(at.select_slider(key="toy_b").set_value(4).run())
    assert np.asarray(decode_plotly_array(chart(at, "toy_A")["data"][0]["z"])).shape == (8, 3)
    ok(at.selectbox(key="toy_tau").set_value(()).run())  # τ = ∅: the total spread uniformly
    np.testing.assert_allclose(np.asarray(decode_plotly_array(chart(at, "toy_A")["data"][0]["z"]), float),
                               np.full((8, 1), 1 / 8))
    r = np.asarray(decode_plotly_array(chart(at, "toy_R")["data"][0]["z"]), float)
    np.testing.assert_allclose(r, np.ones((1, 16)))  # R_∅ = 1ᵀ


# ---- private release ------------------------------------------------------------------------------
def test_private_release_panel(at, titanic):
    assert not release_tables(at) and any("No private release drawn" in c.value for c in at.caption)
    draw_release(at)
    (first,) = release_tables(at)
    assert list(first.columns) == ["marginal", "cell", "released", "variance"] and len(first) == 108
    truth = np.concatenate([titanic.marginal(g) for g in [(0, 1, 2), (0, 1, 3), (0, 2, 3), (1, 2, 3)]])
    for col in ("released", "variance"):
        values = first[col].to_numpy(float)
        assert not np.array_equal(values, truth) and not np.allclose(values, truth)
    assert not any(c.lower().startswith("true") for c in first.columns)
    assert at.success and "108 rows" in at.success[0].value and "discrete Gaussian" in at.success[0].value
    assert not any("true" in t.columns for t in release_tables(at))  # the release table holds no truth
    labels = [b.proto.label for b in at.get("download_button")]
    assert "Download the release (CSV)" in labels and "Download its description (JSON)" in labels
    draw_release(at)  # a second click draws fresh noise
    (second,) = release_tables(at)
    assert not np.array_equal(first["released"], second["released"])
    np.testing.assert_allclose(first["variance"], second["variance"])  # analytic: no data in it
    ok(at.selectbox(key="marginals_release_method").set_value("lnn").run())  # other settings: dropped
    assert not release_tables(at)
    draw_release(at)
    (lnn,) = release_tables(at)
    assert list(lnn.columns) == ["marginal", "cell", "released"] and (lnn["released"] >= -1e-9).all()


# ---- real browser ---------------------------------------------------------------------------------
def test_browser_live_simulation_then_a_private_release(page, streamlit_server):
    """One page load for both (each browser test's load costs CI several seconds)."""
    open_page(page, streamlit_server, "Marginals")
    expect(page.get_by_text("Simulation — not a private release.")).to_be_visible()
    expect(metric_value(page, "Records N")).to_have_text("1,312")
    # live: no Run button; the default simulation is on the page, and an ε key press redraws it
    expect(page.get_by_role("button", name=re.compile(r"^Run the simulation"))).to_have_count(0)
    expect(metric_value(page, "Workload marginals")).to_have_text("4", timeout=30_000)
    wait_idle(page)
    expect(page.locator("[data-testid=stTable]").filter(has_text="|error| (ℓ1)")).to_have_count(1)  # static table
    budget = page.get_by_text(re.compile(r"simulation seed .*\(ε, δ\) = \(1, "))
    expect(budget).to_have_count(1)
    page.get_by_role("slider").first.press("ArrowRight")  # ε 1 -> 2
    expect(page.get_by_text(re.compile(r"simulation seed .*\(ε, δ\) = \(2, "))).to_have_count(1, timeout=30_000)
    wait_idle(page)
    bars = page.locator(CHART).filter(has_text="Error per workload marginal")
    expect(bars.locator(".main-svg").first).to_be_visible(timeout=30_000)  # plotly draws lazily
    explorer = page.locator(CHART).filter(has_text="class × sex × age_group: 36 cells")
    expect(explorer.locator(".main-svg").first).to_be_visible()
    with page.expect_download() as dl:
        page.get_by_role("button", name=re.compile(r"^Simulated marginals \(CSV")).click()
    assert dl.value.suggested_filename.endswith("marginals-simulation.csv")
    expect(page.locator("[data-testid=stException]")).to_have_count(0)
    wait_idle(page)
    _, name, header = draw_private_release(page, re.compile(r"^Private release ready: 108 rows"))
    assert name == "titanic.marginals-release.csv" and "true" not in header
    expect(page.locator("[data-testid=stException]")).to_have_count(0)


def test_lnn_reuse_across_cap_and_time_limit_only_when_a_fresh_run_gives_the_same(titanic):
    """dpviz.ui.marginals.lnn_serves: a held GReM-LNN run answers another (cap, time limit) exactly when a fresh
    run with that setting gives the very same marginals — checked both ways: every case it accepts equals a fresh
    run bit for bit, and the boundary cases it refuses (a cap below the early stop, a capped run asked for a
    higher cap) do differ, so a rule that reused too much would fail here."""
    from dpviz.core.noise import Noise
    from dpviz.marginals.model import all_kway
    from dpviz.marginals.release import simulate
    from dpviz.ui.marginals import lnn_serves

    wl = all_kway(titanic.domain, 2)
    noise = Noise.from_params("gaussian", epsilon=0.1, delta=1e-9)  # LNN still moving at 20 iterations
    runs = {}

    def lnn(cap: int, limit: float | None):
        if (cap, limit) not in runs:
            sim = simulate(titanic, noise, ["lnn"], 5, workload=wl, lnn_options={"rounds": cap, "time_limit": limit})
            runs[cap, limit] = sim.results["lnn"]
        return runs[cap, limit]

    def same(a, b) -> bool:
        return all(np.array_equal(a.marginals[g], b.marginals[g]) for g in a.marginals)

    early = lnn(4000, None)
    k = early.info["iterations"]
    assert early.info["stop_reason"] == "negative_mass" and not early.info["restarts"] and 250 < k < 1000
    capped = lnn(20, None)  # converged to rounding by ~100 iterations: below that a cap really changes the result
    assert capped.info["stop_reason"] == "rounds"
    cases = [((4000, None), (1000, 30.0), True), ((1000, 30.0), (4000, None), True), ((4000, None), (20, None), False),
             ((20, None), (20, 30.0), True), ((20, None), (500, None), False)]
    for held, wanted, expected in cases:
        h = lnn(*held)
        assert lnn_serves(h.info, h.seconds, held, wanted) is expected, (held, wanted)
        assert same(h, lnn(*wanted)) is expected, (held, wanted)  # the rule is exact, and tight on these
    assert not lnn_serves(early.info, early.seconds, (4000, None), (4000, early.seconds / 2))  # a limit it passed
    timed = {**early.info, "stop_reason": "time_limit"}
    assert not lnn_serves(timed, 0.01, (4000, 10.0), (4000, 30.0))  # cut by the clock: serves only itself
    restarted = {**early.info, "restarts": 1}  # a restart may have come after a lower cap
    assert not lnn_serves(restarted, 0.01, (4000, None), (2000, None))
    assert lnn_serves(restarted, 0.01, (4000, None), (4000, 30.0))


def test_lnn_cap_and_time_limit_moves_redraw_the_held_simulation(at):
    """On Titanic GReM-LNN stops early (negative mass, ~300 iterations): moving its cap (to any cap above that)
    or its time limit shows the held simulation itself — nothing is simulated — while a cap below the early stop
    is a new simulation."""
    held = at.session_state["marginals_sim"]
    assert "lnn" in held[1].results and held[1].results["lnn"].info["stop_reason"] == "negative_mass"
    ok(at.select_slider(key="marginals_lnn_rounds").set_value(2000).run())
    ok(at.selectbox(key="marginals_lnn_limit").set_value(10.0).run())
    now = at.session_state["marginals_sim"]
    assert now[1] is held[1] and now[0] != held[0] and now[0][0][4:6] == (2000, 10.0)
    assert error_table(at) is not None and "GReM-LNN" in " ".join(error_table(at)["method"])
    ok(at.select_slider(key="marginals_lnn_rounds").set_value(100).run())
    low = at.session_state["marginals_sim"][1]
    assert low is not held[1] and low.results["lnn"].info["iterations"] == 100


def _chart_slots(at) -> dict[str, int]:
    """Each simulation chart's position among the page's top-level elements."""
    slots = {}
    for i, node in at.main.children.items():
        ident = str(getattr(getattr(node, "proto", None), "id", ""))
        if getattr(node, "type", None) == "bidi_component" and "chart:" in ident:  # dpviz.ui.chart's component
            slots[ident.rsplit(":", 1)[-1]] = i
    return slots


def test_charts_keep_their_place_whatever_the_captions_say(at):
    """Captions shown on some runs only (Scalable MWEM's selected marginals, GReM-LNN waiting for the button,
    the analytic marks, "Simulating ...") sit in slots of their own on every run, so the charts after them keep
    their positions and the browser updates them instead of building them anew (issue 19: the Mechanism radio
    took 1.15-1.26 s with them, 0.95-0.96 s without)."""
    run(at)
    rp = _chart_slots(at)
    assert {"marginals_error_bars", "marginals_explorer"} <= set(rp)
    ok(at.radio(key="marginals_mechanism").set_value("mwem").run())
    run(at)
    assert any(c.value.startswith("Marginals selected by Scalable MWEM") for c in at.caption)  # shown on this run
    assert _chart_slots(at) == rp
    ok(at.checkbox(key="marginals_lower").check().run())  # a workload simulated in the page run ("Simulating ...")
    run(at)
    assert _chart_slots(at) == rp
