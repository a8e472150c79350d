"""The s08 teaching pipeline (seeds 000 and 001), one traced function per layer.

Order before every model call: tool_result_budget (L3) -> snip_compact (L1) ->
micro_compact (L2) -> compact_history (L4, only over the size limit). On a
prompt-too-long error: reactive_compact. The model may also call ``compact``.

Behaviour follows the seed code exactly, including its quirks, except that
nothing is changed in place: a changed message is a new dict, every other one
is shared with the input.
"""
from __future__ import annotations

import json
import re

from ..runtime.record import record
from ..model.messages import block_type, has_tool_use, is_tool_result_message
from ..summarizers import SummaryError, SummaryRequest
from ..pipeline.trace import BOUNDARY, NOTE, PERSIST, REPLACE, SNIP, SUMMARY, Delta, Edit, LayerOutput, SameOrigin
from . import base as roles
from .base import Layer, LayerContext
from .params import Settings, param
from . import s08_incremental as incremental


MICRO_PLACEHOLDER = "[Earlier tool result compacted. Re-run if needed.]"
SNIP_TEXT = "[snipped {n} messages]"
README_SNIP_TEXT = "[snipped {n} messages from conversation middle]"
COMPACTED_PREFIX = "[Compacted]\n\n"
REACTIVE_PREFIX = "[Reactive compact]\n\n"
COMPACT_TOOL_RESULT = "[Compacted. History summarized.]"
SUMMARY_PROMPT = (
    "Summarize this conversation for continuity. Preserve:\n"
    "1) the current goal,\n"
    "2) key findings and decisions,\n"
    "3) files read or changed,\n"
    "4) remaining work,\n"
    "5) user constraints and preferences.\n"
    "Be compact but concrete.\n\n"
)


@record(frozen=True)
class S08Params(Settings):
    """The s08 pipeline's parameters (the course code's constants)."""

    max_messages: int = param(50, "snip_compact fires when there are more messages than this", minimum=1)
    keep_head: int = param(3, "snip_compact keeps this many messages at the head (the seed's 3)", minimum=0)
    keep_recent: int = param(3, "micro_compact keeps this many most recent tool results whole", minimum=0)
    micro_min_chars: int = param(
        120, "micro_compact only replaces results longer than this (len() of the content)",
        minimum=0)
    max_bytes: int = param(
        200_000, "tool_result_budget: the last message's tool results may total this many chars",
        minimum=0, unit="chars")
    persist_threshold: int = param(
        30_000, "tool_result_budget persists only results longer than this",
        minimum=0, unit="chars")
    preview_chars: int = param(
        2000, "characters of a persisted result kept in the context as a preview",
        minimum=0, unit="chars")
    context_limit: int = param(
        50_000, "compact_history runs when len(str(messages)) is over this",
        minimum=0, unit="chars")
    reactive_keep: int = param(5, "reactive_compact keeps this many last messages", minimum=0)
    summary_input_chars: int = param(
        80_000, "the summary prompt gets json.dumps(messages)[:this]",
        minimum=0, unit="chars")
    summary_max_tokens: int = param(2000, "max_tokens of the summary call", minimum=1)
    max_failures: int = param(
        3, "circuit breaker: stop auto-compacting after this many consecutive failures",
        minimum=1)
    variant: str = param(
        "guarded", "'readme' = the seed README's snip: the same guards without the overlap and "
        "bounds checks ('snipped 0' placeholders, negative snips duplicating messages, IndexError at the ends)",
        choices=("guarded", "readme"))
    compact_tool_mode: str = param(
        "teaching", "'teaching' appends the batch's results after the summary (API 400); "
        "'deferred' compacts after the batch",
        choices=("teaching", "deferred"))


def _fmt(n: int) -> str:
    return f"{n:,}"


# ------------------------------------------------------------ L3 budget
PERSISTED_OPEN, PERSISTED_CLOSE = "<persisted-output>", "</persisted-output>"
_PERSISTED_RE = re.compile(r"Full output:\s*([^\s\\'\"]+)")


def persisted_output(rel: str, preview: str) -> str:
    """What a persisted tool result becomes in the context: where the full output is, and a preview."""
    return f"{PERSISTED_OPEN}\nFull output: {rel}\nPreview:\n{preview}\n{PERSISTED_CLOSE}"


