"""Browser (Playwright + Debian Chromium at 1280 px): every page as a person sees it (issue 19).

Each page, opened fresh with its bundled defaults, must show no exception box, nothing above its title (the
first h1 of the main block comes first), and no "None", "nan", "NaN" or "Infinity" as a word in the main
block's visible text (Plotly's SVG text included; collapsed expanders are not visible, so not read) nor in a
shown table cell (st.dataframe draws on a canvas: its accessible grid holds the cells' text). Also:
the measuring helpers of bench/browser_latency.py time a real ε move (the probe sees the rerun and the
repaint). (A fresh server's first visit at a page URL: tests/test_e2e_charges.py, on its own server.)
"""

import re
import sys

import pytest
from playwright.sync_api import Page, expect

from tests.conftest import ROOT
from tests.e2e_helpers import CHART, install_probe, mark, open_page, settled, timed_goto, wait_idle

pytestmark = pytest.mark.e2e

PAGES = ["", *(re.sub(r"^[0-9]*[_ -]*", "", f.stem) for f in sorted((ROOT / "pages").glob("*.py")))]
"""Home, then every page file by its URL path (pages/1_Tree.py -> "Tree"): a new page is checked too."""
FORBIDDEN = re.compile(r"\b(None|nan|NaN|Infinity)\b")

# The visible elements of the main block that come before its first h1 (their text, or their kind).
ABOVE_TITLE_JS = """() => {
  const main = document.querySelector('[data-testid=stMainBlockContainer]');
  const h1 = main && main.querySelector('h1');
  if (!h1) return null;
  const out = [];
  for (const el of main.querySelectorAll('[data-testid=stElementContainer]')) {
    if (el.contains(h1) || !(el.compareDocumentPosition(h1) & Node.DOCUMENT_POSITION_FOLLOWING)) continue;
    if (el.querySelector('[data-testid=stElementContainer]')) continue;  // a layout block: its leaves count
    const r = el.getBoundingClientRect(), text = el.innerText.trim();
    if (r.height > 0 && r.width > 0 && (text || el.querySelector('img, svg, canvas')))
      out.push(text.slice(0, 120) || el.querySelector('[data-testid]')?.getAttribute('data-testid') || 'element');
  }
  return out;
}"""


def visible_main_text(page: Page) -> str:
    return page.locator("[data-testid=stMain]").inner_text()


def visible_table_cells(page: Page) -> list[str]:
    """The cells of every shown st.dataframe: the grid is drawn on a canvas, its accessible table holds the
    text of the cells on screen (header cells included)."""
    return page.evaluate("""() => Array.from(document.querySelectorAll(
        '[data-testid=stMain] [data-testid=stDataFrame] [role=gridcell], '
        + '[data-testid=stMain] [data-testid=stDataFrame] [role=columnheader]'))
      .filter(c => c.closest('[data-testid=stDataFrame]').getClientRects().length)
      .map(c => c.textContent.trim())""")


def settle_charts(page: Page) -> None:
    """Every visible Plotly chart has drawn (plotly loads lazily)."""
    charts = page.locator(CHART)
    for i in range(charts.count()):
        if charts.nth(i).is_visible():
            expect(charts.nth(i).locator(".main-svg").first).to_be_visible(timeout=60_000)


@pytest.mark.parametrize("path", PAGES, ids=[p or "Home" for p in PAGES])
def test_every_page_reads_cleanly_at_1280px(page: Page, streamlit_server, path):
    assert page.viewport_size["width"] == 1280
    open_page(page, streamlit_server, path, timeout=120_000)
    settle_charts(page)
    wait_idle(page, 120_000)
    problems = []
    if n := page.locator("[data-testid=stException]").count():
        problems.append(f"{n} exception box(es): "
                        + page.locator("[data-testid=stException]").first.inner_text()[:300])
    above = page.evaluate(ABOVE_TITLE_JS)
    if above is None:
        problems.append("no title (h1) in the main block")
    elif above:
        problems.append(f"{len(above)} element(s) above the title: {above}")
    text = visible_main_text(page)
    for m in FORBIDDEN.finditer(text):
        problems.append(f"visible {m.group(0)!r}: …{text[max(0, m.start() - 80):m.end() + 40]!r}…")
    bad_cells = sorted({c for c in visible_table_cells(page) if FORBIDDEN.search(c)})
    if bad_cells:
        problems.append(f"table cells {bad_cells}")
    assert not problems, f"/{path}:\n  " + "\n  ".join(problems)


# [tagged before?, the drawn traces' data] of every chart (dpviz.ui.charts), tagging them when asked.
CHARTS_DATA_JS = """(tag) => Array.from(document.querySelectorAll('.dpviz-plot')).map(d => {
  const was = d.dataset.e2eTag === '1';
  if (tag) d.dataset.e2eTag = '1';
  return [was, JSON.stringify((d.data || []).map(t => [t.x, t.y, t.z]))];
})"""


def test_the_browser_bench_probe_times_an_eps_move(page: Page, streamlit_server):
    sys.path.insert(0, str(ROOT / "bench"))
    import browser_latency as bl

    install_probe(page)
    load = timed_goto(page, f"{streamlit_server}/Stream", 120_000)
    assert 0 < load < 120
    found = bl.widgets(page)
    eps = next(w for w in found if w.kind == "stSlider" and bl.EPS_LABEL.search(w.label))
    thumb = page.locator("[data-testid=stMain] [data-testid=stSlider]").filter(
        has_text=eps.label).get_by_role("slider").first
    before = thumb.input_value()
    # every chart is tagged and its drawn data kept: an ε move must update the same Plotly instances in place
    figures = page.evaluate(CHARTS_DATA_JS, True)
    assert len(figures) >= 3
    assert bl.act(page, eps) in ("ArrowRight", "ArrowLeft")
    seconds = settled(page, 120_000)
    assert 0 < seconds < 120
    assert thumb.input_value() != before  # the move happened, and the probe saw its rerun
    after = page.evaluate(CHARTS_DATA_JS, False)
    assert [tagged for tagged, _ in after] == [True] * len(figures)  # same nodes: Plotly.react, no remount
    assert [d for _, d in after] != [d for _, d in figures]  # ... and they show the new ε's figures
    assert page.evaluate("() => window.__dpv.ran") is True
    assert page.evaluate("() => window.__dpv.input") is True  # the clock started at the key press itself
    wait_idle(page)
    mark(page)  # nothing happens after a mark: the probe waits for a rerun and does not report a stale time
    with pytest.raises(Exception, match="Timeout"):
        settled(page, 3_000)
