"""The "Timeline" tab: which runs to compare (strategies with their defaults, and runs written as
[LABEL=]NAME:KEY=VALUE,...), the Compare button, "follow", the replay timeline and the comparison
table. Emits ``sigCompareChanged(names, extra)``, ``sigCompareRequested()`` and ``sigFollowChanged``."""
from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (QCheckBox, QHBoxLayout, QLabel, QLineEdit, QPushButton, QScrollArea, QSizePolicy,
                               QSplitter,
                               QVBoxLayout, QWidget)

from compactscope.widgets.flow import FlowLayout, flow_widget_policy
from compactscope.widgets.comparison_table import ComparisonTable
from compactscope.widgets.timeline import TimelineWidget
from compactscope.widgets.i18n import tr


class TimelinePanel(QScrollArea):
    sigCompareChanged = Signal(list, str)
    sigCompareRequested = Signal()
    sigFollowChanged = Signal(bool)

    def __init__(self, strategy_names: list[str], parent=None):
        super().__init__(parent)
        page = QWidget(self)
        page.setObjectName("timelinePage")
        pl = QVBoxLayout(page)
        pl.setContentsMargins(0, 0, 0, 0)
        pl.setSpacing(2)
        cbox = QWidget(page)
        flow_widget_policy(cbox)
        crow = FlowLayout(cbox)
        crow.setContentsMargins(4, 2, 4, 0)
        lab = QLabel(tr("Compare with:"), page)
        lab.setToolTip(tr("Replay the same conversation under other strategies or parameter sets; their 'sent' curves are overlaid and the table below compares them"))
        crow.addWidget(lab)
        self.compare_boxes: dict[str, QCheckBox] = {}
        for name in strategy_names:
            cb = QCheckBox(name, page)
            cb.setObjectName(f"compare_{name}")
            cb.setToolTip(tr("also replay with {name} and its default parameters").format(name=name))
            cb.toggled.connect(self._changed)
            crow.addWidget(cb)
            self.compare_boxes[name] = cb
        self.compare_extra = QLineEdit(page)
        self.compare_extra.setObjectName("compareExtra")
        self.compare_extra.setPlaceholderText(tr("more runs: [LABEL=]NAME:KEY=VALUE,...; ...  (Enter)"))
        self.compare_extra.setToolTip(tr("e.g.  small=s08:context_limit=20000; hermes:context_length=32000\nRuns separated by ';', each a strategy with optional parameters"))
        self.compare_extra.returnPressed.connect(self._changed)
        self.compare_extra.setMinimumWidth(40)
        self.compare_button = QPushButton(tr("Compare"), page)
        self.compare_button.setObjectName("compareButton")
        self.compare_button.setToolTip(tr("Replay every run and overlay the curves (runs in the background)"))
        self.compare_button.clicked.connect(self._requested)
        crow.addWidget(self.compare_button)
        self.follow_box = QCheckBox(tr("follow"), page)
        self.follow_box.setObjectName("followCalls")
        self.follow_box.setChecked(True)
        self.follow_box.setToolTip(tr("The stepper and the message list follow the timeline cursor: the context of the selected (or playing) model call, layer by layer, as if live"))
        self.follow_box.toggled.connect(self.sigFollowChanged)
        crow.addWidget(self.follow_box)
        pl.addWidget(cbox)
        self._compare_row = cbox
        erow = QHBoxLayout()
        erow.setContentsMargins(4, 0, 4, 0)
        erow.addWidget(self.compare_extra, 1)
        pl.addLayout(erow)
        self.timeline = TimelineWidget(page)
        self.comparison = ComparisonTable(page)
        self.comparison.setMinimumHeight(60)
        self.comparison.setMinimumWidth(50)          # the table scrolls itself; the page never grows sideways
        self.comparison.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Expanding)
        split = QSplitter(Qt.Orientation.Vertical, page)
        split.addWidget(self.timeline)
        split.addWidget(self.comparison)
        split.setStretchFactor(0, 4)
        split.setStretchFactor(1, 1)
        pl.addWidget(split, 1)
        self._applying = False
        self._presenter = False
        # a narrow centre pane scrolls instead of widening the window
        self.setWidgetResizable(True)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        page.setMinimumWidth(0)
        self.setWidget(page)
        self.setMinimumWidth(50)

    def set_presenter(self, on: bool) -> None:
        """Presenter mode: the timeline takes the room; the compare controls and the table show only when runs are
        compared (a lesson's slide that compares)."""
        self._presenter = on
        comparing = bool(self.names() or self.compare_extra.text().strip())
        for w in (self._compare_row, self.compare_extra):
            w.setVisible(not on)
        self.comparison.setVisible(not on or comparing)

    def names(self) -> list[str]:
        return [n for n, cb in self.compare_boxes.items() if cb.isChecked()]

    def _changed(self, *_) -> None:
        if not self._applying:
            self.sigCompareChanged.emit(self.names(), self.compare_extra.text())

    def _requested(self) -> None:
        self.sigCompareChanged.emit(self.names(), self.compare_extra.text())
        self.sigCompareRequested.emit()

    def set_compare(self, names: list[str], extra: str) -> None:
        """Show these runs (the session's) without emitting them back."""
        self._applying = True
        try:
            for name, cb in self.compare_boxes.items():
                cb.setChecked(name in names)
            if self.compare_extra.text() != extra:
                self.compare_extra.setText(extra)
        finally:
            self._applying = False
        if self._presenter:
            self.set_presenter(True)             # the table shows when runs are compared

    def set_follow(self, on: bool) -> None:
        if self.follow_box.isChecked() != on:
            self.follow_box.blockSignals(True)
            self.follow_box.setChecked(on)
            self.follow_box.blockSignals(False)
