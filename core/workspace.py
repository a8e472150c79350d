"""Where layers write their side effects: persisted tool results and transcripts.

Default: a per-session folder under the user's cache directory, never beside
the opened file. Ids are sanitised so ``../../x`` or ``/abs`` stays inside, and
a name clash never overwrites another result's file.
"""
from __future__ import annotations

import itertools
import os
import re
import stat
import tempfile
import threading
import time
from pathlib import Path

from .safeio import atomic_write, dumps, fix_text

PERSIST_DIR = ".task_outputs/tool-results"
TRANSCRIPT_DIR = ".transcripts"
_SAFE = re.compile(r"[^A-Za-z0-9._-]")


def safe_id(raw: object) -> str:
    """The later teaching code's sanitiser, plus: no leading dots (so '..' cannot
    name a parent)."""
    s = _SAFE.sub("_", str(raw))[:120].lstrip(".")
    return s or "unknown"


def default_root() -> Path:
    try:
        from platformdirs import user_cache_dir
        base = Path(user_cache_dir("compactscope", appauthor=False))
    except Exception:  # platformdirs missing or no home: fall back to the temp dir
        base = Path(tempfile.gettempdir()) / "compactscope"
    return base / "sessions"


class Workspace:
    """A folder that receives persisted results and transcripts.

    Files are created lazily; nothing is written until a layer needs to.
    """

    _counter = itertools.count(1)

    def __init__(self, root: str | os.PathLike | None = None):
        if root is None:
            root = default_root() / f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}-{next(self._counter)}"
        self.root = Path(root).resolve()
        self._lock = threading.Lock()
        self._seq = itertools.count(1)

    def _inside(self, rel: str) -> Path:
        p = (self.root / rel).resolve()
        if self.root != p and self.root not in p.parents:
            raise ValueError(f"refusing to write outside the workspace: {rel}")
        return p

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
                    atomic_write(path, data, exclusive=True)
                except FileExistsError:
                    continue
                break
        return f"{PERSIST_DIR}/{name}", path

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
            return self._inside(rel).read_text(encoding="utf-8", errors="replace")
        except (OSError, ValueError):
            return None

    def write_transcript(self, messages: list) -> Path:
        """Write the list one message per line (strict JSON: a lone surrogate becomes U+FFFD); the name is
        unique even within one second (the teaching code's names collide). The file appears whole or not
        at all."""
        data = "".join(dumps(m) + "\n" for m in messages).encode("utf-8")
        with self._lock:
            folder = self._folder(TRANSCRIPT_DIR)
            stamp = time.strftime("%Y%m%d-%H%M%S")
            while True:
                path = folder / f"transcript_{stamp}-{next(self._seq):04d}.jsonl"
                if os.path.lexists(path):
                    continue
                try:
                    atomic_write(path, data, exclusive=True)
                except FileExistsError:
                    continue
                break
        return path


def _regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False
