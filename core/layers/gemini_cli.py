"""Gemini CLI's chat compression (``packages/core``: the chat compression service, its split point, the tool
output truncation of old function responses, the summary and its verification; ``tokenLimits``), as four
traced layers over OpenAI chat messages (the dialect the Gemini CLI loaders map onto):

    gemini_truncate -> gemini_split -> gemini_summarize -> gemini_assemble

The CLI checks before every request it sends (a tool response's continuation too) and compresses when the
prompt token count the last response reported reaches ``compression_threshold x`` the model's token limit.
The history it compresses is the chat's: the request being sent (the trailing messages after the last model
answer: a prompt or tool responses) is not in it, and follows the new history. The rules are written here
from the CLI's source (Gemini CLI 0.61.0); the strings the CLI itself puts into the context (the
acknowledgement, the truncation header) are kept as the CLI writes them, since the context must match.

State between runs (the fields of the CLI's client): ``gemini_failed_compression`` (an inflated result blocks
further summaries: truncation only, as the CLI's ``hasFailedCompressionAttempt``), ``gemini_last_compression``
(what the previous compression freed, for the loop check) and ``gemini_runs_since`` (requests since it).
``gemini_pass`` hands data from layer to layer within one run and is cleared by the last.
"""
from __future__ import annotations

import json
import math
import os
import re
from bisect import bisect_left
from operator import is_
from typing import Any, Callable
from weakref import WeakKeyDictionary

from ..runtime.record import record
from ..files.workspace import PERSIST_DIR
from ..summarizers import SummaryError, SummaryRequest
from ..pipeline.trace import BOUNDARY, NOTE, PERSIST, SUMMARY, Edit, LayerOutput
from . import base as roles
from .base import Layer, LayerContext
from .gemini_view import (  # noqa: F401  (the CLI's view, re-exported: the layers' callers find it here)
    EXEMPT_TOOLS, MASKED_TAG, HistoryScan, estimate, estimate_from_scratch, history_scan, message_parts,
    parts_tokens, result_text, split_shape,
    text_tokens, to_contents,
)
from .gemini_view import js_len as _js_len, part_tokens as _part_tokens, responses as _responses  # noqa: F401
from .gemini_view import text_of as _text_of
from .params import Settings, param

GEMINI_CLI_VERSION = "0.61.0"
DEFAULT_COMPRESSION_THRESHOLD = 0.5
PRESERVE_FRACTION = 0.3                 # the newest 30% of the history's characters is kept
FUNCTION_RESPONSE_TOKEN_BUDGET = 50_000
TRUNCATE_TOOL_OUTPUT_THRESHOLD = 40_000  # chars, the CLI's default truncateToolOutputThreshold
DEFAULT_TOKEN_LIMIT = 1_048_576


@record(frozen=True)
class GeminiCliParams(Settings):
    """Gemini CLI's compression settings (its model.compressionThreshold, the model's token limit)."""

    compression_threshold: float = param(
        DEFAULT_COMPRESSION_THRESHOLD, "model.compressionThreshold (~/.gemini/settings.json): compress when the last "
        "prompt token count reaches this share of the model's token limit",
        minimum=0.0001, maximum=1.0)
    token_limit: int = param(
        DEFAULT_TOKEN_LIMIT, "the model's token limit (the CLI's tokenLimits: 1,048,576 for Gemini models, 256,000 "
        "for Gemma 4)",
        minimum=1, unit="tokens")
    force: bool = param(False, "compress whatever the count, as the /compress command does")
TOKEN_LIMITS = {"gemma-4-31b-it": 256_000, "gemma-4-26b-a4b-it": 256_000}   # every other model: the default
ACK = "Got it. Thanks for the additional context!"
SNAPSHOT = "<state_snapshot>"
SESSION_CONTEXT = "<session_context>"
LOOP_FREED_SHARE = 0.10                 # a compression right after another that frees less is a loop

PASS = "gemini_pass"
FAILED = "gemini_failed_compression"
LAST = "gemini_last_compression"
SINCE = "gemini_runs_since"

# statuses, as the CLI names them
NOOP, COMPRESSED, CONTENT_TRUNCATED = "NOOP", "COMPRESSED", "CONTENT_TRUNCATED"
INFLATED, EMPTY = "COMPRESSION_FAILED_INFLATED_TOKEN_COUNT", "COMPRESSION_FAILED_EMPTY_SUMMARY"


