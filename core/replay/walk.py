"""The walk: the strategy's pipeline before every model call of a recorded conversation.

Before each model call (each assistant message of the recording) the running context is the
previous compacted context plus the recorded messages since; the strategy's pipeline runs on it
(one engine for the whole replay, a fork of the caller's, so its state, e.g. the circuit breaker,
persists from call to call) and the compacted result is what the next call starts from, as if
the agent had gone on with it.
"""
from __future__ import annotations

import time
from bisect import bisect_left
from functools import partial
from itertools import filterfalse
from operator import eq, is_not
from typing import Any, Callable, Iterable

from ..runtime.record import fields, record
from .. import strategies
from ..model.conversation import Conversation, MessageMeta
from ..model.messages import OPENAI, block_type, blocks, to_anthropic, to_openai
from ..pipeline.engine import Engine
from ..strategies.base import IterationPolicy
from ..pipeline.size import SIZE, is_additive
from ..strategies.base import Strategy
from ..strategies.base import ANY
from ..pipeline.trace import CLEARING, CountedEdits, SameOrigin, Trace
from .calibration import Calibrator, default_calibration, measure
from .records import CallRecord, KeptInputs, LayerRecord, ReplayResult
from ..runtime.gcpause import gc_paused

REAL_SUMMARY_PREFIX = "This session is being continued from a previous conversation"


@record(frozen=True)
class ReplayOptions:
    """How to replay (each also a keyword of ``replay``):

    * ``check``: run the API checker on every step (slower);
    * ``keep_traces``: keep every call's full trace; ``keep_inputs``: keep the running context and
      engine state before each call (what ``ReplayResult.rerun`` needs);
    * ``skip_real_summaries``: leave out the summaries of the recording's own compactions;
    * ``pending_call``: when the recording ends after the last assistant message with more
      messages, replay the model call they were waiting for too (its ``message_index`` is the
      message count);
    * ``calibrate``: add the recorded overhead to every token estimate (``calibration``); None =
      when the recording has usage and the strategy's threshold is in tokens;
    * ``max_calls``: stop after that many calls;
    * ``iteration_cap``: the iteration budget's cap (default: the strategy's);
    * ``manual_compacts``: where the recording holds a real manual compaction (Claude Code's
      ``/compact``) and the strategy has a ``manual_compact`` layer, that call's pipeline ends with it;
    * ``free``: the free-running what-if: after a real compaction the replay goes on from its own context
      (its own summaries all the way). Default (False): it follows reality: at each real compaction the
      pipeline runs once more on its own context up to the real boundary (does it compact there?), then the
      next call starts from the real post-compaction context (the real summary and what followed), so each
      real compaction is predicted from the start the agent really had (``core.replay.follow``).
    """
    check: bool = False
    keep_traces: bool = False
    keep_inputs: bool = True
    skip_real_summaries: bool = True
    pending_call: bool = True
    calibrate: bool | None = None
    max_calls: int | None = None
    iteration_cap: int | None = None
    manual_compacts: bool = True
    free: bool = False


OPTION_NAMES = frozenset(f.name for f in fields(ReplayOptions))


def replay(conversation, strategy: str | Strategy = "s08", params: dict | None = None, *,
           engine: Engine | None = None, label: str | None = None, options: ReplayOptions | None = None,
           progress: Callable[[int, int], Any] | None = None, cancel=None, **kw) -> ReplayResult:
    """Run the strategy's pipeline before every model call of ``conversation`` (a Conversation, a
    LoadResult or a message list).

    ``engine``: an existing Engine to fork (its workspace, summarizer cache and token estimator are
    reused, its state is the starting state; it is never changed). Otherwise one is made from
    ``strategy``, ``params`` and the engine keywords in ``kw`` (workspace, summarizer, tokens, ...).
    ``options`` (or its fields as keywords, see ``ReplayOptions``) say how to replay.
    ``progress(done, total)`` is called now and then; ``cancel`` (an Event) stops the walk early."""
    opts = {k: kw.pop(k) for k in list(kw) if k in OPTION_NAMES}
    options = ReplayOptions(**{**(vars(options) if options is not None else {}), **opts})
    st = strategies.get(strategy) if isinstance(strategy, str) else strategy
    base = engine if engine is not None else Engine(st, dict(params or {}), **kw)
    return _Walk(_as_conversation(conversation), base.fork(check=options.check), options, label).run(progress, cancel)


