"""Helpers for Playwright tests against the real server (fixture ``streamlit_server``).

Rules that were verified on this machine (see /work/shared/notes/streamlit-testing.md):
never wait on ``load``/``networkidle``; wait on the app's script state, then on the content
you expect.  After an interaction, first wait for the expected *result*, then ``wait_idle``.
"""

from playwright.sync_api import Locator, Page, expect

DEFAULT_TIMEOUT = 30_000  # ms


def wait_idle(page: Page, timeout: float = DEFAULT_TIMEOUT) -> None:
    """Wait until the app is connected and its script has finished; assert no exception box."""
    app = page.locator("[data-testid=stApp]")
    expect(app).to_have_attribute("data-test-connection-state", "CONNECTED", timeout=timeout)
    expect(app).to_have_attribute("data-test-script-state", "notRunning", timeout=timeout)
    expect_no_exception(page)


def expect_no_exception(page: Page) -> None:
    expect(page.locator("[data-testid=stException]")).to_have_count(0)


def open_page(page: Page, base_url: str, path: str = "", timeout: float = DEFAULT_TIMEOUT) -> None:
    """Go to ``base_url/path`` (``""`` = home, ``"Tree"`` = pages/1_Tree.py) and wait until idle.

    Each pytest-playwright test gets a fresh browser context, i.e. a new Streamlit session.
    """
    page.goto(f"{base_url}/{path.lstrip('/')}")
    wait_idle(page, timeout)
    expect(page.locator("[data-testid=stSkeleton]")).to_have_count(0, timeout=timeout)


def wait_plotly(page: Page, n: int = 1, timeout: float = DEFAULT_TIMEOUT) -> Locator:
    """Wait until at least ``n`` plotly charts are drawn (plotly loads lazily); return them."""
    charts = page.locator("[data-testid=stPlotlyChart]")
    expect(charts.nth(n - 1).locator(".main-svg").first).to_be_visible(timeout=timeout)
    return charts


def heading(page: Page, text: str) -> Locator:
    return page.get_by_role("heading", name=text)


def sidebar_link(page: Page, label: str) -> Locator:
    """Sidebar navigation entry, e.g. ``sidebar_link(page, "Tree")`` for pages/1_Tree.py."""
    return page.locator("[data-testid=stSidebarNav]").get_by_text(label, exact=True)


def set_slider_keys(page: Page, label: str, key: str, presses: int = 1) -> None:
    """Move a slider with the keyboard (``.fill`` does not work). Use "End"/"Home" for big jumps.

    Every key press can trigger a rerun: afterwards wait for the expected result, then wait_idle.
    """
    thumb = page.get_by_role("slider", name=label)
    thumb.focus()
    for _ in range(presses):
        thumb.press(key)


def upload(page: Page, path, index: int = 0) -> None:
    """Upload a file to the ``index``-th st.file_uploader (no click/file chooser needed)."""
    page.locator("[data-testid=stFileUploader] input[type=file]").nth(index).set_input_files(path)


def metric_value(page, label):
    """The value element of the ``st.metric`` whose label contains ``label``."""
    return page.locator("[data-testid=stMetric]").filter(has_text=label).locator("[data-testid=stMetricValue]")


def draw_private_release(page, ready_text):
    """Click the Private release panel's button, wait for ``ready_text`` (str or regex) and the released
    table; download the release CSV and return (table locator, downloaded file name, its header line)."""
    from playwright.sync_api import expect

    button = page.get_by_role("button", name="Draw a private release")
    button.scroll_into_view_if_needed()
    button.click()
    expect(page.get_by_text(ready_text)).to_be_visible(timeout=30_000)
    wait_idle(page)
    table = page.locator("[data-testid=stDataFrame]").last
    expect(table).to_be_visible()
    download = page.get_by_role("button", name="Download the release (CSV)")
    expect(download).to_be_visible()
    with page.expect_download() as info:
        download.click()
    header = open(info.value.path(), encoding="utf-8").readline().strip()
    return table, info.value.suggested_filename, header


def wait_for_number(locator, want: float, rel: float = 2e-3, timeout: float = 30.0) -> float:
    """Poll ``locator``'s text until it reads ``want`` (relative tolerance ``rel``) or ``timeout`` passes, and
    return the last value: several key presses mean several reruns, and an earlier one may still be shown."""
    import time

    deadline = time.monotonic() + timeout
    while True:
        try:
            value = float(locator.inner_text())
        except ValueError:
            value = float("nan")
        if abs(value - want) <= rel * abs(want) or time.monotonic() > deadline:
            return value
        time.sleep(0.2)
