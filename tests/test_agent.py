"""The built-in s08 agent against a local fake Messages API (real HTTP, real SDK)."""
from __future__ import annotations

import json
import socket
import time

import pytest

from compactscope.core.live.agent import Agent, AgentError, AgentStopped, WorkspaceTools
from compactscope.core.summarizers.anthropic_api import is_prompt_too_long
from compactscope.core.live.recorder import RecordingWriter, read_recording
from tests.fakeapi import (FakeAnthropic, error, message, overloaded, prompt_too_long, rate_limited, reply,
                           sse_chunks, text_block, tool_use_block)

KEY = "-".join(("sk", "ant", "test-0123456789abcdefghij"))   # a fake key, assembled so secret scanners skip the source


def make_agent(fake, tmp_path, **kw):
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    events = []
    kw.setdefault("max_retries", 2)
    agent = Agent(ws, api_key=KEY, base_url=fake.url, model="fake-model", timeout=10,
                  on_event=lambda k, d: events.append((k, d)), **kw)
    return agent, events


def kinds(events):
    return [k for k, _ in events]


@pytest.mark.parametrize("stream", [True, False])
def test_multi_call_tool_session(tmp_path, stream):
    rec_path = tmp_path / "rec.jsonl"
    script = [
        reply(message([text_block("I'll write it."), tool_use_block("write_file", {"path": "a/hello.txt",
                                                                                   "content": "hi there"}, "toolu_w")],
                      usage={"input_tokens": 50, "output_tokens": 20})),
        reply(message([tool_use_block("read_file", {"path": "a/hello.txt"}, "toolu_r"),
                       tool_use_block("glob", {"pattern": "**/*.txt"}, "toolu_g")],
                      usage={"input_tokens": 90, "output_tokens": 30, "cache_read_input_tokens": 40})),
        reply(message([text_block("Done: the file says hi there.")])),
    ]
    with FakeAnthropic(script) as fake:
        rec = RecordingWriter(rec_path, source="agent", meta={"model": "fake-model"})
        agent, events = make_agent(fake, tmp_path, recorder=rec, stream=stream)
        out = agent.send("write hello")
        rec.close()
    assert out == "Done: the file says hi there."
    assert (tmp_path / "ws" / "a" / "hello.txt").read_text() == "hi there"
    reqs = fake.message_requests
    assert len(reqs) == 3
    h = reqs[0]["headers"]
    assert KEY in (h.get("x-api-key", "") + h.get("authorization", ""))   # the key goes to the API...
    assert bool(reqs[0]["body"].get("stream")) == stream
    assert [t["name"] for t in reqs[0]["body"]["tools"]] == ["bash", "read_file", "write_file", "edit_file", "glob",
                                                             "compact"]
    last = reqs[2]["body"]["messages"]
    assert [m["role"] for m in last] == ["user", "assistant", "user", "assistant", "user"]
    results = {b["tool_use_id"]: b["content"] for b in last[4]["content"]}
    assert results["toolu_r"] == "hi there"
    assert results["toolu_g"] == "a/hello.txt"
    assert last[2]["content"][0]["tool_use_id"] == "toolu_w"
    # one pipeline trace before every call, the seed's order
    traces = [d["trace"] for k, d in events if k == "trace"]
    assert len(traces) == 3
    assert traces[0].order == ["tool_result_budget", "snip_compact", "micro_compact", "compact_history"]
    assert kinds(events).count("response") == 3 and kinds(events)[-1] == "done"
    if stream:
        assert "".join(d["text"] for k, d in events if k == "stream").startswith("I'll write it.")
    # ...but never into the recording
    text = rec_path.read_text()
    assert KEY not in text and "x-api-key" not in text
    rr = read_recording(rec_path)
    assert rr.header["source"] == "agent" and not rr.problems
    assert [c.seq for c in rr.calls] == [1, 2, 3]
    assert rr.calls[1].usage["cache_read_input_tokens"] == 40
    assert rr.calls[2].messages == last
    assert rr.calls[0].trace["order"][0] == "tool_result_budget"
    assert rr.calls[0].response["content"][1]["name"] == "write_file"


