"""dpviz.audit: Clopper–Pearson bounds, the ε lower bound on mechanisms of known ε, and every capability's target."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpviz.audit import (
    Event,
    audit,
    boolean_event,
    clopper_pearson,
    epsilon_lower_bound,
    format_result,
    run,
    threshold_event,
)
from dpviz.graph.hooks import graph_target
from dpviz.marginals.hooks import audit_target as marginals_target
from dpviz.stream.hooks import audit_target as stream_target
from dpviz.tree.hooks import audit_target as tree_target
from dpviz.core.samplers import discrete_laplace
from dpviz.errors import InputError


# --------------------------------------------------------------------------------------------- helpers


def _binom_sf(k: int, n: int, p: float) -> float:
    """P[X >= k] for X ~ Bin(n, p), summed term by term (brute force, exact binomial coefficients)."""
    return math.fsum(math.comb(n, j) * p**j * (1.0 - p) ** (n - j) for j in range(k, n + 1))


def _bisect(f, lo: float = 0.0, hi: float = 1.0) -> float:
    """Root of an increasing f on [lo, hi] by 200 bisection steps."""
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if f(mid) < 0 else (lo, mid)
    return 0.5 * (lo + hi)


def randomized_response(epsilon: float):
    """Warner's randomized response on one bit: report the bit with probability e^ε/(1+e^ε): exactly ε-DP."""
    keep = math.exp(epsilon) / (1.0 + math.exp(epsilon))

    def release(bit: int, rng: np.random.Generator) -> int:
        return bit if rng.random() < keep else 1 - bit

    return release


def laplace_count(epsilon: float):
    """A count with discrete Laplace noise of scale 1/ε (dpviz.core.samplers): ε-DP for a sensitivity-1 count."""
    def release(count: int, rng: np.random.Generator) -> int:
        return count + int(discrete_laplace(1.0 / epsilon, 1, rng)[0])

    return release


BIT = boolean_event("the reported bit is 1", lambda out: out == 1)
COUNT = threshold_event("released count", float)


# --------------------------------------------------------------------------------------------- CP bounds


@pytest.mark.parametrize("k,n,tail", [(0, 10, 0.025), (1, 10, 0.025), (5, 10, 0.01), (10, 10, 0.05),
                                      (3, 40, 0.0125), (37, 40, 0.00625), (20, 57, 0.1)])
def test_clopper_pearson_matches_brute_force_binomial_tails(k, n, tail):
    lower, upper = clopper_pearson(k, n, tail)
    # lower: the p with P[X >= k | p] = tail (0 when k = 0); upper: P[X <= k | p] = tail (1 when k = n)
    want_lo = 0.0 if k == 0 else _bisect(lambda p: _binom_sf(k, n, p) - tail)
    want_hi = 1.0 if k == n else _bisect(lambda p: tail - (1.0 - _binom_sf(k + 1, n, p)))
    assert float(lower) == pytest.approx(want_lo, abs=1e-9)
    assert float(upper) == pytest.approx(want_hi, abs=1e-9)
    assert lower <= k / n <= upper


def test_clopper_pearson_is_vectorised_and_covers_at_its_level():
    n, tail = 30, 0.05
    k = np.arange(n + 1)
    lo, hi = clopper_pearson(k, n, tail)
    assert np.all(np.diff(lo) > 0) and np.all(np.diff(hi) > 0)
    # exact coverage of the one-sided upper bound for a few p: P[p > upper(X)] <= tail
    for p in (0.05, 0.3, 0.5, 0.81):
        pmf = np.array([math.comb(n, j) * p**j * (1 - p) ** (n - j) for j in range(n + 1)])
        assert pmf[hi < p].sum() <= tail + 1e-12
        assert pmf[lo > p].sum() <= tail + 1e-12


def test_clopper_pearson_rejects_bad_arguments():
    with pytest.raises(InputError):
        clopper_pearson(3, 0, 0.05)
    with pytest.raises(InputError):
        clopper_pearson(11, 10, 0.05)
    with pytest.raises(InputError):
        clopper_pearson(1, 10, 1.5)


def test_epsilon_lower_bound_formula_with_delta():
    assert float(epsilon_lower_bound(0.5, 0.1)) == pytest.approx(math.log(5.0))
    assert float(epsilon_lower_bound(0.5, 0.1, delta=0.1)) == pytest.approx(math.log(4.0))
    assert float(epsilon_lower_bound(0.05, 0.1, delta=0.1)) == 0.0  # p̲ − δ <= 0: no evidence
    assert float(epsilon_lower_bound(0.05, 0.1)) == 0.0  # ratio < 1 clipped


