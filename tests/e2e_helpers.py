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


CHART = ".dpviz-plot"
"""A dashboard chart in the page (dpviz.ui.charts: the Plotly div its component draws into)."""


def wait_plotly(page: Page, n: int = 1, timeout: float = DEFAULT_TIMEOUT) -> Locator:
    """Wait until at least ``n`` plotly charts are drawn (plotly loads lazily); return them."""
    charts = page.locator(CHART)
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


# ---- a server outside pytest (bench/browser_latency.py, tools/shoot.py) ------------------------------------
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def chromium_path() -> str:
    import os

    return os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")


class StreamlitServer:
    """``with StreamlitServer() as url:`` a real ``streamlit run app.py`` on 127.0.0.1 (a free port unless
    ``port``), no file watcher, no usage statistics; stopped (SIGTERM to its one PID, then kill) on exit.

    The server never sees the developer's privacy ledger: ``XDG_DATA_HOME`` is a fresh temporary folder
    (removed on exit) and ``DPVIZ_LEDGER`` is unset, so a bench's or a screenshot's clicks on "Draw a
    private release" charge a throw-away ledger and the Ledger page shows only this server's draws."""

    def __init__(self, port: int = 0, log=None, timeout: float = 60.0):
        self.port, self.log, self.timeout, self.proc, self.data_home = port or free_port(), log, timeout, None, None

    def __enter__(self) -> str:
        import subprocess
        import sys
        import time
        import urllib.request
        from pathlib import Path

        import os
        import tempfile

        root = Path(__file__).resolve().parents[1]
        url = f"http://127.0.0.1:{self.port}"
        self.data_home = tempfile.mkdtemp(prefix="dpviz-server-data-")
        env = {k: v for k, v in os.environ.items() if k != "DPVIZ_LEDGER"} | {"XDG_DATA_HOME": self.data_home}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", str(root / "app.py"), "--server.headless", "true",
             "--server.address", "127.0.0.1", "--server.port", str(self.port), "--browser.gatherUsageStats",
             "false", "--server.fileWatcherType", "none", "--server.runOnSave", "false"],
            cwd=root, env=env, stdin=subprocess.DEVNULL, stdout=self.log or subprocess.DEVNULL,
            stderr=subprocess.STDOUT)
        deadline = time.monotonic() + self.timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"streamlit exited with {self.proc.returncode}")
            try:
                with urllib.request.urlopen(url + "/_stcore/health", timeout=1) as r:
                    if r.read() == b"ok":
                        return url
            except OSError:
                pass
            if time.monotonic() > deadline:
                self.__exit__()
                raise RuntimeError(f"streamlit not healthy within {self.timeout:g} s")
            time.sleep(0.2)

    def __exit__(self, *exc) -> None:
        import shutil
        import subprocess

        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None
        if self.data_home is not None:
            shutil.rmtree(self.data_home, ignore_errors=True)
            self.data_home = None


# ---- timing a page as a person sees it: action -> last chart painted -------------------------------------
# Installed before the app's own scripts (``page.add_init_script``): remembers the time of the last DOM change
# and whether the script has run since ``mark``. After a ``mark`` the clock restarts at the first key press or
# pointer press the page receives (``armed``): what a person does, not the driver's checks before it (Playwright
# scrolls, waits for the element to be stable and hit-testable first: 40-280 ms, none of it the page's).
PROBE_JS = """(() => {
  if (window.__dpv) return;
  const p = window.__dpv = {t0: 0, last: performance.now(), ran: false, armed: false, input: false};
  const press = e => { if (p.armed) { p.t0 = e.timeStamp; p.armed = false; p.input = true; } };
  for (const type of ['keydown', 'pointerdown', 'mousedown']) window.addEventListener(type, press, true);
  new MutationObserver(records => {
    p.last = performance.now();
    for (const r of records) {
      if (r.type === 'attributes' && r.attributeName === 'data-test-script-state' &&
          (r.oldValue === 'running' || r.target.getAttribute('data-test-script-state') === 'running')) p.ran = true;
    }
  }).observe(document, {subtree: true, childList: true, attributes: true, characterData: true,
                        attributeOldValue: true});
})();"""

# True once the script has run since ``mark``, is idle, nothing shows a spinner or a skeleton, every visible
# chart (dpviz.ui.charts) has drawn its SVG, and the DOM has been quiet for ``quiet`` ms.
SETTLED_JS = """(quiet) => {
  const p = window.__dpv, app = document.querySelector('[data-testid=stApp]');
  if (!p || !app || !p.ran) return false;
  if (app.getAttribute('data-test-connection-state') !== 'CONNECTED') return false;
  if (app.getAttribute('data-test-script-state') !== 'notRunning') return false;
  if (document.querySelector('[data-testid=stSpinner], [data-testid=stSkeleton]')) return false;
  for (const c of document.querySelectorAll('[data-testid^=stBidiComponent]')) {  // dpviz.ui.charts: drawn in place
    const d = c.querySelector('.dpviz-plot');
    if (c.getClientRects().length && (!d || d.dataset.pending || !d.querySelector('.main-svg'))) return false;
  }
  return performance.now() - p.last >= quiet;
}"""

QUIET_MS = 300


def install_probe(page: Page) -> None:
    """Watch every later navigation of ``page`` (call before ``goto``)."""
    page.add_init_script(PROBE_JS)


def mark(page: Page) -> None:
    """Start a measurement: the next :func:`settled` counts from the next key or pointer press (else from now)
    and waits for a script run."""
    page.evaluate("() => { const p = window.__dpv; p.t0 = performance.now(); p.ran = false; p.armed = true;"
                  " p.input = false; }")


def settled(page: Page, timeout: float = 60_000, quiet_ms: int = QUIET_MS) -> float:
    """Seconds from the key or pointer press after :func:`mark` (or from the navigation's start after ``goto``) to
    the last DOM change before the page settled (see SETTLED_JS): the action's script run, the element updates
    and every chart painted."""
    page.wait_for_function(SETTLED_JS, arg=quiet_ms, polling=50, timeout=timeout)
    return page.evaluate("() => (window.__dpv.last - window.__dpv.t0) / 1000")


def timed_goto(page: Page, url: str, timeout: float = 120_000) -> float:
    """Load ``url`` in ``page`` (probe installed) and return seconds from navigation start to the last chart
    painted."""
    page.goto(url)
    return settled(page, timeout)
