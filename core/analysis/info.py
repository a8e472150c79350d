"""A summary of what a loaded file holds (the ``info`` command and the window's file panel)."""
from __future__ import annotations

from collections import Counter
from itertools import repeat
from operator import attrgetter, contains
from typing import Any

from .checker import check_conversation
from ..model.conversation import LoadResult, Usage
from ..model.messages import block_type


def tool_pair_counts(messages: list) -> tuple[int, int]:
    """(tool pairs, complete ones) as the checker pairs them: one pair per tool call, even when calls share an
    id (each result pairs with the call of its id just before it); a result without a call before it is a pair
    of its own (incomplete), once per id."""
    open_calls: dict[str, bool] = {}          # id -> its latest call is answered
    calls = answered = 0
    orphans: set = set()

    def result(tid):
        nonlocal answered
        if tid in open_calls:
            answered += not open_calls[tid]
            open_calls[tid] = True
        else:
            orphans.add(tid)

    for m in messages:
        if not isinstance(m, dict):
            continue
        content = m.get("content")
        if content.__class__ is str and len(m) == 2 and "role" in m:
            continue                                  # {"role", "content": text}: no tool call, no result
        if m.get("role") == "tool":
            if isinstance(m.get("tool_call_id"), str):
                result(m["tool_call_id"])
            continue
        for b in content if isinstance(content, list) else ():      # (``blocks``)
            t = block_type(b)
            if t == "tool_use" and isinstance(b.get("id"), str):
                calls += 1
                open_calls[b["id"]] = False
            elif t == "tool_result" and isinstance(b.get("tool_use_id"), str):
                result(b["tool_use_id"])
        for call in m.get("tool_calls") or []:
            if isinstance(call, dict) and isinstance(call.get("id"), str):
                calls += 1
                open_calls[call["id"]] = False
    return calls + len(orphans), answered


_EXTRA = attrgetter("extra")


def _role_counts(messages: list) -> dict:
    """{role: how many messages have it} ("?" for an item that is no message object)."""
    if all(m.__class__ is dict for m in messages):
        return dict(Counter(map(dict.get, messages, repeat("role"))))
    return dict(Counter(m.get("role") if isinstance(m, dict) else "?" for m in messages))


_DETAIL = ("type", "strategy", "mode", "messages_before", "messages_after", "session_id")


def _event_detail(conv, e) -> dict:
    """What a loader recorded about a real compaction beyond the common fields, and its summary call."""
    out = {k: e.extra[k] for k in _DETAIL if e.extra.get(k) is not None}
    sc = e.extra.get("summary_call")
    u = None
    if isinstance(sc, int) and 0 <= sc < len(conv.extra.get("calls") or []):
        u = Usage.from_dict(conv.extra["calls"][sc].get("usage"))          # Inspect: the call's own usage
    elif isinstance(sc, dict):
        u = sc.get("usage")                                                 # hermes: a usage row
        if u is None and sc.get("shared_by"):
            out["summary_call"] = {"shared_by": sc["shared_by"]}
    if u is not None:
        out["summary_call"] = {"input_tokens": u.input_tokens, "output_tokens": u.output_tokens}
    return out


def describe(result: LoadResult) -> dict:
    convs: list[dict[str, Any]] = []
    for i, c in enumerate(result.conversations):
        pairs, complete = tool_pair_counts(c.history())       # a copy a compaction re-sent is no new pair
        findings = check_conversation(c)
        usage = [m.usage for m in c.meta if m.usage is not None]
        call_usage = [Usage.from_dict(row.get("usage")) for row in (c.extra.get("calls") or [])
                      if isinstance(row, dict)]
        if any(call_usage):
            usage = [u for u in call_usage if u is not None]   # recordings: every call, not only the kept ones
        entry = {
            "index": i, "title": c.title, "format": c.format, "dialect": c.dialect, "model": c.model,
            "messages": len(c.messages), "tool_pairs": pairs, "complete_pairs": complete,
            "segments": list(c.segments),
            "events": [dict({"kind": e.kind, "message_index": e.message_index, "trigger": e.trigger,
                             "pre_tokens": e.pre_tokens, "post_tokens": e.post_tokens,
                             "summary_index": e.summary_index,
                             "where": str(e.provenance) if e.provenance else None},
                            **_event_detail(c, e)) for e in c.events],
            # messages a real compaction re-sent (segments that hold the whole compacted context)
            "copies": sum(map(contains, map(_EXTRA, c.meta), repeat("copy_of"))),
            "role_counts": _role_counts(c.messages),
            "kind": c.extra.get("kind") if isinstance(c.extra, dict) else None,
            "findings": [dict(f.to_json(), where=str(c.meta_at(f.message).provenance or "")) for f in findings],
            "finding_counts": dict(Counter(f.code for f in findings)),
            "problems": [str(p) for p in c.problems],
        }
        agent = c.extra.get("agent") if isinstance(c.extra, dict) else None
        if isinstance(agent, dict) and agent.get("name"):
            entry["agent"] = dict(agent)              # who wrote the file, and which version (when it says)
        if usage:
            entry["usage"] = {
                "calls": len(usage),
                "input_tokens": sum(u.input_tokens for u in usage),
                "output_tokens": sum(u.output_tokens for u in usage),
                "cache_creation_input_tokens": sum(u.cache_creation_input_tokens for u in usage),
                "cache_read_input_tokens": sum(u.cache_read_input_tokens for u in usage),
                "peak_context_tokens": max(u.context_tokens for u in usage),
                "last_context_tokens": usage[-1].context_tokens,
            }
        convs.append(entry)
    return {"path": result.path, "format": result.format, "conversations": convs,
            "messages": sum(c["messages"] for c in convs),
            "compactions": sum(len(c["events"]) for c in convs),
            "problems": [str(p) for p in result.problems],
            "problem_list": [{"path": p.path, "line": p.line, "severity": p.severity, "text": p.text}
                             for p in result.problems]}
