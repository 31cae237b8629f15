"""``python -m dpviz ledger init|set-budget|show|export``: the persistent privacy ledger.

* ``init`` — create an empty ledger (the default one, or ``--ledger PATH``).
* ``set-budget DATA --epsilon E [--delta D]`` — the total budget of a dataset (creates the ledger).
* ``show [DATA]`` — every dataset (spent both ways, remaining), or one dataset and its releases.
* ``export --output F`` — everything as JSON (``.json``) or one row per release (``.csv``).

DATA is ``sample:NAME``; a records file or folder without ``--capability`` (a CSV, gzip CSV, Parquet file
or folder of Parquet files that releases count — ``tree --levels``, ``stream --bucket``, ``marginals``:
one dataset whichever capability counts it, :func:`dpviz.ledger.identity.records_identity`); a pre-counted
file with ``--capability`` (parsed as that capability's ``release`` parses it: tree counts, a stream's
series, a histogram, a graph's edge list); or a dataset id (at least 6 leading hex digits) shown by
``ledger show``. Every ``release`` command charges the ledger itself (``--ledger``). This module imports
nothing heavy at import time.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from dpviz.ledger import LEDGER_ENV, add_ledger_arg, default_path, ledger_path
from dpviz.core.registry import tool

__all__ = ["register"]

DATA_HELP = ("sample:NAME; a records file or folder (CSV, gzip CSV, Parquet file or folder; no --capability: one "
             "dataset whichever capability counts it); a pre-counted file with --capability; or a dataset id from "
             "`ledger show` (at least 6 leading hex digits)")


def register(groups: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the ``ledger`` parser and its verbs to ``groups``."""
    g = groups.add_parser(
        "ledger", help=tool("ledger").cli_help,
        description=__doc__.splitlines()[0],
        epilog=f"Ledger file: --ledger PATH, else ${LEDGER_ENV}, else {default_path()} (releases use the default "
               "only if it exists). A release that does not fit its dataset's budget exits with code 3 and writes "
               "nothing. The ledger holds SHA-256 fingerprints of private data: keep it as private as the data.")
    sub = g.add_subparsers(dest="ledger_command", required=True, parser_class=type(g))

    i = sub.add_parser("init", help="create an empty ledger (the default one, or --ledger PATH)")
    add_ledger_arg(i)
    i.set_defaults(func=cmd_init)

    b = sub.add_parser("set-budget", help="set a dataset's total budget (ε, or (ε, δ) for Gaussian releases)")
    b.add_argument("data", metavar="DATA", help=DATA_HELP)
    b.add_argument("--epsilon", type=float, required=True, help="total ε of the dataset")
    b.add_argument("--delta", type=float, default=None,
                   help="total δ (needed for Gaussian releases; without it only pure ε releases fit)")
    _data_args(b)
    b.set_defaults(func=cmd_set_budget)

    s = sub.add_parser("show", help="datasets with spent and remaining budget, or one dataset and its releases")
    s.add_argument("data", metavar="DATA", nargs="?", default=None, help=DATA_HELP + "; default: every dataset")
    _data_args(s)
    s.set_defaults(func=cmd_show)

    e = sub.add_parser("export", help="write the ledger as JSON (.json: everything) or CSV (.csv: one row per "
                                      "release)")
    e.add_argument("--output", type=Path, required=True, help="file to write atomically (.json or .csv)")
    add_ledger_arg(e)
    e.set_defaults(func=cmd_export)
    return g


def _names() -> tuple[str, ...]:
    from dpviz.core.registry import CAPABILITIES

    return tuple(c.name for c in CAPABILITIES)


def _data_args(p: argparse.ArgumentParser) -> None:
    """--capability, then every capability's load options (its hooks module's ``LEDGER_ARGS``, each flag once,
    in registry order), then --ledger."""
    from dpviz.ledger.identity import ledger_args

    p.add_argument("--capability", choices=_names(),
                   help="how to parse a pre-counted DATA file (without it a file or folder is a records dataset)")
    seen: set[str] = set()
    dests: list[str] = []
    for cap in _names():
        for flag, kwargs in ledger_args(cap):
            if flag not in seen:
                seen.add(flag)
                dests.append(p.add_argument(flag, **kwargs).dest)
    p.set_defaults(load_options=tuple(dests))
    add_ledger_arg(p)


def _identify(args: argparse.Namespace):
    """DATA as a DatasetId (a sample, a records file or folder, or a parsed file), or None when DATA is a
    dataset id."""
    from dpviz.core.registry import SAMPLE_PREFIX
    from dpviz.errors import InputError
    from dpviz.ledger.identity import identify, load_for_ledger, records_identity, sample_capability

    spec = str(args.data)
    if spec.startswith(SAMPLE_PREFIX):
        cap = sample_capability(spec)
        if args.capability not in (None, cap):
            raise InputError(f"--capability {args.capability}: {spec} is a {cap} sample")
    elif os.path.lexists(spec):
        cap = args.capability
        if cap is None:
            given = [d for d in args.load_options if getattr(args, d) is not None]
            if given:
                flag = "--" + given[0].replace("_", "-")
                raise InputError(f"{flag}: parses a pre-counted file and needs --capability; a records file is one "
                                 "dataset without options")
            return records_identity(spec)
    elif len(spec) >= 6 and all(c in "0123456789abcdefABCDEF" for c in spec):
        return None
    else:
        raise InputError(f"DATA {spec!r}: no such file, sample or dataset id")
    data = load_for_ledger(cap, spec, **{d: getattr(args, d) for d in args.load_options})
    return identify(cap, spec, data)


