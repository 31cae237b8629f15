"""``python -m dpviz graph simulate|release``: edge-private graph release from the command line.

* ``simulate`` — seeded simulation: one or every method on the same graph, each with its own
  reproducible noise stream derived from ``--seed``; prints every sub-budget and the metrics of
  :func:`dpviz.graph.metrics.evaluate` against the true graph: **not a private release**. Every line
  about ``drf`` (the algorithm as published) says it is not edge-DP.
* ``release`` — one edge-DP method (default ``drf-dp``; ``drf`` is refused), noise from the OS CSPRNG
  (no ``--seed``), the released edge list written atomically in the input's vertex labels with a
  ``.meta.json``; optional ``--partitions`` (the decomposition, JSON) and ``--report`` (budget and public
  facts, JSON). stdout shows only public facts: the budget, the vertex count (the vertex set is public
  under edge-DP) and the number of released edges.

EDGES is an edge-list file (CSV/TSV/whitespace, header optional, any vertex ids; see
:func:`dpviz.graph.io.read_edges`) or a bundled graph ``sample:NAME``. Bad input exits with code 2
and one line on stderr.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

from dpviz import ledger
from dpviz.core import cliargs
from dpviz.core.modes import RELEASE_NOTICE, SIMULATION_NOTICE
from dpviz.core.registry import SAMPLE_PREFIX, capability, load_source, source_stem
from dpviz.errors import InputError

CAP = "graph"
ALL = "all"
SPLIT_METHODS = ("drf", "drf-dp")
"""Methods that take ``--budget-split`` (ε_D^d : ε_D^c : ε_R), passed on as ``split=(a, b, c)``."""


def _methods() -> dict[str, str]:
    from dpviz.graph.release import METHODS

    return METHODS


def register(groups: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the ``graph`` command group (``simulate``, ``release``) to the top-level sub-parsers."""
    from dpviz.graph.release import DEFAULT_METHOD, METHODS, NOT_PRIVATE_LABEL

    cap = capability(CAP)
    samples = ",".join(s.name for s in cap.samples)
    g = groups.add_parser(CAP, help=cap.cli_help,
                          description=__doc__.splitlines()[0], epilog=f"Unit of privacy: {cap.unit_of_privacy}.")
    sub = g.add_subparsers(dest="graph_command", required=True, parser_class=type(g))

    s = sub.add_parser("simulate", help=f"{SIMULATION_NOTICE}: seeded noise, methods compared against the truth",
                       description="Run one or every method on the same graph with seeded noise and print each "
                                   "method's budget and its metrics against the true graph. Not a private "
                                   f"release. Method drf is the published DRF: {NOT_PRIVATE_LABEL}.")
    s.add_argument("edges", metavar="EDGES", help=f"edge list (CSV/TSV/whitespace) or sample:{{{samples}}}")
    s.add_argument("--epsilon", type=float, required=True,
                   help="ε of the edge-DP guarantee (total, all steps); " + cliargs.EPSILON_BOUND_HELP)
    s.add_argument("--method", required=True, choices=[*METHODS, ALL],
                   help=f"method, or all (drf is the algorithm as published: {NOT_PRIVATE_LABEL})")
    cliargs.add_simulate_args(s)
    _common_args(s)
    s.set_defaults(func=cmd_simulate)

    r = sub.add_parser("release", help="private release: one edge-DP method, OS CSPRNG noise, no truth",
                       description="Privately release the graph with one edge-DP method: noise from the OS "
                                   "CSPRNG, fresh every run, no seed. Writes OUTPUT (the released edge list in "
                                   "the input's vertex labels) and OUTPUT.meta.json.")
    r.add_argument("edges", metavar="EDGES", help=f"edge list (CSV/TSV/whitespace) or sample:{{{samples}}}")
    r.add_argument("--epsilon", type=float, required=True,
                   help="ε of the edge-DP guarantee (total, all steps); " + cliargs.EPSILON_BOUND_HELP)
    r.add_argument("--method", default=DEFAULT_METHOD, choices=list(METHODS),
                   help=f"edge-DP method (default {DEFAULT_METHOD}); drf is refused ({NOT_PRIVATE_LABEL})")
    cliargs.add_release_args(r)
    r.add_argument("--partitions", type=Path, help="also write the decomposition (regions, depths, noisy counts, "
                                                   "vertex order) as JSON")
    r.add_argument("--report", type=Path, help="also write a JSON report: budget, method, ε, n_nodes, "
                                               "n_edges_released, mode")
    _common_args(r)
    r.set_defaults(func=cmd_release)
    return g


