"""Reading and writing trees with counts: the tree capability's ``load`` and ``canonical_bytes`` hooks.

* :func:`load` (hook ``load``): ``sample:NAME`` (:mod:`dpviz.tree.samples`) or a tree file read by
  :func:`load_tree_file` — a CSV or JSON table (:mod:`dpviz.tree.reading`: bytes under the caps through
  :func:`dpviz.core.reader.read_capped`, gzip accepted) in one of the three formats of
  :mod:`dpviz.tree.formats` (``node,parent[,count]``, one column per level, a parent array). Every error
  is an :class:`dpviz.errors.InputError` naming the line or record; nothing else escapes a loader.
* :func:`canonical_bytes` (hook ``canonical_bytes``): the ledger's identity of a loaded tree, built with
  Arrow kernels, or for ids ``0..n-1`` directly in sorted order as byte blocks (:func:`decimal_order`);
  ``tree release`` starts it on a worker thread beside the release (:func:`canonical_bytes_ahead`), for a
  file with ids ``0..n-1`` from its parsed columns while the tree is built (:func:`identity_early`).
* :func:`node_columns` / :func:`node_table`: the one builder of every per-node table (CLI outputs, the
  page's download), rows in the input order; :func:`write_tree_csv` writes one with the threaded Arrow
  writer of :mod:`dpviz.core.csv_writer`.

* :func:`records_tree` / :func:`records_counts`: a tree counted from records (one row per person, one column
  per level, ``--levels``; no count column: each record adds 1 to its leaf) by
  :func:`dpviz.core.records.count_records` (in-process streaming or Dask; an optional contribution bound per
  person): the tree of the levels' values (simulation, or ``--structure-from-data``), or the leaf counts by
  path id (``"South / Texas / Travis"``) to join onto a declared hierarchy.

Caps (each a keyword argument here and a CLI flag): :data:`MAX_BYTES` per file (and on its decompressed
size), :data:`MAX_NODES` on the rows while reading and on the nodes before the tree is built, counts up
to 2⁵³ each and in total (:data:`dpviz.tree.reading.MAX_COUNT`).
"""

from __future__ import annotations

import json
import weakref
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dpviz.core import arrow
from dpviz.core.csv_writer import is_pandas_array, number_column, write_csv
from dpviz.errors import InputError
from dpviz.tree.formats import _is_row_index, tree_format, tree_from_table
from dpviz.tree.model import INDEX, Tree, TreeData
from dpviz.tree.reading import MAX_BYTES, MAX_NODES, Table, read_table

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["CAPS_HELP", "MAX_BYTES", "MAX_NODES", "canonical_bytes", "canonical_bytes_ahead", "decimal_order",
           "identity_early", "load", "load_tree_file", "node_columns", "InInputOrder", "input_order", "node_table",
           "write_tree_csv", "records_counts", "records_tree", "parse_levels"]


CAPS_HELP = (f"Caps: {MAX_NODES:,} nodes (--max-nodes), {MAX_BYTES:,} bytes per file (--max-bytes), "
             f"counts up to 2^53 per node and in total.")
"""The caps, as stated in ``--help`` and on the page."""


def _input_positions(tree: Tree) -> np.ndarray:
    """DOH index of each input row (:attr:`Tree.input_positions`: computed once per tree, read-only)."""
    return tree.input_positions


@dataclass(frozen=True)
class InInputOrder:
    """A column for :func:`node_columns` that is already in the input (row) order, e.g. number text formatted
    from the values gathered into that order: taken as it is (no gather of strings)."""

    values: pa.Array


def input_order(tree: Tree, values: np.ndarray) -> np.ndarray:
    """A per-node array in DOH order, gathered into the input (row) order of the published tables (the same
    array when the input was in DOH order)."""
    return values if tree.in_input_order else np.asarray(values)[_input_positions(tree)]


