"""Declared public vertex set of a graph release (issue 17, point 1): ``--nodes FILE`` / ``--n-nodes N`` /
a sample's shipped declaration / ``--structure-from-data``, and ``graph describe-structure``.

The test that would have caught the bug: two edge files that differ by one edge {f, zed}, where zed has no
other edge, give the same public metadata when released on the same declaration, and different metadata
(saying so) when the vertex set is read from the data.
"""

import json

import numpy as np
import pandas as pd
import pytest

from dpviz.core.modes import RELEASE_NOTICE
from dpviz.core.structure import DESCRIBE_NOTICE, STRUCTURE_FROM_DATA_NOTICE
from dpviz.errors import InputError
from dpviz.graph.samples import load_graph_sample, sample_declaration
from dpviz.graph.io import read_edges
from dpviz.core.noise import Noise
from dpviz.graph.release import release
from dpviz.graph.strategy import L1_SENSITIVITIES, sensitivity
from dpviz.graph.structure import VertexSet, describe_text
from tests.cli_helpers import one_line_error, run_group

BASE = "a,b\nb,c\nc,a\nd,a\ne,d\ne,f\nf,a\n"
NEIGHBOUR = BASE + "f,zed\n"
NODES = "a\nb\nc\nd\ne\nf\n"
VOLATILE = {"created_utc", "n_edges_released"}
"""Meta fields that may differ between two releases: the time, and the (noisy) released edge count."""


def run(argv, capsys):
    return run_group("graph", argv, capsys)


def _release(tmp_path, capsys, tag: str, text: str, *flags, method: str = "drf-dp") -> dict:
    """Release ``text`` (saved as ``TAG/edges.csv``: both inputs have the same file name) with ``flags``;
    the parsed meta, report and partitions, and stdout."""
    folder = tmp_path / tag
    folder.mkdir()
    edges = folder / "edges.csv"
    edges.write_text(text, encoding="utf-8")
    out, rep, part = folder / "o.csv", folder / "r.json", folder / "p.json"
    rc, stdout, err = run(["release", edges, "--epsilon", "1", "--method", method, "--output", out, "--report", rep,
                           "--partitions", part, *flags], capsys)
    assert rc == 0, err
    return {"meta": json.loads((folder / "o.csv.meta.json").read_text(encoding="utf-8")),
            "report": json.loads(rep.read_text(encoding="utf-8")),
            "partitions": json.loads(part.read_text(encoding="utf-8")),
            "released": pd.read_csv(out, dtype=str, keep_default_na=False), "stdout": stdout}


def _public(res: dict) -> dict:
    """What a release publishes, minus the draw: meta and report without the time and the noisy edge count,
    the partition's vertex set (its order is drawn from noisy degrees), n_nodes and structure, the stdout
    line naming the vertex set."""
    part = res["partitions"]
    return {"meta": {k: v for k, v in res["meta"].items() if k not in VOLATILE},
            "report": {k: v for k, v in res["report"].items() if k not in VOLATILE},
            "partitions": {"n_nodes": part["n_nodes"], "structure": part["structure"], "keys": sorted(part),
                           "order_labels": sorted(part["order_labels"])},
            "vertex line": res["stdout"].splitlines()[1]}


@pytest.mark.parametrize("nodes", [NODES, NODES + "zed\n"], ids=["zed-undeclared", "zed-declared"])
def test_neighbouring_edge_files_give_identical_public_metadata_on_a_declaration(tmp_path, capsys, nodes):
    decl = tmp_path / "nodes.txt"
    decl.write_text(nodes, encoding="utf-8")
    a = _release(tmp_path, capsys, "a", BASE, "--nodes", decl)
    b = _release(tmp_path, capsys, "b", NEIGHBOUR, "--nodes", decl)
    assert _public(a) == _public(b)
    assert json.dumps(_public(a), sort_keys=True).encode() == json.dumps(_public(b), sort_keys=True).encode()
    n = nodes.count("\n")
    assert a["meta"]["n_nodes"] == n and a["partitions"]["n_nodes"] == n and a["report"]["n_nodes"] == n
    assert a["meta"]["structure"] == {"source": "declared", "declaration": "--nodes nodes.txt"}
    assert sorted(a["partitions"]["order_labels"]) == sorted(nodes.split())
    for res in (a, b):  # released labels come from the declaration only
        assert set(res["released"]["u"]) | set(res["released"]["v"]) <= set(nodes.split())
        assert STRUCTURE_FROM_DATA_NOTICE not in res["stdout"] + json.dumps(res["meta"])


