"""Marginals page: low-dimensional marginal tables of a categorical data set.

A thin view in the shared page skeleton (:data:`dpviz.core.registry.PAGE_SKELETON`): Data → Privacy →
Strategy and estimator → Simulation → Private release. It reads the widgets, calls
:mod:`dpviz.marginals.release` and draws the figures of :mod:`dpviz.viz.marginals`.

* Measurements: ResidualPlanner (every residual of the workload's downward closure) or Scalable MWEM
  (the total, then T marginals picked by the exponential mechanism); reconstruction by GReM-MLE / EMP,
  GReM-LNN, Trunc and Trunc+Rescale (Mullins et al., NeurIPS 2024).
* Simulation (under the simulation banner, on the Run button): one seeded continuous draw, every selected
  method on it, errors against the truth, a progress bar and the live GReM-LNN convergence chart.
* Private release (:func:`ui.private_release_panel`): one mechanism, one method, discrete Gaussian noise
  from the OS CSPRNG, fresh at every click; never shows the truth.

Cached: the bundled data, a parsed upload per (file, attributes, bins, binning), the workload closure
statistics and the teaching-view figures. A live simulation is shared by the server's sessions
(:func:`ui.computed`), and what one flip of a radio would show (the budget given the other way, the other
workload choice, the other mechanism, one ε step, one GReM-LNN cap step) is simulated ahead in the background
(:func:`ui.precompute`). A held simulation also serves another GReM-LNN cap or time limit when that is exact
(:func:`dpviz.ui.marginals.reusable`: e.g. a run that stopped early, at any cap above its iteration count).
"""

import math
import time

import streamlit as st

from dpviz import ui
from dpviz.ui import marginals as um
from dpviz.core.modes import SIMULATION_NOTICE, output_name
from dpviz.core.noise import Noise
from dpviz.core.registry import capability
from dpviz.core.tables import meta_json, to_csv_text
from dpviz.errors import InputError
from dpviz.marginals.io import MAX_BYTES, MAX_ROWS, parse_workload, read_table
from dpviz.marginals.cost import LIVE_SECONDS, describe_seconds, estimate_simulation
from dpviz.marginals.declared import read_declaration
from dpviz.marginals.model import Domain, all_kway, downward_closure
from dpviz.marginals.metrics import negative_cells, workload_error
from dpviz.marginals.mwem import DEFAULT_ROUNDS
from dpviz.marginals.lnn import lnn_defaults
from dpviz.marginals.release import LABELS, METHODS, RELEASE_METHODS, release, simulate
from dpviz.viz import marginals as vm

CAP = capability("marginals")
ui.page_setup(CAP.name)
ui.supersede()  # no simulation computed ahead for an earlier state competes with this run
EPS_OPTIONS = [0.1, 0.2, 0.31, 0.5, 1.0, 2.0, 3.16, 5.0, 10.0]
DELTA_OPTIONS = [1e-12, 1e-10, 1e-9, 1e-8, 1e-7, 1e-6, 1e-5]
RHO_OPTIONS = [0.0001, 0.001, 0.005, 0.01, 0.015, 0.05, 0.1, 0.5, 1.0]
SAMPLES = {s.name: s.title for s in CAP.samples}
DEFAULT_SAMPLE = "titanic" if "titanic" in SAMPLES else next(iter(SAMPLES))
SOURCES = {"bundled": "Bundled data", "upload": "Upload a CSV"}
WORKLOADS = {"kway": "All k-way marginals", "pick": "Pick marginals", "upload": "Upload a workload"}
MECHANISMS = {"rp": "ResidualPlanner", "mwem": "Scalable MWEM"}
BIN_OPTIONS = [2, 3, 4, 5, 6, 8, 10, 12, 16, 20]
LNN_ROUNDS = [100, 250, 500, 1000, 2000, 4000]
LNN_LIMITS = [None, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0]
MAX_UPLOAD_ATTRS = 8  # attributes selected by default after an upload
LIVE_EVERY = 0.4  # seconds between redraws of the live GReM-LNN chart
ITERATIONS_KEY = "marginals_lnn_iterations"  # GReM-LNN iterations of the last run per workload (cost estimate)
MEMO_KEY = "marginals_memo"  # recent simulations by their settings: moving ε back is instant
MEMO_ENTRIES = 8
MEMO_MAX_CELLS = 20_000  # memoise only workloads this small (each entry holds every method's marginals)

ss = st.session_state


# ---- cached structure work -----------------------------------------------------------------------
@st.cache_resource(show_spinner=False, max_entries=8)
def read_upload(digest: str, attrs: tuple, bins: int, binning: str, stem: str, _raw: bytes):
    return read_table(_raw, attributes=list(attrs), bins=int(bins), binning=binning, name=stem)


