"""Gemini CLI: its session JSONL loads, and the gemini_cli strategy compresses where the real CLI did.

The oracle is the request log the CLI's fake server wrote beside each corpus session (``requests.jsonl``):
the request after a compression is what the CLI kept, and the summary requests say where it compressed.
The loader tests use small sessions written inline.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from compactscope.core.model.contexts import call_context
from compactscope.core.loaders import LoadError, load
from compactscope.core.replay import replay
from compactscope.core.strategies import infer_params

from conftest import CORPUS

GEMINI = CORPUS / "gemini-cli"
FACTS = CORPUS.parent / "corpus-facts" / "gemini-cli.json"
SESSIONS = sorted(GEMINI.glob("*/session-*.jsonl")) if GEMINI.is_dir() else []


def _requests(session: Path) -> list[dict]:
    return [json.loads(line) for line in (session.parent / "requests.jsonl").read_text().splitlines() if line.strip()]


def _real_settings(session: Path) -> dict:
    facts = json.loads(FACTS.read_text())
    row = next(s for s in facts["sessions"] if s["session"] == session.parent.name)
    return row["config"]


def _compressed_calls(reqs: list[dict]) -> list[tuple[int, dict]]:
    """(the model call, the step request) of each step request that a compression's summary requests
    preceded: calls are the step requests in order (one recorded model answer each)."""
    out, call, pending = [], 0, False
    for r in reqs:
        if r["kind"] == "summary":
            pending = True
        elif r["kind"] == "step":
            if pending:
                out.append((call, r))
            pending = False
            call += 1
    return out


# the items of a context: (role, kind, text), one per part, whatever content the CLI merged them into
def _request_items(contents: list) -> list[tuple]:
    items = []
    for c in contents:
        for p in c["parts"]:
            if "text" in p:
                items.append((c["role"], "text", p["text"]))
            elif "functionCall" in p:
                fc = p["functionCall"]
                items.append((c["role"], "call", fc["name"], json.dumps(fc.get("args") or {}, sort_keys=True)))
            elif "functionResponse" in p:
                fr = p["functionResponse"]
                items.append((c["role"], "response", fr["name"], fr["response"].get("output")))
    return items


def _context_items(messages: list) -> list[tuple]:
    items, names = [], {}
    for m in messages:
        role = "model" if m["role"] == "assistant" else "user"
        blocks = m["content"] if isinstance(m["content"], list) else [{"type": "text", "text": m["content"]}]
        for b in blocks:
            if b["type"] == "text":
                items.append((role, "text", b["text"]))
            elif b["type"] == "tool_use":
                names[b["id"]] = b["name"]
                items.append((role, "call", b["name"], json.dumps(b["input"], sort_keys=True)))
            elif b["type"] == "tool_result":
                items.append((role, "response", names.get(b["tool_use_id"]), b["content"]))
    return items


def _shape(messages: list) -> list[tuple]:
    return [("model" if m["role"] == "assistant" else "user",
             [{"text": "text", "tool_use": "functionCall", "tool_result": "functionResponse"}[b["type"]]
              for b in m["content"]]) for m in messages]


@pytest.mark.skipif(not SESSIONS, reason="../shared/corpus/gemini-cli is not present")
@pytest.mark.parametrize("session", SESSIONS, ids=lambda p: p.parent.name)
def test_the_context_after_each_compression_is_what_the_cli_sent(session):
    conv = load(session).main
    reqs = _requests(session)
    compressed = _compressed_calls(reqs)
    facts = json.loads(FACTS.read_text())
    row = next(s for s in facts["sessions"] if s["session"] == session.parent.name)
    assert len(compressed) == row["n_compactions"] == len(conv.events)
    assert len(conv.calls()) == sum(1 for r in reqs if r["kind"] == "step")
    for (call, req), event in zip(compressed, conv.events, strict=True):
        shown = call_context(conv, call)
        want = _request_items(req["body"]["contents"])
        assert _context_items(shown.messages) == want, f"call {call}"
        assert len(want) > 3
        # as many messages as the CLI sent contents, of the same roles and parts
        assert _shape(shown.messages) == [(c["role"], [next(iter(p)) for p in c["parts"]])
                                          for c in req["body"]["contents"]]
        assert len(shown.messages) == next(c["items_after_compaction"] for c in row["compactions"]
                                           if c["next_request_index"] == req["request_index"])
        # the summary is marked, and is the snapshot the CLI sent, in one content with the session context
        summary = conv.messages[event.summary_index]
        assert conv.meta[event.summary_index].extra.get("compaction_summary") is True
        assert summary["content"][1]["text"] == req["body"]["contents"][0]["parts"][1]["text"]
        assert summary["content"][1]["text"].startswith("<state_snapshot>")
        # the summary requests held exactly the compressed part: what the new segment no longer holds
        ask = next(r for r in reqs if r["kind"] == "summary" and r["request_index"] < req["request_index"]
                   and not any(x["kind"] == "step" and r["request_index"] < x["request_index"] < req["request_index"]
                               for x in reqs))
        assert len(ask["body"]["contents"]) - 1 == next(
            c["items_compressed"] for c in row["compactions"] if c["next_request_index"] == req["request_index"])


def _replay_with_home(session, tmp_path, monkeypatch, threshold):
    home = tmp_path / "home"
    (home / ".gemini").mkdir(parents=True)
    (home / ".gemini" / "settings.json").write_text(json.dumps({"model": {"compressionThreshold": threshold}}))
    monkeypatch.setenv("HOME", str(home))
    conv = load(session).main
    inferred = infer_params("gemini_cli", conv)
    assert inferred.params["compression_threshold"] == threshold
    assert "settings.json" in inferred.reasons["compression_threshold"]
    return conv, inferred, replay(conv, "gemini_cli", inferred.params)


@pytest.mark.skipif(not SESSIONS, reason="../shared/corpus/gemini-cli is not present")
@pytest.mark.parametrize("session", SESSIONS, ids=lambda p: p.parent.name)
def test_the_replay_compresses_where_the_cli_did_and_nowhere_else(session, tmp_path, monkeypatch):
    cfg = _real_settings(session)
    conv, inferred, res = _replay_with_home(session, tmp_path, monkeypatch, cfg["compression_threshold"])
    assert inferred.params["token_limit"] == cfg["token_limit"]
    # the first whole token count that is not under threshold x limit (the facts write it rounded down)
    assert res.threshold - 1 < cfg["compression_threshold"] * cfg["token_limit"] <= res.threshold
    assert abs(res.threshold - cfg["trigger_tokens"]) <= 1
    real = [c for c, _ in _compressed_calls(_requests(session))]
    simulated = [c.index for c in res.calls if c.compacted]
    assert simulated == real
    assert [e["call"] for e in res.real_events] == real
    # each simulated compression kept what the CLI kept: as many messages, the acknowledgement second to the
    # summary; the summary came from the summary request and its verification
    for call in real:
        rec = res.calls[call]
        assert rec.summaries == 1
        assert rec.messages_after == len(call_context(conv, call).messages)


@pytest.mark.skipif(not SESSIONS, reason="../shared/corpus/gemini-cli is not present")
def test_without_settings_the_threshold_is_inferred_from_where_the_session_compressed(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    for session in SESSIONS:
        conv = load(session).main
        inferred = infer_params("gemini_cli", conv)
        thr = inferred.params["compression_threshold"]
        assert "compressed at" in inferred.reasons["compression_threshold"]
        real = [c for c, _ in _compressed_calls(_requests(session))]
        res = replay(conv, "gemini_cli", inferred.params)
        assert [c.index for c in res.calls if c.compacted] == real, thr


# ------------------------------------------------------------------ the loader on small inline sessions
HEADER = {"sessionId": "s1", "projectHash": "h", "startTime": "2026-12-01T10:00:00Z",
          "lastUpdated": "2026-12-01T10:00:00Z", "kind": "main"}
CONTEXT = {"id": "ctx", "timestamp": "2026-12-01T10:00:00Z", "type": "user",
           "content": [{"text": "<session_context>\nThis is the Gemini CLI."}]}


def _user(i, text):
    return {"id": f"u{i}", "timestamp": "2026-12-01T10:00:01Z", "type": "user", "content": [{"text": text}]}


def _model(i, text="", calls=(), tokens=100):
    rec = {"id": f"m{i}", "timestamp": "2026-12-01T10:00:02Z", "type": "gemini", "content": text, "thoughts": [],
           "tokens": {"input": tokens, "output": 5, "cached": 0, "thoughts": 0, "tool": 0, "total": tokens + 5},
           "model": "gemini-2.5-pro"}
    if calls:
        rec["toolCalls"] = [{"id": c, "name": "read_file", "args": {"file_path": "a.txt"},
                             "result": [{"functionResponse": {"id": c, "name": "read_file",
                                                              "response": {"output": "A"}}}], "status": "success"}
                            for c in calls]
    return rec


def _response(i, call, output="A"):
    return {"id": f"r{i}", "timestamp": "2026-12-01T10:00:03Z", "type": "user",
            "content": [{"functionResponse": {"id": call, "name": "read_file", "response": {"output": output}}}]}


def _set_history(*recs):
    return {"$set": {"messages": list(recs)}}


def _in_api_shape(i, role, part):
    return {"id": f"h{i}", "timestamp": "2026-12-01T10:00:04Z", "type": role, "content": [part]}


def _write(tmp_path, lines, name="s.jsonl") -> Path:
    p = tmp_path / name
    p.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines))
    return p


def _first_turn():
    return [HEADER, _set_history(CONTEXT), _user(1, "read a.txt"), {"$set": {"lastUpdated": "x"}},
            _model(1, tokens=100), _model(1, calls=["c1"], tokens=100), _response(1, "c1"),
            _model(2, "a.txt holds A", tokens=120)]


def test_a_session_loads_with_its_calls_usage_and_the_model_record_written_twice(tmp_path):
    conv = load(_write(tmp_path, _first_turn())).main
    assert conv.format == "gemini-cli-jsonl" and conv.model == "gemini-2.5-pro"
    # the session context and the prompt are one content, as the CLI sends them
    assert [m["role"] for m in conv.messages] == ["user", "assistant", "user", "assistant"]
    assert [b["text"] for b in conv.messages[0]["content"]] == ["<session_context>\nThis is the Gemini CLI.",
                                                                 "read a.txt"]
    assert conv.meta[0].extra["lines"] == [2, 3]
    assert conv.messages[1]["content"] == [{"type": "tool_use", "id": "c1", "name": "read_file",
                                            "input": {"file_path": "a.txt"}}]
    # once: the user record, not toolCalls.result too
    assert conv.messages[2]["content"] == [{"type": "tool_result", "tool_use_id": "c1", "content": "A"}]
    assert [m.usage.context_tokens for m in conv.meta if m.usage] == [100, 120]
    assert conv.meta[1].provenance.line == 6                       # the record's last version
    assert conv.segments == [0] and not conv.events
    assert conv.extra["agent"]["name"] == "Gemini CLI"


def test_a_resume_is_no_compression_and_a_compression_is_a_segment_with_its_summary(tmp_path):
    resume = [HEADER, _set_history(CONTEXT), {"$set": {"sessionId": "s1"}},
              _set_history(CONTEXT, _in_api_shape(1, "user", {"text": "read a.txt"}),
                           _in_api_shape(2, "gemini", {"functionCall": {"id": "c1", "name": "read_file",
                                                                        "args": {"file_path": "a.txt"}}}),
                           _in_api_shape(3, "user", {"functionResponse": {"id": "c1", "name": "read_file",
                                                                          "response": {"output": "A"}}}),
                           _in_api_shape(4, "user", {"functionResponse": {"id": "c1", "name": "read_file",
                                                                          "response": {"output": "A"}}}),
                           _in_api_shape(5, "gemini", {"text": "a.txt holds A"})),
              _user(2, "and b.txt?"), _model(3, calls=["c2"], tokens=300)]
    compression = [{"$set": {"sessionId": "s1"}},
                   _set_history(CONTEXT, _in_api_shape(6, "user", {"text": "<state_snapshot>\nread a.txt: A"}),
                                _in_api_shape(7, "gemini", {"text": "Got it. Thanks for the additional context!"}),
                                _in_api_shape(8, "user", {"text": "and b.txt?"}),
                                _in_api_shape(9, "gemini", {"functionCall": {"id": "c2", "name": "read_file",
                                                                             "args": {"file_path": "a.txt"}}})),
                   _response(2, "c2", "B"), _model(4, "b.txt holds B", tokens=150)]
    conv = load(_write(tmp_path, _first_turn() + resume)).main
    assert not conv.events and conv.segments == [0]                # a resume alone: no compression
    assert conv.extra["resumes"][0]["duplicated_tool_responses"] == 1
    assert conv.meta[4].extra.get("after_resume") is True          # the prompt after it
    conv = load(_write(tmp_path, _first_turn() + resume + compression, "c.jsonl")).main
    assert len(conv.events) == 1 and conv.segments == [0, 6]
    e = conv.events[0]
    assert e.pre_tokens == 300 and e.summary_index == 6
    assert [b["text"] for b in conv.messages[6]["content"]] == ["<session_context>\nThis is the Gemini CLI.",
                                                                 "<state_snapshot>\nread a.txt: A"]
    assert conv.meta[6].extra["compaction_summary"] is True
    extras = [conv.meta[i].extra for i in range(6, 10)]
    assert [x.get("copy_of") for x in extras] == [None, None, 4, 5]   # context + summary, ack, kept prompt, call
    assert conv.messages[10] == {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c2",
                                                              "content": "B"}]}
    assert [m["role"] for m in conv.segment(1)] == ["user", "assistant", "user", "assistant", "user", "assistant"]


def test_broken_and_unknown_lines_are_named_by_line_and_skipped(tmp_path):
    lines = _first_turn()
    lines[3:3] = ['{"id": "x", "type": "user", "content": [{"text": "cut', {"weird": 1},
                  {"id": "m9", "type": "thought", "content": "?"}, [1, 2]]
    lines.append({"id": "m2", "type": "gemini", "content": "later", "newKey": {"a": 1}, "tokens": "many"})
    p = _write(tmp_path, lines)
    res = load(p)
    conv = res.main
    where = {pr.line: pr.text for pr in res.problems}
    assert set(where) == {4, 5, 6, 7} and all(pr.path == str(p) for pr in res.problems)
    assert "broken JSON" in where[4] and "not a Gemini CLI session record" in where[5]
    assert "unknown type 'thought'" in where[6] and "list" in where[7]
    # replaced in place, the unknown key kept
    assert conv.messages[-1] == {"role": "assistant", "content": [{"type": "text", "text": "later"}]}
    assert conv.meta[-1].extra["newKey"] == {"a": 1} and conv.meta[-1].usage is None


def test_a_file_with_a_header_and_nothing_else_says_so(tmp_path):
    with pytest.raises(LoadError) as e:
        load(_write(tmp_path, [HEADER, {"$set": {"lastUpdated": "x"}}]))
    assert "no user or model message" in str(e.value) and "s.jsonl" in str(e.value)


def test_a_rewind_drops_the_messages_after_it(tmp_path):
    lines = _first_turn() + [_user(3, "again"), _model(5, "ok", tokens=130), {"$rewindTo": "u3"},
                             _user(4, "instead"), _model(6, "fine", tokens=131)]
    conv = load(_write(tmp_path, lines)).main
    texts = [b.get("text") for m in conv.messages if m["role"] == "user" for b in m["content"]]
    assert "again" not in texts and texts[-1] == "instead"


# ------------------------------------------------------------------ the layers on small inputs
def test_split_point_is_the_first_user_text_after_seventy_percent():
    from compactscope.core.layers.gemini_cli import split_point
    big = {"role": "user", "parts": [{"functionResponse": {"name": "f", "response": {"output": "x" * 1000}}}]}
    contents = [{"role": "user", "parts": [{"text": "a"}]}, {"role": "model", "parts": [{"functionCall": {}}]}, big,
                {"role": "user", "parts": [{"text": "b"}]}, {"role": "model", "parts": [{"functionCall": {}}]}]
    assert split_point(contents, 0.7)[0] == 3
    # no user text after the target, the history ends with a plain answer: all of it
    ends = contents[:3] + [{"role": "model", "parts": [{"text": "done"}]}]
    assert split_point(ends, 0.7)[0] == 4
    # a single prompt: nothing
    assert split_point(contents[:3], 0.7)[0] == 0


def _ctx(params, meta=None):
    from compactscope.core.layers.base import LayerContext
    from compactscope.core.summarizers import CachedSummarizer
    from compactscope.core.summarizers.fixed import FixedSummarizer
    return LayerContext.default(params, meta=meta or {},
                                summarizer=CachedSummarizer(FixedSummarizer("<state_snapshot>S</state_snapshot>")))


def _chat(n_turns, output="x" * 4000):
    msgs = [{"role": "user", "content": [{"type": "text", "text": "<session_context>\nctx"}]}]
    for t in range(n_turns):
        if t:
            msgs.append({"role": "user", "content": [{"type": "text", "text": f"prompt {t}"}]})
        else:
            msgs[0]["content"].append({"type": "text", "text": "prompt 0"})
        msgs += [{"role": "assistant", "content": [{"type": "tool_use", "id": f"c{t}", "name": "read_file",
                                                    "input": {}}]},
                 {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"c{t}", "content": output}]},
                 {"role": "assistant", "content": [{"type": "text", "text": f"answer {t}"}]}]
    return msgs


def test_the_pipeline_compresses_over_the_threshold_only(tmp_path):
    from compactscope.core.pipeline.engine import Engine
    from compactscope.core.summarizers.fixed import FixedSummarizer
    from compactscope.core.model.conversation import MessageMeta, Usage
    msgs = _chat(4)
    eng = Engine("gemini_cli", {"compression_threshold": 0.001, "token_limit": 1_000_000},
                 summarizer=FixedSummarizer("<state_snapshot>S</state_snapshot>"))
    over = eng.run(msgs)                                   # no usage: the CLI's estimate, ~4,000 tokens >= 1,000
    assert over.steps[0].triggered is True and over.steps[0].vars["last_prompt_tokens"] >= 4000
    out = over.steps[-1].messages
    assert [b["text"] for b in out[0]["content"]] == ["<session_context>\nctx", "<state_snapshot>S</state_snapshot>"]
    assert out[1] == {"role": "assistant", "content": [{"type": "text", "text": "Got it. Thanks for the additional "
                                                                                   "context!"}]}
    assert out[2:] == msgs[-4:]          # the last prompt, the first user text past 70% of the characters
    # the last reported count under the threshold: nothing
    from compactscope.core.model.conversation import Conversation
    meta = [MessageMeta(usage=Usage(500)) if m["role"] == "assistant" else MessageMeta() for m in msgs]
    conv = Conversation(msgs, "anthropic", meta=meta)
    calm = Engine("gemini_cli", {"compression_threshold": 0.001, "token_limit": 1_000_000}).run(msgs, conversation=conv)
    assert calm.steps[0].triggered is False and calm.steps[-1].messages is msgs


def test_old_function_responses_past_the_budget_are_cut(tmp_path):
    from compactscope.core.layers.gemini_cli import gemini_truncate
    msgs = _chat(3, output="y" * 120_000)                  # 30,000 tokens each: the oldest one is past 50,000
    out = gemini_truncate(msgs, _ctx({"compression_threshold": 0.001, "token_limit": 1_000_000}))
    cut = [i for i, (a, b) in enumerate(zip(msgs, out.messages, strict=True)) if a is not b]
    assert cut == [2, 6]                                  # the newest (10) fits the budget, the older two do not
    text = out.messages[2]["content"][0]["content"]
    assert text.startswith("Output too large. Showing first 8,000 and last 32,000")
    assert len(text) < 41_000 and msgs[2]["content"][0]["content"] == "y" * 120_000


def test_a_compression_right_after_another_that_frees_little_is_a_loop():
    from compactscope.core.pipeline.engine import Engine
    from compactscope.core.summarizers.fixed import FixedSummarizer
    eng = Engine("gemini_cli", {"compression_threshold": 0.0001, "token_limit": 1_000_000},
                 summarizer=FixedSummarizer("<state_snapshot>S</state_snapshot>"))
    first = eng.run(_chat(2, output="z" * 400))
    done = first.step("gemini_assemble")
    assert done.vars["status"] == "COMPRESSED" and done.vars["compression_loop"] is False

    def call(k, args):
        return {"role": "assistant", "content": [{"type": "tool_use", "id": k, "name": "write_file", "input": args}]}

    def result(k):
        return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": k, "content": "ok"}]}
    # the current turn alone is most of the history: the split can only fall at its prompt
    turn = [{"role": "user", "content": [{"type": "text", "text": "p"}]}, call("a", {"text": "w" * 20_000}),
            result("a"), call("b", {"text": "v" * 20_000}), result("b")]
    again = eng.run(first.steps[-1].messages + turn)
    last = again.step("gemini_assemble")
    assert last.vars["status"] == "COMPRESSED" and last.vars["freed_share"] < 0.10
    assert last.vars["compression_loop"] is True
    assert any("compression loop" in e.text for e in last.edits)
    # and in the sentence replay prints for the call
    assert "a compression loop" in again.step("gemini_summarize").explain()
    assert "compression loop" not in first.step("gemini_summarize").explain()
    assert again.steps[-1].messages[-5:] == turn        # the turn kept, the request (its last response) after it


# ------------------------------------------------------------------ the window
@pytest.mark.skipif(not SESSIONS, reason="../shared/corpus/gemini-cli is not present")
def test_the_window_opens_a_session_at_its_compression(qtbot, make_window, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    session = SESSIONS[-1]
    conv = load(session).main
    w = make_window()
    assert w.open_path(str(session), remember=False)
    assert w.wait_idle(60000)
    s = w.session
    # the window opens where something happens (issue 23): the context the first compression replaced, at the
    # layer that compresses it
    assert s.setup.strategy.name == "gemini_cli" and s.source.segment == 0
    assert s.view.current_step() is not None and s.view.current_step().changed
    # the last real context: the CLI's new history, its summary marked
    s.source.set_segment(len(conv.segments) - 1)
    assert w.wait_idle(60000)
    seg = conv.segment(s.source.segment)
    assert w.session.trace.input == seg
    summary = conv.events[-1].summary_index - conv.segments[-1]
    assert seg[summary]["content"][1]["text"].startswith("<state_snapshot>")
    # the call after the compression: exactly what the CLI sent
    call, req = _compressed_calls(_requests(session))[-1]
    k = w.picker.call_box.findData(call)
    w.picker.call_box.setCurrentIndex(k)
    assert w.wait_idle(60000)
    assert _context_items(w.session.trace.input) == _request_items(req["body"]["contents"])
    assert [st.layer for st in w.session.trace.steps] == ["gemini_truncate", "gemini_split", "gemini_summarize",
                                                  "gemini_assemble", "gemini_mask"]


@pytest.mark.skipif(not SESSIONS, reason="../shared/corpus/gemini-cli is not present")
def test_the_fleet_finds_the_sessions_and_not_the_request_logs_beside_them():
    from compactscope.core.fleet.discover import discover
    found = [Path(s.path) for s in discover([GEMINI]).sessions]
    assert found == [p.resolve() for p in SESSIONS]


def test_a_resume_written_without_a_header_is_still_no_compression(tmp_path):
    """Seen with the real CLI when a resumed run starts a new file for its header: the old file gets only a
    ``$set sessionId`` and the rebuilt history, between two turns."""
    rebuilt = _set_history(CONTEXT, _in_api_shape(1, "user", {"text": "read a.txt"}),
                           _in_api_shape(2, "gemini", {"functionCall": {"id": "c1", "name": "read_file",
                                                                        "args": {"file_path": "a.txt"}}}),
                           _in_api_shape(3, "user", {"functionResponse": {"id": "c1", "name": "read_file",
                                                                          "response": {"output": "A"}}}),
                           _in_api_shape(4, "user", {"functionResponse": {"id": "c1", "name": "read_file",
                                                                          "response": {"output": "A"}}}),
                           _in_api_shape(5, "gemini", {"text": "a.txt holds A"}))
    lines = _first_turn() + [{"$set": {"sessionId": "s1"}}, rebuilt, _user(2, "and b.txt?"),
                             _model(3, "b holds B", tokens=300)]
    conv = load(_write(tmp_path, lines)).main
    assert not conv.events and len(conv.extra["resumes"]) == 1
    assert conv.meta[4].extra.get("after_resume") is True
    # the same history mid-turn (after a function call) with a snapshot in it is a compression
    mid = _first_turn()[:6] + [{"$set": {"sessionId": "s1"}}, _set_history(
        CONTEXT, _in_api_shape(6, "user", {"text": "<state_snapshot>x"}),
        _in_api_shape(7, "gemini", {"text": "Got it. Thanks for the additional context!"}),
        _in_api_shape(8, "user", {"text": "read a.txt"}),
        _in_api_shape(9, "gemini", {"functionCall": {"id": "c1", "name": "read_file",
                                                     "args": {"file_path": "a.txt"}}})), _response(1, "c1")]
    assert len(load(_write(tmp_path, mid, "m.jsonl")).main.events) == 1


def test_a_masking_of_old_tool_outputs_is_no_compression(tmp_path):
    masked = _set_history(
        CONTEXT, _in_api_shape(1, "user", {"text": "read a.txt"}),
        _in_api_shape(2, "gemini", {"functionCall": {"id": "c1", "name": "read_file", "args": {"file_path": "a.txt"}}}),
        _in_api_shape(3, "user", {"functionResponse": {"id": "c1", "name": "read_file", "response": {
            "output": "<tool_output_masked>\nA\n\nOutput too large. Full output available at: /t/a.txt\n"
                      "</tool_output_masked>"}}}),
        _in_api_shape(4, "gemini", {"text": "a.txt holds A"}), _in_api_shape(5, "user", {"text": "more"}),
        _in_api_shape(6, "gemini", {"functionCall": {"id": "c2", "name": "read_file", "args": {"file_path": "a.txt"}}}))
    lines = _first_turn() + [_user(2, "more"), _model(3, calls=["c2"], tokens=200), masked, _response(2, "c2")]
    conv = load(_write(tmp_path, lines)).main
    assert not conv.events and conv.extra["maskings"] == [{"line": 11, "masked_outputs": 1}]


def test_old_tool_outputs_are_masked_past_the_protected_newest_ones():
    from compactscope.core.layers.gemini_cli import gemini_mask
    # five turns of 99,000-char outputs (24,755 tokens each, the JSON and the name counted), then a pending
    # call: the newest content is protected; 2 outputs fill 49,510 of the 50,000 protected tokens, the third
    # passes them and is masked with the two before it
    msgs = _chat(5, output="q" * 99_000) + [{"role": "user", "content": [{"type": "text", "text": "go"}]},
                                             {"role": "assistant", "content": [{"type": "tool_use", "id": "z",
                                                                                "name": "read_file", "input": {}}]}]
    out = gemini_mask(msgs, _ctx({}))
    masked = [i for i, (a, b) in enumerate(zip(msgs, out.messages, strict=True)) if a is not b]
    assert masked == [2, 6, 10] and out.vars["prunable_tokens"] >= 30_000
    text = out.messages[2]["content"][0]["content"]
    assert text.startswith("<tool_output_masked>\n{\n  \"output\": \"qqq") and "[TRUNCATED]" in text
    assert text.endswith("</tool_output_masked>") and len(text) < 700
    # nothing past the protected tokens: nothing masked
    small = _chat(2, output="q" * 100_000)
    assert gemini_mask(small, _ctx({})).messages is small


def test_masking_again_with_the_same_workspace_names_the_same_files_and_a_cleared_workspace_gets_them_back(tmp_path):
    """The persisted outputs' names are asked of the workspace once per output: a second masking of the same
    outputs gives the same list, and once the workspace's results folder is gone the files are written again."""
    import shutil
    from compactscope.core.files.workspace import PERSIST_DIR, Workspace
    from compactscope.core.layers.gemini_cli import gemini_mask
    msgs = _chat(5, output="q" * 99_000) + [{"role": "user", "content": [{"type": "text", "text": "go"}]},
                                             {"role": "assistant", "content": [{"type": "tool_use", "id": "z",
                                                                                "name": "read_file", "input": {}}]}]
    ctx = _ctx({})
    ctx.workspace = Workspace(tmp_path / "w")
    first = gemini_mask(msgs, ctx)
    files = sorted(p.name for p in (tmp_path / "w" / PERSIST_DIR).iterdir())
    assert len(files) == 3
    again = gemini_mask(msgs, ctx)
    assert again.messages == first.messages and [e.path for e in again.edits] == [e.path for e in first.edits]
    shutil.rmtree(tmp_path / "w" / PERSIST_DIR)
    third = gemini_mask(msgs, ctx)
    assert third.messages == first.messages
    assert sorted(p.name for p in (tmp_path / "w" / PERSIST_DIR).iterdir()) == files


