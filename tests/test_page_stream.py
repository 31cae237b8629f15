"""pages/2_Stream.py: AppTest layer (in-process) + real-browser tests (Playwright)."""

import re

import numpy as np
import pytest
from playwright.sync_api import expect

from dpviz import ui
from dpviz.core.registry import PAGE_SKELETON, capability
from dpviz.stream.fenwick import workload_matrix
from dpviz.stream.io import CAPS_HELP, MAX_STEPS, read_stream_csv
from dpviz.stream.strategy import LABELS, best_releasable, releasable
from dpviz.viz.stream import MAX_POINTS
from tests.apptest_helpers import (plotly_charts, input_error_message, ROOT, app_test, decode_plotly_array, metrics, ok, plotly_json, plotly_z,
                                   upload_bytes)
from tests.e2e_helpers import (draw_private_release, metric_value, open_page, set_slider_keys, upload, wait_for_number,
                               wait_idle, wait_plotly)

PAGE = "pages/2_Stream.py"
DATA = ROOT / "tests" / "data"
BAD_FILES = ["stream_bad_nonnumeric.csv", "stream_bad_negative.csv", "stream_bad_empty.csv"]
TOO_LONG = b"count\n" + b"1\n" * (MAX_STEPS + 1)
FDA_RMSE = "Release: this draw (RMSE)"  # the release default (smooth binary for Laplace, worst step)
FDA_MSE = "Release: mean error (MSE)"
NAIVE_RMSE = "Naive: this draw (RMSE)"


def num(text: str) -> float:
    """A metric value as shown (thousands separated) as a float."""
    return float(text.replace(",", ""))






def chart_keys(at) -> set[str]:
    return {k for k in ("release_chart", "variance_chart", "lambda_chart", "m_heatmap", "b_heatmap",
                        "sigma_heatmap") if any(k in c.proto.id for c in plotly_charts(at))}


def release_trace_len(at) -> int:
    """Points of the true running total in the release chart (its last trace)."""
    fig = next(plotly_json(at, i) for i, c in enumerate(plotly_charts(at)) if "release_chart" in c.proto.id)
    return len(decode_plotly_array(fig["data"][-1]["y"]))


def table_mechanisms(at) -> list[str]:
    return list(at.dataframe[0].value["mechanism"])


def release_tables(at) -> list:
    """The Private release panel's table(s) (the only dataframe with a released_total column)."""
    return [d.value for d in at.dataframe if "released_total" in d.value.columns]


def draw_release(at):
    return ok(at.button(key="stream_release_button").click().run())


def flights_truth():
    from dpviz.core.registry import load_sample

    return np.cumsum(load_sample("stream", "sample:flights").counts)


@pytest.fixture
def at():
    return ok(app_test(PAGE))


def upload_file(at, name: str, raw: bytes | None = None):
    return upload_bytes(at, "stream_upload_file", name, raw if raw is not None else (DATA / name).read_bytes())


def validator_message(raw: bytes) -> str:
    return input_error_message(read_stream_csv, raw)


def test_loads_bundled_flights(at):
    m = metrics(at)
    assert m["Horizon N"] == "181" and at.number_input(key="horizon").value == 181
    assert num(m[FDA_RMSE]) > 0 and num(m[FDA_MSE]) > 0
    assert chart_keys(at) == {"release_chart", "variance_chart", "lambda_chart"}  # no heatmaps for N > 64
    assert table_mechanisms(at) == [LABELS[m] for m in ("naive", "binary", "fenwick-fda", "smooth-binary", "kary")]
    df = at.dataframe[0].value
    assert {"total MSE", "mean MSE", "max MSE", "ratio to FDA"} <= set(df.columns)
    assert df.loc[df["mechanism"] == LABELS["fenwick-fda"], "ratio to FDA"].item() == pytest.approx(1.0)
    assert release_trace_len(at) == 181
    assert not at.error
    assert at.get("download_button")[0].proto.label.startswith("Simulated series (CSV")
    variance = next(plotly_json(at, i) for i, c in enumerate(plotly_charts(at)) if "variance_chart" in c.proto.id)
    assert variance["layout"]["yaxis"]["type"] == "log" and len(variance["data"]) == 5


