"""What a replay records: one ``CallRecord`` per model call (with a ``LayerRecord`` per layer that
ran) inside a ``ReplayResult``. Plain data, readable by other modules (the fleet, reports): every
field is documented here; what is computed from the records lives in ``views`` and ``output``
and is reached through the result's methods (``totals()``, ``iterations()``, ``to_json()``, ...).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..runtime.record import field, record
from ..pipeline.engine import Engine
from ..strategies.base import IterationPolicy
from ..pipeline.trace import Trace
from . import output, views


@record(slots=True)
class LayerRecord:
    """One layer's run before one model call."""
    layer: str
    changed: bool
    size_before: int
    size_after: int
    tokens_before: int
    tokens_after: int
    note: str = ""                  # the step's explanation when it changed something or failed
    triggered: bool | None = None
    error: str | None = None
    summary: bool = False           # an LLM summary was made by this layer
    role: str = ""                  # the layer's role (core.layers.base)
    internal: str | None = None     # the layer raised (a bug): the traceback (Step.internal)
    plugin_failed: bool = False     # the error is a plugin's own failure (Step.plugin_failed)

    def to_json(self) -> dict:
        d = {"layer": self.layer, "changed": self.changed, "size_before": self.size_before,
             "size_after": self.size_after, "tokens_before": self.tokens_before, "tokens_after": self.tokens_after,
             "note": self.note}
        if self.triggered is not None:
            d["triggered"] = self.triggered
        if self.error:
            d["error"] = self.error
        if self.summary:
            d["summary"] = True
        if self.internal:
            d["internal_error"] = True
        if self.plugin_failed:
            d["plugin_failed"] = True
        return d


@record(slots=True)
class CallRecord:
    """The pipeline before one model call: sizes and tokens in the strategy's units, what fired."""
    index: int                      # call number, 0-based
    message_index: int              # the recorded assistant message this call produced (Conversation index)
    new_messages: int               # recorded messages appended to the running context for this call
    raw_size: int                   # the whole recorded history up to the call, never compacted
    raw_tokens: int
    messages_before: int
    messages_after: int
    size_before: int
    size_after: int
    tokens_before: int
    tokens_after: int
    layers: list[LayerRecord]
    fired: list[str]                # layers that changed the context
    events: list[str]               # what happened, in words ("layer: explanation")
    dropped: list[int]              # recorded message indices that left the context at this call
    results_cleared: int            # tool results whose content a layer replaced or persisted
    results_dropped: int            # tool results inside dropped messages
    summaries: int                  # LLM summaries made at this call
    errors: list[str] = field(default_factory=list)
    timestamp: float | None = None
    real_tokens: int | None = None  # what the API really saw at this call (usage), when recorded
    real_boundary: dict | None = None   # a real compaction recorded just before this call
    findings: int | None = None     # checker errors in the context sent (when checked)
    turn: int = 0                   # user turns so far (a user message with text, not only tool results)
    overhead: int | None = None     # with calibration: the recorded overhead in this call's token estimates
    reset: dict | None = None       # following reality: a real compaction came before this call; the record is
    #                                 the check on the replay's own context up to it, and the next call starts
    #                                 from the real context ({"segment", "messages"})

    @property
    def compacted(self) -> bool:
        """A compaction happened before this call: messages left the context (snip, trim, a plugin that drops
        messages), a summary was made, or a layer the strategy's threshold triggered changed the context
        without dropping a message (Inspect's CompactionEdit clears old tool results in place). A layer that
        runs on every call (microcompact, a budget) and was not triggered is routine, not a compaction."""
        return bool(self.dropped) or self.summaries > 0 or any(layer.triggered and layer.changed for layer in self.layers)

    def to_json(self) -> dict:
        d = {"index": self.index, "message_index": self.message_index, "new_messages": self.new_messages,
             "raw_size": self.raw_size, "raw_tokens": self.raw_tokens,
             "messages_before": self.messages_before, "messages_after": self.messages_after,
             "size_before": self.size_before, "size_after": self.size_after,
             "tokens_before": self.tokens_before, "tokens_after": self.tokens_after,
             "fired": self.fired, "events": self.events, "dropped_messages": len(self.dropped),
             "results_cleared": self.results_cleared, "results_dropped": self.results_dropped,
             "summaries": self.summaries, "layers": [layer.to_json() for layer in self.layers]}
        if self.errors:
            d["errors"] = self.errors
        if self.timestamp is not None:
            d["timestamp"] = self.timestamp
        if self.real_tokens is not None:
            d["real_tokens"] = self.real_tokens
        if self.real_boundary is not None:
            d["real_boundary"] = self.real_boundary
        if self.findings is not None:
            d["findings"] = self.findings
        if self.reset is not None:
            d["reset_to_real"] = self.reset
        return d


