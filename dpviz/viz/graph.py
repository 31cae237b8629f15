"""Figures and small tables for the Graph page (pure: arrays in, ``go.Figure`` / DataFrame out).

* Adjacency matrix views, light enough for the browser to redraw on every ε move:
  :func:`adjacency_figure` draws a small graph (|V| ≤ :data:`dpviz.viz.heatmap.HEATMAP_MAX`) as a
  two-colour heatmap ("edge" / "no edge") with the vertex labels on the axes; a larger sparse one as a
  WebGL dot plot (one dot per one of the matrix, at most :data:`SPY_MAX` dots); a larger dense one as a
  raster of :func:`density_image`, which bins the edge coordinates into at most :data:`MAX_BINS` ×
  :data:`MAX_BINS` bins (O(m + bins²), never a |V|² array), coloured by the share of a block's cells
  that are edges on a log scale whose colour bar spans exactly the values drawn. ``order`` lays the rows/columns out in a relabelled order (``GraphRelease.order``:
  ``order[i]`` is the vertex at row i), as after Step 1 (Alg. 1, Def. 6, Eq. 1) of DRF: G. Gong,
  C. Lessoy, C. Lu and K. Lv, "Differential Privacy Spatial Decomposition via Flattening Kd-Tree",
  International Journal of Performability Engineering 16(6), 2020 ("the paper").
* The decomposition (Step 2, Alg. 2 of the paper; the quadtree / kd-hybrid of Cormode et al., ICDE
  2012): :func:`frontier` is the set of regions after ``depth`` levels of splitting (nodes of that
  depth plus the leaves that stopped earlier), :func:`partition_density` their released density, and
  :func:`partition_figure` paints them — rectangles coloured by noisy density, outlined while there are
  at most :data:`OUTLINE_MAX` of them — on the same raster grid.
* :func:`degree_figure`: degree distributions, log-log (true vs released).
* :func:`budget_frame`: the accounting (``GraphRelease.budget``), summing to ε.
* :func:`metrics_frame`: the metrics of :func:`dpviz.graph.metrics.evaluate`, one row per measure
  (plain words, the symbol after, ↓/↑ for the better direction; :data:`MEASURES`) and one column per
  method (:data:`METHOD_SHORT`), so it fits a 1280 px window whatever the number of measures.
* :func:`labelling_figure`: q(L) of Eq. (1) per iteration of Alg. 1.
* :func:`audit_frame` / :func:`audit_figure`: an :class:`dpviz.audit.auditor.AuditResult` per event.

Nothing here imports Streamlit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from dpviz.errors import InputError
from dpviz.graph.metrics import METRIC_INFO
from dpviz.graph.regions import offdiag_cells, upper_cells
from dpviz.graph.regions import Partition
from dpviz.graph.strategy import NOT_PRIVATE_LABEL
from dpviz.viz.heatmap import HEATMAP_MAX, matrix_heatmap

__all__ = [
    "thumbnail",
    "MAX_BINS", "OUTLINE_MAX", "METHOD_LABELS", "method_label", "DensityImage", "positions", "density_image",
    "adjacency_figure", "frontier", "partition_density", "partition_figure", "degree_figure", "budget_frame",
    "MEASURES", "TIME_ROW", "METHOD_SHORT", "metrics_frame", "labelling_figure", "audit_frame", "audit_figure", "SPY_MAX",
]

MAX_BINS = 256
"""Largest side of a rasterised adjacency image: a graph with more vertices is binned (256² cells keep a
figure near 300 kB, which the browser redraws in a few tens of milliseconds)."""
SPY_MAX = 40_000
"""Most ones of the (symmetric) adjacency matrix drawn one dot each (WebGL); above that: the raster."""
OUTLINE_MAX = 2_000
"""Most partition rectangles drawn with an outline (beyond that only their colours are painted)."""
COLORSCALE = "Viridis"
BINARY_SCALE = [[0.0, "#f4f6fa"], [0.5, "#f4f6fa"], [0.5, "#1f4e9c"], [1.0, "#1f4e9c"]]
"""Two colours for a 0/1 adjacency matrix: no edge (near white), edge (dark blue)."""

METHOD_LABELS: dict[str, str] = {
    "drf-dp": "DRF-DP (edge-DP)",
    "drf": f"DRF ({NOT_PRIVATE_LABEL})",
    "kdh": "kd-hybrid",
    "quadtree": "quadtree",
    "random": "Random",
    "degree": "degree sequence (Chung–Lu)",
}
"""Display name of every method of :data:`dpviz.graph.release.METHODS`; ``drf`` always carries
:data:`~dpviz.graph.release.NOT_PRIVATE_LABEL`."""
METHOD_SHORT: dict[str, str] = {
    "drf-dp": "DRF-DP", "drf": "DRF (not DP)", "kdh": "kd-hybrid", "quadtree": "quadtree", "random": "Random",
    "degree": "Chung–Lu",
}
"""Column header of every method in :func:`metrics_frame` (the page's help tooltip gives the full name;
the published DRF's header still says it is not private)."""


def method_label(method: str) -> str:
    """Display name of a graph method (the published DRF always says it is not edge-DP)."""
    return METHOD_LABELS.get(method, method)


# ------------------------------------------------------------------------------------------- raster grid


def _grid(n_nodes: int, max_bins: int) -> np.ndarray:
    """Bin boundaries e_0 = 0 < e_1 < ... < e_b = n over vertex positions, b = min(n, max_bins)."""
    if isinstance(max_bins, bool) or not isinstance(max_bins, (int, np.integer)) or max_bins < 1:
        raise InputError(f"max_bins: expected a whole number >= 1, got {max_bins!r}")
    b = min(int(n_nodes), int(max_bins))
    return (np.arange(b + 1, dtype=np.int64) * int(n_nodes)) // b


def _check_n(n_nodes: object) -> int:
    if isinstance(n_nodes, (bool, np.bool_)) or not isinstance(n_nodes, (int, np.integer)) or n_nodes < 1:
        raise InputError(f"n_nodes: expected a whole number of vertices >= 1, got {n_nodes!r}")
    return int(n_nodes)


def positions(order: np.ndarray | None, n_nodes: int) -> np.ndarray:
    """Row of each vertex in a layout ``order`` (``order[i]`` = vertex at row i); identity for None."""
    n = _check_n(n_nodes)
    if order is None:
        return np.arange(n, dtype=np.int64)
    o = np.asarray(order)
    if o.shape != (n,) or o.dtype.kind not in "iu" or not np.array_equal(np.sort(o), np.arange(n)):
        raise InputError(f"order: expected a permutation of 0..{n - 1} (one row per vertex)")
    pos = np.empty(n, dtype=np.int64)
    pos[o] = np.arange(n, dtype=np.int64)
    return pos


def _edge_array(edges: object, n: int) -> np.ndarray:
    e = np.asarray(edges)
    if e.size == 0:
        return np.zeros((0, 2), dtype=np.int64)
    if e.ndim != 2 or e.shape[1] != 2 or e.dtype.kind not in "iu":
        raise InputError(f"edges: expected an integer array of shape (m, 2), got {e.dtype} {e.shape}")
    if int(e.min()) < 0 or int(e.max()) >= n:
        raise InputError(f"edges: vertex ids must be in 0..{n - 1}")
    return e.astype(np.int64, copy=False)


@dataclass(frozen=True)
class DensityImage:
    """Edges of a graph binned on a b × b grid of the (relabelled) adjacency matrix.

    ``counts[i, j]``: ones of the *symmetric* matrix (both cells of every edge) with row in bin i and
    column in bin j; ``bounds``: the b + 1 bin boundaries in vertex positions (bin k covers positions
    [bounds[k], bounds[k+1])). ``cells[i, j]``: off-diagonal cells of the block, so ``density`` is the
    share of ones in it (NaN where a block has no off-diagonal cell).
    """

    counts: np.ndarray
    bounds: np.ndarray
    n_nodes: int

    @property
    def bins(self) -> int:
        return int(self.bounds.size - 1)

    @property
    def cells(self) -> np.ndarray:
        w = np.diff(self.bounds)
        cells = np.outer(w, w)
        cells[np.diag_indices_from(cells)] -= w  # the diagonal cells (i, i) hold no edge
        return cells

    @property
    def density(self) -> np.ndarray:
        cells = self.cells
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(cells > 0, self.counts / np.maximum(cells, 1), np.nan)


def density_image(edges: np.ndarray, n_nodes: int, *, order: np.ndarray | None = None,
                  max_bins: int = MAX_BINS) -> DensityImage:
    """Bin the (symmetric) adjacency matrix of ``edges`` into at most ``max_bins`` × ``max_bins`` blocks.

    Rows and columns are vertex positions in ``order`` (identity if None). One ``searchsorted`` and one
    ``bincount`` over the 2m cells: O(m log b + b²) time and memory, never |V|².
    """
    n = _check_n(n_nodes)
    e = _edge_array(edges, n)
    bounds = _grid(n, max_bins)
    b = bounds.size - 1
    pos = positions(order, n)
    bu = np.searchsorted(bounds, pos[e[:, 0]], side="right") - 1
    bv = np.searchsorted(bounds, pos[e[:, 1]], side="right") - 1
    codes = np.concatenate([bu * b + bv, bv * b + bu])
    counts = np.bincount(codes, minlength=b * b).reshape(b, b).astype(np.int64)
    return DensityImage(counts=counts, bounds=bounds, n_nodes=n)


def _centres(bounds: np.ndarray) -> np.ndarray:
    """Axis coordinate of each bin: the mean of its first and last position (exact when a bin is one vertex)."""
    return (bounds[:-1] + bounds[1:] - 1) / 2.0


def _nice_log_values(lo: float, hi: float) -> np.ndarray:
    """1-2-5 values 10^k·{1, 2, 5} inside [lo, hi] (0 < lo ≤ hi); only powers of 10 beyond 3 decades.
    Fewer than two inside: the ends themselves (a colour bar then spans exactly the values drawn)."""
    k0, k1 = int(np.floor(np.log10(lo))), int(np.ceil(np.log10(hi)))
    mult = (1.0,) if k1 - k0 > 3 else (1.0, 2.0, 5.0)
    vals = np.array([m * 10.0 ** k for k in range(k0, k1 + 1) for m in mult])
    inside = vals[(vals >= lo * (1 - 1e-9)) & (vals <= hi * (1 + 1e-9))]
    return inside if inside.size >= 2 else np.unique(np.array([lo, hi]))


def _fmt_share(v: float) -> str:
    """A share for a tick label: "1", "0.5", "0.02", "1e-4"."""
    return f"{v:.2g}" if v >= 1e-3 else f"{v:.0e}".replace("e-0", "e-")


def _log_scale(z: np.ndarray) -> dict:
    """Colour range and colour-bar ticks for log₁₀ values: the range is exactly the finite values drawn
    and the ticks are labelled with the values themselves (1-2-5 steps), never beyond the data."""
    finite = z[np.isfinite(z)]
    if finite.size == 0:
        return {}
    lo, hi = float(finite.min()), float(finite.max())
    vals = _nice_log_values(10.0 ** lo, 10.0 ** hi)
    if hi - lo < 1e-9:  # one value: a range around it so the colour is defined
        lo, hi = lo - 0.5, hi + 0.5
    return dict(zmin=lo, zmax=hi, colorbar_ticks=dict(tickvals=np.log10(vals).tolist(),
                                                      ticktext=[_fmt_share(v) for v in vals]))


def _title(title: str, sub: str = "") -> dict:
    """A left-aligned title with an optional subtitle, placed in the top margin above the plot area (the
    x axis is at the bottom of every matrix view, so nothing collides with it)."""
    out = dict(text=title, x=0.0, xanchor="left", xref="container", y=0.985, yanchor="top", yref="container",
               pad=dict(l=8), font=dict(size=15))
    if sub:
        out["subtitle"] = dict(text=sub, font=dict(size=12))
    return out


def _matrix_axes(fig: go.Figure, n: int, height: int, top: int) -> go.Figure:
    """Vertex-position axes, row 0 at the top, column axis at the bottom, square-ish plot."""
    fig.update_yaxes(autorange=False, title="row (vertex position)", range=[n - 0.5, -0.5], showgrid=False,
                     zeroline=False, tickformat="~s")
    fig.update_xaxes(autorange=False, title="column (vertex position)", range=[-0.5, n - 0.5], showgrid=False,
                     zeroline=False, tickformat="~s")
    fig.update_layout(height=height, margin=dict(t=top, l=10, r=10, b=10), plot_bgcolor="#f4f6fa")
    return fig


def _raster(z: np.ndarray, bounds: np.ndarray, title: dict, colorbar_title: str, hover: str) -> go.Figure:
    """A b × b raster (z = log₁₀ of a share, NaN blank) on vertex-position axes, row 0 at the top."""
    x = _centres(bounds)
    scale = _log_scale(z)
    ticks = scale.pop("colorbar_ticks", {})
    fig = go.Figure(go.Heatmap(
        z=z.astype(np.float32), x=x, y=x, colorscale=COLORSCALE, hoverongaps=False, **scale,
        colorbar=dict(title=dict(text=colorbar_title, side="right"), thickness=12, **ticks),
        hovertemplate=f"row %{{y:.0f}}, column %{{x:.0f}}: {hover} 10^%{{z:.2f}}<extra></extra>"))
    fig.update_layout(title=title)
    return _matrix_axes(fig, int(bounds[-1]), 500, 70)


def _log_density(d: np.ndarray) -> np.ndarray:
    """log₁₀ of a density, NaN where it is 0 or undefined (blank in the raster)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(d > 0, np.log10(np.where(d > 0, d, 1.0)), np.nan)


def _binary_heatmap(a: np.ndarray, shown: np.ndarray, title: str, sub: str) -> go.Figure:
    """A small 0/1 adjacency matrix: two colours, a legend-like colour bar ("no edge" / "edge"), the vertex
    labels on both axes, no written cells (lighter to draw and nothing to read but the colour)."""
    names = [str(s) for s in shown]
    fig = go.Figure(go.Heatmap(
        z=a.astype(np.uint8), x=names, y=names, zmin=0, zmax=1, colorscale=BINARY_SCALE, xgap=1, ygap=1,
        colorbar=dict(tickvals=[0.25, 0.75], ticktext=["no edge", "edge"], thickness=12, len=0.35, y=1.0,
                      yanchor="top"),
        hovertemplate="vertex %{y} – vertex %{x}: %{z}<extra></extra>"))
    n = len(names)
    fig.update_yaxes(autorange="reversed", type="category", title="vertex", showgrid=False, tickfont=dict(size=9))
    fig.update_xaxes(type="category", title="vertex", tickangle=-90, showgrid=False, tickfont=dict(size=9))
    fig.update_layout(title=_title(title, sub), height=max(320, min(560, 12 * n + 170)),
                      margin=dict(t=70, l=10, r=10, b=10))
    return fig


def _spy(rows: np.ndarray, cols: np.ndarray, n: int, title: str, sub: str) -> go.Figure:
    """One WebGL dot per one of the matrix (row, column positions), row 0 at the top."""
    size = float(np.clip(500.0 / n, 1.5, 4.0))
    fig = go.Figure(go.Scattergl(
        x=cols.astype(np.int32), y=rows.astype(np.int32), mode="markers",
        marker=dict(size=size, color="#1f4e9c", symbol="square"),
        hovertemplate="row %{y}, column %{x}: edge<extra></extra>", showlegend=False))
    fig.update_layout(title=_title(title, sub))
    return _matrix_axes(fig, n, 500, 70)


def adjacency_figure(edges: np.ndarray, n_nodes: int, *, order: np.ndarray | None = None,
                     labels: Sequence | None = None, title: str = "", max_bins: int = MAX_BINS,
                     spy_max: int = SPY_MAX) -> go.Figure:
    """The adjacency matrix of ``edges`` with rows/columns in ``order``.

    |V| ≤ HEATMAP_MAX: a two-colour heatmap of the 0/1 matrix, axes labelled with the vertex ``labels``
    (ids if None) in display order. Larger, with at most ``spy_max`` ones (2 |E|): one WebGL dot per
    one. Larger still: the raster of :func:`density_image` (at most ``max_bins`` per side), coloured by
    the log share of each block's cells that are edges.
    """
    n = _check_n(n_nodes)
    e = _edge_array(edges, n)
    if n <= HEATMAP_MAX:
        pos = positions(order, n)
        a = np.zeros((n, n), dtype=np.uint8)  # n ≤ HEATMAP_MAX: a tiny dense matrix
        a[pos[e[:, 0]], pos[e[:, 1]]] = 1
        a[pos[e[:, 1]], pos[e[:, 0]]] = 1
        lab = np.arange(n) if labels is None else np.asarray(list(labels), dtype=object)
        if lab.shape[0] != n:
            raise InputError(f"labels: expected {n} vertex labels, got {lab.shape[0]}")
        shown = lab[np.arange(n) if order is None else np.asarray(order)]
        return _binary_heatmap(a, shown, title, f"{n:,} vertices, {e.shape[0]:,} edges; dark cell = edge")
    if 2 * e.shape[0] <= spy_max:
        pos = positions(order, n)
        pu, pv = pos[e[:, 0]], pos[e[:, 1]]
        return _spy(np.concatenate([pu, pv]), np.concatenate([pv, pu]), n, title,
                    f"{n:,} vertices, {e.shape[0]:,} edges; one dot per edge (both cells of the symmetric matrix)")
    img = density_image(e, n, order=order, max_bins=max_bins)
    sub = (f"{n:,} vertices in {img.bins} × {img.bins} blocks; colour: share of a block's cells that are edges"
           if img.bins < n else f"{n:,} vertices; colour: share of cells that are edges")
    return _raster(_log_density(img.density), img.bounds, _title(title, sub), "share of cells<br>that are edges",
                   "share of cells that are edges")


# ------------------------------------------------------------------------------------------- partition


def _check_partition(partition: object) -> Partition:
    if not isinstance(partition, Partition):
        raise InputError(f"partition: expected a dpviz.graph.Partition, got {type(partition).__name__}")
    return partition


def frontier(partition: Partition, depth: int) -> np.ndarray:
    """Indices of the regions after ``depth`` levels of the decomposition: the regions created at that
    depth and the leaves that stopped above it. They are disjoint (each is a leaf or an ancestor of
    leaves that are not in the set)."""
    p = _check_partition(partition)
    if isinstance(depth, bool) or not isinstance(depth, (int, np.integer)) or depth < 0:
        raise InputError(f"depth: expected a whole number >= 0, got {depth!r}")
    return np.flatnonzero((p.depth == depth) | (p.leaf & (p.depth < depth)))


def partition_density(partition: Partition, *, symmetric: bool = False) -> np.ndarray:
    """Released density of every region: noisy count / cells it counts over — the upper-triangle cells
    (i < j) for the edge-DP methods, the off-diagonal cells for the published DRF (``symmetric=True``,
    which counts both cells of an edge). NaN for a region with no such cell."""
    p = _check_partition(partition)
    cells = (offdiag_cells if symmetric else upper_cells)(p.r0, p.r1, p.c0, p.c1).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(cells > 0, np.asarray(p.noisy, dtype=np.float64) / np.maximum(cells, 1.0), np.nan)


def _paint(values: np.ndarray, r0: np.ndarray, r1: np.ndarray, c0: np.ndarray, c1: np.ndarray,
           bounds: np.ndarray) -> np.ndarray:
    """A b × b raster where each bin takes the value of the (disjoint) rectangle that holds its centre
    position; NaN elsewhere. Vectorised over rectangles (ragged ranges), O(K + b²)."""
    b = bounds.size - 1
    centre = (bounds[:-1] + bounds[1:] - 1) // 2  # one position per bin
    img = np.full(b * b, np.nan)
    i0, i1 = np.searchsorted(centre, r0), np.searchsorted(centre, r1)
    j0, j1 = np.searchsorted(centre, c0), np.searchsorted(centre, c1)
    h, w = np.maximum(i1 - i0, 0), np.maximum(j1 - j0, 0)
    size = h * w
    total = int(size.sum())
    if total == 0:
        return img.reshape(b, b)
    rect = np.repeat(np.arange(size.size), size)
    k = np.arange(total) - np.repeat(np.cumsum(size) - size, size)  # offset inside its rectangle
    rows = i0[rect] + k // w[rect]
    cols = j0[rect] + k % w[rect]
    img[rows * b + cols] = values[rect]
    return img.reshape(b, b)


def _outlines(r0: np.ndarray, r1: np.ndarray, c0: np.ndarray, c1: np.ndarray) -> tuple[list, list]:
    """x (columns) and y (rows) of every rectangle's outline, None between rectangles (one trace)."""
    x0, x1, y0, y1 = c0 - 0.5, c1 - 0.5, r0 - 0.5, r1 - 0.5
    xs = np.column_stack([x0, x1, x1, x0, x0, np.full(x0.shape, np.nan)]).ravel()
    ys = np.column_stack([y0, y0, y1, y1, y0, np.full(y0.shape, np.nan)]).ravel()
    to_list = lambda a: [None if np.isnan(v) else float(v) for v in a]  # noqa: E731 - plotly gaps need None
    return to_list(xs), to_list(ys)


def partition_figure(partition: Partition, n_nodes: int, depth: int, *, symmetric: bool = False,
                     title: str = "", max_bins: int = MAX_BINS, outline_max: int = OUTLINE_MAX) -> go.Figure:
    """The decomposition after ``depth`` levels (:func:`frontier`): each region painted with its noisy
    density (:func:`partition_density`, log₁₀ colour), outlined when there are at most ``outline_max``
    regions, with the main diagonal (counts are on the upper triangle, above it)."""
    n = _check_n(n_nodes)
    p = _check_partition(partition)
    idx = frontier(p, depth)
    dens = partition_density(p, symmetric=symmetric)[idx]
    bounds = _grid(n, max_bins)
    z = _paint(_log_density(dens), p.r0[idx], p.r1[idx], p.c0[idx], p.c1[idx], bounds)
    leaves = int(np.count_nonzero(p.leaf[idx]))
    sub = f"depth {depth}: {idx.size:,} regions ({leaves:,} final); red dots: the diagonal"
    fig = _raster(z, bounds, _title(title, sub), "released edges<br>per cell", "released edges per cell")
    if 0 < idx.size <= outline_max:
        xs, ys = _outlines(p.r0[idx], p.r1[idx], p.c0[idx], p.c1[idx])
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", line=dict(color="white", width=1), hoverinfo="skip",
                                 showlegend=False))
    fig.add_trace(go.Scatter(x=[-0.5, n - 0.5], y=[-0.5, n - 0.5], mode="lines", hoverinfo="skip",
                             line=dict(color="red", width=1, dash="dot"), showlegend=False))
    return fig


