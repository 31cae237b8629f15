"""Stream page: continual release of running totals (Fenwick + FDA and its peers).

A thin view in the shared page skeleton (:data:`dpviz.core.registry.PAGE_SKELETON`): Data → Privacy →
Strategy and estimator → Simulation → Private release. It reads the widgets, calls :mod:`dpviz.stream`
and draws the figures of :mod:`dpviz.viz.stream`.

* Simulation (under the simulation banner): seeded continuous noise, every selected mechanism on one
  seed, truth and errors shown. Structure work is cached per (mechanism, N, noise family) in the library
  (λ, sensitivities, variance profiles) and the unit draw per (mechanism, N, family, seed) here, so a
  slider move only rescales it (:func:`dpviz.stream.mechanism.simulated_release`).
* Private release (:func:`ui.private_release_panel`): one mechanism, discrete noise from the OS
  CSPRNG, fresh at every click (:func:`dpviz.stream.release.release`); never shows the truth.
"""


import numpy as np
import streamlit as st

from dpviz import ui
from dpviz.core.noise import Noise
from dpviz.core.registry import capability
from dpviz.core.tables import to_csv_text
from dpviz.errors import InputError
from dpviz.stream.io import CAPS_HELP, MAX_BYTES, MAX_STEPS, read_stream_csv
from dpviz.stream.mechanism import make_mechanism, simulated_release, unit_errors
from dpviz.stream.model import StreamData
from dpviz.stream.release import release, simulation_table
from dpviz.stream.strategy import LABELS, available, best_releasable, releasable, releasable_ranking, strategy
from dpviz.stream.synthetic import poisson_stream
from dpviz.viz import stream as vs

CAP = capability("stream")
ui.page_setup(CAP.name)
EPS_OPTIONS = [0.01, 0.015, 0.02, 0.03, 0.05, 0.07, 0.1, 0.15, 0.2, 0.3, 0.5, 0.7,
               1.0, 1.5, 2.0, 3.0, 5.0, 7.0, 10.0]
DELTA_OPTIONS = [1e-9, 1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3]
RHO_OPTIONS = [0.0001, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 2.0, 5.0]
SOURCES = {"bundled": "Bundled real series", "synthetic": "Synthetic (Poisson)", "upload": "Upload a CSV"}
SAMPLES = {s.name: s.title for s in CAP.samples}  # sample:NAME -> human-readable title
SYN_LENGTHS = [16, 31, 64, 365, 1_000, 8_760, 100_000]
SYN_RATES = [0.5, 1.0, 5.0, 10.0, 50.0, 100.0, 1_000.0]
DEFAULT_MECHS = ["naive", "binary", "fenwick-fda", "smooth-binary", "kary"]
TABLE_SLOT = len(DEFAULT_MECHS) + 1  # rows the error table's height holds: the defaults, and Gaussian's release default
TARGETS = {"max": "worst step", "mean": "mean per step"}
NOISE_KINDS = {"laplace": "Laplace (ε-DP)", "gaussian": "Gaussian (zCDP)"}
PLAY_FRAMES = 40  # a play run reveals the stream in about this many frames
PLAY_INTERVAL = "0.6s"

MECH_HELP = ("Naive: noise on every count, the total adds them up (error grows with t). Binary tree (Chan–Shi–"
             "Song): noisy sums over dyadic blocks. Fenwick (λ = 1): the Fenwick-tree matrix mechanism, Alg. 5.2–5.3. "
             "Fenwick + FDA: the same tree with the optimal node weights λ of problem (5.10). Honaker: the binary "
             "tree with the best linear estimator. Square-root factorisation: Gaussian noise only.")
