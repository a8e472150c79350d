"""The message list: a lazily laid-out scroll area + QAbstractListModel + a painting delegate.

No widget per row. Each row is painted from a small ``Chip`` list (``core.present``) computed
lazily and cached by message identity (messages are shared between the stages of a trace, so
stepping reuses the cache). Row heights come from line counts only (no text layout), cached by
(message identity, expanded, extras).
"""
from __future__ import annotations

from PySide6.QtCore import QAbstractListModel, QItemSelectionModel, QModelIndex, QRect, QSize, Qt, Signal
from PySide6.QtGui import QBrush, QColor, QFont, QFontMetrics, QPainter, QPalette, QPen
from PySide6.QtWidgets import (QAbstractItemView, QAbstractScrollArea, QStyle, QStyledItemDelegate,
                               QStyleOptionViewItem)

from compactscope.core import present
from compactscope.core.messages import ToolPairIndex
from compactscope.core.present import EXPANDED_LINES, collapsed_shape
from compactscope.core.report.words import meta_lines, usage_short, when

from .common import BLOCK_COLORS, ROLE_COLORS, STATUS_COLORS, color, fmt, is_dark, pair_color
from .i18n import ct, ct_parts, tr

MessageRole = Qt.UserRole + 1
IndexRole = Qt.UserRole + 2
ChipsRole = Qt.UserRole + 3
StatusRole = Qt.UserRole + 4
HighlightRole = Qt.UserRole + 5
FindingsRole = Qt.UserRole + 6
CutsRole = Qt.UserRole + 7
MatchRole = Qt.UserRole + 8
ExpandedRole = Qt.UserRole + 9
SizeRole = Qt.UserRole + 10
SelectedBlockRole = Qt.UserRole + 11

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
        self.status = dict(status or {})
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

    def data(self, index: QModelIndex, role: int = Qt.DisplayRole):
        if not index.isValid() or not 0 <= index.row() < len(self.rows) or index.column() != 0:
            return None
        mi = self.rows[index.row()]
        if role == Qt.DisplayRole or role == Qt.AccessibleTextRole:
            m = self.messages[mi]
            r = m.get("role", "?") if isinstance(m, dict) else "?"
            chips = self.chips(mi)
            return f"#{mi} {r}: " + (f"[{chips[0].label}] {chips[0].summary[:120]}" if chips else "")
        if role == Qt.ToolTipRole:
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

    def flags(self, index: QModelIndex):
        if not index.isValid():
            return Qt.NoItemFlags
        return Qt.ItemIsEnabled | Qt.ItemIsSelectable


