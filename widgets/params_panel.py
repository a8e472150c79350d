"""Strategy, summarizer and every parameter of the strategy, generic over ``Strategy.params``.

Edits emit ``sigParamsChanged(dict)`` after a short debounce, so the window
re-runs the pipeline at once without a run per keystroke.
"""
from __future__ import annotations

import html

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (QAbstractItemView, QCheckBox, QComboBox, QDoubleSpinBox, QFormLayout, QHBoxLayout,
                               QLabel, QLineEdit, QListWidget, QListWidgetItem, QPushButton, QScrollArea, QSpinBox,
                               QToolButton, QVBoxLayout, QWidget)

from compactscope.widgets.i18n import ct, tr

INT_MAX = 2_147_483_647


class LayerOrder(QWidget):
    """The strategy's layers in the order they run: drag a row, or select one and press the arrows, to try another
    order (the layer-order experiment); Reset puts the strategy's own order back. Emits ``sigOrderChanged(list)``
    with the layer names, or None for the strategy's own order."""
    sigOrderChanged = Signal(object)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("layerOrder")
        lay = QHBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        self.list = QListWidget(self)
        self.list.setObjectName("layerOrderList")
        self.list.setDragDropMode(QAbstractItemView.InternalMove)
        self.list.setToolTip(tr("The layers in the order they run. Drag one (or select it and press ↑/↓) to run them in another order: e.g. L2 micro before L3 budget loses the results budget would have persisted."))
        self.list.model().rowsMoved.connect(lambda *_: self._emit())
        lay.addWidget(self.list, 1)
        col = QVBoxLayout()
        self.up = QToolButton(self)
        self.up.setText("\u2191")
        self.up.setToolTip(tr("Run the selected layer earlier"))
        self.up.clicked.connect(lambda: self.move(-1))
        self.down = QToolButton(self)
        self.down.setText("\u2193")
        self.down.setToolTip(tr("Run the selected layer later"))
        self.down.clicked.connect(lambda: self.move(1))
        self.reset = QToolButton(self)
        self.reset.setText(tr("Reset"))
        self.reset.setToolTip(tr("The strategy's own order"))
        self.reset.clicked.connect(lambda: (self.set_order(self.default, self.labels), self.sigOrderChanged.emit(None)))
        for b in (self.up, self.down, self.reset):
            col.addWidget(b)
        col.addStretch(1)
        lay.addLayout(col)
        self.default: list[str] = []
        self.labels: dict = {}
        self._building = False

    def set_order(self, names: list[str], labels: dict | None = None, default: list[str] | None = None) -> None:
        self._building = True
        if default is not None:
            self.default = list(default)
        if labels is not None:
            self.labels = dict(labels)
        self.list.clear()
        for n in names:
            it = QListWidgetItem(self.labels.get(n) or n)
            it.setData(Qt.ItemDataRole.UserRole, n)
            it.setToolTip(n)
            self.list.addItem(it)
        fm = self.list.fontMetrics()
        self.list.setFixedHeight(max(3, len(names)) * (fm.height() + 6) + 6)
        self._building = False
        self._mark()

    def order(self) -> list[str]:
        return [self.list.item(i).data(Qt.ItemDataRole.UserRole) for i in range(self.list.count())]

    def _mark(self) -> None:
        changed = self.order() != self.default
        self.reset.setEnabled(changed)

    def move(self, d: int) -> None:
        i = self.list.currentRow()
        j = i + d
        if i < 0 or not 0 <= j < self.list.count():
            return
        it = self.list.takeItem(i)
        self.list.insertItem(j, it)
        self.list.setCurrentRow(j)
        self._emit()

    def _emit(self) -> None:
        if self._building:
            return
        self._mark()
        order = self.order()
        self.sigOrderChanged.emit(None if order == self.default else order)


