"""Figures (and the few small tables behind them) for the Tree page.

Everything here is a pure function of its arguments and never imports Streamlit. Big trees are
never drawn in full: :func:`top_levels` picks the top depth levels that fit a node budget, the
matrix views sample non-zeros (:func:`sparsity_figure`), and only trees with at most
:data:`DENSE_MAX` nodes get labelled dense heatmaps (:func:`matrix_heatmap`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import scipy.sparse as sp
from plotly.colors import sample_colorscale

from dpviz.tree.metrics import error_by_level
from dpviz.tree.model import Tree

__all__ = [
    "DENSE_MAX",
    "TREE_VIEW_MAX_NODES",
    "top_levels",
    "tree_figure",
    "propagation_figure",
    "sparsity_figure",
    "error_by_level_frame",
    "error_by_level_figure",
    "method_comparison_figure",
]

DENSE_MAX = 60  # largest n drawn as a labelled dense heatmap
TREE_VIEW_MAX_NODES = 4000  # node budget of the tree (icicle) views
NOT_REACHED = "#d9d9d9"


def top_levels(tree: Tree, max_depth: int | None = None, max_nodes: int = TREE_VIEW_MAX_NODES) -> np.ndarray:
    """DOH indices of the nodes of depth <= D, D the deepest level (<= ``max_depth``) whose top part
    has at most ``max_nodes`` nodes (always at least the root). Parents are always included."""
    counts = np.cumsum(np.bincount(tree.depth, minlength=tree.h + 1)[1:])  # nodes with depth <= d
    depth_cap = tree.h if max_depth is None else max(1, min(int(max_depth), tree.h))
    fits = np.flatnonzero(counts[:depth_cap] <= max_nodes)
    d = int(fits[-1]) + 1 if fits.size else 1
    return np.flatnonzero(tree.depth <= d)


def _labels(tree: Tree, idx: np.ndarray, labels: np.ndarray | None) -> np.ndarray:
    lab = tree.label_of(idx) if labels is None else np.asarray(labels)[idx]
    return np.asarray(lab).astype(str)  # fixed-width unicode: plotly copies it without per-item work


def _fmt(a: np.ndarray) -> np.ndarray:
    return np.array(["not reached" if not np.isfinite(x) else f"{x:,.6g}" for x in np.asarray(a, float)], dtype=str)


def tree_figure(
    tree: Tree,
    true: np.ndarray,
    released: np.ndarray | None = None,
    labels: np.ndarray | None = None,
    max_depth: int | None = None,
    max_nodes: int = TREE_VIEW_MAX_NODES,
    visible_levels: int = 3,
    title: str | None = None,
) -> go.Figure:
    """Icicle of the top levels of the tree, sized by the true counts ``true`` (a consistent,
    non-negative node vector in DOH order). With ``released``, tiles are coloured by the release
    error (released - true) and the hover shows both values.

    ``visible_levels`` levels are visible at once (click a tile to drill down).
    """
    idx = top_levels(tree, max_depth, max_nodes)
    true = np.asarray(true, float)
    ids = idx.astype(str)
    parents = np.where(idx == 0, "", tree.parent[idx].astype(str))
    names = _labels(tree, idx, labels)
    tv = true[idx]
    consistent = bool(np.all(tv >= 0))
    custom = [tv]
    hover = "<b>%{label}</b><br>true: %{customdata[0]:,.6g}"
    marker: dict = {}
    if released is not None:
        rv = np.asarray(released, float)[idx]
        err = rv - tv
        custom += [rv, err]
        hover += "<br>released: %{customdata[1]:,.6g}<br>error: %{customdata[2]:,.6g}"
        lim = float(np.max(np.abs(err))) if err.size and np.isfinite(err).all() else 1.0
        marker = dict(colors=err, colorscale="RdBu", cmid=0.0, cmin=-lim or -1, cmax=lim or 1,
                      colorbar=dict(title="released − true"))
    fig = go.Figure(
        go.Icicle(
            ids=ids,
            labels=names,
            parents=parents,
            values=np.where(tv >= 0, tv, 0.0),
            branchvalues="total" if consistent else "remainder",
            customdata=np.column_stack(custom),
            hovertemplate=hover + "<extra></extra>",
            marker=marker,
            maxdepth=visible_levels,
            root_color="lightgrey",
        )
    )
    shown_depth = int(tree.depth[idx].max())
    note = "" if shown_depth == tree.h else f" (top {shown_depth} of {tree.h} levels, {idx.size:,} of {tree.n:,} nodes)"
    fig.update_layout(title=(title or "Tree") + note, margin=dict(t=50, l=10, r=10, b=10), height=420)
    return fig


def propagation_figure(
    tree: Tree,
    values: np.ndarray,
    labels: np.ndarray | None = None,
    max_depth: int | None = None,
    max_nodes: int = TREE_VIEW_MAX_NODES,
    title: str = "Propagation",
) -> go.Figure:
    """The tree's top levels with every tile showing and coloured by its entry of ``values``
    (a node vector, NaN = not reached yet, drawn grey). Tiles have equal weight per node, so the
    picture does not depend on the values' signs."""
    idx = top_levels(tree, max_depth, max_nodes)
    vals = np.asarray(values, float)[idx]
    finite = np.isfinite(vals)
    colors = np.full(idx.size, NOT_REACHED, dtype="<U32")
    if finite.any():
        lo, hi = float(vals[finite].min()), float(vals[finite].max())
        t = (vals[finite] - lo) / (hi - lo) if hi > lo else np.full(int(finite.sum()), 0.5)
        palette = np.array(sample_colorscale("Viridis", list(np.linspace(0, 1, 64))), dtype="<U32")
        colors[finite] = palette[np.rint(t * 63).astype(int)]  # 64 colour bins: no per-node colour parsing
    text = _fmt(vals)
    names = _labels(tree, idx, labels)
    fig = go.Figure(
        go.Icicle(
            ids=idx.astype(str),
            labels=names,
            parents=np.where(idx == 0, "", tree.parent[idx].astype(str)),
            values=np.ones(idx.size),
            branchvalues="remainder",
            text=text,
            texttemplate="%{label}<br>%{text}",
            hovertemplate="<b>%{label}</b><br>value: %{text}<extra></extra>",
            marker=dict(colors=colors),
            customdata=vals,
            maxdepth=4,
        )
    )
    shown_depth = int(tree.depth[idx].max())
    note = "" if shown_depth == tree.h else f" (top {shown_depth} of {tree.h} levels)"
    fig.update_layout(title=title + note, margin=dict(t=50, l=10, r=10, b=10), height=360)
    return fig


