"""Differentially private tree release end to end (paper Sec. 5, Alg. 2).

1. BuildTree (Eq. 25) gives the node vector v from the leaf counts x.
2. Noise: one record changes one node per level, so the L1 sensitivity is the height h and the L2
   sensitivity sqrt(h). The budget is split over the h depth levels (sequential composition over
   levels, parallel within one): ``uniform`` (ε/h each: Lap(h/ε) on every node, the paper's setting) or
   ``geometric`` (ε_ℓ ∝ 2^{ℓ/3}, more to the deeper levels; Cormode et al., ICDE 2012). Laplace
   gives ε-DP; Gaussian gives ρ-zCDP with ρ_ℓ = share_ℓ · ρ, σ_ℓ² = 1/(2ρ_ℓ) (Bun & Steinke 2016),
   where ρ comes from (ε, δ) by :func:`dpviz.privacy.accounting.approx_dp_to_zcdp`.
3. Post-processing: GMC (Alg. 2, Eq. 36 / Eq. 39) or a baseline; every method uses the per-node
   variances ``d`` where its source allows, so a non-uniform split gets the matching weighted least squares.

Stage 1 (structure: :class:`~dpviz.tree.gmc.GMCPlan`) depends on the tree and on the shape of the
split only, never on ε; stage 2 is what a slider move recomputes.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd

from dpviz.errors import InputError
from dpviz.privacy.accounting import pure_dp_to_zcdp
from dpviz.privacy.mechanisms import Noise, laplace_variance
from dpviz.tree import baselines
from dpviz.tree.gmc import GMCPlan, gmc, output_variance, plan
from dpviz.tree.io import TreeData, node_table
from dpviz.tree.metrics import (
    consistency_bias,
    negatives,
    random_ranges,
    rmse_nq,
    rmse_rq,
)
from dpviz.tree.model import Tree

Mechanism = Literal["laplace", "gaussian"]
Split = Literal["uniform", "geometric"]

__all__ = [
    "NoiseSpec",
    "level_shares",
    "node_scales",
    "node_variances",
    "unit_noise",
    "METHODS",
    "release",
    "compare",
    "ReleaseResult",
    "release_frame",
    "expected_variance",
]


@dataclass(frozen=True)
class NoiseSpec:
    """How noise is added: mechanism, budget and its split over levels."""

    epsilon: float = 1.0
    mechanism: Mechanism = "laplace"
    split: Split = "uniform"
    delta: float = 1e-6  # Gaussian only

    def __post_init__(self) -> None:
        if not (np.isfinite(self.epsilon) and self.epsilon > 0):
            raise InputError(f"epsilon must be a positive number, got {self.epsilon!r}")
        if self.mechanism not in ("laplace", "gaussian"):
            raise InputError(f"mechanism must be 'laplace' or 'gaussian', got {self.mechanism!r}")
        if self.split not in ("uniform", "geometric"):
            raise InputError(f"split must be 'uniform' or 'geometric', got {self.split!r}")
        if self.mechanism == "gaussian" and not (0 < self.delta < 1):
            raise InputError(f"delta must lie in (0, 1), got {self.delta!r}")

    @property
    def noise(self) -> Noise:
        """The whole-tree noise: Laplace at ε, or Gaussian at the ρ implied by (ε, δ)."""
        if self.mechanism == "gaussian":
            return Noise.gaussian_approx(self.epsilon, self.delta)
        return Noise.laplace(self.epsilon)

    @property
    def rho(self) -> float:
        """ρ of the zCDP guarantee (Gaussian); for Laplace, the ε²/2-zCDP it implies."""
        return self.noise.rho if self.mechanism == "gaussian" else pure_dp_to_zcdp(self.epsilon)


def level_shares(h: int, split: Split = "uniform") -> np.ndarray:
    """Fraction of the budget for depth levels 1..h (sums to 1).

    ``geometric``: share_ℓ ∝ 2^{ℓ/3}, ℓ = 1 (root) .. h (Cormode et al. 2012, Sec. 4.2).
    """
    if split == "uniform":
        return np.full(h, 1.0 / h)
    w = 2.0 ** (np.arange(1, h + 1) / 3.0)
    return w / w.sum()


def node_scales(tree: Tree, spec: NoiseSpec) -> np.ndarray:
    """Per-node noise scale: Laplace b = 1/ε_ℓ (uniform: h/ε) or Gaussian σ = 1/sqrt(2ρ_ℓ).

    Each level is a unit-sensitivity count release at its share of the budget (ε_ℓ = share_ℓ ε,
    ρ_ℓ = share_ℓ ρ), so the scale is the whole-budget scale divided by share_ℓ (Laplace) or
    sqrt(share_ℓ) (Gaussian)."""
    shares = level_shares(tree.h, spec.split)[tree.depth - 1]
    base = spec.noise.scale(1.0)
    return base / shares if spec.mechanism == "laplace" else base / np.sqrt(shares)


def node_variances(tree: Tree, spec: NoiseSpec) -> np.ndarray:
    """Per-node noise variance d_i (2b² for Laplace, σ² for Gaussian)."""
    s = node_scales(tree, spec)
    return laplace_variance(s) if spec.mechanism == "laplace" else s**2


def unit_noise(n: int, mechanism: Mechanism, rng: np.random.Generator) -> np.ndarray:
    """Standard draws (Lap(1) or N(0,1)); noise = unit_noise * node_scales. Drawing once per seed and
    rescaling lets an ε slider move without a new draw."""
    return Noise.standard_draws(mechanism, rng, n)


# ---- post-processing methods -----------------------------------------------------------------
PostProcess = Callable[[Tree, np.ndarray, np.ndarray | None, "GMCPlan | None"], np.ndarray]


def _gmc(form: str) -> PostProcess:
    def run(tree: Tree, noisy: np.ndarray, d: np.ndarray | None, p: GMCPlan | None) -> np.ndarray:
        return gmc(p if p is not None else plan(tree, d), noisy, form=form)  # type: ignore[arg-type]

    return run


def _baseline(fn) -> PostProcess:
    return lambda tree, noisy, d, p: fn(tree, noisy, d)


METHODS: dict[str, PostProcess] = {
    "gmc": _gmc("sqrt"),
    "gmc-nosqrt": _gmc("nosqrt"),
    "boosting": _baseline(baselines.boosting),
    "privtrie": _baseline(baselines.privtrie),
    "lee": _baseline(baselines.lee_closed_form),
    "processless": _baseline(baselines.processless),
}
METHOD_LABELS = {
    "gmc": "GMC (Alg. 2, Eq. 36)",
    "gmc-nosqrt": "GMC square-root-free (Eq. 39)",
    "boosting": "Boosting (Hay et al. 2010)",
    "privtrie": "PrivTrie-style recursion",
    "lee": "Lee-Wang-Kifer closed form (Eq. 8)",
    "processless": "Processless",
}


@dataclass(frozen=True, eq=False)
class ReleaseResult:
    """One method's release: the noisy and post-processed node vectors (DOH order) and its timing."""

    method: str
    noisy: np.ndarray
    released: np.ndarray
    seconds: float


