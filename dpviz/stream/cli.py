"""``python -m dpviz stream simulate|release|weights|matrix|variance``: continual counting from the command line.

* ``simulate`` — seeded continuous noise, one or several mechanisms on one seed, the truth and the
  empirical error shown and written (``true_total``): **not a private release**.
* ``release`` — one mechanism, discrete noise from the OS CSPRNG (no ``--seed``), written atomically
  with a ``.meta.json``; stdout shows only public facts (mechanism, budget, horizon, sensitivity,
  analytic variances).
* ``weights`` / ``matrix`` / ``variance`` — structure views (no data).

``--mechanism`` names the strategy (naive, binary, fenwick, fenwick-fda, honaker, sqrt); the noise
flags are the shared ones of :mod:`dpviz.core.cliargs`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.sparse as sp

from dpviz import ledger
from dpviz.core import cliargs
from dpviz.core.modes import RELEASE_NOTICE, SIMULATION_NOTICE, output_name
from dpviz.core.noise import FAMILIES
from dpviz.core.registry import SAMPLE_PREFIX, capability
from dpviz.core.tables import write_release, write_table
from dpviz.stream.fenwick import reconstruction_matrix, strategy_matrix
from dpviz.core.registry import source_stem
from dpviz.stream.io import load_source
from dpviz.stream.private_release import check_release, release, release_metadata, release_table, simulation_table
from dpviz.stream.simulation import make_mechanism, mechanism_list, simulate
from dpviz.stream.strategies import LABELS, MECHANISM_NAMES
from dpviz.stream.weights import fda_weights

CAP = "stream"


def register(groups: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the ``stream`` parser with its sub-commands to ``groups``."""
    cap = capability(CAP)
    stream = groups.add_parser("stream", help=cap.cli_help,
                               description=__doc__.splitlines()[0],
                               epilog=f"Unit of privacy: {cap.unit_of_privacy}.")
    subs = stream.add_subparsers(dest="stream_command", required=True)
    samples = ",".join(s.name for s in cap.samples)

    s = subs.add_parser("simulate", help="simulation (seeded, truth shown) — not a private release",
                        description="Simulate one or several mechanisms on one seed: continuous noise, the true "
                                    "running totals and the empirical RMSE. Not a private release.")
    s.add_argument("input", help=f"CSV with a count column (optional timestamp column), or sample:{{{samples}}}")
    s.add_argument("--mechanism", required=True,
                   help=f"strategy: one of {', '.join(MECHANISM_NAMES)}, a comma list, or all")
    cliargs.add_noise_args(s)
    cliargs.add_simulate_args(s)
    s.add_argument("--horizon", type=int, help="number of releases N (default: the series length)")
    _column_args(s)
    s.add_argument("--output", help="CSV to write (default: INPUT.stream-simulation.csv; '-' for stdout)")
    s.set_defaults(func=cmd_simulate)

    r = subs.add_parser("release", help="private release: discrete noise from the OS CSPRNG, one mechanism",
                        description="Privately release the running totals of an integer count stream with one "
                                    "mechanism: discrete noise from the OS CSPRNG, fresh every run, no seed.")
    r.add_argument("input", help=f"CSV with an integer count column (optional timestamp column), or sample:{{{samples}}}")
    r.add_argument("--mechanism", required=True, choices=MECHANISM_NAMES,
                   help="strategy (sqrt has no discrete form: simulation only)")
    cliargs.add_noise_args(r)
    cliargs.add_release_args(r)
    r.add_argument("--horizon", type=int, help="number of releases N (default: the series length)")
    _column_args(r)
    r.set_defaults(func=cmd_release)

    w = subs.add_parser("weights", help="optimal Fenwick weights λ (FDA) as node,lambda")
    w.add_argument("--horizon", type=int, required=True, help="number of releases N")
    w.add_argument("--noise", choices=FAMILIES, default="laplace")
    w.add_argument("--output", type=Path, help="CSV to write (default: stdout)")
    w.set_defaults(func=cmd_weights)

    mx = subs.add_parser("matrix", help="the Fenwick strategy M, reconstruction B or weighted ΣM, B Σ⁻¹ as "
                                         "1-based triplets row,col,value (the page's heatmaps)")
    mx.add_argument("--horizon", type=int, required=True, help="number of releases N")
    mx.add_argument("--which", choices=("M", "B", "SigmaM", "BSigmaInv"), default="M",
                    help="M (Alg. 5.2), B (Alg. 5.3), or with the FDA weights Σ = diag(λ): ΣM, BΣ⁻¹ (Eq. 5.8)")
    mx.add_argument("--noise", choices=FAMILIES, default="laplace", help="which FDA weights")
    mx.add_argument("--output", type=Path, help="CSV to write (default: stdout)")
    mx.set_defaults(func=cmd_matrix)

    v = subs.add_parser("variance", help="per-step analytic variance of a mechanism as t,variance")
    v.add_argument("--horizon", type=int, required=True, help="number of releases N")
    v.add_argument("--mechanism", required=True, choices=MECHANISM_NAMES, help="strategy")
    cliargs.add_noise_args(v)
    v.add_argument("--discrete", action="store_true",
                   help="exact variance of the discrete noise a release uses (default: continuous)")
    v.add_argument("--output", type=Path, help="CSV to write (default: stdout)")
    v.set_defaults(func=cmd_variance)
    return stream


