"""hermes_prune's cheap pass (``prune_pass``), with what it found in a list kept for the next pass over it.

The pass has three parts: identical tool outputs replaced by a back-reference (all messages), old tool results
turned into one-liners and old call arguments shrunk (the messages before the protected tail's cut). What each
part does to a message depends on the list only, never on the parameters: the parameters move the cut. So the
pass over a list it has seen before (the window re-running the pipeline after a parameter change: the same
converted list, another ``summary_target_ratio``) reuses the back-references, the one-liners and the shrunk
arguments it made for that list (the same message and edit objects), and makes only those the new cut reaches
for the first time. The result is the one the pass makes from scratch, value for value.

``PruneMemo`` keeps this for the last ``max_lists`` lists of ``min_len`` messages or more (each held, so its id is
not reused while kept): a big list's pass is what a re-run saves, and the many small contexts a replay runs
(the window's events dock replays the session after each run) neither pay for the memo nor push a big list out.
"""
from __future__ import annotations

import threading
from bisect import bisect_left

from ..runtime.record import field, record
from ..pipeline.trace import REPLACE, Edit
from ..runtime.forget import on_forget
from . import hermes_rules as R

SUMMARIZED = "summarized"
IMAGES = "images_stripped"
ARGS = "args_shrunk"


def _fmt(n: int) -> str:
    return f"{n:,}"


@record
class _Pass:
    """What the pass found in one list: its calls, its back-references (the whole list) and, for the messages
    before ``covered``, the old-result and argument replacements (index order)."""
    messages: list
    length: int                          # the list's length and last message when scanned (a list grown in
    last: object                         # place since is scanned again)
    calls: dict
    dedup: dict                          # index -> the back-reference message
    dedup_edits: list
    old: list = field(default_factory=list)      # (index, new message, edit, stat) of the old-result part
    old_at: list = field(default_factory=list)   # their indexes (bisect)
    covered: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)   # (a cancelled run may still be covering it)
    args: list = field(default_factory=list)     # (index, new message, edits) of the arguments part
    args_at: list = field(default_factory=list)


class PruneMemo:
    """The last lists' ``_Pass`` (see the module's docstring)."""

    def __init__(self, max_lists: int = 2, min_len: int = 1_000):
        self.max_lists, self.min_len = max_lists, min_len
        self._passes: dict[int, _Pass] = {}
        self._lock = threading.Lock()

    def get(self, messages: list, meter=None) -> _Pass:
        if len(messages) < self.min_len:
            return _scan(messages, meter)
        with self._lock:
            p = self._passes.pop(id(messages), None)
            if p is not None:
                self._passes[id(messages)] = p        # (the most recently used last: the last to go)
        if p is not None and p.messages is messages and p.length == len(messages) and \
                (not messages or messages[-1] is p.last):
            return p
        p = _scan(messages, meter)
        with self._lock:
            self._passes.pop(id(messages), None)
            while len(self._passes) >= self.max_lists:
                self._passes.pop(next(iter(self._passes)))
            self._passes[id(messages)] = p
        return p

    def clear(self) -> None:
        with self._lock:
            self._passes.clear()


MEMO = PruneMemo()
on_forget(MEMO.clear)          # (a fleet worker drops the last session's lists)


DEDUP_FIGURE = "hermes_dedup"      # per tool result of DEDUP_MIN_CHARS or more: its dedup key as an int


def _dedup_figure(m: dict, meter) -> int:
    return int(R.dedup_key(m["content"]), 16)


def _scan(messages: list, meter=None) -> _Pass:
    """The calls and the back-references of a list (``meter``: a ``SizeMeter`` keeping each result's key)."""
    calls: dict = {}
    for m in messages:
        if m.get("role") == "assistant":
            for c in m.get("tool_calls") or []:
                if isinstance(c, dict):
                    fn = c.get("function", {})
                    calls[c.get("id", "")] = (fn.get("name", "unknown"), fn.get("arguments", ""))
                else:
                    calls[""] = ("unknown", "")
    dedup: dict = {}
    edits: list[Edit] = []
    seen: set = set()
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        c = m.get("content") or ""
        if m.get("role") != "tool" or not isinstance(c, str) or len(c) < R.DEDUP_MIN_CHARS:
            continue
        key = R.dedup_key(c) if meter is None else meter.figure(m, DEDUP_FIGURE, _dedup_figure)
        if key in seen:
            dedup[i] = {**m, "content": R.DUPLICATE_TEXT}
            edits.append(Edit(REPLACE, f"message {i}: identical to a later tool output ({_fmt(len(c))} chars), "
                                       "replaced by a back-reference", message=i, tool_id=m.get("tool_call_id"),
                              old_len=len(c), new_len=len(R.DUPLICATE_TEXT)))
        else:
            seen.add(key)
    return _Pass(messages, len(messages), messages[-1] if messages else None, calls, dedup, edits)


