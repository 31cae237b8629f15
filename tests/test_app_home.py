"""Home page (app.py): AppTest layer + one browser test."""

import pytest
from playwright.sync_api import expect

from dpviz.core.registry import CAPABILITIES
from tests.apptest_helpers import ROOT, app_test, page_links
from tests.e2e_helpers import heading, open_page

TITLE = "dpviz — differentially private data release"
# page file -> link label: the registry's capabilities; planned ones are listed, never linked
CAPABILITY_PAGES = {c.page: c.title for c in CAPABILITIES if c.page is not None}
PLANNED_LABELS = ("Graph", "Budget planner")


def test_home_renders_with_links_for_existing_pages():
    at = app_test()
    assert not at.exception, at.exception
    assert at.title[0].value == TITLE
    labels = {label for label, _ in page_links(at)}
    coming = " ".join(m.value for m in at.markdown)
    for path, label in CAPABILITY_PAGES.items():
        assert (ROOT / path).is_file(), f"registry names {path}, which does not exist"
        assert label in labels, f"{path} exists but is not linked"
    for label in PLANNED_LABELS:
        assert label not in labels, f"{label} is planned but linked"
        assert label in coming, f"{label} not listed as coming next"
    text = " ".join(m.value for m in at.markdown)
    assert "Simulation — not a private release" in text and "Private release" in text


@pytest.mark.e2e
def test_home_in_browser(page, streamlit_server):
    open_page(page, streamlit_server)
    expect(heading(page, TITLE)).to_be_visible()
    expect(page.locator("[data-testid=stException]")).to_have_count(0)
    if (ROOT / "pages/1_Tree.py").is_file():
        expect(page.get_by_role("link", name="Tree release")).to_be_visible()
