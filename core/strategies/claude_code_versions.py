"""Claude Code's versions and how each compacts: the table behind ``infer(conversation)``, the
claude_code strategy's session-inferred defaults. Every rule says where its fact comes from; how
each was checked on real sessions is in docs/claude-code-versions.md (and ``bench/bench_cc_accuracy.py``
prints it for any folder of sessions).
"""
from __future__ import annotations

from ..runtime.record import record
from .claude_code_evidence import context_drops, kept_over_budget, memoised, real_calls, time_micro_evidence
from ..layers.claude_code_params import (
    ClaudeCodeParams, parse_version, session_versions,
)
from .infer import Inferred

__all__ = ["infer", "rule_for", "parse_version", "fmt_version", "real_calls", "context_drops", "RULES", "CAVEATS"]

WINDOW_200K = 200_000
WINDOW_1M = 1_000_000
TIME_MICRO_GAP = 60.0            # timeBasedMCConfig.ts: the idle gap, in minutes, after which results are cleared


def fmt_version(t: tuple) -> str:
    return ".".join(map(str, t))


@record(frozen=True)
class Rule:
    """From version ``since`` on (until the next rule), these parameters; ``fact`` in words,
    ``source`` where it comes from."""
    since: tuple
    params: tuple
    fact: str
    source: str


# Oldest first. The threshold is window - reserve - 13,000 (AUTOCOMPACT_BUFFER_TOKENS).
RULES = (
    Rule((0, 0, 0), (("cap_reserve", False),),
         "the whole max output (32,000 by default) is reserved below the window: auto-compact at "
         "200,000 - 32,000 - 13,000 = 155,000 tokens",
         "threshold formula read from cli.js (anthropics/claude-code#12004); the 2.1.21 changelog fixed "
         "'auto-compact triggering too early on models with large output token limits'"),
    Rule((2, 1, 21), (("cap_reserve", True),),
         "the reserve is capped at 20,000 (MAX_OUTPUT_TOKENS_FOR_SUMMARY): auto-compact at "
         "200,000 - 20,000 - 13,000 = 167,000 tokens",
         "Claude Code 2.1.21 changelog; the deobfuscated threshold 'effective window - 13,000, ~83.5% of "
         "200k' (anthropics/claude-code#31806)"),
)

# Known behaviours that change no parameter here, by version range: (since, until or None, text).
CAVEATS = (
    ((2, 1, 144), None, "mcp",
     "from 2.1.144 MCP tool definitions were over-counted and auto-compact fired at about half the usual "
     "context when MCP servers were enabled (anthropics/claude-code#61334); not modelled"),
)


# From this version on Claude Code's count takes the last response's whole output (its in-memory usage is updated
# at the stream's end), while the session file keeps the placeholder written at the stream's start (1-2 output
# tokens: anthropics/claude-code#22686 on 2.1.29, #25941, #22671, #21971). Checked on the corpus: 2.0.76-2.1.14
# reproduce preTokens to 0-2 tokens with the placeholder; 2.1.29 (fc) counted more. The version between is not
# known (no session of 2.1.15-2.1.28 compacted): the threshold rule's 2.1.21 is taken.
def rule_for(version: tuple | None) -> Rule:
    if version is None:
        return RULES[-1]
    chosen = RULES[0]
    for r in RULES:
        if version >= r.since:
            chosen = r
    return chosen


def _versions(conversation) -> list[tuple]:
    return session_versions(conversation)


def _microcompact_records(conversation) -> int:
    extra = getattr(conversation, "extra", None) or {}
    return sum(1 for _, r in extra.get("records") or () if isinstance(r, dict) and r.get("type") == "system"
               and r.get("subtype") == "microcompact_boundary")


def _uses_mcp(conversation) -> bool:
    for m in conversation.messages:
        if isinstance(m, dict) and m.get("role") == "assistant" and isinstance(m.get("content"), list):
            if any(isinstance(b, dict) and b.get("type") == "tool_use" and str(b.get("name", "")).startswith("mcp__")
                   for b in m["content"]):
                return True
    return False


def infer(conversation) -> Inferred:
    """The claude_code strategy's defaults read from a Claude Code session (empty for anything else)."""
    if getattr(conversation, "format", "") != "claude-code":
        return Inferred()
    with memoised():                     # the calls and their numbers: one walk over the history each
        return _infer(conversation)


