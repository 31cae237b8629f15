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
    "thumbnail",
    "DENSE_MAX",
    "TREE_VIEW_MAX_NODES",
    "top_levels",
    "zoom_options",
    "tree_figure",
    "propagation_figure",
    "sparsity_figure",
    "error_by_level_frame",
    "error_by_level_figure",
    "method_comparison_figure",
    "METHOD_COLUMNS",
    "methods_table_view",
]

DENSE_MAX = 60  # largest n drawn as a labelled dense heatmap
TREE_VIEW_MAX_NODES = 400
"""Node budget of the tree (icicle) views: the browser lays out and labels every tile on every redraw
(3,207 tiles took seconds per ε move); deeper levels are one zoom away (:func:`zoom_options`)."""
MAX_ZOOM_OPTIONS = 300  # zoom targets offered (the internal nodes of the top view, the biggest first)
NOT_REACHED = "#d9d9d9"


def _below(tree: Tree, root: int, max_depth: int | None, max_nodes: int) -> np.ndarray:
    """DOH indices of ``root`` and its descendants down to the deepest whole level (at most ``max_depth``
    levels counting ``root`` as 1) that keeps them within ``max_nodes`` (always at least ``root``)."""
    kids = np.argsort(tree.parent[1:], kind="stable") + 1  # children grouped by parent
    start = np.searchsorted(tree.parent[kids], np.arange(tree.n + 1))
    cap = tree.h if max_depth is None else max(1, int(max_depth))
    levels, total, frontier = [np.array([root])], 1, np.array([root])
    while len(levels) < cap:
        lo, cnt = start[frontier], start[frontier + 1] - start[frontier]
        if cnt.sum() == 0 or total + cnt.sum() > max_nodes:
            break
        pos = np.repeat(lo - np.cumsum(cnt) + cnt, cnt) + np.arange(cnt.sum())
        frontier = kids[pos]
        levels.append(frontier)
        total += frontier.size
    return np.sort(np.concatenate(levels))


def top_levels(tree: Tree, max_depth: int | None = None, max_nodes: int = TREE_VIEW_MAX_NODES,
               root: int = 0) -> np.ndarray:
    """DOH indices of the nodes of depth <= D, D the deepest level (<= ``max_depth``) whose top part
    has at most ``max_nodes`` nodes (always at least the root). Parents are always included.
    With ``root`` > 0: the same for the subtree under node ``root`` (its depth counted as 1)."""
    if root:
        return _below(tree, int(root), max_depth, max_nodes)
    counts = np.cumsum(np.bincount(tree.depth, minlength=tree.h + 1)[1:])  # nodes with depth <= d
    depth_cap = tree.h if max_depth is None else max(1, min(int(max_depth), tree.h))
    fits = np.flatnonzero(counts[:depth_cap] <= max_nodes)
    d = int(fits[-1]) + 1 if fits.size else 1
    return np.flatnonzero(tree.depth <= d)


def zoom_options(tree: Tree, max_nodes: int = TREE_VIEW_MAX_NODES, limit: int = MAX_ZOOM_OPTIONS) -> np.ndarray:
    """Nodes a tree view can be zoomed into: the root, then the internal nodes of the whole-tree view
    (:func:`top_levels`) in DOH order (highest first), at most ``limit``."""
    idx = top_levels(tree, max_nodes=max_nodes)
    internal = idx[(idx > 0) & (tree.children_count[idx] > 0)]
    return np.concatenate([[0], internal[: max(0, limit - 1)]]).astype(int)


def _view_note(tree: Tree, idx: np.ndarray, root: int, labels: np.ndarray | None) -> str:
    """What part of the tree a view shows ("" when all of it)."""
    if root:
        name = _labels(tree, np.array([root]), labels)[0]
        below = int(tree.depth[idx].max() - tree.depth[root])
        return f"under {name} ({below} level{'s' * (below != 1)} below it, {idx.size:,} nodes)"
    shown_depth = int(tree.depth[idx].max())
    return "" if shown_depth == tree.h else f"top {shown_depth} of {tree.h} levels, {idx.size:,} of {tree.n:,} nodes"


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
    root: int = 0,
) -> go.Figure:
    """Icicle of the top levels of the tree (of the subtree under ``root``), sized by the true counts
    ``true`` (a consistent, non-negative node vector in DOH order). With ``released``, tiles are
    coloured by the release error (released - true) and the hover shows both values. At most
    ``max_nodes`` tiles (whole levels); the part shown is said under the title.

    ``visible_levels`` levels are visible at once (click a tile to drill down).
    """
    idx = top_levels(tree, max_depth, max_nodes, root)
    true = np.asarray(true, float)
    ids = idx.astype(str)
    parents = np.where(idx == root, "", tree.parent[idx].astype(str))
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
                      colorbar=dict(title=dict(text="error<br>(released − true)", side="top"),
                                    tickformat=",~g", thickness=14))
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
    _titled(fig, title or "Tree", _view_note(tree, idx, root, labels), height=440,
            right=165 if released is not None else 10)  # the colour bar and its two-line title
    return fig


