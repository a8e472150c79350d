"""core.session.Session without Qt: the model under the window, driven inline."""
from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from compactscope.core.runtime.jobs import ThreadExecutor
from compactscope.core.session.model import SNAPSHOT_VERSION, Session
from compactscope.core.strategies.base import MATCH, SKIPPED
from compactscope.core.files.workspace import Workspace

ROOT = Path(__file__).resolve().parent.parent
LONG = ROOT / "assets" / "examples" / "long_session.json"
BOUNDARY = ROOT / "assets" / "examples" / "boundary_case.json"


@pytest.fixture
def session(tmp_path):
    s = Session(Workspace(tmp_path / "ws"), strategy="s08")
    s.log = []
    s.events.changed.connect(lambda ev: s.log.append(ev.type))
    return s


def test_open_runs_and_produces_what_views_show(session):
    assert session.source.open(str(LONG))
    tr = session.trace
    assert tr is not None and session.runs == 1 and session.error is None
    assert session.log.index("source") < session.log.index("result") < session.log.index("ready")
    stages = session.view.stages()
    assert [s.label for s in stages] == ["Original", "L3 budget", "L1 snip", "L2 micro", "L4 summary"]
    assert [s.status for s in stages[1:]] == ["changed"] * 4
    assert stages[2].explanation == tr.steps[1].explain()
    # each stage: the messages of the step, the rows marked, the snip's cut lines
    session.view.set_stage(2)
    view = session.view.stage_view()
    snip = tr.steps[1]
    assert view.messages is snip.messages and view.step is snip and view.shown == 2
    assert view.status and all(k in ("inserted", "changed", "duplicated") for k in view.status.values())
    assert any(style == "cut" for lines in view.cuts.values() for _, style in lines)
    session.view.set_view_mode("before")
    before = session.view.stage_view()
    assert before.messages is snip.input and before.shown == 1
    assert set(before.status.values()) == {"removed"} and len(before.status) == snip.vars["snipped"]
    session.view.set_view_mode("after")
    session.view.set_stage(4)
    summ = session.view.stage_view()
    assert list(summ.badges.values()) == ["summary by offline summary"]
    chart = session.view.chart()
    assert chart.labels[0] == "Original" and chart.sizes[1:] == [s.size_after for s in tr.steps]
    assert chart.threshold == 50_000 and chart.unit == "size" and chart.movable
    assert session.view.status_text().startswith(f"{len(summ.messages):,} messages") and "strategy s08 (the file's own pipeline) \u00b7 run 1" in \
        session.view.status_text()


def test_selection_follows_the_message_through_the_layers(session):
    session.source.open(str(LONG))
    tr = session.trace
    last = len(tr.input) - 1
    session.view.set_stage(0)
    session.view.select(last)
    session.view.set_stage(2)
    assert session.view.selection == len(tr.steps[1].messages) - 1
    assert session.view.stage_view().messages[session.view.selection] is tr.steps[0].messages[last]     # shared by the snip
    session.view.set_view_mode("before")
    assert session.view.selection == tr.map_index(last, 0, 1)
    session.view.set_view_mode("after")
    session.run()                                   # a re-run keeps it
    assert session.runs == 2 and session.view.selection == len(session.trace.steps[1].messages) - 1
    removed = tr.steps[1].vars["head_end"]          # a message the snip removed has no place after it
    session.view.set_view_mode("before")
    session.view.select(removed)
    session.view.set_view_mode("after")
    assert session.view.selection is None


def test_a_threshold_drag_is_set_param_and_reruns(session):
    session.source.open(str(LONG))
    assert session.trace.step("compact_history").triggered is True
    session.log.clear()
    assert session.setup.drag_threshold(400_000.4)
    assert session.setup.params["context_limit"] == 400_000 and session.trace.params["context_limit"] == 400_000
    assert session.trace.step("compact_history").triggered is False
    assert session.log.index("params") < session.log.index("result")
    session.setup.set_strategy("claude_code")
    assert not session.setup.drag_threshold(1.0) and session.runs == 3          # derived threshold: not draggable


def test_variant_runs_beside_and_can_be_selected(session):
    session.source.open(str(BOUNDARY))
    run = session.view.variant_run()
    assert session.setup.variant is None and run.variant.name == "readme" and run.step.role == "snip"
    session.setup.set_variant("readme")
    assert session.setup.variant == "readme" and session.setup.params["variant"] == "readme" and session.view.variant_run() is None
    session.setup.set_variant(None)
    assert session.setup.params["variant"] == "guarded"
    with pytest.raises(KeyError):
        session.setup.set_variant("nope")


