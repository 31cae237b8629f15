"""Generation Matrix and the other sparse matrices of the paper (Defs. 5, 7, 9; Prop. 1).

All matrices are ``scipy.sparse`` CSR in Descending Order of Height (scipy.sparse is imported on the first
matrix built: a tree release never builds one, and the import is 0.1-0.2 s of its start-up). ``G`` has exactly 2n-1
non-zeros (Prop. 1): ``w_i`` on the diagonal and ``-w_{i→f_i}`` at (i, f_i).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from dpviz.tree.model import Tree

if TYPE_CHECKING:
    import scipy.sparse as sp

__all__ = [
    "generation_matrix",
    "structure_matrix",
    "mapping_matrix",
    "leaf_mapping_matrix",
    "consistency_matrix",
    "k_order_submatrix",
]


def _sparse():
    import scipy.sparse

    return scipy.sparse


def generation_matrix(
    tree: Tree, w_node: np.ndarray | float = 1.0, w_edge: np.ndarray | float = 1.0
) -> sp.csr_matrix:
    """G_T^(w_node, w_edge) of Def. 7 / Eq. (10).

    ``w_edge[i]`` is the weight of edge i → f_i; ``w_edge[0]`` (the root's, w_{1→∅} = 1 in Prop. 11)
    is ignored. Weights must be non-zero.
    """
    n = tree.n
    wn = np.broadcast_to(np.asarray(w_node, float), (n,))
    we = np.broadcast_to(np.asarray(w_edge, float), (n,))
    if np.any(wn == 0) or np.any(we[1:] == 0):
        raise ValueError("Generation Matrix weights must be non-zero (Def. 7)")
    # CSR row by row: row 0 = [w_0]; row i = [-w_{i→f_i} at f_i, w_i at i] (f_i < i: sorted columns)
    indptr = np.zeros(n + 1, np.int64)
    indptr[1:] = 2 * np.arange(1, n + 1) - 1
    indices = np.empty(2 * n - 1, np.int64)
    data = np.empty(2 * n - 1, float)
    indices[0], data[0] = 0, wn[0]
    indices[1::2] = tree.parent[1:]
    data[1::2] = -we[1:]
    indices[2::2] = np.arange(1, n)
    data[2::2] = wn[1:]
    return _sparse().csr_matrix((data, indices, indptr), shape=(n, n))


def structure_matrix(tree: Tree) -> sp.csr_matrix:
    """G_T = G_T^(1,1), the Structure Matrix (Def. 7)."""
    return generation_matrix(tree)


def k_order_submatrix(g: sp.spmatrix, tree: Tree, k: int) -> sp.csr_matrix:
    """Leading n_k × n_k principal submatrix of ``g``: the Generation Matrix of T⁽ᵏ⁾ (Def. 3, Fig. 3)."""
    nk = tree.n_k(k)
    return _sparse().csr_matrix(g)[:nk, :nk]


def mapping_matrix(s: np.ndarray, n: int) -> sp.csr_matrix:
    """H_S ∈ {0,1}^{m×n} of Def. 9 / Eq. (11): h_{i,j} = 1 iff s_i = j (0-based ``s``)."""
    s = np.asarray(s, np.int64)
    m = s.shape[0]
    return _sparse().csr_matrix((np.ones(m), s, np.arange(m + 1)), shape=(m, n))


def leaf_mapping_matrix(tree: Tree) -> sp.csr_matrix:
    """H_H: maps the node vector v to the unit counts x (ħ_i = n₁ + i, Sec. 5.1)."""
    return mapping_matrix(np.arange(tree.n1, tree.n), tree.n)


def consistency_matrix(tree: Tree) -> sp.csr_matrix:
    """M_T ∈ R^{n×n₁} of Def. 5 / Eq. (7): m_ij = 1 if i = j, -1 if j = f_i.

    Mᵀv = 0 is "every internal node equals the sum of its children". Its upper n₁ rows are the
    Structure Matrix of T⁽¹⁾ (Eq. 32).
    """
    n, n1 = tree.n, tree.n1
    rows = np.concatenate([np.arange(n1), np.arange(1, n)])
    cols = np.concatenate([np.arange(n1), tree.parent[1:]])
    vals = np.concatenate([np.ones(n1), -np.ones(n - 1)])
    return _sparse().csr_matrix((vals, (rows, cols)), shape=(n, n1))
