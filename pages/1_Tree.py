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

from dpviz import ui
from dpviz.core.noise import Noise
from dpviz.core.registry import capability
from dpviz.core.structure import StructureSource
from dpviz.core.tables import to_csv_text
from dpviz.errors import InputError
from dpviz.tree import synthetic
from dpviz.tree.estimators import METHOD_LABELS, METHODS, plan_for
from dpviz.tree.hierarchy import join_counts, read_hierarchy
from dpviz.tree.generation import generation_matrix, k_order_submatrix, structure_matrix
from dpviz.tree.io import MAX_BYTES, MAX_NODES, load_tree_file
from dpviz.tree.metrics import expected_error_by_level, random_ranges
from dpviz.tree.properties import ancestor_indicator
from dpviz.tree.propagation import partial_propagation
from dpviz.tree.release import (expected_variance, node_variances, release, simulate,
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
SPLITS = {"uniform": "uniform (ε/h)", "geometric": "geometric (more to leaves)"}
VECTORS = {"ones": "All ones", "true": "True counts v", "noisy": "Noisy counts ṽ"}
DIRECTIONS = {"up": "Upward: G⁻ᵀv (subtree sums)", "down": "Downward: G⁻¹v (sums over ancestors)"}
Q_RANGES = 10_000
UNIT_NOISE = {"laplace": Noise.laplace(1.0), "gaussian": Noise.gaussian(1.0)}  # the shapes of the draws
GMC_METRIC = "RMSE per node, GMC (rmse_NQ)"
RAW_METRIC = "RMSE per node, raw noisy (rmse_NQ)"
EXPECTED_METRIC = "Expected sq. error, GMC (Thm 5)"
TABLE_WIDTHS = {"rmse_NQ": 85, "rmse_RQ": 88, "bias": 65, "negatives": 75, "seconds": 70, "total_sq_error": 100}
METHOD_HELP_NQ = "Root mean squared error per node: the typical distance between a released and a true count."
EXPLAINER = {
    "The tree, node by node": "Each tile is a node, as wide as its true count, children under their parent "
    "(an icicle chart). Its colour is the error of the chosen method's release (released − true): white is "
    "exact, blue too high, red too low. The release is GMC (Alg. 2): noisy counts per level, made consistent "
    "by the optimal post-processing of Eq. (36). At most a few hundred tiles are drawn: zoom into a node to "
    "see the levels below it.",
    "Methods compared (table and bar chart)": "Every method post-processes the same noisy counts. Node RMSE "
    "(rmse_NQ) is the typical error of one count, range RMSE (rmse_RQ) that of a sum over consecutive leaves, "
    "bias the average signed error. The expected column is Theorem 5 (Eq. 28): the total squared error is "
    "n σ² before and m σ² after optimal post-processing, n nodes and m leaves: consistency removes noise.",
    "Error by level": "The RMSE of the nodes at each depth (1 = root) for every method; the dashed line is what "
    "the theory predicts for the optimal release at that depth (the analytic variances Var(v̄ᵢ)). Post-processing "
    "helps most near the root, whose count is also estimated from all its descendants.",
    "Propagation": "Multiplying by the inverse Generation Matrix runs a recursion without walking the tree "
    "(Props. 2-3 here, the paper's propagation properties): upward, G⁻ᵀ v turns each node's value into the sum "
    "over its subtree; downward, G⁻¹ v into the sum over its ancestors. The step slider stops after that many "
    "height levels; grey tiles are not reached yet.",
    "Generation Matrix (expander above)": "The matrix the paper builds the release on (Def. 7): node weights on the "
    "diagonal, minus the edge weights at (child, parent). With all weights 1 it is the Structure Matrix "
    "G⁽¹'¹⁾. GMC uses the weighted G(T⁽¹⁾←T) of Alg. 1 / Thm. 9, built once per tree.",
}

ss = st.session_state
cap = capability("tree")
ui.page_setup(cap.name)
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
    """Figures of the Structure Matrix G⁽¹'¹⁾ and its inverse (dense for tiny trees, k-order
    sparsity views otherwise). Built only when the Generation Matrix expander is open."""
    tree = _data.tree
    g = structure_matrix(tree)
    if tree.n <= vt.DENSE_MAX:
        labels = tree.label_of(np.arange(tree.n))
        return {"G": matrix_heatmap(g, "Structure Matrix G⁽¹'¹⁾ (all weights 1)", row_labels=labels, col_labels=labels,
                                    max_n=vt.DENSE_MAX),
                "Ginv": matrix_heatmap(ancestor_indicator(tree), "Its inverse G⁻¹ (ancestor indicator, Prop. 7)",
                                       row_labels=labels, col_labels=labels, max_n=vt.DENSE_MAX)}
    out = {"G": vt.sparsity_figure(k_order_submatrix(g, tree, k), f"Structure Matrix G⁽¹'¹⁾ of T⁽{k}⁾")}
    sub = tree if k == 0 else tree.subtree(k)
    try:
        out["Ginv"] = vt.sparsity_figure(ancestor_indicator(sub, max_nnz=SPARSE_VIEW_NNZ), f"Its inverse G⁻¹ of T⁽{k}⁾")
    except ValueError:
        out["Ginv"] = None
    return out


@st.cache_resource(show_spinner=False, max_entries=16)
def weighted_view(source_key: tuple, k: int, split: str, family: str, _data, _plan):
    """The weighted Generation Matrix G(T⁽¹⁾←T) GMC builds in stage 1 (Alg. 1, Thm. 9): w_i = √t_i on the
    diagonal, -w_{i→f_i} = -d_i / w_i at (i, f_i); its leading block for T⁽ᵏ⁾ on big trees."""
    tree = _data.tree
    if tree.n1 == 0:
        return None
    gw = generation_matrix(_plan.sub, _plan.w, _plan.w_edge)
    title = "Weighted Generation Matrix G(T⁽¹⁾←T), built by Alg. 1"
    if tree.n1 <= vt.DENSE_MAX:
        labels = tree.label_of(np.arange(tree.n1))
        return matrix_heatmap(gw, title, row_labels=labels, col_labels=labels, max_n=vt.DENSE_MAX)
    nk = min(tree.n_k(k), tree.n1) if k else tree.n1
    return vt.sparsity_figure(gw[:nk, :nk], title + (f", block of T⁽{k}⁾" if nk < tree.n1 else ""), by_value=True)


# ---- callbacks -----------------------------------------------------------------------------------
def _parse_upload(raw: bytes, name: str):
    """The upload under the same caps as the CLI (bytes first, rows while reading, nodes, counts)."""
    data = load_tree_file(raw, name=name, max_nodes=MAX_NODES, max_bytes=MAX_BYTES)
    _ = data.v  # BuildTree now: a bad count fails here, not later on the page
    return data


def _synthetic() -> tuple[tuple, object]:
    """The synthetic source's widgets: a tree of a chosen shape and size (its settings are public)."""
    k1, k2 = st.columns(2)
    kind = k1.selectbox("Shape", list(SYN_KINDS), format_func=SYN_KINDS.get, key="synthetic_kind")
    size = k2.select_slider("Nodes (about)", SYN_SIZES, value=1_000, key="synthetic_size",
                            format_func=lambda v: f"{v:,}")
    with st.spinner(f"Building a {SYN_KINDS[kind].lower()} tree of about {size:,} nodes ..."):
        return ("synthetic", kind, size), load_synthetic(kind, size)


TREE_UPLOAD = ui.UploadSpec(
    label="Tree file (CSV or JSON)", types=("csv", "json"), key="upload", parse=_parse_upload,
    help="node,parent,count | one column per level + a count column | a parent array (0-based) with counts. "
         f"At most {MAX_NODES:,} nodes and {MAX_BYTES:,} bytes; counts up to 2^53 per node and in total.",
    caption=f"Uploads: at most {MAX_NODES:,} nodes and {MAX_BYTES / 1e6:,.0f} MB (the CLI's caps; "
            "`python -m dpviz tree ... --max-nodes N --max-bytes N` raises them).")


TREE_RECORDS = ui.RecordsSpec("one row per person, one column per level",
                              ui.records.tree_refine(cap.name, max_nodes=MAX_NODES), MAX_BYTES)


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

# Above this many levels a level picker is a plain slider: a select slider sends (and formats) every option,
# which on a 10^6-node path (500,001 levels) cost seconds per rerun. (A comment, not a string: Streamlit's
# "magic" prints a bare string literal on the page.)
LEVEL_OPTIONS_LIMIT = 200


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
with st.expander("What am I looking at?", icon=":material/school:"):
    st.markdown("\n\n".join(f"**{name}.** {text}" for name, text in EXPLAINER.items()))

# 1. Data ---------------------------------------------------------------------------------------------
c_data, c_noise = st.columns(2, gap="large")
with c_data:
    key, data = ui.data_source(cap, SOURCES, TREE_UPLOAD, synthetic=_synthetic, records=TREE_RECORDS,
                               loading="Loading the US county tree ...")
    counted = ui.records.counted(cap.name, key)  # None unless counted from a records upload
    tree = data.tree
    d1, d2, _ = st.columns([1, 1, 2])
    d1.metric("Nodes n", f"{tree.n:,}", help="Number of nodes of the tree, leaves included.")
    d2.metric("Height h", f"{tree.h}", help="Number of depth levels (the root is level 1).")
    st.caption(f"**{data.name}**: n = {tree.n:,} nodes, m = {tree.m:,} leaves, height h = {tree.h} "
               + ("(the hierarchy as the file gives it: the simulation uses it; a private release takes a declared "
                  "hierarchy, see Private release)" if key[0] == "upload" else "(the hierarchy is public)"))

# 2. Privacy ------------------------------------------------------------------------------------------
with c_noise:
    st.subheader(":material/tune: Privacy")
    choice = ui.privacy_widgets(ui.PrivacyKeys(epsilon="epsilon", noise="tree_noise", delta="delta"),
                                allow_rho=False, eps_options=EPS_OPTIONS, delta_options=DELTA_OPTIONS)
    family, eps, delta = choice.family, choice.epsilon, choice.delta if choice.delta is not None else 1e-6
    split = st.radio("Budget split over levels", list(SPLITS), key="split", horizontal=True, format_func=SPLITS.get)
try:
    params = dict(epsilon=float(eps), delta=float(delta) if family == "gaussian" else None)
    sim_noise = Noise.from_params(family, **params, discrete=False)
    release_noise = Noise.from_params(family, **params, discrete=True)
    level_shares(tree.h, split)  # e.g. a geometric split on a very deep tree: refused with a clear message
except InputError as exc:
    st.error(str(exc), icon=":material/error:")
    st.stop()
ui.noise_caption(sim_noise, release_noise)
# A first switch to Gaussian noise calibrates ρ from (ε, δ) (continuous and discrete), which loads SciPy's special
# functions: done once in the background, so that switch costs what an ε move costs.
ui.prefetch("tree-gaussian-calibration", lambda: [Noise.from_params("gaussian", epsilon=1.0, delta=1e-6, discrete=d).describe
                                                  for d in (False, True)])
if counted is not None:  # sensitivity x K: the record-level strategy gets the per-record noise (core.records)
    sim_noise = counted.noise(sim_noise)
    counted.privacy_note()

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
release_method = st.selectbox("Method of the private release", list(METHODS),
                              index=0, key="release_method", format_func=lambda m: METHOD_LABELS.get(m, m),
                              help="One post-processing method per release (post-processing costs no budget).")
if big:
    st.caption(":material/speed: PrivTrie-style recursion and the Lee-Wang-Kifer sparse solve are off by "
               f"default on trees above {BIG:,} nodes: they take seconds to minutes here, while GMC "
               "takes milliseconds. Select them to run them anyway.")

GM_LABEL = ("Generation Matrix G (Def. 7): the Structure Matrix G⁽¹'¹⁾, its inverse, and the weighted "
            "G(T⁽¹⁾←T) the release uses")
gm = st.expander(GM_LABEL, icon=":material/grid_on:", key="tree_gm_open", on_change="rerun")
with gm:
    if gm.open:  # built only when opened: nothing of it is computed or sent while it is closed
        st.caption(r"The Generation Matrix $G^{(w_{node},\, w_{edge})}$ of a tree (Def. 7) numbers the nodes in "
                   r"descending order of height (root first, leaves last) and holds each node's weight on the "
                   r"diagonal and minus its edge's weight at (child, parent). With every weight 1 it is the "
                   r"**Structure Matrix** $G^{(1,1)}$: 1 on the diagonal, −1 at (child, parent). Its inverse "
                   r"$G^{-1}$ has a 1 at (i, j) iff j is i or an ancestor of i (Prop. 7). GMC's release uses a "
                   r"**weighted** Generation Matrix $G_{T^{(1)} \leftarrow T}$ over the internal nodes, built once "
                   r"per tree and budget split (stage 1, Alg. 1; Thm. 9: $w_i = \sqrt{t_i}$, "
                   r"$w_{i \to f_i} = d_i / w_i$, $d_i$ the relative noise variance of node i), so that "
                   r"$G^\top G = M^\top D M$ and the release is two propagations (Eq. 36).")
        k = 0
        if tree.n > vt.DENSE_MAX:
            k_opts = list(range(0, tree.h))
            if ss.get("k_order") not in k_opts:
                ss["k_order"] = next((k for k in k_opts if tree.n_k(k) <= 2_000), k_opts[-1])
            if len(k_opts) > 1:
                k = _level_slider(st, "Part shown: the k-order subtree T⁽ᵏ⁾ (nodes of height > k)", k_opts,
                                  "k_order", lambda k: f"k={k} ({tree.n_k(k):,} nodes)")
        with st.spinner("Building the matrix views ..."):
            figs = structure_views(key, int(k), data)
            gw_fig = weighted_view(key, int(k), split, family, data, get_plan(key, split, family, data))
        g1, g2 = st.columns(2)
        ui.chart(g1, figs["G"], key="g_view", width="stretch")
        if figs["Ginv"] is not None:
            ui.chart(g2, figs["Ginv"], key="ginv_view", width="stretch")
        else:
            g2.info(f"G⁻¹ of T⁽{k}⁾ has more than {SPARSE_VIEW_NNZ:,} non-zeros: pick a larger k.",
                    icon=":material/info:")
        if gw_fig is not None:
            ui.chart(st, gw_fig, key="gw_view", width="stretch")
        if tree.n > vt.DENSE_MAX:
            st.caption(f"Too large for a labelled heatmap (n > {vt.DENSE_MAX}): the non-zeros of the leading "
                       "n_k × n_k block (the k-order subtree's matrix, Fig. 3), sampled when there are many.")

# 4. Simulation ----------------------------------------------------------------------------------------
seed = ui.simulation_section(cap)

with st.spinner("Preparing the GMC plan (stage 1, once per tree) ..."):
    sim_plan = get_plan(key, split, family, data)


@st.cache_resource(show_spinner=False, max_entries=32)
def simulated(source_key: tuple, settings: tuple, methods: tuple, _noise, _plan):
    """The simulation of one setting (ε, family, δ, split, seed) and the views built from it: the methods
    table and its two charts. Cached by these small inputs: moving ε back to a value seen before, or
    returning to a seed, redraws nothing new."""
    split_, seed_ = settings[3], settings[4]
    unit = get_unit(source_key, seed_, settings[1], tree.n)
    ranges = get_ranges(source_key, tree.m)
    expected = expected_variance(tree, _noise, split_, _plan)  # Var(v̄_i) of the optimal release, O(n)
    sim = simulate(data, _noise, list(methods), None, split=split_, unit=unit, plan=_plan, ranges=ranges,
                   expected=expected)
    table = sim.table if sim.results else None
    views = None
    if table is not None:
        views = (vt.methods_table_view(table, METHOD_LABELS),
                 vt.error_by_level_figure(vt.error_by_level_frame(
                     tree, {m: r.released for m, r in sim.results.items()}, data.v), METHOD_LABELS,
                     expected=expected_error_by_level(tree, expected)),
                 vt.method_comparison_figure(table, METHOD_LABELS))
    return sim, table, views, expected, len(ranges[0])


settings = (float(eps), family, params["delta"], split, seed)
sim, table, sim_views, expected_var, n_ranges = simulated(key, settings, tuple(methods), sim_noise, sim_plan)
results = sim.results
if not methods:
    st.warning("Select at least one post-processing method.", icon=":material/warning:")
shown = "gmc" if "gmc" in results else (next(iter(results)) if results else None)


def _human(x: float) -> str:
    """A number for people: thousands separators, no exponent below 10^15, 4 significant digits."""
    return f"{x:,.0f}" if 1e4 <= abs(x) < 1e15 else f"{x:,.4g}"


def _rmse(method: str) -> str:
    if table is None or method not in results:
        return "—"
    return _human(float(dict(zip(table["method"], table["rmse_NQ"]))[method]))


@st.cache_resource(show_spinner=False, max_entries=64)
def tree_view(source_key: tuple, root: int, what: tuple, _values: tuple, title: str):
    """The icicle of the tree under ``root`` (the same inputs give the same figure JSON, which the browser
    does not redraw). ``what`` names the values: ("counts", method, settings...) or ("propagation", ...)."""
    if what[0] == "counts":
        return vt.tree_figure(tree, _values[0], _values[1], title=title, root=root)
    return vt.propagation_figure(tree, _values[0], title=title, root=root)


st.caption(f":material/casino: noise seed **{seed}** — the same draw is rescaled when ε changes; "
           f"{sim_noise.describe} (continuous), per-node variance at the root {float(sim.noise.variance_at(level_scales[0])):.4g}")
m3, m4, m5 = st.columns(3)
m3.metric(GMC_METRIC, _rmse("gmc"), help=METHOD_HELP_NQ + " After GMC, the optimal consistent post-processing.")
m4.metric(RAW_METRIC, _rmse("processless"),
          help=METHOD_HELP_NQ + " Of the noisy counts as measured, with no post-processing (Processless).")
m5.metric(EXPECTED_METRIC, _human(float(expected_var.sum())),
          help="Expected total squared error of the optimal release (GMC) over all nodes: m σ² for a uniform "
               "split (Theorem 5, Eq. 28); its weighted form Σ Var(v̄ᵢ) for the geometric split.")

st.markdown("**Methods compared** (same noise draw for every method)")
if table is not None:
    view, ebl_figure, bars_figure = sim_views
    st.dataframe(view, hide_index=True, key="sim_table", width="stretch",
                 column_config={head: (st.column_config.TextColumn(head, help=tip, width=215) if col == "method" else
                                       st.column_config.TextColumn(head, help=tip, width=110)
                                       if col == "expected_sq_error" else
                                       st.column_config.NumberColumn(head, help=tip, format="localized",
                                                                     width=TABLE_WIDTHS.get(col, 80)))
                                for col, (head, tip) in vt.METHOD_COLUMNS.items()})
    st.caption(f"Range RMSE over {n_ranges:,} random leaf ranges (fixed per tree). Theorem 5: "
               "E[total squared error] = n σ² before and m σ² after optimal post-processing "
               "(uniform split); for the geometric split, the sums of the analytic variances. "
               "Boosting has no closed form. Hover a column header for its meaning.")
    c1, c2 = st.columns(2, gap="medium")
    ui.chart(c1, ebl_figure, key="error_by_level", width="stretch")
    ui.chart(c2, bars_figure, key="methods_chart", width="stretch")

st.markdown("**The tree, node by node**")
zoom_opts = [int(i) for i in vt.zoom_options(tree)]
if ss.get("tree_zoom") not in zoom_opts:
    ss["tree_zoom"] = 0
zoom_names = dict(zip(zoom_opts, tree.label_of(np.asarray(zoom_opts)).astype(str), strict=True))
z1, z2 = st.columns([1, 2])
root = int(z1.selectbox("Zoom into", zoom_opts, key="tree_zoom",
                        format_func=lambda i: "the whole tree" if i == 0 else zoom_names[i],
                        help=f"The tree views draw at most {vt.TREE_VIEW_MAX_NODES:,} tiles (whole levels); "
                             "pick a node to see the levels below it. Click a tile to zoom inside a view."))
z2.caption("Tile width = true count. Colour = the error of "
           f"{METHOD_LABELS.get(shown, 'no method') if shown else 'no method'} (released − true): blue too high, "
           "red too low. Hover a tile for its true and released counts.")
ui.chart(st, tree_view(key, root, ("counts", shown, settings),
                          (data.v, None if shown is None else results[shown].released),
                          f"Error per node of {METHOD_LABELS.get(shown, 'no method') if shown else 'no method'}"),
                key="tree_view", width="stretch")

st.markdown("**Propagation** (Props. 2-3): what G⁻ᵀ and G⁻¹ do to a vector, one height level at a time")
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
ui.chart(st, tree_view(key, root, ("propagation", vec, direction, int(step)) + (settings if vec == "noisy" else ()),
                          (z,), f"{VECTORS[vec]}, {DIRECTIONS[direction]}"),
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
    structure = ui.declared_structure(cap, HIERARCHY_DECLARATION if counted is None else dataclasses.replace(
        HIERARCHY_DECLARATION, template=f"python -m dpviz tree describe-structure DATA --levels {','.join(counted.by)} "
                                        "--output HIERARCHY.csv"))  # records: the template of their levels
    if structure is None or structure.from_data:
        return structure, data, None
    try:
        counts = data if counted is None else ui.records.tree_counts(counted)  # records: leaf counts, as the CLI
        return structure, joined(key, structure.key, structure.value, counts), None
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
    if counted is not None:  # noise for sensitivity x K; the metadata at the person level (as the CLI's)
        rel = release(release_data, counted.noise(release_noise), split=split, method=release_method, plan=plan)
        return rel.table(), counted.metadata(rel.metadata(), release_noise)
    rel = release(release_data, release_noise, split=split, method=release_method, plan=plan)
    return rel.table(), rel.metadata()


ui.private_release_panel(
    cap,
    settings=(key, float(eps), family, params["delta"], split, release_method),
    describe="",
    run=_run_release,
    file_stem=_file_stem(key),
    source=key, data=data if counted is None else counted.upload, noise=release_noise, mechanism=release_method,
    structure=release_structure, declares=True, blocked=refused,
)
