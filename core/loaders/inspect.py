"""Inspect AI eval logs: ``.json`` (one EvalLog document) and the zipped
``.eval`` (``header.json`` + ``samples/<id>_epoch_<n>.json``). One
Conversation per sample, the first sample first.

Inspect messages become OpenAI chat messages (``tool_calls`` with JSON-string
arguments, ``tool`` messages with ``tool_call_id``); ``attachment://<hash>``
references are resolved from the sample's ``attachments``. ``model`` events give
the usage of each generated assistant message, ``compaction`` events
(``type``, ``tokens_before``, ``tokens_after``) become CompactionEvents.
"""
from __future__ import annotations

import json
import zipfile

from ..conversation import CompactionEvent, Conversation, LoadResult, MessageMeta, Problem, Provenance, Usage
from ..messages import OPENAI
from .base import JSONDecodeError, LoadError, Probe, document_lines, loads, parse_timestamp, read_json_document

FORMAT = "inspect-log"
MAX_MEMBER_BYTES = 1024 * 1024 * 1024


def sniff(probe: Probe) -> bool:
    if probe.head.startswith(b"PK\x03\x04"):
        return b"header.json" in probe.head or b"samples/" in probe.head or b"_journal/" in probe.head \
            or _zip_has_samples(probe)
    if not probe.starts_with(b"{"):
        return False
    head = probe.text_head
    return '"eval"' in head and '"version"' in head and ('"samples"' in head or '"plan"' in head
                                                          or '"results"' in head or '"task"' in head)


def _zip_has_samples(probe: Probe) -> bool:
    try:
        with zipfile.ZipFile(probe.path) as z:
            names = z.namelist()
    except (zipfile.BadZipFile, OSError, ValueError):
        return False
    return "header.json" in names or any(n.startswith("samples/") for n in names)


def _resolve(value, attachments: dict, depth: int = 0):
    if depth > 50:
        return value
    if isinstance(value, str):
        if value.startswith("attachment://"):
            return attachments.get(value[len("attachment://"):], value)
        return value
    if isinstance(value, list):
        return [_resolve(v, attachments, depth + 1) for v in value]
    if isinstance(value, dict):
        return {k: _resolve(v, attachments, depth + 1) for k, v in value.items()}
    return value


def _content(content):
    """Inspect content (str or list of Content items) -> OpenAI content and the reasoning found."""
    if isinstance(content, str) or content is None:
        return content or "", []
    if not isinstance(content, list):
        return str(content), []
    parts, reasoning = [], []
    for c in content:
        if not isinstance(c, dict):
            parts.append({"type": "text", "text": str(c)})
            continue
        t = c.get("type")
        if t == "text":
            parts.append({"type": "text", "text": str(c.get("text", ""))})
        elif t == "reasoning":
            reasoning.append(c)
        elif t == "image":
            parts.append({"type": "image_url", "image_url": {"url": str(c.get("image", ""))}})
        else:
            parts.append({"type": "text", "text": json.dumps(c, ensure_ascii=False, default=str)})
    if all(p.get("type") == "text" for p in parts):
        return "".join(p["text"] for p in parts), reasoning
    return parts, reasoning


def _message(m: dict) -> tuple[dict, dict]:
    role = m.get("role")
    content, reasoning = _content(m.get("content"))
    msg: dict = {"role": role, "content": content}
    extra = {k: v for k, v in m.items() if k not in ("role", "content", "tool_calls", "tool_call_id", "function")}
    if reasoning:
        extra["reasoning"] = reasoning
    if role == "assistant" and isinstance(m.get("tool_calls"), list) and m["tool_calls"]:
        calls = []
        for k, tc in enumerate(m["tool_calls"]):
            if not isinstance(tc, dict):
                continue
            args = tc.get("arguments")
            calls.append({"id": str(tc.get("id") or f"call_{k}"), "type": "function",
                          "function": {"name": str(tc.get("function") or "?"),
                                       "arguments": args if isinstance(args, str)
                                       else json.dumps(args if args is not None else {}, ensure_ascii=False)}})
        if calls:
            msg["tool_calls"] = calls
            if msg["content"] == "":
                msg["content"] = None
    if role == "tool":
        msg["tool_call_id"] = m.get("tool_call_id")
        if m.get("function"):
            msg["name"] = m.get("function")
        if isinstance(m.get("error"), dict) and not msg["content"]:
            msg["content"] = str(m["error"].get("message", ""))
    return msg, extra


def _usage(u) -> Usage | None:
    if not isinstance(u, dict):
        return None

    def num(k):
        v = u.get(k)
        return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else 0
    return Usage(num("input_tokens"), num("output_tokens"), num("input_tokens_cache_write"),
                 num("input_tokens_cache_read"))


