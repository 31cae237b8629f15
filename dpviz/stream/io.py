"""Read a count stream from a CSV (upload or file): a count column and an optional timestamp column.

Errors are :class:`~dpviz.errors.InputError` naming the line of the file (1-based, as in an editor;
the data row too) and what was expected. A header row is required; a row may have fewer fields than
the header (the missing ones are empty) but never more: a value shifted out of its column is refused,
not re-read as another column.

Caps and bounds (module constants; the CLI's ``--max-bytes`` / ``--max-steps`` and the keyword
arguments raise the caps), all checked before the work they guard:

* :data:`MAX_BYTES` — the size of the file, from its size on disk (or ``len(bytes)``) before anything is
  read, and again while a file object is read in chunks;
* :data:`~dpviz.stream.fenwick.MAX_STEPS` — the rows: data lines are counted while the file is read in
  4 MiB chunks, before anything is parsed (and the rows exactly after parsing);
* :data:`~dpviz.stream.fenwick.MAX_COUNT` per step and :data:`~dpviz.stream.fenwick.MAX_TOTAL` for the
  running total (exact comparisons: :func:`dpviz.stream.fenwick.bound_violation`);
* :data:`MAX_LINE_BYTES` on every line, the header included (``--max-line-bytes``), checked on each chunk
  while reading: a file of one huge line (a million columns) is refused after its first chunk, in
  bounded memory, before anything is parsed.

Only the count and time columns are parsed into values (other columns are tokenised and checked for
their number of fields, never materialised), so the work is linear in the file whatever its number of
columns. Messages quote at most :data:`SHOWN` characters of a value or of the header.

A NUL byte, a UTF-16 file and a header that is only byte-order marks are refused with a message; any
number of UTF-8 byte-order marks before the header is dropped. A Parquet file or folder
(:func:`dpviz.core.records.is_parquet`) is read column-selectively (the count and time columns only) and
parsed as the CSV of those columns (line L is row L - 1). Events (one row per event, no count column:
:func:`stream_from_events`, ``--bucket``) are counted per time bucket by :func:`dpviz.core.records.count_records`. The bytes are read by the one capped reader,
:func:`dpviz.core.reader.read_capped` (so a gzip-compressed CSV is read too, its decompressed size under
:data:`MAX_BYTES`; a FIFO or a device is refused before it is opened); :data:`WORDING` names the caps.
"""

from __future__ import annotations

import csv
import io
import os
import re
from pathlib import Path
from typing import IO, TYPE_CHECKING

import numpy as np

from dpviz.core.canonical import number
from dpviz.core.reader import Cap, Wording, decode, line_number, read_capped
from dpviz.errors import InputError
from dpviz.stream.fenwick import MAX_COUNT, MAX_STEPS, MAX_TOTAL, bound_violation
from dpviz.stream.model import StreamData

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["read_stream_csv", "stream_from_events", "load", "canonical_bytes", "CANONICAL", "WORDING",
           "MAX_BYTES", "MAX_STEPS", "MAX_COUNT", "MAX_TOTAL", "MAX_LINE_BYTES", "COUNT_NAMES", "TIME_NAMES",
           "CAPS_HELP"]

MAX_BYTES = 100_000_000
"""Default cap on the size of a stream file or upload in bytes (the server's upload limit is 100 MB too)."""
MAX_LINE_BYTES = 65_536
"""Default cap on the length of a line (the header included), in bytes: a stream CSV has a count column
and perhaps a timestamp and a few more."""
SHOWN = 60
"""At most this many characters of a value or of a header are quoted in a message."""
COUNT_NAMES = ("count", "counts", "value", "n")
TIME_NAMES = ("timestamp", "date", "time", "datetime", "period")
CAPS_HELP = (f"at most {MAX_STEPS:,} rows (2^20) and {MAX_BYTES // 1_000_000:,} MB, lines of at most "
             f"{MAX_LINE_BYTES:,} bytes, counts at most {MAX_COUNT:,} per step and a running total below 2^53")
