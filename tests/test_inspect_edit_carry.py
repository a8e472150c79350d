"""CompactionEdit's pass carried from call to call (core/layers/inspect_edit.py) against the full pass.

The carried pass must make exactly what ``inspect_rules.edit_pass`` makes from scratch: the same messages (equal
values), origin, changes, info and edits, whatever the next list is made of (the last list grown in place, the
last output grown, a list that is not an extension of the last one, a message replaced by a copy), and whatever
the parameters; it never changes its input."""
from __future__ import annotations

import copy
import json
import random

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from compactscope.core.layers import inspect_edit as E
from compactscope.core.layers import inspect_rules as R
from compactscope.core.layers.inspect import _by_identity, _edits
from compactscope.core.pipeline.trace import CLEARING, CountedEdits


@pytest.fixture
def always(monkeypatch):
    """The carried path at every length (it starts at MIN_MESSAGES messages)."""
    monkeypatch.setattr(E, "MIN_MESSAGES", 0)


def _assistant(rng: random.Random, k: int, open_ids: list) -> dict:
    calls = []
    for i in range(rng.choice((0, 1, 1, 2, 3))):
        cid = rng.choice((f"c{k}_{i}", f"c{k}_{i}", f"c{k}_{i}", "dup", None))
        name = rng.choice(("bash", "read", "memory", "tool_search", "skipme"))
        args = {"command": "create", "file_text": "x" * rng.randint(0, 30)} if name == "memory" and rng.random() < .7 \
            else {"cmd": "ls"}
        calls.append({"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}})
        open_ids.append(cid)
    r = rng.random()
    content: object = "ok" * rng.randint(0, 3) if r < 0.4 else \
        [{"type": "text", "text": "t"}] + ([{"type": "reasoning", "reasoning": "r", "summary": "s"}] if r < .6 else []) \
        if r < 0.8 else ""
    m: dict = {"role": "assistant", "content": content}
    if calls:
        m["tool_calls"] = calls
    if rng.random() < 0.4:
        m["reasoning"] = "hmm" * rng.randint(0, 3)
    return m


def _message(rng: random.Random, k: int, open_ids: list) -> dict:
    r = rng.random()
    if r < 0.3:
        return _assistant(rng, k, open_ids)
    if r < 0.8 and open_ids:
        cid = open_ids.pop(rng.randrange(len(open_ids))) if rng.random() < 0.2 else open_ids.pop(0)
        return {"role": "tool", "tool_call_id": cid, "content": "out" * rng.randint(0, 40)}
    if r < 0.85:
        return {"role": "tool", "tool_call_id": rng.choice(("zz", "dup", None)), "content": "stray"}
    if r < 0.9:
        return {"role": "system", "content": "sys"}
    return {"role": "user", "content": f"u{k}"}


def _same(a: R.Pass, b: R.Pass) -> None:
    assert a.messages == b.messages
    assert list(a.origin) == list(b.origin)
    assert a.changes == b.changes
    assert a.info == b.info
    ea = a.edits_for("") if a.edits_for else _edits(a.changes, a.origin)
    eb = _edits(b.changes, b.origin)
    assert [e.to_json() for e in ea] == [e.to_json() for e in eb]
    if isinstance(ea, CountedEdits):        # the cleared results it counted where it made them: those it lists
        assert ea.cleared == sum(1 for e in eb if e.tool_id is not None and e.kind in CLEARING)
    ea = a.edits_for("pass 2: ") if a.edits_for else _edits(a.changes, a.origin, "pass 2: ")
    assert [e.to_json() for e in ea] == [e.to_json() for e in _edits(b.changes, b.origin, "pass 2: ")]


def _check(messages: list, memo: dict, params: tuple) -> R.Pass:
    before = copy.deepcopy(messages)
    ids = list(map(id, messages))
    got = E.edit_pass(messages, memo, *params)
    want = R.edit_pass(messages, *params)
    assert messages == before and list(map(id, messages)) == ids          # the input is never changed
    _same(got, want)
    # the same messages kept, the same made anew (never a message of the input: a copy made for an earlier list
    # may stand for one only where the input holds another copy)
    kept = [a is b for a, b in zip(got.messages, messages)]
    assert kept == [a is b for a, b in zip(want.messages, messages)]
    assert not {id(m) for m, k in zip(got.messages, kept) if not k} & set(ids)
    return got


PARAMS = st.tuples(st.sampled_from((0, 1, 2, "all", -1)), st.integers(0, 4), st.just(True),
                   st.sampled_from(((), ("skipme",), ("read", "bash"))), st.booleans())


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10 ** 6), params=PARAMS)
def test_carried_equals_full_on_growing_lists(always, seed, params):
    """A running context grown in place, its output passed again (the repeated pass), now and then a list that
    is not an extension of the last one or holds a copy of a message."""
    rng = random.Random(seed)
    memo: dict = {}
    open_ids: list = []
    context: list = []
    for _ in range(rng.randint(1, 25)):
        r = rng.random()
        if r < 0.1 and context:
            context = context[:rng.randrange(len(context))]             # not a prefix extension: cut
        elif r < 0.15 and context:
            k = rng.randrange(len(context))
            context = context[:k] + [copy.deepcopy(context[k])] + context[k + 1:]   # an equal copy in its place
        elif r < 0.2 and context:
            k = rng.randrange(len(context))
            context = context[:k] + [_message(rng, 99, open_ids)] + context[k + 1:]  # another message there
        context.extend(_message(rng, len(context), open_ids) for _ in range(rng.randint(0, 6)))
        if context and rng.random() < 0.05:
            context.append(context[rng.randrange(len(context))])       # a message there twice
        out = _check(context, memo, params)
        again = _check(out.messages, memo, params)                     # the repeated pass over its output
        _check(again.messages, memo, params)
        if out.edits_for is not None:                                  # asked late: the state went on since
            assert [e.to_json() for e in out.edits_for("x: ")] == \
                [e.to_json() for e in _edits(out.changes, out.origin, "x: ")]
        back = E.by_identity(memo, out.messages, context)              # the repeat layer's "left as they were"
        assert back is None or back == _by_identity(out.messages, context)
        assert E.by_identity(memo, again.messages, context) is None
        if rng.random() < 0.3:
            context = list(out.messages) + [_message(rng, len(out.messages), open_ids)]   # going on from the output


