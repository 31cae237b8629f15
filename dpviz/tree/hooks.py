"""The tree's entries into the tools (registry hooks): an audit target, a sweep target and the planner's curves.

* :func:`audit_target` — a 7-node binary hierarchy and the same hierarchy with one more person in one leaf
  (the unit of privacy of :mod:`dpviz.tree`): :func:`dpviz.tree.release.release` with discrete Laplace noise
  and one post-processing method, on the auditor's seeded Generator (a simulation). Events: the released
  count of that leaf exceeds τ; the sum of the noisy counts on the leaf's root path exceeds τ (every count
  on it moves by 1).
* :func:`sweep_target` — :func:`dpviz.tree.release.simulate`: one continuous noise draw, every method on it.
  Metrics rmse_NQ (Eq. 40), rmse_RQ (Eq. 41), bias (Eq. 42), negatives and total_sq_error, whose expectation
  is Σ_i Var(v̄_i): Theorem 5 / Eq. 28 for the GLS methods (GMC, Lee, PrivTrie), Σ d_i (Eq. 27) for
  Processless, none for Boosting (Yang et al., "Generation Matrix: An Embeddable Matrix Representation for
  Hierarchical Trees", Theoretical Computer Science, 2023, arXiv:2201.11297).
* :func:`plan_curves` — per strategy (budget split over levels: uniform or geometric) and estimator, the
  optimally consistent release (GMC = Lee = PrivTrie: one estimator, Theorem 5, Eq. 28 and its weighted form,
  :func:`dpviz.tree.release.expected_variance`) and the processless noisy counts (Eq. 27), at unit budget.
  Boosting has no closed-form variance and is not planned.

  - ``query="node"``: RMSE per node, rmse_NQ of Eq. 40: √(mean_i Var v̄_i).
  - ``query="range"``: RMSE per leaf-range query, rmse_RQ of Eq. 41, the mean over ranges of
    Var(Σ_{j∈[a,b]} x̄_j). For the GLS release Cov(v̄) = D − D M (MᵀDM)⁻¹ MᵀD, so for the range's indicator
    r, Cov(v̄) r = c · gmc(plan, d_rel ∘ r) (:func:`dpviz.tree.gmc.gmc` is I − D M (MᵀDM)⁻¹Mᵀ, and GLS is
    invariant to the scale c of D), and Var = rᵀ Cov(v̄) r = rᵀDr − uᵀ(MᵀDM)⁻¹u with u = MᵀDr: every range at
    once as one sparse solve with a matrix of right-hand sides (:func:`range_variance`). The mean is over a
    deterministic lattice of ranges (:func:`lattice_ranges`, every range when m ≤ 64), which stands for the
    uniformly random ranges of the paper's experiments (:func:`dpviz.tree.metrics.random_ranges`).

Module constants and functions the tools read from here: ``AUDIT_HELP``/``AUDIT_ARGS`` (the ``audit tree``
verb), ``SWEEP_HELP``/``SWEEP_ARGS``/``SWEEP_OPTIONS`` (``sweep tree``), ``PLAN_PARAMS``/``PLAN_PRESETS`` (a
planned release's keys and ready-made ones), ``plan_dots`` (the planner's Monte-Carlo dots, analytic
capabilities), ``PLAN_HELP``/``plan_args``/``plan_command`` (``plan tree``), ``CANONICAL``, ``LEDGER_ARGS``
and ``ledger_load`` (the ledger). Light on import: NumPy and the core types are imported when a hook runs, so
the tools' CLI registrars can read the constants cheaply.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from dpviz.errors import InputError

if TYPE_CHECKING:
    import numpy as np
    from dpviz.core.curves import Curve, DotGroup
    from dpviz.core.events import AuditTarget
    from dpviz.core.noise import Family
    from dpviz.core.trials import Record

__all__ = ["AUDIT_ARGS", "AUDIT_HELP", "CANONICAL", "LATTICE_POINTS", "LEDGER_ARGS", "MAX_QUERIES", "PLAN_HELP",
           "PLAN_PARAMS", "PLAN_PRESETS", "RANGE_WORK", "SWEEP_ARGS", "SWEEP_HELP", "SWEEP_OPTIONS",
           "TREE_ESTIMATORS", "TREE_QUERIES", "audit_target", "lattice_ranges", "ledger_load",
           "plan_args", "plan_command", "plan_curves", "plan_dots", "range_variance",
           "sweep_target", "tree_curves", "tree_target", "tree_unit_variances", "TreeTarget"]

# ---- audit ------------------------------------------------------------------------------------------------
AUDIT_HELP = "a tree and the same tree with one more person in one leaf"
AUDIT_ARGS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("--method", {"default": "gmc", "help": "post-processing method of dpviz.tree (default: gmc)"}),
    ("--split", {"default": "uniform", "help": "budget split over levels: uniform or geometric"}),
)
"""The ``audit tree`` flags (argparse ``add_argument`` keywords); their values go to :func:`audit_target`."""


def audit_target(epsilon: float = 1.0, *, method: str = "gmc", split: str = "uniform", leaf: int = 0) -> AuditTarget:
    """Tree: root → 2 → 4 leaves (x = 3, 1, 4, 2) and the same with one more person in leaf ``leaf``."""
    import numpy as np

    from dpviz.core.accounting import positive
    from dpviz.core.events import AuditTarget, threshold_event
    from dpviz.core.noise import Noise
    from dpviz.tree.model import TreeData
    from dpviz.tree.model import tree_from_parents
    from dpviz.tree.release import METHODS, release
    from dpviz.tree.strategy import check_split

    epsilon = positive("epsilon", epsilon)
    if method not in METHODS:
        raise InputError(f"--method: unknown tree method {method!r}; expected one of {', '.join(METHODS)}")
    split = check_split(split)
    tree = tree_from_parents(np.array([-1, 0, 0, 1, 1, 2, 2]))
    x0 = np.array([3.0, 1.0, 4.0, 2.0])
    if isinstance(leaf, bool) or leaf not in range(tree.m):
        raise InputError(f"leaf: expected 0..{tree.m - 1}, got {leaf!r}")
    x1 = x0.copy()
    x1[leaf] += 1.0
    node = tree.n1 + leaf  # leaves sit after the internal nodes in DOH order (BuildTree, Eq. 25)
    path = [node]
    while tree.parent[path[-1]] >= 0:  # the root path: h nodes (h = 3 here)
        path.append(int(tree.parent[path[-1]]))
    path_idx = np.asarray(path)
    noise = Noise.laplace(epsilon, discrete=True)

    def release_fn(data: Any, rng: np.random.Generator) -> Any:
        return release(data, noise, split=split, method=method, rng=rng)

    return AuditTarget(
        capability="tree", mechanism=f"{method} ({split} split, discrete Laplace)",
        neighbours=f"one more person in leaf {leaf}",
        D0=TreeData(tree, x0, "audit tree"), D1=TreeData(tree, x1, "audit tree + 1"), release_fn=release_fn,
        events=(threshold_event(f"released count of leaf {leaf}", lambda r: r.released[node]),
                threshold_event(f"sum of the noisy counts on leaf {leaf}'s root path",
                                lambda r: float(r.noisy[path_idx].sum()))),
        epsilon=epsilon)


# ---- sweep ------------------------------------------------------------------------------------------------
MAX_QUERIES = 10_000_000
"""The most random leaf ranges a tree trial scores (``--queries``): 10⁷ ranges already hold each range's
error to well under 1%; the ranges' memory grows with their number."""
SWEEP_HELP = "tree methods (GMC, Lee, PrivTrie, Boosting, Processless) on a tree file or sample:county"
SWEEP_OPTIONS: dict[str, Any] = {"split": "uniform", "queries": 10_000}
"""The tree sweep's settings (``SweepSpec.options``) and their defaults."""
SWEEP_ARGS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("--split", {"choices": ("uniform", "geometric"), "default": "uniform", "help": "budget split over levels"}),
    ("--queries", {"type": int, "default": 10_000, "help": "random leaf ranges for rmse_RQ (default 10000)"}),
)


