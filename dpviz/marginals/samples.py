"""The bundled categorical tables (``sample:adult``, ``sample:titanic``) for marginals.

:func:`load_adult_sample` and :func:`load_titanic_sample`: the bundled UCI Adult (48,842 people, 14
attributes) and Titanic (1,312 passengers, 4 attributes) tables, built by ``tools/build_assets.py`` and coded
by the public domain declaration each ships (``dpviz/assets/*.domain.json``); provenance, licences and the
discretisation are in ``dpviz/assets/SOURCES.md`` (package data, found by :func:`dpviz.core.assets.asset`).
"""

from __future__ import annotations

import json
from functools import cache

import numpy as np
import pandas as pd

from dpviz.core.assets import asset
from dpviz.core.structure import StructureSource
from dpviz.marginals.model import Dataset, Domain

__all__ = ["load_adult_sample", "load_titanic_sample", "ADULT_CSV", "ADULT_DOMAIN_JSON", "TITANIC_CSV",
           "TITANIC_DOMAIN_JSON"]

ADULT_CSV = "adult_census_1994.csv.gz"
ADULT_DOMAIN_JSON = "adult_census_1994.domain.json"
TITANIC_CSV = "titanic_passengers.csv.gz"
TITANIC_DOMAIN_JSON = "titanic_passengers.domain.json"



@cache
def _bundled(csv_name: str, domain_name: str) -> tuple[Domain, np.ndarray, tuple[tuple[str, ...], ...], str]:
    """(domain, read-only codes, categories, name) of a bundled sample (read once per process)."""
    csv_path, domain_path = asset(csv_name), asset(domain_name)
    spec = json.loads(domain_path.read_text(encoding="utf-8"))
    attrs = [a["name"] for a in spec["attributes"]]
    with csv_path.open("rb") as f:
        df = pd.read_csv(f, compression="gzip", dtype=str, keep_default_na=False, encoding="utf-8")
    if list(df.columns) != attrs or len(df) != spec["rows"]:
        raise RuntimeError(f"bundled sample {csv_path} does not match {domain_path}; rebuild the assets")
    codes = np.empty((len(df), len(attrs)), dtype=np.int64)
    for k, a in enumerate(spec["attributes"]):
        c = pd.Categorical(df[a["name"]], categories=a["categories"]).codes
        if (c < 0).any():
            raise RuntimeError(f"bundled sample {csv_path}: column {a['name']!r} has a label outside its domain")
        codes[:, k] = c
    codes.flags.writeable = False
    categories = tuple(tuple(a["categories"]) for a in spec["attributes"])
    domain = Domain(tuple(attrs), tuple(len(c) for c in categories))
    return domain, codes, categories, spec["name"]


def _load_bundled(csv_name: str, domain_name: str) -> Dataset:
    """A bundled sample, coded by the public domain declaration it ships (``dpviz/assets/*.domain.json``)."""
    domain, codes, categories, name = _bundled(csv_name, domain_name)
    origin = f"sample:{name} (dpviz/assets/{domain_name})"
    return Dataset(domain, codes, categories, name, None, StructureSource("declared", origin))


def load_adult_sample() -> Dataset:
    """UCI Adult: 48,842 people (``adult.data`` then ``adult.test``), 14 categorical attributes.

    Attributes and sizes: age 9 (10-year bins), workclass 9, education 16 (ordered by years of
    education), education_num 16, marital_status 7, occupation 15, relationship 6, race 5, sex 2,
    capital_gain 5 and capital_loss 5 (0, then quartiles of the positive amounts), hours_per_week 10
    (10-hour bins), native_country 42, income 2. Missing values (UCI's ``?``) are the category
    ``(missing)``; ``fnlwgt`` is dropped. See ``dpviz/assets/SOURCES.md``.
    """
    return _load_bundled(ADULT_CSV, ADULT_DOMAIN_JSON)


def load_titanic_sample() -> Dataset:
    """Titanic passengers (no crew): 1,312 people, attributes class 3 (1st/2nd/3rd), sex 2, age_group 6
    (``[0, 13)``, ``[13, 20)``, ``[20, 40)``, ``[40, 60)``, ``[60, 80)``, ``(missing)``) and survived 2
    (no/yes): 72 cells. A small table for teaching. See ``dpviz/assets/SOURCES.md``."""
    return _load_bundled(TITANIC_CSV, TITANIC_DOMAIN_JSON)
