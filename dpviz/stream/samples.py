"""The bundled count streams (``sample:flights``, ``sample:bike``): small CSVs in ``dpviz/assets/`` built by
``tools/build_assets.py`` and found by :func:`dpviz.core.assets.asset` (package data); provenance, licences,
transformations and checksums are in ``dpviz/assets/SOURCES.md``. Loaders never touch the network.

:func:`load_flights_daily` and :func:`load_bike_hourly` return a fresh ``pandas.DataFrame`` (time column,
``count``) with fixed names and dtypes, so callers may modify it; :func:`load_flights_sample` and
:func:`load_bike_sample` are the registry's ``sample:NAME`` loaders and return a
:class:`~dpviz.stream.model.StreamData`. :data:`STREAM_SAMPLES` maps human-readable labels to the frame loaders.
"""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from dpviz.core.assets import asset
from dpviz.stream.model import StreamData

__all__ = ["FLIGHTS_DAILY_CSV", "BIKE_HOURLY_CSV", "load_flights_daily", "load_bike_hourly", "STREAM_SAMPLES",
           "load_flights_sample", "load_bike_sample"]

FLIGHTS_DAILY_CSV = "flights_daily_2001.csv"
BIKE_HOURLY_CSV = "bike_hourly_2011_2012.csv"


def _read(name: str, **kwargs) -> pd.DataFrame:
    return pd.read_csv(asset(name), encoding="utf-8", **kwargs)


def load_flights_daily() -> pd.DataFrame:
    """Number of US domestic flights per day, 2001-01-01 to 2001-06-30 (BTS via vega-datasets).

    Returns 181 rows, one per consecutive day, with ``date`` (datetime64, midnight) and ``count``
    (int64, between about 14k and 17.5k).
    """
    df = _read(FLIGHTS_DAILY_CSV, dtype={"count": "int64"})
    df["date"] = pd.to_datetime(df["date"], format="%Y-%m-%d")
    return df[["date", "count"]]


def load_bike_hourly(complete_hours: bool = False) -> pd.DataFrame:
    """Capital Bikeshare rentals per hour, 2011-2012 (UCI Bike Sharing Dataset), in local time.

    Returns ``timestamp`` (datetime64, hour start, strictly increasing) and ``count`` (int64).
    The original data has 17,379 rows: 165 of the 17,544 hours are absent (mostly quiet night hours
    and storm closures; no recorded hour has a zero count). With ``complete_hours=True`` the series
    is reindexed to every hour from 2011-01-01 00:00 to 2012-12-31 23:00, with 0 for absent hours.
    """
    df = _read(BIKE_HOURLY_CSV, dtype={"count": "int64"})
    df["timestamp"] = pd.to_datetime(df["timestamp"], format="%Y-%m-%d %H:%M")
    df = df[["timestamp", "count"]]
    if complete_hours:
        grid = pd.date_range("2011-01-01 00:00", "2012-12-31 23:00", freq="h", name="timestamp")
        df = (df.set_index("timestamp")["count"].reindex(grid, fill_value=0)
              .astype("int64").reset_index())
    return df


STREAM_SAMPLES: dict[str, Callable[[], pd.DataFrame]] = {
    "US domestic flights per day, Jan–Jun 2001": load_flights_daily,
    "Capital Bikeshare rentals per hour, 2011–12": load_bike_hourly,
}
"""Event-count time series by human-readable label; each loader returns (time column, ``count``)."""


def _stream(df: pd.DataFrame, tcol: str) -> StreamData:
    return StreamData(counts=df["count"].to_numpy(dtype=float), timestamps=df[tcol].to_numpy(),
                      count_column="count", time_column=tcol)


def load_flights_sample() -> StreamData:
    """``sample:flights``: US domestic flights per day, Jan–Jun 2001 (181 steps)."""
    return _stream(load_flights_daily(), "date")


def load_bike_sample() -> StreamData:
    """``sample:bike``: Capital Bikeshare rentals per hour, 2011–12 (all 17,544 hours, 0 where absent)."""
    return _stream(load_bike_hourly(complete_hours=True), "timestamp")
