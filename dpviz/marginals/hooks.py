"""The marginals' entries into the tools (registry hooks): an audit target, a sweep target and the planner's curves.

* :func:`audit_target` — a 12-record data set on a 2 × 3 domain and the same data plus one record (the unit
  of privacy of :mod:`dpviz.marginals`): :func:`dpviz.marginals.strategy.measure_marginal` of the 2-way marginal
  with discrete Gaussian noise at the ρ the CKS conversion allows for the claimed (ε, δ)
  (:func:`dpviz.core.accounting.zcdp_rho`). Event: the noisy count of the new record's cell exceeds τ.
* :func:`sweep_target` — :func:`dpviz.marginals.release.simulate` (one measurement, every reconstruction on
  it): l1, l2 (average workload error per cell), cell_mse (mean squared error over all workload cells;
  expectation: the MLE/EMP's mean analytic per-cell variance), negative_cells, negative_mass.
* :func:`plan_curves` — ResidualPlanner's σ_τ² at ρ (closed form, :func:`dpviz.marginals.strategy.rp_sigmas`,
  Xiao et al., NeurIPS 2023) and the GReM-MLE per-cell variance of every workload marginal
  (:func:`dpviz.marginals.estimators.reconstruction_variance`, Mullins et al., NeurIPS 2024), averaged over all
  workload cells: per-cell RMSE of the workload. ``rp`` is the continuous (simulation) accounting,
  ``rp-release`` the conservative per-marginal charge a discrete release pays. Scalable MWEM is adaptive
  (data-dependent selection) and not planned.

Module constants and functions the tools read from here: ``AUDIT_HELP``/``AUDIT_ARGS`` (the ``audit
marginals`` verb), ``SWEEP_HELP``/``SWEEP_ARGS``/``SWEEP_OPTIONS`` (``sweep marginals``),
``PLAN_PARAMS``/``PLAN_PRESETS`` (a planned release's keys and ready-made ones), ``plan_dots`` (the planner's
Monte-Carlo dots, analytic capabilities), ``PLAN_HELP``/``plan_args``/``plan_command`` (``plan marginals``),
``LEDGER_LOADS`` and ``page_canonical_bytes`` (the ledger). Light on import: NumPy and the core types are
imported when a hook runs, so the tools' CLI registrars can read the constants cheaply.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from dpviz.errors import InputError

if TYPE_CHECKING:
    import numpy as np
    from dpviz.core.curves import Curve, DotGroup
    from dpviz.core.events import AuditTarget
    from dpviz.core.trials import Record

__all__ = ["AUDIT_ARGS", "AUDIT_HELP", "LEDGER_LOADS", "MARGINALS_ACCOUNTING", "MARGINALS_LABELS", "PLAN_HELP",
           "PLAN_PARAMS", "PLAN_PRESETS", "SWEEP_ARGS", "SWEEP_HELP", "SWEEP_OPTIONS", "audit_target",
           "marginals_curves", "marginals_target", "marginals_unit_mse", "MarginalsTarget",
           "page_canonical_bytes", "plan_args", "plan_command", "plan_curves", "plan_dots", "sweep_target",
           "workload"]

# ---- audit ------------------------------------------------------------------------------------------------
AUDIT_HELP = "a small data set and the same plus one record (2-way marginal)"
AUDIT_ARGS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("--delta", {"type": float, "default": 1e-6, "help": "claimed δ (default: 1e-6)"}),
)


def audit_target(epsilon: float = 1.0, delta: float = 1e-6) -> AuditTarget:
    """Marginals: 12 records on a 2 × 3 domain and the same plus one record (0, 1); the 2-way marginal
    with discrete Gaussian noise, σ = 1/√(2ρ), ρ = CKS ρ for (ε, δ) (L2 sensitivity 1)."""
    import numpy as np

    from dpviz.core.accounting import positive, probability
    from dpviz.core.accounting import zcdp_rho
    from dpviz.core.events import AuditTarget, threshold_event
    from dpviz.marginals.model import Dataset, Domain
    from dpviz.marginals.strategy import measure_marginal

    epsilon = positive("epsilon", epsilon)
    delta = probability("delta", delta)
    sigma = float(1.0 / np.sqrt(2.0 * zcdp_rho(epsilon, delta)))
    domain = Domain(("a", "b"), (2, 3))
    codes = np.array([[0, 0], [0, 1], [0, 2], [1, 0], [1, 1], [1, 2], [0, 0], [1, 1], [1, 2], [0, 2], [1, 0], [1, 2]])
    added = (0, 1)
    cell = added[0] * 3 + added[1]  # row-major in attribute order (Dataset.marginal)
    d0 = Dataset(domain, codes, name="audit records")
    d1 = Dataset(domain, np.vstack([codes, added]), name="audit records + 1")

    def release_fn(data: Any, rng: np.random.Generator) -> Any:
        return measure_marginal(data, (0, 1), sigma, rng, discrete=True)

    return AuditTarget(
        capability="marginals", mechanism=f"a×b marginal, discrete Gaussian σ = {sigma:.3g}",
        neighbours="one more record (a=0, b=1)", D0=d0, D1=d1, release_fn=release_fn,
        events=(threshold_event("noisy count of cell (a=0, b=1)", lambda m: float(m.values[cell])),),
        epsilon=epsilon, delta=delta)


# ---- sweep ------------------------------------------------------------------------------------------------
SWEEP_HELP = "marginal reconstructions (mle, lnn, trunc, trunc-rescale) on a categorical data set"
SWEEP_OPTIONS: dict[str, Any] = {"workload": 2, "mechanism": "rp", "rounds": None}
SWEEP_ARGS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("--workload", {"default": "2", "metavar": "K|FILE", "help": "k (every k-way marginal, default 2) or a file"}),
    ("--mechanism", {"choices": ("rp", "mwem"), "default": "rp", "help": "ResidualPlanner (default) or MWEM"}),
    ("--rounds", {"type": int, "default": None, "help": "MWEM rounds T"}),
)


def workload(domain: Any, spec: Any) -> list:
    """A workload setting (K — an int or its digits —, a file, or a list of attribute lists) as cliques."""
    from dpviz.marginals.io import parse_workload

    if isinstance(spec, str) and spec.strip().isdigit():
        spec = int(spec)
    return parse_workload(spec, domain)


@dataclass(frozen=True, eq=False)
class MarginalsTarget:
    capability: ClassVar[str] = "marginals"
    metrics: ClassVar[tuple[str, ...]] = ("l1", "l2", "cell_mse", "negative_cells", "negative_mass")

    data: Any  # dpviz.marginals.model.Dataset
    workload: tuple[Any, ...]
    mechanism: str
    rounds: int | None
    methods: tuple[str, ...]
    delta: float

    @property
    def name(self) -> str:
        return str(getattr(self.data, "name", "data"))

    @property
    def noise(self) -> str:
        return f"continuous Gaussian, ρ from (ε, δ = {self.delta:g}) (CKS conversion)"

    def trial(self, epsilon: float, seed: np.random.SeedSequence) -> list[Record]:
        import numpy as np

        from dpviz.core.noise import Noise
        from dpviz.core.trials import NAN, int_seed
        from dpviz.marginals.release import simulate

        noise = Noise.from_params("gaussian", epsilon=epsilon, delta=self.delta)
        sim = simulate(self.data, noise, self.methods, int_seed(seed), workload=list(self.workload),
                       mechanism=self.mechanism, rounds=self.rounds)
        cells = sum(mu.size for mu in sim.truth.values())
        out: list[Record] = []
        for name, r in sim.results.items():
            sq = math.fsum(float(np.sum((np.asarray(r.marginals[g], float) - mu) ** 2)) for g, mu in sim.truth.items())
            out += [(name, "l1", r.l1, NAN), (name, "l2", r.l2, NAN), (name, "cell_mse", sq / cells, r.mean_variance),
                    (name, "negative_cells", float(r.negative_cells), NAN),
                    (name, "negative_mass", float(r.negative_mass), NAN)]
        return out


def marginals_target(source: Any, methods: str | tuple[str, ...], delta: float | None, workload_spec: Any = 2,
                     mechanism: str = "rp", rounds: int | None = None) -> MarginalsTarget:
    """The marginals trials of ``source`` (``sample:NAME``, a CSV or a ``Dataset``)."""
    from dpviz.core.trials import is_path, pick_methods
    from dpviz.marginals.io import load
    from dpviz.marginals.model import Dataset
    from dpviz.marginals.release import MECHANISMS, METHODS

    if delta is None:
        raise InputError("marginals sweep: give --delta (the Gaussian noise's ρ comes from (ε, δ))")
    if mechanism not in MECHANISMS:
        raise InputError(f"--mechanism: expected one of {', '.join(MECHANISMS)}, got {mechanism!r}")
    methods = pick_methods(methods, list(METHODS), "marginals method")
    data = load(source) if is_path(source) else source
    if not isinstance(data, Dataset):
        raise InputError(f"marginals sweep: expected sample:NAME, a CSV file or a Dataset, got {type(data).__name__}")
    wl = workload(data.domain, workload_spec)
    if rounds is not None and (isinstance(rounds, bool) or not isinstance(rounds, int)
                               or not 1 <= rounds <= len(wl)):
        raise InputError(f"--rounds: expected an integer from 1 to {len(wl)} (MWEM selects each of the {len(wl)} "
                         f"workload marginals at most once), got {rounds!r}")
    return MarginalsTarget(data, tuple(wl), mechanism, rounds, methods, delta)


def sweep_target(spec: Any) -> MarginalsTarget:
    """The target of a sweep ``spec`` (a :class:`dpviz.sweep.spec.SweepSpec` of this capability)."""
    from dpviz.core.trials import check_options

    opts = check_options("marginals", SWEEP_OPTIONS, spec.options)
    return marginals_target(spec.source, spec.methods, spec.delta, opts["workload"], opts["mechanism"],
                            opts["rounds"])


# ---- plan -------------------------------------------------------------------------------------------------
PLAN_PARAMS: dict[str, Any] = {"data": "sample:adult", "workload": 2, "mechanism": None}
"""The keys of a planned marginals release and their defaults."""
PLAN_PRESETS: dict[str, tuple[str, dict[str, Any]]] = {
    "adult-2way": ("Adult: all 2-way marginals", {"data": "sample:adult", "workload": 2}),
    "titanic-2way": ("Titanic: all 2-way marginals", {"data": "sample:titanic", "workload": 2}),
}
"""Ready-made planned releases on the bundled data (name → (title, params))."""
MARGINALS_ACCOUNTING = {"rp": "residual", "rp-release": "marginal"}
MARGINALS_LABELS = {"rp": "ResidualPlanner + GReM-MLE (continuous noise: simulation accounting)",
                    "rp-release": "ResidualPlanner + GReM-MLE (discrete noise: release accounting)"}


def marginals_unit_mse(domain, workload, cost: str) -> float:
    """Mean per-cell variance of the GReM-MLE workload answer at ρ = 1 (ResidualPlanner's σ_τ²)."""
    from dpviz.marginals.estimators import reconstruction_variance
    from dpviz.marginals.strategy import rp_sigmas

    sig2 = rp_sigmas(domain, workload, 1.0, cost=cost)
    cells = [domain.size(g) for g in workload]
    total = math.fsum(reconstruction_variance(domain, g, sig2) * n for g, n in zip(workload, cells))
    return total / sum(cells)


def marginals_curves(domain, workload) -> list[Curve]:
    """ResidualPlanner under both accountings for a workload (a list of cliques of ``domain``)."""
    from dpviz.core.curves import Curve
    from dpviz.marginals.estimators import check_workload

    wl = check_workload(domain, workload)
    return [Curve("marginals", name, MARGINALS_LABELS[name], "per-cell RMSE of the workload", "gaussian",
                  marginals_unit_mse(domain, wl, cost), "cks")
            for name, cost in MARGINALS_ACCOUNTING.items()]


def plan_curves(params: Mapping[str, Any], *, seed: int | None = None, max_seconds: float | None = None) -> list[Curve]:
    """Every candidate curve of one planned marginals release (:data:`PLAN_PARAMS`; only the domain is used)."""
    from dpviz.marginals.io import load

    p = {**PLAN_PARAMS, **params}
    data = load(p["data"]) if isinstance(p["data"], str) else p["data"]
    return marginals_curves(data.domain, workload(data.domain, p["workload"]))


def plan_dots(curves: Sequence[Curve], source: Any, epsilons: tuple[float, ...], *, trials: int, seed: int,
              delta: float | None, options: Mapping[str, Any]) -> list[DotGroup]:
    """Monte-Carlo dots of the ``rp`` curve (the simulation's accounting; ``rp-release`` gets none): the
    per-cell RMSE of the GReM-MLE reconstruction at (ε, ``delta``)."""
    from dpviz.core.curves import DotGroup, mse_dots
    from dpviz.core.trials import run_trials

    if not any(c.mechanism == "rp" for c in curves):
        return []
    wl = options.get("workload", 2)
    wl = wl if isinstance(wl, (int, str)) else [list(g) for g in wl]
    target = marginals_target(source, ("mle",), delta, wl, "rp")

    def run() -> Any:
        s = mse_dots(run_trials(target, epsilons, trials, seed), "cell_mse", square=False)
        s["method"] = "rp"
        return s
    return [DotGroup(target, epsilons, run)]


# ---- plan CLI (``python -m dpviz plan marginals``; ``common``: dpviz.planner.cli.COMMON) ----------------------
PLAN_HELP = "smallest (ε, δ) or ρ for a target per-cell RMSE of a workload (ResidualPlanner)"


def plan_args(p: Any, common: Any) -> None:
    """The ``plan marginals`` flags."""
    p.add_argument("data", metavar="DATA", help="CSV or sample:adult / sample:titanic (only its domain is used)")
    common.target(p)
    p.add_argument("--workload", default="2", help="K (all K-way marginals) or a JSON/CSV workload file (default 2)")
    p.add_argument("--delta", type=float, help="δ: plan ε at this δ (default: plan ρ)")


def plan_command(args: Any, common: Any) -> int:
    """``plan marginals``: ResidualPlanner's smallest budget for ``--target-rmse`` under both accountings."""
    from pathlib import Path

    from dpviz.marginals.io import load

    inputs = [common.input_path(args.data)]
    wl_path = args.workload if Path(args.workload).is_file() else None
    inputs.append(wl_path)
    common.check_output(args, inputs)
    common.check_target(args)
    data = load(args.data)
    wl = workload(data.domain, Path(wl_path) if wl_path else args.workload)
    plans = common.plan_target(marginals_curves(data.domain, wl), args.target_rmse, args.delta)
    common.print_plans(plans, f"plan: marginals {args.data}, {len(wl)} workload marginals; "
                              f"{plans[0].metric} ≤ {args.target_rmse:g}")
    common.write_json(args, common.plans_json("marginals", {"data": args.data,
                                                            "workload": [list(data.domain.names(g)) for g in wl],
                                                            "target_rmse": args.target_rmse}, plans), inputs)
    return 0


# ---- ledger (dpviz.ledger.identity) ----------------------------------------------------------------------------
LEDGER_LOADS = False
"""The ledger loads nothing: :func:`dpviz.marginals.io.canonical_bytes` re-reads a file's records before any
projection or binning (and reloads a sample in full)."""


def page_canonical_bytes(label: str, data: Any) -> bytes:
    """The canonical form of what the Marginals page holds: a sample by its name, an upload by its bytes — read
    by the CLI's own reader of a marginals file (records before projection) on a private copy removed at once,
    so the same bytes give the same dataset on the page and on the CLI."""
    import tempfile
    from pathlib import Path

    from dpviz.core.registry import SAMPLE_PREFIX
    from dpviz.marginals.io import canonical_bytes

    if label.startswith(SAMPLE_PREFIX):
        return canonical_bytes(label)
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise InputError("marginals: the uploaded bytes are needed to identify the upload (upload it again)")
    with tempfile.TemporaryDirectory(prefix="dpviz-upload-") as folder:
        copy = Path(folder) / "upload.csv"
        copy.write_bytes(data)
        return canonical_bytes(copy)
