"""The hermes strategy without the real package: rules, layers, state, CLI, MoA view, iteration budget."""
from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compactscope.core import strategies
from compactscope.core.analysis.checker import check
from compactscope.core.oracles.hermes_agent import ABSENT, hermes_oracle_check
from compactscope.core.layers import hermes as H
from compactscope.core.layers import hermes_rules as R
from compactscope.core.analysis.moa import ADVISORY_REQUEST, IterationBudget, moa_reference_view, simulate_turns
from compactscope.core.pipeline.engine import Engine
from compactscope.core.summarizers import CachedSummarizer, FixedSummarizer, SummaryError, SummaryResult

ROOT = Path(__file__).resolve().parent.parent


def conv(turns: int = 30, result_chars: int = 3000, system: bool = True) -> list:
    msgs = [{"role": "system", "content": "You are Hermes."}] if system else []
    for i in range(turns):
        msgs.append({"role": "user", "content": f"request {i}: " + "please look " * 10})
        msgs.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": f"c{i}", "type": "function",
             "function": {"name": "read_file", "arguments": json.dumps({"path": f"/src/m{i}.py"})}}]})
        msgs.append({"role": "tool", "tool_call_id": f"c{i}", "content": f"{i} " + "x" * result_chars})
        msgs.append({"role": "assistant", "content": f"read module {i}"})
    return msgs


class Recording:
    name = "recording"

    def __init__(self, text="The summary body."):
        self.text = text
        self.requests = []

    def summarize(self, request, cancel=None):
        self.requests.append(request)
        return SummaryResult(self.text, self.name)


class Failing:
    name = "failing"

    def __init__(self, kind="error"):
        self.kind = kind

    def summarize(self, request, cancel=None):
        raise SummaryError("upstream said no", kind=self.kind)


def engine(summ=None, **params) -> Engine:
    return Engine("hermes", params, summarizer=CachedSummarizer(summ or FixedSummarizer("The summary body.")))


# ------------------------------------------------------------------ rules
def test_threshold_arithmetic():
    # 200k window: 0.50 is raised to 0.75 (window < 512k) -> 150,000; tail budget 20% of it; summary cap 5% of the
    # window capped at 10,000
    b = R.budgets(200_000)
    assert (b.threshold_pct, b.threshold_tokens, b.tail_budget, b.max_summary_tokens) == (0.75, 150_000, 30_000, 10_000)
    # 1M window keeps 0.50
    assert R.budgets(1_000_000).threshold_tokens == 500_000
    # output reservation comes off the window first: (200,000 - 65,536) * 0.75
    assert R.budgets(200_000, max_tokens=65_536).threshold_tokens == int((200_000 - 65_536) * 0.75)
    # 64k window: the 64,000 floor reaches the window, so 85% of it
    assert R.budgets(64_000).threshold_tokens == int(64_000 * 0.85)
    # 80k window: int(80,000 * 0.75) = 60,000 is floored at 64,000 (still under the window)
    assert R.budgets(80_000).threshold_tokens == 64_000
    assert H.threshold({"context_length": 200_000, "threshold_pct": 0.9}) == 180_000


def test_budget_token_estimate():
    assert R.budget_tokens({"role": "user", "content": "a" * 40}) == 40 // 4 + 10
    call = {"id": "c1", "type": "function", "function": {"name": "t", "arguments": "{}"}}
    m = {"role": "assistant", "content": None, "tool_calls": [call, call], "reasoning": "r" * 400}
    assert R.budget_tokens(m) == 10 + 2 * (len(str(call)) // 4) + 100
    img = {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:" + "A" * 99999}},
                                       {"type": "text", "text": "abcd"}]}
    assert R.budget_tokens(img) == (1600 * 4 + 4) // 4 + 10
    # the rough estimate blanks image payloads and adds 1,500 per image
    assert R.rough_tokens([img]) < 1600 + 100 and R.rough_tokens([img]) > 1500
    est = R.HermesTokens()
    assert est.tokens([{"role": "user", "content": "hi"}], system="s" * 400) == \
        R.rough_tokens([{"role": "user", "content": "hi"}]) + 100