def persisted_reference(text: str) -> str | None:
    """The workspace-relative path a ``persisted_output`` text points to (None for any other text)."""
    if PERSISTED_OPEN not in text:
        return None
    m = _PERSISTED_RE.search(text)
    return m.group(1) if m else None


def no_fresh_results(messages: list) -> str:
    """Why the last message can hold no fresh tool results ("" when it can): the budget then changes nothing."""
    last = messages[-1] if messages else None
    if last is None:
        return "there are no messages"
    if not isinstance(last, dict) or last.get("role") != "user":
        return "the last message is not a user message (no fresh tool results)"
    if not isinstance(last.get("content"), list):
        return "the last message's content is a string, not tool results"
    return ""


def tool_result_budget(messages: list, ctx: LayerContext) -> LayerOutput:
    cfg = S08Params.of(ctx)
    max_bytes = cfg.max_bytes
    threshold = cfg.persist_threshold
    preview = cfg.preview_chars
    why = no_fresh_results(messages)
    if why:
        return LayerOutput.unchanged(messages, why)
    last = messages[-1]
    blocks = [(i, b) for i, b in enumerate(last["content"]) if isinstance(b, dict) and b.get("type") == "tool_result"]

    def size_of(b: dict) -> int:
        return len(str(b.get("content", "")))

    total = sum(size_of(b) for _, b in blocks)
    if total <= max_bytes and not ctx.explain:
        return LayerOutput.unchanged(messages)      # (no one reads the explanation: ``LayerContext.explain``)
    vars_ = {"max_bytes": max_bytes, "persist_threshold": threshold, "results": len(blocks),
             "total_before": total}
    if total <= max_bytes:
        vars_["total_after"] = total
        return LayerOutput.unchanged(
            messages, f"{len(blocks)} tool result(s) in the last message total {_fmt(total)} chars "
                      f"<= max_bytes {_fmt(max_bytes)}", vars=vars_)
    ranked = sorted(blocks, key=lambda p: size_of(p[1]), reverse=True)
    current = {i: b for i, b in blocks}
    edits: list[Edit] = []
    mi = len(messages) - 1
    for idx, block in ranked:
        if total <= max_bytes:
            break
        text = str(block.get("content", ""))
        tid = block.get("tool_use_id")
        if len(text) <= threshold:
            edits.append(Edit(NOTE, f"kept {tid}: {_fmt(len(text))} chars <= persist_threshold {_fmt(threshold)}",
                              message=mi, block=idx, tool_id=tid, old_len=len(text)))
            continue
        rel, path = ctx.workspace.persist_tool_result(tid, text)
        new_content = persisted_output(rel, text[:preview])
        current[idx] = {**block, "content": new_content}
        total = sum(size_of(b) for b in current.values())
        edits.append(Edit(PERSIST, f"persisted {tid}, {_fmt(len(text))} chars, to {rel} "
                                   f"(kept a {_fmt(preview)}-char preview)",
                          message=mi, block=idx, out=mi, tool_id=tid, old_len=len(text),
                          new_len=len(new_content), path=str(path)))
    vars_["total_after"] = total
    persisted = [e for e in edits if e.kind == PERSIST]
    if not persisted:
        return LayerOutput.unchanged(
            messages, f"total {_fmt(total)} > {_fmt(max_bytes)} but no single result exceeds persist_threshold "
                      f"{_fmt(threshold)}", edits=edits, vars=vars_)
    content = list(last["content"])
    for idx, b in current.items():
        content[idx] = b
    new_last = {**last, "content": content}
    out = list(messages[:-1]) + [new_last]
    delta = Delta.replaced([mi])
    note = (f"persisted {len(persisted)} of {len(blocks)} tool result(s): total {_fmt(vars_['total_before'])} -> "
            f"{_fmt(total)} chars" + ("" if total <= max_bytes else f", still over {_fmt(max_bytes)}"))
    return LayerOutput(out, SameOrigin(len(out)), edits, vars_, note, delta=delta)


# ------------------------------------------------------------ L1 snip
def _describe(messages: list, i: int) -> str:
    m = messages[i]
    if has_tool_use(m):
        return "an assistant tool_use"
    if is_tool_result_message(m):
        return "a user tool_result"
    return f"a {m.get('role', '?')} message" if isinstance(m, dict) else "not a message"