@st.cache_data(show_spinner=False, max_entries=32)
def workload_stats(sizes: tuple, workload: tuple) -> dict:
    """|𝒲|, |𝒲↓|, cells Σ n_γ and residual rows Σ m_τ of a workload (structure only, no data)."""
    dom = Domain(tuple(f"a{i}" for i in range(len(sizes))), sizes)
    closure = downward_closure(workload)
    return {"marginals": len(workload), "closure": len(closure),
            "cells": sum(dom.size(g) for g in workload), "residual_rows": sum(dom.residual_size(t) for t in closure)}


@st.cache_data(show_spinner=False, max_entries=16)
def cached_workload(digest: str, attrs: tuple, sizes: tuple, _raw: bytes) -> list:
    return parse_workload(_raw, Domain(attrs, sizes))


# ---- helpers -------------------------------------------------------------------------------------
def _stem(name: str) -> str:
    for suffix in (".gz", ".csv", ".txt", ".tsv", ".parquet"):
        name = name.removesuffix(suffix)
    return name or "upload"


def _parse_upload(raw: bytes, name: str):
    # every usable column, default bins: validates the file; single-valued columns are left out (not pickable)
    return raw, read_table(raw, name=_stem(name), skip_constant=True)


def _file_stem(key: tuple) -> str:
    return key[1] if key[0] == "bundled" else _stem(key[1])


def _project(ukey: tuple, parsed: tuple):
    """An upload's widgets: which attributes, how many bins per numeric column and how they are cut. Returns
    (key, data) of the projected records, or None (no attribute picked, or the projection failed: said here)."""
    raw, full = parsed
    columns = list(full.domain.attrs)
    if ss.get("marginals_attrs_for") != ukey:  # a new file: all columns (up to 8) selected
        ss["marginals_attrs"] = columns[:MAX_UPLOAD_ATTRS]
        ss["marginals_attrs_for"] = ukey
    u1, u2, u3 = st.columns([3, 1, 1])
    attrs = u1.multiselect("Attributes", columns, key="marginals_attrs")
    bins = u2.select_slider("Bins per numeric column", BIN_OPTIONS, value=10, key="marginals_bins")
    binning = u3.radio("Binning", ["quantile", "width"], key="marginals_binning", horizontal=True)
    bound = ui.records.bound_widgets(CAP.name, columns, exclude=tuple(attrs))
    if not attrs:
        st.warning("Pick at least one attribute.", icon=":material/warning:")
        return None
    try:
        if bound.person:  # a bound per person: counted as `marginals ... --person-column ID --max-contributions K`
            return ui.records.marginals_counted(CAP.name, ukey + (tuple(attrs), int(bins), binning), raw, ukey[1],
                                                _stem(ukey[1]), tuple(attrs), int(bins), binning, bound,
                                                max_bytes=MAX_BYTES, max_rows=MAX_ROWS)
        data = read_upload(ukey[2], tuple(attrs), int(bins), binning, _stem(ukey[1]), raw)
    except InputError as exc:
        cleared = ui.clear_results(CAP.name, ("marginals_sim",))  # nothing of an earlier choice stays shown
        st.error(str(exc) + (" The earlier results were cleared." if cleared else ""), icon=":material/error:")
        return None
    return ukey + (tuple(attrs), int(bins), binning), data


MARGINALS_UPLOAD = ui.UploadSpec(
    label="Records (CSV or Parquet, one row per person; a CSV may be gzip-compressed)", types=("csv", "gz", "parquet"),
    key="marginals_upload_file", parse=_parse_upload,
    help="A header row of column names. Numeric columns with many values are cut into bins (quantile or equal "
         "width); the other columns are categorical.")


def _label(data, g) -> str:
    return vm.clique_label(data.domain, g)


def _kway(k: int, lower: bool) -> list:
    """All k-way marginals (and every lower order with ``lower``)."""
    return [g for j in (range(1, k + 1) if lower else [k]) for g in all_kway(domain, j)]


def _pick_labels(kmax: int) -> tuple[dict, list]:
    """The pickable marginals by label, and the pick to show: the reader's, or the first six 2-way ones."""
    labels = {_label(data, g): g for j in range(1, kmax + 1) for g in all_kway(domain, j)}
    picked = ss.get("marginals_pick", [])
    if ss.get("marginals_pick_for") != domain or not set(picked) <= set(labels):
        picked = [_label(data, g) for g in all_kway(domain, min(2, kmax))][:6]
    return labels, picked


