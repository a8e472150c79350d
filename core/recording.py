"""The Compactscope recording format: append-only JSONL, one record per model call.

Written by the built-in agent (``core.agent``) and the recording proxy
(``core.proxy``); read by ``core.loaders.recording``. See docs/recording-format.md.

Line 1 is a header record, then one ``call`` record per model call and
optional ``event`` records (a compaction the agent ran, a stop, ...). Every
record is written with a single ``write`` of one complete line and flushed, so
a crash loses at most the record in flight; a reader skips a cut-off last line.

Secrets never reach the file: request headers are not recorded at all, and
``scrub`` removes any key that looks like a credential from what is recorded.
"""
from __future__ import annotations

import json
import os
import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from .jsonio import JSONDecodeError, iter_lines, loads, parse_timestamp

FORMAT_NAME = "compactscope.recording"
VERSION = 1

# Keys never written, at any depth of a recorded request or response.
_SECRET_KEYS = {"api_key", "apikey", "x-api-key", "authorization", "proxy-authorization", "anthropic-api-key",
                "cookie", "set-cookie", "x-auth-token", "auth_token", "access_token", "refresh_token"}
# Strings that look like a key: Anthropic/OpenAI style secrets.
_SECRET_RE = re.compile(r"(?<![A-Za-z0-9_\-])(sk-ant-[A-Za-z0-9_\-]{8,}|sk-(?:proj-)?[A-Za-z0-9_\-]{32,})")
REDACTED = "[redacted]"


def iso(t: float | None = None) -> str:
    t = time.time() if t is None else t
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int((t % 1) * 1000):03d}Z"


def scrub(obj: Any, secrets: Iterable[str] = ()) -> Any:
    """A copy of ``obj`` without credential keys, and with any known secret
    string (and anything shaped like an API key) replaced by ``[redacted]``."""
    secrets = [s for s in secrets if s and len(s) >= 8]

    def walk(x):
        if isinstance(x, dict):
            return {k: walk(v) for k, v in x.items()
                    if not (isinstance(k, str) and k.lower() in _SECRET_KEYS)}
        if isinstance(x, list):
            return [walk(v) for v in x]
        if isinstance(x, str):
            for s in secrets:
                if s in x:
                    x = x.replace(s, REDACTED)
            if "sk-" in x:
                x = _SECRET_RE.sub(REDACTED, x)
            return x
        return x
    return walk(obj)


def trace_summary(trace) -> dict | None:
    """The pipeline's trace in a few lines per layer (no message lists)."""
    if trace is None:
        return None
    steps = []
    for s in trace.steps:
        d = {"layer": s.layer, "changed": s.changed, "messages_before": len(s.input), "messages_after": len(s.messages),
             "size_before": s.size_before, "size_after": s.size_after,
             "tokens_before": s.tokens_before, "tokens_after": s.tokens_after, "explain": s.explain()}
        if s.edits:
            d["edits"] = [e.text for e in s.edits[:20]]
        if s.triggered is not None:
            d["triggered"] = s.triggered
        if s.error:
            d["error"] = s.error
        if s.findings:
            d["findings"] = len(s.findings)
        steps.append(d)
    return {"strategy": trace.strategy, "order": list(trace.order), "size_estimator": trace.size_estimator,
            "steps": steps, "state": dict(trace.state_after)}


# ------------------------------------------------------------------ SSE
def sse_events(data: bytes) -> list[tuple[str, Any]]:
    """Parse a complete (or cut-off) SSE body into (event name, parsed data)."""
    out = []
    text = data.decode("utf-8", errors="replace").replace("\r\n", "\n")
    for chunk in text.split("\n\n"):
        name, lines = "", []
        for line in chunk.split("\n"):
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                lines.append(line[5:].lstrip(" "))
        if not lines:
            continue
        try:
            payload = json.loads("\n".join(lines))
        except ValueError:
            continue
        if not name and isinstance(payload, dict):
            name = str(payload.get("type", ""))
        out.append((name, payload))
    return out


