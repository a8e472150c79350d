"""Painting a message row: role stripe, header with tags, one line per block (chips), cut bands, findings; a
real compaction's boundary band, and the small rounded labels (pills) the diff view paints too.

No text layout: row heights come from line counts only, cached by (message identity, expanded, extras)."""
from __future__ import annotations

from PySide6.QtCore import QRect, QSize, Qt
from PySide6.QtGui import QBrush, QColor, QFont, QFontMetrics, QPainter, QPen
from PySide6.QtWidgets import QStyle, QStyledItemDelegate

from compactscope.core.analysis import present
from compactscope.core.analysis.present import EXPANDED_LINES, collapsed_shape
from compactscope.core.model.describe import usage_short, when

from compactscope.widgets.common import BLOCK_COLORS, ROLE_COLORS, STATUS_COLORS, color, fmt, is_dark, pair_color
from compactscope.widgets.i18n import ct, ct_parts, ct_summary, tr
from compactscope.widgets.message_model import INSERTED_LINES, MAX_BLOCKS_SHOWN
from compactscope.widgets.search_marks import RowMarks, draw_line


class MessageDelegate(QStyledItemDelegate):
    """Paints a message: role stripe, header, one line per block (chips), cut bands, findings."""

    PAD = 4

    def __init__(self, parent=None):
        super().__init__(parent)
        self._heights: dict = {}
        self._font: QFont | None = None
        self._lh = 0
        self.row_marks = RowMarks()        # the search term's matches each row drew last, by message index

    @property
    def marks(self) -> dict:
        return self.row_marks.marks

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
        out: list[tuple[str, int | None, int]] = [("cut", k, 1) for k in range(len(cuts))]
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
        row = _RowPaint(self, p, option, index)
        p.save()
        p.setClipRect(row.r)
        row.background()
        top = row.r.top() + self.PAD
        for what, ci, n in self.layout_lines(index):
            h = n * row.lh
            if what == "cut" and row.cuts[ci][1] == "boundary":
                paint_boundary(p, QRect(row.r.left(), top, row.r.width(), h), ct_parts(row.cuts[ci][0]), row.bold,
                               row.dark)
            elif what == "cut":
                row.cut(ci, top)
            elif what == "header":
                row.header(top)
            elif what == "chip":
                row.chip(ci, n, top, h)
            elif what == "more":
                row.more(top)
            elif what == "findings":
                row.finding_lines(top)
            top += h
        row.frame()
        p.restore()


