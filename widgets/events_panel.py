"""The events of a conversation in a list (what happened, in call order), with Previous / Next buttons.

A view only: it shows rows it is given (``EventRow``: kind, call, segment, text, already in the window's language)
and says which one the user picked (``sigActivated(index)``); the wiring (app/events_dock.py) jumps there."""
from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import (QHBoxLayout, QHeaderView, QLabel, QPushButton, QTreeWidget, QTreeWidgetItem,
                               QVBoxLayout, QWidget)

from compactscope.widgets.i18n import tr

KIND_COLORS = {"real_compaction": "#c2410c", "simulated_compaction": "#1d4ed8", "layer_change": "#475569",
               "finding": "#b91c1c", "divergence": "#7e22ce", "loop": "#b45309"}
KIND_MARKS = {"real_compaction": "\u25c6", "simulated_compaction": "\u25c7", "layer_change": "\u2022",
              "finding": "\u26a0", "divergence": "\u2260", "loop": "\u21bb"}


def kind_label(kind: str) -> str:
    return {"real_compaction": tr("real compaction"), "simulated_compaction": tr("simulated compaction"),
            "layer_change": tr("layer changed"), "finding": tr("API finding"), "divergence": tr("divergence"),
            "loop": tr("compaction loop")}.get(kind, kind)


@dataclass(frozen=True)
class EventRow:
    kind: str
    call: int | None
    segment: int
    text: str          # in the window's language


class EventsPanel(QWidget):
    sigActivated = Signal(int)       # the index of the event the user picked (a click, Previous, Next)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("eventsPanel")
        lay = QVBoxLayout(self)
        lay.setContentsMargins(2, 2, 2, 2)
        top = QHBoxLayout()
        self.summary = QLabel(self)
        self.summary.setObjectName("eventsSummary")
        self.summary.setWordWrap(True)
        top.addWidget(self.summary, 1)
        self.prev_button = QPushButton(tr("\u25c0 Previous (Shift+F8)"), self)
        self.next_button = QPushButton(tr("Next (F8) \u25b6"), self)
        self.prev_button.setToolTip(tr("Go to the previous event: the stepper, the list and the timeline follow"))
        self.next_button.setToolTip(tr("Go to the next event: the stepper, the list and the timeline follow"))
        self.prev_button.clicked.connect(lambda: self.step(-1))
        self.next_button.clicked.connect(lambda: self.step(1))
        top.addWidget(self.prev_button)
        top.addWidget(self.next_button)
        lay.addLayout(top)
        self.shown = QLabel(self)
        self.shown.setObjectName("eventsShown")
        self.shown.setWordWrap(True)
        self.shown.setStyleSheet("QLabel { color: #9a3412; }")
        self.shown.hide()
        lay.addWidget(self.shown)
        self.tree = QTreeWidget(self)
        self.tree.setObjectName("eventsList")
        self.tree.setRootIsDecorated(False)
        self.tree.setAlternatingRowColors(True)
        self.tree.setUniformRowHeights(True)
        self.tree.setHeaderLabels([tr("Call"), tr("Segment"), tr("Event"), tr("What happened")])
        h = self.tree.header()
        h.setStretchLastSection(True)
        for c in (0, 1, 2):
            h.setSectionResizeMode(c, QHeaderView.ResizeToContents)
        self.tree.itemActivated.connect(self._picked)
        self.tree.itemClicked.connect(self._picked)
        lay.addWidget(self.tree, 1)
        self.rows: list[EventRow] = []
        self.current = -1
        self.set_events([], busy=False)

    def set_events(self, rows: list[EventRow], busy: bool = False, note: str = "") -> None:
        """The events to list (``busy``: the simulated ones are still being replayed)."""
        self.rows = list(rows)
        self.tree.clear()
        items = []
        for r in self.rows:
            call = tr("end") if r.call is None else str(r.call)
            it = QTreeWidgetItem([call, str(r.segment), f"{KIND_MARKS.get(r.kind, '')} {kind_label(r.kind)}", r.text])
            color = QBrush(QColor(KIND_COLORS.get(r.kind, "#334155")))
            it.setForeground(2, color)
            it.setToolTip(3, r.text)
            it.setTextAlignment(0, Qt.AlignRight | Qt.AlignVCenter)
            it.setTextAlignment(1, Qt.AlignRight | Qt.AlignVCenter)
            items.append(it)
        self.tree.addTopLevelItems(items)
        self.current = -1
        self.set_shown("")
        counts: dict[str, int] = {}
        for r in self.rows:
            counts[r.kind] = counts.get(r.kind, 0) + 1
        parts = [f"{n} \u00d7 {kind_label(k)}" for k, n in counts.items()]
        text = tr("{n} event(s): {parts}").format(n=len(self.rows), parts=", ".join(parts)) if self.rows else \
            tr("No event yet.") if busy else tr("Nothing happened: no compaction, no layer changed the context, "
                                                "no API finding.")
        if busy:
            text += " " + tr("(replaying the simulated compactions\u2026)")
        if note:
            text += " " + note
        self.summary.setText(text)
        self.prev_button.setEnabled(bool(self.rows))
        self.next_button.setEnabled(bool(self.rows))

    def set_shown(self, text: str) -> None:
        """What the window shows for the current event, in words ("" hides the line)."""
        self.shown.setText(text)
        self.shown.setVisible(bool(text))

    def set_current(self, i: int) -> None:
        """Mark event ``i`` as the one shown (no signal)."""
        if not 0 <= i < len(self.rows):
            return
        self.current = i
        it = self.tree.topLevelItem(i)
        self.tree.blockSignals(True)
        self.tree.setCurrentItem(it)
        self.tree.blockSignals(False)
        self.tree.scrollToItem(it)

    def step(self, d: int) -> bool:
        """Go to the next (d = 1) or previous (d = -1) event."""
        if not self.rows:
            return False
        i = 0 if self.current < 0 and d > 0 else len(self.rows) - 1 if self.current < 0 else self.current + d
        if not 0 <= i < len(self.rows):
            return False
        self.set_current(i)
        self.sigActivated.emit(i)
        return True

    def _picked(self, item, _col=0) -> None:
        i = self.tree.indexOfTopLevelItem(item)
        if 0 <= i < len(self.rows):
            self.current = i
            self.sigActivated.emit(i)
