"""Pages release on a declared public structure (issue 17, "public means declared"): AppTest, in process.

Per page (Tree, Marginals, Graph): (a) a bundled sample's release says its structure is the sample's shipped
declaration; (b) an upload with neither a declaration nor the opt-out cannot draw and charges nothing; (c) with
an uploaded declaration the released structure is the declaration's (a declared node / category / vertex the
data never shows is released); (d) the opt-out shows STRUCTURE_FROM_DATA_NOTICE and the table and meta carry it.
Also: a bad declaration names its line/field and clears the drawn release; a release drawn under another
declaration is not shown again; every download on the four pages goes through to_csv_text or meta_json.
"""

import ast
import json

import pytest

from dpviz.core.structure import STRUCTURE_FROM_DATA_NOTICE
from tests.apptest_helpers import ROOT, app_test, metrics, ok, upload_bytes

COUNT = "Releases charged"
TEMPLATE = "describe-structure"
DATA = ROOT / "tests" / "data"

TREE_COUNTS = (DATA / "tree_good.csv").read_bytes()  # root; A: a1 a2; B: b1 b2 b3
TREE_HIERARCHY = b"node,parent\nroot,\nA,root\nB,root\nC,root\na1,A\na2,A\nb1,B\nb2,B\nb3,B\nc1,C\n"
EDGES = b"a b\nb c\nc a\nc d\n"
NODES = b"a\nb\nc\nd\nzed\n"
RECORDS = b"sex,color\nf,red\nm,blue\nf,blue\nm,red\nf,red\n"
DOMAIN = {"attributes": [{"name": "sex", "categories": ["f", "m", "x"]},
                         {"name": "color", "categories": ["red", "blue", "green"]}]}


# ---- the three pages, described once ------------------------------------------------------------------------
PAGES = {
    "tree": dict(page="pages/1_Tree.py", source="tree_source", data_key="upload", data=("t.csv", TREE_COUNTS),
                 declaration=("h.csv", TREE_HIERARCHY), bad=("bad.csv", b"node,parent\nroot,\nA,nowhere\n")),
    "graph": dict(page="pages/4_Graph.py", source="graph_source", data_key="graph_upload_file", data=("e.txt", EDGES),
                  declaration=("n.txt", NODES), bad=("bad.txt", b"a\nb\na\n")),
    "marginals": dict(page="pages/3_Marginals.py", source="marginals_source", data_key="marginals_upload_file",
                      data=("r.csv", RECORDS), declaration=("d.json", json.dumps(DOMAIN).encode()),
                      bad=("bad.json", b'{"attributes": [{"name": "sex"}]}')),
}


def held(at, cap: str):
    """(settings, table, meta) of the drawn release, or None."""
    key = f"{cap}_private_release"
    return at.session_state[key] if key in at.session_state else None


def draw(at, cap: str):
    return ok(at.button(key=f"{cap}_release_button").click().run())


def charged(at) -> int:
    return int(metrics(at)[COUNT].replace(",", ""))


def uploaded(cap: str):
    """The page with the capability's upload loaded (no declaration yet)."""
    spec = PAGES[cap]
    at = ok(app_test(spec["page"]))
    ok(at.radio(key=spec["source"]).set_value("upload").run())
    return upload_bytes(at, spec["data_key"], *spec["data"])


def declare(at, cap: str, which: str = "declaration"):
    name, raw = PAGES[cap][which]
    at.file_uploader(key=f"{cap}_declaration_file").upload(name, raw, "application/octet-stream")
    return ok(at.run())


def opt_out(at, cap: str):
    return ok(at.checkbox(key=f"{cap}_structure_from_data").check().run())


def meta_structure(at, cap: str) -> dict:
    meta = held(at, cap)[2]
    return meta["structure"]


# ---- (a) bundled samples: the shipped declaration -----------------------------------------------------------
@pytest.mark.parametrize("cap", list(PAGES))
def test_a_sample_release_uses_its_shipped_declaration(cap):
    at = ok(app_test(PAGES[cap]["page"]))
    assert any("Public structure: declared (shipped with the sample)" in c.value for c in at.caption)
    assert not at.button(key=f"{cap}_release_button").disabled
    draw(at, cap)
    structure = meta_structure(at, cap)
    assert structure["source"] == "declared" and "sample:" in structure["declaration"]
    assert "structure" not in held(at, cap)[1].columns  # no notice column on a declared release
    assert not any(STRUCTURE_FROM_DATA_NOTICE in w.value for w in at.warning)


# ---- (b) an upload without a declaration cannot draw --------------------------------------------------------
@pytest.mark.parametrize("cap", list(PAGES))
def test_an_upload_without_a_declaration_cannot_draw_and_charges_nothing(cap):
    at = uploaded(cap)
    assert at.button(key=f"{cap}_release_button").disabled
    refusal = [e.value for e in at.info if "Read the structure from the uploaded data" in e.value]
    assert len(refusal) == 1 and TEMPLATE in refusal[0] and f"python -m dpviz {cap} describe-structure" in refusal[0]
    assert charged(at) == 0 and held(at, cap) is None
    opt_out(at, cap)  # a draw under the opt-out, then the box unticked: nothing more can be drawn or shown
    draw(at, cap)
    assert charged(at) == 1 and any("Private release ready" in s.value for s in at.success)
    ok(at.checkbox(key=f"{cap}_structure_from_data").uncheck().run())
    assert at.button(key=f"{cap}_release_button").disabled and charged(at) == 1
    assert not any("Private release ready" in s.value for s in at.success)


