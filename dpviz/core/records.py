"""Records in: Parquet/Arrow reading and records → counts (a group-by), in-process or on Dask.

Analysts hold microdata — one row per person, event or edge — in CSV, gzip CSV, a Parquet file or a folder
of Parquet files (a dataset). This module is the one place such input is read and counted (issue 21):

* **Parquet everywhere.** :func:`is_parquet` tells a Parquet source by its magic bytes ``PAR1`` (a file,
  or the bytes of an upload) or by being a folder holding ``*.parquet`` files. :func:`read_parquet` reads
  the named columns only (column-selective, pyarrow), under the same caps as a text file: the bytes on disk
  against ``max_bytes`` and the rows from the Parquet footers against ``max_rows``, both *before* any data
  page is read, with the reader's one message format (:class:`dpviz.core.reader.Wording`).
  :func:`parquet_csv` gives the selected columns as CSV bytes, so that a capability's CSV parser (and its
  line-naming messages: line L is row L - 1 of the file) reads Parquet with no second parser.
* **Records → counts.** :func:`count_records` counts the records of each group of ``by`` columns (each
  record counts 1; ``bucket`` floors a time column to a day, an hour or N seconds first). In-process it
  streams record batches (pyarrow, one Parquet file at a time; its streaming CSV reader for CSV and gzip
  CSV, under the byte cap while reading), aggregates each batch and merges the partial counts whenever they
  pass :data:`MERGE_ROWS`: memory is bounded by the number of groups (and, with a contribution bound, of
  persons), not by the rows. With ``dask`` (``--workers N``: a local cluster; ``--scheduler ADDRESS``: a
  running one) the Parquet dataset is read by ``dask.dataframe`` and counted per partition on the workers
  (:mod:`dpviz.core.records_dask`); only the count vector comes back. Either way the groups come back sorted
  by their key text, so both give the same counts in the same order (``tests/test_records.py`` checks both
  against a pandas reference).
* **Contribution bound.** With ``person`` and ``max_contributions`` K, a person's records after their first
  K (in file order: files in sorted name order, rows in file order) are **dropped deterministically** before
  counting; how many were dropped is never returned (contribution bounding as in Wilson et al.,
  "Differentially Private SQL with Bounded User Contribution", PoPETs 2020, Sec. 3; persons are keyed by
  64-bit values, so a hash collision only makes two persons share one bound). A person's kept records depend
  on that person's rows only, so removing a person changes at most K records and every record-level
  sensitivity Δ becomes K·Δ (triangle inequality, any norm; cf. group privacy, Dwork & Roth, "The
  Algorithmic Foundations of Differential Privacy", FnT TCS 2014, Thm. 2.2). :func:`per_record_noise` gives the noise that realises sensitivity K·Δ
  through a capability's record-level strategy (Laplace b = KΔ/ε: ε/K; Gaussian σ = KΔ/√(2ρ): ρ/K²),
  and :func:`person_metadata` states the person-level budget, the sensitivity K·Δ and the unit of privacy
  in a release's ``OUT.meta.json``; the ledger is charged the person-level budget.
* **Ledger identity.** A release counted from records is charged to the records, not to the counts: the
  CLIs pass a :class:`RecordsSource` as the charged data, and the ledger identifies it by
  :func:`records_digest` — the SHA-256 of each data file's bytes as stored (a CSV, a gzip CSV, a Parquet
  file, each Parquet file of a folder), the digests sorted — whichever capability counts it and whatever columns, levels,
  buckets or bounds it counts by: the same people spend from one budget (:mod:`dpviz.ledger.identity`
  states the canonical form and what a re-save does). Streamed: constant memory, I/O bound.

The unit of privacy of a release from records is the record (one row), or with K the person of the
``person`` column (:func:`unit_of_privacy`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dpviz.core.reader import GZIP_MAGIC, PARQUET_MAGIC, Wording, open_capped
from dpviz.errors import InputError

__all__ = ["PARQUET_MAGIC", "MERGE_ROWS", "BUCKETS", "GroupCounts", "RecordsSource", "records_digest", "is_parquet", "parquet_files", "parquet_names",
           "read_parquet", "parquet_csv", "table_csv", "count_records", "parse_bucket", "per_record_noise",
           "person_metadata", "unit_of_privacy", "DROP_RULE", "COUNT"]

MERGE_ROWS = 1 << 20
"""Partial (group, count) rows kept before they are merged into one table of distinct groups."""
BUCKETS = ("day", "hour")
"""Named time buckets of :func:`parse_bucket` (or a whole number of seconds)."""
DROP_RULE = ("deterministic: a person's first K records in file order (files in sorted name order) are kept, the "
             "rest dropped before counting; how many were dropped is never published")
COUNT = "__count"
"""The name of the count column of :attr:`GroupCounts.table`."""
_DATASET_HINT = "expected a Parquet file, a folder of *.parquet files, a CSV or a gzip CSV"


# ----------------------------------------------------------------------------------------------- Parquet
def parquet_files(path: str | os.PathLike) -> list[Path]:
    """The ``*.parquet`` files of a dataset folder (recursively, sorted by path); ``[]`` if none."""
    root = Path(path)
    return sorted(p for p in root.rglob("*.parquet") if p.is_file()) if root.is_dir() else []


def is_parquet(source: object) -> bool:
    """Whether ``source`` is Parquet: bytes or a file starting with ``PAR1``, or a folder of ``*.parquet``."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        return bytes(source[:4]) == PARQUET_MAGIC
    if not isinstance(source, (str, os.PathLike)):
        return False
    try:
        if os.path.isdir(source):
            return bool(parquet_files(source))
        if not os.path.isfile(source):
            return False
        with open(source, "rb") as fh:
            return fh.read(4) == PARQUET_MAGIC
    except OSError:
        return False


