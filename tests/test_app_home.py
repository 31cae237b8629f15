"""Home page (app.py) and its navigation, the thumbnails (dpviz.viz.thumbnails), the server config
(.streamlit/config.toml): AppTest layer, unit tests and one browser test."""

import json
import math
import re
import subprocess
import sys
import tomllib

import numpy as np
import pytest
from playwright.sync_api import expect

from dpviz.core.registry import CAPABILITIES, load_sample
from dpviz.errors import InputError
from dpviz import ui
from dpviz.viz import marginals as vm
from dpviz.viz import thumbnails as T
from tests.apptest_helpers import plotly_charts, ROOT, app_test, decode_plotly_array, ok, page_links
from tests.e2e_helpers import heading, open_page, sidebar_link, wait_idle, wait_plotly

TITLE = "dpviz — differentially private data release"
OPTIONAL_PAGES = {"pages/5_Planner.py": "Planner: accuracy first, the ε it needs",
                  "pages/7_Ledger.py": "Ledger: what has been spent"}  # linked only once the file exists
CONFIG = ROOT / ".streamlit" / "config.toml"
SLOW = 60_000  # ms: a page's first run imports its libraries (the machine may be busy)


def page_files() -> list[str]:
    return [f"pages/{f.name}" for f in sorted((ROOT / "pages").glob("*.py"))]


def url_path(rel: str) -> str:
    """Streamlit's default URL path of a page file: "pages/1_Tree.py" -> "Tree"."""
    return re.sub(r"^[0-9]*[_ -]*", "", rel.removeprefix("pages/").removesuffix(".py"))


@pytest.fixture(scope="module")
def home():
    return ok(app_test())


def thumbnails(at) -> dict[str, dict]:
    return {c.proto.id.split("thumb_", 1)[1].split("-", 1)[0]: json.loads(c.proto.spec)
            for c in plotly_charts(at) if "thumb_" in c.proto.id}


# ---- home page (AppTest) ---------------------------------------------------------------------------
def test_home_lists_the_data_shapes_with_links(home):
    assert home.title[0].value == TITLE
    assert [c.name for c in CAPABILITIES][:4] == ["tree", "stream", "marginals", "graph"]
    links = dict(page_links(home))
    text = " ".join(m.value for m in home.markdown)
    for cap in CAPABILITIES:
        page = ui.page_of(cap.name)
        if page is not None and (ROOT / page.path).is_file():
            assert links.get(cap.title) == url_path(page.path), f"{page.path} exists but is not linked"
        else:  # listed by name, with its CLI, never linked
            assert cap.title not in links and f"**{cap.title}** (no page yet" in text
        assert any(c.value == cap.description for c in home.caption)
        assert any(cap.unit_of_privacy[1:] in m.value for m in home.markdown)
    assert [e.label for e in home.expander] == ["Unit of privacy"] * len(CAPABILITIES)


def test_home_shows_a_thumbnail_of_each_shape(home):
    thumbs = thumbnails(home)
    assert sorted(thumbs) == sorted(c.name for c in CAPABILITIES)
    for name, fig in thumbs.items():
        assert fig["layout"]["height"] == T.THUMB_HEIGHT and fig["data"], name
    charts = {c.proto.id: json.loads(c.proto.config) for c in plotly_charts(home)}
    assert all(cfg.get("staticPlot") is True for cfg in charts.values())
    for cap in CAPABILITIES:
        assert any(c.value.startswith(f"`sample:{cap.samples[0].name}`") for c in home.caption)


def test_home_explains_the_modes_and_where_to_start(home):
    text = " ".join(m.value for m in home.markdown)
    assert "Simulation — not a private release" in text and "**Private release.**" in text
    assert "Coming next" not in text and not any("Coming next" in h.value for h in home.subheader)
    assert [h.value.split(": ", 1)[-1] for h in home.subheader] == ["Analyst", "Teacher", "Planner"]
    shapes = {4: "Four", 5: "Five", 6: "Six"}[len(CAPABILITIES)] + " data shapes"
    assert [h.value for h in home.header] == [shapes, "Simulate or release", "Where to start"]
    assert "python -m dpviz tree release --help" in text


def test_planner_and_ledger_are_linked_only_when_their_page_exists(home):
    links = dict(page_links(home))
    for rel, label in OPTIONAL_PAGES.items():
        if (ROOT / rel).is_file():
            assert links.get(label) == url_path(rel)
        else:
            assert label not in links