def test_simulation_epsilon_move_rescales_one_draw(at):
    before = metrics(at)
    ok(at.select_slider(key="epsilon").set_value(0.5).run())
    after = metrics(at)
    assert after[FDA_RMSE] != before[FDA_RMSE]
    # simulation only: the same unit draw, rescaled: the error scales with 1/ε and the MSE with 1/ε² (Laplace)
    assert num(after[FDA_RMSE]) == pytest.approx(2 * num(before[FDA_RMSE]), rel=1e-3)
    assert num(after[FDA_MSE]) == pytest.approx(4 * num(before[FDA_MSE]), rel=1e-3)


def chart(at, key: str) -> dict:
    return next(plotly_json(at, i) for i, c in enumerate(plotly_charts(at)) if key in c.proto.id)


def summary(at) -> str:
    (text,) = [m.value for m in at.markdown if "Lowest mean error per step" in m.value]
    return text


def test_every_view_moves_with_epsilon(at):
    """Issue 19: one ε move updates the noise curves, the error table, the node noise under the λ view and the
    metrics; the λ chart itself (weights that do not depend on ε) is sent unchanged, so the browser keeps it."""
    var0, lam0, table0 = chart(at, "variance_chart"), chart(at, "lambda_chart"), at.dataframe[0].value
    node0 = next(c.value for c in at.caption if "node i is measured" in c.value)
    ok(at.select_slider(key="epsilon").set_value(0.5).run())
    var1, lam1, table1 = chart(at, "variance_chart"), chart(at, "lambda_chart"), at.dataframe[0].value
    node1 = next(c.value for c in at.caption if "node i is measured" in c.value)
    for a, b in zip(var0["data"], var1["data"]):  # Laplace: the variance scales with 1/ε²
        np.testing.assert_allclose(decode_plotly_array(b["y"]), 4 * decode_plotly_array(a["y"]), rtol=1e-9)
    np.testing.assert_allclose(table1["mean MSE"], 4 * table0["mean MSE"], rtol=1e-3)  # shown to 4 digits
    np.testing.assert_allclose(decode_plotly_array(lam1["data"][0]["y"]), decode_plotly_array(lam0["data"][0]["y"]))
    assert lam1 == lam0 and len(lam1["data"]) == 1  # the weights only: the same figure at every budget
    b0, b1 = (float(re.search(r"b = ([0-9.,]+)", t).group(1).replace(",", "")) for t in (node0, node1))
    assert b1 == pytest.approx(2 * b0, rel=1e-3)  # Laplace b = Δ/ε: half the ε, twice the noise
    assert var1["layout"]["yaxis"]["tickvals"] != var0["layout"]["yaxis"]["tickvals"]  # the ticks follow the range


def test_noise_curve_ticks_are_human(at):
    """Issue 19: the log axis read "9, 8, …, 2, 1, 9, 8 …"; now 1-2-5 or powers of ten, written out."""
    y = chart(at, "variance_chart")["layout"]["yaxis"]
    vals, text = np.asarray(y["tickvals"], dtype=float), y["ticktext"]
    mant = vals / 10.0 ** np.floor(np.log10(vals) + 1e-9)
    assert set(np.round(mant, 6)) <= {1.0, 2.0, 3.0, 5.0} and len(vals) >= 3
    assert all(re.fullmatch(r"[0-9][0-9,.]*|([0-9.]+×)?10[⁰¹²³⁴⁵⁶⁷⁸⁹⁻]+", t) for t in text), text
    assert y["title"]["text"].startswith("variance of the released total")


def test_summary_says_which_error_and_why_the_default_differs(at):
    """Issue 19: "Lowest total MSE: Naive" with no word on why the release default differs."""
    m = metrics(at)
    assert m["Lowest mean error"] == "k-ary tree" and m["Lowest worst-step error"] == "Smooth binary"
    text = summary(at)
    assert "**Lowest mean error per step**" in text and "**Lowest worst-step error**" in text
    assert "The release default for the worst-step error, " + LABELS["smooth-binary"] in text
    assert "Why the default differs" in text and "is lower on the mean error" in text and "costs no privacy" in text
    ok(at.multiselect(key="mechanisms").set_value(["naive", "fenwick-fda"]).run())  # short horizon: Naive ahead
    assert metrics(at)["Lowest mean error"] == "Naive" and "ten times longer" in summary(at)
    ok(at.multiselect(key="mechanisms").set_value(["naive", "fenwick-fda", "smooth-binary", "kary"]).run())
    ok(at.radio(key="stream_target").set_value("mean").run())
    assert "The release default for the mean error, " + LABELS["kary"] in summary(at)
    ok(at.selectbox(key="stream_sample").set_value("bike").run())  # long series: the default is best on the mean
    assert metrics(at)["Lowest mean error"] == "k-ary tree"