@pytest.mark.skipif(not SESSIONS, reason="../shared/corpus/gemini-cli is not present")
def test_following_a_session_as_the_cli_writes_it_shows_the_compression_when_it_lands(tmp_path):
    from compactscope.core.live.follow import Follower
    session = SESSIONS[0]
    lines = session.read_bytes().splitlines(keepends=True)
    cut = next(i for i, raw in enumerate(lines) if b'"<state_snapshot>' in raw)     # the compression's line
    live = tmp_path / session.name
    live.write_bytes(b"".join(lines[:cut]))
    f = Follower(live)
    first = f.poll(force=True)
    assert first.result is not None and not first.result.main.events
    with live.open("ab") as out:
        out.write(b"".join(lines[cut:]))
    grown = f.poll(force=True)
    assert grown.result is not None and len(grown.result.main.events) == 1
    assert len(grown.result.main.messages) == len(load(session).main.messages)


def test_a_session_cut_from_a_longer_one_still_loads_and_says_so(tmp_path):
    lines = _first_turn()[2:] + [{"$set": {"lastUpdated": "y"}}]          # no header, no session context
    res = load(_write(tmp_path, lines))
    assert res.format == "gemini-cli-jsonl" and len(res.main.messages) == 4
    assert res.problems[0].line == 1 and "without its header" in res.problems[0].text
