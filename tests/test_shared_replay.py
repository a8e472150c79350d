"""One replay per configuration for the views that ask for the same one (``core/replay/shared.py``): the events
dock and the timeline replayed the same run twice (at 100k messages 25-50 s of CPU and 1.5 GB each)."""
from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from compactscope.core import strategies
from compactscope.core.analysis.session_events import replay_for
from compactscope.core.files.workspace import Workspace
from compactscope.core.loaders import load
from compactscope.core.pipeline.engine import Engine
from compactscope.core.replay import compare, shared as sh
from compactscope.core.strategies.spec import compare_runs
from helpers import wait_for

EXAMPLES = Path(__file__).resolve().parents[1] / "assets" / "examples"


class _Result:
    label = ""


@pytest.fixture(autouse=True)
def _clean():
    sh.forget()
    yield
    sh.forget()


def test_two_askers_of_one_key_share_one_run_each_with_its_label():
    runs, release = [], threading.Event()
    made = _Result()

    def compute():
        runs.append(1)
        release.wait(10)
        return made

    got: dict = {}
    a = threading.Thread(target=lambda: got.setdefault("a", sh.shared(("k",), compute, "events")))
    a.start()
    while not runs:
        time.sleep(0.01)
    b = threading.Thread(target=lambda: got.setdefault("b", sh.shared(("k",), compute, "timeline")))
    b.start()
    time.sleep(0.3)                        # b waits for a's run, it does not start its own
    release.set()
    a.join(10)
    b.join(10)
    assert runs == [1]
    assert got["a"].label == "events" and got["b"].label == "timeline" and got["a"] is not got["b"]
    later = sh.shared(("k",), compute, "again")
    assert runs == [1] and later.label == "again"        # finished and still held (``made``): shared again
    assert sh.shared(("other",), compute, "x") is not None and runs == [1, 1]


def test_a_cancelled_or_failed_run_is_not_shared_and_a_dropped_result_is_run_again():
    cancel = threading.Event()
    cancel.set()
    runs = []

    def compute():
        runs.append(1)
        return _Result()
    sh.shared(("k",), compute, "a", cancel)               # cancelled while it ran: not shared
    sh.shared(("k",), compute, "b")
    assert runs == [1, 1]
    with pytest.raises(RuntimeError):
        sh.shared(("boom",), lambda: (_ for _ in ()).throw(RuntimeError("x")), "a")
    assert sh.shared(("boom",), compute, "b") is not None and runs == [1, 1, 1]
    sh.shared(("gone",), compute, "a")                    # nobody holds the result: it is not kept alive here
    sh.shared(("gone",), compute, "b")
    assert len(runs) == 5


def test_a_waiter_whose_task_is_cancelled_stops_waiting():
    release = threading.Event()
    t = threading.Thread(target=lambda: sh.shared(("k",), lambda: release.wait(10) and _Result(), "a"))
    t.start()
    time.sleep(0.1)
    mine = threading.Event()
    threading.Timer(0.3, mine.set).start()
    assert sh.shared(("k",), lambda: _Result(), "b", mine) is None
    release.set()
    t.join(10)


@pytest.mark.parametrize("name,strategy", [("long_session.json", "s08"), ("cc_real_compaction.jsonl", "claude_code"),
                                           ("cc_real_compaction.jsonl", "hermes")])
def test_the_events_replay_and_the_timelines_are_the_same_run(tmp_path, name, strategy):
    """What makes sharing sound: under one key, the events dock's replay (``replay_for`` on its engine) and the
    timeline's (``compare`` of the one run) give the same calls, states and calibration."""
    conv = load(EXAMPLES / name).main
    st = strategies.get(strategy)
    params = st.resolve(strategies.infer_params(st, conv).apply({}))
    ws = Workspace(tmp_path / "w")
    events = replay_for(conv, Engine(st, dict(params), workspace=ws))
    cfg = compare_runs(st, params, conversation=conv)
    timeline = compare(conv, cfg, workspace=ws)[0]
    assert sh.key(conv, st, params, workspace=ws) == sh.key(conv, cfg[0].strategy, cfg[0].params, workspace=ws)
    assert [c.to_json() for c in events.calls] == [c.to_json() for c in timeline.calls]
    assert events.states == timeline.states and events.calibration == timeline.calibration
    assert events.mode == timeline.mode and events.late == timeline.late


