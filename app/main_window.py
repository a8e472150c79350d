"""The debugger window: wiring of the views over a Trace. No pipeline logic here.

Flow: open a file -> show the original messages at once -> run the strategy in a
worker (TaskRunner) -> on the result fill the stepper, chart, diff and panels.
Every parameter edit, strategy or summarizer change, and threshold drag re-runs.
"""
from __future__ import annotations

import gc
import html
import re
from pathlib import Path

from compactscope import asset_path

from PySide6.QtCore import QByteArray, Qt, QThreadPool, QTimer, Signal
from PySide6.QtGui import QColor, QFont, QKeySequence, QPalette, QShortcut
from PySide6.QtWidgets import (QApplication, QCheckBox, QComboBox, QDockWidget, QFileDialog, QHBoxLayout, QLabel,
                               QLineEdit, QMainWindow, QProgressBar, QPushButton, QScrollArea, QSizePolicy, QSplitter,
                               QTabWidget, QToolButton, QVBoxLayout, QWidget)

from compactscope.core import strategies
from compactscope.core.explain import boundary_explanation, cut_lines, find_boundary_step
from compactscope.core.align import CHANGED, DUPLICATED, INSERTED, REMOVED, align
from compactscope.core.loaders import LoadError, load
from compactscope.core.pipeline import Engine, PipelineResult, run_with_variants
from compactscope.core.size import SizeMeter
from compactscope.core.strategies.base import DIFFER, Verdict
from compactscope.core.summarizers import make_summarizer
from compactscope.core.workspace import Workspace
from compactscope.widgets.common import fmt
from compactscope.widgets.diff_view import DiffModel, DiffView
from compactscope.widgets.explainer import EditList, FindingsPanel, SnipExplainer, is_snip_step
from compactscope.widgets.inspector import Inspector
from compactscope.widgets.message_view import IndexRole, MessageListModel, MessageView
from compactscope.widgets.params_panel import ParamsPanel
from compactscope.widgets.stepper import LayerStepper
from compactscope.widgets.timeline import ComparisonTable, TimelineWidget
from compactscope.widgets.token_chart import TokenChart

from .live import install_menu
from .settings import Settings
from .workers import TaskRunner

EXAMPLES = asset_path("examples")
DEFAULT_EXAMPLE = EXAMPLES / "long_session.json"
PERSISTED_RE = re.compile(r"Full output:\s*([^\s\\'\"]+)")


def stage_label(strategy, name: str) -> str:
    if name == "original":
        return "Original"
    try:
        layer = strategy.layer(name)
        return layer.label or name
    except (KeyError, AttributeError):
        return name