# ------------------------------------------------------------------------------------------- degree, budget, metrics


def degree_figure(histograms: Mapping[str, tuple[np.ndarray, np.ndarray]], *,
                  title: str = "Degree distribution") -> go.Figure:
    """Log-log degree distributions: for each series ``name -> (degrees, counts)`` (as returned by
    :func:`dpviz.graph.metrics.degree_histogram`), the share of vertices with each degree ≥ 1
    (degree 0 cannot be drawn on a log axis). The first series is drawn as the reference (black). The
    legend sits right of the plot and the ticks are 1-2-5 values, so nothing overlaps the axis titles."""
    fig = go.Figure()
    shares = []
    for k, (name, (deg, cnt)) in enumerate(histograms.items()):
        deg = np.asarray(deg)
        cnt = np.asarray(cnt, dtype=np.float64)
        total = cnt.sum()
        keep = deg >= 1
        share = cnt[keep] / total if total > 0 else cnt[keep]
        shares.append(share[share > 0])
        style = dict(color="black", width=3) if k == 0 else dict(width=1.5)
        fig.add_trace(go.Scatter(x=deg[keep], y=share, mode="lines+markers", name=name, line=style,
                                 marker=dict(size=5 if k == 0 else 4),
                                 hovertemplate=f"{name}: degree %{{x}}, share %{{y:.3g}}<extra></extra>"))
    xs = [np.asarray(d)[np.asarray(d) >= 1] for d, _ in histograms.values()]
    top = max((float(x.max()) for x in xs if x.size), default=10.0)
    ys = np.concatenate(shares) if shares else np.zeros(0)
    y_lo, y_hi = (float(ys.min()), float(ys.max())) if ys.size else (0.01, 1.0)
    fig.update_xaxes(type="log", title="degree", tickvals=_nice_log_values(1.0, max(top, 2.0)).tolist(),
                     tickformat="~s")
    yv = _nice_log_values(y_lo, max(y_hi, 2 * y_lo))
    fig.update_yaxes(type="log", title="share of vertices", tickvals=yv.tolist(),
                     ticktext=[_fmt_share(v) for v in yv])
    fig.update_layout(title=_title(title), height=400, margin=dict(t=50, l=10, r=10, b=10),
                      legend=dict(x=1.02, xanchor="left", y=1.0, yanchor="top", font=dict(size=11)))
    return fig


