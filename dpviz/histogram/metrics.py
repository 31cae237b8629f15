"""Error of a histogram against the truth (simulation only): per bin and on range queries.

A range query [lo, hi] sums bins lo..hi; it is answered from prefix sums of the released bins (vectorised).
The error on random ranges is what a hierarchy improves over flat counts: a long range of a flat histogram
sums ~m noisy counts, the hierarchy ~2(b − 1)·log_b m (Hay et al., PVLDB 2010, Sec. 3).
"""

from __future__ import annotations

import numpy as np

__all__ = ["random_ranges", "range_answers", "rmse_bins", "rmse_ranges"]


def random_ranges(m: int, q: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """q ranges [lo, hi] (inclusive, lo ≤ hi) uniformly over the pairs of bins."""
    a = rng.integers(0, m, size=q)
    b = rng.integers(0, m, size=q)
    return np.minimum(a, b), np.maximum(a, b)


def range_answers(values: np.ndarray, ranges: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """Σ values[lo..hi] for every range, from one prefix-sum vector."""
    c = np.concatenate([[0.0], np.cumsum(np.asarray(values, dtype=float))])
    lo, hi = ranges
    return c[hi + 1] - c[lo]


def rmse_bins(released: np.ndarray, x: np.ndarray) -> float:
    return float(np.sqrt(np.mean((np.asarray(released, dtype=float) - x) ** 2)))


def rmse_ranges(released: np.ndarray, x: np.ndarray, ranges: tuple[np.ndarray, np.ndarray]) -> float:
    err = range_answers(released, ranges) - range_answers(x, ranges)
    return float(np.sqrt(np.mean(err ** 2)))