def test_errors_say_what_to_do(session, tmp_path):
    bad = tmp_path / "broken.json"
    bad.write_text('[{"role": "user", "content": "hi"},\n{"role": ', encoding="utf-8")
    assert not session.source.open(str(bad))
    assert "broken.json" in session.error.what and session.error.todo
    assert session.source.open(str(LONG)) and session.error is None
    assert not session.setup.set_params({"max_messages": "many"})
    assert "whole number" in session.error.what and session.setup.params["max_messages"] == 50
    session.replay.set_compare(extra="nosuch:x=1")
    session.replay.run_replay()
    assert "nosuch" in session.error.what and "NAME" in session.error.todo


def test_cross_check_verdict_is_an_event(session):
    session.source.open(str(LONG))
    assert session.crosscheck.check is None                    # s08 has no cross-check
    session.setup.set_strategy("hermes", {"trigger": "always"})
    c = session.crosscheck.check
    assert c.name == "hermes-agent 0.19.0" and c.verdict is not None
    assert c.verdict.status in (MATCH, SKIPPED) and session.log.count("verdict") >= 2


def test_the_cross_check_waits_until_the_result_is_shown_and_the_user_has_looked(tmp_path):
    """The real package's run over the trace (seconds at 100k messages) starts after the result is shown and is
    courteous: while the user acts (the window calls ``user_active`` on "ready" and on each step) it waits."""
    from compactscope.core.runtime import jobs
    from compactscope.core.runtime.jobs import ThreadExecutor, user_active
    from compactscope.core.strategies.base import CrossCheck, Verdict
    seen: list = []

    def check(trace):
        seen.append((list(s.log), jobs.COURTESY.should_wait()))
        return Verdict(MATCH, "the same")
    from compactscope.core import strategies
    from compactscope.core.runtime.record import replace
    ex = ThreadExecutor()
    s = Session(Workspace(tmp_path / "ws"), executor=ex)
    assert s.source.open(str(LONG)) and ex.wait(60) and not seen     # (s08, the file's own: no cross-check)
    s.log = []
    s.events.changed.connect(lambda ev: s.log.append(ev.type))
    s.events.changed.connect(lambda ev: user_active(0.5) if ev.type == "ready" else None)   # as the window does
    s.setup.set_strategy(replace(strategies.get("hermes"), cross_check=CrossCheck("fake", check)))
    assert ex.wait(60) and ex.wait(60)
    assert len(seen) == 1
    log, waiting = seen[0]
    assert "ready" in log and log.index("ready") < log.index("verdict")   # started after the result was shown
    assert not waiting                                                       # ... and once the user's pause ended
    assert s.crosscheck.check.verdict.status == MATCH


def test_a_big_lists_steps_are_aligned_after_its_result_is_shown_but_the_stage_it_opens_at(tmp_path, monkeypatch):
    """Over a big list (more than ``PREPARED_IN_RUN`` messages) the run aligns only the step of the stage the result
    opens at; the other steps' rows are made in the background once the result is shown (a parameter change's
    result came 0.3 s later for hermes's five steps at 100k messages), and they are the same rows."""
    from compactscope.core.pipeline.align import align
    from compactscope.core.runtime.jobs import user_active
    from compactscope.core.session import model
    monkeypatch.setattr(model, "PREPARED_IN_RUN", 10)
    ex = ThreadExecutor()
    s = Session(Workspace(tmp_path / "ws"), executor=ex)
    assert s.source.open(str(LONG)) and ex.wait(60)
    assert len(s.source.source_messages) > model.PREPARED_IN_RUN
    s.view.set_stage(3)                                 # micro_compact's stage: its step is run again below
    made_here: list = []                                # the steps aligned in the thread that shows the result
    compute = s.view.align.compute
    s.view.align.compute = lambda st: (threading.current_thread() is threading.main_thread()
                                       and made_here.append(st.layer), compute(st))[1]
    at_ready: list = []
    s.events.changed.connect(lambda ev: user_active(0.5) if ev.type == "result" else None)  # the preparer waits
    s.events.changed.connect(lambda ev: at_ready.append(
        [s.view.align.peek(st) is not None for st in s.trace.steps]) if ev.type == "ready" else None)
    before = list(s.trace.steps)
    s.setup.set_param("keep_recent", 1)                 # (read by micro_compact: the steps before it are kept)
    assert ex.wait(60) and ex.wait(60)
    steps = s.trace.steps
    kept = [any(st is b for b in before) for st in steps]
    assert kept == [True, True, False, False]
    assert s.view.stage == 3 and at_ready == [[True, True, True, False]]     # the kept ones and the one shown
    assert made_here == []                              # (none made by the thread showing the result)
    assert all(s.view.align.peek(st) is not None and s.view.status_after.peek(st) is not None
               and s.view.status_before.peek(st) is not None for st in steps)
    assert [list(s.view.align.peek(st)) for st in steps] == [list(align(st)) for st in steps]
    # a view waiting for the result (a compacted file opens at its first layer that changed the list): the stage
    # shown before and the one it asks for are both aligned in the run
    at_ready.clear()
    s.view.set_stage(2)
    s.pending_view = {"stage": "last"}
    s.setup.set_param("keep_recent", 2)
    assert ex.wait(60) and ex.wait(60)
    assert s.view.stage == 4 and at_ready == [[True, True, False, True]] and made_here == []


