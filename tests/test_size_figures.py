"""Per-message figures shared by every strategy (core.size.SizeMeter): each figure is computed once
per message object, list totals carry over to lists made from measured ones (concat, derive), and
the cached estimates are exactly the uncached ones (Hermes's against hermes-agent 0.19.0 itself)."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compactscope.core.layers import hermes_rules as R
from compactscope.core.layers.claude_code import RoughTokens
from compactscope.core.pipeline.size import SIZE, CharsPerToken, SizeMeter

IMG = {"type": "image_url", "image_url": {"url": "data:image/png;base64," + "A" * 900}}

part = st.one_of(
    st.fixed_dictionaries({"type": st.just("text"), "text": st.text(max_size=40)}),
    st.just(IMG),
    st.just({"type": "input_image", "image_url": "data:" + "B" * 300}),
    st.just({"type": "image", "source": {"type": "base64", "data": "C" * 500}}),
    st.text(max_size=10),
    st.integers(),
)
content = st.one_of(
    st.none(), st.text(max_size=80), st.lists(part, max_size=4),
    st.fixed_dictionaries({"_multimodal": st.just(True), "text_summary": st.text(max_size=30),
                           "content": st.lists(part, max_size=3)}),
    st.fixed_dictionaries({"other": st.text(max_size=10)}),
)
message = st.one_of(
    st.fixed_dictionaries(
        {"role": st.sampled_from(["user", "assistant", "tool", "system"]), "content": content},
        optional={"tool_calls": st.lists(st.fixed_dictionaries(
                      {"id": st.text(max_size=6), "function": st.fixed_dictionaries(
                          {"name": st.text(max_size=8), "arguments": st.text(max_size=40)})}), max_size=2),
                  "reasoning": st.text(max_size=50),
                  "_anthropic_content_blocks": st.lists(st.sampled_from(
                      [{"type": "image", "source": {}}, {"type": "text", "text": "t"}]), max_size=3)}),
    st.text(max_size=20),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(message, max_size=12), st.lists(message, max_size=4))
def test_cached_estimates_equal_the_uncached_ones(msgs, more):
    meter = SizeMeter()
    assert R.rough_tokens(msgs, meter) == R.rough_tokens(msgs)
    assert [R.budget_tokens_of(m, meter) for m in msgs if isinstance(m, dict)] == \
        [R.budget_tokens(m) for m in msgs if isinstance(m, dict)]
    # a list made from a measured one: its totals carry over, and still equal a fresh count
    grown = meter.concat(msgs, more)
    assert grown == msgs + more
    assert R.rough_tokens(grown, meter) == R.rough_tokens(grown) == R.rough_tokens(grown, SizeMeter())
    assert meter.raw_total(grown) == len(str(grown))       # (meter.size counts an image as its tokens)
    dicts = [m for m in msgs if isinstance(m, dict)]
    assert RoughTokens().tokens(dicts, meter) == RoughTokens().tokens(dicts, SizeMeter())


def test_hermes_rough_estimate_equals_hermes_agent():
    mm = pytest.importorskip("agent.model_metadata", reason="hermes-agent 0.19.0 is not installed ([hermes] extra)")
    cases = [
        [{"role": "user", "content": "hello"}],
        [{"role": "user", "content": [IMG, {"type": "text", "text": "what is this"}]}],
        [{"role": "assistant", "content": None, "_anthropic_content_blocks": [{"type": "image"}, {"type": "text"}]}],
        [{"role": "tool", "content": {"_multimodal": True, "text_summary": "a screenshot",
                                      "content": [{"type": "image", "x": 1}, {"type": "text", "text": "y"}]}}],
        [{"role": "assistant", "content": "x" * 1001, "tool_calls": [{"id": "c", "function": {"name": "t"}}]},
         {"role": "tool", "content": ["raw", 3, {"type": "input_image", "image_url": "d"}]}],
    ]
    meter = SizeMeter()
    est = R.HermesTokens()
    for msgs in cases:
        theirs = mm.estimate_messages_tokens_rough(msgs)
        assert R.rough_tokens(msgs, meter) == theirs, msgs
        assert est.tokens(msgs, meter) == theirs
        tools = [{"type": "function", "function": {"name": "t", "parameters": {"a": "b" * 99}}}]
        assert est.tokens(msgs, meter, system="s" * 77, tools=tools) == \
            mm.estimate_request_tokens_rough(msgs, system_prompt="s" * 77, tools=tools)


def test_each_figure_is_computed_once_per_message_and_lists_are_remembered():
    calls = []

    def fig(m, meter):
        calls.append(m)
        return len(m["content"])

    meter = SizeMeter()
    msgs = [{"role": "user", "content": "a" * k} for k in range(50)]
    assert meter.total(msgs, "demo", fig) == sum(range(50))
    assert len(calls) == 50
    assert meter.total(msgs, "demo", fig) == sum(range(50))      # the same list: remembered
    assert len(calls) == 50
    new = {"role": "user", "content": "b" * 7}
    grown = meter.concat(msgs, [new])                             # only the new message is figured
    assert len(calls) == 51 and calls[-1] is new
    assert meter.total(grown, "demo") == sum(range(50)) + 7
    assert len(calls) == 51
    # a layer's change: message 3 replaced, messages 10..19 dropped
    rep = {"role": "user", "content": "z"}
    after = grown[:3] + [rep] + grown[4:10] + grown[20:]
    meter.derive(grown, after, [grown[3]] + grown[10:20], [rep])
    assert len(calls) == 52 and calls[-1] is rep
    assert meter.total(after, "demo") == sum(len(m["content"]) for m in after)
    assert meter.size(after) == len(str(after))
    assert len(calls) == 52
    # an estimator over the repr size follows the same remembered totals
    assert CharsPerToken().tokens(after, meter) == len(str(after)) // 4


def test_a_list_changed_in_place_is_measured_again():
    meter = SizeMeter()
    msgs = [{"role": "user", "content": "abc"}]
    assert meter.size(msgs) == len(str(msgs))
    msgs.append({"role": "assistant", "content": "a much longer reply"})
    assert meter.size(msgs) == len(str(msgs))
    msgs[-1] = {"role": "assistant", "content": "short"}
    assert meter.size(msgs) == len(str(msgs))
    assert meter.total(msgs, SIZE) == sum(len(repr(m)) for m in msgs)


def test_hermes_replay_figures_each_message_once():
    """A replay of n calls computes each message's rough figure once, not once per call; a plain
    message's figure is its repr size (shared with every strategy), so Hermes's shadow copy of it is
    never printed."""
    from collections import Counter

    from compactscope.core.model.conversation import Conversation
    from compactscope.core.replay import replay
    msgs = [{"role": "user", "content": "start"}]
    for k in range(60):
        msgs += [{"role": "assistant", "content": f"step {k}"}, {"role": "user", "content": f"go on {k}" * 20}]
    msgs[8] = {"role": "user", "content": [IMG, {"type": "text", "text": "look"}]}
    figured, shadowed = Counter(), Counter()
    real_units, real_shadow = R.rough_units, R._rough_chars_and_images

    def units(m, meter=None):
        figured[id(m)] += 1
        return real_units(m, meter)

    def shadow(m):
        shadowed[id(m)] += 1
        return real_shadow(m)
    R.rough_units, R._rough_chars_and_images = units, shadow
    try:
        res = replay(Conversation(msgs, dialect="openai"), "hermes")
    finally:
        R.rough_units, R._rough_chars_and_images = real_units, real_shadow
    assert len(res.calls) == 61          # one per assistant message, and the pending one at the end
    assert set(figured) >= {id(m) for m in msgs} and max(figured.values()) == 1
    assert list(shadowed) == [id(msgs[8])] and shadowed[id(msgs[8])] == 1


# ------------------------------------------------------------------ the pipeline re-sizes from the layers' deltas
from tests.test_properties import conversations  # noqa: E402

STRATEGY_PARAMS = st.one_of(
    st.tuples(st.just("s08"), st.fixed_dictionaries({
        "max_messages": st.integers(4, 30), "keep_head": st.integers(0, 5), "keep_recent": st.integers(0, 4),
        "context_limit": st.sampled_from([500, 50_000, 10**9]), "max_bytes": st.sampled_from([1_000, 200_000]),
        "persist_threshold": st.sampled_from([100, 30_000]), "variant": st.sampled_from(["guarded", "readme"])})),
    st.tuples(st.just("claude_code"), st.fixed_dictionaries({
        "snip_max_messages": st.sampled_from([0, 6, 20]), "idle_gap_minutes": st.sampled_from([0.0, 0.001]),
        "budget_chars": st.sampled_from([1_000, 200_000]), "persist_threshold": st.sampled_from([100, 30_000]),
        "window": st.sampled_from([40_000, 200_000])})),
    st.tuples(st.just("hermes"), st.fixed_dictionaries({
        "trigger": st.sampled_from(["threshold", "always"]), "protect_last_n": st.integers(1, 8),
        "context_length": st.sampled_from([64_000, 200_000])})),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(conversations(), STRATEGY_PARAMS, st.integers(0, 3))
def test_step_sizes_from_deltas_equal_a_fresh_count(tmp_path_factory, msgs, strategy_params, grow):
    """Whatever a layer changes, the size and tokens after it (derived from the input's totals and
    the layer's reported change) equal a count from scratch; so do the next runs over the grown output."""
    from compactscope.core.pipeline.engine import Engine
    from compactscope.core.summarizers import FixedSummarizer
    from compactscope.core.files.workspace import Workspace
    name, params = strategy_params
    eng = Engine(name, params, workspace=Workspace(tmp_path_factory.mktemp("ws")),
                 summarizer=FixedSummarizer("a summary"))
    context = msgs
    for k in range(1 + grow):
        trace = eng.run(context, now=1_700_000_000.0 + 3600 * k)
        for s in trace.steps:
            fresh = SizeMeter()
            assert s.size_before == len(str(s.input)), s.layer
            assert s.size_after == len(str(s.messages)), s.layer
            assert s.tokens_after == eng.tokens.tokens(s.messages, fresh), s.layer
        out = trace.output
        more = [{"role": "assistant", "content": [{"type": "text", "text": f"reply {k}" * 30}]},
                {"role": "user", "content": f"next {k}"}]
        context = eng.meter.concat(out, more) if trace.dialect == "anthropic" else out


@pytest.mark.parametrize("params", [{}, {"idle_gap_minutes": 0.5}])
def test_claude_code_session_count_in_a_replay_equals_a_fresh_count(corpus, tmp_path, params):
    """Claude Code's own count (last usage + chars/4 after it) over the replay's contexts, made with
    meter.concat and checked against the recording from where the previous context ended, equals a
    count from scratch of the same lists (anchored where they are the recorded context)."""
    from compactscope.core.layers.claude_code import SessionTokens
    from compactscope.core.loaders import load
    from compactscope.core.pipeline.engine import Engine
    from compactscope.core.replay import replay
    from compactscope.core.files.workspace import Workspace
    conv = load(corpus / "entireio-cli" / "b8-659b3a4dd4-0-full.jsonl").main
    eng = Engine("claude_code", params, workspace=Workspace(tmp_path))    # a short idle gap clears old results
    res = replay(conv, engine=eng, calibrate=False)
    assert len(res.calls) > 20

    class Plain(SessionTokens):
        """The count with the recorded prefix checked message by message, every time."""
        def _real_prefix(self, messages, start, upto, meter=None):
            real = self._conv.messages
            return start + upto < len(real) and all(messages[k] is real[start + k] for k in range(upto + 1))

    fresh = Plain()
    fresh.bind(conv)
    anchored = 0
    for call, context in zip(res.calls, res.inputs):
        assert call.tokens_before == fresh.tokens(context), call.index
        anchored += fresh.anchored
    assert anchored > 10          # the recorded usage was used, not only the rough count
    if params:                    # cleared results: some contexts start like the recording but differ later
        assert any("time_micro_compact" in c.fired for c in res.calls)


def test_a_lazy_summary_prompt_is_hashed_in_pieces_and_built_only_when_read():
    from compactscope.core.summarizers import CachedSummarizer, FixedSummarizer, LazyPrompt, SummaryRequest
    built = []

    def pieces():
        built.append(1)
        yield "Summarise:\n"
        for k in range(1000):
            yield f"message {k}\n"
    lazy = SummaryRequest(LazyPrompt(pieces), (), None, 500)
    plain = SummaryRequest("Summarise:\n" + "".join(f"message {k}\n" for k in range(1000)), (), None, 500)
    assert CachedSummarizer.key("s", lazy) == CachedSummarizer.key("s", plain)   # the same cache entry
    c = CachedSummarizer(FixedSummarizer("S"))
    c.summarize(lazy)
    assert c.summarize(plain).cached
    assert built == [1, 1]                               # hashed twice (key), never joined
    assert lazy.prompt == plain.prompt and isinstance(lazy.prompt, str)
    assert built == [1, 1, 1] and lazy.prompt is lazy.prompt            # built once when read


@given(st.lists(message, max_size=12), st.integers(min_value=0, max_value=12))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_figures_in_bulk_are_each_figure_computed_once(msgs, known):
    """``SizeMeter.figures``: each message's figure in order (a repeated message object too), the same as asking
    one by one, each unknown figure computed once and kept (asked again, none is computed)."""
    from compactscope.core.pipeline.facts import Facts
    meter = SizeMeter(facts=Facts())
    msgs = msgs + msgs[:2]                # the same objects twice
    calls: list = []

    def fig(m, _meter):
        calls.append(id(m))
        return len(repr(m)) * 3 + 1
    for m in msgs[:known]:                # some known before
        meter.figure(m, "bulk_test", fig)
    before = len(calls)
    out = meter.figures(msgs, "bulk_test", fig)
    assert out == [len(repr(m)) * 3 + 1 for m in msgs]
    unknown = {id(m) for m in msgs[known:]} - {id(m) for m in msgs[:known]}
    assert set(calls[before:]) == unknown
    assert meter.figure_sum(msgs, "bulk_test", fig) == sum(out)
    assert meter.figures(msgs, SIZE, None) == [meter.message_size(m) for m in msgs]
    n = len(calls)
    assert meter.figures(msgs, "bulk_test", fig) == out and len(calls) == n
