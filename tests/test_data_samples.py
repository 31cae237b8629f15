"""The bundled real sample data in dpviz/assets/ (package data, found by dpviz.core.assets.asset) loads with the
documented shape and facts: the county table (dpviz.tree.samples) and the count streams (dpviz.stream.samples)."""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import dpviz
from dpviz.core.assets import asset
from dpviz.stream import samples as stream_samples
from dpviz.stream.samples import STREAM_SAMPLES, load_bike_hourly, load_flights_daily
from dpviz.tree import samples as tree_samples
from dpviz.tree.samples import load_county_population

REGIONS = {"Northeast", "Midwest", "South", "West"}
DIVISIONS = {
    "New England", "Middle Atlantic", "East North Central", "West North Central", "South Atlantic",
    "East South Central", "West South Central", "Mountain", "Pacific",
}


def test_bundled_data_is_package_data():
    folder = Path(dpviz.__file__).resolve().parent / "assets"
    assert asset(tree_samples.COUNTY_POPULATION_CSV) == folder / tree_samples.COUNTY_POPULATION_CSV


def test_county_population():
    df = load_county_population()
    assert list(df.columns) == ["region", "division", "state", "county", "population"]
    assert df["population"].dtype == "int64"
    assert len(df) == 3142
    assert int(df["population"].sum()) == 328_239_523
    assert df["state"].nunique() == 51
    assert set(df["region"]) == REGIONS
    assert set(df["division"]) == DIVISIONS
    assert (df["population"] > 0).all()
    assert not df.isna().any().any()
    assert not df.duplicated(["state", "county"]).any()
    # The hierarchy is a tree: each state in one division, each division in one region.
    assert (df.groupby("state")["division"].nunique() == 1).all()
    assert (df.groupby("division")["region"].nunique() == 1).all()
    # A few published 2019 estimates.
    by_state = df.groupby("state")["population"].sum()
    assert by_state["California"] == 39_512_223
    assert by_state["Wyoming"] == 578_759
    la = df[(df.state == "California") & (df.county == "Los Angeles County")]
    assert la["population"].tolist() == [10_039_107]
    assert "Doña Ana County" in set(df.loc[df.state == "New Mexico", "county"])  # UTF-8 round trip


def test_flights_daily():
    df = load_flights_daily()
    assert list(df.columns) == ["date", "count"]
    assert pd.api.types.is_datetime64_dtype(df["date"])
    assert df["count"].dtype == "int64"
    assert len(df) == 181
    assert df["date"].iloc[0] == pd.Timestamp("2001-01-01")
    assert df["date"].iloc[-1] == pd.Timestamp("2001-06-30")
    assert df["date"].diff().iloc[1:].eq(pd.Timedelta("1D")).all()  # consecutive, increasing
    assert df["count"].between(10_000, 20_000).all()
    assert int(df["count"].sum()) == 2_999_994  # 3,000,000 minus the 6 records of 2001-07-01 00:00


def test_bike_hourly():
    df = load_bike_hourly()
    assert list(df.columns) == ["timestamp", "count"]
    assert pd.api.types.is_datetime64_dtype(df["timestamp"])
    assert df["count"].dtype == "int64"
    assert len(df) == 17_379
    assert df["timestamp"].is_monotonic_increasing and df["timestamp"].is_unique
    assert df["timestamp"].iloc[0] == pd.Timestamp("2011-01-01 00:00")
    assert df["timestamp"].iloc[-1] == pd.Timestamp("2012-12-31 23:00")
    assert (df["count"] >= 0).all()
    assert int(df["count"].sum()) == 3_292_679
    assert (df["timestamp"].dt.minute == 0).all()


def test_bike_hourly_complete_hours():
    df = load_bike_hourly(complete_hours=True)
    assert len(df) == 17_544  # 731 days x 24 h
    assert df["timestamp"].diff().iloc[1:].eq(pd.Timedelta("1h")).all()
    assert int((df["count"] == 0).sum()) == 165  # the hours absent from the original data
    assert int(df["count"].sum()) == 3_292_679
    assert df["count"].dtype == "int64"


@pytest.mark.parametrize("label", list(STREAM_SAMPLES))
def test_stream_samples(label):
    df = STREAM_SAMPLES[label]()
    assert df.columns[-1] == "count"
    assert pd.api.types.is_datetime64_dtype(df.iloc[:, 0])
    assert df.iloc[:, 0].is_monotonic_increasing and df.iloc[:, 0].is_unique
    assert (df["count"] >= 0).all()


def test_stream_sample_labels():
    assert set(STREAM_SAMPLES) == {
        "US domestic flights per day, Jan–Jun 2001",
        "Capital Bikeshare rentals per hour, 2011–12",
    }


def test_loaders_return_independent_frames():
    a = load_flights_daily()
    a.loc[0, "count"] = -1
    assert load_flights_daily().loc[0, "count"] == 14_828


def _sources_table() -> dict[str, tuple[int, str]]:
    text = asset("SOURCES.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\|\s*`([^`]+\.csv)`\s*\|\s*([\d,]+)\s*\|\s*[\d,]+\s*\|\s*`([0-9a-f]{64})`\s*\|",
                      text, flags=re.M)
    return {name: (int(n.replace(",", "")), sha) for name, n, sha in rows}


def test_sources_md_sha256_and_rows_match_files():
    table = _sources_table()
    assert set(table) == {tree_samples.COUNTY_POPULATION_CSV, stream_samples.FLIGHTS_DAILY_CSV,
                          stream_samples.BIKE_HOURLY_CSV,
                          "us_county_hierarchy_2019.csv"}
    for name, (rows, sha) in table.items():
        data = asset(name).read_bytes()
        assert hashlib.sha256(data).hexdigest() == sha, name
        assert data.count(b"\n") - 1 == rows, name  # minus the header line
        assert b"\r" not in data
        assert len(data) < 1_500_000


def test_sources_md_mentions_each_file_in_its_own_section():
    text = asset("SOURCES.md").read_text(encoding="utf-8")
    for name in _sources_table():
        if name != "us_county_hierarchy_2019.csv":  # described in the county's section: its level columns
            assert f"## `{name}`" in text
    assert "165 hours are absent" in text


def test_sample_loaders_do_not_import_streamlit():
    code = ("import sys, dpviz.stream.samples as s, dpviz.tree.samples as t; s.load_flights_daily(); "
            "t.load_county_population(); assert 'streamlit' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(dpviz.__file__).resolve().parents[1])


def test_stream_sample_loaders_give_the_registry_streams():
    from dpviz.core.registry import load_sample

    flights = load_sample("stream", "sample:flights")
    assert len(flights) == 181 and flights.time_column == "date" and flights.counts[0] == 14_828
    bike = stream_samples.load_bike_sample()
    assert len(bike) == 17_544 and bike.time_column == "timestamp" and int(bike.counts.sum()) == 3_292_679
