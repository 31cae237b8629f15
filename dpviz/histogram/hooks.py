"""The histogram's entries into the tools (registry hooks): audit, sweep and planner support come from here alone.

* :func:`audit_target` — a 6-bin histogram and the same with one more record in bin ``bin`` (the unit of
  privacy), released with discrete Laplace noise by one method; events: that bin's released count exceeds τ, and
  the released total of the bins up to it exceeds τ.
* :func:`sweep_target` — one :func:`dpviz.histogram.release.simulate` per trial: ``rmse_bins`` (analytic
  expectation of its square: the mean per-bin variance) and ``rmse_ranges``.
* :func:`plan_curves` — per-bin MSE at unit budget of each method (analytic: variances scale as 1/ε² or 1/ρ).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from dpviz.errors import InputError
from dpviz.histogram.estimators import METHOD_LABELS, METHODS, check_method

if TYPE_CHECKING:
    import numpy as np

    from dpviz.core.curves import Curve, DotGroup
    from dpviz.core.events import AuditTarget
    from dpviz.core.trials import Record
    from dpviz.histogram.model import HistogramData

__all__ = ["AUDIT_ARGS", "AUDIT_HELP", "PLAN_HELP", "PLAN_PARAMS", "PLAN_PRESETS", "plan_args", "plan_command", "SWEEP_ARGS", "SWEEP_HELP", "SWEEP_OPTIONS", "HistogramTarget",
           "audit_target", "counted_from_records", "page_canonical_bytes", "plan_curves", "plan_dots", "sweep_target"]


def counted_from_records(source: Any, data: Any = None) -> bool:
    """The ledger's rule (:func:`dpviz.ledger.identity.counted_from_records`): a histogram file of records (not
    ``bin,count``) is charged to the records dataset of that file — the same people a tree, stream or marginals
    release counted from it spends from. Not a file (a sample, a page upload's key): the page charges uploads itself."""
    from pathlib import Path

    from dpviz.histogram.io import is_counts_file

    return Path(str(source)).is_file() and not is_counts_file(source)


def page_canonical_bytes(label: str, data: Any) -> bytes:
    """The canonical form of what the Histogram page holds: a bundled sample as the CLI hashes it; an uploaded
    counts file (records uploads are the records dataset of their bytes) as its declared bins' ``label,count``
    lines sorted by label — read from what the page loaded, since no server path is ever opened for a browser."""
    from dpviz.core.registry import SAMPLE_PREFIX
    from dpviz.histogram.io import canonical_bytes

    if str(label).startswith(SAMPLE_PREFIX):
        return canonical_bytes(label, data)
    lines = sorted(f"{b},{int(c)}" for b, c in zip(data.bins.labels, data.x, strict=True))
    return ("\n".join(lines) + "\n").encode()


AUDIT_HELP = "a histogram and the same histogram with one more record in one bin"
AUDIT_ARGS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("--method", {"default": "gmc", "help": f"one of {', '.join(METHODS)} (default: gmc)"}),
    ("--branching", {"type": int, "default": 2, "help": "fan-out b of the hierarchy (default 2)"}),
)
"""The ``audit histogram`` flags (argparse keywords); their values go to :func:`audit_target`."""
SWEEP_HELP = "histogram methods (hierarchy + GMC/Boosting/..., flat) on declared bins"
SWEEP_OPTIONS: dict[str, Any] = {"branching": 2, "split": "uniform", "queries": 1000}
SWEEP_ARGS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("--branching", {"type": int, "default": 2, "help": "fan-out b of the hierarchy (default 2)"}),
    ("--split", {"choices": ("uniform", "geometric"), "default": "uniform", "help": "budget split over levels"}),
    ("--queries", {"type": int, "default": 1000, "help": "random ranges scored per trial (default 1000)"}),
)
PLAN_PARAMS: dict[str, Any] = {"data": "sample:education", "branching": 2, "split": "uniform", "noise": "laplace",
                               "mechanism": None}
"""The keys of a planned histogram release and their defaults."""


