"""Parse Anthropic SDK object reprs back into content blocks, without eval.

The s08 transcripts were written with ``json.dumps(..., default=str)``, so an
assistant message's SDK blocks appear as strings such as
``ToolUseBlock(id='toolu_..', input={'cmd': 'ls'}, name='bash', type='tool_use')``
or a whole list ``[TextBlock(citations=None, text='...', type='text'), ...]``.
``ast.parse`` reads the text as an expression tree; only literals, lists,
tuples, dicts and calls of a CamelCase name with keyword arguments are
accepted, and each call becomes a plain dict. Nothing is ever executed.
"""
from __future__ import annotations

import ast
import re

_REPR_START = re.compile(r"^\s*\[?\s*[A-Z][A-Za-z0-9_]*(Block|Param)?\(")
MAX_REPR_CHARS = 20 * 1024 * 1024


class ReprError(ValueError):
    pass


def looks_like_repr(s) -> bool:
    return isinstance(s, str) and bool(_REPR_START.match(s)) and "type=" in s


def _unknown_raw(block) -> bool:
    return isinstance(block, dict) and block.get("type") == "unknown" and looks_like_repr(block.get("raw"))


def _convert(node, depth: int = 0):
    if depth > 200:
        raise ReprError("nested too deeply")
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_convert(e, depth + 1) for e in node.elts]
    if isinstance(node, ast.Set):
        return [_convert(e, depth + 1) for e in node.elts]
    if isinstance(node, ast.Dict):
        out = {}
        for k, v in zip(node.keys, node.values):
            if k is None:
                raise ReprError("dict unpacking is not a literal")
            key = _convert(k, depth + 1)
            if not isinstance(key, (str, int, float, bool)) and key is not None:
                raise ReprError("dict key is not a literal")
            out[key] = _convert(v, depth + 1)
        return out
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)) \
            and isinstance(node.operand, ast.Constant) and isinstance(node.operand.value, (int, float)):
        v = node.operand.value
        return -v if isinstance(node.op, ast.USub) else v
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.args:
        name = node.func.id
        if not name[:1].isupper():
            raise ReprError(f"call of {name!r} is not an SDK object")
        out = {}
        for kw in node.keywords:
            if kw.arg is None:
                raise ReprError("**kwargs in a repr")
            v = _convert(kw.value, depth + 1)
            if v is not None:      # SDK reprs list unset fields (citations=None); the API JSON omits them
                out[kw.arg] = v
        if "type" not in out:
            out["_class"] = name
        return out
    if isinstance(node, ast.Name) and node.id in ("None", "True", "False"):
        return {"None": None, "True": True, "False": False}[node.id]
    raise ReprError(f"{type(node).__name__} is not allowed in an SDK repr")


def parse_repr(text: str):
    """A repr string -> a dict (one block) or a list of dicts. ReprError when it is not a safe repr."""
    if len(text) > MAX_REPR_CHARS:
        raise ReprError("repr too long")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as e:
        raise ReprError(f"not a Python repr: {type(e).__name__}") from None
    try:
        value = _convert(tree.body)
    except RecursionError:
        raise ReprError("nested too deeply") from None
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
