"""Error metrics of continual counting: the exact (analytic) ones and the empirical ones of a simulated draw.

The workload is the running totals s = W a (Eq. 5.4). A mechanism's expected squared error at step t is
Var(ŝ_t) (it is unbiased), so its total squared error is Σ_t Var(ŝ_t) (Eq. 5.2; Eq. 5.9 for the weighted
Fenwick mechanism), its mean per step that total / N and its worst step max_t Var(ŝ_t): all computed from
the noise alone (:meth:`dpviz.stream.strategy.StreamStrategy.per_step_variance`), safe to publish.

The empirical error of a draw, ŝ − s, uses the truth: simulation only (:func:`empirical_rmse`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["VarianceSummary", "running_totals", "errors", "empirical_rmse"]


@dataclass(frozen=True)
class VarianceSummary:
    """Total Σ_t Var(ŝ_t) (Eq. 5.2 / 5.9), mean (total / N) and worst step max_t Var(ŝ_t) of a variance profile."""

    total: float
    mean: float
    max: float

    @classmethod
    def of(cls, variance: np.ndarray) -> VarianceSummary:
        v = np.asarray(variance, dtype=float)
        return cls(float(v.sum()), float(v.mean()), float(v.max()))


def running_totals(series: np.ndarray, steps: int | None = None) -> np.ndarray:
    """The true running totals s_t = Σ_{j≤t} a_j (float64) of the first ``steps`` steps (all when None)."""
    a = np.asarray(series, dtype=float)
    return np.cumsum(a if steps is None else a[:steps])


def errors(released: np.ndarray, series: np.ndarray) -> np.ndarray:
    """ŝ − s per released step (simulation only: uses the truth)."""
    r = np.asarray(released, dtype=float)
    return r - running_totals(series, r.shape[-1])


def empirical_rmse(released: np.ndarray, series: np.ndarray) -> float:
    """√(mean_t (ŝ_t − s_t)²) over the released steps (simulation only: uses the truth)."""
    return float(np.sqrt(np.mean(errors(released, series) ** 2)))
