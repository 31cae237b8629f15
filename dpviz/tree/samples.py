"""The tree capability's bundled samples (the registry's :class:`~dpviz.core.registry.Sample` loaders).

``sample:county``: US resident population by county, 1 July 2019 (Census Bureau, Vintage 2019), the
hierarchy region > division > state > county, read from ``dpviz/assets/`` (built by
``tools/build_assets.py``; provenance and checksums in ``dpviz/assets/SOURCES.md``) and joined onto its
bundled public declaration (:func:`dpviz.tree.hierarchy.sample_hierarchy`), so that the released nodes
are the declared ones (:mod:`dpviz.tree.hierarchy`).
"""

from __future__ import annotations

from dpviz.core.assets import asset
from dpviz.tree.model import TreeData

__all__ = ["COUNTY_POPULATION_CSV", "load_county_sample", "declared_county_sample", "load_county_population"]

COUNTY_POPULATION_CSV = "us_county_population_2019.csv"
"""The bundled county table: ``region,division,state,county,population`` (3,142 rows, total 328,239,523)."""


def declared_county_sample() -> TreeData:
    """``sample:county`` joined onto its bundled declaration (the public list of US counties)."""
    from dpviz.tree.hierarchy import join_counts, sample_hierarchy
    from dpviz.tree.io import load_tree_file

    data = load_tree_file(asset(COUNTY_POPULATION_CSV), name="sample:county")
    hier = sample_hierarchy("county")
    return data if hier is None else join_counts(hier, data)


def load_county_sample() -> TreeData:
    """``sample:county`` (the registry's loader): the county population tree on its declaration."""
    return declared_county_sample()


def load_county_population():
    """The bundled county table as a fresh ``pandas.DataFrame`` (callers may modify it): 3,142 rows with columns
    ``region`` (4 Census regions), ``division`` (9 Census divisions), ``state`` (50 states + District of
    Columbia), ``county`` (unique within its state) and ``population`` (int64, total 328,239,523), ordered by
    state and county FIPS code. The hierarchy is region > division > state > county."""
    import pandas as pd  # only this table view needs pandas (the tree loaders do not)

    text = ["region", "division", "state", "county"]
    dtypes = {col: str for col in text} | {"population": "int64"}
    df = pd.read_csv(asset(COUNTY_POPULATION_CSV), encoding="utf-8", dtype=dtypes, keep_default_na=False)
    return df[text + ["population"]]