@pytest.mark.parametrize("wording", ["prompt is too long: 200251 tokens > 200000 maximum", "prompt_too_long",
                                     "too many tokens"])
def test_prompt_too_long_triggers_reactive_compact_once(tmp_path, wording):
    script = [error(400, "invalid_request_error", wording),
              reply(message([text_block("SUMMARY OF EARLIER WORK")])),    # the reactive summary call
              reply(message([text_block("ok after compact")]))]
    rec_path = tmp_path / "reactive.jsonl"
    with FakeAnthropic(script) as fake, RecordingWriter(rec_path, source="agent") as rec:
        agent, events = make_agent(fake, tmp_path, recorder=rec)
        agent.messages = [m for i in range(4) for m in ({"role": "user", "content": f"question {i} " + "x" * 100},
                                                        {"role": "assistant", "content": f"answer {i}"})]
        assert agent.send("go on") == "ok after compact"
    reqs = fake.message_requests
    assert len(reqs) == 3
    assert "tools" not in reqs[1]["body"]                       # the summary call
    retry = reqs[2]["body"]["messages"]
    assert retry[0]["content"].startswith("[Reactive compact]") and "SUMMARY OF EARLIER WORK" in retry[0]["content"]
    assert retry[-1]["content"] == "go on" and len(retry) == 6   # summary + the last 5 kept
    comp = [d for k, d in events if k == "compaction"]
    assert len(comp) == 1 and comp[0]["kind"] == "reactive"
    rr = read_recording(rec_path)                                # the summary call is recorded too
    assert [c.kind for c in rr.calls] == ["model", "summary", "model"]
    assert rr.calls[1].response["content"][0]["text"] == "SUMMARY OF EARLIER WORK"
    from compactscope.core.loaders import load
    res = load(rec_path)
    assert len(res.main.extra["calls"]) == 2 and res.conversations[-1].extra["kind"] == "summary_calls"
    assert [d["error"].kind for k, d in events if k == "error"] == ["prompt_too_long"]


def test_prompt_too_long_twice_reraises(tmp_path):
    script = [prompt_too_long(), reply(message([text_block("summary")])), prompt_too_long()]
    with FakeAnthropic(script) as fake:
        agent, events = make_agent(fake, tmp_path)
        agent.messages = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]
        with pytest.raises(AgentError) as ei:
            agent.send("c")
    assert ei.value.kind == "prompt_too_long" and ei.value.status == 400
    assert "context_limit" in ei.value.hint
    assert len(fake.message_requests) == 3                    # one reactive compact, then re-raised
    assert kinds(events).count("compaction") == 1


def test_429_and_529_are_retried(tmp_path):
    with FakeAnthropic([rate_limited(), overloaded(), reply(message([text_block("finally")]))]) as fake:
        agent, events = make_agent(fake, tmp_path, max_retries=2)
        assert agent.send("hi") == "finally"
    assert len(fake.message_requests) == 3
    assert "error" not in kinds(events)
    assert [d["status"] for k, d in events if k == "retry"] == [429, 529]     # the UI hears about each retry


@pytest.mark.parametrize("make,kind", [(rate_limited, "rate_limit"), (overloaded, "overloaded")])
def test_retries_exhausted_are_classified(tmp_path, make, kind):
    rec_path = tmp_path / "r.jsonl"
    with FakeAnthropic([make(), make()]) as fake:
        rec = RecordingWriter(rec_path, source="agent")
        agent, events = make_agent(fake, tmp_path, max_retries=1, recorder=rec)
        with pytest.raises(AgentError) as ei:
            agent.send("hi")
        rec.close()
    assert len(fake.message_requests) == 2
    assert ei.value.kind == kind and "wait" in ei.value.hint
    rr = read_recording(rec_path)
    assert rr.calls[0].error["kind"] == kind and rr.calls[0].response is None


