"""The "Before / after" tab: the counts of kept/changed/removed/inserted rows, "hide unchanged
rows", the aligned two-column table of one layer, and the layer's edits in words."""
from __future__ import annotations

from PySide6.QtCore import QT_TRANSLATE_NOOP, Qt, QTimer
from PySide6.QtWidgets import QCheckBox, QHBoxLayout, QLabel, QSizePolicy, QSplitter, QVBoxLayout, QWidget

from compactscope.widgets.diff_view import DiffModel, DiffView
from compactscope.widgets.explainer import EditList
from compactscope.widgets.i18n import tr

COUNT_COLORS = ((QT_TRANSLATE_NOOP("", "kept"), "#64748b"), (QT_TRANSLATE_NOOP("", "changed"), "#b45309"),
                (QT_TRANSLATE_NOOP("", "removed"), "#dc2626"), (QT_TRANSLATE_NOOP("", "inserted"), "#16a34a"),
                (QT_TRANSLATE_NOOP("", "duplicated"), "#9333ea"))


class DiffPanel(QWidget):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("diffPanel")
        dl = QVBoxLayout(self)
        dl.setContentsMargins(0, 0, 0, 0)
        drow = QHBoxLayout()
        self.counts = QLabel("", self)
        self.counts.setObjectName("diffCounts")
        self.counts.setMinimumWidth(10)
        self.counts.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Preferred)
        self.counts.setWordWrap(True)            # a narrow pane wraps the counts instead of cutting them
        drow.addWidget(self.counts, 1)
        self.changes_only = QCheckBox(tr("hide unchanged rows"), self)
        self.changes_only.setObjectName("diffChangesOnly")
        self.changes_only.toggled.connect(self._changes_only)
        drow.addWidget(self.changes_only)
        dl.addLayout(drow)
        split = QSplitter(Qt.Vertical, self)
        self.model = DiffModel(self)
        self.view = DiffView(split)
        self.view.setModel(self.model)
        self.edits = EditList(split)
        self.edits.sigEditClicked.connect(self._edit_clicked)
        split.addWidget(self.view)
        split.addWidget(self.edits)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 1)
        dl.addWidget(split)

    def set_step(self, step, rows: list | None = None, marks: tuple | None = None) -> None:
        """The layer's before/after (None on Original: the table hides); ``marks``: the real compactions in its
        input and output (``DiffModel.set_step``)."""
        self.model.set_step(step, rows, marks)
        self.view.setVisible(step is not None)
        self.update_counts()
        if step is not None:
            QTimer.singleShot(0, self.view.scroll_to_first_change)

    def update_counts(self) -> None:
        if self.model.step is None:
            self.counts.setText(tr("Original: step right (→) to see what each layer did"))
            return
        c = self.model.counts()
        parts = [f"<span style='color:{col}'><b>{c[k]}</b> {tr(str(k))}</span>" for k, col in COUNT_COLORS if c.get(k)]
        self.counts.setText(tr("messages: ") + " \u00b7 ".join(parts) if parts else tr("no messages"))

    def _changes_only(self, on: bool) -> None:
        self.model.set_changes_only(on)
        QTimer.singleShot(0, self.view.scroll_to_first_change)

    def _edit_clicked(self, k: int) -> None:
        m = self.model
        for row, r in enumerate(m.rows):
            if k in r.edits:
                self.view.setCurrentIndex(m.index(row, 0 if r.left is not None else 1))
                self.view.scrollTo(m.index(row, 0))
                return