def token_limit(model: Any) -> int:
    """The model's token limit as the CLI's ``tokenLimit`` answers it (1,048,576 for every Gemini model)."""
    return TOKEN_LIMITS.get(str(model or ""), DEFAULT_TOKEN_LIMIT)


def threshold(params: dict) -> int:
    """The prompt token count at which the CLI compresses: compression_threshold x token_limit."""
    return math.ceil(float(params.get("compression_threshold", DEFAULT_COMPRESSION_THRESHOLD)) *
                     int(params.get("token_limit", DEFAULT_TOKEN_LIMIT)))


def _fmt(n: float) -> str:
    return f"{int(n):,}"


# ------------------------------------------------------------------ the CLI's view of a history

def _quarter_tokens(m: Any, meter: Any = None) -> int:
    """Four times the CLI's estimate of one message's parts (a whole number; a function response's name,
    which its call holds, is left out)."""
    if not isinstance(m, dict):
        return 0
    _, parts = message_parts(m, {})
    return math.floor(4 * sum(parts_tokens([p]) + _fraction(p) for p in parts))


def _fraction(p: dict) -> float:
    """What ``parts_tokens`` of one part floors away, so that a sum of parts is the estimate of the whole."""
    t = _part_tokens(p)
    return t - math.floor(t)


class GeminiTokens:
    """The strategy's token figure: the CLI's own estimate of a list (a quarter token per ASCII character of
    its texts, 1.5 per other, chars/4 of calls and responses): what it counts for a history nobody has answered
    yet (after a compression, on a resume). The trigger reads the reported prompt count; replay adds the
    recorded overhead (system prompt, tools) to this figure."""
    name = "the Gemini CLI's estimate (chars/4 of the parts)"
    figure = "gemini_quarter_tokens"
    figure_fn = staticmethod(_quarter_tokens)

    def tokens_from(self, total: int, n: int, lead: Any = None, *, system: Any = None, tools: Any = None) -> int:
        return total // 4

    def tokens(self, messages: list, meter: Any, *, system: Any = None, tools: Any = None) -> int:
        if meter is not None:
            return meter.total(messages, self.figure, _quarter_tokens) // 4
        return sum(_quarter_tokens(m) for m in messages) // 4


def split_point(contents: list, fraction: float) -> tuple[int, dict]:
    """``findCompressSplitPoint``: the first user content that is not a function response at or after
    ``fraction`` of the characters (each content sized by its JSON); else everything when the history ends
    with a model answer that calls no function; else the last such user content (0: nothing)."""
    texts = [c["role"] == "user" and not any("functionResponse" in p for p in c["parts"]) for c in contents]
    tail = contents[-1] if contents else None
    plain_end = tail is not None and tail["role"] == "model" and not any("functionCall" in p for p in tail["parts"])
    return split_from([_js_len(c) for c in contents], texts, plain_end, fraction)


def split_from(sizes: list, texts: list, plain_end: bool, fraction: float) -> tuple[int, dict]:
    """``split_point`` from what it reads of the contents: their JSON lengths, which are user texts, whether the
    history ends with a model answer calling no function (``split_shape`` has them from per-message figures)."""
    total = sum(sizes)
    target = total * fraction
    last, cum = 0, 0
    v: dict = {"total_chars": total, "target_chars": round(target)}
    for i, text in enumerate(texts):
        if text:
            if cum >= target:
                v["rule"] = f"content {i}, the first user text at or after {round(target):,} chars (at {cum:,})"
                return i, v
            last = i
        cum += sizes[i]
    if plain_end:
        v["rule"] = "no user text after the target and the history ends with a plain model answer: all of it"
        return len(texts), v
    v["rule"] = (f"no user text after the target: the last one before it, content {last}" if last else
                 "no user text after the first content: nothing can be compressed")
    return last, v


def _history_end(messages: list) -> int:
    """Where the chat's history ends: after the last model answer (what follows is the request being sent)."""
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if isinstance(m, dict) and m.get("role") == "assistant":
            return i + 1
    return 0


