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

import gc
import os
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import present, strategies
from .align import CHANGED, DUPLICATED, INSERTED, REMOVED, RowKinds, align
from .facts import FACTS
from .identity import IdentityCache
from .events import EventGroup
from .contexts import is_context
from .explain import cut_lines, find_boundary_step, is_snip_step, lost_results
from .jobs import LATEST, Executor, InlineExecutor, Worker
from .pipeline import Engine, PipelineResult, run_with_variants
from .size import SizeMeter
from .strategies.base import DIFFER, Strategy, Verdict
from .strategies.spec import RUN_FORMAT, compare_runs
from .summarizers import make_summarizer
from .workspace import Workspace

SNAPSHOT_VERSION = 1
AFTER, BEFORE = "after", "before"
TABS = ("diff", "boundary", "timeline")
FILTER_KEYS = ("search", "role", "block", "changed_only", "matches_only")
EVENTS = ("source", "strategy", "params", "summarizer", "order", "running", "progress", "result", "stage",
          "view_mode", "selection", "error", "verdict", "compare", "replay_running", "replay", "call", "cursor",
          "follow", "tab", "filters", "ready")


@dataclass(frozen=True)
class Notice:
    """An error for the banner: what happened, and what to do."""
    what: str
    todo: str = ""


@dataclass(frozen=True)
class StageInfo:
    """One stage of the stepper: Original, then one per step."""
    name: str
    label: str
    status: str            # "original" | "changed" | "unchanged" | "failed"
    explanation: str


@dataclass
class StageView:
    """What the message list and the panels show for the current stage in the current view mode."""
    messages: list
    step: Any = None                                   # the layer's Step (None on Original)
    rows: list | None = None                           # core.align rows of the step
    status: dict = field(default_factory=dict)         # message index -> changed/inserted/removed/duplicated
    findings: list = field(default_factory=list)
    cuts: dict = field(default_factory=dict)           # message index -> [(text, "cut" | "initial")]
    badges: dict = field(default_factory=dict)         # message index -> short note (who wrote a summary)
    where: str = ""                                    # "after L1 snip" / "in the conversation as loaded"
    shown: int = 0                                     # the stage whose messages these are


@dataclass
class ChartSeries:
    labels: list
    sizes: list
    tokens: list
    threshold: float | None
    unit: str
    threshold_label: str
    movable: bool


@dataclass
class CheckState:
    """The strategy's cross-check of the shown run: its name, the verdict (None while it runs)."""
    name: str
    description: str
    verdict: Verdict | None = None


BACKGROUND_LOAD_BYTES = 4_000_000      # a file this big loads in the background (the window stays live)


_GC_LOCK = threading.Lock()
_INFER_LOCK = threading.Lock()         # Session._infer's cache is written by the load's worker too
_GC_PAUSES = [0, True]                 # [workers inside gc_paused(), whether the GC was on before the first]


@contextmanager
def gc_paused():
    """The cyclic GC off while a worker builds a big result, what it built frozen out of the GC after.
    A full collection walks every tracked object, the lists of 100k messages each step holds among
    them, with the interpreter lock held: in a worker that is a stall of the window's thread (0.6 s at
    100k messages) and most of an alignment's time. What a pipeline run or a load builds is long-lived
    and acyclic (messages, lists, rows), so it is frozen like the loaded transcript; the memory of
    the objects frozen is still freed when they are dropped. (Not freezing would leave every object
    made meanwhile, by any thread, to one collection of the youngest generation when the GC is back on:
    0.14-0.23 s with the interpreter lock held after a hermes cross-check at 100k messages.)"""
    with _GC_LOCK:
        if _GC_PAUSES[0] == 0:
            _GC_PAUSES[1] = gc.isenabled()
            gc.disable()
        _GC_PAUSES[0] += 1
    try:
        yield
    finally:
        with _GC_LOCK:
            _GC_PAUSES[0] -= 1
            if _GC_PAUSES[0] == 0:
                gc.freeze()
                if _GC_PAUSES[1]:
                    gc.enable()


# The start of a big JSONL file, shown while the whole file loads: a few screens of rows (the 10k bench
# session: 176 messages). Less to prepare and show beside the loading worker than 1 MB (578 messages): the
# open's longest stall at 10k went 80-101 -> 65-67 ms. Files whose first lines are longer are read on up to
# PREVIEW_MAX_BYTES, so that a preview still has lines.
PREVIEW_BYTES = 300_000
PREVIEW_MAX_BYTES = 1_000_000


def _load_for_view(path: str, state=None, prepare=None):
    """Load a file in the background: first its start (a JSONL file cut at a line: its first messages,
    posted as a partial result so the list shows rows at once), then the whole file, with what the first
    views draw of it (block sizes, the message metadata by identity, and what ``prepare(conversation)``
    makes: ``Session._prepare``) computed here too."""
    from .loaders import load
    if state is not None:
        preview = _preview(path)
        if preview is not None and not state.cancel.is_set():
            _made_for_view(preview)
            state.set_partial_result(preview)
    # out of the cyclic GC (see _loaded): a collection that walks 100k+ loaded objects in this thread
    # holds the interpreter for seconds, and the window with it
    with gc_paused():
        result = load(path)
        for conv in result.conversations[:1]:
            _made_for_view(conv, prepare)
    return result


def _made_for_view(conv, prepare=None) -> None:
    """What the first views of a conversation draw of it, made in the load's worker: the message metadata by
    identity, the chart's block sizes, and ``prepare(conv)`` (``Session._prepare``)."""
    conv.meta_by_identity()
    present.shown(len(conv.messages))
    present.size_bars(conv.history())
    if prepare is not None:
        prepare(conv)


def _preview(path: str):
    """The conversation in the first ``PREVIEW_BYTES`` of a JSONL file, or up to ``PREVIEW_MAX_BYTES`` when its
    first two lines are longer (None for another format or when that part does not load on its own)."""
    import tempfile
    from .loaders import load
    try:
        with open(path, "rb") as f:
            head = f.read(max(PREVIEW_BYTES, PREVIEW_MAX_BYTES))
        cut = head.rfind(b"\n", 0, PREVIEW_BYTES)
        if cut <= 0 or b"\n" not in head[:cut]:
            cut = head.rfind(b"\n")
        if cut <= 0 or not head.lstrip().startswith(b"{") or b"\n" not in head[:cut]:
            return None
        fd, tmp = tempfile.mkstemp(prefix="compactscope-preview-", suffix=Path(path).suffix or ".jsonl")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(head[:cut + 1])
            res = load(tmp)
        finally:
            os.unlink(tmp)
        conv = res.conversations[0] if res.conversations else None
        return conv if conv is not None and conv.messages else None
    except Exception:  # noqa: BLE001 - a preview is a courtesy: the real load says what is wrong
        return None


def _checked(cross_check, trace):
    """A cross-check's verdict, made with the cyclic GC paused: hermes's copies every message it compares
    (copy.deepcopy), and the full collections that many new objects set off held the interpreter lock ~0.1 s
    each (UI stalls at 100k messages). The copies are dropped (by reference count) when it returns."""
    with gc_paused():
        return cross_check.run(trace)


def stage_label(strategy: Strategy, name: str) -> str:
    if name == "original":
        return "Original"
    try:
        return strategy.layer(name).label or name
    except (KeyError, AttributeError):
        return name