WHAT_IS_THIS = (
    "Source: the chapter on the Fenwick-tree matrix mechanism for continual release (chapter 5 of the bundled "
    "paper; the equation, algorithm and theorem numbers below are its own).\n\n"
    "**The problem.** A count aₜ arrives at every step and the running total sₜ = a₁ + … + aₜ (Eq. 5.3) is "
    "published after each one, N times (Definition 5.2). Written as a matrix, the N totals are W a with W the "
    "lower-triangular matrix of ones (Eq. 5.4).\n\n"
    "**Fenwick tree (Alg. 5.1–5.3).** Instead of adding noise to every total, the mechanism measures N tree "
    "nodes: node i sums the steps (i − lowbit(i), i] (Eq. 5.5), where lowbit(i) is the largest power of two "
    "dividing i (lowbit(12) = 4, Alg. 5.1). The strategy matrix M (Alg. 5.2) holds these sums; the "
    "reconstruction matrix B (Alg. 5.3) rebuilds each total from the chain of nodes t, t − lowbit(t), … "
    "(Eq. 5.6), so W = B M. One count sits in at most ⌊log₂ N⌋ + 1 nodes (Theorem 5.1: the sensitivity) and "
    "a total uses popcount(t) nodes, the number of 1-bits of t (Theorem 5.2). Noise goes on the nodes: "
    "B (M a + noise) (Eq. 5.7).\n\n"
    "**FDA weights λ (Eq. 5.8–5.11).** Fenwick + FDA measures node i louder or softer by a weight λᵢ: it "
    "releases B Σ⁻¹ (Σ M a + noise) with Σ = diag(λ) (Eq. 5.8), whose total squared error is "
    "Eq. 5.9. The weights minimise that error with every count's weights adding up to at most 1 "
    "(problem 5.10), and FDA computes them fast from the recursion of Theorem 5.4 (Eq. 5.11).\n\n"
    "**Noise curves.** The variance of each released total, step by step, computed exactly (no data, no "
    "draw). Naive's line rises in proportion to t; the tree mechanisms zig-zag with popcount(t). They move "
    "with ε: the variance scales with 1/ε² (Laplace) or 1/ρ (Gaussian).\n\n"
    "**Error table.** Per mechanism: its sensitivity (how far one event can move what is measured), the "
    "total squared error over the N totals (Eq. 5.2; Eq. 5.9 with weights), its mean per step and the worst "
    "step. The summary under it says which is best for which error and why the release default may differ.\n\n"
    "**λ chart.** The FDA weight of every node, coloured by its tree level. A louder node (larger λᵢ) "
    "gets less noise, but every count's weights over the nodes that contain it must add up to at most 1 "
    "(that keeps the sensitivity at 1), so the weights trade accuracy between nodes where it lowers the total "
    "error most. The caption under it gives the noise standard deviation the nodes get at this budget (b / λᵢ). "
    "**M, B, Σ** (N ≤ 64): the three matrices of Eq. 5.8 as heatmaps, one tab each.\n\n"
    "**Simulation.** One seeded draw of every mechanism against the true totals, with a ±2σ band from the "
    "exact variance: fine for learning, never a release. **Private release** draws discrete noise once "
    "(Eq. 5.8 with integer node sums) and charges the ledger.")
STRATEGY_COLUMNS = {
    "mechanism": st.column_config.TextColumn("Mechanism", width=250),
    "sensitivity": st.column_config.NumberColumn(
        "Sensitivity Δ", format="%.3g",
        help="How far one event can move the measured values (L1 norm for Laplace, L2 for Gaussian); "
             "for the Fenwick tree ⌊log₂ N⌋ + 1 (Theorem 5.1)."),
    "total MSE": st.column_config.NumberColumn(
        "Total error", format="localized",
        help="Expected squared error summed over the N released totals (total MSE; Eq. 5.2, Eq. 5.9 with FDA weights)."),
    "mean MSE": st.column_config.NumberColumn(
        "Mean per step", format="localized", help="Total / N: the mean squared error of one released total (mean MSE)."),
    "max MSE": st.column_config.NumberColumn(
        "Worst step", format="localized", help="The largest squared error of any one released total (max MSE)."),
    "ratio to FDA": st.column_config.NumberColumn(
        "Total ÷ FDA", format="%.2f", help="This mechanism's total error divided by Fenwick + FDA's (1 = as good)."),
}

