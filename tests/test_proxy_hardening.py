"""The recording proxy against hostile or careless traffic (issue 13): every credential shape scrubbed from
the recording, every call recorded so that it loads back, size caps on every body, a bad Content-Length
answered, slow and half-sent requests dropped within a time bound, memory bounded."""
from __future__ import annotations

import base64
import json
import signal
import socket
import subprocess
import sys
import threading
import tracemalloc
from pathlib import Path

import pytest

from compactscope.core.loaders import load
from compactscope.core.live.proxy import RecordingProxy, header_secrets, redact_url
from compactscope.core.live.recorder import RecordingWriter, read_recording, scrub
from tests.fakeapi import FakeAnthropic, message, reply, text_block
from helpers import wait_for

ROOT = Path(__file__).resolve().parents[1]
# fake credentials, assembled so that secret scanners skip this source
CLIENT_KEY = "plain" + "clientkey" + "0123456789"                       # no sk- shape at all
ANT_KEY = "-".join(("sk", "ant", "api03", "abcdefghijklmnopqrstuvwxyz0123"))
BEARER = "oauth" + "token" + "ZYXWVUT98765"
PASSWORD = "hunter2" + "hunter2"


def send(port: int, raw: bytes, read_timeout: float = 5.0) -> bytes:
    s = socket.create_connection(("127.0.0.1", port), timeout=read_timeout)
    try:
        s.sendall(raw)
        out = b""
        while True:
            try:
                chunk = s.recv(65536)
            except socket.timeout:
                break
            if not chunk:
                break
            out += chunk
            if b"\r\n\r\n" in out and (b"content-length: 0" in out.lower() or out.endswith(b"}")):
                break
        return out
    finally:
        s.close()


def post(body: bytes, headers: dict) -> bytes:
    head = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    return (f"POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n{head}"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode() + body


# ------------------------------------------------------------------ secrets
def test_every_credential_shape_is_scrubbed(tmp_path):
    """The client's key without the sk- shape (in a header, pasted in a message, echoed by the model), a
    bearer token, key-like names (api-key, ANTHROPIC_API_KEY, password), sk-ant- keys after %20 or _ or
    as a JSON key, and the password of the --upstream URL: none reaches the recording."""
    echo = message([text_block(f"you said {CLIENT_KEY} and {BEARER} and {PASSWORD}; also %20{ANT_KEY}")])
    rec_path = tmp_path / "p.jsonl"
    body = {"model": "m", "max_tokens": 10, "messages": [
        {"role": "user", "content": f"my key is {CLIENT_KEY}, token {BEARER}"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "env", "input": {
            "api-key": "v1" * 8, "ANTHROPIC_API_KEY": "v2" * 8, "password": PASSWORD, "auth_token": "v3" * 8,
            "max_tokens": 7, "path": "/tmp/x"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content":
                                      f"GET /?q=%20{ANT_KEY} x_{ANT_KEY} done"}]},
        {"role": "user", "content": "ok"}],
        "metadata": {ANT_KEY: "as a key", "note": f"url https://user:{PASSWORD}@host/"}}
    with FakeAnthropic([reply(echo)]) as fake:
        upstream = fake.url.replace("http://", f"http://alice:{PASSWORD}@")
        with RecordingWriter(rec_path, source="proxy", meta={"upstream": redact_url(upstream)}) as rec, \
                RecordingProxy(upstream, port=0, recorder=rec) as proxy:
            out = send(proxy.port, post(json.dumps(body).encode(), {
                "x-api-key": CLIENT_KEY, "Authorization": f"Bearer {BEARER}", "anthropic-version": "2023-06-01"}))
            assert out.startswith(b"HTTP/1.1 200"), out[:200]
            assert wait_for(lambda: proxy.calls == 1)
            assert PASSWORD not in proxy.upstream and "***@" in proxy.upstream
        sent = fake.requests[0]["headers"]
        assert sent["x-api-key"] == CLIENT_KEY          # the request itself is passed on unchanged
    text = rec_path.read_text()
    for secret in (CLIENT_KEY, BEARER, PASSWORD, ANT_KEY, "v1" * 8, "v2" * 8, "v3" * 8):
        assert secret not in text, secret
    c = read_recording(rec_path).calls[0]
    inp = c.messages[1]["content"][0]["input"]
    assert set(inp) == {"max_tokens", "path"}             # credential names gone, ordinary ones kept
    assert c.messages[0]["content"] == "my key is [redacted], token [redacted]"
    assert "[redacted]" in c.response["content"][0]["text"]
    assert "[redacted]" in c.messages[2]["content"][0]["content"]
    assert load(rec_path).main.messages                   # and it still loads


