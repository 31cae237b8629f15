"""``python -m dpviz stream simulate|release|weights|matrix|variance`` through ``dpviz.cli.main``."""

import argparse
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpviz import cli
from dpviz.core.accounting import bun_steinke_rho, gaussian_rho
from dpviz.core.modes import SIMULATION_NOTICE
from dpviz.core.noise import Noise
from dpviz.errors import InputError
from dpviz.stream.cli import register
from dpviz.stream.mechanism import make_mechanism
from dpviz.stream.strategy import MECHANISM_NAMES
from dpviz.stream.weights import fda_weights

DATA = Path(__file__).parent / "data"
GOLDEN = DATA / "stream_golden_flights_fenwick-fda_eps1_seed3.csv"


def run(argv):
    """The stream verbs without dpviz.cli.main (InputError propagates)."""
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers(dest="capability", required=True))
    args = parser.parse_args(argv)
    return args.func(args)


@pytest.fixture
def stream_csv(tmp_path):
    """A 2000-step integer count stream with dates."""
    counts = np.random.default_rng(7).poisson(40, 2000)
    dates = pd.date_range("2020-01-01", periods=2000, freq="D").strftime("%Y-%m-%d")
    path = tmp_path / "stream_in.csv"
    pd.DataFrame({"date": dates, "count": counts}).to_csv(path, index=False)
    return path, counts


# ---- structure views -----------------------------------------------------------------------------
def test_weights(tmp_path, capsys):
    out = tmp_path / "w.csv"
    assert run(["stream", "weights", "--horizon", "13", "--output", str(out)]) == 0
    df = pd.read_csv(out)
    assert list(df.columns) == ["node", "lambda"] and len(df) == 13
    np.testing.assert_allclose(df["lambda"], fda_weights(13).lam)
    text = capsys.readouterr().out
    assert f"{fda_weights(13).objective:.10g}" in text and "2/ε² × objective" in text


def test_weights_gaussian_wording_is_gaussian(capsys):
    assert run(["stream", "weights", "--horizon", "4", "--noise", "gaussian"]) == 0
    captured = capsys.readouterr()
    assert captured.out.splitlines()[0] == "node,lambda" and len(captured.out.splitlines()) == 5
    assert "objective / (2ρ)" in captured.err and "Gaussian" in captured.err
    assert "Laplace" not in captured.err and "2/ε²" not in captured.err


@pytest.mark.parametrize(
    ("extra", "noise"),
    [(["--mechanism", "honaker", "--epsilon", "0.5"], Noise.laplace(0.5)),
     (["--mechanism", "sqrt", "--rho", "0.5"], Noise.gaussian(0.5)),
     (["--mechanism", "binary", "--noise", "gaussian", "--epsilon", "1", "--delta", "1e-6"],
      Noise.gaussian_approx(1.0, 1e-6)),
     (["--mechanism", "fenwick-fda", "--epsilon", "2", "--discrete"], Noise.laplace(2.0, discrete=True))],
)
def test_variance(tmp_path, extra, noise):
    out = tmp_path / "v.csv"
    assert run(["stream", "variance", "--horizon", "100", *extra, "--output", str(out)]) == 0
    df = pd.read_csv(out)
    assert list(df.columns) == ["t", "variance"]
    np.testing.assert_allclose(df["variance"], make_mechanism(extra[1], 100, noise).per_step_variance())


def test_matrix_triplets_rebuild_the_workload(tmp_path):
    """stream matrix: B M = W (lower-triangular ones) and (BΣ⁻¹)(ΣM) = W with the FDA weights."""
    import scipy.sparse as sp

    def load(which):
        out = tmp_path / f"{which}.csv"
        assert run(["stream", "matrix", "--horizon", "13", "--which", which, "--output", str(out)]) == 0
        df = pd.read_csv(out)
        return sp.coo_array((df.value, (df.row - 1, df.col - 1)), shape=(13, 13)).toarray()

    w = np.tril(np.ones((13, 13)))
    np.testing.assert_allclose(load("B") @ load("M"), w)
    np.testing.assert_allclose(load("BSigmaInv") @ load("SigmaM"), w, atol=1e-12)
    assert np.abs(load("SigmaM")).sum(axis=0).max() == pytest.approx(1.0)  # Δ = 1 after scaling


