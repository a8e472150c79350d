"""Follow a transcript that is still being written (a running Claude Code session,
a recording the proxy is appending to).

``LineTail`` reads only the new complete lines since the last read and keeps a
partial last line for later. ``Follower.poll()`` checks size and mtime, and when
complete lines arrived it re-invokes the loader on the grown file (the loaders
rebuild merges, segments and compactions correctly only from the whole file);
problems the loader reports on the unfinished last line are dropped, since that
line is still being written. ``FollowThread`` polls in the background and calls
``on_update`` from its thread (a UI marshals it to its own thread).

Every update says what happened to the file (``FollowUpdate.event``): it grew, it
was rewritten in place (even at the same size: the bytes already read are checked),
truncated (even when it grew again past the old end before the next poll), replaced
by another file, deleted, recreated, turned into a folder or something else that is
not a file, or became unreadable. Following never stops on its own: each of these is
an update, and the next poll looks again.
"""
from __future__ import annotations

import hashlib
import os
import stat
import threading
import time
from pathlib import Path
from typing import Callable

from ..runtime.record import record
from ..model.conversation import LoadResult
from ..files.jsonio import NotAFile, open_regular

# FollowUpdate.event: what happened to the file since the last update
FIRST = "first"              # the first look at the file
APPENDED = "appended"        # complete lines were added at the end (the usual case)
REWRITTEN = "rewritten"      # bytes already read changed (an editor saved it, a tool rewrote it): read again
TRUNCATED = "truncated"      # it is shorter than what was read (maybe longer again since): read again
REPLACED = "replaced"        # another file now has its name (a new inode): read again
DELETED = "deleted"          # no file has the name any more
RECREATED = "recreated"      # a file has the name again after it was gone or was not a file
NOT_A_FILE = "not_a_file"    # the name is a folder, a FIFO, a device...
UNREADABLE = "unreadable"    # it cannot be read (permissions, an I/O error)
RESTARTS = (REWRITTEN, TRUNCATED, REPLACED, RECREATED)
_MARK = 4096                 # bytes at the start and just before the read position, checked on every change


@record
class FollowUpdate:
    result: LoadResult | None           # the reloaded file (None when it could not be loaded yet)
    new_lines: list                     # [(1-based line number, raw bytes)] complete lines since the last update
    lines: int                          # complete lines so far
    size: int                           # bytes of complete lines so far
    partial: bool                       # a partial last line is waiting for its newline
    reset: bool = False                 # the file shrank or was replaced: everything was re-read
    error: str | None = None            # why the file could not be loaded (a LoadError's text)
    seconds: float = 0.0                # time the reload took
    event: str = APPENDED               # what happened to the file (FIRST, APPENDED, REWRITTEN, ... above)
    detail: str = ""                    # the event in words, for a status line

    @property
    def restarted(self) -> bool:
        """The file was read again from its start (rewritten, truncated, replaced or recreated)."""
        return self.event in RESTARTS


class LineTail:
    """Incremental reader of complete lines. It remembers a digest of every byte it read and the bytes at
    the start and just before its position, so that a file changed behind it is noticed: read again from
    the start rather than continued in the middle of other content."""

    def __init__(self, path: str | os.PathLike, max_chunk: int = 64 * 1024 * 1024):
        self.path = Path(path)
        self.offset = 0          # bytes consumed (always at a line start)
        self.lines = 0           # complete lines consumed
        self.partial = b""       # bytes after the last newline
        self.max_chunk = max_chunk
        self._ino: tuple[int, int] | None = None
        self._head = b""         # the first bytes read
        self._mark = b""         # the last bytes read (just before offset + len(partial))
        self._digest = hashlib.blake2b(digest_size=16)

    def reset(self) -> None:
        self.offset, self.lines, self.partial = 0, 0, b""
        self._head, self._mark = b"", b""
        self._digest = hashlib.blake2b(digest_size=16)

    @property
    def consumed(self) -> int:
        """Bytes read so far (complete lines and the partial last line)."""
        return self.offset + len(self.partial)

    def _changed(self, f, size: int, full: bool) -> bool:
        """Whether the bytes already read are no longer what the file holds: the first and the last bytes
        read are compared (cheap); ``full`` compares the digest of all of them (when the size did not change,
        a rewrite can only be told from a mere touch that way)."""
        n = self.consumed
        if n == 0:
            return False
        f.seek(0)
        if f.read(len(self._head)) != self._head:
            return True
        f.seek(n - len(self._mark))
        if f.read(len(self._mark)) != self._mark:
            return True
        if full:
            d = hashlib.blake2b(digest_size=16)
            f.seek(0)
            left = n
            while left > 0:
                chunk = f.read(min(left, 1 << 20))
                if not chunk:
                    return True
                d.update(chunk)
                left -= len(chunk)
            return d.digest() != self._digest.digest()
        return False

    def read_new(self, verify: bool = False) -> tuple[list, str | bool]:
        """(new complete lines as [(line number, bytes)], what made it read from the start: REPLACED,
        TRUNCATED or REWRITTEN, or False). ``verify``: compare every byte already read (slow; for a change
        that kept the size). NotAFile or OSError when the file cannot be read."""
        with open_regular(self.path) as f:
            st = os.fstat(f.fileno())
            ino = (st.st_dev, st.st_ino)
            what: str | bool = False
            if self._ino is not None and ino != self._ino:
                what = REPLACED
            elif st.st_size < self.consumed:
                what = TRUNCATED
            elif self._changed(f, st.st_size, verify):
                what = REWRITTEN if st.st_size == self.consumed or verify else TRUNCATED
            if what:
                self.reset()
            self._ino = ino
            out = []
            f.seek(self.consumed)
            while True:
                data = f.read(self.max_chunk)
                if not data:
                    break
                self._digest.update(data)
                if len(self._head) < _MARK:
                    self._head += data[:_MARK - len(self._head)]
                self._mark = (self._mark + data)[-_MARK:]
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
        return out, what