def audit_target(epsilon: float = 1.0, *, method: str = "gmc", branching: int = 2, bin: int = 2, **_: Any
                 ) -> AuditTarget:
    import numpy as np

    from dpviz.core.accounting import positive
    from dpviz.core.events import AuditTarget, threshold_event
    from dpviz.core.noise import Noise
    from dpviz.histogram.model import Bins, HistogramData
    from dpviz.histogram.release import release
    from dpviz.histogram.strategy import check_branching

    epsilon = positive("epsilon", epsilon)
    method, b = check_method(method), check_branching(branching)
    x0 = np.array([3, 1, 4, 1, 5, 9], dtype=np.int64)
    if isinstance(bin, bool) or bin not in range(x0.size):
        raise InputError(f"bin: expected 0..{x0.size - 1}, got {bin!r}")
    x1 = x0.copy()
    x1[bin] += 1
    bins = Bins.from_edges(np.arange(x0.size + 1))
    noise = Noise.laplace(epsilon, discrete=True)

    def release_fn(data: Any, rng: np.random.Generator) -> Any:
        return release(data, noise, rng=rng, method=method, branching=b)

    return AuditTarget(
        capability="histogram", mechanism=f"{method} (b = {b}, discrete Laplace)",
        neighbours=f"one more record in bin {bin}",
        D0=HistogramData(bins, x0, "audit"), D1=HistogramData(bins, x1, "audit + 1"), release_fn=release_fn,
        events=(threshold_event(f"released count of bin {bin}", lambda r: float(r.values[bin])),
                threshold_event(f"released count of bins 0..{bin}", lambda r: float(np.sum(r.values[:bin + 1])))),
        epsilon=epsilon)


@dataclass(frozen=True, eq=False)
class HistogramTarget:
    capability: ClassVar[str] = "histogram"
    data: HistogramData
    methods: tuple[str, ...]
    delta: float | None
    branching: int
    split: str
    queries: int

    @property
    def name(self) -> str:
        return str(self.data.name)

    @property
    def noise(self) -> str:
        return "Laplace" if self.delta is None else f"Gaussian (δ = {self.delta:g})"

    def trial(self, epsilon: float, seed: np.random.SeedSequence) -> list[Record]:
        import numpy as np

        from dpviz.core.trials import NAN, continuous_noise
        from dpviz.histogram.release import simulate

        sim = simulate(self.data, continuous_noise(epsilon, self.delta), self.methods, np.random.default_rng(seed),
                       branching=self.branching, split=self.split, q=self.queries)
        out: list[Record] = []
        for row in sim.table.itertuples(index=False):
            exp = float(row.expected_rmse_bins) ** 2 if np.isfinite(row.expected_rmse_bins) else NAN
            out += [(row.method, "mse_bins", float(row.rmse_bins) ** 2, exp),
                    (row.method, "rmse_ranges", float(row.rmse_ranges), NAN)]
        return out


def sweep_target(spec: Any) -> HistogramTarget:
    """``spec``: ``.source`` (sample:NAME, a path or a HistogramData), ``.methods``, ``.delta``, ``.options``."""
    from dpviz.core.trials import check_options, pick_methods
    from dpviz.histogram.io import load
    from dpviz.histogram.model import HistogramData
    from dpviz.histogram.strategy import check_branching

    opts = check_options("histogram", SWEEP_OPTIONS, spec.options)
    data = spec.source if isinstance(spec.source, HistogramData) else load(spec.source)
    return HistogramTarget(data, pick_methods(spec.methods, METHODS, "histogram method"), spec.delta,
                           check_branching(opts["branching"]), str(opts["split"]), max(1, int(opts["queries"])))


def plan_curves(params: Mapping[str, Any], *, seed: int | None = None, max_seconds: float | None = None
                ) -> list[Curve]:
    """Per-bin MSE curves of every method (or ``params["mechanism"]``) for ``params["noise"]`` families."""
    import numpy as np

    from dpviz.core.curves import Curve, plan_families, unit_noise
    from dpviz.histogram.io import load
    from dpviz.histogram.model import HistogramData
    from dpviz.histogram.release import simulate
    from dpviz.histogram.strategy import check_branching

    unknown = sorted(set(params) - set(PLAN_PARAMS))
    if unknown:
        raise InputError(f"histogram plan: unknown setting {unknown[0]!r}; known: {', '.join(PLAN_PARAMS)}")
    p = {**PLAN_PARAMS, **params}
    data = p["data"] if isinstance(p["data"], HistogramData) else load(p["data"])
    families = plan_families(p["noise"])
    mech = p["mechanism"]
    methods = tuple(m for m in METHODS if m != "boosting") if mech is None else (check_method(mech),)
    curves = []
    for fam in families:
        sim = simulate(data, unit_noise(fam), methods, np.random.default_rng(0), q=1,
                       branching=check_branching(p["branching"]), split=p["split"])
        for m in methods:
            curves.append(Curve("histogram", m if fam == "laplace" else f"{m}/gaussian", METHOD_LABELS[m],
                                "RMSE per bin", fam, float(np.mean(sim.variance[m]))))
    return curves


def plan_dots(curves: Sequence[Curve], source: Any, epsilons: tuple[float, ...], *, trials: int, seed: int,
              delta: float | None, options: Mapping[str, Any]) -> list[DotGroup]:
    """Monte-Carlo dots beside the analytic curves: the per-bin MSE of simulated releases at each ε."""
    from dpviz.core.curves import DotGroup, mse_dots
    from dpviz.core.trials import run_trials
    from dpviz.histogram.io import load
    from dpviz.histogram.model import HistogramData
    from dpviz.histogram.strategy import check_branching

    data = source if isinstance(source, HistogramData) else load(source)
    names = {c.mechanism.split("/")[0]: c.mechanism for c in curves}
    target = HistogramTarget(data, tuple(names), delta, check_branching(options.get("branching", 2)),
                             str(options.get("split", "uniform")), 1)

    def run() -> Any:
        s = mse_dots(run_trials(target, epsilons, trials, seed), "mse_bins", False)
        s["method"] = s["method"].map(names)
        return s
    return [DotGroup(target, epsilons, run)]


PLAN_PRESETS: dict[str, tuple[str, dict[str, Any]]] = {
    "education-bins": ("Education histogram: every bin", {"data": "sample:education"}),
}
"""Ready-made planned releases on the bundled data (name → (title, params))."""

# ---- plan CLI (``python -m dpviz plan histogram``; ``common``: the planner's shared flags and printers) -------
PLAN_HELP = "smallest ε per histogram method for a target RMSE per bin"


def plan_args(p: Any, common: Any) -> None:
    p.add_argument("data", metavar="DATA", help="sample:NAME (its declared bins are used, never the counts)")
    common.target(p)
    p.add_argument("--branching", type=int, default=2, help="fan-out b of the hierarchy (default 2)")
    p.add_argument("--split", choices=("uniform", "geometric"), default="uniform", help="budget split over levels")
    common.noise(p)


def plan_command(args: Any, common: Any) -> int:
    """``plan histogram``: every method's smallest budget for ``--target-rmse`` per bin, best first."""
    from dpviz.histogram.io import load

    inputs = [common.input_path(args.data)]
    common.check_output(args, inputs)
    fams = common.families(args)
    common.check_target(args)
    data = load(args.data)
    curves = plan_curves({"data": data, "branching": args.branching, "split": args.split, "noise": fams})
    plans = common.plan_target(curves, args.target_rmse, args.delta)
    common.print_plans(plans, f"plan: histogram {args.data} ({data.bins.m} bins, b = {args.branching}); "
                              f"{plans[0].metric} ≤ {args.target_rmse:g}")
    common.write_json(args, common.plans_json("histogram", {"data": args.data, "branching": args.branching,
                                                            "target_rmse": args.target_rmse,
                                                            "structure": {"bins": data.bins.m}}, plans), inputs)
    return 0
