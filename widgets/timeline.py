"""The replay timeline (pyqtgraph): a conversation's whole life, call by call.

x = model call, y = context tokens (or size in chars). Curves: the raw growth without
compaction, the context before and after the pipeline (the sawtooth), the strategy's
threshold, a marker per layer firing (one colour per layer), the real context tokens and
the real compaction boundaries when the recording has them, and overlays of other runs
for comparison. A vertical cursor marks the selected call; clicking a call emits
``sigCallSelected(int)``; a playback bar steps the cursor (Space plays/pauses, arrows step).

API: ``set_replay(result)``, ``set_replays([results])`` (the first is the main one, the
rest are overlaid), ``set_cursor(call_index)``, ``set_unit("tokens" | "size")``,
``sigCallSelected``. Items are created once and updated with setData; curves use
clip-to-view and peak downsampling so 10k calls stay smooth.

``ComparisonTable`` (comparison_table.py) shows the totals of several runs side by side.
"""
from __future__ import annotations

from operator import attrgetter
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, QSize, Qt, QTimer, Signal
from PySide6.QtGui import QFont, QFontMetricsF
from PySide6.QtWidgets import QCheckBox, QComboBox, QLabel, QPushButton, QSizePolicy, QSpinBox, QVBoxLayout, QWidget

from compactscope.core.analysis import divergence
from compactscope.core.replay.calibration import calibration_words
from compactscope.core.replay.evidence import untrusted_words
from compactscope.core.replay.follow import mode_words, pair_words
from compactscope.core.replay.views import fired_at
from compactscope.core.strategies.base import PALETTE

from compactscope.widgets.axes import IndexAxis, ShortAxis, axis_title, short_number
from compactscope.widgets.common import fmt
from compactscope.widgets.flow import FlowLayout, flow_widget_policy
from compactscope.widgets.i18n import ct, tr

OVERLAY_COLORS = ["#0d9488", "#be123c", "#a16207", "#4d7c0f", "#6d28d9"]
_SYMBOL_MARKS = {"t": "\u25bc", "o": "\u25cf", "d": "\u25c6", "s": "\u25a0", "star": "\u2605", "p": "\u2b1f",
                 "h": "\u2b22", "t1": "\u25b2", "t2": "\u25b6", "t3": "\u25c0"}
SYMBOLS = ["t", "o", "d", "s", "star", "p", "h", "t1", "t2", "t3"]
MARKER_CHUNK = 4096       # a layer's markers added this many at a time (``TimelineWidget._fill``): ~7 ms each


class _CallLabels:
    """The point labels of a layer's markers ("call 12: snip_compact"), made a chunk at a time as the chunks are
    added (``TimelineWidget._fill``): made all at once, 50k of them per layer held the window's thread in
    ``set_replays``."""
    __slots__ = ("calls", "name")

    def __init__(self, calls: list, name: str):
        self.calls, self.name = calls, name

    def __len__(self) -> int:
        return len(self.calls)

    def __getitem__(self, part: slice) -> list:
        name = self.name
        return [f"call {i}: {name}" for i in self.calls[part]]

class _Markers:
    """The timeline's marks over its curves: the real compactions' stars, each layer's markers, the legend and the
    threshold's words."""
    __slots__ = ("real", "layers", "legend", "threshold_text", "fills", "queue")

    def __init__(self) -> None:
        self.real: Any = None
        self.layers: dict = {}
        self.fills: dict = {}                   # id(marker) -> (generation, points, marker) of its last _fill
        self.queue: list = []                   # [marker, generation, x, y, size, data, next point] still to add
        self.legend: Any = None
        self.threshold_text = ""


class _Shows:
    """The timeline's show boxes: the before-pipeline curve, the legend, the raw estimate."""
    __slots__ = ("before", "legend", "raw")

    def __init__(self) -> None:
        self.before: Any = None
        self.legend: Any = None
        self.raw: Any = None


class TimelineWidget(QWidget):
    sigCallSelected = Signal(int)
    sigFreeChanged = Signal(bool)      # the "free-running" box: replay on its own summaries (True) or follow reality

    def __init__(self, parent=None):
        super().__init__(parent)
        self.markers, self.shows = _Markers(), _Shows()
        self.setObjectName("replayTimeline")
        self.setFocusPolicy(Qt.StrongFocus)
        self.result = None
        self.overlays: list = []
        self.unit = "tokens"
        self._cursor = -1
        self._n = 0
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(2)
        # ---- controls
        barw = QWidget(self)
        flow_widget_policy(barw)
        bar = FlowLayout(barw)
        bar.setContentsMargins(4, 2, 4, 0)
        self.play_button = QPushButton(tr("Play"))
        self.play_button.setCheckable(True)
        self.play_button.setToolTip(tr("Play the replay call by call (Space); arrows step"))
        self.play_button.toggled.connect(self._toggle_play)
        self.speed = QSpinBox()
        self.speed.setRange(1, 200)
        self.speed.setValue(5)
        self.speed.setSuffix(tr("/s"))
        self.speed.setToolTip(tr("Playback speed: model calls per second"))
        self.speed.valueChanged.connect(self._speed_changed)
        self.unit_box = QComboBox()
        self.unit_box.addItem(tr("tokens"), "tokens")
        self.unit_box.addItem(tr("size (chars)"), "size")
        self.unit_box.setToolTip(tr("y axis: estimated tokens, or len(str(messages)) characters"))
        self.unit_box.currentIndexChanged.connect(lambda _i: self.set_unit(self.unit_box.currentData()))
        self.shows.raw = QCheckBox(tr("raw"))
        self.shows.raw.setChecked(True)
        self.shows.raw.setToolTip(tr("The whole recorded history up to each call, never compacted"))
        self.shows.before = QCheckBox(tr("before"))
        self.shows.before.setChecked(True)
        self.shows.before.setToolTip(tr("The running context before the pipeline ran at each call"))
        for cb in (self.shows.raw, self.shows.before):
            cb.toggled.connect(self._visibility)
        # which replay the chart shows: following reality (the default) or free-running (replay --free)
        self.free_box = QCheckBox(tr("free-running"))
        self.free_box.setObjectName("timelineFree")
        self.free_box.setToolTip(tr("Off: after each real compaction the replay goes on from the real context (the "
                                    "real summary and what followed), so each real compaction is predicted from the "
                                    "start the agent really had. On: from its own summaries all the way (replay "
                                    "--free)."))
        self.free_box.setEnabled(False)
        self.free_box.toggled.connect(self.sigFreeChanged.emit)
        self.shows.legend = QCheckBox(tr("legend"))
        self.shows.legend.setChecked(True)
        self.shows.legend.toggled.connect(lambda on: self.legend_label.setVisible(on))
        self.info = QLabel("")
        self.info.setTextInteractionFlags(Qt.TextSelectableByMouse)
        self.info.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Preferred)   # long text must not widen the view
        self.info.setMinimumWidth(0)
        self.info.setWordWrap(True)
        self.info.setContentsMargins(4, 0, 4, 0)
        for w in (self.play_button, self.speed, self.unit_box, self.shows.raw, self.shows.before, self.free_box,
                  self.shows.legend):
            bar.addWidget(w)
        lay.addWidget(barw)
        lay.addWidget(self.info)
        # where the replay and the recording part ways (core.divergence, the replay CLI's "!" lines)
        self.divergence = QLabel("")
        self.divergence_rows: list = []
        self.divergence.setObjectName("timelineDivergence")
        self.divergence.setTextInteractionFlags(Qt.TextSelectableByMouse)
        self.divergence.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Preferred)
        self.divergence.setMinimumWidth(0)
        self.divergence.setWordWrap(True)
        self.divergence.setStyleSheet("QLabel { background: #fff7ed; color: #9a3412; border-left: 4px solid #ea580c; "
                                      "padding: 2px 4px; }")
        self.divergence.hide()
        lay.addWidget(self.divergence)
        # each real compaction and the simulated one paired with it: calls apart, the estimate's error just before
        self.pairs_label = QLabel("")
        self.pairs_label.setObjectName("timelinePairs")
        self.pairs_label.setTextInteractionFlags(Qt.TextSelectableByMouse)
        self.pairs_label.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Preferred)
        self.pairs_label.setMinimumWidth(0)
        self.pairs_label.setWordWrap(True)
        self.pairs_label.setContentsMargins(4, 0, 4, 0)
        self.pairs_label.hide()
        lay.addWidget(self.pairs_label)
        # the call under the cursor: a wrapping line above the plot (a plot title would force the plot wider than
        # its pane and be cut, on a projector)
        self.cursor_label = QLabel("")
        self.cursor_label.setObjectName("timelineCursor")
        self.cursor_label.setTextInteractionFlags(Qt.TextSelectableByMouse)
        self.cursor_label.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Preferred)
        self.cursor_label.setMinimumWidth(0)
        self.cursor_label.setWordWrap(True)
        self.cursor_label.setContentsMargins(4, 0, 4, 0)
        lay.addWidget(self.cursor_label)
        # ---- plot
        self.plot = pg.PlotWidget(self, axisItems={"left": ShortAxis("left"), "bottom": IndexAxis("bottom")})
        self.plot.setMinimumHeight(160)
        self.plot.setMinimumWidth(50)
        self.plot.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Expanding)
        lay.addWidget(self.plot, 1)
        pi = self.plot.getPlotItem()
        pi.setMenuEnabled(False)
        pi.showGrid(x=True, y=True, alpha=0.2)
        axis_title(pi, "bottom", tr("model call"))
        self._axis_title()
        # the legend's entries are kept by a pyqtgraph LegendItem that is never drawn over the plot: they are
        # shown by a wrapping label under it (legend_label), so the legend never covers the data
        self.markers.legend = pg.LegendItem()
        pi.legend = self.markers.legend
        self.legend_label = QLabel(self)
        self.legend_label.setObjectName("timelineLegend")
        self.legend_label.setWordWrap(True)
        self.legend_label.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Preferred)
        self.legend_label.setContentsMargins(4, 0, 4, 2)

        def curve(name, pen, ignore_bounds=False, **kw):
            c = pg.PlotDataItem([], [], pen=pen, name=name, **kw)
            pi.addItem(c, ignoreBounds=ignore_bounds)     # (addItem applies the plot's own settings first)
            c.setClipToView(True)
            c.setDownsampling(auto=True, method="peak")
            return c
        # the raw growth can be 100x the compacted context: it does not set the y range
        self.raw_curve = curve(tr("raw growth (no compaction)"), pg.mkPen("#94a3b8", width=1, style=Qt.DashLine),
                               ignore_bounds=True)
        self.before_curve = curve(tr("before the pipeline"), pg.mkPen("#93c5fd", width=1))
        self.after_curve = curve(tr("sent (after the pipeline)"), pg.mkPen("#1d4ed8", width=2))
        self.real_curve = curve(tr("real context (usage)"), pg.mkPen("#f97316", width=2), connect="finite")
        self.threshold_line = pg.InfiniteLine(angle=0, movable=False, pen=pg.mkPen("#dc2626", width=1,
                                                                                   style=Qt.DotLine))
        # the threshold is said in the legend under the plot: a label on the line sat over the curves and the
        # real compactions' labels
        self.markers.threshold_text = ""
        pi.addItem(self.threshold_line)
        # the y axis starts at 0: a context that drops from 155k to 50k must not look as if it dropped to nothing
        pi.addItem(pg.ScatterPlotItem([0.0], [0.0], size=1, pen=None, brush=None))
        self.cursor_line = pg.InfiniteLine(angle=90, movable=False, pen=pg.mkPen("#facc15", width=2))
        pi.addItem(self.cursor_line)
        self.markers.real = pg.ScatterPlotItem(symbol="star", size=16, brush=pg.mkBrush("#f97316"),
                                               pen=pg.mkPen("#7c2d12"), name=tr("real compaction (preTokens)"))
        pi.addItem(self.markers.real)      # a named item: the legend picks it up
        lay.addWidget(self.legend_label)
        self.real_lines: list[pg.InfiniteLine] = []
        pi.getViewBox().sigResized.connect(lambda *_: self._fit_real_labels())
        pi.getViewBox().sigRangeChanged.connect(lambda *_: self._fit_real_labels())
        self.markers.layers = {}
        self.overlay_curves: list[pg.PlotDataItem] = []
        self.plot.scene().sigMouseClicked.connect(self._clicked)
        self.plot.scene().sigMouseMoved.connect(self._hovered)
        self._iters: list = []
        # what came made with the result: its totals() ("totals") and timeline_columns() ("columns")
        self._made: dict = {}
        # ---- playback
        self.timer = QTimer(self)
        self.timer.timeout.connect(self._tick)
        self._speed_changed(self.speed.value())

    # ------------------------------------------------------------ data
    def set_replay(self, result) -> None:
        """Show one replay (``core.replay.ReplayResult``); ``None`` clears the chart."""
        self.set_replays([result] if result is not None else [])

    def set_replays(self, results: list, totals: dict | None = None, iterations: list | None = None,
                    columns: dict | None = None) -> None:
        """The first result is drawn in full; the others' 'sent' curves are overlaid for comparison. ``totals``,
        ``iterations`` and ``columns``: the first result's ``totals()``, ``iterations()`` and
        ``core.replay.views.timeline_columns`` when they were made with it (in the replay's worker)."""
        results = [r for r in results if r is not None]
        self.result = results[0] if results else None
        self._made = {"totals": totals, "columns": columns} if self.result is not None else {}
        self.overlays = results[1:]
        self._n = len(self.result.calls) if self.result else 0
        self.plot.getPlotItem().getAxis("bottom").set_count(self._n or None)     # ticks at calls only
        it = getattr(self.result, "iterations", None)
        self._iters = iterations if iterations is not None and self.result is not None else it() if callable(it) else []
        self._refresh()
        if self._n:
            self.set_cursor(min(max(self._cursor, 0), self._n - 1), emit=False)
        else:
            self._cursor = -1
            self.cursor_line.hide()

    def set_unit(self, unit: str) -> None:
        if unit not in ("tokens", "size"):
            raise ValueError(f"unit is 'tokens' or 'size', not {unit!r}")
        self.unit = unit
        i = self.unit_box.findData(unit)
        if i != self.unit_box.currentIndex():
            self.unit_box.blockSignals(True)
            self.unit_box.setCurrentIndex(i)
            self.unit_box.blockSignals(False)
        self._refresh()

    def _series(self, result, attr_tokens: str, attr_size: str) -> np.ndarray:
        a = attr_tokens if self.unit == "tokens" else attr_size
        cols = self._made.get("columns")
        if result is self.result and cols is not None:
            return np.array(cols[a], dtype=float)
        return np.fromiter(map(attrgetter(a), result.calls), dtype=float, count=len(result.calls))

    def layer_color(self, name: str, k: int) -> str:
        """The strategy's colour for the layer (``ReplayResult.layer_colors``), else the palette's."""
        colors = getattr(self.result, "layer_colors", None) or {}
        return colors.get(name) or PALETTE[k % len(PALETTE)]

    def _refresh(self) -> None:
        r = self.result
        pi = self.plot.getPlotItem()
        self._axis_title()
        if r is None:
            for c in (self.raw_curve, self.before_curve, self.after_curve, self.real_curve):
                c.setData([], [])
            self.markers.real.setData([], [])
            for m in self.markers.layers.values():
                self._fill(m, np.array([]), np.array([]), 5, [])
            for c in self.overlay_curves:
                c.setData([], [])
            self.threshold_line.hide()
            self._set_real_lines([])
            self.info.setText(tr("no replay"))
            self._show_divergence(None)
            return
        self._show_divergence(r)
        x = np.arange(len(r.calls), dtype=float)
        after = self._series(r, "tokens_after", "size_after")
        self.raw_curve.setData(x, self._series(r, "raw_tokens", "raw_size"))
        self.before_curve.setData(x, self._series(r, "tokens_before", "size_before"))
        self.after_curve.setData(x, after)
        # real context tokens (only in tokens)
        cols = self._made.get("columns")
        reals = ((cols["real_tokens"] if cols is not None else list(map(attrgetter("real_tokens"), r.calls)))
                 if self.unit == "tokens" else [])
        if reals.count(None) < len(reals):
            self.real_curve.setData(x, np.array(reals, dtype=float))       # (None: NaN, no point)
        else:
            self.real_curve.setData([], [])
        # real boundaries
        evs = [e for e in r.real_events if e.get("call") is not None]
        self._set_real_lines(evs)
        pts = [(e["call"], e["pre_tokens"]) for e in evs if e.get("pre_tokens")]
        if self.unit == "tokens" and pts:
            self.markers.real.setData([p[0] for p in pts], [p[1] for p in pts],
                                      data=[tr("real {trigger} compaction, preTokens {n}").format(
                                          trigger=e.get("trigger") or "", n=fmt(e["pre_tokens"]))
                                          for e in evs if e.get("pre_tokens")])
        else:
            self.markers.real.setData([], [])
        # threshold
        thr, exact = r.threshold_in(self.unit)       # in the other unit: converted, an approximate line
        approx = "" if exact else "≈ "
        if thr is None:
            self.threshold_line.hide()
            self.markers.threshold_text = ""
        else:
            self.threshold_line.setPos(thr)
            self.threshold_line.show()
            self.markers.threshold_text = (tr("threshold {approx}{n} tokens") if self.unit == "tokens" else
                                   tr("threshold {approx}{n} chars")).format(approx=approx, n=fmt(thr))
        # layer markers: one scatter per layer, created once per layer name
        fired = cols["fired_at"] if cols is not None else fired_at(r.calls)
        names = list(r.layer_names)
        names += sorted(set(fired) - set(names))   # on-demand layers (manual /compact)
        for k, name in enumerate(names):
            m = self.markers.layers.get(name)
            if m is None:
                col = self.layer_color(name, k)
                m = pg.ScatterPlotItem(symbol=SYMBOLS[k % len(SYMBOLS)], size=9, brush=pg.mkBrush(col),
                                       pen=pg.mkPen(col), name=tr("{name} fired").format(name=name))
                pi.addItem(m)
                self.markers.layers[name] = m
            idx = fired.get(name, [])
            # (the size with the points: set before them, it re-made the last points' spots, ~0.2 s at 50k calls)
            self._fill(m, np.array(idx, dtype=float), after[idx] if idx else np.array([]),
                       9 if len(r.calls) <= 1500 else 5, _CallLabels(idx, name))
            m.show()
            self._legend_text(m, tr("{name} fired ({n})").format(name=name, n=f"{len(idx):,}"))
        for name, m in self.markers.layers.items():
            if name not in names:
                self._fill(m, np.array([]), np.array([]), 5, _CallLabels([], name))
                m.hide()
        # overlays (comparison)
        while len(self.overlay_curves) < len(self.overlays):
            k = len(self.overlay_curves)
            c = pg.PlotDataItem([], [], pen=pg.mkPen(OVERLAY_COLORS[k % len(OVERLAY_COLORS)], width=2,
                                                     style=Qt.PenStyle.DashDotLine), name=tr("run {n}").format(n=k + 2))
            pi.addItem(c)
            c.setClipToView(True)
            c.setDownsampling(auto=True, method="peak")
            self.overlay_curves.append(c)
        for k, c in enumerate(self.overlay_curves):
            if k < len(self.overlays):
                o = self.overlays[k]
                c.setData(np.arange(len(o.calls), dtype=float), self._series(o, "tokens_after", "size_after"))
                c.opts["name"] = o.label
                try:
                    self.markers.legend.removeItem(c)
                    self.markers.legend.addItem(c, tr("{label} (sent)").format(label=o.label))
                except Exception:  # legend bookkeeping differs between pyqtgraph versions
                    pass
            else:
                c.setData([], [])
        self._visibility()
        t = self._made.get("totals")
        t = t if t is not None else r.totals()
        self.info.setToolTip(tr("{label}: strategy {strategy}, tokens by {estimator}").format(
            label=r.label, strategy=r.strategy, estimator=ct(r.token_estimator))
            + (tr("; calibrated: +{n} tokens not in the file").format(n=fmt(r.calibration["fixed"]))
               if getattr(r, "calibration", None) else ""))
        self.info.setText(tr("{label}: {calls} calls, {compactions} compactions, {summaries} summaries, peak {peak} "
                             "tokens").format(label=ct(r.label), calls=f"{len(r.calls):,}", compactions=t["compactions"],
                                              summaries=t["summaries"], peak=fmt(t["peak_tokens"]))
                          + (tr("; {n} real compaction(s)").format(n=len(r.real_events)) if r.real_events else "")
                          # the same rule as compactscope replay, said (the figures differ a lot either way)
                          + "; " + ct(calibration_words(r)))
        self._update_cursor_info()

    def _fill(self, m, x: np.ndarray, y: np.ndarray, size: int, data: "_CallLabels | list") -> None:
        """A layer's markers: the first ``MARKER_CHUNK`` points now, the others a chunk per turn of the event loop
        (a scatter of 50k points made at once held the window ~90 ms, and four of them ~0.36 s). The points end
        the same as one ``setData`` of them all makes; new points for the marker drop the chunks still to come."""
        gen = self.markers.fills.get(id(m), (0, 0))[0] + 1
        self.markers.fills[id(m)] = (gen, len(x), m)
        m.setData(x[:MARKER_CHUNK], y[:MARKER_CHUNK], size=size, data=data[:MARKER_CHUNK])
        if len(x) > MARKER_CHUNK:
            self.markers.queue.append([m, gen, x, y, size, data, MARKER_CHUNK])
            if len(self.markers.queue) == 1:
                QTimer.singleShot(0, self, self._fill_more)

    def _fill_more(self) -> None:
        """One chunk of the first marker still filling, then the next turn of the event loop: one chunk a turn for
        all the layers together, in turn (a chain per layer ran every layer's chunk in one turn: 0.1-0.16 s of the
        window's thread at 50k calls, each chunk costlier as its scatter grows)."""
        q = self.markers.queue
        while q and self.markers.fills.get(id(q[0][0]), (0,))[0] != q[0][1]:
            q.pop(0)                           # (other points were set meanwhile)
        if not q:
            return
        m, _gen, x, y, size, data, k = q[0]
        e = k + MARKER_CHUNK
        m.addPoints(x=x[k:e], y=y[k:e], size=size, data=data[k:e])
        if e < len(x):
            q[0][6] = e
        else:
            q.pop(0)
        if q:
            QTimer.singleShot(0, self, self._fill_more)

    def markers_filling(self) -> bool:
        """Whether some layer's markers are still being added (``_fill``)."""
        return any(len(m.data) < n for _gen, n, m in self.markers.fills.values())

    def _axis_title(self) -> None:
        """The y axis says its unit: "context (tokens)" or "context (chars)", in the window's language."""
        unit = tr("tokens") if self.unit == "tokens" else tr("chars")
        axis_title(self.plot.getPlotItem(), "left", tr("context ({unit})").format(unit=unit), getattr(self, "_pt", 9.0))

    def _show_divergence(self, r) -> None:
        """A warning line for each real compaction the replay misses by more than 2 calls or 10% of the tokens,
        with the setting that would explain it (the same words as ``compactscope replay``)."""
        rep = divergence.report(r) if r is not None and r.real_events else None
        rows = [x for x in rep["compactions"] if x["diverges"]] if rep else []
        self.divergence_rows = rows
        self._show_mode(r, rep)
        lines = [divergence.warning(x) for x in rows] + [untrusted_words(u) for u in (rep or {}).get("untrusted", [])]
        if not lines:
            self.divergence.hide()
            self.divergence.clear()
            return
        self.divergence.setText("\n".join("\u26a0 " + ct(line) for line in lines))
        self.divergence.show()

    def _show_mode(self, r, rep) -> None:
        """The free-running box as the shown replay is, and a line per real compaction with its pair."""
        real = bool(r is not None and r.real_events)
        self.free_box.blockSignals(True)
        self.free_box.setChecked(bool(r is not None and getattr(r, "mode", "free") == "free" and real))
        self.free_box.setEnabled(real)
        self.free_box.blockSignals(False)
        if not rep:
            self.pairs_label.hide()
            self.pairs_label.clear()
            return
        lines = [ct(mode_words(r))] + [ct(pair_words(x)) for x in rep["compactions"]]
        self.pairs_label.setText("\n".join(lines))
        self.pairs_label.show()

    def _legend_text(self, item, text: str) -> None:
        for sample, label in getattr(self.markers.legend, "items", []):
            if sample.item is item:
                label.setText(text)
                return

    def _set_real_lines(self, evs: list) -> None:
        pi = self.plot.getPlotItem()
        while len(self.real_lines) < len(evs):
            line = pg.InfiniteLine(angle=90, movable=False, pen=pg.mkPen("#f97316", width=2, style=Qt.PenStyle.DashLine))
            # level, at the top of the plot, right of the line: after a compaction the context is low there (a
            # label along the line sat on the curve and ran out of the plot)
            lab = pg.InfLineLabel(line, text="", position=0.98, anchors=[(0, 0), (0, 0)], color="#fb923c")
            if getattr(self, "_pt", None):
                f = QFont()
                f.setPointSizeF(self._pt)
                lab.setFont(f)
            pi.addItem(line)
            self.real_lines.append(line)
        for k, line in enumerate(self.real_lines):
            if k < len(evs):
                e = evs[k]
                line.setPos(e["call"] - 0.5)
                text = tr("real {trigger} compaction").format(trigger=e.get("trigger") or "") + (
                    f" ({short_number(e['pre_tokens'])})" if e.get("pre_tokens") else "")
                for child in line.childItems():
                    if isinstance(child, pg.InfLineLabel):
                        child.setFormat(text)
                line.show()
            else:
                line.hide()
        self._fit_real_labels()

    def _fit_real_labels(self) -> None:
        """Each real compaction's label in the room up to the next line (or the plot's right edge): in full,
        else its preTokens alone ("156k"), else none; labels never run into each other (1024 px)."""
        vb = self.plot.getPlotItem().getViewBox()
        shown = sorted((ln for ln in self.real_lines if ln.isVisible()), key=lambda ln: ln.value())
        right = vb.sceneBoundingRect().right()
        xs = [vb.mapViewToScene(QPointF(ln.value(), 0)).x() for ln in shown] + [right]
        for k, line in enumerate(shown):
            room = min(xs[k + 1], right) - xs[k] - 6
            for lab in (c for c in line.childItems() if isinstance(c, pg.InfLineLabel)):
                fm = QFontMetricsF(lab.textItem.font())
                full = lab.format
                short = full[full.rfind("(") + 1:-1] if full.endswith(")") else ""
                text = next((t for t in (full, short) if t and fm.horizontalAdvance(t) + 4 <= room), "")
                if lab.toPlainText() != text:
                    lab.setText(text)

    def _visibility(self, *_):
        self.raw_curve.setVisible(self.shows.raw.isChecked())
        self.before_curve.setVisible(self.shows.before.isChecked())
        self._update_legend()

    def resizeEvent(self, ev) -> None:
        super().resizeEvent(ev)
        self._legend_columns()
        self.updateGeometry()             # the wrapped labels' height depends on the width

    def minimumSizeHint(self):
        """Room for every wrapped line at the current width plus the plot's minimum: a splitter or a scroll
        area gives the caption and the legend their lines instead of cutting them."""
        hint = super().minimumSizeHint()
        lay = self.layout()
        w = max(self.width(), 50)
        h = self.plot.minimumHeight()
        for i in range(lay.count()):
            wid = lay.itemAt(i).widget()
            if wid is None or wid is self.plot or wid.isHidden():
                continue
            h += wid.heightForWidth(w) if wid.hasHeightForWidth() else wid.minimumSizeHint().height()
            h += lay.spacing()
        m = lay.contentsMargins()
        return QSize(hint.width(), max(hint.height(), h + m.top() + m.bottom()))

    def _legend_columns(self) -> None:
        self._update_legend()

    def legend_entries(self) -> list[tuple[str, str]]:
        """(mark, text) of every shown curve and marker, as the legend under the plot says them."""
        out = []
        for sample, label in getattr(self.markers.legend, "items", []):
            item = sample.item
            if not item.isVisible():
                continue
            if isinstance(item, pg.ScatterPlotItem):
                x, _ = item.getData()
                if x is None or not len(x):
                    continue
                col = pg.mkBrush(item.opts.get("brush")).color().name()
                sym = _SYMBOL_MARKS.get(item.opts.get("symbol"), "\u25cf")
                mark = f"<span style='color:{col}'>{sym}</span>"
            else:
                x, _ = item.getData()
                if x is None or not len(x):
                    continue
                pen = pg.mkPen(item.opts.get("pen"))
                dash = pen.style() in (Qt.PenStyle.DashLine, Qt.PenStyle.DotLine, Qt.PenStyle.DashDotLine)
                line = "- - -" if dash else "\u2501\u2501"
                mark = f"<span style='color:{pen.color().name()}'>{line}</span>"
            out.append((mark, label.text))
        return out

    def _update_legend(self) -> None:
        entries = self.legend_entries()
        if self.markers.threshold_text and self.threshold_line.isVisible():
            entries.append(("<span style='color:#dc2626'>\u2508\u2508</span>", self.markers.threshold_text))
        self.legend_label.setText("&nbsp;&nbsp; ".join(f"<span style='white-space:nowrap'>{m}&nbsp;{t}</span>"
                                                       for m, t in entries))
        self.legend_label.setVisible(bool(entries) and self.shows.legend.isChecked())

    def set_font_size(self, pt: float) -> None:
        """Zoom: the axes (ticks and titles), the legend, the cursor caption and the line labels grow."""
        self._pt = max(6.0, pt * 0.9)
        f = QFont()
        f.setPointSizeF(self._pt)
        pi = self.plot.getPlotItem()
        for name in ("left", "bottom"):
            ax = pi.getAxis(name)
            ax.setTickFont(f)
            ax.label.setFont(f)
            ax.picture = None
        pi.getAxis("left").setWidth(None)
        axis_title(pi, "bottom", tr("model call"), self._pt)
        self._axis_title()
        for line in self.real_lines:
            for child in line.childItems():
                if isinstance(child, pg.InfLineLabel):
                    child.setFont(f)
        self._legend_columns()
        self._update_cursor_info()

    # ------------------------------------------------------------ cursor
    def cursor(self) -> int:
        return self._cursor

    @property
    def call_count(self) -> int:
        """Model calls in the shown replay."""
        return self._n

    def set_cursor(self, call_index: int, emit: bool = False) -> None:
        """Move the cursor to a call (clamped). ``emit`` also sends sigCallSelected."""
        if not self._n:
            return
        i = max(0, min(int(call_index), self._n - 1))
        changed = i != self._cursor
        self._cursor = i
        self.cursor_line.setPos(i)
        self.cursor_line.show()
        self._update_cursor_info()
        if emit and changed:
            self.sigCallSelected.emit(i)

    def _update_cursor_info(self):
        r = self.result
        if r is None or not (0 <= self._cursor < len(r.calls)):
            self.cursor_label.setText("")
            self.cursor_label.hide()
            self.updateGeometry()
            return
        c = r.calls[self._cursor]
        fired = ", ".join(c.fired) if c.fired else tr("nothing fired")
        real = tr(", real {n}").format(n=fmt(c.real_tokens)) if c.real_tokens is not None else ""
        self.cursor_label.show()
        self.cursor_label.setText(
            tr("call {index} (message {message_index}): {tokens_before} -> {tokens_after} tokens{real}; {fired}{_iter_text}").format(index=c.index, message_index=c.message_index, tokens_before=fmt(c.tokens_before), tokens_after=fmt(c.tokens_after), real=real, fired=fired, _iter_text=self._iter_text(self._cursor)))
        self.updateGeometry()

    def _iter_text(self, i: int) -> str:
        """Seed 002's iteration budget at call i (core.replay.ReplayResult.iterations)."""
        if not 0 <= i < len(self._iters):
            return ""
        it = self._iters[i]
        cap = getattr(self.result, "iteration_cap", "?")
        if cap is None:                    # the strategy has no iteration budget
            return tr("; turn {turn}").format(turn=it["turn"])
        return (tr("; turn {turn}: iterations {used}/{cap}").format(turn=it["turn"], used=it["used"], cap=cap)
                + (tr(" (+{n} refunded)").format(n=it["refunded"]) if it["refunded"] else "")
                + (tr(" over the cap") if it["refused"] else ""))

    def call_tooltip(self, i: int) -> str:
        """What the chart says about call i when the mouse is over it."""
        r = self.result
        if r is None or not 0 <= i < len(r.calls):
            return ""
        c = r.calls[i]
        lines = [tr("model call {index} (before message #{m})").format(index=c.index, m=c.message_index),
                 tr("context {a} -> {b} messages, {ta} -> {tb} tokens").format(
                     a=c.messages_before, b=c.messages_after, ta=fmt(c.tokens_before), tb=fmt(c.tokens_after))
                 + (tr(" (real {n})").format(n=fmt(c.real_tokens)) if c.real_tokens is not None else ""),
                 tr("fired: {what}").format(what=", ".join(c.fired) if c.fired else tr("nothing"))]
        if self._iters and getattr(self.result, "iteration_cap", None) is not None:
            lines.append(tr("iteration budget, user ") + self._iter_text(i).lstrip("; "))
        for o in self.overlays:
            if i < len(o.calls):
                oc = o.calls[i]
                lines.append(tr("{label}: {n} tokens sent").format(label=o.label, n=fmt(oc.tokens_after))
                             + (f"; {', '.join(oc.fired)}" if oc.fired else ""))
        lines += [f"  {ct(str(e))}" for e in c.events[:4]]
        return "\n".join(lines)

    def _hovered(self, scene_pos) -> None:
        i = self.call_at_scene_pos(scene_pos)
        self.plot.setToolTip(self.call_tooltip(i) if i is not None else "")

    def call_at_scene_pos(self, scene_pos) -> int | None:
        vb = self.plot.getPlotItem().vb
        if not vb.sceneBoundingRect().contains(scene_pos):
            return None
        p = vb.mapSceneToView(scene_pos)
        if not self._n:
            return None
        return max(0, min(int(round(p.x())), self._n - 1))

    def _clicked(self, ev) -> None:
        if ev.button() != Qt.MouseButton.LeftButton:
            return
        i = self.call_at_scene_pos(ev.scenePos())
        if i is not None:
            self.set_cursor(i, emit=False)
            self.sigCallSelected.emit(i)

    def scene_pos_of_call(self, i: int, y: float | None = None) -> QPointF:
        """Where call ``i`` is drawn (for tests and tooltips)."""
        vb = self.plot.getPlotItem().vb
        if y is None:
            (_, _), (y0, y1) = vb.viewRange()
            y = (y0 + y1) / 2
        return vb.mapViewToScene(QPointF(float(i), float(y)))

    # ------------------------------------------------------------ playback
    def _speed_changed(self, v: int) -> None:
        self.timer.setInterval(max(5, int(1000 / max(1, v))))

    def _toggle_play(self, on: bool) -> None:
        self.play_button.setText(tr("Pause") if on else tr("Play"))
        if on and self._n:
            if self._cursor >= self._n - 1:
                self.set_cursor(0, emit=True)
            self.timer.start()
        else:
            self.timer.stop()
            if on:
                self.play_button.setChecked(False)

    def play(self, on: bool = True) -> None:
        self.play_button.setChecked(on)

    def playing(self) -> bool:
        return self.timer.isActive()

    def step(self, delta: int) -> None:
        self.set_cursor((self._cursor if self._cursor >= 0 else 0) + delta, emit=True)

    def _tick(self) -> None:
        if self._cursor >= self._n - 1:
            self.play(False)
            return
        self.step(1)

    def keyPressEvent(self, ev) -> None:
        k = ev.key()
        if k == Qt.Key.Key_Space:
            self.play(not self.playing())
        elif k in (Qt.Key.Key_Right, Qt.Key.Key_Down):
            self.step(10 if ev.modifiers() & Qt.KeyboardModifier.ShiftModifier else 1)
        elif k in (Qt.Key.Key_Left, Qt.Key.Key_Up):
            self.step(-10 if ev.modifiers() & Qt.KeyboardModifier.ShiftModifier else -1)
        elif k == Qt.Key.Key_Home:
            self.set_cursor(0, emit=True)
        elif k == Qt.Key.Key_End:
            self.set_cursor(self._n - 1, emit=True)
        else:
            super().keyPressEvent(ev)
            return
        ev.accept()

    # ------------------------------------------------------------ for tests and other views
    def curve_data(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """(x, y) of a curve: "raw", "before", "after", "real", "marker:<layer>", "real_markers", "overlay:<k>"."""
        if name.startswith("marker:"):
            item = self.markers.layers[name.split(":", 1)[1]]
            return item.getData()
        if name.startswith("overlay:"):
            return self.overlay_curves[int(name.split(":", 1)[1])].getOriginalDataset()
        if name == "real_markers":
            return self.markers.real.getData()
        item = {"raw": self.raw_curve, "before": self.before_curve, "after": self.after_curve,
                "real": self.real_curve}[name]
        x, y = item.getOriginalDataset()
        return (np.array([]) if x is None else x), (np.array([]) if y is None else y)
