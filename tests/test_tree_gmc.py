"""GMC and the baselines against independent dense references on many random trees."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpviz.tree import baselines
from dpviz.tree.generation import consistency_matrix, generation_matrix, structure_matrix
from dpviz.tree.gmc import gmc, pivots, plan, theta
from dpviz.tree.metrics import consistency_bias
from dpviz.tree.model import tree_from_parents
from dpviz.tree.propagation import downward, upward
from dpviz.tree.synthetic import complete_tree


def random_parent_array(rng: np.random.Generator, n: int, shape: str) -> np.ndarray:
    """Parent array in RANDOM node order for a tree of the given shape."""
    if shape == "path":
        p = np.arange(-1, n - 1)
    elif shape == "star":
        p = np.zeros(n, np.int64)
        p[0] = -1
    elif shape == "caterpillar":
        p = np.array([-1] + [max(0, i - 1 - (i % 2)) for i in range(1, n)])
    elif shape == "unbalanced":  # long path with bushy bits: attach mostly to the newest nodes
        p = np.array([-1] + [int(max(0, i - 1 - rng.geometric(0.7) + 1)) for i in range(1, n)])
    else:  # uniform random recursive tree
        p = np.array([-1] + [int(rng.integers(0, i)) for i in range(1, n)])
    perm = rng.permutation(n)  # relabel: node perm[j] ... any order must work
    inv = np.argsort(perm)
    return np.where(p[perm] >= 0, inv[np.maximum(p[perm], 0)], -1)


SHAPES = ["random", "path", "star", "caterpillar", "unbalanced"]


def random_trees(seed: int, count: int, max_n: int):
    rng = np.random.default_rng(seed)
    for i in range(count):
        shape = SHAPES[i % len(SHAPES)]
        n = int(rng.integers(1, max_n + 1))
        yield rng, shape, tree_from_parents(random_parent_array(rng, n, shape))


def dense_closed_form(tree, noisy, d=None):
    """Eq. (8) (weighted: D M (Mᵀ D M)⁻¹ Mᵀ) by dense linear algebra."""
    if tree.n1 == 0:
        return noisy.copy()
    m = consistency_matrix(tree).toarray()
    dm = m if d is None else m * d[:, None]
    return noisy - dm @ np.linalg.solve(m.T @ dm, m.T @ noisy)


def dense_wls(tree, noisy, d):
    """Independent reference: weighted least squares over the leaf counts, v̄ = A x̂ with
    x̂ = argmin (A x - ṽ)ᵀ D⁻¹ (A x - ṽ) and A the n × m leaf-to-node incidence (ancestor) matrix."""
    g_inv = np.linalg.inv(structure_matrix(tree).toarray())  # Prop. 7: ancestor indicator
    a = g_inv.T[:, tree.n1 :]  # node i sums leaf j iff i is j or an ancestor of j
    w = 1.0 / d
    x_hat = np.linalg.solve(a.T @ (a * w[:, None]), a.T @ (w * noisy))
    return a @ x_hat


def test_gmc_equals_dense_closed_form_on_300_random_trees():
    checked = 0
    for rng, shape, tree in random_trees(seed=1, count=300, max_n=300):
        noisy = rng.normal(0, 10, tree.n) + rng.poisson(20, tree.n)
        ref = dense_closed_form(tree, noisy)
        for form in ("sqrt", "nosqrt"):
            for engine in ("levels", "sparse"):
                out = gmc(plan(tree, engine=engine), noisy, form=form, engine=engine)
                np.testing.assert_allclose(out, ref, rtol=0, atol=1e-9,
                                           err_msg=f"{shape} n={tree.n} {form} {engine}")
        checked += 1
    assert checked == 300


def test_weighted_gmc_equals_dense_weighted_least_squares():
    for rng, shape, tree in random_trees(seed=2, count=200, max_n=120):
        if tree.n1 == 0:
            continue
        d = rng.uniform(0.2, 5.0, tree.n)
        noisy = rng.normal(0, 5, tree.n)
        ref = dense_wls(tree, noisy, d)
        np.testing.assert_allclose(dense_closed_form(tree, noisy, d), ref, atol=1e-8)
        for form in ("sqrt", "nosqrt"):
            np.testing.assert_allclose(gmc(plan(tree, d), noisy, form), ref, atol=1e-9,
                                       err_msg=f"{shape} n={tree.n}")
        np.testing.assert_allclose(baselines.privtrie(tree, noisy, d), ref, atol=1e-9)
        np.testing.assert_allclose(baselines.lee_closed_form(tree, noisy, d, dense=False), ref, atol=1e-8)


def test_theta_recursion_matches_alg1_and_thm8():
    """θ of Alg. 1 run literally (loop i = n₁..2) and G_{T⁽¹⁾←T}ᵀG = MᵀM (Thm. 8, Eq. 34)."""
    for rng, shape, tree in random_trees(seed=3, count=100, max_n=80):
        n1 = tree.n1
        if n1 == 0:
            continue
        th = tree.children_count[:n1].astype(float)  # Alg. 1 line 1
        for i in range(n1 - 1, 0, -1):  # line 2, literally
            th[tree.parent[i]] -= 1.0 / (1.0 + th[i])
        np.testing.assert_allclose(theta(tree), th, atol=1e-12)
        np.testing.assert_allclose(pivots(tree, engine="sparse"), 1 + th, atol=1e-10)
        w = np.sqrt(1 + th)  # Eq. (37)
        g = generation_matrix(tree.subtree(1), w, 1.0 / w).toarray()
        m = consistency_matrix(tree).toarray()
        np.testing.assert_allclose(g.T @ g, m.T @ m, atol=1e-10)


def test_propagation_engines_equal_dense_solves():
    for rng, shape, tree in random_trees(seed=4, count=100, max_n=100):
        wn = rng.uniform(0.5, 2, tree.n)
        we = rng.uniform(0.5, 2, tree.n)
        g = generation_matrix(tree, wn, we).toarray()
        v = rng.normal(size=tree.n)
        for engine in ("levels", "sparse"):
            np.testing.assert_allclose(upward(tree, v, wn, we, engine), np.linalg.solve(g.T, v), atol=1e-9)
            np.testing.assert_allclose(downward(tree, v, wn, we, engine), np.linalg.solve(g, v), atol=1e-9)


def test_generation_matrix_has_2n_minus_1_nonzeros_and_is_lower_triangular():
    for rng, shape, tree in random_trees(seed=5, count=50, max_n=200):
        g = structure_matrix(tree)
        assert g.nnz == 2 * tree.n - 1  # Prop. 1
        assert np.all(np.triu(g.toarray(), 1) == 0)
        assert np.all(np.diff(tree.height) <= 0)  # Def. 6


def test_gmc_and_privtrie_are_consistent_and_unbiased_boosting_consistent_on_complete_trees():
    rng = np.random.default_rng(6)
    for _, shape, tree in random_trees(seed=6, count=60, max_n=150):
        noisy = rng.normal(0, 3, tree.n)
        for fn in (lambda t, v: gmc(plan(t), v), baselines.privtrie, baselines.lee_closed_form):
            assert consistency_bias(tree, fn(tree, noisy)) < 1e-9
    for k, h in [(2, 6), (3, 4), (4, 3), (5, 3), (1, 5)]:
        data = complete_tree(k, h, 10.0, rng)
        noisy = data.v + rng.laplace(0, 3, data.tree.n)
        out = baselines.boosting(data.tree, noisy)
        assert consistency_bias(data.tree, out) < 1e-9
        np.testing.assert_allclose(out, gmc(plan(data.tree), noisy), atol=1e-9)  # both optimal there


def test_boosting_is_inconsistent_on_irregular_trees():
    rng = np.random.default_rng(7)
    tree = tree_from_parents(np.array([-1, 0, 0, 1, 1, 1, 2]))
    out = baselines.boosting(tree, rng.normal(size=tree.n))
    assert consistency_bias(tree, out) > 1e-3


def test_gmc_is_unbiased_in_expectation():
    """E[v̄] = v: mean over 4000 draws is within 4 standard errors of the truth at every node."""
    rng = np.random.default_rng(8)
    data = complete_tree(3, 4, 50.0, rng)
    tree, v = data.tree, data.v
    draws = 4000
    noise = rng.laplace(0.0, 2.0, (draws, tree.n))
    p = plan(tree)
    outs = np.array([gmc(p, v + e) for e in noise])
    se = outs.std(axis=0) / np.sqrt(draws)
    assert np.all(np.abs(outs.mean(axis=0) - v) < 4 * se + 1e-12)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=10**6), min_size=1, max_size=40), st.data())
def test_gmc_fixes_consistent_vectors(parent_seeds, data):
    """Hypothesis: a consistent vector is a fixed point of GMC (projection onto consistency)."""
    n = len(parent_seeds)
    p = np.array([-1] + [parent_seeds[i] % i for i in range(1, n)])
    tree = tree_from_parents(p)
    x = np.array(data.draw(st.lists(st.floats(-1e3, 1e3), min_size=tree.m, max_size=tree.m)))
    placed = np.zeros(tree.n)
    placed[tree.n1 :] = x
    v = upward(tree, placed)
    np.testing.assert_allclose(gmc(plan(tree), v), v, atol=1e-6 * (1 + np.abs(v).max()))


@pytest.mark.parametrize("maker", ["complete", "fanout", "caterpillar", "path"])
def test_fast_paths_for_ordered_inputs_agree_with_the_general_path(maker):
    """Inputs already in BFS / DOH order take shortcuts in tree_from_parents; shuffling the same
    tree forces the general path (csgraph BFS, argsort). Heights, depths and GMC must agree."""
    from dpviz.tree.synthetic import fanout_parents, path_like_tree

    rng = np.random.default_rng(9)
    if maker == "complete":
        p = (np.arange(121) - 1) // 3
        p[0] = -1
    elif maker == "fanout":
        p = fanout_parents(500, rng)
    elif maker == "caterpillar":
        p = path_like_tree(301, 1.0, rng).tree.parent  # DOH order, not BFS
    else:
        p = np.arange(-1, 200)
    t1 = tree_from_parents(p)
    perm = rng.permutation(p.size)
    inv = np.argsort(perm)
    q = np.where(p[perm] >= 0, inv[np.maximum(p[perm], 0)], -1)
    t2 = tree_from_parents(q)
    # map: input node i of t1 is input node inv[i] of t2
    h1 = np.empty(p.size, int)
    h1[t1.order] = t1.height
    h2 = np.empty(p.size, int)
    h2[t2.order] = t2.height
    np.testing.assert_array_equal(h1, h2[inv])
    d1 = np.empty(p.size, int)
    d1[t1.order] = t1.depth
    d2 = np.empty(p.size, int)
    d2[t2.order] = t2.depth
    np.testing.assert_array_equal(d1, d2[inv])
    noisy = rng.normal(size=p.size)
    o1 = np.empty(p.size)
    o1[t1.order] = gmc(plan(t1), noisy[t1.order])
    o2 = np.empty(p.size)
    o2[t2.order] = gmc(plan(t2), noisy[perm][t2.order])
    np.testing.assert_allclose(o1, o2[inv], atol=1e-9)


def test_output_variance_equals_dense_covariance_and_theorem5():
    """diag(D - D M (MᵀDM)⁻¹ Mᵀ D) by dense algebra; uniform noise sums to m (Theorem 5)."""
    from dpviz.tree.gmc import output_variance

    for rng, shape, tree in random_trees(seed=10, count=120, max_n=90):
        m = consistency_matrix(tree).toarray()
        for d in (None, rng.uniform(0.3, 4.0, tree.n)):
            dd = np.ones(tree.n) if d is None else d
            if tree.n1:
                dm = m * dd[:, None]
                cov = np.diag(dd) - dm @ np.linalg.solve(m.T @ dm, dm.T)
            else:
                cov = np.diag(dd)
            var = output_variance(plan(tree, d))
            np.testing.assert_allclose(var, np.diag(cov), atol=1e-10, err_msg=f"{shape} n={tree.n}")
            if d is None:
                assert var.sum() == pytest.approx(tree.m)


def test_output_variance_monte_carlo_geometric_split():
    """Per-level empirical variance of GMC output (3000 draws) within 8% of output_variance."""
    from dpviz.core.noise import Noise
    from dpviz.tree.gmc import output_variance
    from dpviz.tree.release import node_variances

    rng = np.random.default_rng(11)
    data = complete_tree(3, 4, 10.0, rng)
    tree = data.tree
    d = node_variances(tree, Noise.laplace(1.0), "geometric")
    assert len(np.unique(d)) == tree.h  # one variance per level, so the weighted form is exercised
    p = plan(tree, d)
    outs = np.array([gmc(p, data.v + rng.laplace(0, np.sqrt(d / 2))) for _ in range(3000)])
    emp, ana = outs.var(axis=0), output_variance(p)
    for lev in range(1, tree.h + 1):
        sel = tree.depth == lev
        assert emp[sel].mean() == pytest.approx(ana[sel].mean(), rel=0.08)


# ---- issue 11: vectorised stepper and Boosting against the loop versions they replaced ---------------
# These slow references are the pre-vectorisation code (one Python step per height block, np.add.at),
# kept here on purpose: the library's versions must give the same numbers.
def loop_upward_steps(tree, v):
    z = np.full(tree.n, np.nan)
    acc = np.zeros(tree.n)
    for k in range(1, tree.h + 1):
        blk = tree.block(k)
        z[blk] = v[blk] + acc[blk]
        if k < tree.h:
            np.add.at(acc, tree.parent[blk], z[blk])
        yield z


def loop_downward_steps(tree, v):
    z = np.full(tree.n, np.nan)
    z[0] = v[0]
    yield z
    for k in range(tree.h - 1, 0, -1):
        blk = tree.block(k)
        z[blk] = v[blk] + z[tree.parent[blk]]
        yield z


def loop_partial_propagation(tree, v, direction, step):
    steps = loop_upward_steps(tree, v) if direction == "up" else loop_downward_steps(tree, v)
    for i, z in enumerate(steps, start=1):
        if i >= step:
            return z.copy()


def loop_boosting(tree, noisy):
    """Hay et al. 2010 Thm. 3, one height block at a time (the previous implementation)."""
    n, h = tree.n, tree.h
    if tree.n1 == 0:
        return noisy.copy()
    k = float(tree.children_count[0])
    ell = np.arange(h + 1, dtype=float)
    ell[0] = 1.0
    if k == 1.0:
        a_coef, b_coef = 1.0 / ell, (ell - 1.0) / ell
    else:
        a_coef = (1.0 - 1.0 / k) / (1.0 - k ** (-ell))
        b_coef = (1.0 - k ** (1.0 - ell)) / (k * (1.0 - k ** (-ell)))
    z = noisy.copy()
    child_sum = np.zeros(n)
    for lev in range(1, h + 1):
        blk = tree.block(lev)
        if lev > 1:
            z[blk] = a_coef[lev] * noisy[blk] + b_coef[lev] * child_sum[blk]
        if lev < h:
            np.add.at(child_sum, tree.parent[blk], z[blk])
    out = np.empty(n)
    out[0] = z[0]
    for lev in range(h - 1, 0, -1):
        blk = tree.block(lev)
        par = tree.parent[blk]
        out[blk] = z[blk] + (out[par] - child_sum[par]) / k
    return out


def layouts_and_depths(seed: int):
    """Random trees of every shape, complete k-ary trees in BFS order (the perfect layout) and
    shuffled (the same trees on the CSR layout), and deep caterpillars (the deep engine: tree contraction)."""
    yield from ((shape, tree) for _, shape, tree in random_trees(seed, 60, 120))
    rng = np.random.default_rng(seed)
    for k, h in [(1, 6), (2, 7), (3, 5), (4, 4)]:
        tree = complete_tree(k, h, 1.0, rng).tree
        yield f"complete{k}", tree
        p = tree.parent
        perm = rng.permutation(p.size)
        inv = np.argsort(perm)
        yield f"complete{k}-shuffled", tree_from_parents(np.where(p[perm] >= 0, inv[np.maximum(p[perm], 0)], -1))
    for n in (301, 2001):
        from dpviz.tree.synthetic import path_like_tree

        yield f"caterpillar{n}", path_like_tree(n, 1.0, rng).tree


def test_layouts_cover_the_perfect_csr_and_deep_paths():
    from dpviz.tree.propagation import workspace

    kinds = {("perfect" if workspace(t).fanouts is not None else "csr", t.is_deep)
             for _, t in layouts_and_depths(20)}
    assert {("perfect", False), ("csr", False), ("csr", True)} <= kinds


def test_partial_propagation_equals_the_block_loop_at_every_step():
    from dpviz.tree.propagation import partial_propagation

    rng = np.random.default_rng(21)
    for shape, tree in layouts_and_depths(21):
        v = rng.normal(0, 10, tree.n)
        steps = range(1, tree.h + 1) if tree.h <= 12 else sorted({1, 2, tree.h // 3, tree.h - 1, tree.h})
        for direction in ("up", "down"):
            for step in steps:
                got = partial_propagation(tree, v, direction, step)
                want = loop_partial_propagation(tree, v, direction, step)
                np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=f"{shape} {direction} {step}")
                reached = ~np.isnan(want)
                np.testing.assert_allclose(got[reached], want[reached], rtol=1e-12, atol=1e-9,
                                           err_msg=f"{shape} n={tree.n} {direction} step {step}")
        np.testing.assert_array_equal(partial_propagation(tree, v, "up"), partial_propagation(tree, v, "up", 10**9))


def test_partial_propagation_refuses_fewer_than_one_step():
    from dpviz.errors import InputError
    from dpviz.tree.propagation import partial_propagation

    tree = complete_tree(2, 4, 1.0, np.random.default_rng(0)).tree
    for bad in (0, -1, 1.5):
        with pytest.raises(InputError, match="step"):
            partial_propagation(tree, np.ones(tree.n), "up", bad)


def test_boosting_equals_the_level_loop():
    rng = np.random.default_rng(22)
    for shape, tree in layouts_and_depths(22):
        noisy = rng.normal(0, 10, tree.n)
        want = loop_boosting(tree, noisy)
        for _ in range(2):  # the second call on a deep tree replays the cached contraction schedule
            np.testing.assert_allclose(baselines.boosting(tree, noisy), want, rtol=1e-12, atol=1e-9,
                                       err_msg=f"{shape} n={tree.n}")


def test_perfect_and_csr_layouts_give_the_same_plan_and_release():
    """A complete tree in BFS order (perfect layout, one pivot per level) and the same tree shuffled
    (CSR layout, one pivot per node): equal pivots, releases and variances, uniform and per level."""
    from dpviz.tree.gmc import output_variance
    from dpviz.tree.propagation import workspace

    rng = np.random.default_rng(23)
    for k, h in [(2, 9), (3, 6), (5, 4)]:
        t1 = complete_tree(k, h, 1.0, rng).tree
        p = t1.parent
        perm = rng.permutation(p.size)
        inv = np.argsort(perm)
        t2 = tree_from_parents(np.where(p[perm] >= 0, inv[np.maximum(p[perm], 0)], -1))
        assert workspace(t1).fanouts is not None and workspace(t2).fanouts is None
        to2 = np.empty(p.size, int)  # DOH index in t1 -> DOH index in t2 of the same input node
        to2[np.argsort(t1.order)] = np.argsort(t2.order)[inv]
        noisy = rng.normal(0, 5, p.size)
        for d in (None, np.repeat(rng.uniform(0.5, 3, h), [k ** (h - 1 - j) for j in range(h)])[::-1].copy()):
            p1 = plan(t1, d)
            p2 = plan(t2, None if d is None else d[np.argsort(to2)])
            assert p1.levels is not None and p2.levels is None
            np.testing.assert_allclose(p1.t, p2.t[to2[: t1.n1]], rtol=1e-13)
            for form in ("sqrt", "nosqrt"):
                np.testing.assert_allclose(gmc(p1, noisy, form), gmc(p2, noisy[np.argsort(to2)], form)[to2],
                                           rtol=1e-12, atol=1e-9)
            np.testing.assert_allclose(output_variance(p1), output_variance(p2)[to2], rtol=1e-12)


def test_compiled_kernel_and_numpy_fallback_agree(monkeypatch):
    from dpviz.tree import propagation

    rng = np.random.default_rng(24)
    cases = [(shape, t) for shape, t in layouts_and_depths(24)][::3]
    monkeypatch.setattr(propagation, "_SMALL_TREE", 0)  # the compiled kernel for every tree, however small
    before = []
    for _, tree in cases:
        v = rng.normal(size=tree.n)
        before.append((v, upward(tree, v), downward(tree, v), gmc(plan(tree), v), baselines.boosting(tree, v)))
    assert propagation._csr_matvec is not None and propagation._csr_matvec is not propagation._UNLOADED
    monkeypatch.setattr(propagation, "_csr_matvec", None)
    monkeypatch.setattr(propagation, "_WORKSPACES", type(propagation._WORKSPACES)())
    for (shape, tree), (v, *want) in zip(cases, before):
        got = (upward(tree, v), downward(tree, v), gmc(plan(tree), v), baselines.boosting(tree, v))
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-10, err_msg=shape)


@pytest.mark.parametrize("kind", ["perfect", "csr"])
def test_gmc_allocates_only_its_result(kind):
    """Stage 2 reuses the workspace: with ``out=`` it allocates less than a tenth of one n-vector,
    without it about one n-vector (the result)."""
    import tracemalloc

    from dpviz.tree.synthetic import fanout_parents

    rng = np.random.default_rng(25)
    tree = (complete_tree(2, 16, 1.0, rng).tree if kind == "perfect"
            else tree_from_parents(fanout_parents(60_000, rng)))
    p = plan(tree)
    noisy = rng.normal(size=tree.n)
    buf = np.empty(tree.n)
    want = gmc(p, noisy)  # first call builds the workspace and the plan's coefficients
    vec = 8 * tree.n
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        got = gmc(p, noisy, out=buf)
        with_out = tracemalloc.get_traced_memory()[1]
        tracemalloc.reset_peak()
        fresh = gmc(p, noisy)
        without = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert got is buf
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(fresh, want)
    assert with_out < vec / 10, (with_out, vec)
    assert vec <= without < 1.1 * vec, (without, vec)


def test_gmc_out_must_be_a_separate_float_vector():
    tree = complete_tree(2, 4, 1.0, np.random.default_rng(0)).tree
    p, v = plan(tree), np.arange(tree.n, dtype=float)
    for bad in (v, np.empty(tree.n, np.float32), np.empty(tree.n + 1), np.empty(2 * tree.n)[::2]):
        with pytest.raises(ValueError, match="out"):
            gmc(p, v, out=bad)


def test_concurrent_calls_on_one_plan_do_not_share_scratch():
    """Streamlit sessions share a cached plan: threads calling gmc at once must each get their own
    answer (a busy workspace hands out fresh buffers instead of its own)."""
    from concurrent.futures import ThreadPoolExecutor

    rng = np.random.default_rng(26)
    for tree in (complete_tree(2, 12, 1.0, rng).tree, random_trees(27, 1, 3000).__next__()[2]):
        p = plan(tree)
        vs = [rng.normal(size=tree.n) for _ in range(16)]
        want = [gmc(p, v) for v in vs]
        with ThreadPoolExecutor(4) as pool:
            got = list(pool.map(lambda v: gmc(p, v), vs * 4))
        for g, w in zip(got, want * 4):
            np.testing.assert_array_equal(g, w)


def test_deep_trees_keep_one_contraction_schedule_per_structure():
    from dpviz.tree.propagation import workspace
    from dpviz.tree.synthetic import path_like_tree

    tree = path_like_tree(3001, 1.0, np.random.default_rng(28)).tree
    assert tree.is_deep
    v = np.random.default_rng(29).normal(size=tree.n)
    first = upward(tree, v)
    schedule = workspace(tree).contraction
    np.testing.assert_array_equal(upward(tree, v), first)
    np.testing.assert_allclose(first, upward(tree, v, engine="levels"), rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(downward(tree, v), downward(tree, v, engine="levels"), rtol=1e-12, atol=1e-9)
    p = plan(tree)
    gmc(p, v)
    assert workspace(tree).contraction is schedule  # built once: pivots, GMC and both passes replay it


def test_upward_in_place_is_buildtree():
    """upward(..., out=v) overwrites v with G⁻ᵀv (each entry is read before it is written)."""
    from dpviz.tree.model import build_tree

    rng = np.random.default_rng(30)
    for _, tree in layouts_and_depths(30):
        x = rng.poisson(5.0, tree.m).astype(float)
        v = np.zeros(tree.n)
        v[tree.n1:] = x
        assert upward(tree, v, out=v) is v
        np.testing.assert_array_equal(v, build_tree(tree, x))
