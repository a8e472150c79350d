"""Codex's carried scan of a history (``core.layers.codex_scan``) and its carried item total: what a list's scan
says, carried from the lists asked before (extended, cut back, sharing only a prefix, unrelated), is what a scan
of that list from its start says, and the picks it makes are ``select_user_messages``'s."""
from __future__ import annotations

import random
from types import SimpleNamespace

import pytest

from compactscope.core.layers import codex as C
from compactscope.core.layers import codex_rules as R
from compactscope.core.layers.codex_scan import CodexScan, forget
from compactscope.core.pipeline.size import SizeMeter


def _message(rng: random.Random, k: int) -> dict:
    kind = rng.choice(("prompt", "prompt", "empty_prompt", "long_prompt", "env", "developer", "assistant", "tool",
                       "summary", "env_again"))
    if kind == "prompt":
        return {"role": "user", "content": f"please do step {k} " * rng.randint(1, 30)}
    if kind == "empty_prompt":
        return {"role": "user", "content": ""}
    if kind == "long_prompt":
        return {"role": "user", "content": [{"type": "text", "text": "x" * rng.randint(100, 3000)}]}
    if kind == "env":
        return {"role": "user", "content": f"<environment_context>cwd {rng.randint(0, 3)}</environment_context>"}
    if kind == "env_again":
        return {"role": "user", "content": "<environment_context>cwd 0</environment_context>"}
    if kind == "developer":
        return {"role": "developer", "content": f"rules {rng.randint(0, 2)}"}
    if kind == "summary":
        return {"role": "user", "content": R.summary_text(f"summary {k}")}
    if kind == "tool":
        return {"role": "tool", "tool_call_id": f"c{k}", "content": "out " * rng.randint(0, 200)}
    return {"role": "assistant", "content": f"answer {k}",
            "tool_calls": [{"id": f"c{k}", "type": "function", "function": {"name": "sh", "arguments": "{}"}}]}


def _lists(rng: random.Random, steps: int) -> list[list]:
    """A sequence of lists as a replay asks them: grown in place, a new list sharing a prefix (a compaction's new
    history keeps the first messages), cut back, or a list that is not an extension of anything asked."""
    out: list[list] = []
    cur: list = []
    for k in range(steps):
        move = rng.random()
        if move < 0.45 or not cur:
            cur.extend(_message(rng, k) for _ in range(rng.randint(1, 4)))       # grown in place
        elif move < 0.75:
            keep = rng.randint(1, len(cur))
            cur = cur[:keep] + [_message(rng, k) for _ in range(rng.randint(0, 3))]
        elif move < 0.85:
            cur = cur[:rng.randint(1, len(cur))]                                # cut back
        else:
            cur = [_message(rng, k) for _ in range(rng.randint(1, 12))]         # unrelated
        out.append(cur)
        if rng.random() < 0.3 and len(cur) > 1:
            out.append(cur[:rng.randint(1, len(cur))])                          # a prefix of it asked too
    return out


def _ctx(meta: dict) -> SimpleNamespace:
    return SimpleNamespace(meter=SizeMeter(), meta=meta)


def _scratch(messages: list, meter: SizeMeter) -> CodexScan:
    st = CodexScan()
    for m in messages:
        st.add(m, C._kind_of(m), C.INITIAL, C.PROMPT, lambda x: (R.text_of(x), R.approx_tokens(R.text_of(x))),
               R.message_tokens(m), C._key)
    return st


def _check_against_rules(messages: list, st: CodexScan) -> None:
    assert st.covered == len(messages)
    assert st.prompts == [i for i, m in enumerate(messages) if R.is_user_prompt(m)]
    assert st.ctx == R.initial_context(messages)
    assert list(st.notinit) == [0 if R.is_initial_context(m) else 1 for m in messages]
    sums = [0]
    for m in messages:
        sums.append(sums[-1] + R.message_tokens(m))
    assert st.tok == sums
    # (budgets that a run of the newest prompts fills exactly: the walk stops there, before older empty prompts)
    exact = {st.psum[-1] - v for v in st.psum}
    for budget in sorted({0, 1, 7, 40, 200, 1000, 20_000} | exact):
        want = R.select_user_messages(messages, budget)
        first, whole, cut = st.select(budget)
        got = [] if cut is None else [(st.prompts[cut], R.truncate_middle(R.text_of(messages[st.prompts[cut]]),
                                                                         st.left(budget, first)), True)]
        got += [(i, R.text_of(messages[i]), False) for i in st.prompts[first:first + whole]]
        assert got == want, budget


@pytest.mark.parametrize("seed", range(6))
def test_carried_scan_is_the_scan_from_scratch(seed):
    rng = random.Random(seed)
    forget()
    ctx = _ctx({})
    for messages in _lists(rng, 60):
        upto = len(messages) if rng.random() < 0.7 else rng.randint(0, len(messages))
        st = C.scan_of(messages, upto, ctx)
        part = messages[:upto]
        scratch = _scratch(part, ctx.meter)
        for name in ("kinds", "notinit", "prompts", "psum", "ctx", "keys", "tok"):
            assert getattr(st, name) == getattr(scratch, name), name
        _check_against_rules(part, st)
        if upto:
            start = rng.randint(0, upto)
            assert st.digests(messages, start, upto, C._PIECE_DIGESTS.joined) == \
                b"".join(C._piece_digest(m) for m in part[start:])


def test_a_list_that_does_not_extend_the_last_one_is_scanned_from_its_own_messages():
    forget()
    ctx = _ctx({})
    a = [{"role": "user", "content": "first"}, {"role": "user", "content": "<environment_context>a"},
         {"role": "assistant", "content": "ok"}]
    C.scan_of(a, len(a), ctx)
    b = [a[0], {"role": "developer", "content": "d"}, {"role": "user", "content": "<environment_context>a"},
         {"role": "user", "content": "second"}]                 # shares a[0] only; an equal context text again
    st = C.scan_of(b, len(b), ctx)
    assert st.prompts == [0, 3] and st.ctx == [1, 2] and st.psum == [0, 2, 4]
    a.append({"role": "user", "content": "third"})             # the first list grown in place
    st = C.scan_of(a, len(a), ctx)
    assert st.prompts == [0, 3] and st.ctx == [1]
    _check_against_rules(a, st)


@pytest.mark.parametrize("seed", range(4))
def test_carried_item_total_is_the_sum(seed):
    rng = random.Random(100 + seed)
    C._SUMS.clear()
    meter = SizeMeter()
    for messages in _lists(rng, 80):
        assert C.item_total(messages, meter) == sum(map(R.message_tokens, messages))


def test_a_budget_filled_exactly_stops_before_an_older_empty_prompt():
    forget()
    msgs = [{"role": "user", "content": ""}, {"role": "user", "content": "x" * 40}]       # 0 and 10 tokens
    st = C.scan_of(msgs, 2, _ctx({}))
    assert R.select_user_messages(msgs, 10) == [(1, "x" * 40, False)]
    assert st.select(10) == (1, 1, None)
    assert st.select(11) == (0, 2, None)
