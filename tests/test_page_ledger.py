"""pages/7_Ledger.py: AppTest (in process) on a temporary ledger."""

import pytest

from dpviz.core.noise import Noise
from dpviz.ledger.accounts import Charge, DatasetBudget
from dpviz.ledger.identity import DatasetId
from dpviz.ledger.store import open_ledger
from tests.apptest_helpers import app_test, metrics, ok

PAGE = "pages/7_Ledger.py"
TREE = DatasetId("b" * 64, "tree", "sample:county", "parsed tree")
STREAM = DatasetId("c" * 64, "stream", "/data/counts.csv", "count series")


@pytest.fixture
def ledger(tmp_path, monkeypatch):
    """A ledger with a budgeted tree (two releases, one killed before its write) and an unbudgeted stream."""
    path = tmp_path / "ledger.sqlite3"
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("DPVIZ_LEDGER", str(path))
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


def test_shows_every_dataset_and_the_releases_of_one(ledger):
    at = ok(app_test(PAGE))
    assert at.text_input(key="ledger_path").value == str(ledger)
    m = metrics(at)
    assert m["Datasets"] == "2" and m["Releases"] == "3"
    summary = at.dataframe[0].value
    assert list(summary["name"]) == ["sample:county", "/data/counts.csv"]
    assert list(summary["budget"]) == ["(ε, δ) = (2, 1e-06)", "none (recorded, never refused)"]
    with open_ledger(ledger, readonly=True) as led:
        spent = led.dataset("b" * 12).spent
    assert m["Budget"] == "(ε, δ) = (2, 1e-06)" and m["Spent ε"] == f"{spent.epsilon(1e-6):.4g}"
    assert m["Remaining ε"] == f"{2.0 - spent.epsilon(1e-6):.4g}"
    rel = at.dataframe[1].value
    assert list(rel["mechanism"]) == ["gmc", "gmc"] and list(rel["output SHA-256"]) == ["d" * 64, ""]
    assert list(rel["status"]) == ["written", "charged, no output recorded"]
    at.selectbox(key="ledger_dataset").set_value("c" * 64)
    at = ok(at.run())
    assert metrics(at)["Budget"] == "none" and metrics(at)["Remaining ε"] == "—"
    assert list(at.dataframe[1].value["charge"]) == ["ε = 1 (pure)"]
    assert "private" in at.warning[0].value  # the fingerprints warning


def test_path_chooser_missing_and_foreign_files(ledger, tmp_path):
    at = ok(app_test(PAGE))
    missing = tmp_path / "nope.sqlite3"
    at.text_input(key="ledger_path").set_value(str(missing))
    at = ok(at.run())
    assert "No ledger at" in at.info[0].value and not missing.exists()  # never created by the page
    foreign = tmp_path / "notes.txt"
    foreign.write_text("hello\n")
    at.text_input(key="ledger_path").set_value(str(foreign))
    at = ok(at.run())
    assert "not a dpviz ledger" in at.error[0].value and foreign.read_text() == "hello\n"
    at.text_input(key="ledger_path").set_value(str(ledger))
    at = ok(at.run())
    assert metrics(at)["Datasets"] == "2"
