"""Every dashboard chart goes through :func:`chart`: one Plotly template, one Plotly instance updated in place.

Two costs of ``st.plotly_chart`` were measured in headless Chromium (bench/browser_latency.py) on an ε move:

* Streamlit's default chart theme sends figures with placeholder colours that the browser re-themes after
  every rerun. :func:`chart` uses the dashboard's own template (:mod:`dpviz.viz.theme`, made the Plotly default
  when this module is imported, after Streamlit has set its own), so a figure is drawn exactly as built.
* ``st.plotly_chart`` (Streamlit 1.67) derives a chart's element id from its figure, so a figure that changes
  is a *new* element: the browser unmounts the old chart and draws the new one with ``Plotly.newPlot``
  (~2,300 DOM mutations for a 4-line chart, against ~860 for ``Plotly.react``; with a stable id it keeps
  showing the old figure — streamlit/streamlit PR #16052, not released). So :func:`chart` draws through a
  small Streamlit component (``st.components.v2``, no iframe; ``assets/plotly_chart.js``): its identity is
  the chart's place on the page (or the caller's ``key``), and a new figure in the same place is applied to
  the same Plotly instance with ``Plotly.react``. plotly.js is the bundle the installed ``plotly`` package
  ships, served from this server by Streamlit's component route (never a CDN).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

import plotly
import plotly.io as pio
import streamlit as st
from streamlit.components import v1 as components_v1

from dpviz.viz import theme

__all__ = ["chart", "CONFIG", "KEY_PREFIX"]

pio.templates.default = "dpviz"  # Streamlit's import set "streamlit" (placeholder colours); figures built from here on
CONFIG = {"displaylogo": False}
KEY_PREFIX = "dpviz_chart:"
"""Prefix of every chart's element key (tests find charts by it)."""

_JS = (Path(__file__).with_name("assets") / "plotly_chart.js").read_text(encoding="utf-8")
_PLOTLY_DIR = Path(plotly.__file__).with_name("package_data")  # holds plotly.min.js, the plotly.js bundle
_component = st.components.v2.component("dpviz_plotly_chart", js=_JS, isolate_styles=False)


@lru_cache(maxsize=1)
def _plotly_route(base_url_path: str) -> str:
    return ("/" + base_url_path.strip("/") if base_url_path.strip("/") else "") + "/component/{}/plotly.min.js"


def _plotly_src() -> str:
    """The URL of plotly.min.js: the plotly package's own bundle on Streamlit's static component route
    (``declare_component`` registers the folder with the running server; it serves nothing else of ours)."""
    served = components_v1.declare_component("plotly_js", path=str(_PLOTLY_DIR))
    return _plotly_route(st.get_option("server.baseUrlPath") or "").format(served.name)


def chart(where: Any, fig: Any, *, key: str | None = None, width: str = "stretch",
          config: dict | None = None) -> Any:
    """Draw ``fig`` in ``where`` (``st``, a column, a tab, a container, a placeholder) with the dashboard
    template. A chart keeps its browser instance across reruns while it stays in the same place on the page
    (or under the same ``key``), and only the changes are drawn."""
    if getattr(fig.layout.template.layout, "font", None) is None or fig.layout.template.layout.font.family != theme.FONT:
        theme.apply(fig)  # built before the default was set (e.g. cached across imports)
    dg = st._main if where is st else where
    place = key or dg._get_delta_path_str()  # the position the next element takes: stable across reruns
    data = {"figure": fig.to_json(), "config": {"responsive": True, **(config or CONFIG)}, "src": _plotly_src()}
    if where is st:  # the active container (inside ``with st.expander(...)``, that expander)
        return _component(key=KEY_PREFIX + place, data=data, width=width)
    with where:
        return _component(key=KEY_PREFIX + place, data=data, width=width)
