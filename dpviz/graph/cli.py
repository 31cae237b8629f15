"""``python -m dpviz graph simulate|release|describe-structure``: edge-private graph release from the command line.

* ``simulate`` — seeded simulation: one or every method on the same graph, each with its own
  reproducible noise stream derived from ``--seed``; prints every sub-budget and the metrics of
  :func:`dpviz.graph.metrics.evaluate` against the true graph: **not a private release**. Every line
  about ``drf`` (the algorithm as published) says it is not edge-DP. The vertex set may come from the
  data (the default) or a declaration (``--nodes`` / ``--n-nodes``, as a release takes it).
* ``release`` — one edge-DP method (default ``drf-dp``; ``drf`` is refused), noise from the OS CSPRNG
  (no ``--seed``), on the **declared** public vertex set: ``--nodes FILE`` (vertex ids, one per line),
  ``--n-nodes N`` (ids 0..N-1), a bundled sample's shipped declaration, or the explicit opt-out
  ``--structure-from-data`` (not private: every output then says so). Edges touching an undeclared vertex
  are dropped before the mechanism and their number is published nowhere. Writes the released edge list
  atomically in the declared vertex labels with a ``.meta.json``; optional ``--partitions`` (the
  decomposition, JSON) and ``--report`` (budget and public facts, JSON). stdout shows only public facts:
  the budget, the declared vertex count and the number of released edges.
* ``describe-structure`` — writes the vertex ids found in EDGES, one per line: a ``--nodes`` template,
  read from the data, for the curator to review.

EDGES is an edge-list file (CSV/TSV/whitespace, header optional, any vertex ids; see
:func:`dpviz.graph.io.read_edges`) or a bundled graph ``sample:NAME``. Bad input exits with code 2
and one line on stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from dpviz.core import charging as ledger
from dpviz.core import cliargs
from dpviz.core.modes import RELEASE_NOTICE, SIMULATION_NOTICE
from dpviz.core.noise import MIN_EPSILON as _MIN_EPSILON
from dpviz.core.registry import SAMPLE_PREFIX, capability, load_source, source_stem
from dpviz.core.structure import (DESCRIBE_NOTICE, STRUCTURE_FROM_DATA_FLAG, STRUCTURE_FROM_DATA_NOTICE,
                                  add_structure_from_data_arg, missing_declaration)
from dpviz.errors import InputError
from dpviz.graph.strategy import (DEFAULT_METHOD, METHODS, NOT_PRIVATE_LABEL, PRIVATE_METHODS, SPLIT_METHODS,
                                  method_options, parse_split)

CAP = "graph"
ALL = "all"
MIN_EPSILON = _MIN_EPSILON
"""The smallest ε ``graph simulate`` and ``graph release`` take: :data:`dpviz.core.noise.MIN_EPSILON`."""


def register(groups: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the ``graph`` command group (``simulate``, ``release``, ``describe-structure``) to the top-level
    sub-parsers."""
    cap = capability(CAP)
    samples = ",".join(s.name for s in cap.samples)
    g = groups.add_parser(CAP, help=cap.cli_help,
                          description=__doc__.splitlines()[0], epilog=f"Unit of privacy: {cap.unit_of_privacy}.")
    sub = g.add_subparsers(dest="graph_command", required=True, parser_class=type(g))
    edges_help = f"edge list (CSV/TSV/whitespace) or sample:{{{samples}}}"
    epsilon_help = (f"ε of the edge-DP guarantee (total, all steps), at least {MIN_EPSILON:g}; "
                    + cliargs.EPSILON_BOUND_HELP)

    s = sub.add_parser("simulate", help=f"{SIMULATION_NOTICE}: seeded noise, methods compared against the truth",
                       description="Run one or every method on the same graph with seeded noise and print each "
                                   "method's budget and its metrics against the true graph. Not a private "
                                   f"release. Method drf is the published DRF: {NOT_PRIVATE_LABEL}.")
    s.add_argument("edges", metavar="EDGES", help=edges_help)
    s.add_argument("--epsilon", type=float, required=True, help=epsilon_help)
    s.add_argument("--method", required=True, choices=[*METHODS, ALL],
                   help=f"method, or all (drf is the algorithm as published: {NOT_PRIVATE_LABEL})")
    cliargs.add_simulate_args(s)
    _split_arg(s)
    _declaration_args(s, default="default: the ids found in the edges (a simulation may read the structure "
                                 "from the data)")
    _read_args(s)
    s.set_defaults(func=cmd_simulate)

    r = sub.add_parser("release", help="private release: one edge-DP method, OS CSPRNG noise, no truth",
                       description="Privately release the graph with one edge-DP method on its declared public "
                                   "vertex set (--nodes or --n-nodes; bundled samples ship theirs): noise from the "
                                   "OS CSPRNG, fresh every run, no seed. Edges touching an undeclared vertex are "
                                   "dropped (how many is not published). Writes OUTPUT (the released edge list in "
                                   "the declared vertex labels) and OUTPUT.meta.json.")
    r.add_argument("edges", metavar="EDGES", help=edges_help)
    r.add_argument("--epsilon", type=float, required=True, help=epsilon_help)
    r.add_argument("--method", default=DEFAULT_METHOD, choices=list(METHODS),
                   help=f"edge-DP method (default {DEFAULT_METHOD}); drf is refused ({NOT_PRIVATE_LABEL})")
    cliargs.add_release_args(r)
    r.add_argument("--partitions", type=Path, help="also write the decomposition (regions, depths, noisy counts, "
                                                   "vertex order) as JSON")
    r.add_argument("--report", type=Path, help="also write a JSON report: budget, method, ε, n_nodes, "
                                               "n_edges_released, structure, mode")
    _split_arg(r)
    _declaration_args(r, default="required unless EDGES is a bundled sample (which ships its declaration) or "
                                 f"{STRUCTURE_FROM_DATA_FLAG} is given")
    add_structure_from_data_arg(r, "the vertex set")
    _read_args(r)
    r.set_defaults(func=cmd_release)

    d = sub.add_parser("describe-structure", help="write the vertex ids found in EDGES: a --nodes template "
                                                  "(read from the data: review it)",
                       description="Write the vertex ids found in EDGES, one per line, to OUTPUT (atomically): a "
                                   "template for `graph release --nodes OUTPUT`. It is read from the data: "
                                   "review it (add every public vertex, remove any that is not public).")
    d.add_argument("edges", metavar="EDGES", help=edges_help)
    d.add_argument("--output", type=Path, required=True, help="the vertex-id file to write (never the input)")
    _read_args(d)
    d.set_defaults(func=cmd_describe_structure)
    return g