def budget_frame(budget: Mapping[str, float], epsilon: float) -> pd.DataFrame:
    """The accounting as a table: one row per sub-budget (in spending order) with its ε and its share
    of ``epsilon``, then a total row. Raises if the sub-budgets do not sum to ``epsilon`` (to 1e-9)."""
    names = [str(k) for k in budget]
    eps = np.array([float(v) for v in budget.values()], dtype=np.float64)
    total = float(np.sum(eps))
    if abs(total - float(epsilon)) > 1e-9 * max(1.0, float(epsilon)):
        raise InputError(f"budget: the sub-budgets sum to {total!r}, not ε = {epsilon!r}")
    return pd.DataFrame({"sub-budget": names + ["total (sequential composition)"],
                         "ε": np.append(eps, total), "share of ε": np.append(eps, total) / float(epsilon)})


MEASURES: dict[str, tuple[str, str]] = {
    "n_edges_released": ("Edges released", "number of edges of the released graph (the true count is in the "
                                           "row name)"),
    "edge_jaccard": ("True edges kept ↑ (edge Jaccard)",
                     "|E ∩ Ẽ| / |E ∪ Ẽ|: released edges that are true edges, over all edges of either graph"),
    "degree_kl": ("Degree-distribution gap ↓ (KL)",
                  "KL(P_true ‖ P_released) of the degree distributions, in nats (0 = the same distribution)"),
    "rrdc": ("Hub rank change ↓ (RRDC)",
             "mean rank change of the true top-1% vertices by degree, as a share of |V| − 1"),
    "cut_error": ("Cut-query error ↓ (|Q̃ − Q| / Q)",
                  "edges between a random vertex set S and the rest: mean relative error, |S| = 0.2..0.8 |V|"),
    "clustering_rel_error": ("Clustering error ↓ (relative)",
                             "relative error of the average local clustering coefficient"),
    "modularity_rel_error": ("Community error ↓ (modularity, relative)",
                             "relative error of the modularity of the true graph's Louvain communities"),
    "eigen_top1_overlap": ("Central vertices kept ↑ (eigenvector top 1%)",
                           "share of the true top-1% vertices by eigenvector centrality still top 1% after release"),
}
"""Row name (plain words, ↓ lower / ↑ higher is better, the paper's symbol after) and one-line definition
of every metric of :func:`dpviz.graph.metrics.evaluate` shown by :func:`metrics_frame`."""
TIME_ROW = "Time to release (s)"


