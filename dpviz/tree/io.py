"""Reading and writing trees with counts: node/parent tables, one-column-per-level tables, parent arrays.

Every reader validates and raises :class:`dpviz.errors.InputError` naming the line (CSV: as in an
editor, the header is line 1) or JSON record and what was expected; nothing else escapes a loader,
whatever the bytes. The result is a :class:`TreeData`: the structure (:class:`~dpviz.tree.model.Tree`)
plus the leaf counts ``x``.

Formats (CSV or JSON; JSON is a list of records or an object of columns):

* ``node,parent[,count]`` — ids are arbitrary strings, rows in any order, the root's parent empty.
  Counts are required on leaves; counts given on internal nodes must equal the sum of their leaves.
* one column per level plus a count column, e.g. ``region,division,state,county,population``
  (the count column is ``count_column`` if given, else the one named count/population/pop/value/n,
  else the last column). Node ids are the paths ``"South / Texas / Travis County"`` under a root ``"(all)"``.
* a parent array: a ``parent`` column of 0-based row indices (-1 or empty for the root) with an
  optional ``count`` column, or a JSON object ``{"parent": [...], "count": [...]}``. An index must be
  an exact integer in range (``4294967296`` is an error, never row 0).

Caps, checked before the work (each a keyword argument here and a CLI flag), by the one capped reader
:func:`dpviz.core.reader.read_capped` (its messages worded by :data:`WORDING`):

* :data:`MAX_BYTES` on the file size (from ``stat`` or ``len``, before anything is read, and again
  while reading in chunks); a gzip-compressed file (sniffed from its magic number) on its decompressed
  size too, so a zip bomb stops at the cap;
* :data:`MAX_NODES` on the number of rows, counted while reading (a row is at least one node), and on
  the number of nodes before the tree is built;
* :data:`MAX_COUNT` = 2⁵³ on every count and on their total, checked in integers (above it float64
  counts and their sums stop being exact, and a release's noise would be lost in rounding).

CSV is parsed by ``pyarrow.csv`` (on its threads) into string columns and validated with vectorised
NumPy/Arrow kernels. A ``node,parent,count`` file whose ids and counts are integers in canonical decimal
form has those columns parsed as int64 during the read instead (no hashing of id strings, no second
parse of the counts); :func:`_canonical_integers` proves from byte lengths that the typed columns mean
what the strings would, and any other file takes the string path, which names bad lines.
:func:`write_tree_csv` writes tables with ``pyarrow.csv`` through the atomic writer of
:mod:`dpviz.core.tables`, formatting row slices on a few threads.
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv

from dpviz.core import arrow
from dpviz.core.reader import Cap, Wording, read_capped, strip_boms
from dpviz.errors import InputError
from dpviz.tree.model import INDEX, Tree, TreeData, build_tree, tree_from_parents

if TYPE_CHECKING:
    import pandas as pd

MAX_NODES = 5_000_000
"""Default cap on the nodes of a tree (and so on the rows of a tree file)."""
MAX_BYTES = 100_000_000
"""Default cap on the size of a tree file or upload (the page's upload limit, ``.streamlit/config.toml``)."""
MAX_COUNT = 2**53
"""Largest count of a node, and of all leaves together (9,007,199,254,740,992)."""
ROOT_ID = "(all)"
PATH_SEP = " / "
COUNT_NAMES = ("count", "population", "pop", "value", "n")
BOM = "\ufeff"

__all__ = [
    "CAPS_HELP",
    "MAX_BYTES",
    "MAX_COUNT",
    "MAX_NODES",
    "Table",
    "TreeData",
    "build_tree",
    "canonical_bytes",
    "load",
    "load_tree_file",
    "node_columns",
    "node_parent_structure",
    "node_table",
    "noisy_columns",
    "noisy_tree_from_table",
    "read_table",
    "tree_format",
    "tree_from_levels",
    "tree_from_node_parent",
    "tree_from_parent_array",
    "tree_from_table",
    "write_tree_csv",
]

CAPS_HELP = (f"Caps: {MAX_NODES:,} nodes (--max-nodes), {MAX_BYTES:,} bytes per file (--max-bytes), "
             f"counts up to 2^53 per node and in total.")
"""The caps, as stated in ``--help`` and on the page."""


def _input_positions(tree: Tree) -> np.ndarray:
    """DOH index of each input row (the inverse of ``tree.order``), O(n) without a sort."""
    inv = np.empty(tree.n, INDEX)
    inv[tree.order] = np.arange(tree.n, dtype=INDEX)
    return inv


def node_columns(tree: Tree, **columns: Any) -> pa.Table:
    """``node,parent`` plus per-node ``columns`` (arrays in DOH order) as an Arrow table, rows back in the
    input order: the one builder of every per-node table (CLI outputs, the page's download). No copy of
    a NumPy column when the input was already in DOH order (:attr:`Tree.in_input_order`). The ids are
    strings, or for an unlabelled tree its input positions as integers (the root's parent null), which
    :func:`write_tree_csv` writes as the same text."""
    rows = None if tree.in_input_order else _input_positions(tree)
    par = tree.parent if rows is None else tree.parent[rows]
    if tree.label_source is None:  # ids are input positions: integers (the CSV writer formats them in its
        # threads), the root's parent null (an empty cell)
        node = arrow.from_numpy(tree.order if rows is None else np.arange(tree.n, dtype=INDEX))  # row r: id r
        parent = arrow.from_numpy(par if rows is None else tree.order[par], valid=par >= 0)
    else:
        ids = tree.label_array  # DOH order
        node = ids if rows is None else ids.take(rows)
        parent = ids.take(pa.array(par, mask=par < 0)).fill_null("")
    out = {"node": node, "parent": parent}
    for name, col in columns.items():
        if _is_pandas_array(col):  # e.g. Int64 counts with NA: nulls stay nulls
            out[name] = pa.array(col if rows is None else col[rows], from_pandas=True)
        elif isinstance(col, (pa.Array, pa.ChunkedArray)):  # e.g. text from number_text
            out[name] = col if rows is None else col.take(rows)
        else:
            out[name] = _number_column(np.asarray(col) if rows is None else np.asarray(col)[rows])
    return pa.table(out)


def _number_column(v: np.ndarray) -> pa.Array:
    """A NumPy number column as Arrow, NaN as null (an empty cell), without pandas (:mod:`dpviz.core.arrow`)."""
    if v.dtype.kind == "f":
        nan = np.isnan(v)
        return arrow.from_numpy(v, valid=~nan if nan.any() else None)
    if v.dtype.kind in "iu" and v.dtype.itemsize in (4, 8):
        return arrow.from_numpy(v)
    return pa.array(v, from_pandas=True)


def number_text(values: np.ndarray) -> pa.Array:
    """A number column as the text :func:`write_tree_csv` writes for it (shortest round-trip digits, an
    empty cell for NaN), as Arrow strings: formatting ahead of the write (the GIL is released).

    A run of equal adjacent values is formatted once (float formatting is the write's main cost, and
    structure-only columns repeat: siblings' variances, whole levels of a complete tree)."""
    v = np.asarray(values)
    if v.size > 1:
        starts = np.flatnonzero(np.concatenate(([True], v[1:] != v[:-1])))  # NaN != NaN: one run each
        if starts.size < 0.75 * v.size:
            text = pc.cast(_number_column(v[starts]), pa.string())
            runs = np.repeat(np.arange(starts.size, dtype=np.int32), np.diff(starts, append=v.size))
            return text.take(arrow.from_numpy(runs))
    return pc.cast(_number_column(v), pa.string())


def _pandas():
    """pandas, imported on first use: reading a tree and writing a release never need it (its import
    is a quarter of a second of ``tree release``'s start-up; a test keeps it that way)."""
    import pandas

    return pandas


def _is_pandas_array(col: Any) -> bool:
    pd = sys.modules.get("pandas")  # not imported: col cannot be a pandas array
    return pd is not None and isinstance(col, pd.api.extensions.ExtensionArray)


def node_table(tree: Tree, **columns: Any) -> pd.DataFrame:
    """:func:`node_columns` as a DataFrame: the id columns Arrow-backed strings (no Python object per
    node), number columns NumPy arrays, columns with missing values pandas extension arrays."""
    pd = _pandas()
    table = node_columns(tree, **columns)
    out: dict[str, Any] = {}
    for name, col in zip(table.column_names, table.columns):
        if name in ("node", "parent") and not pa.types.is_string(col.type):
            col = col.cast(pa.string()).fill_null("")  # input positions as ids, as in the CSV
        if pa.types.is_string(col.type):
            out[name] = pd.array(col, dtype="str")
        elif col.null_count:
            out[name] = col.to_pandas(types_mapper={pa.int64(): pd.Int64Dtype()}.get).array
        else:
            out[name] = col.to_numpy()
    return pd.DataFrame(out, copy=False)  # no copy into 2-D blocks: the columns go to Arrow one by one


# ---------------------------------------------------------------------------------------------
# writing
_NEEDS_QUOTES = r'[",\r\n]'


def _arrow_column(col: pd.Series) -> pa.Array:
    """A table column as Arrow: NaN and pandas NA become empty cells."""
    if isinstance(col.dtype, _pandas().api.extensions.ExtensionDtype):
        return pa.array(col.array, from_pandas=True)
    values = col.to_numpy()
    if values.dtype == object or values.dtype.kind == "U":
        return pa.array(values, type=pa.string(), from_pandas=True)
    return pa.array(values, from_pandas=True)


_WRITE_ROWS = 1 << 17  # rows formatted per task
_QUOTE_BYTES = tuple(b"\",\r\n")  # the characters of _NEEDS_QUOTES


def _needs_quotes(col: pa.ChunkedArray) -> bool:
    """Whether a string column holds ``"``, ``,``, CR or LF anywhere: a scan of the bytes its values span
    (no regex per value); a chunk with nulls (whose slots may hold any bytes) takes the regex."""
    for chunk in col.chunks:
        if not len(chunk):
            continue
        if chunk.null_count:
            if pc.any(pc.match_substring_regex(chunk, _NEEDS_QUOTES)).as_py():
                return True
            continue
        data = arrow.value_bytes(chunk)
        if any(np.any(data == byte) for byte in _QUOTE_BYTES):
            return True
    return False


def _csv_writer(df: pd.DataFrame | pa.Table, plain: Iterable[str] = (), raw_text: bool = False
                ) -> Callable[[Any], None]:
    """A function writing ``df`` as CSV to a binary file: header, then slices of rows formatted by
    ``pyarrow.csv`` on a few threads (float formatting dominates) and written in order. ``plain``: columns
    holding numbers already as text (:func:`number_text`), written exactly like number columns: never
    quoted. Text cells a spreadsheet would run as formulas get a leading ``'`` unless ``raw_text``
    (:func:`dpviz.core.tables.escape_formula_array`, vectorised)."""
    from concurrent.futures import ThreadPoolExecutor

    table = df if isinstance(df, pa.Table) else pa.table({str(c): _arrow_column(df[c]) for c in df.columns})
    if not raw_text:
        from dpviz.core.tables import escape_formula_array, escape_formula_cell

        plain = set(plain)
        table = pa.table({escape_formula_cell(name): col if name in plain else escape_formula_array(col)
                          for name, col in zip(table.column_names, table.columns)})
    quoting = "none"  # like pandas: quotes only where a value needs them (checked, rarely the case)
    plain = set(plain)
    for name, c in zip(table.column_names, table.columns):
        if name in plain or (name == "parent" and "node" in table.column_names):
            continue  # a per-node table's parents are node ids (or empty): checked with the nodes
        textual = pa.types.is_string(c.type) or pa.types.is_large_string(c.type)
        if textual and _needs_quotes(c):
            quoting = "needed"
            break
    if quoting == "needed":  # Arrow then quotes every string: number text goes back to numbers (exact:
        # shortest round-trip digits), so that it is written unquoted as before
        for name in plain & set(table.column_names):
            i = table.column_names.index(name)
            if pa.types.is_string(table.column(i).type):
                table = table.set_column(i, name, pc.cast(table.column(i), pa.float64()))

    def fmt(part: pa.Table, header: bool = False) -> pa.Buffer:
        if quoting == "none" and part.num_rows:  # numbers to text here: Arrow's cast releases the GIL, so
            # slices format in parallel (the same shortest round-trip text the CSV writer would produce)
            part = pa.table({name: col if pa.types.is_string(col.type) or pa.types.is_large_string(col.type)
                             else pc.cast(col, pa.string()) for name, col in zip(part.column_names, part.columns)})
        sink = pa.BufferOutputStream()
        pa_csv.write_csv(part, sink, pa_csv.WriteOptions(include_header=header, quoting_style=quoting,
                                                         quoting_header=quoting, batch_size=1 << 14))
        return sink.getvalue()

    def write(fh) -> None:
        fh.write(fmt(table.slice(0, 0), header=True))
        starts = range(0, table.num_rows, _WRITE_ROWS)
        if len(starts) <= 1:
            if table.num_rows:
                fh.write(fmt(table))
            return
        out = _Writeback(fh)
        with ThreadPoolExecutor(max(2, min(4, pa.cpu_count()))) as pool:
            pending = []
            for a in starts:
                pending.append(pool.submit(fmt, table.slice(a, _WRITE_ROWS)))
                if len(pending) > 4:  # a bounded window: memory stays a few slices
                    out.write(pending.pop(0).result())
            for fut in pending:
                out.write(fut.result())

    return write


class _Writeback:
    """Writes to a file and starts the kernel's writeback of each written block at once (Linux
    ``posix_fadvise(DONTNEED)`` on dirty pages queues them for disk without waiting), so the atomic
    writer's closing ``fsync`` finds little left to flush while the next slices are being formatted.
    Durability is unchanged (the fsync still comes before the rename); anything that is not a regular
    file (stdout, a pipe) is just written."""

    def __init__(self, fh) -> None:
        self.fh, self.done = fh, 0
        try:
            self.fd = fh.fileno() if hasattr(os, "posix_fadvise") and fh.seekable() else None
            self.done = fh.tell() if self.fd is not None else 0
        except (OSError, ValueError, AttributeError):  # io.BytesIO, a closed or odd stream
            self.fd = None

    def write(self, data) -> None:
        self.fh.write(data)
        if self.fd is None:
            return
        self.fh.flush()
        end = self.done + len(data)
        try:
            os.posix_fadvise(self.fd, self.done, len(data), os.POSIX_FADV_DONTNEED)
        except OSError:
            self.fd = None
        self.done = end


def write_tree_csv(df: pd.DataFrame | pa.Table, path: str | Path | None, *, meta: dict | None = None,
                   inputs: Iterable[str | Path | None] = (), plain: Iterable[str] = (),
                   raw_text: bool = False) -> Path | None:
    """Write a per-node table (a DataFrame or an Arrow table) as CSV with ``pyarrow.csv`` through
    :func:`dpviz.core.tables.write_atomic` (atomic, never over an input); with ``meta``, together with its
    ``OUT.meta.json`` sidecar (:func:`dpviz.core.tables.write_release_text`: both or neither). ``path``
    None writes to stdout. ``plain``: columns holding number text (:func:`number_text`), never quoted.
    ``raw_text``: text cells as they are (else formula-like cells get a leading ``'``)."""
    from dpviz.core.tables import write_atomic, write_release_text

    write = _csv_writer(df, plain, raw_text)
    if path is None:
        write(sys.stdout.buffer)
        return None
    if meta is not None:
        return write_release_text(write, path, meta, inputs=inputs)
    return write_atomic(path, write, inputs=inputs)


# ---------------------------------------------------------------------------------------------
# reading: bytes under the caps (dpviz.core.reader), then a table of string columns
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


_BOM = BOM.encode()
_NOT_SPACE = re.compile(rb"[^\s]")
_NOT_NEWLINE = re.compile(rb"[^\r\n]")


def _content_start(raw: bytes | bytearray) -> int | None:
    """Offset of the first byte that is neither a byte-order mark nor white space (None: no content)."""
    pos = 0
    while True:
        m = _NOT_SPACE.search(raw, pos)
        if m is None:
            return None
        if raw[m.start():m.start() + 3] != _BOM:
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


# ---------------------------------------------------------------------------------------------
# numbers
def _numbers(text: pa.Array) -> np.ndarray:
    """float64 of a string column: NaN where empty or not a number (vectorised; Arrow's parser first)."""
    empty = pc.equal(text, "")
    try:
        vals = pc.cast(pc.if_else(empty, "nan", text), pa.float64())
        out = np.array(vals.to_numpy(zero_copy_only=False), dtype=float)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):  # some value is not a number: find which (slow path)
        pd = _pandas()
        num = pd.to_numeric(pd.Series(text.to_numpy(zero_copy_only=False), dtype=object), errors="coerce")
        out = np.array(num.to_numpy(dtype=float, na_value=np.nan), dtype=float)
    out[empty.to_numpy(zero_copy_only=False)] = np.nan
    return out


