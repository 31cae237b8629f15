"""Scalable MWEM (Mullins et al., NeurIPS 2024, App. G, Alg. 7): accounting, selection, pool, noise modes."""

import math

import numpy as np
import pytest
from scipy import stats

from dpviz.errors import InputError
from dpviz.marginals import mwem
from dpviz.marginals.model import Dataset, Domain, all_kway
from dpviz.marginals.estimators import emp


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(11)
    dom = Domain(("a", "b", "c", "d"), (3, 4, 2, 5))
    # correlated records so that the scores differ between marginals
    a = rng.integers(0, 3, 3000)
    b = np.minimum(a + rng.integers(0, 2, 3000), 3)
    c = rng.integers(0, 2, 3000)
    d = (2 * c + rng.integers(0, 2, 3000)) % 5
    return Dataset(dom, np.stack([a, b, c, d], axis=1))


# ---- accounting (Thm. 7) -------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("rho", "rounds", "frac"), [(1.0, 30, 0.1), (0.014973, 7, 0.25), (1e-4, 1, 0.5),
                                                     (3.3, 113, 0.01)])
def test_sub_budgets_sum_to_rho(rho, rounds, frac):
    b = mwem.mwem_budget(rho, rounds, frac)
    assert len(b.items) == 2 * rounds + 1
    assert abs(math.fsum(i.rho for i in b.items) - rho) <= 1e-12 * max(1.0, rho)
    assert abs(b.total - rho) <= 1e-12 * max(1.0, rho)
    # αρ on the total, (1−α)ρ/(2T) per selection and per measurement
    assert b.items[0].kind == "measure" and b.items[0].round == 0
    assert b.items[0].rho == pytest.approx(frac * rho, rel=1e-15)
    assert [i.kind for i in b.items[1:]] == ["select", "measure"] * rounds
    assert [i.round for i in b.items[1:]] == [t for t in range(1, rounds + 1) for _ in range(2)]
    for i in b.items[1:]:
        assert i.rho == pytest.approx((1 - frac) * rho / (2 * rounds), rel=1e-15)
    # σ₀² = 1/(2αρ), σ² = T/((1−α)ρ), and each measurement's σ pays exactly its item: 1/(2σ²) = ρ_item
    assert b.sigma0 ** 2 == pytest.approx(1 / (2 * frac * rho), rel=1e-13)
    assert b.sigma ** 2 == pytest.approx(rounds / ((1 - frac) * rho), rel=1e-13)
    for i in b.items:
        if i.kind == "measure":
            assert 1 / (2 * i.sigma ** 2) == pytest.approx(i.rho, rel=1e-13)
    assert b.epsilon_em == pytest.approx(math.sqrt(8 * (1 - frac) * rho / (2 * rounds)))


@pytest.mark.parametrize("bad", [{"rho": 0}, {"rho": -1}, {"rounds": 0}, {"rounds": 2.5}, {"init_fraction": 0},
                                 {"init_fraction": 1}, {"init_fraction": float("nan")}])
def test_bad_budget_arguments(bad):
    kw = {"rho": 1.0, "rounds": 3, "init_fraction": 0.1} | bad
    with pytest.raises(InputError):
        mwem.mwem_budget(kw["rho"], kw["rounds"], kw["init_fraction"])


# ---- the exponential mechanism through the selection path ----------------------------------------------------------
@pytest.mark.parametrize("rng", [np.random.default_rng(5), None], ids=["seeded", "csprng"])
def test_selection_frequencies_chi_square(rng):
    score = np.array([0.0, 1.0, 2.0, 4.0, 4.5])
    rho_sel = 0.125  # ε_EM = √(8ρ) = 1, so Pr ∝ exp(score/2)
    p = np.exp(score / 2)
    p /= p.sum()
    n = 20_000 if rng is not None else 4_000
    counts = np.bincount([mwem.select(score, rho_sel, rng) for _ in range(n)], minlength=score.size)
    assert stats.chisquare(counts, n * p).pvalue > 1e-4
    # and it is not uniform (the test can fail)
    assert stats.chisquare(counts, np.full(score.size, n / score.size)).pvalue < 1e-6


