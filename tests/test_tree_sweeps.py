"""Tree contraction (dpviz.tree.sweeps) and the deep engine built on it, against slow independent references:
plain Python recursions node by node, dense solves with the Generation Matrix, and the levels engine."""

from __future__ import annotations

import numpy as np
import pytest

from dpviz.tree.generation import consistency_matrix, generation_matrix
from dpviz.tree.gmc import gmc, output_variance, pivots, plan
from dpviz.tree.model import tree_from_parents
from dpviz.tree.propagation import downward, upward, workspace
from dpviz.tree.sweeps import contraction, down_affine, up_affine, up_max, up_pivots

SHAPES = ("path", "star", "caterpillar", "broom", "recursive", "fanout", "band")


def parents(rng: np.random.Generator, n: int, shape: str) -> np.ndarray:
    """A parent array with ``parent[i] < i`` (root 0) of the given shape."""
    i = np.arange(n)
    if shape == "path":
        p = i - 1
    elif shape == "star":
        p = np.zeros(n, np.int64)
    elif shape == "caterpillar":  # a spine with a leaf on every spine node
        p = np.maximum(0, i - 1 - (i % 2))
    elif shape == "broom":  # a path, then a star at its end
        p = np.where(i < n // 2, i - 1, max(n // 2 - 1, 0))
    elif shape == "recursive":  # uniform random recursive tree
        p = np.floor(rng.random(n) * i).astype(np.int64)
    elif shape == "fanout":  # fan-outs 1..5 level by level
        p = np.repeat(np.arange(n), rng.integers(1, 6, n))[: n - 1]
        p = np.r_[0, p]
    else:  # a band: each node hangs from one of the previous few (deep, bushy)
        p = np.maximum(0, i - rng.integers(1, 5, n))
    p = np.asarray(p, np.int64)
    p[0] = -1
    return p


def cases(seed: int, count: int = 140, max_n: int = 90):
    rng = np.random.default_rng(seed)
    for j in range(count):
        n = int(rng.integers(1, max_n + 1))
        yield rng, parents(rng, n, SHAPES[j % len(SHAPES)])


def ref_up(p, a, k):
    s = np.array(a, float)
    for i in range(len(p) - 1, 0, -1):
        s[p[i]] += k[i] * s[i]
    return s


def ref_down(p, b, k):
    z = np.array(b, float)
    for i in range(1, len(p)):
        z[i] += k[i] * z[p[i]]
    return z


def ref_pivots(p, a, e):
    t = np.array(a, float)
    for i in range(len(p) - 1, 0, -1):
        t[p[i]] -= e[i] / t[i]
    return t


def test_schedule_removes_every_node_once_in_few_rounds():
    for _, p in cases(1):
        c = contraction(p)
        removed = np.concatenate([c.rake, c.splice])
        assert np.array_equal(np.sort(removed), np.arange(1, p.size))
        assert c.rake_ptr[-1] == c.rake.size and c.splice_ptr[-1] == c.splice.size
    for n in (10_000, 100_000):  # a path: O(log n) rounds, not n
        assert contraction(np.arange(-1, n - 1)).rounds <= 4 * np.log2(n)


def test_affine_sweeps_match_the_node_by_node_recursions():
    for rng, p in cases(2):
        c = contraction(p)
        a = rng.normal(size=p.size)
        k = rng.uniform(-1.5, 1.5, p.size)
        np.testing.assert_allclose(up_affine(c, a, k), ref_up(p, a, k), rtol=1e-11, atol=1e-11)
        np.testing.assert_allclose(down_affine(c, a, k), ref_down(p, a, k), rtol=1e-11, atol=1e-11)
        np.testing.assert_allclose(up_affine(c, a), ref_up(p, a, np.ones(p.size)), rtol=1e-12, atol=1e-11)
        np.testing.assert_allclose(down_affine(c, a), ref_down(p, a, np.ones(p.size)), rtol=1e-12, atol=1e-11)
        out = a.copy()
        assert up_affine(c, out, k, out=out) is out


def test_max_sweep_and_a_renamed_schedule_match_the_node_by_node_recursion():
    """up_max (subtree maxima, exact on integers) against the recursion; a schedule renamed by a permutation
    that keeps the root (Contraction.relabel) serves the renamed tree: the same sums and maxima."""
    for rng, p in cases(9):
        c = contraction(p)
        a = rng.integers(-1000, 1000, p.size).astype(np.int32)
        ref = a.copy()
        for i in range(p.size - 1, 0, -1):
            ref[p[i]] = max(ref[p[i]], ref[i])
        got = up_max(c, a)
        assert got.dtype == np.int32 and np.array_equal(got, ref)
        np.testing.assert_array_equal(up_max(c, a.astype(float)), ref)
        new = np.r_[0, 1 + rng.permutation(p.size - 1)].astype(np.int32)  # node i is called new[i]
        renamed = c.relabel(new)
        a2 = np.empty_like(a)
        a2[new] = a
        assert np.array_equal(up_max(renamed, a2)[new], ref)
        x = rng.normal(size=p.size)
        x2 = np.empty_like(x)
        x2[new] = x
        np.testing.assert_allclose(up_affine(renamed, x2)[new], ref_up(p, x, np.ones(p.size)), rtol=1e-12,
                                   atol=1e-11)
        np.testing.assert_allclose(down_affine(renamed, x2)[new], ref_down(p, x, np.ones(p.size)), rtol=1e-12,
                                   atol=1e-11)


def test_a_deep_tree_carries_its_schedule_into_the_deep_engine(monkeypatch):
    """tree_from_parents finds a deep tree's depths and heights by contracting its internal nodes in BFS order
    and keeps that schedule (renamed to DOH numbers) for the deep engine: on shuffled rows, the depths and
    heights are the slow recursion's, and BuildTree, GMC and the variance agree with a freshly built
    schedule and the dense references."""
    from dpviz.tree import model

    monkeypatch.setattr(model, "LEVEL_LOOP_MAX", 2)  # small trees take the deep path too
    rng = np.random.default_rng(10)
    checked = 0
    for j in range(40):
        n = int(rng.integers(3, 120))
        p = parents(rng, n, SHAPES[j % len(SHAPES)])
        perm = rng.permutation(n) if j % 2 else np.arange(n)
        inv = np.argsort(perm)
        q = np.where(p[perm] >= 0, inv[np.maximum(p[perm], 0)], -1)
        tree = tree_from_parents(q)
        if tree.h <= 3:  # two levels or fewer: the level loop ends before the deep path
            continue
        assert tree.schedule is not None and tree.schedule.n == tree.n1
        removed = np.sort(np.concatenate([tree.schedule.rake, tree.schedule.splice]))
        assert np.array_equal(removed, np.arange(1, tree.n1))
        fresh = contraction(tree.parent[: tree.n1])
        a = rng.normal(size=tree.n1)
        par = tree.parent[: tree.n1]
        np.testing.assert_allclose(up_affine(tree.schedule, a), ref_up(par, a, np.ones(tree.n1)), rtol=1e-12,
                                   atol=1e-11)
        np.testing.assert_allclose(up_affine(tree.schedule, a), up_affine(fresh, a), rtol=1e-12, atol=1e-11)
        assert workspace(tree).contraction is tree.schedule
        v = np.zeros(tree.n)
        v[tree.n1:] = rng.poisson(3.0, tree.m)
        np.testing.assert_allclose(upward(tree, v, engine="sparse"), upward(tree, v, engine="levels"), atol=1e-9)
        noisy = v + rng.normal(size=tree.n)
        np.testing.assert_allclose(gmc(plan(tree, engine="sparse"), noisy, engine="sparse"),
                                   gmc(plan(tree, engine="levels"), noisy, engine="levels"), rtol=1e-9, atol=1e-9)
        checked += 1
    assert checked >= 25


def test_pivot_sweep_matches_the_recursion_with_weighted_variances():
    for rng, p in cases(3):
        c = contraction(p)
        d = np.exp(rng.uniform(-6, 6, p.size))  # per-node variances over 5 orders of magnitude
        a = d + np.bincount(p[1:], weights=d[1:], minlength=p.size)
        a += np.exp(rng.uniform(-6, 6, p.size)) * (rng.random(p.size) < 0.5)  # leaf children's d
        np.testing.assert_allclose(up_pivots(c, a, d**2), ref_pivots(p, a, d**2), rtol=1e-10)


def test_long_chains_do_not_overflow_or_underflow():
    n = 3000
    p = np.arange(-1, n - 1)
    c = contraction(p)
    rng = np.random.default_rng(4)
    b = rng.normal(size=n)
    for k in (np.full(n, 1e-3), np.full(n, 0.999), rng.uniform(0, 1, n)):
        np.testing.assert_allclose(down_affine(c, b, k), ref_down(p, b, k), rtol=1e-11, atol=1e-12)
        np.testing.assert_allclose(up_affine(c, b, k), ref_up(p, b, k), rtol=1e-11, atol=1e-12)
    d = np.exp(rng.uniform(-3, 3, n))
    a = d + np.r_[d[1:], 0.0] + 1e-3  # a path of internal nodes with one leaf at the end
    np.testing.assert_allclose(up_pivots(c, a, d**2), ref_pivots(p, a, d**2), rtol=1e-10)
    ones = np.ones(n)
    t = up_pivots(c, np.r_[2 * ones[:-1], 2.0], ones)  # the unit path: t_i -> 1 + 1/(depth below + 1)
    np.testing.assert_allclose(t, ref_pivots(p, np.r_[2 * ones[:-1], 2.0], ones), rtol=1e-12)


def shuffled_tree(rng, p):
    perm = rng.permutation(p.size)
    inv = np.argsort(perm)
    return tree_from_parents(np.where(p[perm] >= 0, inv[np.maximum(p[perm], 0)], -1))


def test_deep_engine_propagation_matches_dense_generation_matrix_solves():
    for rng, p in cases(5, count=50, max_n=60):
        tree = shuffled_tree(rng, p)
        v = rng.normal(size=tree.n)
        wn, we = rng.uniform(0.5, 2.0, tree.n), rng.uniform(0.2, 2.0, tree.n)
        g = generation_matrix(tree, wn, we).toarray()
        np.testing.assert_allclose(upward(tree, v, wn, we, engine="sparse"), np.linalg.solve(g.T, v),
                                   rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(downward(tree, v, wn, we, engine="sparse"), np.linalg.solve(g, v),
                                   rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(upward(tree, v, engine="sparse"), upward(tree, v, engine="levels"),
                                   rtol=1e-12, atol=1e-10)
        np.testing.assert_allclose(downward(tree, v, 2.0, 0.5, engine="sparse"),
                                   downward(tree, v, 2.0, 0.5, engine="levels"), rtol=1e-12, atol=1e-10)
        out = v.copy()
        assert upward(tree, out, engine="sparse", out=out) is out
        np.testing.assert_allclose(out, upward(tree, v, engine="levels"), rtol=1e-12, atol=1e-10)


def test_deep_gmc_matches_the_dense_weighted_projection_and_the_levels_engine():
    for rng, p in cases(6, count=50, max_n=60):
        tree = shuffled_tree(rng, p)
        d = np.exp(rng.uniform(-2, 2, tree.n)) if rng.random() < 0.6 else None
        noisy = rng.normal(size=tree.n) * 5
        deep, flat = plan(tree, d, engine="sparse"), plan(tree, d, engine="levels")
        np.testing.assert_allclose(deep.t, flat.t, rtol=1e-11)
        np.testing.assert_allclose(pivots(tree, d, engine="sparse"), flat.t, rtol=1e-11)
        if tree.n1 == 0:
            continue
        m = consistency_matrix(tree).toarray()
        dm = m if d is None else m * d[:, None]
        want = noisy - dm @ np.linalg.solve(m.T @ dm, m.T @ noisy)
        for form in ("sqrt", "nosqrt"):
            np.testing.assert_allclose(gmc(deep, noisy, form, engine="sparse"), want, rtol=1e-9, atol=1e-9)
        assert np.allclose(m.T @ gmc(deep, noisy, engine="sparse"), 0.0, atol=1e-8)


@pytest.mark.parametrize("shape", ["path", "caterpillar", "band"])
def test_deep_output_variance_matches_the_dense_covariance(shape):
    rng = np.random.default_rng(7)
    tree = shuffled_tree(rng, parents(rng, 400, shape))
    for d in (None, np.exp(rng.uniform(-1, 1, tree.n))):
        pl = plan(tree, d)
        assert pl.sub.is_deep
        dd = np.ones(tree.n) if d is None else d
        m = consistency_matrix(tree).toarray()
        dm = m * dd[:, None]
        cov = np.diag(dd) - dm @ np.linalg.solve(m.T @ dm, dm.T)
        np.testing.assert_allclose(output_variance(pl), np.diag(cov), rtol=1e-9, atol=1e-12)


def test_one_schedule_serves_buildtree_pivots_gmc_and_the_variance():
    rng = np.random.default_rng(8)
    tree = tree_from_parents(parents(rng, 5000, "band"))
    assert tree.is_deep
    ws = workspace(tree)
    x = rng.poisson(5.0, tree.m).astype(float)
    v = np.zeros(tree.n)
    v[tree.n1:] = x
    upward(tree, v)
    schedule = ws.contraction
    pl = plan(tree)
    gmc(pl, v + rng.normal(size=tree.n))
    output_variance(pl)
    assert ws.contraction is schedule


@pytest.mark.parametrize("loop_max", [2, 2048])
def test_parents_first_rows_skip_the_bfs_renumbering_and_build_the_same_tree(monkeypatch, loop_max):
    """Rows whose parents come first (root in row 0, ``p[i] < i``) but not in BFS order are contracted in their
    input positions (no breadth-first renumbering): the same Tree — DOH numbering, parents, depths, heights,
    blocks — as the BFS path (the reference: the same array forced through ``_bfs_order``), the schedule
    kept exactly when the BFS path would have taken the deep pass (more than LEVEL_LOOP_MAX levels), and it
    replays to the dense references."""
    from dpviz.tree import model

    monkeypatch.setattr(model, "LEVEL_LOOP_MAX", loop_max)
    rng = np.random.default_rng(12)
    for j in range(60):
        n = int(rng.integers(2, 150))
        p = parents(rng, n, SHAPES[j % len(SHAPES)])
        assert model._parents_first(p, chunk=7)
        got = tree_from_parents(p)
        with monkeypatch.context() as m:
            m.setattr(model, "_parents_first", lambda p, chunk=0: False)
            ref = tree_from_parents(p)
        for f in ("parent", "height", "depth", "order", "block_start"):
            assert np.array_equal(getattr(got, f), getattr(ref, f)), (j, f)
        assert (got.schedule is not None) == (got.h > loop_max) == (ref.schedule is not None), j
        if got.schedule is not None:
            a = rng.normal(size=got.n1)
            par = got.parent[: got.n1]
            np.testing.assert_allclose(up_affine(got.schedule, a), ref_up(par, a, np.ones(got.n1)), rtol=1e-12,
                                       atol=1e-11)
            np.testing.assert_allclose(down_affine(got.schedule, a), ref_down(par, a, np.ones(got.n1)),
                                       rtol=1e-12, atol=1e-11)
    bad = np.array([-1, 0, 3, 1])  # a child before its parent: the BFS path (and its checks)
    assert not model._parents_first(bad)
    assert tree_from_parents(bad).h == 4
    with pytest.raises(Exception, match="cycle"):
        tree_from_parents(np.array([-1, 0, 3, 2]))
