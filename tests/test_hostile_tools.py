"""Hostile-but-fair command lines for the cross-capability tools (issue 17, point 6): ``audit``, ``plan``, ``sweep``.

Every count is checked against a time/memory estimate before work starts, every float is finite and within the
simulation bounds (the same in ``simulate``, ``sweep``, ``plan`` and ``audit``), and each refusal is one line
``dpviz: error: ...`` with exit code 2 and nothing written. RuntimeWarnings are errors in this module: none may
reach the user.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dpviz.core import limits
from dpviz.errors import InputError
from tests.cli_helpers import run_group

pytestmark = pytest.mark.filterwarnings("error::RuntimeWarning")

DEEP = "[" * 100_000 + "]" * 100_000
STREAM_OK = [{"name": "s", "capability": "stream", "params": {"horizon": 100}}]


def run(argv, capsys) -> tuple[int, str, str]:
    """``python -m dpviz ARGV`` in-process through the shared runner (argparse refusals exit via SystemExit)."""
    try:
        return run_group(argv[0], argv[1:], capsys)
    except SystemExit as exc:
        out = capsys.readouterr()
        return (exc.code if isinstance(exc.code, int) else 2), out.out, out.err


@pytest.fixture
def work(tmp_path, monkeypatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "deep.json").write_text(DEEP)
    (tmp_path / "ok.json").write_text(json.dumps(STREAM_OK))
    (tmp_path / "many.json").write_text(json.dumps(STREAM_OK * 101))
    (tmp_path / "big.json").write_text(json.dumps(STREAM_OK) + " " * 1_000_001)
    (tmp_path / "nan.json").write_text('[{"name": "s", "capability": "stream", "params": {"horizon": 10}, '
                                       '"weight": NaN}]')
    (tmp_path / "graph.json").write_text(json.dumps([{"name": "g", "capability": "graph",
                                                      "params": {"trials": 10**6}}]))
    (tmp_path / "graph-eps.json").write_text(json.dumps([{"name": "g", "capability": "graph",
                                                          "params": {"epsilons": [1e-300, 1]}}]))
    (tmp_path / "horizon.json").write_text(json.dumps([{"name": "s", "capability": "stream",
                                                        "params": {"horizon": 10**10}}]))
    return tmp_path


def refused(work: Path, capsys, argv, *needles: str) -> str:
    """Exit 2, exactly one stderr line ``dpviz: error: ...`` holding every needle, and no file written."""
    before = set(work.rglob("*"))
    rc, _, err = run([str(a) for a in argv], capsys)
    lines = err.strip().splitlines()
    assert rc == 2 and len(lines) == 1 and lines[0].startswith("dpviz: error: "), (argv, rc, err)
    for n in needles:
        assert n in lines[0], (n, lines[0])
    assert set(work.rglob("*")) == before, f"{argv} wrote {set(work.rglob('*')) - before}"
    return lines[0]


AUDIT = ["--seed", "1", "--quiet"]
SWEEP = ["--seed", "1", "--quiet", "--workers", "0"]
SWEEP_TREE = ["sweep", "tree", "sample:county", "--epsilons", "1", "--trials", "2", *SWEEP]
GRAPH_PLAN = ["plan", "graph", "sample:karate", "--target", "0.5", "--seed", "1", "--method", "kdh"]

CASES = [
    # audit: --trials against memory (was a numpy MemoryError of 7-15 TiB) and time; every float in range
    *[(f"audit-{cap}-trials-1e12", ["audit", cap, "--trials", 10**12, *AUDIT], ("of memory", "lower --trials"))
      for cap in ("tree", "stream", "marginals", "graph")],
    ("audit-trials-time", ["audit", "graph", "--trials", 10**7, "--max-seconds", "1", *AUDIT],
     ("would take about", "--max-seconds S")),
    ("audit-trials-zero", ["audit", "tree", "--trials", "0", *AUDIT], ("--trials",)),
    ("audit-graph-eps-tiny", ["audit", "graph", "--epsilon", "1e-300", *AUDIT], ("MIN_SIMULATION_EPSILON",)),
    ("audit-tree-eps-huge", ["audit", "tree", "--epsilon", "1e7", *AUDIT], ("MAX_SIMULATION_EPSILON",)),
    ("audit-eps-nan", ["audit", "stream", "--epsilon", "nan", *AUDIT], ("--epsilon",)),
    ("audit-eps-negative", ["audit", "stream", "--epsilon", "-1", *AUDIT], ("--epsilon",)),
    ("audit-delta-nan", ["audit", "marginals", "--delta", "nan", *AUDIT], ("--delta",)),
    ("audit-alpha", ["audit", "tree", "--alpha", "2", *AUDIT], ("--alpha",)),
    ("audit-max-seconds", ["audit", "tree", "--max-seconds", "0", *AUDIT], ("--max-seconds",)),
    # plan: the target's budget within the simulation bounds (was ZeroDivisionError / several lines)
    ("plan-tree-rmse-tiny", ["plan", "tree", "sample:county", "--target-rmse", "1e-300"],
     ("--target-rmse 1e-300", "MAX_SIMULATION_EPSILON", "accept a larger error")),
    ("plan-stream-rmse-tiny", ["plan", "stream", "--horizon", "100", "--target-rmse", "1e-300"],
     ("MAX_SIMULATION_EPSILON",)),
    ("plan-tree-rmse-huge", ["plan", "tree", "sample:county", "--target-rmse", "1e308"],
     ("MIN_SIMULATION_EPSILON", "ask for a smaller error")),
    ("plan-stream-rmse-huge-rho", ["plan", "stream", "--horizon", "100", "--target-rmse", "1e308", "--noise",
                                   "gaussian"], ("MIN_SIMULATION_RHO",)),
    ("plan-stream-rmse-huge-delta", ["plan", "stream", "--horizon", "100", "--target-rmse", "1e308", "--noise",
                                     "gaussian", "--delta", "1e-6"], ("MIN_SIMULATION_RHO",)),
    ("plan-marginals-rmse-tiny", ["plan", "marginals", "sample:titanic", "--target-rmse", "1e-300", "--delta",
                                  "1e-6"], ("MAX_SIMULATION_RHO",)),
    ("plan-rmse-inf", ["plan", "stream", "--horizon", "100", "--target-rmse", "inf"], ("--target-rmse",)),
    ("plan-delta-nan", ["plan", "stream", "--horizon", "100", "--target-rmse", "1", "--noise", "gaussian",
                        "--delta", "nan"], ("--delta",)),
    ("plan-stream-horizon", ["plan", "stream", "--horizon", 10**10, "--target-rmse", "1"],
     ("above the cap", "--max-steps N")),
    ("plan-stream-horizon-negative", ["plan", "stream", "--horizon", "-5", "--target-rmse", "1"], ("--horizon",)),
    # plan graph: --steps 0 answered ε = 20 for every method
    ("plan-graph-steps-0", [*GRAPH_PLAN, "--steps", "0"], ("--steps", "got 0")),
    ("plan-graph-steps-negative", [*GRAPH_PLAN, "--steps", "-3"], ("--steps",)),
    ("plan-graph-steps-many", [*GRAPH_PLAN, "--steps", "51"], ("MAX_BISECTION_STEPS",)),
    ("plan-graph-trials-0", [*GRAPH_PLAN, "--trials", "0"], ("--trials",)),
    ("plan-graph-trials-many", [*GRAPH_PLAN, "--trials", "1001"], ("--trials",)),
    ("plan-graph-lo-tiny", [*GRAPH_PLAN, "--lo", "1e-300"], ("--lo", "MIN_SIMULATION_EPSILON")),
    ("plan-graph-hi-huge", [*GRAPH_PLAN, "--hi", "1e300"], ("--hi", "MAX_SIMULATION_EPSILON")),
    ("plan-graph-lo-above-hi", [*GRAPH_PLAN, "--lo", "5", "--hi", "1"], ("--lo < --hi",)),
    ("plan-graph-target-nan", ["plan", "graph", "sample:karate", "--target", "nan", "--seed", "1"], ("--target",)),
    ("plan-graph-time", [*GRAPH_PLAN, "--trials", "1000", "--steps", "50", "--max-seconds", "0.01"],
     ("would take about", "--max-seconds S")),
    # plan split: a 10^5-deep JSON (was RecursionError), sizes, budgets, the counts inside the JSON
    ("plan-split-deep", ["plan", "split", "deep.json", "--total", "1"], ("nested too deeply",)),
    ("plan-split-big", ["plan", "split", "big.json", "--total", "1"], ("MAX_RELEASES_BYTES",)),
    ("plan-split-many", ["plan", "split", "many.json", "--total", "1"], ("MAX_RELEASES",)),
    ("plan-split-nan", ["plan", "split", "nan.json", "--total", "1"], ("NaN is not a number",)),
    ("plan-split-total-tiny", ["plan", "split", "ok.json", "--total", "1e-300"], ("--total", "MIN_SIMULATION_EPSILON")),
    ("plan-split-total-huge", ["plan", "split", "ok.json", "--total", "1e7"], ("--total", "MAX_SIMULATION_EPSILON")),
    ("plan-split-rho-huge", ["plan", "split", "ok.json", "--rho", "1e300"], ("--rho", "MAX_SIMULATION_RHO")),
    ("plan-split-graph-trials", ["plan", "split", "graph.json", "--total", "1", "--seed", "1"], ("trials",)),
    ("plan-split-graph-eps", ["plan", "split", "graph-eps.json", "--total", "1", "--seed", "1"],
     ("MIN_SIMULATION_EPSILON",)),
    ("plan-split-horizon", ["plan", "split", "horizon.json", "--total", "1"], ("'horizon'", "MAX_STEPS")),
    ("plan-split-fifo-like", ["plan", "split", ".", "--total", "1"], ("not a regular file",)),
    # sweep: the same ε bounds as simulate (1e7 was accepted; 1e-300 printed several lines)
    ("sweep-eps-huge", ["sweep", "tree", "sample:county", "--epsilons", "1e7", *SWEEP], ("MAX_SIMULATION_EPSILON",)),
    ("sweep-eps-tiny", ["sweep", "stream", "sample:flights", "--epsilons", "1e-300", *SWEEP],
     ("MIN_SIMULATION_EPSILON",)),
    ("sweep-eps-nan", ["sweep", "graph", "sample:karate", "--epsilons", "1,nan", *SWEEP], ("--epsilons",)),
    ("sweep-output-is-summary", [*SWEEP_TREE, "--output", "x", "--summary", "./x"], ("--summary", "--output")),
    ("sweep-trials-huge", ["sweep", "tree", "sample:county", "--epsilons", "1", "--trials", 10**12, *SWEEP],
     ("--trials",)),
    ("sweep-trials-time", ["sweep", "tree", "sample:county", "--epsilons", "0.5,1", "--trials", "1000000", *SWEEP,
                           "--max-seconds", "1"], ("would take about", "--max-seconds S", "lower --trials")),
    ("sweep-batch-0", [*SWEEP_TREE, "--batch", "0"], ("--batch",)),
    ("sweep-workers-negative", ["sweep", "tree", "sample:county", "--epsilons", "1", "--workers", "-1"],
     ("--workers",)),
    ("sweep-workers-huge", ["sweep", "tree", "sample:county", "--epsilons", "1", "--workers", "100000"],
     ("--workers", "256")),
    ("sweep-timeout-huge", [*SWEEP_TREE, "--timeout", "1e9"], ("--timeout",)),
    ("sweep-timeout-nan", [*SWEEP_TREE, "--timeout", "nan"], ("--timeout",)),
    ("sweep-queries", [*SWEEP_TREE, "--queries", 10**12], ("MAX_QUERIES",)),
    ("sweep-cut-queries", ["sweep", "graph", "sample:karate", "--epsilons", "1", "--cut-queries", 10**6, *SWEEP],
     ("MAX_CUT_QUERIES",)),
    ("sweep-rounds", ["sweep", "marginals", "sample:titanic", "--delta", "1e-6", "--mechanism", "mwem", "--rounds",
                      10**8, "--epsilons", "1", *SWEEP], ("--rounds",)),
    ("sweep-horizon", ["sweep", "stream", "sample:flights", "--epsilons", "1", "--horizon", 10**13, *SWEEP],
     ("horizon", "of memory", "choose a smaller horizon")),
    ("sweep-max-seconds-inf", [*SWEEP_TREE, "--max-seconds", "inf"], ("--max-seconds",)),
]


@pytest.mark.parametrize("name,argv,needles", CASES, ids=[c[0] for c in CASES])
def test_hostile_tool_arguments_are_refused_on_one_line(work, capsys, name, argv, needles):
    refused(work, capsys, argv, *needles)


def test_sweep_output_and_summary_as_the_same_inode_are_refused(work, capsys):
    (work / "x.parquet").write_bytes(b"")
    (work / "link.csv").symlink_to(work / "x.parquet")
    (work / "hard.csv").hardlink_to(work / "x.parquet")
    for other in ("link.csv", "hard.csv"):
        refused(work, capsys, [*SWEEP_TREE, "--output", "x.parquet", "--summary", other], "also the --output")


def test_sweep_workers_checked_against_memory(work, capsys, monkeypatch):
    monkeypatch.setattr(limits, "available_memory", lambda: 2**30)  # 1 GiB: four 256 MiB workers fit, eight do not
    refused(work, capsys, [*SWEEP_TREE[:-2], "--workers", "8"], "8 worker processes", "of memory")


def test_bounds_themselves_are_accepted_without_warnings(work, capsys):
    rc, out, err = run(["sweep", "stream", "sample:flights", "--epsilons", "1e-6,1e6", "--trials", "2", *SWEEP,
                        "--output", "t.parquet", "--summary", "s.csv"], capsys)
    assert rc == 0 and not err.strip(), err
    assert (work / "t.parquet").stat().st_size > 0 and "1e-06" in (work / "s.csv").read_text()
    rc, out, err = run(["audit", "graph", "--epsilon", "1e-6", "--trials", "8", *AUDIT], capsys)
    assert rc == 0 and "verdict:" in out and not err.strip(), err
    rc, out, err = run([*GRAPH_PLAN, "--steps", "1", "--trials", "2"], capsys)
    assert rc == 0 and "kdh" in out, err


def test_plan_graph_steps_are_the_bisection_steps():
    """hi, lo, then one midpoint per step (--steps 0 used to answer ε = hi for every method)."""
    from dpviz.graph.hooks import graph_plan
    from dpviz.planner.specs import load_data

    graph = load_data("graph", "sample:karate")
    for steps in (1, 3):
        (plan,) = graph_plan(graph, "degree_kl", 0.5, ["kdh"], seed=1, steps=steps)
        assert [e[0] for e in plan.evaluations[:2]] == [20.0, 0.05] and len(plan.evaluations) == 2 + steps
        assert 0.05 < plan.epsilon < 20.0
    with pytest.raises(InputError, match="--steps"):
        graph_plan(graph, "degree_kl", 0.5, ["kdh"], seed=1, steps=0)


def test_audit_estimate_uses_its_own_generator():
    """The timed releases of the estimate do not consume the audit's seeded stream: same seed, same result."""
    import numpy as np

    from dpviz.audit.targets import check_audit, run as run_audit
    from dpviz.tree.hooks import audit_target as tree_target

    target = tree_target(1.0)
    a = run_audit(target, trials=40, rng=np.random.default_rng(5))
    assert check_audit(target, 40, max_seconds=60) == 40
    b = run_audit(target, trials=40, rng=np.random.default_rng(5))
    assert a.events == b.events


