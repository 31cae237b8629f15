"""Fuzzing the stream CSV loader (issue 12's contract): whatever the bytes, :func:`read_stream_csv` returns a
valid :class:`StreamData` or raises :class:`InputError` — nothing else escapes.

Inputs: raw bytes, and stream-shaped CSVs assembled from hostile pieces (byte-order marks, NUL bytes, UTF-16,
ragged and short rows, quotes, CR line ends, blank lines, huge, negative and non-finite counts, dates that are
not dates, duplicate and blank column names), read with random column names and small caps now and then so that
the cap paths run too. What loads must hold the loader's invariants, and a release or a simulation of it must
also end in a result or an InputError. Derandomized with no example database: every run is the same.
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpviz.core.noise import Noise
from dpviz.errors import InputError
from dpviz.stream.fenwick import MAX_COUNT, MAX_TOTAL
from dpviz.stream.io import COUNT_NAMES, TIME_NAMES, read_stream_csv
from dpviz.stream.release import release
from dpviz.stream.mechanism import make_mechanism

RUNS = settings(derandomize=True, database=None, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
NAMES = st.sampled_from([*COUNT_NAMES, *TIME_NAMES, "COUNT", " count ", "", "x", "count\0", "\ufeffdate", "é"])
BAD_COUNTS = ["1e308", "-1e308", "1e12", str(MAX_COUNT), str(MAX_COUNT + 1), "900000000000", "-0", "-3", "2.5",
              " 7 ", "nan", "inf", "-inf", "", "0x10", "1_000", "+4", "99999999999999999999999", '"1,000"', '"',
              "1\0", "١"]
BAD_STAMPS = ["2024-02-30", "soon", "", "2024-01-01T25:00", "1e9", "\0", "now", "9999-12-31", "2024-01-01T00:00+01:00",
              "2024-01-01T00:00Z", "2024-01-01 00:00 UTC", "2024-01-01T00:00-05:30"]


def _mostly(good, bad: list[str]):
    """``good`` 14 times in 15, else one of the hostile ``bad`` values."""
    return st.integers(0, 14).flatmap(lambda k: good if k else st.sampled_from(bad))


COUNTS = _mostly(st.integers(0, 10**4).map(str), BAD_COUNTS)
STAMPS = _mostly(st.dates().map(str), BAD_STAMPS)
LINE_END = st.sampled_from(["\n", "\r\n", "\r"])


@st.composite
def stream_csv(draw) -> bytes:
    """A header of 1-3 columns, then rows of counts (and dates), mostly as wide as the header."""
    header = draw(st.one_of(st.sampled_from([["count"], ["date", "count"], ["n"]]),
                            st.lists(NAMES, min_size=1, max_size=3)))
    eol = draw(LINE_END)
    lines = [",".join(header)]
    dated = len(header) > 1 and draw(st.booleans())
    for _ in range(draw(st.integers(0, 12))):
        width = len(header) if draw(st.integers(0, 11)) else draw(st.integers(0, len(header) + 2))
        fields = [draw(STAMPS) if dated and i == 0 else draw(COUNTS) for i in range(width)]
        lines.append(",".join(fields))
        if draw(st.integers(0, 9)) == 0:
            lines.append(draw(st.sampled_from(["", " ", "\t"])))  # a blank line
    text = "\ufeff" * draw(st.sampled_from([0, 0, 0, 1, 2, 3])) + eol.join(lines) + draw(st.sampled_from(["", eol]))
    if draw(st.integers(0, 15)) == 0:
        return text.encode(draw(st.sampled_from(["utf-16", "utf-16-le", "latin-1", "cp1252"])), errors="replace")
    return text.encode("utf-8")


SOURCES = st.integers(0, 9).flatmap(lambda k: stream_csv() if k else st.binary(max_size=120))
COLUMN = st.integers(0, 5).flatmap(lambda k: st.none() if k else NAMES)
CAP = st.integers(0, 5).flatmap(lambda k: st.none() if k else st.integers(1, 8))


def _check(data, max_steps: int | None) -> None:
    counts = data.counts
    assert counts.dtype == np.float64 and counts.ndim == 1 and 1 <= counts.size <= (max_steps or 2**20)
    assert np.all(np.isfinite(counts)) and np.all(counts >= 0) and np.all(counts <= MAX_COUNT)
    assert np.cumsum(counts)[-1] <= MAX_TOTAL
    assert isinstance(data.count_column, str)
    if data.timestamps is not None:
        assert data.timestamps.shape == counts.shape and data.time_column is not None
        assert not np.any(np.isnat(data.timestamps))


def _load(raw: bytes, count: str | None, time: str | None, steps: int | None, size: int | None):
    kwargs = {"count_column": count, "time_column": time}
    if steps is not None:
        kwargs["max_steps"] = steps
    if size is not None:
        kwargs["max_bytes"] = size * 16
    try:
        return read_stream_csv(raw, **kwargs)
    except InputError as exc:
        assert str(exc) and "\n" not in str(exc)  # one line, shown as is by the CLI and the pages
        return None


@settings(RUNS, max_examples=250)
@given(raw=SOURCES, count=COLUMN, time=COLUMN, steps=CAP, size=CAP)
def test_only_input_error_escapes_the_stream_loader(raw, count, time, steps, size):
    data = _load(raw, count, time, steps, size)
    if data is not None:
        _check(data, steps)


@settings(RUNS, max_examples=200)
@given(raw=stream_csv(), mechanism=st.sampled_from(["naive", "fenwick-fda", "honaker"]))
def test_what_loads_releases_or_is_refused_cleanly(raw, mechanism):
    data = _load(raw, None, None, None, None)
    if data is None:
        return
    try:
        rel = release(data.counts, Noise.laplace(1.0, discrete=True), mechanism=mechanism)
    except InputError:
        assert not np.array_equal(data.counts, np.rint(data.counts))  # only non-integer counts are refused
    else:
        assert rel.prefix_sums.shape == data.counts.shape and np.all(np.isfinite(rel.variance))
    sim = make_mechanism(mechanism, len(data), Noise.laplace(1.0)).simulate(data.counts, np.random.default_rng(0))
    assert np.all(np.isfinite(sim.prefix_sums))
