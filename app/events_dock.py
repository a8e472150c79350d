"""The window's events (issue 23): an Events dock with three tabs (the events in call order, the real summary
beside the simulated one with what each kept and lost, the watch box), F8 / Shift+F8 to go to the next / previous
event from anywhere, and the jumps themselves. Wiring only: the events, the retention and the watch are computed in
core (``core.analysis.session_events``, ``core.analysis.retention``, ``core.analysis.watch``) on a worker.

A jump to a real compaction shows the context it replaced (the segment before it) at the layer that compacts it;
to a simulated compaction, a layer change, a loop or a divergence, the replay's pipeline run before that call
(the session's timeline replay, made when first needed) at the layer concerned; to a finding, its real context
with the message selected."""
from __future__ import annotations

from typing import Any

import shiboken6
from PySide6.QtCore import QEvent, QObject, Qt, QTimer
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QApplication, QDockWidget, QTabWidget

from compactscope.core.analysis import session_events as ae
from compactscope.core.replay.shared import release
from compactscope.core.runtime.jobs import Worker
from compactscope.widgets.events_panel import EventRow, EventsPanel, row_stats
from compactscope.widgets.i18n import ct, tr
from compactscope.widgets.retention_view import Pair, RetentionView, Side
from compactscope.widgets.watch_box import ABSENT, PRESENT, REMOVED, WatchBox, WatchRow

AUTOMATIC_SUMMARIZERS = ("offline", "fixed")     # the events' own replay never calls a model on its own
CHART_DOCK = 230          # app/docks.py's height of the chart's dock


def item_kinds() -> dict[str, str]:
    """An item's kind in the window's language, per kind (made once per list of pairs: tens of thousands of items)."""
    return {"request": tr("request"), "path": tr("path"), "tool": tr("tool"), "error": tr("error"),
            "identifier": tr("identifier"), "number": tr("number")}


