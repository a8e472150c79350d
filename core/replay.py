"""Replay a conversation's whole life: the pipeline before every model call.

Before each model call (each assistant message of the recording) the running context is
the previous compacted context plus the recorded messages since; the strategy's pipeline
runs on it (one ``Engine`` for the whole replay, so its state, e.g. the circuit breaker,
persists) and the compacted result is what the next call starts from, as if the agent
had gone on with it. Every call records sizes and tokens before and after each layer,
which layers changed something, the events, and what was dropped. For recordings with
usage (Claude Code) the real context tokens and the real compaction boundaries are kept
next to the simulated ones.

Pure Python, no Qt. Messages are shared between calls, so the size meter's identity
cache makes each call cost about the number of new or changed messages.
"""
from __future__ import annotations

import csv
import io
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from . import strategies
from .conversation import Conversation, MessageMeta
from .messages import OPENAI, block_type, blocks, to_anthropic, to_openai
from .pipeline import Engine
from .size import CharsPerToken
from .strategies.base import IterationPolicy, Strategy
from .trace import PERSIST, REPLACE, Trace

REAL_SUMMARY_PREFIX = "This session is being continued from a previous conversation"


# ------------------------------------------------------------------ records
@dataclass
class LayerRecord:
    layer: str
    changed: bool
    size_before: int
    size_after: int
    tokens_before: int
    tokens_after: int
    note: str = ""
    triggered: bool | None = None
    error: str | None = None
    summary: bool = False           # an LLM summary was made by this layer
    role: str = ""                  # the layer's role (core.layers.base)

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
        return d


@dataclass
class CallRecord:
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
    events: list[str]               # what happened, in words
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

    @property
    def compacted(self) -> bool:
        """Messages left the context (snip, summary, ...)."""
        return bool(self.dropped) or self.summaries > 0

    def to_json(self) -> dict:
        d = {"index": self.index, "message_index": self.message_index, "new_messages": self.new_messages,
             "raw_size": self.raw_size, "raw_tokens": self.raw_tokens,
             "messages_before": self.messages_before, "messages_after": self.messages_after,
             "size_before": self.size_before, "size_after": self.size_after,
             "tokens_before": self.tokens_before, "tokens_after": self.tokens_after,
             "fired": self.fired, "events": self.events, "dropped_messages": len(self.dropped),
             "results_cleared": self.results_cleared, "results_dropped": self.results_dropped,
             "summaries": self.summaries, "layers": [l.to_json() for l in self.layers]}
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
        return d


def threshold_for(strategy: Strategy, params: dict) -> tuple[float | None, str]:
    """The value a strategy compacts at, and its unit ("size" chars or "tokens"): its ``Threshold``."""
    return strategy.threshold.value(params), strategy.threshold.unit


