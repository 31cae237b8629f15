"""What a histogram release measures, and its sensitivity (unit of privacy: one record in one bin).

* **hierarchical** (Hay et al., PVLDB 2010, Sec. 3): a b-ary tree whose leaves are the m bins in order; node
  (ℓ, i) counts bins [i·b^ℓ, (i+1)·b^ℓ). One record changes one node per level, so the query set has Δ₁ = h and
  Δ₂ = √h for h levels (h = ⌈log_b m⌉ + 1); the tree engine's :class:`dpviz.tree.strategy.TreeLevels` measures
  it with a per-level budget split and :func:`dpviz.core.protocols.measure`.
* **flat** (Dwork et al., TCC 2006): one count per bin, Δ₁ = Δ₂ = 1 — the baseline a hierarchy must beat on
  long ranges.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from dpviz.core.noise import Family, Noise
from dpviz.errors import InputError

__all__ = ["BRANCHINGS", "check_branching", "hierarchy_parents", "levels", "Flat"]

BRANCHINGS = (2, 4, 8, 16)
"""Fan-outs offered (Qardaji, Yang & Li, "Understanding Hierarchical Methods for Differentially Private
Histograms", PVLDB 6(14), 2013, find b ≈ 16 best for range queries without consistency; with it, smaller b)."""


def check_branching(b: object) -> int:
    if isinstance(b, bool) or not isinstance(b, (int, np.integer)) or int(b) not in BRANCHINGS:
        raise InputError(f"branching: expected one of {', '.join(map(str, BRANCHINGS))}, got {b!r}")
    return int(b)


def levels(m: int, b: int) -> int:
    """h: the number of levels of the b-ary hierarchy over m ≥ 2 bins (root to leaves)."""
    h, size = 1, m
    while size > 1:
        size = -(-size // b)
        h += 1
    return h


def hierarchy_parents(m: int, b: int) -> np.ndarray:
    """The parent array of the b-ary hierarchy over m bins: the root first, then each level left to right, the m
    leaves last in bin order (so that the tree's leaf order is the bin order). Level sizes m, ⌈m/b⌉, ..., 1."""
    sizes = [m]
    while sizes[-1] > 1:
        sizes.append(-(-sizes[-1] // b))
    sizes = sizes[::-1]  # root level first
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    parent = np.empty(int(np.sum(sizes)), dtype=np.int64)
    parent[0] = -1
    for k in range(1, len(sizes)):  # one vectorised step per level (h ≤ 21 for m ≤ 10⁶)
        i = np.arange(sizes[k])
        parent[starts[k]:starts[k] + sizes[k]] = starts[k - 1] + i // b
    return parent


@dataclass(frozen=True)
class Flat:
    """One noisy count per bin: Δ₁ = Δ₂ = 1 (a core :class:`~dpviz.core.protocols.Strategy`)."""

    m: int
    name: str = "flat"

    def sensitivity(self, family: Family) -> float:
        return 1.0

    def scales(self, noise: Noise) -> np.ndarray:
        return np.full(self.m, noise.scale(1.0))

    def answer(self, data: Any) -> np.ndarray:
        return np.asarray(data.x)
