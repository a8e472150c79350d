"""Where a replay and reality part ways: for each real compaction of a recording, the simulated
compaction paired with it (``core.replay.pairing``: the nearest in its own segment, never one paired twice),
how many calls apart, and how far the estimate just
before the real one was from what the agent counted (Claude Code's ``preTokens``); when they
diverge (more than ``MAX_CALLS`` calls, or more than ``MAX_TOKEN_ERROR`` of the tokens), which
setting would explain it. Pure Python, no Qt.
"""
from __future__ import annotations

from bisect import bisect_left
from typing import Any

MAX_CALLS = 2
MAX_TOKEN_ERROR = 0.10


def _version(conversation) -> str | None:
    from ..strategies.claude_code_versions import fmt_version, parse_version
    extra = getattr(conversation, "extra", None) or {}
    vs = sorted(v for v in (parse_version(x) for x in extra.get("versions") or ()) if v)
    return fmt_version(vs[-1]) if vs else None


def report(result: Any, conversation: Any = None) -> dict:
    """``{"version", "mode", "diverged", "compactions": [...]}``; per real compaction: ``real_call``, ``trigger``,
    ``real_pre_tokens``, ``simulated_call`` (the simulated compaction paired with it, ``core.replay.pairing``;
    None when its segment has none; ``first_simulated_call`` is the same, its older name), ``late`` (following
    reality: found by the replay's own context carried past the real boundary), ``calls_apart``,
    ``estimate_before`` (the replay's estimate before its pipeline ran at ``estimate_call``: the simulated
    compaction when it came before the real one, else the real call, where following reality the replay's own
    context up to the real boundary is checked), ``token_error`` and ``token_error_share`` (against
    ``preTokens``), ``diverges``, and ``explanation`` (which setting would explain it)."""
    from ..replay.pairing import pairs
    conv = conversation if conversation is not None else getattr(result, "conversation", None)
    conv = getattr(conv, "conversation", None) or conv           # a replay view: the recording
    rows: list[dict] = []
    mode = getattr(result, "mode", "free")
    out: dict[str, Any] = {"version": _version(conv), "mode": mode,
                           "thresholds": {"calls": MAX_CALLS, "token_share": MAX_TOKEN_ERROR}, "compactions": rows}
    calls = result.calls
    index = _CallIndex(calls)
    for ev, pair in zip(result.real_events, pairs(result), strict=True):
        call = ev.get("call")
        if call is None:
            continue
        sim = pair["call"] if pair is not None else None
        row: dict = {"real_call": call, "trigger": ev.get("trigger"), "kind": ev.get("kind"),
                     "real_pre_tokens": ev.get("pre_tokens"), "simulated_call": sim, "first_simulated_call": sim,
                     "late": bool(pair and pair["late"]), "calls_apart": None if sim is None else sim - call}
        # the estimate just before the replay compacted: at the simulated compaction when it came first (after it
        # the replay's context is its own, not the one the agent counted), else at the real call
        at = sim if sim is not None and sim < call else call
        est = calls[at].tokens_before if 0 <= at < len(calls) else None
        row["estimate_before"], row["estimate_call"] = est, at
        pre = ev.get("pre_tokens")
        if est is not None and isinstance(pre, int) and pre > 0:
            row["token_error"] = est - pre
            row["token_error_share"] = round((est - pre) / pre, 4)
        far = sim is None or abs(sim - call) > MAX_CALLS
        off = abs(row.get("token_error_share") or 0) > MAX_TOKEN_ERROR
        row["diverges"] = bool(far or off)
        if call == 0 and sim is None:
            # the file opens with a compacted context (a hermes snapshot written after a compaction): nothing it
            # holds was ever compacted, so no replay of it can compact there
            row["diverges"] = False
            row["explanation"] = "the compaction came before the file's first model call: what it compacted is " \
                                 "not in the file"
        if row["diverges"]:
            row["explanation"] = explain(result, row, index)
        rows.append(row)
    from ..replay.evidence import untrusted
    out["untrusted"] = untrusted(result)
    out["diverged"] = any(r["diverges"] for r in rows) or bool(out["untrusted"])
    return out


