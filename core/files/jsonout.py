"""JSON written as it is produced: a trace of 100k messages is never one string in memory.

``write_json(value, write)`` walks the outer containers (to ``depth`` levels) itself and writes each
inner value as soon as it is encoded (orjson when it can, else ``safeio.dumps``: lone surrogates
become U+FFFD, NaN and infinities null, huge integers floats, unknown objects their ``str``). A
generator or any other iterable that is not a str, bytes or dict is written as a list, one item
at a time, so a caller can hand over items it makes on the fly. The document is strict JSON that
``json.loads`` reads back; the outer levels are indented, the inner values compact.
"""
from __future__ import annotations

from itertools import islice
from typing import Any, Callable

from .safeio import dumps

try:
    import orjson
except ImportError:  # pragma: no cover - orjson is a dependency
    orjson = None  # type: ignore[assignment]  # (checked before use)

_CHUNK = 1 << 16


def encode(value: Any) -> str:
    """One value as compact strict JSON."""
    if orjson is not None:
        try:
            return orjson.dumps(value).decode("utf-8")
        except (TypeError, orjson.JSONEncodeError):
            pass                     # lone surrogates, integers beyond 64 bits, non-str keys, other objects
    return dumps(value)


def _key(k: Any) -> str:
    """A key as JSON writes one: always a string (True -> "true", None -> "null", 1 -> "1")."""
    if not isinstance(k, str):
        k = "true" if k is True else "false" if k is False else "null" if k is None else str(k)
    return encode(k)


class _Buffered:
    """Collects small pieces and hands them to ``write`` in chunks of about 64 kB."""

    def __init__(self, write: Callable[[str], Any]):
        self.write, self.n = write, 0
        self.parts: list[str] = []

    def __call__(self, s: str) -> None:
        self.parts.append(s)
        self.n += len(s)
        if self.n >= _CHUNK:
            self.flush()

    def flush(self) -> None:
        if self.parts:
            self.write("".join(self.parts))
            self.parts, self.n = [], 0


def write_json(value: Any, write: Callable[[str], Any], *, indent: int = 1, depth: int = 4) -> None:
    """Write ``value`` as one JSON document through ``write`` (e.g. ``sys.stdout.write``), the outer
    ``depth`` levels of containers streamed item by item."""
    out = _Buffered(write)
    _write(value, out, indent, depth, 0)
    out.flush()


def _streamable(v: Any) -> bool:
    return not isinstance(v, (str, bytes, bytearray, dict, int, float, bool)) and v is not None and \
        hasattr(v, "__iter__")


def _leaf(v: Any) -> str:
    """A value below the streamed levels, encoded whole."""
    if _streamable(v):
        v = list(v)
    return encode(v)


def _write_leaves(v: Any, out: _Buffered, pad: str, close: str) -> None:
    """A list on the last streamed level (its items are leaves: a step's messages), in a tight loop: the items
    encoded in runs of 64 and handed over joined, not through one call of ``_write`` and ``out`` each (a run of 256
    messages held ~3 MB at once: 0.14x of a 20 MB file)."""
    it = iter(v)
    sep = "," + pad
    run = list(islice(it, 64))
    if not run:
        out("[]")
        return
    out("[" + pad)
    while run:
        out(sep.join(map(_leaf, run)))
        run = list(islice(it, 64))
        if run:
            out(sep)
    out(close)


def _write(v: Any, out: _Buffered, indent: int, depth: int, level: int) -> None:
    if level >= depth or not (isinstance(v, dict) or _streamable(v)):
        out(_leaf(v))
        return
    pad = "\n" + " " * (indent * (level + 1))
    if level == depth - 1 and not isinstance(v, dict):
        _write_leaves(v, out, pad, "\n" + " " * (indent * level) + "]")
        return
    if isinstance(v, dict):
        if not v:
            out("{}")
            return
        out("{")
        first = True
        for k, x in v.items():
            out(pad if first else "," + pad)
            first = False
            out(_key(k))
            out(": ")
            _write(x, out, indent, depth, level + 1)
        out("\n" + " " * (indent * level) + "}")
        return
    first = True
    for x in v:
        out(("[" if first else ",") + pad)
        first = False
        _write(x, out, indent, depth, level + 1)
    out("[]" if first else "\n" + " " * (indent * level) + "]")
