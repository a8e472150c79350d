"""The message panel: search field, role/block/changed/matches filters, the after/before switch,
expand/collapse/partner buttons, and the message list. A view: it emits what the user changed
(``sigModeChanged``, ``sigFiltersChanged``) and shows what it is given."""
from __future__ import annotations

from PySide6.QtCore import QEvent, QT_TRANSLATE_NOOP, Qt, Signal
from PySide6.QtWidgets import QCheckBox, QComboBox, QHBoxLayout, QLabel, QLineEdit, QToolButton, QVBoxLayout, QWidget

from compactscope.widgets.flow import FlowLayout, flow_widget_policy
from compactscope.widgets.message_model import IndexRole, MessageListModel
from compactscope.widgets.message_view import MessageView
from compactscope.widgets.i18n import tr

ROLES = (QT_TRANSLATE_NOOP("", "all roles"), "user", "assistant", "system", "tool")
BLOCKS = (QT_TRANSLATE_NOOP("", "any block"), "text", "tool_use", "tool_result", "thinking", "image")
NO_FILTERS = {"search": "", "role": "", "block": "", "changed_only": False, "matches_only": False}


class MessagePanel(QWidget):
    sigModeChanged = Signal(str)          # "after" | "before"
    sigFiltersChanged = Signal(dict)      # {"search", "role", "block", "changed_only", "matches_only"}

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("messagePanel")
        ml = QVBoxLayout(self)
        ml.setContentsMargins(0, 0, 0, 0)
        ml.setSpacing(2)
        bar = QHBoxLayout()
        self.search = QLineEdit(self)
        self.search.setObjectName("searchField")
        self.search.setMinimumWidth(60)
        self.search.setPlaceholderText(tr("Search (Ctrl+F; Enter: next, Shift+Enter: previous)"))
        self.search.setToolTip(tr("Enter: next match · Shift+Enter: previous match"))
        self.search.setClearButtonEnabled(True)
        self.search.textChanged.connect(self._search_changed)
        self.search.installEventFilter(self)         # Enter = next match, Shift+Enter = previous
        bar.addWidget(self.search, 1)
        self.match_label = QLabel("", self)
        bar.addWidget(self.match_label)
        self.mode_box = QComboBox(self)
        self.mode_box.setObjectName("viewMode")
        self.mode_box.addItems([tr("after layer"), tr("before layer")])
        self.mode_box.setToolTip(tr("Show the conversation as this layer left it, or as it entered the layer"))
        self.mode_box.currentIndexChanged.connect(lambda i: self.sigModeChanged.emit("before" if i else "after"))
        ml.addLayout(bar)
        fbox = QWidget(self)
        flow_widget_policy(fbox)
        frow = FlowLayout(fbox)
        self.role_filter = QComboBox(fbox)
        self.role_filter.setObjectName("roleFilter")
        self.role_filter.addItems([tr(ROLES[0])] + list(ROLES[1:]))        # roles and types are the API's words
        self.role_filter.currentIndexChanged.connect(self._filters_changed)
        frow.addWidget(self.role_filter)
        self.block_filter = QComboBox(fbox)
        self.block_filter.setObjectName("blockFilter")
        self.block_filter.addItems([tr(BLOCKS[0])] + list(BLOCKS[1:]))
        self.block_filter.currentIndexChanged.connect(self._filters_changed)
        frow.addWidget(self.block_filter)
        self.changed_only = QCheckBox(tr("changed"), fbox)
        self.changed_only.setToolTip(tr("Only messages this layer changed or inserted"))
        self.changed_only.setObjectName("changedOnly")
        self.changed_only.toggled.connect(self._filters_changed)
        frow.addWidget(self.changed_only)
        self.matches_only = QCheckBox(tr("matches"), fbox)
        self.matches_only.setToolTip(tr("Only messages matching the search"))
        self.matches_only.toggled.connect(self._filters_changed)
        frow.addWidget(self.matches_only)
        frow.addWidget(self.mode_box)
        for box in (self.role_filter, self.block_filter, self.mode_box):
            box.setSizeAdjustPolicy(QComboBox.AdjustToMinimumContentsLengthWithIcon)
            box.setMinimumContentsLength(7)
        self._buttons: list = []
        for text, tip, slot in ((tr("Expand"), tr("Expand all blocks (double-click or Space: one message)"),
                                 lambda: self.model.set_expand_all(True)),
                                (tr("Collapse"), tr("Collapse all: one line per block"),
                                 lambda: self.model.set_expand_all(False)),
                                (tr("\u21c4 Partner"), tr("Jump to the other half of the selected tool pair (Ctrl+J)"),
                                 lambda: self.jump_to_partner())):
            b = QToolButton(fbox)
            self._buttons.append(b)
            b.setText(text)
            b.setToolTip(tip)
            b.clicked.connect(slot)
            frow.addWidget(b)
        ml.addWidget(fbox)
        self.model = MessageListModel(self)
        self.view = MessageView(self)
        self.view.setModel(self.model)
        ml.addWidget(self.view, 1)
        self._applying = False
        self._presenter = False
        self.status_message = None          # callable(text) for "holds no tool pair" and the like

    # ------------------------------------------------------------ state in
    def set_presenter(self, on: bool) -> None:
        """Presenter mode: the message list gets the room; the search and the after/before switch stay, the
        filters stay only while one is in use, the expand/collapse/partner buttons go (their keys still work)."""
        self._presenter = on
        f = self.filters()
        used = {self.role_filter: bool(f["role"]), self.block_filter: bool(f["block"]),
                self.changed_only: f["changed_only"], self.matches_only: f["matches_only"]}
        for w, active in used.items():
            w.setVisible(not on or active)
        for b in self._buttons:
            b.setVisible(not on)

    def set_mode(self, mode: str) -> None:
        i = 1 if mode == "before" else 0
        if self.mode_box.currentIndex() != i:
            self.mode_box.blockSignals(True)
            self.mode_box.setCurrentIndex(i)
            self.mode_box.blockSignals(False)

    def filters(self) -> dict:
        role = self.role_filter.currentText() if self.role_filter.currentIndex() > 0 else ""
        block = self.block_filter.currentText() if self.block_filter.currentIndex() > 0 else ""
        return {"search": self.search.text(), "role": role,
                "block": block, "changed_only": self.changed_only.isChecked(),
                "matches_only": self.matches_only.isChecked()}

    def set_filters(self, f: dict) -> None:
        """Show these filters (a restored state) without emitting them back."""
        f = {**NO_FILTERS, **f}
        if f == self.filters():
            return
        self._applying = True
        try:
            if self.search.text() != f.get("search", ""):
                self.search.setText(f.get("search", ""))
            self.role_filter.setCurrentIndex(max(0, self.role_filter.findText(f.get("role") or "\0")))
            self.block_filter.setCurrentIndex(max(0, self.block_filter.findText(f.get("block") or "\0")))
            self.changed_only.setChecked(bool(f.get("changed_only")))
            self.matches_only.setChecked(bool(f.get("matches_only")))
        finally:
            self._applying = False
        self._apply()

    def clear_filters(self) -> None:
        """No role, block, changed or matches filter (the search stays)."""
        if self.filters() != {**NO_FILTERS, "search": self.search.text()}:
            self.set_filters({"search": self.search.text()})
            self.sigFiltersChanged.emit(self.filters())

    # ------------------------------------------------------------ user actions
    def focus_search(self) -> None:
        self.search.setFocus()
        self.search.selectAll()

    def _search_changed(self, text: str) -> None:
        self.model.set_search(text)
        self.update_match_label()
        if not self._applying:
            self.sigFiltersChanged.emit(self.filters())

    def eventFilter(self, obj, ev) -> bool:
        if obj is self.search and ev.type() == QEvent.Type.KeyPress and ev.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
            self.next_match(-1 if ev.modifiers() & Qt.KeyboardModifier.ShiftModifier else 1)
            return True
        if obj is self.search and ev.type() == QEvent.KeyPress and ev.key() == Qt.Key_Escape:
            self.view.setFocus(Qt.ShortcutFocusReason)     # back to the list: Home, arrows step again
            return True
        return super().eventFilter(obj, ev)

    def update_match_label(self) -> None:
        n = len(self.model.matches)
        text = (tr("1 match") if n == 1 else tr("{n} matches").format(n=n)) if self.model.search_text else ""
        self.match_label.setText(text)

    def next_match(self, d: int = 1) -> bool:
        matches = sorted(self.model.matches)
        if not matches:
            return False
        cur = self.view.currentIndex().data(IndexRole) if self.view.currentIndex().isValid() else -1
        if d > 0:
            nxt = next((m for m in matches if m > cur), matches[0])
        else:
            nxt = next((m for m in reversed(matches) if m < cur), matches[-1])
        return self.view.select_message(nxt)

    def _filters_changed(self, *_) -> None:
        if self._presenter:
            self.set_presenter(True)         # a filter in use stays in sight
        if self._applying:
            return
        self._apply()
        self.sigFiltersChanged.emit(self.filters())

    def _apply(self) -> None:
        f = self.filters()
        self.model.set_filters(role=f["role"], block=f["block"], only_changed=f["changed_only"],
                               only_matches=f["matches_only"])

    def select_message(self, mi: int | None) -> bool:
        """Select message mi; when a filter hides it, clear the filters first."""
        if mi is None:
            return False
        if not self.view.select_message(mi):
            self.clear_filters()
            return self.view.select_message(mi)
        return True

    def jump_to_partner(self) -> bool:
        cur = self.view.currentIndex()
        if not cur.isValid():
            return False
        mi = cur.data(IndexRole)
        sb = self.model.selected_block
        partners = self.model.partners_of(mi, sb[1]) if sb and sb[0] == mi and sb[1] is not None else set()
        partners = partners or self.model.partners_of(mi)
        if not partners:
            if self.status_message is not None:
                self.status_message(tr("message #{mi} holds no tool pair").format(mi=mi))
            return False
        later = sorted(p for p in partners if p > mi)
        target = later[0] if later else sorted(partners)[0]
        keep = set(self.model.highlight) | {mi}
        ok = self.select_message(target)
        self.model.set_highlight(keep - {target})
        return ok
