"""``python -m dpviz audit CAPABILITY``: an empirical privacy audit from the command line.

One verb per registered capability (:data:`dpviz.core.registry.CAPABILITIES`): its help line and its own flags
come from the capability's hooks module (``AUDIT_HELP``, ``AUDIT_ARGS``: ``(flag, add_argument keywords)``
pairs whose values go to its ``audit_target`` hook). Each verb runs the mechanism ``--trials`` times on each
of two neighbouring inputs (a simulation with seeded noise: ``--seed``), prints every event with its counts
and Clopper–Pearson bounds, the ε lower bound against the claimed ε and a verdict line; progress goes to
stderr. The exit code is 0 whether or not a violation is found (the verdict is printed), 2 for bad input.

This module imports nothing heavy at import time (the parser is built for every ``python -m dpviz``
call); the auditor is imported when a verb runs.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from dpviz.core.limits import DEFAULT_MAX_SECONDS, max_seconds_arg
from dpviz.core.registry import tool

__all__ = ["register", "cmd_audit"]


def _verb_args(name: str) -> tuple[str, tuple[tuple[str, dict[str, Any]], ...]]:
    """A capability's ``AUDIT_HELP`` and ``AUDIT_ARGS`` (from the module of its ``audit_target`` hook)."""
    from dpviz.core.registry import capability

    cap = capability(name)
    module = sys.modules[cap.hook("audit_target").__module__]
    return getattr(module, "AUDIT_HELP", cap.title), tuple(getattr(module, "AUDIT_ARGS", ()))


def register(groups: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the ``audit`` parser and one verb per registered capability to ``groups``."""
    from dpviz.core.registry import CAPABILITIES

    audit = groups.add_parser(
        "audit", help=tool("audit").cli_help,
        description=f"``python -m dpviz audit {'|'.join(c.name for c in CAPABILITIES)}``: an empirical privacy audit "
                    "from the command line.",
        epilog="An audit can refute a privacy claim (ε_lower > ε) but never prove one. References: Jagielski, "
               "Ullman & Oprea, NeurIPS 2020; Nasr et al., IEEE S&P 2021; Google's DP-Auditorium, 2024.")
    subs = audit.add_subparsers(dest="audit_command", required=True)
    for cap in CAPABILITIES:
        text, extra = _verb_args(cap.name)
        p = subs.add_parser(cap.name, help=text)
        _common(p)
        dests = []
        for flag, kwargs in extra:
            dests.append(p.add_argument(flag, **kwargs).dest)
        p.set_defaults(func=cmd_audit, audit_options=tuple(dests))
    return audit


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--epsilon", type=float, default=1.0,
                   help="claimed ε the mechanism is run at (default: 1; from 1e-6 to 1e6, the simulation bounds)")
    p.add_argument("--trials", type=int, default=2000, help="releases on each input (default: 2000)")
    p.add_argument("--alpha", type=float, default=0.05, help="1 − confidence of the lower bound (default: 0.05)")
    p.add_argument("--seed", type=int, default=None,
                   help="simulation seed (default: fresh entropy, printed); an audit is a simulation")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    p.add_argument("--max-seconds", type=max_seconds_arg, default=DEFAULT_MAX_SECONDS, metavar="S",
                   help="refuse an audit estimated (from a few timed releases) to take longer "
                        f"(default {DEFAULT_MAX_SECONDS:g} s)")


def _target(args: argparse.Namespace) -> Any:
    from dpviz.audit.targets import target

    return target(args.audit_command, args.epsilon, **{d: getattr(args, d) for d in args.audit_options})


class _Progress:
    """``progress(done, total)`` on stderr: a carriage-return line on a terminal, every 10% otherwise."""

    def __init__(self) -> None:
        self.tty = sys.stderr.isatty()
        self.shown = -1

    def __call__(self, done: int, total: int) -> None:
        pct = 100 * done // total
        step = pct if self.tty else pct - pct % 10
        if step == self.shown:
            return
        self.shown = step
        end = "\n" if (done == total or not self.tty) else ""
        print(f"\raudit: {done}/{total} releases ({pct}%)", end=end, file=sys.stderr, flush=True)


def cmd_audit(args: argparse.Namespace) -> int:
    import numpy as np

    from dpviz.audit.auditor import format_result
    from dpviz.audit.targets import check_audit, run
    from dpviz.core.accounting import probability
    from dpviz.core.modes import check_seed, fresh_seed
    from dpviz.core.trials import simulation_epsilon

    seed = fresh_seed() if args.seed is None else check_seed(args.seed)
    if isinstance(args.trials, bool) or args.trials < 1:
        from dpviz.errors import InputError

        raise InputError(f"--trials: expected a positive integer, got {args.trials}")
    probability("--alpha", args.alpha)
    simulation_epsilon("--epsilon", args.epsilon)
    if getattr(args, "delta", None) is not None:
        probability("--delta", args.delta)
    target = _target(args)
    check_audit(target, args.trials, max_seconds=args.max_seconds)  # memory, then a few timed releases
    print(target.title)
    print(f"seed: {seed} (simulation; rerun with --seed {seed} to reproduce)")
    result = run(target, trials=args.trials, rng=np.random.default_rng(seed), alpha=args.alpha,
                 progress=None if args.quiet else _Progress())
    print(format_result(result))
    return 0
