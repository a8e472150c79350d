"""What a layer or estimator keeps from one call to the next (codex's per-message facts and summary key, Inspect's
count carried over lists that share or extend another's messages) gives what the full computation gives."""
from __future__ import annotations

import json
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from compactscope.core.layers import inspect_rules as IR


def _inspect_message(rng: random.Random, k: int, calls: list) -> dict:
    r = rng.random()
    if r < 0.3 and calls:
        cid = calls.pop(0)
        content = IR.TOOL_RESULT_REMOVED if rng.random() < 0.4 else f"result {k} " * rng.randint(0, 4)
        return {"role": "tool", "tool_call_id": cid, "content": content}
    if r < 0.7:
        m: dict = {"role": "assistant"}
        kind = rng.random()
        if kind < 0.25:
            m["content"] = [{"type": "text", "text": f"a{k}"}]
        elif kind < 0.4:
            m["content"] = [{"type": "reasoning", "reasoning": "think"}, {"type": "text", "text": "x"}]
        elif kind < 0.5:
            m["content"] = []
        elif kind < 0.6:
            m["content"] = [{"type": "text", "text": "y"}]
            m["reasoning"] = rng.choice(["", None, "why"])
        elif kind < 0.7:
            m["content"] = "plain"
            m["reasoning_content"] = "r"
        else:
            m["content"] = [{"type": "text", "text": "z"}, "not a dict"]
        n = rng.choice((0, 0, 1, 2))
        m["tool_calls"] = []
        for j in range(n):
            cid = f"c{k}_{j}"
            name = rng.choice(("bash", "read", IR.MEMORY_TOOL))
            args = json.dumps({"command": "create", "file_text": "secret"} if name == IR.MEMORY_TOOL else {"p": k})
            m["tool_calls"].append({"id": cid, "type": "function", "function": {"name": name, "arguments": args}})
            calls.append(cid)
        return m
    return {"role": "user", "content": rng.choice(("go on", [{"type": "text", "text": "more"}]))}


# ------------------------------------------------------------------ codex: facts kept per message
def _codex_history(rng: random.Random, n: int) -> list:
    from compactscope.core.layers import codex_rules as CR
    out: list = []
    for k in range(n):
        r = rng.random()
        if r < 0.3:
            out.append({"role": "user", "content": rng.choice(["do it " * rng.randint(1, 400), "ok", ""])})
        elif r < 0.4:
            out.append({"role": "user", "content": CR.summary_text("s" * rng.randint(0, 50))})
        elif r < 0.5:
            out.append({"role": "developer", "content": "<permissions instructions>x"})
        elif r < 0.6:
            out.append({"role": "user", "content": [{"type": "input_text", "text": "<environment_context>y"}]})
        elif r < 0.7 and out:
            out.append(rng.choice(out))                 # the same object again
        else:
            out.append({"role": "assistant", "content": f"a{k}"})
    return out


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(0, 40), budget=st.integers(0, 3000))
def test_codex_facts_kept_per_message_are_the_rules_read_afresh(seed, n, budget):
    from compactscope.core.layers import codex as CX
    from compactscope.core.layers import codex_rules as CR
    from compactscope.core.pipeline.size import SizeMeter
    rng = random.Random(seed)
    msgs = _codex_history(rng, n)
    kinds = CX._Kinds(SizeMeter())
    for _ in range(2):                                  # computed, then read back
        assert [kinds.prompt(m) for m in msgs] == [CR.is_user_prompt(m) for m in msgs]
        assert [kinds.initial(m) for m in msgs] == [CR.is_initial_context(m) for m in msgs]
        assert CR.select_user_messages(msgs, budget, kinds.prompt, kinds.text_tokens) == \
            CR.select_user_messages(msgs, budget)
        assert CR.initial_context(msgs, kinds.initial) == CR.initial_context(msgs)
    CX._forget_facts()


@settings(max_examples=100, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(0, 12))
def test_the_codex_summary_key_from_digests_tells_requests_apart_as_their_prompts_do(seed, n):
    from compactscope.core.layers import codex as CX
    from compactscope.core.summarizers import CachedSummarizer, LazyPrompt, SummaryRequest
    rng = random.Random(seed)
    a = _codex_history(rng, n)
    b = [dict(m) for m in a]                                        # equal copies: the same prompt
    c = _codex_history(rng, n)

    def key(h):
        lazy = LazyPrompt(lambda: CX._request_pieces(h), lambda: CX._request_key_pieces(h))
        return CachedSummarizer.key("offline", SummaryRequest(lazy))   # type: ignore[arg-type]

    def text(h):
        return "".join(CX._request_pieces(h))
    assert key(a) == key(b)
    assert (key(a) == key(c)) == (text(a) == text(c))


def test_forget_empties_the_codex_facts():
    from compactscope.core.layers import codex as CX
    from compactscope.core.runtime.forget import forget
    CX._Kinds.prompt({"role": "user", "content": "x"})
    assert CX._FACTS
    forget()
    assert not CX._FACTS


# ------------------------------------------------------------------ Inspect's count carried over a list
@settings(max_examples=100, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), steps=st.integers(1, 8))
def test_inspect_counts_carried_over_a_list_equal_the_counts_afresh(seed, steps):
    from compactscope.core.layers.inspect_count import JoinedCounter
    rng = random.Random(seed)
    carried = JoinedCounter(IR.pieces, len)
    tokens = IR.InspectTokens()
    lst: list = []
    calls: list = []
    for k in range(steps):
        lst.extend(_inspect_message(rng, k * 10 + j, calls) for j in range(rng.randint(0, 4)))
        if lst and rng.random() < 0.5:
            i = rng.randrange(len(lst))
            lst[i] = dict(lst[i]) if rng.random() < 0.5 else {"role": "user", "content": f"new {k}"}
        assert carried.count(lst) == JoinedCounter(IR.pieces, len).count(list(lst))
        assert tokens.count(lst) == IR.count_messages(list(lst))
        cut = rng.randint(0, len(lst))              # a shared prefix, of the same messages or of equal copies
        other = [m if rng.random() < 0.5 else dict(m) for m in lst[:cut]] + [_inspect_message(rng, 1000 + k, calls)]
        assert carried.count(other) == JoinedCounter(IR.pieces, len).count(list(other))
