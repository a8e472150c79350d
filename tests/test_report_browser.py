"""Reports rendered by a real browser: Debian's chromium, headless, started by the tests.

What the page shows (the summary text, collapsed long contents, the charts), that in-page search finds,
highlights and opens what it finds, that screenshots and print work, and that the page makes no network
request: hostile transcript text pointing at a loopback server never reaches it, and chromium's own
network log holds no request from the page (a control page that does reference the server proves the
harness would see one). Skipped, with the reason, only when no chromium is installed.
"""
from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
import threading
from html.parser import HTMLParser
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from compactscope.core.loaders import load
from compactscope.core.model.messages import message_text
from compactscope.core.pipeline.engine import Engine
from compactscope.core.report import build_report, write_report

from test_report import CC_ONE, hostile_conversation

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--no-first-run", "--disable-sync", "--disable-extensions",
         "--disable-default-apps", "--no-default-browser-check", "--mute-audio", "--hide-scrollbars"]


def find_chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    exe = find_chromium()
    if exe is None:
        pytest.skip("no chromium on PATH: the report's browser tests need Debian's chromium "
                    "(apt-get install chromium; .ci/run installs it)")

    def run(url: str, *extra: str, timeout: int = 120) -> subprocess.CompletedProcess:
        profile = tmp_path_factory.mktemp("chromium-profile")
        cmd = [exe, *FLAGS, f"--user-data-dir={profile}", *extra, url]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        assert r.returncode == 0, f"chromium failed ({r.returncode}): {r.stderr[-2000:]}"
        return r
    return run


class DomText(HTMLParser):
    """The visible text of a DOM dump (scripts and styles left out), the open state of every <details>,
    and the <mark> elements."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.text: list[str] = []
        self.details: list[bool] = []
        self.marks: list[dict] = []
        self._skip = 0
        self._mark: dict | None = None
        self.body: dict = {}

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag in ("script", "style"):
            self._skip += 1
        elif tag == "details":
            self.details.append("open" in a)
        elif tag == "mark":
            self._mark = {"class": a.get("class", ""), "text": ""}
            self.marks.append(self._mark)
        elif tag == "body":
            self.body = a

    def handle_endtag(self, tag):
        if tag in ("script", "style"):
            self._skip -= 1
        elif tag == "mark":
            self._mark = None

    def handle_data(self, data):
        if not self._skip:
            self.text.append(data)
            if self._mark is not None:
                self._mark["text"] += data


def dom(html: str) -> DomText:
    d = DomText()
    d.feed(html)
    d.close()
    return d


def squash(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def png_size(path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", "a PNG"
    return struct.unpack(">II", head[16:24])


def page_requests(netlog_path) -> list[str]:
    """URLs the page itself asked for (chromium's own background requests are not the page's: their
    network isolation key is not the file:// page's)."""
    d = json.loads(netlog_path.read_text())
    types = {v: k for k, v in d["constants"]["logEventTypes"].items()}
    out = []
    for e in d.get("events", []):
        p = e.get("params") or {}
        if types.get(e.get("type")) == "URL_REQUEST_START_JOB" and "file://" in str(p.get("network_isolation_key")):
            if not str(p.get("url", "")).startswith(("file:", "data:")):
                out.append(p["url"])
    return out


@pytest.fixture
def loopback():
    """A loopback HTTP server that counts every request it gets."""
    hits: list[str] = []

    class H(BaseHTTPRequestHandler):
        def do_GET(self):
            hits.append(self.path)
            self.send_response(404)
            self.end_headers()

        def log_message(self, *a):
            pass
    srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}", hits
    srv.shutdown()
    srv.server_close()


