"""Figures for the Planner page (pure plotly: data in, ``go.Figure`` out; no Streamlit).

* :func:`error_figure` — error vs ε (log–log), one analytic line per mechanism, Monte-Carlo dots with
  their 95% interval (from :func:`dpviz.planner.montecarlo.dots`, i.e. a :mod:`dpviz.sweep`), the target
  and each mechanism's planned ε, and a strip saying which mechanism is best at each ε. The dots of every
  mechanism are one trace, and so are the planned budgets (colour and hover text per point): the browser's
  redraw grows with the number of traces, and a 12-mechanism chart had 36.
* :func:`split_figure` — the budget split as bars (ε or ρ per release), each labelled with its error.
* :func:`what_if_figure` — every release's error as the total budget moves (the optimal split re-solved
  at each total), the current total marked.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.colors import qualitative

from dpviz.planner.curves import (
    Curve,
    MonteCarloCurve,
    Plan,
    best_by_epsilon,
    rmse_at_epsilon,
)
from dpviz.planner.split import SplitResult

__all__ = ["PALETTE", "PLAN_HEADERS", "budget_grid", "epsilon_grid", "error_figure", "log_ticks", "plans_view", "readable", "split_figure",
           "tick_text", "what_if_figure"]

PALETTE = qualitative.Plotly + qualitative.D3
LEGEND = {"orientation": "h", "yanchor": "bottom", "y": 1.02, "x": 0}


def tick_text(v: float) -> str:
    """A tick label a person reads: 0.005, 0.5, 2, 50, 2k, 10k, 1M (never 5e-03 or 2000.0000001)."""
    if v >= 1e4:
        for div, unit in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
            if v >= div:
                return f"{v / div:.3g}{unit}"
    if v >= 1 and float(v).is_integer():
        return f"{int(v):,}"
    return f"{v:.3g}"


def log_ticks(lo: float, hi: float, max_ticks: int = 8) -> dict:
    """Tick values and labels for a log axis over [lo, hi]: 1-2-5 per decade when they fit in ``max_ticks``,
    else 1-3 per decade, else every decade (or every few decades), as plain labels (:func:`tick_text`)."""
    lo, hi = float(min(lo, hi)), float(max(lo, hi))
    if not (np.isfinite(lo) and np.isfinite(hi)) or lo <= 0:
        return {}
    d0, d1 = int(np.floor(np.log10(lo))), int(np.ceil(np.log10(hi)))
    vals: list[float] = []
    for mantissas in ((1, 2, 5), (1, 3), (1,)):
        vals = [m * 10.0**d for d in range(d0, d1 + 1) for m in mantissas if lo <= m * 10.0**d <= hi * (1 + 1e-9)]
        if len(vals) <= max_ticks:
            break
    step = 1
    while len(vals) > max_ticks:
        step += 1
        vals = [10.0**d for d in range(d0, d1 + 1, step) if lo <= 10.0**d <= hi * (1 + 1e-9)]
    if len(vals) < 3:  # a narrow range: Plotly's own log ticks (plain numbers) read better than 1-2-5
        return {"tickformat": "~g"}
    return {"tickmode": "array", "tickvals": vals, "ticktext": [tick_text(v) for v in vals]}


def epsilon_grid(lo: float = 0.01, hi: float = 20.0, n: int = 120) -> np.ndarray:
    """A log-spaced grid of budgets for the analytic lines."""
    return np.geomspace(lo, hi, n)


def budget_grid(plans: Sequence[Plan], axis: str = "epsilon") -> np.ndarray:
    """The budgets (ε, or ρ for ``axis="rho"``) an error chart draws its lines at: wide enough for every plan."""
    hi = max(p.rho if axis == "rho" else p.epsilon for p in plans)
    return epsilon_grid(min(0.05, hi / 20), max(10.0, hi * 3)) if axis == "epsilon" else \
        epsilon_grid(1e-4, max(10.0, hi * 3))


def readable(frame: pd.DataFrame, formats: dict[str, str], *, every: bool = False) -> tuple[pd.DataFrame, list[str]]:
    """``frame`` for a person: a numeric column of ``formats`` with gaps becomes text with an empty cell where the
    value is missing (never "None"/"nan"), and with ``every`` a column without gaps too (for a static table, which
    shows numbers as they are); returns the columns that had gaps (for a footnote)."""
    out, gaps = frame.copy(), []
    for col, spec in formats.items():
        if col not in out:
            continue
        missing = bool(out[col].isna().any())
        if missing:
            gaps.append(col)
        if missing or every:
            out[col] = [("" if v is None or (isinstance(v, float) and math.isnan(v)) else format(float(v), spec))
                        for v in out[col]]
    return out, gaps


PLAN_HEADERS = {"label": "mechanism", "noise": "noise", "epsilon": "ε (simulation)", "release_epsilon": "ε (release)",
                "rho": "ρ", "rmse": "error", "budget": "planned budget"}
"""The plans table on the page (:func:`plans_view`): its columns in order, each with its header in plain words."""


def plans_view(table: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """The plans table (:func:`dpviz.planner.curves.plans_table`) as a person reads it, for a static table that wraps
    long names (a data grid cut "GMC (optimally consistent; = Lee = PrivTrie), geometric split, Gaussian" and the
    planned budget at 1280 px): the mechanism in words (its id is the page's heading and the CLI's), numbers with 4
    significant digits, an empty cell where a number does not apply (never "None"/"nan"), the headers of
    :data:`PLAN_HEADERS`; returns the columns that had empty cells too (for a footnote)."""
    cols = [c for c in PLAN_HEADERS if c in table.columns]
    view, gaps = readable(table[cols], {c: ".4g" for c in ("epsilon", "release_epsilon", "rho", "rmse")}, every=True)
    return view.rename(columns=PLAN_HEADERS), gaps


def _color(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


def _figure(data: list[dict], layout: dict) -> go.Figure:
    """A figure from plain trace and layout dicts, built in one step without plotly.py's per-property validation
    (its add_trace/add_hline/update_* calls were most of a Planner rerun: ~140 ms for a 19-mechanism chart,
    ~10 ms this way). The dicts are written in plotly's canonical form (``title: {"text": ...}``);
    tests/test_planner_viz.py rebuilds every figure with validation to keep them valid."""
    return go.Figure({"data": data, "layout": layout}, _validate=False)


def _hline(y: float) -> dict:
    return {"type": "line", "xref": "x domain", "x0": 0, "x1": 1, "yref": "y", "y0": y, "y1": y,
            "line": {"color": "black", "dash": "dash", "width": 1}}


def _vline(x: float) -> dict:
    return {"type": "line", "xref": "x", "x0": x, "x1": x, "yref": "y domain", "y0": 0, "y1": 1,
            "line": {"color": "black", "dash": "dash", "width": 1}}


def error_figure(curves: Sequence[Curve | MonteCarloCurve], budgets: np.ndarray, *, delta: float | None = None,
                 dots: pd.DataFrame | None = None, target: float | None = None, plans: Sequence[Plan] = (),
                 axis: str = "epsilon", metric: str | None = None) -> go.Figure:
    """Error vs budget per mechanism: analytic line (or interpolated Monte-Carlo curve), Monte-Carlo dots
    with 95% error bars (``dots``: columns mechanism, epsilon, value, low, high), the ``target`` line and
    a marker at each planned budget. ``axis="rho"`` draws against ρ (Gaussian curves without δ)."""
    x = np.asarray(budgets, dtype=float)
    data: list[dict] = []
    shapes: list[dict] = []
    notes: list[dict] = []
    seen: list[np.ndarray] = [] if target is None else [np.array([target])]
    by_mech = {} if dots is None or dots.empty else dict(tuple(dots.groupby("mechanism", sort=False)))
    dotted: list[tuple[str, str, pd.DataFrame]] = []
    for i, c in enumerate(curves):
        color = _color(i)
        if axis == "rho":
            gaussian = isinstance(c, Curve) and c.family == "gaussian"
            y = c.rmse(x) if gaussian else rmse_at_epsilon(c, np.sqrt(2.0 * x))
        else:
            y = rmse_at_epsilon(c, x, delta)
        kind = "Monte-Carlo mean (interpolated)" if isinstance(c, MonteCarloCurve) else "analytic"
        y = np.asarray(y, dtype=float)
        seen.append(y)
        data.append({"type": "scatter", "x": x, "y": y, "mode": "lines", "name": c.label, "legendgroup": c.mechanism,
                     "line": {"color": color, "dash": "dot" if isinstance(c, MonteCarloCurve) else "solid"},
                     "hovertemplate": f"{c.mechanism}: %{{y:.4g}} at %{{x:.3g}} ({kind})<extra></extra>"})
        d = by_mech.get(c.mechanism)
        if d is not None and len(d):
            dotted.append((c.mechanism, color, d))
    if dotted:
        data.append(_dots_trace(dotted))
        seen += [data[-1]["y"], data[-1]["y"] + data[-1]["error_y"]["array"]]
    index = {c.mechanism: k for k, c in reversed(list(enumerate(curves)))}
    planned = [(p.rho if axis == "rho" else p.epsilon, p) for p in plans]
    planned = [(at, p) for at, p in planned if at is not None]
    if planned:  # one trace for every planned budget, named in its hover text
        data.append({"type": "scatter", "x": [at for at, _ in planned], "y": [p.target for _, p in planned],
                     "mode": "markers", "name": "planned budget", "showlegend": False,
                     "text": [f"{p.mechanism}: planned {p.budget.describe}" for _, p in planned],
                     "marker": {"symbol": "x", "size": 11,
                                "color": [_color(index.get(p.mechanism, 0)) for _, p in planned]},
                     "hovertemplate": "%{text}<extra></extra>"})
    if target is not None:
        shapes.append(_hline(target))
        notes.append({"x": 1.0, "xref": "paper", "y": math.log10(target), "yref": "y", "showarrow": False,
                      "text": f"target {target:g}", "xanchor": "right", "yanchor": "bottom", "font": {"size": 12}})
    analytic = [c for c in curves if isinstance(c, Curve)]
    if axis == "epsilon" and len(analytic) > 1 and (delta is not None or all(c.family == "laplace" for c in analytic)):
        names = [c.mechanism for c in analytic]
        for lo, hi, name in best_by_epsilon(analytic, x, delta):
            shapes.append({"type": "rect", "xref": "x", "x0": lo, "x1": hi, "yref": "y domain", "y0": 0.97, "y1": 1.0,
                           "fillcolor": _color(names.index(name)), "opacity": 0.8, "line": {"width": 0}})
            notes.append({"x": float(np.log10(lo)), "y": 0.965, "xref": "x", "yref": "paper", "text": f"best: {name}",
                          "showarrow": False, "xanchor": "left", "yanchor": "top", "font": {"size": 11}})
    yr = _log_range(seen)
    xaxis = {"title": {"text": "ρ (zCDP)" if axis == "rho" else "ε"}, "type": "log",
             "range": [float(np.log10(x.min())), float(np.log10(x.max()))], **log_ticks(x.min(), x.max(), 10)}
    yaxis = {"title": {"text": metric or (curves[0].metric if curves else "error")}, "type": "log",
             **({"range": yr, **log_ticks(10 ** yr[0], 10 ** yr[1], 10)} if yr else {})}
    return _figure(data, {"xaxis": xaxis, "yaxis": yaxis, "shapes": shapes, "annotations": notes, "legend": LEGEND,
                          "margin": {"t": 40}, "height": 480})


def _dots_trace(dotted: list[tuple[str, str, pd.DataFrame]]) -> dict:
    """Every mechanism's Monte-Carlo dots in ONE trace: each dot in its mechanism's colour, named in its hover
    text, with its 95% interval as an error bar (one colour: Plotly colours a trace's error bars alike). One
    trace instead of one per mechanism: the Gaussian stream chart drew ~36 traces, and the browser's redraw
    time grows with the number of traces, not of points."""
    names = [m for m, _, d in dotted for _ in range(len(d))]
    colors = [c for _, c, d in dotted for _ in range(len(d))]
    x = np.concatenate([d["epsilon"].to_numpy(float) for _, _, d in dotted])
    v = np.concatenate([d["value"].to_numpy(float) for _, _, d in dotted])
    lo = np.concatenate([d["low"].to_numpy(float) for _, _, d in dotted])
    hi = np.concatenate([d["high"].to_numpy(float) for _, _, d in dotted])
    return {"type": "scatter", "x": x, "y": v, "mode": "markers", "name": "Monte-Carlo", "showlegend": False,
            "text": names, "marker": {"color": colors, "size": 8, "line": {"color": "white", "width": 1}},
            "error_y": {"type": "data", "symmetric": False, "array": hi - v, "arrayminus": v - lo,
                        "color": "rgba(60, 60, 60, 0.55)", "thickness": 1.5},
            "hovertemplate": "%{text} Monte-Carlo: %{y:.4g} at ε = %{x:.3g}<extra></extra>"}


def _log_range(values: list[np.ndarray]) -> list[float] | None:
    """A log10 axis range around the positive finite values (error bars reaching 0 must not stretch it)."""
    v = np.concatenate([np.ravel(a) for a in values]) if values else np.zeros(0)
    v = v[np.isfinite(v) & (v > 0)]
    if not v.size:
        return None
    lo, hi = np.log10(v.min()), np.log10(v.max())
    pad = max(0.1, 0.05 * (hi - lo))
    return [float(lo - pad), float(hi + pad)]


def split_figure(result: SplitResult) -> go.Figure:
    """The split as bars: each release's ε (or ρ under zCDP), labelled with the error it gets."""
    t = result.table()
    use_rho = result.composition.startswith("zCDP")
    y = (t["rho"] if use_rho else t["epsilon"]).to_numpy(float)
    text = [f"{e:.3g}" for e in t["error"]]
    bar = {"type": "bar", "x": t["name"].tolist(), "y": y, "text": text, "textposition": "outside",
           "marker": {"color": [_color(i) for i in range(len(t))]},
           "customdata": np.stack([t["share"] * 100, t["metric"], t["mechanism"]], axis=-1),
           "hovertemplate": "%{x}: %{y:.4g} (%{customdata[0]:.1f}% of the total)<br>"
                            "error %{text} — %{customdata[1]} (%{customdata[2]})<extra></extra>"}
    top = float(np.nanmax(y)) if len(t) else 1.0
    return _figure([bar], {
        "yaxis": {"title": {"text": "each release's ρᵢ" if use_rho else "each release's εᵢ"}, "tickformat": ".3~g",
                  "range": [0, top * 1.18]},  # room for the error labels above the bars
        "xaxis": {"title": {"text": "release"}}, "margin": {"t": 50, "r": 20}, "height": 380,
        "title": {"text": f"{result.total.describe} split over {len(t)} releases", "y": 0.98, "yanchor": "top",
                  "font": {"size": 14}}})


def what_if_figure(frame: pd.DataFrame, current: float | None = None, *, currency: str = "ε") -> go.Figure:
    """Every release's error vs the total (``frame`` from :func:`dpviz.planner.split.what_if`), log–log, over the
    whole range of totals in ``frame`` (the x axis is that range, not more), the ``current`` total marked."""
    data = [{"type": "scatter", "x": part["total"].to_numpy(float), "y": part["error"].to_numpy(float),
             "mode": "lines", "name": str(name), "line": {"color": _color(i)},
             "hovertemplate": f"{name}: error %{{y:.4g}} at total {currency} = %{{x:.3g}}<extra></extra>"}
            for i, (name, part) in enumerate(frame.groupby("name", sort=False))]
    xs = frame["total"].to_numpy(float) if len(frame) else np.array([1.0])
    shapes, notes = [], []
    if current is not None:  # the label on the side with more room, at the bottom (the curves fall to the right)
        side = "left" if current > math.sqrt(xs.min() * xs.max()) else "right"
        shapes.append(_vline(current))
        notes.append({"x": math.log10(current), "xref": "x", "y": 0.02, "yref": "paper", "showarrow": False,
                      "text": f"total {currency} = {current:g}", "xanchor": "right" if side == "left" else "left",
                      "yanchor": "bottom", "xshift": -4 if side == "left" else 4})
    ys = frame["error"].to_numpy(float) if len(frame) else np.array([1.0])
    ys = ys[np.isfinite(ys) & (ys > 0)]
    yr = _log_range([ys]) if ys.size else None
    xaxis = {"title": {"text": f"total {currency}"}, "type": "log",
             "range": [float(np.log10(xs.min())), float(np.log10(xs.max()))], **log_ticks(xs.min(), xs.max())}
    yaxis = {"title": {"text": "error each release gets"}, "type": "log",
             **({"range": yr, **log_ticks(10 ** yr[0], 10 ** yr[1], 6)} if yr else {})}
    return _figure(data, {"xaxis": xaxis, "yaxis": yaxis, "shapes": shapes, "annotations": notes, "legend": LEGEND,
                          "margin": {"t": 50, "b": 50, "r": 20}, "height": 380})