def _label(source: object, label: str | None) -> str:
    if label:
        return label
    if isinstance(source, (str, os.PathLike)):
        return repr(Path(source).name)
    return "the upload"


def _dataset(source: object, label: str, max_bytes: int, wording: Wording):
    """A pyarrow dataset of a Parquet source, its byte size checked against ``max_bytes`` first."""
    import pyarrow.dataset as ds

    if isinstance(source, (bytes, bytearray, memoryview)):
        size = memoryview(source).nbytes
        if size > max_bytes:
            raise wording.error(label, f"is {size:,} bytes", wording.size, max_bytes)
        import pyarrow.parquet as pq
        try:
            return ds.dataset(pq.read_table(pa.BufferReader(bytes(source))))  # an upload: already in memory
        except (pa.ArrowInvalid, OSError) as exc:
            raise InputError(f"{label} is not a readable Parquet file ({_short(exc)})") from None
    files = parquet_files(source) if os.path.isdir(source) else [Path(source)]
    size = sum(f.stat().st_size for f in files)
    if size > max_bytes:
        raise wording.error(label, f"is {size:,} bytes" + (f" in {len(files):,} files" if len(files) > 1 else ""),
                            wording.size, max_bytes)
    try:
        return ds.dataset([str(f) for f in files], format="parquet")
    except (pa.ArrowInvalid, OSError) as exc:
        raise InputError(f"{label} is not a readable Parquet dataset ({_short(exc)})") from None


def _short(exc: BaseException, limit: int = 160) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text[:limit]


def parquet_names(source: object, *, max_bytes: int = 1 << 62, label: str | None = None,
                  wording: Wording = Wording()) -> list[str]:
    """The column names of a Parquet source (from its schema: no data read)."""
    return list(_dataset(source, _label(source, label), max_bytes, wording).schema.names)


def _columns(names: Sequence[str], wanted: Sequence[str] | None, label: str) -> list[str]:
    if wanted is None:
        return list(names)
    missing = [c for c in wanted if c not in names]
    if missing:
        raise InputError(f"{label}: no column {missing[0]!r}; its columns are {list(names)[:12]}")
    return list(dict.fromkeys(wanted))


def read_parquet(source: object, columns: Sequence[str] | None = None, *, max_bytes: int,
                 max_rows: int | None = None, label: str | None = None, wording: Wording = Wording()) -> pa.Table:
    """The ``columns`` (default: all) of a Parquet file, folder or upload as one Arrow table, under the caps:
    the size on disk against ``max_bytes`` and the rows (from the footers) against ``max_rows``, before
    any data is read; every problem is one InputError line."""
    label = _label(source, label)
    data = _dataset(source, label, max_bytes, wording)
    cols = _columns(data.schema.names, columns, label)
    try:
        rows = data.count_rows()
        if max_rows is not None and rows > max_rows:
            raise wording.message(wording.row_message.format(label=label, limit=f"{max_rows:,}", rows=wording.rows),
                                  wording.row_cap, max_rows)
        return data.to_table(columns=cols)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, OSError) as exc:
        raise InputError(f"{label}: cannot read the Parquet data ({_short(exc)})") from None


