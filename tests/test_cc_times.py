"""The times Claude Code's time-based microcompact reads (``core.layers.claude_code_times``): found over a list's
new messages only in a replay, and at once for a session without timestamps, they are the plain definition's (the
latest timestamp from the end, the last assistant message with one), list after list."""
from __future__ import annotations

import random

from hypothesis import given, settings, strategies as st

from compactscope.core.layers import claude_code_times as T
from compactscope.core.model.conversation import MessageMeta


def plain(messages: list, meta: dict) -> tuple:
    """The definition, as the layer walked it before."""
    now = next((T.timestamp(meta, m) for m in reversed(messages) if T.timestamp(meta, m) is not None), None)
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if isinstance(m, dict) and m.get("role") == "assistant" and T.timestamp(meta, m) is not None:
            return now, i, T.timestamp(meta, m)
    return now, None, None


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 10 ** 6), share=st.sampled_from([0.0, 0.05, 0.5, 1.0]))
def test_carried_times_are_the_plain_ones(seed, share):
    rng = random.Random(seed)
    meta: dict = {}
    ctx: list = []
    made: list = []       # every message held: a freed one's id would be another's (the map is keyed by id)
    t = 1000.0
    for _ in range(rng.randint(1, 30)):
        new = []
        for _ in range(rng.randint(0, 5)):
            m = {"role": rng.choice(("user", "assistant")), "content": "x"}
            t += rng.randint(1, 600)
            meta[id(m)] = MessageMeta(None, t if rng.random() < share else None)
            new.append(m)
        made += new
        op = rng.random()
        if op < 0.5:
            ctx.extend(new)                           # a replay's running context, grown in place
        elif op < 0.8:
            ctx = ctx + new                           # a new list starting with the old one
        else:
            ctx = ctx[:rng.randrange(len(ctx) + 1)] + new    # cut, then grown
        assert T.last_times(ctx, meta) == plain(ctx, meta)
        assert T.last_times(ctx, meta) == plain(ctx, meta)           # asked again


def test_a_session_without_timestamps_is_answered_from_its_meta_map():
    msgs = [{"role": "user" if i % 2 == 0 else "assistant", "content": "x"} for i in range(1000)]
    meta = {id(m): MessageMeta(None, None) for m in msgs}
    assert T.last_times(msgs, meta) == (None, None, None)
    # a timestamp added to the map (a new map length) is seen
    late = {"role": "assistant", "content": "y"}
    meta[id(late)] = MessageMeta(None, 5.0)
    assert T.last_times(msgs + [late], meta) == (5.0, 1000, 5.0)
