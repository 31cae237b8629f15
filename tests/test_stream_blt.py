"""Buffered-linear-Toeplitz factorisations (dpviz.stream.blt, dpviz.stream.toeplitz): closed forms against dense
algebra, the optimiser, sensitivity by brute force, O(d) streaming, the lattice release, the audit, the defaults."""

import json
import re

import numpy as np
import pytest

from dpviz import cli
from dpviz.audit.targets import run
from dpviz.core.noise import Noise
from dpviz.errors import InputError
from dpviz.stream import blt as B
from dpviz.stream import lattice as LT
from dpviz.stream.estimators import sqrt_coefficients
from dpviz.stream.hooks import audit_target, stream_curves
from dpviz.stream.mechanism import make_mechanism
from dpviz.stream.release import release
from dpviz.stream.strategy import best_releasable, releasable, releasable_ranking, strategy


def _toeplitz(c):
    n = len(c)
    i, j = np.indices((n, n))
    return np.where(i >= j, np.asarray(c)[np.clip(i - j, 0, n - 1)], 0.0)


def _random_blt(rng, n, d):
    return B.BLT(n, tuple(np.sort(rng.uniform(0.05, 0.99, d))), tuple(rng.uniform(0.01, 0.6, d)))


@pytest.mark.parametrize("seed", range(12))
def test_closed_forms_match_dense_algebra(seed):
    """c, the decoder b of B = W C⁻¹ (inverse-BLT closed form) and the three losses (Gramian doubling) against
    the dense N×N matrices of random BLTs."""
    rng = np.random.default_rng(seed)
    n, d = int(rng.integers(2, 40)), int(rng.integers(1, 5))
    f = _random_blt(rng, n, d)
    c = f.coefficients
    c_ref = np.concatenate([[1.0], [sum(w * t ** (k - 1) for t, w in zip(f.theta, f.omega)) for k in range(1, n)]])
    np.testing.assert_allclose(c, c_ref, rtol=1e-12)
    big_b = np.tril(np.ones((n, n))) @ np.linalg.inv(_toeplitz(c))
    np.testing.assert_allclose(f.decoder, big_b[:, 0], atol=1e-10)
    np.testing.assert_allclose(_toeplitz(f.decoder), big_b, atol=1e-10)  # B is Toeplitz
    c2, b2, bm = B.blt_losses(-np.log(f.theta), np.asarray(f.omega), n)
    assert c2 == pytest.approx((_toeplitz(c) ** 2).sum(axis=0).max(), rel=1e-10)  # max column norm²
    assert b2 == pytest.approx((big_b**2).sum(axis=1).max(), rel=1e-10)  # max row norm²
    assert bm == pytest.approx((big_b**2).sum(), rel=1e-10)  # ‖B‖_F² = Σ_k (N − k) b_k²
    assert f.max_loss == pytest.approx(np.sqrt(c2 * b2)) and f.mean_loss == pytest.approx(c2 * bm / n)


def test_optimiser_matches_the_square_root_and_the_mean_objective_helps():
    for n in (64, 1000):
        sq = float(np.sum(sqrt_coefficients(n) ** 2))  # the square root's worst-step loss ‖c‖²
        f = B.optimise_blt(n)
        assert f.max_loss <= sq * (1 + 1e-4) and np.all(f.coefficients > 0)
        assert 0 < min(f.theta) and max(f.theta) < 1 and min(f.omega) > 0
        mean = B.optimise_blt(n, 8, "mean")
        assert mean.mean_loss < f.mean_loss and mean.max_loss >= f.max_loss * (1 - 1e-9)
    assert B.optimise_blt(1).max_loss == 1.0  # N = 2: min over c_1 of (1 + c_1²)(1 + (1 − c_1)²) is at c_1 = 1/2
    np.testing.assert_allclose(B.optimise_blt(2).coefficients, [1.0, 0.5], atol=1e-6)
    with pytest.raises(InputError, match="objective"):
        B.optimise_blt(10, 4, "median")
    with pytest.raises(InputError, match="buffers"):
        B.optimise_blt(10, 0)


@pytest.mark.parametrize("n", [1, 3, 12])
def test_sensitivity_is_the_brute_force_maximum(n):
    """Δ₂ = max over unit-step neighbours a ± e_t of ‖C(a' − a)‖₂, found by brute force on the strategy's answers."""
    s = strategy("blt", n, "gaussian")
    rng = np.random.default_rng(n)
    a = rng.integers(0, 9, n)
    worst = 0.0
    for t in range(n):
        for sign in (1, -1):
            a1 = a.copy()
            a1[t] += sign
            worst = max(worst, float(np.linalg.norm(s.answer(a1) - s.answer(a))))
    assert worst == pytest.approx(s.sensitivity(), rel=1e-12)
    np.testing.assert_allclose(s.answer(a), _toeplitz(s.lattice_coefficients) @ a, atol=1e-9)
    with pytest.raises(InputError, match="Gaussian"):
        s.sensitivity("laplace")


def test_streaming_state_is_o_of_d_and_equals_batch():
    n = 300
    mech = make_mechanism("blt", n, Noise.gaussian(0.4))
    a = np.random.default_rng(1).poisson(5, n)
    batch = mech.simulate(a, np.random.default_rng(3))
    st = mech.streamer(np.random.default_rng(3))
    out = np.array([st.step(x) for x in a])
    np.testing.assert_allclose(out[:, 0], batch.prefix_sums, atol=1e-9 * (1 + np.abs(batch.prefix_sums).max()))
    assert len(st.poles) == mech.strategy.factor.buffers <= B.DEFAULT_BUFFERS  # O(d) state, not O(N)


