"""``JSON.stringify(value).length`` without the JSON: the Gemini CLI sizes parts, contents and tool outputs by their
compact JSON in UTF-16 code units, and a compression asks it of the same long texts several times (a tool output's
response, its part, its content, its weight for the masking). ``js_len`` adds up the lengths of the pieces the
encoder would write (each string escaped by the encoder's own C function; a long one's length kept per string
object, within a budget of characters) and falls back to the encoder for anything it does not write the same way
(a key that is not a string, a type outside JSON's, a subclass)."""
from __future__ import annotations

import json
from json.encoder import encode_basestring  # (the encoder's escape of a string, ensure_ascii=False; in C)
from typing import Any

from ..runtime.forget import on_forget

_LONG = 256                     # strings from this length have their JSON length kept
_BUDGET = 1 << 25               # characters of the strings kept (then forgotten, all at once)
_KEPT: dict[int, tuple[str, int]] = {}      # id(string) -> (the string, its JSON length)
_kept_chars = 0


def _u16(s: str) -> int:
    if s.isascii():
        return len(s)
    # UTF-16 code units, counted in C; a lone surrogate is one unit, as in JavaScript
    return len(s.encode("utf-16-le", "surrogatepass")) // 2


def _str_len(s: str) -> int:
    global _kept_chars
    if len(s) < _LONG:
        return _u16(encode_basestring(s))
    e = _KEPT.get(id(s))
    if e is not None and e[0] is s:
        return e[1]
    n = _u16(encode_basestring(s))
    if _kept_chars + len(s) > _BUDGET:
        _KEPT.clear()
        _kept_chars = 0
    _KEPT[id(s)] = (s, n)
    _kept_chars += len(s)
    return n


class _Other(Exception):
    """A value the walk does not write as the encoder does: the encoder measures it."""


def _len(v: Any) -> int:
    t = type(v)
    if t is str:
        return _str_len(v)
    if t is dict:
        n = 1 + 2 * len(v) if v else 2      # the braces, a colon per entry, a comma between entries
        for k, x in v.items():
            if type(k) is not str:
                raise _Other
            n += _str_len(k) + _len(x)
        return n
    if t is list or t is tuple:
        n = 1 + len(v) if v else 2          # the brackets, a comma between items
        for x in v:
            n += _len(x)
        return n
    if v is None or v is True:
        return 4
    if v is False:
        return 5
    if t is int:
        return len(int.__repr__(v))
    if t is float:
        return len(json.dumps(v))           # (NaN, Infinity as the encoder writes them)
    raise _Other


def js_len(value: Any) -> int:
    """JSON.stringify(value).length: compact JSON, in UTF-16 code units (``json.dumps(value, ensure_ascii=False,
    separators=(",", ":"), default=str)``'s length in UTF-16)."""
    try:
        return _len(value)
    except (_Other, RecursionError):
        s = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
        return _u16(s)


def forget() -> None:
    global _kept_chars
    _KEPT.clear()
    _kept_chars = 0


on_forget(forget)            # (a fleet worker drops the last session's texts)