def test_chromium_shows_the_report_of_a_claude_code_session(browser, corpus, tmp_path):
    result = load(str(corpus / CC_ONE))
    rep = build_report(result, Engine("claude_code"), replay=True, compare=[("s08", Engine("s08"))])
    out = tmp_path / "report.html"
    write_report(rep, str(out))
    d = dom(browser(out.as_uri(), "--dump-dom").stdout)
    assert d.body.get("data-ready") == "1", "the report's script ran (its CSP hash admits it)"
    text = squash("".join(d.text))
    conv = result.main
    real = message_text(conv.messages[conv.events[0].summary_index])
    assert squash(real) in text, "the real compaction summary, in full"
    assert rep.replay.summaries
    for sim in rep.replay.summaries:
        assert squash(sim.text) in text, "every simulated summary of the replays, in full"
    for st in rep.stages:
        assert squash(st.step.explain()) in text
    assert "Strategies compared" in text and "Real compactions against the simulated ones" in text
    # long contents start collapsed: most <details> are closed, and nothing was marked without a search
    assert d.details and sum(d.details) < len(d.details) / 2
    assert not d.marks and d.body.get("data-hits") is None


def test_search_finds_highlights_and_opens_collapsed_content(browser, tmp_path):
    conv = hostile_conversation()
    long = conv[2]["content"][0]["content"][0]
    long["text"] = long["text"].replace("line of output\n" * 200, "line of output\n" * 199 + "Zebra-Quokka-42\n", 1)
    src = tmp_path / "conv.json"
    src.write_text(json.dumps(conv))
    out = tmp_path / "report.html"
    write_report(build_report(load(str(src)), Engine("s08")), str(out))
    plain = dom(out.read_text())          # the page as written: what the browser starts from
    assert "Zebra-Quokka-42" in "".join(plain.text) and not plain.marks
    found = dom(browser(out.as_uri() + "#q=zebra-QUOKKA", "--dump-dom").stdout)
    # the tool result appears once in the input messages: one hit, case-insensitive, marked as the current one
    assert found.body.get("data-hits") == "1"
    assert [m["text"] for m in found.marks] == ["Zebra-Quokka"]
    assert "cur" in found.marks[0]["class"]
    # the <details> holding it was opened (the same page without the search has more closed ones)
    assert sum(found.details) > sum(plain.details)


def test_the_report_makes_no_network_request(browser, tmp_path, loopback):
    base, hits = loopback
    src = tmp_path / "conv.json"
    src.write_text(json.dumps(hostile_conversation(base + "/from-transcript.png")))
    out = tmp_path / "report.html"
    write_report(build_report(load(str(src)), Engine("s08"), replay=True), str(out))
    assert base in out.read_text(), "the transcript's URLs are in the report, as text"
    log = tmp_path / "netlog.json"
    d = dom(browser(out.as_uri(), "--dump-dom", f"--log-net-log={log}").stdout)
    assert d.body.get("data-ready") == "1" and "data-pwned" not in d.body
    assert hits == [], f"the report reached the loopback server: {hits}"
    assert page_requests(log) == []
    # control: a page that does reference the server is seen by both the server and the network log
    ctl = tmp_path / "control.html"
    ctl.write_text(f'<!DOCTYPE html><html><body><img src="{base}/control.png"></body></html>')
    log2 = tmp_path / "netlog2.json"
    browser(ctl.as_uri(), "--dump-dom", f"--log-net-log={log2}")
    assert "/control.png" in hits
    assert any(u.endswith("/control.png") for u in page_requests(log2))


def test_screenshots_on_a_desktop_and_a_phone_and_print(browser, examples, tmp_path):
    out = tmp_path / "report.html"
    write_report(build_report(load(str(examples / "long_session.json")), Engine("s08")), str(out))
    for w, h in ((1280, 900), (390, 844)):
        png = tmp_path / f"shot-{w}.png"
        browser(out.as_uri(), f"--window-size={w},{h}", f"--screenshot={png}")
        assert png_size(png) == (w, h)
        assert png.stat().st_size > 10_000, "a page with content, not a blank image"
    pdf = tmp_path / "report.pdf"
    browser(out.as_uri(), f"--print-to-pdf={pdf}", "--no-pdf-header-footer")
    data = pdf.read_bytes()
    assert data.startswith(b"%PDF") and len(re.findall(rb"/Type\s*/Page[^s]", data)) >= 2
