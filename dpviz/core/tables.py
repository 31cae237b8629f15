"""Writing output tables: one writer for every capability, atomic, never over an input.

:func:`write_table` writes a CSV next to its destination under a temporary name, flushes it to disk
and renames it into place (``os.replace`` is atomic on POSIX), so a reader or a crash never sees a
half-written file. It refuses a destination that is one of the inputs (same file, even through
another path or a link). :func:`write_release` adds a JSON sidecar ``OUT.meta.json`` describing the
release (mode, mechanism, noise, budget, sensitivity): nothing in it depends on the data.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from dpviz.errors import InputError

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["write_atomic", "write_table", "write_text", "write_release", "meta_path", "meta_json", "to_csv_text",
           "check_destination"]


def to_csv_text(df: pd.DataFrame) -> str:
    """The CSV text every writer and every page download uses (header, no index, ``\\n`` lines)."""
    return df.to_csv(index=False, lineterminator="\n")


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return a.resolve() == b.resolve()


def check_destination(path: str | Path, inputs: Iterable[str | Path | None] = ()) -> Path:
    """``path`` as a Path if it can be an output: not a folder, in an existing folder, not one of ``inputs``.

    Commands call it on every output path before any work, so a bad ``--output`` costs nothing."""
    path = Path(path)
    if path.is_dir():
        raise InputError(f"--output: {path} is a directory; expected a file name")
    if not path.parent.exists():
        raise InputError(f"--output: the folder {path.parent} does not exist")
    for src in inputs:
        if src is None:
            continue
        src = Path(src)
        if src.exists() and path.exists() and _same_file(src, path):
            raise InputError(f"--output: {path} is the input file; choose another name (inputs are never overwritten)")
    return path


def write_atomic(path: str | Path, write: Callable[[BinaryIO], None], *,
                 inputs: Iterable[str | Path | None] = ()) -> Path:
    """The one atomic writer: ``write(fh)`` fills a temporary file in ``path``'s folder (binary), which is
    fsynced and renamed over ``path``; on any error the temporary file is removed and ``path`` untouched.
    ``path`` is checked first (:func:`check_destination`: not a folder, not an input)."""
    path = check_destination(Path(path), inputs)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
            _set_mode(fh.fileno(), path)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def _umask() -> int:
    """The process's umask, read without changing it where Linux says it (``/proc/self/status``)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)  # elsewhere: read by setting it, and set it back at once
    os.umask(mask)
    return mask


def _set_mode(fd: int, path: Path) -> None:
    """Give the temporary file the permissions the output would have had if written in place: those of
    the file it replaces, else 0666 minus the umask (``mkstemp`` creates files readable by their owner
    only, which a release meant to be shared should not be)."""
    try:
        mode = path.stat().st_mode & 0o7777
    except OSError:  # a new file
        mode = 0o666 & ~_umask()
    try:
        os.fchmod(fd, mode)
    except (AttributeError, OSError):  # pragma: no cover - platforms without fchmod keep mkstemp's mode
        pass


def write_text(text: str, path: str | Path, *, inputs: Iterable[str | Path | None] = ()) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically (:func:`write_atomic`)."""
    data = text.encode("utf-8")
    return write_atomic(path, lambda fh: fh.write(data), inputs=inputs)


def write_table(df: pd.DataFrame, path: str | Path | None, *, inputs: Iterable[str | Path | None] = ()) -> Path | None:
    """Write ``df`` as CSV to ``path`` atomically, or to stdout when ``path`` is None."""
    if path is None:
        sys.stdout.write(to_csv_text(df))
        return None
    return write_text(to_csv_text(df), path, inputs=inputs)


def meta_path(path: str | Path) -> Path:
    """Where :func:`write_release` puts the description of a release written to ``path``."""
    path = Path(path)
    return path.with_name(path.name + ".meta.json")


def write_release(df: pd.DataFrame, path: str | Path, meta: dict[str, Any], *,
                  inputs: Iterable[str | Path | None] = ()) -> Path:
    """Write a release table and its ``.meta.json`` sidecar (the table last, so its presence means
    both are complete). ``meta`` must not hold anything computed from the private data."""
    inputs = list(inputs)
    path = check_destination(Path(path), inputs)
    write_text(meta_json(meta), meta_path(path), inputs=inputs)
    return write_text(to_csv_text(df), path, inputs=inputs)


def meta_json(meta: dict[str, Any]) -> str:
    """The text of an ``OUT.meta.json``: indented, with every long list of numbers on one line.

    Python's indenting JSON encoder is pure Python: a path-like tree's per-level scales (500,001 of
    them) took 2.7 s that way, against a fraction of that for the C encoder, which writes the long
    lists here. Same JSON values either way.

    >>> meta = {"h": 2, "scales": [1.5, 2.0], "long": [0.5] * 40}
    >>> text = meta_json(meta)
    >>> json.loads(text) == meta, [line[:20] for line in text.splitlines() if "long" in line]
    (True, ['  "long": [0.5, 0.5,'])
    """
    long: list[str] = []

    def compact(obj: Any) -> Any:
        if isinstance(obj, dict):
            return {k: compact(v) for k, v in obj.items()}
        if isinstance(obj, (list, tuple)):
            if len(obj) > 32 and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in obj):
                long.append(json.dumps(list(obj), default=_json_default))
                return f"\x00{len(long) - 1}\x00"
            return [compact(v) for v in obj]
        return obj

    text = json.dumps(compact(meta), indent=2, default=_json_default)
    for i, block in enumerate(long):
        text = text.replace(f'"\\u0000{i}\\u0000"', block, 1)
    return text + "\n"


def _json_default(obj: Any) -> Any:
    if hasattr(obj, "item"):
        return obj.item()
    return str(obj)
