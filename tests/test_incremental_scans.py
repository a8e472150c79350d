"""The per-call scans kept per list (codex's last reported usage, the Gemini CLI's history scan, Inspect's baseline)
give what the from-scratch computations give, for lists grown in place, lists that extend another, and others."""
from __future__ import annotations

import math
import random
from bisect import bisect_right
from types import SimpleNamespace

from hypothesis import given, settings
from hypothesis import strategies as st

from compactscope.core.layers import codex_rules as CR
from compactscope.core.layers import gemini_cli as G
from compactscope.core.layers.codex import last_reported
from compactscope.core.layers import inspect_rules as IR
from compactscope.core.layers.inspect_anchor import Anchors
from compactscope.core.model.conversation import MessageMeta, Usage
from compactscope.core.runtime.listmemo import ListMemo


# ------------------------------------------------------------------ the memo itself
def test_the_memo_finds_a_list_grown_in_place_and_one_that_extends_another():
    memo = ListMemo()
    owner = object()
    a = [{"n": i} for i in range(5)]
    assert memo.find(a, owner) == (None, 0, False)
    memo.store(a, 5, "s")
    a.append({"n": 5})
    assert memo.find(a, owner) == ("s", 5, True)
    b = a[:3] + [{"n": 9}]
    assert memo.find(b, owner) == ("s", 3, False)
    assert memo.find([{"n": 0}], owner) == (None, 0, False)
    assert memo.find(a, object()) == (None, 0, False)        # another owner: forgotten


# ------------------------------------------------------------------ codex
def _reference_last_reported(messages, meta):
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if CR.is_summary(m):
            break
        if m.get("role") != "assistant":
            continue
        mm = meta.get(id(m))
        u = mm.usage if mm is not None else None
        if mm is None or u is None:
            continue
        total = mm.extra.get("total_tokens") if isinstance(mm.extra, dict) else None
        return i, int(total) if isinstance(total, int) else u.context_tokens + u.output_tokens
    return None, None


def _codex_message(rng, meta):
    r = rng.random()
    if r < 0.1:
        return {"role": "user", "content": CR.summary_text("s")}
    if r < 0.5:
        return {"role": "user", "content": "u"}
    m = {"role": "assistant", "content": "a"}
    if rng.random() < 0.3:
        extra = {"total_tokens": rng.randrange(1000)} if rng.random() < 0.5 else {}
        meta[id(m)] = MessageMeta(usage=Usage(input_tokens=rng.randrange(1, 500), output_tokens=3), extra=extra)
    elif rng.random() < 0.3:
        meta[id(m)] = MessageMeta()
    return m


def test_last_reported_over_growing_and_changed_lists_is_the_walk_from_scratch():
    rng = random.Random(7)
    for _ in range(60):
        meta: dict = {}
        ctx: list = []
        others = []
        for _ in range(40):
            ctx.extend(_codex_message(rng, meta) for _ in range(rng.randrange(0, 4)))
            assert last_reported(ctx, meta) == _reference_last_reported(ctx, meta)
            if ctx and rng.random() < 0.3:              # a new list: a prefix of it plus other messages
                other = ctx[:rng.randrange(len(ctx) + 1)] + [_codex_message(rng, meta) for _ in range(2)]
                others.append(other)
                assert last_reported(other, meta) == _reference_last_reported(other, meta)
            if rng.random() < 0.1:
                ctx = list(ctx)                          # a copy, then grown
        for other in others:
            assert last_reported(other, meta) == _reference_last_reported(other, meta)


