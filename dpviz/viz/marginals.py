"""Figures and small tables for the Marginals page (pure: data in, ``go.Figure`` / DataFrame out).

* Error tables: :func:`per_marginal_errors` (one row per method × workload marginal, with the analytic
  per-cell σ of the unbiased reconstructions and the share of cells inside ±2σ) and
  :func:`method_summary` (the pipeline's metrics table, labelled and ordered).
* :func:`per_marginal_error_figure`: per-cell RMSE of every method for each marginal, with the analytic
  σ_γ and 2σ_γ marks of GReM-MLE / EMP (every cell of an unbiased reconstruction has the same variance,
  digest §1.5).
* :func:`marginal_explorer_figure`: true vs noisy/MLE vs reconstructed for one marginal (grouped bars
  for 1-way, side-by-side heatmaps for 2-way, small multiples for 3-way).
* :func:`lnn_convergence_figure`: the dual objective and the negative mass of GReM-LNN per iteration.
* The teaching view on a tiny domain (:func:`teaching_figures`, :func:`orthogonality_table`): D, D⁺,
  R_τ, A_{γ,τ} = M_γ R_τ⁺ through :func:`dpviz.viz.heatmap.matrix_heatmap`, and R_τ R_τ'ᵀ = 0.
* Download tables: :func:`marginals_long_table` (one row per marginal cell, one column per series).

Marginals are flattened row-major with axes in increasing attribute order (:mod:`dpviz.marginals.model`).
Nothing here imports Streamlit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import combinations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from dpviz.errors import InputError
from dpviz.marginals.model import Clique, Domain, axis_labels, cell_labels, clique_label
from dpviz.viz.heatmap import HEATMAP_MAX, matrix_heatmap

__all__ = [
    "MAX_BARS", "MAX_EXPLORER_TICKS", "TEACHING_MAX_CELLS", "METHOD_SHORT", "method_label", "method_choice",
    "clique_label", "cell_labels", "axis_labels",
    "per_marginal_errors", "method_summary", "method_error_table", "method_error_view", "ERROR_COLUMNS",
    "NO_CLOSED_FORM", "NOT_IN_DRAW",
    "per_marginal_error_figure", "HUMAN_TICKS",
    "marginal_explorer_figure", "lnn_convergence_figure",
    "teaching_matrices", "teaching_figures", "orthogonality_table", "orthogonality_figure",
    "marginals_long_table", "thumbnail", "EXPLAINER", "STOP_WORDS", "LNN_WORDS",
    "simulation_payload", "lnn_settings_text", "lnn_run_text",
]

MAX_EXPLORER_TICKS = 60
"""Most column labels under the marginal explorer's panels (all panels together): beyond, every k-th."""
MAX_BARS = 60
"""Most marginals drawn in the per-marginal error chart (the worst ones when the workload is bigger)."""
TEACHING_MAX_CELLS = HEATMAP_MAX
"""Largest universe n = ∏ n_k of the teaching view (R_τ and M_γ have n columns)."""

EXPLAINER = (
    "Every figure comes from **one noisy measurement** of the data (ResidualPlanner: every residual of the "
    "workload's downward closure, Alg. 1; or Scalable MWEM, Alg. 7), which each method then post-processes "
    "for free. Paper: Mullins et al., *Efficient and Private Marginal Reconstruction with Local "
    "Non-Negativity*, NeurIPS 2024.\n\n"
    "- **Error per method** (table): how far each reconstruction is from the true marginals, per cell. "
    "GReM-MLE adds up the measured residuals, μ̂_γ = Σ_(τ⊆γ) A_(γ,τ) α̂_τ (Prop. 1, Alg. 3; called EMP, "
    "Alg. 4, on marginal measurements): unbiased, but some counts come out negative. GReM-LNN solves the "
    "same fit with every workload cell ≥ 0 (Eq. 8; Eq. 9 adds a regulariser for Scalable MWEM) by dual "
    "ascent (Alg. 6). Trunc and Trunc+Rescale simply clip the GReM-MLE counts at zero (§5 baselines).\n"
    "- **Error per workload marginal** (bars): the root-mean-square error of each marginal's cells. The "
    "black marks are GReM-MLE's expected error σ_γ and 2σ_γ, computed from the noise alone "
    "(Σ_(τ⊆γ) σ_τ² × a factor per attribute; rem-digest §1.5): about 95 % of its cells land within ±2σ_γ.\n"
    "- **Marginal explorer**: the true table next to each reconstruction; red cells are negative counts.\n"
    "- **GReM-LNN dual ascent**: the dual objective g(λ) rises while the multipliers take projected steps "
    "λ ← min(λ + s·μ, 0) (Alg. 6), and the negative mass (the counts still below zero) falls; the run stops "
    "once it is below 1 count.\n"
    "- **Teaching view**: on three toy attributes, the difference matrix D and its pseudo-inverse D⁺, the "
    "residual query R_τ (a Kronecker product of D and rows of ones) and A_(γ,τ) = M_γ R_τ⁺, the piece of "
    "residual τ inside marginal γ (Prop. 1). Residuals of different τ are orthogonal, so together they "
    "form a basis (rem-digest §1.3).")
