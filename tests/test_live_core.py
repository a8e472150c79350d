"""core.live: the agent's events typed, and the proxy's recorded calls put into words (no Qt)."""
from __future__ import annotations

from compactscope.core.live.sources import (
    EVENT_TYPES,
    Failed,
    ProxyWatch,
    Responded,
    TurnDone,
    agent_event,
    describe_error,
)


def test_agent_events_are_typed():
    ev = agent_event("response", {"message": {"role": "assistant", "content": []}, "usage": {
        "input_tokens": 10, "cache_read_input_tokens": 5, "output_tokens": 3}, "stop_reason": "end_turn",
        "call": None, "seconds": 1.5, "messages": []})
    assert isinstance(ev, Responded) and ev.context_tokens == 15 and ev.stop_reason == "end_turn"
    assert agent_event("done", {"text": "ok", "calls": 2}) == TurnDone("ok", 2)
    assert isinstance(agent_event("error", {"error": ValueError("x"), "call": None}), Failed)
    assert agent_event("something new", {}) is None
    assert set(EVENT_TYPES) == {"user", "trace", "stream", "response", "retry", "tool", "compaction", "error",
                                "done", "stopped"}


def test_proxy_calls_in_words():
    w = ProxyWatch()
    long = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}, {"role": "user", "content": "c"}]
    v = w.see({"request": {"model": "m", "messages": long, "system": "S"},
               "usage": {"input_tokens": 100, "cache_creation_input_tokens": 20, "output_tokens": 7},
               "response": {"stop_reason": "end_turn"}})
    assert v.n == 1 and v.context_tokens == 120 and not v.failed and v.context_changed is None
    assert v.note == "call 1: m, 3 messages, context 120 tokens, output 7, stop end_turn"
    assert v.conversation.messages == long and v.conversation.system == "S"
    v = w.see({"request": {"model": "m", "messages": [{"role": "user", "content": "summary"}]},
               "error": {"kind": "api_error", "status": 529, "type": "overloaded_error", "message": "busy"}})
    assert v.failed and "clients usually retry" in v.note and v.status.endswith("error api_error")
    assert v.context_changed == "the client changed its context (a compaction?): 3 \u2192 1 messages"
    assert w.see({"request": {}}).conversation is None
    assert describe_error({"kind": "client_disconnected"}) == "the client closed the connection mid-response"