def _parse_counts(text: pa.Array, where, required: np.ndarray | None = None, field_name: str = "count") -> np.ndarray:
    """Counts as floats (NaN = missing). Non-numeric, NaN/inf, negative and too large values are errors.
    ``text`` is a string column, or an int64 one (null = missing) from a typed read: checked exactly."""
    if pa.types.is_integer(text.type):
        missing = ~arrow.valid(text)
        ints = np.where(missing, 0, arrow.values(text)) if text.null_count else arrow.values(text)
        lo, hi = (int(v) for v in (ints.min(), ints.max())) if ints.size else (0, 0)
        vals = ints.astype(float)
        if text.null_count:
            vals[missing] = np.nan
    else:
        vals = _numbers(text)
        missing = pc.equal(text, "").to_numpy(zero_copy_only=False)
        bad = np.flatnonzero(~missing & ~np.isfinite(vals))
        if bad.size:
            i = int(bad[0])
            raise InputError(f"{where(i)}: {field_name} {text[i].as_py()!r} is not a finite number (expected a "
                             "count >= 0)")
        lo, hi = 0, 0  # checked on the floats below
    if lo < 0 or hi > MAX_COUNT:  # exact integers: 2^53 + 1 is above the cap (as a float it would equal it)
        ints_bad = np.flatnonzero((ints < 0) | (ints > MAX_COUNT))
        i = int(ints_bad[0])
        what = "is negative (expected a count >= 0)" if ints[i] < 0 else (
            f"is above the largest count 2^53 = {MAX_COUNT:,} (MAX_COUNT; larger counts lose exactness in float64)")
        raise InputError(f"{where(i)}: {field_name} {int(ints[i])} {what}")
    neg = np.flatnonzero(vals < 0)
    if neg.size:
        i = int(neg[0])
        raise InputError(f"{where(i)}: {field_name} {text[i].as_py()} is negative (expected a count >= 0)")
    big = np.flatnonzero(vals > MAX_COUNT)
    if not big.size and not pa.types.is_integer(text.type):  # text that rounds to 2^53 may be above it
        edge = np.flatnonzero(vals == MAX_COUNT)
        big = edge[[_decimal(text[int(i)].as_py()) > MAX_COUNT for i in edge[:1000]]]  # rare: Python per value
    if big.size:
        i = int(big[0])
        raise InputError(f"{where(i)}: {field_name} {text[i].as_py()} is above the largest count 2^53 = "
                         f"{MAX_COUNT:,} (MAX_COUNT; larger counts lose exactness in float64)")
    if required is not None:
        lack = np.flatnonzero(required & missing)
        if lack.size:
            raise InputError(f"{where(int(lack[0]))}: leaf has no count (every leaf needs a count)")
    return vals


