"""The report as one self-contained HTML file.

Everything is inline: the style sheet, the small search script, the charts (SVG) and images (data: URIs
from the transcript, never fetched). The page's Content-Security-Policy allows exactly that style sheet and
that script (by hash), ``data:`` images and nothing else, so even text that slipped through could not
run a script or reach the network. Every text from the transcript is escaped.

Written as a stream (``out.write`` per piece); long contents collapse into ``<details>``; in-page search
(``/`` to focus, Enter / Shift+Enter to step, ``#q=word`` in the address) opens what it finds.
"""
from __future__ import annotations

import base64
import hashlib
import re
from functools import lru_cache
from html import escape as esc
from pathlib import Path
from typing import Any

from ..pipeline.align import CHANGED, DUPLICATED, INSERTED, KEPT, REMOVED
from ..model.messages import ToolPairIndex, block_type, blocks, content_text
from . import history, svg, tables
from .model import group_rows
from ..model.describe import (
    block_changes, block_kinds, clip, finding_text, gist, num, role_of, to_json, tool_input_gist, usage_parts, when,
)
from ..files.jsonio import dict_at

LONG_CHARS = 1500           # texts longer than this (or with more lines) collapse
LONG_LINES = 24
EDITS_SHOWN = 12            # edits listed before the rest collapse
ROWS_OPEN = 60              # a layer's before/after starts open when it has at most this many rows
SAFE_MEDIA = re.compile(r"^image/(png|jpeg|gif|webp)$")
BASE64 = re.compile(r"^[A-Za-z0-9+/=\s]*$")


@lru_cache(maxsize=1)
def static() -> tuple[str, str]:
    here = Path(__file__).resolve().parent
    return (here / "report.css").read_text(encoding="utf-8"), (here / "report.js").read_text(encoding="utf-8")


@lru_cache(maxsize=64)
def basename(path: str) -> str:
    return Path(path).name


def _sha(text: str) -> str:
    return base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii")


def content_security_policy() -> str:
    css, js = static()
    return (f"default-src 'none'; img-src data:; style-src 'sha256-{_sha(css)}'; script-src 'sha256-{_sha(js)}'; "
            "base-uri 'none'; form-action 'none'; frame-src 'none'; connect-src 'none'")


def text_html(text: str, label: str = "", open_: bool = False) -> str:
    """A text in a <pre>; a long one collapses behind its first line and its length."""
    text = str(text)
    n = len(text)
    lines = text.count("\n") + 1
    if n <= LONG_CHARS and lines <= LONG_LINES:
        return f"<pre>{esc(text)}</pre>"
    sep = " \u00b7 " if label else ""
    return (f'<details{" open" if open_ else ""}><summary><span class="lbl">{esc(label)}{sep}'
            f'{n:,} chars, {lines:,} lines</span> <span class="pv">{esc(clip(text, 150))}</span></summary>'
            f"<pre>{esc(text)}</pre></details>")


