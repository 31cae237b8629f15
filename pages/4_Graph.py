"""Graph page: a simple undirected graph released under edge-level DP (DRF made private, and peers).

A thin view in the shared page skeleton (:data:`dpviz.core.registry.PAGE_SKELETON`): Data → Privacy →
Strategy and estimator → Simulation → Private release. It reads the widgets, calls :mod:`dpviz.graph`
(``release``, ``metrics``) and :mod:`dpviz.audit`, and draws the figures of :mod:`dpviz.viz.graph`.

* Simulation (under the simulation banner): every selected method on one seeded draw (one noise
  stream per method, derived from the seed as in ``python -m dpviz graph simulate --seed``), the
  metrics against the true graph, the degree distributions, and for one inspected method its
  accounting, the adjacency matrix before and after relabelling (Step 1), the decomposition with a
  depth slider (Step 2) and the reconstructed adjacency (Step 4). The published DRF is always labelled
  "not edge-DP as published". The privacy audit (a simulation too) runs on a button with a progress bar.
* Private release (:func:`ui.private_release_panel`): drf-dp only, discrete noise from the OS CSPRNG
  (``rng=None``), fresh at every click; it never shows the truth or a number derived from it.

Cached (``st.cache_resource``) per structure: the bundled graph, a parsed upload, the true graph's
communities and degree histogram and its input-order adjacency image; per (data, method, ε, split,
seed): the simulated release, its metrics and its figures (:func:`figure`) — so moving ε recomputes only
what depends on ε, and moving back to an ε already seen redraws from the cache. The figures are light
enough for the browser to redraw on every ε step (:mod:`dpviz.viz.graph`: two-colour heatmaps, WebGL
dots, rasters of at most 256² blocks). The decomposition's depth is the reader's choice
(``graph_depth_chosen``): it is kept when ε moves and clamped only while the new tree is shallower. The
inspected method's views (the "Show" radio, the depth slider, the Step 1 toggle) are one ``st.fragment``:
changing them reruns and redraws only that part (nothing else on the page reads them). The next "New noise
draw" is computed ahead (:func:`warm_next_draw`, on the seed :func:`dpviz.ui.sections.next_seed` drew for it).
"""

import time
from collections.abc import Callable, Hashable

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from dpviz import ui
from dpviz.audit.auditor import AUDIT_NOTICE, format_result
from dpviz.graph.hooks import graph_target
from dpviz.audit.targets import run as run_audit
from dpviz.core.modes import SIMULATION_NOTICE, output_name
from dpviz.core.noise import Noise
from dpviz.core.registry import SAMPLE_PREFIX, capability
from dpviz.core.tables import meta_json, to_csv_text
from dpviz.errors import InputError
from dpviz.graph import METHODS, NOT_PRIVATE_LABEL, VertexSet
from dpviz.graph.strategy import SPLIT_METHODS
from dpviz.graph.release import method_rng, metrics_rng, partition_json, release
from dpviz.graph.samples import sample_info
from dpviz.graph.io import edges_frame, read_edges
from dpviz.graph.metrics import degree_histogram, evaluate, true_communities
from dpviz.ui.sections import next_seed
from dpviz.viz import graph as vg

CAP = capability("graph")
ui.page_setup(CAP.name)
ui.supersede()  # the next draw warmed for an earlier state (warm_next_draw) stops: this run comes first
INSPECT_VIEWS = {"relabel": "Step 1: relabelling", "decompose": "Steps 2–4: decomposition and reconstruction"}
EPS_OPTIONS = [0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0, 20.0, 50.0]
SHARE_OPTIONS = list(range(1, 11))
DEFAULT_SPLIT = (3, 7, 3)  # ε_D^d : ε_D^c : ε_R (the paper's 3 : 7 : 3)
DEFAULT_DEPTH = 2  # the decomposition depth shown first (clamped to the tree's depth)
VIEW_CHARTS = ("graph_view_left", "graph_view_right")  # both views' two charts: one Plotly instance each, kept
DEPTH_CHOSEN = "graph_depth_chosen"  # the reader's depth, a plain key: kept when ε (and the tree) change
SAMPLES = {s.name: s.title for s in CAP.samples}
DEFAULT_SAMPLE = "karate" if "karate" in SAMPLES else next(iter(SAMPLES))
SOURCES = {"bundled": "Bundled graph", "upload": "Upload an edge list"}
UPLOAD_MAX_BYTES = 50_000_000  # the page's caps, checked before the file is parsed (dpviz.graph.io)
UPLOAD_MAX_EDGES = 500_000
UPLOAD_MAX_NODES = 1_000_000
BIG = 10_000  # vertices: above this the page says that metrics take a few seconds
AUDIT_TRIALS = [20, 50, 100, 200, 500, 1000, 2000, 5000]
METHOD_NOTES = {
    "drf-dp": "DRF made edge-DP (the default): relabelling from noisy degrees, the flattening kd-tree on the upper "
              "triangle with exponential-mechanism splits and geometric count budgets, reconstruction from "
              "noisy counts only.",
    "drf": f"DRF exactly as published (Gong, Lessoy, Lu & Lv, IJPE 2020) — {NOT_PRIVATE_LABEL}: it relabels "
           "from the true degrees and copies true edges into the output (Step 4). For comparison only.",
    "kdh": "kd-hybrid (Cormode et al., ICDE 2012): private-median kd levels, then quadtree levels; least squares.",
    "quadtree": "quadtree (Cormode et al., ICDE 2012): data-independent, geometric budget, least squares.",
    "random": "Random (the paper's §4 baseline, edge-DP form): one noisy edge count, edges placed uniformly.",
    "degree": "degree sequence: noisy degrees (sensitivity 2), then a Chung–Lu random graph.",
}