@dataclass(frozen=True, eq=False)
class TreeTarget:
    capability: ClassVar[str] = "tree"
    metrics: ClassVar[tuple[str, ...]] = ("rmse_NQ", "rmse_RQ", "bias", "negatives", "total_sq_error")

    data: Any  # dpviz.tree.model.TreeData
    methods: tuple[str, ...]
    delta: float | None
    split: str
    queries: int
    plan: Any  # dpviz.tree.gmc.GMCPlan | None: stage 1 of GMC, the same for every ε (variances scale)

    @property
    def name(self) -> str:
        return str(self.data.name)

    @property
    def noise(self) -> str:
        from dpviz.core.trials import noise_text

        return noise_text(self.delta)

    def trial(self, epsilon: float, seed: np.random.SeedSequence) -> list[Record]:
        import numpy as np

        from dpviz.core.trials import NAN, continuous_noise
        from dpviz.tree.release import simulate

        sim = simulate(self.data, continuous_noise(epsilon, self.delta), self.methods, np.random.default_rng(seed),
                       split=self.split, plan=self.plan, q=self.queries)
        t = sim.table  # a few rows: read by column (DataFrame.to_dict per trial cost more than the trial's GMC)
        cols = {c: t[c].to_numpy().tolist() for c in (*self.metrics, "expected_sq_error")}
        out: list[Record] = []
        for i, method in enumerate(t["method"].tolist()):
            for metric in self.metrics:
                analytic = float(cols["expected_sq_error"][i]) if metric == "total_sq_error" else NAN
                out.append((method, metric, float(cols[metric][i]), analytic))
        return out