def compare(conversation, configs: Iterable, **kw) -> list[ReplayResult]:
    """Replay the same conversation under several (label, strategy, params) configurations (or
    ``RunSpec``s, or dicts with those keys). Calibration (``calibrate=None``) is decided once for
    all runs, so their tokens compare: on when the recording has usage and any of the strategies
    counts its threshold in tokens. A set ``cancel`` Event stops every remaining run."""
    cfgs = []
    for cfg in configs:
        if isinstance(cfg, dict):
            cfgs.append((cfg.get("label"), cfg.get("strategy", "s08"), cfg.get("params") or {}))
        elif hasattr(cfg, "strategy") and hasattr(cfg, "params"):
            cfgs.append((cfg.label, cfg.strategy, cfg.params))
        else:
            cfgs.append(tuple(cfg))
    if kw.get("calibrate") is None:
        kw["calibrate"] = default_calibration(_as_conversation(conversation), [s for _, s, _ in cfgs])
    out = []
    for label, strat, params in cfgs:
        if kw.get("cancel") is not None and kw["cancel"].is_set():
            break
        out.append(replay(conversation, strat, params, label=label, **kw))
    return out


# ------------------------------------------------------------------ the parts of the walk
class _View:
    """What ``Engine.run`` reads from a conversation, with a prepared identity map."""

    def __init__(self, conv, meta: dict | None = None, dialect: str | None = None):
        self.conversation = conv          # the real one (estimators that read recorded usage bind to it)
        self.extra = getattr(conv, "extra", None) or {}
        self.system = getattr(conv, "system", None)
        self.tools = getattr(conv, "tools", None)
        self.dialect = dialect or getattr(conv, "dialect", "anthropic")
        self._meta = meta if meta is not None else (conv.meta_by_identity() if conv is not None else {})

    def meta_by_identity(self) -> dict:
        return self._meta


def _as_conversation(conv) -> Conversation:
    if isinstance(conv, Conversation):
        return conv
    if isinstance(conv, list):
        return Conversation(list(conv))
    if hasattr(conv, "main"):
        return conv.main
    raise TypeError(f"replay takes a Conversation, a LoadResult or a message list, not {type(conv).__name__}")


@record
class Prepared:
    """The conversation in the strategy's dialect: ``msgs``, their ``metas``, ``origin`` (the
    conversation index of each, None when made by the conversion), ``skip`` (indices left out:
    the recording's own summaries) and ``inv`` (conversation index -> first prepared index)."""
    msgs: list
    metas: list
    origin: list
    skip: set
    inv: dict


def prepare(conv: Conversation, dialect: str, skip_real_summaries: bool) -> Prepared:
    # Messages a real compaction re-sent (Inspect and hermes segments hold the whole compacted context,
    # marked ``copy_of``) are not new history: they are left out before any conversion (so a copy is never
    # merged into a new message), and their indices map to the next message kept.
    copies = {i for i, m in enumerate(conv.meta) if "copy_of" in m.extra}
    keep = [i for i in range(len(conv.messages)) if i not in copies] if copies else None
    msgs = conv.messages if keep is None else [conv.messages[i] for i in keep]
    origin = list(range(len(msgs)))
    if conv.dialect != dialect:
        # a summary the replay leaves out stays a message of its own (to_anthropic would merge a summary
        # that follows tool results into them, and it could no longer be left out)
        real = {e.summary_index for e in conv.events if e.summary_index is not None} if skip_real_summaries \
            else set()
        pos = {c: k for k, c in enumerate(keep)} if keep is not None else None
        cuts = sorted(pos[c] if pos is not None else c for c in real if pos is None or c in pos)
        msgs, origin = _convert(msgs, conv.system, dialect, cuts)
    if keep is not None:
        origin = [keep[o] if o is not None and 0 <= o < len(keep) else o for o in origin]
    skip: set[int] = set()
    if skip_real_summaries and conv.events:
        real = {e.summary_index for e in conv.events if e.summary_index is not None}
        for i, o in enumerate(origin):
            if o in real or _is_real_summary(msgs[i]):
                skip.add(i)
    metas = [conv.meta_at(o) if o is not None and o >= 0 else MessageMeta() for o in origin]
    inv: dict = {}
    for i, o in enumerate(origin):
        if o is not None and o >= 0 and o not in inv:
            inv[o] = i
    if copies:
        kept = sorted(inv.items())
        at = 0
        for c in sorted(copies):
            while at < len(kept) and kept[at][0] < c:
                at += 1
            inv[c] = kept[at][1] if at < len(kept) else len(msgs)
    return Prepared(msgs, metas, origin, skip, inv)