class MessageDelegate(QStyledItemDelegate):
    """Paints a message: role stripe, header, one line per block (chips), cut bands, findings."""

    PAD = 4

    def __init__(self, parent=None):
        super().__init__(parent)
        self._heights: dict = {}
        self._font: QFont | None = None
        self._lh = 0

    def _line_height(self, font: QFont) -> int:
        """The line height for ``font``; a new font (zoom) forgets the cached row heights.
        QFont == is a cheap C++ compare (toString() per row cost more than the rest of sizeHint)."""
        if self._font is None or font != self._font:
            self._font = QFont(font)
            self._lh = QFontMetrics(font).height() + 2
            self._heights.clear()
        return self._lh

    def _metrics(self, option) -> tuple[QFontMetrics, int]:
        font = option.font
        lh = self._line_height(font)
        return QFontMetrics(font), lh

    def layout_lines(self, index) -> list:
        """[(what, chip index or None, n lines)] for one row: the shared layout of paint, size and hit test."""
        model, mi = index.model(), index.model().rows[index.row()]
        cuts = model.cuts.get(mi, ())
        chips = model.chips(mi)
        expanded = model.is_expanded(mi)
        findings = model.findings.get(mi, ())
        out = [("cut", k, 1) for k in range(len(cuts))]
        out.append(("header", None, 1))
        for ci, c in enumerate(chips[:MAX_BLOCKS_SHOWN]):
            n = 1
            if expanded:
                n += min(len(c.lines), EXPANDED_LINES)
            elif c.type == "text" and len(c.lines) > 1:
                # an inserted summary or placeholder is what a layer wrote: show more of it
                n += min(len(c.lines) - 1, INSERTED_LINES if model.status.get(mi) == "inserted" else 1)
            out.append(("chip", ci, n))
        if len(chips) > MAX_BLOCKS_SHOWN:
            out.append(("more", None, 1))
        if findings:
            out.append(("findings", None, min(len(findings), 3)))
        return out

    def sizeHint(self, option, index) -> QSize:
        # called for every row at each relayout (10k rows per step): keep it to dict look-ups
        font = option.font
        lh = self._lh if font == self._font else self._line_height(font)
        model = index.model()
        mi = model.rows[index.row()]
        m = model.messages[mi]
        key = (id(m), model.expand_all != (mi in model.expanded), len(model.cuts.get(mi, ())),
               len(model.findings.get(mi, ())), model.status.get(mi) == "inserted")
        hit = self._heights.get(key)
        if hit is not None and hit[0] is m:
            h = hit[1]
        else:
            # the entry holds the message, so its id cannot be reused by another message while cached
            h = self._row_lines(index, model, mi, key) * lh + 2 * self.PAD + 2
            if len(self._heights) > 400_000:
                self._heights.clear()
            self._heights[key] = (m, h)
        w = option.rect.width()
        return QSize(w if w > 200 else 200, h)

    def _row_lines(self, index, model, mi: int, key: tuple) -> int:
        """The number of text lines of a row: from the chips when they exist or the row is expanded,
        else from ``collapsed_shape`` (the same count, without building chips for rows never shown)."""
        m = model.messages[mi]
        if key[1] or present.chips.peek(m) is not None or (shape := collapsed_shape(m)) is None:
            return sum(n for _, _, n in self.layout_lines(index))
        more = INSERTED_LINES if key[4] else 1
        n = key[2] + 1 + (1 if len(shape) > MAX_BLOCKS_SHOWN else 0) + min(key[3], 3)
        for nl in shape[:MAX_BLOCKS_SHOWN]:
            n += 1 + (min(nl - 1, more) if nl > 1 else 0)
        return n

    def block_at(self, option, index, y: int) -> int | None:
        """The block index under the row-relative y coordinate, or None."""
        fm, lh = self._metrics(option)
        top = self.PAD
        chips = index.model().chips(index.model().rows[index.row()])
        for what, ci, n in self.layout_lines(index):
            if top <= y < top + n * lh and what == "chip":
                return chips[ci].block
            top += n * lh
        return None

    def paint(self, p: QPainter, option, index) -> None:
        fm, lh = self._metrics(option)
        pal = option.palette
        dark = is_dark(pal)
        r = option.rect
        p.save()
        p.setClipRect(r)
        model = index.model()
        mi = model.rows[index.row()]
        status = model.status.get(mi, "")
        selected = bool(option.state & QStyle.State_Selected)
        highlight = mi in model.highlight
        base = pal.base().color()
        p.fillRect(r, base)
        if status and STATUS_COLORS.get(status):
            p.fillRect(r, color(STATUS_COLORS[status], 46 if dark else 34))
        if status == "removed":
            p.fillRect(r, QBrush(color(STATUS_COLORS["removed"], 60), Qt.BDiagPattern))
        if mi in model.matches:
            p.fillRect(r, color("#facc15", 50))
        if selected:
            p.fillRect(r, color(pal.highlight().color().name(), 70))
        m = model.messages[mi]
        role = m.get("role", "?") if isinstance(m, dict) else "?"
        chips = model.chips(mi)
        cuts = model.cuts.get(mi, ())
        findings = model.findings.get(mi, ())
        expanded = model.is_expanded(mi)
        sb = model.selected_block
        sel_block = sb[1] if sb and sb[0] == mi else None
        text_col = pal.text().color()
        dim = QColor(text_col)
        dim.setAlpha(150)
        top = r.top() + self.PAD
        left = r.left() + 10
        right = r.right() - 6
        bold = QFont(option.font)
        bold.setBold(True)
        small = QFont(option.font)
        small.setPointSizeF(max(6.0, option.font.pointSizeF() * 0.85))
        sfm = QFontMetrics(small)
        for what, ci, n in self.layout_lines(index):
            h = n * lh
            if what == "cut" and cuts[ci][1] == "boundary":
                paint_boundary(p, QRect(r.left(), top, r.width(), h), ct_parts(cuts[ci][0]), bold, dark)
            elif what == "cut":
                label, style = cuts[ci]
                label = ct(label)
                col = QColor("#dc2626") if style == "cut" else QColor("#64748b")
                pen = QPen(col, 2 if style == "cut" else 1, Qt.SolidLine if style == "cut" else Qt.DashLine)
                p.setPen(pen)
                y = top + lh // 2
                p.setFont(bold if style == "cut" else small)
                cfm = QFontMetrics(p.font())
                room = max(20, r.width() - 28)
                if cfm.horizontalAdvance(label) > room:      # a narrow pane: elided, never cut mid-letter
                    label = cfm.elidedText(label, Qt.ElideRight, room)
                tw = cfm.horizontalAdvance(label) + 12
                p.drawLine(r.left(), y, r.left() + 12, y)
                p.drawLine(r.left() + 12 + tw, y, r.right(), y)
                p.drawText(QRect(r.left() + 16, top, tw, lh), Qt.AlignVCenter | Qt.AlignLeft, label)
            elif what == "header":
                p.fillRect(QRect(r.left(), top, 5, r.bottom() - top), color(ROLE_COLORS.get(role, "#94a3b8")))
                p.setFont(bold)
                p.setPen(QColor(ROLE_COLORS.get(role, "#94a3b8")).darker(140 if not dark else 60)
                         if not dark else QColor(ROLE_COLORS.get(role, "#94a3b8")).lighter(130))
                head = f"#{mi}  {role}"
                p.drawText(QRect(left, top, 400, lh), Qt.AlignVCenter | Qt.AlignLeft, head)
                x = left + QFontMetrics(bold).horizontalAdvance(head) + 12
                # the header's tags; a LOST result first (it is what the row is about); in a narrow pane a tag
                # is shortened to the room left, never drawn past the row's edge
                pills = []
                if status:
                    tag = {"changed": tr("CHANGED"), "inserted": tr("INSERTED"), "removed": tr("REMOVED"),
                           "duplicated": tr("DUPLICATED")}.get(status, status.upper())
                    pills.append((tag, QColor(STATUS_COLORS.get(status) or "#64748b")))
                if findings:
                    pills.append(("\u26a0 " + tr("{n} finding(s)").format(n=len(findings)), QColor("#dc2626")))
                badge = model.badges.get(mi)
                if badge:
                    lost = badge.startswith("LOST")
                    pills.insert(0 if lost else len(pills), (ct(badge), QColor("#dc2626" if lost else "#c2410c"
                                                                        if badge.startswith(("compact summary", "compaction summary"))
                                                                        else "#7c3aed")))
                for text, col in pills:
                    x = pill(p, x, top, lh, text, col, small, sfm, limit=right - x)
                size_text = tr("{n} chars").format(n=fmt(present.chars.get(m)))
                p.setFont(option.font)
                # the file's time and the call's usage when it recorded them, dropped when the row is narrow
                info = [size_text]
                meta = model.meta_of(mi)
                if meta is not None:
                    if meta.usage is not None:
                        info.insert(0, usage_short(meta.usage))
                    if meta.timestamp is not None:
                        info.insert(0, when(meta.timestamp)[11:])
                if len(info) > 1:
                    p.setFont(small)
                while info:
                    text = " \u00b7 ".join(info)
                    if x + QFontMetrics(p.font()).horizontalAdvance(text) + 4 < right:
                        p.setPen(dim)
                        p.drawText(QRect(left, top, right - left, lh), Qt.AlignVCenter | Qt.AlignRight, text)
                        break
                    info.pop(1 if len(info) > 2 else 0)
            elif what == "chip":
                c = chips[ci]
                x = left + 6
                bc = QColor(BLOCK_COLORS.get(c.type, "#94a3b8"))
                if sel_block is not None and sel_block == c.block:
                    p.fillRect(QRect(left, top, right - left, h), color(pal.highlight().color().name(), 60))
                if c.is_tool and c.tool_id:
                    pc = pair_color(c.tool_id, dark)
                    p.fillRect(QRect(left, top + 2, 4, lh - 4), pc)
                    x += 4
                x = pill(p, x, top, lh, c.label, bc, small, sfm)
                if c.is_tool and c.tool_id:
                    p.setFont(small)
                    p.setPen(pair_color(c.tool_id, dark))
                    tid = c.tool_id if len(c.tool_id) <= 18 else c.tool_id[:8] + "\u2026" + c.tool_id[-6:]
                    p.drawText(QRect(x, top, 200, lh), Qt.AlignVCenter | Qt.AlignLeft, tid)
                    x += sfm.horizontalAdvance(tid) + 8
                if c.error:
                    x = pill(p, x, top, lh, "is_error", QColor("#dc2626"), small, sfm)
                p.setFont(option.font)
                p.setPen(text_col)
                p.drawText(QRect(x, top, right - x, lh), Qt.AlignVCenter | Qt.AlignLeft,
                           fm.elidedText(c.summary, Qt.ElideRight, max(10, right - x)))
                if n > 1:
                    p.setPen(dim)
                    lines = c.lines[1:n] if not expanded else c.lines[:EXPANDED_LINES]
                    yy = top + lh
                    for ln in lines:
                        p.drawText(QRect(left + 22, yy, right - left - 22, lh), Qt.AlignVCenter | Qt.AlignLeft,
                                   fm.elidedText(ln, Qt.ElideRight, max(10, right - left - 22)))
                        yy += lh
            elif what == "more":
                p.setPen(dim)
                p.setFont(small)
                p.drawText(QRect(left + 6, top, right - left, lh), Qt.AlignVCenter | Qt.AlignLeft,
                           tr("+ {n} more block(s) (see the inspector)").format(n=len(chips) - MAX_BLOCKS_SHOWN))
            elif what == "findings":
                p.setFont(small)
                p.setPen(QColor("#dc2626"))
                yy = top
                for f in findings[:3]:
                    where = tr("block {n}: ").format(n=f.block) if f.block is not None else ""
                    p.drawText(QRect(left + 6, yy, right - left - 6, lh), Qt.AlignVCenter | Qt.AlignLeft,
                               sfm.elidedText(f"\u26a0 {where}{ct(f.text)} [{f.code}]", Qt.ElideRight,
                                              right - left - 6))
                    yy += lh
            top += h
        if highlight:
            p.setPen(QPen(QColor("#e11d48"), 3))
            p.setBrush(Qt.NoBrush)
            p.drawRect(r.adjusted(2, 2, -2, -2))
        p.setPen(QPen(color(text_col.name(), 40), 1))
        p.drawLine(r.left(), r.bottom(), r.right(), r.bottom())
        p.restore()