def test_navigation_registers_every_page_file(home):
    # switch_page raises ValueError for a file st.navigation did not register
    for rel in page_files():
        home.switch_page(rel)
    with pytest.raises(ValueError):
        home.switch_page("app.py")  # the home is a function page, not the file


# ---- thumbnails (unit) -----------------------------------------------------------------------------
def trace(fig, i: int = 0) -> dict:
    return {k: decode_plotly_array(v) for k, v in fig.to_plotly_json()["data"][i].items()}


def test_thumbnails_draw_the_samples():
    td = load_sample("tree", "sample:county")
    t = trace(T.thumbnail("tree", td))
    assert t["type"] == "icicle" and t["values"][0] == pytest.approx(td.x.sum())  # the root: everyone
    assert len(t["ids"]) == int(np.sum(td.tree.depth <= 3)) == 1 + 4 + 9  # US, regions, divisions
    sd = load_sample("stream", "sample:flights")
    s = trace(T.thumbnail("stream", sd))
    np.testing.assert_array_equal(s["y"], sd.counts)  # 181 points: nothing dropped
    ds = load_sample("marginals", "sample:titanic")
    m = trace(T.thumbnail("marginals", ds))
    assert m["z"].shape == (3, 2) and m["z"].sum() == ds.N  # class × survived, every passenger once
    g = load_sample("graph", "sample:karate")
    a = trace(T.thumbnail("graph", g))["z"]
    assert a.shape == (34, 34) and a.sum() == 2 * 78 and np.array_equal(a, a.T)


def test_shrink_strips_labels():
    fig = T.thumbnail("marginals", load_sample("marginals", "sample:titanic"))
    lay = fig.to_plotly_json()["layout"]
    assert lay["height"] == T.THUMB_HEIGHT and lay["showlegend"] is False
    assert lay["xaxis"]["showticklabels"] is False and lay["yaxis"]["showticklabels"] is False
    assert not lay["xaxis"].get("title", {}).get("text") and not lay["yaxis"].get("title", {}).get("text")
    assert not lay.get("title", {}).get("text")
    h = fig.data[0]
    assert h.showscale is False and h.text is None and h.texttemplate is None


def test_thumbnail_bad_input():
    with pytest.raises(InputError, match="no thumbnail for capability 'nope'"):
        T.thumbnail("nope", None)
    ds = load_sample("marginals", "sample:titanic")
    with pytest.raises(InputError, match="not two distinct attributes"):
        vm.thumbnail(ds, (1, 1))


# ---- server config ---------------------------------------------------------------------------------
def test_server_config_file():
    cfg = tomllib.loads(CONFIG.read_text(encoding="utf-8"))
    assert cfg["client"]["toolbarMode"] == "viewer"  # no Deploy button
    assert cfg["client"]["showErrorDetails"] == "none"  # no traceback, path or message in the browser
    assert cfg["browser"]["gatherUsageStats"] is False
    assert cfg["runner"]["postScriptGC"] is False  # no gc.collect(2) holding the GIL after every rerun (issue 19)
    from dpviz.graph.io import MAX_BYTES as GRAPH_BYTES
    from dpviz.marginals.io import MAX_BYTES as MARGINALS_BYTES

    biggest = max(GRAPH_BYTES, MARGINALS_BYTES)  # 100,000,000 bytes
    assert cfg["server"]["maxUploadSize"] == math.ceil(biggest / 10**6)  # the largest reader cap, in MB
    assert cfg["server"]["maxUploadSize"] * 2**20 >= biggest  # Streamlit counts MiB: never below the cap


def test_streamlit_reads_the_config():
    out = subprocess.run([sys.executable, "-m", "streamlit", "config", "show"], cwd=ROOT, capture_output=True,
                         text=True, timeout=60, check=True).stdout
    for line in ('toolbarMode = "viewer"', 'showErrorDetails = "none"', "maxUploadSize = 100",
                 "gatherUsageStats = false"):
        assert re.search(rf"^{re.escape(line)}$", out, re.MULTILINE), line
    hidden = subprocess.run([sys.executable, "-c", "import streamlit.config as c; c.get_config_options("
                             "force_reparse=True); print(c.get_option('runner.postScriptGC'))"],
                            cwd=ROOT, capture_output=True, text=True, timeout=60, check=True).stdout
    assert hidden.strip() == "False"  # a hidden option: not in `config show`, read from the file all the same