@dataclass
class ReplayResult:
    strategy: str
    params: dict
    label: str
    layer_names: list[str]
    calls: list[CallRecord]
    threshold: float | None
    threshold_unit: str
    real_events: list[dict]          # real compactions: {"call", "message_index", "trigger", "pre_tokens", ...}
    size_estimator: str
    token_estimator: str
    source: str = ""
    seconds: float = 0.0
    inputs: list[list] = field(default_factory=list, repr=False)     # running context before each call
    states: list[dict] = field(default_factory=list, repr=False)     # engine state before each call
    traces: list[Trace] | None = field(default=None, repr=False)
    engine: Engine | None = field(default=None, repr=False)
    conversation: Any = field(default=None, repr=False)
    pending: bool = False            # the last call has no recorded answer (the recording ends before it)
    calibration: dict | None = None  # with calibrate=True: the overhead added to the token estimate
    offsets: list = field(default_factory=list, repr=False)    # with calibrate: the overhead at each call
    iteration_cap: int = 90          # the strategy's IterationBudget cap unless the replay was given one
    layer_colors: dict = field(default_factory=dict)     # layer name -> colour (Strategy.layer_colors)
    iteration_policy: IterationPolicy = field(default_factory=IterationPolicy, repr=False)

    # ------------------------------------------------ derived
    @property
    def compactions(self) -> list[dict]:
        """Calls where messages left the context, with the layers that did it."""
        out = []
        for c in self.calls:
            if c.compacted:
                out.append({"call": c.index, "message_index": c.message_index, "layers": c.fired,
                            "tokens_before": c.tokens_before, "tokens_after": c.tokens_after,
                            "size_before": c.size_before, "size_after": c.size_after,
                            "summaries": c.summaries, "dropped_messages": len(c.dropped)})
        return out

    def iterations(self) -> list[dict]:
        """The strategy's iteration budget (``Strategy.iteration_budget``, counted by
        ``core.moa.IterationBudget``) walked call by call: each model call consumes one iteration; a
        call before which the context was compacted also consumed one for the compaction restart,
        which was refunded. Like hermes-agent's turn loop, the budget is fresh for every user turn
        (``run_conversation`` makes a new one). Per call: ``turn``, ``used``
        (in this turn, after the call), ``refunded`` (this call), ``remaining``, ``refused`` (the cap
        stopped this turn's loop at or before the call)."""
        from .moa import IterationBudget
        policy = self.iteration_policy
        b = IterationBudget(self.iteration_cap)
        out, refused, turn = [], False, None
        for c in self.calls:
            if c.turn != turn and (policy.per_user_turn or turn is None):
                b, refused = IterationBudget(self.iteration_cap), False
            turn = c.turn
            refunded = 0
            if not refused and c.compacted and policy.refund_compaction:
                if b.consume():
                    b.compaction_restart()
                    refunded = 1
                else:
                    refused = True
            if not refused and not b.consume():
                refused = True
            out.append({"turn": c.turn, "used": b.used, "refunded": refunded, "remaining": b.remaining,
                        "refused": refused})
        return out

    def iteration_totals(self) -> dict:
        it = self.iterations()
        first = next((k for k, r in enumerate(it) if r["refused"]), None)
        last = {}
        for r in it:
            last[r["turn"]] = r["used"]
        return {"iteration_cap": self.iteration_cap, "iterations_used": sum(last.values()),
                "iterations_refunded": sum(r["refunded"] for r in it), "iteration_cap_reached_at": first,
                "user_turns": len(last), "most_iterations_in_a_turn": max(last.values(), default=0)}

    def summary_calls(self) -> list[int]:
        return [c.index for c in self.calls if c.summaries]

    def totals(self) -> dict:
        calls = self.calls
        real = [c.real_tokens for c in calls if c.real_tokens is not None]
        d = {"label": self.label, "strategy": self.strategy, "calls": len(calls),
             "compactions": sum(1 for c in calls if c.compacted),
             "summaries": sum(c.summaries for c in calls),
             "peak_tokens": max((c.tokens_after for c in calls), default=0),
             "peak_size": max((c.size_after for c in calls), default=0),
             "total_input_tokens": sum(c.tokens_after for c in calls),
             "raw_total_input_tokens": sum(c.raw_tokens for c in calls),
             "messages_dropped": sum(len(c.dropped) for c in calls),
             "tool_results_dropped": sum(c.results_cleared + c.results_dropped for c in calls),
             "layer_firings": {n: sum(1 for c in calls if n in c.fired) for n in self.layer_names},
             "errors": sum(len(c.errors) for c in calls)}
        d.update(self.iteration_totals())
        if real:
            d["real_peak_tokens"] = max(real)
            d["real_total_input_tokens"] = sum(real)
            d["real_compactions"] = len(self.real_events)
        return d

    def boundary_report(self) -> list[dict]:
        """Each real compaction next to the nearest simulated summary (call indices and tokens)."""
        sims = [c for c in self.calls if c.summaries]
        out = []
        for ev in self.real_events:
            call = ev.get("call")
            near = min(sims, key=lambda c: abs(c.index - call)) if sims and call is not None else None
            row = {"real_call": call, "real_message_index": ev.get("message_index"), "trigger": ev.get("trigger"),
                   "real_pre_tokens": ev.get("pre_tokens"),
                   "real_tokens_before_call": self.calls[call - 1].real_tokens if call else None}
            if near is not None:
                row.update(simulated_call=near.index, simulated_message_index=near.message_index,
                           simulated_tokens_before=near.tokens_before, calls_apart=near.index - call)
            out.append(row)
        return out

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
        tokens = _OffsetTokens(eng.tokens, self.offsets[i]) if self.offsets else eng.tokens
        fork = eng.fork(state=self.states[i], tokens=tokens)
        view = self.conversation
        return fork.run(self.inputs[i], conversation=view, now=self.calls[i].timestamp, keep_state=False,
                        dialect=view.dialect if view is not None else None, cancel=cancel, progress=progress)

    # ------------------------------------------------ output
    def to_json(self) -> dict:
        return {"strategy": self.strategy, "label": self.label, "params": self.params,
                "layers": self.layer_names, "threshold": self.threshold, "threshold_unit": self.threshold_unit,
                "estimators": {"size": self.size_estimator, "tokens": self.token_estimator},
                "source": self.source, "seconds": round(self.seconds, 4), "totals": self.totals(),
                "calibration": self.calibration,
                "real_compactions": self.real_events, "simulated_compactions": self.compactions,
                "boundaries": self.boundary_report(),
                "calls": [dict(c.to_json(), iterations=it) for c, it in zip(self.calls, self.iterations())]}

    def columns(self) -> list[str]:
        cols = ["index", "message_index", "new_messages", "raw_size", "raw_tokens", "messages_before",
                "messages_after", "size_before", "size_after", "tokens_before", "tokens_after"]
        for n in self.layer_names:
            cols += [f"{n}.changed", f"{n}.size_before", f"{n}.size_after", f"{n}.tokens_before",
                     f"{n}.tokens_after"]
        cols += ["fired", "events", "dropped_messages", "results_cleared", "results_dropped", "summaries",
                 "real_tokens", "real_boundary_pre_tokens", "errors", "iterations_used", "iterations_refunded",
                 "iterations_remaining", "iteration_refused", "user_turn"]
        return cols

    def rows(self) -> list[dict]:
        out = []
        for c, it in zip(self.calls, self.iterations()):
            r = {"index": c.index, "message_index": c.message_index, "new_messages": c.new_messages,
                 "raw_size": c.raw_size, "raw_tokens": c.raw_tokens, "messages_before": c.messages_before,
                 "messages_after": c.messages_after, "size_before": c.size_before, "size_after": c.size_after,
                 "tokens_before": c.tokens_before, "tokens_after": c.tokens_after}
            by = {l.layer: l for l in c.layers}
            for n in self.layer_names:
                l = by.get(n)
                r[f"{n}.changed"] = l.changed if l else ""
                r[f"{n}.size_before"] = l.size_before if l else ""
                r[f"{n}.size_after"] = l.size_after if l else ""
                r[f"{n}.tokens_before"] = l.tokens_before if l else ""
                r[f"{n}.tokens_after"] = l.tokens_after if l else ""
            r.update(fired=";".join(c.fired), events=" | ".join(c.events), dropped_messages=len(c.dropped),
                     results_cleared=c.results_cleared, results_dropped=c.results_dropped, summaries=c.summaries,
                     real_tokens="" if c.real_tokens is None else c.real_tokens,
                     real_boundary_pre_tokens="" if not c.real_boundary else c.real_boundary.get("pre_tokens") or "",
                     errors=" | ".join(c.errors), iterations_used=it["used"], iterations_refunded=it["refunded"],
                     iterations_remaining=it["remaining"], iteration_refused=it["refused"], user_turn=c.turn)
            out.append(r)
        return out

    def to_csv(self) -> str:
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=self.columns(), lineterminator="\n")
        w.writeheader()
        for r in self.rows():
            w.writerow(r)
        return buf.getvalue()