def test_scrub_shapes_directly():
    assert scrub({"a": f"%20{ANT_KEY}", "b": f"x_{ANT_KEY}", ANT_KEY: 1}) == \
        {"a": "%20[redacted]", "b": "x_[redacted]", "[redacted]": 1}
    assert scrub({"Api-Key": 1, "ANTHROPIC_API_KEY": 2, "password": 3, "access_token": 4, "input_tokens": 5,
                  "budget_tokens": 6}) == {"input_tokens": 5, "budget_tokens": 6}
    # the client's key as given, or percent-encoded in a URL
    key = "abc/def+ghi=jkl"
    assert scrub(f"k={key} u=abc%2Fdef%2Bghi%3Djkl", [key]) == "k=[redacted] u=[redacted]"
    # a short known value (an auth header of 5 characters) goes as a whole word only: ordinary text stays
    assert scrub("shorts short", ["short"]) == "shorts [redacted]"
    assert scrub("ab ab", ["ab"]) == "ab ab"              # too short to tell from ordinary text
    basic = base64.b64encode(f"bob:{PASSWORD}".encode()).decode()
    found = header_secrets({"Authorization": f"Basic {basic}", "Cookie": "sid=s3cr3tvalue; x=1",
                            "Content-Type": "application/json"})
    assert PASSWORD in found and "s3cr3tvalue" in found and "application/json" not in found


def test_upstream_url_password_is_never_printed_or_recorded(tmp_path):
    rec_path = tmp_path / "cli.jsonl"
    with FakeAnthropic([reply(message([text_block("ok")]))]) as fake:
        upstream = fake.url.replace("http://", f"http://alice:{PASSWORD}@")
        proc = subprocess.Popen([sys.executable, "-m", "compactscope", "proxy", "--port", "0", "--upstream", upstream,
                                 "--record", str(rec_path)], cwd=ROOT, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        try:
            first = proc.stdout.readline()
            port = int(first.split()[3].rsplit(":", 1)[1])
            assert send(port, post(b'{"model":"m","messages":[{"role":"user","content":"a"}]}', {})).startswith(
                b"HTTP/1.1 200")
            assert wait_for(lambda: rec_path.exists() and len(read_recording(rec_path).calls) == 1)
            # the URL's credentials went upstream as Basic auth
            assert fake.requests[0]["headers"]["authorization"] == \
                "Basic " + base64.b64encode(f"alice:{PASSWORD}".encode()).decode()
        finally:
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=10)
    assert PASSWORD not in first + out + err and "***@" in first
    assert PASSWORD not in rec_path.read_text()


# ------------------------------------------------------------------ every call loads back
def test_odd_bodies_are_recorded_loadably(tmp_path):
    """NaN, Infinity, huge integers, lone surrogates and nesting deeper than any parser recurses: the call
    is recorded and the recording loads."""
    deep = "[" * 3000 + "1" + "]" * 3000
    bodies = [
        b'{"model":"m","temperature":NaN,"messages":[{"role":"user","content":"a"}]}',
        b'{"model":"m","top_p":Infinity,"x":-1e400,"messages":[{"role":"user","content":"b"}]}',
        b'{"model":"m","seed":123456789012345678901234567890,"messages":[{"role":"user","content":"c"}]}',
        b'{"model":"m","messages":[{"role":"user","content":"cut emoji \\ud83d here"}]}',
        ('{"model":"m","messages":[{"role":"user","content":"d"}],"metadata":' + deep + "}").encode(),
    ]
    rec_path = tmp_path / "odd.jsonl"
    with FakeAnthropic([reply(message([text_block(f"r{i}")])) for i in range(len(bodies))]) as fake, \
            RecordingWriter(rec_path, source="proxy") as rec, RecordingProxy(fake.url, port=0, recorder=rec) as proxy:
        for b in bodies:
            assert send(proxy.port, post(b, {})).startswith(b"HTTP/1.1 200")
        assert wait_for(lambda: proxy.calls == len(bodies))
    for line in rec_path.read_text(encoding="utf-8").splitlines():
        json.loads(line, parse_constant=lambda c: pytest.fail(f"{c} written"))      # strict JSON
    rr = read_recording(rec_path)
    assert len(rr.calls) == len(bodies) and not [p for p in rr.problems if "broken" in p[1]]
    contents = [c.messages[0]["content"] for c in sorted(rr.calls, key=lambda c: c.seq)]
    assert contents == ["a", "b", "c", "cut emoji \ufffd here", "d"]
    assert load(rec_path).main.messages