class _Writer:
    """Renders messages with anchors and tool-pair links for one report."""

    def __init__(self, rep, out):
        self.rep = rep
        self.w = out.write
        self.msgs = rep.messages
        self.pairs = ToolPairIndex(rep.messages)
        self.anchors = rep.anchors
        self.real_summaries = {id(rep.source.conversation.messages[e.summary_index]) for e in rep.source.conversation.events
                               if e.summary_index is not None and 0 <= e.summary_index < len(rep.source.conversation.messages)}

    # ------------------------------------------------------------ messages
    def pos_anchor(self, mi: int, bi: int) -> str:
        m = self.msgs[mi] if 0 <= mi < len(self.msgs) else None
        if not isinstance(m, dict) or m.get("role") == "tool" or bi < 0:
            return f"m{mi}"
        bl = blocks(m)
        if bi < len(bl) and block_type(bl[bi]) in ("tool_use", "tool_result"):
            return f"m{mi}b{bi}"
        return f"m{mi}c{bi}"

    def link(self, message: Any, text: str) -> str:
        a = self.anchors.get(id(message))
        return f'<a href="#{a}">{esc(text)}</a>' if a else esc(text)

    def message(self, m: Any, anchor: str | None, label: str, index: int | None = None) -> str:
        """One message: header (index, role, time, model, usage, where in the file), then its blocks.
        ``index`` is its position in the report's input (for tool-pair links), else None."""
        if not isinstance(m, dict):
            ida = f' id="{anchor}"' if anchor else ""
            return (f'<article class="msg"{ida}><div class="mh"><span class="ix">{esc(label)}</span> not a message'
                    f'</div>{text_html(to_json(m))}</article>')
        role = str(m.get("role", "?"))
        meta = self.rep.meta_of(m)
        ix = f'<a class="ix" href="#{anchor}">{esc(label)}</a>' if anchor else f'<span class="ix">{esc(label)}</span>'
        head = [ix,
                f'<span class="role">{esc(role)}</span>']
        if id(m) in self.real_summaries:
            head.append('<span class="badge on">real compaction summary</span>')
        if meta is not None:
            if meta.timestamp is not None:
                head.append(f'<time>{esc(when(meta.timestamp))}</time>')
            if meta.model and role == "assistant":
                head.append(f'<span>{esc(meta.model)}</span>')
            if meta.usage is not None:
                u = meta.usage
                head.append('<span class="usage" title="usage of this model call as the API reported it">'
                            + " \u00b7 ".join(f"{k} {v:,}" for k, v in usage_parts(u))
                            + f" (context {u.context_tokens:,})</span>")
            if meta.provenance is not None and meta.provenance.line:
                p = meta.provenance
                name = basename(p.path)
                line = f"{p.line}" + (f"-{p.end_line}" if p.end_line and p.end_line != p.line else "")
                head.append(f'<span class="src" title="{esc(str(p))}">{esc(name)}:{line}</span>')
        cls = "msg r-" + re.sub(r"[^a-z]", "", role.lower())[:20]
        ida = f' id="{anchor}"' if anchor else ""
        parts = [f'<article class="{cls}"{ida}><div class="mh">{"".join(head)}</div>']
        content = m.get("content")
        if isinstance(content, str) or content is None:
            if content:
                parts.append(text_html(content, "text"))
        elif isinstance(content, list):
            for bi, b in enumerate(content):
                parts.append(self.block(b, index, bi))
        else:
            parts.append(text_html(to_json(content), "content"))
        if role == "tool":
            tid = m.get("tool_call_id")
            where = self._partner(index, -1)
            parts.insert(1, f'<div class="blk"><span class="lbl">tool result</span> for '
                            f'{where or esc(str(tid))}</div>')
        for ci, call in enumerate(m.get("tool_calls") or []):
            parts.append(self.openai_call(call, index, ci))
        parts.append("</article>")
        return "".join(parts)

    def _partner(self, mi: int | None, bi: int) -> str:
        if mi is None:
            return ""
        p = self.pairs.partner(mi, bi)
        if p is None:
            return ""
        a = self.pos_anchor(*p)
        return f'<a href="#{a}">#{p[0]}</a>'

    def block(self, b: Any, mi: int | None, bi: int) -> str:
        t = block_type(b)
        bid = f' id="m{mi}b{bi}"' if mi is not None and t in ("tool_use", "tool_result") else ""
        if t == "text":
            return f'<div class="blk">{text_html(b.get("text", ""), "text")}</div>'
        if isinstance(b, str):
            return f'<div class="blk">{text_html(b, "text")}</div>'
        if t == "tool_use":
            inp = b.get("input")
            js = to_json(inp)
            res = self._partner(mi, bi)
            head = (f'<span class="lbl">tool_use</span> <b>{esc(str(b.get("name")))}</b> '
                    f'<code>{esc(clip(tool_input_gist(inp), 90))}</code>'
                    + (f' \u2192 result in {res}' if res else "")
                    + f' <span class="pv">{esc(str(b.get("id", "")))}</span>')
            if len(js) <= 300 and js.count("\n") <= 8:
                return f'<div class="blk"{bid}>{head}<pre>{esc(js)}</pre></div>'
            return (f'<div class="blk"{bid}>{head}<details><summary><span class="lbl">input \u00b7 {len(js):,} chars'
                    f'</span></summary><pre>{esc(js)}</pre></details></div>')
        if t == "tool_result":
            call = self._partner(mi, bi)
            err = ' <span class="err">error</span>' if b.get("is_error") else ""
            head = ('<span class="lbl">tool_result</span>' + (f" for the call in {call}" if call else
                    f' <span class="pv">{esc(str(b.get("tool_use_id", "")))}</span>') + err)
            c = b.get("content")
            if isinstance(c, list):
                inner = "".join(self.block(x, None, k) for k, x in enumerate(c))
            else:
                inner = text_html(content_text(c), "result")
            return f'<div class="blk"{bid}>{head}{inner}</div>'
        if t == "thinking":
            th = str(b.get("thinking", ""))
            return (f'<div class="blk"><details><summary><span class="lbl">thinking \u00b7 {len(th):,} chars</span>'
                    f' <span class="pv">{esc(clip(th, 120))}</span></summary><pre>{esc(th)}</pre></details></div>')
        if t == "redacted_thinking":
            n = len(str(b.get("data", "")))
            return f'<div class="blk"><span class="lbl">redacted thinking</span> ({n:,} chars, encrypted)</div>'
        if t == "image":
            return f'<div class="blk"><span class="lbl">image</span> {self.image(b.get("source"))}</div>'
        if t == "image_url":                      # OpenAI content part
            iu = b.get("image_url")
            url = iu.get("url") if isinstance(iu, dict) else iu
            return f'<div class="blk"><span class="lbl">image</span> {self.image_url(url)}</div>'
        if t == "document":
            src = dict_at(b, "source")
            data = src.get("data")
            if src.get("type") == "text" and isinstance(data, str):
                return f'<div class="blk"><span class="lbl">document</span>{text_html(data, "document")}</div>'
            return (f'<div class="blk"><span class="lbl">document</span> {esc(str(src.get("media_type", "")))} '
                    f'({len(str(data or "")):,} chars of {esc(str(src.get("type", "data")))}; not shown)</div>')
        js = to_json(b)
        return (f'<div class="blk"><span class="lbl">{esc(str(t or type(b).__name__))}</span>'
                f'{text_html(js, "block")}</div>')

    def image(self, src: Any) -> str:
        if not isinstance(src, dict):
            return "(no source)"
        if src.get("type") == "base64":
            media, data = str(src.get("media_type", "")), src.get("data")
            if SAFE_MEDIA.match(media) and isinstance(data, str) and BASE64.match(data):
                return (f'{esc(media)}, {len(data) * 3 // 4:,} bytes<br><img class="inline" alt="image from the '
                        f'transcript" src="data:{media};base64,{"".join(data.split())}">')
            return f"{esc(media)} ({len(str(data or '')):,} chars; not an image this report can show)"
        if src.get("type") == "url":
            return f"at {esc(str(src.get('url')))} (not fetched: the report never touches the network)"
        return esc(clip(to_json(src), 200))

    def image_url(self, url: Any) -> str:
        url = str(url or "")
        m = re.match(r"^data:(image/(?:png|jpeg|gif|webp));base64,([A-Za-z0-9+/=]*)$", url)
        if m:
            return (f'<br><img class="inline" alt="image from the transcript" '
                    f'src="data:{m.group(1)};base64,{m.group(2)}">')
        return f"at {esc(clip(url, 200))} (not fetched: the report never touches the network)"

    def openai_call(self, call: Any, mi: int | None, ci: int) -> str:
        if not isinstance(call, dict):
            return f'<div class="blk">{text_html(to_json(call), "tool call")}</div>'
        fn = dict_at(call, "function")
        args = fn.get("arguments")
        text = args if isinstance(args, str) else to_json(args)
        res = self._partner(mi, ci)
        cid = f' id="m{mi}c{ci}"' if mi is not None else ""
        return (f'<div class="blk"{cid}><span class="lbl">tool call</span> <b>{esc(str(fn.get("name")))}</b>'
                + (f" \u2192 result in {res}" if res else "") + f' <span class="pv">{esc(str(call.get("id", "")))}'
                f'</span>{text_html(text, "arguments")}</div>')


