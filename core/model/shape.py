"""The shape every layer may rely on in a loaded conversation, and how a message is given it.

A file may hold odd values (a block ``type`` that is a list, a tool id that is an object, ``text`` that is
a number). Rather than every layer of every strategy (and every view) defending every ``.get``, the
load's one normalisation step (``loaders.base.normalise_result``) gives each message this shape,
reports what it changed, and keeps it in the message's meta so the checker still says the API would
reject the list as the file holds it.

The shape (both dialects, since a list may mix them):

* a message is an object; ``role`` and, when present, ``name`` and ``tool_call_id`` are strings (or
  null); ``content`` is absent, null, a string, a list of objects, or an object (Hermes keeps a
  multimodal tool result as ``{"_multimodal": true, ...}``);
* a block has a string ``type`` (when it has one) and the fields of its type have their API types:
  ``text``/``thinking``/``signature`` strings, ``tool_use`` ``id``/``name`` strings and ``input`` an
  object, ``tool_result`` ``tool_use_id`` a string, ``content`` a string or a list of such blocks,
  ``is_error`` a boolean, an ``image``/``document`` ``source`` an object;
* ``tool_calls`` is null or a list of objects with a string ``id`` and ``type`` (when present) and a
  ``function`` object whose ``name`` and ``arguments`` are strings (when present).

What a fix does: a value of the wrong type becomes its JSON text (a list ``["t1"]`` as an id becomes
the string ``'["t1"]'``); a non-object block becomes a text block holding its JSON text; a tool call that
is not an object is left out. Nothing else changes. (Values no reader could write back, over-deep
nesting and lone surrogates, are made valid just before: ``safeio.json_safe``.)

The hermes strategy reproduces hermes-agent on odd lists too (int content, raw string parts, calls
without ids): this shape only fixes what the loaders' files cannot mean, and the engine passes any
list a caller gives it to the layers as it is.
"""
from __future__ import annotations

import json
from typing import Any

from ..files.safeio import dumps, json_safe

_STR, _BOOL, _DICT = (str,), (bool,), (dict,)
_MESSAGE_FIELDS = {"role": _STR, "name": _STR, "tool_call_id": _STR}
_BLOCK_FIELDS: dict[str, dict] = {
    "text": {"text": _STR},
    "thinking": {"thinking": _STR, "signature": _STR},
    "redacted_thinking": {"data": _STR},
    "tool_use": {"id": _STR, "name": _STR, "input": _DICT},
    "server_tool_use": {"id": _STR, "name": _STR, "input": _DICT},
    "tool_result": {"tool_use_id": _STR, "is_error": _BOOL},
    "image": {"source": _DICT},
    "document": {"source": _DICT},
    "image_url": {},
}
_CALL_FIELDS = {"id": _STR, "type": _STR}
_NULL_OK = {"name", "tool_call_id", "role", "signature"}   # null = not given
_FUNCTION_FIELDS = {"name": _STR, "arguments": _STR}



