"""The dashboard's one Plotly template, applied by the page layer (:func:`dpviz.ui.chart`).

Streamlit's own chart theme ships figures with placeholder colours that the browser rewrites on every
draw (a walk over the whole figure per rerun) and re-themes each chart after it is drawn; with
``theme=None`` and this template the figure is drawn as sent. The values follow Streamlit's light theme
(its categorical and sequential palettes, text colour and grid), so the charts look as they did.
"""

from __future__ import annotations

import plotly.graph_objects as go
import plotly.io as pio

__all__ = ["TEMPLATE", "CATEGORICAL", "SEQUENTIAL", "DIVERGING", "apply"]

CATEGORICAL = ("#0068c9", "#83c9ff", "#ff2b2b", "#ffabab", "#29b09d", "#7defa1", "#ff8700", "#ffd16a",
               "#6d3fc0", "#d5dae5")
SEQUENTIAL = ("#e4f5ff", "#c7ebff", "#a6dcff", "#83c9ff", "#60b4ff", "#3d9df3", "#1c83e1", "#0068c9",
              "#0054a3", "#004280")
DIVERGING = ("#7d353b", "#bd4043", "#ff4b4b", "#ff8c8c", "#ffc7c7", "#a6dcff", "#60b4ff", "#1c83e1",
             "#0054a3", "#004280")
TEXT, GRID, LINE = "#31333f", "#e6eaf1", "#d5dae5"
FONT = '"Source Sans Pro", "Source Sans", sans-serif'


def _scale(colours: tuple[str, ...]) -> list[list]:
    return [[i / (len(colours) - 1), c] for i, c in enumerate(colours)]


def _template() -> go.layout.Template:
    # ticklabeloverflow "allow": plotly's default ("hide past div") measures every tick label's box once per label
    # drawn (a forced layout each) on every redraw; the margins leave the labels room, so nothing is hidden.
    axis = {"gridcolor": GRID, "linecolor": LINE, "zerolinecolor": GRID, "ticks": "", "automargin": True,
            "ticklabeloverflow": "allow", "title": {"standoff": 12, "font": {"size": 14}}, "tickfont": {"size": 12}}
    seq, div = _scale(SEQUENTIAL), _scale(DIVERGING)
    return go.layout.Template(
        data={"heatmap": [{"colorscale": seq}], "histogram2d": [{"colorscale": seq}],
              "contour": [{"colorscale": seq}], "scatter": [{"marker": {"line": {"width": 0}}}]},
        layout={"colorway": list(CATEGORICAL), "font": {"family": FONT, "color": TEXT, "size": 13},
                "paper_bgcolor": "rgba(0,0,0,0)", "plot_bgcolor": "rgba(0,0,0,0)",
                "title": {"font": {"size": 15}, "x": 0, "xanchor": "left", "pad": {"l": 4}},
                "legend": {"font": {"size": 12}}, "hoverlabel": {"font": {"family": FONT}},
                "colorscale": {"sequential": seq, "sequentialminus": seq, "diverging": div},
                "coloraxis": {"colorscale": seq}, "xaxis": axis, "yaxis": axis,
                "margin": {"l": 10, "r": 10, "t": 40, "b": 10}})


TEMPLATE = _template()
pio.templates["dpviz"] = TEMPLATE


def apply(fig: go.Figure) -> go.Figure:
    """Give ``fig`` the dashboard template (in place; returned for chaining)."""
    fig.layout.template = TEMPLATE
    return fig
