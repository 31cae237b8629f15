"""dpviz.graph.model / io / data: canonical edges, the edge-list reader and writer, the bundled graphs."""

import gzip
import hashlib
import io
import json
import re
from pathlib import Path

import numpy as np
import pytest

from dpviz.core.registry import capability, load_sample
from dpviz.core.assets import asset
from dpviz.errors import InputError
from dpviz.graph import samples as data
from dpviz.graph.io import MAX_BYTES, MAX_EDGES, MAX_NODES, edges_frame, read_edges, write_edges
from dpviz.graph.model import Graph, canonical_edges, sorted_unique

# ---- canonical_edges ---------------------------------------------------------------------------------------------


def _brute(edges, n):
    seen, out, loops, dups = set(), [], 0, 0
    for a, b in edges:
        assert 0 <= a < n and 0 <= b < n
        if a == b:
            loops += 1
            continue
        e = (min(a, b), max(a, b))
        if e in seen:
            dups += 1
        else:
            seen.add(e)
    out = sorted(seen)
    return out, loops, dups


def test_canonical_edges_matches_brute_force_on_random_lists():
    rng = np.random.default_rng(1)
    for _ in range(200):
        n = int(rng.integers(1, 30))
        m = int(rng.integers(0, 80))
        e = rng.integers(0, n, size=(m, 2))
        c = canonical_edges(e, n)
        want, loops, dups = _brute(e.tolist(), n)
        assert c.edges.dtype == np.int64 and c.edges.shape == (len(want), 2)
        assert [tuple(r) for r in c.edges.tolist()] == want  # u < v, unique, sorted lexicographically
        assert (c.self_loops, c.duplicates) == (loops, dups)
        assert c.n_edges + loops + dups == m


def test_canonical_edges_inputs_and_errors():
    assert canonical_edges([], 3).edges.shape == (0, 2)
    assert canonical_edges(np.array([[2.0, 1.0]]), 3).edges.tolist() == [[1, 2]]  # whole floats are ids
    assert canonical_edges(np.array([[2, 1]], dtype=np.uint8), 3).edges.dtype == np.int64
    with pytest.raises(InputError, match=r"row 1 is \[0, 3\]; vertex ids must be in 0\.\.2"):
        canonical_edges([[0, 1], [0, 3]], 3)
    with pytest.raises(InputError, match=r"row 0 is \[-1, 1\]"):
        canonical_edges([[-1, 1]], 3)
    with pytest.raises(InputError, match="whole numbers"):
        canonical_edges([[0.5, 1]], 3)
    with pytest.raises(InputError, match="whole numbers"):
        canonical_edges([[np.nan, 1]], 3)
    with pytest.raises(InputError, match=r"shape \(m, 2\)"):
        canonical_edges(np.zeros((2, 3), dtype=int), 3)
    with pytest.raises(InputError, match="integer vertex ids"):
        canonical_edges([["a", "b"]], 3)
    with pytest.raises(InputError, match="booleans"):
        canonical_edges(np.array([[True, False]]), 3)
    for bad in (0, -2, 2.5, True, "3"):
        with pytest.raises(InputError, match="n_nodes"):
            canonical_edges([[0, 1]], bad)


def test_sorted_unique_equals_numpy_unique():
    rng = np.random.default_rng(2)
    for size in (0, 1, 2, 50, 1000):
        x = rng.integers(0, 40, size)
        np.testing.assert_array_equal(sorted_unique(x), np.unique(x))


def test_graph_validates_and_from_edges_adds_notices():
    g = Graph.from_edges([[1, 0], [0, 1], [2, 2]], 4, name="t")
    assert g.edges.tolist() == [[0, 1]] and g.n_edges == 1 and g.name == "t"
    assert any("1 self-loop" in s for s in g.notices) and any("1 duplicate" in s for s in g.notices)
    assert g.degrees().tolist() == [1, 1, 0, 0]
    with pytest.raises(InputError, match="canonical"):
        Graph(3, np.array([[1, 0]], dtype=np.int64))
    with pytest.raises(InputError, match="int64"):
        Graph(3, np.array([[0, 1]], dtype=np.int32))
    with pytest.raises(InputError, match="3 labels"):
        Graph(3, np.array([[0, 1]], dtype=np.int64), labels=("a", "b"))


