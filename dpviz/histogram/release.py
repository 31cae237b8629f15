"""Release and simulate a histogram: ``release(data, noise, *, rng=None, **options) -> HistogramRelease`` and
``simulate(data, noise, methods, rng, **options) -> HistogramSimulation`` (the one API of every capability).

The hierarchical methods run the tree engine on the b-ary hierarchy over the bins
(:func:`dpviz.histogram.strategy.hierarchy_parents`): :func:`dpviz.tree.release.release` draws the per-level
noise through :func:`dpviz.core.protocols.measure` and post-processes with the chosen estimator; the released
bins are the hierarchy's leaves. ``flat`` measures the bins alone (:class:`~dpviz.histogram.strategy.Flat`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, ClassVar

import numpy as np

from dpviz.core.modes import RELEASE_NOTICE
from dpviz.core.noise import Noise
from dpviz.core.protocols import measure
from dpviz.core.release import BudgetSplit, release_metadata
from dpviz.core.structure import StructureSource
from dpviz.errors import InputError
from dpviz.histogram.estimators import METHOD_LABELS, TREE_METHODS, check_method, check_methods
from dpviz.histogram.metrics import random_ranges, rmse_bins, rmse_ranges
from dpviz.histogram.model import Bins, HistogramData
from dpviz.histogram.strategy import Flat, check_branching, hierarchy_parents

__all__ = ["HistogramRelease", "HistogramSimulation", "release", "simulate", "METRIC_COLUMNS"]

METRIC_COLUMNS = ["method", "rmse_bins", "rmse_ranges", "expected_rmse_bins", "negatives"]


@lru_cache(maxsize=16)
def _hierarchy(m: int, b: int) -> Any:
    from dpviz.tree.model import tree_from_parents

    return tree_from_parents(hierarchy_parents(m, b))


def _tree_data(data: HistogramData, b: int) -> Any:
    from dpviz.tree.model import TreeData

    return TreeData(_hierarchy(data.bins.m, b), data.x, data.name)


def _split_labels(h: int) -> list[str]:
    return ["level 1 (all bins)", *[f"level {k}" for k in range(2, h)], f"level {h} (bins)"]


@dataclass(frozen=True, eq=False)
class HistogramRelease:
    """A private histogram: released bin counts and their analytic variance (NaN where the method has no closed
    form). Nothing in it is the truth or computed from it except through the noise."""

    capability: ClassVar[str] = "histogram"
    bins: Bins
    source: str
    method: str
    branching: int
    split: str
    values: np.ndarray
    variance: np.ndarray
    noise: Noise
    sensitivity: float
    level_shares: np.ndarray
    randomness: str
    structure: StructureSource = field(default=StructureSource("declared", "bins"))
    notice: str = field(default=RELEASE_NOTICE, init=False)

    @property
    def budget(self) -> BudgetSplit:
        rho = None if self.noise.family == "laplace" else self.noise.rho
        if self.method == "flat":
            return BudgetSplit.whole(self.noise.budget, "bins", rho=rho)
        return BudgetSplit.shares(self.noise.budget, _split_labels(len(self.level_shares)), self.level_shares, rho=rho)

    def table(self) -> Any:
        import pandas as pd

        var = np.asarray(self.variance, dtype=float)
        cols: dict[str, Any] = {"bin": list(self.bins.labels), "released": self.values}
        if np.all(np.isfinite(var)):
            cols |= {"variance": var, "std": np.sqrt(var)}
        if not self.structure.private:
            cols["structure"] = self.structure.describe
        return pd.DataFrame(cols)

    def metadata(self) -> dict[str, Any]:
        var = np.asarray(self.variance, dtype=float)
        return release_metadata(
            "histogram", self.noise, seeded=self.randomness != "OS CSPRNG", sensitivity=self.sensitivity,
            budget_split=self.budget, source=self.source, method=self.method, method_label=METHOD_LABELS[self.method],
            branching=None if self.method == "flat" else self.branching, split=None if self.method == "flat" else self.split,
            structure={"bins": self.bins.m, **self.bins.as_dict(), **self.structure.as_dict()},
            expected_total_squared_error=float(var.sum()) if np.all(np.isfinite(var)) else None,
            columns={"bin": "the declared bin", "released": f"{METHOD_LABELS[self.method]}",
                     "variance": "analytic variance of released (from the bins and the noise only; absent when the "
                                 "method has no closed form)", "std": "square root of variance"},
            randomness=self.randomness)


def _check_noise(noise: Noise, discrete: bool) -> None:
    if not isinstance(noise, Noise):
        raise InputError(f"noise: expected a dpviz.core.noise.Noise, got {type(noise).__name__}")
    if noise.discrete != discrete:
        raise InputError("release: needs discrete noise (Noise.from_params(..., discrete=True))" if discrete else
                         "simulate: uses continuous noise from a seeded Generator (discrete noise is for release)")


def release(data: HistogramData, noise: Noise, *, rng: np.random.Generator | None = None, method: str = "gmc",
            branching: int = 2, split: str = "uniform", source: str | None = None) -> HistogramRelease:
    """A private release of every bin: discrete noise from the OS CSPRNG (``rng=None``; a seeded Generator only in
    tests), ONE method. Hierarchical methods spend the budget per level (``split``) over the b-ary hierarchy."""
    _check_noise(noise, discrete=True)
    method, b = check_method(method), check_branching(branching)
    randomness = "OS CSPRNG" if rng is None else "seeded Generator (testing only)"
    common = dict(bins=data.bins, source=source or data.name, method=method, branching=b, split=split,
                  noise=noise, randomness=randomness, structure=data.structure)
    if method == "flat":
        meas = measure(Flat(data.bins.m), data, noise, rng)
        return HistogramRelease(values=meas.values, variance=np.asarray(meas.variance, dtype=float),
                                sensitivity=meas.sensitivity, level_shares=np.ones(1), **common)
    from dpviz.tree.release import release as tree_release
    from dpviz.tree.strategy import level_shares

    td = _tree_data(data, b)
    rel = tree_release(td, noise, rng=rng, split=split, method=method)
    n1 = td.tree.n1
    return HistogramRelease(values=np.asarray(rel.released[n1:]), variance=np.asarray(rel.variance[n1:], dtype=float),
                            sensitivity=float(rel.sensitivity), level_shares=level_shares(td.tree.h, split), **common)


@dataclass(frozen=True, eq=False)
class HistogramSimulation:
    """One noise draw post-processed by every method, scored against the truth (never a release)."""

    table: Any  # pandas DataFrame with METRIC_COLUMNS
    released: dict[str, np.ndarray]
    variance: dict[str, np.ndarray]
    noise: Noise
    mode: str = "simulate"


def simulate(data: HistogramData, noise: Noise, methods: Any = "all", rng: np.random.Generator | None = None, *,
             branching: int = 2, split: str = "uniform", q: int = 10_000) -> HistogramSimulation:
    """Simulate every method on seeded continuous noise: the hierarchy's one draw is shared by its methods, flat
    gets its own; both scored on the bins and on ``q`` random ranges (drawn first from ``rng``)."""
    _check_noise(noise, discrete=False)
    names, b = check_methods(methods), check_branching(branching)
    if not isinstance(rng, np.random.Generator):
        raise InputError("simulate: pass a numpy Generator (numpy.random.default_rng(seed))")
    x = data.x.astype(float)
    ranges = random_ranges(data.bins.m, q, rng)
    released: dict[str, np.ndarray] = {}
    variance: dict[str, np.ndarray] = {}
    tree_names = [m for m in names if m in TREE_METHODS]
    if tree_names:
        from dpviz.tree.release import simulate as tree_simulate

        td = _tree_data(data, b)
        sim = tree_simulate(td, noise, tree_names, rng, split=split, ranges=ranges)
        n1 = td.tree.n1
        for m in tree_names:
            released[m] = np.asarray(sim.results[m].released[n1:], dtype=float)
            variance[m] = np.asarray(sim.results[m].variance[n1:], dtype=float)
    if "flat" in names:
        meas = measure(Flat(data.bins.m), data, noise, rng)
        released["flat"] = np.asarray(meas.values, dtype=float)
        variance["flat"] = np.asarray(meas.variance, dtype=float)
    import pandas as pd

    rows = [{"method": m, "rmse_bins": rmse_bins(released[m], x), "rmse_ranges": rmse_ranges(released[m], x, ranges),
             "expected_rmse_bins": float(np.sqrt(np.mean(variance[m]))) if np.all(np.isfinite(variance[m])) else np.nan,
             "negatives": int(np.sum(released[m] < 0))} for m in names]
    return HistogramSimulation(pd.DataFrame(rows, columns=METRIC_COLUMNS), released, variance, noise)
