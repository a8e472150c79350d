"""The facts a report shows, gathered once; the HTML and Markdown renderers only format them.

``build_report(result, engine, ...)`` picks the messages (a segment of a conversation of the file, by
default its last: what the agent would send next; the whole history only when asked; or the recorded
context before one model call), runs the engine's pipeline over
them, aligns every layer's before and after, explains the boundary, collects every real and simulated
compaction summary in full, and (with ``replay=True``) replays the conversation's whole life, optionally
against other strategies. Nothing here formats text for a medium.
"""
from __future__ import annotations

import os
import time
from typing import Any, Callable, Sequence

from ..runtime.record import field, record
from ..pipeline.align import align, summarize_rows
from ..model.contexts import WHOLE, locate_call, whole_history_note
from ..model.conversation import Conversation, LoadResult, MessageMeta
from ..analysis.explain import BoundaryExplanation, boundary_explanation, find_boundary_step
from ..analysis.info import describe
from ..model.messages import message_text
from ..pipeline.engine import Engine
from ..replay import ReplayResult, replay as run_replay, threshold_for
from ..pipeline.trace import SUMMARY, Edit, Step, Trace


@record
class SummaryText:
    """The full text of one compaction summary, real (recorded in the file) or simulated."""
    origin: str                 # "real" (the file recorded it), "run" (this report's pipeline run), "replay"
    title: str                  # where it comes from, in words
    text: str
    anchor: str | None = None   # the message anchor where the report shows it in place, if any
    facts: dict = field(default_factory=dict)   # trigger, pre_tokens, summarizer, call, run, ...


@record
class StageFacts:
    """One layer's run: the Step, its label, and its before/after rows (``core.align``)."""
    number: int                 # 1-based position in the trace
    step: Step
    label: str
    rows: Sequence
    counts: dict


@record
class ReplayFacts:
    """The replay of the conversation's whole life: the main run first, then the compared runs."""
    runs: list                  # ReplayResult
    totals: list                # ReplayResult.totals() per run
    boundaries: list            # the main run's boundary_report(): each real compaction next to the simulated one
    summaries: list             # SummaryText of every simulated summary of every run
    seconds: float = 0.0


@record
class ReportSource:
    """What the report is about: the file, the conversation and the messages the pipeline ran over."""
    title: str
    path: str
    file_bytes: int | None
    info: dict                          # core.info.describe() of the whole file
    conversation_index: int
    conversation: Conversation
    scope: str                          # which messages the pipeline ran over, in words
    segment: int | None                 # the segment run over (None: the whole history)
    call: int | None                    # the recorded context before this model call


@record
class Report:
    source: ReportSource
    replayed_call: int | None           # the trace is the replay's run before this model call
    stage: int | None                   # the stage on screen when the window exported it (0 = Original)
    strategy: Any                       # core.strategies.base.Strategy
    params: dict
    changed_params: dict                # the parameters that differ from the strategy's defaults
    param_reasons: dict                 # parameter -> why it has this value (inferred from the file), if any
    strategy_reason: str                # why this strategy ran, in words (StrategyChoice.reason)
    notes: list                         # what the reader must know first: a whole history that was never
                                        # sent, a strategy that is not the file's own pipeline
    inferred_lines: list                # what the strategy read from the session, one line per parameter/note
    threshold: float | None
    threshold_unit: str
    messages: list                      # the input of the run
    trace: Trace
    stages: list                        # StageFacts
    boundary: BoundaryExplanation
    boundary_layer: str | None
    summaries: list                     # SummaryText: real ones, then the run's simulated ones
    replay: ReplayFacts | None
    meta: dict                          # id(message) -> MessageMeta (timestamps, usage, where in the file)
    anchors: dict                       # id(message) -> the anchor where the report shows it (m3, s2m5)
    meter: Any                          # the run's SizeMeter: message sizes, cached from the run
    generated: float
    version: str
    seconds: float = 0.0
    history: Any = None                 # report.history.HistoryFacts: the events and what each compaction kept

    def meta_of(self, message: Any) -> MessageMeta | None:
        return self.meta.get(id(message))

    @property
    def stage_names(self) -> list[str]:
        return ["original"] + [s.step.layer for s in self.stages]


def layer_label(strategy, name: str) -> str:
    """The stepper's short label of a layer (``L3 budget``), else its name."""
    try:
        return strategy.layer(name).label or name
    except (KeyError, AttributeError):
        return name