# ---- real browser ----------------------------------------------------------------------------------
@pytest.mark.e2e
def test_home_in_browser(page, streamlit_server):
    open_page(page, streamlit_server)
    expect(heading(page, TITLE)).to_be_visible()
    expect(sidebar_link(page, "Home")).to_be_visible()  # not "app"
    expect(sidebar_link(page, "app")).to_have_count(0)
    expect(page.locator("[data-testid=stToolbar]")).to_be_attached()
    expect(page.locator("[data-testid=stAppDeployButton]")).to_have_count(0)
    expect(page.get_by_role("button", name="Deploy")).to_have_count(0)
    wait_plotly(page, len(CAPABILITIES))  # the thumbnails
    main = page.locator("[data-testid=stMain]")
    for cap in CAPABILITIES:
        info = ui.page_of(cap.name)
        if info is None or not (ROOT / info.path).is_file():
            continue
        main.get_by_role("link", name=cap.title).click()
        expect(heading(page, cap.title)).to_be_visible(timeout=SLOW)
        expect(page).to_have_url(f"{streamlit_server}/{url_path(info.path)}", timeout=SLOW)
        sidebar_link(page, "Home").click()  # the page's own run need not finish (its pages have their own tests)
        expect(heading(page, TITLE)).to_be_visible(timeout=SLOW)
        expect(page).to_have_url(f"{streamlit_server}/", timeout=SLOW)
        wait_idle(page, SLOW)


# ---- readable (issue 19) -------------------------------------------------------------------------------
def _first_element_type(at) -> str:
    from tests.apptest_helpers import walk

    return next(e.type for e in walk(at.main) if getattr(e, "type", None) not in (None, "block"))


def test_home_planner_and_ledger_open_with_their_title(home):
    """Nothing (e.g. a bare string Streamlit's magic prints) comes before a page's title."""
    assert _first_element_type(home) == "title"
    for rel in ("pages/5_Planner.py", "pages/7_Ledger.py"):
        at = ok(app_test(rel, timeout=120))
        assert _first_element_type(at) == "title", rel


def test_thumbnail_labels_too_small_to_read_are_hidden():
    fig = T.thumbnail("tree", load_sample("tree", "sample:county"))
    lay = fig.to_plotly_json()["layout"]
    assert lay["uniformtext"] == {"minsize": T.THUMB_MIN_FONT, "mode": "hide"} and T.THUMB_MIN_FONT >= 9


# ---- the UI layer (issue 18): page metadata with the pages, thumbnails through the registry's hook --------------
def test_every_page_file_has_its_title_and_icon_in_the_page_table():
    """Page titles, icons and paths live in dpviz.ui.pages, not in the registry: every page file is listed
    (it gets its icon in the navigation), names are unique and no capability carries page metadata."""
    listed = {p.path for p in ui.PAGES}
    assert set(page_files()) <= listed, set(page_files()) - listed
    assert len({p.name for p in ui.PAGES}) == len(ui.PAGES) == len(listed)
    assert all(p.icon.startswith(":material/") and p.title for p in ui.PAGES)
    assert ui.page_info("ledger").title == "Privacy ledger" and ui.page_of("nope") is None
    with pytest.raises(InputError, match="no page named 'nope'"):
        ui.page_info("nope")
    for cap in CAPABILITIES:
        assert not hasattr(cap, "page") and not hasattr(cap, "icon")


def test_thumbnails_dispatch_through_the_registry_hook():
    """dpviz.viz.thumbnails names no capability: each capability's thumbnail is its registry hook, by
    convention ``dpviz.viz.<cap>:thumbnail``."""
    import importlib

    source = (ROOT / "dpviz" / "viz" / "thumbnails.py").read_text(encoding="utf-8")
    code = "\n".join(line for line in source.splitlines() if not line.lstrip().startswith(("#", '"', "*")))
    for cap in CAPABILITIES:
        assert f'"{cap.name}"' not in code and f"viz.{cap.name}" not in code, cap.name
        assert cap.hook("thumbnail") is importlib.import_module(f"dpviz.viz.{cap.name}").thumbnail