def last_prompt_tokens(messages: list, h: int, ctx: LayerContext) -> tuple[int, str]:
    """The prompt token count the last response reported (the CLI's ``getLastPromptTokenCount``); a chat that
    has had no response since it started (a resumed session, a new history after a compression) counts the
    CLI's estimate of its history ``messages[:h]`` instead (what ``estimate`` says, from the scan kept per list)."""
    if any(getattr(ctx.meta.get(id(m)), "extra", {}).get("after_resume") for m in messages[h:] if isinstance(m, dict)):
        return history_scan(messages, h, ctx.meta).estimate(), "the session was resumed: the CLI's estimate of " \
            "the history it rebuilt"
    for i in range(h - 1, -1, -1):
        m = messages[i]
        if isinstance(m, dict) and m.get("role") == "assistant":
            meta = ctx.meta.get(id(m))
            usage = getattr(meta, "usage", None)
            if usage is not None and usage.context_tokens > 0:
                return usage.context_tokens, "the promptTokenCount the last response reported"
            break
    return history_scan(messages, h, ctx.meta).estimate(), "no response since the chat started: the CLI's " \
        "estimate of the history (chars/4)"



def _estimate_upto(messages: list, h: int, at: int, ctx: LayerContext) -> int:
    """``estimate(messages[:at])`` (``at <= h``) from the scan of ``messages[:h]`` kept per list: its total after
    each position is the same sum in the same order."""
    return math.floor(history_scan(messages, h, ctx.meta).totals[at])


def _idle(messages: list, why: str, **kw) -> LayerOutput:
    return LayerOutput.unchanged(messages, why, **kw)


# ------------------------------------------------------------------ persisted outputs, remembered per workspace
_PERSISTED: WeakKeyDictionary = WeakKeyDictionary()


def _persisted_memo(ws: Any) -> dict | None:
    """What this workspace's persisted outputs were named, for the layers that persist the same outputs at every
    call (an output the masking cannot shorten stays a candidate; the truncation cuts the same old responses at
    each compression): the workspace answers the same name for the same id and text while its files are there, so
    it is asked once. Forgotten when the results' folder is gone (a workspace cleared); None: not remembered."""
    root = getattr(ws, "root", None)
    try:
        memo = _PERSISTED.get(ws)
    except TypeError:                    # a workspace that cannot be weakly referenced
        return None
    if root is None:
        return None
    if memo is not None and not os.path.isdir(os.path.join(root, PERSIST_DIR)):
        memo = None
    if memo is None:
        memo = _PERSISTED[ws] = {}
    return memo


def _persist(ws: Any, memo: dict | None, key: Any, text: str) -> str:
    """``persist_tool_result(key, text)``'s name for the output, asked once per workspace (``_persisted_memo``)."""
    if memo is None:
        return ws.persist_tool_result(key, text)[0]
    rel = memo.get((key, text))
    if rel is None:
        rel = memo[key, text] = ws.persist_tool_result(key, text)[0]
    return rel


# ------------------------------------------------------------------ 1. trigger and truncation

def _with_response(m: dict, j: int | None, text: str) -> dict:
    if j is None:
        return {**m, "content": text}
    content = list(m["content"])
    content[j] = {**content[j], "content": text}
    return {**m, "content": content}


def truncated_output(text: str, path: str, max_chars: int) -> str:
    """The CLI's placeholder for a tool output cut to ``max_chars``: a fifth from the head, the rest from the
    tail, the full output in a file (unchanged when it fits)."""
    if len(text) <= max_chars:
        return text
    head_n = max_chars // 5
    tail_n = max_chars - head_n
    omitted = len(text) - head_n - tail_n
    tail = text[-tail_n:] if tail_n > 0 else ""
    return (f"Output too large. Showing first {head_n:,} and last {tail_n:,} characters. For full output see: "
            f"{path}\n{text[:head_n]}\n\n... [{omitted:,} characters omitted] ...\n\n{tail}")


def truncate_to_budget(history: list, ctx: LayerContext, max_chars: int,
                       budget: int = FUNCTION_RESPONSE_TOKEN_BUDGET) -> tuple[list, list, dict]:
    """``truncateHistoryToBudget``: newest first, function responses are kept in full while their tokens fit
    the budget; each older one is cut to a placeholder (its full text persisted), which counts instead."""
    out = list(history)
    edits, originals = [], {}
    used = 0.0
    memo = _persisted_memo(ctx.workspace)
    for i in range(len(history) - 1, -1, -1):
        m = history[i]
        for j, text in _responses(m):
            tokens = math.floor(text_tokens(text))
            if used + tokens <= budget:
                used += tokens
                continue
            tid = m.get("tool_call_id") if j is None else m["content"][j].get("tool_use_id")
            rel = _persist(ctx.workspace, memo, tid or f"gemini_{i}", text)
            short = truncated_output(text, rel, max_chars)
            used += math.floor(text_tokens(short))
            out[i] = _with_response(out[i], j, short)
            originals[i] = m
            edits.append(Edit(PERSIST, f"old function response {i} ({_fmt(tokens)} tokens) is past the "
                                       f"{_fmt(budget)}-token budget for function responses: cut to "
                                       f"{len(short):,} chars, the full output in {rel}",
                              message=i, block=j, tool_id=tid, old_len=len(text), new_len=len(short), path=rel))
    return out, edits, originals