def test_replay_cursor_and_call_shown(session):
    session.source.open(str(LONG))
    session.replay.set_compare(["hermes"], "tight=s08:max_messages=20")
    assert not session.replay.replay_results                # the replay runs when the timeline is shown
    session.view.set_tab("timeline")
    labels = [r.label for r in session.replay.replay_results]
    assert labels == ["current: s08", "hermes (defaults)", "tight"]
    rr = session.replay.replay_result
    session.replay.set_cursor(7)
    assert session.replay.shown_call == 7 and len(session.trace.input) == rr.calls[7].messages_before
    assert "model call #7 of 30" in session.view.status_text() and session.replay.call_caption(7).startswith("model call #7")
    session.replay.set_follow(False)
    session.replay.set_cursor(3)
    assert session.replay.cursor == 3 and session.replay.shown_call == 7


def test_segment_and_call_choose_what_runs(session, tmp_path):
    msgs = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"},
            {"role": "user", "content": "c"}, {"role": "assistant", "content": "d"}, {"role": "user", "content": "e"}]
    p = tmp_path / "c.json"
    p.write_text(json.dumps(msgs), encoding="utf-8")
    session.source.open(str(p))
    assert len(session.trace.input) == 5
    session.source.set_call(1)
    assert session.trace.input == msgs[:3] and session.snapshot()["source"]["call"] == 1
    session.source.set_call(None)
    session.source.set_segment(0)
    assert len(session.trace.input) == 5
    with pytest.raises(ValueError):
        session.source.set_segment(3)


def test_snapshot_restores_the_whole_state(session, tmp_path):
    session.source.open(str(LONG))
    session.setup.set_strategy("s08", {"max_messages": 40})
    session.view.set_stage(3)
    session.view.set_view_mode("before")
    session.view.select(5)
    session.view.set_filters(search="pool", role="assistant")
    session.replay.set_compare(["claude_code"], "t=s08:context_limit=9000", run=False)
    snap = session.snapshot()
    assert json.loads(json.dumps(snap)) == snap and snap["version"] == SNAPSHOT_VERSION
    assert snap["params"] == {"max_messages": 40} and snap["view"]["stage"] == 3 and snap["view"]["selection"] == 5
    other = Session(Workspace(tmp_path / "ws2"))
    assert other.restore(snap)
    assert other.snapshot() == snap
    assert other.view.stage == 3 and other.view.view_mode == "before" and other.view.selection == 5
    assert other.view.stage_view().messages is other.trace.steps[2].input
    assert other.view.filters["search"] == "pool" and other.replay.compare_names == ["claude_code"]
    # a timeline snapshot brings the replay and its cursor back
    session.view.set_tab("timeline")
    session.replay.set_cursor(4)
    third = Session(Workspace(tmp_path / "ws3"))
    assert third.restore(session.snapshot())
    assert third.view.tab == "timeline" and third.replay.replay_results and third.replay.cursor == 4 and third.replay.shown_call == 4
    assert not third.restore({"version": 99}) and "another version" in third.error.what
    # a saved state edited by hand: a stage that is no number, no layer's name, opens at the original
    for bad in ([1], "nosuch_layer", "12abc", float("nan"), float("inf"), {"k": 1}):
        fourth = Session(Workspace(tmp_path / "ws4"))
        assert fourth.restore({**snap, "view": {**snap["view"], "stage": bad, "selection": None}})
        assert fourth.error is None and fourth.view.stage == 0 and fourth.trace is not None


def test_background_runs_deliver_on_the_home_thread(tmp_path):
    ex = ThreadExecutor()
    s = Session(Workspace(tmp_path), executor=ex)
    threads = []
    s.events.result.connect(lambda ev: threads.append(threading.current_thread()))
    assert s.source.open(str(LONG))
    assert s.busy and s.trace is None               # running in a worker thread
    assert ex.wait(60)
    assert s.trace is not None and not s.busy and threads[-1] is threading.current_thread()
    # a new run replaces a running one: only the newest result is shown
    s.setup.set_param("max_messages", 45)
    s.setup.set_param("max_messages", 44)
    assert ex.wait(60)
    assert s.trace.params["max_messages"] == 44 and s.runs == 2
