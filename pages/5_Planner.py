"""Planner page: accuracy first — the smallest ε for a target error, and one budget split over releases.

A thin view over :mod:`dpviz.planner` (curves, plans, splits) and :mod:`dpviz.viz.planner` (figures):

1. **Accuracy first**: pick a capability, its data (a bundled sample or an uploaded file, read by the same
   reader as the capability's page) and a target error; every mechanism's smallest budget (analytic for
   tree, stream and marginals; Monte-Carlo for a graph), the error-vs-ε plot with Monte-Carlo dots from a
   sweep (:mod:`dpviz.sweep`, seeded: a simulation), and which mechanism wins. A fragment: its widgets rerun
   only this section (in the browser a whole-page rerun redrew the header and the split section too, ~0.2-0.3 s
   of a Capability or Noise flip); a new noise seed reruns the page only when the split needs it.
2. **One budget, several releases** (a fragment: moving the total reruns only this section): the split of a
   total that minimises the weighted total error, a "what if" slider on the total, and every release's error
   over the whole range of totals.
"""

import math

import numpy as np
import pandas as pd
import streamlit as st

from dpviz import ui
from dpviz.core.budget import Budget
from dpviz.core.limits import format_seconds
from dpviz.core.modes import fresh_seed
from dpviz.core.registry import CAPABILITIES, capability
from dpviz.errors import InputError
from dpviz.graph import hooks as graph_hooks
from dpviz.planner import montecarlo, specs
from dpviz.planner.curves import best_by_epsilon, plan_target, plans_table
from dpviz.planner.montecarlo import MonteCarloCost
from dpviz.planner.split import PlannedRelease, split_budget, what_if
from dpviz.ui.planner import SPLIT_CONFIG, UPLOADS, split_drawn, split_stale, table_config
from dpviz.viz import planner as vp

PAGE = ui.page_info("planner")
ui.page_setup(PAGE.name)
UNIT_OF_PRIVACY = ("that of each planned release's capability (a plan itself uses only the structure of the data: "
                   "tree shape, horizon, domain and workload)")
ss = st.session_state

CAPS = {"tree": "Tree (hierarchy of counts)", "stream": "Stream (running totals)",
        "marginals": "Marginals (categorical table)", "graph": "Graph (edge-DP, Monte-Carlo)"}
# the four capabilities with their own planning widgets, then every other registered one: planned on a bundled
# sample through its plan_curves/plan_dots hooks alone (e.g. the histogram); a bare string here would be drawn
CAPS |= {c.name: c.title for c in CAPABILITIES if c.name not in CAPS}
NOISES = {"laplace": "Laplace (ε)", "gaussian-delta": "Gaussian (ε, δ)", "gaussian-rho": "Gaussian (ρ)",
          "both": "Compare Laplace and Gaussian (ε, δ)"}
DELTA_OPTIONS = [1e-9, 1e-8, 1e-7, 1e-6, 1e-5, 1e-4]
DEFAULT_TARGET = {("tree", "node"): 10.0, ("tree", "range"): 50.0, ("stream", "max"): 20.0,
                  ("stream", "mean"): 20.0, ("marginals", ""): 5.0, ("graph", ""): 0.1}
MC_EPSILONS = (0.25, 0.5, 1.0, 2.0, 4.0)
STREAM_HORIZON = 181  # the typed horizon's default
TOTALS = [0.1, 0.2, 0.3, 0.5, 0.7, 1.0, 1.5, 2.0, 3.0, 5.0, 7.0, 10.0]
RHO_TOTALS = [0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0]
TRIAL_CHOICES = [3, 5, 10, 20, 50, 100]
DEFAULT_TRIALS = 5  # the dots of every shown setting are simulated on each change (and warmed in the background)
# The longest Monte-Carlo work (dots, graph curves) the page starts, by its estimate; above it the page runs the
# most trials that fit, or none, and says so. (Comments, not bare strings: Streamlit would print those.)
PAGE_MAX_SECONDS = 10.0
# The longest Monte-Carlo work a background warm-up of a likely next change starts (by the same estimate).
WARM_MAX_SECONDS = 5.0
# A stream's Monte-Carlo cost is timed at this horizon at most and scaled by N log N beyond it: timing trials at
# N = 10^6 took 4-13 s on their own; at 65,536 they take about 0.3 s and the scaled estimate errs on the high side.
CAL_HORIZON = 65_536
COMPOSITIONS = {"approx": "(ε, δ) total", "pure": "pure ε total (basic composition)", "zcdp": "ρ total (zCDP)"}
SOURCES = {"bundled": "Bundled sample", "upload": "Upload a file"}
SAMPLE_KEYS = {"tree": "plan_tree_sample", "marginals": "plan_marg_sample", "graph": "plan_graph_sample"}
SEED_KEY = f"{PAGE.name}_seed"  # the Simulation section's seed
SPLIT_DRAWN = f"{PAGE.name}_split_drawn"  # the releases and seeds the split section last drew (ui.split_drawn)
FULL_RUN = f"{PAGE.name}_full_run"  # set by a whole-page run, popped by accuracy_section


