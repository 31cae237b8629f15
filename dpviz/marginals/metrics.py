"""Error metrics for reconstructed marginal workloads (digest §5.1 "Metric", §7 "Error metrics").

Mullins et al., "Efficient and Private Marginal Reconstruction with Local Non-Negativity", NeurIPS 2024,
report the average ℓ1 (main text) and ℓ2 (App. I) workload error without defining the normalisation; the
authors' code divides each marginal's error by its number of cells n_γ. All three choices are exposed:

    workload_error = (1/|𝒲|) Σ_{γ∈𝒲} ‖μ̂_γ − μ_γ‖_p / s_γ,   s_γ = n_γ ("cells"), N ("N") or 1 ("none").

These functions compare against the true marginals: they are for evaluation/simulation, not for release.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from dpviz.errors import InputError

__all__ = ["negative_cells", "negative_mass", "workload_error"]

NORMS = {"l1": 1, "l2": 2}
SCALES = ("cells", "N", "none")


def workload_error(true: Mapping, est: Mapping, *, norm: str = "l1", scale: str = "cells",
                   N: float | None = None) -> float:
    """Average over the workload (the keys of ``true``) of ‖est_γ − true_γ‖_p divided by n_γ, N or 1.

    ``scale="N"`` uses ``N`` if given, else the total of the first true marginal (every true marginal sums
    to the number of records). InputError on missing cliques or mismatched lengths.
    """
    if norm not in NORMS:
        raise InputError(f"norm must be one of {', '.join(NORMS)}, got {norm!r}")
    if scale not in SCALES:
        raise InputError(f"scale must be one of {', '.join(SCALES)}, got {scale!r}")
    if not true:
        raise InputError("workload_error: no marginals to compare")
    missing = [g for g in true if g not in est]
    if missing:
        raise InputError(f"workload_error: the estimate has no marginal for {missing[0]!r} "
                         f"({len(missing)} missing)")
    if scale == "N":
        if N is None:
            N = float(np.sum(next(iter(true.values()))))
        if not (math.isfinite(N) and N > 0):
            raise InputError(f"workload_error: N must be a positive number, got {N}")
    errors = []
    for g, mu in true.items():
        a, b = np.asarray(mu, dtype=float).ravel(), np.asarray(est[g], dtype=float).ravel()
        if a.shape != b.shape:
            raise InputError(f"workload_error: marginal {g!r} has {a.size} true cells but {b.size} estimated")
        e = float(np.linalg.norm(b - a, ord=NORMS[norm]))
        errors.append(e / (a.size if scale == "cells" else N if scale == "N" else 1.0))
    return math.fsum(errors) / len(errors)


def negative_mass(marginals: Mapping) -> float:
    """Total magnitude of the negative cells, Σ_γ Σ_t max(−μ̂_γ(t), 0) (≥ 0; 0 means no negatives)."""
    return math.fsum(float(np.maximum(-np.asarray(mu, dtype=float), 0.0).sum()) for mu in marginals.values())


def negative_cells(marginals: Mapping) -> int:
    """Number of cells with μ̂_γ(t) < 0 over all marginals."""
    return int(sum(int((np.asarray(mu) < 0).sum()) for mu in marginals.values()))
