"""The message list's model: the messages of one stage, filtered, one row per message, with the roles the
delegate paints from (chips from ``core.present``, statuses, highlights, cut lines, findings, matches)."""
from __future__ import annotations

from PySide6.QtCore import QAbstractListModel, QModelIndex, QPersistentModelIndex, Qt, Signal

from compactscope.core.analysis import present
from compactscope.core.pipeline.align import RowKinds
from compactscope.core.model.messages import ToolPairIndex
from compactscope.core.model.describe import meta_lines

from compactscope.widgets.i18n import ct_parts

MessageRole = Qt.ItemDataRole.UserRole + 1
IndexRole = Qt.ItemDataRole.UserRole + 2
ChipsRole = Qt.ItemDataRole.UserRole + 3
StatusRole = Qt.ItemDataRole.UserRole + 4
HighlightRole = Qt.ItemDataRole.UserRole + 5
FindingsRole = Qt.ItemDataRole.UserRole + 6
CutsRole = Qt.ItemDataRole.UserRole + 7
MatchRole = Qt.ItemDataRole.UserRole + 8
ExpandedRole = Qt.ItemDataRole.UserRole + 9
SizeRole = Qt.ItemDataRole.UserRole + 10
SelectedBlockRole = Qt.ItemDataRole.UserRole + 11

MAX_BLOCKS_SHOWN = 12
INSERTED_LINES = 6


