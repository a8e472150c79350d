"""Presenter mode's layout (offscreen; the real X server's checks are in test_projector_x11.py): the side panels
fold into centre tabs and come back, the layer buttons follow the zoom, a lesson slide's ``show`` brings the
chart it speaks of to the front (that slide only), the status line wraps instead of dropping parts."""
from __future__ import annotations

import json

import pytest

from conftest import EXAMPLES


def open_wait(qtbot, win, path):
    with qtbot.waitSignal(win.sigTraceReady, timeout=60000):
        assert win.open_path(str(path))
    win.wait_idle()


def test_the_panels_fold_into_tabs_and_come_back(qtbot, make_window):
    win = make_window()
    open_wait(qtbot, win, EXAMPLES / "long_session.json")
    assert win.tabs.count() == 3 and win.dock_chart.widget() is win.chart
    win.set_presenter(True)
    assert win.tabs.count() == 6
    assert [win.tabs.widget(k) for k in range(3, 6)] == [win.inspector, win.chart, win.findings]
    assert not win.dock_chart.isVisible() and not win.dock_inspector.isVisible() and not win.dock_params.isVisible()
    assert win.presenter_mode.show_panel("chart") and win.tabs.currentWidget() is win.chart
    assert win.splitter.sizes()[0] == 0                  # a chart gets the whole width
    win.tabs.setCurrentIndex(0)
    assert win.splitter.sizes()[0] > 0                   # the message list is back for the before/after
    win.set_zoom(8, save=False)                          # Ctrl+plus in presenter mode: the layer buttons grow too
    pt = win.font().pointSizeF()
    assert all(b.font().pointSizeF() == pt for b in win.stepper.group.buttons())
    assert f"{pt:.1f}pt" in win.tabs.tabBar().styleSheet()
    win.set_presenter(False)
    assert win.tabs.count() == 3 and win.dock_chart.widget() is win.chart
    assert win.dock_inspector.widget() is win.inspector
    assert win.dock_chart.isVisible() and win.dock_inspector.isVisible() and win.tabs.tabBar().styleSheet() == ""


def test_a_slide_shows_the_chart_it_speaks_of(qtbot, make_window):
    win = make_window()
    with qtbot.waitSignal(win.sigTraceReady, timeout=60000):
        assert win.lesson_controller.open("s08-pipeline")
    win.wait_idle()
    assert win.presenter and win.tabs.currentWidget() is win.chart          # "the red line in the chart"
    win.lesson_controller.show(2)
    win.wait_idle()
    assert win.tabs.currentWidget() is win.diff_panel                       # 'show' is that slide's only
    win.lesson_controller.show(5)
    win.wait_idle()
    assert win.tabs.currentWidget() is win.chart                            # "below the red line"
    win.lesson_controller.close()
    assert not win.presenter and win.tabs.count() == 3


def test_show_is_checked_and_not_inherited(tmp_path):
    from compactscope.core.session import lesson as lessons
    lesson = lessons.load("s08-pipeline")
    assert [s.state["show"] for s in lesson.slides] == ["chart", None, None, None, "chart"]
    bad = json.loads(lesson.path.read_text(encoding="utf-8"))
    bad["state"]["file"] = str(EXAMPLES / "long_session.json")
    bad["slides"][0]["state"]["show"] = "banner"
    p = tmp_path / "bad.json"
    p.write_text(json.dumps(bad), encoding="utf-8")
    with pytest.raises(lessons.LessonError, match="show is chart, findings, inspector or null"):
        lessons.load(str(p))


def test_the_status_line_wraps_instead_of_dropping_parts(qtbot):
    from compactscope.widgets.flow import FitLabel
    lab = FitLabel("")
    qtbot.addWidget(lab)
    lab.max_lines = 3
    parts = [f"part number {k} of the status" for k in range(6)]
    lab.resize(lab.fontMetrics().horizontalAdvance(" \u00b7 ".join(parts[:2])) + 20, 60)
    lab.setText(" \u00b7 ".join(parts))
    shown = lab.__class__.__mro__[1].text(lab)
    assert shown.count("\n") == 2 and "\u2026" not in shown.split("\n")[0]
    one = FitLabel("")
    qtbot.addWidget(one)
    one.resize(lab.width(), 20)
    one.setText(" \u00b7 ".join(parts))
    said = one.__class__.__mro__[1].text(one)
    assert "\n" not in said and said.endswith("\u2026")               # one line: the leading parts and "…"


def test_offscreen_keeps_the_size_asked_for(qtbot, make_window):
    from compactscope.app import screen_fit
    win = make_window()
    win.resize(1400, 900)
    screen_fit.clamp(win)
    assert (win.width(), win.height()) == (1400, 900) and not screen_fit.real_screen()
    assert screen_fit.fill(win) is None