def node_columns(tree: Tree, **columns: Any) -> pa.Table:
    """``node,parent`` plus per-node ``columns`` (arrays in DOH order, or :class:`InInputOrder`) as an Arrow
    table, rows back in the input order: the one builder of every per-node table (CLI outputs, the page's
    download). No copy of a NumPy column when the input was already in DOH order
    (:attr:`Tree.in_input_order`). The ids are strings, or for an unlabelled tree its input positions as
    integers (the root's parent null), which :func:`write_tree_csv` writes as the same text."""
    rows = None if tree.in_input_order else _input_positions(tree)
    early = _ID_TEXT.get(tree) if tree.label_source is None else None
    text = early.result() if early is not None else None
    node, parent = text if text is not None and len(text[0]) == tree.n else _id_columns(tree, rows)
    out = {"node": node, "parent": parent}
    for name, col in columns.items():
        if isinstance(col, InInputOrder):
            out[name] = col.values
        elif is_pandas_array(col):  # e.g. Int64 counts with NA: nulls stay nulls
            out[name] = pa.array(col if rows is None else col[rows], from_pandas=True)
        elif isinstance(col, (pa.Array, pa.ChunkedArray)):  # e.g. text from number_text
            out[name] = col if rows is None else col.take(rows)
        else:
            out[name] = number_column(np.asarray(col) if rows is None else np.asarray(col)[rows])
    return pa.table(out)


def _id_columns(tree: Tree, rows: np.ndarray | None) -> tuple[pa.Array, pa.Array]:
    """The ``node`` and ``parent`` columns of :func:`node_columns` in input order (``rows``: the DOH number of
    each input row, None when the input was in DOH order): the user's ids, or for an unlabelled tree its input
    positions as integers (the CSV writer formats them in its threads), the root's parent null (an empty cell)."""
    par = tree.parent if rows is None else tree.parent[rows]
    if tree.label_source is None:
        node = arrow.from_numpy(tree.order if rows is None else np.arange(tree.n, dtype=INDEX))  # row r: id r
        return node, arrow.from_numpy(par if rows is None else tree.order[par], valid=par >= 0)
    ids = tree.label_array  # DOH order
    node = ids if rows is None else ids.take(rows)
    parent = ids.take(arrow.from_numpy(np.asarray(par, np.int64), valid=par >= 0))
    return node, parent.fill_null(arrow.string_scalar(""))


def node_table(tree: Tree, **columns: Any) -> pd.DataFrame:
    """:func:`node_columns` as a DataFrame: the id columns Arrow-backed strings (no Python object per
    node), number columns NumPy arrays, columns with missing values pandas extension arrays."""
    import pandas as pd  # on first use: reading a tree and writing a release never need it
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


def write_tree_csv(df: pd.DataFrame | pa.Table, path: str | Path | None, *, meta: dict | None = None,
                   inputs: Iterable[str | Path | None] = (), plain: Iterable[str] = (),
                   raw_text: bool = False) -> Path | None:
    """Write a per-node table (:func:`node_columns`: a DataFrame or an Arrow table) as CSV with
    :func:`dpviz.core.csv_writer.write_csv` (atomic, never over an input; with ``meta``, with its sidecar;
    ``path`` None: stdout). The ``parent`` column holds node ids or empty cells, so it needs quotes only
    if ``node`` does and is not scanned. ``plain``: columns holding number text
    (:func:`dpviz.core.csv_writer.number_text`), never quoted; ``raw_text``: text cells as they are."""
    return write_csv(df, path, meta=meta, inputs=inputs, plain=plain, raw_text=raw_text, follows={"parent": "node"})


def load_tree_file(path: str | Path | bytes, name: str | None = None, max_nodes: int = MAX_NODES, *,
                   max_bytes: int = MAX_BYTES, count_column: str | None = None) -> TreeData:
    """Read and validate a tree file (CSV/JSON, any of the three formats) under the caps; a CSV whose
    header fits no format is refused before its body is parsed."""
    table = read_table(path, name, max_bytes=max_bytes, max_rows=max_nodes,
                       check_header=lambda cols, label: tree_format(cols, label, count_column),
                       integer_columns=lambda cols: _integer_columns(cols, name or "tree", count_column))
    early = _start_early(table, count_column) if _IDENTITY_EARLY.get() else None
    data = tree_from_table(table, table.name, max_nodes, count_column=count_column)
    if early is not None:
        _EARLY[data.tree] = (data.x, early[0])
        if data.tree.label_source is None:  # ids are the rows: the id text read from the file is the output's
            _ID_TEXT[data.tree] = early[1]
    return data


def _integer_columns(cols: list[str], name: str, count_column: str | None) -> list[str]:
    """The columns of a ``node,parent,count`` file worth reading as integers (ids and counts): a typed
    read skips the string columns, their hashing and the parse of the counts."""
    kind, ccol = tree_format(cols, name, count_column)
    return ["node", "parent", ccol] if kind == "node_parent" and ccol else []


