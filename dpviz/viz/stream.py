"""Figures and tables for the Stream page (pure: data in, ``go.Figure`` / DataFrame out).

The release figure compares *simulated* releases with the truth (simulation views only). Tables that
are downloaded or written come from :mod:`dpviz.stream.release` (one column builder per capability).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from dpviz.stream import fenwick as F
from dpviz.stream.mechanism import Mechanism, SimulatedRelease
from dpviz.stream.strategy import LABELS
from dpviz.viz.heatmap import HEATMAP_MAX, matrix_heatmap

MATRIX_MAX = HEATMAP_MAX
COLORS: dict[str, str] = {"naive": "#1f77b4", "binary": "#ff7f0e", "fenwick": "#8c564b", "fenwick-fda": "#d62728",
                          "honaker": "#2ca02c", "sqrt": "#9467bd", "smooth-binary": "#17becf", "kary": "#e377c2",
                          "banded": "#bcbd22", "blt": "#7f7f7f", "sqrt-weighted": "#393b79", "blt-weighted": "#8c6d31"}
"""One colour per mechanism, the same in every figure (noise curves, simulated release)."""


def _rgba(hex_colour: str, alpha: float) -> str:
    r, g, b = (int(hex_colour[i:i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r},{g},{b},{alpha})"
MAX_POINTS = 1200
"""Longest line drawn per trace; longer series are reduced by :func:`minmax_index` (the page stays fast)."""


def minmax_index(y: np.ndarray, max_points: int | None = MAX_POINTS) -> np.ndarray:
    """Indices of at most about ``max_points`` points of ``y`` that keep its shape: in each of
    ``max_points // 2`` equal buckets the smallest and the largest value, plus the first and last point.

    Unlike a plain stride this keeps spikes (noise extremes, the popcount pattern of the variance);
    all indices are returned (``arange``) when ``y`` is short enough or ``max_points`` is None.
    """
    y = np.asarray(y, dtype=float)
    n = y.size
    if max_points is None or n <= max_points:
        return np.arange(n)
    buckets = max(1, int(max_points) // 2)
    size = -(-n // buckets)
    rows = -(-n // size)  # <= buckets; only the last row is padded
    pad = np.concatenate([y, np.full(rows * size - n, np.nan)]).reshape(rows, size)
    lo = np.where(np.isnan(pad), np.inf, pad).argmin(axis=1)
    hi = np.where(np.isnan(pad), -np.inf, pad).argmax(axis=1)
    base = np.arange(pad.shape[0]) * size
    return np.unique(np.concatenate([base + lo, base + hi, [0, n - 1]]))


def _x(n: int, timestamps: Sequence | np.ndarray | None) -> np.ndarray:
    """Steps 1..n, or the timestamps as float milliseconds since the Unix epoch (UTC), which a Plotly axis of
    ``type="date"`` reads as dates: sent as a typed array (8 bytes a point, no date string to parse per point
    in the browser: a 17,520-step hourly series redraws several times faster than with ISO strings)."""
    if timestamps is None:
        return np.arange(1, n + 1)
    t = np.asarray(timestamps)[:n]
    if not np.issubdtype(t.dtype, np.datetime64):
        return t
    return t.astype("datetime64[ms]").astype(np.int64).astype(float)


def _dated(timestamps: Sequence | np.ndarray) -> bool:
    return np.issubdtype(np.asarray(timestamps).dtype, np.datetime64)


def release_figure(
    counts: np.ndarray,
    releases: Mapping[str, SimulatedRelease],
    timestamps: Sequence | np.ndarray | None = None,
    *,
    upto: int | None = None,
    max_points: int | None = MAX_POINTS,
    error: bool = False,
) -> go.Figure:
    """True running total and each mechanism's release with a ±2σ band; ``upto`` reveals a prefix ("play").

    ``error=True`` draws released − true instead (the truth is then the zero line), which shows the
    noise when the totals are large. Each line is reduced to about ``max_points`` points
    (:func:`minmax_index`) for drawing.
    """
    n = len(counts) if upto is None else int(upto)
    x = _x(n, timestamps)
    total = np.cumsum(np.asarray(counts, dtype=float))[:n]
    data = []
    for name, rel in releases.items():
        idx = minmax_index(rel.prefix_sums[:n] - total, max_points)
        xi, sd = x[idx], 2.0 * np.sqrt(rel.variance[:n][idx])
        y = rel.prefix_sums[:n][idx] - (total[idx] if error else 0.0)
        label = LABELS.get(name, name)
        colour = COLORS.get(name, "#7f7f7f")
        data.append({"type": "scatter", "x": np.concatenate([xi, xi[::-1]]), "y": np.concatenate([y + sd, (y - sd)[::-1]]),
                     "fill": "toself", "fillcolor": _rgba(colour, 0.12), "line": {"width": 0}, "hoverinfo": "skip",
                     "name": f"{label} ±2σ", "legendgroup": name, "showlegend": False})
        data.append({"type": "scatter", "x": xi, "y": y, "mode": "lines", "name": label, "legendgroup": name,
                     "line": {"color": colour}})
    idx = minmax_index(np.diff(total, prepend=0.0), max_points)
    data.append({"type": "scatter", "x": x[idx], "y": np.zeros(idx.size) if error else total[idx], "mode": "lines",
                 "name": "true running total", "line": {"color": "black", "dash": "dot"}})
    return go.Figure(data=data, layout={
        "xaxis": {"title": {"text": "step" if timestamps is None else "time"},
                  **({} if timestamps is None or not _dated(timestamps) else {"type": "date"})},
        "yaxis": {"title": {"text": "released − true" if error else "running total"}},
        "legend": {"orientation": "h", "yanchor": "bottom", "y": 1.02, "x": 0},
        "margin": margins(legend_entries=len(releases) + 1), "uirevision": "release"})


def margins(*, legend_entries: int = 0, left: int = 90, right: int = 20, top: int = 30, bottom: int = 60) -> dict:
    """Margins wide enough for what the template's auto-margins would push (tick labels and axis titles, a
    colour bar, a horizontal legend above the plot at two entries a row, as at 1280 px), so Plotly draws a
    figure in one pass. With the template's small margins every ``Plotly.react`` measured the labels, found
    the margins changed and drew the whole figure again (``doAutoMargin``: about half of the charts' time in a
    Noise switch, bench/browser_latency.py). Auto-margins stay on: a figure that needs more room still gets it."""
    return {"l": left, "r": right, "t": top + 20 * -(-legend_entries // 2), "b": bottom}


def human_number(v: float) -> str:
    """A number as a person reads it: thousands separated, at most 4 significant digits, no exponent
    between 0.001 and 10¹⁵ (``32,945``, ``223``, ``3.561``, ``0.0123``)."""
    v = float(v)
    if not np.isfinite(v):
        return "not defined"
    a = abs(v)
    if a >= 1e4:
        return f"{v:,.0f}"
    if a >= 1 or a == 0:
        return f"{v:.4g}"
    if a >= 1e-3:
        return f"{v:.3g}"
    return f"{v:.2e}"


_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def _tick_text(v: float) -> str:
    if 1e-3 <= v < 1e6:
        return f"{v:,.10g}"
    k = int(round(np.log10(v)))
    m = v / 10.0 ** k
    return (f"{m:g}×" if abs(m - 1) > 1e-9 else "") + "10" + str(k).translate(_SUPERSCRIPT)


def log_ticks(lo: float, hi: float) -> dict:
    """Ticks a person can read on a log axis spanning [lo, hi] (> 0): 1-2-5 steps up to 2.8 decades,
    1-3 up to 5, powers of ten beyond (never plotly's default 2, 3, … 9 minor labels). Returns
    ``tickvals``/``ticktext`` for ``update_yaxes``."""
    lo, hi = float(lo), float(hi)
    if not (np.isfinite(lo) and np.isfinite(hi)) or lo <= 0 or hi <= 0:
        return {}
    lo, hi = min(lo, hi), max(lo, hi)
    k0, k1 = int(np.floor(np.log10(lo))), int(np.ceil(np.log10(hi)))
    span = np.log10(hi / lo)
    mult = ((1.0,) if span > 5 else (1.0, 3.0) if span > 2.8 else (1.0, 2.0, 5.0) if span > 0.6
            else (1.0, 1.5, 2.0, 3.0, 5.0, 7.0))
    vals = np.array([m * 10.0 ** k for k in range(k0, k1 + 1) for m in mult])
    inside = vals[(vals >= lo * (1 - 1e-9)) & (vals <= hi * (1 + 1e-9))]
    if inside.size < 2:  # a narrow range: the neighbours just outside it too
        below, above = vals[vals < lo], vals[vals > hi]
        inside = np.concatenate([below[-1:], inside, above[:1]])
    return {"tickvals": inside.tolist(), "ticktext": [_tick_text(v) for v in inside]}


LEGEND_TOP = {"orientation": "h", "yanchor": "bottom", "y": 1.02, "x": 0, "title": None}


def variance_figure(mechanisms: Sequence[Mechanism], *, max_points: int | None = MAX_POINTS) -> go.Figure:
    """The "noise curves": per-step analytic variance of every mechanism on one log-scale plot
    (each curve reduced to about ``max_points`` points by :func:`minmax_index`), ticks at 1-2-5 or
    powers of ten (:func:`log_ticks`)."""
    data, lo, hi = [], np.inf, 0.0
    for mech in mechanisms:
        v = mech.per_step_variance()
        idx = minmax_index(v, max_points)
        lo, hi = min(lo, float(v.min())), max(hi, float(v.max()))
        data.append({"type": "scatter", "x": idx + 1, "y": v[idx], "mode": "lines",
                     "name": LABELS.get(mech.name, mech.name), "line": {"color": COLORS.get(mech.name, "#7f7f7f")},
                     "hovertemplate": "step %{x:,}: variance %{y:,.4g}<extra>%{fullData.name}</extra>"})
    return go.Figure(data=data, layout={
        "xaxis": {"title": {"text": "step t (the t-th released running total)"}, "tickformat": ",d"},
        "yaxis": {"title": {"text": "variance of the released total, Var(ŝₜ)"}, "type": "log", **log_ticks(lo, hi)},
        "legend": LEGEND_TOP, "margin": margins(legend_entries=len(data)), "height": 420, "uirevision": "variance"})


def mse_table(mechanisms: Sequence[Mechanism]) -> pd.DataFrame:
    """Sensitivity, total / mean / max per-step MSE and, when Fenwick + FDA is among them, the ratio of
    each total to its total (the column is absent otherwise: no empty cells)."""
    rows = []
    for mech in mechanisms:
        v = mech.per_step_variance()
        rows.append({"mechanism": LABELS.get(mech.name, mech.name), "key": mech.name,
                     "sensitivity": mech.sensitivity, "total MSE": v.sum(), "mean MSE": v.mean(),
                     "max MSE": v.max()})
    df = pd.DataFrame(rows)
    fda = df.loc[df["key"] == "fenwick-fda", "total MSE"] if rows else ()
    if len(fda):
        df["ratio to FDA"] = df["total MSE"] / fda.iloc[0]
    return df.drop(columns="key") if rows else df


def for_display(table: pd.DataFrame, digits: int = 4) -> pd.DataFrame:
    """A copy of a numeric table with every float rounded to ``digits`` significant digits (so a
    "localized" column shows 50,790 and 280.6, not 50,789.042)."""
    out = table.copy()
    for c in out.columns:
        if pd.api.types.is_float_dtype(out[c]):
            v = out[c].to_numpy(dtype=float)
            with np.errstate(divide="ignore", invalid="ignore"):
                mag = np.where(v == 0, 0, np.floor(np.log10(np.abs(np.where(v == 0, 1, v)))))
            scale = 10.0 ** (digits - 1 - mag)
            out[c] = np.round(v * scale) / scale
    return out


DEFAULT_RELEASE = "fenwick-fda"
_SHORT = {"naive": "Naive", "binary": "Binary tree", "fenwick": "Fenwick (λ = 1)", "fenwick-fda": "Fenwick + FDA",
          "honaker": "Honaker", "sqrt": "Square root", "smooth-binary": "Smooth binary", "kary": "k-ary tree",
          "banded": "Banded", "blt": "BLT", "sqrt-weighted": "Weighted sqrt", "blt-weighted": "Weighted BLT"}
"""At most 15 characters: a metric value in a third of the page at 1280 px shows about that many (the metric's
help names the mechanism in full)."""


def short_label(name: str) -> str:
    """A mechanism's short name for a metric value (the full one is :data:`LABELS`)."""
    return _SHORT.get(name, LABELS.get(name, name))


def _mean_ratio(family_noise, name: str, other: str, horizon: int) -> float:
    from dpviz.stream.mechanism import make_mechanism

    a = make_mechanism(name, horizon, family_noise).per_step_variance().mean()
    b = make_mechanism(other, horizon, family_noise).per_step_variance().mean()
    return float(a / b)


def best_mechanisms(mechanisms: Sequence[Mechanism]) -> tuple[str, str]:
    """(lowest mean MSE, lowest worst-step MSE): the mechanism names (keys of :data:`LABELS`)."""
    means = {m.name: float(m.per_step_variance().mean()) for m in mechanisms}
    worst = {m.name: float(m.per_step_variance().max()) for m in mechanisms}
    return min(means, key=means.get), min(worst, key=worst.get)


def best_summary(mechanisms: Sequence[Mechanism], *, default: str = DEFAULT_RELEASE, target: str = "mean",
                 releasable: Sequence[str] | None = None, max_horizon: int = 1 << 20) -> str:
    """Markdown: which selected mechanism has the lowest mean and the lowest worst-step error (analytic,
    no data) and, when that is not the release default (``default``: the best releasable mechanism for the
    ``target`` error, ``"max"`` or ``"mean"``), why the default differs. ``releasable``: the names a release
    accepts with this noise (default: every name).

    For Naive the text quotes the default's mean error at ten times this horizon (the growth that the tree
    and factorisation mechanisms are chosen for), computed from the same structures.
    """
    if not mechanisms:
        return ""
    mean_best, worst_best = best_mechanisms(mechanisms)
    n, noise = mechanisms[0].horizon, mechanisms[0].noise
    by = {m.name: m.per_step_variance() for m in mechanisms}
    lines = [f"**Lowest mean error per step** (mean MSE = total / N): **{LABELS[mean_best]}** "
             f"({human_number(by[mean_best].mean())}). **Lowest worst-step error** (largest MSE over the "
             f"{n:,} steps): **{LABELS[worst_best]}** ({human_number(by[worst_best].max())})."]
    what = "worst-step" if target == "max" else "mean"
    if default in by:
        d = by[default]
        lines.append(f"The release default for the {what} error, {LABELS[default]}: mean {human_number(d.mean())}, "
                     f"worst step {human_number(d.max())}.")
    why = []
    others = {mean_best, worst_best} - {default}
    growth = "(log N)³" if noise.family == "laplace" else "(log N)²"
    if "naive" in others:
        longer = min(10 * n, max_horizon)
        ratio = _mean_ratio(noise, default, "naive", longer) if longer > n else None
        at = (f" At N = {longer:,} (ten times longer) the mean error of {short_label(default)} would be "
              f"{ratio:.2g}× Naive's." if ratio is not None else "")
        why.append("Naive adds fresh noise to every count, so the error of the t-th total grows in proportion "
                   f"to t; the tree mechanisms pay a log N sensitivity up front (Theorem 5.1) and their error "
                   f"grows only like {growth} (§5.4.1). On a horizon this short Naive is still ahead." + at)
    for m in sorted(others - {"naive"}):
        if releasable is not None and m not in releasable:
            why.append(f"{LABELS[m]} cannot be released with this noise (simulation only here).")
            continue
        lower = [e for e, b in (("mean", mean_best), ("worst-step", worst_best)) if b == m]
        if what in lower:  # the lowest among the selected on the target error: the default is not selected
            why.append(f"{LABELS[m]} is the lowest on the {what} error among the mechanisms selected; the default, "
                       f"{LABELS.get(default, default)}, is lower still (select it above to compare).")
        else:
            why.append(f"{LABELS[m]} is lower on the {' and '.join(lower)} error; the default minimises the {what} "
                       "error (choose “Release optimised for” above to change it, or pick it in the release box).")
    if why:
        lines.append("**Why the default differs:** " + " ".join(why) + " Choosing a mechanism from this table "
                     "costs no privacy: these errors depend on N and the noise only, never on the data.")
    return "\n\n".join(lines)


def _heatmap(matrix, title: str, *, row_name: str, col_name: str, colorbar: str) -> go.Figure:
    """:func:`matrix_heatmap` laid out for a full-width tab: title above the top axis title, square cells."""
    fig = matrix_heatmap(matrix, "", row_name=row_name, col_name=col_name)
    n = np.asarray(matrix.shape if hasattr(matrix, "shape") else np.shape(matrix))[0]
    side = int(min(760, max(360, 16 * n + 190)))
    fig.update_traces(colorbar={"title": {"text": colorbar, "side": "right"}, "thickness": 14})
    fig.update_xaxes(title={"text": col_name, "standoff": 6}, tickangle=0 if n <= 32 else -90)
    fig.update_yaxes(scaleanchor="x", constrain="domain")
    fig.update_layout(title={"text": title, "x": 0, "xanchor": "left", "y": 0.995, "yanchor": "top"},
                      height=side, margin={"t": 110, "l": 60, "r": 10, "b": 10})
    return fig


def strategy_heatmaps(lam: np.ndarray) -> dict[str, go.Figure]:
    """M (Alg. 5.2), B (Alg. 5.3) and Σ = diag(λ) (Eq. 5.8) for a horizon N = len(λ) <= 64."""
    n = len(lam)
    return {
        "M": _heatmap(F.strategy_matrix(n), "Strategy M: which steps each tree node adds up (Alg. 5.2)",
                      row_name="node i", col_name="step", colorbar="1 = node adds this step"),
        "B": _heatmap(F.reconstruction_matrix(n), "Reconstruction B: which nodes make each running total (Alg. 5.3)",
                      row_name="released total at step", col_name="node", colorbar="1 = total uses this node"),
        "Σ": _heatmap(np.diag(lam), "Weights Σ = diag(λ): how loudly each node is measured (Eq. 5.8)",
                      row_name="node", col_name="node", colorbar="weight λᵢ"),
    }


def release_default_reason(target: str, family: str, horizon: int, ranking: Sequence[tuple[str, float]],
                           chosen: str) -> str:
    """Why the release default is what it is: the best releasable mechanism for the target error, its margin
    over the runner-up, and what the chosen one costs when the reader picked another."""
    what = "worst-step" if target == "max" else "mean per-step"
    (best, v0), rest = ranking[0], ranking[1:]
    text = (f"Default: **{LABELS.get(best, best)}**, the releasable mechanism with the lowest {what} error at "
            f"N = {horizon:,} with {'Laplace' if family == 'laplace' else 'Gaussian'} noise (exact variances, no data)")
    if rest:
        nxt, v1 = rest[0]
        text += (f"; the next best, {LABELS.get(nxt, nxt)}, "
                 + ("ties with it" if v1 <= 1.005 * v0 else f"has {v1 / v0:.2f}× its variance"))
    if chosen != best:
        vc = dict(ranking).get(chosen)
        if vc is not None:
            text += f". Your choice, {LABELS.get(chosen, chosen)}, has {vc / v0:.2f}× the {what} variance of the default"
    return text + "."


def factor_matrices(strat) -> tuple[np.ndarray, np.ndarray]:
    """(Q, R) of a mechanism W = R Q as dense matrices for a small horizon (N <= MATRIX_MAX): Q's column j is
    what one unit count at step j adds to the measured values (unweighted; FDA's λ only scales their noise),
    R's column i is how measured value i enters the released totals."""
    n = strat.horizon
    if n > MATRIX_MAX:
        raise ValueError(f"factor_matrices: N = {n} is above {MATRIX_MAX}")
    eye = np.eye(n)
    q = np.stack([np.asarray(strat.answer(eye[j]), dtype=float) for j in range(n)], axis=1)
    r = np.asarray(strat.estimator.apply(np.eye(strat.size)), dtype=float).T
    return q, r


def factor_heatmaps(strat) -> dict[str, go.Figure]:
    """The strategy Q and the reconstruction R of any mechanism (W = R Q; the released totals are R (Q a + η));
    empty when the mechanism measures more than MATRIX_MAX values (too many rows to label)."""
    if strat.size > MATRIX_MAX:
        return {}
    q, r = factor_matrices(strat)
    label = LABELS.get(strat.name, strat.name)
    return {
        "Q": _heatmap(q, f"Strategy Q of {label}: what each measured value adds up",
                      row_name="measured value", col_name="step", colorbar="weight of the step"),
        "R": _heatmap(r, f"Reconstruction R of {label}: how the totals are rebuilt (W = R Q)",
                      row_name="released total at step", col_name="measured value", colorbar="coefficient"),
    }


def lambda_figure(lam: np.ndarray, node_std: np.ndarray | None = None, *,
                  max_points: int | None = MAX_POINTS) -> go.Figure:
    """The FDA weight λᵢ of each Fenwick node, coloured by its tree level (log₂ lowbit(i)); with
    ``node_std`` a second panel below shows the noise standard deviation each node gets at this budget
    (scale / λᵢ: it moves with ε). Long profiles are reduced by :func:`minmax_index` (on λ).
    Built in one pass (two stacked y domains, no ``make_subplots``: a rerun stays cheap)."""
    lam = np.asarray(lam, dtype=float)
    i = F.nodes(len(lam))
    level = F.popcount(F.lowbit(i) - 1)
    idx = minmax_index(lam, max_points)
    two = node_std is not None
    marker = {"color": level[idx], "colorscale": "Viridis", "size": 5}
    data = [{"type": "scatter", "x": i[idx], "y": lam[idx], "mode": "markers", "name": "weight λᵢ", "showlegend": False,
             "marker": {**marker, "colorbar": {"title": {"text": "tree level", "side": "right"}, "thickness": 14,
                                               "dtick": 1}},
             "customdata": level[idx], "hovertemplate": "node %{x:,} (level %{customdata}): λ = %{y:.4g}<extra></extra>"}]
    layout = {"height": 260 + 200 * (1 + two), "margin": margins(left=70, right=100, top=20), "uirevision": "lambda",
              "xaxis": {"title": {"text": "tree node i"}, "tickformat": ",d", "anchor": "y2" if two else "y"},
              "yaxis": {"title": {"text": "weight λᵢ"}, "rangemode": "tozero",
                        "domain": [0.56, 1.0] if two else [0.0, 1.0]}}
    if two:
        std = np.asarray(node_std, dtype=float)[idx]
        data.append({"type": "scatter", "x": i[idx], "y": std, "mode": "markers", "name": "noise std",
                     "showlegend": False, "marker": marker, "yaxis": "y2",
                     "hovertemplate": "node %{x:,}: noise std %{y:,.4g}<extra></extra>"})
        layout["yaxis2"] = {"title": {"text": "noise std of the node"}, "type": "log", "domain": [0.0, 0.44],
                            "anchor": "x", **log_ticks(float(std.min()), float(std.max()))}
    return go.Figure(data=data, layout=layout)


def thumbnail(data) -> go.Figure:
    """The home page's thumbnail (the registry's ``thumbnail`` hook): the count per period of a stream
    (``.counts``, ``.timestamps``; time on x when it has timestamps), one line — a continual release reports
    the running total after each period."""
    from dpviz.errors import InputError
    from dpviz.viz.thumbnails import shrink

    counts = np.asarray(data.counts, dtype=float)
    if counts.size == 0:
        raise InputError("stream thumbnail: the stream is empty")
    idx = minmax_index(counts, 400)
    x = idx + 1 if data.timestamps is None else np.asarray(data.timestamps)[idx]
    fig = go.Figure(go.Scatter(x=x, y=counts[idx], mode="lines", line={"width": 1.2}))
    return shrink(fig)