def snip_compact(messages: list, ctx: LayerContext) -> LayerOutput:
    cfg = S08Params.of(ctx)
    max_messages = cfg.max_messages
    keep_head_p = cfg.keep_head
    readme = cfg.variant == "readme"
    n = len(messages)
    if n <= max_messages:
        if not ctx.explain:
            return LayerOutput.unchanged(messages)
        return LayerOutput.unchanged(messages, f"{n} messages <= max_messages {max_messages}",
                                     vars={"messages": n, "max_messages": max_messages})
    keep_head, keep_tail = keep_head_p, max_messages - keep_head_p
    head_end, tail_start = keep_head, n - keep_tail
    v = {"messages": n, "max_messages": max_messages, "variant": "readme" if readme else "guarded",
         "keep_head": keep_head, "keep_tail": keep_tail,
         "head_end_initial": head_end, "tail_start_initial": tail_start}
    edits: list[Edit] = []

    def index_error(where: str) -> LayerOutput:
        v.update(head_end=head_end, tail_start=tail_start)
        return LayerOutput(messages, list(range(n)), edits, v,
                           f"the README code reads messages[{where}] of {n}: IndexError",
                           error=f"IndexError: list index out of range (messages[{where}] with {n} messages); "
                                 "the guarded code checks its bounds first")

    # head guard
    check_head = head_end > 0 if not readme else True
    if check_head:
        if not (-n <= head_end - 1 < n):
            return index_error(str(head_end - 1))
        if has_tool_use(messages[head_end - 1]):
            before = head_end
            while head_end < n and is_tool_result_message(messages[head_end]):
                head_end += 1
            if head_end != before:
                held = (f"message {before} holds its tool_result" if head_end - before == 1
                        else f"messages {before}..{head_end - 1} hold tool_results")
                edits.append(Edit(BOUNDARY, f"head_end {before} -> {head_end}: message {before - 1} is an "
                                            f"assistant tool_use and {held}", var="head_end", old=before,
                                  new=head_end))
            else:
                edits.append(Edit(NOTE, f"head_end stays {head_end}: message {head_end - 1} is an assistant tool_use "
                                        f"but message {head_end} is {_describe(messages, head_end) if head_end < n else 'past the end'}"))
    v["head_end_after_guard"] = head_end
    # tail guard
    if readme:
        if not (-n <= tail_start < n):
            return index_error(str(tail_start))
        if not (-n <= tail_start - 1 < n):
            return index_error(str(tail_start - 1))
        cond = is_tool_result_message(messages[tail_start]) and has_tool_use(messages[tail_start - 1])
    else:
        cond = (0 < tail_start < n and is_tool_result_message(messages[tail_start])
                and has_tool_use(messages[tail_start - 1]))
    if cond:
        edits.append(Edit(BOUNDARY, f"tail_start {tail_start} -> {tail_start - 1}: message {tail_start} is a user "
                                    f"tool_result and message {tail_start - 1} holds its tool_use",
                          var="tail_start", old=tail_start, new=tail_start - 1))
        tail_start -= 1
    v["tail_start_after_guard"] = tail_start
    v["head_end"], v["tail_start"] = head_end, tail_start
    if not readme and head_end >= tail_start:
        v["snipped"] = 0
        return LayerOutput(messages, list(range(n)), edits, v,
                           f"head_end {head_end} >= tail_start {tail_start}: head and tail overlap, nothing to snip")
    snipped = tail_start - head_end
    v["snipped"] = snipped
    text = (README_SNIP_TEXT if readme else SNIP_TEXT).format(n=snipped)
    placeholder = {"role": "user", "content": text}
    head = messages[:head_end]
    tail = messages[tail_start:]
    out = head + [placeholder] + tail
    origin = list(range(len(head))) + [None] + list(range(tail_start if tail_start >= 0 else n + tail_start, n))
    if snipped >= 0:
        edits.append(Edit(SNIP, f"snipped {snipped} messages, {head_end}..{tail_start - 1}" if snipped
                          else "snipped 0 messages (placeholder only)",
                          start=head_end, end=tail_start, out=len(head), data={"placeholder": text}))
        note = f"kept {len(head)} head + {len(tail)} tail messages, snipped {snipped}"
        delta: Delta | None = Delta(range(head_end, tail_start), (len(head),))
    else:
        dup = list(range(tail_start, head_end))
        edits.append(Edit(SNIP, f"snipped {snipped} messages: head_end {head_end} > tail_start {tail_start}, "
                                f"so messages {dup[0]}..{dup[-1]} appear twice (the README code has no "
                                f"head_end >= tail_start check)", start=head_end, end=tail_start,
                          out=len(head), data={"placeholder": text, "duplicated": dup}))
        note = f"BUG: negative snip ({snipped}); {len(dup)} message(s) duplicated"
        delta = Delta((), range(len(head), len(head) + 1 + len(dup)))      # the placeholder and the copies
    if not (0 <= head_end <= n and 0 <= tail_start <= n):
        delta = None          # odd parameters (negative or past the end): the pipeline measures the output
    return LayerOutput(out, origin, edits, v, note, delta=delta)


