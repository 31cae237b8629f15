"""Read a count stream from a CSV (upload or file): a count column and an optional timestamp column.

Errors are :class:`~dpviz.errors.InputError` naming the row (1-based data row; the file line is
row + 1 because of the header) and what was expected.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import numpy as np
import pandas as pd

from dpviz.errors import InputError

MAX_STEPS = 1 << 20
COUNT_NAMES = ("count", "counts", "value", "n")
TIME_NAMES = ("timestamp", "date", "time", "datetime", "period")


@dataclass(frozen=True)
class StreamData:
    """A parsed stream: ``counts`` (float64, >= 0) and optional ``timestamps`` (datetime64)."""

    counts: np.ndarray
    timestamps: np.ndarray | None
    count_column: str
    time_column: str | None

    def __len__(self) -> int:
        return int(self.counts.size)


def read_stream_csv(
    source: str | Path | bytes | IO,
    *,
    count_column: str | None = None,
    time_column: str | None = None,
    max_steps: int = MAX_STEPS,
) -> StreamData:
    """Parse a CSV with a header. The count column is ``count_column`` or one named count/counts/value/n,
    or the only column; the time column is ``time_column`` or one named timestamp/date/time/...
    """
    if isinstance(source, bytes):
        source = io.BytesIO(source)
    try:
        df = pd.read_csv(source, dtype=str, keep_default_na=False, skipinitialspace=True)
    except pd.errors.EmptyDataError:
        raise InputError("CSV: the file is empty; expected a header and at least one row of counts") from None
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise InputError(f"CSV: cannot parse the file ({str(exc).strip().splitlines()[0]})") from None
    if df.empty:
        raise InputError("CSV: no data rows; expected at least one row of counts after the header")
    if len(df) > max_steps:
        raise InputError(f"CSV: {len(df)} rows is too long; at most {max_steps} steps are supported")
    cols = {c.strip().lower(): c for c in df.columns}
    tcol = _pick(df, time_column, cols, TIME_NAMES, "time column", required=False)
    ccol = _pick(df, count_column, cols, COUNT_NAMES, "count column", required=False)
    if ccol is None:
        rest = [c for c in df.columns if c != tcol]
        if len(rest) != 1:
            raise InputError(
                f"CSV: cannot tell which column holds the counts among {list(df.columns)}; "
                "name it 'count' or pass the count column"
            )
        ccol = rest[0]
    counts = _counts(df[ccol], ccol)
    stamps = _timestamps(df[tcol], tcol) if tcol is not None else None
    return StreamData(counts=counts, timestamps=stamps, count_column=ccol, time_column=tcol)


def _pick(df: pd.DataFrame, given: str | None, cols: dict[str, str], names: tuple[str, ...],
          what: str, *, required: bool) -> str | None:
    if given is not None:
        if given in df.columns:
            return given
        if given.strip().lower() in cols:
            return cols[given.strip().lower()]
        raise InputError(f"CSV: {what} {given!r} not found; columns are {list(df.columns)}")
    for name in names:
        if name in cols:
            return cols[name]
    if required:
        raise InputError(f"CSV: no {what} found among {list(df.columns)}")
    return None


def _counts(col: pd.Series, name: str) -> np.ndarray:
    text = col.astype(str).str.strip()
    values = pd.to_numeric(text, errors="coerce").to_numpy(dtype=float)
    bad = np.flatnonzero(~np.isfinite(values))
    if bad.size:
        r = int(bad[0])
        shown = text.iloc[r]
        what = "is empty" if shown == "" else f"{shown!r} is not a finite number"
        raise InputError(f"row {r + 1} (line {r + 2}), column {name!r}: {what}; expected a non-negative count")
    neg = np.flatnonzero(values < 0)
    if neg.size:
        r = int(neg[0])
        raise InputError(f"row {r + 1} (line {r + 2}), column {name!r}: {text.iloc[r]} is negative; "
                         "expected a non-negative count")
    return values


def _timestamps(col: pd.Series, name: str) -> np.ndarray:
    text = col.astype(str).str.strip()
    stamps = pd.to_datetime(text, errors="coerce", format="mixed")
    bad = np.flatnonzero(stamps.isna().to_numpy())
    if bad.size:
        r = int(bad[0])
        raise InputError(f"row {r + 1} (line {r + 2}), column {name!r}: {text.iloc[r]!r} is not a date/time")
    return stamps.to_numpy()


def _bundled(alias: str) -> StreamData:
    from dpviz.data import samples

    if alias == "flights":
        df, tcol = samples.load_flights_daily(), "date"
    elif alias == "bike":
        df, tcol = samples.load_bike_hourly(complete_hours=True), "timestamp"
    else:  # pragma: no cover - the registry lists the names
        raise InputError(f"sample: unknown stream sample {alias!r}")
    return StreamData(counts=df["count"].to_numpy(dtype=float), timestamps=df[tcol].to_numpy(),
                      count_column="count", time_column=tcol)


def load_flights_sample() -> StreamData:
    """``sample:flights``: US domestic flights per day, Jan–Jun 2001 (181 steps)."""
    return _bundled("flights")


def load_bike_sample() -> StreamData:
    """``sample:bike``: Capital Bikeshare rentals per hour, 2011–12 (all 17,544 hours, 0 where absent)."""
    return _bundled("bike")


def load_source(source: str | Path, *, count_column: str | None = None,
                time_column: str | None = None) -> StreamData:
    """``sample:NAME`` (through :func:`dpviz.core.registry.load_sample`) or a CSV path."""
    from dpviz.core.registry import load_source as _load_source

    return _load_source("stream", source,
                        lambda p: read_stream_csv(p, count_column=count_column, time_column=time_column))
