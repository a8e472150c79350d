"""The message list: a lazily laid-out scroll area over ``MessageListModel`` (message_model.py), painted by
``MessageDelegate`` (message_delegate.py).

No widget per row. Each row is painted from a small ``Chip`` list (``core.present``) computed
lazily and cached by message identity (messages are shared between the stages of a trace, so
stepping reuses the cache). Row heights come from line counts only (no text layout), cached by
(message identity, expanded, extras).
"""
from __future__ import annotations

from PySide6.QtCore import QItemSelectionModel, QModelIndex, QRect, Qt, Signal
from PySide6.QtGui import QPainter, QPalette
from PySide6.QtWidgets import QAbstractItemView, QAbstractScrollArea, QStyle, QStyleOptionViewItem

from compactscope.widgets.message_delegate import MessageDelegate
from compactscope.widgets.message_model import IndexRole


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
            self._sel.setCurrentIndex(ix, QItemSelectionModel.SelectionFlag.ClearAndSelect)
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
        opt.state = QStyle.StateFlag.State_Enabled
        if row is not None and self._sel is not None and self._sel.currentIndex().row() == row:
            opt.state |= QStyle.StateFlag.State_Selected
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

    def scrollTo(self, ix: QModelIndex, hint=QAbstractItemView.ScrollHint.EnsureVisible) -> None:
        if not ix.isValid():
            return
        r, vh, opt = ix.row(), self.viewport().height(), self._option()
        h = self._height(r, opt)
        if hint == QAbstractItemView.ScrollHint.EnsureVisible:
            rect = self.visualRect(ix)
            if rect.top() >= 0 and rect.bottom() <= vh:
                return
            hint = QAbstractItemView.ScrollHint.PositionAtTop if rect.top() < 0 else QAbstractItemView.ScrollHint.PositionAtBottom
        room = 0 if hint == QAbstractItemView.ScrollHint.PositionAtTop else \
            (vh - h) // 2 if hint == QAbstractItemView.ScrollHint.PositionAtCenter else vh - h
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
                o.state |= QStyle.StateFlag.State_Selected
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
        self.setFocus(Qt.FocusReason.MouseFocusReason)
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
        if key == Qt.Key.Key_Space and cur.isValid():
            self._model.toggle_expanded(cur.data(IndexRole))
            return
        moves = {Qt.Key.Key_Up: row - 1, Qt.Key.Key_Down: row + 1, Qt.Key.Key_Home: 0, Qt.Key.Key_End: n - 1,
                 Qt.Key.Key_PageUp: row - self._visible_rows(), Qt.Key.Key_PageDown: row + self._visible_rows()}
        if key in moves and n and not e.modifiers() & (Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.AltModifier):
            target = max(0, min(n - 1, moves[key] if row >= 0 or key in (Qt.Key.Key_Home, Qt.Key.Key_End) else 0))
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
        self.scrollTo(ix, QAbstractItemView.ScrollHint.PositionAtCenter)
        return True
