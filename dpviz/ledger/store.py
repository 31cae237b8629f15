"""The ledger file: one SQLite database (standard library ``sqlite3``, WAL mode).

Safety rules, each tested:

* **Charge first, atomically.** :meth:`Ledger.charge` runs in one ``BEGIN IMMEDIATE`` transaction:
  it takes the database's write lock *before* reading what was spent, so two processes cannot both
  see the same remaining budget; the second waits (busy timeout), then sees the first's charge.
  The charge is committed (``synchronous=FULL``) before the release writes anything; a process that
  dies between the charge and the write leaves the budget charged and no output — conservative.
  :meth:`Ledger.finish` then records the output's SHA-256 (status ``written``).
* **Never adopt a foreign file.** A file at the ledger path is used only if it is an SQLite database
  whose header carries our ``application_id`` (:data:`APP_ID`) and whose schema version we know;
  anything else (not SQLite, another application's database, corrupt) is refused with an
  :class:`~dpviz.errors.InputError` and left untouched. A new ledger is built under a temporary name
  and hard-linked into place, so a half-created ledger is never visible and two creators never clash.
* **Read-only views** (:func:`open_ledger` with ``readonly=True``: ``ledger show``, the page) open the
  file with ``mode=ro`` and never create one.

SQLite references: "Write-Ahead Logging" (https://sqlite.org/wal.html), "BEGIN TRANSACTION"
(https://sqlite.org/lang_transaction.html), "Database File Format" §1.3 (header offset 68:
application ID; https://sqlite.org/fileformat.html).
"""

from __future__ import annotations

import datetime as dt
import math
import os
import sqlite3
import stat
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import dpviz
from dpviz.errors import InputError
from dpviz.ledger import FILE_NAME
from dpviz.ledger.accounts import Charge, DatasetBudget, Room, Spent
from dpviz.ledger.identity import FORMAT, DatasetId

__all__ = ["APP_ID", "SCHEMA_VERSION", "Ledger", "open_ledger", "BudgetExceeded", "DatasetRow", "ReleaseRow",
           "Receipt", "check_ledger_file", "check_ledger_path", "PAUSE_IN_CHARGE_ENV"]

APP_ID = 0x4450564C
"""``PRAGMA application_id`` of a dpviz ledger ("DPVL")."""
SCHEMA_VERSION = 1
"""``PRAGMA user_version`` of the schema below."""
def _busy_timeout() -> float:
    try:
        value = float(os.environ.get("DPVIZ_LEDGER_BUSY_TIMEOUT") or 60.0)
    except ValueError:
        return 60.0
    return value if 0 <= value <= 86400 else 60.0


BUSY_TIMEOUT = _busy_timeout()
"""Seconds a writer waits for another process's transaction before giving up (one line, exit 2, nothing
charged); ``$DPVIZ_LEDGER_BUSY_TIMEOUT`` sets it."""
PAUSE_IN_CHARGE_ENV = "DPVIZ_LEDGER_TEST_PAUSE_IN_CHARGE"
"""Test only: seconds to sleep inside the charge transaction (holding the write lock), to make races
deterministic."""
_SQLITE_MAGIC = b"SQLite format 3\x00"

SCHEMA = """
CREATE TABLE datasets (
    id TEXT PRIMARY KEY,                -- SHA-256 (hex) of the canonical content
    capability TEXT NOT NULL,
    name TEXT NOT NULL,                 -- sample:NAME or the file path, when first seen
    canonical TEXT NOT NULL,            -- what was hashed
    created_utc TEXT NOT NULL,
    budget_epsilon REAL,                -- NULL: no budget (releases are recorded, never refused)
    budget_delta REAL,                  -- NULL: a pure ε budget
    budget_set_utc TEXT
);
CREATE TABLE releases (
    id INTEGER PRIMARY KEY,
    dataset TEXT NOT NULL REFERENCES datasets(id),
    time_utc TEXT NOT NULL,             -- when charged
    capability TEXT NOT NULL,
    source TEXT NOT NULL,               -- the DATA argument
    mechanism TEXT NOT NULL,
    family TEXT NOT NULL,               -- laplace | gaussian
    accounting TEXT NOT NULL CHECK (accounting IN ('pure', 'zcdp')),
    epsilon REAL, delta REAL, rho REAL, -- the budget as the user stated it
    charge_epsilon REAL,                -- pure: ε; zcdp: NULL
    charge_rho REAL NOT NULL,           -- zcdp: ρ; pure: ε²/2
    output TEXT NOT NULL,
    output_sha256 TEXT,                 -- NULL until the output is written
    status TEXT NOT NULL CHECK (status IN ('charged', 'written')),
    written_utc TEXT,
    pid INTEGER,
    dpviz_version TEXT
);
CREATE INDEX releases_dataset ON releases(dataset);
"""
_TABLES = {"datasets", "releases"}