def _check(messages: list, ctx: LayerContext) -> tuple[dict, LayerOutput | None]:
    """The threshold check; (vars, an idle output when nothing is to be done)."""
    cfg = GeminiCliParams.of(ctx)
    h = _history_end(messages)
    count, why = last_prompt_tokens(messages, h, ctx)
    limit = cfg.token_limit
    thr = threshold(ctx.params)
    force = cfg.force
    since = int(ctx.state.get(SINCE, 0) or 0) + 1
    if not ctx.explain and (not h or (not force and count < thr)):      # (no one reads it: ``LayerContext.explain``)
        return {}, LayerOutput.unchanged(messages, triggered=False, state={PASS: None, SINCE: since})
    v = {"last_prompt_tokens": count, "count_from": why, "token_limit": limit,
         "compression_threshold": cfg.compression_threshold,
         "threshold_tokens": thr, "history_messages": h, "request_messages": len(messages) - h, "force": force}
    clear = {PASS: None, SINCE: since}
    if not h:
        return v, _idle(messages, "the history is empty: NOOP", vars=v, triggered=False, state=clear)
    if not force and count < thr:
        return v, _idle(messages, f"last prompt {_fmt(count)} tokens < {_fmt(thr)} (compression_threshold "
                                  f"{v['compression_threshold']:g} x token limit {_fmt(limit)}): NOOP", vars=v,
                        triggered=False, state=clear)
    return v, None


def gemini_truncate(messages: list, ctx: LayerContext) -> LayerOutput:
    v, idle = _check(messages, ctx)
    if idle is not None:
        return idle
    h, count, limit = v["history_messages"], v["last_prompt_tokens"], v["token_limit"]
    max_chars = min(4 * (limit - count), TRUNCATE_TOOL_OUTPUT_THRESHOLD)
    v["truncate_to_chars"] = max_chars
    history, edits, originals = truncate_to_budget(messages[:h], ctx, max(max_chars, 0))
    out = history + messages[h:] if originals else messages
    why = "forced (/compress)" if v["force"] and count < v["threshold_tokens"] else \
        f"last prompt {_fmt(count)} tokens >= {_fmt(v['threshold_tokens'])}"
    p = {"count": count, "h": h, "input": messages, "originals": originals,
         "estimate": _estimate_upto(messages, h, h, ctx)}
    if ctx.state.get(FAILED) and not v["force"]:
        # a summary inflated the history before: truncation only
        after = estimate(history)
        if originals and after < count:
            note = f"{why}; an earlier summary inflated the history, so truncation only: {CONTENT_TRUNCATED}"
            return LayerOutput(out, list(range(len(out))), edits, {**v, "status": CONTENT_TRUNCATED}, note,
                               triggered=True, state={PASS: None, SINCE: 0})
        return _idle(messages, f"{why}; an earlier summary inflated the history and truncation frees nothing: "
                               f"{NOOP}", vars={**v, "status": NOOP}, triggered=False, state={PASS: None})
    note = why + (f"; {len(originals)} old function response(s) cut" if originals else
                  "; every function response fits the budget")
    state = {PASS: p, SINCE: int(ctx.state.get(SINCE, 0) or 0) + 1}
    if out is messages:
        return _idle(messages, note, vars=v, triggered=True, state=state)
    return LayerOutput(out, list(range(len(out))), edits, v, note, triggered=True, state=state)


