"""Start the app, screenshot pages for a human, stop the app.

usage: python tools/shoot.py [--out DIR] [page ...]
  python tools/shoot.py "" Tree          -> shots/page_main.png, shots/page_Tree.png
  python tools/shoot.py --out docs Tree  -> docs/page_Tree.png (the README screenshot)
  python tools/shoot.py                  -> home + every page found in pages/

A page is its URL path: "" is the home page, "Tree" is pages/1_Tree.py.
Uses Debian's Chromium ($CHROMIUM_PATH or /usr/bin/chromium), never a Playwright download.
"""

import argparse
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from playwright.sync_api import expect, sync_playwright

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]
WIDTH = 1280


def all_pages() -> list[str]:
    """"" (home) + the URL path of every pages/*.py, as Streamlit derives it."""
    names = []
    for f in sorted((ROOT / "pages").glob("*.py")):
        m = re.search(r"([0-9]*)[_ -]*(.*)\.py", f.name)
        names.append(re.sub(r"[_ ]+", "_", m.group(2)).strip() or m.group(1))
    return [""] + names


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "shots"), help="output directory (default: shots/)")
    ap.add_argument("--port", type=int, default=0, help="server port (default: a free one)")
    ap.add_argument("pages", nargs="*", help='URL paths, "" = home (default: home + all pages)')
    a = ap.parse_args(argv)
    pages = a.pages or all_pages()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    port = a.port or free_port()
    url = f"http://127.0.0.1:{port}"
    srv = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"),
         "--server.headless", "true", "--server.address", "127.0.0.1", "--server.port", str(port),
         "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"],
        cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    bad = 0
    try:
        deadline = time.monotonic() + 60
        while True:
            if srv.poll() is not None:
                raise SystemExit(f"streamlit exited with {srv.returncode}")
            try:
                if urllib.request.urlopen(url + "/_stcore/health", timeout=1).read() == b"ok":
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise SystemExit("streamlit not healthy within 60 s")
            time.sleep(0.2)
        with sync_playwright() as p:
            b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            page = b.new_page(viewport={"width": WIDTH, "height": 900})
            for name in pages:
                page.set_viewport_size({"width": WIDTH, "height": 900})
                page.goto(f"{url}/{name}")
                app = page.locator("[data-testid=stApp]")
                expect(app).to_have_attribute("data-test-connection-state", "CONNECTED", timeout=60_000)
                expect(app).to_have_attribute("data-test-script-state", "notRunning", timeout=60_000)
                expect(page.locator("[data-testid=stSkeleton]")).to_have_count(0, timeout=30_000)
                charts = page.locator("[data-testid=stPlotlyChart]")
                for i in range(charts.count()):      # plotly draws lazily
                    expect(charts.nth(i).locator(".main-svg").first).to_be_visible(timeout=30_000)
                # content scrolls inside stMain, so full_page=True is not enough: grow the viewport
                h = page.evaluate("() => document.querySelector('[data-testid=stMain]').scrollHeight")
                page.set_viewport_size({"width": WIDTH, "height": min(h + 40, 8000)})
                page.wait_for_timeout(500)          # plotly relayout after resize
                f = out / f"page_{name or 'main'}.png"
                page.screenshot(path=str(f))
                n_exc = page.locator("[data-testid=stException]").count()
                if n_exc:
                    bad += 1
                    print(f"{f}  WARNING: page shows {n_exc} exception(s)", file=sys.stderr)
                print(f)
            b.close()
    finally:
        srv.send_signal(signal.SIGTERM)
        try:
            srv.wait(15)
        except subprocess.TimeoutExpired:
            srv.kill()
            srv.wait()
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
