"""Histogram input: the bins declaration, a counts or records file, and the ``load``/``canonical_bytes`` hooks.

* **Declaration** (``--bins FILE.json``, public): ``{"edges": [e0, e1, ..., em]}`` (numeric, increasing),
  ``{"range": [low, high, width]}``, or ``{"labels": ["a", "b", ...]}`` (ordered categories); optional ``"name"``.
* **Data** (private), a CSV with a header, either
  - **counts**: columns ``bin`` and ``count`` — a bin label (as declared) and its count; a declared bin the file
    omits counts 0, a row naming an undeclared bin is dropped;
  - **records**: one row per record, the value in ``--column`` (default: the first column) — a number binned by
    the declared edges, or a label; a record outside the declared bins is dropped.
  How many rows were dropped is never published.
"""

from __future__ import annotations

import io as _io
import json
from pathlib import Path
from typing import Any

import numpy as np

from dpviz.core.reader import Cap, Wording, read_capped
from dpviz.core.registry import SAMPLE_PREFIX, load_sample
from dpviz.core.structure import StructureSource
from dpviz.errors import InputError
from dpviz.histogram.model import Bins, HistogramData

__all__ = ["MAX_BYTES", "MAX_DECLARATION_BYTES", "read_bins", "bins_from_json", "read_data", "parse_data", "load",
           "canonical_bytes", "CANONICAL", "bins_template", "is_counts_file"]

MAX_BYTES = 100_000_000
MAX_DECLARATION_BYTES = 20_000_000
CANONICAL = ("histogram: counts files as 'label,count' lines sorted by label, UTF-8 (a records file is charged "
             "to the records dataset of its bytes: dpviz.ledger.identity.records_identity); bundled samples as their "
             "values sorted")


WORDING = Wording(call="dpviz.histogram.io.read_data", text="CSV text",
                  size=Cap("MAX_BYTES", None, "max_bytes", ", above the size cap"))


def _read_capped(path: str | Path, what: str, cap: int) -> bytes:
    """The file's bytes through the one core reader (size cap from stat and while reading, gzip under the same
    cap, NUL refused, FIFO refused); a Parquet input file or folder as the CSV of its columns
    (:func:`dpviz.core.records.parquet_csv`)."""
    from dpviz.core.records import is_parquet, parquet_csv

    if what == "input" and is_parquet(path):
        return parquet_csv(path, max_bytes=cap, label=f"{what} {str(path)[:200]!r}", wording=WORDING)
    return bytes(read_capped(path, max_bytes=cap, refuse_nul=True, label=f"{what} {str(path)[:200]!r}",
                             wording=WORDING).data)


def _text(raw: bytes, what: str) -> str:
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"{what}: byte {exc.start + 1:,} is not UTF-8 text") from None


def bins_from_json(obj: Any, what: str = "bins") -> Bins:
    """A :class:`Bins` from a parsed declaration (see the module docstring)."""
    if not isinstance(obj, dict):
        raise InputError(f"{what}: expected a JSON object with 'edges', 'range' or 'labels'")
    keys = [k for k in ("edges", "range", "labels") if k in obj]
    if len(keys) != 1:
        raise InputError(f"{what}: give exactly one of 'edges', 'range' or 'labels'")
    key = keys[0]
    if key == "edges":
        if not isinstance(obj["edges"], list) or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                                          for v in obj["edges"]):
            raise InputError(f"{what}: 'edges' must be a list of numbers")
        return Bins.from_edges(obj["edges"])
    if key == "range":
        r = obj["range"]
        if not isinstance(r, list) or len(r) != 3 or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                                             for v in r):
            raise InputError(f"{what}: 'range' must be [low, high, width]")
        return Bins.from_range(*r)
    return Bins.from_labels(obj["labels"])


def read_bins(path: str | Path) -> Bins:
    """The declared bins from a JSON file (capped at :data:`MAX_DECLARATION_BYTES`)."""
    text = _text(_read_capped(path, "--bins", MAX_DECLARATION_BYTES), "--bins")
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"--bins {str(path)[:200]!r}: not JSON (line {exc.lineno}: {exc.msg})") from None
    return bins_from_json(obj, f"--bins {str(path)[:200]!r}")


def _frame(raw: bytes, what: str) -> Any:
    import pandas as pd

    try:
        df = pd.read_csv(_io.StringIO(_text(raw, what)), dtype=str, keep_default_na=False, skipinitialspace=True)
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise InputError(f"{what}: not a CSV table with a header ({str(exc).splitlines()[0][:120]})") from None
    if df.shape[1] == 0:
        raise InputError(f"{what}: no columns")
    df.columns = [str(c).strip() for c in df.columns]
    return df


def _is_counts(columns: list[str]) -> bool:
    return "bin" in columns and "count" in columns


def _counts(df: Any, bins: Bins, what: str) -> np.ndarray:
    idx = bins.index_of_labels(df["bin"].str.strip().to_numpy())
    text = df["count"].str.strip()
    num = np.asarray(text.map(lambda s: s.isdigit()), dtype=bool)
    if not num.all():
        r = int(np.flatnonzero(~num)[0])
        raise InputError(f"{what}: row {r + 2}: field 'count': expected a non-negative integer, got {text.iloc[r][:40]!r}")
    c = text.astype("int64").to_numpy() if len(text) else np.zeros(0, np.int64)
    keep = idx >= 0
    return np.bincount(idx[keep], weights=c[keep], minlength=bins.m).astype(np.int64)


