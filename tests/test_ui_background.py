"""dpviz.ui.background: results computed ahead in a background thread, handed to the page that asks."""

import threading
import time

import pytest

from dpviz.errors import InputError
from dpviz.ui import background as bg

pytestmark = pytest.mark.work_ahead  # the work ahead itself (tests/conftest.py turns it off elsewhere)


def _wait_done(key, timeout: float = 5.0):
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        future = bg._RESULTS.get(key)
        if future is not None and future.done():
            return future
        time.sleep(0.005)
    raise AssertionError(f"{key} not done")


def test_precomputed_result_is_handed_over_without_running_again():
    calls = []
    key = ("test", "handover", time.monotonic())
    bg.precompute(key, lambda x: calls.append(x) or {"value": x}, 7)
    bg.precompute(key, lambda x: calls.append(x) or {"value": x}, 7)  # held: not queued twice
    _wait_done(key)
    first = bg.computed(key, lambda: pytest.fail("computed again"))
    assert first == {"value": 7} and calls == [7]
    assert bg.computed(key, lambda: pytest.fail("computed again")) is first


def test_a_miss_is_computed_here_and_kept():
    key = ("test", "miss", time.monotonic())
    here = threading.get_ident()
    out = bg.computed(key, lambda a, b: (a + b, threading.get_ident()), 2, 3)
    assert out == (5, here)
    assert bg.computed(key, lambda a, b: pytest.fail("computed again"), 2, 3) is out


def test_the_page_waits_for_a_running_task_instead_of_starting_it_again():
    started, release = threading.Event(), threading.Event()
    key = ("test", "running", time.monotonic())

    def slow():
        started.set()
        release.wait(5)
        return "from the background"

    bg.precompute(key, slow)
    assert started.wait(5)
    threading.Timer(0.05, release.set).start()
    assert bg.computed(key, lambda: "computed here") == "from the background"


def test_an_error_reaches_the_page_and_is_not_kept():
    key = ("test", "error", time.monotonic())

    def bad():
        raise InputError("no such thing")

    bg.precompute(key, bad)
    t0 = time.monotonic()
    while key in bg._RESULTS and time.monotonic() - t0 < 5:
        time.sleep(0.005)
    assert key not in bg._RESULTS  # forgotten: the page meets the error itself
    with pytest.raises(InputError, match="no such thing"):
        bg.computed(key, bad)
    assert key not in bg._RESULTS


def _cooperative_task(name: str) -> tuple[tuple, threading.Event, threading.Event]:
    """(key, started, stopped) of a queued background task that checks for being superseded every 10 ms
    (for ~5 s) and sets ``stopped`` when it is."""
    started, stopped = threading.Event(), threading.Event()
    key = ("test", name, time.monotonic())

    def cooperative():
        started.set()
        try:
            for _ in range(500):
                bg.check_superseded()
                time.sleep(0.01)
        except bg.Superseded:
            stopped.set()
            raise
        return "finished"

    bg.precompute(key, cooperative)
    assert started.wait(5)
    return key, started, stopped


def test_a_page_miss_supersedes_background_work():
    key, _, stopped = _cooperative_task("superseded")
    assert bg.computed(("test", "other", time.monotonic()), lambda: 1) == 1  # a miss: the page's work comes first
    assert stopped.wait(5)
    t0 = time.monotonic()
    while key in bg._RESULTS and time.monotonic() - t0 < 5:
        time.sleep(0.005)
    assert key not in bg._RESULTS  # dropped, not cached
    assert bg.computed(key, lambda: "computed here") == "computed here"
    bg.check_superseded()  # a no-op outside a background task


def test_results_are_bounded():
    keys = [("test", "bound", i, time.monotonic()) for i in range(bg.MAX_RESULTS + 5)]
    for i, key in enumerate(keys):
        bg.computed(key, lambda i=i: i)
    assert keys[0] not in bg._RESULTS and keys[-1] in bg._RESULTS
    assert len(bg._RESULTS) <= bg.MAX_RESULTS