def _decimal(text: str):
    """The exact value of a number's text (``9007199254740993`` is not 2^53)."""
    from decimal import Decimal, InvalidOperation

    try:
        return Decimal(text.strip())
    except InvalidOperation:
        return Decimal(0)


def _exact_total(x: np.ndarray) -> int | float:
    """Σ x exactly: integer counts (each <= 2^53) summed in two 32-bit halves, in int64 without overflow."""
    if x.size and np.array_equal(x, np.floor(x)):
        xi = x.astype(np.uint64)
        return (int(np.sum(xi >> np.uint64(32), dtype=np.uint64)) << 32) + int(
            np.sum(xi & np.uint64(0xFFFFFFFF), dtype=np.uint64))
    return float(np.sum(x))


def _check_total(x: np.ndarray, name: str) -> None:
    """Refuse counts (>= 0) whose total is above MAX_COUNT; exact, but one float sum decides the usual
    case: a float64 sum of at most 2^52 is far from 2^53 whatever its rounding error."""
    if float(np.sum(x)) <= 2.0**52:
        return
    total = _exact_total(x)
    if total > MAX_COUNT:
        raise InputError(f"{name}: the counts add up to {total:,.0f}, above the largest total 2^53 = {MAX_COUNT:,} "
                         "(MAX_COUNT; larger totals lose exactness in float64); scale the counts down")


