"""``python -m dpviz histogram simulate|release|describe-structure``: histograms and range queries over declared bins.

* ``simulate`` — seeded continuous noise, every method on one draw, errors on the bins and on random ranges
  against the truth: **not a private release**.
* ``release`` — one method, discrete noise from the OS CSPRNG (no ``--seed``), charged to the privacy ledger
  first, then written atomically with a ``.meta.json``; stdout shows only public facts.
* ``describe-structure`` — a bins declaration template read from the data (to review before a release).

The bins are public and declared (``--bins FILE.json``; samples ship theirs); ``--structure-from-data`` opts
out and every output then says so.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from dpviz.core import charging as ledger
from dpviz.core import cliargs
from dpviz.core.registry import SAMPLE_PREFIX, capability, source_stem
from dpviz.core.structure import add_structure_from_data_arg
from dpviz.histogram.estimators import DEFAULT_METHOD, METHOD_LABELS, METHODS
from dpviz.histogram.strategy import BRANCHINGS

CAP = "histogram"


def register(groups: argparse._SubParsersAction) -> argparse.ArgumentParser:
    cap = capability(CAP)
    top = groups.add_parser(CAP, help=cap.cli_help, description=__doc__.splitlines()[0],
                            epilog=f"Unit of privacy: {cap.unit_of_privacy}.")
    subs = top.add_subparsers(dest="histogram_command", required=True)
    samples = ",".join(s.name for s in cap.samples)
    source_help = (f"CSV with a header: counts (columns bin,count) or records (one per row, the value in --column), "
                   f"or sample:{{{samples}}}")

    s = subs.add_parser("simulate", help="simulation (seeded, truth shown) — not a private release")
    _common(s, source_help)
    s.add_argument("--methods", default="all", help=f"comma list of {', '.join(METHODS)}, or all")
    s.add_argument("--queries", type=int, default=10_000, help="random ranges scored (default 10,000)")
    cliargs.add_noise_args(s)
    cliargs.add_simulate_args(s)
    s.add_argument("--output", type=Path, help="CSV of the per-bin results (default: none; the summary is printed)")
    s.set_defaults(func=cmd_simulate)

    r = subs.add_parser("release", help="private release: discrete noise from the OS CSPRNG, one method, charged")
    _common(r, source_help)
    r.add_argument("--method", choices=METHODS, default=DEFAULT_METHOD, help="post-processing (default gmc)")
    cliargs.add_noise_args(r)
    cliargs.add_release_args(r)
    r.set_defaults(func=cmd_release)

    d = subs.add_parser("describe-structure", help="a bins declaration template read from the data (review it)")
    d.add_argument("input", help=source_help)
    d.add_argument("--column", help="the records' column (default: the first)")
    d.add_argument("--output", type=Path, help="JSON to write (default: stdout)")
    d.set_defaults(func=cmd_describe)
    return top


def _common(p: argparse.ArgumentParser, source_help: str) -> None:
    p.add_argument("input", help=source_help)
    p.add_argument("--bins", help="the declared bins (JSON: edges, range or labels); samples ship theirs")
    p.add_argument("--column", help="the records' column (default: the first)")
    p.add_argument("--branching", type=int, choices=BRANCHINGS, default=2, help="fan-out b of the hierarchy")
    p.add_argument("--split", choices=("uniform", "geometric"), default="uniform",
                   help="budget split over the hierarchy's levels")
    add_structure_from_data_arg(p, "the bins")


def _input_path(spec: str) -> str | None:
    return None if str(spec).startswith(SAMPLE_PREFIX) else spec


def _load(args: argparse.Namespace):
    from dpviz.histogram.io import load

    if str(args.input).startswith(SAMPLE_PREFIX) and (args.bins or args.structure_from_data):
        from dpviz.errors import InputError

        raise InputError("--bins/--structure-from-data: a sample ships its declared bins; give a file to declare your own")
    return load(args.input, bins=args.bins, column=args.column, structure_from_data=args.structure_from_data)


def cmd_simulate(args: argparse.Namespace) -> int:
    import numpy as np

    from dpviz.core.modes import SIMULATION_NOTICE
    from dpviz.core.tables import check_destination, write_table
    from dpviz.histogram.release import simulate

    noise = cliargs.noise_from_args(args, discrete=False)
    seed = cliargs.seed_from_args(args)
    if args.output is not None:
        check_destination(args.output, [_input_path(args.input)])
    data = _load(args)
    sim = simulate(data, noise, args.methods, np.random.default_rng(seed), branching=args.branching,
                   split=args.split, q=max(1, int(args.queries)))
    print(SIMULATION_NOTICE)
    print(f"seed {seed} ({noise.describe}, {data.bins.m} bins, b = {args.branching}); retype --seed {seed} to "
          "reproduce this draw")
    for row in sim.table.itertuples(index=False):
        print(f"  {row.method:<12} RMSE per bin {row.rmse_bins:.6g}, on random ranges {row.rmse_ranges:.6g}  "
              f"({METHOD_LABELS[row.method]})")
    if args.output is not None:
        import pandas as pd

        table = pd.DataFrame({"bin": list(data.bins.labels), "true": data.x,
                              **{f"released_{m}": v for m, v in sim.released.items()}})
        write_table(table, args.output, inputs=[_input_path(args.input)])
        print(f"wrote {args.output} (simulation: holds the true counts)")
    return 0


def cmd_release(args: argparse.Namespace) -> int:
    from dpviz.core.modes import RELEASE_NOTICE
    from dpviz.core.tables import check_destination, write_release
    from dpviz.histogram.release import release

    cliargs.refuse_seed(args, CAP)
    noise = cliargs.noise_from_args(args, discrete=True)
    check_destination(args.output, [_input_path(args.input)])
    data = _load(args)
    rel = release(data, noise, method=args.method, branching=args.branching, split=args.split,
                  source=source_stem(args.input))
    inputs = [p for p in (args.bins,) if p]
    with ledger.charge(args, CAP, args.input, data, noise, args.method, inputs=inputs):
        path = write_release(rel.table(), args.output, rel.metadata(), inputs=[_input_path(args.input), *inputs],
                             raw_text=args.raw_text)
    print(RELEASE_NOTICE)
    print(f"{rel.method} ({METHOD_LABELS[rel.method]}): {noise.describe}; {data.bins.m} bins; "
          f"{'L1' if noise.family == 'laplace' else 'L2'} sensitivity {rel.sensitivity:.6g}")
    if not rel.structure.private:
        print(rel.structure.describe)
    print(f"wrote {path} and {path.name}.meta.json")
    return 0


def cmd_describe(args: argparse.Namespace) -> int:
    from dpviz.core.tables import write_text
    from dpviz.histogram.io import bins_template, load

    data = load(args.input, column=args.column, structure_from_data=True)
    text = bins_template(data)
    if args.output is None:
        sys.stdout.write(text)
    else:
        write_text(text, args.output, inputs=[_input_path(args.input)])
        print(f"wrote {args.output}")
    return 0