def _infer(conversation) -> Inferred:
    out = Inferred()
    versions = _versions(conversation)
    calls = real_calls(conversation)
    version = versions[-1] if versions else None
    out.facts["versions"] = [fmt_version(v) for v in versions]
    out.facts["model"] = getattr(conversation, "model", None)
    peak = max((t for _, _, t, _ in calls), default=None)
    out.facts["peak_real_tokens"] = peak
    events = list(getattr(conversation, "events", None) or ())
    autos = [e for e in events if e.trigger == "auto"]
    out.facts["real_compactions"] = [{"trigger": e.trigger, "pre_tokens": e.pre_tokens} for e in events]
    # the threshold rule from the version
    rule = rule_for(version)
    if version is None:
        out.notes.append("the session records no Claude Code version: the newest rule applies")
    else:
        for k, v in rule.params:
            span = f"Claude Code {fmt_version(version)}"
            if len(versions) > 1:
                span += f" (the session ran {', '.join(fmt_version(x) for x in versions)}; the newest decides)"
            out.set(k, v, f"{span}: {rule.fact} [{rule.source}]", {"version": fmt_version(version)})
        crossing = [v for v in versions if rule_for(v) is not rule]
        if crossing:
            out.notes.append(f"the session changed version across a rule: {fmt_version(crossing[0])} compacted by "
                             f"another rule ({rule_for(crossing[0]).fact})")
    # the window: a real context past 200k means the 1M window was on
    if peak is not None and peak > WINDOW_200K:
        at = next(k for k, (_, _, t, _) in enumerate(calls) if t == peak)
        out.set("window", WINDOW_1M, f"the real context reached {peak:,} tokens, more than a 200k window holds: "
                                     f"the session ran with the 1M-token window",
                {"call": _call_of(conversation, calls[at][0]), "tokens": peak})
    _infer_time_micro(conversation, out, calls)
    _infer_budget(conversation, out)
    # auto-compact off: the real estimate passed the threshold and nothing ever auto-compacted
    if calls and not autos:
        from ..layers.claude_code import threshold
        params = {**{p: v for p, v in rule.params}, **out.params}
        limit = threshold(params)
        over = [(k, t) for k, (_, _, t, _) in enumerate(calls) if t >= limit + 2_000]
        if over and (peak or 0) <= WINDOW_200K:
            k, t = over[0]
            call = _call_of(conversation, calls[k][0])
            out.set("autocompact", False, f"the real context reached {t:,} tokens at call {call}, past the "
                                          f"{limit:,}-token threshold, and the session never auto-compacted: "
                                          f"auto-compact was off (/config or DISABLE_AUTO_COMPACT)",
                    {"call": call, "tokens": t})
    if version is not None:
        for since, until, kind, text in CAVEATS:
            if version >= since and (until is None or version < until) and (kind != "mcp" or _uses_mcp(conversation)):
                out.notes.append(text)
    return out


def _call_of(conversation, message_index: int) -> int:
    from .claude_code_evidence import call_numbers
    return call_numbers(conversation).get(message_index, 0)


def _infer_time_micro(conversation, out: Inferred, calls: list) -> None:
    """Time-based microcompact: on only where the real context dropped (no boundary) after an idle gap at least as
    long as its rule's, or a microcompact_boundary record says it ran; every drop stated with its call and gap."""
    drops = context_drops(conversation)
    records = _microcompact_records(conversation)
    out.facts["context_drops"] = drops
    good, other = time_micro_evidence(drops, TIME_MICRO_GAP)
    if good or records:
        d = good[0] if good else None
        why = (f"the real context dropped by {d['dropped']:,} tokens at call {d['call']} with no compaction boundary, "
               f"after {d['idle_minutes']:g} idle minutes (at least the rule's {TIME_MICRO_GAP:g})" if d
               else f"{records} microcompact_boundary record(s)")
        found = {"call": d["call"], "gap_minutes": d["idle_minutes"], "drop": d["dropped"]} if d \
            else {"records": records}
        out.set("idle_gap_minutes", TIME_MICRO_GAP,
                f"{why}: time-based microcompact ran in this session (server-gated; the {TIME_MICRO_GAP:g}-minute "
                f"gap of timeBasedMCConfig.ts)", found)
    elif calls:
        why = "the real context never dropped without a compaction boundary and no microcompact_boundary was recorded"
        ev: dict = {"responses": len(calls)}
        if other:
            d = other[0]
            gap = "no timestamps" if d["idle_minutes"] is None else f"after only {d['idle_minutes']:g} idle minutes"
            why = (f"the real context dropped by {d['dropped']:,} tokens at call {d['call']} ({gap}, shorter than the "
                   f"rule's {TIME_MICRO_GAP:g}), and no drop followed a gap that long: not time-based microcompact")
            ev = {"call": d["call"], "gap_minutes": d["idle_minutes"], "drop": d["dropped"]}
            out.notes.append(f"the real context dropped by {d['dropped']:,} tokens at call {d['call']} with no "
                             f"compaction boundary and no idle gap of {TIME_MICRO_GAP:g} minutes before it: not "
                             f"modelled (the replay's estimate stays above the real context from there)")
        out.set("idle_gap_minutes", 0.0, f"{why}: time-based microcompact (server-gated) did not run in this "
                                         f"session; --set idle_gap_minutes=60 turns it on", ev)


def _infer_budget(conversation, out: Inferred) -> None:
    """The tool result budget: where the real context kept results the budget would persist, it is not trusted:
    raised above what the session kept."""
    defaults = ClaudeCodeParams()                 # the declared defaults (the strategy's own parameters)
    budget, persist = int(defaults.budget_chars), int(defaults.persist_threshold)
    kept = kept_over_budget(conversation, budget, persist)
    if not kept:
        return
    big = max(kept, key=lambda x: x["chars"])
    first = kept[0]
    out.set("budget_chars", big["chars"],
            f"the tool results before call {first['call']} total {first['chars']:,} chars, past the {budget:,}-char "
            f"budget, and the real context grew by {first['growth']:,} tokens there: the session kept them, so the "
            f"budget that would persist them is not trusted"
            + (f" ({len(kept)} such messages)" if len(kept) > 1 else ""),
            {"call": first["call"], "growth": first["growth"], "chars": first["chars"]})