def tree_target(source: Any, methods: str | tuple[str, ...], delta: float | None, epsilon: float,
                split: str = "uniform", queries: int = 10_000) -> TreeTarget:
    """The tree trials of ``source`` (``sample:NAME``, a tree file or a ``TreeData``); GMC's stage 1 computed
    once at ``epsilon`` (any ε: the variances scale)."""
    from dpviz.core.trials import continuous_noise, is_path, pick_methods
    from dpviz.tree.estimators import GLS_METHODS, METHODS, plan_for
    from dpviz.tree.io import load as load_source
    from dpviz.tree.model import TreeData
    from dpviz.tree.release import node_variances
    from dpviz.tree.strategy import check_split

    split = check_split(split)
    if isinstance(queries, bool) or not isinstance(queries, int) or not 1 <= queries <= MAX_QUERIES:
        raise InputError(f"--queries: expected an integer from 1 to {MAX_QUERIES:,} (MAX_QUERIES), got {queries!r}")
    methods = pick_methods(methods, list(METHODS), "tree method")
    data = load_source(source) if is_path(source) else source
    if not isinstance(data, TreeData):
        raise InputError(f"tree sweep: expected sample:NAME, a tree file or a TreeData, got {type(data).__name__}")
    plan = None
    if set(methods) & set(GLS_METHODS):
        plan = plan_for(data.tree, node_variances(data.tree, continuous_noise(epsilon, delta), split))
    return TreeTarget(data, methods, delta, split, queries, plan)


def sweep_target(spec: Any) -> TreeTarget:
    """The target of a sweep ``spec`` (a :class:`dpviz.sweep.spec.SweepSpec` of this capability)."""
    from dpviz.core.trials import check_options

    opts = check_options("tree", SWEEP_OPTIONS, spec.options)
    return tree_target(spec.source, spec.methods, spec.delta, spec.epsilons[0], opts["split"], opts["queries"])


# ---- plan -------------------------------------------------------------------------------------------------
PLAN_PARAMS: dict[str, Any] = {"data": "sample:county", "query": "node", "split": "all", "noise": "laplace",
                               "mechanism": None}
"""The keys of a planned tree release (a releases JSON, the page) and their defaults."""
PLAN_PRESETS: dict[str, tuple[str, dict[str, Any]]] = {
    "county-nodes": ("County tree: every node count", {"data": "sample:county", "query": "node"}),
    "county-ranges": ("County tree: leaf-range queries", {"data": "sample:county", "query": "range"}),
}
"""Ready-made planned releases on the bundled data (name → (title, params)), for the planner page and examples."""
TREE_QUERIES: tuple[str, ...] = ("node", "range")
TREE_ESTIMATORS: dict[str, str] = {"gmc": "GMC (optimally consistent; = Lee = PrivTrie)", "processless": "Processless"}
LATTICE_POINTS = 64
RANGE_WORK = 30_000_000
"""Node visits allowed for the range-variance passes (the lattice shrinks on very large trees)."""




