"""Tree files as tables: bytes read under the caps, then CSV or JSON parsed into string columns.

:func:`read_table` reads a path or raw bytes through the one capped reader
:func:`dpviz.core.reader.read_capped` (sizes from ``stat``/``len`` first, bytes and rows while reading,
gzip decompressed under the same cap, a plain file read into one memory map; messages worded by
:data:`WORDING`), sniffs CSV or JSON from the first byte that is not white space or a byte-order mark,
and returns a :class:`Table`: lower-cased column names → stripped Arrow string columns, with what is
needed to name a line in a message. :mod:`dpviz.tree.formats` turns a Table into a tree.

Caps (each a keyword argument here and a CLI flag): :data:`MAX_BYTES` on the file size, :data:`MAX_NODES`
on the rows (a row is at least one node), counted while reading and again after parsing.

CSV is parsed by ``pyarrow.csv`` (on its threads): UTF-8, or Latin-1 when the bytes are not UTF-8.
A ``node,parent,count`` file whose ids and counts are integers in canonical decimal form has those
columns parsed as int64 during the read instead (no hashing of id strings, no second parse of the
counts); :func:`_canonical_integers` proves from byte lengths that the typed columns mean what the
strings would, and any other file takes the string path, which names bad lines. JSON is a list of
records or an object of equal-length column lists of scalars. A Parquet file or a folder of Parquet files
(:func:`dpviz.core.records.is_parquet`) is read by pyarrow under the same caps (bytes on disk, rows from its
footers, both before any data is read), its columns as text; its rows are named "record i" (0-based).
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv

from dpviz.core import arrow, reader
from dpviz.core.reader import Cap, Wording, read_capped, strip_boms
from dpviz.errors import InputError

__all__ = ["MAX_BYTES", "MAX_COUNT", "MAX_NODES", "BOM", "WORDING", "Table", "read_table"]


MAX_NODES = 5_000_000
"""Default cap on the nodes of a tree (and so on the rows of a tree file)."""


MAX_BYTES = 100_000_000
"""Default cap on the size of a tree file or upload (the page's upload limit, ``.streamlit/config.toml``)."""


MAX_COUNT = 2**53
"""Largest count of a node, and of all leaves together (9,007,199,254,740,992)."""


BOM = "\ufeff"


WORDING = Wording(
    call="load_tree_file", rows="data rows", what="input",
    size=Cap("MAX_BYTES", "--max-bytes", "max_bytes", ", above the size cap"),
    row_cap=Cap("MAX_NODES", "--max-nodes", "max_nodes",
                " (counted while reading), so the tree has more than the limit of {limit} nodes", "nodes"))
"""How the tree reader's caps are named in messages (:mod:`dpviz.core.reader`, one format for all readers)."""


_NODE_CAP = Cap("MAX_NODES", "--max-nodes", "max_nodes", ", more than the limit of {limit}", "nodes")


def _too_many_rows(label: str, max_rows: int) -> InputError:
    return WORDING.error(label, f"has more than {max_rows:,} data rows", WORDING.row_cap, max_rows)


def _read_bytes(source: str | Path | bytes, name: str | None, max_bytes: int, max_rows: int,
                peek: Callable[[str, bytes], None] | None = None) -> tuple[Any, str]:
    """(raw bytes, label) under the caps (:func:`dpviz.core.reader.read_capped`: the size from ``stat``/``len``
    first, then bytes and rows while reading, gzip decompressed under the same cap; a plain file is read
    into one anonymous memory map, no copy); ``peek(label, first chunk)`` may refuse early."""
    if isinstance(source, (str, os.PathLike)):
        label = name or Path(source).name
    elif isinstance(source, (bytes, bytearray, memoryview)):
        label = name or "upload"
    else:
        raise InputError(f"tree file: expected a path or bytes, got {type(source).__name__}")
    got = read_capped(source, max_bytes=max_bytes, max_rows=max_rows, label=label, wording=WORDING, peek=peek,
                      use_mmap=True)
    return got.data, label


@dataclass(eq=False)
class Table:
    """A parsed tree file: lower-cased column names → string columns (Arrow, values stripped of
    surrounding white space, missing = ``""``), with what is needed to name a row in a message."""

    name: str
    columns: dict[str, pa.Array]
    n: int
    json: bool = False
    raw: Any = field(default=None, repr=False)  # the CSV bytes (line numbers, error path only)

    def __contains__(self, col: str) -> bool:
        return col in self.columns

    def col(self, name: str) -> pa.Array:
        return self.columns[name]

    def where(self, ids: pa.Array | np.ndarray | None = None) -> Callable[[int], str]:
        """``where(i)``: "line L" (CSV) or "record i" (JSON), with the node id when ``ids`` is given."""
        lines: list[np.ndarray] = []

        def where(i: int) -> str:
            if self.json:
                loc = f"record {i}"
            else:
                if not lines:
                    lines.append(_data_line_numbers(self.raw))
                known = lines[0]
                loc = f"line {int(known[i]) if i < known.size else i + 2}"
            if ids is None:
                return loc
            node = ids[i].as_py() if isinstance(ids, pa.Array) else ids[i]
            return f"{loc} (node {str(node)!r})"  # an id read as an integer is shown as written

        return where


def _data_line_numbers(raw: bytes | None) -> np.ndarray:
    """1-based line number of every data row (non-empty lines after the header); error path only."""
    if raw is None:
        return np.zeros(0, np.int64)
    arr = np.frombuffer(raw, np.uint8)
    nl = np.flatnonzero(arr == 10)
    starts = np.concatenate(([0], nl + 1))
    ends = np.concatenate((nl, [arr.size]))
    length = ends - starts
    last = np.where(length > 0, arr[np.minimum(np.maximum(ends - 1, 0), max(arr.size - 1, 0))], 0) if arr.size else 0
    nonempty = np.flatnonzero((length > 1) | ((length == 1) & (last != 13)))
    return nonempty[1:] + 1  # the first non-empty line is the header


_NOT_SPACE = re.compile(rb"[^\s]")


_NOT_NEWLINE = re.compile(rb"[^\r\n]")


def _content_start(raw: bytes | bytearray) -> int | None:
    """Offset of the first byte that is neither a byte-order mark nor white space (None: no content)."""
    pos = 0
    while True:
        m = _NOT_SPACE.search(raw, pos)
        if m is None:
            return None
        if raw[m.start():m.start() + 3] != reader.BOM:
            return m.start()
        pos = m.start() + 3


def read_table(source: str | Path | bytes, name: str | None = None, *, max_bytes: int = MAX_BYTES,
               max_rows: int = MAX_NODES, check_header: Callable[[list[str], str], Any] | None = None,
               integer_columns: Callable[[list[str]], list[str]] | None = None) -> Table:
    """Read a CSV or JSON table from a path or raw bytes (the format is sniffed from the content) into
    string columns, under the caps (bytes before reading, rows while reading and before parsing).
    ``check_header(columns, label)`` may refuse a CSV from its header, before the body is parsed.

    ``integer_columns(columns)`` names columns a CSV may deliver as ``int64`` (nulls where empty)
    instead of strings. Those whose first lines hold integers are read typed (:func:`_first_row_integers`),
    and kept only when every typed value was written in canonical decimal form
    (:func:`_canonical_integers`), so that a typed column means exactly what its strings would; when a
    value is not such an integer, every column is read as strings."""
    from dpviz.core.records import is_parquet

    if is_parquet(source):
        return _parquet_table(source, name, max_bytes, max_rows, check_header)
    raw, label = _read_bytes(source, name, max_bytes, max_rows, _early_header_check(check_header))
    first = _content_start(raw)
    if first is None:
        raise InputError(f"{label} is empty: expected a header line and at least one data row")
    start = strip_boms(raw)  # the BOMs in front (Arrow skips at most one)
    if raw[first:first + 1] in (b"[", b"{"):
        table = _json_table(raw, start, label, max_rows)
    else:
        table = _csv_table(raw, start, label, check_header, integer_columns)
    if table.n == 0:
        raise InputError(f"{label} has a header but no data rows")
    if table.n > max_rows:
        raise _too_many_rows(label, max_rows)
    return table


def _parquet_table(source: str | Path | bytes, name: str | None, max_bytes: int, max_rows: int,
                   check_header: Callable[[list[str], str], Any] | None) -> Table:
    """A Parquet file, folder or upload as a :class:`Table` of stripped text columns (null = ``""``), the
    header checked from the schema before any data is read."""
    from dpviz.core.records import parquet_names, read_parquet

    label = name or (Path(source).name if isinstance(source, (str, os.PathLike)) else "upload")
    names = parquet_names(source, max_bytes=max_bytes, label=label, wording=WORDING)
    cols = _column_names(names, label)
    if check_header is not None:
        check_header(cols, label)
    table = read_parquet(source, max_bytes=max_bytes, max_rows=max_rows, label=label, wording=WORDING)
    if table.num_rows == 0:
        raise InputError(f"{label} has columns but no rows")
    columns = {}
    for c, col in zip(cols, table.columns):
        col = col.combine_chunks()
        col = col.dictionary_decode() if pa.types.is_dictionary(col.type) else col
        text = col if pa.types.is_string(col.type) else pc.cast(col, pa.string())
        columns[c] = _stripped(text.fill_null("") if text.null_count else text)
    return Table(name=label, columns=columns, n=table.num_rows, json=True)


def _column_names(names: list[str], label: str) -> list[str]:
    out = [str(c).replace(BOM, "").strip().lower() for c in names]
    seen: dict[str, int] = {}
    for i, c in enumerate(out):
        if c in seen:
            raise InputError(f"{label}: column {c!r} appears twice (columns {seen[c] + 1} and {i + 1}); "
                             "expected distinct column names")
        seen[c] = i
    return out


def _is_utf8(buf: pa.Buffer) -> bool:
    """Whether the bytes are valid UTF-8 (Arrow's validator on a one-value binary array: no copy)."""
    arr = pa.Array.from_buffers(pa.binary(), 1, [None, pa.py_buffer(np.array([0, buf.size], np.int32)), buf])
    try:
        arr.cast(pa.string())
    except pa.ArrowInvalid:
        return False
    return True


def _header_span(raw, start: int) -> tuple[int, int]:
    """(first byte, end) of the header line: the first line that is not empty (line numbers count the
    empty ones before it)."""
    m = _NOT_NEWLINE.search(raw, start)
    begin = m.start() if m else len(raw)
    end = raw.find(b"\n", begin)
    return begin, len(raw) if end < 0 else end


def _header_names(line: bytes, label: str, encoding: str) -> list[str]:
    """The fields of a CSV header line (quoting understood), as written."""
    try:
        names = pa_csv.read_csv(pa.py_buffer(line + b"\n"), read_options=pa_csv.ReadOptions(
            autogenerate_column_names=True, encoding=encoding),
            convert_options=pa_csv.ConvertOptions(strings_can_be_null=False)).to_pylist()[0]
    except (pa.ArrowInvalid, IndexError) as exc:
        raise InputError(f"{label}: line 1 is not a CSV header ({_arrow_message(exc)})") from None
    return [str(v) if v is not None else "" for v in names.values()]


def _early_header_check(check_header: Callable[[list[str], str], Any] | None):
    """``peek(label, first_chunk)`` for :func:`_read_bytes`: a CSV whose header fits no format is refused
    from the first chunk, before the rest of the file is read."""
    if check_header is None:
        return None

    def peek(label: str, head: bytes) -> None:
        first = _content_start(head)
        if first is None or head[first:first + 1] in (b"[", b"{"):
            return  # blank so far, or JSON: checked after parsing
        start = strip_boms(head)
        begin, end = _header_span(head, start)
        if end == len(head):
            return  # the header line goes on past this chunk: checked after reading
        line = bytes(head[begin:end])
        cols = _column_names(_header_names(line, label, "utf8" if _is_utf8(pa.py_buffer(line)) else "latin1"), label)
        check_header(cols, label)

    return peek


def _csv_table(raw: bytes | bytearray, start: int, label: str,
               check_header: Callable[[list[str], str], Any] | None = None,
               integer_columns: Callable[[list[str]], list[str]] | None = None) -> Table:
    """Parse the CSV in ``raw[start:]`` (no copy) into string columns: UTF-8, or Latin-1 when the bytes
    are not UTF-8 (every byte is then a character); ``integer_columns``: see :func:`read_table`."""
    begin, end = _header_span(raw, start)
    body = pa.py_buffer(raw).slice(begin)
    encoding = "utf8" if _is_utf8(body) else "latin1"
    names = _header_names(bytes(raw[begin:end]), label, encoding)
    cols = _column_names(names, label)
    if check_header is not None:
        check_header(cols, label)
    ints = [c for c in (integer_columns(cols) if integer_columns is not None else []) if c in cols]
    ints = _first_row_integers(raw, end, cols, ints)
    if ints:
        typed = _typed_csv(body, cols, ints, encoding)
        if typed is not None and _canonical_integers(raw, end, list(typed.values())):
            typed = {c: v if c in ints else _stripped(v) for c, v in typed.items()}
            return Table(name=label, columns=typed, n=len(next(iter(typed.values()))), raw=memoryview(raw)[start:])
    bad: list[Any] = []

    def on_bad_row(row) -> str:
        bad.append(row)
        return "error"

    keys = [f"c{i}" for i in range(len(names))]  # unique names for Arrow, whatever the header says
    try:
        table = pa_csv.read_csv(
            body, read_options=pa_csv.ReadOptions(column_names=keys, skip_rows=1, block_size=1 << 22,
                                                  encoding=encoding),
            parse_options=pa_csv.ParseOptions(invalid_row_handler=on_bad_row),
            convert_options=pa_csv.ConvertOptions(column_types={k: pa.string() for k in keys},
                                                  strings_can_be_null=False, quoted_strings_can_be_null=False))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowKeyError, pa.ArrowTypeError) as exc:
        if bad:
            raise InputError(_ragged_message(body, memoryview(raw)[start:], label, len(names), bad[0],
                                             encoding)) from None
        raise InputError(f"{label} is not a valid CSV file: {_arrow_message(exc)}") from None
    columns = {c: _stripped(table.column(i).combine_chunks()) for i, c in enumerate(cols)}
    return Table(name=label, columns=columns, n=table.num_rows, raw=memoryview(raw)[start:])


