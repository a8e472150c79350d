"""Before/after of one layer as ONE aligned two-column table model.

Rows come from ``core.align.align(step)``: kept messages side by side, removed
ones only on the left with a hatched gap on the right, inserted ones (placeholder,
summary) only on the right, changed blocks marked with old -> new size. One
scrollbar keeps both sides aligned.
"""
from __future__ import annotations

from collections import Counter
from operator import itemgetter
from typing import NamedTuple

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, QRect, QT_TRANSLATE_NOOP, Qt, Signal
from PySide6.QtGui import QBrush, QColor, QFont, QFontMetrics, QPainter, QPen
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QStyle, QStyledItemDelegate, QTableView

from compactscope.core.analysis import present
from compactscope.core.pipeline.align import KEPT, KeptRows, PackedRows, align
from compactscope.core.pipeline.memo import IdentityCache

from compactscope.widgets.common import BLOCK_COLORS, ROLE_COLORS, STATUS_COLORS, color, fmt, is_dark, pair_color
from compactscope.widgets.i18n import ct, ct_parts, ct_summary, tr
from compactscope.widgets.message_delegate import BOUNDARY_COLORS, paint_boundary, pill
from compactscope.widgets.search_marks import RowMarks, draw_line

KindRole = Qt.ItemDataRole.UserRole + 1
MessageRole = Qt.ItemDataRole.UserRole + 2
IndexRole = Qt.ItemDataRole.UserRole + 3
BlocksRole = Qt.ItemDataRole.UserRole + 4
RowRole = Qt.ItemDataRole.UserRole + 5

LINES = 3
BOUNDARY = "boundary"


class BoundaryRow(NamedTuple):
    """A real compaction's marker row between two aligned rows (a ``core.align.Row`` shape): no message
    on either side."""
    left: None
    right: None
    kind: str
    edits: tuple
    blocks: tuple
    text: str


def boundary_row(text: str) -> BoundaryRow:
    return BoundaryRow(None, None, BOUNDARY, (), (), text)


def with_boundaries(rows: list, left: dict, right: dict) -> list:
    """``rows`` with a ``BoundaryRow`` before the first row whose left (input) or right (output) message is the
    first message after a real compaction (``left``/``right``: message index -> ``core.contexts.Mark``)."""
    if not left and not right:
        return rows
    out, done = [], set()
    for r in rows:
        for mark in (left.get(r.left) if r.left is not None else None,
                     right.get(r.right) if r.right is not None else None):
            if mark is not None and id(mark) not in done:
                done.add(id(mark))
                out.append(boundary_row(mark.text))
        out.append(r)
    return out


