"""A deterministic summary made without an LLM, clearly labelled as such.

It reads the structure of the messages being summarised: the first user
request, files touched (from tool inputs), tools called, errors, and the last
assistant text. Useful in a classroom with no API key, and reproducible.
"""
from __future__ import annotations

import json
import re
from collections import Counter

from compactscope.core.model.messages import block_type, blocks, content_text
from compactscope.core.summarizers.base import SummaryRequest, SummaryResult
from compactscope.core.files.jsonio import dict_at

_PATH_KEYS = ("path", "file_path", "filepath", "filename", "file", "notebook_path", "target_file")
_PATH_RE = re.compile(r"(?<![\w/.])(?:\.{0,2}/)?(?:[\w.-]+/)+[\w.-]+\.\w{1,8}\b|\b[\w-]+\.(?:py|md|txt|json|ts|js|toml|yaml|yml|rs|go|c|h|cpp|java|sh)\b")


def _clip(text: str, n: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


def _calls(m: dict):
    """(name, input dict) for each tool call in either dialect."""
    for b in blocks(m):
        if block_type(b) == "tool_use":
            yield str(b.get("name")), dict_at(b, "input")
    for c in m.get("tool_calls") or []:
        if isinstance(c, dict):
            fn = dict_at(c, "function")
            args = fn.get("arguments")
            try:
                args = json.loads(args) if isinstance(args, str) else args
            except ValueError:
                args = {"arguments": args}
            yield str(fn.get("name")), args if isinstance(args, dict) else {}


def _is_real_user_text(m: dict) -> str | None:
    if m.get("role") != "user":
        return None
    c = m.get("content")
    if isinstance(c, str):
        t = c
    else:
        t = "\n".join(str(b.get("text", "")) for b in blocks(m) if block_type(b) == "text")
    t = t.strip()
    if not t or t.startswith(("[snipped", "[Compacted]", "[Reactive compact]", "<system-reminder>")):
        return None
    return t


class OfflineSummarizer:
    name = "offline summary (deterministic, no LLM)"

    def summarize(self, request: SummaryRequest, cancel=None) -> SummaryResult:
        msgs = [m for m in request.messages if isinstance(m, dict)]
        first_request = next((t for t in map(_is_real_user_text, msgs) if t), None)
        last_user = next((t for t in map(_is_real_user_text, reversed(msgs)) if t), None)
        tools: Counter = Counter()
        files: dict[str, str] = {}
        errors: list[str] = []
        for m in msgs:
            for name, args in _calls(m):
                tools[name] += 1
                for k in _PATH_KEYS:
                    v = args.get(k)
                    if isinstance(v, str) and v:
                        verb = "written" if re.search(r"write|edit|create|replace|patch", name, re.I) else "read"
                        if files.get(v) != "written":
                            files[v] = verb
                cmd = args.get("command") or args.get("cmd")
                if isinstance(cmd, str):
                    for p in _PATH_RE.findall(cmd)[:5]:
                        files.setdefault(p, "mentioned")
            for b in blocks(m):
                if block_type(b) == "tool_result" and b.get("is_error"):
                    errors.append(_clip(content_text(b.get("content")), 160))
            if m.get("role") == "tool" and isinstance(m.get("content"), str) and \
                    re.match(r"\s*(error|traceback|exception)", m["content"], re.I):
                errors.append(_clip(m["content"], 160))
        last_text = None
        for m in reversed(msgs):
            if m.get("role") == "assistant":
                c = m.get("content")
                t = c if isinstance(c, str) else "\n".join(
                    str(b.get("text", "")) for b in blocks(m) if block_type(b) == "text")
                if t and t.strip():
                    last_text = t.strip()
                    break
        lines = ["(Offline summary: made by Compactscope from the message structure, no LLM was called.)", ""]
        lines.append("Current goal: " + (_clip(first_request, 400) if first_request else "(no user request found)"))
        if last_user and last_user != first_request:
            lines.append("Latest user message: " + _clip(last_user, 300))
        lines.append(f"Messages summarised: {len(msgs)}")
        if files:
            lines.append("Files touched:")
            lines += [f"- {p} ({v})" for p, v in list(files.items())[:30]]
            if len(files) > 30:
                lines.append(f"- ... and {len(files) - 30} more")
        if tools:
            lines.append("Tools called: " + ", ".join(f"{n} x{c}" for n, c in tools.most_common()))
        if errors:
            lines.append(f"Errors ({len(errors)}):")
            lines += [f"- {e}" for e in errors[-5:]]
        if last_text:
            lines.append("Last assistant message: " + _clip(last_text, 500))
        return SummaryResult("\n".join(lines), self.name)
