"""Uploaded stream CSVs and synthetic Poisson streams."""

import numpy as np
import pytest

from dpviz.errors import InputError
from dpviz.core.registry import load_sample
from dpviz.core.registry import source_stem
from dpviz.stream.io import load as load_source
from dpviz.stream.io import read_stream_csv
from dpviz.stream.synthetic import poisson_stream


def test_reads_counts_and_timestamps():
    d = read_stream_csv(b"date,count\n2024-01-01,3\n2024-01-02,0\n2024-01-03, 7\n")
    np.testing.assert_array_equal(d.counts, [3, 0, 7])
    assert d.time_column == "date" and d.count_column == "count" and len(d) == 3
    assert str(d.timestamps[2])[:10] == "2024-01-03"


def test_single_column_without_timestamp_and_named_columns():
    d = read_stream_csv(b"visits\n1\n2\n")
    assert d.timestamps is None and d.count_column == "visits"
    d = read_stream_csv(b"when,a,b\n2024-01-01,1,9\n", count_column="b", time_column="when")
    np.testing.assert_array_equal(d.counts, [9])


@pytest.mark.parametrize(
    ("text", "match"),
    [
        (b"", "empty"),
        (b"count\n", "no data rows"),
        (b"count\n1\nabc\n3\n", r"row 2 \(line 3\).*'abc' is not a finite number"),
        (b"count\n1\n2\n\n", None),  # a trailing blank line is not a row
        (b"t,count\n1,1\n2,\n", r"row 2 \(line 3\).*empty"),
        (b"count\n1\n-4\n", r"row 2 \(line 3\).*negative"),
        (b"count\n1\ninf\n", "row 2"),
        (b"date,count\n2024-01-01,1\nnot a date,2\n", r"row 2 \(line 3\), column 'date'.*not a date"),
        (b"a,b\n1,2\n", "cannot tell which column"),
    ],
)
def test_clear_errors(text, match):
    if match is None:
        assert len(read_stream_csv(text)) == 2
        return
    with pytest.raises(InputError, match=match):
        read_stream_csv(text)


def test_too_long_and_missing_column():
    with pytest.raises(InputError, match="too long"):
        read_stream_csv(b"count\n" + b"1\n" * 11, max_steps=10)
    with pytest.raises(InputError, match="'hits' not found"):
        read_stream_csv(b"count\n1\n", count_column="hits")


def test_bundled_samples_through_the_registry():
    d = load_sample("stream", "sample:flights")
    assert len(d) == 181 and d.counts.min() > 10_000 and d.time_column == "date"
    assert np.all(d.counts == np.rint(d.counts))  # integer counts: releasable
    b = load_source("sample:bike")
    assert len(b) == 17_544 and b.time_column == "timestamp"
    with pytest.raises(InputError, match="sample:flights, sample:bike"):
        load_sample("stream", "sample:weather")
    assert source_stem("sample:bike") == "bike" and source_stem("/x/y/counts.csv") == "counts"


def test_poisson_stream_uses_the_generator():
    a = poisson_stream(5000, 4.0, np.random.default_rng(1), amplitude=0.5, period=24)
    b = poisson_stream(5000, 4.0, np.random.default_rng(1), amplitude=0.5, period=24)
    np.testing.assert_array_equal(a, b)
    assert a.dtype == np.int64 and a.min() >= 0 and abs(a.mean() - 4.0) < 0.15
    with pytest.raises(InputError, match="length"):
        poisson_stream(0, 1.0, np.random.default_rng(1))
    with pytest.raises(InputError, match="amplitude"):
        poisson_stream(3, 1.0, np.random.default_rng(1), amplitude=2.0)


# ---- registry hooks: load and canonical_bytes (the ledger's identity) -----------------------------------------------

