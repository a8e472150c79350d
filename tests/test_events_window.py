"""Issue 23 in the window: a compacted session opens at its first real compaction (the context it replaced, at
the layer that compacts it), the Events dock lists the events, F8 / Shift+F8 go from one to the next from anywhere,
the real summary beside the simulated one with what each kept and lost, and the watch box."""
from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from compactscope.core.analysis import session_events as ae
from compactscope.core.model import contexts

from conftest import CORPUS

B8 = CORPUS / "entireio-cli" / "b8-659b3a4dd4-0-full.jsonl"
EXAMPLES = Path(__file__).resolve().parent.parent / "assets" / "examples"
EXAMPLE = EXAMPLES / "cc_real_compaction.jsonl"


@pytest.fixture
def win(make_window):
    w = make_window()
    w.session.setup.set_strategy("claude_code")
    return w


def _open(w, path):
    assert w.open_path(str(path), remember=False)
    assert w.events_controller.wait(120000)


def _shown_layer(w):
    s = w.session
    return w.session.trace.steps[s.view.stage - 1] if s.view.stage else None


def test_a_compacted_session_opens_at_its_first_real_compaction(qtbot, win, corpus):
    _open(win, B8)
    s, ec = win.session, win.events_controller
    conv = s.source.conversation
    segs = contexts.segments(conv)
    # the context the first real compaction replaced, at the layer that compacts it, not the last segment's "no change"
    assert s.source.segment == 0 and s.source.call is None
    assert win.session.trace.input == conv.messages[segs[0].start:segs[0].end]
    step = _shown_layer(win)
    assert step is not None and step.layer == "auto_compact" and step.changed and step.triggered
    assert win.stepper.current == s.view.stage
    # the events panel lists the real compactions at their calls and marks the one shown
    real = [e for e in ec.events if e.kind == ae.REAL]
    assert [e.call for e in real] == [segs[1].first_call, segs[2].first_call]
    assert ec.panel.current == ec.events.index(real[0])
    assert ec.panel.tree.topLevelItemCount() == len(ec.events)
    assert "first real compaction" in ec.panel.shown.text() and ec.dock.isVisible()
    assert any(e.kind == ae.SIMULATED for e in ec.events)


def test_f8_and_shift_f8_go_from_event_to_event_from_anywhere(qtbot, win, corpus):
    _open(win, B8)
    s, ec = win.session, win.events_controller
    sim = next(k for k, e in enumerate(ec.events) if e.kind == ae.SIMULATED)
    assert sim == ec.panel.current + 1
    # F8 with the focus on the stepper: the replay's run before that call, at the layer that compacts
    win.stepper.setFocus()
    qtbot.keyClick(win.stepper, Qt.Key_F8)
    assert ec.wait(120000)
    call = ec.events[sim].call
    assert ec.panel.current == sim and s.replay.shown_call == call and s.replay.cursor == call
    assert _shown_layer(win).layer == "auto_compact" and _shown_layer(win).changed
    # F8 from the message list: the second real compaction, the context it replaced (segment 1)
    win.messages.view.setFocus()
    qtbot.keyClick(win.messages.view, Qt.Key_F8)
    assert ec.wait(120000)
    assert ec.events[ec.panel.current].kind == ae.REAL and s.source.segment == 1 and s.source.call is None
    assert _shown_layer(win).layer == "auto_compact"
    # Shift+F8 from the timeline goes back
    win.timeline_panel.timeline.setFocus()
    qtbot.keyClick(win.timeline_panel.timeline, Qt.Key_F8, Qt.ShiftModifier)
    assert ec.wait(120000)
    assert ec.panel.current == sim and s.replay.shown_call == call
    # the buttons do the same
    ec.panel.prev_button.click()
    assert ec.wait(120000)
    assert ec.panel.current == sim - 1 and s.source.segment == 0 and s.source.call is None


def test_the_real_summary_beside_the_simulated_one_with_kept_and_lost(qtbot, win, corpus):
    _open(win, B8)
    ec = win.events_controller
    rv = ec.retention_view
    assert rv.box.count() >= 2
    first = rv.pairs[0]
    assert first.real is not None and first.simulated is not None
    real = next(r for r in ec.retention if r.kind == "real")
    assert len(first.real.kept) == len(real.kept) and len(first.real.lost) == len(real.lost)
    html = rv.real.toPlainText()
    assert "This session is being continued" in html          # the real summary itself, in full
    assert "\u2718" in html or "\u2714" in html
    last = real.last_request()
    assert last is not None and " ".join(last[0].text.split())[:40] in " ".join(html.split())
    assert "claude_code" in rv.simulated.toPlainText()
    # choosing the second real compaction shows it
    rv.box.setCurrentIndex(1)
    assert "before call" in rv.real.toPlainText()


