"""Issue 11 in the window: the context picker (conversation, real context, model call), real compactions as
rows of their own (a boundary row, the summary badged) in the list, the diff and the inspector, one verdict
with ``check``, and the timeline's divergence warning."""
from __future__ import annotations

from pathlib import Path

import pytest

from compactscope.core.model import contexts
from compactscope.core.analysis import divergence
from compactscope.core.analysis.checker import check_conversation
from compactscope.core.loaders import load

from conftest import CORPUS

CC = CORPUS / "entireio-cli"
B8 = CC / "b8-659b3a4dd4-0-full.jsonl"
FC = CC / "fc-99c919b212-0-full.jsonl"
VIEWER = CORPUS / "claude-code-viewer" / "fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl"
EXAMPLE = Path(__file__).resolve().parent.parent / "assets" / "examples" / "cc_real_compaction.jsonl"


@pytest.fixture
def win(make_window):
    w = make_window()
    w.session.setup.set_strategy("claude_code")
    return w


def _open(w, path, conversation=0):
    assert w.open_path(str(path), remember=False, conversation=conversation)
    assert w.wait_idle(60000)


def test_the_picker_chooses_the_real_context_the_pipeline_runs_on(qtbot, win, corpus):
    _open(win, B8)
    s, p = win.session, win.picker
    conv = s.source.conversation
    segs = contexts.segments(conv)
    # a compacted session opens on the context its first real compaction replaced (issue 23); the picker offers
    # every segment, then the whole history
    assert s.source.segment == 0 and p.segment_box.count() == 4 and p.segment_box.isEnabled()
    assert "segment 0" in p.segment_box.currentText()
    assert win.session.trace.input == conv.messages[segs[0].start:segs[0].end]
    p.segment_box.setCurrentIndex(2)
    assert win.wait_idle(60000)
    assert s.source.segment == 2 and "what the agent would send next" in p.segment_box.currentText()
    assert "never sent as one request" in p.segment_box.itemText(3)
    assert win.session.trace.input == conv.messages[segs[2].start:segs[2].end]
    # the user picks segment 0: the pipeline runs over that real context
    p.segment_box.setCurrentIndex(0)
    assert win.wait_idle(60000)
    assert s.source.segment == 0 and win.session.trace.input == conv.messages[segs[0].start:segs[0].end]
    # the call box lists that segment's calls, numbered over the whole history as replay numbers them
    calls = [p.call_box.itemData(i) for i in range(1, p.call_box.count())]
    assert calls == list(range(segs[0].first_call, segs[0].first_call + segs[0].calls))
    # picking a call runs over exactly what was sent at it; the timeline's cursor goes there
    k = p.call_box.findData(segs[0].first_call + 5)
    p.call_box.setCurrentIndex(k)
    assert win.wait_idle(60000)
    assert s.source.call == segs[0].first_call + 5 and s.replay.cursor == s.source.call
    assert win.session.trace.input == contexts.call_context(conv, s.source.call).messages
    assert "call " + str(s.source.call) in p.summary()
    # the whole history only when asked for
    p.segment_box.setCurrentIndex(3)
    assert win.wait_idle(60000)
    assert s.source.segment is None and s.source.call is None and len(win.session.trace.input) == len(conv.history())


def test_the_picker_gives_its_room_to_what_can_be_picked(qtbot, win, corpus):
    """One conversation: no conversation box (its room goes to the segment and call boxes); every box says its
    whole current text on hover, since a narrow window cuts it."""
    _open(win, B8)
    p = win.picker
    assert p.conversation_box.isHidden() and not p.segment_box.isHidden()
    assert p.segment_box.currentText() in p.segment_box.toolTip()
    assert p.call_box.currentText() in p.call_box.toolTip()
    p.call_box.setCurrentIndex(1)              # the segment's first call
    assert win.wait_idle(60000)
    assert p.call_box.currentText() in p.call_box.toolTip() and "call" in p.call_box.currentText()
    _open(win, VIEWER)
    assert not p.conversation_box.isHidden() and p.conversation_box.currentText() in p.conversation_box.toolTip()


