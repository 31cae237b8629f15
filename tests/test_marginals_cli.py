"""``python -m dpviz marginals simulate|release|reconstruct`` through ``dpviz.cli.main``."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from dpviz import cli
from dpviz.core.modes import RELEASE_NOTICE, SIMULATION_NOTICE
from dpviz.marginals.estimators import reconstruct
from dpviz.marginals.model import workload_cliques
from dpviz.core.structure import STRUCTURE_FROM_DATA_NOTICE
from dpviz.marginals.io import read_table
from dpviz.marginals.declared import read_declaration
from tests.apptest_helpers import ROOT
from tests.cli_helpers import one_line_error, run_group

DATA = Path(__file__).parent / "data"
GOOD = DATA / "marginals_cli_good.csv"
GOOD_DOMAIN = DATA / "marginals_cli_good.domain.json"  # declares a color no record holds ("purple")
MEAS = DATA / "marginals_cli_meas.json"
BUDGET = ["--epsilon", "1", "--delta", "1e-9"]


def run(argv, capsys):
    return run_group("marginals", argv, capsys)


# ---- simulate ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("mechanism", ["rp", "mwem"])
def test_simulate_prints_the_metrics(capsys, mechanism):
    rc, out, _ = run(["simulate", "sample:titanic", "--workload", "2", *BUDGET, "--mechanism", mechanism,
                      "--method", "all", "--seed", "5", "--lnn-rounds", "300"], capsys)
    assert rc == 0
    lines = out.splitlines()
    assert lines[0] == SIMULATION_NOTICE
    assert "seed 5" in out and "ρ = 0.0149731" in out
    header = next(i for i, line in enumerate(lines) if line.split()[:3] == ["method", "l1", "l2"])
    rows = [line.split() for line in lines[header + 1: header + 5]]
    assert [r[0] for r in rows] == ["mle", "lnn", "trunc", "trunc-rescale"]
    assert all(np.isfinite(float(x)) for r in rows for x in r[1:6])
    assert rows[1][3] == "0"  # GReM-LNN: no negative cell
    if mechanism == "mwem":
        assert "selected marginals:" in out and "T = 6" in out  # 6 two-way marginals: T = min(30, 6)
    # same seed, same numbers (all but the timing)
    rc2, out2, _ = run(["simulate", "sample:titanic", "--workload", "2", *BUDGET, "--mechanism", mechanism,
                        "--method", "all", "--seed", "5", "--lnn-rounds", "300"], capsys)
    lines2 = out2.splitlines()
    assert rc2 == 0 and [line.split()[:5] for line in lines2[header + 1: header + 5]] == [r[:5] for r in rows]


def test_simulate_csv_with_workload_file_and_one_method(capsys):
    rc, out, _ = run(["simulate", GOOD, "--workload", DATA / "marginals_cli_workload.json", "--rho", "0.5",
                      "--mechanism", "rp", "--method", "mle", "--bins", "4", "--binning", "width"], capsys)
    assert rc == 0 and out.startswith(SIMULATION_NOTICE + "\n")
    assert "workload: 3 marginal(s) (2/3-way)" in out and "sizes 3×4×4×2" in out
    table = out.split("analytic_variance\n")[1].splitlines()
    assert len(table) == 1 and table[0].split()[0] == "mle"
    rc, out, _ = run(["simulate", GOOD, "--workload", "1", "--rho", "0.5", "--mechanism", "rp", "--method", "trunc",
                      "--attributes", "flag,color", "--seed", "1"], capsys)
    assert rc == 0 and "sizes 2×3" in out


# ---- release -------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("mechanism", "method"), [("rp", "mle"), ("mwem", "lnn")])
def test_release_writes_json_and_meta(tmp_path, capsys, mechanism, method):
    out = tmp_path / "rel.json"
    argv = ["release", GOOD, "--workload", "2", *BUDGET, "--mechanism", mechanism, "--method", method,
            "--output", out, "--lnn-rounds", "300", "--domain", GOOD_DOMAIN]
    rc, stdout, _ = run(argv, capsys)
    assert rc == 0 and stdout.splitlines()[0] == RELEASE_NOTICE
    first = json.loads(out.read_text())
    meta = json.loads((tmp_path / "rel.json.meta.json").read_text())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rel.json", "rel.json.meta.json"]  # no temp files left
    data = read_table(GOOD, domain=read_declaration(GOOD_DOMAIN))
    assert meta["structure"] == {"source": "declared", "declaration": str(GOOD_DOMAIN)}
    assert meta["categories"]["color"] == ["blue", "green", "red", "purple"] and "notice" not in first
    assert STRUCTURE_FROM_DATA_NOTICE not in stdout + json.dumps(meta)
    truth = data.marginals(workload_cliques(data.domain, 2))
    assert [m["attributes"] for m in first["marginals"]] == [list(data.domain.names(g)) for g in truth]
    for m, g in zip(first["marginals"], truth, strict=True):
        v = np.asarray(m["values"])
        assert v.size == truth[g].size and np.isfinite(v).all() and not np.allclose(v, truth[g])
        if method == "lnn":
            assert v.min() >= 0
    assert meta["mode"] == "release" and meta["capability"] == "marginals" and meta["method"] == method
    assert "discrete Gaussian" in meta["noise_explanation"]
    assert abs(sum(b["rho"] for b in meta["budget_breakdown"]) - meta["rho"]) < 1e-12
    # stdout holds nothing truth-derived: no N, no true cell count of a two-way marginal
    assert str(data.N) not in stdout and f"{data.N:,}" not in stdout
    # fresh noise every run
    rc, _, _ = run(argv, capsys)
    assert rc == 0 and json.loads(out.read_text()) != first


def test_release_refuses_a_seed(tmp_path, capsys):
    out = tmp_path / "r.json"
    rc, stdout, err = run(["release", "sample:titanic", "--workload", "2", *BUDGET, "--mechanism", "rp",
                           "--method", "mle", "--output", out, "--seed", "3"], capsys)
    one_line_error(rc, err, "--seed", "simulate")
    assert stdout == "" and not out.exists()


def test_release_never_over_the_input(tmp_path, capsys):
    src = tmp_path / "in.csv"
    shutil.copy(GOOD, src)
    before = src.read_bytes()
    rc, _, err = run(["release", src, "--workload", "2", *BUDGET, "--mechanism", "rp", "--method", "mle",
                      "--output", src], capsys)
    one_line_error(rc, err, "input")
    assert src.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["in.csv"]


def _too_big_csv(path: Path) -> Path:
    rows = ["w,x,y,z"] + [f"w{i},x{i},y{i},z{i}" for i in range(120)]
    path.write_text("\n".join(rows) + "\n")
    return path


@pytest.mark.parametrize(("data", "extra", "needles"), [
    (DATA / "marginals_cli_empty.csv", [], ["empty"]),
    (DATA / "marginals_cli_single_valued.csv", [], ["const"]),
    (GOOD, ["--workload-file", DATA / "marginals_cli_workload_unknown.json"], ["weight"]),
    ("TOO_BIG", ["--workload", "4"], ["cells"]),
    (GOOD, ["--attributes", "color,nope"], ["nope"]),
    ("sample:nope", [], ["sample:titanic"]),
    (DATA / "missing.csv", [], ["does not exist"]),
    (GOOD, ["--epsilon", "-1"], ["epsilon"]),
    (GOOD, ["--rounds", "0", "--mechanism", "mwem"], ["rounds"]),
    (GOOD, ["--workload", "9"], ["k = 9"]),
])
@pytest.mark.parametrize("verb", ["simulate", "release"])
def test_bad_inputs_exit_2_with_one_line_and_no_file(tmp_path, capsys, verb, data, extra, needles):
    if data == "TOO_BIG":
        data = _too_big_csv(tmp_path / "big.csv")
    out = tmp_path / "out.json"
    args = {"--workload": "2", "--epsilon": "1", "--delta": "1e-9", "--mechanism": "rp", "--method": "mle"}
    flags = list(extra)
    if "--workload-file" in flags:
        i = flags.index("--workload-file")
        flags[i] = "--workload"
    for key, value in args.items():
        if key not in flags:
            flags += [key, value]
    if verb == "release":
        flags += ["--output", out]
        if not str(data).startswith("sample:"):
            flags += ["--structure-from-data"]  # the error under test, not the missing declaration
    else:
        flags += ["--seed", "1"]
    rc, stdout, err = run([verb, data, *flags], capsys)
    one_line_error(rc, err, *needles)
    assert not out.exists() and not (tmp_path / "out.json.meta.json").exists()
    if verb == "release":
        assert stdout == ""


# ---- reconstruct ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("method", ["mle", "lnn"])
def test_reconstruct(tmp_path, capsys, method):
    out = tmp_path / "rec.json"
    rc, stdout, _ = run(["reconstruct", MEAS, "--method", method, "--output", out], capsys)
    assert rc == 0 and "post-processing" in stdout
    got = json.loads(out.read_text())
    expected = reconstruct(json.loads(MEAS.read_text()), method)
    assert [m["attributes"] for m in got["marginals"]] == [["a", "b"], ["b", "c"], ["a", "c"]]
    for g, e in zip(got["marginals"], expected["marginals"], strict=True):
        np.testing.assert_allclose(g["values"], e["values"], rtol=1e-12)


@pytest.mark.parametrize(("name", "needles"), [
    ("marginals_cli_meas_bad_sigma.json", ["measurements[2]", "sigma"]),
    ("marginals_cli_meas_bad_length.json", ["measurements[4]", "expected 6 values"]),
    ("marginals_cli_meas_malformed.json", ["not valid JSON"]),
    ("marginals_cli_empty.csv", ["empty"]),
    ("missing.json", ["does not exist"]),
])
def test_reconstruct_bad_inputs(tmp_path, capsys, name, needles):
    out = tmp_path / "rec.json"
    rc, _, err = run(["reconstruct", DATA / name, "--method", "mle", "--output", out], capsys)
    one_line_error(rc, err, *needles)
    assert not out.exists()


def test_reconstruct_never_over_its_input(tmp_path, capsys):
    src = tmp_path / "meas.json"
    shutil.copy(MEAS, src)
    rc, _, err = run(["reconstruct", src, "--method", "mle", "--output", src], capsys)
    one_line_error(rc, err, "input")
    assert src.read_bytes() == MEAS.read_bytes()


def test_argument_errors_are_one_line(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["marginals", "release", "sample:titanic", "--workload", "2", *BUDGET, "--mechanism", "rp",
                  "--method", "trunc", "--output", str(tmp_path / "x.json")])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "trunc" in err


def test_help_lists_the_three_forms():
    out = subprocess.run([sys.executable, "-m", "dpviz", "marginals", "--help"], capture_output=True, text=True, check=False,
                         cwd=ROOT)
    assert out.returncode == 0
    for verb in ("simulate", "release", "reconstruct"):
        assert verb in out.stdout
