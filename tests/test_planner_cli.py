"""``python -m dpviz plan ...``: the ε printed and written, bad input as exit 2 with one line."""

import json
import subprocess
import sys

import pytest

from dpviz.cli import main
from dpviz.stream.hooks import stream_curves
from dpviz.tree.hooks import tree_curves
from dpviz.planner.curves import plan_target
from dpviz.planner.specs import presets_json
from tests.apptest_helpers import ROOT


def run(capsys, *argv: str) -> tuple[int, str, str]:
    rc = main(["plan", *argv])
    out, err = capsys.readouterr()
    return rc, out, err


def test_plan_tree_prints_and_writes_the_epsilon(capsys, tmp_path):
    from dpviz.tree.samples import load_county_sample

    out_json = tmp_path / "plan.json"
    rc, out, _ = run(capsys, "tree", "sample:county", "--target-rmse", "10", "--output", str(out_json))
    assert rc == 0
    best = plan_target(tree_curves(load_county_sample().tree), 10.0)[0]
    assert f"best: {best.mechanism} needs ε = {best.epsilon:g}" in out
    assert "gmc/uniform" in out and "processless/geometric" in out and f"wrote {out_json}" in out
    obj = json.loads(out_json.read_text())
    assert obj["plan"] == "tree" and obj["query"] == "node" and obj["structure"]["h"] == 5
    assert obj["best"]["epsilon"] == pytest.approx(best.epsilon) and obj["best"]["rmse"] == pytest.approx(10.0)
    assert len(obj["plans"]) == 4 and "no counts" in obj["mode"]


def test_plan_tree_range_with_both_noises(capsys):
    rc, out, _ = run(capsys, "tree", "sample:county", "--target-rmse", "50", "--query", "range", "--split", "uniform",
                     "--noise", "both", "--delta", "1e-6")
    assert rc == 0 and "RMSE per leaf-range query ≤ 50" in out
    assert "gmc/uniform/gaussian" in out and "release ε" in out


def test_plan_stream_needs_no_data_and_short_streams_prefer_naive(capsys, tmp_path):
    rc, out, _ = run(capsys, "stream", "--horizon", "16", "--target-rmse", "5", "--metric", "mean")
    assert rc == 0 and out.splitlines()[-1].startswith("best: naive needs ε = ")
    best = plan_target(stream_curves(16, metric="mean"), 5.0)[0]
    assert f"{best.epsilon:g}" in out.splitlines()[-1]
    out_json = tmp_path / "s.json"
    rc, out, _ = run(capsys, "stream", "--horizon", "4096", "--target-rmse", "5", "--metric", "mean", "--noise",
                     "gaussian", "--output", str(out_json))
    obj = json.loads(out_json.read_text())
    assert rc == 0 and obj["best"]["rho"] > 0 and obj["best"]["epsilon"] is None and obj["horizon"] == 4096


def test_plan_marginals_and_graph(capsys):
    rc, out, _ = run(capsys, "marginals", "sample:titanic", "--target-rmse", "2", "--delta", "1e-6")
    assert rc == 0 and "rp-release" in out and "6 workload marginals" in out
    rc, out, _ = run(capsys, "graph", "sample:karate", "--metric", "cut_error", "--target", "0.2", "--method",
                     "quadtree", "--trials", "2", "--steps", "2", "--seed", "3")
    assert rc == 0 and "seed 3" in out and "quadtree" in out and "Monte-Carlo" in out


def test_plan_split(capsys, tmp_path):
    rel = tmp_path / "releases.json"
    rel.write_text(presets_json(["county-nodes", "flights"], {"flights": 2.0}))
    out_json = tmp_path / "split.json"
    rc, out, _ = run(capsys, "split", "--total", "1", str(rel), "--output", str(out_json))
    assert rc == 0 and "basic composition of ε" in out and "closed form" in out
    obj = json.loads(out_json.read_text())
    eps = [r["epsilon"] for r in obj["releases"]]
    assert sum(eps) == pytest.approx(1.0) and [r["name"] for r in obj["releases"]] == ["county-nodes", "flights"]
    rc, out, _ = run(capsys, "split", "--rho", "0.1", str(rel))
    assert rc == 0 and "zCDP composition" in out


@pytest.mark.parametrize("argv,msg", [
    (["tree", "sample:county", "--target-rmse", "-1"], "--target-rmse"),
    (["tree", "sample:nope", "--target-rmse", "1"], "unknown sample"),
    (["tree", "missing.csv", "--target-rmse", "1"], "does not exist"),
    (["stream", "--horizon", "0", "--target-rmse", "1"], "horizon"),
    (["stream", "--horizon", "10", "--target-rmse", "1", "--noise", "both"], "--delta"),
    (["stream", "--horizon", "10", "--target-rmse", "1", "--delta", "1e-6"], "--delta"),
    (["stream", "--horizon", "10", "--target-rmse", "1", "--output", "/no/such/dir/x.json"], "does not exist"),
    (["graph", "sample:karate", "--target", "0.1", "--metric", "bogus"], "--metric"),
    (["graph", "sample:karate", "--target", "0.1", "--method", "drf"], "--method"),
    (["split", "--total", "1", "--rho", "1", "x.json"], "--total"),
    (["split", "--total", "1", "missing.json"], "does not exist"),
])
def test_bad_input_exits_2_with_one_line(capsys, argv, msg):
    rc, _, err = run(capsys, *argv)
    assert rc == 2 and msg in err and err.count("\n") == 1 and err.startswith("dpviz: error:")


def test_split_bad_json_and_output_over_input(capsys, tmp_path):
    rel = tmp_path / "r.json"
    rel.write_text('[{"name": "a", "capability": "stream", "params": {"horizon": 8}}, '
                   '{"name": "a", "capability": "stream", "params": {"horizon": 8}}]')
    rc, _, err = run(capsys, "split", "--total", "1", str(rel))
    assert rc == 2 and "unique" in err
    rc, _, err = run(capsys, "split", "--total", "1", str(rel), "--output", str(rel))
    assert rc == 2 and "input file" in err


def test_registrar_is_light_and_help_lists_the_group():
    code = ("import sys, dpviz.planner.cli; heavy = [m for m in ('numpy', 'scipy', 'pandas', 'plotly', 'dask') "
            "if m in sys.modules]; print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "[]"
    out = subprocess.run([sys.executable, "-m", "dpviz", "plan", "--help"], capture_output=True, text=True, cwd=ROOT,
                         check=False)
    assert out.returncode == 0 and all(v in out.stdout for v in ("tree", "stream", "marginals", "graph", "split"))


def test_a_plan_above_the_release_bound_says_so(capsys):
    """A target so tight that the planned ε exceeds what a release accepts (ε ≤ 30) is flagged, not hidden."""
    rc, out, _ = run(capsys, "tree", "sample:county", "--target-rmse", "0.1")
    assert rc == 0 and "above the release bound ε ≤ 30" in out
    rc, out, _ = run(capsys, "tree", "sample:county", "--target-rmse", "10")
    assert rc == 0 and "release bound" not in out
