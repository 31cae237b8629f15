"""Real sample data bundled with dpviz, shipped inside the package as package data (``dpviz/assets/``;
provenance, licences and checksums in ``dpviz/assets/SOURCES.md``).

:func:`asset` is the one locator of a bundled file: every loader of bundled data (each capability's
``samples.py``: the tree, stream, marginals and graph samples) finds its file through it, by
:mod:`importlib.resources`, so the data is found the same way in a checkout, an editable install and an
installed wheel (never by a path relative to the repository). Loaders never touch the network.
"""

from __future__ import annotations

import atexit
from contextlib import ExitStack
from importlib import resources
from pathlib import Path

__all__ = ["asset", "ASSETS_DIR"]

ASSETS_DIR = "assets"
"""The folder of bundled data inside the ``dpviz`` package."""

_EXTRACTED = ExitStack()  # temporary copies of files of a zipped package, removed at exit
atexit.register(_EXTRACTED.close)


def asset(name: str) -> Path:
    """The path of the bundled file ``name`` (``"us_county_population_2019.csv"``, ``"graphs/karate.csv.gz"``,
    ``"SOURCES.md"``).

    A real file for an installed or checked-out package; for a package imported from a zip archive, a
    temporary copy kept until the interpreter exits. FileNotFoundError, saying how to rebuild it, if the
    file is not there.
    """
    parts = [p for p in str(name).split("/") if p]
    if not parts or any(p in (".", "..") for p in parts):
        raise ValueError(f"asset: expected a file name inside dpviz/{ASSETS_DIR}/, got {name!r}")
    ref = resources.files("dpviz").joinpath(ASSETS_DIR, *parts)
    if not ref.is_file():
        tool = "tools/extract_graphs.py" if parts[0] == "graphs" else "tools/build_assets.py"
        raise FileNotFoundError(f"bundled data file dpviz/{ASSETS_DIR}/{'/'.join(parts)} is missing; rebuild it "
                                f"with `python {tool}` (or reinstall dpviz)")
    if isinstance(ref, Path):
        return ref
    return _EXTRACTED.enter_context(resources.as_file(ref))
