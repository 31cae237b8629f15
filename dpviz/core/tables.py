"""Writing output tables: one writer for every capability, atomic, never over an input or the ledger.

:func:`write_atomic` writes a file next to its destination under a temporary name
``.{name}.{pid}.XXXXXXXX.tmp``, flushes it to disk and renames it into place (``os.replace`` is atomic on
POSIX), so a reader or a crash never sees a half-written file. :func:`write_release` adds a JSON sidecar
``OUT.meta.json`` describing the release (mode, mechanism, noise, budget, sensitivity; nothing in it
depends on the data); both are written to temporary files first and renamed together, the sidecar just
before its output (:func:`write_together`): a failure leaves neither, nor any temporary file.

**Outputs are checked before any work** (:func:`check_destination`, :func:`check_outputs`, called by
:func:`dpviz.ledger.charge` before the charge): the folder exists, is a folder and takes a new file (a
real probe: a read-only folder or file system is refused even for root), the name and the temporary
names fit the folder's ``NAME_MAX``, and no output is an input, the ledger (or its ``-wal``/``-shm``), or
another output or sidecar of the same command (resolved paths and inodes).

**Killed mid-write.** A process killed (SIGKILL) while writing leaves at worst its temporary files; the
next write of the same output name removes the temporary files of that name whose process is gone
(the pid is in the name), so a rerun of the command cleans up. The sidecar is renamed into place a few
microseconds before its output: a kill in exactly that window is the one way to leave a sidecar alone.

**Known digests.** A ``write(fh)`` function that hashes the bytes it writes says so with a ``sha256``
attribute (the hex SHA-256 of what its last call wrote: :func:`dpviz.core.csv_writer.csv_writer` does, in the
thread that writes, while the next blocks are being formatted); :func:`write_together` then remembers it for
the file it renamed into place, and :func:`written_sha256` gives it back while that file is unchanged (same
device, inode, size and modification time) — the ledger records a release's output digest without reading
the file again.

**Spreadsheet formulas (OWASP CSV injection).** :func:`to_csv_text` and the tree's Arrow writer prefix
with ``'`` every *text* cell (and header) that begins with ``=``, ``+``, ``-``, ``@``, a tab or a CR, so
that a spreadsheet shows it instead of running it; number columns are never touched, and a text cell
that is a plain decimal number (``-5``, ``+3.2``, ``1e-3``) stays as it is (a spreadsheet reads it as that
number, nothing runs). ``raw_text=True`` (the CLI's ``--raw-text``) writes text as it is.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from dpviz.errors import InputError

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

__all__ = ["write_atomic", "write_together", "write_table", "write_text", "write_release", "write_release_text",
           "meta_path", "meta_json", "to_csv_text", "check_destination", "check_outputs", "escape_formula_cell",
           "escape_formula_frame", "escape_formula_array", "FORMULA_START", "PAUSE_BEFORE_RENAME_ENV",
           "written_sha256", "wait_freed"]

FORMULA_START = "=+-@\t\r"
"""First characters that make a spreadsheet read a cell as a formula (OWASP "CSV Injection")."""
_PLAIN_NUMBER = r"^[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$"
_PLAIN_NUMBER_RE = re.compile(_PLAIN_NUMBER)
_FORMULA_BYTES = tuple(FORMULA_START.encode("ascii"))
PAUSE_BEFORE_RENAME_ENV = "DPVIZ_TEST_PAUSE_BEFORE_RENAME"
"""Test only: seconds to sleep once every temporary file is written, before the renames (the window a
SIGKILL test aims at)."""
_TEMP_RANDOM = 8  # characters tempfile.mkstemp puts between prefix and suffix
_TEMP_SUFFIX = ".tmp"


# ------------------------------------------------------------------------------------ formula cells
def escape_formula_cell(text: str) -> str:
    """``text`` with a leading ``'`` if a spreadsheet would run it as a formula (see the module docstring).

    >>> [escape_formula_cell(t) for t in ("=1+1", "@SUM(A1)", "-2", "+x", "a=b", "")]
    ["'=1+1", "'@SUM(A1)", '-2', "'+x", 'a=b', '']
    """
    if text[:1] and text[0] in FORMULA_START and not _PLAIN_NUMBER_RE.match(text):
        return "'" + text
    return text


def escape_formula_array(arr: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """A string column with :func:`escape_formula_cell` applied to every value, vectorised: the first byte
    of every value is read through the offsets (NumPy, no copy); only when some value starts with a
    formula character are those values matched (``pyarrow.compute``) and rewritten. The same array comes
    back when nothing needs escaping (the usual case costs one gather over the offsets)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from dpviz.core import arrow

    if isinstance(arr, pa.ChunkedArray):
        chunks = [escape_formula_array(c) for c in arr.chunks]
        if all(a is b for a, b in zip(chunks, arr.chunks)):
            return arr
        return pa.chunked_array(chunks, type=arr.type)
    if not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)) or not len(arr):
        return arr
    n = len(arr)
    offsets = np.frombuffer(arr.buffers()[1], np.int64 if pa.types.is_large_string(arr.type) else np.int32)
    offsets = offsets[arr.offset:arr.offset + n + 1]
    data = np.frombuffer(arr.buffers()[2], np.uint8) if arr.buffers()[2] is not None else np.zeros(0, np.uint8)
    filled = (offsets[1:] > offsets[:-1]) & arrow.valid(arr)
    first = np.zeros(n, np.uint8)
    first[filled] = data[offsets[:-1][filled]]
    hit = np.flatnonzero(filled & np.isin(first, _FORMULA_BYTES))
    if not hit.size:
        return arr
    candidates = arr.take(arrow.from_numpy(hit.astype(np.int64)))
    number = pc.match_substring_regex(candidates, _PLAIN_NUMBER)
    bits = np.unpackbits(np.frombuffer(number.buffers()[1], np.uint8), bitorder="little")
    escape = hit[~bits[number.offset:number.offset + hit.size].astype(bool)]
    if not escape.size:
        return arr
    mask = np.zeros(n, bool)
    mask[escape] = True
    new = pc.utf8_replace_slice(arr.take(arrow.from_numpy(escape.astype(np.int64))), start=0, stop=0,
                                replacement="'")
    mask_arr = pa.Array.from_buffers(pa.bool_(), n, [None, pa.py_buffer(np.packbits(mask, bitorder="little"))])
    return pc.replace_with_mask(arr, mask_arr, new)