def _run_simulation(noise: Noise, run_methods: tuple, seed: int, workload: list, mechanism: str, rounds, lnn_opts: dict,
                    progress=None):
    """One seeded simulation (pure: data and settings in; a superseded background run stops at its next step)."""
    return simulate(data, noise, list(run_methods), seed, workload=workload, mechanism=mechanism, rounds=rounds,
                    lnn_options=lnn_opts, progress=progress or (lambda *_: ui.check_superseded()))


# ---- page ----------------------------------------------------------------------------------------
st.title("Marginals")
st.caption("Low-dimensional marginal tables (counts over 1, 2 or 3 attributes) of a categorical data set, "
           "measured by ResidualPlanner or Scalable MWEM and reconstructed by GReM-MLE / EMP, GReM-LNN "
           "(every cell ≥ 0) or a truncation baseline (Mullins, Fuentes, Xiao, Kifer, Musco, Sheldon, "
           f"NeurIPS 2024). Unit of privacy: {CAP.unit_of_privacy}.")

with st.expander("What am I looking at?", icon=":material/help:"):
    st.markdown(vm.EXPLAINER)

# 1. Data ------------------------------------------------------------------------------------------
# a rejected upload drops the simulation, and the memo and GReM-LNN iteration counts (they may hold the earlier file's)
data_key, data = ui.data_source(CAP, SOURCES, MARGINALS_UPLOAD, default_sample=DEFAULT_SAMPLE, refine=_project,
                                results=("marginals_sim",), forget=(MEMO_KEY, ITERATIONS_KEY),
                                still_showing="No valid data from the upload yet: still showing {name}.")
stem = _file_stem(data_key)
domain = data.domain
cats = data.categories
universe = math.prod(domain.sizes)
c1, c2, c3 = st.columns(3)
c1.metric("Records N", f"{data.N:,}")
c2.metric("Attributes d", f"{domain.d}")
c3.metric("Cells of the full table", f"{universe:,}" if universe < 1e9 else f"{universe:.3g}",
          help="n = ∏ n_k: never built; every marginal is computed from the records directly.")
with st.expander(f"**{data.name}**: attributes and their categories", icon=":material/table_chart:"):
    st.dataframe({"attribute": list(domain.attrs), "values": list(domain.sizes),
                  "categories": [", ".join(vm.axis_labels(domain, k, cats)) for k in range(domain.d)]},
                 hide_index=True, key="domain_table", width="stretch")
    if data_key[0] == "upload":
        st.caption("The domain (attributes, their categories and bin edges) shown here is read from the uploaded "
                   "records: the simulation uses it, but it is not protected by the noise. A private release takes "
                   "a declared domain (see Private release).")
    else:
        st.caption(f"The domain (attributes, their categories and bin edges) is the sample's shipped public "
                   f"declaration ({data.structure.origin}), not read from the records.")

# 2. Privacy ---------------------------------------------------------------------------------------
st.subheader(":material/tune: Privacy")
choice = ui.privacy_widgets(ui.PrivacyKeys(epsilon="marginals_epsilon", budget_as="marginals_budget",
                                           delta="marginals_delta", rho="marginals_rho"),
                            families=("gaussian",), eps_options=EPS_OPTIONS, delta_options=DELTA_OPTIONS,
                            delta_default=1e-9, rho_options=RHO_OPTIONS, rho_default=0.015,
                            eps_help="Smaller ε = stronger privacy = more noise; with δ it becomes a zCDP budget ρ "
                                     "(ResidualPlanner measures with Gaussian noise).")
use_rho, eps, delta = choice.uses_rho, choice.epsilon, choice.delta
budget = {"rho": choice.rho} if use_rho else {"epsilon": eps, "delta": delta}
counted = ui.records.counted(CAP.name, data_key)  # a person bound: noise for sensitivity x K (core.records)
per_record = (lambda noise: noise) if counted is None else counted.noise
if counted is not None:
    counted.privacy_note()
try:
    rho = Noise.from_params("gaussian", **budget).budget.as_rho(gaussian_only=False)
except InputError as exc:
    st.error(str(exc), icon=":material/error:")
    st.stop()
st.caption(f"**ρ = {rho:.6g}** (zCDP)" + ("" if use_rho else f", from (ε, δ) = ({eps:g}, {delta:.0e}) by the "
                                            "Canonne–Kamath–Steinke conversion")
           + ". Simulation: continuous Gaussian noise at this ρ. Private release: discrete Gaussian noise from the "
             "OS CSPRNG at the same ρ (ResidualPlanner's release charges each residual conservatively, so it is a "
             "little noisier). GReM-MLE / EMP, GReM-LNN and the truncations are post-processing: no extra cost.")