BOUNDARY_COLORS = ("#ea580c", "#fff7ed", "#9a3412")      # edge, band, text (a real compaction's row)


def paint_boundary(p: QPainter, rect: QRect, text: str, font: QFont, dark: bool) -> None:
    """A real compaction's marker row: an orange band across the list with what was recorded (who, trigger,
    preTokens, when), drawn before the first message after the compaction."""
    edge, band, ink = BOUNDARY_COLORS
    p.fillRect(rect.adjusted(0, 1, 0, -1), color(edge, 90) if dark else QColor(band))
    p.fillRect(QRect(rect.left(), rect.top() + 1, 5, rect.height() - 2), QColor(edge))
    p.setPen(QPen(QColor(edge), 2))
    p.drawLine(rect.left(), rect.top() + 1, rect.right(), rect.top() + 1)
    p.setFont(font)
    p.setPen(QColor("#fed7aa") if dark else QColor(ink))
    fm = QFontMetrics(font)
    inner = rect.adjusted(12, 0, -6, 0)
    p.drawText(inner, Qt.AlignVCenter | Qt.AlignLeft, fm.elidedText("✂ " + text, Qt.ElideRight, inner.width()))


def pill(p: QPainter, x: int, top: int, lh: int, text: str, col: QColor, font: QFont, fm: QFontMetrics,
         limit: int | None = None) -> int:
    """Paint a small rounded label (a block chip, a status tag) at x; return the x after it. ``limit``: the
    width left; a longer label is elided to it, and none is drawn when not even a few letters fit."""
    if limit is not None and fm.horizontalAdvance(text) + 10 > limit:
        if limit < fm.horizontalAdvance("W\u2026") + 10:
            return x
        text = fm.elidedText(text, Qt.ElideRight, limit - 10)
    w = fm.horizontalAdvance(text) + 10
    rect = QRect(x, top + 2, w, lh - 4)
    p.setPen(Qt.NoPen)
    p.setBrush(col)
    p.drawRoundedRect(rect, 4, 4)
    p.setPen(QColor("white"))
    p.setFont(font)
    p.drawText(rect, Qt.AlignCenter, text)
    p.setBrush(Qt.NoBrush)
    return x + w + 6