# ------------------------------------------------------------ L2 micro
def micro_compact(messages: list, ctx: LayerContext) -> LayerOutput:
    cfg = S08Params.of(ctx)
    keep_recent = cfg.keep_recent
    min_chars = cfg.micro_min_chars
    if ctx.memo is not None and len(messages) >= incremental.MIN_MESSAGES:
        # a replay over a long context: carried from the last call's output (``s08_incremental``)
        return incremental.micro_compact_memo(messages, ctx.memo, keep_recent, min_chars, MICRO_PLACEHOLDER, _fmt,
                                              ctx.explain)
    # the tool results in order, as three parallel lists (message index, block index, block): no tuple
    # per result for the garbage collector to track
    f_mi: list[int] = []
    f_bi: list[int] = []
    f_b: list = []
    for mi, m in enumerate(messages):
        if isinstance(m, dict) and m.get("role") == "user":
            c = m.get("content")
            if isinstance(c, list):
                for bi, b in enumerate(c):
                    if isinstance(b, dict) and b.get("type") == "tool_result":
                        f_mi.append(mi)
                        f_bi.append(bi)
                        f_b.append(b)
    v, early, n_older = incremental.micro_start(messages, len(f_b), keep_recent, ctx.explain)
    if early is not None:
        return early
    edits: list[Edit] = []
    changed: dict[int, list] = {}
    # the loop runs once per older tool result (8,000 at 10k messages): names bound locally, Edit built
    # from positional fields (kind, text, start, end, message, block, out, tool_id, old_len, new_len)
    add_edit = edits.append
    placeholder = MICRO_PLACEHOLDER
    new_len = len(placeholder)
    replaced = 0
    tails: dict = {}   # length -> " (12,345 chars) with the placeholder": lengths repeat, "," formatting is slow
    for mi, bi, b in zip(f_mi[:n_older], f_bi[:n_older], f_b[:n_older]):
        content = b.get("content", "")
        if content.__class__ is str and content == placeholder:
            continue          # compacted at an earlier call: left as it is, with no edit (as below, sooner)
        tid = b.get("tool_use_id")
        try:
            length = len(content)
        except TypeError:
            add_edit(incremental.type_note(tid, content, mi, bi))
            continue
        if length <= min_chars:
            if isinstance(content, list) and len(str(content)) > min_chars:
                add_edit(incremental.list_note(tid, length, len(str(content)), _fmt, mi, bi))
            continue
        if content == placeholder:
            continue
        blocks_ = changed.get(mi)
        if blocks_ is None:
            blocks_ = changed[mi] = list(messages[mi]["content"])
        blocks_[bi] = {**b, "content": placeholder}
        tail = tails.get(length)
        if tail is None:
            tail = tails[length] = f" ({length:,} chars) with the placeholder"
        add_edit(Edit(REPLACE, f"replaced {tid}{tail}", None, None, mi, bi, mi, tid, length, new_len))
        replaced += 1
    v["replaced"] = replaced
    v["kept_recent"] = [b.get("tool_use_id") for b in f_b[-keep_recent:]] if keep_recent > 0 else []
    return incremental.micro_finish(messages, changed, edits, v, n_older, keep_recent, min_chars, ctx.explain)


