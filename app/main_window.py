"""The debugger window: wiring of the views to a ``core.session.Session``. No pipeline logic here.

The session holds everything the window shows and runs the pipeline, replays and cross-checks
through ``core.jobs`` workers on a Qt executor; ``QtSession`` turns its events into ``sig*``
signals. The window builds the views, sends the user's actions to the session (a threshold drag
is ``session.setup.drag_threshold``, a parameter edit ``session.setup.set_params``, a stage click
``session.view.set_stage``) and shows what the session says. It also keeps the settings (strategy,
parameters, summarizer, zoom, palette, layout, recent files).
"""
from __future__ import annotations

import html
import time
from pathlib import Path

from compactscope import asset_path

from PySide6.QtCore import QByteArray, Qt, QTimer, Signal
from PySide6.QtWidgets import (QApplication, QFileDialog, QLabel, QMainWindow, QSplitter,
                               QTabWidget, QVBoxLayout, QWidget)

from compactscope.core import strategies
from compactscope.core.session.model import TABS, Session, stage_label
from compactscope.core.files.workspace import Workspace
from compactscope.widgets.context_picker import ContextPicker
from compactscope.widgets.diff_panel import DiffPanel
from compactscope.widgets.explainer import SnipExplainer
from compactscope.widgets.message_panel import MessagePanel
from compactscope.widgets.stepper import LayerStepper
from compactscope.widgets.timeline_panel import TimelinePanel

from compactscope.app import strategy_files
from compactscope.app.actions import install_actions, rebuild_recent, rebuild_recent_strategies
from compactscope.app.docks import build_docks
from compactscope.app.session_qt import QtSession
from compactscope.app.settings import Settings
from compactscope.app.theme import apply_palette, apply_zoom
from compactscope.app.workers import QtExecutor, single_thread_executor
from compactscope.widgets.i18n import ct, ct_parts, tr

EXAMPLES = asset_path("examples")
DEFAULT_EXAMPLE = EXAMPLES / "long_session.json"
BANNER_STYLE = ("QLabel { background: #fee2e2; color: #7f1d1d; border: 1px solid #ef4444; border-radius: 4px; "
                "padding: 6px; }")


