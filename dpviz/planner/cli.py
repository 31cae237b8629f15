"""``python -m dpviz plan CAPABILITY|split``: accuracy first — the smallest budget that meets a target error,
and the best split of one total budget over several releases.

One verb per registered capability, from its hooks module: ``PLAN_HELP`` (the verb's help line),
``plan_args(parser, common)`` (its flags) and ``plan_command(args, common) -> int`` (the command), where
``common`` is :data:`COMMON` — the planner's shared flags, checks and printers (:class:`PlanCommon`), so that a
capability's command prints plans the way every other does without importing the planner. Today:

* ``tree DATA --target-rmse R [--query node|range]``, ``stream --horizon N --target-rmse R
  [--metric max|mean]`` (no data), ``marginals DATA --target-rmse R [--workload K]``: analytic (the
  capability's own variances; only the structure of the data is used), every mechanism/strategy, best
  first. ``--noise gaussian`` plans ρ, or (ε, δ) with ``--delta``; ``--noise both`` compares the families.
* ``graph DATA --metric M --target T``: Monte-Carlo bisection over ε (seeded simulations of the graph).
* ``split --total E [--delta D] RELEASES.json`` (or ``--rho R``): the split minimising the weighted total
  error, and the error each release gets. RELEASES.json is a list of {name, capability, params, weight}.

``--output OUT.json`` also writes the answer as JSON (atomically, never over an input). This module
imports nothing heavy at import time (the parser is built for every ``python -m dpviz`` call).
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dpviz.core.limits import DEFAULT_MAX_SECONDS, max_seconds_arg
from dpviz.core.registry import tool

__all__ = ["COMMON", "MAX_RELEASES_BYTES", "PlanCommon", "register"]

NOISE_CHOICES = ("laplace", "gaussian", "both")
MAX_RELEASES_BYTES = 1_000_000
"""The largest releases JSON ``plan split`` reads (1 MB: a list of a few releases is a few hundred bytes)."""


def register(groups: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the ``plan`` parser and its verbs to ``groups``."""
    from dpviz.core.registry import CAPABILITIES, capability

    plan = groups.add_parser("plan", help=tool("plan").cli_help,
                             description=f"``python -m dpviz plan {'|'.join(c.name for c in CAPABILITIES)}|split``: "
                                         "accuracy first — the smallest budget that meets a target error, and the "
                                         "best split of one total budget over several releases.",
                             epilog="Plans use only public structure (tree shape, horizon, domain, workload) and the "
                                    "noise, never the counts, except graph plans, which simulate releases.")
    subs = plan.add_subparsers(dest="plan_command", required=True, parser_class=type(plan))
    for cap in CAPABILITIES:
        module = sys.modules[capability(cap.name).hook("plan_curves").__module__]
        if not hasattr(module, "plan_command"):
            continue
        p = subs.add_parser(cap.name, help=getattr(module, "PLAN_HELP", cap.title))
        module.plan_args(p, COMMON)
        p.set_defaults(func=functools.partial(module.plan_command, common=COMMON))

    sp = subs.add_parser("split", help="split one total budget over several releases (minimum weighted error)")
    sp.add_argument("releases", metavar="RELEASES.json", help="JSON list of {name, capability, params, weight}")
    sp.add_argument("--total", type=float, help="total ε (pure, or with --delta)")
    sp.add_argument("--delta", type=float, help="total δ with --total")
    sp.add_argument("--rho", type=float, help="total ρ (zCDP) instead of --total")
    sp.add_argument("--seed", type=int, help="seed of the Monte-Carlo curves of graph releases (default: fresh)")
    _max_seconds(sp, "the Monte-Carlo curves of graph releases")
    _output(sp)

    sp.set_defaults(func=cmd_split)
    return plan