class StreamAccumulator:
    """Rebuild a Messages API response (content, stop_reason, usage) from SSE
    bytes fed in arbitrary chunks. Never raises on bad input."""

    def __init__(self):
        self._buf = b""
        self.message: dict | None = None
        self.blocks: dict[int, dict] = {}
        self._partial_json: dict[int, str] = {}
        self.usage: dict = {}
        self.stop_reason = None
        self.stop_sequence = None
        self.error: dict | None = None
        self.complete = False

    def feed(self, data: bytes) -> None:
        # normalised once per feed (the kept tail is at most one unfinished event), then cut at each blank line
        buf = (self._buf + data).replace(b"\r\n", b"\n")
        start = 0
        while True:
            i = buf.find(b"\n\n", start)
            if i < 0:
                break
            chunk, start = buf[start:i + 2], i + 2
            for name, payload in sse_events(chunk):
                try:
                    self._event(name, payload)
                except Exception:  # a malformed event must not break the stream
                    pass
        self._buf = buf[start:]

    def _event(self, name: str, p: Any) -> None:
        if not isinstance(p, dict):
            return
        kind = p.get("type", name)
        if kind == "message_start":
            self.message = dict(p.get("message") or {})
            self.usage.update({k: v for k, v in (self.message.get("usage") or {}).items() if v is not None})
        elif kind == "content_block_start":
            self.blocks[int(p.get("index", len(self.blocks)))] = dict(p.get("content_block") or {})
        elif kind == "content_block_delta":
            idx = int(p.get("index", 0))
            b = self.blocks.setdefault(idx, {"type": "text", "text": ""})
            d = p.get("delta") or {}
            dt = d.get("type")
            if dt == "text_delta":
                b["text"] = b.get("text", "") + d.get("text", "")
            elif dt == "input_json_delta":
                self._partial_json[idx] = self._partial_json.get(idx, "") + d.get("partial_json", "")
            elif dt == "thinking_delta":
                b["thinking"] = b.get("thinking", "") + d.get("thinking", "")
            elif dt == "signature_delta":
                b["signature"] = d.get("signature", "")
        elif kind == "content_block_stop":
            idx = int(p.get("index", 0))
            if idx in self._partial_json:
                raw = self._partial_json.pop(idx)
                try:
                    self.blocks[idx]["input"] = json.loads(raw) if raw else {}
                except ValueError:
                    self.blocks[idx]["input"] = {"_unparsed": raw}
        elif kind == "message_delta":
            d = p.get("delta") or {}
            self.stop_reason = d.get("stop_reason", self.stop_reason)
            self.stop_sequence = d.get("stop_sequence", self.stop_sequence)
            self.usage.update({k: v for k, v in (p.get("usage") or {}).items() if v is not None})
        elif kind == "message_stop":
            self.complete = True
        elif kind == "error":
            self.error = p.get("error") or p

    def response(self) -> dict | None:
        if self.message is None:
            return None
        msg = {k: v for k, v in self.message.items() if k not in ("usage", "content")}
        msg["content"] = [self.blocks[i] for i in sorted(self.blocks)]
        msg["stop_reason"] = self.stop_reason
        msg["stop_sequence"] = self.stop_sequence
        return msg