# ---- read_edges: formats ------------------------------------------------------------------------------------------


def _pairs(g):
    lab = g.label_array()
    return {frozenset((str(lab[u]), str(lab[v]))) for u, v in g.edges.tolist()}


def test_header_and_no_header_give_the_same_graph():
    a = read_edges(b"u,v\n0,1\n1,2\n2,0\n")
    b = read_edges(b"0,1\n1,2\n2,0\n")
    c = read_edges(b"source,target\n0,1\n1,2\n2,0\n")
    for g in (a, b, c):
        assert g.n_nodes == 3 and g.edges.tolist() == [[0, 1], [0, 2], [1, 2]] and g.labels is None
        assert g.notices == ()


def test_header_detection_by_integers_and_forced():
    g = read_edges(b"person1,person2\n1,2\n2,3\n")  # rest integers, first line not: a header
    assert g.n_nodes == 3 and g.labels == ("1", "2", "3")
    g = read_edges(b"alice,bob\nbob,carol\n")  # strings throughout: no header
    assert g.n_nodes == 3 and g.labels == ("alice", "bob", "carol")
    g = read_edges(b"who,whom\nbob,carol\n", header=True)
    assert g.n_nodes == 2 and g.labels == ("bob", "carol")
    g = read_edges(b"u,v\nbob,carol\n", header=False)
    assert g.n_nodes == 4 and g.labels == ("u", "v", "bob", "carol")


def test_tabs_semicolons_whitespace_comments_and_crlf():
    tsv = read_edges(b"a\tb\nb\tc\n")
    semi = read_edges(b"a;b\nb;c\n")
    ws = read_edges(b"# SNAP-style comment\n% KONECT comment\n\na   b\n  b c  \n")
    crlf = read_edges(b"a,b\r\nb,c\r\n")
    for g in (tsv, semi, ws, crlf):
        assert g.labels == ("a", "b", "c") and g.edges.tolist() == [[0, 1], [1, 2]]


def test_quoted_labels_with_commas():
    g = read_edges(b'"Smith, J.","Doe, A."\n"Doe, A.",Roe\n')
    assert g.labels == ("Smith, J.", "Doe, A.", "Roe")


def test_integer_ids_sorted_numerically_string_ids_first_seen():
    g = read_edges(b"10,2\n2,7\n-1,10\n")
    assert g.labels == ("-1", "2", "7", "10")  # increasing numeric order, not text order
    assert _pairs(g) == {frozenset(p) for p in (("10", "2"), ("2", "7"), ("-1", "10"))}
    g = read_edges(b"1,2\n2,3\n3,4\n")  # 1-based: shifted by one, labels kept
    assert g.edges.tolist() == [[0, 1], [1, 2], [2, 3]] and g.labels == ("1", "2", "3", "4")
    g = read_edges(b"zed,x1\nx1,7\n")  # one non-integer id: every id is a string label, first-seen order
    assert g.labels == ("zed", "x1", "7")


def test_self_loops_duplicates_and_directed_input_counted():
    g = read_edges(b"a,b\nb,a\na,b\nc,c\nb,c\nc,b\n")
    assert g.edges.tolist() == [[0, 1], [1, 2]]
    text = " | ".join(g.notices)
    assert "1 self-loop" in text
    assert "1 repeated row" in text
    assert "symmetrised" in text and "2 pairs listed in both directions" in text


def test_weight_column_ignored_with_notice():
    g = read_edges(b"u,v,weight\n0,1,0.5\n1,2,3\n")
    assert g.edges.tolist() == [[0, 1], [1, 2]]
    assert any("weights) ignored on 2 rows" in s for s in g.notices)


