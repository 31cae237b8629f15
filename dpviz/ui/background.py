"""Results computed ahead in the background: what a page's likely next change will need, ready when it comes.

A page knows what each of its radios would compute if flipped (the other mechanism, the other way of giving
the budget, ...). After a run it hands those computations to :func:`precompute`; they run one at a time in a
single background thread while the reader looks at the page. When the reader does flip the radio, the page
asks :func:`computed` for the same key and gets the result at once (or waits for the run already under way,
never starting it twice). A page run that misses the cache supersedes every queued or running background
task (:func:`supersede`, which a page may also call as its run starts, so that no background work competes
with it for the interpreter), and :func:`precompute` at the end of that run queues the new neighbours — again
those a superseded task held, which would otherwise be dropped unrun. A long task stops early when it calls
:func:`check_superseded` (e.g. from a progress callback).

Only for pure library calls whose result depends on nothing but the key: the task never touches Streamlit
(no session state, no elements) — the page does its own bookkeeping when it reads the result. Results are
kept per server process (shared by sessions, bounded by :data:`MAX_RESULTS`), like ``st.cache_resource``.

``DPVIZ_WORK_AHEAD=0`` in the environment turns the work ahead off (:func:`work_ahead`): :func:`precompute`
and :func:`dpviz.ui.prefetch` then queue nothing and every result is computed by the page run that asks for
it (the same result, later). The test suite sets it for in-process page tests, which would otherwise spend
about half their CPU on work ahead that no later change reads; the tests of the work ahead itself, and the
browser tests' server, keep it on.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

__all__ = ["MAX_RESULTS", "NICENESS", "WORK_AHEAD_ENV", "work_ahead", "Superseded", "precompute", "computed",
           "check_superseded", "supersede", "lower_priority"]

MAX_RESULTS = 32
"""Results (finished or under way) kept per server process; the oldest are dropped first."""


class Superseded(Exception):
    """Raised inside a background task that a page run has made obsolete (it is dropped, not cached)."""


_LOCK = threading.Lock()
_RESULTS: OrderedDict[Hashable, Future] = OrderedDict()
_POOL = ThreadPoolExecutor(max_workers=1, thread_name_prefix="dpviz-precompute")
_STATE = {"generation": 0}
_LOCAL = threading.local()
NICENESS = 10
"""The worker thread's niceness (Linux: per thread): the browser drawing the page on the same machine, and the
page's own script, get the CPU first — at 10 (scheduler weight 110 against 1,024 at 0) the work ahead takes ~10%
of a contended core and still finishes on a busy machine (at 19, weight 15, a 2 s warm-up could take minutes
while both cores are busy)."""


WORK_AHEAD_ENV = "DPVIZ_WORK_AHEAD"
"""The environment variable that turns the work ahead off when it is ``0`` (on by default)."""


def work_ahead() -> bool:
    """Whether pages compute their likely next changes ahead (:data:`WORK_AHEAD_ENV` is not ``0``)."""
    return os.environ.get(WORK_AHEAD_ENV, "1").strip() != "0"


def lower_priority() -> None:
    """Give the calling thread :data:`NICENESS` (once per thread): background work yields the CPU to the page."""
    if getattr(_LOCAL, "niced", False):
        return
    _LOCAL.niced = True
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), NICENESS)
    except (AttributeError, OSError):  # not Linux, or not allowed: run at the server's priority
        pass


def check_superseded() -> None:
    """Raise :class:`Superseded` in a background task a page run has superseded; a no-op anywhere else."""
    generation = getattr(_LOCAL, "generation", None)
    if generation is not None and generation != _STATE["generation"]:
        raise Superseded


def supersede() -> None:
    """Make every queued or running background task obsolete (a page calls it as its run starts: the reader's
    change comes first). A running task stops at its next :func:`check_superseded` and is forgotten; the page
    queues what it still wants with :func:`precompute` at the end of its run."""
    with _LOCK:
        _STATE["generation"] += 1


def _keep(key: Hashable, future: Future) -> None:
    _RESULTS[key] = future
    _RESULTS.move_to_end(key)
    while len(_RESULTS) > MAX_RESULTS:
        _RESULTS.popitem(last=False)


def _forget(key: Hashable, future: Future) -> None:
    with _LOCK:
        if _RESULTS.get(key) is future:
            del _RESULTS[key]


def precompute(key: Hashable, fn: Callable[..., Any], *args: Any) -> None:
    """Queue ``fn(*args)`` in the background unless ``key`` is held, or queued or under way since the last
    :func:`supersede` (a task queued before it is dropped unrun: queued again here). A task that raises (or is
    superseded) is forgotten: the page meets the error itself when it asks :func:`computed`. Nothing is queued
    when :func:`work_ahead` is off."""
    if not work_ahead():
        return
    with _LOCK:
        held = _RESULTS.get(key)
        if held is not None and (held.done() or getattr(held, "generation", None) == _STATE["generation"]):
            return
        # absent, or queued / running for a superseded page run (it stops unrun or at its next check): again
        generation = _STATE["generation"]
        future: Future = Future()
        future.generation = generation  # type: ignore[attr-defined]
        _keep(key, future)

    def run() -> None:
        if not future.set_running_or_notify_cancel():
            return
        lower_priority()
        _LOCAL.generation = generation
        try:
            check_superseded()
            future.set_result(fn(*args))
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting page, or dropped
            _forget(key, future)
            future.set_exception(exc)
        finally:
            _LOCAL.generation = None

    _POOL.submit(run)


def computed(key: Hashable, fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)`` for ``key``: the background result (waited for while it runs), else computed here, in
    the page's own thread, after superseding every background task (errors are raised here, not cached)."""
    with _LOCK:
        future = _RESULTS.get(key)
        if future is not None and not (future.running() or future.done()):
            future = None  # still queued behind other tasks: not worth the wait
        if future is not None:
            _RESULTS.move_to_end(key)
    if future is not None:
        try:
            return future.result()
        except Superseded:
            pass  # dropped by a newer page run before it finished: computed here
    supersede()
    result = fn(*args)
    done: Future = Future()
    done.set_result(result)
    with _LOCK:
        _keep(key, done)
    return result
