"""dpviz.graph.metrics against slow independent references (networkx, dense matrices, plain loops)."""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pytest
from scipy.stats import entropy

from dpviz.errors import InputError
from dpviz.graph import metrics as M

EMPTY = np.zeros((0, 2), dtype=np.int64)


def canonical(edges) -> np.ndarray:
    e = np.asarray(list(edges), dtype=np.int64).reshape(-1, 2)
    e = np.sort(e, axis=1)
    e = e[e[:, 0] != e[:, 1]]
    return np.unique(e, axis=0)


def random_graph(rng: np.random.Generator, n: int | None = None, p: float | None = None) -> tuple[np.ndarray, int]:
    n = int(rng.integers(2, 40)) if n is None else n
    p = float(rng.uniform(0.02, 0.5)) if p is None else p
    iu, ju = np.triu_indices(n, 1)
    keep = rng.random(iu.size) < p
    return np.column_stack([iu[keep], ju[keep]]).astype(np.int64), n


def nx_graph(edges: np.ndarray, n: int) -> nx.Graph:
    g = nx.Graph()
    g.add_nodes_from(range(n))
    g.add_edges_from(edges.tolist())
    return g


def dense(edges: np.ndarray, n: int) -> np.ndarray:
    a = np.zeros((n, n), dtype=np.int64)
    a[edges[:, 0], edges[:, 1]] = 1
    a[edges[:, 1], edges[:, 0]] = 1
    return a


def star(n: int, centre: int) -> np.ndarray:
    return canonical((centre, v) for v in range(n) if v != centre)


PAIRS = [random_graph(np.random.default_rng(seed)) for seed in range(40)]


def graph_pairs():
    """(true, released, n) on a shared vertex set, including empty graphs."""
    rng = np.random.default_rng(123)
    for i, (e, n) in enumerate(PAIRS):
        r, _ = random_graph(rng, n=n)
        if i % 10 == 0:
            r = EMPTY
        yield e, r, n


# ---------------------------------------------------------------------------------------------
# Degree histogram and KL
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("e,n", PAIRS[:20])
def test_degree_histogram_matches_networkx(e, n):
    degrees, counts = M.degree_histogram(e, n)
    ref = nx.degree_histogram(nx_graph(e, n))
    assert counts.sum() == n
    np.testing.assert_array_equal(degrees, np.flatnonzero(ref))
    np.testing.assert_array_equal(counts, np.asarray(ref)[np.flatnonzero(ref)])


def test_degree_kl_matches_reference():
    for e, r, n in graph_pairs():
        h_true = nx.degree_histogram(nx_graph(e, n))
        h_rel = nx.degree_histogram(nx_graph(r, n))
        size = max(len(h_true), len(h_rel))
        p = np.pad(h_true, (0, size - len(h_true))) + 0.5
        q = np.pad(h_rel, (0, size - len(h_rel))) + 0.5
        assert M.degree_kl(e, r, n) == pytest.approx(entropy(p, q), rel=1e-12, abs=1e-15)
        assert M.degree_kl(e, e, n) == 0.0


def test_degree_kl_direction_and_smoothing():
    # true: all degree 1 (perfect matching on 4 vertices); released: empty (all degree 0).
    e = canonical([(0, 1), (2, 3)])
    p = np.array([0.5, 4.5]) / 5  # add-1/2 on degrees 0..1
    q = np.array([4.5, 0.5]) / 5
    assert M.degree_kl(e, EMPTY, 4) == pytest.approx(float(np.sum(p * np.log(p / q))))
    assert M.degree_kl(e, EMPTY, 4, alpha=1.0) == pytest.approx(float(np.sum(
        np.array([1, 5]) / 6 * np.log(np.array([1, 5]) / np.array([5, 1])))))
    # KL is not symmetric in general: check the documented direction on an asymmetric case
    r = canonical([(0, 1)])
    hp = np.array([0, 4]) + 0.5
    hq = np.array([2, 2]) + 0.5
    assert M.degree_kl(e, r, 4) == pytest.approx(entropy(hp, hq))
    assert M.degree_kl(e, r, 4) != pytest.approx(entropy(hq, hp))


