"""The declared public vertex set of a graph release.

Edge-level DP protects the edges of a graph on a **public** vertex set. A release therefore takes its
vertex set from a declaration, never from the ids that happen to appear in the edges (one edge to a fresh
vertex would otherwise change the published ``n_nodes`` and vertex order):

- :meth:`VertexSet.read` — a file of vertex ids, one per line (CLI ``--nodes FILE``); blank lines are
  skipped, leading and trailing spaces stripped, a repeated id is an error naming both lines. If every id
  is an integer the vertices are numbered in increasing numeric order (as :func:`dpviz.graph.io.read_edges`
  numbers integer ids), otherwise in the file's order.
- :meth:`VertexSet.count` — ids 0..N-1 (CLI ``--n-nodes N``).
- :meth:`VertexSet.sample` — a bundled graph's shipped declaration: ids 0..n_nodes-1, ``n_nodes`` from its
  ``NAME.json`` sidecar (isolated vertices included).
- :meth:`VertexSet.from_data` — the explicit opt-out (``--structure-from-data``): the ids found in the edges.
  Not private; its :attr:`VertexSet.source` says so.

:meth:`VertexSet.restrict` maps a graph read from the data onto the declared vertex set: an id is matched
to a declared id by its text, integers by value (``007`` is ``7``); **edges touching an undeclared vertex
are dropped** (before any mechanism), and how many were is never published — only a simulation may show it
(:meth:`VertexSet.dropped`). Declared vertices in no edge are isolated vertices of the released graph.
:func:`describe` lists the ids found in the data: a declaration template for the curator to review.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from dpviz.core.inputs import require_regular_file
from dpviz.core.structure import StructureSource
from dpviz.errors import InputError
from dpviz.graph.io import INT_ID, MAX_BYTES, MAX_LINE_BYTES, MAX_NODES, read_lines
from dpviz.graph.model import Graph, canonical_edges, check_n_nodes

__all__ = ["VertexSet", "describe", "describe_text"]


def _int_mask(values: pd.Series) -> np.ndarray:
    return values.str.fullmatch(INT_ID).to_numpy(dtype=bool)


def _keys(labels: Sequence[str] | None, n: int) -> np.ndarray:
    """The matching key of every vertex: int64 values when every id is an integer, else the ids as text
    with integer ids in decimal form (object array)."""
    if labels is None:
        return np.arange(n, dtype=np.int64)
    s = pd.Series(list(labels), dtype=object)
    is_int = _int_mask(s)
    if is_int.all():
        return s.astype(np.int64).to_numpy()
    if is_int.any():
        s = s.copy()
        s[is_int] = s[is_int].astype(np.int64).astype(str)
    return s.to_numpy(dtype=object)


def _as_text(keys: np.ndarray) -> np.ndarray:
    return keys.astype(str).astype(object) if keys.dtype.kind in "iu" else keys


@dataclass(frozen=True)
class VertexSet:
    """A vertex set {0..n_nodes-1}: ``labels[i]`` is the id of vertex i (None: the ids are 0..n-1
    themselves); ``source`` says where it came from (declared, or read from the data)."""

    n_nodes: int
    labels: tuple[str, ...] | None
    source: StructureSource

    def __post_init__(self) -> None:
        object.__setattr__(self, "n_nodes", check_n_nodes(self.n_nodes))
        if self.labels is not None:
            labels = tuple(str(x) for x in self.labels)
            if len(labels) != self.n_nodes:
                raise InputError(f"vertex set: {len(labels)} labels for {self.n_nodes} vertices")
            object.__setattr__(self, "labels", labels)

    # ------------------------------------------------------------------------------------------ builders

    @classmethod
    def count(cls, n_nodes: object, *, max_nodes: int = MAX_NODES) -> VertexSet:
        """The declared vertex set 0..n_nodes-1 (``--n-nodes N``)."""
        try:
            n = check_n_nodes(n_nodes)
        except InputError:
            raise InputError(f"--n-nodes: expected a whole number of vertices >= 1, got {n_nodes!r}") from None
        if n > max_nodes:
            raise InputError(f"--n-nodes: {n:,} is above the vertex cap of {max_nodes:,}; raise it with "
                             "--max-nodes N")
        return cls(n, None, StructureSource("declared", f"--n-nodes {n} (vertex ids 0..{n - 1})"))

    @classmethod
    def from_ids(cls, lines: Sequence[str], *, origin: str, label: str = "--nodes") -> VertexSet:
        """The declared vertex set of ``lines`` (one id per line; blank lines skipped; line k of the
        messages is ``lines[k - 1]``). InputError for no id, or an id given twice (naming both lines)."""
        rows = np.array([i for i, line in enumerate(lines) if line.strip()], dtype=np.int64)
        if rows.size == 0:
            raise InputError(f"{label}: no vertex id; expected one vertex id per line")
        ids = pd.Series([str(lines[i]).strip() for i in rows], dtype=object)
        keys = _keys(ids.tolist(), len(ids))
        dup = pd.Series(keys).duplicated().to_numpy()
        if dup.any():
            j = int(np.flatnonzero(dup)[0])
            first = int(np.flatnonzero(keys[:j] == keys[j])[0])
            same = "" if ids.iloc[first] == ids.iloc[j] else f" (the same id as {ids.iloc[first]!r})"
            raise InputError(f"{label}, line {rows[j] + 1}: vertex id {ids.iloc[j][:80]!r}{same} is already on "
                             f"line {rows[first] + 1}; every vertex id must be given once")
        if keys.dtype.kind in "iu":
            keys = np.sort(keys)
            labels = None if keys[0] == 0 and keys[-1] == keys.size - 1 else tuple(str(x) for x in keys.tolist())
        else:
            labels = tuple(ids.tolist())
        return cls(int(keys.size), labels, StructureSource("declared", origin))

    @classmethod
    def read(cls, source: str | os.PathLike | bytes, *, name: str | None = None, max_bytes: int = MAX_BYTES,
             max_nodes: int = MAX_NODES, max_line_bytes: int = MAX_LINE_BYTES,
             flag: str = "--nodes") -> VertexSet:
        """The declared vertex set in a file of vertex ids, one per line (``--nodes FILE``; a path, the
        file's bytes (an upload: pass its ``name``, and ``flag`` the words that name it on a page) or a
        binary file). Caps as for edge lists."""
        if isinstance(source, (str, os.PathLike)):
            require_regular_file(source, "--nodes")
        shown = name or (Path(source).name if isinstance(source, (str, os.PathLike)) else
                         Path(str(getattr(source, "name", "upload"))).name)
        lines, _, _ = read_lines(source, max_bytes=max_bytes, max_lines=max_nodes, max_line_bytes=max_line_bytes,
                                 label=f"{flag} {shown}")
        return cls.from_ids(lines, origin=f"{flag} {shown}", label=f"{flag} {shown}")

    @classmethod
    def sample(cls, name: str) -> VertexSet:
        """A bundled graph's shipped declaration: its vertices 0..n_nodes-1 (``NAME.json``)."""
        from dpviz.graph.samples import GRAPHS_DIR, canonical_name, sample_info

        key = canonical_name(name)
        n = int(sample_info(key)["n_nodes"])
        return cls(n, None, StructureSource(
            "declared", f"sample:{key} shipped declaration (vertex ids 0..{n - 1}, {GRAPHS_DIR}/{key}.json)"))

    @classmethod
    def from_data(cls, graph: Graph) -> VertexSet:
        """The opt-out (``--structure-from-data``): the vertex set the data shows. Not private."""
        return cls(graph.n_nodes, graph.labels, StructureSource("data", "the edges"))

    # ------------------------------------------------------------------------------------------ use

    @property
    def declared(self) -> bool:
        return self.source.kind == "declared"

    def label_list(self) -> list:
        """The id of every vertex (ints 0..n-1 when there are no labels)."""
        return list(range(self.n_nodes)) if self.labels is None else list(self.labels)

    def _index(self, graph: Graph) -> np.ndarray:
        """For each vertex of ``graph``, its vertex in this set (-1: undeclared)."""
        if graph.labels is None and self.labels is None:
            ids = np.arange(graph.n_nodes, dtype=np.int64)
            return np.where(ids < self.n_nodes, ids, -1)
        mine, theirs = _keys(self.labels, self.n_nodes), _keys(graph.labels, graph.n_nodes)
        if mine.dtype != theirs.dtype:
            mine, theirs = _as_text(mine), _as_text(theirs)
        return pd.Index(mine).get_indexer(theirs).astype(np.int64)

    def _mapped(self, graph: Graph) -> tuple[np.ndarray, np.ndarray]:
        mapped = self._index(graph)[graph.edges] if graph.n_edges else np.zeros((0, 2), dtype=np.int64)
        return mapped, (mapped >= 0).all(axis=1)

    def restrict(self, graph: Graph) -> Graph:
        """``graph`` on this vertex set: vertex ids mapped to the declared ones, edges touching an undeclared
        vertex dropped (their number is not recorded anywhere), declared vertices in no edge isolated."""
        mapped, keep = self._mapped(graph)
        edges = canonical_edges(mapped[keep], self.n_nodes).edges
        return Graph(n_nodes=self.n_nodes, edges=edges, labels=self.labels, notices=graph.notices, name=graph.name)

    def dropped(self, graph: Graph) -> int:
        """How many edges of ``graph`` touch an undeclared vertex. For a simulation only: a release never
        publishes it."""
        _, keep = self._mapped(graph)
        return int(keep.size - np.count_nonzero(keep))


def describe(graph: Graph) -> list[str]:
    """The vertex ids found in ``graph`` (read from the data), in vertex order: a declaration template."""
    ids = [str(i) for i in range(graph.n_nodes)] if graph.labels is None else [str(x) for x in graph.labels]
    for k, x in enumerate(ids):
        if "\n" in x or "\r" in x:
            raise InputError(f"vertex id {x[:80]!r} (vertex {k}) holds a line break; a declaration has one id "
                             "per line: rename it in the edge list")
    return ids


def describe_text(graph: Graph) -> str:
    """:func:`describe` as the text of a ``--nodes`` file (one id per line, a final line end)."""
    return "\n".join(describe(graph)) + "\n"