class _Holder:
    def __init__(self, calls, inputs):
        self.calls, self.inputs = calls, inputs


def test_release_frees_in_pieces_what_only_it_holds_and_leaves_what_others_hold_whole():
    """A replay result a view let go of is taken apart in the release thread (its lists emptied a chunk at a
    time); a piece another view's copy still holds (the calls two copies share) is never emptied."""
    import weakref
    mine = [_Result() for _ in range(3 * sh.RELEASE_CHUNK + 5)]
    gone = weakref.ref(mine[0])
    shared_calls = [1, 2, 3]
    other_view = _Holder(shared_calls, None)
    sh.release(_Holder(mine, shared_calls))
    del mine
    assert wait_for(lambda: gone() is None, timeout=10.0)          # freed, by the release thread
    time.sleep(0.1)
    assert other_view.calls == [1, 2, 3] and other_view.calls is shared_calls


def test_release_waits_for_its_caller_to_let_go_and_never_empties_a_result_an_asker_can_still_get():
    """The caller drops its reference just after ``release``: the object is not freed in the caller's thread.
    A finished shared replay is taken out of the table first: no later asker gets a result being emptied."""
    import weakref
    box = [_Result()]
    box[0].calls = [_Result() for _ in range(10)]
    k = ("k",)
    held = sh.shared(k, box.pop, "a")               # the asker's copy; the table refers to it weakly
    calls = weakref.ref(held.calls[0])
    assert sh.shared(k, lambda: None, "b") is not None
    sh.release(held)
    del held
    assert wait_for(lambda: calls() is None, timeout=10.0)
    runs = []
    assert sh.shared(k, lambda: runs.append(1) or _Result(), "c").label == "c" and runs == [1]


def test_release_waits_while_the_user_acts_or_a_run_goes_on(monkeypatch):
    """Freeing is courteous: nothing is taken apart while the user acts (``user_active``: a step, a result just
    shown) or while a foreground run goes on in another thread; once both are over it is freed."""
    import weakref
    from compactscope.core.runtime import jobs
    monkeypatch.setattr(sh, "_PACE", jobs.CourteousEvent())   # (no slice left over from another test's waits)
    mine = [_Result() for _ in range(2 * sh.RELEASE_CHUNK)]
    gone = weakref.ref(mine[0])
    running, done = threading.Event(), threading.Event()

    def run():                                     # a foreground run (the pipeline's) in another thread
        jobs.COURTESY.enter()
        running.set()
        done.wait(10)
        jobs.COURTESY.leave()
    t = threading.Thread(target=run)
    t.start()
    assert running.wait(5)
    jobs.user_active(0.3)
    sh.release(_Holder(mine, None))
    del mine
    time.sleep(0.5)                                # (past the wait for the caller and the user's pause)
    assert gone() is not None and jobs.COURTESY.should_wait()      # the run goes on: nothing freed yet
    done.set()
    t.join()
    assert wait_for(lambda: gone() is None, timeout=10.0)


def test_release_of_something_held_elsewhere_does_nothing_to_it():
    keep = _Holder([1, 2], {"a": 1})
    sh.release(keep)
    time.sleep(1.3)                                   # (past the wait for the caller)
    assert keep.calls == [1, 2] and keep.inputs == {"a": 1}


def test_release_takes_nested_lists_dicts_and_tuples_apart_and_leaves_a_shared_inner_piece_whole():
    import weakref
    leaves = [_Result() for _ in range(2 * sh.RELEASE_CHUNK)]
    refs = [weakref.ref(x) for x in leaves]
    inner = {"kept": [1, 2]}
    tree = {"calls": [(x, {"n": k}) for k, x in enumerate(leaves)], "more": {k: [k] for k in range(600)},
            "shared": inner, "obj": _Holder(list(range(700)), inner)}
    del leaves
    sh.release(tree)
    del tree
    assert wait_for(lambda: all(r() is None for r in refs), timeout=10.0)
    time.sleep(0.1)
    assert inner == {"kept": [1, 2]}