def test_matrices_in_tabs_and_teaching_expander(at):
    ok(at.number_input(key="horizon").set_value(31).run())
    assert [t.label for t in at.tabs] == ["Strategy M", "Reconstruction B", "Weights Σ = diag(λ)"]
    m = chart(at, "m_heatmap")["layout"]
    assert m["title"]["yanchor"] == "top" and m["margin"]["t"] >= 100  # the title sits above the top axis title
    (exp,) = [e for e in at.expander if e.label == "What am I looking at?"]
    text = " ".join(md.value for md in exp.markdown)
    for ref in ("Alg. 5.1", "Alg. 5.2", "Alg. 5.3", "Eq. 5.5", "Eq. 5.8", "Eq. 5.9", "problem 5.10", "Theorem 5.4",
                "Theorem 5.1", "lowbit(12) = 4", "popcount"):
        assert ref in text, ref


def test_metric_labels_are_short_and_explained(at):
    for m in at.metric:
        if m.label in ("Spent ε on this dataset", "Remaining ε", "Releases charged"):
            continue  # the release panel's (dpviz/ui)
        assert len(m.label) <= 30 and m.help, m.label
    for v in metrics(at).values():
        assert v not in ("None", "nan", "inf") and "e+" not in v


def test_mechanism_selection_changes_table_rows(at):
    ok(at.multiselect(key="mechanisms").set_value(["fenwick", "fenwick-fda"]).run())
    assert table_mechanisms(at) == [LABELS["fenwick"], LABELS["fenwick-fda"]]
    assert metrics(at)[NAIVE_RMSE] == "—"
    ok(at.multiselect(key="mechanisms").set_value(["naive"]).run())
    assert table_mechanisms(at) == [LABELS["naive"]]
    assert num(metrics(at)[FDA_MSE]) > 0  # the default's error is always shown, selected or not
    assert "ratio to FDA" not in at.dataframe[0].value.columns  # no empty column without FDA
    assert any("Select Fenwick + FDA" in c.value for c in at.caption)
    ok(at.multiselect(key="mechanisms").set_value([]).run())
    assert at.warning and not at.dataframe and chart_keys(at) == {"release_chart", "lambda_chart"}


def test_small_horizon_shows_matrices_big_does_not(at):
    ok(at.number_input(key="horizon").set_value(12).run())
    assert metrics(at)["Horizon N"] == "12" and release_trace_len(at) == 12
    assert chart_keys(at) >= {"m_heatmap", "b_heatmap", "sigma_heatmap"}
    zs = {k: plotly_z(at, i) for i, c in enumerate(plotly_charts(at))
          for k in ("m_heatmap", "b_heatmap", "sigma_heatmap") if k in c.proto.id}
    assert all(z.shape == (12, 12) for z in zs.values())
    np.testing.assert_allclose(zs["b_heatmap"] @ zs["m_heatmap"], workload_matrix(12))  # W = B M
    assert np.all(np.diag(zs["sigma_heatmap"]) > 0)
    ok(at.number_input(key="horizon").set_value(64).run())
    assert chart_keys(at) >= {"m_heatmap"}
    ok(at.number_input(key="horizon").set_value(65).run())
    assert "m_heatmap" not in chart_keys(at) and any("N ≤ 64" in c.value for c in at.caption)


def test_big_bike_series_is_reduced_for_plotting(at):
    ok(at.selectbox(key="stream_sample").set_value("bike").run())
    assert metrics(at)["Horizon N"] == "17,544"
    assert "m_heatmap" not in chart_keys(at)
    for i, c in enumerate(plotly_charts(at)):
        if "release_chart" in c.proto.id or "variance_chart" in c.proto.id:
            assert all(len(decode_plotly_array(t["y"])) <= 2 * MAX_POINTS + 4 for t in plotly_json(at, i)["data"])
    # (redraw latency is measured in bench/, not asserted here: no timing assertions in tests)
    seen = set()
    for eps in (0.5, 0.2, 2.0):
        ok(at.select_slider(key="epsilon").set_value(eps).run())
        seen.add(tuple(sorted(metrics(at).items())))
    assert len(seen) == 3  # every ε move redraws new numbers


