"""The validated pair (true graph, released graph) every metric of :mod:`dpviz.graph.metrics` reads.

Inputs are canonical edge arrays (int, shape (k, 2), u < v, no duplicates; see
``dpviz.graph.model.canonical_edges``); a non-canonical array raises :class:`dpviz.errors.InputError`.
Simulation only: the true graph is read here, so nothing computed from it may be published.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from dpviz.errors import InputError

__all__ = ["G", "as_graph", "graph_pair", "check_n_nodes", "relative", "top_k"]


def check_n_nodes(n_nodes: object) -> int:
    if isinstance(n_nodes, (bool, np.bool_)) or not isinstance(n_nodes, numbers.Integral) or n_nodes < 1:
        raise InputError(f"n_nodes: expected a positive integer, got {n_nodes!r}")
    return int(n_nodes)


@dataclass(frozen=True)
class G:
    """A validated canonical graph: endpoints, sorted edge keys u*n+v, degrees."""

    n: int
    u: np.ndarray
    v: np.ndarray
    keys: np.ndarray
    degree: np.ndarray

    @property
    def m(self) -> int:
        return int(self.u.shape[0])

    def adjacency(self) -> sp.csr_matrix:
        """Symmetric 0/1 adjacency matrix A (CSR, float64, 2m stored entries; never dense)."""
        rows = np.concatenate([self.u, self.v])
        cols = np.concatenate([self.v, self.u])
        return sp.csr_matrix((np.ones(rows.shape[0]), (rows, cols)), shape=(self.n, self.n))


def as_graph(name: str, edges: object, n: int) -> G:
    """Validate a canonical edge array (int, (k, 2), 0 <= u < v < n, unique)."""
    e = np.asarray(edges)
    if e.size == 0:
        e = e.reshape(0, 2)
    if e.ndim != 2 or e.shape[1] != 2:
        raise InputError(f"{name}: expected an edge array of shape (k, 2), got shape {e.shape}")
    if not np.issubdtype(e.dtype, np.integer):
        raise InputError(f"{name}: expected integer vertex ids, got dtype {e.dtype}")
    e = e.astype(np.int64, copy=False)
    u, v = e[:, 0], e[:, 1]
    if e.shape[0]:
        if int(u.min()) < 0 or int(v.max()) >= n:
            raise InputError(f"{name}: vertex ids must lie in 0..{n - 1}")
        bad = np.flatnonzero(u >= v)
        if bad.size:
            i = int(bad[0])
            raise InputError(f"{name}: row {i} is ({int(u[i])}, {int(v[i])}); expected canonical edges with "
                             "u < v (use dpviz.graph.model.canonical_edges)")
    keys = np.sort(u * n + v)
    if keys.size > 1 and not np.all(np.diff(keys) > 0):
        raise InputError(f"{name}: duplicate edges; expected canonical edges "
                         "(use dpviz.graph.model.canonical_edges)")
    degree = np.bincount(u, minlength=n) + np.bincount(v, minlength=n)
    return G(n, np.ascontiguousarray(u), np.ascontiguousarray(v), keys, degree.astype(np.int64))


def graph_pair(true_edges: object, released_edges: object, n_nodes: object) -> tuple[G, G]:
    n = check_n_nodes(n_nodes)
    return as_graph("true_edges", true_edges, n), as_graph("released_edges", released_edges, n)


def relative(true: float, released: float) -> float:
    """|x̃ - x| / |x|, with 0 (x̃ = x = 0) or 1 (x = 0 != x̃) when the true value is 0."""
    if true == 0.0:
        return 0.0 if released == 0.0 else 1.0
    return abs(released - true) / abs(true)


def top_k(n: int, fraction: float) -> int:
    return min(n, max(1, math.ceil(fraction * n)))
