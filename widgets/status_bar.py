"""The window's status line: the counts of what is shown, the cross-check verdict, and the progress of
background work (what runs, for how long, and a Cancel button)."""
from __future__ import annotations

import time

from PySide6.QtCore import QTimer, Signal
from PySide6.QtWidgets import QLabel, QProgressBar, QPushButton, QStatusBar

from compactscope.widgets.flow import FitLabel
from compactscope.widgets.i18n import ct, tr

VERDICT_STYLE = {"ok": "color: #15803d; font-weight: bold", "failed": "color: #b91c1c; font-weight: bold",
                 "other": "color: #64748b"}


class StatusBar(QStatusBar):
    sigCancel = Signal()

    def __init__(self, parent=None):
        super().__init__(parent)
        self.status_label = FitLabel("", self)          # a narrow window shows fewer parts; never wider
        self.status_label.setObjectName("statusCounts")
        self.status_label.max_lines = 3                 # a projector's narrow window: more lines, nothing left out
        self.addWidget(self.status_label, 1)
        # a temporary message takes the counts' place (over a label of several lines it drew across them)
        self.messageChanged.connect(lambda msg: self.status_label.setVisible(not msg))
        self.oracle_label = QLabel("", self)
        self.oracle_label.setObjectName("oracleVerdict")
        self.oracle_label.hide()
        self.addPermanentWidget(self.oracle_label)
        self.progress = QProgressBar(self)
        self.progress.setRange(0, 0)
        self.progress.setMaximumWidth(160)
        self.progress.hide()
        self.progress_label = QLabel("", self)
        self.cancel_btn = QPushButton(tr("Cancel"), self)
        self.cancel_btn.setObjectName("cancelRun")
        self.cancel_btn.clicked.connect(self.sigCancel)
        self.cancel_btn.hide()
        self.addPermanentWidget(self.progress_label)
        self.addPermanentWidget(self.progress)
        self.addPermanentWidget(self.cancel_btn)
        self._elapsed = QTimer(self)
        self._elapsed.setInterval(250)
        self._elapsed.timeout.connect(self.tick)
        self._text = lambda: ""           # what runs, in words
        self._since = None                # when it started (perf_counter), None: no clock shown

    def showEvent(self, e) -> None:
        # a message shown before the window was (a file opened at start) must hide the counts under it, as
        # it does once the window is on screen
        super().showEvent(e)
        msg = self.currentMessage()
        if msg:
            self.clearMessage()
            self.showMessage(msg, 10000)

    def working(self, text, since: float | None = None) -> None:
        """Show progress: ``text`` (a string or a callable giving it) and, with ``since``, the seconds spent."""
        self._text = text if callable(text) else (lambda: text)
        self._since = since
        self.progress.show()
        self.cancel_btn.show()
        self.progress_label.show()
        if since is not None:
            self._elapsed.start()
        self.tick()

    def tick(self) -> None:
        dt = f" {time.perf_counter() - self._since:.1f} s" if self._since is not None else ""
        self.progress_label.setText(f"{self._text()}\u2026{dt}")

    def idle(self) -> None:
        self._elapsed.stop()
        self.progress.hide()
        self.cancel_btn.hide()
        self.progress_label.setText("")

    def show_verdict(self, state) -> None:
        """A ``core.session.CheckState`` (None hides the label)."""
        if state is None:
            self.oracle_label.hide()
            return
        v = state.verdict
        if v is None:
            self.oracle_label.setText(tr("{name} cross-check: running\u2026").format(name=state.name))
            self.oracle_label.setStyleSheet(VERDICT_STYLE["other"])
        else:
            vt = ct(v.text)
            short = vt if len(vt) <= 90 else vt[:87] + "\u2026"
            self.oracle_label.setText(("\u2714 " if v.ok else "\u2716 " if v.failed else "") + short)
            self.oracle_label.setStyleSheet(VERDICT_STYLE["ok" if v.ok else "failed" if v.failed else "other"])
        self.oracle_label.setToolTip(tr("{name} cross-check: {v}\n\n{description}").format(
            name=state.name, v=ct(v.text) if v else tr("running"), description=ct(state.description)))
        self.oracle_label.show()
