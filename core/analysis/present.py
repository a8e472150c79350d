"""Presentation facts of messages, from one walk over the dialects: what a view draws, without Qt.

``walk(m)`` is the one place that knows how a message's parts are laid out in both dialects
(string content, a block list, an OpenAI ``tool`` message, ``tool_calls``). From it:

* ``message_chips(m)``: one ``Chip`` per part (label, one-line summary, lines when expanded, size,
  tool id, error flag): a line in the message list and the diff;
* ``block_sizes(m)``: characters per chip type (the stacked bars of the chart; cached as a tuple in
  ``BLOCK_TYPES`` order);
* ``collapsed_shape(m)``: the line count of each chip as the chips would give it, without building
  them (row heights of 10k rows never painted).

``chips``, ``sizes``, ``search_text`` and ``chars`` are their cached forms (columns of the one
per-message table ``core.facts.FACTS``, bounded by the longest list ``shown``); ``pair_index(messages)`` reuses a ``ToolPairIndex`` for a
list that reads the same as one indexed before.
"""
from __future__ import annotations

import json
import struct
import threading
from typing import Any, Callable

from ..runtime.record import record
from ..pipeline.facts import FACTS, BytesFact, ObjFact
from ..model.messages import ToolPairIndex, block_type, blocks  # noqa: F401 - present's names before
from ..pipeline.size import MessageChars
from ..model.text import readable_message_text, readable_text
from ..files.jsonio import dict_at
from . import pairs
from .pairs import PAIR_LISTS, pair_index, same_tool_shape  # noqa: F401 - present's names before

BLOCK_TYPES = ("text", "tool_use", "tool_result", "thinking", "image", "other")
EXPANDED_LINES = 8          # lines of a part kept for an expanded row
LINE_WIDTH = 400

# part kinds of ``walk`` beyond the block types: "raw" (not a dict message, or content of another type),
# "string" (string content), "tool_text" (an OpenAI tool message's content), "tool_call" (OpenAI tool_calls)
# (prefixed so that no block type in a file can be taken for one of them)
RAW, STRING, TOOL_TEXT, TOOL_CALL = "@raw", "@string", "@tool_text", "@tool_call"


@record(frozen=True)
class Part:
    index: int          # block index; -1 for string or raw content; the call index for a tool call
    kind: str           # a block type, or RAW / STRING / TOOL_TEXT / TOOL_CALL
    value: Any
    tool_id: str | None = None      # TOOL_TEXT: the message's tool_call_id


def _id(v: Any) -> str | None:
    return v if isinstance(v, str) else None


def walk(m: Any) -> list[Part]:
    """The parts of a message, in order (see the module doc)."""
    if not isinstance(m, dict):
        return [Part(-1, RAW, m)]
    content = m.get("content")
    if isinstance(content, str) or content is None:
        tool = m.get("role") == "tool"
        parts = [Part(-1, TOOL_TEXT if tool else STRING, content or "", _id(m.get("tool_call_id")) if tool else None)]
    elif isinstance(content, list):
        parts = [Part(bi, _block_kind(b), b) for bi, b in enumerate(content)]
    else:
        parts = [Part(-1, RAW, content)]
    for ci, call in enumerate(m.get("tool_calls") or []):
        if isinstance(call, dict):
            parts.append(Part(ci, TOOL_CALL, call))
    return parts


def _block_kind(b: Any) -> str:
    t = block_type(b)
    if isinstance(t, str) and not t.startswith("@"):
        return t
    return type(b).__name__ if t is None else str(t).lstrip("@") or "?"


def chip_type(t: str | None) -> str:
    """The colour class of a part: one of BLOCK_TYPES."""
    if t in ("text", "tool_use", "tool_result", "thinking", "image"):
        return t
    if t == "redacted_thinking":
        return "thinking"
    if t == "document":
        return "image"
    return {STRING: "text", TOOL_TEXT: "tool_result", TOOL_CALL: "tool_use"}.get(t, "other") if t else "other"


@record
class Chip:
    """One part of a message, as a line in a view."""
    block: int              # block index (-1 = string content; OpenAI tool_calls: the call index)
    type: str               # chip type (one of BLOCK_TYPES)
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
    return text.strip().replace("\r", " ").replace("\n", " \u23ce ")[:n]


def _lines(text: str, n: int = EXPANDED_LINES, width: int = LINE_WIDTH) -> list:
    out = []
    for ln in text.splitlines():
        out.append(ln[:width])
        if len(out) >= n:
            break
    return out


def _text_lines(s: str) -> int:
    """len(_lines(s)): the number of lines a text chip holds."""
    return len(s.splitlines()[:EXPANDED_LINES])


