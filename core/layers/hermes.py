"""Hermes agent's ContextCompressor.compress (hermes-agent 0.19.0) as five traced layers.

    hermes_prune -> hermes_boundaries -> hermes_summarize -> hermes_assemble -> hermes_sanitize

The rules are in ``hermes_rules``; this module turns each phase into a pure layer with an
origin map, edits in words and working variables. The phases hand data to each other through
the pipeline state: ``hermes_pass`` (this pass: original length and tokens, the cut) is
transient and cleared by the last layer; ``hermes_previous_summary`` (iterative summaries),
``hermes_compression_count`` (head protection decays after the first compaction),
``hermes_ineffective`` and ``hermes_cooldown_until`` persist between runs like the fields of
their compressor object.

Deliberate differences from the real package are listed in ``docs/hermes.md``.
"""
from __future__ import annotations

import time

from ..runtime.record import record
from ..summarizers import SummaryError, SummaryRequest
from ..model.text import text_parts
from ..pipeline.trace import BOUNDARY, DROP, NOTE, REPLACE, SUMMARY, Delta, Edit, LayerOutput, SameOrigin
from . import hermes_rules as R
from . import hermes_summary as S
from .hermes_prune import prune_pass
from . import base as roles
from .base import Layer, LayerContext
from ..i18n import english as words
from .params import Settings, param


HERMES_VERSION = "0.19.0"          # the hermes-agent release these layers reproduce (core.hermes_oracle checks it)

PASS = "hermes_pass"
PREVIOUS = "hermes_previous_summary"
COUNT = "hermes_compression_count"
INEFFECTIVE = "hermes_ineffective"
COOLDOWN = "hermes_cooldown_until"
PROGRESS = "hermes_last_progress"
COOLDOWN_SECONDS = 60


@record(frozen=True)
class HermesParams(Settings):
    """hermes-agent's ContextCompressor parameters (its config keys and constants)."""

    context_length: int = param(
        200_000, "the model's context window in tokens (config_context_length)",
        minimum=1_000, unit="tokens")
    max_tokens: int = param(
        0, "output tokens reserved out of the window (0 = provider default, no reservation); "
        "the threshold works on context_length - max_tokens",
        minimum=0, unit="tokens")
    threshold_pct: float = param(
        0.50, "compress when the estimate reaches this share of the usable window; raised "
        "to at least 0.75 for windows under 512,000 tokens; the result is floored at 64,000 tokens (85% of "
        "the window when that floor would not fit)",
        minimum=0.01, maximum=1.0)
    protect_first_n: int = param(
        3, "messages after the system prompt kept verbatim at the head, on the FIRST "
        "compaction only (0 afterwards, so early turns do not fossilize)",
        minimum=0)
    protect_last_n: int = param(
        20, "the prune pass protects at least this many recent messages; the tail cut "
        "keeps at least min(this, 8) (and at least 3)",
        minimum=0)
    summary_target_ratio: float = param(
        0.20, "tail token budget = threshold x this (clamped to 0.10-0.80); the "
        "tail may run to 1.5x the budget",
        minimum=0.10, maximum=0.80)
    trigger: str = param(
        "threshold", "'threshold' = compress only when the estimate reaches the threshold (and "
        "not in anti-thrash or cooldown); 'always' = compress now, like the /compress command",
        choices=("threshold", "always"))
    abort_on_summary_failure: bool = param(
        False, "when the summary LLM fails: false = insert the deterministic "
        "fallback summary; true = abort and keep the messages (auth and network errors always abort)")
    focus_topic: str = param(
        "", "optional focus for the summary prompt (like /compress <topic>); empty = derived "
        "from the last user turns")
    moa_preview_chars: int = param(
        4000, "Mixture-of-Agents view: tool results are folded into previews of this "
        "many characters",
        minimum=0, unit="chars")


def _fmt(n: int) -> str:
    return f"{n:,}"


_BUDGETS: dict[tuple, R.Budgets] = {}      # (window, pct, max_tokens, ratio) -> its budgets (a pure function)


