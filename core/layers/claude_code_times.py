"""The times Claude Code's time-based microcompact reads: the latest timestamp of a message list (the "now" when
the call's own is not known) and its last assistant message with a timestamp.

Both are found from the end of the list, so a list whose last messages carry no timestamp is walked back to the
last one that does: a session with none (an Anthropic or OpenAI log) was walked whole at every call of a replay
(30,000 one-character messages: 82 s). A message list whose messages all lack one is answered from the meta map
at once (looked at once per map), and a list grown at its end since, or one that starts with all the messages of a
list asked before (``ListMemo``: a replay's running context), is walked over its new messages only. Pure Python, no
Qt.
"""
from __future__ import annotations

import threading
from typing import Any

from ..runtime.listmemo import ListMemo
from ..runtime.forget import on_forget

_TIMES = ListMemo()           # per list: (how many messages, what ``last_times`` found over them); owner: the meta map
_MAPS: dict = {}              # id(meta map) -> (the map, its length then, whether any message has a timestamp)
_MAPS_KEPT = 8
_LOCK = threading.Lock()
on_forget(_TIMES.clear)
on_forget(_MAPS.clear)         # (a fleet worker drops the last session's messages)


def timestamp(meta: dict, m: Any) -> float | None:
    """The recorded time of ``m`` in seconds, from the id -> MessageMeta map; None when it has none."""
    mt = meta.get(id(m))
    ts = getattr(mt, "timestamp", None) if mt is not None else None
    return float(ts) if isinstance(ts, (int, float)) else None


def _any_timestamp(meta: dict) -> bool:
    e = _MAPS.get(id(meta))
    if e is not None and e[0] is meta and e[1] == len(meta):
        return e[2]
    found = any(isinstance(getattr(mt, "timestamp", None), (int, float)) for mt in meta.values())
    with _LOCK:
        while len(_MAPS) >= _MAPS_KEPT:
            _MAPS.pop(next(iter(_MAPS)))
        _MAPS[id(meta)] = (meta, len(meta), found)
    return found


def _scan(messages: list, start: int, meta: dict) -> tuple:
    """(latest timestamp, last assistant's index, its timestamp) over ``messages[start:]``, from the end."""
    now = ai = ai_ts = None
    for i in range(len(messages) - 1, start - 1, -1):
        m = messages[i]
        ts = timestamp(meta, m)
        if ts is None:
            continue
        if now is None:
            now = ts
        if isinstance(m, dict) and m.get("role") == "assistant":
            ai, ai_ts = i, ts
            break
    return now, ai, ai_ts


def last_times(messages: list, meta: dict) -> tuple:
    """(the latest timestamp of ``messages``, the index of its last assistant message with a timestamp, that
    timestamp), each None when there is none."""
    if not meta or not _any_timestamp(meta):
        return None, None, None
    kept, k, _ = _TIMES.find(messages, meta)
    start = k if kept is not None and k == kept[0] else 0
    now, ai, ai_ts = _scan(messages, start, meta)
    if start:
        before = kept[1]
        now = before[0] if now is None else now
        if ai is None:
            ai, ai_ts = before[1], before[2]
    found = (now, ai, ai_ts)
    if messages:
        _TIMES.store(messages, len(messages), (len(messages), found))
    return found
