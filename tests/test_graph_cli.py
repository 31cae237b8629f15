"""``python -m dpviz graph simulate|release`` through ``dpviz.cli.main``."""

import json
import re
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from dpviz import cli
from dpviz.core.modes import RELEASE_NOTICE, SIMULATION_NOTICE
from dpviz.graph.strategy import parse_split
from dpviz.graph.samples import load_karate_sample
from dpviz.graph.io import read_edges
from dpviz.graph.strategy import METHODS, NOT_PRIVATE_LABEL
from dpviz.errors import InputError
from tests.apptest_helpers import ROOT
from tests.cli_helpers import one_line_error, run_group

EDGES = "alice,bob\nbob,carol\ncarol,alice\ndave,alice\nerin,dave\nerin,frank\nfrank,alice\n"


def run(argv, capsys):
    return run_group("graph", argv, capsys)


@pytest.fixture
def edge_file(tmp_path):
    p = tmp_path / "people.csv"
    p.write_text(EDGES, encoding="utf-8")
    return p


# ---- parsing and errors (no method runs) --------------------------------------------------------------------------


def test_parse_split():
    assert parse_split("3:7:3") == (3.0, 7.0, 3.0)
    assert parse_split("1:1.5:0.5") == (1.0, 1.5, 0.5)
    assert parse_split(None) is None
    for bad in ("3:7", "3:7:3:1", "a:b:c", "3:0:3", "3:-1:3", "3:inf:3", ""):
        with pytest.raises(InputError, match="--budget-split: expected three positive numbers"):
            parse_split(bad)


@pytest.mark.parametrize("verb", ["simulate", "release"])
def test_bad_input_exits_2_with_one_line(verb, tmp_path, capsys, edge_file):
    extra = ["--method", "random"] if verb == "simulate" else ["--output", tmp_path / "o.csv",
                                                                "--structure-from-data"]
    cases = [
        ([tmp_path / "missing.csv", "--epsilon", "1"], ("does not exist", "sample:karate")),
        (["sample:nope", "--epsilon", "1"], ("unknown sample 'sample:nope'", "sample:email-enron")),
        ([edge_file, "--epsilon", "0"], ("--epsilon: expected a positive finite number",)),
        ([edge_file, "--epsilon", "nan"], ("--epsilon",)),
        ([edge_file, "--epsilon", "1", "--budget-split", "3:7"], ("--budget-split",)),
        ([edge_file, "--epsilon", "1", "--max-edges", "3"], ("edge rows, above the edge cap", "--max-edges N")),
        ([edge_file, "--epsilon", "1", "--max-bytes", "10"], ("above the size cap", "--max-bytes N")),
        ([edge_file, "--epsilon", "1", "--n-nodes", "0"], ("--n-nodes",)),
        ([tmp_path, "--epsilon", "1"], ("is a folder",)),
    ]
    for argv, needles in cases:
        rc, out, err = run([verb, *argv, *extra], capsys)
        one_line_error(rc, err, *needles)
        assert not (tmp_path / "o.csv").exists()
    empty = tmp_path / "empty.csv"
    empty.write_bytes(b"")
    one_line_error(*run([verb, empty, "--epsilon", "1", *extra], capsys)[::2], "is empty")
    bad = tmp_path / "bad.csv"
    bad.write_text("0,1\n1,2\n3\n", encoding="utf-8")
    one_line_error(*run([verb, bad, "--epsilon", "1", *extra], capsys)[::2], "line 3: expected two vertex ids")


def test_argparse_errors_are_one_line(capsys, edge_file):
    with pytest.raises(SystemExit) as exc:
        cli.main(["graph", "simulate", str(edge_file), "--epsilon", "1", "--method", "nope"])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "invalid choice" in err[0]


