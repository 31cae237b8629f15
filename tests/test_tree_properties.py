"""Props. 4-11 and Thms. 1-4 of the Generation Matrix paper against direct definitions.

Every reference value is computed from the *input* parent array with networkx or brute force, then
mapped into the Tree's Descending-Order-of-Height numbering through ``tree.order`` (DOH index ->
input position), so the DOH renumbering itself is under test too.
"""

from __future__ import annotations

import warnings

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpviz.tree.generation import generation_matrix, structure_matrix
from dpviz.tree.model import Tree, tree_from_parents
from dpviz.tree.properties import (
    DENSE_MAX,
    SMALL_TREE_MAX,
    adjacency_matrix,
    ancestor_indicator,
    ancestral_matrix,
    children_counts,
    common_ancestors,
    depths,
    diagonal_decomposition,
    distance_matrix,
    eigen_decomposition,
    laplacian_matrix,
    sibling_matrix,
    subtree_sizes,
)

N_TREES = 110  # per test; sizes 1..80


# ---------------------------------------------------------------------------------------------
# random trees (built in construction order p[k] < k, then shuffled into random input order)
# ---------------------------------------------------------------------------------------------
def _shape(kind: str, n: int, rng: np.random.Generator) -> np.ndarray:
    k = np.arange(1, n)
    if kind == "path":
        p = k - 1
    elif kind == "star":
        p = np.zeros(n - 1, np.int64)
    elif kind == "caterpillar":  # spine 0..s-1, legs hang off random spine nodes
        s = max(1, int(rng.integers(1, n + 1)))
        legs = rng.integers(0, s, n - s)
        p = np.concatenate([np.arange(0, s - 1), legs])
    elif kind == "unbalanced":  # mostly extends the last node: long chain with short side twigs
        p = np.where(rng.random(n - 1) < 0.85, k - 1, rng.integers(0, k))
    elif kind == "shallow":  # parents among the first few nodes
        p = rng.integers(0, np.minimum(k, 4))
    elif kind == "binary":
        p = (k - 1) // 2
    else:  # random recursive tree
        p = rng.integers(0, k)
    return np.concatenate([[-1], p]).astype(np.int64)


KINDS = ("path", "star", "caterpillar", "unbalanced", "shallow", "binary", "random", "random")


def _relabel(p: np.ndarray, perm) -> np.ndarray:
    """Relabel node k as perm[k]: q[perm[k]] = perm[p[k]]."""
    perm = np.asarray(perm, np.int64)
    q = np.empty(p.shape[0], np.int64)
    q[perm] = np.where(p >= 0, perm[np.maximum(p, 0)], -1)
    return q