class DiffModel(QAbstractTableModel):
    """Column 0 = the layer's input, column 1 = its output."""

    HEADERS = (QT_TRANSLATE_NOOP("", "before (layer input)"), QT_TRANSLATE_NOOP("", "after (layer output)"))

    def __init__(self, parent=None):
        super().__init__(parent)
        self.step = None
        self.rows: list = []
        self.all_rows: list = []
        self.changes_only = False
        self.search_text = ""                     # the message list's search: marked in both columns
        self.summaries: tuple = ({}, {})          # per side: message index -> the real compaction it summarises
        self._counts = IdentityCache(lambda rows: {"kept": len(rows)} if isinstance(rows, KeptRows)
                                     else rows.kind_counts() if isinstance(rows, PackedRows)
                                     else dict(Counter(map(itemgetter(2), rows))), floor=8)  # Row.kind

    def set_step(self, step, rows: list | None = None, marks: tuple | None = None) -> None:
        """Show a step; ``rows`` = ``align(step)`` when the caller already has them; ``marks``: the real
        compactions in its input and output ((index -> Mark of the boundary before it, index -> Mark of the
        summary it is) per side, ``Session.marks``): a boundary row each, the summaries badged."""
        self.beginResetModel()
        self.step = step
        rows = (rows if rows is not None else align(step)) if step is not None else []
        (lb, ls), (rb, rs) = marks or (({}, {}), ({}, {}))
        self.summaries = (ls, rs)
        self.all_rows = with_boundaries(rows, lb, rb)
        self._marked = bool(lb or rb)
        self._apply_filter()
        self.endResetModel()

    def boundary_rows(self) -> list[int]:
        if not getattr(self, "_marked", False):
            return []                      # no real compaction in the step (100k kept rows are not read)
        return [k for k, r in enumerate(self.rows) if r.kind == BOUNDARY]

    def _apply_filter(self) -> None:
        if self.changes_only:
            rows = self.all_rows
            self.rows = [] if isinstance(rows, KeptRows) else rows.without(KEPT) if isinstance(rows, PackedRows) \
                else [r for r in rows if r.kind != KEPT]
        else:
            self.rows = self.all_rows

    def set_search(self, text: str) -> None:
        """Mark ``text`` wherever a row shows it (a repaint: the rows and their heights stay)."""
        if text != self.search_text:
            self.search_text = text
            if self.rows:
                self.dataChanged.emit(self.index(0, 0), self.index(len(self.rows) - 1, 1), [Qt.DisplayRole])

    def matches(self, m) -> bool:
        """Does message ``m`` hold the search term (the list's rule: its readable text, case-insensitive)?"""
        q = self.search_text.lower()
        return bool(q) and m is not None and q in present.search_text.get(m)

    def set_changes_only(self, on: bool) -> None:
        self.beginResetModel()
        self.changes_only = on
        self._apply_filter()
        self.endResetModel()

    def counts(self) -> dict:
        """Rows per kind (counted once per rows shown, in C). Only the rows shown now are kept as a key: each
        run's steps have new rows (100k at 100k messages), and a key keeps its rows alive."""
        counts = self._counts.get(self.all_rows)
        self._counts.retain([self.all_rows])
        return dict(counts)

    def rowCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else 2

    def headerData(self, section, orientation, role=Qt.DisplayRole):
        if role != Qt.DisplayRole:
            return None
        if orientation == Qt.Horizontal and 0 <= section < 2:
            return tr(self.HEADERS[section])
        if orientation == Qt.Vertical and 0 <= section < len(self.rows):
            return str(section)
        return None

    def side_index(self, row: int, col: int):
        r = self.rows[row]
        return r.left if col == 0 else r.right

    def message(self, row: int, col: int):
        i = self.side_index(row, col)
        if i is None or self.step is None:
            return None
        return (self.step.input if col == 0 else self.step.messages)[i]

    def chips(self, m) -> list:
        return present.chips.get(m)

    def data(self, index: QModelIndex | QPersistentModelIndex, role: int = Qt.ItemDataRole.DisplayRole):
        if not index.isValid() or not 0 <= index.row() < len(self.rows) or not 0 <= index.column() < 2:
            return None
        row, col = index.row(), index.column()
        r = self.rows[row]
        if role == KindRole:
            return r.kind
        if r.kind == BOUNDARY:
            return ct_parts(r.text) if role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.AccessibleTextRole, Qt.ItemDataRole.ToolTipRole) else None
        if role == RowRole:
            return r
        if role == IndexRole:
            return self.side_index(row, col)
        if role == BlocksRole:
            return r.blocks
        m = self.message(row, col)
        if role == MessageRole:
            return m
        if role == Qt.ItemDataRole.DisplayRole or role == Qt.ItemDataRole.AccessibleTextRole:
            i = self.side_index(row, col)
            if i is None:
                return "(gap)" if r.kind != "kept" else ""
            chips = self.chips(m)
            rl = m.get("role", "?") if isinstance(m, dict) else "?"
            return f"#{i} {rl} [{r.kind}] " + (chips[0].summary[:100] if chips else "")
        if role == Qt.ItemDataRole.ToolTipRole and self.step is not None and r.edits:
            return "\n".join(self.step.edits[k].text for k in r.edits)
        return None

    def flags(self, index: QModelIndex | QPersistentModelIndex):
        if not index.isValid():
            return Qt.ItemFlag.NoItemFlags
        return Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable


class DiffDelegate(QStyledItemDelegate):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.row_marks = RowMarks()        # the search term's matches each cell drew last, by (row, column)

    @property
    def marks(self) -> dict:
        return self.row_marks.marks

    def paint(self, p: QPainter, option, index) -> None:
        pal = option.palette
        dark = is_dark(pal)
        r = option.rect
        fm = QFontMetrics(option.font)
        lh = fm.height() + 2
        model = index.model()
        col = index.column()
        row = model.rows[index.row()]
        kind = row.kind
        if kind == BOUNDARY:         # spans both columns (DiffView sets the span)
            p.save()
            p.setClipRect(r)
            p.fillRect(r, pal.base().color())
            bold = QFont(option.font)
            bold.setBold(True)
            paint_boundary(p, r, ct_parts(row.text), bold, dark)
            p.restore()
            return
        m = model.message(index.row(), col)
        p.save()
        p.setClipRect(r)
        p.fillRect(r, pal.base().color())
        if m is None:
            # the hatched gap: this side has no message in this row
            p.fillRect(r, QBrush(color("#94a3b8", 110), Qt.BrushStyle.BDiagPattern))
            p.setPen(color(pal.text().color().name(), 150))
            small = QFont(option.font)
            small.setItalic(True)
            p.setFont(small)
            label = tr("removed by this layer") if col == 1 else tr("inserted by this layer")
            room = r.adjusted(12, 0, -6, 0)
            p.drawText(room, Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft | Qt.TextFlag.TextWordWrap, label)   # a narrow column wraps it
            p.restore()
            return
        tint = {"removed": "removed", "inserted": "inserted", "changed": "changed", "duplicated": "duplicated"}.get(kind)
        if tint:
            p.fillRect(r, color(STATUS_COLORS[tint], 52 if dark else 40))
        term, marks = self.row_marks.row(model.search_text, (index.row(), col), model.matches(m))
        if term:
            p.fillRect(r, color("#facc15", 50))               # a matching message, as in the list
        if option.state & QStyle.StateFlag.State_Selected:
            p.fillRect(r, color(pal.highlight().color().name(), 80))
        chips = model.chips(m)
        role = m.get("role", "?") if isinstance(m, dict) else "?"
        i = row.left if col == 0 else row.right
        p.fillRect(QRect(r.left(), r.top(), 5, r.height()), QColor(ROLE_COLORS.get(role, "#94a3b8")))
        left, right = r.left() + 10, r.right() - 6
        bold = QFont(option.font)
        bold.setBold(True)
        small = QFont(option.font)
        small.setPointSizeF(max(6.0, option.font.pointSizeF() * 0.85))
        sfm = QFontMetrics(small)
        top = r.top() + 3
        p.setFont(bold)
        p.setPen(pal.text().color())
        head = f"#{i} {role}"
        p.drawText(QRect(left, top, 300, lh), Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft, head)
        x = left + QFontMetrics(bold).horizontalAdvance(head) + 10
        if kind != "kept":
            word = {"removed": tr("REMOVED"), "inserted": tr("INSERTED"), "changed": tr("CHANGED"),
                    "duplicated": tr("DUPLICATED (appears twice)")}.get(kind, kind)
            x = pill(p, x, top, lh, word, QColor(STATUS_COLORS.get(kind) or "#64748b"), small, sfm, limit=right - x)
        summ = model.summaries[col].get(i)
        if summ is not None:
            x = pill(p, x, top, lh, ct(summ.badge), QColor(BOUNDARY_COLORS[0]), small, sfm, limit=right - x)
        size_text = tr("{n} chars").format(n=fmt(present.chars.get(m)))
        p.setFont(option.font)
        if x + fm.horizontalAdvance(size_text) + 4 < right:
            p.setPen(color(pal.text().color().name(), 160))
            p.drawText(QRect(left, top, right - left, lh), Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignRight, size_text)
        top += lh
        blocks = row.blocks if col == 1 or kind == "changed" else ()
        changed_blocks = {b.block: b for b in blocks}
        shown = 0
        for c in chips:
            if shown >= LINES - 1:
                break
            x = left + 4
            bc = QColor(BLOCK_COLORS.get(c.type, "#94a3b8"))
            if c.is_tool and c.tool_id:
                p.fillRect(QRect(left, top + 2, 3, lh - 4), pair_color(c.tool_id, dark))
            x = pill(p, x, top, lh, c.label, bc, small, sfm)
            bchg = changed_blocks.get(c.block)
            if bchg is not None:
                verb = {"persist": tr("persisted {a} \u2192 {b} chars"),
                        "replace": tr("replaced {a} \u2192 {b} chars")}.get(bchg.kind, bchg.kind + " {a} \u2192 {b}")
                text = verb.format(a=fmt(bchg.old_len), b=fmt(bchg.new_len))
                if sfm.horizontalAdvance(text) + 10 > right - x:          # a narrow column: the figures only
                    text = f"{fmt(bchg.old_len)} \u2192 {fmt(bchg.new_len)}"
                x = pill(p, x, top, lh, text, QColor("#b45309"), small, sfm, limit=right - x)
            end = right
            last_line = shown == LINES - 2 and len(chips) > LINES - 1
            if last_line:
                more = tr("+{n} more").format(n=len(chips) - shown - 1)
                end = right - sfm.horizontalAdvance(more) - 8
                p.setFont(small)
                p.setPen(color(pal.text().color().name(), 150))
                p.drawText(QRect(end, top, right - end, lh), Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignRight, more)
            p.setFont(option.font)
            p.setPen(pal.text().color())
            shown_text = fm.elidedText(ct_summary(c.summary), Qt.TextElideMode.ElideRight, max(10, end - x))
            draw_line(p, QRect(x, top, max(end - x, 1), lh), shown_text, term, fm, marks)
            top += lh
            shown += 1
        p.setPen(QPen(color(pal.text().color().name(), 40), 1))
        p.drawLine(r.left(), r.bottom(), r.right(), r.bottom())
        p.restore()