class MainWindow(QMainWindow):
    sigTraceReady = Signal(object)     # the PipelineResult shown (after the views show it)
    sigStageShown = Signal(int)
    sigError = Signal(str)
    sigReplayReady = Signal(object)
    sigOracleReady = Signal(str)       # the cross-check verdict of the shown run
    sigCallShown = Signal(int)         # the stepper now shows the pipeline run before this model call

    def __init__(self, settings: Settings | None = None, parent=None, workspace: Workspace | None = None):
        super().__init__(parent)
        self.setObjectName("mainWindow")
        self.setWindowTitle(tr("Compactscope"))
        self.setAcceptDrops(True)
        self.settings = settings or Settings()
        strategy = strategy_files.initial_strategy(self.settings)
        self.session = Session(workspace or Workspace(), QtExecutor(), single_thread_executor(self), strategy,
                               self._saved_params(strategy), str(self.settings.value("summarizer", "offline")))
        self.qsession = QtSession(self.session, self)
        self._base_font_pt = QApplication.font().pointSizeF() or 10.0
        self.zoom = 0.0
        self.last_error = ""
        self._load_problems: list = []    # the open file's load problems (listed under the API findings)
        self._compare_timer = QTimer(self)          # one replay for several ticks in a row
        self._compare_timer.setSingleShot(True)
        self._compare_timer.setInterval(150)
        self._compare_timer.timeout.connect(self.run_replay)
        from compactscope.app.presenter import PresenterMode
        self.presenter_mode = PresenterMode(self)
        from compactscope.app.language import ensure_cjk_font
        ensure_cjk_font()              # Chinese in a transcript draws on a machine without CJK fonts
        self._build()
        from compactscope.app.lessons import LessonController
        self.lesson_controller = LessonController(self)
        install_actions(self, EXAMPLES)
        from compactscope.app.events_dock import install_events
        install_events(self)           # the Events dock, F8 / Shift+F8 (issue 23)
        self._connect()
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
        self.banner.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.banner.setStyleSheet(BANNER_STYLE)
        self.banner.hide()
        outer.addWidget(self.banner)
        self.picker = ContextPicker(central)        # conversation, real context (segment), model call
        outer.addWidget(self.picker)
        self.stepper = LayerStepper(central)
        outer.addWidget(self.stepper)
        self.splitter = QSplitter(Qt.Orientation.Horizontal, central)
        self.splitter.setObjectName("mainSplitter")
        outer.addWidget(self.splitter, 1)
        self.messages = MessagePanel(self.splitter)
        self.messages.status_message = lambda t: self.statusBar().showMessage(t, 4000)
        self.tabs = QTabWidget(self.splitter)
        self.tabs.setObjectName("centerTabs")
        self.tabs.tabBar().setElideMode(Qt.TextElideMode.ElideNone)        # never "Timel..."; scroll arrows when narrow
        self.tabs.setUsesScrollButtons(True)
        self.diff_panel = DiffPanel()
        self.tabs.addTab(self.diff_panel, tr("Before / after"))
        self.explainer = SnipExplainer(self.tabs)
        self.tabs.addTab(self.explainer, tr("Snip boundary"))
        self.timeline_panel = TimelinePanel(strategies.available() or ["s08"], self)
        self.tabs.addTab(self.timeline_panel, tr("Timeline"))
        self.splitter.addWidget(self.messages)
        self.splitter.addWidget(self.tabs)
        self.splitter.setStretchFactor(0, 4)
        self.splitter.setStretchFactor(1, 5)
        self.splitter.setSizes([480, 600])
        self.setCentralWidget(central)
        build_docks(self)              # inspector, parameters, narration, chart, findings, status bar (app/docks.py)

    def _connect(self) -> None:
        s, q = self.session, self.qsession
        # what the user does -> the session
        self.stepper.sigStageChanged.connect(s.view.set_stage)
        self.messages.sigModeChanged.connect(s.view.set_view_mode)
        self.messages.sigFiltersChanged.connect(lambda f: s.view.set_filters(**f))
        self.messages.search.textChanged.connect(self._search_marks)     # the term marked in the diff and inspector
        self.messages.view.sigMessageSelected.connect(self._message_selected)
        self.messages.view.sigBlockSelected.connect(self._block_selected)
        self.diff_panel.view.sigMessageSelected.connect(self._diff_selected)
        self.params_panel.sigParamsChanged.connect(s.setup.set_params)
        self.params_panel.sigStrategyChanged.connect(self.set_strategy)
        self.params_panel.sigSummarizerChanged.connect(s.setup.set_summarizer)
        self.params_panel.sigVariantChanged.connect(s.setup.set_variant)
        self.params_panel.sigOrderChanged.connect(s.setup.set_order)
        q.sigOrderChanged.connect(self.params_panel.set_order)
        self.chart.sigThresholdChanged.connect(s.setup.drag_threshold)
        self.chart.sigMessageClicked.connect(self.select_message)
        self.findings.sigMessageClicked.connect(self.select_message)
        self.tabs.currentChanged.connect(lambda k: s.view.set_tab(TABS[k]) if 0 <= k < len(TABS) else None)
        self.tabs.currentChanged.connect(lambda _k: self.presenter_mode.docks())
        self.timeline_panel.timeline.sigCallSelected.connect(s.replay.set_cursor)
        self.timeline_panel.timeline.sigFreeChanged.connect(s.replay.set_replay_free)
        self.timeline_panel.sigCompareChanged.connect(self._compare_changed)
        self.timeline_panel.sigCompareRequested.connect(self.run_replay)
        self.timeline_panel.sigFollowChanged.connect(s.replay.set_follow)
        self.picker.sigConversation.connect(s.source.select_conversation)
        self.picker.sigSegment.connect(s.source.set_segment)
        self.picker.sigCall.connect(s.source.set_call)
        # what the session says -> the views
        q.sigSourceChanged.connect(self._source_changed)
        q.sigStrategyChanged.connect(self._strategy_changed)
        q.sigParamsChanged.connect(self._params_changed)
        q.sigSummarizerChanged.connect(self._summarizer_changed)
        q.sigRunningChanged.connect(self._running_changed)
        q.sigProgressChanged.connect(lambda t: self.status.tick())
        q.sigResultChanged.connect(self._result_changed)
        q.sigStageChanged.connect(self._show_stage)
        q.sigViewModeChanged.connect(self.messages.set_mode)
        q.sigSelectionChanged.connect(self._selection_changed)
        q.sigErrorChanged.connect(self._error_changed)
        q.sigVerdictChanged.connect(self._verdict_changed)
        q.sigReplayRunningChanged.connect(self._replay_running)
        q.sigReplayChanged.connect(self._replay_changed)
        q.sigCallChanged.connect(self._call_changed)
        q.sigCursorChanged.connect(lambda i: i is not None and i != self.timeline_panel.timeline.cursor()
                                   and self.timeline_panel.timeline.set_cursor(i, emit=False))
        q.sigCompareChanged.connect(lambda c: self.timeline_panel.set_compare(c["names"], c["extra"]))
        q.sigFollowChanged.connect(self.timeline_panel.set_follow)
        q.sigTabChanged.connect(lambda t: self.tabs.setCurrentIndex(TABS.index(t)))
        q.sigFiltersChanged.connect(self.messages.set_filters)
        q.sigReadyChanged.connect(self.sigTraceReady)
        # the chart's bars of a big list are made after its result is shown (Session.prepare_lists)
        self.chart.defer_bars = True
        q.sigPreparedChanged.connect(lambda _v: self.chart.bars_ready())

    # ================================================================== strategies (built-in, installed, plugins)
    def load_strategy_dialog(self) -> None:
        """File > Load Strategy from File (app/strategy_files.py)."""
        strategy_files.load_strategy_dialog(self)

    def use_strategy(self, spec: str) -> bool:
        """Switch to the strategy ``spec`` names (a plugin is remembered in the recent strategies)."""
        try:
            st = strategies.get(spec)
        except (KeyError, ImportError) as e:
            self.show_error(tr("Strategy {short_label}: {v}").format(short_label=strategies.short_label(spec), v=e.args[0] if e.args else e),
                            tr("Fix the plugin and load it again, or pick another strategy."))
            return False
        if strategies.looks_like_plugin(spec):
            self.settings.add_recent_strategy(st.name)
            rebuild_recent_strategies(self)
            self.params_panel.add_strategy(st.name, strategies.short_label(st.name))
        if st.name != self.session.setup.strategy.name or st is not self.session.setup.strategy:
            self.session.setup.set_strategy(st, self._saved_params(st))
        else:
            self.session.run()
        return True

    # ================================================================== settings
    def _saved_params(self, strategy) -> dict:
        out = {}
        for k, v in self.settings.params(strategy.name).items():
            try:
                out[k] = strategy.param(k).coerce(v)
            except (KeyError, ValueError):
                continue
        return out

    def _restore(self) -> None:
        from compactscope.app import screen_fit
        _geo, state, split = self.settings.layout()
        screen_fit.restore(self, self.settings)        # never larger than the screen, remembered per screen
        if isinstance(state, QByteArray) and not state.isEmpty():
            self.restoreState(state)
        if isinstance(split, QByteArray) and not split.isEmpty():
            self.splitter.restoreState(split)
        self.set_zoom(self.settings.zoom(), save=False)
        self.dark_action.setChecked(self.settings.dark())
        self.set_dark(self.settings.dark(), save=False)

    def closeEvent(self, e) -> None:
        self.session.close()
        self.presenter_mode.set(False)          # the layout saved is the normal one (presenter folds the docks)
        self.settings.save_layout(self.saveGeometry(), self.saveState(), self.splitter.saveState())
        from compactscope.app import screen_fit
        screen_fit.save(self, self.settings)
        self.settings.sync()
        super().closeEvent(e)

    # ================================================================== open
    def open_dialog(self) -> None:
        start = str(Path(self.session.source.path).parent) if self.session.source.path else str(EXAMPLES)
        path, _ = QFileDialog.getOpenFileName(self, tr("Open a transcript"), start,
                                              tr("Transcripts (*.json *.jsonl *.eval *.db *.sqlite);;All files (*)"))
        if path:
            self.open_path(path)

    def open_default(self) -> bool:
        if DEFAULT_EXAMPLE.is_file():
            return self.open_path(str(DEFAULT_EXAMPLE), remember=False)
        self.show_error(tr("No file is open and the bundled example is missing."),
                        tr("Open a transcript with File > Open, or run assets/examples/generate.py to create {name}.").format(name=DEFAULT_EXAMPLE.name))
        return False

    def open_path(self, path: str, remember: bool = True, conversation: int = 0) -> bool:
        ok = self.session.source.open(str(path), conversation)
        if ok and remember:
            self.settings.add_recent(str(path))
            rebuild_recent(self)
        return ok

    def set_conversation(self, conv, title: str = "") -> None:
        self.session.source.set_conversation(conv, title)

    def show_trace(self, conv, trace) -> None:
        """Show a trace made elsewhere (the live agent's own run) without re-running the pipeline."""
        self.session.show_trace(conv, trace)

    def set_strategy(self, name: str) -> None:
        if name != self.session.setup.strategy.name or strategies.looks_like_plugin(name):
            self.use_strategy(name)           # a plugin file is read again: edits show at once
        else:
            self.session.run()

    def _source_changed(self, src: dict) -> None:
        self.setWindowTitle(tr("Compactscope — {v}").format(v=src.get('title') or 'conversation'))
        self._refresh_picker()
        problems = src.get("problems") or []
        self._load_problems = problems          # listed under the API findings while the file is open
        if problems:
            self.statusBar().showMessage(tr("{n_problems} problem(s) while loading: {problems}").format(n_problems=len(problems), problems=ct(str(problems[0]))), 10000)

    def _refresh_picker(self) -> None:
        """The picker shows the session's conversation, segment and call (core.contexts' choices)."""
        from compactscope.core.model import contexts
        s = self.session
        conv = s.source.conversation
        if conv is None:
            self.picker.set_state([], [], [], 0, None, None)
            return
        convs = s.source.load_result.conversations if s.source.load_result is not None and \
            any(c is conv for c in s.source.load_result.conversations) else [conv]
        self.picker.set_state(contexts.conversation_choices(convs), contexts.segment_choices(conv),
                              contexts.call_choices(conv, s.source.segment), s.source.conversation_index if len(convs) > 1 else 0,
                              s.source.segment, s.source.call)

    def _strategy_changed(self, st) -> None:
        self.settings.set("strategy", st.name)
        self.params_panel.set_strategy(st, self.session.setup.params)

    def _params_changed(self, params: dict) -> None:
        st = self.session.setup.strategy
        for k, v in params.items():
            self.params_panel.set_value(k, v)
        self.params_panel.set_variant(self.session.setup.variant)
        self.settings.set_params(st.name, self.session.setup.params_to_remember(params))

    def _summarizer_changed(self, spec: str) -> None:
        self.settings.set("summarizer", spec)
        if self.params_panel.summarizer() != spec:
            self.params_panel.set_summarizer(spec)

    # ================================================================== run
    def run_pipeline(self) -> None:
        self.session.run()

    def cancel_run(self) -> None:
        self.session.cancel()

    def _running_changed(self, kind) -> None:
        if kind in ("run", "load"):
            w = self.session.source.loader if kind == "load" else self.session.pipeline
            self.status.working(lambda: ct(self.session.progress_text), w.started_at)
        elif kind is None and not self.session.replay.replayer.busy:
            self.status.idle()

    def _result_changed(self, result) -> None:
        s = self.session
        stages = s.view.stages()
        self.stepper.blockSignals(True)
        self.stepper.current = min(s.view.stage, len(stages) - 1)
        self.stepper.set_stages([(x.name, x.label, x.status) for x in stages], [x.explanation for x in stages],
                                keep=result is not None)
        self.stepper.blockSignals(False)
        series = s.view.chart()
        if series is not None:
            self.chart.set_series(series.labels, series.sizes, series.tokens, series.threshold, series.unit,
                                  series.threshold_label, movable=series.movable)
        if result is None:
            self.inspector.clear()

    # ================================================================== stages
    def _show_stage(self, k: int) -> None:
        s = self.session
        if self.stepper.current != k:
            self.stepper.blockSignals(True)
            self.stepper.set_current(k)
            self.stepper.blockSignals(False)
        view = s.view.stage_view()
        self.messages.model.set_messages(view.messages, status=view.status, findings=view.findings, cuts=view.cuts,
                                badges=view.badges, meta=s.source.message_meta())
        self.diff_panel.set_step(view.step, view.rows, (s.source.marks(view.step.input), s.source.marks(view.step.messages))
                                 if view.step is not None else None)
        self._show_edits(view.step)
        self.explainer.set_steps(s.view.boundary_step(), s.view.variant_run(), self.session.setup.strategy.name)
        title = ct(self.explainer.explanation.tab_title) if self.explainer.explanation is not None \
            else tr("Snip boundary")
        if self.tabs.tabText(1) != title:
            self.tabs.setTabText(1, title)
        self.findings.set_findings(s.view.stage_findings(k), ct(view.where), self._load_problems)
        self.chart.set_stage(k)
        self.chart.set_messages(view.messages)
        self.status_label.setText(ct_parts(s.view.status_text()))
        inf = s.setup.inferred
        self.status_label.setToolTip("\n".join(ct(line) for line in inf.lines(s.setup.pinned)) if inf else "")
        if self.messages.model.search_text:
            self.messages.update_match_label()
        self.sigStageShown.emit(k)

    def _show_edits(self, step) -> None:
        """The edit list of the shown step (on Original: every layer at a glance), then the cross-check."""
        if step is None:
            self.diff_panel.edits.set_step(None, overview=self.session.view.overview())
        else:
            k = next((i for i, st in enumerate(self.session.trace.steps) if st is step), -1) if self.session.trace else -1
            self.diff_panel.edits.set_step(step, stage_label(self.session.setup.strategy, step.layer),
                                lost=[x for x in self.session.view.lost() if x.step == k])
        c = self.session.crosscheck.check
        if c is None:
            return
        v = c.verdict
        if v is None:
            self.diff_panel.edits.add_note(tr("{name} cross-check: running…").format(name=c.name), "#64748b")
        else:
            self.diff_panel.edits.add_note(("\u2714 " if v.ok else "") + tr("{name} cross-check of this run: {text}").format(
                name=c.name, text=ct(v.text)),
                                "#15803d" if v.ok else "#b91c1c" if v.failed else "#64748b")

    def set_view_mode(self, mode: str) -> None:
        self.session.view.set_view_mode(mode)

    def current_step(self):
        return self.session.view.current_step()

    def stage_messages(self, k: int) -> list:
        return self.session.view.stage_messages(k)

    def map_index(self, i: int, a: int, b: int) -> int | None:
        return self.session.view.map_index(i, a, b)

    def call_caption(self, i: int) -> str:
        return self.session.replay.call_caption(i)

    # ================================================================== selection
    def select_message(self, mi: int | None) -> bool:
        return self.messages.select_message(mi)

    def _selection_changed(self, sel) -> None:
        mi, _block = sel
        if mi is None and self.inspector.current is not None:
            # the message shown is not in this stage (the layer removed or replaced it): never show it as if it were
            gone = self.inspector.current[0]
            self.inspector.clear()
            self.inspector.title.setText(tr("Message #{n} of the previous stage is not in this one (the layer "
                                             "removed or replaced it). Select a message or a block.").format(n=gone))
            self.chart.set_selected(None)
            self.messages.model.set_highlight(set())
            return
        cur = self.messages.view.currentIndex()
        if mi is not None and not (cur.isValid() and cur.data(Qt.ItemDataRole.UserRole + 2) == mi):
            self.messages.view.select_message(mi)

    def _message_selected(self, mi: int) -> None:
        msgs = self.messages.model.messages
        if not 0 <= mi < len(msgs):
            return
        self.session.view.select(mi)
        self.messages.model.set_highlight(self.messages.model.partners_of(mi))
        self.chart.set_selected(mi)
        where = tr("(before the layer)") if self.session.view.view_mode == "before" and self.current_step() else ""
        self.inspector.show_message(mi, msgs[mi], None, where, meta=self.session.source.meta_of(msgs[mi]),
                                    compaction=self.session.source.compaction_of(msgs[mi]))

    def _block_selected(self, mi: int, block: int) -> None:
        msgs = self.messages.model.messages
        if not 0 <= mi < len(msgs):
            return
        self.session.view.select(mi, block if block >= 0 else None)
        partners = self.messages.model.partners_of(mi, block) if block >= 0 else self.messages.model.partners_of(mi)
        self.messages.model.set_highlight(partners or self.messages.model.partners_of(mi))
        self.inspector.show_message(mi, msgs[mi], block if block >= 0 else None,
                                    meta=self.session.source.meta_of(msgs[mi]), compaction=self.session.source.compaction_of(msgs[mi]))

    def jump_to_partner(self) -> bool:
        return self.messages.jump_to_partner()

    def _diff_selected(self, col: int, i: int) -> None:
        step = self.current_step()
        if step is None:
            return
        msgs = step.input if col == 0 else step.messages
        if 0 <= i < len(msgs):
            self.inspector.show_message(i, msgs[i], None, tr("(before the layer)") if col == 0 else tr("(after the layer)"),
                                        meta=self.session.source.meta_of(msgs[i]), compaction=self.session.source.compaction_of(msgs[i]))
            if (col == 0) == (self.session.view.view_mode == "before"):
                self.messages.view.select_message(i)

    def focus_search(self) -> None:
        self.messages.focus_search()

    def _search_marks(self, text: str) -> None:
        self.diff_panel.model.set_search(text)
        self.inspector.set_search(text)

    def next_match(self, d: int = 1) -> bool:
        return self.messages.next_match(d)

    # ================================================================== cross-check, errors
    def _verdict_changed(self, state) -> None:
        self.status.show_verdict(state)
        if state is None:
            self.explainer.set_oracle(None)
            return
        v = state.verdict
        self.explainer.set_oracle(v)
        self._show_edits(self.current_step())
        if v is not None:
            self.sigOracleReady.emit(v.text)

    def show_error(self, what: str, todo: str = "") -> None:
        self.session.set_error(what, todo)

    def hide_error(self) -> None:
        self.session.set_error(None)

    def _error_changed(self, notice) -> None:
        if notice is None:
            self.banner.hide()
            return
        self.banner.setText(f"<b>{html.escape(ct(notice.what), quote=False)}</b>"
                            + ("<br>" + tr("What to do: {todo}").format(todo=html.escape(ct(notice.todo), quote=False))
                               if notice.todo else ""))
        self.banner.show()
        self.last_error = notice.what
        self.sigError.emit(notice.what)

    # ================================================================== replay timeline
    def _compare_changed(self, names: list, extra: str) -> None:
        self.session.replay.set_compare(names, extra, run=False)
        if self.session.view.tab == "timeline":
            self._compare_timer.start()

    def set_compare(self, spec) -> None:
        """Runs to compare (--compare values: repeatable, ';'-separated): a bare strategy name ticks its box, anything else
        ([LABEL=]NAME:K=V,...) goes to the "more runs" field."""
        self.session.replay.set_compare_spec(spec, run=False)
        if self.session.view.tab == "timeline":
            self._compare_timer.start()

    def run_replay(self) -> None:
        t = self.timeline_panel
        self.session.replay.set_compare(t.names(), t.compare_extra.text(), run=False)
        self.session.replay.run_replay()

    def _replay_running(self, n: int) -> None:
        if n:
            self.status.working(tr("replaying every model call ({n} run{v})").format(n=n, v="s" if n > 1 else ""))
            self.timeline_panel.timeline.play(False)
        elif not self.session.pipeline.busy:
            self.status.idle()

    def _replay_changed(self, results: list) -> None:
        rp = self.session.replay
        made = rp.replay_totals if len(rp.replay_totals) == len(results) else None
        self.timeline_panel.timeline.set_replays(results, totals=made[0] if made else None, iterations=rp.iterations,
                                                 columns=rp.columns if made else None)
        self.timeline_panel.comparison.set_results(results, totals=made)
        cur = self.session.replay.cursor
        if results and cur is not None and cur != self.timeline_panel.timeline.cursor():
            self.timeline_panel.timeline.set_cursor(cur, emit=False)      # the call the session is on (a lesson's slide, a snapshot)
        if results:
            self.sigReplayReady.emit(results[0])

    def _call_changed(self, ci) -> None:
        if ci is None:
            return
        self.statusBar().showMessage(ct(self.call_caption(ci)) + tr(" \u2014 the stepper shows the pipeline run "
                                                                    "before this call"), 8000)
        QTimer.singleShot(0, self.messages.view.scrollToBottom)     # as if live: the newest messages in view
        self.sigCallShown.emit(ci)

    # ================================================================== look
    def set_zoom(self, z: float, save: bool = True) -> None:
        self.zoom = apply_zoom(self, z)
        if save:
            self.settings.set("view/zoom", self.zoom)

    @property
    def language(self) -> str:
        from compactscope.app.language import current
        return current()

    def set_language(self, lang: str):
        """Show the window in ``lang`` ("en" or "zh_CN"): a new window replaces this one (app/language.py)."""
        from compactscope.app.language import current, switch
        if lang == current():
            return self
        return switch(self, lang)

    @property
    def presenter(self) -> bool:
        return self.presenter_mode.on

    def set_presenter(self, on: bool, zoom: float | None = None) -> None:
        """The presenter preset (app/presenter.py)."""
        self.presenter_mode.set(on, zoom)

    def set_dark(self, on: bool, save: bool = True) -> None:
        apply_palette(self, on)
        if save:
            self.settings.set("view/dark", on)

    # ================================================================== drag and drop, screenshot, idle
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

    def save_screenshot_dialog(self) -> None:
        from compactscope.app.screenshots import save_screenshot_dialog
        save_screenshot_dialog(self)

    def wait_idle(self, ms: int = 60000) -> bool:
        """Process events until no background work is pending (CLI screenshot, tests)."""
        t0 = time.perf_counter()
        app = QApplication.instance()
        while self.session.busy or self._compare_timer.isActive():
            app.processEvents()
            if (time.perf_counter() - t0) * 1000 > ms:
                return False
            time.sleep(0.005)
        app.processEvents()
        return True