def test_check_work_and_format_seconds():
    assert limits.format_seconds(0.4) == "0.4 s" and limits.format_seconds(3 * 3600) == "3.0 h"
    assert limits.format_seconds(float("inf")) == "forever" and "years" in limits.format_seconds(1e12)
    limits.check_work("small", seconds=1.0, memory=1024.0, max_seconds=2.0)
    with pytest.raises(InputError, match=r"^big would take about 3.0 s \(estimate\), more than the limit of 2.0 s "
                                         r"\(raise it with --max-seconds S\); try less$"):
        limits.check_work("big", seconds=3.0, max_seconds=2.0, cheaper="try less")
    for bad in (float("nan"), float("inf")):
        with pytest.raises(InputError, match="would take about"):
            limits.check_work("x", seconds=bad, max_seconds=2.0)
        with pytest.raises(InputError, match="of memory"):
            limits.check_work("x", memory=bad)
    with pytest.raises(InputError, match=r"PiB of memory \(estimate\)"):
        limits.check_work("x", memory=2.0**60)


def test_monte_carlo_cost_picks_the_most_trials_that_fit():
    from dpviz.planner.montecarlo import MonteCarloCost

    cost = MonteCarloCost(n_eps=5, setup=0.2, per_trial=0.1)  # 5 × (0.2 + 0.1 t) s
    assert cost.seconds(20) == pytest.approx(11.0)
    assert cost.most_trials([3, 5, 10, 20, 50], 10.0) == 10
    assert cost.most_trials([3, 5], 1.0) is None
    assert cost.trials_within(20, [3, 5, 10, 20, 50], 12.0) == 20  # fits: as asked
    assert cost.trials_within(50, [3, 5, 10, 20, 50], 10.0) == 10  # the most below it that fit
    assert cost.trials_within(5, [3, 5, 10, 20, 50], 1.0) is None


