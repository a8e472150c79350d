"""A strategy's parameters, declared once and typed.

Each strategy declares its parameters as one frozen dataclass, a ``Settings`` subclass whose fields are
``param(default, help, ...)``: the field's annotation is its type, then its default, bounds, choices, unit and help.
From that one declaration come the strategy's ``Param`` list (``Settings.declared()``), which ``--set``, the
parameter panel, ``compactscope strategies`` and ``docs/parameters.md`` show and which validates a value once,
when the strategy resolves its parameters; and what a layer reads: ``cfg = S08Params.of(ctx)``, then
``cfg.max_messages`` (an ``int``, already checked), with no default written a second time.
"""
from __future__ import annotations

import math
from typing import Any, TypeVar, cast

from ..runtime.record import MISSING, field, fields, record
from ..i18n import english as words

MAX_WHOLE = 2 ** 53          # larger whole numbers are not exact as JSON numbers (and mean nothing here)


@record(frozen=True)
class Param:
    """One parameter of a strategy: its default, help text, choices or bounds, and unit."""
    name: str
    default: Any
    help: str
    choices: tuple | None = None
    minimum: float | None = None
    maximum: float | None = None
    unit: str = ""

    @property
    def kind(self) -> type:
        return type(self.default)

    def clamp(self, value: float) -> Any:
        """The accepted value nearest to ``value`` (a chart drag): rounded for a whole number, within the bounds."""
        whole = isinstance(self.default, int) and not isinstance(self.default, bool)
        v: Any = int(round(value)) if whole else float(value)
        cast = int if whole else float
        if self.minimum is not None:
            v = max(v, cast(self.minimum))
        if self.maximum is not None:
            v = min(v, cast(self.maximum))
        return v

    def coerce(self, value: Any) -> Any:
        """Turn a CLI/UI value into the parameter's type; ValueError says why not."""
        kind = self.kind
        if isinstance(value, str) and kind is not str:
            text = value.strip().replace("_", "").replace(",", "")
            if kind is bool:
                low = text.lower()
                if low in ("1", "true", "yes", "on"):
                    value = True
                elif low in ("0", "false", "no", "off"):
                    value = False
                else:
                    raise ValueError(f"{self.name} takes true or false, not {value!r}")
            elif kind is int:
                try:
                    value = int(float(text)) if "e" in text.lower() else int(text)
                except (ValueError, OverflowError):    # ("1e400" is infinite: no whole number)
                    raise ValueError(f"{self.name} takes a whole number, not {value!r}") from None
            elif kind is float:
                try:
                    value = float(text)
                except ValueError:
                    raise ValueError(f"{self.name} takes a number, not {value!r}") from None
        elif kind is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        elif kind is int and isinstance(value, float) and value.is_integer():
            value = int(value)
        if kind is not type(None) and not isinstance(value, kind):
            raise ValueError(f"{self.name} takes {words.a(kind.__name__)}, not {value!r}")
        # NaN compares false with every bound, so it would pass them all: refused here, with the infinities
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"{self.name} takes a finite number, not {value!r}")
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_WHOLE:
            raise ValueError(f"{self.name} must be a number of at most {MAX_WHOLE:,}, not {value:.3g}")
        if self.choices is not None and value not in self.choices:
            raise ValueError(f"{self.name} must be one of {', '.join(map(str, self.choices))}, not {value!r}")
        if self.minimum is not None and value < self.minimum:
            raise ValueError(f"{self.name} must be >= {self.minimum}, not {value}")
        if self.maximum is not None and value > self.maximum:
            raise ValueError(f"{self.name} must be <= {self.maximum}, not {value}")
        return value


class IntOrAll(Param):
    """A whole number >= 0, or "all" (edited as text in the window)."""
    text_editor = True

    def coerce(self, value: Any) -> Any:
        if isinstance(value, str) and value.strip().lower() == "all":
            return "all"
        try:
            n = int(str(value).strip()) if isinstance(value, str) else value
        except ValueError:
            raise ValueError(f"{self.name} takes a whole number or 'all', not {value!r}") from None
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            raise ValueError(f"{self.name} takes a whole number >= 0 or 'all', not {value!r}")
        return n


def param(default: Any, help: str, *, choices: tuple | None = None, minimum: float | None = None,
          maximum: float | None = None, unit: str = "", kind: type = Param) -> Any:
    """One field of a ``Settings`` declaration (``kind``: a ``Param`` subclass with its own coercion)."""
    return field(default=default, metadata={"param": (help, choices, minimum, maximum, unit), "kind": kind})


S = TypeVar("S", bound="Settings")


@record(frozen=True)
class Settings:
    """The typed parameters of a strategy (subclass it as a frozen dataclass of ``param`` fields)."""

    @classmethod
    def declared(cls) -> tuple[Param, ...]:
        """Every field as the ``Param`` that --set, the panel and the docs show, in declaration order."""
        out = []
        for f in fields(cls):
            help, choices, minimum, maximum, unit = f.metadata["param"]
            out.append(f.metadata["kind"](f.name, f.default, help, choices, minimum, maximum, unit))
        return tuple(out)

    @classmethod
    def of(cls: type[S], source: Any) -> S:
        """What a layer reads, typed as this class, from its context (``ctx.params``) or a parameter dict: the
        strategy's resolved values, each field's declared default where a value is absent (a layer run with a few
        of them, like Claude Code's budget over s08's). Read when an attribute is asked for, so that the engine
        still learns which parameters a layer read (``ReadParams``: a rerun starts at the first layer that read a
        changed one)."""
        view = _VIEWS.get(cls) or _view_class(cls)
        return cast(S, view(getattr(source, "params", source) or {}))


_DEFAULTS: dict[type, dict[str, Any]] = {}


def _defaults(cls: type) -> dict[str, Any]:
    """Each field's declared default, read once per class."""
    hit = _DEFAULTS.get(cls)
    if hit is None:
        hit = _DEFAULTS[cls] = {f.name: f.default for f in fields(cls) if f.default is not MISSING}
    return hit


class _View:
    """A ``Settings`` seen through a parameter dict (see ``Settings.of``); its class (one per ``Settings`` class,
    ``_view_class``) holds the defaults and the name, so a layer's ``of`` makes an object of one slot."""
    __slots__ = ("_params",)
    _defaults: dict = {}
    _name = ""

    def __init__(self, params: Any):
        self._params = params

    def __getattr__(self, name: str) -> Any:
        try:
            default = self._defaults[name]
        except KeyError:
            raise AttributeError(f"{self._name} declares no parameter {name!r}") from None
        return self._params.get(name, default)

    def __repr__(self) -> str:
        return f"{self._name}.of({{...}})"


_VIEWS: dict[type, type] = {}


def _reader(name: str, default: Any) -> property:
    """A field of a view, read from its parameter dict (its default when absent)."""
    def read(self: _View) -> Any:
        return self._params.get(name, default)
    return property(read)


def _view_class(cls: type) -> type:
    """The view class of a ``Settings`` class: a property per field with a default, so a read is found by the
    ordinary attribute lookup (through ``__getattr__`` each read first failed it: an AttributeError raised and
    caught inside, 1 us of the 4 us a layer that changes nothing costs). Any other name still goes to
    ``__getattr__`` (its AttributeError names the class)."""
    hit = _VIEWS.get(cls)
    if hit is None:
        defaults = _defaults(cls)
        ns: dict[str, Any] = {"__slots__": (), "_defaults": defaults, "_name": cls.__name__}
        ns.update((name, _reader(name, default)) for name, default in defaults.items())
        hit = _VIEWS[cls] = type(f"{cls.__name__}View", (_View,), ns)
    return hit
