"""Every dashboard chart goes through :func:`chart`: one Plotly template, no Streamlit re-theming.

Streamlit's default chart theme (``theme="streamlit"``) sends figures with placeholder colours that the
browser rewrites and re-themes after every rerun; measured in headless Chromium (bench/browser_latency.py)
that is a large part of an ε move's repaint. :func:`chart` draws with ``theme=None`` and the dashboard's own
template (:mod:`dpviz.viz.theme`, made the Plotly default when this module is imported, after Streamlit has
set its own), so a figure is drawn exactly as built.
"""

from __future__ import annotations

from typing import Any

import plotly.io as pio
import streamlit as st

from dpviz.viz import theme

__all__ = ["chart", "CONFIG"]

pio.templates.default = "dpviz"  # Streamlit's import set "streamlit" (placeholder colours); figures built from here on
CONFIG = {"displaylogo": False}


def chart(where: Any, fig: Any, *, key: str | None = None, width: str = "stretch",
          config: dict | None = None) -> Any:
    """Draw ``fig`` in ``where`` (``st``, a column, a tab, a container) with the dashboard template."""
    if getattr(fig.layout.template.layout, "font", None) is None or fig.layout.template.layout.font.family != theme.FONT:
        theme.apply(fig)  # built before the default was set (e.g. cached across imports)
    return where.plotly_chart(fig, key=key, width=width, theme=None, config=config or CONFIG)