class DiffView(QTableView):
    sigMessageSelected = Signal(int, int)   # (column: 0 before / 1 after, message index)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("diffView")
        self.setItemDelegate(DiffDelegate(self))
        self.setVerticalScrollMode(QAbstractItemView.ScrollPerPixel)
        self.setSelectionBehavior(QAbstractItemView.SelectItems)
        self.setSelectionMode(QAbstractItemView.SingleSelection)
        self.setShowGrid(False)
        self.setWordWrap(False)
        self.horizontalHeader().setSectionResizeMode(QHeaderView.Stretch)
        vh = self.verticalHeader()
        vh.setSectionResizeMode(QHeaderView.Fixed)
        vh.setVisible(False)
        self._apply_row_height()

    def _apply_row_height(self) -> None:
        lh = QFontMetrics(self.font()).height() + 2
        self.verticalHeader().setDefaultSectionSize(LINES * lh + 8)

    def changeEvent(self, e) -> None:
        super().changeEvent(e)
        if e.type() == e.Type.FontChange:
            self._apply_row_height()
            if self.model() is not None:
                self._spans()

    def setModel(self, model) -> None:
        super().setModel(model)
        self.selectionModel().currentChanged.connect(self._current)
        model.modelReset.connect(self._spans)

    def _spans(self) -> None:
        """A real compaction's boundary row spans both columns, one line and a half high."""
        self.clearSpans()
        m = self.model()
        lh = QFontMetrics(self.font()).height() + 2
        vh = self.verticalHeader()
        for row in getattr(m, "boundary_rows", lambda: [])():
            self.setSpan(row, 0, 1, 2)
            vh.resizeSection(row, int(lh * 1.6))

    def _current(self, cur, prev) -> None:
        if cur.isValid():
            i = cur.data(IndexRole)
            if i is not None:
                self.sigMessageSelected.emit(cur.column(), i)

    def scroll_to_first_change(self) -> None:
        m = self.model()
        step = getattr(m, "step", None)
        if step is not None and not step.changed:
            return                        # every row is kept: nothing to look for (100k rows)
        for row, r in enumerate(m.rows):
            if r.kind not in ("kept", BOUNDARY):
                self.scrollTo(m.index(row, 0), QAbstractItemView.ScrollHint.PositionAtTop)
                return
