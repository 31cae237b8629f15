"""Tree release page: counts over a hierarchy, noisy per level, made consistent by GMC (and baselines).

A thin view over :mod:`dpviz.tree.release` in the page skeleton of :mod:`dpviz.core.registry`:
Data → Privacy → Strategy and estimator → Simulation → Private release.

Cached per structure (``st.cache_resource``): loading, the simulation's GMC plan (stage 1, depends on
the tree and the split only), the structure-matrix views, the random range queries and the unit noise
draw per (source, seed, family). Moving ε rescales that draw and redoes stage 2 only. The Private
release panel draws discrete noise from the OS CSPRNG on click and never shows a true value.
"""


import dataclasses

import numpy as np
import streamlit as st

import ui
from dpviz.core.noise import Noise
from dpviz.core.registry import capability
from dpviz.core.structure import StructureSource
from dpviz.core.tables import to_csv_text
from dpviz.errors import InputError
from dpviz.tree import synthetic
from dpviz.tree.estimators import METHOD_LABELS, METHODS, plan_for
from dpviz.tree.hierarchy import join_counts, read_hierarchy
from dpviz.tree.generation import k_order_submatrix, structure_matrix
from dpviz.tree.io import MAX_BYTES, MAX_NODES, load_tree_file
from dpviz.tree.metrics import expected_error_by_level, random_ranges
from dpviz.tree.properties import ancestor_indicator
from dpviz.tree.propagation import partial_propagation
from dpviz.tree.release import (expected_variance, node_variances, release, release_table, simulate,
                                simulation_table, structure_of, unit_noise)
from dpviz.tree.strategy import TreeLevels, level_shares, scales_text
from dpviz.viz import tree as vt
from dpviz.viz.heatmap import matrix_heatmap

BIG = 100_000  # above this: slow baselines off by default, collapsed views
SPARSE_VIEW_NNZ = 3_000_000  # largest G^{-1} k-order block built for the sparsity view
SLOW_METHODS = ("privtrie", "lee")
EPS_OPTIONS = [0.01, 0.015, 0.02, 0.03, 0.05, 0.07, 0.1, 0.15, 0.2, 0.3, 0.5, 0.7,
               1.0, 1.5, 2.0, 3.0, 5.0, 7.0, 10.0]
DELTA_OPTIONS = [1e-9, 1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3]
SYN_KINDS = {"complete": "Complete binary", "random-fanout": "Random fan-out (2-5)",
             "path-like": "Path-like (caterpillar)"}
SYN_SIZES = [15, 31, 1_000, 10_000, 100_000, 1_000_000]
FAMILIES = {"laplace": "Laplace (ε-DP)", "gaussian": "Gaussian (zCDP)"}
SPLITS = {"uniform": "uniform (ε/h)", "geometric": "geometric (more to leaves)"}
VECTORS = {"ones": "All ones", "true": "True counts v", "noisy": "Noisy counts ṽ"}
DIRECTIONS = {"up": "Upward: G⁻ᵀv (subtree sums)", "down": "Downward: G⁻¹v (sums over ancestors)"}
Q_RANGES = 10_000
UNIT_NOISE = {"laplace": Noise.laplace(1.0), "gaussian": Noise.gaussian(1.0)}  # the shapes of the draws

ss = st.session_state
cap = capability("tree")
ui.page_setup(cap)
BUNDLED = f"sample:{cap.samples[0].name}"  # the registry's bundled tree
SOURCES = {"bundled": f"Bundled: {cap.samples[0].title} ({BUNDLED})", "synthetic": "Synthetic",
           "upload": "Upload a file"}


# ---- cached per-structure work (keyed by the data source) ---------------------------------------------
@st.cache_resource(show_spinner=False, max_entries=4)
def load_synthetic(kind: str, size: int):
    return synthetic.make(kind, size, 10.0, np.random.default_rng(0))


@st.cache_resource(show_spinner=False, max_entries=8)
def get_plan(source_key: tuple, split: str, family: str, _data):
    """Stage 1 for continuous noise: the relative variances depend on the split and family, not on ε.
    Also warms the true node vector v."""
    _ = _data.v
    return plan_for(_data.tree, node_variances(_data.tree, UNIT_NOISE[family], split))


@st.cache_resource(show_spinner=False, max_entries=16)
def get_unit(source_key: tuple, seed: int, family: str, n: int):
    u = unit_noise(UNIT_NOISE[family], n, np.random.default_rng(seed))
    u.flags.writeable = False
    return u


