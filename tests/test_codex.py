"""OpenAI Codex CLI: its rollout files load, and the strategy ``codex`` compacts as the CLI does.

The oracle is the corpus (../shared/corpus/codex-cli: sessions the real codex-cli 0.171.0 wrote against a scripted
model, with every request it sent in ``requests.jsonl``): the context Compactscope shows at each call is the
request the CLI sent for it (item by item, read from the raw request with the standard library), the replay with
the session's real settings fires where the CLI compacted and nowhere else, and the replay's own compaction
request and new history are the CLI's (up to the summary text). Loader units run on small rollouts made here."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from compactscope.core.model.contexts import call_context, call_indices
from compactscope.core.layers import codex_rules as R
from compactscope.core.loaders import LoadError, detect, load, not_transcript
from compactscope.core.loaders.side_files import REQUEST_LOG, TEXT_DOCUMENT
from compactscope.core.replay import replay
from compactscope.core.strategies import get, infer_params

from conftest import CORPUS

FACTS = CORPUS.parent / "corpus-facts" / "codex-cli.json"


def _sessions() -> list[Path]:
    """The corpus folders that hold a Codex rollout and the request log beside it (told by content)."""
    root = CORPUS / "codex-cli"
    if not root.is_dir():
        return []
    out = []
    for d in sorted(p for p in root.iterdir() if p.is_dir()):
        logs = [p for p in d.iterdir() if p.is_file() and not_transcript(p) == REQUEST_LOG]
        rollouts = [p for p in d.iterdir() if p.is_file() and not not_transcript(p) and detect(p) == "codex-rollout"]
        if len(logs) == 1 and len(rollouts) == 1:
            out.append(d)
    return out


SESSIONS = _sessions()


def _files(d: Path) -> tuple[Path, list[dict]]:
    rollout = next(p for p in d.iterdir() if p.is_file() and not not_transcript(p))
    log = next(p for p in d.iterdir() if p.is_file() and not_transcript(p))
    return rollout, [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line.strip()]


def _settings(d: Path) -> dict:
    facts = json.loads(FACTS.read_text(encoding="utf-8"))
    s = next(s for s in facts["sessions"] if s["session"] == d.name)
    return {"model_auto_compact_token_limit": s["config"]["auto_compact_limit"],
            "model_context_window": s["config"]["model_context_window"]}


# ---------------------------------------------------------------- both sides as neutral items
def _request_items(items: list) -> list[tuple]:
    """A request's input items, read as the Responses API defines them."""
    out = []
    for it in items:
        t = it.get("type")
        if t == "message":
            out.append(("message", it["role"], "".join(p.get("text", "") for p in it["content"])))
        elif t == "function_call":
            out.append(("call", it["call_id"], it["name"], it["arguments"]))
        elif t == "function_call_output":
            out.append(("output", it["call_id"], it["output"] if isinstance(it["output"], str)
                        else json.dumps(it["output"])))
        else:
            out.append((t,))
    return out


def _context_items(messages: list) -> list[tuple]:
    """Chat messages read back as the items they stand for."""
    out = []
    for m in messages:
        if m["role"] == "tool":
            out.append(("output", m["tool_call_id"], m["content"]))
            continue
        c = m.get("content")
        text = c if isinstance(c, str) else "".join(p.get("text", "") for p in c or [])
        if m["role"] != "assistant" or text:
            out.append(("message", m["role"], text))
        for tc in m.get("tool_calls") or []:
            out.append(("call", tc["id"], tc["function"]["name"], tc["function"]["arguments"]))
    return out


def _no_summary_text(items: list[tuple]) -> list[tuple]:
    """Items with every summary's text after Codex's prefix left out (the replay writes its own summaries)."""
    return [x[:2] + ("SUMMARY",) if x[0] == "message" and R.is_summary_text(x[2]) else x for x in items]


def _steps(reqs: list) -> list[dict]:
    return [r for r in reqs if r["kind"] == "step"]