# ------------------------------------------------------------------ resource attacks (time and memory bounds)
@pytest.fixture
def small_proxy(tmp_path):
    with FakeAnthropic([reply(message([text_block("fine")])) for _ in range(5)]) as fake, \
            RecordingProxy(fake.url, port=0, max_body=256 * 1024, request_timeout=1.5, client_timeout=1.0) as proxy:
        yield proxy


def _status(raw: bytes) -> int:
    return int(raw.split(b" ", 2)[1]) if raw.startswith(b"HTTP/") else 0


def _still_serves(proxy) -> None:
    assert _status(send(proxy.port, post(b'{"model":"m","messages":[]}', {}))) == 200


def test_chunked_body_over_the_cap_is_refused_in_bounded_memory(small_proxy):
    s = socket.create_connection(("127.0.0.1", small_proxy.port), timeout=5)
    tracemalloc.start()
    s.sendall(b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
    chunk = b"x" * 65536
    try:
        for _ in range(64):                                 # 4 MB offered, the cap is 256 KB
            s.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
    except (BrokenPipeError, ConnectionResetError):
        pass
    raw = b""
    try:
        raw = s.recv(4096)
    except (ConnectionResetError, socket.timeout):
        pass
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    s.close()
    assert _status(raw) == 413                              # (before the socket's 5 s timeout: else raw is empty)
    assert peak < 2 * 1024 * 1024, peak                     # never held more than the cap (plus a chunk)
    _still_serves(small_proxy)


@pytest.mark.parametrize("value", ["abc", "-5", "1e3", "99999999999999999999999"])
def test_bad_content_length_gets_400(small_proxy, value):
    raw = send(small_proxy.port, (f"POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Length: {value}\r\n\r\n"
                                  "{}").encode())
    assert _status(raw) in (400, 413), raw[:100]
    _still_serves(small_proxy)


def test_malformed_chunk_size_gets_400(small_proxy):
    raw = send(small_proxy.port, b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                                 b"zz\r\nabc\r\n0\r\n\r\n")
    assert _status(raw) == 400


@pytest.mark.parametrize("how", ["half_headers", "half_body", "trickle"])
def test_slow_and_half_sent_requests_are_dropped_in_time(small_proxy, how):
    """request_timeout is 1.5 s: the proxy gives up on the request by then and keeps serving others."""
    s = socket.create_connection(("127.0.0.1", small_proxy.port), timeout=10)
    stop = threading.Event()
    if how == "half_headers":
        s.sendall(b"POST /v1/messages HTTP/1.1\r\nHost: x\r\n")
    elif how == "half_body":
        s.sendall(b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{\"model\":")
    else:
        def trickle():
            for c in b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 1000:
                if stop.wait(0.2):
                    return
                try:
                    s.send(bytes([c]))
                except OSError:
                    return
        threading.Thread(target=trickle, daemon=True).start()
    _still_serves(small_proxy)                            # meanwhile others are served
    dropped = True
    try:
        while s.recv(4096):
            pass
    except ConnectionResetError:
        pass
    except socket.timeout:                                 # 10 s without a word: still held by the proxy
        dropped = False
    stop.set()
    s.close()
    assert dropped                                         # the proxy closed it (at its 1.5 s deadline)
