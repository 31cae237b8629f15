"""Writing a table as CSV, fast: ``pyarrow.csv`` formats slices of rows on a few threads, written in order.

Generic table writing for every capability (the tree's per-node tables are the largest: 10⁶ rows).
:func:`write_csv` writes a DataFrame or an Arrow table through the atomic writer of
:mod:`dpviz.core.tables` (never over an input; with ``meta``, together with its ``OUT.meta.json``
sidecar), or to stdout. Quoting as pandas does it: only where a value needs it (a scan of the string
bytes, :func:`_needs_quotes`); text a spreadsheet would run as a formula gets a leading ``'``. Numbers
are written with the shortest round-trip digits; :func:`number_text` formats a number column ahead of
the write (a run of equal values once), and :class:`Writeback` has each block put on disk while the
next ones are formatted. pandas is never imported here unless a DataFrame is passed.
"""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv

from dpviz.core import arrow

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["csv_writer", "write_csv", "number_column", "number_text", "float_text", "is_pandas_array", "Writeback"]


def number_column(v: np.ndarray) -> pa.Array:
    """A NumPy number column as Arrow, NaN as null (an empty cell), without pandas (:mod:`dpviz.core.arrow`)."""
    if v.dtype.kind == "f":
        nan = np.isnan(v)
        return arrow.from_numpy(v, valid=~nan if nan.any() else None)
    if v.dtype.kind in "iu" and v.dtype.itemsize in (4, 8):
        return arrow.from_numpy(v)
    return pa.array(v, from_pandas=True)


_FAST_LOW, _FAST_HIGH = 1e-5, 1e10
"""Non-integral magnitudes in [1e-5, 1e10): where orjson's shortest digits read exactly as Arrow writes them."""
_FAST_MIN = 1 << 12  # values below which Arrow's cast alone is as fast
_FAST_MAX = 1 << 26  # values above which the text could pass 32-bit offsets: Arrow's cast alone
_FAST_BLOCK = 1 << 16  # values per orjson call: it holds the GIL for its call (~2 ms per block, not ~30 per 10⁶)


def float_text(v: np.ndarray) -> pa.Array:
    """A float64 column as the text Arrow's cast writes for it (``pc.cast(number_column(v), pa.string())``:
    shortest round-trip digits, NaN null), byte for byte, in less time: the digits come from orjson (Ryu,
    shortest round-trip as Arrow's double-conversion: the same digits; Adams, "Ryū: fast float-to-string
    conversion", PLDI 2018), one call per block of values, cut at its commas into an Arrow string array.
    Where the two spell the same number differently — integral values (orjson writes ``3.0``), magnitudes
    outside [1e-5, 1e10) (exponent thresholds), NaN (orjson's ``null``) — Arrow's own text replaces
    orjson's (:func:`pyarrow.compute.replace_with_mask`). orjson holds the GIL during a call, so the
    blocks are small: a thread drawing noise beside it is not held up."""
    v = np.ascontiguousarray(v, dtype=np.float64)
    n = v.size
    if n < _FAST_MIN or n > _FAST_MAX or v.ndim != 1:
        return pc.cast(number_column(v), pa.string())
    import orjson

    offsets = np.empty(n + 1, np.int32)
    parts, size = [], 0
    for a in range(0, n, _FAST_BLOCK):
        m = min(n - a, _FAST_BLOCK)
        raw = orjson.dumps(v[a:a + m], option=orjson.OPT_SERIALIZE_NUMPY)  # b"[x,y,...]": a comma between values
        starts = offsets[a:a + m]
        starts[0] = 0
        starts[1:] = np.flatnonzero(np.frombuffer(raw, np.uint8) == 44)
        starts[1:] -= np.arange(1, m, dtype=np.int32)  # value i starts after the "[" and i commas, all dropped
        starts += size
        body = raw[1:-1].replace(b",", b"")
        parts.append(body)
        size += len(body)
    offsets[n] = size
    text = pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(parts))])
    a = np.abs(v)
    other = ~((a >= _FAST_LOW) & (a < _FAST_HIGH))  # NaN too (every comparison False)
    other |= v == np.trunc(v)
    if other.any():
        text = pc.replace_with_mask(text, pa.array(other), pc.cast(number_column(v[other]), pa.string()))
    return text


