"""``python -m dpviz plan tree|stream|marginals|graph|split``: accuracy first — the smallest budget that
meets a target error, and the best split of one total budget over several releases.

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
import json
import math
import sys
from pathlib import Path
from typing import Any

from dpviz.core.limits import DEFAULT_MAX_SECONDS, max_seconds_arg
from dpviz.core.registry import tool

__all__ = ["register", "MAX_RELEASES_BYTES"]

NOISE_CHOICES = ("laplace", "gaussian", "both")
MAX_RELEASES_BYTES = 1_000_000
"""The largest releases JSON ``plan split`` reads (1 MB: a list of a few releases is a few hundred bytes)."""


def register(groups: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the ``plan`` parser and its verbs to ``groups``."""
    plan = groups.add_parser("plan", help=tool("plan").cli_help,
                             description=__doc__.splitlines()[0],
                             epilog="Plans use only public structure (tree shape, horizon, domain, workload) and the "
                                    "noise, never the counts, except graph plans, which simulate releases.")
    subs = plan.add_subparsers(dest="plan_command", required=True, parser_class=type(plan))

    t = subs.add_parser("tree", help="smallest ε per tree strategy for a target RMSE per node or range query")
    t.add_argument("data", metavar="DATA", help="tree file or sample:county (only its shape is used)")
    _target(t)
    t.add_argument("--query", choices=("node", "range"), default="node",
                   help="node: RMSE per node (Eq. 40); range: RMSE per leaf-range query (Eq. 41)")
    t.add_argument("--split", choices=("uniform", "geometric", "all"), default="all",
                   help="budget split over the depth levels (default: both)")
    _noise(t)

    s = subs.add_parser("stream", help="smallest ε per mechanism for a target per-step RMSE over a horizon")
    from dpviz.stream.cli import _horizon_arg

    _horizon_arg(s, required=True)  # --horizon N and --max-steps, as the stream commands take them
    _target(s)
    s.add_argument("--metric", choices=("max", "mean"), default="max",
                   help="max: the worst step's RMSE; mean: the RMSE over the horizon (default: max)")
    _noise(s)

    m = subs.add_parser("marginals", help="smallest (ε, δ) or ρ for a target per-cell RMSE of a workload "
                                          "(ResidualPlanner)")
    m.add_argument("data", metavar="DATA", help="CSV or sample:adult / sample:titanic (only its domain is used)")
    _target(m)
    m.add_argument("--workload", default="2", help="K (all K-way marginals) or a JSON/CSV workload file (default 2)")
    m.add_argument("--delta", type=float, help="δ: plan ε at this δ (default: plan ρ)")

    g = subs.add_parser("graph", help="smallest ε per edge-DP method for a target graph metric (Monte-Carlo)")
    g.add_argument("data", metavar="DATA", help="edge list or sample:NAME (karate, netscience, ...)")
    g.add_argument("--metric", default="degree_kl", help="graph metric (default degree_kl; see dpviz.graph.metrics)")
    g.add_argument("--target", type=float, required=True, help="target value of the metric (finite)")
    g.add_argument("--method", default="all", help="edge-DP method, comma list, or all (default)")
    g.add_argument("--trials", type=int, default=4, help="simulated releases per ε tried (default 4, at most 1000)")
    g.add_argument("--lo", type=float, default=0.05, help="smallest ε tried (default 0.05; at least 1e-6)")
    g.add_argument("--hi", type=float, default=20.0, help="largest ε tried (default 20; at most 1e6)")
    g.add_argument("--steps", type=int, default=7, help="bisection steps (default 7; at most MAX_BISECTION_STEPS = 50 of dpviz.planner.montecarlo)")
    g.add_argument("--seed", type=int, help="simulation seed (default: fresh, printed)")
    _max_seconds(g, "a plan")
    _output(g)

    sp = subs.add_parser("split", help="split one total budget over several releases (minimum weighted error)")
    sp.add_argument("releases", metavar="RELEASES.json", help="JSON list of {name, capability, params, weight}")
    sp.add_argument("--total", type=float, help="total ε (pure, or with --delta)")
    sp.add_argument("--delta", type=float, help="total δ with --total")
    sp.add_argument("--rho", type=float, help="total ρ (zCDP) instead of --total")
    sp.add_argument("--seed", type=int, help="seed of the Monte-Carlo curves of graph releases (default: fresh)")
    _max_seconds(sp, "the Monte-Carlo curves of graph releases")
    _output(sp)

    for p, func in ((t, cmd_tree), (s, cmd_stream), (m, cmd_marginals), (g, cmd_graph), (sp, cmd_split)):
        p.set_defaults(func=func)
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
def cmd_tree(args: argparse.Namespace) -> int:
    from dpviz.planner.analytic import tree_curves
    from dpviz.planner.curves import plan_target
    from dpviz.planner.specs import load_data

    inputs = [_input_path(args.data)]
    _check_output(args, inputs)
    fams = _families(args)
    _check_target(args)
    data = load_data("tree", args.data)
    curves = tree_curves(data.tree, query=args.query, families=fams,
                         splits=None if args.split == "all" else [args.split])
    plans = plan_target(curves, args.target_rmse, args.delta)
    t = data.tree
    _print_plans(plans, f"plan: tree {args.data} (n = {t.n:,} nodes, m = {t.m:,} leaves, h = {t.h}); "
                        f"{plans[0].metric} ≤ {args.target_rmse:g}")
    _write_json(args, _plans_json("tree", {"data": args.data, "query": args.query, "target_rmse": args.target_rmse,
                                           "structure": {"n": t.n, "m": t.m, "h": t.h}}, plans), inputs)
    return 0


