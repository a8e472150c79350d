"""The real compaction summary beside the simulated one, each with what it kept and what it lost.

A view only: ``set_pairs`` takes, per real compaction, a title and two ``Side``s (the file's compaction, the
replay's nearest one), their texts already in the window's language; the user picks the compaction in the box."""
from __future__ import annotations

import html
from dataclasses import dataclass, field

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (QComboBox, QHBoxLayout, QLabel, QListView, QSplitter, QTextBrowser, QVBoxLayout,
                               QWidget)

from compactscope.core.replay.shared import release
from compactscope.widgets.i18n import tr

KEPT_COLOR, LOST_COLOR = "#15803d", "#b91c1c"
PER_KIND = 8            # items listed per kind and mark (the rest counted)
BOX_CHARS = 40          # the width of the compaction box, in characters (a title is about that long)


@dataclass
class Side:
    title: str                                    # "Real summary (the file's), before call 7"
    summary: str = ""                             # the summary text ("" when none was made)
    kept: list = field(default_factory=list)      # (kind label, text)
    lost: list = field(default_factory=list)
    last: tuple | None = None                     # (the user's last request, kept?)
    note: str = ""                                # what to know (no simulated compaction near this one)


@dataclass
class Pair:
    title: str
    real: Side | None
    simulated: Side | None


def side_html(side: Side | None, none_text: str) -> str:
    if side is None:
        return f"<p><i>{html.escape(none_text)}</i></p>"
    out = [f"<h3>{html.escape(side.title)}</h3>"]
    if side.note:
        out.append(f"<p><i>{html.escape(side.note)}</i></p>")
    if side.last is not None:
        text, kept = side.last
        color = KEPT_COLOR if kept else LOST_COLOR
        word = tr("\u2714 kept") if kept else tr("\u2718 LOST")
        label = tr("The user's last request")
        out.append(f"<p><b>{html.escape(label)}:</b> <span style='color:{color}'><b>{html.escape(word)}</b></span>"
                   f" \u2014 {html.escape(_clip(text, 240))}</p>")
    counts = tr("{k} item(s) kept, {n} lost").format(k=len(side.kept), n=len(side.lost))
    out.append(f"<p>{html.escape(counts)}</p>")
    kinds: list = []
    for kind, _ in side.lost + side.kept:
        if kind not in kinds:
            kinds.append(kind)
    for kind in kinds:
        lost = [t for k, t in side.lost if k == kind]
        kept = [t for k, t in side.kept if k == kind]
        out.append(f"<p style='margin-bottom:0'><b>{html.escape(kind)}</b> \u2014 "
                   f"<span style='color:{LOST_COLOR}'>\u2718 {len(lost)}</span> \u00b7 "
                   f"<span style='color:{KEPT_COLOR}'>\u2714 {len(kept)}</span></p><ul style='margin-top:0'>")
        for mark, texts, color in (("\u2718", lost, LOST_COLOR), ("\u2714", kept, KEPT_COLOR)):
            for text in texts[:PER_KIND]:
                out.append(f"<li><span style='color:{color}'><b>{mark}</b></span> "
                           f"<code>{html.escape(_clip(text, 160))}</code></li>")
            if len(texts) > PER_KIND:
                more = tr("\u2026 and {n} more").format(n=len(texts) - PER_KIND)
                out.append(f"<li><span style='color:{color}'>{html.escape(more)}</span></li>")
        out.append("</ul>")
    if side.summary:
        head = tr("The summary")
        out.append(f"<h4>{html.escape(head)}</h4><pre style='white-space:pre-wrap'>"
                   f"{html.escape(side.summary[:20000])}</pre>")
    return "".join(out)


def _clip(text: str, n: int) -> str:
    s = " ".join(text.split())
    return s if len(s) <= n else s[:n - 1] + "\u2026"


class RetentionView(QWidget):
    sigPairChanged = Signal(int)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("retentionView")
        lay = QVBoxLayout(self)
        lay.setContentsMargins(2, 2, 2, 2)
        top = QHBoxLayout()
        self.intro = QLabel(tr("What each compaction kept (\u2714, in the summary or restored after it) and lost "
                               "(\u2718): the real one beside the simulated one."), self)
        self.intro.setWordWrap(True)
        top.addWidget(self.intro, 1)
        self.box = QComboBox(self)
        self.box.setObjectName("retentionBox")
        # tens of thousands of entries at 100k messages (the simulated compactions): the box is as wide as a title
        # is long, not measured over every entry at its first show (~0.3 s at 50k); its list drops down below it,
        # one line per entry of the same height (Fusion's popup looks at every entry to place itself: ~0.3 s)
        self.box.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.box.setMinimumContentsLength(BOX_CHARS)
        self.box.setStyleSheet("QComboBox { combobox-popup: 0; }")
        view = self.box.view()
        if isinstance(view, QListView):
            view.setUniformItemSizes(True)
        view.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)   # (the popup's arrows are gone)
        self.box.currentIndexChanged.connect(self._show)
        top.addWidget(self.box)
        lay.addLayout(top)
        self.split = QSplitter(self)
        self.real = QTextBrowser(self.split)
        self.real.setObjectName("realSummary")
        self.simulated = QTextBrowser(self.split)
        self.simulated.setObjectName("simulatedSummary")
        for view in (self.real, self.simulated):
            view.setProperty("transcript", True)   # the summaries and their items are the file's own text
        self.split.addWidget(self.real)
        self.split.addWidget(self.simulated)
        lay.addWidget(self.split, 1)
        self.pairs: list[Pair] = []
        self.set_pairs([])

    def set_pairs(self, pairs: list[Pair], busy: bool = False) -> None:
        release(getattr(self, "pairs", None))   # (freed in pieces elsewhere: 50k pairs held the window ~0.1 s)
        self.pairs = list(pairs)
        self.box.blockSignals(True)
        self.box.clear()
        # in one go (one entry at a time: ~130 ms for the thousands of compactions of a 100k-message file)
        self.box.addItems([p.title for p in self.pairs])
        self.box.blockSignals(False)
        self.box.setEnabled(bool(self.pairs))
        if not self.pairs:
            text = tr("Computing\u2026") if busy else tr("No compaction, real or simulated: nothing was replaced.")
            self.real.setHtml(f"<p><i>{html.escape(text)}</i></p>")
            self.simulated.setHtml("")
            return
        self._show(0)

    def show_pair(self, i: int) -> None:
        if 0 <= i < len(self.pairs):
            self.box.setCurrentIndex(i)
            self._show(i)

    def _show(self, i: int) -> None:
        if not 0 <= i < len(self.pairs):
            return
        p = self.pairs[i]
        self.real.setHtml(side_html(p.real, tr("The file records no real compaction here.")))
        self.simulated.setHtml(side_html(p.simulated, tr("The replay made no compaction near this one.")))
        self.sigPairChanged.emit(i)
