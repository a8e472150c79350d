"""``compactscope ... --probe OUT.json`` (a hidden debug option for the tests under a real X server): once the
window is shown and idle, write what a person in front of it sees, then exit.

The JSON holds the window's frame and the screen's available geometry, the presenter flag, how many messages
the list shows whole, whether the before/after columns are in sight, what is clipped (a tab's label, a dock's
title, the status line, the layer buttons, a chart's axis) and every text the window shows (``texts``: labels,
buttons, tabs, menus and actions, tooltips, table headers, chart axes and legends, the status line), each with
where it was seen.
"""
from __future__ import annotations

import json
import sys

from PySide6.QtCore import QModelIndex, QRect
from PySide6.QtWidgets import (QAbstractButton, QAbstractItemView, QComboBox, QDockWidget, QGroupBox, QHeaderView,
                               QLabel, QLineEdit, QMenu, QTabBar, QTabWidget, QTextEdit, QWidget)


def _rect(r: QRect) -> list[int]:
    return [r.x(), r.y(), r.width(), r.height()]


def whole_messages(view) -> int:
    """Messages the list shows from top to bottom (not cut by the viewport's edges)."""
    n, vh = view._rows(), view.viewport().height()
    opt = view._option()
    r, y, whole = view._top, -view._dy, 0
    while r < n and y < vh:
        h = view._height(r, opt)
        if y >= 0 and y + h <= vh:
            whole += 1
        y += h
        r += 1
    return whole


def in_sight(win, w: QWidget) -> bool:
    """``w`` is shown and lies inside the window, which lies inside the screen."""
    if not w.isVisible() or w.width() < 20 or w.height() < 20:
        return False
    top = w.mapTo(win, w.rect().topLeft())
    r = QRect(top, w.size())
    return win.rect().contains(r.adjusted(2, 2, -2, -2))


def clipped(win) -> list[str]:
    """Texts shown cut: a tab's label wider than its tab or outside the tab bar, a layer button or label wider
    than its widget, the status line shortened, a dock's title wider than its dock."""
    out = _clipped_tabs(win)
    for b in win.stepper.group.buttons():
        if b.isVisible() and b.sizeHint().width() > b.width() + 1:
            out.append(f"layer button {b.text()!r}: {b.sizeHint().width()} px in {b.width()}")
        if b.isVisible() and not in_sight(win, b):
            out.append(f"layer button {b.text()!r}: outside the window")
    st = win.status_label
    if st.isVisible() and QLabel.text(st).replace("\n", st.SEP) != st.full_text():
        out.append(f"status line shortened: {QLabel.text(st)!r} of {st.full_text()!r}")
    for d in win.findChildren(QDockWidget):
        if d.isVisible() and d.fontMetrics().horizontalAdvance(d.windowTitle()) > d.width():
            out.append(f"dock title {d.windowTitle()!r}: wider than its dock")
    return out


def _clipped_tabs(win) -> list[str]:
    out = []
    for bar in win.findChildren(QTabBar):
        if not bar.isVisible() or bar.visibleRegion().isEmpty() or bar.width() < 2:
            continue
        fm = bar.fontMetrics()
        for k in range(bar.count()):
            r = bar.tabRect(k)
            if r.right() > bar.width() + 1 or r.left() < -1:
                out.append(f"tab {bar.tabText(k)!r}: outside its bar ({bar.width()} px)")
            elif fm.horizontalAdvance(bar.tabText(k).replace("&", "")) > r.width():
                out.append(f"tab {bar.tabText(k)!r}: wider than its tab")
    return out


def _add(out: dict, text, where: str) -> None:
    if isinstance(text, str):
        t = text.strip()
        if t:
            out.setdefault(t, where)


def _widget_texts(w: QWidget, out: dict, where: str) -> None:
    _add(out, w.toolTip(), where + " tooltip")
    if isinstance(w, (QLabel, QAbstractButton)):
        _add(out, w.text(), where)
    if isinstance(w, QGroupBox):
        _add(out, w.title(), where)
    if isinstance(w, QDockWidget):
        _add(out, w.windowTitle(), where)
    if isinstance(w, (QLineEdit, QTextEdit)):
        _add(out, w.placeholderText(), where + " placeholder")
    if isinstance(w, QTextEdit) and not w.property("transcript"):     # the inspector's editors: the transcript
        for line in w.toPlainText().splitlines()[:400]:
            _add(out, line, where + " text")
    _list_texts(w, out, where)


def _list_texts(w: QWidget, out: dict, where: str) -> None:
    """The entries of a combo box, the tabs of a tab widget, a header's sections, a menu's actions."""
    from PySide6.QtCore import Qt
    if isinstance(w, QComboBox):
        for k in range(w.count()):
            _add(out, w.itemText(k), where + " item")
    if isinstance(w, QTabWidget):
        for k in range(w.count()):
            _add(out, w.tabText(k), where + " tab")
            _add(out, w.tabToolTip(k), where + " tab tooltip")
    if isinstance(w, QHeaderView) and w.model() is not None:
        for k in range(w.count()):
            _add(out, w.model().headerData(k, w.orientation(), Qt.DisplayRole), where + " header")
    if isinstance(w, QMenu):
        for a in w.actions():
            _add(out, a.text(), where + " action")
            _add(out, a.toolTip() if a.toolTip() != a.text().replace("&", "") else "", where + " action tooltip")


