"""Input paths: refused at once when they are not regular files.

A FIFO, a character device or a socket named as an input (or as a ledger) would make a reader block
forever or read without end; every command and page checks a path with :func:`require_regular_file`
*before* opening it (``os.stat`` does not open, so it never blocks on a FIFO).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from dpviz.errors import InputError

__all__ = ["require_regular_file", "KIND_NAMES"]

KIND_NAMES = {stat.S_IFIFO: "a FIFO (named pipe)", stat.S_IFCHR: "a character device",
              stat.S_IFBLK: "a block device", stat.S_IFSOCK: "a socket", stat.S_IFDIR: "a folder"}


def require_regular_file(path: str | Path, what: str = "input", *, must_exist: bool = True) -> Path:
    """``path`` as a Path if it is a regular file (links followed); InputError naming ``what`` otherwise.

    ``must_exist=False`` lets a missing path through (e.g. a ledger that will be created) but still
    refuses an existing path that is not a regular file."""
    path = Path(path)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        if must_exist:
            raise InputError(f"{what}: {path} does not exist") from None
        return path
    except OSError as exc:  # name too long, permission denied on a folder, a loop of links, ...
        raise InputError(f"{what}: cannot use {str(path)[:200]!r}: {exc.strerror or exc}") from None
    kind = stat.S_IFMT(st.st_mode)
    if kind != stat.S_IFREG:
        raise InputError(f"{what}: {path} is {KIND_NAMES.get(kind, 'not a regular file')}; expected a regular file")
    return path