# ------------------------------------------------------------------ gemini
def _gemini_message(rng, k):
    r = rng.random()
    cid = f"c{rng.randrange(k + 1)}"
    if r < 0.15:
        return {"role": "user", "content": rng.choice(["hi", "é" * rng.randrange(5), ""])}
    if r < 0.3:
        name = rng.choice(["read", "run_shell_command", "ask_user", "x" * rng.randrange(4)])
        return {"role": "assistant", "content": "ok", "tool_calls": [
            {"id": cid, "function": {"name": name, "arguments": '{"a": 1}'}}]}
    if r < 0.4:
        return {"role": "assistant", "content": [{"type": "tool_use", "id": cid, "name": "read", "input": {}}]}
    if r < 0.7:
        return {"role": "tool", "tool_call_id": cid, "content": "o" * rng.choice([1, 500, 40_000, 90_000])}
    if r < 0.85:
        return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": cid, "content": "p" * rng.choice(
            [3, 30_000, 70_000])}, {"type": "text", "text": "t"}]}
    if r < 0.9:
        return {"role": "system", "content": "s"}
    return {"role": "assistant", "content": [{"type": "text", "text": "plain"}]}


def _check_gemini(messages, owner):
    h = G._history_end(messages) if hasattr(G, "_history_end") else len(messages)
    st = G.history_scan(messages, h, owner)
    assert st.estimate() == G.estimate(messages[:h])
    found, prunable = G.mask_candidates(messages, h)
    n, p, collect = G.masked_outputs(messages, h, owner)
    assert (n, p) == (len(found), prunable)
    assert collect() == found


def test_the_gemini_history_scan_is_the_estimate_and_the_masking_from_scratch():
    rng = random.Random(11)
    for _ in range(30):
        owner = object()
        ctx: list = []
        for k in range(30):
            ctx.extend(_gemini_message(rng, k) for _ in range(rng.randrange(0, 5)))
            _check_gemini(ctx, owner)
            if ctx and rng.random() < 0.3:
                other = ctx[:rng.randrange(len(ctx) + 1)] + [_gemini_message(rng, k) for _ in range(3)]
                _check_gemini(other, owner)
            if rng.random() < 0.1:
                ctx = list(ctx)


def test_a_name_defined_after_the_output_that_looked_it_up_is_found_too():
    owner = object()
    ctx = [{"role": "tool", "tool_call_id": "c", "content": "o" * 90_000},
           {"role": "user", "content": "go"}, {"role": "assistant", "content": "a"}]
    _check_gemini(ctx, owner)
    ctx += [{"role": "assistant", "content": "b", "tool_calls": [{"id": "c", "function": {"name": "ask_user"}}]},
            {"role": "user", "content": "go"}, {"role": "assistant", "content": "c"}]
    _check_gemini(ctx, owner)
    assert G.estimate(ctx) == math.floor(G.history_scan(ctx, len(ctx), owner).total)


def _scan_fields(st):
    return (st.names, st.total, st.sums, st.counts, st.outputs, st.looked, st.stale, st.totals)


def _scratch_scan(messages, h):
    st = G.HistoryScan()
    for i in range(h):
        st.add(i, messages[i])
    return st


@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(0, 40), cut=st.floats(0, 1), extra=st.integers(0, 6),
       mask=st.booleans())
def test_a_gemini_scan_resumed_after_a_changed_message_is_the_scan_from_scratch(seed, n, cut, extra, mask):
    """The masking replaces an old output (or any message is replaced past a shared prefix): the scan of the
    new list resumes from the old list's scan undone to their shared prefix, and equals a scan from scratch,
    field by field (names, totals, outputs, the names looked up); so do the estimate and the masking."""
    rng = random.Random(seed)
    owner = object()
    old = [_gemini_message(rng, k) for k in range(n)]
    G.history_scan(old, len(old), owner)
    k = int(cut * len(old))
    changed = [{"role": "tool", "tool_call_id": f"c{rng.randrange(n + 1)}",
                "content": "<tool_output_masked>\nshort\n</tool_output_masked>"}] if mask else []
    new = old[:k] + changed + [_gemini_message(rng, n + q) for q in range(extra)] + old[k + 1:]
    h = G._history_end(new)
    resumed = G.history_scan(new, h, owner)
    if not resumed.stale:
        assert _scan_fields(resumed) == _scan_fields(_scratch_scan(new, h))
    full = _scratch_scan(old, len(old))
    if not full.stale:
        assert _scan_fields(full.rolled_back(k)) == _scan_fields(_scratch_scan(old, k))
        assert _scan_fields(full) == _scan_fields(_scratch_scan(old, len(old)))     # undone on a copy
    _check_gemini(new, owner)


