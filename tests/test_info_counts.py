"""The counts of ``info`` (``core/analysis/info.py``) take shortcuts for the commonest message (a role and a text);
they must give what the plain count over every message gives, whatever the messages hold."""
from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from compactscope.core.analysis.info import _role_counts, tool_pair_counts

IDS = st.sampled_from(["a", "b", "c"])
BLOCKS = st.one_of(
    st.fixed_dictionaries({"type": st.just("tool_use"), "id": IDS, "name": st.just("t"), "input": st.just({})}),
    st.fixed_dictionaries({"type": st.just("tool_result"), "tool_use_id": IDS, "content": st.just("r")}),
    st.fixed_dictionaries({"type": st.just("text"), "text": st.just("x")}),
)
CALLS = st.lists(st.fixed_dictionaries({"id": IDS, "type": st.just("function")}), max_size=2)
MESSAGE = st.one_of(
    st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant", "tool"]),
                           "content": st.one_of(st.just("text"), st.lists(BLOCKS, max_size=3))}),
    st.fixed_dictionaries({"content": st.just("text"), "tool_calls": CALLS}),          # two keys, no role
    st.fixed_dictionaries({"role": st.just("tool"), "content": st.just("r"), "tool_call_id": IDS}),
    st.fixed_dictionaries({"role": st.just("assistant"), "content": st.just(""), "tool_calls": CALLS}),
    st.sampled_from([None, "text", 3]),
)


def _pairs_plain(messages: list) -> tuple[int, int]:
    """The count every message read in full: one pair per call, each result answering the latest call of its id,
    a result without a call a pair of its own (once per id)."""
    open_calls: dict = {}
    calls = answered = 0
    orphans: set = set()
    events: list = []                       # ("use" | "result", id), in the order the message holds them
    for m in messages:
        if not isinstance(m, dict):
            continue
        if m.get("role") == "tool":
            if isinstance(m.get("tool_call_id"), str):
                events.append(("result", m["tool_call_id"]))
            continue
        content = m.get("content")
        for b in content if isinstance(content, list) else []:
            if b.get("type") == "tool_use":
                events.append(("use", b["id"]))
            elif b.get("type") == "tool_result":
                events.append(("result", b["tool_use_id"]))
        events += [("use", c["id"]) for c in m.get("tool_calls") or []]
    for kind, tid in events:
        if kind == "use":
            calls += 1
            open_calls[tid] = False
        elif tid in open_calls:
            answered += not open_calls[tid]
            open_calls[tid] = True
        else:
            orphans.add(tid)
    return calls + len(orphans), answered


@settings(max_examples=400, deadline=None)
@given(st.lists(MESSAGE, max_size=12))
def test_the_counts_are_those_of_every_message_read_in_full(messages):
    assert tool_pair_counts(messages) == _pairs_plain(messages)
    want = dict(Counter(m.get("role") if isinstance(m, dict) else "?" for m in messages))
    assert _role_counts(messages) == want


def test_a_text_message_without_a_role_still_counts_its_tool_calls():
    msgs = [{"content": "x", "tool_calls": [{"id": "a"}]}, {"role": "tool", "tool_call_id": "a", "content": "r"}]
    assert tool_pair_counts(msgs) == (1, 1)
    assert _role_counts(msgs) == {None: 1, "tool": 1}
