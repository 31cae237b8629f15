"""Helpers shared by the benchmark scripts (run as `python bench/NAME.py`, so this folder is on sys.path)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable


def best_of(fn: Callable[[], object], repeat: int = 3) -> float:
    """Smallest wall-clock time of ``repeat`` calls of ``fn`` (seconds)."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def ratio(a: float | None, b: float | None) -> str:
    """``a / b`` as "1.23x", or "—" when either is missing or not finite, or b ≤ 0."""
    if a is None or b is None or not (math.isfinite(a) and math.isfinite(b)) or b <= 0:
        return "—"
    return f"{a / b:.3g}x"


def table(header: list[str], rows: list[list[str]]) -> None:
    """Print a plain left-aligned text table (header, dashes, rows) and a blank line."""
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows, strict=True)]
    print("  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip())
    print("  ".join("-" * w for w in widths))
    for r in rows:
        print("  ".join(str(x).ljust(w) for x, w in zip(r, widths, strict=True)).rstrip())
    print()
