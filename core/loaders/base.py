"""What every loader shares: the error type, the probe, and line reading."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

try:
    import orjson

    def loads(data: bytes | str) -> Any:
        return orjson.loads(data)
    JSONDecodeError: tuple = (orjson.JSONDecodeError,)
except ImportError:  # pragma: no cover - orjson is a dependency
    import json

    def loads(data: bytes | str) -> Any:
        return json.loads(data)
    JSONDecodeError = (json.JSONDecodeError,)

PROBE_BYTES = 256 * 1024
_UNSET = object()
MAX_LINE_BYTES = 256 * 1024 * 1024      # one JSONL line larger than this is reported, not loaded
MAX_JSON_BYTES = 2 * 1024 * 1024 * 1024  # a whole-document JSON file larger than this is refused


class LoadError(Exception):
    """A file could not be loaded. Always names the file and, where known, the line."""

    def __init__(self, path: str, line: int, message: str):
        super().__init__(message)
        self.path, self.line, self.message = str(path), line, message

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        return f"{where}: {self.message}"


@dataclass
class Probe:
    """The first bytes of a file, read once and shared by every sniffer."""
    path: Path
    head: bytes
    size: int
    _first_lines: list | None = field(default=None, repr=False)
    _first_value: Any = field(default=None, repr=False)

    def __post_init__(self):
        self._first_value = _UNSET

    @property
    def text_head(self) -> str:
        return self.head.decode("utf-8", errors="replace")

    def first_json_lines(self, n: int = 20) -> list:
        """Up to n parsed complete lines from the head (unparseable lines are None)."""
        if self._first_lines is None:
            out = []
            lines = self.head.split(b"\n")
            if len(self.head) < self.size:
                lines = lines[:-1]   # last line may be cut off
            for raw in lines:
                raw = raw.strip()
                if not raw:
                    continue
                try:
                    out.append(loads(raw))
                except JSONDecodeError:
                    out.append(None)
                if len(out) >= max(n, 20):
                    break
            self._first_lines = out
        return self._first_lines[:n]

    def first_line_value(self, limit: int = 64 * 1024 * 1024):
        """The first non-blank line parsed as JSON, reading past the head when that line is longer than
        the probe (a JSONL file whose first record is huge). None when it is not one JSON value."""
        if self._first_value is not _UNSET:
            return self._first_value
        value = None
        h = self.head.lstrip(b"\xef\xbb\xbf \t\r\n")
        nl = h.find(b"\n")
        try:
            if nl >= 0 or len(self.head) >= self.size:
                value = loads(h[:nl] if nl >= 0 else h)
            else:
                with self.path.open("rb") as f:
                    raw = b""
                    while not raw.strip():
                        raw = f.readline(limit + 1)
                        if not raw:
                            break
                    if len(raw) <= limit:
                        value = loads(raw)
        except (OSError, MemoryError) + tuple(JSONDecodeError):
            value = None
        self._first_value = value
        return value

    def starts_with(self, *prefixes: bytes) -> bool:
        h = self.head.lstrip(b"\xef\xbb\xbf \t\r\n")
        return any(h.startswith(p) for p in prefixes)

    def describe_unknown(self) -> str:
        if self.starts_with(b"{", b"["):
            return ("this JSON is not a format Compactscope knows: expected a list of messages, a request body with "
                    "\"messages\", JSONL with one message per line, a Claude Code session, an Inspect log, or a "
                    "recording")
        return "not a conversation file Compactscope can read (no JSON, JSONL, SQLite or zip content found)"


def read_probe(path: str | Path) -> Probe:
    p = Path(path)
    if not p.exists():
        raise LoadError(str(p), 0, "no such file")
    if p.is_dir():
        raise LoadError(str(p), 0, "this is a folder, not a file: open a transcript file inside it")
    try:
        size = p.stat().st_size
        with p.open("rb") as f:
            head = f.read(PROBE_BYTES)
    except PermissionError:
        raise LoadError(str(p), 0, "permission denied: the file cannot be read") from None
    except OSError as e:
        raise LoadError(str(p), 0, f"cannot read the file: {e.strerror or e}") from None
    if size == 0 or not head.strip():
        raise LoadError(str(p), 0, "the file is empty")
    probe = Probe(p, head, size)
    is_zip = head.startswith(b"PK\x03\x04")
    is_sqlite = head.startswith(b"SQLite format 3\x00")
    if not (is_zip or is_sqlite) and b"\x00" in head[:8192]:
        raise LoadError(str(p), 0, "this is a binary file, not a JSON or JSONL transcript")
    return probe


def iter_lines(path: Path, max_line: int = MAX_LINE_BYTES) -> Iterator[tuple[int, bytes | None]]:
    """Yield (1-based line number, raw bytes) for each non-blank line.

    A line longer than ``max_line`` is yielded as (n, None) without holding it in
    memory, so one huge line can be reported instead of exhausting memory.
    """
    with path.open("rb", buffering=1 << 20) as f:
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


def read_json_document(path: Path) -> Any:
    """Parse a whole file as one JSON value; LoadError with line and column."""
    size = path.stat().st_size
    if size > MAX_JSON_BYTES:
        raise LoadError(str(path), 0, f"the file is {size:,} bytes, over the {MAX_JSON_BYTES:,}-byte limit for one "
                                      "JSON document")
    data = path.read_bytes()
    try:
        return loads(data)
    except JSONDecodeError as e:
        pos = getattr(e, "pos", None)
        if pos is None:
            import re
            m = re.search(r"char (\d+)", str(e))
            pos = int(m.group(1)) if m else 0
        line = data.count(b"\n", 0, pos) + 1
        col = pos - (data.rfind(b"\n", 0, pos) + 1) + 1
        msg = str(e).split(":")[0]
        raise LoadError(str(path), line, f"broken JSON at column {col}: {msg}") from None


def path_str(p: Path) -> str:
    return os.fspath(p)


_TS_CACHE: dict = {}


def parse_timestamp(value: Any) -> float | None:
    """Seconds since the epoch from an ISO-8601 string ("...Z" allowed) or a number (s or ms); None if unreadable."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        v = float(value)
        return v / 1000.0 if v > 1e11 else v
    if not isinstance(value, str) or not value:
        return None
    # fast path for the usual "2026-01-20T15:07:58.839Z": the minute is parsed once and cached
    if len(value) == 24 and value[23] == "Z" and value[10] == "T" and value[16] == ":":
        base = _TS_CACHE.get(value[:16])
        if base is None:
            base = parse_timestamp(value[:16] + ":00+00:00")
            if base is not None and len(_TS_CACHE) < 100000:
                _TS_CACHE[value[:16]] = base
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


