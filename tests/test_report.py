"""Reports (core/report, ``compactscope report``): the facts, the escaping, the Markdown, the CLI.

The browser side (what chromium shows, search, no network) is in test_report_browser.py."""
from __future__ import annotations

import json
import re
from html.parser import HTMLParser

import pytest

from compactscope.app.cli import main as cli_main
from compactscope.core.loaders import load
from compactscope.core.model.messages import message_text
from compactscope.core.pipeline.engine import Engine
from compactscope.core.report import build_report, format_for, render_html, render_markdown, write_report
from compactscope.core.report.html import content_security_policy
from compactscope.core.report.markdown import fence, md
from compactscope.core.model.contexts import WHOLE, call_context, locate_call, real_context, segments
from compactscope.core.report.model import group_rows

from helpers import a, u

CC_ONE = "entireio-cli/a6-e4c2a0fbd1-0-full.jsonl"       # Claude Code, one real compaction, 294 KB
CC_BIG = "entireio-cli/b0-2936744f3b-0-full.jsonl"       # Claude Code, two real compactions, 3.1 MB

HOSTILE = "<script>document.body.setAttribute('data-pwned','1')</script><img src=x onerror=\"alert(1)\">"


def _png_1px() -> str:
    import base64
    import struct
    import zlib

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0))
           + chunk(b"IDAT", zlib.compress(b"\x00\xff\x00\x00")) + chunk(b"IEND", b""))
    return base64.b64encode(png).decode()


PNG_1PX = _png_1px()


def hostile_conversation(server: str = "http://127.0.0.1:9/pixel.png") -> list:
    """Transcript text that would run script or fetch from ``server`` if it reached the page unescaped."""
    big = ("line of output\n" * 400) + HOSTILE
    return [
        u(f"Please look. {HOSTILE} </pre></details></article><script>bad()</script> [link]({server}) "
          f"![x]({server}) <a href=\"{server}\">a</a> | pipe | ```` fence"),
        {"role": "assistant", "content": [
            {"type": "text", "text": "```\nclosing fence\n```" + HOSTILE},
            {"type": "tool_use", "id": "t\"1'><script>x()</script>", "name": "bash\"><img src=x onerror=y>",
             "input": {"command": f"curl {server}", "html": HOSTILE}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t\"1'><script>x()</script>", "content": [
                {"type": "text", "text": big},
                {"type": "image", "source": {"type": "url", "url": server}},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG_1PX}},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png\" onerror=\"alert(1)",
                                             "data": "iVBORw0KGgo="}},
                {"type": "image", "source": {"type": "base64", "media_type": "image/svg+xml",
                                             "data": "PHN2Zz48c2NyaXB0PmFsZXJ0KDEpPC9zY3JpcHQ+PC9zdmc+"}},
            ]}]},
        a("done " + HOSTILE),
        u("thanks"),
    ]


def _report(path, strategy="s08", params=None, **kw):
    return build_report(load(str(path)), Engine(strategy, params or {}), **kw)


def _html(rep) -> str:
    import io
    buf = io.StringIO()
    render_html(rep, buf)
    return buf.getvalue()


def _md(rep) -> str:
    import io
    buf = io.StringIO()
    render_markdown(rep, buf)
    return buf.getvalue()


