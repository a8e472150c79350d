"""Anthropic Messages: a JSON list of messages, a request body with
"messages", or JSONL with one message per line (the s08 transcripts)."""
from __future__ import annotations

from ..conversation import Conversation, LoadResult, MessageMeta, Problem, Provenance
from ..messages import ANTHROPIC, OPENAI, detect_dialect
from .base import JSONDecodeError, LoadError, Probe, iter_lines, loads, read_json_document

FORMAT = "anthropic-messages"


def _is_message(x) -> bool:
    return isinstance(x, dict) and isinstance(x.get("role"), str)


def sniff(probe: Probe) -> bool:
    if probe.starts_with(b"[", b"{"):
        lines = probe.first_json_lines(5)
        if lines and all(_is_message(x) for x in lines if x is not None) and any(_is_message(x) for x in lines):
            return True   # JSONL of messages
        if probe.starts_with(b"["):
            return True   # a JSON list: validated on load
        head = probe.text_head
        return '"messages"' in head
    return False


def _check_messages(items, path: str, line_of) -> list:
    msgs = []
    for i, m in enumerate(items):
        if not isinstance(m, dict):
            raise LoadError(path, line_of(i), f"message {i} is a {type(m).__name__}, not a message object")
        if not isinstance(m.get("role"), str):
            raise LoadError(path, line_of(i), f"message {i} has no \"role\"")
        msgs.append(m)
    return msgs


def load(probe: Probe) -> LoadResult:
    path = str(probe.path)
    first = probe.first_json_lines(2)
    jsonl = probe.starts_with(b"{") and any(_is_message(x) for x in first)
    problems: list[Problem] = []
    meta: list[MessageMeta] = []
    system = tools = model = None
    if jsonl:
        msgs = []
        for n, raw in iter_lines(probe.path):
            if raw is None:
                problems.append(Problem(path, n, "line is too long to load; skipped", "error"))
                continue
            try:
                m = loads(raw)
            except JSONDecodeError as e:
                problems.append(Problem(path, n, f"broken JSON, skipped: {str(e).split(':')[0]}", "error"))
                continue
            if not _is_message(m):
                problems.append(Problem(path, n, "not a message object (no \"role\"), skipped", "error"))
                continue
            msgs.append(m)
            meta.append(MessageMeta(Provenance(path, n)))
        if not msgs:
            raise LoadError(path, 0, "no message found: " + (str(problems[0]) if problems else "every line is blank"))
    else:
        doc = read_json_document(probe.path)
        if isinstance(doc, dict):
            if not isinstance(doc.get("messages"), list):
                raise LoadError(path, 1, "a JSON object without a \"messages\" list: not a request body")
            system, tools, model = doc.get("system"), doc.get("tools"), doc.get("model")
            items = doc["messages"]
        elif isinstance(doc, list):
            items = doc
        else:
            raise LoadError(path, 1, f"the file holds a JSON {type(doc).__name__}, not a list of messages")
        msgs = _check_messages(items, path, lambda i: 0)
        meta = [MessageMeta(Provenance(path, 0, note=f"message {i}")) for i in range(len(msgs))]
    dialect = detect_dialect(msgs)
    conv = Conversation(msgs, dialect, system, tools, model, probe.path.name, path,
                        FORMAT if dialect == ANTHROPIC else "openai-chat", meta, problems=problems)
    return LoadResult(path, conv.format, [conv], problems)
