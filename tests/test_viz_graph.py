"""dpviz.viz.graph: pure figure builders and tables of the Graph page (no Streamlit)."""

import tracemalloc

import numpy as np
import pandas as pd
import pytest

from dpviz.audit.targets import run
from dpviz.graph.hooks import graph_target
from dpviz.errors import InputError
from dpviz.core.noise import Noise
from dpviz.graph import NOT_PRIVATE_LABEL, Partition
from dpviz.graph.release import release
from dpviz.graph.samples import load_graph_sample
from dpviz.graph.metrics import METRIC_INFO, degree_histogram
from dpviz.graph.regions import offdiag_cells, upper_cells
from dpviz.viz import graph as vg
from dpviz.viz.heatmap import HEATMAP_MAX
from tests.apptest_helpers import decode_plotly_array


def random_edges(rng, n, m):
    u = rng.integers(0, n, size=3 * m)
    v = rng.integers(0, n, size=3 * m)
    e = np.column_stack([np.minimum(u, v), np.maximum(u, v)])
    e = np.unique(e[e[:, 0] != e[:, 1]], axis=0)
    return e[:m]


def dense(edges, n, order=None):
    pos = vg.positions(order, n)
    a = np.zeros((n, n))
    a[pos[edges[:, 0]], pos[edges[:, 1]]] = 1
    a[pos[edges[:, 1]], pos[edges[:, 0]]] = 1
    return a


def z_of(fig, trace=0):
    return np.asarray(decode_plotly_array(fig.to_plotly_json()["data"][trace]["z"]), dtype=float)


@pytest.fixture(scope="module")
def karate():
    return load_graph_sample("karate")


@pytest.fixture(scope="module")
def karate_drf(karate):
    return release(karate, Noise.laplace(1.0), method="drf-dp", rng=np.random.default_rng(7))


# ---- density image --------------------------------------------------------------------------------
def test_density_image_exact_when_one_vertex_per_bin():
    rng = np.random.default_rng(1)
    e = random_edges(rng, 90, 300)
    order = rng.permutation(90)
    img = vg.density_image(e, 90, order=order, max_bins=600)
    assert img.bins == 90
    np.testing.assert_array_equal(img.counts, dense(e, 90, order))
    np.testing.assert_array_equal(img.cells, 1 - np.eye(90, dtype=np.int64))
    d = img.density
    assert np.isnan(np.diag(d)).all() and np.nanmax(d) == 1.0


def test_density_image_binned_blocks_match_dense_block_sums():
    rng = np.random.default_rng(2)
    n = 257
    e = random_edges(rng, n, 2_000)
    order = rng.permutation(n)
    img = vg.density_image(e, n, order=order, max_bins=20)
    a = dense(e, n, order)
    b = img.bounds
    assert b[0] == 0 and b[-1] == n and img.bins == 20 and np.all(np.diff(b) >= 12)
    blocks = np.add.reduceat(np.add.reduceat(a, b[:-1], axis=0), b[:-1], axis=1)
    np.testing.assert_array_equal(img.counts, blocks)
    assert img.counts.sum() == 2 * len(e)
    assert img.cells.sum() == n * (n - 1)
    np.testing.assert_allclose(img.density, blocks / img.cells)


def test_density_image_never_allocates_v_squared():
    n = 2_000_000  # |V|² float64 would be 32 TB
    rng = np.random.default_rng(3)
    e = random_edges(rng, n, 50_000)
    tracemalloc.start()
    img = vg.density_image(e, n)
    fig = vg.adjacency_figure(e, n, title="big")
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert img.counts.shape == (vg.MAX_BINS, vg.MAX_BINS) and img.counts.sum() == 2 * len(e)
    assert z_of(fig).shape == (vg.MAX_BINS, vg.MAX_BINS)
    assert peak < 150e6  # O(m + n + bins²): the positions of 2·10⁶ vertices dominate


def test_positions_and_bad_inputs():
    np.testing.assert_array_equal(vg.positions(np.array([2, 0, 1]), 3), [1, 2, 0])
    np.testing.assert_array_equal(vg.positions(None, 3), [0, 1, 2])
    with pytest.raises(InputError, match="permutation"):
        vg.positions(np.array([0, 0, 1]), 3)
    with pytest.raises(InputError, match="vertex ids must be in 0..2"):
        vg.density_image(np.array([[0, 3]]), 3)
    with pytest.raises(InputError, match="max_bins"):
        vg.density_image(np.array([[0, 1]]), 3, max_bins=0)