def _text(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (ValueError, RecursionError):     # nested too deeply to write: cut first (safeio.json_safe)
        return dumps(json_safe(value))


def _fields(d: dict, spec: dict, where: str, notes: list) -> dict:
    out = None
    for name, types in spec.items():
        if name not in d:
            continue
        v = d[name]
        if v is None and (types is _BOOL or name in _NULL_OK):
            continue
        if isinstance(v, types) and not (isinstance(v, bool) and types is not _BOOL):
            continue
        if out is None:
            out = dict(d)
        if types is _DICT:
            out[name] = {"_value": v}
            notes.append(f"{where}{name} is not an object: wrapped as {{\"_value\": ...}}")
        elif types is _BOOL:
            out[name] = bool(v)
            notes.append(f"{where}{name} is not true or false: made {bool(v)}")
        else:
            out[name] = _text(v)
            notes.append(f"{where}{name} is {_kind(v)}, not a string: made its JSON text")
    return d if out is None else out


def _kind(v: Any) -> str:
    return {dict: "an object", list: "a list", bool: "a boolean", int: "a number", float: "a number",
            type(None): "null"}.get(type(v), type(v).__name__)


def _block(b: Any, where: str, notes: list, depth: int = 0) -> Any:
    if not isinstance(b, dict):
        notes.append(f"{where}is {_kind(b) if not isinstance(b, str) else 'a bare string'}, not a block: made a "
                     "text block")
        return {"type": "text", "text": b if isinstance(b, str) else _text(b)}
    t = b.get("type")
    if "type" in b and not isinstance(t, str):
        b = dict(b)
        notes.append(f"{where}type is {_kind(t)}, not a string: made its JSON text")
        b["type"] = t = _text(t)
    spec = _BLOCK_FIELDS.get(t) if isinstance(t, str) else None
    if spec:
        b = _fields(b, spec, where, notes)
    if t == "tool_result" and "content" in b:
        c = b["content"]
        if c is not None and not isinstance(c, (str, list)):
            b = {**b, "content": _text(c)}
            notes.append(f"{where}content is {_kind(c)}, not a string or list: made its JSON text")
        elif isinstance(c, list) and depth < 2:
            new = _blocks(c, f"{where}content ", notes, depth + 1)
            if new is not c:
                b = {**b, "content": new}
    if t == "image_url" and isinstance(b.get("image_url"), dict):
        iu = _fields(b["image_url"], {"url": _STR}, f"{where}image_url.", notes)
        if iu is not b["image_url"]:
            b = {**b, "image_url": iu}
    return b


def _shared_map(items: list, fix) -> list:
    """``[fix(i, x) for x in items]`` without ``_MISSING`` results, sharing the list itself when ``fix`` returned
    every item unchanged (and the unchanged items always): a well-shaped file costs no copy."""
    out = None
    for i, x in enumerate(items):
        nx = fix(i, x)
        if nx is not x and out is None:
            out = list(items[:i])
        if out is not None and nx is not _MISSING:
            out.append(nx)
    return items if out is None else out


def _blocks(content: list, where: str, notes: list, depth: int = 0) -> list:
    return _shared_map(content, lambda i, b: _block(b, f"{where}block {i}: ", notes, depth))


def _calls(calls: Any, notes: list) -> Any:
    if calls is None:
        return None
    if not isinstance(calls, list):
        notes.append(f"tool_calls is {_kind(calls)}, not a list: left out ({_text(calls)[:80]})")
        return []

    def fix(i: int, c: Any) -> Any:
        if not isinstance(c, dict):
            notes.append(f"tool call {i} is {_kind(c)}, not an object: left out")
            return _MISSING
        else:
            nc = _fields(c, _CALL_FIELDS, f"tool call {i}: ", notes)
            fn = nc.get("function")
            if "function" in nc and not isinstance(fn, dict):
                nc = {**nc, "function": {"name": fn if isinstance(fn, str) else _text(fn)}}
                notes.append(f"tool call {i}: function is {_kind(fn)}, not an object: made {{\"name\": ...}}")
            elif isinstance(fn, dict):
                nf = _fields(fn, _FUNCTION_FIELDS, f"tool call {i}: function.", notes)
                if nf is not fn:
                    nc = {**nc, "function": nf}
        return nc
    return _shared_map(calls, fix)


def fix_message(m: Any) -> tuple[Any, list]:
    """(the message in the layers' shape, or None to leave it out; what was changed, in words).
    A message that already has the shape is returned itself with no notes."""
    notes: list = []
    if not isinstance(m, dict):
        return None, [f"is {_kind(m)}, not a message object: left out"]
    out = _fields(m, _MESSAGE_FIELDS, "", notes)
    c = out.get("content")
    if c is not None and not isinstance(c, (str, list, dict)):
        out = {**out, "content": _text(c)}
        notes.append(f"content is {_kind(c)}, not a string or list: made its JSON text")
    elif isinstance(c, list):
        nc = _blocks(c, "", notes)
        if nc is not c:
            out = {**out, "content": nc}
    if "tool_calls" in out:
        nc = _calls(out["tool_calls"], notes)
        if nc is not out["tool_calls"]:
            out = {**out, "tool_calls": nc}
    return (m if not notes else out), notes


_MISSING = object()


def _fields_ok(d: dict, spec: dict) -> bool:
    for name, types in spec.items():
        v = d.get(name, _MISSING)
        if v is _MISSING or v.__class__ in types:
            continue
        if v is None:
            if name in _NULL_OK or types is _BOOL:
                continue
            return False
        if not isinstance(v, types) or (v.__class__ is bool and types is not _BOOL):
            return False
    return True


def _blocks_ok(content: list, depth: int = 0) -> bool:
    for b in content:
        if b.__class__ is not dict:
            return False
        t = b.get("type")
        if t is None:
            if "type" in b:
                return False
            continue
        if t.__class__ is not str:
            return False
        spec = _BLOCK_FIELDS.get(t)
        if spec and not _fields_ok(b, spec):
            return False
        if t == "tool_result":
            c = b.get("content")
            if c is not None and c.__class__ is not str:
                if c.__class__ is not list or (depth < 2 and not _blocks_ok(c, depth + 1)):
                    return False
        elif t == "image_url":
            iu = b.get("image_url")
            if iu.__class__ is dict and not _fields_ok(iu, {"url": _STR}):
                return False
    return True


def well_shaped(m: Any) -> bool:
    """True when ``m`` already has the shape (``fix_message`` would return it unchanged); quick."""
    if m.__class__ is not dict:
        return False
    c = m.get("content")
    if c.__class__ is str and len(m) == 2 and m.get("role").__class__ is str:
        return True                          # the commonest message: {"role": ..., "content": "text"}
    if not _fields_ok(m, _MESSAGE_FIELDS):
        return False
    if c is not None and c.__class__ is not str and c.__class__ is not dict:
        if c.__class__ is not list or not _blocks_ok(c):
            return False
    calls = m.get("tool_calls")
    if calls is not None:
        if calls.__class__ is not list:
            return False
        for call in calls:
            if call.__class__ is not dict or not _fields_ok(call, _CALL_FIELDS):
                return False
            fn = call.get("function", _MISSING)
            if fn is not _MISSING and (fn.__class__ is not dict or not _fields_ok(fn, _FUNCTION_FIELDS)):
                return False
    return True


# ------------------------------------------------------------------ the request's system prompt and tools
_TOOL_FIELDS = {"name": _STR, "description": _STR, "type": _STR, "input_schema": _DICT, "parameters": _DICT}
_FUNCTION_SPEC = {"name": _STR, "description": _STR, "parameters": _DICT}


def _schema(schema: dict, where: str, notes: list) -> dict:
    out = schema
    props, req = schema.get("properties"), schema.get("required")
    if props is not None and not isinstance(props, dict):
        out = {**out, "properties": {}}
        notes.append(f"{where}properties is {_kind(props)}, not an object: left out")
    if req is not None and not (isinstance(req, list) and all(isinstance(x, str) for x in req)):
        out = {**out, "required": [x for x in req if isinstance(x, str)] if isinstance(req, list) else []}
        notes.append(f"{where}required is not a list of names: kept its names only")
    return out


def fix_tools(tools: Any) -> tuple[Any, list]:
    """(the tool definitions in the shape the estimators read, what was changed): a list of objects whose
    name and description are strings and whose schema (``input_schema``, or OpenAI's ``function.parameters``)
    is an object with object ``properties`` and a list of names as ``required``."""
    notes: list = []
    if tools is None:
        return None, notes
    if not isinstance(tools, list):
        return None, [f"tools is {_kind(tools)}, not a list: ignored"]

    def fix(i: int, t: Any) -> Any:
        if not isinstance(t, dict):
            notes.append(f"tool {i} is {_kind(t)}, not an object: left out")
            return _MISSING
        else:
            where = f"tool {i}: "
            nt = _fields(t, _TOOL_FIELDS, where, notes)
            if isinstance(nt.get("input_schema"), dict):
                s = _schema(nt["input_schema"], where + "input_schema.", notes)
                nt = nt if s is nt["input_schema"] else {**nt, "input_schema": s}
            fn = nt.get("function", _MISSING)
            if fn is not _MISSING and not isinstance(fn, dict):
                nt = {**nt, "function": {"name": fn if isinstance(fn, str) else _text(fn)}}
                notes.append(f"{where}function is {_kind(fn)}, not an object: made {{\"name\": ...}}")
            elif isinstance(fn, dict):
                nf = _fields(fn, _FUNCTION_SPEC, where + "function.", notes)
                if isinstance(nf.get("parameters"), dict):
                    s = _schema(nf["parameters"], where + "function.parameters.", notes)
                    nf = nf if s is nf["parameters"] else {**nf, "parameters": s}
                if nf is not fn:
                    nt = {**nt, "function": nf}
        return nt
    return _shared_map(tools, fix), notes


def fix_system(system: Any) -> tuple[Any, list]:
    """(the system prompt as a string, a list of blocks, or None; what was changed)."""
    notes: list = []
    if system is None or isinstance(system, str):
        return system, notes
    if isinstance(system, list):
        fixed = _blocks(system, "system ", notes)
        return fixed, notes
    return _text(system), [f"the system prompt is {_kind(system)}, not a string or a list: made its JSON text"]
