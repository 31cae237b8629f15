"""Categorical data for marginals: any CSV, workloads, measurements; the registry's hooks.

* :func:`read_table`: any CSV (path or bytes, optionally gzip-compressed) → :class:`Dataset`. Numeric
  columns with more distinct values than ``bins`` are cut into intervals, every other column is
  categorical.
* :func:`parse_workload`: the marginals to release, as ``k`` (all k-way), a JSON list of attribute-name
  lists, or a CSV with one attribute set per line.
* :func:`read_measurements`: a MEAS.json (noisy marginal measurements) as a JSON object, for
  :func:`dpviz.marginals.estimators.reconstruct`.
* :func:`load` and :func:`canonical_bytes`: the registry's hooks (``sample:NAME`` or a CSV; the ledger's
  dataset identity). The bundled samples are in :mod:`dpviz.marginals.samples`.

Every user-facing problem is an :class:`~dpviz.errors.InputError` naming the file, line or column and
what was expected. Size caps (module constants, keyword arguments, CLI flags) are checked before the
work: bytes from the file size before reading (and on the decompressed size of gzip input while it is
decompressed), columns on the header, rows while reading. Text may start with any number of byte-order
marks; a NUL byte is refused (naming its line: a binary or UTF-16 file); JSON nested too deeply is
refused instead of exhausting the stack.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from array import array
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import numpy as np

from dpviz.core.inputs import require_regular_file
from dpviz.core.reader import Cap, Wording, decode, read_capped
from dpviz.core.reader import strict_json as _json
from dpviz.core.structure import StructureSource
from dpviz.errors import InputError
from dpviz.marginals.binning import Column, categorise, check_bins
from dpviz.marginals.model import MAX_MARGINAL_CELLS, Clique, Dataset, Domain, all_kway

if TYPE_CHECKING:
    from dpviz.marginals.declared import DomainDeclaration

__all__ = [
    "read_table", "load", "canonical_bytes", "CANONICAL", "parse_workload", "read_measurements",
    "MAX_ROWS",
    "MAX_BYTES",
    "MAX_COLUMNS",
    "MAX_LINE_CHARS",
    "MAX_HEADER_COLUMNS",
    "MAX_MEAS_BYTES",
    "MAX_MEAS_MAGNITUDE",
    "MAX_WORKLOAD_BYTES",
    "MAX_WORKLOAD_MARGINALS",
]

CANONICAL = "records before projection/binning: sorted column names, sorted JSON lines of values"
"""What :func:`canonical_bytes` serialises (the ledger shows it with a dataset's identity)."""

MAX_ROWS = 2_000_000
"""Default cap on the number of data rows of a CSV read by :func:`read_table`."""
MAX_BYTES = 100_000_000
"""Default cap on the size of a CSV (and on its decompressed size when it is gzip-compressed)."""
MAX_COLUMNS = 1_000
"""Default cap on the number of columns :func:`read_table` keeps (all of them, or ``attributes``), checked
on the header before any row is read: a marginal table is over a few categorical attributes, and every
kept column costs 8 bytes a row."""
MAX_LINE_CHARS = 1_000_000
"""Cap on the length of one line of a CSV (the header included), checked before the line is parsed: the
header of a million columns is refused at once, in memory bounded by the file cap."""
MAX_HEADER_COLUMNS = 100_000
"""Cap on the number of columns in a CSV header (all of them, kept or not)."""
MAX_MEAS_BYTES = 100_000_000
"""Default cap on the size of a MEAS.json read by :func:`read_measurements`."""
MAX_MEAS_MAGNITUDE = 1e15
"""Largest absolute value of a number in a MEAS.json (counts, their standard deviations, domain sizes): far
above any count a table of records can hold (float64 counts are exact up to 2⁵³ ≈ 9·10¹⁵), small enough that
squares and sums of them stay finite."""
MAX_WORKLOAD_BYTES = 1_000_000
"""Cap on the size of a workload file."""
MAX_WORKLOAD_MARGINALS = 100_000
"""Cap on the number of marginals that ``k`` may expand to (C(d, k))."""

_FILE_SIGNATURES = (
    (b"\x89PNG\r\n\x1a\n", "a PNG image"), (b"\xff\xd8\xff", "a JPEG image"), (b"GIF87a", "a GIF image"),
    (b"GIF89a", "a GIF image"), (b"%PDF-", "a PDF document"),
    (b"PK\x03\x04", "a ZIP archive (an Excel .xlsx workbook is one: save the sheet as CSV)"),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "an old Excel or Word file (save the sheet as CSV)"),
    (b"SQLite format 3\x00", "an SQLite database"), (b"\x7fELF", "a program"),
)
"""Leading bytes of common non-text files: such an upload is refused by name, not read as a CSV."""
_CONTROL = re.compile(r"[\x01-\x08\x0b\x0c\x0e-\x1f\x7f]")
"""Control characters no text table holds (tab, line feed and carriage return are allowed; NUL has its own
message): one of them means a binary file read as Latin-1."""
MAX_NAME_CHARS = 200
"""Longest column name of the header (a longer one is a line of something else)."""
EXPECTED_TABLE = "expected a CSV table: a header line of column names (such as age,sex,class), then one record a line"