def sparsity_figure(matrix, title: str = "", max_points: int = 20_000, seed: int = 0) -> go.Figure:
    """Scatter of the non-zeros of a sparse matrix (row 0 at the top), a uniform sample of at most
    ``max_points`` of them (deterministic for a given ``seed``); colour = sign of the entry."""
    coo = sp.coo_matrix(matrix)
    r, c, v = coo.row, coo.col, coo.data
    keep = v != 0
    r, c, v = r[keep], c[keep], v[keep]
    nnz = r.size
    if nnz > max_points:
        pick = np.sort(np.random.default_rng(seed).choice(nnz, size=max_points, replace=False))
        r, c, v = r[pick], c[pick], v[pick]
    fig = go.Figure()
    for mask, name, color in ((v > 0, "positive", "#2166ac"), (v < 0, "negative", "#b2182b")):
        if mask.any():
            fig.add_trace(go.Scattergl(x=c[mask], y=r[mask], mode="markers", name=name,
                                       marker=dict(size=3 if nnz > 2000 else 6, color=color)))
    n_rows, n_cols = coo.shape
    fig.update_yaxes(autorange="reversed", range=None, title="row")
    fig.update_xaxes(title="column", side="top")
    shown = "all" if nnz <= max_points else f"{r.size:,} sampled of"
    fig.update_layout(
        title=f"{title} — {n_rows:,}×{n_cols:,}, {shown} {nnz:,} non-zeros",
        height=460,
        margin=dict(t=90, l=10, r=10, b=10),
        legend=dict(orientation="h", y=-0.05),
    )
    return fig