def _output_label(output: str | Path) -> str:
    """What a release row says it wrote: a file path (resolved), or a label as given (a page's download,
    ``dashboard download NAME``, is no file on the server)."""
    if isinstance(output, Path):
        return str(output.resolve())
    return output


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


@dataclass(frozen=True)
class DatasetRow:
    id: str
    capability: str
    name: str
    canonical: str
    created_utc: str
    budget: DatasetBudget | None
    budget_set_utc: str | None
    spent: Spent

    @property
    def short(self) -> str:
        return self.id[:12]

    @property
    def budget_text(self) -> str:
        return "none (recorded, never refused)" if self.budget is None else self.budget.describe

    def report(self) -> dict[str, float | None]:
        return self.spent.report(self.budget)


@dataclass(frozen=True)
class ReleaseRow:
    id: int
    dataset: str
    time_utc: str
    capability: str
    source: str
    mechanism: str
    family: str
    accounting: str
    epsilon: float | None
    delta: float | None
    rho: float | None
    charge_epsilon: float | None
    charge_rho: float
    output: str
    output_sha256: str | None
    status: str
    written_utc: str | None
    pid: int | None
    dpviz_version: str | None

    @property
    def charge_text(self) -> str:
        if self.accounting == "pure":
            return f"ε = {self.charge_epsilon:g} (pure)"
        return f"ρ = {self.charge_rho:.6g} (zCDP)"

    @property
    def stated_text(self) -> str:
        if self.rho is not None:
            return f"ρ = {self.rho:g}"
        return f"ε = {self.epsilon:g}" if self.delta is None else f"(ε, δ) = ({self.epsilon:g}, {self.delta:.3g})"


@dataclass(frozen=True)
class Receipt:
    """A committed charge: the release row, and the dataset's totals with it."""

    release_id: int
    dataset: DatasetId
    charge: Charge
    spent: Spent
    budget: DatasetBudget | None
    path: Path


class BudgetExceeded(Exception):
    """A release that does not fit its dataset's budget (nothing was charged)."""

    def __init__(self, dataset: DatasetId, budget: DatasetBudget, spent: Spent, charge: Charge, room: Room):
        self.dataset, self.budget, self.spent, self.charge, self.room = dataset, budget, spent, charge, room
        why = (" (a pure ε budget admits no Gaussian release: set one with a δ)"
               if charge.accounting == "zcdp" and budget.delta is None else "")
        eps = spent.epsilon(budget.delta)
        super().__init__(
            f"this release ({charge.describe}) exceeds the budget of dataset {dataset.name} "
            f"({budget.describe}; spent ε = {eps:.6g} in {spent.releases} release(s)){why}; remaining: "
            f"{room.describe}; nothing was written")


