"""``python -m dpviz marginals simulate|release|reconstruct``: marginal tables from the command line.

* ``simulate`` — seeded continuous Gaussian noise, ResidualPlanner or Scalable MWEM, every reconstruction
  method on the same measurements, errors against the true marginals: **not a private release**.
* ``release`` — discrete Gaussian noise from the OS CSPRNG (no ``--seed``), one method (mle or lnn), the
  marginals written atomically as JSON with a ``.meta.json`` (noise, why, every sub-budget); stdout shows
  only public facts (budget, structure, analytic variances).
* ``reconstruct`` — post-processing of given noisy marginal measurements (MEAS.json): no data, no budget.

DATA is a CSV (``--attributes``, ``--bins``, ``--binning`` choose and discretise its columns) or a bundled
sample, ``sample:adult`` / ``sample:titanic``. ``--workload`` is an integer K (all K-way marginals) or a file
(JSON list of attribute lists, or CSV rows). Bad input exits with code 2 and one line on stderr.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from dpviz import ledger
from dpviz.core import cliargs
from dpviz.core.modes import RELEASE_NOTICE, SIMULATION_NOTICE
from dpviz.core.noise import Noise
from dpviz.core.registry import SAMPLE_PREFIX, capability, load_source
from dpviz.core.tables import meta_path, write_text
from dpviz.errors import InputError
from dpviz.ledger import add_ledger_arg
from dpviz.marginals import pipeline
from dpviz.marginals.mwem import DEFAULT_INIT_FRACTION, DEFAULT_ROUNDS

CAP = "marginals"
UNIT = "one record (add or remove one row): every marginal changes in exactly one cell by 1"
DATA_HELP = "CSV of categorical records, or sample:adult / sample:titanic"
WORKLOAD_HELP = ("K (all K-way marginals) or a file: a JSON list of attribute lists, or CSV rows of attribute "
                 "names")


def register(groups) -> argparse.ArgumentParser:
    """Add the ``marginals`` command group to the top-level sub-parsers."""
    m = groups.add_parser("marginals", help=capability(CAP).cli_help,
                          description="Marginal tables of categorical data: simulate (not private), release "
                                      "(discrete noise, OS CSPRNG) and reconstruct (post-processing).",
                          epilog=f"Unit of privacy: {UNIT}.")
    sub = m.add_subparsers(dest="marginals_command", required=True, parser_class=type(m))

    s = sub.add_parser("simulate", help=f"{SIMULATION_NOTICE}: seeded noise, every method, errors vs. the truth",
                       description="Measure once with seeded continuous Gaussian noise, reconstruct with every "
                                   "method, and print the errors against the true marginals. Not a private release.")
    _data_args(s)
    _budget_args(s)
    _mechanism_args(s)
    s.add_argument("--method", default="all", choices=[*pipeline.METHODS, "all"],
                   help="reconstruction(s) to compare (default: all, on the same noise draw)")
    cliargs.add_seed_arg(s, help="noise seed (default: fresh entropy, printed)")
    s.add_argument("--norm", choices=pipeline.NORMS, default="cells",
                   help="error of each marginal divided by its number of cells (default, as the authors' code), "
                        "by N, or not at all")
    _lnn_args(s)
    s.set_defaults(func=cmd_simulate)

    r = sub.add_parser("release", help="private release: discrete Gaussian noise (OS CSPRNG), one method, no truth",
                       description="Privately release the workload marginals: discrete Gaussian noise from the OS "
                                   "CSPRNG, fresh every run, no seed; OUT.json plus OUT.json.meta.json.")
    _data_args(r)
    _budget_args(r)
    _mechanism_args(r)
    r.add_argument("--method", required=True, choices=pipeline.RELEASE_METHODS,
                   help="mle (GReM-MLE/EMP, analytic variance) or lnn (GReM-LNN, every cell ≥ 0)")
    r.add_argument("--output", type=Path, required=True,
                   help="JSON to write atomically (never the input); OUTPUT.meta.json describes the release")
    r.add_argument("--seed", type=int, default=None, help=argparse.SUPPRESS)
    add_ledger_arg(r)
    _lnn_args(r)
    r.set_defaults(func=cmd_release)

    from dpviz.marginals.data import MAX_MEAS_BYTES, MAX_MEAS_MAGNITUDE

    c = sub.add_parser("reconstruct", help="marginals from given noisy marginal measurements (post-processing)",
                       description="Reconstruct workload marginals from noisy marginal measurements (MEAS.json: "
                                   "domain, measurements with sigma, workload). Post-processing: no data, no budget.")
    c.add_argument("input", metavar="MEAS.json", help='{"domain": {...}, "measurements": [...], "workload": [...]}')
    c.add_argument("--method", required=True, choices=pipeline.RELEASE_METHODS,
                   help="mle (EMP: weighted least squares / pseudoinverse) or lnn (GReM-LNN, every cell ≥ 0)")
    c.add_argument("--output", type=Path, required=True, help="JSON to write atomically (never the input)")
    c.add_argument("--max-bytes", type=int, default=None,
                   help=f"size cap of MEAS.json, checked before reading (default {MAX_MEAS_BYTES:,}); numbers must lie "
                        f"within ±{MAX_MEAS_MAGNITUDE:g}")
    _lnn_args(c)
    c.set_defaults(func=cmd_reconstruct)
    return m


def _data_args(p: argparse.ArgumentParser) -> None:
    from dpviz.marginals.data import MAX_BYTES, MAX_COLUMNS, MAX_ROWS

    p.add_argument("data", metavar="DATA", help=DATA_HELP)
    p.add_argument("--workload", required=True, metavar="K|FILE", help=WORKLOAD_HELP)
    p.add_argument("--attributes", help="comma-separated columns to keep (default: all)")
    p.add_argument("--bins", type=int, default=None, help="bins for numeric columns with many values (CSV input)")
    p.add_argument("--binning", choices=("quantile", "width"), default=None,
                   help="numeric columns: equal-frequency (quantile, default) or equal-width bins (CSV input); "
                        "bin edges come from the data and are not private")
    p.add_argument("--max-bytes", type=int, default=None,
                   help=f"CSV size cap, checked before reading (default {MAX_BYTES:,}; gzip: the decompressed size)")
    p.add_argument("--max-rows", type=int, default=None,
                   help=f"CSV data-row cap, checked while reading (default {MAX_ROWS:,})")
    p.add_argument("--max-columns", type=int, default=None,
                   help=f"cap on the CSV columns kept, checked on the header (default {MAX_COLUMNS:,})")


def _budget_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--epsilon", type=float,
                   help="ε of the (ε, δ)-DP guarantee (with --delta); " + cliargs.EPSILON_BOUND_HELP)
    p.add_argument("--delta", type=float, help="δ of the (ε, δ)-DP guarantee (the paper uses 1e-9)")
    p.add_argument("--rho", type=float, help="ρ-zCDP budget instead of --epsilon/--delta")


def _mechanism_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--mechanism", required=True, choices=pipeline.MECHANISMS,
                   help="rp (ResidualPlanner) or mwem (Scalable MWEM)")
    p.add_argument("--rounds", type=int, default=None,
                   help=f"Scalable MWEM rounds T (default {DEFAULT_ROUNDS}, the paper's, capped at the number of "
                        "workload marginals unless --repeats)")
    p.add_argument("--init-fraction", type=float, default=DEFAULT_INIT_FRACTION,
                   help=f"Scalable MWEM: share α of ρ for the total query (default {DEFAULT_INIT_FRACTION})")
    p.add_argument("--repeats", action="store_true",
                   help="Scalable MWEM: a marginal may be selected again (default: no repeats, as the authors' code)")


def _lnn_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--lnn-rounds", type=int, default=None,
                   help="GReM-LNN max iterations (default: 4000 for rp, 1000 for mwem, as in the paper)")
    p.add_argument("--lnn-step", type=float, default=None, help="GReM-LNN step size (default: 0.1 rp, 0.02 mwem)")
    p.add_argument("--lnn-time-limit", type=float, default=None, help="GReM-LNN time limit in seconds (default none)")


def _lnn_options(args: argparse.Namespace) -> dict:
    return {"rounds": args.lnn_rounds, "step": args.lnn_step, "time_limit": args.lnn_time_limit}


def _input_path(spec: str) -> Path | None:
    return None if str(spec).startswith(SAMPLE_PREFIX) else Path(spec)


def _attributes(text: str | None) -> list[str] | None:
    if text is None:
        return None
    names = [a.strip() for a in text.split(",") if a.strip()]
    if not names:
        raise InputError("--attributes: expected a comma-separated list of column names")
    return names


def _load(args: argparse.Namespace):
    """The Dataset named by DATA (CSV read and discretised by dpviz.marginals.data, or a bundled sample)."""
    from dpviz.marginals.data import read_table

    attrs = _attributes(args.attributes)
    opts = {k: v for k, v in (("bins", args.bins), ("binning", args.binning), ("max_bytes", args.max_bytes),
                              ("max_rows", args.max_rows), ("max_columns", args.max_columns)) if v is not None}
    data = load_source(CAP, args.data, lambda path: read_table(path, attributes=attrs, **opts))
    if attrs is not None and str(args.data).startswith(SAMPLE_PREFIX):
        data = _project(data, attrs)
    return data


def _project(data, names: list[str]):
    """Keep ``names`` (in the given order) of a bundled sample."""
    import numpy as np

    from dpviz.marginals.domain import Dataset, Domain

    d = data.domain
    unknown = [a for a in names if a not in d.attrs]
    if unknown:
        raise InputError(f"--attributes: unknown attribute {unknown[0]!r}; {_data_name(data)} has {', '.join(d.attrs)}")
    idx = [d.attrs.index(a) for a in dict.fromkeys(names)]
    dom = Domain(tuple(d.attrs[i] for i in idx), tuple(d.sizes[i] for i in idx))
    cats = None if data.categories is None else tuple(data.categories[i] for i in idx)
    return Dataset(dom, np.asarray(data.codes)[:, idx], cats, data.name)


def _data_name(data) -> str:
    return getattr(data, "name", "the data")


def _workload(spec: str, domain):
    from dpviz.marginals.data import parse_workload

    return parse_workload(spec, domain)


def _lnn_line(info: dict) -> str:
    return (f"GReM-LNN: {info['iterations']} iterations, stopped by {info['stop_reason']}"
            f"{' (converged)' if info['converged'] else ' (not converged)'}, step {info['step']:.3g}"
            + (f", {info['restarts']} restart(s)" if info.get("restarts") else ""))


def _structure(domain, workload) -> str:
    cells = sum(domain.size(g) for g in workload)
    ways = sorted({len(g) for g in workload})
    return (f"workload: {len(workload)} marginal(s) ({'/'.join(map(str, ways))}-way), {cells:,} cells; "
            f"domain: {domain.d} attributes, sizes {'×'.join(map(str, domain.sizes))}")


# --------------------------------------------------------------------------------------------- verbs


def _noise(args: argparse.Namespace, *, release: bool) -> Noise:
    """The budget flags as the Gaussian noise of the measurements (checked before the data is read): a
    release refuses a budget whose noise vanishes, a simulation warns."""
    pipeline.budget_rho(args.epsilon, args.delta, args.rho)
    noise = Noise.from_params("gaussian", epsilon=args.epsilon, delta=args.delta, rho=args.rho, discrete=release)
    return cliargs.checked_noise(args, noise, release=release)


def cmd_simulate(args: argparse.Namespace) -> int:
    print(SIMULATION_NOTICE)
    seed = cliargs.seed_from_args(args)
    _noise(args, release=False)  # a bad budget fails before the data is read
    data = _load(args)
    wl = _workload(args.workload, data.domain)
    methods = pipeline.METHODS if args.method == "all" else (args.method,)
    sim = pipeline.simulate(data, wl, epsilon=args.epsilon, delta=args.delta, rho=args.rho,
                            mechanism=args.mechanism, rounds=args.rounds, methods=methods, seed=seed,
                            init_fraction=args.init_fraction, repeats=args.repeats,
                            lnn_options=_lnn_options(args), norm=args.norm)
    print(f"data: {_data_name(data)}: N = {data.N:,} records")
    print(_structure(sim.domain, sim.workload))
    print(f"mechanism: {pipeline.LABELS[sim.mechanism]}; {sim.budget_text}")
    print(sim.detail)
    print(f"noise: continuous Gaussian, seed {seed} (seeded: not private; retype --seed {seed} to reproduce)")
    if sim.selected is not None:
        print("selected marginals: " + ", ".join("×".join(sim.domain.names(g)) for g in sim.selected))
    scale = {"cells": "divided by its number of cells", "N": f"divided by N = {data.N:,}", "none": "not divided"}
    print(f"errors: average over the workload of ‖μ̂_γ − μ_γ‖ ({scale[sim.norm]}); analytic_variance: mean "
          f"per-cell variance of the MLE/EMP; measurement {sim.measure_seconds:.3g} s")
    print(sim.table().to_string(index=False, float_format=lambda v: f"{v:.6g}"))
    if "lnn" in sim.results:
        print(_lnn_line(sim.results["lnn"].info))
    return 0


def _refuse_input(out: Path, src: Path | None) -> None:
    """Checked before any work: the destination is a file name in an existing folder, and not the input."""
    if out.is_dir():
        raise InputError(f"--output: {out} is a directory; expected a file name")
    if not out.parent.exists():
        raise InputError(f"--output: the folder {out.parent} does not exist")
    if src is not None and src.exists() and out.exists():
        try:
            same = os.path.samefile(src, out)
        except OSError:
            same = src.resolve() == out.resolve()
        if same:
            raise InputError(f"--output: {out} is the input file; choose another name (inputs are never overwritten)")


def _dump(obj: dict) -> str:
    return json.dumps(obj, indent=1, allow_nan=False, ensure_ascii=False, default=_json_default) + "\n"


def _dump_marginals(obj: dict) -> str:
    """``{"marginals": [...]}`` with one marginal a line (valid JSON, readable and diff-friendly)."""
    lines = [json.dumps(e, allow_nan=False, ensure_ascii=False) for e in obj["marginals"]]
    return '{"marginals": [\n' + ",\n".join(lines) + "\n]}\n"


def _json_default(obj):
    if hasattr(obj, "item"):
        return obj.item()
    if isinstance(obj, tuple):
        return list(obj)
    return str(obj)


def cmd_release(args: argparse.Namespace) -> int:
    cliargs.refuse_seed(args, CAP)
    src = _input_path(args.data)
    out = Path(args.output)
    _refuse_input(out, src)
    noise = _noise(args, release=True)  # a bad budget fails before the data is read
    data = _load(args)
    wl = _workload(args.workload, data.domain)
    rel = pipeline.release(data, wl, epsilon=args.epsilon, delta=args.delta, rho=args.rho, mechanism=args.mechanism,
                           method=args.method, rounds=args.rounds, init_fraction=args.init_fraction,
                           repeats=args.repeats, lnn_options=_lnn_options(args))
    body = _dump_marginals(pipeline.release_json(rel))
    meta = _dump(pipeline.release_meta(rel))
    # the ledger is charged first (exit 3 if over the dataset's budget), then the output is written
    with ledger.charge(args, CAP, args.data, data, noise, args.mechanism):
        write_text(meta, meta_path(out), inputs=[src])
        write_text(body, out, inputs=[src])
    var = [rel.variance[g] for g in rel.workload]
    print(RELEASE_NOTICE)
    print(f"mechanism: {pipeline.LABELS[rel.mechanism]}; method: {pipeline.LABELS[rel.method]}")
    print(f"budget: {rel.budget_text}; {len(rel.budget)} sub-budgets summing to ρ = {rel.budget_total:.6g}; "
          "L2 sensitivity of a marginal: 1")
    print(rel.detail)
    print(_structure(rel.domain, rel.workload) + " (the domain is treated as public)")
    if rel.selected is not None:
        print("selected marginals (private output of the exponential mechanism): "
              + ", ".join("×".join(rel.domain.names(g)) for g in rel.selected))
    print(f"analytic per-cell variance of the {'released values' if rel.method == 'mle' else 'MLE/EMP estimate'}: "
          f"min {min(var):.6g}, max {max(var):.6g}")
    if rel.lnn_info is not None:
        print(_lnn_line(rel.lnn_info))
    print(f"wrote {out} and {meta_path(out).name}")
    return 0


def cmd_reconstruct(args: argparse.Namespace) -> int:
    from dpviz.marginals.data import read_measurements

    src = Path(args.input)
    if not src.exists():
        raise InputError(f"input file {args.input!r} does not exist")
    if src.is_dir():
        raise InputError(f"input {args.input!r} is a folder; expected a JSON file")
    out = Path(args.output)
    _refuse_input(out, src)
    opts = {} if args.max_bytes is None else {"max_bytes": args.max_bytes}
    obj = read_measurements(src, **opts)
    result = pipeline.reconstruct(obj, args.method, lnn_options=_lnn_options(args))
    import math

    for entry in result["marginals"]:  # a last guard: JSON has no NaN/Infinity, and nothing half-written
        if not all(math.isfinite(v) for v in (*entry["values"], entry.get("variance", 0.0))):
            raise InputError(f"{src}: the reconstruction of {entry['attributes']} is not finite (measurements or "
                             "sigmas out of range); nothing written")
    write_text(_dump_marginals(result), out, inputs=[src])
    n = len(result["marginals"])
    print(f"reconstructed {n} marginal(s) by {pipeline.LABELS[args.method]} (post-processing: no data, no privacy "
          f"cost); wrote {out}")
    return 0