def _chip(p: Part) -> Chip:
    k, v = p.kind, p.value
    if k == RAW:
        s = str(v)
        return Chip(-1, "other", "?", _one_line(s), _lines(s), len(s))
    if k == STRING:
        return Chip(-1, "text", "text", _one_line(v), _lines(v), len(v))
    if k == TOOL_TEXT:
        return Chip(-1, "tool_result", "tool_result", f"{len(v):,} chars \u00b7 " + _one_line(v, 200), _lines(v),
                    len(v), p.tool_id)
    if k == TOOL_CALL:
        fn = dict_at(v, "function")
        return Chip(p.index, "tool_use", "tool_call", f"{fn.get('name')}({_one_line(str(fn.get('arguments')), 160)})",
                    _lines(str(fn.get("arguments"))), len(str(v)), _id(v.get("id")))
    ct, size, bi = chip_type(k), len(str(v)), p.index
    if k == "text":
        s = str(v.get("text", ""))
        return Chip(bi, ct, "text", _one_line(s), _lines(s), size)
    if k == "tool_use":
        args = json.dumps(v.get("input"), ensure_ascii=False, default=str)
        return Chip(bi, ct, "tool_use", f"{v.get('name')}({_one_line(args, 160)})",
                    _lines(json.dumps(v.get("input"), ensure_ascii=False, default=str, indent=1)), size,
                    _id(v.get("id")))
    if k == "tool_result":
        s = readable_text(v.get("content"))
        err = bool(v.get("is_error"))
        n = len(str(v.get("content", "")))
        return Chip(bi, ct, "tool_result", f"{n:,} chars" + (" \u00b7 ERROR" if err else "") + " \u00b7 "
                    + _one_line(s, 200), _lines(s), size, _id(v.get("tool_use_id")), err)
    if k in ("thinking", "redacted_thinking"):
        s = str(v.get("thinking", "") or v.get("data", ""))
        return Chip(bi, ct, "thinking", _one_line(s), _lines(s), size)
    if k == "image":
        from ..model.images import info
        img = info(v)                   # media type, pixel size and image tokens, not base64 characters
        return Chip(bi, ct, k, img.describe(), [img.rule], 4 * img.tokens)
    if k == "document":
        src = dict_at(v, "source")
        return Chip(bi, ct, k, f"{src.get('media_type', src.get('type', ''))} \u00b7 {size:,} chars", [], size)
    s = json.dumps(v, ensure_ascii=False, default=str) if not isinstance(v, str) else v
    return Chip(bi, "other", str(k), _one_line(s), _lines(s), size)


def message_chips(m: Any) -> list[Chip]:
    """The chips of a message, cheap enough to compute lazily per row."""
    return [_chip(p) for p in walk(m)]


def block_sizes(m: Any) -> dict:
    """Chars per chip type for one message (for the stacked bars)."""
    out = dict.fromkeys(BLOCK_TYPES, 0)
    for p in walk(m):
        if p.kind == "image":           # an image counts as its tokens (x 4 chars), as in the sizes
            from ..model.images import info
            out["image"] += 4 * info(p.value).tokens
            continue
        out[chip_type(p.kind)] += len(p.value) if p.kind in (STRING, TOOL_TEXT) else len(str(p.value))
    return out


def collapsed_shape(m: Any) -> list | None:
    """What the height of a collapsed row depends on, as ``message_chips(m)`` would give it, without
    building the chips (no JSON dumps, no str() of big blocks): the line count of each chip if it is a
    text chip, else 0. None when only the chips can tell (not a dict)."""
    if not isinstance(m, dict):
        return None
    out = []
    for p in walk(m):
        if p.kind == STRING:
            out.append(_text_lines(p.value))
        elif p.kind == "text":
            out.append(_text_lines(str(p.value.get("text", ""))))
        else:
            out.append(0)
    return out


# ------------------------------------------------------------------ cached by identity
# columns of the one per-message table (core.facts): one slot per message for all of them
_SIX = struct.Struct("<6I")
# ``tuple(block_sizes(m).values())`` (in BLOCK_TYPES order) as six uint32 in one bytes column of the table (25
# bytes a message, not six 8-byte columns; a block is never 4G chars, and a chart would not show the difference)
_BLOCKS = BytesFact("block_sizes", _SIX.size, lambda m: _SIX.pack(*(min(v, 0xFFFFFFFF) for v in
                                                                   block_sizes(m).values())))


class _BlockSizes:
    """``tuple(block_sizes(m).values())`` (in BLOCK_TYPES order), kept in the one per-message table."""

    @staticmethod
    def get(m: Any) -> tuple:
        return _SIX.unpack(_BLOCKS.get(m))

    __call__ = get


