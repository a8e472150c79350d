"""Replay: layers fire at the calls a hand calculation says, the running context stays valid,
state persists across calls, the CLI's JSON and CSV agree, real boundaries are reported."""
from __future__ import annotations

import csv
import io
import json

import pytest

from compactscope.app.cli import main as cli_main
from compactscope.core.analysis.checker import check, rejected
from compactscope.core.model.conversation import CompactionEvent, Conversation, MessageMeta, Usage
from compactscope.core.pipeline.engine import Engine
from compactscope.core.replay import compare, format_table, replay
from compactscope.core.summarizers import FixedSummarizer, SummaryError
from compactscope.core.files.workspace import Workspace

T0 = 1_700_000_000.0


def pairs_session(n, size=500, name="Bash"):
    """u0, then n (tool_use, tool_result) pairs: call k is the assistant message 2k+1."""
    msgs = [{"role": "user", "content": "start"}]
    for k in range(n):
        msgs.append({"role": "assistant", "content": [{"type": "tool_use", "id": f"t{k}", "name": name,
                                                       "input": {"command": f"step {k}"}}]})
        msgs.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{k}",
                                                  "content": chr(97 + k % 26) * size}]})
    return msgs


class LenTokens:
    """1,000 tokens per message: makes the threshold arithmetic easy to do by hand."""
    name = "1000 per message"

    def tokens(self, messages, meter, *, system=None, tools=None):
        return 1000 * len(messages)


def s08_engine(tmp_path, **params):
    return Engine("s08", params, workspace=Workspace(tmp_path), summarizer=FixedSummarizer("S"))


def cc_engine(tmp_path, summarizer=None, **params):
    return Engine("claude_code", params, workspace=Workspace(tmp_path), tokens=LenTokens(),
                  summarizer=summarizer or FixedSummarizer("<summary>S</summary>"))


# --------------------------------------------------------------- hand calculations
def test_s08_layers_fire_where_the_hand_simulation_says(tmp_path):
    msgs = pairs_session(14, size=500)
    limit = 3_000
    res = replay(msgs, engine=s08_engine(tmp_path, keep_recent=2, max_messages=1000, context_limit=limit),
                 keep_traces=True)
    assert [c.message_index for c in res.calls] == [2 * k + 1 for k in range(14)] + [29]   # + the pending call
    # the hand calculation, with plain lists and len(str(...)) only
    placeholder = "[Earlier tool result compacted. Re-run if needed.]"
    ctx, exp_micro, exp_summary = [], [], []
    last = 0
    for k, j in enumerate([2 * k + 1 for k in range(14)] + [29]):
        ctx = ctx + [dict(m) for m in msgs[last:j]]
        last = j
        res_pos = [i for i, m in enumerate(ctx) if isinstance(m["content"], list)
                   and m["content"][0].get("type") == "tool_result"]
        fired = False
        for i in res_pos[:-2]:
            b = ctx[i]["content"][0]
            if len(b["content"]) > 120:
                ctx[i] = {"role": "user", "content": [{**b, "content": placeholder}]}
                fired = True
        if fired:
            exp_micro.append(k)
        if len(str(ctx)) > limit:
            ctx = [{"role": "user", "content": "[Compacted]\n\nS"}]
            exp_summary.append(k)
        assert res.traces[k].output == ctx, f"call {k}"
    assert exp_micro[0] == 3                       # 3 results, keep 2: the oldest goes first at call 3
    assert exp_summary, "the limit must be reached"
    assert [c.index for c in res.calls if "micro_compact" in c.fired] == exp_micro
    assert res.summary_calls() == exp_summary
    assert [c.index for c in res.calls if "snip_compact" in c.fired] == []


def test_claude_code_threshold_and_time_micro_at_hand_computed_calls(tmp_path):
    # threshold = window - min(32,000, 20,000) - 13,000 = 9,000 tokens = 9 messages with LenTokens.
    # Before call k the context holds 1 + 2k messages until the first compaction: 1 + 2k >= 9 -> k = 4;
    # after it, [summary] + 2 per call: 1 + 2(k - 4) >= 9 -> k = 8, then 12.
    msgs = pairs_session(14)
    times = [T0 + 60 * i for i in range(len(msgs))]
    gap_at = 2 * 6             # the user message before call 6 (message 12) arrives 90 minutes later
    times = [t + (5400 if i >= gap_at else 0) for i, t in enumerate(times)]
    conv = Conversation(msgs, meta=[MessageMeta(timestamp=t) for t in times])
    res = replay(conv, engine=cc_engine(tmp_path, window=42_000, restore_files=False), keep_traces=True)
    assert res.threshold == 9_000
    assert res.summary_calls() == [4, 8, 12]
    for k in (4, 8, 12):
        assert res.calls[k].tokens_before >= 9_000 and res.calls[k].messages_after == 1
        assert res.calls[k - 1].tokens_after < 9_000
    # idle gap: only call 6 sees 90 min since the last assistant message; the context then holds
    # [summary, t4, r4, t5, r5, t6?]: 2 results (t4, t5) <= keep 5, so nothing to clear -> with keep 1, one goes
    res2 = replay(conv, engine=cc_engine(tmp_path, window=42_000, restore_files=False, micro_keep_recent=1))
    fired = [c.index for c in res2.calls if "time_micro_compact" in c.fired]
    assert fired == [6]
    assert res2.calls[6].results_cleared == 1
    assert [c.index for c in res.calls if "time_micro_compact" in c.fired] == []