def table(head: list[str], rows: list[list], numeric=frozenset(), cls: str = "") -> str:
    """An HTML table (in a horizontally scrolling box); cells are escaped unless they are ``Raw`` markup."""
    h = "".join(f'<th{" class=n" if i in numeric else ""}>{esc(x)}</th>' for i, x in enumerate(head))
    def cell(c) -> str:
        if isinstance(c, Raw):
            return c
        return esc(num(c) if isinstance(c, (int, float)) and not isinstance(c, bool) else str(c))
    body = ["<tr>" + "".join(f'<td{" class=n" if i in numeric else ""}>{cell(c)}</td>' for i, c in enumerate(r))
            + "</tr>" for r in rows]
    top = f"<tr>{h}</tr>" if any(head) else ""
    return f'<div class="tw"><table{f" class={cls}" if cls else ""}>{top}{"".join(body)}</table></div>'


class Raw(str):
    """Markup already escaped (a link) for ``table``."""


def page_start(title: str, brand: str = "Compactscope") -> str:
    """A self-contained page up to the start of its ``<main>``: the CSP, the style sheet, the search bar."""
    css, _js = static()
    from compactscope import __version__
    return ('<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta http-equiv="Content-Security-Policy" content="{content_security_policy()}">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            '<meta name="referrer" content="no-referrer">'
            f'<meta name="generator" content="Compactscope {esc(__version__)}">'
            f"<title>{esc(title)}</title><style>{css}</style></head><body>"
            f'<div id="bar"><span class="brand">{esc(brand)}</span><input id="q" type="search" placeholder="Search '
            'the report (/)" aria-label="Search the report" autocomplete="off"><span id="qn" aria-live="polite">'
            '</span><button id="expand" type="button">Expand all</button><button id="collapse" type="button">'
            'Collapse all</button></div><main id="main">')