# ---- simulate ------------------------------------------------------------------------------------
def test_simulate_reproduces_the_golden_laplace_release(tmp_path, capsys):
    """Golden: the pre-issue-7 ``stream release sample:flights --epsilon 1 --mechanism fenwick-fda --seed 3``
    (seeded continuous Laplace); ``stream simulate`` with that seed reproduces it."""
    out = tmp_path / "sim.csv"
    assert cli.main(["stream", "simulate", "sample:flights", "--epsilon", "1", "--mechanism", "fenwick-fda",
                     "--seed", "3", "--output", str(out)]) == 0
    stdout = capsys.readouterr().out
    assert stdout.splitlines()[0] == SIMULATION_NOTICE and "empirical RMSE" in stdout and "seed 3" in stdout
    got, golden = pd.read_csv(out), pd.read_csv(GOLDEN)
    assert list(got.columns) == ["mechanism", "t", "date", "released_total", "variance", "std", "true_total"]
    assert (got["mechanism"] == "fenwick-fda").all()
    pd.testing.assert_frame_equal(got[list(golden.columns)], golden, check_exact=False, rtol=1e-12)
    assert not np.allclose(got["true_total"], got["released_total"])  # the truth is there, labelled


def test_simulate_gaussian_uses_the_exact_profile(tmp_path):
    """Gaussian changed by design: (ε, δ) → ρ by the exact Gaussian profile, so σ² = Δ₂²/(2 gaussian_rho(ε, δ)),
    smaller than the Bun–Steinke σ² of the old code."""
    out = tmp_path / "g.csv"
    assert cli.main(["stream", "simulate", "sample:flights", "--noise", "gaussian", "--epsilon", "1", "--delta",
                     "1e-6", "--mechanism", "naive", "--seed", "3", "--output", str(out)]) == 0
    first = pd.read_csv(out)["variance"].iloc[0]  # naive: Δ₂ = 1, Var(ŝ_1) = σ²
    assert first == pytest.approx(1 / (2 * gaussian_rho(1.0, 1e-6)), rel=1e-12)
    assert first < 1 / (2 * bun_steinke_rho(1.0, 1e-6))


def test_simulate_several_mechanisms_on_one_seed(tmp_path, capsys, stream_csv):
    src, counts = stream_csv
    out = tmp_path / "many.csv"
    assert cli.main(["stream", "simulate", str(src), "--epsilon", "1", "--mechanism", "naive,fenwick-fda",
                     "--seed", "1", "--output", str(out)]) == 0
    df = pd.read_csv(out)
    assert list(df["mechanism"].unique()) == ["naive", "fenwick-fda"] and len(df) == 4000
    np.testing.assert_array_equal(df.loc[df.mechanism == "naive", "true_total"], np.cumsum(counts))
    text = capsys.readouterr().out
    assert text.count("empirical RMSE") == 2
    assert cli.main(["stream", "simulate", "sample:flights", "--rho", "0.1", "--mechanism", "all", "--seed", "1",
                     "--output", str(out)]) == 0
    assert set(pd.read_csv(out)["mechanism"]) == set(MECHANISM_NAMES)  # all: every mechanism, Gaussian ones too


