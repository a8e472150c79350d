"""What is derived from a replay's records: compactions, the iteration budget call by call,
totals (one comparison row), and real compactions next to the simulated ones. Pure functions of a
``ReplayResult`` (reached through its methods)."""
from __future__ import annotations

from array import array
from operator import attrgetter
from typing import Any

# the figures of every call the timeline draws (``timeline_columns``)
TIMELINE_FIGURES = ("raw_tokens", "raw_size", "tokens_before", "size_before", "tokens_after", "size_after",
                    "real_tokens")


def timeline_columns(result: Any) -> dict:
    """What the timeline draws of a replay, an array of doubles per figure of its calls (``TIMELINE_FIGURES``;
    real_tokens a list, None where the call has no recorded usage) and ``fired_at``: layer name -> the calls it fired at, in call order.
    Made in the replay's worker: at 50k calls, walking the calls once per curve and once per layer held the
    window's thread ~0.15 s."""
    calls = result.calls
    # (doubles in an array: the window's thread makes them a numpy array by a copy, not a conversion per call)
    out: dict = {a: array("d", map(attrgetter(a), calls)) for a in TIMELINE_FIGURES if a != "real_tokens"}
    out["real_tokens"] = list(map(attrgetter("real_tokens"), calls))
    out["fired_at"] = fired_at(calls)
    return out


def fired_at(calls: list) -> dict:
    """Layer name -> the indexes of the calls it fired at, in call order (one pass over the calls)."""
    out: dict = {}
    for c in calls:
        if c.fired:
            for name in set(c.fired):
                out.setdefault(name, []).append(c.index)
    return out


def compactions(result: Any) -> list[dict]:
    """Calls where messages left the context, with the layers that did it."""
    out = []
    for c in result.calls:
        if c.compacted:
            out.append({"call": c.index, "message_index": c.message_index, "layers": c.fired,
                        "tokens_before": c.tokens_before, "tokens_after": c.tokens_after,
                        "size_before": c.size_before, "size_after": c.size_after,
                        "summaries": c.summaries, "dropped_messages": len(c.dropped)})
    return out


def iterations(result: Any) -> list[dict]:
    """The strategy's iteration budget (``Strategy.iteration_budget``, counted by
    ``core.moa.IterationBudget``) walked call by call: each model call consumes one iteration; a
    call before which the context was compacted also consumed one for the compaction restart,
    which was refunded. Like hermes-agent's turn loop, the budget is fresh for every user turn
    (``run_conversation`` makes a new one). Per call: ``turn``, ``used`` (in this turn, after the
    call), ``refunded`` (this call), ``remaining``, ``refused`` (the cap stopped this turn's loop at
    or before the call)."""
    from ..analysis.moa import IterationBudget
    policy, cap = result.iteration_policy, result.iteration_cap
    if policy is None or cap is None:      # the strategy's agent loop has no iteration cap
        return [{"turn": c.turn, "used": None, "refunded": 0, "remaining": None, "refused": False}
                for c in result.calls]
    b = IterationBudget(cap)
    out, refused, turn = [], False, None
    for c in result.calls:
        if c.turn != turn and (policy.per_user_turn or turn is None):
            b, refused = IterationBudget(cap), False
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


def iteration_totals(result: Any, its: list[dict] | None = None) -> dict:
    """The budget's totals (None for a strategy without an iteration budget) and the user turns."""
    if getattr(result, "iteration_policy", None) is None or getattr(result, "iteration_cap", None) is None:
        return {"iteration_cap": None, "iterations_used": None, "iterations_refunded": None,
                "iteration_cap_reached_at": None, "user_turns": len({c.turn for c in result.calls}),
                "most_iterations_in_a_turn": None}
    it = iterations(result) if its is None else its
    first = next((k for k, r in enumerate(it) if r["refused"]), None)
    last = {}
    for r in it:
        last[r["turn"]] = r["used"]
    return {"iteration_cap": result.iteration_cap, "iterations_used": sum(last.values()),
            "iterations_refunded": sum(r["refunded"] for r in it), "iteration_cap_reached_at": first,
            "user_turns": len(last), "most_iterations_in_a_turn": max(last.values(), default=0)}