def _titled(fig: go.Figure, title: str, note: str, height: int, **margin: int) -> None:
    """Title on one line at the top left, the note as a smaller second line; margins that keep both clear."""
    fig.update_layout(**_title_layout(title, note, height, **margin))


def _title_layout(title: str, note: str, height: int, *, left: int = 10, right: int = 10, bottom: int = 10) -> dict:
    """The layout keys of :func:`_titled`, for figures built in one pass. ``left``, ``right`` and ``bottom``
    reserve what the template's auto-margins would push (tick labels, axis titles, a colour bar, a legend under
    the plot), so Plotly draws the figure in one pass: with too small margins every ``Plotly.react`` measures
    them, finds the margins changed and draws the whole figure again (``doAutoMargin``). Auto-margins stay on,
    so a figure that needs more room still gets it."""
    text = title + (f"<br><sup>{note}</sup>" if note else "")
    return dict(title=dict(text=text, x=0.01, xanchor="left", font=dict(size=16)),
                margin=dict(t=75 if note else 50, l=left, r=right, b=bottom), height=height, uirevision="keep")


LEGEND_ROW = 19
"""Height of one legend entry in pixels (the template's 12 px legend font): a legend under a plot in a half-width
column of a 1280 px page lists one entry a row."""


def log_ticks(values: np.ndarray) -> dict:
    """Tick values 1-2-5 per decade spanning the positive finite ``values`` (at most ~8 ticks), written for
    people ("20", "1,000", "0.05"): a log axis over less than a decade still gets several labels."""
    v = np.asarray(values, float)
    v = v[np.isfinite(v) & (v > 0)]
    if not v.size:
        return {}
    lo, hi = np.floor(np.log10(v.min())), np.ceil(np.log10(v.max()))
    steps = (1, 2, 5) if hi - lo <= 3 else (1,) if hi - lo <= 8 else ()
    if not steps:
        return {}
    ticks = np.array([m * 10.0 ** e for e in np.arange(lo, hi + 1) for m in steps])
    ticks = ticks[(ticks > v.min() / 2) & (ticks < v.max() * 2)]
    return dict(tickvals=ticks, ticktext=[f"{t:,.10g}" for t in ticks])


def propagation_figure(
    tree: Tree,
    values: np.ndarray,
    labels: np.ndarray | None = None,
    max_depth: int | None = None,
    max_nodes: int = TREE_VIEW_MAX_NODES,
    title: str = "Propagation",
    root: int = 0,
) -> go.Figure:
    """The tree's top levels (under ``root``) with every tile showing and coloured by its entry of
    ``values`` (a node vector, NaN = not reached yet, drawn grey). Tiles have equal weight per node, so
    the picture does not depend on the values' signs."""
    idx = top_levels(tree, max_depth, max_nodes, root)
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
            parents=np.where(idx == root, "", tree.parent[idx].astype(str)),
            values=np.ones(idx.size),
            branchvalues="remainder",
            text=text,
            texttemplate="%{label}<br>%{text}",
            hovertemplate="<b>%{label}</b><br>value: %{text}<extra></extra>",
            marker=dict(colors=colors),
            customdata=vals,
            maxdepth=3,
        )
    )
    _titled(fig, title, _view_note(tree, idx, root, labels), height=380)
    return fig


