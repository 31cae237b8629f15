"""pages/7_Ledger.py: AppTest (in process). The page shows the ledgers the server names (the configured
server ledger, this session's own) and never opens a path typed in the browser (issue 17, point 4)."""

import os
import sys

import pytest

from dpviz.core.noise import Noise
from dpviz.ledger.accounts import Charge, DatasetBudget
from dpviz.ledger.identity import DatasetId
from dpviz.ledger.store import open_ledger
from tests.apptest_helpers import plotly_charts, app_test, metrics, ok

PAGE = "pages/7_Ledger.py"
TREE = DatasetId("b" * 64, "tree", "sample:county", "parsed tree")
STREAM = DatasetId("c" * 64, "stream", "/data/counts.csv", "count series")


def make_ledger(path, tmp_path):
    """A ledger with a budgeted tree (two releases, one killed before its write) and an unbudgeted stream."""
    with open_ledger(path, create=True) as led:
        led.set_budget(TREE, DatasetBudget(2.0, 1e-6))
        r = led.charge(TREE, Charge.of_noise(Noise.laplace(0.5, discrete=True)), mechanism="gmc",
                       source="sample:county", output=tmp_path / "a.csv")
        led.finish(r.release_id, "d" * 64)
        led.charge(TREE, Charge.of_noise(Noise.gaussian(0.01, discrete=True)), mechanism="gmc",
                   source="sample:county", output=tmp_path / "b.csv")
        led.charge(STREAM, Charge.of_noise(Noise.laplace(1.0, discrete=True)), mechanism="fenwick-fda",
                   source="counts.csv", output=tmp_path / "c.csv")
    return path


@pytest.fixture
def ledger(tmp_path, monkeypatch):
    """That ledger, configured as the server's through $DPVIZ_LEDGER."""
    path = make_ledger(tmp_path / "ledger.sqlite3", tmp_path)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("DPVIZ_LEDGER", str(path))
    return path


def test_shows_the_server_ledger_from_the_environment_and_has_no_path_box(ledger):
    at = ok(app_test(PAGE))
    assert not at.text_input and not at.text_area  # nothing to type a path into
    assert any(str(ledger) in c.value and "DPVIZ_LEDGER" in c.value for c in at.caption)
    m = metrics(at)
    assert m["Datasets"] == "2" and m["Releases"] == "3"
    summary = at.dataframe[0].value
    assert list(summary["name"]) == ["sample:county", "/data/counts.csv"]
    assert list(summary["budget"]) == ["(ε, δ) = (2, 1e-06)", "none (recorded, never refused)"]
    with open_ledger(ledger, readonly=True) as led:
        spent = led.dataset("b" * 12).spent
    assert m["Budget ε at δ = 1e-06"] == "2" and m["Spent ε"] == f"{spent.epsilon(1e-6):.4g}"
    assert m["Remaining ε"] == f"{2.0 - spent.epsilon(1e-6):.4g}"
    assert summary["spent ε"].iloc[0] == f"{spent.epsilon(1e-6):.4g}"  # text a person reads, never inf/None
    rel = at.dataframe[1].value
    assert list(rel["mechanism"]) == ["gmc", "gmc"] and list(rel["output SHA-256"]) == ["d" * 64, ""]
    assert list(rel["status"]) == ["written", "charged, no output recorded"]
    at.selectbox(key="ledger_dataset").set_value("c" * 64)
    at = ok(at.run())
    assert metrics(at)["Budget"] == "none" and metrics(at)["Remaining ε"] == "—"
    assert list(at.dataframe[1].value["charge"]) == ["ε = 1 (pure)"]
    assert "private" in at.warning[0].value  # the fingerprints warning


def test_the_ledger_flag_given_to_the_app_is_shown_over_the_environment(ledger, tmp_path, monkeypatch):
    other = make_ledger(tmp_path / "flag.sqlite3", tmp_path)
    with open_ledger(other, create=False) as led:
        led.set_budget(STREAM, DatasetBudget(9.0))
    monkeypatch.setattr(sys, "argv", ["app.py", "--ledger", str(other)])
    at = ok(app_test(PAGE))
    assert any(str(other) in c.value and "--ledger" in c.value for c in at.caption)
    assert list(at.dataframe[0].value["budget"])[1] == "ε = 9"


def test_a_configured_ledger_not_created_yet_is_not_created_by_the_page(tmp_path, monkeypatch):
    missing = tmp_path / "later.sqlite3"
    monkeypatch.setenv("DPVIZ_LEDGER", str(missing))
    at = ok(app_test(PAGE))
    assert "does not exist yet" in at.info[0].value and not missing.exists() and not at.text_input


