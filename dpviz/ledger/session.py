"""Page-side charging: which ledger a dashboard release charges, and the charge itself.

Every "Draw a private release" on a page is charged *before* its output is shown, exactly as a
``python -m dpviz ... release`` is charged before it writes (:func:`dpviz.ledger.charge`):

* **The server's ledger** when one is configured: ``--ledger PATH`` given to the app
  (``make run LEDGER=PATH`` → ``streamlit run app.py -- --ledger PATH``), else ``$DPVIZ_LEDGER``, else
  the default ledger if that file exists — the CLI's rule (:func:`dpviz.ledger.ledger_path`), so a page
  draw and a CLI release of the same data spend from one budget. Budgets there are set with
  ``python -m dpviz ledger set-budget``.
* **Otherwise a per-session ledger**: an SQLite ledger in a private temporary folder (mode 0700) made
  once per browser session (:class:`SessionLedger`) and removed with the session. Its budgets are set
  on the page (:func:`set_budget`).

A dataset is identified by the SHA-256 of its canonical content, as on the CLI
(:mod:`dpviz.ledger.identity`): an upload is identified by what it parses to, never by a server path. An
upload of **records** (a CSV, gzip CSV or Parquet file of one row per person, event or edge, counted on
the page: every marginals upload, a tree by levels, a stream of events) is the records dataset of its
bytes (:func:`page_records_dataset`): the identity ``python -m dpviz ledger set-budget FILE`` and every
CLI release counted from the same file charge, whichever capability counts it. No path typed in a browser is ever opened:
the only ledger paths are the server's configuration and the session's own temporary folder.

This module never imports Streamlit (``ui.py`` does the drawing).
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from dpviz.core.registry import SAMPLE_PREFIX
from dpviz.errors import InputError
from dpviz.ledger import LEDGER_ENV, ledger_path
from dpviz.ledger.accounts import Charge, DatasetBudget
from dpviz.ledger.identity import (DatasetId, canonical_description, counted_from_records, page_canonical_bytes,
                                   records_identity)
from dpviz.ledger.store import DatasetRow, Receipt, check_ledger_path, open_ledger

__all__ = ["PageLedger", "SessionLedger", "ledger_flag", "server_ledger", "source_label", "page_dataset",
           "page_records_dataset", "standing", "charge_draw", "record_output", "set_budget", "LEDGER_FLAG"]

LEDGER_FLAG = "--ledger"
SESSION_FILE = "ledger.sqlite3"
ORIGINS = {"--ledger": "given to the app with --ledger (make run LEDGER=PATH)",
           LEDGER_ENV: f"from ${LEDGER_ENV}", "default": "the default ledger of the user running the server",
           "session": "this browser session's own ledger"}


@dataclass(frozen=True)
class PageLedger:
    """The ledger a page charges: the server's (``kind`` "server") or this session's (``kind`` "session")."""

    path: Path
    kind: Literal["server", "session"]
    origin: str
    """``--ledger``, ``DPVIZ_LEDGER``, ``default`` or ``session``."""

    @property
    def describe(self) -> str:
        if self.kind == "session":
            return ("this session's ledger (a private temporary file, removed when the session ends; not shared "
                    "with other visitors or the CLI)")
        return f"the server's ledger `{self.path}` ({ORIGINS.get(self.origin, self.origin)})"


class SessionLedger:
    """A per-session ledger: ``ledger.sqlite3`` in a private temporary folder (created here, mode 0700).

    Keep one per browser session (the page keeps it in its session state); the folder and the ledger are
    removed when this object is collected (the session ended) or :meth:`cleanup` is called."""

    def __init__(self) -> None:
        self._dir = tempfile.TemporaryDirectory(prefix="dpviz-session-ledger-")

    @property
    def path(self) -> Path:
        return Path(self._dir.name) / SESSION_FILE

    @property
    def ledger(self) -> PageLedger:
        return PageLedger(self.path, "session", "session")

    def cleanup(self) -> None:
        self._dir.cleanup()


def ledger_flag(argv: Sequence[str] | None = None) -> str | None:
    """The value of ``--ledger PATH`` (or ``--ledger=PATH``) among the app's script arguments
    (``streamlit run app.py -- --ledger PATH``; default :data:`sys.argv`). The last one wins; anything
    else is ignored (the app never exits over its arguments). A ``--ledger`` with no value is an
    InputError."""
    args = list(sys.argv[1:] if argv is None else argv)
    found: str | None = None
    for i, a in enumerate(args):
        if a == LEDGER_FLAG:
            if i + 1 >= len(args) or not args[i + 1]:
                raise InputError(f"the app was started with {LEDGER_FLAG} but no path after it "
                                 f"(use `make run LEDGER=PATH` or `streamlit run app.py -- {LEDGER_FLAG} PATH`)")
            found = args[i + 1]
        elif a.startswith(LEDGER_FLAG + "="):
            found = a.split("=", 1)[1]
            if not found:
                raise InputError(f"the app was started with an empty {LEDGER_FLAG}=")
    return found


def server_ledger(argv: Sequence[str] | None = None) -> PageLedger | None:
    """The server's ledger: ``--ledger``, else ``$DPVIZ_LEDGER`` (both used even if the file does not exist
    yet: the first draw creates it), else the default ledger if it exists; None when none is configured."""
    where = ledger_path(ledger_flag(argv))
    if not where.explicit and not os.path.lexists(where.path):
        return None
    return PageLedger(where.path, "server", where.origin)


def source_label(key: tuple) -> str:
    """How the ledger names a page's data source (its session key ``("bundled", NAME)``,
    ``("synthetic", ...)`` or ``("upload", FILE NAME, digest, ...)``): ``sample:NAME``,
    ``synthetic:...`` or ``upload:FILE NAME`` — never a server path."""
    kind = key[0]
    if kind == "bundled":
        return SAMPLE_PREFIX + str(key[1]).removeprefix(SAMPLE_PREFIX)
    if kind == "upload":
        return f"upload:{key[1]}"
    return f"{kind}:" + ",".join(str(k) for k in key[1:])


def identity_key(key: tuple) -> Hashable:
    """The part of a page's source key that names the dataset (an upload: kind, file name and digest;
    marginals appends its projection, which is the same people)."""
    return tuple(key[:3]) if key[0] == "upload" else tuple(key)


def page_dataset(capability: str, key: tuple, data: Any) -> DatasetId:
    """The :class:`DatasetId` of a page's data: the SHA-256 of the canonical form the CLI computes for the
    same content (so a page draw and a CLI release of one file spend from one budget). ``data`` is what the
    page loaded (stream: the full count series, before the horizon); a marginals upload passes its bytes
    (the records dataset of those bytes: :func:`page_records_dataset`)."""
    label = source_label(key)
    if key[0] == "upload" and isinstance(data, (bytes, bytearray, memoryview)) and counted_from_records(
            capability, label):
        return page_records_dataset(key, data)
    digest = hashlib.sha256(page_canonical_bytes(capability, label, data)).hexdigest()
    return DatasetId(digest, capability, label, canonical_description(capability))


def page_records_dataset(key: tuple | str, raw: bytes | bytearray | memoryview) -> DatasetId:
    """The :class:`DatasetId` of an uploaded records file (``raw``: its bytes as uploaded — a CSV, gzip CSV or
    Parquet file), named by the page's source ``key`` (:func:`source_label`, e.g. ``upload:people.parquet``;
    or that label itself): the same dataset as the file on the CLI, whichever capability counts it
    (:func:`dpviz.ledger.identity.records_identity`). Charge a draw counted from the upload's records to it
    with :func:`charge_draw` (``capability=`` the page's capability)."""
    label = key if isinstance(key, str) else source_label(key)
    return records_identity(bytes(raw), name=label)


def _usable(where: PageLedger, *, write: bool) -> bool:
    """Whether the ledger file exists; InputError (nothing opened) for a path that cannot be a ledger (a
    FIFO or a device would hang, a folder, a name too long) or, to ``write``, a read-only file or folder,
    or a missing file whose folder takes no new file (:func:`dpviz.ledger.store.check_ledger_path`)."""
    return check_ledger_path(where.path, create=write, write=write)


def standing(where: PageLedger, ds: DatasetId) -> DatasetRow | None:
    """What ``ds`` has spent in ``where`` and its budget (read-only); None if the ledger or the dataset
    is not there yet."""
    if not _usable(where, write=False):
        return None
    with open_ledger(where.path, readonly=True) as led:
        return led.find(ds)


def charge_draw(where: PageLedger, ds: DatasetId, noise: Any, mechanism: str, *, output: str,
                capability: str | None = None) -> Receipt:
    """Charge one page release made with ``noise`` to ``ds`` in ``where`` (created if absent), committed
    before it returns. Raises :class:`dpviz.ledger.store.BudgetExceeded` (nothing charged) when it does
    not fit the dataset's budget, InputError when the ledger cannot be used. ``capability``: the page's, as
    the release row names it (default ``ds.capability``; give it for a ``records`` dataset)."""
    _usable(where, write=True)
    with open_ledger(where.path, create=True) as led:
        return led.charge(ds, Charge.of_noise(noise), mechanism=mechanism, source=ds.name, output=output,
                          capability=capability)


def record_output(where: PageLedger, receipt: Receipt, text: str) -> str:
    """Record the SHA-256 of the release's CSV (the download's exact bytes); returns it."""
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    _usable(where, write=True)
    with open_ledger(where.path, create=False) as led:
        led.finish(receipt.release_id, digest)
    return digest


def set_budget(where: PageLedger, ds: DatasetId, epsilon: float, delta: float | None = None) -> DatasetRow:
    """Set the total budget of ``ds`` in a *session* ledger (the server's budgets are set with
    ``python -m dpviz ledger set-budget``)."""
    if where.kind != "session":
        raise InputError("the server's ledger budgets are set with `python -m dpviz ledger set-budget`, not here")
    budget = DatasetBudget(float(epsilon), None if delta is None else float(delta))
    _usable(where, write=True)
    with open_ledger(where.path, create=True) as led:
        return led.set_budget(ds, budget)