# ------------------------------------------------------------------ writer
class RecordingWriter:
    """Appends records to a recording file. Thread-safe; one flushed line per record.

    ``secrets`` are strings (the API key) that must never be written: every
    record is scrubbed of them before it is serialised.
    """

    def __init__(self, path: str | os.PathLike, *, source: str, secrets: Iterable[str] = (), meta: dict | None = None,
                 fsync: bool = False):
        self.path = Path(path)
        self.fsync = fsync
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._secrets = [s for s in secrets if s]
        self._lock = threading.Lock()
        self._seq = 0
        new = not self.path.exists() or self.path.stat().st_size == 0
        self._f = self.path.open("ab", buffering=0)
        if not new:
            self._terminate_partial_line()
            self._seq = self._last_seq()
        header = {"type": "header", "format": FORMAT_NAME, "version": VERSION, "created": iso(), "source": source,
                  "pid": os.getpid()}
        if meta:
            header.update(meta)
        self._write(header)

    def _terminate_partial_line(self) -> None:
        """If a previous writer crashed mid-line, start on a fresh line."""
        with self.path.open("rb") as f:
            f.seek(max(0, self.path.stat().st_size - 1))
            if f.read(1) not in (b"\n", b""):
                self._f.write(b"\n")

    def _last_seq(self) -> int:
        last = 0
        for _, raw in iter_lines(self.path):
            try:
                rec = json.loads(raw)
            except (ValueError, TypeError):
                continue
            if isinstance(rec, dict) and isinstance(rec.get("seq"), int):
                last = max(last, rec["seq"])
        return last

    def add_secret(self, s: str) -> None:
        if s:
            self._secrets.append(s)

    def _write(self, record: dict) -> None:
        line = json.dumps(scrub(record, self._secrets), ensure_ascii=False, default=str) + "\n"
        data = line.encode("utf-8", errors="surrogatepass")
        with self._lock:
            if self._f.closed:
                raise ValueError(f"{self.path}: the recording is closed")
            self._f.write(data)   # unbuffered: one write of one complete line
            if self.fsync:
                try:
                    os.fsync(self._f.fileno())
                except OSError:
                    pass

    def next_seq(self) -> int:
        with self._lock:
            self._seq += 1
            return self._seq

    def call(self, *, request: dict, response: dict | None = None, usage: dict | None = None,
             error: dict | None = None, trace: dict | None = None, t_start: float | None = None,
             t_end: float | None = None, kind: str = "model", http: dict | None = None, seq: int | None = None,
             extra: dict | None = None) -> int:
        """Write one model call. ``request`` is the body sent (model, system, tools, messages, ...)."""
        seq = self.next_seq() if seq is None else seq
        t_end = time.time() if t_end is None else t_end
        rec = {"type": "call", "seq": seq, "kind": kind, "t_start": iso(t_start or t_end), "t_end": iso(t_end),
               "duration_ms": int(round(((t_end - t_start) if t_start else 0) * 1000)),
               "request": request, "response": response, "usage": usage, "error": error, "trace": trace}
        if http:
            rec["http"] = http
        if extra:
            rec.update(extra)
        self._write(rec)
        return seq

    def event(self, kind: str, **data) -> None:
        self._write({"type": "event", "kind": kind, "t": iso(), **data})

    def close(self) -> None:
        with self._lock:
            if not self._f.closed:
                self._f.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


# ------------------------------------------------------------------ reader
@dataclass
class CallRecord:
    seq: int
    line: int
    request: dict
    response: dict | None = None
    usage: dict | None = None
    error: dict | None = None
    trace: dict | None = None
    t_start: float | None = None
    t_end: float | None = None
    kind: str = "model"
    raw: dict = field(default_factory=dict)

    @property
    def messages(self) -> list:
        m = self.request.get("messages") if isinstance(self.request, dict) else None
        return m if isinstance(m, list) else []


@dataclass
class ReadResult:
    header: dict | None
    calls: list[CallRecord]
    events: list[dict]
    problems: list[tuple[int, str]]      # (line, text)
    source_format: str = FORMAT_NAME     # or "proxy-log" for request/response pair logs


def is_header(rec: Any) -> bool:
    return isinstance(rec, dict) and rec.get("type") == "header" and rec.get("format") == FORMAT_NAME


def is_pair_log_record(rec: Any) -> bool:
    """A request/response pair as recording proxies (claude-trace and similar) write them."""
    if not isinstance(rec, dict):
        return False
    req = rec.get("request")
    if not isinstance(req, dict):
        return False
    body = req.get("body")
    if isinstance(body, str):
        return '"messages"' in body
    return isinstance(body, dict) and isinstance(body.get("messages"), list)