# ----------------------------------------------------------------------------------------------- reading


def _stem(path: Path) -> str:
    name = path.name
    for suffix in (".gz", ".csv", ".txt", ".tsv", ".parquet"):
        name = name.removesuffix(suffix)
    return name or "dataset"


def _raise_hint(func: str, flag: str | None, keyword: str) -> str:
    """How to raise a cap, for error messages."""
    cli = f" or the CLI flag {flag} N" if flag else ""
    return f"raise it with {func}(..., {keyword}=N){cli}"


def _read_bytes(source: str | Path | bytes, max_bytes: int, what: str,
                hint: tuple[str, str | None] = ("read_table", "--max-bytes"), columns=None) -> tuple[bytes, str, str]:
    """(raw bytes, gzip input decompressed; label for messages; dataset name) read by
    :func:`dpviz.core.reader.read_capped`: the size cap is checked before reading a file (from its size) and
    on the decompressed size of gzip input while it is decompressed; a FIFO or a device is refused at once.
    ``hint``: (function, CLI flag) that raise the cap, named in the message. A Parquet file or folder: the
    ``columns`` (default all) as CSV bytes (:func:`dpviz.core.records.parquet_csv`, line L = row L - 1)."""
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, (int, np.integer)) or max_bytes < 1:
        raise InputError(f"max_bytes: expected a whole number >= 1, got {max_bytes!r}")
    if isinstance(source, (bytes, bytearray, memoryview)):
        name = "upload"
    elif isinstance(source, (str, Path)):
        name = _stem(Path(source))
    else:
        raise InputError(f"{what}: expected a file path or bytes, got {type(source).__name__}")
    func, flag = hint
    wording = Wording(call=func, python_first=True, what=what,
                      size=Cap("MAX_BYTES", flag, "max_bytes", ", above the limit of {limit} bytes", None))
    from dpviz.core.records import is_parquet, parquet_csv
    if what == "input" and is_parquet(source):
        return parquet_csv(source, columns, max_bytes=max_bytes, wording=wording), repr(name), name
    got = read_capped(source, max_bytes=max_bytes, wording=wording)
    return got.data, got.label, name


def _decode(raw: bytes, label: str = "the file") -> str:
    """UTF-8 (else Latin-1) text (:func:`dpviz.core.reader.decode`), through :func:`_clean_text`."""
    return _clean_text(decode(raw), label)


