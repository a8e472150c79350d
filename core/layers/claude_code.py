"""Claude Code's production pipeline (seed 001's deep dive), one traced function per layer.

Order before every model call (``query.ts``): tool result budget -> snip -> time-based
microcompact -> (context collapse: not public, not reproduced) -> auto-compact.

* ``tool_result_budget`` and ``snip_compact`` are the s08 functions called with Claude
  Code's parameters (the behaviour is the same; snip sits behind the ``HISTORY_SNIP``
  feature gate in Claude Code and is off by default here).
* ``time_micro_compact``: after an idle gap (60 minutes by default, the server prompt
  cache has expired by then so clearing costs nothing) every compactable tool result
  older than the gap, except the 5 most recent, becomes ``[Old tool result content cleared]``.
* ``auto_compact``: when the estimated tokens reach
  ``window - min(max_output, 20_000) - 13_000`` (167,000 for a 200k window), summarise
  everything with the nine-section prompt, strip ``<analysis>``, keep ``<summary>``, then
  restore up to 5 recently read files (5,000 tokens each, 50,000 in all). Circuit breaker
  after 3 consecutive failures; on prompt-too-long the oldest API-round groups are
  dropped and the summary retried (up to 3 times).
"""
from __future__ import annotations

import json
import math
import re
from array import array
from functools import lru_cache
from itertools import accumulate
from typing import TYPE_CHECKING, Any
from operator import is_, methodcaller

from ..runtime.record import replace
from ..model.messages import block_type, blocks, content_text, replace_block
from ..summarizers import LazyPrompt, SummaryError, SummaryRequest
from ..pipeline.facts import BytesFact, IntFact
from ..analysis.pairs import pair_index
from ..pipeline.trace import DROP, INSERT, NOTE, REPLACE, SUMMARY, Delta, Edit, LayerOutput, SameOrigin
from . import s08
from . import base as roles
from .base import Layer, LayerContext
from .claude_code_times import last_times, timestamp
from .claude_code_params import DEFAULT_COMPACTABLE, IMAGE_TOKENS, ClaudeCodeParams, blocks_chars, content_chars  # noqa: F401
from ..files.jsonio import dict_at
from ..runtime.lazy import lazy_module

if TYPE_CHECKING:
    import hashlib
else:                                       # imported on first use (a headless command's start-up, issue 27)
    hashlib = lazy_module("hashlib", globals())
_orjson = lazy_module("orjson", globals(), "_orjson")       # (the summary cache's digests: a headless command's start-up)

CLEARED = "[Old tool result content cleared]"
SUMMARY_INTRO = ("This session is being continued from a previous conversation that ran out of context. "
                 "The summary below covers the earlier portion of the conversation.\n\n")
TRANSCRIPT_HINT = ("\n\nIf you need specific details from before compaction (like exact code snippets, error "
                   "messages, or content you generated), read the full transcript at: {path}")
CONTINUE_TEXT = ("\nPlease continue the conversation from where we left it off without asking the user any "
                 "further questions. Continue with the last task that you were asked to work on.")
TRUNCATED = "\n\n[... truncated: the file is larger than the per-file restore budget]"
PTL_MARKER = "[earlier conversation truncated for compaction retry]"
_CONTENT = methodcaller("get", "content")

NO_TOOLS_PREAMBLE = (
    "CRITICAL: Respond with TEXT ONLY. Do NOT call any tools.\n"
    "Tool calls will be rejected and you will fail the task. Your entire response must be plain text: "
    "an <analysis> block followed by a <summary> block.\n\n")
NO_TOOLS_TRAILER = ("\n\nREMINDER: Do NOT call any tools. Respond with plain text only: an <analysis> block "
                    "followed by a <summary> block.")
SECTIONS = (
    "Primary Request and Intent", "Key Technical Concepts", "Files and Code Sections", "Errors and fixes",
    "Problem Solving", "All user messages", "Pending Tasks", "Current Work", "Optional Next Step",
)
SECTION_HELP = (
    "Capture all of the user's explicit requests and intents in detail",
    "List the important technical concepts, technologies and frameworks discussed",
    "Enumerate the files and code sections examined, modified or created, with snippets where useful",
    "List the errors you ran into and how you fixed them, including user feedback",
    "Document problems solved and any ongoing troubleshooting",
    "List ALL user messages that are not tool results",
    "Outline any pending tasks you have explicitly been asked to work on",
    "Describe precisely what was being worked on immediately before this summary request",
    "List the next step, directly in line with the user's most recent explicit request",
)
COMPACT_PROMPT = (
    "Your task is to create a detailed summary of the conversation so far, paying close attention to the "
    "user's explicit requests and your previous actions. This summary should be thorough in capturing technical "
    "details, code patterns, and architectural decisions that would be essential for continuing development "
    "work without losing context.\n\n"
    "Before providing your final summary, wrap your analysis in <analysis> tags to organize your thoughts and "
    "ensure you've covered all necessary points.\n\n"
    "Your summary should include the following sections:\n\n"
    + "\n".join(f"{i}. {name}: {why}" for i, (name, why) in enumerate(zip(SECTIONS, SECTION_HELP), 1))
    + "\n\nPut the summary itself inside <summary></summary> tags.")


