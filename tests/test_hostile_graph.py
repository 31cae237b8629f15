"""Hostile graph command lines (issue 17, point 6): one case per graph item, table-driven.

Every refused case exits 2 with one ``dpviz: error:`` line on stderr, writes no file and charges nothing to
the ledger (initialised in the working folder and named by ``--ledger`` where the command is a release).
Commands run in-process through :func:`tests.cli_helpers.run_group`, under an alarm so that a command that
would block (a FIFO read) fails the test instead of hanging it.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpviz.graph import baselines
from dpviz.graph.model import DEGREE_SENSITIVITY
from dpviz.graph.strategy import L1_SENSITIVITIES
from tests.cli_helpers import run_group

EDGES = "a,b\nb,c\nc,a\n"
WIDE_100K = ",".join(str(i) for i in range(100_000))
"""One line of 10⁵ fields: took 39 s and 879 MB before the line cap."""


@pytest.fixture
def work(tmp_path, monkeypatch, capsys):
    """A working folder with ``e.csv``, ``nodes.txt`` and an empty ledger ``l.sqlite``; an alarm of 60 s."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "e.csv").write_text(EDGES, encoding="utf-8")
    (tmp_path / "nodes.txt").write_text("a\nb\nc\n", encoding="utf-8")
    assert run_group("ledger", ["init", "--ledger", "l.sqlite"], capsys)[0] == 0

    def hang(signum, frame):
        raise TimeoutError("the command blocked")

    old = signal.signal(signal.SIGALRM, hang)
    signal.alarm(60)
    yield tmp_path
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


def releases(capsys) -> str:
    rc, out, err = run_group("ledger", ["show", "--ledger", "l.sqlite"], capsys)
    assert rc == 0, err
    return out.splitlines()[0]


def _files(folder: Path) -> set[Path]:
    return {p for p in folder.rglob("*") if not p.name.startswith("l.sqlite")}


def refused(work: Path, capsys, argv: list, needles: tuple[str, ...]) -> str:
    """``graph ARGV``: exit 2, one stderr line with every needle, no file written, nothing charged."""
    before = _files(work)
    rc, _, err = run_group("graph", argv, capsys)
    lines = err.strip().splitlines()
    assert rc == 2 and len(lines) == 1 and lines[0].startswith("dpviz: error: "), (argv, rc, err)
    assert "Traceback" not in err and "Warning" not in err
    for n in needles:
        assert n in lines[0], (n, lines[0])
    assert _files(work) == before, _files(work) - before
    assert releases(capsys).endswith("0 release(s)")
    return lines[0]


def _write(name: str, data: str | bytes) -> Callable[[Path], str]:
    def make(work: Path) -> str:
        (work / name).write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
        return name
    return make


def _fifo(name: str) -> Callable[[Path], str]:
    def make(work: Path) -> str:
        os.mkfifo(work / name)
        return name
    return make


def _read_only(work: Path) -> str:
    """A folder no process can create a file in, root included (sysfs; a chmod 555 folder is writable by root)."""
    return "/sys"


REL = ["release", "e.csv", "--epsilon", "1", "--ledger", "l.sqlite", "--output", "o.csv"]
SIM = ["simulate", "e.csv", "--epsilon", "1", "--method", "random", "--seed", "1"]

