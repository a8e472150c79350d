"""Parse Anthropic SDK object reprs back into content blocks, without eval.

The s08 transcripts were written with ``json.dumps(..., default=str)``, so an
assistant message's SDK blocks appear as strings such as
``ToolUseBlock(id='toolu_..', input={'cmd': 'ls'}, name='bash', type='tool_use')``
or a whole list ``[TextBlock(citations=None, text='...', type='text'), ...]``.
A small parser reads only literals (strings, numbers, None/True/False), lists,
tuples, sets, dicts and calls of a CamelCase name with keyword arguments; each
call becomes a plain dict. Nothing is ever executed.

It is linear in the text and holds only the values it builds: one compiled
expression finds the tokens, and a string is decoded on its own (Python's own
parser would build a tree of the whole text first: a 6 MB repr took 16 s and
2.9 GB).
"""
from __future__ import annotations

import codecs
import re

_REPR_START = re.compile(r"^\s*\[?\s*[A-Z][A-Za-z0-9_]*(Block|Param)?\(")
MAX_REPR_CHARS = 20 * 1024 * 1024


class ReprError(ValueError):
    pass


def looks_like_repr(s) -> bool:
    return isinstance(s, str) and bool(_REPR_START.match(s)) and "type=" in s


def _unknown_raw(block) -> bool:
    return isinstance(block, dict) and block.get("type") == "unknown" and looks_like_repr(block.get("raw"))


_TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<str>(?:[rRbBuU]|[rR][bB]|[bB][rR])?['"])
  | (?P<num>(?:\d[\d_]*\.?[\d_]*|\.\d[\d_]*)(?:[eE][-+]?\d+)?j?)
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<op>[\[\](){},:=+\-])
  | (?P<bad>.)
""", re.VERBOSE | re.DOTALL)


def _tokens(text: str):
    """(kind, text) for each token, one at a time. A string literal is found by its closing quote (the next quote not
    escaped by an odd run of backslashes), not by a regular expression: the regex engine keeps state per
    character of a repeated group, which for a 6 MB string is most of a gigabyte."""
    i, n = 0, len(text)
    match = _TOKEN.match
    while i < n:
        m = match(text, i)
        assert m is not None                 # (the last alternative, bad, takes any character)
        kind = m.lastgroup
        if kind == "str":
            quote = text[m.end() - 1]
            j = m.end()
            while True:
                k = text.find(quote, j)
                if k < 0:
                    raise ReprError("not a Python repr: a string is not closed")
                run = 0
                while text[k - 1 - run] == "\\":
                    run += 1
                if run % 2 == 0:
                    break
                j = k + 1
            yield "str", text[i:k + 1]
            i = k + 1
            continue
        if kind != "ws":
            yield kind, m.group()
        i = m.end()


_NAMES = {"None": None, "True": True, "False": False}
_NO = object()          # no item read yet
MAX_DEPTH = 200


class _Parser:
    def __init__(self, text: str):
        self._it = _tokens(text)
        self._next: tuple[str, str] | None = None

    def peek(self) -> tuple[str, str]:
        if self._next is None:
            self._next = next(self._it, ("end", ""))
        tok = self._next
        if tok[0] == "bad":
            raise ReprError(f"not a Python repr: {tok[1]!r} is not part of a literal")
        return tok

    def take(self, text: str | None = None) -> tuple[str, str]:
        tok = self.peek()
        if tok[0] == "end" or (text is not None and tok[1] != text):
            raise ReprError(f"not a Python repr: expected {text or 'a value'}, found {tok[1][:20]!r}")
        self._next = None
        return tok

    def items(self, close: str, depth: int, first=_NO, pair: bool = False) -> list:
        """The rest of a container's items up to ``close`` (``first``: the first item, already read)."""
        out = []
        if first is not _NO:
            out.append(first)
            if not self._sep(close):
                self.take(close)
                return out
        while self.peek()[1] != close:
            k = self.value(depth + 1)
            if pair:
                self.take(":")
                out.append((k, self.value(depth + 1)))
            else:
                out.append(k)
            if not self._sep(close):
                break
        self.take(close)
        return out

    def _sep(self, close: str) -> bool:
        """After an item: True when a comma follows (more may come), False at the closing bracket."""
        if self.peek()[1] == ",":
            self.take(",")
            return True
        if self.peek()[1] != close:
            raise ReprError(f"not a Python repr: expected ',' or {close!r}")
        return False

    def value(self, depth: int = 0):
        if depth > MAX_DEPTH:
            raise ReprError("nested too deeply")
        kind, text = self.take()
        if kind == "str":
            return _string(text)
        if kind == "num":
            return _number(text)
        if kind == "op":
            if text in "+-":
                nkind, ntext = self.take()
                if nkind != "num":
                    raise ReprError("a sign before something that is not a number")
                v = _number(ntext)
                return -v if text == "-" else v
            if text == "[":
                return self.items("]", depth)
            if text == "(":
                vals = self.items(")", depth)
                return vals
            if text == "{":
                if self.peek()[1] == "}":
                    self.take("}")
                    return {}
                first = self.value(depth + 1)
                if self.peek()[1] != ":":
                    return self.items("}", depth, first=first)
                self.take(":")
                pairs = self.items("}", depth, first=(first, self.value(depth + 1)), pair=True)
                out = {}
                for k, v in pairs:
                    if not isinstance(k, (str, int, float, bool)) and k is not None:
                        raise ReprError("dict key is not a literal")
                    out[k] = v
                return out
            raise ReprError(f"{text!r} is not allowed in an SDK repr")
        # a name: None/True/False, or a call of a CamelCase name with keyword arguments
        if self.peek()[1] != "(":
            if text in _NAMES:
                return _NAMES[text]
            raise ReprError(f"Name {text!r} is not allowed in an SDK repr")
        if not text[:1].isupper():
            raise ReprError(f"call of {text!r} is not an SDK object")
        self.take("(")
        out = {}
        while self.peek()[1] != ")":
            kind, arg = self.take()
            if kind != "name" or self.peek()[1] != "=":
                raise ReprError("only keyword arguments are allowed in an SDK repr")
            self.take("=")
            v = self.value(depth + 1)
            if v is not None:      # SDK reprs list unset fields (citations=None); the API JSON omits them
                out[arg] = v
            if self.peek()[1] == ",":
                self.take(",")
            elif self.peek()[1] != ")":
                raise ReprError("expected ',' or ')' in a call")
        self.take(")")
        if "type" not in out:
            out["_class"] = text
        return out