def _short(path: Path | str, limit: int = 160) -> str:
    text = str(path)
    return text if len(text) <= limit else text[:limit // 2] + "…" + text[-limit // 2:]


def check_ledger_path(path: str | Path, *, create: bool = False, write: bool = True) -> bool:
    """Whether a ledger file is at ``path``; InputError (one line, nothing opened) for a path that cannot
    be one: a folder, a FIFO, a device or a socket (opening them would block or read without end), a name
    too long, a component that is a file; for a ledger to write (``write``), a read-only file or folder;
    for a missing one to ``create``, a folder that does not exist or takes no new file."""
    from dpviz.core.inputs import KIND_NAMES

    path = Path(path)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        st = None
    except OSError as exc:  # a name too long, a component that is a file, a loop of links
        raise InputError(f"ledger {_short(path)}: cannot use this path ({exc.strerror or exc})") from None
    if st is not None:
        kind = stat.S_IFMT(st.st_mode)
        if kind == stat.S_IFDIR:
            raise InputError(f"ledger {_short(path)} is a folder; expected a ledger file (e.g. "
                             f"{_short(path / FILE_NAME)})")
        if kind != stat.S_IFREG:
            raise InputError(f"ledger {_short(path)} is {KIND_NAMES.get(kind, 'not a regular file')}; expected a "
                             "ledger file")
        if write and not os.access(path, os.R_OK | os.W_OK):
            raise InputError(f"ledger {_short(path)} is read-only: nothing can be charged or recorded in it (nothing "
                             "was charged or written); make it writable or pass --ledger with another path")
        if write and not os.access(path.parent, os.W_OK | os.X_OK):
            raise InputError(f"ledger {_short(path)}: its folder is read-only (SQLite writes its -wal and -shm files "
                             "there); nothing was charged or written")
        return True
    if create:
        folder = path.parent
        if not folder.is_dir():
            raise InputError(f"ledger: the folder {_short(folder)} does not exist")
        if not os.access(folder, os.W_OK | os.X_OK):
            raise InputError(f"ledger {_short(path)}: the folder {_short(folder)} is read-only; a ledger cannot be "
                             "created there")
        if len(os.fsencode(f".{path.name}.")) + 8 + len(".creating") > _name_max(folder):
            raise InputError(f"ledger {_short(path)}: the name is too long for the folder {_short(folder)}")
    return False


def _name_max(folder: Path) -> int:
    try:
        return int(os.pathconf(folder, "PC_NAME_MAX"))
    except (OSError, ValueError, AttributeError):  # pragma: no cover - platforms without pathconf
        return 255


def _sqlite_error(path: Path, exc: sqlite3.Error, doing: str) -> InputError:
    """One line for an SQLite error on the ledger (busy, read-only, unreadable)."""
    text = str(exc)
    if "locked" in text or "busy" in text:
        return InputError(f"ledger {_short(path)} is busy (another process holds it: {text}) after waiting "
                          f"{BUSY_TIMEOUT:g} s; nothing was {doing}")
    if "readonly" in text or "read-only" in text:
        return InputError(f"ledger {_short(path)} is read-only ({text}); nothing was {doing}")
    return InputError(f"ledger {_short(path)} cannot be used ({text}); nothing was {doing}; it is left untouched")


def check_ledger_file(path: Path) -> None:
    """Refuse anything at ``path`` that is not a dpviz ledger (InputError; the file is not touched, and
    a FIFO or a device is never opened)."""
    check_ledger_path(path, write=False)
    keep = "it is left untouched; pass --ledger with another path, or move the file away"
    try:
        with path.open("rb") as fh:
            header = fh.read(100)
    except OSError as exc:
        raise InputError(f"ledger {path}: cannot read it ({exc.strerror})") from None
    if len(header) < 100 or not header.startswith(_SQLITE_MAGIC):
        what = "an empty file" if not header else "not an SQLite database"
        raise InputError(f"ledger {path} is not a dpviz ledger ({what}); {keep}")
    app = int.from_bytes(header[68:72], "big")
    if app != APP_ID:
        raise InputError(f"ledger {path} is an SQLite database of another application (application_id "
                         f"{app:#x}, a dpviz ledger has {APP_ID:#x}); {keep}")


def _create(path: Path) -> None:
    """Build an empty ledger under a temporary name, then link it to ``path`` (if nobody did first)."""
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".creating", dir=path.parent)
    except OSError as exc:
        raise InputError(f"ledger {_short(path)} cannot be created: {exc.strerror or exc}") from None
    os.close(fd)
    try:
        con = sqlite3.connect(tmp, isolation_level=None)
        try:
            con.execute(f"PRAGMA application_id = {APP_ID}")
            con.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            con.executescript("BEGIN;" + SCHEMA + "COMMIT;")
            con.execute("PRAGMA journal_mode = WAL")
        finally:
            con.close()
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass  # another process created it first: use theirs (validated by the caller)
        except OSError:  # pragma: no cover - a file system without hard links
            if not path.exists():
                os.replace(tmp, path)
    finally:
        for p in (tmp, tmp + "-wal", tmp + "-shm"):
            if os.path.exists(p):
                os.unlink(p)


