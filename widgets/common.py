"""Shared bits of the views: colours, number formatting, block chips.

Pure helpers over message dicts plus a few QColor factories. No pipeline logic.
"""
from __future__ import annotations

import json
import zlib
from dataclasses import dataclass

from PySide6.QtGui import QColor, QPalette

from compactscope.core.messages import block_type, content_text

ROLE_COLORS = {
    "user": "#3b82f6",
    "assistant": "#f59e0b",
    "system": "#8b5cf6",
    "developer": "#8b5cf6",
    "tool": "#10b981",
}
BLOCK_COLORS = {
    "text": "#64748b",
    "tool_use": "#ea580c",
    "tool_result": "#059669",
    "thinking": "#9333ea",
    "redacted_thinking": "#9333ea",
    "image": "#0891b2",
    "document": "#0891b2",
    "other": "#94a3b8",
}
STATUS_COLORS = {
    "kept": None,
    "changed": "#f59e0b",
    "removed": "#ef4444",
    "inserted": "#22c55e",
    "duplicated": "#a855f7",
    "failed": "#ef4444",
}
BLOCK_TYPES = ("text", "tool_use", "tool_result", "thinking", "image", "other")


def fmt(n) -> str:
    try:
        return f"{int(n):,}"
    except (TypeError, ValueError):
        return str(n)


def color(hexstr: str, alpha: int = 255) -> QColor:
    c = QColor(hexstr)
    c.setAlpha(alpha)
    return c


def pair_color(tool_id: str | None, dark: bool = False) -> QColor:
    """A stable colour for a tool id: both halves of a pair share it."""
    if not tool_id:
        return QColor("#94a3b8")
    h = zlib.crc32(tool_id.encode("utf-8", "replace")) % 360
    c = QColor.fromHsl(h, 170, 120 if dark else 105)
    return c


def is_dark(palette: QPalette) -> bool:
    return palette.color(QPalette.Window).lightness() < 128


def chip_type(t: str | None) -> str:
    if t in ("text", "tool_use", "tool_result", "thinking", "image"):
        return t
    if t == "redacted_thinking":
        return "thinking"
    if t == "document":
        return "image"
    return "other"


@dataclass
class Chip:
    """One block of a message, as a line in the view."""
    block: int              # block index (-1 = string content, -2.. = OpenAI tool_calls)
    type: str               # chip type (text, tool_use, ...)
    label: str              # short label drawn in the chip
    summary: str            # one-line summary next to the chip
    lines: list             # content lines shown when expanded
    size: int               # chars (len(str(block)))
    tool_id: str | None = None
    error: bool = False

    @property
    def is_tool(self) -> bool:
        return self.type in ("tool_use", "tool_result")


def _one_line(text: str, n: int = 300) -> str:
    text = text.strip().replace("\r", " ").replace("\n", " \u23ce ")
    return text[:n]


def _lines(text: str, n: int = 8, width: int = 400) -> list:
    out = []
    for ln in text.splitlines():
        out.append(ln[:width])
        if len(out) >= n:
            break
    return out


def message_chips(m) -> list[Chip]:
    """The chips of a message, cheap enough to compute lazily per row."""
    if not isinstance(m, dict):
        s = str(m)
        return [Chip(-1, "other", "?", _one_line(s), _lines(s), len(s))]
    content = m.get("content")
    chips: list[Chip] = []
    if isinstance(content, str) or content is None:
        s = content or ""
        if m.get("role") == "tool":
            tid = m.get("tool_call_id")
            chips.append(Chip(-1, "tool_result", "tool_result", f"{fmt(len(s))} chars \u00b7 " + _one_line(s, 200),
                              _lines(s), len(s), tid if isinstance(tid, str) else None))
        else:
            chips.append(Chip(-1, "text", "text", _one_line(s), _lines(s), len(s)))
    elif isinstance(content, list):
        for bi, b in enumerate(content):
            t = block_type(b)
            ct = chip_type(t)
            size = len(str(b))
            if t == "text":
                s = str(b.get("text", ""))
                chips.append(Chip(bi, ct, "text", _one_line(s), _lines(s), size))
            elif t == "tool_use":
                args = json.dumps(b.get("input"), ensure_ascii=False, default=str)
                tid = b.get("id")
                chips.append(Chip(bi, ct, "tool_use", f"{b.get('name')}({_one_line(args, 160)})",
                                  _lines(json.dumps(b.get("input"), ensure_ascii=False, default=str, indent=1)),
                                  size, tid if isinstance(tid, str) else None))
            elif t == "tool_result":
                s = content_text(b.get("content"))
                tid = b.get("tool_use_id")
                err = bool(b.get("is_error"))
                n = len(str(b.get("content", "")))
                chips.append(Chip(bi, ct, "tool_result",
                                  f"{fmt(n)} chars" + (" \u00b7 ERROR" if err else "") + " \u00b7 " + _one_line(s, 200),
                                  _lines(s), size, tid if isinstance(tid, str) else None, err))
            elif t in ("thinking", "redacted_thinking"):
                s = str(b.get("thinking", "") or b.get("data", ""))
                chips.append(Chip(bi, ct, "thinking", _one_line(s), _lines(s), size))
            elif t in ("image", "document"):
                src = b.get("source") if isinstance(b.get("source"), dict) else {}
                chips.append(Chip(bi, ct, t, f"{src.get('media_type', src.get('type', ''))} \u00b7 {fmt(size)} chars",
                                  [], size))
            else:
                s = json.dumps(b, ensure_ascii=False, default=str) if not isinstance(b, str) else b
                chips.append(Chip(bi, "other", str(t or type(b).__name__), _one_line(s), _lines(s), size))
    else:
        s = str(content)
        chips.append(Chip(-1, "other", "?", _one_line(s), _lines(s), len(s)))
    for ci, call in enumerate(m.get("tool_calls") or []):
        if isinstance(call, dict):
            fn = call.get("function") if isinstance(call.get("function"), dict) else {}
            tid = call.get("id")
            chips.append(Chip(ci, "tool_use", "tool_call", f"{fn.get('name')}({_one_line(str(fn.get('arguments')), 160)})",
                              _lines(str(fn.get("arguments"))), len(str(call)), tid if isinstance(tid, str) else None))
    return chips


def block_sizes(m) -> dict:
    """chars per chip type for one message (for the stacked bars)."""
    out = dict.fromkeys(BLOCK_TYPES, 0)
    if not isinstance(m, dict):
        out["other"] += len(str(m))
        return out
    content = m.get("content")
    if isinstance(content, list):
        for b in content:
            out[chip_type(block_type(b))] += len(str(b))
    elif m.get("role") == "tool":
        out["tool_result"] += len(str(content or ""))
    else:
        out["text"] += len(str(content or ""))
    for call in m.get("tool_calls") or []:
        out["tool_use"] += len(str(call))
    return out
