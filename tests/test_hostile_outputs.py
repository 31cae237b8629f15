"""Hostile outputs and ledgers (issue 17, point 6): nothing lost, nothing charged for nothing, nothing hung.

Every case exits 2 with one line ``dpviz: error: ...``, writes nothing and charges nothing:

* an output that names the ledger (or its ``-wal``, through a link, or as the ``.meta.json`` of the
  output), an input, another output or the output's sidecar; an output in a folder that does not exist,
  under a regular file, or with a name (or temporary name) over the folder's NAME_MAX;
* a ledger or an input that is a FIFO (run as real processes with a timeout: a regression fails, it does
  not hang), a folder, a path with a 300-byte component;
* a read-only output folder and a read-only ledger. The tests run as root, for whom permission bits
  do not apply: a read-only *file system* does (``EROFS``), so those cases run the CLI inside
  ``unshare -m`` with the folder bind-mounted read-only; the read-only ledger *file* case runs the CLI as
  user ``nobody`` (``setpriv``). As a non-root user the same cases use ``chmod``;
* a locked ledger (busy beyond the timeout).

After the charge: a failed write leaves no file and one line saying the charge stands; a SIGKILL while
the temporary files exist leaves at worst those files, which the next run of the same command removes.
"""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from dpviz.cli import main
from dpviz.core.tables import PAUSE_BEFORE_RENAME_ENV
from dpviz.ledger.store import open_ledger
from tests.apptest_helpers import ROOT

TREE = ROOT / "tests" / "data" / "tree_good.csv"
TREE_REL = ["tree", "release", "--structure-from-data", "--epsilon", "0.5"]  # + INPUT
GRAPH_REL = ["graph", "release", "sample:karate", "--epsilon", "0.5", "--method", "quadtree"]
LONG = "n" * 300
ROOT_USER = os.geteuid() == 0


def run(argv) -> tuple[int, str, str]:
    import contextlib
    import io

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main([str(a) for a in argv])
        except SystemExit as exc:
            rc = exc.code if isinstance(exc.code, int) else 2
    return rc, out.getvalue(), err.getvalue()


def releases(ledger: Path) -> int:
    with open_ledger(ledger, readonly=True) as led:
        return len(led.releases())


