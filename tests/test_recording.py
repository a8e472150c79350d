"""The recording format: writer, reader, loader; cut-off files; proxy pair logs."""
from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from compactscope.core.loaders import LoadError, detect, load
from compactscope.core.live.recorder import RecordingWriter, StreamAccumulator, read_recording, scrub
from tests.fakeapi import message, sse_chunks, text_block, tool_use_block

KEY = "-".join(("sk", "ant", "fake-recordingtest-XYZ0123456789"))   # a fake key, assembled so secret scanners skip the source


def u(text):
    return {"role": "user", "content": text}


def a(text):
    return {"role": "assistant", "content": [{"type": "text", "text": text}]}


def write_session(path, calls, **kw):
    """calls: list of (messages, response_text, usage)."""
    with RecordingWriter(path, source="agent", secrets=[KEY], **kw) as w:
        for i, (msgs, text, usage) in enumerate(calls):
            w.call(request={"model": "m", "system": "SYS", "tools": [{"name": "bash"}], "messages": msgs},
                   response={"id": f"msg_{i}", "model": "m", "role": "assistant",
                             "content": [{"type": "text", "text": text}], "stop_reason": "end_turn"},
                   usage=usage, t_start=1_700_000_000 + i, t_end=1_700_000_000.5 + i)
    return path


def three_calls_with_a_compaction():
    return [([u("q1")], "r1", {"input_tokens": 10, "output_tokens": 1}),
            ([u("q1"), a("r1"), u("q2")], "r2", {"input_tokens": 20, "output_tokens": 2,
                                                  "cache_read_input_tokens": 5}),
            ([u("[Compacted]\n\nsummary"), u("q3")], "r3", {"input_tokens": 7, "output_tokens": 3})]


def test_rebuilds_history_segments_and_usage(tmp_path):
    p = write_session(tmp_path / "s.jsonl", three_calls_with_a_compaction())
    assert detect(p) == "recording"
    res = load(p)
    conv = res.main
    assert res.format == "recording" and not res.problems
    assert [m["content"] if isinstance(m["content"], str) else m["content"][0]["text"] for m in conv.messages] == \
        ["q1", "r1", "q2", "[Compacted]\n\nsummary", "q3", "r3"]
    assert conv.segments == [0, 3]
    assert conv.segment(1)[0]["content"].startswith("[Compacted]")
    ev = conv.events[0]
    assert (ev.kind, ev.message_index, ev.pre_tokens, ev.post_tokens) == ("recording", 3, 25, 7)
    assert conv.meta[1].usage.input_tokens == 10            # r1 was produced by call 1
    assert conv.meta[5].usage.output_tokens == 3 and conv.meta[5].extra["response_only"]
    assert conv.meta[2].provenance.line == 3 and conv.meta[0].provenance.line == 2
    assert [c["seq"] for c in conv.extra["calls"]] == [1, 2, 3]
    assert conv.system == "SYS" and conv.tools == [{"name": "bash"}]


def test_cache_control_moves_and_retries_do_not_look_like_compaction(tmp_path):
    m1 = {"role": "user", "content": [{"type": "text", "text": "q1", "cache_control": {"type": "ephemeral"}}]}
    m1b = {"role": "user", "content": [{"type": "text", "text": "q1"}]}
    calls = [([m1], "r1", None), ([m1b, a("r1"), u("q2")], "r2", None), ([m1b, a("r1"), u("q2")], "r2", None)]
    conv = load(write_session(tmp_path / "c.jsonl", calls)).main
    assert conv.segments == [0] and not conv.events and len(conv.messages) == 4