# ---------------------------------------------------------------------------------------------
# RRDC
# ---------------------------------------------------------------------------------------------

def rrdc_reference(e: np.ndarray, r: np.ndarray, n: int, top: float) -> float:
    d_true = dense(e, n).sum(axis=1)
    d_rel = dense(r, n).sum(axis=1)

    def rank(d, v):  # average rank, descending, by counting (no sort)
        greater = sum(1 for w in range(n) if d[w] > d[v])
        equal = sum(1 for w in range(n) if d[w] == d[v])
        return greater + (equal + 1) / 2

    k = min(n, max(1, math.ceil(top * n)))
    top_v = sorted(range(n), key=lambda v: (-d_true[v], v))[:k]
    return sum(abs(rank(d_rel, v) - rank(d_true, v)) for v in top_v) / k / (n - 1)


def test_rrdc_hand_made_star():
    # True: star centred at 0 on 11 vertices; released: star centred at 1. k = 1 (top 1%): vertex 0 has
    # rank 1 in G and is one of 10 tied leaves (ranks 2..11, average 6.5) in G~: |6.5 - 1| / 10.
    assert M.rrdc(star(11, 0), star(11, 1), 11) == pytest.approx(0.55)
    assert M.rrdc(star(11, 0), star(11, 0), 11) == 0.0
    # Empty release: every vertex ties at rank 6; the centre moved by 5 of 10.
    assert M.rrdc(star(11, 0), EMPTY, 11) == pytest.approx(0.5)


def test_rrdc_hand_made_top_two():
    # Path 0-1-2-3-4: degrees 1,2,2,2,1, top 40% = vertices 1, 2 (ties broken by id), average rank 2.
    # Released: star at 4 -> vertex 4 rank 1, vertices 0..3 tie at rank 3.5; both top vertices move 1.5.
    path = canonical([(0, 1), (1, 2), (2, 3), (3, 4)])
    assert M.rrdc(path, star(5, 4), 5, top=0.4) == pytest.approx(1.5 / 4)


def test_rrdc_matches_reference():
    for e, r, n in graph_pairs():
        for top in (0.01, 0.3):
            assert M.rrdc(e, r, n, top=top) == pytest.approx(rrdc_reference(e, r, n, top), abs=1e-12)


# ---------------------------------------------------------------------------------------------
# Cut queries
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("query", ["complement", "split"])
def test_cut_queries_match_dense_brute_force(query):
    for e, r, n in graph_pairs():
        for size in (0.2, 0.5, 0.8):
            s, t = M.cut_sets(n, size, 30, np.random.default_rng(n), query=query)
            q_true, q_rel = M.cut_queries(e, r, n, np.random.default_rng(n), size=size, n_queries=30, query=query)
            a, b = dense(e, n), dense(r, n)
            for i in range(30):
                si, ti = np.flatnonzero(s[i]), np.flatnonzero(t[i])
                assert not set(si) & set(ti)
                if query == "complement":
                    assert si.size == min(n - 1, max(1, round(size * n))) and si.size + ti.size == n
                else:
                    u = min(n, max(2, round(size * n)))
                    assert si.size == u // 2 and ti.size == u - u // 2
                assert q_true[i] == a[np.ix_(si, ti)].sum()
                assert q_rel[i] == b[np.ix_(si, ti)].sum()


def test_cut_sets_are_uniform():
    counts = M.cut_sets(10, 0.3, 20000, np.random.default_rng(0))[0].sum(axis=0)
    # each vertex is in S with probability 3/10: 6000 +- 65 (sd); 5 sd margin
    assert np.all(np.abs(counts - 6000) < 330)


@pytest.mark.parametrize("query", ["complement", "split"])
def test_cut_error_hand_made_k4_vs_c4(query):
    # K4 has cut 4 for every 2|2 split; the 4-cycle 0-1-2-3 has 4 when S = {0,2} or {1,3}, else 2.
    # Per query the relative error is 0 or 1/2, and its expectation is (4/6)(1/2) = 1/3.
    k4 = canonical((i, j) for i in range(4) for j in range(i + 1, 4))
    c4 = canonical([(0, 1), (1, 2), (2, 3), (0, 3)])
    size = 0.5 if query == "complement" else 0.99
    q_true, q_rel = M.cut_queries(k4, c4, 4, np.random.default_rng(3), size=size, n_queries=3000, query=query)
    assert set(q_true.tolist()) == {4} and set(q_rel.tolist()) == {2, 4}
    err = M.cut_error(k4, c4, 4, np.random.default_rng(3), sizes=(size,), n_queries=3000, query=query)
    assert err == pytest.approx(np.mean(np.abs(q_rel - q_true) / 4))
    assert err == pytest.approx(1 / 3, abs=0.03)


def test_cut_error_identical_empty_and_by_size():
    e, n = PAIRS[3]
    assert M.cut_error(e, e, n, np.random.default_rng(0)) == 0.0
    assert M.cut_error(e, EMPTY, n, np.random.default_rng(0)) == 1.0
    by = M.cut_error_by_size(e, EMPTY, n, np.random.default_rng(0))
    assert list(by) == list(M.CUT_SIZES) and set(by.values()) == {1.0}
    r = random_graph(np.random.default_rng(9), n=n)[0]
    by = M.cut_error_by_size(e, r, n, np.random.default_rng(5), n_queries=20)
    assert M.cut_error(e, r, n, np.random.default_rng(5), n_queries=20) == pytest.approx(np.mean(list(by.values())))


def test_cut_split_error_falls_with_size_complement_is_symmetric():
    # The two readings of Table 2: with T = V \ S sizes s and 1-s are the same query family; with a
    # split of U the answers grow like s^2 |E| / 2 and the relative error falls with s.
    rng = np.random.default_rng(11)
    e, n = random_graph(rng, n=300, p=0.03)
    r, _ = random_graph(rng, n=300, p=0.03)
    comp = M.cut_error_by_size(e, r, n, np.random.default_rng(1), sizes=(0.2, 0.8), n_queries=400)
    assert comp[0.2] == pytest.approx(comp[0.8], rel=0.1)
    split = M.cut_error_by_size(e, r, n, np.random.default_rng(1), sizes=(0.2, 0.8), n_queries=400, query="split")
    assert split[0.2] > 1.5 * split[0.8]


# ---------------------------------------------------------------------------------------------
# Triangles and clustering
# ---------------------------------------------------------------------------------------------

def test_triangles_and_clustering_match_networkx():
    for e, r, n in graph_pairs():
        for edges in (e, r):
            g = nx_graph(edges, n)
            ref = nx.triangles(g)
            np.testing.assert_array_equal(M.triangles(edges, n), [ref[v] for v in range(n)])
            assert M.clustering_coefficient(edges, n) == pytest.approx(nx.average_clustering(g), abs=1e-12)
            assert M.clustering_coefficient(edges, n, kind="global") == pytest.approx(nx.transitivity(g), abs=1e-12)
        c_true, c_rel = nx.average_clustering(nx_graph(e, n)), nx.average_clustering(nx_graph(r, n))
        expected = abs(c_rel - c_true) / c_true if c_true else float(c_rel != 0)
        assert M.clustering_rel_error(e, r, n) == pytest.approx(expected, abs=1e-12)


def test_triangles_on_a_larger_power_law_graph():
    g = nx.barabasi_albert_graph(2000, 5, seed=1)
    e = canonical(g.edges())
    ref = nx.triangles(g)
    np.testing.assert_array_equal(M.triangles(e, 2000), [ref[v] for v in range(2000)])


