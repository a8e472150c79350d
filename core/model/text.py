"""Message content as text: the three readings Compactscope needs, each defined once here.

* ``readable_text(content)``: for people (search, the inspector, reports, offline summaries):
  every block in words: text, thinking, a tool call as ``name(json input)``, a tool result's
  own content (recursively).
* ``text_parts(content)``: hermes-agent's reading (``ContextCompressor``'s content text): only the
  parts that carry a ``"text"`` string, and plain strings, joined by newlines, empty ones dropped.
  Used for its substring checks and appends, so the hermes layers match the real package.
* ``visible_text(content)``: what a Mixture-of-Agents reference model sees (hermes-agent's MoA):
  the first text-like key of each part, media parts skipped.

They differ on purpose; callers name the reading they mean. Pure functions over plain values.
"""
from __future__ import annotations

import json
from typing import Any

MEDIA_TYPES = frozenset({"image", "image_url", "input_image", "audio", "input_audio"})
TEXT_KEYS = ("text", "content", "input_text", "output_text", "summary_text")


def _type(block: Any) -> str | None:
    return block.get("type") if isinstance(block, dict) else None


def readable_text(content: Any) -> str:
    """Readable text of a content value (string, block list, or anything else)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for b in content:
            t = _type(b)
            if t == "text":
                parts.append(str(b.get("text", "")))
            elif t == "tool_result":
                parts.append(readable_text(b.get("content")))
            elif t == "tool_use":
                parts.append(f"{b.get('name')}({json.dumps(b.get('input'), ensure_ascii=False, default=str)})")
            elif t == "thinking":
                parts.append(str(b.get("thinking", "")))
            elif isinstance(b, str):
                parts.append(b)
        return "\n".join(parts)
    return str(content)


def readable_message_text(message: Any) -> str:
    """A whole message for people: its content's readable text, then OpenAI tool calls as name(arguments)."""
    if not isinstance(message, dict):
        return str(message)
    text = readable_text(message.get("content"))
    for call in message.get("tool_calls") or []:
        if isinstance(call, dict):
            fn = call.get("function") or {}
            text += f"\n{fn.get('name')}({fn.get('arguments')})"
    return text


def text_parts(content: Any) -> str:
    """hermes-agent's content text: a string as is, else the text parts (and plain strings) joined by
    newlines, empty ones dropped."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for p in content:
            if isinstance(p, str):
                parts.append(p)
            elif isinstance(p, dict) and isinstance(p.get("text"), str):
                parts.append(p["text"])
        return "\n".join(p for p in parts if p)
    return str(content)


def visible_text(content: Any) -> str:
    """The text a reference model sees: strings as is, the first text-like key of each part, media skipped."""
    def part_text(p: Any) -> str:
        if p is None:
            return ""
        if isinstance(p, str):
            return p
        if isinstance(p, dict):
            if str(p.get("type") or "").strip().lower() in MEDIA_TYPES:
                return ""
            for k in TEXT_KEYS:
                if isinstance(p.get(k), str):
                    return p[k]
        return ""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(t for t in map(part_text, content) if t)
    return part_text(content) or str(content)