def summary_texts_of_trace(trace: Trace, origin: str, where: str, anchors: dict | None = None,
                           facts: dict | None = None) -> list[SummaryText]:
    """The full text of every summary a trace's layers made (the summary message as the model sees it)."""
    out = []
    for s in trace.steps:
        if not s.summary or s.error:
            continue
        made: list[Edit | None] = [e for e in s.edits
                                   if e.kind == SUMMARY and e.out is not None and 0 <= e.out < len(s.messages)]
        info = {k: v for k, v in s.summary.items() if k != "text"}
        for e in made[:1] or [None]:
            if e is not None and e.out is not None:
                msg = s.messages[e.out]
                text = message_text(msg)
                anchor = anchors.get(id(msg)) if anchors else None
            else:
                text, anchor = str(s.summary.get("text") or ""), None
            if not text:
                continue
            out.append(SummaryText(origin, f"{where}: {s.layer}" + (f", replacing messages {e.start}..{e.end - 1}"
                                                                  if e is not None and e.start is not None
                                                                  and e.end is not None else ""),
                                   text, anchor, {**(facts or {}), **info, "layer": s.layer, "chars": len(text)}))
    return out


def real_summaries(conv: Conversation, anchors: dict | None = None) -> list[SummaryText]:
    """Every real compaction the file records, with the full text of its summary when the file has it;
    ``anchors`` (id(message) -> anchor) says where the report shows the summary message in place."""
    out = []
    for k, e in enumerate(conv.events, 1):
        facts = {"kind": e.kind, "trigger": e.trigger, "pre_tokens": e.pre_tokens, "post_tokens": e.post_tokens,
                 "message": e.message_index, "where": str(e.provenance) if e.provenance else None}
        i = e.summary_index
        anchor = None
        if i is not None and 0 <= i < len(conv.messages):
            text = message_text(conv.messages[i])
            anchor = (anchors or {}).get(id(conv.messages[i]))
        else:
            text = ""
        title = (f"real compaction {k} ({e.kind}, {e.trigger or 'trigger not recorded'}) before message "
                 f"{e.message_index}")
        out.append(SummaryText("real", title, text, anchor, dict(facts, chars=len(text))))
    return out


def _meta_map(conv: Conversation) -> dict:
    return {id(m): conv.meta[i] for i, m in enumerate(conv.messages) if i < len(conv.meta)}


def _selection(conv: Conversation, index: int, segment, call) -> tuple[int | None, int | None, str, bool]:
    """The messages a report runs over, as the window selects them (``Conversation.select``): ``segment`` k
    (negative counts from the end), None = the last segment (what the agent would send next, as run and check
    take it), ``contexts.WHOLE`` = the whole history; ``call`` = the context before that model call of the
    segment (or of the whole history). Returns (segment or None for the whole history, call, the scope in
    words, whole)."""
    n = len(conv.segments or [0])
    scope = f"conversation {index}"
    whole = segment == WHOLE or n <= 1 and segment is None
    if whole:
        segment = None
        if n > 1:
            scope += f", the whole history ({n} contexts split at real compactions, read in a row; never sent as " \
                     f"one request)"
    else:
        seg = -1 if segment is None else segment
        if not isinstance(seg, int) or not -n <= seg < n:
            raise ValueError(f"there is no segment {segment}: the conversation has {n} segment(s) (0..{n - 1}), one "
                             "per context between real compactions; 'all' = the whole history")
        segment = seg % n
        scope += (f", segment {segment} of {n} (the context after " + ("the start" if segment == 0 else
                                                                       f"real compaction {segment}")
                  + ("; the last: what the agent would send next" if segment == n - 1 else "") + ")")
    if call is not None:
        at = conv.calls(segment)
        k = call + len(at) if call < 0 else call
        if not 0 <= k < len(at):
            what = "segment" if segment is not None else "conversation"
            raise ValueError(f"there is no model call {call}: the {what} has {len(at)} model call(s) "
                             f"(0..{len(at) - 1})")
        call = k
        scope += f", the recorded context before model call {k}" + (" of the segment" if segment is not None else "")
    return segment, call, scope, whole


def _crosses(conv: Conversation, history_prefix: list) -> bool:
    """A prefix of the whole history reaches past the first real compaction (it was never one request)."""
    if len(conv.segments or [0]) <= 1:
        return False
    first = sum(1 for i in range(conv.segments[1]) if "copy_of" not in conv.meta_at(i).extra)
    return len(history_prefix) > first


