"""The search term marked wherever a view shows it: in the message list's rows, the before/after table and the
inspector's text (Ctrl+F framed the matching message but never said where in it the term was).

``match_ranges`` finds the term (case-insensitive, as the list's search does); ``draw_marked`` paints one line
of text with a mark behind each match; ``mark_editor`` sets the matches of a text editor as its extra
selections.
"""
from __future__ import annotations

from PySide6.QtCore import QRect, Qt
from PySide6.QtGui import QColor, QFontMetrics, QPainter, QTextCharFormat, QTextCursor
from PySide6.QtWidgets import QPlainTextEdit, QTextEdit

MARK = "#fde047"              # the marker's yellow; the text on it stays the text colour it was
MARK_INK = "#111827"          # the text colour on a mark in the editors (a dark theme's light text on yellow)
MAX_MARKS = 5_000             # an editor of 2M characters and a one-letter term: the first 5,000


def match_ranges(text: str, term: str, limit: int = MAX_MARKS) -> list[tuple[int, int]]:
    """Where ``term`` is in ``text``, case-insensitive: ``[(start, end)]``, non-overlapping, at most ``limit``."""
    if not term or not text:
        return []
    low, q = text.lower(), term.lower()
    if len(low) != len(text):             # a letter whose lower case is longer (rare): search the text as it is
        low, q = text, term
    out: list[tuple[int, int]] = []
    i = low.find(q)
    while i >= 0 and len(out) < limit:
        out.append((i, i + len(q)))
        i = low.find(q, i + len(q))
    return out


def draw_marked(p: QPainter, rect: QRect, text: str, term: str, fm: QFontMetrics,
                flags=Qt.AlignVCenter | Qt.AlignLeft) -> list[tuple[int, int]]:
    """Draw left-aligned ``text`` in ``rect`` with a yellow mark behind each match of ``term``; the matches."""
    ranges = match_ranges(text, term) if term else []
    spots = []
    for s, e in ranges:
        x0 = rect.left() + fm.horizontalAdvance(text[:s])
        if x0 >= rect.right():
            break
        w = min(fm.horizontalAdvance(text[s:e]), rect.right() - x0)
        spots.append((QRect(x0, rect.top(), max(w, 2), rect.height()), text[s:e]))
        p.fillRect(QRect(x0, rect.top() + 1, max(w, 2), rect.height() - 2), QColor(MARK))
    p.drawText(rect, flags, text)
    if spots:                              # the matched letters dark on their mark (a dark theme's text is light)
        pen = p.pen()
        p.setPen(QColor(MARK_INK))
        for r, part in spots:
            p.drawText(r, flags | Qt.TextDontClip, part)
        p.setPen(pen)
    return ranges


def draw_line(p: QPainter, rect: QRect, text: str, term: str, fm: QFontMetrics, marks: list | None) -> None:
    """One left-aligned line of a row: the term's matches marked and kept in ``marks`` (``term`` empty: the
    row does not match, the line is drawn as it is)."""
    if not term:
        p.drawText(rect, Qt.AlignVCenter | Qt.AlignLeft, text)
        return
    for s, e in draw_marked(p, rect, text, term, fm):
        if marks is not None:
            marks.append((text, s, e))


class RowMarks:
    """What a delegate marked in each row it painted last: ``marks[key] = [(line, start, end)]``, forgotten when
    the term changes (tests read it; the paint never needs it)."""

    def __init__(self) -> None:
        self.marks: dict = {}
        self.term = ""

    def row(self, search: str, key, matches: bool) -> tuple[str, list | None]:
        """The term to mark in a row (none when the row does not match) and its list of marks, emptied."""
        if search != self.term:
            self.marks, self.term = {}, search
        if not matches or not search:
            return "", None
        marks = self.marks.setdefault(key, [])
        marks.clear()
        return search, marks


def mark_editor(editor: QPlainTextEdit | QTextEdit, term: str, scroll: bool = True) -> list[tuple[int, int]]:
    """Mark every match of ``term`` in the editor (extra selections, the text itself untouched) and, with
    ``scroll``, bring the first one into sight; returns the matches as document positions."""
    doc = editor.document()
    sels = []
    ranges = match_ranges(doc.toPlainText(), term) if term else []
    fmt = QTextCharFormat()
    fmt.setBackground(QColor(MARK))
    fmt.setForeground(QColor(MARK_INK))
    for s, e in ranges:
        sel = QTextEdit.ExtraSelection()
        cur = QTextCursor(doc)
        cur.setPosition(s)
        cur.setPosition(e, QTextCursor.KeepAnchor)
        sel.cursor = cur
        sel.format = fmt
        sels.append(sel)
    editor.setExtraSelections(sels)
    if scroll and ranges:
        cur = QTextCursor(doc)
        cur.setPosition(ranges[0][0])
        editor.setTextCursor(cur)
        editor.ensureCursorVisible()
    return ranges


def editor_marks(editor: QPlainTextEdit | QTextEdit) -> list[str]:
    """The texts an editor has marked (what a test reads)."""
    return [s.cursor.selectedText() for s in editor.extraSelections()]


__all__ = ["MARK", "RowMarks", "draw_line", "draw_marked", "editor_marks", "mark_editor", "match_ranges"]
