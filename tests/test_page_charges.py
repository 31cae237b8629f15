"""Every page draw is charged before it is shown (issue 17): AppTest in process, plus dpviz.ledger.session.

The ledger a page charges is the server's (``--ledger`` given to the app, ``$DPVIZ_LEDGER``, or the default
ledger if it exists) or else this browser session's own; draws accumulate, a draw over the dataset's budget
is refused with what is left, and showing a drawn release again charges nothing.
"""

import hashlib
import os
import stat
import sys

import pytest

from dpviz.stream.strategy import best_releasable

from dpviz.core.registry import load_sample
from dpviz.core.tables import to_csv_text
from dpviz.errors import InputError
from dpviz.ledger import session
from dpviz.ledger.accounts import DatasetBudget
from dpviz.ledger.identity import identify
from dpviz.ledger.store import open_ledger
from tests.apptest_helpers import ROOT, app_test, metrics, ok, upload_bytes

STREAM = "pages/2_Stream.py"
SPENT, LEFT, COUNT = "Spent ε on this dataset", "Remaining ε", "Releases charged"


def draw(at, cap: str = "stream"):
    return ok(at.button(key=f"{cap}_release_button").click().run())


def held_table(at, cap: str = "stream"):
    held = at.session_state[f"{cap}_private_release"] if f"{cap}_private_release" in at.session_state else None
    return None if held is None else held[1]


def session_path(at):
    return at.session_state[ui_key()].path


def ui_key() -> str:
    from dpviz import ui

    return ui.SESSION_LEDGER_KEY


def releases(path):
    with open_ledger(path, readonly=True) as led:
        return led.releases()


def flights_id():
    """sample:flights as the CLI identifies it (`stream release sample:flights --ledger ...`)."""
    return identify("stream", "sample:flights", load_sample("stream", "sample:flights"))


@pytest.fixture
def at():
    return ok(app_test(STREAM))


# ---- the per-session ledger ------------------------------------------------------------------------
def test_three_draws_charge_three_epsilon_to_the_session_ledger(at):
    assert metrics(at)[SPENT] == "0" and metrics(at)[COUNT] == "0"
    assert any("this session's ledger" in c.value and "ε = 1 (pure)" in c.value for c in at.caption)
    assert not any("not charged" in c.value for c in at.caption)
    for _ in range(3):
        draw(at)
    m = metrics(at)
    assert m[SPENT] == "3" and m[COUNT] == "3" and m[LEFT] == "no budget"
    rows = releases(session_path(at))
    assert [(r.capability, r.mechanism, r.charge_epsilon, r.status) for r in rows] == \
        [("stream", best_releasable("max", "laplace", 181), 1.0, "written")] * 3  # the page's release default
    assert {r.dataset for r in rows} == {flights_id().sha256}  # the CLI's identity of the same data
    # the recorded SHA-256 is the download's: the CSV of the release shown
    assert rows[-1].output_sha256 == hashlib.sha256(to_csv_text(held_table(at)).encode()).hexdigest()
    folder = session_path(at).parent
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700 and str(folder) != str(ROOT)


def test_showing_a_release_again_charges_nothing(at):
    draw(at)
    first = held_table(at)
    ok(at.run())  # a rerun (what any widget does)
    ok(at.select_slider(key="epsilon").set_value(0.5).run())  # other settings: not shown ...
    assert held_table(at) is not None and metrics(at)[COUNT] == "1"
    ok(at.select_slider(key="epsilon").set_value(1.0).run())  # ... and back: shown again, not drawn again
    assert held_table(at).equals(first) and any(d.value.equals(first) for d in at.dataframe)
    assert metrics(at)[SPENT] == "1" and len(releases(session_path(at))) == 1


def test_a_draw_over_the_session_budget_is_refused_with_what_is_left(at):
    at.number_input(key="stream_session_budget_epsilon").set_value(2.5)
    ok(at.button(key="stream_session_budget_set").click().run())
    assert metrics(at)[LEFT] == "2.5"
    draw(at)
    draw(at)
    assert metrics(at)[LEFT] == "0.5" and held_table(at) is not None
    draw(at)  # ε = 1 does not fit in 0.5
    (err,) = at.error
    assert err.value.startswith("Refused, nothing drawn") and "remaining" in err.value and "ε ≤ 0.5" in err.value
    assert held_table(at) is None and not any("released_total" in d.value.columns for d in at.dataframe)
    assert metrics(at)[SPENT] == "2" and len(releases(session_path(at))) == 2
    ok(at.select_slider(key="epsilon").set_value(0.5).run())  # a smaller draw still fits
    draw(at)
    assert not at.error and metrics(at)[SPENT] == "2.5" and metrics(at)[LEFT] == "0"


