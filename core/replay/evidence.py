"""Layers the real session contradicts: a layer that changed the replay's context at a call where the real
usage shows no such change (the real context kept what the layer removed) is flagged and not trusted. E.g.
Claude Code's tool result budget persisting a result the real session kept, or time-based microcompact clearing
results after a gap the real session did not clear after. Pure Python, no Qt.
"""
from __future__ import annotations

from typing import Any

MIN_DROP = 1_000            # a layer's change smaller than this (tokens) is within the estimate's noise
MIN_DROP_SHARE = 0.02

# the setting that turns a contradicted layer off, by layer
SETTINGS = {"tool_result_budget": "budget_chars (raise it above the results the session kept)",
            "time_micro_compact": "idle_gap_minutes=0", "snip_compact": "snip_max_messages=0",
            "micro_compact": "the strategy's microcompact settings"}


def untrusted(result: Any) -> list[dict]:
    """Per contradicted change: ``call``, ``layer``, ``drop`` (tokens the layer took off), ``estimate_before``
    (the estimate before the layer), ``real_tokens`` (what the call really sent) and ``setting`` (what turns it
    off). A layer a threshold triggered (a compaction) is judged by the pairing, not here; a call just after a
    real compaction is not judged (the real context fell there anyway)."""
    out = []
    for c in result.calls:
        if c.real_tokens is None or c.real_boundary is not None or c.reset is not None:
            continue
        for lr in c.layers:
            if not lr.changed or lr.summary or lr.triggered:
                continue
            drop = lr.tokens_before - lr.tokens_after
            if drop < max(MIN_DROP, MIN_DROP_SHARE * lr.tokens_before):
                continue
            if c.real_tokens >= lr.tokens_before - drop / 2:
                out.append({"call": c.index, "layer": lr.layer, "drop": drop, "estimate_before": lr.tokens_before,
                            "real_tokens": c.real_tokens, "setting": SETTINGS.get(lr.layer, "")})
    return out


def untrusted_words(row: dict) -> str:
    """One contradicted change in words (the CLI's ``!`` line, the report, the timeline)."""
    tail = f"; --set {row['setting']}" if row.get("setting") else ""
    return (f"{row['layer']} took {row['drop']:,} tokens off the context at call {row['call']} where the real "
            f"context kept them ({row['real_tokens']:,} real, {row['estimate_before']:,} estimated before it): not "
            f"trusted{tail}")