# ------------------------------------------------------------------ the walk
class _View:
    """What ``Engine.run`` reads from a conversation, with a prepared identity map."""

    def __init__(self, conv, meta: dict | None = None, dialect: str | None = None):
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


def _prepare(conv: Conversation, dialect: str, skip_real_summaries: bool):
    """(messages in the strategy's dialect, meta per message, source index per message, skipped set)."""
    msgs = conv.messages
    origin = list(range(len(msgs)))
    if conv.dialect != dialect:
        converted = to_openai(msgs, conv.system) if dialect == OPENAI else to_anthropic(msgs)
        msgs, origin = converted.messages, list(converted.origin)
    skip: set[int] = set()
    if skip_real_summaries and conv.events:
        real = {e.summary_index for e in conv.events if e.summary_index is not None}
        for i, o in enumerate(origin):
            m = msgs[i]
            if o in real:
                skip.add(i)
            elif isinstance(m, dict) and m.get("role") == "user":
                c = m.get("content")
                text = c if isinstance(c, str) else next((b.get("text", "") for b in blocks(m)
                                                          if block_type(b) == "text"), "")
                if isinstance(text, str) and text.startswith(REAL_SUMMARY_PREFIX):
                    skip.add(i)
    metas = [conv.meta_at(o) if o is not None and o >= 0 else MessageMeta() for o in origin]
    return msgs, metas, origin, skip


