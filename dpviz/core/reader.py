"""The one size-capped reader of input files: bytes, rows and line length checked while reading.

Every capability reads its files through :func:`read_capped` (its ``io.py`` then parses the bytes), so
that a hostile input — a file far above the size cap, a gzip bomb, a million rows, one endless line, a
FIFO — is refused in bounded time and memory, *before anything is parsed*, with one line naming the
cap and how to raise it.

Sources (``source``): a path (``str`` or ``os.PathLike``), raw ``bytes``/``bytearray``/``memoryview``
(an upload), or a binary file object (anything with ``read(n)``; a text file object's ``str`` chunks are
encoded as UTF-8).

What is checked, in order:

* a path: it exists, is not a folder, and is a regular file (:func:`dpviz.core.inputs.require_regular_file`:
  a FIFO or a device is refused before it is opened); its size from ``stat`` (bytes: ``len``) against
  ``max_bytes`` before anything is read;
* while reading in chunks of :data:`CHUNK` bytes: the bytes read (a file that grows, a file object) and,
  for input that starts with the gzip magic number ``1f 8b``, the **decompressed** bytes, under the same
  ``max_bytes`` (decompression stops one byte past the cap: a zip bomb costs one chunk); a corrupt or
  truncated gzip stream is refused;
* ``max_rows``: data rows, counted on the (decompressed) bytes while reading: a row is a line that
  ``skip`` does not match (default: empty lines do not count), and ``header`` lines (default 1) are
  allowed on top. A cheap newline count is kept until it passes the cap; only then are lines classified,
  so a file under the cap pays one ``bytes.count`` per chunk;
* ``max_line_bytes`` (optional): every line (``\\n``, ``\\r\\n`` or ``\\r`` ends, the header included),
  checked on each chunk, vectorised: one endless line is refused after its first chunk;
* ``refuse_nul``: a NUL byte (binary or UTF-16 data) is refused naming its line. (The tree reader lets NUL
  through: an id may hold one.) A Parquet file (magic bytes ``PAR1``) is named as such instead: the
  capabilities' loaders read Parquet through :mod:`dpviz.core.records` before they get here.

:func:`open_capped` is the streaming form for records counted batch by batch (:mod:`dpviz.core.records`): a
file object over a path or bytes whose reads stop one byte past ``max_bytes`` (gzip decompressed under it).

The result is a :class:`Capped`: the bytes (``data``: ``bytes``, or with ``use_mmap`` the anonymous memory
map a large plain file was read into — pages are only touched as they are read, and no copy is made),
the label used in messages, the path, whether it was gzip, and how many lines ``skip`` matched.
:func:`decode` turns bytes into text the way every reader does: leading byte-order marks (any number)
dropped, UTF-8, else Latin-1 (every byte is then a character). :func:`strict_json` parses a user's JSON text
(NaN, Infinity, numbers too large and nesting too deep refused in one line).

Messages: one format for every cap, ``"{label} {measure}{over}; the limit is {limit} {unit} ({CONSTANT});
raise it with {how}"``, e.g. ``'big.csv' is 4,014 bytes, above the size cap; the limit is 1,000 bytes
(MAX_BYTES); raise it with the CLI flag --max-bytes N or load_tree_file(..., max_bytes=N)``. What
varies between capabilities is only wording, given by a :class:`Wording`: the Python function and the
CLI flags that raise each cap (:class:`Cap`), what a row is called (``data rows``, ``edge rows``), and
the phrase after the measure (``over``). NUL bytes: ``"{label}, line {n}: a NUL byte; expected {text}
(UTF-8 or Latin-1), not a binary or UTF-16 file"``.

>>> r = read_capped(b"a,b\\n1,2\\n", max_bytes=100, max_rows=5)
>>> bytes(r.data), r.label, r.gzip
(b'a,b\\n1,2\\n', 'the upload', False)
>>> import gzip
>>> bytes(read_capped(gzip.compress(b"a\\n1\\n"), max_bytes=100).data)
b'a\\n1\\n'
"""

from __future__ import annotations