def number_text(values: np.ndarray, dictionary: bool = False) -> pa.Array:
    """A number column as the text :func:`write_csv` writes for it (shortest round-trip digits, an
    empty cell for NaN), as Arrow strings: formatting ahead of the write, on a worker thread (Arrow's cast
    releases the GIL; :func:`float_text` holds it only for short blocks).

    A run of equal adjacent values is formatted once (float formatting is the write's main cost, and
    structure-only columns repeat: siblings' variances, whole levels of a complete tree). ``dictionary``:
    such runs come back as a dictionary array (each run's text once, a run index per row), which
    :func:`write_csv` decodes slice by slice as it writes (no column-sized gather of strings)."""
    v = np.asarray(values)
    if v.size > 1:
        starts = np.flatnonzero(np.concatenate(([True], v[1:] != v[:-1])))  # NaN != NaN: one run each
        if starts.size < 0.75 * v.size:
            text = _text(v[starts])
            runs = arrow.from_numpy(np.repeat(np.arange(starts.size, dtype=np.int32), np.diff(starts, append=v.size)))
            return pa.DictionaryArray.from_arrays(runs, text) if dictionary else text.take(runs)
    return _text(v)


def _text(v: np.ndarray) -> pa.Array:
    """:func:`float_text` of a float column; Arrow's cast of any other."""
    return float_text(v) if v.dtype == np.float64 else pc.cast(number_column(v), pa.string())


def _pandas():
    """pandas, imported on first use: reading a tree and writing a release never need it (its import
    is a quarter of a second of ``tree release``'s start-up; a test keeps it that way)."""
    import pandas

    return pandas


def is_pandas_array(col: Any) -> bool:
    pd = sys.modules.get("pandas")  # not imported: col cannot be a pandas array
    return pd is not None and isinstance(col, pd.api.extensions.ExtensionArray)


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


def csv_writer(df: pd.DataFrame | pa.Table, plain: Iterable[str] = (), raw_text: bool = False,
               follows: Mapping[str, str] | None = None) -> Callable[[Any], None]:
    """A function writing ``df`` as CSV to a binary file: header, then slices of rows formatted by
    ``pyarrow.csv`` on a few threads (float formatting dominates) and written in order; its ``sha256``
    attribute is then the hex SHA-256 of the bytes written (hashed as they are written, for the ledger:
    :func:`dpviz.core.tables.written_sha256`). ``plain``: columns
    holding numbers already as text (:func:`number_text`), written exactly like number columns: never
    quoted. Text cells a spreadsheet would run as formulas get a leading ``'`` unless ``raw_text``
    (:func:`dpviz.core.tables.escape_formula_array`, vectorised). ``follows``: a column whose values are
    values of another column or empty (a per-node table's ``parent`` follows its ``node``) needs quotes
    only if that one does, so it is not scanned."""
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
        if name in plain or (follows or {}).get(name) in table.column_names:
            continue  # e.g. a per-node table's parents are node ids (or empty): checked with the nodes
        textual = pa.types.is_string(c.type) or pa.types.is_large_string(c.type)
        if textual and _needs_quotes(c):
            quoting = "needed"
            break
    if quoting == "needed":  # Arrow then quotes every string: number text goes back to numbers (exact:
        # shortest round-trip digits), so that it is written unquoted as before
        for name in plain & set(table.column_names):
            i = table.column_names.index(name)
            col = table.column(i)
            if pa.types.is_dictionary(col.type) and pa.types.is_string(col.type.value_type):
                col = pc.cast(col, pa.string())  # number_text(..., dictionary=True)
            if pa.types.is_string(col.type):
                table = table.set_column(i, name, pc.cast(col, pa.float64()))

    def fmt(part: pa.Table, header: bool = False) -> pa.Buffer:
        if quoting == "none" and part.num_rows:  # numbers to text here, slices on several threads (Arrow's cast
            # releases the GIL, float_text holds it for short blocks): the shortest round-trip text of the CSV writer
            part = pa.table({name: col if pa.types.is_string(col.type) or pa.types.is_large_string(col.type)
                             else _column_text(col) for name, col in zip(part.column_names, part.columns)})
            if not header:  # every cell written as it is: the size is known, so one buffer of that size (a
                # growing stream reallocates and copies its bytes several times over, into fresh pages each time)
                buf = pa.allocate_buffer(_text_size(part))
                sink = pa.FixedSizeBufferWriter(buf)
                pa_csv.write_csv(part, sink, _options(False, quoting))
                return buf.slice(0, sink.tell())
        sink = pa.BufferOutputStream()
        pa_csv.write_csv(part, sink, _options(header, quoting))
        return sink.getvalue()

    def write(fh) -> None:
        digest = hashlib.sha256()  # of every byte written, while the next slices are formatted (the GIL is
        # released): the atomic writer hands it to the ledger (dpviz.core.tables.written_sha256)
        header = fmt(table.slice(0, 0), header=True)
        digest.update(header)
        fh.write(header)
        starts = range(0, table.num_rows, _WRITE_ROWS)
        if len(starts) <= 1:
            if table.num_rows:
                body = fmt(table)
                digest.update(body)
                fh.write(body)
            write.sha256 = digest.hexdigest()
            return
        out = Writeback(fh)
        # the digest on a thread of its own, one block after another, while this one writes the same block
        # (both release the GIL): the hash no longer adds to the write
        with ThreadPoolExecutor(max(2, min(4, pa.cpu_count()))) as pool, ThreadPoolExecutor(1) as hasher:
            pending, hashed = [], []

            def emit(block) -> None:
                hashed.append(hasher.submit(digest.update, block))
                out.write(block)
                if len(hashed) > 4:  # a bounded window of blocks waiting for the digest too
                    hashed.pop(0).result()

            try:
                for a in starts:
                    pending.append(pool.submit(fmt, table.slice(a, _WRITE_ROWS)))
                    if len(pending) > 4:  # a bounded window: memory stays a few slices
                        emit(pending.pop(0).result())
                for fut in pending:
                    emit(fut.result())
                for h in hashed:
                    h.result()
            except BaseException:
                out.finish(raise_error=False)  # the file is closed after this: no sync may still be running
                raise
            out.finish()
        write.sha256 = digest.hexdigest()

    write.sha256 = None  # type: ignore[attr-defined]  # the SHA-256 of what the last call wrote
    return write


