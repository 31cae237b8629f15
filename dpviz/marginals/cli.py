"""``python -m dpviz marginals simulate|release|reconstruct``: marginal tables from the command line.

* ``simulate`` — seeded continuous Gaussian noise, ResidualPlanner or Scalable MWEM, every reconstruction
  method on the same measurements, errors against the true marginals: **not a private release**.
* ``release`` — discrete Gaussian noise from the OS CSPRNG (no ``--seed``), one method (mle or lnn), the
  marginals written atomically as JSON with a ``.meta.json`` (noise, why, every sub-budget); stdout shows
  only public facts (budget, structure, analytic variances).
* ``reconstruct`` — post-processing of given noisy marginal measurements (MEAS.json): no data, no budget.
* ``describe-structure`` — a domain declaration template read from a CSV (``--output DOMAIN.json``), for
  the curator to review: it comes from the data.

A release publishes its domain (attributes, categories, bin edges), so it takes it from ``--domain
DOMAIN.json`` (schema: :mod:`dpviz.marginals.declared`), never from the records; bundled samples ship
theirs. ``--structure-from-data`` is the explicit opt-out (categories and bin edges read from the records:
not private; every output says so). DATA is a CSV (``--attributes`` picks columns; without a domain,
``--bins``/``--binning`` discretise numbers from the data) or a bundled sample, ``sample:adult`` /
``sample:titanic``. ``--workload`` is an integer K (all K-way marginals) or a file
(JSON list of attribute lists, or CSV rows). Bad input exits with code 2 and one line on stderr.
"""

from __future__ import annotations

import argparse
import json
import math
import os
from pathlib import Path

from dpviz.core import charging as ledger
from dpviz.core import cliargs
from dpviz.core.modes import RELEASE_NOTICE, SIMULATION_NOTICE
from dpviz.core.noise import Noise
from dpviz.core.inputs import require_regular_file
from dpviz.core.registry import SAMPLE_PREFIX, capability, load_source
from dpviz.core.structure import (DESCRIBE_NOTICE, STRUCTURE_FROM_DATA_FLAG, STRUCTURE_FROM_DATA_NOTICE,
                                  add_structure_from_data_arg, missing_declaration)
from dpviz.core.tables import meta_path, write_release_text, write_text
from dpviz.errors import InputError
from dpviz.core.charging import add_ledger_arg
from dpviz.marginals import release as api
from dpviz.marginals.estimators import reconstruct
from dpviz.marginals.mwem import DEFAULT_INIT_FRACTION, DEFAULT_ROUNDS, MAX_ROUNDS

CAP = "marginals"
UNIT = "one record (add or remove one row): every marginal changes in exactly one cell by 1"
DATA_HELP = "CSV of categorical records, or sample:adult / sample:titanic"
WORKLOAD_HELP = ("K (all K-way marginals) or a file: a JSON list of attribute lists, or CSV rows of attribute "
                 "names")
DOMAIN_WHAT = "the domain (attributes, categories, bin edges)"
DOMAIN_HELP = ('the public domain, declared: JSON {"attributes": [{"name": A, "categories": [...]} or {"name": A, '
               '"edges": [...]}, ...]} with "outside": drop|clamp|other per attribute (see the README); records '
               "outside it are dropped, clamped or put in the catch-all, and their number is never published")
MAX_LNN_ROUNDS = 1_000_000
MAX_LNN_STEP = 1e6
MAX_LNN_SECONDS = 86_400.0


