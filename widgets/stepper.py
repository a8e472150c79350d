"""The layer stepper: Original -> layer 1 -> ... with first/prev/play/next/last.

Knows only stage names and their status (changed / no change / failed); the
window feeds it from a Trace. Left/Right/Home/End are window shortcuts that call
``step()``/``first()``/``last()``; Space toggles play.
"""
from __future__ import annotations

import html
import re

from PySide6.QtCore import QTimer, Qt, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QButtonGroup, QLabel, QSizePolicy, QToolButton, QVBoxLayout, QWidget

from compactscope.widgets.flow import FlowLayout, flow_widget_policy
from compactscope.widgets.i18n import ct, tr

STATUS_STYLE = {
    "original": ("#64748b", ""),
    "changed": ("#b45309", "\u25cf "),
    "unchanged": ("#64748b", "\u25cb "),
    "failed": ("#dc2626", "\u2716 "),
}


NUMBERED = re.compile(r"^L(\d+)\b")


def numbering_note(labels: list[str]) -> str:
    """When the layers carry the course's numbers (s08: "L3 budget"), say what the numbers are and that the stepper
    shows the running order (budget, the course's L3, runs first): empty for labels without numbers."""
    nums = [int(m.group(1)) for m in (NUMBERED.match(label) for label in labels) if m]
    if not nums:
        return ""
    note = tr("L1, L2, ... are the course's names for the layers (seed 000); left to right is the order they run in")
    if nums != sorted(nums):
        note += tr(", so the numbers are not in order")
    return note