def table_csv(table: pa.Table) -> bytes:
    """An Arrow table as CSV bytes (a header, quoting where needed, nulls as empty fields)."""
    import pyarrow.csv as pa_csv

    sink = pa.BufferOutputStream()
    try:
        pa_csv.write_csv(table, sink, pa_csv.WriteOptions(quoting_style="needed"))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise InputError(f"a Parquet column cannot be read as text ({_short(exc)}); expected numbers, text or "
                         "dates") from None
    return sink.getvalue().to_pybytes()


def parquet_csv(source: object, columns: Sequence[str] | Callable[[list[str]], Sequence[str] | None] | None = None,
                **caps: Any) -> bytes:
    """The selected columns of a Parquet source as CSV bytes (:func:`read_parquet` under ``caps``, then
    :func:`table_csv`): a capability's CSV parser then reads Parquet as it reads a CSV (line L = row L - 1).
    ``columns`` may be a function of the column names (picking the count or time column of a stream)."""
    if callable(columns):
        columns = columns(parquet_names(source, max_bytes=caps.get("max_bytes", 1 << 62), label=caps.get("label"),
                                        wording=caps.get("wording", Wording())))
    return table_csv(read_parquet(source, columns, **caps))


# ----------------------------------------------------------------------------------------------- batches
def parse_bucket(text: str | int | None) -> int | None:
    """A time bucket in seconds: ``day`` (86,400), ``hour`` (3,600) or a whole number N >= 1 of seconds."""
    if text is None:
        return None
    named = {"day": 86_400, "hour": 3_600}
    key = str(text).strip().lower()
    if key in named:
        return named[key]
    if key.isdigit() and int(key) >= 1:
        return int(key)
    raise InputError(f"--bucket: expected day, hour or a whole number of seconds >= 1, got {str(text)[:40]!r}")


def _as_time(col: pa.ChunkedArray | pa.Array, name: str) -> pa.Array:
    """A time column as timestamp[s] (text parsed as ISO 8601; a date as its midnight); nulls refused."""
    col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    try:
        if pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
            col = pc.cast(pc.utf8_trim_whitespace(col), pa.timestamp("s"))
        elif pa.types.is_date(col.type):
            col = pc.cast(pc.cast(col, pa.date32()), pa.timestamp("s"))
        elif pa.types.is_timestamp(col.type):
            if col.type.tz is not None:  # the wall-clock times as written
                col = pc.local_timestamp(col)
            col = pc.cast(col, pa.timestamp("s"), safe=False)
        else:
            raise InputError(f"time column {name!r}: {col.type} values are not dates/times")
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise InputError(f"time column {name!r}: not a date/time ({_short(exc)})") from None
    if col.null_count:
        raise InputError(f"time column {name!r}: an empty time; every event needs one")
    return col


def bucket_keys(col: pa.Array, seconds: int, name: str) -> pa.Array:
    """The start of each record's bucket, as int64 seconds since 1970 (floored: epoch-aligned buckets)."""
    secs = pc.cast(_as_time(col, name), pa.int64())
    return pc.multiply(pc.floor(pc.divide(pc.cast(secs, pa.float64()), float(seconds))).cast(pa.int64()),
                       pa.scalar(seconds, pa.int64()))


def _csv_batches(source: object, columns: list[str], label: str, max_bytes: int,
                 wording: Wording) -> Iterator[pa.RecordBatch]:
    import pyarrow.csv as pa_csv

    stream = open_capped(source, max_bytes=max_bytes, label=label, wording=wording)
    try:
        reader = pa_csv.open_csv(stream, read_options=pa_csv.ReadOptions(block_size=1 << 22),
                                 convert_options=pa_csv.ConvertOptions(  # text: no type guessed per block
                                     include_columns=columns, column_types={c: pa.string() for c in columns},
                                     strings_can_be_null=True))
        for batch in reader:
            yield batch
    except (pa.ArrowInvalid, pa.ArrowKeyError, pa.ArrowNotImplementedError) as exc:
        raise InputError(f"{label}: not a readable CSV of records ({_short(exc)}); {_DATASET_HINT}") from None
    finally:
        stream.close()


