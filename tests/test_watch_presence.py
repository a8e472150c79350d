"""A watched term's presence in each call's context, carried from the context asked before (``watch.Presence``): the
same answer as looking at every message, for lists that extend, shrink, or replace the last one, with the same
objects or equal copies."""
from __future__ import annotations

from hypothesis import given, settings, strategies as st

from compactscope.core.analysis.watch import Presence
from compactscope.core.runtime.listmemo import equal_prefix

_POOL = [{"role": "user", "content": t} for t in ("a", "b", "term here", "c", "d", "term", "e")]


def _has(m) -> bool:
    return "term" in m["content"]


# each next list: the last one kept up to a point (or not at all), then messages from the pool, some as equal copies
_STEP = st.tuples(st.integers(0, 60), st.lists(st.tuples(st.integers(0, len(_POOL) - 1), st.booleans()), max_size=40))


@settings(max_examples=400, deadline=None)
@given(steps=st.lists(_STEP, min_size=1, max_size=12))
def test_presence_is_a_look_at_every_message(steps):
    presence, seen = Presence(_has), []
    for keep, more in steps:
        msgs = seen[:keep] + [dict(_POOL[i]) if copy else _POOL[i] for i, copy in more]
        assert presence(msgs) == any(map(_has, msgs)), (seen, msgs)
        seen = msgs


@settings(max_examples=300, deadline=None)
@given(a=st.lists(st.integers(0, 3), max_size=80), b=st.lists(st.integers(0, 3), max_size=80))
def test_equal_prefix_is_the_longest_equal_prefix(a, b):
    pool = [{"k": i} for i in range(4)]
    la, lb = [pool[i] for i in a], [dict(pool[i]) for i in b]        # (b holds copies: equal, not the same)
    k = equal_prefix(la, lb)
    assert la[:k] == lb[:k] and (k == min(len(la), len(lb)) or la[k] != lb[k])


def test_presence_scans_only_what_is_new():
    looked: list = []

    def has(m):
        looked.append(m)
        return False
    presence = Presence(has)
    ctx = [{"i": i} for i in range(100)]
    assert not presence(ctx[:50])
    looked.clear()
    assert not presence(ctx)                    # the first 50 are the last list's: only the 50 new are looked at
    assert looked == ctx[50:]
