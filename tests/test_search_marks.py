"""Issue 23, point 6: Ctrl+F search marks every match where it is shown (the message list's rows, the before/after
table, the inspector's tabs), and Escape gives the focus back to the message list."""
from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from compactscope.widgets.search_marks import editor_marks, match_ranges

EXAMPLES = Path(__file__).resolve().parent.parent / "assets" / "examples"
TERM = "layout"                   # in long_session.json's assistant text ("I'll look at the layout first.")


def test_match_ranges_are_case_insensitive_and_do_not_overlap():
    assert match_ranges("Layout, LAYOUT and layout", "layout") == [(0, 6), (8, 14), (19, 25)]
    assert match_ranges("aaaa", "aa") == [(0, 2), (2, 4)]
    assert match_ranges("nothing here", "layout") == [] and match_ranges("text", "") == []
    assert len(match_ranges("a" * 10_000, "a", limit=50)) == 50


@pytest.fixture
def win(qtbot, make_window):
    w = make_window()
    with qtbot.waitSignal(w.sigTraceReady, timeout=60000):
        assert w.open_path(str(EXAMPLES / "long_session.json"), remember=False)
    w.wait_idle(60000)
    return w


def _search(qtbot, win, term):
    win.focus_search()
    qtbot.keyClicks(win.search, term)
    qtbot.wait(20)


def test_the_list_marks_every_match_it_draws(qtbot, win):
    _search(qtbot, win, TERM.upper())                  # the search ignores case: so do the marks
    matches = sorted(win.model.matches)
    assert matches
    win.view.select_message(matches[0])
    win.view.grab()                                     # paint the rows in sight
    delegate = win.view.delegate
    drawn = {mi: marks for mi, marks in delegate.marks.items() if marks}
    assert drawn and set(drawn) <= set(matches)
    for marks in drawn.values():
        for line, s, e in marks:
            assert line[s:e].lower() == TERM
    # a new term forgets the old marks
    win.search.clear()
    qtbot.keyClicks(win.search, "zzzz-not-there")
    win.view.grab()
    assert not any(delegate.marks.values())


def test_the_diff_marks_the_term_on_both_sides(qtbot, win):
    _search(qtbot, win, TERM)
    step = next(k for k, st in enumerate(win.trace.steps, start=1) if st.changed)
    with qtbot.waitSignal(win.sigStageShown, timeout=10000):
        win.session.set_stage(step)
    dm = win.diff_model
    assert dm.search_text == TERM
    rows = [r for r, row in enumerate(dm.rows) for col in (0, 1) if dm.matches(dm.message(r, col))]
    assert rows
    qtbot.wait(50)                                      # (the table scrolls to the first change first)
    win.diff.scrollTo(dm.index(rows[0], 0))
    win.diff.grab()
    marks = [m for ms in win.diff.itemDelegate().marks.values() for m in ms]
    assert marks and all(line[s:e].lower() == TERM for line, s, e in marks)


def test_the_inspector_marks_every_match_in_its_tabs(qtbot, win):
    _search(qtbot, win, TERM)
    mi = sorted(win.model.matches)[0]
    win.select_message(mi)
    qtbot.wait(20)
    text = win.inspector.text.toPlainText()
    marked = editor_marks(win.inspector.text)
    assert marked and len(marked) == text.lower().count(TERM)
    assert all(m.lower() == TERM for m in marked)
    win.inspector.tabs.setCurrentWidget(win.inspector.json)       # the JSON tab is filled when shown: marked too
    assert editor_marks(win.inspector.json) and all(m.lower() == TERM for m in editor_marks(win.inspector.json))
    # the search cleared: no marks left
    win.search.clear()
    assert editor_marks(win.inspector.text) == [] and editor_marks(win.inspector.json) == []


def test_escape_gives_the_focus_back_to_the_list(qtbot, win):
    win.activateWindow()
    with qtbot.waitSignal(win.sigStageShown, timeout=10000):
        win.session.set_stage(2)
    _search(qtbot, win, TERM)
    assert QApplication.focusWidget() is win.search
    first = sorted(win.model.matches)[0]
    qtbot.keyClick(win.search, Qt.Key_Return)           # Enter: the next match
    assert win.view.currentIndex().data(Qt.UserRole + 2) == first
    qtbot.keyClick(win.search, Qt.Key_Escape)
    assert QApplication.focusWidget() is win.view
    assert win.search.text() == TERM                    # the term (and its marks) stay
    win.search.setCursorPosition(2)
    with qtbot.waitSignal(win.sigStageShown, timeout=10000):
        qtbot.keyClick(win.view, Qt.Key_Home)           # Home: the window's key (the first stage) again
    assert win.session.stage == 0 and win.search.cursorPosition() == 2
