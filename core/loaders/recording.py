"""Compactscope recordings (``core.recording``) and recording-proxy logs
(request/response pairs, one per line, as claude-trace and similar write them).

Both hold "the sequence of contexts the client sent". The loader rebuilds one
conversation per thread of calls (calls that share the system prompt and tool
set; the thread with the most calls comes first, side calls such as title
generation after it):

* a call whose context extends the previous call's context adds only its new
  messages; a call whose context is the same (a retry) adds nothing;
* a call that keeps the first message, the length and the roles but changes
  earlier messages (micro-compaction, cleared tool results) updates them in
  place and records an event, without a new segment;
* any other call (the client summarised or snipped its context) starts a new
  segment and records a ``CompactionEvent`` with the
  token counts before and after, and the layers that changed it when the
  recording carries the pipeline's trace;
* the last call's response is appended as the final assistant message.

Each message's meta names the line of the call that first sent it; each
assistant message gets the usage of the call that produced it.
``Conversation.extra["calls"]`` lists every call (time, size, usage, error,
trace summary) for timelines and charts.
"""
from __future__ import annotations

from ..model.conversation import CompactionEvent, Conversation, LoadResult, MessageMeta, Problem, Provenance, Usage
from ..model.messages import detect_dialect
from ..live.recorder import FORMAT_NAME, CallRecord, is_header, is_pair_log_record, read_recording
from .base import LoadError, Probe

try:
    import orjson

    def _dump(x) -> bytes:
        return orjson.dumps(x, option=orjson.OPT_SORT_KEYS, default=str)
except ImportError:  # pragma: no cover
    import json

    def _dump(x) -> bytes:
        return json.dumps(x, sort_keys=True, default=str).encode()

FORMAT = "recording"


def sniff(probe: Probe) -> bool:
    if not probe.starts_with(b"{"):
        return False
    for rec in probe.first_json_lines(5):
        if rec is None:
            continue
        if is_header(rec) or is_pair_log_record(rec):
            return True
        if isinstance(rec, dict) and rec.get("type") == "call" and isinstance(rec.get("request"), dict):
            return True
        return False
    return False


def _strip_cache_control(x):
    if isinstance(x, dict):
        return {k: _strip_cache_control(v) for k, v in x.items() if k != "cache_control"}
    if isinstance(x, list):
        return [_strip_cache_control(v) for v in x]
    return x


def _key(m) -> bytes:
    """Compare messages as the API sees them, ignoring where the client put cache_control."""
    raw = _dump(m)
    return _dump(_strip_cache_control(m)) if b'"cache_control"' in raw else raw


def _thread_key(c: CallRecord) -> tuple:
    tools = c.request.get("tools")
    names = tuple(str(t.get("name", "")) for t in tools if isinstance(t, dict)) if isinstance(tools, list) else ()
    system = c.request.get("system")
    if isinstance(system, list):
        system = " ".join(str(b.get("text", "")) for b in system if isinstance(b, dict))
    return names, str(system or "")[:300]


def _context_tokens(usage) -> int | None:
    u = Usage.from_dict(usage)
    return u.context_tokens if u is not None else None


def _changed_layers(c: CallRecord) -> list[str]:
    tr = c.trace if isinstance(c.trace, dict) else {}
    steps = tr.get("steps")
    return [s["layer"] for s in (steps if isinstance(steps, list) else [])
            if isinstance(s, dict) and s.get("changed") and isinstance(s.get("layer"), str)]


def _same_roles(a: list, b: list) -> bool:
    """Same roles position by position over ``b`` (the shorter, previous context)."""
    return all(isinstance(x, dict) and isinstance(y, dict) and x.get("role") == y.get("role") for x, y in zip(a, b))