def _column_text(col: pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """A number column as its CSV text: :func:`float_text` for float64, Arrow's cast for the rest."""
    if pa.types.is_float64(col.type):
        arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
        v = arrow.values(arr)  # not to_numpy(): that imports pandas
        return float_text(np.where(arrow.valid(arr), v, np.nan) if arr.null_count else v)  # null: NaN, null again
    return pc.cast(col, pa.string())


def _options(header: bool, quoting: str) -> pa_csv.WriteOptions:
    return pa_csv.WriteOptions(include_header=header, quoting_style=quoting, quoting_header=quoting,
                               batch_size=1 << 14)


def _text_size(part: pa.Table) -> int:
    """At least the bytes of ``part`` (text columns) written unquoted without a header: its values' bytes, a
    comma or the line end after each cell."""
    size = part.num_rows * part.num_columns
    for col in part.columns:
        for chunk in col.chunks:
            size += arrow.value_bytes(chunk).size
    return size


class Writeback:
    """Writes to a file and has the kernel put each written block on disk while the next ones are formatted,
    so that the atomic writer's closing ``fsync`` finds (almost) nothing left to flush. Linux
    ``posix_fadvise(DONTNEED)`` on the dirty pages queues them for writeback, and an ``fdatasync`` of what is
    written so far runs on a thread of its own (one at a time; the GIL is released): on this virtual disk
    the device flush costs ~1.8 ms per MB written since the last one (an 80 MB release: ~0.1 s at the closing
    fsync even after the writeback was queued), now paid beside the formatting. Durability is unchanged: the
    closing fsync still comes before the rename. :meth:`finish` waits for the last background sync and
    raises its error (a write error reported to a background sync is not reported again to the closing
    fsync). Anything that is not a regular file (stdout, a pipe) is just written."""

    def __init__(self, fh) -> None:
        self.fh, self.done, self.syncing, self.error = fh, 0, None, None
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
            return
        self.done = end
        if self.syncing is None or not self.syncing.is_alive():
            self._sync()

    def _sync(self) -> None:
        """``fdatasync`` of everything written so far, on a thread (its error kept for :meth:`finish`)."""
        import threading

        def run(fd: int = self.fd) -> None:
            try:
                os.fdatasync(fd)
            except OSError as exc:
                self.error = self.error or exc

        self.syncing = threading.Thread(target=run, name="dpviz-writeback", daemon=True)
        self.syncing.start()

    def finish(self, raise_error: bool = True) -> None:
        """Wait for the background sync (the file must stay open until then) and raise its error, if any."""
        if self.syncing is not None:
            self.syncing.join()
        if self.error is not None and raise_error:
            raise self.error


def write_csv(df: pd.DataFrame | pa.Table, path: str | Path | None, *, meta: dict | None = None,
              inputs: Iterable[str | Path | None] = (), plain: Iterable[str] = (), raw_text: bool = False,
              follows: Mapping[str, str] | None = None) -> Path | None:
    """Write a table (a DataFrame or an Arrow table) as CSV with ``pyarrow.csv`` through
    :func:`dpviz.core.tables.write_atomic` (atomic, never over an input); with ``meta``, together with its
    ``OUT.meta.json`` sidecar (:func:`dpviz.core.tables.write_release_text`: both or neither). ``path``
    None writes to stdout. ``plain``: columns holding number text (:func:`number_text`), never quoted.
    ``raw_text``: text cells as they are (else formula-like cells get a leading ``'``). ``follows``: see
    :func:`csv_writer`."""
    from dpviz.core.tables import write_atomic, write_release_text

    write = csv_writer(df, plain, raw_text, follows)
    if path is None:
        write(sys.stdout.buffer)
        return None
    if meta is not None:
        return write_release_text(write, path, meta, inputs=inputs)
    return write_atomic(path, write, inputs=inputs)