def test_horizon_releases_only_first_steps(at):
    full = at.dataframe[0].value
    ok(at.number_input(key="horizon").set_value(100).run())
    assert metrics(at)["Horizon N"] == "100" and release_trace_len(at) == 100
    assert not at.dataframe[0].value["total MSE"].equals(full["total MSE"])


def test_upload_good_csv(at):
    ok(at.radio(key="stream_source").set_value("upload").run())
    assert at.info and "flights" in at.info[0].value  # previous data until a file is loaded
    upload_file(at, "stream_good.csv")
    assert metrics(at)["Horizon N"] == "20" and not at.error
    assert chart_keys(at) >= {"m_heatmap", "b_heatmap", "sigma_heatmap"}  # N = 20 <= 64
    ok(at.select_slider(key="epsilon").set_value(2.0).run())  # the upload persists across reruns
    assert metrics(at)["Horizon N"] == "20"
    upload_file(at, "stream_good_counts_only.csv")
    assert metrics(at)["Horizon N"] == "100" and at.number_input(key="horizon").value == 100


@pytest.mark.parametrize("bad", BAD_FILES + ["stream_bad_too_long.csv"])
def test_bad_upload_shows_validator_message_and_clears_the_earlier_file(at, bad):
    """A rejected file names the problem and leaves nothing of the earlier upload (ui.handle_upload): the
    bundled flights series is shown again, and the page says so."""
    raw = TOO_LONG if bad == "stream_bad_too_long.csv" else (DATA / bad).read_bytes()
    ok(at.radio(key="stream_source").set_value("upload").run())
    upload_file(at, "stream_good.csv")
    assert metrics(at)["Horizon N"] == "20"
    upload_file(at, bad, raw)
    [err] = [e.value for e in at.error]
    assert err.startswith(f"{bad} was rejected: {validator_message(raw)}")
    assert metrics(at)["Horizon N"] == "181"  # the bundled series, not the earlier file
    assert any("still showing" in i.value and "flights" in i.value for i in at.info)
    before = metrics(at)
    ok(at.select_slider(key="epsilon").set_value(0.5).run())  # the page stays usable
    assert metrics(at)["Horizon N"] == "181" and metrics(at)[FDA_RMSE] != before[FDA_RMSE]


def test_bad_upload_messages_are_specific():
    assert "'lots' is not a finite number" in validator_message((DATA / "stream_bad_nonnumeric.csv").read_bytes())
    assert "-2 is negative" in validator_message((DATA / "stream_bad_negative.csv").read_bytes())
    assert "no data rows" in validator_message((DATA / "stream_bad_empty.csv").read_bytes())
    assert "too long" in validator_message(TOO_LONG)



HOSTILE_UPLOADS = {  # issue 12: each is refused with st.error, no exception; issue 19: the earlier file dropped
    "ragged.csv": b"count\n1,2\n3,4\n",
    "overflow.csv": b"count\n1e308\n1e308\n",
    "total.csv": b"count\n" + b"900000000000\n" * 10_010,
    "two_boms.csv": b"\xef\xbb\xbf\xef\xbb\xbf",
    "nul.csv": b"count\n1\x00\n2\n",
    "utf16.csv": "count\n1\n2\n".encode("utf-16"),
    "duplicate.csv": b"count,count\n1,2\n",
    "blank_header.csv": b",\n1,2\n",
    "bad_date.csv": b"date,count\nsoon,1\n",
    "mixed_zones.csv": b"date,count\n2024-01-01T00:00+01:00,1\n2024-01-02,1\n",
}


