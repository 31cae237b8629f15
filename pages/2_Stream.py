"""Stream release page: continual release of running totals (Fenwick + FDA and its peers).

A thin view: it reads the widgets, calls :mod:`dpviz.stream` and draws the figures built by
:mod:`dpviz.viz.stream`. Work that depends only on the structure is cached: the mechanism at unit
noise per (mechanism, N, noise kind) (the FDA weights per N live inside it) and its unit error draw per
(mechanism, N, noise kind, seed). Moving ε (or δ, ρ) only rescales that draw
(:func:`dpviz.stream.mechanisms.rescaled_release`) and redraws.
"""

import hashlib

import numpy as np
import streamlit as st

from dpviz.data.samples import STREAM_SAMPLES
from dpviz.errors import InputError
from dpviz.privacy.mechanisms import fresh_seed
from dpviz.stream.io import SAMPLE_ALIASES, load_sample, read_stream_csv, release_frame
from dpviz.stream.mechanisms import LABELS, Noise, available, make_mechanism, rescaled_release, unit_noise
from dpviz.stream.synthetic import poisson_stream
from dpviz.viz import stream as vs

EPS_OPTIONS = [0.01, 0.015, 0.02, 0.03, 0.05, 0.07, 0.1, 0.15, 0.2, 0.3, 0.5, 0.7,
               1.0, 1.5, 2.0, 3.0, 5.0, 7.0, 10.0]
DELTA_OPTIONS = [1e-9, 1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3]
RHO_OPTIONS = [0.0001, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 2.0, 5.0]
SOURCES = {"bundled": "Bundled real series", "synthetic": "Synthetic (Poisson)", "upload": "Upload a CSV"}
SAMPLES = dict(zip(SAMPLE_ALIASES, STREAM_SAMPLES, strict=True))  # alias -> human-readable label
SYN_LENGTHS = [16, 31, 64, 365, 1_000, 8_760, 100_000]
SYN_RATES = [0.5, 1.0, 5.0, 10.0, 50.0, 100.0, 1_000.0]
DEFAULT_MECHS = ["naive", "binary", "honaker", "fenwick-fda"]
NOISE_KINDS = {"laplace": "Laplace (ε-DP)", "gaussian": "Gaussian (zCDP)"}
GAUSS_PARAMS = {"eps_delta": "(ε, δ)", "rho": "ρ"}
PLAY_FRAMES = 40  # a play run reveals the stream in about this many frames
PLAY_INTERVAL = "0.6s"

st.set_page_config(page_title="dpviz · Stream release", page_icon=":material/timeline:", layout="wide")
ss = st.session_state


# ---- cached structure work -----------------------------------------------------------------------
@st.cache_resource(show_spinner=False, max_entries=4)
def load_bundled(alias: str):
    return load_sample(alias)


@st.cache_resource(show_spinner=False, max_entries=8)
def load_synthetic(rate: float, length: int) -> np.ndarray:
    a = poisson_stream(length, rate, np.random.default_rng(2011)).astype(float)
    a.flags.writeable = False
    return a


@st.cache_resource(show_spinner=False, max_entries=64)
def unit_mechanism(name: str, horizon: int, kind: str):
    """The mechanism at the reference noise of its kind (FDA weights are computed here, once per N)."""
    return make_mechanism(name, horizon, unit_noise(kind))


@st.cache_resource(show_spinner=False, max_entries=64)
def unit_errors(name: str, horizon: int, kind: str, seed: int) -> np.ndarray:
    """One error draw at the reference noise (rng = default_rng(seed) per mechanism, as in the CLI)."""
    e = unit_mechanism(name, horizon, kind).errors(np.random.default_rng(seed), 1)[0]
    e.flags.writeable = False
    return e


@st.cache_resource(show_spinner=False, max_entries=8)
def strategy_heatmaps(horizon: int, kind: str) -> dict:
    return vs.strategy_heatmaps(unit_mechanism("fenwick-fda", horizon, kind).lam)


# ---- callbacks -----------------------------------------------------------------------------------
def _new_seed() -> None:
    ss["seed"] = fresh_seed()


def _play(horizon: int) -> None:
    ss["playing"] = True
    if ss.get("upto", horizon) >= horizon:
        ss["upto"] = 0  # start over; the first frame advances it


def _pause() -> None:
    ss["playing"] = False