def warning(row: dict) -> str:
    """The sentence that says where a replay and reality part ways (the CLI's ``!`` line, the timeline)."""
    sim = row.get("simulated_call", row.get("first_simulated_call"))
    apart = "no simulated compaction in its segment" if sim is None else \
        f"the simulated one paired with it at call {sim} ({row['calls_apart']:+d} calls" \
        + (", the replay's own context carried past the real one" if row.get("late") else "") + ")"
    err = f", estimate {row['token_error_share']:+.0%} off preTokens" if "token_error_share" in row else ""
    return (f"simulation and reality diverge at the real compaction before call {row['real_call']}: {apart}{err}. "
            f"{row.get('explanation') or ''}").strip()


class _CallIndex:
    """What ``explain`` looks up about the calls before a real compaction, gathered once per report (a session
    with thousands of real compactions otherwise walks every call again for each of them)."""

    def __init__(self, calls: list):
        self.micro = [c.index for c in calls if any(r.changed and r.layer == "time_micro_compact" for r in c.layers)]
        self.compacted = [c.index for c in calls if c.compacted]
        self.resets = [c.index for c in calls if c.reset is not None]

    def first_micro_upto(self, call: int) -> int | None:
        """The first call up to ``call`` where the time-based microcompact cleared results."""
        return self.micro[0] if self.micro and self.micro[0] <= call else None

    def last_compacted_before(self, call: int, follow: bool) -> int | None:
        """The last compacted call before ``call`` (following reality: only after the segment's last reset)."""
        k = bisect_left(self.compacted, call)
        if not k:
            return None
        last = self.compacted[k - 1]
        if follow:
            r = bisect_left(self.resets, call)
            if r and last <= self.resets[r - 1]:
                return None
        return last


def explain(result: Any, row: dict, index: _CallIndex | None = None) -> str:
    """Which setting would explain a divergence, in words."""
    params = dict(getattr(result, "params", None) or {})
    thr = getattr(result, "threshold", None)
    pre, call, first = row.get("real_pre_tokens"), row["real_call"], row.get("simulated_call")
    trigger = row.get("trigger")
    index = index if index is not None else _CallIndex(result.calls)
    if trigger == "manual":
        return "a manual /compact: the user chose the moment (replayed there with --manual-compacts)"
    micro = index.first_micro_upto(call)
    if (first is None or first > call) and micro is not None:
        return (f"time-based microcompact cleared results at call {micro} in the replay: idle_gap_minutes=0 "
                f"would keep them, as the real session did")
    if first is not None and first < call and thr and isinstance(pre, int) and pre > thr:
        return _threshold_hint(result, pre, params, earlier=True)
    if (first is None or first > call) and thr and isinstance(pre, int) and pre < thr:
        return _threshold_hint(result, pre, params, earlier=False)
    est_err = row.get("token_error_share")
    if est_err is not None and abs(est_err) > MAX_TOKEN_ERROR:
        prior = index.last_compacted_before(call, getattr(result, "mode", "free") == "follow")
        if prior is not None:
            return (f"the replay's context is its own since its compaction at call {prior} (a different "
                    f"summary and restored files than the real ones), so its estimate is "
                    f"{abs(est_err):.0%} {'above' if est_err > 0 else 'below'} what the agent counted")
        return (f"the estimate is {abs(est_err):.0%} {'above' if est_err > 0 else 'below'} what the agent counted: "
                f"try --tokens anthropic (count_tokens) or check the system prompt and tools the file lacks")
    if thr and isinstance(pre, int):
        return _threshold_hint(result, pre, params, earlier=first is not None and first < call)
    return "the recording does not say what the agent counted (no preTokens)"


def _threshold_hint(result: Any, pre: int, params: dict, earlier: bool) -> str:
    thr = result.threshold
    name = getattr(result, "strategy", "")
    text = (f"the real compaction fired at {pre:,} tokens, {'above' if pre > thr else 'below'} the replay's "
            f"threshold {thr:,.0f}")
    if name == "claude_code":
        from ..layers.claude_code import threshold as cc_threshold
        tries: list[dict[str, Any]] = [{"cap_reserve": not params.get("cap_reserve", True)}]
        if pre > 200_000:
            tries.insert(0, {"window": 1_000_000})
        for t in tries:
            alt = cc_threshold({**params, **t})
            if (alt <= pre if not earlier else alt > thr) and abs(alt - pre) < abs(thr - pre):
                sets = ", ".join(f"{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in t.items())
                return f"{text}: --set {sets} (threshold {alt:,}) would explain it"
        buffer = int(params.get("buffer", 13_000)) + int(thr - pre) + 1
        if buffer >= 0:
            return f"{text}: --set buffer={buffer} (threshold {pre - 1:,}) would explain it"
    return f"{text}: a threshold of about {pre:,} tokens would explain it"
