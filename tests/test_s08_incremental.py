"""s08's micro_compact carried from call to call (core/layers/s08_incremental.py) against the full scan.

The incremental path must make exactly what the full scan makes: the same messages (the same dicts where a
message is kept), origin, edits, vars, note and delta, whatever the input is made of (the last output grown,
cut by a snip, replaced, or a list of its own) and whatever the parameters are at each call."""
from __future__ import annotations

import random

import pytest
from hypothesis import given, settings, strategies as st

from compactscope.core.layers import s08, s08_incremental
from compactscope.core.layers.base import LayerContext
from compactscope.core.model.conversation import Conversation
from compactscope.core.replay import replay
from compactscope.core import strategies

PLACEHOLDER = s08.MICRO_PLACEHOLDER


@pytest.fixture
def always(monkeypatch):
    """The incremental path at every length (it starts at MIN_MESSAGES messages)."""
    monkeypatch.setattr(s08_incremental, "MIN_MESSAGES", 0)


def _content(rng: random.Random):
    r = rng.random()
    if r < 0.08:
        return PLACEHOLDER
    if r < 0.14:
        return [{"type": "text", "text": "y" * rng.randint(0, 260)}] * rng.randint(1, 3)
    if r < 0.18:
        return rng.choice([12345, None, 3.5, {"k": "v" * rng.randint(0, 200)}])
    if r < 0.2:
        return "y" * 200 + PLACEHOLDER
    return "z" * rng.choice([rng.randint(0, 20), rng.randint(110, 130), rng.randint(100, 3000)])


def _turn(rng: random.Random, k: int) -> list:
    """One model turn: an assistant message with tool calls and the user message with their results, or text."""
    r = rng.random()
    if r < 0.15:
        return [{"role": "assistant", "content": "text " * rng.randint(0, 3)},
                {"role": "user", "content": "go on " * rng.randint(0, 3)}]
    n = rng.randint(1, 3)
    ids = [f"t{k}_{i}" for i in range(n)]
    uses = [{"type": "text", "text": "let me look"}] + [{"type": "tool_use", "id": i, "name": "Bash", "input": {}}
                                                         for i in ids]
    results: list = [{"type": "tool_result", "tool_use_id": i, "content": _content(rng)} for i in ids]
    if rng.random() < 0.1:
        results.insert(rng.randint(0, len(results)), {"type": "text", "text": "and a note"})
    if rng.random() < 0.05:
        results.append("not a block")
    return [{"role": "assistant", "content": uses}, {"role": rng.choice(["user"] * 9 + ["assistant"]),
                                                     "content": results}]


def _same(a, b, inp) -> None:
    assert a.messages == b.messages
    assert [m is inp[i] if i < len(inp) else None for i, m in enumerate(a.messages)] == \
        [m is inp[i] if i < len(inp) else None for i, m in enumerate(b.messages)]
    assert list(a.origin) == list(b.origin)
    assert [e.to_json() for e in a.edits] == [e.to_json() for e in b.edits]
    assert a.vars == b.vars and a.note == b.note and a.triggered == b.triggered
    assert (a.delta is None) == (b.delta is None)
    if a.delta is not None:
        assert tuple(a.delta.removed) == tuple(b.delta.removed) and tuple(a.delta.added) == tuple(b.delta.added)


@settings(max_examples=120, deadline=None)
@given(st.integers(0, 2 ** 32 - 1), st.integers(2, 40))
def test_incremental_micro_equals_the_full_scan(seed, calls):
    rng = random.Random(seed)
    saved = s08_incremental.MIN_MESSAGES
    s08_incremental.MIN_MESSAGES = 0
    try:
        memo: dict = {}
        params = {"keep_recent": 3, "micro_min_chars": 120}
        last: list = [{"role": "user", "content": "start"}]
        for k in range(calls):
            r = rng.random()
            if r < 0.1:         # a parameter changed between two calls
                params = {"keep_recent": rng.choice([0, 1, 3, 5]), "micro_min_chars": rng.choice([0, 120, 125, 500])}
            new = _turn(rng, k)
            shape = rng.random()
            if shape < 0.45:            # the last output and the new messages (the walk, no snip)
                x = last + new
            elif shape < 0.8 and len(last) > 4:    # a snip: head, its placeholder, the last output from b on
                a = rng.randint(0, min(4, len(last) - 1))
                b = rng.randint(a, len(last))
                x = last[:a] + [{"role": "user", "content": f"[snipped {b - a} messages]"}] + last[b:] + new
            elif shape < 0.85:          # extended in place, the way the walk grows its own context
                x = last
                x.extend(new)
            elif shape < 0.9:           # the same list again
                x = last
            elif shape < 0.95 and last:     # one of its messages replaced (another layer changed it)
                x = list(last) + new
                i = rng.randrange(len(x))
                x[i] = dict(x[i])
            else:                       # a list of its own (a summary, another conversation)
                x = [{"role": "user", "content": "[Compacted]\n\nsummary"}] + new
            full = s08.micro_compact(x, LayerContext.default(params))
            inc = s08.micro_compact(x, LayerContext.default(params, memo=memo))
            _same(full, inc, x)
            last = inc.messages if rng.random() < 0.9 else full.messages
    finally:
        s08_incremental.MIN_MESSAGES = saved