# 3. Strategy and estimator ------------------------------------------------------------------------
st.subheader(":material/account_tree: Strategy and estimator")
w1, w2 = st.columns([1, 2])
wmode = w1.radio("Workload", list(WORKLOADS), format_func=WORKLOADS.get, key="marginals_workload_mode")
kmax = min(3, domain.d)
workload = None
with w2:
    if wmode == "kway":
        if ss.get("marginals_k") not in range(1, kmax + 1):
            ss["marginals_k"] = kmax
        if kmax > 1:
            k = st.select_slider("k (attributes per marginal)", list(range(1, kmax + 1)), key="marginals_k")
        else:
            k = 1
            st.caption("One attribute: the workload is its 1-way marginal.")
        lower = st.checkbox("Also every lower-order marginal (1-way … (k−1)-way)", key="marginals_lower")
        workload = _kway(int(k), lower)
    elif wmode == "pick":
        labels, shown_pick = _pick_labels(kmax)
        if ss.get("marginals_pick_for") != domain or ss.get("marginals_pick") != shown_pick:
            ss["marginals_pick"], ss["marginals_pick_for"] = shown_pick, domain
        picked = st.multiselect("Marginals", list(labels), key="marginals_pick")
        workload = [labels[p] for p in picked] or None
        if workload is None:
            st.warning("Pick at least one marginal.", icon=":material/warning:")
    else:
        wf = st.file_uploader("Workload (JSON list of attribute lists, or CSV with one attribute set per line)",
                              type=["json", "csv", "txt"], key="marginals_workload_file")
        ui.handle_upload(wf, "marginals_workload", lambda raw, name: (raw, parse_workload(raw, domain)))
        if ss.get("marginals_workload_upload") is not None:
            wkey, (wraw, _) = ss["marginals_workload_upload"]
            try:
                workload = cached_workload(wkey[2], domain.attrs, domain.sizes, wraw)
            except InputError as exc:  # a workload file of another data set
                st.error(str(exc), icon=":material/error:")
        if workload is None:
            st.info("No valid workload file for this data yet: using all 2-way marginals.", icon=":material/info:")
            workload = all_kway(domain, min(2, kmax))
if workload is None:
    workload = all_kway(domain, kmax)
workload = list(dict.fromkeys(tuple(g) for g in workload))
try:
    for g in workload:
        domain.check_cells(g)
except InputError as exc:
    st.error(str(exc), icon=":material/error:")
    st.stop()
stats = workload_stats(domain.sizes, tuple(workload))
st.caption(f"Workload 𝒲: **{stats['marginals']:,} marginals**, {stats['cells']:,} cells; its downward closure 𝒲↓ "
           f"has {stats['closure']:,} attribute sets (∅ included) and {stats['residual_rows']:,} residual rows.")

m1, m2 = st.columns([1, 2])
mechanism = m1.radio("Mechanism", list(MECHANISMS), format_func=MECHANISMS.get, key="marginals_mechanism",
                     help="How the noise is added. ResidualPlanner measures the residuals (the parts of each "
                          "marginal not explained by its sub-marginals) once each, with the noise split to minimise "
                          "the workload's variance. Scalable MWEM measures the total, then picks T marginals one "
                          "at a time where the current estimate is worst.")
m1.caption(LABELS[mechanism])
with m2:
    t_max = max(1, len(workload))
    if ss.get("marginals_rounds_max") != t_max:
        ss["marginals_rounds"] = min(DEFAULT_ROUNDS, t_max)
        ss["marginals_rounds_max"] = t_max
    rounds = int(st.number_input("Scalable MWEM rounds T (each round selects one new workload marginal)",
                                 min_value=1, max_value=t_max, step=1, key="marginals_rounds",
                                 disabled=mechanism != "mwem"))
    if "marginals_methods" not in ss:
        ss["marginals_methods"] = list(METHODS)
    methods = st.multiselect("Reconstruction methods (simulation: all on the same measurements)", list(METHODS),
                             key="marginals_methods", format_func=vm.method_choice,
                             help="GReM-MLE (EMP on Scalable MWEM): unbiased least squares, may give negative "
                                  "counts. GReM-LNN: the same fit with every cell ≥ 0. Trunc: negative counts set "
                                  "to 0. Trunc+Rescale: then scaled back to the marginal's total.")
    l1c, l2c, l3c = st.columns(3)
    lnn_rounds = l1c.select_slider("GReM-LNN: at most this many iterations", LNN_ROUNDS,
                                   value=lnn_defaults("rp")["rounds"], key="marginals_lnn_rounds")
    lnn_limit = l2c.selectbox("GReM-LNN time limit", LNN_LIMITS, key="marginals_lnn_limit",
                              format_func=lambda v: "none" if v is None else f"{v:g} s",
                              help="Stop the dual ascent after this long (the result then depends on the "
                                   "machine's speed; still non-negative). Large workloads (Adult, all 3-way: "
                                   "~0.2 s per iteration here) take minutes at 4000 iterations.")
    release_method = l3c.selectbox("Method of the private release", list(RELEASE_METHODS),
                                   key="marginals_release_method", format_func=vm.method_choice)