# ------------------------------------------------------------------ 2. split
def gemini_split(messages: list, ctx: LayerContext) -> LayerOutput:
    p = ctx.state.get(PASS)
    if not p:
        return _idle(messages, "no compression in this run")
    h = p["h"]
    sizes, texts, plain_end, firsts = split_shape(messages, h)
    k, v = split_from(sizes, texts, plain_end, 1 - PRESERVE_FRACTION)
    at = firsts[k] if k < len(firsts) else h
    v.update(contents=len(sizes), split_content=k, split_message=at)
    if at == 0:
        return _idle(messages, f"split point 0 ({v['rule']}): nothing to compress, {NOOP}", vars=v, triggered=False,
                     state={PASS: None})
    edit = Edit(BOUNDARY, f"split {h} -> {at}: {v['rule']}", var="split", old=h, new=at)
    note = f"messages [0, {at}) are compressed ({k} contents), [{at}, {h}) are kept"
    return LayerOutput.unchanged(messages, note, edits=[edit], vars=v, triggered=True,
                                 state={PASS: {**p, "split": at}})


# ------------------------------------------------------------------ 3. summary and its verification
SYSTEM = ("(Compactscope's stand-in for the Gemini CLI's compression system prompt: the model is asked for a "
          "<state_snapshot> of the conversation, an XML block of the goal, key knowledge, file system state, "
          "recent actions and the plan.)")


def _transcript(messages: list) -> list[str]:
    contents, _ = to_contents(messages)
    return [json.dumps(c, ensure_ascii=False) + "\n" for c in contents]


def _ask(ctx: LayerContext, turns: list, instruction: str, purpose: str, reply: str | None = None,
         transcript: list[str] | None = None) -> dict:
    """One of the two requests; the verification shows the model its first ``reply`` after the history
    (``transcript``: ``_transcript(turns)``, made once for both)."""
    said = [] if reply is None else [json.dumps({"role": "model", "parts": [{"text": reply}]}, ensure_ascii=False),
                                     "\n"]
    prompt = "".join([*(_transcript(turns) if transcript is None else transcript), *said, "\n", instruction])
    req = SummaryRequest(prompt, tuple(turns), SYSTEM, 4096, purpose, {"instruction": instruction})
    res = ctx.summarizer.summarize(req, ctx.cancel)
    text = res.text if isinstance(res.text, str) else str(res.text or "")
    return {**res.to_json(), "text": text}


def _summaries(ctx: LayerContext, turns: list) -> tuple[str, dict, dict]:
    previous = any(SNAPSHOT in t for m in turns if isinstance(m, dict) and m.get("role") == "user"
                   for t in _text_of(m.get("content")))
    ask = ("integrate the still-relevant content of the previous <state_snapshot> into a new one" if previous else
           "generate a new <state_snapshot> of the history")
    transcript = _transcript(turns)
    first = _ask(ctx, turns, f"Instruction (as the CLI asks): {ask}, after reasoning in a scratchpad.",
                 "gemini_compress", transcript=transcript)
    second = _ask(ctx, turns, "Verification (as the CLI asks): critically evaluate that <state_snapshot> for "
                  "omitted details; answer an improved one or the same again.", "gemini_verify", first["text"],
                  transcript)
    final = (second["text"].strip() or first["text"]).strip()
    return final, first, second


