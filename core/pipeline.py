"""Run a strategy's layers in order over a message list and trace every step.

``Engine`` holds what lives across runs (workspace, summarizer cache, size
cache, pipeline state such as the circuit breaker). ``Engine.run`` is one
"before the model call" pass; ``Engine.reactive`` and ``Engine.compact_tool``
are the other entry points of the seeds' agent loop.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any, Iterable

from . import strategies
from .checker import check
from .conversation import Conversation
from .layers.base import Layer, LayerContext
from .messages import ANTHROPIC, OPENAI, detect_dialect, to_anthropic, to_openai
from .size import CharsPerToken, SizeMeter
from .strategies.base import Strategy
from .summarizers import CachedSummarizer, OfflineSummarizer
from .trace import CONVERT, Edit, LayerOutput, Step, Trace
from .workspace import Workspace


def _convert_output(messages: list, src: str, dst: str, system: Any) -> LayerOutput:
    if dst == OPENAI:
        conv = to_openai(messages, system)
        origin = [None if o < 0 else o for o in conv.origin]
    else:
        conv = to_anthropic(messages)
        origin = conv.origin
    edit = Edit(CONVERT, f"converted {len(messages)} {src} message(s) to {len(conv.messages)} {dst} message(s)")
    return LayerOutput(conv.messages, origin, [edit], {"from": src, "to": dst}, edit.text, dialect=dst)


@dataclass
class Engine:
    strategy: Strategy
    params: dict = field(default_factory=dict)
    workspace: Workspace | None = None
    summarizer: CachedSummarizer | None = None
    meter: SizeMeter = field(default_factory=SizeMeter)
    tokens: Any = None
    state: dict = field(default_factory=dict)
    order: list[str] | None = None
    check: bool = True

    def __post_init__(self):
        if isinstance(self.strategy, str):
            self.strategy = strategies.get(self.strategy)
        self.params = self.strategy.resolve(self.params)
        if self.workspace is None:
            self.workspace = Workspace()
        if self.summarizer is None:
            self.summarizer = CachedSummarizer(OfflineSummarizer())
        elif not isinstance(self.summarizer, CachedSummarizer):
            self.summarizer = CachedSummarizer(self.summarizer)
        if self.tokens is None:
            self.tokens = self.strategy.token_estimator() if self.strategy.token_estimator else CharsPerToken()
        if self.order is not None:
            for name in self.order:
                self.strategy.layer(name)  # raises KeyError with the known names

    @property
    def layers(self) -> list[Layer]:
        if self.order is not None:
            return [self.strategy.layer(n) for n in self.order]
        return list(self.strategy.layers)

    def context(self, *, meta: dict | None = None, now: float | None = None, system: Any = None,
                tools: Any = None, cancel: threading.Event | None = None, state: dict | None = None) -> LayerContext:
        return LayerContext(self.params, self.workspace, self.summarizer, self.meter, self.tokens,
                            dict(self.state if state is None else state), meta or {}, now, system, tools, cancel)

    def _step(self, layer_name: str, description: str, fn, messages: list, ctx: LayerContext,
              dialect: str) -> tuple[Step, str]:
        t0 = time.perf_counter()
        out = fn(messages, ctx)
        dt = time.perf_counter() - t0
        new_dialect = out.dialect or dialect
        meter, tok = self.meter, self.tokens
        size_before = meter.size(messages)
        size_after = size_before if out.messages is messages else meter.size(out.messages)
        tokens_before = tok.tokens(messages, meter, system=ctx.system, tools=ctx.tools)
        tokens_after = tokens_before if out.messages is messages else \
            tok.tokens(out.messages, meter, system=ctx.system, tools=ctx.tools)
        findings = check(out.messages, new_dialect) if self.check else []
        step = Step(layer_name, messages, out.messages, out.origin, out.edits, out.vars, out.note,
                    size_before, size_after, tokens_before, tokens_after, findings, out.triggered, out.error,
                    out.summary, new_dialect, dt, description)
        if out.state:
            ctx.state.update(out.state)
        return step, new_dialect

    def run(self, messages: list, *, conversation: Conversation | None = None, now: float | None = None,
            cancel: threading.Event | None = None, layers: Iterable[str] | None = None,
            keep_state: bool = True, dialect: str | None = None, system: Any = None) -> Trace:
        """One pass of the strategy's layers (or the named ``layers``) over ``messages``."""
        meta = conversation.meta_by_identity() if conversation is not None else {}
        system = system if system is not None else (conversation.system if conversation is not None else None)
        dialect = dialect or (conversation.dialect if conversation is not None else detect_dialect(messages))
        ctx = self.context(meta=meta, now=now, system=system,
                           tools=conversation.tools if conversation is not None else None, cancel=cancel)
        state_before = dict(ctx.state)
        todo = [self.strategy.layer(n) for n in layers] if layers is not None else self.layers
        steps: list[Step] = []
        current = messages
        input_findings = check(messages, dialect) if self.check else []
        if dialect != self.strategy.dialect:
            step, dialect = self._step("convert", f"convert to the {self.strategy.dialect} dialect",
                                       lambda m, c: _convert_output(m, dialect, self.strategy.dialect, system),
                                       current, ctx, dialect)
            steps.append(step)
            current = step.messages
        for layer in todo:
            if ctx.cancelled():
                break
            step, dialect = self._step(layer.name, layer.description, layer.fn, current, ctx, dialect)
            steps.append(step)
            current = step.messages
        if keep_state:
            self.state = dict(ctx.state)
        return Trace(self.strategy.name, dict(self.params), messages, steps, self.meter.name, self.tokens.name,
                     input_findings, state_before, dict(ctx.state), [s.layer for s in steps], dialect)

    def reactive(self, messages: list, **kw) -> Trace:
        if not self.strategy.reactive_layer:
            raise KeyError(f"strategy {self.strategy.name} has no reactive compaction")
        return self.run(messages, layers=[self.strategy.reactive_layer], **kw)

    def compact_tool(self, messages: list, **kw) -> Trace:
        if not self.strategy.compact_tool_layer:
            raise KeyError(f"strategy {self.strategy.name} has no compact tool")
        return self.run(messages, layers=[self.strategy.compact_tool_layer], **kw)


def run_pipeline(messages: list, strategy: str | Strategy = "s08", params: dict | None = None, **kw) -> Trace:
    """Convenience: a fresh Engine, one run."""
    run_kw = {k: kw.pop(k) for k in ("conversation", "now", "cancel", "layers", "dialect", "system") if k in kw}
    return Engine(strategy, params or {}, **kw).run(messages, **run_kw)
