"""pages/6_Histogram.py (AppTest, in-process): the fifth capability's page, built from dpviz.ui alone."""

from __future__ import annotations

from tests.apptest_helpers import plotly_charts, app_test, ok, upload_bytes

PAGE = "pages/6_Histogram.py"


def _table(at, column: str):
    return next(d.value for d in at.dataframe if column in d.value.columns)


def test_loads_the_bundled_sample_and_simulates() -> None:
    at = ok(app_test(PAGE))
    assert len(plotly_charts(at)) == 2
    table = _table(at, "RMSE per bin")
    assert list(table["method"]) == ["gmc", "flat"]
    assert "Simulation — not a private release" in " ".join(str(i.value) for i in at.info)


def test_epsilon_moves_the_error() -> None:
    at = ok(app_test(PAGE))
    before = _table(at, "RMSE per bin")["RMSE per bin"].to_numpy()
    ok(at.select_slider(key="histogram_eps").set_value(0.1).run())
    after = _table(at, "RMSE per bin")["RMSE per bin"].to_numpy()
    assert (after > 5 * before).all()  # ε 10× smaller: the same draw scaled 10×


def test_a_private_release_is_charged_and_shows_no_truth() -> None:
    at = ok(app_test(PAGE))
    ok(at.button(key="histogram_release_button").click().run())
    rel = _table(at, "released")
    assert list(rel.columns[:2]) == ["bin", "released"] and "true" not in rel.columns
    assert any("charged" in str(c.value) for c in at.caption)


def test_an_upload_is_binned_on_the_typed_bins_and_a_bad_file_is_one_error() -> None:
    at = ok(app_test(PAGE))
    ok(at.radio(key="histogram_source").set_value("upload").run())
    upload_bytes(at, "histogram_file", "ages.csv", b"age\n23\n35\n35\n71\n150\n")
    assert "10 bins" in " ".join(str(c.value) for c in at.caption)
    upload_bytes(at, "histogram_file", "bad.csv", b"age\n23\nforty\n")
    errors = [e.value for e in at.error]
    assert any("row 3: field 'age': expected a number, got 'forty'" in e for e in errors), errors


def test_an_uploaded_counts_file_can_be_released_and_is_charged() -> None:
    """A bin,count upload (no records): the page's ledger identity comes from what it loaded (no server path is
    opened for a browser), so private releases stay on and a draw is charged."""
    at = ok(app_test(PAGE))
    ok(at.radio(key="histogram_source").set_value("upload").run())
    upload_bytes(at, "histogram_file", "counts.csv", b"bin,count\n[0, 10),3\n[10, 20),5\n")
    errors = [e.value for e in at.error]
    assert not errors, errors
    ok(at.button(key="histogram_release_button").click().run())
    assert any("charged" in str(c.value) for c in at.caption)
