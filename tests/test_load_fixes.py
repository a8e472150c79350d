"""The checker's findings of what a load changed (``meta.extra["load_fixes"]``) come from the conversation's lists
in one pass, and say what the id -> meta map said: a message object that comes twice takes its last meta's notes."""
from __future__ import annotations

from hypothesis import given, settings, strategies as st

from compactscope.core.analysis import checker
from compactscope.core.model.conversation import Conversation, MessageMeta

NOTES = st.sampled_from([None, [], ["a number was NaN"], ["a key was not text", "a lone surrogate"]])


def _conversation(spec: list) -> Conversation:
    """Messages drawn from a small pool (so that one object may come more than once), each with a meta that holds
    load notes or not."""
    pool = [{"role": "user", "content": f"m{i}"} for i in range(4)]
    msgs, metas = [], []
    for which, notes in spec:
        msgs.append(pool[which])
        metas.append(MessageMeta(extra={} if notes is None else {"load_fixes": notes}))
    return Conversation(messages=msgs, meta=metas)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), NOTES), max_size=12), st.integers(0, 2))
def test_the_findings_are_the_maps(spec, short):
    conv = _conversation(spec)
    if short and conv.meta:
        del conv.meta[-short:]                    # (a message without meta has none)
    by_map = checker.load_fix_findings(conv.messages, checker.load_fixes_by_identity(conv.meta_by_identity()))
    assert checker._load_fixes(conv) == by_map


def test_a_fixed_message_is_found_at_each_place_it_comes():
    conv = _conversation([(0, ["a number was NaN"]), (1, None), (0, ["a number was NaN"])])
    assert [(f.message, "NaN" in f.text) for f in checker._load_fixes(conv)] == [(0, True), (2, True)]
    later = _conversation([(0, ["a number was NaN"]), (0, None)])      # its last meta says nothing
    assert checker._load_fixes(later) == []
