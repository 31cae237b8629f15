"""Records → counts on Dask (:func:`dpviz.core.records.count_records` with ``dask=``): a group-by over a
Parquet dataset read by ``dask.dataframe.read_parquet``, of which only the count vector (one row per group)
comes back.

Without a contribution bound each partition is counted where it is read (an Arrow group-by, as in-process) and
the partial counts are summed per group on the workers, 8 partitions' groups at a time (a reduction tree): a
worker holds one partition and a few partial counts, so memory is bounded by the partition size and the number
of groups, not by the rows (and no pandas group-by on text keys, 5× slower than the Arrow one at 10^7 rows).
Each partition's key columns are turned into grouping keys by the same function as in-process
(:func:`dpviz.core.records._prepare`: text keys, a bucketed time as int64 seconds), so both paths count the
same groups under the same keys. A contribution bound keeps a person's first K records in dataset order
(``groupby(person).cumcount() < K``: partitions in file order, rows in file order — the in-process rule).

Where it runs (``address``): an int N, a ``distributed.LocalCluster`` of N single-threaded worker processes
started for the count and closed after it; ``"synchronous"``, Dask's synchronous scheduler (tests, debugging);
any other text, the address of a running scheduler (``tcp://host:8786``: ``distributed.Client(address)``),
whose workers must see the same Parquet path.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from contextlib import ExitStack

import pyarrow as pa

from dpviz.core.records import COUNT, _prepare, parquet_files
from dpviz.errors import InputError

__all__ = ["dask_counts"]

_RANK = "__rank"


def _keys_partition(df, by: Sequence[str], bucket, person: str | None):
    """One partition (pandas) → its grouping keys (pandas, pyarrow-backed), plus the person's text."""
    import pandas as pd

    from dpviz.core.records import _key_text

    table = pa.Table.from_pandas(df, preserve_index=False)
    keys = _prepare(table, by, bucket)
    if person is not None:
        keys = keys.append_column(person, _key_text(table.column(person).combine_chunks()))
    return keys.to_pandas(types_mapper=pd.ArrowDtype)


def _partial_counts(df, by: Sequence[str], bucket) -> pa.Table:
    """One partition's (by..., count) as an Arrow table: aggregated on the stored keys, then only its groups
    turned into text (the in-process rule)."""
    from dpviz.core.records import _aggregate

    table = pa.Table.from_pandas(df, preserve_index=False)
    part = _aggregate(_prepare(table, by, bucket, text=False), by, None)
    return _prepare(part, by, bucket).append_column(COUNT, part.column(COUNT))


def _merge_counts(parts: Sequence[pa.Table], by: Sequence[str]) -> pa.Table:
    """Partial counts of several partitions summed per group (one Arrow group-by). The parts, unpickled from
    other workers, may sit in unaligned buffers (Acero warns on every worker): concatenated into new ones."""
    from dpviz.core.records import _aggregate

    return _aggregate(pa.concat_tables(parts).combine_chunks(), by, COUNT) if len(parts) > 1 else parts[0]


def _tree_sum(parts: list, by: Sequence[str], fan_in: int = 8):
    """The delayed partial counts merged ``fan_in`` at a time on the workers (a reduction tree of depth
    log_fan_in(partitions)): no task holds more than ``fan_in`` partitions' groups, and only the final counts
    come back."""
    import dask

    merge = dask.delayed(_merge_counts, pure=True)
    while len(parts) > 1:
        parts = [merge(parts[i:i + fan_in], list(by)) for i in range(0, len(parts), fan_in)]
    return parts[0]


def _meta(by: Sequence[str], bucket, person: str | None):
    import pandas as pd

    cols = {c: pd.Series([], dtype=pd.ArrowDtype(pa.int64() if bucket is not None and c == bucket[0] else
                                                 pa.string())) for c in by}
    if person is not None:
        cols[person] = pd.Series([], dtype=pd.ArrowDtype(pa.string()))
    return pd.DataFrame(cols)


def dask_counts(source: str | os.PathLike, by: Sequence[str], *, bucket, person: str | None, k: int | None,
                address: object, label: str) -> pa.Table:
    """(by..., ``__count``) of the Parquet file or folder ``source``, counted by Dask (see the module docstring)."""
    import dask
    import dask.dataframe as dd

    files = parquet_files(source) if os.path.isdir(source) else [source]
    columns = [*by, *([person] if person is not None else [])]
    with ExitStack() as stack:
        if address == "synchronous":
            stack.enter_context(dask.config.set(scheduler="synchronous"))
        else:
            from distributed import Client, LocalCluster

            if isinstance(address, int) and not isinstance(address, bool):
                if address < 1:
                    raise InputError(f"--workers: expected a whole number >= 1, got {address}")
                cluster = stack.enter_context(LocalCluster(n_workers=address, threads_per_worker=1, processes=True,
                                                           dashboard_address=None))
                stack.enter_context(Client(cluster))
            else:
                try:
                    stack.enter_context(Client(str(address), timeout=30))
                except (OSError, TimeoutError, ValueError) as exc:
                    raise InputError(f"--scheduler {str(address)[:120]!r}: cannot connect ({exc})") from None
        try:
            ddf = dd.read_parquet([str(f) for f in files], columns=columns, dtype_backend="pyarrow")
            if person is None:  # each partition counted where it is read; the groups summed on the workers
                count = dask.delayed(_partial_counts, pure=True)
                table = _tree_sum([count(part, list(by), bucket) for part in ddf.to_delayed()], by).compute()
                return _typed(table, by, bucket)
            else:  # a person's first K records (dataset order), then the rows counted
                keys = ddf.map_partitions(_keys_partition, list(by), bucket, person, meta=_meta(by, bucket, person))
                keys = keys.assign(**{_RANK: keys.groupby(person).cumcount()})
                keys = keys[keys[_RANK] < k]
                sizes = keys.groupby(list(by)).size().compute()
        except InputError:
            raise
        except (pa.ArrowInvalid, OSError, ValueError) as exc:
            raise InputError(f"{label}: the Dask count failed ({str(exc).splitlines()[0][:160]})") from None
    return _typed(pa.Table.from_pandas(sizes.rename(COUNT).reset_index(), preserve_index=False), by, bucket)


def _typed(table: pa.Table, by: Sequence[str], bucket) -> pa.Table:
    """(by..., count) with the in-process types: text keys, a bucketed time int64, int64 counts."""
    out = {c: table.column(c).combine_chunks().cast(pa.int64() if bucket is not None and c == bucket[0] else
                                                    pa.string()) for c in by}
    out[COUNT] = table.column(COUNT).combine_chunks().cast(pa.int64())
    return pa.table(out)