"""The caps and bounds in one phrase, for ``--help`` and the page."""
EVENTS = "(events)"
"""The count column of a stream counted from events (:func:`stream_from_events`): its ledger identity is the
records file's (``stream.hooks.counted_from_records``), not the counts'."""
CANONICAL = "parsed count series in time order, one count a line"
"""What :func:`canonical_bytes` serialises (the ledger shows it with a dataset's identity)."""

_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")
_BREAK = re.compile(r"\r\n|\r|\n")
_ZONE = r"(Z|[+-]\d\d:?\d\d|\b[A-Z]{3,4})$"
"""A time-zone suffix of a timestamp (``Z``, ``+01:00``, ``UTC``), for the message on mixed zones."""
_RELATIVE = ("now", "today", "yesterday", "tomorrow")
"""Words pandas reads as the current time: never a date in a data file."""


WORDING = Wording(
    call="read_stream_csv", rows="rows", text="a CSV (plain text)", what="CSV",
    size=Cap("MAX_BYTES", "--max-bytes", "max_bytes", ", above the size cap; the cap is {limit} bytes (MAX_BYTES)", None),
    row_cap=Cap("MAX_STEPS", "--max-steps", "max_steps",
                " is too long for a stream; the cap is {limit} steps (MAX_STEPS)", None),
    line_cap=Cap("MAX_LINE_BYTES", "--max-line-bytes", "max_line_bytes", ", the line cap (MAX_LINE_BYTES; checked "
                 "while reading): a stream CSV has a count column and a few more", None),
    row_message="{label}: more than {limit} rows", line_message="{label}: line {line} is longer than {limit} bytes")
"""How the stream reader's caps are named in messages (:mod:`dpviz.core.reader`: one format for every reader)."""


def _too_long(label: str, rows: str, max_steps: int) -> InputError:
    """The row cap's message once the rows are known exactly (after parsing, or a bundled sample's length)."""
    return WORDING.message(f"{label}: {rows} rows", WORDING.row_cap, max_steps)


def _short(value: object, limit: int = SHOWN) -> str:
    """``repr`` of a value cut to ``limit`` characters (a message stays one readable line)."""
    text = str(value)
    return repr(text) if len(text) <= limit else repr(text[:limit]) + f"... ({len(text):,} characters)"


def _names(header: list[str], limit: int = 10) -> str:
    """The first ``limit`` column names, each cut (for messages)."""
    shown = ", ".join(_short(h, 30) for h in header[:limit])
    return f"[{shown}" + (f", ... ({len(header):,} columns)]" if len(header) > limit else "]")


def _refuse_utf16(label: str, first: bytes) -> None:
    """The first chunk of a UTF-16 file (its byte-order mark) is refused by name, before its NUL bytes are."""
    if first.startswith(_UTF16_BOMS):
        raise InputError(f"{label}: the file is UTF-16 text; save it as a UTF-8 CSV")