def test_release_refuses_drf_seed_and_overwriting(tmp_path, capsys, edge_file):
    out = tmp_path / "o.csv"
    rc, stdout, err = run(["release", edge_file, "--epsilon", "1", "--method", "drf", "--output", out], capsys)
    one_line_error(rc, err, "--method drf", NOT_PRIVATE_LABEL, "refused in release mode", "drf-dp")
    rc, stdout, err = run(["release", edge_file, "--epsilon", "1", "--seed", "3", "--output", out], capsys)
    one_line_error(rc, err, "--seed", "graph simulate")
    rc, stdout, err = run(["release", edge_file, "--epsilon", "1", "--output", edge_file], capsys)
    one_line_error(rc, err, "is the input file")
    rc, stdout, err = run(["release", edge_file, "--epsilon", "1", "--output", out, "--report", out], capsys)
    one_line_error(rc, err, "name the same file")
    rc, stdout, err = run(["release", edge_file, "--epsilon", "1", "--output", out, "--report",
                           tmp_path / "no" / "r.json"], capsys)
    one_line_error(rc, err, "does not exist")
    rc, stdout, err = run(["release", edge_file, "--epsilon", "1", "--method", "random", "--budget-split", "1:1:1",
                           "--output", out], capsys)
    one_line_error(rc, err, "--budget-split: applies to drf and drf-dp only")
    assert edge_file.read_text(encoding="utf-8") == EDGES and not out.exists() and stdout == ""


def test_help_lists_graph_samples_and_verbs():
    res = subprocess.run([sys.executable, "-m", "dpviz", "graph", "release", "--help"], capture_output=True,
                         text=True, cwd=ROOT)
    assert res.returncode == 0 and "--partitions" in res.stdout and "--report" in res.stdout
    assert "--seed" not in res.stdout
    res = subprocess.run([sys.executable, "-m", "dpviz", "--help"], capture_output=True, text=True, cwd=ROOT)
    assert res.returncode == 0 and "sample:hep-th (graph)" in res.stdout


# ---- end to end ---------------------------------------------------------------------------------------------------


def _simulate(capsys, *argv):
    rc, out, err = run(["simulate", "sample:karate", "--epsilon", "2", *argv], capsys)
    assert rc == 0, err
    return out


def test_simulate_all_methods_on_karate(capsys):
    out = _simulate(capsys, "--method", "all", "--seed", "7", "--budget-split", "3:7:3")
    lines = out.splitlines()
    assert lines[0] == SIMULATION_NOTICE
    assert "graph: karate: 34 vertices, 78 edges" in out and "seed 7" in out
    for method in METHODS:
        head = next(line for line in lines if line.startswith(f"{method} ("))
        assert "edges released" in head
    # every line about the published DRF says it is not edge-DP
    drf_lines = [line for line in lines if re.match(r"^\s*drf\b(?!-dp)", line)]
    assert drf_lines
    start = lines.index(next(line for line in lines if line.startswith("drf (")))
    end = next(i for i in range(start + 1, len(lines)) if not lines[i].startswith("    "))
    for line in lines[start:end] + drf_lines:
        assert NOT_PRIVATE_LABEL in line, line
    # budget totals equal ε for every method
    totals = [float(m.group(1)) for m in re.finditer(r"^\s+total\s+ε = ([0-9.e+-]+)", out, flags=re.M)]
    assert len(totals) == len(METHODS) and np.allclose(totals, 2.0, atol=1e-9)
    # the metrics table: one row per method with finite numbers
    table = lines[lines.index("metrics (simulation: released vs true graph):") + 1:]
    header = table[0].split()
    assert header[:3] == ["method", "n_edges_true", "n_edges_released"] and "degree_kl" in header
    rows = table[1:1 + len(METHODS)]
    assert [r.split()[0] for r in rows] == list(METHODS)
    for r in rows:
        numbers = r.split()[-len(header) + 1:]
        assert numbers[0] == "78" and all(np.isfinite(float(x)) for x in numbers)
    assert NOT_PRIVATE_LABEL in rows[list(METHODS).index("drf")]