@st.cache_resource(show_spinner=False, max_entries=8)
def get_ranges(source_key: tuple, m: int):
    return random_ranges(m, Q_RANGES, np.random.default_rng(20190701))


@st.cache_resource(show_spinner=False, max_entries=16)
def structure_views(source_key: tuple, k: int, _data) -> dict:
    """Figures of G and G^{-1} (dense for tiny trees, k-order sparsity views otherwise)."""
    tree = _data.tree
    g = structure_matrix(tree)
    if tree.n <= vt.DENSE_MAX:
        labels = tree.label_of(np.arange(tree.n))
        return {"G": matrix_heatmap(g, "Structure Matrix G", row_labels=labels, col_labels=labels, max_n=vt.DENSE_MAX),
                "Ginv": matrix_heatmap(ancestor_indicator(tree), "G⁻¹ (ancestor indicator, Prop. 7)",
                                       row_labels=labels, col_labels=labels, max_n=vt.DENSE_MAX)}
    out = {"G": vt.sparsity_figure(k_order_submatrix(g, tree, k), f"G of T⁽{k}⁾")}
    sub = tree if k == 0 else tree.subtree(k)
    try:
        out["Ginv"] = vt.sparsity_figure(ancestor_indicator(sub, max_nnz=SPARSE_VIEW_NNZ), f"G⁻¹ of T⁽{k}⁾")
    except ValueError:
        out["Ginv"] = None
    return out


# ---- callbacks -----------------------------------------------------------------------------------
def _parse_upload(raw: bytes, name: str):
    """The upload under the same caps as the CLI (bytes first, rows while reading, nodes, counts)."""
    data = load_tree_file(raw, name=name, max_nodes=MAX_NODES, max_bytes=MAX_BYTES)
    _ = data.v  # BuildTree now: a bad count fails here, not later on the page
    return data


HIERARCHY_DECLARATION = ui.DeclarationSpec(
    what="hierarchy (node list)", label="CSV node,parent (the root's parent empty), no count column",
    types=("csv", "json"), parse=lambda raw, name: read_hierarchy(raw, name, max_nodes=MAX_NODES, max_bytes=MAX_BYTES),
    template="python -m dpviz tree describe-structure DATA --output HIERARCHY.csv")


def _file_stem(key: tuple) -> str:
    if key[0] == "bundled":
        return key[1].removeprefix("sample:")
    if key[0] == "synthetic":
        return f"synthetic-{key[1]}-{key[2]}"
    return key[1].rsplit(".", 1)[0] or "upload"


# ---- page --------------------------------------------------------------------------------------

LEVEL_OPTIONS_LIMIT = 200
"""Above this many levels a level picker is a plain slider: a select slider sends (and formats) every option,
which on a 10^6-node path (500,001 levels) cost seconds per rerun."""


def _level_slider(where, label: str, options: list[int], key: str, fmt=None) -> int:
    """A picker over consecutive integer levels: a select slider with labels when there are few, else a slider
    (its current value's label shown below it)."""
    if len(options) <= LEVEL_OPTIONS_LIMIT:
        return where.select_slider(label, options, key=key, format_func=fmt or str)
    value = where.slider(label, options[0], options[-1], key=key)
    if fmt is not None:
        where.caption(fmt(value))
    return value

st.title("Tree release")
st.caption("Counts over a hierarchy released with differential privacy, then made consistent "
           "(every parent = sum of its children) by GMC, the Generation-Matrix-based optimal "
           f"post-processing, or a baseline. Unit of privacy: {cap.unit_of_privacy}.")