def test_clustering_rel_error_hand_made():
    tri = canonical([(0, 1), (1, 2), (0, 2)])
    path = canonical([(0, 1), (1, 2)])
    assert M.clustering_rel_error(tri, tri, 3) == 0.0
    assert M.clustering_rel_error(tri, path, 3) == 1.0
    assert M.clustering_rel_error(tri, EMPTY, 3) == 1.0
    assert M.clustering_rel_error(path, tri, 3) == 1.0  # true value 0, released not: defined as 1
    assert M.clustering_rel_error(path, path, 3) == 0.0
    with pytest.raises(InputError, match="kind"):
        M.clustering_rel_error(tri, tri, 3, kind="local")


# ---------------------------------------------------------------------------------------------
# Modularity
# ---------------------------------------------------------------------------------------------

def test_modularity_matches_networkx_for_any_partition():
    rng = np.random.default_rng(5)
    for e, r, n in graph_pairs():
        if len(e) == 0:
            continue
        labels = rng.integers(0, 4, size=n)
        parts = [set(np.flatnonzero(labels == c).tolist()) for c in np.unique(labels)]
        assert M.modularity(e, n, labels) == pytest.approx(nx.community.modularity(nx_graph(e, n), parts), abs=1e-12)
        assert M.modularity(e, n, labels, resolution=0.5) == pytest.approx(
            nx.community.modularity(nx_graph(e, n), parts, resolution=0.5), abs=1e-12)
    assert M.modularity(EMPTY, 5, np.zeros(5, dtype=int)) == 0.0


def test_true_communities_are_networkx_louvain_and_cached():
    g = nx.karate_club_graph()
    e = canonical(g.edges())
    labels = M.true_communities(e, 34, seed=0)
    ref = nx.community.louvain_communities(nx_graph(e, 34), seed=0)
    assert sorted(sorted(np.flatnonzero(labels == c).tolist()) for c in np.unique(labels)) == \
        sorted(sorted(c) for c in ref)
    assert M.true_communities(e, 34, seed=0) is labels  # cached
    assert not labels.flags.writeable


def test_modularity_rel_error_reference():
    for e, r, n in graph_pairs():
        ref_parts = nx.community.louvain_communities(nx_graph(e, n), seed=0)
        q_true = nx.community.modularity(nx_graph(e, n), ref_parts) if len(e) else 0.0
        q_rel = nx.community.modularity(nx_graph(r, n), ref_parts) if len(r) else 0.0
        expected = abs(q_rel - q_true) / abs(q_true) if q_true else float(q_rel != 0)
        assert M.modularity_rel_error(e, r, n) == pytest.approx(expected, abs=1e-12)
        assert M.modularity_rel_error(e, e, n) == 0.0


def test_modularity_rel_error_hand_made_two_triangles():
    # Two triangles joined by one edge; communities = the triangles (given explicitly).
    e = canonical([(0, 1), (1, 2), (0, 2), (3, 4), (4, 5), (3, 5), (2, 3)])
    labels = np.array([0, 0, 0, 1, 1, 1])
    q = 6 / 7 - 2 * (7 / 14) ** 2
    assert M.modularity(e, 6, labels) == pytest.approx(q)
    # Released: the triangles' internal edges become the cross edges -> Q~ computed by hand.
    r = canonical([(0, 3), (1, 4), (2, 5)])
    q_rel = 0 - 2 * (3 / 6) ** 2
    assert M.modularity_rel_error(e, r, 6, communities=labels) == pytest.approx(abs(q_rel - q) / q)
    assert M.modularity_rel_error(e, EMPTY, 6, communities=labels) == 1.0
    with pytest.raises(InputError, match="communities"):
        M.modularity_rel_error(e, r, 6, communities=np.zeros(5, dtype=int))


# ---------------------------------------------------------------------------------------------
# Eigenvector centrality
# ---------------------------------------------------------------------------------------------

def connected_graph(seed: int, n: int, p: float) -> np.ndarray:
    g = nx.gnp_random_graph(n, p, seed=seed)
    g.add_edges_from((i, i + 1) for i in range(n - 1))  # a spanning path: connected, simple top eigenvalue
    return canonical(g.edges())