import json
import math
import mmap
import os
import re
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dpviz.errors import InputError

__all__ = ["CHUNK", "GZIP_MAGIC", "PARQUET_MAGIC", "BOM", "open_capped", "Cap", "Wording", "Capped", "read_capped", "decode", "strict_json",
           "strip_boms", "line_number", "EMPTY_LINE"]

CHUNK = 1 << 22
"""Bytes read (and decompressed) per step: the memory a refused file costs beyond its first chunk."""
GZIP_MAGIC = b"\x1f\x8b"
PARQUET_MAGIC = b"PAR1"
"""The first (and last) four bytes of a Parquet file."""
BOM = b"\xef\xbb\xbf"
EMPTY_LINE = re.compile(rb"(?m)^\r?\n")
"""The default ``skip``: an empty line (``\\n`` or ``\\r\\n`` alone) is not a row."""


@dataclass(frozen=True)
class Cap:
    """How one cap is named in messages.

    ``constant``: the module constant holding the default (``MAX_BYTES``); ``flag``: the CLI flag raising
    it (None: no flag); ``keyword``: the Python keyword argument; ``over``: the text right after the
    measure (``", above the size cap"``; ``{limit}`` is replaced by the cap, formatted with thousands
    separators); ``unit``: the unit after the number in "the limit is N UNIT" (``""``: no unit, None: no
    "the limit is" clause at all)."""

    constant: str
    flag: str | None
    keyword: str
    over: str
    unit: str | None = "bytes"


@dataclass(frozen=True)
class Wording:
    """The wording of one reader's messages (the format is the same for every reader).

    ``call``: the Python function taking the caps' keywords; ``python_first``: the hint names the function
    before the CLI flag (``read_edges(..., max_bytes=N) or the CLI flag --max-bytes N``) instead of after
    it; ``rows``: what a data row is (``data rows``, ``edge rows``); ``text``: what the file should hold,
    in the NUL message; ``what``: how a path is named when it is missing, a folder or not a regular file;
    ``row_message`` / ``line_message``: the start of the row-cap and line-cap messages (``{label}``, ``{limit}``
    with thousands separators, ``{rows}``, ``{line}``), before the cap's ``over`` and the "raise it" clause."""

    call: str = "read"
    python_first: bool = False
    rows: str = "data rows"
    text: str = "text"
    what: str = "input"
    size: Cap = Cap("MAX_BYTES", "--max-bytes", "max_bytes", ", above the size cap")
    row_cap: Cap = Cap("MAX_ROWS", "--max-rows", "max_rows", " (counted while reading), above the row cap", "rows")
    line_cap: Cap = Cap("MAX_LINE_BYTES", "--max-line-bytes", "max_line_bytes", ", above the line cap")
    row_message: str = "{label} has more than {limit} {rows}"
    line_message: str = "{label}, line {line}: longer than {limit} bytes"

    def how(self, cap: Cap) -> str:
        """How to raise ``cap``: the CLI flag and the Python keyword, in this reader's order."""
        python = f"{self.call}(..., {cap.keyword}=N)"
        if cap.flag is None:
            return python
        cli = f"the CLI flag {cap.flag} N"
        return f"{python} or {cli}" if self.python_first else f"{cli} or {python}"

    def error(self, label: str, measure: str, cap: Cap, limit: int) -> InputError:
        """The one cap message: ``{label} {measure}{over}; the limit is …; raise it with …``."""
        return self.message(f"{label} {measure}", cap, limit)

    def message(self, start: str, cap: Cap, limit: int) -> InputError:
        """``{start}{over}; the limit is …; raise it with …`` (:meth:`error` with the label and measure given)."""
        clause = "" if cap.unit is None else (
            f"the limit is {limit:,}{' ' + cap.unit if cap.unit else ''} ({cap.constant}); ")
        over = cap.over.replace("{limit}", f"{limit:,}")
        return InputError(f"{start}{over}; {clause}raise it with {self.how(cap)}")

    def nul_error(self, label: str, line: int, head: bytes = b"") -> InputError:
        if head[:4] == PARQUET_MAGIC:
            return InputError(f"{label} is a Parquet file; this input is read as {self.text} (a CSV, gzip CSV or "
                              "JSON)")
        return InputError(f"{label}, line {line}: a NUL byte; expected {self.text} (UTF-8 or Latin-1), not a binary "
                          "or UTF-16 file")


