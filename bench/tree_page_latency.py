"""Time the Tree page's redraw after an ε change (AppTest, in process; not a unit test).

usage: .venv/bin/python bench/tree_page_latency.py [--repeats 5]

For the bundled county tree and a ~10^6-node synthetic tree (complete binary, 1,048,575 nodes, and
random fan-out, 10^6 nodes): the first load (stage 1 + stage 2, cold caches) is timed once, then
each ε move is one full script rerun (stage 2: noise rescale, post-processing, metrics, figures,
element serialisation). Targets (issue #2, sec. 5): <= 0.3 s on the county tree, <= 2 s at 10^6 nodes.
AppTest does not include the browser's websocket round-trip and plotly drawing.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from streamlit.testing.v1 import AppTest  # noqa: E402

EPS = [0.5, 2.0, 0.1, 5.0, 1.0, 0.3, 3.0, 0.05]


def timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def case(name: str, setup, repeats: int) -> tuple[str, float, float, float, str]:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    at.switch_page("pages/1_Tree.py")
    first = timed(lambda: (at.run(), setup(at)))
    if at.exception:
        raise SystemExit(f"{name}: {at.exception[0].value}")
    n = next(m.value for m in at.metric if m.label == "Nodes n")
    times = []
    for eps in (EPS * (repeats // len(EPS) + 1))[:repeats]:
        times.append(timed(lambda: at.select_slider(key="epsilon").set_value(eps).run()))
        assert not at.exception, at.exception
    return name, first, statistics.median(times), max(times), n


def synthetic(kind: str):
    def setup(at):
        at.radio(key="tree_source").set_value("synthetic").run()
        at.selectbox(key="synthetic_kind").set_value(kind).run()
        at.select_slider(key="synthetic_size").set_value(1_000_000).run()
    return setup


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args()
    rows = [
        case("county (bundled)", lambda at: None, a.repeats),
        case("complete binary ~10^6", synthetic("complete"), a.repeats),
        case("random fan-out 10^6", synthetic("random-fanout"), a.repeats),
    ]
    print(f"{'tree':24} {'nodes':>11} {'first load s':>13} {'eps rerun median s':>19} {'max s':>7}")
    for name, first, med, mx, n in rows:
        print(f"{name:24} {n:>11} {first:13.2f} {med:19.3f} {mx:7.3f}")


if __name__ == "__main__":
    main()
