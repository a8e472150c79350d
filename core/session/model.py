"""The session: everything the debugger window shows, as one observable model without Qt.

A ``Session`` holds the loaded file and the conversation, segment and model call looked at; the
strategy, its parameters, variant and layer order, the summarizer; the pipeline's result (the
``Trace`` and its variants); the stage, view mode, selection, tab and filters; the replay (the
runs compared, their results, the timeline cursor and the call shown); and the strategy's
cross-check verdict. Every change is an event (``session.events.<type>``, see ``EVENTS``), and
the session produces what views show: the stepper's stages, the messages of the stage with
their status, findings, cut lines and badges, the chart series, the status line and captions.

Background work (pipeline runs, replays, reruns of a replayed call, cross-checks) goes through
``core.jobs.Worker``s on the executors given: inline by default (everything happens before a
method returns: tests, lessons, reports), the window's Qt executor in the window.

``snapshot()`` returns the whole user-visible state as a plain JSON-able dict; ``restore()``
brings it back (the file is loaded again when it differs, the pipeline runs, then the stage,
view mode and selection are applied). See ``SNAPSHOT_VERSION`` and docs/architecture.md.
"""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

from ..analysis import present
from ..analysis.pairs import pin_pairs
from ..files.workspace import Workspace
from ..pipeline.engine import Engine, PipelineResult, run_with_variants
from ..pipeline.facts import FACTS
from ..pipeline.size import SizeMeter
from ..runtime.jobs import Executor, InlineExecutor, Worker
from .loading import gc_paused
from .state import (
    AFTER, BEFORE, EVENTS, FILTER_KEYS, SNAPSHOT_VERSION, TABS, ChartSeries, CheckState, Notice, SessionEvents,
    StageInfo, StageView, stage_label,
)
from ..strategies.base import Strategy
from .crosscheck import CrossCheckPart
from .replay import ReplayPart
from .setup import SetupPart
from .source import SourcePart
from .view import ViewPart, view_stage

__all__ = ["AFTER", "BEFORE", "EVENTS", "FILTER_KEYS", "SNAPSHOT_VERSION", "TABS", "ChartSeries", "CheckState", "Notice",
           "Session", "SessionEvents", "StageInfo", "StageView", "gc_paused", "stage_label"]


# a list of this many messages or fewer has its chart bars and tool pairs made in the run, before its result is
# shown (~0.1 s at 10k messages); a bigger one's are made after (``Session.prepare_lists``: ~1.5 s at 100k)
PREPARED_IN_RUN = 20_000