def _decimal_chars(ints: pa.Array) -> int:
    """Total characters of the canonical decimal forms of the non-null values (``-`` included)."""
    v = arrow.values(ints) if not ints.null_count else arrow.values(ints)[arrow.valid(ints)]
    if not v.size:
        return 0
    neg = int(np.count_nonzero(v < 0))
    a = np.abs(v).view(np.uint64)  # |-2^63| = 2^63 as uint64
    total, power = v.size + neg, 10
    while power <= 10**19:
        more = int(np.count_nonzero(a >= np.uint64(power)))  # one more digit for each value >= 10^k
        if not more:
            break
        total += more
        power *= 10
    return total


def _canonical_integers(raw, header_end: int, columns: list[pa.Array]) -> bool:
    """Whether every value of a typed CSV read was written in canonical decimal form, proved from lengths:
    Arrow reads an integer from ``007``, `` 7`` or ``"7"`` and ``-0`` too, and any such spelling is longer
    than the canonical one, so the body's bytes equal Σ canonical lengths + commas + line ends exactly
    when none occurs (then the typed column holds the same ids as the strings would: ``7`` and ``07``
    stay different ids on the string path). String columns count with their parsed lengths. O(n)
    vectorised, a few milliseconds for 10^6 rows; a file that fails is read as strings."""
    a = np.frombuffer(raw, np.uint8)[header_end + 1:]
    n = len(columns[0])
    expected = n * (len(columns) - 1) + int(np.count_nonzero(a == 10)) + int(np.count_nonzero(a == 13))
    for col in columns:
        if pa.types.is_integer(col.type):
            expected += _decimal_chars(col)
        else:
            expected += arrow.value_bytes(col).size
    return expected == a.size