def _max_seconds(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument("--max-seconds", type=max_seconds_arg, default=DEFAULT_MAX_SECONDS, metavar="S",
                   help=f"refuse {what} estimated (from a timed release) to take longer (default {DEFAULT_MAX_SECONDS:g} s)")


def _target(p: argparse.ArgumentParser) -> None:
    p.add_argument("--target-rmse", type=float, required=True, help="the largest RMSE you accept")
    _output(p)


def _noise(p: argparse.ArgumentParser) -> None:
    p.add_argument("--noise", choices=NOISE_CHOICES, default="laplace",
                   help="laplace (pure ε), gaussian (ρ, or (ε, δ) with --delta), both (needs --delta)")
    p.add_argument("--delta", type=float, help="δ for Gaussian noise: plan ε at this δ (default: plan ρ)")


def _output(p: argparse.ArgumentParser) -> None:
    p.add_argument("--output", type=Path, help="also write the answer as JSON (atomic, never over an input)")


# ---- helpers ---------------------------------------------------------------------------------------------
def _input_path(spec: str) -> str | None:
    from dpviz.core.registry import SAMPLE_PREFIX

    return None if str(spec).startswith(SAMPLE_PREFIX) else spec


def _check_output(args: argparse.Namespace, inputs: list[str | None]) -> None:
    from dpviz.core.tables import check_destination

    if args.output is not None:
        check_destination(args.output, inputs)


def _write_json(args: argparse.Namespace, obj: dict[str, Any], inputs: list[str | None]) -> None:
    from dpviz.core.tables import write_text

    if args.output is not None:
        write_text(json.dumps(obj, indent=2, default=_json_default) + "\n", args.output, inputs=inputs)
        print(f"wrote {args.output}")


def _json_default(obj: Any) -> Any:
    return obj.item() if hasattr(obj, "item") else str(obj)


def _fmt(x: float | None, digits: int = 4) -> str:
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}g}"


def _check_target(args: argparse.Namespace) -> None:
    """--target-rmse a positive finite number and --delta a probability, before any data is read (the planned
    budget's range is checked by :func:`dpviz.planner.curves.plan_target`)."""
    from dpviz.core.accounting import positive, probability

    positive("--target-rmse", args.target_rmse)
    if getattr(args, "delta", None) is not None:
        probability("--delta", args.delta)


def _families(args: argparse.Namespace) -> tuple[str, ...]:
    from dpviz.errors import InputError

    if args.noise == "both" and args.delta is None:
        raise InputError("--noise both: comparing Laplace and Gaussian needs --delta (ε is the common currency)")
    if args.noise == "laplace" and args.delta is not None:
        raise InputError("--delta: only for Gaussian noise (--noise gaussian or both)")
    return ("laplace", "gaussian") if args.noise == "both" else (args.noise,)


def _print_plans(plans: list, title: str) -> None:
    print(title)
    gaussian = any(p.family == "gaussian" for p in plans)
    w = max(len(p.mechanism) for p in plans) + 2
    head = f"  {'mechanism':<{w}} {'ε':>10}"
    if gaussian:
        head += f" {'δ':>8} {'ρ':>10} {'release ε':>10}"
    print(head + "  label")
    for p in plans:
        line = f"  {p.mechanism:<{w}} {_fmt(p.epsilon):>10}"
        if gaussian:
            line += f" {_fmt(p.delta, 2):>8} {_fmt(p.rho):>10} {_fmt(p.release_epsilon):>10}"
        print(line + f"  {p.label}")
    best = plans[0]
    print(f"best: {best.mechanism} needs {best.budget.describe} for {best.metric} ≤ {best.target:g}")
    from dpviz.core.noise import MAX_RELEASE_EPSILON

    need = best.release_epsilon if best.release_epsilon is not None else best.epsilon
    if need is not None and need > MAX_RELEASE_EPSILON:
        print(f"note: ε = {need:g} is above the release bound ε ≤ {MAX_RELEASE_EPSILON:g} (the noise would nearly "
              "vanish): a release at this budget is refused; accept a larger error or aggregate further")


def _plans_json(kind: str, settings: dict, plans: list) -> dict:
    return {"plan": kind, "mode": "analytic (structure and noise only; no counts)", **settings,
            "best": plans[0].as_dict(), "plans": [p.as_dict() for p in plans]}


# ---- commands ----------------------------------------------------------------------------------------------
def _seed(args: argparse.Namespace) -> int:
    from dpviz.core.modes import check_seed, fresh_seed

    return fresh_seed() if args.seed is None else check_seed(args.seed)