def test_hostile_uploads_show_an_error_and_drop_the_earlier_file(at):
    ok(at.radio(key="stream_source").set_value("upload").run())
    assert any(CAPS_HELP in c.value for c in at.caption)  # the caps are stated next to the uploader
    for name, raw in HOSTILE_UPLOADS.items():
        upload_file(at, "stream_good.csv")
        assert metrics(at)["Horizon N"] == "20", name
        upload_file(at, name, raw)  # ok(): no exception
        [err] = [e.value for e in at.error]
        assert err.startswith(f"{name} was rejected: {validator_message(raw)}"), name
        assert metrics(at)["Horizon N"] == "181", name  # nothing of the earlier upload stays
    ok(at.select_slider(key="epsilon").set_value(0.5).run())  # still usable, on the bundled series
    assert metrics(at)["Horizon N"] == "181"
    upload_file(at, "zoned.csv", b"date,count\n2024-01-01T00:00+01:00,3\n2024-01-02T00:00+01:00,4\n")
    assert metrics(at)["Horizon N"] == "2" and not at.error  # one time zone: read as wall-clock times


def test_page_reuses_the_cached_per_step_variances(at, monkeypatch):
    """A redraw, or a second private release at the same settings, computes no per-step variance."""
    from dpviz.stream.strategy import StreamStrategy

    calls = []
    original = StreamStrategy._step_variance
    monkeypatch.setattr(StreamStrategy, "_step_variance", lambda self, noise: calls.append(self.name) or original(self, noise))
    draw_release(at)
    ok(at.button(key="new_draw").click().run())
    seen = len(calls)
    ok(at.button(key="new_draw").click().run())
    draw_release(at)
    assert len(calls) == seen  # served from the cache per (mechanism, N, noise)


def test_synthetic_stream(at):
    ok(at.radio(key="stream_source").set_value("synthetic").run())
    assert metrics(at)["Horizon N"] == "365"
    ok(at.select_slider(key="syn_length").set_value(31).run())
    assert metrics(at)["Horizon N"] == "31" and "m_heatmap" in chart_keys(at)
    r0 = metrics(at)[FDA_RMSE]
    ok(at.select_slider(key="syn_rate").set_value(100.0).run())
    assert any("rate 100" in c.value for c in at.caption)
    assert metrics(at)[FDA_RMSE] == r0  # the noise does not depend on the data


def test_gaussian_options(at, monkeypatch):
    import streamlit as st

    sizes, real = [], st.dataframe  # (rows, height) of the error table, per run

    def dataframe(data, *args, **kwargs):
        if kwargs.get("key") == "mse_table":
            sizes.append((len(data), kwargs.get("height")))
        return real(data, *args, **kwargs)

    monkeypatch.setattr(st, "dataframe", dataframe)
    ok(at.radio(key="noise").set_value("gaussian").run())
    best = best_releasable("max", "gaussian", 181)  # the Gaussian release default joins the comparison
    assert best in at.multiselect(key="mechanisms").value and LABELS[best] in table_mechanisms(at)
    assert at.selectbox(key="release_mech").value == best
    assert not at.select_slider(key="delta").disabled and at.select_slider(key="rho").disabled
    g = metrics(at)[FDA_RMSE]
    ok(at.select_slider(key="delta").set_value(1e-3).run())
    assert metrics(at)[FDA_RMSE] != g
    ok(at.radio(key="gauss_param").set_value("rho").run())
    assert at.select_slider(key="epsilon").disabled and not at.select_slider(key="rho").disabled
    assert any("ρ = 0.5" in c.value for c in at.caption)
    r = metrics(at)[FDA_MSE]
    ok(at.select_slider(key="rho").set_value(0.05).run())
    assert num(metrics(at)[FDA_MSE]) == pytest.approx(10 * num(r), rel=1e-3)
    ok(at.radio(key="noise").set_value("laplace").run())  # Gaussian-only factorisations leave the comparison
    assert best not in at.multiselect(key="mechanisms").value and LABELS[best] not in table_mechanisms(at)
    # the Noise flip adds a row, the table keeps its size (a resized data grid redraws late in the browser, issue 19)
    (rows_g, height_g), (rows_l, height_l) = sizes[0], sizes[-1]
    assert rows_g == rows_l + 1 and height_g == height_l == ui.table_height(rows_g)


def test_new_noise_draw_changes_seed_and_numbers(at):
    seed0 = at.session_state["stream_seed"]
    before = metrics(at)[FDA_RMSE]
    ok(at.button(key="new_draw").click().run())
    assert at.session_state["stream_seed"] != seed0
    assert any(f"simulation seed **{at.session_state['stream_seed']}**" in c.value for c in at.caption)
    assert metrics(at)[FDA_RMSE] != before
    ok(at.number_input(key="stream_seed").set_value(seed0).run())  # a typed seed reproduces the simulated draw
    assert metrics(at)[FDA_RMSE] == before


