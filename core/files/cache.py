"""The user cache of workspaces: content-addressed, capped, pruned least-recently-used first.

Layout under the cache folder (``cache_root()``, the user's cache directory)::

    objects/ab/ab12...     every distinct file content once, named by its hash
    sessions/<name>/...    one workspace per engine: the names the layers chose (what the model was
                           shown), each a hard link to its object

So the same input run through the same layer again writes nothing new: the transcript or persisted
result is found in ``objects`` and linked. A session folder's modification time is its last use (a
workspace touches it when it writes or reads). ``prune`` removes the least recently used sessions,
and the objects no session links any more, until the cache fits under its cap
(``COMPACTSCOPE_CACHE_MAX``, default 2 GB); the workspaces of the running process are never removed.
``usage`` and ``clear`` serve ``compactscope cache [--clear]``. Recordings and error reports that
live beside ``sessions`` are the user's data: neither counted nor removed here.
"""
from __future__ import annotations

import contextlib
import os
import re
import shutil
import stat
import tempfile
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable

from ..runtime.record import field, record
from ..runtime.lazy import lazy_module

if TYPE_CHECKING:
    import hashlib
else:                                       # imported on first use (a headless command's start-up, issue 27)
    hashlib = lazy_module("hashlib", globals())

OBJECTS = "objects"
SESSIONS = "sessions"
ENV_MAX = "COMPACTSCOPE_CACHE_MAX"
DEFAULT_MAX_BYTES = 2 * 1000 ** 3
PRUNE_EVERY_BYTES = 64 * 1000 ** 2     # a process prunes again after writing this much to the cache

_UNITS = {"": 1, "b": 1, "k": 1000, "kb": 1000, "m": 1000 ** 2, "mb": 1000 ** 2, "g": 1000 ** 3, "gb": 1000 ** 3,
          "t": 1000 ** 4, "tb": 1000 ** 4, "kib": 1024, "mib": 1024 ** 2, "gib": 1024 ** 3, "tib": 1024 ** 4}


def parse_size(text: str) -> int:
    """``"500MB"``, ``"2 GiB"``, ``"1.5g"``, ``"0"`` -> bytes. ValueError says what is accepted."""
    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]*)?)\s*([a-zA-Z]*)\s*", str(text))
    unit = m.group(2).lower() if m else None
    if not m or unit not in _UNITS:
        raise ValueError(f"{text!r} is not a size: write a number with an optional unit, e.g. 500MB, 2GB, 1GiB")
    return int(float(m.group(1)) * _UNITS[unit])


def human(n: int) -> str:
    for unit, k in (("GB", 1000 ** 3), ("MB", 1000 ** 2), ("kB", 1000)):
        if n >= k:
            return f"{n / k:.1f} {unit}"
    return f"{n} B"


def cache_root() -> Path:
    """The cache folder (``sessions`` and ``objects`` live in it)."""
    try:
        from platformdirs import user_cache_dir
        return Path(user_cache_dir("compactscope", appauthor=False))
    except Exception:  # platformdirs missing or no home: fall back to the temp dir
        return Path(tempfile.gettempdir()) / "compactscope"


def max_bytes() -> int:
    """The cap: ``COMPACTSCOPE_CACHE_MAX`` (e.g. 500MB; 0 = no cap) or 2 GB."""
    raw = os.environ.get(ENV_MAX)
    if raw:
        try:
            return parse_size(raw)
        except ValueError:
            pass
    return DEFAULT_MAX_BYTES


# ------------------------------------------------------------------ the store
class Store:
    """The content-addressed objects of one cache folder."""

    def __init__(self, root: str | os.PathLike):
        self.root = Path(root)
        self.objects = self.root / OBJECTS
        self.written = 0                      # bytes this store wrote (new objects), for the prune schedule

    def path(self, key: str) -> Path:
        return self.objects / key[:2] / key

    def find(self, key: str) -> Path | None:
        p = self.path(key)
        try:
            st = os.lstat(p)
        except OSError:
            return None
        if not stat.S_ISREG(st.st_mode):
            return None
        with contextlib.suppress(OSError):
            os.utime(p)                       # used now (least-recently-used order of the objects)
        return p

    def put(self, data: bytes) -> Path:
        """The object holding ``data`` (written if new)."""
        key = hashlib.sha256(data).hexdigest()
        return self.find(key) or self._add(key, lambda f: f.write(data))

    def put_stream(self, key: str, write: Callable) -> Path:
        """The object ``key`` (a content hash computed by the caller); written by ``write(file)`` if new."""
        return self.find(key) or self._add(key, write)

    def _add(self, key: str, write: Callable) -> Path:
        final = self.path(key)
        final.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".new.", suffix=".tmp", dir=final.parent)
        try:
            with os.fdopen(fd, "wb") as f:
                write(f)
            with contextlib.suppress(FileExistsError):     # another process stored the same content meanwhile
                os.link(tmp, final)
            self.written += os.path.getsize(tmp)
        finally:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        return final


