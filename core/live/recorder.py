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
import threading
import time
from pathlib import Path
from typing import Any, Iterable

import orjson as _orjson

from ..runtime.record import field, record
from ..files.jsonio import (
    JSONDecodeError, LINE_TOO_LONG, dict_at, drop_mistyped, iter_lines, loads_lenient, open_regular, parse_timestamp,
)
from . import secret_scrub as _scrub
from ..files.safeio import dumps, json_safe, open_append

FORMAT_NAME = "compactscope.recording"
VERSION = 1

# What never reaches the file (credentials by name, by value and by shape): core.secret_scrub.
REDACTED = _scrub.REDACTED
MIN_SECRET = _scrub.MIN_SECRET
is_secret_name = _scrub.is_secret_name


def iso(t: float | None = None) -> str:
    t = time.time() if t is None else t
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int((t % 1) * 1000):03d}Z"


def scrub(obj: Any, secrets: Iterable[str] = (), keep: Iterable[str] = ()) -> Any:
    """A copy of ``obj`` without credential keys (``is_secret_name``), and with every known secret string
    (the client's key and auth header values, as given or percent-encoded), every value dropped with a
    credential key, and anything shaped like a credential (``secret_scrub.SHAPES`` but ``keep``) replaced
    by ``[redacted]``, in values and in keys alike."""
    return _scrub.Scrubber(secrets, keep)(obj)


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
        except (ValueError, RecursionError):        # broken, or nested deeper than the parser goes
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
                except (ValueError, RecursionError):
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
                 fsync: bool = False, keep_shapes: Iterable[str] = ()):
        self.path = Path(path)
        self.fsync = fsync
        # credential shapes the user keeps on purpose (--keep-secret-shape); ValueError for an unknown name
        self.keep_shapes: tuple[str, ...] = tuple(_scrub.check_shapes(keep_shapes))
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._secrets = [s for s in secrets if s]
        self._lock = threading.Lock()
        self._seq = 0
        # appended to, never through a symlink, only a regular file (safeio.open_append)
        self._f = open_append(self.path)
        new = os.fstat(self._f.fileno()).st_size == 0
        if not new:
            self._terminate_partial_line()
            self._seq = self._last_seq()
        header = {"type": "header", "format": FORMAT_NAME, "version": VERSION, "created": iso(), "source": source,
                  "pid": os.getpid()}
        if meta:
            header.update(meta)
        if self.keep_shapes:
            header["scrub_keeps"] = list(self.keep_shapes)
        self._write(header)

    def _terminate_partial_line(self) -> None:
        """If a previous writer crashed mid-line, start on a fresh line."""
        with open_regular(self.path) as f:
            f.seek(max(0, os.fstat(f.fileno()).st_size - 1))
            if f.read(1) not in (b"\n", b""):
                self._f.write(b"\n")

    def _last_seq(self) -> int:
        last = 0
        for _, raw in iter_lines(self.path):
            if raw is None:                   # a line over the limit: not a record of ours
                continue
            try:
                rec = loads_lenient(raw)
            except (ValueError, TypeError):
                continue
            if isinstance(rec, dict) and isinstance(rec.get("seq"), int):
                last = max(last, rec["seq"])
        return last

    def add_secret(self, s: str) -> None:
        if s:
            self._secrets.append(s)

    def _write(self, record: dict, scrubbed: dict | None = None) -> None:
        # strict JSON that every reader takes back: NaN/Infinity -> null, a lone surrogate -> U+FFFD, nesting
        # deeper than any reader takes -> cut (safeio.dumps); scrubbed of secrets first, and a call says
        # what was scrubbed (with what an earlier scrub, the proxy's, found)
        scrubber = _scrub.Scrubber(self._secrets, self.keep_shapes)
        record = scrubber(record)
        summary = _scrub.merge_summaries(scrubbed, scrubber.summary())
        if summary and record.get("type") == "call":
            record["scrubbed"] = summary
        data = (dumps(record) + "\n").encode("utf-8")
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
             extra: dict | None = None, scrubbed: dict | None = None) -> int:
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
        self._write(rec, scrubbed)
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
@record
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


