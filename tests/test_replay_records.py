"""The replay's per-call bookkeeping, checked against its plain definition on generated sessions.

``layer_records`` skips the explanation and the edit count of a step that changed nothing, the engine finds a
chars/N estimate from the size it just measured, and ``SizeMeter.figure_sum`` builds a figure's function only for
a message not measured yet: each must give what the straightforward computation gives.
"""
from __future__ import annotations

from hypothesis import HealthCheck, given, settings, strategies as st

from compactscope.core.files.workspace import Workspace
from compactscope.core.pipeline.engine import Engine
from compactscope.core.pipeline.facts import Facts
from compactscope.core.pipeline.size import CharsPerToken, SizeMeter
from compactscope.core.pipeline.trace import PERSIST, REPLACE
from compactscope.core.replay import replay
from compactscope.core.replay.records import LayerRecord
from compactscope.core.replay.walk import layer_records
from compactscope.core.summarizers import FixedSummarizer


@st.composite
def sessions(draw):
    """Anthropic sessions: text turns, one-character turns and batches of tool calls, some results huge."""
    msgs: list = [{"role": "user", "content": "go"}]
    k = 0
    for _ in range(draw(st.integers(1, 45))):
        kind = draw(st.integers(0, 5))
        if kind == 0:
            msgs += [{"role": "assistant", "content": "x"}, {"role": "user", "content": "y"}]
            continue
        if kind == 1:
            msgs += [{"role": "assistant", "content": [{"type": "text", "text": "ok " * draw(st.integers(1, 40))}]},
                     {"role": "user", "content": "next"}]
            continue
        ids = [f"t{k + i}" for i in range(draw(st.integers(1, 3)))]
        k += len(ids)
        msgs.append({"role": "assistant", "content": [{"type": "tool_use", "id": i, "name": "Read",
                                                       "input": {"file_path": f"/f{i}.py"}} for i in ids]})
        msgs.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": i,
             "content": "x" * draw(st.sampled_from([5, 200, 3000, 40_000, 250_000]))} for i in ids]})
    return msgs


def plain_layer_records(trace) -> tuple[list, dict]:
    """The definition: every step's record with its explanation when it changed or failed, every edit counted."""
    records, fired, events, errors = [], [], [], []
    cleared = summaries = 0
    for s in trace.steps:
        changed = s.changed
        made = bool(s.summary) and not s.error
        records.append(LayerRecord(s.layer, changed, s.size_before, s.size_after, s.tokens_before, s.tokens_after,
                                   s.explain() if (changed or s.error) else "", s.triggered, s.error, made, s.role,
                                   s.internal, s.plugin_failed))
        if changed:
            fired.append(s.layer)
            events.append(f"{s.layer}: {s.explain()}")
        if s.error:
            errors.append(f"{s.layer}: {s.error}")
            if not changed:
                events.append(f"{s.layer}: failed: {s.error}")
        summaries += made
        cleared += sum(1 for e in s.edits if e.kind in (REPLACE, PERSIST) and e.tool_id is not None)
    return records, {"fired": fired, "events": events, "errors": errors, "summaries": summaries,
                     "cleared": cleared}


def _engines(tmp_path, max_messages: int):
    return (Engine("s08", {"max_messages": max_messages, "context_limit": 30_000}, workspace=Workspace(tmp_path),
                   summarizer=FixedSummarizer("S")),
            Engine("claude_code", {"window": 60_000}, workspace=Workspace(tmp_path),
                   summarizer=FixedSummarizer("<summary>S</summary>")),
            Engine("hermes", workspace=Workspace(tmp_path), summarizer=FixedSummarizer("S")))


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(msgs=sessions(), max_messages=st.integers(4, 60))
def test_records_are_their_definition_call_after_call(tmp_path, msgs, max_messages):
    for eng in _engines(tmp_path, max_messages):
        kept = replay(msgs, engine=eng, keep_traces=True)
        lean = replay(msgs, engine=eng)            # the running context extended in place, no trace kept
        assert [c.to_json() for c in lean.calls] == [c.to_json() for c in kept.calls]
        tok = eng.tokens
        for c, tr in zip(kept.calls, kept.traces):
            records, _, n = layer_records(tr, len(tr.input))
            want, n_want = plain_layer_records(tr)
            assert records == want and n == n_want, (eng.strategy.name, c.index)
            assert c.layers == want
            if isinstance(tok, CharsPerToken):     # the engine's chars/N: the estimator's own figure
                for s in tr.steps:
                    assert s.tokens_after == tok.tokens(s.messages, eng.meter)
                    assert s.tokens_before == tok.tokens(s.input, eng.meter)


def _half(m, meter) -> int:
    return len(repr(m)) // 2


@given(n=st.integers(0, 40), known=st.lists(st.integers(0, 39), max_size=20))
def test_figure_sum_of_a_figure_partly_known_is_the_sum_of_the_figure(n, known):
    meter = SizeMeter(facts=Facts())
    msgs = [{"role": "user", "content": "x" * (i * 7)} for i in range(n)]
    for i in known:                    # some figures measured before, the others not yet
        if i < n:
            meter.figure(msgs[i], "test.half", _half)
    assert meter.figure_sum(msgs, "test.half", _half) == sum(len(repr(m)) // 2 for m in msgs)
    assert meter.figure_sum(msgs, "test.half") == sum(len(repr(m)) // 2 for m in msgs)
    assert meter.figure_sum(msgs) == sum(len(repr(m)) for m in msgs)