def register(groups) -> argparse.ArgumentParser:
    """Add the ``marginals`` command group to the top-level sub-parsers."""
    m = groups.add_parser("marginals", help=capability(CAP).cli_help,
                          description="Marginal tables of categorical data: simulate (not private), release "
                                      "(discrete noise, OS CSPRNG, on a declared --domain), reconstruct "
                                      "(post-processing) and describe-structure (a domain template from the data).",
                          epilog=f"Unit of privacy: {UNIT}.")
    sub = m.add_subparsers(dest="marginals_command", required=True, parser_class=type(m))

    s = sub.add_parser("simulate", help=f"{SIMULATION_NOTICE}: seeded noise, every method, errors vs. the truth",
                       description="Measure once with seeded continuous Gaussian noise, reconstruct with every "
                                   "method, and print the errors against the true marginals. Not a private release.")
    _data_args(s)
    s.add_argument("--domain", type=Path, metavar="FILE",
                   help=DOMAIN_HELP + " (default: a sample's own declaration, or read from the CSV)")
    _budget_args(s)
    _mechanism_args(s)
    s.add_argument("--method", default="all", choices=[*api.METHODS, "all"],
                   help="reconstruction(s) to compare (default: all, on the same noise draw)")
    cliargs.add_seed_arg(s, help="noise seed (default: fresh entropy, printed)")
    s.add_argument("--norm", choices=api.NORMS, default="cells",
                   help="error of each marginal divided by its number of cells (default, as the authors' code), "
                        "by N, or not at all")
    _lnn_args(s)
    s.set_defaults(func=cmd_simulate)

    r = sub.add_parser("release", help="private release: discrete Gaussian noise (OS CSPRNG), one method, no truth",
                       description="Privately release the workload marginals: discrete Gaussian noise from the OS "
                                   "CSPRNG, fresh every run, no seed; OUT.json plus OUT.json.meta.json.")
    _data_args(r)
    r.add_argument("--domain", type=Path, metavar="FILE",
                   help=DOMAIN_HELP + " (required for a CSV; a bundled sample ships its own)")
    add_structure_from_data_arg(r, DOMAIN_WHAT)
    _budget_args(r)
    _mechanism_args(r)
    r.add_argument("--method", required=True, choices=api.RELEASE_METHODS,
                   help="mle (GReM-MLE/EMP, analytic variance) or lnn (GReM-LNN, every cell ≥ 0)")
    r.add_argument("--output", type=Path, required=True,
                   help="JSON to write atomically (never the input); OUTPUT.meta.json describes the release")
    r.add_argument("--seed", type=int, default=None, help=argparse.SUPPRESS)
    add_ledger_arg(r)
    _lnn_args(r)
    r.set_defaults(func=cmd_release)

    from dpviz.marginals.io import MAX_MEAS_BYTES, MAX_MEAS_MAGNITUDE

    c = sub.add_parser("reconstruct", help="marginals from given noisy marginal measurements (post-processing)",
                       description="Reconstruct workload marginals from noisy marginal measurements (MEAS.json: "
                                   "domain, measurements with sigma, workload). Post-processing: no data, no budget.")
    c.add_argument("input", metavar="MEAS.json", help='{"domain": {...}, "measurements": [...], "workload": [...]}')
    c.add_argument("--method", required=True, choices=api.RELEASE_METHODS,
                   help="mle (EMP: weighted least squares / pseudoinverse) or lnn (GReM-LNN, every cell ≥ 0)")
    c.add_argument("--output", type=Path, required=True, help="JSON to write atomically (never the input)")
    c.add_argument("--max-bytes", type=int, default=None,
                   help=f"size cap of MEAS.json, checked before reading (default {MAX_MEAS_BYTES:,}); numbers must lie "
                        f"within ±{MAX_MEAS_MAGNITUDE:g}")
    _lnn_args(c)
    c.set_defaults(func=cmd_reconstruct)

    d = sub.add_parser("describe-structure", help="write a domain declaration template read from the data (review it)",
                       description="Read DATA's columns, categories and (data-derived) bin edges and write them as "
                                   "a domain declaration for --domain. It comes from the data: review it (add every "
                                   "public value, remove what is not public) before a release uses it.")
    _data_args(d, workload=False)
    d.add_argument("--output", type=Path, required=True, help="DOMAIN.json to write atomically (never the input)")
    d.set_defaults(func=cmd_describe_structure)
    return m


def _data_args(p: argparse.ArgumentParser, *, workload: bool = True) -> None:
    from dpviz.marginals.io import MAX_BYTES, MAX_COLUMNS, MAX_ROWS

    p.add_argument("data", metavar="DATA", help=DATA_HELP)
    if workload:
        p.add_argument("--workload", required=True, metavar="K|FILE", help=WORKLOAD_HELP)
    p.add_argument("--attributes", help="comma-separated columns to keep (default: all)")
    p.add_argument("--bins", type=int, default=None,
                   help="bins for numeric columns with many values (CSV input without --domain)")
    p.add_argument("--binning", choices=("quantile", "width"), default=None,
                   help="numeric columns: equal-frequency (quantile, default) or equal-width bins (CSV input "
                        "without --domain); bin edges come from the data and are not private")
    p.add_argument("--max-bytes", type=int, default=None,
                   help=f"CSV size cap, checked before reading (default {MAX_BYTES:,}; gzip: the decompressed size)")
    p.add_argument("--max-rows", type=int, default=None,
                   help=f"CSV data-row cap, checked while reading (default {MAX_ROWS:,})")
    p.add_argument("--max-columns", type=int, default=None,
                   help=f"cap on the CSV columns kept, checked on the header (default {MAX_COLUMNS:,})")
    cliargs.add_records_args(p, needs="records")