def _split_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--budget-split", metavar="A:B:C", default=None,
                   help="drf/drf-dp: ε_D^d : ε_D^c : ε_R = split points : counts : (drf-dp) relabelling from "
                        "noisy degrees / (drf) the reconstruction EM (default 3:7:3, the paper's)")


def _declaration_args(p: argparse.ArgumentParser, *, default: str) -> None:
    p.add_argument("--nodes", type=Path, metavar="FILE", default=None,
                   help="the public vertex set: a file of vertex ids, one per line (blank lines skipped; integer "
                        "ids numbered by value, others in file order); edges touching a vertex not in it are "
                        "dropped; " + default)
    p.add_argument("--n-nodes", type=int, metavar="N", default=None,
                   help="the public vertex set 0..N-1 (integer ids; edges touching another id are dropped); "
                        + default)


def _read_args(p: argparse.ArgumentParser) -> None:
    from dpviz.graph import io as gio

    p.add_argument("--header", choices=("auto", "yes", "no"), default="auto",
                   help="whether the first line names the columns (default: detect)")
    p.add_argument("--max-edges", type=int, default=gio.MAX_EDGES, help=f"edge cap (default {gio.MAX_EDGES:,})")
    p.add_argument("--max-bytes", type=int, default=gio.MAX_BYTES, help=f"file size cap (default {gio.MAX_BYTES:,})")
    p.add_argument("--max-nodes", type=int, default=gio.MAX_NODES, help=f"vertex cap (default {gio.MAX_NODES:,})")
    p.add_argument("--max-line-bytes", type=int, default=gio.MAX_LINE_BYTES,
                   help=f"line length cap in bytes, checked while reading (default {gio.MAX_LINE_BYTES:,})")
    cliargs.add_records_args(p, needs="read the edge table as records (its distinct rows; ids not integers "
                                       "numbered in sorted order)")


# ----------------------------------------------------------------------------------------------- helpers


