"""Declared public structure: the one vocabulary every capability's release uses.

The structure a release publishes (tree hierarchy, graph vertex set, marginal domain, histogram bins,
stream horizon) comes from a **declaration** the curator passes (``--hierarchy``, ``--nodes``/``--n-nodes``,
``--domain``), never from the records, unless the user opts out with ``--structure-from-data``; then every
output and ``.meta.json`` carries :data:`STRUCTURE_FROM_DATA_NOTICE`. Records outside the declaration are
dropped or clamped as the declaration says, and **how many were is never published** (not in the output, the
metadata, stdout or a page).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any, Literal

from dpviz.errors import InputError

__all__ = ["STRUCTURE_FROM_DATA_NOTICE", "STRUCTURE_FROM_DATA_FLAG", "DESCRIBE_NOTICE", "StructureSource",
           "add_structure_from_data_arg", "missing_declaration"]

STRUCTURE_FROM_DATA_FLAG = "--structure-from-data"
STRUCTURE_FROM_DATA_NOTICE = "structure read from the data: not private"
"""Said by every output (CSV comment/column, ``.meta.json``, stdout, page) of a release that opted out (a ``tree
release`` CSV, often 10^6 rows, says it once in its ``.meta.json`` and ``data`` in its ``structure`` column)."""
DESCRIBE_NOTICE = ("this declaration template was read from the data: review it (add every public value, remove "
                   "what is not public) before using it to release")


@dataclass(frozen=True)
class StructureSource:
    """Where a release's public structure came from: ``declared`` (a file or a sample's shipped
    declaration, named by ``origin``) or ``data`` (the explicit opt-out)."""

    kind: Literal["declared", "data"]
    origin: str

    @property
    def private(self) -> bool:
        return self.kind == "declared"

    def as_dict(self) -> dict[str, Any]:
        """The ``structure`` entry of a release's ``.meta.json``."""
        if self.kind == "data":
            return {"source": "data", "notice": STRUCTURE_FROM_DATA_NOTICE}
        return {"source": "declared", "declaration": self.origin}

    @property
    def describe(self) -> str:
        return STRUCTURE_FROM_DATA_NOTICE if self.kind == "data" else f"declared public structure ({self.origin})"


def add_structure_from_data_arg(p: argparse.ArgumentParser, what: str) -> None:
    """The explicit opt-out flag, the same in every release command."""
    p.add_argument(STRUCTURE_FROM_DATA_FLAG, action="store_true",
                   help=f"opt out of declaring {what}: read it from the records instead. NOT private; every output "
                        f"then says so ('{STRUCTURE_FROM_DATA_NOTICE}'; a table's structure column may say 'data')")


def missing_declaration(flag: str, what: str, capability: str) -> InputError:
    """The one-line refusal of a release given no declaration."""
    return InputError(f"{flag}: a release publishes {what}, which must be declared, not read from the records: "
                      f"pass {flag} FILE (write a template with `python -m dpviz {capability} describe-structure DATA "
                      f"--output FILE` and review it), or {STRUCTURE_FROM_DATA_FLAG} to opt out (not private)")
