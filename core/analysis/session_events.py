"""What happened in a conversation, in order: one list of events per conversation.

Each event is one of

* ``real_compaction``: a compaction the file records (trigger, preTokens, the call it came before, the summary);
* ``simulated_compaction``: a compaction the replay of the chosen strategy made (``CallRecord.compacted``);
* ``layer_change``: a layer that changed the context at a call that was not a compaction (a budget, a microcompact);
* ``finding``: what the API checker says of a real context (``core.checker.check_conversation``);
* ``divergence``: where the simulation and reality part ways (``core.divergence.report``);
* ``loop``: a compaction soon after another of the same kind (``LOOP_CALLS`` calls) that freed little
  (under ``LOOP_FREED`` of the tokens before it).

Calls are numbered over the whole history as replay numbers them; ``segment`` is the real context (between real
compactions) the call's messages belong to. ``history_events(conv, replay)`` is the list, ``events_json`` its
JSON. The texts are English (the window translates them with ``core.i18n``). Pure Python, no Qt.
"""
from __future__ import annotations

from bisect import bisect_right
from typing import Any, Callable, Iterable, Iterator

from ..runtime.record import field, record
from ..model.conversation import Conversation
from ..model.contexts import call_indices, segment_of, segments

REAL, SIMULATED, LAYER, FINDING, DIVERGENCE, LOOP = (
    "real_compaction", "simulated_compaction", "layer_change", "finding", "divergence", "loop")
KINDS = (REAL, DIVERGENCE, SIMULATED, LAYER, LOOP, FINDING)     # the order of events at the same call
LOOP_CALLS = 5          # a compaction this many calls (or fewer) after the one before it ...
LOOP_FREED = 0.25       # ... that freed less than this share of the tokens before it is a loop
SKIP_KEYS = frozenset({"signature", "data", "type", "role", "cache_control"})   # base64, block types: not text


@record
class Event:
    kind: str
    call: int | None
    segment: int
    text: str
    data: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"kind": self.kind, "call": self.call, "segment": self.segment, "text": self.text, **self.data}


# ------------------------------------------------------------------ text of messages (shared with retention, watch)
def _strings(value: Any, out: list) -> None:
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, dict):
        for k, v in value.items():
            if k not in SKIP_KEYS:
                _strings(v, out)
    elif isinstance(value, list):
        for v in value:
            _strings(v, out)


def message_text(m: Any) -> str:
    """Every string a message holds (its text, tool inputs and results, ids), one per line, as in the file:
    what a term is looked for in. Block types, roles and base64 data (images, signatures) are left out."""
    out: list = []
    _strings(m, out)
    return "\n".join(out)


class TextCache:
    """``message_text`` per message object (messages are shared between the calls of a replay)."""

    def __init__(self) -> None:
        self._d: dict[int, tuple[Any, str]] = {}

    def __call__(self, m: Any) -> str:
        hit = self._d.get(id(m))
        if hit is not None and hit[0] is m:
            return hit[1]
        t = message_text(m)
        self._d[id(m)] = (m, t)
        return t

    def many(self, msgs: Iterable) -> list[str]:
        """``[self(m) for m in msgs]``, the lookup inlined (a replay's retention asks it for the whole context of
        every compaction)."""
        d = self._d
        get = d.get
        out: list[str] = []
        add = out.append
        for m in msgs:
            hit = get(id(m))
            if hit is not None and hit[0] is m:
                add(hit[1])
            else:
                t = message_text(m)
                d[id(m)] = (m, t)
                add(t)
        return out


# ------------------------------------------------------------------ where calls and compactions are
def call_segment(conv: Conversation, call: int | None) -> int:
    """The real context (segment) the messages of model call ``call`` belong to (the last for a pending call)."""
    calls = call_indices(conv)
    if call is None or not 0 <= call < len(calls):
        return len(segments(conv)) - 1
    return segment_of(conv, calls[call]).index


def message_call(conv: Conversation, message_index: int) -> int:
    """The first model call that was sent message ``message_index`` (the call after it)."""
    return bisect_right(call_indices(conv), message_index)


@record
class RealCompaction:
    """A real compaction: the segment it opened, the call it came before, the event and its summary."""
    segment: int
    call: int | None
    event: Any
    summary: str


