"""Error metrics of the paper's experiments (Sec. 6.2) and Theorem 5's analytic MSE."""

from __future__ import annotations

import numpy as np

from dpviz.tree.gmc import m_transpose
from dpviz.tree.model import Tree

__all__ = [
    "rmse_nq",
    "rmse_rq",
    "random_ranges",
    "consistency_bias",
    "negatives",
    "theorem5_mse",
    "error_by_level",
    "expected_error_by_level",
]


def rmse_nq(released: np.ndarray, true: np.ndarray) -> float:
    """rmse_NQ = sqrt((1/n) Σ_i (v_i^out - v_i)²) (Eq. 40)."""
    return float(np.sqrt(np.mean((np.asarray(released) - np.asarray(true)) ** 2)))


def random_ranges(m: int, q: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """q leaf ranges [a_i, b_i] (0-based, inclusive) drawn uniformly without repetition.

    When there are at most q ranges in all (m(m+1)/2), every range is returned.
    """
    total = m * (m + 1) // 2
    if total <= q:
        a, b = np.triu_indices(m)
        return a, b
    picked = np.unique(rng.integers(0, total, size=int(q * 1.2) + 10))
    while picked.size < q:
        picked = np.unique(np.concatenate([picked, rng.integers(0, total, size=q)]))
    picked = rng.permutation(picked)[:q]
    # invert the row-major enumeration of pairs a <= b: row a starts at a*m - a(a-1)/2
    starts = np.arange(m) * m - np.arange(m) * (np.arange(m) - 1) // 2
    a = np.searchsorted(starts, picked, side="right") - 1
    b = a + (picked - starts[a])
    return a, b


def rmse_rq(x_out: np.ndarray, x: np.ndarray, ranges: tuple[np.ndarray, np.ndarray]) -> float:
    """rmse_RQ = sqrt((1/q) Σ_i (Σ_{j=a_i}^{b_i} x_j^out - Σ x_j)²) over the given leaf ranges (Eq. 41)."""
    a, b = ranges
    diff = np.concatenate([[0.0], np.cumsum(np.asarray(x_out, float) - np.asarray(x, float))])
    return float(np.sqrt(np.mean((diff[b + 1] - diff[a]) ** 2)))


def consistency_bias(tree: Tree, released: np.ndarray) -> float:
    """bias = sqrt(Σ_i Δ_i² / n₁) with Δ = Mᵀ v^out (Eq. 42): 0 for a consistent tree."""
    if tree.n1 == 0:
        return 0.0
    delta = m_transpose(tree, np.asarray(released, float))
    return float(np.sqrt(np.mean(delta**2)))


def negatives(released: np.ndarray, tol: float = 0.0) -> int:
    """Number of nodes released with a negative count."""
    return int(np.count_nonzero(np.asarray(released) < -tol))


def theorem5_mse(tree: Tree, variance: float) -> tuple[float, float]:
    """Theorem 5 with per-node noise variance σ² (= 2h²/ε² for Lap(h/ε)):
    (mse(ṽ), mse(v̄)) = (n σ², m σ²) (Eqs. 27-28), summed over all nodes."""
    return tree.n * variance, tree.m * variance


def expected_error_by_level(tree: Tree, variance: np.ndarray) -> np.ndarray:
    """Expected RMSE of the nodes at each depth 1..h from per-node variances (e.g. GMC's output)."""
    sums = np.bincount(tree.depth, weights=variance, minlength=tree.h + 1)[1:]
    cnt = np.bincount(tree.depth, minlength=tree.h + 1)[1:]
    return np.sqrt(sums / np.maximum(cnt, 1))


def error_by_level(tree: Tree, released: np.ndarray, true: np.ndarray) -> np.ndarray:
    """Root-mean-square error of the nodes at each depth 1..h (for the error-by-level view)."""
    sq = (np.asarray(released) - np.asarray(true)) ** 2
    d = tree.depth
    sums = np.bincount(d, weights=sq, minlength=tree.h + 1)[1:]
    cnt = np.bincount(d, minlength=tree.h + 1)[1:]
    return np.sqrt(sums / np.maximum(cnt, 1))