def chart_texts(win, out: dict) -> None:
    """The plots' axis labels, tick labels that are words, legends and text items (pyqtgraph)."""
    import pyqtgraph as pg
    for gv in win.findChildren(pg.GraphicsView):
        for item in gv.scene().items():
            if isinstance(item, pg.AxisItem):
                _add(out, item.labelText, "chart axis")
                for level in (item._tickLevels or []):
                    for _v, tick in level:
                        _add(out, tick if not str(tick).replace(",", "").replace(".", "").isdigit() else "",
                             "chart tick")
            elif isinstance(item, pg.LabelItem):
                _add(out, item.text, "chart label")
            elif isinstance(item, pg.TextItem):
                _add(out, item.textItem.toPlainText(), "chart text")
            elif isinstance(item, pg.LegendItem):
                for _sample, label in item.items:
                    _add(out, label.text, "chart legend")


def _shape(m) -> tuple[int, int]:
    """Rows and columns of any model (a list model's columnCount is private in PySide6)."""
    try:
        cols = m.columnCount(QModelIndex())
    except TypeError:
        cols = 1
    return m.rowCount(QModelIndex()), cols


def texts(win) -> dict:
    out: dict = {}
    for e in (win.inspector.text, win.inspector.json, win.inspector.persisted):
        e.setProperty("transcript", True)
    _add(out, win.windowTitle(), "window title")
    _add(out, win.statusBar().currentMessage(), "status message")      # a temporary message over the counts
    for w in [win] + win.findChildren(QWidget):
        _widget_texts(w, out, type(w).__name__)
    for a in win.menuBar().actions():
        _add(out, a.text(), "menu")
        if a.menu() is not None:
            _widget_texts(a.menu(), out, "menu " + a.text())
            for sub in a.menu().actions():
                if sub.menu() is not None:
                    _widget_texts(sub.menu(), out, "submenu " + sub.text())
    for v in win.findChildren(QAbstractItemView):
        m = v.model()
        if m is None or v is win.messages.view or v is win.diff_panel.view or isinstance(v, QHeaderView):   # contents: the transcript
            continue
        from PySide6.QtCore import Qt
        rows, cols = _shape(m)
        for r in range(min(rows, 200)):
            for c in range(cols):
                _add(out, m.data(m.index(r, c), Qt.DisplayRole), type(v).__name__ + " cell")
    chart_texts(win, out)
    return out


def probe(win) -> dict:
    screen = win.screen()
    avail = screen.availableGeometry() if screen is not None else QRect()
    d = win.diff_panel.view
    return {"frame": _rect(win.frameGeometry()), "geometry": _rect(win.geometry()), "available": _rect(avail),
            "platform": __import__("PySide6.QtGui", fromlist=["QGuiApplication"]).QGuiApplication.platformName(),
            "presenter": win.presenter, "zoom": win.zoom, "language": win.language,
            "whole_messages": whole_messages(win.messages.view), "messages": win.messages.view._rows(),
            "message_list": _rect(win.messages.view.geometry()) if win.messages.view.isVisible() else None,
            "diff_in_sight": in_sight(win, d) and win.tabs.currentWidget() is win.diff_panel,
            "diff_columns": [d.columnWidth(0), d.columnWidth(1)] if d.model() is not None and _shape(d.model())[1] > 1
            else [], "diff_width": d.viewport().width(),
            "status_in_sight": in_sight(win, win.statusBar()),
            "tabs": [win.tabs.tabText(k) for k in range(win.tabs.count())],
            "stepper_font": [b.font().pointSizeF() for b in win.stepper.group.buttons()][:1],
            "font": win.font().pointSizeF(),
            "clipped": clipped(win), "texts": texts(win)}


def write_probe(app, win, path: str) -> int:
    for _ in range(20):
        app.processEvents()
    events = getattr(win, "events_controller", None)
    # the events dock's replay waits its turn behind the run and the user (a courteous worker): the probe shows the
    # window once that is done too, as a user sees it a moment after opening
    if events is not None:
        events.wait(60000)
    else:
        win.wait_idle(60000)
    for _ in range(20):
        app.processEvents()
    data = probe(win)
    shot = win.screen().grabWindow(0) if win.screen() is not None else None     # the whole screen, as seen
    if shot is not None and not shot.isNull():
        data["screenshot"] = str(path) + ".png"
        shot.save(data["screenshot"])
    try:
        with open(path, "w", encoding="utf-8") as f:
            json.dump(data, f, ensure_ascii=False, indent=1)
    except OSError as e:
        print(f"compactscope: {path}: {e.strerror or e}", file=sys.stderr)
        return 2
    win.session.close()
    win.close()
    from compactscope.app.window_exit import dispose
    dispose(app, win)
    return 0