# 1. Data ---------------------------------------------------------------------------------------------
c_data, c_noise = st.columns(2, gap="large")
with c_data:
    st.subheader(":material/database: Data")
    source = st.radio("Data source", list(SOURCES), format_func=SOURCES.get, key="tree_source", horizontal=True)
    if source == "bundled":
        with st.spinner("Loading the US county tree ..."):
            key, data = ("bundled", BUNDLED), ui.load_bundled("tree", BUNDLED)
    elif source == "synthetic":
        k1, k2 = st.columns(2)
        kind = k1.selectbox("Shape", list(SYN_KINDS), format_func=SYN_KINDS.get, key="synthetic_kind")
        size = k2.select_slider("Nodes (about)", SYN_SIZES, value=1_000, key="synthetic_size",
                                format_func=lambda v: f"{v:,}")
        with st.spinner(f"Building a {SYN_KINDS[kind].lower()} tree of about {size:,} nodes ..."):
            key, data = ("synthetic", kind, size), load_synthetic(kind, size)
    else:
        up = st.file_uploader("Tree file (CSV or JSON)", type=["csv", "json"], key="upload",
                              help="node,parent,count | one column per level + a count column | "
                                   f"a parent array (0-based) with counts. At most {MAX_NODES:,} nodes and "
                                   f"{MAX_BYTES:,} bytes; counts up to 2^53 per node and in total.")
        st.caption(f"Uploads: at most {MAX_NODES:,} nodes and {MAX_BYTES / 1e6:,.0f} MB (the CLI's caps; "
                   "`python -m dpviz tree ... --max-nodes N --max-bytes N` raises them).")
        ui.handle_upload(up, "tree", _parse_upload)
        if ss.get("tree_upload") is not None:
            key, data = ss["tree_upload"]
        else:
            key, data = ss.get("tree_last") or (("bundled", BUNDLED), ui.load_bundled("tree", BUNDLED))
            st.info(f"No valid file loaded yet: still showing {data.name}.", icon=":material/info:")
    tree = data.tree
    ss["tree_last"] = (key, data)
    st.caption(f"**{data.name}**: n = {tree.n:,} nodes, m = {tree.m:,} leaves, height h = {tree.h} "
               + ("(the hierarchy as the file gives it: the simulation uses it; a private release takes a declared "
                  "hierarchy, see Private release)" if key[0] == "upload" else "(the hierarchy is public)"))

# 2. Privacy ------------------------------------------------------------------------------------------
with c_noise:
    st.subheader(":material/tune: Privacy")
    eps = st.select_slider("Privacy budget ε (log scale)", EPS_OPTIONS, value=1.0, key="epsilon",
                           format_func=lambda v: f"{v:g}")
    n1, n2 = st.columns(2)
    family = n1.radio("Noise", list(FAMILIES), key="tree_noise", horizontal=True, format_func=FAMILIES.get)
    delta = n2.select_slider("δ (Gaussian only)", DELTA_OPTIONS, value=1e-6, key="delta",
                             format_func=lambda v: f"{v:.0e}", disabled=family != "gaussian")
    split = n1.radio("Budget split over levels", list(SPLITS), key="split", horizontal=True, format_func=SPLITS.get)
try:
    params = dict(epsilon=float(eps), delta=float(delta) if family == "gaussian" else None)
    sim_noise = Noise.from_params(family, **params, discrete=False)
    release_noise = Noise.from_params(family, **params, discrete=True)
    level_shares(tree.h, split)  # e.g. a geometric split on a very deep tree: refused with a clear message
except InputError as exc:
    st.error(str(exc), icon=":material/error:")
    st.stop()
ui.noise_caption(sim_noise, release_noise)

# 3. Strategy and estimator ---------------------------------------------------------------------------
st.subheader(":material/account_tree: Strategy and estimator")
strategy = TreeLevels(tree, split)
level_scales = strategy.level_scales(sim_noise)
st.caption(f"Strategy: measure every node, one depth level at a time (sequential composition over the "
           f"{tree.h} levels, a unit-sensitivity count release each). Sensitivity of all node counts: "
           f"{'L1 = h' if family == 'laplace' else 'L2 = √h'} = {strategy.sensitivity(family):.4g}. "
           f"{sim_noise.describe}; per-level noise scale (root first): {scales_text(level_scales)}.")
big = tree.n > BIG
if ss.get("tree_methods_big") != big:  # the default of the multiselect depends on the tree size
    ss["methods"] = [m for m in METHODS if not (big and m in SLOW_METHODS)]
    ss["tree_methods_big"] = big
methods = st.multiselect("Post-processing methods (simulation: all on the same noise draw)", list(METHODS),
                         key="methods", format_func=lambda m: METHOD_LABELS.get(m, m))
release_method = st.selectbox("Post-processing of the private release (one method)", list(METHODS),
                              index=0, key="release_method", format_func=lambda m: METHOD_LABELS.get(m, m))
if big:
    st.caption(":material/speed: PrivTrie-style recursion and the Lee-Wang-Kifer sparse solve are off by "
               f"default on trees above {BIG:,} nodes: they take seconds to minutes here, while GMC "
               "takes milliseconds. Select them to run them anyway.")

