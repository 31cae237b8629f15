"""Crash and concurrency safety of the ledger, with real processes (``python -m dpviz``).

* Two releases at once against a budget that fits one: exactly one is written, the other exits 3 with
  no output — whether they start together or the second arrives while the first holds the charge
  transaction (test hook ``DPVIZ_LEDGER_TEST_PAUSE_IN_CHARGE``).
* A release killed with SIGKILL between the charge and the write (test hook
  ``DPVIZ_LEDGER_TEST_PAUSE_AFTER_CHARGE``) leaves the budget charged and no output, not even a
  temporary file.
"""

import os
import signal
import subprocess
import sys

import pytest

from dpviz.cli import main
from dpviz.ledger import PAUSE_AFTER_CHARGE_ENV, file_sha256
from dpviz.ledger.accounts import DatasetBudget
from dpviz.ledger.identity import identify, load_for_ledger
from dpviz.ledger.store import PAUSE_IN_CHARGE_ENV, open_ledger
from tests.apptest_helpers import ROOT

TREE = str(ROOT / "tests" / "data" / "tree_good.csv")
pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="POSIX signals")


def env_for(tmp_path, **extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("DPVIZ_LEDGER")}
    return {**env, "XDG_DATA_HOME": str(tmp_path / "xdg"), "DPVIZ_LEDGER": str(tmp_path / "l.sqlite3"), **extra}


def dpviz(*argv):
    return [sys.executable, "-m", "dpviz", *map(str, argv)]


def release(out):
    return dpviz("tree", "release", TREE, "--structure-from-data", "--epsilon", "0.7", "--output", out)


def set_budget(tmp_path):
    """ε = 1 for the tree file (in this process: the releases below are the processes under test)."""
    with open_ledger(tmp_path / "l.sqlite3", create=True) as led:
        led.set_budget(identify("tree", TREE, load_for_ledger("tree", TREE)), DatasetBudget(1.0))


def start(tmp_path, argv, **extra):
    return subprocess.Popen(argv, cwd=ROOT, env=env_for(tmp_path, **extra), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def ledger_releases(tmp_path):
    with open_ledger(tmp_path / "l.sqlite3", readonly=True) as led:
        return led.releases()


def check_exactly_one(tmp_path, procs, outs):
    results = [p.communicate(timeout=180) for p in procs]
    codes = [p.returncode for p in procs]
    assert sorted(codes) == [0, 3], results
    winner, loser = (0, 1) if codes[0] == 0 else (1, 0)
    assert outs[winner].exists() and not outs[loser].exists()
    assert not outs[loser].with_name(outs[loser].name + ".meta.json").exists()
    assert "remaining: a Laplace (pure) release of ε ≤ 0.3" in results[loser][1]
    [r] = ledger_releases(tmp_path)
    assert r.status == "written" and r.output_sha256 == file_sha256(outs[winner])


def test_two_releases_started_together_get_exactly_one(tmp_path):
    set_budget(tmp_path)
    outs = [tmp_path / "a.csv", tmp_path / "b.csv"]
    procs = [start(tmp_path, release(o)) for o in outs]
    check_exactly_one(tmp_path, procs, outs)


def test_a_release_waits_for_the_charge_in_progress_then_is_refused(tmp_path):
    set_budget(tmp_path)
    outs = [tmp_path / "a.csv", tmp_path / "b.csv"]
    first = start(tmp_path, release(outs[0]), **{PAUSE_IN_CHARGE_ENV: "4"})
    assert "holding the charge transaction" in first.stderr.readline()  # it holds the write lock now
    second = start(tmp_path, release(outs[1]))
    check_exactly_one(tmp_path, [first, second], outs)
    assert second.returncode == 3  # it read the budget only after the first had committed


def test_sigkill_between_charge_and_write_keeps_the_charge_and_writes_nothing(tmp_path, monkeypatch, capsys):
    set_budget(tmp_path)
    out = tmp_path / "a.csv"
    proc = start(tmp_path, release(out), **{PAUSE_AFTER_CHARGE_ENV: "60"})
    line = proc.stderr.readline()
    assert "ledger: charged release" in line, line + proc.stderr.read()
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    leftovers = {p.name for p in tmp_path.iterdir()} - {"l.sqlite3", "l.sqlite3-wal", "l.sqlite3-shm"}
    assert leftovers == set()  # no output, no description, no temporary file
    [r] = ledger_releases(tmp_path)
    assert r.status == "charged" and r.output_sha256 is None and r.charge_epsilon == 0.7
    # the budget stays charged: another ε = 0.7 no longer fits (conservative)
    monkeypatch.setenv("DPVIZ_LEDGER", str(tmp_path / "l.sqlite3"))
    with pytest.raises(SystemExit) as exc:
        main(release(tmp_path / "b.csv")[3:])
    assert exc.value.code == 3 and not (tmp_path / "b.csv").exists()
    assert main(["ledger", "show", TREE, "--capability", "tree"]) == 0
    shown = capsys.readouterr().out
    assert "charged, no output recorded" in shown and "spent: ε = 0.7" in shown
