"""A persistent privacy ledger: what each dataset has spent, across processes and sessions.

Peers keep a budget only inside one Python process (Tumult Analytics' ``Session``, OpenDP's
compositors); this ledger is one SQLite file (:mod:`dpviz.ledger.store`) that every ``release`` command
of every capability charges **before** it writes its output, so a dataset's budget holds across runs,
shells and concurrent processes.

* **Dataset** — identified by the SHA-256 of its canonical content (:mod:`dpviz.ledger.identity`); a
  release counted from records charges the records file (capability ``records``: one dataset, one budget,
  whichever capability counts it; ``ledger set-budget FILE`` without ``--capability``).
* **Charge** — pure ε for Laplace releases, ρ for Gaussian ones; totals reported both ways
  (:mod:`dpviz.ledger.accounts`).
* **Where** — ``--ledger PATH``, else ``$DPVIZ_LEDGER``, else the default under the user's data
  directory (:func:`default_path`: ``$XDG_DATA_HOME/dpviz/ledger.sqlite3``, ``~/.local/share/...``
  on Linux, ``~/Library/Application Support/...`` on macOS, ``%LOCALAPPDATA%\\...`` on Windows).
* **Every release is charged** — to the ledger named by ``--ledger``/``DPVIZ_LEDGER``, else to the
  default ledger; whichever it is, the release creates it if absent (and says so on stderr), so no
  release escapes the bookkeeping. (Pages charge the server's ledger when one is configured, else a
  per-session ledger: :mod:`dpviz.ledger.session`.)
* **No budget set** — the release is recorded (spent accumulates) and never refused; with a budget, a
  release that does not fit exits with code 3, prints what remains, and writes nothing.

This module stays light (no numpy at import): the CLI parser imports it for the ``--ledger`` flag.
"""

from __future__ import annotations

import hashlib
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

__all__ = ["LEDGER_ENV", "PAUSE_AFTER_CHARGE_ENV", "EXIT_BUDGET", "default_path", "ledger_path", "LedgerPath",
           "add_ledger_arg", "charge", "receipt_line", "file_sha256"]

from dpviz.core.charging import (EXIT_BUDGET, FILE_NAME, LEDGER_ENV, PAUSE_AFTER_CHARGE_ENV, LedgerPath,  # noqa: F401
                                 add_ledger_arg, data_dir, default_path, ledger_path)


