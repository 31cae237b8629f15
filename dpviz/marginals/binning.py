"""Categorical coding of raw CSV values for marginals (:func:`dpviz.marginals.io.read_table`): missing values,
numeric columns cut into equal-frequency or equal-width intervals, labels of the intervals.

A column's distinct raw values are gathered while the file is read (:class:`Column`); :func:`categorise` then
maps them to categories: missing tokens (:data:`MISSING_TOKENS`) to the category :data:`MISSING` (the last one),
a numeric column with more distinct values than its bins to intervals ``[a, b)`` (the last one closed), every
other column to its sorted values. Bin edges come from the data: they are not differentially private (the
Dataset's ``structure`` says so). The declared-domain coder (:mod:`dpviz.marginals.declared`) labels its bins
the same way (:func:`interval_labels`).
"""

from __future__ import annotations

import math
import re
from array import array
from itertools import pairwise

import numpy as np

from dpviz.errors import InputError

__all__ = ["MISSING", "MISSING_TOKENS", "NUMBER", "Column", "categorise", "check_bins", "interval_labels",
           "edge_labels", "quantile_bins", "fmt_number"]

MISSING = "(missing)"
"""The category of a missing value (an empty field, ``NA``, ``N/A``, ``NaN``, ``null`` or ``(missing)``
itself, so that labels written out read back the same; any case)."""
MISSING_TOKENS = frozenset({"", "na", "n/a", "nan", "null", MISSING})
"""Values (stripped, lower-cased) read as missing."""
NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
"""A number as a CSV cell may spell it (a column whose present values all match is numeric)."""


def check_bins(bins: int | dict[str, int]) -> None:
    def ok(b: object) -> bool:
        return isinstance(b, (int, np.integer)) and not isinstance(b, bool) and b >= 2

    if isinstance(bins, dict):
        for col, b in bins.items():
            if not ok(b):
                raise InputError(f"bins for column {col!r}: expected a whole number >= 2, got {b!r}")
    elif not ok(bins):
        raise InputError(f"bins: expected a whole number >= 2 (or a dict of them by column), got {bins!r}")


def fmt_number(x: float, precision: int) -> str:
    """A short label for the number x (integers without a decimal point)."""
    x = float(x)
    if x == 0:
        return "0"
    if x.is_integer() and abs(x) < 1e15:
        return str(int(x))
    if not 1e-6 <= abs(x) < 1e15:
        return f"{x:.{precision}g}"
    digits = max(precision, math.floor(math.log10(abs(x))) + 2)  # keep a decimal of 59999.4
    return np.format_float_positional(x, precision=digits, unique=True, fractional=False, trim="-")


def edge_labels(edges: np.ndarray) -> list[str]:
    """Labels of the edges, with the fewest significant digits (≥ 4) that keep distinct edges distinct."""
    uniq = sorted({float(e) for e in edges})
    for p in range(4, 18):
        labels = {e: fmt_number(e, p) for e in uniq}
        if len(set(labels.values())) == len(labels):
            break
    else:
        labels = {e: repr(e) for e in uniq}
    return [labels[float(e)] for e in edges]


def interval_labels(edges: np.ndarray) -> list[str]:
    """``[a, b)`` for consecutive edges, the last ``[a, b]`` (it holds the maximum)."""
    lab = edge_labels(edges)
    out = [f"[{a}, {b})" for a, b in pairwise(lab)]
    out[-1] = out[-1][:-1] + "]"
    return out


def quantile_bins(values: np.ndarray, counts: np.ndarray, bins: int) -> np.ndarray:
    """Bin index of each distinct sorted value: equal-frequency bins that never split tied values.

    Greedy: each bin takes whole runs of equal values until its count is closest to the remaining
    rows divided by the remaining bins. So a value covering many rows gets a bin of its own (e.g. the
    0 of a mostly-zero column) and the rest is split evenly; every bin is non-empty, at most ``bins``.
    """
    m = len(values)
    out = np.empty(m, dtype=np.int64)
    remaining, left, j, b = int(counts.sum()), bins, 0, 0
    while j < m:
        if left == 1:
            out[j:] = b
            break
        target = remaining / left
        acc = int(counts[j])
        k = j + 1
        while k < m and acc < target:
            nxt = acc + int(counts[k])
            if abs(nxt - target) > abs(acc - target):
                break
            acc, k = nxt, k + 1
        if k == m and k - j > 1 and b == 0:  # never put everything in the first bin
            k -= 1
            acc -= int(counts[k])
        out[j:k] = b
        remaining -= acc
        left -= 1
        j, b = k, b + 1
    return out


