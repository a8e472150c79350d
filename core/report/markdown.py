"""The report as Markdown: the same facts as the HTML, in text and tables.

Text from the transcript goes into fenced code blocks (the fence is longer than any backtick run inside),
or, in tables and sentences, with Markdown punctuation and HTML escaped, so a viewer that renders raw HTML
in Markdown is never handed markup from the transcript.
"""
from __future__ import annotations

import re
from ..model.messages import block_type, content_text
from .html import basename
from . import history, tables
from .model import group_rows
from ..model.describe import (
    block_changes, block_kinds, clip, finding_text, gist, num, role_of, to_json, tool_input_gist, usage_text, when,
)
from ..files.jsonio import dict_at

_MD_SPECIAL = re.compile(r"([\\`*_\[\]|<>~])")
_TICKS = re.compile(r"`{3,}")


def md(text) -> str:
    """Inline text from anywhere: one line, Markdown punctuation backslash-escaped, ``&`` as an entity."""
    text = " ".join(str(text).split()).replace("&", "&amp;")
    return _MD_SPECIAL.sub(r"\\\1", text)


def fence(text: str, info: str = "") -> str:
    """A fenced code block that the text cannot close."""
    text = str(text)
    longest = max((len(m) for m in _TICKS.findall(text)), default=0)
    f = "`" * max(3, longest + 1)
    return f"{f}{info}\n{text}\n{f}\n"


