"""A capability plugs into audit, sweep, plan and the ledger by its hooks alone (issue 18).

A toy capability — ``toy``: a vector of counts released with Laplace noise of scale 1/ε per count (L1
sensitivity 1: one person is in one count) — is registered for the test only, with its hooks and the
hooks module's constants in this very module. The tools, which name no capability, then offer it: an
``audit toy`` verb with its own flag, a ``sweep toy`` verb, a ``plan toy`` verb and ``plan split`` releases,
and the ledger's identity and load options. Without the hook dispatch (a tool with its own per-capability
branches) every one of these fails.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import sys
from typing import Any, ClassVar

import numpy as np
import pytest

from dpviz.core import registry
from dpviz.core.curves import Curve, DotGroup, mse_dots
from dpviz.core.events import AuditTarget, threshold_event
from dpviz.errors import InputError
from dpviz.core.trials import Record, check_options, continuous_noise, noise_text, pick_methods, run_trials

MODULE = __name__
COUNTS = (3, 1, 4, 1, 5)


# ---- the toy capability's hooks -----------------------------------------------------------------------------
def toy_load(spec: str, *, scale: int | None = None) -> np.ndarray:
    if spec != "sample:one":
        raise InputError(f"toy: unknown {spec!r}")
    return np.asarray(COUNTS, dtype=np.int64) * (1 if scale is None else int(scale))


def toy_canonical_bytes(source: str, data: np.ndarray) -> bytes:
    return ("\n".join(str(int(v)) for v in data) + "\n").encode()


CANONICAL = "toy: the counts, one a line"
LEDGER_ARGS = (("--scale", {"type": int, "default": None, "help": "toy: multiply every count"}),)

AUDIT_HELP = "a toy vector and the same with one more person in count 0"
AUDIT_ARGS = (("--shift", {"type": int, "default": 0, "help": "toy: add to every count"}),)


def toy_audit_target(epsilon: float = 1.0, *, shift: int = 0) -> AuditTarget:
    d0 = np.asarray(COUNTS, dtype=float) + shift
    d1 = d0.copy()
    d1[0] += 1.0

    def release_fn(d: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        noise = continuous_noise(epsilon, None)
        return d + noise.draw(noise.scale(1.0), d.size, rng)

    return AuditTarget("toy", "toy Laplace", "one more person in count 0", d0, d1, release_fn,
                       (threshold_event("released count 0", lambda r: float(r[0])),), epsilon)


SWEEP_HELP = "toy: one Laplace count per entry"
SWEEP_OPTIONS = {"scale": 1}
SWEEP_ARGS = (("--scale", {"type": int, "default": 1, "help": "toy: multiply every count"}),)


@dataclasses.dataclass(frozen=True, eq=False)
class ToyTarget:
    capability: ClassVar[str] = "toy"

    data: np.ndarray
    methods: tuple[str, ...]
    delta: float | None

    @property
    def name(self) -> str:
        return "toy"

    @property
    def noise(self) -> str:
        return noise_text(self.delta)

    def trial(self, epsilon: float, seed: np.random.SeedSequence) -> list[Record]:
        noise = continuous_noise(epsilon, self.delta)
        err = noise.draw(noise.scale(1.0), self.data.size, np.random.default_rng(seed))
        return [("laplace", "mse", float(np.mean(err ** 2)), noise.variance(1.0))]


def toy_sweep_target(spec: Any) -> ToyTarget:
    opts = check_options("toy", SWEEP_OPTIONS, spec.options)
    data = toy_load(spec.source) * opts["scale"] if isinstance(spec.source, str) else np.asarray(spec.source)
    return ToyTarget(data, pick_methods(spec.methods, ["laplace"], "toy method"), spec.delta)


PLAN_PARAMS = {"mechanism": None}
PLAN_PRESETS = {"toy-counts": ("Toy counts", {})}
PLAN_HELP = "smallest ε for a target RMSE per toy count"


def toy_plan_curves(params: Any, *, seed: int | None = None, max_seconds: float | None = None) -> list[Curve]:
    return [Curve("toy", "laplace", "one Laplace count per entry", "RMSE per count", "laplace", 2.0)]


def plan_dots(curves: Any, source: Any, epsilons: tuple[float, ...], *, trials: int, seed: int, delta: Any,
              options: Any) -> list[DotGroup]:
    target = ToyTarget(np.asarray(COUNTS), ("laplace",), delta)
    return [DotGroup(target, epsilons, lambda: mse_dots(run_trials(target, epsilons, trials, seed), "mse", False))]


def plan_args(p: Any, common: Any) -> None:
    common.target(p)


def plan_command(args: Any, common: Any) -> int:
    plans = common.plan_target(toy_plan_curves({}), args.target_rmse)
    common.print_plans(plans, f"plan: toy; {plans[0].metric} ≤ {args.target_rmse:g}")
    return 0


TOY = registry.Capability(
    name="toy", title="Toy", description="toy counts", unit_of_privacy="one person in one count",
    cli="dpviz.tree.cli:register", samples=(registry.Sample("one", "five counts", f"{MODULE}:_one"),),
    hooks=registry.Hooks(load=f"{MODULE}:toy_load", canonical_bytes=f"{MODULE}:toy_canonical_bytes",
                         audit_target=f"{MODULE}:toy_audit_target", sweep_target=f"{MODULE}:toy_sweep_target",
                         plan_curves=f"{MODULE}:toy_plan_curves", thumbnail=f"{MODULE}:toy_load"))


def _one() -> np.ndarray:
    return toy_load("sample:one")


@pytest.fixture
def toy(monkeypatch):
    monkeypatch.setattr(registry, "CAPABILITIES", (*registry.CAPABILITIES, TOY))
    assert sys.modules[MODULE]  # the hooks resolve to this module
    return TOY


def _main(capsys, *argv: str) -> tuple[int, str, str]:
    from dpviz.cli import main

    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


# ---- the tools offer it -------------------------------------------------------------------------------------
def test_audit_has_a_toy_verb_with_its_own_flag(toy, capsys):
    rc, out, _ = _main(capsys, "audit", "toy", "--shift", "7", "--epsilon", "1", "--trials", "300", "--seed", "3",
                       "--quiet")
    assert rc == 0 and out.startswith("audit toy — toy Laplace at ε = 1; neighbours: one more person in count 0")
    assert "verdict:" in out and "released count 0" in out


def test_sweep_has_a_toy_verb_whose_options_reach_the_target(toy, capsys):
    from dpviz.sweep import SweepSpec, run, summarise

    rc, out, _ = _main(capsys, "sweep", "toy", "sample:one", "--epsilons", "1,2", "--trials", "4", "--workers", "0",
                       "--seed", "5", "--scale", "3", "--quiet")
    assert rc == 0 and "laplace" in out and "mse" in out
    df = run(SweepSpec("toy", "sample:one", (1.0, 2.0), trials=50, seed=5, options={"scale": 3}))
    assert df.attrs["sweep"]["noise"] == "Laplace (pure ε-DP)" and list(df["method"].cat.categories) == ["laplace"]
    s = summarise(df)
    assert (s["analytic"] == [2.0, 0.5]).all()  # Var Laplace(1/ε) = 2/ε²: the target's analytic value
    with pytest.raises(InputError, match="unknown option 'nope'"):
        run(SweepSpec("toy", "sample:one", (1.0,), trials=1, seed=1, options={"nope": 1}))


def test_plan_has_a_toy_verb_and_splits_over_toy_releases(toy, capsys, tmp_path):
    rc, out, _ = _main(capsys, "plan", "toy", "--target-rmse", "0.5")
    assert rc == 0 and "plan: toy; RMSE per count ≤ 0.5" in out
    assert "best: laplace needs ε = 2.828" in out  # ε = √a / R = √2 / 0.5
    releases = tmp_path / "r.json"
    releases.write_text(json.dumps([{"name": "a", "capability": "toy", "params": {}},
                                    {"name": "b", "capability": "toy", "params": {}, "weight": 8}]))
    rc, out, _ = _main(capsys, "plan", "split", str(releases), "--total", "3", "--seed", "1")
    assert rc == 0 and "toy laplace" in out
    from dpviz.planner import montecarlo, specs

    with pytest.raises(InputError, match="toy params: unknown 'x'"):
        specs.curves_for("toy", {"x": 1})
    dots = montecarlo.dots(toy_plan_curves({}), None, (1.0, 2.0), trials=200, seed=2)
    assert list(dots["mechanism"]) == ["laplace", "laplace"]
    np.testing.assert_allclose(dots["value"], [math.sqrt(2.0), math.sqrt(0.5)], rtol=0.15)


def test_ledger_identifies_and_loads_toy_data(toy, capsys, tmp_path):
    from dpviz.ledger.identity import canonical_description, identify, load_for_ledger, sample_capability

    assert sample_capability("sample:one") == "toy"
    data = load_for_ledger("toy", "sample:one", scale=2)
    np.testing.assert_array_equal(data, np.asarray(COUNTS) * 2)
    ds = identify("toy", "sample:one", data)
    assert ds.sha256 == hashlib.sha256(b"dpviz-ledger/1 toy\n6\n2\n8\n2\n10\n").hexdigest()
    assert ds.canonical == canonical_description("toy") == CANONICAL
    with pytest.raises(InputError, match="--scale: only a toy dataset takes it, not stream"):
        load_for_ledger("stream", "sample:flights", scale=2)
    ledger = tmp_path / "l.sqlite3"
    rc, out, _ = _main(capsys, "ledger", "set-budget", "sample:one", "--scale", "2", "--epsilon", "1",
                       "--ledger", str(ledger))
    assert rc == 0 and "budget of sample:one set to ε = 1" in out