def _budgets_of(params: dict) -> R.Budgets:
    mt = int(params.get("max_tokens", 0) or 0)
    key = (int(params.get("context_length", 200_000)), float(params.get("threshold_pct", 0.50)),
           mt if mt > 0 else None, float(params.get("summary_target_ratio", 0.20)))
    b = _BUDGETS.get(key)
    if b is None:
        if len(_BUDGETS) >= 64:
            _BUDGETS.clear()
        b = _BUDGETS[key] = R.budgets(*key)
    return b


def _budgets(ctx: LayerContext) -> R.Budgets:
    return _budgets_of(ctx.params)


def threshold(params: dict) -> int:
    """The token count at which the strategy compacts, for charts and replay."""
    return _budgets_of(params).threshold_tokens


def head_size(messages: list, state: dict, protect_first_n: int) -> int:
    """System message (always) + protect_first_n, the latter only before the first compaction (#11996)."""
    sys_ = 1 if messages and messages[0].get("role") == "system" else 0
    decayed = state.get(COUNT, 0) >= 1 or bool(state.get(PREVIOUS))
    return sys_ + (0 if decayed else protect_first_n)


def _now(ctx: LayerContext) -> float:
    return ctx.now if ctx.now is not None else time.time()


def _idle(messages: list, why: str, **kw) -> LayerOutput:
    return LayerOutput.unchanged(messages, why, **kw)


# ------------------------------------------------------------------ 1. prune
def hermes_prune(messages: list, ctx: LayerContext) -> LayerOutput:
    cfg = HermesParams.of(ctx)
    b = _budgets(ctx)
    st = ctx.state
    # The engine's estimator is the strategy's (hermes rough estimate) unless the user chose another one
    # (count_tokens) or replay calibrated it against recorded usage: the trigger uses the same figure the
    # chart shows, as Hermes compares the API's real prompt tokens when it has them.
    est = ctx.tokens.tokens(messages, ctx.meter, system=ctx.system, tools=ctx.tools)
    trigger = cfg.trigger
    if not ctx.explain and trigger != "always" and (est < b.threshold_tokens or st.get(INEFFECTIVE, 0) >= 2
                                                    or st.get(COOLDOWN, 0) > _now(ctx)):
        return LayerOutput.unchanged(messages, triggered=False, state={PASS: None})   # (``LayerContext.explain``)
    v = {"context_length": b.context_length, "threshold_pct": b.threshold_pct, "threshold_tokens": b.threshold_tokens,
         "threshold_why": b.why, "tail_budget": b.tail_budget, "estimated_tokens": est, "trigger": trigger}
    clear = {PASS: None}
    if trigger != "always":
        if est < b.threshold_tokens:
            return _idle(messages, f"estimated {_fmt(est)} tokens < threshold {_fmt(b.threshold_tokens)} "
                                   f"({b.why})", vars=v, triggered=False, state=clear)
        if st.get(INEFFECTIVE, 0) >= 2:
            return _idle(messages, f"anti-thrash: {st[INEFFECTIVE]} ineffective attempts in a row, automatic "
                                   "compaction is blocked (set trigger=always to force)", vars=v, triggered=False,
                         state=clear)
        if st.get(COOLDOWN, 0) > _now(ctx):
            return _idle(messages, "the summary model is in its failure cooldown", vars=v, triggered=False,
                         state=clear)
    n = len(messages)
    head = head_size(messages, st, cfg.protect_first_n)
    v.update(messages=n, head=head)
    if n <= head + 3 + 1:
        return _idle(messages, f"only {n} messages: compress needs more than head {head} + 4",
                     vars=v, triggered=True, state={PASS: None, INEFFECTIVE: st.get(INEFFECTIVE, 0) + 1})
    protect_n = cfg.protect_last_n
    out, edits, stats = prune_pass(messages, protect_n, b.tail_budget, ctx.meter)
    v.update(stats)
    state = {PASS: {"orig_len": n, "orig_tokens": R.rough_tokens(messages, ctx.meter)}}
    if out is messages:
        return _idle(messages, f"nothing to prune outside the protected tail (messages {stats['prune_boundary']}+)",
                     vars=v, triggered=True, state=state)
    note = (f"pruned {stats['deduplicated']} duplicate(s), {stats['summarized']} old result(s) to one-liners, "
            f"{stats['images_stripped']} screenshot result(s), shrank the arguments of {stats['args_shrunk']} "
            f"call message(s); messages {stats['prune_boundary']}+ are the protected tail")
    changed = sorted({e.message for e in edits if e.kind == REPLACE and e.message is not None})
    return LayerOutput(out, list(range(n)), edits, v, note, triggered=True, state=state,
                       delta=Delta.replaced(changed))


