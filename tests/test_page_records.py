"""Records uploads on the pages (issue 21): a Parquet file of one row per person, event or edge, the columns
picked on the page, counted by the capability's own records function (the CLI's), simulated and released;
a bad column choice and a random-bytes upload are refused with st.error, and nothing stale stays shown.

AppTest only (in-process, no browser); each test is one page run plus a few reruns."""

import datetime
import hashlib
import io

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dpviz.core.records import count_records, unit_of_privacy
from dpviz.ledger.identity import records_identity
from tests.apptest_helpers import app_test, metrics, ok, plotly_charts, upload_bytes

N = 240


def _people() -> bytes:
    """A small records file: a person id (several rows each), three geography levels, an event time, an edge
    (u, v), an age and a level column with gaps."""
    rng = np.random.default_rng(21)
    region = rng.choice(["North", "South"], N)
    state = np.array([f"{r[0]}{k}" for r, k in zip(region, rng.integers(0, 2, N))])
    county = np.array([f"{s}-c{k}" for s, k in zip(state, rng.integers(0, 3, N))])
    start = np.datetime64("2024-03-01T00:00:00", "s")
    ts = start + rng.integers(0, 9 * 86_400, N).astype("timedelta64[s]")
    gappy = [None if k % 7 == 0 else f"g{k % 3}" for k in range(N)]
    table = pa.table({"person": rng.integers(0, 70, N), "region": region, "state": state, "county": county,
                      "ts": pa.array(ts, pa.timestamp("s")), "u": rng.integers(0, 25, N), "v": rng.integers(0, 25, N),
                      "age": rng.integers(18, 90, N), "gappy": pa.array(gappy, pa.string())})
    buf = io.BytesIO()
    pq.write_table(table, buf)
    return buf.getvalue()


PEOPLE = _people()
RANDOM = np.random.default_rng(0).bytes(4096)


def page(path: str, cap: str, **state):
    """The page with its upload source and (where it has one) the records form picked before the first run."""
    form = {f"{cap}_upload_form": "records"} if cap in ("tree", "stream", "graph") else {}  # the others: records only
    seed = {f"{cap}_source": "upload", **form, **state}
    return ok(app_test(path, session_state=seed))


def errors(at) -> list[str]:
    return [e.value for e in at.error]


def current(at, cap: str):
    return at.session_state[f"{cap}_last"]


def draw(at, cap: str):
    at.button(key=f"{cap}_release_button").click().run()
    ok(at)
    assert not errors(at), errors(at)
    return at.session_state[f"{cap}_private_release"]


def assert_cleared(at, cap: str, words: str):
    shown = errors(at)
    assert any(words in e for e in shown), shown
    assert any("were cleared" in e for e in shown), shown
    assert f"{cap}_private_release" not in at.session_state
    assert current(at, cap)[0][0] == "bundled"  # the page fell back to its sample and says so
    assert any("still showing" in i.value for i in at.info)
    assert not [s for s in at.success if "Private release ready" in s.value]


# ---- tree ------------------------------------------------------------------------------------------------------
TREE = "pages/1_Tree.py"
LEVELS = ["region", "state", "county"]


