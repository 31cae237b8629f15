"""One release API in every capability (issue 18): ``release(data, noise, *, rng=None, **options) -> Release``.

For each registered capability, on its first bundled sample: the release is a core :class:`Release`; its budget
parts compose to the total it was given; ``table()`` has a row per released value (or edge) and no truth;
``metadata()`` is built by the one core function (mode, capability, unit of privacy from the registry, the parts);
``simulate(data, noise, methods, rng)`` runs on continuous noise.
"""

from __future__ import annotations

import importlib
import inspect

import numpy as np
import pytest

from dpviz.core.noise import Noise
from dpviz.core.registry import CAPABILITIES, capability, load_sample
from dpviz.core.release import Release

OPTIONS = {"marginals": {"workload": 1}, "graph": {"method": "drf-dp"}}
"""The option a capability needs beyond data and noise (everything else has a default)."""
NOISE = {"marginals": Noise.gaussian(0.5, discrete=True)}
SIMULATE = {"tree": ["gmc"], "stream": ["fenwick-fda"], "marginals": ["mle"], "graph": ["drf-dp"], "histogram": ["gmc"]}
SMALL = {"graph": "karate", "marginals": "titanic"}


def _sample(cap: str):
    name = SMALL.get(cap, capability(cap).samples[0].name)
    return load_sample(cap, f"sample:{name}")


@pytest.mark.parametrize("cap", [c.name for c in CAPABILITIES])
def test_release_has_the_one_signature(cap: str) -> None:
    release = importlib.import_module(f"dpviz.{cap}.release").release
    params = list(inspect.signature(release).parameters.values())
    assert [p.name for p in params[:2]] == ["data", "noise"]
    rng = inspect.signature(release).parameters["rng"]
    assert rng.kind is inspect.Parameter.KEYWORD_ONLY and rng.default is None
    assert all(p.kind is not inspect.Parameter.POSITIONAL_OR_KEYWORD for p in params[2:])


@pytest.mark.parametrize("cap", [c.name for c in CAPABILITIES])
def test_every_release_is_a_core_release(cap: str) -> None:
    mod = importlib.import_module(f"dpviz.{cap}.release")
    noise = NOISE.get(cap, Noise.laplace(1.0, discrete=True))
    rel = mod.release(_sample(cap), noise, rng=np.random.default_rng(0), **OPTIONS.get(cap, {}))
    assert isinstance(rel, Release) and rel.capability == cap
    out = getattr(rel, "edges", None) if cap == "graph" else rel.values
    assert out is not None and len(out) > 0
    split = rel.budget
    if noise.family == "laplace":
        assert sum(b.epsilon for _, b in split.parts) == pytest.approx(noise.budget.epsilon, rel=1e-9)
    else:
        assert sum(b.as_rho(gaussian_only=False) for _, b in split.parts) == pytest.approx(noise.rho, rel=1e-9)
    table = rel.table()
    columns = table.column_names if hasattr(table, "column_names") else list(table.columns)
    assert len(table) > 0 and not {"true", "truth", "x"} & set(map(str, columns))
    meta = rel.metadata()
    assert meta["mode"] == "release" and meta["capability"] == cap
    assert meta["unit_of_privacy"] == capability(cap).unit_of_privacy
    assert [p["part"] for p in meta["budget_parts"]] == [label for label, _ in split.parts]


@pytest.mark.parametrize("cap", [c.name for c in CAPABILITIES])
def test_every_simulate_takes_data_noise_methods_rng(cap: str) -> None:
    mod = importlib.import_module(f"dpviz.{cap}.release")
    noise = Noise.gaussian(0.5) if cap == "marginals" else Noise.laplace(1.0)
    opts = {"workload": 1} if cap == "marginals" else {}
    sim = mod.simulate(_sample(cap), noise, SIMULATE[cap], np.random.default_rng(1), **opts)
    assert sim is not None
