"""Browser (Playwright + Debian Chromium): every click on "Draw a private release" is charged (issue 17).

Three clicks on the Stream page show spent ε = 3 on the page; a download charges nothing; a session budget
typed on the page refuses the next draw with what is left. A server started the way ``make run LEDGER=PATH``
starts it (``streamlit run app.py -- --ledger PATH``) charges that file, and its first visitor, who opens a
page URL, gets the app's navigation.
"""

import os
import re
import socket
import subprocess
import sys
import time
import urllib.request

import pytest
from playwright.sync_api import Page, expect

from dpviz.ledger.store import open_ledger
from tests.conftest import ROOT
from tests.e2e_helpers import metric_value, open_page, sidebar_link, wait_idle, wait_plotly

pytestmark = pytest.mark.e2e

SPENT, COUNT = "Spent ε on this dataset", "Releases charged"


def click_draw(page: Page, n_after: int) -> None:
    """One click on the panel's button; wait until the page shows ``n_after`` charged releases."""
    button = page.get_by_role("button", name="Draw a private release")
    button.scroll_into_view_if_needed()
    button.click()
    expect(metric_value(page, COUNT)).to_have_text(str(n_after), timeout=30_000)
    wait_idle(page)


def test_three_clicks_show_three_epsilon_spent_and_a_budget_refuses(page: Page, streamlit_server):
    open_page(page, streamlit_server, "Stream")
    wait_plotly(page, 3)
    expect(metric_value(page, SPENT)).to_have_text("0")
    expect(page.get_by_text(re.compile("charged to the privacy ledger before it is shown"))).to_be_visible()
    for n in (1, 2, 3):
        click_draw(page, n)
        expect(page.get_by_text(re.compile(r"^Private release ready: 181 rows"))).to_be_visible()
    expect(metric_value(page, SPENT)).to_have_text("3")
    expect(metric_value(page, "Remaining ε")).to_have_text("no budget")
    with page.expect_download() as info:  # a download shows the release again: no charge
        page.get_by_role("button", name="Download the release (CSV)").click()
    assert info.value.suggested_filename.endswith(".csv")
    wait_idle(page)
    expect(metric_value(page, SPENT)).to_have_text("3")
    # a session budget of 3.5: 0.5 is left, so the next draw at ε = 1 is refused with what is left
    budget = page.get_by_role("spinbutton", name="Session budget ε (optional)")
    budget.fill("3.5")
    budget.press("Enter")
    wait_idle(page)
    page.get_by_role("button", name="Set the session budget").click()
    expect(metric_value(page, "Remaining ε")).to_have_text("0.5", timeout=30_000)
    wait_idle(page)
    page.get_by_role("button", name="Draw a private release").click()
    expect(page.get_by_text(re.compile(r"^Refused, nothing drawn.*ε ≤ 0\.5"))).to_be_visible(timeout=30_000)
    wait_idle(page)
    expect(metric_value(page, SPENT)).to_have_text("3")
    expect(metric_value(page, COUNT)).to_have_text("3")
    expect(page.get_by_text(re.compile(r"^Private release ready"))).to_have_count(0)


# ---- a server started with --ledger (make run LEDGER=PATH) --------------------------------------------
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def ledger_server(tmp_path):
    """(base URL, ledger path) of a server started as `make run LEDGER=PATH` starts it."""
    ledger = tmp_path / "server-ledger.sqlite3"
    port = _free_port()
    log = (tmp_path / "server.log").open("w")
    env = {k: v for k, v in os.environ.items() if k != "DPVIZ_LEDGER"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.headless", "true",
         "--server.address", "127.0.0.1", "--server.port", str(port), "--browser.gatherUsageStats", "false",
         "--server.fileWatcherType", "none", "--server.runOnSave", "false", "--", "--ledger", str(ledger)],
        cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env, start_new_session=True)
    url, deadline = f"http://127.0.0.1:{port}", time.monotonic() + 60
    try:
        while True:
            assert proc.poll() is None, (tmp_path / "server.log").read_text()[-3000:]
            try:
                with urllib.request.urlopen(url + "/_stcore/health", timeout=1) as r:
                    if r.read() == b"ok":
                        break
            except OSError:
                pass
            assert time.monotonic() < deadline, "streamlit not healthy within 60 s"
            time.sleep(0.2)
        yield url, ledger
    finally:
        proc.terminate()  # this one PID
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def test_a_server_started_with_ledger_charges_that_file(page: Page, ledger_server):
    """Also the first visit of a fresh server at a page URL: Streamlit would serve /Stream in its legacy
    pages/-folder mode (sidebar "app", Tree, ... without icons, no Home); ui.page_setup leaves that mode, so the
    sidebar is app.py's navigation and the page is still Stream."""
    url, ledger = ledger_server
    open_page(page, url, "Stream")  # this server's first visitor, at a page URL
    # the page leaves the folder mode with one rerun: wait for the app's navigation (expect retries)
    expect(sidebar_link(page, "Home")).to_be_visible(timeout=30_000)
    expect(sidebar_link(page, "app")).to_have_count(0)
    expect(page.locator("[data-testid=stMain] h1").first).to_have_text("Stream release")
    expect(page.get_by_text(re.compile(re.escape(str(ledger))))).to_be_visible()
    assert not ledger.exists()
    for n in (1, 2, 3):
        click_draw(page, n)
    expect(metric_value(page, SPENT)).to_have_text("3")
    with open_ledger(ledger, readonly=True) as led:
        rows = led.releases()
    assert [(r.capability, r.charge_epsilon, r.status) for r in rows] == [("stream", 1.0, "written")] * 3
    open_page(page, url, "Ledger")  # the page shows that ledger, with no path box
    expect(metric_value(page, "Releases")).to_have_text("3")
    expect(page.locator("[data-testid=stTextInput]")).to_have_count(0)
