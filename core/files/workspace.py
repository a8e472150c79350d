"""Where layers write their side effects: persisted tool results and transcripts.

Default: a per-session folder under the user's cache directory, never beside
the opened file. Ids are sanitised so ``../../x`` or ``/abs`` stays inside, and
a name clash never overwrites another result's file. A transcript is named by
its content, so the same list is written once. In the cache, every file is a
hard link to a content-addressed store (``core.cache``): the same input run
through the same layer again adds nothing, and the cache is pruned least
recently used first under its cap.
"""
from __future__ import annotations

import contextlib
import itertools
import os
import re
import shutil
import stat
import tempfile
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from . import cache
from ..pipeline.facts import FACTS, BytesFact
from .safeio import atomic_write, dumps, fix_text
from ..runtime.lazy import lazy_module

if TYPE_CHECKING:
    import hashlib
else:                                       # imported on first use (a headless command's start-up, issue 27)
    hashlib = lazy_module("hashlib", globals())

try:
    import orjson
except ImportError:  # pragma: no cover - orjson is a dependency
    orjson = None  # type: ignore[assignment]  # (checked before use)

PERSIST_DIR = ".task_outputs/tool-results"
TRANSCRIPT_DIR = ".transcripts"
# message -> blake2b of its transcript line (a column of the one per-message table)
LINE_DIGESTS = BytesFact("transcript_line_blake2b", 16, lambda m: hashlib.blake2b(_line(m), digest_size=16).digest())
_SAFE = re.compile(r"[^A-Za-z0-9._-]")


class WorkspaceError(OSError, ValueError):
    """The workdir cannot take a layer's files (not a folder, read-only, full, a symlink that leads
    outside): bad input, said with what to do (the headless commands exit 2)."""


WORKDIR_HINT = "pass --workdir a folder you can write to, or leave it out to use one in the user cache"


def _say(root: Path, e: BaseException) -> WorkspaceError:
    if isinstance(e, WorkspaceError):
        return e
    if isinstance(e, ValueError):           # refused: a symlink or a non-folder in the way
        return WorkspaceError(f"{root}: {e} (Compactscope never writes through a symlink that leads outside "
                              f"the workdir); remove it, or {WORKDIR_HINT}")
    err = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
    name = getattr(e, "filename", None)
    where = f" ({name})" if name else ""
    what = {"ENOSPC": "the disk is full", "EROFS": "the filesystem is read-only", "EDQUOT": "the disk quota is used up",
            "EACCES": "no permission to write there", "EPERM": "no permission to write there",
            "ENOTDIR": "a file stands where a folder is needed", "ENAMETOOLONG": "the name is too long",
            "ELOOP": "a loop of symlinks is in the way"}
    import errno
    code = errno.errorcode.get(getattr(e, "errno", None) or 0, "")
    return WorkspaceError(f"cannot write in the workdir {root}: {what.get(code, err)}{where}; {WORKDIR_HINT}")


def check_workdir(path: str | os.PathLike) -> Path:
    """The workdir ``path``, created if needed and checked writable (a file is made and removed) before a layer
    needs it; WorkspaceError says what is wrong and what to do."""
    root = Path(path).expanduser()
    try:
        if root.exists() and not root.is_dir():
            raise WorkspaceError(f"the workdir {root} is not a folder (a file of that name exists); {WORKDIR_HINT}")
        root.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".compactscope-probe.", dir=root)
        try:
            os.write(fd, b"x")
        finally:
            os.close(fd)
            os.unlink(probe)
    except OSError as e:
        raise _say(root, e) from None
    root = root.resolve()
    for rel in (PERSIST_DIR, TRANSCRIPT_DIR):
        p = (root / rel).resolve()
        if root not in p.parents:
            raise WorkspaceError(f"{root / rel.split('/')[0]} is a symlink that leads outside the workdir (to "
                                 f"{p.parent if rel == PERSIST_DIR else p}); Compactscope never writes through it: "
                                 f"remove it, or {WORKDIR_HINT}")
    return root


def _writes(method):
    """A write of the workspace whose failure (a full disk, a read-only folder, a symlink in the way) is a
    WorkspaceError naming the workdir and what to do, not an internal error."""
    import functools

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except (OSError, ValueError) as e:
            raise _say(self.root, e) from None
    return wrapper


def safe_id(raw: object) -> str:
    """The later teaching code's sanitiser, plus: no leading dots (so '..' cannot
    name a parent)."""
    s = _SAFE.sub("_", str(raw))[:120].lstrip(".")
    return s or "unknown"