def _compacted_before(reqs: list) -> list[int]:
    """The calls (numbered over the agent's own requests) before which the CLI sent a compaction request."""
    out, calls = [], 0
    for r in reqs:
        if r["kind"] == "summary":
            assert r["body"]["tools"] == [] and r["body"]["input"][-1]["content"][0]["text"].startswith(
                R.PROMPT_OPENING)
            assert json.loads(r["headers"]["x-codex-turn-metadata"])["request_kind"] == "compaction"
            out.append(calls)
        else:
            calls += 1
    return out


needs_corpus = pytest.mark.skipif(not SESSIONS, reason="../shared/corpus/codex-cli (Codex sessions with their request "
                                                       "logs) is not present")


@needs_corpus
@pytest.mark.parametrize("d", SESSIONS, ids=lambda d: d.name)
def test_the_context_at_every_call_is_the_request_the_cli_sent(corpus, d):
    rollout, reqs = _files(d)
    result = load(rollout)
    conv = result.main
    steps = _steps(reqs)
    assert result.format == "codex-rollout" and conv.extra["agent"] == {"name": "Codex CLI", "version": "0.171.0"}
    assert len(call_indices(conv)) == len(steps)
    after = _compacted_before(reqs)
    assert len(conv.events) == len(after) >= 1 and len(conv.segments) == len(after) + 1
    for k, req in enumerate(steps):
        ctx = call_context(conv, k)
        sent = _request_items(req["body"]["input"])
        # the first item is the base instructions, which the rollout keeps as the system prompt (its template: the
        # CLI trims sections for the tools it offers)
        assert sent[0][:2] == ("message", "developer") and sent[0][2].split("\n")[0] == conv.system.split("\n")[0]
        assert _context_items(ctx.messages) == sent[1:], f"call {k} (request {req['request_index']})"
        if k in after:           # the call after a compaction: its context is the compacted segment, opened by it
            assert ctx.extra["context"]["start"] == conv.segments[after.index(k) + 1]
            summary = ctx.messages[-1]
            assert R.is_summary(summary)
            assert conv.meta[conv.events[after.index(k)].summary_index].extra["compaction_summary"] is True


@needs_corpus
@pytest.mark.parametrize("d", SESSIONS, ids=lambda d: d.name)
def test_the_replay_with_the_real_settings_compacts_where_the_cli_did(corpus, d):
    rollout, reqs = _files(d)
    conv = load(rollout).main
    real = _compacted_before(reqs)
    r = replay(conv, "codex", _settings(d), keep_traces=True)
    assert [c.index for c in r.calls if c.compacted] == real
    assert [c.index for c in r.calls if c.real_boundary] == real
    steps = _steps(reqs)
    summaries = [x for x in reqs if x["kind"] == "summary"]
    for n, k in enumerate(real):
        trace = r.traces[k]
        by = {s.layer: s for s in trace.steps}
        # the compaction request is the CLI's: the same items, then the prompt (ours after its first sentence)
        step = by["codex_compact_request"]
        request = _context_items(step.messages[:step.vars["request_items"]])
        sent = _request_items(summaries[n]["body"]["input"])[1:]
        assert _no_summary_text(request[:-1]) == _no_summary_text(sent[:-1])
        assert request[-1][:2] == ("message", "user") and request[-1][2].startswith(R.PROMPT_OPENING)
        assert by["codex_compact_request"].vars["tools"] == 0
        # the new history is the CLI's next request, up to the summary text behind the same prefix
        built = _context_items(by["codex_build_history"].messages)
        nxt = _request_items(steps[k]["body"]["input"])[1:len(built) + 1]
        assert [x[:2] for x in built] == [x[:2] for x in nxt]
        assert _no_summary_text(built) == _no_summary_text(nxt)
        assert built[-1][2].startswith(R.SUMMARY_PREFIX + "\n") and nxt[-1][2].startswith(R.SUMMARY_PREFIX + "\n")


