"""Figures and small tables for the Graph page (pure: arrays in, ``go.Figure`` / DataFrame out).

* Adjacency matrix views: :func:`density_image` bins the edge coordinates into at most
  :data:`MAX_BINS` × :data:`MAX_BINS` bins (O(m + bins²), never a |V|² array) and
  :func:`adjacency_figure` draws it — for a small graph (|V| ≤ :data:`dpviz.viz.heatmap.HEATMAP_MAX`)
  as the one labelled heatmap of :func:`dpviz.viz.heatmap.matrix_heatmap`, vertex labels on the axes;
  above that as a raster of log₁₀ edge density per bin (a labelled heatmap of 600² written cells would
  be unreadable). ``order`` lays the rows/columns out in a relabelled order (``GraphRelease.order``:
  ``order[i]`` is the vertex at row i), as after Step 1 (Alg. 1, Def. 6, Eq. 1) of DRF: G. Gong,
  C. Lessoy, C. Lu and K. Lv, "Differential Privacy Spatial Decomposition via Flattening Kd-Tree",
  International Journal of Performability Engineering 16(6), 2020 ("the paper").
* The decomposition (Step 2, Alg. 2 of the paper; the quadtree / kd-hybrid of Cormode et al., ICDE
  2012): :func:`frontier` is the set of regions after ``depth`` levels of splitting (nodes of that
  depth plus the leaves that stopped earlier), :func:`partition_density` their released density, and
  :func:`partition_figure` paints them — rectangles coloured by noisy density, outlined while there are
  at most :data:`OUTLINE_MAX` of them — on the same raster grid.
* :func:`degree_figure`: degree distributions, log-log (true vs released).
* :func:`budget_frame` / :func:`budget_figure`: the accounting (``GraphRelease.budget``), summing to ε.
* :func:`metrics_frame`: one row per method, the metrics of :func:`dpviz.graph.metrics.evaluate`.
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
from dpviz.graph.release import NOT_PRIVATE_LABEL, Partition
from dpviz.viz.heatmap import HEATMAP_MAX, matrix_heatmap

__all__ = [
    "MAX_BINS", "OUTLINE_MAX", "METHOD_LABELS", "method_label", "DensityImage", "positions", "density_image",
    "adjacency_figure", "frontier", "partition_density", "partition_figure", "degree_figure", "budget_frame",
    "budget_figure", "metrics_frame", "labelling_figure", "audit_frame", "audit_figure",
]

MAX_BINS = 600
"""Largest side of a rasterised adjacency image: a graph with more vertices is binned."""
OUTLINE_MAX = 4_000
"""Most partition rectangles drawn with an outline (beyond that only their colours are painted)."""
COLORSCALE = "Viridis"

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
    """1-2-5 values 10^k·{1, 2, 5} covering [lo, hi] (lo > 0); only powers of 10 beyond 3 decades."""
    k0, k1 = int(np.floor(np.log10(lo))), int(np.ceil(np.log10(hi)))
    mult = (1.0,) if k1 - k0 > 3 else (1.0, 2.0, 5.0)
    vals = np.array([m * 10.0 ** k for k in range(k0, k1 + 1) for m in mult])
    inside = vals[(vals >= lo * (1 - 1e-9)) & (vals <= hi * (1 + 1e-9))]
    return inside if inside.size >= 2 else vals


def _log_ticks(z: np.ndarray) -> dict:
    """Colour-bar ticks for log₁₀ values: labelled with the values themselves (1-2-5 steps)."""
    finite = z[np.isfinite(z)]
    if finite.size == 0:
        return {}
    vals = _nice_log_values(10.0 ** float(finite.min()), 10.0 ** float(finite.max()))
    return dict(tickvals=np.log10(vals).tolist(), ticktext=[f"{v:.3g}" for v in vals])


def _raster(z: np.ndarray, bounds: np.ndarray, title: str, colorbar_title: str, hover: str) -> go.Figure:
    """A b × b raster (z = log₁₀ of a density, NaN blank) on vertex-position axes, row 0 at the top."""
    x = _centres(bounds)
    fig = go.Figure(go.Heatmap(
        z=z.astype(np.float32), x=x, y=x, colorscale=COLORSCALE, hoverongaps=False,
        colorbar=dict(title=colorbar_title, **_log_ticks(z)),
        hovertemplate=f"row %{{y:.0f}}, column %{{x:.0f}}: {hover} 10^%{{z:.2f}}<extra></extra>"))
    n = int(bounds[-1])
    fig.update_yaxes(autorange=False, title="row (vertex position)", range=[n - 0.5, -0.5])
    fig.update_xaxes(autorange=False, side="top", title="column (vertex position)", range=[-0.5, n - 0.5])
    fig.update_layout(title=title, height=520, margin=dict(t=90, l=10, r=10, b=10))
    return fig


def _log_density(d: np.ndarray) -> np.ndarray:
    """log₁₀ of a density, NaN where it is 0 or undefined (blank in the raster)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(d > 0, np.log10(np.where(d > 0, d, 1.0)), np.nan)