_lnn_opts = lambda mech, cap=None: {**lnn_defaults(mech), "rounds": int(cap or lnn_rounds),  # noqa: E731
                                     "time_limit": lnn_limit}
lnn_opts = _lnn_opts(mechanism)
st.caption("GReM-LNN settings (paper App. H): " + vm.lnn_settings_text(lnn_opts)
           + "; it stops early once the counts below zero sum to less than 1 (negative mass) or the multipliers "
             "only act on cells at zero (complementary slackness).")
if not methods:
    st.warning("Select at least one reconstruction method.", icon=":material/warning:")

um.teaching_view()

# 4. Simulation ------------------------------------------------------------------------------------
seed = ui.simulation_section(CAP)


def _plan(budget: dict, workload: list, mechanism: str, rounds: int, cap: int | None = None) -> tuple:
    """(shape key, cost estimate, GReM-LNN seconds, the methods recomputed at once, key of their simulation) of
    one setting: the page's own, or one a radio flip away (precomputed in the background, :func:`_precompute`);
    ``cap``: GReM-LNN's iteration cap (default: the slider's)."""
    mwem_rounds, cap = (rounds if mechanism == "mwem" else None), int(cap or lnn_rounds)
    shape = (data_key, tuple(workload), mechanism, mwem_rounds, cap, lnn_limit)
    cost = estimate_simulation(domain, workload, data.N, mechanism=mechanism, rounds=mwem_rounds, methods=methods,
                               lnn_rounds=cap, lnn_iterations=ss.get(ITERATIONS_KEY, {}).get(shape))
    lnn_s = cost.lnn if lnn_limit is None else min(cost.lnn, float(lnn_limit))
    live = tuple(methods) if cost.measure + lnn_s <= LIVE_SECONDS else tuple(
        m for m in methods if m != "lnn") if cost.measure <= LIVE_SECONDS else ()
    return shape, cost, lnn_s, live, (shape + (tuple(sorted(budget.items())), seed), live)


mwem_rounds = rounds if mechanism == "mwem" else None
shape_key, cost, lnn_seconds, live_methods, live_key = _plan(budget, workload, mechanism, rounds)
full_key = (live_key[0], tuple(methods))
run_clicked = False
if methods and full_key != live_key:
    what = "the simulation with GReM-LNN" if live_methods else "the simulation"
    run_clicked = st.button(f"Run {what} ({describe_seconds(cost.measure + lnn_seconds)})",
                            icon=":material/play_arrow:", key="marginals_run", type="primary",
                            help="Estimated from the workload's size (GReM-LNN: iterations × the cost of one, "
                                 "Thm. 6e); the faster methods above are recomputed at once on every change.")
elif methods:
    st.caption(f":material/bolt: Recomputed automatically at every change ({describe_seconds(cost.total)} "
               "or less): every selected method, on one seeded draw.")


def _simulate(key: tuple, run_methods: tuple, progress=None) -> None:
    """Run the simulation for ``key`` (one seeded draw, ``run_methods`` on it) and hold it, memoised."""
    history: list = []

    def record(stage: str, done: int, total: int, *extra) -> None:
        if stage == "GReM-LNN" and len(extra) >= 2:
            history.append((done, float(extra[0]), float(extra[1])))
        if progress is not None:
            progress(stage, done, total, history)

    args = (per_record(Noise.from_params("gaussian", **budget)), run_methods, seed, workload, mechanism, mwem_rounds,
            lnn_opts)
    try:  # the live simulation may have been computed ahead, in the background (:func:`_precompute`)
        sim = (ui.computed((CAP.name, key), _run_simulation, *args) if progress is None and counted is None
               else _run_simulation(*args, progress=record))
    except InputError as exc:
        st.error(str(exc), icon=":material/error:")
        return
    ss["marginals_sim"] = (key, sim, tuple(history))
    if "lnn" in sim.results:
        ss.setdefault(ITERATIONS_KEY, {})[shape_key] = int(sim.results["lnn"].info.get("iterations") or 0) or None
    if stats["cells"] <= MEMO_MAX_CELLS:
        memo = ss.setdefault(MEMO_KEY, {})
        memo[key] = ss["marginals_sim"]
        while len(memo) > MEMO_ENTRIES:
            memo.pop(next(iter(memo)))