def _clean_text(text: str, label: str) -> str:
    """``text`` without its leading byte-order marks (any number); InputError for a NUL byte, naming its line."""
    text = text.lstrip("\ufeff")
    nul = text.find("\0")
    if nul >= 0:
        line = len(re.findall(r"\r\n|\r|\n", text[:nul])) + 1
        raise InputError(f"{label}, line {line}: a NUL byte; expected text (UTF-8 or "
                         "Latin-1), not a binary or UTF-16 file")
    return text


def _refuse_signature(raw: bytes, label: str) -> None:
    """InputError for a file that starts like a known binary format (PNG, JPEG, PDF, ZIP/xlsx, ...)."""
    for magic, what in _FILE_SIGNATURES:
        if raw.startswith(magic):
            raise InputError(f"{label}, line 1, column 1: this is {what}, not a text table; {EXPECTED_TABLE}")


def _refuse_control(text: str, label: str) -> None:
    """InputError for a control character in decoded text (naming its line and column): random bytes, an
    image or a program read as Latin-1."""
    bad = _CONTROL.search(text)
    if bad is not None:
        at = bad.start()
        start = max(text.rfind("\n", 0, at), text.rfind("\r", 0, at)) + 1
        line = len(re.findall(r"\r\n|\r|\n", text[:at])) + 1
        raise InputError(f"{label}, line {line}, column {at - start + 1}: the control character "
                         f"U+{ord(bad.group()):04X}, which no text table holds (a binary file such as an image, an "
                         f"archive or random bytes?); {EXPECTED_TABLE}")


def _check_name(name: str, label: str, line: int, column: int) -> None:
    """InputError for a header name that cannot be a column name: no letter or digit, an undecodable
    character (U+FFFD), or too long."""
    if len(name) > MAX_NAME_CHARS:
        raise InputError(f"{label}, line {line}, column {column}: a header name of {len(name):,} characters "
                         f"(at most {MAX_NAME_CHARS}); is it the right file? {EXPECTED_TABLE}")
    if not any(ch.isalnum() for ch in name) or "\ufffd" in name:
        raise InputError(f"{label}, line {line}, column {column}: the header name {_short(name)!r} has no letter or "
                         f"digit, so the first line is not a header; {EXPECTED_TABLE}")


def _delimiter(text: str) -> str:
    """Comma, unless the header line has none and has a tab or a semicolon."""
    end = text.find("\n")
    header = text if end < 0 else text[:end]
    if "," in header:
        return ","
    if "\t" in header:
        return "\t"
    return ";" if ";" in header else ","


def _lines(text: str, max_line: int | None = None, label: str = "the file") -> Iterator[str]:
    """The lines of ``text`` with their line ends, one at a time (``io.StringIO`` would hold a copy of 4 bytes
    a character); CR and CRLF line ends are read as LF. ``max_line``: a line of more characters is refused
    (InputError naming it) before the CSV parser splits it."""
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    start, n, number = 0, len(text), 0
    while start < n:
        end = text.find("\n", start)
        end = n if end < 0 else end + 1
        number += 1
        if max_line is not None and end - start > max_line:
            raise InputError(f"{label}, line {number}: {end - start:,} characters, above the limit of {max_line:,} "
                             "a line (" + ("the header" if number == 1 else "a record")
                             + " of a table of a few categorical columns is far shorter); is it the right file?")
        yield text[start:end]
        start = end