class Tags(HTMLParser):
    """Every start tag with its attributes, and the text of <script> elements."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict]] = []
        self.scripts: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        self._in_script = tag == "script"
        if tag == "script":
            self.scripts.append("")

    def handle_endtag(self, tag):
        if tag == "script":
            self._in_script = False

    def handle_data(self, data):
        if self._in_script:
            self.scripts[-1] += data


def parse(html: str) -> Tags:
    t = Tags()
    t.feed(html)
    t.close()
    return t


# ----------------------------------------------------------------- the facts
def test_every_layer_with_its_before_after_and_the_run_summary_in_full(examples):
    rep = _report(examples / "long_session.json")
    trace = rep.trace
    assert [s.step.layer for s in rep.stages] == [s.layer for s in trace.steps]
    summary_step = next(s for s in trace.steps if s.summary and not s.error)
    run = [s for s in rep.summaries if s.origin == "run"]
    assert len(run) == 1
    made = next(e for e in summary_step.edits if e.kind == "summary")
    assert run[0].text == message_text(summary_step.messages[made.out])
    assert summary_step.summary["text"] in run[0].text
    html = _html(rep)
    # every layer has a section with its label, its one-line account and every edit in words
    for st in rep.stages:
        assert f'id="L{st.number}"' in html
        for e in st.step.edits:
            assert re.sub(r"\s+", " ", e.text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
                          .replace('"', "&quot;").replace("'", "&#x27;")) in re.sub(r"\s+", " ", html)
    # the summary text appears in full (escaped) and every input message has its anchor
    from html import escape
    assert escape(run[0].text) in html
    for i in range(len(rep.messages)):
        assert f'id="m{i}"' in html


def test_real_summaries_in_full_with_their_facts(corpus):
    rep = _report(corpus / CC_ONE, "claude_code")
    conv = rep.source.conversation
    real = [s for s in rep.summaries if s.origin == "real"]
    assert len(real) == len(conv.events) == 1
    ev = conv.events[0]
    assert real[0].text == message_text(conv.messages[ev.summary_index])
    assert len(real[0].text) > 1000
    assert real[0].facts["pre_tokens"] == ev.pre_tokens and real[0].facts["trigger"] == ev.trigger
    # the report runs over the last segment by default: the compact summary opens it
    assert rep.source.segment == len(conv.segments) - 1 and rep.messages[0] is conv.messages[ev.summary_index]
    assert real[0].anchor == "m0"
    from html import escape
    html = _html(rep)
    assert escape(real[0].text) in html
    md_text = _md(rep)
    assert real[0].text in md_text
    # per-message time and per-call usage, where the file records them
    first = conv.messages.index(rep.messages[0])
    i, meta = next((i, m) for i, m in enumerate(conv.meta) if m.usage is not None and i > first)
    u0 = meta.usage
    assert f"cache read {u0.cache_read_input_tokens:,}" in html
    assert f"cache write {u0.cache_creation_input_tokens:,}" in html
    from compactscope.core.model.describe import when
    assert when(meta.timestamp) in html and when(meta.timestamp) in md_text


def test_replay_and_comparison_in_the_report(corpus):
    path = corpus / CC_ONE
    rep = build_report(load(str(path)), Engine("claude_code"), replay=True, compare=[("course", Engine("s08"))])
    rp = rep.replay
    assert [r.label for r in rp.runs] == ["claude_code", "course"]
    assert len(rp.totals) == 2 and rp.totals[1]["label"] == "course"
    assert rp.boundaries and rp.boundaries[0]["real_pre_tokens"] == rep.source.conversation.events[0].pre_tokens
    sims = [s for s in rp.summaries]
    assert sims, "the replays made summaries; their full text is in the report"
    assert all(s.text for s in sims)
    assert sum(r.totals()["summaries"] for r in rp.runs) == len(sims)
    html = _html(rep)
    assert 'id="replay"' in html and "<svg" in html and "Strategies compared" in html
    for s in sims:
        from html import escape
        assert escape(s.text) in html
    md_text = _md(rep)
    assert "### Strategies compared" in md_text and "| course |" in md_text


def test_selection_is_the_windows_conversation_segment_and_call(corpus):
    from compactscope.core.session.model import Session
    result = load(str(corpus / CC_BIG))
    conv = result.main
    assert len(conv.segments) == 3
    # default (None): the last segment, what the agent would send next, as run takes it; WHOLE: the history
    for seg, call in ((None, None), (WHOLE, None), (1, None), (-1, None), (WHOLE, 40), (None, 3), (2, 3)):
        rep = build_report(result, Engine("claude_code"), segment=seg, call=call)
        s = Session(strategy="claude_code")
        s.source.open(str(corpus / CC_BIG))
        assert s.source.segment == 2              # a compacted session opens on its last segment, as the report does
        s.source.set_segment(None if seg == WHOLE else 2 if seg is None else seg % 3)
        if call is not None and seg == WHOLE:
            continue                       # a prefix of the whole history: no real context, the window has none
        if call is not None:               # the window numbers calls over the whole history, as replay does
            s.source.set_call(segments(conv)[2 if seg is None else seg].first_call + call)
            assert locate_call(conv, s.source.call) == (2 if seg is None else seg, call)
        assert rep.messages == s.source.source_messages, (seg, call)
        assert len(rep.messages) < len(conv.messages) or (seg, call) == (WHOLE, None)
        assert bool(rep.notes) == (seg == WHOLE), "a whole history past a compaction says it was never sent"
    rep = build_report(result, Engine("claude_code"))
    assert rep.messages == conv.messages[conv.segments[2]:] == real_context(conv).messages
    assert "segment 2 of 3" in rep.source.scope and "what the agent would send next" in rep.source.scope and rep.source.segment == 2
    rep = build_report(result, Engine("claude_code"), segment=1)
    assert rep.messages == conv.messages[conv.segments[1]:conv.segments[2]]
    assert "segment 1 of 3" in rep.source.scope and rep.source.segment == 1
    rep = build_report(result, Engine("claude_code"), segment=WHOLE, call=40)
    assert rep.source.call == 40 and "before model call 40" in rep.source.scope
    assert rep.messages[-1] is conv.history()[conv.calls()[40] - 1]
    assert rep.trace.input is rep.messages
    # the CLI's --call numbers calls over the whole history (as run does) and picks the same context as run
    seg, k = locate_call(conv, 40)
    rep = build_report(result, Engine("claude_code"), segment=seg, call=k)
    assert rep.messages == call_context(conv, 40).messages
    with pytest.raises(ValueError, match="no segment 7.*3 segment"):
        build_report(result, Engine("s08"), segment=7)
    with pytest.raises(ValueError, match=f"no model call 4000.*{len(conv.calls())} model call"):
        build_report(result, Engine("s08"), segment=WHOLE, call=4000)
    with pytest.raises(ValueError, match="no model call 4000.*the segment has 81 model call"):
        build_report(result, Engine("s08"), call=4000)
    with pytest.raises(ValueError, match="no conversation 3"):
        build_report(result, Engine("s08"), conversation=3)


def test_group_rows_folds_kept_and_removed_runs():
    from compactscope.core.pipeline.align import Row
    rows = [Row(0, 0, "kept"), Row(1, 1, "kept"), Row(2, None, "removed"), Row(3, None, "removed"),
            Row(None, 2, "inserted"), Row(4, 3, "changed"), Row(5, 4, "kept")]
    assert [(k, len(r)) for k, r in group_rows(rows)] == [("kept", 2), ("removed", 2), ("inserted", 1),
                                                          ("changed", 1), ("kept", 1)]


def test_format_for():
    assert format_for("x.md") == "md" and format_for("x.HTML") == "html" and format_for("x", "md") == "md"
    with pytest.raises(ValueError):
        format_for("x", "pdf")


# ----------------------------------------------------------------- hostile content
def test_html_escapes_everything_from_the_transcript(tmp_path):
    src = tmp_path / "hostile.json"
    src.write_text(json.dumps(hostile_conversation()))
    rep = _report(src, "s08", {"max_messages": 3})
    html = _html(rep)
    tags = parse(html)
    scripts = [t for t, _ in tags.tags if t == "script"]
    assert len(scripts) == 1, "only the report's own script"
    assert "data-pwned" not in tags.scripts[0]
    for tag, attrs in tags.tags:
        assert not any(k.startswith("on") for k in attrs), (tag, attrs)
        if "src" in attrs:
            assert tag == "img" and attrs["src"].startswith("data:image/png;base64,"), attrs
        if "href" in attrs:
            assert attrs["href"].startswith("#"), attrs
    # the hostile text is there, as text
    assert "&lt;script&gt;document.body.setAttribute(&#x27;data-pwned&#x27;" in html
    # the real PNG is shown inline; the svg image (it could carry script) and the forged media type are not
    imgs = [attrs["src"] for t, attrs in tags.tags if t == "img"]
    assert imgs == ["data:image/png;base64," + PNG_1PX]
    assert "image/svg+xml" in html and html.count("not an image this report can show") == 2
    # the CSP admits exactly this script and this style sheet, data: images, and no network
    csp = next(a["content"] for t, a in tags.tags if t == "meta" and a.get("http-equiv") == "Content-Security-Policy")
    assert csp == content_security_policy()
    assert "default-src 'none'" in csp and "connect-src 'none'" in csp and "unsafe-inline" not in csp
    import base64
    import hashlib
    digest = base64.b64encode(hashlib.sha256(tags.scripts[0].encode()).digest()).decode()
    assert f"'sha256-{digest}'" in csp


def test_markdown_fences_and_cells_cannot_be_broken(tmp_path):
    src = tmp_path / "hostile.json"
    src.write_text(json.dumps(hostile_conversation()))
    rep = _report(src, "s08", {"max_messages": 3})
    text = _md(rep)
    # outside fenced blocks there is no raw markup from the transcript
    outside, inside, fence_len = [], [], 0
    for line in text.splitlines():
        m = re.match(r"^(`{3,})", line)
        if m and (fence_len == 0 or (len(m.group(1)) >= fence_len and line.strip() == m.group(1))):
            fence_len = 0 if fence_len else len(m.group(1))
            continue
        (inside if fence_len else outside).append(line)
    assert fence_len == 0, "every fence is closed"
    raw = re.compile(r"(?<!\\)<(script|img|a )")        # a backslash-escaped < is a literal character
    assert not any(raw.search(line) for line in outside), [line for line in outside if raw.search(line)]
    assert any("<script>document.body" in line for line in inside), "the text itself is kept, fenced"
    assert fence("a ```` b").startswith("`````\n")
    assert md("a|b<c>*d*") == "a\\|b\\<c\\>\\*d\\*"


# ----------------------------------------------------------------- the CLI
def test_cli_report_html_and_md(tmp_path, examples, capsys):
    out = tmp_path / "r.html"
    rc = cli_main(["report", str(examples / "long_session.json"), "-o", str(out), "--set", "max_messages=20"])
    assert rc == 0
    html = out.read_text()
    assert html.startswith("<!DOCTYPE html>") and "max_messages" in html and "</html>" in html
    assert "wrote" not in capsys.readouterr().err
    md_out = tmp_path / "r.md"
    assert cli_main(["report", str(examples / "long_session.json"), "-o", str(md_out), "--replay",
                     "--compare", "cc=claude_code;hermes:trigger=always"]) == 0
    text = md_out.read_text()
    assert text.startswith("# Compactscope report") and "| cc |" in text and "| hermes:trigger=always |" in text
    assert cli_main(["report", str(examples / "long_session.json"), "-o", str(tmp_path / "x.txt"),
                     "--format", "md"]) == 0
    assert (tmp_path / "x.txt").read_text().startswith("# ")


def test_cli_report_errors_name_the_problem(tmp_path, examples, capsys):
    src = examples / "long_session.json"
    assert cli_main(["report", str(src), "-o", str(tmp_path / "r.html"), "--segment", "4"]) == 2
    assert "no segment 4" in capsys.readouterr().err
    assert cli_main(["report", str(src), "-o", str(tmp_path / "r.html"), "--call", "999"]) == 2
    assert "no model call 999" in capsys.readouterr().err
    assert cli_main(["report", str(src), "-o", str(tmp_path / "r.html"), "--compare", "nosuch"]) == 2
    assert "nosuch" in capsys.readouterr().err
    assert cli_main(["report", str(src), "-o", str(tmp_path / "missing" / "r.html")]) == 2
    assert "cannot write" in capsys.readouterr().err
    copy = tmp_path / "t.json"
    copy.write_text(src.read_text())
    before = copy.read_bytes()
    assert cli_main(["report", str(copy), "-o", str(copy)]) == 2
    assert "the transcript itself" in capsys.readouterr().err
    assert copy.read_bytes() == before
    assert not list(tmp_path.glob(".*.tmp")), "no temporary file is left behind"


def test_write_report_is_atomic_and_readable(tmp_path, examples):
    rep = _report(examples / "short_session.json")
    out = tmp_path / "r.html"
    out.write_text("old")
    write_report(rep, str(out))
    assert out.read_text().startswith("<!DOCTYPE html>")
    assert out.stat().st_mode & 0o044, "readable like any file the user writes"
    link = tmp_path / "link.html"
    link.symlink_to(tmp_path / "elsewhere.html")
    with pytest.raises(OSError):
        write_report(rep, str(link))
    assert not (tmp_path / "elsewhere.html").exists(), "a symlink is refused, never followed"


def test_cli_report_of_a_claude_code_session_uses_its_strategy_and_inferred_defaults(corpus, tmp_path, capsys):
    from compactscope.core import strategies
    out = tmp_path / "cc.html"
    assert cli_main(["report", str(corpus / CC_ONE), "-o", str(out)]) == 0
    assert "strategy claude_code: the file's own pipeline (a Claude Code session)" in capsys.readouterr().out
    html = out.read_text()
    inferred = strategies.infer_params("claude_code", load(str(corpus / CC_ONE)).main)
    assert inferred.params, "the session tells claude_code something"
    from html import escape
    assert "Read from the session" in html
    for why in inferred.reasons.values():
        assert escape(why) in html
    assert cli_main(["report", str(corpus / CC_ONE), "-o", str(out), "--no-infer"]) == 0
    assert "Read from the session" not in out.read_text()


def test_an_unchanged_list_is_checked_once(examples):
    """The pipeline reuses the findings of a list a layer passed on unchanged (the same list, the same
    findings); a changed list is checked again."""
    from compactscope.core.analysis.checker import check
    conv = load(str(examples / "short_session.json")).main
    trace = Engine("s08").run(conv.messages, conversation=conv)
    prev = trace.input_findings
    seen_unchanged = False
    for s in trace.steps:
        assert s.findings == check(s.messages, s.dialect)
        if s.messages is s.input:
            assert s.findings is prev
            seen_unchanged = True
        prev = s.findings
    assert seen_unchanged