def cmd_split(args: argparse.Namespace) -> int:
    from dpviz.core.budget import Budget
    from dpviz.errors import InputError
    from dpviz.planner.specs import releases_from_json
    from dpviz.planner.split import split_budget

    if (args.total is None) == (args.rho is None):
        raise InputError("split: give the total as --total E (with --delta D for (ε, δ)) or as --rho R")
    if args.rho is not None and args.delta is not None:
        raise InputError("--delta: goes with --total, not with --rho")
    from dpviz.core.trials import simulation_epsilon, simulation_rho

    if args.rho is not None:
        total = Budget.zcdp(simulation_rho("--rho", args.rho))
    else:
        total = Budget(epsilon=simulation_epsilon("--total", args.total), delta=args.delta)
    path = Path(args.releases)
    _check_output(args, [args.releases])
    if not path.is_file():
        raise InputError(f"releases file {args.releases!r} does not exist (or is not a regular file)")
    size = path.stat().st_size
    if size > MAX_RELEASES_BYTES:
        raise InputError(f"releases file {args.releases!r} is {size:,} bytes, above the limit of "
                         f"{MAX_RELEASES_BYTES:,} (MAX_RELEASES_BYTES); a releases list is a few hundred bytes")
    seed = _seed(args)
    with path.open("rb") as fh:
        raw = fh.read(MAX_RELEASES_BYTES + 1)
    releases = releases_from_json(raw, seed=seed, max_seconds=args.max_seconds)
    res = split_budget(releases, total)
    print(f"split: {total.describe} over {len(releases)} releases — {res.composition}, {res.method}")
    print(f"  {'release':<16} {'weight':>6} {'share':>7} {'ε':>9} {'ρ':>9} {'error':>10}  metric (mechanism)")
    for a in res.allocations:
        print(f"  {a.name:<16} {a.weight:>6g} {a.share:>7.1%} {_fmt(a.epsilon):>9} {_fmt(a.rho):>9} "
              f"{_fmt(a.error):>10}  {a.metric} ({a.capability} {a.mechanism})")
    print(f"weighted total error Σ w_i·MSE_i = {res.objective:.6g}")
    from dpviz.core.curves import MonteCarloCurve

    mc = list(dict.fromkeys(r.curve.capability for r in releases if isinstance(r.curve, MonteCarloCurve)))
    if mc:
        print(f"{', '.join(mc)} curves: Monte-Carlo, seed {seed}", file=sys.stderr)
    _write_json(args, {"plan": "split", "seed": seed, **res.as_dict()}, [args.releases])
    return 0


@dataclass(frozen=True)
class PlanCommon:
    """What the planner lends a capability's ``plan_args``/``plan_command`` (its hooks module): the shared
    flags (``target``: --target-rmse and --output; ``noise``: --noise and --delta; ``output``; ``max_seconds``),
    checks (``input_path``, ``check_output``, ``families``, ``check_target``, ``seed``) and printers
    (``plan_target``, ``print_plans``, ``plans_json``, ``write_json``, ``fmt``)."""

    target: Callable[[argparse.ArgumentParser], None]
    noise: Callable[[argparse.ArgumentParser], None]
    output: Callable[[argparse.ArgumentParser], None]
    max_seconds: Callable[[argparse.ArgumentParser, str], None]
    input_path: Callable[[str], str | None]
    check_output: Callable[[argparse.Namespace, list], None]
    families: Callable[[argparse.Namespace], tuple[str, ...]]
    check_target: Callable[[argparse.Namespace], None]
    seed: Callable[[argparse.Namespace], int]
    plan_target: Callable[..., list]
    print_plans: Callable[[list, str], None]
    plans_json: Callable[[str, dict, list], dict]
    write_json: Callable[[argparse.Namespace, dict, list], None]
    fmt: Callable[..., str]


def _plan_target(curves: list, target_rmse: float, delta: float | None = None) -> list:
    from dpviz.planner.curves import plan_target

    return plan_target(curves, target_rmse, delta)


COMMON = PlanCommon(target=_target, noise=_noise, output=_output, max_seconds=_max_seconds, input_path=_input_path,
                    check_output=_check_output, families=_families, check_target=_check_target, seed=_seed,
                    plan_target=_plan_target, print_plans=_print_plans, plans_json=_plans_json,
                    write_json=_write_json, fmt=_fmt)
"""The planner's shared flags, checks and printers, as every capability's plan command gets them."""
