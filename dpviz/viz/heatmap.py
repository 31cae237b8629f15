"""The one labelled heatmap every capability uses for small matrices (G, G⁻¹, M, B, Σ, ...)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
import scipy.sparse as sp

from dpviz.errors import InputError

__all__ = ["matrix_heatmap", "HEATMAP_MAX"]

HEATMAP_MAX = 64
"""Largest side drawn as a labelled heatmap (every entry written in its cell)."""


def matrix_heatmap(matrix, title: str = "", *, row_labels: Sequence | None = None,
                   col_labels: Sequence | None = None, row_name: str = "row", col_name: str = "column",
                   max_n: int = HEATMAP_MAX) -> go.Figure:
    """Labelled heatmap of a small dense or sparse matrix, row 0 at the top, non-zeros written in the
    cells. Labels default to 1-based indices. A diverging scale centred on 0 is used when the matrix
    has negative entries (e.g. G), a sequential one otherwise (e.g. B Σ⁻¹)."""
    a = matrix.toarray() if sp.issparse(matrix) else np.asarray(matrix, dtype=float)
    if a.ndim != 2:
        raise InputError(f"matrix view: expected a 2-D matrix, got shape {a.shape}")
    if max(a.shape) > max_n:
        raise InputError(f"matrix view: {a.shape[0]} × {a.shape[1]} is too large for a labelled heatmap; "
                         f"at most {max_n} × {max_n}")
    rows = [str(s) for s in (row_labels if row_labels is not None else range(1, a.shape[0] + 1))][: a.shape[0]]
    cols = [str(s) for s in (col_labels if col_labels is not None else range(1, a.shape[1] + 1))][: a.shape[1]]
    text = np.where(a == 0, "", np.vectorize(lambda v: f"{v:.3g}")(a)) if a.size else None
    diverging = bool(a.size and a.min() < 0)
    lim = float(np.max(np.abs(a))) if a.size else 1.0
    scale = dict(colorscale="RdBu", zmid=0.0, zmin=-lim, zmax=lim) if diverging else dict(colorscale="Blues")
    fig = go.Figure(go.Heatmap(
        z=a, x=cols, y=rows, text=text, texttemplate="%{text}", xgap=1, ygap=1,
        hovertemplate=f"{row_name} %{{y}}, {col_name} %{{x}}: %{{z:.4g}}<extra></extra>", **scale))
    fig.update_yaxes(autorange="reversed", type="category", title=row_name, automargin=True)
    fig.update_xaxes(type="category", side="top", tickangle=-60, title=col_name, automargin=True)
    # the column labels stand at -60° above the plot: leave them room under the title (no overlap)
    longest = max((len(c) for c in cols), default=1)
    top = 60 + int(min(longest, 40) * 6.5 * 0.87) + 40
    side = max(320, min(760, 22 * len(rows) + top + 30))
    fig.update_layout(title=dict(text=title, x=0.01, xanchor="left", y=1, yanchor="top", yref="container",
                                 pad=dict(t=14), font=dict(size=16)),
                      height=side, margin=dict(t=top, l=10, r=10, b=10))
    return fig