def _is_user_turn(m) -> bool:
    """A message the user typed: role user with text (not only tool results)."""
    if not isinstance(m, dict) or m.get("role") != "user":
        return False
    c = m.get("content")
    if isinstance(c, str):
        return bool(c.strip())
    return any(block_type(b) in ("text", "image") for b in blocks(m))


def _tool_results(m) -> int:
    if not isinstance(m, dict):
        return 0
    if m.get("role") == "tool":
        return 1
    return sum(1 for b in blocks(m) if block_type(b) == "tool_result")


def replay(conversation, strategy: str | Strategy = "s08", params: dict | None = None, *,
           engine: Engine | None = None, label: str | None = None, check: bool = False,
           keep_traces: bool = False, keep_inputs: bool = True, skip_real_summaries: bool = True,
           pending_call: bool = True, calibrate: bool | None = None, max_calls: int | None = None,
           progress: Callable[[int, int], Any] | None = None, iteration_cap: int | None = None,
           cancel=None, manual_compacts: bool = True, **engine_kw) -> ReplayResult:
    """Run the strategy's pipeline before every model call of ``conversation``.

    ``manual_compacts``: where the recording holds a real manual compaction (Claude Code's
    ``/compact``, trigger "manual") and the strategy has a ``manual_compact`` layer, the user's
    command is replayed too: that call's pipeline ends with ``manual_compact``.

    ``engine``: an existing Engine (its summarizer cache and workspace are reused; its state
    is the starting state). Otherwise one is made from ``strategy``, ``params`` and
    ``engine_kw`` (workspace, summarizer, tokens, ...). ``check`` runs the API checker on
    every step (slower). ``progress(done, total)`` is called now and then; ``cancel`` is a
    threading.Event that stops the walk early. ``pending_call``: when the recording ends after
    the last assistant message with more messages (a user turn or tool results), the model
    call they were waiting for is replayed too (its ``message_index`` is the message count).
    ``calibrate``: for recordings with usage, add to every token estimate what the API saw
    beyond the recorded messages (see ``_calibration``), so thresholds compare with reality.
    ``None`` (default) = calibrate when the recording has usage and the strategy's threshold
    is in tokens. ``iteration_cap``: the turn-loop cap of the iteration budget (see
    ``ReplayResult.iterations``; default: the strategy's ``IterationBudget.cap``).
    """
    t0 = time.perf_counter()
    conv = _as_conversation(conversation)
    if engine is None:
        engine = Engine(strategy, dict(params or {}), check=check, **engine_kw)
    else:
        engine.check = check
    strat = engine.strategy
    msgs, metas, origin, skip = _prepare(conv, strat.dialect, skip_real_summaries)
    meta_map = {id(m): metas[i] for i, m in enumerate(msgs)}
    view = _View(conv, meta_map, strat.dialect)
    meter, tok = engine.meter, engine.tokens
    cpt = tok.cpt if isinstance(tok, CharsPerToken) else None
    # an estimator that is a sum over messages (``message_chars``) gets the raw curve incrementally
    per_msg = getattr(tok, "message_chars", None) if getattr(tok, "cpt", None) else None
    raw_est = 0
    call_at = [i for i, m in enumerate(msgs) if isinstance(m, dict) and m.get("role") == "assistant"]
    pending = False
    if pending_call and (not call_at or call_at[-1] < len(msgs) - 1) and \
            any(i not in skip for i in range(call_at[-1] + 1 if call_at else 0, len(msgs))):
        call_at.append(len(msgs))     # the conversation ends before a model call: that call too
        pending = True
    if max_calls is not None:
        call_at = call_at[:max_calls]
    # real compactions -> the first call at or after their message
    real_events = []
    inv = {}
    for i, o in enumerate(origin):
        if o is not None and o >= 0 and o not in inv:
            inv[o] = i
    for e in conv.events:
        mi = inv.get(e.message_index, e.message_index)
        call = next((k for k, j in enumerate(call_at) if j >= mi), None)
        real_events.append({"call": call, "message_index": e.message_index, "kind": e.kind, "trigger": e.trigger,
                            "pre_tokens": e.pre_tokens, "post_tokens": e.post_tokens})
    real_by_call = {}
    for ev in real_events:
        if ev["call"] is not None:
            real_by_call.setdefault(ev["call"], ev)

    manual_layer = None
    if manual_compacts and any(l.name == "manual_compact" for l in strat.extra_layers):
        manual_layer = "manual_compact"
    base_tok, base_cpt = tok, cpt
    calib = None
    if calibrate is None:
        calibrate = strat.threshold_unit == "tokens" and any(m.usage is not None for m in metas)
    if calibrate:
        calib = _calibration(conv, msgs, metas, origin, inv, call_at, meter, base_tok)
        if calib is not None:
            tok = _OffsetTokens(base_tok)
            engine.tokens = tok
            cpt = None
    thr, unit = threshold_for(strat, engine.params)
    result = ReplayResult(strat.name, dict(engine.params), label or strat.name, [l.name for l in engine.layers],
                          [], thr, unit, real_events, meter.name, tok.name, conv.source)
    result.engine, result.conversation = engine, view
    result.pending = pending
    result.iteration_cap = int(iteration_cap if iteration_cap is not None else strat.iteration_budget.cap)
    result.layer_colors = strat.layer_colors()
    result.iteration_policy = strat.iteration_budget
    if keep_traces:
        result.traces = []
    context: list = []
    src: list = []                # for each context message: its index in msgs, or None (made by a layer)
    last = 0
    raw_sum, raw_n = 0, 0
    raw_list: list = []
    sim_compacted, last_over = False, None     # for calibrate
    turn = 0
    ts, ts_from = None, 0
    total = len(call_at)
    for k, j in enumerate(call_at):
        if cancel is not None and cancel.is_set():
            break
        new = [i for i in range(last, j) if i not in skip]
        turn += any(_is_user_turn(msgs[i]) for i in new)
        for i in new:
            raw_sum += meter.message_size(msgs[i])
            if per_msg is not None:
                raw_est += per_msg(msgs[i], meter)
        raw_n += len(new)
        context = context + [msgs[i] for i in new]
        src = src + new
        last = j
        raw_size = 2 + raw_sum + 2 * (raw_n - 1) if raw_n else 2
        if cpt:
            raw_tokens = raw_size // cpt
        elif calib is not None and base_cpt:
            raw_tokens = raw_size // base_cpt
        elif per_msg is not None:
            raw_tokens = (2 + raw_est + 2 * (raw_n - 1)) // base_tok.cpt if raw_n else 0
        else:
            raw_list.extend(msgs[i] for i in new)
            raw_tokens = base_tok.tokens(raw_list, meter, system=view.system, tools=view.tools)
        for i in range(ts_from, j):      # the latest timestamp before the call, found incrementally
            if metas[i].timestamp is not None:
                ts = metas[i].timestamp
        ts_from = j
        state_before = dict(engine.state)
        if calib is not None:
            over, seg = calib["per_call"][k], calib["segment"][k]
            if seg == 0 and over is not None:
                last_over = over
            uncompacted = last_over if seg == 0 and last_over is not None else calib["fixed"] + calib["hidden"]
            tok.offset = calib["fixed"] if sim_compacted else uncompacted
            raw_tokens += uncompacted
        run_layers = None
        if manual_layer and real_by_call.get(k, {}).get("trigger") == "manual":
            run_layers = [l.name for l in engine.layers] + [manual_layer]
        trace = engine.run(context, conversation=view, now=ts, dialect=strat.dialect, layers=run_layers)
        # compose origins through the steps to know what survived
        cur = list(range(len(context)))
        layers, fired, events, errors = [], [], [], []
        cleared = summaries = 0
        for s in trace.steps:
            cur = [cur[o] if o is not None and 0 <= o < len(cur) else None for o in s.origin]
            changed = s.changed
            made = bool(s.summary) and not s.error
            layers.append(LayerRecord(s.layer, changed, s.size_before, s.size_after, s.tokens_before,
                                      s.tokens_after, s.explain() if (changed or s.error) else "", s.triggered,
                                      s.error, made, s.role))
            if changed:
                fired.append(s.layer)
                events.append(f"{s.layer}: {s.explain()}")
            if s.error:
                errors.append(f"{s.layer}: {s.error}")
                if not changed:
                    events.append(f"{s.layer}: failed: {s.error}")
            summaries += made
            cleared += sum(1 for e in s.edits if e.kind in (REPLACE, PERSIST) and e.tool_id is not None)
        out = trace.output
        survived = {x for x in cur if x is not None}
        dropped_pos = [] if len(survived) == len(context) else \
            [p for p in range(len(context)) if p not in survived]
        dropped = [src[p] for p in dropped_pos if src[p] is not None]
        results_dropped = sum(_tool_results(context[p]) for p in dropped_pos)
        new_src = [src[x] if x is not None else None for x in cur]
        first, final = (trace.steps[0], trace.steps[-1]) if trace.steps else (None, None)
        size_before = first.size_before if first else meter.size(context)
        tokens_before = first.tokens_before if first else tok.tokens(context, meter)
        at_end = j >= len(msgs)
        msg_index = len(conv.messages) if at_end else (origin[j] if origin[j] is not None else j)
        rec = CallRecord(k, msg_index, len(new), raw_size, raw_tokens,
                         len(context), len(out), size_before,
                         final.size_after if final else size_before, tokens_before,
                         final.tokens_after if final else tokens_before, layers, fired, events,
                         [origin[d] for d in dropped], cleared, results_dropped, summaries, errors, ts)
        rec.turn = turn
        u = None if at_end else metas[j].usage
        if u is not None:
            rec.real_tokens = u.context_tokens
        if k in real_by_call:
            rec.real_boundary = real_by_call[k]
        if check:
            rec.findings = sum(1 for f in trace.final_findings if f.severity == "error")
        result.calls.append(rec)
        if keep_inputs:
            result.inputs.append(context)
            result.states.append(state_before)
            if calib is not None:
                result.offsets.append(tok.offset)
        if keep_traces:
            result.traces.append(trace)
        # the recorded assistant message joins at the next call (it is the answer to this one)
        context, src = out, new_src
        sim_compacted = sim_compacted or summaries > 0
        if progress is not None and (k % 50 == 0 or k == total - 1):
            progress(k + 1, total)
    if calib is not None:
        engine.tokens = base_tok
        result.calibration = {k: v for k, v in calib.items() if k not in ("per_call", "segment")}
        result.token_estimator = f"{base_tok.name} + recorded overhead"
    result.seconds = time.perf_counter() - t0
    return result


