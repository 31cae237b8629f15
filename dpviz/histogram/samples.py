"""Bundled histograms, each with its shipped declaration (the bins come from the data's documentation, not the
records):

* ``education`` — UCI Adult (1994 US Census extract, 48,842 people): years of education ``education_num`` 1..16,
  one bin per value (documented codes 1 = Preschool .. 16 = Doctorate).
* ``bike-hours`` — Capital Bikeshare 2011–12 (17,379 hours): hours by the exact number of rentals in the hour, one
  bin per count 0..999 (1,000 bins; the system's hourly counts stay below 1,000) — long enough for the hierarchy to
  beat flat counts on range queries, where the 16 education bins are not.

Sources: ``dpviz/assets/SOURCES.md``.
"""

from __future__ import annotations

import csv
import gzip
from functools import lru_cache

import numpy as np

from dpviz.core.structure import StructureSource
from dpviz.histogram.model import Bins, HistogramData

__all__ = ["load_education_sample", "load_bike_hours_sample", "sample_values", "SAMPLE_BINS"]

_EDUCATION = Bins(tuple(str(k) for k in range(1, 17)), np.arange(0.5, 17.0))
_RENTALS = Bins(tuple(str(k) for k in range(1000)), np.arange(-0.5, 1000.0))
SAMPLE_BINS = {"education": _EDUCATION, "bike-hours": _RENTALS}


def _asset(name: str):
    from importlib.resources import files

    return files("dpviz").joinpath("assets", name)


@lru_cache(maxsize=2)
def _values(name: str) -> tuple[str, ...]:
    if name == "education":
        with _asset("adult_census_1994.csv.gz").open("rb") as raw, gzip.open(raw, "rt", encoding="utf-8") as fh:
            return tuple(row["education_num"] for row in csv.DictReader(fh))
    with _asset("bike_hourly_2011_2012.csv").open("r", encoding="utf-8") as fh:
        return tuple(row["count"] for row in csv.DictReader(fh))


def sample_values(name: str) -> tuple[str, ...]:
    """The records of a sample as text (the ledger's canonical bytes use them)."""
    return _values(name)


def _load(name: str, title: str) -> HistogramData:
    bins = SAMPLE_BINS[name]
    idx = bins.index_of_values(np.asarray(_values(name), dtype=float))
    x = np.bincount(idx[idx >= 0], minlength=bins.m).astype(np.int64)
    return HistogramData(bins, x, title, StructureSource("declared", f"shipped with sample:{name}"))


def load_education_sample() -> HistogramData:
    return _load("education", "education")


def load_bike_hours_sample() -> HistogramData:
    return _load("bike-hours", "bike-hours")