def test_a_gaussian_draw_needs_a_session_budget_with_delta(at):
    ok(at.radio(key="noise").set_value("gaussian").run())
    at.number_input(key="stream_session_budget_epsilon").set_value(5.0)
    ok(at.button(key="stream_session_budget_set").click().run())
    draw(at)
    assert "a pure ε budget admits no Gaussian release" in at.error[0].value and held_table(at) is None
    at.number_input(key="stream_session_budget_delta").set_value(1e-6)
    ok(at.button(key="stream_session_budget_set").click().run())
    draw(at)
    assert not at.error and held_table(at) is not None
    (row,) = releases(session_path(at))
    assert row.accounting == "zcdp" and row.charge_rho > 0


def test_a_draw_that_fails_after_its_charge_says_the_charge_stands(at):
    ok(at.radio(key="stream_source").set_value("upload").run())
    upload_bytes(at, "stream_upload_file", "frac.csv", b"count\n1\n2\n2.5\n4\n")
    draw(at)
    (err,) = at.error
    assert "charge stands" in err.value and "not an integer" in err.value and held_table(at) is None
    (row,) = releases(session_path(at))
    assert row.status == "charged" and metrics(at)[SPENT] == "1"


# ---- the server's ledger ---------------------------------------------------------------------------
def test_three_draws_charge_the_server_ledger_named_by_the_environment(tmp_path, monkeypatch):
    path = tmp_path / "server.sqlite3"
    monkeypatch.setenv("DPVIZ_LEDGER", str(path))
    at = ok(app_test(STREAM))
    assert not path.exists()  # showing the page creates nothing
    assert any("the server's ledger" in c.value and str(path) in c.value for c in at.caption)
    for _ in range(3):
        draw(at)
    assert metrics(at)[SPENT] == "3" and metrics(at)[COUNT] == "3"
    rows = releases(path)
    assert len(rows) == 3 and {r.dataset for r in rows} == {flights_id().sha256}
    assert ui_key() not in at.session_state  # no per-session ledger when the server has one
    ok(at.run())
    assert len(releases(path)) == 3


def test_the_server_ledger_budget_set_on_the_cli_refuses_a_page_draw(tmp_path, monkeypatch):
    path = tmp_path / "server.sqlite3"
    with open_ledger(path, create=True) as led:  # what `python -m dpviz ledger set-budget sample:flights` does
        led.set_budget(flights_id(), DatasetBudget(1.5))
    monkeypatch.setenv("DPVIZ_LEDGER", str(path))
    at = ok(app_test(STREAM))
    assert metrics(at)[LEFT] == "1.5"
    assert not [w for w in at.number_input if w.key == "stream_session_budget_epsilon"]  # set on the CLI only
    draw(at)
    draw(at)
    assert "Refused, nothing drawn" in at.error[0].value and "ε ≤ 0.5" in at.error[0].value
    assert len(releases(path)) == 1 and metrics(at)[SPENT] == "1"


def test_the_ledger_flag_given_to_the_app_wins_over_the_environment(tmp_path, monkeypatch):
    flag, env = tmp_path / "flag.sqlite3", tmp_path / "env.sqlite3"
    monkeypatch.setenv("DPVIZ_LEDGER", str(env))
    monkeypatch.setattr(sys, "argv", ["app.py", "--ledger", str(flag)])  # streamlit run app.py -- --ledger FLAG
    at = ok(app_test(STREAM))
    draw(at)
    assert len(releases(flag)) == 1 and not env.exists()