ss = st.session_state


# ---- cached structure work -----------------------------------------------------------------------
@st.cache_resource(show_spinner=False, max_entries=8)
def true_structure(data_key: tuple, _graph) -> tuple:
    """Per graph: Louvain communities (for the modularity error) and the true degree histogram."""
    return (true_communities(_graph.edges, _graph.n_nodes), degree_histogram(_graph.edges, _graph.n_nodes))


@st.cache_resource(show_spinner=False, max_entries=8)
def input_adjacency(data_key: tuple, _graph):
    return vg.adjacency_figure(_graph.edges, _graph.n_nodes, labels=_graph.labels,
                               title="True adjacency, input order")


@st.cache_resource(show_spinner=False, max_entries=64)
def simulated_release(data_key: tuple, method: str, epsilon: float, split: tuple | None, seed: int, _graph):
    """One seeded release (simulation: continuous noise from the method's own stream of ``seed``)."""
    t0 = time.perf_counter()
    rel = release(_graph, Noise.laplace(epsilon), rng=method_rng(seed, method), method=method,
                  **({"split": split} if split is not None else {}))
    return rel, time.perf_counter() - t0


@st.cache_resource(show_spinner=False, max_entries=64)
def simulated_metrics(data_key: tuple, method: str, epsilon: float, split: tuple | None, seed: int, _graph, _rel):
    """The metrics of one simulated release against the truth, and its degree histogram."""
    communities, _ = true_structure(data_key, _graph)
    values = evaluate(_graph.edges, _rel.edges, _graph.n_nodes, metrics_rng(seed), communities=communities)
    return values, degree_histogram(_rel.edges, _graph.n_nodes)


@st.cache_resource(show_spinner=False, max_entries=256)
def figure(kind: str, key: Hashable, _build: Callable[[], go.Figure]) -> go.Figure:
    """A figure built once per (kind, inputs): ``key`` holds every input of ``_build`` (data, method, ε,
    split, seed, ...). The same figure object is sent again, so an unchanged view costs no rebuild."""
    return _build()


def degree_chart(scores: dict, seed: int) -> go.Figure:
    """The degree distributions of the true graph and of every scored release of ``seed`` (at the page's ε)."""
    return figure("degree", (data_key, tuple(scores), eps, split, seed), lambda: vg.degree_figure(
        {"true": true_structure(data_key, graph)[1]} | {vg.method_label(k): h for k, (_, h) in scores.items()},
        title="Degree distribution, true vs released (log-log)"))


def released_chart(key: tuple, rel) -> go.Figure:
    """Step 4: the adjacency matrix of release ``rel`` (``key``: every input of it, method second)."""
    return figure("released", key, lambda: vg.adjacency_figure(
        rel.edges, n, order=rel.order, labels=graph.labels,
        title=f"Reconstructed adjacency (Step 4, {vg.method_label(key[1])})"))


def partition_chart(key: tuple, rel, depth: int) -> go.Figure:
    """Step 2: the decomposition of release ``rel`` after ``depth`` levels."""
    return figure("partition", (*key, depth), lambda: vg.partition_figure(
        rel.partition, n, depth, symmetric=not rel.private, title=f"{vg.method_label(key[1])}: decomposition (Step 2)"))