def test_simulation_seed_starts_fresh_not_at_zero():
    seeds = {app_test(PAGE).session_state["stream_seed"] for _ in range(2)}
    assert len(seeds) == 2 and 0 not in seeds


def test_play_control_reveals_fewer_steps(at):
    ok(at.slider(key="upto").set_value(10).run())
    assert release_trace_len(at) == 10
    assert any(c.value.startswith("Step 10 of 181") for c in at.caption)
    ok(at.button(key="play").click().run())  # from the start: first frame = ceil(181 / 40) = 5 steps
    assert at.session_state["playing"] is True
    assert at.slider(key="upto").value == 15 and release_trace_len(at) == 15
    ok(at.button(key="pause").click().run())
    assert at.session_state["playing"] is False and at.slider(key="upto").value == 15
    ok(at.button(key="show_all").click().run())
    assert at.slider(key="upto").value == 181 and release_trace_len(at) == 181
    ok(at.button(key="play").click().run())  # at the end: starts over
    assert at.slider(key="upto").value == 5 and release_trace_len(at) == 5


def release_chart(at) -> dict:
    return next(plotly_json(at, i) for i, c in enumerate(plotly_charts(at)) if "release_chart" in c.proto.id)


def test_error_view_is_the_default_and_explained(at):
    # the default view: released − true (on 181 days of ~3M running totals the noise is invisible)
    assert at.radio(key="release_view").value == "error"
    fig = release_chart(at)
    assert fig["layout"]["yaxis"]["title"]["text"] == "released − true"
    assert not np.any(decode_plotly_array(fig["data"][-1]["y"]))  # the truth is the zero line
    err = np.abs(decode_plotly_array(fig["data"][1]["y"]))
    assert 0 < err.max() < 1_000  # noise scale, not the ~3M totals
    total = flights_truth()[-1]
    (why,) = [c.value for c in at.caption if "shown by default" in c.value]
    assert f"{total:,.0f}" in why and "RMSE" in why and "Running totals" in why
    rmse = num(metrics(at)[NAIVE_RMSE])
    assert rmse / total < 1e-4  # why: the error is a tiny fraction of the totals
    # the running totals are one click away, with a caption that points back to the error view
    ok(at.radio(key="release_view").set_value("totals").run())
    fig = release_chart(at)
    assert fig["layout"]["yaxis"]["title"]["text"] == "running total"
    np.testing.assert_allclose(decode_plotly_array(fig["data"][-1]["y"])[-1], total)
    assert any("choose **Error** to see it" in c.value for c in at.caption)
    assert not any("shown by default" in c.value for c in at.caption)


def test_simulation_download_button(at):
    assert [b.proto.label for b in at.get("download_button")] == [f"Simulated series (CSV, {LABELS['naive']})"]
    ok(at.selectbox(key="download_mech").set_value("fenwick-fda").run())
    assert at.get("download_button")[0].proto.label == f"Simulated series (CSV, {LABELS['fenwick-fda']})"


# ---- skeleton, simulation banner, private release -------------------------------------------------
def test_page_follows_the_skeleton_and_shows_the_simulation_banner(at):
    heads = [h.value.split(": ", 1)[-1] for h in at.subheader]
    expected = {"Data": "Data", "Privacy": "Privacy", "Strategy and estimator": "Strategy and estimator",
                "Simulation": "Simulation", "Private release": "Private release"}
    assert heads == [expected[s] for s in PAGE_SKELETON]
    banner = [i.value for i in at.info if "Simulation — not a private release" in i.value]
    assert len(banner) == 1 and capability("stream").unit_of_privacy in banner[0]