def test_no_server_ledger_no_path_and_no_probe(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("DPVIZ_LEDGER", raising=False)
    at = ok(app_test(PAGE))
    assert "No server ledger is configured" in at.info[0].value and "make run LEDGER=PATH" in at.info[0].value
    assert not at.text_input and not at.dataframe and str(tmp_path) not in " ".join(c.value for c in at.caption)


def test_the_default_ledger_is_shown_when_it_exists(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    monkeypatch.delenv("DPVIZ_LEDGER", raising=False)
    (tmp_path / "dpviz").mkdir()
    make_ledger(tmp_path / "dpviz" / "ledger.sqlite3", tmp_path)
    at = ok(app_test(PAGE))
    assert metrics(at)["Datasets"] == "2" and any("default ledger" in c.value for c in at.caption)


def test_a_foreign_or_fifo_server_ledger_is_an_error_not_a_hang(tmp_path, monkeypatch):
    foreign = tmp_path / "notes.txt"
    foreign.write_text("hello\n")
    monkeypatch.setenv("DPVIZ_LEDGER", str(foreign))
    at = ok(app_test(PAGE))
    assert "not a dpviz ledger" in at.error[0].value and foreign.read_text() == "hello\n"
    fifo = tmp_path / "ledger.fifo"
    os.mkfifo(fifo)
    monkeypatch.setenv("DPVIZ_LEDGER", str(fifo))
    at = ok(app_test(PAGE, timeout=20))
    assert "FIFO" in at.error[0].value or "pipe" in at.error[0].value


def test_shows_this_sessions_ledger_after_page_draws(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("DPVIZ_LEDGER", raising=False)
    at = ok(app_test("pages/2_Stream.py"))
    for _ in range(2):
        ok(at.button(key="stream_release_button").click().run())
    at.switch_page(PAGE)
    at = ok(at.run())
    assert any("this session's ledger" in c.value for c in at.caption) and not at.text_input
    m = metrics(at)
    assert m["Datasets"] == "1" and m["Releases"] == "2" and m["Spent ε"] == "2"
    assert list(at.dataframe[0].value["name"]) == ["sample:flights"]
    # a server ledger configured afterwards: both are offered, by a choice between the two (never a path)
    server = make_ledger(tmp_path / "server.sqlite3", tmp_path)
    monkeypatch.setenv("DPVIZ_LEDGER", str(server))
    at = ok(at.run())
    assert at.radio(key="ledger_choice").options == ["The server's ledger", "This session's ledger"]
    assert metrics(at)["Datasets"] == "2"
    at = ok(at.radio(key="ledger_choice").set_value("session").run())
    assert metrics(at)["Datasets"] == "1"


def test_a_pure_budget_reads_in_words_and_draws_no_empty_line(tmp_path, monkeypatch):
    """Laplace-only releases under a pure budget: their zCDP total has no pure ε value. It read "Infinity" in the
    summary and drew an empty chart line; now it reads words and only the defined total is drawn."""
    import json

    from dpviz.ledger.views import NOT_DEFINED

    path = tmp_path / "pure.sqlite3"
    with open_ledger(path, create=True) as led:
        led.set_budget(STREAM, DatasetBudget(5.0))
        for eps in (0.5, 1.0):
            led.charge(STREAM, Charge.of_noise(Noise.laplace(eps, discrete=True)), mechanism="fenwick-fda",
                       source="counts.csv", output=tmp_path / "c.csv")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("DPVIZ_LEDGER", str(path))
    at = ok(app_test(PAGE))
    m = metrics(at)
    assert m["Budget ε (pure)"] == "5" and m["Spent ε"] == "1.5" and m["Remaining ε"] == "3.5"
    summary = at.dataframe[0].value
    shown = " ".join(str(v) for v in summary.to_numpy().ravel())
    assert "inf" not in shown.lower() and "None" not in shown and "nan" not in shown
    assert list(summary["next release may spend"]) == ["Laplace ε ≤ 3.5 (no Gaussian)"]
    code = at.code[0]
    assert f"zCDP {NOT_DEFINED}" in code.value and "inf" not in code.value and code.proto.wrap_lines
    fig = json.loads(next(c for c in plotly_charts(at) if "ledger_spent" in c.proto.id).proto.spec)
    names = [t["name"] for t in fig["data"]]
    assert len(names) == 1 and names[0].startswith("basic composition")  # no empty zCDP line
    assert any(NOT_DEFINED in c.value and "not drawn" in c.value for c in at.caption)
    assert [e.label for e in at.expander][0] == "What am I looking at?"


def test_spent_figure_and_words_units():
    import numpy as np
    import pandas as pd

    from dpviz.ledger.views import NOT_DEFINED, epsilon_words, next_release_words
    from dpviz.viz.ledger import spent_figure, undefined_ways

    frame = pd.DataFrame({"release": [4, 7], "ε (basic)": [0.5, 1.5], "ε (zCDP)": [np.nan, np.nan]})
    assert undefined_ways(frame) == ["ε (zCDP)"]
    fig = spent_figure(frame, 2.0)
    assert len(fig.data) == 1 and list(fig.data[0].y) == [0.5, 1.5] and list(fig.data[0].customdata) == [4, 7]
    assert fig.layout.shapes[0].y0 == 2.0  # the budget line
    both = pd.DataFrame({"release": [1], "ε (basic)": [0.3], "ε (zCDP)": [0.9]})
    assert len(spent_figure(both).data) == 2 and undefined_ways(both) == []
    assert epsilon_words(float("inf")) == NOT_DEFINED and epsilon_words(None) == "" and epsilon_words(0.25) == "0.25"
    assert next_release_words({"room_epsilon": 0.0, "room_rho": 0.0}) == "nothing (budget spent)"
    assert next_release_words({}) == "any (no budget set)"
    assert next_release_words({"room_epsilon": 1.0, "room_rho": 0.01}) == "Laplace ε ≤ 1 or Gaussian ρ ≤ 0.01"