# ------------------------------------------------------------------ 2. boundaries
def hermes_boundaries(messages: list, ctx: LayerContext) -> LayerOutput:
    cfg = HermesParams.of(ctx)
    p = ctx.state.get(PASS)
    if not p:
        return _idle(messages, "no compaction in this pass")
    head = head_size(messages, ctx.state, cfg.protect_first_n)
    start = R.align_forward(messages, head)
    edits = []
    if start != head:
        edits.append(Edit(BOUNDARY, f"compress_start {head} -> {start}: moved past tool results after the head",
                          var="compress_start", old=head, new=start))
    cut = R.tail_cut(messages, start, _budgets(ctx).tail_budget, cfg.protect_last_n, ctx.meter)
    for old, new, why in cut.steps:
        edits.append(Edit(BOUNDARY, f"compress_end {old} -> {new}: {why}", var="compress_end", old=old, new=new))
    end = cut.index
    v = {"head": head, "compress_start": start, "compress_end": end, **cut.vars}
    if start >= end:
        st = {PASS: None, INEFFECTIVE: ctx.state.get(INEFFECTIVE, 0) + 1}
        return LayerOutput(messages, SameOrigin(len(messages)), edits, v,
                           f"nothing to compress: compress_start {start} >= compress_end {end} (the transcript "
                           "fits in the head and the protected tail)", triggered=False, state=st)
    note = (f"head = messages [0, {start}), middle [{start}, {end}) goes to the summary, tail = [{end}, "
            f"{len(messages)})")
    return LayerOutput(messages, SameOrigin(len(messages)), edits, v, note, triggered=True,
                       state={PASS: {**p, "start": start, "end": end}})


