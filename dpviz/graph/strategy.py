"""What a graph release measures, its sensitivity under edge-level DP, and how its budget is split.

Unit of privacy: **one edge** (edge-level DP). Neighbouring graphs on the same, public vertex set
{0..n-1} differ in exactly one undirected edge {u, v}; in the symmetric adjacency matrix that is two
cells, (u, v) and (v, u), so counts are taken on the upper triangle (u < v) only, where it is one cell.

The queries (core :class:`~dpviz.core.protocols.Strategy` objects, measured by the one noise draw
:func:`dpviz.core.protocols.measure`):

* :class:`RegionCounts` — the edge counts of regions of the (relabelled) adjacency matrix: on the upper
  triangle the regions of one tree level are disjoint, so the level's count vector has L1 sensitivity
  :data:`~dpviz.graph.model.COUNT_SENSITIVITY` = 1 and Laplace(1/ε_level) makes it ε_level-DP; a tree of
  several levels composes them sequentially (Σ ε_level). The published DRF counts the symmetric matrix
  (``upper=False``), where one edge can be two cells of one region: sensitivity 2 (its noise keeps the
  paper's scale 1/ε, which is why it is not edge-DP).
* :class:`DegreeSequence` — the degree vector, L1 sensitivity :data:`~dpviz.graph.model.DEGREE_SENSITIVITY`
  = 2 (one edge moves two degrees by 1).

The methods (:data:`METHODS`, ``"module:function"`` targets with the signature
``f(edges, n_nodes, epsilon, *, rng=None, **options) -> Reconstruction``), their sensitivities
(:data:`L1_SENSITIVITIES`), DRF's budget split (:func:`parse_split`, :func:`drf_account`: Gong et al. 2020
§3, Eqs. 3 and 7) and the baselines' geometric per-depth budgets (:func:`geometric_budgets`, Cormode et al.,
ICDE 2012) are all public: they depend on |V|, ε and the options only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dpviz.core.accounting import positive
from dpviz.core.noise import Family, Noise
from dpviz.core.protocols import LinearMeasurement, measure
from dpviz.errors import InputError
from dpviz.graph.model import COUNT_SENSITIVITY, DEGREE_SENSITIVITY
from dpviz.graph.regions import EdgeIndex

__all__ = ["METHODS", "DEFAULT_METHOD", "PRIVATE_METHODS", "NOT_PRIVATE_LABEL", "SPLIT_METHODS", "DEFAULT_SPLIT",
           "L1_SENSITIVITIES", "sensitivity", "check_method", "parse_split", "method_options", "split_shares",
           "Bounds", "EdgeCells", "RegionCounts", "DegreeSequence", "measure_regions", "measure_degrees",
           "count_budgets", "max_height", "DrfAccount", "drf_account", "geometric_budgets", "DEFAULT_MU_DRF"]

NOT_PRIVATE_LABEL = "not edge-DP as published"
DEFAULT_METHOD = "drf-dp"

METHODS: dict[str, str] = {
    "drf-dp": "dpviz.graph.drf:drf_dp",
    "drf": "dpviz.graph.drf:drf_published",
    "kdh": "dpviz.graph.baselines:kd_hybrid",
    "quadtree": "dpviz.graph.baselines:quadtree",
    "random": "dpviz.graph.baselines:random_uniform",
    "degree": "dpviz.graph.baselines:degree_chung_lu",
}
"""Method name -> ``"module:function"``. ``drf`` is the algorithm as published (not edge-DP)."""

PRIVATE_METHODS: tuple[str, ...] = ("drf-dp", "kdh", "quadtree", "random", "degree")
"""Every method except the published DRF is edge-DP; only these may run in release mode."""

SPLIT_METHODS = ("drf", "drf-dp")
"""Methods that take a budget split ε_D^d : ε_D^c : ε_R (``--budget-split``), passed on as ``split=(a, b, c)``."""

DEFAULT_SPLIT: tuple[float, float, float] = (3.0, 7.0, 3.0)
"""ε_D^d : ε_D^c : ε_R (paper §3: "the distribution ratio of the privacy budget is 3 : 7 : 3")."""

DEFAULT_MU_DRF = 4.0
"""μ of DRF's Eq. (3) (not given in the paper; see :mod:`dpviz.graph.drf`)."""

