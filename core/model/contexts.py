"""Real API contexts: the unit run, check and the window work on.

A recorded conversation is a history; what the API saw at any moment is one *context*:

* a **segment**: the messages between two real compactions (Claude Code's ``compact_boundary``).
  Segment 0 is the start of the file; segment k > 0 starts with the compact summary the API
  saw after the k-th compaction. The last segment is what the agent would send next, the
  default everywhere;
* a **call**: exactly what was sent at model call N (calls are numbered over the whole
  history, 0-based, one per assistant message, as ``replay`` numbers them): the messages of the
  call's segment before its assistant message.

``real_context(conv, segment=None, call=None)`` returns a ``Conversation`` holding that context
alone (the same message objects, their metadata, the boundary event that opened the segment
re-based to index 0); ``extra["context"]`` says which context of which history it is. Pure
Python, no Qt.
"""
from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence

from ..runtime.record import record, replace
from .conversation import CompactionEvent, Conversation


class ContextError(ValueError):
    """The asked-for segment or call does not exist (the message says what does)."""


@record(frozen=True)
class Segment:
    """A stretch of the history between real compactions: its messages, its calls, and the compaction that opened it."""
    index: int
    start: int                    # first message (index in the history)
    end: int                      # one past the last
    first_call: int | None        # the first call in it (history numbering), None when it holds none
    calls: int
    event: CompactionEvent | None = None     # the compaction that opened it (None for segment 0)

    def label(self) -> str:
        if self.event is None:
            return f"segment {self.index}: from the start of the file"
        ev = self.event
        word = "preTokens" if getattr(ev, "kind", "") == "claude_code" else "tokens before"
        pre = f", {word} {ev.pre_tokens:,}" if getattr(ev, "pre_tokens", None) else ""
        return f"segment {self.index}: after a real {ev.trigger or ''} compaction{pre}".replace("  ", " ")


def _kept(conv, name: str, make):
    """``make(conv)``, kept on the conversation while its messages, metadata, segments and events are the
    same (as ``Conversation.history`` keeps its list): the window asks for a 100k-message conversation's
    calls and segments at every refresh of its picker, ~60 ms each time. The value is shared: never mutate it."""
    d = getattr(conv, "__dict__", None)
    if d is None:
        return make(conv)
    msgs, meta, segs, events = conv.messages, conv.meta, conv.segments, conv.events
    key = (len(msgs), len(meta), tuple(segs or ()), len(events or ()))
    memo = d.get(name)
    if memo is not None and memo[0] is msgs and memo[1] is meta and memo[2] is events and memo[3] == key:
        return memo[4]
    value = make(conv)
    d[name] = (msgs, meta, events, key, value)
    return value


def call_indices(conv) -> list[int]:
    """The message index of each model call (each assistant message), in order; the copies a real compaction
    re-sent (``meta.extra["copy_of"]``: Inspect, hermes) are not calls, as replay numbers them.
    Made once per conversation (shared: do not mutate)."""
    return _kept(conv, "_call_indices", _call_indices)


def _call_indices(conv) -> list[int]:
    meta = conv.meta
    return [i for i, m in enumerate(conv.messages) if isinstance(m, dict) and m.get("role") == "assistant"
            and not (i < len(meta) and "copy_of" in meta[i].extra)]


def segments(conv) -> list[Segment]:
    """The conversation's segments (made once per conversation: shared, do not mutate)."""
    return _kept(conv, "_segments", _segments)


def _segments(conv) -> list[Segment]:
    msgs = conv.messages
    starts = sorted({s for s in (conv.segments or [0]) if 0 <= s <= len(msgs)} | {0})
    ends = starts[1:] + [len(msgs)]
    calls = call_indices(conv)
    by_start = {e.message_index: e for e in (conv.events or ())}
    out = []
    for k, (s, e) in enumerate(zip(starts, ends)):
        lo, hi = bisect_left(calls, s), bisect_left(calls, e)          # calls are in message order
        out.append(Segment(k, s, e, lo if hi > lo else None, hi - lo, by_start.get(s) if k else None))
    return out


def segment_of(conv, message_index: int) -> Segment:
    segs = segments(conv)
    for seg in segs:
        if seg.start <= message_index < seg.end:
            return seg
    return segs[-1]


def _norm(k: int, n: int, what: str, kind: str) -> int:
    if n == 0:
        raise ContextError(f"the conversation has no {kind}")
    if not -n <= k < n:
        raise ContextError(f"there is no {kind} {k}: {what}")
    return k % n


