"""Planner page: accuracy first — the smallest ε for a target error, and one budget split over releases.

A thin view over :mod:`dpviz.planner` (curves, plans, splits) and :mod:`dpviz.viz.planner` (figures):

1. **Accuracy first**: pick a capability, its data and a target error; every mechanism's smallest budget
   (analytic for tree, stream and marginals; Monte-Carlo for a graph), the error-vs-ε plot with
   Monte-Carlo dots from a sweep (:mod:`dpviz.sweep`, seeded: a simulation), and which mechanism wins.
2. **One budget, several releases**: the split of a total that minimises the weighted total error, a
   "what if" slider on the total, and every release's error as the total moves.
"""

import numpy as np
import streamlit as st

import ui
from dpviz.core.budget import Budget
from dpviz.core.limits import format_seconds
from dpviz.core.modes import fresh_seed
from dpviz.core.registry import capability
from dpviz.errors import InputError
from dpviz.planner import montecarlo, specs
from dpviz.planner.curves import best_by_epsilon, plan_target, plans_table
from dpviz.planner.split import split_budget, what_if
from dpviz.viz import planner as vp

PAGE = specs.page_info()
ui.page_setup(PAGE)
ss = st.session_state

CAPS = {"tree": "Tree (hierarchy of counts)", "stream": "Stream (running totals)",
        "marginals": "Marginals (categorical table)", "graph": "Graph (edge-DP, Monte-Carlo)"}
NOISES = {"laplace": "Laplace (ε)", "gaussian-delta": "Gaussian (ε, δ)", "gaussian-rho": "Gaussian (ρ)",
          "both": "Compare Laplace and Gaussian (ε, δ)"}
DELTA_OPTIONS = [1e-9, 1e-8, 1e-7, 1e-6, 1e-5, 1e-4]
DEFAULT_TARGET = {("tree", "node"): 10.0, ("tree", "range"): 50.0, ("stream", "max"): 20.0,
                  ("stream", "mean"): 20.0, ("marginals", ""): 5.0, ("graph", ""): 0.1}
MC_EPSILONS = (0.25, 0.5, 1.0, 2.0, 4.0)
TOTALS = [0.1, 0.2, 0.3, 0.5, 0.7, 1.0, 1.5, 2.0, 3.0, 5.0, 7.0, 10.0]
RHO_TOTALS = [0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0]
TRIAL_CHOICES = [3, 5, 10, 20, 50, 100]
PAGE_MAX_SECONDS = 10.0
"""The longest Monte-Carlo work (dots, graph curves) the page starts, by the estimate from a few timed trials;
above it the page runs the most trials that fit, or none, and says so."""
COMPOSITIONS = {"approx": "(ε, δ) total", "pure": "pure ε total (basic composition)", "zcdp": "ρ total (zCDP)"}


# ---- cached library calls (structure only; Monte-Carlo keyed by its seed) ---------------------------------
@st.cache_data(show_spinner=False, max_entries=32)
def cached_curves(cap: str, params: tuple):
    return specs.curves_for(cap, dict(params))


@st.cache_data(show_spinner=False, max_entries=32)
def cached_dots(cap: str, params: tuple, _curves, curve_key: tuple, _source, epsilons: tuple, trials: int,
                seed: int, delta: float | None):
    """Monte-Carlo dots, cached by (capability, params — which name the data —, mechanisms, grid, seed)."""
    return montecarlo.dots(_curves, _source, epsilons, trials=trials, seed=seed, delta=delta, options=dict(params))


@st.cache_data(show_spinner=False, max_entries=32)
def cached_dots_cost(cap: str, params: tuple, _curves, curve_key: tuple, _source, epsilons: tuple,
                     delta: float | None):
    """The dots' cost (a few timed trials; any number of trials is then estimated without timing again)."""
    return montecarlo.dots_cost(_curves, _source, epsilons, delta=delta, options=dict(params))


@st.cache_data(show_spinner=False, max_entries=8)
def cached_graph_cost(sample: str, methods: tuple):
    return montecarlo.graph_cost(ui.load_bundled("graph", sample), list(methods), MC_EPSILONS + (8.0,))


def affordable_trials(cost, trials: int, what: str, cli: str) -> int | None:
    """``trials`` if the estimate is within :data:`PAGE_MAX_SECONDS`; else the most trials that fit (or None),
    with a warning giving the estimate and the command that runs the full request."""
    need = cost.seconds(trials)
    if need <= PAGE_MAX_SECONDS:
        return trials
    fit = cost.most_trials([t for t in TRIAL_CHOICES if t < trials], PAGE_MAX_SECONDS)
    done = f"showing {fit} trials per ε instead" if fit else "not run"
    st.warning(f"{what} with {trials} trials per ε would take about {format_seconds(need)} (estimate, from a few "
               f"timed trials), more than this page's {PAGE_MAX_SECONDS:g} s: {done}. For the full request, run "
               f"`{cli}` from the command line.", icon=":material/hourglass_top:")
    return fit


