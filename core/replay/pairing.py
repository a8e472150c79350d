"""Each real compaction next to at most one simulated compaction: the nearest in its own segment.

A real compaction at call ``c`` (the first call after it) closes the real context that began after the previous
real compaction (call ``p``). Its candidates:

* following reality (``ReplayResult.mode == "follow"``): the simulated compactions at calls ``p < k <= c`` (the
  call ``c`` itself is the check of the replay's own context up to the boundary; after it the replay runs on the
  next real context), and the shadow's late one (``ReplayResult.late``) when the check did not compact;
* free-running: the simulated compactions strictly between the neighbouring real ones (``p < k < next``).

The pairs are chosen nearest first over all real compactions, so no simulated compaction is paired twice and
each real one gets the nearest that is still free; the simulated compactions left over are extra ones. Pure
Python, no Qt.
"""
from __future__ import annotations

from typing import Any


def pairs(result: Any) -> list[dict | None]:
    """Per entry of ``result.real_events``: ``{"call", "tokens_before", "late"}`` of its simulated compaction
    (``late``: found by the shadow after the real one, following reality), or None."""
    events = result.real_events
    calls = result.calls
    sims = [c.index for c in calls if c.compacted]
    follow = getattr(result, "mode", "free") == "follow"
    late = getattr(result, "late", None) or {}
    real = sorted({e["call"] for e in events if e.get("call") is not None})
    cands = []            # (distance, real call, key, simulated call, tokens before, late)
    for n, c in enumerate(real):
        prev = real[n - 1] if n else -1
        nxt = real[n + 1] if n + 1 < len(real) else None
        for k in sims:
            inside = prev < k <= c if follow else prev < k and (nxt is None or k < nxt)
            if inside:
                cands.append((abs(k - c), k > c, c, ("sim", k), k, calls[k].tokens_before, False))
        shadow = late.get(c) if follow else None
        if shadow is not None:
            k = shadow["call"]
            cands.append((abs(k - c), True, c, ("late", c), k, shadow.get("tokens_before"), True))
    cands.sort(key=lambda t: t[:3])
    used: set = set()
    chosen: dict = {}
    for _, _, c, key, k, tokens, is_late in cands:
        if c in chosen or key in used or (key[0] == "sim" and ("sim", k) in used):
            continue
        used.add(key)
        chosen[c] = {"call": k, "tokens_before": tokens, "late": is_late}
    out: list[dict | None] = []
    seen: set = set()
    for e in events:
        c = e.get("call")
        # two real compactions before one call (rare) share it: only the first gets the pair
        out.append(chosen.get(c) if c is not None and c not in seen else None)
        if c is not None:
            seen.add(c)
    return out


def extra_compactions(result: Any) -> list[int]:
    """Simulated compactions paired with no real one (a false compaction, or a second one in a segment)."""
    paired = {p["call"] for p in pairs(result) if p is not None and not p["late"]}
    return [c.index for c in result.calls if c.compacted and c.index not in paired]
