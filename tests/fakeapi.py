"""A local fake of the Anthropic Messages API for tests: real HTTP on 127.0.0.1.

    with FakeAnthropic([reply(tool_use_msg(...)), reply(text_msg("done"))]) as fake:
        client = anthropic.Anthropic(api_key="test-key", base_url=fake.url, max_retries=2)

Each POST to /v1/messages takes the next scripted reply (or asks ``handler``).
A message reply is sent as JSON, or as an SSE stream when the request asked for
``stream: true`` (with Transfer-Encoding: chunked, as the real API does).
Errors carry ``retry-after-ms: 1`` so the SDK's retries are instant. Every
request's path, headers and parsed body are kept in ``fake.requests``.
"""
from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

_ids = iter(range(1, 10**9))


def text_block(text: str) -> dict:
    return {"type": "text", "text": text}


def tool_use_block(name: str, input: dict, id: str | None = None) -> dict:
    return {"type": "tool_use", "id": id or f"toolu_{next(_ids):04d}", "name": name, "input": input}


def message(content: list, stop_reason: str | None = None, usage: dict | None = None, model: str = "fake-model") -> dict:
    if stop_reason is None:
        stop_reason = "tool_use" if any(b.get("type") == "tool_use" for b in content) else "end_turn"
    return {"id": f"msg_{next(_ids):06d}", "type": "message", "role": "assistant", "model": model,
            "content": content, "stop_reason": stop_reason, "stop_sequence": None,
            "usage": usage or {"input_tokens": 100, "output_tokens": 10, "cache_creation_input_tokens": 0,
                               "cache_read_input_tokens": 0}}


def sse_chunks(msg: dict) -> list[bytes]:
    """The event stream the API sends for ``msg``, one event per chunk."""
    def ev(name: str, data: dict) -> bytes:
        return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()
    usage = dict(msg["usage"])
    start = {k: v for k, v in msg.items() if k not in ("content",)}
    start = {**start, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 1}}
    out = [ev("message_start", {"type": "message_start", "message": start}), ev("ping", {"type": "ping"})]
    for i, b in enumerate(msg["content"]):
        if b["type"] == "text":
            out.append(ev("content_block_start", {"type": "content_block_start", "index": i,
                                                  "content_block": {"type": "text", "text": ""}}))
            t = b["text"]
            for j in range(0, max(len(t), 1), 7):
                out.append(ev("content_block_delta", {"type": "content_block_delta", "index": i,
                                                      "delta": {"type": "text_delta", "text": t[j:j + 7]}}))
        elif b["type"] == "tool_use":
            out.append(ev("content_block_start", {"type": "content_block_start", "index": i, "content_block":
                                                  {"type": "tool_use", "id": b["id"], "name": b["name"], "input": {}}}))
            raw = json.dumps(b["input"])
            for j in range(0, len(raw), 5):
                out.append(ev("content_block_delta", {"type": "content_block_delta", "index": i,
                                                      "delta": {"type": "input_json_delta", "partial_json": raw[j:j + 5]}}))
        out.append(ev("content_block_stop", {"type": "content_block_stop", "index": i}))
    out.append(ev("message_delta", {"type": "message_delta", "delta": {"stop_reason": msg["stop_reason"],
                                                                       "stop_sequence": None},
                                    "usage": {"output_tokens": usage.get("output_tokens", 0)}}))
    out.append(ev("message_stop", {"type": "message_stop"}))
    return out


@dataclass
class Reply:
    status: int = 200
    body: Any = None                       # dict (JSON) for normal replies and errors
    headers: dict = field(default_factory=dict)
    chunk_delay: float = 0.0               # seconds between SSE chunks


def reply(msg: dict, **kw) -> Reply:
    return Reply(200, msg, **kw)


def error(status: int, etype: str, text: str, **headers) -> Reply:
    h = {"retry-after-ms": "1", "request-id": "req_fake"}
    h.update({k.replace("_", "-"): v for k, v in headers.items()})
    return Reply(status, {"type": "error", "error": {"type": etype, "message": text}}, h)


def prompt_too_long(n: int = 200251, m: int = 200000) -> Reply:
    return error(400, "invalid_request_error", f"prompt is too long: {n} tokens > {m} maximum")


def rate_limited() -> Reply:
    return error(429, "rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit")


def overloaded() -> Reply:
    return error(529, "overloaded_error", "Overloaded")


class FakeAnthropic:
    """A bounded fake API server. Use as a context manager; it stops on exit."""

    def __init__(self, script: list[Reply] | None = None, handler: Callable[[dict], Reply] | None = None):
        self.script = list(script or [])
        self.handler = handler
        self.requests: list[dict] = []
        self.sent: list[bytes] = []                 # the exact body bytes of each reply
        self.disconnects = 0
        self._lock = threading.Lock()
        fake = self

        class H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_POST(self):
                n = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(n) if n else b""
                try:
                    body = json.loads(raw) if raw else None
                except (ValueError, RecursionError):     # not JSON, or nested deeper than json recurses
                    body = None
                req = {"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()}, "body": body,
                       "raw": raw, "peer": self.client_address}
                with fake._lock:
                    fake.requests.append(req)
                    if fake.handler is not None:
                        r = fake.handler(req)
                    elif fake.script:
                        r = fake.script.pop(0)
                    else:
                        r = reply(message([text_block("(the fake API has no more scripted replies)")]))
                try:
                    fake._send(self, r, bool(isinstance(body, dict) and body.get("stream")))
                except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
                    with fake._lock:
                        fake.disconnects += 1
                    self.close_connection = True

            def do_GET(self):
                data = json.dumps({"data": [], "has_more": False}).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def _send(self, h: BaseHTTPRequestHandler, r: Reply, stream: bool) -> None:
        is_msg = r.status == 200 and isinstance(r.body, dict) and r.body.get("type") == "message"
        if stream and is_msg:
            chunks = sse_chunks(r.body)
            with self._lock:
                self.sent.append(b"".join(chunks))
            h.send_response(200)
            h.send_header("content-type", "text/event-stream; charset=utf-8")
            h.send_header("cache-control", "no-cache")
            h.send_header("transfer-encoding", "chunked")
            for k, v in r.headers.items():
                h.send_header(k, v)
            h.end_headers()
            for c in chunks:
                h.wfile.write(f"{len(c):x}\r\n".encode() + c + b"\r\n")
                h.wfile.flush()
                if r.chunk_delay:
                    time.sleep(r.chunk_delay)
            h.wfile.write(b"0\r\n\r\n")
            h.wfile.flush()
            return
        data = json.dumps(r.body).encode()
        with self._lock:
            self.sent.append(data)
        h.send_response(r.status)
        h.send_header("content-type", "application/json")
        h.send_header("content-length", str(len(data)))
        for k, v in r.headers.items():
            h.send_header(k, v)
        h.end_headers()
        h.wfile.write(data)

    def start(self) -> "FakeAnthropic":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    @property
    def message_requests(self) -> list[dict]:
        return [r for r in self.requests if r["path"].split("?")[0].endswith("/v1/messages")]