def _old_result(i: int, m: dict, calls: dict) -> tuple[dict, Edit, str] | None:
    """The old-result part for message ``i`` (as the back-references left it), or None when it stays."""
    if m.get("role") != "tool":
        return None
    c = m.get("content", "")
    if isinstance(c, list):
        if any(R.is_image_part(p) for p in c):
            parts = [{"type": "text", "text": R.SCREENSHOT_TEXT} if R.is_image_part(p) else p for p in c]
            return ({**m, "content": parts},
                    Edit(REPLACE, f"message {i}: image parts of an old tool result replaced by text",
                         message=i, tool_id=m.get("tool_call_id")), IMAGES)
        return None
    if isinstance(c, dict) and c.get("_multimodal"):
        text = c.get("text_summary") or R.SCREENSHOT_TEXT
        return ({**m, "content": f"[screenshot removed] {text[:200]}"},
                Edit(REPLACE, f"message {i}: multimodal tool result replaced by its text summary",
                     message=i, tool_id=m.get("tool_call_id")), IMAGES)
    if not isinstance(c, str) or not c or c == R.PRUNED_PLACEHOLDER or c.startswith("[Duplicate tool output"):
        return None
    if len(c) > R.PRUNE_MIN_CHARS:
        name, args = calls.get(m.get("tool_call_id", ""), ("unknown", ""))
        line = R.tool_one_liner(name, args, c)
        return ({**m, "content": line},
                Edit(REPLACE, f"message {i}: {name} result of {_fmt(len(c))} chars -> {line!r}",
                     message=i, tool_id=m.get("tool_call_id"), old_len=len(c), new_len=len(line)), SUMMARIZED)
    return None


def _shrunk_args(i: int, m: dict) -> tuple[dict, list] | None:
    """The arguments part for message ``i``, or None when it stays."""
    if m.get("role") != "assistant" or not m.get("tool_calls"):
        return None
    new_calls, changed, edits = [], False, []
    for c in m["tool_calls"]:
        if isinstance(c, dict):
            args = c.get("function", {}).get("arguments", "")
            if isinstance(args, str) and len(args) > R.ARGS_SHRINK_OVER:
                new = R.shrink_args_json(args)
                if new != args:
                    edits.append(Edit(REPLACE, f"message {i}: arguments of {c['function'].get('name')} shrunk "
                                               f"{_fmt(len(args))} -> {_fmt(len(new))} chars (still valid JSON)",
                                      message=i, tool_id=c.get("id"), old_len=len(args), new_len=len(new)))
                    c = {**c, "function": {**c["function"], "arguments": new}}
                    changed = True
        new_calls.append(c)
    return ({**m, "tool_calls": new_calls}, edits) if changed else None


def _cover(p: _Pass, cut: int) -> None:
    """Both parts made for every message before ``cut``."""
    ms, dedup, calls = p.messages, p.dedup, p.calls
    old, old_at, args, args_at = p.old, p.old_at, p.args, p.args_at
    for i in range(p.covered, cut):
        m = ms[i]
        role = m.get("role")
        if role == "tool":
            r = _old_result(i, dedup.get(i) or m, calls)
            if r is not None:
                old.append((i, *r))
                old_at.append(i)
        elif role == "assistant" and m.get("tool_calls"):
            a = _shrunk_args(i, m)      # (a call message is never a back-reference: those are tool results)
            if a is not None:
                args.append((i, *a))
                args_at.append(i)
    p.covered = max(p.covered, cut)


def _protected_cut(messages: list, protect_n: int, protect_tokens: int, meter) -> int:
    """The protected tail: tokens walked back from the end, with protect_n messages as a floor."""
    n = len(messages)
    floor = min(protect_n, n)
    if protect_tokens and protect_tokens > 0:
        acc, boundary = 0, n
        for i in range(n - 1, -1, -1):
            t = R.budget_tokens_of(messages[i], meter)
            if acc + t > protect_tokens and (n - i) >= floor:
                boundary = i
                break
            acc += t
            boundary = i
        return n - max(n - boundary, floor)
    return n - protect_n


def prune_pass(messages: list, protect_n: int, protect_tokens: int, meter=None,
               memo: PruneMemo | None = MEMO) -> tuple[list, list, dict]:
    """Dedup identical tool outputs, one-line summaries of old results, shrink old call arguments
    (``meter``: a ``SizeMeter`` caching each message's budget tokens; ``memo``: what earlier passes over the
    same list found, None = a pass from scratch)."""
    cut = _protected_cut(messages, protect_n, protect_tokens, meter)
    p = memo.get(messages, meter) if memo is not None else _scan(messages, meter)
    upto = max(cut, 0)
    with p.lock:
        _cover(p, upto)
        olds = p.old[:bisect_left(p.old_at, upto)]
        argss = p.args[:bisect_left(p.args_at, upto)]
    stats = {"prune_boundary": cut, "deduplicated": len(p.dedup), "summarized": 0, IMAGES: 0, ARGS: len(argss)}
    edits: list[Edit] = list(p.dedup_edits)
    for _, _, e, stat in olds:
        stats[stat] += 1
        edits.append(e)
    for _, _, es in argss:
        edits += es
    if not edits:
        return messages, edits, stats
    out = list(messages)
    for i, m in p.dedup.items():
        out[i] = m
    for i, m, _, _ in olds:
        out[i] = m
    for i, m, _ in argss:
        out[i] = m
    return out, edits, stats