def test_release_on_the_lattice_charges_the_rounded_strategy():
    noise = Noise.gaussian(0.5, discrete=True)
    rel = release(np.array([3, 0, 2, 5, 1]), noise, mechanism="blt", horizon=12)
    s = strategy("blt", 12, "gaussian")
    lat, c = LT.charged_lattice(s.lattice_coefficients, noise)
    assert rel.lattice == lat and rel.sensitivity == pytest.approx(s.sensitivity() + np.sqrt(12) * 2.0**-lat.bits)
    assert rel.sensitivity**2 / (2 * lat.sigma**2) == pytest.approx(0.5, rel=1e-12)  # ρ spent = ρ given
    x = np.array([3, 0, 2, 5, 1] + [0] * 7)
    base = LT.lattice_answer(s.lattice_coefficients, x, lat.bits)
    for t in (0, 4, 11):  # neighbours differ by the rounded column t: same lattice, ≤ charged Δ
        x1 = x.copy()
        x1[t] += 1
        diff = LT.lattice_answer(s.lattice_coefficients, x1, lat.bits) - base
        assert list(diff) == [0] * t + [int(v) for v in c[: 12 - t]]
        assert sum(int(v) ** 2 for v in diff) <= (rel.sensitivity * 2.0**lat.bits) ** 2
    np.testing.assert_allclose(rel.variance, lat.value_variance * np.cumsum(s.estimator.coefficients**2)[:5])
    meta = rel.metadata()
    assert meta["mechanism"] == "blt" and meta["lattice"]["sensitivity_l2"] == meta["sensitivity"]["value"]
    assert "blt" in releasable("gaussian") and "blt" not in releasable("laplace")
    with pytest.raises(InputError, match="Gaussian"):
        release(np.array([1, 2]), Noise.laplace(1.0, discrete=True), mechanism="blt")


def test_audit_finds_nothing():
    result = run(audit_target(1.0, mechanism="blt"), trials=200, rng=np.random.default_rng(2))
    assert result.consistent and result.epsilon_lower == 0.0


def test_best_releasable_is_the_least_variance_and_the_planner_covers_it():
    for target in ("max", "mean"):
        ranking = releasable_ranking(target, "gaussian", 100)
        assert {m for m, _ in ranking} == set(releasable("gaussian"))
        assert best_releasable(target, "gaussian", 100) == ranking[0][0]
        assert [v for _, v in ranking] == sorted(v for _, v in ranking)
        curves = {c.mechanism: c.unit_mse for c in stream_curves(100, metric=target, families=("gaussian",))}
        assert {"blt", "banded"} <= set(curves)  # the planner's candidates include the new mechanisms
        assert min(curves, key=curves.get).split("/")[0] in dict(ranking)  # its best is a releasable mechanism
    means = dict(releasable_ranking("mean", "gaussian", 32))
    assert means["banded"] < means["sqrt"]  # full band, mean-optimised: beats the square root on the mean
    assert best_releasable("max", "gaussian", 32) == "sqrt-weighted"  # the re-weighted rows: the best worst step
    with pytest.raises(InputError, match="target"):
        best_releasable("median", "gaussian", 10)


def test_cli_release_default_names_the_chosen_mechanism(tmp_path, capsys):
    out = tmp_path / "o.csv"
    assert cli.main(["stream", "release", "sample:flights", "--rho", "0.5", "--target", "mean",
                     "--output", str(out)]) == 0
    text = capsys.readouterr().out
    meta = json.loads((tmp_path / "o.csv.meta.json").read_text())
    best = best_releasable("mean", "gaussian", 181)
    assert meta["mechanism"] == best == meta["mechanism_choice"]["chosen"] and meta["mechanism_choice"]["target"] == "mean"
    assert re.search(r"mechanism chosen: least mean per-step variance", text) and text.startswith("private release")
    assert cli.main(["stream", "variance", "--horizon", "20", "--mechanism", "blt", "--rho", "0.5",
                     "--output", str(tmp_path / "v.csv")]) == 0


def test_streamer_equals_the_scalar_blt_recursion():
    """The streamer's block parallel form (poles of C⁻¹) = the BLT's defining recursion y_t = z_t − Σ ω_i S_i,
    S_i ← θ_i S_i + y_t, step by step, across several blocks."""
    n = 9000  # > 2 blocks of 4096
    mech = make_mechanism("blt", n, Noise.gaussian(0.5))
    f = mech.strategy.factor
    st = mech.streamer(np.random.default_rng(4))
    got = np.array([st.step(0)[0] for _ in range(n)])
    z = np.random.default_rng(4).normal(size=n) * mech.base_scale
    state, want, acc = [0.0] * f.buffers, [], 0.0
    for v in z.tolist():
        y = v - sum(w * s for w, s in zip(f.omega, state))
        state = [t * s + y for t, s in zip(f.theta, state)]
        acc += y
        want.append(acc)
    np.testing.assert_allclose(got, want, atol=1e-9)
    assert len(st.poles) == f.buffers and len(st.block) <= st.BLOCK  # O(d) state plus one block, whatever N