def test_cut_off_mid_write_still_loads(tmp_path):
    p = write_session(tmp_path / "cut.jsonl", three_calls_with_a_compaction())
    data = p.read_bytes()
    last_start = data.rstrip(b"\n").rfind(b"\n") + 1
    p.write_bytes(data[:last_start + (len(data) - last_start) // 2])    # the last record half written
    res = load(p)
    assert len(res.main.extra["calls"]) == 2
    assert res.problems and "cut off" in res.problems[0].text and res.problems[0].line == 4
    # a new writer continues on a fresh line, numbering after the last complete call
    with RecordingWriter(p, source="agent") as w:
        w.call(request={"model": "m", "messages": [u("q1"), a("r1"), u("q2"), a("r2"), u("q4")]})
    rr = read_recording(p)
    assert [c.seq for c in rr.calls] == [1, 2, 3]
    assert len(rr.problems) == 1 and "broken JSON" in rr.problems[0][1]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.floats(min_value=0.0, max_value=1.0))
def test_any_truncation_loads_or_says_why(tmp_path, cut):
    p = tmp_path / "t.jsonl"
    if not p.exists():
        write_session(p, three_calls_with_a_compaction())
    full = p.read_bytes()
    q = tmp_path / "t_cut.jsonl"
    q.write_bytes(full[:int(len(full) * cut)])
    try:
        res = load(q)
    except LoadError as e:
        assert str(q) in str(e)
        return
    whole = 0
    for line in full[:int(len(full) * cut)].split(b"\n"):
        try:
            whole += json.loads(line).get("type") == "call"
        except ValueError:
            pass
    assert len(res.main.extra["calls"]) == whole


OTHER = "-".join(("sk", "ant", "someotherkey", "123456789"))   # key-shaped, not given as a secret


def test_secrets_never_written(tmp_path):
    p = tmp_path / "k.jsonl"
    with RecordingWriter(p, source="proxy", secrets=[KEY]) as w:
        w.call(request={"model": "m", "messages": [u(f"here is my key {KEY}")], "api_key": "abc",
                        "metadata": {"Authorization": "Bearer zzz"}},
               response={"content": [{"type": "text", "text": OTHER}]})
    text = p.read_text()
    assert KEY not in text and OTHER not in text and "Bearer zzz" not in text
    assert '"api_key":' not in text and text.count("[redacted]") == 2     # the name is listed, not kept as a key
    assert scrub({"x-api-key": 1, "a": [{"authorization": 2, "b": 3}]}) == {"a": [{"b": 3}]}
    # words that merely contain "sk-" are left alone: the recording must stay what the API saw
    for text in ("disk-0123456789abcdefghijklmnopqrstuvwxyz0123", "task-abcdefghijklmnopqrstuvwxyz", "sk-short"):
        assert scrub(text) == text


def test_stream_accumulator_any_chunking():
    msg = message([text_block("héllo wörld " * 5), tool_use_block("glob", {"pattern": "*.py"}, "t9")],
                  usage={"input_tokens": 42, "output_tokens": 17})
    raw = b"".join(sse_chunks(msg))
    for size in (1, 3, 17, len(raw)):
        acc = StreamAccumulator()
        for i in range(0, len(raw), size):
            acc.feed(raw[i:i + size])
        r = acc.response()
        assert r["content"][0]["text"] == "héllo wörld " * 5
        assert r["content"][1]["input"] == {"pattern": "*.py"}
        assert acc.usage["input_tokens"] == 42 and acc.usage["output_tokens"] == 17 and acc.complete


def test_proxy_pair_log_claude_trace_style(tmp_path):
    """request/response pairs with an SSE body_raw, headers included by the other tool: loaded without them."""
    msg = message([text_block("streamed answer")], usage={"input_tokens": 321, "output_tokens": 9,
                                                          "cache_read_input_tokens": 1000})
    sse = b"".join(sse_chunks(msg)).decode()
    main_sys = [{"type": "text", "text": "You are Claude Code"}]
    lines = [
        {"request": {"timestamp": 1700000000.0, "method": "POST", "url": "https://api.anthropic.com/v1/messages",
                     "headers": {"authorization": f"Bearer {KEY}"},
                     "body": {"model": "claude", "system": main_sys, "tools": [{"name": "Bash"}],
                              "messages": [u("fix the bug")]}},
         "response": {"timestamp": 1700000001.0, "status_code": 200, "headers": {}, "body_raw": sse}},
        {"request": {"timestamp": 1700000002.0, "method": "POST", "url": "https://api.anthropic.com/v1/messages",
                     "headers": {}, "body": {"model": "haiku", "system": "Write a title",
                                             "messages": [u("fix the bug")]}},
         "response": {"timestamp": 1700000002.5, "status_code": 200,
                      "body": {**message([text_block("Bug fix")]), "usage": {"input_tokens": 5, "output_tokens": 2}}}},
        {"request": {"timestamp": 1700000003.0, "method": "POST", "url": "https://api.anthropic.com/v1/messages",
                     "body": json.dumps({"model": "claude", "system": main_sys, "tools": [{"name": "Bash"}],
                                         "messages": [u("fix the bug"), a("streamed answer"), u("thanks")]})},
         "response": {"status_code": 529, "body": {"type": "error", "error": {"type": "overloaded_error",
                                                                              "message": "Overloaded"}}}},
    ]
    p = tmp_path / "trace.jsonl"
    p.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    assert detect(p) == "recording"
    res = load(p)
    assert res.format == "proxy-log" and len(res.conversations) == 2
    main, side = res.conversations
    assert [m["role"] for m in main.messages] == ["user", "assistant", "user"]
    assert main.meta[1].usage.context_tokens == 1321
    assert main.extra["calls"][1]["error"]["type"] == "overloaded_error"
    assert side.messages[-1]["content"][0]["text"] == "Bug fix"
    dumped = json.dumps([c.messages for c in res.conversations] + [c.extra["calls"] for c in res.conversations],
                        default=str)
    assert KEY not in dumped


def test_empty_and_foreign_files(tmp_path):
    p = tmp_path / "h.jsonl"
    RecordingWriter(p, source="agent").close()
    with pytest.raises(LoadError, match="no model call yet"):
        load(p)
    q = tmp_path / "bad.jsonl"
    q.write_text('{"request": {"body": {"messages": "nope"}}}\n')
    with pytest.raises(LoadError):
        load(q)


def test_agent_recording_shows_the_pipeline_compaction(tmp_path):
    from compactscope.core.live.agent import Agent
    from tests.fakeapi import FakeAnthropic, reply
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "big.txt").write_text("line of text\n" * 40)
    script = [reply(message([tool_use_block("read_file", {"path": "big.txt"}, "t1")])),
              reply(message([tool_use_block("read_file", {"path": "big.txt"}, "t2")])),
              reply(message([text_block("read it twice")]))]
    rec = tmp_path / "agent.jsonl"
    with FakeAnthropic(script) as fake, RecordingWriter(rec, source="agent") as w:
        agent = Agent(ws, api_key=KEY, base_url=fake.url, timeout=10, recorder=w, summarizer="offline",
                      params={"context_limit": 1200})
        agent.send("read big.txt")
    conv = load(rec).main
    assert len(conv.extra["calls"]) == 3
    ev = conv.events[-1]
    assert ev.trigger == "compact_history" and ev.extra["call"] == 3
    assert conv.segment(len(conv.segments) - 1)[0]["content"].startswith("[Compacted]")
    assert fake.message_requests[2]["body"]["messages"][0]["content"].startswith("[Compacted]")
    assert KEY not in rec.read_text()


