"""Per-chunk results of a pure function over a message list, kept by the identity of the chunk's messages.

A parameter change re-runs a layer over nearly the same list: hermes's summary reads the 100k turns before the cut,
and the new cut is a few hundred turns away from the old one. The messages before the first one the change
affects are the same objects (layers share unchanged messages, never change one in place), so a scan cut into
fixed chunks (``messages[k * size:(k + 1) * size]``, counted from the list's first message) finds each chunk
before the change as it was, and only the chunks after it are read again. A chunk is found by the id of its first
message and its length and checked message by message (``map(is_, ...)``, in C); the memo holds each chunk's
messages, so that no id is reused while it is remembered, and forgets the oldest chunks past ``max_chunks``. Only
a list longer than one chunk is remembered: the events' replay summarises hundreds of short contexts, which would
push a long list's chunks out.
"""
from __future__ import annotations

import threading
from operator import is_
from typing import Any, Callable, Generic, TypeVar

from ..runtime.forget import on_forget

R = TypeVar("R")


class ChunkMemo(Generic[R]):
    """``results(messages)``: ``fn(chunk)`` for each fixed chunk of ``messages``, remembered per chunk."""

    def __init__(self, fn: Callable[[list], R], size: int = 2048, max_chunks: int = 256):
        self.fn = fn
        self.size = size
        self.max_chunks = max_chunks
        self._memo: dict[tuple[int, int], tuple[list, R]] = {}
        self._lock = threading.Lock()
        self.computed = 0                       # chunks computed (not found), for tests
        on_forget(self.clear)                   # (between two sessions: core.runtime.forget)

    def chunk_result(self, chunk: list) -> R:
        """``fn(chunk)``, found or computed and remembered."""
        if not chunk:
            return self.fn(chunk)
        key = (id(chunk[0]), len(chunk))
        e = self._memo.get(key)
        if e is not None and all(map(is_, e[0], chunk)):
            return e[1]
        r = self.fn(chunk)
        self.computed += 1
        with self._lock:
            self._memo.pop(key, None)
            while len(self._memo) >= self.max_chunks:
                self._memo.pop(next(iter(self._memo)))
            self._memo[key] = (chunk, r)
        return r

    def results(self, messages: list) -> list[R]:
        """The result of each chunk of ``messages``, in order (none for an empty list). A list of one chunk or
        less is not remembered (see ``remembers``)."""
        n, size = len(messages), self.size
        if not self.remembers(n):
            return [self.fn(messages)] if messages else []
        return [self.chunk_result(messages[k:k + size]) for k in range(0, n, size)]

    def remembers(self, n: int) -> bool:
        """Whether the chunks of a list of ``n`` are remembered: only a list of more than one chunk's are (a
        replay's hundreds of short contexts would push the long list's chunks out, and cost little to read)."""
        return n > self.size

    def clear(self) -> None:
        with self._lock:
            self._memo.clear()

    def __len__(self) -> int:
        return len(self._memo)


def chunk_bounds(n: int, size: int) -> list[tuple[int, int]]:
    """(start, end) of each chunk of a list of ``n`` (as ``ChunkMemo.results`` cuts it)."""
    return [(k, min(k + size, n)) for k in range(0, n, size)]


__all__: list[Any] = ["ChunkMemo", "chunk_bounds"]
