"""Work estimates: refuse a request whose time or memory is out of reach before any of it is done.

A command that repeats work (``--trials``, ``--steps``, a grid of ε, Monte-Carlo dots on a page) estimates
the seconds and bytes it needs — from a measured cost per unit, or by timing one small unit of the work
(:func:`seconds_per_call`) — and calls :func:`check_work`, which raises one :class:`InputError` line
with the estimate, the limit and how to raise it, instead of meeting a ``MemoryError`` or running for
days. Memory is compared with what the machine has available now (:mod:`dpviz.core.resources`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

from dpviz.core.resources import available_memory, format_bytes
from dpviz.errors import InputError

__all__ = ["DEFAULT_MAX_SECONDS", "check_work", "format_seconds", "max_seconds_arg", "seconds_per_call"]

DEFAULT_MAX_SECONDS = 3600.0
"""The longest a command-line run may be estimated to take before it is refused (one hour); commands that
check it take ``--max-seconds S`` to raise it."""


def format_seconds(seconds: float) -> str:
    """``0.4 s``, ``12 s``, ``3.5 min``, ``2.1 h``, ``4.0 days``, ``3.2e+07 years``: a duration for messages."""
    s = float(seconds)
    if not math.isfinite(s):
        return "forever"
    if s < 10:
        return f"{s:.1f} s"
    if s < 120:
        return f"{s:.0f} s"
    if s < 7200:
        return f"{s / 60:.1f} min"
    if s < 2 * 86400:
        return f"{s / 3600:.1f} h"
    if s < 730 * 86400:
        return f"{s / 86400:.1f} days"
    return f"{s / (365.25 * 86400):.3g} years"


def seconds_per_call(fn: Callable[[], object], *, calls: int = 3) -> float:
    """The median CPU time on this thread (:func:`time.thread_time`) of ``calls`` calls of ``fn`` (a small unit
    of the work, timed to estimate the rest): the work's cost, not the moment's contention (a background thread
    holding the GIL, a niced caller)."""
    times = []
    for _ in range(max(1, int(calls))):
        t0 = time.thread_time()
        fn()
        times.append(time.thread_time() - t0)
    times.sort()
    return times[len(times) // 2]


def check_work(what: str, *, seconds: float = 0.0, memory: float = 0.0, max_seconds: float = DEFAULT_MAX_SECONDS,
               raise_with: str = "--max-seconds S", cheaper: str = "") -> None:
    """Refuse ``what`` (InputError, one line) if it is estimated to take more than ``max_seconds`` or to need
    more ``memory`` (bytes) than this machine has available. ``raise_with`` says how to raise the time
    limit (empty: it cannot be raised there); ``cheaper`` suggests a smaller request."""
    hint = f"; {cheaper}" if cheaper else ""
    if memory != 0:  # NaN and inf included
        avail = available_memory()
        if not math.isfinite(memory) or (avail is not None and memory > avail):
            have = "" if avail is None else f", more than the {format_bytes(avail)} this machine has available"
            shown = format_bytes(memory) if math.isfinite(memory) else "an unbounded amount"
            raise InputError(f"{what} would need about {shown} of memory (estimate){have}{hint}")
    if not (seconds <= max_seconds):  # NaN and inf are refused too
        raise_text = f" (raise it with {raise_with})" if raise_with else ""
        raise InputError(f"{what} would take about {format_seconds(seconds)} (estimate), more than the limit of "
                         f"{format_seconds(max_seconds)}{raise_text}{hint}")


def max_seconds_arg(text: str) -> float:
    """argparse ``type`` of ``--max-seconds``: a positive finite number of seconds (else exit 2, one line)."""
    import argparse

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"expected a positive finite number of seconds, got {text!r}")
    return value