def _fmt_metric(key: str, v: float) -> str:
    if not np.isfinite(v):
        return "not defined"
    if key.startswith("n_edges"):
        return f"{int(round(v)):,}"
    return "0" if v == 0 else f"{v:.3g}"


def metrics_frame(results: Mapping[str, Mapping[str, float]], seconds: Mapping[str, float] | None = None, *,
                  as_text: bool = False) -> pd.DataFrame:
    """The metrics (``method -> evaluate(...)`` dict) as one row per measure (:data:`MEASURES`; the edge
    row names the true edge count) and one column per method (:data:`METHOD_SHORT`), then the release
    times (``seconds``, optional). ``as_text``: cells formatted for a person (edge counts with thousands
    separators, 3 significant digits, "not defined" for a non-finite value)."""
    keys = list(MEASURES)
    cols: dict[str, list] = {}
    true_edges = None
    for method, values in results.items():
        missing = [k for k in (*keys, "n_edges_true") if k not in values]
        if missing:
            raise InputError(f"metrics of {method}: missing {', '.join(missing)}")
        true_edges = int(values["n_edges_true"])
        col = [float(values[k]) for k in keys]
        if seconds is not None:
            col.append(float(seconds[method]))
        cols[METHOD_SHORT.get(method, method)] = (
            [_fmt_metric(k, v) for k, v in zip([*keys, "time"], col)] if as_text else col)
    names = [MEASURES[k][0] for k in keys]
    if true_edges is not None:
        names[0] = f"Edges released (true graph: {true_edges:,})"
    if seconds is not None:
        names.append(TIME_ROW)
    return pd.DataFrame({"measure": names, **cols})