def test_release_mechanism_choice(at):
    """The release default is the best releasable mechanism for the chosen target error, and says why."""
    box = at.selectbox(key="release_mech")
    assert box.value == best_releasable("max", "laplace", 181) and list(box.options) == [
        LABELS[m] for m in releasable("laplace")]
    assert LABELS["sqrt"] not in box.options  # Laplace: sqrt has no pure-ε release
    why = next(c.value for c in at.caption if c.value.startswith("Default:"))
    assert "lowest worst-step error at N = 181" in why and LABELS[box.value] in why
    ok(at.radio(key="stream_target").set_value("mean").run())  # the default follows the target
    assert at.selectbox(key="release_mech").value == best_releasable("mean", "laplace", 181)
    ok(at.selectbox(key="release_mech").set_value("fenwick-fda").run())  # a reader's choice is kept ...
    ok(at.select_slider(key="epsilon").set_value(0.5).run())
    assert at.selectbox(key="release_mech").value == "fenwick-fda"
    assert "Your choice, Fenwick + FDA" in next(c.value for c in at.caption if c.value.startswith("Default:"))
    ok(at.radio(key="noise").set_value("gaussian").run())
    gauss = at.selectbox(key="release_mech")
    assert LABELS["sqrt"] in gauss.options  # Gaussian: released on the 2^-k lattice (dpviz.stream.lattice)
    ok(gauss.set_value("sqrt").run())
    ok(at.radio(key="noise").set_value("laplace").run())
    assert at.selectbox(key="release_mech").value == best_releasable("mean", "laplace", 181)  # never a refusal


def test_private_release_of_sqrt_on_the_lattice(at):
    """With Gaussian noise the page releases the square-root factorisation (discrete Gaussian on 2^-k ℤ)."""
    ok(at.radio(key="noise").set_value("gaussian").run())
    ok(at.selectbox(key="release_mech").set_value("sqrt").run())
    draw_release(at)
    (table,) = release_tables(at)
    assert len(table) == 181 and np.isfinite(table["released_total"].to_numpy(dtype=float)).all()
    assert not np.allclose(table["released_total"], flights_truth())
    assert at.success and "discrete Gaussian" in at.success[0].value


def test_private_release_panel(at):
    assert not release_tables(at)
    assert any("No private release drawn" in c.value for c in at.caption)
    draw_release(at)
    (first,) = release_tables(at)
    assert list(first.columns) == ["t", "date", "released_total", "variance", "std"] and len(first) == 181
    truth = flights_truth()
    for col in ("t", "released_total", "variance", "std"):
        assert not np.array_equal(first[col].to_numpy(dtype=float), truth)
    assert not np.allclose(first["released_total"], truth)
    assert at.success and "181 rows" in at.success[0].value and "discrete Laplace" in at.success[0].value
    labels = [b.proto.label for b in at.get("download_button")]
    assert "Download the release (CSV)" in labels and "Download its description (JSON)" in labels
    draw_release(at)  # a second click draws fresh noise
    (second,) = release_tables(at)
    assert not np.array_equal(first["released_total"], second["released_total"])
    np.testing.assert_allclose(first["variance"], second["variance"])  # analytic: no data, no draw
    # changing ε drops the stale release
    ok(at.select_slider(key="epsilon").set_value(0.5).run())
    assert not release_tables(at) and any("No private release drawn" in c.value for c in at.caption)
    draw_release(at)
    (third,) = release_tables(at)
    assert third["variance"].iloc[0] > 2 * first["variance"].iloc[0]
    ok(at.selectbox(key="release_mech").set_value("honaker").run())  # another mechanism: dropped too
    assert not release_tables(at)


def test_private_release_gaussian_and_synthetic(at):
    ok(at.radio(key="noise").set_value("gaussian").run())
    ok(at.radio(key="stream_source").set_value("synthetic").run())
    ok(at.select_slider(key="syn_length").set_value(64).run())
    draw_release(at)
    (table,) = release_tables(at)
    assert list(table.columns) == ["t", "released_total", "variance", "std"] and len(table) == 64
    assert "discrete Gaussian" in at.success[0].value


def test_private_release_refuses_non_integer_upload(at):
    ok(at.radio(key="stream_source").set_value("upload").run())
    upload_file(at, "frac.csv", b"count\n1\n2\n2.5\n4\n")
    assert metrics(at)["Horizon N"] == "4"  # the simulation takes it
    draw_release(at)
    assert not release_tables(at)
    assert any("step 3" in e.value and "not an integer" in e.value for e in at.error)


# ---- real browser --------------------------------------------------------------------------------


