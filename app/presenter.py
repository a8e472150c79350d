"""Presenter mode (View > Presenter, F11; every lesson turns it on): the layout for a projector.

The window takes the whole screen (app/screen_fit.py; not on the offscreen platform), every text grows by
``PRESENTER_ZOOM`` points (the layer buttons too), the parameters are hidden and the inspector, the size chart and
the API findings fold into tabs of the centre pane (after Before / after, the boundary and the timeline), so the
message list and the before/after have the room; the narration of a lesson goes under them, across the whole
width. On the timeline and on a folded chart the chart is what the room shows: the message list folds away and
the chart has the whole width. Off: the docks, the window's geometry and the zoom as they were.
"""
from __future__ import annotations

from PySide6.QtCore import Qt

from compactscope.core.session.model import TABS

from compactscope.widgets.i18n import tr

from compactscope.app import screen_fit

PRESENTER_ZOOM = 4.0          # points added to every text
MESSAGES_SHARE = 0.4          # of the width, for the message list (the rest: the before/after)
PANELS = ("inspector", "chart", "findings")        # folded into centre tabs, in this order
TAB_STYLE = "QTabBar::tab {{ padding: 3px 6px; font-size: {pt:.1f}pt; }}"   # six tabs side by side at 1024 px


class PresenterMode:
    def __init__(self, win):
        self.win = win
        self.saved: dict | None = None        # the zoom, docks and geometry to come back to

    @property
    def on(self) -> bool:
        return self.saved is not None

    def _docks(self) -> dict:
        w = self.win
        return {"inspector": (w.dock_inspector, w.inspector), "chart": (w.dock_chart, w.chart),
                "findings": (w.dock_findings, w.findings)}

    @staticmethod
    def _titles() -> dict:
        """The folded panels' tab titles: short, so that six tabs fit the centre pane at projector size."""
        return {"inspector": tr("Inspector"), "chart": tr("Chart"), "findings": tr("Findings")}

    def set(self, on: bool, zoom: float | None = None) -> None:
        w = self.win
        on = bool(on)
        if on and self.saved is None:
            self._enter()
        if on:
            w.set_zoom(PRESENTER_ZOOM if zoom is None else zoom, save=False)
            self.zoomed()
            if w.lesson_controller.active:
                w.dock_narration.show()
            w.messages.set_presenter(True)
            w.timeline_panel.set_presenter(True)
            w.narration.set_compact(True)
            self.docks()
        elif self.saved is not None:
            self._leave(zoom)
        elif zoom is not None:
            w.set_zoom(zoom, save=False)
        action = getattr(w, "presenter_action", None)
        if action is not None and action.isChecked() != on:
            action.setChecked(on)

    def _enter(self) -> None:
        w = self.win
        self.saved = {"zoom": w.zoom, "state": w.saveState(), "splitter": w.splitter.saveState(),
                      "tab": w.tabs.currentIndex(), "geometry": screen_fit.fill(w)}
        w.dock_params.hide()
        for name in PANELS:                      # each panel leaves its dock for a centre tab
            dock, widget = self._docks()[name]
            dock.hide()
            w.tabs.addTab(widget, self._titles()[name])
            w.tabs.setTabToolTip(w.tabs.indexOf(widget), dock.windowTitle())
        w.removeDockWidget(w.dock_narration)
        w.addDockWidget(Qt.BottomDockWidgetArea, w.dock_narration)   # under the lists, the whole width
        w.resizeDocks([w.dock_narration], [max(120, int(w.height() * 0.22))], Qt.Vertical)

    def _leave(self, zoom: float | None) -> None:
        w = self.win
        saved, self.saved = self.saved, None
        for name in PANELS:
            dock, widget = self._docks()[name]
            k = w.tabs.indexOf(widget)
            if k >= 0:
                w.tabs.removeTab(k)
            dock.setWidget(widget)
            widget.show()
        w.tabs.tabBar().setStyleSheet("")
        narr = w.dock_narration.isVisible()
        w.removeDockWidget(w.dock_narration)
        w.addDockWidget(Qt.RightDockWidgetArea, w.dock_narration)
        w.restoreState(saved["state"])
        w.dock_narration.setVisible(narr and w.lesson_controller.active)
        w.splitter.restoreState(saved["splitter"])
        w.messages.set_presenter(False)
        w.timeline_panel.set_presenter(False)
        w.narration.set_compact(False)
        w.set_zoom(saved["zoom"] if zoom is None else zoom, save=False)
        screen_fit.unfill(w, saved["geometry"])

    def zoomed(self) -> None:
        """The tab bar's tighter style at the window's text size (a style sheet fixes the font: it says the size)."""
        if self.on:
            self.win.tabs.tabBar().setStyleSheet(TAB_STYLE.format(pt=self.win.font().pointSizeF()))

    def saved_zoom(self, default: float) -> float:
        """The zoom presenter mode will give back (a window rebuilt in another language keeps it)."""
        return (self.saved or {}).get("zoom", default)

    def show_panel(self, name: str) -> bool:
        """Bring a folded panel ("chart", "findings", "inspector") to the front; False when it is not folded."""
        if not self.on or name not in PANELS:
            return False
        _dock, widget = self._docks()[name]
        k = self.win.tabs.indexOf(widget)
        if k >= 0:
            self.win.tabs.setCurrentIndex(k)
        return k >= 0

    def large(self) -> bool:
        """The shown tab is a chart (the timeline, the folded size chart): it gets the whole width."""
        w = self.win
        k = w.tabs.currentIndex()
        return k == TABS.index("timeline") or w.tabs.widget(k) is w.chart

    def docks(self) -> None:
        """The split between the message list and the centre tabs for the shown tab (called on a tab change)."""
        if not self.on:
            return
        w = self.win
        total = sum(w.splitter.sizes()) or w.splitter.width()
        if self.large():
            w.splitter.setSizes([0, total])
        else:
            w.splitter.setSizes([int(total * MESSAGES_SHARE), total - int(total * MESSAGES_SHARE)])