def files(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*") if not p.name.endswith(("-wal", "-shm"))}


@pytest.fixture
def work(tmp_path, monkeypatch) -> Path:
    """A working folder with an empty ledger ``l.sqlite3`` that every release charges."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("DPVIZ_LEDGER", str(tmp_path / "l.sqlite3"))
    open_ledger(tmp_path / "l.sqlite3", create=True).close()
    (tmp_path / "afile").write_text("x\n")
    (tmp_path / "dir").mkdir()
    return tmp_path


def _ledger_at(work: Path, name: str) -> Path:
    open_ledger(work / name, create=True).close()
    return work / name


def _copy(work: Path, name: str) -> Path:
    shutil.copy(TREE, work / name)
    return work / name


def _link(work: Path, name: str, target: str, hard: bool = False) -> None:
    (os.link if hard else os.symlink)(work / target, work / name)


CASES = {  # name: (setup(work) -> argv, needle of the one error line)
    "output-is-ledger": (lambda w: [*TREE_REL, TREE, "--output", "l.sqlite3"], "privacy ledger"),
    "output-is-ledger-wal": (lambda w: [*TREE_REL, TREE, "--output", "l.sqlite3-wal"], "privacy ledger"),
    "output-links-to-ledger": (lambda w: (_link(w, "x.csv", "l.sqlite3"), [*TREE_REL, TREE, "--output", "x.csv"])[1],
                               "privacy ledger"),
    "output-hard-link-of-ledger": (lambda w: (_link(w, "h.csv", "l.sqlite3", hard=True),
                                              [*TREE_REL, TREE, "--output", "h.csv"])[1], "privacy ledger"),
    "sidecar-is-ledger": (lambda w: [*TREE_REL, TREE, "--output", "o.csv", "--ledger",
                                     _ledger_at(w, "o.csv.meta.json")], "privacy ledger"),
    "graph-report-is-ledger": (lambda w: [*GRAPH_REL, "--output", "g.csv", "--report", "l.sqlite3"], "privacy ledger"),
    "graph-partitions-is-ledger": (lambda w: [*GRAPH_REL, "--output", "g.csv", "--partitions", "l.sqlite3"],
                                   "privacy ledger"),
    "graph-output-is-report": (lambda w: [*GRAPH_REL, "--output", "g.csv", "--report", "g.csv"], "same file"),
    "graph-report-is-sidecar": (lambda w: [*GRAPH_REL, "--output", "g.csv", "--report", "g.csv.meta.json"], "same"),
    "graph-partitions-under-a-file": (lambda w: [*GRAPH_REL, "--output", "g.csv", "--partitions", "afile/p.json"],
                                      "not a folder"),
    "input-named-like-sidecar": (lambda w: [*TREE_REL, _copy(w, "in.csv.meta.json"), "--output", "in.csv"],
                                 "is the input file"),
    "output-hard-link-of-input": (lambda w: (_copy(w, "in.csv"), _link(w, "o.csv", "in.csv", hard=True),
                                             [*TREE_REL, "in.csv", "--output", "o.csv"])[2], "is the input file"),
    "parent-is-a-file": (lambda w: [*TREE_REL, TREE, "--output", "afile/o.csv"], "not a folder"),
    "parent-of-parent-is-a-file": (lambda w: [*TREE_REL, TREE, "--output", "afile/sub/o.csv"], "is a file"),
    "output-300-byte-name": (lambda w: [*TREE_REL, TREE, "--output", LONG + ".csv"], "too long"),
    "output-name-fits-but-not-its-temp-names": (lambda w: [*TREE_REL, TREE, "--output", "n" * 236 + ".csv"],
                                                "too long"),
    "output-300-byte-folder": (lambda w: [*TREE_REL, TREE, "--output", f"{LONG}/o.csv"], "too long"),
    "output-folder-missing": (lambda w: [*TREE_REL, TREE, "--output", "nope/o.csv"], "does not exist"),
    "output-is-a-folder": (lambda w: [*TREE_REL, TREE, "--output", "dir"], "directory"),
    "input-300-byte-name": (lambda w: [*TREE_REL, LONG + ".csv", "--output", "o.csv"], "too long"),
    "input-is-a-folder": (lambda w: [*TREE_REL, "dir", "--output", "o.csv"], "folder"),
    "ledger-300-byte-name": (lambda w: [*TREE_REL, TREE, "--output", "o.csv", "--ledger", LONG], "too long"),
    "ledger-is-a-folder": (lambda w: [*TREE_REL, TREE, "--output", "o.csv", "--ledger", "dir"], "is a folder"),
    "ledger-under-a-file": (lambda w: [*TREE_REL, TREE, "--output", "o.csv", "--ledger", "afile/l"], "cannot use"),
    "graph-ledger-300-byte-name": (lambda w: [*GRAPH_REL, "--output", "g.csv", "--ledger", LONG], "too long"),
    "ledger-init-300-byte-name": (lambda w: ["ledger", "init", "--ledger", LONG], "too long"),
    "ledger-show-300-byte-name": (lambda w: ["ledger", "show", "--ledger", LONG], "too long"),
    "ledger-set-budget-300-byte-name": (lambda w: ["ledger", "set-budget", "sample:county", "--epsilon", "1",
                                                   "--ledger", LONG], "too long"),
    "ledger-set-budget-data-300-bytes": (lambda w: ["ledger", "set-budget", LONG, "--epsilon", "1"], "no such file"),
    "ledger-export-over-ledger": (lambda w: ["ledger", "export", "--output", "e.json", "--ledger",
                                             _ledger_at(w, "e.json")], "privacy ledger"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_refused_before_the_charge(work, case):
    setup, needle = CASES[case]
    argv = setup(work)
    before = files(work)
    rc, _, err = run(argv)
    lines = err.strip().splitlines()
    assert rc == 2 and len(lines) == 1 and lines[0].startswith("dpviz: error: "), (argv, rc, err)
    assert needle in lines[0], lines[0]
    assert len(lines[0]) < 600
    assert files(work) == before, f"{case} wrote {files(work) - before}"
    assert releases(work / "l.sqlite3") == 0  # nothing charged, and the ledger is still a ledger


# ------------------------------------------------------------------------------------------- processes
def cli(*argv: object) -> list[str]:
    return [sys.executable, "-m", "dpviz", *map(str, argv)]


def env_for(work: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DPVIZ_")}
    return {**env, "XDG_DATA_HOME": str(work / "xdg"), "DPVIZ_LEDGER": str(work / "l.sqlite3"),
            "PYTHONPATH": str(ROOT), "OPENBLAS_NUM_THREADS": "1", **extra}


def one_line_refusal(proc: subprocess.CompletedProcess, needle: str) -> None:
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and lines[0].startswith("dpviz: error: "), proc.stderr
    assert needle in lines[0], lines[0]


def run_proc(work: Path, argv: list[str], **extra: str) -> subprocess.CompletedProcess:
    """Run ``argv`` with a timeout: a command that blocks (on a FIFO) fails the test instead of hanging it."""
    return subprocess.run(argv, cwd=work, env=env_for(work, **extra), capture_output=True, text=True, timeout=90)


FIFO_CASES = {
    "tree-release-ledger": lambda: cli(*TREE_REL, TREE, "--output", "o.csv", "--ledger", "fifo"),
    "graph-release-ledger": lambda: cli(*GRAPH_REL, "--output", "g.csv", "--ledger", "fifo"),
    "ledger-init": lambda: cli("ledger", "init", "--ledger", "fifo"),
    "ledger-show": lambda: cli("ledger", "show", "--ledger", "fifo"),
    "ledger-set-budget": lambda: cli("ledger", "set-budget", "sample:county", "--epsilon", "1", "--ledger", "fifo"),
    "env-ledger": lambda: cli(*TREE_REL, TREE, "--output", "o.csv"),  # DPVIZ_LEDGER=fifo
    "tree-release-input": lambda: cli(*TREE_REL, "fifo", "--output", "o.csv"),
    "ledger-set-budget-data": lambda: cli("ledger", "set-budget", "fifo", "--capability", "tree", "--epsilon", "1"),
}


@pytest.mark.parametrize("case", list(FIFO_CASES))
def test_a_fifo_is_refused_at_once(work, case):
    os.mkfifo(work / "fifo")
    extra = {"DPVIZ_LEDGER": str(work / "fifo")} if case == "env-ledger" else {}
    proc = run_proc(work, FIFO_CASES[case](), **extra)
    one_line_refusal(proc, "FIFO")
    assert releases(work / "l.sqlite3") == 0 and not (work / "o.csv").exists()


def read_only(folder: Path, argv: list[str]) -> list[str]:
    """``argv`` run with ``folder`` read-only: a read-only bind mount in a private mount namespace as root
    (root ignores permission bits, not EROFS), ``chmod 555`` otherwise."""
    if not ROOT_USER:
        folder.chmod(0o555)
        return argv
    assert shutil.which("unshare"), "unshare (util-linux) is needed to test a read-only folder as root"
    return ["unshare", "-m", "sh", "-c", 'mount --bind -o ro "$0" "$0" && exec "$@"', str(folder), *argv]


@pytest.mark.parametrize("argv, needle", [
    (cli(*TREE_REL, TREE, "--output", "ro/o.csv"), "not writable"),
    (cli(*GRAPH_REL, "--output", "g.csv", "--partitions", "ro/p.json"), "not writable"),
    (cli(*TREE_REL, TREE, "--output", "o.csv", "--ledger", "ro/l.sqlite3"), "read-only"),
    (cli(*GRAPH_REL, "--output", "g.csv", "--ledger", "ro/l.sqlite3"), "read-only"),
    (cli("ledger", "set-budget", "sample:county", "--epsilon", "1", "--ledger", "ro/l.sqlite3"), "read-only"),
    (cli("ledger", "init", "--ledger", "ro/new.sqlite3"), "read-only"),
], ids=["tree-output", "graph-partitions", "tree-ledger", "graph-ledger", "set-budget", "init"])
def test_a_read_only_folder_or_ledger_is_one_line(work, argv, needle):
    (work / "ro").mkdir()
    open_ledger(work / "ro" / "l.sqlite3", create=True).close()
    try:
        proc = run_proc(work, read_only(work / "ro", argv))
    finally:
        (work / "ro").chmod(0o755)
    one_line_refusal(proc, needle)
    assert releases(work / "l.sqlite3") == 0 and releases(work / "ro" / "l.sqlite3") == 0
    assert not (work / "g.csv").exists() and not (work / "o.csv").exists()


@pytest.mark.parametrize("argv", [
    [*TREE_REL, TREE, "--output", "o.csv", "--ledger", "l.sqlite3"],
    ["ledger", "set-budget", "sample:county", "--epsilon", "1", "--ledger", "l.sqlite3"],
], ids=["tree-release", "set-budget"])
def test_a_read_only_ledger_file_is_one_line(argv):
    """chmod 444, the CLI run as ``nobody`` when the tests run as root (in a folder it may write)."""
    work = Path(tempfile.mkdtemp(prefix="dpviz-ro-ledger-"))
    try:
        work.chmod(0o777)
        open_ledger(work / "l.sqlite3", create=True).close()
        (work / "l.sqlite3").chmod(0o444)
        cmd = cli(*argv)
        if ROOT_USER:
            assert shutil.which("setpriv"), "setpriv (util-linux) is needed to test a read-only ledger as root"
            cmd = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *cmd]
        proc = run_proc(work, cmd)
        one_line_refusal(proc, "read-only")
        assert not (work / "o.csv").exists() and releases(work / "l.sqlite3") == 0
    finally:
        shutil.rmtree(work)


def test_a_locked_ledger_is_one_line_after_the_timeout(work, monkeypatch):
    from dpviz.ledger import store

    monkeypatch.setattr(store, "BUSY_TIMEOUT", 0.2)
    holder = sqlite3.connect(work / "l.sqlite3", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another process is charging (and takes its time)
    try:
        for argv in ([*TREE_REL, TREE, "--output", "o.csv"],
                     ["ledger", "set-budget", "sample:county", "--epsilon", "1"]):
            rc, _, err = run(argv)
            assert rc == 2 and err.count("\n") == 1 and "is busy" in err and "nothing was" in err, err
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert not (work / "o.csv").exists() and releases(work / "l.sqlite3") == 0


# ------------------------------------------------------------------------------------ after the charge
def test_a_failed_write_after_the_charge_leaves_nothing_and_says_the_charge_stands(work, monkeypatch):
    real = os.replace

    def disk_full_on_the_output(src, dst):
        if Path(dst).name == "o.csv":  # the sidecar is already renamed by now: it must go again
            raise OSError(28, "No space left on device", str(dst))
        return real(src, dst)

    monkeypatch.setattr(os, "replace", disk_full_on_the_output)
    before = files(work)
    rc, _, err = run([*TREE_REL, TREE, "--output", "o.csv"])
    lines = err.strip().splitlines()
    assert rc == 2 and len(lines) == 1 and "No space left on device" in lines[0], err
    assert "the charge of release 1 (ε = 0.5 (pure))" in lines[0] and "stands; nothing was written" in lines[0]
    assert files(work) == before  # no output, no orphan sidecar, no temporary file
    with open_ledger(work / "l.sqlite3", readonly=True) as led:
        [r] = led.releases()
    assert r.status == "charged" and r.output_sha256 is None


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="POSIX signals")
def test_sigkill_while_writing_leaves_only_temp_files_which_the_next_run_removes(work):
    argv = cli(*TREE_REL, TREE, "--output", "o.csv")
    proc = subprocess.Popen(argv, cwd=work, env=env_for(work, **{PAUSE_BEFORE_RENAME_ENV: "60"}),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = proc.stderr.readline()
    assert "temporary files written" in line, line + proc.stderr.read()
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=60)
    temps = {p.name for p in work.iterdir() if p.name.endswith(".tmp")}
    assert temps and all(t.startswith((".o.csv.", ".o.csv.meta.json.")) for t in temps)
    assert not (work / "o.csv").exists() and not (work / "o.csv.meta.json").exists()  # no orphan sidecar
    assert releases(work / "l.sqlite3") == 1  # the charge stands (conservative)
    again = run_proc(work, argv)
    assert again.returncode == 0, again.stderr
    assert {p.name for p in work.iterdir() if p.name.endswith(".tmp")} == set()  # the rerun cleaned up
    assert (work / "o.csv").exists() and (work / "o.csv.meta.json").exists()


def test_formula_cells_in_a_tree_release_and_raw_text(work):
    (work / "t.csv").write_text('node,parent,count\n=1+1,,\n@SUM(A1),=1+1,3\n"=HYPERLINK(""http://x"",""y"")",=1+1,4\n'
                                "-2,=1+1,5\n+x,=1+1,6\n")
    assert run([*TREE_REL, "t.csv", "--output", "o.csv"])[0] == 0
    text = (work / "o.csv").read_text()
    for cell in ("'=1+1", "'@SUM(A1)", "'=HYPERLINK(", "'+x"):
        assert cell in text
    assert ("\n-2," in text or '\n"-2",' in text) and "'-2" not in text  # a plain number stays as it is
    assert run([*TREE_REL, "t.csv", "--output", "raw.csv", "--raw-text"])[0] == 0
    raw = (work / "raw.csv").read_text()
    assert ("\n=1+1," in raw or '\n"=1+1",' in raw) and "'" not in raw


def _open_fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="Linux: open descriptors are read from /proc")
def test_a_large_output_written_over_is_freed_on_a_thread_and_nothing_leaks(tmp_path, monkeypatch):
    """write_together holds the large file an output replaces and closes it on a thread (the rename then does
    not free its blocks): the new bytes are in place, the old file is closed afterwards (no descriptor left),
    and a small file, a hard-linked file or a symbolic link is replaced as before (not held)."""
    from dpviz.core import tables

    monkeypatch.setattr(tables, "FREE_LATER_BYTES", 1000)
    held: list[int | None] = []
    real = tables._hold_replaced
    monkeypatch.setattr(tables, "_hold_replaced", lambda p: held.append(real(p)) or held[-1])
    out = tmp_path / "out.csv"
    out.write_bytes(b"old\n" * 1000)
    before = _open_fds()
    tables.write_atomic(out, lambda fh: fh.write(b"new\n"))
    tables.wait_freed()
    assert out.read_bytes() == b"new\n" and held[-1] is not None  # held (4,000 bytes >= 1,000), then closed
    assert _open_fds() == before
    tables.write_atomic(out, lambda fh: fh.write(b"newer\n"))  # 4 bytes: below the size, not held
    assert held[-1] is None and out.read_bytes() == b"newer\n"
    out.write_bytes(b"old\n" * 1000)
    os.link(out, tmp_path / "other-name")  # another name keeps the blocks: nothing to free
    tables.write_atomic(out, lambda fh: fh.write(b"new\n"))
    assert held[-1] is None and (tmp_path / "other-name").read_bytes() == b"old\n" * 1000
    target = tmp_path / "target.csv"
    target.write_bytes(b"old\n" * 1000)
    link = tmp_path / "link.csv"
    link.symlink_to(target)
    tables.write_atomic(link, lambda fh: fh.write(b"new\n"))  # the link itself is replaced, not followed
    tables.wait_freed()
    assert held[-1] is None and link.read_bytes() == b"new\n" and not link.is_symlink()
    assert target.read_bytes() == b"old\n" * 1000 and _open_fds() == before
