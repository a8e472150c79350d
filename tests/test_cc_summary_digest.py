"""Claude Code's summary cache keys each message by a digest of its JSON (``claude_code._json_digest``): two
messages share a digest only when the prompt's JSON text of them (``json.dumps``) is the same, whichever of the
two serialisers made it (orjson's compact form, or ``json.dumps`` for what orjson writes otherwise or not at all:
NaN and infinities, lone surrogates, integers past 64 bits, keys that are not strings), and an equal copy of a
message always has its digest (a cached summary is found again). (A value whose JSON equals another's only
through ``json.dumps``'s conversions, ``{1: 2}`` and ``{"1": 2}``, may be a cache miss: never a wrong hit.)"""
from __future__ import annotations

import copy
import json

from hypothesis import given, settings, strategies as st

from compactscope.core.layers import claude_code as cc

scalars = st.one_of(st.none(), st.booleans(), st.integers(min_value=-(1 << 80), max_value=1 << 80),
                    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=8),
                    st.sampled_from(["\ud800", "null", "é", "NaN", "x\u2028y"]))
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3),
    st.dictionaries(st.one_of(st.text(max_size=4), st.integers(0, 3)), inner, max_size=3)), max_leaves=8)


def _prompt_text(m) -> str:
    return json.dumps(m, default=str, ensure_ascii=False)


@given(st.lists(values, min_size=2, max_size=6))
@settings(max_examples=300, deadline=None)
def test_a_digest_is_shared_only_by_the_same_prompt_json_and_always_by_a_copy(ms):
    for a in ms:
        assert cc._json_digest(copy.deepcopy(a)) == cc._json_digest(a), a
        for b in ms:
            if cc._json_digest(a) == cc._json_digest(b):
                assert _prompt_text(a) == _prompt_text(b), (a, b)


def test_the_usual_messages_and_their_edge_cases_are_told_apart():
    ms = [{"role": "user", "content": "hé"}, {"role": "user", "content": None}, {"role": "user", "content": float("nan")},
          {"role": "user", "content": float("inf")}, {"role": "user", "content": "\ud800"}, {1: 2},
          {"a": 1 << 70}, {"role": "assistant", "content": [{"type": "text", "text": "x"}]},
          {"role": "assistant", "content": [{"type": "text", "text": "x "}]}]
    digests = [cc._json_digest(m) for m in ms]
    assert len(set(digests)) == len(ms)
    assert all(len(d) == 32 for d in digests)
    assert cc._json_digest({"role": "user", "content": "hé"}) == digests[0]        # a copy: the same digest