@needs_corpus
@pytest.mark.parametrize("d", SESSIONS, ids=lambda d: d.name)
def test_the_cli_replay_command_fires_at_the_clis_calls(corpus, d, capsys):
    from compactscope.app.cli import main
    rollout, reqs = _files(d)
    s = _settings(d)
    code = main(["replay", str(rollout), "--strategy", "codex", "--json", "--set",
                 f"model_auto_compact_token_limit={s['model_auto_compact_token_limit']}", "--set",
                 f"model_context_window={s['model_context_window']}"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    calls = out["calls"] if "calls" in out else out["runs"][0]["calls"]
    assert [c["index"] for c in calls if c.get("summaries")] == _compacted_before(reqs)


@needs_corpus
@pytest.mark.parametrize("d", SESSIONS, ids=lambda d: d.name)
def test_inferred_settings_reproduce_the_session(corpus, d, tmp_path, monkeypatch):
    monkeypatch.setenv("CODEX_HOME", str(tmp_path))          # no config.toml: read from the session alone
    rollout, reqs = _files(d)
    conv = load(rollout).main
    inf = infer_params("codex", conv)
    assert inf.params["model_context_window"] == _settings(d)["model_context_window"]
    lim = inf.params["model_auto_compact_token_limit"]
    assert "does not set it" in inf.reasons["model_auto_compact_token_limit"]
    r = replay(conv, "codex", inf.params)
    assert [c.index for c in r.calls if c.compacted] == _compacted_before(reqs)
    # a config.toml wins over the session, and says so
    (tmp_path / "config.toml").write_text(f"model_auto_compact_token_limit = {lim + 1}\n", encoding="utf-8")
    again = infer_params("codex", conv)
    assert again.params["model_auto_compact_token_limit"] == lim + 1
    assert str(tmp_path / "config.toml") in again.reasons["model_auto_compact_token_limit"]


@needs_corpus
def test_request_logs_and_readmes_are_not_transcripts(corpus):
    root = CORPUS / "codex-cli"
    readme = next(p for p in root.iterdir() if p.is_file())
    assert not_transcript(readme) == TEXT_DOCUMENT
    for d in SESSIONS:
        rollout, _ = _files(d)
        log = next(p for p in d.iterdir() if p.is_file() and p != rollout)
        assert not_transcript(rollout) == ""
        with pytest.raises(LoadError) as e:
            load(log)
        assert "request log" in str(e.value) and str(log) in str(e.value)


@needs_corpus
def test_info_check_run_and_report_open_a_rollout(corpus, capsys, tmp_path):
    from compactscope.app.cli import main
    rollout, _ = _files(SESSIONS[0])
    assert main(["info", str(rollout)]) == 0
    out = capsys.readouterr().out
    assert "codex-rollout" in out and "written by Codex CLI 0.171.0" in out and "compaction at message" in out
    assert main(["check", str(rollout)]) in (0, 1)
    capsys.readouterr()
    assert main(["run", str(rollout), "--call", "3"]) == 0
    out = capsys.readouterr().out
    assert "strategy codex" in out
    report = tmp_path / "r.html"
    assert main(["report", str(rollout), "--segment", "0", "--replay", "-o", str(report)]) == 0
    html = report.read_text(encoding="utf-8")
    assert "codex_build_history" in html and "compaction request: 10 items" in html and R.SUMMARY_PREFIX[:40] in html


# ---------------------------------------------------------------- loader units on rollouts made here
def _rec(t: str, payload: dict, ts: str = "2026-12-01T10:00:00.000Z", **kw) -> str:
    return json.dumps({"timestamp": ts, "type": t, "payload": payload, **kw})


def _msg(role: str, text: str, mid: str | None = None) -> dict:
    kind = "output_text" if role == "assistant" else "input_text"
    m = {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}
    if mid:
        m["id"] = mid
    return m


def _usage(total: int, inp: int | None = None) -> dict:
    inp = total - 10 if inp is None else inp
    return {"input_tokens": inp, "cached_input_tokens": 0, "output_tokens": total - inp, "total_tokens": total}


def _session(*lines: str) -> list[str]:
    head = [_rec("session_meta", {"id": "s-1", "cwd": "/w", "cli_version": "9.9.9", "model_provider": "fake",
                                  "base_instructions": {"text": "You are Codex.\nBe brief."}}),
            _rec("turn_context", {"model": "m-1", "cwd": "/w"}),
            _rec("response_item", _msg("developer", "<permissions instructions>p</permissions instructions>", "d1")),
            _rec("response_item", _msg("user", "<environment_context>\n  <cwd>/w</cwd>\n</environment_context>",
                                       "e1")),
            _rec("response_item", _msg("user", "fix the bug", "u1"))]
    return head + list(lines)


def _tool_round(k: int, total: int, output: str = "ok") -> list[str]:
    return [_rec("response_item", {"type": "reasoning", "summary": [{"type": "summary_text", "text": f"think {k}"}],
                                   "encrypted_content": "x" * 40}),
            _rec("response_item", {"type": "function_call", "name": "exec_command", "call_id": f"c{k}",
                                   "arguments": json.dumps({"cmd": f"ls {k}"})}),
            _rec("token_usage_record", {"usage": _usage(total)}),
            _rec("response_item", {"type": "function_call_output", "call_id": f"c{k}", "output": output}),
            _rec("event_msg", {"type": "token_count", "info": {"last_token_usage": _usage(total),
                                                               "model_context_window": 95_000}})]


def _write(tmp_path: Path, lines: list[str], name: str = "session.jsonl") -> Path:
    p = tmp_path / name
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return p


def test_a_rollout_maps_items_onto_chat_messages(tmp_path):
    lines = _session(*_tool_round(0, 500), *_tool_round(1, 700, output="x" * 300),
                     _rec("response_item", {"type": "custom_tool_call", "name": "apply_patch", "call_id": "p1",
                                            "input": "*** Begin Patch"}),
                     _rec("token_usage_record", {"usage": _usage(900)}),
                     _rec("response_item", {"type": "custom_tool_call_output", "call_id": "p1",
                                            "output": {"content": "Done", "success": True}}),
                     _rec("response_item", _msg("assistant", "fixed")),
                     _rec("token_usage_record", {"usage": _usage(950)}))
    res = load(_write(tmp_path, lines, "any-name.txt"))      # the content tells the format, not the name
    conv = res.main
    assert res.format == "codex-rollout" and conv.dialect == "openai" and conv.model == "m-1"
    assert conv.system == "You are Codex.\nBe brief." and conv.extra["agent"] == {"name": "Codex CLI", "version": "9.9.9"}
    assert conv.extra["model_context_window"] == 95_000 and conv.extra["cwd"] == "/w"
    roles = [m["role"] for m in conv.messages]
    assert roles == ["developer", "user", "user", "assistant", "tool", "assistant", "tool", "assistant", "tool",
                     "assistant"]
    a0 = conv.messages[3]
    assert a0["reasoning_content"] == "think 0" and a0["tool_calls"][0]["id"] == "c0"
    assert conv.meta[3].usage.input_tokens == 490 and conv.meta[3].extra["total_tokens"] == 500
    assert conv.meta[3].extra["encrypted_reasoning_chars"] == 40
    assert conv.messages[7]["tool_calls"][0]["function"] == {"name": "apply_patch", "arguments": "*** Begin Patch"}
    assert conv.meta[7].extra["codex_calls"] == {"p1": "custom_tool_call"}
    assert conv.messages[8] == {"role": "tool", "tool_call_id": "p1", "content": "Done"}
    assert conv.messages[9]["content"] == "fixed" and conv.meta[9].extra["total_tokens"] == 950
    assert len(call_indices(conv)) == 4 and conv.segments == [0] and not res.problems
    # each message says where it came from: the lines of its response
    assert conv.meta[3].provenance.line == 6 and conv.meta[3].provenance.end_line == 7


def test_bad_lines_are_problems_with_their_line_and_the_rest_loads(tmp_path):
    lines = _session(*_tool_round(0, 500))
    lines[5:5] = ['{"timestamp": "x", "type": "response_item", "payload": {', "[1, 2]",
                  json.dumps({"type": "response_item"}), _rec("mystery_record", {"a": 1}),
                  _rec("response_item", {"type": "hologram_call", "id": "h"}),
                  _rec("response_item", {"type": "message", "content": []})]
    p = _write(tmp_path, lines)
    res = load(p)
    where = {(q.line, q.severity): q.text for q in res.problems}
    assert where[(6, "error")].startswith("broken JSON")
    assert where[(7, "error")].startswith("this line is not a JSON object")
    assert "without a \"type\" and a \"payload\"" in where[(8, "error")]
    assert "'mystery_record' is not one Compactscope knows" in where[(9, "warning")]
    assert "'hologram_call' is not one Compactscope knows" in where[(10, "warning")]
    assert "without a role" in where[(11, "warning")]
    assert all(q.path == str(p) for q in res.problems)
    assert [m["role"] for m in res.main.messages] == ["developer", "user", "user", "assistant", "tool"]


def test_a_rollout_without_messages_is_a_clear_error(tmp_path):
    p = _write(tmp_path, [_rec("session_meta", {"id": "s"}), _rec("event_msg", {"type": "task_started"})])
    with pytest.raises(LoadError) as e:
        load(p)
    assert str(p) in str(e.value) and "no message" in str(e.value)


def _compacted(replacement: list | None, reply: str = "SUM") -> list[str]:
    message = R.SUMMARY_PREFIX + "\n" + reply
    out = [_rec("response_item", _msg("assistant", reply, "r1"), metadata={"compaction_output": True}),
           _rec("token_usage_record", {"usage": _usage(4000, 3990)}),
           _rec("compacted", {"message": message, **({"replacement_history": replacement} if replacement is not None
                                                      else {})}),
           _rec("event_msg", {"type": "token_count", "info": {"last_token_usage": {"input_tokens": 0,
                                                                                   "total_tokens": 1234}}}),
           _rec("event_msg", {"type": "item_completed", "item": {"type": "ContextCompaction", "id": "cc1"}})]
    return out


def test_a_compacted_line_opens_a_segment_with_its_replacement_history(tmp_path):
    repl = [_msg("developer", "<permissions instructions>p</permissions instructions>", "d2"),
            _msg("user", "<environment_context>\n  <cwd>/w</cwd>\n</environment_context>", "e2"),
            _msg("user", "fix the bug", "u1"), _msg("user", R.SUMMARY_PREFIX + "\nSUM", "s1")]
    lines = _session(*_tool_round(0, 500), *_tool_round(1, 700), *_compacted(repl), *_tool_round(2, 1500))
    conv = load(_write(tmp_path, lines)).main
    assert conv.segments == [0, 7]
    ev = conv.events[0]
    assert (ev.kind, ev.message_index, ev.summary_index, ev.trigger, ev.post_tokens) == ("codex", 7, 10, "auto", 1234)
    assert ev.extra["reported_total_before"] == 700 and ev.pre_tokens == 700 + ev.extra["estimated_since"]
    assert ev.extra["summary_call"]["usage"].input_tokens == 3990 and ev.extra["context_compaction_item"] == "cc1"
    assert ev.extra["messages_before"] == 7 and ev.extra["messages_after"] == 4
    assert [conv.meta[i].extra.get("copy_of") for i in range(7, 11)] == [0, 1, 2, None]
    assert conv.meta[10].extra["compaction_summary"] is True
    # the compaction's own answer is not a call of the agent: 3 calls, the one after the compaction in segment 1
    assert len(call_indices(conv)) == 3
    ctx = call_context(conv, 2)
    assert [m["role"] for m in ctx.messages] == ["developer", "user", "user", "user"]
    assert conv.meta[11].usage is not None and conv.meta[11].extra["total_tokens"] == 1500


def test_a_compacted_line_without_a_history_gets_the_one_codex_rebuilds(tmp_path):
    lines = _session(*_tool_round(0, 500), *_compacted(None))
    conv = load(_write(tmp_path, lines)).main
    seg = conv.segment(1)
    assert [R.text_of(m)[:12] for m in seg] == ["<permissions", "<environment", "fix the bug", R.SUMMARY_PREFIX[:12]]
    assert conv.events[0].extra["reconstructed"] is True


def test_usage_comes_from_token_counts_when_there_are_no_usage_records(tmp_path):
    lines = [x for x in _session(*_tool_round(0, 500), *_tool_round(1, 800)) if '"token_usage_record"' not in x]
    conv = load(_write(tmp_path, lines)).main
    assert [conv.meta[i].extra.get("total_tokens") for i in call_indices(conv)] == [500, 800]


# ---------------------------------------------------------------- the rules and the layers
def test_the_limit_is_the_configured_one_capped_at_90_percent_of_the_window():
    assert R.limit(9000, 200_000) == 9000
    assert R.limit(500_000, 200_000) == 180_000
    assert R.limit(0, 200_000) == 180_000 and R.limit(-5, 272_000) == 244_800
    assert R.limit(9000, 0) == 9000 and R.limit(None, None) is None
    st = get("codex")
    assert st.threshold_value(st.resolve({"model_auto_compact_token_limit": 9000})) == 9000
    assert st.threshold_value(st.resolve({})) == 244_800
    assert st.drag_threshold(12_345, st.resolve({}))["model_auto_compact_token_limit"] == 12_345


def test_user_prompts_are_kept_newest_first_within_the_budget():
    msgs = [{"role": "user", "content": "a" * 400}, {"role": "assistant", "content": "x"},
            {"role": "user", "content": "<environment_context>cwd</environment_context>"},
            {"role": "user", "content": R.SUMMARY_PREFIX + "\nold"},
            {"role": "user", "content": "b" * 40}, {"role": "user", "content": "c" * 80}]
    picked = R.select_user_messages(msgs, budget=50)
    assert [(i, cut) for i, _, cut in picked] == [(0, True), (4, False), (5, False)]
    assert picked[0][1].startswith("a" * 40) and "\u202680 tokens truncated\u2026" in picked[0][1]
    assert R.approx_tokens(picked[0][1].split("\u2026")[0]) == 10
    assert R.select_user_messages(msgs, budget=30) == [(4, "b" * 40, False), (5, "c" * 80, False)]
    assert [i for i, _, _ in R.select_user_messages(msgs, budget=20)] == [5]
    assert R.truncate_middle("abcdef", 0) == "\u20262 tokens truncated\u2026"


def _engine_run(messages, params, meta=None, system="sys"):
    from compactscope.core.model.conversation import Conversation, MessageMeta, Usage
    from compactscope.core.pipeline.engine import Engine
    metas = []
    for m in messages:
        total = (meta or {}).get(id(m))
        metas.append(MessageMeta(usage=Usage(total - 10, 10) if total else None,
                                 extra={"total_tokens": total} if total else {}))
    conv = Conversation(messages, "openai", system, None, None, "t", "", "codex-rollout", metas)
    return Engine("codex", params).run(messages, conversation=conv)


def _turns(prompts: int) -> tuple[list, dict]:
    msgs: list = [{"role": "developer", "content": "<permissions instructions>p</permissions instructions>"},
                  {"role": "user", "content": "<environment_context>c</environment_context>"}]
    usage = {}
    for k in range(prompts):
        msgs.append({"role": "user", "content": f"prompt {k}"})
        a = {"role": "assistant", "content": None, "tool_calls": [
            {"id": f"t{k}", "type": "function", "function": {"name": "exec_command", "arguments": "{}"}}]}
        msgs += [a, {"role": "tool", "tool_call_id": f"t{k}", "content": "y" * 400}]
        usage[id(a)] = 1000 + 100 * k
    return msgs, usage


def test_the_check_adds_the_estimate_since_the_last_reported_total():
    msgs, usage = _turns(2)
    tr = _engine_run(msgs, {"model_auto_compact_token_limit": 5000})
    check = tr.steps[0]
    since = R.message_tokens(msgs[-1])
    assert check.vars["phase"] == "mid_turn" and check.vars["last_reported_total"] is None
    tr = _engine_run(msgs, {"model_auto_compact_token_limit": 1100 + since}, usage)
    check = tr.steps[0]
    assert check.vars["total_usage_tokens"] == 1100 + since and check.triggered
    tr = _engine_run(msgs, {"model_auto_compact_token_limit": 1100 + since + 1}, usage)
    assert not tr.steps[0].triggered and tr.output is msgs
    ended = msgs + [{"role": "assistant", "content": "done"}]
    assert _engine_run(ended, {"model_auto_compact_token_limit": 10}, usage).steps[0].vars["phase"] is None


def test_mid_turn_the_initial_context_goes_before_the_last_prompt():
    msgs, usage = _turns(3)
    tr = _engine_run(msgs, {"model_auto_compact_token_limit": 1000}, usage)
    by = {s.layer: s for s in tr.steps}
    req = by["codex_compact_request"].messages
    assert req[:-1] == msgs and req[-1]["content"] == R.COMPACT_PROMPT and by["codex_compact_request"].summary
    out = tr.output
    assert [R.text_of(m)[:8] for m in out] == ["prompt 0", "prompt 1", "<permiss", "<environ", "prompt 2",
                                               R.SUMMARY_PREFIX[:8]]
    assert out[0] is msgs[2] and out[2] is msgs[0]        # kept messages are shared, not copied
    assert all(m.get("role") != "tool" and not m.get("tool_calls") for m in out)
    assert R.is_summary(out[-1])


def test_before_a_turn_the_new_prompt_follows_the_compaction():
    msgs, usage = _turns(2)
    msgs = msgs + [{"role": "assistant", "content": "done"}, {"role": "user", "content": "and now this"}]
    usage[id(msgs[-2])] = 9000
    tr = _engine_run(msgs, {"model_auto_compact_token_limit": 5000}, usage)
    by = {s.layer: s for s in tr.steps}
    assert by["codex_token_check"].vars["phase"] == "pre_turn"
    assert by["codex_compact_request"].vars["request_items"] == len(msgs)      # the history + the prompt
    out = tr.output
    # as codex-cli 0.171.0 compacts before a turn: the initial context before the last kept prompt, then the summary,
    # then the new prompt
    assert [R.text_of(m)[:8] for m in out] == ["prompt 0", "<permiss", "<environ", "prompt 1", R.SUMMARY_PREFIX[:8],
                                               "and now "]


def test_a_rollout_being_written_is_followed_through_its_compaction(tmp_path):
    from compactscope.core.live.follow import Follower
    repl = [_msg("developer", "<permissions instructions>p</permissions instructions>"),
            _msg("user", "<environment_context>\n  <cwd>/w</cwd>\n</environment_context>"),
            _msg("user", "fix the bug", "u1"), _msg("user", R.SUMMARY_PREFIX + "\nSUM")]
    lines = _session(*_tool_round(0, 500), *_compacted(repl), *_tool_round(1, 900))
    cut = next(i for i, x in enumerate(lines) if '"compacted"' in x)
    p = tmp_path / "rollout.jsonl"
    p.write_text("\n".join(lines[:cut]) + "\n" + lines[cut][:40], encoding="utf-8")    # a half-written line
    f = Follower(p)
    first = f.poll(force=True)
    assert first.result is not None and first.partial and not first.result.main.events
    assert not first.result.problems                 # the unfinished line is not reported as broken
    with p.open("a", encoding="utf-8") as out:
        out.write(lines[cut][40:] + "\n" + "\n".join(lines[cut + 1:]) + "\n")
    later = f.poll()
    conv = later.result.main
    assert len(conv.events) == 1 and conv.segments == [0, 5] and len(call_indices(conv)) == 2


def test_right_after_a_compaction_the_turn_goes_on_without_a_check():
    msgs, _ = _turns(1)
    compacted = msgs[:3] + [{"role": "user", "content": R.SUMMARY_PREFIX + "\nS"}]
    check = _engine_run(compacted, {"model_auto_compact_token_limit": 1}).steps[0]
    assert check.vars["phase"] is None and not check.triggered and "just compacted" in check.note
    nxt = compacted + [{"role": "user", "content": "a new request"}]
    check = _engine_run(nxt, {"model_auto_compact_token_limit": 1}).steps[0]
    assert check.vars["phase"] == "pre_turn" and check.triggered


def test_before_a_turn_the_new_input_is_not_in_the_figure_yet():
    """codex-cli 0.171.0 checks before it records the new prompt (a resumed session at 7,000 tokens: the CLI did not
    compact at 6,975 + the prompt's 27)."""
    msgs, usage = _turns(1)
    msgs = msgs + [{"role": "assistant", "content": "done"}, {"role": "user", "content": "and now this"}]
    usage[id(msgs[-2])] = 9000
    check = _engine_run(msgs, {"model_auto_compact_token_limit": 9001}, usage).steps[0]
    assert check.vars["phase"] == "pre_turn" and check.vars["total_usage_tokens"] == 9000 and not check.triggered
    assert _engine_run(msgs, {"model_auto_compact_token_limit": 9000}, usage).steps[0].triggered


def test_state_markers_are_read_past_and_the_bare_era_loads(tmp_path):
    lines = _session(*_tool_round(0, 500))
    lines.insert(3, json.dumps({"record_type": "state"}))
    res = load(_write(tmp_path, lines))
    assert not res.problems and len(call_indices(res.main)) == 1
    # codex-cli before about September 2025: a bare header line, then the items without envelope
    bare = [json.dumps({"id": "old-1", "timestamp": "2025-08-01T10:00:00Z", "instructions": "Old instructions",
                        "git": {"branch": "main"}}),
            json.dumps({"record_type": "state"}),
            json.dumps(_msg("user", "<environment_context>\n  <cwd>/w</cwd>\n</environment_context>")),
            json.dumps(_msg("user", "list the files")),
            json.dumps({"type": "function_call", "name": "shell", "call_id": "c1",
                        "arguments": json.dumps({"command": ["ls"]})}),
            json.dumps({"type": "function_call_output", "call_id": "c1", "output": "a.py"}),
            json.dumps({"record_type": "state"}),
            json.dumps(_msg("assistant", "one file"))]
    p = _write(tmp_path, bare, "old.jsonl")
    res = load(p)
    conv = res.main
    assert detect(p) == "codex-rollout" and not res.problems
    assert conv.system == "Old instructions" and conv.title == "old-1"
    assert [m["role"] for m in conv.messages] == ["user", "user", "assistant", "tool", "assistant"]
    assert conv.messages[2]["tool_calls"][0]["function"]["name"] == "shell"
    assert conv.messages[4]["content"] == "one file"


@needs_corpus
def test_the_window_model_opens_a_rollout_at_its_last_context_and_compacts_segment_0(corpus, tmp_path, monkeypatch):
    from compactscope.core.session.model import Session
    from compactscope.core.files.workspace import Workspace
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "no-codex-home"))
    rollout, reqs = _files(SESSIONS[-1])
    s = Session(Workspace(tmp_path / "ws"))
    assert s.source.open(str(rollout)) and s.error is None
    assert s.setup.strategy.name == "codex" and s.source.segment == len(_compacted_before(reqs))       # the last context
    assert s.setup.params["model_context_window"] == 200_000 and "inferred" in s.view.status_text()
    assert [x.label for x in s.view.stages()] == ["Original", "L1 token check", "L2 compact request", "L3 new history"]
    s.source.set_segment(0)                      # the context the CLI compacted: the pipeline compacts it too
    assert [x.status for x in s.view.stages()[1:]] == ["unchanged", "changed", "changed"]
    assert s.view.chart().threshold == s.setup.params["model_auto_compact_token_limit"] and s.view.chart().unit == "tokens"


def test_a_system_part_without_string_text_counts_no_tokens_and_never_fails_the_run():
    """(Found by the fuzz test: a system block whose text is None made the codex token estimate raise.)"""
    from compactscope.core.layers.codex import system_tokens
    from compactscope.core.pipeline.engine import run_pipeline
    assert system_tokens([{"type": "text", "text": None}, {"type": "text", "text": "abcdefgh"}, {"text": 5}]) == 2
    trace = run_pipeline([{"role": "user", "content": "hi"}], "codex", system=[{"type": "text", "text": None}])
    assert not any(s.error for s in trace.steps) and trace.steps[-1].tokens_after > 0