def _escape_series(s: pd.Series) -> Any:
    """The escaped values of a text column, or None if it is not text or needs nothing."""
    import pandas as pd
    import pyarrow as pa

    if s.dtype.kind in "biufcmM":
        return None
    if isinstance(s.dtype, pd.CategoricalDtype):
        s = s.astype(object)
    try:
        arr = pa.array(s.array if pd.api.types.is_string_dtype(s.dtype) and s.dtype != object else s.to_numpy(),
                       type=pa.string(), from_pandas=True)
    except (pa.ArrowInvalid, pa.ArrowTypeError):  # text mixed with other objects: cell by cell
        new = s.map(lambda v: escape_formula_cell(v) if isinstance(v, str) else v)
        return None if new.equals(s) else new.array
    out = escape_formula_array(arr)
    return None if out is arr else pd.array(out.to_pylist(), dtype=object)


def escape_formula_frame(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with :func:`escape_formula_cell` applied to its text cells and its column names (a shallow
    copy when something changed; ``df`` itself otherwise)."""
    changed = {i: new for i in range(df.shape[1]) if (new := _escape_series(df.iloc[:, i])) is not None}
    names = [escape_formula_cell(c) if isinstance(c, str) else c for c in df.columns]
    if not changed and names == list(df.columns):
        return df
    out = df.copy(deep=False)
    for i, new in changed.items():
        out.isetitem(i, new)
    out.columns = names
    return out


def to_csv_text(df: pd.DataFrame, *, raw_text: bool = False) -> str:
    """The CSV text every writer and every page download uses (header, no index, ``\\n`` lines); text
    cells that a spreadsheet would run as formulas get a leading ``'`` unless ``raw_text``."""
    if not raw_text:
        df = escape_formula_frame(df)
    return df.to_csv(index=False, lineterminator="\n")


# ------------------------------------------------------------------------------------ output checks
def _stat(path: Path, what: str) -> os.stat_result | None:
    """``os.stat`` (links followed), None if nothing is there; a name too long, a loop of links or a
    component that is not a folder are InputErrors (one line), never tracebacks."""
    try:
        return os.stat(path)
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        raise InputError(f"{what}: {_short(path)}: a component of the path is a file, not a folder") from None
    except OSError as exc:
        raise InputError(f"{what}: cannot use {_short(path)}: {exc.strerror or exc}") from None


def _short(path: str | Path, limit: int = 120) -> str:
    text = str(path)
    return text if len(text) <= limit else text[:limit // 2] + "…" + text[-limit // 2:]


def _temp_prefix(path: Path) -> str:
    return f".{path.name}.{os.getpid()}."


def _temp_name_bytes(path: Path) -> int:
    return len(os.fsencode(_temp_prefix(path))) + _TEMP_RANDOM + len(_TEMP_SUFFIX)


def _name_max(folder: Path) -> int:
    try:
        return int(os.pathconf(folder, "PC_NAME_MAX"))
    except (OSError, ValueError, AttributeError):  # pragma: no cover - platforms without pathconf
        return 255


def _probe(folder: Path, longest: Path, what: str) -> None:
    """Create and remove a file named like the longest temporary file in ``folder``: a read-only folder
    or file system, a full inode table or a name the file system refuses are found before any work."""
    try:
        fd, tmp = tempfile.mkstemp(prefix=_temp_prefix(longest), suffix=_TEMP_SUFFIX, dir=folder)
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:
            raise InputError(f"{what}: the name {_short(longest.name)!r} is too long for the folder {_short(folder)}"
                             ) from None
        why = "read-only file system" if exc.errno == errno.EROFS else (exc.strerror or str(exc))
        raise InputError(f"{what}: cannot write in the folder {_short(folder)} ({why})") from None
    os.close(fd)
    os.unlink(tmp)


def check_destination(path: str | Path, inputs: Iterable[str | Path | None] = (), *, sidecar: bool = False,
                      ledger: str | Path | None = None, what: str = "--output") -> Path:
    """``path`` as a Path if it can be an output (InputError otherwise, one line):

    * not a folder; its folder exists, is a folder and takes a new file (os.access and a real probe);
    * its name, and the temporary name it is written under, fit the folder's NAME_MAX (with ``sidecar``,
      also ``NAME.meta.json`` and its temporary name);
    * it is not one of ``inputs`` nor the ``ledger`` (or its ``-wal``/``-shm``/``-journal``), compared by
      resolved path and by inode; with ``sidecar``, neither is its ``.meta.json``.

    Commands call it on every output path before any work, so a bad ``--output`` costs nothing."""
    path = Path(path)
    st = _stat(path, what)
    if st is not None and os.path.isdir(path):
        raise InputError(f"{what}: {_short(path)} is a directory; expected a file name")
    folder = path.parent
    fst = _stat(folder, what)
    if fst is None:
        raise InputError(f"{what}: the folder {_short(folder)} does not exist")
    if not os.path.isdir(folder):
        raise InputError(f"{what}: {_short(folder)} is a file, not a folder: {_short(path)} cannot be created")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise InputError(f"{what}: the folder {_short(folder)} is not writable")
    longest = meta_path(path) if sidecar else path
    limit, need = _name_max(folder), _temp_name_bytes(longest)
    if need > limit:
        most = len(os.fsencode(path.name)) - need + limit
        raise InputError(f"{what}: the name {_short(path.name)!r} is too long: the folder allows {limit} bytes a name "
                         f"and dpviz writes {'its .meta.json and ' if sidecar else ''}a temporary file of "
                         f"{need} bytes next to it; choose a name of at most {most} bytes")
    family = [path, meta_path(path)] if sidecar else [path]
    for src in inputs:
        if src is not None:
            for p in family:
                if _same_file(p, Path(src)):
                    which = "" if p is path else f" (its description {p.name})"
                    raise InputError(f"{what}: {_short(path)}{which} is the input file {_short(src)}; choose another "
                                     "name (inputs are never overwritten)")
    if ledger is not None:
        led = Path(ledger)
        for p in family:
            for part in (led, *(led.with_name(led.name + s) for s in ("-wal", "-shm", "-journal"))):
                if _same_file(p, part):
                    which = "" if p is path else f" (its description {p.name})"
                    raise InputError(f"{what}: {_short(path)}{which} is the privacy ledger {_short(led)} (or one of "
                                     "its files); choose another name (the ledger is never overwritten)")
    _probe(folder, longest, what)
    return path


def _same_file(a: Path, b: Path) -> bool:
    """Whether ``a`` and ``b`` name one file: the same resolved path (existing or not), or the same inode."""
    try:
        if os.path.realpath(a) == os.path.realpath(b):
            return True
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return False


def check_outputs(output: str | Path | None, extra: Iterable[str | Path | None] = (),
                  inputs: Iterable[str | Path | None] = (), *, ledger: str | Path | None = None) -> list[Path]:
    """Every output of one command checked before any work or charge (exit 2, nothing charged):
    ``output`` (the release, with its ``.meta.json`` sidecar) and ``extra`` outputs (no sidecar), each by
    :func:`check_destination`, and no two of them (or the sidecar) the same file. Returns the paths."""
    inputs = [Path(p) for p in inputs if p is not None]
    outs: list[tuple[Path, list[Path]]] = []
    if output is not None:
        p = check_destination(output, inputs, sidecar=True, ledger=ledger)
        outs.append((p, [p, meta_path(p)]))
    for e in extra:
        if e is not None:
            p = check_destination(e, inputs, ledger=ledger, what=f"output {_short(e)}")
            outs.append((p, [p]))
    for i, (a, fam_a) in enumerate(outs):
        for b, fam_b in outs[i + 1:]:
            for x in fam_a:
                for y in fam_b:
                    if _same_file(x, y):
                        also = "" if (x is a and y is b) else " (or one is the other's .meta.json description)"
                        raise InputError(f"outputs {_short(a)} and {_short(b)} name the same file{also}; every "
                                         "output of a command needs its own name")
    return [p for p, _ in outs]


# ------------------------------------------------------------------------------------ atomic writing
def _remove_stale_temps(path: Path) -> None:
    """Remove ``.{name}.{pid}.XXXXXXXX.tmp`` files of ``path`` left by a process that is gone (killed while
    writing); those of a live process (a concurrent writer) are left alone."""
    pattern = re.compile(rf"\.{re.escape(path.name)}\.([0-9]+)\.[a-z0-9_]{{{_TEMP_RANDOM}}}{re.escape(_TEMP_SUFFIX)}")
    prefix = f".{path.name}."
    try:
        with os.scandir(path.parent) as entries:
            names = [e.name for e in entries if e.name.startswith(prefix) and e.name.endswith(_TEMP_SUFFIX)]
    except OSError:
        return
    for name in names:
        m = pattern.fullmatch(name)
        if m is None or int(m.group(1)) == os.getpid() or _alive(int(m.group(1))):
            continue
        try:
            os.unlink(path.parent / name)
        except OSError:
            pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, OSError):
        return True
    return True


def _pause_before_rename() -> None:
    seconds = float(os.environ.get(PAUSE_BEFORE_RENAME_ENV) or 0)
    if seconds > 0:
        print(f"tables: temporary files written; test pause {seconds:g} s before renaming", file=sys.stderr,
              flush=True)
        time.sleep(seconds)


def write_together(parts: Sequence[tuple[str | Path, Callable[[BinaryIO], None]]], *,
                   inputs: Iterable[str | Path | None] = ()) -> Path:
    """Write several files as one: every ``(path, write)`` fills a temporary file in its folder (fsynced);
    then they are renamed into place in order, the last one (the main output) last. On any failure every
    temporary file is removed and a part already renamed is removed again (no sidecar without its
    output). Each path is checked first (:func:`check_destination`). Returns the last path."""
    inputs = list(inputs)
    paths = [check_destination(Path(p), inputs, what="output" if k < len(parts) - 1 else "--output")
             for k, (p, _) in enumerate(parts)]
    temps: list[str] = []
    renamed: list[Path] = []
    digests: list[tuple[tuple[int, ...], str] | None] = []
    try:
        for path, (_, write) in zip(paths, parts):
            _remove_stale_temps(path)
            fd, tmp = tempfile.mkstemp(prefix=_temp_prefix(path), suffix=_TEMP_SUFFIX, dir=path.parent)
            temps.append(tmp)
            with os.fdopen(fd, "wb") as fh:
                if hasattr(write, "sha256"):
                    write.sha256 = None  # set again by this call, if it hashes what it writes
                write(fh)
                fh.flush()
                os.fsync(fh.fileno())
                _set_mode(fh.fileno(), path)
                sha = getattr(write, "sha256", None)
                digests.append((_file_key(os.fstat(fh.fileno())), sha) if isinstance(sha, str) else None)
        _pause_before_rename()
        for path, tmp, digest in zip(paths, temps, digests):
            old = _hold_replaced(path)
            try:
                os.replace(tmp, path)
            finally:
                _release_later(old)
            renamed.append(path)
            _WRITTEN.pop(os.path.realpath(path), None)
            if digest is not None:
                _WRITTEN[os.path.realpath(path)] = digest
    except BaseException:
        for tmp in temps:
            _unlink(tmp)
        if len(renamed) < len(paths):
            for path in renamed:
                _unlink(path)
        raise
    return paths[-1]


FREE_LATER_BYTES = 8 << 20
"""A file this large that an output replaces is freed on a thread of its own (:func:`_hold_replaced`)."""


def _hold_replaced(path: Path) -> int | None:
    """A read-only descriptor of the large regular file an output is about to replace, or None. ``os.replace``
    over a file frees its blocks in the rename itself, when no descriptor holds it (on this ext4 disk ~65 ms for
    an 80 MB release written over the previous one, a quarter of pyarrow's whole read + write of its input); held
    open, the rename returns at once and the blocks are freed when :func:`_release_later` closes it, on a
    thread of its own (POSIX; the new file is in place and fsynced either way)."""
    if os.name != "posix":
        return None
    try:
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode) or st.st_size < FREE_LATER_BYTES or st.st_nlink != 1:
            return None
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:  # unreadable, gone, a link: replaced as usual
        return None
    if os.fstat(fd).st_ino != st.st_ino:  # replaced meanwhile by someone else: not ours to hold
        os.close(fd)
        return None
    return fd


