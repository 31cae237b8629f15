"""Figures and tables for the Stream page (pure: data in, ``go.Figure`` / DataFrame out).

The release figure compares *simulated* releases with the truth (simulation views only). Tables that
are downloaded or written come from :mod:`dpviz.stream.private_release` (one column builder per capability).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from dpviz.stream import fenwick as F
from dpviz.stream.simulation import Mechanism, SimulatedRelease
from dpviz.stream.strategies import LABELS
from dpviz.viz.heatmap import HEATMAP_MAX, matrix_heatmap

MATRIX_MAX = HEATMAP_MAX
MAX_POINTS = 2000
"""Longest line drawn per trace; longer series are reduced by :func:`minmax_index` (the page stays fast)."""


def minmax_index(y: np.ndarray, max_points: int | None = MAX_POINTS) -> np.ndarray:
    """Indices of at most about ``max_points`` points of ``y`` that keep its shape: in each of
    ``max_points // 2`` equal buckets the smallest and the largest value, plus the first and last point.

    Unlike a plain stride this keeps spikes (noise extremes, the popcount pattern of the variance);
    all indices are returned (``arange``) when ``y`` is short enough or ``max_points`` is None.
    """
    y = np.asarray(y, dtype=float)
    n = y.size
    if max_points is None or n <= max_points:
        return np.arange(n)
    buckets = max(1, int(max_points) // 2)
    size = -(-n // buckets)
    rows = -(-n // size)  # <= buckets; only the last row is padded
    pad = np.concatenate([y, np.full(rows * size - n, np.nan)]).reshape(rows, size)
    lo = np.where(np.isnan(pad), np.inf, pad).argmin(axis=1)
    hi = np.where(np.isnan(pad), -np.inf, pad).argmax(axis=1)
    base = np.arange(pad.shape[0]) * size
    return np.unique(np.concatenate([base + lo, base + hi, [0, n - 1]]))


def _x(n: int, timestamps: Sequence | np.ndarray | None) -> np.ndarray:
    return np.arange(1, n + 1) if timestamps is None else np.asarray(timestamps)[:n]


def release_figure(
    counts: np.ndarray,
    releases: Mapping[str, SimulatedRelease],
    timestamps: Sequence | np.ndarray | None = None,
    *,
    upto: int | None = None,
    max_points: int | None = MAX_POINTS,
    error: bool = False,
) -> go.Figure:
    """True running total and each mechanism's release with a ±2σ band; ``upto`` reveals a prefix ("play").

    ``error=True`` draws released − true instead (the truth is then the zero line), which shows the
    noise when the totals are large. Each line is reduced to about ``max_points`` points
    (:func:`minmax_index`) for drawing.
    """
    n = len(counts) if upto is None else int(upto)
    x = _x(n, timestamps)
    total = np.cumsum(np.asarray(counts, dtype=float))[:n]
    fig = go.Figure()
    for name, rel in releases.items():
        idx = minmax_index(rel.prefix_sums[:n] - total, max_points)
        xi, sd = x[idx], 2.0 * np.sqrt(rel.variance[:n][idx])
        y = rel.prefix_sums[:n][idx] - (total[idx] if error else 0.0)
        label = LABELS.get(name, name)
        fig.add_trace(go.Scatter(x=np.concatenate([xi, xi[::-1]]), y=np.concatenate([y + sd, (y - sd)[::-1]]),
                                 fill="toself", opacity=0.15, line={"width": 0}, hoverinfo="skip",
                                 name=f"{label} ±2σ", legendgroup=name, showlegend=False))
        fig.add_trace(go.Scatter(x=xi, y=y, mode="lines", name=label, legendgroup=name))
    idx = minmax_index(np.diff(total, prepend=0.0), max_points)
    fig.add_trace(go.Scatter(x=x[idx], y=np.zeros(idx.size) if error else total[idx], mode="lines",
                             name="true running total", line={"color": "black", "dash": "dot"}))
    fig.update_layout(xaxis_title="step" if timestamps is None else "time",
                      yaxis_title="released − true" if error else "running total",
                      legend={"orientation": "h", "yanchor": "bottom", "y": 1.02, "x": 0}, margin={"t": 30})
    return fig


def variance_figure(mechanisms: Sequence[Mechanism], *, max_points: int | None = MAX_POINTS) -> go.Figure:
    """The "noise curves": per-step analytic variance of every mechanism on one log-scale plot
    (each curve reduced to about ``max_points`` points by :func:`minmax_index`)."""
    fig = go.Figure()
    for mech in mechanisms:
        v = mech.per_step_variance()
        idx = minmax_index(v, max_points)
        fig.add_trace(go.Scatter(x=idx + 1, y=v[idx], mode="lines", name=LABELS.get(mech.name, mech.name)))
    fig.update_layout(xaxis_title="step t", yaxis_title="Var(released s_t)", yaxis_type="log",
                      legend={"orientation": "h", "yanchor": "bottom", "y": 1.02, "x": 0}, margin={"t": 30})
    return fig


def mse_table(mechanisms: Sequence[Mechanism]) -> pd.DataFrame:
    """Sensitivity, total / mean / max per-step MSE and the ratio of the total to Fenwick + FDA."""
    rows = []
    for mech in mechanisms:
        v = mech.per_step_variance()
        rows.append({"mechanism": LABELS.get(mech.name, mech.name), "key": mech.name,
                     "sensitivity": mech.sensitivity, "total MSE": v.sum(), "mean MSE": v.mean(),
                     "max MSE": v.max()})
    df = pd.DataFrame(rows)
    fda = df.loc[df["key"] == "fenwick-fda", "total MSE"]
    df["ratio to FDA"] = df["total MSE"] / fda.iloc[0] if len(fda) else np.nan
    return df.drop(columns="key")


def strategy_heatmaps(lam: np.ndarray) -> dict[str, go.Figure]:
    """M (Alg. 5.2), B (Alg. 5.3) and Σ = diag(λ) for a horizon N = len(λ) <= 64."""
    n = len(lam)
    return {
        "M": matrix_heatmap(F.strategy_matrix(n), "Strategy M (node × step)", row_name="node", col_name="step"),
        "B": matrix_heatmap(F.reconstruction_matrix(n), "Reconstruction B (step × node)", row_name="step", col_name="node"),
        "Σ": matrix_heatmap(np.diag(lam), "Σ = diag(λ)", row_name="node", col_name="node"),
    }


def lambda_figure(lam: np.ndarray) -> go.Figure:
    """The optimal λ profile, coloured by Fenwick level (log2 lowbit(i))."""
    i = F.nodes(len(lam))
    level = F.popcount(F.lowbit(i) - 1)
    fig = go.Figure(go.Scatter(x=i, y=lam, mode="markers", marker={"color": level, "colorscale": "Viridis",
                                                                    "colorbar": {"title": "level"}, "size": 5},
                               hovertemplate="node %{x}: λ = %{y:.4g}<extra></extra>"))
    fig.update_layout(xaxis_title="node i", yaxis_title="λ_i", margin={"t": 30})
    return fig