def weights_for(tree: Tree, spec: NoiseSpec) -> np.ndarray | None:
    """Relative variances for GLS: None when all nodes share one variance (the paper's case)."""
    return None if spec.split == "uniform" else node_variances(tree, spec)


def release(
    data: TreeData,
    spec: NoiseSpec,
    method: str,
    rng: np.random.Generator | None = None,
    *,
    unit: np.ndarray | None = None,
    gmc_plan: GMCPlan | None = None,
) -> ReleaseResult:
    """Alg. 2 with any post-processing: v = BuildTree(x), ṽ = v + noise, v̄ = method(ṽ).

    Pass ``unit`` (from :func:`unit_noise`) to reuse a draw across ε values, else ``rng`` draws one.
    """
    tree = data.tree
    if unit is None:
        if rng is None:
            raise ValueError("pass a numpy Generator (rng) or a unit noise vector")
        unit = unit_noise(tree.n, spec.mechanism, rng)
    noisy = data.v + unit * node_scales(tree, spec)
    return _post_process(tree, method, noisy, weights_for(tree, spec), gmc_plan)


def _post_process(tree: Tree, method: str, noisy: np.ndarray, d: np.ndarray | None,
                  gmc_plan: GMCPlan | None) -> ReleaseResult:
    """Run one post-processing method on ṽ and time it."""
    if method not in METHODS:
        raise InputError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")
    t0 = time.perf_counter()
    out = METHODS[method](tree, noisy, d, gmc_plan)
    return ReleaseResult(method, noisy, out, time.perf_counter() - t0)