def _session(calls: int, seed: int) -> Conversation:
    rng = random.Random(seed)
    msgs: list = [{"role": "user", "content": "please start"}]
    for k in range(calls):
        msgs += _turn(rng, k)
    return Conversation(msgs)


@pytest.mark.parametrize("params", [{}, {"max_messages": 10_000, "context_limit": 10 ** 12},
                                    {"variant": "readme", "max_messages": 7, "keep_head": 9},
                                    {"keep_recent": 0, "micro_min_chars": 0}])
def test_a_replay_is_the_same_with_and_without_the_incremental_path(params, monkeypatch, tmp_path):
    conv = _session(120, 5)
    st_ = strategies.get("s08")

    def run(minimum):
        monkeypatch.setattr(s08_incremental, "MIN_MESSAGES", minimum)
        from compactscope.core.files.workspace import Workspace
        r = replay(conv, st_, params, workspace=Workspace(str(tmp_path / "w")), keep_traces=True)
        calls = [c.to_json() for c in r.calls]
        steps = [[s.to_json(shared=True) for s in t.steps] for t in r.traces]
        return calls, steps

    assert run(0) == run(10 ** 9)


def test_the_replay_turns_the_memo_on_and_off():
    from compactscope.core.pipeline.engine import Engine
    eng = Engine("s08", {})
    r = replay(_session(10, 1), engine=eng)
    assert r.engine.memo is None and eng.memo is None


# ------------------------------------------------------------------ the walk's inlined message counts
_BLOCK = st.one_of(
    st.fixed_dictionaries({"type": st.sampled_from(["text", "image", "tool_result", "tool_use", "thinking", 3, None])},
                          optional={"content": st.text(max_size=3)}),
    st.text(max_size=3), st.integers(), st.none())
_MESSAGE = st.one_of(
    st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant", "tool", None, 7])},
                          optional={"content": st.one_of(st.text(max_size=4), st.lists(_BLOCK, max_size=4),
                                                         st.integers(), st.none())}),
    st.text(max_size=3), st.none(), st.lists(st.integers(), max_size=2))


@settings(max_examples=300, deadline=None)
@given(_MESSAGE)
def test_the_walks_inlined_counts_are_the_block_helpers(m):
    from compactscope.core.model.messages import block_type, blocks
    from compactscope.core.replay import walk

    def user_turn(m) -> bool:
        if not isinstance(m, dict) or m.get("role") != "user":
            return False
        c = m.get("content")
        if isinstance(c, str):
            return bool(c.strip())
        return any(block_type(b) in ("text", "image") for b in blocks(m))

    def tool_results(m) -> int:
        if not isinstance(m, dict):
            return 0
        if m.get("role") == "tool":
            return 1
        return sum(1 for b in blocks(m) if block_type(b) == "tool_result")

    assert walk._is_user_turn(m) == user_turn(m)
    assert walk._tool_results(m) == tool_results(m)


def test_a_replay_that_keeps_its_traces_still_notes_each_steps_reads(tmp_path):
    from compactscope.core.files.workspace import Workspace
    from compactscope.core.pipeline.engine import Engine
    conv = _session(8, 2)
    kept = replay(conv, "s08", workspace=Workspace(str(tmp_path / "w")), keep_traces=True)
    assert kept.traces and all(s.reads is not None for t in kept.traces for s in t.steps)
    assert "keep_recent" in kept.traces[-1].step("micro_compact").reads
    eng = Engine("s08", {})
    plain = replay(conv, engine=eng)
    assert plain.engine.track_reads and eng.track_reads
    assert [c.to_json() for c in plain.calls] == [c.to_json() for c in kept.calls]
