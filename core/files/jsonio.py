"""JSON in and out, shared by every reader and writer of files (loaders, recordings): the fast
``loads`` and its error types, the lenient reading every loader shares (``loads_lenient``: what only a
lenient parser takes made valid and reported; ``loads_deep``: any nesting without recursion), the
fields of a record checked for their types (``drop_mistyped``), opening only regular files
(``open_regular``), a field of an expected type (``dict_at``, ``list_at``), reading a file line by line without holding a huge line, and timestamps. Neutral
ground: it imports nothing else of Compactscope but ``safeio`` (a leaf)."""
from __future__ import annotations

import errno
import json
import math
import os
import stat
from pathlib import Path
from typing import Any, Iterator

try:
    import orjson

    loads = orjson.loads          # the C function itself: hot loops (100 MB sessions) call it once a line
    JSONDecodeError: tuple = (orjson.JSONDecodeError,)
except ImportError:  # pragma: no cover - orjson is a dependency
    import json

    loads = json.loads  # type: ignore[assignment]  # (the fallback takes the same one argument)
    JSONDecodeError = (json.JSONDecodeError,)

MAX_LINE_BYTES = 256 * 1024 * 1024      # one JSONL line larger than this is reported, not loaded
LINE_TOO_LONG = (f"line is too long to load (over {MAX_LINE_BYTES >> 20} MB, the limit for one line): skipped, "
                 "the other lines load")


class NotAFile(OSError):
    """``open_regular`` refused: the path is not a regular file (the message says what it is)."""

    def __init__(self, message: str):
        super().__init__(errno.EINVAL, message)
        self.message = message


def dict_at(record: dict, key: str) -> dict:
    """``record[key]`` when it is an object, else an empty one (a field of a record of unknown shape)."""
    value = record.get(key)
    return value if isinstance(value, dict) else {}


def list_at(record: dict, key: str) -> list:
    """``record[key]`` when it is a list, else an empty one."""
    value = record.get(key)
    return value if isinstance(value, list) else []