# ---- adjacency figure -----------------------------------------------------------------------------
def test_small_graph_uses_the_labelled_heatmap_in_the_given_order(karate, karate_drf):
    order = karate_drf.order
    fig = vg.adjacency_figure(karate.edges, karate.n_nodes, order=order, title="relabelled")
    z = z_of(fig)
    np.testing.assert_array_equal(z, dense(karate.edges, 34, order))
    data = fig.to_plotly_json()["data"][0]
    assert [str(s) for s in data["y"]] == [str(v) for v in order]  # row i is vertex order[i]
    labels = tuple(f"v{i}" for i in range(34))
    fig2 = vg.adjacency_figure(karate.edges, 34, labels=labels)
    assert list(fig2.to_plotly_json()["data"][0]["x"])[:3] == ["v0", "v1", "v2"]
    with pytest.raises(InputError, match="34 vertex labels"):
        vg.adjacency_figure(karate.edges, 34, labels=labels[:5])


def test_small_graph_is_a_two_colour_matrix_without_written_cells(karate):
    fig = vg.adjacency_figure(karate.edges, 34, title="karate")
    heat = fig.to_plotly_json()["data"][0]
    assert heat["colorbar"]["ticktext"] == ["no edge", "edge"] and (heat["zmin"], heat["zmax"]) == (0, 1)
    assert "texttemplate" not in heat and "text" not in heat  # nothing to read but the colour: light to draw
    assert fig.layout.title.yref == "container" and fig.layout.xaxis.side in (None, "bottom")
    assert "78 edges" in fig.layout.title.subtitle.text


def test_large_sparse_graph_is_one_webgl_dot_per_one():
    rng = np.random.default_rng(4)
    n = HEATMAP_MAX + 36
    e = random_edges(rng, n, 400)
    order = rng.permutation(n)
    fig = vg.adjacency_figure(e, n, order=order)
    (trace,) = fig.to_plotly_json()["data"]
    assert trace["type"] == "scattergl"
    got = set(zip(decode_plotly_array(trace["y"]).tolist(), decode_plotly_array(trace["x"]).tolist()))
    assert got == set(zip(*np.nonzero(dense(e, n, order))))  # (row, column) of every one, both cells of an edge
    assert fig.layout.yaxis.range == (n - 0.5, -0.5)  # row 0 at the top


def test_large_dense_graph_is_a_log_density_raster_whose_colour_bar_spans_the_data():
    rng = np.random.default_rng(4)
    n = HEATMAP_MAX + 36
    e = random_edges(rng, n, 400)
    fig = vg.adjacency_figure(e, n, max_bins=50, spy_max=0)
    z = z_of(fig)
    img = vg.density_image(e, n, max_bins=50)
    expected = np.where(img.counts > 0, np.log10(np.where(img.counts > 0, img.density, 1)), np.nan)
    np.testing.assert_allclose(z, expected, rtol=1e-6)  # float32 on the wire
    assert np.isnan(z[img.counts == 0]).all()
    heat = fig.to_plotly_json()["data"][0]
    cb = heat["colorbar"]
    assert all(10 ** t == pytest.approx(float(s), rel=0.05) for t, s in zip(cb["tickvals"], cb["ticktext"],
                                                                             strict=True))
    lo, hi = np.nanmin(z), np.nanmax(z)
    assert heat["zmin"] == pytest.approx(lo, abs=1e-6) and heat["zmax"] == pytest.approx(hi, abs=1e-6)
    assert all(lo - 1e-6 <= t <= hi + 1e-6 for t in cb["tickvals"]) and "share of cells" in cb["title"]["text"]


def test_zero_one_cells_never_get_a_colour_bar_beyond_one():
    """The defect: one vertex per bin (0/1 cells) drew a colour bar "edge density (log)" up to 2.5 or 5."""
    rng = np.random.default_rng(6)
    n = 120
    e = random_edges(rng, n, 1_500)
    heat = vg.adjacency_figure(e, n, spy_max=0).to_plotly_json()["data"][0]  # 120 bins: one vertex each
    cb = heat["colorbar"]
    assert [float(t) for t in cb["ticktext"]] == [1.0] and heat["zmax"] <= 0.5  # every drawn cell is "1"