class LayerStepper(QWidget):
    sigStageChanged = Signal(int)
    sigPlayingChanged = Signal(bool)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("layerStepper")
        self.setFocusPolicy(Qt.StrongFocus)
        self.stages: list[tuple[str, str, str]] = []   # (name, label, status)
        self._note = ""
        self._pt: float | None = None          # the stage buttons' font size (None: the style's)
        self.current = 0
        self._timer = QTimer(self)
        self._timer.setInterval(1200)
        self._timer.timeout.connect(self._tick)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(4, 2, 4, 2)
        outer.setSpacing(2)
        # the buttons wrap onto a second line when the window is narrow (a projector, a large font)
        bar = QWidget(self)
        flow_widget_policy(bar)
        row = FlowLayout(bar)
        outer.addWidget(bar)
        self._bar = bar

        def tb(text, tip, slot):
            b = QToolButton(bar)
            b.setText(text)
            b.setToolTip(tip)
            b.setAutoRaise(True)
            b.clicked.connect(slot)
            row.addWidget(b)
            return b
        self.btn_first = tb("|\u25c0", tr("First stage (Home)"), self.first)
        self.btn_prev = tb("\u25c0", tr("Previous layer (Left)"), lambda: self.step(-1))
        self.btn_play = tb(tr("Play"), tr("Play through the layers (P)"), self.toggle_play)
        self.btn_play.setCheckable(True)
        self.btn_next = tb("\u25b6", tr("Next layer (Right)"), lambda: self.step(1))
        self.btn_last = tb("\u25b6|", tr("Last stage (End)"), self.last)
        self._stage_row = row
        self._fixed = row.count()          # the navigation buttons; stage buttons follow them
        self.group = QButtonGroup(self)
        self.group.setExclusive(True)
        self.group.idClicked.connect(self.set_current)
        self.explain = QLabel(self)
        self.explain.setObjectName("stepExplain")
        self.explain.setWordWrap(True)
        self.explain.setTextInteractionFlags(Qt.TextSelectableByMouse)
        self.explain.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Preferred)
        outer.addWidget(self.explain)
        self._explanations: list[str] = []

    def set_stages(self, stages: list[tuple[str, str, str]], explanations: list[str], keep: bool = True) -> None:
        """stages: (name, label, status) per stage, Original first."""
        for b in self.group.buttons():
            self.group.removeButton(b)
        self.clear_arrows()
        self.stages = list(stages)
        self._explanations = list(explanations)
        self._note = numbering_note([label for _, label, _ in self.stages[1:]])
        for k, (name, label, status) in enumerate(self.stages):
            colr, mark = STATUS_STYLE.get(status, STATUS_STYLE["unchanged"])
            b = QToolButton(self._bar)
            b.setCheckable(True)
            b.setText(f"{mark}{ct(label)}")
            tip = f"{name}: {ct(explanations[k]) if k < len(explanations) else ''}"
            b.setToolTip(tip + (f"\n\n{self._note}." if k and self._note else ""))
            b.setProperty("stageColour", colr)
            b.setStyleSheet(self._button_style(colr))
            b.setFocusPolicy(Qt.FocusPolicy.NoFocus)
            self.group.addButton(b, k)
            self._stage_row.addWidget(b)
            if k < len(self.stages) - 1:
                arrow = QLabel("\u2192", self._bar)
                arrow.setProperty("stageArrow", True)
                self._stage_row.addWidget(arrow)
        cur = min(self.current, len(self.stages) - 1) if keep else 0
        self.current = -1
        self.set_current(max(cur, 0))

    def _button_style(self, colr: str) -> str:
        # a style sheet that sets the weight fixes the font too: the size is said here, or a zoom misses it
        size = f"font-size: {self._pt:.1f}pt; " if self._pt else ""
        return (f"QToolButton {{ color: {colr}; font-weight: bold; {size}padding: 3px 8px; }}"
                f"QToolButton:checked {{ background: {QColor(colr).name()}; color: white; border-radius: 4px; }}")

    def set_font_size(self, pt: float) -> None:
        """The stage buttons' text size (the window's zoom; presenter mode): the other texts follow the font."""
        self._pt = float(pt)
        for b in self.group.buttons():
            b.setStyleSheet(self._button_style(b.property("stageColour") or STATUS_STYLE["unchanged"][0]))

    def clear_arrows(self) -> None:
        while self._stage_row.count() > self._fixed:
            item = self._stage_row.takeAt(self._fixed)
            w = item.widget()
            if w is not None:
                w.hide()
                w.deleteLater()

    def set_current(self, k: int) -> None:
        if not self.stages:
            return
        k = max(0, min(k, len(self.stages) - 1))
        b = self.group.button(k)
        if b is not None:
            b.setChecked(True)
        name, label, status = self.stages[k]
        text = self._explanations[k] if k < len(self._explanations) else ""
        colr = STATUS_STYLE.get(status, STATUS_STYLE["unchanged"])[0]
        self.explain.setText(f"<b style='color:{colr}'>{k}/{len(self.stages) - 1} \u00b7 {html.escape(ct(label))}</b> "
                             f"&nbsp; {html.escape(ct(text), quote=False)}"
                             + (f" <span style='color:#64748b'>\u00b7 {html.escape(self._note)}</span>"
                                if k == 0 and self._note else ""))
        if k != self.current:
            self.current = k
            self.sigStageChanged.emit(k)

    def step(self, d: int) -> None:
        self.set_current(self.current + d)

    def first(self) -> None:
        self.set_current(0)

    def last(self) -> None:
        self.set_current(len(self.stages) - 1)

    def toggle_play(self) -> None:
        self.set_playing(not self._timer.isActive())

    def set_playing(self, on: bool) -> None:
        if on:
            if self.current >= len(self.stages) - 1:
                self.set_current(0)
            self._timer.start()
        else:
            self._timer.stop()
        self.btn_play.setChecked(on)
        self.btn_play.setText(tr("Pause") if on else tr("Play"))
        self.sigPlayingChanged.emit(on)

    @property
    def playing(self) -> bool:
        return self._timer.isActive()

    def _tick(self) -> None:
        if self.current >= len(self.stages) - 1:
            self.set_playing(False)
            return
        self.step(1)