def _finish(tree: Tree, counts_in: np.ndarray, where, name: str) -> TreeData:
    """Check the total and the given internal counts against their leaves and return the TreeData."""
    counts = counts_in if tree.in_input_order else counts_in[tree.order]  # DOH order
    x = counts[tree.n1 :]
    leaves_missing = np.flatnonzero(np.isnan(x))
    if leaves_missing.size:
        raise InputError(f"{where(int(tree.order[tree.n1 + leaves_missing[0]]))}: leaf has no count")
    _check_total(x, name)
    given = counts[: tree.n1]
    has = ~np.isnan(given)
    if has.any():
        v = build_tree(tree, x)
        off = np.flatnonzero(has & ~np.isclose(given, v[: tree.n1], rtol=1e-9, atol=1e-9))
        if off.size:
            i = int(off[0])
            raise InputError(
                f"{where(int(tree.order[i]))}: count {given[i]:g} disagrees with the sum of its leaves "
                f"({v[i]:g}); leave internal counts empty or make them consistent"
            )
    return TreeData(tree=tree, x=np.ascontiguousarray(x), name=name)


# ---------------------------------------------------------------------------------------------
# the three formats
def _check_size(n: int, max_nodes: int) -> None:
    if n > max_nodes:
        raise WORDING.error("the tree", f"has {n:,} nodes", _NODE_CAP, max_nodes)