_FREEING = "dpviz-free-replaced"


def _release_later(fd: int | None) -> None:
    """Close the descriptor of a replaced file on a thread (the close frees its blocks; the GIL is released);
    not a daemon: a process that ends waits for it (:func:`wait_freed`)."""
    if fd is not None:
        import threading

        threading.Thread(target=os.close, args=(fd,), name=_FREEING).start()


def wait_freed() -> None:
    """Wait until the files replaced by earlier writes are closed (their blocks freed): e.g. before timing
    something else, or before counting open descriptors."""
    import threading

    for t in threading.enumerate():
        if t.name == _FREEING:
            t.join()


_WRITTEN: dict[str, tuple[tuple[int, ...], str]] = {}
"""Path written by :func:`write_together` → (its file's :func:`_file_key`, the SHA-256 its writer computed)."""


def _file_key(st: os.stat_result) -> tuple[int, ...]:
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


def written_sha256(path: str | Path) -> str | None:
    """The hex SHA-256 of the file at ``path`` as computed while this process wrote it (:func:`write_together`
    with a hashing writer), if the file there is still that one, unchanged (same device, inode, size and
    modification time); else None (read the file)."""
    known = _WRITTEN.get(os.path.realpath(path))
    if known is None:
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    return known[1] if _file_key(st) == known[0] else None


