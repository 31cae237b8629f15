"""dpviz.viz.tree: pure figure builders (no Streamlit)."""

import numpy as np

from dpviz.errors import InputError
from dpviz.viz.heatmap import matrix_heatmap
import pandas as pd
import plotly.graph_objects as go
import pytest
import scipy.sparse as sp

from dpviz.tree import synthetic
from dpviz.tree.generation import k_order_submatrix, structure_matrix
from dpviz.tree.io import load_tree_file, node_table
from dpviz.tree.model import tree_from_parents
from dpviz.tree.properties import ancestor_indicator
from dpviz.tree.propagation import partial_propagation
from dpviz.viz import tree as vt
from tests.apptest_helpers import ROOT

DATA = ROOT / "tests" / "data"


@pytest.fixture(scope="module")
def small():
    return load_tree_file(DATA / "tree_good.csv")  # 8 nodes, h = 3


@pytest.fixture(scope="module")
def binary():
    return synthetic.complete_tree(2, 12, 5.0, np.random.default_rng(1))  # 4095 nodes


def test_top_levels_keeps_whole_levels_and_parents(binary):
    t = binary.tree
    idx = vt.top_levels(t, max_nodes=100)
    assert idx.size == 63  # depths 1..6 of a binary tree (127 > 100)
    assert set(t.parent[idx[1:]]) <= set(idx)
    assert vt.top_levels(t, max_depth=2).size == 3
    assert vt.top_levels(t, max_nodes=0).tolist() == [0]  # always at least the root


def test_tree_figure_small_all_nodes(small):
    t, v = small.tree, small.v
    released = v + np.arange(t.n)
    fig = vt.tree_figure(t, v, released)
    assert isinstance(fig, go.Figure) and len(fig.data) == 1
    tr = fig.data[0]
    assert tr.type == "icicle" and len(tr.ids) == t.n
    np.testing.assert_allclose(tr.values, v)
    assert tr.values[0] == 15 and tr.branchvalues == "total"
    assert list(tr.parents).count("") == 1
    np.testing.assert_allclose(tr.marker.colors, np.arange(t.n))  # colour = released - true
    assert set(tr.labels) == {"root", "A", "B", "a1", "a2", "b1", "b2", "b3"}
    assert "released" in tr.hovertemplate


def test_tree_figure_collapses_big_trees(binary):
    t = binary.tree
    fig = vt.tree_figure(t, binary.v, max_nodes=1000)
    assert len(fig.data[0].ids) == 511
    assert "top 9 of 12 levels" in fig.layout.title.text


def test_propagation_state_ones_gives_sizes_and_depths(small):
    t = small.tree
    up = partial_propagation(t, np.ones(t.n), "up")
    down = partial_propagation(t, np.ones(t.n), "down")
    sizes = np.zeros(t.n)
    for i in range(t.n - 1, -1, -1):  # children after parents in DOH order
        sizes[i] += 1
        if i:
            sizes[t.parent[i]] += sizes[i]
    np.testing.assert_allclose(up, sizes)
    np.testing.assert_allclose(down, t.depth)
    first = partial_propagation(t, np.ones(t.n), "up", step=1)
    assert np.isfinite(first).sum() == t.m and np.isnan(first[: t.n1]).all()
    root_only = partial_propagation(t, np.ones(t.n), "down", step=1)
    assert np.isfinite(root_only).tolist() == [True] + [False] * (t.n - 1)
    with pytest.raises(ValueError):
        partial_propagation(t, np.ones(t.n), "sideways")


def test_propagation_figure_marks_unreached(small):
    t = small.tree
    z = partial_propagation(t, small.v, "up", step=1)
    tr = vt.propagation_figure(t, z).data[0]
    assert tr.type == "icicle" and len(tr.ids) == t.n
    assert list(tr.marker.colors[: t.n1]) == [vt.NOT_REACHED] * t.n1
    assert all(c != vt.NOT_REACHED for c in tr.marker.colors[t.n1 :])
    assert list(tr.text[: t.n1]) == ["not reached"] * t.n1
    assert list(tr.text[t.n1 :]) == [f"{x:g}" for x in small.x]


