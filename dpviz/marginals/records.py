"""Marginals from records through the shared counting (issue 21): a :class:`~dpviz.marginals.model.Dataset` built
from :func:`dpviz.core.records.count_records` of the chosen attributes, so that the records are read in
bounded memory (streaming batches, or a Dask group-by with ``dask``) and a person's records beyond their
first K (``person``, ``max_contributions``) are dropped before anything is counted.

Each distinct combination of attribute values comes back with its number of records; the columns are then
coded exactly as :func:`dpviz.marginals.io.read_table` codes a CSV's (:func:`dpviz.marginals.binning.categorise`:
missing tokens, numeric columns cut into bins; or the declared domain, :func:`dpviz.marginals.declared.code_columns`),
and each combination's codes repeated by its count. The Dataset is the same as the one ``read_table`` builds
from the kept records (up to the row order, which no marginal depends on). The rows cap ``max_rows`` applies
to the kept records (the Dataset holds one row of codes each).
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import numpy as np

from dpviz.core.structure import StructureSource
from dpviz.errors import InputError
from dpviz.marginals.binning import Column, categorise, check_bins
from dpviz.marginals.model import Dataset, Domain

if TYPE_CHECKING:
    from dpviz.marginals.declared import DomainDeclaration

__all__ = ["dataset_from_records"]


def dataset_from_records(source: str | Path | bytes, attributes: Sequence[str] | None = None, *,
                         bins: int | dict[str, int] = 10, binning: Literal["quantile", "width"] = "quantile",
                         domain: DomainDeclaration | None = None, person: str | None = None,
                         max_contributions: int | None = None, dask: object = None, max_bytes: int,
                         max_rows: int, name: str | None = None) -> Dataset:
    """The Dataset of ``attributes`` (or the declared ``domain``'s) counted from the records of ``source`` (see
    the module docstring); ``person``/``max_contributions``/``dask`` as for
    :func:`dpviz.core.records.count_records`."""
    from dpviz.core.records import count_records, is_parquet, parquet_names

    check_bins(bins)
    if domain is not None:
        domain = domain.select(None if attributes is None else list(attributes))
        attrs = list(domain.names)
    elif attributes is not None:
        attrs = [attributes] if isinstance(attributes, str) else list(attributes)
    elif is_parquet(source):
        attrs = [c for c in parquet_names(source) if c != person]
    else:
        raise InputError("attributes: name the columns to tabulate (--attributes a,b,c) when counting CSV records")
    label = name or (Path(source).name.removesuffix(".parquet") if isinstance(source, (str, Path)) else "upload")
    groups = count_records(source, attrs, person=person, max_contributions=max_contributions, dask=dask,
                           max_bytes=max_bytes, max_groups=max_rows, groups_name="distinct records")
    n = int(groups.counts.sum())
    if n > max_rows:
        raise InputError(f"{label} has more than {max_rows:,} records to tabulate, above the limit; raise it with "
                         "read_table(..., max_rows=N) or the CLI flag --max-rows N")
    cols = []
    for a in attrs:
        enc = groups.keys[a].dictionary_encode()
        col = Column(a)
        col.index = {v: i for i, v in enumerate(enc.dictionary.to_pylist())}
        codes = np.repeat(np.asarray(enc.indices.to_numpy(zero_copy_only=False), np.intc), groups.counts)
        col.codes = array("i", codes.tobytes())
        col.lines = array("q", [0] * len(col.index))
        cols.append(col)
    if domain is not None:
        from dpviz.marginals.declared import code_columns

        return code_columns([(c.index, c.codes) for c in cols], n, domain, label)
    coded = np.empty((n, len(cols)), dtype=np.int64)
    categories, edges = [], []
    for k, col in enumerate(cols):
        given = isinstance(bins, dict) and col.name in bins
        b = int(bins[col.name]) if given else (10 if isinstance(bins, dict) else int(bins))
        coded[:, k], labels, cut = categorise(col, b, binning, given)
        categories.append(tuple(labels))
        edges.append(cut)
    return Dataset(Domain(tuple(attrs), tuple(len(c) for c in categories)), coded, tuple(categories), label,
                   tuple(edges), StructureSource("data", label))