# ------------------------------------------------------------------ 3. summarize
def hermes_summarize(messages: list, ctx: LayerContext) -> LayerOutput:
    cfg = HermesParams.of(ctx)
    p = ctx.state.get(PASS)
    if not p or "end" not in p:
        return _idle(messages, "no compaction in this pass")
    start, end = p["start"], p["end"]
    n = len(messages)
    previous = ctx.state.get(PREVIOUS)
    turns = messages[start:end]
    search_from = 1 if messages and messages[0].get("role") == "system" else 0
    v = {"compress_start": start, "compress_end": end}
    if end > n:
        # hermes-agent 0.19.0's tail cut can end past the list (a user turn followed by an assistant with six or
        # more parallel tool calls: the cut moves past the tool results at the end); its
        # _find_latest_context_summary then indexes messages[compress_end - 1] and compress() raises IndexError
        # before summarising. The faithful result is that failure, as this layer's error.
        return LayerOutput(messages, list(range(n)), [], v, "hermes-agent fails here: nothing compacted",
                           error=f"hermes-agent {HERMES_VERSION} fails here too: compress() raises IndexError "
                                 f"(list index out of range) in _find_latest_context_summary, because "
                                 f"compress_end {end} is past the end of the {n}-message list; the messages are "
                                 "kept unchanged", state={PASS: None}, triggered=False)
    found, body = R.latest_summary(messages, search_from, end)
    if found is not None:
        if body and not previous:
            previous = body
        turns = messages[max(start, found + 1):end]
        v["earlier_summary_at"] = found
    elif previous:
        previous = None
    v.update(turns=len(turns), iterative=bool(previous))
    b = _budgets(ctx)
    budget = R.summary_budget(turns, b.max_summary_tokens, ctx.meter)
    focus = cfg.focus_topic or S.auto_focus(messages)
    v["summary_budget_tokens"] = budget
    state: dict = {PREVIOUS: previous}
    text = reason = None
    kind = ""
    info = None
    if ctx.state.get(COOLDOWN, 0) > _now(ctx) and cfg.trigger != "always":
        reason, kind = None, "cooldown"
    else:
        prompt = S.summary_prompt_lazy(turns, previous, budget, focus)
        req = SummaryRequest.lazy(prompt, messages=tuple(turns), system=S.SUMMARY_SYSTEM, max_tokens=budget,
                                  purpose="hermes_compress", extra={"focus": focus, "iterative": bool(previous)})
        try:
            res = ctx.summarizer.summarize(req, ctx.cancel)
            reply = res.text if isinstance(res.text, str) else str(res.text or "")
            if not reply.strip():
                raise SummaryError("the summary model returned empty content", kind="empty")
            info = {**res.to_json(), "text": reply}
            cleaned = R.strip_reasoning(reply).strip()
            grounded = R.ground_task_snapshot(cleaned or reply.strip(), turns)
            state[PREVIOUS] = grounded
            state[COOLDOWN] = 0
            text = R.with_summary_prefix(grounded)
        except SummaryError as e:
            kind = e.kind
            reason = str(e.args[0]).strip() if e.args else type(e).__name__
            if len(reason) > 220:
                reason = reason[:217].rstrip() + "..."
            state[COOLDOWN] = _now(ctx) + COOLDOWN_SECONDS
    if text is None:
        if kind in ("auth", "network") or cfg.abort_on_summary_failure:
            state[PASS] = None
            return LayerOutput(messages, list(range(n)), [], v, "summary failed: compaction aborted, messages kept",
                               error=f"summary failed ({kind or 'error'}): {reason}", state=state, triggered=False)
        text = S.fallback_summary(turns, reason, bool(previous))
        v["fallback"] = True
        info = {"summarizer": "hermes deterministic fallback", "cached": False, "chars": len(text),
                "reason": reason or kind}
    out = messages[:start] + [{"role": "user", "content": text, R.SUMMARY_FLAG: True}] + messages[end:]
    origin = list(range(start)) + [None] + list(range(end, n))
    how = "a deterministic fallback summary" if v.get("fallback") else \
        ("an updated summary (iterative)" if previous else "a new summary")
    edit = Edit(SUMMARY, f"messages [{start}, {end}) replaced by {how} of {_fmt(len(text))} chars",
                start=start, end=end, out=start, new_len=len(text))
    state[PASS] = {**p, "summary_at": start, "fallback": bool(v.get("fallback"))}
    return LayerOutput(out, origin, [edit], v, edit.text + " (its role is chosen by assemble)", triggered=True,
                       state=state, summary=info)


# ------------------------------------------------------------------ 4. assemble
def _fresh(m: dict) -> dict:
    if R.DB_PERSISTED in m:
        m = dict(m)
        m.pop(R.DB_PERSISTED)
    return m