def _odd_gemini_message(rng, k):
    """Shapes ``_gemini_message`` lacks: a message that sets a name and reads one, a system message that sets
    one, a non-dict, long and non-ASCII texts."""
    cid = f"c{rng.randrange(k + 1)}"
    r = rng.random()
    if r < 0.3:
        return {"role": "user", "content": [{"type": "tool_use", "id": cid, "name": "n" * rng.randrange(3)},
                                            {"type": "tool_result", "tool_use_id": cid, "content": "r"}]}
    if r < 0.5:
        return {"role": "system", "content": [{"type": "tool_use", "id": cid, "name": "sys"}]}
    if r < 0.6:
        return "not a message"
    if r < 0.8:
        return {"role": "user", "content": rng.choice(["\u00e9\u4e2d" * rng.randrange(1, 40), "a" * 100_001])}
    return {"role": "assistant", "content": [{"type": "image", "source": {"data": "x" * rng.randrange(9)}}]}


@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(0, 50), odd=st.floats(0, 0.5))
def test_the_gemini_estimate_per_message_is_the_estimate_from_the_contents(seed, n, odd):
    """Each message's share of the estimate, kept per message object, adds up to the estimate of the contents the
    CLI builds, for any list, in any order, a message seen before in another list too."""
    rng = random.Random(seed)
    msgs = [(_odd_gemini_message if rng.random() < odd else _gemini_message)(rng, k) for k in range(n)]
    assert G.estimate(msgs) == G.estimate_from_scratch(msgs)
    rng.shuffle(msgs)
    assert G.estimate(msgs) == G.estimate_from_scratch(msgs)
    assert G.estimate(msgs[n // 2:]) == G.estimate_from_scratch(msgs[n // 2:])


# ------------------------------------------------------------------ inspect
def _reference_baseline(msgs, meta, segments, messages, count):
    """InspectTokens' baseline as it was written first: a set of what each call saw."""
    index = {id(m): (m, i) for i, m in enumerate(msgs)}
    starts = sorted({s for s in (segments or [0]) if 0 <= s < len(msgs)} | {0})
    calls, anchors = [], {}

    def original(h):
        extra = meta[h].extra
        o = extra.get("copy_of")
        return o if isinstance(o, int) and 0 <= o < len(msgs) and not extra.get("edited") else h
    seg = 0
    for i, m in enumerate(msgs):
        while seg + 1 < len(starts) and i >= starts[seg + 1]:
            seg += 1
        if m.get("role") != "assistant":
            continue
        calls.append(i)
        u = meta[i].usage
        if u is None or u.context_tokens <= 0:
            continue
        seen = [original(h) for h in range(starts[seg], i)]
        edited = tuple(msgs[h] for h in range(starts[seg], i) if meta[h].extra.get("edited"))
        anchors[i] = (u.context_tokens, frozenset(id(msgs[o]) for o in seen), edited)
    if not anchors or not messages:
        return None
    hit = index.get(id(messages[-1]))
    if hit is None or hit[0] is not messages[-1]:
        return None
    k = bisect_right(calls, hit[1]) - 1
    anchor = anchors.get(calls[k]) if k >= 0 else None
    if anchor is None:
        return None
    reported, seen, edited = anchor
    ids = {id(m) for m in messages}
    if not (seen - {id(m) for m in edited}) <= ids:
        return None
    new = [m for m in messages if id(m) not in seen]
    for e in edited:
        if id(e) in ids:
            continue
        at = next((j for j, m in enumerate(new) if m == e), None)
        if at is None:
            return None
        del new[at]
    return reported + (count(new) if new else 0)


def _inspect_session(rng, n):
    msgs, meta, segments = [], [], [0]
    for i in range(n):
        if i > 4 and rng.random() < 0.05:
            segments.append(i)
        r = rng.random()
        extra: dict = {}
        if r < 0.1 and i:
            o = rng.randrange(i)
            m = dict(msgs[o]) if rng.random() < 0.7 else {**msgs[o], "content": "edited"}
            extra = {"copy_of": o} if m.get("content") != "edited" else {"copy_of": o, "edited": True}
        else:
            m = {"role": "assistant" if r < 0.5 else "user", "content": f"m{i}"}
        usage = Usage(input_tokens=rng.randrange(0, 300)) if m["role"] == "assistant" and rng.random() < 0.8 else None
        msgs.append(m)
        meta.append(MessageMeta(usage=usage, extra=extra))
    return msgs, meta, sorted(set(segments))


def test_the_inspect_baseline_kept_per_list_is_the_one_from_the_sets():
    rng = random.Random(5)

    def count(ms):
        return sum(len(m["content"]) for m in ms)
    for _ in range(25):
        msgs, meta, segments = _inspect_session(rng, 80)
        anchors = Anchors(msgs, meta, segments)
        ctx: list = []
        j = 0
        while j < len(msgs):
            step = rng.randrange(1, 5)
            ctx.extend(msgs[j:j + step])
            j += step
            assert anchors.baseline(ctx, count) == _reference_baseline(msgs, meta, segments, ctx, count)
            if rng.random() < 0.2:                     # another list: some messages left out, a made one added
                keep = [m for m in ctx if rng.random() < 0.9] + [{"role": "user", "content": "made"}]
                keep += ctx[-1:]
                assert anchors.baseline(keep, count) == _reference_baseline(msgs, meta, segments, keep, count)
            if rng.random() < 0.1:
                ctx = list(ctx)
            if rng.random() < 0.05:                     # a real compaction: the context starts again from a segment
                s = max((x for x in segments if x <= j), default=0)
                ctx = list(msgs[s:j])


def test_inspect_tokens_binds_a_conversation():
    from compactscope.core.layers.inspect_rules import InspectTokens
    rng = random.Random(3)
    msgs, meta, segments = _inspect_session(rng, 30)
    conv = SimpleNamespace(messages=msgs, meta=meta, segments=segments)
    tok = InspectTokens()
    tok.bind(conv)
    ctx = msgs[:20]
    a = tok.tokens(ctx)
    ctx2 = msgs[:25]
    assert tok.tokens(ctx2) >= 0 and tok.tokens(ctx) == a
    assert tok.count(ctx) == tok.count(list(ctx))


def _reference_partition(messages, meta):
    """Inspect's partition as it was written first: each message's facts read afresh."""
    p = IR.Partition()
    for i, m in enumerate(messages):
        if IR.role(m) == "system":
            p.system.append(i)
        elif IR.is_summary(m, meta):
            p.conversation.append(i)
        elif IR.source_of(m, meta) == "input":
            p.input.append(i)
        else:
            p.conversation.append(i)
    if not p.input:
        while p.conversation and not IR.is_summary(messages[p.conversation[0]], meta):
            i = p.conversation.pop(0)
            p.input.append(i)
            if IR.role(messages[i]) == "user":
                break
    return p


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(0, 30))
def test_inspect_partition_with_facts_kept_per_message_is_the_partition_read_afresh(seed, n):
    """The facts kept per message object are read again for another conversation's metadata (a message marked
    as input or as a summary there), and the partition is the one read message by message."""
    rng = random.Random(seed)
    roles = ["system", "developer", "user", "assistant", "tool"]
    msgs = []
    for _ in range(n):
        m: dict = {"role": rng.choice(roles), "content": "x"}
        if rng.random() < 0.2:
            m["source"] = rng.choice(["input", "generate"])
        if rng.random() < 0.1:
            m["metadata"] = {"summary": True}
        msgs.append(m)
    for _ in range(3):
        meta = {id(m): MessageMeta(extra={"source": "input"} if rng.random() < 0.3 else
                                   {"metadata": {"summary": 1}} if rng.random() < 0.2 else {})
                for m in msgs if rng.random() < 0.5}
        got, want = IR.partition(msgs, meta), _reference_partition(msgs, meta)
        assert (got.system, got.input, got.conversation) == (want.system, want.input, want.conversation)
        rng.shuffle(msgs)
