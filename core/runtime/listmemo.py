"""Per-list results of a forward scan, carried over to the lists that extend a list scanned before.

A layer that reads a whole context at every model call of a replay (the last reported usage, the CLI's estimate
of the history, its tool outputs) costs each call the whole context, and the replay grows quadratic. The running
context of a replay is the previous call's list grown in place by its owner (``SizeMeter.extend``), or a new
list sharing the previous one's messages as its prefix (``SizeMeter.concat``, a layer that kept them): a scan's
state after the messages it has seen is then good for the new list's first messages, and only the new ones are
scanned. ``ListMemo`` remembers that state for the last few lists, the way ``SizeMeter`` remembers its totals
(the same growth check; a shared prefix found by ``common_prefix``, in C). Lists are values in core: only their
owner extends them, nobody replaces a message in place.

The memo belongs to one owner at a time (a conversation's identity map of metadata, whose content the scans
read): a new owner clears it, so it never holds more than one conversation's lists.
"""
from __future__ import annotations

import threading
from itertools import compress, count, islice
from operator import is_not, ne
from typing import Any


def common_prefix(a: list, b: list) -> int:
    """How many leading messages ``a`` and ``b`` share (the same objects), found in C."""
    return next(compress(count(), map(is_not, a, b)), min(len(a), len(b)))


def equal_prefix(a: list, b: list) -> int:
    """How many leading messages ``a`` and ``b`` share by value (the same object, or an equal copy: an edit pass
    copies every message it touches), found in C: the lists compared as slices (the same objects cost a pointer
    compare each; ``map(is_not)`` costs a call per pair), halving the part that differs, then one by one in the
    last few."""
    lo, hi = 0, min(len(a), len(b))
    if a[:hi] == b[:hi]:
        return hi
    while hi - lo > _SCAN:              # the first difference is in [lo, hi)
        mid = (lo + hi) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid
    return next(compress(count(lo), map(ne, islice(a, lo, hi), islice(b, lo, hi))), hi)


_SCAN = 32


class ListMemo:
    """The state a scan left after ``messages[:covered]`` of the last ``max_lists`` lists (each held, so its id
    is not reused while remembered)."""

    def __init__(self, max_lists: int = 4):
        self.max_lists = max_lists
        self._owner: Any = None
        self._lists: dict[int, list] = {}       # id(list) -> [list, covered, its last message covered, state]
        self._lock = threading.Lock()

    def find(self, messages: list, owner: Any = None) -> tuple[Any, int, bool]:
        """(state, k, same): a remembered state and how many leading messages of ``messages`` it stands for
        (``k`` is at most what it covered: the shared prefix); ``same`` when it is this very list's (grown in place
        since, or as it was), else another list's (copy it before changing it). (None, 0, False) when none."""
        with self._lock:
            if owner is not self._owner:
                self._owner = owner
                self._lists.clear()
                return None, 0, False
            e = self._lists.get(id(messages))
            entries = list(self._lists.values())
        n = len(messages)
        if e is not None and e[0] is messages and e[1] <= n and (e[1] == 0 or messages[e[1] - 1] is e[2]):
            return e[3], e[1], True
        if not messages:
            return None, 0, False
        best: tuple[Any, int] | None = None
        for old, covered, last, state in reversed(entries):     # the most recent first
            if old is messages or not covered or old[0] is not messages[0] or len(old) < covered \
                    or old[covered - 1] is not last:
                continue
            k = min(common_prefix(old, messages), covered)
            if best is None or k > best[1]:
                best = (state, k)
            if k == covered:
                break
        if best is None:
            return None, 0, False
        return best[0], best[1], False

    def store(self, messages: list, covered: int, state: Any) -> None:
        """Remember ``state`` as the scan's after ``messages[:covered]``."""
        with self._lock:
            self._lists.pop(id(messages), None)
            while len(self._lists) >= self.max_lists:
                self._lists.pop(next(iter(self._lists)))
            self._lists[id(messages)] = [messages, covered, messages[covered - 1] if covered else None, state]

    def clear(self) -> None:
        with self._lock:
            self._owner = None
            self._lists.clear()
