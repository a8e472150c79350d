"""The narration panel of a lesson: the lesson's title, "slide k of n" with the slide's title, the narration
text, and previous/next buttons. A view: it emits ``sigPrevious``/``sigNext``/``sigClose`` and shows what it
is given (``show_slide``)."""
from __future__ import annotations

import html

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QSizePolicy, QTextBrowser, QVBoxLayout, QWidget
from compactscope.widgets.i18n import tr


class NarrationPanel(QWidget):
    sigPrevious = Signal()
    sigNext = Signal()
    sigClose = Signal()

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("narrationPanel")
        lay = QVBoxLayout(self)
        lay.setContentsMargins(6, 4, 6, 4)
        self.lesson_title = QLabel(self)
        self.lesson_title.setObjectName("lessonTitle")
        self.lesson_title.setWordWrap(True)
        self.slide_title = QLabel(self)
        self.slide_title.setObjectName("slideTitle")
        self.slide_title.setWordWrap(True)
        self.slide_title.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Preferred)
        self.lesson_title.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Preferred)
        self.text = QTextBrowser(self)
        self.text.setObjectName("narrationText")
        self.text.setOpenLinks(False)
        row = QHBoxLayout()
        self.prev_btn = QPushButton(tr("\u25c0 Previous"), self)
        self.prev_btn.setToolTip(tr("Previous slide (Page Up)"))
        self.prev_btn.clicked.connect(self.sigPrevious)
        self.next_btn = QPushButton(tr("Next \u25b6"), self)
        self.next_btn.setToolTip(tr("Next slide (Page Down)"))
        self.next_btn.clicked.connect(self.sigNext)
        self.counter = QLabel(self)
        self.counter.setAlignment(Qt.AlignCenter)
        for w in (self.prev_btn, self.next_btn):
            w.setFocusPolicy(Qt.NoFocus)
        # one line: previous, the slide's title, "k / n", next; the text below gets the rest of the height
        row.addWidget(self.prev_btn)
        row.addWidget(self.slide_title, 1)
        row.addWidget(self.counter)
        row.addWidget(self.next_btn)
        lay.addWidget(self.lesson_title)
        lay.addLayout(row)
        lay.addWidget(self.text, 1)

    def set_compact(self, on: bool) -> None:
        """Under the lists in presenter mode: the lesson's title goes (the window shows the slide's)."""
        self.lesson_title.setVisible(not on)

    def show_slide(self, lesson_title: str, k: int, n: int, title: str, narration: str) -> None:
        """Slide ``k`` (1-based) of ``n``."""
        self.lesson_title.setText(f"<span style='color:#64748b'>{html.escape(lesson_title)}</span>")
        self.slide_title.setText(f"<b>{k}/{n} \u00b7 {html.escape(title)}</b>")
        paras = "".join(f"<p>{html.escape(p)}</p>" for p in narration.split("\n\n") if p.strip())
        self.text.setHtml(paras)
        self.counter.setText(f"{k} / {n}")
        self.prev_btn.setEnabled(k > 1)
        self.next_btn.setEnabled(k < n)

    def narration(self) -> str:
        return self.text.toPlainText()
