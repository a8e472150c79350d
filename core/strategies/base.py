"""A strategy: an ordered list of layers plus parameters, all overridable, and the features
the views, the CLI and replay read from it instead of testing strategy or layer names:

* ``Threshold``: the value the strategy compacts at, its unit, and how a drag of the chart's
  line maps back to parameters (``Strategy.drag_threshold``);
* ``Variant``: another way to run the same strategy shown beside the main run (s08's README snip);
* ``CrossCheck``: compare a finished run with a reference implementation (hermes against
  hermes-agent), answering a typed ``Verdict``;
* ``IterationPolicy``: the agent loop's iteration cap that replay walks call by call;
* layer roles (``core.layers.base``) and their colours (``Strategy.layer_colors``).
"""
from __future__ import annotations

import linecache
from typing import Any, Callable

from ..runtime.record import field, record
from ..layers.base import BUDGET, MANUAL, MICRO, REACTIVE, SNIP, SUMMARY, Layer
from ..layers.params import Param  # noqa: F401 - where strategies and plugins have always found it
from ..model.messages import ANTHROPIC

ANY = "any"                      # a strategy dialect: the input's own, no conversion (a plugin's)

SIZE, TOKENS = "size", "tokens"         # threshold units: chars of the size meter, or estimated tokens

# colours by layer role (charts, markers); a layer without one gets the palette colour of its position
ROLE_COLORS = {BUDGET: "#0891b2", SNIP: "#9333ea", MICRO: "#16a34a", SUMMARY: "#dc2626", REACTIVE: "#ea580c",
               MANUAL: "#ea580c"}
PALETTE = ("#dc2626", "#2563eb", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#db2777", "#65a30d", "#7c3aed",
           "#ca8a04")


@record(frozen=True)
class Threshold:
    """Where a strategy compacts. ``param``: the parameter that IS the threshold (a chart drag
    sets it); ``fn(params)``: a threshold derived from several parameters; ``to_params(value,
    params) -> overrides``: how a drag of a derived threshold maps back to parameters (without
    it a derived line is shown, not draggable). ``formula`` says in words how it is computed."""
    unit: str = SIZE
    param: str | None = None
    fn: Callable[[dict], float] | None = None
    to_params: Callable[[float, dict], dict] | None = None
    formula: str = ""

    def value(self, params: dict) -> float | None:
        if self.fn is not None:
            return float(self.fn(params))
        if self.param is not None and params.get(self.param) is not None:
            try:
                return float(params[self.param])
            except (TypeError, ValueError):
                return None
        return None

    @property
    def movable(self) -> bool:
        return self.to_params is not None or (self.param is not None and self.fn is None)

    @property
    def label(self) -> str:
        """What the chart's line is called: the parameter it edits, or "compaction threshold"."""
        return self.param if self.param is not None and self.fn is None else "compaction threshold"


@record(frozen=True)
class Variant:
    """Another way to run the strategy, shown beside the main run when it is not the one
    selected: the main run's parameters with ``overrides``, only the layers up to and including
    the first of role ``until_role`` (all layers when None). ``step_role``: the role of the step
    the views put side by side with the main run's (default: ``until_role``)."""
    name: str
    title: str
    overrides: tuple[tuple[str, Any], ...]
    until_role: str | None = None
    step_role: str | None = None
    description: str = ""

    @property
    def params(self) -> dict:
        return dict(self.overrides)

    def active(self, params: dict) -> bool:
        """The main run already is this variant."""
        return all(params.get(k) == v for k, v in self.overrides)

    @property
    def compare_role(self) -> str | None:
        return self.step_role or self.until_role


MATCH, DIFFER, SKIPPED = "match", "differ", "skipped"


@record(frozen=True)
class Verdict:
    """A cross-check's answer: ``status`` MATCH, DIFFER, or SKIPPED (nothing was compared: the
    reference is not installed, the run did not compact, ...); ``text`` says it in words."""
    status: str
    text: str

    @classmethod
    def from_text(cls, text: str, match: str, not_compared: tuple = ()) -> "Verdict":
        """An oracle's answer in words: MATCH when it starts with ``match``, SKIPPED when it is one of
        ``not_compared``, else DIFFER (the first difference)."""
        if text.startswith(match):
            return cls(MATCH, text)
        return cls(SKIPPED if text in not_compared else DIFFER, text)

    @property
    def ok(self) -> bool:
        return self.status == MATCH

    @property
    def failed(self) -> bool:
        return self.status == DIFFER


@record(frozen=True)
class CrossCheck:
    """Compare a finished ``Trace`` of the strategy with a reference implementation. ``check`` is a
    function ``trace -> Verdict``, or its name as ``"package.module:function"`` (imported when the
    check runs: the checking module sits above the pipeline it drives, so a strategy only names it).
    It may be slow (it runs the reference); a failure is a DIFFER verdict, never an exception."""
    name: str                                  # e.g. "hermes-agent 0.19.0"
    check: Callable[[Any], Verdict] | str
    description: str = ""

    def function(self) -> Callable[[Any], Verdict]:
        if callable(self.check):
            return self.check
        import importlib
        mod, _, attr = self.check.partition(":")
        return getattr(importlib.import_module(mod), attr)

    def run(self, trace) -> Verdict:
        try:
            v = self.function()(trace)
        except Exception as e:  # noqa: BLE001 - a broken reference is a finding, not a crash
            return Verdict(DIFFER, f"the cross-check failed: {type(e).__name__}: {e}")
        finally:
            # the reference's package is imported by its first check (hermes-agent, inspect-ai); an import hook
            # that reads sources (the window's: PySide6's signature support calls inspect.getsource) left each
            # module's lines in linecache: ~15 MB for hermes-agent, kept for nothing (read again if needed)
            linecache.clearcache()
        return v if isinstance(v, Verdict) else Verdict(DIFFER, str(v))