class _OffsetTokens:
    """The base estimate plus what the API saw beyond the recorded messages."""

    def __init__(self, base, offset: int = 0):
        self.base = base
        self.offset = offset
        self.name = f"{base.name} + recorded overhead"

    def tokens(self, messages, meter, *, system=None, tools=None) -> int:
        return self.base.tokens(messages, meter, system=system, tools=tools) + int(self.offset)


def _calibration(conv, msgs, metas, origin, inv, call_at, meter, tok) -> dict | None:
    """Per call: overhead = real context tokens - estimate of the recorded context (the
    current segment up to the call). It holds the system prompt, tools and attachments the
    transcript does not record and, in the first segment of an excerpt, history from before
    the file starts. ``fixed`` = median overhead at the first call after each real
    compaction (or the first call when there is none); ``hidden`` = the first segment's
    extra history, which the simulated context carries until its own first summary."""
    starts = sorted({inv.get(s, s) for s in (conv.segments or [0])} | {0})
    seg_of, per_call = [], []
    si = 0
    for j in call_at:
        while si + 1 < len(starts) and starts[si + 1] <= j:
            si += 1
        seg_of.append(si)
        u = metas[j].usage if j < len(msgs) else None
        if u is None or u.context_tokens <= 0:
            per_call.append(None)
            continue
        per_call.append(u.context_tokens - tok.tokens(msgs[starts[si]:j], meter))
    known = [(s, o) for s, o in zip(seg_of, per_call) if o is not None]
    if not known:
        return None
    firsts = []
    seen = set()
    for s, o in known:
        if s > 0 and s not in seen:
            seen.add(s)
            firsts.append(o)
    seg0 = [o for s, o in known if s == 0]
    if firsts:
        firsts.sort()
        fixed = firsts[len(firsts) // 2]
        hidden = max(0, (seg0[-1] if seg0 else fixed) - fixed)
    else:
        fixed, hidden = known[0][1], 0
    return {"fixed": max(0, fixed), "hidden": hidden, "per_call": per_call, "segment": seg_of,
            "note": "overhead = real context tokens - estimate of the recorded context; fixed = system prompt, "
                    "tools and attachments; hidden = history from before the file starts (first segment)"}


def parse_run_spec(spec: str) -> tuple[str, str, dict]:
    """``NAME`` or ``NAME:K=V,K=V`` or ``LABEL=NAME:K=V`` -> (label, strategy name, params as text).
    Raises ValueError with what is wrong."""
    spec = spec.strip()
    label = None
    if "=" in spec.split(":", 1)[0]:
        label, spec = spec.split("=", 1)
        label = label.strip()
    name, _, rest = spec.partition(":")
    name = name.strip()
    if not name:
        raise ValueError(f"a run is NAME or NAME:KEY=VALUE,..., not {spec!r}")
    params = {}
    for part in filter(None, (p.strip() for p in rest.split(","))):
        if "=" not in part:
            raise ValueError(f"a run is NAME or NAME:KEY=VALUE,..., not {spec!r}")
        k, v = part.split("=", 1)
        params[k.strip()] = v.strip()
    return label or (name + (":" + rest.strip() if rest.strip() else "")), name, params


def compare(conversation, configs: Iterable, **kw) -> list[ReplayResult]:
    """Replay the same conversation under several (label, strategy, params) configurations.
    Calibration (``calibrate=None``) is decided once for all runs, so their tokens compare:
    on when the recording has usage and any of the strategies counts its threshold in tokens."""
    cfgs = []
    for cfg in configs:
        if isinstance(cfg, dict):
            cfgs.append((cfg.get("label"), cfg.get("strategy", "s08"), cfg.get("params") or {}))
        else:
            cfgs.append(tuple(cfg))
    if kw.get("calibrate") is None:
        conv = _as_conversation(conversation)
        kw["calibrate"] = any(m.usage is not None for m in conv.meta) and any(
            (strategies.get(s) if isinstance(s, str) else s).threshold_unit == "tokens" for _, s, _ in cfgs)
    return [replay(conversation, strat, params, label=label, **kw) for label, strat, params in cfgs]


COMPARISON_COLUMNS = [
    ("label", "run"), ("calls", "calls"), ("compactions", "compactions"), ("summaries", "summaries"),
    ("peak_tokens", "peak context (tokens)"), ("peak_size", "peak context (chars)"),
    ("total_input_tokens", "total input tokens"), ("messages_dropped", "messages dropped"),
    ("tool_results_dropped", "tool results dropped"), ("iterations_used", "iterations used"),
    ("iterations_refunded", "iterations refunded"), ("errors", "errors"),
]


def comparison_table(results: list[ReplayResult]) -> list[dict]:
    return [r.totals() for r in results]


def format_table(results: list[ReplayResult]) -> str:
    rows = comparison_table(results)
    head = [t for _, t in COMPARISON_COLUMNS]
    body = [[f"{r.get(k):,}" if isinstance(r.get(k), int) else str(r.get(k, "")) for k, _ in COMPARISON_COLUMNS]
            for r in rows]
    widths = [max(len(h), *(len(b[i]) for b in body)) if body else len(h) for i, h in enumerate(head)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(head, widths))]
    lines += ["  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(b, widths))) for b in body]
    return "\n".join(lines)