def lattice_ranges(m: int, points: int = LATTICE_POINTS) -> tuple[np.ndarray, np.ndarray]:
    """Leaf ranges [a, b] (0-based, inclusive): every range when m ≤ ``points``, else every pair a ≤ b of
    ``points`` evenly spaced leaf positions (cell midpoints) — a deterministic stand-in for uniform
    random ranges (the pairs are spread evenly over the triangle a ≤ b)."""
    import numpy as np

    if m < 1:
        raise InputError("tree: no leaves")
    pos = np.arange(m) if m <= points else np.unique(((np.arange(points) + 0.5) * m / points).astype(np.int64))
    i, j = np.triu_indices(pos.size)
    return pos[i], pos[j]


RANGE_BLOCK = 1 << 22
"""The largest right-hand-side matrix (internal nodes × range boundaries or ranges) :func:`range_variance` solves
at once; above it (very large trees) it makes one GMC pass per range instead."""
GRAM_BOUNDS = 2048
"""At most this many distinct range boundaries (and fewer than ranges, e.g. a lattice): :func:`range_variance`
solves for the boundaries and reads every range off their Gram matrix."""


def range_variance(tree, d: np.ndarray, ranges: tuple[np.ndarray, np.ndarray], *, gls: bool) -> np.ndarray:
    """Var of each leaf-range sum of the released leaves, for node noise variances ``d`` (DOH order).

    ``gls=False``: the noisy leaves, Σ_{j∈range} d_j (prefix sums). ``gls=True``: the optimally consistent
    release, rᵀ Cov(v̄) r = rᵀ D r − uᵀ (MᵀDM)⁻¹ u with u = Mᵀ D r (module docstring): every range at once, one
    sparse solve with a matrix of right-hand sides (:func:`_gls_range_quadratic`), or on a tree too large for
    that matrix (:data:`RANGE_BLOCK`) Cov(v̄) r = c · gmc(plan, d_rel ∘ r), one O(n) GMC pass per range.
    """
    import numpy as np

    a, b = (np.asarray(x, dtype=np.int64) for x in ranges)
    n1 = tree.n1
    d = np.asarray(d, dtype=float)
    csum = np.concatenate([[0.0], np.cumsum(d[n1:])])
    noisy = csum[b + 1] - csum[a]
    if not gls or n1 == 0:
        return noisy
    bounds = np.unique(np.concatenate([a, b + 1]))
    gram = bounds.size <= min(a.size, GRAM_BOUNDS)
    if n1 * (bounds.size if gram else a.size) <= RANGE_BLOCK:
        return noisy - _gls_range_quadratic(tree, d, a, b, bounds, gram=gram)
    from dpviz.tree.estimators import check_plan, plan_for
    from dpviz.tree.gmc import gmc

    p = plan_for(tree, d)
    c = check_plan(p, tree, d)
    ref = np.ones(tree.n) if p.d is None else p.d
    out = np.empty(a.size)
    r = np.zeros(tree.n)
    for k in range(a.size):  # few ranges on such a tree (tree_curves bounds the work: RANGE_WORK)
        lo, hi = n1 + int(a[k]), n1 + int(b[k]) + 1
        r[lo:hi] = ref[lo:hi]
        out[k] = c * float(gmc(p, r)[lo:hi].sum())
        r[lo:hi] = 0.0
    return out


