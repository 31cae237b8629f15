"""From user-level settings (CLI flags, a releases JSON, page widgets) to error curves, through the hooks.

``curves_for(capability, params, ...)`` returns every candidate curve of one planned release — the capability's
``plan_curves`` hook (``dpviz/<cap>/hooks.py``, reached through the registry); ``curve_for`` picks the one named
by ``params["mechanism"]`` (default: the one with the smallest error, which for analytic curves does not depend
on the budget; a Monte-Carlo capability gives one curve). The parameters a capability takes, and their
defaults, are its hooks module's ``PLAN_PARAMS`` (e.g. a tree's ``data``, ``query``, ``split``, ``noise``,
``mechanism``); ready-made releases on the bundled data are its ``PLAN_PRESETS``.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

from dpviz.core.curves import Curve, MonteCarloCurve
from dpviz.core import registry
from dpviz.core.registry import capability
from dpviz.errors import InputError

__all__ = ["PRESETS", "curve_for", "curves_for", "load_data", "monte_carlo", "page_info", "plan_params",
           "preset_seed", "presets_json", "releases_from_json"]


def _hooks_module(capability_name: str) -> Any:
    """The module of a capability's ``plan_curves`` hook (where ``PLAN_PARAMS`` and ``PLAN_PRESETS`` live)."""
    return sys.modules[capability(capability_name).hook("plan_curves").__module__]


def plan_params(capability_name: str) -> dict[str, Any]:
    """The parameters a planned release of the capability takes, with their defaults (``PLAN_PARAMS``)."""
    return dict(getattr(_hooks_module(capability_name), "PLAN_PARAMS", {}))


def monte_carlo(capability_name: str) -> bool:
    """Whether the capability's curves are Monte-Carlo (its hooks have no ``plan_dots``, the mark of analytic
    curves): only then does a curve depend on the ``seed`` of :func:`curves_for`."""
    return getattr(_hooks_module(capability_name), "plan_dots", None) is None


def load_data(capability_name: str, spec: Any) -> Any:
    """``sample:NAME`` or a file path of a capability, read by that capability's ``load`` hook (data already
    loaded is returned as it is)."""
    if not isinstance(spec, str):
        return spec
    return capability(capability_name).hook("load")(spec)


def _check(capability_name: str, params: Mapping[str, Any]) -> dict[str, Any]:
    names = [c.name for c in registry.CAPABILITIES]
    if capability_name not in names:
        raise InputError(f"capability: expected one of {', '.join(names)}, got {capability_name!r}")
    known = plan_params(capability_name)
    unknown = sorted(set(params) - set(known))
    if unknown:
        raise InputError(f"{capability_name} params: unknown {unknown[0]!r}; known: {', '.join(sorted(known))}")
    return dict(params)


def curves_for(capability_name: str, params: Mapping[str, Any], *, seed: int | None = None,
               max_seconds: float | None = None) -> list[Curve] | list[MonteCarloCurve]:
    """Every candidate curve of one release (module docstring); ``seed`` drives a Monte-Carlo curve and
    ``max_seconds`` bounds its estimated time. The hook checks its counts before any work."""
    p = _check(capability_name, params)
    return capability(capability_name).hook("plan_curves")(p, seed=seed, max_seconds=max_seconds)


def curve_for(capability_name: str, params: Mapping[str, Any], *, seed: int | None = None,
              max_seconds: float | None = None) -> Curve | MonteCarloCurve:
    """The curve of ``params["mechanism"]``, or the best candidate (smallest unit MSE) when none is named; a
    Monte-Carlo capability's first curve (it tabulates the one mechanism it was asked for)."""
    curves = curves_for(capability_name, params, seed=seed, max_seconds=max_seconds)
    if isinstance(curves[0], MonteCarloCurve):
        return curves[0]
    name = params.get("mechanism")
    if name is None:
        return min(curves, key=lambda c: c.unit_mse)
    for c in curves:
        if c.mechanism == name:
            return c
    raise InputError(f"{capability_name}: unknown mechanism {name!r}; expected one of "
                     f"{', '.join(c.mechanism for c in curves)}")


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


def _presets() -> dict[str, tuple[str, str, dict[str, Any]]]:
    out: dict[str, tuple[str, str, dict[str, Any]]] = {}
    for cap in registry.CAPABILITIES:
        for name, (title, params) in getattr(_hooks_module(cap.name), "PLAN_PRESETS", {}).items():
            out[name] = (title, cap.name, dict(params))
    return out


PRESETS: dict[str, tuple[str, str, dict[str, Any]]] = _presets()
"""Ready-made releases on the bundled data (name → (title, capability, params)), for the page and examples:
every capability's ``PLAN_PRESETS``, in registry order."""


def preset_seed(name: str, seed: int) -> int:
    """The seed the curve of preset ``name`` depends on: ``seed`` for a Monte-Carlo capability (a graph), else 0
    (an analytic curve is the same for every seed, so a page's new noise draw can reuse it)."""
    return seed if monte_carlo(PRESETS[name][1]) else 0


def presets_json(names: list[str], weights: Mapping[str, float] | None = None) -> str:
    """The releases JSON (as ``plan split`` reads it) of some :data:`PRESETS`."""
    import json

    weights = weights or {}
    return json.dumps([{"name": n, "capability": PRESETS[n][1], "params": PRESETS[n][2],
                        "weight": float(weights.get(n, 1.0))} for n in names], indent=2)