# One slot for "Simulating ..." on every run, used or not: an element that appears only on some runs moves every
# element after it, and the browser then builds the charts below anew instead of updating them (issue 19)
busy = st.empty()
if run_clicked:
    bar = st.progress(0.0, text="Measuring ...")
    live = st.empty()
    last = {"t": 0.0, "stage": None, "start": time.monotonic()}

    def progress(stage: str, done: int, total: int, history: list) -> None:
        now = time.monotonic()
        if stage != last["stage"]:
            last.update(stage=stage, start=now)
        elapsed = now - last["start"]
        eta = elapsed / max(done, 1) * max(total - done, 0)
        bar.progress(min(1.0, done / max(total, 1)),
                     text=f"{stage}: {'iteration' if stage == 'GReM-LNN' else 'round'} {done:,} of at most {total:,} "
                          f"— {elapsed:,.0f} s so far, at most about {eta:,.0f} s left")
        if stage == "GReM-LNN" and history and now - last["t"] > LIVE_EVERY:
            last["t"] = now
            ui.chart(live, vm.lnn_convergence_figure(history, "GReM-LNN dual ascent (running)"), width="stretch",
                     key=f"lnn_live_{len(history)}")  # redrawn in one run: a new key each time

    _simulate(full_key, tuple(methods), progress)
    bar.empty()
    live.empty()
elif (ss.get("marginals_sim") or (None,))[0] not in (full_key, live_key) and (found := um.reusable(
        full_key, kept := [ss.get("marginals_sim"), *ss.get(MEMO_KEY, {}).values()]) or um.reusable(live_key, kept)):
    ss["marginals_sim"] = found  # held or memoised: this draw, or the same under another GReM-LNN cap or limit
elif live_methods and (ss.get("marginals_sim") or (None,))[0] not in (full_key, live_key):
    with busy, st.spinner("Simulating ..."):
        _simulate(live_key, live_methods)

held = ss.get("marginals_sim")
if not methods:
    pass
elif held is None or held[0] not in (full_key, live_key):
    st.info(f"This simulation takes {describe_seconds(cost.measure + lnn_seconds)} (estimated from the workload's "
            "size): press the button above to run it.", icon=":material/info:")