def open_ledger(path: str | Path, *, create: bool = False, readonly: bool = False) -> Ledger:
    """The ledger at ``path``. ``create``: build it if absent (its folder must exist); otherwise a
    missing file is an InputError. A foreign or corrupt file is always an InputError."""
    path = Path(path)
    if not check_ledger_path(path, create=create and not readonly, write=not readonly):
        if not create or readonly:
            raise InputError(f"no ledger at {path} (create one with `python -m dpviz ledger init --ledger {path}` "
                             "or `ledger set-budget`)")
        try:
            _create(path)
        except sqlite3.Error as exc:
            raise _sqlite_error(path, exc, "created") from None
    check_ledger_file(path)
    try:
        if readonly:
            con = sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True, isolation_level=None,
                                  timeout=BUSY_TIMEOUT)
        else:
            con = sqlite3.connect(path, isolation_level=None, timeout=BUSY_TIMEOUT)
        con.row_factory = sqlite3.Row
        ledger = Ledger(path, con, readonly)
        ledger._check_schema()
    except sqlite3.DatabaseError as exc:
        if isinstance(exc, sqlite3.OperationalError):
            raise _sqlite_error(path, exc, "read or written") from None
        raise InputError(f"ledger {path} is corrupt or unreadable ({exc}); it is left untouched") from None
    return ledger