MAX_LEVEL_POINTS = 2_000
"""Above this many depth levels the error-by-level view pools consecutive levels (a path-like tree has
500,001: one point per level made the chart 2·10⁶ points and half a second of JSON per rerun)."""


def pooled_by_level(rmse: np.ndarray, counts: np.ndarray, width: int) -> np.ndarray:
    """Per-depth RMSEs pooled over bins of ``width`` consecutive depths: the RMSE of all the nodes in a
    bin (mean square weighted by the number of nodes at each depth, ``counts``)."""
    b = np.arange(counts.size) // width
    squares = np.bincount(b, weights=counts * np.asarray(rmse, float) ** 2)
    nodes = np.bincount(b, weights=counts)
    return np.sqrt(squares / np.maximum(nodes, 1))


def error_by_level_frame(tree: Tree, released: dict[str, np.ndarray], true: np.ndarray,
                         max_points: int = MAX_LEVEL_POINTS) -> pd.DataFrame:
    """Long table (method, depth, rmse) of :func:`dpviz.tree.metrics.error_by_level` per method. Above
    ``max_points`` levels, consecutive depths are pooled (:func:`pooled_by_level`; ``depth`` is the
    first depth of each bin) and ``attrs`` holds ``bin_width`` and ``level_counts``."""
    width = max(1, -(-tree.h // max_points))
    counts = np.bincount(tree.depth, minlength=tree.h + 1)[1:].astype(float)
    depth = np.arange(1, tree.h + 1, width)
    rows = []
    for method, out in released.items():
        rmse = error_by_level(tree, out, true)
        rows.append(pd.DataFrame({"method": method, "depth": depth,
                                  "rmse": rmse if width == 1 else pooled_by_level(rmse, counts, width)}))
    df = pd.concat(rows, ignore_index=True) if rows else pd.DataFrame(columns=["method", "depth", "rmse"])
    df.attrs.update(bin_width=width, level_counts=counts)
    return df


def error_by_level_figure(df: pd.DataFrame, labels: dict[str, str] | None = None,
                          expected: np.ndarray | None = None) -> go.Figure:
    """One line per method: RMSE of the nodes at each depth (1 = root), log y axis; ``expected``
    (RMSE by depth predicted for the optimal release, one value per depth) is drawn dashed, pooled
    like the frame when its levels are."""
    width = int(df.attrs.get("bin_width", 1))
    many = df["depth"].nunique() > 60
    fig = go.Figure()
    for method, g in df.groupby("method", sort=False):
        fig.add_trace(go.Scatter(x=g["depth"], y=g["rmse"], mode="lines" if many else "lines+markers",
                                 name=(labels or {}).get(method, method)))
    if expected is not None:
        y = np.asarray(expected, float)
        if width > 1:
            y = pooled_by_level(y, np.asarray(df.attrs["level_counts"], float), width)
        fig.add_trace(go.Scatter(x=1 + width * np.arange(y.size), y=y, mode="lines",
                                 line=dict(dash="dash", color="black"), name="optimal release: expected"))
    pooled = f"; levels pooled in bins of {width:,}" if width > 1 else ""
    fig.update_xaxes(title=f"depth (1 = root{pooled})", dtick=None if many else 1)
    fig.update_yaxes(title="RMSE at this depth", type="log", dtick=1)
    fig.update_layout(title="Error by level", height=420, margin=dict(t=50, l=10, r=10, b=10),
                      legend=dict(orientation="h", yanchor="top", y=-0.2, x=0))
    return fig


def method_comparison_figure(table: pd.DataFrame, labels: dict[str, str] | None = None) -> go.Figure:
    """Grouped bars of rmse_NQ and rmse_RQ per method (log y), from the table of
    :func:`dpviz.tree.release.simulate` (its ``table``)."""
    names = [(labels or {}).get(m, m) for m in table["method"]]
    fig = go.Figure()
    for col in ("rmse_NQ", "rmse_RQ"):
        if col in table:
            fig.add_trace(go.Bar(x=names, y=table[col].to_numpy(float), name=col))
    fig.update_yaxes(type="log", title="RMSE", dtick=1)
    fig.update_layout(barmode="group", title="Methods compared (same noise draw)", height=380,
                      margin=dict(t=50, l=10, r=10, b=10))
    return fig