class _RowPaint:
    """What painting one message row needs, worked out once; a method per kind of line the row shows."""

    def __init__(self, delegate: MessageDelegate, p: QPainter, option, index):
        self.p, self.option = p, option
        self.fm, self.lh = delegate._metrics(option)
        self.pal = option.palette
        self.dark = is_dark(self.pal)
        self.r = option.rect
        model = self.model = index.model()
        mi = self.mi = model.rows[index.row()]
        self.status = model.status.get(mi, "")
        self.selected = bool(option.state & QStyle.StateFlag.State_Selected)
        self.m = model.messages[mi]
        self.role = self.m.get("role", "?") if isinstance(self.m, dict) else "?"
        self.chips = model.chips(mi)
        self.cuts = model.cuts.get(mi, ())
        self.findings = model.findings.get(mi, ())
        self.expanded = model.is_expanded(mi)
        sb = model.selected_block
        self.sel_block = sb[1] if sb and sb[0] == mi else None
        # the search term and where it falls in each line (widgets.search_marks), kept by the delegate
        self.term, self.marks = delegate.row_marks.row(model.search_text, mi, mi in model.matches)
        self.text_col = self.pal.text().color()
        self.dim = QColor(self.text_col)
        self.dim.setAlpha(150)
        self.left = self.r.left() + 10
        self.right = self.r.right() - 6
        self.bold = QFont(option.font)
        self.bold.setBold(True)
        self.small = QFont(option.font)
        self.small.setPointSizeF(max(6.0, option.font.pointSizeF() * 0.85))
        self.sfm = QFontMetrics(self.small)

    def background(self) -> None:
        p, r, status = self.p, self.r, self.status
        p.fillRect(r, self.pal.base().color())
        if status and STATUS_COLORS.get(status):
            p.fillRect(r, color(STATUS_COLORS[status], 46 if self.dark else 34))
        if status == "removed":
            p.fillRect(r, QBrush(color(STATUS_COLORS["removed"], 60), Qt.BrushStyle.BDiagPattern))
        if self.mi in self.model.matches:
            p.fillRect(r, color("#facc15", 50))
        if self.selected:
            p.fillRect(r, color(self.pal.highlight().color().name(), 70))

    def frame(self) -> None:
        p, r = self.p, self.r
        if self.mi in self.model.highlight:
            p.setPen(QPen(QColor("#e11d48"), 3))
            p.setBrush(Qt.BrushStyle.NoBrush)
            p.drawRect(r.adjusted(2, 2, -2, -2))
        p.setPen(QPen(color(self.text_col.name(), 40), 1))
        p.drawLine(r.left(), r.bottom(), r.right(), r.bottom())

    def cut(self, ci: int, top: int) -> None:
        p, r, lh = self.p, self.r, self.lh
        label, style = self.cuts[ci]
        label = ct(label)
        col = QColor("#dc2626") if style == "cut" else QColor("#64748b")
        pen = QPen(col, 2 if style == "cut" else 1, Qt.PenStyle.SolidLine if style == "cut" else Qt.PenStyle.DashLine)
        p.setPen(pen)
        y = top + lh // 2
        p.setFont(self.bold if style == "cut" else self.small)
        cfm = QFontMetrics(p.font())
        room = max(20, r.width() - 28)
        if cfm.horizontalAdvance(label) > room:      # a narrow pane: elided, never cut mid-letter
            label = cfm.elidedText(label, Qt.TextElideMode.ElideRight, room)
        tw = cfm.horizontalAdvance(label) + 12
        p.drawLine(r.left(), y, r.left() + 12, y)
        p.drawLine(r.left() + 12 + tw, y, r.right(), y)
        p.drawText(QRect(r.left() + 16, top, tw, lh), Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft, label)

    def _pills(self) -> list[tuple[str, QColor]]:
        """The header's tags; a LOST result first (it is what the row is about)."""
        status, pills = self.status, []
        if status:
            tag = {"changed": tr("CHANGED"), "inserted": tr("INSERTED"), "removed": tr("REMOVED"),
                   "duplicated": tr("DUPLICATED")}.get(status, status.upper())
            pills.append((tag, QColor(STATUS_COLORS.get(status) or "#64748b")))
        if self.findings:
            pills.append(("\u26a0 " + tr("{n} finding(s)").format(n=len(self.findings)), QColor("#dc2626")))
        badge = self.model.badges.get(self.mi)
        if badge:
            lost = badge.startswith("LOST")
            summary = badge.startswith(("compact summary", "compaction summary"))
            pills.insert(0 if lost else len(pills),
                         (ct(badge), QColor("#dc2626" if lost else "#c2410c" if summary else "#7c3aed")))
        return pills

    def header(self, top: int) -> None:
        p, r, lh, dark, role = self.p, self.r, self.lh, self.dark, self.role
        p.fillRect(QRect(r.left(), top, 5, r.bottom() - top), color(ROLE_COLORS.get(role, "#94a3b8")))
        p.setFont(self.bold)
        p.setPen(QColor(ROLE_COLORS.get(role, "#94a3b8")).darker(140 if not dark else 60)
                 if not dark else QColor(ROLE_COLORS.get(role, "#94a3b8")).lighter(130))
        head = f"#{self.mi}  {role}"
        p.drawText(QRect(self.left, top, 400, lh), Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft, head)
        x = self.left + QFontMetrics(self.bold).horizontalAdvance(head) + 12
        # in a narrow pane a tag is shortened to the room left, never drawn past the row's edge
        for text, col in self._pills():
            x = pill(p, x, top, lh, text, col, self.small, self.sfm, limit=self.right - x)
        self._header_info(x, top)

    def _header_info(self, x: int, top: int) -> None:
        """The size, and the file's time and the call's usage when it recorded them (dropped when narrow)."""
        p = self.p
        size_text = tr("{n} chars").format(n=fmt(present.chars.get(self.m)))
        p.setFont(self.option.font)
        info = [size_text]
        meta = self.model.meta_of(self.mi)
        if meta is not None:
            if meta.usage is not None:
                info.insert(0, usage_short(meta.usage))
            if meta.timestamp is not None:
                info.insert(0, when(meta.timestamp)[11:])
        if len(info) > 1:
            p.setFont(self.small)
        while info:
            text = " \u00b7 ".join(info)
            if x + QFontMetrics(p.font()).horizontalAdvance(text) + 4 < self.right:
                p.setPen(self.dim)
                p.drawText(QRect(self.left, top, self.right - self.left, self.lh), Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignRight,
                           text)
                break
            info.pop(1 if len(info) > 2 else 0)

    def chip(self, ci: int, n: int, top: int, h: int) -> None:
        p, lh, left, right, small, sfm = self.p, self.lh, self.left, self.right, self.small, self.sfm
        c = self.chips[ci]
        x = left + 6
        bc = QColor(BLOCK_COLORS.get(c.type, "#94a3b8"))
        if self.sel_block is not None and self.sel_block == c.block:
            p.fillRect(QRect(left, top, right - left, h), color(self.pal.highlight().color().name(), 60))
        if c.is_tool and c.tool_id:
            pc = pair_color(c.tool_id, self.dark)
            p.fillRect(QRect(left, top + 2, 4, lh - 4), pc)
            x += 4
        x = pill(p, x, top, lh, c.label, bc, small, sfm)
        if c.is_tool and c.tool_id:
            p.setFont(small)
            p.setPen(pair_color(c.tool_id, self.dark))
            tid = c.tool_id if len(c.tool_id) <= 18 else c.tool_id[:8] + "\u2026" + c.tool_id[-6:]
            p.drawText(QRect(x, top, 200, lh), Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft, tid)
            x += sfm.horizontalAdvance(tid) + 8
        if c.error:
            x = pill(p, x, top, lh, "is_error", QColor("#dc2626"), small, sfm)
        p.setFont(self.option.font)
        p.setPen(self.text_col)
        shown = self.fm.elidedText(ct_summary(c.summary), Qt.TextElideMode.ElideRight, max(10, right - x))
        draw_line(p, QRect(x, top, right - x, lh), shown, self.term, self.fm, self.marks)
        if n > 1:
            p.setPen(self.dim)
            lines = c.lines[1:n] if not self.expanded else c.lines[:EXPANDED_LINES]
            yy = top + lh
            for ln in lines:
                shown = self.fm.elidedText(ln, Qt.TextElideMode.ElideRight, max(10, right - left - 22))
                draw_line(p, QRect(left + 22, yy, right - left - 22, lh), shown, self.term, self.fm, self.marks)
                yy += lh

    def more(self, top: int) -> None:
        p = self.p
        p.setPen(self.dim)
        p.setFont(self.small)
        p.drawText(QRect(self.left + 6, top, self.right - self.left, self.lh), Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft,
                   tr("+ {n} more block(s) (see the inspector)").format(n=len(self.chips) - MAX_BLOCKS_SHOWN))

    def finding_lines(self, top: int) -> None:
        p, left, right = self.p, self.left, self.right
        p.setFont(self.small)
        p.setPen(QColor("#dc2626"))
        yy = top
        for f in self.findings[:3]:
            where = tr("block {n}: ").format(n=f.block) if f.block is not None else ""
            p.drawText(QRect(left + 6, yy, right - left - 6, self.lh), Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft,
                       self.sfm.elidedText(f"\u26a0 {where}{ct(f.text)} [{f.code}]", Qt.TextElideMode.ElideRight,
                                           right - left - 6))
            yy += self.lh


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
    p.drawText(inner, Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft, fm.elidedText("✂ " + text, Qt.TextElideMode.ElideRight, inner.width()))


def pill(p: QPainter, x: int, top: int, lh: int, text: str, col: QColor, font: QFont, fm: QFontMetrics,
         limit: int | None = None) -> int:
    """Paint a small rounded label (a block chip, a status tag) at x; return the x after it. ``limit``: the
    width left; a longer label is elided to it, and none is drawn when not even a few letters fit."""
    if limit is not None and fm.horizontalAdvance(text) + 10 > limit:
        if limit < fm.horizontalAdvance("W\u2026") + 10:
            return x
        text = fm.elidedText(text, Qt.TextElideMode.ElideRight, limit - 10)
    w = fm.horizontalAdvance(text) + 10
    rect = QRect(x, top + 2, w, lh - 4)
    p.setPen(Qt.PenStyle.NoPen)
    p.setBrush(col)
    p.drawRoundedRect(rect, 4, 4)
    p.setPen(QColor("white"))
    p.setFont(font)
    p.drawText(rect, Qt.AlignmentFlag.AlignCenter, text)
    p.setBrush(Qt.BrushStyle.NoBrush)
    return x + w + 6