with st.expander("Structure Matrix G and its inverse", icon=":material/grid_on:", expanded=True):
    if tree.n <= vt.DENSE_MAX:
        figs = structure_views(key, 0, data)
        g1, g2 = st.columns(2)
        g1.plotly_chart(figs["G"], key="g_heatmap", width="stretch")
        g2.plotly_chart(figs["Ginv"], key="ginv_heatmap", width="stretch")
        st.caption("G has 1 on the diagonal and −1 at (child, parent); G⁻¹ has a 1 at (i, j) iff j is i or an "
                   "ancestor of i. Nodes are numbered in descending order of height (root first, leaves last).")
    else:
        k_opts = list(range(0, tree.h))
        if ss.get("k_order") not in k_opts:
            ss["k_order"] = next((k for k in k_opts if tree.n_k(k) <= 2_000), k_opts[-1])
        if len(k_opts) > 1:
            k = _level_slider(st, "k-order subtree T⁽ᵏ⁾ (nodes of height > k)", k_opts, "k_order",
                              lambda k: f"k={k} ({tree.n_k(k):,} nodes)")
        else:
            k = 0
        with st.spinner("Building the sparsity views ..."):
            figs = structure_views(key, int(k), data)
        g1, g2 = st.columns(2)
        g1.plotly_chart(figs["G"], key="g_sparsity", width="stretch")
        if figs["Ginv"] is not None:
            g2.plotly_chart(figs["Ginv"], key="ginv_sparsity", width="stretch")
        else:
            g2.info(f"G⁻¹ of T⁽{k}⁾ has more than {SPARSE_VIEW_NNZ:,} non-zeros: pick a larger k.",
                    icon=":material/info:")
        st.caption(f"Too large for a labelled heatmap (n > {vt.DENSE_MAX}): the non-zeros of the leading "
                   "n_k × n_k block (the k-order subtree's matrix, Fig. 3), sampled when there are many.")

# 4. Simulation ----------------------------------------------------------------------------------------
seed = ui.simulation_section(cap)

with st.spinner("Preparing the GMC plan (stage 1, once per tree) ..."):
    sim_plan = get_plan(key, split, family, data)
unit = get_unit(key, seed, family, tree.n)
ranges = get_ranges(key, tree.m)
expected_var = expected_variance(tree, sim_noise, split, sim_plan)  # Var(v̄_i) of the optimal release, O(n)
sim = simulate(data, sim_noise, methods, split=split, unit=unit, plan=sim_plan, ranges=ranges, expected=expected_var)
results, table = sim.results, (sim.table if sim.results else None)
if not methods:
    st.warning("Select at least one post-processing method.", icon=":material/warning:")
shown = "gmc" if "gmc" in results else (next(iter(results)) if results else None)


def _rmse(method: str) -> str:
    if table is None or method not in results:
        return "—"
    return f"{float(table.loc[table['method'] == method, 'rmse_NQ'].iloc[0]):.4g}"


st.caption(f":material/casino: noise seed **{seed}** — the same draw is rescaled when ε changes; "
           f"{sim_noise.describe} (continuous), per-node variance at the root {float(sim.noise.variance_at(level_scales[0])):.4g}")
m1, m2, m3, m4, m5 = st.columns(5)
m1.metric("Nodes n", f"{tree.n:,}")
m2.metric("Height h", f"{tree.h}")
m3.metric("GMC rmse_NQ", _rmse("gmc"))
m4.metric("Processless rmse_NQ", _rmse("processless"))
m5.metric("Expected sq. error (GMC)", f"{expected_var.sum():.3g}",
          help="Expected total squared error of the optimal release over all nodes: m σ² for a uniform "
               "split (Theorem 5, Eq. 28); its weighted form Σ Var(v̄ᵢ) for the geometric split.")

left, right = st.columns([1.1, 1], gap="large")
with left:
    st.plotly_chart(
        vt.tree_figure(tree, data.v, None if shown is None else results[shown].released,
                       title=f"{data.name}: sized by true counts, colour = error of {shown or 'no method'}"),
        key="tree_view", width="stretch")
    if tree.n > vt.TREE_VIEW_MAX_NODES:
        st.caption("Large tree: only the top levels are drawn (click a tile to zoom in).")
with right:
    st.markdown("**Methods compared** (same noise draw for every method)")
    if table is not None:
        view = table.assign(method=[METHOD_LABELS.get(m, m) for m in table["method"]])
        view = view.rename(columns={"total_sq_error": "total sq. error", "expected_sq_error": "expected (Thm 5)"})
        st.dataframe(view, hide_index=True, key="sim_table",
                     column_config={c: st.column_config.NumberColumn(format="%.4g")
                                    for c in ("rmse_NQ", "rmse_RQ", "bias", "seconds",
                                              "total sq. error", "expected (Thm 5)")})
        st.caption(f"rmse_RQ over {len(ranges[0]):,} random leaf ranges (fixed per tree). Theorem 5: "
                   "E[total squared error] = n σ² before and m σ² after optimal post-processing "
                   "(uniform split); for the geometric split, the sums of the analytic variances. "
                   "Boosting has no closed form (empty).")
        st.plotly_chart(vt.error_by_level_figure(
            vt.error_by_level_frame(tree, {m: r.released for m, r in results.items()}, data.v), METHOD_LABELS,
            expected=expected_error_by_level(tree, expected_var)),
            key="error_by_level", width="stretch")