class Ledger:
    """An open ledger (use as a context manager, or call :meth:`close`)."""

    def __init__(self, path: Path, con: sqlite3.Connection, readonly: bool):
        self.path, self._con, self.readonly = path, con, readonly

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._con.close()

    # ------------------------------------------------------------------------------------- plumbing
    def _check_schema(self) -> None:
        version = self._con.execute("PRAGMA user_version").fetchone()[0]
        if version != SCHEMA_VERSION:
            newer = " (written by a newer dpviz)" if version > SCHEMA_VERSION else ""
            raise InputError(f"ledger {self.path}: schema version {version}, expected {SCHEMA_VERSION}{newer}; "
                             "it is left untouched")
        tables = {r[0] for r in self._con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if not _TABLES <= tables:
            raise InputError(f"ledger {self.path}: tables {', '.join(sorted(_TABLES - tables))} are missing; "
                             "it is left untouched")
        if not self.readonly:
            self._con.execute("PRAGMA synchronous = FULL")  # a commit is on disk before the output is written
            self._con.execute("PRAGMA foreign_keys = ON")

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One ``BEGIN IMMEDIATE`` transaction: the write lock first, then reads, writes, COMMIT."""
        if self.readonly:
            raise InputError(f"ledger {self.path} is open read-only")
        try:
            self._con.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise _sqlite_error(self.path, exc, "charged or written") from None
        try:
            yield self._con
            self._con.execute("COMMIT")
        except BaseException as exc:
            if self._con.in_transaction:
                try:
                    self._con.execute("ROLLBACK")
                except sqlite3.Error:
                    pass
            if isinstance(exc, sqlite3.Error):
                raise _sqlite_error(self.path, exc, "charged or written") from None
            raise

    def _ensure_dataset(self, ds: DatasetId) -> None:
        self._con.execute("INSERT OR IGNORE INTO datasets (id, capability, name, canonical, created_utc) "
                          "VALUES (?, ?, ?, ?, ?)", (ds.sha256, ds.capability, ds.name, ds.canonical, _now()))

    def _spent(self, dataset: str) -> Spent:
        row = self._con.execute(
            "SELECT COALESCE(SUM(CASE WHEN accounting = 'pure' THEN charge_epsilon END), 0.0), "
            "COALESCE(SUM(CASE WHEN accounting = 'pure' THEN charge_rho END), 0.0), "
            "COALESCE(SUM(CASE WHEN accounting = 'zcdp' THEN charge_rho END), 0.0), COUNT(*) "
            "FROM releases WHERE dataset = ?", (dataset,)).fetchone()
        return Spent(float(row[0]), float(row[1]), float(row[2]), int(row[3]))

    def _dataset_row(self, row: sqlite3.Row) -> DatasetRow:
        budget = None if row["budget_epsilon"] is None else DatasetBudget(row["budget_epsilon"], row["budget_delta"])
        return DatasetRow(row["id"], row["capability"], row["name"], row["canonical"], row["created_utc"], budget,
                          row["budget_set_utc"], self._spent(row["id"]))

    # ------------------------------------------------------------------------------------- writing
    def charge(self, ds: DatasetId, charge: Charge, *, mechanism: str, source: str, output: str | Path,
               capability: str | None = None) -> Receipt:
        """Charge one release to ``ds`` (see the module docstring); BudgetExceeded if it does not fit. The
        release row names ``capability`` (default ``ds.capability``): what made the release, e.g. a tree
        counted from a ``records`` dataset."""
        pause = float(os.environ.get(PAUSE_IN_CHARGE_ENV) or 0)
        with self._write() as con:
            self._ensure_dataset(ds)
            row = con.execute("SELECT budget_epsilon, budget_delta FROM datasets WHERE id = ?",
                              (ds.sha256,)).fetchone()
            budget = None if row[0] is None else DatasetBudget(row[0], row[1])
            spent = self._spent(ds.sha256)
            if budget is not None:
                room = spent.room(budget)
                if not room.admits(charge):
                    raise BudgetExceeded(ds, budget, spent, charge, room)
            if pause > 0:
                print(f"ledger: holding the charge transaction; test pause {pause:g} s", file=sys.stderr, flush=True)
                time.sleep(pause)
            stated = charge.stated
            cur = con.execute(
                "INSERT INTO releases (dataset, time_utc, capability, source, mechanism, family, accounting, epsilon, "
                "delta, rho, charge_epsilon, charge_rho, output, status, pid, dpviz_version) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'charged', ?, ?)",
                (ds.sha256, _now(), capability or ds.capability, str(source), mechanism, charge.family,
                 charge.accounting, stated.epsilon, stated.delta, stated.rho, charge.epsilon, charge.rho,
                 _output_label(output), os.getpid(), dpviz.__version__))
            release_id = int(cur.lastrowid)
        return Receipt(release_id, ds, charge, spent.plus(charge), budget, self.path)

    def finish(self, release_id: int, output_sha256: str) -> None:
        """The release's output is written: record its SHA-256."""
        with self._write() as con:
            con.execute("UPDATE releases SET status = 'written', output_sha256 = ?, written_utc = ? WHERE id = ?",
                        (output_sha256, _now(), release_id))

    def set_budget(self, ds: DatasetId, budget: DatasetBudget) -> DatasetRow:
        """Set (or replace) the total budget of ``ds``."""
        with self._write() as con:
            self._ensure_dataset(ds)
            con.execute("UPDATE datasets SET budget_epsilon = ?, budget_delta = ?, budget_set_utc = ? WHERE id = ?",
                        (budget.epsilon, budget.delta, _now(), ds.sha256))
        return self.dataset(ds.sha256)

    # ------------------------------------------------------------------------------------- reading
    def datasets(self) -> list[DatasetRow]:
        rows = self._con.execute("SELECT * FROM datasets ORDER BY created_utc, id").fetchall()
        return [self._dataset_row(r) for r in rows]

    def dataset(self, key: str) -> DatasetRow:
        """A dataset by its id or an unambiguous prefix of it (at least 6 hex digits)."""
        key = key.strip().lower()
        if len(key) < 6 or any(c not in "0123456789abcdef" for c in key):
            raise InputError(f"dataset id {key!r}: expected the SHA-256 shown by `ledger show`, or at least 6 of "
                             "its first hex digits")
        rows = self._con.execute("SELECT * FROM datasets WHERE substr(id, 1, ?) = ?", (len(key), key)).fetchall()
        if len(rows) > 1:
            raise InputError(f"dataset id {key!r} is ambiguous ({len(rows)} datasets start with it); give more digits")
        if not rows:
            raise InputError(f"dataset {key!r} is not in the ledger {self.path}")
        return self._dataset_row(rows[0])

    def find(self, ds: DatasetId) -> DatasetRow | None:
        row = self._con.execute("SELECT * FROM datasets WHERE id = ?", (ds.sha256,)).fetchone()
        return None if row is None else self._dataset_row(row)

    def releases(self, dataset: str | None = None) -> list[ReleaseRow]:
        sql, args = "SELECT * FROM releases", ()
        if dataset is not None:
            sql, args = sql + " WHERE dataset = ?", (dataset,)
        return [ReleaseRow(**dict(r)) for r in self._con.execute(sql + " ORDER BY id", args).fetchall()]

    def export(self) -> dict[str, Any]:
        """Everything in the ledger as plain JSON-ready data (non-finite numbers as None)."""
        releases = self.releases()
        out = []
        for d in self.datasets():
            out.append({"id": d.id, "capability": d.capability, "name": d.name, "canonical": d.canonical,
                        "created_utc": d.created_utc,
                        "budget": None if d.budget is None else asdict(d.budget), "budget_set_utc": d.budget_set_utc,
                        "spent": _finite(d.report()),
                        "releases": [asdict(r) for r in releases if r.dataset == d.id]})
        return {"format": FORMAT, "ledger": str(self.path.resolve()), "exported_utc": _now(),
                "note": "dataset ids are SHA-256 fingerprints of private data: keep this file as private as the data",
                "datasets": out}


def _finite(d: dict[str, float | None]) -> dict[str, float | None]:
    return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in d.items()}