"""The page's "What am I looking at?" text: one paragraph per figure, the paper's algorithm or equation beside it."""
STOP_WORDS = {
    "negative_mass": "stopped because the counts below zero summed to less than 1",
    "complementary_slackness": "stopped because complementary slackness held",
    "rounds": "ran its maximum number of iterations", "time_limit": "stopped at the time limit",
    "callback": "stopped on request"}
"""Why GReM-LNN stopped, in words, by its ``stop_reason``."""
LNN_WORDS = {
    "rounds": "at most {v:,.0f} iterations (T)", "step": "step size s = {v:g}",
    "lam0": "starting multiplier λ₀ = {v:g}", "eta": "weight of unmeasured residuals η = {v:g}",
    "time_limit": "time limit {v:g} s"}
"""GReM-LNN's settings (paper App. H) in words, by option name."""

SIGMA_COLOR = "black"
METHOD_SHORT = {"mle": "GReM-MLE", "lnn": "GReM-LNN", "trunc": "Trunc", "trunc-rescale": "Trunc+Rescale"}
"""Short names of the reconstruction methods of :mod:`dpviz.marginals.release` (for legends and tables)."""


def method_label(method: str, mechanism: str = "rp") -> str:
    """'GReM-MLE' on ResidualPlanner, 'EMP' on Scalable MWEM (the same estimator on marginal
    measurements), the short name of the other methods."""
    if method == "mle" and mechanism == "mwem":
        return "EMP"
    return METHOD_SHORT.get(method, method)


def method_choice(method: str) -> str:
    """A method as the page's pickers name it, whatever the mechanism: 'GReM-MLE / EMP' for the unbiased one.
    A picker's option labels must not change with another widget: the browser holds a multiselect's or
    select box's choice by its labels and sends them back on the next change, so a label that changed with the
    mechanism (GReM-MLE → EMP) would silently drop the method from the selection."""
    return "GReM-MLE / EMP" if method == "mle" else METHOD_SHORT.get(method, method)


# ---- labels ---------------------------------------------------------------------------------------
def _label(labels: Mapping[str, str] | None, key: str) -> str:
    return (labels or {}).get(key, key)


# ---- error tables ---------------------------------------------------------------------------------
def per_marginal_errors(
    domain: Domain,
    truth: Mapping[Clique, np.ndarray],
    estimates: Mapping[str, Mapping[Clique, np.ndarray]],
    variance: Mapping[str, Mapping[Clique, float] | None] | None = None,
    labels: Mapping[str, str] | None = None,
) -> pd.DataFrame:
    """One row per (method, marginal γ) in workload order: cells n_γ, per-cell RMSE ‖e‖₂/√n_γ,
    mean |error| ‖e‖₁/n_γ, max |error|, negative cells, and — for a method with an analytic per-cell
    variance v_γ (GReM-MLE, EMP) — ``sigma`` = √v_γ and ``within 2σ``, the share of cells whose error
    lies in ±2σ_γ (about 95 % for Gaussian noise)."""
    rows = []
    for method, est in estimates.items():
        var = (variance or {}).get(method) or {}
        for g, mu in truth.items():
            mu = np.asarray(mu, dtype=float)
            e = np.asarray(est[g], dtype=float) - mu
            n = e.size
            v = var.get(g)
            sigma = float(np.sqrt(v)) if v is not None else np.nan
            rows.append({
                "method": _label(labels, method), "key": method, "marginal": clique_label(domain, g),
                "clique": tuple(g), "cells": n,
                "rmse per cell": float(np.sqrt(np.mean(e * e))),
                "mean |error| per cell": float(np.mean(np.abs(e))),
                "max |error|": float(np.max(np.abs(e))),
                "negative cells": int(np.sum(np.asarray(est[g]) < 0)),
                "sigma": sigma,
                "within 2σ": float(np.mean(np.abs(e) <= 2.0 * sigma)) if v is not None else np.nan,
            })
    cols = ["method", "key", "marginal", "clique", "cells", "rmse per cell", "mean |error| per cell",
            "max |error|", "negative cells", "sigma", "within 2σ"]
    return pd.DataFrame(rows, columns=cols)


