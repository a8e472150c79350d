"""Presenter mode (View > Presenter, F11; every lesson turns it on): large type, the inspector and the
parameters hidden, the explanations given room, the narration shown when a lesson is open; on the timeline the
stage chart and the findings make room for it. Off: the docks and the zoom as they were."""
from __future__ import annotations

from PySide6.QtCore import Qt

from compactscope.core.session.model import TABS

PRESENTER_ZOOM = 4.0          # points added to every text


class PresenterMode:
    def __init__(self, win):
        self.win = win
        self.saved: dict | None = None        # the zoom and docks to come back to

    @property
    def on(self) -> bool:
        return self.saved is not None

    def set(self, on: bool, zoom: float | None = None) -> None:
        w = self.win
        on = bool(on)
        if on and self.saved is None:
            self.saved = {"zoom": w.zoom, "docks": {d: d.isVisible() for d in (
                w.dock_inspector, w.dock_params, w.dock_findings, w.dock_chart)}}
        if on:
            for d in (w.dock_inspector, w.dock_params):
                d.hide()
            total = sum(w.splitter.sizes()) or w.splitter.width()
            w.splitter.setSizes([int(total * 0.38), total - int(total * 0.38)])   # the explanations get room
            w.resizeDocks([w.dock_chart], [max(190, int(w.height() * 0.3))], Qt.Orientation.Vertical)
            if w.lesson_controller.active:
                w.dock_narration.show()
            w.set_zoom(PRESENTER_ZOOM if zoom is None else zoom, save=False)
            self.docks()
            w.messages.set_presenter(True)
        elif self.saved is not None:
            saved, self.saved = self.saved, None
            for d, vis in saved["docks"].items():
                d.setVisible(vis)
            w.messages.set_presenter(False)
            w.set_zoom(saved["zoom"] if zoom is None else zoom, save=False)
        elif zoom is not None:
            w.set_zoom(zoom, save=False)
        action = getattr(w, "presenter_action", None)
        if action is not None and action.isChecked() != on:
            action.setChecked(on)

    def saved_zoom(self, default: float) -> float:
        """The zoom presenter mode will give back (a window rebuilt in another language keeps it)."""
        return (self.saved or {}).get("zoom", default)

    def docks(self) -> None:
        """On the timeline the timeline is the chart: the stage chart and the findings make room for it (and
        come back on the other tabs)."""
        if not self.on:
            return
        w = self.win
        timeline = w.tabs.currentIndex() == TABS.index("timeline")
        for d in (w.dock_chart, w.dock_findings):
            d.setVisible(not timeline)