def test_n_nodes_keeps_ids_and_isolated_vertices():
    g = read_edges(b"0,3\n3,1\n", n_nodes=6)
    assert g.n_nodes == 6 and g.labels is None and g.edges.tolist() == [[0, 3], [1, 3]]
    assert g.degrees().tolist() == [1, 1, 0, 2, 0, 0]


def test_sources_path_gzip_bytes_and_file_object(tmp_path):
    text = b"u,v\nx,y\ny,z\n"
    p = tmp_path / "g.csv"
    p.write_bytes(text)
    pz = tmp_path / "g.csv.gz"
    pz.write_bytes(gzip.compress(text))
    for src in (p, str(p), pz, gzip.compress(text), io.BytesIO(text), bytearray(text)):
        g = read_edges(src)
        assert g.labels == ("x", "y", "z") and g.n_edges == 2
    assert read_edges(p).name == "g" and read_edges(pz).name == "g" and read_edges(text).name == "upload"
    assert read_edges(text, name="mine").name == "mine"


def test_write_edges_round_trip_with_string_labels(tmp_path):
    src = tmp_path / "in.tsv"
    src.write_text("alice\tbob\nbob\tcarol\ncarol\talice\nerin\tdave\n", encoding="utf-8")
    g = read_edges(src)
    out = write_edges(tmp_path / "out.csv", g.edges, g.labels, inputs=[src])
    assert out.read_text(encoding="utf-8").splitlines()[0] == "u,v"
    again = read_edges(out)
    assert _pairs(again) == _pairs(g) and again.n_edges == 4
    with pytest.raises(InputError, match="input file"):
        write_edges(src, g.edges, g.labels, inputs=[src])
    assert src.read_text(encoding="utf-8").startswith("alice\tbob")  # untouched
    assert not list(tmp_path.glob(".*tmp"))  # atomic writer left no temporary file


def test_edges_frame_maps_labels_and_checks_range():
    df = edges_frame(np.array([[0, 2]]), ("a", "b", "c"))
    assert df.to_dict("list") == {"u": ["a"], "v": ["c"]}
    assert edges_frame(np.array([[0, 2]])).to_dict("list") == {"u": [0], "v": [2]}
    with pytest.raises(InputError, match="0..1"):
        edges_frame(np.array([[0, 2]]), ("a", "b"))


def test_reader_reads_20k_edges_of_ints_and_of_names_alike():
    """Both fast paths (integer ids with a header, tab-separated names) give the canonical edge set of their
    ids (numbers in numeric order, names in order of first appearance); the reader's speed is measured in
    bench/graph_bench.py (part 3), not asserted here."""
    rng = np.random.default_rng(3)
    e = rng.integers(0, 5_000, size=(20_000, 2))
    ints = ("u,v\n" + "\n".join(f"{a},{b}" for a, b in e.tolist())).encode()
    strs = "\n".join(f"n{a}\tn{b}" for a, b in e.tolist()).encode()
    uniq, first, inverse = np.unique(e, return_index=True, return_inverse=True)
    by_appearance = np.empty(uniq.size, np.int64)
    by_appearance[np.argsort(first)] = np.arange(uniq.size)
    for blob, ids in ((ints, inverse), (strs, by_appearance[inverse])):
        want = canonical_edges(ids.reshape(e.shape), uniq.size)
        g = read_edges(blob)
        np.testing.assert_array_equal(g.edges, want.edges)
    assert g.labels[:3] == ("n" + str(e[0, 0]), "n" + str(e[0, 1]), "n" + str(e[1, 0]))