def test_supersede_at_a_page_start_stops_running_work_and_nothing_stale_is_kept():
    key, _, stopped = _cooperative_task("page start")
    bg.supersede()
    assert stopped.wait(5)
    assert bg.computed(key, lambda: "computed here") == "computed here"


def test_the_worker_runs_at_a_lower_priority_than_the_page():
    import os

    mine = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    key = ("test", "niceness", time.monotonic())
    bg.precompute(key, lambda: os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))
    assert _wait_done(key).result() == max(mine, bg.NICENESS)
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == mine  # the page's thread is untouched


def _occupy_worker() -> threading.Event:
    """Block the worker with a task until the returned event is set (what queues behind it stays queued)."""
    started, release = threading.Event(), threading.Event()
    bg.precompute(("test", "occupy", time.monotonic()), lambda: (started.set(), release.wait(5)))
    assert started.wait(5)
    return release


def test_a_page_run_queues_again_what_a_superseded_task_held():
    """A page run supersedes the queued work as it starts and queues its neighbours at its end: a neighbour
    still queued for the earlier run (about to be dropped unrun) must be queued again, not taken as held."""
    release = _occupy_worker()
    calls = []
    key = ("test", "queued again", time.monotonic())
    bg.precompute(key, lambda: calls.append("earlier run") or "earlier")
    bg.supersede()  # the next page run starts ...
    bg.precompute(key, lambda: calls.append("this run") or "this run")  # ... and queues the same neighbour
    bg.precompute(key, lambda: calls.append("twice") or "twice")  # held for this run: not queued twice
    release.set()
    assert _wait_done(key).result() == "this run"
    assert calls == ["this run"]
    assert bg.computed(key, lambda: pytest.fail("computed again")) == "this run"


def test_prefetch_remembers_a_bounded_number_of_keys(monkeypatch):
    """A page whose warm-up keys change with every run (the Planner's carry the run's generation) must not grow
    the server's set of keys without bound; a key seen recently is still warmed only once."""
    from dpviz.ui import pages

    monkeypatch.setattr(pages, "_PREFETCHED", type(pages._PREFETCHED)())
    ran = []
    done = threading.Event()
    for i in range(pages.PREFETCH_KEYS + 40):
        pages.prefetch(("test-bound", i), ran.append, i)
    pages.prefetch(("test-bound", pages.PREFETCH_KEYS + 39), ran.append, -1)  # recent: not again
    pages.prefetch(("test-last",), done.set)
    assert done.wait(10)
    assert len(pages._PREFETCHED) == pages.PREFETCH_KEYS and ("test-bound", 0) not in pages._PREFETCHED
    t0 = time.monotonic()
    while len(ran) < pages.PREFETCH_KEYS + 40 and time.monotonic() - t0 < 10:
        time.sleep(0.01)
    assert sorted(ran) == list(range(pages.PREFETCH_KEYS + 40))


def test_work_ahead_off_queues_nothing_and_the_page_computes_it(monkeypatch):
    """DPVIZ_WORK_AHEAD=0 (the in-process test default): precompute and prefetch run nothing; computed() gives
    the same result, computed in the asking thread."""
    from dpviz.ui import pages

    calls = []
    monkeypatch.setenv(bg.WORK_AHEAD_ENV, "0")
    assert not bg.work_ahead()
    bg.precompute(("off-test", 1), lambda: calls.append("bg") or 7)
    pages.prefetch(("off-test", 2), lambda: calls.append("prefetch"))
    time.sleep(0.05)
    assert calls == [] and ("off-test", 1) not in bg._RESULTS and ("off-test", 2) not in pages._PREFETCHED
    assert bg.computed(("off-test", 1), lambda: threading.current_thread().name) == threading.current_thread().name
    monkeypatch.setenv(bg.WORK_AHEAD_ENV, "1")
    assert bg.work_ahead()
    bg.precompute(("off-test", 3), lambda: calls.append("bg") or 8)
    assert _wait_done(("off-test", 3)).result() == 8 and calls == ["bg"]