def real_compactions(conv: Conversation) -> list[RealCompaction]:
    """Each compaction the file records that opened a segment, in order."""
    out = []
    calls = call_indices(conv)
    for seg in segments(conv):
        ev = seg.event
        if ev is None:
            continue
        summary = ""
        si = getattr(ev, "summary_index", None)
        if isinstance(si, int) and 0 <= si < len(conv.messages):
            from ..model.text import readable_message_text
            summary = readable_message_text(conv.messages[si])
        first = seg.first_call if seg.first_call is not None else (len(calls) if seg.end >= len(conv.messages)
                                                                   else None)
        out.append(RealCompaction(seg.index, first, ev, summary))
    return out


def first_reply(conv: Conversation, seg: Any) -> int:
    """The message index of a segment's first model reply of its own (not a copy a compaction re-sent), or the
    segment's end: what came before it replaced the context (the summary and what was restored after it)."""
    for i in range(seg.start, seg.end):
        m = conv.messages[i]
        if isinstance(m, dict) and m.get("role") == "assistant" and "copy_of" not in conv.meta_at(i).extra:
            return i
    return seg.end


def real_label(ev: Any) -> str:
    """How a real compaction is named: its trigger (auto, manual, threshold, forced) or "recorded"."""
    trig = getattr(ev, "trigger", None)
    return str(trig) if trig else "recorded"


# ------------------------------------------------------------------ the events
def history_events(conv: Conversation, result: Any = None, *, findings: list[Event] | None = None,
                   report: dict | None = None) -> list[Event]:
    """The conversation's events in order of call (``result``: its replay, a ``ReplayResult``; without one only
    the real compactions and the findings). ``findings``: the finding events already made of ``conv``
    (``finding_events``: the check of every message is the costly part, the same with or without a replay);
    ``report``: ``divergence.report(result, conv)`` already made."""
    events = list(_real_events(conv, result))
    if result is not None:
        events += _simulated_events(conv, result)
        events += _divergence_events(conv, result, report)
        events += _loop_events(conv, result)
    events += finding_events(conv) if findings is None else findings
    order = {k: i for i, k in enumerate(KINDS)}
    big = 1 << 62
    events.sort(key=lambda e: (big if e.call is None else e.call, order.get(e.kind, 9)))
    return events


def events_json(events: list[Event]) -> dict:
    return {"events": [e.to_json() for e in events]}


def _real_events(conv: Conversation, result: Any) -> Iterator[Event]:
    from ..replay.views import pre_tokens_text
    for rc in real_compactions(conv):
        ev = rc.event
        pre = getattr(ev, "pre_tokens", None)
        text = f"real compaction before call {rc.call} ({real_label(ev)}, {pre_tokens_text(pre)})" \
            if rc.call is not None else f"real compaction at the end of the file ({real_label(ev)}, " \
                                        f"{pre_tokens_text(pre)})"
        data = {"trigger": getattr(ev, "trigger", None), "pre_tokens": pre,
                "post_tokens": getattr(ev, "post_tokens", None), "message_index": ev.message_index,
                "summary": rc.summary, "recorder": getattr(ev, "kind", None)}
        if result is not None and rc.call is not None and 0 <= rc.call < len(result.calls):
            data["real_tokens_after"] = result.calls[rc.call].real_tokens
        yield Event(REAL, rc.call, rc.segment, text, data)


def _simulated_events(conv: Conversation, result: Any) -> Iterator[Event]:
    name = result.strategy
    for c in result.calls:
        seg = call_segment(conv, c.index)
        if c.compacted:
            layers = ", ".join(c.fired) or "no layer"
            text = f"{name} compacts before call {c.index}: {layers}, {c.tokens_before:,} -> {c.tokens_after:,} tokens"
            yield Event(SIMULATED, c.index, seg, text,
                        {"layers": list(c.fired), "tokens_before": c.tokens_before, "tokens_after": c.tokens_after,
                         "messages_before": c.messages_before, "messages_after": c.messages_after,
                         "summaries": c.summaries, "dropped_messages": len(c.dropped)})
            continue
        for lr in c.layers:
            if lr.changed:
                text = f"{lr.layer} changed the context before call {c.index}: {lr.note}"
                yield Event(LAYER, c.index, seg, text,
                            {"layer": lr.layer, "tokens_before": lr.tokens_before, "tokens_after": lr.tokens_after})


