"""Anthropic Messages: a JSON list of messages, a request body with
"messages", or JSONL with one message per line (the s08 transcripts).

s08 transcripts were written with ``default=str``, so assistant blocks may be
SDK repr strings ("[TextBlock(...), ToolUseBlock(...)]"); they are parsed back
into blocks (see ``sdk_repr``, never eval). An API trace document with
``cycles`` of ``{request, response}`` (learn-claude-code traces) loads as the
last request's messages plus the last response, with usage per response.
"""
from __future__ import annotations

from ..model.conversation import NO_EXTRA, Conversation, LoadResult, MessageMeta, Problem, Provenance, Usage, own_extra
from ..model.messages import ANTHROPIC, detect_dialect
from .base import (
    LINE_TOO_LONG, JSONDecodeError, LoadError, Probe, document_lines, iter_lines, loads_lenient, note_problems,
    parse_timestamp, read_json_streamed, wrong_type,
)
from .sdk_repr import content_from_repr

FORMAT = "anthropic-messages"
TAKES_PROBED_DOCUMENT = True    # a one-line document the load's probe read whole is not read again


def _is_message(x) -> bool:
    return isinstance(x, dict) and isinstance(x.get("role"), str)


def first_line_is_object(probe: Probe) -> bool:
    """JSONL: the first non-blank line is a whole JSON object (a pretty-printed document's is not)."""
    if not probe.starts_with(b"{"):
        return False
    lines = probe.first_json_lines(2)
    if not lines:
        return _is_message(probe.first_line_value())    # a first line longer than the probe
    if not isinstance(lines[0], dict):
        return False
    return _is_message(lines[0]) or (len(lines) >= 2 and isinstance(lines[1], dict))


def sniff(probe: Probe) -> bool:
    if probe.starts_with(b"[", b"{"):
        lines = probe.first_json_lines(5)
        if lines and all(_is_message(x) for x in lines if x is not None) and any(_is_message(x) for x in lines):
            return True   # JSONL of messages
        if not lines and probe.starts_with(b"{") and _is_message(probe.first_line_value()):
            return True   # JSONL whose first message is longer than the probe
        if probe.starts_with(b"["):
            return True   # a JSON list: validated on load
        head = probe.text_head
        return '"messages"' in head or '"cycles"' in head
    return False


def _check_messages(items, path: str, line_of, problems: list) -> tuple[list, list]:
    """The items that are messages, and their indices in ``items``; any other item is a problem for its
    line and skipped (the rest loads). LoadError only when no item is a message."""
    msgs, where = [], []
    first = len(problems)
    for i, m in enumerate(items):
        if not isinstance(m, dict):
            problems.append(Problem(path, line_of(i), f"message {i} is {wrong_type(m)}, not a message object: "
                                                      "skipped", "error"))
        elif not isinstance(m.get("role"), str):
            problems.append(Problem(path, line_of(i), f"message {i} has no \"role\" string: skipped", "error"))
        else:
            msgs.append(m)
            where.append(i)
    if items and not msgs:
        raise LoadError(path, line_of(0), f"no item is a message ({problems[first].text})")
    return msgs, where


def fix_repr(msgs: list, meta: list, path: str, problems: list) -> list:
    """Parse SDK repr strings back into blocks (a new dict for each changed message)."""
    out = []
    fixed = 0
    for i, m in enumerate(msgs):
        c = m.get("content")
        if type(c) is str and "type=" not in c:
            out.append(m)      # plain text (an SDK repr always holds "type=")
            continue
        if type(c) is list and not any(type(b) is str or (type(b) is dict and b.get("type") == "unknown")
                                       for b in c):
            out.append(m)      # the usual case: plain blocks, nothing to parse (quick check)
            continue
        if isinstance(c, (str, list)):
            new, changed = content_from_repr(c)
            if changed:
                m = {**m, "content": new}
                fixed += 1
                if i < len(meta):
                    own_extra(meta[i])["from_sdk_repr"] = True
        out.append(m)
    if fixed:
        problems.append(Problem(path, 0, f"{fixed} message(s) held SDK repr strings (written with default=str); "
                                         "parsed back into blocks", "info"))
    return out


