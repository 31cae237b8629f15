"""What the Generation Matrix says about a tree (paper Sec. 4.2-4.3: Props. 4-11, Thms. 1-4).

This module turns the algebraic properties of the Structure Matrix ``G`` (``1`` on the diagonal,
``-1`` at ``(i, f_i)``) and of the weighted Generation Matrix ``G^(w_node, w_edge)`` into small,
checked functions. They serve two purposes: teaching (the dashboard can show that e.g. ``G^{-1}1``
*is* the depth vector) and cheap structural statistics for the release pipeline.

Conventions: nodes are in Descending Order of Height (:class:`dpviz.tree.model.Tree`), the paper's
node 1 (the root) is index 0 here, and "ancestor" includes the node itself only where said so.

Cost classes:

* vectors (Props. 4-6): O(n) through sparse products or :mod:`dpviz.tree.propagation`; any size.
* sparse matrices (Props. 7-8): built without dense inversion; their size is checked against
  ``max_nnz`` *before* allocation (a 10⁶-node path has ~5·10¹¹ ancestor pairs).
* dense matrices (Prop. 9): ``n <= DENSE_MAX``.
* small-tree helpers (Prop. 10-11, Thms. 1-4): ``n <= SMALL_TREE_MAX``, meant for illustrations
  and tests, not for the release pipeline.

Nothing here imports Streamlit.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from dpviz.tree.generation import leaf_mapping_matrix, structure_matrix
from dpviz.tree.model import Tree
from dpviz.tree.propagation import downward, upward

__all__ = [
    "SMALL_TREE_MAX",
    "DENSE_MAX",
    "DEFAULT_MAX_NNZ",
    "EigenDecomposition",
    "children_counts",
    "subtree_sizes",
    "depths",
    "ancestor_indicator",
    "sibling_matrix",
    "common_ancestors",
    "eigen_decomposition",
    "diagonal_decomposition",
    "adjacency_matrix",
    "laplacian_matrix",
    "distance_matrix",
    "ancestral_matrix",
]

SMALL_TREE_MAX = 2000
"""Largest n accepted by the small-tree helpers (Prop. 10-11, Thms. 1-4)."""
DENSE_MAX = 5000
"""Largest n for which :func:`common_ancestors` returns a dense n × n matrix."""
DEFAULT_MAX_NNZ = 50_000_000
"""Default cap on the number of stored entries of a sparse result (about 0.6 GB as CSR float64)."""


# ---------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------
def _require_small(tree: Tree, what: str, limit: int = SMALL_TREE_MAX) -> None:
    if tree.n > limit:
        raise ValueError(
            f"{what} is only available for trees of at most {limit} nodes "
            f"(this tree has {tree.n}); it builds dense n × n matrices"
        )


def _check_nnz(nnz: int, what: str, max_nnz: int) -> None:
    if nnz > max_nnz:
        raise ValueError(
            f"{what} would store {nnz:,} non-zeros, more than max_nnz={max_nnz:,}; "
            "use the O(n) vector properties or propagation instead, or raise max_nnz"
        )


def _weights(tree: Tree, w_node, w_edge) -> tuple[np.ndarray, np.ndarray]:
    n = tree.n
    wn = np.array(np.broadcast_to(np.asarray(w_node, float), (n,)))
    we = np.array(np.broadcast_to(np.asarray(w_edge, float), (n,)))
    we[0] = 1.0  # w_{1→∅} := 1 (Prop. 11); the root has no edge, G ignores it
    return wn, we


# ---------------------------------------------------------------------------------------------
# vectors: Props. 4-6 (O(n), any size)
# ---------------------------------------------------------------------------------------------
def children_counts(tree: Tree) -> np.ndarray:
    """|C_i| for every node, as ``(I - Gᵀ)1`` with the sparse Structure Matrix (Prop. 4).

    Column j of G holds 1 at (j, j) and -1 at (k, j) for every child k, so row j of ``I - Gᵀ``
    sums to the number of children. Returns int64 (equal to ``tree.children_count``).
    """
    g = structure_matrix(tree)
    ones = np.ones(tree.n)
    z = ones - g.T @ ones
    return np.rint(z).astype(np.int64)


def subtree_sizes(tree: Tree) -> np.ndarray:
    """Number of nodes in the subtree rooted at each node, ``G^{-T}1`` (Prop. 5), via upward propagation."""
    return np.rint(upward(tree, np.ones(tree.n))).astype(np.int64)


def depths(tree: Tree) -> np.ndarray:
    """Depth of each node (root = 1), ``G^{-1}1`` (Prop. 6), via downward propagation."""
    return np.rint(downward(tree, np.ones(tree.n))).astype(np.int64)


# ---------------------------------------------------------------------------------------------
# sparse matrices: Props. 7-8
# ---------------------------------------------------------------------------------------------
def ancestor_indicator(
    tree: Tree, dtype: np.dtype | type = np.float64, max_nnz: int = DEFAULT_MAX_NNZ
) -> sp.csr_matrix:
    """``G^{-1}`` of the Structure Matrix as a 0/1 CSR matrix (Prop. 7, Eq. 16).

    Entry (i, j) is 1 iff ``i == j`` or j is an ancestor of i. Built from the ancestor lists, never
    by inversion: row i has ``depth_i`` entries, so ``indptr`` is the cumulative depth and
    ``nnz = Σ depth``. The s-th ancestor of every still-active node is written in one vectorised
    step (s = 0..h-1; pointer chasing one level at a time). Since ``f_i < i`` in DOH order, the
    s-th ancestor goes to slot ``depth_i - 1 - s`` and every row comes out with sorted columns.

    Raises ValueError (before allocating) if ``Σ depth > max_nnz``.
    """
    n = tree.n
    depth = tree.depth.astype(np.int64)
    nnz = int(depth.sum())
    _check_nnz(nnz, "the ancestor indicator G^{-1}", max_nnz)
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(depth, out=indptr[1:])
    indices = np.empty(nnz, np.int32 if n < np.iinfo(np.int32).max else np.int64)
    node = np.arange(n, dtype=np.int64)  # rows still climbing
    cur = node.copy()  # their s-th ancestor
    s = 0
    while node.size:  # h iterations, O(#active) each: total O(Σ depth) = O(nnz)
        indices[indptr[node] + depth[node] - 1 - s] = cur
        cur = tree.parent[cur].astype(np.int64)
        keep = cur >= 0
        node, cur = node[keep], cur[keep]
        s += 1
    data = np.ones(nnz, dtype=dtype)
    a = sp.csr_matrix((data, indices, indptr), shape=(n, n))
    a.has_sorted_indices = True
    return a


def sibling_matrix(
    tree: Tree, indicator: bool = False, max_nnz: int = DEFAULT_MAX_NNZ
) -> sp.csr_matrix:
    """``M = G Gᵀ`` as a sparse product (Prop. 8).

    ``m_ij = Σ_k g_ik g_jk``; with 1 on the diagonal and -1 at (i, f_i) this gives

    * ``m_00 = 1`` (root) and ``m_ii = 2`` for every other node;
    * ``m_ij = -1`` when one of i, j is the parent of the other (the paper's statement is about the
      entries equal to 1 and does not mention these);
    * ``m_ij = 1`` iff i ≠ j are siblings (same parent) — Prop. 8;
    * 0 otherwise.

    With ``indicator=True`` returns the 0/1 sibling indicator instead (the off-diagonal entries of M
    equal to 1, as int8). The result has ``n + 2(n-1) + Σ_i |C_i|(|C_i|-1)`` entries (a star is
    dense); ValueError if that exceeds ``max_nnz``.
    """
    c = tree.children_count.astype(np.int64)
    nnz = tree.n + 2 * (tree.n - 1) + int((c * (c - 1)).sum())
    _check_nnz(nnz, "G Gᵀ (the sibling matrix)", max_nnz)
    g = structure_matrix(tree)
    m = (g @ g.T).tocsr()
    m.sum_duplicates()
    m.sort_indices()
    if not indicator:
        return m
    coo = m.tocoo()
    keep = (coo.data == 1) & (coo.row != coo.col)
    return sp.csr_matrix(
        (np.ones(int(keep.sum()), np.int8), (coo.row[keep], coo.col[keep])), shape=m.shape
    )


def common_ancestors(tree: Tree) -> np.ndarray:
    """Dense ``(GᵀG)^{-1}`` (Prop. 9): the number of common ancestors of i and j.

    A node counts as its own ancestor (so the diagonal is the depth, root = 1) and the root is a
    common ancestor of every pair, so the result is dense: it is computed as ``A Aᵀ`` with the
    sparse ancestor indicator ``A = G^{-1}`` (Prop. 7), since ``(GᵀG)^{-1} = G^{-1} G^{-T}``;
    ``(A Aᵀ)_ij`` counts the nodes that are ancestors-or-self of both. Equivalently it is the depth
    of the lowest common ancestor. Returns int32 (entries are at most h).

    Raises ValueError for ``n > DENSE_MAX`` (the n × n result would not fit comfortably in memory).
    """
    if tree.n > DENSE_MAX:
        raise ValueError(
            f"common_ancestors returns a dense n × n matrix and is limited to n <= {DENSE_MAX} "
            f"(this tree has {tree.n} nodes); for one pair use the depth of their lowest common ancestor"
        )
    a = ancestor_indicator(tree, dtype=np.int32, max_nnz=DENSE_MAX * DENSE_MAX)
    return (a @ a.T).toarray()


# ---------------------------------------------------------------------------------------------
# small trees: Props. 10-11
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class EigenDecomposition:
    """Eigen-structure of ``G^(w_node, w_edge)`` (Prop. 10), nodes in DOH order.

    Attributes:
        eigenvalues: ``λ_i = w_i`` (G is lower triangular, so these are its diagonal).
        left: ``left[i]`` is ``u_i`` with ``u_iᵀ G = w_i u_iᵀ`` (i.e. ``Gᵀ u_i = w_i u_i``),
            normalised by ``u_i[i] = 1``, supported on i and its ancestors; ``None`` if some ancestor
            j of i has ``w_j == w_i``.
        right: ``right[i]`` is ``v_i`` with ``G v_i = w_i v_i``, ``v_i[i] = 1``, supported on i and
            its descendants; ``None`` if some descendant j of i has ``w_j == w_i``.
    """

    eigenvalues: np.ndarray
    left: list[np.ndarray | None]
    right: list[np.ndarray | None]

    @property
    def diagonalizable_by_recurrences(self) -> bool:
        """True when every right eigenvector exists (then ``[v_0 … v_{n-1}]`` diagonalises G)."""
        return all(v is not None for v in self.right)


def eigen_decomposition(tree: Tree, w_node=1.0, w_edge=1.0) -> EigenDecomposition:
    """Eigenvalues and left/right eigenvectors of ``G^(w_node, w_edge)`` by Prop. 10 (Eqs. 17-18).

    Recurrences, with ``G`` holding ``+w_i`` on the diagonal and ``-w_{i→f_i}`` at (i, f_i)
    (Def. 7 / :func:`dpviz.tree.generation.generation_matrix`):

    * left, from ``(Gᵀu)_j = w_j u_j - Σ_{k∈C_j} w_{k→j} u_k = w_i u_j``:
      ``u_j = Σ_{k∈C_j} w_{k→j} u_k / (w_j - w_i)`` for the ancestors j of i (bottom-up);
    * right, from ``(Gv)_j = w_j v_j - w_{j→f_j} v_{f_j} = w_i v_j``:
      ``v_j = w_{j→f_j} v_{f_j} / (w_j - w_i)`` for the descendants j of i (top-down).

    Relation to the paper: both are exactly Eqs. (17) and (18) — **no extra sign is needed**,
    because the minus sign of the off-diagonal entries of G is what turns
    ``w_j u_j - Σ … = w_i u_j`` into a positive numerator over ``w_j - w_i``. (Had G been defined
    with ``+w_{i→f_i}`` off the diagonal, both numerators would need a minus sign.) Two reading
    notes: "left eigenvector" means ``uᵀ G = λ uᵀ`` (a vector with G u = λ u cannot be supported on
    ancestors); Eq. (18) writes ``v_{f_j}^{(k)}``, a typo for ``v_{f_j}^{(i)}``. Verified
    numerically in ``tests/test_tree_properties.py``, including negative edge weights.

    Existence: the recurrence divides by ``w_j - w_i`` along the path, and its numerator is a
    product of non-zero edge weights, so ``u_i`` (resp. ``v_i``) exists iff no ancestor (resp.
    descendant) has weight exactly ``w_i`` (exact float comparison, as in Prop. 10). When it does
    not exist the eigenvalue ``w_i`` is defective with respect to this node (it may still have an
    eigenvector attached to another node of equal weight).

    Vectorisation: all n eigenvectors are computed at once as dense n × n matrices, one NumPy step
    per height block (nodes of equal height never depend on each other) — a loop over h levels,
    not over nodes. With the paper's normalisation (``u_i[i] = v_i[i] = 1``) the entries are
    products of ``w_edge / (w_j - w_i)`` along a path, so on deep trees with close weights they can
    overflow: such entries are returned as ±inf/nan without a warning (check ``np.isfinite``).
    Small trees only (``n <= SMALL_TREE_MAX``).
    """
    _require_small(tree, "eigen_decomposition")
    n = tree.n
    wn, we = _weights(tree, w_node, w_edge)
    if np.any(wn == 0) or np.any(we == 0):
        raise ValueError("Generation Matrix weights must be non-zero (Def. 7)")
    anc = ancestor_indicator(tree, dtype=np.bool_)  # anc[j, i]: i is j or an ancestor of j
    same = wn[:, None] == wn[None, :]
    strict = anc.toarray() & ~np.eye(n, dtype=bool)  # strict[j, i]: i is a proper ancestor of j
    # left u_i needs w_j != w_i for every proper ancestor j of i: bad if strict[i, j] & same[i, j]
    left_ok = ~(strict & same).any(axis=1)
    # right v_i needs w_j != w_i for every proper descendant j of i: bad if strict[j, i] & same[j, i]
    right_ok = ~(strict & same).any(axis=0)

    diff = wn[:, None] - wn[None, :]  # diff[j, i] = w_j - w_i
    # where w_j == w_i the numerator is structurally 0 (j off the path of i) or the column is
    # dropped below (u_i / v_i does not exist): divide by 1 instead of 0
    safe = np.where(diff == 0, 1.0, diff)
    with np.errstate(over="ignore", invalid="ignore"):  # documented: overflow gives inf/nan
        u, v = _eigenvectors(tree, wn, we, safe)
    # the only per-node Python loop: packaging n columns (or None) for the list-based API
    return EigenDecomposition(
        eigenvalues=wn.copy(),
        left=[u[:, i].copy() if left_ok[i] else None for i in range(n)],
        right=[v[:, i].copy() if right_ok[i] else None for i in range(n)],
    )


def _eigenvectors(
    tree: Tree, wn: np.ndarray, we: np.ndarray, safe: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """All left (columns of U) and right (columns of V) eigenvectors by Eqs. 17-18, unchecked.

    The recurrences are inherently sequential along root-leaf paths, but nodes of equal height are
    independent, so each step handles one height block for all n eigenvectors at once (h steps).
    """
    n = tree.n
    # Right eigenvectors, column i = v_i: top-down over height blocks (Eq. 18).
    v = np.eye(n)
    for k in range(tree.h - 1, 0, -1):
        blk = tree.block(k)
        rows = np.arange(blk.start, blk.stop)
        v[blk] = we[blk, None] * v[tree.parent[blk]] / safe[blk]
        v[rows, rows] = 1.0
    # Left eigenvectors, column i = u_i: bottom-up over height blocks (Eq. 17).
    u = np.eye(n)
    acc = np.zeros((n, n))  # acc[j, i] = Σ_{k∈C_j} w_{k→j} u_k^(i), filled as children finish
    for k in range(1, tree.h + 1):
        blk = tree.block(k)
        rows = np.arange(blk.start, blk.stop)
        u[blk] = acc[blk] / safe[blk]
        u[rows, rows] = 1.0
        if k < tree.h:
            np.add.at(acc, tree.parent[blk], we[blk, None] * u[blk])
    return u, v


def diagonal_decomposition(tree: Tree, w_node=1.0, w_edge=1.0) -> tuple[np.ndarray, np.ndarray]:
    """``(α, β)`` with ``G^(w_node, w_edge) = diag(β) G diag(α)`` (Prop. 11, Eqs. 19-20).

    ``α = exp(G^{-1}(ln w_node - ln w_edge))`` (one downward propagation) and ``β = w_node ⊘ α``,
    with ``w_edge[0] := w_{1→∅} = 1``. Entry-wise the identity needs ``β_i α_i = w_i`` and
    ``α_i / α_{f_i} = w_i / w_{i→f_i}``, which Eq. (20) solves in log space — so this form is
    **only valid for strictly positive weights**; ValueError otherwise. (For non-zero weights of
    either sign a decomposition still exists, with signs tracked separately, but it is not Eq. 20.)
    The cost is O(n); the ``n <= SMALL_TREE_MAX`` limit is kept for consistency with the other
    illustration helpers.
    """
    _require_small(tree, "diagonal_decomposition")
    wn, we = _weights(tree, w_node, w_edge)
    if np.any(wn <= 0) or np.any(we <= 0):
        raise ValueError(
            "diagonal_decomposition (Prop. 11, Eq. 20) takes logarithms: "
            "all node and edge weights must be strictly positive"
        )
    alpha = np.exp(downward(tree, np.log(wn) - np.log(we)))
    beta = wn / alpha
    return alpha, beta


# ---------------------------------------------------------------------------------------------
# small trees: Thms. 1-4 (conversions to other matrix representations)
# ---------------------------------------------------------------------------------------------
def adjacency_matrix(tree: Tree, symmetric: bool = False) -> sp.csr_matrix:
    """Adjacency matrix ``A = I - G`` (Thm. 1, Eq. 21), sparse CSR.

    As written in the paper this is the *directed* child → parent adjacency: ``A[i, f_i] = 1``.
    With ``symmetric=True`` returns the undirected adjacency ``A + Aᵀ``.
    """
    _require_small(tree, "adjacency_matrix")
    a = (sp.identity(tree.n, format="csr") - structure_matrix(tree)).tocsr()
    a.eliminate_zeros()
    if symmetric:
        a = (a + a.T).tocsr()
    a.sort_indices()
    return a


def laplacian_matrix(tree: Tree) -> sp.csr_matrix:
    """Laplacian of the undirected tree, ``L = GᵀG - e₁e₁ᵀ`` (Thm. 2, Eq. 22), sparse CSR.

    ``(GᵀG)_jj = 1 + |C_j|`` equals the degree for every non-root node; the root has no parent
    edge, hence the ``-e₁e₁ᵀ`` correction. Off-diagonal: -1 exactly on tree edges.
    """
    _require_small(tree, "laplacian_matrix")
    g = structure_matrix(tree)
    e1 = sp.csr_matrix(([1.0], ([0], [0])), shape=(tree.n, tree.n))
    lap = (g.T @ g - e1).tocsr()
    lap.eliminate_zeros()
    lap.sort_indices()
    return lap


def distance_matrix(tree: Tree) -> np.ndarray:
    """Dense hop-distance matrix ``D = G^{-1}11ᵀ + 11ᵀG^{-T} - 2(GᵀG)^{-1}`` (Thm. 3, Eq. 23).

    (The paper prints ``𝐈𝐈ᵀ``; it means the all-ones vector.) Entry-wise
    ``D_ij = depth_i + depth_j - 2·depth(lca(i, j))``. Returns int64.
    """
    _require_small(tree, "distance_matrix")
    d = depths(tree)
    return d[:, None] + d[None, :] - 2 * common_ancestors(tree).astype(np.int64)


def ancestral_matrix(tree: Tree) -> np.ndarray:
    """Ancestral matrix of the leaves, ``C = H_H (GᵀG)^{-1} H_Hᵀ - 1`` (Thm. 4, Eq. 24).

    ``C_ij`` (leaves i, j in leaf order) is the number of edges shared by the root-to-leaf paths of
    i and j, i.e. the depth of their lowest common ancestor counted from 0; the diagonal is the
    leaf's depth - 1. Dense m × m, int64.
    """
    _require_small(tree, "ancestral_matrix")
    h = leaf_mapping_matrix(tree)
    m = common_ancestors(tree).astype(np.int64)
    return np.asarray(h @ m @ h.T, dtype=np.int64) - 1
