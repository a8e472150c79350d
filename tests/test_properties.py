"""Property tests over random conversations: layers never mutate input, the guarded snip never
splits a pair that was whole, never duplicates or loses a kept message, and origin maps agree
with the edits."""
import copy

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compactscope.core.analysis.checker import check, pair_errors
from compactscope.core.layers.base import LayerContext
from compactscope.core.layers.s08 import LAYERS
from compactscope.core.model.messages import ToolPairIndex, to_anthropic, to_openai
from compactscope.core.pipeline.engine import Engine
from compactscope.core.pipeline.size import SizeMeter
from compactscope.core.summarizers import CachedSummarizer, FixedSummarizer
from compactscope.core.pipeline.trace import SNIP, SUMMARY
from compactscope.core.files.workspace import Workspace


@st.composite
def conversations(draw):
    """Valid-ish Anthropic conversations: user/assistant turns with tool batches of 1-3 calls,
    results of random sizes, sometimes list content, sometimes a dangling final call."""
    n_turns = draw(st.integers(0, 40))
    msgs = [{"role": "user", "content": draw(st.text(max_size=20)) or "task"}]
    k = 0
    for _ in range(n_turns):
        kind = draw(st.sampled_from(["text", "tools", "tools", "user"]))
        if msgs[-1]["role"] == "assistant":
            msgs.append({"role": "user", "content": draw(st.text(min_size=1, max_size=30))})
            continue
        if kind == "user":
            msgs.append({"role": "assistant", "content": [{"type": "text", "text": "ok"}]})
            continue
        if kind == "text":
            msgs.append({"role": "assistant", "content": [{"type": "text", "text": "x" * draw(st.integers(0, 300))}]})
            continue
        calls = []
        results = []
        for _ in range(draw(st.integers(1, 3))):
            k += 1
            tid = f"t{k}"
            calls.append({"type": "tool_use", "id": tid, "name": "bash", "input": {"c": k}})
            size = draw(st.sampled_from([0, 50, 121, 500, 40_000, 120_000]))
            content = draw(st.sampled_from(["str", "str", "list"]))
            body = "r" * size if content == "str" else [{"type": "text", "text": "r" * size}]
            results.append({"type": "tool_result", "tool_use_id": tid, "content": body})
        msgs.append({"role": "assistant", "content": calls})
        if draw(st.booleans()) or True:
            msgs.append({"role": "user", "content": results})
    return msgs


params_st = st.fixed_dictionaries({
    "max_messages": st.integers(4, 30),
    "keep_recent": st.integers(0, 4),
    "context_limit": st.sampled_from([500, 5_000, 50_000, 10**9]),
    "max_bytes": st.sampled_from([1_000, 200_000]),
    "persist_threshold": st.sampled_from([100, 30_000]),
})


def _ctx(tmp_path_factory, params):
    return LayerContext(params, Workspace(tmp_path_factory.mktemp("ws")), CachedSummarizer(FixedSummarizer("S")))


SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@SETTINGS
@given(conversations(), params_st)
def test_layers_never_mutate_and_origin_agrees(tmp_path_factory, msgs, params):
    ctx = _ctx(tmp_path_factory, params)
    for name in ("tool_result_budget", "snip_compact", "micro_compact", "compact_history", "reactive_compact"):
        frozen = copy.deepcopy(msgs)
        out = LAYERS[name](msgs, ctx)
        assert msgs == frozen, f"{name} mutated its input"
        assert len(out.origin) == len(out.messages)
        for i, o in enumerate(out.origin):
            if o is None:
                continue
            src = msgs[o]
            if out.messages[i] is not src:
                # a changed message must be explained by a block edit on that input message
                assert any(e.message == o for e in out.edits), f"{name}: message {o} changed without an edit"
        inserted = [i for i, o in enumerate(out.origin) if o is None]
        for i in inserted:
            assert any(e.out == i for e in out.edits if e.kind in (SNIP, SUMMARY)), f"{name}: unexplained insert"
        for e in out.edits:
            if e.kind == SNIP:
                removed = set(range(e.start, e.end))
                assert not removed & {o for o in out.origin if o is not None}


@SETTINGS
@given(conversations(), st.integers(4, 30))
def test_guarded_snip_keeps_pairs_whole_and_messages_unique(tmp_path_factory, msgs, max_messages):
    ctx = _ctx(tmp_path_factory, {"max_messages": max_messages})
    out = LAYERS["snip_compact"](msgs, ctx)
    kept = [o for o in out.origin if o is not None]
    assert kept == sorted(set(kept)), "a kept message is duplicated or out of order"
    # every kept message is there, only the snipped range is missing
    snip = [e for e in out.edits if e.kind == SNIP]
    if snip:
        e = snip[0]
        assert kept == list(range(e.start)) + list(range(e.end, len(msgs)))
    else:
        assert out.messages is msgs
    # a pair that was whole in the input is whole in the output (both halves kept, or both gone)
    before = ToolPairIndex(msgs)
    keptset = set(kept)
    for p in before:
        if p.complete:
            halves = {p.use[0], p.result[0]}
            assert halves <= keptset or not (halves & keptset), f"pair {p.id} split"
    if not pair_errors(check(msgs)):
        assert not pair_errors(check(out.messages))


@SETTINGS
@given(conversations(), params_st)
def test_pipeline_sizes_match_len_str(tmp_path_factory, msgs, params):
    eng = Engine("s08", params, workspace=Workspace(tmp_path_factory.mktemp("ws")),
                 summarizer=FixedSummarizer("S"))
    t = eng.run(msgs)
    for s in t.steps:
        assert s.size_before == len(str(s.input))
        assert s.size_after == len(str(s.messages))


@SETTINGS
@given(conversations())
def test_dialect_round_trip_keeps_every_pair(msgs):
    o = to_openai(msgs)
    back = to_anthropic(o.messages)
    assert ToolPairIndex(back.messages).complete_count == ToolPairIndex(msgs).complete_count
    assert not pair_errors(check(o.messages, "openai")) or pair_errors(check(msgs))
    assert [m["role"] for m in back.messages if m["role"] != "system"] == [m["role"] for m in msgs]


def test_size_meter_big_message_once():
    meter = SizeMeter()
    big = {"role": "user", "content": "z" * 1_000_000}
    msgs = [big] * 3
    assert meter.size(msgs) == len(str(msgs))