def warm_next_draw(seed: int, todo: list, methods: list, inspect: str, view: str, depth: int) -> None:
    """The next "New noise draw" (``seed``, :func:`dpviz.ui.sections.next_seed`) computed ahead in the background
    (:func:`ui.precompute`): every method's release and metrics at this ε and split, and the charts of that draw the
    page shows (degree distributions, the inspected method's view at the reader's depth), into the caches the
    click reads. It stops between two methods once a newer page run starts (:func:`ui.supersede`): work ahead
    never competes with the reader's next change. No session state here: the page hands over what it read."""
    rels, scores = {}, {}
    for k in todo:
        ui.check_superseded()
        rels[k] = simulated_release(data_key, k, eps, _split_for(k, split), seed, graph)[0]
    for k in methods:
        ui.check_superseded()
        scores[k] = simulated_metrics(data_key, k, eps, _split_for(k, split), seed, graph, rels[k])
    ui.check_superseded()
    if scores:
        degree_chart(scores, seed)
    key, rel = (data_key, inspect, eps, _split_for(inspect, split), seed), rels[inspect]
    if view == "decompose":
        released_chart(key, rel)
        if rel.partition is not None:
            partition_chart(key, rel, min(depth, int(rel.partition.depth.max())))


# ---- helpers -------------------------------------------------------------------------------------
def _stem(name: str) -> str:
    for suffix in (".gz", ".csv", ".tsv", ".txt", ".edges", ".edgelist", ".el"):
        name = name.removesuffix(suffix)
    return name or "upload"


def _parse_upload(raw: bytes, name: str):
    return read_edges(raw, name=_stem(name), max_bytes=UPLOAD_MAX_BYTES, max_edges=UPLOAD_MAX_EDGES,
                      max_nodes=UPLOAD_MAX_NODES)


def _file_stem(key: tuple) -> str:
    return key[1] if key[0] == "bundled" else _stem(key[1])


GRAPH_UPLOAD = ui.UploadSpec(
    label="Edge list (CSV/TSV/space-separated, one edge u, v per line; optionally gzip-compressed)",
    types=("csv", "tsv", "txt", "gz", "edges", "el"), key="graph_upload_file", parse=_parse_upload,
    help=f"Header optional (u,v / source,target ...); any vertex ids (mapped to 0..n-1 and back on output); "
         f"a third numeric column (weight) is ignored; self-loops and duplicates are dropped; a directed "
         f"list is symmetrised. Caps, checked before parsing: {UPLOAD_MAX_BYTES // 1_000_000} MB, "
         f"{UPLOAD_MAX_EDGES:,} edges, {UPLOAD_MAX_NODES:,} vertices.")


GRAPH_RECORDS = ui.RecordsSpec("an edge table, one row per edge", ui.records.graph_refine(
    CAP.name, max_edges=UPLOAD_MAX_EDGES, max_nodes=UPLOAD_MAX_NODES, stem=_stem), UPLOAD_MAX_BYTES)


def _split_for(method: str, split: tuple) -> tuple | None:
    return split if method in SPLIT_METHODS else None


def _fmt_split(split: tuple) -> str:
    return ":".join(f"{x:g}" for x in split)


PAPER = "Gong, Lessoy, Lu & Lv, IJPE 2020"