def _unlink(path: str | Path) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def write_atomic(path: str | Path, write: Callable[[BinaryIO], None], *,
                 inputs: Iterable[str | Path | None] = ()) -> Path:
    """The one atomic writer: ``write(fh)`` fills a temporary file in ``path``'s folder (binary), which is
    fsynced and renamed over ``path``; on any error the temporary file is removed and ``path`` untouched.
    ``path`` is checked first (:func:`check_destination`: not a folder, not an input)."""
    return write_together([(path, write)], inputs=inputs)


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


def _bytes_writer(data: bytes) -> Callable[[BinaryIO], None]:
    return lambda fh: fh.write(data)


def write_text(text: str, path: str | Path, *, inputs: Iterable[str | Path | None] = ()) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically (:func:`write_atomic`)."""
    return write_atomic(path, _bytes_writer(text.encode("utf-8")), inputs=inputs)


def write_table(df: pd.DataFrame, path: str | Path | None, *, inputs: Iterable[str | Path | None] = (),
                raw_text: bool = False) -> Path | None:
    """Write ``df`` as CSV (:func:`to_csv_text`) to ``path`` atomically, or to stdout when ``path`` is None."""
    if path is None:
        sys.stdout.write(to_csv_text(df, raw_text=raw_text))
        return None
    return write_text(to_csv_text(df, raw_text=raw_text), path, inputs=inputs)


def meta_path(path: str | Path) -> Path:
    """Where :func:`write_release` puts the description of a release written to ``path``."""
    path = Path(path)
    return path.with_name(path.name + ".meta.json")


def write_release(df: pd.DataFrame, path: str | Path, meta: dict[str, Any], *,
                  inputs: Iterable[str | Path | None] = (), raw_text: bool = False) -> Path:
    """Write a release table (CSV, :func:`to_csv_text`) and its ``.meta.json`` sidecar together
    (:func:`write_together`: the table renamed last, so its presence means both are complete; a failure
    leaves neither). ``meta`` must not hold anything computed from the private data."""
    return write_release_text(to_csv_text(df, raw_text=raw_text), path, meta, inputs=inputs)


def write_release_text(body: str | bytes | Callable[[BinaryIO], None], path: str | Path,
                       meta: dict[str, Any] | str, *, inputs: Iterable[str | Path | None] = ()) -> Path:
    """Write a release (text, bytes, or a ``write(fh)`` function) and its ``.meta.json`` sidecar (a dict,
    or its JSON text) together, as :func:`write_release` does for a table."""
    inputs = list(inputs)
    path = check_destination(Path(path), inputs, sidecar=True)
    meta_text = meta if isinstance(meta, str) else meta_json(meta)
    if isinstance(body, str):
        body = body.encode("utf-8")
    write = _bytes_writer(body) if isinstance(body, bytes) else body
    return write_together([(meta_path(path), _bytes_writer(meta_text.encode("utf-8"))), (path, write)],
                          inputs=inputs)


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
            block = _number_list(obj) if len(obj) > 32 else None
            if block is not None:
                long.append(block)
                return f"\x00{len(long) - 1}\x00"
            return [compact(v) for v in obj]
        return obj

    text = json.dumps(compact(meta), indent=2, default=_json_default)
    for i, block in enumerate(long):
        text = text.replace(f'"\\u0000{i}\\u0000"', block, 1)
    return text + "\n"


def _number_list(values: Sequence[Any]) -> str | None:
    """``json.dumps(list(values))`` of a list of numbers (ints and floats, no bools), each distinct value
    formatted once (a uniform split's 39,119 equal level shares are one ``repr``, not 39,119: Python's float
    repr is most of the cost); None if any value is not a number."""
    kinds = set(map(type, values))
    if len(kinds) == 1 and kinds <= {float, int}:  # one type: each distinct value is its own key
        distinct = set(values)
        if len(distinct) * 4 <= len(values) and all(u == u and u != 0 for u in distinct):  # no NaN, no ±0
            texts_of = {u: json.dumps(u) for u in distinct}
            return "[" + ", ".join(map(texts_of.__getitem__, values)) + "]"
    texts: dict[tuple[type, Any], str] = {}
    parts = []
    for v in values:
        t = type(v)
        if t is not float and t is not int:
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                return None
            parts.append(json.dumps(v, default=_json_default))  # a subclass (np.float64): as json.dumps writes it
            continue
        if v == 0 or v != v:  # 0.0 and -0.0 compare equal, NaN unequal: written each time
            parts.append(json.dumps(v))
            continue
        text = texts.get((t, v))
        if text is None:
            text = texts[(t, v)] = json.dumps(v)
        parts.append(text)
    return "[" + ", ".join(parts) + "]"


def _json_default(obj: Any) -> Any:
    if hasattr(obj, "item"):
        return obj.item()
    return str(obj)