@st.cache_data(show_spinner=False, max_entries=8)
def cached_graph(sample: str, metric: str, methods: tuple, trials: int, seed: int):
    graph = ui.load_bundled("graph", sample)
    return montecarlo.graph_curves(graph, metric, list(methods), MC_EPSILONS + (8.0,), trials=trials, seed=seed)


@st.cache_data(show_spinner=False, max_entries=16)
def cached_release(name: str, seed: int):
    _, cap, params = specs.PRESETS[name]
    return specs.curve_for(cap, params, seed=seed)


def samples(cap: str) -> dict[str, str]:
    return {s.name: s.title for s in capability(cap).samples}


# ---- page -------------------------------------------------------------------------------------------------
st.title("Budget planner")
st.caption("Accuracy first: say how much error you can accept and get the smallest privacy budget that meets it, "
           "for every mechanism; then split one total budget over several planned releases. Plans use only the "
           "structure of the data (tree shape, horizon, domain, workload) and the noise, never the counts, except "
           "graph plans, which simulate releases (Monte-Carlo).")

# 1. Accuracy first -------------------------------------------------------------------------------------------
st.subheader(":material/target: Accuracy first: the smallest ε for a target error")
c1, c2 = st.columns(2)
cap = c1.radio("Capability", list(CAPS), format_func=CAPS.get, key="plan_cap", horizontal=True)
params: dict = {}
source = None
if cap == "tree":
    name = c2.selectbox("Tree", list(samples("tree")), format_func=samples("tree").get, key="plan_tree_sample")
    params["query"] = c2.radio("Error of", ["range", "node"], key="plan_query", horizontal=True,
                               format_func={"node": "every node count (RMSE per node)",
                                            "range": "leaf-range queries (RMSE per range)"}.get)
    params["data"] = f"sample:{name}"
    source = ui.load_bundled("tree", name)
    kind = params["query"]
elif cap == "stream":
    params["horizon"] = int(c2.number_input("Horizon N (number of releases)", min_value=1, max_value=1_000_000,
                                            value=181, step=1, key="plan_horizon"))
    params["metric"] = c2.radio("Error of", ["max", "mean"], key="plan_metric", horizontal=True,
                                format_func={"max": "the worst step (max per-step RMSE)",
                                             "mean": "all steps (RMSE over the horizon)"}.get)
    source = params["horizon"]
    kind = params["metric"]
elif cap == "marginals":
    name = c2.selectbox("Data set", list(samples("marginals")), format_func=samples("marginals").get,
                        key="plan_marg_sample")
    k = int(c2.number_input("Workload: all K-way marginals, K =", min_value=1, max_value=3, value=2, key="plan_k"))
    data = ui.load_bundled("marginals", name)
    params["data"], params["workload"] = f"sample:{name}", k
    source = data
    kind = ""
else:
    name = c2.selectbox("Graph", list(samples("graph"))[:2], format_func=samples("graph").get, key="plan_graph_sample")
    metric = c2.selectbox("Metric", list(montecarlo.GRAPH_METRICS), index=2, key="plan_graph_metric")
    kind = ""

if cap in ("tree", "stream"):
    noise_kind = c1.radio("Noise", list(NOISES), format_func=NOISES.get, key="plan_noise")
elif cap == "marginals":
    noise_kind = c1.radio("Noise", ["gaussian-delta", "gaussian-rho"], format_func=NOISES.get, key="plan_noise_m")
else:
    noise_kind = "laplace"
delta = None
if noise_kind in ("gaussian-delta", "both"):
    delta = float(c1.select_slider("δ", DELTA_OPTIONS, value=1e-6, key="plan_delta", format_func=lambda v: f"{v:.0e}"))
lower = cap != "graph" or montecarlo.metric_lower_is_better(metric)
tkey = f"plan_target_{cap}_{kind}"
target = c2.number_input("Target error (the largest you accept)" if lower else "Target (the smallest you accept)",
                         min_value=1e-6, value=DEFAULT_TARGET[(cap, kind)], key=tkey, format="%g")
fams = {"laplace": "laplace", "gaussian-delta": "gaussian", "gaussian-rho": "gaussian", "both": "both"}[noise_kind]
if cap in ("tree", "stream"):
    params["noise"] = fams
axis = "rho" if noise_kind == "gaussian-rho" else "epsilon"

