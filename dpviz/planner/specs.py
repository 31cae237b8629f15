"""From user-level settings (CLI flags, a releases JSON, page widgets) to error curves.

``curves_for(capability, params, ...)`` returns every candidate curve of one planned release;
``curve_for`` picks the one named by ``params["mechanism"]`` (default: the one with the smallest error,
which for analytic curves does not depend on the budget). Parameters per capability:

* tree: ``data`` (file or ``sample:NAME``, default ``sample:county``), ``query`` (node|range), ``split``
  (uniform|geometric|all), ``noise`` (laplace|gaussian), ``mechanism`` (e.g. ``gmc/uniform``);
* stream: ``horizon`` (required), ``metric`` (max|mean), ``noise``, ``mechanism`` (e.g. ``fenwick-fda``);
* marginals: ``data`` (default ``sample:adult``), ``workload`` (K, or a list of attribute lists),
  ``mechanism`` (rp|rp-release);
* graph: ``data`` (default ``sample:karate``), ``metric`` (default degree_kl), ``mechanism`` (an edge-DP
  method, default drf-dp), ``epsilons`` (the Monte-Carlo grid), ``trials``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dpviz.errors import InputError
from dpviz.planner.curves import Curve, MonteCarloCurve

__all__ = ["CAPABILITIES", "DEFAULT_DATA", "GRAPH_EPSILONS", "PRESETS", "curve_for", "curves_for", "load_data",
           "presets_json", "releases_from_json"]

CAPABILITIES = ("tree", "stream", "marginals", "graph")
DEFAULT_DATA = {"tree": "sample:county", "marginals": "sample:adult", "graph": "sample:karate"}
GRAPH_EPSILONS = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0)
KNOWN = {"tree": {"data", "query", "split", "noise", "mechanism"},
         "stream": {"horizon", "metric", "noise", "mechanism"},
         "marginals": {"data", "workload", "mechanism"},
         "graph": {"data", "metric", "mechanism", "epsilons", "trials"}}


def load_data(capability: str, spec: Any) -> Any:
    """``sample:NAME`` or a file path of a capability, read by that capability's own reader (data already
    loaded is returned as it is)."""
    if not isinstance(spec, str):
        return spec
    from dpviz.core.registry import load_source

    if capability == "tree":
        from dpviz.tree.io import load as load_tree

        return load_tree(spec)
    if capability == "marginals":
        from dpviz.marginals.data import read_table

        return load_source("marginals", spec, read_table)
    if capability == "graph":
        from dpviz.graph.io import read_edges

        return load_source("graph", spec, read_edges)
    raise InputError(f"{capability}: no data needed")


def _check(capability: str, params: Mapping[str, Any]) -> dict[str, Any]:
    if capability not in CAPABILITIES:
        raise InputError(f"capability: expected one of {', '.join(CAPABILITIES)}, got {capability!r}")
    unknown = sorted(set(params) - KNOWN[capability])
    if unknown:
        raise InputError(f"{capability} params: unknown {unknown[0]!r}; known: {', '.join(sorted(KNOWN[capability]))}")
    return dict(params)


def _families(noise: Any) -> tuple[str, ...]:
    if noise in (None, "laplace"):
        return ("laplace",)
    if noise == "gaussian":
        return ("gaussian",)
    if noise == "both":
        return ("laplace", "gaussian")
    raise InputError(f"noise: expected laplace, gaussian or both, got {noise!r}")


def _workload(domain: Any, workload: Any) -> list:
    from dpviz.marginals.data import parse_workload

    if isinstance(workload, str) and workload.strip().isdigit():
        workload = int(workload)
    return parse_workload(workload, domain)


def curves_for(capability: str, params: Mapping[str, Any], *, seed: int | None = None,
               max_seconds: float | None = None) -> list[Curve] | list[MonteCarloCurve]:
    """Every candidate curve of one release (module docstring); ``seed`` drives a graph's Monte-Carlo.
    Counts are checked before any work: a stream ``horizon`` against the stream commands' cap and memory
    estimate (:func:`dpviz.stream.fenwick.check_steps`), a graph's ``trials`` and ``epsilons`` against
    :func:`dpviz.planner.montecarlo.graph_curves`' bounds and, with ``max_seconds``, its time estimate."""
    from dpviz.planner import analytic

    p = _check(capability, params)
    if capability == "tree":
        data = load_data("tree", p.get("data", DEFAULT_DATA["tree"]))
        split = p.get("split", "all")
        return analytic.tree_curves(data.tree, query=p.get("query", "node"), families=_families(p.get("noise")),
                                    splits=None if split == "all" else [split])
    if capability == "stream":
        if "horizon" not in p:
            raise InputError("stream params: 'horizon' (the number of releases N) is required")
        horizon = p["horizon"]
        if isinstance(horizon, bool) or not isinstance(horizon, int):
            raise InputError(f"stream params: 'horizon' must be an integer, got {horizon!r}")
        from dpviz.stream.cli import STEP_BYTES
        from dpviz.stream.fenwick import MAX_STEPS, check_horizon

        if horizon > MAX_STEPS:
            raise InputError(f"stream params: 'horizon' {horizon:,} is above the cap of {MAX_STEPS:,} steps (MAX_STEPS "
                             "of dpviz.stream.fenwick, as for the stream commands)")
        check_horizon(horizon, per_step=STEP_BYTES["variance"], name="stream params: 'horizon'")
        return analytic.stream_curves(horizon, metric=p.get("metric", "max"), families=_families(p.get("noise")))
    if capability == "marginals":
        data = load_data("marginals", p.get("data", DEFAULT_DATA["marginals"]))
        return analytic.marginals_curves(data.domain, _workload(data.domain, p.get("workload", 2)))
    from dpviz.graph.release import PRIVATE_METHODS
    from dpviz.planner.montecarlo import graph_curves

    if seed is None:
        raise InputError("graph: a Monte-Carlo curve needs a seed")
    graph = load_data("graph", p.get("data", DEFAULT_DATA["graph"]))
    method = p.get("mechanism", "drf-dp")
    if method not in PRIVATE_METHODS:
        raise InputError(f"graph params: 'mechanism' must be an edge-DP method ({', '.join(PRIVATE_METHODS)}), "
                         f"got {method!r}")
    eps = p.get("epsilons", GRAPH_EPSILONS)
    trials = p.get("trials", 4)
    curves, _ = graph_curves(graph, p.get("metric", "degree_kl"), [method], eps, trials=trials, seed=seed,
                             max_seconds=max_seconds)
    return curves


