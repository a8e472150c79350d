"""The events of a conversation in a list (what happened, in call order), with Previous / Next buttons.

A view only: it shows rows it is given (``EventRow``: kind, call, segment, text, already in the window's language)
and says which one the user picked (``sigActivated(index)``); the wiring (app/events_dock.py) jumps there."""
from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QAbstractTableModel, QModelIndex, Qt, Signal
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import (QAbstractItemView, QHBoxLayout, QHeaderView, QLabel, QPushButton, QTableView,
                               QVBoxLayout, QWidget)

from compactscope.core.replay.shared import release
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


@dataclass(frozen=True)
class RowStats:
    """What the panel says and sizes of its rows (``row_stats``): made once with them, in the events' worker (a
    look at each of 100k rows in the window's thread held it ~0.1-0.5 s)."""
    counts: tuple = ()              # (kind, how many), in the order the kinds first appear
    max_call: int = 0
    max_segment: int = 0


def row_stats(rows: list[EventRow]) -> RowStats:
    counts: dict[str, int] = {}
    max_call = max_segment = 0
    for r in rows:
        counts[r.kind] = counts.get(r.kind, 0) + 1
        if r.call is not None and r.call > max_call:
            max_call = r.call
        if r.segment > max_segment:
            max_segment = r.segment
    return RowStats(tuple(counts.items()), max_call, max_segment)