@pytest.mark.parametrize("seed,n,p", [(s, 30 + 7 * s, 0.15) for s in range(8)] + [(99, 800, 0.01)])
def test_eigenvector_centrality_matches_networkx(seed, n, p):
    e = connected_graph(seed, n, p)
    ref = nx.eigenvector_centrality_numpy(nx_graph(e, n))
    x = M.eigenvector_centrality(e, n)
    np.testing.assert_allclose(x, [ref[v] for v in range(n)], atol=1e-8)
    assert np.linalg.norm(x) == pytest.approx(1.0)


def test_eigenvector_centrality_disconnected_and_empty():
    # A K4 plus a disjoint path: the K4 has the larger spectral radius, the path gets 0.
    e = canonical([(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3), (4, 5), (5, 6)])
    x = M.eigenvector_centrality(e, 8)
    np.testing.assert_allclose(x, [0.5] * 4 + [0.0] * 4, atol=1e-12)
    np.testing.assert_array_equal(M.eigenvector_centrality(EMPTY, 5), np.zeros(5))


def test_eigen_top1_overlap_reference_and_hand_made():
    for seed in range(6):
        n = 200
        e = connected_graph(seed, n, 0.05)
        r = connected_graph(seed + 100, n, 0.05)
        xe, xr = nx.eigenvector_centrality_numpy(nx_graph(e, n)), nx.eigenvector_centrality_numpy(nx_graph(r, n))
        k = 10  # top 5%
        top_e = set(sorted(range(n), key=lambda v: -xe[v])[:k])
        top_r = set(sorted(range(n), key=lambda v: -xr[v])[:k])
        assert M.eigen_top1_overlap(e, r, n, top=0.05) == pytest.approx(len(top_e & top_r) / k)
        assert M.eigen_top1_overlap(e, e, n) == 1.0
        assert M.eigen_top1_overlap(e, EMPTY, n) == 0.0
    assert M.eigen_top1_overlap(EMPTY, EMPTY, 10) == 1.0
    # Leading components smaller than k = 10 (top 1% of 1000): only positive-centrality vertices count.
    one_edge = canonical([(3, 700)])
    assert M.eigen_top1_overlap(one_edge, one_edge, 1000) == 1.0
    assert M.eigen_top1_overlap(one_edge, canonical([(0, 1)]), 1000) == 0.0
    assert M.eigen_top1_overlap(one_edge, canonical([(3, 700), (3, 5), (5, 700)]), 1000) == pytest.approx(2 / 3)
    # Stars on 100 vertices: top 1% = the centre alone.
    assert M.eigen_top1_overlap(star(100, 0), star(100, 7), 100) == 0.0
    assert M.eigen_top1_overlap(star(100, 7), star(100, 7), 100) == 1.0


# ---------------------------------------------------------------------------------------------
# Jaccard, evaluate, inputs, scale
# ---------------------------------------------------------------------------------------------

def test_edge_jaccard():
    a = canonical([(0, 1), (1, 2), (2, 3)])
    b = canonical([(0, 1), (2, 3), (0, 3), (1, 3)])
    assert M.edge_jaccard(a, b, 4) == pytest.approx(2 / 5)
    assert M.edge_jaccard(a, a, 4) == 1.0
    assert M.edge_jaccard(a, EMPTY, 4) == 0.0
    assert M.edge_jaccard(EMPTY, EMPTY, 4) == 1.0