def test_the_picker_opens_subagents_and_sidechains(qtbot, win, corpus):
    result = load(str(VIEWER))
    assert len(result.conversations) > 1
    _open(win, VIEWER)
    p = win.picker
    assert p.conversation_box.isEnabled() and p.conversation_box.count() == len(result.conversations)
    assert p.conversation_box.itemText(0).startswith("0 \u00b7 main")
    p.conversation_box.setCurrentIndex(2)
    assert win.wait_idle(60000)
    assert win.session.source.conversation_index == 2
    assert [m.get("content") for m in win.session.trace.input] == \
        [m.get("content") for m in result.conversations[2].history()]


def test_the_window_command_takes_conversation_segment_and_call(corpus, tmp_path):
    import subprocess
    import sys
    out = tmp_path / "b8.png"
    r = subprocess.run([sys.executable, "-m", "compactscope", str(B8), "--call", "-1", "--screenshot", str(out),
                        "--size", "1024x768"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and out.stat().st_size > 10_000, r.stderr
    r = subprocess.run([sys.executable, "-m", "compactscope", str(B8), "--call", "100000", "--screenshot",
                        str(out)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 2 and "no model call 100000" in r.stderr


def test_a_real_compaction_is_a_row_of_its_own(qtbot, win):
    _open(win, EXAMPLE)
    s = win.session
    conv = s.source.conversation
    ev = conv.events[0]
    # the last segment starts with the boundary row before its summary, badged as such
    s.source.set_segment(len(conv.segments) - 1)
    assert win.wait_idle(60000)
    s.view.set_stage(0)
    view = s.view.stage_view()
    assert any(style == "boundary" and "REAL COMPACTION" in text and "preTokens 157,570" in text
               for text, style in view.cuts.get(0, ()))
    assert view.badges.get(0) == "compact summary"
    assert win.messages.model.data(win.messages.model.index(0), 3).startswith("REAL COMPACTION")       # the tooltip says it
    # the whole history: the boundary comes where the compaction happened, not as ordinary user text
    s.source.set_segment(None)
    assert win.wait_idle(60000)
    view = s.view.stage_view()
    at = [i for i, cuts in view.cuts.items() if any(st == "boundary" for _, st in cuts)]
    assert at == [ev.summary_index] and view.badges[ev.summary_index] == "compact summary"
    # the inspector names it
    win.select_message(ev.summary_index)
    assert win.inspector.compaction.isVisibleTo(win.inspector)
    assert "summary written at this real compaction" in win.inspector.compaction.text()
    win.select_message(ev.summary_index + 1)
    assert not win.inspector.compaction.isVisibleTo(win.inspector)
    # the diff: a boundary row spanning both sides before the summary, on each layer
    win.session.view.set_stage(1)
    assert win.wait_idle(60000)
    m = win.diff_panel.model
    rows = m.boundary_rows()
    assert len(rows) == 1 and "REAL COMPACTION" in m.data(m.index(rows[0], 0))
    nxt = m.rows[rows[0] + 1]
    assert nxt.left == ev.summary_index and win.diff_panel.view.columnSpan(rows[0], 0) == 2


@pytest.mark.parametrize("path", [FC, B8, CC / "e1-2c3e2b3f2a-0-full.jsonl"], ids=lambda p: p.name[:2])
def test_the_windows_findings_are_checks_on_every_context(qtbot, win, corpus, path):
    """qa #2: one verdict. The findings the window shows for each real context are what ``check --segment``
    finds there (fc's unanswered tool_use at the end of its first context is a warning in both)."""
    _open(win, path)
    conv = win.session.source.conversation
    for seg in contexts.segments(conv):
        win.session.source.set_segment(seg.index if len(conv.segments) > 1 else None)
        assert win.wait_idle(60000)
        win.session.view.set_stage(0)           # the file opened at its first compaction's layer (issue 23)
        shown = [str(f) for f in win.session.view.stage_findings(0)]
        assert win.session.view.stage_view().where == ("in this real API context, as recorded" if len(conv.segments) > 1
                                                  else "in the conversation as loaded")
        assert shown == [str(f) for f in check_conversation(contexts.segment_context(conv, seg.index))]


def test_the_timeline_warns_where_the_replay_and_reality_diverge(qtbot, corpus):
    from compactscope.core.replay import replay
    from compactscope.core.strategies import get, infer_params
    from compactscope.widgets.timeline import TimelineWidget
    conv = load(str(B8)).main
    w = TimelineWidget()
    qtbot.addWidget(w)
    w.resize(900, 500)
    w.show()
    # the documented defaults (no inference): the replay misses b8's compactions
    off = replay(conv, "claude_code")
    rows = [r for r in divergence.report(off)["compactions"] if r["diverges"]]
    w.set_replays([off])
    assert rows and w.divergence.isVisibleTo(w) and w.divergence_rows == rows
    text = w.divergence.text()
    assert text.count("simulation and reality diverge") == len(rows)
    assert all(r["explanation"] in text for r in rows)
    # with what the session says, it does not: no warning
    inferred = infer_params(get("claude_code"), conv)
    w.set_replays([replay(conv, "claude_code", params=inferred.params)])
    assert not w.divergence.isVisibleTo(w) and w.divergence_rows == []
    w.set_replays([])
    assert not w.divergence.isVisibleTo(w)


def test_the_windows_timeline_warns_with_the_documented_defaults(qtbot, make_window, corpus, tmp_path):
    """gui --no-infer: the window runs the strategy's documented defaults; its timeline then says where b8's
    replay misses the real compactions and which setting explains it; with what the session says it does not."""
    import subprocess
    import sys
    w = make_window()
    w.session.setup.set_strategy("claude_code")
    w.session.setup.infer = False
    _open(w, B8)
    assert w.session.setup.params["cap_reserve"] is True and not w.session.setup.inferred.params
    with qtbot.waitSignal(w.sigReplayReady, timeout=60000):
        w.tabs.setCurrentIndex(2)
    qtbot.waitUntil(lambda: w.timeline_panel.timeline.divergence.isVisibleTo(w.timeline_panel.timeline), timeout=5000)
    assert "cap_reserve=false" in w.timeline_panel.timeline.divergence.text()
    w.session.setup.infer = True
    with qtbot.waitSignal(w.sigReplayReady, timeout=60000):
        _open(w, B8)
        w.session.replay.run_replay()
    assert w.session.setup.params["cap_reserve"] is False
    qtbot.waitUntil(lambda: not w.timeline_panel.timeline.divergence.isVisibleTo(w.timeline_panel.timeline), timeout=5000)
    out = tmp_path / "b8.png"
    r = subprocess.run([sys.executable, "-m", "compactscope", str(B8), "--no-infer", "--tab", "timeline",
                        "--screenshot", str(out), "--size", "1024x768"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and out.stat().st_size > 10_000, r.stderr


def test_what_a_session_inferred_is_not_remembered_as_the_users(corpus):
    """b8's inferred cap_reserve=False belongs to b8: another file, or inference turned off, starts from the
    default again, and the window does not save it as the user's parameter for the next start."""
    from compactscope.core.session.model import Session
    s = Session(strategy="claude_code")
    assert s.source.open(str(B8))
    assert s.setup.params["cap_reserve"] is False and s.setup.params["idle_gap_minutes"] == 0
    assert "cap_reserve" not in s.setup.params_to_remember() and "idle_gap_minutes" not in s.setup.params_to_remember()
    s.setup.infer = False
    assert s.source.open(str(B8))
    assert s.setup.params["cap_reserve"] is True and s.setup.params["idle_gap_minutes"] == 60
    s.setup.infer = True
    s.setup.pin_params({"cap_reserve": False}, run=False)          # the user's own choice is remembered
    assert s.source.open(str(FC)) and s.setup.params["cap_reserve"] is False
    assert s.setup.params_to_remember()["cap_reserve"] is False
