"""A layout that lays its items in a row and wraps onto the next line when the row is full, so a bar of
buttons never forces a minimum width on the window (a 1024-pixel projector, a zoomed font)."""
from __future__ import annotations

from PySide6.QtCore import QPoint, QRect, QSize, Qt
from PySide6.QtWidgets import QLabel, QLayout, QSizePolicy


class FlowLayout(QLayout):
    def __init__(self, parent=None, spacing: int = 3):
        super().__init__(parent)
        self._items: list = []
        self._spacing = spacing
        self.setContentsMargins(0, 0, 0, 0)

    def addItem(self, item) -> None:
        self._items.append(item)

    def count(self) -> int:
        return len(self._items)

    def itemAt(self, i: int):
        return self._items[i] if 0 <= i < len(self._items) else None

    def takeAt(self, i: int):
        return self._items.pop(i) if 0 <= i < len(self._items) else None

    def expandingDirections(self):
        return Qt.Orientations(0)

    def hasHeightForWidth(self) -> bool:
        return True

    def heightForWidth(self, width: int) -> int:
        return self._place(QRect(0, 0, width, 0), apply=False)

    def setGeometry(self, rect: QRect) -> None:
        super().setGeometry(rect)
        self._place(rect, apply=True)

    def sizeHint(self) -> QSize:
        w = sum(it.sizeHint().width() + self._spacing for it in self._visible())
        h = max((it.sizeHint().height() for it in self._visible()), default=0)
        m = self.contentsMargins()
        return QSize(w + m.left() + m.right(), h + m.top() + m.bottom())

    def minimumSize(self) -> QSize:
        size = QSize()
        for it in self._visible():
            size = size.expandedTo(it.minimumSize())
        m = self.contentsMargins()
        return size + QSize(m.left() + m.right(), m.top() + m.bottom())

    def _visible(self) -> list:
        return [it for it in self._items if it.widget() is None or not it.widget().isHidden()]

    def _place(self, rect: QRect, apply: bool) -> int:
        m = self.contentsMargins()
        r = rect.adjusted(m.left(), m.top(), -m.right(), -m.bottom())
        x, y, line_h = r.x(), r.y(), 0
        for it in self._visible():
            hint = it.sizeHint()
            w = min(hint.width(), max(r.width(), 1))
            if x + w > r.right() + 1 and line_h > 0:
                x, y, line_h = r.x(), y + line_h + self._spacing, 0
            if apply:
                it.setGeometry(QRect(QPoint(x, y), QSize(w, hint.height())))
            x += w + self._spacing
            line_h = max(line_h, hint.height())
        return y + line_h - rect.y() + m.bottom()


def flow_widget_policy(w) -> None:
    """A widget holding a FlowLayout: its height follows its width."""
    p = QSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Preferred)
    p.setHeightForWidth(True)
    w.setSizePolicy(p)


class FitLabel(QLabel):
    """A one-line label of parts joined by " \u00b7 " that never widens the window: when the whole text does not
    fit, it shows as many leading parts as fit (each whole, never cut in a word); the tooltip has all of it."""

    SEP = " \u00b7 "

    def __init__(self, text: str = "", parent=None):
        super().__init__(parent)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.setMinimumWidth(10)
        self._full = ""
        self.setText(text)

    def setText(self, text: str) -> None:
        self._full = text or ""
        self.setToolTip(self._full)
        self._fit()

    def full_text(self) -> str:
        return self._full

    def resizeEvent(self, e) -> None:
        super().resizeEvent(e)
        self._fit()

    max_lines = 1              # more: what does not fit goes on the next line (the status bar at projector size)

    def _fit(self) -> None:
        parts = self._full.split(self.SEP)
        fm = self.fontMetrics()
        room = max(self.width() - 6, 10)
        lines, k = [], 0
        while k < len(parts) and len(lines) < self.max_lines:
            line, n = self._fit_line(parts[k:], fm, room)
            k += n
            if k < len(parts) and len(lines) + 1 < self.max_lines and line.endswith(" \u2026"):
                line = line[:-2]                     # the rest follows on the next line: no "…" here
            lines.append(line)
        super().setText("\n".join(lines))

    def _fit_line(self, parts: list, fm, room: int) -> tuple[str, int]:
        """The most leading parts that fit on a line (" \u2026" when some are left), and how many."""
        for k in range(len(parts), 0, -1):
            cand = self.SEP.join(parts[:k]) + (" \u2026" if k < len(parts) else "")
            if fm.horizontalAdvance(cand) <= room:
                return cand, k
        return parts[0], 1

    def text(self) -> str:          # what the label says: the whole text, whatever fits on screen
        return self._full