def _read_capped(source: object, max_bytes: int, max_steps: int,
                 max_line_bytes: int = MAX_LINE_BYTES) -> tuple[bytes, str]:
    """(the raw bytes, gzip input decompressed; the label of the parser's messages) read by
    :func:`dpviz.core.reader.read_capped`: stops at more than ``max_bytes`` bytes (from the file's size before
    it is opened, then while reading or decompressing), more than ``max_steps`` data lines (blank lines and the
    header not counted), a line longer than ``max_line_bytes``, a UTF-16 file and a NUL byte, all before
    anything is parsed; a FIFO or a device is refused before it is opened."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        label = "the CSV upload"
    elif isinstance(source, (str, os.PathLike)):
        label = f"CSV {Path(source).name!r}"
    else:
        name = getattr(source, "name", None)
        label = f"CSV {Path(str(name)).name!r}" if isinstance(name, str) and name else "the CSV file"
    got = read_capped(source, max_bytes=max_bytes, max_rows=max_steps, max_line_bytes=max_line_bytes, header=1,
                      refuse_nul=True, label=label, wording=WORDING, peek=_refuse_utf16)
    return bytes(got.data), "CSV"


def _line_numbers(text: str, rows: int) -> np.ndarray:
    """1-based line of the header and of each of the first ``rows`` data rows (blank lines skipped, as
    the parser does). Error path only."""
    out = []
    for i, line in enumerate(_BREAK.split(text)):
        if line.strip(" \t"):
            out.append(i + 1)
            if len(out) > rows:
                break
    return np.array(out, dtype=np.int64)


def _where(lines: np.ndarray, r: int, column: str) -> str:
    """``row r (line L), column 'name'`` for data row ``r`` (0-based)."""
    line = int(lines[r + 1]) if r + 1 < lines.size else r + 2
    return f"row {r + 1} (line {line}), column {_short(column, 30)}"


def read_stream_csv(
    source: str | Path | bytes | IO,
    *,
    count_column: str | None = None,
    time_column: str | None = None,
    max_steps: int = MAX_STEPS,
    max_bytes: int = MAX_BYTES,
    max_line_bytes: int = MAX_LINE_BYTES,
) -> StreamData:
    """Parse a CSV with a header. The count column is ``count_column`` or one named count/counts/value/n,
    or the only column; the time column is ``time_column`` or one named timestamp/date/time/...

    ``source`` is a path, the file's bytes, or a binary file object. Caps: see the module docstring.
    """
    for name, cap in (("max_steps", max_steps), ("max_bytes", max_bytes), ("max_line_bytes", max_line_bytes)):
        if isinstance(cap, bool) or not isinstance(cap, (int, np.integer)) or cap < 1:
            raise InputError(f"{name}: expected a positive integer, got {cap!r}")
    from dpviz.core.records import is_parquet, parquet_csv

    if is_parquet(source):  # the count and time columns only, as CSV text for the parser below
        source = parquet_csv(source, lambda names: _parquet_columns(names, count_column, time_column),
                             max_bytes=max_bytes, max_rows=max_steps, wording=WORDING,
                             label=f"Parquet {Path(source).name!r}" if isinstance(source, (str, os.PathLike)) else None)
    raw, label = _read_capped(source, max_bytes, max_steps, max_line_bytes)
    text = decode(raw)
    header = _header(text, label)
    if not any(header):
        raise InputError(f"{label}: the header (line 1) is empty; expected column names such as 'count'")
    _check_fields(raw, text, len(header), label)
    tcol = _pick(header, time_column, TIME_NAMES, "time column", label)
    ccol = _pick(header, count_column, COUNT_NAMES, "count column", label)
    if ccol is None:
        rest = [i for i in range(len(header)) if i != tcol]
        if len(rest) != 1:
            raise InputError(f"{label}: cannot tell which column holds the counts among {_names(header)}; name it "
                             "'count' or pass the count column (--count-column)")
        ccol = rest[0]
    if ccol == tcol:
        raise InputError(f"{label}: the count column and the time column are both {_short(header[ccol])}")
    import pandas as pd  # after the caps (a refusal costs no import), and not at module level (fast CLI start)

    try:  # only the columns used become values: linear whatever the number of columns
        df = pd.read_csv(io.StringIO(text), header=None, dtype=str, keep_default_na=False, na_filter=False,
                         skipinitialspace=True, engine="c", usecols=sorted({ccol} | ({tcol} - {None})))
    except pd.errors.EmptyDataError:
        raise InputError(f"{label}: the file is empty; expected a header and at least one row of counts") from None
    except pd.errors.ParserError as exc:
        raise InputError(f"{label}: cannot parse the file ({_short(str(exc).strip().splitlines()[0], 200)})") from None
    rows = len(df) - 1
    if rows == 0:
        raise InputError(f"{label}: no data rows; expected at least one row of counts after the header")
    if rows > max_steps:
        raise _too_long(label, f"{rows:,}", max_steps)
    data = df.iloc[1:].reset_index(drop=True)

    def lines() -> np.ndarray:
        return _line_numbers(text, rows)

    counts = _counts(data[ccol], header[ccol], lines)
    stamps = _timestamps(data[tcol], header[tcol], lines) if tcol is not None else None
    return StreamData(counts=counts, timestamps=stamps, count_column=header[ccol],
                      time_column=None if tcol is None else header[tcol])


def _parquet_columns(names: list[str], count_column: str | None, time_column: str | None) -> list[str]:
    """The columns of a Parquet stream that the parser needs (as :func:`read_stream_csv` picks them)."""
    t = _pick(names, time_column, TIME_NAMES, "time column", "Parquet")
    c = _pick(names, count_column, COUNT_NAMES, "count column", "Parquet")
    if c is None:
        rest = [i for i in range(len(names)) if i != t]
        c = rest[0] if len(rest) == 1 else None
    return [names[i] for i in sorted({i for i in (t, c) if i is not None})] or names


def _declared_time(text: str, flag: str, seconds: int) -> int:
    """``--start``/``--end`` (an ISO date or date-time) as the start of its bucket, in seconds since 1970."""
    try:
        t = np.datetime64(str(text).strip(), "s").astype(np.int64)
    except ValueError:
        raise InputError(f"{flag}: {_short(text)} is not a date/time (expected e.g. 2024-03-01 or "
                         "2024-03-01T08:00)") from None
    return int(t // seconds * seconds)


def stream_from_events(source: str | Path | bytes, time_column: str, bucket: str | int, *, person: str | None = None,
                       max_contributions: int | None = None, dask: object = None, max_steps: int = MAX_STEPS,
                       max_bytes: int = MAX_BYTES, start: str | None = None, end: str | None = None) -> StreamData:
    """A count stream from events (one row per event, its time in ``time_column``; CSV, gzip CSV or Parquet):
    the number of events in each ``bucket`` (``day``, ``hour`` or N seconds, epoch-aligned), every bucket from
    ``start``'s to ``end``'s (declared, public: events outside are dropped and their number is never
    published), or without them from the first event's to the last one's (a range read from the data: not
    private). Empty buckets count 0. Counted by :func:`dpviz.core.records.count_records` (a contribution bound
    per ``person``, Dask with ``dask``)."""
    from dpviz.core.records import count_records, parse_bucket

    seconds = parse_bucket(bucket)
    if (start is None) != (end is None):
        raise InputError("--start and --end go together: the declared time range of the events")
    lo = hi = None
    if start is not None:
        lo, hi = _declared_time(start, "--start", seconds), _declared_time(end, "--end", seconds)
        if hi < lo:
            raise InputError(f"--end {_short(end)} is before --start {_short(start)}")
        if (hi - lo) // seconds + 1 > max_steps:
            raise _too_long("--start..--end", f"{(hi - lo) // seconds + 1:,} {bucket}", max_steps)
    groups = count_records(source, [time_column], bucket=(time_column, seconds), person=person,
                           max_contributions=max_contributions, dask=dask, max_bytes=max_bytes, wording=WORDING,
                           max_groups=None if lo is not None else max_steps, groups_name="time buckets with events")
    starts = np.asarray(groups.keys[time_column].to_numpy(zero_copy_only=False), np.int64)
    got = np.asarray(groups.counts)
    if lo is not None:
        inside = (starts >= lo) & (starts <= hi)
        starts, got = np.r_[lo, starts[inside]], np.r_[0, got[inside]]  # lo first: the range starts there
        starts, got = np.r_[starts, hi], np.r_[got, 0]
    steps = (starts - starts[0]) // seconds
    n = int(steps[-1]) + 1
    if n > max_steps:
        raise _too_long(f"the events of {time_column!r}", f"{n:,} {bucket}", max_steps)
    counts = np.zeros(n)
    np.add.at(counts, steps, got)
    over = bound_violation(counts)
    if over is not None:
        raise InputError(f"bucket {over[0] + 1}: {over[1]}")
    stamps = (starts[0] + np.arange(n, dtype=np.int64) * seconds).astype("datetime64[s]")
    return StreamData(counts=counts, timestamps=stamps, count_column=EVENTS, time_column=time_column)


_LINE = re.compile(r"([^\r\n]*)(?:\r\n|\r|\n|$)")
_FIELD_BLOCK = 1 << 22


def _header(text: str, label: str) -> list[str]:
    """The fields of the first non-blank line, stripped (the CSV module, quoting understood)."""
    for m in _LINE.finditer(text):
        line = m.group(1)
        if line.strip(" \t"):
            return [f.strip() for f in next(csv.reader([line], skipinitialspace=True))]
        if m.end() >= len(text):
            break
    raise InputError(f"{label}: the file is empty; expected a header and at least one row of counts")


def _check_fields(raw: bytes, text: str, want: int, label: str) -> None:
    """Refuse the first row with more fields than the header (a value shifted out of its column), naming
    its line. Without quotes: commas counted per line on the bytes, vectorised, block by block; with
    quotes: the CSV module counts the fields of each row."""
    found = _widest_unquoted(raw, want) if b'"' not in raw else _widest_quoted(text, want)
    if found is not None:
        line, saw = found
        raise InputError(f"{label}: line {line} has {saw} fields but the header has {want}; a row may not "
                         "have more fields than the header (quote a value that contains a comma)")


def _widest_unquoted(raw: bytes, want: int) -> tuple[int, int] | None:
    a = np.frombuffer(raw, np.uint8)
    carry = start = 0  # commas of the unfinished line, and where it starts
    for s in range(0, a.size, _FIELD_BLOCK):
        b = a[s:s + _FIELD_BLOCK]
        breaks = np.flatnonzero((b == 10) | (b == 13))
        per = np.bincount(np.searchsorted(breaks, np.flatnonzero(b == 44)), minlength=breaks.size + 1)
        per[0] += carry
        over = np.flatnonzero(per[:-1] >= want)
        if over.size:
            k = int(over[0])
            at = start if k == 0 else s + int(breaks[k - 1]) + 1
            return line_number(raw, at), int(per[k]) + 1
        if breaks.size:
            start = s + int(breaks[-1]) + 1
        carry = int(per[-1])
    return (line_number(raw, start), carry + 1) if carry >= want else None


def _widest_quoted(text: str, want: int) -> tuple[int, int] | None:
    reader = csv.reader(io.StringIO(text, newline=""), skipinitialspace=True)
    try:
        for row in reader:
            if len(row) > want:
                return reader.line_num, len(row)
    except csv.Error:  # e.g. a quote left open: the parser below says so
        return None
    return None


def _pick(header: list[str], given: str | None, names: tuple[str, ...], what: str, label: str) -> int | None:
    """Index of the column named ``given`` (exact, else case-insensitive), else of the first usual name."""
    folded = [h.lower() for h in header]
    if given is not None:
        hits = [i for i, h in enumerate(header) if h == given] or \
               [i for i, h in enumerate(folded) if h == str(given).strip().lower()]
        if not hits:
            raise InputError(f"{label}: {what} {_short(given)} not found; columns are {_names(header)}")
    else:
        hits = next(([i for i, h in enumerate(folded) if h == name] for name in names if name in folded), [])
        if not hits:
            return None
    if len(hits) > 1:
        raise InputError(f"{label}: the {what} {_short(header[hits[0]])} appears {len(hits)} times in the header; "
                         "column names must be unique")
    return hits[0]


def _counts(col: pd.Series, name: str, lines) -> np.ndarray:
    import pandas as pd

    text = col.str.strip()
    values = pd.to_numeric(text, errors="coerce").to_numpy(dtype=float)
    bad = np.flatnonzero(~np.isfinite(values) | (values < 0))
    if bad.size:
        r = int(bad[0])
        shown = text.iloc[r]
        what = ("is empty" if shown == "" else f"{shown[:SHOWN]} is negative" if values[r] < 0
                else f"{_short(shown)} is not a finite number")
        raise InputError(f"{_where(lines(), r, name)}: {what}; expected a non-negative count")
    over = bound_violation(values)
    if over is not None:
        raise InputError(f"{_where(lines(), over[0], name)}: {over[1]}")
    return values


def _timestamps(col: pd.Series, name: str, lines) -> np.ndarray:
    """datetime64 wall-clock times; one time zone throughout (or none), dropped after parsing."""
    import pandas as pd

    text = col.str.strip()
    try:
        stamps = pd.to_datetime(text, errors="coerce", format="mixed")
    except (ValueError, OverflowError):  # pandas refuses a column that mixes time zones
        zone = text.str.extract(_ZONE, expand=False).fillna("")
        r = int(np.argmax((zone != zone.iloc[0]).to_numpy()))
        raise InputError(f"{_where(lines(), r, name)}: {_short(text.iloc[r])} has another time zone than row 1 "
                         f"({_short(text.iloc[0])}); give every timestamp the same time zone, or none") from None
    bad = stamps.isna().to_numpy() | text.str.lower().isin(_RELATIVE).to_numpy()
    if bad.any():
        r = int(np.argmax(bad))
        raise InputError(f"{_where(lines(), r, name)}: {_short(text.iloc[r])} is not a date/time")
    if isinstance(stamps.dtype, pd.DatetimeTZDtype):
        stamps = stamps.dt.tz_localize(None)  # the local wall-clock times as written
    out = stamps.to_numpy()
    if out.dtype.kind != "M":  # pragma: no cover - pandas returns datetime64 or raised above
        raise InputError(f"column {_short(name)}: cannot read the timestamps as one kind of date/time")
    return out


def load(source: str | Path, *, count_column: str | None = None, time_column: str | None = None,
         max_steps: int = MAX_STEPS, max_bytes: int = MAX_BYTES, max_line_bytes: int = MAX_LINE_BYTES) -> StreamData:
    """The registry's ``load`` hook: ``sample:NAME`` (through :func:`dpviz.core.registry.load_sample`;
    :mod:`dpviz.stream.samples`) or a CSV path read by :func:`read_stream_csv`, under the same caps.

    A bundled sample has fixed columns: a ``count_column`` / ``time_column`` that is not one of them is
    refused (never silently ignored)."""
    from dpviz.core.registry import SAMPLE_PREFIX
    from dpviz.core.registry import load_source as _load_source

    data = _load_source("stream", source, lambda p: read_stream_csv(
        p, count_column=count_column, time_column=time_column, max_steps=max_steps, max_bytes=max_bytes,
        max_line_bytes=max_line_bytes))
    if str(source).startswith(SAMPLE_PREFIX):
        columns = [c for c in (data.time_column, data.count_column) if c is not None]
        for flag, given, actual in (("--count-column", count_column, data.count_column),
                                    ("--time-column", time_column, data.time_column)):
            if given is not None and str(given).strip().lower() != str(actual).lower():
                raise InputError(f"{flag} {_short(given)}: {source} has the columns {', '.join(columns)}; the option "
                                 "names a column of a CSV file (leave it out for a bundled sample)")
        if len(data) > max_steps:
            raise _too_long(str(source), f"{len(data):,}", max_steps)
    return data


def canonical_bytes(source: str | Path, data: StreamData) -> bytes:
    """The registry's ``canonical_bytes`` hook (the ledger's dataset identity, after its
    ``dpviz-ledger/1 stream`` line; a stream counted from events is charged to its records file instead,
    ``stream.hooks.counted_from_records``): the parsed count series in time order (every step, before any
    ``--horizon``), one number a line, integral counts without a decimal point. Column names, timestamps and
    formatting do not matter; the order does (it is the data). ``source`` is not needed: ``data`` is what
    :func:`load` read from it."""
    return ("\n".join(str(number(v)) for v in data.counts.tolist()) + "\n").encode("ascii")