def test_running_context_passes_the_checker_after_every_call(tmp_path, examples):
    convs = [pairs_session(30, size=3000)]
    for name in ("long_session.json", "boundary_case.json", "short_session.json"):
        p = examples / name
        if p.exists():
            convs.append(json.loads(p.read_text()))
    for msgs in convs:
        for eng in (s08_engine(tmp_path, max_messages=12, context_limit=20_000),
                    Engine("claude_code", {"window": 40_000}, workspace=Workspace(tmp_path)),
                    Engine("s08", {}, workspace=Workspace(tmp_path))):
            res = replay(msgs, engine=eng, keep_traces=True, check=True)
            assert res.calls
            for c, tr in zip(res.calls, res.traces):
                assert not rejected(check(tr.output)), (eng.strategy.name, c.index, check(tr.output)[:3])
                assert c.findings == 0


def test_one_engine_keeps_the_circuit_breaker_across_calls(tmp_path):
    class Failing:
        name = "failing"
        calls = 0

        def summarize(self, request, cancel=None):
            Failing.calls += 1
            raise SummaryError("overloaded", kind="overloaded")
    engine = cc_engine(tmp_path, Failing(), window=42_000)
    res = replay(pairs_session(12), engine=engine, keep_traces=True)
    failing = [c.index for c in res.calls if c.errors]
    assert failing == [4, 5, 6]                 # then the breaker is open: no more attempts
    assert Failing.calls == 3
    auto = res.traces[7].step("auto_compact")
    assert auto.triggered is False and not res.calls[7].fired
    assert "circuit breaker is open after 3 consecutive failures" in auto.note
    assert auto.vars["tokens"] >= auto.vars["threshold"]        # over the threshold, yet held back
    assert res.engine.state["consecutive_failures"] == 3
    assert engine.state == {}                   # the replay ran on a fork: the caller's engine is untouched


def test_options_object_and_keywords_replay_the_same(tmp_path):
    from compactscope.core.replay import ReplayOptions
    msgs = pairs_session(14, size=3000)
    a = replay(msgs, "s08", {"context_limit": 15_000}, workspace=Workspace(tmp_path), max_calls=9, keep_inputs=False,
               iteration_cap=3)
    b = replay(msgs, "s08", {"context_limit": 15_000}, workspace=Workspace(tmp_path),
               options=ReplayOptions(max_calls=9, keep_inputs=False, iteration_cap=3))
    assert len(a.calls) == 9 and a.inputs == [] and a.iteration_cap == 3
    assert a.to_json()["calls"] == b.to_json()["calls"] and a.totals() == b.totals()


def test_totals_and_comparison(tmp_path):
    msgs = pairs_session(20, size=2000)
    results = compare(msgs, [("tight", "s08", {"context_limit": 10_000, "keep_recent": 100}),
                             ("loose", "s08", {"context_limit": 40_000, "keep_recent": 100})],
                      workspace=Workspace(tmp_path), summarizer=FixedSummarizer("S"))
    tight, loose = results[0].totals(), results[1].totals()
    assert tight["summaries"] > loose["summaries"] >= 1
    assert tight["peak_size"] <= 10_000 + 2_100 and loose["peak_size"] > tight["peak_size"]
    assert tight["total_input_tokens"] < loose["total_input_tokens"] < tight["raw_total_input_tokens"]
    assert tight["total_input_tokens"] == sum(c.tokens_after for c in results[0].calls)
    table = format_table(results)
    assert "tight" in table and "loose" in table and "total input tokens" in table