def _gls_range_quadratic(tree, d: np.ndarray, a: np.ndarray, b: np.ndarray, bounds: np.ndarray, *,
                         gram: bool) -> np.ndarray:
    """uᵀ (MᵀDM)⁻¹ u for each leaf range [a, b], u = Mᵀ D r (r the range's leaf indicator): what GLS removes
    from the noisy range sum's variance (Cov(v̄) = D − D M (MᵀDM)⁻¹ MᵀD, Eq. 8 weighted). ``bounds``: the
    sorted distinct values of a and b + 1.

    MᵀDM (n₁ × n₁: d_j + Σ_{c∈C_j} d_c on the diagonal, −d_c at (c, f_c) for internal c) is factorised once
    (sparse LU; a tree's matrix has no fill-in under minimum degree). D r lives on the leaves, so
    u_j = −Σ_{leaf c ∈ C_j ∩ range} d_c = p_j(b+1) − p_j(a), with p(β) the same sum over the leaves before
    position β: one column per boundary, from one bincount and a cumulative sum. ``gram``: solve for the
    boundaries' columns and read each range off their Gram matrix G = pᵀ (MᵀDM)⁻¹ p as
    G(b+1, b+1) − 2 G(a, b+1) + G(a, a) (few boundaries, many ranges: a lattice); else solve for each range's u.
    """
    import numpy as np
    import scipy.sparse as sp
    from scipy.sparse.linalg import splu

    n, n1 = tree.n, tree.n1
    parent = np.asarray(tree.parent, dtype=np.int64)
    inner = np.arange(1, n1)
    diag = d[:n1] + np.bincount(parent[1:], weights=d[1:], minlength=n1)[:n1]
    rows = np.concatenate([np.arange(n1), inner, parent[inner]])
    cols = np.concatenate([np.arange(n1), parent[inner], inner])
    vals = np.concatenate([diag, -d[inner], -d[inner]])
    lu = splu(sp.csc_matrix((vals, (rows, cols)), shape=(n1, n1)), permc_spec="MMD_AT_PLUS_A")
    k = bounds.size
    seg = np.searchsorted(bounds, np.arange(n - n1), side="right")  # leaf q is in p(bounds[j]) iff j >= seg[q]
    inc = np.bincount(parent[n1:] * (k + 1) + seg, weights=d[n1:], minlength=n1 * (k + 1))
    p = np.cumsum(inc.reshape(n1, k + 1)[:, :k], axis=1)
    ia, ib = np.searchsorted(bounds, a), np.searchsorted(bounds, b + 1)
    if gram:
        g = p.T @ lu.solve(p)
        g = 0.5 * (g + g.T)  # symmetric up to rounding
        return g[ib, ib] - 2.0 * g[ia, ib] + g[ia, ia]
    u = p[:, ib] - p[:, ia]
    return np.einsum("ij,ij->j", u, lu.solve(u))


def tree_unit_variances(tree, family: Family, split: str, estimator: str) -> np.ndarray:
    """Per-node variance at unit budget for one (split, estimator): GLS (Thm. 5) or the noise itself."""
    from dpviz.core.curves import unit_noise
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
    import numpy as np

    from dpviz.core.curves import Curve, check_families, unit_noise
    from dpviz.tree.release import node_variances
    from dpviz.tree.strategy import SPLITS, check_split

    if query not in TREE_QUERIES:
        raise InputError(f"--query: expected node or range, got {query!r}")
    splits = tuple(SPLITS) if splits is None else tuple(check_split(s) for s in splits)
    metric = "RMSE per node" if query == "node" else "RMSE per leaf-range query"
    rng_ranges = _lattice_for(tree, ranges) if query == "range" else None
    out = []
    for fam in check_families(families):
        for split in splits:
            for est in estimators:
                var = tree_unit_variances(tree, fam, split, est)
                if query == "node":
                    unit = float(np.mean(var))
                else:
                    d = node_variances(tree, unit_noise(fam), split)
                    unit = float(np.mean(range_variance(tree, d, rng_ranges, gls=est == "gmc")))
                label = f"{TREE_ESTIMATORS[est]}, {split} split" + (", Gaussian" if fam == "gaussian" else "")
                out.append(Curve("tree", f"{est}/{split}" + ("/gaussian" if fam == "gaussian" else ""), label,
                                 metric, fam, unit, "exact"))
    return out


def plan_curves(params: Mapping[str, Any], *, seed: int | None = None, max_seconds: float | None = None) -> list[Curve]:
    """Every candidate curve of one planned tree release (:data:`PLAN_PARAMS`; only the tree's shape is used)."""
    from dpviz.core.curves import plan_families
    from dpviz.tree.io import load as load_source

    p = {**PLAN_PARAMS, **params}
    data = load_source(p["data"]) if isinstance(p["data"], str) else p["data"]
    split = p["split"]
    return tree_curves(data.tree, query=p["query"], families=plan_families(p["noise"]),
                       splits=None if split == "all" else [split])


