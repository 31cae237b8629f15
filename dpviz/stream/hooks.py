"""The stream's entries into the tools (registry hooks): an audit target, a sweep target and the planner's curves.

* :func:`audit_target` — an 8-step count stream and the same stream with one more event at one step (event
  level, the unit of privacy of :mod:`dpviz.stream`): :func:`dpviz.stream.release.release` with one mechanism
  on the auditor's seeded Generator. Events: the released running total at that step, and at the last step,
  exceeds τ.
* :func:`sweep_target` — :meth:`dpviz.stream.mechanism.Mechanism.errors` (the released totals minus the true
  ones; every mechanism is linear, so the error does not depend on the counts, only on the number of steps T
  the data has). Every mechanism starts from the trial's seed, as ``stream simulate`` does. Metrics:
  mse = (1/T) Σ_t e_t² (expectation: the mean analytic per-step variance), rmse, max_abs_error and
  final_sq_error = e_T² (expectation: the last step's variance).
* :func:`plan_curves` — every mechanism's per-step variance Var(ŝ_t), t = 1..N (Fenwick chain sums, FDA's
  optimal λ, Honaker, naive, square-root, banded and BLT factorisations; :mod:`dpviz.stream.strategy`) at unit
  budget, and its ``max`` (the
  worst step, √max_t Var ŝ_t) or ``mean`` (the RMSE over the horizon, √(mean_t Var ŝ_t) — what the stream
  simulation's empirical RMSE estimates). No data: the horizon N only.

Module constants and functions the tools read from here: ``AUDIT_HELP``/``AUDIT_ARGS`` (the ``audit stream``
verb), ``SWEEP_HELP``/``SWEEP_ARGS``/``SWEEP_OPTIONS`` (``sweep stream``), ``PLAN_PARAMS``/``PLAN_PRESETS`` (a
planned release's keys and ready-made ones), ``plan_dots`` (the planner's Monte-Carlo dots, analytic
capabilities), ``PLAN_HELP``/``plan_args``/``plan_command`` (``plan stream``), ``LEDGER_ARGS`` and
``page_canonical_bytes`` (the ledger). Light on import: NumPy and the core types are imported when a hook
runs, so the tools' CLI registrars can read the constants cheaply.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any, ClassVar

from dpviz.errors import InputError

if TYPE_CHECKING:
    import numpy as np
    from dpviz.core.curves import Curve, DotGroup
    from dpviz.core.events import AuditTarget
    from dpviz.core.noise import Noise
    from dpviz.core.trials import Record

__all__ = ["AUDIT_ARGS", "AUDIT_HELP", "LEDGER_ARGS", "PLAN_HELP", "PLAN_PARAMS", "PLAN_PRESETS", "STREAM_METRICS",
           "SWEEP_ARGS", "SWEEP_HELP", "SWEEP_OPTIONS", "audit_target", "check_plan_horizon",
           "counted_from_records", "page_canonical_bytes", "plan_args", "plan_command", "plan_curves", "plan_dots", "stream_curves",
           "stream_target", "StreamTarget", "sweep_target"]

# ---- audit ------------------------------------------------------------------------------------------------
AUDIT_HELP = "a count stream and the same stream with one more event at one step"
AUDIT_ARGS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("--mechanism", {"default": "fenwick-fda",
                     "help": "naive, binary, fenwick, fenwick-fda (default), honaker, ..., or a real factorisation sqrt, "
                             "banded, blt, sqrt-weighted, blt-weighted (discrete Gaussian on the 2^-k Z lattice at (ε, 1e-6))"}),
)


def audit_target(epsilon: float = 1.0, *, mechanism: str = "fenwick-fda", step: int = 2,
                 delta: float = 1e-6) -> AuditTarget:
    """Stream: counts 1 0 2 1 0 3 1 2 and the same with one more event at ``step`` (0-based).
    Discrete Laplace at ε; a real factorisation (``sqrt``, ``banded``, ``blt``, ``sqrt-weighted``: Gaussian only,
    :data:`~dpviz.stream.strategy.LATTICE_RELEASABLE`) runs its lattice
    release at the ρ of (ε, ``delta``)."""
    import numpy as np

    from dpviz.core.accounting import positive, probability
    from dpviz.core.events import AuditTarget, threshold_event
    from dpviz.core.noise import Noise
    from dpviz.stream.release import check_release, release
    from dpviz.stream.strategy import LATTICE_RELEASABLE

    epsilon = positive("epsilon", epsilon)
    gaussian = mechanism in LATTICE_RELEASABLE  # a real factorisation: discrete Gaussian on 2^-k Z (stream.lattice)
    delta = probability("delta", delta) if gaussian else 0.0
    noise = Noise.gaussian_approx(epsilon, delta, discrete=True) if gaussian else Noise.laplace(epsilon, discrete=True)
    check_release(mechanism, noise)
    s0 = np.array([1, 0, 2, 1, 0, 3, 1, 2], dtype=np.int64)
    if isinstance(step, bool) or step not in range(s0.size):
        raise InputError(f"step: expected 0..{s0.size - 1}, got {step!r}")
    s1 = s0.copy()
    s1[step] += 1

    def release_fn(series: Any, rng: np.random.Generator) -> Any:
        return release(series, noise, rng=rng, mechanism=mechanism)

    return AuditTarget(
        capability="stream", mechanism=f"{mechanism} (discrete {'Gaussian on 2^-k Z' if gaussian else 'Laplace'})",
        neighbours=f"one more event at step {step + 1}", D0=s0, D1=s1, release_fn=release_fn,
        events=(threshold_event(f"released total at step {step + 1}", lambda r: float(r.prefix_sums[step])),
                threshold_event(f"released total at step {s0.size}", lambda r: float(r.prefix_sums[-1]))),
        epsilon=epsilon, delta=delta)


# ---- sweep ------------------------------------------------------------------------------------------------
SWEEP_HELP = ("stream mechanisms (naive, binary, fenwick, fenwick-fda, honaker, sqrt, banded, blt, sqrt-weighted, "
              "blt-weighted, ...) on a count series")
SWEEP_OPTIONS: dict[str, Any] = {"horizon": None, "count_column": None, "time_column": None}
SWEEP_ARGS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("--horizon", {"type": int, "help": "number of releases N (default: the series length)"}),
    ("--count-column", {"help": "name of the count column"}),
    ("--time-column", {"help": "name of the timestamp column"}),
)


@lru_cache(maxsize=64)
def _stream_mechanism(name: str, horizon: int, noise: Noise) -> tuple[Any, np.ndarray]:
    from dpviz.stream.mechanism import make_mechanism

    mech = make_mechanism(name, horizon, noise)
    var = mech.per_step_variance()
    var.flags.writeable = False
    return mech, var


@dataclass(frozen=True, eq=False)
class StreamTarget:
    capability: ClassVar[str] = "stream"
    metrics: ClassVar[tuple[str, ...]] = ("mse", "rmse", "max_abs_error", "final_sq_error")

    source: str
    steps: int  # T: the released steps (the data's length)
    horizon: int  # N ≥ T: the mechanism's horizon
    methods: tuple[str, ...]
    delta: float | None

    @property
    def name(self) -> str:
        return self.source

    @property
    def noise(self) -> str:
        from dpviz.core.trials import noise_text

        return noise_text(self.delta)

    def trial(self, epsilon: float, seed: np.random.SeedSequence) -> list[Record]:
        import numpy as np

        from dpviz.core.trials import NAN, continuous_noise

        noise = continuous_noise(epsilon, self.delta)
        t = self.steps
        out: list[Record] = []
        for name in self.methods:
            mech, var = _stream_mechanism(name, self.horizon, noise)
            err = mech.errors(np.random.default_rng(seed), 1)[0, :t]
            sq = err * err
            mse = float(sq.mean())
            out += [(name, "mse", mse, float(var[:t].mean())), (name, "rmse", math.sqrt(mse), NAN),
                    (name, "max_abs_error", float(np.abs(err).max()), NAN),
                    (name, "final_sq_error", float(sq[-1]), float(var[t - 1]))]
        return out


def stream_target(source: Any, methods: str | tuple[str, ...], delta: float | None, horizon: int | None = None,
                  count_column: str | None = None, time_column: str | None = None) -> StreamTarget:
    """The stream trials of ``source`` (``sample:NAME``, a CSV, a ``StreamData`` or an array of counts)."""
    import numpy as np

    from dpviz.core.trials import is_path, pick_methods
    from dpviz.stream.io import load
    from dpviz.stream.mechanism import checked_horizon
    from dpviz.stream.model import StreamData
    from dpviz.stream.strategy import available

    family = "laplace" if delta is None else "gaussian"
    methods = pick_methods(methods, list(available(family)), f"stream mechanism ({family} noise)")
    if is_path(source):
        data = load(source, count_column=count_column, time_column=time_column)
        counts, name = data.counts, str(source)
    elif isinstance(source, StreamData):
        counts, name = source.counts, getattr(source, "name", "stream")
    else:
        counts, name = np.asarray(source, dtype=float), "counts"
    n, series = checked_horizon(counts, horizon)
    if series.size == 0:
        raise InputError("stream sweep: the stream has no steps")
    return StreamTarget(name, int(series.size), n, methods, delta)


def sweep_target(spec: Any) -> StreamTarget:
    """The target of a sweep ``spec`` (a :class:`dpviz.sweep.spec.SweepSpec` of this capability)."""
    from dpviz.core.trials import check_options

    opts = check_options("stream", SWEEP_OPTIONS, spec.options)
    return stream_target(spec.source, spec.methods, spec.delta, opts["horizon"], opts["count_column"],
                         opts["time_column"])


# ---- plan -------------------------------------------------------------------------------------------------
PLAN_PARAMS: dict[str, Any] = {"horizon": None, "metric": "max", "noise": "laplace", "mechanism": None}
"""The keys of a planned stream release and their defaults (``horizon`` N is required)."""
PLAN_PRESETS: dict[str, tuple[str, dict[str, Any]]] = {
    "flights": ("Flights: daily running totals, worst day", {"horizon": 181, "metric": "max"}),
    "bike": ("Bike rentals: hourly running totals over two years", {"horizon": 17544, "metric": "mean"}),
}
"""Ready-made planned releases on the bundled data (name → (title, params))."""
STREAM_METRICS: tuple[str, ...] = ("max", "mean")



def stream_curves(horizon: int, *, metric: str = "max", families: Iterable[str] = ("laplace",),
                  mechanisms: Sequence[str] | None = None) -> list[Curve]:
    """One curve per (noise family, mechanism) valid for the family, at horizon N (no data needed)."""
    from dpviz.core.curves import Curve, check_families, unit_noise
    from dpviz.stream.fenwick import check_horizon
    from dpviz.stream.strategy import LABELS, LATTICE_RELEASABLE, available, strategy

    if metric not in STREAM_METRICS:
        raise InputError(f"--metric: expected max or mean, got {metric!r}")
    n = check_horizon(horizon)
    what = "max per-step RMSE" if metric == "max" else "RMSE over the horizon (mean per-step MSE)"
    out = []
    for fam in check_families(families):
        names = available(fam) if mechanisms is None else [m for m in mechanisms if m in available(fam)]
        for name in names:
            v = strategy(name, n, fam).per_step_variance(unit_noise(fam))
            unit = float(v.max() if metric == "max" else v.mean())
            suffix = "/gaussian" if fam == "gaussian" and name not in LATTICE_RELEASABLE else ""
            label = LABELS[name] + (", Gaussian" if suffix else "")
            out.append(Curve("stream", name + suffix, label, what, fam, unit, "exact"))
    if not out:
        raise InputError(f"--mechanism: none of {', '.join(mechanisms or [])} is valid for this noise")
    return out


def check_plan_horizon(horizon: Any) -> int:
    """A planned stream's horizon N: an integer, at most the stream commands' cap, within the memory."""
    from dpviz.stream.cli import STEP_BYTES
    from dpviz.stream.fenwick import MAX_STEPS, check_horizon

    if horizon is None:
        raise InputError("stream params: 'horizon' (the number of releases N) is required")
    if isinstance(horizon, bool) or not isinstance(horizon, int):
        raise InputError(f"stream params: 'horizon' must be an integer, got {horizon!r}")
    if horizon > MAX_STEPS:
        raise InputError(f"stream params: 'horizon' {horizon:,} is above the cap of {MAX_STEPS:,} steps (MAX_STEPS "
                         "of dpviz.stream.fenwick, as for the stream commands)")
    return check_horizon(horizon, per_step=STEP_BYTES["variance"], name="stream params: 'horizon'")


def plan_curves(params: Mapping[str, Any], *, seed: int | None = None, max_seconds: float | None = None) -> list[Curve]:
    """Every candidate curve of one planned stream release (:data:`PLAN_PARAMS`): the horizon is checked
    against the stream commands' cap and memory estimate before any work."""
    from dpviz.core.curves import plan_families

    p = {**PLAN_PARAMS, **params}
    horizon = check_plan_horizon(p["horizon"])
    return stream_curves(horizon, metric=p["metric"], families=plan_families(p["noise"]))



