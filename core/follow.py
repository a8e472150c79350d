"""Follow a transcript that is still being written (a running Claude Code session,
a recording the proxy is appending to).

``LineTail`` reads only the new complete lines since the last read and keeps a
partial last line for later. ``Follower.poll()`` checks size and mtime, and when
complete lines arrived it re-invokes the loader on the grown file (the loaders
rebuild merges, segments and compactions correctly only from the whole file);
problems the loader reports on the unfinished last line are dropped, since that
line is still being written. ``FollowThread`` polls in the background and calls
``on_update`` from its thread (a UI marshals it to its own thread).
"""
from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from .conversation import LoadResult


@dataclass
class FollowUpdate:
    result: LoadResult | None           # the reloaded file (None when it could not be loaded yet)
    new_lines: list                     # [(1-based line number, raw bytes)] complete lines since the last update
    lines: int                          # complete lines so far
    size: int                           # bytes of complete lines so far
    partial: bool                       # a partial last line is waiting for its newline
    reset: bool = False                 # the file shrank or was replaced: everything was re-read
    error: str | None = None            # why the file could not be loaded (a LoadError's text)
    seconds: float = 0.0                # time the reload took


class LineTail:
    """Incremental reader of complete lines."""

    def __init__(self, path: str | os.PathLike, max_chunk: int = 64 * 1024 * 1024):
        self.path = Path(path)
        self.offset = 0          # bytes consumed (always at a line start)
        self.lines = 0           # complete lines consumed
        self.partial = b""       # bytes after the last newline
        self.max_chunk = max_chunk
        self._ino = None

    def reset(self) -> None:
        self.offset, self.lines, self.partial = 0, 0, b""

    def read_new(self) -> tuple[list, bool]:
        """(new complete lines as [(line number, bytes)], reset?)."""
        reset = False
        try:
            st = self.path.stat()
        except FileNotFoundError:
            return [], False
        ino = (st.st_dev, st.st_ino)
        if self._ino is not None and (ino != self._ino or st.st_size < self.offset + len(self.partial)):
            self.reset()            # replaced or truncated: start over
            reset = True
        self._ino = ino
        out = []
        with self.path.open("rb") as f:
            f.seek(self.offset + len(self.partial))
            while True:
                data = f.read(self.max_chunk)
                if not data:
                    break
                buf = self.partial + data
                cut = buf.rfind(b"\n")
                if cut < 0:
                    self.partial = buf
                    continue
                complete, self.partial = buf[:cut + 1], buf[cut + 1:]
                for raw in complete.split(b"\n")[:-1]:
                    self.lines += 1
                    out.append((self.lines, raw + b"\n"))
                self.offset += len(complete)
        return out, reset


def _default_loader(path: Path) -> LoadResult:
    from .loaders import load
    return load(path)


class Follower:
    """Poll a growing file; reload it through the loaders when complete lines arrive."""

    def __init__(self, path: str | os.PathLike, loader: Callable[[Path], LoadResult] | None = None):
        self.path = Path(path)
        self.loader = loader or _default_loader
        self.tail = LineTail(self.path)
        self._sig = None
        self.result: LoadResult | None = None
        self.reloads = 0

    def _signature(self):
        try:
            st = self.path.stat()
        except OSError:
            return None
        return st.st_size, st.st_mtime_ns, st.st_ino

    def poll(self, force: bool = False) -> FollowUpdate | None:
        """An update when new complete lines arrived (or ``force``), else None."""
        sig = self._signature()
        if sig is None:
            if self._sig is not None or force:
                self._sig = None
                return FollowUpdate(None, [], self.tail.lines, self.tail.offset, False, False,
                                    f"{self.path}: the file is gone (moved or deleted)")
            return None
        if sig == self._sig and not force:
            return None
        self._sig = sig
        new, reset = self.tail.read_new()
        if not new and not reset and not force and self.result is not None:
            return None          # only the partial last line grew
        if not new and self.tail.lines == 0:
            return FollowUpdate(None, [], 0, 0, bool(self.tail.partial), reset,
                                "waiting for the first complete line" if self.tail.partial else "the file is empty")
        t0 = time.perf_counter()
        error = None
        try:
            res = self.loader(self.path)
        except Exception as e:   # LoadError, or a loader bug: report, keep following
            res, error = None, str(e)
        dt = time.perf_counter() - t0
        if res is not None:
            limit = self.tail.lines
            res.problems = [p for p in res.problems if not (p.line and p.line > limit)]
            for c in res.conversations:
                c.problems = [p for p in c.problems if not (p.line and p.line > limit)]
            self.result = res
            self.reloads += 1
        return FollowUpdate(res, new, self.tail.lines, self.tail.offset, bool(self.tail.partial), reset, error, dt)


class FollowThread(threading.Thread):
    """Poll every ``interval`` seconds until ``stop()``; ``on_update(FollowUpdate)``
    runs in this thread."""

    def __init__(self, path: str | os.PathLike, on_update: Callable[[FollowUpdate], None], interval: float = 0.5,
                 loader: Callable[[Path], LoadResult] | None = None):
        super().__init__(name="compactscope-follow", daemon=True)
        self.follower = Follower(path, loader)
        self.on_update = on_update
        self.interval = interval
        self._stop_event = threading.Event()

    def run(self) -> None:
        first = True
        while not self._stop_event.is_set():
            upd = self.follower.poll(force=first)
            first = False
            if upd is not None:
                try:
                    self.on_update(upd)
                except Exception:
                    pass
            self._stop_event.wait(self.interval)

    def stop(self, timeout: float = 5.0) -> None:
        self._stop_event.set()
        if self.is_alive() and threading.current_thread() is not self:
            self.join(timeout)
