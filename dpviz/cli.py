"""python -m dpviz: every simulation, release and structure view, headless.

The command groups come from the capability registry (:mod:`dpviz.core.registry`): each capability
adds its own verbs (``simulate``, ``release``, ...); the registry's ``TOOLS`` add the groups that work
across capabilities (``audit``, ``sweep``, ``ledger``, ``plan``). Bad input exits with code 2 and one
clear line on stderr, never a traceback.

Startup: :func:`main` builds only the group named on the command line; every other group is a one-line
placeholder whose help text comes from the registry, so ``python -m dpviz --help`` imports no
capability (and no numpy, scipy, pandas or plotly).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from dpviz.core.registry import CAPABILITIES, TOOLS
from dpviz.core.resources import prefer_small_pages
from dpviz.errors import InputError

EPILOG = ("Modes: 'simulate' is seeded and shows the truth and errors (teaching, what-if; not a private "
          "release). 'release' draws discrete noise from the OS CSPRNG, takes no seed and writes no truth. "
          "Bundled data: " + ", ".join(f"sample:{s.name} ({c.name})" for c in CAPABILITIES for s in c.samples) + ".")


class _Parser(argparse.ArgumentParser):
    """argparse prints usage and exits 2 on bad flags; keep that, but as one line."""

    def error(self, message: str) -> None:  # pragma: no cover - exercised through main()
        self.exit(2, f"dpviz: error: {message}\n")


def build_parser(only: str | None = None, *, lazy: bool = False) -> argparse.ArgumentParser:
    """The full parser (every group registered), or with ``lazy=True`` only group ``only`` registered and
    the others as placeholders that carry their help line (enough for ``--help`` and for errors)."""
    parser = _Parser(prog="python -m dpviz", description=__doc__.splitlines()[0], epilog=EPILOG)
    groups = parser.add_subparsers(dest="capability", required=True, parser_class=_Parser)
    for group in (*CAPABILITIES, *TOOLS):
        if not lazy or group.name == only:
            group.register_cli(groups)
        else:
            groups.add_parser(group.name, help=group.cli_help)
    return parser


def _group(argv: Sequence[str]) -> str | None:
    """The command group named by ``argv`` (its first non-option word), if any."""
    names = {g.name for g in (*CAPABILITIES, *TOOLS)}
    first = next((a for a in argv if not a.startswith("-")), None)
    return first if first in names else None


def main(argv: Sequence[str] | None = None) -> int:
    prefer_small_pages()  # before NumPy is imported (commands import it lazily): see its docstring
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(_group(argv), lazy=True)
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except InputError as exc:
        print(f"dpviz: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # e.g. `python -m dpviz ... | head`: stop quietly like other CLIs
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - keeps the interpreter's final flush quiet
        return 0
    except (FileNotFoundError, IsADirectoryError, PermissionError) as exc:
        print(f"dpviz: error: cannot read or write {exc.filename}: {exc.strerror}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