def dots_controls(enabled: bool) -> tuple[int, bool, int]:
    """The Simulation section (banner, seed) and the Monte-Carlo controls: (seed, show dots, trials)."""
    seed = ui.simulation_section(PAGE)
    st.caption("This page publishes nothing: the dots are simulated releases of the bundled data. To publish, use "
               "the capability's own page (its Private release panel) or its `release` command.")
    d1, d2 = st.columns(2)
    show = d1.toggle("Monte-Carlo dots (a seeded sweep)", value=cap != "marginals", key=f"plan_dots_{cap}",
                     disabled=not enabled)
    trials = int(d2.select_slider("Trials per ε", TRIAL_CHOICES,
                                  value=5 if cap in ("marginals", "graph") else 20, key=f"plan_trials_{cap}"))
    return seed, show and enabled, trials


try:
    if cap == "graph":
        methods = st.multiselect("Edge-DP methods", ["drf-dp", "kdh", "quadtree", "random", "degree"],
                                 default=["drf-dp", "kdh", "quadtree"], key="plan_graph_methods")
        if not methods:
            st.warning("Pick at least one method.", icon=":material/warning:")
            st.stop()
        seed, _, trials = dots_controls(False)
        with st.spinner("Timing a few simulated graph releases ..."):
            cost = cached_graph_cost(name, tuple(methods))
        trials = affordable_trials(cost, trials, "Simulating the graph releases",
                                   f"python -m dpviz sweep graph sample:{name} --epsilons "
                                   f"{','.join(f'{e:g}' for e in MC_EPSILONS + (8.0,))} --methods {','.join(methods)}")
        if trials is None:
            raise InputError("Even 3 trials per ε would keep this page busy too long: pick fewer or faster methods, "
                             "or the smaller graph.")
        with st.spinner("Simulating graph releases (sweep) ..."):
            curves, dots = cached_graph(name, metric, tuple(methods), trials, seed)
        rows = [{"mechanism": c.mechanism, "epsilon": c.budget_for(target)} for c in curves]
        rows.sort(key=lambda r: (r["epsilon"] is None, r["epsilon"] or 0.0))
        best = rows[0]
        st.metric(f"Best: {best['mechanism']}", "not reached" if best["epsilon"] is None else f"ε ≈ {best['epsilon']:.3g}")
        st.dataframe(rows, hide_index=True, key="plan_table")
        st.caption(f"Monte-Carlo: the mean of {trials} simulated releases at each ε "
                   f"({', '.join(f'{e:g}' for e in MC_EPSILONS + (8.0,))}), interpolated as a power law between "
                   "them after making it monotone; the bands are 95% intervals of the mean. The answer is noisy: "
                   "`python -m dpviz plan graph` bisects over ε instead. 'Not reached': the method's mean never met "
                   "the target on this grid (some methods have an error floor).")
        plans = []
        grid = vp.epsilon_grid(0.1, 10.0)
    else:
        curves = cached_curves(cap, tuple(sorted(params.items())))
        if noise_kind == "gaussian-rho" or cap == "marginals":
            curves = [c for c in curves if c.family == "gaussian"]
        plans = plan_target(curves, target, delta)
        best = plans[0]
        st.metric(f"Best: {best.mechanism}", best.budget.describe, help=best.label)
        table = plans_table(plans)
        st.dataframe(table.drop(columns=[c for c in ("delta", "rho", "release_epsilon") if table[c].isna().all()]),
                     hide_index=True, key="plan_table")
        if any(p.family == "gaussian" and p.delta is not None for p in plans):
            st.caption("Gaussian (ε, δ): `epsilon` is what the simulation spends (exact Gaussian profile; the "
                       "Canonne–Kamath–Steinke conversion for marginals), `release_epsilon` what a discrete "
                       "release needs (CKS). Discrete noise has at most the continuous variance, so a release at "
                       "the planned budget meets the target too.")
        hi = max(p.rho if axis == "rho" else p.epsilon for p in plans)
        grid = vp.epsilon_grid(min(0.05, hi / 20), max(10.0, hi * 3)) if axis == "epsilon" else \
            vp.epsilon_grid(1e-4, max(10.0, hi * 3))
        if axis == "epsilon":
            runs = best_by_epsilon(curves, grid, delta)
            st.caption("Best mechanism by ε: " + "; ".join(f"{n} for ε from {a:.3g} to {b:.3g}" for a, b, n in runs)
                       + (". With one noise family the ranking does not move with ε (every MSE is a/ε² or a/ρ); "
                          "it moves with the structure, e.g. naive beats Fenwick + FDA on short streams."
                          if len(runs) == 1 else "."))
        seed, show_dots, trials = dots_controls(axis == "epsilon")
        dots = None
        if show_dots:
            key = (cap, tuple(sorted(params.items())), curves, tuple(c.mechanism for c in curves), source, MC_EPSILONS)
            with st.spinner("Timing a few simulated releases ..."):
                cost = cached_dots_cost(*key, delta)
            data_arg = f"DATA --horizon {params['horizon']}" if cap == "stream" else str(params.get("data", "DATA"))
            trials = affordable_trials(cost, trials, "The Monte-Carlo dots",
                                       f"python -m dpviz sweep {cap} {data_arg} --epsilons "
                                       f"{','.join(f'{e:g}' for e in MC_EPSILONS)} --trials {trials}")
            if trials is not None:
                with st.spinner("Monte-Carlo: a seeded sweep of simulated releases ..."):
                    dots = cached_dots(*key, trials, seed, delta)
    st.plotly_chart(vp.error_figure(curves, grid, delta=delta, dots=dots, target=target, plans=plans, axis=axis),
                    key="error_chart", width="stretch")
    st.caption("Lines: analytic error (graph: the Monte-Carlo mean, interpolated). Dots: Monte-Carlo mean of the "
               "simulated releases at a few ε with its 95% interval; ×: each mechanism's planned budget.")
