"""Which dataset a release spends from: the SHA-256 of the dataset's canonical content.

The ledger must give one budget to one set of people, however the file is spelled. So the identity is
not the file's bytes (a re-save with other line endings, another column order or JSON instead of CSV
would be a "new" dataset with a fresh budget) but a canonical form of what the capability parsed,
prefixed with ``dpviz-ledger/1 CAPABILITY`` so that forms of different capabilities never collide:

* **tree** — the parsed tree: one JSON line ``[node, parent, count]`` per node (count null for inner
  nodes, integral counts as integers), lines sorted. Invariant to the file format (node/parent CSV,
  level columns, JSON) and to row order.
* **stream** — the parsed count series in time order (every step, before ``--horizon``), one number a
  line. Column names, timestamps and formatting do not matter; the order does (it is the data).
* **marginals** — the records before any projection or binning: the header's column names sorted, and
  one JSON line of stripped values a record (columns in that sorted order), lines sorted. So every
  ``--attributes``/``--bins``/``--binning`` choice on one file spends from one budget: they are the
  same people. A bundled sample's records are its category labels.
* **graph** — the parsed simple undirected edge set: one JSON line ``[a, b]`` per edge with the two
  vertex labels (``a`` < ``b``), lines sorted. Invariant to edge order and direction, duplicates,
  separators and the header; the vertex count is public under edge-DP and not part of it.

Bundled samples are hashed from their loaded content the same way (``sample:county`` and a file with
the same nodes and counts are one dataset). The canonical form is what the capability *parsed*: a
different column (stream ``--count-column``), a subset of the rows, or other values are another
dataset — the ledger is bookkeeping for an honest curator, not a proof that two files hold different
people. The hash is a fingerprint of private data: it goes into the ledger only, never into a release
or its metadata.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dpviz.core.registry import CAPABILITIES, SAMPLE_PREFIX, capability, load_sample
from dpviz.errors import InputError

__all__ = ["DatasetId", "identify", "canonical_bytes", "sample_capability", "load_for_ledger", "FORMAT"]

FORMAT = "dpviz-ledger/1"
CANONICAL = {
    "tree": "parsed tree: sorted JSON lines [node, parent, count]",
    "stream": "parsed count series in time order, one count a line",
    "marginals": "records before projection/binning: sorted column names, sorted JSON lines of values",
    "graph": "parsed undirected edge set: sorted JSON lines [a, b] of vertex labels",
}


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


def _number(x: float) -> int | float:
    x = float(x)
    return int(x) if x.is_integer() else x


def _lines(rows: Iterable[Any]) -> bytes:
    """Sorted JSON lines (UTF-8): an order-free, unambiguous serialisation of a set of rows."""
    lines = sorted(json.dumps(r, ensure_ascii=False, separators=(",", ":")) for r in rows)
    return ("\n".join(lines) + "\n").encode("utf-8")


def _tree(data) -> bytes:
    t = data.tree
    ids, parents = data.node_ids, data.parent_ids
    counts: list[int | float | None] = [None] * t.n1 + [_number(v) for v in data.x.tolist()]
    return _lines([str(i), str(p), c] for i, p, c in zip(ids.tolist(), parents.tolist(), counts, strict=True))


def _stream(data) -> bytes:
    return ("\n".join(str(_number(v)) for v in data.counts.tolist()) + "\n").encode("ascii")


def _graph(data) -> bytes:
    labels = [str(i) for i in range(data.n_nodes)] if data.labels is None else [str(x) for x in data.labels]
    pairs = ((labels[u], labels[v]) for u, v in data.edges.tolist())
    return _lines(sorted(p) for p in pairs)


def _records(header: list[str], rows: Iterable[list[str]]) -> bytes:
    order = sorted(range(len(header)), key=header.__getitem__)
    head = json.dumps([header[k] for k in order], ensure_ascii=False) + "\n"
    return head.encode("utf-8") + _lines([r[k] for k in order] for r in rows)


def _marginals_file(path: Path) -> bytes:
    """The records of a marginals CSV as :func:`dpviz.marginals.io.read_table` reads them (same size
    caps, gzip, encoding and delimiter rules), before any projection or binning."""
    from dpviz.core.inputs import require_regular_file
    from dpviz.marginals.io import MAX_BYTES, _decode, _delimiter, _read_bytes

    raw, label, _ = _read_bytes(require_regular_file(path, "input"), MAX_BYTES, "input")
    text = _decode(raw)
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=_delimiter(text))
    rows = [[v.strip() for v in r] for r in reader if r]
    if not rows:
        raise InputError(f"{label} is empty: expected a header line of column names and at least one data row")
    return _records(rows[0], rows[1:])


def _marginals_sample(data) -> bytes:
    import numpy as np

    cols = [np.asarray(cats, dtype=object)[data.codes[:, k]] for k, cats in enumerate(data.categories)]
    return _records(list(data.domain.attrs), np.column_stack(cols).tolist())


def canonical_bytes(capability_name: str, source: str | Path, data: Any = None) -> bytes:
    """The canonical form of a dataset (see the module docstring): ``data`` is what the capability
    loaded from ``source`` (marginals re-reads files before projection and reloads samples in full)."""
    head = f"{FORMAT} {capability_name}\n".encode()
    if capability_name == "tree":
        return head + _tree(data)
    if capability_name == "stream":
        return head + _stream(data)
    if capability_name == "graph":
        return head + _graph(data)
    if capability_name == "marginals":
        text = str(source)
        if text.startswith(SAMPLE_PREFIX):
            return head + _marginals_sample(load_sample("marginals", text))
        return head + _marginals_file(Path(text))
    raise InputError(f"ledger: unknown capability {capability_name!r}")


def display_name(source: str | Path) -> str:
    """``sample:NAME`` as it is, a file as its absolute path."""
    text = str(source)
    return text if text.startswith(SAMPLE_PREFIX) else str(Path(text).resolve())


def identify(capability_name: str, source: str | Path, data: Any = None) -> DatasetId:
    """The :class:`DatasetId` of ``source`` as loaded by ``capability_name`` into ``data``."""
    digest = hashlib.sha256(canonical_bytes(capability_name, source, data)).hexdigest()
    return DatasetId(digest, capability_name, display_name(source), CANONICAL[capability_name])


def sample_capability(spec: str) -> str:
    """The capability that bundles ``sample:NAME``."""
    name = spec.removeprefix(SAMPLE_PREFIX)
    for cap in CAPABILITIES:
        if any(s.name == name for s in cap.samples):
            return cap.name
    known = ", ".join(SAMPLE_PREFIX + s.name for c in CAPABILITIES for s in c.samples)
    raise InputError(f"unknown sample {spec!r}; bundled samples are {known}")


def load_for_ledger(capability_name: str, source: str, *, count_column: str | None = None,
                    time_column: str | None = None, n_nodes: int | None = None,
                    header: bool | None = None, hierarchy: str | Path | None = None) -> Any:
    """Load ``source`` as the capability's ``release`` command does with these options (marginals
    needs nothing loaded: :func:`canonical_bytes` reads its records). A file that is not a regular file
    (a FIFO, a device) is refused before it is opened. A tree with ``hierarchy`` is its counts joined onto
    that declaration (:func:`dpviz.tree.hierarchy.join_counts`), the tree ``tree release --hierarchy``
    charges."""
    capability(capability_name)
    if not str(source).startswith(SAMPLE_PREFIX):
        from dpviz.core.inputs import require_regular_file

        require_regular_file(source, "input")
    if hierarchy is not None and capability_name != "tree":
        raise InputError("--hierarchy: only a tree has a hierarchy")
    if capability_name == "tree":
        from dpviz.tree.io import load as load_source

        if hierarchy is None:
            return load_source(source)
        from dpviz.core.inputs import require_regular_file
        from dpviz.core.registry import load_source as load_any
        from dpviz.tree.hierarchy import join_counts, read_counts, read_hierarchy

        hier = read_hierarchy(require_regular_file(hierarchy, "--hierarchy"), what="--hierarchy")
        return join_counts(hier, load_any("tree", source, read_counts))
    if capability_name == "stream":
        from dpviz.stream.io import load as load_source

        return load_source(source, count_column=count_column, time_column=time_column)
    if capability_name == "graph":
        from dpviz.core.registry import load_source
        from dpviz.graph.io import read_edges

        return load_source("graph", source, lambda p: read_edges(p, n_nodes=n_nodes, header=header))
    from dpviz.core.registry import load_source

    return load_source("marginals", source, lambda p: None)
