"""JSON in and out, shared by every reader and writer of files (loaders, recordings): the fast
``loads`` and its error types, reading a file line by line without holding a huge line, and
timestamps. Neutral ground: it imports nothing else of Compactscope."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

try:
    import orjson

    loads = orjson.loads          # the C function itself: hot loops (100 MB sessions) call it once a line
    JSONDecodeError: tuple = (orjson.JSONDecodeError,)
except ImportError:  # pragma: no cover - orjson is a dependency
    import json

    loads = json.loads
    JSONDecodeError = (json.JSONDecodeError,)

MAX_LINE_BYTES = 256 * 1024 * 1024      # one JSONL line larger than this is reported, not loaded


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
