"""Strategy registry. One module per built-in strategy; each defines a ``Strategy``.

``get(spec)`` resolves every way of naming a strategy, so every caller (engine, CLI, replay,
window, fleet) accepts all of them:

* a built-in name (``s08``, ``claude_code``, ``hermes``, ``inspect_edit``, ...);
* a name registered by an installed package under the entry-point group
  ``compactscope.strategies``;
* a plugin: ``MODULE:NAME`` or ``PATH.py[:NAME]`` (``core.strategies.plugin``).

``source(name)`` says where a strategy comes from, for ``compactscope strategies``.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .base import ANY, Param, Strategy
    from .infer import Inferred, infer_params
    from .own import Own, StrategyChoice, agent_of, choose_strategy, fits, own_strategy, strategy_choice_of
    from .plugin_params import PluginError

# the names this package answers from its modules, each imported on first use (``compactscope strategies``
# lists the built-ins from their description, catalogue.json, without importing any layer: issue 27)
_LAZY = {"ANY": "base", "Param": "base", "Strategy": "base", "Inferred": "infer", "infer_params": "infer",
         "Own": "own", "StrategyChoice": "own", "agent_of": "own", "choose_strategy": "own", "fits": "own",
         "own_strategy": "own", "strategy_choice_of": "own", "PluginError": "plugin_params"}

_MODULES = {"s08": ("s08", "S08"), "claude_code": ("claude_code", "CLAUDE_CODE"), "hermes": ("hermes", "HERMES"),
            "inspect_edit": ("inspect", "INSPECT_EDIT"), "inspect_trim": ("inspect", "INSPECT_TRIM"),
            "inspect_summary": ("inspect", "INSPECT_SUMMARY"), "codex": ("codex", "CODEX"),
            "gemini_cli": ("gemini_cli", "GEMINI_CLI")}
_cache: dict[str, Strategy] = {}


def __getattr__(name: str) -> Any:
    """The names of ``_LAZY`` from their modules, imported on first use (``PluginError`` from the plugin
    machinery: a built-in strategy never needs it)."""
    mod = _LAZY.get(name)
    if mod is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{mod}"), name)
    globals()[name] = value
    return value


def looks_like_plugin(spec: str) -> bool:
    """Whether ``spec`` is written as a plugin (``X:NAME`` or ``PATH.py``), not a strategy name
    (``plugin.looks_like_plugin``, its module imported on first use)."""
    from .plugin import looks_like_plugin as looks
    return looks(spec)


def short_label(spec: str) -> str:
    """How a strategy spec is shown in a list (``plugin.short_label``, its module imported on first use)."""
    from .plugin import short_label as label
    return label(spec)


def builtin() -> list[str]:
    return list(_MODULES)


def available() -> list[str]:
    """Names of the built-in strategies whose modules import, then those installed packages
    register (entry points) that load."""
    return _loading(list(_MODULES)) + available_installed()


def available_installed() -> list[str]:
    """The names ``available()`` adds to the built-ins: those installed packages register that load."""
    return _loading([n for n in _entry_points() if n not in _MODULES])


def _loading(names: list[str]) -> list[str]:
    out = []
    for name in names:
        try:
            get(name)
        except (KeyError, ImportError):
            continue
        out.append(name)
    return out


def _entry_points() -> dict:
    from .entry import entry_points
    try:
        return entry_points()
    except Exception:  # noqa: BLE001 - broken package metadata must not break the registry
        return {}


def _builtin(name: str) -> Strategy:
    mod, attr = _MODULES[name]
    try:
        strategy = getattr(importlib.import_module(f"{__name__}.{mod}"), attr)
    except ModuleNotFoundError as e:
        if e.name and e.name.endswith(f"strategies.{mod}"):
            raise KeyError(f"strategy {name!r} is not built yet") from None
        raise
    _cache[name] = strategy
    return strategy


def get(spec: str | Strategy) -> Strategy:
    """The strategy ``spec`` names (see the module docstring). Raises KeyError (a
    ``PluginError`` for plugins) with a sentence saying why not."""
    from .base import Strategy
    if isinstance(spec, Strategy):
        return spec
    if not isinstance(spec, str):
        raise KeyError(f"a strategy is named by a string, not {type(spec).__name__}")
    if spec in _cache:
        return _cache[spec]
    if spec in _MODULES:
        return _builtin(spec)
    if not looks_like_plugin(spec):
        eps = _entry_points()
        if spec in eps:
            from .plugin import load_entry_point
            strategy = load_entry_point(spec, eps[spec])
            _cache[spec] = strategy
            return strategy
        known = list(_MODULES) + [n for n in eps if n not in _MODULES]
        raise KeyError(f"unknown strategy {spec!r} (known: {', '.join(known)}; or a plugin: MODULE:NAME or "
                       f"PATH.py:NAME)")
    from .plugin import load
    return load(spec)          # a file is re-read when it changed, so it is not kept in _cache


def source(strategy: str | Strategy) -> str:
    """Where a strategy comes from: "built-in", "entry point ... (package version)", "file PATH",
    "module NAME"."""
    st = get(strategy) if isinstance(strategy, str) else strategy
    notes = st.notes if isinstance(st.notes, dict) else {}
    if notes.get("origin"):
        return str(notes["origin"])
    return "built-in" if st.name in _MODULES else "unknown"


__all__ = ["ANY", "Inferred", "Own", "Param", "PluginError", "Strategy", "StrategyChoice", "agent_of", "available",
           "available_installed", "builtin", "choose_strategy", "fits", "get", "infer_params", "looks_like_plugin",
           "own_strategy", "short_label", "source", "strategy_choice_of"]
