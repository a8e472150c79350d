"""A module imported, or a regex compiled, on first use. A module: ``hashlib = lazy_module("hashlib", globals())`` binds a stand-in that, at
its first attribute access, imports the real module and puts it in that name of the importing module's
globals (every later use is the module itself, with no cost of its own). For modules a command imports but
rarely calls (issue 27: a headless command's start-up); type checkers see the real import under
``TYPE_CHECKING``::

    if TYPE_CHECKING:
        import hashlib
    else:
        hashlib = lazy_module("hashlib", globals())

A regex: ``_NAME = lazy_regex(r"...")`` for a module with many patterns that most commands import but few use
(the secret scrubber's 35 took 15-25 ms to compile, and every command's parser imports it).
"""
from __future__ import annotations

import importlib
import re
from typing import Any


class LazyModule:
    """The stand-in ``lazy_module`` answers (see the module's text)."""

    __slots__ = ("_lazy_name", "_lazy_globals", "_lazy_as")

    def __init__(self, name: str, namespace: dict, bound_as: str):
        self._lazy_name, self._lazy_globals, self._lazy_as = name, namespace, bound_as

    def __getattr__(self, attr: str) -> Any:
        module = importlib.import_module(self._lazy_name)
        if self._lazy_globals.get(self._lazy_as) is self:
            self._lazy_globals[self._lazy_as] = module
        return getattr(module, attr)

    def __repr__(self) -> str:
        return f"<module {self._lazy_name!r}, imported on first use>"


def lazy_module(name: str, namespace: dict, bound_as: str | None = None) -> Any:
    """A stand-in for module ``name``, bound in ``namespace`` (a module's ``globals()``) as ``bound_as``
    (default: the module's last dotted part), replaced there by the module at its first use."""
    return LazyModule(name, namespace, bound_as or name.rpartition(".")[2])


class LazyRegex:
    """The stand-in ``lazy_regex`` answers: compiled at the first use of any of its attributes, after which the
    compiled pattern's methods are this object's own attributes (no lookup through here again) and the pattern
    itself is ``compiled``."""

    def __init__(self, source: str, flags: int = 0):
        self._source = (source, flags)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        compiled = re.compile(*self.__dict__["_source"])
        for method in ("search", "match", "fullmatch", "sub", "subn", "finditer", "findall", "split"):
            setattr(self, method, getattr(compiled, method))
        self.compiled = compiled
        return getattr(compiled, name)


def lazy_regex(source: str, flags: int = 0) -> Any:
    """``re.compile(source, flags)``, done at the pattern's first use (see the module's text)."""
    return LazyRegex(source, flags)
