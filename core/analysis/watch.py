"""Follow a term (a path, a tool id, a phrase) through a conversation's whole history.

``watch(conv, term, result)`` says in which real contexts (segments) the term is present and at which model calls
(a call's context holds the term when a message sent to it does), and which event removed it: a real compaction
(the term was in the segment before it and is not in what replaced it, up to the next model reply), or a layer of
the simulated pipeline (``result``: the replay; the term was in the layer's input at that call and not in its
output). A term is found as the file's text holds it (case-sensitive, inside any string of a message: text,
tool inputs and results, ids). Pure Python, no Qt.
"""
from __future__ import annotations

from itertools import islice
from typing import Any, Callable

from ..runtime.listmemo import equal_prefix
from ..runtime.record import field, record
from .session_events import TextCache, call_output, call_segment, first_reply, real_compactions, real_label
from ..model.contexts import call_indices, segments


@record
class Lost:
    call: int | None
    by: str                  # "real auto compaction" or "<strategy>: <layer>"
    kind: str                # "real" | "simulated"
    segment: int

    def to_json(self) -> dict:
        return {"call": self.call, "by": self.by, "kind": self.kind, "segment": self.segment}


@record
class Context:
    segment: int
    present: bool
    first_message: int | None = None     # where the term first occurs in the segment
    first_call: int | None = None        # the first and last call of the segment whose context holds it
    last_call: int | None = None

    def to_json(self) -> dict:
        return {"segment": self.segment, "present": self.present, "first_message": self.first_message,
                "first_call": self.first_call, "last_call": self.last_call}


@record
class Watch:
    term: str
    contexts: list[Context] = field(default_factory=list)
    lost_at: list[Lost] = field(default_factory=list)
    strategy: str | None = None
    simulated: list[tuple[int, int]] = field(default_factory=list)    # call ranges where the replay's context holds it

    def to_json(self) -> dict:
        return {"term": self.term, "contexts": [c.to_json() for c in self.contexts],
                "lost_at": [x.to_json() for x in self.lost_at], "strategy": self.strategy,
                "simulated_calls": [list(r) for r in self.simulated]}

    def present_calls(self) -> list[tuple[int, int]]:
        return [(c.first_call, c.last_call) for c in self.contexts
                if c.first_call is not None and c.last_call is not None]


def ranges(flags: list[bool]) -> list[tuple[int, int]]:
    """The runs of True in ``flags`` as (first, last) index pairs."""
    out: list[tuple[int, int]] = []
    start = None
    for i, f in enumerate(flags + [False]):
        if f and start is None:
            start = i
        elif not f and start is not None:
            out.append((start, i - 1))
            start = None
    return out


def _contexts(conv: Any, term: str, text: TextCache) -> list[Context]:
    calls = call_indices(conv)
    out = []
    for seg in segments(conv):
        first = next((i for i in range(seg.start, seg.end) if term in text(conv.messages[i])), None)
        ctx = Context(seg.index, first is not None, first)
        if first is not None and seg.first_call is not None:
            inside = [k for k in range(seg.first_call, seg.first_call + seg.calls) if calls[k] > first]
            if inside:
                ctx.first_call, ctx.last_call = inside[0], inside[-1]
        out.append(ctx)
    return out


def _real_losses(conv: Any, term: str, text: TextCache, contexts: list[Context]) -> list[Lost]:
    segs = segments(conv)
    out = []
    for rc in real_compactions(conv):
        k = rc.segment
        if not contexts[k - 1].present:
            continue
        seg = segs[k]
        after = conv.messages[seg.start:first_reply(conv, seg)]
        if not any(term in text(m) for m in after):
            out.append(Lost(rc.call, f"real {real_label(rc.event)} compaction", "real", k))
    return out


class Presence:
    """Whether each list asked holds a message ``has(m)`` is true of (a function of the message's value), carried
    from the list asked before it: the leading messages the two share keep the first one that holds it, so a
    call's context costs the messages after them. A replay's contexts grow from call to call (each the last one's output
    and the new messages): a term in no message was looked for in every message of every call's context, a
    quadratic walk (a 100k-message Claude Code session's replay: thousands of messages at each of 50,000 calls)."""

    def __init__(self, has: Callable[[Any], bool]):
        self.has = has
        self.last: list = []
        self.first: int | None = None          # the first message of ``last`` that holds it

    def __call__(self, msgs: list) -> bool:
        p = equal_prefix(self.last, msgs) if self.last else 0
        if self.first is not None and self.first < p:
            first: int | None = self.first     # (``msgs`` has it there too, and nothing before it)
        else:                                  # (none of the shared messages holds it)
            has = self.has
            first = next((i for i, m in enumerate(islice(msgs, p, None), p) if has(m)), None)
        self.last, self.first = msgs, first
        return first is not None


def _simulated(conv: Any, term: str, text: TextCache, result: Any) -> tuple[list[tuple[int, int]], list[Lost]]:
    has: dict[int, bool] = {}

    def has_term(m: Any) -> bool:
        v = has.get(id(m))
        if v is None:
            v = has[id(m)] = term in text(m)
        return v

    def holds(msgs: list) -> bool:
        return any(map(has_term, msgs))

    present, lost = [], []
    presence = Presence(has_term)
    for c in result.calls:
        if c.index >= len(result.inputs):
            break
        before = presence(result.inputs[c.index])
        changed = any(lr.changed for lr in c.layers)
        after = presence(call_output(result, c.index)) if before and changed else before
        present.append(after)
        if before and not after:
            lost.append(Lost(c.index, f"{result.strategy}: {_layer_that_removed(result, c.index, holds)}", "simulated",
                             call_segment(conv, c.index)))
    return ranges(present), lost


def _layer_that_removed(result: Any, k: int, holds: Any) -> str:
    trace = result.rerun(k)
    for s in trace.steps:
        if holds(s.input) and not holds(s.messages):
            return s.layer
    return "the pipeline"


def watch(conv: Any, term: str, result: Any = None) -> Watch:
    """Where ``term`` is present and what removed it (see the module doc)."""
    if not term:
        raise ValueError("the term to watch is empty")
    text = TextCache()
    w = Watch(term, _contexts(conv, term, text))
    w.lost_at = _real_losses(conv, term, text, w.contexts)
    if result is not None:
        w.strategy = result.strategy
        w.simulated, sim = _simulated(conv, term, text, result)
        w.lost_at += sim
    big = 1 << 62
    w.lost_at.sort(key=lambda x: (big if x.call is None else x.call, x.kind != "real"))
    return w