# --------------------------------------------------------------------------------------------- the audit


def test_deterministic_outputs_give_the_closed_form_bound():
    """D0 always gives False, D1 always True: k0 = 0, k1 = T, so p̄0 = 1 − a^(1/T), p̲1 = a^(1/T), a = α/4."""
    T, alpha = 500, 0.05
    res = audit(lambda d, rng: d, 0, 1, trials=T, event=boolean_event("out", bool), rng=np.random.default_rng(0),
                alpha=alpha, epsilon=1.0)
    a = alpha / 4
    want = math.log(a ** (1 / T) / (1 - a ** (1 / T)))
    assert res.epsilon_lower == pytest.approx(want, rel=1e-9)
    assert res.counts == (0, T) and res.n == T and res.p_hat == (0.0, 1.0)
    assert not res.consistent and "VIOLATION" in res.verdict
    assert res.direction == "P[E | D1] > e^ε P[E | D0] + δ"


def test_randomized_response_bound_is_valid_and_tight_over_seeds():
    eps, T = 1.0, 3000
    lbs = [audit(randomized_response(eps), 0, 1, trials=T, event=BIT, rng=np.random.default_rng(seed),
                 epsilon=eps).epsilon_lower for seed in range(8)]
    assert max(lbs) <= eps  # a valid lower bound: never above the true ε
    assert min(lbs) >= 0.5 * eps  # and reasonably tight with 3000 trials


def test_laplace_count_threshold_bound_is_valid_and_tight_over_seeds():
    eps, T = 1.0, 3000
    results = [audit(laplace_count(eps), 0, 1, trials=T, event=COUNT, rng=np.random.default_rng(100 + seed),
                     epsilon=eps) for seed in range(3)]
    lbs = [r.epsilon_lower for r in results]
    assert max(lbs) <= eps and min(lbs) >= 0.5 * eps
    assert all(r.consistent for r in results)
    r = results[0]
    assert r.n == T - T // 2  # counted on the test half only
    assert r.events[0].threshold is not None and r.event.startswith("released count > ")


def test_delta_lowers_the_bound():
    rng_seed, T = 7, 2000
    pure = audit(randomized_response(2.0), 0, 1, trials=T, event=BIT, rng=np.random.default_rng(rng_seed))
    approx = audit(randomized_response(2.0), 0, 1, trials=T, event=BIT, rng=np.random.default_rng(rng_seed),
                   epsilon=2.0, delta=0.05)
    assert pure.counts == approx.counts  # same draws
    assert 0 < approx.epsilon_lower < pure.epsilon_lower
    (l0, u0), (l1, u1) = approx.bounds
    assert approx.epsilon_lower == pytest.approx(max(math.log((l1 - 0.05) / u0), math.log((1 - u0 - 0.05) / (1 - l1)),
                                                     0.0))
    assert pure.epsilon is None and pure.consistent and "no ε claimed" in pure.verdict


def test_a_non_private_release_is_flagged():
    """Noise of scale 0.05 on a count, claimed ε = 1: the audit must refute the claim."""
    def leaky(count, rng):
        return count + int(discrete_laplace(0.05, 1, rng)[0])

    res = audit(leaky, 0, 1, trials=400, event=[COUNT, boolean_event("count is 1", lambda x: x == 1)],
                rng=np.random.default_rng(3), epsilon=1.0)
    assert not res.consistent and res.epsilon_lower > 3.0
    assert "VIOLATION" in res.verdict and "VIOLATION" in format_result(res)


def test_bonferroni_tail_and_event_results():
    res = audit(randomized_response(1.0), 0, 1, trials=200, rng=np.random.default_rng(1),
                event=[BIT, boolean_event("the reported bit is 0", lambda o: o == 0), COUNT], alpha=0.06)
    assert len(res.events) == 3
    assert all(e.tail == pytest.approx(0.06 / 12) for e in res.events)
    assert res.epsilon_lower == max(e.epsilon_lower for e in res.events)
    # the event and its complement give the same bound (both directions and complements are tried)
    assert res.events[0].epsilon_lower == pytest.approx(res.events[1].epsilon_lower)
    assert res.events[2].n == 100 and res.events[0].n == 200