if table is not None:
    st.plotly_chart(vt.method_comparison_figure(table, METHOD_LABELS), key="methods_chart", width="stretch")

st.markdown("**Propagation** (Props. 2-3)")
p1, p2, p3 = st.columns([1, 1.4, 2])
vec = p1.radio("Vector", list(VECTORS), format_func=VECTORS.get, key="prop_vector")
direction = p2.radio("Direction", list(DIRECTIONS), format_func=DIRECTIONS.get, key="prop_direction")
steps = list(range(1, tree.h + 1))
if ss.get("prop_step") not in steps:
    ss["prop_step"] = tree.h
step = _level_slider(p3, "Step (one height level at a time)", steps, "prop_step") if len(steps) > 1 else 1
v_in = {"ones": np.ones(tree.n), "true": data.v, "noisy": sim.noisy}[vec]  # ṽ of this draw, whatever the methods
z = partial_propagation(tree, v_in, direction, int(step))
reached = int(np.isfinite(z).sum())
p3.caption(f"After step {step} of {tree.h}: {reached:,} of {tree.n:,} nodes reached "
           + ("(leaves first)." if direction == "up" else "(root first).")
           + (" With all ones, upward gives subtree sizes (Prop. 5) and downward depths (Prop. 6)."
              if vec == "ones" else ""))
st.plotly_chart(vt.propagation_figure(tree, z, title=f"{VECTORS[vec]}, {DIRECTIONS[direction]}"),
                key="propagation", width="stretch")

if results:
    st.download_button(
        "Simulated tree (CSV: true, noisy and every method — a simulation, not a release)",
        data=lambda: to_csv_text(simulation_table(data, sim)),
        file_name=ui.simulation_file_name(cap, _file_stem(key)), mime="text/csv",
        key="sim_download", icon=":material/download:", on_click="ignore")

# 5. Private release -------------------------------------------------------------------------------------
@st.cache_resource(show_spinner=False, max_entries=4)
def joined(source_key: tuple, declaration_key: tuple, _hierarchy, _data):
    """The counts joined onto the declared hierarchy (exactly its nodes; undeclared rows dropped untold)."""
    return join_counts(_hierarchy, _data)


def _release_structure() -> tuple[ui.Structure | None, object, str | None]:
    """(the release's public structure, the TreeData to release, a reason the draw is refused)."""
    if key[0] == "bundled":
        return ui.shipped_structure(structure_of(data).origin), data, None
    if key[0] == "synthetic":
        origin = f"a {SYN_KINDS[key[1]].lower()} tree of about {key[2]:,} nodes, generated from these public settings"
        return (ui.shipped_structure(origin, "generated"),
                dataclasses.replace(data, structure=StructureSource("declared", f"synthetic: {origin}")), None)
    structure = ui.declared_structure(cap, HIERARCHY_DECLARATION)
    if structure is None or structure.from_data:
        return structure, data, None
    try:
        return structure, joined(key, structure.key, structure.value, data), None
    except InputError as exc:
        ss.pop(f"{cap.name}_private_release", None)
        st.error(f"The counts do not fit the declared hierarchy, nothing can be drawn: {exc}", icon=":material/error:")
        return structure, data, str(exc)


ui.release_heading(cap, f"{release_noise.describe}, {split} split over the levels of the public hierarchy, "
                        f"{METHOD_LABELS[release_method]}; columns node, parent, noisy, released, variance, std")
release_structure, release_data, refused = _release_structure()
release_key = key if release_structure is None else (*key, release_structure.key)


def _run_release():
    plan = get_plan(release_key, "uniform", family, release_data) if split == "uniform" else None  # any ε matches
    rel = release(release_data, release_noise, split, release_method, plan=plan)
    return release_table(rel)


ui.private_release_panel(
    cap,
    settings=(key, float(eps), family, params["delta"], split, release_method),
    describe="",
    run=_run_release,
    file_stem=_file_stem(key),
    source=key, data=data, noise=release_noise, mechanism=release_method,
    structure=release_structure, declares=True, blocked=refused,
)