def _budget_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--epsilon", type=float,
                   help="ε of the (ε, δ)-DP guarantee (with --delta); " + cliargs.EPSILON_BOUND_HELP)
    p.add_argument("--delta", type=float, help="δ of the (ε, δ)-DP guarantee (the paper uses 1e-9)")
    p.add_argument("--rho", type=float, help="ρ-zCDP budget instead of --epsilon/--delta")


def _mechanism_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--mechanism", required=True, choices=api.MECHANISMS,
                   help="rp (ResidualPlanner) or mwem (Scalable MWEM)")
    p.add_argument("--rounds", type=int, default=None,
                   help=f"Scalable MWEM rounds T, 1..{MAX_ROUNDS:,}, checked against a time/memory estimate before any "
                        f"work; default {DEFAULT_ROUNDS}, the paper's, capped at the number of "
                        "workload marginals unless --repeats)")
    p.add_argument("--init-fraction", type=float, default=DEFAULT_INIT_FRACTION,
                   help=f"Scalable MWEM: share α of ρ for the total query (default {DEFAULT_INIT_FRACTION})")
    p.add_argument("--repeats", action="store_true",
                   help="Scalable MWEM: a marginal may be selected again (default: no repeats, as the authors' code)")


def _count(flag: str, value: int | None, limit: int) -> int | None:
    """A whole-number flag in 1..limit (None: its default); InputError naming ``flag`` otherwise."""
    if value is not None and not 1 <= value <= limit:
        raise InputError(f"{flag}: expected a whole number in 1..{limit:,}, got {value}")
    return value


def _positive(flag: str, value: float | None, limit: float) -> float | None:
    """A number flag, finite and in (0, limit] (None: its default); NaN, infinities, 0 and negatives refused."""
    if value is not None and not (math.isfinite(value) and 0 < value <= limit):
        raise InputError(f"{flag}: expected a finite number in (0, {limit:g}], got {value}")
    return value


def _check_counts(args: argparse.Namespace) -> None:
    """Every count and step flag, checked before the data is read (the MWEM rounds again against a time and
    memory estimate once the workload is known)."""
    if hasattr(args, "rounds"):
        _count("--rounds", args.rounds, MAX_ROUNDS)
    _count("--lnn-rounds", args.lnn_rounds, MAX_LNN_ROUNDS)
    _positive("--lnn-step", args.lnn_step, MAX_LNN_STEP)
    _positive("--lnn-time-limit", args.lnn_time_limit, MAX_LNN_SECONDS)


def _lnn_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--lnn-rounds", type=int, default=None,
                   help=f"GReM-LNN max iterations, 1..{MAX_LNN_ROUNDS:,} (default: 4000 for rp, 1000 for mwem, as in "
                        "the paper)")
    p.add_argument("--lnn-step", type=float, default=None,
                   help=f"GReM-LNN step size, finite, in (0, {MAX_LNN_STEP:g}] (default: 0.1 rp, 0.02 mwem)")
    p.add_argument("--lnn-time-limit", type=float, default=None,
                   help="GReM-LNN time limit in seconds, up to a day (default none)")


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


def _declaration(args: argparse.Namespace, *, release: bool):
    """The declared domain of this run (``--domain``), or None: a sample's own declaration, or (simulate, or
    a release with ``--structure-from-data``) the structure read from the records. Read before the data."""
    from dpviz.marginals.declared import read_declaration

    domain = getattr(args, "domain", None)
    from_data = bool(getattr(args, "structure_from_data", False))
    sample = str(args.data).startswith(SAMPLE_PREFIX)
    if domain is not None and from_data:
        raise InputError(f"{STRUCTURE_FROM_DATA_FLAG}: give either --domain FILE or {STRUCTURE_FROM_DATA_FLAG}, "
                         "not both")
    if domain is not None:
        if args.bins is not None or args.binning is not None:
            flag = "--bins" if args.bins is not None else "--binning"
            raise InputError(f"{flag}: the bin edges come from --domain; drop {flag}")
        require_regular_file(domain, "--domain")
        return read_declaration(domain)
    if release and sample and from_data:
        raise InputError(f"{STRUCTURE_FROM_DATA_FLAG}: {args.data} ships its public domain declaration; drop the "
                         "flag (or pass --domain FILE)")
    if release and not sample and not from_data:
        raise missing_declaration("--domain", DOMAIN_WHAT, CAP)
    return None