def test_progress_is_reported_up_to_the_total():
    calls = []
    audit(randomized_response(1.0), 0, 1, trials=300, event=BIT, rng=np.random.default_rng(0),
          progress=lambda done, total: calls.append((done, total)))
    assert calls[-1] == (600, 600)
    assert all(t == 600 for _, t in calls) and [d for d, _ in calls] == sorted({d for d, _ in calls})
    assert len(calls) >= 10


def test_bad_input_raises_input_error():
    rr = randomized_response(1.0)
    rng = np.random.default_rng(0)
    with pytest.raises(InputError, match="rng"):
        audit(rr, 0, 1, trials=10, event=BIT, rng=None)
    with pytest.raises(InputError, match="trials"):
        audit(rr, 0, 1, trials=0, event=BIT, rng=rng)
    with pytest.raises(InputError, match="trials"):
        audit(rr, 0, 1, trials=3, event=COUNT, rng=rng)
    with pytest.raises(InputError, match="alpha"):
        audit(rr, 0, 1, trials=10, event=BIT, rng=rng, alpha=1.0)
    with pytest.raises(InputError, match="event"):
        audit(rr, 0, 1, trials=10, event=[], rng=rng)
    with pytest.raises(InputError, match="epsilon"):
        audit(rr, 0, 1, trials=10, event=BIT, rng=rng, epsilon=-1)
    with pytest.raises(InputError, match="kind"):
        Event("x", bool, "sometimes")
    with pytest.raises(InputError, match="finite"):
        audit(lambda d, r: float("nan"), 0, 1, trials=10, event=COUNT, rng=rng)


# --------------------------------------------------------------------------------------------- targets


@pytest.mark.parametrize("factory", [tree_target, stream_target, marginals_target])
def test_capability_audits_are_consistent(factory):
    target = factory(1.0)
    res = run(target, trials=600, rng=np.random.default_rng(11))
    assert res.consistent and 0.0 <= res.epsilon_lower <= target.epsilon
    assert res.trials == 600 and len(res.events) == len(target.events)
    assert "simulation" in target.notice


def test_tree_target_neighbours_differ_by_one_person():
    t = tree_target(1.0)
    assert float(np.abs(t.D1.x - t.D0.x).sum()) == 1.0
    diff = t.D1.v - t.D0.v
    assert sorted(np.unique(diff).tolist()) == [0.0, 1.0] and diff.sum() == t.D0.tree.h  # the leaf and its ancestors


def test_stream_and_marginals_neighbours_differ_by_one_unit():
    s = stream_target(1.0, step=4)
    assert int(np.abs(s.D1 - s.D0).sum()) == 1 and s.D1[4] == s.D0[4] + 1
    m = marginals_target(1.0, 1e-6)
    assert m.D1.N == m.D0.N + 1 and m.delta == 1e-6
    assert float(np.abs(m.D1.marginal((0, 1)) - m.D0.marginal((0, 1))).sum()) == 1.0


def test_target_bad_input():
    with pytest.raises(InputError):
        tree_target(1.0, method="nope")
    with pytest.raises(InputError):
        stream_target(1.0, mechanism="nope")
    with pytest.raises(InputError):
        marginals_target(1.0, delta=0.0)
    with pytest.raises(InputError):
        graph_target("nope")
    with pytest.raises(InputError, match="already in G"):
        graph_target("drf-dp", edges=np.array([[0, 1]]), n_nodes=5, added=(1, 0))


def test_graph_audit_drf_dp_consistent_and_published_drf_violates():
    """Issue 9: on a small sparse graph the auditor finds the violation of the published DRF (it copies
    true edges, Step 4) and none for drf-dp. About 5 ms per release: 4 x 200 releases (the published DRF's
    violation is found with the edge in ~160 of 200 test-half outputs against ~3 without it)."""
    eps, T = 1.0, 200
    private = run(graph_target("drf-dp", eps), trials=T, rng=np.random.default_rng(5))
    assert private.consistent and private.epsilon_lower <= eps
    published = run(graph_target("drf", eps), trials=T, rng=np.random.default_rng(5))
    assert not published.consistent and published.epsilon_lower > eps
    assert "VIOLATION" in published.verdict and published.event == "edge {20, 35} appears in the output"
    k0, k1 = published.counts
    assert k1 > 10 * max(k0, 1)  # the added edge is copied to the output far more often than e^ε allows