def load(spec: str | Path, *, max_nodes: int = MAX_NODES, max_bytes: int = MAX_BYTES,
         count_column: str | None = None) -> TreeData:
    """The ``load`` hook: a tree file path (read under the caps by :func:`load_tree_file`), or bundled data
    named ``sample:NAME`` (e.g. ``sample:county``, :mod:`dpviz.tree.samples`)."""
    from dpviz.core.registry import load_source

    return load_source("tree", spec, lambda p: load_tree_file(p, max_nodes=max_nodes, max_bytes=max_bytes,
                                                               count_column=count_column))


def parse_levels(text: str | list[str]) -> list[str]:
    """``--levels region,division,state``: the level columns, top to bottom (lower-cased, as tree columns)."""
    names = [c.strip() for c in (text.split(",") if isinstance(text, str) else text)]
    if not names or not all(names):
        raise InputError(f"--levels: expected column names separated by commas, got {str(text)[:80]!r}")
    if len(set(names)) != len(names):
        raise InputError(f"--levels: a column is named twice in {str(text)[:80]!r}")
    return names


def _record_groups(source: str | Path | bytes, levels: list[str], *, person: str | None = None,
                   max_contributions: int | None = None, dask: object = None, max_nodes: int = MAX_NODES,
                   max_bytes: int = MAX_BYTES):
    from dpviz.core.records import count_records
    from dpviz.tree.reading import WORDING

    groups = count_records(source, levels, person=person, max_contributions=max_contributions, dask=dask,
                           max_bytes=max_bytes, max_groups=max_nodes, groups_name="leaves (distinct level paths)",
                           wording=WORDING)
    for c in levels:
        if pc.any(pc.equal(groups.keys[c], "")).as_py():
            raise InputError(f"a record has no value in level column {c!r} (empty or missing); every record needs "
                             "a value at every level")
    return groups


def records_tree(source: str | Path | bytes, levels: str | list[str], **options: Any) -> TreeData:
    """The tree of the levels' values (read from the records: not a declared hierarchy) with each leaf's
    number of records; ``options``: those of :func:`dpviz.core.records.count_records` (``person``,
    ``max_contributions``, ``dask``) and the caps ``max_nodes``, ``max_bytes``."""
    from dpviz.tree.formats import tree_from_levels
    from dpviz.tree.reading import Table

    levels = parse_levels(levels)
    groups = _record_groups(source, levels, **options)
    name = Path(source).name if isinstance(source, (str, Path)) else "upload"
    columns = {c.lower(): groups.keys[c] for c in levels}
    columns["\0count"] = pc.cast(arrow.from_numpy(groups.counts), pa.string())
    table = Table(name, columns, len(groups), json=True)
    return tree_from_levels(table, [c.lower() for c in levels], "\0count", name,
                            options.get("max_nodes", MAX_NODES))


def records_counts(source: str | Path | bytes, levels: str | list[str], **options: Any):
    """Leaf counts by path id (``a / b / c``, the ids of a level declaration) from the records, for
    :func:`dpviz.tree.hierarchy.join_counts` (a :class:`~dpviz.tree.hierarchy.NodeCounts`); ``options`` as
    for :func:`records_tree`."""
    from dpviz.tree.formats import PATH_SEP
    from dpviz.tree.hierarchy import NodeCounts

    levels = parse_levels(levels)
    groups = _record_groups(source, levels, **options)
    ids = groups.keys[levels[0]]
    for c in levels[1:]:
        ids = pc.binary_join_element_wise(ids, groups.keys[c], PATH_SEP)
    name = Path(source).name if isinstance(source, (str, Path)) else "upload"

    def where(i: int) -> str:
        return f"{name}: the records of {ids[i].as_py()!r}"

    return NodeCounts(name, ids, groups.counts.astype(float), where)


_JSON_ESCAPE = r'[\x00-\x1f\\"]'  # what json.dumps escapes with ensure_ascii=False (json.encoder.ESCAPE)


def _const(text: str, n: int) -> pa.Array:
    """``n`` copies of ``text`` as an Arrow string array, from buffers (a Python scalar argument to an
    Arrow kernel would import pandas: :mod:`dpviz.core.arrow`)."""
    raw = text.encode()
    offsets = np.arange(n + 1, dtype=np.int64) * len(raw)
    return pa.Array.from_buffers(pa.large_string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(raw * n)]).cast(
        pa.string())