def build_report(result: LoadResult, engine: Engine, *, conversation: int = 0, segment: int | str | None = None,
                 call: int | None = None, replay: bool = False, compare: Sequence = (),
                 max_calls: int | None = None, param_reasons: dict | None = None, title: str | None = None,
                 choice=None, inferred=None, user_params: dict | None = None,
                 trace: Trace | None = None, replayed_call: int | None = None, stage: int | None = None,
                 replays: Sequence | None = None, main_label: str | None = None,
                 progress: Callable[[str], Any] | None = None, now: float | None = None,
                 events: bool = True, free: bool = False) -> Report:
    """Gather a report's facts (``free``: the replay free-running, its own summaries all the way, not following
    reality).

    ``engine`` runs the pipeline (its strategy, parameters, summarizer, workspace and token estimator) over
    the messages the window would (``Conversation.select``): one ``segment`` of the conversation (the context
    after a real compaction; negative counts from the end; default: the last, what the agent would send next,
    as run and check take it), or with ``segment=contexts.WHOLE`` the whole history (with a note that it was
    never sent as one request), or of either the recorded context before model ``call``. ``compare`` is a list of ``(label, Engine)`` replayed next to it (it implies ``replay``).
    ``trace``: the run already made (the window's), reported instead of running again; ``replayed_call``:
    that trace is the replay's run before this call; ``stage``: the stage on screen (0 = Original).
    ``replays``: replay results already made (the window's timeline) to show when no replay is asked for.
    ``inferred``: what the strategy read from the session (``strategies.Inferred``; its reasons explain the
    parameters), with the ``user_params`` that override it. ``choice``: why the strategy runs
    (``strategies.StrategyChoice``; default: described against the file's own pipeline). ``events``: gather the
    conversation's events and what each compaction kept and lost (``report.history``). Raises ValueError
    with what is wrong in the selection."""
    t0 = time.perf_counter()
    say = progress or (lambda _t: None)
    n_conv = len(result.conversations)
    if not 0 <= conversation < n_conv:
        raise ValueError(f"there is no conversation {conversation}: the file holds {n_conv} (0..{n_conv - 1})")
    conv = result.conversations[conversation]
    segment, call, scope, whole = _selection(conv, conversation, segment, call)
    strategy = engine.strategy
    if trace is None:
        messages = conv.select(None if whole else segment, call)
        say(f"running {strategy.name}")
        trace = engine.fork().run(messages, conversation=conv, now=now)
    else:
        messages = trace.input
    if replayed_call is not None:
        scope += f"; the replay's context before model call {replayed_call}"
    scope += f": {len(messages):,} messages"
    anchors: dict = {id(m): f"m{i}" for i, m in enumerate(messages)}
    stages = []
    for k, s in enumerate(trace.steps, 1):
        rows = align(s)
        for r in rows:
            if r.right is not None and r.kind in ("inserted", "changed"):
                anchors.setdefault(id(s.messages[r.right]), f"s{k}m{r.right}")
        stages.append(StageFacts(k, s, layer_label(strategy, s.layer), rows, summarize_rows(rows)))
    bstep = find_boundary_step(trace)
    boundary = boundary_explanation(bstep, strategy.name)
    summaries = real_summaries(conv, anchors) + summary_texts_of_trace(trace, "run", "simulated in this run",
                                                                       anchors)
    replay_facts = None
    if replay or compare:
        replay_facts = _replay(conv, engine, compare, max_calls, say, main_label, free)
    elif replays:
        replay_facts = ReplayFacts(list(replays), [r.totals() for r in replays], replays[0].boundary_report(), [])
    history = None
    if events:
        from .history import gather
        say("listing the events")
        history = gather(conv, engine, replay_facts.runs[0] if replay_facts and replay_facts.runs else None)
    params = dict(trace.params) if trace.params else dict(engine.params)
    thr, unit = threshold_for(strategy, params)
    defaults = strategy.defaults()
    changed = {k: v for k, v in params.items() if defaults.get(k, object()) != v}
    try:
        size = os.path.getsize(result.path)
    except (OSError, TypeError):
        size = None
    from compactscope import __version__
    name = os.path.basename(str(result.path)) or str(result.path)
    if choice is None:
        from ..strategies import strategy_choice_of
        choice = strategy_choice_of(conv, strategy.name)
    notes = [n for n in ((whole_history_note(conv) if whole and _crosses(conv, messages) else ""), choice.warning())
             if n]
    return Report(
        source=ReportSource(title=title or f"Compactscope report: {name}, {strategy.name}", path=str(result.path),
                            file_bytes=size, info=describe(result), conversation_index=conversation,
                            conversation=conv, scope=scope, segment=segment, call=call),
        replayed_call=replayed_call, stage=stage,
        strategy=strategy, params=params, changed_params=changed,
        param_reasons={**(getattr(inferred, "reasons", None) or {}), **(param_reasons or {})},
        inferred_lines=inferred.lines(user_params) if inferred else [], strategy_reason=choice.reason(), notes=notes,
        threshold=thr, threshold_unit=unit, messages=messages, trace=trace, stages=stages, boundary=boundary,
        boundary_layer=bstep.layer if bstep is not None else None, summaries=summaries, replay=replay_facts,
        meta=_meta_map(conv), anchors=anchors, meter=engine.meter, generated=time.time(), version=__version__,
        seconds=time.perf_counter() - t0, history=history)


