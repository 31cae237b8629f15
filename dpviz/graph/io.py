"""Read and write edge lists: CSV/TSV/whitespace-separated text, any vertex ids, size caps checked first.

:func:`read_edges` turns a file (a path, its bytes, or an open binary file; optionally gzip-compressed)
into a :class:`~dpviz.graph.model.Graph`:

- **Rows.** One edge per line: two vertex ids ``u`` and ``v``, separated by a comma, a tab, a semicolon
  or spaces (the first data line decides: comma if it has one, else tab, else semicolon, else runs of
  whitespace). An optional third column must be a number (an edge weight): it is ignored, with a
  notice (the graph is unweighted). Blank lines and lines starting with ``#`` or ``%`` (comments, as in
  SNAP and KONECT files) are skipped. CSV quoting (``"a, b"``) is understood with a comma, tab or
  semicolon.
- **Header.** Optional. ``header=None`` (default) detects it: the first line is a header when its first
  two fields are usual column names (``u,v``, ``source,target``, ``src,dst``, ``from,to``, ``node1,node2``
  ...), or when every other line has integer ids and it does not. Pass ``header=True/False`` (CLI:
  ``--header yes|no``) for any other file.
- **Vertex ids.** If every id is an integer (``[+-]?digits``), vertices are numbered 0..n-1 in
  **increasing numeric order** of the ids that occur (so 0-based ids 0..n-1 map to themselves and a
  1-based file is shifted by one; such ids are written back in decimal form, ``007`` as ``7``);
  otherwise every id is a string label and vertices are numbered in **first-seen order** (reading row
  by row, u before v). ``Graph.labels`` keeps the original id of each
  vertex (None when the ids are 0..n-1 themselves), and :func:`write_edges` writes the labels back.
  Only ids that occur in an edge become vertices, unless ``n_nodes`` is given: then the ids must be
  integers in 0..n_nodes-1 and are used as they are (vertices in no edge are isolated; this is how the
  bundled samples keep their isolated vertices).
- **Undirected, simple.** An edge list is read as an undirected graph: (a, b) and (b, a) are the same
  edge (a directed input is thereby symmetrised, with a notice saying how many pairs appeared in both
  directions); self-loops and repeated edges are dropped. ``Graph.notices`` says how many of each.

Size caps (module constants, each a keyword argument, and a CLI flag): :data:`MAX_BYTES` is checked
before anything is read (from the file size, or ``len(bytes)``; and on the decompressed size of a
gzip file while it is decompressed); :data:`MAX_EDGES` while reading, in chunks of 4 MiB, by counting
data lines before anything is parsed (and again exactly after parsing); :data:`MAX_NODES` on
``n_nodes`` before parsing and on the number of distinct ids after; :data:`MAX_LINE_BYTES` on every line
while reading (an edge line holds two ids and a weight: one line of 10⁵ fields is refused at once, in bounded
time and memory, naming the line). :func:`read_lines` reads a one-id-per-line file (a declared vertex set,
``--nodes``) with the same caps. Every problem is an
:class:`~dpviz.errors.InputError` naming the line (1-based, as in an editor) and what was expected.
Text may start with any number of byte-order marks; a NUL byte is refused (naming its line: a binary or
UTF-16 file), so ``a`` and ``a\0`` can never be two different vertices. A Parquet file or folder (an edge
table, :func:`dpviz.core.records.is_parquet`) is read column-selectively: its first two columns are u, v
(their names the header), parsed as the CSV of those columns (line L is row L - 1).
:func:`edges_from_records` builds the same graph from the distinct rows of an edge table counted by
:func:`dpviz.core.records.count_records` (bounded memory, or a Dask group-by: ``graph ... --workers N``).
"""

from __future__ import annotations

import io
import json
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from dpviz.core.reader import Cap, Wording, decode, read_capped
from dpviz.core.tables import write_table
from dpviz.errors import InputError
from dpviz.graph.model import Graph, canonical_edges, check_n_nodes, sorted_unique

__all__ = ["read_edges", "edges_from_records", "write_edges", "edges_frame", "load", "canonical_bytes", "CANONICAL", "MAX_BYTES", "MAX_EDGES", "MAX_NODES", "MAX_LINE_BYTES",
           "HEADER_NAMES", "INT_ID", "read_lines"]

