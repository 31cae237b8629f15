"""Every release runs inside one charge: where the privacy ledger is, the ``--ledger`` flag, and the gate.

Capabilities charge a release with :func:`charge` (a context manager: the charge is committed before the
body writes anything). Its implementation is the privacy ledger's (:data:`dpviz.core.registry.RELEASE_GATE`,
``dpviz.ledger:charge``), imported when a release runs, so that core and the capabilities never import the
ledger (the layers: core ← capabilities ← tools ← viz/ui ← pages). This module stays light (no numpy at
import): the CLI parser imports it for the ``--ledger`` flag.
"""

from __future__ import annotations

import os
import sys
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["LEDGER_ENV", "PAUSE_AFTER_CHARGE_ENV", "EXIT_BUDGET", "FILE_NAME", "data_dir", "default_path",
           "LedgerPath", "ledger_path", "add_ledger_arg", "charge"]

LEDGER_ENV = "DPVIZ_LEDGER"
PAUSE_AFTER_CHARGE_ENV = "DPVIZ_LEDGER_TEST_PAUSE_AFTER_CHARGE"
"""Test only: seconds to sleep after the charge is committed and before the output is written (the
window a SIGKILL test aims at)."""
EXIT_BUDGET = 3
"""Exit code of a release refused by the ledger."""
FILE_NAME = "ledger.sqlite3"


def data_dir() -> Path:
    """The user's data directory: ``$XDG_DATA_HOME`` if set (absolute), else the platform's usual place."""
    xdg = os.environ.get("XDG_DATA_HOME", "")
    if xdg and os.path.isabs(xdg):
        return Path(xdg)
    if sys.platform == "win32":  # pragma: no cover - platform-specific
        return Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    if sys.platform == "darwin":  # pragma: no cover - platform-specific
        return Path.home() / "Library" / "Application Support"
    return Path.home() / ".local" / "share"


def default_path() -> Path:
    """Where the ledger lives when neither ``--ledger`` nor ``$DPVIZ_LEDGER`` names one."""
    return data_dir() / "dpviz" / FILE_NAME


@dataclass(frozen=True)
class LedgerPath:
    """The ledger a command uses: ``explicit`` (``--ledger`` or the environment: created if absent) or the
    default (used only if it exists, except by ``ledger init``/``set-budget``)."""

    path: Path
    origin: str

    @property
    def explicit(self) -> bool:
        return self.origin != "default"


def ledger_path(flag: str | Path | None = None) -> LedgerPath:
    """``--ledger`` if given, else ``$DPVIZ_LEDGER`` if set and not empty, else :func:`default_path`."""
    if flag is not None and str(flag):
        return LedgerPath(Path(flag).expanduser(), "--ledger")
    env = os.environ.get(LEDGER_ENV, "")
    if env:
        return LedgerPath(Path(env).expanduser(), LEDGER_ENV)
    return LedgerPath(default_path(), "default")


def add_ledger_arg(p: Any) -> None:
    """The ``--ledger PATH`` flag (release commands and the ``ledger`` group)."""
    p.add_argument("--ledger", metavar="PATH", default=None,
                   help=f"privacy ledger (SQLite) to charge; default ${LEDGER_ENV}, else {default_path()} "
                        "(a release creates it if absent: every release is charged)")


def charge(args: Any, capability: str, source: str | Path, data: Any, noise: Any, mechanism: str, *,
           extra_outputs: Any = (), inputs: Any = ()) -> AbstractContextManager[Any]:
    """Charge a release to the ledger, then let the caller write its outputs::

        with charge(args, CAP, args.input, data, noise, args.method):
            write_release(table, args.output, meta, inputs=[src])

    ``data`` is what the capability loaded from ``source`` — or, for a release counted from records (tree
    ``--levels``, stream ``--bucket``), a :class:`dpviz.core.records.RecordsSource`: the release is then
    charged to the records file, one dataset whichever capability counts it (:mod:`dpviz.ledger.identity`).
    The gate is the ledger's :func:`dpviz.ledger.charge` (its docstring has the contract: outputs checked
    first, exit 3 over budget, the charge stands if the body fails)."""
    from dpviz.core.registry import RELEASE_GATE, resolve

    return resolve(RELEASE_GATE)(args, capability, source, data, noise, mechanism, extra_outputs=extra_outputs,
                                 inputs=inputs)
