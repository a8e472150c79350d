"""The API checker on a list grown at its end, or on a new list that starts with one checked before, goes on from
the old list's last message: the findings are those of a check from scratch, list after list (a replay's running
context, checked at every call with ``replay --check``, made the command quadratic: 437 s on a 50,000-message
chain; 20,000 messages in the OpenAI dialect took 5.9 s, 0.9 s without the check)."""
from __future__ import annotations

import random

from hypothesis import given, settings, strategies as st

from compactscope.core.analysis import checker
from compactscope.core.analysis.checker import check


def _message(rng: random.Random, k: int) -> dict:
    r = rng.random()
    tid = f"t{rng.randrange(6)}"
    if r < 0.25:
        return {"role": "user", "content": rng.choice(["go", "", "  ", [{"type": "text", "text": "x"}], []])}
    if r < 0.5:
        blocks = [{"type": "tool_use", "id": tid, "name": "Read", "input": {}}]
        if rng.random() < 0.3:
            blocks.append({"type": "text", "text": "and"})
        return {"role": "assistant", "content": rng.choice([blocks, "ok", ""])}
    if r < 0.75:
        return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": rng.choice([tid, "t9", 5]),
                                             "content": "r"}]}
    if r < 0.82:
        return {"role": "system", "content": "agents"}
    if r < 0.9:
        return {"role": rng.choice(["user", "assistant", "tool"]), "content": [{"type": rng.choice(["zz", 3])}]}
    return {"role": "assistant", "content": [{"type": "tool_result", "tool_use_id": tid}], "n": k}


def _openai_message(rng: random.Random, k: int) -> dict:
    r = rng.random()
    tid = f"t{rng.randrange(6)}"
    if r < 0.25:
        return {"role": "user", "content": rng.choice(["go", "", None])}
    if r < 0.5:
        calls = [{"id": tid, "type": "function", "function": {"name": "Read", "arguments": "{}"}}]
        if rng.random() < 0.2:
            calls.append({"id": 7, "function": {}})
        return {"role": "assistant", "content": rng.choice(["", "ok", None]), "tool_calls": calls}
    if r < 0.8:
        return {"role": "tool", "tool_call_id": rng.choice([tid, "t9"]), "content": "r"}
    if r < 0.9:
        return {"role": rng.choice(["system", "developer"]), "content": "s"}
    return {"role": rng.choice(["assistant", "robot"]), "content": "", "n": k}


def _fresh(messages: list, before_file=(), dialect: str = "anthropic") -> list:
    # ``pause`` checks every message afresh (the kept lists are neither read nor written)
    return check(messages, dialect, before_file=before_file, pause=lambda: None)


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 10 ** 6), dialect=st.sampled_from(["anthropic", "openai"]))
def test_a_grown_or_extended_list_has_the_findings_of_a_fresh_check(seed, dialect):
    rng = random.Random(seed)
    checker._ANTHROPIC_KEPT.clear()
    checker._OPENAI_KEPT_LISTS.clear()
    make = _message if dialect == "anthropic" else _openai_message
    ctx: list = []
    before = frozenset({"t3"}) if rng.random() < 0.3 else ()
    k = 0
    for _ in range(rng.randint(1, 25)):
        op = rng.random()
        new = [make(rng, k + j) for j in range(rng.randint(0, 4))]
        k += len(new)
        if op < 0.5:
            ctx.extend(new)                               # grown in place
        elif op < 0.75:
            ctx = ctx + new                               # a new list that starts with the old one
        elif op < 0.85 and ctx:
            ctx = ctx[:rng.randrange(len(ctx))] + new     # cut, then grown
        elif op < 0.95 and ctx:
            j = rng.randrange(len(ctx))                   # one message replaced, in a new list
            ctx = ctx[:j] + [make(rng, -1)] + ctx[j + 1:] + new
        else:
            ctx = [m for m in ctx if rng.random() < 0.8] + new
        if rng.random() < 0.2:
            before = frozenset({"t3"}) if not before else ()
        assert check(ctx, dialect, before_file=before) == _fresh(ctx, before, dialect)


def test_the_old_last_message_is_checked_again_when_the_list_grows():
    use = {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "Read", "input": {}}]}
    ctx = [{"role": "user", "content": "go"}, use]
    first = check(ctx, "anthropic")
    assert [(f.code, f.severity) for f in first] == [("unanswered_tool_use", "warning")]   # it waits: the last
    ctx.append({"role": "user", "content": "never mind"})
    grown = check(ctx, "anthropic")
    assert [(f.code, f.severity, f.message) for f in grown] == [("unanswered_tool_use", "error", 1)]
    ctx.append({"role": "assistant", "content": ""})
    assert [f.code for f in check(ctx, "anthropic")] == ["unanswered_tool_use"]   # empty last assistant: allowed
    ctx.append({"role": "user", "content": "more"})
    assert [f.code for f in check(ctx, "anthropic")] == ["unanswered_tool_use", "empty_content"]