def test_matrix_heatmap_values_and_labels(small):
    t = small.tree
    g = structure_matrix(t)
    labels = t.label_of(np.arange(t.n))
    fig = matrix_heatmap(g, "G", row_labels=labels, col_labels=labels)
    tr = fig.data[0]
    np.testing.assert_array_equal(np.asarray(tr.z), g.toarray())
    assert list(tr.x) == list(labels) and list(tr.y) == list(labels)
    assert fig.layout.yaxis.autorange == "reversed"
    ginv = matrix_heatmap(ancestor_indicator(t), row_labels=labels, col_labels=labels).data[0]
    np.testing.assert_allclose(np.asarray(ginv.z) @ g.toarray(), np.eye(t.n), atol=1e-12)
    assert ginv.zmid is None and tr.zmid == 0.0  # sequential scale for 0/1, diverging for G's -1
    with pytest.raises(InputError, match="too large"):
        matrix_heatmap(sp.identity(61), max_n=vt.DENSE_MAX)


def test_sparsity_figure_all_and_sampled(binary):
    t = binary.tree
    g = structure_matrix(t)
    sub = k_order_submatrix(g, t, 3)
    fig = vt.sparsity_figure(sub, "G3")
    pts = sum(len(tr.x) for tr in fig.data)
    assert pts == sub.nnz == 2 * t.n_k(3) - 1
    pos = next(tr for tr in fig.data if tr.name == "positive")
    assert np.all(np.asarray(pos.x) == np.asarray(pos.y))  # +1 on the diagonal only
    neg = next(tr for tr in fig.data if tr.name == "negative")
    np.testing.assert_array_equal(t.parent[np.asarray(neg.y)], np.asarray(neg.x))  # -1 at (child, parent)
    big = vt.sparsity_figure(g, "G", max_points=500)
    assert sum(len(tr.x) for tr in big.data) == 500
    assert "500 sampled of 8,189" in big.layout.title.text and "<br><sup>" in big.layout.title.text
    assert big.layout.yaxis.autorange == "reversed"


def test_error_by_level_frame_and_figure(small):
    t, v = small.tree, small.v
    released = {"a": v + 1.0, "b": v - 2.0 * (t.depth == 3)}
    df = vt.error_by_level_frame(t, released, v)
    assert list(df.columns) == ["method", "depth", "rmse"] and len(df) == 2 * t.h
    np.testing.assert_allclose(df[df.method == "a"].rmse, [1, 1, 1])
    np.testing.assert_allclose(df[df.method == "b"].rmse, [0, 0, 2])
    fig = vt.error_by_level_figure(df, {"a": "Method A"})
    assert [tr.name for tr in fig.data] == ["Method A", "b"]
    assert fig.layout.yaxis.type == "log"