def page_end(footer: str) -> str:
    """The footer (text, escaped here), the end of ``<main>`` and the search script."""
    return f"<footer>{esc(footer)}</footer></main><script>{static()[1]}</script></body></html>\n"


def render_html(rep, out) -> None:
    W = _Writer(rep, out)
    w = out.write
    w(page_start(rep.source.title))
    w(f"<h1>{esc(rep.source.title)}</h1>")
    w(f'<p class="sub">{esc(rep.source.path)} \u00b7 {esc(rep.source.info.get("format", ""))} \u00b7 strategy '
      f'<b>{esc(rep.strategy.name)}</b> ({esc(rep.strategy_reason)}) \u00b7 {esc(rep.source.scope)}</p>')
    for note in rep.notes:
        w(f'<p class="note" role="note"><b>Note:</b> {esc(note)}</p>')
    toc = [("file", "The file"), ("run", "The run"), ("chart", "Size per stage"), ("layers", "Layer by layer"),
           ("boundary", "Boundary"), ("findings", "API findings")]
    if rep.replay:
        toc.append(("replay", "Replay"))
    if rep.history is not None:
        toc += [("events", "Events"), ("retention", "Kept and lost")]
    toc += [("summaries", "Summaries"), ("messages", "Messages")]
    w('<nav class="toc">' + "".join(f'<a href="#{a}">{esc(t)}</a>' for a, t in toc) + "</nav>")
    _file(rep, w)
    _run(rep, w)
    _chart(rep, w)
    _layers(rep, W, w)
    _boundary(rep, w)
    _findings(rep, W, w)
    if rep.replay:
        _replay(rep, w)
    history.html(rep, w, esc, table)
    _summaries(rep, W, w)
    w(f'<h2 id="messages">The messages the pipeline ran over ({len(rep.messages):,})</h2>')
    w('<p class="sub">Every message of the run\'s input, in full (long contents collapse). Tool calls link to '
      'their results and back; times are UTC; usage is per model call, as the API reported it.</p>')
    for i, m in enumerate(rep.messages):
        w(W.message(m, f"m{i}", f"#{i}", i))
    w(page_end(f"Made by Compactscope {rep.version} on {when(rep.generated)} in {rep.seconds:.2f} s. "
               "Self-contained: its style, script, charts and images are inside this file, and its "
               "Content-Security-Policy forbids any network request."))


def _file(rep, w) -> None:
    w('<h2 id="file">The file</h2>')
    w(table(*tables.file_facts(rep), cls="kv"))
    for title, t in (("Conversations", tables.conversations(rep)), ("Real compactions", tables.real_compactions(rep)),
                     ("Usage (as the API reported it)", tables.usage(rep))):
        if t.rows:
            w(f"<h3>{esc(title)}</h3>" + table(*t))
    probs = rep.source.info.get("problems") or []
    if probs:
        inner = "".join(f"<li>{esc(p)}</li>" for p in probs)
        w(f"<details><summary>{len(probs)} problem(s) while reading the file</summary><ul>{inner}</ul></details>")