class EventsController(QObject):
    def __init__(self, win):
        super().__init__(win)
        self.win = win
        s = win.session
        s.source.open_at_first_compaction = True
        self.panel = EventsPanel(win)
        self.retention_view = RetentionView(win)
        self.watch_box = WatchBox(win)
        self.tabs = QTabWidget(win)
        self.tabs.setObjectName("eventsTabs")
        self.tabs.addTab(self.panel, tr("Events"))
        self.tabs.addTab(self.retention_view, tr("Kept and lost"))
        self.tabs.addTab(self.watch_box, tr("Watch"))
        self.dock = QDockWidget(tr("Events"), win)
        self.dock.setObjectName("dock_events")
        self.dock.setWidget(self.tabs)
        win.addDockWidget(Qt.BottomDockWidgetArea, self.dock)
        # as small as the chart's dock (a projector's 1024x768 keeps its size; the views scroll), beside it
        self.tabs.setMinimumHeight(min(self.tabs.minimumSizeHint().height(), win.dock_chart.minimumSizeHint().height()))
        win.tabifyDockWidget(win.dock_chart, self.dock)
        win.dock_chart.raise_()
        self.dock.hide()          # shown by a compacted file, F8 or View > Events (a tab by the chart)
        QTimer.singleShot(0, self._chart_room)
        ex = s.pipeline.executor
        # courteous: the events' replay (every model call of the file) waits while the user steps or selects and while
        # a load or a run goes on (beside a step at 100k messages it made the step 2-3x slower)
        self.worker = Worker(ex, self._computed, self._failed, on_partial=self._partial, name="events", courteous=True)
        self.summarizer_spec = "offline"      # the events' replay's summarizer (``_engine``)
        self.watcher = Worker(ex, self._watched, self._watch_failed, name="watch")
        self.events: list = []
        self.retention: list = []
        self.replay: Any = None
        self._paired: dict = {}                  # real call -> simulated call (the divergence report's pairing)
        self.error = ""
        self._want: dict | None = None           # the view a jump waits for (applied when its run arrives)
        self._after_replay: tuple | None = None  # (call, stage) to show once the session's replay is there
        self._pairs_by_call: dict = {}           # real or simulated call -> index in the retention view
        self._opened = False                     # a file was just opened: show its first real compaction's event
        self._lost: list = []                    # the last watch's removals
        self._conv: Any = None                   # the conversation the events are of
        # {"made": (conversation, its finding events)}: the API checker's findings of the real contexts depend on the
        # conversation alone, so a parameter or strategy change reuses them (checked again, ~0.35 s at 100k messages
        # in the worker, beside the window showing the new run). Written by the worker in one assignment.
        self._findings: dict = {}
        self._refresh_wanted = False             # a new conversation: compute its events once its first run is shown
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(250)
        self._timer.timeout.connect(self._refresh_when_shown)
        q = win.qsession
        q.sigSourceChanged.connect(self._source_changed)
        q.sigStrategyChanged.connect(lambda _st: self._stale())
        q.sigParamsChanged.connect(lambda _p: self._stale())
        q.sigReplayChanged.connect(self._replay_changed)
        q.sigRunningChanged.connect(self._running)
        win.sigTraceReady.connect(self._ready)
        self.panel.sigActivated.connect(self.go)
        self.watch_box.sigWatch.connect(self.watch)
        self.watch_box.sigJump.connect(self._watch_jump)
        self._install_actions()
        win.installEventFilter(self)             # the window closes: stop the events' work too
        self._shown_before_presenter: bool | None = None
        win.presenter_action.toggled.connect(self._presenter)

    def _presenter(self, on: bool) -> None:
        """Presenter mode (a lesson, a projector) gives the screen to the lesson: the Events dock steps aside."""
        if on and self._shown_before_presenter is None:
            self._shown_before_presenter = self.dock.isVisible()
            self.dock.hide()
        elif not on and self._shown_before_presenter is not None:
            self.dock.setVisible(self._shown_before_presenter)
            self._shown_before_presenter = None

    def _chart_room(self) -> None:
        """The chart keeps the height it had without the Events tab beside it: its dock grows by the tab bar."""
        from PySide6.QtWidgets import QTabBar
        titles = {self.dock.windowTitle(), self.win.dock_chart.windowTitle()}
        bars = [b for b in self.win.findChildren(QTabBar)
                if {b.tabText(i) for i in range(b.count())} >= titles and b.isVisible()]
        extra = bars[0].height() if bars else 0
        self.win.resizeDocks([self.win.dock_chart], [CHART_DOCK + extra], Qt.Vertical)

    def eventFilter(self, obj, event) -> bool:
        if obj is self.win and event.type() == QEvent.Close:
            self.worker.cancel()
            self.watcher.cancel()
            self._timer.stop()
        return False

    # ------------------------------------------------------------------ menus and keys
    def _install_actions(self) -> None:
        win = self.win
        self.next_action = QAction(tr("Next &event"), win)
        self.next_action.setShortcut(QKeySequence("F8"))
        self.prev_action = QAction(tr("Previous e&vent"), win)
        self.prev_action.setShortcut(QKeySequence("Shift+F8"))
        for a, d in ((self.next_action, 1), (self.prev_action, -1)):
            a.setShortcutContext(Qt.WindowShortcut)
            a.triggered.connect(lambda _c=False, d=d: self.step(d))
            win.addAction(a)
        for m in (a.menu() for a in win.menuBar().actions()):
            if m is None:
                continue
            if m.title() == tr("&Navigate"):
                m.addSeparator()
                m.addAction(self.next_action)
                m.addAction(self.prev_action)
            elif m.title() == tr("&View"):
                m.addAction(self.dock.toggleViewAction())

    def step(self, d: int) -> bool:
        """F8 / Shift+F8: the next or previous event (from anywhere: the stepper, the list, the timeline)."""
        self.dock.show()
        return self.panel.step(d)

    # ------------------------------------------------------------------ computing
    def _source_changed(self, _src: dict) -> None:
        s = self.win.session
        conv = s.source.conversation
        if conv is None or conv is self._conv:        # another segment or call of the same conversation
            return
        self._conv = conv
        self._findings = {}                      # (the old conversation's: not held on to)
        self._opened = True
        self.worker.cancel()
        release([self.events, self.retention, self.replay])
        self.events, self.retention, self.replay = [], [], None
        self._show(busy=True)
        self._refresh_wanted = True           # after the first run is shown: the events never delay it
        if not s.pipeline.busy and s.result is not None:
            self.refresh()

    def _stale(self) -> None:
        """The strategy or a parameter changed: the replay under way is of the old one (stopped: it would take the
        interpreter from the new run), the events are computed again after a pause."""
        self.worker.cancel()
        self._timer.start()

    def refresh(self) -> None:
        """The events of the conversation shown, under the session's strategy, in the background."""
        s = self.win.session
        conv = s.source.conversation
        if conv is None:
            return
        self._timer.stop()
        self._refresh_wanted = False
        # (freed in pieces elsewhere: at 100k messages its 50k calls freed here held the window 0.25-0.5 s)
        release(self.replay)
        self.replay = None
        # the views keep what they show until the new events are here, saying they are computed again (listed
        # again here, 100k events and the pairs of 50k simulated compactions held the window ~3 s at 100k messages)
        self.panel.set_busy(True, note=self.error)
        engine = self._engine()
        if engine is None:
            return
        from compactscope.core.replay.shared import key
        # the timeline replays the same run when it is shown with one run: computed once for both
        self.worker.start(_compute, conv, engine, key(conv, engine.strategy, engine.params, order=engine.order,
                                                      summarizer=self.summarizer_spec, workspace=engine.workspace),
                          findings=self._findings)

    def _engine(self):
        from compactscope.core.pipeline.engine import Engine
        from compactscope.core.summarizers import make_summarizer
        s = self.win.session
        try:
            spec = s.setup.summarizer if str(s.setup.summarizer).split(":")[0] in AUTOMATIC_SUMMARIZERS else "offline"
            self.summarizer_spec = spec
            return Engine(s.setup.strategy, dict(s.setup.params), workspace=s.workspace, summarizer=make_summarizer(spec),
                          order=s.setup.order)
        except (KeyError, ValueError, ImportError) as e:
            self._failed(e)
            return None

    def _alive(self) -> bool:
        """The dock's views still exist (a window closed while a task ran: nothing to show)."""
        return all(shiboken6.isValid(w) for w in (self.win, self.panel, self.retention_view, self.watch_box))

    def _partial(self, out: tuple) -> None:
        """The real compactions and the findings, before the replay adds the simulated ones."""
        if not self._alive() or out[0] is not self.win.session.source.conversation:
            return
        self.events, (rows, stats) = out[2], out[5]
        # (the retention view keeps what it shows: its pairs come with the replay; made again here from the
        # last replay's, they held the window ~1.4 s after a parameter change at 100k messages)
        self.panel.set_events(rows, busy=True, note=self.error, stats=stats)

    def _computed(self, out: tuple) -> None:
        if not self._alive():
            return
        release([self.events, self.retention, self.replay])
        conv, self.replay, self.events, self.retention, self._paired, made = out
        if conv is not self.win.session.source.conversation:
            return
        self.error = ""
        self._show(busy=False, made=made)
        if self.watch_box.term():
            self.watch(self.watch_box.term())

    def _failed(self, exc: BaseException) -> None:
        if not self._alive():
            return
        self.error = tr("The replay failed ({e}): only the real compactions are listed.").format(
            e=f"{type(exc).__name__}: {exc}")
        self._show(busy=False)

    def wait(self, ms: int = 60000) -> bool:
        """Process events until the events and the watch are computed and the window is idle (tests)."""
        import time
        t0 = time.perf_counter()
        app = QApplication.instance()
        while self.worker.busy or self.watcher.busy or self._timer.isActive() or self.win.session.busy or \
                self._refresh_wanted:
            app.processEvents()
            if (time.perf_counter() - t0) * 1000 > ms:
                return False
            time.sleep(0.005)
        app.processEvents()
        return self.win.wait_idle(ms)

    # ------------------------------------------------------------------ showing
    def _show(self, busy: bool, made: tuple | None = None) -> None:
        """``made``: (rows, their stats, pairs, call -> pair) made in the worker for these events."""
        if made is not None:
            rows, stats, pairs, self._pairs_by_call = made
        else:
            rows, pairs = _rows(self.events), self._pairs()
            stats = None
        self.panel.set_events(rows, busy=busy, note=self.error, stats=stats)
        self.retention_view.set_pairs(pairs, busy=busy)
        s = self.win.session
        if self._opened and not busy:
            self._opened = False
            first = next((k for k, e in enumerate(self.events) if e.kind == ae.REAL), None)
            if first is not None and s.source.segment == 0 and s.source.call is None:
                self.panel.set_current(first)          # the window opened there (Session.open_at_first_compaction)
                e = self.events[first]
                self.panel.set_shown(tr("Opened at the first real compaction: ") + self._shown_real(e))
                self.dock.show()
                self.dock.raise_()
                self.win.resizeDocks([self.dock], [max(200, self.win.height() * 3 // 10)], Qt.Vertical)
                self.win.statusBar().showMessage(tr("Opened at the first real compaction (before call {call}); "
                                                    "F8 goes to the next event.").format(call=e.call), 10000)

    def _pairs(self) -> list[Pair]:
        """Each real compaction beside the simulated one the divergence report pairs with it; then the simulated
        compactions paired with none (``make_pairs``)."""
        strategy = self.replay.strategy if self.replay is not None else self.win.session.setup.strategy.name
        pairs, self._pairs_by_call = make_pairs(self.retention, self.replay is not None, self._paired, strategy)
        return pairs

    # ------------------------------------------------------------------ jumps
    def go(self, i: int) -> None:
        if not 0 <= i < len(self.events):
            return
        e = self.events[i]
        k = self._pairs_by_call.get(e.call)
        if e.kind in (ae.REAL, ae.SIMULATED) and k is not None:
            self.retention_view.show_pair(k)
        if e.kind == ae.REAL:
            self.panel.set_shown(self._shown_real(e))
            self.show_real(e.segment)
        elif e.kind == ae.FINDING:
            conv = self.win.session.source.conversation
            start = conv.segments[e.segment] if conv is not None and e.segment < len(conv.segments) else 0
            self.panel.set_shown(tr("Shown: segment {segment}, the message the finding is about selected.").format(
                segment=e.segment))
            self._show_segment(e.segment, 0, select=int(e.data.get("message", 0)) - start)
        elif e.call is not None:
            layer = e.data.get("layer")
            self.panel.set_shown(tr("Shown: the replay's pipeline before call {call} (the timeline's cursor is "
                                    "there), at the layer {layer}.").format(call=e.call, layer=layer) if layer else
                                 tr("Shown: the replay's pipeline before call {call} (the timeline's cursor is "
                                    "there), at the layer that compacts.").format(call=e.call))
            self.show_call(e.call, layer or "changed")

    @staticmethod
    def _shown_real(e) -> str:
        return tr("segment {before}, what the real compaction before call {call} replaced, at the layer that "
                  "compacts it (its summary opens segment {segment}).").format(
            before=max(0, e.segment - 1), call=e.call, segment=e.segment)

    def show_real(self, segment: int) -> None:
        """The context a real compaction replaced (the segment before the one it opened), at its compaction."""
        self._show_segment(max(0, segment - 1), "changed")

    def _show_segment(self, segment: int, stage, select: int | None = None) -> None:
        s = self.win.session
        conv = s.source.conversation
        if conv is None:
            return
        target = segment if len(conv.segments or [0]) > 1 else None
        self._want = {"call": None, "segment": target, "stage": stage, "select": select}
        if s.source.segment != target or s.source.call is not None:
            s.source.set_segment(target)
        elif s.result is not None and not s.pipeline.busy:
            self._apply(s.result)

    def show_call(self, call: int, stage) -> None:
        """The replay's pipeline run before model call ``call`` (the timeline's replay, made when first needed)."""
        s = self.win.session
        rr = s.replay.replay_result
        if rr is None or s.replay.replay_stale or rr.strategy != s.setup.strategy.name or not 0 <= call < len(rr.calls):
            if rr is not None and not s.replay.replay_stale and not 0 <= call < len(rr.calls):
                return
            self._after_replay = (call, stage)
            s.replay.run_replay()
            return
        if not s.replay.follow:
            s.replay.set_follow(True)
        self._want = {"call": call, "segment": None, "stage": stage, "select": None}
        if s.replay.shown_call == call and s.result is not None and not s.pipeline.busy:
            self._apply(s.result)
        else:
            s.replay.set_cursor(call)

    def _replay_changed(self, results: list) -> None:
        pending, self._after_replay = self._after_replay, None
        if pending is not None and results:
            self.show_call(*pending)

    def _running(self, kind) -> None:
        if kind is None and self._refresh_wanted:
            QTimer.singleShot(0, self._refresh_if_wanted)       # once the run is painted

    def _refresh_if_wanted(self) -> None:
        if self._refresh_wanted and not self._run_pending():
            self.refresh()

    def _run_pending(self) -> bool:
        s = self.win.session
        return s.pipeline.busy or s.source.loading is not None

    def _refresh_when_shown(self) -> None:
        """A parameter or the strategy changed: the events again, once the session's own run is shown (their replay
        beside the run took the interpreter from it: a 100k-message file's first result 10.8 s instead of 4.4 s)."""
        if self._run_pending():
            self._refresh_wanted = True           # refreshed by _running when the run is there
        else:
            self.refresh()

    def _ready(self, result) -> None:
        w = self._want
        if w is None or result is None:
            return
        s = self.win.session
        if w["call"] is not None:
            if getattr(result, "call_index", None) != w["call"]:
                return
        elif getattr(result, "call_index", None) is not None or s.source.segment != w["segment"]:
            return
        self._apply(result)

    def _apply(self, result) -> None:
        w, self._want = self._want, None
        if w is None:
            return
        steps = result.trace.steps
        stage = w["stage"]
        if stage == "changed":
            stage = ae.compaction_stage(steps)
        elif isinstance(stage, str):
            stage = next((k + 1 for k, st in enumerate(steps) if st.layer == stage), ae.compaction_stage(steps))
        s = self.win.session
        s.view.set_stage(int(stage))
        if w.get("select") is not None:
            self.win.select_message(w["select"])

    # ------------------------------------------------------------------ watch
    def watch(self, term: str) -> None:
        conv = self.win.session.source.conversation
        if conv is None or not term:
            return
        self.dock.show()
        self.tabs.setCurrentWidget(self.watch_box)
        self.watch_box.set_busy(term)
        self.watcher.start(_watch, conv, term, self.replay)

    def _watched(self, out: tuple) -> None:
        if not self._alive():
            return
        conv, w = out
        if conv is not self.win.session.source.conversation:
            return
        self._lost = list(w.lost_at)
        rows = []
        present = sum(1 for c in w.contexts if c.present)
        for c in w.contexts:
            if not c.present:
                rows.append(WatchRow(tr("segment {k}: absent").format(k=c.segment), ABSENT))
            elif c.first_call is None:
                rows.append(WatchRow(tr("segment {k}: present from message {m}, sent to no call").format(
                    k=c.segment, m=c.first_message), PRESENT))
            else:
                rows.append(WatchRow(tr("segment {k}: present from message {m}, in the contexts of calls "
                                        "{a}-{b}").format(k=c.segment, m=c.first_message, a=c.first_call,
                                                          b=c.last_call), PRESENT))
        if w.strategy:
            calls = ", ".join(f"{a}-{b}" if a != b else f"{a}" for a, b in w.simulated) or tr("none")
            rows.append(WatchRow(tr("in the {strategy} replay's context at calls: {calls}").format(
                strategy=w.strategy, calls=calls)))
        for x in w.lost_at:
            if x.kind == "real":
                text = tr("removed before call {call} by the {by}").format(call=x.call, by=ct(x.by))
            else:
                strategy, _, layer = x.by.partition(": ")
                text = tr("removed before call {call} by {strategy}'s {layer} layer (simulated)").format(
                    call=x.call, strategy=strategy, layer=layer)
            rows.append(WatchRow(text, REMOVED, x.call, x.kind))
        head = tr("\u201c{term}\u201d is in {n} of {m} real context(s); removed {k} time(s).").format(
            term=w.term, n=present, m=len(w.contexts), k=len(w.lost_at))
        if self.replay is None and not w.strategy:
            head += " " + tr("(the simulated pipeline is still being replayed)")
        self.watch_box.set_result(head, rows)

    def _watch_failed(self, exc: BaseException) -> None:
        if not self._alive():
            return
        self.watch_box.set_result(tr("The watch failed: {e}").format(e=f"{type(exc).__name__}: {exc}"), [])

    def _watch_jump(self, call: int, kind: str) -> None:
        if kind == "real":
            seg = ae.call_segment(self.win.session.source.conversation, call)
            self.show_real(seg)
        else:
            layer = next((x.by.partition(": ")[2] for x in self._lost if x.call == call), "changed")
            self.show_call(call, layer)


def make_pairs(retention: list, replayed: bool, paired: dict, strategy: str) -> tuple[list[Pair], dict]:
    """The retention view's pairs (see ``EventsController._pairs``) and real or simulated call -> pair index; made
    in the events' worker (thousands of simulated compactions at 100k messages: ~1 s)."""
    real = [r for r in retention if r.kind == "real"]
    sim = {r.call: r for r in retention if r.kind == "simulated"}
    paired = paired if replayed else {}
    pairs: list[Pair] = []
    used: set = set()
    by_call: dict = {}
    words = _Words(strategy)
    for r in real:
        k = paired.get(r.call)
        other = sim.get(k) if k is not None else None
        if other is not None:
            used.add(k)
        by_call[r.call] = len(pairs)
        title = tr("Real compaction before call {call} (segment {segment})").format(call=r.call, segment=r.segment)
        note = "" if other is not None or not replayed else tr("The replay made no compaction near this one.")
        pairs.append(Pair(title, _side(r, words), _side(other, words) if other is not None else None))
        if note and pairs[-1].real is not None:
            pairs[-1].real.note = note
    simulated = tr("Simulated compaction before call {call}")
    for k, r in sorted(sim.items()):
        if k not in used:
            by_call.setdefault(k, len(pairs))
            pairs.append(Pair(simulated.format(call=k), None, _side(r, words)))
    return pairs, by_call


class _Words:
    """The words of a list of pairs in the window's language, each translated once (not once per compaction)."""

    def __init__(self, strategy: str):
        self.strategy = strategy
        self.kinds = item_kinds()
        self.real = tr("Real summary (the file's), before call {call}")
        self.simulated = tr("Simulated by {strategy}, before call {call}")


def _side(r, words: _Words) -> Side:
    title = words.real.format(call=r.call) if r.kind == "real" else \
        words.simulated.format(strategy=words.strategy, call=r.call)
    last = r.last_request()
    kinds = words.kinds
    return Side(title, r.summary, [(kinds.get(i.kind, i.kind), i.text) for i in r.kept],
                [(kinds.get(i.kind, i.kind), i.text) for i in r.lost], (last[0].text, last[1]) if last else None)


def _rows(events: list) -> list[EventRow]:
    return [EventRow(e.kind, e.call, e.segment, ct(e.text)) for e in events]


_CANCELLED = object()


def _paused_step(state, make):
    """``make()`` with the cyclic GC paused, ``_CANCELLED`` when the task is cancelled before or after it. One step of
    the dock's computation at a time: each makes ~100k objects at 100k messages (events, rows, items, pairs), and a
    full collection they set off in this thread walked them all with the interpreter lock held (0.1-0.35 s, the
    window waiting). The pause ends with its step, so a cancel between steps (or inside the retention's, which
    stops at its next check) gives the GC back at once; a cancelled computation never runs on with the GC off."""
    from compactscope.core.session.loading import gc_paused
    if state.cancel.is_set():
        return _CANCELLED
    with gc_paused():
        out = make()
    return _CANCELLED if state.cancel.is_set() else out


def _compute(conv, engine, shared_key, state, findings: dict | None = None) -> tuple:
    """In the background: (conversation, replay, events, retention, pairs: real call -> the simulated call the
    divergence report pairs with it). Courteous: it waits while the user steps, at each layer of each call
    replayed and every few thousand messages the API checker reads (the real events' findings: ~0.5 s at 100k
    messages, made once per conversation and listed with and without the replay: kept in ``findings``,
    ``{"made": (conversation, events)}``, for the next computation of the same conversation). What follows the
    replay runs a step at a time with the cyclic GC paused (``_paused_step``)."""
    from compactscope.core.analysis import divergence
    from compactscope.core.analysis.retention import retention
    from compactscope.core.session.loading import gc_paused
    none = conv, None, [], [], {}, None
    if state.cancel.is_set():
        return none
    known = (findings or {}).get("made")
    if known is not None and known[0] is conv:
        found = known[1]
    else:
        found = ae.finding_events(conv, pause=state.cancel.is_set)
        if state.cancel.is_set():
            return none               # (stopped in the middle: what it found is incomplete, not kept)
        if findings is not None:
            findings["made"] = (conv, found)
    real = ae.history_events(conv, None, findings=found)
    rows = _rows(real)
    state.set_partial_result((conv, None, real, [], {}, (rows, row_stats(rows))))
    if state.cancel.is_set():
        return none
    # the replay keeps every call's input: long-lived lists the cyclic GC would walk in this thread with the
    # interpreter lock held (gen1 collections of 0.2 s beside the window's steps at 100k messages)
    from compactscope.core.replay.shared import shared
    with gc_paused():
        res = shared(shared_key, lambda: ae.replay_for(conv, engine, cancel=state.cancel), engine.strategy.name,
                     state.cancel)
    if res is None or state.cancel.is_set():
        return none
    # the pairing walks every call (~0.4 s at 100k messages): here, not in the window's thread
    report = _paused_step(state, lambda: divergence.report(res, conv))
    if report is _CANCELLED:
        return none
    pairs: dict = {}
    for row in report["compactions"]:
        pairs.setdefault(row.get("real_call"), row.get("first_simulated_call"))
    events = _paused_step(state, lambda: ae.history_events(conv, res, findings=found, report=report))
    kept = _CANCELLED if events is _CANCELLED else \
        _paused_step(state, lambda: retention(conv, res, pause=state.cancel.is_set))
    if kept is _CANCELLED:
        return none           # (cancelled, in the retention too: what it found is incomplete)
    # what the dock shows of them, made here too: the window's thread only hands it to the views
    made = _paused_step(state, lambda: _made(events, kept, pairs, res.strategy))
    return none if made is _CANCELLED else (conv, res, events, kept, pairs, made)


def _made(events: list, kept: list, pairs: dict, strategy: str) -> tuple:
    """What the dock's views show of the events and the retention: (rows, their stats, pairs, call -> pair)."""
    rows = _rows(events)
    return (rows, row_stats(rows), *make_pairs(kept, True, pairs, strategy))


def _watch(conv, term, replay, state) -> tuple:
    from compactscope.core.analysis.watch import watch
    return conv, watch(conv, term, replay)


def install_events(win) -> EventsController:
    win.events_controller = EventsController(win)
    win.events_panel = win.events_controller.panel
    return win.events_controller