def cmd_stream(args: argparse.Namespace) -> int:
    from dpviz.planner.analytic import stream_curves
    from dpviz.planner.curves import plan_target

    from dpviz.stream.cli import STEP_BYTES
    from dpviz.stream.fenwick import check_steps

    _check_output(args, [])
    fams = _families(args)
    _check_target(args)
    check_steps(args.horizon, args.max_steps, per_step=STEP_BYTES["variance"])  # memory estimate and cap
    curves = stream_curves(args.horizon, metric=args.metric, families=fams)
    plans = plan_target(curves, args.target_rmse, args.delta)
    _print_plans(plans, f"plan: stream, horizon N = {args.horizon:,}; {plans[0].metric} ≤ {args.target_rmse:g}")
    _write_json(args, _plans_json("stream", {"horizon": args.horizon, "metric": args.metric,
                                             "target_rmse": args.target_rmse}, plans), [])
    return 0


def cmd_marginals(args: argparse.Namespace) -> int:
    from dpviz.planner.analytic import marginals_curves
    from dpviz.planner.curves import plan_target
    from dpviz.planner.specs import _workload, load_data

    inputs = [_input_path(args.data)]
    wl_path = args.workload if Path(args.workload).is_file() else None
    inputs.append(wl_path)
    _check_output(args, inputs)
    _check_target(args)
    data = load_data("marginals", args.data)
    wl = _workload(data.domain, Path(wl_path) if wl_path else args.workload)
    plans = plan_target(marginals_curves(data.domain, wl), args.target_rmse, args.delta)
    _print_plans(plans, f"plan: marginals {args.data}, {len(wl)} workload marginals; "
                        f"{plans[0].metric} ≤ {args.target_rmse:g}")
    _write_json(args, _plans_json("marginals", {"data": args.data, "workload": [list(data.domain.names(g)) for g in wl],
                                                "target_rmse": args.target_rmse}, plans), inputs)
    return 0


def _methods(spec: str) -> list[str]:
    from dpviz.errors import InputError
    from dpviz.graph.release import PRIVATE_METHODS

    names = list(PRIVATE_METHODS) if spec.strip() == "all" else [m.strip() for m in spec.split(",") if m.strip()]
    bad = [m for m in names if m not in PRIVATE_METHODS]
    if bad or not names:
        raise InputError(f"--method: expected all or edge-DP methods among {', '.join(PRIVATE_METHODS)}, "
                         f"got {', '.join(bad) or 'none'}")
    return names


def _seed(args: argparse.Namespace) -> int:
    from dpviz.core.modes import check_seed, fresh_seed

    return fresh_seed() if args.seed is None else check_seed(args.seed)


def cmd_graph(args: argparse.Namespace) -> int:
    from dpviz.core.modes import SIMULATION_NOTICE
    from dpviz.planner.montecarlo import graph_plan
    from dpviz.planner.specs import load_data

    from dpviz.planner.montecarlo import check_graph_plan

    inputs = [_input_path(args.data)]
    _check_output(args, inputs)
    methods = _methods(args.method)
    seed = _seed(args)
    check_graph_plan(args.metric, args.target, trials=args.trials, lo=args.lo, hi=args.hi, steps=args.steps)
    graph = load_data("graph", args.data)
    plans = graph_plan(graph, args.metric, args.target, methods, seed=seed, trials=args.trials, lo=args.lo,
                       hi=args.hi, steps=args.steps, max_seconds=args.max_seconds)
    word = "≤" if plans[0].lower_is_better else "≥"
    print(f"plan: graph {args.data} ({graph.n_nodes:,} nodes); {args.metric} {word} {args.target:g} — Monte-Carlo "
          f"({SIMULATION_NOTICE}), seed {seed}")
    for p in plans:
        print(f"  {p.method:<10} ε = {_fmt(p.epsilon):>8}  {p.note}")
    _write_json(args, {"plan": "graph", "mode": "Monte-Carlo simulation", "data": args.data, "metric": args.metric,
                       "target": args.target, "seed": seed, "plans": [p.as_dict() for p in plans]}, inputs)
    return 0


def cmd_split(args: argparse.Namespace) -> int:
    from dpviz.core.budget import Budget
    from dpviz.errors import InputError
    from dpviz.planner.specs import releases_from_json
    from dpviz.planner.split import split_budget

    if (args.total is None) == (args.rho is None):
        raise InputError("split: give the total as --total E (with --delta D for (ε, δ)) or as --rho R")
    if args.rho is not None and args.delta is not None:
        raise InputError("--delta: goes with --total, not with --rho")
    from dpviz.sweep.spec import simulation_epsilon, simulation_rho

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
    if any(r.curve.capability == "graph" for r in releases):
        print(f"graph curves: Monte-Carlo, seed {seed}", file=sys.stderr)
    _write_json(args, {"plan": "split", "seed": seed, **res.as_dict()}, [args.releases])
    return 0
