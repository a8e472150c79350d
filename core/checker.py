"""API-validity checker: would the Messages API accept this list?

Runs on any message list, in either dialect, and after every layer. Each
finding carries the message (and block) position, a code, and a sentence.
Severity ``error`` = the API would reject the request; ``warning`` = legal but
suspicious (e.g. the last assistant message still waits for its results).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from .messages import KNOWN_BLOCK_TYPES, OPENAI, block_type, blocks, detect_dialect


@dataclass(frozen=True)
class Finding:
    code: str
    message: int
    text: str
    block: int | None = None
    severity: str = "error"
    tool_id: str | None = None

    def to_json(self) -> dict:
        d = {"code": self.code, "severity": self.severity, "message": self.message,
             "block": self.block, "text": self.text}
        if self.tool_id is not None:
            d["tool_id"] = self.tool_id
        return d

    def __str__(self) -> str:
        where = f"message {self.message}" + (f", block {self.block}" if self.block is not None else "")
        return f"{self.severity}: {where}: {self.text} [{self.code}]"


def _is_empty(content) -> bool:
    if content is None:
        return True
    if isinstance(content, str):
        return content.strip() == ""
    if isinstance(content, list):
        return len(content) == 0
    return False


RESULT_BEFORE_FILE = "result_before_file"


def check(messages: list, dialect: str | None = None, *, before_file=()) -> list[Finding]:
    """Findings for one message list. ``before_file``: ids of tool calls made before the file's first
    line (the file is an excerpt of a longer session, see ``known_before_file``): a result answering one
    of them is reported as ``result_before_file`` (a warning that says why), not as an orphan."""
    dialect = dialect or detect_dialect(messages)
    if dialect == OPENAI:
        return _check_openai(messages, before_file)
    return _check_anthropic(messages, before_file)


def known_before_file(conversation) -> frozenset:
    """The tool-call ids a conversation answers but whose calls lie before its file's first line."""
    extra = getattr(conversation, "extra", None)
    ids = extra.get("results_before_file") if isinstance(extra, dict) else None
    return frozenset(ids) if ids else frozenset()


def _before_file_finding(i: int, bi: int | None, tid) -> Finding:
    return Finding(RESULT_BEFORE_FILE, i, f"tool_result {tid} answers a call made before this file's first line "
                   "(its record's parentUuid is not in the file: the file is an excerpt of a longer session). "
                   "The API saw that call; this list alone lacks it, so sending this excerpt as it is would be "
                   "refused", bi, "warning", tool_id=tid if isinstance(tid, str) else None)


def _check_anthropic(messages: list, before_file=()) -> list[Finding]:
    out: list[Finding] = []
    n = len(messages)
    if n == 0:
        return [Finding("empty_list", 0, "the message list is empty; the API needs at least one message")]
    first = messages[0]
    if not isinstance(first, dict) or first.get("role") != "user":
        out.append(Finding("first_not_user", 0, "the first message is not from the user"))
    for i, m in enumerate(messages):
        if not isinstance(m, dict):
            out.append(Finding("not_a_message", i, f"message is a {type(m).__name__}, not an object"))
            continue
        role = m.get("role")
        if role not in ("user", "assistant"):
            out.append(Finding("bad_role", i, f"role {role!r} is not 'user' or 'assistant'"))
        content = m.get("content")
        if _is_empty(content) and not (i == n - 1 and role == "assistant"):
            out.append(Finding("empty_content", i, "content is empty"))
        elif content is not None and not isinstance(content, (str, list)):
            out.append(Finding("bad_content", i, f"content is a {type(content).__name__}, not a string or list"))
        if isinstance(content, list):
            for bi, b in enumerate(content):
                t = block_type(b)
                if t is None:
                    out.append(Finding("block_without_type", i, "block has no type" if isinstance(b, dict)
                                       else f"block is a {type(b).__name__}, not an object", bi))
                elif t not in KNOWN_BLOCK_TYPES:
                    out.append(Finding("unknown_block", i, f"unknown block type {t!r}", bi))
                elif t == "tool_result" and role != "user":
                    out.append(Finding("tool_result_not_in_user", i, "a tool_result must be in a user message", bi,
                                       tool_id=b.get("tool_use_id")))
                elif t == "tool_use" and role != "assistant":
                    out.append(Finding("tool_use_not_in_assistant", i, "a tool_use must be in an assistant message",
                                       bi, tool_id=b.get("id")))
        # pairs: every tool_result answers a tool_use of the immediately preceding message
        if role == "user" and isinstance(content, list):
            prev = messages[i - 1] if i > 0 else None
            prev_ids = {b.get("id") for b in blocks(prev) if block_type(b) == "tool_use"} \
                if isinstance(prev, dict) and prev.get("role") == "assistant" else set()
            for bi, b in enumerate(content):
                if block_type(b) == "tool_result":
                    tid = b.get("tool_use_id")
                    if tid not in prev_ids and tid in before_file:
                        out.append(_before_file_finding(i, bi, tid))
                    elif tid not in prev_ids:
                        out.append(Finding("orphan_tool_result", i,
                                           f"tool_result {tid} has no tool_use in the message before it", bi,
                                           tool_id=tid if isinstance(tid, str) else None))
        if role == "assistant" and isinstance(content, list):
            nxt = messages[i + 1] if i + 1 < n else None
            answered = {b.get("tool_use_id") for b in blocks(nxt) if block_type(b) == "tool_result"} \
                if isinstance(nxt, dict) and nxt.get("role") == "user" else set()
            for bi, b in enumerate(content):
                if block_type(b) == "tool_use" and b.get("id") not in answered:
                    last = i == n - 1
                    out.append(Finding("unanswered_tool_use", i,
                                       f"tool_use {b.get('id')} ({b.get('name')}) "
                                       + ("waits for its result (last message)" if last
                                          else "has no tool_result in the next message"),
                                       bi, "warning" if last else "error", tool_id=b.get("id")))
    return out