def read_table(
    source: str | Path | bytes,
    *,
    attributes: Sequence[str] | None = None,
    skip_constant: bool = False,
    bins: int | dict[str, int] = 10,
    binning: Literal["quantile", "width"] = "quantile",
    max_rows: int = MAX_ROWS,
    max_bytes: int = MAX_BYTES,
    max_columns: int = MAX_COLUMNS,
    name: str | None = None,
    domain: DomainDeclaration | None = None,
) -> Dataset:
    """Read a CSV (a path, or its bytes; UTF-8 or Latin-1; gzip-compressed or not) into a :class:`Dataset`.

    - The first line is the header. The delimiter is a comma, or a tab/semicolon when the header has
      no comma. Values are stripped; an empty value, ``NA``, ``N/A``, ``NaN``, ``null`` or ``(missing)``
      (any case) is missing and becomes the category ``"(missing)"`` (the last one). Blank lines are
      skipped.
    - ``attributes``: the columns to keep, in this order (default: all, in file order).
    - A column whose present values are all numbers is *numeric*. A numeric column with more distinct
      values than its bins (``bins``: one number for all, or ``{column: number}`` with the default 10 for
      the others) is cut into intervals labelled ``"[17, 25)"`` (the last one closed, ``"[75, 90]"``):
      ``binning="quantile"`` gives equal-frequency bins that never split tied values (so there may be
      fewer bins: a value that fills many bins' worth of rows gets a bin of its own), ``"width"`` gives
      ``bins`` intervals of equal width between the smallest and largest value (some may be empty).
      Every other column is categorical: numeric ones sorted by value (``"2"`` and ``"2.0"`` are the same
      category), text ones sorted by code point.
    - Bin edges come from the data itself: they are *not* differentially private (the Dataset's
      ``structure`` says so).
    - ``domain``: a :class:`dpviz.marginals.declared.DomainDeclaration`. Then the declared attributes are
      kept (``attributes`` picks some of them, in its order), with the declared categories and bin edges
      (``bins``/``binning`` do not apply); a record outside the declaration is dropped, clamped or put in
      the catch-all category as the declaration says (its number is not reported anywhere). A declared
      category no record holds is still a category.

    InputError for: a missing file, more than ``max_bytes`` bytes (checked before reading, and again on
    the decompressed size), more than ``max_columns`` kept columns (checked on the header), more than
    ``max_rows`` data rows (checked while reading), a line above :data:`MAX_LINE_CHARS` characters or a
    header above :data:`MAX_HEADER_COLUMNS` columns (checked before the line is split), a NUL byte, an empty file, a header-only file, an unnamed or repeated column, a row with more or fewer fields than the header
    (naming the line), unknown or repeated ``attributes``, bad ``bins``/``binning``, bins for a
    non-numeric column, and a column with a single value (drop it) — unless ``skip_constant``, which
    leaves such columns out of the result instead (for a first look at a file whose columns are then
    picked).
    """
    if binning not in ("quantile", "width"):
        raise InputError(f"binning: expected 'quantile' or 'width', got {binning!r}")
    check_bins(bins)
    for what, value in (("max_rows", max_rows), ("max_columns", max_columns)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 1 <= value < 2**31:
            raise InputError(f"{what}: expected a whole number in 1..{2**31 - 1:,}, got {value!r}")
    if domain is not None:
        domain = domain.select(None if attributes is None else
                               ([attributes] if isinstance(attributes, str) else list(attributes)))
        if isinstance(bins, dict):
            raise InputError("bins: the bin edges come from the declared domain; drop bins")
    raw, label, default_name = _read_bytes(source, max_bytes, "input", columns=list(domain.names) if domain else (
        None if attributes is None else [attributes] if isinstance(attributes, str) else list(attributes)))
    _refuse_signature(raw, label)
    text = _decode(raw, label)
    _refuse_control(text, label)
    del raw
    if not text.strip():
        raise InputError(f"{label} is empty: expected a header line of column names and at least one data row")
    reader = csv.reader(_lines(text, MAX_LINE_CHARS, label), delimiter=_delimiter(text))
    try:
        header = next(r for r in reader if r)
        header_line = reader.line_num
        if len(header) > MAX_HEADER_COLUMNS:
            raise InputError(f"{label}, line {header_line}: the header has {len(header):,} columns, above the limit "
                             f"of {MAX_HEADER_COLUMNS:,}; is it the right file?")
        names = [h.strip() for h in header]
        position: dict[str, int] = {}
        for j, h in enumerate(names):  # one pass, a dict: linear in the header
            if not h:
                raise InputError(f"{label}, line {header_line}: column {j + 1} of the header has no name")
            _check_name(h, label, header_line, j + 1)
            if h in position:
                raise InputError(f"{label}, line {header_line}: column {_short(h)!r} appears twice in the header")
            position[h] = j
        chosen = _chosen(names, position, attributes, domain, label)
        if isinstance(bins, dict):
            unknown = [c for c in bins if c not in set(chosen)]
            if unknown:
                raise InputError(f"bins: unknown column {_short(unknown[0])!r}; the chosen columns are "
                                 + _name_list(chosen))
        if len(chosen) > max_columns:
            raise InputError(f"{label} has {len(chosen):,} columns to tabulate, above the limit of {max_columns:,}; "
                             "pick some with attributes=[...] (CLI --attributes), or "
                             + _raise_hint("read_table", "--max-columns", "max_columns"))
        cols = [Column(a) for a in chosen]
        where = [position[a] for a in chosen]
        ncols, nrows = len(names), 0
        for row in reader:
            if not row:
                continue
            if len(row) != ncols:
                more = "more" if len(row) > ncols else "fewer"
                raise InputError(f"{label}, line {reader.line_num}: {len(row)} fields, {more} than the {ncols} "
                                 "columns of the header (quote values that contain the delimiter; "
                                 "a missing value is an empty field)")
            nrows += 1
            if nrows > max_rows:
                raise InputError(f"{label} has more than {max_rows:,} data rows, above the limit (counted while "
                                 "reading); " + _raise_hint("read_table", "--max-rows", "max_rows"))
            for col, j in zip(cols, where, strict=True):
                v = row[j].strip()
                code = col.index.get(v)
                if code is None:
                    code = col.index[v] = len(col.index)
                    col.lines.append(reader.line_num)
                col.codes.append(code)
    except StopIteration:
        raise InputError(f"{label} is empty: expected a header line of column names and at least one "
                         "data row") from None
    except csv.Error as exc:
        raise InputError(f"{label}, line {reader.line_num}: not a valid CSV row ({_short(exc, 200)})") from None
    if nrows == 0:
        raise InputError(f"{label} has a header line but no data rows")
    if domain is not None:
        from dpviz.marginals.declared import code_columns

        return code_columns([(c.index, c.codes) for c in cols], nrows, domain, name or default_name)
    codes = np.empty((nrows, len(cols)), dtype=np.int64)  # filled column by column: no stacking copy
    categories, kept, edges = [], [], []
    for col in cols:
        given = isinstance(bins, dict) and col.name in bins
        b = int(bins[col.name]) if given else (10 if isinstance(bins, dict) else int(bins))
        if skip_constant and len(col.index) < 2:
            col.codes = array("i")
            continue  # a column with one value (or only missing values) carries no information
        codes[:, len(kept)], labels, cut = categorise(col, b, binning, given)
        col.codes = array("i")  # free the raw codes as soon as they are mapped
        categories.append(tuple(labels))
        kept.append(col.name)
        edges.append(cut)
    if not kept:
        raise InputError(f"{label}: every column has a single value; nothing to tabulate")
    domain_ = Domain(tuple(kept), tuple(len(c) for c in categories))
    if len(kept) < len(cols):
        codes = np.ascontiguousarray(codes[:, : len(kept)])
    return Dataset(domain_, codes, tuple(categories), name or default_name, tuple(edges),
                   StructureSource("data", label))


def _short(text: object, limit: int = 80) -> str:
    """``text`` cut to ``limit`` characters (a column name or a parser message in a one-line error)."""
    s = str(text)
    return s if len(s) <= limit else s[: limit - 1] + "…"


def _name_list(names: Sequence[str], limit: int = 12) -> str:
    """The first ``limit`` names, each cut short, and how many there are: an error line stays short."""
    shown = ", ".join(_short(n, 40) for n in names[:limit])
    return shown + (f", … ({len(names):,} in all)" if len(names) > limit else "")


def _chosen(names: list[str], position: dict[str, int], attributes, domain, label: str) -> list[str]:
    """The columns to keep: the declared attributes (each must be a column), ``attributes``, or all."""
    if domain is not None:
        missing = next((a for a in domain.names if a not in position), None)
        if missing is not None:
            raise InputError(f"--domain: the declared attribute {_short(missing)!r} is not a column of {label}; "
                             f"its columns are {_name_list(names)}")
        return list(domain.names)
    if attributes is None:
        return list(names)
    chosen = [attributes] if isinstance(attributes, str) else list(attributes)
    if not chosen:
        raise InputError("attributes: expected at least one column name")
    unknown = next((a for a in chosen if a not in position), None)
    if unknown is not None:
        raise InputError(f"attributes: unknown column {_short(unknown)!r}; {label} has {_name_list(names)}")
    seen: set[str] = set()
    for a in chosen:
        if a in seen:
            raise InputError(f"attributes: column {_short(a)!r} is named twice")
        seen.add(a)
    return chosen


# ----------------------------------------------------------------------------------------------- workload


def _clique(domain: Domain, names: Sequence[str | int], where: str, limit: int) -> Clique:
    if not names:
        raise InputError(f"workload {where}: names no attribute; expected one or more of {', '.join(domain.attrs)}")
    try:
        clique = domain.clique(names)
        domain.check_cells(clique, limit)
    except InputError as exc:
        raise InputError(f"workload {where}: {str(exc).removeprefix('workload: ')}") from None
    return clique


def _kway(domain: Domain, k: int, limit: int) -> list[Clique]:
    if not 1 <= k <= domain.d:
        raise InputError(f"workload: k = {k} must lie in 1..{domain.d} for a domain of {domain.d} attributes")
    n = math.comb(domain.d, k)
    if n > MAX_WORKLOAD_MARGINALS:
        raise InputError(f"workload: all {k}-way marginals of {domain.d} attributes are {n:,} marginals, above the "
                         f"limit of {MAX_WORKLOAD_MARGINALS:,}; pick a smaller k or list the marginals")
    out = all_kway(domain, k)
    for g in out:
        _clique(domain, domain.names(g), f"(all {k}-way marginals)", limit)
    return out


def _entries(obj: list, domain: Domain, limit: int, what: str) -> list[Clique]:
    out = []
    for i, entry in enumerate(obj, 1):
        where = f"{what} {i}"
        if isinstance(entry, str):
            names: list = [s.strip() for s in entry.split(",") if s.strip()]
        elif isinstance(entry, (list, tuple)):
            names = list(entry)
            for a in names:
                if isinstance(a, bool) or not isinstance(a, (str, int, np.integer)):
                    raise InputError(f"workload {where}: {a!r} is not an attribute name")
            names = [a.strip() if isinstance(a, str) else a for a in names]
        else:
            raise InputError(f"workload {where}: expected a list of attribute names, got {entry!r}")
        out.append(_clique(domain, names, where, limit))
    return out


def _parse_text(text: str, domain: Domain, limit: int, label: str) -> list[Clique]:
    s = text.strip()
    if not s:
        raise InputError(f"workload {label} is empty: expected k, a JSON list of attribute lists, or one "
                         "comma-separated attribute set per line")
    if re.fullmatch(r"\d+", s):
        if len(s) > 18:
            raise InputError(f"workload: k = {s[:20]}... ({len(s)} digits) must lie in 1..{domain.d} for a domain of "
                             f"{domain.d} attributes")
        return _kway(domain, int(s), limit)
    if s[0] in "[{":
        obj = _json(s, f"workload {label}", "a list of attribute-name lists")
        if not isinstance(obj, list):
            raise InputError(f"workload {label}: expected a JSON list of attribute-name lists")
        return _entries(obj, domain, limit, "entry")
    out = []
    reader = csv.reader(_lines(s))
    try:
        for row in reader:
            names = [x.strip() for x in row if x.strip()]
            if not names or names[0].startswith("#"):
                continue
            out.append(_clique(domain, names, f"line {reader.line_num}", limit))
    except csv.Error as exc:
        raise InputError(f"workload {label}, line {reader.line_num}: not a valid CSV line ({exc})") from None
    return out


def _is_file(name: str) -> bool:
    """Whether ``name`` names an existing file, regular or not (a FIFO is then refused by the reader, not
    read as workload text); False for a folder or a name the OS cannot even look up."""
    try:
        path = Path(name)
        return path.exists() and not path.is_dir()
    except (OSError, ValueError):  # too long, a NUL byte ...
        return False


def parse_workload(
    source: str | Path | bytes | int | list,
    domain: Domain,
    *,
    limit: int = MAX_MARGINAL_CELLS,
    max_bytes: int = MAX_WORKLOAD_BYTES,
) -> list[Clique]:
    """The marginals to release, as cliques of ``domain``, duplicates removed, first-seen order kept.

    ``source`` is one of:

    - ``k`` (an int, or text such as ``"2"``): every k-way marginal (:func:`all_kway`), 1 ≤ k ≤ d;
    - a JSON list of attribute-name lists, e.g. ``[["age", "sex"], ["race"]]`` (text, bytes or a file);
    - CSV text, bytes or a file with one attribute set per line, e.g. ``age,sex`` (blank lines and lines
      starting with ``#`` are skipped);
    - a Python list whose entries are lists of names (or indices) or ``"a,b"`` strings.

    A ``str`` naming an existing file is read as that file; otherwise it is the workload text itself.
    InputError for an empty workload, an unknown attribute or an entry naming none (giving the line or
    entry), invalid JSON, a file above ``max_bytes``, and a marginal with more than ``limit`` cells
    (saying how big it would be).
    """
    if isinstance(source, bool):
        raise InputError(f"workload: expected k, a list of attribute lists or a file, got {source!r}")
    if isinstance(source, (int, np.integer)):
        out = _kway(domain, int(source), limit)
    elif isinstance(source, (list, tuple)):
        out = _entries(list(source), domain, limit, "entry")
    elif isinstance(source, (bytes, bytearray, memoryview, Path)):
        raw, label, _ = _read_bytes(source, max_bytes, "workload", ("parse_workload", None))
        out = _parse_text(_decode(raw, label), domain, limit, label)
    elif isinstance(source, str):
        s = source.strip()
        is_file = bool(s) and "\n" not in s and len(s) < 4096 and not s.startswith("[") and _is_file(s)
        if is_file:
            raw, label, _ = _read_bytes(Path(s), max_bytes, "workload", ("parse_workload", None))
            out = _parse_text(_decode(raw, label), domain, limit, label)
        elif "\n" not in s and re.search(r"\.(csv|json|txt)$", s, flags=re.IGNORECASE):
            raise InputError(f"workload file {s!r} does not exist")
        else:
            if len(source) > max_bytes:
                raise InputError(f"workload text is {len(source):,} characters, above the limit of {max_bytes:,}; "
                                 + _raise_hint("parse_workload", None, "max_bytes"))
            out = _parse_text(_clean_text(source, "workload text"), domain, limit, "text")
    else:
        raise InputError(f"workload: expected k, a list of attribute lists, text or a file, got "
                         f"{type(source).__name__}")
    unique = list(dict.fromkeys(out))
    if not unique:
        raise InputError("workload is empty: name at least one marginal (k, a JSON list of attribute lists, or "
                         "one comma-separated attribute set per line)")
    return unique


# ----------------------------------------------------------------------------------------------- measurements


def read_measurements(source: str | Path | bytes, *, max_bytes: int = MAX_MEAS_BYTES) -> dict:
    """A MEAS.json (a path, or its bytes; optionally gzip-compressed) as the JSON object that
    :func:`dpviz.marginals.estimators.reconstruct` checks and uses.

    InputError for: a missing file or a folder, more than ``max_bytes`` bytes (checked before reading, and
    on the decompressed size), a NUL byte, an empty file, invalid JSON, NaN/Infinity or a number above
    :data:`MAX_MEAS_MAGNITUDE` in absolute value, nesting too deep, and a top level that is not an object.
    """
    raw, label, _ = _read_bytes(source, max_bytes, "MEAS.json", ("read_measurements", "--max-bytes"))
    text = _decode(raw, label)
    del raw
    if not text.strip():
        raise InputError(f"{label} is empty: expected a JSON object with \"domain\", \"measurements\" and "
                         "\"workload\"")
    obj = _json(text, label, 'a JSON object with "domain", "measurements" and "workload"', MAX_MEAS_MAGNITUDE)
    if not isinstance(obj, dict):
        raise InputError(f'{label}: expected a JSON object with "domain", "measurements" and "workload", got a '
                         f"{type(obj).__name__}")
    return obj


# ----------------------------------------------------------------------------------------------- registry hooks


def load(source: str | Path, **options: object) -> Dataset:
    """The registry's ``load`` hook: ``sample:NAME`` (through :func:`dpviz.core.registry.load_sample`;
    :mod:`dpviz.marginals.samples`) or a CSV read by :func:`read_table` with ``options`` (``attributes``,
    ``bins``, ``binning``, ``domain``, the caps)."""
    from dpviz.core.registry import load_source

    return load_source("marginals", source, lambda path: read_table(path, **options))


def _records(header: list[str], rows) -> bytes:
    """The column names sorted (one JSON line), then the records' values in that column order as sorted JSON
    lines."""
    order = sorted(range(len(header)), key=header.__getitem__)
    head = json.dumps([header[k] for k in order], ensure_ascii=False) + "\n"
    quoted: dict[str, str] = {}  # categorical values repeat: each is JSON-quoted once

    def q(v: str) -> str:
        out = quoted.get(v)
        if out is None:
            out = quoted[v] = json.dumps(v, ensure_ascii=False)
        return out

    # each line is json.dumps(values, ensure_ascii=False, separators=(",", ":")) (core.canonical.json_lines)
    lines = ["[" + ",".join([q(r[k]) for k in order]) + "]" for r in rows]
    lines.sort()
    return head.encode("utf-8") + ("\n".join(lines) + "\n").encode("utf-8")


def canonical_bytes(source: str | Path, data: Dataset | None = None) -> bytes:
    """The registry's ``canonical_bytes`` hook (the ledger's dataset identity, after its ``dpviz-ledger/1
    marginals`` line): the records before any projection or binning, so every ``--attributes``/``--bins``/
    ``--binning`` choice on one file spends from one budget (they are the same people). The header's column
    names sorted, then one JSON line of stripped values a record (columns in that sorted order), lines sorted.

    ``data`` is not used: a file is re-read as :func:`read_table` reads it (same size cap, gzip, encoding and
    delimiter rules) and a bundled sample is reloaded in full (its records are its category labels)."""
    from dpviz.core.registry import SAMPLE_PREFIX, load_sample

    text = str(source)
    if text.startswith(SAMPLE_PREFIX):
        full = load_sample("marginals", text)
        cols = [np.asarray(cats, dtype=object)[full.codes[:, k]].tolist() for k, cats in enumerate(full.categories)]
        return _records(list(full.domain.attrs), zip(*cols))
    from dpviz.core.records import is_parquet
    raw, label, _ = _read_bytes(Path(text) if is_parquet(text) else require_regular_file(Path(text), "input"),
                                MAX_BYTES, "input")
    decoded = _decode(raw)
    reader = csv.reader(io.StringIO(decoded, newline=""), delimiter=_delimiter(decoded))
    rows = [[v.strip() for v in r] for r in reader if r]
    if not rows:
        raise InputError(f"{label} is empty: expected a header line of column names and at least one data row")
    return _records(rows[0], rows[1:])