# (id, setup {placeholder: make(work) -> path}, argv with {placeholders}, needles)
CASES = [
    # an edge list with one 10⁵-field line: refused while reading, naming the line and the cap
    ("wide-line-release", {"f": _write("wide.csv", EDGES + WIDE_100K + "\n0,1\n")},
     ["release", "{f}", "--epsilon", "1", "--n-nodes", "3", "--ledger", "l.sqlite", "--output", "o.csv"],
     ("line 4", "line cap", "--max-line-bytes")),
    ("wide-line-simulate", {"f": _write("wide.csv", WIDE_100K)},
     ["simulate", "{f}", "--epsilon", "1", "--method", "all"], ("line 1", "line cap")),
    ("wide-line-1m-fields", {"f": _write("wide.csv", "0,1\n" + ",".join(["7"] * 1_000_000))},
     ["describe-structure", "{f}", "--output", "n.txt"], ("line 2", "line cap")),
    ("wide-line-cr-ends", {"f": _write("wide.csv", "0,1\r1,2\r" + WIDE_100K)},
     ["simulate", "{f}", "--epsilon", "1", "--method", "random"], ("line 3", "line cap")),
    ("wide-line-nodes", {"n": _write("n.txt", "a\n" + "x" * 100_000 + "\n")},
     [*REL, "--nodes", "{n}"], ("--nodes", "line 2", "line cap")),
    # ε far below the noise the samplers can draw: one line, no ValueError, no RuntimeWarning
    ("epsilon-1e-300-simulate-all", {}, ["simulate", "sample:karate", "--epsilon", "1e-300", "--method", "all"],
     ("--epsilon", "1e-300", "below 1e-06")),
    ("epsilon-1e-300-release", {}, ["release", "sample:karate", "--epsilon", "1e-300", "--ledger", "l.sqlite",
                                    "--output", "o.csv"], ("--epsilon", "below 1e-06")),
    # outputs checked before the charge
    ("report-is-the-ledger", {}, [*REL, "--n-nodes", "3", "--report", "l.sqlite"], ("privacy ledger",)),
    ("output-is-the-ledger", {}, ["release", "e.csv", "--epsilon", "1", "--n-nodes", "3", "--ledger", "l.sqlite",
                                  "--output", "l.sqlite"], ("privacy ledger",)),
    ("partitions-read-only-folder", {"ro": _read_only},
     [*REL, "--n-nodes", "3", "--partitions", "{ro}/p.json"], ("/sys",)),
    ("report-parent-is-a-file", {}, [*REL, "--n-nodes", "3", "--report", "e.csv/r.json"], ("not a folder",)),
    ("partitions-is-the-declaration", {}, [*REL, "--nodes", "nodes.txt", "--partitions", "nodes.txt"],
     ("nodes.txt", "input")),
    ("output-name-too-long", {}, ["release", "e.csv", "--epsilon", "1", "--n-nodes", "3", "--ledger", "l.sqlite",
                                  "--output", "o" * 300 + ".csv"], ("too long",)),
    ("partitions-without-a-partition", {}, [*REL, "--n-nodes", "3", "--method", "degree", "--partitions", "p.json"],
     ("--partitions", "no partition")),
    # inputs that are not regular files are refused at once (a FIFO would block forever)
    ("fifo-edges-release", {"f": _fifo("pipe.csv")},
     ["release", "{f}", "--epsilon", "1", "--n-nodes", "3", "--ledger", "l.sqlite", "--output", "o.csv"],
     ("FIFO",)),
    ("fifo-nodes", {"f": _fifo("pipe.txt")}, [*REL, "--nodes", "{f}"], ("--nodes", "FIFO")),
    ("fifo-describe", {"f": _fifo("pipe.csv")}, ["describe-structure", "{f}", "--output", "n.txt"], ("FIFO",)),
    ("fifo-simulate-nodes", {"f": _fifo("pipe.txt")}, [*SIM, "--nodes", "{f}"], ("--nodes", "FIFO")),
    # the declared vertex set
    ("no-declaration", {}, REL, ("--nodes FILE", "--n-nodes N", "--structure-from-data")),
    ("two-declarations", {}, [*REL, "--nodes", "nodes.txt", "--n-nodes", "3"], ("give one of",)),
    ("nodes-duplicate", {"n": _write("n.txt", "a\nb\n\nb\n")}, [*REL, "--nodes", "{n}"],
     ("line 4", "'b'", "already on line 2")),
    ("nodes-empty", {"n": _write("n.txt", "\n\n")}, [*REL, "--nodes", "{n}"], ("no vertex id",)),
    ("nodes-missing", {}, [*REL, "--nodes", "nope.txt"], ("--nodes", "does not exist")),
    ("nodes-nul", {"n": _write("n.txt", b"a\n\0b\n")}, [*REL, "--nodes", "{n}"], ("line 2", "NUL")),
    ("n-nodes-above-cap", {}, [*REL, "--n-nodes", "10", "--max-nodes", "5"], ("--n-nodes", "vertex cap")),
]