def _common_args(p: argparse.ArgumentParser) -> None:
    from dpviz.graph import io as gio

    p.add_argument("--budget-split", metavar="A:B:C", default=None,
                   help="drf/drf-dp: ε_D^d : ε_D^c : ε_R = split points : counts : (drf-dp) relabelling from "
                        "noisy degrees / (drf) the reconstruction EM (default 3:7:3, the paper's)")
    p.add_argument("--n-nodes", type=int, default=None,
                   help="vertex count: ids must then be integers 0..N-1, used as they are (isolated vertices "
                        "allowed); default: the distinct ids in the file")
    p.add_argument("--header", choices=("auto", "yes", "no"), default="auto",
                   help="whether the first line names the columns (default: detect)")
    p.add_argument("--max-edges", type=int, default=gio.MAX_EDGES, help=f"edge cap (default {gio.MAX_EDGES:,})")
    p.add_argument("--max-bytes", type=int, default=gio.MAX_BYTES, help=f"file size cap (default {gio.MAX_BYTES:,})")
    p.add_argument("--max-nodes", type=int, default=gio.MAX_NODES, help=f"vertex cap (default {gio.MAX_NODES:,})")


# ----------------------------------------------------------------------------------------------- helpers


def parse_split(text: str | None) -> tuple[float, float, float] | None:
    """``"3:7:3"`` -> (3.0, 7.0, 3.0): three positive finite weights (they are normalised by the method)."""
    if text is None:
        return None
    parts = str(text).split(":")
    try:
        values = tuple(float(p) for p in parts)
    except ValueError:
        values = ()
    if len(values) != 3 or not all(math.isfinite(x) and x > 0 for x in values):
        raise InputError(f"--budget-split: expected three positive numbers A:B:C (ε_D^d : ε_D^c : ε_R), e.g. "
                         f"3:7:3, got {text!r}")
    return values  # type: ignore[return-value]


def _options(method: str, split: tuple[float, float, float] | None) -> dict:
    return {"split": split} if split is not None and method in SPLIT_METHODS else {}


def _input_path(spec: str) -> Path | None:
    return None if str(spec).startswith(SAMPLE_PREFIX) else Path(spec)


def _load(args: argparse.Namespace):
    """The Graph named by EDGES (a bundled sample, or a file read by dpviz.graph.io.read_edges)."""
    from dpviz.graph.io import read_edges

    header = {"auto": None, "yes": True, "no": False}[args.header]
    graph = load_source(CAP, args.edges, lambda path: read_edges(
        path, n_nodes=args.n_nodes, header=header, max_bytes=args.max_bytes, max_edges=args.max_edges,
        max_nodes=args.max_nodes))
    if str(args.edges).startswith(SAMPLE_PREFIX) and args.n_nodes is not None and args.n_nodes != graph.n_nodes:
        raise InputError(f"--n-nodes: {args.edges} has {graph.n_nodes:,} vertices; leave --n-nodes out for samples")
    return graph


def _label(method: str) -> str:
    from dpviz.graph.release import NOT_PRIVATE_LABEL, PRIVATE_METHODS

    return "edge-DP" if method in PRIVATE_METHODS else NOT_PRIVATE_LABEL


def _budget_lines(budget, epsilon: float, suffix: str = "") -> list[str]:
    total = sum(float(v) for v in budget.values())
    width = max((len(str(k)) for k in budget), default=0)
    lines = [f"    {str(k):<{width}}  ε = {float(v):.6g}{suffix}" for k, v in budget.items()]
    lines.append(f"    {'total':<{width}}  ε = {total:.10g} (requested {epsilon:g}; sequential composition)"
                 + suffix)
    return lines


# ----------------------------------------------------------------------------------------------- verbs


def _epsilon(args: argparse.Namespace, *, release: bool) -> float:
    """``--epsilon``: positive and finite; a release refuses it above the bound, a simulation warns."""
    from dpviz.core.accounting import positive
    from dpviz.core.noise import Noise

    epsilon = positive("--epsilon", args.epsilon)
    cliargs.checked_noise(args, Noise.laplace(epsilon, discrete=release), release=release)
    return epsilon