def test_browser_epsilon_slider_changes_numbers_then_a_private_release(page, streamlit_server):
    """One page load for both (each browser test's load costs CI several seconds)."""
    open_page(page, streamlit_server, "Stream")
    wait_plotly(page, 3)
    expect(page.get_by_text("Simulation — not a private release.")).to_be_visible()
    fda = metric_value(page, FDA_RMSE)
    expect(fda).to_have_text(re.compile(r"^\d"))
    f0 = fda.inner_text()
    set_slider_keys(page, "Privacy budget ε (log scale)", "ArrowLeft", 2)  # 1 -> 0.7 -> 0.5
    expect(page.get_by_role("slider", name="Privacy budget ε (log scale)")).to_have_attribute("aria-valuetext", "0.5")
    wait_idle(page)
    expect(fda).not_to_have_text(f0)
    # two key presses = two reruns (ε 0.7 then 0.5); the first may still be on screen: wait for the last one
    assert wait_for_number(fda, 2 * num(f0)) == pytest.approx(2 * num(f0), rel=2e-3)
    expect(page.locator("[data-testid=stException]")).to_have_count(0)
    wait_idle(page)
    grid, name, header = draw_private_release(page, re.compile(r"^Private release ready: 181 rows"))
    expect(grid).to_contain_text("released_total")
    assert name == "flights.stream-release.csv" and header.startswith("t,date,released_total")
    with page.expect_download() as dl:
        page.get_by_role("button", name=re.compile(r"^Simulated series \(CSV")).click()
    assert "simulation" in dl.value.suggested_filename and "release" not in dl.value.suggested_filename
    expect(page.locator("[data-testid=stException]")).to_have_count(0)


def test_browser_play_and_upload(page, streamlit_server):
    open_page(page, streamlit_server, "Stream")
    wait_plotly(page, 3)
    page.get_by_role("button", name="Play").click()
    expect(page.get_by_text(re.compile(r"^Step \d+ of 181"))).not_to_have_text(re.compile(r"^Step 181 of 181"))
    expect(page.get_by_text(re.compile(r"^Step (1\d|[2-9]\d|1\d\d) of 181"))).to_be_visible(timeout=15_000)  # advancing
    page.get_by_role("button", name="Pause").click()
    expect(page.get_by_role("button", name="Play")).to_be_visible()
    wait_idle(page)
    page.locator("[data-testid=stRadio]").first.get_by_text("Upload a CSV").click()
    expect(page.locator("[data-testid=stFileUploader]")).to_be_visible(timeout=30_000)  # after the rerun the click starts
    wait_idle(page)
    upload(page, DATA / "stream_good.csv")
    expect(metric_value(page, "Horizon N")).to_have_text("20")
    wait_idle(page)
    upload(page, DATA / "stream_bad_negative.csv")
    expect(page.locator("[data-testid=stAlertContentError]")).to_contain_text("-2 is negative")
    wait_idle(page)
    expect(metric_value(page, "Horizon N")).to_have_text("181")  # the earlier file is dropped: bundled flights
    expect(page.locator("[data-testid=stException]")).to_have_count(0)


def test_matrices_of_any_mechanism(at):
    """Issue 20: the matrix heatmaps show the new mechanisms too (W = R Q for each), not only FDA's M, B, Σ."""
    ok(at.number_input(key="horizon").set_value(31).run())
    assert {"m_heatmap", "b_heatmap", "sigma_heatmap"} <= chart_keys(at)
    ok(at.selectbox(key="matrix_mech").set_value("kary").run())
    figs = {k: next(plotly_json(at, i) for i, c in enumerate(plotly_charts(at)) if k in c.proto.id)
            for k in ("q_heatmap", "r_heatmap")}
    q = np.asarray(plotly_z(at, next(i for i, c in enumerate(plotly_charts(at)) if "q_heatmap" in c.proto.id)),
                   dtype=float)
    r = np.asarray(plotly_z(at, next(i for i, c in enumerate(plotly_charts(at)) if "r_heatmap" in c.proto.id)),
                   dtype=float)
    np.testing.assert_allclose(r @ q, np.tril(np.ones((31, 31))), atol=1e-9)
    assert "m_heatmap" not in chart_keys(at) and LABELS["kary"] in figs["q_heatmap"]["layout"]["title"]["text"]
