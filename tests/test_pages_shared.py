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