def _pair_to_call(rec: dict, n: int, seq: int) -> CallRecord | None:
    req = rec["request"]
    body = req.get("body")
    if isinstance(body, str):
        try:
            body = json.loads(body)
        except ValueError:
            return None
    if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
        return None
    body = scrub(body)
    resp = rec.get("response") if isinstance(rec.get("response"), dict) else {}
    response = usage = error = None
    rbody = resp.get("body")
    if isinstance(rbody, str):
        try:
            rbody = json.loads(rbody)
        except ValueError:
            rbody = None
    raw_sse = resp.get("body_raw") or resp.get("sse") or resp.get("events_raw")
    status = resp.get("status_code", resp.get("status"))
    if isinstance(rbody, dict) and rbody.get("type") == "error":
        error = {"status": status, **(rbody.get("error") or {})}
    elif isinstance(rbody, dict) and "content" in rbody:
        response = {k: v for k, v in rbody.items() if k != "usage"}
        usage = rbody.get("usage")
    elif isinstance(raw_sse, str):
        acc = StreamAccumulator()
        acc.feed(raw_sse.encode("utf-8", errors="replace") + b"\n\n")
        response, usage = acc.response(), (acc.usage or None)
        if acc.error:
            error = {"status": status, **acc.error}
    elif isinstance(status, int) and status >= 400:
        error = {"status": status, "message": f"HTTP {status}"}
    return CallRecord(seq, n, body, response, usage, error, None, parse_timestamp(req.get("timestamp")),
                      parse_timestamp(resp.get("timestamp")), "model",
                      {"url": req.get("url"), "method": req.get("method")})


def read_recording(path: str | os.PathLike, max_problems: int = 200) -> ReadResult:
    """Read a Compactscope recording or a request/response pair log.

    Never raises on bad lines: a broken or cut-off line becomes a problem
    (with its line number) and is skipped.
    """
    path = Path(path)
    header = None
    calls: list[CallRecord] = []
    events: list[dict] = []
    problems: list[tuple[int, str]] = []
    fmt = FORMAT_NAME
    size = path.stat().st_size
    last_line_complete = True
    if size:
        with path.open("rb") as f:
            f.seek(size - 1)
            last_line_complete = f.read(1) == b"\n"
    last_n = 0
    for n, raw in iter_lines(path):
        last_n = n
        if raw is None:
            problems.append((n, "line is too long to load; skipped"))
            continue
        try:
            rec = loads(raw)
        except (ValueError, *JSONDecodeError) as e:
            problems.append((n, f"broken JSON, skipped: {str(e).split(':')[0]}"))
            continue
        if not isinstance(rec, dict):
            problems.append((n, f"a JSON {type(rec).__name__}, not a record; skipped"))
            continue
        t = rec.get("type")
        if is_header(rec):
            header = header or rec
        elif t == "call":
            req = rec.get("request")
            if not isinstance(req, dict):
                problems.append((n, "a call record without a request object; skipped"))
                continue
            calls.append(CallRecord(int(rec.get("seq") or len(calls) + 1), n, req, rec.get("response"),
                                    rec.get("usage"), rec.get("error"), rec.get("trace"),
                                    parse_timestamp(rec.get("t_start")), parse_timestamp(rec.get("t_end")),
                                    str(rec.get("kind") or "model"), rec))
        elif t == "event":
            events.append({**rec, "_line": n})
        elif is_pair_log_record(rec):
            fmt = "proxy-log"
            c = _pair_to_call(rec, n, len(calls) + 1)
            if c is None:
                problems.append((n, "a request whose body is not a Messages API request; skipped"))
            else:
                calls.append(c)
        elif isinstance(rec.get("request"), dict):
            continue   # another API call logged by a proxy (count_tokens, telemetry...): not a context
        else:
            if len(problems) < max_problems:
                problems.append((n, f"unknown record type {t!r}; skipped"))
    if fmt == FORMAT_NAME:
        calls.sort(key=lambda c: c.seq)   # request order (a proxy writes a call when its response ends)
    if problems and problems[-1][0] == last_n and not last_line_complete and "broken JSON" in problems[-1][1]:
        problems[-1] = (last_n, "the last record is cut off (the writer stopped mid-line); skipped")
    return ReadResult(header, calls, events, problems, fmt)