def _handle_upload(f) -> None:
    """Parse a newly uploaded file once; keep the last good one in session_state."""
    if f is None or ss.get("stream_upload_fid") == f.file_id:
        return
    ss["stream_upload_fid"] = f.file_id
    raw = f.getvalue()
    try:
        data = read_stream_csv(raw)
    except InputError as exc:
        ss["stream_upload_error"] = str(exc)
    else:
        ss["stream_upload_error"] = None
        ss["stream_upload"] = (("upload", f.name, hashlib.sha1(raw).hexdigest()), f.name, data.counts,
                               data.timestamps, data.time_column)


# ---- page ----------------------------------------------------------------------------------------
st.title("Stream release")
st.caption("Continual counting: a count arrives every period and the running total is released after "
           "each one, for a horizon of N releases fixed in advance. The Fenwick-tree matrix mechanism "
           "with optimal diagonal weights (FDA) is compared with its peers under the same privacy budget.")

c_data, c_noise = st.columns(2, gap="large")
with c_data:
    st.subheader(":material/database: Data")
    source = st.radio("Data source", list(SOURCES), format_func=SOURCES.get, key="stream_source", horizontal=True)
    if source == "bundled":
        alias = st.selectbox("Series", list(SAMPLES), format_func=SAMPLES.get, key="stream_sample")
        sd = load_bundled(alias)
        current = (("bundled", alias), SAMPLES[alias], sd.counts, sd.timestamps, sd.time_column)
    elif source == "synthetic":
        k1, k2 = st.columns(2)
        rate = k1.select_slider("Poisson rate per step", SYN_RATES, value=10.0, key="syn_rate",
                                format_func=lambda v: f"{v:g}")
        length = k2.select_slider("Length (steps)", SYN_LENGTHS, value=365, key="syn_length",
                                  format_func=lambda v: f"{v:,}")
        current = (("synthetic", rate, length), f"Poisson stream, rate {rate:g}, {length:,} steps",
                   load_synthetic(float(rate), int(length)), None, None)
    else:
        up = st.file_uploader("Count stream (CSV)", type=["csv"], key="stream_upload_file",
                              help="A header row; a count column (named count/counts/value/n, or the only "
                                   "column) and an optional timestamp column (timestamp/date/time/period).")
        _handle_upload(up)
        if up is not None and ss.get("stream_upload_fid") == up.file_id and ss.get("stream_upload_error"):
            st.error(ss["stream_upload_error"], icon=":material/error:")
        if ss.get("stream_upload") is not None:
            current = ss["stream_upload"]
        else:
            current = ss.get("stream_last")
            if current is None:
                sd = load_bundled("flights")
                current = (("bundled", "flights"), SAMPLES["flights"], sd.counts, sd.timestamps, sd.time_column)
            st.info(f"No valid file loaded yet: still showing {current[1]}.", icon=":material/info:")
    ss["stream_last"] = current
    key, name, counts, stamps, time_col = current
    length = int(counts.size)
    if ss.get("horizon_for") != key:  # a new series: N defaults to its length
        ss["horizon"] = length
        ss["horizon_for"] = key
    horizon = int(st.number_input("Horizon N (releases; the first N steps are released)", min_value=1,
                                  max_value=length, step=1, key="horizon"))
    st.caption(f"**{name}**: {length:,} steps, total {counts.sum():,.0f}"
               + (f", {np.datetime_as_string(stamps[0], unit='D')} to {np.datetime_as_string(stamps[-1], unit='D')}"
                  if stamps is not None else ""))

with c_noise:
    st.subheader(":material/tune: Noise")
    n1, n2 = st.columns(2)
    kind = n1.radio("Noise type", list(NOISE_KINDS), format_func=NOISE_KINDS.get, key="noise", horizontal=True)
    gparam = n2.radio("Gaussian parameter", list(GAUSS_PARAMS), format_func=GAUSS_PARAMS.get, key="gauss_param",
                      horizontal=True, disabled=kind != "gaussian")
    use_rho = kind == "gaussian" and gparam == "rho"
    eps = st.select_slider("Privacy budget ε (log scale)", EPS_OPTIONS, value=1.0, key="epsilon",
                           format_func=lambda v: f"{v:g}", disabled=use_rho)
    delta = n1.select_slider("δ (Gaussian, with ε)", DELTA_OPTIONS, value=1e-6, key="delta",
                             format_func=lambda v: f"{v:.0e}", disabled=kind != "gaussian" or use_rho)
    rho = n2.select_slider("ρ (Gaussian, zCDP)", RHO_OPTIONS, value=0.5, key="rho",
                           format_func=lambda v: f"{v:g}", disabled=not use_rho)
    if "seed" not in ss:
        ss["seed"] = 0
    s1, s2 = st.columns(2)
    seed = int(s1.number_input("Noise seed", min_value=0, max_value=2**31 - 1, step=1, key="seed"))
    s2.button("New noise draw", icon=":material/casino:", key="new_draw", on_click=_new_seed)