def _input_path(spec: str) -> Path | None:
    return None if str(spec).startswith(SAMPLE_PREFIX) else Path(spec)


def _load(args: argparse.Namespace):
    """The Graph named by EDGES (a bundled sample, or a file read by dpviz.graph.io.read_edges), with the
    vertex ids found in the data (a declaration is applied afterwards)."""
    from dpviz.graph.io import read_edges

    header = {"auto": None, "yes": True, "no": False}[args.header]
    dask = getattr(args, "workers", None) or getattr(args, "scheduler", None)
    person, k = _person(args)
    if dask is not None or person is not None:  # the edge table as records (dpviz.core.records): its distinct rows
        from dpviz.graph.io import edges_from_records

        return load_source(CAP, args.edges, lambda path: edges_from_records(
            path, dask=dask, max_bytes=args.max_bytes, max_edges=args.max_edges, max_nodes=args.max_nodes,
            person=person, max_contributions=k))
    return load_source(CAP, args.edges, lambda path: read_edges(
        path, header=header, max_bytes=args.max_bytes, max_edges=args.max_edges, max_nodes=args.max_nodes,
        max_line_bytes=args.max_line_bytes))


def _person(args: argparse.Namespace) -> tuple[str | None, int | None]:
    """(``--person-column``, ``--max-contributions``): K needs the person column."""
    person, k = getattr(args, "person_column", None), getattr(args, "max_contributions", None)
    if k is not None and person is None:
        raise InputError("--max-contributions: needs --person-column (the column naming who contributed each edge)")
    return person, k


def _noise(args: argparse.Namespace, epsilon: float, *, discrete: bool):
    """The edge-level noise: Laplace at ε, or at ε/K when a person contributes up to K edges (group privacy:
    :func:`dpviz.core.records.per_record_noise`)."""
    from dpviz.core.noise import Noise
    from dpviz.core.records import per_record_noise

    noise = per_record_noise(Noise.laplace(epsilon, discrete=discrete), _person(args)[1])
    if float(noise.budget.epsilon) < _MIN_EPSILON:
        raise InputError(f"--epsilon {epsilon:g} with --max-contributions {_person(args)[1]}: ε/K = "
                         f"{float(noise.budget.epsilon):.3g} per edge is below the smallest ε the graph methods take "
                         f"({_MIN_EPSILON:g})")
    return noise


def _missing_declaration() -> InputError:
    """:func:`dpviz.core.structure.missing_declaration`, also naming ``--n-nodes``."""
    text = str(missing_declaration("--nodes", "the vertex set", CAP))
    return InputError(text.replace("pass --nodes FILE", "pass --nodes FILE (or --n-nodes N for ids 0..N-1)", 1))


def _declaration(args: argparse.Namespace, *, release: bool):
    """The declared VertexSet the flags name (``--nodes``, ``--n-nodes``, a sample's shipped one), or None to
    read the vertex set from the data (a simulation's default; a release's ``--structure-from-data``). A
    release with none of them is refused (exit 2) before the data is read."""
    from dpviz.graph.structure import VertexSet

    opt_out = bool(getattr(args, "structure_from_data", False))
    given = [flag for flag, on in (("--nodes", args.nodes is not None), ("--n-nodes", args.n_nodes is not None),
                                   (STRUCTURE_FROM_DATA_FLAG, opt_out)) if on]
    if len(given) > 1:
        raise InputError(f"{given[0]}, {given[1]}: give one of --nodes FILE, --n-nodes N and "
                         f"{STRUCTURE_FROM_DATA_FLAG}")
    if args.nodes is not None:
        return VertexSet.read(args.nodes, max_bytes=args.max_bytes, max_nodes=args.max_nodes,
                              max_line_bytes=args.max_line_bytes)
    if args.n_nodes is not None:
        return VertexSet.count(args.n_nodes, max_nodes=args.max_nodes)
    if opt_out:
        return None
    if str(args.edges).startswith(SAMPLE_PREFIX):
        name = str(args.edges).removeprefix(SAMPLE_PREFIX)
        capability(CAP).sample(name)  # an unknown sample: the registry's message, listing them
        return VertexSet.sample(name)
    if release:
        raise _missing_declaration()
    return None


