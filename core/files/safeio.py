"""How Compactscope writes files and JSON: atomically, never through a symlink, always readable back.

* ``atomic_write(path, data)``: the bytes go to a new temporary file beside ``path`` (created with
  ``O_EXCL``, so never through a symlink someone planted), then ``os.replace`` puts it in place in one
  step: a reader sees the old file or the whole new one, never half of it, and an existing symlink at
  ``path`` is refused, never followed.
* ``atomic_path(path)``: the same for writers that want a file name (Qt's image writer).
* ``open_append(path)``: an append-only log (recordings) opened without following a symlink, so one
  ``write`` per record adds a whole line or nothing.
* ``json_safe(value)`` / ``dumps(value)``: JSON that every reader accepts: lone UTF-16 surrogates (a cut
  emoji) become U+FFFD, NaN and infinities become null, integers beyond 64 bits become floats (what
  orjson and most readers make of them), keys become strings, a part nested deeper than ``MAX_DEPTH``
  levels is cut. The fast path (nothing to fix) copies nothing.
"""
from __future__ import annotations

import codecs
import contextlib
import json
import math
import os
import stat
import tempfile
from pathlib import Path
from importlib.util import find_spec
from typing import TYPE_CHECKING, Any, Iterator

from ..runtime.lazy import lazy_module

if TYPE_CHECKING:
    import orjson
elif find_spec("orjson") is not None:       # imported on first use: a command that writes no JSON never pays
    orjson = lazy_module("orjson", globals())
else:  # pragma: no cover - orjson is a dependency
    orjson = None                           # (checked before use)

INT64_MIN, INT64_MAX = -(2 ** 63), 2 ** 64 - 1     # orjson writes unsigned 64-bit integers too
REPLACEMENT = "\ufffd"
# Deeper JSON than this cannot be written by orjson, and a little deeper stops str() and json.dumps
# (Python's recursion limit): such a part of a value is replaced by this text (and reported).
MAX_DEPTH = 254
DEEP_PLACEHOLDER = "[nested too deeply: cut by Compactscope]"


class UnsafePath(OSError):
    """A write was refused: the target is a symlink or not a regular file."""