def _batches(source: object, columns: list[str], label: str, max_bytes: int,
             wording: Wording) -> Iterator[pa.RecordBatch]:
    """Record batches of ``columns``: Parquet (column-selective, one file at a time: the whole-dataset scanner's
    buffers grew with the rows, 1 GB at 10^8 rows of 50 files, one file's stay ~100 MB) or CSV text."""
    if is_parquet(source):
        data = _dataset(source, label, max_bytes, wording)
        cols = _columns(data.schema.names, columns, label)
        try:
            for fragment in data.get_fragments():  # files in sorted name order, rows in file order
                yield from fragment.to_batches(schema=data.schema, columns=cols, batch_size=1 << 20, batch_readahead=2)
        except (pa.ArrowInvalid, OSError) as exc:
            raise InputError(f"{label}: cannot read the Parquet data ({_short(exc)})") from None
        return
    if isinstance(source, (str, os.PathLike)) and os.path.isdir(source):
        raise InputError(f"{label} is a folder without *.parquet files; {_DATASET_HINT}")
    yield from _csv_batches(source, columns, label, max_bytes, wording)


# ----------------------------------------------------------------------------------------------- counting
@dataclass(frozen=True, eq=False)
class GroupCounts:
    """Counts of records per group: ``keys`` (one Arrow string column per ``by`` column, null as ``""``; a
    bucketed time column as int64 seconds since 1970), sorted by key, and ``counts`` (int64, each >= 1).
    Nothing else about the records (their number before a contribution bound, what was dropped) is kept."""

    by: tuple[str, ...]
    keys: dict[str, pa.Array]
    counts: np.ndarray

    def __len__(self) -> int:
        return int(self.counts.size)

    def table(self) -> pa.Table:
        return pa.table({**self.keys, COUNT: pa.array(self.counts, pa.int64())})


def _key_text(col: pa.Array) -> pa.Array:
    """A key column as stripped text, null as ``""`` (the same text in-process and on Dask)."""
    if pa.types.is_dictionary(col.type):
        col = col.dictionary_decode()
    text = col if pa.types.is_string(col.type) else pc.cast(col, pa.string())
    return pc.utf8_trim_whitespace(text.fill_null(""))


def _prepare(batch: pa.RecordBatch | pa.Table, by: Sequence[str], bucket: tuple[str, int] | None,
             text: bool = True) -> pa.Table:
    """The ``by`` columns as grouping keys: text (``text=False``: as stored, for a first aggregation of a
    batch whose few groups are then turned into text); a bucketed time as int64 seconds."""
    out = {}
    for c in by:
        col = batch.column(c)
        col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
        if bucket is not None and c == bucket[0]:
            out[c] = bucket_keys(col, bucket[1], c) if not pa.types.is_integer(col.type) else col
        else:
            out[c] = _key_text(col) if text else col
    return pa.table(out)


def _aggregate(table: pa.Table, by: Sequence[str], count_col: str | None) -> pa.Table:
    """(by..., count): rows counted (``count_col`` None) or partial counts summed."""
    if count_col is None:
        g = table.group_by(list(by), use_threads=False).aggregate([([], "count_all")])
        return g.rename_columns([*(c for c in g.column_names if c != "count_all"), COUNT]).select([*by, COUNT])
    g = table.group_by(list(by), use_threads=False).aggregate([(count_col, "sum")])
    return g.rename_columns([c if c != f"{count_col}_sum" else COUNT for c in g.column_names]).select([*by, COUNT])