def test_evaluate_keys_identical_and_empty():
    g = nx.karate_club_graph()
    e, n = canonical(g.edges()), 34
    same = M.evaluate(e, e, n, np.random.default_rng(0))
    assert list(same) == list(M.METRIC_INFO)
    assert same == {"n_edges_true": 78, "n_edges_released": 78, "edge_jaccard": 1.0, "degree_kl": 0.0,
                    "rrdc": 0.0, "cut_error": 0.0, "clustering_rel_error": 0.0, "modularity_rel_error": 0.0,
                    "eigen_top1_overlap": 1.0}
    empty = M.evaluate(e, EMPTY, n, np.random.default_rng(0))
    assert empty["n_edges_released"] == 0 and empty["edge_jaccard"] == 0.0
    assert empty["cut_error"] == empty["clustering_rel_error"] == empty["modularity_rel_error"] == 1.0
    assert empty["eigen_top1_overlap"] == 0.0 and empty["degree_kl"] > 0
    assert empty["rrdc"] == pytest.approx(rrdc_reference(e, EMPTY, n, 0.01))
    # evaluate agrees with the individual functions on a random release
    r, _ = random_graph(np.random.default_rng(4), n=n, p=0.14)
    out = M.evaluate(e, r, n, np.random.default_rng(8))
    assert out["degree_kl"] == M.degree_kl(e, r, n)
    assert out["rrdc"] == M.rrdc(e, r, n)
    assert out["cut_error"] == M.cut_error(e, r, n, np.random.default_rng(8))
    assert out["clustering_rel_error"] == M.clustering_rel_error(e, r, n)
    assert out["modularity_rel_error"] == M.modularity_rel_error(e, r, n)
    assert out["eigen_top1_overlap"] == M.eigen_top1_overlap(e, r, n)
    assert out["edge_jaccard"] == M.edge_jaccard(e, r, n)
    for key, (label, direction, definition) in M.METRIC_INFO.items():
        assert label and definition and direction in (M.LOWER, M.HIGHER, M.REFERENCE)


@pytest.mark.parametrize("edges,match", [
    (np.array([[1, 0]]), "row 0 is \\(1, 0\\)"),
    (np.array([[0, 1], [0, 1]]), "duplicate"),
    (np.array([[0, 1], [2, 2]]), "row 1"),
    (np.array([[0, 9]]), "0..4"),
    (np.array([[-1, 2]]), "0..4"),
    (np.array([[0.0, 1.0]]), "integer"),
    (np.array([0, 1, 2]), "shape"),
])
def test_bad_edges_raise_input_error(edges, match):
    ok = canonical([(0, 1)])
    with pytest.raises(InputError, match=match):
        M.degree_kl(ok, edges, 5)
    with pytest.raises(InputError, match="true_edges"):
        M.evaluate(edges, ok, 5, np.random.default_rng(0))


def test_bad_parameters_raise_input_error():
    e = canonical([(0, 1), (1, 2)])
    with pytest.raises(InputError, match="n_nodes"):
        M.degree_kl(e, e, 0)
    with pytest.raises(InputError, match="rng"):
        M.cut_error(e, e, 3, None)
    with pytest.raises(InputError, match="sizes"):
        M.cut_error(e, e, 3, np.random.default_rng(0), sizes=(0.2, 1.0))
    with pytest.raises(InputError, match="query"):
        M.cut_error(e, e, 3, np.random.default_rng(0), query="induced")
    with pytest.raises(InputError, match="n_queries"):
        M.cut_error(e, e, 3, np.random.default_rng(0), n_queries=0)
    with pytest.raises(InputError, match="top"):
        M.rrdc(e, e, 3, top=0)


def test_large_sparse_graph_never_goes_dense():
    # |V| = 60,000: a dense adjacency would need 28.8 GB (float64); everything must stay sparse.
    rng = np.random.default_rng(2)
    n = 60_000
    e = canonical(rng.integers(0, n, size=(90_000, 2)))
    r = canonical(rng.integers(0, n, size=(90_000, 2)))
    labels = rng.integers(0, 50, size=n)
    out = M.evaluate(e, r, n, np.random.default_rng(0), n_queries=20, communities=labels)
    assert 0.0 <= out["edge_jaccard"] < 0.01
    assert out["cut_error"] < 0.05  # two G(n, m) graphs with the same m have nearly equal cuts
    assert 0.0 <= out["eigen_top1_overlap"] <= 1.0
