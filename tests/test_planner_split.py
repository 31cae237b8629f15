"""dpviz.planner.split: one total budget over several releases, closed form and numeric."""

import json

import numpy as np
import pytest

from dpviz.core.accounting import zcdp_rho
from dpviz.core.budget import Budget
from dpviz.errors import InputError
from dpviz.planner.curves import Curve, MonteCarloCurve
from dpviz.planner.specs import PRESETS, curve_for, presets_json, releases_from_json
from dpviz.planner.split import (
    PlannedRelease,
    _numeric,
    parse_releases,
    split_budget,
    what_if,
)


def lap(name: str, a: float) -> Curve:
    return Curve("stream", name, name, "RMSE", "laplace", a)


def gau(name: str, a: float) -> Curve:
    return Curve("tree", name, name, "RMSE", "gaussian", a)


RELEASES = [PlannedRelease("a", lap("a", 8.0), 1.0), PlannedRelease("b", lap("b", 1.0), 2.0),
            PlannedRelease("c", lap("c", 27.0), 0.5)]


def objective(releases, eps):
    return sum(r.weight * r.curve.unit_mse / e**2 for r, e in zip(releases, eps))


def test_pure_total_closed_form_is_the_cube_root_rule_and_optimal():
    res = split_budget(RELEASES, Budget.pure(2.0))
    eps = np.array([a.epsilon for a in res.allocations])
    z = np.array([(r.weight * r.curve.unit_mse) ** (1 / 3) for r in RELEASES])
    np.testing.assert_allclose(eps, 2.0 * z / z.sum(), rtol=1e-12)
    assert eps.sum() == pytest.approx(2.0) and res.method.startswith("closed form ε_i")
    assert res.objective == pytest.approx(objective(RELEASES, eps))
    for a, r, e in zip(res.allocations, RELEASES, eps):
        assert a.error == pytest.approx(np.sqrt(r.curve.unit_mse) / e)
    rng = np.random.default_rng(0)
    for _ in range(50):  # no feasible perturbation does better
        p = eps * np.exp(rng.normal(0, 0.1, 3))
        assert objective(RELEASES, 2.0 * p / p.sum()) >= res.objective * (1 - 1e-12)
    # the numeric solver finds the same split from a poor start
    s = _numeric(RELEASES, 2.0, "epsilon", np.full(3, 1 / 3))
    np.testing.assert_allclose(s * 2.0, eps, rtol=2e-3)


def test_rho_total_is_the_square_root_rule_and_laplace_spends_rho_as_eps_squared_over_two():
    rel = [PlannedRelease("g", gau("g", 4.0), 1.0), PlannedRelease("l", lap("l", 8.0), 1.0)]
    res = split_budget(rel, Budget.zcdp(0.5))
    rho = np.array([a.rho for a in res.allocations])
    z = np.sqrt([4.0, 8.0 / 2])  # Laplace: MSE = a/ε² = a/(2ρ)
    np.testing.assert_allclose(rho, 0.5 * z / z.sum(), rtol=1e-12)
    g, lap_alloc = res.allocations
    assert g.epsilon is None and lap_alloc.epsilon == pytest.approx(np.sqrt(2 * lap_alloc.rho))
    assert g.error == pytest.approx(np.sqrt(4.0 / g.rho)) and res.composition.startswith("zCDP")


def test_approx_total_keeps_the_better_composition():
    small = split_budget(RELEASES, Budget.approx(1.0, 1e-6))  # few pure releases, small ε: basic wins
    assert small.composition.startswith("basic")
    many = [PlannedRelease(f"r{i}", lap(f"r{i}", 1.0)) for i in range(200)]
    big = split_budget(many, Budget.approx(50.0, 1e-6))  # many releases, large total: zCDP wins
    assert big.composition.startswith("zCDP")
    assert sum(a.rho for a in big.allocations) == pytest.approx(zcdp_rho(50.0, 1e-6))
    mixed = split_budget([*RELEASES, PlannedRelease("g", gau("g", 1.0))], Budget.approx(1.0, 1e-6))
    assert mixed.composition.startswith("zCDP")  # a Gaussian release: only zCDP composes it


def test_split_refuses_bad_combinations():
    with pytest.raises(InputError, match="Gaussian"):
        split_budget([PlannedRelease("g", gau("g", 1.0))], Budget.pure(1.0))
    with pytest.raises(InputError, match="unique"):
        split_budget([RELEASES[0], RELEASES[0]], Budget.pure(1.0))
    with pytest.raises(InputError):
        split_budget([], Budget.pure(1.0))
    with pytest.raises(InputError):
        PlannedRelease("x", lap("x", 1.0), 0.0)


def test_monte_carlo_curve_makes_the_split_numeric():
    mc = MonteCarloCurve("graph", "kdh", "kdh", "Cut", (0.25, 1.0, 4.0), (0.4, 0.2, 0.1), (0.3, 0.1, 0.05),
                         (0.5, 0.3, 0.15), 4)
    rel = [PlannedRelease("a", lap("a", 8.0)), PlannedRelease("g", mc, 500.0)]
    res = split_budget(rel, Budget.pure(2.0))
    assert res.method.startswith("numeric")
    assert sum(a.epsilon for a in res.allocations) == pytest.approx(2.0)
    eps = np.array([a.epsilon for a in res.allocations])

    def f(e):
        return 8.0 / e[0] ** 2 + 500.0 * float(mc.loss(e[1])[0])

    for share in np.linspace(0.05, 0.95, 19):  # the optimum beats a grid of other splits
        assert res.objective <= f(np.array([2 * share, 2 * (1 - share)])) * (1 + 1e-6)
    assert res.objective == pytest.approx(f(eps))
    assert res.allocations[1].error == pytest.approx(float(mc.value(eps[1])[0]))


def test_what_if_errors_fall_as_the_total_grows():
    df = what_if(RELEASES, [Budget.pure(x) for x in (0.5, 1.0, 2.0)])
    assert len(df) == 9
    for _, part in df.groupby("name"):
        e = part.sort_values("total")["error"].to_numpy()
        np.testing.assert_allclose(e[:-1] / e[1:], 2.0)  # error ∝ 1/total: the shares do not move


def test_releases_json_round_trip_and_errors():
    text = presets_json(["flights", "titanic-2way"], {"flights": 3.0})
    rel = releases_from_json(text)
    assert [r.name for r in rel] == ["flights", "titanic-2way"] and rel[0].weight == 3.0
    assert rel[0].curve.capability == "stream" and rel[1].curve.family == "gaussian"
    assert rel[0].curve == curve_for("stream", PRESETS["flights"][2])
    bad = {"not json": "not valid JSON", "{}": "non-empty JSON list", "[1]": "not an object",
           '[{"name": "a"}]': "capability", '[{"name": "a", "capability": "tree", "x": 1}]': "unknown key",
           '[{"name": "a", "capability": "tree", "weight": "2"}]': "weight"}
    for text, msg in bad.items():
        with pytest.raises(InputError, match=msg):
            parse_releases(text)
    with pytest.raises(InputError, match="release 'a'.*horizon"):
        releases_from_json(json.dumps([{"name": "a", "capability": "stream", "params": {}}]))
    with pytest.raises(InputError, match="unknown mechanism"):
        curve_for("stream", {"horizon": 10, "mechanism": "nope"})
    with pytest.raises(InputError, match="seed"):
        curve_for("graph", {})