def _typed_csv(body: pa.Buffer, cols: list[str], ints: list[str], encoding: str) -> dict[str, pa.Array] | None:
    """The CSV body with the ``ints`` columns as int64 (null where empty), the others as stripped
    strings; None when a value of an integer column is not an integer (or the rows are ragged): the
    caller then reads every column as strings, which names the bad line."""
    keys = [f"c{i}" for i in range(len(cols))]
    types = {k: pa.int64() if c in ints else pa.string() for k, c in zip(keys, cols)}
    try:
        table = pa_csv.read_csv(
            body, read_options=pa_csv.ReadOptions(column_names=keys, skip_rows=1, block_size=1 << 22,
                                                  encoding=encoding),
            convert_options=pa_csv.ConvertOptions(column_types=types, null_values=[""], strings_can_be_null=False,
                                                  quoted_strings_can_be_null=False))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowKeyError, pa.ArrowTypeError):
        return None
    return {c: table.column(i).combine_chunks() for i, c in enumerate(cols)}  # strings: stripped by the caller


def _first_row_integers(raw, header_end: int, cols: list[str], ints: list[str], lines: int = 64) -> list[str]:
    """The columns of ``ints`` whose values on the first ``lines`` data lines are integers (or empty): a
    cheap guess of which columns a typed read can deliver (a failed typed read costs a parse). An
    empty value tells nothing (the root's parent), so several lines are looked at."""
    stop = header_end + 1
    for _ in range(lines):
        nxt = raw.find(b"\n", stop)
        if nxt < 0:
            stop = len(raw)
            break
        stop = nxt + 1
    rows = [line.rstrip(b"\r").split(b",") for line in bytes(raw[header_end + 1:stop]).split(b"\n") if line.strip()]
    if not rows or any(len(r) != len(cols) for r in rows):
        return []
    at = {c: cols.index(c) for c in ints}
    return [c for c in ints if all(not r[at[c]] or r[at[c]].lstrip(b"-").isdigit() for r in rows)]