def test_neighbouring_edge_files_differ_and_say_so_with_structure_from_data(tmp_path, capsys):
    a = _release(tmp_path, capsys, "a", BASE, "--structure-from-data")
    b = _release(tmp_path, capsys, "b", NEIGHBOUR, "--structure-from-data")
    assert _public(a) != _public(b)
    assert (a["meta"]["n_nodes"], b["meta"]["n_nodes"]) == (6, 7)
    assert "zed" in b["partitions"]["order_labels"] and "zed" not in a["partitions"]["order_labels"]
    for res in (a, b):
        assert STRUCTURE_FROM_DATA_NOTICE in res["stdout"]
        for doc in ("meta", "report", "partitions"):
            assert res[doc]["structure"] == {"source": "data", "notice": STRUCTURE_FROM_DATA_NOTICE}, doc


def test_release_without_a_declaration_is_refused_before_reading(tmp_path, capsys):
    edges = tmp_path / "e.csv"
    edges.write_text(BASE, encoding="utf-8")
    ledger = tmp_path / "ledger.sqlite3"
    assert run_group("ledger", ["init", "--ledger", ledger], capsys)[0] == 0
    rc, out, err = run(["release", edges, "--epsilon", "1", "--output", tmp_path / "o.csv", "--ledger", ledger],
                       capsys)
    one_line_error(rc, err, "--nodes FILE", "--n-nodes N", "--structure-from-data", "describe-structure")
    assert not (tmp_path / "o.csv").exists() and out == ""
    rc, out, _ = run_group("ledger", ["show", "--ledger", ledger], capsys)
    assert rc == 0 and "0 release(s)" in out  # nothing charged
    rc, _, err = run(["release", edges, "--epsilon", "1", "--output", tmp_path / "o.csv", "--n-nodes", "6",
                      "--structure-from-data"], capsys)
    one_line_error(rc, err, "--n-nodes", "--structure-from-data", "give one of")


def test_a_bundled_sample_ships_its_declaration(tmp_path, capsys):
    out = tmp_path / "k.csv"
    rc, stdout, err = run(["release", "sample:karate", "--epsilon", "1", "--output", out], capsys)
    assert rc == 0, err
    meta = json.loads((tmp_path / "k.csv.meta.json").read_text(encoding="utf-8"))
    assert meta["structure"]["source"] == "declared" and "sample:karate" in meta["structure"]["declaration"]
    assert meta["n_nodes"] == 34 and "34 vertices" in stdout and stdout.startswith(RELEASE_NOTICE)
    decl = sample_declaration("karate")
    assert decl.declared and decl.n_nodes == 34 and decl.labels is None
    # hep-th has 751 isolated vertices: its declaration keeps them
    assert sample_declaration("hep-th").n_nodes == load_graph_sample("hep-th").n_nodes == 8361


def test_n_nodes_declares_0_to_n_minus_1_and_drops_other_ids(tmp_path, capsys):
    edges = tmp_path / "e.csv"
    edges.write_text("0,1\n1,2\n2,9\nx,0\n", encoding="utf-8")
    out = tmp_path / "o.csv"
    rc, stdout, err = run(["release", edges, "--epsilon", "2", "--method", "quadtree", "--n-nodes", "5",
                           "--output", out], capsys)
    assert rc == 0, err
    meta = json.loads((tmp_path / "o.csv.meta.json").read_text(encoding="utf-8"))
    assert meta["n_nodes"] == 5 and meta["structure"] == {"source": "declared",
                                                          "declaration": "--n-nodes 5 (vertex ids 0..4)"}
    released = pd.read_csv(out)
    assert released.empty or set(released["u"]) | set(released["v"]) <= set(range(5))
    assert "dropped" not in stdout + err


def test_isolated_declared_vertices_are_vertices_of_the_release(tmp_path, capsys):
    decl = tmp_path / "nodes.txt"
    decl.write_text("\n" + NODES + "\n\nlonely\nhermit", encoding="utf-8")  # blank lines, no final line end
    res = _release(tmp_path, capsys, "a", BASE, "--nodes", decl)
    assert res["meta"]["n_nodes"] == 8
    assert {"lonely", "hermit"} <= set(res["partitions"]["order_labels"])


def test_simulate_reads_the_data_or_a_declaration_and_may_say_what_was_dropped(tmp_path, capsys):
    edges = tmp_path / "e.csv"
    edges.write_text(NEIGHBOUR, encoding="utf-8")
    rc, out, err = run(["simulate", edges, "--epsilon", "1", "--method", "random", "--seed", "1"], capsys)
    assert rc == 0, err
    assert f"vertex set: {STRUCTURE_FROM_DATA_NOTICE}" in out
    decl = tmp_path / "nodes.txt"
    decl.write_text(NODES, encoding="utf-8")
    rc, out, err = run(["simulate", edges, "--epsilon", "1", "--method", "random", "--seed", "1", "--nodes", decl],
                       capsys)
    assert rc == 0, err
    assert "6 vertices; 1 edge touching an undeclared vertex dropped" in out and "7 kept" in out


