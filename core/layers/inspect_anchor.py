"""Inspect's baseline before a call, kept per list: the input tokens the previous recorded call reported plus
Inspect's count of the messages that call did not see, while every message it saw is still in the list
(``InspectTokens``). Pure Python, no Qt.

What a recorded call saw is the messages of its segment before it (a message a real compaction re-sent stands for
the one it copies). Instead of the set of those messages for every call (a segment of n calls held n sets of up to
n messages), each message of a segment has its *key*: the first position in the segment that stands for it; a call
at position i saw exactly the messages whose key is below i. Per list asked (``ListMemo``: the replay's running
context grows by the messages since the last call), the keys of its messages are kept sorted and the messages not
yet seen in order, so a call costs the messages new to it.
"""
from __future__ import annotations

import threading
from bisect import bisect_left, bisect_right, insort
from typing import Any, Callable

from ..runtime.listmemo import ListMemo

_NONE = float("inf")            # the key of a message no call of the segment saw


class _ListState:
    """One list's messages as the calls of one segment see them: the ids present, the keys of the distinct ones
    (sorted), and the messages with a key at or over ``floor`` (the last call asked about), in order."""
    __slots__ = ("seg", "covered", "present", "keys", "pending", "floor")

    def __init__(self, seg: int):
        self.seg = seg
        self.covered = 0                 # how many leading messages of the list it holds
        self.present: set = set()
        self.keys: list = []
        self.pending: list = []
        self.floor: Any = 0

    def copy(self) -> "_ListState":
        c = _ListState(self.seg)
        c.covered = self.covered
        c.present, c.keys, c.pending, c.floor = set(self.present), list(self.keys), list(self.pending), self.floor
        return c


class Anchors:
    """The recorded calls of a conversation with a reported usage, and the baseline of a list before one."""

    def __init__(self, msgs: list, meta: list, segments: Any):
        self.msgs = msgs
        self.index = {id(m): (m, i) for i, m in enumerate(msgs)}     # id(history message) -> (message, index)
        self.calls: list = []            # history indices of the assistant messages, ascending
        self.anchors: dict = {}          # assistant index -> (reported input tokens, its segment)
        starts = sorted({s for s in (segments or [0]) if 0 <= s < len(msgs)} | {0})
        self.first: list[dict] = [{} for _ in starts]       # per segment: id(message) -> its key
        self.sorted_keys: list[list] = [[] for _ in starts]  # per segment: the keys, ascending
        self.edited: list[list] = [[] for _ in starts]      # per segment: positions of the edited copies
        self._memo = ListMemo()
        self._lock = threading.Lock()
        seg = 0
        for i, m in enumerate(msgs):
            while seg + 1 < len(starts) and i >= starts[seg + 1]:
                seg += 1
            extra = meta[i].extra if i < len(meta) else {}
            o = extra.get("copy_of")
            o = o if isinstance(o, int) and 0 <= o < len(msgs) and not extra.get("edited") else i
            if extra.get("edited"):
                self.edited[seg].append(i)
            x = id(msgs[o])
            if x not in self.first[seg]:
                self.first[seg][x] = i
                self.sorted_keys[seg].append(i)
            if not (isinstance(m, dict) and m.get("role") == "assistant"):
                continue
            self.calls.append(i)
            u = meta[i].usage if i < len(meta) else None
            if u is not None and u.context_tokens > 0:
                self.anchors[i] = (u.context_tokens, seg)

    def _state(self, messages: list, seg: int) -> _ListState:
        st, k, same = self._memo.find(messages, self)
        if st is None or st.seg != seg or k != st.covered:
            st, k = _ListState(seg), 0
        elif not same and k < len(messages):
            st = st.copy()
        first, present = self.first[seg], st.present
        for m in messages[k:]:
            key = first.get(id(m), _NONE)
            if id(m) not in present:
                present.add(id(m))
                if key != _NONE:
                    keys = st.keys
                    if keys and keys[-1] > key:
                        insort(keys, key)
                    else:
                        keys.append(key)
            if key >= st.floor:
                st.pending.append((m, key))
        st.covered = len(messages)
        self._memo.store(messages, len(messages), st)
        return st

    def baseline(self, messages: list, count: Callable[[list], int]) -> int | None:
        """The reported input of the last recorded call before the list's last message plus ``count`` of the
        messages that call did not see; None when the list no longer holds every message that call saw."""
        if not self.anchors or not messages:
            return None
        hit = self.index.get(id(messages[-1]))
        if hit is None or hit[0] is not messages[-1]:
            return None
        k = bisect_right(self.calls, hit[1]) - 1          # the last call made before this one
        anchor = self.anchors.get(self.calls[k]) if k >= 0 else None
        if anchor is None:
            return None
        reported, seg = anchor
        at = self.calls[k]
        eds = self.edited[seg]
        edited = [self.msgs[h] for h in eds[:bisect_left(eds, at)]]
        with self._lock:
            st = self._state(messages, seg)
            gone = {id(e) for e in edited}
            inside = sum(1 for x in gone if x in st.present)
            if bisect_left(st.keys, at) - inside != bisect_left(self.sorted_keys[seg], at) - len(gone):
                return None
            if at < st.floor:
                st.pending = [(m, key) for m in messages for key in (self.first[seg].get(id(m), _NONE),)]
                st.floor = 0
            st.pending = [p for p in st.pending if p[1] >= at]
            st.floor = at
            new = [p[0] for p in st.pending]
        for e in edited:                 # a compaction's edited copy: itself (a replay following reality), or the
            if id(e) in st.present:      # same content in the list
                continue
            j = next((j for j, m in enumerate(new) if m == e), None)
            if j is None:
                return None
            del new[j]
        return reported + (count(new) if new else 0)