def default_root() -> Path:
    """The folder of the per-session workspaces in the user's cache."""
    return cache.cache_root() / cache.SESSIONS


class Workspace:
    """A folder that receives persisted results and transcripts.

    Files are created lazily; nothing is written until a layer needs to.
    """

    _counter = itertools.count(1)

    def __init__(self, root: str | os.PathLike | None = None):
        self.store: cache.Store | None = None      # the cache's content store (default workspaces only)
        if root is None:
            base = cache.cache_root()
            root = base / cache.SESSIONS / f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}-{next(self._counter)}"
            self.store = cache.Store(base)
        self.root = Path(root).resolve()
        if self.store is not None:
            cache.mark_active(self.root)
        self._lock = threading.Lock()
        self.pruning: threading.Thread | None = None   # the background prune of the cache this workspace started
        # the last list written and its file (list, length, path): the same list again (a parameter change
        # re-running auto_compact over the kept step's list) is found without 100k digest look-ups
        self._last_transcript: tuple | None = None

    def _inside(self, rel: str) -> Path:
        p = (self.root / rel).resolve()
        if self.root != p and self.root not in p.parents:
            raise ValueError(f"refusing to write outside the workspace: {rel}")
        return p

    @_writes
    def persist_tool_result(self, tool_use_id: object, text: str) -> tuple[str, Path]:
        """Write a tool result's full text; return (relative path as shown to the
        model, absolute path). Same content under the same id reuses the file;
        different content gets a new name (<id>-2.txt, ...). A name taken by anything else (a
        symlink, even a dangling one, a folder) is skipped: the write never goes through it."""
        base = safe_id(tool_use_id)
        data = fix_text(text if isinstance(text, str) else str(text)).encode("utf-8")
        with self._lock:
            folder = self._folder(PERSIST_DIR)
            for k in itertools.count(1):
                name = f"{base}.txt" if k == 1 else f"{base}-{k}.txt"
                path = folder / name
                if os.path.lexists(path):
                    if _regular(path):
                        try:
                            with open(path, "rb") as f:
                                if f.read(len(data) + 1) == data:
                                    break
                        except OSError:
                            pass
                    continue
                try:
                    self._create(path, data)
                except FileExistsError:
                    continue
                break
        self._used()
        return f"{PERSIST_DIR}/{name}", path

    def _create(self, path: Path, data: bytes) -> None:
        """A new file ``path`` holding ``data``: a link to the stored object in the cache, else written
        (atomically). FileExistsError when the name is taken."""
        if self.store is not None:
            obj = self.store.put(data)
            if _link(obj, path):
                return
        atomic_write(path, data, exclusive=True)

    def _used(self) -> None:
        if self.store is not None:
            cache.touch(self.root)
            self.pruning = cache.maybe_prune(self.store.root, self.store) or self.pruning

    def _folder(self, rel: str) -> Path:
        """The folder ``rel`` inside the workspace, created; refused when it (or a parent) is a symlink that
        leads outside."""
        folder = self._inside(rel)
        folder.mkdir(parents=True, exist_ok=True)
        folder = self._inside(rel)        # created meanwhile as a symlink elsewhere: refused
        if not folder.is_dir():
            raise ValueError(f"refusing to write into {rel}: not a folder")
        return folder

    def read_persisted(self, rel: str) -> str | None:
        try:
            text = self._inside(rel).read_text(encoding="utf-8", errors="replace")
        except (OSError, ValueError):
            return None
        if self.store is not None:
            cache.touch(self.root)
        return text

    @_writes
    def write_transcript(self, messages: list) -> Path:
        """Write the list one message per line (strict JSON: a lone surrogate becomes U+FFFD), named by
        its content (``transcript_<hash>.jsonl``): the same list again is the same file, written once.
        The file appears whole or not at all. Each message's line is hashed once per message object, so
        a list seen before costs a lookup per message, not a serialisation."""
        with self._lock:
            last = self._last_transcript
            if last is not None and last[0] is messages and last[1] == len(messages) and _regular(last[2]):
                path = last[2]
            else:
                folder = self._folder(TRANSCRIPT_DIR)
                # the digests are kept for the lists of this conversation (a run again with other parameters), in
                # the one per-message table (core.facts: bounded by the longest list shown or measured)
                # (hashed as they are looked up, not held: 100k digests as bytes objects are 5 MB for a moment)
                FACTS.expect(len(messages))
                key = _joined_key(LINE_DIGESTS.joined(messages, compute=False))
                path = None if key is None else self._name(folder, key, None)
                if path is None:
                    path = self._write_new(folder, messages)
                self._last_transcript = (messages, len(messages), path)
        self._used()
        return path

    def forget_lists(self) -> None:
        """Let go of the last list written as a transcript (another conversation is shown: it would hold the
        one before in memory)."""
        with self._lock:
            self._last_transcript = None

    def relative(self, path: Path) -> str:
        """``path`` (a file this workspace wrote) as shown to the model: relative to the workspace, so the same
        input gives the same text wherever the workspace is."""
        try:
            return Path(path).relative_to(self.root).as_posix()
        except ValueError:
            return str(path)

    def _line_and_digest(self, m) -> tuple[bytes, bytes]:
        line = _line(m)
        d = hashlib.blake2b(line, digest_size=16).digest()
        LINE_DIGESTS.put(m, d)
        return line, d

    def _write_new(self, folder: Path, messages: list) -> Path:
        """Serialise ``messages`` into a temporary file (hashing each line), then give it its name."""
        fd, tmp = tempfile.mkstemp(prefix=".transcript.", suffix=".tmp", dir=folder)
        try:
            with os.fdopen(fd, "wb") as f:
                def lines():
                    for m in messages:
                        line, d = self._line_and_digest(m)
                        f.write(line)
                        yield d
                key = _transcript_key(lines())      # (the digests hashed as the lines are written, not held)
            assert key is not None                  # (every line's digest was just made)
            made = self._name(folder, key, Path(tmp))
            assert made is not None                 # (from tmp a name is always made)
            return made
        finally:
            with contextlib.suppress(OSError):
                os.unlink(tmp)

    def _name(self, folder: Path, key: str, tmp: Path | None) -> Path | None:
        """The transcript file of content ``key`` in ``folder``: found, or made from the stored object or
        from ``tmp`` (a name taken by something else, e.g. a symlink, is skipped, never followed). None
        when it does not exist and there is nothing to make it from."""
        for k in itertools.count(1):
            path = folder / (f"transcript_{key[:16]}.jsonl" if k == 1 else f"transcript_{key[:16]}-{k}.jsonl")
            if _regular(path):
                return path               # named by its content: the same content
            if os.path.lexists(path):
                continue
            src = self.store.find(key) if self.store is not None else None
            if src is None and tmp is not None and self.store is not None:
                src = self.store.put_stream(key, lambda f: _copy_into(tmp, f))
            try:
                if src is not None and cache.link(src, path):
                    return path
                if tmp is None:
                    return None
                os.link(tmp, path)        # a new name only: never through anything that has it
                return path
            except FileExistsError:
                continue
            except OSError:               # the stored object was pruned meanwhile
                if tmp is None:
                    return None
                with contextlib.suppress(FileExistsError):
                    os.link(tmp, path)
                    return path
        return None                       # (not reached: the names are counted without end)


