"""Small static thumbnails of the four data shapes for the home page (pure: data in, ``go.Figure`` out).

Each thumbnail draws a capability's first bundled sample with the figure builder its page already
uses, then :func:`shrink` strips it to a small picture (no title, legend, colour bar, axis titles or
written cell values, tight margins). Nothing here adds noise or imports Streamlit.

* tree: the icicle of the top levels (:func:`dpviz.viz.tree.tree_figure`), e.g. US → region → division.
* stream: the count per period (one line): a continual release reports the running total after each.
* marginals: a 2-way marginal table of a categorical data set as a heatmap
  (:func:`dpviz.viz.heatmap.matrix_heatmap`).
* graph: the adjacency matrix (:func:`dpviz.viz.graph.adjacency_figure`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import plotly.graph_objects as go

from dpviz.errors import InputError
from dpviz.viz.graph import adjacency_figure
from dpviz.viz.heatmap import matrix_heatmap
from dpviz.viz.stream import minmax_index
from dpviz.viz.tree import tree_figure

__all__ = ["THUMB_HEIGHT", "THUMB_MIN_FONT", "PLOT_CONFIG", "shrink", "tree_thumbnail", "stream_thumbnail",
           "marginals_thumbnail", "graph_thumbnail", "THUMBNAILS", "thumbnail"]

THUMB_HEIGHT = 170
"""Height of a thumbnail in pixels."""
THUMB_MIN_FONT = 10
"""Smallest label font (px) a thumbnail draws; smaller labels are hidden."""
PLOT_CONFIG = {"staticPlot": True, "displayModeBar": False}
"""Plotly config for a thumbnail: a picture, no hover, zoom or toolbar."""


def shrink(fig: go.Figure, height: int = THUMB_HEIGHT) -> go.Figure:
    """``fig`` as a small picture: no title, legend, colour bars, axis titles, tick labels or cell text."""
    # labels too small to read at thumbnail size are hidden, not drawn as specks
    fig.update_layout(title=None, showlegend=False, height=int(height), margin={"t": 4, "l": 4, "r": 4, "b": 4},
                      uniformtext={"minsize": THUMB_MIN_FONT, "mode": "hide"})
    fig.update_xaxes(title=None, showticklabels=False)
    fig.update_yaxes(title=None, showticklabels=False)
    for trace in fig.data:
        if trace.type == "heatmap":
            trace.update(showscale=False, text=None, texttemplate=None)
        elif trace.type == "icicle":
            trace.update(marker={"showscale": False}, textinfo="label")
    return fig


def tree_thumbnail(data: Any, levels: int = 3) -> go.Figure:
    """Icicle of the top ``levels`` levels (the root is level 1) of a :class:`dpviz.tree.io.TreeData`,
    sized by the true counts, drawn top-down like a hierarchy."""
    fig = tree_figure(data.tree, data.v, max_depth=levels, visible_levels=levels)
    fig.update_traces(tiling={"orientation": "v"})
    return shrink(fig)


def stream_thumbnail(data: Any) -> go.Figure:
    """The count per period of a :class:`dpviz.stream.io.StreamData` (time on x when it has timestamps)."""
    counts = np.asarray(data.counts, dtype=float)
    if counts.size == 0:
        raise InputError("stream thumbnail: the stream is empty")
    idx = minmax_index(counts, 400)
    x = idx + 1 if data.timestamps is None else np.asarray(data.timestamps)[idx]
    fig = go.Figure(go.Scatter(x=x, y=counts[idx], mode="lines", line={"width": 1.2}))
    return shrink(fig)


def marginals_thumbnail(data: Any, clique: tuple[int, int] | None = None) -> go.Figure:
    """Heatmap of the 2-way marginal ``clique`` of a :class:`dpviz.marginals.domain.Dataset` (default:
    the first and the last attribute, e.g. age × income for UCI Adult)."""
    d = data.domain.d
    if d < 2:
        raise InputError("marginals thumbnail: the data set needs at least two attributes")
    a, b = (0, d - 1) if clique is None else sorted(int(i) for i in clique)
    if not 0 <= a < b < d:
        raise InputError(f"marginals thumbnail: clique {clique!r} is not two distinct attributes of 0..{d - 1}")
    table = data.marginal((a, b)).reshape(data.domain.sizes[a], data.domain.sizes[b])
    return shrink(matrix_heatmap(table, row_name=data.domain.attrs[a], col_name=data.domain.attrs[b]))


def graph_thumbnail(data: Any) -> go.Figure:
    """The adjacency matrix of a :class:`dpviz.graph.model.Graph` (a density raster for big graphs)."""
    return shrink(adjacency_figure(data.edges, data.n_nodes))


THUMBNAILS: dict[str, Callable[[Any], go.Figure]] = {
    "tree": tree_thumbnail,
    "stream": stream_thumbnail,
    "marginals": marginals_thumbnail,
    "graph": graph_thumbnail,
}
"""Capability name (:data:`dpviz.core.registry.CAPABILITIES`) → thumbnail builder of its data."""


def thumbnail(capability: str, data: Any) -> go.Figure:
    """The thumbnail of ``data``, a loaded sample of ``capability``."""
    try:
        build = THUMBNAILS[capability]
    except KeyError:
        raise InputError(f"no thumbnail for capability {capability!r}; known: {', '.join(THUMBNAILS)}") from None
    return build(data)