def file_sha256(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _output_sha256(path: str | Path) -> str:
    """The SHA-256 of a release's output just written: as its writer computed it while writing, if the file
    is still that one (:func:`dpviz.core.tables.written_sha256`), else read from the file."""
    from dpviz.core.tables import written_sha256

    return written_sha256(path) or file_sha256(path)


def _pause_after_charge(release_id: int) -> None:
    seconds = float(os.environ.get(PAUSE_AFTER_CHARGE_ENV) or 0)
    if seconds > 0:
        print(f"ledger: charged release {release_id}; test pause {seconds:g} s before writing", file=sys.stderr,
              flush=True)
        time.sleep(seconds)


@contextmanager
def charge(args: Any, capability: str, source: str | Path, data: Any, noise: Any, mechanism: str, *,
           extra_outputs: Any = (), inputs: Any = ()) -> Iterator[Any]:
    """Charge a release to the ledger, then let the caller write its output (``args.output``)::

        with ledger.charge(args, CAP, args.input, data, noise, args.method):
            write_release(table, args.output, meta, inputs=[src])

    Before the charge, the ledger path and every output are checked (exit 2, nothing charged):
    ``args.output`` and its ``.meta.json`` plus ``extra_outputs`` must be writable new names that are
    not the ledger, an input (``source``, ``inputs``) or one another
    (:func:`dpviz.core.tables.check_outputs`). Then the dataset is identified and the charge committed in
    one ``BEGIN IMMEDIATE`` transaction; a release that does not fit prints one line (what remains) and
    exits with code :data:`EXIT_BUDGET` (3) — the body never runs, nothing is written. After the body:
    the output's SHA-256 is recorded. If the body fails, the charge stays (conservative) and the error
    line says so (``...; the charge of release N stands ...; nothing was written``: an OSError or an
    InputError becomes that one line, exit 2). A ledger that does not exist yet (the default one included)
    is created first: every release is charged. The ledger's lines go to stderr (stdout stays the
    release's own report).
    """
    from dpviz.core.registry import SAMPLE_PREFIX
    from dpviz.core.tables import check_outputs

    where = ledger_path(getattr(args, "ledger", None))
    all_inputs = [None if str(source).startswith(SAMPLE_PREFIX) else source, *inputs]
    from dpviz.errors import InputError
    from dpviz.ledger.accounts import Charge
    from dpviz.ledger.identity import identify
    from dpviz.ledger.store import BudgetExceeded, check_ledger_path, open_ledger

    # a bad ledger or a bad --output must not cost budget: checked before the charge (exit 2)
    if not where.explicit and not os.path.lexists(where.path):
        try:  # the default ledger's folder, as `ledger init` makes it
            where.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InputError(f"ledger: cannot create the default ledger's folder {where.path.parent} "
                             f"({exc.strerror or exc}); pass --ledger PATH or set {LEDGER_ENV}") from None
    existed = check_ledger_path(where.path, create=True)
    check_outputs(args.output, extra_outputs, all_inputs, ledger=where.path)
    ds = identify(capability, source, data)
    cost = Charge.of_noise(noise)
    if not existed:
        print(f"ledger: created {where.path} ({where.origin}); every release is charged to it (set a budget with "
              f"`python -m dpviz ledger set-budget`)", file=sys.stderr)
    with open_ledger(where.path, create=True) as led:
        try:
            receipt = led.charge(ds, cost, mechanism=mechanism, source=str(source), output=Path(args.output),
                                 capability=capability)
        except BudgetExceeded as exc:
            print(f"dpviz: error: ledger {where.path}: {exc}", file=sys.stderr, flush=True)
            raise SystemExit(EXIT_BUDGET) from None
        before = _identity(args.output)
        try:
            _pause_after_charge(receipt.release_id)
            yield receipt
        except BaseException as exc:
            written = ("nothing was written" if _identity(args.output) == before else
                       f"the release was written to {args.output}, a later output failed")
            stands = (f"the charge of release {receipt.release_id} ({receipt.charge.describe}) in the ledger "
                      f"{where.path} stands; {written}")
            if isinstance(exc, (OSError, InputError, MemoryError)):
                raise InputError(f"{_failure(exc)}; {stands}") from None
            print(f"ledger: {stands}", file=sys.stderr, flush=True)
            raise
        try:
            led.finish(receipt.release_id, _output_sha256(args.output))
        except (OSError, InputError) as exc:
            print(f"ledger: warning: release {receipt.release_id} is written and charged, but its output's SHA-256 "
                  f"was not recorded ({_failure(exc)})", file=sys.stderr)
    print(receipt_line(receipt), file=sys.stderr)


def _identity(path: Any) -> tuple[int, int] | None:
    """(inode, mtime) of the file at ``path``, None if there is none: whether a write replaced it."""
    try:
        st = os.stat(path)
    except (OSError, TypeError, ValueError):
        return None
    return st.st_ino, st.st_mtime_ns


def _failure(exc: BaseException) -> str:
    """What went wrong, in a few words (an OSError as the file and the system's reason)."""
    if isinstance(exc, MemoryError):
        return "out of memory while writing the release"
    if isinstance(exc, OSError) and exc.strerror:
        name = "" if exc.filename is None else f" {str(exc.filename)[:200]}"
        return f"cannot write{name}: {exc.strerror}"
    return str(exc)


def receipt_line(receipt: Any) -> str:
    """One line for stderr: what was charged, to which dataset (by name: the fingerprint stays in the
    ledger), and what is spent and left."""
    rep = receipt.spent.report(receipt.budget)
    delta = "" if rep["delta"] is None else f" at δ = {rep['delta']:.3g}"
    spent = (f"spent ε = {rep['epsilon_spent']:.6g}{delta} (basic {rep['epsilon_basic']:.6g}, zCDP "
             f"{rep['epsilon_zcdp']:.6g}; ρ = {rep['rho']:.6g}) in {rep['releases']} release(s)")
    if receipt.budget is None:
        left = "no budget set for this dataset (recorded, never refused)"
    else:
        from dpviz.ledger.accounts import Room

        left = (f"budget {receipt.budget.describe}, remaining ε = {rep['epsilon_remaining']:.6g}: "
                + Room(rep["room_epsilon"], rep["room_rho"]).describe)
    return f"ledger: charged {receipt.charge.describe} to {receipt.dataset.name} in {receipt.path}; {spent}; {left}"