def gemini_summarize(messages: list, ctx: LayerContext) -> LayerOutput:
    cfg = GeminiCliParams.of(ctx)
    p = ctx.state.get(PASS)
    if not p or "split" not in p:
        return _idle(messages, "no compression in this run")
    at, h = p["split"], p["h"]
    limit = cfg.token_limit
    original = [p["originals"].get(i, m) for i, m in enumerate(messages[:at])]
    # (the check's input up to the split, unless a layer between changed it: its estimate from the check's scan)
    same = at <= p["h"] and all(map(is_, original, p["input"][:at]))
    high_fidelity = (_estimate_upto(p["input"], p["h"], at, ctx) if same else estimate(original)) < limit
    turns = original if high_fidelity else messages[:at]
    v = {"compressed_messages": at, "summary_input": "the original history" if high_fidelity else
         "the truncated history (the original is over the token limit)"}
    try:
        final, first, second = _summaries(ctx, turns)
    except SummaryError as e:
        return LayerOutput.unchanged(messages, "the summary request failed: nothing changed", vars=v,
                                     error=f"summary failed: {e}", state={PASS: None}, triggered=False)
    v.update(summary_chars=len(first["text"]), verified_chars=len(second["text"]),
             verification_changed=second["text"].strip() != first["text"].strip())
    if not final:
        return _idle(messages, f"the summary is empty: {EMPTY}, nothing changed", vars={**v, "status": EMPTY},
                     triggered=False, state={PASS: None})
    first_m = messages[0] if messages else None
    ctx_text = _text_of(first_m.get("content")) if isinstance(first_m, dict) and first_m.get("role") == "user" else []
    texts = [ctx_text[0], final] if ctx_text and ctx_text[0].startswith(SESSION_CONTEXT) else [final]
    # the CLI starts every history with its session context; the summary follows in the same content
    summary = {"role": "user", "content": [{"type": "text", "text": t} for t in texts]}
    out = [summary, {"role": "assistant", "content": [{"type": "text", "text": ACK}]}] + messages[at:]
    origin = [None, None] + list(range(at, len(messages)))
    edits = [Edit(SUMMARY, f"messages [0, {at}) replaced by a <state_snapshot> summary of {len(final):,} chars "
                           f"(after its verification request), then the model's acknowledgement",
                  start=0, end=at, out=0, new_len=len(final))]
    if len(texts) > 1:
        edits.append(Edit(NOTE, "the session context is put back first, as the CLI starts every history"))
    info = {**second, "text": final, "first_reply": first["text"], "verification": second}
    kept = len(out) - (len(messages) - h)
    new_estimate = estimate(out[:kept])
    loop, freed_share, _, _ = _loop_check(ctx, p, new_estimate)
    note = edits[0].text + (f"; a compression loop: it follows the previous compression at the next request and "
                            f"frees {freed_share:.0%} of the history" if loop else "")
    # (the estimate of the new history, for the next layer when it reads this very list)
    state = {PASS: {**p, "kept": kept, "summary_at": 0, "new_history": (out, new_estimate)}}
    return LayerOutput(out, origin, edits, v, note, triggered=True, state=state, summary=info)


# ------------------------------------------------------------------ 4. the inflation check, the loop check
def _loop_check(ctx: LayerContext, p: dict, new: int) -> tuple[bool, float, int, int]:
    """(a loop, the share of the history freed, the count the next request will report before what it adds,
    the history's estimate before). Like with like: the CLI's estimate of the history before and after (the
    reported count also holds the system prompt and tools, which no compression frees: against it every
    compression looks worth it). A loop: right after the previous compression, under 10% freed."""
    est = int(p.get("estimate") or 0)
    freed_share = (est - new) / est if est > 0 else 0.0
    expected = p["count"] - (est - new)
    loop = bool(ctx.state.get(LAST)) and int(ctx.state.get(SINCE, 0) or 0) <= 1 and freed_share < LOOP_FREED_SHARE
    return loop, freed_share, expected, est


def gemini_assemble(messages: list, ctx: LayerContext) -> LayerOutput:
    cfg = GeminiCliParams.of(ctx)
    p = ctx.state.get(PASS)
    if not p or "kept" not in p:
        return _idle(messages, "no compression in this run", state={PASS: None})
    before = p["count"]
    made = p.get("new_history")
    new = made[1] if made is not None and made[0] is messages else estimate(messages[:p["kept"]])
    thr = threshold(ctx.params)
    v = {"tokens_before": before, "tokens_after": new, "freed_tokens": before - new}
    if new > before:
        state = {PASS: None, FAILED: ctx.state.get(FAILED) or not cfg.force}
        orig = p["input"]
        return LayerOutput(orig, [None] * len(orig), [Edit(NOTE, f"the new history ({_fmt(new)} tokens) is larger "
                                                                  f"than the old ({_fmt(before)}): {INFLATED}")],
                           {**v, "status": INFLATED}, f"{INFLATED}: the history is kept; later compressions only "
                                                      "truncate", state=state, triggered=False)
    edits = []
    loop, freed_share, expected, est = _loop_check(ctx, p, new)
    if loop:
        edits.append(Edit(NOTE, f"compression loop: this compression follows the previous one at the next request "
                                f"and frees {freed_share:.0%} of the history ({_fmt(est)} -> {_fmt(new)} tokens "
                                f"by the CLI's estimate)", data={"finding": "compression_loop"}))
    again = expected >= thr
    if again:
        edits.append(Edit(NOTE, f"the next request will still count about {_fmt(expected)} tokens >= "
                                f"{_fmt(thr)}: it compresses again"))
    v.update(status=COMPRESSED, compression_loop=loop, freed_share=round(freed_share, 3), history_estimate=est,
             expected_next_count=expected)
    note = f"{COMPRESSED}: ~{_fmt(before)} -> ~{_fmt(new)} tokens" + ("; a compression loop" if loop else "") + \
        ("; still over the threshold" if again else "")
    state = {PASS: None, LAST: {"before": before, "after": new}, SINCE: 0}
    return LayerOutput.unchanged(messages, note, vars=v, state=state, edits=edits, triggered=True)