_COUNTS = "edge counts of disjoint regions (upper triangle)"
_DEGREES = "degree sequence"
L1_SENSITIVITIES: dict[str, dict[str, float]] = {
    "drf-dp": {_COUNTS: COUNT_SENSITIVITY, f"{_DEGREES} (relabelling)": DEGREE_SENSITIVITY},
    "drf": {_COUNTS: COUNT_SENSITIVITY},
    "kdh": {_COUNTS: COUNT_SENSITIVITY},
    "quadtree": {_COUNTS: COUNT_SENSITIVITY},
    "random": {"total edge count": COUNT_SENSITIVITY},
    "degree": {_DEGREES: DEGREE_SENSITIVITY},
}
"""Method -> the L1 sensitivity of each query its Laplace noise is calibrated to (scale = Δ₁ / sub-budget ε),
the same module constants the mechanisms use. (Exponential-mechanism steps state their utility's
sensitivity in their own documentation.)"""

_TOL = 1e-9


def check_method(method: str) -> str:
    """``method`` if it is one of :data:`METHODS`, else InputError listing them."""
    if method not in METHODS:
        raise InputError(f"method: unknown graph method {method!r}; expected one of {', '.join(METHODS)}")
    return method


def sensitivity(method: str) -> float:
    """The largest L1 sensitivity among ``method``'s Laplace queries (:data:`L1_SENSITIVITIES`): the value a
    release's metadata states."""
    return max(L1_SENSITIVITIES[check_method(method)].values())


def parse_split(text: str | None) -> tuple[float, float, float] | None:
    """``"3:7:3"`` -> (3.0, 7.0, 3.0): three positive finite weights (they are normalised by the method)."""
    if text is None:
        return None
    parts = str(text).split(":")
    try:
        values = tuple(float(p) for p in parts)
    except ValueError:
        values = ()
    if len(values) != 3 or not all(math.isfinite(x) and x > 0 for x in values):
        raise InputError(f"--budget-split: expected three positive numbers A:B:C (ε_D^d : ε_D^c : ε_R), e.g. "
                         f"3:7:3, got {text!r}")
    return values  # type: ignore[return-value]


def method_options(method: str, split: Sequence[float] | None) -> dict:
    """The options a method takes from a budget split: ``{"split": split}`` for :data:`SPLIT_METHODS`."""
    return {"split": tuple(split)} if split is not None and method in SPLIT_METHODS else {}


# ------------------------------------------------------------------------------------------- the queries


@dataclass(frozen=True, eq=False)
class EdgeCells:
    """The private data as a region count sees it: the cell (u[i], v[i]) of every edge in the (relabelled)
    adjacency matrix and, when the regions measured are disjoint and the decomposition already knows which
    one holds each cell, that region's index ``region[i]`` (-1: in none of them)."""

    u: np.ndarray
    v: np.ndarray
    region: np.ndarray | None = None


Bounds = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
"""Region bounds (r0, r1, c0, c1): region i is rows [r0[i], r1[i]) x columns [c0[i], c1[i])."""


@dataclass(frozen=True, eq=False)
class RegionCounts:
    """The edge count of every region (a :class:`~dpviz.core.protocols.Strategy`).

    ``bounds``: the regions (:data:`Bounds`). ``epsilon``: the budget of each region's level (a scalar,
    or one per region); Laplace scale Δ₁/ε_level with Δ₁ = :data:`COUNT_SENSITIVITY` per level (the
    regions of one level are disjoint: one upper-triangle cell lies in at most one). ``upper=False``:
    points of the symmetric matrix (both cells of every edge, the published DRF): a region then changes by
    up to 2 (stated by :meth:`sensitivity`), though the scale stays the paper's 1/ε."""

    bounds: Bounds
    epsilon: float | np.ndarray
    upper: bool = True
    name: str = "graph region counts"

    def sensitivity(self, family: Family) -> float:
        if family != "laplace":
            raise InputError("graph region counts: Laplace noise only (pure ε-edge-DP)")
        return COUNT_SENSITIVITY if self.upper else 2.0 * COUNT_SENSITIVITY

    def scales(self, noise: Noise) -> np.ndarray:
        self.sensitivity(noise.family)
        return COUNT_SENSITIVITY / np.asarray(self.epsilon)

    def answer(self, data: EdgeCells) -> np.ndarray:
        """The true counts (int64): from the cells' region when given, else by range counting."""
        r0, r1, c0, c1 = self.bounds
        if data.region is not None:
            r = np.asarray(data.region, dtype=np.int64)
            return np.bincount(r[r >= 0], minlength=len(r0)).astype(np.int64)
        u, v = np.asarray(data.u, dtype=np.int64), np.asarray(data.v, dtype=np.int64)
        keep = u < v if self.upper else np.ones(u.size, dtype=bool)
        return EdgeIndex.build(u[keep], v[keep]).count(r0, r1, c0, c1)