def explain() -> None:
    """The "What am I looking at?" expander: one plain-words paragraph per view, the paper's step,
    algorithm or equation beside it, and what drf-dp changes (``dpviz.graph.drf``)."""
    with st.expander("What am I looking at?", icon=":material/school:"):
        st.markdown(
            f"The page releases a friendship-like network so that no single link (edge) can be told from the "
            f"output: DRF ({PAPER}) in four steps — relabel the vertices (Step 1, Alg. 1), cut the adjacency "
            "matrix into regions with a flattening kd-tree and count the edges in each with noise (Step 2, "
            "Alg. 2; Step 3, Eq. 6), then rebuild a graph from the counts (Step 4).\n\n"
            "**The measures table** puts each method's released graph next to the true one:\n"
            + "\n".join(f"- *{name}*: {text}." for name, text in vg.MEASURES.values())
            + f"\n- *{vg.TIME_ROW}*: wall-clock time of that method on this machine.\n\n"
            "**Degree distribution** (the paper's §4, Degree Distribution): the share of vertices with each "
            "number of friends, true (black) and released; the closer the lines, the better.\n\n"
            "**Accounting** (Eq. 7 and sequential composition): every step that reads the data gets a slice of "
            "ε; the slices sum to ε.\n\n"
            "**True adjacency, input order / relabelled** (Step 1, Alg. 1, Def. 6): a dark cell (a dot on a "
            "big graph) is an edge. Alg. 1 swaps labels so that high-degree vertices move to the middle "
            "(Eq. 2), which gathers edges into dense blocks and leaves sparse ones. **q(L) per iteration** is "
            "Eq. 1, the quantity each swap lowers; on noisy degrees it may go below 0 because a noisy degree "
            "can be negative.\n\n"
            "**Decomposition** (Step 2, Alg. 2, Eqs. 3–5): each level cuts a region across, then each half "
            "down (four children), at a point chosen by the exponential mechanism to separate dense from "
            "sparse (Eq. 4); the colour is the noisy edge count per cell. The depth slider steps through the "
            "levels; h_max (Eq. 3) grows with ε, so a larger ε gives a deeper tree. "
            "**Reconstructed adjacency** (Step 4): the released graph, in the same vertex order.\n\n"
            "**What drf-dp changes** (the published DRF is not edge-DP: its Step 1 reads the true degrees for "
            "free and its Step 4 copies true edges): ε_R buys noisy degrees and Alg. 1 runs on them; the "
            "counts are taken on the upper triangle, so one edge changes one count by 1 (the symmetric matrix "
            "doubles it); the stop rules use noisy counts only; an early leaf is recounted with the unspent "
            "budget (Eq. 6) and the leaf counts are projected to a consistent total; Step 4 places edges "
            "uniformly inside each leaf from the noisy counts alone, never copying a true edge.")


# ---- page ----------------------------------------------------------------------------------------
st.title("Graph release")
st.caption("A simple undirected graph released under edge-level differential privacy: DRF — the flattening "
           "kd-tree decomposition and reconstruction of Gong, Lessoy, Lu & Lv (IJPE 2020) — made edge-DP "
           "(drf-dp), the published DRF for comparison (not edge-DP), and the baselines kd-hybrid, quadtree, "
           f"Random and a degree-sequence model. Unit of privacy: {CAP.unit_of_privacy}.")

# 1. Data ------------------------------------------------------------------------------------------
data_key, graph = ui.data_source(CAP, SOURCES, GRAPH_UPLOAD, sample_label="Graph", default_sample=DEFAULT_SAMPLE,
                                 results=("graph_audit", "graph_release_partition"),
                                 still_showing="No valid edge list uploaded yet: still showing {name}.",
                                 loading="Loading the graph ...", records=GRAPH_RECORDS)
stem = _file_stem(data_key)
n, m = graph.n_nodes, graph.n_edges
c1, c2, c3 = st.columns(3)
c1.metric("Vertices |V|", f"{n:,}")
c2.metric("Edges |E|", f"{m:,}")
c3.metric("Average degree", f"{2 * m / n:.3g}")
for notice in graph.notices:
    st.caption(f":material/info: {notice}")
if data_key[0] == "bundled":
    info = sample_info(data_key[1])
    with st.expander(f"**{info.get('title', data_key[1])}**: source and citation", icon=":material/menu_book:"):
        st.write({k: info[k] for k in ("source", "citation", "licence", "transformation") if k in info})
st.caption("Edge-level DP treats the vertex set (and |V|) as public; the edges are what is protected. "
           + ("The simulation uses the vertices the edge list shows; a private release takes a declared vertex set "
              "(see Private release)." if data_key[0] == "upload" else "A release uses the sample's shipped "
                                                                          "vertex set."))

# 2. Privacy ---------------------------------------------------------------------------------------
st.subheader(":material/tune: Privacy")
eps = ui.privacy_widgets(ui.PrivacyKeys(epsilon="graph_epsilon"), families=("laplace",), eps_options=EPS_OPTIONS,
                        eps_help="The total over all of a method's steps (Laplace noise and the exponential "
                                 "mechanism: pure ε-DP). Smaller ε = stronger privacy = more noise.").epsilon