def _json_escaped(text: pa.Array) -> pa.Array:
    """Each string as the inside of its JSON literal (``json.dumps(s, ensure_ascii=False)[1:-1]``): the
    string itself unless it holds a quote, a backslash or a control character — a scan of the bytes
    (no regex per value); those rare values are escaped by ``json``."""
    data = arrow.value_bytes(text)
    if not np.any((data < 0x20) | (data == 0x22) | (data == 0x5C)):
        return text
    special = pc.match_substring_regex(text, _JSON_ESCAPE)
    rows = arrow.values(pc.indices_nonzero(special)).astype(np.int64)
    fixed = [json.dumps(v, ensure_ascii=False)[1:-1] for v in text.take(arrow.from_numpy(rows)).to_pylist()]
    out = text.to_numpy(zero_copy_only=False).astype(object)
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
    is code-point order, so the byte sort is Python's string sort). A tree with ids ``0..n-1`` and integer
    counts skips the sort: its lines are made in their order (:func:`_canonical_unlabelled`, same bytes)."""
    if hasattr(data, "canonical_bytes"):  # a release counted from records: the records (core.records)
        return data.canonical_bytes()
    ahead = _AHEAD.pop(data, None)
    if ahead is not None:  # started by canonical_bytes_ahead while the release ran
        return ahead.result()
    return _canonical_bytes(data)


_AHEAD: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def canonical_bytes_ahead(data: TreeData) -> None:
    """Start :func:`canonical_bytes` of ``data`` on a worker thread, so that it runs beside the release
    (its NumPy and Arrow kernels release the GIL); the next ``canonical_bytes(source, data)`` call (the
    ledger's, as the release is charged) takes the result, or its error. ``tree release`` calls this right
    after loading."""
    from concurrent.futures import ThreadPoolExecutor  # only the CLI's release path: kept off import time

    x, early = _EARLY.pop(data.tree, (None, None))
    if early is not None and x is data.x:  # the same tree and counts as loaded: the bytes started from the file

        def done() -> bytes:
            try:
                got = early.result()
            except Exception:  # noqa: BLE001 - never expected; the loaded tree's own bytes are the same
                got = None
            return got if got is not None else _canonical_bytes(data)
    else:
        def done() -> bytes:
            return _canonical_bytes(data)

    pool = ThreadPoolExecutor(1, thread_name_prefix="dpviz-canonical")
    _AHEAD[data] = pool.submit(done)
    pool.shutdown(wait=False)


_IDENTITY_EARLY: ContextVar[bool] = ContextVar("dpviz_tree_identity_early", default=False)
_EARLY: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
"""Tree loaded under :func:`identity_early` → (its counts ``x``, the future of :func:`_canonical_of_table`)."""


@contextmanager
def identity_early() -> Iterator[None]:
    """While active, :func:`load_tree_file` starts the ledger's identity bytes of a ``node,parent,count`` file
    with ids ``0..n-1`` (:func:`_canonical_of_table`) on a worker thread as soon as the file is parsed, beside
    the building of the tree; :func:`canonical_bytes_ahead` then takes that result for the loaded tree.
    ``tree release`` loads its input so (the first core is otherwise alone while the tree is built)."""
    token = _IDENTITY_EARLY.set(True)
    try:
        yield
    finally:
        _IDENTITY_EARLY.reset(token)


def _start_early(table: Table, count_column: str | None):
    """(future of :func:`_canonical_of_table`, future of :func:`_id_text_of_table`), on one worker thread."""
    from concurrent.futures import ThreadPoolExecutor  # only the CLI's release path: kept off import time

    pool = ThreadPoolExecutor(1, thread_name_prefix="dpviz-canonical-early")
    futures = pool.submit(_canonical_of_table, table, count_column), pool.submit(_id_text_of_table, table)
    pool.shutdown(wait=False)
    return futures


_ID_TEXT: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
"""Unlabelled tree loaded under :func:`identity_early` → the future of its ``node``/``parent`` text in row
order (:func:`_id_text_of_table`), which :func:`node_columns` publishes instead of formatting the ids again."""


def _id_text_of_table(table: Table) -> tuple[pa.Array, pa.Array] | None:
    """The ``node`` and ``parent`` columns of a ``node,parent,...`` table read with typed integer ids
    ``0..n-1`` in row order, as the text a release writes for them (row r: node ``r``, parent its parent's
    row, the root's parent null: an empty cell) — formatted from the file's own columns while the tree is
    built, off the write's critical path; None for any other table. Only a tree the loader accepts uses
    it, and for such a tree it is exactly the text of :func:`node_columns`' integer ids (canonical decimal:
    checked by the reader, :func:`dpviz.tree.reading._canonical_integers`)."""
    if "node" not in table.columns or "parent" not in table.columns:
        return None
    ids, parents = table.col("node"), table.col("parent")
    if not (pa.types.is_integer(ids.type) and pa.types.is_integer(parents.type)) or ids.null_count:
        return None
    if not _is_row_index(ids):
        return None
    return pc.cast(ids, pa.string()), pc.cast(parents, pa.string())  # the root's parent null: an empty cell


def _canonical_of_table(table: Table, count_column: str | None) -> bytes | None:
    """The :func:`canonical_bytes` a ``node,parent,count`` table read with typed integer columns
    (:func:`dpviz.tree.reading.read_table`) and ids ``0..n-1`` in row order will have once loaded — from the
    columns alone, before the tree is built (the same lines: :func:`_canonical_lines`) — or None: another
    table, or one the loader will refuse or that takes the general path (the caller falls back to
    :func:`_canonical_bytes` of the loaded tree). Never raises for the data: the loader names what is wrong."""
    try:
        kind, ccol = tree_format(list(table.columns), table.name, count_column)
    except InputError:
        return None
    if kind != "node_parent" or not ccol:
        return None
    ids, parents, counts = (table.col(c) for c in ("node", "parent", ccol))
    if not all(pa.types.is_integer(c.type) for c in (ids, parents, counts)) or ids.null_count:
        return None
    n = table.n
    if len(ids) != n or not _is_row_index(ids):
        return None
    pidx = arrow.values(parents).astype(np.int64)
    if parents.null_count:
        pidx = np.where(arrow.valid(parents), pidx, -1)
    if np.any(pidx < -1) or np.any(pidx >= n):
        return None
    leaf = np.bincount(pidx[pidx >= 0], minlength=n) == 0
    cv = arrow.values(counts)
    if counts.null_count and not np.all(arrow.valid(counts)[leaf]):
        return None
    count = np.where(leaf, cv, 0) if counts.null_count or not leaf.all() else cv
    if count.size and (int(count.min()) < 0 or int(count.max()) > 2**53):
        return None
    pos = decimal_order(n)  # input positions (= ids), in the lines' order
    return _canonical_lines(pos, pidx[pos], leaf[pos], count[pos])


def _canonical_bytes(data: TreeData) -> bytes:
    """:func:`canonical_bytes` of a loaded tree (see there)."""
    tree = data.tree
    fast = _canonical_unlabelled(tree, data.x) if tree.label_source is None else None
    if fast is not None:
        return fast
    ids = _json_escaped(_id_strings(tree))  # a parent is its node's id: escaped once
    parents = pa.concat_arrays([_const("", 1), ids.take(arrow.from_numpy(np.asarray(tree.parent[1:], np.int64)))])
    counts = pa.concat_arrays([_const("null", tree.n1), _json_number_array(data.x)])
    n = tree.n
    lines = pc.binary_join_element_wise(_const('["', n), ids, _const('","', n), parents, _const('",', n), counts,
                                        _const("]\n", n), _const("", n))
    if arrow.value_bytes(lines).size >= 2**31 - 1:  # past 32-bit offsets: the take needs large strings
        lines = lines.cast(pa.large_string())
    # no line is a prefix of another (each is one whole JSON array), so the newline does not change the order
    return arrow.value_bytes(lines.take(pc.sort_indices(lines))).tobytes()


def decimal_order(n: int) -> np.ndarray:
    """``0..n-1`` sorted as decimal strings (``sorted(range(n), key=str)``) without a string sort: each
    number padded with zeros on the right to the width of ``n - 1`` (a shorter string that is a prefix of
    another pads to the same key and comes first: its length breaks the tie). The keys of each length are
    increasing, so the stable sort (timsort) merges a handful of runs."""
    if n <= 1:
        return np.zeros(max(n, 0), np.int64)
    width = len(str(n - 1))
    key = np.arange(n, dtype=np.int64)
    for length in range(1, width + 1):  # the numbers of each length, a slice: one product each (at most 10)
        part = key[10 ** (length - 1) if length > 1 else 0: 10**length]
        part *= 10 ** (width - length) * (width + 1)
        part += length
    return np.argsort(key, kind="stable")


_LINE_ROWS = 1 << 16  # lines assembled per block (a few MB: stays in cache)


def _put_digits(buf: np.ndarray, col: int, width: int, v: np.ndarray) -> None:
    """The decimal digits of ``v`` (non-negative integers below 10^width) right-aligned in the ``width``
    columns of ``buf`` from ``col``; leading zeros become 0 bytes (dropped by the caller)."""
    rest = v.astype(np.uint64 if int(v.max(initial=0)) >= 2**32 else np.uint32)
    for k in range(width - 1, -1, -1):
        q = rest // 10  # a floor division and a product: NumPy's divmod of unsigned integers is ~3x slower
        digit = rest - q * 10
        digit += 48
        if k < width - 1:  # a leading zero (nothing left of the number at this place) becomes a 0 byte
            digit *= v >= 10 ** (width - 1 - k)
        buf[:, col + k] = digit
        rest = q


def _canonical_unlabelled(tree: Tree, x: np.ndarray) -> bytes | None:
    """:func:`canonical_bytes` of a tree whose ids are its input positions ``0..n-1`` and whose counts are
    integers in ``0..2^53``, or None (another count: the general path). An id is digits only and the ``"``
    after it sorts below every digit, so the lines sort as their ids do as strings (:func:`decimal_order`):
    they are made directly in that order, no sort of the lines. Each block of lines is a fixed-width byte
    matrix (``["`` id ``","`` parent ``",`` count ``]`` newline, numbers right-aligned, ``null`` for an inner
    node's count) whose unused bytes (0) are dropped."""
    n, n1 = tree.n, tree.n1
    x = np.asarray(x, dtype=float)
    if x.size and not (np.all(x >= 0) and np.all(x == np.floor(x)) and float(x.max()) <= 2.0**53):
        return None
    pos = decimal_order(n)  # input positions (= ids), in the lines' order
    doh = _input_positions(tree)[pos]  # their DOH numbers
    par = tree.parent[doh]
    par_id = np.where(par < 0, -1, tree.order[np.maximum(par, 0)])
    leaf = doh >= n1
    count = np.zeros(n, np.int64)
    count[leaf] = x[doh[leaf] - n1]
    return _canonical_lines(pos, par_id, leaf, count)


def _canonical_lines(pos: np.ndarray, par_id: np.ndarray, leaf: np.ndarray, count: np.ndarray) -> bytes:
    """The lines of :func:`_canonical_unlabelled`, in their order: node ``pos[i]`` (its id), its parent's id
    ``par_id[i]`` (-1: the root, no parent), whether it is a leaf, and its count (integers in ``0..2^53``;
    an inner node's is written ``null``)."""
    n = pos.size
    d = len(str(n - 1))
    dc = max(4, len(str(int(count.max(initial=0)))))
    w = 9 + 2 * d + dc
    template = np.zeros(w, np.uint8)
    for col, char in ((0, "["), (1, '"'), (2 + d, '"'), (3 + d, ","), (4 + d, '"'), (5 + 2 * d, '"'),
                      (6 + 2 * d, ","), (7 + 2 * d + dc, "]"), (8 + 2 * d + dc, "\n")):
        template[col] = ord(char)
    null = np.zeros(dc, np.uint8)
    null[:4] = np.frombuffer(b"null", np.uint8)
    block = np.tile(template, (min(n, _LINE_ROWS), 1))  # copied per block: broadcasting a row is ~7x slower
    parts = []
    for a in range(0, n, _LINE_ROWS):
        b = min(n, a + _LINE_ROWS)
        buf = block[: b - a].copy()
        _put_digits(buf, 2, d, pos[a:b])
        _put_digits(buf, 5 + d, d, np.maximum(par_id[a:b], 0))
        buf[par_id[a:b] < 0, 5 + d : 5 + 2 * d] = 0  # the root: no parent
        _put_digits(buf, 7 + 2 * d, dc, count[a:b])
        buf[~leaf[a:b], 7 + 2 * d : 7 + 2 * d + dc] = null
        parts.append(buf[buf != 0])
    return b"".join(parts)  # one copy (the arrays are contiguous buffers)
