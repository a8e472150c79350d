"""Message helpers, the tool-pair index, dialect conversion, the checker, summarizers."""
import pytest
from helpers import a, tr, tu, u, worked_example

from compactscope.core.analysis.checker import check, rejected
from compactscope.core.model.messages import (
    ToolPairIndex,
    detect_dialect,
    has_tool_use,
    is_tool_result_message,
    to_anthropic,
    to_openai,
)
from compactscope.core.summarizers import (CachedSummarizer, FixedSummarizer, OfflineSummarizer, SummaryError, SummaryRequest,
                              make_summarizer)


def test_pair_index_positions_and_partner():
    msgs = [u("go"), tu("a", "b"), tr("a", "b"), tu("c")]
    idx = ToolPairIndex(msgs)
    assert idx.get("a").use == (1, 0) and idx.get("a").result == (2, 0)
    assert idx.partner(2, 1) == (1, 1) and idx.partner(1, 1) == (2, 1)
    assert not idx.get("c").complete and idx.complete_count == 2
    assert idx.ids_in_message(2) == ["a", "b"]


def test_predicates_follow_the_seed():
    assert has_tool_use(tu("x")) and not has_tool_use(tr("x")) and not has_tool_use(u("x"))
    assert is_tool_result_message(tr("x")) and not is_tool_result_message(u("text"))
    assert not has_tool_use({"role": "user", "content": [{"type": "tool_use", "id": "x"}]})


def test_openai_conversion_parallel_calls_and_back():
    msgs = [u("go"), {"role": "assistant", "content": [
        {"type": "thinking", "thinking": "hmm"}, {"type": "text", "text": "two calls"},
        {"type": "tool_use", "id": "a", "name": "read", "input": {"path": "x"}},
        {"type": "tool_use", "id": "b", "name": "read", "input": {"path": "y"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "X"},
                                     {"type": "tool_result", "tool_use_id": "b", "content": "Y"},
                                     {"type": "text", "text": "and now?"}]}]
    o = to_openai(msgs, system="sys")
    roles = [m["role"] for m in o.messages]
    assert roles == ["system", "user", "assistant", "tool", "tool", "user"]
    assert o.messages[2]["reasoning"] == "hmm" and len(o.messages[2]["tool_calls"]) == 2
    assert o.origin == [-1, 0, 1, 2, 2, 2]
    assert detect_dialect(o.messages) == "openai"
    assert not check(o.messages, "openai")
    back = to_anthropic(o.messages)
    assert back.system == "sys"
    assert [m["role"] for m in back.messages] == ["user", "assistant", "user"]
    assert [b["type"] for b in back.messages[2]["content"]] == ["tool_result", "tool_result", "text"]
    assert back.messages[1]["content"][2]["input"] == {"path": "x"}
    assert not check(back.messages)


def test_openai_bad_arguments_survive():
    msgs = [{"role": "user", "content": "go"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{not json"}}]},
            {"role": "tool", "tool_call_id": "a", "content": "ok"}]
    back = to_anthropic(msgs)
    assert back.messages[1]["content"][0]["input"] == {"_raw_arguments": "{not json"}


@pytest.mark.parametrize("msgs,code", [
    ([a("hi")], "first_not_user"),
    ([u("")], "empty_content"),
    ([u("go"), tu("x"), u("no result")], "unanswered_tool_use"),
    ([u("go"), a("k"), tr("x")], "orphan_tool_result"),
    ([{"role": "user", "content": [{"type": "video"}]}], "unknown_block"),
    ([{"role": "user", "content": [{"text": "t"}]}], "block_without_type"),
    ([], "empty_list"),
])
def test_checker_findings(msgs, code):
    f = check(msgs, "anthropic")
    assert code in {x.code for x in f}
    assert rejected(f)


def test_checker_last_unanswered_call_is_a_warning_only():
    f = check([u("go"), tu("x")])
    assert [x.code for x in f] == ["unanswered_tool_use"] and not rejected(f)


def test_checker_openai():
    msgs = [{"role": "system", "content": "s"}, {"role": "user", "content": "go"},
            {"role": "tool", "tool_call_id": "zz", "content": "r"}]
    assert "orphan_tool_result" in {x.code for x in check(msgs)}


def test_offline_summary_reads_structure():
    msgs = worked_example()
    msgs[0] = u("Fix the login bug in auth.py")
    msgs[2] = {"role": "assistant", "content": [{"type": "tool_use", "id": "t2", "name": "write_file",
                                                 "input": {"path": "src/auth.py", "content": "x"}}]}
    msgs[3] = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t2", "content": "denied",
                                            "is_error": True}]}
    res = OfflineSummarizer().summarize(SummaryRequest("p", tuple(msgs)))
    assert "Fix the login bug in auth.py" in res.text
    assert "src/auth.py (written)" in res.text
    assert "write_file x1" in res.text and "denied" in res.text
    assert "no LLM" in res.summarizer