def recover_records(raw: bytes | str, accept=None) -> list:
    """Parse a broken JSONL line that holds several records joined together
    (e.g. ``{...}{...}`` with the newline lost, or a truncated record followed by
    a whole one). Returns the JSON objects found, in order, that ``accept``
    approves (default: any dict). Never raises."""
    import json as _json
    text = raw.decode("utf-8", errors="replace") if isinstance(raw, (bytes, bytearray)) else str(raw)
    accept = accept or (lambda o: isinstance(o, dict))
    dec = _json.JSONDecoder()
    out: list = []
    i, n = 0, len(text)
    while i < n:
        while i < n and text[i] in " \t\r\n":
            i += 1
        if i >= n:
            break
        try:
            obj, end = dec.raw_decode(text, i)
        except (ValueError, RecursionError):
            obj, end = None, -1
        if end > i and accept(obj):
            out.append(obj)
            i = end
            continue
        j = text.find('{"', i + 1)   # resynchronise at the next object start
        if j < 0:
            break
        i = j
    return out


_TOKEN = None


def array_element_lines(data: bytes | str, pattern: tuple) -> dict:
    """1-based line numbers where each element of the arrays at ``pattern`` starts, in a JSON document.

    ``pattern`` is a path of object keys, with "*" for any array index, e.g. ("messages",) or
    ("samples", "*", "messages"). Returns {concrete path: [line of element 0, line of element 1, ...]}.
    A quick scan with a regex over strings and punctuation; on anything it does not understand it
    returns what it found so far (provenance is a help, never a reason to fail).
    """
    import bisect
    import re
    global _TOKEN
    if _TOKEN is None:
        _TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{},:]')
    text = data.decode("utf-8", errors="replace") if isinstance(data, (bytes, bytearray)) else data
    newlines = [m.start() for m in re.finditer("\n", text)]
    out: dict = {}
    # stack entries: [kind, key or index, expecting_value]; path = keys/indices of enclosing containers
    stack: list = []
    path: list = []
    depth_pattern = len(pattern)

    def matches(p) -> bool:
        return len(p) == depth_pattern and all(a == "*" or a == b for a, b in zip(pattern, p))

    def line_of(pos: int) -> int:
        return bisect.bisect_right(newlines, pos - 1) + 1

    pending_key = None
    expect_elem = False
    try:
        for m in _TOKEN.finditer(text):
            tok = m.group()
            c = tok[0]
            top = stack[-1] if stack else None
            if top is not None and top[0] == "a" and expect_elem and c not in "]":
                # a new element of the array on top starts here
                if matches(path):
                    out.setdefault(tuple(path), []).append(line_of(m.start()))
                expect_elem = False
            if c == '"':
                if top is not None and top[0] == "o" and top[2] == "key":
                    pending_key = tok[1:-1]
                continue
            if c == ":":
                if top is not None and top[0] == "o":
                    top[2] = "value"
                continue
            if c == ",":
                if top is not None and top[0] == "o":
                    top[2] = "key"
                elif top is not None and top[0] == "a":
                    top[1] += 1
                    expect_elem = True
                continue
            if c in "{[":
                if top is not None:
                    path.append(pending_key if top[0] == "o" else top[1])
                stack.append(["o", None, "key"] if c == "{" else ["a", 0, None])
                if c == "[":
                    expect_elem = True
                continue
            if c in "}]":
                stack.pop()
                if stack:
                    path.pop()
                expect_elem = False
    except (IndexError, TypeError):
        pass
    return out


MAX_LINE_SCAN_BYTES = 64 * 1024 * 1024


def document_lines(path: Path, pattern: tuple) -> dict:
    """``array_element_lines`` for a file, or {} when it is too large to scan cheaply."""
    try:
        if path.stat().st_size > MAX_LINE_SCAN_BYTES:
            return {}
        return array_element_lines(path.read_bytes(), pattern)
    except (OSError, MemoryError, RecursionError):
        return {}
