"""Inspect's token count per message (core.layers.inspect_count) equals the count of the whole joined text, and a
replay's kept inputs (KeptInputs) are each call's own list."""
from __future__ import annotations

import random

import pytest

from compactscope.core.layers import inspect_rules as R
from compactscope.core.layers.inspect_count import JoinedCounter, safe_start
from compactscope.core.replay.records import KeptInputs

PIECES = ["a", "B", "1", "22", " ", "  ", "\n", "\r\n", "/", ".", ",", "é", "日本", "\t", "'s", "x/y", "!", "-",
          "\u00a0", "\u2028", "\u0301", "🙂", "", "ab cd", "(", "\\"]


def _text(rng: random.Random) -> str:
    return "".join(rng.choice(PIECES) for _ in range(rng.randint(0, 8)))


def _messages(rng: random.Random) -> list:
    out: list = []
    for _ in range(rng.randint(1, 7)):
        if rng.random() < 0.4:
            out.append({"role": rng.choice(["user", "assistant", "tool"]), "content": _text(rng)})
        else:
            out.append({"role": "user", "content": [{"type": "text", "text": _text(rng)}
                                                    for _ in range(rng.randint(0, 3))]})
    return out


def _joined(messages: list) -> list:
    texts: list = []
    media: list = []
    for m in messages:
        R.pieces(m, texts, media)
    return texts


def test_a_safe_cut_needs_a_printable_non_space_start():
    assert safe_start("abc") and safe_start("1") and safe_start(".x")
    assert not safe_start("") and not safe_start(" a") and not safe_start("\nx") and not safe_start("/x")
    assert not safe_start("\u00a0x") and not safe_start("\u2028")


def test_the_count_per_message_is_the_count_of_the_joined_text():
    enc = R._Encoder.get()
    if enc is None:
        pytest.skip("no o200k_base encoder")
    rng = random.Random(27)
    counter = JoinedCounter(R.pieces, lambda s: len(enc.encode_ordinary(s)))
    for _ in range(1500):
        msgs = _messages(rng)
        texts = _joined(msgs)
        assert counter.count(msgs)[0] == (len(enc.encode_ordinary("\n".join(texts))) if texts else 0)
        want = max(1, (R.text_tokens("\n".join(texts)) if texts else 0))
        assert R.count_messages(msgs) == want


def test_a_list_extended_or_changed_in_place_is_counted_again():
    enc = R._Encoder.get()
    if enc is None:
        pytest.skip("no o200k_base encoder")
    rng = random.Random(5)
    counter = JoinedCounter(R.pieces, lambda s: len(enc.encode_ordinary(s)))
    for _ in range(100):
        lst: list = []
        for _ in range(5):
            lst.extend(_messages(rng))
            if lst and rng.random() < 0.3:
                lst[rng.randrange(len(lst))] = {"role": "user", "content": _text(rng)}     # replaced in place
            texts = _joined(lst)
            assert counter.count(lst)[0] == (len(enc.encode_ordinary("\n".join(texts))) if texts else 0)


def test_kept_inputs_are_each_calls_own_list():
    ctx: list = [1, 2]
    kept = KeptInputs()
    kept.append(ctx)
    ctx.extend([3, 4])
    kept.append(ctx)
    assert len(kept) == 2 and kept[0] == [1, 2] and kept[1] == [1, 2, 3, 4] and kept[-1] == [1, 2, 3, 4]
    assert kept[:1] == [[1, 2]] and list(kept) == [[1, 2], [1, 2, 3, 4]] and kept == [[1, 2], [1, 2, 3, 4]]
    assert kept[0] is not ctx and KeptInputs() == []