def adjacency_figure(edges: np.ndarray, n_nodes: int, *, order: np.ndarray | None = None,
                     labels: Sequence | None = None, title: str = "", max_bins: int = MAX_BINS) -> go.Figure:
    """The adjacency matrix of ``edges`` with rows/columns in ``order``.

    |V| ≤ HEATMAP_MAX: the labelled heatmap (:func:`dpviz.viz.heatmap.matrix_heatmap`) of the 0/1
    matrix, axes labelled with the vertex ``labels`` (ids if None) in display order. Larger: the
    log₁₀ density raster of :func:`density_image` (at most ``max_bins`` per side).
    """
    n = _check_n(n_nodes)
    if n <= HEATMAP_MAX:
        e = _edge_array(edges, n)
        pos = positions(order, n)
        a = np.zeros((n, n))  # n ≤ HEATMAP_MAX: a tiny dense matrix
        a[pos[e[:, 0]], pos[e[:, 1]]] = 1.0
        a[pos[e[:, 1]], pos[e[:, 0]]] = 1.0
        lab = np.arange(n) if labels is None else np.asarray(list(labels), dtype=object)
        if lab.shape[0] != n:
            raise InputError(f"labels: expected {n} vertex labels, got {lab.shape[0]}")
        shown = lab[np.arange(n) if order is None else np.asarray(order)]
        return matrix_heatmap(a, title, row_labels=shown, col_labels=shown, row_name="vertex",
                              col_name="vertex")
    img = density_image(edges, n, order=order, max_bins=max_bins)
    sub = f"{n:,} vertices, {img.bins} × {img.bins} bins" if img.bins < n else f"{n:,} vertices"
    return _raster(_log_density(img.density), img.bounds, f"{title}<br><sup>{sub}; colour: edge density (log)</sup>",
                   "edge density", "density")


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
    fig = _raster(z, bounds, f"{title}<br><sup>depth {depth}: {idx.size:,} regions ({leaves:,} final); colour: "
                  "noisy density (log)</sup>", "noisy density", "noisy density")
    if 0 < idx.size <= outline_max:
        xs, ys = _outlines(p.r0[idx], p.r1[idx], p.c0[idx], p.c1[idx])
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", line=dict(color="white", width=1), hoverinfo="skip",
                                 showlegend=False))
    fig.add_trace(go.Scatter(x=[-0.5, n - 0.5], y=[-0.5, n - 0.5], mode="lines", hoverinfo="skip",
                             line=dict(color="red", width=1, dash="dot"), showlegend=False))
    return fig


# ------------------------------------------------------------------------------------------- degree, budget