def read_messages(probe: Probe, doc=None, doc_lines: dict | None = None) -> tuple:
    """(messages, meta, system, tools, model, problems) for a list, body or JSONL file.

    ``doc``: the parsed document when the caller already read it (not parsed again), ``doc_lines`` the
    lines of its elements when known (``read_json_streamed``)."""
    path = str(probe.path)
    problems: list[Problem] = []
    meta: list[MessageMeta] = []
    system = tools = model = None
    if doc is None and first_line_is_object(probe):
        from ..files.jsonstream import share_strings
        msgs = []
        shared: dict = {}       # a role or a block type once for the file, as a streamed document keeps them
        for n, raw in iter_lines(probe.path):
            if raw is None:
                problems.append(Problem(path, n, LINE_TOO_LONG, "error"))
                continue
            notes: list = []
            try:
                m = loads_lenient(raw, notes)
            except JSONDecodeError as e:
                problems.append(Problem(path, n, f"broken JSON, skipped: {str(e).split(':')[0]}", "error"))
                continue
            problems += note_problems(path, notes, n)
            if not _is_message(m):
                problems.append(Problem(path, n, "not a message object (no \"role\"), skipped", "error"))
                continue
            share_strings(m, shared)
            msgs.append(m)
            meta.append(MessageMeta(Provenance(path, n), parse_timestamp(m.get("timestamp")), extra=NO_EXTRA))
        if not msgs:
            raise LoadError(path, 0, "no message found: " + (str(problems[0]) if problems else "every line is blank"))
    else:
        found_lines = doc_lines
        if doc is None:
            notes = []
            taken = probe.take_document()
            if taken is not None:
                doc, found_lines, notes = taken
            else:
                doc, found_lines = read_json_streamed(probe.path, notes)
            problems += note_problems(path, notes)
        if isinstance(doc, dict):
            if not isinstance(doc.get("messages"), list):
                raise LoadError(path, 1, "a JSON object without a \"messages\" list: not a request body")
            system, tools, model = doc.get("system"), doc.get("tools"), doc.get("model")
            items = doc["messages"]
        elif isinstance(doc, list):
            items = doc
        else:
            raise LoadError(path, 1, f"the file holds a JSON {type(doc).__name__}, not a list of messages")
        at = ("messages",) if isinstance(doc, dict) else ()
        lines = (found_lines if found_lines is not None else document_lines(probe.path, at, doc)).get(at, [])

        def line_of(i: int) -> int:
            return lines[i] if i < len(lines) else 0
        msgs, where = _check_messages(items, path, line_of, problems)
        # one Provenance a line, shared (a value, never changed): a one-line document's messages all have one
        at_line = {n: Provenance(path, n) for n in {*lines, 0}}
        n_lines = len(lines)
        meta = [MessageMeta(at_line[lines[i] if i < n_lines else 0], None, None, None, None, NO_EXTRA)
                for i in where]
    msgs = fix_repr(msgs, meta, path, problems)
    if tools is not None and not isinstance(tools, list):
        tools = None
    if model is not None and not isinstance(model, str):
        model = None
    return msgs, meta, system, tools, model, problems


def _str(value) -> str | None:
    return value if isinstance(value, str) else None


def _load_cycles(probe: Probe, doc: dict, notes: list) -> LoadResult:
    path = str(probe.path)
    cycles = [c for c in doc["cycles"] if isinstance(c, dict) and isinstance(c.get("request"), dict)]
    if not cycles:
        raise LoadError(path, 1, "an API trace whose \"cycles\" hold no request")
    last = cycles[-1]
    req = last["request"]
    items = req.get("messages")
    if not isinstance(items, list):
        raise LoadError(path, 1, "the last cycle's request has no \"messages\" list")
    last_i = max(i for i, c in enumerate(doc["cycles"]) if c is last)
    lines = document_lines(probe.path, ("cycles", last_i, "request", "messages"), doc).get(
        ("cycles", last_i, "request", "messages"), [])

    def line_of(i: int) -> int:
        return lines[i] if i < len(lines) else 0
    problems: list[Problem] = note_problems(path, notes)
    msgs, where = _check_messages(items, path, line_of, problems)
    meta = [MessageMeta(Provenance(path, line_of(i), note=f"cycle {len(cycles)} request message {i}"))
            for i in where]
    # usage: the response of cycle k is the assistant message that the request of cycle k+1 ends with
    asst = [i for i, m in enumerate(msgs) if m.get("role") == "assistant"]
    for k, c in enumerate(cycles[:-1]):
        resp = c.get("response")
        if isinstance(resp, dict) and k < len(asst):
            meta[asst[k]].usage = Usage.from_dict(resp.get("usage"))
            meta[asst[k]].model = _str(resp.get("model"))
    resp = last.get("response")
    if isinstance(resp, dict) and isinstance(resp.get("content"), list):
        msgs.append({"role": "assistant", "content": resp["content"]})
        meta.append(MessageMeta(Provenance(path, 0, note=f"cycle {len(cycles)} response"), None,
                                Usage.from_dict(resp.get("usage")), _str(resp.get("model"))))
    msgs = fix_repr(msgs, meta, path, problems)
    conv = Conversation(msgs, detect_dialect(msgs, system=req.get("system")), req.get("system"),
                        req.get("tools") if isinstance(req.get("tools"), list) else None,
                        _str(req.get("model")) or _str(doc.get("model")),
                        str(doc.get("prompt") or probe.path.name)[:80],
                        path, FORMAT, meta, problems=problems,
                        extra={k: v for k, v in doc.items() if k != "cycles"} | {"cycles": len(cycles)})
    return LoadResult(path, FORMAT, [conv], problems)


def load(probe: Probe) -> LoadResult:
    path = str(probe.path)
    doc = doc_lines = None
    notes: list = []
    if probe.starts_with(b"{") and '"cycles"' in probe.text_head and not first_line_is_object(probe):
        probe.take_document()           # (read again, with its cycles)
        doc, doc_lines = read_json_streamed(probe.path, notes, ("messages", "cycles"))
        if isinstance(doc, dict) and isinstance(doc.get("cycles"), list) and not isinstance(doc.get("messages"), list):
            return _load_cycles(probe, doc, notes)
    msgs, meta, system, tools, model, problems = read_messages(probe, doc, doc_lines)
    problems[:0] = note_problems(path, notes)
    dialect = detect_dialect(msgs, system=system)
    conv = Conversation(msgs, dialect, system, tools, model, probe.path.name, path,
                        FORMAT if dialect == ANTHROPIC else "openai-chat", meta, problems=problems)
    return LoadResult(path, conv.format, [conv], problems)
