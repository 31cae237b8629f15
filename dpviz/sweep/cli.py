"""``python -m dpviz sweep CAPABILITY DATA --epsilons ... --trials ...``: Monte-Carlo sweeps.

One verb per registered capability: its help line and its own settings come from the capability's hooks module
(``SWEEP_HELP``; ``SWEEP_ARGS``, ``(flag, add_argument keywords)`` pairs whose values become the
``SweepSpec.options`` its ``sweep_target`` hook reads). Each verb simulates ``--trials`` releases at every ε
of ``--epsilons`` with every method of ``--methods``, as Dask tasks on a local cluster (``--workers``, default
2 processes), on an existing cluster (``--scheduler tcp://host:8786``) or in this process (``--workers 0``). A
progress bar goes to stderr; the summary (mean, 95% interval and analytic value per ε × method × metric) to
stdout; the tidy table (one row per ε, trial, method and metric) to ``--output`` as Parquet. Exit code 2 for
bad input.

This module imports nothing heavy at import time (the parser is built for every ``python -m dpviz``
call); numpy, pandas and dask are imported when a verb runs.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from dpviz.core.limits import DEFAULT_MAX_SECONDS, max_seconds_arg
from dpviz.core.registry import tool

__all__ = ["MAX_WORKERS", "ProgressBar", "check_outputs_distinct", "cmd_sweep", "register"]

MAX_WORKERS = 256
"""The most local worker processes a sweep starts (each also needs :data:`dpviz.sweep.runner.WORKER_BYTES`)."""

def _verb_args(name: str) -> tuple[str, tuple[tuple[str, dict], ...]]:
    """A capability's ``SWEEP_HELP`` and ``SWEEP_ARGS`` (from the module of its ``sweep_target`` hook)."""
    from dpviz.core.registry import capability

    cap = capability(name)
    module = sys.modules[cap.hook("sweep_target").__module__]
    return getattr(module, "SWEEP_HELP", cap.title), tuple(getattr(module, "SWEEP_ARGS", ()))


