"""Tree page latency (issues 2 and 11 "Pages"): every option of pages/1_Tree.py, timed in AppTest, each
printed against its goal.

usage: .venv/bin/python bench/tree_page_latency.py [--repeats 3] [--quick]

The page runs through app.py (``st.navigation``) in this process with Streamlit's AppTest: one timed
rerun is one full script run, as Streamlit does after every widget change (stage 2 of every selected
method, metrics, figures, element serialisation). It does not include the browser's websocket round
trip and plotly drawing. ``st.cache_resource`` is shared by the process, as on a server. The options
are read from the page itself (its SYN_KINDS, SYN_SIZES, ... constants), so a new option is benched.

1. Data options (the Data panel): the bundled county tree, every synthetic shape at every size of
   the size slider, and an uploaded CSV (node,parent,count) of a 10^6-node random fan-out tree. For
   each: the first load (cold caches: generation or parsing, stage 1, stage 2, figures; printed, no
   goal) and ``--repeats`` ε moves (median and max).
2. Every other control, once each, on the 10^6-node tree of each shape: noise family, δ, budget
   split, the methods multiselect (GMC only; all six, which adds the opt-in PrivTrie recursion and
   Lee sparse solve; back to the default), the release method, opening the Generation Matrix expander and
   its k-order subtree, the propagation
   vector, direction and step, the noise seed, "New noise draw", "Draw a private release".

Goals (issue 2 sec. 5, issue 11): an ε move <= 0.3 s up to 10^4 nodes (the bundled county tree has
3,2xx), <= 2 s above; every other redraw <= 2 s on the 10^6-node trees, except the opt-in slow
baselines (the page says they take seconds to minutes: printed, no goal).
"""

from __future__ import annotations

import argparse
import ast
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from streamlit.testing.v1 import AppTest  # noqa: E402

from common import cell_range, cell_s, cell_verdict, record  # noqa: E402 - bench/ is on sys.path as a script

from dpviz.tree.estimators import METHODS  # noqa: E402
from dpviz.tree.synthetic import fanout_parents  # noqa: E402

PAGE = ROOT / "pages" / "1_Tree.py"
EPS = [0.5, 2.0, 0.1, 5.0, 1.0, 0.3, 3.0, 0.05]
SMALL, GOAL_SMALL, GOAL_BIG = 10_000, 0.3, 2.0
BIG = 1_000_000
UPLOAD_NODES = 1_000_000
SOURCE = "bench/tree_page_latency.py"