def _as_table(data: Table | pd.DataFrame, name: str) -> Table:
    if isinstance(data, Table):
        return data
    cols = _column_names(list(data.columns), name)
    arrays = {c: _strings(data[k]) for c, k in zip(cols, data.columns)}
    return Table(name=name, columns=arrays, n=len(data), json=bool(data.attrs.get("json", False)))


def _strings(values: Any, what: str = "value") -> pa.Array:
    """Any column (Arrow, pandas, NumPy, list) as stripped strings, missing values as ``""``."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if isinstance(values, pa.Array) and pa.types.is_string(values.type):
        return pc.utf8_trim_whitespace(values.fill_null(""))
    if isinstance(values, np.ndarray) and values.dtype.kind in "iu":
        return pa.array(values).cast(pa.string())
    seq = values.tolist() if hasattr(values, "tolist") else list(values)
    return _string_array(_json_texts(seq, lambda i: f"position {i}"), lambda i: f"position {i}")


def tree_format(columns: Iterable[str], name: str = "tree", count_column: str | None = None) -> tuple[str, str | None]:
    """The format a table with these (lower-cased) columns is read as, and its count column:
    ``("node_parent", count)``, ``("parent_array", count or None)`` or ``("levels", count)``. Known from
    the header alone, so a file that is no tree is refused before its body is parsed."""
    cols = list(columns)
    if count_column is not None:
        key = count_column.strip().lower()
        if key not in cols:
            raise InputError(f"{name}: count column {count_column!r} not found; columns are {cols}")
        count_column = key
    if "node" in cols and "parent" in cols:
        ccol = count_column or "count"
        if ccol not in cols:
            raise InputError(f"{name}: no 'count' column (expected node,parent,count with counts on leaves)")
        return "node_parent", ccol
    if "parent" in cols:
        return "parent_array", count_column or ("count" if "count" in cols else None)
    if count_column is None:
        named = [c for c in cols if c in COUNT_NAMES]
        count_column = named[0] if named else cols[-1]
    if not [c for c in cols if c != count_column]:
        raise InputError(
            f"{name}: expected node,parent,count columns or one column per level plus a count column; "
            f"got {[c[:40] for c in cols[:10]]}"
        )
    return "levels", count_column


def tree_from_table(table: Table | pd.DataFrame, name: str = "tree", max_nodes: int = MAX_NODES,
                    count_column: str | None = None) -> TreeData:
    """Detect the format of ``table`` (see module docstring) and build the tree."""
    table = _as_table(table, name)
    kind, ccol = tree_format(table.columns, name, count_column)
    if kind == "node_parent":
        return tree_from_node_parent(table, name, max_nodes, count_column=ccol)
    if kind == "parent_array":
        counts = table.col(ccol) if ccol else None
        return tree_from_parent_array(table.col("parent"), counts, name, max_nodes, where=table.where())
    return tree_from_levels(table, count_col=ccol, name=name, max_nodes=max_nodes)


def load_tree_file(path: str | Path | bytes, name: str | None = None, max_nodes: int = MAX_NODES, *,
                   max_bytes: int = MAX_BYTES, count_column: str | None = None) -> TreeData:
    """Read and validate a tree file (CSV/JSON, any of the three formats) under the caps; a CSV whose
    header fits no format is refused before its body is parsed."""
    table = read_table(path, name, max_bytes=max_bytes, max_rows=max_nodes,
                       check_header=lambda cols, label: tree_format(cols, label, count_column),
                       integer_columns=lambda cols: _integer_columns(cols, name or "tree", count_column))
    return tree_from_table(table, table.name, max_nodes, count_column=count_column)


def _integer_columns(cols: list[str], name: str, count_column: str | None) -> list[str]:
    """The columns of a ``node,parent,count`` file worth reading as integers (ids and counts): a typed
    read skips the string columns, their hashing and the parse of the counts."""
    kind, ccol = tree_format(cols, name, count_column)
    return ["node", "parent", ccol] if kind == "node_parent" and ccol else []


def node_parent_structure(table: Table | pd.DataFrame, max_nodes: int = MAX_NODES, name: str = "tree"):
    """Validate the ``node`` and ``parent`` columns and build the Tree; returns (tree, where).

    One hash pass over ids and parents together (Arrow ``dictionary_encode``, codes in order of first
    appearance): the ids are distinct iff they get codes 0..n-1 in row order, and a parent's code below
    n is the row of its node."""
    table = _as_table(table, name)
    _check_size(table.n, max_nodes)
    n = table.n
    ids = table.col("node")
    where_row = table.where()
    empty = np.flatnonzero(~arrow.valid(ids) if pa.types.is_integer(ids.type)
                           else pc.equal(ids, "").to_numpy(zero_copy_only=False))
    if empty.size:
        raise InputError(f"{where_row(int(empty[0]))}: empty node id")
    parents = table.col("parent")
    typed = pa.types.is_integer(ids.type)  # read as int64 (canonical integers, see read_table): no strings
    if typed != pa.types.is_integer(parents.type):  # one column typed, not the other: compare as text
        # (a typed value is canonical, so its text is exactly what the file holds)
        ids, parents = (_as_text(c) for c in (ids, parents))
        typed = False
    if typed:
        is_root = ~arrow.valid(parents)
        first = arrow.values(ids)[:1]  # the root's parent: any id (its code is overwritten below)
        keys = [ids, arrow.from_numpy(np.where(is_root, first, arrow.values(parents)))]
    else:
        is_root = pc.equal(parents, "").to_numpy(zero_copy_only=False)
        keys = _integer_keys(ids, parents)  # integer ids hash much faster than strings
    if keys is not None and _is_row_index(keys[0]):  # ids 0..n-1 in row order (as `tree generate` writes)
        pidx = np.array(arrow.values(keys[1]))
        where = table.where(ids)
        unknown = np.flatnonzero(((pidx < 0) & ~is_root) | (pidx >= n))
        if unknown.size:
            i = int(unknown[0])
            raise InputError(f"{where(i)}: parent {str(parents[i].as_py())!r} is not a node of the table")
        pidx[is_root] = -1
        return tree_from_parents(pidx, where=where), where  # labels are the row indices: no label array
    codes = pa.concat_arrays(keys or [ids, parents]).dictionary_encode().indices.to_numpy(zero_copy_only=False)
    id_codes, pidx = codes[:n], codes[n:].astype(np.int64)
    dup = np.flatnonzero(id_codes != np.arange(n, dtype=id_codes.dtype))
    if dup.size:
        i = int(dup[0])
        first = int(np.flatnonzero(id_codes == id_codes[i])[0])
        raise InputError(f"{where_row(i)}: duplicate node id {str(ids[i].as_py())!r} (first on {where_row(first)})")
    where = table.where(ids)
    unknown = np.flatnonzero((pidx >= n) & ~is_root)
    if unknown.size:
        i = int(unknown[0])
        raise InputError(f"{where(i)}: parent {str(parents[i].as_py())!r} is not a node of the table")
    pidx[is_root] = -1
    return tree_from_parents(pidx, labels=ids.cast(pa.string()) if typed else ids, where=where), where


def _as_text(col: pa.Array) -> pa.Array:
    return col if pa.types.is_string(col.type) else col.cast(pa.string()).fill_null("")


def _is_row_index(iid: pa.Array) -> bool:
    values = arrow.values(iid)
    return values.size > 0 and values[0] == 0 and values[-1] == values.size - 1 and bool(
        np.all(np.diff(values) == 1))


def _integer_keys(ids: pa.Array, parents: pa.Array) -> list[pa.Array] | None:
    """(ids, parents) as int64 when every id and parent is an integer in canonical decimal form (so
    that equal integers are equal strings: ``7`` and ``07`` stay different ids); None otherwise. An
    empty parent becomes -1, which is never an id of this form... unless an id is ``-1`` (then None)."""
    sample = ids.slice(0, 8).to_pylist() + ids.slice(max(0, len(ids) - 8)).to_pylist()
    if not all(v.lstrip("-").isdigit() and v.isascii() for v in sample):  # a failed cast costs a full pass
        return None
    try:
        iid = pc.cast(ids, pa.int64())
        is_root = pc.equal(parents, "")
        ipar = pc.cast(pc.if_else(is_root, "-1", parents), pa.int64())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    if not (_canonical(ids) and _canonical(parents)) or pc.any(pc.equal(iid, -1)).as_py():
        return None
    return [iid, ipar]


def _canonical(ints: pa.Array) -> bool:
    """Whether integer strings (already parsed by Arrow) are in canonical decimal form: no sign ``+``,
    no leading zero, no ``-0``."""
    lead0 = pc.and_(pc.starts_with(ints, "0"), pc.greater(pc.binary_length(ints), 1))
    bad = pc.or_(pc.or_(pc.starts_with(ints, "+"), pc.starts_with(ints, "-0")), lead0)
    return not pc.any(bad).as_py()


def tree_from_node_parent(table: Table | pd.DataFrame, name: str = "tree", max_nodes: int = MAX_NODES, *,
                          count_column: str | None = None) -> TreeData:
    """``node,parent[,count]`` table → TreeData (see module docstring)."""
    table = _as_table(table, name)
    kind, ccol = tree_format(table.columns, name, count_column)
    if kind != "node_parent":
        raise InputError(f"{name}: expected node,parent,count columns; got {list(table.columns)[:10]}")
    tree, where = node_parent_structure(table, max_nodes, name)
    leaf_in = np.zeros(table.n, bool)
    leaf_in[tree.order[tree.n1 :]] = True
    counts = _parse_counts(table.col(ccol), where, required=leaf_in)
    return _finish(tree, counts, where, name)


def noisy_tree_from_table(
    table: Table | pd.DataFrame, name: str = "tree", max_nodes: int = MAX_NODES
) -> tuple[Tree, np.ndarray, np.ndarray | None]:
    """``node,parent,value[,variance]`` (a noisy tree released elsewhere) → (tree, value, variance)
    in DOH order. Values may be negative, |value| <= 2^53; every node needs one. Variances must lie in
    [1e-12, 1e30] (a ratio of weights GMC can represent)."""
    table = _as_table(table, name)
    noisy_columns(table.columns, name)
    tree, where = node_parent_structure(table, max_nodes, name)
    value = _parse_numbers(table.col("value"), where, "value", low=-float(MAX_COUNT), high=float(MAX_COUNT))
    var = None
    if "variance" in table:
        var = _parse_numbers(table.col("variance"), where, "variance", low=MIN_VARIANCE, high=MAX_VARIANCE)[tree.order]
    return tree, value[tree.order], var


def noisy_columns(columns: Iterable[str], name: str = "tree") -> None:
    """Refuse a noisy-tree table (``tree consistency``) without node, parent and value columns (from the
    header alone: usable as ``read_table(..., check_header=noisy_columns)``)."""
    cols = list(columns)
    missing = [c for c in ("node", "parent", "value") if c not in cols]
    if missing:
        raise InputError(f"{name}: missing column(s) {', '.join(missing)} (expected node,parent,value[,variance])")


MIN_VARIANCE = 1e-12
MAX_VARIANCE = 1e30


def _parse_numbers(text: pa.Array, where, field_name: str, low: float, high: float) -> np.ndarray:
    vals = _numbers(text)
    bad = np.flatnonzero(~np.isfinite(vals))
    if bad.size:
        i = int(bad[0])
        shown = text[i].as_py()
        what = "empty" if shown == "" else f"{shown!r}, not a finite number"
        raise InputError(f"{where(i)}: {field_name} is {what} (every node needs a {field_name})")
    out = np.flatnonzero((vals < low) | (vals > high))
    if out.size:
        i = int(out[0])
        raise InputError(f"{where(i)}: {field_name} {text[i].as_py()} is outside [{low:g}, {high:g}]")
    return vals


def _parent_indices(text: pa.Array, where) -> np.ndarray:
    """Exact integer row indices (int64; ``""`` → -1). Anything else — a fraction, a float that is not
    exact, more than int64 — is an error naming the row; the range is checked by tree_from_parents."""
    filled = pc.if_else(pc.equal(text, ""), "-1", text)
    try:
        return pc.cast(filled, pa.int64()).to_numpy(zero_copy_only=False)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        pass
    raw = filled.to_numpy(zero_copy_only=False)
    vals = _numbers(filled)
    ok = np.isfinite(vals) & (vals == np.round(vals)) & (np.abs(vals) < 2**53)
    bad = np.flatnonzero(~ok)
    if bad.size:
        i = int(bad[0])
        raise InputError(f"{where(i)}: parent {raw[i]!r} is not a row index (expected an integer 0..n-1, "
                         "-1 or empty for the root)")
    return vals.astype(np.int64)


def tree_from_parent_array(
    parent, counts=None, name: str = "tree", max_nodes: int = MAX_NODES, where=None
) -> TreeData:
    """Parent array (0-based indices, -1/empty for the root) + optional counts → TreeData.

    Without counts every leaf gets count 0 (a structure-only tree).
    """
    text = _strings(parent)
    _check_size(len(text), max_nodes)
    if len(text) == 0:
        raise InputError(f"{name}: the parent array is empty: expected at least one node")
    where = where or (lambda i: f"position {i}")
    tree = tree_from_parents(_parent_indices(text, where), where=where)
    if counts is None:
        c = np.zeros(tree.n)
    else:
        ctext = _strings(counts)
        if len(ctext) != tree.n:
            raise InputError(f"{name}: {len(ctext)} counts for {tree.n} parents; expected one count per node")
        leaf_in = np.zeros(tree.n, bool)
        leaf_in[tree.order[tree.n1 :]] = True
        c = _parse_counts(ctext, where, required=leaf_in)
    return _finish(tree, c, where, name)


def _first_rows(codes: np.ndarray) -> np.ndarray:
    """Rows where each code first appears, in code order (codes numbered by first appearance)."""
    seen = np.maximum.accumulate(codes)
    new = np.empty(codes.size, bool)
    new[0] = True
    new[1:] = codes[1:] > seen[:-1]
    return np.flatnonzero(new)


def tree_from_levels(
    table: Table | pd.DataFrame,
    level_cols: list[str] | None = None,
    count_col: str | None = None,
    name: str = "tree",
    max_nodes: int = MAX_NODES,
) -> TreeData:
    """One column per level (top to bottom) + a count column → TreeData under a root ``(all)``."""
    table = _as_table(table, name)
    cols = list(table.columns)
    if count_col is None:
        named = [c for c in cols if c in COUNT_NAMES]
        count_col = named[0] if named else cols[-1]
    if level_cols is None:
        level_cols = [c for c in cols if c != count_col]
    if not level_cols:
        raise InputError(
            f"{name}: expected node,parent,count columns or one column per level plus a count column; "
            f"got {cols}"
        )
    where_row = table.where()
    cells = [table.col(c) for c in level_cols]
    empty_rows = [np.flatnonzero(pc.equal(c, "").to_numpy(zero_copy_only=False)) for c in cells]
    firsts = [(int(e[0]), k) for k, e in enumerate(empty_rows) if e.size]
    if firsts:
        r, k = min(firsts)
        raise InputError(f"{where_row(r)}: empty value in level column {level_cols[k]!r}")
    n_rows = table.n
    ids: list[Any] = [pa.array([ROOT_ID], pa.string())]
    parent_of_level: list[np.ndarray] = [np.array([-1], np.int64)]
    offset, n_nodes, prev_n = 1, 1, 0
    prev_codes = np.zeros(n_rows, np.int64)
    path = None
    for lev, cell in enumerate(cells):
        path = cell if lev == 0 else pc.binary_join_element_wise(path, cell, PATH_SEP)
        enc = path.dictionary_encode()
        codes = enc.indices.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
        first = _first_rows(codes)
        n_nodes += first.size
        _check_size(n_nodes + (n_rows if lev < len(cells) - 1 else 0), max_nodes)
        parent_of_level.append(np.zeros(first.size, np.int64) if lev == 0 else offset - prev_n + prev_codes[first])
        ids.append(enc.dictionary)
        prev_codes, prev_n = codes, first.size
        offset += first.size
    leaf_codes = prev_codes
    if prev_n != n_rows:  # two rows with the same full path
        new = np.zeros(n_rows, bool)
        new[_first_rows(leaf_codes)] = True
        i = int(np.flatnonzero(~new)[0])
        first_row = int(np.flatnonzero(leaf_codes == leaf_codes[i])[0])
        raise InputError(f"{where_row(i)}: duplicate row for {path[i].as_py()!r} (first on {where_row(first_row)})")
    node_ids = pa.concat_arrays(ids)
    parent = np.concatenate(parent_of_level)
    tree = tree_from_parents(parent, labels=node_ids)
    counts_raw = _parse_counts(table.col(count_col), lambda i: f"{where_row(i)} column {count_col!r}")
    lack = np.flatnonzero(np.isnan(counts_raw))
    if lack.size:
        raise InputError(f"{where_row(int(lack[0]))}: empty count in column {count_col!r}")
    counts = np.full(len(node_ids), np.nan)
    counts[offset - n_rows :] = counts_raw  # leaves are the last level, one per row, in row order
    return _finish(tree, counts, lambda i: f"node {node_ids[i].as_py()!r}", name)


def load(spec: str | Path, *, max_nodes: int = MAX_NODES, max_bytes: int = MAX_BYTES,
         count_column: str | None = None) -> TreeData:
    """The ``load`` hook: a tree file path (read under the caps by :func:`load_tree_file`), or bundled data
    named ``sample:NAME`` (e.g. ``sample:county``, :mod:`dpviz.tree.samples`)."""
    from dpviz.core.registry import load_source

    return load_source("tree", spec, lambda p: load_tree_file(p, max_nodes=max_nodes, max_bytes=max_bytes,
                                                               count_column=count_column))


# ---------------------------------------------------------------------------------------------
# the ledger's identity of a tree (hook ``canonical_bytes``)
_JSON_ESCAPE = r'[\x00-\x1f\\"]'  # what json.dumps escapes with ensure_ascii=False (json.encoder.ESCAPE)


def _const(text: str, n: int) -> pa.Array:
    """``n`` copies of ``text`` as an Arrow string array, from buffers (a Python scalar argument to an
    Arrow kernel would import pandas: :mod:`dpviz.core.arrow`)."""
    raw = text.encode()
    offsets = np.arange(n + 1, dtype=np.int64) * len(raw)
    return pa.Array.from_buffers(pa.large_string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(raw * n)]).cast(
        pa.string())


def _json_string_array(text: pa.Array) -> pa.Array:
    """Each string as its JSON literal (``json.dumps(s, ensure_ascii=False)``): quotes around the plain
    ones in one Arrow kernel; the rare value with a quote, backslash or control character by ``json``."""
    n = len(text)
    quoted = pc.binary_join_element_wise(_const('"', n), text, _const('"', n), _const("", n))
    special = pc.match_substring_regex(text, _JSON_ESCAPE)
    if not pc.any(special).as_py():
        return quoted
    rows = arrow.values(pc.indices_nonzero(special)).astype(np.int64)
    fixed = [json.dumps(s, ensure_ascii=False) for s in text.take(arrow.from_numpy(rows)).to_pylist()]
    out = quoted.to_numpy(zero_copy_only=False).astype(object)
    out[rows] = fixed
    return pa.array(out, pa.string())


def _json_number_array(x: np.ndarray) -> pa.Array:
    """Counts as JSON numbers the way the ledger has always written them: an integral value as an
    integer (``65435``), any other as Python's ``repr`` of the float (``json.dumps(float)``)."""
    v = np.asarray(x, dtype=float)
    integral = np.isfinite(v) & (v == np.floor(v)) & (np.abs(v) < 2.0**63)
    text = pc.cast(arrow.from_numpy(np.where(integral, v, 0).astype(np.int64)), pa.string())
    if integral.all():
        return text
    out = text.to_numpy(zero_copy_only=False).astype(object)
    for i in np.flatnonzero(~integral):
        f = float(v[i])
        out[i] = json.dumps(int(f) if f.is_integer() else f)
    return pa.array(out, pa.string())


