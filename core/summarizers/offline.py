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
from ..pipeline.chunkmemo import ChunkMemo
from ..pipeline.facts import ObjFact

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


def _facts_of(m: dict) -> tuple:
    """What the summary reads of one message: (real user text or None, the assistant's text or None, the tool calls
    as (name, ((path, verb), ...), (paths the command mentions, ...)), the errors)."""
    calls = []
    for name, args in _calls(m):
        named = []
        for k in _PATH_KEYS:
            v = args.get(k)
            if isinstance(v, str) and v:
                named.append((v, "written" if re.search(r"write|edit|create|replace|patch", name, re.I) else "read"))
        cmd = args.get("command") or args.get("cmd")
        mentioned = tuple(_PATH_RE.findall(cmd)[:5]) if isinstance(cmd, str) else ()
        calls.append((name, tuple(named), mentioned))
    errors = [_clip(content_text(b.get("content")), 160) for b in blocks(m)
              if block_type(b) == "tool_result" and b.get("is_error")]
    if m.get("role") == "tool" and isinstance(m.get("content"), str) and \
            re.match(r"\s*(error|traceback|exception)", m["content"], re.I):
        errors.append(_clip(m["content"], 160))
    text = None
    if m.get("role") == "assistant":
        c = m.get("content")
        t = c if isinstance(c, str) else "\n".join(str(b.get("text", "")) for b in blocks(m) if block_type(b) == "text")
        text = t.strip() or None if t else None
    user = _is_real_user_text(m)
    if user is None and text is None and not calls and not errors:
        return _NOTHING
    return user, text, tuple(map(_shared_call, calls)) if calls else (), tuple(errors)


# the facts of a message the summary reads nothing of (a tool result without an error, most of a session): one
# tuple for all of them; a call that names no path and mentions none: one tuple per tool name (a bounded map), not
# one per call (a 20 MB document's facts were ~0.1x of the file)
_NOTHING: tuple = (None, None, (), ())
_BARE_CALLS: dict = {}
_BARE_KEPT = 512


def _shared_call(call: tuple) -> tuple:
    if call[1] or call[2]:
        return call
    kept = _BARE_CALLS.get(call[0])
    if kept is not None:
        return kept
    if len(_BARE_CALLS) < _BARE_KEPT:
        _BARE_CALLS[call[0]] = call
    return call


# message -> what the summary reads of it (messages are never changed in place): a summary asked again over
# nearly the same turns (a parameter change moving hermes's cut over 100k turns) reads each message once
_FACTS = ObjFact("offline_summary_facts", _facts_of)


_RANK = {"mentioned": 0, "read": 1, "written": 2}


def _chunk_totals(msgs: list) -> tuple:
    """What the summary counts of a run of messages: (first real user text, last one, tool name -> calls,
    path -> verb (in the order first touched), how many errors, the last five, the last assistant text)."""
    facts = _FACTS.values(msgs)
    tools: dict[str, int] = {}
    files: dict[str, str] = {}
    n_errors = 0
    last_errors: list[str] = []
    for _user, _text, calls, errs in facts:
        for name, named, mentioned in calls:
            tools[name] = tools.get(name, 0) + 1
            for v, verb in named:
                if files.get(v) != "written":
                    files[v] = verb
            for p in mentioned:
                files.setdefault(p, "mentioned")
        if errs:
            n_errors += len(errs)
            last_errors = (last_errors + list(errs))[-5:]
    return (next((f[0] for f in facts if f[0]), None), next((f[0] for f in reversed(facts) if f[0]), None),
            tools, files, n_errors, last_errors, next((f[1] for f in reversed(facts) if f[1]), None))


# the totals of each fixed chunk of the summarised messages, kept by the chunk's messages: a summary asked again
# over nearly the same turns (a parameter change moving hermes's cut) reads only the chunks after the change
_TOTALS: ChunkMemo[tuple] = ChunkMemo(_chunk_totals, size=2048, max_chunks=160)


def _totals(msgs: list) -> tuple:
    """``_chunk_totals`` of the whole list, merged from its chunks' (the same figures, in the same order: a file
    keeps its first place and the strongest verb, written over read over mentioned)."""
    first = last = last_text = None
    tools: Counter = Counter()
    files: dict[str, str] = {}
    n_errors = 0
    last_errors: list[str] = []
    rank = _RANK
    for c_first, c_last, c_tools, c_files, c_n, c_errors, c_text in _TOTALS.results(msgs):
        first = first or c_first
        last = c_last or last
        last_text = c_text or last_text
        tools.update(c_tools)
        if not files:
            files.update(c_files)
        else:
            for p, v in c_files.items():
                cur = files.get(p)
                if cur is None or rank[v] > rank[cur]:
                    files[p] = v
        if c_n:
            n_errors += c_n
            last_errors = (last_errors + c_errors)[-5:]
    return first, last, tools, files, n_errors, last_errors, last_text


class OfflineSummarizer:
    name = "offline summary (deterministic, no LLM)"

    def summarize(self, request: SummaryRequest, cancel=None) -> SummaryResult:
        msgs = [m for m in request.messages if isinstance(m, dict)]
        _FACTS.shown(len(msgs))
        first_request, last_user, tools, files, n_errors, last_errors, last_text = _totals(msgs)
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
        if n_errors:
            lines.append(h.field(f"Errors ({n_errors})", ""))
            lines += [f"- {e}" for e in last_errors]
        if last_text:
            lines.append(h.field("Last assistant message", _clip(last_text, 500)))
        return SummaryResult("\n".join(lines), self.name)