st.markdown("**How DRF shares ε** between its three steps (drf-dp and drf; the paper's default is 3 : 7 : 3)")
s1, s2, s3 = st.columns(3)
split = (int(s1.select_slider("Choosing split points (ε_D^d)", SHARE_OPTIONS, value=DEFAULT_SPLIT[0],
                              key="graph_split_d", help="Share of ε for picking where each region is cut "
                              "(exponential mechanism, 2·h_max stages on every path; Alg. 2, Eq. 5).")),
         int(s2.select_slider("Counting edges per region (ε_D^c)", SHARE_OPTIONS, value=DEFAULT_SPLIT[1],
                              key="graph_split_c", help="Share of ε for the noisy edge count of every region, "
                              "geometric over the depths (Alg. 2 line 17, Eq. 6).")),
         int(s3.select_slider("Relabelling (ε_R)", SHARE_OPTIONS, value=DEFAULT_SPLIT[2], key="graph_split_r",
                              help="Share of ε for the noisy degrees that order the vertices (drf-dp, Alg. 1 "
                                   "on noisy degrees); the published drf spends it on its reconstruction.")))
parts = [eps * s / sum(split) for s in split]
st.caption(f"ε = {eps:g} shared {_fmt_split(split)}: split points ε_D^d = {parts[0]:.4g}, region counts "
           f"ε_D^c = {parts[1]:.4g}, relabelling ε_R = {parts[2]:.4g}. The other methods share ε their own way; "
           "every method's accounting is listed under Simulation and sums to ε. Simulation: continuous Laplace "
           "from a seeded generator. Private release: discrete Laplace and the exponential mechanism from the "
           "OS CSPRNG.")

# 3. Strategy and estimator ------------------------------------------------------------------------
st.subheader(":material/account_tree: Strategy and estimator")
if "graph_methods" not in ss:
    ss["graph_methods"] = list(METHODS)
methods = st.multiselect("Methods to compare (simulation: all on one seeded draw)", list(METHODS),
                         key="graph_methods", format_func=vg.method_label)
inspect = st.selectbox("Method to inspect (accounting, relabelling, decomposition, reconstruction, downloads)",
                       list(METHODS), key="graph_inspect", format_func=vg.method_label)
st.markdown("\n".join(f"- **{vg.method_label(k)}** — {v}" for k, v in METHOD_NOTES.items()))
if "drf" in methods or inspect == "drf":
    st.warning(f"**The published DRF (drf): {NOT_PRIVATE_LABEL}.** Its Step 1 relabels from the true degrees without "
               "budget, its Step 4 copies true edges into the output, and its counts on the symmetric matrix have "
               "sensitivity 2 — see the audit below. It is shown for comparison with the paper only and is never "
               "offered for a private release.", icon=":material/warning:")
if not methods:
    st.warning("Select at least one method to compare.", icon=":material/warning:")

# 4. Simulation ------------------------------------------------------------------------------------
seed = ui.simulation_section(CAP)
todo = list(dict.fromkeys([*methods, inspect]))
with st.spinner(f"Releasing {len(todo)} method{'s' if len(todo) != 1 else ''} and measuring them "
                f"(|V| = {n:,}{': a few seconds' if n > BIG else ''}) ..."):
    try:
        releases = {k: simulated_release(data_key, k, eps, _split_for(k, split), seed, graph) for k in todo}
        scores = {k: simulated_metrics(data_key, k, eps, _split_for(k, split), seed, graph, releases[k][0])
                  for k in methods}
    except InputError as exc:
        st.error(str(exc), icon=":material/error:")
        st.stop()
explain()
cli_source = f"{SAMPLE_PREFIX}{stem}" if data_key[0] == "bundled" else "EDGES"
st.caption(f":material/casino: simulation seed **{seed}**, ε = {eps:g}: each method draws from its own stream of "
           f"this seed — the same draws as `python -m dpviz graph simulate {cli_source} --epsilon {eps:g} "
           f"--method all --seed {seed}" + (f" --budget-split {_fmt_split(split)}" if split != DEFAULT_SPLIT else "")
           + "`.")

if scores:
    st.markdown("**How close each released graph is to the true one** (this seed; ↓ lower is better, "
                "↑ higher is better)")
    table = vg.metrics_frame({k: v for k, (v, _) in scores.items()}, {k: releases[k][1] for k in scores},
                             as_text=True)
    st.dataframe(table, hide_index=True, key="graph_metrics_table", width="stretch", row_height=32,
                 column_config={
                     "measure": st.column_config.TextColumn(
                         "Measure", width=300, pinned=True,
                         help="Each measure compares the released graph with the true one; the definitions are "
                              "in “What am I looking at?” below."),
                     **{vg.METHOD_SHORT[k]: st.column_config.TextColumn(
                         vg.METHOD_SHORT[k], width=80, help=f"{vg.method_label(k)}: {METHOD_NOTES[k]}")
                        for k in scores}})
    st.caption("Cut queries: 100 random vertex sets S per size 0.2..0.8 |V|, the same for every method. Community "
               "structure: the true graph's Louvain communities." + (
                   f" DRF (not DP) is the published DRF: {NOT_PRIVATE_LABEL}." if "drf" in scores else ""))
    ui.chart(st, degree_chart(scores, seed), key="graph_degree_chart", width="stretch")

