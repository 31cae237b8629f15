"""Running a sweep: in this process, or as Dask tasks on a ``distributed`` cluster (local or real).

Dask (M. Rocklin, "Dask: Parallel Computation with Blocked algorithms and Task Scheduling", Proc. 14th
Python in Science Conference, 2015) ships each task — a batch of trials at one ε — to a worker; the
target (data + shared precomputation) is scattered to every worker once. Results are put back in task
order, not completion order, and every trial draws from its own seed (:func:`dpviz.sweep.spec.trial_seed`),
so ``run(spec, client=c)`` returns the same table as ``run(spec)``, value for value.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pandas as pd

from dpviz.core.modes import SIMULATION_NOTICE
from dpviz.core.tables import write_atomic
from dpviz.errors import InputError
from dpviz.core.trials import (
    ROW_BYTES,
    SUMMARY_COLUMNS,
    TIDY_COLUMNS,
    Target,
    TrialEstimate,
    categorical,
    check_trials,
    estimate_trials,
    summarise,
    trial_frame,
)
from dpviz.sweep.spec import SweepSpec, Task, plan_tasks
from dpviz.sweep.targets import prepare

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

Progress = Callable[[int, int], None]
"""``progress(done, total)``: called after each finished task (``total`` tasks)."""
WORKER_BYTES = 256 * 2**20
"""Memory of one local Dask worker process with NumPy, pandas and SciPy loaded (measured 150-220 MiB), rounded up."""


SweepEstimate = TrialEstimate
"""What a sweep will cost (:class:`dpviz.core.trials.TrialEstimate`)."""


def estimate(spec: SweepSpec, target: Target | None = None, *, parallel: int = 1,
             at_largest: bool = True) -> SweepEstimate:
    """Estimate ``spec``'s cost by timing a few of its trials (:func:`dpviz.core.trials.estimate_trials`: seeds
    of their own, the sweep's results do not change). ``parallel``: processes working at once (1 in this process)."""
    target = prepare(spec) if target is None else target
    return estimate_trials(target, spec.epsilons, spec.trials, parallel=parallel, at_largest=at_largest)


def check_sweep(spec: SweepSpec, target: Target | None = None, *, parallel: int = 1, max_seconds: float,
                raise_with: str = "--max-seconds S") -> SweepEstimate:
    """:func:`estimate`, then refuse (InputError, one line) a sweep above ``max_seconds`` or the memory available."""
    target = prepare(spec) if target is None else target
    return check_trials(target, spec.epsilons, spec.trials, parallel=parallel, max_seconds=max_seconds,
                        raise_with=raise_with)


def run_task(target: Target, task: Task) -> pd.DataFrame:
    """The tidy rows of trials ``task.start .. task.stop - 1`` at ``task.epsilon`` (runs on a worker)."""
    return trial_frame(target, task.epsilon, task.eps_index, task.start, task.stop, task.seed)


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
    df = categorical(pd.concat(parts, ignore_index=True), target.methods)
    df.attrs["sweep"] = {**spec.describe(), "source": target.name, "mode": "simulate", "notice": SIMULATION_NOTICE,
                         "tasks": len(tasks), "noise": target.noise}
    return df


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
