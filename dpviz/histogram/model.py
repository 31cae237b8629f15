"""The histogram's data type: declared ordered bins and the private count of records in each."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from dpviz.core.structure import StructureSource
from dpviz.errors import InputError

__all__ = ["Bins", "HistogramData", "MAX_BINS"]

MAX_BINS = 1_000_000
"""The most bins a declaration may have (the hierarchy over them has fewer than 2× as many nodes for b ≥ 2)."""


def _label(lo: float, hi: float) -> str:
    return f"[{lo:g}, {hi:g})"


@dataclass(frozen=True, eq=False)
class Bins:
    """The public ordered domain: ``labels`` in order and, for a numeric domain, the ``edges`` (m + 1 increasing
    numbers: bin i is [edges[i], edges[i+1]))."""

    labels: tuple[str, ...]
    edges: np.ndarray | None = None

    def __post_init__(self) -> None:
        m = len(self.labels)
        if not 2 <= m <= MAX_BINS:
            raise InputError(f"bins: expected 2..{MAX_BINS:,} bins, got {m:,}")
        if len(set(self.labels)) != m:
            seen: set[str] = set()
            dup = next(lab for lab in self.labels if lab in seen or seen.add(lab))  # type: ignore[func-returns-value]
            raise InputError(f"bins: the label {dup!r} is declared twice")
        if self.edges is not None:
            e = np.asarray(self.edges, dtype=float)
            if e.shape != (m + 1,) or not np.all(np.isfinite(e)) or not np.all(np.diff(e) > 0):
                raise InputError("bins: edges must be m + 1 finite, strictly increasing numbers")
            object.__setattr__(self, "edges", e)

    @property
    def m(self) -> int:
        return len(self.labels)

    @classmethod
    def from_edges(cls, edges: object) -> Bins:
        try:
            e = np.asarray(edges, dtype=float)
        except (TypeError, ValueError):
            raise InputError("bins: edges must be numbers") from None
        if e.ndim != 1 or e.size < 3:
            raise InputError("bins: expected at least 3 edges (2 bins)")
        return cls(tuple(_label(a, b) for a, b in zip(e[:-1], e[1:], strict=True)), e)

    @classmethod
    def from_range(cls, low: float, high: float, width: float) -> Bins:
        """Bins [low, low + width), ..., up to ``high`` (the last bin ends at or after ``high``)."""
        low, high, width = float(low), float(high), float(width)
        if not (math.isfinite(low) and math.isfinite(high) and math.isfinite(width)) or width <= 0 or high <= low:
            raise InputError(f"bins: expected low < high and width > 0, got {low:g}, {high:g}, {width:g}")
        m = math.ceil((high - low) / width - 1e-9)
        if m > MAX_BINS:
            raise InputError(f"bins: {m:,} bins of width {width:g}; at most {MAX_BINS:,}")
        return cls.from_edges(low + width * np.arange(m + 1))

    @classmethod
    def from_labels(cls, labels: object) -> Bins:
        if not isinstance(labels, (list, tuple)) or not all(isinstance(s, str) for s in labels):
            raise InputError("bins: labels must be a list of strings, in order")
        return cls(tuple(labels))

    def index_of_values(self, values: np.ndarray) -> np.ndarray:
        """The bin of each numeric value, −1 outside the declared edges (vectorised; needs edges)."""
        if self.edges is None:
            raise InputError("bins: records are numbers but the bins are declared by labels; declare edges")
        v = np.asarray(values, dtype=float)
        i = np.searchsorted(self.edges, v, side="right") - 1
        return np.where((i >= 0) & (i < self.m) & np.isfinite(v), i, -1)

    def index_of_labels(self, labels: np.ndarray) -> np.ndarray:
        """The bin of each label, −1 for a label that is not declared (vectorised)."""
        order = np.argsort(np.asarray(self.labels, dtype=object).astype(str))
        sorted_labels = np.asarray(self.labels, dtype=str)[order]
        q = np.asarray(labels, dtype=str)
        pos = np.clip(np.searchsorted(sorted_labels, q), 0, self.m - 1)
        return np.where(sorted_labels[pos] == q, order[pos], -1)

    def as_dict(self) -> dict[str, object]:
        if self.edges is not None:
            return {"edges": [float(x) for x in self.edges]}
        return {"labels": list(self.labels)}


@dataclass(frozen=True, eq=False)
class HistogramData:
    """Declared ``bins`` and the private count ``x`` of records in each (int64, bin order)."""

    bins: Bins
    x: np.ndarray
    name: str = "histogram"
    structure: StructureSource = field(default=StructureSource("declared", "bins"))

    def __post_init__(self) -> None:
        x = np.asarray(self.x)
        if x.shape != (self.bins.m,):
            raise InputError(f"{self.name}: {x.shape[0] if x.ndim == 1 else x.shape} counts for {self.bins.m} bins")
        if x.dtype.kind not in "iu":
            if not np.all(np.isfinite(x)) or not np.array_equal(np.rint(x), x):
                raise InputError(f"{self.name}: bin counts must be integers")
            x = x.astype(np.int64)
        if np.any(x < 0):
            raise InputError(f"{self.name}: bin {self.bins.labels[int(np.flatnonzero(x < 0)[0])]!r}: negative count")
        object.__setattr__(self, "x", x.astype(np.int64, copy=False))

    @property
    def total(self) -> int:
        return int(self.x.sum())