def _convert(msgs: list, system, dialect: str, cuts: list) -> tuple[list, list]:
    """``msgs`` in ``dialect``, converted run by run between the ``cuts`` (each cut index is a run of one
    message), so no message is merged across a cut; origin indices are into ``msgs``."""
    bounds = sorted({0, len(msgs), *cuts, *(c + 1 for c in cuts)} & set(range(len(msgs) + 1)))
    out: list = []
    origin: list = []
    for a, b in zip(bounds, bounds[1:]):
        run = msgs[a:b]
        converted = to_openai(run, system if a == 0 else None) if dialect == OPENAI else to_anthropic(run)
        out.extend(converted.messages)
        origin.extend(o + a if o is not None and o >= 0 else o for o in converted.origin)
    return out, origin


def _is_real_summary(m) -> bool:
    if not isinstance(m, dict) or m.get("role") != "user":
        return False
    c = m.get("content")
    text = c if isinstance(c, str) else next((b.get("text", "") for b in blocks(m) if block_type(b) == "text"), "")
    return isinstance(text, str) and text.startswith(REAL_SUMMARY_PREFIX)


def call_positions(p: Prepared, pending_call: bool, max_calls: int | None) -> tuple[list[int], bool]:
    """The prepared index of each model call (its assistant message; the message count for a
    pending last call) and whether the last one is pending."""
    msgs = p.msgs
    call_at = [i for i, m in enumerate(msgs) if isinstance(m, dict) and m.get("role") == "assistant"
               and i not in p.skip]
    pending = False
    if pending_call and (not call_at or call_at[-1] < len(msgs) - 1) and \
            any(i not in p.skip for i in range(call_at[-1] + 1 if call_at else 0, len(msgs))):
        call_at.append(len(msgs))     # the conversation ends before a model call: that call too
        pending = True
    if max_calls is not None:
        call_at = call_at[:max_calls]
    return call_at, pending


def real_compactions(conv: Conversation, p: Prepared, call_at: list[int]) -> list[dict]:
    """The recording's own compactions, each at the first call at or after its message."""
    out = []
    n = len(call_at)
    for e in conv.events:
        mi = p.inv.get(e.message_index, e.message_index)
        k = bisect_left(call_at, mi)            # (the calls are in order: the first at or after, found by halving)
        call = k if k < n else None
        out.append({"call": call, "message_index": e.message_index, "kind": e.kind, "trigger": e.trigger,
                    "pre_tokens": e.pre_tokens, "post_tokens": e.post_tokens})
    return out


class _RawGrowth:
    """Size and tokens of the whole recorded history up to each call, never compacted, computed
    incrementally: from running sums of per-message figures when the estimator is additive (every
    built-in one but count_tokens), else the estimator over the growing list."""

    def __init__(self, meter, tokens, view):
        self.meter, self.tokens, self.view = meter, tokens, view
        self.additive = is_additive(tokens)
        self.size_sum = self.est_sum = self.n = 0
        self.lead = None
        self.history: list = []

    def add(self, new: list, count: bool = True) -> tuple[int, int | None]:
        """The size and tokens of the history with ``new`` appended; the tokens None when not ``count`` and the
        estimator is not additive (the caller has them from elsewhere, or asks ``tokens_now``)."""
        meter, tok = self.meter, self.tokens
        size_sum = meter.figure_sum(new)
        self.size_sum += size_sum
        if self.n == 0 and new:
            self.lead = new[0]
        self.n += len(new)
        size = 2 + self.size_sum + 2 * (self.n - 1) if self.n else 2
        if self.additive:
            # (the size figure summed again would be the same sum: every estimator of the size figure sums it)
            self.est_sum += size_sum if tok.figure == SIZE else meter.figure_sum(new, tok.figure, tok.figure_fn)
            return size, tok.tokens_from(self.est_sum, self.n, self.lead, system=self.view.system,
                                         tools=self.view.tools)
        self.history = meter.extend(self.history, new)      # ours alone: extended in place, the totals carried over
        return size, self.tokens_now() if count else None

    def tokens_now(self) -> int:
        """The estimator over the whole history so far (a not additive one)."""
        return self.tokens.tokens(self.history, self.meter, system=self.view.system, tools=self.view.tools)