def totals(result: Any) -> dict:
    """One row for the whole run: calls, compactions, peaks, total input tokens (a cost proxy),
    drops, layer firings, errors, the iteration budget and, with usage, the real figures."""
    calls = result.calls
    real = [c.real_tokens for c in calls if c.real_tokens is not None]
    d = {"label": result.label, "strategy": result.strategy, "calls": len(calls),
         "compactions": sum(1 for c in calls if c.compacted),
         "summaries": sum(c.summaries for c in calls),
         "peak_tokens": max((c.tokens_after for c in calls), default=0),
         "peak_size": max((c.size_after for c in calls), default=0),
         "total_input_tokens": sum(c.tokens_after for c in calls),
         "raw_total_input_tokens": sum(c.raw_tokens for c in calls),
         "messages_dropped": sum(len(c.dropped) for c in calls),
         "tool_results_dropped": sum(c.results_cleared + c.results_dropped for c in calls),
         "layer_firings": {n: sum(1 for c in calls if n in c.fired) for n in result.layer_names},
         "errors": sum(len(c.errors) for c in calls)}
    d.update(iteration_totals(result))
    if real:
        d["real_peak_tokens"] = max(real)
        d["real_total_input_tokens"] = sum(real)
        d["real_compactions"] = len(result.real_events)
    return d


def boundary_report(result: Any) -> list[dict]:
    """Each real compaction next to the simulated compaction paired with it (``core.replay.pairing``: the nearest
    in its own segment, never one paired twice; ``CallRecord.compacted``: a summary, or a pass that dropped or
    cleared messages, such as Inspect's edit and trim), with call indices and tokens."""
    from .pairing import pairs
    out = []
    for ev, pair in zip(result.real_events, pairs(result), strict=True):
        call = ev.get("call")
        row = {"real_call": call, "real_message_index": ev.get("message_index"), "kind": ev.get("kind"),
               "trigger": ev.get("trigger"),
               "real_pre_tokens": ev.get("pre_tokens"),
               "real_tokens_before_call": result.calls[call - 1].real_tokens if call else None}
        if pair is not None and call is not None:
            k = pair["call"]
            near = result.calls[k] if 0 <= k < len(result.calls) else None
            row.update(simulated_call=k, simulated_tokens_before=pair["tokens_before"], calls_apart=k - call,
                       late=pair["late"])
            if near is not None and not pair["late"]:
                row.update(simulated_message_index=near.message_index, simulated_layers=list(near.fired))
        out.append(row)
    return out


def pre_tokens_text(pre: Any) -> str:
    """A real compaction's preTokens in words: the number, or that the recording does not hold it (hermes
    records no token counts), never a bare ``None``."""
    if isinstance(pre, (int, float)) and not isinstance(pre, bool):
        return f"preTokens {pre:,.0f}"
    return "the recording holds no preTokens"


def chars_per_token(result: Any) -> float:
    """How many characters of the size estimate make one token in this replay: the token estimator's
    own ratio when it has one (chars/4), else measured over the calls (sizes / tokens sent)."""
    if result.chars_per_token:
        return float(result.chars_per_token)
    size = sum(c.size_after for c in result.calls)
    tokens = sum(c.tokens_after for c in result.calls)
    return size / tokens if size and tokens else 4.0


def threshold_in(result: Any, unit: str) -> tuple[float | None, bool]:
    """The replay's threshold in ``unit`` ("size" or "tokens") and whether that is exact (False: converted
    from the strategy's own unit with ``chars_per_token``)."""
    thr = result.threshold
    if thr is None or result.threshold_unit == unit:
        return thr, True
    cpt = chars_per_token(result)
    return (thr * cpt if unit == "size" else thr / cpt), False