def _max_dots(curves: Sequence[Curve], horizon: int, epsilons: Sequence[float], trials: int, seed: int,
              delta: float | None) -> Any:
    """The squared error at each mechanism's peak-variance step, with a sweep's per-trial seeds."""
    import numpy as np
    import pandas as pd

    from dpviz.core.curves import mse_dots
    from dpviz.core.trials import continuous_noise, trial_seed
    from dpviz.stream.mechanism import make_mechanism

    rows = []
    for c in curves:
        name = c.mechanism.split("/")[0]
        for i, eps in enumerate(epsilons):
            mech = make_mechanism(name, horizon, continuous_noise(float(eps), delta))
            t_star = int(np.argmax(mech.per_step_variance()))
            sq = np.array([mech.errors(np.random.default_rng(trial_seed(seed, i, j)), 1)[0, t_star] ** 2
                           for j in range(trials)])
            rows += [{"epsilon": float(eps), "trial": j, "method": c.mechanism, "metric": "peak_sq_error",
                      "value": float(v), "analytic": math.nan} for j, v in enumerate(sq)]
    return mse_dots(pd.DataFrame(rows), "peak_sq_error", square=False)


def plan_dots(curves: Sequence[Curve], source: Any, epsilons: tuple[float, ...], *, trials: int, seed: int,
              delta: float | None, options: Mapping[str, Any]) -> list[DotGroup]:
    """Monte-Carlo dots of stream curves of one noise family at horizon ``source`` (an int N): the mean
    per-step MSE (``metric="mean"``) or, for ``max``, the squared error at each mechanism's peak-variance step
    (drawn here with a sweep's seeds and simulation; the group's target is a sweep of the same cost)."""
    import numpy as np

    from dpviz.core.curves import DotGroup, mse_dots
    from dpviz.core.trials import run_trials

    horizon = int(source)
    names = {c.mechanism.split("/")[0]: c.mechanism for c in curves}
    target = stream_target(np.zeros(horizon, dtype=np.int64), tuple(names), delta)
    if options.get("metric", "max") == "max":
        def run() -> Any:
            return _max_dots(curves, horizon, epsilons, trials, seed, delta)
    else:
        def run() -> Any:
            s = mse_dots(run_trials(target, epsilons, trials, seed), "mse", square=False)
            s["method"] = s["method"].map(names)
            return s
    return [DotGroup(target, epsilons, run)]


