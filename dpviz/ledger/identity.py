"""Which dataset a release spends from: the SHA-256 of the dataset's canonical content.

The ledger must give one budget to one set of people, however the file is spelled. So the identity is
not the file's bytes (a re-save with other line endings, another column order or JSON instead of CSV
would be a "new" dataset with a fresh budget) but a canonical form of what the capability parsed,
prefixed with ``dpviz-ledger/1 CAPABILITY`` so that forms of different capabilities never collide. Each
capability defines its form in its ``canonical_bytes`` hook (``dpviz/<cap>/io.py``) and describes it in a
``CANONICAL`` constant (its io module, else its hooks module); e.g. a tree hashes its parsed nodes
``[node, parent, count]`` as sorted JSON lines (invariant to the file format and row order), a stream its
count series in time order (the order is the data).

How the ledger loads a dataset as its release command does (:func:`load_for_ledger`) is the capability's
``ledger_load(source, **options)`` in its hooks module (default: its ``load`` hook), with the options its
``LEDGER_ARGS`` declare (e.g. a stream's count column); a capability whose form re-reads the source (its
hooks module's ``LEDGER_LOADS = False``) is not loaded at all.

Bundled samples are hashed from their loaded content the same way (a sample and a file with the same
content are one dataset). The canonical form is what the capability *parsed*: a different column, a
subset of the rows, or other values are another dataset — the ledger is bookkeeping for an honest
curator, not a proof that two files hold different people. The hash is a fingerprint of private data: it
goes into the ledger only, never into a release or its metadata.

**Records** (issue 21). A release *counted from records* — one row per person, event or edge: ``tree
--levels``, ``stream --time-column --bucket``, every marginals file (its records before projection), each
with or without ``--person-column/--max-contributions`` — is charged to the records file itself, one dataset
whichever capability counts it and whichever columns, levels, bucket or bound it counts by (a tree by
levels and the marginals of the same file spend ONE budget): capability ``records``
(:func:`records_identity`). Its canonical form is ``dpviz-ledger/1 records``, then
:func:`dpviz.core.records.records_digest`: ``dpviz-records/1`` and one line per data file, the SHA-256 of
its bytes as stored — a CSV, a gzip CSV, a Parquet file, each ``*.parquet`` file of a folder — the lines
sorted (a folder holding only ``P.parquet`` is ``P.parquet``; file names and order do not matter). It is
streamed (constant memory, I/O bound: ~0.5 GB/s on this box's loaded core, ~5 s for 10^8 rows × 8 columns
of Parquet), chosen over a row-level, format-invariant fingerprint that costs ~1.7 µs a row (minutes at
10^8 rows) and over hashing a gzip CSV decompressed (zlib: ~50 MB/s here). So **a re-save is another
dataset**: other row order, compression, row groups or line endings, a gzip of a CSV, a CSV written from a
Parquet file or the other way round, each starts from a fresh budget — set the budget on the file you release from (``python -m dpviz ledger set-budget FILE``,
no ``--capability``), and keep releasing from that file. A capability's releases are counted from records
when the CLI passes a :class:`dpviz.core.records.RecordsSource` as the charged data, and for a capability
whose ledger form re-reads its source (``LEDGER_LOADS = False``: marginals) for every file. Pre-counted
inputs (tree counts, a stream's series, a histogram, a graph's edge list — under edge-DP the dataset is
its edge set, the same from a CSV, a Parquet edge table or a Dask group-by) and every bundled sample keep
their capability's form. Pages pass the uploaded bytes to :func:`records_identity` (or
:func:`dpviz.ledger.session.page_records_dataset`) and get the CLI's identity of the same file.
"""

from __future__ import annotations

import hashlib
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from dpviz.core import registry
from dpviz.core.registry import SAMPLE_PREFIX, capability
from dpviz.errors import InputError

__all__ = ["DatasetId", "FORMAT", "RECORDS", "RECORDS_CANONICAL", "canonical_bytes", "canonical_description",
           "counted_from_records", "identify", "ledger_args", "load_for_ledger", "page_canonical_bytes",
           "records_identity", "sample_capability"]