class KeptInputs(Sequence):
    """The running context before each call, as ``ReplayResult.inputs`` holds it: per call a list and its length
    then. The walk extends its running context in place from call to call, so each call's input is the first
    messages of a list a later call holds too: one list per stretch of calls, not a copy per call (a copy per call
    made a long replay quadratic in time and memory). ``inputs[k]`` is call ``k``'s input as a list of its own."""

    def __init__(self) -> None:
        self._kept: list[tuple[list, int]] = []

    def append(self, context: list) -> None:
        self._kept.append((context, len(context)))

    def __len__(self) -> int:
        return len(self._kept)

    def __getitem__(self, k):
        if isinstance(k, slice):
            return [ctx[:n] for ctx, n in self._kept[k]]
        ctx, n = self._kept[k]
        return ctx[:n]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (KeptInputs, list)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]


@record
class ReplayResult:
    """A whole replay. The first fields are its public data; the ``repr=False`` ones are what a
    rerun of one call needs (the running context and engine state before each call)."""
    strategy: str                    # strategy name
    params: dict                     # resolved parameters
    label: str                       # the run's name in comparisons
    layer_names: list[str]           # the layers that ran before every call, in order
    calls: list[CallRecord]
    threshold: float | None          # Strategy.threshold's value for these parameters
    threshold_unit: str              # "size" (chars) or "tokens"
    real_events: list[dict]          # real compactions: {"call", "message_index", "kind", "trigger", "pre_tokens",
    #                                  "post_tokens"}; "call" = the first call at or after the compaction
    size_estimator: str
    token_estimator: str
    source: str = ""                 # the conversation's source (file path)
    seconds: float = 0.0
    inputs: Sequence = field(default_factory=list, repr=False)       # running context before each call (KeptInputs)
    states: list[dict] = field(default_factory=list, repr=False)     # engine state before each call
    traces: list[Trace] | None = field(default=None, repr=False)     # with keep_traces: every call's trace
    engine: Engine | None = field(default=None, repr=False)          # the replay's own engine (a fork)
    conversation: Any = field(default=None, repr=False)
    pending: bool = False            # the last call has no recorded answer (the recording ends before it)
    calibration: dict | None = None  # with calibrate: {"fixed", "hidden", "note"}, the overhead added to tokens
    calibration_off: str = ""        # without: why not, in words (calibration.calibration_words)
    offsets: list = field(default_factory=list, repr=False)    # with calibrate: the overhead at each call
    iteration_cap: int | None = 90   # the strategy's IterationPolicy cap unless the replay was given one; None: none
    layer_colors: dict = field(default_factory=dict)     # layer name -> colour (Strategy.layer_colors)
    iteration_policy: IterationPolicy | None = field(default_factory=IterationPolicy, repr=False)
    chars_per_token: float | None = None     # the token estimator's own ratio (chars/4: 4), when it has one
    mode: str = "free"               # "follow": after each real compaction the replay went on from the real context;
    #                                  "free": from its own (core.replay.follow); "free" too without real compactions
    late: dict = field(default_factory=dict)     # following reality: real compaction's call -> where the replay's
    #                                  own context would have compacted after it
    #                                  ({"call", "tokens_before", "calls_late"})

    # ------------------------------------------------ derived (views.py)
    @property
    def compactions(self) -> list[dict]:
        """Calls where messages left the context, with the layers that did it."""
        return views.compactions(self)

    def iterations(self) -> list[dict]:
        """The iteration budget walked call by call (see ``views.iterations``)."""
        return views.iterations(self)

    def iteration_totals(self) -> dict:
        return views.iteration_totals(self)

    def threshold_in(self, unit: str) -> tuple[float | None, bool]:
        """The threshold in "size" or "tokens", and whether it is exact (see ``views.threshold_in``)."""
        return views.threshold_in(self, unit)

    def summary_calls(self) -> list[int]:
        return [c.index for c in self.calls if c.summaries]

    def totals(self) -> dict:
        """One row of numbers for the whole run (the comparison table's row)."""
        return views.totals(self)

    def boundary_report(self) -> list[dict]:
        """Each real compaction next to the nearest simulated summary."""
        return views.boundary_report(self)

    def rerun(self, i: int, engine: Engine | None = None, *, cancel=None, progress=None) -> Trace:
        """The full trace of call ``i`` (for the step debugger), from the stored input and state,
        run on a fork of the replay's engine (the engine itself is never changed, so reruns may
        run side by side). ``cancel`` stops it between layers."""
        if self.traces is not None and self.traces[i] is not None:
            return self.traces[i]
        eng = engine or self.engine
        if eng is None:
            raise ValueError("this replay kept no engine; pass one")
        if not 0 <= i < len(self.inputs):
            raise IndexError(f"call {i} is not in this replay ({len(self.inputs)} calls kept)")
        from .calibration import OffsetTokens
        tokens = OffsetTokens(eng.tokens, self.offsets[i]) if self.offsets else eng.tokens
        fork = eng.fork(state=self.states[i], tokens=tokens)
        view = self.conversation
        return fork.run(self.inputs[i], conversation=view, now=self.calls[i].timestamp, keep_state=False,
                        dialect=view.dialect if view is not None else None, cancel=cancel, progress=progress)

    # ------------------------------------------------ output (output.py)
    def to_json(self, lazy: bool = False) -> dict:
        return output.to_json(self, lazy)

    def columns(self) -> list[str]:
        return output.columns(self)

    def rows(self) -> list[dict]:
        return output.rows(self)

    def to_csv(self) -> str:
        return output.to_csv(self)
