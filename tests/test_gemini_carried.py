"""Gemini CLI: the figures the compression reads from per-message shares and carried scans are the figures made
from scratch: the split point from ``split_shape`` is ``split_point`` over ``to_contents``, and the estimate of
a history's prefix from the scan kept per list (asked on growing lists, on lists that are not an extension of
the last) is ``estimate`` of that prefix."""
from __future__ import annotations

import random

import pytest

from compactscope.core.layers import gemini_cli as G
from compactscope.core.layers.gemini_view import estimate, history_scan, split_shape, to_contents


def _message(rng: random.Random, k: int, ids: list) -> object:
    kind = rng.choice(("user", "user_blocks", "assistant", "assistant_calls", "tool", "result_block", "system",
                       "both", "odd"))
    if kind == "user":
        return {"role": "user", "content": rng.choice(("do it ", "fais-le é ", "做 ", "")) * rng.randint(0, 20)}
    if kind == "user_blocks":
        return {"role": "user", "content": [{"type": "text", "text": "t" * rng.randint(0, 40)},
                                            {"type": "image", "source": {"data": "abc"}}]}
    if kind == "assistant":
        return {"role": "assistant", "content": [{"type": "text", "text": f"answer {k} \u00fc"}]}
    if kind == "assistant_calls":
        cid = f"call_{k}"
        ids.append(cid)
        return {"role": "assistant", "content": "",
                "tool_calls": [{"id": cid, "function": {"name": rng.choice(("read", "run_shell_command", "q\"x")),
                                                        "arguments": '{"a": 1}'}}]}
    if kind == "tool":
        cid = rng.choice(ids) if ids and rng.random() < 0.8 else "unknown"
        return {"role": "tool", "tool_call_id": cid, "content": "out\u00e9 " * rng.randint(0, 50)}
    if kind == "result_block":
        cid = rng.choice(ids) if ids else "none"
        return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": cid, "content": "r" * k}]}
    if kind == "both":       # sets a name and reads one in the same message
        cid = f"use_{k}"
        read = rng.choice(ids) if ids else cid
        ids.append(cid)
        return {"role": "user", "content": [{"type": "tool_use", "id": cid, "name": "edit", "input": {}},
                                            {"type": "tool_result", "tool_use_id": read, "content": "x"}]}
    if kind == "system":
        return {"role": "system", "content": "sys"}
    return "not a message"


def _history(rng: random.Random, n: int) -> list:
    ids: list = []
    return [_message(rng, k, ids) for k in range(n)]


@pytest.mark.parametrize("seed", range(8))
def test_split_shape_is_split_point_over_the_contents(seed):
    rng = random.Random(seed)
    for _ in range(40):
        msgs = _history(rng, rng.randint(0, 30))
        h = rng.randint(0, len(msgs))
        contents, owners = to_contents(msgs[:h])
        sizes, texts, plain_end, firsts = split_shape(msgs, h)
        assert sizes == [G._js_len(c) for c in contents]
        assert firsts == [o[0] for o in owners]
        for fraction in (0.0, 0.3, 0.7, 1.0):
            assert G.split_from(sizes, texts, plain_end, fraction) == G.split_point(contents, fraction)


@pytest.mark.parametrize("seed", range(4))
def test_estimate_of_a_prefix_from_the_carried_scan(seed):
    rng = random.Random(50 + seed)
    owner: dict = {}
    cur: list = []
    for _ in range(60):
        move = rng.random()
        if move < 0.5 or not cur:
            cur.extend(_history(rng, rng.randint(1, 4)))                      # grown in place
        elif move < 0.8:
            cur = cur[:rng.randint(1, len(cur))] + _history(rng, rng.randint(0, 3))   # a shared prefix
        else:
            cur = _history(rng, rng.randint(1, 10))                             # not an extension
        h = rng.randint(0, len(cur))
        st = history_scan(cur, h, owner)
        assert st.estimate() == estimate(cur[:h])
        for at in {0, h // 2, h}:
            assert int(st.totals[at] // 1) == estimate(cur[:at])


def _encoder_len(value) -> int:
    import json
    s = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    return len(s.encode("utf-16-le", "surrogatepass")) // 2


def _value(rng: random.Random, depth: int = 0):
    pick = rng.randrange(12 if depth < 3 else 7)
    if pick == 0:
        return rng.choice(("", "a\"b\\c\n\t\x01", "é😀中", "\ud800 lone", "x" * rng.randint(200, 600)))
    if pick == 1:
        return rng.randint(-10 ** 20, 10 ** 20)
    if pick == 2:
        return rng.choice((0.1, -2.5e-300, float("nan"), float("inf"), 1e22))
    if pick == 3:
        return rng.choice((True, False, None))
    if pick == 4:
        return object() if rng.random() < 0.5 else b"bytes"          # written by default=str
    if pick == 5:
        return {1: "int key"} if rng.random() < 0.5 else {None: 0, True: 1}   # keys the encoder converts
    if pick == 6:
        class S(str):
            pass
        return S("a subclass")
    if pick in (7, 8, 9):
        return {rng.choice(("k", "ключ", "\"q\"", "x" * 300)) + str(i): _value(rng, depth + 1)
                for i in range(rng.randint(0, 4))}
    return [_value(rng, depth + 1) for _ in range(rng.randint(0, 4))] if pick == 10 else \
        tuple(_value(rng, depth + 1) for _ in range(rng.randint(0, 3)))


@pytest.mark.parametrize("seed", range(6))
def test_js_len_is_the_encoders_length(seed):
    from compactscope.core.layers.gemini_json import js_len
    rng = random.Random(seed)
    for _ in range(300):
        v = _value(rng)
        if isinstance(v, object) and type(v) is object:
            v = [v]
        assert js_len(v) == _encoder_len(v), repr(v)[:200]
    long_text = "y" * 5000
    assert js_len({"output": long_text}) == js_len({"output": long_text}) == 5000 + 13   # kept: the same again