class RoughTokens:
    """Claude Code's rough estimate: characters / 4, except that an image or document block
    counts as a flat 2,000 tokens (its base64 text would count hundreds of thousands).
    Per-message figures are cached by identity, like ``SizeMeter``."""
    name = "chars/4, images 2,000"
    IMAGE_TOKENS = IMAGE_TOKENS
    cpt = 4

    figure = "cc_rough"

    def message_chars(self, m, meter) -> int:
        """The message's share of the character count (its repr, images flat): additive, cached per
        message in the meter (the repr size is the meter's, shared with every strategy)."""
        return meter.figure(m, self.figure, _cc_chars)

    def figure_fn(self, m, meter) -> int:
        return _cc_chars(m, meter)

    def tokens_from(self, total: int, n: int, lead=None, *, system=None, tools=None) -> int:
        return (2 + total + 2 * (n - 1)) // 4 if n else 0

    def tokens(self, messages, meter, *, system=None, tools=None) -> int:
        return self.tokens_from(meter.total(messages, self.figure, _cc_chars), len(messages))


def _cc_chars(m, meter) -> int:
    n = meter.raw_size(m)
    for b in blocks(m):
        if block_type(b) in ("image", "document"):
            n += 4 * RoughTokens.IMAGE_TOKENS - len(repr(b))
        elif block_type(b) == "tool_result" and isinstance(b.get("content"), list):
            for c in b["content"]:
                if block_type(c) in ("image", "document"):
                    n += 4 * RoughTokens.IMAGE_TOKENS - len(repr(c))
    return n


def _content_figure(m, meter) -> int:
    return content_chars(m)


# the same figure without a meter (a column of the one per-message table, as the meter's)
_CONTENT_CHARS = IntFact("cc_content", lambda m: content_chars(m))


