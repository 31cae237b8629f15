"""Small static thumbnails of the data shapes for the home page (pure: data in, ``go.Figure`` out).

Each capability draws its own thumbnail in ``dpviz/viz/<capability>.py`` (its registry ``thumbnail`` hook,
:class:`dpviz.core.registry.Hooks`), with the figure builder its page already uses, then :func:`shrink`
strips it to a small picture (no title, legend, colour bar, axis titles or written cell values, tight
margins). :func:`thumbnail` dispatches through the hook and names no capability. Nothing here adds noise
or imports Streamlit.
"""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go

from dpviz.core.registry import CAPABILITIES, hook
from dpviz.errors import InputError

__all__ = ["THUMB_HEIGHT", "THUMB_MIN_FONT", "PLOT_CONFIG", "shrink", "thumbnail"]

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


def thumbnail(capability: str, data: Any) -> go.Figure:
    """The thumbnail of ``data``, a loaded sample of ``capability``: the capability's ``thumbnail`` hook
    (:meth:`dpviz.core.registry.Capability.hook`, by convention ``dpviz.viz.<capability>:thumbnail``)."""
    names = tuple(c.name for c in CAPABILITIES)
    if capability not in names:
        raise InputError(f"no thumbnail for capability {capability!r}; known: {', '.join(names)}")
    return hook(capability, "thumbnail")(data)