def test_real_usage_and_boundaries_are_kept(tmp_path):
    msgs = pairs_session(10)
    meta = [MessageMeta(usage=Usage(input_tokens=100 * i, cache_read_input_tokens=7)) if m["role"] == "assistant"
            else MessageMeta() for i, m in enumerate(msgs)]
    # a real summary inserted at message 11, before the assistant message of call 5: the replay skips it
    msgs = msgs[:11] + [{"role": "user", "content": "This session is being continued from a previous "
                                                    "conversation that ran out of context. S"}] + msgs[11:]
    meta = meta[:11] + [MessageMeta()] + meta[11:]
    conv = Conversation(msgs, meta=meta, events=[CompactionEvent("claude_code", 11, "auto", pre_tokens=1234,
                                                                 summary_index=11)])
    res = replay(conv, engine=cc_engine(tmp_path, window=42_000), calibrate=False)
    assert res.calibration is None
    assert res.calls[0].real_tokens == 107
    assert res.real_events[0]["call"] == 5 and res.calls[5].real_boundary["pre_tokens"] == 1234
    assert all(i != 11 for c in res.calls for i in c.dropped)
    raw = replay(conv, engine=cc_engine(tmp_path, window=10**6), calibrate=False)
    assert raw.calls[5].messages_before == 11   # u0 + 5 pairs: the real summary was not appended
    rep = res.boundary_report()
    assert rep[0]["real_call"] == 5 and rep[0]["simulated_call"] == 4 and rep[0]["calls_apart"] == -1


def test_rerun_gives_the_same_trace(tmp_path):
    res = replay(pairs_session(14), engine=cc_engine(tmp_path, window=42_000))
    tr = res.rerun(8)
    assert tr.step("auto_compact").triggered and len(tr.output) == res.calls[8].messages_after
    assert [s.changed for s in tr.steps] == [layer.changed for layer in res.calls[8].layers]


# --------------------------------------------------------------- CLI
def _cli(capsys, *argv):
    rc = cli_main(list(argv))
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_cli_json_and_csv_agree(tmp_path, capsys):
    f = tmp_path / "conv.json"
    f.write_text(json.dumps(pairs_session(16, size=1500)))
    args = ["replay", str(f), "--set", "context_limit=6000", "--set", "keep_recent=4", "--summarizer", "fixed:S",
            "--workdir", str(tmp_path / "ws")]
    rc, out, _ = _cli(capsys, *args, "--json")
    assert rc == 0
    data = json.loads(out)
    rc, out, _ = _cli(capsys, *args, "--csv")
    assert rc == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert len(rows) == len(data["calls"]) == 17
    for row, call in zip(rows, data["calls"]):
        for key in ("index", "message_index", "size_before", "size_after", "tokens_before", "tokens_after",
                    "summaries", "dropped_messages", "results_cleared"):
            assert int(row[key]) == call[key], key
        assert (row["fired"].split(";") if row["fired"] else []) == call["fired"]
        for layer in call["layers"]:
            assert int(row[f"{layer['layer']}.size_after"]) == layer["size_after"]
            assert row[f"{layer['layer']}.changed"] == str(layer["changed"])
    assert data["totals"]["summaries"] >= 1 and data["layers"][-1] == "compact_history"
    rc, out, _ = _cli(capsys, *args)
    assert rc == 0 and "compact_history" in out


def test_cli_compare_and_errors(tmp_path, capsys):
    f = tmp_path / "conv.json"
    f.write_text(json.dumps(pairs_session(6)))
    rc, out, _ = _cli(capsys, "replay", str(f), "--compare", "big=s08:context_limit=999999", "--compare",
                      "claude_code", "--workdir", str(tmp_path / "ws"))
    assert rc == 0 and "big" in out and "claude_code" in out
    rc, _, err = _cli(capsys, "replay", str(f), "--strategy", "nope")
    assert rc == 2 and "unknown strategy" in err
    rc, _, err = _cli(capsys, "replay", str(f), "--set", "context_limit=lots")
    assert rc == 2 and "context_limit" in err
    g = tmp_path / "none.json"
    g.write_text(json.dumps([{"role": "user", "content": "hi"}]))
    rc, out, _ = _cli(capsys, "replay", str(g))     # one user message: the call it waits for
    assert rc == 0 and "1 model calls" in out


def test_replay_converts_to_the_strategy_dialect(tmp_path):
    from compactscope.core import strategies
    if "hermes" not in strategies.available():
        pytest.skip("the hermes strategy is not built")
    msgs = pairs_session(20, size=4000)
    res = replay(msgs, "hermes", workspace=Workspace(tmp_path), summarizer=FixedSummarizer("S"), keep_traces=True)
    assert len(res.calls) == 21 and [c.message_index for c in res.calls][:3] == [1, 3, 5]
    for tr in res.traces:
        assert tr.dialect == "openai"
        assert not rejected(check(tr.output, "openai"))
        assert all(s.layer != "convert" for s in tr.steps)     # converted once, not at every call


