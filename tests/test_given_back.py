"""Runs whose layers give back their input, or hand on the list they were given.

- Inspect's assemble with nothing to put back and nothing to merge hands on its input list itself (triggered: the
  compaction event happened), not an equal copy that every later step would compare message by message.
- ``layer_records`` of a run whose output is its input keeps every context position (no origin composed), even
  when a step in between dropped messages.
- The engine takes no delta of a step whose output the size meter knows already (an earlier step's input given
  back): the step's figures are the same.
- A replay where Inspect's edit pass cannot get under the threshold records what each call's trace says.
(The gate's partition carried over a list with a few copies: tests/test_inspect_edit_carry.py.)
"""
from __future__ import annotations

from compactscope.core.layers.base import Layer
from compactscope.core.model.conversation import Conversation
from compactscope.core.pipeline.engine import Engine
from compactscope.core.pipeline.trace import LayerOutput
from compactscope.core.replay.walk import layer_records
from compactscope.core.strategies.base import Strategy
from tests.test_inspect_strategies import conv, run, total


def test_assemble_with_nothing_to_put_back_hands_on_its_input_list():
    msgs = conv(8)
    tr = run("inspect_edit", msgs, threshold=float(total(msgs) // 2), keep_tool_uses=1)
    assert not tr.step("inspect_repeat").error
    step = tr.step("inspect_assemble")
    assert step.triggered is True and step.messages is step.input and not step.changed
    assert step.vars["prefix_restored"] == 0 and step.vars["merged"] == 0
    assert step.explain().startswith("no change: compaction event: tokens")


def _strategy(*fns) -> Strategy:
    layers = tuple(Layer(f"l{i}", fn, "test layer") for i, fn in enumerate(fns))
    return Strategy("given_back_test", "test", "layers of a test", layers, ())


def test_a_run_that_gives_back_its_input_keeps_every_position():
    msgs = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"m{i}"} for i in range(12)]
    first = {}

    def drop_half(ms, ctx):
        first["input"] = ms
        return LayerOutput(ms[6:], list(range(6, 12)), note="dropped six")

    def give_back(ms, ctx):
        return LayerOutput(first["input"], [None] * 6 + list(range(6)), note="restored")

    eng = Engine(_strategy(drop_half, give_back))
    tr = eng.run(msgs)
    assert tr.output is msgs
    records, cur, counts = layer_records(tr, len(msgs))
    assert cur is None and [r.changed for r in records] == [True, True]
    assert counts["fired"] == ["l0", "l1"]
    # the step that gave the input back has the input's figures (found without a delta)
    s0, s1 = tr.steps
    assert (s1.size_after, s1.tokens_after) == (s0.size_before, s0.tokens_before)
    assert s1.size_after == len(str(msgs))
    # a run that does not give its input back still composes: the dropped positions are gone
    tr2 = Engine(_strategy(drop_half)).run(msgs)
    _, cur2, _ = layer_records(tr2, len(msgs))
    assert cur2 == list(range(6, 12))


def test_a_compaction_insufficient_replay_matches_the_plain_records():
    """Inspect's edit pass that cannot get under the threshold gives the input back at every call: the replay's
    records are what the trace says, call by call."""
    from compactscope.core.replay import replay
    msgs = conv(40, size=400)
    c = Conversation(msgs, "openai")
    res = replay(c, engine=Engine("inspect_edit", {"threshold": 300.0, "keep_tool_uses": 1}), keep_traces=True)
    assert any("compaction insufficient" in (e or "") for call in res.calls for e in call.errors)
    for call, tr in zip(res.calls, res.traces):
        assert call.messages_after == len(tr.output)
        if tr.output is tr.input:                 # given back: every context message is still there
            assert call.dropped == [] and call.messages_before == call.messages_after
        assert [r.changed for r in call.layers] == [s.changed for s in tr.steps]
        assert [r.triggered for r in call.layers] == [s.triggered for s in tr.steps]
