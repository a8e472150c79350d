"""What a Claude Code session shows about the layers that run before the threshold, as evidence for the
claude_code strategy's inference (``claude_code_versions.infer``): each finding names the call (numbered as
replay numbers them), the idle gap, the drop or the growth it rests on.

* time-based microcompact ran only where the real context dropped (no compaction boundary) after an idle gap at
  least as long as its rule's (``idle_gap_minutes``); a drop after a shorter gap is something else;
* the tool result budget: a user message whose tool results pass the budget, which the real context kept (it
  grew by about their size at the next response): the session did not persist them, so the replay must not.

Records with no or zero usage (a ``<synthetic>`` assistant record with all-zero usage) are never contexts.
Pure Python, no Qt.
"""
from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Any, Callable, Iterator

MICRO_DROP_TOKENS = 5_000        # a drop of the real context this large, with no boundary, is a microcompact
MICRO_DROP_SHARE = 0.05
KEPT_SHARE = 0.5                 # the real context grew by at least this share of a result's rough tokens: kept


_scope = threading.local()       # .memo: within ``memoised()``, (function, id(conversation)) -> (conversation, value)


@contextmanager
def memoised() -> Iterator[None]:
    """Within it, ``real_calls`` and ``call_numbers`` are computed once per conversation (one inference reads them
    several times: each is a walk over the whole history); outside, every call computes them afresh."""
    outer = getattr(_scope, "memo", None)
    _scope.memo = outer if outer is not None else {}
    try:
        yield
    finally:
        _scope.memo = outer


def _once(name: str, conversation, compute: Callable[[Any], Any]) -> Any:
    memo = getattr(_scope, "memo", None)
    if memo is None:
        return compute(conversation)
    hit = memo.get((name, id(conversation)))
    if hit is not None and hit[0] is conversation:
        return hit[1]
    value = compute(conversation)
    memo[(name, id(conversation))] = (conversation, value)      # (holds the conversation: its id is not reused)
    return value


def call_numbers(conversation) -> dict[int, int]:
    """message index -> the replay's call number of each recorded assistant message (copies a compaction re-sent
    are not calls)."""
    return _once("call_numbers", conversation, _call_numbers)


def _call_numbers(conversation) -> dict[int, int]:
    out, k = {}, 0
    meta = conversation.meta
    for i, m in enumerate(conversation.messages):
        if isinstance(m, dict) and m.get("role") == "assistant" and not (i < len(meta) and "copy_of" in meta[i].extra):
            out[i] = k
            k += 1
    return out


def is_context(meta) -> bool:
    """A recorded response whose usage is a real context: usage recorded, not zero, not a synthetic record."""
    u = getattr(meta, "usage", None)
    return u is not None and u.context_tokens > 0 and not meta.extra.get("synthetic")


def real_calls(conversation) -> list[tuple[int, int, int, float | None]]:
    """(message index, segment, real context tokens, timestamp) of each recorded API response."""
    return _once("real_calls", conversation, _real_calls)


def _real_calls(conversation) -> list[tuple[int, int, int, float | None]]:
    msgs, meta = conversation.messages, conversation.meta
    starts = sorted(set(conversation.segments or [0]) | {0})
    out, seg = [], 0
    for i, m in enumerate(msgs):
        while seg + 1 < len(starts) and i >= starts[seg + 1]:
            seg += 1
        if not (isinstance(m, dict) and m.get("role") == "assistant") or i >= len(meta) or not is_context(meta[i]):
            continue
        out.append((i, seg, meta[i].usage.context_tokens, meta[i].timestamp))
    return out


def context_drops(conversation) -> list[dict]:
    """Where the real context shrank with no compaction boundary: {"message", "call" (the replay's), "dropped",
    "from", "to", "idle_minutes" (since the response before; None without timestamps)}."""
    calls = real_calls(conversation)
    numbers = call_numbers(conversation)
    out = []
    for k in range(1, len(calls)):
        (_, s0, t0, ts0), (i, s1, t1, ts1) = calls[k - 1], calls[k]
        if s0 != s1:
            continue
        if t0 - t1 >= max(MICRO_DROP_TOKENS, MICRO_DROP_SHARE * t0):
            idle = (ts1 - ts0) / 60.0 if ts0 is not None and ts1 is not None else None
            out.append({"message": i, "call": numbers.get(i, k), "dropped": t0 - t1, "from": t0, "to": t1,
                        "idle_minutes": None if idle is None else round(idle, 1)})
    return out


def time_micro_evidence(drops: list[dict], gap_minutes: float) -> tuple[list[dict], list[dict]]:
    """The drops that follow an idle gap of at least ``gap_minutes`` (evidence of time-based microcompact), and
    the others (a drop after a shorter gap, or with no timestamps, is not that rule)."""
    good = [d for d in drops if d["idle_minutes"] is not None and d["idle_minutes"] >= gap_minutes]
    return good, [d for d in drops if d not in good]


def _result_chars(m: Any) -> list[int]:
    if not isinstance(m, dict) or m.get("role") != "user" or not isinstance(m.get("content"), list):
        return []
    return [len(str(b.get("content", ""))) for b in m["content"]
            if isinstance(b, dict) and b.get("type") == "tool_result"]


def kept_over_budget(conversation, budget_chars: int, persist_threshold: int) -> list[dict]:
    """User messages whose tool results pass the budget (total over ``budget_chars``, one over
    ``persist_threshold``: the budget would persist it) that the real context kept: {"call", "message",
    "chars", "growth"} (the real context's growth from the response before to the one after, in tokens)."""
    msgs = conversation.messages
    calls = real_calls(conversation)
    numbers = call_numbers(conversation)
    out = []
    for k in range(1, len(calls)):
        (i0, s0, t0, _), (i1, s1, t1, _) = calls[k - 1], calls[k]
        if s0 != s1:
            continue
        for j in range(i0 + 1, i1):
            sizes = _result_chars(msgs[j])
            total = sum(sizes)
            if total <= budget_chars or not any(s > persist_threshold for s in sizes):
                continue
            if t1 - t0 >= KEPT_SHARE * total / 4:
                out.append({"call": numbers.get(i1, k), "message": j, "chars": total, "growth": t1 - t0})
    return out
