"""``stream weights|variance|release`` through ``register`` (no subprocess) and ``dpviz.cli.main``."""

import argparse

import numpy as np
import pandas as pd
import pytest

from dpviz.errors import InputError
from dpviz.stream.cli import register
from dpviz.stream.mechanisms import Noise, make_mechanism
from dpviz.stream.weights import fda_weights


def run(argv):
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers(dest="capability", required=True))
    args = parser.parse_args(argv)
    return args.func(args)


def test_weights(tmp_path, capsys):
    out = tmp_path / "w.csv"
    assert run(["stream", "weights", "--horizon", "13", "--output", str(out)]) == 0
    df = pd.read_csv(out)
    assert list(df.columns) == ["node", "lambda"] and len(df) == 13
    np.testing.assert_allclose(df["lambda"], fda_weights(13).lam)
    assert f"{fda_weights(13).objective:.10g}" in capsys.readouterr().out


def test_weights_gaussian_to_stdout(capsys):
    assert run(["stream", "weights", "--horizon", "4", "--noise", "gaussian"]) == 0
    captured = capsys.readouterr()
    assert captured.out.splitlines()[0] == "node,lambda" and len(captured.out.splitlines()) == 5
    assert "objective" in captured.err


@pytest.mark.parametrize(
    ("extra", "noise"),
    [(["--mechanism", "honaker", "--epsilon", "0.5"], Noise.laplace(0.5)),
     (["--mechanism", "sqrt", "--rho", "0.5"], Noise.gaussian(0.5)),
     (["--mechanism", "binary", "--noise", "gaussian", "--epsilon", "1", "--delta", "1e-6"],
      Noise.gaussian_approx(1.0, 1e-6))],
)
def test_variance(tmp_path, extra, noise):
    out = tmp_path / "v.csv"
    assert run(["stream", "variance", "--horizon", "100", *extra, "--output", str(out)]) == 0
    df = pd.read_csv(out)
    assert list(df.columns) == ["t", "variance"]
    np.testing.assert_allclose(df["variance"], make_mechanism(extra[1], 100, noise).per_step_variance())


def test_release_csv_is_seeded(tmp_path):
    src = tmp_path / "in.csv"
    src.write_text("date,count\n" + "".join(f"2024-01-{d:02d},{d}\n" for d in range(1, 21)))
    outs = []
    for k in range(2):
        out = tmp_path / f"o{k}.csv"
        assert run(["stream", "release", str(src), "--epsilon", "1", "--mechanism", "fenwick-fda",
                    "--seed", "5", "--horizon", "32", "--output", str(out)]) == 0
        outs.append(pd.read_csv(out))
    pd.testing.assert_frame_equal(outs[0], outs[1])
    df = outs[0]
    assert list(df.columns) == ["t", "date", "released_total", "variance", "std"] and len(df) == 20
    mech = make_mechanism("fenwick-fda", 32, Noise.laplace(1.0))
    expect = mech.release(np.arange(1.0, 21.0), np.random.default_rng(5))
    np.testing.assert_allclose(df["released_total"], expect.prefix_sums)


def test_release_sample(tmp_path):
    out = tmp_path / "o.csv"
    assert run(["stream", "release", "sample:flights", "--rho", "0.1", "--mechanism", "sqrt",
                "--seed", "1", "--output", str(out)]) == 0
    assert len(pd.read_csv(out)) == 181


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (["stream", "variance", "--horizon", "0", "--mechanism", "naive", "--epsilon", "1"], "horizon"),
        (["stream", "variance", "--horizon", "5", "--mechanism", "naive"], "--epsilon"),
        (["stream", "variance", "--horizon", "5", "--mechanism", "sqrt", "--noise", "laplace", "--epsilon", "1"], "Gaussian"),
        (["stream", "variance", "--horizon", "5", "--mechanism", "naive", "--noise", "gaussian", "--epsilon", "1"], "--delta"),
        (["stream", "release", "sample:flights", "--epsilon", "1", "--mechanism", "naive", "--horizon", "10"], "shorter"),
    ],
)
def test_bad_input_raises_input_error(argv, match):
    with pytest.raises(InputError, match=match):
        run(argv)


def test_main_maps_input_error_to_exit_2(tmp_path, capsys):
    from dpviz import cli

    groups = next(a for a in cli.build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert {"tree", "stream"} <= set(groups.choices)
    bad = tmp_path / "bad.csv"
    bad.write_text("count\n1\nx\n")
    code = cli.main(["stream", "release", str(bad), "--epsilon", "1", "--mechanism", "fenwick"])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("dpviz: error: row 2 (line 3)") and err.count("\n") == 1


def test_matrix_triplets_rebuild_the_workload(tmp_path):
    """stream matrix: B M = W (lower-triangular ones) and (BΣ⁻¹)(ΣM) = W with the FDA weights."""
    import pandas as pd
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