def _view(conv, start: int, end: int, segment: Segment, call: int | None) -> Conversation:
    events = []
    if segment.event is not None:
        events = [replace(segment.event, message_index=0,
                          summary_index=0 if segment.event.summary_index is not None else None)]
    extra = dict(conv.extra or {})
    if segment.index > 0:       # a later segment starts at a root (the compact summary), not mid-session
        extra["starts_mid_session"], extra["results_before_file"] = False, []
    extra["context"] = {"segment": segment.index, "segments": len(conv.segments or [0]), "call": call,
                        "start": start, "end": end, "history_messages": len(conv.messages),
                        "label": segment.label() + (f", at model call {call}" if call is not None else "")}
    return replace(conv, messages=conv.messages[start:end], meta=conv.meta[start:end],
                   events=events, segments=[0], extra=extra, context_of=conv.context_of or conv)


def segment_context(conv, k: int = -1) -> Conversation:
    """The messages of segment k (negative counts from the end: -1 = the last, the default)."""
    segs = segments(conv)
    k = _norm(k, len(segs), f"the file has {len(segs)} segment(s) (0..{len(segs) - 1})", "segment")
    s = segs[k]
    return _view(conv, s.start, s.end, s, None)


def call_context(conv, n: int) -> Conversation:
    """Exactly what was sent at model call n: its segment's messages before the call's answer."""
    calls = call_indices(conv)
    n = _norm(n, len(calls), f"the conversation has {len(calls)} model call(s) (0..{len(calls) - 1})", "model call")
    i = calls[n]
    seg = segment_of(conv, i)
    return _view(conv, seg.start, i, seg, n)


WHOLE = "all"      # --segment all: the whole history, every context read in a row (never sent as one request)


def parse_segment(text) -> int | str | None:
    """A ``--segment`` value: a number (negative counts from the end), ``all`` (``WHOLE``), or None."""
    if text is None or isinstance(text, int):
        return text
    t = str(text).strip().lower()
    if t in (WHOLE, "whole"):
        return WHOLE
    try:
        return int(t)
    except ValueError:
        raise ValueError(f"a segment is a number (0 = the start of the file, -1 = the last) or 'all' (the whole "
                         f"history), not {text!r}") from None


def real_context(conv, segment: int | str | None = None, call: int | None = None) -> Conversation:
    """The context to show or run: ``call`` wins over ``segment``; neither = the last segment;
    ``segment=WHOLE`` = the whole history (returned as it is: see ``whole_history_note``).
    A conversation never compacted and asked for nothing is returned as it is."""
    if call is not None:
        return call_context(conv, call)
    if segment == WHOLE or (segment is None and len(conv.segments or [0]) <= 1):
        return conv
    return segment_context(conv, -1 if segment is None else int(segment))


def whole_history_note(conv) -> str:
    """The warning a whole history of a compacted conversation deserves ("" when it was one context)."""
    n = len(conv.segments or [0])
    if n <= 1 or is_context(conv):
        return ""
    return (f"this is the whole history: {n} contexts split at real compactions, read in a row. It was never sent "
            f"as one request (the API saw each context alone), so its size, the pipeline's decisions over it and "
            f"the findings past the first compaction describe no real call; the default is the last segment, what "
            f"the agent would send next")


def locate_call(conv, n: int) -> tuple[int, int]:
    """History-wide model call ``n`` (as run, check and replay number them) as (segment, the call's index
    among the segment's own calls: ``Conversation.calls(segment)``, the window's numbering)."""
    calls = call_indices(conv)
    n = _norm(n, len(calls), f"the conversation has {len(calls)} model call(s) (0..{len(calls) - 1})", "model call")
    i = calls[n]
    seg = segment_of(conv, i)
    return seg.index, sum(1 for j in calls if seg.start <= j < i)


def is_context(conv) -> bool:
    return isinstance(getattr(conv, "extra", None), dict) and "context" in conv.extra


# ---------------------------------------------------------------- what a picker offers (the window's)
WHOLE_HISTORY = ("whole history: every segment read in a row (never sent as one request)")


def _elide(text: str, n: int) -> str:
    text = " ".join(str(text or "").split())
    return text if len(text) <= n else text[:n - 1] + "\u2026"