def test_the_default_ledger_is_the_servers_only_if_it_exists(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert session.server_ledger([]) is None
    default = tmp_path / "dpviz" / "ledger.sqlite3"
    default.parent.mkdir()
    open_ledger(default, create=True).close()
    at = ok(app_test(STREAM))
    draw(at)
    assert len(releases(default)) == 1 and ui_key() not in at.session_state


def test_a_fifo_as_the_server_ledger_is_refused_at_once(tmp_path, monkeypatch):
    fifo = tmp_path / "ledger.fifo"
    os.mkfifo(fifo)
    monkeypatch.setenv("DPVIZ_LEDGER", str(fifo))
    at = ok(app_test(STREAM, timeout=20))
    draw(at)
    assert any("FIFO" in e.value or "pipe" in e.value for e in at.error) and held_table(at) is None


# ---- uploads: identified by their content, as on the CLI -----------------------------------------
def test_an_uploaded_stream_is_the_cli_dataset_of_the_same_file(tmp_path, at):
    raw = (ROOT / "tests" / "data" / "stream_good.csv").read_bytes()
    ok(at.radio(key="stream_source").set_value("upload").run())
    upload_bytes(at, "stream_upload_file", "mine.csv", raw)
    draw(at)
    (row,) = releases(session_path(at))
    from dpviz.stream.io import load as load_source

    (tmp_path / "copy.csv").write_bytes(raw)
    assert row.dataset == identify("stream", tmp_path / "copy.csv", load_source(str(tmp_path / "copy.csv"))).sha256
    assert row.source == "upload:mine.csv"  # a name, never a server path


def test_an_uploaded_marginals_csv_is_the_cli_dataset_of_the_same_file(tmp_path):
    raw = (ROOT / "tests" / "data" / "marginals_good.csv").read_bytes()
    at = ok(app_test("pages/3_Marginals.py"))
    ok(at.radio(key="marginals_source").set_value("upload").run())
    upload_bytes(at, "marginals_upload_file", "people.csv", raw)
    ok(at.checkbox(key="marginals_structure_from_data").check().run())  # an upload declares or opts out
    draw(at, "marginals")
    (tmp_path / "people.csv").write_bytes(raw)
    cli = identify("marginals", tmp_path / "people.csv")
    rows = releases(session_path(at))
    assert [r.dataset for r in rows] == [cli.sha256] and rows[0].accounting == "zcdp"


# ---- dpviz.ledger.session --------------------------------------------------------------------------
@pytest.mark.parametrize("argv, want", [
    ([], None), (["--ledger", "a.sqlite3"], "a.sqlite3"), (["--ledger=b.sqlite3"], "b.sqlite3"),
    (["-q", "-x", "tests/test_x.py", "--ledger", "c", "--other"], "c"), (["--ledger", "a", "--ledger", "d"], "d"),
])
def test_ledger_flag(argv, want):
    assert session.ledger_flag(argv) == want


@pytest.mark.parametrize("argv", [["--ledger"], ["--ledger", ""], ["--ledger="]])
def test_ledger_flag_without_a_path_is_an_input_error(argv):
    with pytest.raises(InputError, match="--ledger"):
        session.ledger_flag(argv)


def test_session_ledger_folder_is_private_and_removed():
    own = session.SessionLedger()
    folder = own.path.parent
    assert folder.is_dir() and stat.S_IMODE(folder.stat().st_mode) == 0o700 and not own.path.exists()
    ds = session.page_dataset("stream", ("bundled", "flights"), load_sample("stream", "sample:flights").counts)
    assert ds.sha256 == flights_id().sha256 and ds.name == "sample:flights"
    session.set_budget(own.ledger, ds, 2.0)
    assert own.path.exists()
    own.cleanup()
    assert not folder.exists()


def test_server_budgets_are_not_set_from_a_page(tmp_path):
    where = session.PageLedger(tmp_path / "l.sqlite3", "server", "DPVIZ_LEDGER")
    with pytest.raises(InputError, match="set-budget"):
        session.set_budget(where, flights_id(), 1.0)
    assert not where.path.exists()


def test_source_labels_never_name_a_server_path():
    assert session.source_label(("bundled", "sample:county")) == "sample:county"
    assert session.source_label(("bundled", "flights")) == "sample:flights"
    assert session.source_label(("upload", "x.csv", "ab12")) == "upload:x.csv"
    assert session.source_label(("synthetic", "balanced", 1000)) == "synthetic:balanced,1000"
    assert session.identity_key(("upload", "x.csv", "ab12", ("a",), 10, "quantile")) == ("upload", "x.csv", "ab12")


def test_page_draw_output_is_recorded_as_a_label_not_a_server_path(tmp_path):
    """A page's download is no file on the server: the ledger keeps its label as given, never resolved
    against the server's working directory."""
    from dpviz.ledger.accounts import Charge
    from dpviz.ledger.identity import DatasetId
    from dpviz.ledger.store import open_ledger
    from dpviz.core.noise import Noise

    ds = DatasetId("0" * 64, "stream", "sample:flights", "counts")
    with open_ledger(tmp_path / "l.sqlite3", create=True) as led:
        led.charge(ds, Charge.of_noise(Noise.laplace(1.0, discrete=True)), mechanism="fenwick", source="sample:flights",
                   output="dashboard download flights.stream-release.csv")
        rows = led._con.execute("SELECT output FROM releases").fetchall()
    assert [tuple(r) for r in rows] == [("dashboard download flights.stream-release.csv",)]