@pytest.mark.parametrize("name,setup,argv,needles", CASES, ids=[c[0] for c in CASES])
def test_refused(work, capsys, name, setup, argv, needles):
    made = {key: make(work) for key, make in setup.items()}
    argv = [a.format(**made) for a in argv]
    t0 = time.perf_counter()
    refused(work, capsys, argv, needles)
    assert time.perf_counter() - t0 < 10, "refused, but slowly"


def test_degree_release_states_the_sensitivity_its_mechanism_uses(work, capsys):
    rc, _, err = run_group("graph", [*REL, "--n-nodes", "3", "--method", "degree"], capsys)
    assert rc == 0, err
    meta = json.loads((work / "o.csv.meta.json").read_text(encoding="utf-8"))
    assert meta["sensitivity"] == {"norm": "L1", "value": DEGREE_SENSITIVITY}  # was 1.0 while the noise used 2
    assert meta["sensitivities"] == L1_SENSITIVITIES["degree"]
    # the mechanism's noise really has scale DEGREE_SENSITIVITY / ε: E|Laplace(b)| = b
    n, eps = 400_000, 0.5
    noisy = baselines.noisy_degrees(np.zeros((0, 2), dtype=np.int64), n, eps, np.random.default_rng(3), False)
    assert abs(np.abs(noisy).mean() / (DEGREE_SENSITIVITY / eps) - 1) < 0.01


def test_vertex_labels_that_look_like_formulas_are_escaped(work, capsys):
    (work / "inj.csv").write_text('=1+1,@SUM(A1)\n@SUM(A1),b\n"=HYPERLINK(""http://x"",""y"")",b\n',
                                  encoding="utf-8")
    rc, _, err = run_group("graph", ["describe-structure", "inj.csv", "--output", "inj.txt"], capsys)
    assert rc == 0, err
    labels = (work / "inj.txt").read_text(encoding="utf-8").splitlines()
    assert labels == ["=1+1", "@SUM(A1)", "b", '=HYPERLINK("http://x","y")']  # the ids, as they are
    for raw in (False, True):
        out = work / f"o{raw}.csv"
        rc, _, err = run_group("graph", ["release", "inj.csv", "--epsilon", "30", "--method", "quadtree", "--nodes",
                                         "inj.txt", "--output", out, *(["--raw-text"] if raw else [])], capsys)
        assert rc == 0, err
        cells = set(pd.read_csv(out, dtype=str, keep_default_na=False).to_numpy().ravel())
        assert cells, "quadtree at ε = 30 releases the edges"
        formulas = {c for c in cells if c[:1] in "=+-@"}
        assert bool(formulas) == raw, cells  # escaped by default, as they are with --raw-text
        if not raw:
            assert {c.removeprefix("'") for c in cells} <= set(labels)


def test_an_upload_with_a_wide_line_is_refused_at_once():
    """The Graph page reads uploads with read_edges(bytes): a 25k-field line blocked it 11.8 s."""
    from dpviz.errors import InputError
    from dpviz.graph.io import read_edges

    raw = ("0,1\n" + ",".join(["9"] * 25_000) + "\n").encode()
    t0 = time.perf_counter()
    with pytest.raises(InputError, match=r"the upload, line 2: longer than the line cap"):
        read_edges(raw)
    assert time.perf_counter() - t0 < 2
    with pytest.raises(InputError, match=r"line 2: too many fields"):  # the cap raised: the parser's own error
        read_edges(raw, max_line_bytes=len(raw))