def _person_keys(person: pa.Array, label: str, name: str) -> np.ndarray:
    """A person id per record as uint64: an integer id itself, any other id a 64-bit hash of its text (pandas'
    ``hash_array``; a dictionary's values hashed once). Two persons whose hashes collide share one bound of K
    records (more is dropped, never more kept: the bound per person holds)."""
    import pandas as pd

    if pa.types.is_integer(person.type):
        if person.null_count:
            raise InputError(f"{label}: an empty person id in column {name!r}; every record needs one")
        return np.asarray(person.cast(pa.int64()).to_numpy(), np.int64).view(np.uint64)
    if pa.types.is_dictionary(person.type):
        values = _key_text(person.dictionary)
        if person.null_count or pc.any(pc.equal(values, "")).as_py():
            raise InputError(f"{label}: an empty person id in column {name!r}; every record needs one")
        hashed = pd.util.hash_array(np.asarray(values.to_numpy(zero_copy_only=False), dtype=object))
        return hashed[np.asarray(person.indices.to_numpy(), np.int64)]
    ids = _key_text(person)
    if pc.any(pc.equal(ids, "")).as_py():
        raise InputError(f"{label}: an empty person id in column {name!r}; every record needs one")
    return pd.util.hash_array(np.asarray(ids.to_numpy(zero_copy_only=False), dtype=object))


class _Persons:
    """Running number of records of each person so far: sorted person keys and their counts (memory: 16 bytes
    per person seen; each batch merged in O(persons + batch log batch), vectorised)."""

    def __init__(self, k: int) -> None:
        self.k = k
        self.ids = np.zeros(0, np.uint64)
        self.used = np.zeros(0, np.int64)

    def keep(self, person: pa.Array, label: str, name: str) -> np.ndarray:
        """Mask of the records kept: a person's first K in order (this batch after the earlier ones)."""
        person = person.combine_chunks() if isinstance(person, pa.ChunkedArray) else person
        keys = _person_keys(person, label, name)
        n = keys.size
        order = np.argsort(keys, kind="stable")  # one sort: a person's rows together, in file order
        ordered = keys[order]
        first = np.r_[True, ordered[1:] != ordered[:-1]] if n else np.zeros(0, bool)
        starts = np.flatnonzero(first)
        uniq, group = ordered[starts], np.cumsum(first) - 1
        inv, within = np.empty(n, np.int64), np.empty(n, np.int64)
        inv[order], within[order] = group, np.arange(n) - starts[group]  # rank of a row among its person's
        pos = np.searchsorted(self.ids, uniq)
        found = pos < self.ids.size
        found[found] = self.ids[pos[found]] == uniq[found]
        prior = np.zeros(uniq.size, np.int64)
        prior[found] = self.used[pos[found]]
        keep = prior[inv] + within < self.k
        counts = np.diff(np.r_[starts, n])
        self.used[pos[found]] += counts[found]
        if not found.all():  # new persons inserted in place: both arrays stay sorted by key
            self.ids = np.insert(self.ids, pos[~found], uniq[~found])
            self.used = np.insert(self.used, pos[~found], counts[~found])
        return keep


def _sorted(table: pa.Table, by: Sequence[str]) -> pa.Table:
    return table.sort_by([(c, "ascending") for c in by])


def _check_groups(n: int, max_groups: int | None, label: str, what: str) -> None:
    if max_groups is not None and n > max_groups:
        raise InputError(f"{label}: more than {max_groups:,} {what} (counted while reading); raise the cap with "
                         "its flag if this is expected")