def _id_strings(tree: Tree) -> pa.Array:
    """The node ids in DOH order as Arrow strings (``str`` of each label; input positions when unlabelled)."""
    src = tree.label_source
    if src is None:
        return pc.cast(arrow.from_numpy(np.ascontiguousarray(tree.order, dtype=np.int64)), pa.string())
    if isinstance(src, np.ndarray):
        return pa.array([str(v) for v in src.tolist()], pa.string())
    arr = src.combine_chunks() if isinstance(src, pa.ChunkedArray) else src
    return arr if pa.types.is_string(arr.type) else arr.cast(pa.string())


def canonical_bytes(source: str | Path, data: TreeData) -> bytes:
    """The ledger's canonical form of a tree (hook ``canonical_bytes``; the ledger puts its header line
    ``dpviz-ledger/1 tree`` in front): one JSON line ``[node, parent, count]`` per node (count null on
    an inner node, an integral count as an integer), the lines sorted, each ending in ``\\n``. Invariant
    to the file format and the row order (``source`` does not enter it). Built with Arrow kernels: the
    bytes equal ``sorted(json.dumps([str(id), str(parent), count], ensure_ascii=False,
    separators=(",", ":")))`` joined by newlines, as the ledger has always hashed them (UTF-8 byte order
    is code-point order, so the byte sort is Python's string sort)."""
    tree = data.tree
    ids = _id_strings(tree)
    parents = pa.concat_arrays([_const("", 1), ids.take(arrow.from_numpy(np.asarray(tree.parent[1:], np.int64)))])
    counts = pa.concat_arrays([_const("null", tree.n1), _json_number_array(data.x)])
    n = tree.n
    lines = pc.binary_join_element_wise(_const("[", n), _json_string_array(ids), _const(",", n),
                                        _json_string_array(parents), _const(",", n), counts, _const("]\n", n),
                                        _const("", n)).cast(pa.large_string())
    # no line is a prefix of another (each is one whole JSON array), so the newline does not change the order
    return arrow.value_bytes(lines.take(pc.sort_indices(lines))).tobytes()