ss = st.session_state


# ---- cached structure work -----------------------------------------------------------------------
@st.cache_resource(show_spinner=False, max_entries=8)
def load_synthetic(rate: float, length: int) -> np.ndarray:
    a = poisson_stream(length, rate, np.random.default_rng(2011))
    a.flags.writeable = False
    return a


@st.cache_resource(show_spinner=False, max_entries=64)
def cached_unit_errors(name: str, horizon: int, family: str, seed: int) -> np.ndarray:
    """Simulation: the unit-scale error draw of one mechanism (rng = default_rng(seed), as in the CLI)."""
    return unit_errors(name, horizon, family, seed)


@st.cache_resource(show_spinner=False, max_entries=8)
def lambda_chart(horizon: int, family: str):
    """The λ chart: independent of ε, so an ε move leaves it as drawn (same figure, no repaint)."""
    return vs.lambda_figure(strategy("fenwick-fda", horizon, family).weights)


@st.cache_resource(show_spinner=False, max_entries=8)
def strategy_heatmaps(horizon: int, family: str) -> dict:
    return vs.strategy_heatmaps(strategy("fenwick-fda", horizon, family).weights)


@st.cache_resource(show_spinner=False, max_entries=16)
def factor_heatmaps(name: str, horizon: int, family: str) -> dict:
    return vs.factor_heatmaps(strategy(name, horizon, family))


# ---- callbacks -----------------------------------------------------------------------------------
def _play(horizon: int) -> None:
    ss["playing"] = True
    if ss.get("upto", horizon) >= horizon:
        ss["upto"] = 0  # start over; the first frame advances it


def _pause() -> None:
    ss["playing"] = False


def _synthetic() -> tuple[tuple, np.ndarray]:
    """The synthetic source's widgets: a Poisson stream of a chosen rate and length (seeded: public settings)."""
    k1, k2 = st.columns(2)
    rate = k1.select_slider("Poisson rate per step", SYN_RATES, value=10.0, key="syn_rate",
                            format_func=lambda v: f"{v:g}")
    length = k2.select_slider("Length (steps)", SYN_LENGTHS, value=365, key="syn_length",
                              format_func=lambda v: f"{v:,}")
    return ("synthetic", rate, length), load_synthetic(float(rate), int(length))


def _describe(key: tuple, data) -> str:
    """How the page names its series: the sample's title, the synthetic settings or the uploaded file's name."""
    if key[0] == "bundled":
        return SAMPLES[key[1]]
    if key[0] == "synthetic":
        return f"Poisson stream, rate {key[1]:g}, {key[2]:,} steps"
    return str(key[1])


STREAM_UPLOAD = ui.UploadSpec(
    label="Count stream (CSV)", types=("csv",), key="stream_upload_file",
    parse=lambda raw, name: read_stream_csv(raw),
    help="A header row; a count column (named count/counts/value/n, or the only column) and an optional timestamp "
         f"column (timestamp/date/time/period). Limits: {CAPS_HELP}.",
    caption=f"Limits: {CAPS_HELP}; a row may not have more fields than the header.")


STREAM_RECORDS = ui.RecordsSpec("one row per event, its time in a column",
                                ui.records.stream_refine(CAP.name, max_steps=MAX_STEPS), MAX_BYTES)


# ---- page ----------------------------------------------------------------------------------------
st.title("Stream release")
st.caption("Continual counting: a count arrives every period and the running total is released after "
           "each one, for a horizon of N releases fixed in advance. The Fenwick-tree matrix mechanism "
           f"with optimal diagonal weights (FDA) is compared with its peers. Unit of privacy: {CAP.unit_of_privacy}.")
with st.expander("What am I looking at?", icon=":material/help:"):
    st.markdown(WHAT_IS_THIS)

