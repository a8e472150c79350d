"""Strategy registry. One module per strategy; each defines a ``Strategy``."""
from __future__ import annotations

import importlib

from .base import Param, Strategy
from .infer import Inferred, infer_params

_MODULES = {"s08": ("s08", "S08"), "claude_code": ("claude_code", "CLAUDE_CODE"), "hermes": ("hermes", "HERMES")}
_cache: dict[str, Strategy] = {}


def available() -> list[str]:
    """Names of the strategies whose modules import."""
    names = []
    for name in _MODULES:
        try:
            get(name)
        except (KeyError, ImportError):
            continue
        names.append(name)
    return names


def get(name: str) -> Strategy:
    if name in _cache:
        return _cache[name]
    if name not in _MODULES:
        raise KeyError(f"unknown strategy {name!r} (known: {', '.join(_MODULES)})")
    mod, attr = _MODULES[name]
    try:
        strategy = getattr(importlib.import_module(f"{__name__}.{mod}"), attr)
    except ModuleNotFoundError as e:
        if e.name and e.name.endswith(f"strategies.{mod}"):
            raise KeyError(f"strategy {name!r} is not built yet") from None
        raise
    _cache[name] = strategy
    return strategy


__all__ = ["Param", "Strategy", "get", "available", "infer_params", "Inferred"]