try:
    if kind == "laplace":
        noise = Noise.laplace(float(eps))
    elif use_rho:
        noise = Noise.gaussian(float(rho))
    else:
        noise = Noise.gaussian_approx(float(eps), float(delta))
except InputError as exc:
    st.error(str(exc), icon=":material/error:")
    st.stop()

options = list(available(noise))
if "mechanisms" not in ss:
    ss["mechanisms"] = list(DEFAULT_MECHS)
if ss.get("mechanisms_kind") != kind:  # sqrt is Gaussian only: add it on the switch, drop it for Laplace
    sel = [m for m in ss["mechanisms"] if m in options]
    if kind == "gaussian" and "sqrt" not in sel:
        sel.append("sqrt")
    ss["mechanisms"] = sel
    ss["mechanisms_kind"] = kind
methods = st.multiselect("Mechanisms", options, key="mechanisms", format_func=lambda m: LABELS.get(m, m))

# ---- release: cached structure + unit draw, rescaled to this noise ---------------------------------
series = counts[:horizon]
stamps_n = None if stamps is None else stamps[:horizon]
mechs, releases = {}, {}
for m in methods:
    mechs[m], releases[m] = rescaled_release(unit_mechanism(m, horizon, kind), noise, series,
                                             unit_errors(m, horizon, kind, seed))
table = vs.mse_table(list(mechs.values())) if mechs else None

st.caption(f":material/casino: noise seed **{seed}** — the same draw is rescaled when ε changes; "
           f"{noise.describe}" + (f" (from ε = {eps:g}, δ = {delta:.0e})" if kind == "gaussian" and not use_rho else ""))


def _fda(col: str) -> str:
    if table is None or "fenwick-fda" not in mechs:
        return "—"
    return f"{float(table.loc[table['mechanism'] == LABELS['fenwick-fda'], col].iloc[0]):.4g}"


def _empirical_rmse(m: str) -> str:
    if m not in releases:
        return "—"
    return f"{releases[m].empirical_rmse(series):.4g}"


m1, m2, m3, m4, m5 = st.columns(5)
m1.metric("Horizon N", f"{horizon:,}")
best = None if table is None else str(table.loc[table["total MSE"].idxmin(), "mechanism"])
m2.metric("Lowest total MSE", "—" if best is None else best.split(" (")[0],
          help=best or "Select a mechanism.")
m3.metric("FDA mean MSE per step", _fda("mean MSE"), help="Analytic: total MSE / N (Eq. 5.9).")
m4.metric("FDA empirical RMSE", _empirical_rmse("fenwick-fda"), help="This noise draw, over the N releases.")
m5.metric("Naive empirical RMSE", _empirical_rmse("naive"))
if not methods:
    st.warning("Select at least one mechanism.", icon=":material/warning:")

# ---- the release, revealed step by step ---------------------------------------------------------
st.subheader(":material/play_circle: Continual release")
if ss.get("upto_for") != (key, horizon) or not 0 <= ss.get("upto", -1) <= horizon:
    ss["upto"] = horizon
    ss["upto_for"] = (key, horizon)
    ss["playing"] = False
