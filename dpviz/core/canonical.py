"""Canonical serialisations for the ledger's dataset identities (the capabilities' ``canonical_bytes`` hooks).

A capability's ``canonical_bytes(source, data)`` (``dpviz/<cap>/io.py``) turns what it parsed into bytes that
do not depend on how the file was spelled (row order, separators, JSON or CSV); the ledger hashes them after
its ``dpviz-ledger/1 CAPABILITY`` line. These are the shared pieces, so every capability writes numbers and
row sets the same way.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

__all__ = ["number", "json_lines"]


def number(x: float) -> int | float:
    """``x`` as an int when it is integral (``3.0`` → ``3``), else as a float: one spelling per value."""
    x = float(x)
    return int(x) if x.is_integer() else x


def json_lines(rows: Iterable[Any]) -> bytes:
    """Sorted JSON lines (UTF-8, compact, non-ASCII kept): an order-free, unambiguous serialisation of a set
    of rows, each line ending in ``\\n``."""
    lines = sorted(json.dumps(r, ensure_ascii=False, separators=(",", ":")) for r in rows)
    return ("\n".join(lines) + "\n").encode("utf-8")
