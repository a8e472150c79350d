"""A plugin function's parameters: its keyword arguments (type from the annotation or default, help from the
docstring, bounds and choices from ``Annotated``), as the strategy's ``Param`` list; and the error a plugin that
cannot be used raises."""
from __future__ import annotations

import inspect
import re
import typing
from typing import Any, Callable

from ..runtime.record import record
from .base import Param


RESERVED = ("summarize",)        # keyword arguments the engine hands in, not parameters


class PluginError(KeyError):
    """A plugin could not be loaded or is not a strategy. ``str(e.args[0])`` says why, naming
    the file (and line) or module."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


# ------------------------------------------------------------------ parameters
@record(frozen=True)
class PluginParam(Param):
    """A parameter read from a plugin function's keyword argument: its type comes from the
    annotation when there is one (so a ``None`` default still takes numbers)."""
    type_: Any = None

    @property
    def kind(self) -> type:
        return self.type_ if isinstance(self.type_, type) else type(self.default)

    def coerce(self, value: Any) -> Any:
        if self.default is None and (value is None or (isinstance(value, str) and
                                                       value.strip().lower() in ("none", "null", ""))):
            return None
        return super().coerce(value)


_SCALARS = (bool, int, float, str)


def _unwrap(ann) -> tuple[Any, str, dict, tuple | None]:
    """(type, help, extra Param fields, choices) from an annotation."""
    help_text, extra, choices = "", {}, None
    origin = typing.get_origin(ann)
    if origin is typing.Annotated:
        args = typing.get_args(ann)
        ann = args[0]
        for meta in args[1:]:
            if isinstance(meta, str):
                help_text = meta
            elif isinstance(meta, dict):
                extra.update({k: v for k, v in meta.items() if k in ("minimum", "maximum", "unit", "help", "choices")})
        origin = typing.get_origin(ann)
    if origin is typing.Literal:
        choices = typing.get_args(ann)
        return (type(choices[0]) if choices else str), help_text, extra, tuple(choices)
    args = typing.get_args(ann)
    if args and type(None) in args:                       # Optional[T] / T | None
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1:
            return _unwrap(rest[0])[0], help_text, extra, choices
    return (ann if ann in _SCALARS else None), help_text, extra, choices


def _doc_params(fn) -> dict[str, str]:
    """Parameter help from a docstring: Google style (``name: text`` / ``name (type): text``
    under Args:) or Sphinx style (``:param name: text``)."""
    doc = inspect.getdoc(fn) or ""
    out: dict[str, str] = {}
    for m in re.finditer(r":param\s+(?:\w+\s+)?(\w+):\s*(.+)", doc):
        out[m.group(1)] = m.group(2).strip()
    in_args, cur = False, None
    for line in doc.splitlines():
        s = line.strip()
        if s.lower() in ("args:", "arguments:", "parameters:", "keyword arguments:"):
            in_args, cur = True, None
            continue
        if in_args:
            if not s:
                cur = None
                continue
            arg = re.match(r"^(\w+)\s*(\([^)]*\))?\s*:\s*(.*)$", s)
            if arg and line.startswith((" ", "\t")):
                cur = arg.group(1)
                out.setdefault(cur, arg.group(3).strip())
            elif cur and line.startswith((" ", "\t")):
                out[cur] = (out[cur] + " " + s).strip()
            elif s.endswith(":"):
                in_args = False
    return out


def function_params(fn: Callable, who: str) -> tuple[list[Param], list[str], bool]:
    """(parameters from ``fn``'s keyword arguments, their names, whether it takes ``summarize``)."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError) as e:
        raise PluginError(f"{who}: cannot read its signature ({e})") from None
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except Exception:  # noqa: BLE001 - unresolvable annotations: fall back to the defaults' types
        hints = {}
    ps = list(sig.parameters.values())
    positional = [p for p in ps if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if not positional and not any(p.kind == p.VAR_POSITIONAL for p in ps):
        raise PluginError(f"{who}: a compactor takes the message list as its first argument "
                          f"(it takes {sig})")
    docs = _doc_params(fn)
    params: list[Param] = []
    names: list[str] = []
    wants_summarize = False
    for p in ps[1:] if positional and ps[0] is positional[0] else ps:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if p.name in RESERVED:
            wants_summarize = True
            continue
        if p.default is p.empty:
            raise PluginError(f"{who}: parameter {p.name!r} needs a default value (every argument after the "
                              f"messages is a strategy parameter: {p.name}=...)")
        ann = hints.get(p.name, p.annotation if p.annotation is not p.empty else None)
        kind, help_text, extra, choices = _unwrap(ann) if ann is not None else (None, "", {}, None)
        default = p.default
        if kind is float and isinstance(default, int) and not isinstance(default, bool):
            default = float(default)
        help_text = extra.pop("help", None) or help_text or docs.get(p.name) or \
            f"keyword argument {p.name} of {getattr(fn, '__name__', 'the function')}()"
        if "choices" in extra:
            choices = tuple(extra.pop("choices"))
        if kind is None and default is not None and not isinstance(default, _SCALARS):
            kind = None
        params.append(PluginParam(p.name, default, help_text, choices, extra.get("minimum"), extra.get("maximum"),
                                  str(extra.get("unit", "")), kind))
        names.append(p.name)
    return params, names, wants_summarize