playing = bool(ss.get("playing"))
frame = max(1, -(-horizon // PLAY_FRAMES))
b1, b2, b3 = st.columns([1, 1, 4])
if playing:
    b1.button("Pause", icon=":material/pause:", key="pause", on_click=_pause)
else:
    b1.button("Play", icon=":material/play_arrow:", key="play", on_click=_play, args=(horizon,),
              help="Reveal the stream step by step, like a real continual release.")
b2.button("Show all", icon=":material/last_page:", key="show_all",
          on_click=lambda: ss.update(upto=horizon, playing=False))
b3.caption(f"Play advances {frame:,} step{'s' if frame > 1 else ''} every {PLAY_INTERVAL}; "
           "each released total uses only the counts up to its step.")


@st.fragment(run_every=PLAY_INTERVAL if playing else None)
def release_view() -> None:
    if ss.get("playing"):
        ss["upto"] = min(horizon, ss.get("upto", 0) + frame)
        if ss["upto"] >= horizon:
            ss["playing"] = False
            st.rerun(scope="app")  # stop the timer (run_every is fixed per full run)
    v1, v2 = st.columns([3, 1])
    upto = int(v1.slider("Released up to t", min_value=1, max_value=max(horizon, 2), key="upto",
                         disabled=horizon < 2))
    error_view = v2.radio("Show", ["totals", "error"], key="release_view", horizontal=True,
                          format_func={"totals": "Running totals", "error": "Error (released − true)"}.get)
    upto = min(upto, horizon)
    when = f" ({np.datetime_as_string(stamps_n[upto - 1], unit='m')})" if stamps_n is not None else ""
    shown = ", ".join(f"{LABELS.get(m, m)} {releases[m].prefix_sums[upto - 1]:,.1f}" for m in releases)
    st.caption(f"Step {upto:,} of {horizon:,}{when}: true total {series[:upto].sum():,.0f}"
               + (f"; released: {shown}" if shown else ""))
    st.plotly_chart(vs.release_figure(series, releases, stamps_n, upto=upto, error=error_view == "error"),
                    key="release_chart", width="stretch")


release_view()
if horizon > vs.MAX_POINTS:
    st.caption(f"Long series: each line is drawn with about {vs.MAX_POINTS:,} points (the smallest and "
               "largest error in each bucket of steps); the numbers and the download use every step.")

# ---- accuracy -------------------------------------------------------------------------------------
st.subheader(":material/show_chart: Accuracy")
st.markdown("**Noise curves**: analytic per-step variance of each released total (log scale)")
if mechs:
    st.plotly_chart(vs.variance_figure(list(mechs.values())), key="variance_chart", width="stretch")
st.markdown("**MSE table** (analytic, over the N releases; ratio of the total to Fenwick + FDA)")
if table is not None:
    st.dataframe(table, hide_index=True, key="mse_table", width="stretch",
                 column_config={c: st.column_config.NumberColumn(format="%.4g")
                                for c in ("sensitivity", "total MSE", "mean MSE", "max MSE", "ratio to FDA")})
    if "fenwick-fda" not in mechs:
        st.caption("Select Fenwick + FDA to get the ratio column.")

st.subheader(":material/grid_on: Fenwick strategy and the optimal weights")
lam = unit_mechanism("fenwick-fda", horizon, kind).lam
st.markdown(f"**Optimal λ profile** (FDA, {kind} noise; scaled so the largest column constraint is 1)")
st.plotly_chart(vs.lambda_figure(lam), key="lambda_chart", width="stretch")
if horizon <= vs.MATRIX_MAX:
    figs = strategy_heatmaps(horizon, kind)
    h1, h2, h3 = st.columns(3)
    h1.plotly_chart(figs["M"], key="m_heatmap", width="stretch")
    h2.plotly_chart(figs["B"], key="b_heatmap", width="stretch")
    h3.plotly_chart(figs["Σ"], key="sigma_heatmap", width="stretch")
    st.caption("W = B M: node i of M sums the steps (i − lowbit(i), i]; row p of B adds the nodes on the chain "
               "p, p − lowbit(p), … (popcount(p) of them). FDA releases Σ M a + noise and undoes Σ in B Σ⁻¹.")
else:
    st.caption(f":material/info: The matrices M, B and Σ are drawn as labelled heatmaps for N ≤ {vs.MATRIX_MAX}: "
               "lower the horizon N to see them.")

st.subheader(":material/download: Download")
if releases:
    d1, d2 = st.columns([1, 2])
    dl = d1.selectbox("Mechanism", list(releases), format_func=lambda m: LABELS.get(m, m), key="download_mech")
    rel = releases[dl]
    d2.download_button(
        f"Released series (CSV, {LABELS.get(dl, dl)})",
        data=lambda: release_frame(rel, stamps_n, time_col).to_csv(index=False, lineterminator="\n"),
        file_name=f"stream_{dl}_N{horizon}_seed{seed}.csv", mime="text/csv",
        key="download", icon=":material/download:", on_click="ignore")
    st.caption("Columns t, the time column (if any), released_total, variance, std — the same as "
               "`python -m dpviz stream release --output`.")