def link(obj: Path, dest: Path) -> bool:
    """Give ``obj`` the name ``dest`` (a new name only: FileExistsError when it is taken). False when the
    file system has no hard links (the caller then writes a copy)."""
    try:
        os.link(obj, dest)
        return True
    except FileExistsError:
        raise
    except OSError:
        return False


# ------------------------------------------------------------------ the running process's workspaces
_ACTIVE: set[Path] = set()
_LOCK = threading.Lock()
_SCHEDULE = {"next": 0}


def mark_active(root: Path) -> None:
    with _LOCK:
        _ACTIVE.add(Path(root))


def touch(root: Path) -> None:
    """A session folder was used now."""
    with contextlib.suppress(OSError):
        os.utime(root)


PRUNE_MARK = ".pruned"
PRUNE_QUIET_SECONDS = 600


def maybe_prune(root: Path, store: Store) -> threading.Thread | None:
    """Prune in the background when this process has not yet (and no process has in the last ten
    minutes), or when it has written ``PRUNE_EVERY_BYTES`` since it last did. Returns the thread."""
    with _LOCK:
        if store.written < _SCHEDULE["next"]:
            return None
        first = _SCHEDULE["next"] == 0
        _SCHEDULE["next"] = store.written + PRUNE_EVERY_BYTES
    mark = Path(root) / PRUNE_MARK
    if first:
        with contextlib.suppress(OSError):
            if time.time() - os.stat(mark).st_mtime < PRUNE_QUIET_SECONDS:
                return None
    with contextlib.suppress(OSError):
        mark.touch()

    def run():
        with contextlib.suppress(OSError):
            prune(root)
    t = threading.Thread(target=run, name="compactscope-cache-prune", daemon=True)
    t.start()
    return t


# ------------------------------------------------------------------ usage, prune, clear
@record
class Usage:
    """What the cache folder holds: bytes, sessions and objects, orphans, the cap and the oldest and newest use."""
    root: Path
    bytes: int = 0                 # every file once (hard links counted once)
    sessions: int = 0
    objects: int = 0
    orphans: int = 0               # objects no session links any more
    cap: int = 0
    oldest: float | None = None    # last use of the least recently used session
    newest: float | None = None
    others: dict = field(default_factory=dict)     # folder beside sessions -> bytes (not managed here)

    def lines(self) -> list[str]:
        def when(t: float | None) -> str:
            return time.strftime("%Y-%m-%d %H:%M", time.localtime(t)) if t else "-"
        out = [f"cache folder: {self.root}",
               f"workspaces: {self.sessions:,} session folder(s), {self.objects:,} stored file(s), "
               f"{human(self.bytes)} on disk (each file counted once)",
               f"cap: {human(self.cap) if self.cap else 'none'} (set {ENV_MAX}, e.g. {ENV_MAX}=500MB); the least "
               f"recently used sessions are removed first",
               f"sessions last used: {when(self.oldest)} (oldest) to {when(self.newest)} (newest)"]
        if self.orphans:
            out.append(f"{self.orphans:,} stored file(s) no session uses (removed at the next prune)")
        for name, n in sorted(self.others.items()):
            out.append(f"{name}/: {human(n)} (yours: not counted, never removed by the cache)")
        return out

    def to_json(self) -> dict:
        return {"root": str(self.root), "bytes": self.bytes, "sessions": self.sessions, "objects": self.objects,
                "orphans": self.orphans, "cap": self.cap, "oldest": self.oldest, "newest": self.newest,
                "others": self.others}


def _files(folder: Path) -> Iterable[tuple[str, os.stat_result]]:
    for dirpath, _dirnames, filenames in os.walk(folder):      # never follows symlinks
        for name in filenames:
            p = os.path.join(dirpath, name)
            with contextlib.suppress(OSError):
                yield p, os.lstat(p)


def _session_dirs(root: Path) -> list[tuple[float, Path]]:
    out = []
    with contextlib.suppress(OSError):
        for e in os.scandir(root / SESSIONS):
            with contextlib.suppress(OSError):
                st = e.stat(follow_symlinks=False)
                if stat.S_ISDIR(st.st_mode):
                    out.append((st.st_mtime, Path(e.path)))
    return sorted(out)