def test_no_key_wrong_key_and_network(tmp_path, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    ws = tmp_path / "w"
    ws.mkdir()
    agent = Agent(ws, api_key="", base_url="http://127.0.0.1:9", summarizer="offline")
    with pytest.raises(AgentError) as ei:
        agent.send("hi")
    assert ei.value.kind == "no_key" and "ANTHROPIC_API_KEY" in ei.value.hint
    with FakeAnthropic([error(401, "authentication_error", "invalid x-api-key")]) as fake:
        agent, _ = make_agent(fake, tmp_path)
        with pytest.raises(AgentError) as ei:
            agent.send("hi")
    assert ei.value.kind == "auth" and "key" in ei.value.hint
    assert ei.value.message == "The API rejected the key (HTTP 401: invalid x-api-key)"
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()   # nothing listens there now
    agent = Agent(ws, api_key=KEY, base_url=f"http://127.0.0.1:{port}", max_retries=0, timeout=5)
    with pytest.raises(AgentError) as ei:
        agent.send("hi")
    assert ei.value.kind == "network" and "network" in ei.value.hint


def test_compact_tool_runs_after_the_batch(tmp_path):
    script = [reply(message([tool_use_block("compact", {}, "toolu_c")])),
              reply(message([text_block("the summary")])),
              reply(message([text_block("continuing")]))]
    with FakeAnthropic(script) as fake:
        agent, events = make_agent(fake, tmp_path, params={"compact_tool_mode": "deferred"})
        assert agent.send("please compact") == "continuing"
    msgs = fake.message_requests[2]["body"]["messages"]
    assert msgs[0]["content"].startswith("[Compacted]") and "the summary" in msgs[0]["content"]
    assert [d["kind"] for k, d in events if k == "compaction"] == ["compact_tool"]


def test_stop_keeps_the_list_valid(tmp_path):
    script = [reply(message([tool_use_block("write_file", {"path": "x.txt", "content": "1"}, "t1"),
                             tool_use_block("write_file", {"path": "y.txt", "content": "2"}, "t2")])),
              reply(message([text_block("after stop")]))]
    with FakeAnthropic(script) as fake:
        agent, events = make_agent(fake, tmp_path)

        def on_event(k, d):
            events.append((k, d))
            if k == "tool" and d["id"] == "t1":
                agent.stop()
        agent.on_event = on_event
        with pytest.raises(AgentStopped):
            agent.send("write two files")
        assert (tmp_path / "ws" / "x.txt").exists() and not (tmp_path / "ws" / "y.txt").exists()
        last = agent.messages[-1]
        assert [b["tool_use_id"] for b in last["content"]] == ["t1", "t2"]
        assert last["content"][1]["is_error"]
        assert agent.send("go on") == "after stop"
    sent = fake.message_requests[1]["body"]["messages"]
    assert sent[-1]["role"] == "user" and sent[-1]["content"][-1] == {"type": "text", "text": "go on"}


def test_tools_are_confined(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    (tmp_path / "secret.txt").write_text("outside")
    asked = []
    tools = WorkspaceTools(root, confirm_bash=lambda c: asked.append(c) or "deny")
    for name, args in [("read_file", {"path": "../secret.txt"}), ("write_file", {"path": "/etc/x", "content": "y"}),
                       ("edit_file", {"path": "../secret.txt", "old_text": "o", "new_text": "p"}),
                       ("glob", {"pattern": "../*"}), ("glob", {"pattern": "/etc/*"})]:
        out, is_err = tools.run(name, args)
        assert is_err and "escapes workspace" in out, (name, out)
    (root / "link").symlink_to(tmp_path / "secret.txt")
    out, is_err = tools.run("read_file", {"path": "link"})
    assert is_err and "escapes" in out
    assert (tmp_path / "secret.txt").read_text() == "outside"
    out, is_err = tools.run("bash", {"command": "echo hi > made.txt"})
    assert is_err and "declined" in out and asked == ["echo hi > made.txt"] and not (root / "made.txt").exists()
    answers = iter(["once", "session"])
    tools.confirm_bash = lambda c: asked.append(c) or next(answers)
    assert tools.run("bash", {"command": "echo one"}) == ("one", False)
    assert tools.run("bash", {"command": "pwd"})[0] == str(root.resolve())
    assert tools.run("bash", {"command": "echo three"}) == ("three", False)   # allowed for the session: not asked
    assert asked[1:] == ["echo one", "pwd"]
    assert tools.run("bash", {"command": "env"})[0].count("ANTHROPIC_API_KEY") == 0
    assert tools.run("bash", {"command": "sudo ls"}) == ("Error: Dangerous command blocked", True)
    assert tools.run("nope", {}) == ("Unknown tool: nope", True)
    assert tools.run("read_file", {"pathx": "a"})[1]


def test_is_prompt_too_long_only_on_400():
    class E(Exception):
        def __init__(self, status, msg):
            super().__init__(msg)
            self.status_code, self.message = status, msg
    assert is_prompt_too_long(E(400, "prompt is too long: 5 tokens > 4 maximum"))
    assert not is_prompt_too_long(E(500, "prompt is too long"))
    assert not is_prompt_too_long(E(400, "messages: roles must alternate"))


def test_recording_never_holds_the_key_even_if_the_model_echoes_it(tmp_path):
    rec_path = tmp_path / "r.jsonl"
    with FakeAnthropic([reply(message([text_block(f"your key is {KEY}")]))]) as fake:
        rec = RecordingWriter(rec_path, source="agent")
        agent, _ = make_agent(fake, tmp_path, recorder=rec)
        agent.send(f"my key is {KEY}")
        rec.close()
    text = rec_path.read_text()
    assert KEY not in text and "[redacted]" in text
    json.loads(text.splitlines()[1])


def test_cli_record_runs_a_turn(tmp_path, monkeypatch, capsys):
    from compactscope.app.cli import main
    ws = tmp_path / "ws"
    ws.mkdir()
    rec = tmp_path / "cli.jsonl"
    script = [reply(message([tool_use_block("bash", {"command": "echo cli > out.txt"}, "b1")])),
              reply(message([text_block("wrote out.txt")]))]
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    with FakeAnthropic(script) as fake:
        code = main(["record", "--workspace", str(ws), "--record", str(rec), "--base-url", fake.url,
                     "--allow-bash", "--max-retries", "0", "write out.txt"])
    out = capsys.readouterr()
    assert code == 0 and (ws / "out.txt").read_text().strip() == "cli"
    assert "wrote out.txt" in out.out and "[bash]" in out.out
    assert len(read_recording(rec).calls) == 2 and KEY not in rec.read_text()
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    assert main(["record", "--workspace", str(ws), "--record", str(rec), "hi"]) == 1
    assert "what to do" in capsys.readouterr().err
    assert main(["record", "--workspace", str(tmp_path / "nope"), "hi"]) == 2


def test_stop_mid_stream_drops_the_connection_and_records_it(tmp_path):
    rec_path = tmp_path / "s.jsonl"
    long = message([text_block("streaming slowly " * 60)])
    with FakeAnthropic([reply(long, chunk_delay=0.01)]) as fake:
        rec = RecordingWriter(rec_path, source="agent")
        agent, events = make_agent(fake, tmp_path, recorder=rec)

        def on_event(k, d):
            events.append((k, d))
            if k == "stream":
                agent.stop()
        agent.on_event = on_event
        with pytest.raises(AgentStopped):
            agent.send("talk")
        streamed = sum(k == "stream" for k, _ in events)
        assert streamed < len(sse_chunks(long)) // 2           # stopped early: did not read the whole stream
        rec.close()
        end = time.monotonic() + 5
        while fake.disconnects == 0 and time.monotonic() < end:
            time.sleep(0.02)
        assert fake.disconnects == 1                          # the HTTP stream was closed mid-way
    assert agent.messages == [{"role": "user", "content": "talk"}]
    rr = read_recording(rec_path)
    assert rr.calls[0].error["kind"] == "stopped" and rr.events[-1]["kind"] == "stopped"


def test_teaching_compact_tool_bug_is_explained(tmp_path):
    """The seed's compact tool appends the results after the summary: the next call breaks an API rule.
    The fake answers 400 like the real API; the error says why and what to do."""
    def handler(req):
        msgs = req["body"]["messages"]
        if "tools" not in req["body"]:
            return reply(message([text_block("the summary")]))
        if any(isinstance(m["content"], list) and any(b.get("type") == "tool_result" for b in m["content"])
               for m in msgs) and not any(isinstance(m["content"], list) and any(
                   b.get("type") == "tool_use" for b in m["content"]) for m in msgs):
            return error(400, "invalid_request_error", "messages.1.content.0: unexpected `tool_use_id` found in "
                                                       "`tool_result` blocks")
        return reply(message([tool_use_block("compact", {}, "toolu_c")]))
    with FakeAnthropic(handler=handler) as fake:
        agent, events = make_agent(fake, tmp_path)               # compact_tool_mode defaults to teaching
        with pytest.raises(AgentError) as ei:
            agent.send("compact please")
    assert ei.value.kind == "bad_request"
    assert "compact_tool_mode=deferred" in ei.value.hint and "orphan" in ei.value.hint.lower()
    agent.reset()
    assert agent.messages == []


def test_max_tokens_mid_tool_call_keeps_the_list_valid(tmp_path):
    from compactscope.core.analysis.checker import check, rejected
    script = [reply(message([text_block("Let me"), tool_use_block("write_file", {"path": "a"}, "cut")],
                            stop_reason="max_tokens")),
              reply(message([text_block("ok")]))]
    with FakeAnthropic(script) as fake:
        agent, _ = make_agent(fake, tmp_path)
        assert agent.send("write") == "Let me"
        assert not (tmp_path / "ws" / "a").exists()
        assert not rejected(check(agent.messages + [{"role": "user", "content": "next"}]))
        assert agent.send("next") == "ok"
    sent = fake.message_requests[1]["body"]["messages"]
    assert sent[-1]["content"][0]["tool_use_id"] == "cut" and sent[-1]["content"][-1]["text"] == "next"


def test_circuit_breaker_stops_summary_calls_after_three_failures(tmp_path):
    calls = {"model": 0, "summary": 0}

    def handler(req):
        if "tools" not in req["body"]:
            calls["summary"] += 1
            return error(400, "invalid_request_error", "summary refused")
        calls["model"] += 1
        if calls["model"] < 6:
            return reply(message([tool_use_block("glob", {"pattern": "*"})]))
        return reply(message([text_block("finished")]))
    with FakeAnthropic(handler=handler) as fake:
        agent, events = make_agent(fake, tmp_path, params={"context_limit": 10})
        assert agent.send("go") == "finished"
    assert calls == {"model": 6, "summary": 3}                  # max_failures = 3, then the breaker is open
    traces = [d["trace"] for k, d in events if k == "trace"]
    assert [t.step("compact_history").error is not None for t in traces] == [True] * 3 + [False] * 3
    assert "circuit breaker is open" in traces[-1].step("compact_history").note
    assert agent.engine.state["consecutive_failures"] == 3


@pytest.mark.parametrize("strategy", ["claude_code", "hermes"])
def test_other_strategies_drive_the_agent(tmp_path, strategy):
    """Any strategy can run before the calls; what is sent is always Messages API (hermes works in OpenAI
    chat format and is converted back); tools the strategy cannot serve are not offered."""
    from compactscope.core.analysis.checker import check, rejected
    script = [reply(message([tool_use_block("read_file", {"path": "x.txt"}, "t1")])),
              reply(message([text_block("done")]))]
    with FakeAnthropic(script) as fake:
        agent, events = make_agent(fake, tmp_path, strategy=strategy, summarizer="offline")
        (tmp_path / "ws" / "x.txt").write_text("hello")
        assert agent.send("read x") == "done"
    for r in fake.message_requests:
        msgs = r["body"]["messages"]
        assert not rejected(check(msgs, "anthropic")) and all(m["role"] in ("user", "assistant") for m in msgs)
    names = [t["name"] for t in fake.message_requests[0]["body"]["tools"]]
    assert ("compact" in names) == (strategy == "claude_code")
    assert fake.message_requests[1]["body"]["messages"][-1]["content"][0]["content"] == "hello"
    assert [d["trace"].strategy for k, d in events if k == "trace"] == [strategy, strategy]
