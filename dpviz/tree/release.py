"""Tree release end to end (paper Sec. 5, Alg. 2), in the two modes of :mod:`dpviz.core.modes`.

Unit of privacy: one person, counted in exactly one leaf. Adding or removing them changes their
leaf and every ancestor by exactly 1 — one count per depth level it reaches, at most h levels — so
the node vector has L1 sensitivity h and L2 sensitivity √h. The hierarchy (node ids, parents, hence
n, m, h) is public. The budget is split over the depth levels (:mod:`dpviz.tree.strategy`).

Both modes are the same pipeline, written with the core protocols:

1. the strategy :class:`~dpviz.tree.strategy.TreeLevels` gives v = BuildTree(x) (Eq. 25), the
   sensitivity and the per-node noise scales for a :class:`~dpviz.core.noise.Noise` and a split;
2. noise: ṽ = v + η (the measurement);
3. an estimator (:mod:`dpviz.tree.estimators`: GMC Alg. 2, Lee, PrivTrie, Boosting, Processless)
   turns ṽ into the released vector and its analytic per-node variance.

* :func:`simulate` (teaching, what-if): continuous noise from a seeded ``numpy`` Generator, one unit
  draw rescaled across ε (``unit``), every method on the same draw, metrics against the truth
  (rmse_NQ Eq. 40, rmse_RQ Eq. 41, bias Eq. 42, negatives, squared error vs. its expectation).
  Everything it returns is a :class:`Simulation` — not a private release.
* :func:`release` (to publish), ``release(data, noise, *, rng=None, split="uniform", method="gmc",
  plan=None, csv_text=False) -> TreeRelease``: discrete noise on integer counts
  (:func:`dpviz.core.samplers.discrete_laplace` / ``discrete_gaussian``, Canonne, Kamath & Steinke,
  NeurIPS 2020), drawn by :func:`dpviz.core.protocols.measure` from the OS CSPRNG unless a Generator
  is passed (tests only), one method, fresh noise every call, in one pass (:func:`release`). The
  :class:`TreeRelease` (a :class:`dpviz.core.release.Release`) holds the noisy counts, the estimate
  (``values``) and its analytic variance, and no truth; ``budget`` is the per-level
  :class:`~dpviz.core.release.BudgetSplit` (:func:`level_budget`), ``table()`` / ``columns()`` the
  published table (pandas / Arrow) and ``metadata()`` its ``OUT.meta.json``
  (:func:`dpviz.core.release.release_metadata`).

The released hierarchy is public only when it was declared (``TreeData.structure``, set by
:func:`dpviz.tree.hierarchy.join_counts`); a tree whose structure was read from its own data (``None``)
is released with ``structure read from the data: not private`` in its ``.meta.json`` (and in a
``structure`` column of :meth:`TreeRelease.table`); the file ``tree release`` writes says ``data`` in that
column on every row (:data:`NOTICE_VALUE`), the notice in full once, in its ``.meta.json``.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from dpviz.core.csv_writer import number_text
from dpviz.core.modes import RELEASE_NOTICE, SIMULATION_NOTICE
from dpviz.core.noise import Noise
from dpviz.core.protocols import LinearMeasurement, measure
from dpviz.core.release import BudgetSplit, release_metadata
from dpviz.core.samplers import MAX_SCALE
from dpviz.core.structure import STRUCTURE_FROM_DATA_NOTICE, StructureSource
from dpviz.errors import InputError
from dpviz.tree.estimators import (
    GLS_METHODS,
    METHOD_LABELS,
    METHODS,
    check_plan,
    estimator,
    gls_variance,
    plan_for,
    timed_fit,
)
from dpviz.tree.gmc import GMCPlan
from dpviz.tree.io import InInputOrder, input_order, node_columns, node_table
from dpviz.tree.metrics import consistency_bias, negatives, random_ranges, rmse_nq, rmse_rq
from dpviz.tree.model import Tree, TreeData
from dpviz.tree.strategy import SPLITS, Split, TreeLevels, check_split, level_shares

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "Split",
    "SPLITS",
    "METHODS",
    "METHOD_LABELS",
    "GLS_METHODS",
    "level_shares",
    "node_scales",
    "node_variances",
    "unit_noise",
    "expected_variance",
    "simulate",
    "Simulation",
    "SimResult",
    "simulation_table",
    "release",
    "TreeRelease",
    "level_budget",
    "LISTED_LEVELS",
    "published_variance",
    "RELEASE_COLUMNS",
    "NOTICE_COLUMN",
    "NOTICE_VALUE",
    "structure_of",
]

RELEASE_COLUMNS = ("node", "parent", "noisy", "released", "variance", "std")
NOTICE_COLUMN = "structure"
"""The last column of a release whose hierarchy was read from the data: :data:`NOTICE_VALUE` on every row of
the file ``tree release`` writes (:meth:`TreeRelease.columns`), the notice in full in :meth:`TreeRelease.table`."""
NOTICE_VALUE = "data"
"""What the ``structure`` column of ``tree release``'s file says on every row when the hierarchy was read from
the data (the ``source`` of its ``.meta.json``'s ``structure``, whose ``notice`` says it in full)."""


def structure_of(data: TreeData) -> StructureSource:
    """Where ``data``'s hierarchy came from: its declaration, else the data itself (not private)."""
    return data.structure if data.structure is not None else StructureSource("data", data.name)


# ---- structure-only helpers (no data) ---------------------------------------------------------------
def node_scales(tree: Tree, noise: Noise, split: Split = "uniform") -> np.ndarray:
    """Per-node noise scale (b or σ) for ``noise`` and ``split`` (:meth:`TreeLevels.scales`)."""
    return TreeLevels(tree, split).scales(noise)


def node_variances(tree: Tree, noise: Noise, split: Split = "uniform") -> np.ndarray:
    """Exact per-node noise variance d_i (``noise.variance_at`` of the scales: 2b² / σ² continuous,
    the discrete samplers' own variances for discrete noise)."""
    return TreeLevels(tree, split).variances(noise)


def unit_noise(noise: Noise, n: int, rng: np.random.Generator) -> np.ndarray:
    """n unit-scale continuous draws Lap(1) or N(0, 1) (simulation only): noise = unit · scales, so
    one draw can be rescaled when ε moves. Refused for discrete noise."""
    return noise.standard(rng, n)


def expected_variance(tree: Tree, noise: Noise, split: Split = "uniform", plan: GMCPlan | None = None) -> np.ndarray:
    """Per-node variance Var(v̄_i) of the optimally consistent release (GMC = Lee = PrivTrie) for
    ``noise`` and ``split``: Theorem 5 (Σ = m σ² for the uniform split, Eq. 28) and its weighted form.
    ``plan`` must have been built for this split (else InputError)."""
    return gls_variance(tree, node_variances(tree, noise, split), plan)


# ---- simulation ---------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class SimResult:
    """One method's simulated output (DOH order): released vector, analytic variance, wall time."""

    method: str
    released: np.ndarray
    variance: np.ndarray
    seconds: float


@dataclass(frozen=True, eq=False)
class Simulation:
    """What :func:`simulate` returns — a simulation, not a private release (``notice``).

    ``table``: one row per method (rmse_NQ, rmse_RQ, bias, negatives, seconds, total_sq_error,
    expected_sq_error); ``noisy``: the one noisy vector ṽ every method post-processed (float);
    ``expected``: Var(v̄_i) of the optimal release (None when no GLS method ran)."""

    table: pd.DataFrame
    results: dict[str, SimResult]
    noisy: np.ndarray
    expected: np.ndarray | None
    noise: Noise
    split: Split
    mode: str = field(default="simulate", init=False)
    notice: str = field(default=SIMULATION_NOTICE, init=False)


METRIC_COLUMNS = ["method", "rmse_NQ", "rmse_RQ", "bias", "negatives", "seconds", "total_sq_error",
                  "expected_sq_error"]


def simulate(
    data: TreeData,
    noise: Noise,
    methods: list[str] | tuple[str, ...],
    rng: np.random.Generator | None,
    *,
    split: Split = "uniform",
    unit: np.ndarray | None = None,
    plan: GMCPlan | None = None,
    q: int = 10_000,
    ranges: tuple[np.ndarray, np.ndarray] | None = None,
    expected: np.ndarray | None = None,
) -> Simulation:
    """Post-process ONE continuous noise draw with every method in ``methods`` and score each
    against the truth (a simulation: the truth is used).

    ṽ = v + unit · scales, ``unit`` = :func:`unit_noise` drawn from ``rng`` (drawn before the
    ranges, so a seed reproduces the same numbers as before) or passed in to rescale one draw
    across ε (then ``rng`` may be None when ``ranges`` are given too). ``plan``: a cached GMC stage 1 for this split (checked). ``ranges``: the q random leaf
    ranges of rmse_RQ (drawn from ``rng`` if None). ``expected``: a precomputed
    :func:`expected_variance`. Columns: rmse_NQ (Eq. 40), rmse_RQ (Eq. 41), bias (Eq. 42), negative
    nodes, seconds, total squared error and its expectation — Σ d_i for Processless (Eq. 27),
    Σ Var(v̄_i) for the GLS methods (Theorem 5, Eq. 28), NaN for Boosting (no closed form).
    """
    if noise.discrete:
        raise InputError("simulate: uses continuous noise from a seeded Generator; pass Noise(..., discrete=False) "
                         "(discrete noise is for release())")
    split = check_split(split)
    for m in methods:
        estimator(m, data.tree)  # unknown names fail before any work
    tree, v = data.tree, data.v
    strategy = TreeLevels(tree, split)
    scales = strategy.scales(noise)
    if unit is None:
        if not isinstance(rng, np.random.Generator):
            raise InputError("simulate: pass a numpy Generator (numpy.random.default_rng(seed)) or a unit draw")
        unit = unit_noise(noise, tree.n, rng)
    unit = np.asarray(unit, dtype=float)
    if unit.shape != (tree.n,):
        raise InputError(f"simulate: the unit draw has shape {unit.shape}, expected ({tree.n},)")
    noisy = v + unit * scales  # one draw, shared by every method
    noisy.flags.writeable = False
    meas = LinearMeasurement(strategy.name, noisy, scales, noise, strategy.sensitivity(noise.family))
    d = meas.variance
    gls = [m for m in methods if m in GLS_METHODS]
    if gls:
        if plan is None:
            plan = plan_for(tree, d)
        else:
            check_plan(plan, tree, d)
    results: dict[str, SimResult] = {}
    for m in methods:
        est, secs = timed_fit(estimator(m, tree, plan), meas)
        results[m] = SimResult(m, est.values, est.variance, secs)
    if expected is None and gls:
        expected = results[gls[0]].variance
    rows = []
    if results:
        if ranges is None:
            if not isinstance(rng, np.random.Generator):
                raise InputError("simulate: pass a numpy Generator or the leaf ranges for rmse_RQ")
            ranges = random_ranges(tree.m, q, rng)
        x = data.x
        sum_d = float(d.sum())
        sum_exp = np.nan if expected is None else float(np.sum(expected))
        for m, r in results.items():
            predicted = sum_d if m == "processless" else sum_exp if m in GLS_METHODS else np.nan
            rows.append({
                "method": m,
                "rmse_NQ": rmse_nq(r.released, v),
                "rmse_RQ": rmse_rq(r.released[tree.n1:], x, ranges),
                "bias": consistency_bias(tree, r.released),
                "negatives": negatives(r.released),
                "seconds": r.seconds,
                "total_sq_error": float(np.sum((r.released - v) ** 2)),
                "expected_sq_error": predicted,
            })
    import pandas as pd  # only simulations build DataFrames: a release never imports pandas

    table = pd.DataFrame(rows, columns=METRIC_COLUMNS)
    table.attrs["mode"] = "simulate"
    return Simulation(table, results, noisy, expected, noise, split)


def simulation_table(data: TreeData, sim: Simulation) -> pd.DataFrame:
    """The per-node simulation table in input order: ``node,parent,true,noisy,released`` for one method,
    ``released_<method>`` columns for several (it holds the truth: a simulation, never a release)."""
    if len(sim.results) == 1:
        (r,) = sim.results.values()
        cols = {"released": r.released}
    else:
        cols = {f"released_{m}": r.released for m, r in sim.results.items()}
    return node_table(data.tree, true=data.v, noisy=sim.noisy, **cols)


# ---- private release -----------------------------------------------------------------------------------
def level_budget(noise: Noise, h: int, split: Split = "uniform") -> BudgetSplit:
    """The budget a tree release spends per depth level (:mod:`dpviz.tree.strategy`): ε_ℓ = share_ℓ · ε
    (Laplace, basic composition) or ρ_ℓ = share_ℓ · ρ (Gaussian, zCDP composition, Bun & Steinke 2016,
    Lemma 2.3), one part per level, root first. A uniform split over more than :data:`LISTED_LEVELS` levels
    is one part, ``levels 1–h``, the composition of its h equal shares (a 500,001-level path would
    otherwise list half a million parts)."""
    shares = level_shares(h, split)
    rho = None if noise.family == "laplace" else noise.rho
    if split == "uniform" and h > LISTED_LEVELS:
        return BudgetSplit.shares(noise.budget, [f"levels 1–{h:,} (1/{h:,} each)"], [1.0], rho=rho)
    return BudgetSplit.shares(noise.budget, [f"level {lev}" for lev in range(1, h + 1)], shares, rho=rho)


LISTED_LEVELS = 64
"""Above this many levels a uniform split's budget is described as one part (:func:`level_budget`)."""


@dataclass(frozen=True, eq=False)
class TreeRelease:
    """A private tree release (a :class:`dpviz.core.release.Release`): nothing in it is the truth or computed
    from it except through the noise.

    Arrays are in DOH order (``tree.order`` maps to the input order): ``noisy`` = v + η (int64),
    ``released`` = the estimator's output (also ``values``), ``variance`` = its analytic per-node variance
    (from the structure and the noise only). ``variance_text``: the ``variance`` and ``std`` columns as CSV
    number text (strings, or runs dictionary-encoded) in the input (row) order of the published table, formatted while the noise was drawn
    (``release(..., csv_text=True)``), else None."""

    tree: Tree
    source: str
    method: str
    noisy: np.ndarray
    released: np.ndarray
    variance: np.ndarray
    noise: Noise
    split: Split
    sensitivity: float
    level_scales: np.ndarray
    randomness: str
    created_utc: str
    structure: StructureSource = field(default=StructureSource("data", "tree"))
    variance_text: tuple[pa.Array, pa.Array] | None = field(default=None, repr=False)
    capability: str = field(default="tree", init=False)
    mode: str = field(default="release", init=False)
    notice: str = field(default=RELEASE_NOTICE, init=False)

    @property
    def values(self) -> np.ndarray:
        """The released node counts (DOH order): ``released``."""
        return self.released

    @property
    def expected_total_sq_error(self) -> float:
        """Σ_i Var(released_i): analytic, from the structure and the noise only (NaN for Boosting)."""
        return float(np.sum(self.variance))

    @property
    def budget(self) -> BudgetSplit:
        """The sub-budget of each depth level (:func:`level_budget`); they compose to ``noise.budget``."""
        return level_budget(self.noise, self.tree.h, self.split)

    def table(self) -> pd.DataFrame:
        """The published table ``node,parent,noisy,released,variance,std`` in input order (a DataFrame; plus
        a ``structure`` column holding :data:`STRUCTURE_FROM_DATA_NOTICE` on every row when the hierarchy was
        read from the data): settings, structure and analytic error only — nothing in it is computed from the
        counts but through the noise."""
        return node_table(self.tree, **self._columns(text=False), **_notice_column(self, STRUCTURE_FROM_DATA_NOTICE))

    def columns(self) -> pa.Table:
        """:meth:`table` as an Arrow table (what ``tree release`` writes: no pandas on the way), with the
        ``variance``/``std`` text of ``variance_text`` when it was formatted (write those columns plain). Its
        ``structure`` column (a hierarchy read from the data) says :data:`NOTICE_VALUE` on every row, the
        notice in full once in the ``.meta.json`` (``structure`` and ``columns``) and on stdout: a 10^6-node
        release would otherwise repeat 42 bytes per row, a third of the file."""
        return node_columns(self.tree, **self._columns(text=True), **_notice_column(self, NOTICE_VALUE))

    @property
    def text_columns(self) -> tuple[str, ...]:
        """The columns of :meth:`columns` that hold number text (the CSV writer's ``plain``: never quoted)."""
        return ("variance", "std") if self.variance_text is not None else ()

    def _columns(self, text: bool) -> dict[str, Any]:
        if text and self.variance_text is not None:
            var, std = (InInputOrder(col) for col in self.variance_text)
        else:
            var, std = self.variance, np.sqrt(self.variance)
        return {"noisy": self.noisy, "released": self.released, "variance": var, "std": std}

    def metadata(self) -> dict[str, Any]:
        """The ``OUT.meta.json`` of the release (:func:`dpviz.core.release.release_metadata`): settings,
        structure, the per-level budget and the analytic error only."""
        t = self.tree
        expected = self.expected_total_sq_error
        return release_metadata(
            "tree", self.noise, seeded=self.randomness != "OS CSPRNG", sensitivity=self.sensitivity,
            budget_split=self.budget,
            source=self.source, method=self.method, method_label=METHOD_LABELS[self.method], split=self.split,
            level_shares=level_shares(t.h, self.split).tolist(), level_scales=self.level_scales.tolist(),
            structure={"n": t.n, "m": t.m, "h": t.h, **self.structure.as_dict()},
            expected_total_squared_error=expected if np.isfinite(expected) else None,
            columns={
                "noisy": "node count + discrete noise (int64)",
                "released": f"{METHOD_LABELS[self.method]} applied to noisy",
                "variance": "analytic variance of released (from the structure and the noise only; empty when "
                            "the method has no closed form)",
                "std": "square root of variance",
                **({} if self.structure.private else
                   {NOTICE_COLUMN: "where the hierarchy (node list) came from, on every row: the data, not a "
                                   f"declaration ({STRUCTURE_FROM_DATA_NOTICE})"}),
            },
            randomness=self.randomness)


def _check_integer_leaves(data: TreeData) -> None:
    x = np.asarray(data.x)
    if x.dtype.kind in "iu":
        return
    bad = np.flatnonzero(np.rint(x) != x)
    if bad.size:
        j = int(bad[0])
        label = data.tree.leaf_labels[j]
        raise InputError(f"leaf {label!r} has count {x[j]:g}: a release adds discrete noise and needs integer "
                         "counts (round or scale your data first, or use simulate)")


def _check_method(method: Any) -> str:
    if not isinstance(method, str) or method == "all":
        raise InputError(f"method: a release publishes ONE post-processing method ({', '.join(METHODS)}), got "
                         f"{method!r}; compare methods with simulate")
    if method not in METHODS:
        raise InputError(f"method: unknown {method!r}; choose one of {', '.join(METHODS)}")
    return method


def release(
    data: TreeData,
    noise: Noise,
    *,
    rng: np.random.Generator | None = None,
    split: Split = "uniform",
    method: str = "gmc",
    plan: GMCPlan | None = None,
    csv_text: bool = False,
) -> TreeRelease:
    """A private release of every node count: v = BuildTree(x), ṽ = v + η with discrete noise
    (:func:`dpviz.core.protocols.measure`), then ONE post-processing ``method`` (Alg. 2 for GMC).

    ``noise`` must be discrete (``Noise.from_params(..., discrete=True)``) and the leaf counts
    integers. ``rng=None`` (the default) draws from the OS CSPRNG, fresh noise every call; pass a
    seeded Generator only in tests. ``plan``: an optional cached GMC stage 1, which must match the
    noise variances of ``split`` (InputError otherwise, before any noise is drawn). The result holds
    no truth.

    One pass: the arguments are checked once, the strategy and the GMC plan built once, and the published
    variance — known from the structure and the noise alone (``estimator.variance(d)``: Theorem 5 for
    the GLS methods, Eq. 27 for processless) — is computed once, on a worker thread while the noise is
    drawn and post-processed (``estimator.values``). ``csv_text=True`` (what ``tree release`` passes) also
    draws the measurement on a worker thread while GMC stage 1 is built, and formats the ``variance`` and
    ``std`` columns as CSV number text there (``variance_text``): NumPy and Arrow's number formatting release
    the GIL, which takes them off the critical path.
    """
    split, method = _check_release(data, noise, split, method, rng)
    tree = data.tree
    strategy = TreeLevels(tree, split)
    level_scales = strategy.level_scales(noise)
    _check_drawable(level_scales, split)
    d = np.asarray(noise.variance_at(level_scales), dtype=float)[tree.depth - 1]  # strategy.variances, once
    if not csv_text:  # the variance first: a caller's plan that does not fit is refused before any draw
        est = estimator(method, tree, plan_for(tree, d) if plan is None and method in GLS_METHODS else plan)
        variance = est.variance(d)
        released = est.values(_with_variance(meas := measure(strategy, data, noise, rng), d))
        text = None
    else:
        from concurrent.futures import ThreadPoolExecutor  # only the CLI's write path: kept off import time

        if plan is not None and method in GLS_METHODS:
            check_plan(plan, tree, d)
        with ThreadPoolExecutor(2) as pool:  # the measurement beside GMC stage 1 (independent: the plan needs
            # only the structure and d); then Theorem 5's O(n) variance and its text beside GMC stage 2
            drawn = pool.submit(measure, strategy, data, noise, rng)
            est = estimator(method, tree, plan_for(tree, d) if plan is None and method in GLS_METHODS else plan)
            var = pool.submit(est.variance, d)
            rows = pool.submit(lambda: input_order(tree, var.result()))  # text in the rows' order: no string gather
            var_text = pool.submit(lambda: number_text(rows.result(), dictionary=True))
            std_text = pool.submit(lambda: number_text(np.sqrt(rows.result()), dictionary=True))
            released = est.values(_with_variance(meas := drawn.result(), d))
            variance, text = var.result(), (var_text.result(), std_text.result())
    return TreeRelease(
        tree=tree,
        source=data.name,
        method=method,
        noisy=np.asarray(meas.values, dtype=np.int64),
        released=np.asarray(released, dtype=float),
        variance=np.asarray(variance, dtype=float),
        noise=noise,
        split=split,
        sensitivity=meas.sensitivity,
        level_scales=level_scales,
        randomness="OS CSPRNG" if rng is None else "caller-supplied numpy Generator (testing only: not private)",
        created_utc=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        structure=structure_of(data),
        variance_text=text,
    )


@dataclass(frozen=True, eq=False)
class _KnownVariance(LinearMeasurement):
    """A measurement whose per-node noise variance was computed once already (``d``: the noise's exact variance
    at each node's scale, ``noise.variance_at(level_scales)[depth - 1]``, the same numbers as
    :attr:`LinearMeasurement.variance` computes from the per-node scales, without its n-sized pass)."""

    d: np.ndarray = field(default=None, repr=False)

    @property
    def variance(self) -> np.ndarray:
        return self.d


def _with_variance(meas: LinearMeasurement, d: np.ndarray) -> LinearMeasurement:
    return _KnownVariance(meas.strategy, meas.values, meas.scales, meas.noise, meas.sensitivity, d)


def _check_drawable(level_scales: np.ndarray, split: Split) -> None:
    """InputError, before any work, if a level's noise scale is above the discrete samplers' cap
    (:data:`dpviz.core.samplers.MAX_SCALE`): its budget share is too small to be drawn (a geometric split on
    a deep tree gives the root a share of about 2^-(h-1)/3)."""
    bad = np.flatnonzero(~(level_scales <= MAX_SCALE))
    if bad.size:
        lev = int(bad[0])
        raise InputError(f"noise: depth level {lev + 1:,} of {level_scales.size:,} would get noise of scale "
                         f"{float(level_scales[lev]):.3g}, above the discrete samplers' cap MAX_SCALE = 2^40 (its "
                         "budget share is too small to release); "
                         + ("use the uniform split or a larger budget" if split == "geometric" else
                            "use a larger budget"))


def _check_release(data: TreeData, noise: Noise, split: Split, method: str,
                   rng: np.random.Generator | None) -> tuple[Split, str]:
    """The arguments of a release, checked before any work: (split, method)."""
    if not isinstance(noise, Noise):
        raise InputError(f"noise: expected a dpviz.core.noise.Noise, got {type(noise).__name__}")
    if not noise.discrete:
        raise InputError("release: noise must be discrete (Noise.from_params(..., discrete=True)); continuous "
                         "floating-point noise on counts is for simulate only (Mironov, CCS 2012)")
    split = check_split(split)
    method = _check_method(method)
    if rng is not None and not isinstance(rng, np.random.Generator):
        raise InputError("rng: expected None (OS CSPRNG) or a numpy Generator (tests only)")
    _check_integer_leaves(data)
    return split, method


def _notice_column(rel: TreeRelease, say: str) -> dict[str, InInputOrder]:
    """``{"structure": say on every row}`` (dictionary-encoded: one copy of the text) when the hierarchy was
    read from the data; nothing when it was declared."""
    if rel.structure.private:
        return {}
    text = say.encode()  # Arrow arrays from buffers: pa.array() would import pandas
    notice = pa.Array.from_buffers(pa.string(), 1, [None, pa.py_buffer(np.array([0, len(text)], np.int32)),
                                                    pa.py_buffer(text)])
    zeros = pa.Array.from_buffers(pa.int8(), rel.tree.n, [None, pa.py_buffer(np.zeros(rel.tree.n, np.int8))])
    return {NOTICE_COLUMN: InInputOrder(pa.DictionaryArray.from_arrays(zeros, notice))}


def published_variance(tree: Tree, noise: Noise, split: Split = "uniform", method: str = "gmc",
                       plan: GMCPlan | None = None) -> np.ndarray:
    """The ``variance`` column a release with ``method`` publishes, from the structure and the noise
    only, so known before any noise is drawn (``estimator.variance``): Theorem 5's GLS variance (GMC,
    Lee, PrivTrie), the noise variances (processless, Eq. 27), NaN (Boosting: no closed form)."""
    method = _check_method(method)
    return estimator(method, tree, plan).variance(node_variances(tree, noise, check_split(split)))