class Session:
    """The observable model the window shows, composed of parts: ``source`` (the file and the real context run),
    ``setup`` (strategy, parameters, order, summarizer), ``view`` (stage, view mode, selection, tab, filters),
    ``replay`` (the runs compared, the timeline's cursor, the call shown) and ``crosscheck`` (the verdict). The
    session itself runs the pipeline and holds its result; every part announces its changes on ``events``."""

    def __init__(self, workspace: Workspace | None = None, executor: Executor | None = None,
                 check_executor: Executor | None = None, strategy: str | Strategy | None = None,
                 params: dict | None = None, summarizer: str = "offline"):
        self.events = SessionEvents(self)
        self.workspace = workspace or Workspace()
        self.meter = SizeMeter()
        ex = executor or InlineExecutor()
        self.pipeline = Worker(ex, self._pipeline_done, self._pipeline_failed, on_progress=self._progress,
                               name="pipeline", foreground=True)
        # after a result is shown: the chart's bars and the tool pair index of its lists (``_prepare_lists``)
        self.preparer = Worker(ex, self._prepared, self._prepared, name="prepare", courteous=True)
        # result and view
        self.result: PipelineResult | None = None
        self.runs = 0
        self.error: Notice | None = None
        self.progress_text = ""
        self.pending_view: dict | None = None      # restore(): applied when the next result arrives
        self.open_at_first_compaction = False       # the window: a compacted file opens before its first compaction
        self._defer_runs = False
        # the strategy's token estimator, kept for the next run while no run uses it: it learns the loaded
        # conversation once (claude_code's bind: ~1 s at 100k messages, most of a parameter change's run)
        self._tokens: tuple | None = None            # (strategy, estimator)
        self._running_engines: dict = {}             # id -> engine of the runs not yet ended (dict ops: atomic)
        self.source = SourcePart(self, ex)
        self.setup = SetupPart(self, strategy, params, summarizer)
        self.view = ViewPart(self)
        self.replay = ReplayPart(self, ex)
        self.crosscheck = CrossCheckPart(self, check_executor or ex)

    @property
    def trace(self):
        return self.result.trace if self.result is not None else None

    @property
    def busy(self) -> bool:
        return self.source.loader.busy or self.pipeline.busy or self.replay.replayer.busy or \
            self.crosscheck.checker.busy or self.preparer.busy

    def run(self) -> None:
        """Run the pipeline (and its variants) over the source messages, in the background."""
        if self._defer_runs:
            return
        self.replay.call_job = self.replay.call_wanted = None
        self.replay.shown_call = None
        if self.source.conversation is None or self.source.loading is not None:
            return            # (while a file loads, the run starts when it is there)
        try:
            summ = self.setup.summarizer_object()
        except (ValueError, ImportError) as e:
            self.set_error(f"Summarizer: {e}", "Choose offline, anthropic[:MODEL] or fixed:TEXT in the strategy panel.")
            return
        slow = any(layer.llm for layer in self.setup.strategy.layers) and "anthropic" in self.setup.summarizer
        self.progress_text = f"running {self.setup.strategy.name}" + (" (an LLM may summarise)" if slow else "")
        self.replay.replay_stale = True
        engine = Engine(self.setup.strategy, dict(self.setup.params), workspace=self.workspace, summarizer=summ,
                        meter=self.meter, order=self.setup.order, tokens=self._token_estimator())
        self._running_engines[id(engine)] = engine
        conv, msgs = self.source.source_conversation(), self.source.source_messages
        # the last result over the same list: its steps before the first layer a changed parameter concerns
        # are kept (a change of the last layer's parameter re-runs the last layer only)
        prev = self.result if self.result is not None and self.result.trace.input is msgs \
            and not self.result.cancelled else None
        self.events.running("run")
        self.pipeline.start(lambda state: self._run_job(engine, msgs, conv, state, prev))
        if self.view.tab == "timeline":
            self.replay.run_replay()

    def _token_estimator(self):
        """The strategy's token estimator for a run: the one the last run used when it is the same strategy's and
        no run still uses it (a cancelled run ends at its next layer), else a new one (None: the engine's own)."""
        st = self.setup.strategy
        if st.token_estimator is None:
            return None
        if self._tokens is None or self._tokens[0] is not st or \
                any(e.tokens is self._tokens[1] for e in list(self._running_engines.values())):
            self._tokens = (st, st.token_estimator())
        return self._tokens[1]

    def _run_job(self, engine: Engine, msgs: list, conv, state, prev: PipelineResult | None) -> PipelineResult:
        """In the background: the pipeline, then what the views draw of its steps (aligned rows), so that
        showing the result and stepping cost the GUI thread no more than painting."""
        try:
            return self._run_steps(engine, msgs, conv, state, prev)
        finally:
            self._running_engines.pop(id(engine), None)

    def _run_steps(self, engine: Engine, msgs: list, conv, state, prev: PipelineResult | None) -> PipelineResult:
        with gc_paused():
            result = run_with_variants(engine, msgs, conv, cancel=state.cancel, progress=state.set_progress,
                                       reuse=prev)
            # a big list's steps: only the one the window will show first (the rest after the result is shown,
            # ``_prepare``: hermes's five re-run steps over 100k messages took 0.3 s of a parameter change)
            big = len(msgs) > PREPARED_IN_RUN
            first = self._first_shown(result.trace) if big else []
            for step in result.trace.steps:
                if state.cancel.is_set():
                    break
                if big and not any(step is x for x in first):
                    continue
                self._align(step)
            if not big:                                 # (a bigger list's after its result is shown)
                self._prepare_lists([result.trace.input] + [st.messages for st in result.trace.steps
                                                            if st.changed], state)
        return result

    def _first_shown(self, trace) -> list:
        """The steps whose stages the result shows first: ``_pipeline_done`` shows the stage shown before, then
        applies the view waiting for it, if any (a compacted file opens at the first layer that changed the list)."""
        stages = {min(self.view.stage, len(trace.steps))}
        pending = self.pending_view
        if isinstance(pending, dict):
            stages.add(view_stage(pending, trace.steps))
        return [trace.steps[k - 1] for k in sorted(stages) if k > 0]

    def _align(self, step) -> None:
        """What the views draw of a step (its aligned rows, each side's status), made once per step."""
        self.view.align.get(step)
        self.view.status_after.get(step)
        self.view.status_before.get(step)

    def _prepare(self, lists: list, steps: list, state) -> list:
        """After a big list's result is shown, in the background: the steps' rows (``_align``), then the lists'
        bars and pairs (``_prepare_lists``). Courteous once, at its start (the user looks at the result just
        shown); the rows then go on while the user steps (each step waiting here would leave the window to align
        the stage it shows itself, ~0.1 s at 100k messages), stopped only by a cancel."""
        if steps and not state.cancel.is_set():
            with gc_paused():
                for step in steps:
                    if state.cancelled():
                        break
                    self._align(step)
        return self._prepare_lists(lists, state)

    @staticmethod
    def _prepare_lists(lists: list, state) -> list:
        """After a result is shown, in the background (courteous: it waits while the user steps or a run goes
        on): the chart's bars of each list a stage shows (a chart without them draws them when they are here,
        ``events.prepared``) and the tool pairs of the input and of each list a step changed (showing a step
        selects the first message it changed and the list highlights its partners: indexing hermes's
        converted list of 100k messages, or the input, froze the window ~0.4 s at its first visit); those
        indexes are pinned (``pin_pairs``) so that the events' replay does not push them out. Made
        before the result was shown, they kept it from the screen ~1.5 s at 100k messages (they still are for a
        list of ``PREPARED_IN_RUN`` messages or fewer)."""
        with gc_paused():
            for msgs in lists:
                if state.cancel.is_set():
                    break
                present.size_bars(msgs, pause=state.cancel.is_set)
            for msgs in lists:
                if state.cancel.is_set():
                    break
                present.pair_index(msgs)
            if not state.cancel.is_set():
                # pinned: the events' replay indexes hundreds of lists after this, and a parameter change's
                # re-run of Claude Code's auto_compact reads the pairs of the list it compacts
                pin_pairs(lists)
            if not state.cancel.is_set():
                # the messages the run before made and this one replaced (a re-run of time_micro_compact: 50k at
                # 100k messages) are held by nothing but the per-message table now that its result is dropped:
                # forget them. (In the run, before its result was shown, the result before still held them, and
                # the look over the whole table cost a parameter change 0.13-0.43 s at 100k messages.)
                FACTS.collect(min_dead=len(FACTS) // 8)
        return lists

    def _prepared(self, _value) -> None:
        self.events.prepared(None)

    def prepare_lists(self, lists: list, steps: Sequence = ()) -> None:
        """Make the rows of ``steps``, then the chart's bars and the tool pairs of ``lists``, in the background
        (``_prepare``)."""
        todo: list = []
        for msgs in lists:
            if not any(msgs is x for x in todo):
                todo.append(msgs)
        self.preparer.start(self._prepare, todo, list(steps))

    def cancel(self) -> None:
        """Stop the run after the current layer (what ran is shown) and the replay; forget a load."""
        if self.source.loader.busy:
            self.source.loader.cancel()
            self.source.loading = None
            self.events.running(None)
        self.pipeline.interrupt()
        self.replay.replayer.interrupt()
        self.progress_text = "cancelling after the current layer"
        self.events.progress(self.progress_text)

    def show_trace(self, conv, trace) -> None:
        """Show a trace made elsewhere (the live agent's own run) without running the pipeline."""
        self.pipeline.cancel()
        self.source.conversation = conv
        self.source.title = conv.title or self.source.title
        self.events.source(self.source.source_dict())
        self._pipeline_done(PipelineResult(trace, params=dict(trace.params)))

    def close(self) -> None:
        """Stop all background work; nothing more is delivered (the window is closing)."""
        for w in (self.source.loader, self.pipeline, self.replay.replayer, self.crosscheck.checker, self.preparer):
            w.cancel()

    def _progress(self, text: str) -> None:
        self.progress_text = f"running {self.setup.strategy.name}: {text}"
        self.events.progress(self.progress_text)

    def _pipeline_failed(self, exc: BaseException) -> None:
        self.replay.call_job = None
        self.events.running(None)
        if len(self.source.source_messages) > PREPARED_IN_RUN:
            self.prepare_lists([self.source.source_messages])     # the chart of the messages shown
        hint = getattr(exc, "hint", "") or "Check the parameters; if it persists, report it with the file."
        self.set_error(f"The pipeline failed: {type(exc).__name__}: {exc}", hint)

    def _pipeline_done(self, result: PipelineResult) -> None:
        old, old_shown = self.trace, self.view.shown
        sel0 = None                   # the selection as an index into the input, so it survives the re-run
        if self.view.selection is not None:
            if old is not None and old.input is result.trace.input:
                sel0 = old.map_index(self.view.selection, old_shown, 0)
            elif old is None:
                sel0 = self.view.selection
        self.result = result
        self.runs += 1
        # the rows of this result's steps were aligned in the background (kept steps: already before)
        shown = list(result.trace.steps) + [s for v in result.variants if v.trace for s in v.trace.steps]
        for cache in (self.view.align, self.view.status_before, self.view.status_after):
            cache.retain(shown)
        tr = result.trace
        self.view.stage = min(self.view.stage, len(tr.steps))
        failed = [s for s in tr.steps if s.error]
        if failed:
            s = failed[0]
            kind = f"(error kind: {s.summary['kind']}) " if s.summary and s.summary.get("kind") else ""
            self.set_error(f"{s.layer} failed: {s.error}",
                           kind + "The step is marked failed and its input is kept unchanged; nothing is lost. "
                                  "Fix the cause (API key, network) or pick the offline summarizer, then press F5.")
        elif result.cancelled:
            self.set_error(f"Cancelled after {len(tr.steps)} of {len(self.setup.strategy.layers)} layer(s).",
                           "Press F5 to run the pipeline again.")
        else:
            self.set_error(None)
        ci = result.call_index
        self.replay.shown_call, self.replay.call_job = ci, None
        self.events.running(None)
        self.events.result(result)
        self.view.shown = 0
        self.view.selection = sel0
        self.view.show_stage(self.view.stage, remap_from=0 if sel0 is not None else None)
        if self.pending_view is not None:
            pending, self.pending_view = self.pending_view, None
            self.view.apply_view(pending)
        if len(tr.input) > PREPARED_IN_RUN:        # (a smaller list's were made in the run)
            self.prepare_lists([tr.input] + [st.messages for st in tr.steps if st.changed], tr.steps)
        if ci is not None:
            self.events.call(ci)
            want = self.replay.call_wanted
            if want is not None and want != ci and self.replay.follow:
                self.replay.start_call_job(want)
        self.events.ready(result)
        # after "ready": the window counts a result shown as the user's action, and the check waits for it
        self.crosscheck.start_check()

    def persisted_file(self, text: str) -> tuple[str, str] | None:
        """For a persisted tool result's text: (path, content) of the file it points to, looked up in
        the workspace, then among the shown run's persist edits; None for any other text."""
        from ..layers.s08 import persisted_reference
        rel = persisted_reference(text)
        if rel is None:
            return None
        content = self.workspace.read_persisted(rel)
        path = str(self.workspace.root / rel)
        if content is None and self.trace is not None:
            for s in self.trace.steps:
                for e in s.edits:
                    if e.kind == "persist" and e.path and Path(e.path).name == Path(rel).name:
                        try:
                            content, path = Path(e.path).read_text(encoding="utf-8", errors="replace"), e.path
                        except OSError:
                            pass
        if content is None:
            return path, f"(the persisted file {rel} is not in this session's workspace {self.workspace.root})"
        return path, content

    def set_error(self, what: str | None, todo: str = "") -> None:
        notice = Notice(str(what), todo) if what is not None else None
        if notice != self.error or notice is not None:
            self.error = notice
            self.events.error(notice)

    def snapshot(self) -> dict:
        """The whole user-visible state as a plain dict (JSON-able); see ``restore``."""
        st = self.setup.strategy
        return {
            "version": SNAPSHOT_VERSION,
            "source": {"path": str(Path(self.source.path).resolve()) if self.source.path else None,
                       "conversation": self.source.conversation_index, "segment": self.source.segment,
                       "call": self.source.call},
            "strategy": st.name,
            "strategy_chosen": self.setup.strategy_chosen, "strategy_pinned": self.setup.strategy_pinned,
            "params": {k: v for k, v in self.setup.params.items() if v != st.param(k).default},
            "summarizer": self.setup.summarizer,
            "order": list(self.setup.order) if self.setup.order is not None else None,
            "view": {"stage": self.view.stage, "mode": self.view.view_mode, "selection": self.view.selection,
                     "block": self.view.selected_block, "tab": self.view.tab, "filters": dict(self.view.filters)},
            "replay": {"compare": list(self.replay.compare_names), "extra": self.replay.compare_extra, "cursor": self.replay.cursor,
                       "follow": self.replay.follow},
        }

    def restore(self, snap: dict) -> bool:
        """Bring back a ``snapshot()``: the file (loaded again only when it differs), the strategy and
        its parameters, then, once the pipeline ran, the stage, view mode and selection; the replay's
        runs and cursor. False (with ``error`` set) when the file cannot be opened or the snapshot is
        not one this version reads."""
        if not isinstance(snap, dict) or snap.get("version") != SNAPSHOT_VERSION:
            self.set_error("This state was saved by another version of Compactscope.",
                           f"Save it again (snapshot version {SNAPSHOT_VERSION}).")
            return False
        src = snap.get("source") or {}
        view = snap.get("view") or {}
        rep = snap.get("replay") or {}
        self.pending_view = view
        self.replay.compare_names, self.replay.compare_extra = list(rep.get("compare") or []), str(rep.get("extra") or "")
        self.replay.follow = bool(rep.get("follow", True))
        self.events.compare({"names": list(self.replay.compare_names), "extra": self.replay.compare_extra})
        self.events.follow(self.replay.follow)
        with self._runs_deferred():
            if not self.setup.set_strategy(snap.get("strategy") or self.setup.strategy.name, snap.get("params") or {}):
                return False
            self.setup.strategy_chosen = bool(snap.get("strategy_chosen", True))     # the file's own stays the file's own
            self.setup.strategy_pinned = bool(snap.get("strategy_pinned", self.setup.strategy_pinned))
            self.setup.set_summarizer(snap.get("summarizer") or "offline", run=False)
            if snap.get("order"):
                self.setup.order = list(snap["order"])
                self.events.order(self.setup.order)
            self.view.set_filters(**{k: v for k, v in (view.get("filters") or {}).items() if k in FILTER_KEYS})
            path = src.get("path")
            if path and (self.source.path is None or Path(path).resolve() != Path(self.source.path).resolve()):
                self.setup.keep_strategy = True          # the snapshot's strategy stays when the file opens
                try:
                    if not self.source.open(path, int(src.get("conversation") or 0)):
                        return False
                finally:
                    if self.source.loading is None:
                        self.setup.keep_strategy = False
            elif src.get("conversation", 0) != self.source.conversation_index:
                self.source.select_conversation(int(src.get("conversation") or 0))
            self.source.segment, self.source.call = src.get("segment"), src.get("call")
        self.events.source(self.source.source_dict())
        self.run()
        tab = view.get("tab") or "diff"
        if tab != self.view.tab:
            self.view.tab = tab
            self.events.tab(tab)
        if tab == "timeline":
            self.replay.run_replay()
        if rep.get("cursor") is not None:
            self.replay.cursor_after_replay = int(rep["cursor"])
            self.replay.apply_cursor()
        return True

    def _runs_deferred(self):
        """Within: changes do not start runs (restore sets everything, then runs once)."""
        session = self

        class Deferred:
            def __enter__(self):
                session._defer_runs = True

            def __exit__(self, *exc):
                session._defer_runs = False
                return False
        return Deferred()