class MainWindow(QMainWindow):
    sigTraceReady = Signal(object)     # the PipelineResult shown
    sigStageShown = Signal(int)
    sigError = Signal(str)
    sigReplayReady = Signal(object)
    sigOracleReady = Signal(str)       # the hermes-agent cross-check verdict of the shown run
    sigCallShown = Signal(int)         # the stepper now shows the pipeline run before this model call

    def __init__(self, settings: Settings | None = None, parent=None, workspace: Workspace | None = None):
        super().__init__(parent)
        self.setObjectName("mainWindow")
        self.setWindowTitle("Compactscope")
        self.setAcceptDrops(True)
        self.settings = settings or Settings()
        self.workspace = workspace or Workspace()
        self.meter = SizeMeter()
        self.summarizers: dict = {}
        self.path: str | None = None
        self.load_result = None
        self.conversation = None
        self.result = None            # PipelineResult
        self._align_cache: dict = {}
        self._shown_stage: int | None = None
        self._sel_override: int | None = None
        self._rerun_pending = False
        self._run_scheduled = False
        self.trace = None
        self.runs = 0                 # completed pipeline runs (tests and the status bar)
        self.stage = 0
        self.view_mode = "after"
        self._base_font_pt = QApplication.font().pointSizeF() or 10.0
        self.zoom = 0.0
        names = strategies.available() or ["s08"]
        saved = str(self.settings.value("strategy", "s08"))
        self.strategy = strategies.get(saved if saved in names else names[0])
        self.params = self._saved_params(self.strategy)
        self._run_text = ""
        self._elapsed_timer = QTimer(self)
        self._elapsed_timer.setInterval(250)
        self._elapsed_timer.timeout.connect(self._tick_elapsed)
        self.runner = TaskRunner(self)
        self.runner.sigDone.connect(self._pipeline_done)
        self.runner.sigFailed.connect(self._pipeline_failed)
        self.runner.sigProgress.connect(self._pipeline_progress)
        # the hermes-agent cross-check: its own one-thread pool, so it never holds up a pipeline run
        self._oracle_pool = QThreadPool(self)
        self._oracle_pool.setMaxThreadCount(1)
        self.oracle_runner = TaskRunner(self, pool=self._oracle_pool)
        self.oracle_runner.sigDone.connect(self._oracle_done)
        self.oracle_runner.sigFailed.connect(lambda tid, e: self._oracle_done(tid, Verdict(
            DIFFER, f"the cross-check failed: {type(e).__name__}: {e}")))
        self.oracle_text: str | None = None
        self.oracle_verdict = None           # the cross-check's Verdict of the shown run
        self._oracle_trace = None          # the trace being checked
        self._oracle_wanted = None         # the newest trace to check (coalesced while one check runs)
        self.shown_call: int | None = None     # the replayed call the stepper shows (None: the whole file)
        self._call_wanted: int | None = None
        self._call_job: int | None = None
        self._build()
        self._actions()
        self._restore()

    # ================================================================== build
    def _build(self) -> None:
        central = QWidget(self)
        outer = QVBoxLayout(central)
        outer.setContentsMargins(4, 4, 4, 0)
        outer.setSpacing(3)
        self.banner = QLabel(central)
        self.banner.setObjectName("errorBanner")
        self.banner.setWordWrap(True)
        self.banner.setTextInteractionFlags(Qt.TextSelectableByMouse)
        self.banner.setStyleSheet("QLabel { background: #fee2e2; color: #7f1d1d; border: 1px solid #ef4444; "
                                  "border-radius: 4px; padding: 6px; }")
        self.banner.hide()
        outer.addWidget(self.banner)
        self.stepper = LayerStepper(central)
        self.stepper.sigStageChanged.connect(self.show_stage)
        outer.addWidget(self.stepper)

        self.splitter = QSplitter(Qt.Horizontal, central)
        self.splitter.setObjectName("mainSplitter")
        outer.addWidget(self.splitter, 1)

        # -- message panel
        mp = QWidget(self.splitter)
        ml = QVBoxLayout(mp)
        ml.setContentsMargins(0, 0, 0, 0)
        ml.setSpacing(2)
        bar = QHBoxLayout()
        self.search = QLineEdit(mp)
        self.search.setObjectName("searchField")
        self.search.setPlaceholderText("Search message contents (Ctrl+F, Enter = next)")
        self.search.setClearButtonEnabled(True)
        self.search.textChanged.connect(self._search_changed)
        self.search.returnPressed.connect(lambda: self.next_match(1))
        bar.addWidget(self.search, 1)
        self.match_label = QLabel("", mp)
        bar.addWidget(self.match_label)
        self.mode_box = QComboBox(mp)
        self.mode_box.setObjectName("viewMode")
        self.mode_box.addItems(["after layer", "before layer"])
        self.mode_box.setToolTip("Show the conversation as this layer left it, or as it entered the layer")
        self.mode_box.currentIndexChanged.connect(lambda i: self.set_view_mode("before" if i else "after"))
        ml.addLayout(bar)
        frow = QHBoxLayout()
        self.role_filter = QComboBox(mp)
        self.role_filter.setObjectName("roleFilter")
        self.role_filter.addItems(["all roles", "user", "assistant", "system", "tool"])
        self.role_filter.currentIndexChanged.connect(self._filters_changed)
        frow.addWidget(self.role_filter)
        self.block_filter = QComboBox(mp)
        self.block_filter.setObjectName("blockFilter")
        self.block_filter.addItems(["any block", "text", "tool_use", "tool_result", "thinking", "image"])
        self.block_filter.currentIndexChanged.connect(self._filters_changed)
        frow.addWidget(self.block_filter)
        self.changed_only = QCheckBox("changed", mp)
        self.changed_only.setToolTip("Only messages this layer changed or inserted")
        self.changed_only.setObjectName("changedOnly")
        self.changed_only.toggled.connect(self._filters_changed)
        frow.addWidget(self.changed_only)
        self.matches_only = QCheckBox("matches", mp)
        self.matches_only.setToolTip("Only messages matching the search")
        self.matches_only.toggled.connect(self._filters_changed)
        frow.addWidget(self.matches_only)
        frow.addStretch(1)
        frow.addWidget(self.mode_box)
        for box in (self.role_filter, self.block_filter, self.mode_box):
            box.setSizeAdjustPolicy(QComboBox.AdjustToMinimumContentsLengthWithIcon)
            box.setMinimumContentsLength(7)
        for text, tip, slot in (("Expand", "Expand all blocks (double-click or Space: one message)", lambda: self.model.set_expand_all(True)),
                                ("Collapse", "Collapse all: one line per block", lambda: self.model.set_expand_all(False)),
                                ("\u21c4 Partner", "Jump to the other half of the selected tool pair (Ctrl+J)",
                                 lambda: self.jump_to_partner())):
            b = QToolButton(mp)
            b.setText(text)
            b.setToolTip(tip)
            b.clicked.connect(slot)
            bar.addWidget(b)
        ml.addLayout(frow)
        self.model = MessageListModel(self)
        self.view = MessageView(mp)
        self.view.setModel(self.model)
        self.view.sigMessageSelected.connect(self._message_selected)
        self.view.sigBlockSelected.connect(self._block_selected)
        ml.addWidget(self.view, 1)

        # -- center tabs: before/after, snip boundary, timeline
        self.tabs = QTabWidget(self.splitter)
        self.tabs.setObjectName("centerTabs")
        dw = QWidget()
        dl = QVBoxLayout(dw)
        dl.setContentsMargins(0, 0, 0, 0)
        drow = QHBoxLayout()
        self.diff_counts = QLabel("", dw)
        self.diff_counts.setObjectName("diffCounts")
        self.diff_counts.setMinimumWidth(10)
        self.diff_counts.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Preferred)
        drow.addWidget(self.diff_counts, 1)
        self.diff_changes_only = QCheckBox("hide unchanged rows", dw)
        self.diff_changes_only.setObjectName("diffChangesOnly")
        self.diff_changes_only.toggled.connect(self._diff_changes_only)
        drow.addWidget(self.diff_changes_only)
        dl.addLayout(drow)
        dsplit = QSplitter(Qt.Vertical, dw)
        self.diff_model = DiffModel(self)
        self.diff = DiffView(dsplit)
        self.diff.setModel(self.diff_model)
        self.diff.sigMessageSelected.connect(self._diff_selected)
        self.edits = EditList(dsplit)
        self.edits.sigEditClicked.connect(self._edit_clicked)
        dsplit.addWidget(self.diff)
        dsplit.addWidget(self.edits)
        dsplit.setStretchFactor(0, 3)
        dsplit.setStretchFactor(1, 1)
        dl.addWidget(dsplit)
        self.tabs.addTab(dw, "Before / after")
        self.explainer = SnipExplainer(self.tabs)
        self.tabs.addTab(self.explainer, "Snip boundary")
        self.tabs.addTab(self._timeline_tab(), "Timeline")
        self.tabs.currentChanged.connect(self._tab_changed)
        self.splitter.addWidget(mp)
        self.splitter.addWidget(self.tabs)
        self.splitter.setStretchFactor(0, 4)
        self.splitter.setStretchFactor(1, 5)
        self.splitter.setSizes([480, 600])
        self.setCentralWidget(central)

        # -- docks
        self.inspector = Inspector(self)
        self.inspector.resolve_persisted = self._resolve_persisted
        self.params_panel = ParamsPanel(self)
        self.params_panel.set_strategies(strategies.available() or ["s08"], self.strategy.name)
        self.params_panel.set_strategy(self.strategy, self.params)
        self.params_panel.set_summarizer(str(self.settings.value("summarizer", "offline")))
        self.params_panel.sigParamsChanged.connect(self._params_changed)
        self.params_panel.sigStrategyChanged.connect(self.set_strategy)
        self.params_panel.sigSummarizerChanged.connect(lambda s: (self.settings.set("summarizer", s),
                                                                  self.run_pipeline()))
        self.findings = FindingsPanel(self)
        self.findings.sigMessageClicked.connect(self.select_message)
        self.chart = TokenChart(self)
        self.chart.sigThresholdChanged.connect(self._threshold_dragged)
        self.chart.sigMessageClicked.connect(self.select_message)
        self.dock_inspector = self._dock("Inspector", self.inspector, Qt.RightDockWidgetArea)
        self.dock_params = self._dock("Strategy and parameters", self.params_panel, Qt.RightDockWidgetArea)
        self.tabifyDockWidget(self.dock_params, self.dock_inspector)
        self.dock_inspector.raise_()
        self.dock_chart = self._dock("Size and tokens", self.chart, Qt.BottomDockWidgetArea)
        self.dock_findings = self._dock("API findings", self.findings, Qt.BottomDockWidgetArea)
        self.splitDockWidget(self.dock_chart, self.dock_findings, Qt.Horizontal)
        self.resizeDocks([self.dock_chart, self.dock_findings], [1000, 300], Qt.Horizontal)
        self.resizeDocks([self.dock_chart], [230], Qt.Vertical)
        self.resizeDocks([self.dock_inspector], [330], Qt.Horizontal)

        # -- status bar
        sb = self.statusBar()
        self.status_label = QLabel("", self)
        self.status_label.setObjectName("statusCounts")
        sb.addWidget(self.status_label, 1)
        self.oracle_label = QLabel("", self)
        self.oracle_label.setObjectName("oracleVerdict")
        self.oracle_label.setToolTip("core.hermes_oracle: the real hermes-agent ContextCompressor run on the same "
                                     "input, parameters, state and summary text, compared message by message")
        self.oracle_label.hide()
        sb.addPermanentWidget(self.oracle_label)
        self.progress = QProgressBar(self)
        self.progress.setRange(0, 0)
        self.progress.setMaximumWidth(160)
        self.progress.hide()
        self.progress_label = QLabel("", self)
        self.cancel_btn = QPushButton("Cancel", self)
        self.cancel_btn.setObjectName("cancelRun")
        self.cancel_btn.clicked.connect(self.cancel_run)
        self.cancel_btn.hide()
        sb.addPermanentWidget(self.progress_label)
        sb.addPermanentWidget(self.progress)
        sb.addPermanentWidget(self.cancel_btn)

    def _timeline_tab(self) -> QWidget:
        """The replay timeline, the "Compare with" runs and their comparison table."""
        page = QWidget(self)
        page.setObjectName("timelinePage")
        pl = QVBoxLayout(page)
        pl.setContentsMargins(0, 0, 0, 0)
        pl.setSpacing(2)
        # -- comparison: the current run plus any strategy ticked here or typed as NAME:K=V,...
        crow = QHBoxLayout()
        crow.setContentsMargins(4, 2, 4, 0)
        lab = QLabel("Compare with:", page)
        lab.setToolTip("Replay the same conversation under other strategies or parameter sets; their 'sent' "
                       "curves are overlaid and the table below compares them")
        crow.addWidget(lab)
        self.compare_boxes: dict[str, QCheckBox] = {}
        for name in strategies.available() or ["s08"]:
            cb = QCheckBox(name, page)
            cb.setObjectName(f"compare_{name}")
            cb.setToolTip(f"also replay with {name} and its default parameters")
            cb.toggled.connect(self._compare_changed)
            crow.addWidget(cb)
            self.compare_boxes[name] = cb
        self.compare_extra = QLineEdit(page)
        self.compare_extra.setObjectName("compareExtra")
        self.compare_extra.setPlaceholderText("more runs: [LABEL=]NAME:KEY=VALUE,...; ...  (Enter)")
        self.compare_extra.setToolTip("e.g.  small=s08:context_limit=20000; hermes:context_length=32000\n"
                                      "Runs separated by ';', each a strategy with optional parameters")
        self.compare_extra.returnPressed.connect(self._compare_changed)
        self.compare_extra.setMinimumWidth(40)
        crow.addStretch(1)
        self.compare_button = QPushButton("Compare", page)
        self.compare_button.setObjectName("compareButton")
        self.compare_button.setToolTip("Replay every run and overlay the curves (runs in the background)")
        self.compare_button.clicked.connect(self.run_replay)
        crow.addWidget(self.compare_button)
        self.follow_box = QCheckBox("follow", page)
        self.follow_box.setObjectName("followCalls")
        self.follow_box.setChecked(True)
        self.follow_box.setToolTip("The stepper and the message list follow the timeline cursor: the context of the "
                                   "selected (or playing) model call, layer by layer, as if live")
        crow.addWidget(self.follow_box)
        pl.addLayout(crow)
        erow = QHBoxLayout()
        erow.setContentsMargins(4, 0, 4, 0)
        erow.addWidget(self.compare_extra, 1)
        pl.addLayout(erow)
        self.timeline = TimelineWidget(page)
        self.timeline.sigCallSelected.connect(self._timeline_call_selected)
        self.comparison = ComparisonTable(page)
        self.comparison.setMinimumHeight(60)
        tsplit = QSplitter(Qt.Vertical, page)
        tsplit.addWidget(self.timeline)
        tsplit.addWidget(self.comparison)
        tsplit.setStretchFactor(0, 4)
        tsplit.setStretchFactor(1, 1)
        pl.addWidget(tsplit, 1)
        self.replay_runner = TaskRunner(self)
        self.replay_runner.sigDone.connect(self._replay_done)
        self.replay_runner.sigFailed.connect(self._replay_failed)
        self._compare_timer = QTimer(self)
        self._compare_timer.setSingleShot(True)
        self._compare_timer.setInterval(150)
        self._compare_timer.timeout.connect(self.run_replay)
        self.replay_result = None
        self.replay_results: list = []
        self._replay_iters: list = []      # replay_result.iterations(), per call
        self._replay_stale = True
        area = QScrollArea(self)           # a narrow centre pane scrolls instead of widening the window
        area.setWidgetResizable(True)
        area.setWidget(page)
        area.setMinimumWidth(50)
        return area

    def _dock(self, title: str, w: QWidget, area) -> QDockWidget:
        d = QDockWidget(title, self)
        d.setObjectName("dock_" + w.objectName())
        d.setWidget(w)
        self.addDockWidget(area, d)
        return d

    def _actions(self) -> None:
        mb = self.menuBar()
        fm = mb.addMenu("&File")
        a = fm.addAction("&Open\u2026", self.open_dialog)
        a.setShortcut(QKeySequence.Open)
        self.recent_menu = fm.addMenu("Open &Recent")
        self.examples_menu = fm.addMenu("Open &Example")
        for p in sorted(EXAMPLES.glob("*.json")):
            self.examples_menu.addAction(p.name, lambda p=p: self.open_path(str(p)))
        fm.addSeparator()
        fm.addAction("Save &Screenshot\u2026", self._save_screenshot_dialog)
        fm.addSeparator()
        q = fm.addAction("&Quit", self.close)
        q.setShortcut(QKeySequence.Quit)
        self._rebuild_recent()
        vm = mb.addMenu("&View")
        for text, keys, slot in (("Zoom &In", [QKeySequence.ZoomIn, QKeySequence("Ctrl+=")], lambda: self.set_zoom(self.zoom + 1)),
                                 ("Zoom &Out", [QKeySequence.ZoomOut], lambda: self.set_zoom(self.zoom - 1)),
                                 ("&Reset Zoom", [QKeySequence("Ctrl+0")], lambda: self.set_zoom(0))):
            a = vm.addAction(text, slot)
            a.setShortcuts(keys)
        self.dark_action = vm.addAction("&Dark palette", lambda: self.set_dark(self.dark_action.isChecked()))
        self.dark_action.setCheckable(True)
        self.dark_action.setShortcut(QKeySequence("Ctrl+Shift+D"))
        vm.addSeparator()
        for d in (self.dock_inspector, self.dock_params, self.dock_chart, self.dock_findings):
            vm.addAction(d.toggleViewAction())
        # -- Live menu (issue 7, app/live.py): agent, recording proxy and follow mode in a dock
        install_menu(self)
        nm = mb.addMenu("&Navigate")
        a = nm.addAction("&Find\u2026", self.focus_search)
        a.setShortcut(QKeySequence.Find)
        a = nm.addAction("Find &Next", lambda: self.next_match(1))
        a.setShortcut(QKeySequence.FindNext)
        a = nm.addAction("Find &Previous", lambda: self.next_match(-1))
        a.setShortcut(QKeySequence.FindPrevious)
        a = nm.addAction("Jump to tool &partner", self.jump_to_partner)
        a.setShortcut(QKeySequence("Ctrl+J"))
        a = nm.addAction("Run the pipeline &again", self.run_pipeline)
        a.setShortcut(QKeySequence("F5"))
        # stepping keys: window shortcuts (text fields keep their own arrows)
        # (in the timeline, arrows and Home/End move its cursor over the model calls instead)
        for key, slot in ((Qt.Key_Right, lambda: self._arrow(1)), (Qt.Key_Left, lambda: self._arrow(-1)),
                          (Qt.Key_Home, lambda: self._arrow("home")), (Qt.Key_End, lambda: self._arrow("end")),
                          (Qt.Key_P, self.stepper.toggle_play)):
            sc = QShortcut(QKeySequence(key), self)
            sc.setContext(Qt.WindowShortcut)
            sc.activated.connect(slot)

    def _timeline_focused(self) -> bool:
        w = QApplication.focusWidget()
        while w is not None:
            if w is self.timeline:
                return True
            w = w.parentWidget()
        return False

    def _arrow(self, d) -> None:
        if self._timeline_focused():
            if d == "home":
                self.timeline.set_cursor(0, emit=True)
            elif d == "end":
                self.timeline.set_cursor(self.timeline._n - 1, emit=True)
            else:
                self.timeline.step(d)
            return
        if d == "home":
            self.stepper.first()
        elif d == "end":
            self.stepper.last()
        else:
            self.stepper.step(d)

    # ================================================================== settings
    def _saved_params(self, strategy) -> dict:
        saved = self.settings.params(strategy.name)
        out = {}
        for k, v in saved.items():
            try:
                out[k] = strategy.param(k).coerce(v)
            except (KeyError, ValueError):
                continue
        return strategy.resolve(out)

    def _restore(self) -> None:
        geo, state, split = self.settings.layout()
        if isinstance(geo, QByteArray) and not geo.isEmpty():
            self.restoreGeometry(geo)
        else:
            self.resize(1400, 900)
        if isinstance(state, QByteArray) and not state.isEmpty():
            self.restoreState(state)
        if isinstance(split, QByteArray) and not split.isEmpty():
            self.splitter.restoreState(split)
        self.set_zoom(self.settings.zoom(), save=False)
        if self.settings.dark():
            self.dark_action.setChecked(True)
            self.set_dark(True, save=False)
        else:
            self.set_dark(False, save=False)

    def closeEvent(self, e) -> None:
        self.runner.cancel()
        self.settings.save_layout(self.saveGeometry(), self.saveState(), self.splitter.saveState())
        self.settings.sync()
        super().closeEvent(e)

    def _rebuild_recent(self) -> None:
        self.recent_menu.clear()
        files = self.settings.recent_files()
        for f in files:
            self.recent_menu.addAction(f, lambda f=f: self.open_path(f))
        if files:
            self.recent_menu.addSeparator()
            self.recent_menu.addAction("Clear", lambda: (self.settings.clear_recent(), self._rebuild_recent()))
        self.recent_menu.setEnabled(bool(files))

    # ================================================================== open
    def open_dialog(self) -> None:
        start = str(Path(self.path).parent) if self.path else str(EXAMPLES)
        path, _ = QFileDialog.getOpenFileName(self, "Open a transcript", start,
                                              "Transcripts (*.json *.jsonl *.eval *.db *.sqlite);;All files (*)")
        if path:
            self.open_path(path)

    def open_default(self) -> bool:
        if DEFAULT_EXAMPLE.is_file():
            return self.open_path(str(DEFAULT_EXAMPLE), remember=False)
        self.show_error("No file is open and the bundled example is missing.",
                        f"Open a transcript with File > Open, or run assets/examples/generate.py to create "
                        f"{DEFAULT_EXAMPLE.name}.")
        return False

    def open_path(self, path: str, remember: bool = True, conversation: int = 0) -> bool:
        try:
            result = load(path)
        except LoadError as e:
            self.show_error(f"Could not open {path}: {e}",
                            "Check that the file is a Claude Code session, an Anthropic or OpenAI message list, an "
                            "Inspect log, a Hermes session or a Compactscope recording (compactscope info FILE "
                            "says what it sees).")
            return False
        except OSError as e:
            self.show_error(f"Could not read {path}: {e.strerror or e}", "Check the path and the file's permissions.")
            return False
        if not result.conversations:
            self.show_error(f"{path} holds no conversation.", "Open another file.")
            return False
        # a loaded transcript is long-lived and has no cycles: keep the cyclic GC from rescanning its
        # 100k+ objects on every collection (a 10k-message list otherwise makes each step ~3x slower)
        gc.freeze()
        self.path = str(path)
        self.load_result = result
        self.hide_error()
        if remember:
            self.settings.add_recent(self.path)
            self._rebuild_recent()
        conv = result.conversations[min(conversation, len(result.conversations) - 1)]
        self.set_conversation(conv, title=Path(path).name)
        if result.problems:
            self.statusBar().showMessage(f"{len(result.problems)} problem(s) while loading: {result.problems[0]}",
                                         10000)
        return True

    def show_trace(self, conv, trace) -> None:
        """Show a trace made elsewhere (the live agent's own run) without re-running the pipeline."""
        self.runner.cancel()
        self.runner.current = None
        self.conversation = conv
        self.setWindowTitle(f"Compactscope \u2014 {conv.title}")
        self._pipeline_done(None, PipelineResult(trace, params=dict(trace.params)))

    def set_conversation(self, conv, title: str = "") -> None:
        self.conversation = conv
        self.trace = None
        self.result = None
        self.setWindowTitle(f"Compactscope \u2014 {title or conv.title or 'conversation'}")
        n = len(conv.messages)
        # first screen: the original at once, the pipeline follows in the background
        self.stepper.set_stages([("original", "Original", "original")],
                                [f"{n} messages as loaded; the pipeline is running\u2026"], keep=False)
        self.model.set_messages(conv.messages)
        self.diff_model.set_step(None)
        self.edits.set_step(None)
        self.inspector.clear()
        self._update_status(conv.messages)
        # start the run after the first screen is painted (the worker would compete for the GIL)
        self._run_scheduled = True
        QTimer.singleShot(0, self._scheduled_run)

    def _scheduled_run(self) -> None:
        if self._run_scheduled:
            self._run_scheduled = False
            self.run_pipeline()

    # ================================================================== run
    def _summarizer(self):
        spec = self.params_panel.summarizer()
        if spec not in self.summarizers:
            self.summarizers[spec] = make_summarizer(spec)
        return self.summarizers[spec]

    def run_pipeline(self) -> None:
        self._run_scheduled = False
        self._call_job = self._call_wanted = None
        self.shown_call = None
        if self.conversation is None:
            return
        try:
            summ = self._summarizer()
        except (ValueError, ImportError) as e:
            self.show_error(f"Summarizer: {e}", "Choose offline, anthropic[:MODEL] or fixed:TEXT in the "
                                                "strategy panel.")
            return
        slow = any(l.llm for l in self.strategy.layers) and "anthropic" in self.params_panel.summarizer()
        self._run_text = "running " + self.strategy.name + (" (an LLM may summarise)" if slow else "")
        self.progress_label.setText(self._run_text)
        self._elapsed_timer.start()
        self.progress.show()
        self.cancel_btn.show()
        self.progress_label.show()
        self._replay_stale = True
        if self.tabs.tabText(self.tabs.currentIndex()) == "Timeline":
            QTimer.singleShot(0, self.run_replay)
        engine = Engine(self.strategy, dict(self.params), workspace=self.workspace, summarizer=summ, meter=self.meter)
        conv = self.conversation

        def job(cancel=None, progress=None):
            return run_with_variants(engine, conv.messages, conv, cancel=cancel, progress=progress)
        self.runner.start(job, progress=True)

    def cancel_run(self) -> None:
        self.runner.cancel()
        self.replay_runner.cancel()
        self.progress_label.setText("cancelling after the current layer\u2026")

    def _pipeline_progress(self, tid, text: str) -> None:
        self._run_text = f"running {self.strategy.name}: {text}"
        self._tick_elapsed()

    def _tick_elapsed(self) -> None:
        if not self.runner.busy:
            self._elapsed_timer.stop()
            return
        import time
        dt = time.perf_counter() - self.runner.started_at
        self.progress_label.setText(f"{self._run_text}\u2026 {dt:.1f} s")

    def _run_finished_ui(self) -> None:
        self._elapsed_timer.stop()
        self.progress.hide()
        self.cancel_btn.hide()
        self.progress_label.setText("")

    def _pipeline_failed(self, tid, exc) -> None:
        self._run_finished_ui()
        self._call_job = None
        hint = getattr(exc, "hint", "") or "Check the parameters; if it persists, report it with the file."
        self.show_error(f"The pipeline failed: {type(exc).__name__}: {exc}", hint)

    def _pipeline_done(self, tid, result) -> None:
        self._run_finished_ui()
        # the selection, as an index into the input, so it survives the re-run
        cur = self.view.currentIndex()
        sel0 = None
        if cur.isValid():
            sel_i = cur.data(IndexRole)
            if self.trace is not None and self.trace.input is result.trace.input and self._shown_stage is not None:
                sel0 = self.map_index(sel_i, self._shown_stage, 0)
            elif self.trace is None:
                sel0 = sel_i
        self.result = result
        self.trace = result.trace
        self._align_cache = {}
        self._sel_override = sel0
        self._rerun_pending = True
        self.runs += 1
        tr = self.trace
        labels, statuses, expl = ["Original"], ["original"], [
            f"{len(tr.input)} messages, {fmt(tr.steps[0].size_before if tr.steps else 0)} chars as loaded"
            + (f"; {len(tr.input_findings)} API finding(s)" if tr.input_findings else "")]
        for s in tr.steps:
            labels.append(stage_label(self.strategy, s.layer))
            statuses.append("failed" if s.error else "changed" if s.changed else "unchanged")
            expl.append(s.explain())
        stages = [(n, labels[k], statuses[k]) for k, (n, _) in enumerate(tr.stages())]
        keep = self.stage
        self.stepper.blockSignals(True)
        self.stepper.current = min(keep, len(stages) - 1)
        self.stepper.set_stages(stages, expl, keep=True)
        self.stepper.blockSignals(False)
        sizes = [tr.steps[0].size_before if tr.steps else self.meter.size(tr.input)] + \
            [s.size_after for s in tr.steps]
        tokens = [tr.steps[0].tokens_before if tr.steps else 0] + [s.tokens_after for s in tr.steps]
        th = self.strategy.threshold
        try:
            value = th.value(self.params)
        except Exception:   # noqa: BLE001 - the chart line is optional
            value = None
        self.chart.set_series(labels, sizes, tokens, value, th.unit, th.label, movable=th.movable)
        failed = [s for s in tr.steps if s.error]
        if failed:
            s = failed[0]
            hint = ""
            if s.summary and s.summary.get("kind"):
                hint = f"(error kind: {s.summary['kind']}) "
            self.show_error(f"{s.layer} failed: {s.error}",
                            hint + "The step is marked failed and its input is kept unchanged; nothing is lost. "
                                   "Fix the cause (API key, network) or pick the offline summarizer, then press F5.")
        elif result.cancelled:
            self.show_error(f"Cancelled after {len(tr.steps)} of {len(self.strategy.layers)} layer(s).",
                            "Press F5 to run the pipeline again.")
        else:
            self.hide_error()
        ci = result.call_index
        self.shown_call = ci
        self._call_job = None
        self.show_stage(self.stepper.current, force=True)
        self._check_oracle()
        if ci is not None:
            self.statusBar().showMessage(self.call_caption(ci) + " \u2014 the stepper shows the pipeline run "
                                         "before this call", 8000)
            QTimer.singleShot(0, self.view.scrollToBottom)     # as if live: the newest messages in view
            self.sigCallShown.emit(ci)
            want = self._call_wanted
            if want is not None and want != ci and self.follow_box.isChecked():
                self._start_call_job(want)
        self.sigTraceReady.emit(result)

    def _params_changed(self, values: dict) -> None:
        try:
            self.params = self.strategy.resolve(values)
        except (KeyError, ValueError) as e:
            self.show_error(f"Parameter: {e}", "Correct the value in the parameter panel.")
            return
        self.settings.set_params(self.strategy.name, {k: v for k, v in self.params.items()
                                                      if v != self.strategy.param(k).default})
        self.run_pipeline()

    def _threshold_dragged(self, value: float) -> None:
        if not self.strategy.threshold.movable:
            return
        new = self.strategy.drag_threshold(value, self.params)
        for k, v in new.items():
            if v != self.params.get(k):
                self.params_panel.set_value(k, v)
        self._params_changed(self.params_panel.values())

    def set_strategy(self, name: str) -> None:
        try:
            st = strategies.get(name)
        except (KeyError, ImportError) as e:
            self.show_error(f"Strategy {name}: {e}", "Pick another strategy.")
            return
        self.strategy = st
        self.params = self._saved_params(st)
        self.settings.set("strategy", name)
        self.params_panel.set_strategy(st, self.params)
        self.run_pipeline()

    # ================================================================== stages
    def rows_of(self, step) -> list:
        """core.align rows of a step, computed once per step."""
        hit = self._align_cache.get(id(step))
        if hit is None or hit[0] is not step:
            hit = (step, align(step))
            self._align_cache[id(step)] = hit
        return hit[1]

    def current_step(self):
        if self.trace is None or self.stage <= 0 or self.stage > len(self.trace.steps):
            return None
        return self.trace.steps[self.stage - 1]

    def stage_messages(self, k: int) -> list:
        if self.trace is None:
            return self.conversation.messages if self.conversation else []
        return self.trace.stages()[k][1]

    def stage_findings(self, k: int) -> list:
        if self.trace is None:
            return []
        return self.trace.input_findings if k <= 0 else self.trace.steps[k - 1].findings

    def set_view_mode(self, mode: str) -> None:
        self.view_mode = mode
        if self.mode_box.currentIndex() != (1 if mode == "before" else 0):
            self.mode_box.setCurrentIndex(1 if mode == "before" else 0)
        self.show_stage(self.stage, force=True)

    def show_stage(self, k: int, force: bool = False) -> None:
        if k < 0:
            return
        if k == self.stage and not force and self.trace is not None and self.model.messages:
            return
        self.stage = k
        step = self.current_step()
        sel = self.view.currentIndex().data(IndexRole) if self.view.currentIndex().isValid() else None
        old_shown = self._shown_stage
        if self._rerun_pending:           # a new trace: the selection was saved as an input index
            sel, old_shown = self._sel_override, 0
            self._sel_override, self._rerun_pending = None, False
        if step is None:
            msgs = self.stage_messages(0)
            self.model.set_messages(msgs, findings=self.stage_findings(0))
            self.diff_model.set_step(None)
        else:
            rows = self.rows_of(step)
            cuts_before, cuts_after = self._cuts(step)
            if self.view_mode == "before":
                status = {r.left: r.kind for r in rows if r.left is not None and r.kind in (REMOVED, CHANGED,
                                                                                          DUPLICATED)}
                self.model.set_messages(step.input, status=status, findings=self.stage_findings(k - 1),
                                        cuts=cuts_before)
                msgs = step.input
            else:
                status = {r.right: r.kind for r in rows if r.right is not None and r.kind in (INSERTED, CHANGED,
                                                                                            DUPLICATED)}
                badges = {}
                if step.summary and step.summary.get("summarizer"):
                    for e in step.edits:
                        if e.kind == "summary" and e.out is not None:
                            badges[e.out] = ("summary by " + str(step.summary["summarizer"]).split(" (")[0]
                                             + (" (cached)" if step.summary.get("cached") else ""))
                self.model.set_messages(step.messages, status=status, findings=step.findings, cuts=cuts_after,
                                        badges=badges)
                msgs = step.messages
            self.diff_model.set_step(step, rows)
            QTimer.singleShot(0, self.diff.scroll_to_first_change)
        self._show_edits(step)
        vr = self.result.variants[0] if self.result and self.result.variants else None
        self.explainer.set_steps(step if is_snip_step(step) else self._snip_step(), vr, self.strategy.name)
        self._boundary_tab_title()
        self._update_diff_counts()
        self.diff.setVisible(step is not None)
        self.findings.set_findings(self.stage_findings(k), ("after " + stage_label(self.strategy, step.layer))
                                   if step else "in the conversation as loaded")
        self.chart.set_stage(k)
        self.chart.set_messages(msgs)
        self._update_status(msgs)
        if self.model.search_text:
            self._update_match_label()
        self._shown_stage = k if (step is None or self.view_mode == "after") else k - 1
        if sel is not None and old_shown is not None:
            # keep the same message selected across stages: follow it through the layers' origin maps
            same = self.map_index(sel, old_shown, self._shown_stage)
            if same is not None:
                self.view.select_message(same)
        elif self.model.status:
            # nothing selected: show the first message this layer changed
            first = min(self.model.status)
            self.view.select_message(first)
        self.sigStageShown.emit(k)

    def map_index(self, i: int, a: int, b: int) -> int | None:
        """Index in stage b's messages of message i of stage a (None when a layer removed it)."""
        return None if self.trace is None else self.trace.map_index(i, a, b)

    def _snip_step(self):
        """The step the boundary tab explains (a snip that cut, hermes's boundaries, ...)."""
        return find_boundary_step(self.trace)

    def _boundary_tab_title(self) -> None:
        ex = self.explainer.explanation
        title = ex.tab_title if ex is not None else "Snip boundary"
        k = self.tabs.indexOf(self.explainer)
        if k >= 0 and self.tabs.tabText(k) != title:
            self.tabs.setTabText(k, title)

    def _show_edits(self, step) -> None:
        """The edit list of the shown step (on Original: every layer at a glance), then the oracle row."""
        if step is None:
            self.edits.set_step(None, overview=[(s[1], s[2], self.stepper._explanations[j])
                                                for j, s in enumerate(self.stepper.stages) if j > 0])
        else:
            self.edits.set_step(step, stage_label(self.strategy, step.layer))
        self._oracle_row()

    def _cross_check(self):
        """The strategy's cross-check when the shown trace is a run of it (None otherwise)."""
        cc = self.strategy.cross_check
        return cc if cc is not None and self.trace is not None and self.trace.strategy == self.strategy.name \
            else None

    def _oracle_row(self) -> None:
        """The cross-check verdict as the last line of the step explanation (strategies that have one)."""
        cc = self._cross_check()
        if cc is None:
            return
        v = self.oracle_verdict
        if v is None:
            self.edits.add_note(f"{cc.name} cross-check: running\u2026", "#64748b")
        else:
            self.edits.add_note(("\u2714 " if v.ok else "") + f"{cc.name} cross-check of this run: {v.text}",
                                "#15803d" if v.ok else "#b91c1c" if v.failed else "#64748b")

    def _cuts(self, step) -> tuple[dict, dict]:
        """Head and tail cut lines for the message view (before and after the layer)."""
        return cut_lines(step)

    # ================================================================== selection
    def select_message(self, mi: int) -> bool:
        if mi is None:
            return False
        if not self.view.select_message(mi):
            # filtered out: clear filters so the message can be shown
            self.role_filter.setCurrentIndex(0)
            self.block_filter.setCurrentIndex(0)
            self.changed_only.setChecked(False)
            self.matches_only.setChecked(False)
            return self.view.select_message(mi)
        return True

    def _message_selected(self, mi: int) -> None:
        msgs = self.model.messages
        if not 0 <= mi < len(msgs):
            return
        self.model.set_highlight(self.model.partners_of(mi))
        self.chart.set_selected(mi)
        where = "(before the layer)" if self.view_mode == "before" and self.current_step() else ""
        self.inspector.show_message(mi, msgs[mi], None, where)

    def _block_selected(self, mi: int, block: int) -> None:
        msgs = self.model.messages
        if not 0 <= mi < len(msgs):
            return
        partners = self.model.partners_of(mi, block) if block >= 0 else self.model.partners_of(mi)
        self.model.set_highlight(partners or self.model.partners_of(mi))
        self.inspector.show_message(mi, msgs[mi], block if block >= 0 else None)

    def jump_to_partner(self) -> bool:
        cur = self.view.currentIndex()
        if not cur.isValid():
            return False
        mi = cur.data(IndexRole)
        sb = self.model.selected_block
        partners = self.model.partners_of(mi, sb[1]) if sb and sb[0] == mi and sb[1] is not None else set()
        partners = partners or self.model.partners_of(mi)
        if not partners:
            self.statusBar().showMessage(f"message #{mi} holds no tool pair", 4000)
            return False
        later = sorted(p for p in partners if p > mi)
        target = later[0] if later else sorted(partners)[0]
        keep = set(self.model.highlight) | {mi}
        ok = self.select_message(target)
        self.model.set_highlight(keep - {target})
        return ok

    def _diff_selected(self, col: int, i: int) -> None:
        step = self.current_step()
        if step is None:
            return
        msgs = step.input if col == 0 else step.messages
        if 0 <= i < len(msgs):
            self.inspector.show_message(i, msgs[i], None, "(before the layer)" if col == 0 else "(after the layer)")
            if (col == 0) == (self.view_mode == "before"):
                self.view.select_message(i)

    def _diff_changes_only(self, on: bool) -> None:
        self.diff_model.set_changes_only(on)
        QTimer.singleShot(0, self.diff.scroll_to_first_change)

    def _update_diff_counts(self) -> None:
        if self.diff_model.step is None:
            self.diff_counts.setText("Original: step right (\u2192) to see what each layer did")
            return
        c = self.diff_model.counts()
        parts = [f"<span style='color:{col}'><b>{c[k]}</b> {k}</span>"
                 for k, col in (("kept", "#64748b"), ("changed", "#b45309"), ("removed", "#dc2626"),
                                ("inserted", "#16a34a"), ("duplicated", "#9333ea")) if c.get(k)]
        self.diff_counts.setText("messages: " + " \u00b7 ".join(parts) if parts else "no messages")

    def _edit_clicked(self, k: int) -> None:
        m = self.diff_model
        for row, r in enumerate(m.rows):
            if k in r.edits:
                self.diff.setCurrentIndex(m.index(row, 0 if r.left is not None else 1))
                self.diff.scrollTo(m.index(row, 0))
                return

    # ------------------------------------------------------------ replay timeline
    def _tab_changed(self, k: int) -> None:
        if self.tabs.widget(k) is not None and self.tabs.tabText(k) == "Timeline" and self._replay_stale:
            self.run_replay()

    def compare_configs(self) -> list:
        """The runs the timeline replays (``core.strategies.spec.compare_runs``): the current strategy
        and parameters first, then every strategy ticked under "Compare with" (its defaults) and every
        run typed in the field."""
        from compactscope.core.strategies.spec import compare_runs
        return compare_runs(self.strategy, self.params, [n for n, cb in self.compare_boxes.items() if cb.isChecked()],
                            self.compare_extra.text())

    def _compare_changed(self, *_) -> None:
        self._replay_stale = True
        if self.tabs.tabText(self.tabs.currentIndex()) == "Timeline":
            self._compare_timer.start()          # one replay for several ticks in a row

    def set_compare(self, spec: str) -> None:
        """Runs to compare, ';'-separated: a bare strategy name ticks its box, anything else
        ([LABEL=]NAME:K=V,...) goes to the "more runs" field."""
        extra = []
        names = set()
        for part in filter(None, (x.strip() for x in spec.split(";"))):
            if part in self.compare_boxes:
                names.add(part)
            else:
                extra.append(part)
        for name, cb in self.compare_boxes.items():
            cb.setChecked(name in names)
        self.compare_extra.setText("; ".join(extra))
        self._compare_changed()

    def run_replay(self) -> None:
        """core.replay over the conversation's life for every run to compare, in a worker (only while
        the Timeline tab is open): the curves are overlaid and the comparison table filled."""
        if self.conversation is None:
            return
        from compactscope.core.replay import compare
        try:
            configs = self.compare_configs()
        except (KeyError, ValueError, ImportError) as e:
            self.show_error(f"Compare: {e.args[0] if e.args else e}",
                            "Write each run as NAME or [LABEL=]NAME:KEY=VALUE,... separated by ';' "
                            f"(strategies: {', '.join(strategies.available())}).")
            return
        self._replay_stale = False
        n = len(configs)
        self.progress_label.setText(f"replaying every model call ({n} run{'s' if n > 1 else ''})\u2026")
        self.progress.show()
        self.cancel_btn.show()
        conv, summ, ws = self.conversation, self._summarizer(), self.workspace
        self.timeline.play(False)

        def job(cancel=None):
            return compare(conv, configs, workspace=ws, summarizer=summ, cancel=cancel)
        self.replay_runner.start(job)

    def _replay_failed(self, tid, e) -> None:
        if not self.runner.busy:
            self._run_finished_ui()
        self.show_error(f"The replay failed: {type(e).__name__}: {e}", getattr(e, "hint", "") or
                        "Press F5 to try again.")

    def _replay_done(self, tid, results) -> None:
        if not self.runner.busy:
            self._run_finished_ui()
        self.replay_results = results
        self.replay_result = results[0] if results else None
        self._replay_iters = self.replay_result.iterations() if self.replay_result is not None else []
        self.timeline.set_replays(results)
        self.comparison.set_results(results)
        self.shown_call = None
        self.sigReplayReady.emit(self.replay_result)

    def _timeline_call_selected(self, i: int) -> None:
        """Open the pipeline run before model call i in the stepper and the message list. While the
        timeline plays, calls arrive faster than they run: only the newest one waits (coalesced)."""
        rr = self.replay_result
        if rr is None or not 0 <= i < len(rr.calls) or not self.follow_box.isChecked():
            return
        self._call_wanted = i
        if self._call_job is None:
            self._start_call_job(i)

    def _start_call_job(self, i: int) -> None:
        rr = self.replay_result

        def job(cancel=None):
            import time
            t0 = time.perf_counter()
            tr = rr.rerun(i, cancel=cancel)
            cancelled = bool(cancel is not None and cancel.is_set())
            return PipelineResult(tr, seconds=time.perf_counter() - t0, cancelled=cancelled, params=dict(rr.params),
                                  call_index=i)
        self._call_job = i
        self.runner.start(job)

    def call_caption(self, i: int) -> str:
        rr = self.replay_result
        if rr is None or not 0 <= i < len(rr.calls):
            return ""
        c = rr.calls[i]
        it = self._replay_iters[i]
        fired = ", ".join(c.fired) if c.fired else "nothing fired"
        return (f"model call #{i} of {len(rr.calls)} (before message #{c.message_index}): "
                f"{c.messages_before} \u2192 {c.messages_after} messages, {fmt(c.tokens_before)} \u2192 "
                f"{fmt(c.tokens_after)} tokens; {fired}; user turn {it['turn']}: iterations "
                f"{it['used']}/{rr.iteration_cap}"
                + (f" (+{it['refunded']} refunded)" if it["refunded"] else "")
                + (" \u2014 over the iteration cap" if it["refused"] else ""))

    # ------------------------------------------------------------ hermes-agent cross-check
    def _check_oracle(self) -> None:
        tr = self.trace
        cc = self._cross_check()
        if cc is None:
            self.oracle_text = self.oracle_verdict = None
            self.oracle_label.hide()
            self.explainer.set_oracle(None)
            return
        self._oracle_wanted = tr
        if self._oracle_trace is None:
            self._start_oracle(cc, tr)

    def _start_oracle(self, cc, tr) -> None:
        self._oracle_trace = tr
        self.oracle_text = self.oracle_verdict = None
        self.oracle_label.setText(f"{cc.name} cross-check: running\u2026")
        self.oracle_label.setStyleSheet("color: #64748b")
        self.oracle_label.show()

        def job(cancel=None):
            return cc.run(tr)
        self.oracle_runner.start(job)

    def _oracle_done(self, tid, verdict) -> None:
        checked, self._oracle_trace = self._oracle_trace, None
        cc = self._cross_check()
        if cc is not None and self._oracle_wanted is not None and self._oracle_wanted is not checked:
            self._start_oracle(cc, self._oracle_wanted)       # a newer run arrived meanwhile
            return
        if checked is not self.trace or cc is None:
            return
        self._oracle_wanted = None
        if not isinstance(verdict, Verdict):
            verdict = Verdict(DIFFER, str(verdict))
        self.oracle_verdict = verdict
        self.oracle_text = text = verdict.text
        short = text if len(text) <= 90 else text[:87] + "\u2026"
        self.oracle_label.setText(("\u2714 " if verdict.ok else "\u2716 " if verdict.failed else "") + short)
        self.oracle_label.setToolTip(f"{cc.name} cross-check: {text}\n\n{cc.description}")
        self.oracle_label.setStyleSheet("color: #15803d; font-weight: bold" if verdict.ok else
                                        "color: #b91c1c; font-weight: bold" if verdict.failed else "color: #64748b")
        self.oracle_label.show()
        self.explainer.set_oracle(verdict)
        self._show_edits(self.current_step())
        self.sigOracleReady.emit(text)

    def _resolve_persisted(self, text: str):
        m = PERSISTED_RE.search(text) if "<persisted-output>" in text else None
        if not m:
            return None
        rel = m.group(1)
        content = self.workspace.read_persisted(rel)
        path = self.workspace.root / rel
        if content is None and self.trace is not None:
            for s in self.trace.steps:
                for e in s.edits:
                    if e.kind == "persist" and e.path and e.path.endswith(Path(rel).name):
                        try:
                            content = Path(e.path).read_text(encoding="utf-8", errors="replace")
                            path = e.path
                        except OSError:
                            pass
        if content is None:
            return (str(path), f"(the persisted file {rel} is not in this session's workspace {self.workspace.root})")
        return str(path), content

    # ================================================================== search and filters
    def focus_search(self) -> None:
        self.search.setFocus()
        self.search.selectAll()

    def _search_changed(self, text: str) -> None:
        self.model.set_search(text)
        self._update_match_label()

    def _update_match_label(self) -> None:
        n = len(self.model.matches)
        self.match_label.setText(f"{n} match{'es' if n != 1 else ''}" if self.model.search_text else "")

    def next_match(self, d: int = 1) -> bool:
        matches = sorted(self.model.matches)
        if not matches:
            return False
        cur = self.view.currentIndex().data(IndexRole) if self.view.currentIndex().isValid() else -1
        if d > 0:
            nxt = next((m for m in matches if m > cur), matches[0])
        else:
            nxt = next((m for m in reversed(matches) if m < cur), matches[-1])
        return self.view.select_message(nxt)

    def _filters_changed(self, *_) -> None:
        role = self.role_filter.currentText()
        block = self.block_filter.currentText()
        self.model.set_filters(role="" if role.startswith("all") else role,
                               block="" if block.startswith("any") else block,
                               only_changed=self.changed_only.isChecked(),
                               only_matches=self.matches_only.isChecked())

    # ================================================================== look
    def set_zoom(self, z: float, save: bool = True) -> None:
        z = max(-4.0, min(16.0, float(z)))
        self.zoom = z
        pt = max(6.0, self._base_font_pt + z)
        f = QFont(self.font())
        f.setPointSizeF(pt)
        self.setFont(f)
        for w in (self.view, self.diff, self.edits, self.findings, self.explainer, self.stepper):
            w.setFont(f)
        self.chart.set_font_size(pt)
        mono = QFont(self.inspector.text.font())
        mono.setPointSizeF(pt)
        for e in (self.inspector.text, self.inspector.json, self.inspector.persisted):
            e.setFont(mono)
        self.view.doItemsLayout()
        if save:
            self.settings.set("view/zoom", z)

    def set_dark(self, on: bool, save: bool = True) -> None:
        app = QApplication.instance()
        app.setStyle("Fusion")
        pal = dark_palette() if on else light_palette()
        app.setPalette(pal)
        self.setPalette(pal)
        self.chart.set_theme(pal.color(QPalette.Base), pal.color(QPalette.Text))
        if save:
            self.settings.set("view/dark", on)
        self.view.viewport().update()

    def _update_status(self, msgs: list) -> None:
        tr = self.trace
        tok_name = tr.token_estimator if tr else "chars/4"
        size_name = tr.size_estimator if tr else "len(str(messages))"
        step = self.current_step()        # None without a trace
        size = tokens = None
        if step is not None:
            before = self.view_mode == "before"
            size = step.size_before if before else step.size_after
            tokens = step.tokens_before if before else step.tokens_after
        elif tr is not None and tr.steps:
            size, tokens = tr.steps[0].size_before, tr.steps[0].tokens_before
        run = f" \u00b7 run {self.runs}, {self.result.seconds * 1000:.0f} ms" if self.result else ""
        rr = self.replay_result
        if self.shown_call is not None and rr is not None:
            run += f" \u00b7 model call #{self.shown_call} of {len(rr.calls)}"
        self.status_label.setText(
            f"{len(msgs):,} messages \u00b7 "
            + (f"{fmt(size)} chars ({size_name})" if size is not None else "size: computing\u2026") + " \u00b7 "
            + (f"{fmt(tokens)} tokens ({tok_name})" if tokens is not None else "tokens: computing\u2026")
            + f" \u00b7 strategy {self.strategy.name}{run}")

    # ================================================================== errors
    def show_error(self, what: str, todo: str = "") -> None:
        self.banner.setText(f"<b>{html.escape(str(what), quote=False)}</b>"
                            + (f"<br>What to do: {html.escape(str(todo), quote=False)}" if todo else ""))
        self.banner.show()
        self.last_error = what
        self.sigError.emit(what)

    def hide_error(self) -> None:
        self.banner.hide()

    # ================================================================== drag and drop
    def dragEnterEvent(self, e) -> None:
        if e.mimeData().hasUrls() and any(u.isLocalFile() for u in e.mimeData().urls()):
            e.acceptProposedAction()
        else:
            e.ignore()

    def dropEvent(self, e) -> None:
        for u in e.mimeData().urls():
            if u.isLocalFile():
                self.open_path(u.toLocalFile())
                e.acceptProposedAction()
                return

    # ================================================================== screenshot
    def _save_screenshot_dialog(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Save a screenshot", "compactscope.png", "PNG (*.png)")
        if path:
            self.grab().save(path)

    def wait_idle(self, ms: int = 60000) -> bool:
        """Process events until no pipeline run is pending (CLI screenshot, tests)."""
        import time
        t0 = time.perf_counter()
        app = QApplication.instance()
        while (self.runner.busy or self._run_scheduled or self.oracle_runner.busy or self.replay_runner.busy
               or self._compare_timer.isActive()):
            app.processEvents()
            if (time.perf_counter() - t0) * 1000 > ms:
                return False
            time.sleep(0.005)
        app.processEvents()
        return True


def light_palette() -> QPalette:
    app = QApplication.instance()
    return app.style().standardPalette() if app.style() else QPalette()


def dark_palette() -> QPalette:
    p = QPalette()
    c = {QPalette.Window: "#1f2430", QPalette.WindowText: "#e5e7eb", QPalette.Base: "#161a22",
         QPalette.AlternateBase: "#222834", QPalette.ToolTipBase: "#111827", QPalette.ToolTipText: "#e5e7eb",
         QPalette.Text: "#e5e7eb", QPalette.Button: "#2a3140", QPalette.ButtonText: "#e5e7eb",
         QPalette.BrightText: "#ffffff", QPalette.Highlight: "#3b82f6", QPalette.HighlightedText: "#ffffff",
         QPalette.Link: "#60a5fa", QPalette.PlaceholderText: "#9ca3af"}
    for role, col in c.items():
        p.setColor(role, QColor(col))
    p.setColor(QPalette.Disabled, QPalette.Text, QColor("#6b7280"))
    p.setColor(QPalette.Disabled, QPalette.ButtonText, QColor("#6b7280"))
    return p