def register(groups: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the ``sweep`` parser and one verb per registered capability to ``groups``."""
    from dpviz.core.registry import CAPABILITIES

    sweep = groups.add_parser(
        "sweep", help=tool("sweep").cli_help,
        description=f"``python -m dpviz sweep {'|'.join(c.name for c in CAPABILITIES)} DATA --epsilons ... "
                    "--trials ...``: Monte-Carlo sweeps.",
        epilog="A sweep is a simulation (seeded continuous noise, errors against the truth), never a release. "
               "Same --seed, same numbers, whatever the cluster.")
    subs = sweep.add_subparsers(dest="sweep_command", required=True, parser_class=type(sweep))
    for cap in CAPABILITIES:
        text, extra = _verb_args(cap.name)
        p = subs.add_parser(cap.name, help=text)
        p.add_argument("input", metavar="DATA", help="a file or bundled data sample:NAME (see python -m dpviz --help)")
        _common(p)
        dests = [p.add_argument(flag, **kwargs).dest for flag, kwargs in extra]
        p.set_defaults(func=cmd_sweep, sweep_options=tuple(dests))
    return sweep


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--epsilons", required=True, help="comma-separated ε grid, e.g. 0.1,0.5,1,2")
    p.add_argument("--trials", type=int, default=100, help="simulated releases per ε (default 100)")
    p.add_argument("--methods", default="all", help="comma-separated methods or all (default)")
    p.add_argument("--delta", type=float, default=None,
                   help="δ: Gaussian noise calibrated to (ε, δ) (tree, stream; required for marginals)")
    p.add_argument("--seed", type=int, default=None, help="root seed (default: fresh entropy, printed)")
    p.add_argument("--batch", type=int, default=None, help="trials per Dask task (default 25)")
    p.add_argument("--scheduler", metavar="ADDRESS", default=None,
                   help="an existing Dask scheduler, e.g. tcp://host:8786 (default: a local cluster)")
    p.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for --scheduler (default 10)")
    p.add_argument("--workers", type=int, default=2,
                   help="local cluster size when no --scheduler: worker processes, 1 thread each (default 2, at most "
                        f"{MAX_WORKERS} and what the memory holds); 0 runs in this process without Dask")
    p.add_argument("--output", type=Path, default=None, help="write the tidy table (Parquet) here")
    p.add_argument("--summary", type=Path, default=None, help="also write the summary as CSV here")
    p.add_argument("--quiet", action="store_true", help="no progress bar on stderr")
    p.add_argument("--max-seconds", type=max_seconds_arg, default=DEFAULT_MAX_SECONDS, metavar="S",
                   help="refuse a sweep estimated (from a few timed trials) to take longer (default "
                        f"{DEFAULT_MAX_SECONDS:g} s)")


class ProgressBar:
    """``progress(done, total)`` as a bar on stderr: redrawn in place on a terminal, every 10% otherwise."""

    width = 30

    def __init__(self, label: str = "sweep", stream=None) -> None:
        self.label = label
        self.stream = sys.stderr if stream is None else stream
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.start = time.perf_counter()
        self.first: tuple[int, float] | None = None  # (done, time) at the first report: the rate is measured from it
        self.last = -1

    def __call__(self, done: int, total: int) -> None:
        tenth = 10 * done // total
        if not self.tty and tenth == self.last and done != total:
            return
        self.last = tenth
        filled = self.width * done // total
        now = time.perf_counter()
        elapsed = now - self.start
        if self.first is None:
            self.first = (done, now)
        d0, t0 = self.first
        eta = f", ~{(now - t0) * (total - done) / (done - d0):.0f} s left" if d0 < done < total else ""
        line = f"{self.label} [{'#' * filled}{'.' * (self.width - filled)}] {done}/{total} tasks ({elapsed:.1f} s{eta})"
        end = "\n" if done == total or not self.tty else ""
        print(("\r" if self.tty else "") + line, end=end, file=self.stream, flush=True)


def _spec(args: argparse.Namespace):
    from dpviz.sweep.spec import SweepSpec

    options = {d: getattr(args, d) for d in args.sweep_options}
    return SweepSpec(args.sweep_command, args.input, args.epsilons, trials=args.trials, methods=args.methods,
                     seed=args.seed, delta=args.delta, batch=args.batch, options=options).resolved()


def check_outputs_distinct(outputs: dict[str, Path | None]) -> None:
    """Refuse two output flags naming one file (resolved paths, or the same inode if both exist): the second
    write would replace the first."""
    import os

    from dpviz.errors import InputError

    seen: list[tuple[str, Path]] = []
    for flag, path in outputs.items():
        if path is None:
            continue
        for other_flag, other in seen:
            same = path.resolve() == other.resolve()
            if not same and path.exists() and other.exists():
                same = os.path.samefile(path, other)
            if same:
                raise InputError(f"{flag}: {path} is also the {other_flag} file; give each output its own name")
        seen.append((flag, path))


def _check_workers(args: argparse.Namespace) -> int:
    """The processes that will run trials at once (1 in this process); refuses a bad or unaffordable --workers."""
    from dpviz.core.limits import check_work
    from dpviz.errors import InputError
    from dpviz.sweep.runner import WORKER_BYTES

    w = args.workers
    if not 0 <= w <= MAX_WORKERS or (w == 0 and args.scheduler):
        raise InputError(f"--workers: expected 1 to {MAX_WORKERS} local workers, or 0 (in-process) without "
                         f"--scheduler; got {w}")
    if args.scheduler:
        return 1  # the remote cluster's size is not known before connecting: no speed-up assumed
    check_work(f"--workers {w}: a local cluster of {w} worker processes", memory=float(w) * WORKER_BYTES,
               cheaper="use fewer workers")
    return max(1, w)


def cmd_sweep(args: argparse.Namespace) -> int:
    from dpviz.core.modes import SIMULATION_NOTICE
    from dpviz.core.registry import SAMPLE_PREFIX
    from dpviz.core.tables import check_destination, write_table
    from dpviz.sweep.runner import check_sweep, check_timeout, open_client, run, summarise, write_parquet
    from dpviz.sweep.targets import prepare

    spec = _spec(args)
    parallel = _check_workers(args)
    check_timeout(args.timeout)
    inputs = [None if str(args.input).startswith(SAMPLE_PREFIX) else Path(args.input)]
    check_outputs_distinct({"--output": args.output, "--summary": args.summary})
    for out in (args.output, args.summary):
        if out is not None:
            check_destination(out, inputs)
    target = prepare(spec)  # bad data or options fail here, before a cluster starts
    check_sweep(spec, target, parallel=parallel, max_seconds=args.max_seconds)  # a few timed trials, then the estimate
    print(SIMULATION_NOTICE)
    where = (f"on the Dask scheduler {args.scheduler}" if args.scheduler else
             "in this process (no Dask)" if args.workers == 0 else
             f"on a local Dask cluster ({args.workers} worker process(es) × 1 thread)")
    print(f"sweep {spec.capability} {args.input}: ε ∈ {{{', '.join(f'{e:g}' for e in spec.epsilons)}}}, "
          f"{spec.trials} trials, methods {args.methods}, seed {spec.seed} (retype --seed {spec.seed} to reproduce)")
    progress = None if args.quiet else ProgressBar(f"sweep {spec.capability}")
    t0 = time.perf_counter()
    if args.workers == 0 and not args.scheduler:
        df = run(spec, progress=progress, target=target)
    else:
        with open_client(args.scheduler, workers=args.workers, timeout=args.timeout) as client:
            df = run(spec, client=client, progress=progress, target=target)
    seconds = time.perf_counter() - t0
    meta = df.attrs["sweep"]
    print(f"ran {meta['tasks']} tasks ({spec.batch_size} trials each) {where} in {seconds:.1f} s; "
          f"noise: {meta['noise']}")
    summary = summarise(df)
    print("summary: mean, 95% CI of the mean (ci_low, ci_high), central 95% of trials (q025, q975), "
          "analytic expectation (NaN: none)")
    print(summary.to_string(index=False, float_format=lambda v: f"{v:.6g}"))
    if args.output is not None:
        write_parquet(df, args.output, inputs=tuple(inputs))
        print(f"wrote {len(df):,} rows (epsilon, trial, method, metric, value, analytic) to {args.output}")
    if args.summary is not None:
        write_table(summary, args.summary, inputs=inputs)
        print(f"wrote the summary to {args.summary}")
    return 0
