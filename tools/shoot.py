"""Start the app, screenshot pages for a human, stop the app.

usage: python tools/shoot.py [--out DIR] [page ...]
  python tools/shoot.py "" Tree          -> shots/home.png, shots/page_Tree.png
  python tools/shoot.py --out docs       -> docs/home.png + docs/page_<Name>.png of every page (the README's)
  python tools/shoot.py                  -> home + every page found in pages/, into shots/

A page is its URL path: "" is the home page, "Tree" is pages/1_Tree.py. Each page is opened in a fresh
browser context (a new Streamlit session, bundled defaults) at 1280 px, shot once the script is idle and every
visible Plotly chart has drawn (the probe of tests/e2e_helpers.py), the window grown to the page's height.
Uses Debian's Chromium ($CHROMIUM_PATH or /usr/bin/chromium), never a Playwright download.
"""

import argparse
import re
import sys
from pathlib import Path

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.e2e_helpers import (  # noqa: E402
    CHROMIUM_ARGS, StreamlitServer, chromium_path, install_probe, timed_goto,
)

WIDTH, MAX_HEIGHT = 1280, 8000


def all_pages() -> list[str]:
    """"" (home) + the URL path of every pages/*.py, as Streamlit derives it."""
    names = []
    for f in sorted((ROOT / "pages").glob("*.py")):
        m = re.search(r"([0-9]*)[_ -]*(.*)\.py", f.name)
        names.append(re.sub(r"[_ ]+", "_", m.group(2)).strip() or m.group(1))
    return [""] + names


def file_name(page: str) -> str:
    return f"page_{page}.png" if page else "home.png"


def shoot(browser, url: str, page_path: str, out: Path) -> tuple[Path, float, int]:
    """Screenshot one page: (file, load seconds, exception boxes shown)."""
    ctx = browser.new_context(viewport={"width": WIDTH, "height": 900})
    try:
        page = ctx.new_page()
        install_probe(page)
        load = timed_goto(page, f"{url}/{page_path}", 180_000)
        # content scrolls inside stMain, so full_page=True is not enough: grow the viewport
        h = page.evaluate("() => document.querySelector('[data-testid=stMain]').scrollHeight")
        page.set_viewport_size({"width": WIDTH, "height": min(h + 40, MAX_HEIGHT)})
        page.wait_for_timeout(800)  # plotly relayout after the resize
        f = out / file_name(page_path)
        page.screenshot(path=str(f))
        return f, load, page.locator("[data-testid=stException]").count()
    finally:
        ctx.close()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "shots"), help="output directory (default: shots/)")
    ap.add_argument("--port", type=int, default=0, help="server port (default: a free one)")
    ap.add_argument("pages", nargs="*", help='URL paths, "" = home (default: home + all pages)')
    a = ap.parse_args(argv)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    bad = 0
    with StreamlitServer(a.port) as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        for name in a.pages or all_pages():
            f, load, n_exc = shoot(browser, url, name, out)
            if n_exc:
                bad += 1
                print(f"{f}  WARNING: page shows {n_exc} exception(s)", file=sys.stderr)
            print(f"{f}  ({load:.1f} s to the last chart)")
        browser.close()
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