def _column_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--count-column", help="name of the count column")
    p.add_argument("--time-column", help="name of the timestamp column")


def _default_family(mechanisms: str) -> str:
    """Gaussian when only sqrt is asked for (it has no Laplace form), else Laplace."""
    names = {m.strip() for m in str(mechanisms).split(",") if m.strip()}
    return "gaussian" if names == {"sqrt"} else "laplace"


def _input_path(source: str) -> str | None:
    return None if source.startswith(SAMPLE_PREFIX) else source


def _write(df: pd.DataFrame, output: Path | None, inputs: list[str | None] = ()) -> None:
    write_table(df, output, inputs=inputs)


def _summary(line: str, to_stdout: bool) -> None:
    """Human summary: stdout when the CSV goes to a file, stderr when the CSV is on stdout."""
    print(line, file=sys.stdout if to_stdout else sys.stderr)


def cmd_weights(args: argparse.Namespace) -> int:
    w = fda_weights(args.horizon, args.noise)
    _write(pd.DataFrame({"node": np.arange(1, w.lam.size + 1), "lambda": w.lam}), args.output)
    if args.noise == "laplace":
        mse = ("λ scaled to L1 sensitivity Δ₁ = 1; Laplace b = 1/ε, node variance 2/(ε² λ_i²): "
               "total MSE (5.9) = 2/ε² × objective")
    else:
        mse = ("λ scaled to L2 sensitivity Δ₂ = 1; Gaussian σ² = 1/(2ρ), node variance 1/(2ρ λ_i²): "
               "total MSE = objective / (2ρ)")
    _summary(f"objective (5.10): {w.objective:.10g}  (N = {args.horizon}, {args.noise}; {mse})",
             args.output is not None)
    return 0


def cmd_matrix(args: argparse.Namespace) -> int:
    n = args.horizon
    if args.which in ("M", "SigmaM"):
        mat = sp.csr_array(strategy_matrix(n))
    else:
        mat = sp.csr_array(reconstruction_matrix(n))
    if args.which in ("SigmaM", "BSigmaInv"):
        lam = fda_weights(n, args.noise).lam
        mat = sp.diags_array(lam) @ mat if args.which == "SigmaM" else mat @ sp.diags_array(1.0 / lam)
    coo = sp.coo_array(mat)
    _write(pd.DataFrame({"row": coo.row + 1, "col": coo.col + 1, "value": coo.data}), args.output)
    _summary(f"{args.which} for N = {n}: {coo.nnz:,} non-zeros", args.output is not None)
    return 0


def cmd_variance(args: argparse.Namespace) -> int:
    noise = cliargs.noise_from_args(args, discrete=args.discrete, default=_default_family(args.mechanism))
    mech = make_mechanism(args.mechanism, args.horizon, noise)
    var = mech.per_step_variance()
    _write(pd.DataFrame({"t": np.arange(1, var.size + 1), "variance": var}), args.output)
    _summary(f"{mech.name}: {noise.describe}, sensitivity {mech.sensitivity:.6g}, total MSE "
             f"{var.sum():.6g}, mean {var.mean():.6g}, max {var.max():.6g}", args.output is not None)
    return 0


def cmd_simulate(args: argparse.Namespace) -> int:
    noise = cliargs.noise_from_args(args, discrete=False, default=_default_family(args.mechanism))
    names = mechanism_list(args.mechanism, noise.family)
    seed = cliargs.seed_from_args(args)
    to_stdout = args.output == "-"
    output = None if to_stdout else Path(args.output or output_name(CAP, "simulate", source_stem(args.input)))
    _summary(SIMULATION_NOTICE, not to_stdout)
    data = load_source(args.input, count_column=args.count_column, time_column=args.time_column)
    sim = simulate(data.counts, names, noise, seed=seed, horizon=args.horizon)
    table = pd.concat([simulation_table(rel, data.counts, data.timestamps, data.time_column)
                       for rel in sim.releases.values()], ignore_index=True)
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
    cliargs.refuse_seed(args, CAP)
    noise = cliargs.noise_from_args(args, discrete=True)
    check_release(args.mechanism, noise)
    data = load_source(args.input, count_column=args.count_column, time_column=args.time_column)
    rel = release(data.counts, args.mechanism, noise, horizon=args.horizon)
    # the ledger is charged first (exit 3 if over the dataset's budget), then the output is written
    with ledger.charge(args, CAP, args.input, data, noise, args.mechanism):
        path = write_release(release_table(rel, data.timestamps, data.time_column), args.output,
                             release_metadata(rel), inputs=[_input_path(args.input)])
    var = rel.variance
    print(RELEASE_NOTICE)
    print(f"{rel.mechanism} ({LABELS[rel.mechanism]}): {noise.describe}; horizon N = {rel.horizon}; "
          f"{'L1' if noise.family == 'laplace' else 'L2'} sensitivity {rel.sensitivity:.6g}")
    print(f"analytic variance of the released totals: total {var.sum():.6g}, mean {var.mean():.6g}, "
          f"max {var.max():.6g}")
    print(f"wrote {path} and {path.name}.meta.json")
    return 0