def _check_openai(messages: list, before_file=()) -> list[Finding]:
    out: list[Finding] = []
    if not messages:
        return [Finding("empty_list", 0, "the message list is empty")]
    open_calls: dict[str, tuple[int, int]] = {}
    seen_non_system = False
    for i, m in enumerate(messages):
        if not isinstance(m, dict):
            out.append(Finding("not_a_message", i, f"message is a {type(m).__name__}, not an object"))
            continue
        role = m.get("role")
        if role not in ("system", "developer", "user", "assistant", "tool"):
            out.append(Finding("bad_role", i, f"unknown role {role!r}"))
        if role in ("system", "developer"):
            continue
        if not seen_non_system:
            seen_non_system = True
            if role != "user":
                out.append(Finding("first_not_user", i, "the first non-system message is not from the user",
                                   severity="warning"))
        if role == "tool":
            tid = m.get("tool_call_id")
            if tid not in open_calls and tid in before_file:
                out.append(_before_file_finding(i, None, tid))
            elif tid not in open_calls:
                out.append(Finding("orphan_tool_result", i, f"tool message {tid} answers no pending tool call",
                                   tool_id=tid if isinstance(tid, str) else None))
            else:
                open_calls.pop(tid)
            continue
        # any non-tool message closes the previous assistant's calls
        for tid, (mi, ci) in open_calls.items():
            out.append(Finding("unanswered_tool_use", mi, f"tool call {tid} has no tool message", ci, tool_id=tid))
        open_calls = {}
        if role == "assistant":
            calls = m.get("tool_calls") or []
            for ci, c in enumerate(calls):
                if isinstance(c, dict) and isinstance(c.get("id"), str):
                    open_calls[c["id"]] = (i, ci)
            if _is_empty(m.get("content")) and not calls:
                out.append(Finding("empty_content", i, "assistant message has no content and no tool calls",
                                   severity="warning"))
        elif role == "user" and _is_empty(m.get("content")):
            out.append(Finding("empty_content", i, "content is empty"))
    for tid, (mi, ci) in open_calls.items():
        out.append(Finding("unanswered_tool_use", mi, f"tool call {tid} waits for its result (last message)",
                           ci, "warning", tool_id=tid))
    return out


def rejected(findings: list[Finding]) -> bool:
    """True when the API would reject the list."""
    return any(f.severity == "error" for f in findings)


def pair_errors(findings: list[Finding]) -> list[Finding]:
    return [f for f in findings if f.code in ("orphan_tool_result", "unanswered_tool_use") and f.severity == "error"]


def check_conversation(conv) -> list[Finding]:
    """Findings per real API context: a conversation split at real compactions (Claude Code
    segments) is checked one segment at a time, since each is what the API saw on its own.
    Message indices stay those of the full history."""
    before = known_before_file(conv)
    if len(conv.segments) <= 1:
        return check(conv.messages, conv.dialect, before_file=before)
    out: list[Finding] = []
    starts = list(conv.segments) + [len(conv.messages)]
    for k in range(len(conv.segments)):
        off = starts[k]
        out += [replace(f, message=f.message + off)
                for f in check(conv.messages[off:starts[k + 1]], conv.dialect, before_file=before)]
    return out