def _run(rep, w) -> None:
    w('<h2 id="run">The run</h2>')
    w(table(*tables.run_facts(rep), cls="kv"))
    if rep.inferred_lines:
        w("<p>Read from the session (the CLI's --set wins, --no-infer turns it off):</p><ul>"
          + "".join(f"<li>{esc(line)}</li>" for line in rep.inferred_lines) + "</ul>")
    t = tables.params(rep)
    if t.rows:
        changed = [r for r in t.rows if r[3]]
        w(f"<p>{len(changed)} parameter(s) differ from the defaults"
          + (": " + ", ".join(f"<b>{esc(r[0])}</b> = {esc(num(r[1]))}" for r in changed) if changed else "") + ".</p>")
        w("<details><summary>All parameters</summary>" + table(*t) + "</details>")


def _unit_name(unit: str) -> str:
    return "tokens (estimated)" if unit == "tokens" else "size (chars, len(str(messages)))"


def _chart(rep, w) -> None:
    labels, _counts, sizes, tokens = tables.stage_series(rep)
    thr, unit = rep.threshold, rep.threshold_unit
    w('<h2 id="chart">Size and tokens per stage</h2>')
    w('<p class="sub">After every layer, against the strategy\'s threshold (red). Orange: a layer made it grow; '
      'green: shrink.</p>')
    first, second = (("tokens", tokens), ("size", sizes)) if unit == "tokens" else (("size", sizes), ("tokens", tokens))
    w(svg.stage_chart(labels, first[1], _unit_name(first[0]), thr,
                      f"threshold {num(thr)} {'tokens' if unit == 'tokens' else 'chars'}" if thr else "",
                      "Estimated tokens" if first[0] == "tokens" else "Size in chars"))
    w(svg.stage_chart(labels, second[1], _unit_name(second[0]), None, "",
                      "Estimated tokens" if second[0] == "tokens" else "Size in chars"))
    t = tables.stages(rep)
    rows = [[Raw(f'<a href="#L{k}">{esc(r[0])}</a>') if k else r[0]] + r[1:] for k, r in enumerate(t.rows)]
    w(table(t.head, rows, t.numeric))


def _rows_html(rep, W, stage) -> str:
    """A layer's before/after: kept runs folded, removed runs listed, changed and inserted messages shown."""
    s = stage.step
    k = stage.number
    out = []
    for kind, run in group_rows(stage.rows):
        r = run[0]
        if kind == KEPT:
            a, b = run[0], run[-1]
            same = "" if (a.left == a.right and b.left == b.right) else \
                f" (now #{a.right}..#{b.right})" if len(run) > 1 else f" (now #{a.right})"
            span = f"#{a.left}..#{b.left}" if len(run) > 1 else f"#{a.left}"
            out.append(f'<div class="row kept"><span class="k">kept</span> {W.link(s.input[a.left], span)}'
                       f"{esc(same)}: {len(run):,} message(s) unchanged</div>")
        elif kind == REMOVED:
            chars = sum(rep.meter.message_size(s.input[x.left]) for x in run)
            span = f"#{run[0].left}..#{run[-1].left}" if len(run) > 1 else f"#{run[0].left}"
            why = "; ".join(dict.fromkeys(s.edits[e].text for x in run for e in x.edits))
            items = "".join(f"<li>{W.link(s.input[x.left], f'#{x.left}')} {esc(role_of(s.input[x.left]))}"
                            f" \u00b7 {esc(block_kinds(s.input[x.left]))}: {esc(gist(s.input[x.left]))}</li>"
                            for x in run)
            out.append(f'<div class="row removed"><span class="k">removed</span> {esc(span)}: {len(run):,} '
                       f"message(s), {chars:,} chars" + (f" \u2014 {esc(clip(why, 300))}" if why else "")
                       + f"<details><summary>which</summary><ul>{items}</ul></details></div>")
        elif kind == CHANGED:
            new = s.messages[r.right]
            changes = block_changes(r)
            why = "; ".join(s.edits[e].text for e in r.edits)
            anchor = f"s{k}m{r.right}" if W.anchors.get(id(new)) == f"s{k}m{r.right}" else None
            out.append(f'<div class="row changed"><span class="k">changed</span> '
                       f'{W.link(s.input[r.left], f"#{r.left}")} \u2192 #{r.right}: '
                       f'{esc(clip(changes or why, 400))}'
                       + (f"<br>{esc(clip(why, 400))}" if changes and why else "")
                       + f"<details><summary>after: message #{r.right} ({esc(block_kinds(new))})</summary>"
                       + W.message(new, anchor, f"#{r.right}") + "</details></div>")
        elif kind == INSERTED:
            new = s.messages[r.right]
            why = "; ".join(s.edits[e].text for e in r.edits)
            anchor = f"s{k}m{r.right}" if W.anchors.get(id(new)) == f"s{k}m{r.right}" else None
            out.append(f'<div class="row inserted"><span class="k">inserted</span> #{r.right}'
                       + (f": {esc(clip(why, 400))}" if why else "")
                       + W.message(new, anchor, f"#{r.right}") + "</div>")
        elif kind == DUPLICATED:
            out.append(f'<div class="row duplicated"><span class="k">duplicated</span> '
                       f'{W.link(s.input[r.left], f"#{r.left}")} appears again as #{r.right}</div>')
    return "".join(out)