class ParamsPanel(QWidget):
    sigParamsChanged = Signal(dict)
    sigStrategyChanged = Signal(str)
    sigSummarizerChanged = Signal(str)
    sigVariantChanged = Signal(object)      # a variant's name, or None for the strategy's main way
    sigOrderChanged = Signal(object)        # layer names, or None for the strategy's own order

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("paramsPanel")
        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        top = QFormLayout()
        self.strategy_box = QComboBox(self)
        self.strategy_box.setObjectName("strategyBox")
        self.strategy_box.currentIndexChanged.connect(self._strategy_changed)
        top.addRow(tr("Strategy"), self.strategy_box)
        self.summarizer_box = QComboBox(self)
        self.summarizer_box.setObjectName("summarizerBox")
        self.summarizer_box.setEditable(True)
        self.summarizer_box.addItems(["offline", "anthropic", "fixed:A fixed test summary."])
        self.summarizer_box.setToolTip(tr("offline = deterministic, no LLM; anthropic[:MODEL] needs ANTHROPIC_API_KEY; fixed:TEXT for tests"))
        self.summarizer_box.activated.connect(lambda *_: self.sigSummarizerChanged.emit(self.summarizer()))
        self.summarizer_box.lineEdit().editingFinished.connect(
            lambda: self.sigSummarizerChanged.emit(self.summarizer()))
        top.addRow(tr("Summarizer"), self.summarizer_box)
        for box in (self.strategy_box, self.summarizer_box):
            box.setMinimumWidth(80)          # a narrow dock squeezes them instead of widening the window
        self.variant_box = QComboBox(self)
        self.variant_box.setObjectName("variantBox")
        self.variant_box.setToolTip(tr("Run the strategy another way (s08: the seed README's snip)"))
        self.variant_box.setSizeAdjustPolicy(QComboBox.AdjustToMinimumContentsLengthWithIcon)
        self.variant_box.setMinimumContentsLength(12)
        self.variant_box.activated.connect(lambda i: self.sigVariantChanged.emit(self.variant_box.itemData(i)))
        self.variant_label = QLabel(tr("Variant"), self)
        top.addRow(self.variant_label, self.variant_box)
        self.order_box = LayerOrder(self)
        self.order_box.sigOrderChanged.connect(self.sigOrderChanged)
        self.order_label = QLabel(tr("Layer order"), self)
        top.addRow(self.order_label, self.order_box)
        lay.addLayout(top)
        self.description = QLabel(self)
        self.description.setWordWrap(True)
        lay.addWidget(self.description)
        self.scroll = QScrollArea(self)
        self.scroll.setWidgetResizable(True)
        lay.addWidget(self.scroll, 1)
        self.reset_btn = QPushButton(tr("Reset to defaults"), self)
        self.reset_btn.clicked.connect(self.reset)
        lay.addWidget(self.reset_btn)
        self.strategy = None
        self.editors: dict = {}
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(250)
        self._timer.timeout.connect(self._emit)
        self._building = False

    def set_strategies(self, names: list[str], current: str, labels: dict | None = None) -> None:
        """The strategies to choose from (their specs; ``labels``: what to show for some, e.g. a plugin
        file's short name, the full spec in the tooltip)."""
        self._building = True
        self.strategy_box.clear()
        for n in names:
            self.add_strategy(n, (labels or {}).get(n))
        self._select(current)
        self._building = False

    def add_strategy(self, spec: str, label: str | None = None) -> None:
        if self.strategy_box.findData(spec) >= 0:
            return
        self.strategy_box.addItem(label or spec, spec)
        if label and label != spec:
            self.strategy_box.setItemData(self.strategy_box.count() - 1, spec, Qt.ItemDataRole.ToolTipRole)

    def _select(self, spec: str) -> None:
        k = self.strategy_box.findData(spec)
        if k < 0:
            self.add_strategy(spec)
            k = self.strategy_box.findData(spec)
        self.strategy_box.setCurrentIndex(k)

    def current_strategy(self) -> str:
        return self.strategy_box.currentData() or self.strategy_box.currentText()

    def _strategy_changed(self, _index: int = -1) -> None:
        name = self.current_strategy()
        if not self._building and name:
            self.sigStrategyChanged.emit(name)

    def summarizer(self) -> str:
        return self.summarizer_box.currentText().strip() or "offline"

    def set_summarizer(self, spec: str) -> None:
        self.summarizer_box.setCurrentText(spec)

    def set_strategy(self, strategy, values: dict) -> None:
        self._building = True
        self.strategy = strategy
        if self.current_strategy() != strategy.name:
            self._select(strategy.name)
        notes = strategy.notes if isinstance(strategy.notes, dict) else {}
        origin = "<br>" + tr("from: {origin}").format(origin=html.escape(str(notes["origin"]))) \
            if notes.get("origin") else ""
        gone = str(notes.get("not reproduced") or "")
        missing = ("<br><i>" + tr("not reproduced: {what} (hover for why)").format(
            what=html.escape(ct(gone.split(":")[0]))) + "</i>") if gone else ""
        self.description.setToolTip(tr("not reproduced: {what}").format(what=ct(gone)) if gone else "")
        self.description.setText(f"<b>{html.escape(ct(strategy.title))}</b><br>{html.escape(ct(strategy.description))}"
                                 + origin + missing)
        self.variant_box.clear()
        self.variant_box.addItem(tr("main (the strategy's own)"), None)
        for v in strategy.variants:
            self.variant_box.addItem(ct(v.title), v.name)
            self.variant_box.setItemData(self.variant_box.count() - 1, ct(v.description), Qt.ItemDataRole.ToolTipRole)
        for w in (self.variant_box, self.variant_label):
            w.setVisible(bool(strategy.variants))
        self.set_variant(next((v.name for v in strategy.variants if v.active(values)), None))
        labels = {layer.name: ct(layer.label or layer.name) for layer in strategy.layers}
        self.order_box.set_order(list(strategy.layer_names), labels, list(strategy.layer_names))
        form_w = QWidget()
        form = QFormLayout(form_w)
        self.editors = {}
        for p in strategy.params:
            v = values.get(p.name, p.default)
            ed = self._editor(p, v)
            ed.setObjectName(f"param_{p.name}")
            ed.setToolTip(ct(p.help))
            lab = QLabel(p.name + (f" ({ct(p.unit)})" if p.unit else ""))
            lab.setToolTip(ct(p.help))
            form.addRow(lab, ed)
            self.editors[p.name] = (p, ed)
        self.scroll.setWidget(form_w)
        self._building = False

    def set_variant(self, name: str | None) -> None:
        """Show the variant the parameters select (without emitting)."""
        i = self.variant_box.findData(name)
        if i >= 0 and i != self.variant_box.currentIndex():
            self.variant_box.setCurrentIndex(i)

    def set_order(self, order: list[str] | None) -> None:
        """Show the layer order the session runs (None: the strategy's own), without emitting."""
        names = list(order) if order else list(self.order_box.default)
        if names != self.order_box.order():
            self.order_box.set_order(names)

    def _editor(self, p, v):
        if getattr(p, "text_editor", False):         # a value a spin box cannot hold (e.g. a number or "all")
            ed = QLineEdit("" if v is None else str(v))
            ed.editingFinished.connect(self._changed)
            return ed
        if p.choices:
            ed = QComboBox()
            ed.addItems([str(c) for c in p.choices])
            ed.setCurrentText(str(v))
            ed.currentTextChanged.connect(self._changed)
        elif isinstance(p.default, bool):
            ed = QCheckBox()
            ed.setChecked(bool(v))
            ed.toggled.connect(self._changed)
        elif isinstance(p.default, int):
            ed = QSpinBox()
            ed.setRange(int(p.minimum) if p.minimum is not None else -INT_MAX,
                        int(p.maximum) if p.maximum is not None else INT_MAX)
            ed.setGroupSeparatorShown(True)
            ed.setValue(int(v))
            ed.setKeyboardTracking(False)
            ed.valueChanged.connect(self._changed)
        elif isinstance(p.default, float):
            ed = QDoubleSpinBox()
            ed.setDecimals(3)
            ed.setRange(p.minimum if p.minimum is not None else -1e12, p.maximum if p.maximum is not None else 1e12)
            ed.setValue(float(v))
            ed.setKeyboardTracking(False)
            ed.valueChanged.connect(self._changed)
        else:
            ed = QLineEdit("" if v is None else str(v))
            ed.editingFinished.connect(self._changed)
        return ed

    def _changed(self, *_):
        if not self._building:
            self._timer.start()

    def values(self) -> dict:
        out = {}
        for name, (p, ed) in self.editors.items():
            if isinstance(ed, QComboBox):
                raw = ed.currentText()
                out[name] = next((c for c in p.choices if str(c) == raw), raw)
            elif isinstance(ed, QCheckBox):
                out[name] = ed.isChecked()
            elif isinstance(ed, (QSpinBox, QDoubleSpinBox)):
                out[name] = ed.value()
            else:
                out[name] = ed.text()
        return out

    def set_value(self, name: str, value) -> None:
        """Set one parameter (e.g. from the chart's threshold) without emitting."""
        if name not in self.editors:
            return
        p, ed = self.editors[name]
        self._building = True
        if isinstance(ed, QComboBox):
            ed.setCurrentText(str(value))
        elif isinstance(ed, QCheckBox):
            ed.setChecked(bool(value))
        elif isinstance(ed, QSpinBox):
            ed.setValue(int(value))
        elif isinstance(ed, QDoubleSpinBox):
            ed.setValue(float(value))
        else:
            ed.setText(str(value))
        self._building = False

    def reset(self) -> None:
        if self.strategy is None:
            return
        for p in self.strategy.params:
            self.set_value(p.name, p.default)
        self._emit()

    def _emit(self) -> None:
        self._timer.stop()
        self.sigParamsChanged.emit(self.values())

    def flush(self) -> None:
        """Emit now if an edit is pending (tests, shortcuts)."""
        if self._timer.isActive():
            self._emit()
