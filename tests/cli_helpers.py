"""Shared helpers for the CLI tests: run one command group in-process, and check a one-line error."""

from __future__ import annotations

from dpviz import cli


def run_group(group: str, argv, capsys) -> tuple[int, str, str]:
    """``python -m dpviz GROUP ARGV...`` in this process: (exit code, stdout, stderr)."""
    rc = cli.main([group, *map(str, argv)])
    out = capsys.readouterr()
    return rc, out.out, out.err


def one_line_error(rc: int, err: str, *needles: str) -> None:
    """Exit code 2 and exactly one stderr line, ``dpviz: error: ...``, containing every needle."""
    assert rc == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dpviz: error:"), err
    for n in needles:
        assert n in lines[0], (n, lines[0])
