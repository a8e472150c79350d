"""Claude Code's versions and how each compacts: the table behind ``infer(conversation)``, the
claude_code strategy's session-inferred defaults. Every rule says where its fact comes from; how
each was checked on real sessions is in docs/claude-code-versions.md (and ``bench/bench_cc_accuracy.py``
prints it for any folder of sessions).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from compactscope.core.strategies.infer import Inferred

WINDOW_200K = 200_000
WINDOW_1M = 1_000_000
MICRO_DROP_TOKENS = 5_000        # a drop of the real context this large, with no boundary, is a microcompact
MICRO_DROP_SHARE = 0.05


def parse_version(v) -> tuple | None:
    """'2.1.14' -> (2, 1, 14); None when it is not a version."""
    if not isinstance(v, str):
        return None
    m = re.match(r"\s*(\d+)\.(\d+)\.(\d+)", v)
    return tuple(int(x) for x in m.groups()) if m else None


def fmt_version(t: tuple) -> str:
    return ".".join(map(str, t))


@dataclass(frozen=True)
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


def rule_for(version: tuple | None) -> Rule:
    if version is None:
        return RULES[-1]
    chosen = RULES[0]
    for r in RULES:
        if version >= r.since:
            chosen = r
    return chosen


def _versions(conversation) -> list[tuple]:
    extra = getattr(conversation, "extra", None) or {}
    vs = {parse_version(v) for v in extra.get("versions") or ()}
    return sorted(v for v in vs if v is not None)


def real_calls(conversation) -> list[tuple[int, int, int, float | None]]:
    """(message index, segment, real context tokens, timestamp) of each recorded API response."""
    msgs, meta = conversation.messages, conversation.meta
    starts = sorted(set(conversation.segments or [0]) | {0})
    out, seg = [], 0
    for i, m in enumerate(msgs):
        while seg + 1 < len(starts) and i >= starts[seg + 1]:
            seg += 1
        if not (isinstance(m, dict) and m.get("role") == "assistant") or i >= len(meta):
            continue
        mt = meta[i]
        if mt.usage is None or mt.usage.context_tokens <= 0 or mt.extra.get("synthetic"):
            continue
        out.append((i, seg, mt.usage.context_tokens, mt.timestamp))
    return out


def context_drops(conversation) -> list[dict]:
    """Where the real context shrank with no compaction boundary (a microcompact cleared results):
    {"message", "call", "dropped", "from", "to", "idle_minutes"}."""
    calls = real_calls(conversation)
    out = []
    for k in range(1, len(calls)):
        (_, s0, t0, ts0), (i, s1, t1, ts1) = calls[k - 1], calls[k]
        if s0 != s1:
            continue
        if t0 - t1 >= max(MICRO_DROP_TOKENS, MICRO_DROP_SHARE * t0):
            idle = (ts1 - ts0) / 60.0 if ts0 is not None and ts1 is not None else None
            out.append({"message": i, "call": k, "dropped": t0 - t1, "from": t0, "to": t1,
                        "idle_minutes": None if idle is None else round(idle, 1)})
    return out


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
    out = Inferred()
    if getattr(conversation, "format", "") != "claude-code":
        return out
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
            out.set(k, v, f"{span}: {rule.fact} [{rule.source}]")
        crossing = [v for v in versions if rule_for(v) is not rule]
        if crossing:
            out.notes.append(f"the session changed version across a rule: {fmt_version(crossing[0])} compacted by "
                             f"another rule ({rule_for(crossing[0]).fact})")
    # the window: a real context past 200k means the 1M window was on
    if peak is not None and peak > WINDOW_200K:
        out.set("window", WINDOW_1M, f"the real context reached {peak:,} tokens, more than a 200k window holds: "
                                     f"the session ran with the 1M-token window")
    # time-based microcompact: only where the session shows it ran
    drops = context_drops(conversation)
    records = _microcompact_records(conversation)
    out.facts["context_drops"] = drops
    if drops or records:
        d = drops[0] if drops else None
        why = (f"the real context dropped by {d['dropped']:,} tokens at call {d['call']} with no compaction "
               f"boundary" + (f" (after {d['idle_minutes']:g} idle minutes)" if d and d['idle_minutes'] is not None
                              else "") if d else f"{records} microcompact_boundary record(s)")
        out.set("idle_gap_minutes", 60.0, f"{why}: time-based microcompact ran in this session (server-gated; "
                                          f"the 60-minute gap of timeBasedMCConfig.ts)")
    elif calls:
        out.set("idle_gap_minutes", 0.0, "the real context never dropped without a compaction boundary and no "
                                         "microcompact_boundary was recorded: time-based microcompact (server-"
                                         "gated) did not run in this session; --set idle_gap_minutes=60 turns it on")
    # auto-compact off: the real estimate passed the threshold and nothing ever auto-compacted
    if calls and not autos:
        from compactscope.core.layers.claude_code import threshold
        params = {**{p: v for p, v in rule.params}, **out.params}
        limit = threshold(params)
        over = [(k, t) for k, (_, _, t, _) in enumerate(calls) if t >= limit + 2_000]
        if over and (peak or 0) <= WINDOW_200K:
            k, t = over[0]
            out.set("autocompact", False, f"the real context reached {t:,} tokens at call {k}, past the "
                                          f"{limit:,}-token threshold, and the session never auto-compacted: "
                                          f"auto-compact was off (/config or DISABLE_AUTO_COMPACT)")
    if version is not None:
        for since, until, kind, text in CAVEATS:
            if version >= since and (until is None or version < until) and (kind != "mcp" or _uses_mcp(conversation)):
                out.notes.append(text)
    return out
