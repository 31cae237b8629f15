"""``python -m dpviz stream simulate|release|weights|matrix|variance``: continual counting from the command line.

* ``simulate`` — seeded continuous noise, one or several mechanisms on one seed, the truth and the
  empirical error shown and written (``true_total``): **not a private release**.
* ``release`` — one mechanism, discrete noise from the OS CSPRNG (no ``--seed``), written atomically
  with a ``.meta.json``; stdout shows only public facts (mechanism, budget, horizon, sensitivity,
  analytic variances).
* ``weights`` / ``matrix`` / ``variance`` — structure views (no data).

``--mechanism`` names the strategy (naive, binary, fenwick, fenwick-fda, honaker, sqrt, banded, blt,
sqrt-weighted, ...;
``release`` without it takes the best releasable one for ``--target max|mean``); the noise flags are the
shared ones of :mod:`dpviz.core.cliargs`.

**Caps, checked before any work.** The horizon N and the rows of an input file are capped at
:data:`~dpviz.stream.fenwick.MAX_STEPS` (``--max-steps``), an input file at
:data:`~dpviz.stream.io.MAX_BYTES` (``--max-bytes``); every command estimates its memory from N
(:data:`STEP_BYTES`, measured at N = 2^20) before allocating and refuses, with the estimate, the cap and
the flag that raises it, an N above the cap or beyond this machine's memory (exit 2).

Startup: this registrar imports no pandas, SciPy or stream computation at module level; each command
imports what it needs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from dpviz.core import cliargs
from dpviz.core.noise import FAMILIES
from dpviz.core.registry import SAMPLE_PREFIX, capability
from dpviz.stream.fenwick import MAX_STEPS, check_steps, strategy_nnz
from dpviz.stream.io import CAPS_HELP, MAX_BYTES, MAX_LINE_BYTES
from dpviz.stream.strategy import LABELS, MECHANISM_NAMES

CAP = "stream"
STEP_BYTES = {"weights": 128, "variance": 256, "simulate": 512, "release": 640}
"""Memory estimate per step of each command (``simulate``: per mechanism): peak RSS above the interpreter's,
measured at N = 2^20 (100-520 bytes), rounded up."""
MATRIX_BYTES = 128
"""Memory estimate of ``matrix`` per non-zero of M or B (about (log2 N + 1)/2 per step; 88 bytes measured)."""


def register(groups: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the ``stream`` parser with its sub-commands to ``groups``."""
    cap = capability(CAP)
    stream = groups.add_parser("stream", help=cap.cli_help,
                               description=__doc__.splitlines()[0],
                               epilog=f"Unit of privacy: {cap.unit_of_privacy}. Caps: {CAPS_HELP}.")
    subs = stream.add_subparsers(dest="stream_command", required=True)
    samples = ",".join(s.name for s in cap.samples)
    source_help = (f"CSV with a header and a count column (optional timestamp column), or sample:{{{samples}}}; "
                   f"{CAPS_HELP} (--max-steps, --max-bytes, --max-line-bytes)")

    s = subs.add_parser("simulate", help="simulation (seeded, truth shown) — not a private release",
                        description="Simulate one or several mechanisms on one seed: continuous noise, the true "
                                    "running totals and the empirical RMSE. Not a private release.")
    s.add_argument("input", help=source_help)
    s.add_argument("--mechanism", required=True,
                   help=f"strategy: one of {', '.join(MECHANISM_NAMES)}, a comma list, or all")
    cliargs.add_noise_args(s)
    cliargs.add_simulate_args(s)
    _horizon_arg(s, required=False)
    _column_args(s)
    s.add_argument("--output", help="CSV to write (default: INPUT.stream-simulation.csv; '-' for stdout)")
    s.set_defaults(func=cmd_simulate)

    r = subs.add_parser("release", help="private release: discrete noise from the OS CSPRNG, one mechanism",
                        description="Privately release the running totals of an integer count stream with one "
                                    "mechanism: discrete noise from the OS CSPRNG, fresh every run, no seed.")
    r.add_argument("input", help=source_help.replace("a count column", "an integer count column"))
    r.add_argument("--mechanism", default=None, choices=MECHANISM_NAMES,
                   help="strategy (default: the best releasable one for --target at this horizon and noise, named in "
                        "the output and the metadata's mechanism_choice; sqrt, banded, blt, sqrt-weighted, "
                        "blt-weighted: discrete Gaussian on the lattice 2^-k Z, give --rho or --epsilon/--delta)")
    r.add_argument("--target", choices=("max", "mean"), default="max",
                   help="without --mechanism: pick the mechanism with the least worst-step (max, default) or mean "
                        "per-step analytic variance")
    cliargs.add_noise_args(r)
    cliargs.add_release_args(r)
    _horizon_arg(r, required=False)
    _column_args(r)
    r.set_defaults(func=cmd_release)

    w = subs.add_parser("weights", help="optimal Fenwick weights λ (FDA) as node,lambda")
    _horizon_arg(w, required=True)
    w.add_argument("--noise", choices=FAMILIES, default="laplace")
    w.add_argument("--output", type=Path, help="CSV to write (default: stdout)")
    w.set_defaults(func=cmd_weights)

    mx = subs.add_parser("matrix", help="the Fenwick strategy M, reconstruction B or weighted ΣM, B Σ⁻¹ as "
                                         "1-based triplets row,col,value (the page's heatmaps)")
    _horizon_arg(mx, required=True)
    mx.add_argument("--which", choices=("M", "B", "SigmaM", "BSigmaInv"), default="M",
                    help="M (Alg. 5.2), B (Alg. 5.3), or with the FDA weights Σ = diag(λ): ΣM, BΣ⁻¹ (Eq. 5.8)")
    mx.add_argument("--noise", choices=FAMILIES, default="laplace", help="which FDA weights")
    mx.add_argument("--output", type=Path, help="CSV to write (default: stdout)")
    mx.set_defaults(func=cmd_matrix)

    v = subs.add_parser("variance", help="per-step analytic variance of a mechanism as t,variance")
    _horizon_arg(v, required=True)
    v.add_argument("--mechanism", required=True, choices=MECHANISM_NAMES, help="strategy")
    cliargs.add_noise_args(v)
    v.add_argument("--discrete", action="store_true",
                   help="exact variance of the discrete noise a release uses (default: continuous)")
    v.add_argument("--output", type=Path, help="CSV to write (default: stdout)")
    v.set_defaults(func=cmd_variance)
    return stream