except InputError as exc:
    st.error(str(exc), icon=":material/error:")
    seed = int(ss.setdefault(f"{PAGE.name}_seed", fresh_seed()))  # what the Simulation section would hold

# 2. One budget, several releases --------------------------------------------------------------------------
st.subheader(":material/pie_chart: One budget, several releases")
st.caption("The split of one total budget that minimises the weighted total error Σ wᵢ·MSEᵢ (a graph release "
           "counts its metric's loss instead). Pure ε total: ε's add up (basic composition) and, with MSE = a/ε², "
           "the optimum is εᵢ ∝ (wᵢ aᵢ)^⅓. ρ total: ρ's add up (zCDP) and ρᵢ ∝ √(wᵢ aᵢ). (ε, δ) total: converted to "
           "ρ (Canonne–Kamath–Steinke); with pure releases only, basic composition is tried too and the better "
           "kept. A Monte-Carlo curve has no power law: the split is then numeric.")
chosen = st.multiselect("Planned releases", list(specs.PRESETS), default=["county-nodes", "flights", "adult-2way"],
                        format_func=lambda n: specs.PRESETS[n][0], key="split_releases")
s1, s2, s3 = st.columns(3)
comp = s1.radio("Total budget", list(COMPOSITIONS), format_func=COMPOSITIONS.get, key="split_comp")
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
    st.stop()
weights = {}
wcols = st.columns(min(len(chosen), 4))
for i, n in enumerate(chosen):
    weights[n] = float(wcols[i % len(wcols)].number_input(f"Weight: {n}", min_value=0.001, value=1.0, step=0.5,
                                                          key=f"split_w_{n}", format="%g"))
try:
    from dpviz.planner.split import PlannedRelease

    with st.spinner("Building the error curves ..."):
        releases = [PlannedRelease(n, cached_release(n, seed), weights[n]) for n in chosen]
    result = split_budget(releases, total)
    mcols = st.columns(min(len(result.allocations), 4))
    for i, a in enumerate(result.allocations):
        budget = f"ε = {a.epsilon:.3g}" if a.epsilon is not None else f"ρ = {a.rho:.3g}"
        mcols[i % len(mcols)].metric(f"{a.name}: error", f"{a.error:.4g}", help=f"{a.metric}; {budget} "
                                     f"({a.share:.1%} of the total)")
    st.dataframe(result.table(), hide_index=True, key="split_table")
    f1, f2 = st.columns(2)
    f1.plotly_chart(vp.split_figure(result), key="split_chart", width="stretch")
    grid_totals = np.geomspace(total_x / 10, total_x * 10, 25)
    totals = [Budget.zcdp(float(x)) if comp == "zcdp" else Budget.pure(float(x)) if comp == "pure"
              else Budget.approx(float(x), split_delta) for x in grid_totals]
    f2.plotly_chart(vp.what_if_figure(what_if(releases, totals), total_x, currency="ρ" if comp == "zcdp" else "ε"),
                    key="what_if_chart", width="stretch")
    st.caption(f"{result.composition}; {result.method}. Move the total above and watch every release's error.")
    st.download_button("Releases JSON (for `python -m dpviz plan split`)", data=specs.presets_json(chosen, weights),
                       file_name="releases.json", mime="application/json", key="split_download",
                       icon=":material/download:", on_click="ignore")
except InputError as exc:
    st.error(str(exc), icon=":material/error:")
