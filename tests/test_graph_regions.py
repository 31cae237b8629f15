"""dpviz.graph.regions: sparse region arithmetic against brute force on small dense matrices."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import chisquare

from dpviz.errors import InputError
from dpviz.graph.regions import (
    EdgeIndex,
    count_below,
    count_upper,
    offdiag_cells,
    place_uniform,
    ragged_arange,
    upper_cells,
)


def _random_rects(rng, n, k):
    """Rectangles with bounds in [0, n + 1], some empty or inverted on purpose."""
    return (rng.integers(0, n + 2, k), rng.integers(0, n + 2, k), rng.integers(0, n + 2, k),
            rng.integers(0, n + 2, k))


def _cell_grid(size):
    return np.meshgrid(np.arange(size), np.arange(size), indexing="ij")


def test_upper_and_offdiag_cells_match_brute_force():
    rng = np.random.default_rng(1)
    for _ in range(60):
        n = int(rng.integers(1, 30))
        r0, r1, c0, c1 = _random_rects(rng, n, 40)
        i, j = _cell_grid(n + 2)
        up = upper_cells(r0, r1, c0, c1)
        off = offdiag_cells(r0, r1, c0, c1)
        for q in range(40):
            inside = (i >= r0[q]) & (i < r1[q]) & (j >= c0[q]) & (j < c1[q])
            assert up[q] == np.count_nonzero(inside & (i < j))
            assert off[q] == np.count_nonzero(inside & (i != j))


def test_upper_cells_closed_form_large_and_scalar():
    n = 10**6
    assert upper_cells(0, n, 0, n)[0] == n * (n - 1) // 2
    assert upper_cells(5, 10, 0, 5)[0] == 0  # entirely below the diagonal
    assert upper_cells(0, 3, 10, 14)[0] == 12  # entirely above: the full area
    assert upper_cells(0, 0, 0, 5)[0] == 0


def test_count_upper_matches_dense_matrices():
    rng = np.random.default_rng(2)
    for _ in range(80):
        n = int(rng.integers(1, 40))
        a = np.triu(rng.random((n, n)) < rng.random(), 1)
        u, v = np.nonzero(a)
        r0, r1, c0, c1 = _random_rects(rng, n, 30)
        got = count_upper(u, v, r0, r1, c0, c1)
        for q in range(30):
            want = a[r0[q]:max(r1[q], r0[q]), c0[q]:max(c1[q], c0[q])].sum()
            assert got[q] == want


def test_count_upper_ignores_lower_points_and_reuses_an_index():
    rng = np.random.default_rng(3)
    n = 50
    a = np.triu(rng.random((n, n)) < 0.2, 1)
    u, v = np.nonzero(a)
    # add lower-triangle and diagonal points: they are not edges (u < v) and must not count
    u2 = np.concatenate([u, v, np.arange(n)])
    v2 = np.concatenate([v, u, np.arange(n)])
    r0, r1, c0, c1 = _random_rects(rng, n, 200)
    want = np.array([a[r0[q]:max(r1[q], r0[q]), c0[q]:max(c1[q], c0[q])].sum() for q in range(200)])
    assert np.array_equal(count_upper(u2, v2, r0, r1, c0, c1), want)
    index = EdgeIndex.build(u, v)
    assert np.array_equal(count_upper(None, None, r0, r1, c0, c1, index=index), want)
    assert index.count(0, n, 0, n)[0] == a.sum()


def test_count_upper_sparse_on_a_huge_vertex_set():
    rng = np.random.default_rng(4)
    n = 10**9  # an n^2 matrix would be 10^18 cells
    u = rng.integers(0, n - 1, 3000)
    v = u + rng.integers(1, 1000, 3000)
    r0 = np.array([0, int(u[0]), 0])
    r1 = np.array([n, int(u[0]) + 1, int(u[0])])
    c0 = np.array([0, int(v[0]), 0])
    c1 = np.array([n, int(v[0]) + 1, n])
    got = count_upper(u, v, r0, r1, c0, c1)
    assert got[0] == 3000
    assert got[1] == np.count_nonzero((u == u[0]) & (v == v[0]))
    assert got[2] == np.count_nonzero(u < u[0])


def test_count_below_matches_brute_force():
    rng = np.random.default_rng(5)
    g = rng.integers(0, 20, 500)
    c = rng.integers(0, 100, 500)
    qg = rng.integers(0, 22, 300)
    qp = rng.integers(-3, 105, 300)
    got = count_below(g, c, qg, qp)
    want = [np.count_nonzero((g == a) & (c < b)) for a, b in zip(qg, qp)]
    assert np.array_equal(got, want)


def test_ragged_arange():
    vals, grp = ragged_arange(np.array([5, 0, 10]), np.array([2, 0, 3]))
    assert vals.tolist() == [5, 6, 10, 11, 12]
    assert grp.tolist() == [0, 0, 2, 2, 2]


def _check_placement(cells, region, r0, r1, c0, c1, k, cap, upper=True):
    i, j = cells[:, 0], cells[:, 1]
    assert ((i >= r0[region]) & (i < r1[region]) & (j >= c0[region]) & (j < c1[region])).all()
    assert (i < j).all() if upper else (i != j).all()
    per = np.bincount(region, minlength=r0.size)
    assert np.array_equal(per, np.clip(k, 0, cap))
    keys = region * 10**12 + i * 10**6 + j
    assert np.unique(keys).size == keys.size  # distinct within each region


def test_place_uniform_counts_distinct_upper_cells():
    rng = np.random.default_rng(6)
    for _ in range(30):
        n = int(rng.integers(2, 300))
        m = 40
        r0, r1, c0, c1 = _random_rects(rng, n, m)
        cap = upper_cells(r0, r1, c0, c1)
        # small k (rejection), k near the capacity (enumeration), and k above it (clipped)
        k = np.where(rng.random(m) < 0.3, cap + 3, rng.integers(0, 40, m))
        cells, region = place_uniform(r0, r1, c0, c1, k, rng, return_region=True)
        assert cells.dtype == np.int64 and cells.shape[1] == 2
        _check_placement(cells, region, r0, r1, c0, c1, k, cap)


def test_place_uniform_big_sparse_region_never_enumerates():
    rng = np.random.default_rng(7)
    n = 10**6
    cells = place_uniform([0], [n], [0], [n], [2000], rng)
    assert cells.shape == (2000, 2)
    assert (cells[:, 0] < cells[:, 1]).all()
    assert np.unique(cells[:, 0] * n + cells[:, 1]).size == 2000


def test_place_uniform_offdiag_with_exclusions():
    rng = np.random.default_rng(8)
    n = 30
    ones = np.argwhere(rng.random((n, n)) < 0.5)
    ones = ones[ones[:, 0] != ones[:, 1]]
    r0, r1, c0, c1 = np.array([0, 5, 10, 0]), np.array([30, 20, 12, 3]), np.array([0, 0, 10, 20]), np.array([30, 25, 30, 30])
    inside = [((ones[:, 0] >= a) & (ones[:, 0] < b) & (ones[:, 1] >= c) & (ones[:, 1] < d)).sum()
              for a, b, c, d in zip(r0, r1, c0, c1)]
    cap = offdiag_cells(r0, r1, c0, c1) - np.array(inside)
    k = np.array([40, 1000, 5, 10])
    cells, region = place_uniform(r0, r1, c0, c1, k, rng, upper=False, exclude=ones, return_region=True)
    _check_placement(cells, region, r0, r1, c0, c1, k, cap, upper=False)
    excluded = set(map(tuple, ones.tolist()))
    assert not any(tuple(c) in excluded for c in cells.tolist())


@pytest.mark.parametrize("size,k", [(8, 3), (30, 4)])  # enumeration branch, rejection branch
def test_place_uniform_is_uniform_chi_square(size, k):
    rng = np.random.default_rng(9)
    reps = 3000
    # one call with the same region repeated: every region is sampled independently
    r0 = np.zeros(reps, dtype=np.int64)
    r1 = np.full(reps, size)
    cells = place_uniform(r0, r1, r0, r1, np.full(reps, k), rng)
    cap = size * (size - 1) // 2
    freq = np.bincount(cells[:, 0] * size + cells[:, 1], minlength=size * size)
    i, j = _cell_grid(size)
    upper = (i < j).ravel()
    assert freq[~upper].sum() == 0
    obs = freq[upper]
    assert obs.size == cap
    assert chisquare(obs).pvalue > 1e-3


def test_place_uniform_subsets_are_uniform():
    rng = np.random.default_rng(10)
    reps = 6000
    # region [0,3) x [1,4) has upper cells (0,1),(0,2),(0,3),(1,2),(1,3),(2,3): C(6,2) = 15 subsets
    cells, region = place_uniform(np.zeros(reps, int), np.full(reps, 3), np.ones(reps, int), np.full(reps, 4),
                                  np.full(reps, 2), rng, return_region=True)
    codes = cells[:, 0] * 4 + cells[:, 1]
    first, second = codes[0::2], codes[1::2]
    assert np.array_equal(region[0::2], region[1::2])
    pair = np.minimum(first, second) * 16 + np.maximum(first, second)
    _, counts = np.unique(pair, return_counts=True)
    assert counts.size == 15
    assert chisquare(counts).pvalue > 1e-3


def test_bad_inputs_raise_input_error():
    with pytest.raises(InputError, match="same length"):
        upper_cells([0, 1], [1, 2, 3], [0], [1])
    with pytest.raises(InputError, match="whole numbers"):
        upper_cells([0.5], [1], [0], [1])
    with pytest.raises(InputError, match="same length"):
        count_upper([1, 2], [3], [0], [4], [0], [4])
    with pytest.raises(InputError, match="rng"):
        place_uniform([0], [4], [0], [4], [1], rng=42)


def test_place_uniform_subsets_are_uniform_on_the_rejection_path():
    rng = np.random.default_rng(11)
    reps = 25000
    # [0,5) x [5,19): 70 cells, all above the diagonal; k = 2 < (70 - 64) / 2 is drawn by rejection
    assert upper_cells(0, 5, 5, 19)[0] == 70
    cells = place_uniform(np.zeros(reps, int), np.full(reps, 5), np.full(reps, 5), np.full(reps, 19),
                          np.full(reps, 2), rng)
    codes = cells[:, 0] * 19 + cells[:, 1]
    first, second = codes[0::2], codes[1::2]
    pair = np.minimum(first, second) * 400 + np.maximum(first, second)
    _, counts = np.unique(pair, return_counts=True)
    counts = np.concatenate([counts, np.zeros(70 * 69 // 2 - counts.size)])
    assert chisquare(counts).pvalue > 1e-3