class Column:
    """Distinct raw values of one column (in order of appearance), codes, first line of each value."""

    __slots__ = ("codes", "index", "lines", "name")

    def __init__(self, name: str) -> None:
        self.name = name
        self.index: dict[str, int] = {}
        self.codes = array("i")  # 4 bytes a row (rows, so distinct values, are capped below 2**31)
        self.lines = array("q")


def categorise(col: Column, bins: int, binning: str,
                bins_given: bool) -> tuple[np.ndarray, list[str], tuple[float, ...] | None]:
    """(code of each row, category labels, bin edges if the column was cut into intervals) of one parsed
    column."""
    keys = list(col.index)
    raw_codes = np.frombuffer(col.codes, dtype=np.intc) if len(col.codes) else np.zeros(0, np.intc)
    counts = np.bincount(raw_codes, minlength=len(keys))
    missing = np.array([k.lower() in MISSING_TOKENS for k in keys], dtype=bool)
    values = np.full(len(keys), np.nan)
    text_at = None
    for i, k in enumerate(keys):
        if missing[i]:
            continue
        if NUMBER.fullmatch(k):
            v = float(k)
            if math.isfinite(v):
                values[i] = v
                continue
        text_at = i if text_at is None else text_at
    present = ~missing
    numeric = text_at is None and present.any()
    if bins_given and not numeric and present.any():
        raise InputError(f"column {col.name!r} is not numeric (line {col.lines[text_at]}: {keys[text_at]!r}); "
                         "bins apply to numeric columns only")
    mapping = np.empty(len(keys), dtype=np.int64)
    cut: tuple[float, ...] | None = None
    if numeric:
        uniq, inverse = np.unique(values[present], return_inverse=True)
        if len(uniq) > bins:
            ucounts = np.bincount(inverse, weights=counts[present], minlength=len(uniq)).astype(np.int64)
            if binning == "quantile":
                which = quantile_bins(uniq, ucounts, bins)
                starts = np.flatnonzero(np.r_[True, which[1:] != which[:-1]])
                edges = np.r_[uniq[starts], uniq[-1]]
            else:
                lo, hi = uniq[0], uniq[-1]
                t = np.linspace(0.0, 1.0, bins + 1)
                edges = np.unique(np.clip(np.r_[lo, lo * (1 - t[1:-1]) + hi * t[1:-1], hi], lo, hi))
                if len(edges) < 3:
                    raise InputError(f"column {col.name!r}: its values span too small a range to cut into "
                                     f"{bins} bins of equal width; use binning='quantile'")
                which = np.clip(np.searchsorted(edges, uniq, side="right") - 1, 0, len(edges) - 2)
            labels = interval_labels(edges)
            cut = tuple(float(e) for e in edges)
            mapping[present] = which[inverse]
        else:
            labels = [fmt_number(v, 17) if float(v).is_integer() and abs(v) < 1e15 else repr(float(v)) for v in uniq]
            mapping[present] = inverse
    else:
        text = sorted({k for k, m in zip(keys, missing, strict=True) if not m})
        pos = {k: i for i, k in enumerate(text)}
        mapping[present] = [pos[k] for k, m in zip(keys, missing, strict=True) if not m]
        labels = text
    if missing.any():
        mapping[missing] = len(labels)
        labels = [*labels, MISSING]
    if len(labels) < 2:
        if not present.any():
            raise InputError(f"column {col.name!r} is empty (every value is missing); drop it")
        raise InputError(f"column {col.name!r} has a single value {labels[0]!r}; drop it")
    return mapping[raw_codes], labels, cut