def conversation_choices(conversations: list) -> list[tuple[int, str, str]]:
    """(index, label, tooltip) for each conversation of a file: the main one first, then each subagent or
    sidechain by its title (what it was asked to do)."""
    out = []
    for k, c in enumerate(conversations):
        extra = getattr(c, "extra", None) or {}
        kind = extra.get("kind")
        title = getattr(c, "title", "") or ""
        if k == 0:
            label = "main" + (f": {_elide(title, 48)}" if title else "")
        elif kind in ("sidechain", "agent_progress") or title.startswith(("sidechain", "subagent")):
            label = _elide(title, 56) if title else f"subagent {k}"
        else:
            label = _elide(title, 56) if title else f"conversation {k}"
        n = len(getattr(c, "messages", ()) or ())
        segs = len(getattr(c, "segments", None) or [0])
        tip = (f"conversation {k}: {title or '(untitled)'}\n{n:,} messages, {len(call_indices(c)):,} model calls"
               + (f", {segs - 1} real compaction(s)" if segs > 1 else ""))
        out.append((k, f"{k} \u00b7 {label}", tip))
    return out


def segment_choices(conv) -> list[tuple[int | None, str, str]]:
    """(segment or None, label, tooltip): each real API context between compactions, then the whole
    history, labelled as never sent as one request."""
    segs = segments(conv)
    out: list[tuple[int | None, str, str]] = []
    for s in segs:
        last = " (last: what the agent would send next)" if s.index == len(segs) - 1 and len(segs) > 1 else ""
        out.append((s.index, s.label() + last,
                    f"messages {s.start}..{max(s.start, s.end - 1)}, {s.calls} model call(s)"
                    + (f" ({s.first_call}..{(s.first_call or 0) + s.calls - 1})" if s.calls else "")
                    + ": one real API context" + (f"\nopened by: {boundary_text(s.event)}" if s.event else "")))
    if len(segs) > 1:
        out.append((None, WHOLE_HISTORY, "Every message of every segment in a row. No request ever held this list: "
                    "the API saw one segment at a time (a compaction replaced what came before)."))
    return out


def call_choices(conv, segment: int | None) -> "CallChoices":
    """(call, label) for the model calls of a segment (all of them for None), numbered over the whole
    history: the call, when it was made and how many tokens it sent (the recorded usage). A sequence that
    labels an entry when it is read (a whole history of 100k messages holds 50k calls)."""
    return CallChoices(conv, segment)


class CallChoices(Sequence):
    """``call_choices``: the calls of a segment as (call, label) pairs, each labelled when read. Made in
    O(log calls) once the conversation's calls are known; ``key`` tells two of them apart cheaply."""

    def __init__(self, conv, segment: int | None):
        self._conv, self._at = conv, call_indices(conv)
        segs = segments(conv)
        lo, hi = (0, len(conv.messages)) if segment is None or not 0 <= segment < len(segs) else \
            (segs[segment].start, segs[segment].end)
        self._first, self._end = bisect_left(self._at, lo), bisect_left(self._at, hi)
        self._starts = [sg.start for sg in segs]
        self.key = (id(conv), len(conv.messages), self._first, self._end)

    def __len__(self) -> int:
        return self._end - self._first

    def __getitem__(self, k):
        if isinstance(k, slice):
            return [self[j] for j in range(*k.indices(len(self)))]
        if k < 0:
            k += len(self)
        if not 0 <= k < len(self):
            raise IndexError(k)
        return self.value(k), self.label(k)

    def value(self, k: int) -> int:
        """The call number of entry k (numbered over the whole history)."""
        return self._first + k

    def index(self, call, *_args) -> int:
        """The entry of call number ``call`` (ValueError when the segment does not hold it)."""
        if isinstance(call, int) and self._first <= call < self._end:
            return call - self._first
        raise ValueError(f"model call {call!r} is not among these calls")

    def label(self, k: int) -> str:
        from .describe import when
        n = self._first + k
        i = self._at[n]
        mt = self._conv.meta_at(i)
        parts = [f"call {n}"]
        if mt.timestamp is not None:
            parts.append(when(mt.timestamp)[11:19])
        starts = self._starts
        m = i - starts[max(bisect_right(starts, i) - 1, 0)]      # segment_of per call was O(calls x messages)
        tok = mt.usage.context_tokens if mt.usage is not None else 0
        parts.append(f"{m} message{'s' if m != 1 else ''}" + (f", {tok:,} tokens" if tok else "") + " sent")
        return " \u00b7 ".join(parts)