def _load(args: argparse.Namespace, decl=None):
    """The Dataset named by DATA: a CSV read by dpviz.marginals.io (coded by ``decl`` when given, else
    discretised from the data), or a bundled sample (recoded by ``decl`` when given)."""
    from dpviz.marginals.io import read_table
    from dpviz.marginals.declared import apply

    attrs = _attributes(args.attributes)
    if decl is not None:
        decl = decl.select(attrs)
    opts = {k: v for k, v in (("bins", args.bins), ("binning", args.binning), ("max_bytes", args.max_bytes),
                              ("max_rows", args.max_rows), ("max_columns", args.max_columns)) if v is not None}

    def read(path: Path):
        if _counted(args):  # records through the shared counting (dpviz.core.records; Dask, a bound per person)
            from dpviz.marginals.io import MAX_BYTES, MAX_ROWS
            from dpviz.marginals.records import dataset_from_records

            return dataset_from_records(path, attrs, domain=decl, person=args.person_column,
                                        max_contributions=args.max_contributions, dask=args.workers or args.scheduler,
                                        **{"max_bytes": MAX_BYTES, "max_rows": MAX_ROWS, **opts})
        if not path.is_dir():  # a folder reaches here only when it holds *.parquet (registry.load_source)
            require_regular_file(path, "input")
        return read_table(path, attributes=None if decl is not None else attrs, domain=decl, **opts)

    data = load_source(CAP, args.data, read)
    if str(args.data).startswith(SAMPLE_PREFIX):
        if decl is not None:
            data = apply(data, decl)
        elif attrs is not None:
            data = _project(data, attrs)
    return data


def _counted(args: argparse.Namespace) -> bool:
    """Whether DATA is counted as records (a contribution bound or Dask asked for)."""
    return any(getattr(args, f, None) is not None for f in ("person_column", "max_contributions", "workers",
                                                             "scheduler"))


def _project(data, names: list[str]):
    """Keep ``names`` (in the given order) of a bundled sample."""
    import numpy as np

    from dpviz.marginals.model import Dataset, Domain

    d = data.domain
    unknown = [a for a in names if a not in d.attrs]
    if unknown:
        raise InputError(f"--attributes: unknown attribute {unknown[0]!r}; {_data_name(data)} has {', '.join(d.attrs)}")
    idx = [d.attrs.index(a) for a in dict.fromkeys(names)]
    dom = Domain(tuple(d.attrs[i] for i in idx), tuple(d.sizes[i] for i in idx))
    cats = None if data.categories is None else tuple(data.categories[i] for i in idx)
    edges = None if data.edges is None else tuple(data.edges[i] for i in idx)
    return Dataset(dom, np.asarray(data.codes)[:, idx], cats, data.name, edges, data.structure)


def _data_name(data) -> str:
    return getattr(data, "name", "the data")


def _workload(spec: str, domain):
    from dpviz.marginals.io import parse_workload

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
    noise = Noise.from_params("gaussian", epsilon=args.epsilon, delta=args.delta, rho=args.rho, discrete=release)
    return cliargs.checked_noise(args, noise, release=release)


def cmd_simulate(args: argparse.Namespace) -> int:
    print(SIMULATION_NOTICE)
    seed = cliargs.seed_from_args(args)
    _check_counts(args)
    noise = _noise(args, release=False)  # a bad budget fails before the data is read
    data = _load(args, _declaration(args, release=False))
    wl = _workload(args.workload, data.domain)
    methods = api.METHODS if args.method == "all" else (args.method,)
    from dpviz.core.records import per_record_noise  # pyarrow: not at the registrar's import

    sim = api.simulate(data, per_record_noise(noise, args.max_contributions), methods, seed, workload=wl,
                       mechanism=args.mechanism, rounds=args.rounds, init_fraction=args.init_fraction,
                       repeats=args.repeats, lnn_options=_lnn_options(args), norm=args.norm)
    print(f"data: {_data_name(data)}: N = {data.N:,} records")
    print(_structure(sim.domain, sim.workload))
    print(f"mechanism: {api.LABELS[sim.mechanism]}; {sim.budget_text}")
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
    """``{..., "marginals": [...]}`` with one marginal a line (valid JSON, readable and diff-friendly); other
    keys (a release's structure notice) come first, on the first line."""
    head = "".join(f"{json.dumps(k)}: {json.dumps(v, ensure_ascii=False)}, " for k, v in obj.items() if k != "marginals")
    lines = [json.dumps(e, allow_nan=False, ensure_ascii=False) for e in obj["marginals"]]
    return "{" + head + '"marginals": [\n' + ",\n".join(lines) + "\n]}\n"


def _json_default(obj):
    if hasattr(obj, "item"):
        return obj.item()
    if isinstance(obj, tuple):
        return list(obj)
    return str(obj)


