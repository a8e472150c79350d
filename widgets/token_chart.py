"""The token chart (pyqtgraph).

Left: the context's tokens (or, by the unit box under the charts, its size in characters) after each stage:
one unit on the axis at a time, the strategy's threshold as a draggable horizontal line in its own unit
(``sigThresholdChanged`` on release). Right: for the current stage a bar per message stacked by block type;
clicking a bar emits ``sigMessageClicked``. Every axis reads "155k" / "1.3M" (``widgets.axes``). Curves are
updated with setData, never recreated.
"""
from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF, Qt, Signal
from PySide6.QtGui import QColor, QFont, QFontMetricsF
from PySide6.QtWidgets import (QComboBox, QGraphicsItem, QHBoxLayout, QLabel, QSizePolicy, QVBoxLayout,
                               QWidget)

from compactscope.core.analysis import present
from compactscope.core.analysis.present import BLOCK_TYPES

from compactscope.widgets.axes import IndexAxis, ShortAxis, axis_title, short_number
from compactscope.widgets.common import BLOCK_COLORS, fmt
from compactscope.widgets.i18n import ct, tr

__all__ = ["IndexAxis", "ShortAxis", "StageAxis", "TokenChart"]


class StageAxis(pg.AxisItem):
    """A bottom axis that shows every stage label whole: labels that would overlap are staggered over two
    lines, and a label at either end is moved inside the axis instead of being dropped."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.staggered = False
        self.labels: list = []         # [(value, text)]

    def setTicks(self, ticks):
        self.labels = list(ticks[0]) if ticks else []
        super().setTicks(ticks)

    def generateDrawSpecs(self, p):
        axis_spec, tick_specs, text_specs = super().generateDrawSpecs(p)
        if not self.labels or self.orientation != "bottom":
            return axis_spec, tick_specs, text_specs
        font = self.style.get("tickFont") or p.font()
        fm = QFontMetricsF(font)
        bounds = self.mapRectFromParent(self.geometry())
        r0, r1 = self.range
        if r1 == r0:
            return axis_spec, tick_specs, text_specs
        scale = bounds.width() / (r1 - r0)
        h = fm.height()
        top = bounds.top() + max(0, self.style["tickLength"]) + self.style["tickTextOffset"][1]
        rects = []
        for v, text in self.labels:
            w = fm.horizontalAdvance(text) + 2
            x = bounds.left() + (v - r0) * scale - w / 2
            x = min(max(x, bounds.left()), bounds.right() - w)
            rects.append(QRectF(x, top, w, h))
        overlap = any(a.right() + 4 > b.left() for a, b in zip(rects, rects[1:]))
        if overlap != self.staggered:
            self.staggered = overlap
            self.setHeight(int(h * (2 if overlap else 1) + max(0, self.style["tickLength"])
                               + self.style["tickTextOffset"][1] + 2))
        flags = Qt.AlignHCenter | Qt.AlignTop | Qt.TextDontClip
        specs = []
        for k, (rect, (_, text)) in enumerate(zip(rects, self.labels)):
            if overlap and k % 2:
                rect.translate(0, h)
            specs.append((rect, flags, text))
        return axis_spec, tick_specs, specs


BARS_KEPT = 12          # the rectangles of this many lists are kept (every stage of a run, as present keeps bars)


def _same_bars(a, b) -> bool:
    """Whether two lists' bars draw the same (a layer that changed no message's block sizes)."""
    return a.n == b.n and a.group == b.group and a.top == b.top and \
        all(np.array_equal(a.stacked[t], b.stacked[t]) for t in BLOCK_TYPES)


class StackedBars(pg.GraphicsObject):
    """The message bars, stacked by block type: per type one rectangle a bar (its cumulative height), made once
    per list shown and drawn from the tallest type down. (pyqtgraph's filled step curves cut each fill into
    paths of 50 points, remade at every step: ~35 ms a step for the 1,500 bars of 100k messages; one path of
    3,000 points a type took the raster engine ~40 ms a paint to fill.)"""

    def __init__(self, colors: dict):
        super().__init__()
        self.colors = {t: QColor(c) for t, c in colors.items()}
        self.paths: list = []                # [(rectangles, brush)], drawn in order
        self.rect = QRectF()
        self.key: Any = None                 # the present.SizeBars drawn
        # [(SizeBars, paths, rect)] of the last lists drawn: stepping back to a stage draws its rectangles again
        # without making them (9,000 QRectF for 1,500 bars: ~15 ms of a step)
        self._made: list = []
        self.wanted: list | None = None      # the list shown without its bars (TokenChart.defer_bars)

    def show_bars(self, bars: Any) -> None:
        """Draw ``bars`` (a ``present.SizeBars``; None: none), with the rectangles made for it before when there
        are."""
        if bars is None:
            self.prepareGeometryChange()
            self.paths, self.rect = [], QRectF()
            self.update()
            return
        for k, (key, paths, rect) in enumerate(self._made):
            if key is bars:
                self._made.insert(0, self._made.pop(k))
                self.prepareGeometryChange()
                self.paths, self.rect = paths, rect
                self.update()
                return
        self.set_bars(bars.edges, {t: bars.stacked[t] for t in BLOCK_TYPES}, bars.top)
        self._made.insert(0, (bars, self.paths, self.rect))
        del self._made[BARS_KEPT:]

    def set_bars(self, edges, stacked: dict, top: float) -> None:
        self.prepareGeometryChange()
        self.paths = []
        nb = len(edges) - 1
        if nb > 0:
            x0 = np.asarray(edges[:-1], dtype=float).tolist()
            w = np.diff(np.asarray(edges, dtype=float)).tolist()
            for t in reversed(list(stacked)):
                h = np.asarray(stacked[t], dtype=float).tolist()
                rects = [QRectF(a, 0.0, b, c) for a, b, c in zip(x0, w, h) if c > 0]
                self.paths.append((rects, pg.mkBrush(self.colors.get(t, QColor("#94a3b8")))))
            self.rect = QRectF(float(edges[0]), 0.0, float(edges[-1] - edges[0]), max(float(top), 1.0))
        else:
            self.rect = QRectF()
        self.update()

    def boundingRect(self) -> QRectF:
        return self.rect

    def paint(self, p, *args) -> None:
        p.setRenderHint(p.RenderHint.Antialiasing, False)
        p.setPen(Qt.NoPen)
        for rects, brush in self.paths:
            p.setBrush(brush)
            p.drawRects(rects)


@dataclass
class StageUnit:
    """What the stage plot's axis shows: ``shown`` ("tokens" or "size"), the user's pick (``user``, kept over
    runs), the threshold drawn in its own unit (``threshold``, None: none) and a value label's height over its
    point in data units (``span``: which labels the threshold line would cross)."""
    shown: str = "tokens"
    user: str | None = None
    threshold: float | None = None
    span: float = 0.0


class TokenChart(QWidget):
    sigThresholdChanged = Signal(float)
    sigMessageClicked = Signal(int)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("tokenChart")
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        self.glw = pg.GraphicsLayoutWidget(self)
        lay.addWidget(self.glw, 1)
        # which unit the stage plot shows: tokens and characters differ by 3-4x, and on one axis a 1.3M-char
        # curve flattens a 155k-token threshold onto the floor; the threshold's own unit until the user picks
        self.unit_box = QComboBox(self)
        self.unit_box.setObjectName("chartUnit")
        self.unit_box.addItem(tr("tokens"), "tokens")
        self.unit_box.addItem(tr("size (chars)"), "size")
        self.unit_box.setToolTip(tr("y axis: estimated tokens, or len(str(messages)) characters"))
        self.unit_box.currentIndexChanged.connect(lambda _i: self.show_unit(self.unit_box.currentData(), user=True))
        self.view_unit = StageUnit()
        row = QHBoxLayout()
        row.setContentsMargins(4, 0, 0, 0)
        row.setSpacing(2)
        row.addWidget(self.unit_box, 0, Qt.AlignTop)
        lay.addLayout(row)
        self.bar_legend = QLabel(self)
        self.bar_legend.setObjectName("blockLegend")
        self.bar_legend.setWordWrap(True)
        self.bar_legend.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Preferred)
        self.bar_legend.setContentsMargins(6, 0, 6, 2)
        row.addWidget(self.bar_legend, 1)
        self.unit = "size"
        self.param_name = ""
        # ---- stage plot
        self.stage_plot = self.glw.addPlot(row=0, col=0, axisItems={"bottom": StageAxis("bottom"),
                                                                    "left": ShortAxis("left")})
        self.stage_plot.setMenuEnabled(False)
        self.stage_plot.showGrid(x=False, y=True, alpha=0.25)
        self._pt = 9.0
        self._stage_title()
        self.stage_plot.setMouseEnabled(x=False, y=False)
        self.size_curve = self.stage_plot.plot([], [], pen=pg.mkPen("#2563eb", width=3), symbol="o", symbolSize=9,
                                               symbolBrush="#2563eb", name=tr("size after the stage"))
        # one curve at a time on the axis (the unit box): each drawn as the main one
        self.tokens_curve = self.stage_plot.plot([], [], pen=pg.mkPen("#16a34a", width=3),
                                                 symbol="s", symbolSize=9, symbolBrush="#16a34a",
                                                 name=tr("tokens (est.) after the stage"))
        self.threshold = pg.InfiniteLine(angle=0, movable=True, pen=pg.mkPen("#dc2626", width=2),
                                         hoverPen=pg.mkPen("#f97316", width=4))
        self.stage_plot.addItem(self.threshold)
        self.threshold.sigPositionChangeFinished.connect(self._threshold_released)
        self.threshold.sigPositionChanged.connect(self._threshold_moving)
        self.value_labels: list = []
        self._label_shown: list = []            # per value label: the (text, colour) it shows
        self.cursor = pg.InfiniteLine(angle=90, movable=False, pen=pg.mkPen("#64748b", width=1, style=Qt.DotLine))
        self.stage_plot.addItem(self.cursor)
        # ---- message bars
        self.bar_plot = self.glw.addPlot(row=0, col=1, axisItems={"bottom": IndexAxis("bottom"),
                                                                  "left": ShortAxis("left")})
        self.bar_plot.setMenuEnabled(False)
        axis_title(self.bar_plot, "bottom", tr("message"))
        self.bar_plot.setMouseEnabled(x=True, y=False)
        self.bar_plot.showGrid(x=False, y=True, alpha=0.2)
        # the axes drawn once into a pixmap and blitted while they do not change: a step repaints the
        # plots (the stage cursor, the stage's bars), and replaying each axis' text cost ~7 ms a paint
        for plot in (self.stage_plot, self.bar_plot):
            for name in ("left", "bottom"):
                plot.getAxis(name).setCacheMode(QGraphicsItem.DeviceCoordinateCache)
        self.glw.ci.layout.setColumnStretchFactor(0, 2)
        self.glw.ci.layout.setColumnStretchFactor(1, 3)
        # stacked bars: one filled outline per block type, each the cumulative height up to its type
        self.bars = StackedBars({t: BLOCK_COLORS[t] for t in BLOCK_TYPES})
        self.bar_plot.addItem(self.bars)
        self._bar_title()
        self.sel_line = pg.InfiniteLine(angle=90, movable=False, pen=pg.mkPen("#e11d48", width=2))
        self.bar_plot.addItem(self.sel_line)
        self.sel_line.hide()
        self.glw.scene().sigMouseClicked.connect(self._clicked)
        self.stage_plot.vb.sigResized.connect(lambda *_: self._place_labels())   # the labels' room follows
        self.n_messages = 0
        self.defer_bars = False                  # True: set_messages draws only bars made already (bars_ready)
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
        self._axis_title()

    def _stage_title(self) -> None:
        """The curves' legend above the plot (the threshold is said in the legend line under the charts: a label
        on the line would sit on the curves)."""
        after = tr("after each stage")
        if self.shown_unit == "size":
            name, mark = tr("size (chars)"), "<span style='color:#2563eb'>\u25cf"
        else:
            name, mark = tr("tokens (estimate)"), "<span style='color:#16a34a'>\u25a0"
        title = f"{mark} {name}</span> &nbsp; {after}"
        if title != getattr(self, "_stage_title_html", None) or getattr(self, "_stage_title_pt", None) != self._pt:
            self._stage_title_html, self._stage_title_pt = title, self._pt
            self.stage_plot.setTitle(title, size=f"{self._pt:.1f}pt")

    def _threshold_text(self) -> str:
        unit = tr("chars") if self.unit == "size" else tr("tokens")
        name = ct(self.param_name) if self.param_name else tr("threshold")
        return (f"{name} = {fmt(self.threshold.value())} {unit}"
                + (tr(" (drag the red line)") if getattr(self, "movable", True) else ""))

    def _place_labels(self) -> None:
        """The value labels above the points get the room they need at the top of the plot (never cut by its
        edge); a plot too low for them (a projector at 1024x768, a large zoom) shows none."""
        h = self.stage_plot.vb.height()
        f = getattr(self, "_font", None) or QFont()
        label_h = max([t.boundingRect().height() for t in self.value_labels] or [QFontMetricsF(f).height() + 8])
        need = label_h * 1.3 + 2              # a label's bottom sits 0.3 of its height above its point
        small = 0 < h < max(110.0, 3 * need)
        for t in self.value_labels:
            t.setVisible(not small)
        for plot in (self.stage_plot, self.bar_plot):          # a rotated axis title needs height: gone when low
            plot.getAxis("left").showLabel(not small)
        peak = max([*self.shown_values(), 1])
        limit = self.threshold.value() if self.threshold.isVisible() else 0
        top = max(peak, limit) * 1.25
        if h > 0 and not small:
            top = max(top, peak / (1 - need / h))
        if getattr(self, "_top", None) is None or abs(top - self._top) > 1e-6:
            self._top = top
            self.stage_plot.setYRange(0, top, padding=0)
        if h > 0:
            self.view_unit.span = need * top / h       # a label's height over its point, in data units
            self._dodge_threshold(self.view_unit.span)

    def _dodge_threshold(self, span: float) -> None:
        """A value label that would sit on the threshold line (a point just under it) goes under its point."""
        limit = self.threshold.value() if self.threshold.isVisible() else None
        for t, v in zip(self.value_labels, self.shown_values(), strict=False):
            under = limit is not None and v <= limit <= v + span and v - span >= 0
            anchor = (0.5, -0.3) if under else (0.5, 1.3)
            if tuple(t.anchor) != anchor:
                t.setAnchor(anchor)

    def resizeEvent(self, ev) -> None:
        super().resizeEvent(ev)
        self._place_labels()

    def _bar_title(self, fg: str = "#334155") -> None:
        """The block types' colours: a wrapping line under the charts (never over the bars, never cut), in the
        charts' type size; the bar plot's axis titles."""
        self._fg = fg
        keys = "&nbsp;&nbsp; ".join(f"<span style='white-space:nowrap'><span style='color:{BLOCK_COLORS[t]}'>"
                                    f"\u25a0</span>&nbsp;{t}</span>" for t in BLOCK_TYPES)
        line = ""
        if self.view_unit.threshold is not None:
            line = (f"<span style='white-space:nowrap; color:#dc2626'>\u2501 "
                    f"{html.escape(self._threshold_text())}</span>&nbsp;&nbsp;&nbsp; ")
        html_ = (f"<span style='color:{fg}; font-size:{max(6.0, self._pt - 1):.1f}pt'>{line}"
                 + tr("bars, characters per message:") + f" {keys}</span>")
        if html_ != getattr(self, "_bar_title_html", None):
            self._bar_title_html = html_
            self.bar_legend.setText(html_)
        axis_title(self.bar_plot, "left", tr("chars (click a bar)"), self._pt)
        axis_title(self.bar_plot, "bottom", tr("message"), self._pt)

    def set_font_size(self, pt: float) -> None:
        """Zoom: every text of the chart follows the window font (for a projector): tick labels, axis titles,
        the legends in the plot titles, the value labels and the threshold's label."""
        f = QFont()
        f.setPointSizeF(max(6.0, pt * 0.9))
        self._pt = max(6.0, pt * 0.9)
        for plot in (self.stage_plot, self.bar_plot):
            for name in ("left", "bottom"):
                ax = plot.getAxis(name)
                ax.setTickFont(f)
                ax.label.setFont(f)
                ax.setStyle(tickTextHeight=int(QFontMetricsF(f).height()))
                ax.picture = None
                ax._adjustSize()
        self.stage_plot.getAxis("bottom").staggered = None      # measure again
        self.stage_plot.getAxis("left").setWidth(None)
        for t in self.value_labels:
            t.setFont(f)
        self._font = f
        self._stage_title()
        self._bar_title_html = None
        self._bar_title(getattr(self, "_fg", "#334155"))
        self._axis_title()

    def _axis_title(self) -> None:
        axis_title(self.stage_plot, "left", tr("chars") if self.shown_unit == "size" else tr("tokens"), self._pt)

    # ------------------------------------------------------------ units
    @property
    def shown_unit(self) -> str:
        """The unit on the stage plot's axis: "tokens" or "size"."""
        return self.view_unit.shown

    def shown_values(self) -> list[int]:
        """The series the stage plot shows: tokens, or sizes in characters."""
        return self.sizes if self.shown_unit == "size" else self.tokens

    def show_unit(self, unit: str, user: bool = False) -> None:
        """Show ``unit`` ("tokens" or "size") on the stage plot's axis; ``user``: the user's pick, kept for the
        next runs (else the threshold's unit is shown)."""
        if unit not in ("tokens", "size"):
            raise ValueError(f"unit is 'tokens' or 'size', not {unit!r}")
        if user:
            self.view_unit.user = unit
        self.view_unit.shown = unit
        i = self.unit_box.findData(unit)
        if i != self.unit_box.currentIndex():
            self.unit_box.blockSignals(True)
            self.unit_box.setCurrentIndex(i)
            self.unit_box.blockSignals(False)
        self.size_curve.setVisible(unit == "size")
        self.tokens_curve.setVisible(unit == "tokens")
        values = self.shown_values()
        color = "#2563eb" if unit == "size" else "#16a34a"
        # the labels kept and given their new text (a run's result, a parameter change): a TextItem made and added
        # to the plot costs ~6 ms, the same number of stages every run
        shown = self._label_shown
        while len(self.value_labels) > len(values):
            self.stage_plot.removeItem(self.value_labels.pop())
            shown.pop()
        while len(self.value_labels) < len(values):
            t = pg.TextItem("", color=color, anchor=(0.5, 1.3))
            if getattr(self, "_font", None) is not None:
                t.setFont(self._font)
            self.stage_plot.addItem(t)
            self.value_labels.append(t)
            shown.append(None)
        for i, (t, v) in enumerate(zip(self.value_labels, values)):
            if shown[i] != (short_number(v), color):
                shown[i] = (short_number(v), color)
                t.setText(short_number(v), color=color)
            t.setPos(i, float(v))
        # the threshold is a line in its own unit: on the other unit's axis it would say a wrong number
        self.threshold.setVisible(self.view_unit.threshold is not None and unit == self.unit)
        self._stage_title()
        self._axis_title()
        self._bar_title(getattr(self, "_fg", "#334155"))
        self._top = None
        self._place_labels()

    # ------------------------------------------------------------ stages
    def set_series(self, labels: list[str], sizes: list[int], tokens: list[int], threshold: float | None,
                   unit: str = "size", param_name: str = "", movable: bool = True) -> None:
        """``param_name`` = the parameter the line edits; ``movable=False`` for a derived threshold."""
        same = (list(labels), list(sizes), list(tokens)) == (self.stage_labels, self.sizes, self.tokens)
        self.stage_labels, self.sizes, self.tokens = list(labels), list(sizes), list(tokens)
        self.unit, self.param_name = unit, param_name
        self.threshold.setMovable(movable)
        self.movable = movable
        if not same or not self.stage_labels:         # (a re-run that changed no figure: the curves stay)
            x = np.arange(len(labels))
            self.size_curve.setData(x, np.asarray(sizes, dtype=float))
            self.tokens_curve.setData(x, np.asarray(tokens, dtype=float))
            ax = self.stage_plot.getAxis("bottom")
            ax.setTicks([[(i, ct(label)) for i, label in enumerate(labels)]])
        self.view_unit.threshold = threshold
        if threshold is not None:
            self.threshold.blockSignals(True)
            self.threshold.setValue(float(threshold))
            self.threshold.blockSignals(False)
        self.stage_plot.setXRange(-0.6, max(len(labels) - 0.4, 0.6), padding=0)
        self.threshold.setBounds((0, None))
        own = unit if threshold is not None and unit in ("tokens", "size") else "tokens"   # no line: tokens
        self.show_unit(self.view_unit.user or own)                # value labels, threshold, titles, range

    def _threshold_moving(self, *_):
        self._bar_title(getattr(self, "_fg", "#334155"))      # the legend line says the threshold, live
        if self.view_unit.span:
            self._dodge_threshold(self.view_unit.span)

    def _threshold_released(self, *_):
        self.sigThresholdChanged.emit(float(self.threshold.value()))

    def set_stage(self, k: int) -> None:
        self.cursor.setValue(k)

    # ------------------------------------------------------------ bars
    def set_messages(self, messages: list) -> None:
        n = len(messages)
        self.n_messages = n
        present.shown(n)
        # beyond present.CHART_BARS messages, one bar per group of messages (the tallest of the group): a bar
        # narrower than a pixel shows nothing more. The bars are made (and kept) in core, often in a worker;
        # with ``defer_bars`` a list whose bars are not made yet shows none until ``bars_ready()``
        bars = present.cached_bars(messages) if self.defer_bars else present.size_bars(messages)
        self.bars.wanted = messages if bars is None else None
        prev = self.bars.key
        if bars is None:
            self.bars.show_bars(None)
        elif prev is None or (prev is not bars and not _same_bars(prev, bars)):
            self.bars.show_bars(bars)
        self.bars.key = bars
        self.group = bars.group if bars is not None else max(1, -(-n // present.CHART_BARS))
        self.bar_plot.getAxis("bottom").set_count(n)          # ticks at message indices only
        self.bar_plot.setXRange(-0.5, max(n, 1) - 0.5, padding=0.01)
        if bars is not None:
            self.bar_plot.setYRange(0, max(bars.top, 1.0) * 1.05, padding=0)

    def bars_ready(self) -> None:
        """The bars of the lists shown are made (``defer_bars``): the list waiting for its bars draws them (made
        here if they are still not there)."""
        if self.bars.wanted is not None:
            messages, self.bars.wanted = self.bars.wanted, None
            keep, self.defer_bars = self.defer_bars, False
            try:
                self.set_messages(messages)
            finally:
                self.defer_bars = keep

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