def data_source(cap: str, col, label: str, samples_shown: int | None = None) -> tuple[str, object | None]:
    """(data key, data) of the capability: a bundled sample or an uploaded file (kept in the session; a rejected
    file says why and the bundled sample is used). The key names the data for the caches and the CLI hint."""
    names = {**SOURCES, "bundled": "Type a horizon N"} if cap == "stream" else SOURCES
    kind = col.radio("Data", list(names), format_func=names.get, key=f"plan_source_{cap}", horizontal=True)
    if kind == "upload":
        what, types, parse = UPLOADS[cap]
        up = col.file_uploader(what, type=types, key=f"plan_upload_file_{cap}",
                               help="Read with the same reader and caps as the capability's own page; planning "
                                    "uses only its structure (tree shape, length, domain, graph) — except a graph, "
                                    "whose releases are simulated.")
        with col:
            ui.handle_upload(up, f"planner_{cap}", parse)
        held = ss.get(f"planner_{cap}_upload")
        if held is not None:
            key, data = held
            return f"upload:{key[1]}:{key[2][:12]}", data
        col.caption("No valid file yet: planning " + ("a typed horizon." if cap == "stream" else "a bundled sample."))
    if cap == "stream":
        return "typed", None
    names = samples(cap)
    shown = list(names)[:samples_shown] if samples_shown else list(names)
    if len(shown) == 1:  # one bundled sample (the tree): named, not a picker with nothing else to pick
        name = shown[0]
        col.markdown(f"{label}: **{names[name]}** (the bundled sample)")
    else:
        name = col.selectbox(label, shown, format_func=names.get, key=SAMPLE_KEYS[cap])
    return f"sample:{name}", ui.load_bundled(cap, name)


# ---- cached library calls (structure only; Monte-Carlo keyed by its seed) ---------------------------------
@st.cache_data(show_spinner=False, max_entries=32)
def cached_curves(cap: str, params: tuple, _data):
    """Every mechanism's curve; ``params`` (which name the data by its key) is the cache key."""
    p = dict(params)
    if _data is not None:
        p["data"] = _data
    return specs.curves_for(cap, p)


@st.cache_data(show_spinner=False, max_entries=32)
def cached_dots(cap: str, params: tuple, _curves, curve_key: tuple, _source, epsilons: tuple, trials: int,
                seed: int, delta: float | None):
    """Monte-Carlo dots, cached by (capability, params — which name the data —, mechanisms, grid, seed)."""
    return montecarlo.dots(_curves, _source, epsilons, trials=trials, seed=seed, delta=delta, options=dict(params))


@st.cache_data(show_spinner=False, max_entries=32)
def cached_dots_cost(cap: str, params: tuple, _curves, curve_key: tuple, _source, epsilons: tuple,
                     delta: float | None) -> MonteCarloCost:
    """The dots' cost, from a few timed trials (a stream above :data:`CAL_HORIZON` steps is timed at that horizon
    and scaled by N log N: a person never waits for the estimate itself)."""
    p = dict(params)
    if cap == "stream" and int(_source) > CAL_HORIZON:
        n = int(_source)
        small = specs.curves_for("stream", {**p, "horizon": CAL_HORIZON})
        small = [c for c in small if c.mechanism in curve_key]
        cost = montecarlo.dots_cost(small, CAL_HORIZON, epsilons, delta=delta, options={**p, "horizon": CAL_HORIZON})
        f = (n / CAL_HORIZON) * (math.log2(n) / math.log2(CAL_HORIZON))
        return MonteCarloCost(cost.n_eps, cost.setup * f, cost.per_trial * f)
    return montecarlo.dots_cost(_curves, _source, epsilons, delta=delta, options=p)


@st.cache_data(show_spinner=False, max_entries=8)
def cached_graph_cost(data_key: str, methods: tuple, _graph):
    return graph_hooks.graph_cost(_graph, list(methods), MC_EPSILONS + (8.0,))