def count_records(source: object, by: Sequence[str], *, bucket: tuple[str, int] | None = None,
                  person: str | None = None, max_contributions: int | None = None, dask: object = None,
                  max_bytes: int, max_groups: int | None = None, groups_name: str = "groups",
                  label: str | None = None, wording: Wording = Wording()) -> GroupCounts:
    """Count the records of ``source`` (a Parquet file/folder/upload, a CSV or gzip CSV) per group of the
    ``by`` columns; see the module docstring. ``bucket``: (time column in ``by``, seconds). ``person`` and
    ``max_contributions`` K: a person's records after their first K dropped first. ``dask``: None (in-process,
    streaming), an int N (a local cluster of N workers), ``"synchronous"`` (Dask's synchronous scheduler:
    tests) or a scheduler address. ``max_groups``: a cap on the distinct groups (``groups_name`` in the
    message), checked while counting."""
    by = list(dict.fromkeys(by))
    if isinstance(source, (str, os.PathLike)) and str(source).startswith("sample:"):
        raise InputError(f"{str(source)[:60]}: records are counted from a file (CSV, gzip CSV, Parquet or a folder of "
                         "Parquet files), not a bundled sample")
    label = _label(source, label)
    if not by:
        raise InputError("records: name at least one column to count by")
    if (person is None) != (max_contributions is None):
        raise InputError("--max-contributions and --person-column go together: a bound per person needs the "
                         "column that names the person")
    if max_contributions is not None and (isinstance(max_contributions, bool) or int(max_contributions) < 1):
        raise InputError(f"--max-contributions: expected a whole number >= 1, got {max_contributions!r}")
    if person is not None and person in by:
        raise InputError(f"--person-column {person!r} is also a column counted by; name another column")
    if dask is not None:
        if not is_parquet(source) or isinstance(source, (bytes, bytearray, memoryview)):
            raise InputError(f"{label}: Dask (--workers/--scheduler) counts a Parquet file or folder; convert the CSV "
                             "to Parquet, or count it in-process (leave the flags out)")
        from dpviz.core.records_dask import dask_counts

        _dataset(source, label, max_bytes, wording)  # the byte cap and the columns checked here first
        table = dask_counts(source, by, bucket=bucket, person=person, k=max_contributions, address=dask,
                            label=label)
        _check_groups(table.num_rows, max_groups, label, groups_name)
        return _result(_sorted(table, by), by)
    columns = [*by, *([person] if person is not None else [])]
    persons = None if max_contributions is None else _Persons(int(max_contributions))
    parts: list[pa.Table] = []
    pending = 0
    for batch in _batches(source, columns, label, max_bytes, wording):
        if persons is not None:
            batch = batch.filter(pa.array(persons.keep(batch.column(person), label, person)))
        if not batch.num_rows:
            continue
        part = _aggregate(_prepare(batch, by, bucket, text=False), by, None)  # keys as stored: no text per row
        parts.append(_prepare(part, by, bucket).append_column(COUNT, part.column(COUNT)))  # text keys per group
        pending += part.num_rows
        if pending > MERGE_ROWS:
            parts = [_aggregate(pa.concat_tables(parts), by, COUNT)]
            pending = parts[0].num_rows
            _check_groups(pending, max_groups, label, groups_name)
    if not parts:
        raise InputError(f"{label}: no records to count")
    table = _aggregate(pa.concat_tables(parts), by, COUNT) if len(parts) > 1 else parts[0]
    _check_groups(table.num_rows, max_groups, label, groups_name)
    return _result(_sorted(table, by), by)


def _result(table: pa.Table, by: Sequence[str]) -> GroupCounts:
    keys = {c: table.column(c).combine_chunks() for c in by}
    counts = np.asarray(table.column(COUNT).to_numpy(), dtype=np.int64)
    return GroupCounts(tuple(by), keys, counts)


# ----------------------------------------------------------------------------------------------- identity
RECORDS_DIGEST = "dpviz-records/1"
"""The first line of :func:`records_digest`'s canonical bytes."""


def _content_sha256(source: object, label: str, max_bytes: int, wording: Wording) -> str:
    """SHA-256 of one file's (or upload's) bytes as stored, streamed; its size checked against ``max_bytes``
    first; a FIFO or a device refused before it is opened."""
    import hashlib

    if isinstance(source, (bytes, bytearray, memoryview)):
        view = memoryview(source).cast("B")
        if view.nbytes > max_bytes:
            raise wording.error(label, f"is {view.nbytes:,} bytes", wording.size, max_bytes)
        return hashlib.sha256(view).hexdigest()
    from dpviz.core.inputs import require_regular_file

    path = require_regular_file(source, "input")
    try:
        size = path.stat().st_size
        if size > max_bytes:
            raise wording.error(label, f"is {size:,} bytes", wording.size, max_bytes)
        with open(path, "rb") as fh:
            return hashlib.file_digest(fh, "sha256").hexdigest()
    except OSError as exc:
        raise InputError(f"cannot read {str(path)[:200]!r}: {exc.strerror or exc}") from None