def _is_user_turn(m) -> bool:
    """A message the user typed: role user with text (not only tool results)."""
    if not isinstance(m, dict) or m.get("role") != "user":
        return False
    c = m.get("content")
    if isinstance(c, str):
        return bool(c.strip())
    if not isinstance(c, list):
        return False
    for b in c:         # (``block_type(b) in ("text", "image")``, inlined: it runs for every new message)
        t = b.get("type") if isinstance(b, dict) else None
        if isinstance(t, str) and t in _TURN_TYPES:
            return True
    return False


_TURN_TYPES = ("text", "image")


def _tool_results(m) -> int:
    """The tool results a message holds (``block_type(b) == "tool_result"`` over its blocks, inlined)."""
    if not isinstance(m, dict):
        return 0
    if m.get("role") == "tool":
        return 1
    c = m.get("content")
    if not isinstance(c, list):
        return 0
    n = 0
    for b in c:
        if isinstance(b, dict):
            t = b.get("type")
            if isinstance(t, str) and t == "tool_result":
                n += 1
    return n


def _identity(origin, n: int) -> bool:
    """``origin`` is the list ``[0, 1, ..., n - 1]`` (a layer that replaced messages in place), compared in C."""
    return origin.__class__ is list and len(origin) == n and (not n or origin[-1] == n - 1) and \
        origin == list(range(n))


_NOT_NONE = partial(is_not, None)
_PAUSED_CALLS = 128        # calls walked in one pause of the cyclic GC (``_Walk.run``)
_NONE_LAST = {None: -1}


def _compose(cur: list | None, origin, n_in: int, n_context: int) -> list | None:
    """The context positions after a step with ``origin`` over a list of ``n_in`` messages whose positions are
    ``cur`` (None: each is the context message at its place, ``n_context`` of them)."""
    if cur is None:
        if n_in == n_context and _identity(origin, n_in):
            return None                      # still each at its place
        vals = list(filter(_NOT_NONE, origin))
        if not vals or (min(vals) >= 0 and max(vals) < n_context):
            return list(origin)              # every position valid: the origin itself (found in C)
        return [o if o is not None and 0 <= o < n_context else None for o in origin]
    if _identity(origin, len(cur)):
        return cur
    return [cur[o] if o is not None and 0 <= o < len(cur) else None for o in origin]


def layer_records(trace: Trace, n_context: int) -> tuple[list[LayerRecord], list[int | None] | None, dict]:
    """Per step a LayerRecord, the context position each output message came from (None: made by
    a layer; the whole list None: each output is the context message at its place, no list of them),
    and the counts: fired layers, events in words, errors, summaries, results cleared."""
    cur: list | None = None
    records: list[LayerRecord] = []
    fired: list[str] = []
    events: list[str] = []
    errors: list[str] = []
    cleared = summaries = 0
    add = records.append
    # a run that gave back its input (a layer undid the others: Inspect's "compaction insufficient") keeps every
    # position: the steps' origins are not composed (each a walk over the whole context)
    compose = trace.output is not trace.input
    for s in trace.steps:
        inp, out, err = s.input, s.messages, s.error
        if out is inp:
            changed = False           # an unchanged step keeps every position (``Step.changed``: False)
        else:
            # one that replaced messages in place keeps every position too
            origin = s.origin
            n_in = len(inp)
            if compose and not (origin.__class__ is SameOrigin and len(origin) == n_in):
                cur = _compose(cur, origin, n_in, n_context)
            changed = s.changed
        made = bool(s.summary) and not err
        layer = s.layer
        if changed or err:
            note = s.explain()
            if changed:
                fired.append(layer)
                events.append(f"{layer}: {note}")
            if err:
                errors.append(f"{layer}: {err}")
                if not changed:
                    events.append(f"{layer}: failed: {err}")
        else:
            note = ""
        add(LayerRecord(layer, changed, s.size_before, s.size_after, s.tokens_before, s.tokens_after, note,
                        s.triggered, err, made, s.role, s.internal, s.plugin_failed))
        if made:
            summaries += 1
        edits = s.edits
        if edits:
            if edits.__class__ is CountedEdits:
                cleared += edits.cleared       # (counted where they were made: an edit pass lists n/2 at every call)
            else:
                for e in edits:
                    if e.tool_id is not None and e.kind in CLEARING:
                        cleared += 1
    return records, cur, {"fired": fired, "events": events, "errors": errors, "summaries": summaries,
                          "cleared": cleared}


