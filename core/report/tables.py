"""The report's tables as data, once: each function returns ``Table(head, rows, numeric)``; the HTML and
the Markdown renderers only format them. Cells are plain values (numbers, text); nothing here is markup."""
from __future__ import annotations

from typing import NamedTuple

from ..replay import COMPARISON_COLUMNS
from ..replay.views import pre_tokens_text
from ..model.describe import clip, num, to_json, when


class Table(NamedTuple):
    head: list
    rows: list
    numeric: frozenset = frozenset()      # columns that hold numbers (right-aligned in HTML)


def _unit(unit: str) -> str:
    return "tokens" if unit == "tokens" else "chars"


def file_facts(rep) -> Table:
    info = rep.source.info
    rows = [["path", rep.source.path], ["format", info.get("format", "")]]
    if rep.source.file_bytes is not None:
        rows.append(["size", f"{rep.source.file_bytes:,} bytes"])
    rows += [["conversations", len(info.get("conversations", []))], ["messages", info.get("messages", 0)],
             ["real compactions", info.get("compactions", 0)]]
    return Table(["", ""], rows)


def conversations(rep) -> Table:
    return Table(["#", "title", "messages", "dialect", "model", "tool pairs (complete)", "segments", "compactions",
                  "model calls"],
                 [[c["index"], clip(c.get("title") or "(untitled)", 80), c["messages"], c["dialect"],
                   c.get("model") or "", f'{c["tool_pairs"]:,} ({c["complete_pairs"]:,})', len(c["segments"]),
                   len(c["events"]), (c.get("usage") or {}).get("calls", "")]
                  for c in rep.source.info.get("conversations", [])], frozenset({0, 2, 6, 7, 8}))


def real_compactions(rep) -> Table:
    return Table(["conversation", "before message", "kind", "trigger", "preTokens", "postTokens", "where"],
                 [[c["index"], e["message_index"], e["kind"], e.get("trigger") or "", e.get("pre_tokens") or "",
                   e.get("post_tokens") or "", e.get("where") or ""]
                  for c in rep.source.info.get("conversations", []) for e in c["events"]], frozenset({0, 1, 4, 5}))


def usage(rep) -> Table:
    keys = ("calls", "input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens",
            "peak_context_tokens", "last_context_tokens")
    return Table(["conversation", "calls", "input", "output", "cache write", "cache read", "peak context",
                  "last context"],
                 [[c["index"]] + [c["usage"][k] for k in keys] for c in rep.source.info.get("conversations", [])
                  if c.get("usage")], frozenset(range(8)))


def run_facts(rep) -> Table:
    s, tr = rep.strategy, rep.trace
    chosen = f" ({rep.strategy_reason})" if rep.strategy_reason else ""
    thr = f"{num(rep.threshold)} {_unit(rep.threshold_unit)}" if rep.threshold is not None else "none"
    return Table(["", ""], [["strategy", f"{s.name}: {s.title}{chosen}"], ["what it is", s.description],
                            ["ran over", rep.source.scope],
                            ["layers", " \u2192 ".join(st.layer for st in tr.steps) or "(none)"], ["threshold", thr],
                            ["estimators", f"size: {tr.size_estimator}; tokens: {tr.token_estimator}"]])


def params(rep) -> Table:
    rows = []
    for p in rep.strategy.params:
        v = rep.params.get(p.name, p.default)
        rows.append([p.name, v if isinstance(v, (int, float, str)) else to_json(v), p.default,
                     "changed" if p.name in rep.changed_params else "", rep.param_reasons.get(p.name) or p.help])
    return Table(["parameter", "value", "default", "", "why / meaning"], rows)


def stage_series(rep) -> tuple[list, list, list, list]:
    """(labels, messages, sizes, tokens) of Original and after every layer."""
    st = rep.stages
    labels = ["Original"] + [s.label for s in st]
    counts = [len(rep.messages)] + [len(s.step.messages) for s in st]
    sizes = [st[0].step.size_before if st else 0] + [s.step.size_after for s in st]
    tokens = [st[0].step.tokens_before if st else 0] + [s.step.tokens_after for s in st]
    return labels, counts, sizes, tokens


