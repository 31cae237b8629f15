"""The README's examples work: the Python block runs, and every CLI line parses with today's flags."""

import re
import shlex

from dpviz.cli import build_parser
from tests.apptest_helpers import ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_python_example_runs():
    block = re.search(r"```python\n(.*?)```", README, re.S).group(1)
    scope: dict = {}
    exec(compile(block, "README.md", "exec"), scope)  # noqa: S102 - our own documentation
    table, meta = scope["table"], scope["meta"]
    assert list(table.columns) == ["node", "parent", "noisy", "released", "variance", "std"]
    assert meta["mode"] == "release" and list(scope["df"].columns) == ["t", "released_total", "variance", "std"]


def test_every_cli_line_parses():
    lines = [ln.split("#")[0].strip() for ln in README.splitlines() if ln.startswith("python -m dpviz")]
    assert len(lines) >= 15
    parser = build_parser()
    for line in lines:
        argv = shlex.split(line)[3:]
        args = parser.parse_args(argv)
        assert callable(args.func), line


def test_readme_claims_only_what_exists():
    """Every capability and tool the README describes is registered, and nothing is announced as planned."""
    from dpviz.core.registry import CAPABILITIES, TOOLS

    assert "planned" not in README.split("## Set up")[0]
    for group in (*CAPABILITIES, *TOOLS):
        assert f"python -m dpviz {group.name} " in README, group.name
