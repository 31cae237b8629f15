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


MAX_ERROR_CHARS = 500
"""An error line is cut to this many characters (its head and its tail, where the advice usually is)."""


def error_line(message: object, limit: int = MAX_ERROR_CHARS) -> str:
    r"""``dpviz: error: MESSAGE`` on one line: line breaks become spaces, a message longer than ``limit``
    keeps its first and last characters around "…" (a 10 MB header quoted in an error stays readable).

    >>> error_line("two\nlines")
    'dpviz: error: two lines'
    >>> len(error_line("x" * 10**6))
    514
    """
    text = " ".join(str(message).splitlines())
    if len(text) > limit:
        head = limit * 7 // 10
        text = text[:head] + " … " + text[len(text) - (limit - head - 3):]
    return f"dpviz: error: {text}"


class _Parser(argparse.ArgumentParser):
    """argparse prints usage and exits 2 on bad flags; keep that, but as one line."""

    def error(self, message: str) -> None:  # pragma: no cover - exercised through main()
        self.exit(2, error_line(message) + "\n")


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
        print(error_line(exc), file=sys.stderr)
        return 2
    except BrokenPipeError:  # e.g. `python -m dpviz ... | head`: stop quietly like other CLIs
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - keeps the interpreter's final flush quiet
        return 0
    except OSError as exc:  # a file that cannot be read or written, a full disk, a name too long, ...
        where = "" if exc.filename is None else f" {exc.filename}"
        print(error_line(f"cannot read or write{where}: {exc.strerror or exc}"), file=sys.stderr)
        return 2
    except MemoryError:
        print(error_line("out of memory: the input or the requested work is too large for this machine "
                         "(nothing was written)"), file=sys.stderr)
        return 2
    except RecursionError:
        print(error_line("the input is nested too deeply to be read (nothing was written)"), file=sys.stderr)
        return 2
    except Exception as exc:
        if type(exc).__module__ != "sqlite3":  # a bug: the traceback is worth seeing
            raise
        print(error_line(f"privacy ledger: {exc}"), file=sys.stderr)  # the ledger maps its own errors; a fallback
        return 2


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