def _horizon_arg(p: argparse.ArgumentParser, *, required: bool) -> None:
    p.add_argument("--horizon", type=int, required=required,
                   help="number of releases N" + ("" if required else " (default: the series length)"))
    p.add_argument("--max-steps", type=_cap, default=MAX_STEPS,
                   help=f"cap on the horizon N and on the rows of the input (default {MAX_STEPS:,} = 2^20); the "
                        "memory a command needs is estimated from N and checked before any work")


def _cap(text: str) -> int:
    """argparse ``type`` of a cap: a positive integer (a bad cap exits 2 before anything runs)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _column_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--count-column", help="name of the count column (CSV input)")
    p.add_argument("--time-column", help="name of the timestamp column (CSV input)")
    p.add_argument("--max-bytes", type=_cap, default=MAX_BYTES,
                   help=f"cap on the size of the input file (default {MAX_BYTES:,} bytes), checked before reading")
    p.add_argument("--max-line-bytes", type=_cap, default=MAX_LINE_BYTES,
                   help=f"cap on the length of a line, the header included (default {MAX_LINE_BYTES:,} bytes), "
                        "checked while reading")
    p.add_argument("--bucket", default=None, metavar="day|hour|N",
                   help="count events: the input holds one row per event (CSV, gzip CSV, Parquet or a folder of "
                        "Parquet files) with its time in --time-column; the stream is the number of events per day, "
                        "hour or N seconds (the unit of privacy becomes the event, or the person with "
                        "--max-contributions)")
    p.add_argument("--start", default=None, metavar="DATE",
                   help="with --bucket: the declared first time (ISO date/time; a release of events needs --start and "
                        "--end, or it reads the range from the events: not private)")
    p.add_argument("--end", default=None, metavar="DATE", help="with --bucket: the declared last time (inclusive)")
    p.add_argument("--structure-from-data", action="store_true",
                   help="with --bucket, in a release: read the time range from the events instead of --start/--end. "
                        "NOT private; the output says so")
    cliargs.add_records_args(p, needs="with --bucket")


def _default_family(mechanisms: str) -> str:
    """Gaussian when only real factorisations (sqrt, banded, blt: no Laplace form) are asked for, else Laplace."""
    from dpviz.stream.strategy import LATTICE_RELEASABLE

    names = {m.strip() for m in str(mechanisms).split(",") if m.strip()}
    return "gaussian" if names and names <= set(LATTICE_RELEASABLE) else "laplace"


def _input_path(source: str) -> str | None:
    return None if source.startswith(SAMPLE_PREFIX) else source


def _summary(line: str, to_stdout: bool) -> None:
    """Human summary: stdout when the CSV goes to a file, stderr when the CSV is on stdout."""
    print(line, file=sys.stdout if to_stdout else sys.stderr)


def _load(args: argparse.Namespace, per_step: int):
    """The input under the caps (bytes, rows; an explicit --horizon checked first), and its horizon N."""
    from dpviz.stream.io import load as load_source

    if args.horizon is not None:
        check_steps(args.horizon, args.max_steps, per_step=per_step)
    if getattr(args, "bucket", None) is not None:  # events counted per bucket (dpviz.core.records)
        from dpviz.stream.io import stream_from_events

        if args.time_column is None or args.count_column is not None:
            from dpviz.errors import InputError
            raise InputError("--bucket counts events: give --time-column (and no --count-column: each row counts 1)")
        if args.start is None and getattr(args, "func", None) is cmd_release and not args.structure_from_data:
            from dpviz.errors import InputError
            raise InputError("--start/--end: a release of events publishes their time range, which must be declared, "
                             "not read from the records: pass --start DATE --end DATE, or --structure-from-data to "
                             "opt out (not private)")
        data = stream_from_events(args.input, args.time_column, args.bucket, person=args.person_column,
                                  max_contributions=args.max_contributions, max_steps=args.max_steps,
                                  max_bytes=args.max_bytes, dask=args.workers or args.scheduler, start=args.start,
                                  end=args.end)
    else:
        for flag in ("person_column", "max_contributions", "workers", "scheduler", "start", "end"):
            if getattr(args, flag, None) is not None:
                from dpviz.errors import InputError
                raise InputError(f"--{flag.replace('_', '-')}: only with --bucket (the input as events)")
        data = load_source(args.input, count_column=args.count_column, time_column=args.time_column,
                           max_steps=args.max_steps, max_bytes=args.max_bytes, max_line_bytes=args.max_line_bytes)
    n = check_steps(len(data) if args.horizon is None else args.horizon, args.max_steps, per_step=per_step)
    return data, n


def cmd_weights(args: argparse.Namespace) -> int:
    n = check_steps(args.horizon, args.max_steps, per_step=STEP_BYTES["weights"])  # before any import or work
    import numpy as np
    import pandas as pd

    from dpviz.core.tables import check_destination, write_table
    from dpviz.stream.weights import fda_weights

    if args.output is not None:
        check_destination(args.output)
    w = fda_weights(n, args.noise)
    write_table(pd.DataFrame({"node": np.arange(1, w.lam.size + 1), "lambda": w.lam}), args.output)
    if args.noise == "laplace":
        mse = ("λ scaled to L1 sensitivity Δ₁ = 1; Laplace b = 1/ε, node variance 2/(ε² λ_i²): "
               "total MSE (5.9) = 2/ε² × objective")
    else:
        mse = ("λ scaled to L2 sensitivity Δ₂ = 1; Gaussian σ² = 1/(2ρ), node variance 1/(2ρ λ_i²): "
               "total MSE = objective / (2ρ)")
    _summary(f"objective (5.10): {w.objective:.10g}  (N = {n}, {args.noise}; {mse})", args.output is not None)
    return 0


def cmd_matrix(args: argparse.Namespace) -> int:
    nnz = strategy_nnz(args.horizon)  # B has as many non-zeros as M (Σ lowbit = Σ popcount)
    n = check_steps(args.horizon, args.max_steps, per_step=MATRIX_BYTES * nnz / args.horizon)
    import pandas as pd
    import scipy.sparse as sp

    from dpviz.core.tables import check_destination, write_table
    from dpviz.stream.fenwick import reconstruction_matrix, strategy_matrix
    from dpviz.stream.weights import fda_weights

    if args.output is not None:
        check_destination(args.output)
    mat = sp.csr_array(strategy_matrix(n) if args.which in ("M", "SigmaM") else reconstruction_matrix(n))
    if args.which in ("SigmaM", "BSigmaInv"):
        lam = fda_weights(n, args.noise).lam
        mat = sp.diags_array(lam) @ mat if args.which == "SigmaM" else mat @ sp.diags_array(1.0 / lam)
    coo = sp.coo_array(mat)
    write_table(pd.DataFrame({"row": coo.row + 1, "col": coo.col + 1, "value": coo.data}), args.output)
    _summary(f"{args.which} for N = {n}: {coo.nnz:,} non-zeros", args.output is not None)
    return 0


def cmd_variance(args: argparse.Namespace) -> int:
    n = check_steps(args.horizon, args.max_steps, per_step=STEP_BYTES["variance"])
    import numpy as np
    import pandas as pd

    from dpviz.core.tables import check_destination, write_table
    from dpviz.stream.mechanism import make_mechanism

    noise = cliargs.noise_from_args(args, discrete=args.discrete, default=_default_family(args.mechanism))
    if args.output is not None:
        check_destination(args.output)
    mech = make_mechanism(args.mechanism, n, noise)
    var = mech.per_step_variance()
    write_table(pd.DataFrame({"t": np.arange(1, var.size + 1), "variance": var}), args.output)
    _summary(f"{mech.name}: {noise.describe}, sensitivity {mech.sensitivity:.6g}, total MSE "
             f"{var.sum():.6g}, mean {var.mean():.6g}, max {var.max():.6g}", args.output is not None)
    return 0


def cmd_simulate(args: argparse.Namespace) -> int:
    import pandas as pd

    from dpviz.core.modes import SIMULATION_NOTICE, output_name
    from dpviz.core.registry import source_stem
    from dpviz.core.tables import check_destination, write_table
    from dpviz.stream.mechanism import mechanism_list
    from dpviz.stream.release import simulate, simulation_table

    noise = cliargs.noise_from_args(args, discrete=False, default=_default_family(args.mechanism))
    names = mechanism_list(args.mechanism, noise.family)
    seed = cliargs.seed_from_args(args)
    to_stdout = args.output == "-"
    output = None if to_stdout else Path(args.output or output_name(CAP, "simulate", source_stem(args.input)))
    if output is not None:
        check_destination(output, [_input_path(args.input)])
    data, n = _load(args, STEP_BYTES["simulate"] * len(names))
    from dpviz.core.records import per_record_noise
    sim = simulate(data, per_record_noise(noise, args.max_contributions), names, seed, horizon=n)
    table = pd.concat([simulation_table(rel, data.counts, data.timestamps, data.time_column)
                       for rel in sim.releases.values()], ignore_index=True)
    _summary(SIMULATION_NOTICE, not to_stdout)  # after every check: an error is one line on stderr
    write_table(table, output, inputs=[_input_path(args.input)])
    _summary(f"seed {seed} ({noise.describe}, horizon {sim.horizon}, {len(data)} steps); retype --seed {seed} "
             "to reproduce this draw", not to_stdout)
    for name, rel in sim.releases.items():
        _summary(f"  {name:<12} sensitivity {rel.sensitivity:.6g}, analytic total MSE {rel.variance.sum():.6g}, "
                 f"empirical RMSE {rel.empirical_rmse(data.counts):.6g}  ({LABELS[name]})", not to_stdout)
    if output is not None:
        _summary(f"wrote {output} (simulation: holds true_total)", True)
    return 0


def cmd_release(args: argparse.Namespace) -> int:
    from dpviz.core import charging as ledger
    from dpviz.core.modes import RELEASE_NOTICE
    from dpviz.core.tables import check_destination, write_release
    from dpviz.stream.metrics import VarianceSummary
    from dpviz.stream.release import check_release, release

    cliargs.refuse_seed(args, CAP)
    noise = cliargs.noise_from_args(args, discrete=True)
    if args.mechanism is not None:
        check_release(args.mechanism, noise)
    check_destination(args.output, [_input_path(args.input)])
    data, n = _load(args, STEP_BYTES["release"])
    from dpviz.core.records import RecordsSource, per_record_noise, person_metadata
    rel = release(data, per_record_noise(noise, args.max_contributions), mechanism=args.mechanism, horizon=n,
                  target=args.target)
    meta = rel.metadata() if args.bucket is None else person_metadata(
        rel.metadata(), noise, person=args.person_column, max_contributions=args.max_contributions, source=args.input)
    if args.bucket is not None:
        meta["time_range"] = ({"declared": [args.start, args.end]} if args.start else
                              {"read_from_data": "structure read from the data: not private"})
    # the ledger is charged first (exit 3 if over the dataset's budget), then the output is written
    charged = data if args.bucket is None else RecordsSource(args.input, args.max_bytes)  # events: the records
    with ledger.charge(args, CAP, args.input, charged, noise, rel.mechanism):
        path = write_release(rel.table(), args.output, meta, inputs=[_input_path(args.input)],
                             raw_text=args.raw_text)
    var = VarianceSummary.of(rel.variance)
    print(RELEASE_NOTICE)
    print(f"{rel.mechanism} ({LABELS[rel.mechanism]}): {noise.describe}; horizon N = {rel.horizon}; "
          f"{'L1' if noise.family == 'laplace' else 'L2'} sensitivity {meta['sensitivity']['value']:.6g}")
    if rel.choice is not None:
        print(f"mechanism chosen: {rel.choice['why']} (--target {args.target}; name one with --mechanism)")
    if args.bucket is not None:
        print(f"unit of privacy: {meta['unit_of_privacy']}; the time range is "
              + ("declared (--start/--end)" if args.start else "read from the events: not private"))
    print(f"analytic variance of the released totals: total {var.total:.6g}, mean {var.mean:.6g}, "
          f"max {var.max:.6g}")
    print(f"wrote {path} and {path.name}.meta.json")
    return 0