def page_constants() -> dict:
    """The literal option lists of the page (SYN_KINDS, SYN_SIZES, FAMILIES, ...), read from its source."""
    out = {}
    for node in ast.parse(PAGE.read_text()).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                out[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                pass
    return out


def timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


class PageError(Exception):
    """The page raised (shown as an exception element): reported in the table as ERROR."""


def check(at: AppTest, what: str) -> AppTest:
    if at.exception:
        raise PageError(f"{what}: {str(at.exception[0].value).splitlines()[0][:160]}")
    return at


def widget(at: AppTest, key: str):
    """The widget with this key, whatever its kind (the page may turn a select_slider into a slider)."""
    for kind in ("select_slider", "slider", "radio", "selectbox", "multiselect", "number_input", "button"):
        try:
            return getattr(at, kind)(key=key)
        except KeyError:
            continue
    raise KeyError(key)


def nodes_and_height(at: AppTest) -> tuple[int, int]:
    got = {m.label: m.value for m in at.metric}
    return int(got["Nodes n"].replace(",", "")), int(got["Height h"].replace(",", ""))


def open_page(state: dict, upload: tuple[str, bytes] | None = None) -> tuple[AppTest, float]:
    """A fresh session on the Tree page with ``state`` preset; the timed run is the first load."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=1800)
    for k, v in state.items():
        at.session_state[k] = v
    at.switch_page("pages/1_Tree.py")
    if upload is None:
        return at, timed(lambda: check(at.run(), str(state)))
    check(at.run(), "upload page")
    at.file_uploader(key="upload").upload(upload[0], upload[1], "text/csv")
    return at, timed(lambda: check(at.run(), "upload"))


def eps_moves(at: AppTest, repeats: int) -> list[float]:
    return [timed(lambda: check(widget(at, "epsilon").set_value(eps).run(), f"epsilon {eps}"))
            for eps in (EPS * (repeats // len(EPS) + 1))[:repeats]]


def opened(at: AppTest) -> AppTest:
    """Open the Generation Matrix expander (its views, the k-order slider among them, are built only when open)."""
    at.session_state["tree_gm_open"] = True
    return at


def upload_csv(n: int) -> bytes:
    """node,parent,count for a random fan-out tree of ~n nodes (counts on the leaves only)."""
    parent = fanout_parents(n, np.random.default_rng(0))
    has_kids = np.zeros(parent.size, bool)
    has_kids[parent[1:]] = True
    counts = np.where(has_kids, "", np.random.default_rng(1).poisson(10.0, parent.size).astype(str))
    par = np.where(parent >= 0, np.char.add("n", parent.astype(str)), "")
    ids = np.char.add("n", np.arange(parent.size).astype(str))
    lines = np.char.add(np.char.add(np.char.add(np.char.add(ids, ","), par), ","), counts)
    return ("node,parent,count\n" + "\n".join(lines.tolist()) + "\n").encode()


def controls(at: AppTest, h: int) -> list[tuple[str, object, float | None]]:
    """(label, action, goal) for every control of the page other than the data source and ε."""
    default = [m for m in METHODS if m not in ("privtrie", "lee")]
    return [
        ("noise: Gaussian", lambda: widget(at, "tree_noise").set_value("gaussian"), GOAL_BIG),
        ("δ = 1e-5 (Gaussian)", lambda: widget(at, "delta").set_value(1e-5), GOAL_BIG),
        ("ε move (Gaussian)", lambda: widget(at, "epsilon").set_value(0.7), GOAL_BIG),
        ("noise: Laplace", lambda: widget(at, "tree_noise").set_value("laplace"), GOAL_BIG),
        ("split: geometric", lambda: widget(at, "split").set_value("geometric"), GOAL_BIG),
        ("ε move (geometric split)", lambda: widget(at, "epsilon").set_value(1.5), GOAL_BIG),
        ("split: uniform", lambda: widget(at, "split").set_value("uniform"), GOAL_BIG),
        ("methods: GMC only", lambda: widget(at, "methods").set_value(["gmc"]), GOAL_BIG),
        ("methods: all six (opt-in slow baselines)", lambda: widget(at, "methods").set_value(list(METHODS)), None),
        ("methods: default", lambda: widget(at, "methods").set_value(default), GOAL_BIG),
        ("release method: Boosting", lambda: widget(at, "release_method").set_value("boosting"), GOAL_BIG),
        ("Generation Matrix expander: open", lambda: opened(at), GOAL_BIG),
        ("k-order subtree k = 1", lambda: widget(at, "k_order").set_value(1), GOAL_BIG),
        ("propagation vector: true counts", lambda: widget(at, "prop_vector").set_value("true"), GOAL_BIG),
        ("propagation vector: all ones", lambda: widget(at, "prop_vector").set_value("ones"), GOAL_BIG),
        ("propagation vector: noisy", lambda: widget(at, "prop_vector").set_value("noisy"), GOAL_BIG),
        ("propagation direction: downward", lambda: widget(at, "prop_direction").set_value("down"), GOAL_BIG),
        (f"propagation step: {max(1, h // 2)} of {h}", lambda: widget(at, "prop_step").set_value(max(1, h // 2)),
         GOAL_BIG),
        ("noise seed", lambda: widget(at, "tree_seed").set_value(12345), GOAL_BIG),
        ("New noise draw", lambda: widget(at, "new_draw").click(), GOAL_BIG),
        ("Draw a private release", lambda: widget(at, "tree_release_button").click(), GOAL_BIG),
        ("ε move after the release", lambda: widget(at, "epsilon").set_value(0.5), GOAL_BIG),
    ]


def verdict(seconds: float, goal: float | None) -> str:
    if goal is None:
        return "opt-in"
    return "pass" if seconds <= goal else "FAIL"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3, help="ε moves per data option")
    ap.add_argument("--quick", action="store_true", help="the county tree and the 10^6 path-like tree only")
    a = ap.parse_args()
    const = page_constants()
    kinds, sizes = list(const["SYN_KINDS"]), list(const["SYN_SIZES"])
    check(AppTest.from_file(str(ROOT / "app.py"), default_timeout=600).run(), "warm-up")  # imports

    print("== 1. data options: first load (no goal) and ε moves ==")
    print(f"{'option':44} {'nodes':>10} {'h':>7} {'first load s':>12} {'ε median s':>10} {'ε max s':>8} "
          f"{'goal s':>6}  result")
    cases = [("bundled county tree", {"tree_source": "bundled"}, None)]
    for kind in (["path-like"] if a.quick else kinds):
        for size in ([BIG] if a.quick else sizes):
            cases.append((f"synthetic {const['SYN_KINDS'][kind]}, {size:,}",
                          {"tree_source": "synthetic", "synthetic_kind": kind, "synthetic_size": size}, None))
    if not a.quick:
        cases.append((f"upload: CSV, random fan-out {UPLOAD_NODES:,}", {"tree_source": "upload"},
                      ("tree_upload.csv", upload_csv(UPLOAD_NODES))))
    fails = 0
    big_sessions = []
    eps_big: dict[str, list[float]] = {}  # shape of a 10^6-node tree -> its ε moves
    others: dict[str, list[tuple[str, float, float | None]]] = {}  # shape -> (control, seconds, goal)
    for label, state, upload in cases:
        try:
            at, first = open_page(state, upload)
            n, h = nodes_and_height(at)
            times = eps_moves(at, a.repeats)
        except PageError as exc:
            fails += 1
            print(f"{label:44} ERROR {exc}", flush=True)
            continue
        goal = GOAL_SMALL if n <= SMALL else GOAL_BIG
        med = statistics.median(times)
        fails += med > goal
        print(f"{label:44} {n:>10,} {h:>7,} {first:12.2f} {med:10.3f} {max(times):8.3f} {goal:6.1f}  "
              f"{verdict(med, goal)}", flush=True)
        if state.get("synthetic_size") == BIG:
            big_sessions.append((label, at, h, state["synthetic_kind"]))
            eps_big[state["synthetic_kind"]] = times
        else:
            del at

    print("\n== 2. every other control on the 10^6-node trees (one rerun each) ==")
    print(f"{'tree':40} {'control':44} {'s':>7} {'goal s':>6}  result")
    for label, at, h, kind in big_sessions:
        for name, action, goal in controls(at, h):
            try:
                secs = timed(lambda: check(action().run(), f"{label}: {name}"))
            except PageError as exc:
                fails += 1
                print(f"{label:40} {name:44} {'ERROR':>7} {'':>6}  {exc}", flush=True)
                continue
            fails += goal is not None and secs > goal
            others.setdefault(kind, []).append((name, secs, goal))
            print(f"{label:40} {name:44} {secs:7.2f} {'-' if goal is None else f'{goal:.1f}':>6}  "
                  f"{verdict(secs, goal)}", flush=True)
    print(f"\n{fails} goal(s) missed or errors")
    record_rows(eps_big, others, const["SYN_KINDS"], a.quick)


def record_rows(eps: dict[str, list[float]], others: dict[str, list[tuple[str, float, float | None]]],
                names: dict[str, str], quick: bool) -> None:
    """The README rows: ε moves on the 10^6-node path-like tree, then on the other shapes (median, as the
    goal); every other control with a goal as a range, those over it named."""
    def rest(kinds: list[str]) -> str:
        with_goal = [(n, s, g) for k in kinds for n, s, g in others.get(k, []) if g is not None]
        if not with_goal:
            return "other controls not measured"
        over = ", ".join(f"{n} {cell_s(s)}" for n, s, g in with_goal if s > g)
        spread = cell_range(min(s for _, s, _ in with_goal), max(s for _, s, _ in with_goal))
        return f"other controls {spread}" + (f"; over {GOAL_BIG:g} s: {over}" if over else "")

    if "path-like" in eps:
        t = eps["path-like"]
        med = statistics.median(t)
        record("page.tree_path", f"{cell_s(med)} median, {cell_s(max(t))} max; {rest(['path-like'])}", "—",
               f"≤ {GOAL_BIG:g} s per ε move: {cell_verdict(med <= GOAL_BIG)}", quick=quick, source=SOURCE,
               values={"median_s": med, "max_s": max(t)})
    kinds = [k for k in names if k != "path-like" and k in eps]
    if kinds:
        meds = {k: statistics.median(eps[k]) for k in kinds}
        shown = ", ".join(f"{names[k].lower()} {cell_s(m)}" for k, m in meds.items())
        record("page.tree_big", f"median {shown} ({rest(kinds)})", "—",
               f"≤ {GOAL_BIG:g} s: {cell_verdict(max(meds.values()) <= GOAL_BIG)}", quick=quick, source=SOURCE,
               values={f"median_{k}_s": m for k, m in meds.items()})


if __name__ == "__main__":
    main()