def test_scores_are_against_the_true_marginals(data, monkeypatch):
    """Every selection sees ‖M_γ p − μ̂_γ‖₁ with the TRUE marginal and the EMP of the measurements so far, at
    zCDP budget (1−α)ρ/(2T) — not a noisy copy of the marginals (the authors' code quirk)."""
    wl = all_kway(data.domain, 2)
    truth = data.marginals(wl)
    seen = []
    real = mwem.select

    def spy(score, rho, rng):
        seen.append((np.array(score), rho))
        return real(score, rho, rng)

    monkeypatch.setattr(mwem, "select", spy)
    res = mwem.scalable_mwem(data, wl, 0.5, rounds=4, rng=np.random.default_rng(2))
    assert len(seen) == 4
    pool = list(wl)
    for t, (score, rho) in enumerate(seen):
        assert rho == res.budget.rho_select
        rec = emp(data.domain, wl, res.measurements[: t + 1])  # the total + the first t rounds
        expected = [np.abs(truth[g] - rec.marginals[g]).sum() for g in pool]
        np.testing.assert_allclose(score, expected, rtol=1e-12)
        pool.remove(res.selected[t])
    # round 1: only the total is measured, so μ̂_γ is uniform at N̂/n_γ
    n_hat = res.measurements[0].values[0]
    first = [np.abs(truth[g] - n_hat / data.domain.size(g)).sum() for g in wl]
    np.testing.assert_allclose(seen[0][0], first, rtol=1e-12)
    np.testing.assert_array_equal(res.score_history[0], seen[0][0])


def test_selection_prefers_badly_approximated_marginals(data):
    """With a large budget the EM picks the marginal with the largest score (b×a is far from uniform)."""
    wl = all_kway(data.domain, 2)
    res = mwem.scalable_mwem(data, wl, 50.0, rounds=1, rng=np.random.default_rng(0))
    s = res.score_history[0]
    assert res.selected[0] == wl[int(np.argmax(s))]


# ---- candidate pool ------------------------------------------------------------------------------------------------
def test_no_repeat_pool_selects_every_marginal_once(data):
    wl = all_kway(data.domain, 2)
    res = mwem.scalable_mwem(data, wl, 1.0, rounds=len(wl), rng=np.random.default_rng(3))
    assert sorted(res.selected) == sorted(wl)
    assert [len(h) for h in res.score_history] == list(range(len(wl), 0, -1))  # the pool shrinks by one a round
    with pytest.raises(InputError, match="rounds"):
        mwem.scalable_mwem(data, wl, 1.0, rounds=len(wl) + 1, rng=np.random.default_rng(3))


def test_repeats_keep_the_pool(data, monkeypatch):
    wl = all_kway(data.domain, 3)
    monkeypatch.setattr(mwem, "select", lambda score, rho, rng: 0)  # always the first candidate
    res = mwem.scalable_mwem(data, wl, 1.0, rounds=6, repeats=True, rng=np.random.default_rng(3))
    assert res.selected == [wl[0]] * 6 and all(len(h) == len(wl) for h in res.score_history)
    res = mwem.scalable_mwem(data, wl, 1.0, rounds=3, rng=np.random.default_rng(3))
    assert res.selected == wl[:3]


# ---- measurements, EMP after each round, callback, modes -----------------------------------------------------------
def test_measurements_emp_and_callback(data):
    wl = all_kway(data.domain, 2)
    calls = []
    res = mwem.scalable_mwem(data, wl, 0.3, rounds=5, init_fraction=0.2, rng=np.random.default_rng(4),
                             callback=lambda t, T, g: calls.append((t, T, g)))
    assert calls == [(t, 5, g) for t, g in zip(range(1, 6), res.selected, strict=True)]
    assert [m.clique for m in res.measurements] == [(), *res.selected]
    assert res.measurements[0].sigma == pytest.approx(res.budget.sigma0)
    assert all(m.sigma == pytest.approx(res.budget.sigma) for m in res.measurements[1:])
    final = emp(data.domain, wl, res.measurements)
    for g in wl:
        np.testing.assert_allclose(res.reconstruction.marginals[g], final.marginals[g])
    assert not res.discrete
    noise = np.concatenate([m.values - data.marginal(m.clique) for m in res.measurements[1:]])
    assert not np.allclose(noise, np.round(noise))  # continuous noise in simulation
    assert abs(noise.std() / res.budget.sigma - 1) < 0.15


def test_release_mode_is_discrete_and_keeps_no_scores(data):
    wl = all_kway(data.domain, 2)
    res = mwem.scalable_mwem(data, wl, 0.3, rounds=3, rng=None)
    assert res.discrete and res.score_history == []
    for m in res.measurements:
        np.testing.assert_array_equal(m.values, np.round(m.values))  # integer marginal + integer noise
    with pytest.raises(InputError, match="simulation"):
        mwem.scalable_mwem(data, wl, 0.3, rounds=3, rng=None, discrete=False)
