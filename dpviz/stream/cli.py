"""``python -m dpviz stream weights|variance|release``: continual counting from the command line."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.sparse as sp

from dpviz.errors import InputError
from dpviz.privacy.mechanisms import fresh_seed
from dpviz.stream.io import SAMPLE_ALIASES, load_sample, read_stream_csv, release_frame
from dpviz.stream.mechanisms import MECHANISM_NAMES, Noise, make_mechanism
from dpviz.stream.fenwick import reconstruction_matrix, strategy_matrix
from dpviz.stream.weights import fda_weights


def register(groups: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the ``stream`` parser with its sub-commands to ``groups``."""
    stream = groups.add_parser("stream", help="continual release of running totals (Fenwick / FDA and peers)",
                               description=__doc__.splitlines()[0])
    subs = stream.add_subparsers(dest="stream_command", required=True)

    w = subs.add_parser("weights", help="optimal Fenwick weights λ (FDA) as node,lambda")
    w.add_argument("--horizon", type=int, required=True, help="number of releases N")
    w.add_argument("--noise", choices=("laplace", "gaussian"), default="laplace")
    w.add_argument("--output", type=Path, help="CSV to write (default: stdout)")
    w.set_defaults(func=cmd_weights)

    mx = subs.add_parser("matrix", help="the Fenwick strategy M, reconstruction B or weighted ΣM, B Σ⁻¹ as "
                                         "1-based triplets row,col,value (the page's heatmaps)")
    mx.add_argument("--horizon", type=int, required=True, help="number of releases N")
    mx.add_argument("--which", choices=("M", "B", "SigmaM", "BSigmaInv"), default="M",
                    help="M (Alg. 5.2), B (Alg. 5.3), or with the FDA weights Σ = diag(λ): ΣM, BΣ⁻¹ (Eq. 5.8)")
    mx.add_argument("--noise", choices=("laplace", "gaussian"), default="laplace", help="which FDA weights")
    mx.add_argument("--output", type=Path, help="CSV to write (default: stdout)")
    mx.set_defaults(func=cmd_matrix)

    v = subs.add_parser("variance", help="per-step analytic variance of a mechanism as t,variance")
    v.add_argument("--horizon", type=int, required=True, help="number of releases N")
    _mechanism_args(v)
    v.add_argument("--output", type=Path, help="CSV to write (default: stdout)")
    v.set_defaults(func=cmd_variance)

    r = subs.add_parser("release", help="release the running totals of a count stream")
    r.add_argument("input", help=f"CSV with a count column (optional timestamp column), or sample:{{{','.join(SAMPLE_ALIASES)}}}")
    _mechanism_args(r)
    r.add_argument("--horizon", type=int, help="number of releases N (default: the series length)")
    r.add_argument("--seed", type=int, help="seed of the noise generator (default: fresh entropy)")
    r.add_argument("--count-column", help="name of the count column")
    r.add_argument("--time-column", help="name of the timestamp column")
    r.add_argument("--output", type=Path, help="CSV to write (default: stdout)")
    r.set_defaults(func=cmd_release)
    return stream


def _mechanism_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--mechanism", required=True, choices=MECHANISM_NAMES)
    p.add_argument("--epsilon", type=float, help="ε (Laplace: ε-DP; Gaussian: with --delta, (ε, δ)-DP)")
    p.add_argument("--noise", choices=("laplace", "gaussian"),
                   help="noise distribution (default: laplace, or gaussian for the sqrt mechanism)")
    p.add_argument("--rho", type=float, help="ρ for Gaussian noise (ρ-zCDP)")
    p.add_argument("--delta", type=float, help="δ for Gaussian noise given --epsilon")


def noise_from_args(args: argparse.Namespace) -> Noise:
    """Laplace(ε), Gaussian(ρ) or Gaussian from (ε, δ) according to the flags."""
    kind = args.noise or ("gaussian" if args.mechanism == "sqrt" else "laplace")
    if kind == "laplace":
        if args.epsilon is None:
            raise InputError("--epsilon: required for Laplace noise")
        if args.rho is not None or args.delta is not None:
            raise InputError("--rho/--delta: only for --noise gaussian")
        return Noise.laplace(args.epsilon)
    if args.rho is not None:
        if args.epsilon is not None or args.delta is not None:
            raise InputError("--rho: give either --rho or --epsilon with --delta, not both")
        return Noise.gaussian(args.rho)
    if args.epsilon is None or args.delta is None:
        raise InputError("--noise gaussian: give --rho, or --epsilon together with --delta")
    return Noise.gaussian_approx(args.epsilon, args.delta)


def _write(df: pd.DataFrame, output: Path | None) -> None:
    if output is None:
        df.to_csv(sys.stdout, index=False, lineterminator="\n")
    else:
        df.to_csv(output, index=False, lineterminator="\n")


def _summary(line: str, output: Path | None) -> None:
    """Human summary: stdout when the CSV goes to a file, stderr when the CSV is on stdout."""
    print(line, file=sys.stdout if output is not None else sys.stderr)


def cmd_weights(args: argparse.Namespace) -> int:
    w = fda_weights(args.horizon, args.noise)
    _write(pd.DataFrame({"node": np.arange(1, w.lam.size + 1), "lambda": w.lam}), args.output)
    _summary(f"objective (5.10): {w.objective:.10g}  (N = {args.horizon}, {args.noise}; "
             f"MSE = 2/ε² × objective for Laplace)", args.output)
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
    _summary(f"{args.which} for N = {n}: {coo.nnz:,} non-zeros", args.output)
    return 0


def cmd_variance(args: argparse.Namespace) -> int:
    mech = make_mechanism(args.mechanism, args.horizon, noise_from_args(args))
    var = mech.per_step_variance()
    _write(pd.DataFrame({"t": np.arange(1, var.size + 1), "variance": var}), args.output)
    _summary(f"{mech.name}: {mech.noise.describe}, sensitivity {mech.sensitivity:.6g}, total MSE "
             f"{var.sum():.6g}, mean {var.mean():.6g}, max {var.max():.6g}", args.output)
    return 0


def cmd_release(args: argparse.Namespace) -> int:
    if args.input.startswith("sample:"):
        data = load_sample(args.input.removeprefix("sample:"))
    else:
        data = read_stream_csv(args.input, count_column=args.count_column, time_column=args.time_column)
    horizon = len(data) if args.horizon is None else args.horizon
    if horizon < len(data):
        raise InputError(f"--horizon: {horizon} is shorter than the stream ({len(data)} steps)")
    mech = make_mechanism(args.mechanism, horizon, noise_from_args(args))
    seed = fresh_seed() if args.seed is None else args.seed
    rel = mech.release(data.counts, np.random.default_rng(seed))
    _write(release_frame(rel, data.timestamps, data.time_column), args.output)
    _summary(f"{mech.name}: released {len(data)} running totals ({mech.noise.describe}, horizon {horizon}, "
             f"seed {seed}, total MSE {rel.variance.sum():.6g})", args.output)
    return 0