@dataclass(eq=False)
class Capped:
    """What :func:`read_capped` read: ``data`` (bytes, or an anonymous ``mmap`` with ``use_mmap``; both
    support the buffer protocol, slicing and ``find``), the ``label`` of messages, the ``path`` (None for
    bytes and file objects), whether the input was ``gzip``; ``rows`` and ``skipped``: the lines ``skip``
    does not match (the header included) and those it matches, counted only when the newlines came near
    ``max_rows`` (a file well under the cap is not classified line by line: both None and 0 then)."""

    data: Any
    label: str
    path: Path | None = None
    gzip: bool = False
    skipped: int = 0
    rows: int | None = None

    def __len__(self) -> int:
        return len(self.data)


def line_number(buf: Any, pos: int) -> int:
    """The 1-based line (``\\n``, ``\\r\\n`` or ``\\r`` ends, as an editor counts them) holding byte ``pos``.
    Error path only."""
    head = bytes(buf[:pos])
    return head.count(b"\n") + head.count(b"\r") - head.count(b"\r\n") + 1


def strip_boms(raw: Any) -> int:
    """The offset after the byte-order marks at the start of ``raw`` (any number: converting a file twice
    leaves two)."""
    start = 0
    while raw[start:start + 3] == BOM:
        start += 3
    return start


def decode(raw: Any) -> str:
    """Text of ``raw`` without its leading byte-order marks: UTF-8, else Latin-1 (every byte a character)."""
    data = bytes(memoryview(raw)[strip_boms(raw):])
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("latin-1")


