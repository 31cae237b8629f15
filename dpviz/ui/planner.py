"""Pieces of the Planner page (pages/5_Planner.py) that are not figures: its tables' column settings.

``st.column_config`` entries for the plans table and the split table, and :func:`table_config`, which shows
as text every column :func:`dpviz.viz.planner.readable` turned into text (with empty cells, never "None").
"""

from __future__ import annotations

import streamlit as st

__all__ = ["PLAN_CONFIG", "SPLIT_CONFIG", "table_config"]

PLAN_CONFIG = {
    "mechanism": st.column_config.TextColumn("mechanism", help="The mechanism/strategy the plan is for."),
    "label": st.column_config.TextColumn("in words", width="medium"),
    "noise": st.column_config.TextColumn("noise", width="small"),
    "epsilon": st.column_config.NumberColumn("ε (simulation)", format="%.4g",
                                             help="The ε the simulation spends (exact Gaussian profile for (ε, δ))."),
    "release_epsilon": st.column_config.NumberColumn("ε (release)", format="%.4g",
                                                     help="The ε a discrete release needs at that δ (CKS)."),
    "rho": st.column_config.NumberColumn("ρ", format="%.4g", help="zCDP ρ of a Gaussian plan."),
    "rmse": st.column_config.NumberColumn("error", format="%.4g", help="The analytic error at the planned budget."),
    "budget": st.column_config.TextColumn("planned budget", help="What to give the release command."),
}
SPLIT_CONFIG = {
    "name": st.column_config.TextColumn("release", help="The planned release (a ready-made example)."),
    "capability": st.column_config.TextColumn("shape", width="small"),
    "mechanism": st.column_config.TextColumn("mechanism", help="The mechanism with the smallest error for it."),
    "weight": st.column_config.NumberColumn("weight wᵢ", width="small", format="%g"),
    "share": st.column_config.NumberColumn("share", width="small", format="percent", help="Its share of the total."),
    "epsilon": st.column_config.NumberColumn("εᵢ", width="small", format="%.4g"),
    "rho": st.column_config.NumberColumn("ρᵢ", width="small", format="%.4g"),
    "error": st.column_config.NumberColumn("error", width="small", format="%.4g",
                                           help="The error it gets at its share (RMSE, or the graph metric)."),
    "metric": st.column_config.TextColumn("error of", width="medium", help="What the error measures."),
}


def table_config(config: dict, gaps: list[str]) -> dict:
    """``config`` with every column that :func:`dpviz.viz.planner.readable` turned into text shown as text (a number
    column would show its empty cells as "None")."""
    out = dict(config)
    for col in gaps:
        old = config.get(col)
        out[col] = st.column_config.TextColumn(old["label"] if old else col, help=(old or {}).get("help"),
                                               width=(old or {}).get("width"))
    return out
