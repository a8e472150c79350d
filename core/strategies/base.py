"""A strategy: an ordered list of layers plus parameters, all overridable."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from ..layers.base import Layer
from ..messages import ANTHROPIC


@dataclass(frozen=True)
class Param:
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
                except ValueError:
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
            raise ValueError(f"{self.name} takes a {kind.__name__}, not {value!r}")
        if self.choices is not None and value not in self.choices:
            raise ValueError(f"{self.name} must be one of {', '.join(map(str, self.choices))}, not {value!r}")
        if self.minimum is not None and value < self.minimum:
            raise ValueError(f"{self.name} must be >= {self.minimum}, not {value}")
        if self.maximum is not None and value > self.maximum:
            raise ValueError(f"{self.name} must be <= {self.maximum}, not {value}")
        return value


@dataclass(frozen=True)
class Strategy:
    name: str
    title: str
    description: str
    layers: tuple[Layer, ...]                 # the pipeline before every model call, in order
    params: tuple[Param, ...]
    dialect: str = ANTHROPIC                  # the message dialect its layers work on
    extra_layers: tuple[Layer, ...] = ()      # layers runnable on demand (reactive, compact tool, ...)
    threshold_param: str | None = None        # the parameter the chart's threshold line edits
    threshold_unit: str = "size"              # "size" (chars) or "tokens"
    token_estimator: Callable[[], Any] | None = None   # factory; None = chars/4
    reactive_layer: str | None = None
    compact_tool_layer: str | None = None
    notes: dict = field(default_factory=dict)

    @property
    def layer_names(self) -> list[str]:
        return [l.name for l in self.layers]

    def layer(self, name: str) -> Layer:
        for l in self.layers + self.extra_layers:
            if l.name == name:
                return l
        known = ", ".join(l.name for l in self.layers + self.extra_layers)
        raise KeyError(f"strategy {self.name} has no layer {name!r} (it has: {known})")

    def param(self, name: str) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(f"strategy {self.name} has no parameter {name!r} "
                       f"(it has: {', '.join(p.name for p in self.params)})")

    def defaults(self) -> dict:
        return {p.name: p.default for p in self.params}

    def resolve(self, overrides: dict | None = None) -> dict:
        """Defaults updated with overrides, each checked and coerced."""
        params = self.defaults()
        for k, v in (overrides or {}).items():
            params[k] = self.param(k).coerce(v)
        return params
