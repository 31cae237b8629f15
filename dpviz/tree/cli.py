"""``python -m dpviz tree ...``: simulate, release, consistency post-processing, structure views,
synthetic trees, benchmark. Registered through :mod:`dpviz.core.registry`.

* ``simulate`` — seeded continuous noise, every method on one draw, metrics against the truth; the
  output may hold the truth. Its first line says it is not a private release.
* ``release`` — discrete noise from the OS CSPRNG on integer counts, one method, no seed; the
  output (``node,parent,noisy,released,variance,std`` + ``OUT.meta.json``) is written atomically
  and never over the input, and stdout shows only public things.

Bundled data is named ``sample:county``. Bad input raises InputError (exit code 2, one line).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from dpviz import ledger
from dpviz.core import cliargs
from dpviz.core.modes import RELEASE_NOTICE, SIMULATION_NOTICE
from dpviz.core.registry import SAMPLE_PREFIX, capability
from dpviz.core.tables import write_release, write_table
from dpviz.errors import InputError
from dpviz.tree.estimators import METHODS
from dpviz.tree.generation import consistency_matrix, structure_matrix
from dpviz.tree.gmc import gmc, plan
from dpviz.tree.io import load_source, node_table, noisy_tree_from_table, read_table
from dpviz.tree.release import release, release_table, simulate, simulation_table
from dpviz.tree.strategy import SPLITS

INPUT_HELP = ("tree file (CSV/JSON: node,parent,count | level columns + count | parent array), or sample:county "
              "for the bundled US counties")


def _ancestors(t):
    from dpviz.tree.properties import ancestor_indicator

    return ancestor_indicator(t)


MATRICES = {
    "G": lambda t: structure_matrix(t),  # Def. 7
    "Ginv": _ancestors,  # Prop. 7
    "M": lambda t: consistency_matrix(t),  # Def. 5
}


def register(groups) -> None:
    """Add the ``tree`` command group to the top-level sub-parsers."""
    tree = groups.add_parser("tree", help=capability("tree").cli_help)
    sub = tree.add_subparsers(dest="command", required=True, parser_class=type(tree))

    sim = sub.add_parser("simulate", help=f"{SIMULATION_NOTICE}: seeded noise, every method, errors vs. the truth")
    sim.add_argument("input", help=INPUT_HELP)
    cliargs.add_noise_args(sim)
    sim.add_argument("--split", choices=SPLITS, default="uniform", help="budget split over the depth levels")
    sim.add_argument("--method", choices=[*METHODS, "all"], default="gmc",
                     help="post-processing; 'all' compares every method on the same noise draw")
    cliargs.add_simulate_args(sim)
    sim.add_argument("--queries", type=int, default=10_000, help="random leaf ranges for rmse_RQ")
    sim.add_argument("--output", type=Path,
                     help="write node,parent,true,noisy,released (holds the truth: a simulation) + OUT.meta.json")
    sim.set_defaults(func=_simulate)

    rel = sub.add_parser("release", help="private release: discrete noise (OS CSPRNG), one method, no truth")
    rel.add_argument("input", help=INPUT_HELP)
    cliargs.add_noise_args(rel)
    rel.add_argument("--split", choices=SPLITS, default="uniform", help="budget split over the depth levels")
    rel.add_argument("--method", choices=[*METHODS, "all"], default="gmc", help="post-processing (one method)")
    cliargs.add_release_args(rel)
    rel.set_defaults(func=_release)

    con = sub.add_parser("consistency", help="optimal consistent estimate of a noisy tree (no noise added)")
    con.add_argument("input", help="CSV/JSON with node,parent,value[,variance]")
    con.add_argument("--output", type=Path, required=True)
    con.set_defaults(func=_consistency)

    gen = sub.add_parser("generate", help="write a synthetic tree as node,parent,count")
    gen.add_argument("--kind", choices=["complete", "random-fanout", "path-like"], default="complete")
    gen.add_argument("--k", type=int, default=2, help="fan-out (complete)")
    gen.add_argument("--height", type=int, default=10, help="levels (complete)")
    gen.add_argument("--nodes", type=int, default=10_000, help="size (random-fanout, path-like)")
    gen.add_argument("--lam", type=float, default=10.0, help="Poisson mean of the leaf counts")
    gen.add_argument("--seed", type=int, default=0)
    gen.add_argument("--output", type=Path, required=True)
    gen.set_defaults(func=_generate)

    prop = sub.add_parser("properties", help="per-node depth, height, children, subtree size (Props. 4-6)")
    prop.add_argument("input", help=INPUT_HELP)
    prop.add_argument("--output", type=Path, required=True)
    prop.set_defaults(func=_properties)

    pg = sub.add_parser("propagate", help="upward (G^-T v) or downward (G^-1 v) propagation (Props. 2-3)")
    pg.add_argument("input", help=INPUT_HELP)
    pg.add_argument("--vector", choices=["ones", "true"], default="true", help="v: all ones or the true counts")
    pg.add_argument("--direction", choices=["up", "down"], default="up")
    pg.add_argument("--steps", type=int, default=None, help="stop after this many height levels (teaching)")
    pg.add_argument("--output", type=Path, required=True, help="node,parent,value (empty = not reached)")
    pg.set_defaults(func=_propagate)

    mat = sub.add_parser("matrix", help="a structure matrix as node-labelled triplets row,col,value")
    mat.add_argument("input", help=INPUT_HELP)
    mat.add_argument("--which", choices=list(MATRICES), default="G")
    mat.add_argument("--k", type=int, default=0, help="k-order subtree: keep the leading n_k rows/columns")
    mat.add_argument("--output", type=Path, required=True)
    mat.set_defaults(func=_matrix)

    ben = sub.add_parser("bench", help="run the tree benchmark (same as bench/tree_bench.py)")
    ben.add_argument("--quick", action="store_true", help="small sizes only")
    ben.set_defaults(func=_bench)


def _input_path(spec: str) -> Path | None:
    """The input as a file (for the never-overwrite check); None for bundled samples."""
    return None if str(spec).startswith(SAMPLE_PREFIX) else Path(spec)


def _structure_line(data) -> str:
    t = data.tree
    return f"tree: {data.name}: n={t.n:,} nodes, m={t.m:,} leaves, height h={t.h}"


def _simulate(args: argparse.Namespace) -> int:
    print(SIMULATION_NOTICE)
    noise = cliargs.noise_from_args(args, discrete=False)
    seed = cliargs.seed_from_args(args)
    if args.queries < 1:
        raise InputError(f"--queries: expected a positive integer, got {args.queries}")
    data = load_source(args.input)
    methods = list(METHODS) if args.method == "all" else [args.method]
    sim = simulate(data, noise, methods, np.random.default_rng(seed), split=args.split, q=args.queries)
    print(_structure_line(data))
    print(f"noise: {noise.describe}, split={args.split}, seed={seed} (continuous, seeded: not private)")
    print(sim.table.to_string(index=False, float_format=lambda v: f"{v:.6g}"))
    if args.output:
        out = simulation_table(data, sim)
        meta = {"mode": "simulate", "notice": SIMULATION_NOTICE, "capability": "tree", "source": data.name,
                "methods": methods, "noise": noise.as_dict(), "split": args.split, "seed": seed,
                "columns": "node,parent,true,noisy,released: 'true' is the private input"}
        write_release(out, args.output, meta, inputs=[_input_path(args.input)])
        print(f"wrote {len(out):,} rows to {args.output} ({SIMULATION_NOTICE})")
    return 0


def _release(args: argparse.Namespace) -> int:
    cliargs.refuse_seed(args, "tree")
    if args.method == "all":
        raise InputError("--method all: a release publishes one post-processing method; compare methods with "
                         "`python -m dpviz tree simulate ... --method all`")
    noise = cliargs.noise_from_args(args, discrete=True)
    src = _input_path(args.input)
    data = load_source(args.input)
    rel = release(data, noise, args.split, args.method)
    table, meta = release_table(rel)
    # the ledger is charged first (exit 3 if over the dataset's budget), then the output is written
    with ledger.charge(args, "tree", args.input, data, noise, args.method):
        write_release(table, args.output, meta, inputs=[src])
    t = rel.tree
    scales = ", ".join(f"{s:.4g}" for s in rel.level_scales)
    print(RELEASE_NOTICE)
    print(f"tree: {data.name}: n={t.n:,} nodes, m={t.m:,} leaves, height h={t.h} (the hierarchy is public)")
    print(f"noise: {noise.describe}, split={rel.split}; sensitivity {meta['sensitivity']['norm']} = "
          f"{rel.sensitivity:.4g}; per-level scales (root first): {scales}")
    expected = rel.expected_total_sq_error
    print(f"method: {meta['method_label']}; expected total squared error (analytic, Σ variance): "
          + (f"{expected:.6g}" if np.isfinite(expected) else "no closed form for this method"))
    print(f"wrote {len(table):,} rows (node,parent,noisy,released,variance,std) to {args.output} "
          f"and its description to {args.output}.meta.json")
    return 0


def _consistency(args: argparse.Namespace) -> int:
    src = Path(args.input)
    if not src.exists():
        raise InputError(f"input file {args.input!r} does not exist")
    tree, value, var = noisy_tree_from_table(read_table(src), name=src.name)
    write_table(node_table(tree, value=gmc(plan(tree, var), value)), args.output, inputs=[src])
    print(f"wrote the optimal consistent estimate of {tree.n:,} nodes to {args.output}")
    return 0


def _generate(args: argparse.Namespace) -> int:
    from dpviz.tree import synthetic

    rng = np.random.default_rng(args.seed)
    if args.kind == "complete":
        data = synthetic.complete_tree(args.k, args.height, args.lam, rng)
    else:
        data = synthetic.make(args.kind, args.nodes, args.lam, rng)
    t = data.tree
    counts = pd.array(np.full(t.n, pd.NA), dtype="Int64")  # empty on internal nodes
    counts[t.n1:] = data.x.astype(np.int64)
    write_table(node_table(t, count=counts), args.output)
    print(f"wrote {data.name} ({t.n:,} nodes) to {args.output}")
    return 0


def _properties(args: argparse.Namespace) -> int:
    from dpviz.tree.properties import children_counts, depths, subtree_sizes

    data = load_source(args.input)
    t = data.tree
    write_table(node_table(t, depth=depths(t), height=t.height, children=children_counts(t),
                           subtree_size=subtree_sizes(t)), args.output, inputs=[_input_path(args.input)])
    print(f"wrote the properties of {t.n:,} nodes to {args.output}")
    return 0


def _propagate(args: argparse.Namespace) -> int:
    from dpviz.tree.propagation import partial_propagation

    data = load_source(args.input)
    t = data.tree
    v = np.ones(t.n) if args.vector == "ones" else data.v
    z = partial_propagation(t, v, args.direction, args.steps)
    write_table(node_table(t, value=z), args.output, inputs=[_input_path(args.input)])
    print(f"wrote {args.direction}ward propagation of {args.vector} ({int(np.isfinite(z).sum()):,} nodes reached) "
          f"to {args.output}")
    return 0


def _matrix(args: argparse.Namespace) -> int:
    data = load_source(args.input)
    t = data.tree
    if not 0 <= args.k < t.h:
        raise InputError(f"--k must lie in 0..{t.h - 1} for a tree of height {t.h}")
    mat = MATRICES[args.which](t).tocsr()
    nk = t.n_k(args.k)
    mat = mat[:nk, : min(nk, mat.shape[1])].tocoo()
    ids = data.node_ids
    col_ids = ids if args.which != "M" else ids[: t.n1]
    write_table(pd.DataFrame({"row": ids[mat.row], "col": col_ids[mat.col], "value": mat.data}), args.output,
                inputs=[_input_path(args.input)])
    print(f"wrote {args.which} of T^({args.k}) ({nk:,} rows, {mat.nnz:,} non-zeros) to {args.output}")
    return 0


def _bench(args: argparse.Namespace) -> int:
    from dpviz.tree.bench import main as bench_main

    return bench_main(quick=args.quick, out=sys.stdout)