# ---------------------------------------------------------------- real compactions, as rows of their own
_RECORDER = {"claude_code": "Claude Code compact_boundary", "inspect": "Inspect CompactionEvent",
             "hermes": "hermes ContextCompressor", "recording": "recorded compaction"}
_SUMMARY_BADGE = {"claude_code": "compact summary", "inspect": "compaction summary", "hermes": "compaction summary",
                  "recording": "compaction summary"}


def event_time(event, conv=None) -> float | None:
    """When a real compaction happened: the time its record carries, else its summary's or first message's."""
    ts = (getattr(event, "extra", None) or {}).get("timestamp")
    if isinstance(ts, (int, float)) and not isinstance(ts, bool):
        return float(ts)
    if conv is not None:
        for i in (event.summary_index, event.message_index):
            if i is not None and conv.meta_at(i).timestamp is not None:
                return conv.meta_at(i).timestamp
    return None


def boundary_text(event, conv=None) -> str:
    """One line for a real compaction: who recorded it, its trigger, the tokens before (Claude Code's
    ``preTokens``) and after, the messages before -> after, and when."""
    from .describe import when
    ex = getattr(event, "extra", None) or {}
    who = _RECORDER.get(event.kind, f"{event.kind} compaction")
    strategy = ex.get("strategy") or ex.get("mode")
    parts = ["REAL COMPACTION"]
    if event.trigger:
        parts.append(str(event.trigger))
    if event.pre_tokens:
        parts.append(("preTokens " if event.kind == "claude_code" else "tokens before ") + f"{event.pre_tokens:,}")
    if event.post_tokens:
        parts.append(f"after {event.post_tokens:,}")
    if isinstance(ex.get("messages_before"), int) and isinstance(ex.get("messages_after"), int):
        parts.append(f"{ex['messages_before']} \u2192 {ex['messages_after']} messages")
    ts = event_time(event, conv)
    if ts is not None:
        parts.append(when(ts))
    parts.append(who + (f" ({strategy})" if strategy and event.kind != "claude_code" else ""))
    return " \u00b7 ".join(parts)


def summary_badge(event) -> str:
    return _SUMMARY_BADGE.get(event.kind, "compaction summary")


@record(frozen=True)
class Mark:
    """A real compaction as the views draw it: ``boundary`` (a marker row before ``first``, the first
    message after it that a list shows) and ``summary`` (the summary message, badged), by identity."""
    event: object
    text: str
    badge: str
    where: str                   # the file and line (or table row) that recorded it


def compaction_marks(conv) -> tuple[dict, dict]:
    """``(boundaries, summaries)``: id(message) -> Mark. A boundary is keyed by the messages from the
    event's place up to its summary or the first message the compaction did not re-send (a list that
    leaves out the copies draws it before the first one it holds: ``marks_in``); a summary by its own
    message."""
    bounds: dict = {}
    summs: dict = {}
    if conv is None or not getattr(conv, "events", None):
        return bounds, summs
    msgs = conv.messages
    segs = segments(conv)
    for ev in conv.events:
        if not 0 <= ev.message_index <= len(msgs):
            continue
        mark = Mark(ev, boundary_text(ev, conv), summary_badge(ev), str(ev.provenance) if ev.provenance else "")
        end = next((s.end for s in segs if s.start <= ev.message_index < s.end), len(msgs))
        for order, i in enumerate(range(ev.message_index, end)):
            bounds.setdefault(id(msgs[i]), (order, mark))
            # up to the summary, or the first message the compaction did not re-send (a copy's list may
            # leave the copies out)
            if i == ev.summary_index or "copy_of" not in conv.meta_at(i).extra:
                break
        if ev.summary_index is not None and 0 <= ev.summary_index < len(msgs):
            summs[id(msgs[ev.summary_index])] = mark
    return bounds, summs


def marks_in(messages: list, marks: tuple[dict, dict]) -> tuple[dict, dict]:
    """For one shown list: (index -> boundary Mark drawn before that message, index -> summary Mark)."""
    bounds, summs = marks
    if not bounds and not summs:
        return {}, {}
    first: dict = {}            # event -> (order, index): the earliest message of its stretch in this list
    out_s = {}
    for k, m in enumerate(messages):
        hit = bounds.get(id(m))
        if hit is not None:
            order, mark = hit
            key = id(mark)
            if key not in first or order < first[key][0]:
                first[key] = (order, k, mark)
        s = summs.get(id(m))
        if s is not None:
            out_s[k] = s
    return {k: mark for _, k, mark in first.values()}, out_s