def _replay(conv: Conversation, engine: Engine, compare: Sequence, max_calls: int | None, say,
            main_label: str | None = None, free: bool = False) -> ReplayFacts:
    t0 = time.perf_counter()
    runs: list[ReplayResult] = []
    configs = [(main_label, engine)] + [(label, eng) for label, eng in compare]
    has_usage = any(m.usage is not None for m in conv.meta)
    calibrate = has_usage and any(e.strategy.threshold_unit == "tokens" for _, e in configs)
    summaries: list[SummaryText] = []
    for k, (label, eng) in enumerate(configs):
        say(f"replaying {label or eng.strategy.name}")
        # the main run keeps its inputs: the events and the retention read them (report.history)
        res = run_replay(conv, engine=eng, label=label, keep_inputs=k == 0, keep_traces=True,
                         max_calls=max_calls, calibrate=calibrate, free=free)
        for c, tr in zip(res.calls, res.traces or []):
            if c.summaries:
                summaries += summary_texts_of_trace(tr, "replay", f"replay {res.label}, before model call {c.index}",
                                                    facts={"run": res.label, "call": c.index,
                                                           "tokens_before": c.tokens_before})
        res.traces = None            # the summaries are taken; the traces would only hold memory
        runs.append(res)
    if not runs[0].calls:
        raise ValueError("the conversation has no model call (no assistant message) to replay")
    return ReplayFacts(runs, [r.totals() for r in runs], runs[0].boundary_report(), summaries,
                       time.perf_counter() - t0)


def session_request(session, *, replay: bool | None = None, title: str | None = None) -> tuple:
    """What ``build_report`` needs to report what a ``core.session.Session`` shows, read from the session at
    once: ``(result, engine, keywords)``. A window reads it in its own thread and builds in a worker.

    The session's file and conversation, segment and call, its strategy, parameters, layer order and
    summarizer, the run on screen (reported, not run again), the stage on screen and, when the timeline has
    been replayed (or ``replay`` is True), the replay of the runs it compares (``replay=False``: none)."""
    from ..model.conversation import LoadResult
    conv = session.source.conversation
    if conv is None:
        raise ValueError("nothing is open: open a transcript first")
    result = session.source.load_result
    index = session.source.conversation_index
    if result is None or index >= len(result.conversations) or result.conversations[index] is not conv:
        result, index = LoadResult(session.source.path or conv.source or session.source.title or "conversation",
                                   conv.format or "conversation", [conv]), 0
    engine = Engine(session.setup.strategy, dict(session.setup.params), workspace=session.workspace,
                    summarizer=session.setup.summarizer_object(), meter=session.meter, order=session.setup.order)
    res = session.result
    trace = res.trace if res is not None and not res.cancelled else None
    want = bool(session.replay.replay_results) if replay is None else replay
    compare, main_label = [], None
    if want:
        specs = session.replay.compare_configs()
        main_label = specs[0].label
        compare = [(sp.label, engine.fork(strategy=sp.strategy, params=sp.params, order=None)) for sp in specs[1:]]
    segment, call = WHOLE if session.source.segment is None else session.source.segment, None
    if session.source.call is not None:     # the session numbers calls over the whole history, as replay does
        segment, call = locate_call(conv, session.source.call)
    return result, engine, dict(conversation=index, segment=segment, call=call, trace=trace,
                                replayed_call=res.call_index if trace is not None else None, stage=session.view.stage,
                                replay=want, compare=compare, main_label=main_label, title=title)


def session_report(session, *, replay: bool | None = None, title: str | None = None,
                   progress: Callable[[str], Any] | None = None) -> Report:
    """The report of what a ``core.session.Session`` shows (see ``session_request``)."""
    result, engine, kw = session_request(session, replay=replay, title=title)
    return build_report(result, engine, progress=progress, **kw)


def group_rows(rows: list) -> list[tuple[str, list]]:
    """A layer's aligned rows as (kind, rows): consecutive kept rows, and consecutive removed rows, form one
    group each (a report folds them); every other row is its own group."""
    out: list = []
    for r in rows:
        if out and r.kind in ("kept", "removed") and out[-1][0] == r.kind:
            out[-1][1].append(r)
        else:
            out.append((r.kind, [r]))
    return out