def cmd_simulate(args: argparse.Namespace) -> int:
    print(SIMULATION_NOTICE)
    epsilon = _epsilon(args, release=False)
    split = parse_split(args.budget_split)
    seed = cliargs.seed_from_args(args)
    graph = _load(args)

    import pandas as pd

    from dpviz.graph import metrics
    from dpviz.graph.release import NOT_PRIVATE_LABEL, method_rng, metrics_rng, release

    methods = list(_methods()) if args.method == ALL else [args.method]
    if split is not None and not set(methods) & set(SPLIT_METHODS):
        raise InputError(f"--budget-split: applies to {' and '.join(SPLIT_METHODS)} only, not {args.method}")
    print(f"graph: {graph.name}: {graph.n_nodes:,} vertices, {graph.n_edges:,} edges (simple, undirected)")
    for notice in graph.notices:
        print(f"  note: {notice}")
    print(f"seed {seed} (seeded noise: not private; retype --seed {seed} to reproduce); ε = {epsilon:g}"
          + (f"; budget split ε_D^d:ε_D^c:ε_R = {':'.join(f'{x:g}' for x in split)} (drf, drf-dp)" if split else ""))
    communities = metrics.true_communities(graph.edges, graph.n_nodes)
    rows = []
    for method in methods:
        t0 = time.perf_counter()
        rel = release(graph.edges, graph.n_nodes, epsilon, method=method, rng=method_rng(seed, method),
                      **_options(method, split))
        seconds = time.perf_counter() - t0
        suffix = f"  [{NOT_PRIVATE_LABEL}]" if not rel.private else ""
        print(f"{method} ({_label(method)}): {rel.edges.shape[0]:,} edges released in {seconds:.3g} s; budget:")
        print("\n".join(_budget_lines(rel.budget, epsilon, suffix)))
        values = metrics.evaluate(graph.edges, rel.edges, graph.n_nodes, metrics_rng(seed), communities=communities)
        rows.append({"method": method if rel.private else f"{method} ({NOT_PRIVATE_LABEL})", **values})
    table = pd.DataFrame(rows)
    print("metrics (simulation: released vs true graph):")
    print(table.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    for key, (label, direction, definition) in metrics.METRIC_INFO.items():
        print(f"  {key}: {label} ({direction}) — {definition}")
    return 0


def cmd_release(args: argparse.Namespace) -> int:
    from dpviz.core.tables import check_destination

    cliargs.refuse_seed(args, CAP)
    from dpviz.graph.release import NOT_PRIVATE_LABEL, PRIVATE_METHODS

    if args.method not in PRIVATE_METHODS:
        raise InputError(f"--method {args.method}: the published DRF ({NOT_PRIVATE_LABEL}) is refused in release "
                         "mode; use --method drf-dp (the default), or `graph simulate` to compare")
    epsilon = _epsilon(args, release=True)
    split = parse_split(args.budget_split)
    if split is not None and args.method not in SPLIT_METHODS:
        raise InputError(f"--budget-split: applies to {' and '.join(SPLIT_METHODS)} only, not {args.method}")
    src = _input_path(args.edges)
    outputs = [Path(p) for p in (args.output, args.partitions, args.report) if p is not None]
    resolved = [p.resolve() for p in outputs]
    if len(set(resolved)) != len(resolved):
        raise InputError("--output, --partitions and --report must be three different files")
    from dpviz.core.tables import meta_path

    if meta_path(args.output).resolve() in resolved[1:]:
        raise InputError(f"--partitions/--report: {meta_path(args.output)} is where the release's metadata goes")
    for p in outputs:
        check_destination(p, [src])  # before any work: an existing folder, never the input
    graph = _load(args)

    from dpviz.core.modes import release_metadata
    from dpviz.core.noise import Noise
    from dpviz.core.tables import write_release, write_text
    from dpviz.graph.io import edges_frame
    from dpviz.graph.release import partition_json, release

    rel = release(graph.edges, graph.n_nodes, epsilon, method=args.method, rng=None, **_options(args.method, split))
    if args.partitions is not None and rel.partition is None:
        raise InputError(f"--partitions: method {args.method} has no partition (nothing was written); leave "
                         "--partitions out or use drf-dp, kdh or quadtree")
    budget = {str(k): float(v) for k, v in rel.budget.items()}
    meta = release_metadata(
        CAP, Noise.laplace(epsilon, discrete=True), seeded=False, sensitivity=1.0,
        method=args.method, budget=budget,
        budget_note="every sub-budget is spent by one mechanism on the edge set (discrete Laplace on integer "
                    "counts of sensitivity 1 on the upper triangle, or the exponential mechanism); the "
                    "sub-budgets compose sequentially to ε: pure ε-edge-DP",
        options={"split": list(split)} if split is not None and args.method in SPLIT_METHODS else {},
        n_nodes=int(graph.n_nodes), vertex_set="public (edge-level DP protects edges, not vertices)",
        n_edges_released=int(rel.edges.shape[0]), source=source_stem(args.edges),
        columns={"u": "vertex label", "v": "vertex label"})
    # the ledger is charged first (exit 3 if over the dataset's budget), then the output is written
    with ledger.charge(args, CAP, args.edges, graph, Noise.laplace(epsilon, discrete=True), args.method):
        path = write_release(edges_frame(rel.edges, graph.labels), args.output, meta, inputs=[src])
    written = [str(path), meta_path(path).name]
    if args.partitions is not None:
        write_text(json.dumps(partition_json(rel, graph.labels)) + "\n", args.partitions, inputs=[src])
        written.append(str(args.partitions))
    if args.report is not None:
        report = {"budget": budget, "method": args.method, "epsilon": epsilon, "n_nodes": int(graph.n_nodes),
                  "n_edges_released": int(rel.edges.shape[0]), "mode": "release"}
        write_text(json.dumps(report, indent=1) + "\n", args.report, inputs=[src])
        written.append(str(args.report))
    print(RELEASE_NOTICE)
    print(f"method: {args.method} (edge-DP), ε = {epsilon:g}; vertex set treated as public: "
          f"{graph.n_nodes:,} vertices")
    print(f"budget ({len(budget)} sub-budget{'s' if len(budget) != 1 else ''}):")
    print("\n".join(_budget_lines(budget, epsilon)))
    print(f"released {rel.edges.shape[0]:,} edges")
    print("wrote " + ", ".join(written))
    sys.stdout.flush()
    return 0