# SHA-256 of the ledger's canonical form ("dpviz-ledger/1 stream" line + the hook's bytes), computed with
# dpviz.ledger.identity BEFORE the stream branch moved into dpviz.stream.io: ledger identities must not change.
PINNED_STREAM = {
    "sample:flights": "2f0b581a1c217f4a17620e16bd89e38cec5029ac932162902acb3e0fc6fb87cc",
    "sample:bike": "3bb0acc3bf3278877b1b1d2deeb2aeedc90353feb4611d621e926832ca2af9ee",
    "file": "12c36ba95be6dc3786aaeec210af7f4e6d109bde4e76ec45661758e8cb70d64e",
}


def _identity(cap: str, source, data) -> str:
    import hashlib

    from dpviz.core.registry import capability

    body = capability(cap).hook("canonical_bytes")(source, data)
    return hashlib.sha256(f"dpviz-ledger/1 {cap}\n".encode() + body).hexdigest()


@pytest.mark.parametrize("spec", ["sample:flights", "sample:bike", "file"])
def test_canonical_bytes_hook_pins_the_ledger_identity(spec, tmp_path):
    from dpviz.core.registry import capability

    if spec == "file":
        spec = tmp_path / "s.csv"
        spec.write_text("date,count\n2020-01-01,3\n2020-01-02,4.5\n2020-01-03,0\n")
    data = capability("stream").hook("load")(str(spec))
    assert _identity("stream", spec, data) == PINNED_STREAM["file" if not str(spec).startswith("sample:") else spec]


def test_canonical_bytes_is_the_count_series_in_order(tmp_path):
    from dpviz.stream.io import canonical_bytes

    a = read_stream_csv(b"when,n\n2024-01-01, 3\n2024-01-02,4.50\n")
    b = read_stream_csv(b"count\n3.0\n4.5\n")
    assert canonical_bytes("x.csv", a) == canonical_bytes("y.csv", b) == b"3\n4.5\n"
    assert canonical_bytes("x.csv", read_stream_csv(b"count\n4.5\n3\n")) != canonical_bytes("x.csv", b)


def test_load_hook_reads_samples_and_files_with_options(tmp_path):
    from dpviz.core.registry import capability

    load = capability("stream").hook("load")
    assert len(load("sample:flights")) == 181
    path = tmp_path / "s.csv"
    path.write_text("when,a,b\n2024-01-01,1,9\n")
    np.testing.assert_array_equal(load(str(path), count_column="b", time_column="when").counts, [9])
    with pytest.raises(InputError, match="does not exist"):
        load(str(tmp_path / "missing.csv"))


def test_a_gzip_csv_is_read_under_the_byte_cap(tmp_path):
    """The one capped reader (dpviz.core.reader) decompresses gzip input, its decompressed size under the cap."""
    import gzip

    assert read_stream_csv(gzip.compress(b"count\n1\n2\n")).counts.tolist() == [1, 2]
    path = tmp_path / "s.csv.gz"
    path.write_bytes(gzip.compress(b"date,count\n2024-01-01,5\n"))
    assert load_source(str(path)).counts.tolist() == [5]
    bomb = gzip.compress(b"count\n" + b"1\n" * 1000)
    assert len(bomb) < 100
    with pytest.raises(InputError, match=r"decompresses to more than 100 bytes.*--max-bytes"):
        read_stream_csv(bomb, max_bytes=100)


def test_cap_messages_name_the_file(tmp_path):
    path = tmp_path / "visits.csv"
    path.write_bytes(b"count\n" + b"1\n" * 20)
    with pytest.raises(InputError, match=r"CSV 'visits.csv': more than 10 rows is too long for a stream; the cap is "
                                         r"10 steps \(MAX_STEPS\); raise it with the CLI flag --max-steps N"):
        read_stream_csv(path, max_steps=10)
    with pytest.raises(InputError, match=r"the CSV upload: line 2 is longer than 5 bytes"):
        read_stream_csv(b"count\n123456\n", max_line_bytes=5)