rel, seconds = releases[inspect]
label = vg.method_label(inspect)
st.markdown(f"#### Inspect: {label}")
if not rel.private:
    st.error(f"{label}: {NOT_PRIVATE_LABEL}. The budget below is the paper's nominal accounting, not a guarantee.",
             icon=":material/gpp_bad:")
st.markdown(f"**Accounting** ({len(rel.steps)} sub-budgets spent one after another, Σ = ε = {eps:g})")
st.dataframe(vg.budget_frame(rel.steps, eps), hide_index=True, key="graph_budget_table", width="stretch",
             column_config={"sub-budget": st.column_config.TextColumn("Sub-budget", width=320),
                            "ε": st.column_config.NumberColumn("ε", format="%.4g", width=90),
                            "share of ε": st.column_config.ProgressColumn(
                                "Share of ε", format="percent", min_value=0.0, max_value=1.0,
                                help="this sub-budget's part of the total ε")})

sim_key = (data_key, inspect, eps, _split_for(inspect, split), seed)  # every input of the inspected release


def relabel_view() -> None:
    """Step 1: the true adjacency in the input order and relabelled, and how Alg. 1 converged. Laid out as the
    decomposition view (a line, then two charts at :data:`VIEW_CHARTS`), so a view switch redraws the same two
    Plotly instances in place."""
    if rel.order is None:
        st.info(f"{label} does not relabel the vertices: its matrix is in the input order.", icon=":material/info:")
    else:
        st.caption("Alg. 1 moves high-degree vertices to the middle rows (Eq. 1), so dense and sparse blocks form. "
                   + ("drf-dp orders by noisy degrees (budget ε_R): the order is private."
                      if rel.private else f"The published DRF orders by the true degrees with no budget: {NOT_PRIVATE_LABEL}."))
    a1, a2 = st.columns(2)
    ui.chart(a1, input_adjacency(data_key, graph), key=VIEW_CHARTS[0], width="stretch")
    if rel.order is None:
        return
    ui.chart(a2, figure("relabelled", sim_key, lambda: vg.adjacency_figure(
        graph.edges, n, order=rel.order, labels=graph.labels, title=f"True adjacency, relabelled by {inspect} "
                                                                    "(Step 1)")),
        key=VIEW_CHARTS[1], width="stretch")
    history = rel.info.get("q_labelling_noisy", rel.info.get("q_labelling"))
    if history and st.toggle("Show how Step 1 converged: q(L) per iteration of Alg. 1", key="graph_show_labelling",
                             help="The relabelling objective q(L) (Eq. 1) after each iteration."):
        ui.chart(st, figure("labelling", sim_key, lambda: vg.labelling_figure(
            history, title="Step 1 (Alg. 1): q(L) per iteration" + (" on the noisy degrees" if rel.private
                                                                     else " on the true degrees"))),
            key="graph_labelling_chart", width="stretch")


def _remember_depth() -> None:
    ss[DEPTH_CHOSEN] = int(ss["graph_depth"])


def decomposition_view() -> None:
    """Steps 2–4: the partition at a chosen depth and the reconstructed adjacency."""
    p = rel.partition
    if p is None:
        st.info(f"{label} has no spatial decomposition (it releases from noisy degrees).", icon=":material/info:")
        deep = None
    else:
        top = int(p.depth.max())
        # The widget's own state is lost whenever its range changes (a new ε gives a new tree depth, so a
        # new slider): it shows the reader's choice, clamped to this tree, and the choice is kept apart.
        ss["graph_depth"] = min(int(ss.get(DEPTH_CHOSEN, DEFAULT_DEPTH)), top)
        deep = int(st.slider("Depth of the decomposition", min_value=0, max_value=max(top, 1), key="graph_depth",
                             disabled=top == 0, on_change=_remember_depth,
                             help=f"Step through the kd-tree (Alg. 2): the regions after this many levels; this "
                                  f"tree has {top} level{'s' if top != 1 else ''} below the root at ε = {eps:g}. "
                                  "Your choice is kept when ε moves."))
    d1, d2 = st.columns(2)
    if p is not None:
        ui.chart(d1, partition_chart(sim_key, rel, deep), key=VIEW_CHARTS[0], width="stretch")
    ui.chart(d2, released_chart(sim_key, rel), key=VIEW_CHARTS[1], width="stretch")
    if p is not None:
        st.caption(f"{len(p):,} regions, {int(p.leaf.sum()):,} final; colour = released (noisy, post-processed) "
                   f"edge count / cells of the region. {rel.edges.shape[0]:,} edges released in {seconds:.3g} s "
                   "(placed uniformly inside each final region: Step 4 uses the noisy counts only"
                   + (")." if rel.private else f"; the published DRF copies true edges — {NOT_PRIVATE_LABEL})."))


