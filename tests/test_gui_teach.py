"""Teaching features of the window: variant and layer order in the parameter panel, the lost result."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pytestqt")

from test_explain_variant import _batch_file  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "assets" / "examples"
pytestmark = pytest.mark.usefixtures("isolated_settings")
SWAPPED = ["micro_compact", "tool_result_budget", "snip_compact", "compact_history"]


def open_wait(qtbot, w, path) -> None:
    with qtbot.waitSignal(w.sigTraceReady, timeout=60000):
        assert w.open_path(str(path)), getattr(w, "last_error", "")


def test_layer_order_and_variant_from_the_parameter_panel(qtbot, make_window, tmp_path):
    win = make_window()
    path = tmp_path / "batch.json"
    path.write_text(json.dumps(_batch_file()), encoding="utf-8")
    win.session.setup.set_params({"max_bytes": 30_000}, run=False)
    open_wait(qtbot, win, path)
    box = win.params_panel.order_box
    assert box.order() == win.session.setup.strategy.layer_names and not box.reset.isEnabled()
    # move L2 micro to the top with the arrow button: the session runs the new order
    box.list.setCurrentRow(2)
    with qtbot.waitSignal(win.sigTraceReady, timeout=60000):
        box.up.click()
    box.list.setCurrentRow(1)
    with qtbot.waitSignal(win.sigTraceReady, timeout=60000):
        box.up.click()
    assert win.session.setup.order == SWAPPED and [s.layer for s in win.session.trace.steps] == SWAPPED
    # micro replaced the batch's big result before budget could persist it: the UI says LOST
    lost = win.session.view.lost()
    assert [x.tool_id for x in lost] == ["new0"]
    assert "LOST" in win.session.view.stages()[1].explanation
    win.stepper.set_current(1)
    texts = [win.diff_panel.edits.item(i).text() for i in range(win.diff_panel.edits.count())]
    assert any(t.startswith("\u26a0 LOST: new0 (36,000 chars)") for t in texts)
    assert win.messages.model.badges.get(lost[0].message, "").startswith("LOST")
    # Reset: the strategy's own order, nothing lost
    with qtbot.waitSignal(win.sigTraceReady, timeout=60000):
        box.reset.click()
    assert win.session.setup.order is None and win.session.view.lost() == []
    # the variant box picks the README variant and follows the parameter
    vb = win.params_panel.variant_box
    assert vb.isVisibleTo(win.params_panel) and vb.currentData() is None
    with qtbot.waitSignal(win.sigTraceReady, timeout=60000):
        vb.activated.emit(vb.findData("readme"))
    assert win.session.setup.params["variant"] == "readme" and vb.currentData() == "readme"


def test_window_takes_variant_and_order(tmp_path):
    out = tmp_path / "o.png"
    r = subprocess.run([sys.executable, "-m", "compactscope", str(EXAMPLES / "boundary_case.json"), "--variant",
                        "readme", "--order", ",".join(SWAPPED), "--step", "1", "--size", "1024x768",
                        "--screenshot", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "L2 micro" in r.stdout            # stage 1 is micro: the order applied
    bad = subprocess.run([sys.executable, "-m", "compactscope", str(EXAMPLES / "boundary_case.json"), "--order",
                          "nope", "--screenshot", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "no layer 'nope'" in bad.stderr and "Traceback" not in bad.stderr


def test_lesson_in_the_window(qtbot, make_window):
    from PySide6.QtCore import Qt
    from PySide6.QtTest import QTest
    win = make_window()
    with qtbot.waitSignal(win.sigTraceReady, timeout=60000):
        assert win.lesson_controller.open("seed000-snip")
    win.wait_idle()
    c = win.lesson_controller
    assert c.k == 1 and win.dock_narration.isVisible() and "12 messages" in win.narration.narration()
    assert win.presenter and not win.dock_inspector.isVisible() and not win.dock_params.isVisible()
    assert win.zoom == 4
    QTest.keyClick(win, Qt.Key_PageDown)          # a presenter remote's "next"
    win.wait_idle()
    assert c.k == 2 and win.session.view.stage == 2 and win.session.view.view_mode == "before"
    assert win.tabs.currentIndex() == 1 and "keep_tail" in win.explainer.focus
    QTest.keyClick(win, Qt.Key_PageDown)
    win.wait_idle()
    assert c.k == 3 and "head_end 3 -> 4" in win.narration.narration()
    assert "background:#fef08a" in win.explainer.toHtml().replace(" ", "") or "fef08a" in win.explainer.toHtml()
    QTest.keyClick(win, Qt.Key_PageUp)
    win.wait_idle()
    assert c.k == 2
    c.show(6)
    win.wait_idle()
    assert not win.narration.next_btn.isEnabled() and win.session.view.view_mode == "after"
    assert len(win.messages.model.messages) == 11
    c.close()
    assert not win.presenter and win.dock_inspector.isVisible() and not win.dock_narration.isVisible()


@pytest.mark.parametrize("zoom", [0, 4])
def test_the_window_fits_a_projector(qtbot, make_window, zoom):
    """Nothing forces a window wider than 1024 px (docks, the stepper, the filters, the status line), at any zoom;
    the timeline fits its pane without sideways scrolling and its legend is under the plot, not over it."""
    win = make_window()
    open_wait(qtbot, win, EXAMPLES / "cc_real_compaction.jsonl")
    win.set_zoom(zoom, save=False)
    win.set_presenter(zoom > 0)
    win.resize(1024, 768)
    qtbot.wait(50)
    assert win.minimumSizeHint().width() <= 1024 and win.minimumSizeHint().height() <= 768
    assert win.width() == 1024 and win.height() == 768
    with qtbot.waitSignal(win.sigReplayReady, timeout=60000):
        win.tabs.setCurrentIndex(2)
    qtbot.wait(50)
    panel = win.timeline_panel
    assert panel.widget().width() <= panel.viewport().width()          # no sideways scrolling
    tl = win.timeline_panel.timeline
    assert tl.legend_label.isVisible() and "real compaction" in tl.legend_label.text()
    # below the plot: never over the data (once the layout has placed the label it just showed: on a busy
    # machine that takes more than the 50 ms above)
    qtbot.waitUntil(lambda: tl.legend_label.geometry().top() > tl.plot.geometry().bottom(), timeout=5000)
    # nothing forces the plot wider than its pane (a long title did), and the wrapped lines get their height
    tl.set_cursor(3)
    qtbot.wait(50)
    qtbot.waitUntil(lambda: tl.cursor_label.height() >= tl.cursor_label.heightForWidth(tl.cursor_label.width()) - 1,
                    timeout=5000)
    assert tl.plot.getPlotItem().sceneBoundingRect().width() <= tl.plot.viewport().width() + 1
    assert "call 3" in tl.cursor_label.text()
    for lab in (tl.info, tl.cursor_label, tl.legend_label):
        assert lab.height() >= lab.heightForWidth(lab.width()) - 1, lab.objectName()


def test_zoom_scales_the_charts(qtbot, make_window):
    win = make_window()
    open_wait(qtbot, win, EXAMPLES / "long_session.json")
    ax = win.chart.stage_plot.getAxis("bottom")
    tl_ax = win.timeline_panel.timeline.plot.getPlotItem().getAxis("left")
    win.set_zoom(0, save=False)
    small = (ax.style["tickFont"].pointSizeF(), tl_ax.style["tickFont"].pointSizeF(), win.chart._pt)
    win.set_zoom(6, save=False)
    big = (ax.style["tickFont"].pointSizeF(), tl_ax.style["tickFont"].pointSizeF(), win.chart._pt)
    assert all(b > s + 4 for s, b in zip(small, big))
    assert f"{win.chart._pt:.1f}pt" in win.chart.stage_plot.titleLabel.opts.get("size", "")
    # the stage labels never overlap: too narrow for one line, they are staggered over two
    win.resize(1024, 768)
    win.chart.glw.resize(300, 200)
    qtbot.wait(50)
    ax.picture = None
    ax.update()
    qtbot.wait(50)
    win.chart.glw.grab()
    assert ax.staggered


@pytest.mark.parametrize("size", ["1024x768", "1280x800"])
def test_lesson_export_at_projector_sizes(tmp_path, size):
    from PySide6.QtGui import QImage
    out = tmp_path / "png"
    r = subprocess.run([sys.executable, "-m", "compactscope", "lesson", "seed000-snip", "--export", str(out),
                        "--size", size], cwd=ROOT, capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stderr
    pngs = sorted(out.glob("*.png"))
    assert len(pngs) == 6 and pngs[0].name.startswith("seed000-snip-01-")
    w, h = (int(x) for x in size.split("x"))
    for p in pngs:
        img = QImage(str(p))
        assert (img.width(), img.height()) == (w, h), p.name


@pytest.fixture
def english_after():
    yield
    from compactscope.app import language
    language.install("en")


def test_window_in_chinese_and_back(qtbot, make_window, english_after):
    from compactscope.app import language
    assert language.install("zh_CN")
    win = make_window()
    titles = [a.text() for a in win.menuBar().actions()]
    assert "文件(&F)" in titles and "视图(&V)" in titles and "课程(&E)" in titles
    with qtbot.waitSignal(win.sigTraceReady, timeout=60000):
        assert win.lesson_controller.open("seed000-snip", 3)
    win.wait_idle()
    assert "第一个守卫" in win.narration.narration()            # the narration in the window's language
    assert "经过头部守卫之后" in win.explainer.toPlainText()      # a core explanation, translated
    assert win.tabs.tabText(0) == "前后对比" and win.tabs.tabText(1) == "裁剪边界"
    assert "条消息" in win.status_label.text()
    assert language.ensure_cjk_font() is not None               # a font that draws Chinese, bundled or the system's
    # View > Language > English: a new window, same lesson and slide, in English
    new = win.language_actions["en"].trigger() or language._state["windows"][-1]
    qtbot.addWidget(new)
    new.wait_idle()
    assert new is not win and new.language == "en" and not win.isVisible()
    assert new.lesson_controller.k == 3 and "The head guard" in new.narration.narration()
    assert new.session.view.stage == win.session.view.stage and new.session.view.view_mode == "before"
    assert [a.text() for a in new.menuBar().actions()][0] == "&File"


def test_language_setting_and_system_default(monkeypatch):
    from compactscope.app import language
    assert language.normalise("zh-CN") == language.normalise("zh_TW") == "zh_CN"
    assert language.normalise("en_GB") == language.normalise(None) == "en"
    from PySide6.QtCore import QLocale
    monkeypatch.setattr(QLocale, "system", staticmethod(lambda: QLocale("zh_CN")))
    assert language.system_language() == "zh_CN"
    monkeypatch.setattr(QLocale, "system", staticmethod(lambda: QLocale("de_DE")))
    assert language.system_language() == "en"


@pytest.mark.parametrize("size", ["1024x768", "1280x800"])
def test_chinese_screenshot_sizes(tmp_path, size):
    from PySide6.QtGui import QImage
    out = tmp_path / "zh.png"
    r = subprocess.run([sys.executable, "-m", "compactscope", "--lesson", "layer-order", "--slide", "4", "--lang",
                        "zh_CN", "--size", size, "--screenshot", str(out)], cwd=ROOT, capture_output=True, text=True,
                       timeout=180)
    assert r.returncode == 0, r.stderr
    img = QImage(str(out))
    assert f"{img.width()}x{img.height()}" == size
    bad = subprocess.run([sys.executable, "-m", "compactscope", "--lang", "fr", "--screenshot", str(out)], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "--lang is one of en, zh_CN" in bad.stderr


def test_search_enter_and_shift_enter(qtbot, make_window):
    """Enter goes to the next match, Shift+Enter to the previous one (qa #20)."""
    from PySide6.QtCore import Qt
    win = make_window()
    open_wait(qtbot, win, EXAMPLES / "long_session.json")
    qtbot.keyClicks(win.messages.search, "Reading")
    matches = sorted(win.messages.model.matches)
    assert len(matches) >= 3 and win.messages.match_label.text() == f"{len(matches)} matches"

    def current():
        return win.messages.view.currentIndex().data(Qt.UserRole + 2)
    qtbot.keyClick(win.messages.search, Qt.Key_Return)
    qtbot.keyClick(win.messages.search, Qt.Key_Return)
    qtbot.keyClick(win.messages.search, Qt.Key_Return)
    assert current() == matches[2]
    qtbot.keyClick(win.messages.search, Qt.Key_Return, Qt.ShiftModifier)
    assert current() == matches[1]
    qtbot.keyClick(win.messages.search, Qt.Key_Enter, Qt.ShiftModifier)
    assert current() == matches[0]


def test_inspector_never_shows_a_message_the_stage_lost(qtbot, make_window):
    """Message 30 is gone after L4 summary: the inspector says so instead of showing it (qa #19)."""
    win = make_window()
    open_wait(qtbot, win, EXAMPLES / "long_session.json")
    win.stepper.set_current(0)
    assert win.select_message(30)
    assert win.inspector.current == (30, None) and "#30" in win.inspector.title.text()
    win.stepper.set_current(len(win.session.view.stages()) - 1)
    assert win.session.view.selection is None
    assert win.inspector.current is None and win.inspector.text.toPlainText() == ""
    assert "not in this one" in win.inspector.title.text() and "#30" in win.inspector.title.text()
    assert not win.chart.sel_line.isVisible()


def test_stepper_says_what_the_layer_numbers_are(qtbot, make_window):
    """s08's labels carry the course's numbers out of running order: the stepper says what they are (qa #24);
    hermes's layers have no numbers and no note."""
    win = make_window()
    open_wait(qtbot, win, EXAMPLES / "long_session.json")
    labels = [win.stepper.group.button(k).text() for k in range(len(win.stepper.stages))]
    assert "L3 budget" in labels[1] and "L1 snip" in labels[2]
    win.stepper.set_current(0)
    assert "order they run in" in win.stepper.explain.text() and "not in order" in win.stepper.explain.text()
    assert "order they run in" in win.stepper.group.button(1).toolTip()
    with qtbot.waitSignal(win.sigTraceReady, timeout=60000):
        win.session.setup.set_strategy("hermes")
    win.stepper.set_current(0)
    assert "order they run in" not in win.stepper.explain.text()


def test_chart_labels_stay_inside_and_off_the_curves(qtbot, make_window):
    """The threshold is said in the legend line under the charts, not on the line over the curves; every value
    label above a point is inside the plot, at 1024x768 and at 1920x1080 (qa #25)."""
    win = make_window()
    open_wait(qtbot, win, EXAMPLES / "long_session.json")
    for w, h in ((1024, 768), (1920, 1080)):
        win.resize(w, h)
        qtbot.wait(100)
        ch = win.chart
        ch.glw.grab()
        assert "context_limit = 50,000" in ch.bar_legend.text()
        assert ch.bar_legend.geometry().top() >= ch.glw.geometry().bottom()
        assert not any(isinstance(i, __import__("pyqtgraph").InfLineLabel) for i in ch.threshold.childItems())
        box = ch.stage_plot.vb.sceneBoundingRect()
        shown = [t for t in ch.value_labels if t.isVisible()]
        for t in shown:
            r = t.sceneBoundingRect()
            assert r.top() >= box.top() - 0.5 and r.bottom() <= box.bottom() + 0.5, (w, t.toPlainText())
    assert shown                                        # at 1920x1080 the values are shown
    # dragging the line: the legend follows
    ch.threshold.setValue(80_000)
    assert "context_limit = 80,000" in ch.bar_legend.text()


def test_presenter_gives_the_message_list_room_and_shows_the_focus(qtbot, make_window):
    """Presenter mode hides the unused filters and the expand/collapse/partner buttons (a filter in use stays);
    a lesson's focus is scrolled into sight in the boundary explanation, at 1024x768."""
    win = make_window()
    with qtbot.waitSignal(win.sigTraceReady, timeout=60000):
        assert win.lesson_controller.open("readme-variant")
    win.resize(1024, 768)
    win.wait_idle()
    m = win.messages
    assert win.presenter and not m.role_filter.isVisibleTo(m) and not any(b.isVisibleTo(m) for b in m._buttons)
    assert m.search.isVisibleTo(m) and m.mode_box.isVisibleTo(m)
    m.block_filter.setCurrentIndex(m.block_filter.findText("tool_use"))
    assert m.block_filter.isVisibleTo(m) and not m.role_filter.isVisibleTo(m)
    m.block_filter.setCurrentIndex(0)
    win.lesson_controller.show(2)                   # "snipped 0": the README column's row, far down the pane
    win.wait_idle()
    qtbot.wait(50)
    ex = win.explainer
    assert ex.focus == "snipped 0" and ex.verticalScrollBar().value() > 0
    top = ex.cursorForPosition(ex.viewport().rect().topLeft()).block()
    from PySide6.QtGui import QTextCursor
    seen = []
    b = top
    while b.isValid() and ex.cursorRect(QTextCursor(b)).top() < ex.viewport().height():
        seen.append(b.text())
        b = b.next()
    assert any("snipped 0" in t for t in seen), seen
    win.lesson_controller.close()
    assert m.role_filter.isVisibleTo(m) and all(b.isVisibleTo(m) for b in m._buttons)


def test_message_axis_labels_never_run_together(qtbot):
    """The bar chart's message indices are spaced so every label has room (zh at 1024: "1011" before)."""
    from PySide6.QtGui import QFont, QFontMetricsF
    from compactscope.widgets.token_chart import IndexAxis
    ax = IndexAxis("bottom")
    f = QFont()
    f.setPointSizeF(14)
    ax.setTickFont(f)
    fm = QFontMetricsF(f)
    for lo, hi, px in ((-0.5, 11.5, 190), (-0.5, 11.5, 600), (-0.5, 9999.5, 300), (-0.5, 59.5, 250)):
        ((spacing, _),) = ax.tickSpacing(lo, hi, px)
        n = (hi - lo) / spacing
        assert n * fm.horizontalAdvance(str(int(hi))) < px, (lo, hi, px, spacing)
    assert ax.tickSpacing(-0.5, 11.5, 600)[0][0] == 1.0


def test_a_tag_never_runs_past_the_row(qtbot):
    """A narrow pane shortens a header tag to the room left (the LOST badge was cut: "LOS")."""
    from PySide6.QtGui import QColor, QFont, QFontMetrics, QImage, QPainter
    from compactscope.widgets.message_delegate import pill
    img = QImage(400, 40, QImage.Format_ARGB32)
    p = QPainter(img)
    f = QFont()
    fm = QFontMetrics(f)
    text = "LOST: 1 result never persisted and never seen"
    assert pill(p, 10, 0, 30, text, QColor("#dc2626"), f, fm) - 10 > 120          # no limit: the whole text
    end = pill(p, 10, 0, 30, text, QColor("#dc2626"), f, fm, limit=120)
    assert 10 < end <= 10 + 120 + 6
    assert pill(p, 10, 0, 30, text, QColor("#dc2626"), f, fm, limit=8) == 10     # no room: nothing drawn
    p.end()