def test_bundled_long_session_fires_by_the_rules(tmp_path, examples):
    p = examples / "long_session.json"
    if not p.exists():
        pytest.skip("bundled example missing")
    msgs = json.loads(p.read_text())
    res = replay(msgs, engine=Engine("s08", {}, workspace=Workspace(tmp_path), summarizer=FixedSummarizer("S")),
                 keep_traces=True)
    for c, tr in zip(res.calls, res.traces):
        ctx = tr.input
        last = ctx[-1]
        batch = sum(len(str(b.get("content", ""))) for b in last["content"] if b.get("type") == "tool_result") \
            if last["role"] == "user" and isinstance(last["content"], list) else 0
        # budget: the last message's results total over 200,000 chars (and one is over 30,000)
        assert ("tool_result_budget" in c.fired) == (batch > 200_000), c.index
        # snip: more than 50 messages reach it (budget never changes the count)
        if len(ctx) <= 50:
            assert "snip_compact" not in c.fired
        else:
            assert "snip_compact" in c.fired or tr.step("snip_compact").vars.get("snipped") == 0
        # the summary: len(str(...)) of what reaches it is over 50,000
        before_summary = tr.step("compact_history").input
        assert ("compact_history" in c.fired) == (len(str(before_summary)) > 50_000), c.index
    assert "tool_result_budget" in res.calls[-1].fired and "compact_history" in res.calls[-1].fired


def test_calibration_adds_the_recorded_overhead(tmp_path):
    # usage says the API saw 50,000 tokens more than the recorded messages (system prompt, tools)
    msgs = pairs_session(10)
    meta = [MessageMeta(usage=Usage(input_tokens=50_000 + 1000 * i)) if m["role"] == "assistant" else MessageMeta()
            for i, m in enumerate(msgs)]
    conv = Conversation(msgs, meta=meta)
    res = replay(conv, engine=cc_engine(tmp_path, window=10**6))      # auto: usage present, threshold in tokens
    assert res.calibration is not None and "recorded overhead" in res.token_estimator
    for c in res.calls[:-1]:
        # LenTokens says 1000 per message; the context before assistant message j holds j messages
        assert c.tokens_before == c.real_tokens, c.index
    plain = replay(conv, engine=cc_engine(tmp_path, window=10**6), calibrate=False)
    assert plain.calls[3].tokens_before == 1000 * 7
    s08 = replay(conv, engine=s08_engine(tmp_path))                    # threshold in chars: not calibrated
    assert s08.calibration is None


# --------------------------------------------------------------- property: any valid conversation stays valid
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402


@st.composite
def conversations(draw):
    """Valid Anthropic conversations: text turns and batches of 1-3 parallel tool calls, some huge."""
    msgs = [{"role": "user", "content": "go"}]
    n = draw(st.integers(1, 40))
    k = 0
    for _ in range(n):
        if draw(st.integers(0, 4)) == 0:
            msgs.append({"role": "assistant", "content": [{"type": "text", "text": "ok " * draw(st.integers(1, 50))}]})
            msgs.append({"role": "user", "content": "next"})
            continue
        ids = [f"t{k + i}" for i in range(draw(st.integers(1, 3)))]
        k += len(ids)
        name = draw(st.sampled_from(["Read", "Bash", "Grep"]))
        msgs.append({"role": "assistant", "content": [{"type": "tool_use", "id": i, "name": name,
                                                       "input": {"file_path": f"/f{i}.py"}} for i in ids]})
        msgs.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": i,
             "content": "x" * draw(st.sampled_from([10, 300, 5000, 40_000, 120_000]))} for i in ids]})
    return msgs


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(msgs=conversations(), limit=st.sampled_from([2_000, 20_000, 200_000]), window=st.integers(40_000, 80_000),
       max_messages=st.integers(4, 30))
def test_any_valid_conversation_stays_valid_call_after_call(tmp_path, msgs, limit, window, max_messages):
    for eng in (Engine("s08", {"context_limit": limit, "max_messages": max_messages}, workspace=Workspace(tmp_path),
                       summarizer=FixedSummarizer("S")),
                Engine("claude_code", {"window": window, "snip_max_messages": max_messages if limit < 20_000 else 0},
                       workspace=Workspace(tmp_path), summarizer=FixedSummarizer("<summary>S</summary>"))):
        res = replay(msgs, engine=eng, keep_traces=True)
        assert len(res.calls) == sum(1 for m in msgs if m["role"] == "assistant") + 1
        for c, tr in zip(res.calls, res.traces):
            assert not rejected(check(tr.output)), (eng.strategy.name, c.index, check(tr.output)[:2])
            assert c.messages_after == len(tr.output) and c.tokens_after == tr.steps[-1].tokens_after
            assert c.summaries == sum(1 for s in tr.steps if s.summary and not s.error)