def _stripped(col: pa.Array) -> pa.Array:
    """A string column with white space stripped from both ends of every value; no work when its bytes
    hold no white space at all (no byte <= 32, which covers ASCII white space, and none >= 128, which
    covers Unicode's)."""
    if col.null_count == 0 and pa.types.is_string(col.type):
        data = arrow.value_bytes(col)
        if not data.size or (int(data.min()) > 32 and int(data.max()) < 128):
            return col
    return pc.utf8_trim_whitespace(col)


def _arrow_message(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text.removeprefix("CSV parse error: ")[:200]


def _ragged_message(body: pa.Buffer, raw, label: str, expected: int, row, encoding: str) -> str:
    """Name the line of the first row whose field count differs from the header's."""
    found: list[Any] = []

    def first(r) -> str:
        found.append(r)
        return "error"

    try:  # the parallel parser does not number rows: re-read serially (error path only)
        pa_csv.read_csv(body, read_options=pa_csv.ReadOptions(
            use_threads=False, column_names=[f"c{i}" for i in range(expected)], skip_rows=1, encoding=encoding),
            parse_options=pa_csv.ParseOptions(invalid_row_handler=first),
            convert_options=pa_csv.ConvertOptions(column_types={f"c{i}": pa.string() for i in range(expected)}))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        pass
    row = found[0] if found else row
    got = row.actual_columns
    number = getattr(row, "number", None)
    if number is not None:  # Arrow numbers non-empty lines from the header (1): map to the file's line
        lines = _data_line_numbers(raw)
        number = int(lines[number - 2]) if 0 <= number - 2 < lines.size else number
    where = f"line {number}" if number is not None else f"the row {row.text[:60]!r}"
    what = "more" if got > expected else "fewer"
    return (f"{label}: {where} has {got} field(s), {what} than the {expected} column(s) of the header; "
            "expected one value per column (quote values that contain a comma)")


def _is_pandas_missing(v: Any) -> bool:
    pd = sys.modules.get("pandas")
    return pd is not None and (v is pd.NA or v is pd.NaT)


def _json_texts(values: Iterable[Any], where: Callable[[int], str]) -> list[str]:
    """JSON scalars as text (null and NaN → ``""``); a list or an object is an error naming the value."""
    out: list[str] = []
    for i, v in enumerate(values):
        if type(v) is str:
            out.append(v)
        elif v is None or _is_pandas_missing(v) or (type(v) is float and math.isnan(v)):
            out.append("")
        elif isinstance(v, (str, int, float, np.number)):
            try:
                out.append(str(v))
            except ValueError:  # an integer too long to print (Python's int_max_str_digits)
                raise InputError(f"{where(i)}: a number of more than 4,300 digits") from None
        else:
            kind = "list" if isinstance(v, list) else "object" if isinstance(v, dict) else type(v).__name__
            raise InputError(f"{where(i)}: expected a string or a number, got a JSON {kind}")
    return out


def _json_table(raw: bytes | bytearray, start: int, label: str, max_rows: int) -> Table:
    try:
        obj = json.loads(str(memoryview(raw)[start:], "utf-8"))
    except UnicodeDecodeError as exc:
        raise InputError(f"{label} is not UTF-8 text (byte {exc.start}): JSON must be UTF-8") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"{label} is not valid JSON: {exc.msg} at line {exc.lineno}") from None
    except RecursionError:
        raise InputError(f"{label}: the JSON is nested too deeply; expected a list of flat records or an "
                         "object of column lists") from None
    except ValueError as exc:  # e.g. an integer of more than 4,300 digits (Python's int_max_str_digits)
        raise InputError(f"{label}: a JSON value cannot be read ({str(exc).split(';')[0]})") from None
    shape = "expected a list of records or an object of equal-length column lists"
    columns: dict[str, list[str]] = {}
    if isinstance(obj, dict):
        if not obj or not all(isinstance(v, list) for v in obj.values()):
            raise InputError(f"{label}: {shape}")
        lengths = {len(v) for v in obj.values()}
        if len(lengths) != 1:
            raise InputError(f"{label}: the column lists have different lengths {sorted(lengths)}")
        n = lengths.pop()
        if n > max_rows:
            raise _too_many_rows(label, max_rows)
        names = _column_names(list(obj), label)
        for key, name in zip(obj, names):
            columns[name] = _json_texts(obj[key], lambda i, key=key: f"{label}: column {key!r}, position {i}")
    elif isinstance(obj, list):
        if not obj:
            raise InputError(f"{label} has no records")
        if len(obj) > max_rows:
            raise _too_many_rows(label, max_rows)
        keys: dict[str, None] = {}
        for i, rec in enumerate(obj):
            if not isinstance(rec, dict):
                raise InputError(f"{label}: record {i} is not an object ({shape})")
            keys.update(dict.fromkeys(rec))
        if not keys:
            raise InputError(f"{label}: the records have no fields; {shape}")
        n = len(obj)
        names = _column_names(list(keys), label)
        for key, name in zip(keys, names):
            columns[name] = _json_texts([rec.get(key) for rec in obj], lambda i, key=key: f"{label}: record {i}, "
                                                                                    f"field {key!r}")
    else:
        raise InputError(f"{label}: {shape}")
    arrays = {c: _string_array(v, lambda i, c=c: f"{label}: record {i}, field {c!r}") for c, v in columns.items()}
    return Table(name=label, columns=arrays, n=n, json=True)


def _string_array(values: list[str], where: Callable[[int], str]) -> pa.Array:
    """Python strings as stripped Arrow strings; text that is not Unicode (a lone surrogate from a JSON
    ``\\ud800`` escape) is an InputError naming the value."""
    try:
        return pc.utf8_trim_whitespace(pa.array(values, type=pa.string()))
    except UnicodeEncodeError:
        for i, v in enumerate(values):
            try:
                v.encode("utf-8")
            except UnicodeEncodeError:
                raise InputError(f"{where(i)}: {v!r} is not valid Unicode text (an unpaired surrogate)") from None
        raise