def curve_for(capability: str, params: Mapping[str, Any], *, seed: int | None = None,
              max_seconds: float | None = None) -> Curve | MonteCarloCurve:
    """The curve of ``params["mechanism"]``, or the best candidate (smallest unit MSE) when none is named."""
    curves = curves_for(capability, params, seed=seed, max_seconds=max_seconds)
    name = params.get("mechanism")
    if capability == "graph" or name is None:
        return curves[0] if capability == "graph" else min(curves, key=lambda c: c.unit_mse)
    for c in curves:
        if c.mechanism == name:
            return c
    raise InputError(f"{capability}: unknown mechanism {name!r}; expected one of {', '.join(c.mechanism for c in curves)}")


def releases_from_json(text: str | bytes, *, seed: int | None = None, max_seconds: float | None = None) -> list:
    """:class:`~dpviz.planner.split.PlannedRelease` objects from a releases JSON
    (``[{name, capability, params, weight}, ...]``); ``max_seconds`` bounds each graph curve's Monte-Carlo."""
    from dpviz.planner.split import PlannedRelease, parse_releases

    out = []
    for item in parse_releases(text):
        try:
            curve = curve_for(item["capability"], item["params"], seed=seed, max_seconds=max_seconds)
        except InputError as exc:
            raise InputError(f"release {item['name']!r}: {exc}") from None
        out.append(PlannedRelease(item["name"], curve, item["weight"]))
    return out


PRESETS: dict[str, tuple[str, str, dict[str, Any]]] = {
    "county-nodes": ("County tree: every node count", "tree", {"data": "sample:county", "query": "node"}),
    "county-ranges": ("County tree: leaf-range queries", "tree", {"data": "sample:county", "query": "range"}),
    "flights": ("Flights: daily running totals, worst day", "stream", {"horizon": 181, "metric": "max"}),
    "bike": ("Bike rentals: hourly running totals over two years", "stream", {"horizon": 17544, "metric": "mean"}),
    "adult-2way": ("Adult: all 2-way marginals", "marginals", {"data": "sample:adult", "workload": 2}),
    "titanic-2way": ("Titanic: all 2-way marginals", "marginals", {"data": "sample:titanic", "workload": 2}),
    "karate-cuts": ("Karate club: cut-query error (kdh, Monte-Carlo)", "graph",
                    {"data": "sample:karate", "metric": "cut_error", "mechanism": "kdh", "trials": 4}),
}
"""Ready-made releases on the bundled data (name → (title, capability, params)), for the page and examples."""


def presets_json(names: list[str], weights: Mapping[str, float] | None = None) -> str:
    """The releases JSON (as ``plan split`` reads it) of some :data:`PRESETS`."""
    import json

    weights = weights or {}
    return json.dumps([{"name": n, "capability": PRESETS[n][1], "params": PRESETS[n][2],
                        "weight": float(weights.get(n, 1.0))} for n in names], indent=2)
