"""Uploaded stream CSVs and synthetic Poisson streams."""

import numpy as np
import pytest

from dpviz.errors import InputError
from dpviz.core.registry import load_sample
from dpviz.core.registry import source_stem
from dpviz.stream.io import load_source, read_stream_csv
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