def _layers(rep, W, w) -> None:
    w('<h2 id="layers">Layer by layer</h2>')
    w(f'<p class="sub">Each layer of {esc(rep.strategy.name)} in order: what it did in words, the sizes before '
      'and after, its edits, and the messages before and after it (kept runs are folded).</p>')
    w('<div id="L0"></div>')
    for st in rep.stages:
        s = st.step
        badge = ('<span class="badge bad">failed</span>' if s.error else
                 '<span class="badge on">changed</span>' if s.changed else '<span class="badge">no change</span>')
        if s.triggered is not None:
            badge += f' <span class="badge">{"triggered" if s.triggered else "not triggered"}</span>'
        if rep.stage == st.number:
            badge += ' <span class="badge on">on screen</span>'
        w(f'<section class="stage{"" if s.changed else " same"}" id="L{st.number}"><h3>{st.number}. '
          f'{esc(st.label)} <span class="pv">{esc(s.layer)}</span> {badge}</h3>')
        if s.description:
            w(f'<p class="sub">{esc(s.description)}</p>')
        w(f"<p>{esc(s.explain())}</p>")
        w(f"<p>messages {len(s.input):,} \u2192 {len(s.messages):,} \u00b7 size {s.size_before:,} \u2192 "
          f"{s.size_after:,} chars \u00b7 tokens {s.tokens_before:,} \u2192 {s.tokens_after:,}"
          f" \u00b7 {s.seconds * 1000:.1f} ms</p>")
        if s.error:
            w(f'<p class="err">error: {esc(s.error)}</p>')
        if s.edits:
            items = [f"<li>{esc(e.text)}</li>" for e in s.edits]
            w(f'<ul class="edits">{"".join(items[:EDITS_SHOWN])}</ul>')
            if len(items) > EDITS_SHOWN:
                w(f'<details><summary>{len(items) - EDITS_SHOWN:,} more edit(s)</summary><ul class="edits">'
                  f'{"".join(items[EDITS_SHOWN:])}</ul></details>')
        if s.summary and not s.error:
            info = s.summary
            w(f'<p>Summary made by {esc(str(info.get("summarizer", "?")))}'
              + (" (cached)" if info.get("cached") else "")
              + f', {num(info.get("chars", len(str(info.get("text", "")))))} chars: full text under '
              f'<a href="#summaries">Summaries</a>.</p>')
        c = st.counts
        if s.changed:
            text = ", ".join(f"{v:,} {k}" for k, v in c.items() if v)
            w(f'<details{" open" if len(st.rows) <= ROWS_OPEN else ""}><summary>Before and after: '
              f"{esc(text)}</summary>{_rows_html(rep, W, st)}</details>")
        errs = [f for f in s.findings if f.severity == "error"]
        if errs:
            w(f'<p class="err">{len(errs)} API error(s) after this layer: see <a href="#findings">API findings</a>.'
              "</p>")
        w("</section>")