# ------------------------------------------------------------------ 5. the tool output masking, before sending
MASK_PROTECT_TOKENS = 50_000            # the newest tool outputs kept whole, in tokens
MASK_MIN_PRUNABLE_TOKENS = 30_000       # masking only when at least this much can go
SHELL_TOOL = "run_shell_command"


def _simple_preview(text: str) -> str:
    lines = text.split("\n")
    if len(lines) <= 20:
        return text
    return "\n".join(lines[:10]) + f"\n\n... [{len(lines) - 20} lines omitted] ...\n\n" + "\n".join(lines[-10:])


def _preview(name: str, output: str, dumped: str) -> str:
    """What a masked output keeps: a shell command's sections with their output shortened, else the head and
    tail of the response's JSON."""
    if name != SHELL_TOOL:
        return f"{dumped[:250]}\n... [TRUNCATED] ...\n{dumped[-250:]}" if len(dumped) > 500 else dumped
    pieces = re.split(r"^(Output|Error|Exit Code|Signal|Background PIDs|Process Group PGID): ", output, flags=re.M)
    if len(pieces) < 3:
        return _simple_preview(output)
    out = [_simple_preview(pieces[0].strip())] if pieces[0].strip() else []
    for k in range(1, len(pieces), 2):
        body = pieces[k + 1].strip() if k + 1 < len(pieces) else ""
        out.append(f"Output: {_simple_preview(body)}" if pieces[k] == "Output" else f"{pieces[k]}: {body}")
    return "\n".join(out)


def _masked_text(name: str, output: str, path: str) -> str:
    dumped = json.dumps({"output": output}, indent=2, ensure_ascii=False)
    return (f"<{MASKED_TAG}>\n{_preview(name, output, dumped)}\n\nOutput too large. Full output available at: "
            f"{path}\n</{MASKED_TAG}>")


def mask_candidates(messages: list, h: int) -> tuple[list, int]:
    """(message, block, name, text, tokens, id) of the outputs past the protected newest ones, and their tokens,
    from scratch (``masked_outputs`` has the same from the scan kept per list)."""
    contents, owners = to_contents(messages[:h])
    names: dict = {}
    for m in messages[:h]:
        if isinstance(m, dict):
            message_parts(m, names)
    last = len(contents) - 2                       # the latest turn is protected
    stop = owners[last][-1] if 0 <= last < len(owners) else -1
    seen, past, prunable, found = 0, False, 0, []
    for i in range(stop, -1, -1):
        for j, text in _responses(messages[i]):
            tid = messages[i].get("tool_call_id") if j is None else messages[i]["content"][j].get("tool_use_id")
            name = names.get(str(tid), "")
            if name in EXEMPT_TOOLS or f"<{MASKED_TAG}" in text:
                continue
            tokens = parts_tokens([{"functionResponse": {"name": name, "response": {"output": text}}}])
            if not past:
                seen += tokens
                past = seen > MASK_PROTECT_TOKENS
                if not past:
                    continue
            prunable += tokens
            found.append((i, j, name, text, tokens, tid))
    return found, prunable


def _stop_index(messages: list, h: int) -> int:
    """The last message of the content before the last one in ``to_contents(messages[:h])`` (the latest turn is
    protected), -1 when there is none."""
    last = None
    for i in range(h - 1, -1, -1):
        m = messages[i]
        if not isinstance(m, dict) or m.get("role") == "system":
            continue
        role = "model" if m.get("role") == "assistant" else "user"
        if last is None:
            last = role
        elif role != last:
            return i
    return -1


def masked_outputs(messages: list, h: int, owner: Any = None) -> tuple[int, int, Callable[[], list]]:
    """``mask_candidates`` from the scan of the history (``history_scan``): (how many outputs, their tokens, the
    outputs themselves on demand). The protected newest outputs end in one message, found by bisection in the
    prefix sums of the outputs' tokens; every older output is a candidate."""
    st = history_scan(messages, h, owner)
    if st.stale:
        listed, prunable = mask_candidates(messages, h)
        return len(listed), prunable, lambda: listed
    stop = _stop_index(messages, h)
    total = st.sums[stop + 1] if stop >= 0 else 0
    if total <= MASK_PROTECT_TOKENS:
        return 0, 0, list
    i = bisect_left(st.sums, total - MASK_PROTECT_TOKENS, 0, stop + 2) - 1     # the last i: sums[i] < that
    seen = total - st.sums[i + 1]
    first: list = []
    for w in st.outputs[i]:
        if not first:
            seen += w[4]
            if seen <= MASK_PROTECT_TOKENS:
                continue
        first.append(w)

    def collect() -> list:
        out = list(first)
        for q in range(i - 1, -1, -1):
            out.extend(st.outputs[q])
        return out
    return st.counts[i] + len(first), st.sums[i] + sum(w[4] for w in first), collect


