"""What a sweep runs (:class:`SweepSpec`), how it is cut into tasks (:func:`plan_tasks`) and how each
trial gets its own random stream (:func:`trial_seed`).

Seeding follows NumPy's recommendation for parallel streams: one root :class:`numpy.random.SeedSequence`
and spawned children, whose states are hashed from (entropy, spawn key) and are independent for all
practical purposes (M. E. O'Neill, "PCG: A Family of Simple Fast Space-Efficient Statistically Good
Algorithms for Random Number Generation", HMC-CS-2014-0905, 2014, the design behind
``SeedSequence``; NumPy's "Parallel random number generation" guide). Trial j at ε index i uses the
child with spawn key (i, j): ``SeedSequence(seed, spawn_key=(i, j))`` is exactly
``SeedSequence(seed).spawn(n_eps)[i].spawn(n_trials)[j]``, built without spawning every sibling, so a
task can build the seeds of its own trials only.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from dpviz.core.accounting import probability
from dpviz.core.modes import check_seed, fresh_seed
from dpviz.core.registry import CAPABILITIES as REGISTERED
from dpviz.errors import InputError
from dpviz.core.trials import (
    MIN_SIMULATION_EPSILON,
    MIN_SIMULATION_RHO,
    parse_epsilons,
    simulation_epsilon,
    simulation_rho,
    trial_seed,
)

__all__ = ["CAPABILITIES", "DEFAULT_BATCH", "MAX_TRIALS", "MIN_SIMULATION_EPSILON", "MIN_SIMULATION_RHO", "SweepSpec",
           "Task", "parse_epsilons", "plan_tasks", "simulation_epsilon", "simulation_rho", "trial_seed"]

CAPABILITIES: tuple[str, ...] = tuple(c.name for c in REGISTERED)
"""The capabilities a sweep runs: every registered one (each plugs in by its ``sweep_target`` hook)."""
DEFAULT_BATCH = 25
"""Trials per task when the spec gives none: enough work per task (~0.1–1 s on the bundled data) to
amortise Dask's few milliseconds of scheduling overhead, small enough to keep both workers busy."""
MAX_TRIALS = 1_000_000
def _count(name: str, value: object, upper: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or not 1 <= int(value) <= upper:
        raise InputError(f"{name}: expected an integer from 1 to {upper:,}, got {value!r}")
    return int(value)


@dataclass(frozen=True)
class SweepSpec:
    """One sweep: ``capability`` on ``source`` at every ε of ``epsilons``, ``trials`` simulated releases
    each, every method of ``methods`` on each (the same noise draw where the capability shares one).

    ``capability``: any registered one (its ``sweep_target`` hook reads the spec). ``source``: ``"sample:NAME"``,
    a file path, or data already loaded (e.g. a tree ``TreeData``, a stream's array of counts). ``methods``:
    ``"all"``, a comma list or a sequence of the capability's method names. ``delta``: Gaussian noise calibrated
    to (ε, δ) instead of Laplace, where the capability offers it (e.g. marginals require it, graph refuses it).
    ``seed``: None draws a fresh one (:meth:`resolved` fixes it before running). ``batch``: trials per task
    (default :data:`DEFAULT_BATCH`). ``options``: the capability's own settings, with the defaults of its hooks
    module's ``SWEEP_OPTIONS`` (e.g. a tree's ``split`` and ``queries``).
    """

    capability: str
    source: Any
    epsilons: tuple[float, ...]
    trials: int = 100
    methods: str | tuple[str, ...] = "all"
    seed: int | None = None
    delta: float | None = None
    batch: int | None = None
    options: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        from dpviz.core import registry

        names = tuple(c.name for c in registry.CAPABILITIES)  # read now: a capability plugs in by registering
        if self.capability not in names:
            raise InputError(f"sweep: unknown capability {self.capability!r}; expected one of {', '.join(names)}")
        object.__setattr__(self, "epsilons", parse_epsilons(self.epsilons))
        object.__setattr__(self, "trials", _count("--trials", self.trials, MAX_TRIALS))
        methods = self.methods
        if isinstance(methods, str):
            methods = "all" if methods.strip() == "all" else tuple(m.strip() for m in methods.split(",") if m.strip())
        else:
            methods = tuple(methods)
        if not methods:
            raise InputError("--methods: expected all or one or more method names (comma-separated)")
        object.__setattr__(self, "methods", methods)
        if self.seed is not None:
            object.__setattr__(self, "seed", check_seed(self.seed))
        if self.delta is not None:
            object.__setattr__(self, "delta", probability("--delta", self.delta))
        if self.batch is not None:
            object.__setattr__(self, "batch", _count("--batch", self.batch, MAX_TRIALS))
        if not isinstance(self.options, Mapping):
            raise InputError(f"options: expected a mapping of the capability's settings, got "
                             f"{type(self.options).__name__}")

    def resolved(self) -> SweepSpec:
        """This spec with a seed (a fresh one, from OS entropy, if none was given)."""
        return self if self.seed is not None else replace(self, seed=fresh_seed())

    @property
    def batch_size(self) -> int:
        return min(self.trials, self.batch or DEFAULT_BATCH)

    def describe(self) -> dict[str, Any]:
        """JSON-ready settings (stored with the results): no data, only how the sweep was run."""
        src = self.source if isinstance(self.source, str) else getattr(self.source, "name", type(self.source).__name__)
        return {"capability": self.capability, "source": str(src), "epsilons": list(self.epsilons),
                "trials": self.trials, "methods": self.methods if isinstance(self.methods, str) else list(self.methods),
                "seed": self.seed, "delta": self.delta, "batch": self.batch_size,
                "options": {k: (v if isinstance(v, (int, float, str, bool, type(None))) else str(v))
                            for k, v in self.options.items()}}


@dataclass(frozen=True)
class Task:
    """Trials ``start`` .. ``stop - 1`` at ε = ``epsilon`` (index ``eps_index`` in the grid), root ``seed``."""

    eps_index: int
    epsilon: float
    start: int
    stop: int
    seed: int

    @property
    def size(self) -> int:
        return self.stop - self.start


def plan_tasks(spec: SweepSpec) -> list[Task]:
    """The tasks of a resolved spec, ε-major: ⌈trials / batch⌉ tasks per ε."""
    if spec.seed is None:
        raise InputError("plan_tasks: resolve the spec first (spec.resolved()) so every task has the same seed")
    b = spec.batch_size
    return [Task(i, eps, start, min(start + b, spec.trials), spec.seed)
            for i, eps in enumerate(spec.epsilons) for start in range(0, spec.trials, b)]