def _boundary(rep, w) -> None:
    b = rep.boundary
    w(f'<h2 id="boundary">{esc(b.title)}</h2>')
    if rep.boundary_layer:
        w(f'<p class="sub">From the {esc(rep.boundary_layer)} layer.</p>')
    w('<ul class="bound">' + "".join(f'<li class="{esc(k)}">{esc(t)}</li>' for k, t in b.rows) + "</ul>")


def _findings(rep, W, w) -> None:
    tr = rep.trace
    w('<h2 id="findings">API findings</h2>')
    w('<p class="sub">Would the Messages API accept the list? Errors mean it would reject the request.</p>')
    w(table(*tables.finding_counts(rep)))

    def lst(title, findings, msgs):
        if not findings:
            w(f"<p>{esc(title)}: none.</p>")
            return
        items = []
        for f in findings[:500]:
            m = msgs[f.message] if 0 <= f.message < len(msgs) else None
            loc = W.link(m, f"#{f.message}") if m is not None else f"#{f.message}"
            items.append(f'<li><span class="sev-{esc(f.severity)}">{esc(f.severity)}</span> {loc}: '
                         f"{esc(finding_text(f))}</li>")
        more = f"<li>\u2026 and {len(findings) - 500:,} more</li>" if len(findings) > 500 else ""
        w(f"<details{' open' if len(findings) <= 20 else ''}><summary>{esc(title)}: {len(findings):,}</summary>"
          f'<ul class="edits">{"".join(items)}{more}</ul></details>')
    lst("In the input", tr.input_findings, tr.input)
    lst("After the last layer", tr.final_findings, tr.output)


def _summaries(rep, W, w) -> None:
    summ = list(rep.summaries) + (list(rep.replay.summaries) if rep.replay else [])
    w(f'<h2 id="summaries">Compaction summaries, in full ({len(summ)})</h2>')
    if not summ:
        w("<p>No compaction summary: the file records no real compaction and no layer made a summary.</p>")
    for k, s in enumerate(summ):
        facts = {k2: v for k2, v in s.facts.items() if v not in (None, "") and k2 not in ("message",)}
        line = " \u00b7 ".join(f"{k2} {num(v) if isinstance(v, (int, float)) else v}" for k2, v in facts.items())
        where = f' \u00b7 <a href="#{s.anchor}">in place</a>' if s.anchor else ""
        body = text_html(s.text, "summary", open_=s.origin == "run") if s.text else \
            "<p>The file records this compaction but not its summary text.</p>"
        w(f'<div class="summ {"real" if s.origin == "real" else "sim"}" id="sum{k}"><h3>{esc(s.title)}</h3>'
          f'<p class="sub">{esc(line)}{where}</p>{body}</div>')


def _replay(rep, w) -> None:
    rp = rep.replay
    main = rp.runs[0]
    w('<h2 id="replay">Replay: the conversation\'s whole life</h2>')
    w(f'<p class="sub">The pipeline before every model call ({len(main.calls):,} calls), as if the agent had gone on '
      f"with each compacted context; {rp.seconds:.2f} s. Blue: the context before and after {esc(main.label)}'s "
      "pipeline (the sawtooth); grey: without compaction; orange: the real context and the real compactions the "
      "file recorded.</p>")
    w(svg.timeline_chart(rp.runs))
    if main.calibration:
        c = main.calibration
        w(f"<p>Calibrated with the recorded usage: fixed overhead {c.get('fixed', 0):,} tokens (system prompt, "
          f"tools), history before the file {c.get('hidden', 0):,} tokens.</p>")
    if rp.boundaries:
        w("<h3>Real compactions against the simulated ones</h3><ul>"
          + "".join(f"<li>{esc(line)}</li>" for line in tables.boundary_lines(rp)) + "</ul>")
    w("<h3>Strategies compared</h3>")
    w(table(*tables.comparison(rp)))
    for label, text in tables.run_lines(rp):
        w(f"<p><b>{esc(label)}</b>: {esc(text)}</p>")
    t = tables.calls(main)
    w(f"<details><summary>Every call of {esc(main.label)} ({len(t.rows):,})</summary>")
    w(table(*t))
    w("</details>")