@st.cache_data(show_spinner=False, max_entries=8)
def cached_graph(data_key: str, metric: str, methods: tuple, trials: int, seed: int, _graph):
    return graph_hooks.graph_curves(_graph, metric, list(methods), MC_EPSILONS + (8.0,), trials=trials, seed=seed)


@st.cache_data(show_spinner=False, max_entries=16)
def cached_release(name: str, seed: int):
    """A planned release's curve; ``seed`` from :func:`dpviz.planner.specs.preset_seed`."""
    _, cap, params = specs.PRESETS[name]
    return specs.curve_for(cap, params, seed=seed)


@st.cache_data(show_spinner=False, max_entries=32)
def cached_what_if(names: tuple, weights: tuple, comp: str, delta: float | None, seeds: tuple) -> pd.DataFrame:
    """Every release's error at 41 totals spanning the whole slider (so only the marker moves with the total);
    ``seeds`` from :func:`dpviz.planner.specs.preset_seed`."""
    releases = [PlannedRelease(n, cached_release(n, s), w) for n, w, s in zip(names, weights, seeds)]
    lo, hi = (RHO_TOTALS[0], RHO_TOTALS[-1]) if comp == "zcdp" else (TOTALS[0], TOTALS[-1])
    grid = np.geomspace(lo, hi, 41)
    totals = [Budget.zcdp(float(x)) if comp == "zcdp" else Budget.pure(float(x)) if comp == "pure"
              else Budget.approx(float(x), delta) for x in grid]
    return what_if(releases, totals)


def affordable_trials(cost, trials: int, what: str, cli: str) -> int | None:
    """``trials`` if the estimate is within :data:`PAGE_MAX_SECONDS`; else the most trials that fit (or None),
    with a warning giving the estimate and the command that runs the full request."""
    fit = cost.trials_within(trials, TRIAL_CHOICES, PAGE_MAX_SECONDS)
    if fit == trials:
        return trials
    need = cost.seconds(trials)
    done = f"showing {fit} trials per ε instead" if fit else "not run"
    st.warning(f"{what} with {trials} trials per ε would take about {format_seconds(need)} (estimate), more than "
               f"this page's {PAGE_MAX_SECONDS:g} s: {done}. For the full request, run `{cli}` from the command line.",
               icon=":material/hourglass_top:")
    return fit


def samples(cap: str) -> dict[str, str]:
    return {s.name: s.title for s in capability(cap).samples}


def simulation_section() -> int:
    """The Simulation heading, its banner (this page publishes nothing: no Private release panel) and the seed."""
    key = f"{PAGE.name}_seed"
    st.subheader(":material/science: Simulation")
    st.info("**Simulation — not a private release.** The dots are seeded floating-point noise on the chosen data, "
            "for what-if only. This page publishes nothing: to publish, use the capability's own page (its Private "
            "release panel) or its `release` command. Unit of privacy: " + UNIT_OF_PRIVACY + ".",
            icon=":material/science:")
    if key not in ss:
        ss[key] = fresh_seed()
    s1, _ = st.columns([1, 3])
    seed = int(s1.number_input("Noise seed (simulation)", min_value=0, max_value=2**31 - 1, step=1, key=key))
    s1.button("New noise draw", icon=":material/casino:", key="new_draw", on_click=new_draw)
    return seed


NEXT_SEED = f"{PAGE.name}_next_seed"


def next_seed() -> int:
    """The seed "New noise draw" sets next: drawn ahead (:func:`dpviz.core.modes.fresh_seed`) so that the dots of
    that draw can be computed in the background before the click."""
    return int(ss.setdefault(NEXT_SEED, fresh_seed()))


def new_draw() -> None:
    ss[f"{PAGE.name}_seed"] = next_seed()
    del ss[NEXT_SEED]


# ---- page -------------------------------------------------------------------------------------------------
st.title("Budget planner")
st.caption("Accuracy first: say how much error you can accept and get the smallest privacy budget that meets it, "
           "for every mechanism; then split one total budget over several planned releases. Plans use only the "
           "structure of the data (tree shape, horizon, domain, workload) and the noise, never the counts, except "
           "graph plans, which simulate releases (Monte-Carlo).")