def table(head: list[str], rows: list[list]) -> str:
    def cell(c):
        return md(num(c) if isinstance(c, (int, float)) and not isinstance(c, bool) else c)
    out = ["| " + " | ".join(md(h) for h in head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    out += ["| " + " | ".join(cell(c) for c in r) + " |" for r in rows]
    return "\n".join(out) + "\n\n"


def bar(value: float, top: float, width: int = 24) -> str:
    if not top or top <= 0:
        return ""
    k = int(round(width * min(value, top) / top))
    return "\u2588" * k + "\u2591" * (width - k)


def render_markdown(rep, out) -> None:
    w = out.write
    tr = rep.trace
    w(f"# {md(rep.source.title)}\n\n")
    w(f"{md(rep.source.path)} \u00b7 {md(rep.source.info.get('format', ''))} \u00b7 strategy **{md(rep.strategy.name)}** "
      f"({md(rep.strategy_reason)}) \u00b7 {md(rep.source.scope)}\n\n")
    for note in rep.notes:
        w(f"> **Note:** {md(note)}\n\n")
    _file(rep, w)
    _run(rep, w)
    _chart(rep, w)
    _layers(rep, w)
    w(f"## {md(rep.boundary.title)}\n\n")
    if rep.boundary_layer:
        w(f"From the {md(rep.boundary_layer)} layer.\n\n")
    for kind, text in rep.boundary.rows:
        w(f"- {'**' if kind == 'result' else ''}{md(text)}{'**' if kind == 'result' else ''}\n")
    w("\n## API findings\n\n")
    w(table(*tables.finding_counts(rep)[:2]))
    for title, fs in (("In the input", tr.input_findings), ("After the last layer", tr.final_findings)):
        w(f"{title}: {len(fs) or 'none'}\n\n")
        for f in fs[:500]:
            w(f"- {md(finding_text(f))}\n")
        if len(fs) > 500:
            w(f"- \u2026 and {len(fs) - 500:,} more\n")
        if fs:
            w("\n")
    if rep.replay:
        _replay(rep, w)
    history.markdown(rep, w, md, table)
    _summaries(rep, w)
    w(f"## The messages the pipeline ran over ({len(rep.messages):,})\n\n")
    for i, m in enumerate(rep.messages):
        w(message_md(rep, m, f"#{i}"))
    w(f"---\nMade by Compactscope {md(rep.version)} on {when(rep.generated)} in {rep.seconds:.2f} s.\n")


def _file(rep, w) -> None:
    w("## The file\n\n")
    w(table(*tables.file_facts(rep)[:2]))
    for title, t in (("Conversations", tables.conversations(rep)), ("Real compactions", tables.real_compactions(rep)),
                     ("Usage (as the API reported it)", tables.usage(rep))):
        if t.rows:
            w(f"### {title}\n\n" + table(t.head, t.rows))
    for p in rep.source.info.get("problems") or []:
        w(f"- problem: {md(p)}\n")
    if rep.source.info.get("problems"):
        w("\n")


def _run(rep, w) -> None:
    w("## The run\n\n")
    w(table(*tables.run_facts(rep)[:2]))
    if rep.inferred_lines:
        w("Read from the session (the CLI's --set wins, --no-infer turns it off):\n\n"
          + "".join(f"- {md(line)}\n" for line in rep.inferred_lines) + "\n")
    t = tables.params(rep)
    if t.rows:
        w(table(t.head, t.rows))


def _chart(rep, w) -> None:
    labels, _counts, sizes, tokens = tables.stage_series(rep)
    thr, unit = rep.threshold, rep.threshold_unit
    key = tokens if unit == "tokens" else sizes
    top = max(key + ([thr] if thr else []) + [1])
    w("## Size and tokens per stage\n\n")
    if thr:
        w(f"Threshold: {num(thr)} {'tokens' if unit == 'tokens' else 'chars'} (the bar's full width is "
          f"{num(top)}).\n\n")
    t = tables.stages(rep)
    w(table(t.head + [unit], [r + [bar(key[k], top)] for k, r in enumerate(t.rows)]))


def _layers(rep, w) -> None:
    w("## Layer by layer\n\n")
    for st in rep.stages:
        s = st.step
        state = "failed" if s.error else ("changed" if s.changed else "no change")
        if s.triggered is not None:
            state += ", triggered" if s.triggered else ", not triggered"
        w(f"### {st.number}. {md(st.label)} ({md(s.layer)}): {state}\n\n")
        if s.description:
            w(f"_{md(s.description)}_\n\n")
        w(f"{md(s.explain())}\n\n")
        w(f"messages {len(s.input):,} \u2192 {len(s.messages):,} \u00b7 size {s.size_before:,} \u2192 "
          f"{s.size_after:,} chars \u00b7 tokens {s.tokens_before:,} \u2192 {s.tokens_after:,}\n\n")
        if s.error:
            w(f"**error:** {md(s.error)}\n\n")
        if s.edits:
            w("Edits:\n\n" + "".join(f"- {md(e.text)}\n" for e in s.edits) + "\n")
        if s.summary and not s.error:
            w(f"Summary by {md(s.summary.get('summarizer', '?'))}, full text under "
              "\u201cCompaction summaries\u201d.\n\n")
        if not s.changed:
            continue
        w("Before and after:\n\n")
        for kind, run in group_rows(st.rows):
            r = run[0]
            if kind == "kept":
                a, b = run[0], run[-1]
                span = f"#{a.left}..#{b.left}" if len(run) > 1 else f"#{a.left}"
                now = "" if (a.left == a.right and b.left == b.right) else f" (now #{a.right}..#{b.right})"
                w(f"- kept {span}{now}: {len(run):,} message(s) unchanged\n")
            elif kind == "removed":
                span = f"#{run[0].left}..#{run[-1].left}" if len(run) > 1 else f"#{run[0].left}"
                why = "; ".join(dict.fromkeys(s.edits[e].text for x in run for e in x.edits))
                w(f"- **removed** {span}: {len(run):,} message(s)" + (f": {md(clip(why, 300))}" if why else "") + "\n")
                for x in run:
                    m = s.input[x.left]
                    w(f"  - #{x.left} {md(role_of(m))} \u00b7 {md(block_kinds(m))}: {md(gist(m))}\n")
            elif kind == "changed":
                why = "; ".join(s.edits[e].text for e in r.edits)
                w(f"- **changed** #{r.left} \u2192 #{r.right}: {md(clip(block_changes(r) or why, 400))}\n")
            elif kind == "inserted":
                why = "; ".join(s.edits[e].text for e in r.edits)
                m = s.messages[r.right]
                w(f"- **inserted** #{r.right}" + (f": {md(clip(why, 300))}" if why else "") + "\n\n")
                w(message_md(rep, m, f"#{r.right} (inserted by {s.layer})", level=4))
            elif kind == "duplicated":
                w(f"- **duplicated** #{r.left} appears again as #{r.right}\n")
        w("\n")


def _summaries(rep, w) -> None:
    summ = list(rep.summaries) + (list(rep.replay.summaries) if rep.replay else [])
    w(f"## Compaction summaries, in full ({len(summ)})\n\n")
    if not summ:
        w("No compaction summary: the file records no real compaction and no layer made a summary.\n\n")
    for s in summ:
        w(summary_markdown(s) + "\n")


def _replay(rep, w) -> None:
    rp = rep.replay
    main = rp.runs[0]
    w("## Replay: the conversation's whole life\n\n")
    w(f"The pipeline before every model call ({len(main.calls):,} calls), as if the agent had gone on with each "
      f"compacted context; {rp.seconds:.2f} s.\n\n")
    if main.calibration:
        c = main.calibration
        w(f"Calibrated with the recorded usage: fixed overhead {c.get('fixed', 0):,} tokens, history before the "
          f"file {c.get('hidden', 0):,} tokens.\n\n")
    for line in tables.boundary_lines(rp):
        w(f"- {md(line)}\n")
    if rp.boundaries:
        w("\n")
    w("### Strategies compared\n\n")
    w(table(*tables.comparison(rp)[:2]))
    for label, text in tables.run_lines(rp):
        w(f"- **{md(label)}**: {md(text)}\n")
    w("\n")
    thr = main.threshold
    w(f"### Every call of {md(main.label)}\n\n")
    if thr:
        w(f"Threshold {num(thr)} {main.threshold_unit}.\n\n")
    w(table(*tables.calls(main, 300)[:2]))

def message_md(rep, m, label: str, level: int = 3) -> str:
    return message_markdown(m, rep.meta_of(m), label, level)


def message_markdown(m, meta=None, label: str = "", level: int = 3) -> str:
    """One message as Markdown: a heading line with its facts (role, time, model, usage, where in the
    file; ``meta`` is its ``MessageMeta``), then each block, texts fenced."""
    h = "#" * level
    if not isinstance(m, dict):
        return f"{h} {md(label)} (not a message)\n\n" + fence(to_json(m), "json") + "\n"
    bits = ([md(label)] if label else []) + [f"**{md(role_of(m))}**"]
    if meta is not None:
        if meta.timestamp is not None:
            bits.append(when(meta.timestamp))
        if meta.model and m.get("role") == "assistant":
            bits.append(md(meta.model))
        if meta.usage is not None:
            bits.append(md(usage_text(meta.usage)))
        if meta.provenance is not None and meta.provenance.line:
            bits.append(md(f"{basename(meta.provenance.path)}:{meta.provenance.line}"))
    parts = [f"{h} " + " \u00b7 ".join(bits) + "\n\n"]
    if m.get("role") == "tool":
        parts.append(f"tool result for the call {md(m.get('tool_call_id'))}\n\n")
    c = m.get("content")
    if isinstance(c, str):
        if c:
            parts.append(fence(c, "text"))
    elif isinstance(c, list):
        for b in c:
            parts.append(_block_md(b))
    elif c is not None:
        parts.append(fence(to_json(c), "json"))
    for call in m.get("tool_calls") or []:
        fn = dict_at(call, "function") if isinstance(call, dict) else {}
        args = fn.get("arguments")
        parts.append(f"tool call **{md(fn.get('name'))}** ({md(call.get('id') if isinstance(call, dict) else '')})\n\n"
                     + fence(args if isinstance(args, str) else to_json(args), "json"))
    return "".join(parts) + "\n"


def _block_md(b) -> str:
    t = block_type(b)
    if t == "text":
        return fence(b.get("text", ""), "text")
    if isinstance(b, str):
        return fence(b, "text")
    if t == "tool_use":
        return (f"tool_use **{md(b.get('name'))}** {md(tool_input_gist(b.get('input')))} ({md(b.get('id'))})\n\n"
                + fence(to_json(b.get("input")), "json"))
    if t == "tool_result":
        err = " **error**" if b.get("is_error") else ""
        inner = b.get("content")
        body = "".join(_block_md(x) for x in inner) if isinstance(inner, list) else fence(content_text(inner), "text")
        return f"tool_result for the call {md(b.get('tool_use_id'))}{err}\n\n" + body
    if t == "thinking":
        return "thinking:\n\n" + fence(b.get("thinking", ""), "text")
    if t == "redacted_thinking":
        return f"redacted thinking ({len(str(b.get('data', ''))):,} chars, encrypted)\n\n"
    if t in ("image", "document"):
        src = dict_at(b, "source")
        if src.get("type") == "text" and isinstance(src.get("data"), str):
            return f"{t}:\n\n" + fence(src["data"], "text")
        where = f" at {md(src.get('url'))}" if src.get("type") == "url" else ""
        return (f"{t}: {md(src.get('media_type', ''))}{where} ({len(str(src.get('data') or '')):,} chars of "
                f"{md(src.get('type', 'data'))}, not embedded in Markdown)\n\n")
    return f"{md(t or type(b).__name__)}:\n\n" + fence(to_json(b), "json")


def edits_markdown(step, label: str = "") -> str:
    """A layer's run as Markdown: what it did, the sizes, and its edits in words (``copy as Markdown``)."""
    state = "failed" if step.error else ("changed" if step.changed else "no change")
    out = [f"### {md(label or step.layer)} ({md(step.layer)}): {state}\n\n", f"{md(step.explain())}\n\n",
           f"messages {len(step.input):,} \u2192 {len(step.messages):,} \u00b7 size {step.size_before:,} \u2192 "
           f"{step.size_after:,} chars \u00b7 tokens {step.tokens_before:,} \u2192 {step.tokens_after:,}\n\n"]
    if step.error:
        out.append(f"**error:** {md(step.error)}\n\n")
    out += [f"- {md(e.text)}\n" for e in step.edits]
    return "".join(out) + ("\n" if step.edits else "")


def summary_markdown(summary) -> str:
    """A compaction summary (a ``SummaryText``) as Markdown: its title, facts, and the full text fenced."""
    facts = {k: v for k, v in summary.facts.items() if v not in (None, "") and k != "message"}
    line = " \u00b7 ".join(f"{k} {num(v) if isinstance(v, (int, float)) else v}" for k, v in facts.items())
    body = fence(summary.text, "text") if summary.text else "The file records this compaction but not its text.\n"
    return f"### {md(summary.title)}\n\n" + (f"{md(line)}\n\n" if line else "") + body