# 1. Data ------------------------------------------------------------------------------------------
key, series_data = ui.data_source(CAP, SOURCES, STREAM_UPLOAD, sample_label="Series", default_sample="flights",
                                  synthetic=_synthetic, describe=_describe, records=STREAM_RECORDS)
counted = ui.records.counted(CAP.name, key)  # None unless counted from a records (events) upload
name = _describe(key, series_data)
counts, stamps, time_col = ((series_data, None, None) if key[0] == "synthetic" else
                            (series_data.counts, series_data.timestamps, series_data.time_column))
length = int(counts.size)
if ss.get("horizon_for") != key:  # a new series: N defaults to its length
    ss["horizon"] = length
    ss["horizon_for"] = key
horizon = int(st.number_input("Horizon N (releases; the first N steps are released)", min_value=1,
                              max_value=length, step=1, key="horizon"))
st.caption(f"**{name}**: {length:,} steps, total {counts.sum():,.0f}"
           + (f", {np.datetime_as_string(stamps[0], unit='D')} to {np.datetime_as_string(stamps[-1], unit='D')}"
              if stamps is not None else ""))
series = counts[:horizon]
stamps_n = None if stamps is None else stamps[:horizon]
stem = key[1] if key[0] == "bundled" else ("synthetic" if key[0] == "synthetic" else str(key[1]).rsplit(".", 1)[0])

# 2. Privacy ---------------------------------------------------------------------------------------
st.subheader(":material/tune: Privacy")
choice = ui.privacy_widgets(ui.PrivacyKeys(epsilon="epsilon", noise="noise", budget_as="gauss_param", delta="delta",
                                           rho="rho"),
                            eps_options=EPS_OPTIONS, delta_options=DELTA_OPTIONS, rho_options=RHO_OPTIONS,
                            rho_default=0.5)
family = choice.family
try:
    noise = choice.noise()
except InputError as exc:
    st.error(str(exc), icon=":material/error:")
    st.stop()
release_noise = noise.as_discrete()
ui.noise_caption(noise, release_noise)
if counted is not None:  # sensitivity x K: the simulation's mechanisms get the per-record noise (core.records)
    noise = counted.noise(noise)
    counted.privacy_note()

# 3. Strategy and estimator -------------------------------------------------------------------------
st.subheader(":material/account_tree: Strategy and estimator")
options = list(available(family))
if "mechanisms" not in ss:
    ss["mechanisms"] = list(DEFAULT_MECHS)
if ss.get("mechanisms_kind") != family:  # sqrt is Gaussian only: add it on the switch, drop it for Laplace
    sel = [m for m in ss["mechanisms"] if m in options]
    gauss_best = best_releasable(ss.get("stream_target", "max"), "gaussian", horizon) if family == "gaussian" else None
    if gauss_best and gauss_best not in sel:  # the Gaussian release default joins the comparison
        sel.append(gauss_best)
    ss["mechanisms"] = sel
    ss["mechanisms_kind"] = family
methods = st.multiselect("Mechanisms to compare (simulation)", options, key="mechanisms",
                         format_func=lambda m: LABELS.get(m, m), help=MECH_HELP)
release_options = list(releasable(family))
r1, r2 = st.columns([1, 2])
target = r1.radio("Release optimised for", list(TARGETS), format_func=TARGETS.get, key="stream_target",
                  horizontal=True, help="Which error the default release mechanism minimises: the worst released "
                                        "total (max over t of Var ŝₜ) or the mean over the N totals.")
best = best_releasable(target, family, horizon)  # analytic, no data: cached per (target, family, N)
for _fam in ("laplace", "gaussian"):  # the other family and target, built in the background for their first switch
    ui.prefetch(("stream-ranking", _fam, horizon), lambda f=_fam: [releasable_ranking(t, f, horizon) for t in TARGETS])
