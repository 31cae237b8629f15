"""Figure for the Ledger page (pure plotly: data in, ``go.Figure`` out; no Streamlit).

* :func:`spent_figure` — the ε a dataset has spent after each release, composed both ways (basic composition
  and zCDP, :mod:`dpviz.ledger.accounts`), as steps with a marker per release, and the budget's ε as a line.
  A way with no finite value (zCDP under a pure budget: no pure ε guarantee) is left out, not drawn empty;
  :func:`undefined_ways` names it so the page can say why.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

__all__ = ["WAYS", "spent_figure", "undefined_ways"]

WAYS = {"ε (basic)": ("basic composition (Σε; Dwork & Roth Thm. 3.16)", "#1f77b4"),
        "ε (zCDP)": ("zCDP (Σρ, then ε at δ; Bun & Steinke Lemma 2.3, CKS Cor. 13)", "#ff7f0e")}
"""Columns of :func:`dpviz.ledger.views.cumulative_frame` → (legend name, colour)."""


def undefined_ways(frame: pd.DataFrame) -> list[str]:
    """The columns of ``frame`` with no finite value at all (nothing to draw)."""
    return [c for c in WAYS if c in frame and not np.isfinite(frame[c].to_numpy(float)).any()]


def spent_figure(frame: pd.DataFrame, budget_epsilon: float | None = None) -> go.Figure:
    """Spent ε after each release (``frame`` from :func:`dpviz.ledger.views.cumulative_frame`): one stepped line
    per composition that has a finite value, the ``budget_epsilon`` as a dashed line."""
    fig = go.Figure()
    x = np.arange(1, len(frame) + 1)
    ids = frame["release"].to_numpy() if "release" in frame else x
    skip = set(undefined_ways(frame))
    for col, (name, color) in WAYS.items():
        if col not in frame or col in skip:
            continue
        y = frame[col].to_numpy(float)
        fig.add_trace(go.Scatter(x=x, y=np.where(np.isfinite(y), y, np.nan), mode="lines+markers", name=name,
                                 line={"shape": "hv", "color": color}, marker={"size": 7}, customdata=ids,
                                 hovertemplate=f"after release %{{x}} (ledger #%{{customdata}}): {col} = "
                                               "%{y:.4g}<extra></extra>"))
    if budget_epsilon is not None:
        fig.add_hline(y=float(budget_epsilon), line={"color": "black", "dash": "dash", "width": 1},
                      annotation_text=f"budget ε = {budget_epsilon:g}", annotation_position="top left")
    fig.update_xaxes(title="releases so far", tickformat="d", dtick=1 if len(frame) <= 20 else None,
                     range=[0.5, len(frame) + 0.5])
    fig.update_yaxes(title="spent ε", tickformat=".3~g", rangemode="tozero")
    fig.update_layout(height=340, margin={"t": 40, "b": 50, "l": 60, "r": 20}, showlegend=True,
                      legend={"orientation": "h", "yanchor": "bottom", "y": 1.02, "x": 0})
    return fig