MAX_BYTES = 100_000_000
"""Default cap on the size of an edge-list file (and on its decompressed size if gzip-compressed)."""
MAX_EDGES = 2_000_000
"""Default cap on the number of edge rows."""
MAX_NODES = 5_000_000
"""Default cap on the number of vertices (``n_nodes``, or distinct ids)."""
MAX_LINE_BYTES = 8_192
"""Cap on the length of one line in bytes (without its line end): an edge line holds two vertex ids and an
optional weight. Checked while reading, chunk by chunk, before anything is parsed, so one huge line (10⁵
fields) is refused at once in bounded time and memory."""
HEADER_NAMES = frozenset({
    "u", "v", "i", "j", "source", "target", "src", "dst", "from", "to", "node1", "node2", "node_1", "node_2",
    "id1", "id2", "source_id", "target_id", "from_id", "to_id", "vertex1", "vertex2", "head", "tail",
    "sender", "receiver", "fromnodeid", "tonodeid", "node", "neighbor", "neighbour",
})
"""Column names that make the first line a header (case-insensitive; both of its first two fields)."""
CANONICAL = "parsed undirected edge set: sorted JSON lines [a, b] of vertex labels"
"""What :func:`canonical_bytes` serialises (the ledger shows it with a dataset's identity)."""

_SKIP_LINE = re.compile(rb"(?m)^[ \t\r\f\v]*(?:[#%][^\n]*)?\n")
"""A blank or comment line (with its newline), in raw bytes (for counting data lines while reading)."""
_SKIP_TEXT = re.compile(r"[ \t\f\v]*(?:[#%].*)?")
"""A blank or comment line of the decoded text (line ends normalised to \\n), matched whole."""
_SKIP_ANY = re.compile(r"(?m)^[ \t\f\v]*(?:[#%].*)?$")
"""Finds a blank or comment line anywhere in the decoded text."""
INT_ID = r"[+-]?\d{1,18}"
"""An integer vertex id (fits int64): files whose ids all match are numbered by value."""
_INT = INT_ID
_PARSER_LINE = re.compile(r"line (\d+)")
_STEM_SUFFIXES = (".gz", ".csv", ".tsv", ".txt", ".edges", ".edgelist", ".el")


def _cap_hint(what: str, flag: str, value: int) -> str:
    return (f"the limit is {value:,} ({what}); raise it with read_edges(..., {flag.lstrip('-').replace('-', '_')}=N) "
            f"or the CLI flag {flag} N")


# ----------------------------------------------------------------------------------------------- raw bytes


@dataclass(frozen=True)
class _Rows:
    """What a file's lines are, for the caps' messages (edge lists, vertex-id lists)."""

    rows: str
    cap: str
    constant: str
    flag: str
    line: str


_EDGE_ROWS = _Rows("edge rows", "the edge cap", "MAX_EDGES", "--max-edges",
                   "an edge line holds two vertex ids and an optional weight")
_NODE_ROWS = _Rows("vertex ids", "the vertex cap", "MAX_NODES", "--max-nodes", "a line holds one vertex id")


def _wording(kind: _Rows) -> Wording:
    """How the caps are named in messages (:mod:`dpviz.core.reader`: one format for every reader)."""
    return Wording(
        call="read_edges", python_first=True, rows=kind.rows, text="a text edge list", what="edge list",
        size=Cap("MAX_BYTES", "--max-bytes", "max_bytes", ", above the size cap", ""),
        row_cap=Cap(kind.constant, kind.flag, kind.flag[2:].replace("-", "_"),
                    f", above {kind.cap} (counted while reading, before parsing)", ""),
        line_cap=Cap("MAX_LINE_BYTES", "--max-line-bytes", "max_line_bytes", "", ""),
        line_message=f"{{label}}, line {{line}}: longer than the line cap ({kind.line})")


class _BinaryOnly:
    """A file object whose ``read`` must return bytes: a text-mode file is refused (its characters are not the
    file's bytes), naming the file."""

    def __init__(self, source: object) -> None:
        self.source = source
        self.name = str(getattr(source, "name", "upload"))

    def read(self, n: int) -> bytes:
        chunk = self.source.read(n)
        if not isinstance(chunk, (bytes, bytearray)):
            label = repr(Path(self.name).name or "upload")
            raise InputError(f"{label}: expected bytes; open the file in binary mode ('rb')")
        return chunk