def hermes_assemble(messages: list, ctx: LayerContext) -> LayerOutput:
    p = ctx.state.get(PASS)
    if not p or "summary_at" not in p:
        return _idle(messages, "no compaction in this pass")
    s = p["summary_at"]
    head, summary, tail = messages[:s], messages[s], messages[s + 1:]
    edits: list[Edit] = []
    out, origin = [], []
    for i, m in enumerate(head):
        fm = _fresh(m)
        if i == 0 and fm.get("role") == "system":
            existing = fm.get("content")
            if R.SYSTEM_COMPACTION_NOTE not in text_parts(existing):
                add = ("\n\n" + R.SYSTEM_COMPACTION_NOTE) if isinstance(existing, str) and existing \
                    else R.SYSTEM_COMPACTION_NOTE
                fm = {**fm, "content": R.append_text(existing, add)}
                edits.append(Edit(REPLACE, "system message: the compaction note appended once", message=0))
        out.append(fm)
        origin.append(i)
    last_head = head[-1].get("role", "user") if head else "user"
    first_tail = tail[0].get("role", "user") if tail else "user"
    force_user = last_head == "system"
    if not force_user and not any(m.get("role") == "user" for m in head + tail):
        force_user = True
    role = "user" if last_head in ("assistant", "tool") or force_user else "assistant"
    merge = False
    why = f"after {words.a(last_head)} message" if head else "it leads the list"
    if force_user:
        why = "the head ends with the system prompt" if last_head == "system" else "no user message survives"
    if role == first_tail:
        flipped = "assistant" if role == "user" else "user"
        if flipped != last_head and not force_user:
            role, why = flipped, f"flipped to {flipped} so it does not repeat the tail's {first_tail}"
        else:
            merge = True
    v = {"last_head_role": last_head, "first_tail_role": first_tail, "summary_role": role, "merged": merge}
    text = summary["content"]
    if not merge:
        out.append({"role": role, "content": text + "\n\n" + R.SUMMARY_END_MARKER, R.SUMMARY_FLAG: True})
        origin.append(s)
        edits.append(Edit(SUMMARY, f"summary placed as {'an' if role == 'assistant' else 'a'} {role} message ({why}), END marker appended",
                          message=s, out=len(out) - 1))
    for k, m in enumerate(tail):
        fm = _fresh(m)
        if merge and k == 0:
            suffix = "\n\n" + R.MERGED_SUMMARY_DELIMITER + "\n\n" + text + "\n\n" + R.SUMMARY_END_MARKER
            content = R.append_text(R.append_text(fm.get("content", ""), suffix),
                                    R.MERGED_PRIOR_CONTEXT_HEADER + "\n", prepend=True)
            fm = {**fm, "content": content, R.SUMMARY_FLAG: True}
            fm.pop("api_content", None)
            edits.append(Edit(SUMMARY, f"summary merged into the first tail message (a {first_tail}): a standalone "
                                       f"{role} summary would collide with both neighbours; its own text is kept "
                                       "first between PRIOR CONTEXT delimiters", message=s + 1, out=len(out)))
        out.append(fm)
        origin.append(s + 1 + k)
    stripped = sum(1 for m in head + tail if R.DB_PERSISTED in m)
    if stripped:
        edits.append(Edit(NOTE, f"{stripped} copied message(s) lost their _db_persisted marker (#57491)"))
    v["db_markers_stripped"] = stripped
    note = "; ".join(e.text for e in edits if e.kind == SUMMARY)
    return LayerOutput(out, origin, edits, v, note, triggered=True)


# ------------------------------------------------------------------ 5. sanitize
def sanitize_pairs(messages: list) -> tuple[list, list, list[Edit]]:
    """Drop results whose call is gone; strip calls whose result is gone. Returns (messages, origin, edits)."""
    calls = {R.call_id(c) for m in messages if m.get("role") == "assistant"
             for c in (m.get("tool_calls") or [])} - {""}
    results = {m.get("tool_call_id") for m in messages if m.get("role") == "tool" and m.get("tool_call_id")}
    orphans = results - calls
    missing = calls - results
    out, origin, edits = [], [], []
    for i, m in enumerate(messages):
        if orphans and m.get("role") == "tool" and m.get("tool_call_id") in orphans:
            edits.append(Edit(DROP, f"message {i}: tool result {m.get('tool_call_id')} dropped, its call is gone",
                              message=i, tool_id=m.get("tool_call_id")))
            continue
        if missing and m.get("role") == "assistant" and m.get("tool_calls"):
            kept = [c for c in m["tool_calls"] if R.call_id(c) not in missing]
            if len(kept) != len(m["tool_calls"]):
                gone = [R.call_id(c) for c in m["tool_calls"] if R.call_id(c) in missing]
                m = dict(m)
                if kept:
                    m["tool_calls"] = kept
                else:
                    m.pop("tool_calls")
                    c = m.get("content")
                    if not c or (isinstance(c, str) and not c.strip()):
                        m["content"] = R.TOOL_CALL_REMOVED
                edits.append(Edit(DROP, f"message {i}: tool call(s) {', '.join(gone)} stripped, their results "
                                        "are gone", message=i))
        out.append(m)
        origin.append(i)
    return out, origin, edits


