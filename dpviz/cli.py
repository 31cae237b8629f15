"""``python -m dpviz ...``: every release and benchmark, headless.

Each capability registers its own sub-commands (``dpviz.tree.cli``, ``dpviz.stream.cli``).
Bad input exits with code 2 and one clear line on stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from dpviz.errors import InputError


class _Parser(argparse.ArgumentParser):
    """argparse prints usage and exits 2 on bad flags; keep that, but as one line."""

    def error(self, message: str) -> None:  # pragma: no cover - exercised through main()
        self.exit(2, f"dpviz: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    from dpviz.stream import cli as stream_cli
    from dpviz.tree import cli as tree_cli

    parser = _Parser(prog="python -m dpviz", description=__doc__.splitlines()[0])
    groups = parser.add_subparsers(dest="capability", required=True, parser_class=_Parser)
    tree_cli.register(groups)
    stream_cli.register(groups)
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
        print(f"dpviz: error: cannot read {exc.filename}: {exc.strerror}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