class SessionTokens:
    """Claude Code's own count before a call (``tokenCountWithEstimation``): the usage of the last API
    response in the list (input + cache creation + cache read + output, as the session file records it)
    plus a rough count (chars/4 of the content, ``content_chars``) of the messages after it. From Claude Code
    2.1.21 on (``claude_code_params.counts_final_output``) the output counted is the answer's whole output,
    which the file does not hold (it records the stream's placeholder, 1-2 tokens): at least the answer's own
    rough count stands in for it (docs/claude-code-versions.md).

    The recorded usage is only valid while the list IS the context the API saw: the messages of one
    real segment, from its start, every one the recorded object. ``bind(conversation)`` learns those
    from the loaded conversation. Where the list differs (a simulated compaction, a cleared result),
    or nothing was recorded, the count is the rough count of the whole list plus ``overhead``: the
    system prompt, tools and attachments the API saw beyond the recorded messages, measured where the
    context is known. At a call with no response before it in its segment (an excerpt's first call)
    the call's own usage, what was really sent, less what Claude Code's count misses between two calls
    in this session (``undercount``), stands in."""
    name = "last usage + chars/4 after it (Claude Code)"
    IMAGE_TOKENS = RoughTokens.IMAGE_TOKENS
    cpt = 4
    anchors_on_usage = True

    def __init__(self, final_output: bool | None = None):
        """``final_output``: count a response's whole output (True) or its recorded placeholder (False); None: as
        the session's Claude Code version did (``claude_code_params.counts_final_output``)."""
        self._final_override = final_output
        self._conv: Any = None
        # id(assistant msg with usage) -> its index; per index its segment's start and the tokens Claude Code
        # counts from there (context + output): arrays, not a tuple and three ints per response
        self._anchors: dict[int, int] = {}
        self._astart = array("q")
        self._atok: list = []
        self._starts: dict[int, int] = {}        # id(first message of a segment) -> its index
        self.overhead = 0
        self.scale = 1.0                         # real tokens per rough token (measured by bind)
        self.hidden = 0                          # an excerpt's history from before the file (bind)
        self.undercount = 0                      # what Claude Code's count misses between two calls (bind)
        self.anchored = False                    # the last count used recorded usage
        self.final_output = False                # count a response's whole output, not its recorded placeholder
        self.result_tokens: dict = {}            # tool name -> median rough tokens of its results ("": all)
        self._verified: dict[int, tuple] = {}    # id(list) -> (list, start, upto): a known real prefix
        self._last: tuple | None = None          # the last count: (list, length, last message, meter, n, anchored)

    FIGURE = "cc_content"

    def message_chars(self, m, meter=None) -> int:
        if meter is not None:        # the figure shared through the engine's meter
            return meter.figure(m, self.FIGURE, _content_figure)
        return _CONTENT_CHARS.get(m)

    def rough(self, messages, meter=None) -> int:
        if meter is not None:        # a list measured before (or made from one) costs its new messages only
            return meter.total(messages, self.FIGURE, _content_figure) // 4
        mc = self.message_chars
        return sum(mc(m) for m in messages) // 4

    def bind(self, conversation, meter=None) -> None:
        """Learn the real contexts of a loaded conversation (anything with ``messages``, ``meta`` and
        ``segments``; a replay view passes its ``conversation``). ``meter``: the engine's (the message
        figures are shared with every run over the conversation)."""
        conv = getattr(conversation, "conversation", None) or conversation
        conv = getattr(conv, "context_of", None) or conv     # a real-context view: the whole conversation
        if conv is self._conv:
            return
        self._last = None
        msgs, meta = getattr(conv, "messages", None), getattr(conv, "meta", None)
        self._conv, self._anchors, self._starts, self.overhead, self.scale = None, {}, {}, 0, 1.0
        self._astart, self._atok = array("q"), []
        self.undercount = 0
        if not isinstance(msgs, list) or not meta:
            return
        self._conv = conv
        from .claude_code_params import counts_final_output
        self.final_output = counts_final_output(conv) if self._final_override is None else self._final_override
        # every message's figure, the unknown ones computed together (``SizeMeter.figures``): shared with the runs
        figs = meter.figures(msgs, self.FIGURE, _content_figure) if meter is not None else \
            [self.message_chars(m) for m in msgs]
        starts = sorted({s for s in (getattr(conv, "segments", None) or [0]) if 0 <= s < len(msgs)} | {0})
        self._starts = {id(msgs[s]): s for s in starts}
        seg, bounds = 0, starts[1:] + [len(msgs)]
        over: list = []
        firsts: dict = {}
        clean = {s for s in starts if s > 0}
        extra = getattr(conv, "extra", None) or {}
        if not extra.get("starts_mid_session"):
            clean.add(0)
        # per recorded response: its index, its segment's start (typed arrays: positions), the real context
        # tokens, and the usage Claude Code counts from (context + recorded output). Token counts stay Python
        # ints: a file may record any number (a value past 64 bits is still a number to compare)
        seen_i, seen_s, seen_t, totals = array("q"), array("q"), [], []
        astart = self._astart = array("q", bytes(8 * len(msgs)))
        atok = self._atok = [0] * len(msgs)
        anchors = self._anchors
        for i, m in enumerate(msgs):
            while i >= bounds[seg]:
                seg += 1
            if not (isinstance(m, dict) and m.get("role") == "assistant") or i >= len(meta):
                continue
            mt = meta[i]
            u = mt.usage
            if u is None or u.context_tokens <= 0 or mt.extra.get("synthetic"):
                continue
            start = starts[seg]
            out_tokens = u.output_tokens
            if self.final_output:      # Claude Code counted the answer's whole output; the file holds a placeholder
                out_tokens = max(out_tokens, figs[i] // 4)
            total = u.context_tokens + out_tokens
            anchors[id(m)] = i
            astart[i], atok[i] = start, total
            seen_i.append(i)
            seen_s.append(start)
            seen_t.append(u.context_tokens)
            totals.append(total)
        # tokens the API counted per rough token, measured on this session: how much the real context
        # grew between two responses of one segment against the rough count of what was added
        # the rough count of any slice from prefix sums (a sum per anchor over its whole prefix was O(n^2):
        # 10k messages took a minute)
        prefix = array("q", accumulate(figs, initial=0))

        def rough(a: int, b: int) -> int:
            return (prefix[b] - prefix[a]) // 4
        real_growth = rough_growth = 0
        misses = []
        for k in range(1, len(seen_i)):
            if seen_s[k - 1] != seen_s[k]:
                continue
            i0, i1, t0, t1 = seen_i[k - 1], seen_i[k], seen_t[k - 1], seen_t[k]
            if t1 >= t0:
                real_growth += t1 - t0
                rough_growth += rough(i0, i1)
            misses.append(t1 - (totals[k - 1] + rough(i0 + 1, i1)))
        # what Claude Code's own count misses from one call to the next (the previous answer beyond its recorded
        # output, content counted at chars/4): the median over this session. At a call with no response before
        # it in its segment, the call's own usage (an exact count of all it sent) less this is what Claude Code
        # counted there: an excerpt's first call is counted from a response before the file.
        self.result_tokens = _result_medians(msgs)
        misses = sorted(misses)
        self.undercount = max(0, misses[len(misses) // 2]) if len(misses) >= 3 else 0
        self.scale = min(2.0, max(1.0, real_growth / rough_growth)) if rough_growth > 2_000 else 1.0
        for i, start, t in zip(seen_i, seen_s, seen_t):
            if start in clean:
                o = t - int(self.scale * rough(start, i))
                over.append(o)
                if start > 0:
                    firsts.setdefault(start, o)
        # beyond the recorded messages the API saw the system prompt and tools (the smallest overhead seen
        # where the whole context is known) and, after a real compaction, what Claude Code re-attached
        # (files, plan, todos): a simulated compaction adds its own restored files, so only the first counts
        self.overhead = max(0, min(over)) if over else 0
        self.overheads = {"smallest": self.overhead, "after_compactions": sorted(firsts.values())}
        # an excerpt's first segment: the API also saw the history from before the file's first line
        self.hidden = 0
        if extra.get("starts_mid_session") and seen_i and seen_s[0] == 0:
            i, t = seen_i[0], seen_t[0]
            self.hidden = max(0, t - int(self.scale * rough(0, i)) - self.overhead)

    def _real_prefix(self, messages: list, start: int, upto: int, meter=None) -> bool:
        """``messages[:upto + 1]`` are the recorded messages from ``start`` on. A list made (``meter.concat``)
        from one found so before is checked from where that one ended: replay pays for the new messages."""
        real = self._conv.messages
        if start + upto >= len(real):
            return False
        k0 = 0
        v = self._verified.get(id(messages))
        if v is not None and v[0] is messages and v[1] == start:
            k0 = v[2] + 1
        elif meter is not None:
            base = meter.base(messages)
            b = self._verified.get(id(base)) if base is not None else None
            if b is not None and b[0] is base and b[1] == start:
                k0 = b[2] + 1
        k0 = min(k0, upto + 1)
        # (slices, not islice: islice walks the k0 messages it skips, so each call would pay for the whole list)
        if not all(map(is_, messages[k0:upto + 1], real[start + k0:start + upto + 1])):
            return False
        # least recently verified out first: a replay's running context (extended in place) stays known
        prev = self._verified.pop(id(messages), None)
        if prev is not None and prev[0] is messages and prev[1] == start and prev[2] >= upto:
            self._verified[id(messages)] = prev
            return True
        if len(self._verified) >= 8:
            self._verified.pop(next(iter(self._verified)))
        self._verified[id(messages)] = (messages, start, upto)
        return True

    def tokens(self, messages, meter=None, *, system=None, tools=None) -> int:
        """A list counted just before (the same object, length and last message: lists only grow in place) is not
        counted again: a call counts its context as the first step's input, then in auto_compact."""
        last, k = self._last, len(messages)
        if last is not None and last[0] is messages and last[1] == k and last[3] is meter and (not k or messages[-1] is last[2]):
            self.anchored = last[5]
            return last[4]
        n = self._count(messages, meter)
        self._last = (messages, k, messages[-1] if k else None, meter, n, self.anchored)
        return n

    def _count(self, messages, meter) -> int:
        self.anchored = False
        if not messages:
            return 0
        start = self._starts.get(id(messages[0])) if self._conv is not None else None
        if start is not None and self._conv.messages[start] is messages[0] and self._anchors:
            found = False
            real, anchors = self._conv.messages, self._anchors
            for p in range(len(messages) - 1, -1, -1):
                i = anchors.get(id(messages[p]))
                if i is None or real[i] is not messages[p]:
                    continue
                found = True
                # the last response whose whole context is known: its usage, then the rough count of the
                # rest (the list may go on past the real context, e.g. across a real compaction it skipped)
                if self._astart[i] == start and i - start == p and self._real_prefix(messages, start, p, meter):
                    self.anchored = True
                    tail = messages[p + 1:]      # (summed: a new list, remembering it in the meter cost more)
                    rest = meter.figure_sum(tail, self.FIGURE, _content_figure) // 4 if meter else self.rough(tail)
                    return self._atok[i] + rest + self.unanswered(messages)
            if not found:
                # no response yet in this segment: the call's own usage is what was sent
                j = start + len(messages)
                nxt = self._conv.messages[j] if j < len(self._conv.messages) else None
                a = self._anchors.get(id(nxt)) if nxt is not None else None
                if a is not None and a == j and self._astart[a] == start \
                        and self._real_prefix(messages, start, len(messages) - 1, meter):
                    self.anchored = True
                    return max(0, self._conv.meta[j].usage.context_tokens - self.undercount)
        hidden = self.hidden if start == 0 and self._conv.messages[0] is messages[0] else 0
        return int(self.scale * self.rough(messages, meter)) + self.overhead + hidden + self.unanswered(messages)

    def unanswered(self, messages: list) -> int:
        """A list that ends with tool calls the file holds no result for (a compaction ran before the call that
        would have carried them, and the results were never written): Claude Code counted the results it had;
        each stands in at the median of that tool's results in the session (of all results when it has none)."""
        last = messages[-1] if messages else None
        if not (isinstance(last, dict) and last.get("role") == "assistant" and isinstance(last.get("content"), list)):
            return 0
        med = self.result_tokens
        return sum(med.get(str(b.get("name")), med.get("", 0)) for b in last["content"]
                   if isinstance(b, dict) and b.get("type") == "tool_use")


def _result_medians(msgs: list) -> dict:
    """Tool name -> the median rough tokens (chars/4 of the content) of its results in ``msgs``; "" -> of all."""
    names: dict = {}
    sizes: dict = {}
    for m in msgs:
        if not isinstance(m, dict) or not isinstance(m.get("content"), list):
            continue
        for b in m["content"]:
            if not isinstance(b, dict):
                continue
            if b.get("type") == "tool_use":
                names[b.get("id")] = str(b.get("name"))
            elif b.get("type") == "tool_result":
                n = blocks_chars([b]) // 4
                sizes.setdefault(names.get(b.get("tool_use_id"), "?"), []).append(n)
                sizes.setdefault("", []).append(n)
    return {k: sorted(v)[len(v) // 2] for k, v in sizes.items()}


def _fmt(n) -> str:
    return f"{n:,}"


def _sub(ctx: LayerContext, **params) -> LayerContext:
    """The same context with some parameters renamed/overridden (to call an s08 layer)."""
    base = ctx.params
    return ctx.with_params(base.overlay(params) if hasattr(base, "overlay") else {**base, **params})


# ------------------------------------------------------------ budget, snip: the s08 functions
def tool_result_budget(messages: list, ctx: LayerContext) -> LayerOutput:
    why = s08.no_fresh_results(messages)      # s08's budget would change nothing: said here, no sub-context made
    if why:
        return LayerOutput.unchanged(messages, why)
    cfg = ClaudeCodeParams.of(ctx)
    return s08.tool_result_budget(messages, _sub(
        ctx, max_bytes=cfg.budget_chars, persist_threshold=cfg.persist_threshold,
        preview_chars=cfg.preview_chars))


def snip_compact(messages: list, ctx: LayerContext) -> LayerOutput:
    cfg = ClaudeCodeParams.of(ctx)
    limit = cfg.snip_max_messages
    if limit <= 0:
        if not ctx.explain:
            return LayerOutput.unchanged(messages)      # (no one reads the explanation: ``LayerContext.explain``)
        return LayerOutput.unchanged(messages, "snip is off (snip_max_messages = 0): Claude Code gates it behind "
                                               "HISTORY_SNIP and its rules are not public",
                                     vars={"snip_max_messages": limit})
    return s08.snip_compact(messages, _sub(ctx, max_messages=limit, keep_head=cfg.snip_keep_head,
                                           variant="guarded"))


# ------------------------------------------------------------ time-based microcompact
def time_micro_compact(messages: list, ctx: LayerContext) -> LayerOutput:
    cfg = ClaudeCodeParams.of(ctx)
    gap_min = cfg.idle_gap_minutes
    keep = max(1, cfg.micro_keep_recent)     # Claude Code keeps at least one
    v: dict = {"idle_gap_minutes": gap_min, "keep_recent": keep}
    if gap_min <= 0:
        return LayerOutput.unchanged(messages, "time-based microcompact is off (idle_gap_minutes = 0)", vars=v)
    latest, last_ai, last_ai_ts = last_times(messages, ctx.meta)
    now = ctx.now if ctx.now is not None else latest
    if now is None or last_ai_ts is None or last_ai is None:
        return LayerOutput.unchanged(messages, "the messages carry no timestamps, so the idle gap is unknown",
                                     vars=v)
    gap = (now - last_ai_ts) / 60.0
    if gap < gap_min and not ctx.explain:
        return LayerOutput.unchanged(messages)
    v.update(now=now, last_assistant=last_ai, last_assistant_time=last_ai_ts, gap_minutes=round(gap, 2))
    if gap < gap_min:
        return LayerOutput.unchanged(messages, f"{gap:.1f} min since the last assistant message (message "
                                               f"{last_ai}) < idle gap {gap_min:g} min", vars=v)
    allowed = _allowed_tools(cfg.compactable_tools)    # (read after the quiet returns: most calls end above)
    pairs = pair_index(messages)       # shared with the views and the other layers over this list
    found = []   # (mi, bi, block, name)
    for mi, m in enumerate(messages):
        if not (isinstance(m, dict) and m.get("role") == "user"):
            continue
        for bi, b in enumerate(blocks(m)):
            if block_type(b) != "tool_result":
                continue
            p = pairs.get(b.get("tool_use_id")) if isinstance(b.get("tool_use_id"), str) else None
            name = p.name if p is not None else None
            if allowed is not None and name not in allowed:
                continue
            found.append((mi, bi, b, name))
    kept = found[-keep:]
    older = found[:-keep]
    v.update(compactable_results=len(found), kept_recent=[f[2].get("tool_use_id") for f in kept])
    edits: list[Edit] = []
    changed: dict[int, dict] = {}
    for mi, bi, b, name in older:
        tid = b.get("tool_use_id")
        content = b.get("content")
        if content == CLEARED:
            continue
        ts = timestamp(ctx.meta, messages[mi])
        age_ok = (now - ts) / 60.0 >= gap_min if ts is not None else mi < last_ai
        if not age_ok:
            edits.append(Edit(NOTE, f"kept {tid}: younger than the idle gap", message=mi, block=bi, tool_id=tid))
            continue
        text_len = len(content_text(content)) if not isinstance(content, str) else len(content)
        msg = changed.get(mi, messages[mi])
        changed[mi] = replace_block(msg, bi, {**b, "content": CLEARED})
        edits.append(Edit(REPLACE, f"cleared {tid} ({name}, {_fmt(text_len)} chars)", message=mi, block=bi, out=mi,
                          tool_id=tid, old_len=text_len, new_len=len(CLEARED)))
    v["cleared"] = sum(1 for e in edits if e.kind == REPLACE)
    if not changed:
        return LayerOutput.unchanged(messages, f"idle {gap:.1f} min >= {gap_min:g} min, but no older compactable "
                                               f"result is left to clear ({len(found)} found, keep {keep})",
                                     edits=edits, vars=v)
    out = list(messages)
    for mi, m in changed.items():
        out[mi] = m
    return LayerOutput(out, SameOrigin(len(out)), edits, v,
                       f"idle {gap:.1f} min >= {gap_min:g} min: cleared {v['cleared']} old tool result(s), "
                       f"kept the {len(kept)} most recent", delta=Delta.replaced(changed))


# ------------------------------------------------------------ auto-compact
@lru_cache(maxsize=64)
def _allowed_tools(tools_p: str) -> frozenset | None:
    """The tool names of ``compactable_tools`` ("*": every tool, None), parsed once per value (the layer runs
    before every replayed call)."""
    return None if tools_p.strip() == "*" else frozenset(t.strip() for t in tools_p.split(",") if t.strip())


def threshold(params: dict) -> int:
    """``window - min(max_output, summary_max_output) - buffer``: 167,000 for 200k, 32k, 20k, 13k.
    With ``cap_reserve`` off (Claude Code before 2.1.21) the whole ``max_output`` is reserved:
    ``window - max_output - buffer``, 155,000 for 200k, 32k, 13k."""
    window = int(params.get("window", 200_000))
    max_out = int(params.get("max_output", 32_000))
    summary_out = int(params.get("summary_max_output", 20_000))
    reserve = min(max_out, summary_out) if params.get("cap_reserve", True) else max_out
    return window - reserve - int(params.get("buffer", 13_000))


def format_summary(text: str) -> str:
    """Claude Code's formatting of the summary reply: drop ``<analysis>``, unwrap ``<summary>``."""
    out = re.sub(r"<analysis>.*?</analysis>", "", text, flags=re.S)
    m = re.search(r"<summary>(.*?)</summary>", out, flags=re.S)
    if m:
        out = out[:m.start()] + "Summary:\n" + m.group(1).strip() + out[m.end():]
    out = re.sub(r"\n{3,}", "\n\n", out)
    return out.strip()


def api_round_groups(messages: list) -> list[tuple[int, int]]:
    """[start, end) of each API round: a new group begins at every assistant message."""
    starts = [0] + [i for i, m in enumerate(messages) if i > 0 and isinstance(m, dict)
                    and m.get("role") == "assistant"]
    return list(zip(starts, starts[1:] + [len(messages)]))


def _ptl_gap(error: SummaryError) -> int | None:
    m = re.search(r"(\d[\d,]*)\s*tokens?\s*>\s*(\d[\d,]*)", str(error))
    if not m:
        return None
    a, b = (int(x.replace(",", "")) for x in m.groups())
    return a - b if a > b else None


def drop_oldest_groups(messages: list, gap_tokens: int | None, fraction: float) -> tuple[list, int]:
    """Drop the oldest API-round groups (enough to cover ``gap_tokens`` when known, else
    ``fraction`` of the groups, at least one); keep at least one group. Returns (messages, dropped)."""
    if messages and messages[0].get("content") == PTL_MARKER:
        messages = messages[1:]
    groups = api_round_groups(messages)
    if len(groups) < 2:
        return messages, 0
    if gap_tokens:
        n, acc = 0, 0
        while n < len(groups) - 1 and acc < gap_tokens:
            s, e = groups[n]
            acc += len(json.dumps(messages[s:e], default=str, ensure_ascii=False)) // 4
            n += 1
    else:
        n = max(1, int(len(groups) * fraction))
    n = min(n, len(groups) - 1)
    rest = messages[groups[n][0]:]
    if rest and rest[0].get("role") != "user":
        rest = [{"role": "user", "content": PTL_MARKER}] + rest
    return rest, n


def _compact_prompt(part: list) -> LazyPrompt:
    """The summary prompt over ``part``, in pieces: hashed for the cache and sent to an LLM, but at 100k
    messages never held as one string beside the conversation (the offline summarizer never builds it)."""
    def pieces():
        yield NO_TOOLS_PREAMBLE + COMPACT_PROMPT + "\n\n<conversation>\n"
        for k, m in enumerate(part):
            if k:
                yield "\n"
            yield json.dumps(m, default=str, ensure_ascii=False)
        yield "\n</conversation>" + NO_TOOLS_TRAILER

    def key_pieces():                 # the same text, as the digest of each message's JSON (kept by identity)
        _json_digests.shown(len(part))
        yield NO_TOOLS_PREAMBLE + COMPACT_PROMPT + NO_TOOLS_TRAILER
        yield _json_digests.joined(part)          # (hashed as the digests one by one were: the same key)
    return LazyPrompt(pieces, key_pieces)


def _json_digest(m) -> bytes:
    """A digest of the message's JSON as the summary prompt holds it, for the summary cache's key (kept in this
    process only): shared only by messages whose prompt JSON is the same, and always by an equal copy (found in
    the cache again). The JSON is orjson's (compact, 8x faster than ``json.dumps``: every message of a compacted
    context is hashed once), tagged so that it never meets the other form. orjson writes NaN and infinities as
    null and cannot write lone surrogates, integers past 64 bits, keys that are not strings or (passed through)
    dataclasses, datetimes and subclasses: a message with a null or any of those is hashed from the prompt's own
    ``json.dumps`` text. (Messages hold JSON values: no Enum member, which orjson would write as its value.)"""
    try:
        b = _orjson.dumps(m, option=_orjson.OPT_PASSTHROUGH_DATACLASS | _orjson.OPT_PASSTHROUGH_DATETIME
                          | _orjson.OPT_PASSTHROUGH_SUBCLASS)
    except TypeError:                    # (orjson.JSONEncodeError is a TypeError)
        b = None
    if b is None or b"null" in b:
        return hashlib.sha256(b"j" + json.dumps(m, default=str, ensure_ascii=False).encode("utf-8", "surrogatepass")
                              ).digest()
    return hashlib.sha256(b"o" + b).digest()


# message -> its digest, kept: a summary asked again over the same messages is found without serialising them
_json_digests = BytesFact("cc_json_sha256", 32, _json_digest)


def recent_reads(messages: list, read_tools: set[str], limit: int | None = None) -> list[dict]:
    """The files the conversation read, most recent first, one entry per path:
    {"path", "text", "message", "tool_id", "input"}; failed or cleared reads are skipped. ``limit``: the
    first that many only (the pairs are then read from the latest until they are found)."""
    pairs = pair_index(messages)       # shared with the views and the other layers over this list
    seen: set[str] = set()
    out: list[dict] = []
    if limit is not None and limit <= 0:
        return out
    for p in pairs.by_last_answer(read_tools):
        if p.use is None:                   # (every answered pair has its call)
            continue
        um, ub = p.use
        use = messages[um]["content"][ub]
        inp = dict_at(use, "input")
        path = inp.get("file_path") or inp.get("path") or inp.get("notebook_path")
        if not isinstance(path, str) or path in seen:
            continue
        rm, rb = p.results[-1]
        res = messages[rm]["content"][rb] if rb >= 0 else {}
        if not isinstance(res, dict) or res.get("is_error"):
            continue
        text = content_text(res.get("content"))
        if not text.strip() or text in (CLEARED, s08.MICRO_PLACEHOLDER) or text.startswith("<persisted-output>"):
            continue
        seen.add(path)
        out.append({"path": path, "text": text, "message": rm, "tool_id": p.id, "input": inp})
        if limit is not None and len(out) >= limit:
            break
    return out


def _restore_files(messages: list, ctx: LayerContext) -> tuple[list, list[Edit], dict]:
    cfg = ClaudeCodeParams.of(ctx)
    max_files = cfg.restore_max_files
    per_file = cfg.restore_tokens_per_file
    total_budget = cfg.restore_total_tokens
    tools = {t.strip() for t in cfg.read_tools.split(",") if t.strip()}
    candidates = recent_reads(messages, tools, max_files)
    out, edits, used, restored = [], [], 0, []
    for c in candidates:
        text = c["text"]
        tokens = math.ceil(len(text) / 4)
        truncated = False
        if tokens > per_file:
            text = text[:max(0, per_file * 4 - len(TRUNCATED))] + TRUNCATED
            tokens, truncated = math.ceil(len(text) / 4), True
        if used + tokens > total_budget:
            edits.append(Edit(NOTE, f"did not restore {c['path']}: {_fmt(tokens)} tokens would pass the "
                                    f"{_fmt(total_budget)}-token restore budget ({_fmt(used)} used)",
                              message=c["message"], tool_id=c["tool_id"]))
            continue
        used += tokens
        body = (f"<system-reminder>\nCalled the Read tool with the following input: "
                f"{json.dumps(c['input'], ensure_ascii=False)}\nResult of calling the Read tool:\n{text}\n"
                f"</system-reminder>")
        out.append({"role": "user", "content": [{"type": "text", "text": body}]})
        restored.append({"path": c["path"], "tokens": tokens, "truncated": truncated, "from_message": c["message"]})
        edits.append(Edit(INSERT, f"restored {c['path']} ({_fmt(tokens)} tokens{', truncated' if truncated else ''}) "
                                  f"from the Read result in message {c['message']}", message=c["message"],
                          tool_id=c["tool_id"], new_len=len(body), data={"path": c["path"]}))
    return out, edits, {"restored_files": restored, "restored_tokens": used,
                        "read_candidates": len(candidates)}


def auto_compact(messages: list, ctx: LayerContext) -> LayerOutput:
    cfg = ClaudeCodeParams.of(ctx)
    limit = threshold(ctx.params)
    tokens = ctx.tokens.tokens(messages, ctx.meter, system=ctx.system, tools=ctx.tools)
    failures = int(ctx.state.get("consecutive_failures", 0))
    max_failures = cfg.max_failures
    if not ctx.explain and (not cfg.autocompact or tokens < limit or failures >= max_failures):
        return LayerOutput.unchanged(messages, triggered=False)
    v = {"tokens": tokens, "threshold": limit, "window": cfg.window,
         "max_output": cfg.max_output, "buffer": cfg.buffer,
         "consecutive_failures": failures}
    if not cfg.autocompact:
        return LayerOutput.unchanged(messages, "auto-compact is off", vars=v, triggered=False)
    if tokens < limit:
        return LayerOutput.unchanged(messages, f"{_fmt(tokens)} tokens < threshold {_fmt(limit)}", vars=v,
                                     triggered=False)
    if failures >= max_failures:
        return LayerOutput.unchanged(messages, f"{_fmt(tokens)} tokens >= {_fmt(limit)} but the circuit breaker is "
                                               f"open after {failures} consecutive failures", vars=v,
                                     triggered=False)
    why = f"{_fmt(tokens)} tokens >= threshold {_fmt(limit)}"
    return compact(messages, ctx, v, why, "auto_compact")


def compact(messages: list, ctx: LayerContext, v: dict, why: str, purpose: str) -> LayerOutput:
    cfg = ClaudeCodeParams.of(ctx)
    transcript = ctx.workspace.write_transcript(messages)
    edits: list[Edit] = []
    part = messages
    retries = cfg.ptl_retries
    attempt = 0
    while True:
        prompt = _compact_prompt(part)
        req = SummaryRequest.lazy(prompt, messages=tuple(part), max_tokens=cfg.summary_max_output,
                                  purpose=purpose)
        try:
            res = ctx.summarizer.summarize(req, ctx.cancel)
            break
        except SummaryError as e:
            if e.kind == "prompt_too_long" and attempt < retries:
                attempt += 1
                new_part, n = drop_oldest_groups(part, _ptl_gap(e), cfg.ptl_drop_fraction)
                if n:
                    edits.append(Edit(DROP, f"prompt too long (retry {attempt}): dropped the oldest {n} API-round "
                                            f"group(s) from the summary input", data={"groups": n}))
                    part = new_part
                    continue
            failures = int(v.get("consecutive_failures", 0)) + 1
            v.update(consecutive_failures=failures, ptl_retries=attempt)
            return LayerOutput(messages, SameOrigin(len(messages)), edits, v, f"{why}; the summary failed",
                               triggered=True, state={"consecutive_failures": failures}, error=str(e),
                               summary={"error": str(e), "kind": e.kind})
    body = format_summary(res.text)
    # the model reads the transcript's path inside the workspace (as a persisted result's): the summary, and so
    # every figure after it, does not depend on where the workspace lives (--workdir, the user's cache)
    text = SUMMARY_INTRO + body + TRANSCRIPT_HINT.format(path=ctx.workspace.relative(transcript)) + CONTINUE_TEXT
    out = [{"role": "user", "content": text}]
    edits.append(Edit(SUMMARY, f"replaced messages 0..{len(messages) - 1} ({len(messages)}) with a summary by "
                               f"{res.summarizer}{' (cached)' if res.cached else ''}; transcript saved to "
                               f"{transcript}", start=0, end=len(messages), out=0, new_len=len(text),
                      path=str(transcript)))
    restored, r_edits, r_vars = _restore_files(messages, ctx) if cfg.restore_files else ([], [], {})
    k = 0
    for edit in r_edits:
        if edit.kind == INSERT:
            k += 1
            edit = replace(edit, out=k)
        edits.append(edit)
    out += restored
    # (the markers a retry put in counted in C: ``part`` is the whole summarised context, 100k messages)
    dropped_total = len(messages) - len(part) + list(map(_CONTENT, part)).count(PTL_MARKER)
    v.update(summarised=len(messages), ptl_retries=attempt, summary_input_messages=len(part),
             transcript=str(transcript), analysis_stripped="<analysis>" in res.text, **r_vars)
    if dropped_total:
        v["ptl_dropped_messages"] = dropped_total
    origin = [None] * len(out)
    note = f"{why}: summarised {len(messages)} message(s)"
    if restored:
        note += f", restored {len(restored)} file(s) ({_fmt(r_vars['restored_tokens'])} tokens)"
    return LayerOutput(out, origin, edits, v, note, triggered=True, state={"consecutive_failures": 0},
                       summary={**res.to_json(), "text": res.text})


def manual_compact(messages: list, ctx: LayerContext) -> LayerOutput:
    """``/compact``: the same summary, whatever the size, ignoring the circuit breaker."""
    v = {"tokens": ctx.tokens.tokens(messages, ctx.meter, system=ctx.system, tools=ctx.tools),
         "consecutive_failures": int(ctx.state.get("consecutive_failures", 0))}
    return compact(messages, ctx, v, "manual /compact", "manual_compact")


LAYERS = {
    "tool_result_budget": Layer("tool_result_budget", tool_result_budget,
                                "If the last message's tool results total more than budget_chars (200,000), persist "
                                "the largest to disk and leave a preview (the s08 function)",
                                label="budget", role=roles.BUDGET),
    "snip_compact": Layer("snip_compact", snip_compact,
                          "HISTORY_SNIP (feature-gated in Claude Code): off unless snip_max_messages > 0, then the "
                          "s08 snip with that limit", label="snip", role=roles.SNIP),
    "time_micro_compact": Layer("time_micro_compact", time_micro_compact,
                                "After idle_gap_minutes without a model call, clear every compactable tool result "
                                "older than the gap except the micro_keep_recent most recent",
                                label="time micro", role=roles.MICRO),
    "auto_compact": Layer("auto_compact", auto_compact,
                          "At window - min(max_output, 20,000) - buffer tokens, summarise everything (nine "
                          "sections), then restore recently read files", llm=True, label="auto-compact",
                          role=roles.SUMMARY),
    "manual_compact": Layer("manual_compact", manual_compact, "/compact: summarise now, whatever the size",
                            llm=True, label="/compact", role=roles.MANUAL),
}