if ss.get("release_mech") not in release_options or ss.get("release_mech") == ss.get("release_mech_auto"):
    ss["release_mech"] = best  # follows the target until the reader picks another mechanism
ss["release_mech_auto"] = best
release_mech = r2.selectbox("Method of the private release", release_options, key="release_mech",
                            format_func=lambda m: LABELS.get(m, m),
                            help="One mechanism per release; the default is the releasable mechanism with the "
                                 "lowest error for the target on the left. Real-valued factorisations (square "
                                 "root, banded, BLT) are released with discrete Gaussian noise on a fine lattice "
                                 "(2^-k), so they are offered with Gaussian noise only.")
st.caption(vs.release_default_reason(target, family, horizon, releasable_ranking(target, family, horizon), release_mech))
mechs = {m: make_mechanism(m, horizon, noise) for m in methods}
table = vs.mse_table(list(mechs.values())) if mechs else None
if not methods:
    st.warning("Select at least one mechanism.", icon=":material/warning:")
st.markdown("**Noise curves**: how uncertain each released running total is, step by step — its exact "
            "variance Var(ŝₜ) (log scale; no data involved; it moves with ε)")
if mechs:
    ui.chart(st, vs.variance_figure(list(mechs.values())), key="variance_chart", width="stretch")
st.markdown("**Error table** (exact, over the N released totals; hover a column name for its meaning)")
if table is not None:
    st.dataframe(vs.for_display(table), hide_index=True, key="mse_table", width="stretch",
                 height=ui.table_height(max(len(table), TABLE_SLOT)),  # a Noise flip (+1 row) keeps its size
                 column_config={c: cfg for c, cfg in STRATEGY_COLUMNS.items() if c in table.columns})
    if "fenwick-fda" not in mechs:
        st.caption("Select Fenwick + FDA to compare every total with it (Total ÷ FDA).")
    with st.container(border=True):
        st.markdown(vs.best_summary(list(mechs.values()), default=best, target=target, releasable=release_options))
fda = make_mechanism("fenwick-fda", horizon, noise)  # structure cached per (N, family): only the scale is new
st.markdown(f"**FDA weights λ** ({NOISE_KINDS[family]}; problem 5.10): the weight of every tree node, coloured "
            "by its level (the weights do not depend on the budget)")
ui.chart(st, lambda_chart(horizon, family), key="lambda_chart")
node_std = np.sqrt(noise.variance_at(fda.node_scales))
st.caption(f"At this budget node i is measured with noise of standard deviation b / λᵢ, b = "
           f"{vs.human_number(float(np.sqrt(noise.variance_at(fda.base_scale))))}: from "
           f"{vs.human_number(float(node_std.min()))} (the loudest node) to {vs.human_number(float(node_std.max()))} "
           "(the quietest). A larger λᵢ means less noise on that node; each count's weights add up to at most 1.")
if horizon > vs.MAX_POINTS:
    st.caption(f"{horizon:,} nodes: about {vs.MAX_POINTS:,} are drawn (the smallest and largest weight in each "
               "bucket of nodes).")