class _Walk:
    """One replay: ``run`` walks the calls; each step of the walk is a small method."""

    def __init__(self, conv: Conversation, engine: Engine, options: ReplayOptions, label: str | None):
        self.conv, self.engine, self.opts = conv, engine, options
        strat = engine.strategy
        self.dialect = conv.dialect if strat.dialect == ANY else strat.dialect    # ANY: a plugin on the input's own
        self.p = prepare(conv, self.dialect, options.skip_real_summaries)
        # every message of the history is measured (the raw growth, the calibration): the per-message table is
        # told so, or at a few thousand messages it forgot the figures and measured them all again
        engine.meter.facts.expect(len(self.p.msgs))
        self.view = _View(conv, {id(m): self.p.metas[i] for i, m in enumerate(self.p.msgs)}, self.dialect)
        self.call_at, pending = call_positions(self.p, options.pending_call, options.max_calls)
        self.real_events = real_compactions(conv, self.p, self.call_at)
        from .follow import reset_points
        self.resets = [] if options.free or not self.real_events else \
            reset_points(conv, self.p, self.dialect, lambda ms: _convert(ms, None, self.dialect, [])[0])
        self.shadow = None
        self.real_by_call: dict = {}
        for ev in self.real_events:
            if ev["call"] is not None:
                self.real_by_call.setdefault(ev["call"], ev)
        self.manual_layer = "manual_compact" if options.manual_compacts and any(
            item.name == "manual_compact" for item in strat.extra_layers) else None
        self.base_tokens = engine.tokens
        engine.bind_tokens(self.view)        # before call 0's history is counted (``_RawGrowth``), as the run will
        self.raw = _RawGrowth(engine.meter, self.base_tokens, self.view)
        self.calibration_off = ""
        self.calibrator = self._calibrator()
        if self.calibrator is not None:
            engine.tokens = self.calibrator.tokens        # the walk's own fork: restored at the end
        # the running context holds the whole recorded history so far, as it was recorded: nothing compacted it,
        # no real compaction reset it. Then the history's tokens (a not additive estimator: a count over the list)
        # are the context's, which the pipeline's first step counts with the same estimator, system prompt and
        # tools: a pure function of equal lists (an additive one sums running figures: nothing to spare)
        self.pristine = self.calibrator is None and not self.raw.additive and engine.tokens is self.base_tokens
        r = self.result = ReplayResult(strat.name, dict(engine.params), label or strat.name,
                                       [layer.name for layer in engine.layers], [], *_threshold(strat, engine.params),
                                       self.real_events, engine.meter.name, engine.tokens.name, conv.source)
        r.engine, r.conversation, r.pending = engine, self.view, pending
        r.mode = "free" if options.free or not self.real_events else "follow"
        # a strategy without an iteration budget has none in the replay, unless the caller gives a cap
        policy = strat.iteration_budget
        if policy is None and options.iteration_cap is not None:
            policy = IterationPolicy()
        r.iteration_cap = None if policy is None else int(options.iteration_cap if options.iteration_cap is not None
                                                          else policy.cap)
        r.layer_colors, r.iteration_policy = strat.layer_colors(), policy
        cpt = getattr(self.base_tokens, "cpt", None)
        r.chars_per_token = float(cpt) if isinstance(cpt, (int, float)) and cpt > 0 else None
        if options.keep_traces:
            r.traces = []
        if options.keep_inputs:
            r.inputs = KeptInputs()

    def _calibrator(self) -> Calibrator | None:
        calibrate = self.opts.calibrate
        strat = self.engine.strategy
        has_usage = any(m.usage is not None for m in self.p.metas)
        if calibrate is None:
            calibrate = default_calibration(self.conv, [strat])
        if not has_usage:
            self.calibration_off = "the recording holds no usage to calibrate on"
        elif getattr(self.base_tokens, "anchors_on_usage", False):
            calibrate = False    # the estimator reads the recorded usage itself (a calibration would count it twice)
            self.calibration_off = f"{self.base_tokens.name} reads the recorded usage itself"
        elif not calibrate:
            unit = "chars" if strat.threshold_unit == "size" else strat.threshold_unit
            self.calibration_off = (f"{strat.name}'s threshold counts {unit}, not tokens"
                                    if strat.threshold_unit != "tokens" else "turned off (--no-calibrate)")
        if not calibrate:
            return None
        o = measure(self.conv, self.p.msgs, self.p.metas, self.p.inv, self.call_at, self.engine.meter,
                    self.base_tokens)
        return Calibrator(o, self.base_tokens) if o is not None else None

    def run(self, progress, cancel) -> ReplayResult:
        t0 = time.perf_counter()
        # the running context is extended in place while it is ours alone (``_call``): built by this loop and
        # passed through the pipeline unchanged, with no call's input kept
        self.owned = True
        # no trace is kept: the steps need not note which parameters they read (the walk's own fork; back at the end)
        self.engine.track_reads = self.engine.explain = self.opts.keep_traces
        # the layers carry what they found from one call to the next (``LayerContext.memo``), dropped at the end
        self.engine.memo = {}
        # the cyclic GC paused over stretches of calls, not call by call (each ``Engine.run`` pauses it and freezes
        # what it made when it ends: a freeze, and the collections the walk's own records set off between two runs,
        # at every call); a stretch is short, so the rest of the program (the window's thread) has its GC back soon
        pause = gc_paused()
        pause.__enter__()
        try:
            self._walk(progress, cancel, pause)
        finally:
            pause.__exit__()
        if self.shadow is not None and self.shadow.found is not None:
            self.result.late[self.shadow.real_call] = self.shadow.found
        return self._finish(t0)

    def _walk(self, progress, cancel, pause) -> None:
        msgs, metas, skip = self.p.msgs, self.p.metas, self.p.skip
        context: list = []
        src: list = []            # for each context message: its prepared index, or None (made by a layer)
        last = turn = ts_from = 0
        ts = None
        total = len(self.call_at)
        resets = self.resets
        for k, j in enumerate(self.call_at):
            if cancel is not None and cancel.is_set():
                break
            if k and k % _PAUSED_CALLS == 0:
                pause.__exit__()
                pause.__enter__()
            new = [i for i in range(last, j) if i not in skip] if skip else list(range(last, j))
            new_msgs = list(map(msgs.__getitem__, new))
            turn += any(map(_is_user_turn, new_msgs))
            reset = None
            while resets and resets[0].at <= j:
                point = resets.pop(0)
                if point.at >= last:
                    reset = point           # a real compaction before this call: the last one counts
            if reset is not None:
                self.pristine = False
            # while the running context is the whole history (see ``pristine``) the history's tokens are the
            # context's, counted by the pipeline's first step: not counted twice (``_call``)
            raw_size, raw_tokens = self.raw.add(new_msgs, count=not self.pristine)
            for i in range(ts_from, j):      # the latest timestamp before the call, found incrementally
                if metas[i].timestamp is not None:
                    ts = metas[i].timestamp
            ts_from = j
            if self.shadow is not None:
                self._shadow_step(k, [msgs[i] for i in new if reset is None or i < reset.at], ts)
            if reset is not None and (context or any(i < reset.at or reset.lead for i in new)):
                rec, context, src = self._reset_call(k, j, reset, context, src, new, raw_size, raw_tokens, ts, turn)
            else:
                if reset is not None:       # the file opens with a compacted context: the real one
                    context, src = reset.context(self.conv, self.p, j)
                    self.owned = False
                    new, new_msgs = [], []
                    self._follow_segment(reset)
                rec, context, src = self._call(k, j, context, src, new, raw_size, raw_tokens, ts, turn,
                                               new_msgs=new_msgs)
            last = j
            if progress is not None and (k % 50 == 0 or k == total - 1):
                progress(k + 1, total)

    def _call(self, k, j, context, src, new, raw_size, raw_tokens, ts, turn, hold=False, new_msgs=None):
        """One call: the pipeline on the running context plus the new messages (``new``: their prepared indices;
        ``new_msgs``: the messages, when the caller has them); its record, and the context the next call starts
        from."""
        if new_msgs is None:
            new_msgs = list(map(self.p.msgs.__getitem__, new))
        # extended in place while the running context is ours alone (a new list per call copied the whole context
        # every time: a 50,000-message chain spent most of its replay copying and freeing lists)
        # (the kept inputs are each a length of such a list: ``KeptInputs``; a kept trace holds its input itself)
        if self.owned and not hold and not self.opts.keep_traces:
            context = self.engine.meter.extend(context, new_msgs)
            src.extend(new)
        else:
            context, src = self.engine.meter.concat(context, new_msgs), src + new
        state_before = dict(self.engine.state)
        if self.calibrator is not None:
            raw_tokens += self.calibrator.before_call(k, hold=hold)
        trace = self.engine.run(context, conversation=self.view, now=ts, dialect=self.dialect,
                                layers=self._layers_for(k))
        before = context
        if raw_tokens is None:
            steps = trace.steps
            raw_tokens = steps[0].tokens_before if steps and steps[0].input is context else self.raw.tokens_now()
        if self.pristine and (hold or trace.output is not context):
            self.pristine = False
        rec, context, src = self._record(k, j, trace, context, src, new, raw_size, raw_tokens, ts, turn)
        self.owned = context is before and not hold
        self._keep(rec, trace, context_before=trace.input, state_before=state_before)
        return rec, context, src

    def _reset_call(self, k, j, reset, context, src, new, raw_size, raw_tokens, ts, turn):
        """Following reality at the first call after a real compaction: the pipeline checks its own context up to
        the real boundary (this call's record); the next call starts from the real post-compaction context."""
        # a compaction that re-sent the context (hermes, Inspect: the segment opens with copies) compacted the
        # call's whole input, the messages new to it included; a summary-style one (Claude Code) the messages
        # before its boundary, the ones after it are new since
        before = [i for i in new if i < reset.at or reset.lead]
        after = [i for i in new if i >= reset.at and not reset.lead]
        rec, own, _ = self._call(k, j, context, src, before, raw_size, raw_tokens, ts, turn, hold=True)
        rec.new_messages = len(new)
        msgs = self.p.msgs
        real, real_src = reset.context(self.conv, self.p, j)
        rec.reset = {"segment": reset.segment, "messages": len(real)}
        if not rec.compacted and k in self.real_by_call:
            from .follow import Shadow
            if self.shadow is not None and self.shadow.found is not None:
                self.result.late[self.shadow.real_call] = self.shadow.found
            self.shadow = Shadow(k, own)
            self._shadow_step(k, [msgs[i] for i in after], ts)
        elif self.shadow is not None:
            if self.shadow.found is not None:
                self.result.late[self.shadow.real_call] = self.shadow.found
            self.shadow = None
        self._follow_segment(reset)
        return rec, real, real_src

    def _follow_segment(self, reset) -> None:
        if self.calibrator is not None:
            lead = self.base_tokens.tokens(reset.lead, self.engine.meter) if reset.lead else 0
            self.calibrator.follow_segment(reset.segment, -lead)

    def _shadow_step(self, k: int, new: list, ts) -> None:
        """The free continuation past a real compaction the check missed: does it compact before the next one?"""
        sh = self.shadow
        if sh is None:
            return
        if k == sh.real_call and not new:
            return
        eng = self.engine

        def run(ctx):
            return eng.run(ctx, conversation=self.view, now=ts, dialect=self.dialect, keep_state=False)
        if not sh.step(k, new, run, eng.meter, layer_records):
            if sh.found is not None:
                self.result.late[sh.real_call] = sh.found
            self.shadow = None

    def _layers_for(self, k: int) -> list[str] | None:
        """A call where the recording holds a real manual compaction ends with the user's command."""
        if self.manual_layer and self.real_by_call.get(k, {}).get("trigger") == "manual":
            return [layer.name for layer in self.engine.layers] + [self.manual_layer]
        return None

    def _record(self, k, j, trace, context, src, new, raw_size, raw_tokens, ts, turn):
        """The call's record, and the context (with its sources) the next call starts from."""
        msgs, origin = self.p.msgs, self.p.origin
        layers, cur, n = layer_records(trace, len(context))
        out = trace.output
        same = cur is None or out is context or len(out) == len(context) and all(map(eq, cur, range(len(cur))))
        if same:
            dropped_pos = []          # every context message is still there, at its place
        else:
            survived = set(cur)
            survived.discard(None)
            dropped_pos = [] if len(survived) == len(context) else \
                list(filterfalse(survived.__contains__, range(len(context))))
        if dropped_pos:
            dropped = [origin[d] for d in map(src.__getitem__, dropped_pos) if d is not None]
            results_dropped = sum(map(_tool_results, map(context.__getitem__, dropped_pos)))
        else:
            dropped, results_dropped = [], 0
        steps = trace.steps
        if steps:
            first, final = steps[0], steps[-1]
            size_before, tokens_before, size_after, tokens_after = \
                first.size_before, first.tokens_before, final.size_after, final.tokens_after
        else:
            meter, tok = self.engine.meter, self.engine.tokens
            size_after = size_before = meter.size(context)
            tokens_after = tokens_before = tok.tokens(context, meter)
        at_end = j >= len(msgs)
        msg_index = len(self.conv.messages) if at_end else (origin[j] if origin[j] is not None else j)
        real_tokens = None
        if not at_end:
            meta = self.p.metas[j]
            u = meta.usage
            if u is not None and u.context_tokens > 0 and not meta.extra.get("synthetic"):
                real_tokens = u.context_tokens      # a record with no or zero usage (a failed call, a `<synthetic>`
                #                                     record) is no context the API saw: not recorded
        rec = CallRecord(k, msg_index, len(new), raw_size, raw_tokens, len(context), len(out), size_before,
                         size_after, tokens_before, tokens_after, layers, n["fired"], n["events"], dropped,
                         n["cleared"], results_dropped, n["summaries"], n["errors"], ts, real_tokens,
                         self.real_by_call.get(k), None, turn)
        if self.opts.check:
            rec.findings = sum(1 for f in trace.final_findings if f.severity == "error")
        if self.calibrator is not None:
            rec.overhead = int(self.calibrator.tokens.offset)
            self.calibrator.after_call(rec.summaries)
        # the recorded assistant message joins at the next call (it is the answer to this one). A context
        # kept whole keeps its sources: no Python loop over the context at every call (a long segment made
        # replay quadratic: 10k messages, 8 of 28 s)
        if same:
            return rec, out, src
        # each output message's source: ``src[x]``, None for a message a layer made (a list mapped in C: None
        # becomes -1, the index of the None added at the end)
        ext = src + [None]
        return rec, out, list(map(ext.__getitem__, map(_NONE_LAST.get, cur, cur)))

    def _keep(self, rec: CallRecord, trace: Trace, context_before: list, state_before: dict) -> None:
        r = self.result
        r.calls.append(rec)
        if self.opts.keep_inputs:
            if isinstance(r.inputs, (KeptInputs, list)):
                r.inputs.append(context_before)
            r.states.append(state_before)
            if self.calibrator is not None:
                r.offsets.append(self.calibrator.tokens.offset)
        if self.opts.keep_traces and r.traces is not None:
            r.traces.append(trace)

    def _finish(self, t0: float) -> ReplayResult:
        r = self.result
        self.engine.track_reads = self.engine.explain = True
        self.engine.memo = None
        if self.calibrator is not None:
            self.engine.tokens = self.base_tokens
            r.calibration = self.calibrator.overheads.public()
            r.token_estimator = f"{self.base_tokens.name} + recorded overhead"
        else:
            r.calibration_off = self.calibration_off or "the replay was asked not to calibrate"
        r.seconds = time.perf_counter() - t0
        return r


def _threshold(strategy: Strategy, params: dict) -> tuple[float | None, str]:
    th = strategy.threshold
    return (th.value(params), th.unit) if th is not None else (None, "")