def test_the_watch_box_follows_a_term_and_jumps_to_what_removed_it(qtbot, win, corpus):
    _open(win, B8)
    s, ec = win.session, win.events_controller
    ec.watch_box.set_term("GetCurrentTranscriptLineLength")
    assert ec.wait(120000)
    texts = [r.text for r in ec.watch_box.rows]
    assert "segment 2: absent" in texts and any(t.startswith("segment 0: present") for t in texts)
    k = next(i for i, r in enumerate(ec.watch_box.rows) if r.kind == "real")
    assert ec.watch_box.rows[k].call == contexts.segments(s.source.conversation)[2].first_call
    ec.watch_box.tree.itemClicked.emit(ec.watch_box.tree.topLevelItem(k), 0)
    assert ec.wait(120000)
    assert s.source.segment == 1 and s.source.call is None and _shown_layer(win).layer == "auto_compact"


def test_a_file_without_real_compactions_opens_as_before_and_lists_the_simulated_ones(qtbot, make_window):
    w = make_window()
    _open(w, EXAMPLES / "long_session.json")
    s, ec = w.session, w.events_controller
    assert s.source.segment is None and s.view.stage == 0
    assert ec.events and all(e.kind != ae.REAL for e in ec.events)
    k = next(i for i, e in enumerate(ec.events) if e.kind == ae.LAYER)
    ec.panel.tree.itemClicked.emit(ec.panel.tree.topLevelItem(k), 0)
    assert ec.wait(120000)
    e = ec.events[k]
    assert s.replay.shown_call == e.call and _shown_layer(w).layer == e.data["layer"] and _shown_layer(w).changed
    assert "before call" in ec.panel.shown.text()


def test_the_bundled_compacted_example_opens_before_its_compaction(qtbot, win):
    _open(win, EXAMPLE)
    s, ec = win.session, win.events_controller
    assert s.source.segment == 0 and _shown_layer(win) is not None and _shown_layer(win).changed
    assert [e.kind for e in ec.events if e.kind == ae.REAL] == ["real_compaction"]
    # a snapshot (the language switch rebuilds the window from one) keeps its own view
    s.source.set_segment(1)
    assert win.wait_idle(60000)
    snap = s.snapshot()
    other = type(win)(win.settings, workspace=win.session.workspace)
    qtbot.addWidget(other)
    assert other.session.restore(snap)
    assert other.events_controller.wait(120000)
    assert other.session.source.segment == 1


@pytest.mark.parametrize("lang,size", [("en", (1024, 768)), ("zh_CN", (1920, 1080))])
def test_screenshots_of_the_events_views(qtbot, tmp_path, isolated_settings, lang, size):
    """The four views (app/events_shots.py) at a size, in a language: every text of the dock is in that language."""
    from compactscope.app import language
    from compactscope.app.events_shots import VIEWS, shoot
    from compactscope.app.main_window import MainWindow
    from compactscope.app.settings import Settings
    from compactscope.core.files.workspace import Workspace
    language.install(lang)
    try:
        w = MainWindow(Settings(), workspace=Workspace(tmp_path / "ws"))
        qtbot.addWidget(w)
        w.resize(*size)
        w.show()
        _open(w, EXAMPLE)
        paths = shoot(w, "compactscope", tmp_path, f"{lang}")
        assert [p.name for p in paths] == [f"{lang}-{v}.png" for v in VIEWS]
        assert all(p.stat().st_size > 10_000 for p in paths)
        ec = w.events_controller
        han = any("\u4e00" <= ch <= "\u9fff" for ch in ec.tabs.tabText(0) + ec.panel.summary.text()
                  + ec.panel.tree.topLevelItem(0).text(3) + ec.watch_box.status.text())
        assert han == (lang == "zh_CN")
    finally:
        language.install("en")


def test_the_timeline_and_the_events_dock_share_one_replay(qtbot, make_window):
    """With one run on the timeline, the events dock's replay and the timeline's are one run (the same calls),
    each labelled as its view names it; a compared run makes the timeline replay on its own."""
    w = make_window()
    _open(w, EXAMPLES / "long_session.json")
    s, ec = w.session, w.events_controller
    s.view.set_tab("timeline")
    assert w.wait_idle(120000) and s.replay.replay_results
    mine = s.replay.replay_results[0]
    assert mine.calls is ec.replay.calls and mine.inputs is ec.replay.inputs
    assert mine.label.startswith("current:") and ec.replay.label == s.setup.strategy.name
    s.replay.set_compare(["claude_code"], "")
    assert w.wait_idle(120000) and len(s.replay.replay_results) == 2
    assert s.replay.replay_results[0].calls is not ec.replay.calls
