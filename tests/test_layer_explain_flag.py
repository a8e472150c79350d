"""``LayerContext.explain``: a replay that keeps no trace tells its layers no one reads the explanation of a step that
changes nothing; a kept trace, a plain run and the engine after the replay explain every step."""
from __future__ import annotations

from compactscope.core import strategies
from compactscope.core.layers.base import Layer
from compactscope.core.pipeline.engine import Engine
from compactscope.core.pipeline.trace import LayerOutput
from compactscope.core.replay import replay
from compactscope.core.strategies.base import Strategy


def _spy_strategy(seen: list) -> Strategy:
    s08 = strategies.get("s08")

    def spy(messages, ctx):
        seen.append(ctx.explain)
        return LayerOutput.unchanged(messages, "looked" if ctx.explain else "")

    return Strategy("spy", "spy", "spy", (Layer("spy", spy, "records ctx.explain"),) + tuple(s08.layers), s08.params)


def _messages(n: int) -> list:
    out = []
    for i in range(n):
        out.append({"role": "user", "content": f"question {i}"})
        out.append({"role": "assistant", "content": f"answer {i}"})
    return out


def test_a_replay_without_traces_turns_explanations_off_and_back_on():
    seen: list = []
    st = _spy_strategy(seen)
    eng = Engine(st, {})
    replay(_messages(4), engine=eng)
    assert seen and not any(seen)                    # every call of the walk: explain off
    seen.clear()
    trace = eng.run(_messages(2))
    assert seen == [True] and trace.steps[0].note == "looked"


def test_a_replay_that_keeps_its_traces_explains_every_step():
    seen: list = []
    st = _spy_strategy(seen)
    r = replay(_messages(4), engine=Engine(st, {}), keep_traces=True)
    assert seen and all(seen)
    assert all(t.steps[0].note == "looked" for t in r.traces)