def test_error_by_level_pools_deep_trees_as_the_rmse_of_the_nodes_in_each_bin():
    from dpviz.tree import synthetic

    rng = np.random.default_rng(3)
    data = synthetic.path_like_tree(3000, 5.0, rng)
    t, v = data.tree, data.v
    released = {"gmc": v + rng.standard_normal(t.n), "noisy": v + 3 * rng.standard_normal(t.n)}
    df = vt.error_by_level_frame(t, released, v, max_points=100)
    width = df.attrs["bin_width"]
    assert width == -(-t.h // 100) and df.groupby("method").size().max() <= 100
    for method, out in released.items():  # brute force: the RMSE over the nodes whose depth is in the bin
        got = df[df.method == method]
        for start, rmse in zip(got.depth, got.rmse):
            nodes = (t.depth >= start) & (t.depth < start + width)
            np.testing.assert_allclose(rmse, np.sqrt(np.mean((out[nodes] - v[nodes]) ** 2)), rtol=1e-12)
    expected = np.linspace(1.0, 2.0, t.h)
    fig = vt.error_by_level_figure(df, expected=expected)
    dashed = fig.data[-1]
    counts = np.bincount(t.depth, minlength=t.h + 1)[1:]
    first = slice(0, width)
    np.testing.assert_allclose(dashed.y[0], np.sqrt(np.sum(counts[first] * expected[first] ** 2) / counts[first].sum()))
    assert "pooled in bins" in fig.layout.xaxis.title.text and fig.data[0].mode == "lines"
    shallow = vt.error_by_level_frame(t, released, v, max_points=10**6)
    assert shallow.attrs["bin_width"] == 1 and len(shallow) == 2 * t.h


def test_method_comparison_figure():
    table = pd.DataFrame({"method": ["gmc", "processless"], "rmse_NQ": [1.0, 2.0], "rmse_RQ": [3.0, 40.0]})
    fig = vt.method_comparison_figure(table, {"gmc": "GMC"})
    assert [tr.type for tr in fig.data] == ["bar", "bar"]
    assert list(fig.data[0].y) == ["GMC", "processless"] and fig.data[0].orientation == "h"  # labels read flat
    np.testing.assert_allclose(fig.data[1].x, [3.0, 40.0])
    assert [tr.name for tr in fig.data] == ["per node (rmse_NQ)", "per range query (rmse_RQ)"]
    assert list(fig.layout.xaxis.ticktext) == ["1", "2", "5", "10", "20", "50"]


def test_node_table_puts_doh_arrays_back_in_file_order():
    """node_table is the one per-node column builder: DOH-ordered arrays come back in the file's row order
    with the right parent ids (this file's order is not the DOH order)."""
    data = load_tree_file(b"node,parent,count\na2,a,4\nroot,,12\na1,a,3\nb,root,5\na,root,7\n")
    t = data.tree
    assert not np.array_equal(t.order, np.arange(t.n))  # otherwise this test could not fail
    df = node_table(t, value=data.v, depth=t.depth)
    assert list(df.columns) == ["node", "parent", "value", "depth"]
    assert list(df.node) == ["a2", "root", "a1", "b", "a"]  # file order
    by = df.set_index("node")
    assert by.loc["a", "parent"] == "root" and by.loc["a", "value"] == 7 and by.loc["root", "value"] == 12
    for child, parent in zip(df.node, df.parent):
        if parent:
            assert by.loc[child, "depth"] == by.loc[parent, "depth"] + 1


def test_unlabelled_tree_works():
    t = tree_from_parents(np.array([-1, 0, 0, 1]))
    fig = vt.tree_figure(t, np.array([3.0, 2.0, 1.0, 2.0]))
    assert len(fig.data[0].ids) == 4


def test_top_levels_under_a_node_fit_the_budget(binary):
    t = binary.tree
    child = 1  # the root's first child: a complete binary subtree of 11 levels
    idx = vt.top_levels(t, max_nodes=100, root=child)
    assert idx.size == 63 and idx[0] == child  # 6 whole levels under it (127 > 100)
    assert set(t.parent[idx[1:]]) <= set(idx)
    anc = idx.copy()
    for _ in range(12):  # every node shown descends from ``child``
        anc = np.where(anc > child, t.parent[anc], anc)
    assert np.all(anc == child)
    assert vt.top_levels(t, max_nodes=0, root=child).tolist() == [child]
    leaf = t.n - 1
    assert vt.top_levels(t, root=leaf).tolist() == [leaf]


def test_tree_views_are_bounded_by_default_and_zoom(binary):
    t = binary.tree
    fig = vt.tree_figure(t, binary.v, binary.v + 1.0)
    assert len(fig.data[0].ids) <= vt.TREE_VIEW_MAX_NODES == 400  # 4,095 nodes: 8 levels (255) drawn
    assert "top 8 of 12 levels" in fig.layout.title.text
    opts = vt.zoom_options(t)
    assert opts[0] == 0 and len(opts) == 255  # the root, then the (all internal) other nodes of the view
    sub = vt.tree_figure(t, binary.v, root=int(opts[5]))
    ids = np.asarray(sub.data[0].ids).astype(int)
    assert ids[0] == opts[5] and list(sub.data[0].parents).count("") == 1
    assert "under " in sub.layout.title.text
    prop = vt.propagation_figure(t, np.ones(t.n), root=int(opts[5]))
    assert list(prop.data[0].ids) == list(sub.data[0].ids)
    assert fig.layout.uirevision == "keep"  # a rerun keeps the reader's zoom and hover


def test_titles_and_colour_bars_leave_room():
    t = tree_from_parents(np.array([-1, 0, 0, 1]))
    fig = vt.tree_figure(t, np.array([3.0, 2.0, 1.0, 2.0]), np.array([3.0, 2.5, 0.5, 2.5]), title="Error per node")
    assert fig.layout.title.text == "Error per node" and fig.layout.title.x < 0.05
    assert "<br>" in fig.data[0].marker.colorbar.title.text  # two short lines, not one long one
    labels = [f"a long label {i}" for i in range(20)]
    heat = matrix_heatmap(np.eye(20), "G", row_labels=labels, col_labels=labels)
    # the column labels stand above the plot at -60°: the top margin holds them below the title
    assert heat.layout.margin.t >= 60 + len(labels[0]) * 5 and heat.layout.title.yref == "container"
    assert heat.layout.title.y == 1 and heat.layout.title.yanchor == "top"


def test_log_ticks_are_readable():
    assert vt.log_ticks(np.array([3.0, 40.0]))["ticktext"] == ["2", "5", "10", "20", "50"]
    assert vt.log_ticks(np.array([0.02, 0.3]))["ticktext"] == ["0.02", "0.05", "0.1", "0.2", "0.5"]
    assert vt.log_ticks(np.array([1.0, 1e6]))["ticktext"][-1] == "1,000,000"
    assert vt.log_ticks(np.array([np.nan, -1.0])) == {}


def test_methods_table_view_words_and_order():
    table = pd.DataFrame({"method": ["gmc", "boosting"], "rmse_NQ": [6.891877, 14.4], "rmse_RQ": [43.6, 1869.2],
                          "bias": [1e-13, 1012.3], "negatives": [0, 3], "seconds": [0.0012, 0.0004],
                          "total_sq_error": [152325.97, 667582.3], "expected_sq_error": [157100.0, np.nan]})
    view = vt.methods_table_view(table, {"gmc": "GMC"})
    assert list(view.columns) == [vt.METHOD_COLUMNS[c][0] for c in table.columns]
    assert view.iloc[0, 0] == "GMC" and view.iloc[1, 0] == "boosting"
    assert list(view["expected (Thm 5)"]) == ["157,100", "no closed form"]
    assert view["node RMSE"].tolist() == [6.892, 14.4] and view["total sq. error"].tolist() == [152300.0, 667600.0]
    assert view["time (ms)"].tolist() == [1.2, 0.4]  # milliseconds: a 0.3 ms method does not read "0"
    assert "None" not in view.astype(str).to_numpy() and "nan" not in view.astype(str).to_numpy()


def test_sparsity_figure_by_value_colours_weights():
    g = sp.csr_matrix(np.array([[2.0, 0, 0], [-0.5, 1.5, 0], [-0.25, 0, 3.0]]))
    fig = vt.sparsity_figure(g, "weighted", by_value=True)
    assert len(fig.data) == 1
    np.testing.assert_allclose(sorted(fig.data[0].marker.color), sorted(g.data))
    assert fig.data[0].marker.cmid == 0.0
