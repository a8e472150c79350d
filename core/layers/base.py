"""What every layer gets, and how a layer is described."""
from __future__ import annotations

import threading
from typing import Any, Callable

from ..runtime.record import field, record, replace
from ..pipeline.size import CharsPerToken, SizeMeter, TokenEstimator
from ..summarizers import CachedSummarizer, OfflineSummarizer
from ..pipeline.trace import LayerOutput
from ..files.workspace import Workspace


ALL = object()      # in ReadParams.reads: every parameter was read (the dict was iterated or copied)


class ReadParams(dict):
    """The parameters a layer sees, noting the names it reads (``reads``), so a rerun after a parameter
    change can start at the first layer that read one (``Engine.run(reuse=...)``). Iterating or copying
    the dict counts as reading them all (``ALL`` in ``reads``); ``overlay`` makes a view with some values
    replaced that notes its reads in the same set."""
    __slots__ = ("reads",)

    def __init__(self, values: dict, reads: set | None = None):
        dict.__init__(self, values)
        self.reads = set() if reads is None else reads

    def get(self, key, default=None):
        self.reads.add(key)
        return dict.get(self, key, default)

    def __getitem__(self, key):
        self.reads.add(key)
        return dict.__getitem__(self, key)

    def __contains__(self, key) -> bool:
        self.reads.add(key)
        return dict.__contains__(self, key)

    def __iter__(self):
        self.reads.add(ALL)
        return dict.__iter__(self)

    def keys(self):
        self.reads.add(ALL)
        return dict.keys(self)

    def values(self):
        self.reads.add(ALL)
        return dict.values(self)

    def items(self):
        self.reads.add(ALL)
        return dict.items(self)

    def copy(self) -> dict:
        self.reads.add(ALL)
        return dict(dict.items(self))

    def overlay(self, values: dict) -> "ReadParams":
        """These parameters with ``values`` replacing some (a strategy calling another's layer with its own
        parameter names); reads are noted here."""
        merged = dict(dict.items(self))
        merged.update(values)
        return ReadParams(merged, self.reads)


@record
class LayerContext:
    """What a layer may read besides its messages: its parameters, the workspace, the summarizer, the size
    meter and token estimator, the pipeline state, per-message metadata and the memo it carries between calls."""
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
    # what layers carry from one call to the next (``core.layers.s08_incremental``): the engine's ``memo``, a dict
    # on a replay's engine, None elsewhere (a layer then computes everything from its input)
    memo: dict | None = None
    # False when no one will read the explanation of a step that changes nothing (a replay that keeps no trace:
    # ``Engine.explain``): a layer may then return such a step without its note and vars. A step that changes the
    # list, fails or triggers is always explained in full (the replay's records quote it).
    explain: bool = True

    @classmethod
    def default(cls, params: dict | None = None, **kw) -> "LayerContext":
        ws = kw.pop("workspace", None) or Workspace()
        summ = kw.pop("summarizer", None) or CachedSummarizer(OfflineSummarizer())
        return cls(dict(params or {}), ws, summ, **kw)

    def p(self, name: str, default: Any = None) -> Any:
        return self.params.get(name, default)

    def with_params(self, params: dict) -> "LayerContext":
        """The same context with other ``params`` (``replace`` without its per-call look at the fields:
        a strategy that calls another's layer does it at every model call of a replay)."""
        if self.__class__ is not LayerContext:
            return replace(self, params=params)
        return LayerContext(params, self.workspace, self.summarizer, self.meter, self.tokens, self.state, self.meta,
                            self.now, self.system, self.tools, self.cancel, self.memo, self.explain)

    def cancelled(self) -> bool:
        return bool(self.cancel and self.cancel.is_set())


LayerFn = Callable[[list, LayerContext], LayerOutput]

# What a layer does, whatever its name: views and reports pick colours, explanations and
# comparisons by role, never by layer name. A strategy's own layers may use other roles.
BUDGET = "budget"            # persist the largest tool results, leave a preview
SNIP = "snip"                # cut the middle of the list out (head and tail kept)
MICRO = "micro"              # replace old tool results with a placeholder
PRUNE = "prune"              # cheap pre-pass before a summary (hermes: dedup, one-liners)
BOUNDARIES = "boundaries"    # compute where a summary starts and ends (hermes)
SUMMARY = "summary"          # replace a span with an LLM summary
ASSEMBLE = "assemble"        # put head, summary and tail back together
SANITIZE = "sanitize"        # repair tool pairs and the like after a cut
REACTIVE = "reactive"        # on demand: the API said the prompt is too long
MANUAL = "manual"            # on demand: the user or the model asked for a compaction
VIEW = "view"                # a derived view of the context (not a compaction)
CONVERT = "convert"          # the pipeline's dialect conversion


@record(frozen=True)
class Layer:
    """One layer of a strategy's pipeline: a pure function over a message list, with its name and description."""
    name: str
    fn: LayerFn
    description: str
    llm: bool = False            # may call a summarizer (runs in a worker in the window)
    label: str = ""              # short label for the stepper, e.g. "L3 budget"
    role: str = ""               # what it does (BUDGET, SNIP, ...): see above

    def __call__(self, messages: list, ctx: LayerContext) -> LayerOutput:
        return self.fn(messages, ctx)


@record(frozen=True)
class LayerProgress:
    """Reported by ``Engine.run(progress=...)`` before a layer runs: layer ``index`` of ``total``
    (1-based) of this run."""
    index: int
    total: int
    layer: Layer

    @property
    def text(self) -> str:
        """"2/4 L1 snip", with " (LLM)" for a layer that may call a summarizer."""
        return f"{self.index}/{self.total} {self.layer.label or self.layer.name}" + (" (LLM)" if self.layer.llm else "")
