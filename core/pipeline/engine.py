"""Run a strategy's layers in order over a message list and trace every step.

``Engine`` holds what lives across runs (workspace, summarizer cache, size
cache, pipeline state such as the circuit breaker). ``Engine.run`` is one
"before the model call" pass; ``Engine.reactive`` and ``Engine.compact_tool``
are the other entry points of the seeds' agent loop. ``Engine.fork`` makes an
engine for another state, parameters or strategy that shares the caches: an
engine is never mutated by someone who only wants to run with other settings.

``run_with_variants`` is the job a viewer runs: the strategy, then each of its
variants (``Strategy.variants``) beside it, reporting progress layer by layer.
"""
from __future__ import annotations

import threading
import time
from time import perf_counter
from itertools import compress
from operator import is_not
from typing import Any, Callable, Iterable, cast

from ..runtime.record import field, record
from .. import strategies
from ..analysis.checker import check, known_before_file, load_fix_findings, load_fixes_by_identity
from ..model.conversation import Conversation
from ..layers.base import CONVERT as CONVERT_ROLE
from ..layers.base import ALL, Layer, LayerContext, LayerProgress, ReadParams
from ..model.messages import OPENAI, detect_dialect, to_anthropic, to_openai
from .size import CharsPerToken, SizeMeter
from ..strategies.base import Strategy, Variant
from ..strategies.base import ANY
from ..summarizers import CachedSummarizer, OfflineSummarizer
from .trace import CONVERT, Delta, Edit, LayerOutput, Step, Trace
from ..files.workspace import Workspace, WorkspaceError
from ..runtime.gcpause import gc_paused

_SAME = object()


def call_layer(fn: Callable[[list, LayerContext], LayerOutput], messages: list, ctx: LayerContext) -> LayerOutput:
    """A layer's pure function as the engine calls it: with the cyclic GC paused and its output frozen out of
    the GC after (``core.runtime.gcpause``). A layer over 100k messages makes an object or more per message; with
    the GC on, the full collections those set off walked every object made since the transcript was frozen (the
    earlier steps' outputs among them), and a layer's cost per message grew with the session (micro_compact: 1.7x
    from 10k to 100k messages). The CLI, the window's workers and replay all run layers through here."""
    with gc_paused():
        return fn(messages, ctx)


def _convert_output(messages: list, src: str, dst: str, system: Any) -> LayerOutput:
    if dst == OPENAI:
        conv = to_openai(messages, system)
        origin: list[int | None] = [None if o < 0 else o for o in conv.origin]
    else:
        conv = to_anthropic(messages)
        origin = list(conv.origin)
    edit = Edit(CONVERT, f"converted {len(messages)} {src} message(s) to {len(conv.messages)} {dst} message(s)")
    return LayerOutput(conv.messages, origin, [edit], {"from": src, "to": dst}, edit.text, dialect=dst)


def _delta(before: list, after: list) -> Delta | None:
    """The change of a layer that did not report one, when it is cheap to find: a list of the same
    length with some messages replaced (compared by identity, in C)."""
    if len(before) != len(after):
        return None
    return Delta.replaced(compress(range(len(after)), map(is_not, after, before)))


