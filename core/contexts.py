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

import dataclasses
from dataclasses import dataclass

from .conversation import Conversation


class ContextError(ValueError):
    """The asked-for segment or call does not exist (the message says what does)."""


@dataclass(frozen=True)
class Segment:
    index: int
    start: int                    # first message (index in the history)
    end: int                      # one past the last
    first_call: int | None        # the first call in it (history numbering), None when it holds none
    calls: int
    event: object = None          # the CompactionEvent that opened it (None for segment 0)

    def label(self) -> str:
        if self.event is None:
            return f"segment {self.index}: from the start of the file"
        ev = self.event
        pre = f", preTokens {ev.pre_tokens:,}" if getattr(ev, "pre_tokens", None) else ""
        return f"segment {self.index}: after a real {ev.trigger or ''} compaction{pre}".replace("  ", " ")


def call_indices(conv) -> list[int]:
    """The message index of each model call (each assistant message), in order; the copies a real compaction
    re-sent (``meta.extra["copy_of"]``: Inspect, hermes) are not calls, as replay numbers them."""
    meta = conv.meta
    return [i for i, m in enumerate(conv.messages) if isinstance(m, dict) and m.get("role") == "assistant"
            and not (i < len(meta) and "copy_of" in meta[i].extra)]


def segments(conv) -> list[Segment]:
    msgs = conv.messages
    starts = sorted({s for s in (conv.segments or [0]) if 0 <= s <= len(msgs)} | {0})
    ends = starts[1:] + [len(msgs)]
    calls = call_indices(conv)
    by_start = {e.message_index: e for e in (conv.events or ())}
    out = []
    for k, (s, e) in enumerate(zip(starts, ends)):
        inside = [n for n, i in enumerate(calls) if s <= i < e]
        out.append(Segment(k, s, e, inside[0] if inside else None, len(inside), by_start.get(s) if k else None))
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
        events = [dataclasses.replace(segment.event, message_index=0,
                                      summary_index=0 if segment.event.summary_index is not None else None)]
    extra = dict(conv.extra or {})
    if segment.index > 0:       # a later segment starts at a root (the compact summary), not mid-session
        extra["starts_mid_session"], extra["results_before_file"] = False, []
    extra["context"] = {"segment": segment.index, "segments": len(conv.segments or [0]), "call": call,
                        "start": start, "end": end, "history_messages": len(conv.messages),
                        "label": segment.label() + (f", at model call {call}" if call is not None else "")}
    return dataclasses.replace(conv, messages=conv.messages[start:end], meta=conv.meta[start:end],
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
    return segment_context(conv, -1 if segment is None else segment)


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
