"""Tool pair indexes reused across the lists a run makes (``pair_index``): the layers that read tool pairs
(Claude Code's) and the views share them. Its own module so that a layer needs none of ``present``'s view
helpers (a headless command's start-up, issue 27); ``present`` re-exports it."""
from __future__ import annotations

import threading
from itertools import compress
from operator import is_, is_not
from typing import Any

from ..model.messages import ToolPairIndex, block_type, blocks

# the tool pair indexes of the last lists shown: [(messages tuple, ToolPairIndex)]. Stepping back and forth
# shows the same stages again; an index over 10k messages costs ~50 ms to build.
PAIR_CACHE: list = []
PAIR_LISTS = 10          # lists kept: every stage of a run (hermes: the input and six steps), and a few more
# the indexes of the lists the window shows (``pin_pairs``), kept apart from the lists indexed since: the events'
# replay indexes a list per compaction (hundreds), which pushed the shown result's out of PAIR_CACHE, and a
# parameter change's re-run of auto_compact indexed its 100k-message input again (~0.25 s)
PAIR_PINS: list = []
_PAIR_LOCK = threading.Lock()


def same_tool_shape(a: Any, b: Any) -> bool:
    """Whether ToolPairIndex reads the same from messages a and b (role, tool ids and names at the same
    block positions), e.g. a tool result whose content a layer replaced."""
    if a is b:
        return True
    if not (isinstance(a, dict) and isinstance(b, dict)):
        return not isinstance(a, dict) and not isinstance(b, dict)
    role = a.get("role")
    if role != b.get("role"):
        return False
    if role == "tool":
        return a.get("tool_call_id") == b.get("tool_call_id")
    ba, bb = blocks(a), blocks(b)
    if len(ba) != len(bb):
        return False
    for x, y in zip(ba, bb):
        if x is y:
            continue
        t = block_type(x)
        if t != block_type(y):
            return False
        if t == "tool_use":
            if x.get("id") != y.get("id") or x.get("name") != y.get("name"):
                return False
        elif t == "tool_result" and x.get("tool_use_id") != y.get("tool_use_id"):
            return False
    return a.get("tool_calls") == b.get("tool_calls")


def pair_index(messages: list) -> ToolPairIndex:
    """ToolPairIndex(messages), reused when the list holds the very same message objects as one indexed
    before (compared by identity, in C: messages are never changed in place), or messages that differ
    only where the index does not look (micro_compact's replaced results: ~10 ms instead of ~50 ms for
    an index over 10k messages)."""
    n = len(messages)
    with _PAIR_LOCK:                 # the pipeline's worker asks too (Claude Code's layers)
        cache = list(PAIR_CACHE) + [p for p in PAIR_PINS if all(p[0] is not c[0] for c in PAIR_CACHE)]
    for msgs, idx in cache:
        if len(msgs) == n and all(map(is_, msgs, messages)):
            _remember_pairs(msgs, idx)
            return idx
    idx = None
    for msgs, cached in cache:
        if len(msgs) == n:
            differ = list(compress(range(n), map(is_not, msgs, messages)))
            if all(same_tool_shape(msgs[i], messages[i]) for i in differ):
                idx = cached
                break
    if idx is None:
        idx = ToolPairIndex(messages)
    _remember_pairs(tuple(messages), idx)
    return idx


def pin_pairs(lists: list) -> None:
    """Keep the tool pair indexes of ``lists`` (the shown result's: its input and the lists its steps made)
    whatever is indexed after (the events' replay); the lists pinned before are let go. Each list is
    indexed now if it is not yet (``pair_index``)."""
    pins = []
    for msgs in lists:
        idx = pair_index(msgs)
        with _PAIR_LOCK:          # (the tuple pair_index just remembered: no second copy of the list)
            key = next((m for m, i in PAIR_CACHE if i is idx and len(m) == len(msgs) and all(map(is_, m, msgs))),
                       None)
        pins.append((key if key is not None else tuple(msgs), idx))
    with _PAIR_LOCK:
        PAIR_PINS[:] = pins


def _remember_pairs(msgs: tuple, idx: ToolPairIndex) -> None:
    with _PAIR_LOCK:
        for k, (m, _) in enumerate(PAIR_CACHE):
            if m is msgs:
                del PAIR_CACHE[k]
                break
        PAIR_CACHE.insert(0, (msgs, idx))
        del PAIR_CACHE[PAIR_LISTS:]
