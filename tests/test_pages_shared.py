"""What every capability page does the same way (AppTest): a bad first upload keeps the bundled data."""

import pytest

from tests.apptest_helpers import ROOT, app_test, metrics, ok, upload_bytes

DATA = ROOT / "tests" / "data"

# page, source radio, uploader key, bad file, words of its error, metric that shows the kept data
CASES = [
    ("pages/1_Tree.py", "tree_source", "upload", "tree_bad_cycle.csv", "cycle", ("Nodes n", "3,207")),
    ("pages/2_Stream.py", "stream_source", "stream_upload_file", "stream_bad_negative.csv", "negative",
     ("Horizon N", "181")),
]


@pytest.mark.parametrize("page, radio, uploader, bad, words, kept", CASES, ids=["tree", "stream"])
def test_bad_first_upload_shows_error_and_keeps_bundled_data(page, radio, uploader, bad, words, kept):
    at = ok(app_test(page))
    ok(at.radio(key=radio).set_value("upload").run())
    upload_bytes(at, uploader, bad, (DATA / bad).read_bytes())
    assert words in at.error[0].value
    assert metrics(at)[kept[0]] == kept[1]
    ok(at.run())  # a rerun keeps the message and the data: the upload is not silently dropped
    assert words in at.error[0].value and metrics(at)[kept[0]] == kept[1]


# ---- every page's Private release is charged (issue 17) --------------------------------------------
# page, capability, the bundled sample it opens on, the mechanism the page records, charge kind
RELEASE_PAGES = [
    ("pages/1_Tree.py", "tree", "sample:county", "pure"),
    ("pages/2_Stream.py", "stream", "sample:flights", "pure"),
    ("pages/3_Marginals.py", "marginals", "sample:titanic", "zcdp"),
    ("pages/4_Graph.py", "graph", "sample:karate", "pure"),
]


@pytest.mark.parametrize("page, cap, sample, accounting", RELEASE_PAGES, ids=[c[1] for c in RELEASE_PAGES])
def test_every_page_draw_is_charged_to_the_cli_identity_of_its_data(page, cap, sample, accounting):
    from dpviz.core.registry import load_sample
    from dpviz.ledger.identity import identify
    from dpviz.ledger.store import open_ledger

    import ui

    at = ok(app_test(page))
    assert not at.text_input and not at.text_area  # data comes from bundles or uploaded bytes, never a path
    assert any("charged to the privacy ledger before it is shown" in c.value for c in at.caption)
    assert not any("not charged" in c.value for c in at.caption)
    ok(at.button(key=f"{cap}_release_button").click().run())
    assert metrics(at)["Releases charged"] == "1"
    with open_ledger(at.session_state[ui.SESSION_LEDGER_KEY].path, readonly=True) as led:
        (row,) = led.releases()
        (dataset,) = led.datasets()
    cli = identify(cap, sample, None if cap == "marginals" else load_sample(cap, sample))
    assert (row.capability, row.accounting, row.status, row.source) == (cap, accounting, "written", sample)
    assert dataset.id == cli.sha256 and dataset.name == sample
    ok(at.run())  # shown again: not charged again
    assert metrics(at)["Releases charged"] == "1"