else:
    _, sim, live_history = held
    waits = st.empty()  # captions shown on some runs only: each in a slot of its own on every run (see `busy`)
    if held[0] == live_key != full_key:
        waits.caption(f":material/hourglass: GReM-LNN is not in this draw: it takes {describe_seconds(lnn_seconds)} "
                      "here, so it waits for the button above; the other methods follow every change.")
    mech = sim.mechanism
    names = {m: vm.method_label(m, mech) for m in sim.results}
    st.caption(f":material/casino: simulation seed **{sim.seed}**; {sim.budget_text}. {sim.detail}. "
               f"Measuring took {sim.measure_seconds:.3g} s.")
    table = sim.table()
    best = table.loc[table["l1"].idxmin(), "method"]
    k2, k3, k4 = st.columns(3)
    k2.metric("Workload marginals", f"{len(sim.workload):,}")
    k3.metric("Lowest ℓ1 error", names[best], help="Average over the workload of ‖μ̂_γ − μ_γ‖₁ / n_γ.")
    k4.metric(f"{names[best]} ℓ1 error per cell", f"{table['l1'].min():.4g}")
    st.markdown("**Error per method** (same measurements for every method; averaged over the workload marginals, "
                "per cell)")
    waiting = [m for m in methods if m not in sim.results]  # GReM-LNN waiting for the button: a row all the same
    view, helps = vm.method_error_view(table, names | {m: vm.method_label(m, mech) for m in waiting},
                                       baseline="mle" if "mle" in sim.results else None, waiting=waiting)
    st.table(view, hide_index=True)  # static: every column whole, cheaper to redraw than a data grid (issue 19)
    st.caption("Errors are averaged over the workload marginals γ ∈ 𝒲 and divided by the cells n_γ of each (the "
               "paper's workload error, §5). " + " ".join(f"*{c}*: {h}" for c, h in helps.items() if c != "method")
               + " *No closed form*: only the unbiased GReM-MLE / EMP has an analytic variance (derived from Prop. 1 "
                 "and the noise scales; rem-digest §1.5).")
    selected = st.empty()
    if sim.selected:
        selected.caption("Marginals selected by Scalable MWEM, in order: "
                         + ", ".join(_label(data, g) for g in sim.selected) + ".")

    errors = vm.per_marginal_errors(domain, sim.truth, {m: r.marginals for m, r in sim.results.items()},
                                    {m: r.variance for m, r in sim.results.items()}, labels=names)
    ui.chart(st, vm.per_marginal_error_figure(errors), key="marginals_error_bars", width="stretch")
    marks = st.empty()
    if "mle" in sim.results and sim.results["mle"].variance:
        within = errors.loc[errors["key"] == "mle"]
        share = float((within["within 2σ"] * within["cells"]).sum() / within["cells"].sum())
        marks.caption(f"Black marks: the analytic per-cell σ_γ of {names['mle']} (its expected RMSE) and 2σ_γ; "
                      f"{share:.1%} of its cells lie within ±2σ_γ of the truth in this draw (about 95% expected "
                      "where the estimate is unbiased).")

    st.markdown("**Marginal explorer**: the true marginal and every method's reconstruction")
    labels = {_label(data, g): g for g in sim.workload}
    if ss.get("marginals_explore") not in labels:
        ss["marginals_explore"] = next(iter(labels))
    e1, e2 = st.columns([2, 3])
    shown = e1.selectbox("Marginal", list(labels), key="marginals_explore")
    g = labels[shown]
    series = {"true": sim.truth[g]} | {names[m]: r.marginals[g] for m, r in sim.results.items()}
    e2.caption(f"{domain.size(g):,} cells. " + "; ".join(
        f"{names[m]}: ℓ1 / cell {workload_error({g: sim.truth[g]}, {g: r.marginals[g]}):.4g}, "
        f"{negative_cells({g: r.marginals[g]})} negative" for m, r in sim.results.items()))
    ui.chart(st, vm.marginal_explorer_figure(domain, g, series, cats), key="marginals_explorer", width="stretch")

    if "lnn" in sim.results:
        info = sim.results["lnn"].info
        hist = info.get("history") or live_history
        st.caption(vm.lnn_run_text(info))
        if hist and st.toggle("Show GReM-LNN's convergence: the dual objective and the negative mass per iteration",
                              key="marginals_show_lnn",
                              help="Dual ascent (Alg. 6 of the paper, corrected): the objective should level off and the "
                                   "negative mass fall to zero. Off by default: one chart less to redraw on every "
                                   "ε move."):
            ui.chart(st, vm.lnn_convergence_figure(hist), key="marginals_lnn_chart", width="stretch")

    long = lambda: vm.marginals_long_table(domain, {"true": sim.truth} | {names[m]: r.marginals
                                                                        for m, r in sim.results.items()}, cats)

    sim_stem = f"{stem}.{sim.mechanism}.seed{sim.seed}"
    d1, d2 = st.columns(2)
    d1.download_button("Simulated marginals (CSV: true and every method)", data=lambda: to_csv_text(long()),
                       file_name=ui.simulation_file_name(CAP, sim_stem), mime="text/csv", key="marginals_sim_csv",
                       icon=":material/download:", on_click="ignore")
    d2.download_button("Simulated marginals (JSON)", data=lambda: meta_json(vm.simulation_payload(sim, names, SIMULATION_NOTICE)),
                       file_name=output_name(CAP.name, "simulate", sim_stem, "json"), mime="application/json",
                       key="marginals_sim_json", icon=":material/download:", on_click="ignore")
    st.caption("A simulation, not a private release: the files hold the true marginals and the seed reproduces the "
               "noise — the same as `python -m dpviz marginals simulate --seed`.")


# 5. Private release --------------------------------------------------------------------------------
DOMAIN_DECLARATION = ui.DeclarationSpec(
    what="domain", label="DOMAIN.json: the attributes, their categories and numeric bin edges", types=("json",),
    parse=lambda raw, name: read_declaration(raw, origin=name),
    template="python -m dpviz marginals describe-structure DATA --output DOMAIN.json")


@st.cache_resource(show_spinner=False, max_entries=4)
def declared_upload(digest: str, attrs: tuple, declaration_key: tuple, stem: str, _raw: bytes, _decl):
    """The upload read on the declared domain (declared categories and bin edges; records outside dropped,
    clamped or put in the catch-all as declared; how many is never shown)."""
    return read_table(_raw, attributes=list(attrs), domain=_decl, name=stem)


def _release_structure() -> tuple[ui.Structure | None, object, str | None]:
    """(the release's public structure, the Dataset to release, a reason the draw is refused)."""
    if data_key[0] != "upload":
        return ui.shipped_structure(data.structure.origin), data, None
    structure = ui.declared_structure(CAP, DOMAIN_DECLARATION)
    if structure is None or structure.from_data:
        return structure, data, None
    held_upload = ss.get("marginals_upload")
    try:
        if held_upload is None or held_upload[0] != data_key[:3]:
            raise InputError("the uploaded records are no longer loaded: upload them again")
        if counted is not None:  # the same people under the bound, coded by the declared domain
            return structure, ui.records.marginals_declared(counted, structure.key, structure.value), None
        return structure, declared_upload(data_key[2], data_key[3], structure.key, stem, held_upload[1][0],
                                          structure.value), None
    except InputError as exc:
        ss.pop(f"{CAP.name}_private_release", None)
        st.error(f"The records do not fit the declared domain, nothing can be drawn: {exc}", icon=":material/error:")
        return structure, data, str(exc)


