"""Upward and downward propagation of a Generation Matrix (Props. 2-3, Eqs. 14-15).

``upward`` solves G^T z = v (children before parents), ``downward`` solves G z = v (parents before
children), both in O(n) with no Python loop over nodes:

* ``levels`` engine: one vectorised NumPy step per height block (nodes of equal height never depend
  on each other, Def. 6), i.e. h steps;
* ``sparse`` engine: SciPy's compiled sparse triangular solve on G in CSR form, used for deep trees
  (paths, caterpillars) where h is comparable to n and h NumPy steps would cost more than the solve.

``upward_steps`` / ``downward_steps`` yield the vector after each block, for teaching.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Literal

import numpy as np
from scipy.sparse.linalg import spsolve_triangular

from dpviz.tree.generation import generation_matrix
from dpviz.tree.model import Tree

Engine = Literal["auto", "levels", "sparse"]

__all__ = [
    "upward",
    "downward",
    "upward_steps",
    "downward_steps",
    "partial_propagation",
    "scatter_add",
    "Engine",
]


def scatter_add(acc: np.ndarray, idx: np.ndarray, vals: np.ndarray) -> None:
    """acc[idx] += vals with repeated indices summed (a bincount over the touched range when dense)."""
    if idx.size == 0:
        return
    lo, hi = int(idx.min()), int(idx.max())
    span = hi - lo + 1
    if span <= 4 * idx.size:
        acc[lo : hi + 1] += np.bincount(idx - lo, weights=vals, minlength=span)
    else:
        np.add.at(acc, idx, vals)


def _weights(tree: Tree, w_node, w_edge) -> tuple[np.ndarray, np.ndarray]:
    n = tree.n
    return (
        np.broadcast_to(np.asarray(w_node, float), (n,)),
        np.broadcast_to(np.asarray(w_edge, float), (n,)),
    )


def _use_sparse(tree: Tree, engine: Engine) -> bool:
    if engine not in ("auto", "levels", "sparse"):
        raise ValueError(f"engine must be 'auto', 'levels' or 'sparse', got {engine!r}")
    return engine == "sparse" or (engine == "auto" and tree.is_deep)


def upward(tree: Tree, v: np.ndarray, w_node=1.0, w_edge=1.0, engine: Engine = "auto") -> np.ndarray:
    """Upward propagation z = G^{-T} v (Prop. 2, Eq. 14).

    z_i = (v_i + Σ_{j∈C_i} w_{j→i} z_j) / w_i; with unit weights z_i is the subtree sum of v.
    """
    v = np.asarray(v, float)
    if _use_sparse(tree, engine):
        g = generation_matrix(tree, w_node, w_edge)
        return spsolve_triangular(g.T.tocsr(), v, lower=False)
    z = v
    for z in upward_steps(tree, v, w_node, w_edge):
        pass
    return z


def downward(tree: Tree, v: np.ndarray, w_node=1.0, w_edge=1.0, engine: Engine = "auto") -> np.ndarray:
    """Downward propagation z = G^{-1} v (Prop. 3, Eq. 15).

    z_i = (v_i + w_{i→f_i} z_{f_i}) / w_i; with unit weights z_i is the sum of v over i's ancestors and i.
    """
    v = np.asarray(v, float)
    if _use_sparse(tree, engine):
        return spsolve_triangular(generation_matrix(tree, w_node, w_edge), v, lower=True)
    z = v
    for z in downward_steps(tree, v, w_node, w_edge):
        pass
    return z


def upward_steps(tree: Tree, v: np.ndarray, w_node=1.0, w_edge=1.0) -> Iterator[np.ndarray]:
    """Yield z after each height block, leaves first (entries not yet reached are NaN).

    The same array object is updated in place and yielded h times; copy it to keep a snapshot.
    """
    wn, we = _weights(tree, w_node, w_edge)
    v = np.asarray(v, float)
    z = np.full(tree.n, np.nan)
    acc = np.zeros(tree.n)  # Σ_{j∈C_i} w_{j→i} z_j, filled as children finish
    for k in range(1, tree.h + 1):
        blk = tree.block(k)
        z[blk] = (v[blk] + acc[blk]) / wn[blk]
        if k < tree.h:
            scatter_add(acc, tree.parent[blk], we[blk] * z[blk])
        yield z


def downward_steps(tree: Tree, v: np.ndarray, w_node=1.0, w_edge=1.0) -> Iterator[np.ndarray]:
    """Yield z after each height block, root first (entries not yet reached are NaN)."""
    wn, we = _weights(tree, w_node, w_edge)
    v = np.asarray(v, float)
    z = np.full(tree.n, np.nan)
    z[0] = v[0] / wn[0]
    yield z
    for k in range(tree.h - 1, 0, -1):
        blk = tree.block(k)
        z[blk] = (v[blk] + we[blk] * z[tree.parent[blk]]) / wn[blk]
        yield z


def partial_propagation(tree: Tree, v: np.ndarray, direction: str = "up", step: int | None = None) -> np.ndarray:
    """The vector after ``step`` height blocks of upward (G^{-T} v, leaves first) or downward
    (G^{-1} v, root first) propagation; entries not reached yet are NaN. ``step`` None or >= h gives
    the finished result. Returns a copy."""
    if direction not in ("up", "down"):
        raise ValueError(f"direction must be 'up' or 'down', got {direction!r}")
    steps = upward_steps(tree, v) if direction == "up" else downward_steps(tree, v)
    last = tree.h if step is None else max(1, min(int(step), tree.h))
    z = None
    for i, z in enumerate(steps, start=1):
        if i >= last:
            break
    return np.array(z, copy=True)
