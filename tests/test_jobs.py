"""core.jobs: the one worker abstraction (start / on_done / on_partial / on_progress / on_exception / cancel)."""
from __future__ import annotations

import threading

from compactscope.core.runtime.jobs import LATEST, InlineExecutor, ThreadExecutor, Worker


def recorder():
    seen = []
    return seen, dict(on_done=lambda r: seen.append(("done", r)), on_exception=lambda e: seen.append(("exc", str(e))),
                      on_partial=lambda p: seen.append(("partial", p)), on_progress=lambda t: seen.append(("prog", t)))


def test_inline_worker_delivers_everything_in_order():
    seen, cb = recorder()
    w = Worker(InlineExecutor(), **cb)

    def task(n, state):
        state.set_progress("half")
        state.set_partial_result(n)
        return n * 2
    w.start(task, 21)
    w.start(lambda state: 1 / 0)
    assert seen == [("prog", "half"), ("partial", 21), ("done", 42), ("exc", "division by zero")]
    assert not w.busy


def test_a_new_start_replaces_the_running_task_and_drops_its_result():
    ex = ThreadExecutor()
    seen, cb = recorder()
    w = Worker(ex, **cb)
    gate, stopped = threading.Event(), threading.Event()

    def slow(state):
        gate.wait(10)
        if state.is_interruption_requested():
            stopped.set()
        return "slow"
    w.start(slow)
    w.start(lambda state: "fast")
    gate.set()
    assert ex.wait(10)
    assert seen == [("done", "fast")] and stopped.is_set()


def test_interrupt_stops_early_but_delivers_what_was_made():
    ex = ThreadExecutor()
    seen, cb = recorder()
    w = Worker(ex, **cb)
    started = threading.Event()

    def task(state):
        started.set()
        done = 0
        while not state.cancel.wait(0.01):
            done += 1
        return "stopped"
    w.start(task)
    assert started.wait(10)
    w.interrupt()
    assert ex.wait(10)
    assert seen == [("done", "stopped")]
    w.start(task)
    assert started.wait(10)
    w.cancel()                                  # cancel: nothing is delivered
    assert ex.wait(10) and seen == [("done", "stopped")] and not w.busy


def test_latest_policy_runs_the_newest_waiting_start_after_the_current_one():
    ex = ThreadExecutor()
    seen, cb = recorder()
    w = Worker(ex, policy=LATEST, **cb)
    gate = threading.Event()
    w.start(lambda state: gate.wait(10) and "first")
    w.start(lambda state: "second")
    w.start(lambda state: "third")
    assert w.busy
    gate.set()
    assert ex.wait(10)
    ex.wait(10)
    assert seen == [("done", "first"), ("done", "third")] and not w.busy