def _label(method: str) -> str:
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
    """``--epsilon``: finite, at least :data:`MIN_EPSILON`; a release refuses it above the release bound, a
    simulation warns there and refuses it above the simulation bound."""
    from dpviz.core.accounting import positive
    from dpviz.core.noise import Noise

    epsilon = positive("--epsilon", args.epsilon)
    if epsilon < MIN_EPSILON:
        raise InputError(f"--epsilon: {epsilon:g} is below {MIN_EPSILON:g}, the smallest ε a graph "
                         f"{'release' if release else 'simulation'} takes (the noise of its sub-budgets would "
                         "leave the samplers' range); spend more ε")
    cliargs.checked_noise(args, Noise.laplace(epsilon, discrete=release), release=release)
    return epsilon


def cmd_simulate(args: argparse.Namespace) -> int:
    print(SIMULATION_NOTICE)
    epsilon = _epsilon(args, release=False)
    split = parse_split(args.budget_split)
    seed = cliargs.seed_from_args(args)
    methods = list(METHODS) if args.method == ALL else [args.method]
    if split is not None and not set(methods) & set(SPLIT_METHODS):
        raise InputError(f"--budget-split: applies to {' and '.join(SPLIT_METHODS)} only, not {args.method}")
    vertices = _declaration(args, release=False)
    graph = _load(args)

    from dpviz.core.noise import Noise
    from dpviz.graph import metrics
    from dpviz.graph.release import simulate

    print(f"graph: {graph.name}: {graph.n_nodes:,} vertices, {graph.n_edges:,} edges (simple, undirected)")
    for notice in graph.notices:
        print(f"  note: {notice}")
    if vertices is None:
        print(f"vertex set: {STRUCTURE_FROM_DATA_NOTICE} (fine for a simulation; a release takes --nodes or "
              "--n-nodes)")
    else:
        dropped = vertices.dropped(graph)
        graph = vertices.restrict(graph)
        print(f"vertex set: {vertices.source.describe}: {graph.n_nodes:,} vertices; {dropped:,} edge"
              f"{'s' if dropped != 1 else ''} touching an undeclared vertex dropped (a simulation shows this "
              f"count; a release never publishes it), {graph.n_edges:,} kept")
    print(f"seed {seed} (seeded noise: not private; retype --seed {seed} to reproduce); ε = {epsilon:g}"
          + (f"; budget split ε_D^d:ε_D^c:ε_R = {':'.join(f'{x:g}' for x in split)} (drf, drf-dp)" if split else ""))
    person, k = _person(args)
    if person is not None:
        from dpviz.core.records import unit_of_privacy

        print(f"records: {unit_of_privacy(person, k)}" + (f"; edge-level noise at ε/K = {epsilon / k:g}" if k else ""))
    sim = simulate(graph, _noise(args, epsilon, discrete=False), methods, seed, **({"split": split} if split else {}))
    for method, rel in sim.releases.items():
        suffix = f"  [{NOT_PRIVATE_LABEL}]" if not rel.private else ""
        print(f"{method} ({_label(method)}): {rel.edges.shape[0]:,} edges released in {sim.seconds[method]:.3g} s; "
              "budget:")
        print("\n".join(_budget_lines(rel.steps, epsilon, suffix)))
    table = sim.table()
    print("metrics (simulation: released vs true graph):")
    print(table.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    for key, (label, direction, definition) in metrics.METRIC_INFO.items():
        print(f"  {key}: {label} ({direction}) — {definition}")
    return 0


def _check_outputs(args: argparse.Namespace, src: Path | None) -> None:
    """Every output before any work (:func:`dpviz.core.tables.check_outputs`: writable new names, none the
    input, the declaration, the ledger, another output or the release's ``.meta.json``); the ledger charge
    checks them again just before it charges."""
    from dpviz.core.tables import check_outputs

    check_outputs(args.output, [args.partitions, args.report], [src, args.nodes],
                  ledger=ledger.ledger_path(getattr(args, "ledger", None)).path)


def cmd_release(args: argparse.Namespace) -> int:
    cliargs.refuse_seed(args, CAP)
    if args.method not in PRIVATE_METHODS:
        raise InputError(f"--method {args.method}: the published DRF ({NOT_PRIVATE_LABEL}) is refused in release "
                         "mode; use --method drf-dp (the default), or `graph simulate` to compare")
    epsilon = _epsilon(args, release=True)
    split = parse_split(args.budget_split)
    if split is not None and args.method not in SPLIT_METHODS:
        raise InputError(f"--budget-split: applies to {' and '.join(SPLIT_METHODS)} only, not {args.method}")
    src = _input_path(args.edges)
    _check_outputs(args, src)
    vertices = _declaration(args, release=True)
    graph = _load(args)

    from dpviz.core.noise import Noise
    from dpviz.core.tables import meta_json, meta_path, to_csv_text, write_together
    from dpviz.graph.release import release
    from dpviz.graph.structure import VertexSet

    if vertices is None:  # --structure-from-data: not private, and every output says so
        vertices = VertexSet.from_data(graph)
    rel = release(graph, _noise(args, epsilon, discrete=True), rng=None, method=args.method, vertices=vertices,
                  source=source_stem(args.edges), **method_options(args.method, split))
    if args.partitions is not None and rel.partition is None:
        raise InputError(f"--partitions: method {args.method} has no partition (nothing was written); leave "
                         "--partitions out or use drf-dp, kdh or quadtree")
    meta = rel.metadata()
    person, k = _person(args)
    if person is not None:  # stated at the person level: the budget charged, sensitivity × K (no dropped count)
        from dpviz.core.records import person_metadata

        meta = person_metadata(meta, Noise.laplace(epsilon, discrete=True), person=person, max_contributions=k,
                               source=source_stem(args.edges))
        if k:  # each sub-budget at the person level: K × the edge-level ε its noise was drawn for
            meta["budget"] = {part: eps * k for part, eps in meta["budget"].items()}
    budget = meta["budget"]
    n_released = int(rel.edges.shape[0])
    report = {"budget": budget, "method": args.method, "epsilon": epsilon, "n_nodes": int(vertices.n_nodes),
              "n_edges_released": n_released, "structure": rel.structure, "mode": "release"}
    parts = [(args.partitions, None if args.partitions is None else json.dumps(rel.partition_json()) + "\n"),
             (args.report, json.dumps(report, indent=1) + "\n"),
             (meta_path(args.output), meta_json(meta)),
             (args.output, to_csv_text(rel.table(), raw_text=args.raw_text))]
    parts = [(Path(p), text.encode("utf-8")) for p, text in parts if p is not None]
    # every output is checked, then the ledger charged (exit 3 if over the dataset's budget), then all are
    # written together: the release last, and a failure leaves none of them
    with ledger.charge(args, CAP, args.edges, graph, Noise.laplace(epsilon, discrete=True), args.method,
                       extra_outputs=[args.partitions, args.report], inputs=[args.nodes]):
        write_together([(p, _writer(data)) for p, data in parts], inputs=[src, args.nodes])
    written = [str(args.output), meta_path(args.output).name] + [str(p) for p in (args.partitions, args.report)
                                                                 if p is not None]
    print(RELEASE_NOTICE)
    print(f"method: {args.method} (edge-DP), ε = {epsilon:g}; vertex set: {vertices.source.describe}: "
          f"{vertices.n_nodes:,} vertices")
    if not vertices.declared:
        print(f"WARNING: {STRUCTURE_FROM_DATA_NOTICE} (the vertex set is published as the edges show it)")
    print(f"budget ({len(budget)} sub-budget{'s' if len(budget) != 1 else ''}):")
    print("\n".join(_budget_lines(budget, epsilon)))
    print(f"released {n_released:,} edges")
    print("wrote " + ", ".join(written))
    sys.stdout.flush()
    return 0


def _writer(data: bytes):
    return lambda fh: fh.write(data)


def cmd_describe_structure(args: argparse.Namespace) -> int:
    """Write the vertex ids found in EDGES (a ``--nodes`` template) and say it comes from the data."""
    from dpviz.core.tables import check_destination, write_text
    from dpviz.graph.structure import describe_text

    src = _input_path(args.edges)
    check_destination(args.output, [src])
    graph = _load(args)
    path = write_text(describe_text(graph), args.output, inputs=[src])
    print(f"{DESCRIBE_NOTICE}.")
    print(f"wrote {graph.n_nodes:,} vertex ids (one per line) to {path}; release with "
          f"`python -m dpviz graph release EDGES --nodes {path} ...`")
    return 0
