"""Inspect's CompactionSummary: the summary message it makes of the model's answer (its <analysis> dropped), and the
summary input fitted into the window (long tool output cut in its middle), as inspect-ai 0.3.285 does."""
from __future__ import annotations
import re
from typing import Callable

from .inspect_rules import (
    MEMORY_TOOL, SUMMARY_HEAD, SUMMARY_TAIL, TRUNCATION_MARKER, DEFAULT_OUTPUT_RESERVE, MAX_FIT_STEPS, image_tokens,
    role, calls_of, call_name, text_part,
)


# ------------------------------------------------------------------ summary
ANALYSIS_OPEN, ANALYSIS_CLOSE, SUMMARY_OPEN = "<analysis>", "</analysis>", "<summary>"


_SEAM = re.compile(r"</analysis>\s*(?=<summary>)")


def strip_analysis(completion: str) -> str:
    """The summary without the model's ``<analysis>`` scratchpad: cut from the first ``<analysis>``
    to the first ``</analysis>`` that only whitespace separates from a ``<summary>``; unchanged
    when a ``<summary>`` opens before the analysis or inside the cut span (quoted, not written),
    when there is no such seam, and when nothing would be left."""
    start = completion.find(ANALYSIS_OPEN)
    if start < 0:
        return completion
    opened = completion.find(SUMMARY_OPEN)
    if 0 <= opened < start:
        return completion
    seam = _SEAM.search(completion, start)
    if seam is None or SUMMARY_OPEN in completion[start:seam.start()]:
        return completion
    left = (completion[:start] + completion[seam.end():]).strip()
    return left or completion


def summary_message(completion: str) -> dict:
    return {"role": "user", "content": SUMMARY_HEAD + completion + SUMMARY_TAIL, "metadata": {"summary": True}}


def cut_middle(text: str, size: int) -> str:
    """``text`` cut to about ``size`` UTF-8 bytes: its head and tail around the truncation marker
    (unchanged when it fits, or when ``size`` leaves no room beside the marker)."""
    room = size - len(TRUNCATION_MARKER)
    if room <= 0:
        return text
    raw = text.encode("utf-8", errors="replace")
    if len(raw) <= room:
        return text
    head_len = room // 2
    tail_len = room - head_len
    head = raw[:head_len].decode("utf-8", errors="replace")
    tail = raw[len(raw) - tail_len:].decode("utf-8", errors="replace")
    return head + TRUNCATION_MARKER + tail


def _shrink_candidates(msgs: list) -> list[tuple[int, int, int]]:
    """(weight, message, part) for every piece of tool output that shrinking would reduce."""
    out = []
    for k, m in enumerate(msgs):
        if role(m) != "tool":
            continue
        c = m.get("content")
        parts = c if isinstance(c, list) else [text_part("" if c is None else str(c))]
        for j, p in enumerate(parts):
            if not isinstance(p, dict):
                continue
            t = p.get("type")
            if t in ("text", "input_text", "output_text"):
                text = str(p.get("text", ""))
                if len(text) // 2 > len(TRUNCATION_MARKER):
                    out.append((len(text), k, j))
            elif t in ("image_url", "image", "input_image"):
                out.append((image_tokens(p) * 4, k, j))
    return out


def fit_summary_input(msgs: list, window: int, max_tokens: int, count: Callable[[list], int]) -> tuple[list, int]:
    """Shrink the largest pieces of tool output until the summary input fits the window less the
    output reserve (their max_tokens, else 4,096, at most half the window): text cut in its
    middle to half, images replaced by a note. (new list, pieces shrunk)."""
    target = window - min(max_tokens or DEFAULT_OUTPUT_RESERVE, window // 2)
    tokens = count(msgs)
    if tokens <= target:
        return msgs, 0
    msgs = list(msgs)
    shrunk = 0
    for _ in range(MAX_FIT_STEPS):
        cands = _shrink_candidates(msgs)
        if not cands:
            break
        best = cands[0]
        for c in cands[1:]:
            if c[0] > best[0]:
                best = c
        _, k, j = best
        m = msgs[k]
        c = m.get("content")
        if isinstance(c, list):
            parts = list(c)
            p = parts[j]
            if p.get("type") in ("text", "input_text", "output_text"):
                parts[j] = text_part(cut_middle(str(p.get("text", "")), len(str(p.get("text", ""))) // 2))
            else:
                parts[j] = text_part("[image elided for summarization]")
            msgs[k] = {**m, "content": parts}
        else:
            text = "" if c is None else str(c)
            msgs[k] = {**m, "content": cut_middle(text, len(text) // 2)}
        shrunk += 1
        now = count(msgs)
        if now >= tokens:
            break
        tokens = now
        if tokens <= target:
            break
    return msgs, shrunk


def has_memory_calls(messages: list) -> bool:
    return any(call_name(c) == MEMORY_TOOL for m in messages for c in calls_of(m))