def test_tool_one_liners():
    assert R.tool_one_liner("terminal", '{"command": "pytest"}', '{"exit_code": 1}\nline2') == \
        "[terminal] ran `pytest` -> exit 1, 2 lines output"
    assert R.tool_one_liner("read_file", '{"path": "a.py", "offset": 5}', "x" * 5635) == \
        "[read_file] read a.py from line 5 (5,635 chars)"
    assert R.tool_one_liner("mystery", '{"q": "abc", "n": 3, "z": 1}', "y" * 10) == "[mystery] q=abc n=3 (10 chars result)"
    assert R.tool_one_liner("web_extract", "not json", "") == "[web_extract] ? (0 chars)"


def test_shrink_args_keeps_valid_json():
    args = json.dumps({"path": "/a", "content": "z" * 1000, "n": 3})
    out = R.shrink_args_json(args)
    assert json.loads(out) == {"path": "/a", "content": "z" * 200 + "...[truncated]", "n": 3}
    assert R.shrink_args_json("{broken") == "{broken"


def test_summary_prefix_round_trip_and_detection():
    body = "## Goal\nx"
    full = R.with_summary_prefix(body)
    assert full.startswith(R.SUMMARY_PREFIX) and R.strip_summary_prefix(full + "\n\n" + R.SUMMARY_END_MARKER) == body
    for old in R.HISTORICAL_SUMMARY_PREFIXES:
        assert R.is_summary_content(old + " body") and R.strip_summary_prefix(old + " body") == "body"
    merged = f"{R.MERGED_PRIOR_CONTEXT_HEADER}\nhi\n\n{R.MERGED_SUMMARY_DELIMITER}\n\n{full}"
    assert R.is_summary_content(merged) and R.strip_summary_prefix(merged) == body


def test_grounding_replaces_task_snapshot():
    turns = [{"role": "user", "content": "fix   the\nparser"}, {"role": "assistant", "content": "ok"}]
    out = R.ground_task_snapshot(f"{R.TASK_HEADING}\nmade up\n\n## Goal\ng", turns)
    assert out.startswith(f"{R.TASK_HEADING}\nUser asked (deterministic, from compacted turns): 'fix the parser'")
    assert out.endswith("## Goal\ng") and "made up" not in out
    assert R.ground_task_snapshot("plain", [{"role": "assistant", "content": "x"}]) == "plain"


def test_strip_reasoning():
    assert R.strip_reasoning("<think>a</think>keep<thinking>b</thinking>").strip() == "keep"
    assert R.strip_reasoning("keep\n<think>never closed").strip() == "keep"


# ------------------------------------------------------------------ layers through the engine
def test_stepper_shows_the_five_phases_and_origins_are_sound():
    msgs = conv()
    before = copy.deepcopy(msgs)
    t = engine(trigger="always").run(msgs, dialect="openai")
    assert [s.layer for s in t.steps] == ["hermes_prune", "hermes_boundaries", "hermes_summarize",
                                          "hermes_assemble", "hermes_sanitize"]
    assert msgs == before                                          # input never mutated
    for s in t.steps:
        assert len(s.origin) == len(s.messages)
        for o in s.origin:
            assert o is None or 0 <= o < len(s.input)
        assert s.explain()
    summ = t.step("hermes_summarize")
    assert summ.origin.count(None) == 1 and summ.summary["text"] == "The summary body."
    b = t.step("hermes_boundaries")
    assert b.vars["compress_start"] == 4 and b.vars["compress_end"] > 4   # system + protect_first_n=3
    assert any(e.var == "compress_end" for e in b.edits)
    out = t.output
    assert out[0]["content"].endswith(R.SYSTEM_COMPACTION_NOTE)
    s = [m for m in out if m.get(R.SUMMARY_FLAG)]
    assert len(s) == 1 and s[0]["content"].startswith(R.SUMMARY_PREFIX)
    assert s[0]["content"].endswith(R.SUMMARY_END_MARKER)
    assert not [f for f in check(out, "openai") if f.severity == "error"]
    assert t.step("hermes_sanitize").vars["made_progress"] is True