# ---- (c) upload + declaration: the released structure is the declaration -----------------------------------
def test_tree_upload_releases_exactly_the_declared_hierarchy():
    at = declare(uploaded("tree"), "tree")
    assert any("Public structure: declared" in c.value and "h.csv" in c.value for c in at.caption)
    draw(at, "tree")
    _, table, meta = held(at, "tree")
    assert list(table["node"]) == ["root", "A", "B", "C", "a1", "a2", "b1", "b2", "b3", "c1"]  # C, c1: no counts
    assert meta["structure"] == {"n": 10, "m": 6, "h": 3, "source": "declared", "declaration": "h.csv"}
    assert charged(at) == 1


def test_tree_upload_drops_undeclared_nodes_without_saying_how_many():
    at = uploaded("tree")
    at.file_uploader(key="tree_declaration_file").upload("h2.csv", b"node,parent\nroot,\nA,root\na1,A\na2,A\n",
                                                        "text/csv")
    draw(ok(at.run()), "tree")
    assert list(held(at, "tree")[1]["node"]) == ["root", "A", "a1", "a2"]  # B and its leaves: not declared
    shown = " ".join(e.value for e in [*at.caption, *at.markdown, *at.info, *at.warning, *at.success])
    assert "dropped" not in shown.lower()


def test_graph_upload_releases_on_the_declared_vertex_set():
    at = declare(uploaded("graph"), "graph")
    draw(at, "graph")
    _, table, meta = held(at, "graph")
    assert meta["n_nodes"] == 5  # "zed" is declared, in no edge
    assert meta["structure"] == {"source": "declared", "declaration": "vertex list n.txt"}
    assert set(table["u"]) | set(table["v"]) <= {"a", "b", "c", "d", "zed"}
    partition = json.loads(at.session_state["graph_release_partition"][1])
    assert partition["structure"]["source"] == "declared"
    assert sorted(partition["order_labels"]) == ["a", "b", "c", "d", "zed"]


def test_marginals_upload_releases_every_declared_category():
    at = declare(uploaded("marginals"), "marginals")
    draw(at, "marginals")
    _, table, meta = held(at, "marginals")
    cells = set(table["cell"])
    assert "sex=x, color=green" in cells and len(cells) == 9  # x and green: declared, held by no record
    assert meta["structure"] == {"source": "declared", "declaration": "d.json"}
    assert meta.get("notice") != STRUCTURE_FROM_DATA_NOTICE and "structure" not in table.columns


# ---- (d) the opt-out says so everywhere ---------------------------------------------------------------------
@pytest.mark.parametrize("cap", list(PAGES))
def test_the_opt_out_shows_the_notice_and_the_release_carries_it(cap):
    at = opt_out(uploaded(cap), cap)
    assert any(STRUCTURE_FROM_DATA_NOTICE in w.value.lower() for w in at.warning)
    assert not at.button(key=f"{cap}_release_button").disabled
    draw(at, cap)
    _, table, meta = held(at, cap)
    assert meta_structure(at, cap) == {"source": "data", "notice": STRUCTURE_FROM_DATA_NOTICE} or \
        meta_structure(at, cap).get("notice") == STRUCTURE_FROM_DATA_NOTICE
    assert "structure" in table.columns and set(table["structure"]) <= {STRUCTURE_FROM_DATA_NOTICE}
    assert len(table) == 0 or set(table["structure"]) == {STRUCTURE_FROM_DATA_NOTICE}  # drf-dp may release no edge
    assert charged(at) == 1


# ---- declarations change the settings; bad ones clear the release ------------------------------------------
@pytest.mark.parametrize("cap", list(PAGES))
def test_a_bad_declaration_names_the_problem_and_clears_the_release(cap):
    at = declare(uploaded(cap), cap)
    draw(at, cap)
    assert held(at, cap) is not None
    at = declare(at, cap, "bad")
    errors = [e.value for e in at.error if e.value.startswith("Public ")]
    assert len(errors) == 1 and PAGES[cap]["bad"][0] in errors[0]
    assert any(w in errors[0] for w in ("line", "attribute 1", "parent")), errors[0]
    assert held(at, cap) is None and at.button(key=f"{cap}_release_button").disabled
    assert not [d for d in at.dataframe if "released" in d.value.columns or "u" in d.value.columns]


def test_a_release_drawn_under_another_declaration_is_not_shown_again():
    at = declare(uploaded("graph"), "graph")
    draw(at, "graph")
    assert any("Private release ready" in s.value for s in at.success)
    at.file_uploader(key="graph_declaration_file").upload("n.txt", b"a\nb\nc\nd\n", "text/plain")  # same name
    ok(at.run())
    assert not any("Private release ready" in s.value for s in at.success)
    assert any("No private release drawn for these settings yet" in c.value for c in at.caption)


# ---- every page download is formula-escaped CSV or JSON ------------------------------------------------------
SAFE = {"to_csv_text", "meta_json"}


def _download_payloads(path):
    """(line, names called in the data= argument) of every download_button call in a page or dpviz/ui."""
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None)) == \
                "download_button":
            data = next((k.value for k in node.keywords if k.arg == "data"), None)
            names = {getattr(n.func, "attr", getattr(n.func, "id", None)) for n in ast.walk(data)
                     if isinstance(n, ast.Call)} if data is not None else set()
            yield node.lineno, data, names


@pytest.mark.parametrize("name", ["pages/1_Tree.py", "pages/2_Stream.py", "pages/3_Marginals.py",
                                  "pages/4_Graph.py", "dpviz/ui/release_panel.py"])
def test_every_download_goes_through_the_escaping_writer(name):
    found = list(_download_payloads(ROOT / name))
    assert found
    for line, data, names in found:
        if isinstance(data, ast.Subscript):  # held text built earlier (the graph's released partition)
            continue
        assert names & SAFE and "to_csv" not in names and "dumps" not in names, f"{name}:{line} {names}"