def test_tree_records_counts_as_the_cli_and_releases_with_a_person_bound():
    at = page(TREE, "tree", tree_records_levels=LEVELS, tree_records_person="person", tree_records_k=2,
              tree_structure_from_data=True)
    upload_bytes(at, "upload", "people.parquet", PEOPLE)
    assert not errors(at), errors(at)
    groups = count_records(PEOPLE, LEVELS, person="person", max_contributions=2, max_bytes=1 << 30)
    key, data = current(at, "tree")
    assert key[-1] == ("records", tuple(LEVELS), "person", 2)
    leaves = data.tree.order[data.tree.n1:]  # the leaves' counts by path id = the CLI's count_records groups
    ids = data.tree.label_of(leaves).astype(str)
    paths = [" / ".join(t) for t in zip(*(groups.keys[c].to_pylist() for c in LEVELS))]
    assert dict(zip(ids, data.v[leaves])) == dict(zip(paths, groups.counts.astype(float)))
    assert data.v[data.tree.order[0]] == groups.counts.sum() < N  # K = 2 dropped records
    shown = metrics(at)
    assert shown["Nodes n"] == f"{data.tree.n:,}" and float(shown["RMSE per node, GMC (rmse_NQ)"]) > 0
    assert any(unit_of_privacy("person", 2) in c.value and "K = 2" in c.value for c in at.caption)
    _, table, meta = draw(at, "tree")
    assert len(table) == data.tree.n and "true" not in table.columns
    assert meta["unit_of_privacy"] == unit_of_privacy("person", 2)
    assert meta["sensitivity"]["value"] == 2 * meta["sensitivity"]["per_record"]
    assert meta["records"]["max_contributions"] == 2
    charged = at.session_state["ui_dataset_ids"][("tree", key[:3], "records")]  # charged to the records file:
    assert charged.sha256 == records_identity(PEOPLE).sha256  # the CLI's identity of the same file (any capability)


def test_tree_records_release_on_a_declared_hierarchy_joins_the_leaf_counts_as_the_cli():
    from dpviz.tree.hierarchy import describe_structure, join_counts, read_hierarchy
    from dpviz.tree.io import records_counts, records_tree

    nodes = describe_structure(records_tree(PEOPLE, LEVELS)).to_pylist()
    dropped = next(r["node"] for r in nodes if r["node"].count(" / ") == 2)  # a county with records, undeclared
    rows = [r for r in nodes if r["node"] != dropped] + [{"node": "North / N0 / N0-c9", "parent": "North / N0"}]
    declared = ("node,parent\n" + "".join(f"{r['node']},{r['parent'] or ''}\n" for r in rows)).encode()
    at = page(TREE, "tree", tree_records_levels=LEVELS)
    upload_bytes(at, "upload", "people.parquet", PEOPLE)
    upload_bytes(at, "tree_declaration_file", "hierarchy.csv", declared)
    assert not errors(at), errors(at)
    _, table, meta = draw(at, "tree")
    assert set(table["node"]) == {r["node"] for r in rows}  # exactly the declared nodes (the dropped one untold)
    want = join_counts(read_hierarchy(declared, "hierarchy.csv"), records_counts(PEOPLE, LEVELS))  # the CLI's join
    assert len(table) == want.tree.n and meta["unit_of_privacy"] == unit_of_privacy()


def test_tree_records_bad_level_clears_the_release():
    at = page(TREE, "tree", tree_records_levels=["region", "state"], tree_structure_from_data=True)
    upload_bytes(at, "upload", "people.parquet", PEOPLE)
    draw(at, "tree")
    at.multiselect(key="tree_records_levels").set_value(["region", "gappy"]).run()
    ok(at)
    assert_cleared(at, "tree", "no value in level column 'gappy'")


def test_tree_random_bytes_as_records_rejected():
    at = page(TREE, "tree")
    upload_bytes(at, "upload", "people.parquet", RANDOM)
    assert any("was rejected" in e for e in errors(at)), errors(at)
    assert current(at, "tree")[0][0] == "bundled"


# ---- stream ----------------------------------------------------------------------------------------------------
STREAM = "pages/2_Stream.py"