def method_summary(table: pd.DataFrame, labels: Mapping[str, str] | None = None,
                   method_col: str = "method", baseline: str | None = None,
                   error_col: str | None = None) -> pd.DataFrame:
    """The pipeline's metrics table (one row per method) with readable method names and, when
    ``baseline`` is one of the methods, the ratio of each method's ``error_col`` to the baseline's."""
    df = table.copy()
    keys = list(df[method_col])
    df[method_col] = [_label(labels, str(m)) for m in keys]
    if baseline is not None and error_col is not None and baseline in keys and error_col in df:
        base = float(df[error_col].iloc[keys.index(baseline)])
        df[f"{error_col} / {_label(labels, baseline)}"] = df[error_col].to_numpy(float) / base if base else np.nan
    return df.reset_index(drop=True)


ERROR_COLUMNS = {
    "l1": ("|error| (ℓ1)",
           "Average over the workload marginals γ of ‖μ̂_γ − μ_γ‖₁ / n_γ: how many counts a cell is off, on average."),
    "ratio": ("ℓ1 ÷ {base}",
              "This method's ℓ1 error divided by {base}'s on the same draw (below 1: better than {base})."),
    "l2": ("ℓ2 per cell", "Average over γ of ‖μ̂_γ − μ_γ‖₂ / n_γ: like ℓ1, but large errors weigh more."),
    "negative_cells": ("negative cells", "Cells below zero (a count cannot be negative). GReM-LNN, Trunc and "
                                         "Trunc+Rescale never have any."),
    "negative_mass": ("negative mass", "The counts below zero, summed over the workload cells (Σ |negative cells|)."),
    "analytic_variance": ("variance σ²", "Analytic per-cell variance of the unbiased GReM-MLE / EMP estimate, "
                                                        "averaged over the cells: computed from the noise scales "
                                                        "alone, no truth needed. The other methods are biased and "
                                                        "have no closed form."),
    "seconds": ("seconds", "Time of the reconstruction (Trunc and Trunc+Rescale include the GReM-MLE they start "
                           "from)."),
}
"""Error-table columns: pipeline name -> (plain-words label with the symbol, one-line help)."""
NO_CLOSED_FORM = "no closed form"


def method_error_table(table: pd.DataFrame, labels: Mapping[str, str] | None = None,
                       baseline: str | None = None) -> tuple[pd.DataFrame, dict[str, str]]:
    """The pipeline's metrics table (:meth:`Simulation.table`) for people: one row per method, columns named
    in plain words (:data:`ERROR_COLUMNS`), the ℓ1 ratio to ``baseline`` when it is one of the methods, and
    the analytic variance as text ('no closed form' for the methods that have none: never a blank NaN).
    Returns (table, {column: help})."""
    keys = [str(m) for m in table["method"]]
    out = pd.DataFrame({"method": [_label(labels, k) for k in keys]})
    helps = {"method": "Reconstruction method; all of them post-process the same noisy measurements."}
    for col in ("l1", "ratio", "l2", "negative_cells", "negative_mass", "analytic_variance", "seconds"):
        name, text = ERROR_COLUMNS[col]
        if col == "ratio":
            if baseline is None or baseline not in keys:
                continue
            base = _label(labels, baseline)
            name, text = name.format(base=base), text.format(base=base)
            ref = float(table["l1"].iloc[keys.index(baseline)])
            values = table["l1"].to_numpy(float) / ref if ref else np.full(len(keys), np.nan)
            out[name] = [f"{v:.3g}" if np.isfinite(v) else "not defined (zero error)" for v in values]
        elif col == "analytic_variance":
            out[name] = [f"{v:.4g}" if np.isfinite(v) else NO_CLOSED_FORM for v in table[col].to_numpy(float)]
        elif col in table:
            out[name] = table[col].to_numpy()
        else:
            continue
        helps[name] = text
    return out, helps


NOT_IN_DRAW = "waits for the Run button"
"""The cells of a selected method that is not in the shown draw (:func:`method_error_view`)."""


