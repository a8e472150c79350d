"""The context picker: which conversation of the file (main, each subagent or sidechain), which real API
context (each segment between compactions, or the whole history, never sent as one request) and which
model call (exactly what was sent at call N). A view of the session's choice: it emits what the user
picks (``sigConversation(int)``, ``sigSegment(object)``, ``sigCall(object)``) and shows what
``set_state`` gives it, without emitting that back."""
from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QSizePolicy, QWidget

from .i18n import ct, ct_parts, tr

NO_CALL = -1          # the call box's "whole segment" entry


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

    def _box(self, name: str) -> QComboBox:
        b = QComboBox(self)
        b.setObjectName(name)
        b.setSizeAdjustPolicy(QComboBox.AdjustToMinimumContentsLengthWithIcon)
        b.setMinimumContentsLength(6)          # the row shares the width; the current text is elided
        b.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Fixed)
        b.setMinimumWidth(60)
        return b

    # ------------------------------------------------------------ session -> view
    def set_state(self, conversations: list, segments: list, calls: list, conversation: int,
                  segment: int | None, call: int | None) -> None:
        """``conversations``: (index, label, tooltip); ``segments``: (segment or None, label, tooltip);
        ``calls``: (call, label) of the shown segment; then the current choice."""
        self._applying = True
        try:
            key = (tuple(c[1] for c in conversations), tuple(s[1] for s in segments), tuple(c[0] for c in calls))
            if key != self._key:
                self._key = key
                self._fill(self.conversation_box, [(k, ct(label), tip) for k, label, tip in conversations])
                self._fill(self.segment_box, [(NO_CALL if k is None else k, ct(label), tip)
                                              for k, label, tip in segments])
                whole = tr("call: none, the whole context") if len(segments) > 1 \
                    else tr("call: none, the whole conversation")
                self._fill(self.call_box, [(NO_CALL, whole, "")] + [(n, ct_parts(label), "") for n, label in calls])
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
    def _fill(box: QComboBox, items: list) -> None:
        box.clear()
        for value, label, tip in items:
            box.addItem(label, value)
            if tip:
                box.setItemData(box.count() - 1, tip, 3)      # Qt.ToolTipRole
        # the list that drops down shows whole labels, though the box itself may be narrow
        fm = box.fontMetrics()
        widest = max((fm.horizontalAdvance(label) for _, label, _ in items[:2000]), default=0)
        box.view().setMinimumWidth(min(widest + 40, 1000))

    @staticmethod
    def _select(box: QComboBox, value) -> None:
        i = box.findData(value)
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