# ----------------------------------------------------------------------------------------------- sources
def _open(source: object, label: str | None, wording: Wording, max_bytes: int
          ) -> tuple[Iterator[bytes] | None, memoryview | None, Path | None, str, int | None]:
    """(chunks or None, the whole buffer for bytes input, path, label, size known before reading)."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        view = memoryview(source).cast("B")
        label = label or "the upload"
        if view.nbytes > max_bytes:
            raise wording.error(label, f"is {view.nbytes:,} bytes", wording.size, max_bytes)
        return None, view, None, label, view.nbytes
    if isinstance(source, (str, os.PathLike)):
        from dpviz.core.inputs import require_regular_file

        path = Path(source)
        try:
            st = os.stat(path)
        except FileNotFoundError:
            raise InputError(f"{wording.what} file {str(source)[:200]!r} does not exist") from None
        except OSError:
            st = None  # a name too long, a loop of links: require_regular_file says so in one line
        if st is not None and os.path.isdir(path):
            raise InputError(f"{wording.what} {str(source)[:200]!r} is a folder; expected a file")
        require_regular_file(path, wording.what)  # a FIFO or a device: refused before it is opened
        label = label or repr(path.name)
        size = path.stat().st_size
        if size > max_bytes:
            raise wording.error(label, f"is {size:,} bytes", wording.size, max_bytes)
        return None, None, path, label, size
    if hasattr(source, "read"):
        label = label or repr(Path(str(getattr(source, "name", "upload"))).name or "upload")

        def read_obj() -> Iterator[bytes]:
            while chunk := source.read(CHUNK):
                if isinstance(chunk, str):
                    chunk = chunk.encode("utf-8")
                elif not isinstance(chunk, (bytes, bytearray, memoryview)):
                    raise InputError(f"{label}: expected bytes; open the file in binary mode ('rb')")
                yield bytes(chunk)

        return read_obj(), None, None, label, None
    raise InputError(f"{wording.what}: expected a file path, bytes or a binary file, got {type(source).__name__}")


def _file_chunks(path: Path) -> Iterator[bytes]:
    try:
        with path.open("rb", buffering=0) as fh:
            while chunk := fh.read(CHUNK):
                yield chunk
    except OSError as exc:  # permissions, a file that cannot be read, ...
        raise InputError(f"cannot read {str(path)[:200]!r}: {exc.strerror or exc}") from None


# ----------------------------------------------------------------------------------------------- the checks
def _empty_lines(seg: bytes) -> int:
    """How many lines of ``seg`` (which starts at a line start) are empty (``\n`` or ``\r\n`` alone):
    :data:`EMPTY_LINE` counted with a few vectorised comparisons instead of a regex."""
    a = np.frombuffer(b"\n\n" + seg, np.uint8)
    nl = a[2:] == 10
    before = a[1:-1]
    return int(np.count_nonzero(nl & ((before == 10) | ((before == 13) & (a[:-2] == 10)))))


class _Checks:
    """The per-chunk checks on the (decompressed) bytes: rows, line length, NUL; vectorised per chunk."""

    def __init__(self, label: str, wording: Wording, max_rows: int | None, header: int,
                 max_line_bytes: int | None, refuse_nul: bool, skip: re.Pattern[bytes] | None) -> None:
        self.label, self.wording = label, wording
        self.max_rows, self.header = max_rows, header
        self.max_line_bytes, self.refuse_nul, self.skip = max_line_bytes, refuse_nul, skip
        self.newlines = 0  # a cheap upper bound on the rows
        self.classified = False
        self.rows = self.skipped = 0
        self.counted_to = 0  # rows classified up to here (a line start)
        self.checked_to = 0  # lines checked for length up to here (a line start)

    def feed(self, buf: Any, start: int, end: int) -> None:
        """Check ``buf[start:end]``, the bytes just added (``buf[:start]`` was checked before)."""
        with memoryview(buf) as view:  # released before ``buf`` grows
            self._feed(buf, view, start, end)

    def _feed(self, buf: Any, view: memoryview, start: int, end: int) -> None:
        # no copy of the chunk: bytes/bytearray/mmap search in place, NumPy counts over the view
        if self.refuse_nul:
            find = getattr(buf, "find", None)
            if find is not None:
                nul = find(b"\0", start, end)
            else:
                hits = np.flatnonzero(np.frombuffer(view[start:end], np.uint8) == 0)
                nul = start + int(hits[0]) if hits.size else -1
            if nul >= 0:
                raise self.wording.nul_error(self.label, line_number(view, nul), bytes(view[:4]))
        if self.max_line_bytes is not None:
            self._lines(view, end)
        if self.max_rows is not None:
            if not self.classified:
                self.newlines += int(np.count_nonzero(np.frombuffer(view[start:end], np.uint8) == 10))
                if self.newlines <= self.max_rows + self.header:
                    return
                self.classified = True
            self._rows(view, end, final=False)

    def _lines(self, view: memoryview, end: int) -> None:
        cap = self.max_line_bytes
        seg = np.frombuffer(view[self.checked_to:end], np.uint8)
        ends = np.flatnonzero((seg == 10) | (seg == 13))
        if ends.size:
            long = np.flatnonzero(np.diff(ends, prepend=-1) - 1 > cap)
            if long.size:
                at = self.checked_to + (0 if long[0] == 0 else int(ends[long[0] - 1]) + 1)
                raise self._line_error(view, at)
            self.checked_to += int(ends[-1]) + 1
        if end - self.checked_to > cap:  # the unfinished line is already too long
            raise self._line_error(view, self.checked_to)

    def _line_error(self, view: memoryview, at: int) -> InputError:
        w = self.wording
        return w.message(w.line_message.format(label=self.label, line=f"{line_number(view, at):,}",
                                               limit=f"{self.max_line_bytes:,}"), w.line_cap, self.max_line_bytes)

    def _rows(self, view: memoryview, end: int, final: bool) -> None:
        stop = end if final else bytes(view[self.counted_to:end]).rfind(b"\n") + 1 + self.counted_to
        if stop <= self.counted_to:
            return
        seg = bytes(view[self.counted_to:stop])
        lines = seg.count(b"\n") + (0 if seg.endswith(b"\n") else 1)
        n_skip = _empty_lines(seg) if self.skip is EMPTY_LINE else (
            len(self.skip.findall(seg)) if self.skip is not None else 0)
        if final and not seg.endswith(b"\n") and self.skip is not None and self.skip.fullmatch(seg.rsplit(b"\n", 1)[-1] + b"\n"):
            n_skip += 1  # the last line, without its line end, is a skipped line too
        self.skipped += n_skip
        self.rows += lines - n_skip
        self.counted_to = stop
        if self.rows > self.max_rows + self.header:
            w = self.wording
            raise w.message(w.row_message.format(label=self.label, limit=f"{self.max_rows:,}", rows=w.rows),
                            w.row_cap, self.max_rows)

    def finish(self, buf: Any, end: int) -> None:
        """The last line (without a line end) counts too: classify when it may pass the cap."""
        if self.max_rows is None:
            return
        with memoryview(buf) as view:
            if not self.classified:
                unterminated = end > 0 and view[end - 1] != 10
                if self.newlines + unterminated <= self.max_rows + self.header:
                    return
                self.classified = True
            self._rows(view, end, final=True)

    @property
    def exact_rows(self) -> int | None:
        return self.rows if self.classified else None


# ----------------------------------------------------------------------------------------------- the reader
def read_capped(source: object, *, max_bytes: int, max_rows: int | None = None, max_line_bytes: int | None = None,
                header: int = 1, skip: re.Pattern[bytes] | None = EMPTY_LINE, refuse_nul: bool = False,
                gzip: bool = True, use_mmap: bool = False, label: str | None = None, wording: Wording = Wording(),
                peek: Callable[[str, bytes], None] | None = None) -> Capped:
    """Read ``source`` (a path, bytes, or a binary file object) under the caps; see the module docstring.

    ``max_rows``: data rows (lines ``skip`` does not match) beyond ``header`` lines; ``max_line_bytes``:
    the longest line; ``refuse_nul``: refuse a NUL byte; ``gzip``: decompress input starting with the gzip
    magic number (under ``max_bytes``); ``use_mmap``: read a plain file into an anonymous memory map (no
    copy; pages touched as they are read); ``label``: names the input in messages (default ``'NAME'`` for a
    path or file object, ``the upload`` for bytes); ``peek(label, first_chunk)``: may refuse the input
    from its first (decompressed) chunk, before the rest is read."""
    for name, cap in (("max_bytes", max_bytes), ("max_rows", max_rows), ("max_line_bytes", max_line_bytes)):
        if cap is not None and (isinstance(cap, bool) or not isinstance(cap, (int, np.integer)) or cap < 0):
            raise InputError(f"{name}: expected a whole number >= 0, got {cap!r}")
    chunks, whole, path, label, size = _open(source, label, wording, max_bytes)
    checks = _Checks(label, wording, max_rows, header, max_line_bytes, refuse_nul, skip)
    if whole is not None:
        if not (gzip and whole[:2] == GZIP_MAGIC):  # plain bytes: checked in place, no copy
            raw = source if isinstance(source, (bytes, bytearray)) else bytes(whole)
            for k in range(0, whole.nbytes, CHUNK):
                if k == 0 and peek is not None:
                    peek(label, bytes(whole[:CHUNK]))
                checks.feed(whole, k, min(k + CHUNK, whole.nbytes))
            checks.finish(whole, whole.nbytes)
            return Capped(raw, label, None, False, checks.skipped, checks.exact_rows)
        chunks = (bytes(whole[i:i + CHUNK]) for i in range(0, whole.nbytes, CHUNK))
    elif path is not None:
        if use_mmap and not (gzip and _magic(path) == GZIP_MAGIC):
            return _read_mapped(path, label, size, max_bytes, checks, wording, peek)
        chunks = _file_chunks(path)
    return _read_chunks(chunks, label, path, max_bytes, checks, wording, gzip, peek)


def _magic(path: Path) -> bytes:
    try:
        with path.open("rb") as fh:
            return fh.read(2)
    except OSError as exc:
        raise InputError(f"cannot read {str(path)[:200]!r}: {exc.strerror or exc}") from None


def _read_mapped(path: Path, label: str, size: int, max_bytes: int, checks: _Checks, wording: Wording,
                 peek: Callable[[str, bytes], None] | None) -> Capped:
    """A plain file read straight into one anonymous memory map (``readinto``: no copy; pages are only
    touched as they are read, so a file refused after its first chunk costs one chunk of memory)."""
    buf = mmap.mmap(-1, size + 1)  # + 1: a file that grew since stat (or a special file) is noticed
    pos = 0
    try:
        with path.open("rb", buffering=0) as fh:
            while True:
                if pos == len(buf):  # more than stat said: grow (copy), up to just above the cap
                    if pos > max_bytes:
                        raise wording.error(label, f"is more than {max_bytes:,} bytes", wording.size, max_bytes)
                    bigger = mmap.mmap(-1, min(2 * len(buf) + CHUNK, max_bytes + 2))
                    bigger[:pos] = buf[:pos]
                    buf.close()
                    buf = bigger
                with memoryview(buf) as view:  # released before ``buf`` may be replaced
                    got = fh.readinto(view[pos:pos + CHUNK])
                    if not got:
                        break
                    if pos == 0 and peek is not None:
                        peek(label, bytes(view[:got]))
                checks.feed(buf, pos, pos + got)
                pos += got
    except OSError as exc:
        raise InputError(f"cannot read {str(path)[:200]!r}: {exc.strerror or exc}") from None
    if pos > max_bytes:
        raise wording.error(label, f"is more than {max_bytes:,} bytes", wording.size, max_bytes)
    checks.finish(buf, pos)
    if pos == 0:
        buf.close()
        return Capped(b"", label, path, False, checks.skipped, checks.exact_rows)
    try:
        buf.resize(pos)
    except (SystemError, OSError, ValueError):  # platforms that cannot shrink an anonymous map
        data = bytes(buf[:pos])
        buf.close()
        return Capped(data, label, path, False, checks.skipped, checks.exact_rows)
    return Capped(buf, label, path, False, checks.skipped, checks.exact_rows)


def _read_chunks(chunks: Iterator[bytes], label: str, path: Path | None, max_bytes: int, checks: _Checks,
                 wording: Wording, gzip: bool, peek: Callable[[str, bytes], None] | None) -> Capped:
    """Chunks into one buffer, decompressing gzip input under the cap (a bomb stops one byte past it)."""
    first = next(chunks, b"")
    is_gzip = gzip and first[:2] == GZIP_MAGIC
    buf = bytearray()
    dec = zlib.decompressobj(wbits=31) if is_gzip else None
    pos = read_in = 0
    too_big = wording.error(label, f"is more than {max_bytes:,} bytes", wording.size, max_bytes)

    def pieces() -> Iterator[bytes]:
        yield first
        yield from chunks

    for k, chunk in enumerate(pieces()):
        if not chunk:
            continue
        read_in += len(chunk)
        if read_in > max_bytes:
            raise too_big
        if dec is not None:
            try:
                chunk = dec.decompress(chunk, max_bytes - pos + 1)
            except zlib.error as exc:
                raise InputError(f"{label} starts like a gzip file but cannot be decompressed ({exc})") from None
            if pos + len(chunk) > max_bytes or dec.unconsumed_tail:
                raise wording.error(label, f"decompresses to more than {max_bytes:,} bytes", wording.size, max_bytes)
        buf += chunk
        if k == 0 and peek is not None:
            peek(label, bytes(chunk))
        checks.feed(buf, pos, pos + len(chunk))
        pos += len(chunk)
    if dec is not None and not dec.eof:
        raise InputError(f"{label} is a truncated gzip file")
    if pos > max_bytes:
        raise too_big
    checks.finish(buf, pos)
    return Capped(bytes(buf), label, path, is_gzip, checks.skipped, checks.exact_rows)


class _CappedStream:
    """A binary file object over a path or bytes whose reads stop past ``max_bytes`` (after gzip
    decompression, which happens here, chunk by chunk): :func:`open_capped`."""

    def __init__(self, chunks: Iterator[bytes], label: str, max_bytes: int, wording: Wording) -> None:
        self._chunks, self.label, self.max_bytes, self.wording = chunks, label, max_bytes, wording
        self._buf, self._dec, self._first, self.total, self.closed = b"", None, True, 0, False

    def _more(self) -> bytes:
        for chunk in self._chunks:
            if self._first:
                self._first = False
                if chunk[:2] == GZIP_MAGIC:
                    self._dec = zlib.decompressobj(wbits=31)
            if self._dec is not None:
                try:
                    chunk = self._dec.decompress(chunk, self.max_bytes - self.total + 1)
                except zlib.error as exc:
                    raise InputError(f"{self.label} starts like a gzip file but cannot be decompressed ({exc})") from None
                if self._dec.unconsumed_tail:
                    self.total = self.max_bytes + 1
            self.total += len(chunk)
            if self.total > self.max_bytes:
                raise self.wording.error(self.label, f"{'decompresses to' if self._dec else 'is'} more than "
                                         f"{self.max_bytes:,} bytes", self.wording.size, self.max_bytes)
            if chunk:
                return chunk
        if self._dec is not None and not self._dec.eof:
            raise InputError(f"{self.label} is a truncated gzip file")
        return b""

    def read(self, n: int = -1) -> bytes:
        while n < 0 or len(self._buf) < n:
            more = self._more()
            if not more:
                break
            self._buf += more
        if n < 0:
            out, self._buf = self._buf, b""
        else:
            out, self._buf = self._buf[:n], self._buf[n:]
        return out

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False

    def close(self) -> None:
        self.closed = True

    def __enter__(self) -> _CappedStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_capped(source: object, *, max_bytes: int, label: str | None = None,
                wording: Wording = Wording()) -> _CappedStream:
    """A binary file object over ``source`` (a path or bytes) for streaming readers: the size cap from
    ``stat`` first, then on the bytes read, gzip input decompressed under the same cap; a FIFO or a
    device is refused before it is opened."""
    chunks, whole, path, label, _ = _open(source, label, wording, max_bytes)
    if whole is not None:
        chunks = (bytes(whole[i:i + CHUNK]) for i in range(0, whole.nbytes, CHUNK))
    elif path is not None:
        chunks = _file_chunks(path)
    return _CappedStream(chunks, label, max_bytes, wording)


def strict_json(text: str, label: str, expected: str, magnitude: float = math.inf) -> object:
    """``json.loads`` for user files: NaN, Infinity, numbers too large for a float (or above ``magnitude`` in
    absolute value) are refused, and so is nesting too deep for the parser (InputError, not RecursionError)."""
    def finite(token: str) -> float:
        value = float(token)
        if not (math.isfinite(value) and abs(value) <= magnitude):  # 1e400 is inf
            raise InputError(f"{label}: the number {token[:40]} is too large (expected a finite number"
                             + (f" within ±{magnitude:g})" if math.isfinite(magnitude) else ")"))
        return value

    def integer(token: str) -> int:
        value = int(token)
        if abs(value) > magnitude:
            raise InputError(f"{label}: the number {token[:40]} is too large (expected a number within "
                             f"±{magnitude:g})")
        return value

    def constant(token: str) -> float:
        raise InputError(f"{label}: {token} is not a number (expected finite numbers)")

    try:
        return json.loads(text, parse_float=finite, parse_int=integer, parse_constant=constant)
    except InputError:
        raise
    except json.JSONDecodeError as exc:
        raise InputError(f"{label}: not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno}); "
                         f"expected {expected}") from None
    except ValueError as exc:  # an integer of more digits than Python converts (sys.get_int_max_str_digits)
        raise InputError(f"{label}: a number with too many digits ({exc}); expected {expected}") from None
    except RecursionError:
        raise InputError(f"{label}: JSON nested too deeply; expected {expected}") from None