def stages(rep) -> Table:
    labels, counts, sizes, tokens = stage_series(rep)
    thr = rep.threshold
    key = tokens if rep.threshold_unit == "tokens" else sizes
    rows = []
    for k, lab in enumerate(labels):
        s = rep.stages[k - 1].step if k else None
        state = ("changed" if s.changed else "no change") + (" (failed)" if s.error else "") if s else ""
        rows.append([lab, counts[k], sizes[k], tokens[k], ("over" if key[k] > thr else "under") if thr else "",
                     state, f"{s.seconds * 1000:.1f} ms" if s else ""])
    return Table(["stage", "messages", "size (chars)", "tokens", "threshold", "", "time"], rows,
                 frozenset({1, 2, 3, 6}))


def finding_counts(rep) -> Table:
    tr = rep.trace
    rows = [["input", len(tr.input_findings), sum(f.severity == "error" for f in tr.input_findings)]]
    rows += [[f"after {st.label}", len(st.step.findings), sum(f.severity == "error" for f in st.step.findings)]
             for st in rep.stages]
    return Table(["stage", "findings", "errors"], rows, frozenset({1, 2}))


def comparison(rp) -> Table:
    cols = COMPARISON_COLUMNS + ([("real_peak_tokens", "real peak"), ("real_compactions", "real compactions")]
                                 if any("real_peak_tokens" in t for t in rp.totals) else [])
    return Table([t for _, t in cols], [[t.get(k, "") for k, _ in cols] for t in rp.totals],
                 frozenset(range(1, len(cols))))


def boundary_lines(rp) -> list[str]:
    """Which replay it is (following reality or free-running), then each real compaction next to the simulated one
    paired with it (calls apart, the estimate's error just before), then the layers the real session contradicts,
    in words."""
    from ..analysis.divergence import report as divergence_report
    from ..replay.evidence import untrusted_words
    from ..replay.follow import boundary_words, mode_words
    main = rp.runs[0]
    out = [mode_words(main)] if main.real_events else []
    div = {r["real_call"]: r for r in divergence_report(main)["compactions"]}
    for b in rp.boundaries:
        sim = boundary_words(b)
        d = div.get(b.get("real_call")) or {}
        err = (f"; estimate {d['token_error']:+,} tokens ({d['token_error_share']:+.1%}) against preTokens just "
               f"before" if "token_error_share" in d else "")
        out.append(f"real {b.get('trigger') or ''} compaction before call {b.get('real_call')} "
                   f"({pre_tokens_text(b.get('real_pre_tokens'))}): {sim}{err}")
    out += [untrusted_words(u) for u in divergence_report(main)["untrusted"]]
    return out


def run_lines(rp) -> list[tuple[str, str]]:
    """(label, what it is and which layers fired) per replayed run."""
    out = []
    for r in rp.runs:
        fired = {k: v for k, v in r.totals()["layer_firings"].items() if v}
        out.append((r.label, f"{r.strategy}" + (f", threshold {num(r.threshold)} {_unit(r.threshold_unit)}"
                                                if r.threshold else "")
                    + (", layers fired: " + ", ".join(f"{k} x{v}" for k, v in fired.items()) if fired else "")))
    return out


def calls(main, width: int = 400) -> Table:
    """Every model call of a replay: the context before and after, the real one, what fired and happened."""
    real = any(c.real_tokens is not None for c in main.calls)
    head = ["call", "message", "time", "messages", "tokens before", "tokens after"] + (["real"] if real else []) + \
        ["fired", "what happened"]
    rows = []
    for c in main.calls:
        ev = "; ".join(c.events)
        if c.real_boundary:
            ev = (f"REAL {c.real_boundary.get('trigger') or ''} compaction "
                  f"({pre_tokens_text(c.real_boundary.get('pre_tokens'))}); ") + ev
        rows.append([c.index, c.message_index, when(c.timestamp), f"{c.messages_before:,} \u2192 {c.messages_after:,}",
                     c.tokens_before, c.tokens_after] + ([c.real_tokens if c.real_tokens is not None else ""]
                                                        if real else []) + [", ".join(c.fired), clip(ev, width)])
    return Table(head, rows, frozenset({0, 1, 4, 5, 6} if real else {0, 1, 4, 5}))