@record
class Engine:
    """Runs a strategy's pipeline: its parameters, workspace, summarizer, size meter and token estimator, and the
    state its layers carry from one call to the next (the circuit breaker, a replay's memo)."""
    strategy: Strategy
    params: dict = field(default_factory=dict)
    workspace: Workspace | None = None
    summarizer: Any = None      # a Summarizer (kept as a CachedSummarizer); None: the offline one
    meter: SizeMeter = field(default_factory=SizeMeter)
    tokens: Any = None
    state: dict = field(default_factory=dict)
    order: list[str] | None = None
    check: bool = True
    # note the parameters each step read (``Step.reads``, what ``run(reuse=...)`` needs); a replay that keeps no
    # trace turns it off on its own fork (its steps then say "not known": None)
    track_reads: bool = True
    # the layers explain the steps that change nothing (``LayerContext.explain``): False in a replay that keeps no trace
    explain: bool = True
    # what layers carry from one call to the next (``LayerContext.memo``): a dict on an engine that runs over a
    # growing list call after call (a replay's own fork, for its walk), None elsewhere; a fork has its own
    memo: dict | None = None
    # what every run over one conversation reads from it the same way (its calls answered before the file, the
    # load's fixes): kept for the last conversation and meta map run over (a replay runs once per model call)
    _per_conversation: tuple | None = field(default=None, init=False, repr=False, compare=False)

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
        workspace, summarizer = self.workspace, self.summarizer
        assert workspace is not None and summarizer is not None          # (made in __post_init__)
        return LayerContext(self.params, workspace, summarizer, self.meter, self.tokens,
                            dict(self.state if state is None else state), meta or {}, now, system, tools, cancel,
                            self.memo, self.explain)

    def fork(self, *, state: dict | None = None, params: dict | None = None, strategy: str | Strategy | None = None,
             tokens: Any = _SAME, order: list[str] | None | object = _SAME, check: bool | None = None) -> "Engine":
        """A new Engine that shares this one's workspace, summarizer (and its cache) and size meter,
        with its own copy of ``state`` (default: this engine's state now). ``params`` are resolved
        against the strategy (default: this engine's; a new ``strategy`` starts from its defaults and
        its own token estimator). Running the fork never changes this engine."""
        st = strategies.get(strategy) if isinstance(strategy, str) else (strategy or self.strategy)
        same = st is self.strategy
        if params is None:
            params = dict(self.params) if same else {}
        if tokens is _SAME:
            tokens = self.tokens if same else None
        if order is _SAME:
            new_order = list(self.order) if (same and self.order is not None) else None
        else:
            new_order = cast("list[str] | None", order)
        return Engine(st, dict(params), workspace=self.workspace, summarizer=self.summarizer, meter=self.meter,
                      tokens=tokens, state=dict(self.state if state is None else state), order=new_order,
                      check=self.check if check is None else check)

    def _step(self, layer_name: str, description: str, fn, messages: list, ctx: LayerContext,
              dialect: str, role: str = "", before_file=(), findings_before: list | None = None,
              fixes: dict | None = None, params_src: Any = None, known: Step | None = None) -> tuple[Step, str]:
        """One layer's step. ``params_src``: the run's parameters (each step reads its own ``ReadParams`` of them);
        ``known``: the step before, whose output is ``messages`` when it has one (its figures are this input's:
        the estimators are pure functions of the list, and the run's system prompt and tools are the same)."""
        internal = None
        state_in = ctx.state          # (never changed in place by the run: a layer's update makes a new dict)
        if params_src is None:
            params_src = ctx.params
        # a trace kept to be rerun notes what each layer read (``ReadParams``); a replay that keeps no trace gives
        # each layer a plain copy (a read costs a dict lookup in C, not a Python call)
        tracked = self.track_reads
        params = ctx.params = ReadParams(params_src) if tracked else params_src.copy()
        t0 = perf_counter()
        try:
            out = fn(messages, ctx)       # (the run has the cyclic GC paused: see ``call_layer``)
        except WorkspaceError:
            raise                 # the workdir cannot take the layer's files: bad input, said by the caller
        except Exception as e:  # a bug in a layer: shown as that layer's error, never a crash of the tool
            import traceback
            internal = traceback.format_exc()
            out = LayerOutput.unchanged(messages, error=f"internal error in Compactscope's {layer_name} layer "
                                        f"({type(e).__name__}: {str(e)[:200]}); its input is passed on unchanged")
        dt = perf_counter() - t0
        new_dialect = out.dialect or dialect
        meter, tok = self.meter, self.tokens
        # chars/N is the size divided: found from the size just measured (what its ``tokens`` computes again)
        cpt = tok.cpt if tok.__class__ is CharsPerToken else 0
        if known is not None and known.messages is messages:
            size_before, tokens_before = known.size_after, known.tokens_after
        else:
            size_before = meter.size(messages)
            tokens_before = size_before // cpt if cpt else tok.tokens(messages, meter, system=ctx.system,
                                                                      tools=ctx.tools)
        after = out.messages
        if after is messages:
            size_after, tokens_after = size_before, tokens_before
        else:
            # (a list measured as it is already, e.g. an earlier step's input given back, needs no delta: found in C
            # over the whole list, it was the cost of such a step)
            delta = None if meter.knows(after) else out.delta or _delta(messages, after)
            if delta is not None:     # the output's totals from the input's, at the cost of the change
                meter.derive(messages, after, map(messages.__getitem__, delta.removed),
                             map(after.__getitem__, delta.added))
            size_after = meter.size(after)
            tokens_after = size_after // cpt if cpt else tok.tokens(after, meter, system=ctx.system,
                                                                    tools=ctx.tools)
        if not self.check:
            findings = []
        elif after is messages and new_dialect == dialect and findings_before is not None:
            findings = findings_before        # the same list: the same findings (the checker is a pure function)
        else:
            findings = load_fix_findings(after, fixes) + check(after, new_dialect, before_file=before_file)
        if tracked:
            reads = params.reads          # (a ReadParams: see above)
            read: frozenset | None = None if ALL in reads else frozenset(reads)
        else:
            read = None                   # not known (every parameter, for ``run(reuse=...)``)
        step = Step(layer_name, messages, after, out.origin, out.edits, out.vars, out.note,
                    size_before, size_after, tokens_before, tokens_after, findings, out.triggered, out.error,
                    out.summary, new_dialect, dt, description, role, internal, read, state_in, out.plugin_failed)
        if out.state:
            ctx.state = {**ctx.state, **out.state}    # a new dict: each step's ``state_before`` stays as it was
        return step, new_dialect

    def run(self, messages: list, *, conversation: Any = None, now: float | None = None,
            cancel: threading.Event | None = None, layers: Iterable[str] | None = None,
            keep_state: bool = True, dialect: str | None = None, system: Any = None,
            progress: Callable[[LayerProgress], Any] | None = None, reuse: Trace | None = None) -> Trace:
        """One pass of the strategy's layers (or the named ``layers``) over ``messages``.
        ``progress(LayerProgress)`` is called before each layer runs; ``cancel`` (an Event) stops
        the run between layers (a summarizer may also stop during its call). ``reuse``: an earlier trace
        over the same list; its steps are kept up to the first layer that read a parameter which has
        changed since (or that differs, or failed), and the run goes on from there: a parameter of
        the last layer re-runs the last layer only. The whole run has the cyclic GC paused (``call_layer``): the
        steps, their sizes and findings are long-lived too."""
        with gc_paused():
            return self._run(messages, conversation, now, cancel, layers, keep_state, dialect, system, progress, reuse)

    def bind_tokens(self, conversation: Any) -> None:
        """Bind the token estimator to ``conversation`` when it reads the recorded usage (Claude Code's: what it
        learns from the file is the same for every list of it); ``run`` does it, and a replay before its first
        call, so the history's tokens at call 0 are counted as at every later call."""
        bind = getattr(self.tokens, "bind", None)
        if bind is None:
            return
        try:
            bind(conversation, meter=self.meter)     # the message figures shared through the meter
        except TypeError:                            # an estimator from outside with bind(conversation)
            bind(conversation)

    def _run(self, messages: list, conversation: Any, now: float | None, cancel: threading.Event | None,
             layers: Iterable[str] | None, keep_state: bool, dialect: str | None, system: Any,
             progress: Callable[[LayerProgress], Any] | None, reuse: Trace | None) -> Trace:
        meta = conversation.meta_by_identity() if conversation is not None else {}
        if conversation is not None:
            self.bind_tokens(conversation)
        system = system if system is not None else (conversation.system if conversation is not None else None)
        dialect = dialect or (conversation.dialect if conversation is not None else detect_dialect(messages))
        dialect_in = dialect
        ctx = self.context(meta=meta, now=now, system=system,
                           tools=conversation.tools if conversation is not None else None, cancel=cancel)
        state_before = ctx.state           # (a copy of the engine's; steps replace it, never change it in place)
        params_src = ctx.params
        todo = [self.strategy.layer(n) for n in layers] if layers is not None else \
            (self.strategy.layers if self.order is None else self.layers)     # (iterated only: no copy per run)
        steps: list[Step] = []
        made: Step | None = None                       # the last step made by this run (its figures are current)
        current = messages
        before, fixes = self._conversation_facts(conversation, meta)
        converting = self.strategy.dialect not in (dialect, ANY)  # ANY: a plugin that takes the input's own dialect
        kept = 0 if reuse is None else \
            self._reusable(reuse, messages, (["convert"] if converting else []) + [item.name for item in todo],
                           state_before, dialect)
        if reuse is not None and (kept or (reuse.input is messages and reuse.dialect_in == dialect)):
            input_findings = reuse.input_findings if self.check else []
        else:
            input_findings = (load_fix_findings(messages, fixes) + check(messages, dialect, before_file=before)
                              if self.check else [])
        if kept and reuse is not None:
            steps = list(reuse.steps[:kept])
            current, dialect = steps[-1].messages, steps[-1].dialect
            state = reuse.steps[kept].state_before if kept < len(reuse.steps) else reuse.state_after
            ctx.state = dict(state or {})
            if converting:
                converting, kept = False, kept - 1
        if converting:
            step, dialect = self._step("convert", f"convert to the {self.strategy.dialect} dialect",
                                       lambda m, c: _convert_output(m, dialect, self.strategy.dialect, system),
                                       current, ctx, dialect, CONVERT_ROLE, before, fixes=fixes,
                                       params_src=params_src)
            steps.append(step)
            current, made = step.messages, step
        for k, layer in enumerate(todo):
            if k < kept:
                continue
            if cancel is not None and cancel.is_set():      # (``ctx.cancelled()``, inlined)
                break
            if progress is not None:
                progress(LayerProgress(k + 1, len(todo), layer))
            step, dialect = self._step(layer.name, layer.description, layer.fn, current, ctx, dialect, layer.role,
                                       before, steps[-1].findings if steps else input_findings, fixes,
                                       params_src, made)
            steps.append(step)
            current, made = step.messages, step
        if keep_state:
            self.state = dict(ctx.state)
        # (a replay's own fork keeps no trace: its parameters never change while it walks, none is copied per call)
        params = self.params if not self.track_reads else dict(self.params)
        return Trace(self.strategy.name, params, messages, steps, self.meter.name, self.tokens.name,
                     input_findings, state_before, ctx.state, [s.layer for s in steps], dialect, dialect_in)

    def _conversation_facts(self, conversation: Any, meta: dict) -> tuple[frozenset, dict]:
        """The calls made before an excerpt's first line and the values the load made well-typed (the file's are
        bad) of ``conversation``: on a replay's own fork, kept while its runs are over the same view and meta map."""
        pc = self._per_conversation
        if pc is not None and pc[0] is conversation and pc[1] is meta and pc[2] == len(meta):
            return pc[3], pc[4]
        before, fixes = known_before_file(conversation), load_fixes_by_identity(meta)
        if conversation is not None and self.memo is not None:     # (a replay's own fork: the same view each call)
            self._per_conversation = (conversation, meta, len(meta), before, fixes)
        return before, fixes

    def _reusable(self, prev: Trace | None, messages: list, names: list[str], state: dict, dialect: str) -> int:
        """How many leading steps of ``prev`` this run can keep (see ``run``)."""
        if prev is None or prev.input is not messages or prev.strategy != self.strategy.name or \
                prev.state_before != state or prev.dialect_in != dialect or \
                prev.size_estimator != self.meter.name or prev.token_estimator != self.tokens.name:
            return 0
        k = 0
        for name, s in zip(names, prev.steps):
            if s.layer != name or s.error or s.internal or s.reads is None or s.state_before is None:
                break
            if any(prev.params.get(p, _SAME) != self.params.get(p, _SAME) for p in s.reads):
                break
            k += 1
        return k

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
    st = strategies.get(strategy) if isinstance(strategy, str) else strategy
    return Engine(st, params or {}, **kw).run(messages, **run_kw)