def test_stream_events_count_as_the_cli_and_release_on_the_declared_range():
    at = page(STREAM, "stream", stream_records_time="ts", stream_records_bucket="day")
    upload_bytes(at, "stream_upload_file", "events.parquet", PEOPLE)
    assert not errors(at), errors(at)
    groups = count_records(PEOPLE, ["ts"], bucket=("ts", 86_400), max_bytes=1 << 30)
    key, data = current(at, "stream")
    assert np.array_equal(data.counts[data.counts > 0], groups.counts)
    assert data.counts.size == 9 and data.counts.sum() == N  # the events' own range: first to last day
    assert any("read from the events" in c.value for c in at.caption)  # the simulation says so
    assert plotly_charts(at)  # the simulation's charts
    assert at.button(key="stream_release_button").disabled  # no declared range: nothing can be drawn
    at.date_input(key="stream_records_start").set_value(datetime.date(2024, 2, 28)).run()
    at.date_input(key="stream_records_end").set_value(datetime.date(2024, 3, 12)).run()
    ok(at)
    key, data = current(at, "stream")
    assert data.counts.size == 14 and data.counts.sum() == N and data.counts[0] == 0  # the declared range
    _, table, meta = draw(at, "stream")
    assert len(table) == 14 and meta["time_range"] == {"declared": ["2024-02-28", "2024-03-12T23:59:59"]}
    assert meta["unit_of_privacy"] == unit_of_privacy()
    assert at.session_state["ui_dataset_ids"][("stream", key[:3], "records")].sha256 == records_identity(PEOPLE).sha256


def test_stream_events_bad_time_column_clears_the_release():
    at = page(STREAM, "stream", stream_records_time="ts", stream_records_start=datetime.date(2024, 3, 1),
              stream_records_end=datetime.date(2024, 3, 10))
    upload_bytes(at, "stream_upload_file", "events.parquet", PEOPLE)
    draw(at, "stream")
    at.selectbox(key="stream_records_time").set_value("region").run()
    ok(at)
    assert_cleared(at, "stream", "time column 'region'")


def test_stream_random_bytes_as_records_rejected():
    at = page(STREAM, "stream")
    upload_bytes(at, "stream_upload_file", "events.csv", RANDOM)
    assert any("was rejected" in e and "NUL" in e for e in errors(at)), errors(at)


# ---- marginals -------------------------------------------------------------------------------------------------
MARGINALS = "pages/3_Marginals.py"


def test_marginals_parquet_records_with_a_person_bound_count_as_the_cli():
    at = page(MARGINALS, "marginals", **picked("people.parquet"), marginals_records_person="person",
              marginals_records_k=3)
    upload_bytes(at, "marginals_upload_file", "people.parquet", PEOPLE)
    assert not errors(at), errors(at)
    groups = count_records(PEOPLE, ["region", "state"], person="person", max_contributions=3, max_bytes=1 << 30)
    key, data = current(at, "marginals")
    assert key[-1] == ("records", "person", 3)
    assert metrics(at)["Records N"] == f"{groups.counts.sum():,}" and groups.counts.sum() < N
    cats = [np.asarray(c, dtype=object)[data.codes[:, k]] for k, c in enumerate(data.categories)]
    pairs, got = np.unique(np.char.add(np.char.add(cats[0].astype(str), "|"), cats[1].astype(str)), return_counts=True)
    want = {f"{a}|{b}": c for a, b, c in zip(groups.keys["region"].to_pylist(), groups.keys["state"].to_pylist(),
                                            groups.counts)}
    assert dict(zip(pairs.tolist(), got.tolist())) == want
    assert any(unit_of_privacy("person", 3) in c.value for c in at.caption)
    assert "marginals_sim" in at.session_state  # simulated


def test_marginals_bad_person_choice_clears_the_release():
    at = page(MARGINALS, "marginals", **picked("people.parquet"), marginals_structure_from_data=True)
    upload_bytes(at, "marginals_upload_file", "people.parquet", PEOPLE)
    draw(at, "marginals")
    at.selectbox(key="marginals_records_person").set_value("gappy").run()  # an empty person id: refused
    ok(at)
    shown = errors(at)
    assert any("empty person id" in e and "cleared" in e for e in shown), shown
    assert "marginals_private_release" not in at.session_state
    assert current(at, "marginals")[0][0] == "bundled"  # the simulation shown is the sample's, said so
    assert at.session_state["marginals_sim"][0][0][0][0] == "bundled"
    assert any("still showing" in i.value for i in at.info)


def test_marginals_random_bytes_rejected():
    at = page(MARGINALS, "marginals")
    upload_bytes(at, "marginals_upload_file", "people.parquet", RANDOM)
    assert any("was rejected" in e for e in errors(at)), errors(at)