def plan_dots(curves: Sequence[Curve], source: Any, epsilons: tuple[float, ...], *, trials: int, seed: int,
              delta: float | None, options: Mapping[str, Any]) -> list[DotGroup]:
    """Monte-Carlo dots of tree curves of one noise family: per split, a simulation of their estimators
    scored by rmse_NQ (``query="node"``) or rmse_RQ (``"range"``, over ``queries`` random ranges, default 2000)."""
    from dpviz.core.curves import DotGroup, mse_dots
    from dpviz.core.trials import run_trials

    query = options.get("query", "node")
    out = []
    for split in dict.fromkeys(c.mechanism.split("/")[1] for c in curves):
        names = {c.mechanism.split("/")[0]: c.mechanism for c in curves if c.mechanism.split("/")[1] == split}
        target = tree_target(source, tuple(names), delta, epsilons[0], split, int(options.get("queries", 2000)))

        def run(target=target, names=names) -> Any:
            s = mse_dots(run_trials(target, epsilons, trials, seed), "rmse_NQ" if query == "node" else "rmse_RQ",
                         True)
            s["method"] = s["method"].map(names)
            return s
        out.append(DotGroup(target, epsilons, run))
    return out


# ---- plan CLI (``python -m dpviz plan tree``; ``common``: dpviz.planner.cli.COMMON) ---------------------------
PLAN_HELP = "smallest ε per tree strategy for a target RMSE per node or range query"


def plan_args(p: Any, common: Any) -> None:
    """The ``plan tree`` flags."""
    p.add_argument("data", metavar="DATA", help="tree file or sample:county (only its shape is used)")
    common.target(p)
    p.add_argument("--query", choices=("node", "range"), default="node",
                   help="node: RMSE per node (Eq. 40); range: RMSE per leaf-range query (Eq. 41)")
    p.add_argument("--split", choices=("uniform", "geometric", "all"), default="all",
                   help="budget split over the depth levels (default: both)")
    common.noise(p)


def plan_command(args: Any, common: Any) -> int:
    """``plan tree``: every strategy's smallest budget for ``--target-rmse``, best first."""
    from dpviz.tree.io import load as load_source

    inputs = [common.input_path(args.data)]
    common.check_output(args, inputs)
    fams = common.families(args)
    common.check_target(args)
    data = load_source(args.data)
    curves = tree_curves(data.tree, query=args.query, families=fams,
                         splits=None if args.split == "all" else [args.split])
    plans = common.plan_target(curves, args.target_rmse, args.delta)
    t = data.tree
    common.print_plans(plans, f"plan: tree {args.data} (n = {t.n:,} nodes, m = {t.m:,} leaves, h = {t.h}); "
                              f"{plans[0].metric} ≤ {args.target_rmse:g}")
    common.write_json(args, common.plans_json("tree", {"data": args.data, "query": args.query,
                                                       "target_rmse": args.target_rmse,
                                                       "structure": {"n": t.n, "m": t.m, "h": t.h}}, plans), inputs)
    return 0


# ---- ledger (dpviz.ledger.identity) ----------------------------------------------------------------------------
CANONICAL = "parsed tree: sorted JSON lines [node, parent, count]"
"""The ledger's description of a tree's canonical form (``dpviz.tree.io.canonical_bytes``)."""
LEDGER_ARGS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("--hierarchy", {"type": Path, "default": None, "metavar": "FILE",
                     "help": "tree: the declared hierarchy the release passes (--hierarchy): the dataset is then the "
                             "counts joined onto it, as `tree release --hierarchy FILE` charges it"}),
)


def ledger_load(source: str, *, hierarchy: str | Path | None = None) -> Any:
    """A tree as ``tree release`` charges it: the file or sample, or with ``hierarchy`` its counts joined onto
    that declaration (:func:`dpviz.tree.hierarchy.join_counts`)."""
    from dpviz.tree.io import load

    if hierarchy is None:
        return load(source)
    from dpviz.core.inputs import require_regular_file
    from dpviz.core.registry import load_source
    from dpviz.tree.hierarchy import join_counts, read_counts, read_hierarchy

    hier = read_hierarchy(require_regular_file(hierarchy, "--hierarchy"), what="--hierarchy")
    return join_counts(hier, load_source("tree", source, read_counts))