# ---- read_edges: errors -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("blob", "pattern"), [
    (b"", r"the upload is empty: expected one edge per line"),
    (b"# only a comment\n\n   \n", r"is empty"),
    (b"u,v\n", r"has a header but no edge"),
    (b"# c\n0,1\n\n2\n", r"line 4: expected two vertex ids u, v separated by a comma; found fewer than 2"),
    (b"0,1\n1,\n", r"line 2: expected two vertex ids"),
    (b"0 1\n1\n", r"line 2: expected two vertex ids u, v separated by spaces"),
    (b"0,1\n% c\n1,2,3,4\n", r"line 3: 4 fields; expected 2 \(u, v\) or 3 \(u, v, weight\)"),
    (b"0,1\n1,2,3,4,5\n", r"line 2: too many fields"),
    (b"0,1,1\n1,2,heavy\n", r"line 2: third field 'heavy' is not a number"),
    (b"u\n", r"line 1: expected two vertex ids"),
])
def test_errors_name_the_line(blob, pattern):
    with pytest.raises(InputError, match=pattern):
        read_edges(blob)


def test_forced_header_needs_two_columns():
    with pytest.raises(InputError, match=r"line 2: the header has fewer than 2 columns"):
        read_edges(b"# c\nu\n0,1\n", header=True)


def test_n_nodes_errors():
    with pytest.raises(InputError, match=r"line 3: vertex id 5 is outside 0..4"):
        read_edges(b"u,v\n0,1\n1,5\n", n_nodes=5)
    with pytest.raises(InputError, match=r"line 2: vertex ids 'a', '1'; with n_nodes = 5 every id must be an integer"):
        read_edges(b"0,1\na,1\n", n_nodes=5)
    with pytest.raises(InputError, match="n_nodes"):
        read_edges(b"0,1\n", n_nodes=0)