def _build(path: str, calls: list[CallRecord], events: list[dict], title: str) -> Conversation:
    msgs: list = []
    meta: list[MessageMeta] = []
    segments = [0]
    comp: list[CompactionEvent] = []
    prev_keys: list[bytes] | None = None
    prev: CallRecord | None = None
    ev_i = 0
    call_rows = []
    for c in calls:
        ctx = c.messages
        keys = [_key(m) for m in ctx]
        # agent events (reactive / compact_tool) written since the previous call
        pending = []
        while ev_i < len(events) and events[ev_i]["_line"] < c.line:
            pending.append(events[ev_i])
            ev_i += 1
        edited: list[int] = []
        if prev_keys is not None and len(keys) >= len(prev_keys) and keys[:len(prev_keys)] == prev_keys:
            start = len(prev_keys)
        elif prev_keys and prev is not None and len(keys) >= len(prev_keys) and keys[0] == prev_keys[0] and \
                _same_roles(ctx, prev.messages):
            # edited in place (s08 micro_compact, cleared tool results): the history keeps one copy of each
            # message, as it was last sent, and the edit is an event; no new segment
            start = len(prev_keys)
            base = segments[-1]
            edited = [i for i in range(start) if keys[i] != prev_keys[i]]
            for i in edited:
                msgs[base + i] = ctx[i]
                old = meta[base + i]
                meta[base + i] = MessageMeta(old.provenance, old.timestamp, old.usage, old.model, old.uuid,
                                             {**old.extra, "edited_at_call": c.seq})
        else:
            start = 0
        if prev_keys is not None and (start == 0 or edited):
            kinds = [e.get("kind") for e in pending if e.get("kind") in ("reactive", "compact_tool")]
            layers = _changed_layers(c)
            trigger = kinds[-1] if kinds else ("+".join(layers) if layers else ("edit" if edited else None))
            pre = _context_tokens(prev.usage) if prev is not None else None
            at = segments[-1] + edited[0] if edited else len(msgs)
            extra = {"call": c.seq, "messages_before": len(prev_keys), "messages_after": len(ctx), "layers": layers}
            if edited:
                extra.update(in_place=True, edited=[segments[-1] + i for i in edited])
            # the first message of the new context is a summary when the head was replaced (a summary
            # compaction); a snip keeps the head, and an edit has no summary
            summary_at = at if (not edited and keys and keys[0] != prev_keys[0]) else None
            comp.append(CompactionEvent("recording", at, trigger, pre, _context_tokens(c.usage), summary_at,
                                        Provenance(path, c.line, note=f"call {c.seq}"), extra))
            if not edited and len(msgs) > segments[-1]:
                segments.append(len(msgs))
        for i in range(start, len(ctx)):
            m = ctx[i]
            usage = None
            model = None
            if i == start and prev is not None and start > 0 and isinstance(m, dict) and m.get("role") == "assistant":
                usage, model = Usage.from_dict(prev.usage), (prev.response or {}).get("model")
            msgs.append(m)
            meta.append(MessageMeta(Provenance(path, c.line, note=f"call {c.seq}, message {i}"), c.t_start, usage,
                                    model, extra={"call": c.seq}))
        u = Usage.from_dict(c.usage)
        call_rows.append({"seq": c.seq, "line": c.line, "t_start": c.t_start, "t_end": c.t_end,
                          "messages": len(ctx), "first_new": start, "model": c.request.get("model"),
                          "usage": c.usage, "context_tokens": u.context_tokens if u else None,
                          "stop_reason": (c.response or {}).get("stop_reason") if isinstance(c.response, dict)
                          else None, "error": c.error, "trace": c.trace, "kind": c.kind,
                          "history_end": len(msgs),
                          # Claude Code's metadata.user_id ends with _session_<id> (core.join matches sessions)
                          "user_id": (c.request.get("metadata") or {}).get("user_id")
                          if isinstance(c.request.get("metadata"), dict) else None})
        prev_keys, prev = keys, c
    if prev is not None and isinstance(prev.response, dict) and isinstance(prev.response.get("content"), list):
        msgs.append({"role": "assistant", "content": prev.response["content"]})
        meta.append(MessageMeta(Provenance(path, prev.line, note=f"response of call {prev.seq}"), prev.t_end,
                                Usage.from_dict(prev.usage), prev.response.get("model"),
                                extra={"call": prev.seq, "response_only": True}))
    last = calls[-1].request if calls else {}
    # the dialect of the whole request (a system-role message inside an Anthropic request stays Anthropic)
    dialect = detect_dialect(msgs, system=last.get("system")) if msgs else "anthropic"
    conv = Conversation(msgs, dialect, last.get("system"), last.get("tools"),
                        last.get("model"), title, path, FORMAT, meta, comp, [], {"calls": call_rows}, segments)
    return conv


def load(probe: Probe) -> LoadResult:
    path = str(probe.path)
    rr = read_recording(probe.path)
    problems = [Problem(path, n, text, "warning" if "cut off" in text else "error") for n, text in rr.problems]
    calls = [c for c in rr.calls if c.messages]
    summaries = [c for c in calls if c.kind == "summary"]     # the agent's summary calls: a thread of their own
    others = [c for c in calls if c.kind != "summary"]
    if others:
        calls = others
    else:
        summaries = []
    if not calls:
        why = f" ({problems[0]})" if problems else ""
        if rr.header is not None:
            raise LoadError(path, 0, "this recording holds no model call yet" + why)
        raise LoadError(path, 0, "no Messages API request found in this proxy log" + why)
    threads: dict[tuple, list[CallRecord]] = {}
    for c in calls:
        threads.setdefault(_thread_key(c), []).append(c)
    ordered = sorted(threads.values(), key=lambda cs: (-len(cs), cs[0].line))
    convs = []
    src = (rr.header or {}).get("source") or ("proxy log" if rr.source_format == "proxy-log" else "recording")
    for k, cs in enumerate(ordered):
        title = f"{src}: {len(cs)} call(s)" + ("" if k == 0 else f", side thread {k} ({cs[0].request.get('model')})")
        conv = _build(path, cs, rr.events if k == 0 else [], title)
        conv.extra.update({"recording": rr.header, "source_format": rr.source_format, "thread": k})
        convs.append(conv)
    if summaries:
        sc = _build(path, summaries, [], f"{src}: {len(summaries)} summary call(s)")
        sc.extra.update({"recording": rr.header, "source_format": rr.source_format, "thread": len(convs),
                         "kind": "summary_calls"})
        convs.append(sc)
    convs[0].problems = list(problems)
    fmt = FORMAT if rr.source_format == FORMAT_NAME else "proxy-log"
    for conv in convs:
        conv.format = fmt
    return LoadResult(path, fmt, convs, problems)