def _record_bins(values: np.ndarray, bins: Bins, what: str, column: str) -> np.ndarray:
    if bins.edges is None:
        return bins.index_of_labels(values)
    v = np.char.strip(values.astype(str))
    try:
        num = v.astype(float)
    except ValueError:
        bad = next(i for i, s in enumerate(v) if not _is_number(s))
        raise InputError(f"{what}: row {bad + 2}: field {column!r}: expected a number, got {v[bad][:40]!r}") from None
    return bins.index_of_values(num)


def _is_number(s: str) -> bool:
    try:
        float(s)
    except ValueError:
        return False
    return True


def read_data(path: str | Path, bins: Bins | None, *, column: str | None = None, name: str | None = None,
              structure_from_data: bool = False, max_bytes: int = MAX_BYTES) -> HistogramData:
    """Counts or records from ``path``, on the declared ``bins`` (or, with ``structure_from_data``, bins read
    from the records — not private, and said so)."""
    return parse_data(_read_capped(path, "input", max_bytes), name or Path(str(path)).stem, bins, column=column,
                      structure_from_data=structure_from_data, what=f"input {str(path)[:200]!r}")


def parse_data(raw: bytes, name: str, bins: Bins | None, *, column: str | None = None,
               structure_from_data: bool = False, what: str | None = None,
               declared_as: str = "--bins") -> HistogramData:
    """:func:`read_data` on bytes already read (an upload), capped at :data:`MAX_BYTES` by the caller."""
    what = what or f"file {name[:200]!r}"
    if len(raw) > MAX_BYTES:
        raise InputError(f"{what}: {len(raw):,} bytes, above the cap of {MAX_BYTES:,} bytes")
    df = _frame(raw, what)
    counts = _is_counts(list(df.columns))
    col = "bin" if counts else (column or str(df.columns[0]))
    if col not in df.columns:
        raise InputError(f"{what}: no column {col!r}; columns are {', '.join(map(str, df.columns[:10]))}")
    structure = StructureSource("declared", declared_as)
    if bins is None:
        if not structure_from_data:
            from dpviz.core.structure import missing_declaration

            raise missing_declaration("--bins", "the histogram's bins", "histogram")
        bins = Bins.from_labels(sorted(set(df[col].str.strip())))
        structure = StructureSource("data", "histogram")
    if counts:
        x = _counts(df, bins, what)
    else:
        idx = _record_bins(df[col].to_numpy(dtype=str), bins, what, col)
        x = np.bincount(idx[idx >= 0], minlength=bins.m).astype(np.int64)
    return HistogramData(bins, x, name, structure)


def load(spec: str | Path, *, bins: Bins | str | Path | None = None, column: str | None = None,
         structure_from_data: bool = False) -> HistogramData:
    """The ``load`` hook: ``sample:NAME`` (with its shipped declaration) or a file on declared ``bins``."""
    if str(spec).startswith(SAMPLE_PREFIX):
        return load_sample("histogram", str(spec))
    if bins is not None and not isinstance(bins, Bins):
        bins = read_bins(bins)
    return read_data(spec, bins, column=column, structure_from_data=structure_from_data)


def is_counts_file(source: str | Path) -> bool:
    """Whether ``source`` (a file) is a counts file (columns ``bin`` and ``count``), not records: from its
    header alone (a Parquet schema, or a CSV's first line through the capped reader), not the whole file."""
    import csv

    from dpviz.core.reader import open_capped
    from dpviz.core.records import is_parquet, parquet_names

    label = f"input {str(source)[:200]!r}"
    if is_parquet(source):
        return _is_counts(parquet_names(source, max_bytes=MAX_BYTES, label=label, wording=WORDING))
    with open_capped(source, max_bytes=MAX_BYTES, label=label, wording=WORDING) as stream:
        head = stream.read(1 << 16)
    line = head.split(b"\n", 1)[0].decode("utf-8-sig", "replace").rstrip("\r")  # the file is checked when read
    return _is_counts([c.strip() for c in next(csv.reader([line]), [])])


def canonical_bytes(source: str | Path, data: HistogramData | None = None) -> bytes:
    """The ``canonical_bytes`` hook: the ledger's identity of the records (see :data:`CANONICAL`), independent of
    the bins declared for them, so that releasing the same records on other bins charges the same dataset."""
    if str(source).startswith(SAMPLE_PREFIX):
        from dpviz.histogram.samples import sample_values

        values = sample_values(str(source).removeprefix(SAMPLE_PREFIX))
        return "\n".join(sorted(values)).encode() + b"\n"
    df = _frame(_read_capped(source, "input", MAX_BYTES), f"input {str(source)[:200]!r}")
    if _is_counts(list(df.columns)):
        lines = sorted(f"{b.strip()},{c.strip()}" for b, c in zip(df["bin"], df["count"], strict=True))
    else:  # every column of every record: the same records on any --column or --bins are one dataset
        lines = sorted(df.apply(lambda col: col.str.strip()).agg(",".join, axis=1)) if len(df) else []
    return ("\n".join(lines) + "\n").encode()


def bins_template(data: HistogramData) -> str:
    """``describe-structure``: a declaration template read from the data (to review before a release)."""
    from dpviz.core.structure import DESCRIBE_NOTICE

    return json.dumps({"notice": DESCRIBE_NOTICE, **data.bins.as_dict()}, indent=1) + "\n"