def degree_figure(histograms: Mapping[str, tuple[np.ndarray, np.ndarray]], *,
                  title: str = "Degree distribution") -> go.Figure:
    """Log-log degree distributions: for each series ``name -> (degrees, counts)`` (as returned by
    :func:`dpviz.graph.metrics.degree_histogram`), the share of vertices with each degree ≥ 1
    (degree 0 cannot be drawn on a log axis). The first series is drawn as the reference (black)."""
    fig = go.Figure()
    for k, (name, (deg, cnt)) in enumerate(histograms.items()):
        deg = np.asarray(deg)
        cnt = np.asarray(cnt, dtype=np.float64)
        total = cnt.sum()
        keep = deg >= 1
        share = cnt[keep] / total if total > 0 else cnt[keep]
        style = dict(color="black", width=3) if k == 0 else dict(width=1.5)
        fig.add_trace(go.Scatter(x=deg[keep], y=share, mode="lines+markers", name=name, line=style,
                                 marker=dict(size=5 if k == 0 else 4),
                                 hovertemplate=f"{name}: degree %{{x}}, share %{{y:.3g}}<extra></extra>"))
    xs = [np.asarray(d)[np.asarray(d) >= 1] for d, _ in histograms.values()]
    top = max((float(x.max()) for x in xs if x.size), default=10.0)
    fig.update_xaxes(type="log", title="degree", tickvals=_nice_log_values(1.0, max(top, 2.0)).tolist())
    fig.update_yaxes(type="log", title="share of vertices", dtick=1, exponentformat="power")
    fig.update_layout(title=title, height=420, margin=dict(t=60, l=10, r=10, b=10), legend=dict(orientation="h"))
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


def _budget_group(name: str) -> str:
    low = name.lower()
    for key, group in (("relabel", "relabelling"), ("split", "split points"), ("median", "split points"),
                       ("count", "counts"), ("reconstruction", "reconstruction"), ("degree", "degrees")):
        if key in low:
            return group
    return "other"


def budget_figure(budget: Mapping[str, float], epsilon: float, *, title: str = "") -> go.Figure:
    """Horizontal bars, one per sub-budget (top = spent first), coloured by kind; they sum to ε."""
    frame = budget_frame(budget, epsilon).iloc[:-1]
    fig = go.Figure()
    groups = [_budget_group(s) for s in frame["sub-budget"]]
    for g in dict.fromkeys(groups):
        rows = frame[[x == g for x in groups]]
        fig.add_trace(go.Bar(x=rows["ε"], y=rows["sub-budget"], orientation="h", name=g,
                             hovertemplate="%{y}: ε = %{x:.4g}<extra></extra>"))
    fig.update_yaxes(autorange="reversed", type="category", categoryorder="array",
                     categoryarray=list(frame["sub-budget"]))
    fig.update_xaxes(title="ε")
    fig.update_layout(title=title or f"Budget: Σ = ε = {float(epsilon):g}", barmode="overlay",
                      height=max(260, 22 * len(frame) + 120), margin=dict(t=60, l=10, r=10, b=10),
                      legend=dict(orientation="h"))
    return fig


def metrics_frame(results: Mapping[str, Mapping[str, float]]) -> pd.DataFrame:
    """One row per method (``method -> evaluate(...)`` dict), columns labelled by ``METRIC_INFO``; the
    ``method`` column uses :func:`method_label` (the published DRF says it is not edge-DP)."""
    rows = []
    for method, values in results.items():
        missing = [k for k in METRIC_INFO if k not in values]
        if missing:
            raise InputError(f"metrics of {method}: missing {', '.join(missing)}")
        rows.append({"method": method_label(method), **{METRIC_INFO[k][0]: values[k] for k in METRIC_INFO}})
    return pd.DataFrame(rows, columns=["method", *(info[0] for info in METRIC_INFO.values())])


def labelling_figure(history: Sequence[float], *, title: str = "Step 1: q(L) per iteration of Alg. 1") -> go.Figure:
    """q(L) (Eq. 1) after each relabelling iteration (iteration 0 = the random start)."""
    q = np.asarray(history, dtype=np.float64)
    fig = go.Figure(go.Scatter(x=np.arange(q.size), y=q, mode="lines+markers", marker=dict(size=3),
                               hovertemplate="iteration %{x}: q(L) = %{y:.4g}<extra></extra>"))
    fig.update_xaxes(title="iteration")
    fig.update_yaxes(title="q(L)")
    fig.update_layout(title=title, height=300, margin=dict(t=60, l=10, r=10, b=10))
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