def _divergence_events(conv: Conversation, result: Any, report: dict | None = None) -> Iterator[Event]:
    from . import divergence
    for row in (report if report is not None else divergence.report(result, conv))["compactions"]:
        if row.get("diverges"):
            call = row.get("real_call")
            yield Event(DIVERGENCE, call, call_segment(conv, call), divergence.warning(row),
                        {k: row.get(k) for k in ("real_call", "first_simulated_call", "calls_apart",
                                                 "token_error_share", "explanation")})


def loops(compactions: list[tuple[int, int | None, int | None]]) -> list[tuple[int, int, float]]:
    """The loops among ``compactions`` (call, tokens before, tokens after), in call order: (call, previous
    call, share freed) for each one within ``LOOP_CALLS`` calls of the one before that freed less than
    ``LOOP_FREED`` of its tokens before."""
    out = []
    prev = None
    for call, before, after in sorted(compactions, key=lambda t: t[0]):
        if prev is not None and call - prev <= LOOP_CALLS and before and after is not None and before > 0:
            share = (before - after) / before
            if share < LOOP_FREED:
                out.append((call, prev, share))
        prev = call
    return out


def _loop_events(conv: Conversation, result: Any) -> Iterator[Event]:
    calls = result.calls
    sim = [(c.index, c.tokens_before, c.tokens_after) for c in calls if c.compacted]
    real = []
    for ev in result.real_events:
        k = ev.get("call")
        if k is not None and 0 <= k < len(calls):
            real.append((k, ev.get("pre_tokens"), calls[k].real_tokens))
    by = {c: (b, a) for c, b, a in sim}
    rby = {c: (b, a) for c, b, a in real}
    for what, found, figures in (("real", loops(real), rby), ("simulated", loops(sim), by)):
        for call, prev, share in found:
            before, after = figures[call]
            text = (f"compaction loop: the {what} compaction before call {call} came {call - prev} call(s) after "
                    f"the one before call {prev} and freed only {share:.0%} ({before:,} -> {after:,} tokens)")
            yield Event(LOOP, call, call_segment(conv, call), text,
                        {"of": what, "previous_call": prev, "freed_share": round(share, 4), "tokens_before": before,
                         "tokens_after": after})


def finding_events(conv: Conversation, pause: Callable[[], Any] | None = None) -> list[Event]:
    """What the API checker says of each real context of ``conv`` (``check_conversation``), as events.
    ``pause``: called every few thousand messages checked (a courteous worker waits there while the user acts)."""
    from .checker import check_conversation
    out = []
    for f in check_conversation(conv, pause=pause):
        seg = segment_of(conv, f.message).index
        text = f"{f.severity} in segment {seg}, message {f.message}: {f.text}"
        data = {"code": f.code, "severity": f.severity, "message": f.message, "block": f.block, "finding": f.text}
        out.append(Event(FINDING, message_call(conv, f.message), seg, text, data))
    return out


# ------------------------------------------------------------------ the replay the events read
def replay_for(conv: Conversation, engine: Any = None, strategy: str | None = None, workspace: Any = None,
               **kw: Any) -> Any:
    """The replay of ``conv`` the events, retention and watch read: with ``engine`` (a configured Engine), else
    the file's own strategy (or ``strategy``) with its session-inferred defaults. It keeps every call's input
    (retention and watch look at what each call's pipeline received)."""
    from ..replay import replay
    if engine is None:
        from .. import strategies
        from ..pipeline.engine import Engine
        name = strategies.choose_strategy(conv, strategy).name
        strat = strategies.get(name)
        params = strategies.infer_params(strat, conv).apply({})
        engine = Engine(strat, strat.resolve(params), workspace=workspace)
    return replay(conv, engine=engine, keep_inputs=True, **kw)


def compaction_stage(steps: Any) -> int:
    """The stage (1-based step, 0 = Original) that shows a run's compaction: the layer that was triggered and
    changed the list, else the first that changed it, else 0."""
    fired = [k + 1 for k, st in enumerate(steps) if st.changed and st.triggered]
    return fired[0] if fired else next((k + 1 for k, st in enumerate(steps) if st.changed), 0)


def call_output(result: Any, k: int) -> list:
    """The context the replay's pipeline left at call ``k`` (what that call sent)."""
    calls, inputs = result.calls, result.inputs
    if k + 1 < len(inputs):
        return inputs[k + 1][:calls[k].messages_after]
    return result.rerun(k).output