def test_simulate_default_file_name_says_simulation(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert cli.main(["stream", "simulate", "sample:flights", "--epsilon", "1", "--mechanism", "fenwick"]) == 0
    assert (tmp_path / "flights.stream-simulation.csv").is_file()
    out = capsys.readouterr().out
    assert "seed " in out and "flights.stream-simulation.csv" in out  # a fresh seed, printed
    assert cli.main(["stream", "simulate", "sample:flights", "--epsilon", "1", "--mechanism", "naive",
                     "--output", "-"]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith("mechanism,t,date,") and captured.err.startswith(SIMULATION_NOTICE)


# ---- release -------------------------------------------------------------------------------------
def test_release_cli_is_private(tmp_path, capsys, stream_csv):
    src, counts = stream_csv
    truth = np.cumsum(counts)
    outs = []
    for k in range(2):
        out = tmp_path / f"rel{k}.csv"
        assert cli.main(["stream", "release", str(src), "--epsilon", "1", "--mechanism", "fenwick-fda",
                         "--output", str(out)]) == 0
        stdout = capsys.readouterr().out
        df = pd.read_csv(out)
        assert list(df.columns) == ["t", "date", "released_total", "variance", "std"] and len(df) == 2000
        for col in df.columns:  # no output column is the true running total
            assert not np.array_equal(df[col].to_numpy(), truth)
        # stdout: public facts only, nothing derived from the counts
        assert "fenwick-fda" in stdout and "ε = 1" in stdout and "2000" in stdout and "sensitivity" in stdout
        for v in (truth[-1], counts.max(), counts.sum()):
            assert str(int(v)) not in stdout and f"{int(v):,}" not in stdout
        assert "RMSE" not in stdout and "true" not in stdout.lower().replace("no truth", "")
        meta = json.loads((tmp_path / f"rel{k}.csv.meta.json").read_text())
        assert meta["mode"] == "release" and meta["mechanism"] == "fenwick-fda" and meta["noise"]["discrete"]
        assert str(int(truth[-1])) not in json.dumps(meta)
        outs.append(df)
    assert not np.array_equal(outs[0]["released_total"], outs[1]["released_total"])  # fresh noise
    # discrete noise on integer counts: integer released totals (Fenwick chain sums of integers)
    assert outs[0]["released_total"].dtype.kind == "i"


def test_release_refuses_seed_with_one_line_pointing_to_simulate(tmp_path, capsys, stream_csv):
    src, _ = stream_csv
    out = tmp_path / "o.csv"
    code = cli.main(["stream", "release", str(src), "--epsilon", "1", "--mechanism", "fenwick-fda",
                     "--seed", "3", "--output", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "simulate" in err and "--seed" in err
    assert not out.exists()


def test_release_never_overwrites_its_input(capsys, stream_csv):
    src, _ = stream_csv
    before = src.read_bytes()
    code = cli.main(["stream", "release", str(src), "--epsilon", "1", "--mechanism", "naive", "--output", str(src)])
    err = capsys.readouterr().err
    assert code == 2 and "input" in err and err.count("\n") == 1
    assert src.read_bytes() == before
    assert not Path(str(src) + ".meta.json").exists()


def test_release_refuses_sqrt_with_laplace(tmp_path, capsys, stream_csv):
    src, _ = stream_csv
    code = cli.main(["stream", "release", str(src), "--noise", "laplace", "--epsilon", "1", "--mechanism", "sqrt",
                     "--output", str(tmp_path / "o.csv")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "discrete Gaussian" in err and "Laplace" in err
    assert not (tmp_path / "o.csv").exists()


def test_release_gaussian_and_bundled_sample(tmp_path, capsys):
    out = tmp_path / "g.csv"
    assert cli.main(["stream", "release", "sample:flights", "--noise", "gaussian", "--epsilon", "1", "--delta",
                     "1e-6", "--mechanism", "honaker", "--horizon", "200", "--output", str(out)]) == 0
    assert "discrete Gaussian" in capsys.readouterr().out
    meta = json.loads((tmp_path / "g.csv.meta.json").read_text())
    assert meta["horizon"] == 200 and meta["noise"]["family"] == "gaussian" and len(pd.read_csv(out)) == 181


def test_release_non_integer_counts_name_the_step(tmp_path, capsys):
    src = tmp_path / "frac.csv"
    src.write_text("count\n1\n2\n2.5\n4\n")
    code = cli.main(["stream", "release", str(src), "--epsilon", "1", "--mechanism", "naive",
                     "--output", str(tmp_path / "o.csv")])
    err = capsys.readouterr().err
    assert code == 2 and "step 3" in err and "2.5" in err and err.count("\n") == 1


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (["stream", "variance", "--horizon", "0", "--mechanism", "naive", "--epsilon", "1"], "horizon"),
        (["stream", "variance", "--horizon", "5", "--mechanism", "naive"], "--epsilon"),
        (["stream", "variance", "--horizon", "5", "--mechanism", "sqrt", "--noise", "laplace", "--epsilon", "1"], "Gaussian"),
        (["stream", "variance", "--horizon", "5", "--mechanism", "naive", "--noise", "gaussian", "--epsilon", "1"], "--delta"),
        (["stream", "simulate", "sample:flights", "--epsilon", "1", "--mechanism", "naive", "--horizon", "10",
          "--output", "-"], "shorter"),
        (["stream", "simulate", "sample:flights", "--epsilon", "1", "--mechanism", "naive,magic", "--output", "-"],
         "magic"),
        (["stream", "simulate", "sample:flights", "--epsilon", "1", "--mechanism", "sqrt,naive", "--output", "-",
          "--noise", "laplace"], "Gaussian"),
        (["stream", "simulate", "sample:weather", "--epsilon", "1", "--mechanism", "naive", "--output", "-"],
         "sample:flights"),
    ],
)
def test_bad_input_raises_input_error(argv, match):
    with pytest.raises(InputError, match=match):
        run(argv)


def test_main_maps_input_error_to_exit_2(tmp_path, capsys):
    groups = next(a for a in cli.build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert {"tree", "stream"} <= set(groups.choices)
    bad = tmp_path / "bad.csv"
    bad.write_text("count\n1\nx\n")
    code = cli.main(["stream", "release", str(bad), "--epsilon", "1", "--mechanism", "fenwick",
                     "--output", str(tmp_path / "o.csv")])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("dpviz: error: row 2 (line 3)") and err.count("\n") == 1


def test_the_stream_registrar_imports_no_pandas_or_scipy():
    """`python -m dpviz stream ... --help` stays fast: the commands import their heavy modules themselves."""
    import subprocess
    import sys

    code = ("import sys; from dpviz import cli; cli.build_parser('stream', lazy=True); "
            "print(sorted(m for m in ('pandas', 'scipy', 'plotly', 'streamlit') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[1]).stdout
    assert out.strip() == "[]"
