"""core.present, core.text and core.cache: what views draw, from one walk over the dialects."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from compactscope.core.analysis import present
from compactscope.core.pipeline.memo import IdentityCache
from compactscope.core.model.messages import content_text, message_text
from compactscope.core.model.text import readable_text, text_parts, visible_text

_text = st.text(alphabet=st.sampled_from("ab \n\r\u2028x"), max_size=40)
_block = st.one_of(
    st.fixed_dictionaries({"type": st.just("text"), "text": _text}),
    st.fixed_dictionaries({"type": st.just("tool_use"), "id": st.sampled_from(["t1", 7]), "name": st.just("f"),
                           "input": st.dictionaries(st.just("a"), _text, max_size=1)}),
    st.fixed_dictionaries({"type": st.just("tool_result"), "tool_use_id": st.just("t1"),
                           "content": st.one_of(_text, st.lists(st.fixed_dictionaries(
                               {"type": st.just("text"), "text": _text}), max_size=2))},
                          optional={"is_error": st.booleans()}),
    st.fixed_dictionaries({"type": st.sampled_from(["thinking", "redacted_thinking", "image", "document",
                                                    "server_tool_use", "@string", "tool_call"])}),
    _text, st.integers(), st.fixed_dictionaries({"x": st.just(1)}))
_message = st.one_of(
    st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant", "tool", "system"]),
                           "content": st.one_of(st.none(), _text, st.lists(_block, max_size=4), st.integers())},
                          optional={"tool_calls": st.lists(st.one_of(st.fixed_dictionaries(
                              {"id": st.just("c1"), "function": st.fixed_dictionaries(
                                  {"name": st.just("g"), "arguments": _text})}), st.integers()), max_size=2),
                                    "tool_call_id": st.sampled_from(["c1", None])}),
    _text, st.integers())


@settings(max_examples=300, deadline=None)
@given(m=_message)
def test_chips_sizes_and_shapes_agree(m):
    chips = present.message_chips(m)
    assert [c.block for c in chips] == [p.index for p in present.walk(m)]
    sizes = present.block_sizes(m)
    assert set(sizes) == set(present.BLOCK_TYPES) and sum(sizes.values()) == sum(c.size for c in chips)
    for t in present.BLOCK_TYPES:
        assert sizes[t] == sum(c.size for c in chips if c.type == t)
    shape = present.collapsed_shape(m)
    if isinstance(m, dict):
        assert shape == [len(c.lines) if c.label == "text" else 0 for c in chips]
    else:
        assert shape is None


def test_one_walk_knows_both_dialects():
    m = {"role": "assistant", "content": [{"type": "text", "text": "hi"},
                                          {"type": "tool_use", "id": "t1", "name": "bash", "input": {"c": "ls"}}],
         "tool_calls": [{"id": "c9", "function": {"name": "grep", "arguments": "{}"}}]}
    chips = present.message_chips(m)
    assert [(c.type, c.label, c.tool_id) for c in chips] == [("text", "text", None), ("tool_use", "tool_use", "t1"),
                                                             ("tool_use", "tool_call", "c9")]
    tool = present.message_chips({"role": "tool", "tool_call_id": "c9", "content": "a\nb"})[0]
    assert (tool.type, tool.tool_id, tool.summary) == ("tool_result", "c9", "3 chars \u00b7 a \u23ce b")
    # a block whose type looks like one of the walk's own kinds is still just a block
    odd = present.message_chips({"role": "user", "content": [{"type": "@string"}]})[0]
    assert odd.type == "other" and odd.label == "string"


def test_three_readings_of_content():
    content = [{"type": "text", "text": "hello"}, {"type": "tool_use", "name": "f", "input": {"a": 1}},
               {"type": "tool_result", "content": "out"}, {"type": "image", "text": "alt"}, {"type": "text", "text": ""},
               {"type": "input_text", "input_text": "typed"}]
    assert readable_text(content) == 'hello\nf({"a": 1})\nout\n'
    assert text_parts(content) == "hello\nalt"                         # hermes-agent: parts with a "text" string
    assert visible_text(content) == "hello\nout\ntyped"                # MoA: text-like keys, media skipped
    assert content_text is readable_text                               # the messages names are the readable one
    assert message_text({"role": "assistant", "content": "x", "tool_calls": [
        {"function": {"name": "g", "arguments": "{}"}}]}) == "x\ng({})"


def test_identity_cache_is_bounded_by_the_longest_list_shown():
    calls = []
    c = IdentityCache(lambda o: calls.append(o) or len(o), factor=2, floor=3)
    a, b = [1], [1]
    assert c.get(a) == 1 and c.get(a) == 1 and calls == [a]
    assert c.peek(b) is None and c.get(b) == 1 and len(calls) == 2          # equal but another object
    c.forget(a)
    assert c.peek(a) is None
    c.shown(2)
    for k in range(6):
        c.get([k])
    assert len(c) == 7
    c.shown(2)                                          # 7 > 2 x max(3, 2): forget everything
    assert len(c) == 0
    c.shown(10)
    for k in range(15):
        c.get([k])
    c.shown(1)                                          # a short list does not trim what the long one keeps
    assert len(c) == 15
