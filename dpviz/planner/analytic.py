"""Analytic error curves of the tree, stream and marginals capabilities (no data: structure only).

Each builder returns one :class:`~dpviz.planner.curves.Curve` per mechanism/strategy, its ``unit_mse``
read off the variances the capability already exposes, at unit budget (ε = 1 or ρ = 1):

* **tree** (:mod:`dpviz.tree.release`): per strategy (budget split over levels: uniform or geometric)
  and estimator — the optimally consistent release (GMC = Lee = PrivTrie: one estimator, Theorem 5 of
  "Generation Matrix: An Embeddable Matrix Representation for Hierarchical Trees", TCS 2023, Eq. 28 and
  its weighted form, :func:`dpviz.tree.release.expected_variance`) and the processless noisy counts
  (Eq. 27). Boosting has no closed-form variance and is not planned.

  - ``query="node"``: RMSE per node, rmse_NQ of Eq. 40: √(mean_i Var v̄_i).
  - ``query="range"``: RMSE per leaf-range query, rmse_RQ of Eq. 41, the mean over ranges of
    Var(Σ_{j∈[a,b]} x̄_j). For the GLS release Cov(v̄) = D − D M (MᵀDM)⁻¹ MᵀD, so for the range's indicator
    r, Cov(v̄) r = c · gmc(plan, d_rel ∘ r) (:func:`dpviz.tree.gmc.gmc` is I − D M (MᵀDM)⁻¹Mᵀ, and GLS is
    invariant to the scale c of D), and Var = rᵀ Cov(v̄) r: one O(n) GMC pass per range. The mean is
    over a deterministic lattice of ranges (:func:`lattice_ranges`, every range when m ≤ 64), which
    stands for the uniformly random ranges of the paper's experiments (:func:`dpviz.tree.metrics.random_ranges`).

* **stream** (:mod:`dpviz.stream.strategies`): every mechanism's per-step variance Var(ŝ_t), t = 1..N
  (Fenwick chain sums, FDA's optimal λ, Honaker, naive, square-root), and its ``max`` (the worst step,
  √max_t Var ŝ_t) or ``mean`` (the RMSE over the horizon, √(mean_t Var ŝ_t) — what the stream
  simulation's empirical RMSE estimates).

* **marginals** (:mod:`dpviz.marginals.measure`): ResidualPlanner's σ_τ² at ρ (closed form,
  :func:`~dpviz.marginals.measure.rp_sigmas`, Xiao et al., NeurIPS 2023) and the GReM-MLE per-cell
  variance of every workload marginal (:func:`dpviz.marginals.reconstruct.reconstruction_variance`,
  Mullins et al., NeurIPS 2024), averaged over all workload cells: per-cell RMSE of the workload.
  ``rp`` is the continuous (simulation) accounting, ``rp-release`` the conservative per-marginal charge
  a discrete release pays. Scalable MWEM is adaptive (data-dependent selection) and not planned.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Literal

import numpy as np

from dpviz.core.noise import FAMILIES, Family
from dpviz.errors import InputError
from dpviz.planner.curves import Curve, unit_noise

__all__ = [
    "STREAM_METRICS",
    "TREE_QUERIES",
    "lattice_ranges",
    "marginals_curves",
    "range_variance",
    "stream_curves",
    "tree_curves",
    "tree_unit_variances",
]

TreeQuery = Literal["node", "range"]
StreamMetric = Literal["max", "mean"]
TREE_QUERIES: tuple[TreeQuery, ...] = ("node", "range")
STREAM_METRICS: tuple[StreamMetric, ...] = ("max", "mean")
TREE_ESTIMATORS: dict[str, str] = {"gmc": "GMC (optimally consistent; = Lee = PrivTrie)", "processless": "Processless"}
LATTICE_POINTS = 64
RANGE_WORK = 30_000_000
"""Node visits allowed for the range-variance passes (the lattice shrinks on very large trees)."""


def _families(families: Iterable[str]) -> tuple[Family, ...]:
    out = tuple(dict.fromkeys(families))
    bad = [f for f in out if f not in FAMILIES]
    if bad or not out:
        raise InputError(f"noise: expected laplace and/or gaussian, got {', '.join(map(str, bad)) or 'none'}")
    return out  # type: ignore[return-value]


# ---- tree ---------------------------------------------------------------------------------------------
def lattice_ranges(m: int, points: int = LATTICE_POINTS) -> tuple[np.ndarray, np.ndarray]:
    """Leaf ranges [a, b] (0-based, inclusive): every range when m ≤ ``points``, else every pair a ≤ b of
    ``points`` evenly spaced leaf positions (cell midpoints) — a deterministic stand-in for uniform
    random ranges (the pairs are spread evenly over the triangle a ≤ b)."""
    if m < 1:
        raise InputError("tree: no leaves")
    pos = np.arange(m) if m <= points else np.unique(((np.arange(points) + 0.5) * m / points).astype(np.int64))
    i, j = np.triu_indices(pos.size)
    return pos[i], pos[j]


def range_variance(tree, d: np.ndarray, ranges: tuple[np.ndarray, np.ndarray], *, gls: bool) -> np.ndarray:
    """Var of each leaf-range sum of the released leaves, for node noise variances ``d`` (DOH order).

    ``gls=False``: the noisy leaves, Σ_{j∈range} d_j (prefix sums). ``gls=True``: the optimally consistent
    release, rᵀ Cov(v̄) r with Cov(v̄) r = c · gmc(plan, d_rel ∘ r) (module docstring), one pass per range.
    """
    from dpviz.tree.estimators import check_plan, plan_for
    from dpviz.tree.gmc import gmc

    a, b = (np.asarray(x, dtype=np.int64) for x in ranges)
    n1 = tree.n1
    d = np.asarray(d, dtype=float)
    if not gls or n1 == 0:
        csum = np.concatenate([[0.0], np.cumsum(d[n1:])])
        return csum[b + 1] - csum[a]
    p = plan_for(tree, d)
    c = check_plan(p, tree, d)
    ref = np.ones(tree.n) if p.d is None else p.d
    out = np.empty(a.size)
    r = np.zeros(tree.n)
    for k in range(a.size):  # one O(n) GMC pass per range (vectorised inside)
        lo, hi = n1 + int(a[k]), n1 + int(b[k]) + 1
        r[lo:hi] = ref[lo:hi]
        cov_r = gmc(p, r)
        out[k] = c * float(cov_r[lo:hi].sum())
        r[lo:hi] = 0.0
    return out


def tree_unit_variances(tree, family: Family, split: str, estimator: str) -> np.ndarray:
    """Per-node variance at unit budget for one (split, estimator): GLS (Thm. 5) or the noise itself."""
    from dpviz.tree.release import expected_variance, node_variances

    noise = unit_noise(family)
    if estimator == "gmc":
        return expected_variance(tree, noise, split)
    if estimator == "processless":
        return node_variances(tree, noise, split)
    raise InputError(f"tree estimator: expected one of {', '.join(TREE_ESTIMATORS)}, got {estimator!r}")


def _lattice_for(tree, ranges):
    if ranges is not None:
        return ranges
    points = max(4, min(LATTICE_POINTS, int(math.sqrt(2.0 * RANGE_WORK / max(tree.n, 1)))))
    return lattice_ranges(tree.m, points)


def tree_curves(tree, *, query: str = "node", families: Iterable[str] = ("laplace",),
                splits: Sequence[str] | None = None, estimators: Sequence[str] = tuple(TREE_ESTIMATORS),
                ranges: tuple[np.ndarray, np.ndarray] | None = None) -> list[Curve]:
    """One curve per (noise family, split, estimator) for a tree (``tree``: a :class:`dpviz.tree.model.Tree`).

    Mechanism names are ``estimator/split`` (e.g. ``gmc/uniform``); ``ranges`` overrides the lattice of
    leaf ranges for ``query="range"`` (e.g. the ranges a simulation will score)."""
    from dpviz.tree.strategy import SPLITS, check_split

    if query not in TREE_QUERIES:
        raise InputError(f"--query: expected node or range, got {query!r}")
    splits = tuple(SPLITS) if splits is None else tuple(check_split(s) for s in splits)
    metric = "RMSE per node" if query == "node" else "RMSE per leaf-range query"
    rng_ranges = _lattice_for(tree, ranges) if query == "range" else None
    out = []
    for fam in _families(families):
        for split in splits:
            for est in estimators:
                var = tree_unit_variances(tree, fam, split, est)
                if query == "node":
                    unit = float(np.mean(var))
                else:
                    from dpviz.tree.release import node_variances

                    d = node_variances(tree, unit_noise(fam), split)
                    unit = float(np.mean(range_variance(tree, d, rng_ranges, gls=est == "gmc")))
                label = f"{TREE_ESTIMATORS[est]}, {split} split" + (", Gaussian" if fam == "gaussian" else "")
                out.append(Curve("tree", f"{est}/{split}" + ("/gaussian" if fam == "gaussian" else ""), label,
                                 metric, fam, unit, "exact"))
    return out


# ---- stream -------------------------------------------------------------------------------------------
def stream_curves(horizon: int, *, metric: str = "max", families: Iterable[str] = ("laplace",),
                  mechanisms: Sequence[str] | None = None) -> list[Curve]:
    """One curve per (noise family, mechanism) valid for the family, at horizon N (no data needed)."""
    from dpviz.stream.fenwick import check_horizon
    from dpviz.stream.strategies import LABELS, available, strategy

    if metric not in STREAM_METRICS:
        raise InputError(f"--metric: expected max or mean, got {metric!r}")
    n = check_horizon(horizon)
    what = "max per-step RMSE" if metric == "max" else "RMSE over the horizon (mean per-step MSE)"
    out = []
    for fam in _families(families):
        names = available(fam) if mechanisms is None else [m for m in mechanisms if m in available(fam)]
        for name in names:
            v = strategy(name, n, fam).per_step_variance(unit_noise(fam))
            unit = float(v.max() if metric == "max" else v.mean())
            suffix = "/gaussian" if fam == "gaussian" and name != "sqrt" else ""
            label = LABELS[name] + (", Gaussian" if suffix else "")
            out.append(Curve("stream", name + suffix, label, what, fam, unit, "exact"))
    if not out:
        raise InputError(f"--mechanism: none of {', '.join(mechanisms or [])} is valid for this noise")
    return out


# ---- marginals ----------------------------------------------------------------------------------------
MARGINALS_ACCOUNTING = {"rp": "residual", "rp-release": "marginal"}
MARGINALS_LABELS = {"rp": "ResidualPlanner + GReM-MLE (continuous noise: simulation accounting)",
                    "rp-release": "ResidualPlanner + GReM-MLE (discrete noise: release accounting)"}


def marginals_unit_mse(domain, workload, cost: str) -> float:
    """Mean per-cell variance of the GReM-MLE workload answer at ρ = 1 (ResidualPlanner's σ_τ²)."""
    from dpviz.marginals.measure import rp_sigmas
    from dpviz.marginals.reconstruct import reconstruction_variance

    sig2 = rp_sigmas(domain, workload, 1.0, cost=cost)
    cells = [domain.size(g) for g in workload]
    total = math.fsum(reconstruction_variance(domain, g, sig2) * n for g, n in zip(workload, cells))
    return total / sum(cells)


def marginals_curves(domain, workload) -> list[Curve]:
    """ResidualPlanner under both accountings for a workload (a list of cliques of ``domain``)."""
    from dpviz.marginals.reconstruct import check_workload

    wl = check_workload(domain, workload)
    return [Curve("marginals", name, MARGINALS_LABELS[name], "per-cell RMSE of the workload", "gaussian",
                  marginals_unit_mse(domain, wl, cost), "cks")
            for name, cost in MARGINALS_ACCOUNTING.items()]
