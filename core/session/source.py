"""The file or live conversation shown, and which real context of it runs: conversation, segment, call."""
from __future__ import annotations

import gc
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..model.contexts import is_context
from ..pipeline.memo import IdentityCache
from ..runtime.jobs import Executor, InlineExecutor, Worker
from . import loading
from .loading import load_for_view

if TYPE_CHECKING:
    from .model import Session


class SourcePart:
    """The file or live conversation shown, and which real context of it runs: conversation, segment, call."""

    def __init__(self, s: Session, ex: Executor):
        self.s = s
        self.loader = Worker(ex, self._load_done, self._load_failed, on_partial=self._load_preview, name="load",
                             foreground=True)
        self.loading: tuple | None = None           # (path, conversation) of the file loading in the background
        self.open_at_first_compaction = False       # the window: a compacted file opens before its first compaction
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
        self._list_marks = IdentityCache(self._compute_marks, floor=16)   # shown list -> its real compactions

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
        from ..model.contexts import ContextError, real_context
        try:
            view = conv if self.segment is None and self.call is None else real_context(conv, self.segment, self.call)
        except ContextError:
            view = conv
        self._view_cache = (key, conv, view)
        return view

    def open(self, path: str, conversation: int = 0) -> bool:
        """Load a file; on failure ``error`` says what went wrong and what to do, and False is returned.
        On a background executor (the window) a file of ``BACKGROUND_LOAD_BYTES`` or more is loaded in
        the background: True says the load started ("running" is "load" meanwhile, with progress); a
        failure then arrives as ``error``, the conversation as ``source``."""
        from ..loaders import load
        try:
            size = os.path.getsize(path)
        except OSError as e:
            self.s.set_error(f"Could not read {path}: {e.strerror or e}", "Check the path and the file's permissions.")
            return False
        self.loader.cancel()                      # a file opened meanwhile wins over one still loading
        if size >= loading.BACKGROUND_LOAD_BYTES and not isinstance(self.loader.executor, InlineExecutor):
            self.s.pipeline.cancel()
            self.s.progress_text = f"loading {Path(path).name} ({size / 1e6:.0f} MB)"
            self.loading = (str(path), conversation)
            self.loader.start(lambda state: load_for_view(path, state, self._prepare))
            self.s.events.running("load")
            self.s.events.progress(self.s.progress_text)
            return True
        try:
            result = load(path)
        except Exception as e:  # noqa: BLE001 - LoadError, OSError: said with what to do
            self._load_error(str(path), e)
            return False
        return self._loaded(str(path), result, conversation)

    def _loaded(self, path: str, result, conversation: int) -> bool:
        if not result.conversations:
            self.s.set_error(f"{path} holds no conversation.", "Open another file.")
            return False
        # a loaded transcript is long-lived and has no cycles: keep the cyclic GC from rescanning its
        # 100k+ objects on every collection (a 10k-message list otherwise makes each step ~3x slower)
        gc.freeze()
        self.path, self.load_result = str(path), result
        self.s.set_error(None)
        k = min(max(conversation, 0), len(result.conversations) - 1)
        self.s.setup.use_own_strategy(result.conversations[k])
        self._set_source(result.conversations[k], k, Path(path).name)
        return True

    def _prepare(self, conv) -> None:
        """In the load's worker, before the conversation is shown: what showing it first walks every message
        for, made there so that the window's thread finds it made (at 100k messages these froze the window
        ~0.6 s when the load arrived): its history (each message once: ~0.1 s), its model calls and segments (the
        context picker; kept on the conversation by ``core.contexts``), and the defaults the strategy it opens with infers from it. (Not the
        file's own strategy's when another opens it: here that delayed the first result ~0.25 s at 100k messages,
        and made after the first run it slowed the first steps; a switch to it infers on the window's thread.)"""
        from ..model import contexts
        try:
            conv.history()            # (the messages run on: a look at each message's meta, ~0.1 s at 100k)
            contexts.call_indices(conv)
            contexts.segments(conv)
            st = self.s.setup.opening_strategy(conv)
            if st is not None and self.s.setup.infer:
                self.s.setup.infer_for(st, conv)
        except Exception:  # noqa: BLE001 - made ahead as a courtesy: the window's thread asks again and says
            pass

    def _load_error(self, path: str, e: BaseException) -> None:
        from ..loaders import LoadError
        if isinstance(e, LoadError):
            self.s.set_error(f"Could not open {path}: {e}",
                           "Check that the file is a Claude Code session, an Anthropic or OpenAI message list, an "
                           "Inspect log, a Hermes session or a Compactscope recording (compactscope info FILE "
                           "says what it sees).")
        elif isinstance(e, OSError):
            self.s.set_error(f"Could not read {path}: {e.strerror or e}", "Check the path and the file's permissions.")
        else:
            self.s.set_error(f"Could not open {path}: {type(e).__name__}: {e}",
                           "This is a bug in Compactscope: please report it with the file.")

    def _load_preview(self, conv) -> None:
        """The first messages of the file loading: shown (Original stage), nothing is run on them."""
        if self.loading is None:
            return
        name = Path(self.loading[0]).name
        self.conversation, self.conversation_index, self.title = conv, 0, f"{name} (loading\u2026)"
        self.segment = self.call = None
        self.s.result = None
        self.s.view.stage, self.s.view.selection, self.s.view.selected_block, self.s.view.shown = 0, None, None, 0
        self.s.progress_text = f"loading {name}: the first {len(conv.messages):,} messages shown"
        self.s.events.progress(self.s.progress_text)
        self.s.events.source(self.source_dict())
        self.s.events.result(None)
        self.s.events.stage(0)

    def _load_done(self, result) -> None:
        path, conversation = self.loading or ("", 0)
        self.loading = None
        self.s.events.running(None)
        self._loaded(path, result, conversation)

    def _load_failed(self, exc: BaseException) -> None:
        path = (self.loading or ("", 0))[0]
        self.loading = None
        self.s.events.running(None)
        self._load_error(path, exc)

    def select_conversation(self, k: int) -> None:
        if self.load_result is not None and 0 <= k < len(self.load_result.conversations):
            self._set_source(self.load_result.conversations[k], k, Path(self.path).name if self.path else "")

    def set_conversation(self, conv, title: str = "", run: bool = True) -> None:
        """Show a conversation that does not come from a file the session opened (live sources).
        ``run=False`` keeps the result shown (the live agent's own run) and only marks the replay stale."""
        if not run:
            self.conversation = conv
            self.s.replay.replay_stale = True
            self.s.events.source(self.source_dict())
            if self.s.view.tab == "timeline":
                self.s.replay.run_replay()
            return
        self._set_source(conv, 0, title or conv.title or "conversation")

    def _set_source(self, conv, index: int, title: str) -> None:
        self.s.pipeline.cancel()
        self.conversation, self.conversation_index, self.title = conv, index, title or conv.title
        # a conversation with real compactions opens on its last segment: what the agent would send next
        # (issue 11: a real API context is the unit); set_segment(None) shows the whole history
        segs = getattr(conv, "segments", None) or [0]
        self.segment = len(segs) - 1 if len(segs) > 1 else None
        self.call = None
        if self.open_at_first_compaction and len(segs) > 1 and self.s.pending_view is None:
            # the window opens where something happens (issue 23): the context the first real compaction
            # replaced, at the first layer that changed it (a snapshot being restored says its own view)
            self.segment, self.s.pending_view = 0, {"stage": "changed"}
        self.s.setup.apply_inferred()
        self.s.result = None
        # the sizes measured for the conversation shown before (each open or reload of a followed file makes new
        # message objects): the meter held them, and up to 32 of their lists, until a million had been measured
        for cache in (self.s.view.align, self.s.view.status_before, self.s.view.status_after, self.s.meter):
            cache.clear()
        self.s.workspace.forget_lists()          # (the last transcript's list, of the conversation before)
        self.s.view.stage, self.s.view.selection, self.s.view.selected_block, self.s.view.shown = 0, None, None, 0
        self.s.replay.replay_results, self.s.replay.replay_stale, self.s.replay.shown_call, self.s.replay.cursor = [], True, None, None
        self.s.crosscheck.set_check(None)
        self.s.events.source(self.source_dict())
        self.s.events.replay([])
        self.s.events.result(None)
        self.s.events.stage(0)
        self.s.run()

    def set_segment(self, k: int | None) -> None:
        """Run over one segment (the context after real compaction k; None: the whole conversation)."""
        conv = self.conversation
        if conv is not None and k is not None and not 0 <= k < len(conv.segments):
            raise ValueError(f"segment {k} is not in the conversation ({len(conv.segments)} segment(s))")
        if k != self.segment or self.call is not None:
            self.segment, self.call = k, None
            self.s.events.source(self.source_dict())
            self.s.run()

    def calls(self) -> list[int]:
        """The message index of every model call of the conversation (numbered as replay and run --call)."""
        from ..model.contexts import call_indices
        return call_indices(self.conversation) if self.conversation is not None else []

    def set_call(self, i: int | None) -> None:
        """Run over exactly what was sent at model call i (numbered over the whole history, as ``run --call``
        and ``replay`` number them): the messages of its segment before its answer. The segment becomes
        the call's; the timeline's cursor goes to the call (None: back to the whole segment)."""
        conv = self.conversation
        if i is not None and conv is not None:
            from ..model.contexts import segment_of
            at = self.calls()
            if not -len(at) <= i < len(at):
                raise ValueError(f"model call {i} is not in the conversation ({len(at)} model call(s))")
            i %= len(at)
            seg = segment_of(conv, at[i]).index
            self.segment = seg if len(conv.segments or [0]) > 1 or self.segment is not None else None
        if i != self.call:
            self.call = i
            self.s.events.source(self.source_dict())
            if i is not None and i != self.s.replay.cursor:
                self.s.replay.cursor = i                  # the timeline marks the call (no replay re-run: the real context)
                self.s.events.cursor(i)
            self.s.run()

    def source_dict(self) -> dict:
        return {"path": self.path, "conversation": self.conversation_index, "segment": self.segment,
                "call": self.call, "title": self.title,
                "problems": list(self.load_result.problems) if self.load_result is not None else []}

    def compaction_marks(self) -> tuple[dict, dict]:
        """``core.contexts.compaction_marks`` of the conversation (id(message) -> Mark), made once."""
        conv = self.conversation
        n = (len(conv.messages), len(conv.events)) if conv is not None else None
        if self._marks is None or self._marks[0] is not conv or self._marks[1] != n:
            from ..model.contexts import compaction_marks
            self._marks = (conv, n, compaction_marks(conv))
            self._list_marks.clear()
        return self._marks[2]

    def _compute_marks(self, messages: list) -> tuple[dict, dict]:
        from ..model.contexts import marks_in
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

    def with_marks(self, messages: list, cuts: dict, badges: dict) -> tuple[dict, dict]:
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
