"""Loaders for the real tree and stream samples bundled in ``dpviz/assets/`` (US county populations,
daily flights, hourly bike rentals).

Each loader reads one small CSV built by ``tools/build_assets.py``, located by :func:`dpviz.data.asset`
(package data, :mod:`importlib.resources`), and returns a fresh ``pandas.DataFrame`` with fixed column
names and dtypes, so callers may modify the result. Provenance, licences, transformations and checksums
are documented in ``dpviz/assets/SOURCES.md``.

``STREAM_SAMPLES`` maps human-readable labels of the two event-count time series to their loaders
(for pickers in the dashboard and the CLI).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pandas as pd

from dpviz.data import asset

ASSETS: Path = asset("SOURCES.md").parent
"""The folder of the bundled files. Prefer :func:`dpviz.data.asset` (``asset(name)``), which also works
for a zipped package; kept for callers that still join paths to it."""

COUNTY_POPULATION_CSV = "us_county_population_2019.csv"
FLIGHTS_DAILY_CSV = "flights_daily_2001.csv"
BIKE_HOURLY_CSV = "bike_hourly_2011_2012.csv"


def _read(name: str, **kwargs) -> pd.DataFrame:
    return pd.read_csv(asset(name), encoding="utf-8", **kwargs)


def load_county_population() -> pd.DataFrame:
    """US resident population by county, 1 July 2019 (Census Bureau, Vintage 2019 estimates).

    Returns 3,142 rows with columns ``region`` (4 Census regions), ``division`` (9 Census divisions),
    ``state`` (50 states + District of Columbia), ``county`` (unique within its state) and
    ``population`` (int64, total 328,239,523), ordered by state and county FIPS code. The hierarchy
    is region > division > state > county.
    """
    text = ["region", "division", "state", "county"]
    dtypes = {col: str for col in text} | {"population": "int64"}
    df = _read(COUNTY_POPULATION_CSV, dtype=dtypes, keep_default_na=False)
    return df[text + ["population"]]


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