@st.fragment
def inspect_view() -> None:
    """One step of the inspected method at a time. A fragment: the "Show" radio, the depth slider and the
    Step 1 toggle rerun only this part of the page (nothing outside it reads them)."""
    view = st.radio("Show", list(INSPECT_VIEWS), format_func=INSPECT_VIEWS.get, key="graph_view", horizontal=True,
                    index=1, help="One step of the method at a time (each view follows ε): fewer charts to redraw "
                                  "on every ε move.")
    (relabel_view if view == "relabel" else decomposition_view)()


inspect_view()

sim_stem = f"{stem}.{inspect}.eps{eps:g}.seed{seed}"
d1, d2 = st.columns(2)
d1.download_button(f"Simulated release of {inspect}{'' if rel.private else f' ({NOT_PRIVATE_LABEL})'} "
                   "(CSV edge list, original labels)",
                   data=lambda: to_csv_text(edges_frame(rel.edges, graph.labels)),
                   file_name=ui.simulation_file_name(CAP, sim_stem), mime="text/csv", key="graph_sim_csv",
                   icon=":material/download:", on_click="ignore")
if rel.partition is not None:
    d2.download_button("Its partition (JSON)", data=lambda: meta_json(
        {**partition_json(rel, graph.labels), "mode": "simulate", "notice": SIMULATION_NOTICE, "seed": seed,
         "epsilon": eps, "budget": {str(k): float(v) for k, v in rel.steps.items()},
         **({} if rel.private else {"warning": NOT_PRIVATE_LABEL})}),
        file_name=output_name(CAP.name, "simulate", sim_stem, "partitions.json"), mime="application/json",
        key="graph_sim_partition", icon=":material/data_object:", on_click="ignore")
st.caption("A simulation, not a private release: the seed reproduces the noise and the page shows the truth.")

# the privacy audit (a simulation: seeded releases on a tiny neighbouring pair)
with st.container(border=True):
    st.markdown("#### :material/policy: Privacy audit")
    st.caption(f"{AUDIT_NOTICE[0].upper() + AUDIT_NOTICE[1:]}. Runs the method many times on a small sparse graph G "
               "and on G plus one edge, counts two events (the added edge appears; many released edges at its "
               "endpoints) and turns Clopper–Pearson 95% bounds into a lower bound on ε (Jagielski et al., "
               "NeurIPS 2020). ε_lower above the claimed ε refutes the claim.")
    u1, u2, u3 = st.columns(3)
    audit_method = u1.selectbox("Method to audit", list(METHODS), key="graph_audit_method",
                                format_func=vg.method_label)
    audit_eps = float(u2.select_slider("Claimed ε", EPS_OPTIONS, value=1.0, key="graph_audit_epsilon",
                                       format_func=lambda v: f"{v:g}"))
    trials = int(u3.select_slider("Trials per input", AUDIT_TRIALS, value=1000, key="graph_audit_trials"))
    audit_split = _split_for(audit_method, split)
    target = graph_target(audit_method, audit_eps, **({"split": audit_split} if audit_split else {}))
    st.caption(target.title + (f"; budget split {_fmt_split(split)}" if audit_split else "")
               + f"; seed {seed} (the simulation seed).")
    audit_settings = (audit_method, audit_eps, trials, audit_split, seed)
    if st.button("Run the audit", icon=":material/play_arrow:", key="graph_audit_run"):
        bar = st.progress(0.0, text="Auditing ...")
        t0 = time.monotonic()

        def progress(done: int, total: int) -> None:
            bar.progress(min(1.0, done / total), text=f"release {done:,} of {total:,} "
                                                      f"({time.monotonic() - t0:,.0f} s)")

        try:
            result = run_audit(target, trials=trials, rng=np.random.default_rng(seed), progress=progress)
        except InputError as exc:
            st.error(str(exc), icon=":material/error:")
        else:
            ss["graph_audit"] = (audit_settings, result, target.title)
        bar.empty()
    held = ss.get("graph_audit")
    if held is None:
        st.caption("Press **Run the audit** (1,000 trials take a few seconds).")
    elif held[0] != audit_settings:
        st.caption("The audit settings changed: press **Run the audit** again.")
    else:
        _, result, title = held
        k1, k2, k3 = st.columns(3)
        k1.metric("ε lower bound (95%)", f"{result.epsilon_lower:.3f}")
        k2.metric("Claimed ε", f"{result.epsilon:g}")
        k3.metric("Trials per input", f"{result.trials:,}")
        (st.success if result.consistent else st.error)(
            result.verdict, icon=":material/verified:" if result.consistent else ":material/gpp_bad:")
        st.dataframe(vg.audit_frame(result), hide_index=True, key="graph_audit_table", width="stretch",
                     column_config={c: st.column_config.NumberColumn(format="%.4f")
                                    for c in ("p̂ on G", "p̂ on G′", "ε lower bound")})
        ui.chart(st, vg.audit_figure(result), key="graph_audit_chart", width="stretch")
        with st.expander("The audit as text (as printed by `python -m dpviz audit graph`)"):
            st.code(format_result(result, title=title), language=None)