FORMAT = "dpviz-ledger/1"
RECORDS = "records"
"""The ``capability`` of a records dataset in the ledger (what counts it is recorded with each release)."""
RECORDS_CANONICAL = ("records file: SHA-256 of each data file's bytes as stored (a CSV, gzip CSV or Parquet file; a "
                     "folder's *.parquet files), sorted; a re-save is another dataset")


@dataclass(frozen=True)
class DatasetId:
    """A dataset as the ledger knows it."""

    sha256: str
    capability: str
    name: str
    canonical: str

    @property
    def short(self) -> str:
        return self.sha256[:12]


def _module(capability_name: str, hook: str) -> ModuleType:
    """The module that holds a capability's hook ``hook`` (imported by resolving the hook)."""
    return sys.modules[capability(capability_name).hook(hook).__module__]


def _hooks_constant(capability_name: str, name: str, default: Any) -> Any:
    """A constant of the capability's io module (that of ``canonical_bytes``), else of its hooks module."""
    for hook in ("canonical_bytes", "audit_target"):
        module = _module(capability_name, hook)
        if hasattr(module, name):
            return getattr(module, name)
    return default


def canonical_description(capability_name: str) -> str:
    """What a capability's canonical form is, in words (its ``CANONICAL``), stored with the dataset."""
    return str(_hooks_constant(capability_name, "CANONICAL", f"{capability_name}: canonical_bytes of the parsed data"))


def canonical_bytes(capability_name: str, source: str | Path, data: Any = None) -> bytes:
    """The canonical form of a dataset: the ledger's header line ``dpviz-ledger/1 CAPABILITY``, then the
    capability's ``canonical_bytes(source, data)`` (``data`` is what the capability loaded from ``source``)."""
    hook = capability(capability_name).hook("canonical_bytes")
    return f"{FORMAT} {capability_name}\n".encode() + hook(source, data)


def page_canonical_bytes(capability_name: str, label: str, data: Any) -> bytes:
    """The canonical form of what a page holds (``data``: what it loaded, or the upload's bytes for a
    capability whose form re-reads its source): the capability's hooks module's ``page_canonical_bytes``
    when it has one, else its ``canonical_bytes`` hook, after the ledger's header line."""
    fn = getattr(_module(capability_name, "audit_target"), "page_canonical_bytes", None)
    if fn is None:
        return canonical_bytes(capability_name, label, data)
    return f"{FORMAT} {capability_name}\n".encode() + fn(label, data)


def display_name(source: str | Path) -> str:
    """``sample:NAME`` as it is, a file as its absolute path."""
    text = str(source)
    return text if text.startswith(SAMPLE_PREFIX) else str(Path(text).resolve())


def records_identity(source: str | Path | bytes, *, name: str | None = None,
                     max_bytes: int | None = None) -> DatasetId:
    """The :class:`DatasetId` of a records source — a CSV, gzip CSV, Parquet file or folder of Parquet files,
    or the bytes of an upload (then ``name``, e.g. ``upload:people.parquet``, names it) — the same whichever
    capability counts it (see the module docstring). ``max_bytes`` caps each file's size."""
    from dpviz.core.records import records_digest

    if isinstance(source, (bytes, bytearray, memoryview)):
        label = name or "the upload"
    else:
        label = None
        if name is None:
            name = display_name(source)
    body = records_digest(source, max_bytes=max_bytes, label=label)
    digest = hashlib.sha256(f"{FORMAT} {RECORDS}\n".encode() + body).hexdigest()
    return DatasetId(digest, RECORDS, name or "upload", RECORDS_CANONICAL)