def picked(name: str) -> dict:
    """The Marginals page's attribute choice for PEOPLE uploaded as ``name``, seeded before the upload (the page
    selects up to 8 columns of a new file, which would simulate a large workload first)."""
    return {"marginals_attrs_for": ("upload", name, hashlib.sha1(PEOPLE).hexdigest()),
            "marginals_attrs": ["region", "state"]}


# ---- graph -----------------------------------------------------------------------------------------------------
GRAPH = "pages/4_Graph.py"


def test_graph_edge_table_counts_as_the_cli():
    at = page(GRAPH, "graph", graph_records_u="u", graph_records_v="v")
    upload_bytes(at, "graph_upload_file", "edges.parquet", PEOPLE)
    assert not errors(at), errors(at)
    groups = count_records(PEOPLE, ["u", "v"], max_bytes=1 << 30)
    us, vs = (np.asarray(groups.keys[c].to_pylist(), dtype=np.int64) for c in ("u", "v"))
    edges = {(min(a, b), max(a, b)) for a, b in zip(us, vs) if a != b}
    key, graph = current(at, "graph")
    labels = np.asarray(graph.labels if graph.labels is not None else range(graph.n_nodes)).astype(np.int64)
    assert {tuple(sorted((int(labels[a]), int(labels[b])))) for a, b in graph.edges.tolist()} == edges
    assert metrics(at)["Edges |E|"] == f"{len(edges):,}"
    assert plotly_charts(at)


def test_graph_same_endpoint_twice_clears_the_release():
    at = page(GRAPH, "graph", graph_records_u="u", graph_records_v="v", graph_structure_from_data=True)
    upload_bytes(at, "graph_upload_file", "edges.parquet", PEOPLE)
    draw(at, "graph")
    at.selectbox(key="graph_records_v").set_value("u").run()
    ok(at)
    assert_cleared(at, "graph", "both 'u'")


def test_graph_random_bytes_as_records_rejected():
    at = page(GRAPH, "graph")
    upload_bytes(at, "graph_upload_file", "edges.csv", RANDOM)
    assert any("was rejected" in e for e in errors(at)), errors(at)


# ---- histogram -------------------------------------------------------------------------------------------------
def test_histogram_parquet_records_binned_from_the_picked_column():
    at = page("pages/6_Histogram.py", "histogram", histogram_column="age")
    upload_bytes(at, "histogram_file", "people.parquet", PEOPLE)
    assert not errors(at), errors(at)
    key, data = current(at, "histogram")
    ages = pq.read_table(io.BytesIO(PEOPLE)).column("age").to_numpy()
    assert np.array_equal(data.x, np.histogram(ages, bins=np.arange(0, 101, 10))[0]) and data.x.sum() == N
    charged = at.session_state["ui_dataset_ids"][("histogram", key[:3], "records")]
    assert charged.sha256 == records_identity(PEOPLE).sha256  # a release is charged to the records file
    at.selectbox(key="histogram_column").set_value("ts").run()  # not numbers: refused, nothing stale shown
    assert any("ts" in e for e in errors(at)), errors(at)
    assert current(at, "histogram")[0][0] == "bundled"


@pytest.mark.parametrize("raw", [b"\x89PNG\r\n\x1a\n" + bytes(64), b"", b"a,b\n"])
def test_read_records_refuses_what_is_not_records(raw):
    from dpviz.errors import InputError
    from dpviz.ui.records import read_records

    with pytest.raises(InputError):
        read_records(raw, "x.csv", max_bytes=1 << 20)


def test_read_records_reads_parquet_and_csv_columns():
    from dpviz.ui.records import read_records

    assert read_records(PEOPLE, "p.parquet", max_bytes=1 << 20).columns[:3] == ("person", "region", "state")
    got = read_records(b"\xef\xbb\xbfts, who\n2024-01-01,a\n", "e.csv", max_bytes=1 << 20)
    assert got.columns == ("ts", "who") and hashlib.sha1(got.raw).hexdigest() == got.digest