def test_missing_file_folder_and_bad_source(tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        read_edges(tmp_path / "nope.csv")
    with pytest.raises(InputError, match="is a folder"):
        read_edges(tmp_path)
    with pytest.raises(InputError, match="expected a file path, bytes"):
        read_edges(12)
    with pytest.raises(InputError, match="binary mode"):
        read_edges(io.StringIO("0,1\n"))
    with pytest.raises(InputError, match="truncated gzip"):
        read_edges(gzip.compress(b"0,1\n1,2\n")[:-12])
    with pytest.raises(InputError, match="cannot be decompressed"):
        read_edges(b"\x1f\x8bnot really gzip")


# ---- caps ---------------------------------------------------------------------------------------------------------


def test_caps_are_module_constants():
    assert (MAX_BYTES, MAX_EDGES, MAX_NODES) == (100_000_000, 2_000_000, 5_000_000)


def test_edge_cap_exact_and_one_over():
    rows = b"".join(b"%d,%d\n" % (i, i + 1) for i in range(10))
    assert read_edges(b"u,v\n" + rows, max_edges=10).n_edges == 10
    hint = (r"the limit is 10 \(MAX_EDGES\); raise it with read_edges\(\.\.\., max_edges=N\) "
            r"or the CLI flag --max-edges N")
    with pytest.raises(InputError, match=r"has 11 edge rows, above the edge cap; " + hint):
        read_edges(rows + b"10,11\n", max_edges=10)  # 11 lines: one could be a header, so found after parsing
    with pytest.raises(InputError, match=r"more than 10 edge rows, above the edge cap \(counted while reading"):
        read_edges(b"u,v\n" + rows + b"10,11\n" + b"11,12\n", max_edges=10)  # 13 lines: found while reading
    # comments and blank lines do not count as rows
    assert read_edges(b"# c\n\n" * 50 + rows, max_edges=10).n_edges == 10


class _Stream(io.RawIOBase):
    """An endless edge list that counts how much was read from it."""

    def __init__(self):
        self.served = 0

    def readable(self):
        return True

    def read(self, size=-1):
        chunk = b"".join(b"%d,%d\n" % (i, i + 1) for i in range(20_000))
        self.served += len(chunk)
        return chunk


def test_edge_cap_stops_reading_early():
    s = _Stream()
    with pytest.raises(InputError, match="more than 50,000 edge rows.*counted while reading"):
        read_edges(s, max_edges=50_000, max_bytes=10**9)
    assert s.served < 2_000_000  # a few chunks, not the (endless) stream


def test_byte_cap_checked_before_reading(tmp_path, monkeypatch):
    p = tmp_path / "big.csv"
    p.write_bytes(b"0,1\n" * 1000)

    def no_open(*args, **kwargs):
        raise AssertionError("the file was opened")

    monkeypatch.setattr(Path, "open", no_open)
    with pytest.raises(InputError, match=r"4,000 bytes, above the size cap; the limit is 3,999 \(MAX_BYTES\); raise "
                                         r"it with read_edges\(\.\.\., max_bytes=N\) or the CLI flag --max-bytes N"):
        read_edges(p, max_bytes=3999)
    with pytest.raises(InputError, match="the upload is 4,000 bytes, above the size cap"):
        read_edges(b"0,1\n" * 1000, max_bytes=3999)


def test_byte_cap_on_decompressed_size():
    bomb = gzip.compress(b"0,1\n" * 100_000)  # 400 kB of text, a few kB compressed
    assert len(bomb) < 10_000
    with pytest.raises(InputError, match="decompresses to more than 10,000 bytes"):
        read_edges(bomb, max_bytes=10_000)


def test_node_cap():
    with pytest.raises(InputError, match="n_nodes = 11 is above the vertex cap"):
        read_edges(b"0,1\n", n_nodes=11, max_nodes=10)
    with pytest.raises(InputError, match="6 distinct vertex ids, above the vertex cap; the limit is 5"):
        read_edges(b"a,b\nc,d\ne,f\n", max_nodes=5)
    with pytest.raises(InputError, match="max_edges"):
        read_edges(b"0,1\n", max_edges=0)


# ---- bundled graphs -----------------------------------------------------------------------------------------------

DOCUMENTED = {  # name: (vertices, edges) as in dpviz/assets/SOURCES.md and the issue
    "karate": (34, 78), "power": (4941, 6594), "hep-th": (8361, 15751), "netscience": (1589, 2742),
    "polblogs": (1490, 16715), "email-enron": (36692, 183831),
}


@pytest.mark.parametrize("name", list(DOCUMENTED))
def test_bundled_graphs_have_the_documented_counts(name):
    g = data.load_graph_sample(name)
    assert (g.n_nodes, g.n_edges) == DOCUMENTED[name]
    info = data.sample_info(name)
    assert {"name", "title", "n_nodes", "n_edges", "directed_source", "source", "citation", "licence"} <= set(info)
    assert (info["n_nodes"], info["n_edges"]) == DOCUMENTED[name]
    e = g.edges
    assert e.dtype == np.int64 and (e[:, 0] < e[:, 1]).all() and e.min() >= 0 and e.max() < g.n_nodes
    assert np.array_equal(canonical_edges(e, g.n_nodes).edges, e)  # canonical already
    assert not e.flags.writeable and data.load_graph_sample(name) is g  # cached, immutable
    isolated = int(g.n_nodes - np.count_nonzero(g.degrees()))
    assert isolated == info["isolated_nodes"]


def test_named_loaders_registry_and_polblogs_notice():
    assert data.load_karate_sample() is data.load_graph_sample("KARATE")
    assert data.load_enron_sample() is data.load_graph_sample("email-Enron")
    assert data.load_hepth_sample().n_nodes == 8361 and data.load_power_sample().n_edges == 6594
    assert data.load_netscience_sample().n_edges == 2742
    pb = data.load_polblogs_sample()
    assert data.sample_info("polblogs")["directed_source"] and any("symmetrised" in s for s in pb.notices)
    assert {s.name for s in capability("graph").samples} == set(DOCUMENTED)
    assert load_sample("graph", "sample:karate") is data.load_karate_sample()
    with pytest.raises(InputError, match="bundled graphs are"):
        data.load_graph_sample("nope")


def test_karate_is_networkx_karate_club():
    import networkx as nx

    want = canonical_edges(np.array(list(nx.karate_club_graph().edges())), 34).edges
    np.testing.assert_array_equal(data.load_karate_sample().edges, want)


def test_bundled_files_are_small_and_listed_in_sources_md():
    files = sorted(asset("graphs/karate.json").parent.iterdir())
    assert sum(p.stat().st_size for p in files) < 3_000_000
    text = asset("SOURCES.md").read_text(encoding="utf-8")
    rows = dict(re.findall(r"^\|\s*`(graphs/[^`]+)`\s*\|[^\n]*`([0-9a-f]{64})`\s*\|", text, flags=re.M))
    assert set(rows) == {f"graphs/{p.name}" for p in files}
    for p in files:
        assert hashlib.sha256(p.read_bytes()).hexdigest() == rows[f"graphs/{p.name}"], p.name
    for cite in ("Newman", "Leskovec", "Zachary", "python3-graph-tool"):
        assert cite in text
    for name, (n, m) in DOCUMENTED.items():
        blob = gzip.decompress(asset(f"graphs/{name}.csv.gz").read_bytes())
        assert blob.startswith(b"u,v\n") and blob.count(b"\n") - 1 == m
        assert json.loads(asset(f"graphs/{name}.json").read_text(encoding="utf-8"))["n_nodes"] == n


# ---- registry hooks: load and canonical_bytes (the ledger's identity) -----------------------------------------------

# SHA-256 of the ledger's canonical form ("dpviz-ledger/1 graph" line + the hook's bytes), computed with
# dpviz.ledger.identity BEFORE the graph branch moved into dpviz.graph.io: ledger identities must not change.
PINNED_GRAPH = {
    "sample:karate": "6616485fbb8f65ad06fbee4d504cacc79ae975300b0e381e8a38d199bb9e76a0",
    "file": "7df15138acb30afc1097d5a445aad7d355a2d7c2010821b1275e7a4c69aacd1d",
}


@pytest.mark.parametrize("spec", ["sample:karate", "file"])
def test_canonical_bytes_hook_pins_the_ledger_identity(spec, tmp_path):
    cap = capability("graph")
    key = spec
    if spec == "file":
        spec = tmp_path / "g.csv"
        spec.write_text("u,v\nb,a\na,c\nc,b\na,b\n")
    g = cap.hook("load")(str(spec))
    body = cap.hook("canonical_bytes")(spec, g)
    assert hashlib.sha256(b"dpviz-ledger/1 graph\n" + body).hexdigest() == PINNED_GRAPH[key]


def test_canonical_bytes_ignores_order_direction_and_duplicates():
    from dpviz.graph.io import canonical_bytes

    a = read_edges(b"x;y\n2;1\n1;3\n")
    b = read_edges(b"3 1\n1 2\n2 1\n")
    assert canonical_bytes("a", a) == canonical_bytes("b", b) == b'["1","2"]\n["1","3"]\n'


def test_load_hook_passes_options_to_read_edges(tmp_path):
    load = capability("graph").hook("load")
    assert load("sample:karate").n_edges == 78
    path = tmp_path / "g.csv"
    path.write_text("0,1\n1,2\n")
    assert load(str(path), n_nodes=5).n_nodes == 5
    with pytest.raises(InputError, match="does not exist"):
        load(str(tmp_path / "missing.csv"))


def test_canonical_bytes_quotes_labels_as_json_lines_do():
    """Labels with quotes, backslashes, tabs, non-ASCII: the same bytes as sorted compact JSON lines of the
    sorted label pairs (the ledger's definition), whatever the order the pairs come in."""
    from dpviz.graph.io import canonical_bytes

    g = read_edges('a b;"x""y"\n"é\\\\";a b\nz!;a\n"a\tb";z\nq!;q\n'.encode())
    labels = list(g.labels)
    want = sorted(json.dumps(sorted((labels[u], labels[v])), ensure_ascii=False, separators=(",", ":"))
                  for u, v in g.edges.tolist())
    assert canonical_bytes("x", g) == ("\n".join(want) + "\n").encode("utf-8")
    assert b'["a b","x\\"y"]' in canonical_bytes("x", g)