def counted_from_records(capability_name: str, source: str | Path, data: Any = None) -> bool:
    """Whether a release of ``capability_name`` on ``source`` (loaded into ``data``) is charged to the records
    file: ``data`` is a :class:`dpviz.core.records.RecordsSource` (the CLI counted records); else the
    capability's hooks module's ``counted_from_records(source, data)`` when it has one (e.g. a histogram could
    tell a records file from a counts file); else whether ``source`` is a file of a capability whose ledger
    form re-reads it (``LEDGER_LOADS = False``: marginals). A bundled sample never is."""
    if str(source).startswith(SAMPLE_PREFIX):
        return False
    if data is not None and type(data).__name__ == "RecordsSource":
        from dpviz.core.records import RecordsSource

        if isinstance(data, RecordsSource):
            return True
    hooks = _module(capability_name, "audit_target")
    rule = getattr(hooks, "counted_from_records", None)
    if rule is not None:
        return bool(rule(source, data))
    return not getattr(hooks, "LEDGER_LOADS", True)


def identify(capability_name: str, source: str | Path, data: Any = None) -> DatasetId:
    """The :class:`DatasetId` of ``source`` as loaded by ``capability_name`` into ``data``; a release counted
    from records (:func:`counted_from_records`) is the records file's :func:`records_identity`."""
    if counted_from_records(capability_name, source, data):
        records = type(data).__name__ == "RecordsSource"
        return records_identity(data.source if records else source, max_bytes=data.max_bytes if records else None)
    hashed = hashlib.sha256(f"{FORMAT} {capability_name}\n".encode())  # = sha256(canonical_bytes(...)), without
    hashed.update(capability(capability_name).hook("canonical_bytes")(source, data))  # copying them behind the header
    digest = hashed.hexdigest()
    return DatasetId(digest, capability_name, display_name(source), canonical_description(capability_name))


def sample_capability(spec: str) -> str:
    """The capability that bundles ``sample:NAME``."""
    name = spec.removeprefix(SAMPLE_PREFIX)
    for cap in registry.CAPABILITIES:
        if any(s.name == name for s in cap.samples):
            return cap.name
    known = ", ".join(SAMPLE_PREFIX + s.name for c in registry.CAPABILITIES for s in c.samples)
    raise InputError(f"unknown sample {spec!r}; bundled samples are {known}")


def ledger_args(capability_name: str) -> tuple[tuple[str, dict[str, Any]], ...]:
    """The options a capability's dataset is loaded with (its hooks module's ``LEDGER_ARGS``: ``(flag,
    add_argument keywords)`` pairs, e.g. a stream's ``--count-column``)."""
    return tuple(getattr(_module(capability_name, "audit_target"), "LEDGER_ARGS", ()))


def _dest(flag: str) -> str:
    return flag.lstrip("-").replace("-", "_")


def load_for_ledger(capability_name: str, source: str, **options: Any) -> Any:
    """Load ``source`` as the capability's ``release`` command does with these options (its hooks module's
    ``ledger_load``, else its ``load`` hook; nothing is loaded for a capability whose canonical form re-reads
    its source, ``LEDGER_LOADS = False``). A file that is not a regular file (a FIFO, a device) is refused
    before it is opened. An option given (not None) that the capability does not take (its ``LEDGER_ARGS``) is
    an InputError naming the capabilities that do."""
    capability(capability_name)
    if not str(source).startswith(SAMPLE_PREFIX):
        from dpviz.core.inputs import require_regular_file

        require_regular_file(source, "input")
    given = {k: v for k, v in options.items() if v is not None}
    takes = {_dest(flag) for flag, _ in ledger_args(capability_name)}
    for name in given:
        if name not in takes:
            others = [c.name for c in registry.CAPABILITIES if name in {_dest(f) for f, _ in ledger_args(c.name)}]
            flag = "--" + name.replace("_", "-")
            who = f"only a {' or '.join(others)} dataset takes it" if others else "no capability takes it"
            raise InputError(f"{flag}: {who}, not {capability_name}")
    hooks = _module(capability_name, "audit_target")
    if not getattr(hooks, "LEDGER_LOADS", True):
        from dpviz.core.registry import load_source

        return load_source(capability_name, source, lambda p: None)
    loader = getattr(hooks, "ledger_load", None) or capability(capability_name).hook("load")
    return loader(source, **given)