def test_trial_estimates_count_the_work_not_the_wait():
    """A trial timed while its thread waits (here a sleep; on a server: another thread holding the GIL, or a
    niced warm-up) is estimated by its CPU time: the wait would otherwise cut a person's trials."""
    import time

    from dpviz.core.limits import seconds_per_call
    from dpviz.core.trials import estimate_trials

    class Waits:
        def trial(self, epsilon, seed):
            time.sleep(0.05)
            return [{"epsilon": epsilon}]

    est = estimate_trials(Waits(), (0.5, 1.0), 100)  # by wall time: 2 × 100 × 0.05 = 10 s
    assert est.seconds < 1.0 and est.rows == 200
    assert seconds_per_call(lambda: time.sleep(0.05)) < 0.02
    assert seconds_per_call(lambda: sum(range(200_000))) > 0  # real work is counted


def test_dots_cost_estimates_the_dots(capsys):
    """The estimate from a few timed trials is of the order of the real time (within 10× either way)."""
    import time

    from dpviz.planner import montecarlo
    from dpviz.stream.hooks import stream_curves

    curves = stream_curves(20_000, metric="mean")
    cost = montecarlo.dots_cost(curves, 20_000, (0.5, 1.0), options={"metric": "mean"})
    t0 = time.perf_counter()
    montecarlo.dots(curves, 20_000, (0.5, 1.0), trials=10, seed=1, options={"metric": "mean"})
    real = time.perf_counter() - t0
    assert real / 10 < cost.seconds(10) < real * 10