class MessageListModel(QAbstractListModel):
    """The messages of one stage, filtered; rows map to message indexes."""

    sigFilterChanged = Signal()
    sigRepaint = Signal()

    def __init__(self, parent=None):
        super().__init__(parent)
        self.messages: list = []
        self.rows: list[int] | range = range(0)   # message index per visible row
        self._row_of: dict[int, int] | None = None   # None: unfiltered, row == message index
        self._pairs = ToolPairIndex([])
        self.status: dict[int, str] = {}     # message index -> changed/inserted/removed/duplicated
        self.findings: dict[int, list] = {}  # message index -> [Finding]
        self.cuts: dict[int, list] = {}      # message index -> [(label, style)] drawn above the row
        self.badges: dict[int, str] = {}
        self.highlight: set[int] = set()
        self.matches: set[int] = set()
        self.expanded: set[int] = set()
        self.expand_all = False
        self.selected_block: tuple[int, int] | None = None
        self.filter_role = ""
        self.filter_block = ""
        self.only_changed = False
        self.only_matches = False
        self.search_text = ""
        self.meta: dict = {}                 # id(message) -> MessageMeta (time, usage of its call), from the file

    # ------------------------------------------------------------ data in
    def set_messages(self, messages: list, *, status: dict | None = None, findings=None,
                     cuts: dict | None = None, badges: dict | None = None, meta: dict | None = None) -> None:
        """``badges``: message index -> a short note drawn in its header (e.g. who wrote a summary);
        ``meta``: id(message) -> MessageMeta (its time and its call's usage are drawn in its header)."""
        self.beginResetModel()
        if meta is not None:
            self.meta = meta
        self.badges = dict(badges or {})
        self.messages = list(messages)
        self._pairs = None                   # built on first use (partner highlighting)
        # (a step's RowKinds is read-only and one byte per message: kept, not copied into a dict)
        self.status = status if isinstance(status, RowKinds) else dict(status or {})
        self.findings = {}
        for f in findings or []:
            self.findings.setdefault(f.message, []).append(f)
        self.cuts = dict(cuts or {})
        self.highlight = set()
        self.selected_block = None
        self.expanded = set()
        present.shown(len(self.messages))
        self._recompute_matches()
        self._refilter()
        self.endResetModel()

    @property
    def pairs(self) -> ToolPairIndex:
        if self._pairs is None:
            self._pairs = present.pair_index(self.messages)
        return self._pairs

    def meta_of(self, mi: int):
        """The MessageMeta of message ``mi`` (None when the file says nothing about it, or a layer made it)."""
        return self.meta.get(id(self.messages[mi])) if self.meta else None

    def chips(self, mi: int) -> list:
        return present.chips.get(self.messages[mi])

    def text_of(self, mi: int) -> str:
        """The message's readable text, lowercased (what the search looks in)."""
        return present.search_text.get(self.messages[mi])

    # ------------------------------------------------------------ filters
    def _accept(self, mi: int) -> bool:
        m = self.messages[mi]
        if self.filter_role and (not isinstance(m, dict) or m.get("role") != self.filter_role):
            return False
        if self.filter_block and not any(c.type == self.filter_block for c in self.chips(mi)):
            return False
        if self.only_changed and mi not in self.status:
            return False
        if self.only_matches and self.search_text and mi not in self.matches:
            return False
        return True

    def _refilter(self) -> None:
        if not (self.filter_role or self.filter_block or self.only_changed or
                (self.only_matches and self.search_text)):
            self.rows = range(len(self.messages))   # unfiltered: row == message index, nothing to build
            self._row_of = None
        else:
            self.rows = [i for i in range(len(self.messages)) if self._accept(i)]
            self._row_of = {mi: r for r, mi in enumerate(self.rows)}

    def set_filters(self, role: str | None = None, block: str | None = None, only_changed: bool | None = None,
                    only_matches: bool | None = None) -> None:
        self.beginResetModel()
        if role is not None:
            self.filter_role = role
        if block is not None:
            self.filter_block = block
        if only_changed is not None:
            self.only_changed = only_changed
        if only_matches is not None:
            self.only_matches = only_matches
        self._refilter()
        self.endResetModel()
        self.sigFilterChanged.emit()

    def _recompute_matches(self) -> None:
        q = self.search_text.lower()
        self.matches = {i for i in range(len(self.messages)) if q in self.text_of(i)} if q else set()

    def set_search(self, text: str) -> None:
        self.search_text = text
        old = set(self.matches)
        self._recompute_matches()
        if self.only_matches:
            self.beginResetModel()
            self._refilter()
            self.endResetModel()
        else:
            self._touch(old ^ self.matches)

    # ------------------------------------------------------------ state
    def row_of(self, mi: int) -> int | None:
        if self._row_of is None:
            return mi if isinstance(mi, int) and 0 <= mi < len(self.rows) else None
        return self._row_of.get(mi)

    def index_of_message(self, mi: int) -> QModelIndex:
        r = self.row_of(mi)
        return self.index(r, 0) if r is not None else QModelIndex()

    def _touch(self, mis) -> None:
        """Highlight, match and block-selection changes only change paint, never sizes. They are not
        sent as dataChanged: QListView answers dataChanged with a full relayout when item sizes are not
        uniform (10k rows: ~1 s of batched layout and a jumping scrollbar). The view repaints instead."""
        if mis:
            self.sigRepaint.emit()

    def set_highlight(self, mis: set) -> None:
        old = self.highlight
        self.highlight = set(mis)
        self._touch(old ^ self.highlight)

    def partners_of(self, mi: int, block: int | None = None) -> set:
        """Message indexes holding the other half of the tool pairs of message mi (or of one block)."""
        out = set()
        if block is not None:
            p = self.pairs.partner(mi, block)
            if p is not None:
                out.add(p[0])
            return out - {mi}
        for tid in self.pairs.ids_in_message(mi):
            pair = self.pairs.get(tid)
            if pair is None:
                continue
            if pair.use is not None:
                out.add(pair.use[0])
            out.update(r[0] for r in pair.results)
        out.discard(mi)
        return out

    def toggle_expanded(self, mi: int) -> None:
        if mi in self.expanded:
            self.expanded.discard(mi)
        else:
            self.expanded.add(mi)
        r = self.row_of(mi)
        if r is not None:
            self.layoutAboutToBeChanged.emit()
            self.layoutChanged.emit()

    def set_expand_all(self, on: bool) -> None:
        self.layoutAboutToBeChanged.emit()
        self.expand_all = on
        self.expanded = set()
        self.layoutChanged.emit()

    def is_expanded(self, mi: int) -> bool:
        return self.expand_all != (mi in self.expanded)

    def set_selected_block(self, mi: int, block: int | None) -> None:
        old = self.selected_block
        self.selected_block = (mi, block) if block is not None else None
        self._touch({x[0] for x in (old, self.selected_block) if x})

    # ------------------------------------------------------------ Qt model
    def rowCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self.rows)

    def data(self, index: QModelIndex | QPersistentModelIndex, role: int = Qt.ItemDataRole.DisplayRole):
        if not index.isValid() or not 0 <= index.row() < len(self.rows) or index.column() != 0:
            return None
        mi = self.rows[index.row()]
        if role == Qt.ItemDataRole.DisplayRole or role == Qt.ItemDataRole.AccessibleTextRole:
            m = self.messages[mi]
            r = m.get("role", "?") if isinstance(m, dict) else "?"
            chips = self.chips(mi)
            return f"#{mi} {r}: " + (f"[{chips[0].label}] {chips[0].summary[:120]}" if chips else "")
        if role == Qt.ItemDataRole.ToolTipRole:
            lines = [ct_parts(text) for text, style in self.cuts.get(mi, ()) if style == "boundary"] + \
                meta_lines(self.meta_of(mi)) + [str(f) for f in self.findings.get(mi, ())]
            return "\n".join(lines) if lines else None
        if role == IndexRole:
            return mi
        if role == MessageRole:
            return self.messages[mi]
        if role == ChipsRole:
            return self.chips(mi)
        if role == StatusRole:
            return self.status.get(mi, "")
        if role == HighlightRole:
            return mi in self.highlight
        if role == FindingsRole:
            return self.findings.get(mi, [])
        if role == CutsRole:
            return self.cuts.get(mi, [])
        if role == MatchRole:
            return mi in self.matches
        if role == ExpandedRole:
            return self.is_expanded(mi)
        if role == SizeRole:
            return present.chars.get(self.messages[mi])
        if role == SelectedBlockRole:
            sb = self.selected_block
            return sb[1] if sb and sb[0] == mi else None
        return None

    def flags(self, index: QModelIndex | QPersistentModelIndex):
        if not index.isValid():
            return Qt.ItemFlag.NoItemFlags
        return Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable
