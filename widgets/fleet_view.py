"""The fleet view (pyqtgraph): a whole archive of sessions at a glance.

Top: the fleet in words and a threshold slider (with a spin box, and "each at its own" for the
thresholds the sessions were replayed with); every move re-evaluates the whole fleet from the stored
series (``core.fleet.model``, vectorised: milliseconds for 10,000 sessions) and redraws. Middle: the
four figures of ``core.fleet.figures`` (where compaction fires, with the what-if threshold as a
draggable red line; prediction distance; compactions per session; tokens sent per strategy).
Bottom: the sessions, sortable and filterable (``core.fleet.table``); double-clicking a row emits
``sigOpenSession(spec)`` with the file, the call (the clicked call column's, else the first real
compaction's) and the strategy and parameters it was replayed with. No pipeline logic here.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QAbstractTableModel, QModelIndex, QSortFilterProxyModel, Qt, QTimer, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (QAbstractItemView, QCheckBox, QComboBox, QHBoxLayout, QHeaderView, QLabel, QLineEdit,
                               QSlider, QSpinBox, QSplitter, QTableView, QVBoxLayout, QWidget)

from compactscope.core.fleet import figures
from compactscope.core.fleet.model import FleetData, fmt_num
from compactscope.core.fleet.table import COLUMNS, FILTERS, KEYS, SessionTable
from compactscope.widgets.axes import IndexAxis, ShortAxis, axis_title
from compactscope.widgets.i18n import ct, tr

SORT_ROLE = Qt.ItemDataRole.UserRole + 1


NumberAxis = ShortAxis        # tick labels as 150k / 1.2M, never a x1e+09 scale (widgets.axes)


class FleetTableModel(QAbstractTableModel):
    def __init__(self, table: SessionTable, parent=None):
        super().__init__(parent)
        self.table = table

    def rowCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self.table)

    def columnCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(COLUMNS)

    def data(self, index, role=Qt.DisplayRole):
        if not index.isValid():
            return None
        i, col = index.row(), COLUMNS[index.column()]
        if role == Qt.DisplayRole:
            return self.table.text(i, col.key)
        if role == SORT_ROLE:
            return self.table.sort_value(i, col.key)
        if role == Qt.TextAlignmentRole:
            return int(Qt.AlignRight | Qt.AlignVCenter) if col.numeric else int(Qt.AlignLeft | Qt.AlignVCenter)
        if role == Qt.ToolTipRole:
            return self.table.tooltip(i) if col.key in ("session", "error") else col.tip
        if role == Qt.ForegroundRole and self.table.data.errors[i]:
            return QColor("#b91c1c")
        if role == Qt.ForegroundRole and not self.table.data.ok[i]:
            return QColor("#64748b")            # a duplicate, or not replayed: left out of the figures
        return None

    def headerData(self, section, orientation, role=Qt.DisplayRole):
        if orientation == Qt.Horizontal and 0 <= section < len(COLUMNS):
            if role == Qt.DisplayRole:
                return COLUMNS[section].title
            if role == Qt.ToolTipRole:
                return COLUMNS[section].tip
        return None

    def threshold_changed(self) -> None:
        first, last = KEYS.index("first_at"), KEYS.index("sent_at")
        if len(self.table):
            self.dataChanged.emit(self.index(0, first), self.index(len(self.table) - 1, last))


class FleetProxy(QSortFilterProxyModel):
    """Sorts by the table's numbers (missing last), filters with ``SessionTable.matches``."""

    def __init__(self, table: SessionTable, parent=None):
        super().__init__(parent)
        self.table = table
        self.text, self.kind = "", "all"

    def set_filter(self, text: str | None = None, kind: str | None = None) -> None:
        """Change the filter (None keeps a part); also called with nothing when the rows' values changed."""
        begin = getattr(self, "beginFilterChange", None)       # Qt 6.9+: invalidateFilter is deprecated
        if begin is not None:
            begin()
        if text is not None:
            self.text = text
        if kind is not None:
            self.kind = kind
        if begin is not None:
            self.endFilterChange()
        else:
            self.invalidateFilter()

    def filterAcceptsRow(self, row, parent) -> bool:
        return self.table.matches(row, self.text, self.kind)

    def lessThan(self, a, b) -> bool:
        key = COLUMNS[a.column()].key
        va, vb = self.table.sort_value(a.row(), key), self.table.sort_value(b.row(), key)
        try:
            return va < vb
        except TypeError:
            return str(va) < str(vb)


class FleetView(QWidget):
    sigOpenSession = Signal(dict)          # {"path", "call", "strategy", "params"}
    sigThresholdChanged = Signal(object)   # a number, or None for "each at its own"

    def __init__(self, data: FleetData, parent=None, threshold: float | None = None):
        super().__init__(parent)
        self.setObjectName("fleetView")
        self.full = data                       # every row of the file (the table)
        self.groups = data.groups() or [data]  # the rows by the strategy they were replayed with (the figures)
        self.data = self.groups[0]             # the group the figures and the slider show
        self.table = SessionTable(data)
        self.reeval = None
        lay = QVBoxLayout(self)
        lay.setContentsMargins(6, 6, 6, 6)
        lay.setSpacing(4)
        self.summary = self._text("fleetSummary")
        lay.addWidget(self.summary)
        # ---- which strategy's sessions the figures show (Claude Code's 155k and Inspect's 4k never share an axis)
        grow = QHBoxLayout()
        grow.addWidget(QLabel(tr("Sessions replayed with"), self))
        self.group_box = QComboBox(self)
        self.group_box.setObjectName("fleetGroup")
        for g in self.groups:
            formats = sorted({f for f, k in zip(g.strings("format"), g.ok) if k and f})
            self.group_box.addItem(tr("{strategy}: {n:,} session(s) ({formats})").format(
                strategy=g.strategy, n=int(g.ok.sum()), formats=", ".join(formats)))
        self.group_box.setToolTip(tr("The figures, the slider and the at-T columns are about one strategy's sessions at a time: each strategy compacts at its own scale"))
        grow.addWidget(self.group_box, 1)
        lay.addLayout(grow)
        self.group_box.setVisible(len(self.groups) > 1)
        grow.itemAt(0).widget().setVisible(len(self.groups) > 1)
        # ---- threshold
        row = QHBoxLayout()
        row.addWidget(QLabel(tr("What if the threshold were"), self))
        self.slider = QSlider(Qt.Orientation.Horizontal, self)
        self.slider.setObjectName("fleetThreshold")
        self.slider.setToolTip(tr("Drag to re-evaluate these sessions at another threshold (from the stored token series, without replaying)"))
        self.spin = QSpinBox(self)
        self.spin.setGroupSeparatorShown(True)
        self._configure_slider()
        self.own = QCheckBox(tr("each at its own (as replayed)"), self)
        self.own.setToolTip(tr("Every session at the threshold it was replayed with (inferred from its version)"))
        row.addWidget(self.slider, 1)
        row.addWidget(self.spin)
        row.addWidget(self.own)
        lay.addLayout(row)
        self.whatif = self._text("fleetWhatIf")
        lay.addWidget(self.whatif)
        # ---- figures and table
        self.splitter = QSplitter(Qt.Orientation.Vertical, self)
        lay.addWidget(self.splitter, 1)
        self.glw = pg.GraphicsLayoutWidget(self.splitter)
        self.glw.setBackground("w")
        self.plots = {}
        self.glw.setMinimumHeight(300)
        for key, r, c in (("pre", 0, 0), ("distance", 0, 1), ("compactions", 1, 0), ("tokens", 1, 1)):
            p = self.glw.addPlot(row=r, col=c, axisItems={"bottom": ShortAxis("bottom"), "left": IndexAxis("left")})
            p.setMenuEnabled(False)
            p.setMouseEnabled(x=False, y=False)
            p.showGrid(x=False, y=True, alpha=0.25)
            self.plots[key] = p
        self.whatif_line = pg.InfiniteLine(angle=90, movable=True, pen=pg.mkPen(figures.WHATIF, width=2),
                                           hoverPen=pg.mkPen("#f97316", width=4))
        self.whatif_line.setToolTip(tr("Drag: the what-if threshold"))
        self.whatif_label = pg.InfLineLabel(self.whatif_line, text="", position=0.6, anchors=[(1, 0), (1, 0)],
                                            color=figures.WHATIF)
        self.whatif_line.sigPositionChangeFinished.connect(lambda item: self.set_threshold(item.value()))
        self.whatif_line.sigPositionChanged.connect(lambda _item: self._place_whatif_label())
        self.plots["pre"].getViewBox().sigRangeChanged.connect(lambda *_: self._place_whatif_label())
        table_box = QWidget(self.splitter)
        tl = QVBoxLayout(table_box)
        tl.setContentsMargins(0, 0, 0, 0)
        frow = QHBoxLayout()
        self.filter_edit = QLineEdit(table_box)
        self.filter_edit.setPlaceholderText(tr("Filter sessions: words in the file, version, model or error"))
        self.filter_edit.setClearButtonEnabled(True)
        self.filter_kind = QComboBox(table_box)
        for k, text in FILTERS.items():
            self.filter_kind.addItem(text, k)
        self.count_label = QLabel(table_box)
        frow.addWidget(self.filter_edit, 1)
        frow.addWidget(self.filter_kind)
        frow.addWidget(self.count_label)
        tl.addLayout(frow)
        self.model = FleetTableModel(self.table, self)
        self.proxy = FleetProxy(self.table, self)
        self.proxy.setSourceModel(self.model)
        self.view = QTableView(table_box)
        self.view.setObjectName("fleetTable")
        self.view.setModel(self.proxy)
        self.view.setSortingEnabled(True)
        self.view.sortByColumn(KEYS.index("real"), Qt.SortOrder.DescendingOrder)
        self.view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.view.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.view.setAlternatingRowColors(True)
        self.view.setWordWrap(False)
        self.view.setTextElideMode(Qt.TextElideMode.ElideMiddle)      # the file name at the end stays readable
        self.view.verticalHeader().setVisible(False)
        self.view.verticalHeader().setDefaultSectionSize(22)
        hh = self.view.horizontalHeader()
        hh.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        hh.setStretchLastSection(True)
        self.view.setColumnWidth(0, 330)
        fm = self.view.fontMetrics()
        for k in range(1, len(COLUMNS) - 1):
            self.view.setColumnWidth(k, max(64, fm.horizontalAdvance(COLUMNS[k].title) + 26))
        widest = max((fm.horizontalAdvance(s or "") for s in self.table.strategies), default=0)
        self.view.setColumnWidth(KEYS.index("strategy"), min(max(90, widest + 18), 200))
        self.view.setToolTip(tr("Double-click: open the session in the debugger at that call (a call column's, else the first real compaction's)"))
        self.view.doubleClicked.connect(self._double_clicked)
        tl.addWidget(self.view, 1)
        self.splitter.addWidget(self.glw)
        self.splitter.addWidget(table_box)
        self.splitter.setStretchFactor(0, 3)
        self.splitter.setStretchFactor(1, 2)
        self.splitter.setSizes([600, 400])
        # ---- wiring
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(0)
        self._timer.timeout.connect(self._reevaluate)
        self.slider.valueChanged.connect(lambda v: self.spin.setValue(v * self._step))
        self.spin.valueChanged.connect(self._spin_changed)
        self.own.toggled.connect(lambda on: self._timer.start())
        self.filter_edit.textChanged.connect(lambda t: (self.proxy.set_filter(text=t), self._count()))
        self.filter_kind.currentIndexChanged.connect(
            lambda k: (self.proxy.set_filter(kind=self.filter_kind.itemData(k)), self._count()))
        if threshold is not None and len(self.groups) > 1:
            near = data.group_for(threshold)
            k = next((k for k, g in enumerate(self.groups) if near is not None and g.label == near.label), 0)
            self.group_box.setCurrentIndex(k)
            self.data = self.groups[k]
            self._configure_slider()
        self.group_box.currentIndexChanged.connect(self.set_group)
        self._summary()
        self.set_threshold(threshold if threshold is not None else self.data.whatif_default())
        self._reevaluate()

    def _summary(self) -> None:
        lines = [self.full.rows_line()] + self.data.group_lines(named=len(self.groups) > 1)[:4]
        self.summary.setText("<br>".join(_html(x) for x in lines))

    def _configure_slider(self) -> None:
        """The slider's range and step around the group's own scale (4k for Inspect, 155k for Claude Code)."""
        m = max(self.data.default_threshold(), 10.0)
        step = max(1, int(figures.nice_step(m, 200)))
        lo, hi = max(step, int(m / 8) // step * step), int(m * 6) // step * step
        self._step = step
        for w in (self.slider, self.spin):
            w.blockSignals(True)
        self.slider.setRange(lo // step, hi // step)
        self.spin.setRange(lo, hi)
        self.spin.setSingleStep(step)
        self.spin.setSuffix(f" {self.data.unit}")
        for w in (self.slider, self.spin):
            w.blockSignals(False)

    def set_group(self, k: int) -> None:
        """Show the sessions of ``groups[k]`` in the figures, the slider and the at-T columns."""
        if not 0 <= k < len(self.groups) or self.groups[k] is self.data:
            return
        self.data = self.groups[k]
        if self.group_box.currentIndex() != k:
            self.group_box.setCurrentIndex(k)
        self._configure_slider()
        self._summary()
        self.set_threshold(self.data.whatif_default())
        self._timer.start()

    def _text(self, name: str) -> QLabel:
        """A wrapped, selectable (copyable) line of text."""
        label = QLabel(self)
        label.setObjectName(name)
        label.setWordWrap(True)
        label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        return label

    # ------------------------------------------------------------------ threshold
    @property
    def threshold(self) -> float | None:
        """The what-if threshold, or None when each session is at its own."""
        return None if self.own.isChecked() else float(self.spin.value())

    def set_threshold(self, value: float | None) -> None:
        """A number: every session at it; None: each at the threshold it was replayed with."""
        if value is None:
            self.own.setChecked(True)
            return
        self.own.setChecked(False)
        v = int(round(float(value)))
        self.spin.setValue(max(self.spin.minimum(), min(self.spin.maximum(), v)))
        self._timer.start()

    def _spin_changed(self, v: int) -> None:
        self.slider.blockSignals(True)
        self.slider.setValue(v // self._step)
        self.slider.blockSignals(False)
        if not self.own.isChecked():
            self._timer.start()

    def _reevaluate(self) -> None:
        thr = self.threshold
        r = self.data.reevaluate(self.data.thresholds if thr is None else thr)
        self.reeval = r
        self.table.set_reevaluation(r, self.data)
        self.model.threshold_changed()
        if self.proxy.kind == "whatif":
            self.proxy.set_filter()
        self.whatif.setText("<b>" + _html(ct(self.data.whatif_line(r)) if thr is not None else
                                          tr("each session at its own threshold: ") + ct(self.data.whatif_line(r)))
                            + "</b>")
        self._draw(r)
        self._count()
        self.sigThresholdChanged.emit(thr)

    # ------------------------------------------------------------------ figures
    def _draw(self, r) -> None:
        for key, fig in ((f.key, f) for f in figures.all_figures(self.data, r)):
            p = self.plots[key]
            p.clear()
            # the legend is the title's second line: it never hides the data
            legend = "" if not isinstance(fig, figures.Histogram) else "&nbsp; ".join(
                f"<span style='color:{s.color}'>\u25a0 {_html(s.label)} ({int(s.counts.sum()):,})</span>"
                for s in fig.series)
            p.setTitle(f"<b>{_html(fig.title)}</b>" + (f"<br><span style='font-size:8pt'>{legend}</span>"
                                                        if legend else ""), size="9pt")
            if isinstance(fig, figures.Histogram):
                for s in fig.series:
                    c = QColor(s.color)
                    fill = QColor(c)
                    fill.setAlpha(45)
                    p.addItem(pg.PlotDataItem(fig.edges, s.counts, stepMode="center", fillLevel=0, brush=fill,
                                              pen=pg.mkPen(c, width=2)))
                k = 0
                for x, label, color in fig.lines:
                    if key == "pre" and color == figures.WHATIF:
                        continue            # the movable what-if line below
                    line = pg.InfiniteLine(x, angle=90, pen=pg.mkPen(color, width=1.5, style=Qt.PenStyle.DashLine),
                                           label=label, labelOpts={"position": 0.93 - 0.1 * k, "color": color,
                                                                   "anchors": [(0, 0), (0, 0)]})
                    k += 1
                    p.addItem(line)
                if key == "pre" and self.threshold is not None:
                    self.whatif_line.setValue(self.threshold)
                    self.whatif_label.setText(tr("what-if {fmt_num}").format(fmt_num=fmt_num(self.threshold)))
                    p.addItem(self.whatif_line)
                    self._place_whatif_label()
                if key in ("compactions", "distance"):      # whole numbers only
                    span = float(fig.edges[-1] - fig.edges[0])
                    p.getAxis("bottom").setTickSpacing(max(1.0, figures.nice_step(span, 8)), 1.0)
                axis_title(p, "bottom", ct(fig.xlabel))
                axis_title(p, "left", tr("sessions") if key != "pre" else tr("compactions"))
                p.getAxis("left").setTicks(None)
                p.enableAutoRange()
            else:
                n = len(fig.values)
                ys = np.arange(n)[::-1]
                top = max(fig.values + [1])
                for y, v, c in zip(ys, fig.values, fig.colors):
                    p.addItem(pg.BarGraphItem(x0=0, y=y, height=0.7, width=v, brush=QColor(c), pen=None))
                    t = pg.TextItem(f"{fmt_num(v)}", color="#1f2933", anchor=(0, 0.5))
                    t.setPos(v + top * 0.01, y)
                    p.addItem(t)
                p.getAxis("left").setTicks([[(float(y), label) for y, label in zip(ys, fig.labels)]])
                axis_title(p, "bottom",
                           tr("{unit} sent over every call of every session").format(unit=ct(fig.unit)))
                p.setXRange(0, top * 1.25, padding=0)
                p.setYRange(-0.6, n - 0.4, padding=0)
            p.setToolTip(fig.note)

    def _place_whatif_label(self) -> None:
        """The what-if line's label on the side of the line with the room: left of it, or right of it when the
        line is in the left third of the plot (the label ran under the axis: "at-if 150k")."""
        (x0, x1), _ = self.plots["pre"].getViewBox().viewRange()
        left_third = x1 > x0 and (self.whatif_line.value() - x0) / (x1 - x0) < 1 / 3
        anchors = [(0, 0), (0, 0)] if left_third else [(1, 0), (1, 0)]
        if self.whatif_label.anchors != anchors:
            self.whatif_label.anchors = anchors
            self.whatif_label.updatePosition()

    # ------------------------------------------------------------------ table
    def _count(self) -> None:
        self.count_label.setText(tr("{rowCount:,} of {n_table:,} rows").format(rowCount=self.proxy.rowCount(), n_table=len(self.table)))

    def _double_clicked(self, index) -> None:
        src = self.proxy.mapToSource(index)
        if src.isValid():
            self.sigOpenSession.emit(self.table.open_spec(src.row(), COLUMNS[src.column()].key))

    def figure_data(self, key: str):
        """What a figure shows now (tests read this, not pixels)."""
        return {f.key: f for f in figures.all_figures(self.data, self.reeval)}[key]


def _html(text: str) -> str:
    import html
    return html.escape(str(text), quote=False)