def _default_loader(path: Path) -> LoadResult:
    from ..loaders import load
    return load(path)


class Follower:
    """Poll a growing file; reload it through the loaders when complete lines arrive."""

    def __init__(self, path: str | os.PathLike, loader: Callable[[Path], LoadResult] | None = None):
        self.path = Path(path)
        self.loader = loader or _default_loader
        self.tail = LineTail(self.path)
        self._sig: tuple | None = None
        self._state: str | None = None      # "file", DELETED, NOT_A_FILE, UNREADABLE; None before the first look
        self.result: LoadResult | None = None
        self.reloads = 0

    def _look(self) -> tuple[str, tuple | None, str]:
        """("file", signature, "") or (DELETED / NOT_A_FILE / UNREADABLE, None, why)."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return DELETED, None, f"{self.path}: the file is gone (moved or deleted); following waits for it"
        except OSError as e:
            return UNREADABLE, None, f"{self.path}: cannot be read ({e.strerror or e}); following goes on"
        if not stat.S_ISREG(st.st_mode):
            kind = "a folder" if stat.S_ISDIR(st.st_mode) else "not a regular file"
            return NOT_A_FILE, None, f"{self.path}: is now {kind}; following waits for a file"
        return "file", (st.st_size, st.st_mtime_ns, st.st_ino, st.st_dev), ""

    def poll(self, force: bool = False) -> FollowUpdate | None:
        """An update when something happened to the file (or ``force``), else None. Never raises."""
        state, sig, why = self._look()
        before, self._state = self._state, state
        if state != "file":
            self._sig = None
            if before != state or force:
                return FollowUpdate(None, [], self.tail.lines, self.tail.offset, False, False, why, 0.0, state, why)
            return None
        if sig == self._sig and not force and before == "file":
            return None
        same_size = self._sig is not None and sig is not None and sig[0] == self._sig[0] and sig[2:] == self._sig[2:]
        self._sig = sig
        try:
            if before is not None and before != "file":
                self.tail.reset()               # it was gone or not a file: whatever is there now is new
            new, what = self.tail.read_new(verify=same_size)
        except (NotAFile, OSError) as e:
            self._state, self._sig = UNREADABLE, None
            msg = f"{self.path}: cannot be read ({getattr(e, 'message', None) or e.strerror or e}); following goes on"
            return FollowUpdate(None, [], self.tail.lines, self.tail.offset, False, False, msg, 0.0, UNREADABLE, msg)
        if before is None:
            event = FIRST
        elif before != "file":
            event = RECREATED
        else:
            event = what if isinstance(what, str) and what else APPENDED      # (what is False or a kind)
        restarted = event in RESTARTS
        if not new and not restarted and not force and self.result is not None and event != FIRST:
            return None          # only the partial last line grew (or the file was merely touched)
        detail = _DETAIL.get(event, "").format(path=self.path, lines=self.tail.lines)
        if not new and self.tail.lines == 0:
            empty = "waiting for the first complete line" if self.tail.partial else "the file is empty"
            return FollowUpdate(None, [], 0, 0, bool(self.tail.partial), restarted, empty, 0.0, event,
                                detail or empty)
        t0 = time.perf_counter()
        error: str | None = None
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
        return FollowUpdate(res, new, self.tail.lines, self.tail.offset, bool(self.tail.partial), restarted, error,
                            dt, event, detail)


_DETAIL = {
    FIRST: "{path}: {lines:,} complete lines",
    APPENDED: "",
    REWRITTEN: "{path} was rewritten in place: read again from the start ({lines:,} lines)",
    TRUNCATED: "{path} was truncated: read again from the start ({lines:,} lines)",
    REPLACED: "{path} was replaced by another file: read again from the start ({lines:,} lines)",
    RECREATED: "{path} is back: read from the start ({lines:,} lines)",
}


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
            try:
                upd = self.follower.poll(force=first)
            except Exception as e:  # (poll does not raise; a bug must still not end following silently)
                upd = FollowUpdate(None, [], 0, 0, False, False, f"follow failed: {type(e).__name__}: {e}", 0.0,
                                   UNREADABLE, f"follow failed: {e}")
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