class MessageView(QAbstractScrollArea):
    """The message list, laid out lazily: only the rows on screen are measured and painted, so a list of
    100k messages shows its first rows at once (a QListView with rows of different heights lays out every
    row before it paints any). The vertical scroll bar counts rows (its value is the top row); the wheel
    scrolls by pixels within them. Keeps the item-view API the window uses (``setModel``, ``currentIndex``,
    ``setCurrentIndex``, ``selectionModel``, ``indexAt``, ``visualRect``, ``scrollTo``); emits the message
    and block under a click."""

    sigMessageSelected = Signal(int)
    sigBlockSelected = Signal(int, int)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("messageView")
        self.setFocusPolicy(Qt.StrongFocus)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarAlwaysOff)
        self.viewport().setBackgroundRole(QPalette.Base)
        self.viewport().setAutoFillBackground(True)
        self.delegate = MessageDelegate(self)
        self._model = None
        self._sel: QItemSelectionModel | None = None
        self._top = 0                 # the first row on screen
        self._dy = 0                  # pixels of it scrolled out above the viewport
        self._syncing = False
        self.painted_rows = 0         # rows painted by the last paint (0: nothing shown yet)
        sb = self.verticalScrollBar()
        sb.setSingleStep(1)
        sb.valueChanged.connect(self._bar_moved)

    # ------------------------------------------------------------ model and selection
    def setModel(self, model) -> None:
        self._model = model
        self._sel = QItemSelectionModel(model, self)
        self._sel.currentChanged.connect(self._current)
        model.modelReset.connect(self._reset)
        model.layoutChanged.connect(self._relayout)
        model.rowsInserted.connect(self._relayout)
        model.rowsRemoved.connect(self._relayout)
        model.dataChanged.connect(self.viewport().update)
        model.sigRepaint.connect(self.viewport().update)
        self._reset()

    def model(self):
        return self._model

    def selectionModel(self) -> QItemSelectionModel | None:
        return self._sel

    def currentIndex(self) -> QModelIndex:
        return self._sel.currentIndex() if self._sel is not None else QModelIndex()

    def setCurrentIndex(self, ix: QModelIndex) -> None:
        if self._sel is not None:
            self._sel.setCurrentIndex(ix, QItemSelectionModel.ClearAndSelect)
            self.viewport().update()

    def _current(self, cur, prev) -> None:
        if cur.isValid():
            self.sigMessageSelected.emit(cur.data(IndexRole))

    def _rows(self) -> int:
        return self._model.rowCount() if self._model is not None else 0

    def _reset(self) -> None:
        self._top, self._dy = 0, 0
        self._relayout()

    def _relayout(self, *args) -> None:
        n = self._rows()
        self._top = max(0, min(self._top, n - 1))
        self._sync_bar()
        self.viewport().update()

    def doItemsLayout(self) -> None:
        """Row heights are measured again (after a zoom)."""
        self.delegate._heights.clear()
        self._relayout()

    # ------------------------------------------------------------ geometry (lazy)
    def _option(self, rect: QRect | None = None, row: int | None = None) -> QStyleOptionViewItem:
        opt = QStyleOptionViewItem()
        opt.initFrom(self.viewport())
        opt.font = self.font()
        opt.widget = self
        opt.rect = rect if rect is not None else QRect(0, 0, self.viewport().width(), 0)
        opt.state = QStyle.State_Enabled
        if row is not None and self._sel is not None and self._sel.currentIndex().row() == row:
            opt.state |= QStyle.State_Selected
        return opt

    def _height(self, row: int, opt: QStyleOptionViewItem | None = None) -> int:
        return self.delegate.sizeHint(opt or self._option(), self._model.index(row, 0)).height()

    def _last_top(self) -> tuple[int, int]:
        """(top row, offset) that shows the end of the list at the bottom of the viewport."""
        n, vh = self._rows(), self.viewport().height()
        opt = self._option()
        r, acc = n, 0
        while r > 0:
            h = self._height(r - 1, opt)
            if acc + h > vh:
                return r - 1, acc + h - vh
            acc += h
            r -= 1
        return 0, 0

    def _visible_rows(self) -> int:
        n, vh = self._rows(), self.viewport().height()
        opt = self._option()
        r, y = self._top, -self._dy
        while r < n and y < vh:
            y += self._height(r, opt)
            r += 1
        return max(1, r - self._top)

    def _sync_bar(self) -> None:
        sb = self.verticalScrollBar()
        self._syncing = True
        try:
            last = self._last_top()[0] if self._rows() else 0
            sb.setRange(0, last)
            sb.setPageStep(self._visible_rows() if self._rows() else 1)
            sb.setValue(self._top)
        finally:
            self._syncing = False

    def _bar_moved(self, v: int) -> None:
        if self._syncing:
            return
        self._top, self._dy = v, 0
        last, off = self._last_top()
        if self._top >= last:
            self._top, self._dy = last, off
        self.viewport().update()

    def _scroll_pixels(self, dy: int) -> None:
        """Move the content up by ``dy`` pixels (down when negative), within the list's ends."""
        n = self._rows()
        if not n:
            return
        opt = self._option()
        last, off = self._last_top()
        top, d = self._top, self._dy + dy
        while d < 0 and top > 0:
            top -= 1
            d += self._height(top, opt)
        d = max(0, d)
        while top < last and d >= self._height(top, opt):
            d -= self._height(top, opt)
            top += 1
        if top > last or (top == last and d > off):
            top, d = last, off
        self._top, self._dy = top, d
        self._sync_bar()
        self.viewport().update()

    def indexAt(self, pos) -> QModelIndex:
        n, y = self._rows(), -self._dy
        if pos.y() < 0 or not n:
            return QModelIndex()
        opt = self._option()
        r = self._top
        while r < n:
            h = self._height(r, opt)
            if y <= pos.y() < y + h:
                return self._model.index(r, 0)
            y += h
            r += 1
            if y > self.viewport().height():
                break
        return QModelIndex()

    def visualRect(self, ix: QModelIndex) -> QRect:
        if not ix.isValid() or self._model is None:
            return QRect()
        r, opt = ix.row(), self._option()
        y = -self._dy
        if r >= self._top:
            for k in range(self._top, r):
                y += self._height(k, opt)
        else:
            for k in range(r, self._top):
                y -= self._height(k, opt)
        return QRect(0, y, self.viewport().width(), self._height(r, opt))

    def scrollTo(self, ix: QModelIndex, hint=QAbstractItemView.EnsureVisible) -> None:
        if not ix.isValid():
            return
        r, vh, opt = ix.row(), self.viewport().height(), self._option()
        h = self._height(r, opt)
        if hint == QAbstractItemView.EnsureVisible:
            rect = self.visualRect(ix)
            if rect.top() >= 0 and rect.bottom() <= vh:
                return
            hint = QAbstractItemView.PositionAtTop if rect.top() < 0 else QAbstractItemView.PositionAtBottom
        room = 0 if hint == QAbstractItemView.PositionAtTop else \
            (vh - h) // 2 if hint == QAbstractItemView.PositionAtCenter else vh - h
        top, acc = r, 0
        while top > 0 and acc < room:
            top -= 1
            acc += self._height(top, opt)
        self._top, self._dy = top, max(0, acc - room)
        last, off = self._last_top()
        if self._top > last or (self._top == last and self._dy > off):
            self._top, self._dy = last, off
        self._sync_bar()
        self.viewport().update()

    def scrollToBottom(self) -> None:
        self._top, self._dy = self._last_top()
        self._sync_bar()
        self.viewport().update()

    # ------------------------------------------------------------ events
    def paintEvent(self, e) -> None:
        if self._model is None:
            return
        p = QPainter(self.viewport())
        n, vw, vh = self._rows(), self.viewport().width(), self.viewport().height()
        r, y, painted = self._top, -self._dy, 0
        cur = self._sel.currentIndex().row() if self._sel is not None else -1
        opt = self._option()
        while r < n and y < vh:
            ix = self._model.index(r, 0)
            h = self.delegate.sizeHint(opt, ix).height()
            o = QStyleOptionViewItem(opt)
            o.rect = QRect(0, y, vw, h)
            if r == cur:
                o.state |= QStyle.State_Selected
            self.delegate.paint(p, o, ix)
            y += h
            r += 1
            painted += 1
        p.end()
        self.painted_rows = painted

    def resizeEvent(self, e) -> None:
        super().resizeEvent(e)
        self._sync_bar()

    def wheelEvent(self, e) -> None:
        px = e.pixelDelta().y()
        if not px:
            px = int(e.angleDelta().y() / 120 * 3 * self.delegate._line_height(self.font()))
        self._scroll_pixels(-px)
        e.accept()

    def mousePressEvent(self, e) -> None:
        ix = self.indexAt(e.position().toPoint())
        self.setFocus(Qt.MouseFocusReason)
        if not ix.isValid():
            return
        self.setCurrentIndex(ix)
        rect = self.visualRect(ix)
        b = self.delegate.block_at(self._option(rect), ix, e.position().toPoint().y() - rect.top())
        mi = ix.data(IndexRole)
        self._model.set_selected_block(mi, b)
        if b is not None:
            self.sigBlockSelected.emit(mi, b)

    def mouseDoubleClickEvent(self, e) -> None:
        ix = self.indexAt(e.position().toPoint())
        if ix.isValid():
            self._model.toggle_expanded(ix.data(IndexRole))

    def keyPressEvent(self, e) -> None:
        n = self._rows()
        cur = self.currentIndex()
        row = cur.row() if cur.isValid() else -1
        key = e.key()
        if key == Qt.Key_Space and cur.isValid():
            self._model.toggle_expanded(cur.data(IndexRole))
            return
        moves = {Qt.Key_Up: row - 1, Qt.Key_Down: row + 1, Qt.Key_Home: 0, Qt.Key_End: n - 1,
                 Qt.Key_PageUp: row - self._visible_rows(), Qt.Key_PageDown: row + self._visible_rows()}
        if key in moves and n and not e.modifiers() & (Qt.ControlModifier | Qt.AltModifier):
            target = max(0, min(n - 1, moves[key] if row >= 0 or key in (Qt.Key_Home, Qt.Key_End) else 0))
            ix = self._model.index(target, 0)
            self.setCurrentIndex(ix)
            self.scrollTo(ix)
            return
        e.ignore()                  # left/right and the rest: the window's keys (stepping through layers)

    def select_message(self, mi: int) -> bool:
        ix = self._model.index_of_message(mi) if self._model is not None else QModelIndex()
        if not ix.isValid():
            return False
        self.setCurrentIndex(ix)
        self.scrollTo(ix, QAbstractItemView.PositionAtCenter)
        return True