with st.expander("What am I looking at?", icon=":material/help:"):
    st.markdown(
        "**Best mechanism and the plans table.** For the target error you type, each mechanism's smallest budget: "
        "its error is a/ε² in MSE (Laplace) or a/ρ (Gaussian), so ε = √(a)/target. The constant a comes from the "
        "capability's variance formula: GMC and processless trees (Generation Matrix paper, Thm. 5, Eq. 27–28; "
        "errors rmse_NQ Eq. 40 and rmse_RQ Eq. 41), Fenwick/FDA and its peers per stream step, ResidualPlanner "
        "σ² with GReM-MLE reconstruction for marginals. A graph has no formula: its curve is the mean metric of "
        "simulated releases.\n\n"
        "**Error vs ε chart.** One line per mechanism (log–log: a straight line of slope −1 for RMSE ∝ 1/ε), the "
        "dashed target, a × at each planned budget, and dots: the mean error of simulated releases with its 95% "
        "interval, which should sit on the line (a check of the formula). The strip on top names the best "
        "mechanism at each ε.\n\n"
        "**Split bars.** One total budget divided over several releases to minimise Σ wᵢ·MSEᵢ: with basic "
        "composition (ε's add up, Dwork & Roth Thm. 3.16) the optimum is εᵢ ∝ (wᵢaᵢ)^⅓; with zCDP (ρ's add up, "
        "Bun & Steinke Lemma 2.3) ρᵢ ∝ √(wᵢaᵢ). Each bar is a release's share, labelled with the error it gets.\n\n"
        "**What-if chart.** Every release's error as the total moves over the slider's whole range, the split "
        "re-solved at each total; the dashed line is the total you picked.")

# 1. Accuracy first -------------------------------------------------------------------------------------------


def shown_curves(cap: str, noise_kind: str, curves: list) -> list:
    """The curves the page plans and draws: only the Gaussian ones for a ρ plan and for marginals."""
    gaussian_only = noise_kind == "gaussian-rho" or cap == "marginals"
    return [c for c in curves if c.family == "gaussian"] if gaussian_only else curves


def dots_key(cap: str, params: dict, curves: list, source) -> tuple:
    """The leading arguments of :func:`cached_dots_cost` and :func:`cached_dots` for these settings."""
    return cap, tuple(sorted(params.items())), curves, tuple(c.mechanism for c in curves), source, MC_EPSILONS


OTHER_ERROR = {"tree": ("query", ("range", "node")), "stream": ("metric", ("max", "mean"))}  # "Error of" options


def likely_next(cap: str, params: dict, data, source, noise_kind: str, delta: float | None, seed: int) -> list[tuple]:
    """(capability, params, data, source, noise kind, δ, seed, target) of the changes a reader likely makes next,
    for :func:`warm_all` to compute in the background after this run, in the page's order: from another capability
    the Stream's opening view and its Gaussian twin, the other noise family (Laplace ↔ Gaussian (ε, δ)), the other
    "Error of", a new noise draw (:func:`next_seed`). The way back from a change just made is cached already."""
    def target(c: str, kind: str) -> float:
        return float(ss.get(f"plan_target_{c}_{kind}", DEFAULT_TARGET.get((c, kind), 5.0)))

    name, values = OTHER_ERROR.get(cap, ("", ()))
    kind, out = params.get(name, ""), []
    if cap != "stream" and ss.get("plan_source_stream", "bundled") == "bundled":
        n = int(ss.get("plan_horizon", STREAM_HORIZON))
        out += [("stream", {"horizon": n, "metric": "max", "noise": noise.split("-")[0]}, None, n, noise, d, seed,
                 target("stream", "max")) for noise, d in (("laplace", None), ("gaussian-delta", 1e-6))]
    if "noise" in params and noise_kind != "gaussian-rho":
        other = ("laplace", None) if noise_kind != "laplace" else ("gaussian-delta", float(ss.get("plan_delta", 1e-6)))
        out.append((cap, {**params, "noise": other[0].split("-")[0]}, data, source, *other, seed, target(cap, kind)))
    out += [(cap, {**params, name: v}, data, source, noise_kind, delta, seed, target(cap, v)) for v in values if v != kind]
    out.append((cap, params, data, source, noise_kind, delta, next_seed(), target(cap, kind)))
    return out


def warm_all(settings: list[tuple], trials: int | None, generation: list[int], mine: int) -> None:
    """What the page computes for each of ``settings`` (:func:`likely_next`): the curves, the plans and their
    chart's ρ grid, and with ``trials`` (the dots are shown) the dots' cost and the dots when affordable —
    filling the caches a next change reads. Runs in a background thread (:func:`dpviz.ui.prefetch`), one
    setting after another, until a newer run of the session starts its own (``generation[0]`` is no longer
    ``mine``); the trials of another capability are the default (:data:`DEFAULT_TRIALS`)."""
    for cap, params, data, source, noise_kind, delta, seed, target in settings:
        if generation[0] != mine:
            return
        try:
            curves = shown_curves(cap, noise_kind, cached_curves(cap, tuple(sorted(params.items())), data))
            plans = plan_target(curves, target, delta)
            if noise_kind == "gaussian-rho":
                continue
            best_by_epsilon(curves, vp.budget_grid(plans), delta)
            n = trials if cap == settings[-1][0] else DEFAULT_TRIALS  # the last one is this page's capability
            if trials is not None:
                key = dots_key(cap, params, curves, source)
                cost = cached_dots_cost(*key, delta)
                n = cost.trials_within(n, TRIAL_CHOICES, PAGE_MAX_SECONDS)  # what that run will simulate
                if n is not None and cost.seconds(n) <= WARM_MAX_SECONDS:
                    cached_dots(*key, n, seed, delta)
        except InputError:
            continue


