"""A replay as output: one JSON object, CSV with one row per call, and the comparison table of
several runs (text for the CLI; ``COMPARISON_COLUMNS`` for the window's table)."""
from __future__ import annotations

import csv
import io
from typing import Any

from . import views

COMPARISON_COLUMNS = [
    ("label", "run"), ("calls", "calls"), ("compactions", "compactions"), ("summaries", "summaries"),
    ("peak_tokens", "peak context (tokens)"), ("peak_size", "peak context (chars)"),
    ("total_input_tokens", "total input tokens"), ("messages_dropped", "messages dropped"),
    ("tool_results_dropped", "tool results dropped"), ("iterations_used", "iterations used"),
    ("iterations_refunded", "iterations refunded"), ("errors", "errors"),
]


def to_json(result: Any, lazy: bool = False) -> dict:
    """The replay as JSON values; ``lazy``: the calls as a generator (a streaming writer then never holds
    every call's dict at once)."""
    its = views.iterations(result)
    calls = (dict(c.to_json(), iterations=it) for c, it in zip(result.calls, its))
    return {"strategy": result.strategy, "label": result.label, "params": result.params,
            "layers": result.layer_names, "threshold": result.threshold, "threshold_unit": result.threshold_unit,
            "estimators": {"size": result.size_estimator, "tokens": result.token_estimator},
            "source": result.source, "seconds": round(result.seconds, 4), "totals": views.totals(result),
            "calibration": result.calibration,
            "real_compactions": result.real_events, "simulated_compactions": views.compactions(result),
            "boundaries": views.boundary_report(result),
            "calls": calls if lazy else list(calls)}


def columns(result: Any) -> list[str]:
    cols = ["index", "message_index", "new_messages", "raw_size", "raw_tokens", "messages_before",
            "messages_after", "size_before", "size_after", "tokens_before", "tokens_after"]
    for n in result.layer_names:
        cols += [f"{n}.changed", f"{n}.size_before", f"{n}.size_after", f"{n}.tokens_before",
                 f"{n}.tokens_after"]
    cols += ["fired", "events", "dropped_messages", "results_cleared", "results_dropped", "summaries",
             "real_tokens", "real_boundary_pre_tokens", "errors", "iterations_used", "iterations_refunded",
             "iterations_remaining", "iteration_refused", "user_turn"]
    return cols


def rows(result: Any) -> list[dict]:
    out = []
    for c, it in zip(result.calls, views.iterations(result)):
        r = {"index": c.index, "message_index": c.message_index, "new_messages": c.new_messages,
             "raw_size": c.raw_size, "raw_tokens": c.raw_tokens, "messages_before": c.messages_before,
             "messages_after": c.messages_after, "size_before": c.size_before, "size_after": c.size_after,
             "tokens_before": c.tokens_before, "tokens_after": c.tokens_after}
        by = {lr.layer: lr for lr in c.layers}
        for n in result.layer_names:
            rec = by.get(n)
            r[f"{n}.changed"] = rec.changed if rec else ""
            r[f"{n}.size_before"] = rec.size_before if rec else ""
            r[f"{n}.size_after"] = rec.size_after if rec else ""
            r[f"{n}.tokens_before"] = rec.tokens_before if rec else ""
            r[f"{n}.tokens_after"] = rec.tokens_after if rec else ""
        r.update(fired=";".join(c.fired), events=" | ".join(c.events), dropped_messages=len(c.dropped),
                 results_cleared=c.results_cleared, results_dropped=c.results_dropped, summaries=c.summaries,
                 real_tokens="" if c.real_tokens is None else c.real_tokens,
                 real_boundary_pre_tokens="" if not c.real_boundary else c.real_boundary.get("pre_tokens") or "",
                 errors=" | ".join(c.errors), iterations_used=it["used"], iterations_refunded=it["refunded"],
                 iterations_remaining=it["remaining"], iteration_refused=it["refused"], user_turn=c.turn)
        out.append(r)
    return out


def to_csv(result: Any) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=columns(result), lineterminator="\n")
    w.writeheader()
    for r in rows(result):
        w.writerow(r)
    return buf.getvalue()


def comparison_table(results: list) -> list[dict]:
    return [r.totals() for r in results]


def format_table(results: list) -> str:
    rows_ = comparison_table(results)
    # the iteration columns only when some run's strategy has an iteration budget
    cols = [(k, t) for k, t in COMPARISON_COLUMNS
            if not k.startswith("iterations_") or any(r.get(k) is not None for r in rows_)]
    head = [t for _, t in cols]
    body = [[f"{r.get(k):,}" if isinstance(r.get(k), int) else ("" if r.get(k) is None else str(r.get(k)))
             for k, _ in cols]
            for r in rows_]
    widths = [max(len(h), *(len(b[i]) for b in body)) if body else len(h) for i, h in enumerate(head)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(head, widths))]
    lines += ["  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(b, widths))) for b in body]
    return "\n".join(lines)