if horizon <= vs.MATRIX_MAX:
    mat_options = list(available(family))
    if ss.get("matrix_mech") not in mat_options:
        ss["matrix_mech"] = "fenwick-fda"
    mat_mech = st.selectbox("Matrices of", mat_options, key="matrix_mech", format_func=lambda m: LABELS.get(m, m),
                            help="Every mechanism here is a factorisation W = R Q of the running-total matrix W: "
                                 "it measures Q a + noise and releases R (Q a + noise).")
    if mat_mech == "fenwick-fda":
        figs = strategy_heatmaps(horizon, family)
        st.markdown("**The matrices** (Eq. 5.8: the release is B Σ⁻¹ (Σ M a + noise); none depends on ε)")
        tm, tb, ts = st.tabs(["Strategy M", "Reconstruction B", "Weights Σ = diag(λ)"])
        ui.chart(tm, figs["M"], key="m_heatmap", width="stretch")
        ui.chart(tb, figs["B"], key="b_heatmap", width="stretch")
        ui.chart(ts, figs["Σ"], key="sigma_heatmap", width="stretch")
        st.caption("W = B M: node i of M sums the steps (i − lowbit(i), i]; row t of B adds the nodes on the chain "
                   "t, t − lowbit(t), … (popcount(t) of them). FDA releases Σ M a + noise and undoes Σ in B Σ⁻¹.")
    else:
        figs = factor_heatmaps(mat_mech, horizon, family)
        if figs:
            st.markdown(f"**The matrices of {LABELS.get(mat_mech, mat_mech)}** (W = R Q; none depends on ε)")
            tq, tr = st.tabs(["Strategy Q", "Reconstruction R"])
            ui.chart(tq, figs["Q"], key="q_heatmap", width="stretch")
            ui.chart(tr, figs["R"], key="r_heatmap", width="stretch")
        else:
            st.caption(f":material/info: {LABELS.get(mat_mech, mat_mech)} measures "
                       f"{strategy(mat_mech, horizon, family).size:,} values at N = {horizon:,}: more rows than a "
                       f"labelled heatmap holds ({vs.MATRIX_MAX}); lower the horizon N to see its matrices.")
else:
    st.caption(f":material/info: The matrices M, B and Σ are drawn as labelled heatmaps for N ≤ {vs.MATRIX_MAX}: "
               "lower the horizon N to see them.")

# 4. Simulation ------------------------------------------------------------------------------------
seed = ui.simulation_section(CAP)
releases = {m: simulated_release(mech, series, cached_unit_errors(m, horizon, family, seed))
            for m, mech in mechs.items()}
st.caption(f":material/casino: simulation seed **{seed}** — one draw per mechanism, rescaled when ε changes "
           f"(fine for a simulation, never done by a release); {noise.describe}")


def _empirical_rmse(m: str) -> str:
    if m not in releases:
        return "—"
    return vs.human_number(releases[m].empirical_rmse(series))


best_mean, best_worst = vs.best_mechanisms(list(mechs.values())) if mechs else (None, None)
WHY = " See the summary under the error table for why the release default may differ."
m1, m2, m3 = st.columns(3)
m1.metric("Horizon N", f"{horizon:,}", help="Number of running totals released (the first N steps).")
m2.metric("Lowest mean error", vs.short_label(best_mean) if best_mean else "—",
          help=(f"{LABELS[best_mean]}: lowest mean squared error per released total, exact (no data)." + WHY)
          if best_mean else "Select a mechanism.")
m3.metric("Lowest worst-step error", vs.short_label(best_worst) if best_worst else "—",
          help=(f"{LABELS[best_worst]}: lowest squared error at its worst step, exact (no data)." + WHY)
          if best_worst else "Select a mechanism.")
m4, m5, m6 = st.columns(3)
default_mech = make_mechanism(release_mech, horizon, noise)  # the release's mechanism, at the simulation's noise
m4.metric("Release: mean error (MSE)", vs.human_number(default_mech.per_step_variance().mean()),
          help=f"{LABELS[release_mech]} (the release mechanism above): exact mean squared error per released "
               "total, total / N, at this budget (no data).")
m5.metric("Release: this draw (RMSE)",
          _empirical_rmse(release_mech) if release_mech in releases else "not simulated",
          help=f"{LABELS[release_mech]}: root mean squared error of this simulated draw over the N totals "
               "(select it under Mechanisms to compare to simulate it).")
m6.metric("Naive: this draw (RMSE)", _empirical_rmse("naive"),
          help="Naive: root mean squared error of this simulated draw over the N totals.")

st.markdown("**Continual release, simulated** (every selected mechanism on this seed, against the truth)")
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