chips: ObjFact[list] = ObjFact("chips", message_chips)
sizes = _BlockSizes()
search_text: ObjFact[str] = ObjFact("search_text", lambda m: readable_message_text(m).lower())
# THE chars of a message, the same in every view (list, diff, inspector) and summed by the size estimator
chars = MessageChars()


def block_chars(b: Any) -> int:
    """The chars of one content block, as its chip and the size estimator count it (an image as 4 x its
    tokens, anything else ``len(str(block))``)."""
    if isinstance(b, dict) and b.get("type") == "image":
        from ..model.images import info
        return 4 * info(b).tokens
    return len(str(b))


def size_table(messages: list, pause: Callable[[], Any] | None = None):
    """The block sizes of ``messages`` as one flat ``array('f')`` (float32: exact to 16.7M chars a block, half the
    memory of doubles for a chart), row by row (``len(BLOCK_TYPES)`` per message): what the chart's bars are
    made of (``size_bars``, which is what is kept; numpy reads the table without a copy). ``pause``: called
    every ``PAUSE_EVERY`` messages (background work waits there while the user acts)."""
    from array import array
    get = sizes.get
    tbl = array("f")
    if pause is None:
        for m in messages:
            tbl.extend(get(m))
        return tbl
    for start in range(0, len(messages), PAUSE_EVERY):
        pause()
        for m in messages[start:start + PAUSE_EVERY]:
            tbl.extend(get(m))
    return tbl


PAUSE_EVERY = 4096


CHART_BARS = 1500       # the most bars the size chart draws: beyond, a bar per group of messages (its tallest)
_BARS: list = []        # [(messages, len, SizeBars)] of the last lists charted
BARS_LISTS = 12         # every stage of a run and a few more: stepping back and forth costs nothing
_BARS_LOCK = threading.Lock()


@record(frozen=True)
class SizeBars:
    """What the size chart draws of a list: ``group`` messages a bar (1 up to ``CHART_BARS`` messages), the
    bars' x edges, and per block type the stacked height of each bar (the cumulative size up to that type;
    of a group, its tallest message's). Small whatever the list's length (at most CHART_BARS bars):
    kept for the lists shown instead of a table of every message's block sizes (at 100k messages 4.8 MB a
    list, and twice that once stacked)."""
    n: int
    group: int
    edges: Any
    stacked: dict
    top: float


def cached_bars(messages: list) -> SizeBars | None:
    """The bars ``size_bars`` made of ``messages`` and still keeps, else None (nothing is computed)."""
    n = len(messages)
    with _BARS_LOCK:
        for k, (msgs, ln, bars) in enumerate(_BARS):
            if msgs is messages and ln == n:
                if k:
                    _BARS.insert(0, _BARS.pop(k))
                return bars
    return None


def size_bars(messages: list, pause: Callable[[], Any] | None = None) -> SizeBars:
    """The size chart's bars of ``messages`` (see ``SizeBars``), made from their block sizes; kept for the
    last lists asked for, so a worker can make them before the chart needs them. ``pause``: see ``size_table``."""
    import numpy as np
    hit = cached_bars(messages)
    if hit is not None:
        return hit
    n = len(messages)
    nt = len(BLOCK_TYPES)
    if n:
        arr = np.cumsum(np.frombuffer(size_table(messages, pause), dtype=np.float32).reshape(n, nt), axis=1,
                        dtype=np.float64)
    else:
        arr = np.zeros((0, nt))
    k = max(1, -(-n // CHART_BARS))
    nb = -(-n // k) if n else 0
    edges = np.arange(nb + 1, dtype=float) * k - 0.5
    stacked = {}
    for j, t in enumerate(BLOCK_TYPES):
        col = arr[:, j]
        if k > 1:
            padded = np.zeros(nb * k)
            padded[:n] = col
            col = padded.reshape(nb, k).max(axis=1)
        stacked[t] = np.ascontiguousarray(col)
    top = float(arr[:, -1].max()) if n else 0.0
    bars = SizeBars(n, k, edges, stacked, top)
    with _BARS_LOCK:
        _BARS.insert(0, (messages, n, bars))
        del _BARS[BARS_LISTS:]
    return bars


def shown(n: int) -> None:
    """A list of n messages is shown: the caches stay bounded by the longest list shown."""
    FACTS.shown(n)


# ------------------------------------------------------------------ tool pairs (core.analysis.pairs)
_PAIR_CACHE = pairs.PAIR_CACHE         # the same list: clearing it here clears the one the layers use
