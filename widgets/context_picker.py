"""The context picker: which conversation of the file (main, each subagent or sidechain), which real API
context (each segment between compactions, or the whole history, never sent as one request) and which
model call (exactly what was sent at call N). A view of the session's choice: it emits what the user
picks (``sigConversation(int)``, ``sigSegment(object)``, ``sigCall(object)``) and shows what
``set_state`` gives it, without emitting that back."""
from __future__ import annotations

from PySide6.QtCore import QAbstractListModel, QModelIndex, Qt, Signal
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QSizePolicy, QWidget

from compactscope.widgets.i18n import ct, ct_parts, tr

NO_CALL = -1          # the call box's "whole segment" entry
WIDEST_SAMPLE = 1000  # the drop-down list is made as wide as the widest of this many first and last labels


class ChoiceModel(QAbstractListModel):
    """A box's entries as (value, label, tooltip), each label translated when the box shows it: a whole history
    of 100k messages offers 50k model calls, and a combo box item made for each froze the window ~0.5 s.
    ``set_items(head, items, translate)``: ``head`` a few fixed entries, ``items`` any sequence of (value,
    label[, tooltip]) (``core.contexts.CallChoices`` labels its entries when read)."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.head: list = []
        self.items = ()
        self.translate = ct
        self._rows: dict | None = None

    def set_items(self, head: list, items, translate=ct) -> None:
        self.beginResetModel()
        self.head, self.items, self.translate, self._rows = list(head), items, translate, None
        self.endResetModel()

    def rowCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self.head) + len(self.items)

    def entry(self, row: int) -> tuple:
        """(value, label as given, tooltip) of a row."""
        e = self.head[row] if row < len(self.head) else self.items[row - len(self.head)]
        return e[0], e[1], e[2] if len(e) > 2 else ""

    def label(self, row: int) -> str:
        return self.translate(self.entry(row)[1]) if row >= len(self.head) else self.entry(row)[1]

    def data(self, index, role=Qt.DisplayRole):
        if not index.isValid() or not 0 <= index.row() < self.rowCount():
            return None
        if role in (Qt.DisplayRole, Qt.EditRole):
            return self.label(index.row())
        if role == Qt.UserRole:
            return self.entry(index.row())[0]
        if role == Qt.ToolTipRole:
            tip = self.entry(index.row())[2]
            return "\n".join(self.translate(line) for line in tip.splitlines()) if tip else None
        return None

    def row_of(self, value) -> int:
        """The row holding ``value`` (-1: none), without reading every entry where the items can say."""
        for k, e in enumerate(self.head):
            if e[0] == value:
                return k
        find = getattr(self.items, "index", None)
        if find is not None and not isinstance(self.items, (list, tuple)):
            try:
                return len(self.head) + find(value)
            except ValueError:
                return -1
        if self._rows is None:
            self._rows = {}
            for k, e in enumerate(self.items):
                self._rows.setdefault(e[0], len(self.head) + k)
        return self._rows.get(value, -1)

    def widest_sample(self) -> list[str]:
        """The labels the drop-down's width is measured on: the head, the first and the last items."""
        n = len(self.items)
        rows = list(range(len(self.head) + min(n, WIDEST_SAMPLE))) + \
            list(range(len(self.head) + max(WIDEST_SAMPLE, n - WIDEST_SAMPLE), len(self.head) + n))
        return [self.label(r) for r in rows]