def cmd_release(args: argparse.Namespace) -> int:
    cliargs.refuse_seed(args, CAP)
    _check_counts(args)
    src = _input_path(args.data)
    out = Path(args.output)
    _refuse_input(out, src)
    noise = _noise(args, release=True)  # a bad budget fails before the data is read
    decl = _declaration(args, release=True)  # the public domain: declared, or the explicit opt-out
    dom_file = None if decl is None else Path(args.domain)
    if dom_file is not None:
        _refuse_input(out, dom_file)
    data = _load(args, decl)
    wl = _workload(args.workload, data.domain)
    from dpviz.core.records import per_record_noise, person_metadata, unit_of_privacy

    rel = api.release(data, per_record_noise(noise, args.max_contributions), workload=wl, mechanism=args.mechanism,
                      method=args.method, rounds=args.rounds, init_fraction=args.init_fraction,
                      repeats=args.repeats, lnn_options=_lnn_options(args))
    body = _dump_marginals(rel.as_json())
    meta = _dump(rel.metadata() if not _counted(args) else person_metadata(
        rel.metadata(), noise, person=args.person_column, max_contributions=args.max_contributions, source=args.data))
    # the ledger is charged first (exit 3 if over the dataset's budget), then the output is written
    inputs = [p for p in (src, dom_file) if p is not None]
    with ledger.charge(args, CAP, args.data, data, noise, args.mechanism,
                       inputs=[] if dom_file is None else [dom_file]):
        write_release_text(body, out, meta, inputs=inputs)  # both or neither (the sidecar renamed just before)
    var = [rel.variance[g] for g in rel.workload]
    print(RELEASE_NOTICE)
    if rel.structure.kind == "data":
        print(f"{STRUCTURE_FROM_DATA_NOTICE}: the categories and bin edges below were read from the records "
              f"({STRUCTURE_FROM_DATA_FLAG}); a category held by one person is published as it is")
    print(f"mechanism: {api.LABELS[rel.mechanism]}; method: {api.LABELS[rel.method]}")
    k = args.max_contributions or 1
    print(f"budget: {rel.budget_text}; {len(rel.budget_lines)} sub-budgets summing to ρ = {rel.budget_total:.6g}; "
          f"L2 sensitivity of a marginal: {k}" + (f" (unit of privacy: {unit_of_privacy(args.person_column, k)}; "
                                                  f"budget per person: {noise.describe})" if k > 1 else ""))
    print(rel.detail)
    print(_structure(rel.domain, rel.workload) + f" ({rel.structure.describe})")
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
    from dpviz.marginals.io import read_measurements

    src = Path(args.input)
    if not src.exists():
        raise InputError(f"input file {args.input!r} does not exist")
    if src.is_dir():
        raise InputError(f"input {args.input!r} is a folder; expected a JSON file")
    out = Path(args.output)
    _refuse_input(out, src)
    _check_counts(args)
    opts = {} if args.max_bytes is None else {"max_bytes": args.max_bytes}
    obj = read_measurements(src, **opts)
    result = reconstruct(obj, args.method, lnn_options=_lnn_options(args))
    import math

    for entry in result["marginals"]:  # a last guard: JSON has no NaN/Infinity, and nothing half-written
        if not all(math.isfinite(v) for v in (*entry["values"], entry.get("variance", 0.0))):
            raise InputError(f"{src}: the reconstruction of {entry['attributes']} is not finite (measurements or "
                             "sigmas out of range); nothing written")
    write_text(_dump_marginals(result), out, inputs=[src])
    n = len(result["marginals"])
    print(f"reconstructed {n} marginal(s) by {api.LABELS[args.method]} (post-processing: no data, no privacy "
          f"cost); wrote {out}")
    return 0


def cmd_describe_structure(args: argparse.Namespace) -> int:
    """A domain declaration template read from DATA (its categories and data-derived bin edges), written
    atomically to ``--output``; it says it comes from the data (review it before releasing with it)."""
    from dpviz.marginals.declared import template

    src = _input_path(args.data)
    out = Path(args.output)
    _refuse_input(out, src)
    data = _load(args)
    body = json.dumps(template(data, str(args.data)), indent=1, ensure_ascii=False, allow_nan=False) + "\n"
    write_text(body, out, inputs=[src])
    print(DESCRIBE_NOTICE)
    print(f"wrote {out}: {data.domain.d} attribute(s), sizes {'×'.join(map(str, data.domain.sizes))}; pass it to "
          f"`python -m dpviz marginals release DATA --domain {out} ...` once reviewed")
    return 0
