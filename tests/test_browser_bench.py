"""bench/browser_latency.py without a browser: its README rows say what was measured against the goals."""

import json
import sys

from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "bench"))

import browser_latency as bl  # noqa: E402 - bench/ is not a package
import common  # noqa: E402
import readme_table  # noqa: E402


def test_a_page_over_the_goal_names_what_is_slow_and_is_not_met():
    r = bl.PageResult("Tree", load=3.0, eps=[0.4, 0.6, 2.0],
                      controls=[("slider “k”", 0.3, ""), ("button “New noise draw”", 1.5, ""),
                                ("select “Series”", None, "gone")])
    now, goal, values = bl.row(r)
    assert now.startswith("load 3 s; ε move 0.6 s median, 2 s max; 2 controls 0.3–1.5 s")
    assert "over 1 s: button “New noise draw” 1.5 s" in now and "not settled: select “Series”" in now
    assert goal == "ε move ≤ 1 s median (stretch 0.5 s), controls ≤ 1 s: **not met**"
    assert values == {"load_s": 3.0, "eps_median_s": 0.6, "eps_max_s": 2.0, "controls_max_s": 1.5}


def test_a_fast_page_passes_and_a_page_without_eps_has_no_eps_goal():
    assert bl.row(bl.PageResult("Stream", 2.0, [0.3, 0.4, 0.2], [("radio “Noise”", 0.9, "")]))[1].endswith(
        "pass (stretch met)")
    assert bl.row(bl.PageResult("Stream", 2.0, [0.7], []))[1].endswith("controls ≤ 1 s: pass")
    now, goal, _ = bl.row(bl.PageResult("Ledger", 1.2, [], [("button “Refresh”", 0.2, "")]))
    assert "ε" not in now and goal == "controls ≤ 1 s: pass"
    assert bl.row(bl.PageResult("Home", None, error="boom"))[1].endswith("**not met**")


def test_every_page_is_a_readme_row(tmp_path, monkeypatch):
    out = tmp_path / "results.json"
    monkeypatch.setenv(common.RESULTS_ENV, str(out))
    for name in bl.PAGES:
        now, goal, values = bl.row(bl.PageResult(name, 1.0, [0.5], []))
        common.record(f"browser.{name.lower()}", now, "—", goal, quick=False, source=bl.SOURCE, values=values)
    keys = {r.key for r in readme_table.ROWS}
    assert {f"browser.{n.lower()}" for n in bl.PAGES} <= keys
    table = readme_table.render(json.loads(out.read_text(encoding="utf-8")), out)
    assert table.count("load 1 s; ε move 0.5 s median") == len(bl.PAGES)


def test_a_control_an_earlier_change_removed_is_skipped_not_failed():
    r = bl.PageResult("Marginals", 2.0, [0.4], [("slider “k”", None, bl.GONE), ("radio “Budget”", 0.3, "")])
    now, goal, _ = bl.row(r)
    assert goal.endswith("pass (stretch met)") and "not settled" not in now
    assert bl.row(bl.PageResult("Graph", 2.0, [0.4], [("slider “d”", None, "no settled page: Timeout")]))[1].endswith(
        "**not met**")


def test_switching_to_another_data_set_is_a_load_printed_without_the_control_goal(capsys):
    r = bl.PageResult("Graph", 2.0, [0.4], [("select “Graph”", 5.2, bl.NEW_DATA + "→ Netscience"),
                                            ("radio “Noise”", 0.3, "")])
    now, goal, values = bl.row(r)
    assert "new data set 5.2 s (a load, no goal)" in now and "over 1 s" not in now
    assert goal.endswith("pass (stretch met)") and values["new_data_max_s"] == 5.2
    assert bl.report([r]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if "Graph”" in x)
    assert "5.20  load" in line and "FAIL" not in line
    slow = bl.PageResult("Graph", 2.0, [0.4], [("radio “Noise”", 1.3, "")])  # an ordinary control still counts
    assert bl.report([slow]) == 1


def test_sessions_merge_into_medians_and_a_control_that_never_settled_stays_a_failure():
    runs = [bl.PageResult("Stream", 6.0, [0.5, 0.7], [("radio “Noise”", 1.2, "→ Gaussian"), ("slider “t”", 0.3, "x")]),
            bl.PageResult("Stream", 5.0, [0.6], [("radio “Noise”", 0.8, "→ Gaussian"),
                                                ("slider “t”", None, "no settled page: Timeout")]),
            bl.PageResult("Stream", 7.0, [0.9], [("radio “Noise”", 0.9, "→ Gaussian"), ("slider “t”", 0.2, "x")])]
    r = bl.merged(runs)
    assert r.load == 6.0 and r.eps == [0.5, 0.7, 0.6, 0.9]
    noise, t = r.controls
    assert noise[:2] == ("radio “Noise”", 0.9) and noise[2].endswith("(median of 3: 1.20, 0.80, 0.90)")
    assert t == ("slider “t”", None, "no settled page: Timeout")  # one session failed: not hidden by a median
    assert bl.row(r)[1].endswith("**not met**")
    one = bl.merged(runs[:1])
    assert one.controls[0] == ("radio “Noise”", 1.2, "→ Gaussian") and one.load == 6.0