def _shuffle(p: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return _relabel(p, rng.permutation(p.shape[0]))


def random_parents(rng: np.random.Generator, n: int | None = None, kind: str | None = None) -> np.ndarray:
    n = int(rng.integers(1, 81)) if n is None else n
    kind = KINDS[int(rng.integers(len(KINDS)))] if kind is None else kind
    return _shuffle(_shape(kind, n, rng), rng)


def random_trees(seed: int, count: int = N_TREES):
    """(input parent array, Tree) pairs; the first ones cover every shape at the extreme sizes."""
    rng = np.random.default_rng(seed)
    fixed = [(kind, n) for kind in KINDS[:-1] for n in (1, 2, 80)]
    for i in range(count):
        kind, n = fixed[i] if i < len(fixed) else (None, None)
        q = random_parents(rng, n, kind)
        yield q, tree_from_parents(q)


class Ref:
    """Direct definitions on the input-order tree, reported in DOH order."""

    def __init__(self, q: np.ndarray, tree: Tree):
        self.q, self.tree, self.n = q, tree, q.shape[0]
        self.order = [int(x) for x in tree.order]  # DOH -> input position
        self.doh = {pos: i for i, pos in enumerate(self.order)}  # input position -> DOH
        self.down = nx.DiGraph()  # parent -> child, input labels
        self.down.add_nodes_from(range(self.n))
        self.down.add_edges_from((int(q[c]), c) for c in range(self.n) if q[c] >= 0)
        self.undirected = self.down.to_undirected()
        self.root = int(np.flatnonzero(q < 0)[0])

    def anc_or_self(self, i: int) -> set[int]:
        """DOH ancestors of DOH node i, including i."""
        pos = self.order[i]
        return {self.doh[a] for a in nx.ancestors(self.down, pos)} | {i}

    def depth(self) -> np.ndarray:
        sp_len = nx.single_source_shortest_path_length(self.undirected, self.root)
        return np.array([sp_len[pos] + 1 for pos in self.order])

    def parent_doh(self, i: int) -> int:
        p = int(self.q[self.order[i]])
        return -1 if p < 0 else self.doh[p]


def _dense(m) -> np.ndarray:
    return m.toarray() if sp.issparse(m) else np.asarray(m)


# ---------------------------------------------------------------------------------------------
# Props. 4-6: vectors
# ---------------------------------------------------------------------------------------------
def test_prop4_children_counts():
    for q, t in random_trees(401):
        ref = Ref(q, t)
        want = np.array([ref.down.out_degree(pos) for pos in ref.order])
        got = children_counts(t)
        assert got.dtype == np.int64
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(got, t.children_count)


def test_prop5_subtree_sizes():
    for q, t in random_trees(501):
        ref = Ref(q, t)
        want = np.array([len(nx.descendants(ref.down, pos)) + 1 for pos in ref.order])
        np.testing.assert_array_equal(subtree_sizes(t), want)


def test_prop6_depths():
    for q, t in random_trees(601):
        want = Ref(q, t).depth()
        np.testing.assert_array_equal(depths(t), want)
        np.testing.assert_array_equal(depths(t), t.depth)


# ---------------------------------------------------------------------------------------------
# Props. 7-9: matrices
# ---------------------------------------------------------------------------------------------
def test_prop7_ancestor_indicator():
    for q, t in random_trees(701):
        ref = Ref(q, t)
        want = np.zeros((t.n, t.n))
        for i in range(t.n):
            want[i, sorted(ref.anc_or_self(i))] = 1
        a = ancestor_indicator(t)
        assert sp.isspmatrix_csr(a) or isinstance(a, sp.csr_array)
        assert a.nnz == int(ref.depth().sum())
        assert a.has_canonical_format
        np.testing.assert_array_equal(a.toarray(), want)
        # it really is G^{-1}
        g = structure_matrix(t)
        np.testing.assert_allclose((g @ a).toarray(), np.eye(t.n), atol=0)


def test_prop8_sibling_matrix():
    for q, t in random_trees(801):
        ref = Ref(q, t)
        par = [ref.parent_doh(i) for i in range(t.n)]
        sib = np.array(
            [[int(i != j and par[i] >= 0 and par[i] == par[j]) for j in range(t.n)] for i in range(t.n)]
        )
        m = sibling_matrix(t)
        assert sp.issparse(m)
        md = m.toarray()
        g = structure_matrix(t).toarray()
        np.testing.assert_array_equal(md, g @ g.T)
        assert md[0, 0] == 1
        off = ~np.eye(t.n, dtype=bool)
        off[0, 0] = False
        np.testing.assert_array_equal((md == 1) & off, sib.astype(bool))  # Prop. 8
        # the remaining structure documented in the docstring
        np.testing.assert_array_equal(np.diag(md)[1:], 2)
        for i in range(1, t.n):
            assert md[i, par[i]] == md[par[i], i] == -1
        np.testing.assert_array_equal(sibling_matrix(t, indicator=True).toarray(), sib)


def test_prop9_common_ancestors():
    for q, t in random_trees(901):
        ref = Ref(q, t)
        anc = [ref.anc_or_self(i) for i in range(t.n)]
        want = np.array([[len(anc[i] & anc[j]) for j in range(t.n)] for i in range(t.n)])
        got = common_ancestors(t)
        assert isinstance(got, np.ndarray)
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(np.diag(got), ref.depth())
        if t.n <= 30:  # the literal (GᵀG)^{-1}
            g = structure_matrix(t).toarray()
            np.testing.assert_allclose(np.linalg.inv(g.T @ g), want, atol=1e-8)


# ---------------------------------------------------------------------------------------------
# Prop. 10: eigen-structure
# ---------------------------------------------------------------------------------------------
def _random_weights(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    mode = int(rng.integers(3))
    if mode == 0:  # few distinct values: many eigenvectors do not exist
        wn = rng.integers(1, 4, n).astype(float)
    elif mode == 1:  # distinct, both signs
        wn = rng.uniform(0.5, 2.0, n) * rng.choice([-1.0, 1.0], n)
    else:  # unit node weights (Structure-Matrix-like spectrum)
        wn = np.ones(n)
    we = rng.uniform(0.5, 2.0, n) * rng.choice([-1.0, 1.0], n)
    return wn, we


def _check_eigen(q: np.ndarray, t: Tree, wn: np.ndarray, we: np.ndarray) -> None:
    ref = Ref(q, t)
    g = generation_matrix(t, wn, we).toarray()
    ed = eigen_decomposition(t, wn, we)
    np.testing.assert_array_equal(ed.eigenvalues, wn)
    np.testing.assert_allclose(np.sort(np.linalg.eigvals(g).real), np.sort(wn), atol=1e-9)
    assert len(ed.left) == len(ed.right) == t.n
    for i in range(t.n):
        anc = ref.anc_or_self(i)
        desc = {j for j in range(t.n) if i in ref.anc_or_self(j)}
        left_exists = all(wn[j] != wn[i] for j in anc - {i})
        right_exists = all(wn[j] != wn[i] for j in desc - {i})
        u, v = ed.left[i], ed.right[i]
        assert (u is not None) == left_exists, (i, "left")
        assert (v is not None) == right_exists, (i, "right")
        if u is not None:
            assert u[i] == 1
            assert set(np.flatnonzero(u)) <= anc
            scale = np.abs(g).max() * np.abs(u).max()
            np.testing.assert_allclose(u @ g, wn[i] * u, atol=1e-9 * scale, rtol=0)  # uᵀG = λuᵀ
        if v is not None:
            assert v[i] == 1
            assert set(np.flatnonzero(v)) <= desc
            scale = np.abs(g).max() * np.abs(v).max()
            np.testing.assert_allclose(g @ v, wn[i] * v, atol=1e-9 * scale, rtol=0)  # Gv = λv


def test_prop10_eigen_decomposition():
    rng = np.random.default_rng(1001)
    for q, t in random_trees(1002):
        wn, we = _random_weights(rng, t.n)
        _check_eigen(q, t, wn, we)


def test_prop10_structure_matrix_spectrum():
    """Unit weights: only the root has a left and only the leaves have right eigenvectors."""
    for q, t in random_trees(1003, count=20):
        ed = eigen_decomposition(t)
        assert [i for i, u in enumerate(ed.left) if u is not None] == [0]
        assert [i for i, v in enumerate(ed.right) if v is not None] == list(range(t.n1, t.n))
        assert ed.diagonalizable_by_recurrences == (t.n == 1)


def test_prop10_sign_convention_two_nodes():
    """G = [[w0, 0], [-e, w1]]: Eqs. 17-18 hold as printed, with a positive numerator."""
    t = tree_from_parents(np.array([-1, 0]))
    w0, w1, e = 3.0, 5.0, 2.0
    ed = eigen_decomposition(t, [w0, w1], [1.0, e])
    np.testing.assert_allclose(ed.left[1], [e / (w0 - w1), 1.0])  # Eq. 17: +Σ w_{k→j} u_k / (w_j - w_i)
    np.testing.assert_allclose(ed.right[0], [1.0, e / (w1 - w0)])  # Eq. 18: +w_{j→f_j} v_{f_j} / (w_j - w_i)
    same = eigen_decomposition(t, [w0, w0], [1.0, e])
    assert same.left[1] is None and same.right[0] is None
    assert same.left[0] is not None and same.right[1] is not None


def test_prop10_overflow_is_silent_and_flagged_by_nonfinite_entries():
    t = tree_from_parents(np.arange(-1, 299))  # path of 300 nodes
    rng = np.random.default_rng(1004)
    wn = 1.0 + np.sort(rng.uniform(0, 1e-3, t.n))  # distinct but close: products of 1/(w_j - w_i) explode
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ed = eigen_decomposition(t, wn, 1.0)
    assert all(v is not None for v in ed.right)
    assert not all(np.isfinite(v).all() for v in ed.right)
    assert np.isfinite(ed.right[-1]).all()  # the leaf's eigenvector is e_leaf


# ---------------------------------------------------------------------------------------------
# Prop. 11: diagonal decomposition
# ---------------------------------------------------------------------------------------------
def test_prop11_diagonal_decomposition():
    rng = np.random.default_rng(1101)
    for q, t in random_trees(1102):
        wn = rng.uniform(0.2, 5.0, t.n)
        we = rng.uniform(0.2, 5.0, t.n)
        we[0] = rng.uniform(0.2, 5.0)  # ignored: w_{1→∅} := 1
        alpha, beta = diagonal_decomposition(t, wn, we)
        rebuilt = sp.diags(beta) @ structure_matrix(t) @ sp.diags(alpha)
        np.testing.assert_allclose(
            rebuilt.toarray(), generation_matrix(t, wn, we).toarray(), rtol=1e-9, atol=1e-12
        )
        np.testing.assert_allclose(alpha * beta, wn, rtol=1e-12)


def test_prop11_requires_positive_weights():
    t = tree_from_parents(np.array([-1, 0, 0]))
    with pytest.raises(ValueError, match="positive"):
        diagonal_decomposition(t, [1.0, -1.0, 1.0], 1.0)
    with pytest.raises(ValueError, match="positive"):
        diagonal_decomposition(t, 1.0, [1.0, 1.0, 0.0])
    alpha, beta = diagonal_decomposition(t, 1.0, [123.0, 1.0, 1.0])  # root edge weight is ignored
    np.testing.assert_allclose(alpha, 1.0)
    np.testing.assert_allclose(beta, 1.0)


# ---------------------------------------------------------------------------------------------
# Thms. 1-4: other matrix representations
# ---------------------------------------------------------------------------------------------
def test_thm1_adjacency():
    for q, t in random_trees(1201):
        ref = Ref(q, t)
        up = ref.down.reverse()  # child -> parent
        want_dir = nx.to_numpy_array(up, nodelist=ref.order)
        want_sym = nx.to_numpy_array(ref.undirected, nodelist=ref.order)
        a = adjacency_matrix(t)
        assert sp.issparse(a) and a.nnz == t.n - 1
        np.testing.assert_array_equal(a.toarray(), want_dir)
        np.testing.assert_array_equal(adjacency_matrix(t, symmetric=True).toarray(), want_sym)


def test_thm2_laplacian():
    for q, t in random_trees(1301):
        ref = Ref(q, t)
        want = nx.laplacian_matrix(ref.undirected, nodelist=ref.order).toarray()
        lap = laplacian_matrix(t)
        assert sp.issparse(lap)
        np.testing.assert_array_equal(lap.toarray(), want)


def test_thm3_distance():
    for q, t in random_trees(1401):
        ref = Ref(q, t)
        dist = dict(nx.all_pairs_shortest_path_length(ref.undirected))
        want = np.array([[dist[a][b] for b in ref.order] for a in ref.order])
        got = distance_matrix(t)
        np.testing.assert_array_equal(got, want)
        if t.n <= 30:  # the literal Eq. 23
            g = structure_matrix(t).toarray()
            gi = np.linalg.inv(g)
            one = np.ones((t.n, 1))
            lit = gi @ one @ one.T + one @ one.T @ gi.T - 2 * np.linalg.inv(g.T @ g)
            np.testing.assert_allclose(lit, want, atol=1e-8)


def test_thm4_ancestral():
    for q, t in random_trees(1501):
        ref = Ref(q, t)
        depth = ref.depth()
        leaves = list(range(t.n1, t.n))
        assert all(ref.down.out_degree(ref.order[i]) == 0 for i in leaves)
        anc = {i: ref.anc_or_self(i) for i in leaves}
        # depth (root = 1) of the lowest common ancestor, minus 1 = shared edges from the root
        want = np.array([[max(depth[k] for k in anc[a] & anc[b]) - 1 for b in leaves] for a in leaves])
        got = ancestral_matrix(t)
        assert got.shape == (t.m, t.m)
        np.testing.assert_array_equal(got, want)


# ---------------------------------------------------------------------------------------------
# limits
# ---------------------------------------------------------------------------------------------
def test_size_limits():
    big = tree_from_parents(np.arange(-1, SMALL_TREE_MAX))  # path of SMALL_TREE_MAX + 1 nodes
    for fn in (eigen_decomposition, diagonal_decomposition, adjacency_matrix, laplacian_matrix,
               distance_matrix, ancestral_matrix):
        with pytest.raises(ValueError, match=str(SMALL_TREE_MAX)):
            fn(big)
    huge = tree_from_parents(np.concatenate([[-1], np.zeros(DENSE_MAX, np.int64)]))  # star
    with pytest.raises(ValueError, match=str(DENSE_MAX)):
        common_ancestors(huge)
    with pytest.raises(ValueError, match="max_nnz"):
        sibling_matrix(huge, max_nnz=10_000)
    with pytest.raises(ValueError, match="max_nnz"):
        ancestor_indicator(big, max_nnz=10_000)
    # the O(n) vectors have no limit
    np.testing.assert_array_equal(depths(big), np.arange(1, SMALL_TREE_MAX + 2))
    np.testing.assert_array_equal(subtree_sizes(huge)[0], DENSE_MAX + 1)
    assert children_counts(huge)[0] == DENSE_MAX


# ---------------------------------------------------------------------------------------------
# hypothesis
# ---------------------------------------------------------------------------------------------
@st.composite
def parent_arrays(draw, max_n: int = 40) -> np.ndarray:
    n = draw(st.integers(1, max_n))
    p = [-1] + [draw(st.integers(0, k - 1)) for k in range(1, n)]
    perm = draw(st.permutations(range(n)))
    return _relabel(np.array(p, np.int64), perm)


HYP = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@HYP
@given(parent_arrays())
def test_hypothesis_vectors_and_distances(q):
    t = tree_from_parents(q)
    ref = Ref(q, t)
    np.testing.assert_array_equal(depths(t), ref.depth())
    sizes = subtree_sizes(t)
    assert sizes[0] == t.n
    # Σ subtree sizes = Σ depths (each (ancestor, node) pair counted once either way)
    assert sizes.sum() == depths(t).sum() == ancestor_indicator(t).nnz
    np.testing.assert_array_equal(children_counts(t).sum(), t.n - 1)
    dist = dict(nx.all_pairs_shortest_path_length(ref.undirected))
    want = np.array([[dist[a][b] for b in ref.order] for a in ref.order])
    np.testing.assert_array_equal(distance_matrix(t), want)


@HYP
@given(parent_arrays(max_n=25), st.data())
def test_hypothesis_eigen(q, data):
    t = tree_from_parents(q)
    wn = np.array(data.draw(st.lists(st.sampled_from([-2.0, -1.0, 0.5, 1.0, 3.0]), min_size=t.n, max_size=t.n)))
    we = np.array(data.draw(st.lists(st.sampled_from([-1.5, -1.0, 0.25, 1.0, 2.0]), min_size=t.n, max_size=t.n)))
    _check_eigen(q, t, wn, we)


@HYP
@given(parent_arrays(max_n=30))
def test_hypothesis_laplacian_kernel(q):
    """L = GᵀG - e₁e₁ᵀ is a Laplacian: symmetric, rows sum to 0, trace = 2(n-1)."""
    t = tree_from_parents(q)
    lap = laplacian_matrix(t).toarray()
    np.testing.assert_array_equal(lap, lap.T)
    np.testing.assert_array_equal(lap.sum(axis=1), 0)
    assert np.trace(lap) == 2 * (t.n - 1)
    assert lap[0, 0] == t.children_count[0]


# ---------------------------------------------------------------------------------------------
# issue 11: Props. 5-6 on every propagation path (perfect layout, CSR layout, deep trees)
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["complete", "complete-shuffled", "fanout", "deep"])
def test_prop5_prop6_on_every_propagation_path(kind):
    """Subtree sizes and depths by propagation equal the definitions on large trees of each layout:
    a complete ternary tree in BFS order (strided steps, no index arrays), the same tree shuffled
    (CSR steps), a random fan-out tree and a deep caterpillar (sparse solves; the second call reuses
    the cached factor)."""
    from dpviz.tree.propagation import workspace
    from dpviz.tree.synthetic import fanout_parents, path_like_tree

    rng = np.random.default_rng(1101)
    if kind.startswith("complete"):
        q = (np.arange(3**9 // 2) - 1) // 3  # 9841 nodes, height 9
        q[0] = -1
        q = _shuffle(q, rng) if kind.endswith("shuffled") else q
    elif kind == "fanout":
        q = fanout_parents(20_000, rng)
    else:
        q = path_like_tree(4001, 1.0, rng).tree.parent
    t = tree_from_parents(q)
    assert (workspace(t).fanouts is not None) == (kind == "complete") and t.is_deep == (kind == "deep")
    want_size = np.ones(t.n, np.int64)  # children before parents: add each subtree into its parent
    for i in np.argsort(-t.depth, kind="stable"):
        if t.parent[i] >= 0:
            want_size[t.parent[i]] += want_size[i]
    for _ in range(2):
        np.testing.assert_array_equal(subtree_sizes(t), want_size)
        np.testing.assert_array_equal(depths(t), t.depth)
    if kind.startswith("complete"):
        np.testing.assert_array_equal(want_size, (3 ** t.height.astype(np.int64) - 1) // 2)