# ------------------------------------------------------------------ text and JSON values
def has_surrogates(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def fix_text(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD (a valid surrogate pair becomes its character)."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        pass
    # a pair written as two escapes (json.loads keeps "\\ud83d\\ude00" as one character, but a pair built
    # from two halves may not be): join pairs first, then replace what is left alone
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def _encode_errors(e: UnicodeError):
    """The codec error handler ``TEXT_ERRORS``: lone surrogates become U+FFFD as ``fix_text`` makes them
    (so text files and terminals say what the JSON says), what the encoding lacks becomes ``?``."""
    if not isinstance(e, UnicodeEncodeError):
        raise e
    fixed = fix_text(e.object[e.start:e.end])
    try:                                   # bytes: an encoder takes only ASCII text back from a handler
        return fixed.encode(e.encoding), e.end
    except (UnicodeError, LookupError):
        return "?" * len(fixed), e.end


TEXT_ERRORS = "compactscope.replace"       # errors= for text written to files and terminals
codecs.register_error(TEXT_ERRORS, _encode_errors)


def _bad_number(v: Any) -> bool:
    if v.__class__ is float:
        return not math.isfinite(v)
    if v.__class__ is int:
        return not INT64_MIN <= v <= INT64_MAX
    return False


def json_safe(value: Any, notes: list | None = None, _depth: int = 0) -> Any:
    """``value`` with what strict JSON readers refuse made readable (see the module docstring).
    Unchanged containers are returned as they are (no copy). ``notes`` collects what was changed.
    ``_depth``: how deep ``value`` sits in the document it was read from (a piece of a streamed document)."""
    if orjson is not None and _depth == 0:
        try:
            orjson.dumps(value)
            if not _has_nonfinite(value):
                return value
        except (TypeError, orjson.JSONEncodeError, RecursionError):
            pass
    return _fix(value, notes, _depth)


def _has_nonfinite(value: Any) -> bool:
    """NaN and infinities (orjson writes them as null without a word, so they are looked for here)."""
    stack = [value]
    pop, push = stack.pop, stack.append
    while stack:
        v = pop()
        c = v.__class__
        if c is float:
            if v != v or v in (math.inf, -math.inf):
                return True
        elif c is dict:
            for x in v.values():
                cx = x.__class__
                if cx is dict or cx is list or cx is float:
                    push(x)
        elif c is list or c is tuple:
            for x in v:
                cx = x.__class__
                if cx is dict or cx is list or cx is float:
                    push(x)
    return False


def _fix(v: Any, notes: list | None, depth: int) -> Any:
    if depth >= MAX_DEPTH:
        if notes is not None:
            notes.append(f"nested deeper than {MAX_DEPTH} levels: the deeper part is cut")
        return DEEP_PLACEHOLDER
    if isinstance(v, str):
        f = fix_text(v)
        if f is not v and notes is not None:
            notes.append("invalid text (a lone UTF-16 surrogate) replaced by U+FFFD")
        return f
    if isinstance(v, bool) or v is None:
        return v
    if isinstance(v, int):
        if not INT64_MIN <= v <= INT64_MAX:
            if notes is not None:
                notes.append("an integer beyond 64 bits made a float")
            try:
                return float(v)
            except OverflowError:        # beyond any float too
                return None
        return v
    if isinstance(v, float):
        if not math.isfinite(v):
            if notes is not None:
                notes.append(f"{v!r} (not a JSON number) made null")
            return None
        return v
    if isinstance(v, dict):
        out = None
        for k, x in v.items():
            nk = k if isinstance(k, str) else _key(k)
            if isinstance(nk, str):
                nk = fix_text(nk)
            nx = _fix(x, notes, depth + 1)
            if out is None and (nk is not k or nx is not x):
                out = {}
                for k2, x2 in v.items():
                    if k2 is k:
                        break
                    out[k2] = x2
                if nk is not k and notes is not None and not isinstance(k, str):
                    notes.append("a key that is not a string made one")
            if out is not None:
                out[nk] = nx
        return v if out is None else out
    if isinstance(v, (list, tuple)):
        out_l = None
        for i, x in enumerate(v):
            nx = _fix(x, notes, depth + 1)
            if out_l is None and (nx is not x or isinstance(v, tuple)):
                out_l = list(v[:i])
            if out_l is not None:
                out_l.append(nx)
        return v if out_l is None else out_l
    return fix_text(str(v))


def _key(k: Any) -> str:
    if k is None:
        return "null"
    if isinstance(k, bool):
        return "true" if k else "false"
    return str(k)


def dumps(value: Any, *, indent: int | None = None, sort_keys: bool = False) -> str:
    """Strict JSON text (no NaN, no lone surrogates) for any value; unknown objects are written as str().
    The usual value is written in one C pass (plus one to check the text encodes)."""
    try:
        text = json.dumps(value, ensure_ascii=False, indent=indent, sort_keys=sort_keys, allow_nan=False,
                          default=_default)
        text.encode("utf-8")
        return text
    except (ValueError, TypeError, RecursionError):
        pass
    # NaN or a lone surrogate somewhere, keys that do not sort together, or an odd object: repair a copy
    safe = _fix(json.loads(json.dumps(value, default=_default, allow_nan=True)), None, 0)
    return json.dumps(safe, ensure_ascii=False, indent=indent, allow_nan=False)


def _default(o: Any) -> str:
    return fix_text(str(o))


# ------------------------------------------------------------------ files
def _check_target(path: Path) -> os.stat_result | None:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(st.st_mode):
        raise UnsafePath(f"{path}: refusing to write through a symbolic link")
    if not stat.S_ISREG(st.st_mode):
        raise UnsafePath(f"{path}: refusing to replace something that is not a regular file")
    return st


def new_file_mode(path: str | os.PathLike) -> int | None:
    """For ``atomic_path``'s ``mode``: the mode an ordinary new file gets here (0666 less the umask), not
    mkstemp's private 0600; None when ``path`` exists (its own mode is kept)."""
    if os.path.lexists(path):
        return None
    umask = os.umask(0o022)
    os.umask(umask)
    return 0o666 & ~umask


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike, *, mode: int | None = None) -> Iterator[Path]:
    """A temporary file name beside ``path``; when the block ends without an error the file replaces
    ``path`` in one step (and is removed otherwise)."""
    path = Path(path)
    st = _check_target(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name[:60]}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        if mode is not None:
            os.chmod(tmp_path, mode)
        elif st is not None:
            os.chmod(tmp_path, stat.S_IMODE(st.st_mode))
        _check_target(path)               # still not a symlink (it may have been planted meanwhile)
        os.replace(tmp_path, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp_path)
        raise


def atomic_write(path: str | os.PathLike, data: bytes | str, *, mode: int | None = None,
                 exclusive: bool = False, sync: bool = False) -> Path:
    """Write ``data`` to ``path`` atomically (see the module docstring). ``exclusive``: fail with
    FileExistsError instead of replacing an existing entry (a file, a symlink, anything). ``sync``: flush
    the data to the disk before it takes the name (settings; not needed for a cache)."""
    path = Path(path)
    if isinstance(data, str):
        data = fix_text(data).encode("utf-8")
    if not exclusive:
        with atomic_path(path, mode=mode) as tmp_path:
            _write(tmp_path, data, sync)
        return path
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name[:60]}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        _write(Path(tmp), data, sync)
        if mode is not None:
            os.chmod(tmp, mode)
        os.link(tmp, path)       # fails if anything (even a dangling symlink) has the name
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
    return path


def _write(path: Path, data: bytes, sync: bool) -> None:
    with open(path, "wb") as f:
        f.write(data)
        if sync:
            f.flush()
            os.fsync(f.fileno())


def open_append(path: str | os.PathLike):
    """An unbuffered binary append handle that never follows a symlink and only opens a regular file."""
    path = Path(path)
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags, 0o600)
    except OSError as e:
        if os.path.islink(path):
            raise UnsafePath(f"{path}: refusing to write through a symbolic link") from None
        raise e
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise UnsafePath(f"{path}: not a regular file")
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "ab", buffering=0)