def sparsity_figure(matrix, title: str = "", max_points: int = 20_000, seed: int = 0,
                    by_value: bool = False) -> go.Figure:
    """Scatter of the non-zeros of a sparse matrix (row 0 at the top), a uniform sample of at most
    ``max_points`` of them (deterministic for a given ``seed``); colour = sign of the entry, or with
    ``by_value`` its value (a diverging scale centred on 0 up to the 90th percentile of |value|, for a
    weighted Generation Matrix)."""
    coo = sp.coo_matrix(matrix)
    r, c, v = coo.row, coo.col, coo.data
    keep = v != 0
    r, c, v = r[keep], c[keep], v[keep]
    nnz = r.size
    if nnz > max_points:
        pick = np.sort(np.random.default_rng(seed).choice(nnz, size=max_points, replace=False))
        r, c, v = r[pick], c[pick], v[pick]
    size = 3 if nnz > 2000 else 6
    fig = go.Figure()
    if by_value:
        lim = float(np.quantile(np.abs(v), 0.9)) if v.size else 1.0  # a few large weights do not wash out the rest
        fig.add_trace(go.Scattergl(
            x=c, y=r, mode="markers", name="entry", showlegend=False,
            marker=dict(size=size, color=v, colorscale="RdBu", cmid=0.0, cmin=-lim, cmax=lim,
                        colorbar=dict(title=dict(text="value", side="top"), tickformat=".3~g", thickness=14)),
            hovertemplate="row %{y}, column %{x}: %{marker.color:.4g}<extra></extra>"))
    else:
        for mask, name, color in ((v > 0, "positive", "#2166ac"), (v < 0, "negative", "#b2182b")):
            if mask.any():
                fig.add_trace(go.Scattergl(x=c[mask], y=r[mask], mode="markers", name=name,
                                           marker=dict(size=size, color=color)))
    n_rows, n_cols = coo.shape
    fig.update_yaxes(autorange="reversed", range=None, title="row", tickformat=",~d")
    fig.update_xaxes(title=None, side="top", tickformat=",~d")
    shown = "all" if nnz <= max_points else f"{r.size:,} sampled of"
    _titled(fig, title, f"{n_rows:,}×{n_cols:,}, {shown} {nnz:,} non-zeros (columns along the top)", height=460)
    fig.update_layout(margin=dict(t=100, l=10, r=10, b=10), legend=dict(orientation="h", y=-0.05))
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
    like the frame when its levels are. Built in one pass (plotly validates each ``update_*`` call anew:
    this figure is rebuilt on every ε move)."""
    width = int(df.attrs.get("bin_width", 1))
    many = df["depth"].nunique() > 60
    mode = "lines" if many else "lines+markers"
    methods, depth, rmse = df["method"].to_numpy(), df["depth"].to_numpy(), df["rmse"].to_numpy(float)
    traces = [dict(type="scatter", x=depth[methods == m], y=rmse[methods == m], mode=mode,
                   name=(labels or {}).get(m, m)) for m in pd.unique(methods)]
    if expected is not None:
        y = np.asarray(expected, float)
        if width > 1:
            y = pooled_by_level(y, np.asarray(df.attrs["level_counts"], float), width)
        traces.append(dict(type="scatter", x=1 + width * np.arange(y.size), y=y, mode="lines",
                           line=dict(dash="dash", color="black"), name="optimal release: expected"))
    pooled = f"; levels pooled in bins of {width:,}" if width > 1 else ""
    ys = np.concatenate([rmse] + [np.asarray(t["y"], float) for t in traces[-1:]])
    layout = dict(
        xaxis=dict(title=dict(text=f"depth (1 = root{pooled})"), dtick=None if many else 1, tickformat=",~d"),
        yaxis=dict(title=dict(text="RMSE of the nodes at this depth"), type="log", dtick=1, tickformat=",~g",
                   **log_ticks(ys)),
        legend=dict(orientation="h", yanchor="top", y=-0.2, x=0),
        **_title_layout("Error by level", "", 440, left=75, right=15, bottom=70 + LEGEND_ROW * len(traces)))
    return go.Figure(data=traces, layout=layout)


def method_comparison_figure(table: pd.DataFrame, labels: dict[str, str] | None = None) -> go.Figure:
    """Grouped bars of rmse_NQ and rmse_RQ per method (log y), from the table of
    :func:`dpviz.tree.release.simulate` (its ``table``)."""
    names = [(labels or {}).get(m, m) for m in table["method"]]
    traces, shown = [], []
    for col, name in (("rmse_NQ", "per node (rmse_NQ)"), ("rmse_RQ", "per range query (rmse_RQ)")):
        if col in table:
            x = table[col].to_numpy(float)
            shown.append(x)
            traces.append(dict(type="bar", y=names, x=x, name=name, orientation="h",
                               hovertemplate="%{y}: %{x:,.4g}<extra>" + name + "</extra>"))
    layout = dict(
        xaxis=dict(type="log", title=dict(text="RMSE (log scale)"), dtick=1, tickformat=",~g",
                   **log_ticks(np.concatenate(shown) if shown else np.ones(1))),
        yaxis=dict(autorange="reversed", automargin=True), barmode="group",
        legend=dict(orientation="h", yanchor="top", y=-0.15, x=0),
        **_title_layout("Methods compared (same noise draw)", "", 440, left=20 + 6 * max(map(len, names), default=0),
                        right=15, bottom=70 + LEGEND_ROW * len(traces)))
    return go.Figure(data=traces, layout=layout)

METHOD_COLUMNS: dict[str, tuple[str, str]] = {
    "method": ("method", "The post-processing applied to the same noisy counts."),
    "rmse_NQ": ("node RMSE", "rmse_NQ: root mean squared error per node, how far a released count is from the "
                "true one, on average over all nodes."),
    "rmse_RQ": ("range RMSE", "rmse_RQ: root mean squared error of random range queries (sums over consecutive "
                "leaves) answered from the released tree."),
    "bias": ("bias", "Mean error: the average of released − true over all nodes (0 for an unbiased method)."),
    "negatives": ("negatives", "How many released counts are below zero."),
    "seconds": ("time (ms)", "Wall-clock milliseconds of the post-processing on this draw."),
    "total_sq_error": ("total sq. error", "Total squared error: the sum over all nodes of (released − true)²."),
    "expected_sq_error": ("expected (Thm 5)", "Expected total squared error from the analytic variances: n σ² before "
                          "and m σ² after optimal post-processing (Theorem 5, uniform split). Boosting has no closed "
                          "form."),
}
"""Column header (plain words, the symbol after) and one-line help of the Tree page's methods table."""
NO_CLOSED_FORM = "no closed form"


