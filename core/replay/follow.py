"""Following reality: the replay's default on a recording with real compactions.

After a real compaction the agent went on from its real post-compaction context (the real summary, the
files it restored, what followed), not from the replay's own summary. So the walk, at the first call after a
real compaction:

1. runs the pipeline once more on its own context up to the real boundary (the messages before the
   compaction): does the simulation compact there? That call's record is this check;
2. then starts the next call from the real context: the segment's messages from its first one (the real
   summary, which a free replay leaves out, and the copies a hermes or Inspect compaction re-sent).

When the check did not compact, a *shadow* (the free continuation of the replay's own context, never shown as
the replay's context) runs on, up to the next real compaction, to say how late the simulation would have
compacted: ``ReplayResult.late``. Pure Python, no Qt.
"""
from __future__ import annotations

from bisect import bisect_right
from ..runtime.record import field, record

FOLLOW = "follow"       # ReplayResult.mode: each real compaction predicted from the real start
FREE = "free"           # the free-running what-if: its own summaries all the way


@record
class ResetPoint:
    """Where a real segment starts, in the walk's prepared list: ``at`` (prepared index of its first kept
    message), ``lead`` (the messages a real compaction re-sent, in the strategy's dialect: a hermes segment holds
    some before its summary and some after it), ``segment`` (its number in ``Conversation.segments``), ``start``
    (its first message in the conversation), ``same`` (the strategy reads the conversation's own dialect: the real
    context is then the segment's messages in order, each copy standing for the message it copies)."""
    at: int
    lead: list = field(default_factory=list)
    segment: int = 0
    start: int = 0
    same: bool = True

    def context(self, conv, prepared, j: int) -> tuple[list, list]:
        """The real context before the call at prepared index ``j``, and each message's prepared index (None: a
        copy or a converted one)."""
        if not self.same:
            return list(self.lead) + [prepared.msgs[i] for i in range(self.at, j)], \
                [None] * len(self.lead) + list(range(self.at, j))
        end = len(conv.messages) if j >= len(prepared.msgs) else prepared.origin[j]
        msgs, meta, inv = conv.messages, conv.meta, prepared.inv
        out: list = []
        src: list = []
        for i in range(self.start, end if isinstance(end, int) else len(msgs)):
            if i < len(meta) and "copy_of" in meta[i].extra:
                out.append(_original(msgs, meta, i))
                src.append(None)
            else:
                out.append(prepared.msgs[inv[i]] if i in inv else msgs[i])
                src.append(inv.get(i))
        return out, src


def reset_points(conv, prepared, dialect: str, convert) -> list[ResetPoint]:
    """The real segments' starts after a real compaction (``Conversation.segments`` past 0, and 0 when the
    file opens right after a compaction), in the order of the walk. ``convert(msgs)`` turns recorded
    messages into the strategy's dialect (the copies a compaction re-sent are not in the prepared list)."""
    msgs, meta = conv.messages, conv.meta
    starts = sorted({s for s in (conv.segments or [0]) if 0 < s < len(msgs)}
                    | ({0} if any(e.message_index == 0 for e in conv.events) and msgs else set()))
    out = []
    seg_of = {s: k for k, s in enumerate(sorted(set(conv.segments or [0]) | {0}))}
    bounds = sorted(set(conv.segments or [0]) | {0, len(msgs)})
    same = conv.dialect == dialect
    for s in starts:
        at_end = bisect_right(bounds, s)         # (the first bound past the start, found by halving)
        end = bounds[at_end] if at_end < len(bounds) else len(msgs)
        copies = [i for i in range(s, end) if i < len(meta) and "copy_of" in meta[i].extra]
        first = next((i for i in range(s, end) if not (i < len(meta) and "copy_of" in meta[i].extra)), end)
        at = prepared.inv.get(first, len(prepared.msgs)) if first < len(msgs) else len(prepared.msgs)
        lead = [_original(msgs, meta, i) for i in copies] if same else (convert([msgs[i] for i in copies])
                                                                           if copies else [])
        out.append(ResetPoint(at, lead, seg_of.get(s, 0), s, same))
    return out


def _original(msgs: list, meta: list, i: int):
    """The message a re-sent copy stands for: the one it copies (the same object the history holds, which the
    estimators that anchor on usage know), itself when the compaction changed or made it."""
    extra = meta[i].extra
    o = extra.get("copy_of")
    if isinstance(o, int) and not isinstance(o, bool) and 0 <= o < len(msgs) and not extra.get("edited") \
            and not extra.get("made_by_compaction"):
        return msgs[o]
    return msgs[i]


def trace_compacted(trace, layer_records, n_context: int) -> bool:
    """Whether a pipeline run compacted (as ``CallRecord.compacted`` says it: a summary, messages dropped, or a
    triggered layer changed the context)."""
    records, cur, n = layer_records(trace, n_context)
    if n["summaries"] > 0 or any(r.triggered and r.changed for r in records):
        return True
    return cur is not None and len({x for x in cur if x is not None}) < n_context


class Shadow:
    """The replay's own context carried on past a real compaction the check did not reproduce, up to the next
    real compaction: where the free continuation would have compacted (``found``), never the context the
    replay shows."""

    def __init__(self, real_call: int, context: list):
        self.real_call = real_call
        self.context = context
        self.found: dict | None = None

    def step(self, call: int, new: list, run, meter, layer_records) -> bool:
        """Add the call's new messages, run the pipeline (``run(context)`` -> Trace, the engine's state kept
        as it was); True while the shadow goes on."""
        self.context = meter.concat(self.context, new)
        trace = run(self.context)
        first = trace.steps[0] if trace.steps else None
        if trace_compacted(trace, layer_records, len(self.context)):
            self.found = {"call": call, "tokens_before": first.tokens_before if first else None,
                          "calls_late": call - self.real_call}
            return False
        self.context = trace.output
        return True


def mode_words(result) -> str:
    """Which replay a result is, in words (the CLI's header, the report, the timeline's caption)."""
    if getattr(result, "mode", FREE) == FOLLOW:
        return ("following reality: after each real compaction the replay goes on from the real context (the real "
                "summary and what followed); --free for its own summaries all the way")
    if getattr(result, "real_events", None):
        return "free-running: after a real compaction the replay goes on from its own context (--free)"
    return "the recording has no real compaction: the replay runs on its own context"


def boundary_words(b: dict) -> str:
    """A real compaction's pair (``views.boundary_report`` row) in words."""
    if "simulated_call" not in b:
        return "no simulated compaction in its segment"
    tokens = b.get("simulated_tokens_before")
    est = f", {tokens:,} estimated tokens" if isinstance(tokens, int) else ""
    late = "; the replay's own context carried past the real one" if b.get("late") else ""
    return f"simulated at call {b['simulated_call']} ({b['calls_apart']:+d} calls{est}{late})"


def pair_words(row: dict) -> str:
    """A real compaction and its pair (a ``divergence.report`` row) in words: calls apart, the estimate's error just
    before (the timeline's line per compaction)."""
    sim = row.get("simulated_call")
    head = f"real compaction before call {row['real_call']}: "
    if sim is None:
        body = "no simulated compaction in its segment"
    else:
        body = f"simulated at call {sim} ({row['calls_apart']:+d} calls" + (", late" if row.get("late") else "") + ")"
    if "token_error" in row:
        body += f", estimate {row['token_error']:+,} tokens ({row['token_error_share']:+.1%}) just before"
    return head + body