def test_carried_in_a_replay_equals_the_full_pass(monkeypatch):
    """The whole strategy over a generated session that goes over the threshold and stays there: every call's
    record the same with and without carrying (the full pass when the memo is off)."""
    from compactscope.core.pipeline.engine import Engine
    from compactscope.core.replay import replay
    from compactscope.core.model.conversation import Conversation
    from compactscope.core.model.messages import OPENAI
    rng = random.Random(5)
    open_ids: list = []
    msgs = [{"role": "system", "content": "s"}, {"role": "user", "content": "go"}]
    while len(msgs) < 400:
        m = _message(rng, len(msgs), open_ids)
        if m["role"] == "tool":
            m["content"] = "line\n" * rng.randint(10, 300)
        msgs.append(m)

    def run(carry: bool) -> list:
        if not carry:
            monkeypatch.setattr(E, "MIN_MESSAGES", 10 ** 9)
        else:
            monkeypatch.setattr(E, "MIN_MESSAGES", 0)
        out = []
        for params in ({"threshold": 3000}, {"threshold": 800, "keep_tool_uses": 1, "keep_thinking_turns": 0}):
            eng = Engine("inspect_edit", params)
            out.append(replay(Conversation(list(msgs), dialect=OPENAI), engine=eng).to_json())   # grown in place
            res = replay(Conversation(list(msgs), dialect=OPENAI), engine=eng, keep_traces=True)
            out.append((res.to_json(), [[(s.layer, s.messages, list(s.origin), [e.to_json() for e in s.edits],
                                          s.vars, s.note, s.error) for s in t.steps] for t in res.traces]))
        return out
    full, carried = run(False), run(True)
    assert _timeless(carried) == _timeless(full)


def _timeless(x):
    if isinstance(x, dict):
        return {k: _timeless(v) for k, v in x.items() if k not in ("seconds", "ms")}
    if isinstance(x, (list, tuple)):
        return [_timeless(v) for v in x]
    return x


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 10 ** 6))
def test_carried_partition_equals_the_full_one(seed):
    """The gate's partition (system, input, conversation, marked input, summaries) carried over growing lists,
    a list cut or with a message replaced now and then, equals the one made from scratch."""
    rng = random.Random(seed)
    memo: dict = {}
    meta: dict = {}
    context: list = []
    for _ in range(rng.randint(1, 20)):
        if context and rng.random() < 0.15:
            k = rng.randrange(len(context))
            context = context[:k] + [{"role": "user", "content": "new"}] + context[k + 1:]
        elif context and rng.random() < 0.1:
            context = context[:rng.randrange(len(context))]
        for _ in range(rng.randint(0, 5)):
            m: dict = {"role": rng.choice(("system", "developer", "user", "assistant", "tool", "user"))}
            r = rng.random()
            if r < 0.2:
                m["source"] = "input"
            elif r < 0.3:
                m["metadata"] = {"summary": True}
            context.append(m)
        assert_carried_partition(context, meta, memo)


def assert_carried_partition(context: list, meta: dict, memo: dict) -> None:
    """The carried partition of ``context`` is the one made from scratch."""
    got = E.partition(context, meta, memo)
    part = R.partition(context, meta)
    want = (part, [i for i in part.input if R.message_facts(context[i], meta)[2]],
            [i for i, m in enumerate(context) if R.message_facts(m, meta)[1]])
    assert (got[0].system, got[0].input, got[0].conversation, got[1], got[2]) == \
        (want[0].system, want[0].input, want[0].conversation, want[1], want[2])


def test_partition_goes_on_from_a_list_with_a_few_copies_of_the_same_part():
    """A list whose few replaced messages (an edit pass's cleared copies) are of the same part goes on from the
    call before's partition; one whose replaced message changed part (a summary, a system message) starts afresh."""
    rng = random.Random(5)
    for _ in range(60):
        meta: dict = {}
        memo: dict = {}
        msgs = [{"role": "system", "content": "s"}, {"role": "user", "content": "task", "source": "input"}]
        msgs += [{"role": rng.choice(("user", "assistant", "tool")), "content": str(i)} for i in range(70)]
        E.partition(msgs, meta, memo)
        nxt = list(msgs)
        for k in rng.sample(range(2, len(nxt)), 3):
            r = rng.random()
            if r < 0.6:
                nxt[k] = {**nxt[k], "content": "cleared"}                    # the same part: carried
            elif r < 0.8:
                nxt[k] = {**nxt[k], "metadata": {"summary": True}}            # now a summary
            else:
                nxt[k] = {"role": "system", "content": "late system"}         # now a system message
        nxt += [{"role": "user", "content": "more"}]
        assert_carried_partition(nxt, meta, memo)