def test_in_place_edits_update_the_history_without_a_new_segment(tmp_path):
    """micro_compact (or cleared tool results) edits old messages: one copy per message, an event, no segment."""
    def res(text):
        return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": text}]}
    call = {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "read_file", "input": {}}]}
    calls = [([u("q")], "r", {"input_tokens": 5}),
             ([u("q"), call, res("long output " * 20)], "r2", {"input_tokens": 80}),
             ([u("q"), call, res("[Earlier tool result compacted. Re-run if needed.]"), a("r2"), u("more")], "r3",
              {"input_tokens": 30})]
    conv = load(write_session(tmp_path / "e.jsonl", calls)).main
    assert conv.segments == [0]
    assert len(conv.messages) == 6 and conv.messages[2]["content"][0]["content"].startswith("[Earlier")
    ev = conv.events[0]
    assert ev.extra["in_place"] and ev.extra["edited"] == [2] and ev.message_index == 2 and ev.trigger == "edit"
    assert (ev.pre_tokens, ev.post_tokens) == (80, 30)
    assert conv.meta[2].extra["edited_at_call"] == 3
    # a different role at an old position is not an edit: a new segment
    calls.append(([u("[Compacted]"), a("x"), u("y"), a("z"), u("w"), a("v")], "r4", None))
    conv = load(write_session(tmp_path / "e2.jsonl", calls)).main
    assert conv.segments == [0, 5] and not conv.events[-1].extra.get("in_place")


def test_summary_index_only_when_the_head_was_replaced(tmp_path):
    head = [u("task"), a("a1"), u("u2")]
    calls = [(head, "r", None),
             (head + [a("r"), u("u3")], "r", None),
             ([u("task"), u("[snipped 2 messages]"), a("r"), u("u3")], "r", None),     # a snip keeps the head
             ([u("[Compacted]\n\nsummary")], "r", None)]                             # a summary replaces it
    conv = load(write_session(tmp_path / "s.jsonl", calls)).main
    assert [e.summary_index for e in conv.events] == [None, conv.segments[2]]
    assert conv.messages[conv.segments[2]]["content"].startswith("[Compacted]")


def test_info_counts_every_recorded_call(tmp_path):
    """A response compacted away before it was ever sent still counts in the usage totals."""
    from compactscope.core.analysis.info import describe
    p = write_session(tmp_path / "s.jsonl", three_calls_with_a_compaction())
    usage = describe(load(p))["conversations"][0]["usage"]
    assert usage["calls"] == 3
    assert usage["input_tokens"] == 37 and usage["output_tokens"] == 6
    assert usage["peak_context_tokens"] == 25