class ChoiceBox(QComboBox):
    """A combo box over a ``ChoiceModel``; its drop-down list is sized to whole labels when it opens."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.choices = ChoiceModel(self)
        self.setModel(self.choices)
        self._sized = False
        self.choices.modelReset.connect(lambda: setattr(self, "_sized", False))

    def showPopup(self) -> None:
        if not self._sized:
            self._sized = True
            # the list that drops down shows whole labels, though the box itself may be narrow
            fm = self.fontMetrics()
            widest = max((fm.horizontalAdvance(t) for t in self.choices.widest_sample()), default=0)
            self.view().setMinimumWidth(min(widest + 40, 1000))
        super().showPopup()


class ContextPicker(QWidget):
    sigConversation = Signal(int)
    sigSegment = Signal(object)          # int, or None: the whole history
    sigCall = Signal(object)             # int (numbered over the whole history), or None: the whole segment

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("contextPicker")
        row = QHBoxLayout(self)
        row.setContentsMargins(2, 0, 2, 0)
        row.setSpacing(4)
        self.label = QLabel(tr("Showing:"), self)
        self.label.setToolTip(tr("The conversation, the real API context and the model call the pipeline runs "
                                      "on"))
        row.addWidget(self.label)
        self.conversation_box = self._box("pickConversation")
        self.segment_box = self._box("pickSegment")
        self.call_box = self._box("pickCall")
        self.label.setBuddy(self.segment_box)
        self.conversation_box.setToolTip(tr("Which conversation of the file: the main one, then each subagent "
                                                 "or sidechain"))
        self.segment_box.setToolTip(tr("Which real API context: a segment between real compactions (the last "
                                            "one is what the agent would send next), or the whole history, which "
                                            "was never sent as one request"))
        self.call_box.setToolTip(tr("Exactly what was sent at one model call (numbered over the whole history, "
                                         "as the replay and run --call number them)"))
        self._what = {b: b.toolTip() for b in (self.conversation_box, self.segment_box, self.call_box)}
        for box, stretch in ((self.conversation_box, 2), (self.segment_box, 3), (self.call_box, 2)):
            row.addWidget(box, stretch)
        self.conversation_box.currentIndexChanged.connect(self._conversation)
        self.segment_box.currentIndexChanged.connect(self._segment)
        self.call_box.currentIndexChanged.connect(self._call)
        self._applying = False
        self._key = None

    def _box(self, name: str) -> ChoiceBox:
        b = ChoiceBox(self)
        b.setObjectName(name)
        b.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        b.setMinimumContentsLength(6)          # the row shares the width; the current text is elided
        b.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        b.setMinimumWidth(60)
        return b

    # ------------------------------------------------------------ session -> view
    def set_state(self, conversations: list, segments: list, calls: list, conversation: int,
                  segment: int | None, call: int | None) -> None:
        """``conversations``: (index, label, tooltip); ``segments``: (segment or None, label, tooltip);
        ``calls``: (call, label) of the shown segment; then the current choice."""
        self._applying = True
        try:
            key = (tuple(c[1] for c in conversations), tuple(s[1] for s in segments),
                   getattr(calls, "key", None) or tuple(c[0] for c in calls))
            if key != self._key:
                self._key = key
                self.conversation_box.choices.set_items([], conversations)
                self.segment_box.choices.set_items([], [(NO_CALL if k is None else k, label, tip)
                                                        for k, label, tip in segments])
                whole = tr("call: none, the whole context") if len(segments) > 1 \
                    else tr("call: none, the whole conversation")
                self.call_box.choices.set_items([(NO_CALL, whole, "")], calls, ct_parts)
            self._select(self.conversation_box, conversation)
            self._select(self.segment_box, NO_CALL if segment is None else segment)
            self._select(self.call_box, NO_CALL if call is None else call)
            one = len(conversations) <= 1
            # a file with one conversation has nothing to pick there: the box leaves its room to the others
            # (on a projector at 1024 px three boxes cut their texts)
            self.conversation_box.setVisible(not one)
            self.conversation_box.setEnabled(not one)
            for box in (self.conversation_box, self.segment_box, self.call_box):
                # the box may be narrower than its text: the whole of it, and what the box is for, on hover
                i = box.currentIndex()
                tip = box.itemData(i, 3) if i >= 0 else None
                box.setToolTip("\n".join(t for t in (box.currentText(), tip or self._what[box]) if t))
            self.segment_box.setEnabled(len(segments) > 1)
            self.call_box.setEnabled(bool(calls))
        finally:
            self._applying = False

    @staticmethod
    def _select(box: ChoiceBox, value) -> None:
        i = box.choices.row_of(value)
        if i >= 0 and i != box.currentIndex():
            box.setCurrentIndex(i)

    # ------------------------------------------------------------ user -> session
    def _conversation(self, i: int) -> None:
        if not self._applying and i >= 0:
            self.sigConversation.emit(int(self.conversation_box.itemData(i)))

    def _segment(self, i: int) -> None:
        if not self._applying and i >= 0:
            v = self.segment_box.itemData(i)
            self.sigSegment.emit(None if v == NO_CALL else int(v))

    def _call(self, i: int) -> None:
        if not self._applying and i >= 0:
            v = self.call_box.itemData(i)
            self.sigCall.emit(None if v == NO_CALL else int(v))

    def summary(self) -> str:
        """What is picked, in words (tests, the status tooltip)."""
        return " \u00b7 ".join(b.currentText() for b in (self.conversation_box, self.segment_box, self.call_box))
