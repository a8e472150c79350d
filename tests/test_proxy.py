"""The recording proxy between the real SDK (or a raw socket) and the fake API."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import anthropic
import pytest

from compactscope.core.live.proxy import ProxyError, RecordingProxy, check_bind, is_loopback
from compactscope.core.live.recorder import RecordingWriter, read_recording
from tests.fakeapi import FakeAnthropic, message, rate_limited, reply, text_block, tool_use_block
from helpers import wait_for

KEY = "-".join(("sk", "ant", "proxytest-abcdefghijklmnop"))   # a fake key, assembled so secret scanners skip the source
ROOT = Path(__file__).resolve().parents[1]


def raw_post(port: int, body: dict, extra_headers: str = "") -> socket.socket:
    data = json.dumps(body).encode()
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(f"POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
              f"x-api-key: {KEY}\r\n{extra_headers}Content-Length: {len(data)}\r\n\r\n".encode() + data)
    return s


def dechunk(raw: bytes) -> bytes:
    out, i = b"", 0
    while True:
        j = raw.index(b"\r\n", i)
        n = int(raw[i:j], 16)
        if n == 0:
            return out
        out += raw[j + 2:j + 2 + n]
        i = j + 2 + n + 2


def test_stream_passes_through_byte_for_byte_and_usage_is_recorded(tmp_path):
    msg = message([text_block("Hello from the fake, streamed in pieces."),
                   tool_use_block("bash", {"command": "ls -la"}, "toolu_x")],
                  usage={"input_tokens": 1234, "output_tokens": 56, "cache_read_input_tokens": 700,
                         "cache_creation_input_tokens": 5})
    rec_path = tmp_path / "proxy.jsonl"
    body = {"model": "m", "max_tokens": 100, "stream": True, "system": "SYS",
            "tools": [{"name": "bash", "input_schema": {"type": "object"}}],
            "messages": [{"role": "user", "content": "hi"}]}
    with FakeAnthropic([reply(msg)]) as fake, RecordingWriter(rec_path, source="proxy") as rec, \
            RecordingProxy(fake.url, port=0, recorder=rec) as proxy:
        s = raw_post(proxy.port, body)
        raw = b""
        while b"0\r\n\r\n" not in raw[-7:]:
            chunk = s.recv(65536)
            if not chunk:
                break
            raw += chunk
        s.close()
        head, _, rest = raw.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200")
        assert b"text/event-stream" in head.lower()
        assert dechunk(rest) == fake.sent[0]                 # byte for byte
        assert KEY in fake.requests[0]["headers"]["x-api-key"]   # the key went upstream
        assert wait_for(lambda: proxy.calls == 1)
    text = rec_path.read_text()
    assert KEY not in text and "x-api-key" not in text.lower()
    rr = read_recording(rec_path)
    c = rr.calls[0]
    assert c.request["system"] == "SYS" and c.request["tools"][0]["name"] == "bash" and c.messages == body["messages"]
    assert c.usage == {"input_tokens": 1234, "output_tokens": 56, "cache_read_input_tokens": 700,
                       "cache_creation_input_tokens": 5}
    assert c.response["content"][0]["text"] == "Hello from the fake, streamed in pieces."
    assert c.response["content"][1]["input"] == {"command": "ls -la"}
    assert c.response["stop_reason"] == "tool_use"
    assert c.raw["http"]["streamed"] is True and c.error is None


def test_sdk_through_proxy_json_stream_and_retry(tmp_path):
    rec_path = tmp_path / "p.jsonl"
    script = [reply(message([text_block("plain json")])), rate_limited(),
              reply(message([text_block("streamed ok")], usage={"input_tokens": 9, "output_tokens": 3}))]
    with FakeAnthropic(script) as fake, RecordingWriter(rec_path, source="proxy") as rec, \
            RecordingProxy(fake.url, port=0, recorder=rec) as proxy:
        client = anthropic.Anthropic(api_key=KEY, base_url=proxy.url, max_retries=2, timeout=10)
        r = client.messages.create(model="m", max_tokens=10, messages=[{"role": "user", "content": "a"}])
        assert r.content[0].text == "plain json"
        with client.messages.stream(model="m", max_tokens=10, messages=[{"role": "user", "content": "b"}]) as st:
            final = st.get_final_message()
        assert final.content[0].text == "streamed ok"
        assert wait_for(lambda: proxy.calls == 3)
    rr = read_recording(rec_path)
    assert [c.error["kind"] if c.error else None for c in rr.calls] == [None, "api", None]
    assert rr.calls[1].error["type"] == "rate_limit_error" and rr.calls[1].raw["http"]["status"] == 429
    assert rr.calls[2].usage["input_tokens"] == 9 and rr.calls[0].response["content"][0]["text"] == "plain json"
    assert KEY not in rec_path.read_text()


def test_client_disconnects_mid_stream(tmp_path):
    long = message([text_block("word " * 400)])
    rec_path = tmp_path / "d.jsonl"
    body = {"model": "m", "max_tokens": 100, "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    with FakeAnthropic([reply(long, chunk_delay=0.01), reply(message([text_block("next one")]))]) as fake, \
            RecordingWriter(rec_path, source="proxy") as rec, \
            RecordingProxy(fake.url, port=0, recorder=rec) as proxy:
        s = raw_post(proxy.port, body)
        got = s.recv(2048)
        assert got.startswith(b"HTTP/1.1 200")
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        s.close()                                              # gone mid-stream (RST)
        assert wait_for(lambda: proxy.calls == 1, 10)
        assert wait_for(lambda: fake.disconnects == 1, 10)     # the proxy dropped the upstream stream too
        # the proxy still serves the next client
        client = anthropic.Anthropic(api_key=KEY, base_url=proxy.url, max_retries=0, timeout=10)
        r = client.messages.create(model="m", max_tokens=10, messages=[{"role": "user", "content": "again"}])
        assert r.content[0].text == "next one"
        assert wait_for(lambda: proxy.calls == 2)
    rr = read_recording(rec_path)
    assert rr.calls[0].error["kind"] == "client_disconnected"
    assert rr.calls[0].usage["input_tokens"] == 100            # message_start arrived before the disconnect
    assert rr.calls[1].error is None and not rr.problems


def test_upstream_down_gives_502_and_a_recorded_error(tmp_path):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    dead = s.getsockname()[1]
    s.close()
    rec_path = tmp_path / "x.jsonl"
    with RecordingWriter(rec_path, source="proxy") as rec, \
            RecordingProxy(f"http://127.0.0.1:{dead}", port=0, recorder=rec) as proxy:
        client = anthropic.Anthropic(api_key=KEY, base_url=proxy.url, max_retries=0, timeout=10)
        with pytest.raises(anthropic.APIStatusError) as ei:
            client.messages.create(model="m", max_tokens=10, messages=[{"role": "user", "content": "a"}])
        assert ei.value.status_code == 502 and "cannot reach the upstream" in str(ei.value)
    rr = read_recording(rec_path)
    assert rr.calls[0].error["kind"] == "network"


def test_refuses_non_loopback_unless_asked():
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost") and is_loopback("127.5.0.1")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.5") and not is_loopback("example.com")
    for host in ("0.0.0.0", "192.168.1.5", "::"):
        with pytest.raises(ProxyError, match="--allow-remote"):
            check_bind(host, False)
        with pytest.raises(ProxyError, match="loopback"):
            RecordingProxy("http://127.0.0.1:1", host=host, port=0)
    with RecordingProxy("http://127.0.0.1:1", host="0.0.0.0", port=0, allow_remote=True) as p:
        assert p.server.server_address[0] == "0.0.0.0"
    from compactscope.app.cli import main
    assert main(["proxy", "--host", "0.0.0.0", "--port", "0"]) == 2


def test_cli_proxy_end_to_end(tmp_path):
    rec_path = tmp_path / "cli.jsonl"
    with FakeAnthropic([reply(message([text_block("via cli")]))]) as fake:
        env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
        proc = subprocess.Popen([sys.executable, "-m", "compactscope", "proxy", "--port", "0", "--upstream", fake.url,
                                 "--record", str(rec_path)], cwd=ROOT, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=env)
        try:
            first = proc.stdout.readline()
            assert first.startswith("compactscope proxy on http://127.0.0.1:"), first
            url = first.split()[3]
            client = anthropic.Anthropic(api_key=KEY, base_url=url, max_retries=0, timeout=10)
            r = client.messages.create(model="m", max_tokens=10, messages=[{"role": "user", "content": "a"}])
            assert r.content[0].text == "via cli"
            assert wait_for(lambda: len(read_recording(rec_path).calls) == 1)
        finally:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    assert proc.returncode == 0
    assert KEY not in rec_path.read_text()


def test_refuses_to_proxy_to_itself():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    with pytest.raises(ProxyError, match="loop"):
        RecordingProxy(f"http://127.0.0.1:{port}", port=port)
    with RecordingProxy(f"http://127.0.0.1:{port}", port=0) as p:   # a different port is fine
        assert p.port != port


def test_agent_through_the_proxy_both_recordings_agree(tmp_path):
    from compactscope.core.live.agent import Agent
    from compactscope.core.loaders import load
    script = [reply(message([tool_use_block("write_file", {"path": "n.txt", "content": "x"}, "w1")])),
              rate_limited(),
              reply(message([text_block("written")]))]
    ws = tmp_path / "ws"
    ws.mkdir()
    with FakeAnthropic(script) as fake, RecordingWriter(tmp_path / "proxy.jsonl", source="proxy") as prec, \
            RecordingProxy(fake.url, port=0, recorder=prec) as proxy, \
            RecordingWriter(tmp_path / "agent.jsonl", source="agent") as arec:
        agent = Agent(ws, api_key=KEY, base_url=proxy.url, recorder=arec, max_retries=2, timeout=10)
        assert agent.send("write n") == "written"
        assert wait_for(lambda: proxy.calls == 3)
    a, p = load(tmp_path / "agent.jsonl").main, load(tmp_path / "proxy.jsonl").main
    assert a.messages == p.messages and len(a.messages) == 4
    assert len(a.extra["calls"]) == 2 and len(p.extra["calls"]) == 3       # the proxy saw the 429 attempt too
    assert p.extra["calls"][1]["error"]["type"] == "rate_limit_error"
    for f in ("agent.jsonl", "proxy.jsonl"):
        assert KEY not in (tmp_path / f).read_text()


def test_pass_through_is_exact_for_any_text():
    """Property: whatever the streamed text (any unicode, any length), the client gets the upstream's bytes."""
    from hypothesis import HealthCheck, given, settings, strategies as st
    current = {}
    body = json.dumps({"model": "m", "max_tokens": 5, "stream": True,
                       "messages": [{"role": "user", "content": "x"}]}).encode()
    with FakeAnthropic(handler=lambda r: reply(current["msg"])) as fake, \
            RecordingProxy(fake.url, port=0) as proxy:

        @settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
        @given(text=st.text(min_size=0, max_size=400))
        def check(text):
            current["msg"] = message([text_block(text)])
            s = socket.create_connection(("127.0.0.1", proxy.port), timeout=5)
            s.sendall(b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      b"Content-Length: %d\r\n\r\n" % len(body) + body)
            raw = b""
            while not raw.endswith(b"\r\n0\r\n\r\n"):
                c = s.recv(65536)
                if not c:
                    break
                raw += c
            s.close()
            assert dechunk(raw.partition(b"\r\n\r\n")[2]) == fake.sent[-1]
        check()


def test_upstream_connection_is_kept_alive_per_client_connection():
    with FakeAnthropic([reply(message([text_block(str(i))])) for i in range(3)]) as fake, \
            RecordingProxy(fake.url, port=0) as proxy:
        client = anthropic.Anthropic(api_key=KEY, base_url=proxy.url, max_retries=0, timeout=10)
        for i in range(3):
            with client.messages.stream(model="m", max_tokens=5, messages=[{"role": "user", "content": "q"}]) as s:
                assert s.get_final_message().content[0].text == str(i)
    peers = {r["peer"] for r in fake.requests}
    assert len(fake.requests) == 3 and len(peers) == 1      # one upstream connection (no new TLS handshake per call)
