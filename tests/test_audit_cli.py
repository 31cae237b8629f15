"""``python -m dpviz audit ...``: output, verdict, progress on stderr, exit codes, lazy imports."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from dpviz.cli import main
from tests.apptest_helpers import ROOT


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    rc = main(["audit", *argv])
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_audit_tree_prints_events_bounds_and_a_verdict(capsys):
    rc, out, err = _run(capsys, "tree", "--epsilon", "1", "--trials", "300", "--seed", "4")
    assert rc == 0
    assert "audit tree" in out and "seed: 4" in out and "simulation" in out
    assert re.search(r"D0: \d+/150 = [0-9.]+\s+CP \[[0-9.]+, [0-9.]+\]", out)
    assert re.search(r"epsilon_lower: [0-9.]+\s+claimed epsilon: 1", out)
    assert "verdict: CONSISTENT" in out
    assert "audit: 600/600 releases (100%)" in err  # progress on stderr, not stdout
    assert "releases (" not in out


def test_audit_is_reproducible_with_a_seed(capsys):
    first = _run(capsys, "stream", "--trials", "200", "--seed", "9", "--quiet")
    second = _run(capsys, "stream", "--trials", "200", "--seed", "9", "--quiet")
    assert first[0] == second[0] == 0 and first[1] == second[1] and first[2] == ""


def test_audit_marginals_reports_delta(capsys):
    rc, out, _ = _run(capsys, "marginals", "--epsilon", "2", "--delta", "1e-5", "--trials", "200", "--seed", "1",
                      "--quiet")
    assert rc == 0 and "δ = 1e-05" in out and "verdict: CONSISTENT" in out


@pytest.mark.parametrize("argv,needle", [
    (["tree", "--trials", "0"], "--trials"),
    (["tree", "--alpha", "1.5"], "--alpha"),
    (["tree", "--seed", "-2"], "--seed"),
    (["tree", "--epsilon", "-1"], "epsilon"),
    (["tree", "--method", "nope"], "--method"),
    (["stream", "--mechanism", "nope"], "nope"),
    (["graph", "--method", "nope"], "--method"),
])
def test_bad_input_exits_2_with_one_line(capsys, argv, needle):
    rc, out, err = _run(capsys, *argv)
    assert rc == 2
    assert err.count("\n") == 1 and err.startswith("dpviz: error:") and needle in err
    assert "Traceback" not in err


def test_bad_flags_exit_2(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["audit", "graph", "--trials", "many"])
    assert exc.value.code == 2 and "--trials" in capsys.readouterr().err


def test_help_lists_audit_and_does_not_import_the_auditor():
    code = ("import sys; from dpviz.cli import build_parser; h = build_parser().format_help(); "
            "print(sorted(m for m in sys.modules if m.startswith('dpviz.audit')), 'audit' in h)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    # the parser knows the audit group, but neither the auditor nor the targets were imported
    assert proc.stdout.split() == ["['dpviz.audit',", "'dpviz.audit.cli']", "True"]


def test_audit_graph_flags_published_drf_and_exits_0(capsys):
    rc, out, _ = _run(capsys, "graph", "--method", "drf", "--epsilon", "1", "--trials", "300", "--seed", "2",
                      "--quiet")
    assert rc == 0 and "verdict: VIOLATION" in out and "edge {20, 35} appears in the output" in out
    assert "published; not edge-DP" in out