def _sig(x: np.ndarray, digits: int = 4) -> np.ndarray:
    """``x`` rounded to ``digits`` significant digits (0 and non-finite values kept)."""
    x = np.asarray(x, float)
    mag = np.floor(np.log10(np.abs(np.where((x == 0) | ~np.isfinite(x), 1.0, x))))
    scale = 10.0 ** (digits - 1 - mag)
    return np.where(np.isfinite(x), np.round(x * scale) / scale, x)


def methods_table_view(table: pd.DataFrame, labels: dict[str, str] | None = None) -> pd.DataFrame:
    """The simulation table of :func:`dpviz.tree.release.simulate` for people: plain-word method names and
    headers (:data:`METHOD_COLUMNS`), numbers to 4 significant digits, and the expected error of a method
    without a closed form written as words (never "None"/"nan")."""
    view = pd.DataFrame(index=table.index)
    for col in table.columns:
        if col == "method":
            view[col] = [(labels or {}).get(m, m) for m in table["method"]]
        elif col == "negatives":
            view[col] = table[col].to_numpy(int)
        elif col == "expected_sq_error":
            exp = _sig(table[col].to_numpy(float))
            view[col] = [NO_CLOSED_FORM if not np.isfinite(x) else f"{x:,.0f}" if abs(x) >= 1e4 else f"{x:,.4g}"
                         for x in exp]
        elif col == "seconds":
            view[col] = _sig(1e3 * table[col].to_numpy(float), 2)
        elif col in METHOD_COLUMNS:
            view[col] = _sig(table[col].to_numpy(float))
    return view.rename(columns={c: METHOD_COLUMNS[c][0] for c in view.columns})


def thumbnail(data, levels: int = 3) -> go.Figure:
    """The home page's thumbnail (the registry's ``thumbnail`` hook): the icicle of the top ``levels`` levels
    (the root is level 1) of a tree data set (``.tree``, ``.v``), sized by the true counts, drawn top-down like
    a hierarchy, e.g. US → region → division."""
    from dpviz.viz.thumbnails import shrink

    fig = tree_figure(data.tree, data.v, max_depth=levels, visible_levels=levels)
    fig.update_traces(tiling={"orientation": "v"})
    return shrink(fig)
