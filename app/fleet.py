"""The fleet window: a results file of ``compactscope fleet`` in ``widgets.fleet_view.FleetView``, and
the wiring that opens one of its sessions in the debugger at the call that matters.

``compactscope --fleet RESULTS.parquet`` and File > Open fleet... (Ctrl+Shift+O) open it; a
double-click on a session loads that file in the main window with the strategy and parameters it
was replayed with, switches to the Timeline and puts the cursor on the call (the stepper then shows
the pipeline run before it).
"""
from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import QFileDialog, QMainWindow, QMessageBox

from compactscope.core.fleet import FleetError
from compactscope.widgets.fleet_view import FleetView
from compactscope.widgets.i18n import tr

TIMELINE_TAB = 2


class FleetWindow(QMainWindow):
    def __init__(self, data, main_window=None, threshold=None):
        super().__init__(main_window)
        self.setObjectName("fleetWindow")
        self.setWindowFlag(Qt.Window, True)
        self.main_window = main_window
        self.view = FleetView(data, self, threshold)
        self.setCentralWidget(self.view)
        self.setWindowTitle(tr("Compactscope fleet — {name} ({n:,} sessions)").format(name=Path(data.path).name, n=data.n))
        fm = self.menuBar().addMenu(tr("&File"))
        a = fm.addAction(tr("Open &fleet…"), lambda: open_fleet_dialog(self.main_window, self))
        a.setShortcut(QKeySequence("Ctrl+Shift+O"))
        c = fm.addAction(tr("&Close"), self.close)
        c.setShortcut(QKeySequence.Close)
        self.view.sigOpenSession.connect(self.open_session)
        self.statusBar().showMessage(tr("Drag the slider (or the red line) to re-evaluate the fleet at another threshold; double-click a session to open it in the debugger"), 15000)
        self.resize(1280, 900)

    def open_session(self, spec: dict) -> bool:
        win = self.main_window
        if win is None:
            return False
        ok = open_session_at(win, spec)
        if ok:
            self.statusBar().showMessage(tr("opened {name} at call {call} in the debugger").format(name=Path(spec['path']).name, call=spec['call']),
                                         8000)
        return ok


def open_session_at(win, spec: dict) -> bool:
    """Load ``spec["path"]`` (its conversation ``spec["conversation"]``: an Inspect sample, a hermes chain) in the
    main window with its strategy and parameters, show the Timeline and
    put the cursor on ``spec["call"]`` once the replay is there."""
    win.show()
    win.raise_()
    win.activateWindow()
    if not win.open_path(spec["path"], conversation=int(spec.get("conversation") or 0)):
        return False
    st = win.session.setup.strategy
    name = spec.get("strategy") or st.name
    if not win.session.setup.set_strategy(name, dict(spec.get("params") or {})):
        return False
    call = int(spec.get("call") or 0)
    q = win.qsession

    def ready(results):
        if not results:
            return
        q.sigReplayChanged.disconnect(ready)
        win.timeline_panel.timeline.set_cursor(call, emit=True)
    q.sigReplayChanged.connect(ready)
    win._fleet_pending = ready            # kept alive with the window until the replay arrives
    if win.tabs.currentIndex() == TIMELINE_TAB:
        win.session.replay.run_replay()
    else:
        win.tabs.setCurrentIndex(TIMELINE_TAB)
    return True


def load_fleet(path: str):
    """The results file at ``path`` as a ``FleetData``; FleetError says why it is not one."""
    from compactscope.core.fleet.model import FleetData
    try:
        return FleetData.load(path)
    except OSError as e:
        raise FleetError(f"{path}: {e.strerror or e}") from None


def open_fleet(win, path: str, threshold=None, parent=None):
    """A fleet window over the results file at ``path``; None (the error shown) when it is not one."""
    try:
        data = load_fleet(path)
    except FleetError as e:
        if win is not None and hasattr(win, "show_error"):
            win.show_error(tr("Could not open the fleet: {e}").format(e=e),
                           tr("Open a results file written by compactscope fleet --out RESULTS.parquet."))
        if parent is not None and parent is not win:
            QMessageBox.warning(parent, tr("Compactscope fleet"), str(e))
        return None
    fw = FleetWindow(data, win, threshold)
    if win is not None:
        win.fleet_windows = [w for w in getattr(win, "fleet_windows", []) if w.isVisible()] + [fw]
    return fw


def open_fleet_dialog(win, parent=None):
    path, _ = QFileDialog.getOpenFileName(parent or win, tr("Open a fleet's results"), "",
                                          tr("Fleet results (*.parquet);;All files (*)"))
    if path:
        fw = open_fleet(win, path, parent=parent or win)
        if fw is not None:
            fw.show()
        return fw
    return None