@record(frozen=True)
class IterationPolicy:
    """The agent loop's iteration cap that replay walks call by call (``ReplayResult.iterations``):
    every model call consumes one; a call before which the context was compacted also consumed one
    for the compaction restart, refunded (``refund_compaction``); fresh for every user turn
    (``per_user_turn``), like hermes-agent's turn loop."""
    cap: int = 90
    refund_compaction: bool = True
    per_user_turn: bool = True
    source: str = "seed 002's turn-loop cap (hermes-agent's max_iterations default)"


@record(frozen=True)
class Strategy:
    """A compaction strategy: its pipeline of layers (run in order before every model call), its parameters,
    the dialect its layers work on, and its threshold."""
    name: str
    title: str
    description: str
    layers: tuple[Layer, ...]                 # the pipeline before every model call, in order
    params: tuple[Param, ...]
    dialect: str = ANTHROPIC                  # the message dialect its layers work on
    extra_layers: tuple[Layer, ...] = ()      # layers runnable on demand (reactive, compact tool, ...)
    threshold_param: str | None = None        # shorthand for threshold=Threshold(threshold_unit, param)
    threshold_unit: str = SIZE                # "size" (chars) or "tokens"
    token_estimator: Callable[[], Any] | None = None   # factory; None = chars/4
    reactive_layer: str | None = None
    compact_tool_layer: str | None = None
    notes: dict = field(default_factory=dict)
    threshold: Threshold | None = None        # None: made from threshold_param / threshold_unit
    variants: tuple[Variant, ...] = ()
    cross_check: CrossCheck | None = None
    iteration_budget: IterationPolicy | None = None     # None: the agent loop has no iteration cap (s08, Claude Code)
    infer: Callable[[Any], Any] | None = None   # conversation -> Inferred (core.strategies.infer_params)

    def __post_init__(self):
        th = self.threshold
        if th is None:
            fn = self.notes.get("threshold_fn") if isinstance(self.notes, dict) else None
            th = Threshold(self.threshold_unit, self.threshold_param, fn if callable(fn) else None)
            object.__setattr__(self, "threshold", th)
        object.__setattr__(self, "threshold_unit", th.unit)
        object.__setattr__(self, "threshold_param", th.param if th.fn is None else None)

    @property
    def layer_names(self) -> list[str]:
        return [layer.name for layer in self.layers]

    def layers_until(self, role: str | None) -> list[str] | None:
        """The layer names up to and including the first of ``role`` (all when role is None;
        None when no layer has it)."""
        if role is None:
            return self.layer_names
        for k, layer in enumerate(self.layers):
            if layer.role == role:
                return self.layer_names[:k + 1]
        return None

    def layer_role(self, name: str) -> str:
        try:
            return self.layer(name).role
        except KeyError:
            return ""

    def layer_colors(self) -> dict[str, str]:
        """A colour per layer (pipeline layers, then on-demand ones): by role, else the next palette
        colour no other layer of the strategy has."""
        layers = self.layers + self.extra_layers
        out = {item.name: ROLE_COLORS[item.role] for item in layers if item.role in ROLE_COLORS}
        free = [c for c in PALETTE if c not in out.values()] or list(PALETTE)
        k = 0
        for item in layers:
            if item.name not in out:
                out[item.name] = free[k % len(free)]
                k += 1
        return {item.name: out[item.name] for item in layers}

    def threshold_value(self, params: dict) -> float | None:
        return self.threshold.value(params) if self.threshold is not None else None

    def drag_threshold(self, value: float, params: dict) -> dict:
        """The parameters after the chart's threshold line was dragged to ``value``: the threshold
        parameter set to it (``Param.clamp``: rounded and clamped to what the parameter accepts), or what the
        threshold's ``to_params`` says. Unchanged when the threshold is not movable. Not validated here: the
        caller resolves them, once (``SetupPart.set_params``)."""
        th = self.threshold
        params = dict(params)
        if th is None or not th.movable:
            return params
        if th.to_params is not None:
            return {**params, **th.to_params(float(value), params)}
        if th.param is None:
            return params
        return {**params, th.param: self.param(th.param).clamp(value)}

    def companion_variants(self, params: dict) -> list[Variant]:
        """The variants to run beside a main run with ``params`` (those it is not already)."""
        return [v for v in self.variants if not v.active(params)]

    def layer(self, name: str) -> Layer:
        for layer in self.layers + self.extra_layers:
            if layer.name == name:
                return layer
        known = ", ".join(layer.name for layer in self.layers + self.extra_layers)
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