def test_cache_pays_once():
    calls = []

    class Counting:
        name = "c"

        def summarize(self, req, cancel=None):
            calls.append(req)
            return FixedSummarizer("T").summarize(req)
    c = CachedSummarizer(Counting())
    r1 = c.summarize(SummaryRequest("same"))
    r2 = c.summarize(SummaryRequest("same"))
    c.summarize(SummaryRequest("other"))
    assert len(calls) == 2 and not r1.cached and r2.cached and r2.text == "T"


def test_anthropic_summarizer_without_key_says_what_to_do(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    s = make_summarizer("anthropic")
    with pytest.raises(SummaryError) as e:
        s.summarize(SummaryRequest("p"))
    assert e.value.kind == "auth" and "ANTHROPIC_API_KEY" in str(e.value)


def test_anthropic_summarizer_against_local_fake(monkeypatch):
    """A real SDK call against a fake server on loopback: text comes back, a 400 is classified."""
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    replies = []

    class H(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["content-length"])))
            replies.append(body)
            if self.path.endswith("/count_tokens"):
                out, code = {"input_tokens": 1000 + len(body["messages"])}, 200
            elif "TOO LONG" in body["messages"][0]["content"]:
                out = {"type": "error", "error": {"type": "invalid_request_error",
                                                  "message": "prompt is too long: 200251 tokens > 200000 maximum"}}
                code = 400
            else:
                out = {"id": "msg_1", "type": "message", "role": "assistant", "model": body["model"],
                       "content": [{"type": "text", "text": "summary text"}], "stop_reason": "end_turn",
                       "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 3}}
                code = 200
            data = json.dumps(out).encode()
            self.send_response(code)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
    th = threading.Thread(target=srv.serve_forever, daemon=True)
    th.start()
    try:
        from compactscope.core.summarizers.anthropic_api import AnthropicSummarizer
        s = AnthropicSummarizer(model="m", api_key="test-not-a-key",
                                base_url=f"http://127.0.0.1:{srv.server_address[1]}")
        r = s.summarize(SummaryRequest("hello", max_tokens=2000))
        assert r.text == "summary text" and r.summarizer == "Anthropic m"
        assert replies[0]["max_tokens"] == 2000
        with pytest.raises(SummaryError) as e:
            s.summarize(SummaryRequest("TOO LONG"))
        assert e.value.kind == "prompt_too_long"
        # count_tokens: used when configured, cached, and the figure names its estimator
        from compactscope.core.pipeline.engine import Engine
        from compactscope.core.pipeline.size import make_anthropic_counter
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-not-a-key")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", f"http://127.0.0.1:{srv.server_address[1]}")
        counter = make_anthropic_counter("m")
        eng = Engine("s08", {}, tokens=counter, summarizer=FixedSummarizer("S"))
        n_before = len(replies)
        t = eng.run([{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}])
        assert t.token_estimator == "anthropic count_tokens (m)"
        assert t.steps[0].tokens_before == 1002
        assert len(replies) - n_before == 1          # four layers, unchanged list: counted once
    finally:
        srv.shutdown()
        srv.server_close()


def test_count_tokens_cache_by_identity_and_failures_not_cached():
    from types import SimpleNamespace

    from compactscope.core.pipeline.size import AnthropicTokenCounter, SizeMeter

    calls = []

    class Msgs:
        def count_tokens(self, **body):
            calls.append(body)
            if len(calls) == 1:
                raise ConnectionError("network down")
            return SimpleNamespace(input_tokens=77)

    counter = AnthropicTokenCounter(SimpleNamespace(messages=Msgs()), "m")
    msgs = [u("hello"), a("hi")]
    meter = SizeMeter()
    assert counter.tokens(msgs, meter) == meter.size(msgs) // 4      # fell back, said why
    assert "network down" in counter.last_error
    assert counter.tokens(msgs, meter) == 77                         # the failure was not cached
    assert counter.tokens(list(msgs), meter) == 77 and len(calls) == 2   # same objects: no new call
