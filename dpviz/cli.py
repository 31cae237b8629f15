"""python -m dpviz: every simulation, release and structure view, headless.

The command groups come from the capability registry (:mod:`dpviz.core.registry`): each capability
adds its own verbs (``simulate``, ``release``, ...); :data:`TOOLS` adds the groups that work across
capabilities (``audit``). Bad input exits with code 2 and one clear line on
stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from dpviz.core.registry import CAPABILITIES, resolve
from dpviz.errors import InputError

TOOLS: tuple[str, ...] = ("dpviz.audit.cli:register",
                          "dpviz.sweep.cli:register",
                          "dpviz.ledger.cli:register",
                          "dpviz.planner.cli:register",)
"""Command groups that work across capabilities (``"module:function"`` registrars, like a capability's ``cli``):
``audit`` (empirical privacy audit)."""

EPILOG = ("Modes: 'simulate' is seeded and shows the truth and errors (teaching, what-if; not a private "
          "release). 'release' draws discrete noise from the OS CSPRNG, takes no seed and writes no truth. "
          "Bundled data: " + ", ".join(f"sample:{s.name} ({c.name})" for c in CAPABILITIES for s in c.samples) + ".")


class _Parser(argparse.ArgumentParser):
    """argparse prints usage and exits 2 on bad flags; keep that, but as one line."""

    def error(self, message: str) -> None:  # pragma: no cover - exercised through main()
        self.exit(2, f"dpviz: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m dpviz", description=__doc__.splitlines()[0], epilog=EPILOG)
    groups = parser.add_subparsers(dest="capability", required=True, parser_class=_Parser)
    for cap in CAPABILITIES:
        cap.register_cli(groups)
    for tool in TOOLS:
        resolve(tool)(groups)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
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
