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
