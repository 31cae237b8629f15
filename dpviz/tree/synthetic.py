"""Synthetic trees: the paper's SynData (complete k-ary, Poisson leaves), an NYCTaxi-shaped random
fan-out tree, and deep path-like trees. Every generator returns nodes in BFS order (parent index
before child), takes a ``numpy.random.Generator`` and builds everything with NumPy (no loops over nodes).

Sizes are known before anything is allocated (:func:`planned_size`); :func:`check_size` refuses a tree
above a node cap or above the memory this machine has available, with the estimate, the cap and how to
raise it — every generator calls it (memory only), and ``tree generate`` with its ``--max-nodes``.
"""

from __future__ import annotations

import math

import numpy as np

from dpviz.core.resources import available_memory, format_bytes
from dpviz.errors import InputError
from dpviz.tree.reading import MAX_COUNT
from dpviz.tree.model import TreeData, tree_from_parents

__all__ = [
    "GENERATE_BYTES_PER_NODE",
    "GENERATORS",
    "TREE_BYTES_PER_NODE",
    "check_lam",
    "check_size",
    "complete_size",
    "complete_tree",
    "fanout_parents",
    "make",
    "path_like_tree",
    "planned_size",
    "random_fanout_tree",
]

TREE_BYTES_PER_NODE = 64
"""Peak memory of building a synthetic TreeData, per node (parent array, Tree arrays, counts, temporaries;
measured 32-56 bytes for 4·10^6-node complete, random fan-out and path-like trees)."""
GENERATE_BYTES_PER_NODE = 160
"""Peak memory of ``tree generate`` per node (the TreeData plus the id strings and the CSV being written;
measured about 125 bytes at 5·10^6 nodes)."""


def _count(n: int) -> str:
    return f"{n:,}" if n < 10**15 else f"about {float(n):.3g}"


def complete_size(k: int, height: int) -> int:
    """Nodes of a complete k-ary tree with ``height`` levels, computed without building a huge integer
    (sizes above 2^200 are reported as 2^200: far above any cap)."""
    if k < 1 or height < 1:
        raise InputError("a complete tree needs fan-out k >= 1 and height >= 1")
    if k == 1:
        return height
    if height * math.log2(k) > 200:
        return 2**200
    return (k**height - 1) // (k - 1)


def planned_size(kind: str, *, k: int = 2, height: int = 10, nodes: int = 10_000) -> int:
    """Nodes the generator of ``kind`` will build (``complete``: from k and height; else ``nodes``)."""
    if kind == "complete":
        return complete_size(k, height)
    if kind not in GENERATORS:
        raise InputError(f"unknown synthetic kind {kind!r}; choose one of {', '.join(GENERATORS)}")
    if nodes < 1:
        raise InputError(f"--nodes: expected a positive integer, got {nodes}")
    return nodes


def check_size(n: int, max_nodes: int | None = None, flag: str = "--max-nodes",
               per_node: int = TREE_BYTES_PER_NODE) -> None:
    """Refuse, before allocating, a tree of ``n`` nodes above ``max_nodes`` or whose estimated memory
    (``n × per_node`` bytes) exceeds what this machine has available."""
    need = float(n) * per_node
    if max_nodes is not None and n > max_nodes:
        raise InputError(f"the tree would have {_count(n)} nodes (about {format_bytes(need)} of memory), more than "
                         f"the limit of {max_nodes:,} nodes; raise it with {flag} N")
    avail = available_memory()
    if avail is not None and need > avail:
        raise InputError(f"the tree would have {_count(n)} nodes and need about {format_bytes(need)} of memory, more "
                         f"than the {format_bytes(avail)} this machine has available; choose a smaller size")


def check_lam(lam: float, n_leaves: int) -> float:
    """λ of the Poisson leaf counts: a positive finite number with n_leaves × λ <= 2^53 (MAX_COUNT)."""
    from dpviz.core.accounting import positive

    lam = positive("--lam", lam)
    if lam * max(1, n_leaves) > MAX_COUNT:
        raise InputError(f"--lam: λ = {lam:g} on {n_leaves:,} leaves would make an expected total above the "
                         f"largest total count 2^53 = {MAX_COUNT:,} (MAX_COUNT); choose a smaller λ")
    return lam


def _poisson_leaves(data_parent: np.ndarray, lam: float, rng: np.random.Generator, name: str) -> TreeData:
    tree = tree_from_parents(data_parent)
    x = rng.poisson(check_lam(lam, tree.m), size=tree.m).astype(float)
    return TreeData(tree=tree, x=x, name=name)


def complete_tree(k: int, height: int, lam: float, rng: np.random.Generator) -> TreeData:
    """Complete k-ary tree with ``height`` levels (SynData: k = 2, h = 24 gives 16,777,215 nodes),
    leaves ~ Poisson(λ)."""
    n = complete_size(k, height)
    check_size(n)
    check_lam(lam, 1)
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
    check_size(n)
    check_lam(lam, 1)
    return _poisson_leaves(fanout_parents(n, rng), lam, rng, f"random fan-out tree, n={n}")


def path_like_tree(n: int, lam: float, rng: np.random.Generator, leaf_every: int = 1) -> TreeData:
    """Deep caterpillar: a spine with one leaf hanging from every ``leaf_every``-th spine node
    (leaf_every=0: a bare path). Height ~ n / 2: the stress case for recursion."""
    if n < 1:
        raise InputError("n must be >= 1")
    check_size(n)
    check_lam(lam, 1)
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