# 5. Private release --------------------------------------------------------------------------------
VERTEX_DECLARATION = ui.DeclarationSpec(
    what="vertex set", label="a text file of vertex ids, one per line", types=("txt", "csv", "nodes"),
    parse=lambda raw, name: VertexSet.read(raw, name=name, max_bytes=UPLOAD_MAX_BYTES, max_nodes=UPLOAD_MAX_NODES,
                                              flag="vertex list"),
    template="python -m dpviz graph describe-structure EDGES --output NODES.txt")

ui.release_heading(CAP, f"drf-dp (DRF made edge-DP) at ε = {eps:g}, budget split {_fmt_split(split)} (split points : "
                        "counts : relabelling), discrete Laplace and exponential-mechanism draws from the OS CSPRNG, "
                        "on the public vertex set; columns u, v (the declared vertex labels)")
if data_key[0] == "bundled":
    vertices = VertexSet.sample(data_key[1])
    release_structure = ui.shipped_structure(vertices.source.origin)
else:
    release_structure = ui.declared_structure(CAP, VERTEX_DECLARATION)
    vertices = None if release_structure is None else (
        VertexSet.from_data(graph) if release_structure.from_data else release_structure.value)
release_settings = (data_key, eps, split, None if release_structure is None else release_structure.key)


def _run_release():  # no seed, no truth: drf-dp with discrete noise from the OS CSPRNG, on the declared vertex set
    out = release(graph, Noise.laplace(eps, discrete=True), rng=None, method="drf-dp", vertices=vertices, source=stem,
                  split=split)
    ss["graph_release_partition"] = (release_settings, meta_json(out.partition_json()))
    return ui.with_notice(out.table(), release_structure), out.metadata()


ui.private_release_panel(
    CAP, settings=release_settings, describe="", run=_run_release, file_stem=stem, source=data_key, data=graph,
    noise=Noise.laplace(eps, discrete=True), mechanism="drf-dp", structure=release_structure, declares=True)
held_partition = ss.get("graph_release_partition")
held_release = ss.get(f"{CAP.name}_private_release")
if release_structure is not None and held_partition is not None and held_partition[0] == release_settings \
        and held_release is not None and held_release[0] == (release_settings, release_structure.key):
    st.download_button("Download the released partition (JSON)", data=held_partition[1],
                       file_name=output_name(CAP.name, "release", stem, "partitions.json"), mime="application/json",
                       key="graph_release_partition_download", icon=":material/data_object:", on_click="ignore")
    st.caption("The partition is part of the release: regions, their released (noisy, post-processed) counts and "
               "the vertex order from noisy degrees, in the declared vertex labels.")

# the next "New noise draw" ahead, in the background: the click then finds its releases, metrics and charts cached
ahead = (next_seed(CAP), todo, methods, inspect, ss.get("graph_view", "decompose"),
         int(ss.get(DEPTH_CHOSEN, DEFAULT_DEPTH)))
ui.precompute(("graph-next-draw", data_key, eps, split, ahead[0], tuple(todo), tuple(methods), *ahead[3:]),
              warm_next_draw, *ahead)