def method_error_view(table: pd.DataFrame, labels: Mapping[str, str] | None = None, baseline: str | None = None,
                      waiting: Sequence[str] = ()) -> tuple[pd.DataFrame, dict[str, str]]:
    """:func:`method_error_table` as text for a static table (``st.table``: every column shown whole at 1280 px,
    cheaper for the browser to redraw than a data grid): numbers to 4 significant digits (counts with thousands
    separators), never "None"/"nan"; one row more per method of ``waiting`` (selected, not in this draw: its
    first cell :data:`NOT_IN_DRAW`, the others "—"), so the table keeps one size with or without it.
    Returns (table, {column: help})."""
    view, helps = method_error_table(table, labels, baseline)
    out = pd.DataFrame(index=view.index)
    for col in view.columns:
        values = view[col]
        if values.dtype.kind in "iu":
            out[col] = [f"{int(v):,}" for v in values]
        elif values.dtype.kind == "f":
            out[col] = [format(float(v), ".4g") if np.isfinite(v) else "—" for v in values]
        else:
            out[col] = [str(v) for v in values]
    if len(waiting):
        rest = list(out.columns[1:])
        extra = pd.DataFrame([{out.columns[0]: _label(labels, m), **{c: (NOT_IN_DRAW if i == 0 else "—")
                                                                     for i, c in enumerate(rest)}}
                              for m in waiting], columns=out.columns)
        out = pd.concat([out, extra], ignore_index=True)
    return out.reset_index(drop=True), helps


def per_marginal_error_figure(errors: pd.DataFrame, *, max_bars: int = MAX_BARS,
                              title: str = "Error per workload marginal") -> go.Figure:
    """Grouped bars: per-cell RMSE of every method for each marginal (from :func:`per_marginal_errors`).
    For methods with an analytic variance, black marks at σ_γ (the expected per-cell RMSE) and at 2σ_γ
    (about 95 % of the cell errors lie within ±2σ_γ). More than ``max_bars`` marginals: the
    ``max_bars`` with the largest error (over the methods) are drawn, in workload order."""
    fig = go.Figure()
    if errors.empty:
        fig.update_layout(title=title)
        return fig
    marginals = list(dict.fromkeys(errors["marginal"]))
    shown = marginals
    if len(marginals) > max_bars:
        worst = errors.groupby("marginal", sort=False)["rmse per cell"].max()
        keep = set(worst.sort_values(ascending=False).index[:max_bars])
        shown = [m for m in marginals if m in keep]
        title = f"{title} (the {max_bars} worst of {len(marginals)})"
    sub = errors[errors["marginal"].isin(set(shown))]
    traces = []  # dicts, validated once by go.Figure (add_trace per trace cost ~8 ms each on every ε move)
    groups = [(str(method), g.set_index("marginal").loc[shown]) for method, g in sub.groupby("method", sort=False)]
    for method, g in groups:
        traces.append(dict(type="bar", x=shown, y=g["rmse per cell"].to_numpy(float), name=method, legendgroup=method,
                           customdata=np.stack([g["cells"].to_numpy(float), g["max |error|"].to_numpy(float)], -1),
                           hovertemplate="%{x}<br>RMSE per cell %{y:.4g}<br>cells %{customdata[0]:,}"
                                         "<br>max |error| %{customdata[1]:.4g}<extra>" + method + "</extra>"))
    for method, g in groups:
        s = g["sigma"].to_numpy(float)
        if not np.isfinite(s).any():
            continue
        within = g["within 2σ"].to_numpy(float)
        traces.append(dict(type="scatter", x=shown, y=s, mode="markers", name=f"{method}: analytic σ",
                           marker=dict(symbol="line-ew-open", size=16, color=SIGMA_COLOR, line=dict(width=2)),
                           hovertemplate="%{x}: analytic σ per cell %{y:.4g}<extra></extra>"))
        traces.append(dict(type="scatter", x=shown, y=2 * s, mode="markers", name=f"{method}: analytic 2σ",
                           marker=dict(symbol="line-ew-open", size=16, color=SIGMA_COLOR,
                                       line=dict(width=2, dash="dot")),
                           customdata=within,
                           hovertemplate="%{x}: 2σ = %{y:.4g}; %{customdata:.0%} of the cells within ±2σ"
                                         "<extra></extra>"))
    fig = go.Figure(data=traces)
    fig.update_layout(barmode="group", title=title, height=420, margin=dict(t=60, l=10, r=10, b=10),
                      legend=dict(orientation="h", yanchor="bottom", y=1.02, x=0))
    fig.update_xaxes(type="category", tickangle=-45)
    fig.update_yaxes(title="RMS error per cell (RMSE)", rangemode="tozero", tickformat=HUMAN_TICKS)
    return fig


# ---- marginal explorer ----------------------------------------------------------------------------
NEGATIVE_COLOR = "rgb(178,24,43)"
ZERO_COLOR = "rgb(247,251,255)"
POSITIVE_COLOR = "rgb(8,48,107)"