def labelling_figure(history: Sequence[float], *, title: str = "Step 1: q(L) per iteration of Alg. 1") -> go.Figure:
    """q(L) (Eq. 1) after each relabelling iteration (iteration 0 = the random start)."""
    q = np.asarray(history, dtype=np.float64)
    fig = go.Figure(go.Scatter(x=np.arange(q.size), y=q, mode="lines", line=dict(width=2),
                               hovertemplate="iteration %{x}: q(L) = %{y:.4g}<extra></extra>"))
    fig.update_xaxes(title="iteration of Alg. 1")
    fig.update_yaxes(title="q(L), Eq. 1", tickformat="~s")
    fig.update_layout(title=_title(title), height=280, margin=dict(t=50, l=10, r=10, b=10))
    return fig


# ------------------------------------------------------------------------------------------- audit


def audit_frame(result) -> pd.DataFrame:
    """One row per event of an :class:`~dpviz.audit.auditor.AuditResult`: counts out of n on each input
    (test half for threshold events), their Clopper–Pearson bounds and the ε lower bound."""
    rows = []
    for r in result.events:
        (l0, u0), (l1, u1) = r.bounds
        rows.append({"event": r.description, "n": r.n, "k on G": r.counts[0], "k on G′": r.counts[1],
                     "p̂ on G": r.p_hat[0], "CP on G": f"[{l0:.4f}, {u0:.4f}]", "p̂ on G′": r.p_hat[1],
                     "CP on G′": f"[{l1:.4f}, {u1:.4f}]", "ε lower bound": r.epsilon_lower,
                     "from": r.direction})
    return pd.DataFrame(rows)