def test_describe_structure_writes_the_ids_and_says_they_come_from_the_data(tmp_path, capsys):
    edges = tmp_path / "e.csv"
    edges.write_text(NEIGHBOUR, encoding="utf-8")
    nodes = tmp_path / "nodes.txt"
    rc, out, err = run(["describe-structure", edges, "--output", nodes], capsys)
    assert rc == 0, err
    assert DESCRIBE_NOTICE in out
    assert nodes.read_text(encoding="utf-8") == "a\nb\nc\nd\ne\nf\nzed\n"
    assert not list(tmp_path.glob(".*.tmp"))
    # the template declares the same vertex set the data shows
    res = _release(tmp_path, capsys, "r", NEIGHBOUR, "--nodes", nodes)
    assert res["meta"]["n_nodes"] == 7
    rc, _, err = run(["describe-structure", edges, "--output", edges], capsys)
    one_line_error(rc, err, "is the input file")
    assert edges.read_text(encoding="utf-8") == NEIGHBOUR
    rc, out, err = run(["describe-structure", "sample:karate", "--output", tmp_path / "k.txt"], capsys)
    assert rc == 0 and (tmp_path / "k.txt").read_text().split() == [str(i) for i in range(34)]


# ---- library ------------------------------------------------------------------------------------------------------


def test_vertex_set_from_ids_order_duplicates_and_blank_lines():
    ints = VertexSet.from_ids(["3", "", "1", "007", "  2 "], origin="t")
    assert ints.labels == ("1", "2", "3", "7") and ints.n_nodes == 4  # integers: by value, decimal form
    assert VertexSet.from_ids(["2", "0", "1"], origin="t").labels is None  # exactly 0..n-1
    text = VertexSet.from_ids(["b", "a", "10"], origin="t")
    assert text.labels == ("b", "a", "10")  # otherwise: the file's order
    with pytest.raises(InputError, match=r"--nodes, line 4: vertex id '\+7' \(the same id as '7'\) is already on "
                                         r"line 1"):
        VertexSet.from_ids(["7", "a", "", "+7"], origin="t")
    with pytest.raises(InputError, match="line 3: vertex id 'a' is already on line 1"):
        VertexSet.from_ids(["a", "b", "a"], origin="t")
    with pytest.raises(InputError, match="no vertex id"):
        VertexSet.from_ids(["", "  "], origin="t")


def test_vertex_set_read_and_restrict():
    g = read_edges(b"a,b\nb,c\nc,zed\n7,a\n")
    vs = VertexSet.read(b"a\nb\nc\n007\nx\n", name="n.txt")
    assert vs.source.as_dict() == {"source": "declared", "declaration": "--nodes n.txt"}
    r = vs.restrict(g)
    assert r.n_nodes == 5 and r.labels == ("a", "b", "c", "007", "x")
    pairs = {tuple(sorted((r.labels[u], r.labels[v]))) for u, v in r.edges.tolist()}
    assert pairs == {("a", "b"), ("b", "c"), ("007", "a")}  # {c, zed} dropped; 7 matches 007
    assert vs.dropped(g) == 1
    ints = read_edges(b"0,1\n1,2\n5,1\n")
    assert VertexSet.count(3).restrict(ints).edges.tolist() == [[0, 1], [1, 2]]
    with pytest.raises(InputError, match="--n-nodes"):
        VertexSet.count(0)


def test_release_graph_depends_on_the_declaration_only():
    vs = VertexSet.from_ids(NODES.split(), origin="t")
    for text in (BASE, NEIGHBOUR):
        g = read_edges(text.encode())
        rel = release(g, Noise.laplace(1.0), method="drf-dp", rng=np.random.default_rng(0), vertices=vs,
                      source="edges")
        assert rel.n_nodes == 6 and rel.vertices is vs
        assert set(rel.table()["u"]) | set(rel.table()["v"]) <= set(NODES.split())
        part = rel.partition_json()
        assert sorted(part["order_labels"]) == sorted(NODES.split()) and part["structure"]["source"] == "declared"
        meta = rel.metadata()
        assert meta["n_nodes"] == 6 and meta["structure"] == {"source": "declared", "declaration": "t"}


def test_metadata_states_each_methods_sensitivity():
    from dpviz.graph.model import COUNT_SENSITIVITY, DEGREE_SENSITIVITY

    assert sensitivity("degree") == DEGREE_SENSITIVITY == 2.0
    assert sensitivity("quadtree") == COUNT_SENSITIVITY == 1.0
    assert sensitivity("drf-dp") == DEGREE_SENSITIVITY  # its relabelling releases noisy degrees
    assert set(L1_SENSITIVITIES) == {"drf-dp", "drf", "kdh", "quadtree", "random", "degree"}


def test_describe_text_refuses_a_line_break_in_an_id():
    g = read_edges(b'c,"a\nb"\nc,d\n')
    with pytest.raises(InputError, match="line break"):
        describe_text(g)