def expected_variance(tree: Tree, spec: NoiseSpec, gmc_plan: GMCPlan | None = None) -> np.ndarray:
    """Per-node variance of the optimal consistent release (GMC = Eq. 8 = PrivTrie) under ``spec``.

    :func:`dpviz.tree.gmc.output_variance` of a plan for this split, rescaled to this budget (GLS is
    scale-free, its variance scales with the noise variance). Uniform split: sums to m σ² (Thm 5).
    """
    d = node_variances(tree, spec)
    p = gmc_plan if gmc_plan is not None and gmc_plan.tree is tree else plan(tree, weights_for(tree, spec))
    ref = np.ones(tree.n) if p.d is None else p.d
    c = float(d[0] / ref[0])
    if not np.allclose(d, c * ref, rtol=1e-9, atol=0.0):  # plan made for another split shape
        p = plan(tree, weights_for(tree, spec))
        ref = np.ones(tree.n) if p.d is None else p.d
        c = float(d[0] / ref[0])
    return c * output_variance(p)


GLS_METHODS = ("gmc", "gmc-nosqrt", "lee", "privtrie")


def compare(
    data: TreeData,
    spec: NoiseSpec,
    methods: list[str] | tuple[str, ...],
    rng: np.random.Generator,
    *,
    unit: np.ndarray | None = None,
    gmc_plan: GMCPlan | None = None,
    q: int = 10_000,
    ranges: tuple[np.ndarray, np.ndarray] | None = None,
    expected: np.ndarray | None = None,
) -> tuple[pd.DataFrame, dict[str, ReleaseResult]]:
    """Release with every method on the SAME noise draw and tabulate the paper's metrics.

    Columns: rmse_NQ (Eq. 40), rmse_RQ over q random leaf ranges (Eq. 41), bias (Eq. 42), negative
    nodes, seconds, and the total squared error beside its expectation: Σ d_i for Processless
    (Eq. 27) and Σ Var(v̄_i) for the optimal methods (Theorem 5, Eq. 28, and its weighted form for a
    non-uniform split; :func:`expected_variance`, or pass it as ``expected`` if already computed).
    Boosting has no such column (NaN).
    """
    tree = data.tree
    if unit is None:
        unit = unit_noise(tree.n, spec.mechanism, rng)
    if ranges is None:
        ranges = random_ranges(tree.m, q, rng)
    noisy = data.v + unit * node_scales(tree, spec)  # one draw, shared by every method
    d = weights_for(tree, spec)
    results = {m: _post_process(tree, m, noisy, d, gmc_plan) for m in methods}
    v, x = data.v, data.x
    expect_before = float(node_variances(tree, spec).sum())
    if expected is None and set(GLS_METHODS) & set(results):
        expected = expected_variance(tree, spec, gmc_plan)
    expect_after = np.nan if expected is None else float(expected.sum())
    rows = []
    for m, r in results.items():
        x_out = r.released[tree.n1 :]
        predicted = expect_before if m == "processless" else expect_after if m in GLS_METHODS else np.nan
        rows.append(
            {
                "method": m,
                "rmse_NQ": rmse_nq(r.released, v),
                "rmse_RQ": rmse_rq(x_out, x, ranges),
                "bias": consistency_bias(tree, r.released),
                "negatives": negatives(r.released),
                "seconds": r.seconds,
                "total_sq_error": float(np.sum((r.released - v) ** 2)),
                "expected_sq_error": predicted,
            }
        )
    return pd.DataFrame(rows), results


def release_frame(data: TreeData, noisy: np.ndarray, released: np.ndarray) -> pd.DataFrame:
    """``node,parent,true,noisy,released`` in the input order (the CLI's ``--output`` and the page's
    download)."""
    return node_table(data.tree, true=data.v, noisy=noisy, released=released)