def test_simulate_is_reproducible_per_method(capsys):
    def rows(text):
        return [line for line in text.splitlines() if " s; budget" not in line]  # drop the timing lines

    a = _simulate(capsys, "--method", "drf-dp", "--seed", "11")
    b = _simulate(capsys, "--method", "drf-dp", "--seed", "11")
    c = _simulate(capsys, "--method", "all", "--seed", "11")
    assert rows(a) == rows(b)
    row_a = [line for line in a.splitlines() if line.startswith("drf-dp ")][-1]  # its metrics row
    assert "edges released" not in row_a
    # a method's draw does not depend on which others run (same numbers; column widths may differ)
    assert row_a.split() in [line.split() for line in c.splitlines()]
    d = _simulate(capsys, "--method", "drf-dp", "--seed", "12")
    assert rows(d) != rows(a)

    def budget(text):
        return [line for line in text.splitlines() if "ε = " in line and line.startswith("    ")]

    e = _simulate(capsys, "--method", "drf-dp", "--seed", "11", "--budget-split", "1:1:1")
    assert budget(e) != budget(a) and budget(e)[-1] == budget(a)[-1]  # split passed on; same total ε
    assert budget(_simulate(capsys, "--method", "drf-dp", "--seed", "11", "--budget-split", "3:7:3")) == budget(a)
    rc, out, err = run(["simulate", "sample:karate", "--epsilon", "1", "--method", "degree", "--budget-split",
                        "1:1:1"], capsys)
    one_line_error(rc, err, "--budget-split: applies to drf and drf-dp only, not degree")


def test_release_drf_dp_writes_labels_report_partitions_and_no_truth(tmp_path, capsys, edge_file):
    out, rep, part = tmp_path / "rel.csv", tmp_path / "rep.json", tmp_path / "part.json"
    nodes = tmp_path / "people.txt"
    nodes.write_text("alice\nbob\ncarol\ndave\nerin\nfrank\n", encoding="utf-8")
    rc, stdout, err = run(["release", edge_file, "--epsilon", "3", "--output", out, "--report", rep,
                           "--partitions", part, "--nodes", nodes], capsys)
    assert rc == 0, err
    lines = stdout.splitlines()
    assert lines[0] == RELEASE_NOTICE and "drf-dp (edge-DP)" in lines[1] and "6 vertices" in lines[1]
    report = json.loads(rep.read_text(encoding="utf-8"))
    assert set(report) == {"budget", "method", "epsilon", "n_nodes", "n_edges_released", "structure", "mode"}
    assert report["structure"] == {"source": "declared", "declaration": "--nodes people.txt"}
    assert report["method"] == "drf-dp" and report["mode"] == "release" and report["n_nodes"] == 6
    assert abs(sum(report["budget"].values()) - 3.0) < 1e-9 and len(report["budget"]) >= 3
    df = pd.read_csv(out, dtype=str)
    assert list(df.columns) == ["u", "v"] and len(df) == report["n_edges_released"]
    assert set(df["u"]) | set(df["v"]) <= {"alice", "bob", "carol", "dave", "erin", "frank"}
    assert f"released {len(df):,} edges" in stdout
    meta = json.loads((tmp_path / "rel.csv.meta.json").read_text(encoding="utf-8"))
    assert meta["mode"] == "release" and meta["capability"] == "graph" and meta["budget"] == report["budget"]
    assert "samplers" in meta and "seed" not in json.dumps(meta).lower()
    truth_keys = {"n_edges", "n_edges_true", "self_loops", "duplicates", "edges"}
    assert not truth_keys & set(meta) and not truth_keys & set(report)
    assert "true" not in stdout.lower() and "note:" not in stdout
    p = json.loads(part.read_text(encoding="utf-8"))
    regions = p["partition"]
    assert p["method"] == "drf-dp" and len(regions["r0"]) == len(regions["noisy"]) >= 1
    assert sorted(p["order"]) == list(range(6)) and sorted(p["order_labels"]) == sorted(
        ["alice", "bob", "carol", "dave", "erin", "frank"])


def test_release_of_a_sample_reads_back_as_a_graph(tmp_path, capsys):
    out = tmp_path / "k.csv"
    rc, stdout, err = run(["release", "sample:karate", "--epsilon", "1", "--method", "quadtree", "--output", out],
                          capsys)
    assert rc == 0, err
    g = read_edges(out, n_nodes=load_karate_sample().n_nodes)
    assert g.notices == ()  # canonical: u < v, no duplicates, no self-loops
    assert f"released {g.n_edges:,} edges" in stdout