def strip_old_images(messages: list) -> tuple[list, list[Edit]]:
    """Images in messages before the newest image-bearing user message become a text placeholder."""
    anchor = -1
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if isinstance(m, dict) and m.get("role") == "user" and R.has_images(m.get("content")):
            anchor = i
            break
    if anchor <= 0:
        return messages, []
    out, edits = list(messages), []
    for i in range(anchor):
        m = messages[i]
        if isinstance(m, dict) and R.has_images(m.get("content")):
            new = {**m, "content": [{"type": "text", "text": R.ATTACHED_IMAGE_TEXT} if R.is_image_part(p) else p
                                    for p in m["content"]]}
            new.pop("api_content", None)
            out[i] = new
            edits.append(Edit(REPLACE, f"message {i}: image(s) older than the newest user image ({anchor}) "
                                       "replaced by a placeholder", message=i))
    return (out, edits) if edits else (messages, [])


def hermes_sanitize(messages: list, ctx: LayerContext) -> LayerOutput:
    p = ctx.state.get(PASS)
    if not p or "summary_at" not in p:
        return _idle(messages, "no compaction in this pass", state={PASS: None})
    out, origin, edits = sanitize_pairs(messages)
    out2, img_edits = strip_old_images(out)
    edits += img_edits
    marked = [i for i, m in enumerate(out2) if R.DB_PERSISTED in m]
    if marked:
        out2 = [_fresh(m) for m in out2]
        edits.append(Edit(NOTE, f"terminal sweep removed _db_persisted from {len(marked)} message(s)"))
    new_tokens = R.rough_tokens(out2, ctx.meter)
    orig_len, orig_tokens = p["orig_len"], p["orig_tokens"]
    progress = len(out2) < orig_len or (new_tokens > 0 and new_tokens < orig_tokens * 0.95)
    count = ctx.state.get(COUNT, 0) + 1
    v = {"messages_before": orig_len, "messages_after": len(out2), "tokens_before": orig_tokens,
         "tokens_after": new_tokens, "made_progress": progress, "compression_count": count,
         "savings_pct": round((orig_tokens - new_tokens) / orig_tokens * 100, 1) if orig_tokens else 0.0}
    state = {PASS: None, COUNT: count, PROGRESS: progress}
    if progress:
        state[INEFFECTIVE] = 0
    rule = (f"progress: {orig_len} -> {len(out2)} messages, ~{_fmt(orig_tokens)} -> ~{_fmt(new_tokens)} tokens"
            if progress else
            f"NO progress (same message count and tokens fell by <= 5%: ~{_fmt(orig_tokens)} -> "
            f"~{_fmt(new_tokens)}): the turn loop stops retrying")
    edits.append(Edit(NOTE, rule))
    changed = out2 is not messages
    note = ("; ".join(e.text for e in edits[:-1]) + "; " if changed else "tool pairs and images already clean; ") + rule
    if not changed:
        return LayerOutput.unchanged(messages, note, vars=v, state=state, edits=edits)
    return LayerOutput(out2, origin, edits, v, note, state=state)


LAYERS = {
    "hermes_prune": Layer("hermes_prune", hermes_prune,
                          "threshold check, then the cheap prune pass: dedup identical tool outputs, one-line "
                          "summaries of old results, shrink old call arguments", label="prune", role=roles.PRUNE),
    "hermes_boundaries": Layer("hermes_boundaries", hermes_boundaries,
                               "head (system + protect_first_n on the first compaction) and tail (token budget, "
                               "tool groups, last user and assistant anchors)", label="boundaries",
                               role=roles.BOUNDARIES),
    "hermes_summarize": Layer("hermes_summarize", hermes_summarize,
                              "the middle becomes one summary (iterative update of the previous one; deterministic "
                              "fallback when the LLM fails)", llm=True, label="summarize", role=roles.SUMMARY),
    "hermes_assemble": Layer("hermes_assemble", hermes_assemble,
                             "head copies + summary (role chosen for alternation, END marker, or merged into the "
                             "tail) + tail copies", label="assemble", role=roles.ASSEMBLE),
    "hermes_sanitize": Layer("hermes_sanitize", hermes_sanitize,
                             "orphaned tool results and calls removed, old images stripped, _db_persisted swept, "
                             "the 5% progress rule", label="sanitize", role=roles.SANITIZE),
}
