"""A deterministic summary made without an LLM, clearly labelled as such.

It reads the structure of the messages being summarised: the first user
request, files touched (from tool inputs), tools called, errors, and the last
assistant text. Useful in a classroom with no API key, and reproducible.
"""
from __future__ import annotations

import json
import re
from collections import Counter

from ..i18n.catalog import language, translate
from ..model.messages import block_type, blocks, content_text
from .base import SummaryRequest, SummaryResult
from ..files.jsonio import dict_at

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


class _Headings:
    """The summary's own words in the language of the run (``core.i18n``: the window's, or ``--lang``): a Chinese
    class reads a Chinese summary, as its LLM would write one. The transcript's text in it stays as it is."""

    def __init__(self, lang: str):
        self.lang = lang
        self.colon, self.space = ("\uff1a", "") if lang.startswith("zh") else (":", " ")

    def __call__(self, text: str) -> str:
        return translate(text, self.lang)

    def field(self, name: str, value: str) -> str:
        """"Current goal: value" ("当前目标：value"); "Files touched:" without a value."""
        head = self(name) + self.colon
        return head + self.space + value if value else head


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
        h = _Headings(language())
        lines = [h("(Offline summary: made by Compactscope from the message structure, no LLM was called.)"), ""]
        lines.append(h.field("Current goal", _clip(first_request, 400) if first_request
                             else h("(no user request found)")))
        if last_user and last_user != first_request:
            lines.append(h.field("Latest user message", _clip(last_user, 300)))
        lines.append(h.field("Messages summarised", str(len(msgs))))
        if files:
            lines.append(h.field("Files touched", ""))
            lines += [f"- {p} ({h(v)})" for p, v in list(files.items())[:30]]
            if len(files) > 30:
                lines.append("- " + h(f"... and {len(files) - 30} more"))
        if tools:
            lines.append(h.field("Tools called", ", ".join(f"{n} x{c}" for n, c in tools.most_common())))
        if errors:
            lines.append(h.field(f"Errors ({len(errors)})", ""))
            lines += [f"- {e}" for e in errors[-5:]]
        if last_text:
            lines.append(h.field("Last assistant message", _clip(last_text, 500)))
        return SummaryResult("\n".join(lines), self.name)
