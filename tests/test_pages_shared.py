"""What every capability page does the same way (AppTest): a bad upload (first, or after a good one with a drawn
release) leaves nothing stale; every data page reads Data -> Privacy -> Strategy and estimator -> Simulation ->
Private release with the shared widgets in the same sections."""

import re

import pytest

from tests.apptest_helpers import ROOT, app_test, metrics, ok, upload_bytes, walk

DATA = ROOT / "tests" / "data"

# page, source radio, uploader key, bad file, words of its error, metric that shows the kept data
CASES = [
    ("pages/1_Tree.py", "tree_source", "upload", "tree_bad_cycle.csv", "cycle", ("Nodes n", "3,207")),
    ("pages/2_Stream.py", "stream_source", "stream_upload_file", "stream_bad_negative.csv", "negative",
     ("Horizon N", "181")),
]


@pytest.mark.parametrize("page_path, radio, uploader, bad, words, kept", CASES, ids=["tree", "stream"])
def test_bad_first_upload_shows_error_and_keeps_bundled_data(page_path, radio, uploader, bad, words, kept):
    at = ok(app_test(page_path))
    ok(at.radio(key=radio).set_value("upload").run())
    upload_bytes(at, uploader, bad, (DATA / bad).read_bytes())
    assert words in at.error[0].value
    assert metrics(at)[kept[0]] == kept[1]
    ok(at.run())  # a rerun keeps the message and the data: the upload is not silently dropped
    assert words in at.error[0].value and metrics(at)[kept[0]] == kept[1]


# ---- every page's Private release is charged (issue 17) --------------------------------------------
# page, capability, the bundled sample it opens on, the mechanism the page records, charge kind
RELEASE_PAGES = [
    ("pages/1_Tree.py", "tree", "sample:county", "pure"),
    ("pages/2_Stream.py", "stream", "sample:flights", "pure"),
    ("pages/3_Marginals.py", "marginals", "sample:titanic", "zcdp"),
    ("pages/4_Graph.py", "graph", "sample:karate", "pure"),
]


@pytest.mark.parametrize("page_path, cap, sample, accounting", RELEASE_PAGES, ids=[c[1] for c in RELEASE_PAGES])
def test_every_page_draw_is_charged_to_the_cli_identity_of_its_data(page_path, cap, sample, accounting):
    from dpviz.core.registry import load_sample
    from dpviz.ledger.identity import identify
    from dpviz import ui
    from dpviz.ledger.store import open_ledger

    at = ok(app_test(page_path))
    assert not at.text_input and not at.text_area  # data comes from bundles or uploaded bytes, never a path
    assert any("charged to the privacy ledger before it is shown" in c.value for c in at.caption)
    assert not any("not charged" in c.value for c in at.caption)
    ok(at.button(key=f"{cap}_release_button").click().run())
    assert metrics(at)["Releases charged"] == "1"
    with open_ledger(at.session_state[ui.SESSION_LEDGER_KEY].path, readonly=True) as led:
        (row,) = led.releases()
        (dataset,) = led.datasets()
    cli = identify(cap, sample, None if cap == "marginals" else load_sample(cap, sample))
    assert (row.capability, row.accounting, row.status, row.source) == (cap, accounting, "written", sample)
    assert dataset.id == cli.sha256 and dataset.name == sample
    ok(at.run())  # shown again: not charged again
    assert metrics(at)["Releases charged"] == "1"


# ---- a rejected upload leaves nothing stale (issue 19) ------------------------------------------------
# page, capability, source radio, uploader key, a good file, a bad file, words of its error, needs the opt-out
STALE_CASES = [
    ("pages/1_Tree.py", "tree", "tree_source", "upload", ("good.csv", (DATA / "tree_good.csv").read_bytes()),
     ("cycle.csv", (DATA / "tree_bad_cycle.csv").read_bytes()), "cycle", True),
    ("pages/2_Stream.py", "stream", "stream_source", "stream_upload_file",
     ("good.csv", (DATA / "stream_good.csv").read_bytes()),
     ("negative.csv", (DATA / "stream_bad_negative.csv").read_bytes()), "negative", False),
    ("pages/3_Marginals.py", "marginals", "marginals_source", "marginals_upload_file",
     ("good.csv", (DATA / "marginals_good.csv").read_bytes()),
     ("ragged.csv", (DATA / "marginals_bad_ragged.csv").read_bytes()), "line 4", True),
    ("pages/4_Graph.py", "graph", "graph_source", "graph_upload_file", ("good.txt", b"a b\nb c\nc a\nc d\n"),
     ("bad.txt", b"a b\nc\n"), "line 2", True),
]


