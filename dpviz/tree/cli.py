"""``python -m dpviz tree ...``: simulate, release, consistency post-processing, structure views,
synthetic trees (benchmarks: bench/tree_bench.py). Registered through :mod:`dpviz.core.registry`.

* ``simulate`` — seeded continuous noise, every method on one draw, metrics against the truth; the
  output may hold the truth. Its first line says it is not a private release.
* ``release`` — discrete noise from the OS CSPRNG on integer counts, one method, no seed; the
  output (``node,parent,noisy,released,variance,std`` + ``OUT.meta.json``) is written atomically
  and never over the input, and stdout shows only public things. The released hierarchy is declared
  (``--hierarchy FILE``, or a bundled sample's declaration; :mod:`dpviz.tree.hierarchy`), never read
  from the counts, unless ``--structure-from-data`` opts out (then every output says so).
* records (``--levels region,division,state,county``): the input is one row per person (CSV, gzip CSV,
  Parquet or a folder of Parquet files), each record adds 1 to its leaf (no count column), counted in-process
  or on Dask (``--workers N`` / ``--scheduler ADDRESS``); ``--max-contributions K --person-column ID`` keeps
  a person's first K records and multiplies the sensitivity by K (:mod:`dpviz.core.records`). A release joins
  the counts onto ``--hierarchy`` (path ids ``a / b / c``); a simulation uses the levels' values.
* ``describe-structure`` — a declaration template (``node,parent``) read from a data file, to review.

Bundled data is named ``sample:county``. Bad input raises InputError (exit code 2, one line).
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import numpy as np

from dpviz.core import charging as ledger
from dpviz.core import cliargs
from dpviz.core.inputs import require_regular_file
from dpviz.core.modes import RELEASE_NOTICE, SIMULATION_NOTICE
from dpviz.core.records import RecordsSource, per_record_noise, person_metadata, unit_of_privacy
from dpviz.core.registry import SAMPLE_PREFIX, capability
from dpviz.core.registry import load_source as load_any
from dpviz.core.structure import (
    DESCRIBE_NOTICE,
    StructureSource,
    add_structure_from_data_arg,
    missing_declaration,
)
from dpviz.core.tables import check_destination
from dpviz.errors import InputError
from dpviz.tree.estimators import METHODS
from dpviz.tree.generation import consistency_matrix, structure_matrix
from dpviz.tree.gmc import gmc, plan
from dpviz.tree.hierarchy import HIERARCHY_HELP, describe_structure, join_counts, read_counts, read_hierarchy
from dpviz.tree.formats import noisy_columns, noisy_tree_from_table
from dpviz.tree.io import (CAPS_HELP, MAX_BYTES, MAX_NODES, canonical_bytes_ahead, identity_early, node_table,
                           records_counts, records_tree, write_tree_csv)
from dpviz.tree.io import load as load_source
from dpviz.tree.reading import read_table
from dpviz.tree.release import release, simulate, simulation_table
from dpviz.tree.strategy import SPLITS, scales_text

INPUT_HELP = ("tree file (CSV/JSON: node,parent,count | level columns + count | parent array), or sample:county "
              "for the bundled US counties")
MAX_QUERIES = 1_000_000
"""Cap on ``simulate --queries`` (two int64 arrays of this length)."""


def _ancestors(t):
    from dpviz.tree.properties import ancestor_indicator

    return ancestor_indicator(t)


MATRICES = {
    "G": lambda t: structure_matrix(t),  # Def. 7
    "Ginv": _ancestors,  # Prop. 7
    "M": lambda t: consistency_matrix(t),  # Def. 5
}


def _add_input(p: argparse.ArgumentParser, help: str = INPUT_HELP, *, count_column: bool = True) -> None:
    """The input file and its caps (stated in --help, raised by these flags)."""
    p.add_argument("input", help=help)
    p.add_argument("--max-nodes", type=cliargs.positive_int, default=MAX_NODES, metavar="N",
                   help=f"refuse a tree of more than N nodes, counted while reading (default {MAX_NODES:,})")
    p.add_argument("--max-bytes", type=cliargs.positive_int, default=MAX_BYTES, metavar="N",
                   help=f"refuse a file of more than N bytes, before reading it (default {MAX_BYTES:,})")
    if count_column:
        p.add_argument("--count-column", metavar="NAME", default=None,
                       help="the column holding the counts (default: count/population/pop/value/n, else the last "
                            "column of a level table); an unknown name is an error")


def _add_records(p: argparse.ArgumentParser) -> None:
    """The records flags (:mod:`dpviz.core.records`): levels, a contribution bound, where to count."""
    p.add_argument("--levels", metavar="A,B,C", default=None,
                   help="count records: the input holds one row per person and these level columns (top to "
                        "bottom); each row adds 1 to its leaf (no count column). The unit of privacy becomes the "
                        "record, or the person with --max-contributions")
    cliargs.add_records_args(p, needs="with --levels")


def _records(args: argparse.Namespace) -> dict | None:
    """The records options of ``args`` (None: the input is a tree file, not records)."""
    if getattr(args, "levels", None) is None:
        for flag in ("person_column", "max_contributions", "workers", "scheduler"):
            if getattr(args, flag, None) is not None:
                raise InputError(f"--{flag.replace('_', '-')}: only with --levels (the input as records)")
        return None
    if getattr(args, "count_column", None) is not None:
        raise InputError("--count-column and --levels exclude each other: records have no count column (each row "
                         "counts 1)")
    dask = args.workers if args.workers is not None else args.scheduler
    return {"levels": args.levels, "person": args.person_column, "max_contributions": args.max_contributions,
            "dask": dask, "max_nodes": args.max_nodes, "max_bytes": args.max_bytes}


def _load(args: argparse.Namespace):
    """The input under its caps (a path that is not a regular file, e.g. a FIFO, is refused before it is
    opened: :func:`dpviz.core.registry.load_source`)."""
    return load_source(args.input, max_nodes=args.max_nodes, max_bytes=args.max_bytes,
                       count_column=getattr(args, "count_column", None))


def _add_hierarchy(p: argparse.ArgumentParser, *, release: bool) -> None:
    p.add_argument("--hierarchy", type=Path, metavar="FILE",
                   help=HIERARCHY_HELP + ("" if release else " (optional here: a simulation may read the "
                                                             "structure from the data)"))
    if release:
        add_structure_from_data_arg(p, "the tree hierarchy (node list)")


def _hierarchy_path(args: argparse.Namespace) -> Path | None:
    return getattr(args, "hierarchy", None)


def _declared_data(args: argparse.Namespace, *, release: bool):
    """The tree to work on: the counts joined onto the declared hierarchy (``--hierarchy``, or a bundled
    sample's declaration); a release without one exits 2 unless ``--structure-from-data`` (then the
    data's own structure, marked as read from the data). Cheap checks come before any reading."""
    hier_path = _hierarchy_path(args)
    src = _input_path(args.input)
    opt_out = getattr(args, "structure_from_data", False)
    if hier_path is not None and opt_out:
        raise InputError("--hierarchy and --structure-from-data exclude each other: pass one")
    if release and hier_path is None and not opt_out and src is not None:
        raise missing_declaration("--hierarchy", "the tree hierarchy (node list)", "tree")
    recs = _records(args)
    if hier_path is not None:
        require_regular_file(hier_path, "--hierarchy")
        hier = read_hierarchy(hier_path, max_nodes=args.max_nodes, max_bytes=args.max_bytes, what="--hierarchy")
        if recs is not None:
            return join_counts(hier, records_counts(args.input, recs.pop("levels"), **recs))
        counts = load_any("tree", args.input, lambda p: read_counts(  # a sample loads as it is
            p, max_nodes=args.max_nodes, max_bytes=args.max_bytes, count_column=args.count_column))
        return join_counts(hier, counts)
    data = _load(args) if recs is None else records_tree(args.input, recs.pop("levels"), **recs)
    if data.structure is None or opt_out:
        if release and not opt_out:  # a sample without a shipped declaration
            raise missing_declaration("--hierarchy", "the tree hierarchy (node list)", "tree")
        data = dataclasses.replace(data, structure=StructureSource("data", data.name))
    return data


def register(groups) -> None:
    """Add the ``tree`` command group to the top-level sub-parsers."""
    tree = groups.add_parser("tree", help=capability("tree").cli_help, description=CAPS_HELP)
    sub = tree.add_subparsers(dest="command", required=True, parser_class=type(tree))

    def verb(name: str, help: str) -> argparse.ArgumentParser:
        return sub.add_parser(name, help=help, description=f"{help}. {CAPS_HELP}")

    sim = verb("simulate", f"{SIMULATION_NOTICE}: seeded noise, every method, errors vs. the truth")
    _add_input(sim)
    cliargs.add_noise_args(sim)
    sim.add_argument("--split", choices=SPLITS, default="uniform", help="budget split over the depth levels")
    sim.add_argument("--method", choices=[*METHODS, "all"], default="gmc",
                     help="post-processing; 'all' compares every method on the same noise draw")
    cliargs.add_simulate_args(sim)
    sim.add_argument("--queries", type=cliargs.positive_int, default=10_000,
                     help=f"random leaf ranges for rmse_RQ, 1..{MAX_QUERIES:,}")
    sim.add_argument("--output", type=Path,
                     help="write node,parent,true,noisy,released (holds the truth: a simulation) + OUT.meta.json")
    _add_hierarchy(sim, release=False)
    _add_records(sim)
    sim.set_defaults(func=_simulate)

    rel = verb("release", "private release: discrete noise (OS CSPRNG), one method, no truth")
    _add_input(rel)
    cliargs.add_noise_args(rel)
    rel.add_argument("--split", choices=SPLITS, default="uniform", help="budget split over the depth levels")
    rel.add_argument("--method", choices=[*METHODS, "all"], default="gmc", help="post-processing (one method)")
    cliargs.add_release_args(rel)
    _add_hierarchy(rel, release=True)
    _add_records(rel)
    rel.set_defaults(func=_release)

    desc = verb("describe-structure", "write a declaration template (node,parent) read from a data file, "
                                      "for the curator to review before releasing with --hierarchy")
    _add_input(desc, count_column=True)
    _add_records(desc)
    desc.add_argument("--output", type=Path, required=True, help="the hierarchy file to write (node,parent)")
    desc.set_defaults(func=_describe_structure)

    con = verb("consistency", "optimal consistent estimate of a noisy tree (no noise added)")
    _add_input(con, "CSV/JSON with node,parent,value[,variance]", count_column=False)
    con.add_argument("--output", type=Path, required=True)
    con.set_defaults(func=_consistency)

    gen = sub.add_parser("generate", help="write a synthetic tree as node,parent,count",
                         description="write a synthetic tree as node,parent,count. The size is computed before "
                                     f"anything is allocated and refused above --max-nodes (default {MAX_NODES:,}) "
                                     "or above the memory this machine has available.")
    gen.add_argument("--kind", choices=["complete", "random-fanout", "path-like"], default="complete")
    gen.add_argument("--k", type=cliargs.positive_int, default=2, help="fan-out (complete)")
    gen.add_argument("--height", type=cliargs.positive_int, default=10, help="levels (complete)")
    gen.add_argument("--nodes", type=cliargs.positive_int, default=10_000, help="size (random-fanout, path-like)")
    gen.add_argument("--lam", type=float, default=10.0,
                     help="Poisson mean of the leaf counts (> 0; leaves × λ at most 2^53)")
    cliargs.add_seed_arg(gen, default=0, help="seed of the structure and the counts (a non-negative integer)")
    gen.add_argument("--max-nodes", type=cliargs.positive_int, default=MAX_NODES, metavar="N",
                     help=f"refuse a tree of more than N nodes (default {MAX_NODES:,})")
    gen.add_argument("--output", type=Path, required=True)
    gen.set_defaults(func=_generate)

    prop = verb("properties", "per-node depth, height, children, subtree size (Props. 4-6)")
    _add_input(prop)
    prop.add_argument("--output", type=Path, required=True)
    prop.set_defaults(func=_properties)

    pg = verb("propagate", "upward (G^-T v) or downward (G^-1 v) propagation (Props. 2-3)")
    _add_input(pg)
    pg.add_argument("--vector", choices=["ones", "true"], default="true", help="v: all ones or the true counts")
    pg.add_argument("--direction", choices=["up", "down"], default="up")
    pg.add_argument("--steps", type=cliargs.positive_int, default=None,
                    help="stop after this many height levels, 1..h (teaching; default: all)")
    pg.add_argument("--output", type=Path, required=True, help="node,parent,value (empty = not reached)")
    pg.set_defaults(func=_propagate)

    mat = verb("matrix", "a structure matrix as node-labelled triplets row,col,value")
    _add_input(mat)
    mat.add_argument("--which", choices=list(MATRICES), default="G")
    mat.add_argument("--k", type=int, default=0, help="k-order subtree: keep the leading n_k rows/columns")
    mat.add_argument("--max-nnz", type=cliargs.positive_int, default=None, metavar="N",
                     help="refuse a matrix of more than N non-zeros (default 50,000,000; G⁻¹ has Σ depth)")
    mat.add_argument("--output", type=Path, required=True)
    mat.set_defaults(func=_matrix)


def _input_path(spec: str) -> Path | None:
    """The input as a file (for the never-overwrite check); None for bundled samples."""
    return None if str(spec).startswith(SAMPLE_PREFIX) else Path(spec)


def _inputs(args: argparse.Namespace) -> list[Path | None]:
    """The files a command reads (never written over): the input and a ``--hierarchy``."""
    return [_input_path(args.input) if hasattr(args, "input") else None, _hierarchy_path(args)]


def _output(args: argparse.Namespace) -> Path | None:
    """``--output`` checked before any work (folder exists, not a folder, not an input)."""
    if getattr(args, "output", None) is None:
        return None
    return check_destination(args.output, _inputs(args))


def _structure_line(data) -> str:
    t = data.tree
    return f"tree: {data.name}: n={t.n:,} nodes, m={t.m:,} leaves, height h={t.h}"


def _simulate(args: argparse.Namespace) -> int:
    print(SIMULATION_NOTICE)
    if args.queries > MAX_QUERIES:
        raise InputError(f"--queries: at most {MAX_QUERIES:,} random ranges (MAX_QUERIES), got {args.queries:,}")
    _output(args)
    noise = cliargs.noise_from_args(args, discrete=False)
    seed = cliargs.seed_from_args(args)
    data = _declared_data(args, release=False)
    methods = list(METHODS) if args.method == "all" else [args.method]
    sim = simulate(data, per_record_noise(noise, args.max_contributions), methods, np.random.default_rng(seed),
                   split=args.split, q=args.queries)
    print(_structure_line(data))
    if args.levels is not None:
        print(f"records: {unit_of_privacy(args.person_column, args.max_contributions)}; the hierarchy is "
              + ("declared (--hierarchy)" if _hierarchy_path(args) else "the levels' values read from the records"))
    print(f"noise: {noise.describe}, split={args.split}, seed={seed} (continuous, seeded: not private)")
    print(sim.table.to_string(index=False, float_format=lambda v: f"{v:.6g}"))
    if args.output:
        out = simulation_table(data, sim)
        meta = {"mode": "simulate", "notice": SIMULATION_NOTICE, "capability": "tree", "source": data.name,
                "methods": methods, "noise": noise.as_dict(), "split": args.split, "seed": seed,
                "columns": "node,parent,true,noisy,released: 'true' is the private input"}
        if args.levels is not None:
            meta["unit_of_privacy"] = unit_of_privacy(args.person_column, args.max_contributions)
        write_tree_csv(out, args.output, meta=meta, inputs=_inputs(args))
        print(f"wrote {len(out):,} rows to {args.output} ({SIMULATION_NOTICE})")
    return 0


def _release(args: argparse.Namespace) -> int:
    cliargs.refuse_seed(args, "tree")
    if args.method == "all":
        raise InputError("--method all: a release publishes one post-processing method; compare methods with "
                         "`python -m dpviz tree simulate ... --method all`")
    _output(args)
    noise = cliargs.noise_from_args(args, discrete=True)
    with identity_early():  # the identity bytes of a node,parent,count file start while its tree is built
        data = _declared_data(args, release=True)
    if args.levels is None:  # the ledger's identity of the data, computed beside the release
        canonical_bytes_ahead(data)
    k = args.max_contributions
    rel = release(data, per_record_noise(noise, k), split=args.split, method=args.method, csv_text=True)
    table, meta = rel.columns(), rel.metadata()
    if args.levels is not None:
        meta = person_metadata(meta, noise, person=args.person_column, max_contributions=k, source=data.name)
    # the ledger is charged first (exit 3 if over the dataset's budget), then the output is written
    hier = [] if _hierarchy_path(args) is None else [args.hierarchy]
    charged = data if args.levels is None else RecordsSource(args.input, args.max_bytes)  # records: charged to them
    with ledger.charge(args, "tree", args.input, charged, noise, args.method, inputs=hier):
        write_tree_csv(table, args.output, meta=meta, inputs=_inputs(args), plain=_plain(rel),
                       raw_text=args.raw_text)
    t = rel.tree
    scales = scales_text(rel.level_scales)
    print(RELEASE_NOTICE)
    print(f"tree: {data.name}: n={t.n:,} nodes, m={t.m:,} leaves, height h={t.h}")
    print(f"hierarchy: {rel.structure.describe}" + ("" if rel.structure.private else
                                                    " (the released node list may reveal which nodes have counts)"))
    print(f"noise: {noise.describe}, split={rel.split}; sensitivity {meta['sensitivity']['norm']} = "
          f"{meta['sensitivity']['value']:.4g}; per-level scales (root first): {scales}")
    if args.levels is not None:
        print(f"unit of privacy: {meta['unit_of_privacy']}")
    expected = rel.expected_total_sq_error
    print(f"method: {meta['method_label']}; expected total squared error (analytic, Σ variance): "
          + (f"{expected:.6g}" if np.isfinite(expected) else "no closed form for this method"))
    print(f"wrote {len(table):,} rows (node,parent,noisy,released,variance,std) to {args.output} "
          f"and its description to {args.output}.meta.json")
    return 0


def _plain(rel) -> tuple[str, ...]:
    """The columns of a release table holding number text (written unquoted, never escaped): those formatted
    with the release (``TreeRelease.text_columns``: the variance and its root) and the ids of
    an unlabelled tree (input positions, formatted while the tree is built: :func:`dpviz.tree.io.load_tree_file`
    under :func:`~dpviz.tree.io.identity_early`)."""
    return rel.text_columns + (("node", "parent") if rel.tree.label_source is None else ())


def _describe_structure(args: argparse.Namespace) -> int:
    _output(args)
    recs = _records(args)  # records: the levels' values make the template (ids "a / b / c", as --hierarchy joins)
    data = _load(args) if recs is None else records_tree(args.input, recs.pop("levels"), **recs)
    # ids as they are (no formula escaping): the template is read back as a declaration, and an escaped
    # id would no longer match its counts
    write_tree_csv(describe_structure(data), args.output, inputs=_inputs(args), raw_text=True)
    print(DESCRIBE_NOTICE)
    print(f"wrote the hierarchy of {data.name} ({data.tree.n:,} nodes, node,parent) to {args.output}: pass it "
          f"as `tree release DATA --hierarchy {args.output}` once reviewed")
    return 0


def _consistency(args: argparse.Namespace) -> int:
    _output(args)
    src = require_regular_file(args.input, "input")
    table = read_table(src, max_bytes=args.max_bytes, max_rows=args.max_nodes, check_header=noisy_columns)
    tree, value, var = noisy_tree_from_table(table, name=src.name, max_nodes=args.max_nodes)
    write_tree_csv(node_table(tree, value=gmc(plan(tree, var), value)), args.output, inputs=[src])
    print(f"wrote the optimal consistent estimate of {tree.n:,} nodes to {args.output}")
    return 0


def _generate(args: argparse.Namespace) -> int:
    from dpviz.tree import synthetic

    _output(args)
    size = synthetic.planned_size(args.kind, k=args.k, height=args.height, nodes=args.nodes)
    synthetic.check_size(size, args.max_nodes, "--max-nodes", per_node=synthetic.GENERATE_BYTES_PER_NODE)
    synthetic.check_lam(args.lam, size)
    rng = np.random.default_rng(args.seed)
    if args.kind == "complete":
        data = synthetic.complete_tree(args.k, args.height, args.lam, rng)
    else:
        data = synthetic.make(args.kind, args.nodes, args.lam, rng)
    t = data.tree
    import pandas as pd  # here: a release never imports pandas (a quarter of a second of start-up)

    counts = pd.array(np.full(t.n, pd.NA), dtype="Int64")  # empty on internal nodes
    counts[t.n1:] = data.x.astype(np.int64)
    write_tree_csv(node_table(t, count=counts), args.output)
    print(f"wrote {data.name} ({t.n:,} nodes) to {args.output}")
    return 0


def _properties(args: argparse.Namespace) -> int:
    from dpviz.tree.properties import children_counts, depths, subtree_sizes

    _output(args)
    data = _load(args)
    t = data.tree
    write_tree_csv(node_table(t, depth=depths(t), height=t.height, children=children_counts(t),
                              subtree_size=subtree_sizes(t)), args.output, inputs=[_input_path(args.input)])
    print(f"wrote the properties of {t.n:,} nodes to {args.output}")
    return 0


def _propagate(args: argparse.Namespace) -> int:
    from dpviz.tree.propagation import partial_propagation

    _output(args)
    data = _load(args)
    t = data.tree
    if args.steps is not None and args.steps > t.h:
        raise InputError(f"--steps must lie in 1..{t.h}: the tree has {t.h} height levels (got {args.steps})")
    v = np.ones(t.n) if args.vector == "ones" else data.v
    z = partial_propagation(t, v, args.direction, args.steps)
    write_tree_csv(node_table(t, value=z), args.output, inputs=[_input_path(args.input)])
    print(f"wrote {args.direction}ward propagation of {args.vector} ({int(np.isfinite(z).sum()):,} nodes reached) "
          f"to {args.output}")
    return 0


def _matrix(args: argparse.Namespace) -> int:
    from dpviz.tree.properties import DEFAULT_MAX_NNZ

    _output(args)
    data = _load(args)
    t = data.tree
    if not 0 <= args.k < t.h:
        raise InputError(f"--k must lie in 0..{t.h - 1} for a tree of height {t.h}")
    nk = t.n_k(args.k)
    max_nnz = args.max_nnz or DEFAULT_MAX_NNZ
    if args.which == "Ginv":  # Prop. 7: row i holds the depth of i ones; T^(k)'s block is its own G^-1
        nnz = int(t.depth[:nk].sum(dtype=np.int64))
        if nnz > max_nnz:
            raise InputError(f"G^-1 of T^({args.k}) has {nnz:,} non-zeros, more than the limit of {max_nnz:,}; "
                             "choose a larger --k, or raise the limit with --max-nnz N")
        from dpviz.tree.properties import ancestor_indicator

        mat = ancestor_indicator(t if args.k == 0 else t.subtree(args.k), max_nnz=max_nnz).tocoo()
    else:
        mat = MATRICES[args.which](t).tocsr()
        mat = mat[:nk, : min(nk, mat.shape[1])].tocoo()
    ids = data.node_ids
    col_ids = ids if args.which != "M" else ids[: t.n1]
    import pandas as pd

    write_tree_csv(pd.DataFrame({"row": ids[mat.row], "col": col_ids[mat.col], "value": mat.data}), args.output,
                   inputs=[_input_path(args.input)])
    print(f"wrote {args.which} of T^({args.k}) ({nk:,} rows, {mat.nnz:,} non-zeros) to {args.output}")
    return 0