def cmd_init(args: argparse.Namespace) -> int:
    from dpviz.ledger.store import check_ledger_path, open_ledger

    where = _writable(args)
    existed = check_ledger_path(where.path, create=True)  # a FIFO, a folder, a name too long: one line
    with open_ledger(where.path, create=True) as led:
        n = len(led.datasets())
    print(f"ledger {where.path}: " + (f"already there ({n} dataset(s))" if existed else "created (empty)"))
    return 0


def _writable(args: argparse.Namespace):
    """The ledger path for a command that may create it; the default folder is created if needed."""
    where = ledger_path(args.ledger)
    if not where.explicit:
        where.path.parent.mkdir(parents=True, exist_ok=True)
    return where


def cmd_set_budget(args: argparse.Namespace) -> int:
    from dpviz.ledger.accounts import DatasetBudget
    from dpviz.ledger.identity import RECORDS, DatasetId
    from dpviz.ledger.store import open_ledger
    from dpviz.ledger.views import dataset_lines

    budget = DatasetBudget(args.epsilon, args.delta)  # a bad budget fails before anything is read
    ds = _identify(args)
    where = _writable(args)
    with open_ledger(where.path, create=True) as led:
        if ds is None:
            row = led.dataset(args.data)
            ds = DatasetId(row.id, row.capability, row.name, row.canonical)
        row = led.set_budget(ds, budget)
    print(f"ledger {where.path}: budget of {row.name} set to {budget.describe}")
    if row.capability == RECORDS:
        print(f"{RECORDS}: every release counted from this file's records (tree --levels, stream --bucket, marginals; "
              "any columns) spends from it; for a pre-counted file (tree counts, a stream's series, a histogram, an "
              "edge list) pass --capability")
    print("\n".join(dataset_lines(row)))
    rep = row.report()
    if rep["epsilon_spent"] > budget.epsilon * (1 + 1e-12) or (row.spent.gauss_rho > 0 and budget.delta is None):
        print("warning: this dataset has already spent more than the new budget: every further release on it "
              "will be refused", file=sys.stderr)
    return 0


def _readable(args: argparse.Namespace):
    """The ledger for a read-only command, or None (a line said there is none) if it does not exist."""
    from dpviz.ledger.store import check_ledger_path, open_ledger

    where = ledger_path(args.ledger)
    if not check_ledger_path(where.path, write=False):
        print(f"no ledger at {where.path} (nothing recorded yet; create it with `python -m dpviz ledger init`"
              + ("" if where.explicit else f", or pass --ledger PATH / set {LEDGER_ENV}") + ")")
        return None
    return open_ledger(where.path, readonly=True)


def cmd_show(args: argparse.Namespace) -> int:
    from dpviz.ledger.views import dataset_lines, epsilon_words, releases_frame, summary_frame

    ds = _identify(args) if args.data is not None else None
    led = _readable(args)
    if led is None:
        return 0
    with led:
        if args.data is None:
            rows = led.datasets()
            print(f"ledger {led.path}: {len(rows)} dataset(s), {len(led.releases())} release(s)")
            if rows:
                table = summary_frame(rows).astype(object)  # no budget: "—", not "None"; no pure ε: words, not "inf"
                table = table.map(lambda v: epsilon_words(None if v != v else v, ".6g", missing="—")
                                  if v is None or isinstance(v, float) else v)
                print(table.to_string(index=False))
            return 0
        row = led.dataset(args.data) if ds is None else led.find(ds)
        if row is None:
            print(f"ledger {led.path}: {ds.name} is not in the ledger (no budget set, no release recorded)")
            return 0
        print("\n".join(dataset_lines(row)))
        rel = releases_frame(led.releases(row.id))
        if len(rel):
            print(rel.to_string(index=False))
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from dpviz.core.tables import check_destination, to_csv_text, write_text
    from dpviz.errors import InputError
    from dpviz.ledger.views import releases_frame

    out = check_destination(args.output, ledger=ledger_path(args.ledger).path)
    kind = out.suffix.lower()
    if kind not in (".json", ".csv"):
        raise InputError(f"--output {out}: expected a .json (everything) or .csv (one row per release) file name")
    led = _readable(args)
    if led is None:
        return 0
    with led:
        if kind == ".json":
            data = led.export()
            text = json.dumps(data, indent=1, ensure_ascii=False) + "\n"
            n = sum(len(d["releases"]) for d in data["datasets"])
        else:
            names = {d.id: d for d in led.datasets()}
            releases = led.releases()
            frame = releases_frame(releases)
            frame.insert(1, "dataset", [r.dataset for r in releases])
            frame.insert(2, "name", [names[r.dataset].name for r in releases])
            frame.insert(3, "dataset budget", [names[r.dataset].budget_text for r in releases])
            text, n = to_csv_text(frame), len(releases)
    write_text(text, out, inputs=[led.path])
    print(f"wrote {n} release(s) from {led.path} to {out}")
    return 0