def _color_range(series: Mapping[str, np.ndarray]) -> dict:
    """One colour axis for every panel: white at 0, blue for counts, red for negative cells (the
    negative side only as long as the most negative cell, so small negatives do not wash out the counts)."""
    lo = min(float(np.min(v)) for v in series.values())
    hi = max(max(float(np.max(v)) for v in series.values()), 1e-12)
    if lo < 0:
        f = -lo / (hi - lo)
        return dict(colorscale=[[0.0, NEGATIVE_COLOR], [f, ZERO_COLOR], [1.0, POSITIVE_COLOR]], cmin=lo, cmax=hi)
    return dict(colorscale=[[0.0, ZERO_COLOR], [1.0, POSITIVE_COLOR]], cmin=0.0, cmax=hi)


def marginal_explorer_figure(domain: Domain, clique: Clique, series: Mapping[str, np.ndarray],
                             categories: Sequence[Sequence[str]] | None = None) -> go.Figure:
    """One marginal, several versions of it (e.g. true, GReM-MLE, GReM-LNN): grouped bars for a
    1-way (or 0-way) marginal; side-by-side heatmaps on one colour scale for a 2-way marginal (rows:
    the first attribute, columns: the second). A 3-way marginal is drawn the same way, one heatmap per
    version, its rows the pairs (first other attribute, attribute with the fewest values) and its columns
    the remaining attribute: one panel per version keeps the figure light enough to redraw on every ε move."""
    g = tuple(clique)
    if not series:
        raise InputError("marginal explorer: nothing to show")
    if len(g) > 3:
        raise InputError(f"marginal explorer: {len(g)}-way marginals are not drawn (1-, 2- and 3-way only)")
    shape = domain.shape(g)
    arrays = {k: np.asarray(v, dtype=float).reshape(shape) for k, v in series.items()}
    name = clique_label(domain, g)
    if len(g) <= 1:
        x = axis_labels(domain, g[0], categories) if g else ["total"]
        fig = go.Figure([go.Bar(x=x, y=a.reshape(-1), name=k,
                                hovertemplate="%{x}: %{y:,.4g}<extra>" + k + "</extra>")
                         for k, a in arrays.items()])
        fig.update_layout(barmode="group", title=f"{name}: {len(x)} cells", height=420,
                          margin=dict(t=60, l=10, r=10, b=10),
                          legend=dict(orientation="h", yanchor="bottom", y=1.02, x=0))
        fig.update_xaxes(type="category", title=domain.attrs[g[0]] if g else "")
        fig.update_yaxes(title="count", tickformat=HUMAN_TICKS)
        return fig
    if len(g) == 2:
        rows, cols = axis_labels(domain, g[0], categories), axis_labels(domain, g[1], categories)
        row_title, hover_row = domain.attrs[g[0]], f"{domain.attrs[g[0]]}=%{{y}}"
        title = f"{name}: {int(np.prod(shape)):,} cells"
    else:
        s = int(np.argmin(shape))  # the attribute with the fewest values joins the rows
        ra, ca = (i for i in range(3) if i != s)
        row_labels, slice_labels = axis_labels(domain, g[ra], categories), axis_labels(domain, g[s], categories)
        rows = [f"{r} · {v}" for r in row_labels for v in slice_labels]
        cols = axis_labels(domain, g[ca], categories)
        arrays = {k: np.moveaxis(a, (ra, s, ca), (0, 1, 2)).reshape(len(rows), len(cols)) for k, a in arrays.items()}
        row_title = f"{domain.attrs[g[ra]]} · {domain.attrs[g[s]]}"
        hover_row = f"{row_title}=%{{y}}"
        g = (g[ra], g[ca])  # the columns' attribute for the axis title below
        title = f"{name}: {int(np.prod(shape)):,} cells (rows {row_title}, columns {domain.attrs[g[1]]})"
    # one row of panels on ONE pair of axes: panel j's columns sit at x = j (m + 1) + 0 .. m - 1, a blank column
    # between panels. One subplot instead of one per version: Plotly redraws one set of axes, clip paths and
    # layers instead of five on every change (headless Chromium, five panels: 2,546 -> 1,470 DOM changes per
    # redraw of titanic's first 3-way marginal, 2,445 -> 1,151 of a 2-way one; issue 19), and no make_subplots /
    # per-panel update_xaxes (~80 ms of Plotly validation per figure)
    n, m = len(arrays), len(cols)
    col_attr = domain.attrs[g[1]]
    hover_cols = np.broadcast_to(np.asarray(cols, dtype=object), (len(rows), m))  # each cell's column label
    step = max(1, -(-n * m // MAX_EXPLORER_TICKS))  # every step-th column label when they would crowd
    traces, ticks, annotations = [], [], []
    for j, (k, a) in enumerate(arrays.items()):
        x = [j * (m + 1) + i for i in range(m)]
        traces.append(dict(type="heatmap", z=a, x=x, y=rows, coloraxis="coloraxis", name=k, customdata=hover_cols,
                           hovertemplate=f"{hover_row}, {col_attr}=%{{customdata}}: %{{z:,.4g}}<extra>{k}</extra>"))
        ticks += x[::step]
        annotations.append(dict(text=k, x=j * (m + 1) + (m - 1) / 2, y=1.0, xref="x", yref="paper",
                                xanchor="center", yanchor="bottom", showarrow=False, font=dict(size=12)))
    labels = [str(c) for c in cols]
    layout = dict(
        title=dict(text=title), coloraxis=_color_range(arrays), annotations=annotations,
        height=min(700, max(360, 14 * len(rows) + 200)), margin=dict(t=90, l=10, r=10, b=10),
        xaxis=dict(tickmode="array", tickvals=ticks, ticktext=[labels[t % (m + 1)] for t in ticks],
                   range=[-0.5, n * (m + 1) - 1.5], showgrid=False, zeroline=False,
                   title=dict(text=col_attr if n == 1 else f"{col_attr} (in every panel)")),
        yaxis=dict(type="category", autorange="reversed", showgrid=False, title=dict(text=row_title)))
    return go.Figure(data=traces, layout=layout)


# ---- GReM-LNN convergence -------------------------------------------------------------------------
HUMAN_TICKS = ",.4~r"
"""Tick labels for counts and objective values: at most 4 significant digits, thousands separators, no
exponent, no SI prefix (never '132.6096874499884279' or '20f')."""


def _flat_range(values: np.ndarray, rel: float = 1e-3) -> list[float] | None:
    """A y range around ``values`` when they vary by less than ``rel`` of their size (a line that is flat
    to the eye), so the axis gets a few round ticks instead of labels differing in the 12th digit."""
    v = values[np.isfinite(values)]
    if v.size == 0:
        return None
    lo, hi = float(v.min()), float(v.max())
    mid, size = (lo + hi) / 2, max(abs(lo), abs(hi), 1.0)
    if hi - lo >= rel * size:
        return None
    pad = max(rel * size, 1e-3)
    return [mid - pad, mid + pad]


def lnn_convergence_figure(history, title: str = "GReM-LNN dual ascent") -> go.Figure:
    """Dual objective (top) and negative mass Σ_γ Σ_cells max(−μ_γ, 0) of the current reconstruction
    (bottom) against the iteration (Alg. 6's projected dual ascent). ``history``: rows (iteration, dual
    objective, negative mass) or a DataFrame with those three columns (named ``iteration``,
    ``dual objective``, ``negative mass``). Ticks for people (:data:`HUMAN_TICKS`); a dual objective flat
    to the eye gets a range around it; negative masses below 10⁻⁹ (rounding) are drawn as 0."""
    if isinstance(history, pd.DataFrame):
        it, dual, neg = (history[c].to_numpy(float) for c in ("iteration", "dual objective", "negative mass"))
    else:
        a = np.asarray(list(history), dtype=float).reshape(-1, 3)
        it, dual, neg = a[:, 0], a[:, 1], a[:, 2]
    neg = np.abs(neg)
    neg[neg < 1e-9] = 0.0
    mode = "lines+markers" if it.size <= 30 else "lines"
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.16,
                        subplot_titles=("dual objective (rises to the optimum)",
                                        "negative mass: counts below zero (falls to 0)"))
    fig.add_trace(go.Scatter(x=it, y=dual, mode=mode, name="dual objective",
                             hovertemplate="iteration %{x:,}: dual objective %{y:,.8~g}<extra></extra>"), row=1, col=1)
    fig.add_trace(go.Scatter(x=it, y=neg, mode=mode, name="negative mass",
                             hovertemplate="iteration %{x:,}: negative mass %{y:,.4~g}<extra></extra>"), row=2, col=1)
    fig.update_xaxes(tickformat=",d")
    fig.update_xaxes(title="iteration", row=2, col=1)
    fig.update_yaxes(tickformat=HUMAN_TICKS, nticks=5)
    flat = _flat_range(dual)
    if flat is not None:
        fig.update_yaxes(range=flat, row=1, col=1)
    fig.update_yaxes(rangemode="tozero", row=2, col=1)
    fig.update_layout(title=dict(text=title + (f": {int(it[-1]):,} iterations" if it.size else ""), y=0.98,
                                 yanchor="top"),
                      height=440, showlegend=False, margin=dict(t=80, l=10, r=10, b=10))
    return fig


# ---- teaching view --------------------------------------------------------------------------------
def _subset_label(domain: Domain, t: Clique) -> str:
    return "{" + ",".join(domain.names(t)) + "}" if t else "∅"


def teaching_matrices(domain: Domain, gamma: Clique, tau: Clique) -> dict[str, np.ndarray]:
    """Dense D_(k), D_(k)⁺ (k = the first attribute of τ, else of γ, else 0), M_γ, R_τ and
    A_{γ,τ} = M_γ R_τ⁺ on a tiny domain (n = ∏ n_k ≤ :data:`TEACHING_MAX_CELLS`), from the dense
    builders of :mod:`dpviz.marginals.residuals`. τ must be a subset of γ."""
    from dpviz.marginals import residuals as R

    gamma, tau = tuple(sorted(gamma)), tuple(sorted(tau))
    n = int(np.prod(domain.sizes))
    if n > TEACHING_MAX_CELLS:
        raise InputError(f"teaching view: the universe has {n:,} cells; at most {TEACHING_MAX_CELLS} "
                         "(pick smaller attributes)")
    if not set(tau) <= set(gamma):
        raise InputError(f"teaching view: τ = {_subset_label(domain, tau)} is not a subset of "
                         f"γ = {_subset_label(domain, gamma)}")
    pool = tau or gamma or (0,)
    k = max(pool, key=lambda i: (domain.sizes[i], -i))  # the largest attribute of τ (else γ): the richest D
    d = np.asarray(R.dense_D(domain.sizes[k]), dtype=float)
    m = np.asarray(R.dense_marginal_matrix(domain, gamma), dtype=float)
    r = np.asarray(R.dense_residual_matrix(domain, tau), dtype=float)
    a = m @ np.linalg.pinv(r)
    a[np.abs(a) < 1e-12] = 0.0
    dp = np.linalg.pinv(d)
    dp[np.abs(dp) < 1e-12] = 0.0
    return {"k": k, "D": d, "D+": dp, "M": m, "R": r, "A": a}


def _universe_labels(domain: Domain) -> list[str]:
    return ["".join(str(v) for v in idx) for idx in np.ndindex(*domain.sizes)]


def teaching_figures(domain: Domain, gamma: Clique, tau: Clique) -> dict[str, go.Figure]:
    """Heatmaps (via :func:`matrix_heatmap`) of D_(k), D_(k)⁺, R_τ and A_{γ,τ} for the teaching view;
    universe cells are labelled by their codes ('021' = attribute values 0, 2, 1)."""
    mats = teaching_matrices(domain, gamma, tau)
    k = mats["k"]
    nk, attr = domain.sizes[k], domain.attrs[k]
    g, t = _subset_label(domain, gamma), _subset_label(domain, tau)
    uni = _universe_labels(domain)
    cells = cell_labels(domain, tuple(sorted(gamma)))
    figs = {
        "D": matrix_heatmap(mats["D"], f"D for {attr} (n = {nk}): (Dv)ᵢ = vᵢ − vᵢ₊₁", row_name="row",
                            col_name=f"{attr} value", col_labels=range(nk)),
        "D+": matrix_heatmap(mats["D+"], f"D⁺ for {attr}: (D⁺)ᵢⱼ = 1[i ≤ j] − j/n", row_name=f"{attr} value",
                             col_name="column", row_labels=range(nk)),
        "R": matrix_heatmap(mats["R"], f"R_τ for τ = {t} ({mats['R'].shape[0]} × {mats['R'].shape[1]})",
                            row_name="residual row", col_name="universe cell", col_labels=uni),
        "A": matrix_heatmap(mats["A"], f"A_(γ,τ) = M_γ R_τ⁺ for γ = {g}, τ = {t}", row_name="γ cell",
                            col_name="residual row", row_labels=cells),
    }
    for fig in figs.values():  # the title above the top x axis and its title
        fig.update_layout(title=dict(y=0.99, yanchor="top", font=dict(size=14)),
                          margin=dict(t=fig.layout.margin.t + 40), height=fig.layout.height + 40)
    return figs


def orthogonality_table(domain: Domain) -> pd.DataFrame:
    """‖R_τ R_τ'ᵀ‖_F for every pair of attribute subsets τ, τ' of a tiny domain (zero off the
    diagonal: the residual queries are mutually orthogonal), with the row counts m_τ."""
    from dpviz.marginals import residuals as R

    n = int(np.prod(domain.sizes))
    if n > TEACHING_MAX_CELLS:
        raise InputError(f"teaching view: the universe has {n:,} cells; at most {TEACHING_MAX_CELLS}")
    taus = [t for r in range(domain.d + 1) for t in combinations(range(domain.d), r)]
    mats = {t: np.asarray(R.dense_residual_matrix(domain, t), dtype=float) for t in taus}
    labels = [_subset_label(domain, t) for t in taus]
    norms = np.array([[np.linalg.norm(mats[a] @ mats[b].T) for b in taus] for a in taus])
    df = pd.DataFrame(norms, index=labels, columns=labels)
    df.insert(0, "m_τ", [mats[t].shape[0] for t in taus])
    df.index.name = "τ"
    return df


def orthogonality_figure(table: pd.DataFrame) -> go.Figure:
    """Heatmap of ‖R_τ R_τ'ᵀ‖_F (from :func:`orthogonality_table`): only the diagonal is non-zero."""
    norms = table.drop(columns="m_τ")
    return matrix_heatmap(norms.to_numpy(float), "‖R_τ R_τ'ᵀ‖_F: zero for τ ≠ τ'",
                          row_labels=list(norms.index), col_labels=list(norms.columns), row_name="τ",
                          col_name="τ'")


# ---- download tables ------------------------------------------------------------------------------
def marginals_long_table(domain: Domain, series: Mapping[str, Mapping[Clique, np.ndarray]],
                         categories: Sequence[Sequence[str]] | None = None,
                         cliques: Sequence[Clique] | None = None) -> pd.DataFrame:
    """One row per cell of every marginal: ``marginal`` (attribute names joined by ' × '), ``cell``
    ('Sex=male, Pclass=1'), then one column per series (e.g. ``true`` and each method)."""
    if not series:
        return pd.DataFrame(columns=["marginal", "cell"])
    first = next(iter(series.values()))
    cliques = list(first) if cliques is None else list(cliques)
    blocks = []
    for g in cliques:
        block = {"marginal": clique_label(domain, g), "cell": cell_labels(domain, g, categories)}
        for name, marg in series.items():
            block[name] = np.asarray(marg[g], dtype=float)
        blocks.append(pd.DataFrame(block))
    return pd.concat(blocks, ignore_index=True)


def simulation_payload(sim, names: Mapping[str, str], notice: str) -> dict:
    """The simulation's JSON download: mode, ``notice``, seed, mechanism, budget, the methods (by their ``names``)
    and every workload marginal, true and reconstructed (a :class:`dpviz.marginals.release.Simulation`)."""
    return {"mode": "simulate", "notice": notice, "seed": sim.seed, "mechanism": sim.mechanism,
            "budget": sim.budget_text, "methods": list(names.values()),
            "marginals": [{"attributes": list(sim.domain.names(w)), "true": sim.truth[w].tolist(),
                           **{names[m]: r.marginals[w].tolist() for m, r in sim.results.items()}}
                          for w in sim.workload]}


def lnn_settings_text(options: Mapping[str, float | None]) -> str:
    """GReM-LNN's settings in words (:data:`LNN_WORDS`), the unset ones left out."""
    return ", ".join(LNN_WORDS[k].format(v=v) for k, v in options.items() if v is not None and k in LNN_WORDS)


def lnn_run_text(info: Mapping) -> str:
    """How a GReM-LNN run went, in words: iterations, restarts, final step and why it stopped."""
    why = STOP_WORDS.get(info.get("stop_reason"), "it stopped")
    return (f"GReM-LNN: {info.get('iterations', 0):,} iterations, {info.get('restarts', 0)} restarts, final step "
            f"size {info.get('step', 0.0):.3g}; {why} ({'converged' if info.get('converged') else 'not converged'}).")

def thumbnail(data, clique: tuple[int, int] | None = None) -> go.Figure:
    """The home page's thumbnail (the registry's ``thumbnail`` hook): heatmap of the 2-way marginal ``clique``
    of a categorical data set (``.domain``, ``.marginal``; default: the first and the last attribute, e.g.
    age × income for UCI Adult)."""
    from dpviz.viz.thumbnails import shrink

    d = data.domain.d
    if d < 2:
        raise InputError("marginals thumbnail: the data set needs at least two attributes")
    a, b = (0, d - 1) if clique is None else sorted(int(i) for i in clique)
    if not 0 <= a < b < d:
        raise InputError(f"marginals thumbnail: clique {clique!r} is not two distinct attributes of 0..{d - 1}")
    table = data.marginal((a, b)).reshape(data.domain.sizes[a], data.domain.sizes[b])
    return shrink(matrix_heatmap(table, row_name=data.domain.attrs[a], col_name=data.domain.attrs[b]))