# ------------------------------------------------------------ L4 summary
def _dumps_head(messages: list, cap: int) -> str:
    """``json.dumps(messages, default=str, ensure_ascii=False)[:cap]`` without dumping the messages past
    the cap: a list dumps as "[" + ", ".join(each item dumped alike) + "]", so the items are dumped one
    at a time until the text is long enough (10k messages: the first ~50 instead of all)."""
    if cap <= 0:
        return json.dumps(messages, default=str, ensure_ascii=False)[:cap]
    parts = ["["]
    n = 1
    for i, m in enumerate(messages):
        if i:
            parts.append(", ")
            n += 2
        s = json.dumps(m, default=str, ensure_ascii=False)
        parts.append(s)
        n += len(s)
        if n >= cap:
            return "".join(parts)[:cap]
    parts.append("]")
    return "".join(parts)[:cap]


def _summarize(messages: list, ctx: LayerContext, purpose: str):
    cfg = S08Params.of(ctx)
    cap = cfg.summary_input_chars
    prompt = SUMMARY_PROMPT + _dumps_head(messages, cap)
    req = SummaryRequest(prompt=prompt, messages=tuple(messages), max_tokens=cfg.summary_max_tokens,
                         purpose=purpose)
    return ctx.summarizer.summarize(req, ctx.cancel)


def compact_history(messages: list, ctx: LayerContext) -> LayerOutput:
    cfg = S08Params.of(ctx)
    limit = cfg.context_limit
    max_failures = cfg.max_failures
    size = ctx.meter.raw_total(messages)      # the seed's len(str(messages)): an image's base64 text included
    failures = int(ctx.state.get("consecutive_failures", 0))
    if not ctx.explain and (size <= limit or failures >= max_failures):
        return LayerOutput.unchanged(messages, triggered=False)
    v = {"size": size, "context_limit": limit, "consecutive_failures": failures}
    if size <= limit:
        return LayerOutput.unchanged(messages, f"size {_fmt(size)} <= context_limit {_fmt(limit)}", vars=v,
                                     triggered=False)
    if failures >= max_failures:
        return LayerOutput.unchanged(messages, f"size {_fmt(size)} > {_fmt(limit)} but the circuit breaker is open "
                                               f"after {failures} consecutive summary failures", vars=v,
                                     triggered=False)
    return _summary_layer(messages, ctx, v, list(range(len(messages))), [], COMPACTED_PREFIX, "compact_history",
                          f"size {_fmt(size)} > context_limit {_fmt(limit)}")


def _summary_layer(messages, ctx, v, summarised: list, kept_tail: list, prefix: str, purpose: str, why: str,
                   tail_start: int | None = None) -> LayerOutput:
    transcript = ctx.workspace.write_transcript(messages)
    part = [messages[i] for i in summarised]
    try:
        res = _summarize(part, ctx, purpose)
    except SummaryError as e:
        v["consecutive_failures"] = v.get("consecutive_failures", 0) + 1
        return LayerOutput(messages, SameOrigin(len(messages)), [], v, f"{why}; the summary failed",
                           triggered=True, state={"consecutive_failures": v["consecutive_failures"]},
                           error=str(e), summary={"error": str(e), "kind": e.kind})
    text = prefix + res.text
    out = [{"role": "user", "content": text}] + [messages[i] for i in kept_tail]
    origin = [None] + kept_tail
    end = summarised[-1] + 1 if summarised else 0
    edits = [Edit(SUMMARY, f"replaced messages 0..{end - 1} ({len(summarised)}) with a summary by "
                           f"{res.summarizer}{' (cached)' if res.cached else ''}; transcript saved to {transcript}",
                  start=0, end=end, out=0, new_len=len(text), path=str(transcript))]
    v.update(summarised=len(summarised), kept=len(kept_tail), transcript=str(transcript))
    if tail_start is not None:
        v["tail_start"] = tail_start
    return LayerOutput(out, origin, edits, v, f"{why}: summarised {len(summarised)} message(s)", triggered=True,
                       state={"consecutive_failures": 0}, summary={**res.to_json(), "text": res.text})


