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
    qtbot.keyClicks(win.messages.search, term)
    qtbot.wait(20)


def _stage(qtbot, win, k):
    with qtbot.waitSignal(win.sigStageShown, timeout=10000):
        win.stepper.set_current(k)


def test_the_list_marks_every_match_it_draws(qtbot, win):
    _search(qtbot, win, TERM.upper())                  # the search ignores case: so do the marks
    model, view = win.messages.model, win.messages.view
    matches = sorted(model.matches)
    assert matches
    view.select_message(matches[0])
    view.grab()                                         # paint the rows in sight
    delegate = view.delegate
    drawn = {mi: marks for mi, marks in delegate.marks.items() if marks}
    assert drawn and set(drawn) <= set(matches)
    for marks in drawn.values():
        for line, s, e in marks:
            assert line[s:e].lower() == TERM
    # a new term forgets the old marks
    win.messages.search.clear()
    qtbot.keyClicks(win.messages.search, "zzzz-not-there")
    view.grab()
    assert not any(delegate.marks.values())


def test_the_diff_marks_the_term_on_both_sides(qtbot, win):
    _search(qtbot, win, TERM)
    dm = win.diff_panel.model
    for k in range(1, len(win.stepper.stages)):          # the first layer that changed something
        _stage(qtbot, win, k)
        if dm.step is not None and dm.step.changed:
            break
    assert dm.step is not None and dm.step.changed
    assert dm.search_text == TERM
    rows = [r for r, row in enumerate(dm.rows) for col in (0, 1) if dm.matches(dm.message(r, col))]
    assert rows
    qtbot.wait(50)                                      # (the table scrolls to the first change first)
    table = win.diff_panel.view
    table.scrollTo(dm.index(rows[0], 0))
    table.grab()
    marks = [m for ms in table.itemDelegate().marks.values() for m in ms]
    assert marks and all(line[s:e].lower() == TERM for line, s, e in marks)


def test_the_inspector_marks_every_match_in_its_tabs(qtbot, win):
    _search(qtbot, win, TERM)
    mi = sorted(win.messages.model.matches)[0]
    win.select_message(mi)
    qtbot.wait(20)
    text = win.inspector.text.toPlainText()
    marked = editor_marks(win.inspector.text)
    assert marked and len(marked) == text.lower().count(TERM)
    assert all(m.lower() == TERM for m in marked)
    win.inspector.tabs.setCurrentWidget(win.inspector.json)       # the JSON tab is filled when shown: marked too
    assert editor_marks(win.inspector.json) and all(m.lower() == TERM for m in editor_marks(win.inspector.json))
    # the search cleared: no marks left
    win.messages.search.clear()
    assert editor_marks(win.inspector.text) == [] and editor_marks(win.inspector.json) == []


def test_escape_gives_the_focus_back_to_the_list(qtbot, win):
    win.activateWindow()
    _stage(qtbot, win, 2)
    search, view = win.messages.search, win.messages.view
    _search(qtbot, win, TERM)
    assert QApplication.focusWidget() is search
    first = sorted(win.messages.model.matches)[0]
    qtbot.keyClick(search, Qt.Key_Return)               # Enter: the next match
    assert view.currentIndex().data(Qt.UserRole + 2) == first
    qtbot.keyClick(search, Qt.Key_Escape)
    assert QApplication.focusWidget() is view
    assert search.text() == TERM                        # the term (and its marks) stay
    search.setCursorPosition(2)
    with qtbot.waitSignal(win.sigStageShown, timeout=10000):
        qtbot.keyClick(view, Qt.Key_Home)               # Home: the window's key (the first stage) again
    assert win.stepper.current == 0 and search.cursorPosition() == 2