def _line(m) -> bytes:
    """A message as one line of strict JSON."""
    if orjson is not None:
        try:
            return orjson.dumps(m, option=orjson.OPT_APPEND_NEWLINE)
        except (TypeError, orjson.JSONEncodeError):
            pass            # lone surrogates, huge integers, keys that are not strings: the careful writer
    return (dumps(m) + "\n").encode("utf-8")


def _transcript_key(digests) -> str | None:
    """The content key of a transcript from its lines' digests; None when one is missing (not known)."""
    h = hashlib.blake2b(digest_size=32)
    for d in digests:
        if d is None:
            return None
        h.update(d)
    return h.hexdigest()


def _joined_key(digests: bytes | None) -> str | None:
    """``_transcript_key`` of the digests one after the other in one bytes (``BytesFact.joined``): the same key."""
    if digests is None:
        return None
    return hashlib.blake2b(digests, digest_size=32).hexdigest()


def _copy_into(src: Path, f) -> None:
    with open(src, "rb") as g:
        shutil.copyfileobj(g, f, 1 << 20)


def _link(obj: Path, path: Path) -> bool:
    """``path`` as a hard link to the stored ``obj``; False when that cannot be (no hard links here, or
    the object was pruned meanwhile): the caller writes the file itself. FileExistsError when taken."""
    try:
        return cache.link(obj, path)
    except FileExistsError:
        raise
    except OSError:
        return False


def _regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False
