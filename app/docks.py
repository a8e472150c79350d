"""The window's docks and status bar: the inspector and the parameters (tabbed on the right), the narration
(lessons), the size/token chart and the API findings (side by side at the bottom); the status bar with counts,
the cross-check verdict, progress and Cancel. Built once by the main window, under the names the rest of the app
and the tests use."""
from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDockWidget, QWidget

from compactscope.app import strategy_files
from compactscope.widgets.explainer import FindingsPanel
from compactscope.widgets.i18n import tr
from compactscope.widgets.inspector import Inspector
from compactscope.widgets.narration import NarrationPanel
from compactscope.widgets.params_panel import ParamsPanel
from compactscope.widgets.status_bar import StatusBar
from compactscope.widgets.token_chart import TokenChart


def build_docks(win) -> None:
    win.inspector = Inspector(win)
    win.inspector.resolve_persisted = win.session.persisted_file
    win.params_panel = ParamsPanel(win)
    strategy_files.fill_strategies(win)
    win.params_panel.set_strategy(win.session.setup.strategy, win.session.setup.params)
    win.params_panel.set_summarizer(win.session.setup.summarizer)
    win.findings = FindingsPanel(win)
    win.chart = TokenChart(win)
    win.dock_inspector = _dock(win, tr("Inspector"), win.inspector, Qt.DockWidgetArea.RightDockWidgetArea)
    win.dock_params = _dock(win, tr("Strategy and parameters"), win.params_panel, Qt.DockWidgetArea.RightDockWidgetArea)
    win.tabifyDockWidget(win.dock_params, win.dock_inspector)
    win.dock_inspector.raise_()
    win.narration = NarrationPanel(win)
    win.dock_narration = _dock(win, tr("Narration"), win.narration, Qt.DockWidgetArea.RightDockWidgetArea)
    win.dock_narration.hide()
    win.dock_chart = _dock(win, tr("Size and tokens"), win.chart, Qt.DockWidgetArea.BottomDockWidgetArea)
    win.dock_findings = _dock(win, tr("API findings"), win.findings, Qt.DockWidgetArea.BottomDockWidgetArea)
    win.splitDockWidget(win.dock_chart, win.dock_findings, Qt.Orientation.Horizontal)
    win.resizeDocks([win.dock_chart, win.dock_findings], [1000, 300], Qt.Orientation.Horizontal)
    win.resizeDocks([win.dock_chart], [230], Qt.Orientation.Vertical)
    win.resizeDocks([win.dock_inspector], [330], Qt.Orientation.Horizontal)
    # status bar: counts, the cross-check verdict, progress and Cancel
    win.status = StatusBar(win)
    win.setStatusBar(win.status)
    win.status.sigCancel.connect(win.cancel_run)
    win.status_label, win.oracle_label, win.progress, win.progress_label, win.cancel_btn = \
        win.status.status_label, win.status.oracle_label, win.status.progress, win.status.progress_label, \
        win.status.cancel_btn


def _dock(win, title: str, w: QWidget, area) -> QDockWidget:
    d = QDockWidget(title, win)
    d.setObjectName("dock_" + w.objectName())
    d.setWidget(w)
    win.addDockWidget(area, d)
    return d