def _footprint(folder: Path, seen: set) -> int:
    n = 0
    for _, st in _files(folder):
        key = (st.st_dev, st.st_ino)
        if stat.S_ISREG(st.st_mode) and key not in seen:
            seen.add(key)
            n += st.st_size
    return n


def usage(root: Path | None = None) -> Usage:
    root = Path(root) if root is not None else cache_root()
    u = Usage(root, cap=max_bytes())
    seen: set = set()
    sessions = _session_dirs(root)
    u.sessions = len(sessions)
    if sessions:
        u.oldest, u.newest = sessions[0][0], sessions[-1][0]
    for _, s in sessions:
        u.bytes += _footprint(s, seen)
    for p, st in _files(root / OBJECTS):
        if stat.S_ISREG(st.st_mode) and not os.path.basename(p).startswith(".new."):
            u.objects += 1
            u.orphans += st.st_nlink <= 1
            if (st.st_dev, st.st_ino) not in seen:
                seen.add((st.st_dev, st.st_ino))
                u.bytes += st.st_size
    with contextlib.suppress(OSError):
        for e in os.scandir(root):
            if e.name not in (SESSIONS, OBJECTS) and e.is_dir(follow_symlinks=False):
                u.others[e.name] = _footprint(Path(e.path), set())
    return u


@record
class PruneResult:
    """What a prune removed: sessions, objects, and the bytes before and after."""
    sessions_removed: int = 0
    objects_removed: int = 0
    bytes_before: int = 0
    bytes_after: int = 0


def _drop_orphans(root: Path, now: float) -> tuple[int, int]:
    """Remove objects no session links, and leftovers of writes interrupted over an hour ago; (count,
    bytes). (A workspace that finds its object gone between storing and linking it writes the file.)"""
    count = freed = 0
    for p, st in list(_files(root / OBJECTS)):
        if not stat.S_ISREG(st.st_mode) or st.st_nlink > 1:
            continue
        if os.path.basename(p).startswith(".new.") and st.st_mtime > now - 3600:
            continue
        with contextlib.suppress(OSError):
            os.unlink(p)
            count += 1
            freed += st.st_size
    return count, freed


def _remove_session(path: Path) -> bool:
    try:
        if not stat.S_ISDIR(os.lstat(path).st_mode):
            return False
        shutil.rmtree(path)
        return True
    except OSError:
        return False


def _freed_by_removing(session: Path) -> int:
    """Bytes that leave the disk with ``session``: its files no other session links (the object they
    link becomes unused and goes too)."""
    links: dict = {}
    for _, st in _files(session):
        if stat.S_ISREG(st.st_mode):
            k = (st.st_dev, st.st_ino)
            n, _, size = links.get(k, (0, 0, 0))
            links[k] = (n + 1, st.st_nlink, st.st_size)
    # what is left is at most the object's own link
    return sum(size for n, nlink, size in links.values() if nlink - n <= 1)


def prune(root: Path | None = None, cap: int | None = None, keep: Iterable[Path] = ()) -> PruneResult:
    """Remove the least recently used sessions, and objects no session links, until the cache holds at
    most ``cap`` bytes (default ``max_bytes()``; 0 = no cap: only unlinked objects go). The running
    process's workspaces and ``keep`` are never removed."""
    root = Path(root) if root is not None else cache_root()
    cap = max_bytes() if cap is None else cap
    now = time.time()
    res = PruneResult()
    n, freed = _drop_orphans(root, now)
    res.objects_removed += n
    total = usage(root).bytes
    res.bytes_before = total + freed
    with _LOCK:
        protected = {p.resolve() for p in _ACTIVE} | {Path(p).resolve() for p in keep}
    for _ in range(3):      # the estimate of what a removal frees can be short (files linked in odd ways)
        if not cap or total <= cap:
            break
        for _, s in _session_dirs(root):
            if total <= cap:
                break
            if s.resolve() in protected:
                continue
            gone = _freed_by_removing(s)
            if _remove_session(s):
                res.sessions_removed += 1
                total -= gone
        res.objects_removed += _drop_orphans(root, now)[0]
        total = usage(root).bytes
    res.bytes_after = total
    return res


def clear(root: Path | None = None) -> PruneResult:
    """Remove every session and stored file (not those of the running process)."""
    root = Path(root) if root is not None else cache_root()
    res = PruneResult(bytes_before=usage(root).bytes)
    with _LOCK:
        protected = {p.resolve() for p in _ACTIVE}
    for _, s in _session_dirs(root):
        if s.resolve() not in protected and _remove_session(s):
            res.sessions_removed += 1
    res.objects_removed, _ = _drop_orphans(root, time.time())
    res.bytes_after = usage(root).bytes
    return res
