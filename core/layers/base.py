"""What every layer gets, and how a layer is described."""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Callable

from ..size import CharsPerToken, SizeMeter, TokenEstimator
from ..summarizers import CachedSummarizer, OfflineSummarizer
from ..trace import LayerOutput
from ..workspace import Workspace


@dataclass
class LayerContext:
    params: dict
    workspace: Workspace
    summarizer: CachedSummarizer
    meter: SizeMeter = field(default_factory=SizeMeter)
    tokens: TokenEstimator = field(default_factory=CharsPerToken)
    state: dict = field(default_factory=dict)      # pipeline state before this layer (read only)
    meta: dict = field(default_factory=dict)       # id(message) -> MessageMeta (timestamps, usage, ...)
    now: float | None = None                       # "current time" for time-based layers
    system: Any = None
    tools: Any = None
    cancel: threading.Event | None = None

    @classmethod
    def default(cls, params: dict | None = None, **kw) -> "LayerContext":
        ws = kw.pop("workspace", None) or Workspace()
        summ = kw.pop("summarizer", None) or CachedSummarizer(OfflineSummarizer())
        return cls(dict(params or {}), ws, summ, **kw)

    def p(self, name: str, default: Any = None) -> Any:
        return self.params.get(name, default)

    def cancelled(self) -> bool:
        return bool(self.cancel and self.cancel.is_set())


LayerFn = Callable[[list, LayerContext], LayerOutput]


@dataclass(frozen=True)
class Layer:
    name: str
    fn: LayerFn
    description: str
    llm: bool = False            # may call a summarizer (runs in a worker in the window)
    label: str = ""              # short label for the stepper, e.g. "L3 budget"

    def __call__(self, messages: list, ctx: LayerContext) -> LayerOutput:
        return self.fn(messages, ctx)
