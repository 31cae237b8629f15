"""Figures of the histogram capability (pure: data in, ``go.Figure`` out; no noise, no Streamlit)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go

__all__ = ["bins_figure", "range_error_figure", "thumbnail"]

_COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b")


def bins_figure(labels: Sequence[str], true: np.ndarray | None, released: Mapping[str, np.ndarray], *,
                std: Mapping[str, np.ndarray] | None = None, title: str = "Count per bin") -> go.Figure:
    """Bars of the true counts (simulation only; None in a release) and a line per method's released counts,
    with ±1 analytic standard deviation as error bars where given."""
    fig = go.Figure()
    x = list(labels)
    if true is not None:
        fig.add_bar(x=x, y=np.asarray(true), name="true count", marker_color="#c7c7c7")
    for k, (name, values) in enumerate(released.items()):
        err = None if std is None or name not in std or not np.all(np.isfinite(std[name])) else \
            {"type": "data", "array": np.asarray(std[name]), "visible": True, "thickness": 1}
        fig.add_scatter(x=x, y=np.asarray(values), name=name, mode="lines+markers" if len(x) <= 60 else "lines",
                        line={"color": _COLOURS[k % len(_COLOURS)], "width": 1.5}, error_y=err)
    fig.update_layout(title=title, xaxis_title="bin", yaxis_title="count", height=380,
                      legend={"orientation": "h", "y": -0.25}, margin={"t": 50, "b": 40})
    fig.update_xaxes(type="category", nticks=min(len(x), 20))
    fig.update_yaxes(tickformat=",~r")
    return fig


def range_error_figure(table, title: str = "Error of each method (one simulated draw)") -> go.Figure:
    """Grouped bars: RMSE per bin and on random ranges of bins, per method (from ``simulate``'s table)."""
    fig = go.Figure()
    fig.add_bar(x=list(table["method"]), y=table["rmse_bins"], name="per bin")
    fig.add_bar(x=list(table["method"]), y=table["rmse_ranges"], name="on random ranges of bins")
    fig.update_layout(title=title, barmode="group", yaxis_title="root mean squared error", height=340,
                      legend={"orientation": "h", "y": -0.25}, margin={"t": 50, "b": 40})
    fig.update_yaxes(tickformat=",~r")
    return fig


def thumbnail(data) -> go.Figure:
    """The home page's thumbnail (the registry's ``thumbnail`` hook): the counts per declared bin."""
    from dpviz.viz.thumbnails import shrink

    fig = go.Figure(go.Bar(x=list(data.bins.labels), y=np.asarray(data.x), marker_color="#1f77b4"))
    fig.update_xaxes(type="category")
    return shrink(fig)