def _string(token: str):
    q = next(i for i, c in enumerate(token) if c in "'\"")          # after the prefix (r, b, u)
    prefix, body = token[:q].lower(), token[q + 1:-1]
    if "\\" not in body or "r" in prefix:
        value = body
    else:
        # the escapes decoded in C, in linear time (a character beyond Latin-1 is first written as its own
        # \\u escape so that the decoder, which reads Latin-1, gives it back unchanged)
        try:
            if "b" in prefix:
                value = codecs.escape_decode(body.encode("latin-1", "backslashreplace"))[0].decode("utf-8", "replace")
            else:
                value = body.encode("latin-1", "backslashreplace").decode("unicode_escape")
        except (UnicodeDecodeError, ValueError) as e:
            raise ReprError(f"not a Python string literal: {type(e).__name__}") from None
        return value
    if "b" in prefix:
        return value.encode("latin-1", "backslashreplace").decode("utf-8", "replace")
    return value


def _number(text: str):
    t = text.replace("_", "")
    if t.endswith(("j", "J")):
        raise ReprError("complex numbers are not allowed in an SDK repr")
    try:
        return float(t) if any(c in t for c in ".eE") else int(t)
    except ValueError:
        raise ReprError(f"not a number: {text[:20]!r}") from None


def parse_repr(text: str):
    """A repr string -> a dict (one block) or a list of dicts. ReprError when it is not a safe repr."""
    if len(text) > MAX_REPR_CHARS:
        raise ReprError("repr too long")
    try:
        p = _Parser(text.strip())
        value = p.value()
    except (RecursionError, MemoryError) as e:
        raise ReprError(f"not a Python repr: {type(e).__name__}") from None
    if p.peek()[0] != "end":
        raise ReprError("not a Python repr: more text after the value")
    return value


def content_from_repr(content):
    """Turn repr-string content into blocks. Returns (content, changed)."""
    if looks_like_repr(content):
        try:
            v = parse_repr(content)
        except ReprError:
            return content, False
        if isinstance(v, dict):
            return [v], True
        if isinstance(v, list) and all(isinstance(b, dict) for b in v):
            return v, True
        return content, False
    if isinstance(content, list) and any(looks_like_repr(b) or _unknown_raw(b) for b in content):
        out, changed = [], False
        for orig in content:
            b = orig
            if _unknown_raw(b):        # {"type": "unknown", "raw": "ThinkingBlock(...)"} (learn-claude-code traces)
                b = b["raw"]
            if looks_like_repr(b):
                try:
                    v = parse_repr(b)
                except ReprError:
                    v = None
                if isinstance(v, dict):
                    out.append(v)
                    changed = True
                    continue
                if isinstance(v, list) and all(isinstance(x, dict) for x in v):
                    out.extend(v)
                    changed = True
                    continue
            out.append(orig)
        return out, changed
    return content, False
