"""Fenwick strategy: Alg. 5.1-5.3, Thm 5.1, Thm 5.2 and the fast M / B / Mᵀ actions vs dense algebra."""

import numpy as np
import pytest

from dpviz.errors import InputError
from dpviz.stream import fenwick as F


def test_lowbit_examples():
    assert F.lowbit(10) == 2 and F.lowbit(12) == 4 and F.lowbit(1) == 1 and F.lowbit(8) == 8
    np.testing.assert_array_equal(F.lowbit(np.array([1, 2, 3, 6, 40])), [1, 2, 1, 2, 8])


def test_thm_5_1_and_5_2_for_all_n_up_to_520_and_around_powers_of_two():
    # every N up to 520 (past 2^9), then each power of two to 2^11 and its neighbours, and N = 2000
    for n in [*range(1, 521), 1023, 1024, 1025, 2047, 2048, 2049, 2000]:
        m = F.strategy_matrix(n)
        col = np.asarray(m.sum(axis=0)).ravel()
        # Thm 5.1: the first column has the largest L1 norm, floor(log2 N) + 1
        assert col.max() == col[0] == np.floor(np.log2(n)) + 1 == F.delta_m(n)
        b = F.reconstruction_matrix(n)
        # Thm 5.2: row p of B has popcount(p) ones
        np.testing.assert_array_equal(np.diff(b.indptr), [bin(p).count("1") for p in range(1, n + 1)])
        assert b.data.max() == 1.0


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, 13, 31, 32, 33, 64, 100])
def test_b_times_m_is_the_workload_and_fast_actions_match_dense(n):
    rng = np.random.default_rng(n)
    m, b = F.strategy_matrix(n).toarray(), F.reconstruction_matrix(n).toarray()
    np.testing.assert_array_equal(b @ m, F.workload_matrix(n))
    v = rng.normal(size=n)
    np.testing.assert_allclose(F.node_sums(v), m @ v, atol=1e-12)
    np.testing.assert_allclose(F.chain_sum(v), b @ v, atol=1e-12)
    np.testing.assert_allclose(F.column_chain_sum(v), m.T @ v, atol=1e-12)
    np.testing.assert_array_equal(F.column_norms_sq_b(n), (b * b).sum(axis=0))
    # the actions work along the last axis of a batch
    vv = rng.normal(size=(3, n))
    np.testing.assert_allclose(F.chain_sum(vv), vv @ b.T, atol=1e-12)
    np.testing.assert_allclose(F.node_sums(vv), vv @ m.T, atol=1e-12)


def test_m_row_is_the_lowbit_interval():
    m = F.strategy_matrix(12).toarray()
    np.testing.assert_array_equal(np.flatnonzero(m[11]) + 1, [9, 10, 11, 12])  # lowbit(12) = 4
    np.testing.assert_array_equal(np.flatnonzero(m[9]) + 1, [9, 10])  # lowbit(10) = 2


@pytest.mark.parametrize("bad", [0, -3, 2.5, True, "7"])
def test_bad_horizon_is_an_input_error(bad):
    with pytest.raises(InputError, match="horizon"):
        F.check_horizon(bad)


def test_integer_node_and_chain_sums_stay_exact_int64():
    a = np.array([2**53, 1, 1, 3, 0, 7], dtype=np.int64)  # beyond float precision
    c = F.node_sums(a)
    assert c.dtype == np.int64 and c[1] == 2**53 + 1 and c[3] == 2**53 + 5
    s = F.chain_sum(c)
    assert s.dtype == np.int64
    np.testing.assert_array_equal(s, np.cumsum(a))
    assert F.node_sums(a.astype(float)).dtype == np.float64
