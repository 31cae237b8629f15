"""``python -m dpviz ledger ...`` and the ledger charge of every ``release`` command (in process)."""

import json
import subprocess
import sys

import pandas as pd
import pytest

from dpviz.cli import main
from dpviz.ledger import file_sha256
from dpviz.ledger.store import open_ledger
from tests.apptest_helpers import ROOT

DATA = ROOT / "tests" / "data"
TREE = str(DATA / "tree_good.csv")
TREE_REL = ["tree", "release", TREE, "--structure-from-data"]  # the hierarchy read from the file (not private)
RELEASES = {  # one cheap release per capability (argv before --output, mechanism): one fits (0.8, 1e-6), two do not
    "tree": ([*TREE_REL, "--epsilon", "0.5"], "gmc"),
    "stream": (["stream", "release", str(DATA / "stream_good.csv"), "--mechanism", "fenwick-fda", "--epsilon", "0.5"],
               "fenwick-fda"),
    "marginals": (["marginals", "release", "sample:titanic", "--workload", "1", "--rho", "0.01", "--mechanism", "rp",
                   "--method", "mle"], "rp"),
    "graph": (["graph", "release", "sample:karate", "--epsilon", "0.5", "--method", "quadtree"], "quadtree"),
}


@pytest.fixture(autouse=True)
def _no_home(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("DPVIZ_LEDGER", raising=False)
    monkeypatch.chdir(ROOT)


def run(capsys, *argv):
    """(exit code, stdout, stderr) of ``python -m dpviz ARGV`` in process."""
    capsys.readouterr()
    try:
        rc = main([str(a) for a in argv])
    except SystemExit as exc:
        rc = exc.code
    out, err = capsys.readouterr()
    return rc, out, err


def releases(path):
    with open_ledger(path, readonly=True) as led:
        return led.releases()


@pytest.mark.parametrize("cap", list(RELEASES))
def test_every_release_charges_then_writes_and_refuses_over_budget(cap, tmp_path, capsys):
    argv, mechanism = RELEASES[cap]
    led, out, out2 = tmp_path / "l.sqlite3", tmp_path / "a.out", tmp_path / "b.out"
    data = argv[2]
    flags = ["--capability", cap] if not data.startswith("sample:") else []
    rc, _, err = run(capsys, "ledger", "set-budget", data, *flags, "--epsilon", "0.8", "--delta", "1e-6",
                     "--ledger", led)
    assert rc == 0, err
    rc, stdout, err = run(capsys, *argv, "--output", out, "--ledger", led)
    assert rc == 0, err
    assert "ledger: charged" in err and "remaining ε" in err and "ledger:" not in stdout
    [r] = releases(led)
    assert (r.capability, r.mechanism, r.status) == (cap, mechanism, "written")
    assert r.output == str(out.resolve()) and r.output_sha256 == file_sha256(out)
    # the dataset's fingerprint stays in the ledger: not printed, not in the release's description
    assert r.dataset[:12] not in stdout + err
    assert r.dataset not in (tmp_path / "a.out.meta.json").read_text()
    # a second release that does not fit: exit 3, one line with what remains, nothing written
    rc, stdout, err = run(capsys, *argv, "--output", out2, "--ledger", led)
    assert rc == 3 and len(err.strip().splitlines()) == 1 and "remaining" in err and "nothing was written" in err
    assert not out2.exists() and not (tmp_path / "b.out.meta.json").exists()
    assert len(releases(led)) == 1


def test_gaussian_release_against_a_pure_budget_is_refused(tmp_path, capsys):
    led = tmp_path / "l.sqlite3"
    assert run(capsys, "ledger", "set-budget", TREE, "--capability", "tree", "--epsilon", "10", "--ledger", led)[0] == 0
    rc, _, err = run(capsys, *TREE_REL, "--rho", "0.001", "--output", tmp_path / "o.csv", "--ledger", led)
    assert rc == 3 and "pure ε budget admits no Gaussian release" in err and not (tmp_path / "o.csv").exists()


def test_without_a_budget_releases_are_recorded_and_never_refused(tmp_path, capsys, monkeypatch):
    led = tmp_path / "env.sqlite3"
    monkeypatch.setenv("DPVIZ_LEDGER", str(led))  # explicit: created on first use
    for i in range(3):
        rc, _, err = run(capsys, *TREE_REL, "--epsilon", "5", "--output", tmp_path / f"{i}.csv")
        assert rc == 0 and "no budget set" in err, err
    with open_ledger(led, readonly=True) as ledger:
        [d] = ledger.datasets()
    assert d.budget is None and d.spent.releases == 3 and d.spent.pure_epsilon == 15.0
    rc, stdout, _ = run(capsys, "ledger", "show")
    row = stdout.splitlines()[-1]  # no budget: nothing remains to show, as "—", never "None" or "nan"
    assert rc == 0 and row.split()[-3:] == ["—"] * 3 and "None" not in stdout and "nan" not in stdout


def test_every_release_is_charged_the_default_ledger_is_created_by_the_first(tmp_path, capsys):
    default = tmp_path / "xdg" / "dpviz" / "ledger.sqlite3"
    rc, stdout, _ = run(capsys, "ledger", "show")
    assert rc == 0 and "no ledger at" in stdout and not (tmp_path / "xdg").exists()  # `show` creates nothing
    rc, _, err = run(capsys, *TREE_REL, "--epsilon", "1", "--output", tmp_path / "a.csv")
    assert rc == 0 and f"ledger: created {default}" in err and "charged ε = 1" in err, err
    rc, _, err = run(capsys, *TREE_REL, "--epsilon", "1", "--output", tmp_path / "b.csv")
    assert rc == 0 and "ledger: created" not in err and "in 2 release(s)" in err, err
    with open_ledger(default, readonly=True) as ledger:
        [d] = ledger.datasets()
    assert d.spent.releases == 2 and d.spent.pure_epsilon == 2.0


def test_foreign_ledger_file_fails_the_release_and_is_kept(tmp_path, capsys):
    foreign = tmp_path / "notes.db"
    foreign.write_text("my notes\n")
    rc, _, err = run(capsys, *TREE_REL, "--epsilon", "1", "--output", tmp_path / "o.csv",
                     "--ledger", foreign)
    assert rc == 2 and "not a dpviz ledger" in err and len(err.strip().splitlines()) == 1
    assert foreign.read_text() == "my notes\n" and not (tmp_path / "o.csv").exists()


def test_bad_output_costs_nothing(tmp_path, capsys):
    led = tmp_path / "l.sqlite3"
    for out in (tmp_path / "missing" / "o.csv", TREE):  # a folder that does not exist; the input itself
        rc, _, err = run(capsys, *TREE_REL, "--epsilon", "1", "--output", out, "--ledger", led)
        assert rc == 2 and "--output" in err
    assert not led.exists()  # refused before the ledger was even opened


def test_one_file_is_one_dataset_whatever_the_attributes(tmp_path, capsys):
    led, csv = tmp_path / "l.sqlite3", DATA / "marginals_cli_good.csv"
    for i, attrs in enumerate(("color,size", "age,flag")):
        rc, _, err = run(capsys, "marginals", "release", csv, "--structure-from-data",
                         "--attributes", attrs, "--workload", "1", "--rho", "0.1",
                         "--mechanism", "rp", "--method", "mle", "--output", tmp_path / f"{i}.json", "--ledger", led)
        assert rc == 0, err
    with open_ledger(led, readonly=True) as ledger:
        [d] = ledger.datasets()
    assert d.spent.releases == 2 and d.spent.gauss_rho == pytest.approx(0.2)


def test_show_set_budget_and_export(tmp_path, capsys):
    led = tmp_path / "l.sqlite3"
    rc, _, err = run(capsys, "ledger", "set-budget", TREE, "--epsilon", "1", "--hierarchy", TREE, "--ledger", led)
    assert rc == 2 and "--capability" in err  # a load option parses a pre-counted file: --capability needed
    rc, _, err = run(capsys, "ledger", "set-budget", "nothing-here", "--epsilon", "1", "--ledger", led)
    assert rc == 2 and "no such file, sample or dataset id" in err
    rc, _, err = run(capsys, *TREE_REL, "--epsilon", "0.4", "--output", tmp_path / "a.csv",
                     "--ledger", led)
    assert rc == 0, err
    [r] = releases(led)
    rc, stdout, err = run(capsys, "ledger", "set-budget", r.dataset[:8], "--epsilon", "0.3", "--ledger", led)
    assert rc == 0 and "budget of" in stdout and "already spent more" in err
    rc, _, err = run(capsys, *TREE_REL, "--epsilon", "0.01", "--output", tmp_path / "b.csv",
                     "--ledger", led)
    assert rc == 3 and "ε ≤ 0" in err
    rc, stdout, _ = run(capsys, "ledger", "show", "--ledger", led)
    assert rc == 0 and "1 dataset(s), 1 release(s)" in stdout and r.dataset[:12] in stdout
    assert "None" not in stdout and "inf" not in stdout and "nan" not in stdout  # words or "—" (issue 19)
    rc, stdout, _ = run(capsys, "ledger", "show", TREE, "--capability", "tree", "--ledger", led)
    assert rc == 0 and f"dataset {r.dataset}" in stdout and r.output_sha256 in stdout and "ε = 0.3" in stdout
    rc, stdout, _ = run(capsys, "ledger", "show", "sample:county", "--ledger", led)
    assert rc == 0 and "is not in the ledger" in stdout
    assert run(capsys, "ledger", "export", "--output", tmp_path / "e.json", "--ledger", led)[0] == 0
    exported = json.loads((tmp_path / "e.json").read_text())
    assert exported["datasets"][0]["releases"][0]["output_sha256"] == r.output_sha256
    assert exported["datasets"][0]["budget"] == {"epsilon": 0.3, "delta": None}
    assert run(capsys, "ledger", "export", "--output", tmp_path / "e.csv", "--ledger", led)[0] == 0
    df = pd.read_csv(tmp_path / "e.csv")
    assert list(df["dataset"]) == [r.dataset] and list(df["charge"]) == ["ε = 0.4 (pure)"]
    rc, _, err = run(capsys, "ledger", "export", "--output", tmp_path / "e.txt", "--ledger", led)
    assert rc == 2 and ".json" in err


def test_registrar_imports_nothing_heavy():
    code = ("import sys, argparse, dpviz.ledger.cli as c; p = argparse.ArgumentParser(); "
            "c.register(p.add_subparsers()); "
            "heavy = ('numpy', 'pandas', 'scipy', 'sqlite3', 'dpviz.ledger.store'); "
            "print(sorted(m for m in heavy if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=False)
    assert proc.returncode == 0 and proc.stdout.strip() == "[]", proc.stderr