@record
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


def _pair_to_call(rec: dict, n: int, seq: int, notes: list | None = None) -> CallRecord | None:
    """A request/response pair as a call. What only a lenient reader takes (a body kept as JSON text holding
    a cut emoji, NaN; a stream whose deltas split a character) is made valid, each change told in ``notes``."""
    req = rec["request"]
    body = req.get("body")
    if isinstance(body, str):
        try:
            body = json.loads(body)
        except (ValueError, RecursionError):
            return None
    if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
        return None
    body = scrub(body)
    resp = dict_at(rec, "response")
    response = usage = error = None
    rbody = resp.get("body")
    if isinstance(rbody, str):
        try:
            rbody = json.loads(rbody)
        except (ValueError, RecursionError):
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
    body, response, usage, error = json_safe([body, response, usage, error], notes)
    return CallRecord(seq, n, body, response, usage, error, None, parse_timestamp(req.get("timestamp")),
                      parse_timestamp(resp.get("timestamp")), "model",
                      {"url": req.get("url"), "method": req.get("method")})


def _writable(rec: Any, notes: list) -> Any:
    """``rec`` as it can be written again (orjson refuses nesting deeper than 254 levels, which Python's own
    JSON and str() handle only a little further): made valid by ``safeio.json_safe`` when orjson cannot
    write it."""
    try:
        _orjson.dumps(rec)
        return rec
    except (TypeError, _orjson.JSONEncodeError):
        return json_safe(rec, notes)


# The types of a call record's fields (loaders.base.drop_mistyped): a field of another type (a "seq" of "3a")
# is reported for its line and ignored; the call still loads.
_CALL_FIELDS = {"seq": (int,), "kind": (str,), "response": (dict,), "usage": (dict,), "error": (dict,),
                "trace": (dict,), "request": {"model": (str,), "messages": (list,), "tools": (list,)}}


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
    last_line_complete = True
    with open_regular(path) as f:
        size = os.fstat(f.fileno()).st_size
        if size:
            f.seek(size - 1)
            last_line_complete = f.read(1) == b"\n"
    last_n = 0
    for n, raw in iter_lines(path):
        last_n = n
        if raw is None:
            problems.append((n, LINE_TOO_LONG))
            continue
        notes: list = []
        try:
            rec = loads_lenient(raw, notes)      # NaN, 1e400, huge integers, lone surrogates: made valid
        except (ValueError, *JSONDecodeError) as e:
            problems.append((n, f"broken JSON, skipped: {str(e).split(':')[0]}"))
            continue
        rec = _writable(rec, notes)
        if notes:
            problems.append((n, "; ".join(notes)))
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
            bad = drop_mistyped(rec, _CALL_FIELDS)
            if bad:
                problems.append((n, "; ".join(bad)))
            seq = rec.get("seq")
            calls.append(CallRecord(seq if isinstance(seq, int) and not isinstance(seq, bool) else len(calls) + 1, n,
                                    req, rec.get("response"), rec.get("usage"), rec.get("error"), rec.get("trace"),
                                    parse_timestamp(rec.get("t_start")), parse_timestamp(rec.get("t_end")),
                                    str(rec.get("kind") or "model"), rec))
        elif t == "event":
            events.append({**rec, "_line": n})
        elif is_pair_log_record(rec):
            fmt = "proxy-log"
            notes = []
            c = _pair_to_call(rec, n, len(calls) + 1, notes)
            if c is None:
                problems.append((n, "a request whose body is not a Messages API request; skipped"))
            else:
                calls.append(c)
                if notes:
                    problems.append((n, "; ".join(dict.fromkeys(notes))))
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