# ------------------------------------------------------------------ the viewer's job
@record
class VariantRun:
    """A variant run beside the main one: its trace (None when it failed) or why it failed."""
    variant: Variant
    trace: Trace | None = None
    error: str | None = None

    @property
    def step(self) -> Step | None:
        """The step to put beside the main run's step of the same role."""
        role = self.variant.compare_role
        if self.trace is None:
            return None
        for s in self.trace.steps:
            if role is None or s.role == role:
                return s
        return None


@record
class PipelineResult:
    """What ``run_with_variants`` returns: the main trace, the variants beside it, how long it
    took, whether it was cancelled, the resolved parameters, and (for a replayed model call) the
    call it shows."""
    trace: Trace
    variants: list[VariantRun] = field(default_factory=list)
    seconds: float = 0.0
    cancelled: bool = False
    params: dict = field(default_factory=dict)
    call_index: int | None = None

    def variant(self, name: str) -> VariantRun | None:
        return next((v for v in self.variants if v.variant.name == name), None)


def run_with_variants(engine: Engine, messages: list, conversation: Conversation | None = None, *,
                      variants: bool = True, cancel: threading.Event | None = None,
                      progress: Callable[[str], Any] | None = None,
                      reuse: "PipelineResult | None" = None) -> PipelineResult:
    """Run ``engine`` over ``messages``, then each variant of its strategy that the run is not
    already (``Strategy.companion_variants``) on a fork, up to its ``until_role`` layer. A
    variant that fails never sinks the main result. ``progress(text)`` is called before each
    layer ("2/4 L1 snip") and before each variant (its title). ``reuse``: the previous result over
    the same messages; each run keeps its steps up to the first layer a changed parameter concerns."""
    t0 = time.perf_counter()
    report = (lambda p: progress(p.text)) if progress is not None else None
    trace = engine.run(messages, conversation=conversation, cancel=cancel, progress=report,
                       reuse=reuse.trace if reuse is not None else None)
    runs: list[VariantRun] = []
    strategy = engine.strategy
    for v in (strategy.companion_variants(engine.params) if variants else []):
        if cancel is not None and cancel.is_set():
            break
        layers = strategy.layers_until(v.until_role)
        if not layers:
            continue
        if progress is not None:
            progress(v.title)
        try:
            fork = engine.fork(params={**engine.params, **v.params}, state=trace.state_before, order=None)
            before = reuse.variant(v.name) if reuse is not None else None
            runs.append(VariantRun(v, fork.run(messages, conversation=conversation, cancel=cancel, layers=layers,
                                               keep_state=False, reuse=before.trace if before else None)))
        except Exception as e:  # noqa: BLE001 - the comparison must never sink the main result
            runs.append(VariantRun(v, None, f"the {v.title} could not run: {type(e).__name__}: {e}"))
    cancelled = bool(cancel is not None and cancel.is_set())
    return PipelineResult(trace, runs, time.perf_counter() - t0, cancelled, dict(engine.params))