ui.release_heading(
    CAP, f"{MECHANISMS[mechanism]}" + (f" (T = {rounds})" if mechanism == "mwem" else "")
         + f" with discrete Gaussian noise, ρ = {rho:.4g}, reconstructed by {vm.method_label(release_method, mechanism)}"
         f", {len(workload):,} workload marginals on the public domain; columns marginal, cell, released"
         + (", variance (analytic)" if release_method == "mle" else "")
         + "; the JSON description also holds the released marginals"
         + (f". GReM-LNN on {stats['cells']:,} cells may take minutes (no progress bar here)"
            if release_method == "lnn" and stats["cells"] > 50_000 else ""))
release_structure, release_data, refused = _release_structure()


def _run_release():  # no seed, no truth: discrete Gaussian noise from the OS CSPRNG (pipeline.release)
    rel = release(release_data, per_record(Noise.from_params("gaussian", **budget, discrete=True)), workload=workload,
                  mechanism=mechanism, method=release_method, rounds=rounds if mechanism == "mwem" else None,
                  lnn_options=lnn_opts)
    meta = rel.metadata() if counted is None else counted.metadata(rel.metadata(), Noise.from_params(
        "gaussian", **budget, discrete=True))  # the person-level budget, sensitivity x K
    return ui.with_notice(rel.table(), release_structure), {**meta, **rel.as_json()}


ui.private_release_panel(
    CAP, settings=(data_key, tuple(workload), tuple(sorted(budget.items())), mechanism,
                   rounds if mechanism == "mwem" else None, release_method, int(lnn_rounds), lnn_limit),
    describe="", run=_run_release, file_stem=stem, source=data_key, data=data,
    noise=Noise.from_params("gaussian", **budget, discrete=True), mechanism=mechanism,
    structure=release_structure, declares=True, blocked=refused)


def _precompute() -> None:
    """Simulate in the background what one radio flip would show — the budget given the other way, the other
    workload choice, the other mechanism —, one ε step and one GReM-LNN cap step (unless the held simulation
    serves that cap exactly, :func:`dpviz.ui.marginals.reusable`), so they find it computed (:mod:`dpviz.ui.background`)."""
    if wmode == "kway":
        picks, picked = _pick_labels(kmax)
        other = [picks[p] for p in picked]
    else:
        other = _kway(ss["marginals_k"] if ss.get("marginals_k") in range(1, kmax + 1) else kmax,
                      ss.get("marginals_lower", False))
    other = list(dict.fromkeys(tuple(g) for g in other))
    flip = {"rho": float(ss.get("marginals_rho", 0.015))} if not use_rho else {
        "epsilon": float(ss.get("marginals_epsilon", 1.0)), "delta": float(ss.get("marginals_delta", 1e-9))}
    t_other = rounds if len(other) == len(workload) else min(DEFAULT_ROUNDS, max(1, len(other)))
    i = 0 if use_rho else EPS_OPTIONS.index(eps)  # then one ε step either way (after the radios)
    steps = [] if use_rho else [{"epsilon": e, "delta": delta} for e in EPS_OPTIONS[max(0, i - 1):i + 2] if e != eps]
    j = LNN_ROUNDS.index(int(lnn_rounds))
    caps = [c for c in LNN_ROUNDS[max(0, j - 1):j + 2] if c != int(lnn_rounds)] if "lnn" in live_methods else []
    for b, wl, mech, t, cap in ((flip, workload, mechanism, rounds, None), (budget, other, mechanism, t_other, None),
                                (budget, workload, "mwem" if mechanism == "rp" else "rp", rounds, None),
                                *((b, workload, mechanism, rounds, None) for b in steps),
                                *((budget, workload, mechanism, rounds, c) for c in caps)):
        live, key = _plan(b, wl, mech, t, cap)[3:] if wl else ((), None)
        if cap is not None and key is not None and um.reusable(key, [ss.get("marginals_sim")]):
            continue
        if live and workload_stats(domain.sizes, tuple(wl))["cells"] <= MEMO_MAX_CELLS:
            ui.precompute((CAP.name, key), _run_simulation, per_record(Noise.from_params("gaussian", **b)), live, seed,
                          wl, mech, t if mech == "mwem" else None, _lnn_opts(mech, cap))


if methods and counted is None:
    _precompute()