def records_digest(source: object, *, max_bytes: int | None = None, label: str | None = None,
                   wording: Wording = Wording()) -> bytes:
    """The canonical bytes of a records source for the ledger: ``dpviz-records/1``, then one line per data
    file, the SHA-256 (hex) of its bytes as stored, the lines sorted. A CSV, a gzip CSV or an upload is one
    data file; a folder is its ``*.parquet`` files (:func:`parquet_files`), so a folder holding only
    ``P.parquet`` is ``P.parquet``, and file names and order do not matter. Streamed (constant memory, I/O
    bound: ~0.5 GB/s on a loaded core, seconds for 10^8 rows of Parquet). Not format-invariant: a re-save
    (other row order, compression, row groups, line endings, a gzip of a CSV, a CSV of a Parquet file) is
    another dataset; ``max_bytes`` (default: none) caps each file's size."""
    cap = (1 << 62) if max_bytes is None else int(max_bytes)
    label = _label(source, label)
    if isinstance(source, (str, os.PathLike)) and os.path.isdir(source):
        files = parquet_files(source)
        if not files:
            raise InputError(f"{label} is a folder without *.parquet files; {_DATASET_HINT}")
        digests = [_content_sha256(f, repr(f.name), cap, wording) for f in files]
    else:
        digests = [_content_sha256(source, label, cap, wording)]
    return (RECORDS_DIGEST + "\n" + "".join(d + "\n" for d in sorted(digests))).encode("ascii")


@dataclass(frozen=True)
class RecordsSource:
    """What a release counted from records charges to the ledger (``data`` of
    :func:`dpviz.core.charging.charge`): the records file or folder, identified by :func:`records_digest`
    (the same dataset whichever capability counts it)."""

    source: str
    max_bytes: int | None = None

    def canonical_bytes(self) -> bytes:
        return records_digest(self.source, max_bytes=self.max_bytes)


# ----------------------------------------------------------------------------------------------- privacy unit
def unit_of_privacy(person: str | None = None, max_contributions: int | None = None) -> str:
    """The unit of privacy of a release counted from records."""
    if max_contributions is None:
        return "one record (a row of the records file): each record counts 1"
    return (f"one person (column {person!r}) with at most {max_contributions} records counted: the rest are "
            "dropped before counting (deterministically: the first in file order are kept)")


def per_record_noise(noise: Any, max_contributions: int | None) -> Any:
    """The noise a record-level strategy must be calibrated to so that its noise meets ``noise``'s budget at
    sensitivity K·Δ: Laplace at ε/K (b = KΔ/ε), Gaussian at ρ/K² (σ = KΔ/√(2ρ)), discreteness kept. K None
    or 1: ``noise`` itself."""
    if not max_contributions or int(max_contributions) == 1:
        return noise
    from dpviz.core.noise import Noise

    k = int(max_contributions)
    if noise.family == "laplace":
        return Noise.laplace(float(noise.budget.epsilon) / k, discrete=noise.discrete)
    return Noise.gaussian(float(noise.rho) / k**2, discrete=noise.discrete)


def person_metadata(meta: dict[str, Any], noise: Any, *, person: str | None, max_contributions: int | None,
                    source: str) -> dict[str, Any]:
    """A release's ``OUT.meta.json`` (built with :func:`per_record_noise`) stated at the person level: the
    budget ``noise`` (what the ledger charges), sensitivity × K, parts × K (ε) or × K² (ρ), the unit of
    privacy, and how the records were counted. Without K only the unit and ``records`` are added."""
    out = dict(meta)
    k = int(max_contributions) if max_contributions else 1
    if k > 1:
        out["noise"] = noise.as_dict()
        out["noise_text"] = noise.describe
        out["budget_text"] = noise.budget.describe
        out["sensitivity"] = {**meta["sensitivity"], "value": float(meta["sensitivity"]["value"]) * k,
                              "per_record": float(meta["sensitivity"]["value"])}
        if "budget_parts" in meta:
            out["budget_parts"] = [{**p, **({"epsilon": p["epsilon"] * k} if p.get("epsilon") is not None else {}),
                                    **({"rho": p["rho"] * k * k} if p.get("rho") is not None else {})}
                                   for p in meta["budget_parts"]]
    out["unit_of_privacy"] = unit_of_privacy(person, max_contributions)
    out["records"] = {"source": source, "counted": "each record counts 1 in its group",
                      **({"person_column": person, "max_contributions": k, "dropped": DROP_RULE,
                          "calibration": f"noise drawn for sensitivity {k} × the record-level sensitivity"}
                         if max_contributions else {})}
    return out