@dataclass(frozen=True, eq=False)
class DegreeSequence:
    """The degree of every vertex of a graph on 0..n_nodes-1 (a :class:`~dpviz.core.protocols.Strategy`):
    Δ₁ = :data:`DEGREE_SENSITIVITY` = 2. ``answer`` takes canonical edges (m, 2)."""

    n_nodes: int
    name: str = "graph degree sequence"

    def sensitivity(self, family: Family) -> float:
        if family != "laplace":
            raise InputError("graph degree sequence: Laplace noise only (pure ε-edge-DP)")
        return DEGREE_SENSITIVITY

    def scales(self, noise: Noise) -> np.ndarray:
        return np.full(self.n_nodes, noise.scale(self.sensitivity(noise.family)))

    def answer(self, data: np.ndarray) -> np.ndarray:
        e = np.asarray(data, dtype=np.int64).reshape(-1, 2)
        return np.bincount(e.ravel(), minlength=self.n_nodes).astype(np.int64)


def measure_regions(bounds: Bounds, cells: EdgeCells, epsilon: float | np.ndarray, total_epsilon: float,
                    rng: np.random.Generator | None, *, discrete: bool, upper: bool = True) -> LinearMeasurement:
    """Noisy counts of the regions ``bounds`` through :func:`dpviz.core.protocols.measure`: Laplace(1/ε) per region
    (``epsilon`` per region or one for all), discrete (int64; OS CSPRNG when ``rng`` is None) or continuous.
    ``total_epsilon``: the budget the measurement spends (the sum of its levels' ε)."""
    noise = Noise.laplace(total_epsilon, discrete=discrete)
    return measure(RegionCounts(bounds, epsilon, upper), cells, noise, rng)


def measure_degrees(edges: np.ndarray, n_nodes: int, epsilon: float, rng: np.random.Generator | None, *,
                    discrete: bool) -> LinearMeasurement:
    """d + Lap(2/ε)^n for the degree sequence d of canonical ``edges`` (ε-edge-DP), through ``measure``."""
    return measure(DegreeSequence(int(n_nodes)), edges, Noise.laplace(epsilon, discrete=discrete), rng)


# ------------------------------------------------------------------------------------------- DRF's budget


def split_shares(split: object) -> tuple[float, float, float]:
    """The three shares ε_D^d : ε_D^c : ε_R, normalised to sum to 1."""
    try:
        parts = tuple(split)  # type: ignore[arg-type]
    except TypeError:
        raise InputError(f"split: expected three positive numbers ε_D^d : ε_D^c : ε_R, got {split!r}") from None
    if len(parts) != 3:
        raise InputError(f"split: expected three positive numbers ε_D^d : ε_D^c : ε_R, got {len(parts)} values")
    vals = [positive(f"split[{i}]", p) for i, p in enumerate(parts)]
    total = sum(vals)
    return vals[0] / total, vals[1] / total, vals[2] / total


def count_budgets(eps_counts: float, h: int) -> np.ndarray:
    """Geometric per-depth count budgets ε_i = 2^{i/3}(∛2 − 1) ε_D^c / (2^{(h+1)/3} − 1), i = 0..h.

    The quadtree budget of Cormode et al. (ICDE 2012) used by the paper (§3 Step 2, Eq. 7); they sum to
    ε_D^c (the last one absorbs the float rounding so the sum is exact to the last bit).
    """
    levels = int(h) + 1
    w = np.exp2((np.arange(1, levels + 1) - float(levels)) / 3.0)  # ∝ 2^{i/3}, relative to the deepest level
    eps = w / w.sum() * eps_counts
    eps[-1] = eps_counts - float(eps[:-1].sum())
    return eps


def max_height(n_nodes: int, eps_counts: float, mu: float = DEFAULT_MU_DRF, sensitivity: float = 1.0) -> int:
    """h_max of Eq. (3): the largest h with ∛2 (2^h)² − (2^h)^{5/3} ≤ (∛2 − 1)|V|² ε_D^c / (μ √2 GS(f)).

    Capped at ⌈log2 |V|⌉ (below that a leaf has less than one cell on average) and at least 1. The
    left side increases with h (its derivative in x = 2^h is 2∛2 x − (5/3)x^{2/3} > 0 for x ≥ 1).
    """
    n = int(n_nodes)
    rhs = (2.0 ** (1.0 / 3.0) - 1.0) * float(n) * float(n) * eps_counts / (mu * math.sqrt(2.0) * sensitivity)
    cap = max(1, math.ceil(math.log2(max(n, 2))))
    h = 0
    while h < cap:  # at most ~40 scalar steps
        x = 2.0 ** (h + 1)
        if 2.0 ** (1.0 / 3.0) * x * x - x ** (5.0 / 3.0) > rhs:
            break
        h += 1
    return max(1, h)


