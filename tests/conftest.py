"""Shared pytest fixtures.

* ``streamlit_server`` (session): a real ``streamlit run app.py`` on 127.0.0.1 and a free
  port; yields the base URL (no trailing slash).
* pytest-playwright hooks: Debian's Chromium (``$CHROMIUM_PATH`` or ``/usr/bin/chromium``),
  never a Playwright browser download; viewport 1280x1400.
* Browser tests (marked ``e2e`` or using ``page``/``streamlit_server``) are *skipped* when
  Chromium is missing, but *fail* when ``CI=true``: CI must never go green by skipping them.
* In-process tests run with the pages' work ahead off (``DPVIZ_WORK_AHEAD=0``,
  :func:`dpviz.ui.background.work_ahead`): every result is computed by the run that asks for it, the
  same result, without background simulations competing for the CPU (they took about half of the page
  tests' CPU time). Tests of the work ahead are marked ``work_ahead``; the browser tests' server keeps it on.
"""

import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest
from hypothesis import settings as hypothesis_settings

ROOT = Path(__file__).resolve().parents[1]
# Property tests are reproducible: examples derived from the test itself, no example database
# (HYPOTHESIS_PROFILE=default brings back random exploration for a local bug hunt).
hypothesis_settings.register_profile("dpviz", derandomize=True, database=None, deadline=None)
hypothesis_settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dpviz"))
CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic",
]
# Fixtures that mean "this test needs the real server and/or the browser".
E2E_FIXTURES = {"page", "context", "browser", "streamlit_server"}


def pytest_configure(config):
    """Isolate the privacy ledger: no test (nor a CLI or server it starts) may read or charge the
    developer's real default ledger. XDG_DATA_HOME points at a fresh temporary folder and DPVIZ_LEDGER
    is unset for the whole session; tests that need a ledger pass --ledger or set the variable."""
    os.environ["XDG_DATA_HOME"] = tempfile.mkdtemp(prefix="dpviz-test-data-")
    os.environ.pop("DPVIZ_LEDGER", None)
    os.environ["DPVIZ_WORK_AHEAD"] = "0"  # in-process pages compute no work ahead (module docstring)
    # .streamlit/config.toml hides error details from browser users ("none"); in-process AppTests need
    # the real message in at.exception, so tests (never the served app) see full details.
    from streamlit import config as st_config

    st_config.set_option("client.showErrorDetails", "full")


def _in_ci() -> bool:
    return os.environ.get("CI") == "true"


def require_chromium() -> None:
    """Skip (locally) or fail (CI=true) if the Chromium binary is not usable."""
    if os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK):
        return
    msg = (f"Chromium not found at {CHROMIUM!r} (set CHROMIUM_PATH, or run "
           "`apt-get install -y chromium chromium-driver`); browser test")
    if _in_ci():
        pytest.fail(msg + " cannot be skipped with CI=true", pytrace=False)
    pytest.skip(msg + " skipped")


def pytest_collection_modifyitems(config, items):
    # A test that uses the browser or the server is e2e even if its author forgot the marker,
    # so `pytest -m "not e2e"` stays fast and browser-free.
    for item in items:
        if E2E_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.e2e)


def pytest_runtest_setup(item):
    if item.get_closest_marker("e2e") is not None:
        require_chromium()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def streamlit_server(tmp_path_factory):
    """Base URL of a real streamlit server running app.py for the whole session."""
    port = int(os.environ.get("E2E_PORT") or _free_port())
    log_path = tmp_path_factory.mktemp("st") / "server.log"
    log = log_path.open("w")
    cmd = [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"),
           "--server.headless", "true", "--server.address", "127.0.0.1",
           "--server.port", str(port), "--browser.gatherUsageStats", "false",
           "--server.fileWatcherType", "none", "--server.runOnSave", "false"]
    env = {**os.environ, "DPVIZ_WORK_AHEAD": "1"}  # the served app as a person meets it: work ahead on
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, start_new_session=True)
    url, deadline = f"http://127.0.0.1:{port}", time.monotonic() + 60
    try:
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"streamlit exited with {proc.returncode}; log: {log_path}\n"
                                   + log_path.read_text()[-3000:])
            try:
                with urllib.request.urlopen(url + "/_stcore/health", timeout=1) as r:
                    if r.read() == b"ok":
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"streamlit not healthy within 60 s; log: {log_path}")
            time.sleep(0.2)
        yield url
    finally:
        proc.terminate()  # SIGTERM to this one PID (streamlit starts no child processes)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


@pytest.fixture(scope="session")  # pytest-playwright hook: Debian chromium, never a download
def browser_type_launch_args(browser_type_launch_args):
    require_chromium()
    return {**browser_type_launch_args, "executable_path": CHROMIUM, "args": CHROMIUM_ARGS}


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args):
    return {**browser_context_args, "viewport": {"width": 1280, "height": 1400}}


@pytest.fixture(autouse=True)
def _work_ahead_only_where_tested(request, monkeypatch):
    """The pages' background work ahead is off in-process (pytest_configure) but in tests marked ``work_ahead``
    (an autouse fixture: it runs before the test's own function-scoped fixtures, e.g. a page's first run)."""
    monkeypatch.setenv("DPVIZ_WORK_AHEAD", "1" if request.node.get_closest_marker("work_ahead") else "0")


@pytest.fixture(autouse=True)
def _fresh_default_ledger(tmp_path_factory, monkeypatch):
    """Every CLI release is charged, and the first one creates the default ledger: each test gets its own
    default-ledger folder, so no test sees another's charges (a page charges the default ledger when it
    exists)."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path_factory.mktemp("xdg")))