def _name(source: object) -> str:
    """The graph's default name: a file's name without its suffixes, ``upload`` for bytes."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        return "upload"
    if isinstance(source, (str, os.PathLike)):
        name = Path(source).name
        for suffix in _STEM_SUFFIXES:
            name = name.removesuffix(suffix)
        return name or "graph"
    return Path(str(getattr(source, "name", "upload"))).name or "upload"


def _read_capped(source: object, max_bytes: int, max_rows: int, max_line_bytes: int = MAX_LINE_BYTES,
                 kind: _Rows = _EDGE_ROWS, label: str | None = None) -> tuple[str, str, str]:
    """(the text, line ends normalised to \\n; label; name) read by :func:`dpviz.core.reader.read_capped`: it
    stops as soon as the bytes read (or decompressed) exceed ``max_bytes``, the data lines (not blank, not a
    comment) exceed ``max_rows`` + 1 (one line may be a header), a line is longer than ``max_line_bytes`` or a
    NUL byte comes, before any parsing: time and memory beyond the file's bytes are bounded by the chunk size.
    """
    if hasattr(source, "read") and not isinstance(source, (bytes, bytearray, memoryview, str, os.PathLike)):
        source = _BinaryOnly(source)
    got = read_capped(source, max_bytes=max_bytes, max_rows=max_rows, max_line_bytes=max_line_bytes, header=1,
                      skip=_SKIP_LINE, refuse_nul=True, label=label, wording=_wording(kind))
    text = decode(got.data)
    if "\r" in text:  # one line end (\n) for the parser and for the line numbers in messages
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text, got.label, _name(source.source if isinstance(source, _BinaryOnly) else source)


def _is_data(line: str) -> bool:
    return _SKIP_TEXT.fullmatch(line) is None


def _text_lines(text: str) -> list[str]:
    """The lines of ``text`` (line ends already \\n), without the empty one after a final line end."""
    lines = text.split("\n")
    return lines[:-1] if lines and lines[-1] == "" else lines


def _line_numbers(text: str) -> np.ndarray:
    """1-based line number of each data line (error path only)."""
    return np.array([i + 1 for i, line in enumerate(_text_lines(text)) if _is_data(line)], dtype=np.int64)


def _line_at(lines: np.ndarray, k: int) -> str:
    """``"line N"`` for the k-th data line (0-based), or ``"a line"`` if the parser counted otherwise."""
    return f"line {int(lines[k])}" if 0 <= k < lines.size else "a line"


# ----------------------------------------------------------------------------------------------- parsing


def _separator(first: str) -> tuple[str, str]:
    """(pandas separator, its name for messages) chosen from the first data line."""
    if "," in first:
        return ",", "a comma"
    if "\t" in first:
        return "\t", "a tab"
    if ";" in first:
        return ";", "a semicolon"
    return r"\s+", "spaces"


def _parse(body: str, sep: str, label: str, lines: Callable[[], np.ndarray]) -> pd.DataFrame:
    """Up to 4 string columns (missing fields are ''); more than 4 fields is an error naming the line."""
    try:
        df = pd.read_csv(io.StringIO(body), sep=sep, header=None, names=range(4), dtype=str,
                         keep_default_na=False, skipinitialspace=True, skip_blank_lines=True, engine="c",
                         quoting=3 if sep == r"\s+" else 0)
    except pd.errors.ParserError as exc:
        if "EOF inside string" in str(exc):
            m = re.search(r"row (\d+)", str(exc))
            where = _line_at(lines(), int(m.group(1))) if m else "a line"
            raise InputError(f"{label}, {where}: a quote (\") that is never closed; quote a whole id (\"a, b\") "
                             "or remove the quote") from None
        m = _PARSER_LINE.search(str(exc))
        where = _line_at(lines(), int(m.group(1)) - 1) if m else "a line"
        raise InputError(f"{label}, {where}: too many fields; expected 2 (u, v) or 3 (u, v, weight)") from None
    except pd.errors.EmptyDataError:
        df = pd.DataFrame({k: pd.Series([], dtype=str) for k in range(4)})
    return df


def _check_caps(**caps: object) -> None:
    """InputError unless every cap is a whole number >= 1."""
    for what, value in caps.items():
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise InputError(f"{what}: expected a whole number >= 1, got {value!r}")


def read_lines(source: str | os.PathLike | bytes, *, max_bytes: int = MAX_BYTES, max_lines: int = MAX_NODES,
               max_line_bytes: int = MAX_LINE_BYTES, label: str | None = None) -> tuple[list[str], str, str]:
    """(the lines of a one-value-per-line file, stripped, blank ones included as ''; the file's label for
    messages (``label`` if given); its name) read with the same caps as an edge list: size, line count
    (``max_lines``, reported as the vertex cap) and line length, checked while reading; a NUL byte is refused."""
    _check_caps(max_bytes=max_bytes, max_lines=max_lines, max_line_bytes=max_line_bytes)
    text, label, name = _read_capped(source, max_bytes, max_lines, max_line_bytes, _NODE_ROWS, label)
    lines = [line.strip() for line in _text_lines(text)]
    if sum(1 for line in lines if line) > max_lines:
        raise InputError(f"{label} has more than {max_lines:,} vertex ids, above the vertex cap; "
                         + _cap_hint("MAX_NODES", "--max-nodes", max_lines))
    return lines, label, name


def _first_bad(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


def read_edges(
    source: str | os.PathLike | bytes,
    *,
    n_nodes: int | None = None,
    header: bool | None = None,
    max_bytes: int = MAX_BYTES,
    max_edges: int = MAX_EDGES,
    max_nodes: int = MAX_NODES,
    name: str | None = None,
    max_line_bytes: int = MAX_LINE_BYTES,
) -> Graph:
    """Read an edge list into a simple undirected :class:`~dpviz.graph.model.Graph` (see the module
    docstring for the format, the id mapping and the caps).

    InputError (naming the line) for: a missing file or a folder, a file above ``max_bytes``, more than
    ``max_edges`` edge rows, more than ``max_nodes`` vertices, an empty file (or only comments), a
    header and no edge, a row with fewer than 2 fields or an empty id, more than 3 fields, a third field
    that is not a number, and (with ``n_nodes``) an id that is not an integer in 0..n_nodes-1.
    """
    _check_caps(max_bytes=max_bytes, max_edges=max_edges, max_nodes=max_nodes, max_line_bytes=max_line_bytes)
    if header not in (None, True, False):
        raise InputError(f"header: expected True, False or None (detect), got {header!r}")
    if n_nodes is not None:
        n_nodes = check_n_nodes(n_nodes)
        if n_nodes > max_nodes:
            raise InputError(f"n_nodes = {n_nodes:,} is above the vertex cap; "
                             + _cap_hint("MAX_NODES", "--max-nodes", max_nodes))
    from dpviz.core.records import is_parquet, parquet_csv

    if is_parquet(source):  # an edge table: its first two columns, as CSV text with their header
        name, header = name or _name(source).removesuffix(".parquet"), True if header is None else header
        source = parquet_csv(source, lambda names: names[:2], max_bytes=max_bytes, max_rows=max_edges,
                             wording=_wording(_EDGE_ROWS), label=repr(name))
    text, label, default_name = _read_capped(source, max_bytes, max_edges, max_line_bytes)
    name = name or default_name
    # any blank or comment line (the last one too, with or without a line end)? then keep the data lines only
    skipped = _SKIP_ANY.search(text.removesuffix("\n")) is not None
    if skipped:
        kept = [line for line in _text_lines(text) if _is_data(line)]
        body, first = "\n".join(kept), (kept[0] if kept else "")
    else:
        body = text
        first = text.split("\n", 1)[0]
    if not first.strip():
        raise InputError(f"{label} is empty: expected one edge per line, two vertex ids u, v "
                         "(e.g. 0,1), with an optional header line u,v")
    sep, sep_name = _separator(first)

    def lines() -> np.ndarray:
        return _line_numbers(text)

    df = _parse(body, sep, label, lines)
    del body
    u_raw = df[0].str.strip()
    v_raw = df[1].str.strip()
    w_raw = df[2].str.strip()
    extra = df[3].str.strip() != ""
    rows = len(df)
    u_int = u_raw.str.fullmatch(_INT).to_numpy(dtype=bool)
    v_int = v_raw.str.fullmatch(_INT).to_numpy(dtype=bool)
    if header is None:
        head = (u_raw.iloc[0].lower() in HEADER_NAMES and v_raw.iloc[0].lower() in HEADER_NAMES) or (
            rows > 1 and not (u_int[0] and v_int[0]) and bool(u_int[1:].all() and v_int[1:].all()))
    else:
        head = header
    start = 1 if head else 0

    def line_of(i: int) -> str:
        """The line number of row i of ``df`` (rows before it may span lines inside quotes)."""
        spans = sum(int(df[k].iloc[:i].str.count("\n").sum()) for k in range(4)) if i else 0
        return _line_at(lines(), i + spans).removeprefix("line ")

    if head and v_raw.iloc[0] == "":
        raise InputError(f"{label}, line {line_of(0)}: the header has fewer than 2 columns; expected u, v "
                         f"separated by {sep_name}")
    m = rows - start
    if m <= 0:
        raise InputError(f"{label} has a header but no edge: expected at least one line u, v after it")
    if m > max_edges:
        raise InputError(f"{label} has {m:,} edge rows, above the edge cap; "
                         + _cap_hint("MAX_EDGES", "--max-edges", max_edges))
    u_raw, v_raw, w_raw, extra = u_raw.iloc[start:], v_raw.iloc[start:], w_raw.iloc[start:], extra.iloc[start:]
    u_int, v_int = u_int[start:], v_int[start:]
    if extra.any():
        i = _first_bad(extra.to_numpy(dtype=bool)) + start
        raise InputError(f"{label}, line {line_of(i)}: 4 fields; expected 2 (u, v) or 3 (u, v, weight) "
                         f"separated by {sep_name}")
    missing = (u_raw == "").to_numpy(dtype=bool) | (v_raw == "").to_numpy(dtype=bool)
    if missing.any():
        i = _first_bad(missing) + start
        raise InputError(f"{label}, line {line_of(i)}: expected two vertex ids u, v separated by {sep_name}; "
                         "found fewer than 2 fields or an empty id")
    notices: list[str] = []
    has_w = (w_raw != "").to_numpy(dtype=bool)
    if has_w.any():
        w = pd.to_numeric(w_raw[has_w], errors="coerce").to_numpy(dtype=float)
        if np.isnan(w).any():
            i = int(np.flatnonzero(has_w)[np.flatnonzero(np.isnan(w))[0]]) + start
            raise InputError(f"{label}, line {line_of(i)}: third field {w_raw.iloc[i - start]!r} is not a number; "
                             "expected u, v or u, v, weight (a numeric weight, ignored)")
        notices.append(f"third column (edge weights) ignored on {int(has_w.sum()):,} rows: the graph is unweighted")

    labels: tuple[str, ...] | None = None
    if n_nodes is not None:
        bad = ~(u_int & v_int)
        if bad.any():
            i = _first_bad(bad)
            raise InputError(f"{label}, line {line_of(i + start)}: vertex ids {u_raw.iloc[i]!r}, {v_raw.iloc[i]!r}; "
                             f"with n_nodes = {n_nodes:,} every id must be an integer in 0..{n_nodes - 1}")
        pairs = np.column_stack([u_raw.to_numpy().astype(np.int64), v_raw.to_numpy().astype(np.int64)])
        out = (pairs < 0) | (pairs >= n_nodes)
        if out.any():
            i = _first_bad(out.any(axis=1))
            raise InputError(f"{label}, line {line_of(i + start)}: vertex id {int(pairs[i][out[i]][0])} is outside "
                             f"0..{n_nodes - 1} (n_nodes = {n_nodes:,})")
        n = n_nodes
    elif u_int.all() and v_int.all():
        ids = np.concatenate([u_raw.to_numpy().astype(np.int64), v_raw.to_numpy().astype(np.int64)])
        uniq, inv = np.unique(ids, return_inverse=True)
        n = int(uniq.size)
        pairs = inv.reshape(2, m).T
        if not (uniq[0] == 0 and uniq[-1] == n - 1):
            labels = tuple(str(x) for x in uniq.tolist())
    else:
        both = np.empty(2 * m, dtype=object)
        both[0::2] = u_raw.to_numpy(dtype=object)
        both[1::2] = v_raw.to_numpy(dtype=object)
        codes, uniq = pd.factorize(both)
        n = int(len(uniq))
        pairs = codes.reshape(m, 2).astype(np.int64)
        labels = tuple(str(x) for x in uniq)
    if n > max_nodes:
        raise InputError(f"{label} has {n:,} distinct vertex ids, above the vertex cap; "
                         + _cap_hint("MAX_NODES", "--max-nodes", max_nodes))
    notices.extend(_undirected_notices(pairs, n))
    c = canonical_edges(pairs, n)
    return Graph(n_nodes=n, edges=c.edges, labels=labels, notices=tuple(notices), name=name)


def _undirected_notices(pairs: np.ndarray, n: int) -> list[str]:
    """Notices for self-loops, repeated rows and pairs listed in both directions (symmetrised)."""
    loops = pairs[:, 0] == pairs[:, 1]
    arcs = pairs[~loops]
    directed = sorted_unique(arcs[:, 0] * np.int64(n) + arcs[:, 1]).size
    lo, hi = np.minimum(arcs[:, 0], arcs[:, 1]), np.maximum(arcs[:, 0], arcs[:, 1])
    undirected = sorted_unique(lo * np.int64(n) + hi).size
    out = []
    n_loops = int(loops.sum())
    if n_loops:
        out.append(f"{n_loops:,} self-loop{'s' if n_loops != 1 else ''} (u, u) dropped: the graph is simple")
    repeated = int(arcs.shape[0] - directed)
    if repeated:
        out.append(f"{repeated:,} repeated row{'s' if repeated != 1 else ''} (the same u, v again) dropped")
    both = int(directed - undirected)
    if both:
        out.append(f"read as undirected (symmetrised): {both:,} pair{'s' if both != 1 else ''} listed in both "
                   f"directions, (a, b) and (b, a), count{'s' if both == 1 else ''} as one edge each; the "
                   f"{both:,} reverse row{'s' if both != 1 else ''} dropped as duplicates")
    return out


def edges_from_records(source: str | os.PathLike | bytes, *, columns: Sequence[str] | None = None, dask: object = None,
                       max_bytes: int = MAX_BYTES, max_edges: int = MAX_EDGES, max_nodes: int = MAX_NODES,
                       name: str | None = None, person: str | None = None,
                       max_contributions: int | None = None) -> Graph:
    """An edge table (one row per edge: CSV, gzip CSV, a Parquet file or folder) counted by
    :func:`dpviz.core.records.count_records` on its two id columns (``columns``, default the first two): the
    distinct rows come back (in-process in bounded memory, or from a Dask group-by with ``dask``), then the
    graph is built as :func:`read_edges` builds it — integer ids numbered by value, other ids in sorted order
    (not first-seen: a group-by has no row order), undirected and simple, with the same notices. ``person``
    and ``max_contributions`` K: a person's edge rows after their first K are dropped before counting (a person
    then changes at most K edges: the edge-level sensitivity × K, :func:`dpviz.core.records.per_record_noise`)."""
    from dpviz.core.records import count_records, is_parquet, parquet_names

    _check_caps(max_bytes=max_bytes, max_edges=max_edges, max_nodes=max_nodes)
    name = name or _name(source).removesuffix(".parquet")
    if columns is None:
        if is_parquet(source):
            columns = parquet_names(source, max_bytes=max_bytes)[:2]
        else:
            import pyarrow.csv as pa_csv

            from dpviz.core.reader import open_capped
            with open_capped(source, max_bytes=max_bytes) as stream:
                columns = pa_csv.open_csv(stream).schema.names[:2]
    u, v = list(columns)[:2] if len(columns) >= 2 else (None, None)
    if u is None:
        raise InputError(f"{name}: an edge table needs two id columns (u, v)")
    groups = count_records(source, [u, v], dask=dask, max_bytes=max_bytes, max_groups=max_edges,
                           groups_name="distinct edge rows", wording=_wording(_EDGE_ROWS), person=person,
                           max_contributions=max_contributions)
    us = np.asarray(groups.keys[u].to_numpy(zero_copy_only=False), dtype=object)
    vs = np.asarray(groups.keys[v].to_numpy(zero_copy_only=False), dtype=object)
    if np.any(us == "") or np.any(vs == ""):
        raise InputError(f"{name}: an edge row has an empty vertex id; expected two ids u, v on every row")
    both = np.concatenate([us, vs])
    numeric = pd.Series(both).str.fullmatch(_INT).all()
    keys = both.astype(np.int64) if numeric else both.astype(str)
    uniq, inv = np.unique(keys, return_inverse=True)
    n, m = int(uniq.size), us.size
    if n > max_nodes:
        raise InputError(f"{name} has {n:,} distinct vertex ids, above the vertex cap; "
                         + _cap_hint("MAX_NODES", "--max-nodes", max_nodes))
    pairs = inv.reshape(2, m).T.astype(np.int64)
    labels = None if numeric and uniq[0] == 0 and uniq[-1] == n - 1 else tuple(str(x) for x in uniq.tolist())
    loop = pairs[:, 0] == pairs[:, 1]  # the notices of read_edges, from the rows' counts
    loops, repeated = int(groups.counts[loop].sum()), int((groups.counts[~loop] - 1).sum())
    notices = [t for t in _undirected_notices(pairs, n) if t.startswith("read as undirected")]
    if repeated:
        notices.insert(0, f"{repeated:,} repeated row{'s' if repeated != 1 else ''} (the same u, v again) dropped")
    if loops:
        notices.insert(0, f"{loops:,} self-loop{'s' if loops != 1 else ''} (u, u) dropped: the graph is simple")
    return Graph(n_nodes=n, edges=canonical_edges(pairs, n).edges, labels=labels, notices=tuple(notices), name=name)


# ----------------------------------------------------------------------------------------------- writing


def edges_frame(edges: np.ndarray, labels: Sequence[str] | None = None) -> pd.DataFrame:
    """The table ``u, v`` of ``edges`` (int array (k, 2)), with vertex ids mapped back to ``labels``."""
    arr = np.asarray(edges)
    if arr.size == 0:
        arr = np.zeros((0, 2), dtype=np.int64)
    if arr.ndim != 2 or arr.shape[1] != 2 or arr.dtype.kind not in "iu":
        raise InputError(f"edges: expected an integer array of shape (k, 2), got {arr.dtype} {arr.shape}")
    if labels is None:
        return pd.DataFrame({"u": arr[:, 0].astype(np.int64), "v": arr[:, 1].astype(np.int64)})
    lab = np.asarray(labels, dtype=object)
    if arr.size and (int(arr.min()) < 0 or int(arr.max()) >= lab.size):
        raise InputError(f"edges: vertex ids must be in 0..{lab.size - 1} to map them to the {lab.size:,} labels")
    return pd.DataFrame({"u": lab[arr[:, 0]], "v": lab[arr[:, 1]]})


def write_edges(path: str | os.PathLike, edges: np.ndarray, labels: Sequence[str] | None = None, *,
                inputs: Sequence[str | os.PathLike | None] = ()) -> Path:
    """Write ``edges`` as a CSV ``u,v`` (original ``labels`` if given) atomically, never over ``inputs``
    (:func:`dpviz.core.tables.write_table`)."""
    return write_table(edges_frame(edges, labels), Path(path), inputs=inputs)


# ----------------------------------------------------------------------------------------------- registry hooks


def load(source: str | os.PathLike, **options: object) -> Graph:
    """The registry's ``load`` hook: ``sample:NAME`` (through :func:`dpviz.core.registry.load_sample`;
    :mod:`dpviz.graph.samples`) or an edge-list file read by :func:`read_edges` with ``options``
    (``n_nodes``, ``header``, the caps)."""
    from dpviz.core.registry import load_source

    return load_source("graph", source, lambda path: read_edges(path, **options))


def canonical_bytes(source: str | os.PathLike, data: Graph) -> bytes:
    """The registry's ``canonical_bytes`` hook (the ledger's dataset identity, after its ``dpviz-ledger/1
    graph`` line): the parsed simple undirected edge set, one JSON line ``[a, b]`` per edge with the two vertex
    labels (``a`` < ``b`` as strings), lines sorted. Invariant to edge order and direction, duplicates,
    separators and the header; the vertex count is public under edge-DP and not part of it. (The bytes of
    :func:`dpviz.core.canonical.json_lines` of the sorted pairs, each label JSON-quoted once.)"""
    labels = [str(i) for i in range(data.n_nodes)] if data.labels is None else [str(x) for x in data.labels]
    quoted = [json.dumps(x, ensure_ascii=False) for x in labels]  # once per vertex, not twice per edge
    lines = [f"[{quoted[u]},{quoted[v]}]" if labels[u] <= labels[v] else f"[{quoted[v]},{quoted[u]}]"
             for u, v in data.edges.tolist()]
    lines.sort()
    return ("\n".join(lines) + "\n").encode("utf-8")