def test_prune_shares_unchanged_messages_and_summarises_old_results():
    msgs = conv(result_chars=3000)
    t = engine(trigger="always", context_length=8000).run(msgs, dialect="openai")
    p = t.step("hermes_prune")
    assert p.vars["prune_boundary"] < len(msgs)
    for a, b in zip(p.input, p.messages):
        if a is not b:
            assert a["role"] == "tool" and b["content"].startswith(("[read_file] read /src/m", "[Duplicate"))
    assert any(m is msgs[0] for m in p.messages)


def test_below_threshold_nothing_happens():
    msgs = conv(turns=3)
    t = engine().run(msgs, dialect="openai")
    assert t.output is msgs
    assert t.step("hermes_prune").triggered is False
    assert "threshold 150,000" in t.step("hermes_prune").note


def test_iterative_summary_and_head_decay():
    rec = Recording()
    e = engine(rec, trigger="always", context_length=16000)
    first = e.run(conv(), dialect="openai").output
    assert e.state[H.COUNT] == 1 and e.state[H.PREVIOUS].endswith("The summary body.")
    assert "PREVIOUS SUMMARY" not in rec.requests[0].prompt
    second_in = first + conv(turns=12, system=False)
    t2 = e.run(second_in, dialect="openai")
    assert "PREVIOUS SUMMARY" in rec.requests[1].prompt
    assert t2.step("hermes_boundaries").vars["head"] == 1              # protect_first_n decayed to 0
    assert sum(1 for m in t2.output if m.get(R.SUMMARY_FLAG)) == 1     # updated, not stacked
    assert e.state[H.COUNT] == 2 and e.state[H.PASS] is None


def test_summary_failure_uses_the_deterministic_fallback():
    t = engine(Failing(), trigger="always").run(conv(), dialect="openai")
    text = next(m["content"] for m in t.output if m.get(R.SUMMARY_FLAG))
    assert "deterministic fallback" in text and "Summary failure reason: upstream said no." in text
    assert "/src/m5.py" in text                                        # relevant files from tool arguments
    assert t.step("hermes_summarize").vars["fallback"] is True


@pytest.mark.parametrize("kind", ["auth", "network"])
def test_auth_and_network_failures_abort(kind):
    msgs = conv()
    t = engine(Failing(kind), trigger="always").run(msgs, dialect="openai")
    assert t.step("hermes_summarize").error and len(t.output) == len(msgs)
    assert not any(m.get(R.SUMMARY_FLAG) for m in t.output)


def test_merge_into_tail_when_roles_collide():
    # the head ends with an assistant message, so the summary must be a user message; the tail starts with a
    # user message, and flipping to assistant would repeat the head's role: the summary is merged into the tail
    msgs = [{"role": "user", "content": "first"}, {"role": "assistant", "content": "a0"}]
    for i in range(12):
        msgs += [{"role": "user", "content": f"u{i} " + "w " * 400}, {"role": "assistant", "content": f"a{i} " + "v " * 400}]
    t = engine(trigger="always", protect_first_n=2, context_length=4000).run(msgs, dialect="openai")
    a = t.step("hermes_assemble")
    assert a.vars["last_head_role"] == "assistant" and a.vars["first_tail_role"] == "user"
    assert a.vars["merged"] is True
    merged = next(m for m in t.output if m.get(R.SUMMARY_FLAG))
    assert merged["role"] == "user" and merged["content"].startswith(R.MERGED_PRIOR_CONTEXT_HEADER)
    assert R.MERGED_SUMMARY_DELIMITER in merged["content"]


