"""``python -m dpviz tree ...``: release, consistency post-processing, synthetic trees, benchmark.

The same functions the Tree page calls. Bad input raises InputError (exit code 2, one line on stderr).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from dpviz.errors import InputError
from dpviz.privacy.mechanisms import fresh_seed
from dpviz.tree.generation import consistency_matrix, structure_matrix
from dpviz.tree.gmc import gmc, plan
from dpviz.tree.io import TreeData, load_tree_file, node_table, noisy_tree_from_table, read_table
from dpviz.tree.release import METHODS, NoiseSpec, compare, release_frame

BUNDLED = {"county": "us_county_population_2019.csv"}


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
    tree = groups.add_parser("tree", help="hierarchical tree release (Generation Matrix, GMC)")
    sub = tree.add_subparsers(dest="command", required=True, parser_class=type(tree))

    rel = sub.add_parser("release", help="add noise to a tree of counts and post-process it")
    rel.add_argument("input", help="tree file (CSV/JSON: node,parent,count | level columns + count | parent array) or 'county' for the bundled US counties")
    rel.add_argument("--epsilon", type=float, required=True)
    rel.add_argument("--method", choices=[*METHODS, "all"], default="gmc",
                     help="post-processing; 'all' compares every method on the same noise draw")
    rel.add_argument("--mechanism", choices=["laplace", "gaussian"], default="laplace")
    rel.add_argument("--delta", type=float, default=1e-6, help="δ for the Gaussian mechanism")
    rel.add_argument("--split", choices=["uniform", "geometric"], default="uniform")
    rel.add_argument("--seed", type=int, default=None, help="noise seed (default: fresh entropy, printed)")
    rel.add_argument("--queries", type=int, default=10_000, help="random leaf ranges for rmse_RQ")
    rel.add_argument("--output", type=Path, help="write node,parent,true,noisy,released")
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
    prop.add_argument("input", help="tree file or 'county'")
    prop.add_argument("--output", type=Path, required=True)
    prop.set_defaults(func=_properties)

    pg = sub.add_parser("propagate", help="upward (G^-T v) or downward (G^-1 v) propagation (Props. 2-3)")
    pg.add_argument("input", help="tree file or 'county'")
    pg.add_argument("--vector", choices=["ones", "true"], default="true", help="v: all ones or the true counts")
    pg.add_argument("--direction", choices=["up", "down"], default="up")
    pg.add_argument("--steps", type=int, default=None, help="stop after this many height levels (teaching)")
    pg.add_argument("--output", type=Path, required=True, help="node,parent,value (empty = not reached)")
    pg.set_defaults(func=_propagate)

    mat = sub.add_parser("matrix", help="a structure matrix as node-labelled triplets row,col,value")
    mat.add_argument("input", help="tree file or 'county'")
    mat.add_argument("--which", choices=list(MATRICES), default="G")
    mat.add_argument("--k", type=int, default=0, help="k-order subtree: keep the leading n_k rows/columns")
    mat.add_argument("--output", type=Path, required=True)
    mat.set_defaults(func=_matrix)

    ben = sub.add_parser("bench", help="run the tree benchmark (same as bench/tree_bench.py)")
    ben.add_argument("--quick", action="store_true", help="small sizes only")
    ben.set_defaults(func=_bench)


def load_input(spec: str) -> TreeData:
    """A path, or the name of a bundled sample ('county')."""
    if spec in BUNDLED:
        from dpviz.data.samples import ASSETS

        return load_tree_file(ASSETS / BUNDLED[spec], name=spec)
    path = Path(spec)
    if not path.exists():
        raise InputError(f"input file {spec!r} does not exist (or use one of: {', '.join(BUNDLED)})")
    return load_tree_file(path)


def _release(args: argparse.Namespace) -> int:
    data = load_input(args.input)
    spec = NoiseSpec(epsilon=args.epsilon, mechanism=args.mechanism, split=args.split, delta=args.delta)
    seed = args.seed if args.seed is not None else fresh_seed()
    rng = np.random.default_rng(seed)
    methods = list(METHODS) if args.method == "all" else [args.method]
    table, results = compare(data, spec, methods, rng, q=args.queries)
    t = data.tree
    print(f"tree: {data.name}: n={t.n:,} nodes, m={t.m:,} leaves, height h={t.h}")
    print(f"noise: {spec.mechanism}, epsilon={spec.epsilon:g}, split={spec.split}, seed={seed}")
    print(table.to_string(index=False, float_format=lambda v: f"{v:.6g}"))
    if args.output:
        first = results[methods[0]]
        if len(methods) == 1:
            out = release_frame(data, first.noisy, first.released)
        else:  # one released column per method, all on the same noise draw
            out = node_table(t, true=data.v, noisy=first.noisy,
                             **{f"released_{m}": r.released for m, r in results.items()})
        out.to_csv(args.output, index=False)
        print(f"wrote {len(out):,} rows to {args.output}")
    return 0


def _consistency(args: argparse.Namespace) -> int:
    df = read_table(Path(args.input)) if Path(args.input).exists() else None
    if df is None:
        raise InputError(f"input file {args.input!r} does not exist")
    tree, value, var = noisy_tree_from_table(df, name=Path(args.input).name)
    node_table(tree, value=gmc(plan(tree, var), value)).to_csv(args.output, index=False)
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
    counts = np.full(t.n, np.nan)
    counts[t.n1 :] = data.x
    node_table(t, count=counts).to_csv(args.output, index=False, float_format="%.0f")
    print(f"wrote {data.name} ({t.n:,} nodes) to {args.output}")
    return 0


def _properties(args: argparse.Namespace) -> int:
    from dpviz.tree.properties import children_counts, depths, subtree_sizes

    data = load_input(args.input)
    t = data.tree
    node_table(t, depth=depths(t), height=t.height, children=children_counts(t),
               subtree_size=subtree_sizes(t)).to_csv(args.output, index=False)
    print(f"wrote the properties of {t.n:,} nodes to {args.output}")
    return 0


def _propagate(args: argparse.Namespace) -> int:
    from dpviz.tree.propagation import partial_propagation

    data = load_input(args.input)
    t = data.tree
    v = np.ones(t.n) if args.vector == "ones" else data.v
    z = partial_propagation(t, v, args.direction, args.steps)
    node_table(t, value=z).to_csv(args.output, index=False)
    print(f"wrote {args.direction}ward propagation of {args.vector} ({int(np.isfinite(z).sum()):,} nodes reached) to {args.output}")
    return 0


def _matrix(args: argparse.Namespace) -> int:
    data = load_input(args.input)
    t = data.tree
    if not 0 <= args.k < t.h:
        raise InputError(f"--k must lie in 0..{t.h - 1} for a tree of height {t.h}")
    mat = MATRICES[args.which](t).tocsr()
    nk = t.n_k(args.k)
    mat = mat[:nk, : min(nk, mat.shape[1])].tocoo()
    ids = data.node_ids
    col_ids = ids if args.which != "M" else ids[: t.n1]
    pd.DataFrame({"row": ids[mat.row], "col": col_ids[mat.col], "value": mat.data}).to_csv(args.output, index=False)
    print(f"wrote {args.which} of T^({args.k}) ({nk:,} rows, {mat.nnz:,} non-zeros) to {args.output}")
    return 0


def _bench(args: argparse.Namespace) -> int:
    from dpviz.tree.bench import main as bench_main

    return bench_main(quick=args.quick, out=sys.stdout)
