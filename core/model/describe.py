"""Small wordings both renderers share: numbers, times, usage, previews, a message's one-line gist."""
from __future__ import annotations

import json
import time
from typing import Any

from .messages import block_type, blocks, message_text

try:
    import orjson

    def to_json(value: Any) -> str:
        try:
            return orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode("utf-8")
        except (TypeError, orjson.JSONEncodeError):
            return json.dumps(value, indent=2, ensure_ascii=False, default=str)
except ImportError:  # pragma: no cover - orjson is a dependency
    def to_json(value: Any) -> str:
        return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def num(v) -> str:
    if isinstance(v, bool) or v is None:
        return str(v)
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        return f"{v:,.0f}" if v.is_integer() or abs(v) >= 100 else f"{v:,.3g}"
    return str(v)


def when(ts: float | None) -> str:
    """A timestamp as UTC ``2026-01-14 10:51:33Z`` (reports are shared across time zones)."""
    if ts is None:
        return ""
    try:
        return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(float(ts))) + "Z"
    except (OverflowError, OSError, ValueError, TypeError):
        return str(ts)


def usage_parts(u) -> list[tuple[str, int]]:
    """(label, value) of one call's usage as the API reported it: input, output, cache write, cache read."""
    if u is None:
        return []
    return [("in", u.input_tokens), ("out", u.output_tokens), ("cache write", u.cache_creation_input_tokens),
            ("cache read", u.cache_read_input_tokens)]


def usage_text(u) -> str:
    if u is None:
        return ""
    return " \u00b7 ".join(f"{k} {v:,}" for k, v in usage_parts(u)) + f" (context {u.context_tokens:,})"


def short_num(v: int) -> str:
    """12, 1.2k, 136.9k, 1.5M."""
    v = int(v)
    for div, suf in ((1_000_000, "M"), (1_000, "k")):
        if abs(v) >= div:
            return f"{v / div:.1f}".rstrip("0").rstrip(".") + suf
    return str(v)


def usage_short(u) -> str:
    """A call's usage in few characters, for a list row: ``in 10 out 205 cw 136.9k cr 0`` (cw, cr: cache
    write, cache read)."""
    if u is None:
        return ""
    return (f"in {short_num(u.input_tokens)} out {short_num(u.output_tokens)} cw "
            f"{short_num(u.cache_creation_input_tokens)} cr {short_num(u.cache_read_input_tokens)}")


def meta_lines(meta) -> list[str]:
    """What the file says about a message, one fact a line: time, model, usage of its call, where."""
    if meta is None:
        return []
    out = []
    if meta.timestamp is not None:
        out.append(f"time {when(meta.timestamp)}")
    if meta.model:
        out.append(f"model {meta.model}")
    if meta.usage is not None:
        out.append(f"usage of this call: {usage_text(meta.usage)}")
    if meta.provenance is not None and meta.provenance.line:
        out.append(f"from {meta.provenance}")
    return out


def clip(text: str, n: int = 140) -> str:
    """The start of a text on one line, at most ``n`` characters (cost ~ n, whatever the text's length)."""
    text = " ".join(str(text)[: 4 * n + 64].split())
    return text if len(text) <= n else text[: n - 1].rstrip() + "\u2026"


def tool_input_gist(inp: Any, n: int = 100) -> str:
    """The telling argument of a tool call: a command, a path, a pattern, else the first short string."""
    if isinstance(inp, dict):
        for k in ("command", "cmd", "file_path", "path", "pattern", "query", "url", "description", "prompt"):
            v = inp.get(k)
            if isinstance(v, str) and v.strip():
                return clip(v, n)
        for v in inp.values():
            if isinstance(v, str) and v.strip():
                return clip(v, n)
    if isinstance(inp, str):
        return clip(inp, n)
    return ""


def block_kinds(message: Any) -> str:
    """``text, tool_use x3, tool_result`` for a message's blocks (OpenAI: tool calls, tool result)."""
    if not isinstance(message, dict):
        return type(message).__name__
    if message.get("role") == "tool":
        return "tool result"
    counts: dict = {}
    c = message.get("content")
    if isinstance(c, str):
        counts["text"] = 1
    for b in blocks(message):
        t = block_type(b) or ("text" if isinstance(b, str) else "?")
        counts[t] = counts.get(t, 0) + 1
    calls = message.get("tool_calls")
    if isinstance(calls, list) and calls:
        counts["tool call"] = len(calls)
    return ", ".join(k + (f" x{v}" if v > 1 else "") for k, v in counts.items()) or "empty"


def gist(message: Any, n: int = 120) -> str:
    """One line: the start of a message's text, or what its tool calls do."""
    if not isinstance(message, dict):
        return clip(str(message), n)
    for b in blocks(message):
        if block_type(b) == "tool_use":
            return clip(f"{b.get('name')}: {tool_input_gist(b.get('input'))}", n)
    return clip(message_text(message), n)


def finding_text(f) -> str:
    where = f"message {f.message}" + (f", block {f.block}" if f.block is not None else "")
    return f"{f.severity}: {where}: {f.text} [{f.code}]"


def role_of(message: Any) -> str:
    return str(message.get("role", "?")) if isinstance(message, dict) else "?"


def block_changes(row) -> str:
    """A changed row's block changes in words: ``block 2 (toolu_1): replace 12,345 -> 120 chars``."""
    return "; ".join(f"block {b.block}{' (' + b.tool_id + ')' if b.tool_id else ''}: {b.kind} "
                     f"{num(b.old_len)} \u2192 {num(b.new_len)} chars" for b in row.blocks)