@dataclass(frozen=True)
class DrfAccount:
    """The budget of one DRF run: every sub-budget, by name, in the order they are spent.

    ``eps_split``: ε_D^d; ``eps_counts``: per-depth count budgets (depth 0..h_max); ``eps_relabel``:
    ε_R (the relabelling for drf-dp, the reconstruction EM for the published DRF). ``private`` says
    which of the two accountings it is.
    """

    epsilon: float
    h_max: int
    eps_split: float
    eps_counts: tuple[float, ...]
    eps_relabel: float
    private: bool

    @property
    def eps_split_stage(self) -> float:
        """ε_s = ε_D^d / (2 h_max): one exponential-mechanism stage (all regions of a depth, one axis)."""
        return self.eps_split / (2 * self.h_max)

    def budget(self) -> dict[str, float]:
        """Sub-budget name → ε; the values sum to ``epsilon`` (checked to 1e-9)."""
        out: dict[str, float] = {}
        if self.private:
            out["relabel (noisy degrees)"] = self.eps_relabel
        for d in range(self.h_max):
            out[f"split points depth {d} (rows, columns)"] = 2 * self.eps_split_stage
        for d, e in enumerate(self.eps_counts):
            out[f"counts depth {d}"] = float(e)
        if not self.private:
            out["reconstruction EM (ε_R)"] = self.eps_relabel
        total = math.fsum(out.values())
        if abs(total - self.epsilon) > _TOL * max(1.0, self.epsilon):
            raise AssertionError(f"DRF accountant: sub-budgets sum to {total!r}, not ε = {self.epsilon!r}")
        return out


def drf_account(epsilon: float, n_nodes: int, *, split: Sequence[float] = DEFAULT_SPLIT, mu: float = DEFAULT_MU_DRF,
                private: bool = True, max_height_override: int | None = None) -> DrfAccount:
    """The accounting of a DRF run (data-independent: it needs only ε, |V| and the options)."""
    epsilon = positive("epsilon", epsilon)
    mu = positive("mu", mu)
    s_d, s_c, _ = split_shares(split)
    eps_d = epsilon * s_d
    eps_c = epsilon * s_c
    eps_r = epsilon - eps_d - eps_c
    if max_height_override is None:
        h = max_height(n_nodes, eps_c, mu)
    else:
        if isinstance(max_height_override, bool) or not isinstance(max_height_override, (int, np.integer)) \
                or int(max_height_override) < 1:
            raise InputError(f"max_height: expected a whole number >= 1, got {max_height_override!r}")
        h = int(max_height_override)
    acc = DrfAccount(epsilon=epsilon, h_max=h, eps_split=eps_d, eps_counts=tuple(count_budgets(eps_c, h)),
                     eps_relabel=eps_r, private=private)
    acc.budget()  # asserts the sum
    return acc


# ------------------------------------------------------------------------------------------- baselines' budget


def geometric_budgets(fanouts: Sequence[int], epsilon: float) -> np.ndarray:
    """Per-depth count budgets ε_0..ε_L for a tree whose level d splits every node into ``fanouts[d]``.

    ε_d = ε · N_d^{1/6} / Σ_k N_k^{1/6}, N_d = Π_{k<d} fanouts[k] (the nominal number of nodes at
    depth d). This is Cormode et al. (ICDE 2012)'s geometric budget — ε_d proportional to the cube root of
    the number of depth-d nodes a range query touches, which in two dimensions grows as N_d^{1/2} — and
    for a quadtree (fan-out 4 everywhere) it is exactly their 2^{d/3}(2^{1/3} − 1) ε / (2^{(h+1)/3} − 1).
    The values sum to ε (to rounding).
    """
    epsilon = positive("epsilon", epsilon)
    log_n = np.concatenate([[0.0], np.cumsum(np.log(np.asarray(fanouts, dtype=np.float64)))])
    w = np.exp((log_n - log_n[-1]) / 6.0)  # shifted for range: only ratios matter
    return epsilon * w / w.sum()
