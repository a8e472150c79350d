"""The watch box: follow a term (a path, a tool id, a phrase) through the whole history.

A view only: the user types a term (``sigWatch(term)``); ``set_result`` shows the rows it is given (where the
term is present, what removed it), already in the window's language; a row that names a call can be picked
(``sigJump(call, kind)``: kind "real" or "simulated")."""
from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import Signal
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import (QHBoxLayout, QLabel, QLineEdit, QPushButton, QTreeWidget, QTreeWidgetItem,
                               QVBoxLayout, QWidget)

from compactscope.widgets.i18n import tr

PRESENT, ABSENT, REMOVED = "#15803d", "#64748b", "#b91c1c"


@dataclass(frozen=True)
class WatchRow:
    text: str
    color: str = ""
    call: int | None = None          # the call to jump to
    kind: str = ""                   # "real" | "simulated"


class WatchBox(QWidget):
    sigWatch = Signal(str)
    sigJump = Signal(int, str)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("watchBox")
        lay = QVBoxLayout(self)
        lay.setContentsMargins(2, 2, 2, 2)
        top = QHBoxLayout()
        self.edit = QLineEdit(self)
        self.edit.setObjectName("watchEdit")
        self.edit.setPlaceholderText(tr("A path, a tool id, a phrase (as the file writes it)\u2026"))
        self.edit.setClearButtonEnabled(True)
        self.edit.returnPressed.connect(self._go)
        self.button = QPushButton(tr("Watch"), self)
        self.button.clicked.connect(self._go)
        top.addWidget(QLabel(tr("Follow:"), self))
        top.addWidget(self.edit, 1)
        top.addWidget(self.button)
        lay.addLayout(top)
        self.status = QLabel(tr("Type a term: the watch says in which real contexts and calls it is, and which "
                                "compaction or layer removed it."), self)
        self.status.setWordWrap(True)
        lay.addWidget(self.status)
        self.tree = QTreeWidget(self)
        self.tree.setObjectName("watchList")
        self.tree.setHeaderHidden(True)
        self.tree.setRootIsDecorated(False)
        self.tree.itemClicked.connect(self._picked)
        lay.addWidget(self.tree, 1)
        self.rows: list[WatchRow] = []

    def term(self) -> str:
        return self.edit.text()

    def set_term(self, term: str, run: bool = True) -> None:
        self.edit.setText(term)
        if run:
            self._go()

    def _go(self) -> None:
        t = self.edit.text()
        if t.strip():
            self.sigWatch.emit(t)

    def set_busy(self, term: str) -> None:
        self.status.setText(tr("Following \u201c{term}\u201d\u2026").format(term=term))
        self.tree.clear()
        self.rows = []

    def set_result(self, headline: str, rows: list[WatchRow]) -> None:
        self.status.setText(headline)
        self.rows = list(rows)
        self.tree.clear()
        for r in self.rows:
            it = QTreeWidgetItem([r.text])
            if r.color:
                it.setForeground(0, QBrush(QColor(r.color)))
            if r.call is not None:
                it.setToolTip(0, tr("Click to go there"))
                f = it.font(0)
                f.setUnderline(True)
                it.setFont(0, f)
            self.tree.addTopLevelItem(it)

    def _picked(self, item, _col=0) -> None:
        i = self.tree.indexOfTopLevelItem(item)
        if 0 <= i < len(self.rows) and self.rows[i].call is not None:
            self.sigJump.emit(self.rows[i].call, self.rows[i].kind)