def _describe_kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def open_regular(path: str | os.PathLike, buffering: int = -1):
    """Open ``path`` for reading in binary, only when it is a regular file (a symlink to one is fine).

    A FIFO, a device (/dev/zero), a socket or a folder is refused at once (NotAFile, saying what it is):
    opening a FIFO would wait for a writer forever, and /dev/zero never ends. The file is opened without
    blocking and checked on the open descriptor, so it cannot be swapped in between. Other failures are
    the OSError of ``os.open``."""
    p = os.fspath(path)
    try:
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except IsADirectoryError:
        raise NotAFile("this is a folder, not a file: open a transcript file inside it") from None
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise NotAFile("this is a folder, not a file: open a transcript file inside it")
        if not stat.S_ISREG(mode):
            raise NotAFile(f"this is {_describe_kind(mode)}, not a file: Compactscope only reads regular files")
        if hasattr(os, "O_NONBLOCK"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb", buffering=buffering)
    except BaseException:
        os.close(fd)
        raise


def iter_lines(path: Path, max_line: int = MAX_LINE_BYTES) -> Iterator[tuple[int, bytes | None]]:
    """Yield (1-based line number, raw bytes) for each non-blank line.

    A line longer than ``max_line`` is yielded as (n, None) without holding it in
    memory, so one huge line can be reported instead of exhausting memory.
    """
    with open_regular(path, buffering=1 << 20) as f:
        n = 0
        readline = f.readline
        limit = max_line + 1
        while True:
            raw = readline(limit)
            if not raw:
                return
            n += 1
            if len(raw) > max_line and not raw.endswith(b"\n"):
                while True:   # skip to the end of this line
                    chunk = f.readline(1 << 20)
                    if not chunk or chunk.endswith(b"\n"):
                        break
                yield n, None
                continue
            if raw.strip():
                yield n, raw


_TS_CACHE: dict = {}        # "2026-01-20T15" -> its seconds since the epoch
_TS_MINUTES: dict = {}      # "2026-01-20T15:07" -> its seconds since the epoch


def parse_timestamp(value: Any) -> float | None:
    """Seconds since the epoch from an ISO-8601 string ("...Z" allowed) or a number (s or ms); None if unreadable."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        v = float(value)
        return v / 1000.0 if v > 1e11 else v
    if not isinstance(value, str) or not value:
        return None
    # fast path for the usual "2026-01-20T15:07:58.839Z": the hour is parsed once and cached, the minute added
    # and cached too, the seconds added (the same float as parsing the minute: hour + 60 x minute is an exact
    # integer either way; a load reads one per line)
    if len(value) == 24 and value[23] == "Z" and value[10] == "T" and value[16] == ":" and value[13] == ":":
        base = _TS_MINUTES.get(value[:16])
        if base is None:
            hour = _TS_CACHE.get(value[:13])
            if hour is None:
                hour = parse_timestamp(value[:13] + ":00:00+00:00")
                if hour is not None and len(_TS_CACHE) < 100000:
                    _TS_CACHE[value[:13]] = hour
            minute = value[14:16]
            if hour is not None and minute.isdigit() and minute.isascii() and int(minute) < 60:
                base = hour + int(minute) * 60
                if len(_TS_MINUTES) < 100000:
                    _TS_MINUTES[value[:16]] = base
        if base is not None:
            try:
                return base + float(value[17:23])
            except ValueError:
                pass
    from datetime import datetime, timezone
    try:
        dt = datetime.fromisoformat(value)   # Python 3.11+ reads "...Z" itself
        if dt.tzinfo is not None:
            return dt.timestamp()
    except ValueError:
        pass
    s = value.strip()
    if s.endswith("Z") or s.endswith("z"):
        s = s[:-1] + "+00:00"
    try:
        dt = datetime.fromisoformat(s)
    except ValueError:
        try:
            dt = datetime.fromisoformat(s.replace(" ", "T", 1))
        except ValueError:
            return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return dt.timestamp()


# ------------------------------------------------------------------ lenient reading (every loader)
def lenient_number_hooks(notes: list) -> dict:
    """``parse_constant``/``parse_float`` for the standard library's parser: NaN and Infinity, and numbers
    beyond a double such as 1e400, are made null and said in ``notes``."""
    def constant(name: str):
        notes.append(f"{name} is not a JSON number: made null")
        return None

    def number(text: str):
        v = float(text)
        if not math.isfinite(v):
            notes.append(f"the number {text[:40]} does not fit a double: made null")
            return None
        return v
    return {"parse_constant": constant, "parse_float": number}


def _std_loads(text: str, notes: list) -> Any:
    """The standard library's parser, which takes what orjson refuses: NaN and Infinity (made null),
    numbers beyond a double such as 1e400 (made null), integers of any size, lone surrogates."""
    return json.loads(text, **lenient_number_hooks(notes))


_WS_RE = None
_NUM_RE = None
_SKIP_RE = None
_CONSTANTS = {"true": True, "false": False, "null": None, "NaN": math.nan, "Infinity": math.inf,
              "-Infinity": -math.inf}


def loads_deep(text: str, max_depth: int = 254, notes: list | None = None) -> Any:
    """One JSON value parsed without recursion, however deeply it nests: a container deeper than
    ``max_depth`` levels is skipped (in linear time) and replaced by ``safeio.DEEP_PLACEHOLDER``.
    NaN/Infinity are read (and left for ``safeio.json_safe``). ValueError when the text is not JSON."""
    import re
    from json.decoder import scanstring  # type: ignore[attr-defined]  # in the module, not in its stubs
    global _WS_RE, _NUM_RE, _SKIP_RE
    if _WS_RE is None:
        _WS_RE = re.compile(r"[ \t\n\r]*")
        _NUM_RE = re.compile(r"-?(?:0|[1-9]\d*)(\.\d+)?([eE][-+]?\d+)?")
        _SKIP_RE = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')
    from .safeio import DEEP_PLACEHOLDER
    ws_at = _WS_RE.match

    def ws(s: str, i: int) -> int:
        """Where the whitespace at i ends (the pattern also matches none)."""
        m = ws_at(s, i)
        return i if m is None else m.end()
    n = len(text)
    stack: list = []                  # [container, key] (key None for a list)
    v: Any = None

    def key_at(i: int) -> tuple[str, int]:
        if i >= n or text[i] != '"':
            raise ValueError(f"expected a key string at char {i}")
        k, i = scanstring(text, i + 1, True)
        i = ws(text, i)
        if i >= n or text[i] != ":":
            raise ValueError(f"expected ':' at char {i}")
        return k, ws(text, i + 1)

    def skip(i: int) -> int:
        depth = 0
        for m in _SKIP_RE.finditer(text, i):
            t = m.group()
            if t in "[{":
                depth += 1
            elif t in "]}":
                depth -= 1
                if depth == 0:
                    return m.end()
        raise ValueError("unbalanced brackets")

    i = ws(text, 0)
    while True:
        if i >= n:
            raise ValueError("unexpected end of the text")
        c = text[i]
        if c == "{" or c == "[":
            if len(stack) >= max_depth:
                v, i = DEEP_PLACEHOLDER, skip(i)
                if notes is not None:
                    notes.append(f"nested deeper than {max_depth} levels: the deeper part is cut")
            else:
                j = ws(text, i + 1)
                if j < n and text[j] == ("}" if c == "{" else "]"):
                    v, i = ({} if c == "{" else []), j + 1
                elif c == "{":
                    k, i = key_at(j)
                    stack.append([{}, k])
                    continue
                else:
                    stack.append([[], None])
                    i = j
                    continue
        elif c == '"':
            v, i = scanstring(text, i + 1, True)
        else:
            m = _NUM_RE.match(text, i)
            if m is not None and m.end() > i and not text.startswith("-Infinity", i):
                v = float(m.group()) if (m.group(1) or m.group(2)) else int(m.group())
                i = m.end()
            else:
                for word, value in _CONSTANTS.items():
                    if text.startswith(word, i):
                        v, i = value, i + len(word)
                        break
                else:
                    raise ValueError(f"unexpected character at char {i}")
        while True:                    # attach v, then a separator or the end of its container
            if not stack:
                if ws(text, i) != n:
                    raise ValueError(f"extra data at char {i}")
                return v
            top = stack[-1]
            cont = top[0]
            if top[1] is None:
                cont.append(v)
            else:
                cont[top[1]] = v
            i = ws(text, i)
            if i >= n:
                raise ValueError("unexpected end of the text")
            ch = text[i]
            if ch == ",":
                i = ws(text, i + 1)
                if top[1] is not None:
                    top[1], i = key_at(i)
                break
            if ch == ("]" if top[1] is None else "}"):
                i += 1
                stack.pop()
                v = cont
                continue
            raise ValueError(f"expected ',' or the end of a container at char {i}")


def loads_lenient(raw: bytes | str, notes: list | None = None) -> Any:
    """One JSON value, read the way every loader reads: orjson (fast, strict) first; what only a lenient
    parser takes is then read with the standard library and made valid, each change described in
    ``notes``: NaN/Infinity and 1e400 become null, integers beyond 64 bits become floats, lone UTF-16
    surrogates (a cut emoji, ``"\\ud83d"``) and invalid UTF-8 become U+FFFD, nesting deeper than any
    reader takes is cut (``loads_deep``). Raises the orjson error when the text is not JSON at all."""
    try:
        return loads(raw)
    except JSONDecodeError as first:
        err = first
    found: list = []
    try:
        if isinstance(raw, (bytes, bytearray, memoryview)):
            raw = bytes(raw)
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                text = raw.decode("utf-8", errors="replace")
                found.append("invalid UTF-8 replaced by U+FFFD")
        else:
            text = raw
        if text.startswith("\ufeff"):
            text = text[1:]
        try:
            value = _std_loads(text, found)
        except RecursionError:          # nested deeper than Python recurses: read without recursion, cut
            value = loads_deep(text, notes=found)
    except (ValueError, RecursionError, MemoryError):
        raise err from None
    from .safeio import json_safe
    value = json_safe(value, found)
    if notes is not None:
        notes.extend(dict.fromkeys(found))      # each kind once, in order
    return value


def wrong_type(value: Any) -> str:
    """What a value is, in words, for a problem report ("a list", "an object", ...)."""
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", int: "a number",
            float: "a number", type(None): "null"}.get(type(value), type(value).__name__)


def drop_mistyped(record: dict, spec: dict, prefix: str = "") -> list[str]:
    """Remove from ``record`` (a freshly parsed record the loader owns) each field whose value is not of
    the type ``spec`` names (``{field: tuple of types}``, or ``{field: nested spec}`` for an object
    field); returns what was removed, in words. The rest of the record loads: one odd field (a
    ``model`` that is an object, a ``uuid`` that is a list) costs that field, never the file."""
    out = []
    for name, want in spec.items():
        if name not in record:
            continue
        v = record[name]
        if isinstance(want, dict):
            if isinstance(v, dict):
                out += drop_mistyped(v, want, f"{prefix}{name}.")
            continue
        if v is None or (isinstance(v, want) and not (isinstance(v, bool) and bool not in want)):
            continue
        del record[name]
        out.append(f"{prefix}{name} is {wrong_type(v)}, not {' or '.join(_TYPE_WORDS.get(t, t.__name__) for t in want)}"
                   ": ignored")
    return out


_TYPE_WORDS = {str: "a string", int: "a number", float: "a number", dict: "an object", list: "a list",
               bool: "a boolean"}
