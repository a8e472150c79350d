"""The token chart (pyqtgraph).

Left: size and tokens after each stage, with the strategy's threshold as a
draggable horizontal line (``sigThresholdChanged`` on release). Right: for the
current stage a bar per message stacked by block type; clicking a bar emits
``sigMessageClicked``. Curves are updated with setData, never recreated.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor, QFont
from PySide6.QtWidgets import QVBoxLayout, QWidget

from compactscope.core import present
from compactscope.core.present import BLOCK_TYPES

from .common import BLOCK_COLORS, fmt


MAX_BARS = 1500


class TokenChart(QWidget):
    sigThresholdChanged = Signal(float)
    sigMessageClicked = Signal(int)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("tokenChart")
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        self.glw = pg.GraphicsLayoutWidget(self)
        lay.addWidget(self.glw)
        self.unit = "size"
        self.param_name = ""
        # ---- stage plot
        self.stage_plot = self.glw.addPlot(row=0, col=0)
        self.stage_plot.setMenuEnabled(False)
        self.stage_plot.showGrid(x=False, y=True, alpha=0.25)
        self.stage_plot.setTitle("<span style='color:#2563eb'>\u25cf size (chars)</span> &nbsp; "
                                 "<span style='color:#16a34a'>\u25a0 tokens (estimate)</span> &nbsp; after each stage",
                                 size="9pt")
        self.stage_plot.setMouseEnabled(x=False, y=False)
        self.size_curve = self.stage_plot.plot([], [], pen=pg.mkPen("#2563eb", width=3), symbol="o", symbolSize=9,
                                               symbolBrush="#2563eb", name="size after the stage")
        self.tokens_curve = self.stage_plot.plot([], [], pen=pg.mkPen("#16a34a", width=2, style=Qt.DashLine),
                                                 symbol="s", symbolSize=7, symbolBrush="#16a34a",
                                                 name="tokens (est.) after the stage")
        self.threshold = pg.InfiniteLine(angle=0, movable=True, pen=pg.mkPen("#dc2626", width=2),
                                         hoverPen=pg.mkPen("#f97316", width=4))
        self.threshold_label = pg.InfLineLabel(self.threshold, text="", position=0.02, anchors=[(0, 1), (0, 1)],
                                               color="#dc2626")
        self.stage_plot.addItem(self.threshold)
        self.threshold.sigPositionChangeFinished.connect(self._threshold_released)
        self.threshold.sigPositionChanged.connect(self._threshold_moving)
        self.value_labels: list = []
        self.cursor = pg.InfiniteLine(angle=90, movable=False, pen=pg.mkPen("#64748b", width=1, style=Qt.DotLine))
        self.stage_plot.addItem(self.cursor)
        # ---- message bars
        self.bar_plot = self.glw.addPlot(row=0, col=1)
        self.bar_plot.setMenuEnabled(False)
        self.bar_plot.setLabel("bottom", "message")
        self.bar_plot.setMouseEnabled(x=True, y=False)
        self.bar_plot.showGrid(x=False, y=True, alpha=0.2)
        self.glw.ci.layout.setColumnStretchFactor(0, 2)
        self.glw.ci.layout.setColumnStretchFactor(1, 3)
        # stacked bars as filled step curves (one path per block type: fast at 10k+ messages);
        # each curve is the cumulative height up to its type, drawn bottom type on top
        self.bars: dict[str, pg.PlotDataItem] = {}
        for z, t in enumerate(BLOCK_TYPES):
            item = pg.PlotDataItem([0, 1], [0], stepMode="center", fillLevel=0, pen=None,
                                   brush=QColor(BLOCK_COLORS[t]))
            item.setZValue(-z)
            self.bar_plot.addItem(item)
            self.bars[t] = item
        self._bar_title()
        self.sel_line = pg.InfiniteLine(angle=90, movable=False, pen=pg.mkPen("#e11d48", width=2))
        self.bar_plot.addItem(self.sel_line)
        self.sel_line.hide()
        self.glw.scene().sigMouseClicked.connect(self._clicked)
        self.n_messages = 0
        self.stage_labels: list[str] = []
        self.sizes: list[int] = []
        self.tokens: list[int] = []

    def set_theme(self, background: QColor, foreground: QColor) -> None:
        """Follow the window palette (light/dark): background, axes, titles and legends."""
        self.glw.setBackground(background)
        for plot in (self.stage_plot, self.bar_plot):
            for name in ("left", "bottom"):
                ax = plot.getAxis(name)
                ax.setPen(foreground)
                ax.setTextPen(foreground)
        self._bar_title(foreground.name())

    def _bar_title(self, fg: str = "#334155") -> None:
        keys = " ".join(f"<span style='color:{BLOCK_COLORS[t]}'>\u25a0</span> {t}" for t in BLOCK_TYPES)
        self.bar_plot.setTitle(f"<span style='color:{fg}'>{keys}</span>", size="8pt")
        self.bar_plot.setLabel("left", "chars (click a bar)")

    def set_font_size(self, pt: float) -> None:
        """Zoom: tick labels and value labels follow the window font (for a projector)."""
        f = QFont()
        f.setPointSizeF(max(6.0, pt * 0.9))
        for plot in (self.stage_plot, self.bar_plot):
            for name in ("left", "bottom"):
                plot.getAxis(name).setTickFont(f)
        for t in self.value_labels:
            t.setFont(f)
        self._font = f

    # ------------------------------------------------------------ stages
    def set_series(self, labels: list[str], sizes: list[int], tokens: list[int], threshold: float | None,
                   unit: str = "size", param_name: str = "", movable: bool = True) -> None:
        """``param_name`` = the parameter the line edits; ``movable=False`` for a derived threshold."""
        self.stage_labels, self.sizes, self.tokens = list(labels), list(sizes), list(tokens)
        self.unit, self.param_name = unit, param_name
        self.threshold.setMovable(movable)
        self.movable = movable
        x = np.arange(len(labels))
        self.size_curve.setData(x, np.asarray(sizes, dtype=float))
        for t in self.value_labels:
            self.stage_plot.removeItem(t)
        self.value_labels = []
        for i, v in enumerate(sizes):
            t = pg.TextItem(_short(v), color="#2563eb", anchor=(0.5, 1.3))
            if getattr(self, "_font", None) is not None:
                t.setFont(self._font)
            t.setPos(i, float(v))
            self.stage_plot.addItem(t)
            self.value_labels.append(t)
        self.tokens_curve.setData(x, np.asarray(tokens, dtype=float))
        ax = self.stage_plot.getAxis("bottom")
        ax.setTicks([[(i, l) for i, l in enumerate(labels)]])
        self.stage_plot.setLabel("left", "chars / tokens")
        if threshold is None:
            self.threshold.hide()
        else:
            self.threshold.show()
            self.threshold.blockSignals(True)
            self.threshold.setValue(float(threshold))
            self.threshold.blockSignals(False)
            self._threshold_moving()
        top = max([*sizes, *tokens, threshold or 0, 1]) * 1.25
        self.stage_plot.setYRange(0, top, padding=0)
        self.stage_plot.setXRange(-0.6, max(len(labels) - 0.4, 0.6), padding=0)
        self.threshold.setBounds((0, None))

    def _threshold_moving(self, *_):
        unit = "chars" if self.unit == "size" else "tokens"
        self.threshold_label.setText(f"{self.param_name or 'threshold'} = {fmt(self.threshold.value())} {unit}"
                                     + ("  (drag me)" if getattr(self, "movable", True) else ""))

    def _threshold_released(self, *_):
        self.sigThresholdChanged.emit(float(self.threshold.value()))

    def set_stage(self, k: int) -> None:
        self.cursor.setValue(k)

    # ------------------------------------------------------------ bars
    def set_messages(self, messages: list) -> None:
        n = len(messages)
        self.n_messages = n
        present.shown(n)
        per = [present.sizes.get(m) for m in messages]
        base = np.zeros(n)
        self.stacks = {}
        # beyond MAX_BARS messages, draw one bar per group of k messages (the tallest of the group):
        # a bar narrower than a pixel shows nothing more and costs a fill path per bar
        k = max(1, -(-n // MAX_BARS))
        nb = -(-n // k) if n else 0
        edges = np.arange(nb + 1, dtype=float) * k - 0.5
        for t in BLOCK_TYPES:
            h = np.fromiter((d[t] for d in per), dtype=float, count=n)
            base = base + h
            self.stacks[t] = base
            if k > 1:
                padded = np.zeros(nb * k)
                padded[:n] = base
                shown = padded.reshape(nb, k).max(axis=1)
            else:
                shown = base
            self.bars[t].setData(edges, shown)
        self.group = k
        self.bar_plot.setXRange(-0.5, max(n, 10) - 0.5, padding=0.01)
        self.bar_plot.setYRange(0, max(float(base.max()) if n else 1.0, 1.0) * 1.05, padding=0)
        self.bar_heights = base

    def set_selected(self, i: int | None) -> None:
        if i is None or i < 0:
            self.sel_line.hide()
            return
        self.sel_line.setValue(i)
        self.sel_line.show()

    def _clicked(self, ev) -> None:
        vb = self.bar_plot.vb
        pos = ev.scenePos()
        if not vb.sceneBoundingRect().contains(pos):
            return
        x = vb.mapSceneToView(pos).x()
        i = int(round(x))
        if 0 <= i < self.n_messages:
            self.sigMessageClicked.emit(i)


def _short(v) -> str:
    v = float(v)
    if v >= 1e6:
        return f"{v / 1e6:.1f}M"
    if v >= 1e4:
        return f"{v / 1e3:.0f}k"
    if v >= 1e3:
        return f"{v / 1e3:.1f}k"
    return f"{v:.0f}"