def test_anthropic_conversation_is_converted_first():
    msgs = [{"role": "user", "content": "hello " * 50}]
    for i in range(15):
        msgs.append({"role": "assistant", "content": [{"type": "tool_use", "id": f"t{i}", "name": "read_file",
                                                       "input": {"path": f"/p{i}"}}]})
        msgs.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{i}",
                                                  "content": "r" * 5000}]})
    msgs.append({"role": "assistant", "content": "done"})
    t = engine(trigger="always", context_length=8000).run(msgs, dialect="anthropic")
    assert t.steps[0].layer == "convert" and t.dialect == "openai"
    assert any(m.get(R.SUMMARY_FLAG) for m in t.output)


def test_db_markers_are_stripped_and_old_images_replaced():
    msgs = conv(turns=10)
    msgs = [dict(m, _db_persisted=True) for m in msgs]
    msgs[5] = {"role": "user", "content": [{"type": "text", "text": "see"},
                                           {"type": "image_url", "image_url": {"url": "https://x/a.png"}}]}
    msgs.append({"role": "user", "content": [{"type": "image_url", "image_url": {"url": "https://x/b.png"}}]})
    t = engine(trigger="always", protect_first_n=5, context_length=4000).run(msgs, dialect="openai")
    assert not any(R.DB_PERSISTED in m for m in t.output)
    assert t.output[5]["content"][1] == {"type": "text", "text": R.ATTACHED_IMAGE_TEXT}
    assert t.output[-1]["content"][0]["type"] == "image_url"


def test_strategy_is_registered_with_explained_params():
    s = strategies.get("hermes")
    assert s.dialect == "openai" and "hermes" in strategies.available()
    assert all(p.help and len(p.help) > 20 for p in s.params)
    assert s.token_estimator().name.startswith("hermes")
    assert s.layer("moa_reference_view")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 5000), st.booleans()), min_size=1, max_size=25),
       st.sampled_from([2000, 8000, 200_000]))
def test_property_valid_pairs_in_valid_pairs_out(shape, window):
    msgs = [{"role": "system", "content": "sys"}]
    for i, (calls, size, text) in enumerate(shape):
        msgs.append({"role": "user", "content": f"u{i}"})
        if calls:
            msgs.append({"role": "assistant", "content": "t" if text else None, "tool_calls": [
                {"id": f"c{i}_{k}", "type": "function", "function": {"name": "terminal", "arguments": "{}"}}
                for k in range(calls)]})
            msgs += [{"role": "tool", "tool_call_id": f"c{i}_{k}", "content": "o" * size} for k in range(calls)]
        msgs.append({"role": "assistant", "content": f"a{i}"})
    before = copy.deepcopy(msgs)
    t = engine(trigger="always", context_length=window).run(msgs, dialect="openai")
    assert msgs == before
    errs = [f for f in check(t.output, "openai") if f.severity == "error" and "tool" in f.code]
    assert not errs
    assert R.rough_tokens(t.output) <= R.rough_tokens(msgs) + 2000   # a summary costs at most its own size