def reactive_compact(messages: list, ctx: LayerContext) -> LayerOutput:
    cfg = S08Params.of(ctx)
    keep = cfg.reactive_keep
    n = len(messages)
    tail_start = max(0, n - keep)
    v = {"messages": n, "reactive_keep": keep, "tail_start_initial": tail_start}
    edits: list[Edit] = []
    if 0 < tail_start < n and is_tool_result_message(messages[tail_start]) and has_tool_use(messages[tail_start - 1]):
        edits.append(Edit(BOUNDARY, f"tail_start {tail_start} -> {tail_start - 1}: message {tail_start} is a user "
                                    f"tool_result and message {tail_start - 1} holds its tool_use",
                          var="tail_start", old=tail_start, new=tail_start - 1))
        tail_start -= 1
    out = _summary_layer(messages, ctx, v, list(range(tail_start)), list(range(tail_start, n)), REACTIVE_PREFIX,
                         "reactive_compact", "the API said the prompt is too long", tail_start)
    out.edits[:0] = edits
    return out


def compact_tool(messages: list, ctx: LayerContext) -> LayerOutput:
    """The model called the ``compact`` tool. The teaching code replaces the
    history before appending the batch's tool results, so those results point at
    tool_use ids that no longer exist (an API 400). ``compact_tool_mode=deferred``
    (later versions) appends the results first and compacts after the batch."""
    cfg = S08Params.of(ctx)
    deferred = cfg.compact_tool_mode == "deferred"
    n = len(messages)
    # find the assistant message that called compact and its results, if already appended
    if n and is_tool_result_message(messages[-1]) and n >= 2 and has_tool_use(messages[-2]):
        history, results_msg = messages[:-1], messages[-1]
    elif n and has_tool_use(messages[-1]):
        history, results_msg = messages, None
    else:
        return LayerOutput.unchanged(messages, "the last turn did not call the compact tool")
    call = next((b for b in messages[len(history) - 1]["content"]
                 if block_type(b) == "tool_use" and b.get("name") == "compact"), None)
    if call is None:
        return LayerOutput.unchanged(messages, "the last assistant message did not call the compact tool")
    results = [b for b in (results_msg["content"] if results_msg else []) if block_type(b) == "tool_result"
               and b.get("tool_use_id") != call.get("id")]
    results.append({"type": "tool_result", "tool_use_id": call.get("id"), "content": COMPACT_TOOL_RESULT})
    v = {"mode": "deferred" if deferred else "teaching", "batch_results": len(results)}
    results_message = {"role": "user", "content": results}
    if deferred:
        full = history + [results_message]
        out = _summary_layer(full, ctx, v, list(range(len(full))), [], COMPACTED_PREFIX, "compact_tool",
                             "the model called compact (deferred until after the batch)")
        # origin refers to `full`; the last message of full is new
        return out
    out = _summary_layer(history, ctx, v, list(range(len(history))), [], COMPACTED_PREFIX, "compact_tool",
                         "the model called compact")
    if out.error:
        return out
    out.messages = out.messages + [results_message]
    out.origin = out.origin + [None]
    out.edits.append(Edit(NOTE, f"appended {len(results)} tool result(s) after the summary: their tool_use ids are "
                                "gone with the history (the teaching code's bug; the API answers 400)"))
    return out


LAYERS = {
    "tool_result_budget": Layer("tool_result_budget", tool_result_budget,
                                "L3: if the last message's tool results total more than max_bytes, persist the "
                                "largest (over persist_threshold) to disk and leave a preview",
                                label="L3 budget", role=roles.BUDGET),
    "snip_compact": Layer("snip_compact", snip_compact,
                          "L1: over max_messages, keep the first keep_head and the last max_messages-keep_head "
                          "messages, moving the cut so no tool_use/tool_result pair is split",
                          label="L1 snip", role=roles.SNIP),
    "micro_compact": Layer("micro_compact", micro_compact,
                           "L2: replace all but the last keep_recent tool results longer than 120 chars with a "
                           "placeholder", label="L2 micro", role=roles.MICRO),
    "compact_history": Layer("compact_history", compact_history,
                             "L4: over context_limit, save a transcript and replace everything with an LLM summary",
                             llm=True, label="L4 summary", role=roles.SUMMARY),
    "reactive_compact": Layer("reactive_compact", reactive_compact,
                              "On 'prompt too long': summarise all but the last reactive_keep messages",
                              llm=True, label="reactive", role=roles.REACTIVE),
    "compact_tool": Layer("compact_tool", compact_tool,
                          "The model called the compact tool: summarise the history", llm=True,
                          label="compact tool", role=roles.MANUAL),
}