def _mask_one(ws: Any, memo: dict | None, key: Any, name: str, text: str) -> tuple[str, str, int]:
    """(the persisted output's name, its masked text, that text's tokens), made once per workspace and output."""
    hit = None if memo is None else memo.get((MASKED_TAG, key, name, text))
    if hit is None:
        rel = _persist(ws, memo, key, text)
        short = _masked_text(name, text, rel)
        hit = (rel, short, parts_tokens([{"functionResponse": {"name": name, "response": {"output": short}}}]))
        if memo is not None:
            memo[MASKED_TAG, key, name, text] = hit
    return hit


def gemini_mask(messages: list, ctx: LayerContext) -> LayerOutput:
    """``ToolOutputMaskingService.mask``, before the request is sent: once the newest tool outputs pass 50,000
    tokens, every older one is masked (a preview, the full output in a file) when that frees 30,000 or more."""
    h = _history_end(messages)
    candidates, prunable, found_fn = masked_outputs(messages, h, ctx.meta)
    v = {"prunable_tokens": prunable, "candidates": candidates, "protect_tokens": MASK_PROTECT_TOKENS,
         "min_prunable_tokens": MASK_MIN_PRUNABLE_TOKENS}
    if prunable < MASK_MIN_PRUNABLE_TOKENS:
        if not ctx.explain:
            return LayerOutput.unchanged(messages)
        return _idle(messages, f"{_fmt(prunable)} tokens of old tool output could be masked, under "
                               f"{_fmt(MASK_MIN_PRUNABLE_TOKENS)}: nothing masked", vars=v)
    out, edits = list(messages), []
    memo = _persisted_memo(ctx.workspace)
    for i, j, name, text, tokens, tid in found_fn():
        rel, short, short_tokens = _mask_one(ctx.workspace, memo, tid or f"gemini_mask_{i}", name, text)
        if short_tokens >= tokens:
            continue
        out[i] = _with_response(out[i], j, short)
        edits.append(Edit(PERSIST, f"tool output {i} ({_fmt(tokens)} tokens) masked to a preview, the full output "
                                   f"in {rel}", message=i, block=j, tool_id=tid, old_len=len(text), new_len=len(short),
                          path=rel))
    v["masked"] = len(edits)
    if not edits:
        return _idle(messages, "masking would free nothing: nothing masked", vars=v)
    return LayerOutput(out, list(range(len(out))), edits, v, f"masked {len(edits)} old tool output(s): "
                                                              f"{_fmt(prunable)} tokens could go")


LAYERS = {
    "gemini_truncate": Layer("gemini_truncate", gemini_truncate,
                             "the check before every request (last prompt tokens >= compression_threshold x the "
                             "token limit), then old function responses past a 50,000-token budget are cut",
                             label="truncate", role=roles.PRUNE),
    "gemini_split": Layer("gemini_split", gemini_split,
                          "the split point: the first user text at or after 70% of the history's characters",
                          label="split", role=roles.BOUNDARIES),
    "gemini_summarize": Layer("gemini_summarize", gemini_summarize,
                              "the older part becomes a <state_snapshot> (a summary request, then its verification "
                              "request), followed by the model's acknowledgement", llm=True, label="summarize",
                              role=roles.SUMMARY),
    "gemini_mask": Layer("gemini_mask", gemini_mask,
                         "before the request is sent: tool outputs older than the newest 50,000 tokens of them are "
                         "masked to a preview when 30,000 tokens or more can go", label="mask", role=roles.MICRO),
    "gemini_assemble": Layer("gemini_assemble", gemini_assemble,
                             "the new history is kept unless it is larger than the old; a compression right after "
                             "another that frees almost nothing is flagged as a loop", label="assemble",
                             role=roles.ASSEMBLE),
}