def dots_controls(cap: str, enabled: bool) -> tuple[int, bool, int]:
    """The Simulation section (banner, seed) and the Monte-Carlo controls: (seed, show dots, trials)."""
    seed = simulation_section()
    d1, d2 = st.columns(2)
    show = d1.toggle("Monte-Carlo dots (a seeded sweep)", value=cap != "marginals", key=f"plan_dots_{cap}",
                     disabled=not enabled)
    trials = int(d2.select_slider("Trials per ε", TRIAL_CHOICES, value=DEFAULT_TRIALS, key=f"plan_trials_{cap}",
                                  help="Each trial's error already averages over every node, step or cell, so a few "
                                       "trials pin the mean down; more narrow the 95% interval."))
    return seed, show and enabled, trials


@st.fragment
def accuracy_section() -> None:
    """Section 1 (a fragment: its widgets rerun only this section, not the page's header and the split
    section below). A new noise seed (the "New noise draw" button or the seed box, both in here) reruns the
    whole page when the split section has a Monte-Carlo release, whose curve the seed moves (ui.split_stale)."""
    if not ss.pop(FULL_RUN, False) and split_stale(ss.get(SPLIT_DRAWN), ss.get(SEED_KEY)):
        st.rerun(scope="app")
    st.subheader(":material/target: Accuracy first: the smallest ε for a target error")
    c1, c2 = st.columns(2)
    cap = c1.radio("Capability", list(CAPS), format_func=CAPS.get, key="plan_cap", horizontal=True)
    params: dict = {}
    source = data = None
    if cap == "tree":
        data_key, data = data_source("tree", c2, "Tree")
        params["query"] = c2.radio("Error of", ["range", "node"], key="plan_query", horizontal=True,
                                   format_func={"node": "every node count (RMSE per node)",
                                                "range": "leaf-range queries (RMSE per range)"}.get)
        params["data"] = data_key
        source = data
        kind = params["query"]
    elif cap == "stream":
        data_key, data = data_source("stream", c2, "")
        if data is None:
            params["horizon"] = int(c2.number_input("Horizon N (number of releases)", min_value=1, max_value=1_000_000,
                                                    value=STREAM_HORIZON, step=1, key="plan_horizon"))
        else:
            params["horizon"] = int(np.asarray(data.counts).size)
            c2.caption(f"Horizon N = {params['horizon']:,} (the length of the uploaded stream).")
        params["metric"] = c2.radio("Error of", ["max", "mean"], key="plan_metric", horizontal=True,
                                    format_func={"max": "the worst step (max per-step RMSE)",
                                                 "mean": "all steps (RMSE over the horizon)"}.get)
        data, source = None, params["horizon"]
        kind = params["metric"]
    elif cap == "marginals":
        data_key, data = data_source("marginals", c2, "Data set")
        k = int(c2.number_input("Workload: all K-way marginals, K =", min_value=1, max_value=3, value=2, key="plan_k"))
        params["data"], params["workload"] = data_key, k
        source = data
        kind = ""
    elif cap == "graph":
        data_key, data = data_source("graph", c2, "Graph", samples_shown=2)
        from dpviz.graph.metrics import METRIC_INFO

        metric = c2.selectbox("Metric", list(graph_hooks.GRAPH_METRICS), index=2, key="plan_graph_metric",
                              format_func=lambda m: f"{METRIC_INFO[m][0]} ({m})" if m in METRIC_INFO else m,
                              help="; ".join(f"{METRIC_INFO[m][0]}: {METRIC_INFO[m][2]}" for m in graph_hooks.GRAPH_METRICS
                                             if m in METRIC_INFO))
        kind = ""
    else:  # any other registered capability: a bundled sample, its hooks' plan_curves (and plan_dots)
        names = samples(cap)
        name = c2.selectbox("Data set", list(names), format_func=names.get, key=f"plan_sample_{cap}")
        data_key, data = f"sample:{name}", ui.load_bundled(cap, name)
        params["data"], source, kind = data_key, data, ""

    if cap not in ("marginals", "graph"):
        noise_kind = c1.radio("Noise", list(NOISES), format_func=NOISES.get, key="plan_noise")
    elif cap == "marginals":
        noise_kind = c1.radio("Noise", ["gaussian-delta", "gaussian-rho"], format_func=NOISES.get, key="plan_noise_m")
    else:
        noise_kind = "laplace"
    delta = None
    if noise_kind in ("gaussian-delta", "both"):
        delta = float(c1.select_slider("δ", DELTA_OPTIONS, value=1e-6, key="plan_delta", format_func=lambda v: f"{v:.0e}"))
    lower = cap != "graph" or graph_hooks.metric_lower_is_better(metric)
    tkey = f"plan_target_{cap}_{kind}"
    target = c2.number_input("Target error (the largest you accept)" if lower else "Target (the smallest you accept)",
                             min_value=1e-6, value=DEFAULT_TARGET.get((cap, kind), 5.0), key=tkey, format="%g")
    fams = {"laplace": "laplace", "gaussian-delta": "gaussian", "gaussian-rho": "gaussian", "both": "both"}[noise_kind]
    if cap not in ("marginals", "graph"):
        params["noise"] = fams
    axis = "rho" if noise_kind == "gaussian-rho" else "epsilon"
    data_arg = "FILE" if data_key.startswith("upload:") else data_key

    prefetch = None  # (key, function, *args) for ui.prefetch at the end of this section

    # one block for the section's results, whose elements come and go with the settings: what follows keeps its
    # place on the page, so the split charts below are updated in place, not remounted and drawn anew
    with st.container():
        try:
            if cap == "graph":
                methods = st.multiselect("Edge-DP methods", ["drf-dp", "kdh", "quadtree", "random", "degree"],
                                         default=["drf-dp", "kdh", "quadtree"], key="plan_graph_methods")
                if not methods:
                    raise InputError("Pick at least one edge-DP method.")
                seed, _, trials = dots_controls(cap, False)
                with st.spinner("Timing a few simulated graph releases ..."):
                    cost = cached_graph_cost(data_key, tuple(methods), data)
                trials = affordable_trials(cost, trials, "Simulating the graph releases",
                                           f"python -m dpviz sweep graph {data_arg} --epsilons "
                                           f"{','.join(f'{e:g}' for e in MC_EPSILONS + (8.0,))} "
                                           f"--methods {','.join(methods)}")
                if trials is None:
                    raise InputError("Even 3 trials per ε would keep this page busy too long: pick fewer or faster "
                                     "methods, or a smaller graph.")
                with st.spinner("Simulating graph releases (sweep) ..."):
                    curves, dots = cached_graph(data_key, metric, tuple(methods), trials, seed, data)
                rows = sorted(({"mechanism": c.mechanism, "epsilon": c.budget_for(target)} for c in curves),
                              key=lambda r: (r["epsilon"] is None, r["epsilon"] or 0.0))
                best = rows[0]
                st.metric(f"Best: {best['mechanism']}",
                          "not reached" if best["epsilon"] is None else f"ε ≈ {best['epsilon']:.3g}",
                          help="The smallest ε at which the method's mean metric meets the target (Monte-Carlo).")
                st.dataframe(pd.DataFrame({"mechanism": [r["mechanism"] for r in rows], "ε for the target": [
                    "not reached" if r["epsilon"] is None else f"{r['epsilon']:.3g}" for r in rows]}),
                             hide_index=True, key="plan_table")
                st.caption(f"Monte-Carlo: the mean of {trials} simulated releases at each ε "
                           f"({', '.join(f'{e:g}' for e in MC_EPSILONS + (8.0,))}), interpolated as a power law between "
                           "them after making it monotone; the bands are 95% intervals of the mean. The answer is noisy: "
                           "`python -m dpviz plan graph` bisects over ε instead. *Not reached*: the method's mean never "
                           "met the target on this grid (some methods have an error floor).")
                plans = []
                grid = vp.epsilon_grid(0.1, 10.0)
            else:
                curves = shown_curves(cap, noise_kind, cached_curves(cap, tuple(sorted(params.items())), data))
                plans = plan_target(curves, target, delta)
                best = plans[0]
                st.metric(f"Best: {best.mechanism}", best.budget.describe, help=best.label)
                table = plans_table(plans).drop(columns=["delta"])
                table = table.drop(columns=[c for c in ("rho", "release_epsilon", "epsilon") if table[c].isna().all()])
                shown, gaps = vp.plans_view(table)
                st.table(shown, hide_index=True)
                st.caption("*Planned budget*: what to give the release command; *error*: the analytic error a release "
                           "gets at that budget; *mechanism*: the heading names it by its id (as `python -m dpviz "
                           "plan` does).")
                if gaps:
                    st.caption("Empty cells: a Laplace plan has no ρ of its own, a ρ plan no ε until a δ is chosen.")
                if any(p.family == "gaussian" and p.delta is not None for p in plans):
                    st.caption("Gaussian (ε, δ): *ε (simulation)* is what the simulation spends (exact Gaussian "
                               "profile; the Canonne–Kamath–Steinke conversion for marginals), *ε (release)* what a "
                               "discrete release needs (CKS). Discrete noise has at most the continuous variance, so a "
                               "release at the planned budget meets the target too.")
                grid = vp.budget_grid(plans, axis)
                if axis == "epsilon":
                    runs = best_by_epsilon(curves, grid, delta)
                    st.caption("Best mechanism by ε: " + "; ".join(f"{n} for ε from {a:.3g} to {b:.3g}" for a, b, n in runs)
                               + (". With one noise family the ranking does not move with ε (every MSE is a/ε² or a/ρ); "
                                  "it moves with the structure, e.g. naive beats Fenwick + FDA on short streams."
                                  if len(runs) == 1 else "."))
                seed, show_dots, trials = dots_controls(cap, axis == "epsilon")
                dots = None
                warm = likely_next(cap, params, data, source, noise_kind, delta, seed)
                if show_dots:
                    key = dots_key(cap, params, curves, source)
                    with st.spinner("Estimating the Monte-Carlo work ..."):
                        cost = cached_dots_cost(*key, delta)
                    arg = f"DATA --horizon {params['horizon']}" if cap == "stream" else data_arg
                    trials = affordable_trials(cost, trials, "The Monte-Carlo dots",
                                               f"python -m dpviz sweep {cap} {arg} --epsilons "
                                               f"{','.join(f'{e:g}' for e in MC_EPSILONS)} --trials {trials}")
                    if trials is not None:
                        with st.spinner("Monte-Carlo: a seeded sweep of simulated releases ..."):
                            dots = cached_dots(*key, trials, seed, delta)
                # after this run (end of the page): the curves, and dots when shown, of the likely next changes
                prefetch = (("plan-next", repr([w[:2] + w[4:] for w in warm]), trials if show_dots else None), warm_all,
                            warm, trials if show_dots else None)
            ui.chart(st, vp.error_figure(curves, grid, delta=delta, dots=dots, target=target, plans=plans, axis=axis),
                     key="error_chart", width="stretch")
            st.caption("Lines: analytic error (graph: the Monte-Carlo mean, interpolated). Dots: Monte-Carlo mean of the "
                       "simulated releases at a few ε with its 95% interval; ×: each mechanism's planned budget.")
        except InputError as exc:
            st.error(str(exc), icon=":material/error:")
    if prefetch is not None:  # a newer warm-up of this session stops an older one between settings
        generation = ss.setdefault(f"{PAGE.name}_warm_generation", [0])
        generation[0] += 1
        ui.prefetch((*prefetch[0], generation[0]), *prefetch[1:], generation, generation[0])


