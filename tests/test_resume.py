"""A parameter change re-runs from the first layer that read a changed parameter (Engine.run(reuse=...)):
the steps before it are the previous run's, the result equals a run from scratch."""
from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compactscope.core.layers.base import ALL, ReadParams
from compactscope.core.pipeline.engine import Engine
from compactscope.core.summarizers import FixedSummarizer
from compactscope.core.files.workspace import Workspace
from tests.test_properties import conversations

CHANGES = {
    "s08": st.fixed_dictionaries({}, optional={
        "max_messages": st.integers(4, 30), "keep_recent": st.integers(0, 4),
        "context_limit": st.sampled_from([500, 50_000, 10**9]), "max_bytes": st.sampled_from([1_000, 200_000]),
        "persist_threshold": st.sampled_from([100, 30_000]), "variant": st.sampled_from(["guarded", "readme"])}),
    "claude_code": st.fixed_dictionaries({}, optional={
        "snip_max_messages": st.sampled_from([0, 6, 20]), "budget_chars": st.sampled_from([1_000, 200_000]),
        "window": st.sampled_from([40_000, 200_000]), "buffer": st.sampled_from([13_000, 30_000])}),
    "hermes": st.fixed_dictionaries({}, optional={
        "trigger": st.sampled_from(["threshold", "always"]), "protect_last_n": st.integers(1, 8),
        "summary_target_ratio": st.sampled_from([0.2, 0.4])}),
}


def _same(a, b) -> bool:
    return json.dumps(a, sort_keys=True, default=str) == json.dumps(b, sort_keys=True, default=str)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(conversations(), st.sampled_from(sorted(CHANGES)), st.data())
def test_a_resumed_run_equals_a_run_from_scratch(tmp_path_factory, msgs, name, data):
    first = data.draw(CHANGES[name])
    second = data.draw(CHANGES[name])
    ws = Workspace(tmp_path_factory.mktemp("ws"))
    summ = FixedSummarizer("S")
    prev = Engine(name, first, workspace=ws, summarizer=summ).run(msgs)
    resumed = Engine(name, {**first, **second}, workspace=ws, summarizer=summ).run(msgs, reuse=prev)
    fresh = Engine(name, {**first, **second}, workspace=ws, summarizer=summ).run(msgs)
    assert [s.layer for s in resumed.steps] == [s.layer for s in fresh.steps]
    for r, f in zip(resumed.steps, fresh.steps):
        assert _same(r.messages, f.messages), r.layer
        assert (r.size_after, r.tokens_after, r.origin, r.note) == (f.size_after, f.tokens_after, f.origin, f.note)
        assert [e.text for e in r.edits] == [e.text for e in f.edits]
    assert resumed.state_after == fresh.state_after
    # what was kept is the previous run's own steps, up to the first layer that read a changed parameter
    changed = {k for k in {**first, **second} if prev.params.get(k) != resumed.params.get(k)}
    for p, r in zip(prev.steps, resumed.steps):
        if p.reads is None or changed & p.reads or p.error:
            break
        assert r is p


def test_a_change_of_the_last_layers_parameter_reruns_only_that_layer(tmp_path):
    msgs = [{"role": "user", "content": "go"}]
    for k in range(40):
        msgs += [{"role": "assistant", "content": [{"type": "tool_use", "id": f"t{k}", "name": "Read",
                                                    "input": {"file_path": f"a{k}.py"}}]},
                 {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{k}", "content": "x" * 900}]}]
    ran = []
    eng = Engine("s08", {"context_limit": 10**9}, workspace=Workspace(tmp_path), summarizer=FixedSummarizer("S"))
    prev = eng.run(msgs)
    eng2 = Engine("s08", {"context_limit": 100}, workspace=Workspace(tmp_path), summarizer=FixedSummarizer("S"))
    trace = eng2.run(msgs, reuse=prev, progress=lambda p: ran.append(p.layer.name))
    assert ran == ["compact_history"]
    assert trace.steps[:3] == prev.steps[:3] and all(a is b for a, b in zip(trace.steps[:3], prev.steps[:3]))
    assert trace.steps[3].changed and not prev.steps[3].changed
    assert prev.steps[3].reads >= {"context_limit"} and "context_limit" not in prev.steps[0].reads


def test_read_params_notes_what_is_read():
    p = ReadParams({"a": 1, "b": 2})
    assert p.get("a") == 1 and p["b"] == 2 and "c" not in p
    assert p.reads == {"a", "b", "c"}
    q = p.overlay({"a": 5})
    assert q.get("a") == 5 and q.get("z", 3) == 3 and "z" in p.reads
    assert ALL not in p.reads
    _ = {**q}                                   # a ** spread reads every key
    assert ALL in p.reads
