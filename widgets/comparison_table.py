"""The replay's comparison table: one row per run (compactions, peak context, total input tokens, drops,
summaries), each run's name in its timeline colour."""
from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableWidget, QTableWidgetItem

from compactscope.core.replay import COMPARISON_COLUMNS

from compactscope.widgets.common import fmt
from compactscope.widgets.i18n import ct, tr
from compactscope.widgets.timeline import OVERLAY_COLORS


class ComparisonTable(QTableWidget):
    """One row per run: compactions, peak context, total input tokens, drops, summaries."""
    sigRunSelected = Signal(int)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("replayComparison")
        self.setColumnCount(len(COMPARISON_COLUMNS))
        self.setHorizontalHeaderLabels([ct(t) for _, t in COMPARISON_COLUMNS])
        self.setEditTriggers(QAbstractItemView.NoEditTriggers)
        self.setSelectionBehavior(QAbstractItemView.SelectRows)
        self.verticalHeader().setVisible(False)
        self.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeToContents)
        self.itemSelectionChanged.connect(lambda: self.sigRunSelected.emit(self.currentRow()))
        self.setToolTip(tr("total input tokens = the tokens sent summed over every call (a cost proxy)"))

    def set_results(self, results: list, totals: list | None = None) -> None:
        """One row per result; ``totals``: their ``totals()`` when they were made with them."""
        rows = totals if totals is not None else [r.totals() for r in results]
        self.setRowCount(len(rows))
        for i, row in enumerate(rows):
            for j, (key, _) in enumerate(COMPARISON_COLUMNS):
                v = row.get(key, "")
                item = QTableWidgetItem(fmt(v) if isinstance(v, int) else ct(str(v)))
                item.setData(Qt.ItemDataRole.UserRole, v)
                if j:
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                if j == 0 and i:
                    item.setForeground(pg.mkColor(OVERLAY_COLORS[(i - 1) % len(OVERLAY_COLORS)]))
                self.setItem(i, j, item)

    def value(self, row: int, key: str):
        j = [k for k, _ in COMPARISON_COLUMNS].index(key)
        item = self.item(row, j)
        return item.data(Qt.ItemDataRole.UserRole) if item is not None else None
