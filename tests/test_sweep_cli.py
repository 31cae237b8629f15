"""``python -m dpviz sweep ...``: Parquet + summary, progress bar on stderr, exit code 2 for bad input."""

from __future__ import annotations

import io
import subprocess
import sys

import pandas as pd
import pytest

from dpviz.cli import main
from dpviz.sweep.cli import ProgressBar
from tests.apptest_helpers import ROOT


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    rc = main(["sweep", *argv])
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_sweep_tree_on_a_local_cluster_writes_parquet_and_prints_a_summary(capsys, tmp_path):
    out_path, summary_path = tmp_path / "sweep.parquet", tmp_path / "summary.csv"
    rc, out, err = _run(capsys, "tree", "sample:county", "--epsilons", "0.5,2", "--trials", "6", "--methods",
                        "gmc,processless", "--queries", "200", "--seed", "4", "--batch", "2",
                        "--output", str(out_path), "--summary", str(summary_path))
    assert rc == 0
    assert out.splitlines()[0] == "simulation — not a private release"
    assert "seed 4" in out and "local Dask cluster (2 worker process(es) × 1 thread)" in out
    assert "ran 6 tasks (2 trials each)" in out
    assert "total_sq_error" in out and "ci_low" in out and "analytic" in out
    assert "wrote 120 rows" in out  # 2 ε × 6 trials × 2 methods × 5 metrics
    assert "6/6 tasks" in err and "[" in err  # the progress bar is on stderr, not stdout
    assert "/6 tasks" not in out
    df = pd.read_parquet(out_path)
    assert len(df) == 120 and list(df.columns) == ["epsilon", "trial", "method", "metric", "value", "analytic"]
    assert df.attrs["sweep"]["seed"] == 4
    summary = pd.read_csv(summary_path)
    assert len(summary) == 2 * 2 * 5 and {"mean", "ci_low", "ci_high", "q025", "q975"} <= set(summary.columns)
    # the same sweep in this process (no Dask) gives the same table
    again = tmp_path / "again.parquet"
    rc, out, err = _run(capsys, "tree", "sample:county", "--epsilons", "0.5,2", "--trials", "6", "--methods",
                        "gmc,processless", "--queries", "200", "--seed", "4", "--workers", "0", "--quiet",
                        "--output", str(again))
    assert rc == 0 and err == "" and "in this process (no Dask)" in out
    pd.testing.assert_frame_equal(pd.read_parquet(again), df)


def test_sweep_stream_in_process_prints_the_mean_per_step_variance(capsys):
    rc, out, _ = _run(capsys, "stream", "sample:flights", "--epsilons", "1", "--trials", "5", "--methods",
                      "naive,fenwick-fda", "--workers", "0", "--seed", "1", "--quiet")
    assert rc == 0
    lines = [ln.split() for ln in out.splitlines() if ln.strip().startswith("1 ")]
    mse = {ln[1]: ln for ln in lines if ln[2] == "mse"}
    assert set(mse) == {"naive", "fenwick-fda"}
    assert float(mse["naive"][-1]) == pytest.approx(2 * 91, rel=1e-9)  # naive: Var_t = 2t/ε², mean over t = 1..181


@pytest.mark.parametrize("argv, message", [
    (["tree", "sample:county", "--epsilons", "0.1,x"], "--epsilons"),
    (["tree", "sample:county", "--epsilons", "1", "--trials", "0"], "--trials"),
    (["tree", "sample:county", "--epsilons", "1", "--methods", "gmc,magic"], "unknown tree method"),
    (["tree", "/no/such/file.csv", "--epsilons", "1"], "does not exist"),
    (["tree", "sample:county", "--epsilons", "1", "--output", "/no/such/folder/s.parquet"], "does not exist"),
    (["tree", "sample:county", "--epsilons", "1", "--workers", "-1"], "--workers"),
    (["tree", "sample:county", "--epsilons", "1", "--timeout", "0", "--scheduler", "tcp://127.0.0.1:9"], "--timeout"),
    (["stream", "sample:flights", "--epsilons", "1", "--methods", "sqrt"], "laplace"),
    (["marginals", "sample:titanic", "--epsilons", "1"], "--delta"),
    (["graph", "sample:karate", "--epsilons", "1", "--delta", "1e-6"], "pure ε"),
    (["tree", "sample:county", "--epsilons", "1", "--trials", "2", "--scheduler", "tcp://127.0.0.1:9",
      "--timeout", "1"],
     "cannot connect"),
])
def test_bad_input_exits_2_with_one_line(capsys, argv, message):
    rc, _, err = _run(capsys, *argv, "--quiet")
    assert rc == 2
    assert err.count("\n") == 1 and err.startswith("dpviz: error:") and message in err


def test_bad_flag_exits_2_from_a_real_process():
    proc = subprocess.run([sys.executable, "-m", "dpviz", "sweep", "tree", "sample:county", "--epsilons", "-1"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120,
                          check=False)
    assert proc.returncode == 2
    assert proc.stderr.startswith("dpviz: error: --epsilons") and proc.stderr.count("\n") == 1
    assert "Traceback" not in proc.stderr


def test_help_does_not_import_dask():
    code = ("import sys; from dpviz.cli import build_parser; build_parser(); "
            "print(sorted(m for m in ('dask', 'distributed', 'dpviz.sweep.spec') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          check=False)
    assert proc.returncode == 0 and proc.stdout.strip() == "[]"
    helptext = subprocess.run([sys.executable, "-m", "dpviz", "sweep", "tree", "--help"], cwd=ROOT,
                              capture_output=True, text=True, timeout=120, check=True).stdout
    assert "--epsilons" in helptext and "--scheduler" in helptext and "--workers" in helptext


def test_progress_bar_draws_every_tenth_when_not_a_terminal():
    buf = io.StringIO()
    bar = ProgressBar("sweep tree", stream=buf)
    for done in range(1, 41):
        bar(done, 40)
    lines = buf.getvalue().splitlines()
    assert len(lines) == 11  # 1/40, then each new tenth, and the last
    assert lines[-1].startswith("sweep tree [" + "#" * 30 + "] 40/40 tasks")
    assert "s left" in lines[5]