def _sample(s: dict, path: str, where: str, header: dict, lines: list | None = None) -> Conversation:
    attachments = s.get("attachments") if isinstance(s.get("attachments"), dict) else {}
    raw = s.get("messages") if isinstance(s.get("messages"), list) else []
    msgs, meta, problems = [], [], []
    for i, m in enumerate(raw):
        if not isinstance(m, dict) or not isinstance(m.get("role"), str):
            problems.append(Problem(path, 0, f"{where}: messages[{i}] is not a message: skipped"))
            continue
        m = _resolve(m, attachments)
        msg, extra = _message(m)
        msgs.append(msg)
        meta.append(MessageMeta(Provenance(path, lines[i] if lines and i < len(lines) else 0,
                                           note=f"{where} messages[{i}]"), None, None,
                                m.get("model") if isinstance(m.get("model"), str) else None,
                                m.get("id") if isinstance(m.get("id"), str) else None, extra))
    events, model_events = [], []
    generated = [i for i, m in enumerate(msgs) if m["role"] == "assistant"]
    for k, e in enumerate(s.get("events") or []):
        if not isinstance(e, dict):
            continue
        if e.get("event") == "model":
            model_events.append(e)
        elif e.get("event") == "compaction":
            # the compaction happened before the next model call: its first output message
            nxt = generated[len(model_events)] if len(model_events) < len(generated) else len(msgs)
            tb, ta = e.get("tokens_before"), e.get("tokens_after")
            events.append(CompactionEvent("inspect", nxt, e.get("type") or e.get("source"),
                                          tb if isinstance(tb, int) else None, ta if isinstance(ta, int) else None,
                                          None, Provenance(path, 0, note=f"{where} events[{k}]"),
                                          {kk: v for kk, v in e.items() if kk not in ("event",)}))
    for k, e in enumerate(model_events):
        if k < len(generated):
            out = e.get("output") if isinstance(e.get("output"), dict) else {}
            i = generated[k]
            meta[i].usage = _usage(out.get("usage"))
            meta[i].timestamp = parse_timestamp(e.get("timestamp"))
            if isinstance(e.get("model"), str) and not meta[i].model:
                meta[i].model = e["model"]
    model = None
    ev = header.get("eval") if isinstance(header.get("eval"), dict) else {}
    if isinstance(ev.get("model"), str):
        model = ev["model"]
    title = f"sample {s.get('id')} epoch {s.get('epoch')}"
    task = ev.get("task")
    if isinstance(task, str):
        title = f"{task}: {title}"
    extra = {k: s.get(k) for k in ("id", "epoch", "input", "target", "scores", "metadata", "model_usage",
                                   "total_time", "working_time", "error") if k in s}
    return Conversation(msgs, OPENAI, None, None, model, title, path, FORMAT, meta, events, problems, extra)


def load(probe: Probe) -> LoadResult:
    path = str(probe.path)
    if probe.head.startswith(b"PK\x03\x04"):
        return _load_eval(probe)
    doc = read_json_document(probe.path)
    if not isinstance(doc, dict):
        raise LoadError(path, 1, "not an Inspect log: the document is not an object")
    samples = doc.get("samples")
    if not isinstance(samples, list) or not samples:
        raise LoadError(path, 1, "an Inspect log with no samples (was it written with samples excluded?)")
    lines = document_lines(probe.path, ("samples", "*", "messages"), doc)
    convs = [_sample(s, path, f"samples[{i}]", doc, lines.get(("samples", i, "messages")))
             for i, s in enumerate(samples) if isinstance(s, dict)]
    return _result(path, convs)


def _result(path: str, convs: list) -> LoadResult:
    convs = [c for c in convs if c.messages]
    if not convs:
        raise LoadError(path, 0, "an Inspect log whose samples hold no messages")
    problems = [p for c in convs for p in c.problems]
    return LoadResult(path, FORMAT, convs, problems)


def _read_member(z: zipfile.ZipFile, name: str, path: str):
    info = z.getinfo(name)
    if info.file_size > MAX_MEMBER_BYTES:
        raise LoadError(path, 0, f"{name} in the archive is {info.file_size:,} bytes: too large")
    try:
        return loads(z.read(name))
    except JSONDecodeError as e:
        raise LoadError(path, 0, f"{name} in the archive is broken JSON: {str(e).split(':')[0]}") from None


def _load_eval(probe: Probe) -> LoadResult:
    path = str(probe.path)
    try:
        with zipfile.ZipFile(probe.path) as z:
            names = z.namelist()
            header = {}
            for h in ("header.json", "_journal/start.json"):
                if h in names:
                    header = _read_member(z, h, path)
                    break
            sample_names = [n for n in names if n.startswith("samples/") and n.endswith(".json")]

            def order(n):
                stem = n[len("samples/"):-len(".json")]
                sid, _, ep = stem.rpartition("_epoch_")
                return (0, int(sid), int(ep or 0)) if sid.isdigit() and ep.isdigit() else (1, stem, 0)
            convs = []
            for n in sorted(sample_names, key=order):
                s = _read_member(z, n, path)
                if isinstance(s, dict):
                    convs.append(_sample(s, path, n, header if isinstance(header, dict) else {}))
    except zipfile.BadZipFile as e:
        raise LoadError(path, 0, f"a broken zip archive: {e}") from None
    except (OSError, EOFError, ValueError, KeyError) as e:
        raise LoadError(path, 0, f"cannot read the archive: {type(e).__name__}: {e}") from None
    if not sample_names:
        raise LoadError(path, 0, "a zip archive with no samples/*.json: not an Inspect .eval log")
    return _result(path, convs)