def release_shown(at, cap: str) -> dict:
    """What of a drawn release the page shows: its slot, the success line, a table after that line, the
    release's download buttons."""
    elements = list(walk(at._tree))
    ready = [i for i, e in enumerate(elements) if type(e).__name__ == "Success" and "Private release ready" in e.value]
    downloads = [e.proto.label for e in at.get("download_button")]
    return {"held": f"{cap}_private_release" in at.session_state, "ready": bool(ready),
            "table": bool(ready) and any(type(e).__name__ == "Dataframe" for e in elements[ready[0]:]),
            "downloads": [d for d in downloads if d.startswith(("Download the release", "Download its description"))]}


@pytest.mark.parametrize("page_path, cap, radio, uploader, good, bad, words, opt_out", STALE_CASES,
                         ids=[c[1] for c in STALE_CASES])
def test_a_rejected_upload_clears_the_results_release_and_downloads(page_path, cap, radio, uploader, good, bad, words,
                                                                      opt_out):
    at = ok(app_test(page_path))
    ok(at.radio(key=radio).set_value("upload").run())
    upload_bytes(at, uploader, *good)
    assert not at.error, [e.value for e in at.error]
    if opt_out:  # an upload's release needs a declared structure: opt out (read from the data)
        ok(at.checkbox(key=f"{cap}_structure_from_data").check().run())
    ok(at.button(key=f"{cap}_release_button").click().run())
    shown = release_shown(at, cap)
    assert shown["held"] and shown["ready"] and shown["table"] and len(shown["downloads"]) >= 2, shown
    assert at.session_state[f"{cap}_upload"][0][1] == good[0]

    upload_bytes(at, uploader, *bad)
    errors = [e.value for e in at.error if bad[0] in e.value]
    assert len(errors) == 1 and words in errors[0] and "cleared" in errors[0], [e.value for e in at.error]
    gone = release_shown(at, cap)
    assert gone == {"held": False, "ready": False, "table": False, "downloads": []}, gone
    assert f"{cap}_upload" not in at.session_state  # the earlier good file is no longer the page's data
    assert not any(good[0] in c.value for c in [*at.caption, *at.markdown]), "the earlier file is still named"
    ok(at.run())  # a rerun: still nothing of the earlier file or its release
    assert release_shown(at, cap) == gone and any(bad[0] in e.value for e in at.error)


# ---- one skeleton: the same widgets in the same sections on every data page (issue 19) -------------------
SKELETON_PAGES = [("pages/1_Tree.py", "tree"), ("pages/2_Stream.py", "stream"), ("pages/3_Marginals.py", "marginals"),
                  ("pages/4_Graph.py", "graph")]
WIDGET_TYPES = {"Slider", "SelectSlider", "Radio", "Selectbox", "NumberInput", "Button", "Checkbox", "Multiselect",
                "Toggle", "TextInput"}


def by_section(at) -> tuple[list[str], list[tuple[str, str, str]]]:
    """The page's skeleton sections in the order shown, and every widget (and download button) as
    (section, kind, label); a widget before the first section is in section ""."""
    from dpviz.core.registry import PAGE_SKELETON

    sections, widgets, current = [], [], ""
    for e in walk(at._tree):
        kind = type(e).__name__
        if kind == "Subheader":
            name = str(e.value).split(": ", 1)[-1] if str(e.value).startswith(":material/") else str(e.value)
            if name in PAGE_SKELETON:
                sections.append(name)
                current = name
        elif kind in WIDGET_TYPES:
            widgets.append((current, kind, e.label))
        elif getattr(e, "type", None) == "download_button":
            widgets.append((current, "DownloadButton", e.proto.label))
    return sections, widgets


def skeleton_of(page_path: str, cap: str):
    at = ok(app_test(page_path))
    ok(at.button(key=f"{cap}_release_button").click().run())  # a drawn release shows its downloads
    return by_section(at)


@pytest.fixture(scope="module")
def skeletons():
    return {cap: skeleton_of(page, cap) for page, cap in SKELETON_PAGES}