# ------------------------------------------------------------------ CLI and the oracle check
def test_cli_run_hermes_fixed_summary(tmp_path):
    f = tmp_path / "chat.json"
    f.write_text(json.dumps(conv()))
    r = subprocess.run([sys.executable, "-m", "compactscope", "run", str(f), "--strategy", "hermes", "--summarizer",
                        "fixed:The summary body.", "--set", "trigger=always", "--json"],
                       capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert [s["layer"] for s in d["steps"]][-5:] == ["hermes_prune", "hermes_boundaries", "hermes_summarize",
                                                     "hermes_assemble", "hermes_sanitize"]
    final = d["steps"][-1]["messages"]
    assert any("The summary body." in str(m.get("content")) for m in final)


def test_oracle_check_without_the_package(monkeypatch):
    import compactscope.core.oracles.hermes_agent as O
    monkeypatch.setattr(O, "module", lambda: None)
    assert hermes_oracle_check(conv(), {}, "x") == ABSENT


# ------------------------------------------------------------------ MoA view and iteration budget
def test_moa_reference_view():
    msgs = [{"role": "system", "content": "sys"}, {"role": "user", "content": "go"},
            {"role": "assistant", "content": "looking", "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "/a"}'}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "H" * 3000 + "T" * 3000},
            {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:x"}}]},
            {"role": "assistant", "content": None, "tool_calls": [{"id": "c2", "type": "function",
                                                                  "function": {"name": "ls", "arguments": {"d": 1}}}]}]
    before = copy.deepcopy(msgs)
    out = moa_reference_view(msgs, 1000)
    assert msgs == before
    roles = [m["role"] for m in out.messages]
    assert "system" not in roles and "tool" not in roles and roles[-1] == "user"
    assert out.messages[-1]["content"] == ADVISORY_REQUEST and out.origin[-1] is None
    a = out.messages[1]["content"]
    assert a.startswith('looking\n[called tool: read_file({"path": "/a"})]\n[tool result: ' + "H" * 500)
    assert "[... 5000 chars omitted ...]" in a and a.endswith("T" * 500 + "]")
    assert out.messages[2]["content"].startswith("[user sent non-text content")
    assert out.messages[3]["content"] == '[called tool: ls({"d": 1})]'
    assert not any("tool_calls" in m for m in out.messages)
    assert out.vars["tool_results_folded"] == 1 and out.vars["dropped"] == 1


def test_moa_view_as_extra_layer():
    t = engine().run(conv(turns=2), dialect="openai", layers=["moa_reference_view"])
    assert t.output[-1]["content"] == ADVISORY_REQUEST and t.steps[-1].layer == "moa_reference_view"


def test_iteration_budget_refund_semantics():
    b = IterationBudget(2)
    assert b.consume() and b.consume() and not b.consume()
    b.refund()
    assert b.used == 1 and b.remaining == 1
    b.refund(), b.refund()
    assert b.used == 0                                   # never below zero
    # 5 real turns and 3 compaction restarts under a cap of 5: restarts are refunded, all 8 calls run
    budget, ran = simulate_turns(["turn", "compact", "turn", "compact", "turn", "turn", "compact", "turn"], 5)
    assert ran == 8 and budget.used == 5
    # the cap still holds for real turns
    budget, ran = simulate_turns(["turn"] * 7 + ["compact"], 5)
    assert ran == 5 and budget.events[-1] == ("refused", 5)


def test_check_trace_for_the_window():
    pytest.importorskip("agent.context_compressor", reason="hermes-agent is not installed")
    from compactscope.core.oracles.hermes_agent import MATCH, check_trace
    rec = Recording("## Goal\nfinish")
    e = engine(rec, trigger="always", context_length=16000)
    t1 = e.run(conv(), dialect="openai")
    assert check_trace(t1) == MATCH
    t2 = e.run(t1.output + conv(turns=12, system=False), dialect="openai")   # iterative: state primed
    assert check_trace(t2) == MATCH
    t3 = engine(Failing(), trigger="always").run(conv(), dialect="openai")  # deterministic fallback
    assert check_trace(t3) == MATCH
    assert check_trace(engine().run(conv(turns=2), dialect="openai")).startswith("nothing to compare")
    t1.steps[-1].messages[1] = {"role": "user", "content": "tampered"}
    assert check_trace(t1).startswith("message 1 (user)")


def test_budget_for_replay_refunds_compaction_restarts(tmp_path):
    from compactscope.core.analysis.moa import budget_for_replay
    from compactscope.core.replay import replay
    msgs = conv(turns=25)
    res = replay(msgs, "hermes", {"context_length": 8000}, summarizer=CachedSummarizer(FixedSummarizer("S")))
    compactions = sum(1 for c in res.calls if c.compacted)
    assert compactions >= 1
    budget, stop = budget_for_replay(res, max_total=len(res.calls))
    assert stop is None and budget.used == len(res.calls)      # restarts refunded: every call fits the cap
    assert [e for e, _ in budget.events].count("refund") == compactions
    budget, stop = budget_for_replay(res, max_total=len(res.calls) - 1)
    assert stop == res.calls[-1].index
