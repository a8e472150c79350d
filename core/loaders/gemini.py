"""Gemini CLI session JSON (``~/.gemini/tmp/<project>/chats/session-*.json``):
``{sessionId, projectHash, startTime, lastUpdated, messages: [{id, timestamp,
type: user|gemini|info|error|warning, content, thoughts?, tokens?, model?,
toolCalls?: [{id, name, args, result: [{functionResponse: {response}}], status}]}]}``.

Mapped onto OpenAI chat messages: a ``gemini`` message becomes an assistant
message with ``tool_calls``, followed by one ``tool`` message per call; info,
error and warning records are kept as metadata. ``tokens.cached`` is reported
as cache reads, so the context size is ``tokens.input``.
"""
from __future__ import annotations

import json
import re
from typing import Any

from ..model.conversation import Conversation, LoadResult, MessageMeta, Problem, Provenance, Usage
from ..model.messages import OPENAI
from .base import LoadError, Probe, note_problems, parse_timestamp, read_json_streamed, wrong_type
from ..files.jsonio import dict_at

FORMAT = "gemini-cli"
_HEAD = re.compile(r'"type"\s*:\s*"gemini"|"projectHash"\s*:')


def sniff(probe: Probe) -> bool:
    if not probe.starts_with(b"{"):
        return False
    head = probe.text_head
    return '"sessionId"' in head and '"messages"' in head and bool(_HEAD.search(head))


def _text(content) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(_text(p.get("text", "")) if isinstance(p, dict) else str(p) for p in content)
    if content is None:
        return ""
    return json.dumps(content, ensure_ascii=False)


def _count(tokens: dict, key: str) -> int:
    """A token count of a record's "tokens" (0 when missing or not a number)."""
    v = tokens.get(key)
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else 0


def result_text(call: dict) -> str:
    res = call.get("result")
    parts = []
    if isinstance(res, list):
        for r in res:
            fr = r.get("functionResponse") if isinstance(r, dict) else None
            resp = fr.get("response") if isinstance(fr, dict) else None
            if isinstance(resp, dict) and set(resp) <= {"output", "error"}:
                parts.append(str(resp.get("output", resp.get("error", ""))))
            elif resp is not None:
                parts.append(json.dumps(resp, ensure_ascii=False, default=str))
            elif isinstance(r, dict) and "text" in r:
                parts.append(str(r["text"]))
    elif res is not None:
        parts.append(_text(res))
    if not parts and isinstance(call.get("resultDisplay"), str):
        parts.append(call["resultDisplay"])
    return "\n".join(parts)


def load(probe: Probe) -> LoadResult:
    path = str(probe.path)
    read_notes: list = []
    doc, found_lines = read_json_streamed(probe.path, read_notes, ("messages",))
    if not isinstance(doc, dict) or not isinstance(doc.get("messages"), list):
        raise LoadError(path, 1, "not a Gemini CLI session: no \"messages\" list")
    lines = found_lines.get(("messages",), [])
    msgs, meta, notes = [], [], []
    problems: list[Problem] = note_problems(path, read_notes)
    model = None
    for i, rec in enumerate(doc["messages"]):
        if not isinstance(rec, dict):
            problems.append(Problem(path, 0, f"messages[{i}] is not an object: skipped"))
            continue
        t = rec.get("type")
        ts = parse_timestamp(rec.get("timestamp"))
        prov = Provenance(path, lines[i] if i < len(lines) else 0, note=f"messages[{i}]")
        extra = {k: v for k, v in rec.items() if k not in ("content", "toolCalls", "type", "timestamp", "id")}
        if t == "user":
            msgs.append({"role": "user", "content": _text(rec.get("content"))})
            meta.append(MessageMeta(prov, ts, uuid=rec.get("id"), extra=extra))
        elif t in ("gemini", "model", "assistant"):
            tok = dict_at(rec, "tokens")
            usage = Usage(max(_count(tok, "input") - _count(tok, "cached"), 0),
                          _count(tok, "output") + _count(tok, "thoughts"), 0, _count(tok, "cached")) if tok else None
            if isinstance(rec.get("model"), str):
                model = rec["model"]
            raw_calls = rec.get("toolCalls")
            if raw_calls is not None and not isinstance(raw_calls, list):
                problems.append(Problem(path, prov.line, f"messages[{i}].toolCalls is {wrong_type(raw_calls)}, "
                                                         "not a list: ignored"))
                raw_calls = None
            calls = [c for c in raw_calls or [] if isinstance(c, dict)]
            msg: dict[str, Any] = {"role": "assistant", "content": _text(rec.get("content")) or None}
            if calls:
                msg["tool_calls"] = [{"id": str(c.get("id") or f"call_{i}_{k}"), "type": "function",
                                      "function": {"name": str(c.get("name") or "?"),
                                                   "arguments": json.dumps(c.get("args") or {}, ensure_ascii=False)}}
                                     for k, c in enumerate(calls)]
            elif msg["content"] is None:
                msg["content"] = ""
            msgs.append(msg)
            meta.append(MessageMeta(prov, ts, usage, rec.get("model"), rec.get("id"), extra))
            for k, c in enumerate(calls):
                msgs.append({"role": "tool", "tool_call_id": msg["tool_calls"][k]["id"], "content": result_text(c)})
                meta.append(MessageMeta(Provenance(path, prov.line, note=f"messages[{i}].toolCalls[{k}]"),
                                        parse_timestamp(c.get("timestamp")) or ts,
                                        extra={kk: v for kk, v in c.items() if kk not in ("result", "args")}))
        else:
            notes.append({"index": i, "type": t, "content": rec.get("content"), "timestamp": rec.get("timestamp")})
    if not msgs:
        raise LoadError(path, 1, "a Gemini CLI session with no user or model message")
    extra = {k: v for k, v in doc.items() if k != "messages"}
    extra["notes"] = notes
    extra["agent"] = {"name": "Gemini CLI", "version": None, "versions": "before 0.39.0",
                      "version_note": "the file records no exact version"}
    conv = Conversation(msgs, OPENAI, None, None, model, str(doc.get("sessionId") or probe.path.name), path, FORMAT,
                        meta, problems=problems, extra=extra)
    return LoadResult(path, FORMAT, [conv], problems)