class _EventsModel(QAbstractTableModel):
    """The rows as a table read on demand (a tree of items took ~2 s to fill and ~1 s to clear at 50k events)."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.rows: list[EventRow] = []
        self.headers = [tr("Call"), tr("Segment"), tr("Event"), tr("What happened")]
        self._brushes: dict = {}

    def set_rows(self, rows: list[EventRow]) -> None:
        self.beginResetModel()
        self.rows = rows
        self.endResetModel()

    def rowCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else 4

    def text(self, i: int, col: int) -> str:
        r = self.rows[i]
        if col == 0:
            return tr("end") if r.call is None else str(r.call)
        if col == 1:
            return str(r.segment)
        if col == 2:
            return f"{KIND_MARKS.get(r.kind, '')} {kind_label(r.kind)}"
        return r.text

    def data(self, index, role=Qt.ItemDataRole.DisplayRole):
        if not index.isValid() or not 0 <= index.row() < len(self.rows):
            return None
        col = index.column()
        if role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.ToolTipRole):
            return self.text(index.row(), col) if role == Qt.ItemDataRole.DisplayRole or col == 3 else None
        if role == Qt.ItemDataRole.ForegroundRole and col == 2:
            kind = self.rows[index.row()].kind
            if kind not in self._brushes:
                self._brushes[kind] = QBrush(QColor(KIND_COLORS.get(kind, "#334155")))
            return self._brushes[kind]
        if role == Qt.ItemDataRole.TextAlignmentRole and col in (0, 1):
            return int(Qt.AlignRight | Qt.AlignVCenter)
        return None

    def headerData(self, section, orientation, role=Qt.ItemDataRole.DisplayRole):
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole and 0 <= section < 4:
            return self.headers[section]
        return None


class EventItem:
    """One row of the list as ``QTreeWidgetItem`` reads (``text(col)``), for callers of the item API."""

    def __init__(self, tree: "EventsList", row: int):
        self.tree, self.row = tree, row

    def text(self, col: int) -> str:
        return self.tree.events_model.text(self.row, col)


class EventsList(QTableView):
    """The events list: a table view over ``_EventsModel`` (one line per event, whole rows selected, no grid)
    with the few ``QTreeWidget`` calls the window and the tests make (``topLevelItemCount``, ``topLevelItem``,
    ``indexOfTopLevelItem``, ``setCurrentItem``, ``scrollToItem``, ``itemClicked`` / ``itemActivated``).
    A table view lays out only the rows it shows: a tree view visited every row on a reset, 0.17 s of the
    window's thread at 100k events (issue 27)."""
    itemClicked = Signal(object, int)
    itemActivated = Signal(object, int)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.events_model = _EventsModel(self)
        self.setModel(self.events_model)
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.setShowGrid(False)
        self.setWordWrap(False)
        self.setTabKeyNavigation(False)
        self.setHorizontalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
        rows = self.verticalHeader()
        rows.hide()
        rows.setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        rows.setDefaultSectionSize(self.fontMetrics().height() + 6)
        self.horizontalHeader().setHighlightSections(False)
        self.horizontalHeader().setDefaultAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)
        self.clicked.connect(lambda ix: self.itemClicked.emit(EventItem(self, ix.row()), ix.column()))
        self.activated.connect(lambda ix: self.itemActivated.emit(EventItem(self, ix.row()), ix.column()))

    def header(self) -> QHeaderView:
        return self.horizontalHeader()

    def topLevelItemCount(self) -> int:
        return self.events_model.rowCount()

    def topLevelItem(self, i: int) -> EventItem | None:
        return EventItem(self, i) if 0 <= i < self.events_model.rowCount() else None

    def indexOfTopLevelItem(self, item) -> int:
        return item.row if isinstance(item, EventItem) else -1

    def setCurrentItem(self, item) -> None:
        if isinstance(item, EventItem):
            self.setCurrentIndex(self.events_model.index(item.row, 0))

    def scrollToItem(self, item) -> None:
        if isinstance(item, EventItem):
            self.scrollTo(self.events_model.index(item.row, 0))


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
        self.tree = EventsList(self)
        self.tree.setObjectName("eventsList")
        self.tree.setAlternatingRowColors(True)
        h = self.tree.header()
        h.setStretchLastSection(True)
        for c in (0, 1, 2):
            h.setSectionResizeMode(c, QHeaderView.Interactive)
        self.tree.itemActivated.connect(self._picked)
        self.tree.itemClicked.connect(self._picked)
        lay.addWidget(self.tree, 1)
        self.rows: list[EventRow] = []
        self.stats = RowStats()
        self.current = -1
        self.set_events([], busy=False)

    def set_events(self, rows: list[EventRow], busy: bool = False, note: str = "",
                   stats: RowStats | None = None) -> None:
        """The events to list (``busy``: the simulated ones are still being replayed; ``stats``: ``row_stats(rows)``
        when it was made with them). The list is the panel's from now on (not copied)."""
        old = getattr(self, "rows", None)
        self.rows = rows if isinstance(rows, list) else list(rows)
        self.stats = stats if stats is not None else row_stats(self.rows)
        self.tree.events_model.set_rows(self.rows)
        release(old)           # (freed in pieces elsewhere: 100k rows freed here held the window ~0.1 s)
        del old
        self._fit_columns()
        self.current = -1
        self.set_shown("")
        self.set_busy(busy, note)
        self.prev_button.setEnabled(bool(self.rows))
        self.next_button.setEnabled(bool(self.rows))

    def set_busy(self, busy: bool, note: str = "") -> None:
        """Say whether the simulated events are being replayed again; the rows listed stay."""
        parts = [f"{n} \u00d7 {kind_label(k)}" for k, n in self.stats.counts]
        text = tr("{n} event(s): {parts}").format(n=len(self.rows), parts=", ".join(parts)) if self.rows else \
            tr("No event yet.") if busy else tr("Nothing happened: no compaction, no layer changed the context, "
                                                "no API finding.")
        if busy:
            text += " " + tr("(replaying the simulated compactions\u2026)")
        if note:
            text += " " + note
        self.summary.setText(text)

    def _fit_columns(self) -> None:
        """The first three columns as wide as their widest text (the longest call number, segment, kind: a few
        distinct texts, not a look at every row as Qt's ResizeToContents does)."""
        fm = self.tree.fontMetrics()
        m = self.tree.events_model
        st = self.stats
        widest = [[m.headers[0], tr("end"), str(st.max_call)], [m.headers[1], str(st.max_segment)],
                  [m.headers[2]] + [f"{KIND_MARKS.get(k, '')} {kind_label(k)}" for k, _n in st.counts]]
        for c, texts in enumerate(widest):
            self.tree.setColumnWidth(c, max(fm.horizontalAdvance(t) for t in texts) + 24)

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