# ---- partition -----------------------------------------------------------------------------------
def toy_partition():
    # root [0,8)², its 4 quadrants at depth 1 (the lower-left one has no upper cell), the upper-right one
    # split again into 2 at depth 2
    r0 = np.array([0, 0, 0, 4, 4, 0, 0])
    r1 = np.array([8, 4, 4, 8, 8, 4, 4])
    c0 = np.array([0, 0, 4, 0, 4, 4, 6])
    c1 = np.array([8, 4, 8, 4, 8, 6, 8])
    depth = np.array([0, 1, 1, 1, 1, 2, 2])
    parent = np.array([-1, 0, 0, 0, 0, 2, 2])
    leaf = np.array([False, True, False, True, True, True, True])
    noisy = np.array([10.0, 3.0, 6.0, 0.0, 1.0, 4.0, 2.0])
    return Partition(r0, r1, c0, c1, depth, parent, leaf, noisy)


def test_frontier_steps_through_the_tree():
    p = toy_partition()
    np.testing.assert_array_equal(vg.frontier(p, 0), [0])
    np.testing.assert_array_equal(vg.frontier(p, 1), [1, 2, 3, 4])
    np.testing.assert_array_equal(vg.frontier(p, 2), [1, 3, 4, 5, 6])  # early leaves stay, node 2 is split
    np.testing.assert_array_equal(vg.frontier(p, 9), [1, 3, 4, 5, 6])
    with pytest.raises(InputError, match="depth"):
        vg.frontier(p, -1)


@pytest.mark.parametrize("method", ["drf-dp", "drf", "kdh", "quadtree"])
def test_frontier_of_real_decompositions_tiles_the_upper_triangle(karate, method):
    rel = release(karate, Noise.laplace(2.0), method=method, rng=np.random.default_rng(5))
    p = rel.partition
    cells = upper_cells(p.r0, p.r1, p.c0, p.c1)
    for d in range(int(p.depth.max()) + 1):
        idx = vg.frontier(p, d)
        assert cells[idx].sum() == 34 * 33 // 2, (method, d)
        covered = np.zeros((34, 34), dtype=int)
        for i in idx:  # tiny test: a loop over ≤ 100 regions
            covered[p.r0[i]:p.r1[i], p.c0[i]:p.c1[i]] += 1
        assert covered.max() == 1  # disjoint


def test_partition_density_upper_or_offdiagonal():
    p = toy_partition()
    up = upper_cells(p.r0, p.r1, p.c0, p.c1)
    d = vg.partition_density(p)
    assert np.isnan(d[3]) and up[3] == 0  # the lower-left quadrant holds no upper cell
    np.testing.assert_allclose(d[up > 0], p.noisy[up > 0] / up[up > 0])
    off = offdiag_cells(p.r0, p.r1, p.c0, p.c1)
    np.testing.assert_allclose(vg.partition_density(p, symmetric=True), p.noisy / off)


def test_partition_figure_paints_each_region_with_its_density():
    p = toy_partition()
    dens = vg.partition_density(p)
    fig = vg.partition_figure(p, 8, 2, title="toy")
    z = z_of(fig)
    expected = np.full((8, 8), np.nan)
    for i in vg.frontier(p, 2):
        expected[p.r0[i]:p.r1[i], p.c0[i]:p.c1[i]] = np.log10(dens[i]) if dens[i] > 0 else np.nan
    np.testing.assert_allclose(z, expected, rtol=1e-6)
    data = fig.to_plotly_json()["data"]
    assert len(data) == 3  # raster, outlines, diagonal
    xs = data[1]["x"]
    assert len(xs) == 6 * 5 and xs[5] is None  # 5 rectangles, closed outlines separated by None
    assert "depth 2: 5 regions (5 final)" in fig.layout.title.subtitle.text and fig.layout.title.text == "toy"
    assert fig.layout.xaxis.side in (None, "bottom") and "released edges" in data[0]["colorbar"]["title"]["text"]
    # a coarse grid: every bin takes the region holding its centre position
    z4 = z_of(vg.partition_figure(p, 8, 1, max_bins=4))
    assert z4.shape == (4, 4) and z4[0, 3] == pytest.approx(np.log10(dens[2])) and np.isnan(z4[3, 0])
    assert len(vg.partition_figure(p, 8, 2, outline_max=4).to_plotly_json()["data"]) == 2  # no outlines


def test_partition_figure_on_a_real_release(karate_drf):
    p = karate_drf.partition
    dens = vg.partition_density(p)
    for d in range(int(p.depth.max()) + 1):
        z = z_of(vg.partition_figure(p, 34, d))
        expected = np.full((34, 34), np.nan)
        for i in vg.frontier(p, d):  # tiny test: a loop over ≤ 20 regions
            if dens[i] > 0:
                expected[p.r0[i]:p.r1[i], p.c0[i]:p.c1[i]] = np.log10(dens[i])
        np.testing.assert_allclose(z, expected, rtol=1e-6)
        assert np.isfinite(z).any()
    with pytest.raises(InputError, match="Partition"):
        vg.partition_figure("not a partition", 34, 0)


