"""Synthetic trees: the paper's SynData (complete k-ary, Poisson leaves), an NYCTaxi-shaped random
fan-out tree, and deep path-like trees. Every generator returns nodes in BFS order (parent index
before child), takes a ``numpy.random.Generator`` and builds everything with NumPy (no loops over nodes).
"""

from __future__ import annotations

import numpy as np

from dpviz.errors import InputError
from dpviz.tree.io import TreeData
from dpviz.tree.model import tree_from_parents

__all__ = ["complete_tree", "random_fanout_tree", "path_like_tree", "fanout_parents", "make", "GENERATORS"]


def _poisson_leaves(data_parent: np.ndarray, lam: float, rng: np.random.Generator, name: str) -> TreeData:
    tree = tree_from_parents(data_parent)
    x = rng.poisson(lam, size=tree.m).astype(float)
    return TreeData(tree=tree, x=x, name=name)


def complete_tree(k: int, height: int, lam: float, rng: np.random.Generator) -> TreeData:
    """Complete k-ary tree with ``height`` levels (SynData: k = 2, h = 24 gives 16,777,215 nodes),
    leaves ~ Poisson(λ)."""
    if k < 1 or height < 1:
        raise InputError("a complete tree needs fan-out k >= 1 and height >= 1")
    n = height if k == 1 else (k**height - 1) // (k - 1)
    parent = (np.arange(n, dtype=np.int64) - 1) // k
    parent[0] = -1
    return _poisson_leaves(parent, lam, rng, f"complete {k}-ary tree, h={height}")


def fanout_parents(n_target: int, rng: np.random.Generator,
                   fanouts=(2, 3, 4, 5), probs=(0.4, 0.3, 0.2, 0.1)) -> np.ndarray:
    """Parent array of a tree grown level by level, each node drawing its fan-out from ``fanouts``
    with ``probs`` (the NYCTaxi shape of the paper), cut when ``n_target`` nodes are reached.
    All leaves end up on the last two levels. One vectorised step per level."""
    parents = [np.array([-1], np.int64)]
    level = np.array([0], np.int64)
    n = 1
    while n < n_target:
        f = rng.choice(np.asarray(fanouts), size=level.size, p=np.asarray(probs))
        kids_parent = np.repeat(level, f)
        kids_parent = kids_parent[: n_target - n]
        parents.append(kids_parent)
        level = np.arange(n, n + kids_parent.size)
        n += kids_parent.size
    return np.concatenate(parents)


def random_fanout_tree(n: int, lam: float, rng: np.random.Generator) -> TreeData:
    """Random fan-out tree with ~n nodes, fan-outs {2,3,4,5} at {40,30,20,10}%, Poisson(λ) leaves."""
    if n < 1:
        raise InputError("n must be >= 1")
    return _poisson_leaves(fanout_parents(n, rng), lam, rng, f"random fan-out tree, n={n}")


def path_like_tree(n: int, lam: float, rng: np.random.Generator, leaf_every: int = 1) -> TreeData:
    """Deep caterpillar: a spine with one leaf hanging from every ``leaf_every``-th spine node
    (leaf_every=0: a bare path). Height ~ n / 2: the stress case for recursion."""
    if n < 1:
        raise InputError("n must be >= 1")
    if leaf_every <= 0:
        parent = np.arange(-1, n - 1, dtype=np.int64)
    else:
        # BFS order: spine node s_j has children s_{j+1} and (if j % leaf_every == 0) a leaf
        spine_len = max(1, (n * leaf_every) // (leaf_every + 1))
        has_leaf = (np.arange(spine_len) % leaf_every) == 0
        n_leaf = min(int(has_leaf.sum()), n - spine_len)
        has_leaf &= np.cumsum(has_leaf) <= n_leaf
        kids = 1 + has_leaf.astype(np.int64)
        kids[-1] = has_leaf[-1]
        parent = np.concatenate([[-1], np.repeat(np.arange(spine_len), kids)])
        # renumber: BFS order puts each spine node's children consecutively; spine child comes first
        parent = _bfs_renumber_caterpillar(parent, spine_len)
    return _poisson_leaves(parent, lam, rng, f"path-like tree, n={parent.size}")


def _bfs_renumber_caterpillar(parent: np.ndarray, spine_len: int) -> np.ndarray:
    """The repeat() above lists children grouped by parent, which is BFS order for a caterpillar
    when parent ids refer to BFS positions; map spine indices to their BFS positions."""
    n = parent.size
    is_first_child = np.ones(n, bool)
    is_first_child[0] = False
    is_first_child[2:] = parent[2:] != parent[1:-1]
    # spine nodes (after the root) are the first child of each spine parent
    spine_pos = np.concatenate([[0], np.flatnonzero(is_first_child)])[:spine_len]
    out = parent.copy()
    out[1:] = spine_pos[parent[1:]]
    return out


def make(kind: str, size: int, lam: float, rng: np.random.Generator) -> TreeData:
    """A synthetic tree of about ``size`` nodes by kind name ('complete' = binary with
    round(log2(size + 1)) levels, 'random-fanout', 'path-like')."""
    if kind == "complete":
        return complete_tree(2, max(1, int(round(np.log2(size + 1)))), lam, rng)
    if kind not in GENERATORS:
        raise InputError(f"unknown synthetic kind {kind!r}; choose one of {', '.join(GENERATORS)}")
    return GENERATORS[kind](size, lam, rng)


GENERATORS = {
    "complete": complete_tree,
    "random-fanout": random_fanout_tree,
    "path-like": path_like_tree,
}