# 2. One budget, several releases --------------------------------------------------------------------------


@st.fragment
def split_section() -> None:
    """The split of one total (a fragment: its widgets rerun only this section), its planned releases seeded by
    the Simulation section's seed."""
    seed = int(ss.setdefault(SEED_KEY, fresh_seed()))
    st.subheader(":material/pie_chart: One budget, several releases")
    st.caption("The split of one total budget that minimises the weighted total error Σ wᵢ·MSEᵢ (a graph release "
               "counts its metric's loss instead). Pure ε total: ε's add up (basic composition) and, with MSE = "
               "a/ε², the optimum is εᵢ ∝ (wᵢ aᵢ)^⅓. ρ total: ρ's add up (zCDP) and ρᵢ ∝ √(wᵢ aᵢ). (ε, δ) total: "
               "converted to ρ (Canonne–Kamath–Steinke); with pure releases only, basic composition is tried too and "
               "the better kept. A Monte-Carlo curve has no power law: the split is then numeric.")
    chosen = st.multiselect("Planned releases", list(specs.PRESETS), default=["county-nodes", "flights", "adult-2way"],
                            format_func=lambda n: specs.PRESETS[n][0], key="split_releases")
    ss[SPLIT_DRAWN] = split_drawn(chosen, seed)
    s1, s2, s3 = st.columns(3)
    comp = s1.radio("Total budget", list(COMPOSITIONS), format_func=COMPOSITIONS.get, key="split_comp")
    split_delta = None
    if comp == "zcdp":
        total_x = float(s2.select_slider("What if the total ρ were …", RHO_TOTALS, value=0.1, key="split_rho",
                                         format_func=lambda v: f"{v:g}"))
        total = Budget.zcdp(total_x)
    else:
        total_x = float(s2.select_slider("What if the total ε were …", TOTALS, value=1.0, key="split_total",
                                         format_func=lambda v: f"{v:g}"))
        split_delta = float(s3.select_slider("Total δ", DELTA_OPTIONS, value=1e-6, key="split_delta",
                                             format_func=lambda v: f"{v:.0e}", disabled=comp != "approx"))
        total = Budget.pure(total_x) if comp == "pure" else Budget.approx(total_x, split_delta)
    if not chosen:
        st.info("Pick at least one release.", icon=":material/info:")
        return
    weights = {}
    wcols = st.columns(min(len(chosen), 4))
    for i, n in enumerate(chosen):
        weights[n] = float(wcols[i % len(wcols)].number_input(f"Weight: {n}", min_value=0.001, value=1.0, step=0.5,
                                                              key=f"split_w_{n}", format="%g"))
    try:
        with st.spinner("Building the error curves ..."):
            releases = [PlannedRelease(n, cached_release(n, specs.preset_seed(n, seed)), weights[n]) for n in chosen]
        if comp == "pure":
            gaussian = [r.name for r in releases if r.curve.family != "laplace"]
            if gaussian:
                releases = [r for r in releases if r.curve.family == "laplace"]
                st.info(f"{', '.join(gaussian)} {'uses' if len(gaussian) == 1 else 'use'} Gaussian noise, which has "
                        "no pure ε-DP guarantee (only (ε, δ) or ρ-zCDP), so a pure ε total cannot pay for "
                        f"{'it' if len(gaussian) == 1 else 'them'}. " + (
                            "The split below covers the Laplace releases only; pick the (ε, δ) or ρ total to "
                            "include every release." if releases else
                            "No chosen release uses Laplace noise: pick the (ε, δ) or ρ total, or add a Laplace "
                            "release (a tree or a stream)."), icon=":material/info:")
                if not releases:
                    return
        result = split_budget(releases, total)
        mcols = st.columns(min(len(result.allocations), 4))
        for i, a in enumerate(result.allocations):
            budget = f"ε = {a.epsilon:.3g}" if a.epsilon is not None else f"ρ = {a.rho:.3g}"
            mcols[i % len(mcols)].metric(f"{a.name}: error", f"{a.error:.4g}", help=f"{a.metric}; {budget} "
                                         f"({a.share:.1%} of the total)")
        shown, gaps = vp.readable(result.table(), {"epsilon": ".4g", "rho": ".4g"})
        st.dataframe(shown, hide_index=True, key="split_table", column_config=table_config(SPLIT_CONFIG, gaps),
                     column_order=[c for c in shown.columns if c != "capability"], width="stretch")
        notes = {"epsilon": "εᵢ empty: a Gaussian release under a ρ or (ε, δ) total spends ρ, which has no ε of its "
                            "own (the total's ε holds for all releases together).",
                 "rho": "ρᵢ empty: under basic composition each release spends ε, not ρ."}
        if gaps:
            st.caption(" ".join(notes[g] for g in gaps))
        f1, f2 = st.columns(2)
        ui.chart(f1, vp.split_figure(result), key="split_chart", width="stretch")
        frame = cached_what_if(tuple(r.name for r in releases), tuple(r.weight for r in releases), comp,
                               split_delta, tuple(specs.preset_seed(r.name, seed) for r in releases))
        ui.chart(f2, vp.what_if_figure(frame, total_x, currency="ρ" if comp == "zcdp" else "ε"),
                        key="what_if_chart", width="stretch")
        st.caption(f"{result.composition}; {result.method}. Move the total above and watch every release's error.")
        st.download_button("Releases JSON (for `python -m dpviz plan split`)",
                           data=specs.presets_json([r.name for r in releases], weights), file_name="releases.json",
                           mime="application/json", key="split_download", icon=":material/download:",
                           on_click="ignore")
    except InputError as exc:
        st.error(str(exc), icon=":material/error:")


ss[FULL_RUN] = True  # read by accuracy_section: this run draws the split section below too
accuracy_section()
split_section()
