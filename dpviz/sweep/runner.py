"""Running a sweep: in this process, or as Dask tasks on a ``distributed`` cluster (local or real).

Dask (M. Rocklin, "Dask: Parallel Computation with Blocked algorithms and Task Scheduling", Proc. 14th
Python in Science Conference, 2015) ships each task — a batch of trials at one ε — to a worker; the
target (data + shared precomputation) is scattered to every worker once. Results are put back in task
order, not completion order, and every trial draws from its own seed (:func:`dpviz.sweep.spec.trial_seed`),
so ``run(spec, client=c)`` returns the same table as ``run(spec)``, value for value.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dpviz.core.modes import SIMULATION_NOTICE
from dpviz.core.tables import write_atomic
from dpviz.errors import InputError
from dpviz.sweep.spec import SweepSpec, Task, plan_tasks, trial_seed
from dpviz.sweep.targets import Target, prepare

__all__ = [
    "ROW_BYTES",
    "SUMMARY_COLUMNS",
    "TIDY_COLUMNS",
    "WORKER_BYTES",
    "MAX_TIMEOUT",
    "Progress",
    "SweepEstimate",
    "check_sweep",
    "check_timeout",
    "estimate",
    "open_client",
    "run",
    "run_task",
    "summarise",
    "write_parquet",
]

TIDY_COLUMNS = ("epsilon", "trial", "method", "metric", "value", "analytic")
"""One row per ε, trial, method and metric; ``analytic`` is the exact expectation of ``value`` (or NaN)."""
SUMMARY_COLUMNS = ("epsilon", "method", "metric", "trials", "mean", "std", "ci_low", "ci_high", "q025", "q975",
                   "analytic")
Progress = Callable[[int, int], None]
"""``progress(done, total)``: called after each finished task (``total`` tasks)."""
ROW_BYTES = 200
"""Peak memory per tidy row (the rows as built, their concatenation and the categorical columns), rounded up."""
WORKER_BYTES = 256 * 2**20
"""Memory of one local Dask worker process with NumPy, pandas and SciPy loaded (measured 150-220 MiB), rounded up."""


@dataclass(frozen=True)
class SweepEstimate:
    """What a sweep will cost: wall ``seconds`` (over ``parallel`` processes), peak ``memory`` of the tidy
    table (bytes) and its ``rows``; from two or three timed trials (:func:`estimate`): ``per_trial`` seconds
    per trial and ``setup`` seconds per ε (work done once per ε, e.g. a stream mechanism's structure)."""

    seconds: float
    memory: float
    rows: int
    per_trial: float
    parallel: int
    setup: float = 0.0


def _timed_trial(target: Target, epsilon: float, k: int) -> tuple[float, int]:
    t0 = time.perf_counter()
    rows = target.trial(epsilon, np.random.SeedSequence(0, spawn_key=(k,)))
    return time.perf_counter() - t0, len(rows)


def estimate(spec: SweepSpec, target: Target | None = None, *, parallel: int = 1,
             at_largest: bool = True) -> SweepEstimate:
    """Estimate ``spec``'s cost by timing a few of its trials (seeds of their own: the sweep's results do not
    change): one at the smallest ε twice (the first pays any per-ε setup, e.g. a stream mechanism's
    structure) and, with ``at_largest`` (for methods whose cost moves with ε), one at the largest.
    ``parallel``: processes working at once (1 in this process)."""
    target = prepare(spec) if target is None else target
    eps = spec.epsilons
    first, rows = _timed_trial(target, min(eps), 0)
    steady, _ = _timed_trial(target, min(eps), 1)
    setup = max(0.0, first - steady)
    if at_largest and len(eps) > 1:
        last, _ = _timed_trial(target, max(eps), 2)
        steady = max(steady, last - setup)
    n = len(eps) * spec.trials
    seconds = (len(eps) * setup + n * steady) / max(1, int(parallel))
    return SweepEstimate(seconds, float(n) * rows * ROW_BYTES, n * rows, steady, max(1, int(parallel)), setup)


def check_sweep(spec: SweepSpec, target: Target | None = None, *, parallel: int = 1, max_seconds: float,
                raise_with: str = "--max-seconds S") -> SweepEstimate:
    """:func:`estimate`, then refuse (InputError, one line) a sweep above ``max_seconds`` or the memory available."""
    from dpviz.core.limits import check_work

    est = estimate(spec, target, parallel=parallel)
    where = "" if est.parallel == 1 else f" on {est.parallel} workers"
    check_work(f"the sweep ({len(spec.epsilons)} ε × {spec.trials:,} trials, {est.rows:,} result rows{where})",
               seconds=est.seconds, memory=est.memory, max_seconds=max_seconds, raise_with=raise_with,
               cheaper="lower --trials or give fewer ε")
    return est


def run_task(target: Target, task: Task) -> pd.DataFrame:
    """The tidy rows of trials ``task.start .. task.stop - 1`` at ``task.epsilon`` (runs on a worker)."""
    records, trials = [], []
    for j in range(task.start, task.stop):
        rows = target.trial(task.epsilon, trial_seed(task.seed, task.eps_index, j))
        records += rows
        trials += [j] * len(rows)
    method, metric, value, analytic = zip(*records) if records else ((), (), (), ())
    return pd.DataFrame({"epsilon": np.full(len(records), task.epsilon), "trial": np.asarray(trials, np.int64),
                         "method": list(method), "metric": list(metric), "value": np.asarray(value, float),
                         "analytic": np.asarray(analytic, float)})


def _in_process(target: Target, tasks: list[Task], progress: Progress | None) -> list[pd.DataFrame]:
    parts = []
    for k, task in enumerate(tasks, 1):
        parts.append(run_task(target, task))
        if progress is not None:
            progress(k, len(tasks))
    return parts


def _on_cluster(client: Any, target: Target, tasks: list[Task], progress: Progress | None) -> list[pd.DataFrame]:
    from distributed import as_completed

    token = uuid.uuid4().hex[:12]
    shared = client.scatter(target, broadcast=True, hash=False)
    futures = [client.submit(run_task, shared, task, key=f"dpviz-sweep-{token}-{k}", pure=False)
               for k, task in enumerate(tasks)]
    slot = {f.key: k for k, f in enumerate(futures)}
    parts: list[pd.DataFrame | None] = [None] * len(futures)
    try:
        for done, fut in enumerate(as_completed(futures), 1):
            parts[slot[fut.key]] = fut.result()  # re-raises a worker's exception here
            if progress is not None:
                progress(done, len(futures))
    finally:
        client.cancel([*futures, shared])
    return parts  # type: ignore[return-value]


def run(spec: SweepSpec, *, client: Any = None, progress: Progress | None = None,
        target: Target | None = None) -> pd.DataFrame:
    """Run ``spec`` and return the tidy table (:data:`TIDY_COLUMNS`; ``method`` and ``metric`` are ordered
    categoricals). ``client=None``: sequentially in this process (what a page's Monte-Carlo dots use);
    a ``distributed.Client``: as Dask tasks on its workers, with the same result. ``df.attrs["sweep"]``
    holds the settings and the seed (a fresh one when ``spec.seed`` is None: rerun with it to reproduce).
    ``target``: ``prepare(spec)`` done beforehand (e.g. to fail on bad data before starting a cluster).
    """
    if not isinstance(spec, SweepSpec):
        raise InputError(f"run: expected a SweepSpec, got {type(spec).__name__}")
    spec = spec.resolved()
    target = prepare(spec) if target is None else target
    tasks = plan_tasks(spec)
    parts = _in_process(target, tasks, progress) if client is None else _on_cluster(client, target, tasks, progress)
    df = pd.concat(parts, ignore_index=True)
    metrics = list(dict.fromkeys(df["metric"]))
    df["method"] = pd.Categorical(df["method"], categories=list(target.methods), ordered=True)
    df["metric"] = pd.Categorical(df["metric"], categories=metrics, ordered=True)
    df.attrs["sweep"] = {**spec.describe(), "source": target.name, "mode": "simulate", "notice": SIMULATION_NOTICE,
                         "tasks": len(tasks), "noise": _noise_text(spec)}
    return df


def _noise_text(spec: SweepSpec) -> str:
    if spec.capability == "marginals":
        return f"continuous Gaussian, ρ from (ε, δ = {spec.delta:g}) (CKS conversion)"
    if spec.capability == "graph":
        return "Laplace (pure ε-DP), as each graph method draws it"
    return "Laplace (pure ε-DP)" if spec.delta is None else f"Gaussian calibrated to (ε, δ = {spec.delta:g})"


def summarise(df: pd.DataFrame) -> pd.DataFrame:
    """Per ε × method × metric: trials, mean, std, the 95% confidence interval of the mean
    (``ci_low``, ``ci_high``: mean ± t₀.₉₇₅,ₙ₋₁ · s/√n, Student's t), the central 95% of the trials
    (``q025``, ``q975``: where one release's value lands) and the analytic expectation (or NaN)."""
    from scipy.stats import t as student_t

    missing = [c for c in TIDY_COLUMNS if c not in df.columns]
    if missing:
        raise InputError(f"summarise: expected a sweep table with columns {', '.join(TIDY_COLUMNS)}; "
                         f"missing {', '.join(missing)}")
    keys = ["epsilon", "method", "metric"]
    g = df.groupby(keys, sort=False, observed=True)
    out = g["value"].agg(trials="count", mean="mean", std="std")
    q = g["value"].quantile([0.025, 0.975]).unstack()
    out["q025"], out["q975"] = q[0.025], q[0.975]
    out["analytic"] = g["analytic"].first()
    n = out["trials"].to_numpy(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        half = student_t.ppf(0.975, n - 1) * out["std"].to_numpy(float) / np.sqrt(n)
    out["ci_low"], out["ci_high"] = out["mean"] - half, out["mean"] + half
    out = out.reset_index()
    out["trials"] = out["trials"].astype(np.int64)
    out = out.sort_values(keys, kind="stable", ignore_index=True)
    return out[list(SUMMARY_COLUMNS)]


def write_parquet(df: pd.DataFrame, path: str | Path, *, inputs: tuple[str | Path | None, ...] = ()) -> Path:
    """Write ``df`` as Parquet (pyarrow) atomically: a temporary file in the destination's folder, fsync,
    then ``os.replace``; the destination is checked like every output (:func:`check_destination`).
    ``df.attrs`` (the sweep's settings) travel in the file's metadata."""
    return write_atomic(path, lambda fh: df.to_parquet(fh, index=False, engine="pyarrow"), inputs=inputs)


MAX_TIMEOUT = 3600.0
"""The longest ``--timeout`` to wait for a scheduler (one hour)."""


def check_timeout(timeout: object) -> float:
    """``--timeout``: seconds to wait for a scheduler, positive, finite and at most :data:`MAX_TIMEOUT`."""
    from dpviz.core.accounting import positive

    t = positive("--timeout", timeout)
    if t > MAX_TIMEOUT:
        raise InputError(f"--timeout: expected at most {MAX_TIMEOUT:g} seconds to reach the scheduler, got {t:g}")
    return t


@contextmanager
def open_client(scheduler: str | None = None, *, workers: int = 2, timeout: float = 10.0) -> Iterator[Any]:
    """A ``distributed.Client``: connected to ``scheduler`` (``tcp://host:8786``, an existing cluster whose
    workers have the same dpviz installed), or to a fresh ``LocalCluster(n_workers=workers,
    threads_per_worker=1, processes=True)`` closed on exit. A scheduler that cannot be reached, or workers
    with another dpviz version, raise InputError."""
    from distributed import Client, LocalCluster

    import dpviz

    timeout = check_timeout(timeout)
    if scheduler is None:
        if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
            raise InputError(f"--workers: expected a positive integer, got {workers!r}")
        with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
                Client(cluster) as client:
            yield client
        return
    try:
        client = Client(scheduler, timeout=f"{timeout}s")
    except (OSError, TimeoutError, ValueError) as exc:
        raise InputError(f"--scheduler: cannot connect to {scheduler}: {exc}") from None
    with client:
        versions = client.run(_dpviz_version)
        if not versions:
            raise InputError(f"--scheduler: {scheduler} has no workers")
        other = {addr: v for addr, v in versions.items() if v != dpviz.__version__}
        if other:
            addr, v = next(iter(other.items()))
            raise InputError(f"--scheduler: worker {addr} runs dpviz {v}, this client {dpviz.__version__}: install "
                             "the same dpviz on every machine")
        yield client


def _dpviz_version() -> str:
    try:
        import dpviz
    except ImportError:  # pragma: no cover - a worker without dpviz
        return "(not installed)"
    return dpviz.__version__
