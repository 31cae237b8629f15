"""Machine resources, for refusing work before it allocates: how much memory there is, and how to say a size.

Commands estimate the memory a request needs and refuse it (an InputError with the estimate, the cap and how
to raise it) instead of meeting a ``MemoryError`` or the OOM killer.
"""

from __future__ import annotations

import os
from functools import lru_cache

__all__ = ["machine_memory", "available_memory", "format_bytes", "prefer_small_pages"]


@lru_cache(maxsize=1)
def machine_memory() -> int | None:
    """This machine's memory in bytes (physical memory, or a smaller cgroup limit), None if unknown."""
    try:
        total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, OSError, ValueError):  # pragma: no cover - not POSIX
        total = None
    try:
        with open("/sys/fs/cgroup/memory.max") as fh:
            limit = fh.read().strip()
        if limit.isdigit() and (total is None or int(limit) < total):
            total = int(limit)
    except OSError:  # no cgroup v2 limit file: the physical memory stands
        pass
    return total


def available_memory() -> int | None:
    """Bytes available to a new allocation now (Linux ``MemAvailable``, at most :func:`machine_memory`), or
    :func:`machine_memory` when ``/proc/meminfo`` cannot be read."""
    total = machine_memory()
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    avail = int(line.split()[1]) * 1024
                    return avail if total is None else min(avail, total)
    except (OSError, ValueError, IndexError):  # not Linux, or an unexpected format
        pass
    return total


def format_bytes(n: float) -> str:
    """``745.0 GiB``-style size for messages (binary units up to PiB)."""
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024:
            return f"{n:,.0f} {unit}" if unit == "bytes" else f"{n:,.1f} {unit}"
        n /= 1024
    return f"{n:,.1f} PiB" if n < 10**6 else f"{n:.3g} PiB"


HUGEPAGE_ENV = "NUMPY_MADVISE_HUGEPAGE"


def prefer_small_pages() -> bool:
    """Before NumPy is imported, turn off its transparent-huge-page advice for this process unless the
    user chose (NumPy's documented ``NUMPY_MADVISE_HUGEPAGE``); True if it did.

    NumPy advises huge pages for every array of 4 MB or more. Where the kernel's THP ``defrag`` setting
    is ``madvise`` (a common default), each such first touch may compact memory synchronously: on the
    2-core VM this was measured on, a 5·10⁶-node ``tree release`` took 2.95–3.34 s instead of
    3.43–3.95 s, and a 2²⁷ − 1 node tree end to end 14.6 s instead of 20.9 s. The command-line entry
    point calls this; a library import never changes the environment. Once NumPy is loaded, nothing
    is changed (its setting is read at import)."""
    import sys

    if "numpy" in sys.modules or HUGEPAGE_ENV in os.environ:
        return False
    os.environ[HUGEPAGE_ENV] = "0"
    return True