class Session:
    def __init__(self, workspace: Workspace | None = None, executor: Executor | None = None,
                 check_executor: Executor | None = None, strategy: str | Strategy | None = None,
                 params: dict | None = None, summarizer: str = "offline"):
        self.events = EventGroup(self, *EVENTS)
        self.workspace = workspace or Workspace()
        self.meter = SizeMeter()
        self.summarizers: dict = {}                 # spec -> CachedSummarizer (stepping never pays twice)
        ex = executor or InlineExecutor()
        self.pipeline = Worker(ex, self._pipeline_done, self._pipeline_failed, on_progress=self._progress,
                               name="pipeline")
        self.replayer = Worker(ex, self._replay_done, self._replay_failed, name="replay")
        self.loader = Worker(ex, self._load_done, self._load_failed, on_partial=self._load_preview, name="load")
        self._loading: tuple | None = None           # (path, conversation) of the file loading in the background
        self.checker = Worker(check_executor or ex, self._check_done, self._check_failed, policy=LATEST,
                              name="cross-check")
        # source
        self.path: str | None = None
        self.load_result = None
        self.conversation = None
        self.conversation_index = 0
        self.title = ""
        self.segment: int | None = None
        self.call: int | None = None
        self._meta_cache: tuple | None = None       # (conversation, its length, id(message) -> MessageMeta)
        self._view_cache: tuple | None = None       # (choice, conversation, the real-context view run on)
        self._marks: tuple | None = None            # (conversation, core.contexts.compaction_marks of it)
        # strategy
        names = strategies.available() or ["s08"]
        st = strategies.get(strategy) if isinstance(strategy, str) else strategy
        self.strategy: Strategy = st or strategies.get(names[0])
        self.params: dict = self.strategy.resolve(params or {})
        self.pinned: dict = {}                      # parameters the user set: they win over inferred ones
        # which strategy: a file opens with its own pipeline (strategies.choose_strategy, the rule of every
        # command) until the user names one (gui --strategy: pinned; the strategy box, a lesson: chosen); the
        # user's strategy then stays for the files opened after, and the status line says it was chosen (with
        # a warning when it is not the file's own pipeline)
        self.strategy_pinned = False
        self.strategy_chosen = False
        self._keep_strategy = False                 # restore(): the next file opened keeps the strategy
        self.inferred = None                        # strategies.Inferred of the shown conversation
        self.infer = True                           # read defaults from the session (gui --no-infer: False)
        self._inferred_set: dict = {}               # the parameters the last inference set, as it set them
        self._inferences: dict = {}                 # _infer's cache: key -> (strategy, conversation, Inferred)
        self.summarizer = summarizer or "offline"
        self.order: list[str] | None = None
        # result and view
        self.result: PipelineResult | None = None
        self.runs = 0
        self.stage = 0
        self.view_mode = AFTER
        self.selection: int | None = None           # message index in the shown list
        self.selected_block: int | None = None
        self._shown = 0                             # the stage whose messages the selection indexes
        self.tab = "diff"
        self.filters = {"search": "", "role": "", "block": "", "changed_only": False, "matches_only": False}
        self.error: Notice | None = None
        self.progress_text = ""
        self._align = IdentityCache(align)         # step -> its aligned rows
        self._list_marks = IdentityCache(self._compute_marks, floor=16)   # shown list -> its real compactions
        # step -> message index -> status, on each side (from the rows; computed with them, in the background)
        # (one byte per message of the side, not a dict entry per changed message)
        self._status_before = IdentityCache(lambda st: {} if not st.changed else RowKinds(
            self._align.get(st), 0, (REMOVED, CHANGED, DUPLICATED), len(st.input)))
        self._status_after = IdentityCache(lambda st: {} if not st.changed else RowKinds(
            self._align.get(st), 1, (INSERTED, CHANGED, DUPLICATED), len(st.messages)))
        self._pending_view: dict | None = None      # restore(): applied when the next result arrives
        self._defer_runs = False
        self._cursor_after_replay: int | None = None
        # cross-check
        self.check: CheckState | None = None
        self._checking = None                        # the trace being checked
        # replay
        self.compare_names: list[str] = []
        self.compare_extra = ""
        self.replay_results: list = []
        self.replay_stale = True
        self.cursor: int | None = None
        self.follow = True
        self.replay_free = False                    # timeline replay: free-running (--free), else following reality
        self.shown_call: int | None = None
        self._call_wanted: int | None = None
        self._call_job: int | None = None
        self._iters: list = []

    # ================================================================== properties
    @property
    def trace(self):
        return self.result.trace if self.result is not None else None

    @property
    def replay_result(self):
        return self.replay_results[0] if self.replay_results else None

    @property
    def call_running(self) -> bool:
        """A replayed call's pipeline run is on its way to the stepper."""
        return self._call_job is not None

    @property
    def busy(self) -> bool:
        return self.loader.busy or self.pipeline.busy or self.replayer.busy or self.checker.busy

    @property
    def variant(self) -> str | None:
        """The name of the strategy variant the parameters select (None: the main way)."""
        return next((v.name for v in self.strategy.variants if v.active(self.params)), None)

    @property
    def source_messages(self) -> list:
        """The messages the pipeline runs on: the conversation, or one segment of it (the context after
        a real compaction), or exactly what was sent at one model call (``core.contexts``)."""
        view = self.source_conversation()
        if view is None:
            return []
        # the whole conversation: each message once (Inspect/hermes segments repeat the compacted context, the
        # copies marked ``copy_of``); a segment or a call: the real context, copies included
        return view.messages if is_context(view) else view.history()

    def source_conversation(self):
        """The conversation the pipeline runs on, as ``run`` takes it: a real-context view (``core.contexts``:
        one segment, or what was sent at model call ``call``) or the whole conversation (``segment`` None).
        The same object while the choice is unchanged (a re-run over the same list resumes)."""
        conv = self.conversation
        if conv is None:
            return None
        key = (id(conv), len(conv.messages), self.segment, self.call)
        hit = self._view_cache
        if hit is not None and hit[0] == key and hit[1] is conv:
            return hit[2]
        from .contexts import ContextError, real_context
        try:
            view = conv if self.segment is None and self.call is None else real_context(conv, self.segment, self.call)
        except ContextError:
            view = conv
        self._view_cache = (key, conv, view)
        return view

    # ================================================================== source
    def open(self, path: str, conversation: int = 0) -> bool:
        """Load a file; on failure ``error`` says what went wrong and what to do, and False is returned.
        On a background executor (the window) a file of ``BACKGROUND_LOAD_BYTES`` or more is loaded in
        the background: True says the load started ("running" is "load" meanwhile, with progress); a
        failure then arrives as ``error``, the conversation as ``source``."""
        from .loaders import load
        try:
            size = os.path.getsize(path)
        except OSError as e:
            self.set_error(f"Could not read {path}: {e.strerror or e}", "Check the path and the file's permissions.")
            return False
        self.loader.cancel()                      # a file opened meanwhile wins over one still loading
        if size >= BACKGROUND_LOAD_BYTES and not isinstance(self.loader.executor, InlineExecutor):
            self.pipeline.cancel()
            self.progress_text = f"loading {Path(path).name} ({size / 1e6:.0f} MB)"
            self._loading = (str(path), conversation)
            self.loader.start(lambda state: _load_for_view(path, state, self._prepare))
            self.events.running("load")
            self.events.progress(self.progress_text)
            return True
        try:
            result = load(path)
        except Exception as e:  # noqa: BLE001 - LoadError, OSError: said with what to do
            self._load_error(str(path), e)
            return False
        return self._loaded(str(path), result, conversation)

    def _loaded(self, path: str, result, conversation: int) -> bool:
        if not result.conversations:
            self.set_error(f"{path} holds no conversation.", "Open another file.")
            return False
        # a loaded transcript is long-lived and has no cycles: keep the cyclic GC from rescanning its
        # 100k+ objects on every collection (a 10k-message list otherwise makes each step ~3x slower)
        gc.freeze()
        self.path, self.load_result = str(path), result
        self.set_error(None)
        k = min(max(conversation, 0), len(result.conversations) - 1)
        self._use_own_strategy(result.conversations[k])
        self._set_source(result.conversations[k], k, Path(path).name)
        return True

    def _use_own_strategy(self, conv) -> None:
        """A file opened: its own pipeline (``strategies.choose_strategy``), unless the user named a strategy.
        The user's pinned parameters the strategy has stay; the rest start from its defaults."""
        keep, self._keep_strategy = self._keep_strategy, False
        if self.strategy_pinned or self.strategy_chosen or keep:
            return
        name = self._own_strategy_name(conv)
        same = name == self.strategy.name
        try:
            st = self.strategy if same else strategies.get(name)
            params = st.resolve({**(self.params if same else {}),
                                 **{k: v for k, v in self.pinned.items() if k in st.defaults()}})
        except (KeyError, ValueError, ImportError):
            return
        if same and params == self.params:
            return
        if not same:
            self.strategy, self.order = st, None
            self.events.strategy(st)
        self.params = params
        self.events.params(dict(params))

    def _own_strategy_name(self, conv) -> str:
        return strategies.choose_strategy(conv).name

    def _opening_strategy(self, conv):
        """The strategy ``conv`` will run with when it is shown (``_use_own_strategy``'s rule; nothing changes)."""
        if self.strategy_pinned or self.strategy_chosen or self._keep_strategy:
            return self.strategy
        try:
            return strategies.get(self._own_strategy_name(conv))
        except (KeyError, ImportError):
            return None

    def _prepare(self, conv) -> None:
        """In the load's worker, before the conversation is shown: what showing it first walks every message
        for, made there so that the window's thread finds it made (at 100k messages these froze the window
        ~0.6 s when the load arrived): its model calls and segments (the context picker; kept on the
        conversation by ``core.contexts``), and the defaults the strategy it opens with infers from it. (Not the
        file's own strategy's when another opens it: here that delayed the first result ~0.25 s at 100k messages,
        and made after the first run it slowed the first steps; a switch to it infers on the window's thread.)"""
        from . import contexts
        try:
            contexts.call_indices(conv)
            contexts.segments(conv)
            st = self._opening_strategy(conv)
            if st is not None and self.infer:
                self._infer(st, conv)
        except Exception:  # noqa: BLE001 - made ahead as a courtesy: the window's thread asks again and says
            pass

    def _infer_key(self, strategy, conv) -> tuple:
        return strategy.name, id(getattr(strategy, "infer", None)), id(conv), len(conv.messages)

    def _inferred_for(self, strategy, conv):
        """The inference ``_infer`` keeps for (strategy, conv), or None."""
        hit = self._inferences.get(self._infer_key(strategy, conv))
        return hit[2] if hit is not None and hit[0] is strategy and hit[1] is conv else None

    def _infer(self, strategy, conv):
        """``strategies.infer_params(strategy, conv)``, kept for the last few (strategy, conversation) pairs:
        a Claude Code inference reads every model call's usage (~0.25 s at 100k messages), made in the
        load's worker (``_prepare``) and asked again at each strategy change (a switch back finds it)."""
        from .strategies import infer_params
        hit = self._inferred_for(strategy, conv)
        if hit is not None:
            return hit
        key = self._infer_key(strategy, conv)
        inf = infer_params(strategy, conv)
        with _INFER_LOCK:
            self._inferences[key] = (strategy, conv, inf)
            for old in list(self._inferences)[:-4]:
                del self._inferences[old]
        return inf

    def pin_strategy(self, name=None) -> bool:
        """The strategy the user named (gui --strategy; None: the current one): every file opens with it."""
        ok = True if name is None else self.set_strategy(name)
        self.strategy_pinned = self.strategy_pinned or ok
        return ok

    @property
    def strategy_choice(self):
        """Which strategy runs and why (``strategies.StrategyChoice``): the file's own pipeline, or chosen."""
        chosen = self.strategy_chosen or self.strategy_pinned
        return strategies.choose_strategy(self.conversation, self.strategy.name if chosen else None,
                                          "with --strategy" if self.strategy_pinned else "in the window")

    def _load_error(self, path: str, e: BaseException) -> None:
        from .loaders import LoadError
        if isinstance(e, LoadError):
            self.set_error(f"Could not open {path}: {e}",
                           "Check that the file is a Claude Code session, an Anthropic or OpenAI message list, an "
                           "Inspect log, a Hermes session or a Compactscope recording (compactscope info FILE "
                           "says what it sees).")
        elif isinstance(e, OSError):
            self.set_error(f"Could not read {path}: {e.strerror or e}", "Check the path and the file's permissions.")
        else:
            self.set_error(f"Could not open {path}: {type(e).__name__}: {e}",
                           "This is a bug in Compactscope: please report it with the file.")

    def _load_preview(self, conv) -> None:
        """The first messages of the file loading: shown (Original stage), nothing is run on them."""
        if self._loading is None:
            return
        name = Path(self._loading[0]).name
        self.conversation, self.conversation_index, self.title = conv, 0, f"{name} (loading\u2026)"
        self.segment = self.call = None
        self.result = None
        self.stage, self.selection, self.selected_block, self._shown = 0, None, None, 0
        self.progress_text = f"loading {name}: the first {len(conv.messages):,} messages shown"
        self.events.progress(self.progress_text)
        self.events.source(self._source_dict())
        self.events.result(None)
        self.events.stage(0)

    def _load_done(self, result) -> None:
        path, conversation = self._loading or ("", 0)
        self._loading = None
        self.events.running(None)
        self._loaded(path, result, conversation)

    def _load_failed(self, exc: BaseException) -> None:
        path = (self._loading or ("", 0))[0]
        self._loading = None
        self.events.running(None)
        self._load_error(path, exc)

    def select_conversation(self, k: int) -> None:
        if self.load_result is not None and 0 <= k < len(self.load_result.conversations):
            self._set_source(self.load_result.conversations[k], k, Path(self.path).name if self.path else "")

    def set_conversation(self, conv, title: str = "", run: bool = True) -> None:
        """Show a conversation that does not come from a file the session opened (live sources).
        ``run=False`` keeps the result shown (the live agent's own run) and only marks the replay stale."""
        if not run:
            self.conversation = conv
            self.replay_stale = True
            self.events.source(self._source_dict())
            if self.tab == "timeline":
                self.run_replay()
            return
        self._set_source(conv, 0, title or conv.title or "conversation")

    def _set_source(self, conv, index: int, title: str) -> None:
        self.pipeline.cancel()
        self.conversation, self.conversation_index, self.title = conv, index, title or conv.title
        # a conversation with real compactions opens on its last segment: what the agent would send next
        # (issue 11: a real API context is the unit); set_segment(None) shows the whole history
        segs = getattr(conv, "segments", None) or [0]
        self.segment = len(segs) - 1 if len(segs) > 1 else None
        self.call = None
        self._apply_inferred()
        self.result = None
        # the sizes measured for the conversation shown before (each open or reload of a followed file makes new
        # message objects): the meter held them, and up to 32 of their lists, until a million had been measured
        for cache in (self._align, self._status_before, self._status_after, self.meter):
            cache.clear()
        self.stage, self.selection, self.selected_block, self._shown = 0, None, None, 0
        self.replay_results, self.replay_stale, self.shown_call, self.cursor = [], True, None, None
        self._set_check(None)
        self.events.source(self._source_dict())
        self.events.replay([])
        self.events.result(None)
        self.events.stage(0)
        self.run()

    def set_segment(self, k: int | None) -> None:
        """Run over one segment (the context after real compaction k; None: the whole conversation)."""
        conv = self.conversation
        if conv is not None and k is not None and not 0 <= k < len(conv.segments):
            raise ValueError(f"segment {k} is not in the conversation ({len(conv.segments)} segment(s))")
        if k != self.segment or self.call is not None:
            self.segment, self.call = k, None
            self.events.source(self._source_dict())
            self.run()

    def calls(self) -> list[int]:
        """The message index of every model call of the conversation (numbered as replay and run --call)."""
        from .contexts import call_indices
        return call_indices(self.conversation) if self.conversation is not None else []

    def set_call(self, i: int | None) -> None:
        """Run over exactly what was sent at model call i (numbered over the whole history, as ``run --call``
        and ``replay`` number them): the messages of its segment before its answer. The segment becomes
        the call's; the timeline's cursor goes to the call (None: back to the whole segment)."""
        conv = self.conversation
        if i is not None and conv is not None:
            from .contexts import segment_of
            at = self.calls()
            if not -len(at) <= i < len(at):
                raise ValueError(f"model call {i} is not in the conversation ({len(at)} model call(s))")
            i %= len(at)
            seg = segment_of(conv, at[i]).index
            self.segment = seg if len(conv.segments or [0]) > 1 or self.segment is not None else None
        if i != self.call:
            self.call = i
            self.events.source(self._source_dict())
            if i is not None and i != self.cursor:
                self.cursor = i                  # the timeline marks the call (no replay re-run: the real context)
                self.events.cursor(i)
            self.run()

    def _source_dict(self) -> dict:
        return {"path": self.path, "conversation": self.conversation_index, "segment": self.segment,
                "call": self.call, "title": self.title,
                "problems": list(self.load_result.problems) if self.load_result is not None else []}

    # ================================================================== strategy and parameters
    def set_strategy(self, name: str | Strategy, params: dict | None = None) -> bool:
        try:
            st = strategies.get(name) if isinstance(name, str) else name
            resolved = st.resolve(params or {})
        except (KeyError, ValueError, ImportError) as e:
            self.set_error(f"Strategy {name}: {e.args[0] if e.args else e}", "Pick another strategy.")
            return False
        self.strategy, self.params, self.order = st, resolved, None
        self.strategy_chosen = True
        self._apply_inferred(notify=False)
        resolved = self.params
        self.events.strategy(st)
        self.events.params(dict(resolved))
        self.run()
        return True

    def _apply_inferred(self, notify: bool = True) -> None:
        """The strategy's session-inferred defaults (``strategies.infer_params``: e.g. Claude Code's version
        picks its threshold rule) under the parameters pinned by the user (``pin_params``, gui --set)."""
        from .strategies import Inferred
        try:
            inf = self._infer(self.strategy, self.conversation) if self.conversation is not None and self.infer \
                else Inferred()
        except Exception:          # a plugin strategy's inference must not stop a file from opening
            inf = Inferred()
        self.inferred = inf
        # what the last conversation's inference set goes back to the strategy's default first (another file, or
        # inference turned off, must not keep b8's cap_reserve=False)
        before = {k: v for k, v in getattr(self, "_inferred_set", {}).items() if self.params.get(k) == v}
        self._inferred_set = {}
        if not inf.params and not before:
            return
        try:
            known = self.strategy.defaults()
            base = {**self.params, **{k: known[k] for k in before if k in known}}
            params = self.strategy.resolve({**base, **inf.params,
                                            **{k: v for k, v in self.pinned.items() if k in known}})
        except (KeyError, ValueError):
            return
        self._inferred_set = {k: params[k] for k in inf.params if k in params and k not in self.pinned}
        if params != self.params:
            self.params = params
            if notify:
                self.events.params(dict(params))

    def params_to_remember(self, params: dict | None = None) -> dict:
        """The parameters worth keeping for the next start: those off their default that the user chose, not
        those the shown session's inference set (b8's cap_reserve=False is b8's, not the user's)."""
        params = self.params if params is None else params
        inferred = getattr(self, "_inferred_set", {})
        out = {}
        for k, v in params.items():
            try:
                default = self.strategy.param(k).default
            except KeyError:
                continue
            if v != default and not (k in inferred and inferred[k] == v and k not in self.pinned):
                out[k] = v
        return out

    def pin_params(self, values: dict, run: bool = True) -> bool:
        """Parameters the user set explicitly (gui --set): they win over session-inferred defaults."""
        self.pinned.update(values)
        return self.set_params({**self.params, **values}, run=run)

    def inferred_text(self) -> str:
        """What was read from the session, in one line (the status bar); ``inferred.reasons`` say why."""
        inf = getattr(self, "inferred", None)
        if not inf or not inf.params:
            return ""
        parts = [f"{k}={v}" + (f" ({inf.evidence_words(k)})" if inf.evidence_words(k) else "")
                 for k, v in inf.params.items() if k not in self.pinned]
        vs = inf.facts.get("versions") or []
        return ("inferred from the session" + (f" ({self.strategy.name} {vs[-1]})" if vs else "") + ": "
                + ", ".join(parts)) if parts else ""

    def set_params(self, values: dict, run: bool = True) -> bool:
        """All parameters (values as the editors hold them: coerced by each ``Param``)."""
        try:
            params = self.strategy.resolve(values)
        except (KeyError, ValueError) as e:
            self.set_error(f"Parameter: {e.args[0] if e.args else e}", "Correct the value in the parameter panel.")
            return False
        if params != self.params:
            self.params = params
            self.events.params(dict(params))
        if run:
            self.run()
        return True

    def set_param(self, name: str, value: Any) -> bool:
        return self.set_params({**self.params, name: value})

    def drag_threshold(self, value: float) -> bool:
        """The chart's threshold line was dragged to ``value`` (``Strategy.drag_threshold``)."""
        if not self.strategy.threshold.movable:
            return False
        return self.set_params(self.strategy.drag_threshold(value, self.params))

    def reset_params(self) -> bool:
        return self.set_params({})

    def set_variant(self, name: str | None) -> bool:
        """Select a variant of the strategy by name (None: the defaults of the variant parameters)."""
        if name is None:
            keys = {k for v in self.strategy.variants for k, _ in v.overrides}
            return self.set_params({**self.params, **{k: self.strategy.param(k).default for k in keys}})
        v = next((v for v in self.strategy.variants if v.name == name), None)
        if v is None:
            raise KeyError(f"strategy {self.strategy.name} has no variant {name!r}")
        return self.set_params({**self.params, **v.params})

    def set_order(self, order: list[str] | None) -> bool:
        if order is not None:
            try:
                for n in order:
                    self.strategy.layer(n)
            except KeyError as e:
                self.set_error(f"Layer order: {e.args[0]}", "Name the strategy's layers, comma-separated.")
                return False
        self.order = list(order) if order is not None else None
        self.events.order(self.order)
        self.run()
        return True

    def set_summarizer(self, spec: str, run: bool = True) -> None:
        spec = (spec or "offline").strip() or "offline"
        if spec != self.summarizer:
            self.summarizer = spec
            self.events.summarizer(spec)
        if run:
            self.run()

    def summarizer_object(self):
        if self.summarizer not in self.summarizers:
            self.summarizers[self.summarizer] = make_summarizer(self.summarizer)
        return self.summarizers[self.summarizer]

    # ================================================================== running
    def run(self) -> None:
        """Run the pipeline (and its variants) over the source messages, in the background."""
        if self._defer_runs:
            return
        self._call_job = self._call_wanted = None
        self.shown_call = None
        if self.conversation is None or self._loading is not None:
            return            # (while a file loads, the run starts when it is there)
        try:
            summ = self.summarizer_object()
        except (ValueError, ImportError) as e:
            self.set_error(f"Summarizer: {e}", "Choose offline, anthropic[:MODEL] or fixed:TEXT in the strategy panel.")
            return
        slow = any(l.llm for l in self.strategy.layers) and "anthropic" in self.summarizer
        self.progress_text = f"running {self.strategy.name}" + (" (an LLM may summarise)" if slow else "")
        self.replay_stale = True
        engine = Engine(self.strategy, dict(self.params), workspace=self.workspace, summarizer=summ,
                        meter=self.meter, order=self.order)
        conv, msgs = self.source_conversation(), self.source_messages
        # the last result over the same list: its steps before the first layer a changed parameter concerns
        # are kept (a change of the last layer's parameter re-runs the last layer only)
        prev = self.result if self.result is not None and self.result.trace.input is msgs \
            and not self.result.cancelled else None
        self.events.running("run")
        self.pipeline.start(lambda state: self._run_job(engine, msgs, conv, state, prev))
        if self.tab == "timeline":
            self.run_replay()

    def _run_job(self, engine: Engine, msgs: list, conv, state, prev: PipelineResult | None) -> PipelineResult:
        """In the background: the pipeline, then what the views draw of its steps (aligned rows), so that
        showing the result and stepping cost the GUI thread no more than painting."""
        with gc_paused():
            result = run_with_variants(engine, msgs, conv, cancel=state.cancel, progress=state.set_progress,
                                       reuse=prev)
            for step in result.trace.steps:
                if state.cancel.is_set():
                    break
                self._align.get(step)
                self._status_after.get(step)
                self._status_before.get(step)
                present.size_bars(step.messages)
            # the tool pairs of the input and of the list of each step that changed something: showing a step
            # selects the first message it changed (the selection then follows that message to the stages
            # stepped to), and the list highlights the selected message's partners. Indexing hermes's converted
            # list of 100k messages, or the input, froze the window ~0.4 s at its first visit
            for msgs in [result.trace.input] + [s.messages for s in result.trace.steps if s.changed]:
                if state.cancel.is_set():
                    break
                present.pair_index(msgs)
            # the messages the run before made and this one replaced (a re-run of time_micro_compact: 50k at 100k
            # messages) are held by nothing but the per-message table once that result is dropped: forget them
            FACTS.collect(min_dead=len(FACTS) // 8)
        return result

    def cancel(self) -> None:
        """Stop the run after the current layer (what ran is shown) and the replay; forget a load."""
        if self.loader.busy:
            self.loader.cancel()
            self._loading = None
            self.events.running(None)
        self.pipeline.interrupt()
        self.replayer.interrupt()
        self.progress_text = "cancelling after the current layer"
        self.events.progress(self.progress_text)

    def show_trace(self, conv, trace) -> None:
        """Show a trace made elsewhere (the live agent's own run) without running the pipeline."""
        self.pipeline.cancel()
        self.conversation = conv
        self.title = conv.title or self.title
        self.events.source(self._source_dict())
        self._pipeline_done(PipelineResult(trace, params=dict(trace.params)))

    def close(self) -> None:
        """Stop all background work; nothing more is delivered (the window is closing)."""
        for w in (self.loader, self.pipeline, self.replayer, self.checker):
            w.cancel()

    def _progress(self, text: str) -> None:
        self.progress_text = f"running {self.strategy.name}: {text}"
        self.events.progress(self.progress_text)

    def _pipeline_failed(self, exc: BaseException) -> None:
        self._call_job = None
        self.events.running(None)
        hint = getattr(exc, "hint", "") or "Check the parameters; if it persists, report it with the file."
        self.set_error(f"The pipeline failed: {type(exc).__name__}: {exc}", hint)

    def _pipeline_done(self, result: PipelineResult) -> None:
        old, old_shown = self.trace, self._shown
        sel0 = None                   # the selection as an index into the input, so it survives the re-run
        if self.selection is not None:
            if old is not None and old.input is result.trace.input:
                sel0 = old.map_index(self.selection, old_shown, 0)
            elif old is None:
                sel0 = self.selection
        self.result = result
        self.runs += 1
        # the rows of this result's steps were aligned in the background (kept steps: already before)
        shown = list(result.trace.steps) + [s for v in result.variants if v.trace for s in v.trace.steps]
        for cache in (self._align, self._status_before, self._status_after):
            cache.retain(shown)
        tr = result.trace
        self.stage = min(self.stage, len(tr.steps))
        failed = [s for s in tr.steps if s.error]
        if failed:
            s = failed[0]
            kind = f"(error kind: {s.summary['kind']}) " if s.summary and s.summary.get("kind") else ""
            self.set_error(f"{s.layer} failed: {s.error}",
                           kind + "The step is marked failed and its input is kept unchanged; nothing is lost. "
                                  "Fix the cause (API key, network) or pick the offline summarizer, then press F5.")
        elif result.cancelled:
            self.set_error(f"Cancelled after {len(tr.steps)} of {len(self.strategy.layers)} layer(s).",
                           "Press F5 to run the pipeline again.")
        else:
            self.set_error(None)
        ci = result.call_index
        self.shown_call, self._call_job = ci, None
        self.events.running(None)
        self.events.result(result)
        self._shown = 0
        self.selection = sel0
        self._show_stage(self.stage, remap_from=0 if sel0 is not None else None)
        if self._pending_view is not None:
            pending, self._pending_view = self._pending_view, None
            self._apply_view(pending)
        self._start_check()
        if ci is not None:
            self.events.call(ci)
            want = self._call_wanted
            if want is not None and want != ci and self.follow:
                self._start_call_job(want)
        self.events.ready(result)

    # ================================================================== stages
    def stages(self) -> list[StageInfo]:
        tr = self.trace
        if tr is None:
            n = len(self.source_messages)
            return [StageInfo("original", "Original", "original",
                              f"{n} messages as loaded; the pipeline is running\u2026")]
        first = tr.steps[0].size_before if tr.steps else 0
        out = [StageInfo("original", "Original", "original",
                         f"{len(tr.input)} messages, {first:,} chars as loaded"
                         + (f"; {len(tr.input_findings)} API finding(s)" if tr.input_findings else ""))]
        lost = self.lost()
        for k, s in enumerate(tr.steps):
            n_lost = sum(1 for x in lost if x.step == k)
            out.append(StageInfo(s.layer, stage_label(self.strategy, s.layer),
                                 "failed" if s.error else "changed" if s.changed else "unchanged",
                                 s.explain() + (f" \u2014 LOST: {n_lost} result(s) never persisted and never seen"
                                                if n_lost else "")))
        return out

    def lost(self) -> list:
        """Tool results of the latest batch a layer replaced before anything persisted them
        (``core.explain.lost_results``), computed once per trace."""
        tr = self.trace
        if tr is None:
            return []
        hit = getattr(self, "_lost", None)
        if hit is None or hit[0] is not tr:
            hit = self._lost = (tr, lost_results(tr, lambda n: stage_label(self.strategy, n)))
        return hit[1]

    def current_step(self):
        tr = self.trace
        if tr is None or self.stage <= 0 or self.stage > len(tr.steps):
            return None
        return tr.steps[self.stage - 1]

    def stage_messages(self, k: int) -> list:
        if self.trace is None:
            return self.source_messages
        return self.trace.stages()[k][1]

    def stage_findings(self, k: int) -> list:
        if self.trace is None:
            return []
        return self.trace.input_findings if k <= 0 else self.trace.steps[k - 1].findings

    def rows_of(self, step) -> list:
        """core.align rows of a step, computed once per step."""
        return self._align.get(step)

    # ------------------------------------------------------------------ real compactions in a shown list
    def compaction_marks(self) -> tuple[dict, dict]:
        """``core.contexts.compaction_marks`` of the conversation (id(message) -> Mark), made once."""
        conv = self.conversation
        n = (len(conv.messages), len(conv.events)) if conv is not None else None
        if self._marks is None or self._marks[0] is not conv or self._marks[1] != n:
            from .contexts import compaction_marks
            self._marks = (conv, n, compaction_marks(conv))
            self._list_marks.clear()
        return self._marks[2]

    def _compute_marks(self, messages: list) -> tuple[dict, dict]:
        from .contexts import marks_in
        return marks_in(messages, self.compaction_marks())

    def marks(self, messages: list) -> tuple[dict, dict]:
        """For a shown list: (index -> the real compaction whose boundary row comes before that message,
        index -> the real compaction whose summary that message is)."""
        if not self.compaction_marks()[0] and not self.compaction_marks()[1]:
            return {}, {}
        self._list_marks.shown(4)
        return self._list_marks.get(messages)

    def compaction_of(self, message) -> tuple | None:
        """``(Mark, "summary")`` when ``message`` is the summary of a real compaction, ``(Mark, "first")`` when
        it is the first message after one (``core.contexts.Mark``); None for any other message."""
        bounds, summs = self.compaction_marks()
        hit = summs.get(id(message))
        if hit is not None:
            return hit, "summary"
        b = bounds.get(id(message))
        return (b[1], "first") if b is not None and b[0] == 0 else None

    def _with_marks(self, messages: list, cuts: dict, badges: dict) -> tuple[dict, dict]:
        """``cuts`` and ``badges`` of a shown list with its real compactions: a boundary row (style
        "boundary") before the first message after each, and the summary badged as such."""
        bounds, summs = self.marks(messages)
        if not bounds and not summs:
            return cuts, badges
        cuts = dict(cuts)
        for i, mark in bounds.items():
            cuts[i] = [(mark.text, "boundary")] + list(cuts.get(i, ()))
        badges = dict(badges)
        for i, mark in summs.items():
            badges[i] = mark.badge + (f" · {badges[i]}" if i in badges else "")
        return cuts, badges

    def stage_view(self) -> StageView:
        """The messages of the current stage in the current view mode, with what to draw on them."""
        k, step = self.stage, self.current_step()
        if step is None:
            msgs = self.stage_messages(0)
            cuts, badges = self._with_marks(msgs, {}, {})
            return StageView(msgs, findings=self.stage_findings(0), cuts=cuts, badges=badges,
                             where="in this real API context, as recorded" if is_context(self.source_conversation())
                             else "in the conversation as loaded", shown=0)
        rows = self.rows_of(step)
        before, after = cut_lines(step)
        where = "after " + stage_label(self.strategy, step.layer)
        if self.view_mode == BEFORE:
            before, bbadges = self._with_marks(step.input, before, {})
            return StageView(step.input, step, rows, self._status_before.get(step), self.stage_findings(k - 1),
                             before, bbadges, where, k - 1)
        status = self._status_after.get(step)
        badges = {}
        for x in self.lost():
            if self.trace.steps[x.step] is step:
                badges[x.message] = "LOST: never persisted"
        if step.summary and step.summary.get("summarizer"):
            who = "summary by " + str(step.summary["summarizer"]).split(" (")[0] + \
                (" (cached)" if step.summary.get("cached") else "")
            badges.update({e.out: who for e in step.edits if e.kind == "summary" and e.out is not None})
        after, badges = self._with_marks(step.messages, after, badges)
        return StageView(step.messages, step, rows, status, step.findings, after, badges, where, k)

    def set_stage(self, k: int) -> None:
        n = len(self.trace.steps) if self.trace is not None else 0
        k = max(0, min(int(k), n))
        if k != self.stage:
            self._show_stage(k, remap_from=self._shown)

    def set_view_mode(self, mode: str) -> None:
        if mode not in (AFTER, BEFORE):
            raise ValueError(f"view mode is 'after' or 'before', not {mode!r}")
        if mode != self.view_mode:
            self.view_mode = mode
            self.events.view_mode(mode)
            self._show_stage(self.stage, remap_from=self._shown)

    def _show_stage(self, k: int, remap_from: int | None) -> None:
        self.stage = k
        view = self.stage_view()
        sel = self.selection
        if sel is not None and remap_from is not None and self.trace is not None:
            sel = self.trace.map_index(sel, remap_from, view.shown)
        elif sel is None and view.status:
            sel = min(view.status)          # nothing selected: the first message this layer changed
        self._shown = view.shown
        self.selection, self.selected_block = sel, None
        self.events.stage(k)
        self.events.selection((sel, None))

    def select(self, i: int | None, block: int | None = None) -> None:
        """Select message i of the shown list (and one of its blocks)."""
        if (i, block) != (self.selection, self.selected_block):
            self.selection, self.selected_block = i, block
            self.events.selection((i, block))

    def map_index(self, i: int, a: int, b: int) -> int | None:
        """Index in stage b's messages of message i of stage a (None when a layer removed it)."""
        return None if self.trace is None else self.trace.map_index(i, a, b)

    def boundary_step(self):
        """The step the boundary tab explains (a snip that cut, hermes's boundaries, ...)."""
        step = self.current_step()
        return step if is_snip_step(step) else find_boundary_step(self.trace)

    def variant_run(self):
        """The variant run shown beside the main one (s08: the README snip), or None."""
        return self.result.variants[0] if self.result is not None and self.result.variants else None

    def overview(self) -> list[tuple[str, str, str]]:
        """(label, status, explanation) of every layer: the edit list on Original."""
        return [(s.label, s.status, s.explanation) for s in self.stages()[1:]]

    # ================================================================== what views show
    def chart(self) -> ChartSeries | None:
        tr = self.trace
        if tr is None:
            return None
        labels = [s.label for s in self.stages()]
        sizes = [tr.steps[0].size_before if tr.steps else self.meter.size(tr.input)] + [s.size_after for s in tr.steps]
        tokens = [tr.steps[0].tokens_before if tr.steps else 0] + [s.tokens_after for s in tr.steps]
        th = self.strategy.threshold
        try:
            value = th.value(self.params)
        except Exception:   # noqa: BLE001 - the chart line is optional
            value = None
        return ChartSeries(labels, sizes, tokens, value, th.unit, th.label, th.movable)

    def status_text(self) -> str:
        tr = self.trace
        view = self.stage_view()
        tok_name = tr.token_estimator if tr else "chars/4"
        size_name = tr.size_estimator if tr else "len(str(messages))"
        step = view.step
        size = tokens = None
        if step is not None:
            before = self.view_mode == BEFORE
            size = step.size_before if before else step.size_after
            tokens = step.tokens_before if before else step.tokens_after
        elif tr is not None and tr.steps:
            size, tokens = tr.steps[0].size_before, tr.steps[0].tokens_before
        run = f" \u00b7 run {self.runs}, {self.result.seconds * 1000:.0f} ms" if self.result else ""
        rr = self.replay_result
        if self.shown_call is not None and rr is not None:
            run += f" \u00b7 model call #{self.shown_call} of {len(rr.calls)}"
        return (f"{len(view.messages):,} messages \u00b7 "
                + (f"{size:,} chars ({size_name})" if size is not None else "size: computing\u2026") + " \u00b7 "
                + (f"{tokens:,} tokens ({tok_name})" if tokens is not None else "tokens: computing\u2026")
                + f" \u00b7 strategy {strategies.short_label(self.strategy.name)} ({self._choice_words()}){run}"
                + (f" \u00b7 {self.inferred_text()}" if self.inferred_text() else ""))

    def _choice_words(self) -> str:
        """Why the strategy runs, short (the status line): the file's own, or chosen (and not the file's)."""
        c = self.strategy_choice
        if not c.chosen:
            return c.origin
        return c.origin + (f"; \u26a0 the file's own pipeline is {c.own.name}" if c.warning() else "")

    def call_caption(self, i: int) -> str:
        rr = self.replay_result
        if rr is None or not 0 <= i < len(rr.calls):
            return ""
        c = rr.calls[i]
        it = self._iters[i]
        fired = ", ".join(c.fired) if c.fired else "nothing fired"
        return (f"model call #{i} of {len(rr.calls)} (before message #{c.message_index}): "
                f"{c.messages_before} \u2192 {c.messages_after} messages, {c.tokens_before:,} \u2192 "
                f"{c.tokens_after:,} tokens; {fired}; user turn {it['turn']}"
                + (f": iterations {it['used']}/{rr.iteration_cap}" if rr.iteration_cap is not None else "")
                + (f" (+{it['refunded']} refunded)" if it["refunded"] else "")
                + (" \u2014 over the iteration cap" if it["refused"] else ""))

    def message_meta(self) -> dict:
        """id(message) -> MessageMeta for the conversation's messages (time, usage, where in the file), made
        once per conversation: every stage shares the loaded messages, so a view looks its rows up here."""
        conv = self.conversation
        if conv is None:
            return {}
        cached = self._meta_cache
        if cached is None or cached[0] is not conv or cached[1] != len(conv.messages):
            cached = self._meta_cache = (conv, len(conv.messages), conv.meta_by_identity())
        return cached[2]

    def meta_of(self, message) -> Any:
        """The MessageMeta of a message of the conversation (None for one a layer made)."""
        return self.message_meta().get(id(message))

    def persisted_file(self, text: str) -> tuple[str, str] | None:
        """For a persisted tool result's text: (path, content) of the file it points to, looked up in
        the workspace, then among the shown run's persist edits; None for any other text."""
        from .layers.s08 import persisted_reference
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

    # ================================================================== cross-check
    def _set_check(self, state: CheckState | None) -> None:
        self.check = state
        self.events.verdict(state)

    def _start_check(self) -> None:
        cc, tr = self.strategy.cross_check, self.trace
        if cc is None or tr is None or tr.strategy != self.strategy.name:
            self._set_check(None)
            return
        self._checking = tr
        self._set_check(CheckState(cc.name, cc.description))
        self.checker.start(lambda state, tr=tr: (tr, _checked(cc, tr)))

    def _check_done(self, res) -> None:
        tr, verdict = res
        if tr is not self.trace or self.check is None:
            return                       # a newer run is shown (its check is waiting or running)
        self._set_check(CheckState(self.check.name, self.check.description, verdict))

    def _check_failed(self, exc: BaseException) -> None:
        if self.check is not None:
            self._set_check(CheckState(self.check.name, self.check.description,
                                       Verdict(DIFFER, f"the cross-check failed: {type(exc).__name__}: {exc}")))

    # ================================================================== replay
    def set_tab(self, tab: str) -> None:
        if tab not in TABS:
            raise ValueError(f"tab is one of {', '.join(TABS)}, not {tab!r}")
        if tab != self.tab:
            self.tab = tab
            self.events.tab(tab)
        if tab == "timeline" and self.replay_stale:
            self.run_replay()

    def set_compare(self, names: list[str] | None = None, extra: str | None = None, run: bool = True) -> None:
        """The runs compared with the current one: strategies with their defaults, and runs written as
        [LABEL=]NAME[:K=V,...] separated by ';'."""
        if names is not None:
            known = strategies.available()          # in the registry's order, like the window's boxes
            self.compare_names = [n for n in known if n in names] + [n for n in names if n not in known]
        if extra is not None:
            self.compare_extra = extra
        self.replay_stale = True
        self.events.compare({"names": list(self.compare_names), "extra": self.compare_extra})
        if run and self.tab == "timeline":
            self.run_replay()

    def set_compare_spec(self, spec, run: bool = True) -> None:
        """``--compare`` values (one string or several, each one run or several ';'-separated:
        ``spec.split_runs``, as every command reads them): a bare strategy name ticks it, anything else is an
        extra run."""
        from .strategies.spec import split_runs
        names, extra = [], []
        known = set(strategies.available())
        for part in split_runs(spec):
            (names if part in known else extra).append(part)
        self.set_compare(names, "; ".join(extra), run)

    def compare_configs(self) -> list:
        return compare_runs(self.strategy, self.params, self.compare_names, self.compare_extra,
                            self.conversation)          # compared runs infer their defaults too, like --compare

    def run_replay(self) -> None:
        """core.replay over the conversation's life for every run compared, in the background."""
        if self.conversation is None:
            return
        from .replay import compare
        try:
            configs = self.compare_configs()
        except (KeyError, ValueError, ImportError) as e:
            self.set_error(f"Compare: {e.args[0] if e.args else e}",
                           f"Write each run as NAME or {RUN_FORMAT} separated by ';' "
                           f"(strategies: {', '.join(strategies.available())}).")
            return
        try:
            summ = self.summarizer_object()
        except (ValueError, ImportError) as e:
            self.set_error(f"Summarizer: {e}", "Choose offline, anthropic[:MODEL] or fixed:TEXT.")
            return
        self.replay_stale = False
        conv, ws = self.conversation, self.workspace
        self.events.replay_running(len(configs))
        free = self.replay_free
        self.replayer.start(lambda state: compare(conv, configs, workspace=ws, summarizer=summ, cancel=state.cancel,
                                                  free=free))

    def _replay_failed(self, exc: BaseException) -> None:
        self.events.replay_running(0)
        self.set_error(f"The replay failed: {type(exc).__name__}: {exc}",
                       getattr(exc, "hint", "") or "Press F5 to try again.")

    def _replay_done(self, results: list) -> None:
        self.replay_results = list(results)
        rr = self.replay_result
        self._iters = rr.iterations() if rr is not None else []
        self.shown_call = None
        if rr is not None and self.cursor is not None:
            self.cursor = min(self.cursor, len(rr.calls) - 1) if rr.calls else None
        self.events.replay_running(0)
        self.events.replay(self.replay_results)

    def set_replay_free(self, on: bool) -> None:
        """The timeline's replay free-running (its own summaries all the way) or following reality; replays again."""
        if bool(on) != self.replay_free:
            self.replay_free = bool(on)
            self.run_replay()

    def set_follow(self, on: bool) -> None:
        if bool(on) != self.follow:
            self.follow = bool(on)
            self.events.follow(self.follow)

    def set_cursor(self, i: int | None) -> None:
        """The timeline's cursor is on model call i: with ``follow`` the stepper shows the pipeline run
        before that call. While the timeline plays, calls arrive faster than they run: only the newest
        one waits."""
        if i != self.cursor:
            self.cursor = i
            self.events.cursor(i)
        rr = self.replay_result
        if i is None or rr is None or not 0 <= i < len(rr.calls) or not self.follow:
            return
        self._call_wanted = i
        if self._call_job is None:
            self._start_call_job(i)

    def _start_call_job(self, i: int) -> None:
        rr = self.replay_result
        self._call_job = i

        def job(state):
            t0 = time.perf_counter()
            with gc_paused():                # a run like _run_job's (see gc_paused)
                tr = rr.rerun(i, cancel=state.cancel)
            return PipelineResult(tr, seconds=time.perf_counter() - t0, cancelled=state.cancel.is_set(),
                                  params=dict(rr.params), call_index=i)
        self.events.running("call")
        self.pipeline.start(job)

    # ================================================================== view state
    def set_filters(self, **kw) -> None:
        unknown = set(kw) - set(FILTER_KEYS)
        if unknown:
            raise KeyError(f"unknown filter(s) {', '.join(sorted(unknown))} (known: {', '.join(FILTER_KEYS)})")
        new = {**self.filters, **kw}
        if new != self.filters:
            self.filters = new
            self.events.filters(dict(new))

    # ================================================================== snapshot
    def snapshot(self) -> dict:
        """The whole user-visible state as a plain dict (JSON-able); see ``restore``."""
        st = self.strategy
        return {
            "version": SNAPSHOT_VERSION,
            "source": {"path": str(Path(self.path).resolve()) if self.path else None,
                       "conversation": self.conversation_index, "segment": self.segment,
                       "call": self.call},
            "strategy": st.name,
            "strategy_chosen": self.strategy_chosen, "strategy_pinned": self.strategy_pinned,
            "params": {k: v for k, v in self.params.items() if v != st.param(k).default},
            "summarizer": self.summarizer,
            "order": list(self.order) if self.order is not None else None,
            "view": {"stage": self.stage, "mode": self.view_mode, "selection": self.selection,
                     "block": self.selected_block, "tab": self.tab, "filters": dict(self.filters)},
            "replay": {"compare": list(self.compare_names), "extra": self.compare_extra, "cursor": self.cursor,
                       "follow": self.follow},
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
        self._pending_view = view
        self.compare_names, self.compare_extra = list(rep.get("compare") or []), str(rep.get("extra") or "")
        self.follow = bool(rep.get("follow", True))
        self.events.compare({"names": list(self.compare_names), "extra": self.compare_extra})
        self.events.follow(self.follow)
        with self._runs_deferred():
            if not self.set_strategy(snap.get("strategy") or self.strategy.name, snap.get("params") or {}):
                return False
            self.strategy_chosen = bool(snap.get("strategy_chosen", True))     # the file's own stays the file's own
            self.strategy_pinned = bool(snap.get("strategy_pinned", self.strategy_pinned))
            self.set_summarizer(snap.get("summarizer") or "offline", run=False)
            if snap.get("order"):
                self.order = list(snap["order"])
                self.events.order(self.order)
            self.set_filters(**{k: v for k, v in (view.get("filters") or {}).items() if k in FILTER_KEYS})
            path = src.get("path")
            if path and (self.path is None or Path(path).resolve() != Path(self.path).resolve()):
                self._keep_strategy = True          # the snapshot's strategy stays when the file opens
                try:
                    if not self.open(path, int(src.get("conversation") or 0)):
                        return False
                finally:
                    if getattr(self, "_loading", None) is None:
                        self._keep_strategy = False
            elif src.get("conversation", 0) != self.conversation_index:
                self.select_conversation(int(src.get("conversation") or 0))
            self.segment, self.call = src.get("segment"), src.get("call")
        self.events.source(self._source_dict())
        self.run()
        tab = view.get("tab") or "diff"
        if tab != self.tab:
            self.tab = tab
            self.events.tab(tab)
        if tab == "timeline":
            self.run_replay()
        if rep.get("cursor") is not None:
            self._cursor_after_replay = int(rep["cursor"])
            self._apply_cursor()
        return True

    def _apply_cursor(self) -> None:
        want = self._cursor_after_replay
        if want is None:
            return
        if self.replay_result is None:
            self.events.replay.connect(self._cursor_when_replayed)
            return
        self._cursor_after_replay = None
        self.set_cursor(want)

    def _cursor_when_replayed(self, ev) -> None:
        if ev.value:
            self.events.replay.disconnect(self._cursor_when_replayed)
            self._apply_cursor()

    def _apply_view(self, view: dict) -> None:
        mode = view.get("mode") or AFTER
        if mode != self.view_mode:
            self.view_mode = mode
            self.events.view_mode(mode)
        stage = view.get("stage") or 0
        if isinstance(stage, str):          # a layer's name (lessons), or "last"
            steps = self.trace.steps if self.trace else []
            stage = len(steps) if stage == "last" else \
                next((k + 1 for k, st in enumerate(steps) if st.layer == stage), 0)
        stage = int(stage)
        self.selection = None
        self._show_stage(max(0, min(stage, len(self.trace.steps) if self.trace else 0)), remap_from=None)
        if view.get("selection") is not None:
            self.select(int(view["selection"]), view.get("block"))

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