# ---- degree, budget, metrics, labelling ------------------------------------------------------------
def test_degree_figure_drops_degree_zero_and_normalises(karate):
    deg, cnt = degree_histogram(karate.edges, 34)
    hist = (np.concatenate([[0], deg]), np.concatenate([[6], cnt]))
    fig = vg.degree_figure({"true": (deg, cnt), "with isolated": hist})
    t0, t1 = fig.to_plotly_json()["data"]
    np.testing.assert_allclose(decode_plotly_array(t0["y"]), cnt / cnt.sum())
    assert 0 not in list(decode_plotly_array(t1["x"]))
    np.testing.assert_allclose(decode_plotly_array(t1["y"]), cnt / (cnt.sum() + 6))
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log"


def test_budget_frame_sums_to_epsilon(karate_drf):
    frame = vg.budget_frame(karate_drf.steps, 1.0)
    assert list(frame["sub-budget"][:-1]) == list(karate_drf.steps)
    assert frame["ε"].iloc[-1] == pytest.approx(1.0, abs=1e-12)
    assert frame["ε"].iloc[:-1].sum() == pytest.approx(1.0) and frame["share of ε"].iloc[-1] == pytest.approx(1.0)
    with pytest.raises(InputError, match="sum to"):
        vg.budget_frame({"a": 0.5, "b": 0.4}, 1.0)


def test_metrics_frame_one_row_per_measure_one_column_per_method():
    values = {k: float(i) for i, k in enumerate(METRIC_INFO)} | {"n_edges_true": 78.0, "n_edges_released": 1234.0}
    frame = vg.metrics_frame({"drf-dp": values, "drf": values}, {"drf-dp": 0.25, "drf": 0.5})
    assert list(frame.columns) == ["measure", "DRF-DP", "DRF (not DP)"]  # fits 1280 px for all six methods
    assert set(vg.MEASURES) <= set(METRIC_INFO) and len(frame) == len(vg.MEASURES) + 1
    assert frame["measure"][0] == "Edges released (true graph: 78)" and frame["measure"].iloc[-1] == vg.TIME_ROW
    assert frame["DRF-DP"].tolist() == [values[k] for k in vg.MEASURES] + [0.25]
    for name, help_line in vg.MEASURES.values():  # plain words, the better direction, the symbol after
        assert name and help_line and ("↓" in name or "↑" in name or name == "Edges released")
    text = vg.metrics_frame({"kdh": values | {"degree_kl": float("nan")}}, as_text=True)
    assert text["kd-hybrid"][0] == "1,234" and "not defined" in text["kd-hybrid"].tolist()
    assert not text.isin(["nan", "None", "inf"]).any().any()
    assert vg.METHOD_SHORT.keys() == vg.METHOD_LABELS.keys() and "not DP" in vg.METHOD_SHORT["drf"]
    assert all(NOT_PRIVATE_LABEL not in vg.method_label(m) for m in ("drf-dp", "kdh", "quadtree", "random", "degree"))
    with pytest.raises(InputError, match="missing"):
        vg.metrics_frame({"kdh": {"degree_kl": 1.0}})


def test_labelling_figure(karate_drf):
    history = karate_drf.info["q_labelling_noisy"]
    fig = vg.labelling_figure(history)
    np.testing.assert_allclose(decode_plotly_array(fig.to_plotly_json()["data"][0]["y"]), history)


# ---- audit ---------------------------------------------------------------------------------------
def test_audit_frame_and_figure_show_the_violation_of_published_drf():
    result = run(graph_target("drf", 1.0), trials=100, rng=np.random.default_rng(0))
    frame = vg.audit_frame(result)
    assert isinstance(frame, pd.DataFrame) and len(frame) == len(result.events) == 2
    assert frame["ε lower bound"].max() == pytest.approx(result.epsilon_lower)
    row = frame.iloc[0]
    r0 = result.events[0]
    assert (row["k on G"], row["k on G′"], row["n"]) == (r0.counts[0], r0.counts[1], r0.n)
    assert row["CP on G"] == f"[{r0.bounds[0][0]:.4f}, {r0.bounds[0][1]:.4f}]"
    assert not result.consistent
    fig = vg.audit_figure(result)
    colors = fig.to_plotly_json()["data"][0]["marker"]["color"]
    assert "crimson" in colors  # an event above the claimed ε
    assert any(s["type"] == "line" and s["x0"] == 1.0 for s in fig.to_plotly_json()["layout"]["shapes"])