def view_caption(error: bool) -> str:
    """Why the error view is the default: the noise is tiny next to long running totals."""
    total = float(series.sum())
    if not releases or total <= 0:
        return "Error view: released − true running total, with each mechanism's ±2σ band."
    rmse = [rel.empirical_rmse(series) for rel in releases.values()]
    lo, hi = min(rmse), max(rmse)
    spread = f"{lo:,.3g}" if f"{lo:,.3g}" == f"{hi:,.3g}" else f"{lo:,.3g} to {hi:,.3g}"
    size = (f"The simulated releases are off by an RMSE of {spread} while the true total reaches {total:,.0f} "
            f"(at most {100 * hi / total:.2g}% of it)")
    if error:
        return (f"{size}: drawn as running totals, the released lines would sit on the true one, so the error "
                "(released − true, ±2σ band) is shown by default. Choose **Running totals** to see the series.")
    return f"{size}: at this scale the noise is hard to see; choose **Error** to see it."


def _when(stamp) -> str:
    """A timestamp as a person reads it: the date alone at midnight, else date and time."""
    text = np.datetime_as_string(stamp, unit="m").replace("T", " ")
    return text[:-6] if text.endswith(" 00:00") else text


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
    error_view = v2.radio("Show", ["totals", "error"], index=1, key="release_view", horizontal=True,
                          format_func={"totals": "Running totals", "error": "Error (released − true)"}.get)
    upto = min(upto, horizon)
    when = f" ({_when(stamps_n[upto - 1])})" if stamps_n is not None else ""
    shown = ", ".join(f"{LABELS.get(m, m)} {releases[m].prefix_sums[upto - 1]:,.1f}" for m in releases)
    st.caption(f"Step {upto:,} of {horizon:,}{when}: true total {series[:upto].sum():,.0f}"
               + (f"; simulated: {shown}" if shown else ""))
    ui.chart(st, vs.release_figure(series, releases, stamps_n, upto=upto, error=error_view == "error"),
                    key="release_chart", width="stretch")
    st.caption(view_caption(error_view == "error"))


release_view()
if horizon > vs.MAX_POINTS:
    st.caption(f"Long series: each line is drawn with about {vs.MAX_POINTS:,} points (the smallest and "
               "largest error in each bucket of steps); the numbers and the download use every step.")
if releases:
    d1, d2 = st.columns([1, 2])
    dl = d1.selectbox("Simulated mechanism to download", list(releases), format_func=lambda m: LABELS.get(m, m),
                      key="download_mech")
    sim = releases[dl]
    d2.download_button(
        f"Simulated series (CSV, {LABELS.get(dl, dl)})",
        data=lambda: to_csv_text(simulation_table(sim, series, stamps_n, time_col)),
        file_name=ui.simulation_file_name(CAP, f"{stem}.{dl}.N{horizon}.seed{seed}"), mime="text/csv",
        key="download", icon=":material/download:", on_click="ignore")
    st.caption("A simulation, not a private release: the file holds the true totals (`true_total`) and the "
               "seed reproduces its noise — the same as `python -m dpviz stream simulate --seed`.")


# 5. Private release --------------------------------------------------------------------------------
def _run_release():
    per_record = release_noise if counted is None else counted.noise(release_noise)  # events: sensitivity x K
    rel = release(StreamData(series, stamps_n, "count", time_col), per_record, mechanism=release_mech,
                  horizon=horizon)
    return rel.table(), (rel.metadata() if counted is None else counted.metadata(rel.metadata(), release_noise))


release_describe = f"{LABELS[release_mech]}, {release_noise.describe}, horizon N = {horizon:,}"
if counted is not None:  # events: the time range must be declared (as --start/--end on the CLI)
    ui.release_heading(CAP, release_describe)
ui.private_release_panel(
    CAP, settings=(key, horizon, release_noise, release_mech), describe=release_describe,
    run=_run_release, file_stem=stem, source=key, data=counts if counted is None else counted.upload,
    noise=release_noise, mechanism=release_mech,
    **({} if counted is None else {"declares": True, "structure": ui.records.range_structure(counted)}))