# ---- plan CLI (``python -m dpviz plan stream``; ``common``: dpviz.planner.cli.COMMON) -------------------------
PLAN_HELP = "smallest ε per mechanism for a target per-step RMSE over a horizon"


def plan_args(p: Any, common: Any) -> None:
    """The ``plan stream`` flags: --horizon N and --max-steps as the stream commands take them."""
    from dpviz.stream.cli import _horizon_arg

    _horizon_arg(p, required=True)
    common.target(p)
    p.add_argument("--metric", choices=("max", "mean"), default="max",
                   help="max: the worst step's RMSE; mean: the RMSE over the horizon (default: max)")
    common.noise(p)


def plan_command(args: Any, common: Any) -> int:
    """``plan stream``: every mechanism's smallest budget for ``--target-rmse`` at horizon N, best first."""
    from dpviz.stream.cli import STEP_BYTES
    from dpviz.stream.fenwick import check_steps

    common.check_output(args, [])
    fams = common.families(args)
    common.check_target(args)
    check_steps(args.horizon, args.max_steps, per_step=STEP_BYTES["variance"])  # memory estimate and cap
    curves = stream_curves(args.horizon, metric=args.metric, families=fams)
    plans = common.plan_target(curves, args.target_rmse, args.delta)
    common.print_plans(plans, f"plan: stream, horizon N = {args.horizon:,}; {plans[0].metric} ≤ {args.target_rmse:g}")
    common.write_json(args, common.plans_json("stream", {"horizon": args.horizon, "metric": args.metric,
                                                         "target_rmse": args.target_rmse}, plans), [])
    return 0


# ---- ledger (dpviz.ledger.identity) ----------------------------------------------------------------------------
LEDGER_ARGS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("--count-column", {"help": "stream: name of the count column"}),
    ("--time-column", {"help": "stream: name of the timestamp column"}),
)
"""The options a stream dataset is loaded with for the ledger (those of ``stream release``)."""


def counted_from_records(source: Any, data: Any = None) -> bool:
    """The ledger's rule (:func:`dpviz.ledger.identity.counted_from_records`): a stream counted from timestamped
    events (``--bucket``: :func:`dpviz.stream.io.stream_from_events`) is charged to the records file, the same
    dataset as any other release counted from it; a count series keeps the stream's own form."""
    from dpviz.stream.io import EVENTS

    return getattr(data, "count_column", None) == EVENTS


def page_canonical_bytes(label: str, data: Any) -> bytes:
    """The canonical form of what the Stream page holds: a ``StreamData`` or the count series itself."""
    from types import SimpleNamespace

    from dpviz.stream.io import canonical_bytes

    return canonical_bytes(label, data if hasattr(data, "counts") else SimpleNamespace(counts=data))