@pytest.mark.parametrize("cap", [c for _, c in SKELETON_PAGES])
def test_every_data_page_reads_data_privacy_strategy_simulation_release(skeletons, cap):
    from dpviz.core.registry import PAGE_SKELETON

    sections, widgets = skeletons[cap]
    assert tuple(sections) == PAGE_SKELETON, sections
    where = {}
    for section, kind, label in widgets:
        where.setdefault((kind, label), set()).add(section)
    assert not [w for w in widgets if w[0] == ""], "widgets above the Data section"

    def section_of(kind: str, pattern: str) -> set[str]:
        found = [s for (k, label), ss in where.items() if k == kind and re.search(pattern, label) for s in ss]
        assert found, f"{cap}: no {kind} matching {pattern!r}"
        return set(found)

    assert section_of("Radio", r"^Data source$") == {"Data"}
    budget = [(s, label) for s, k, label in widgets if k in ("Slider", "SelectSlider") and "ε" in label]
    assert budget and budget[0][0] == "Privacy", budget  # the page's ε comes first, in Privacy
    budget_params = {s for s, k, label in widgets if re.search(r"(^|\W)[δρ](\W|$)", label)
                     and not label.startswith("Session budget")}  # the release panel's optional session budget
    assert budget_params <= {"Privacy"}, budget_params
    assert section_of("NumberInput", r"^Noise seed \(simulation\)$") == {"Simulation"}
    assert section_of("Button", r"^New noise draw$") == {"Simulation"}
    assert section_of("Button", r"^Draw a private release$") == {"Private release"}
    assert section_of("DownloadButton", r"^Download the release \(CSV\)$") == {"Private release"}
    assert section_of("DownloadButton", r"^Download its description \(JSON\)$") == {"Private release"}


def test_a_widget_named_alike_on_two_pages_sits_in_the_same_section(skeletons):
    seen: dict[tuple[str, str], dict[str, set[str]]] = {}
    for cap, (_, widgets) in skeletons.items():
        for section, kind, label in widgets:
            seen.setdefault((kind, label), {}).setdefault(section, set()).add(cap)
    split = {f"{kind} “{label}”": {s: sorted(caps) for s, caps in places.items()}
             for (kind, label), places in seen.items() if len(places) > 1}
    assert not split, split


# ---- one Data section for every capability page (issue 18) ---------------------------------------------------
def _calls(path, name: str) -> list:
    import ast

    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "attr", None) == name]


def test_every_capability_page_draws_its_data_section_with_the_one_ui_function():
    """No page repeats the source block (radio, sample picker, uploader, fallback): each capability page makes one
    ``ui.data_source`` call and none builds its own "Data source" radio or parses its data upload itself."""
    from dpviz import ui
    from dpviz.core.registry import CAPABILITIES

    pages = [(cap, ui.page_of(cap.name)) for cap in CAPABILITIES]
    checked = [cap.name for cap, page in pages if page is not None and (ROOT / page.path).is_file()]
    assert {"tree", "stream", "marginals", "graph"} <= set(checked)
    for cap, page in pages:
        if cap.name not in checked:
            continue
        path = ROOT / page.path
        assert len(_calls(path, "data_source")) == 1, page.path
        radios = [c for c in _calls(path, "radio") if c.args and getattr(c.args[0], "value", None) == "Data source"]
        assert not radios, f"{page.path} builds its own source radio"
        own = [c for c in _calls(path, "handle_upload") if len(c.args) > 1 and getattr(c.args[1], "value", None)
               == cap.name]
        assert not own, f"{page.path} parses its data upload itself"


def test_data_source_keeps_the_page_source_and_names_it_in_the_fallback():
    """The shared block keeps ``{cap}_last = (source key, data)``; with no usable upload the page keeps showing
    it, says so, and a bundled key names the sample without its prefix (the ledger's label adds it)."""
    at = ok(app_test("pages/4_Graph.py"))
    key, graph = at.session_state["graph_last"]
    assert key == ("bundled", "karate") and graph.n_nodes == 34
    ok(at.selectbox(key="graph_sample").set_value("netscience").run())
    assert at.session_state["graph_last"][0] == ("bundled", "netscience")
    ok(at.radio(key="graph_source").set_value("upload").run())  # nothing uploaded yet: the last source stays
    assert at.session_state["graph_last"][0] == ("bundled", "netscience")
    assert any("still showing netscience" in i.value for i in at.info)