def audit_figure(result) -> go.Figure:
    """ε lower bound of every event against the claimed ε (a bar above the line refutes the claim)."""
    names = [r.description for r in result.events]
    lower = [max(float(r.epsilon_lower), 0.0) for r in result.events]
    claimed = result.epsilon
    colors = ["crimson" if claimed is not None and v > claimed else "seagreen" for v in lower]
    fig = go.Figure(go.Bar(x=lower, y=names, orientation="h", marker_color=colors,
                           hovertemplate="%{y}: ε ≥ %{x:.3f}<extra></extra>"))
    if claimed is not None:
        fig.add_vline(x=float(claimed), line=dict(color="black", dash="dash"),
                      annotation_text=f"claimed ε = {claimed:g}", annotation_position="top")
    fig.update_xaxes(title=f"ε lower bound ({1 - result.alpha:.0%} confidence)", rangemode="tozero")
    fig.update_layout(title="Audit: ε lower bound per event", height=140 + 60 * len(names),
                      margin=dict(t=80, l=10, r=10, b=10))
    return fig


def thumbnail(data) -> go.Figure:
    """The home page's thumbnail (the registry's ``thumbnail`` hook): the adjacency matrix of a graph
    (``.edges``, ``.n_nodes``; a density raster for big graphs)."""
    from dpviz.viz.thumbnails import shrink

    return shrink(adjacency_figure(data.edges, data.n_nodes))
