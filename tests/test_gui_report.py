"""Sharing from the window: File > Export as HTML / Markdown of what is on screen, Edit > Copy ... as
Markdown, per-message time and per-call usage in the message list and the inspector, and
``compactscope FILE --screenshots DIR``."""
from __future__ import annotations

import subprocess
import sys
from html import escape
from pathlib import Path

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pytestqt")

from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtGui import QGuiApplication  # noqa: E402

from compactscope.core.model.messages import message_text  # noqa: E402
from compactscope.core.model.describe import usage_short, when  # noqa: E402
from test_gui import open_wait  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "assets" / "examples" / "long_session.json"
CC_ONE = "entireio-cli/a6-e4c2a0fbd1-0-full.jsonl"

pytestmark = pytest.mark.usefixtures("isolated_settings")


@pytest.fixture
def win(make_window):
    return make_window()


def export_wait(qtbot, w, path) -> str:
    w.exporter.last_path = None
    assert w.exporter.export(str(path))
    qtbot.waitUntil(lambda: w.exporter.last_path == str(path) or w.banner.isVisible(), timeout=60000)
    assert not w.banner.isVisible(), w.banner.text()
    return Path(path).read_text(encoding="utf-8")


def test_export_html_of_the_stage_on_screen(qtbot, win, tmp_path):
    open_wait(qtbot, win, EXAMPLE)
    k = len(win.session.trace.steps)                        # the last layer: s08's summary
    win.stepper.set_current(k)
    qtbot.waitUntil(lambda: win.session.view.stage == k)
    names = [a.text() for a in win.menuBar().actions()]
    assert names[:2] == ["&File", "&Edit"]
    file_items = [a.text() for a in win.menuBar().actions()[0].menu().actions()]
    assert {"Export as &HTML\u2026", "Export as &Markdown\u2026", "Export as &PNG\u2026"} <= set(file_items)
    html = export_wait(qtbot, win, tmp_path / "shown.html")
    # the run on screen is reported (not run again): its steps, its summary, the stage marked
    trace = win.session.trace
    for st in trace.steps:
        assert escape(st.explain()) in html
    made = next(s for s in trace.steps if s.summary and not s.error)
    assert escape(made.summary["text"]) in html
    section = html[html.index(f'id="L{k}"'):]
    assert "on screen" in section[:section.index("</h3>")]
    assert "on screen" not in html[:html.index(f'id="L{k}"')]
    assert f"strategy <b>{win.session.setup.strategy.name}</b>" in html
    assert 'id="replay"' not in html, "no replay was shown, none is reported"
    assert win.statusBar().currentMessage().startswith("Exported the HTML report to")


def test_export_markdown_with_the_timeline_replay(qtbot, win, tmp_path):
    open_wait(qtbot, win, EXAMPLE)
    win.set_compare("claude_code")
    with qtbot.waitSignal(win.sigReplayReady, timeout=60000):
        win.run_replay()
    labels = [r.label for r in win.session.replay.replay_results]
    text = export_wait(qtbot, win, tmp_path / "shown.md")
    assert text.startswith("# Compactscope report")
    assert "### Strategies compared" in text
    from compactscope.core.report.markdown import md
    assert len(labels) == 2
    for label in labels:
        assert f"| {md(label)} |" in text
    assert "## Replay: the conversation's whole life" in text


def test_export_to_a_folder_that_does_not_exist_says_so(qtbot, win, tmp_path):
    open_wait(qtbot, win, EXAMPLE)
    win.exporter.export(str(tmp_path / "no" / "such" / "dir" / "r.html"))
    qtbot.waitUntil(win.banner.isVisible, timeout=30000)
    assert "could not be written" in win.banner.text()


def test_copy_message_edits_and_summary_as_markdown(qtbot, win):
    open_wait(qtbot, win, EXAMPLE)
    win.select_message(2)
    qtbot.waitUntil(lambda: win.session.view.selection == 2)
    assert win.exporter.copy_message()
    from compactscope.core.report.markdown import md
    text = QGuiApplication.clipboard().text()
    m = win.messages.model.messages[2]
    assert text == win.exporter.last_text and text.startswith("### #2 \u00b7 **")
    assert message_text(m).splitlines()[0] in text
    # the layer's edits
    k = next(i for i, s in enumerate(win.session.trace.steps, 1) if s.edits)
    win.stepper.set_current(k)
    qtbot.waitUntil(lambda: win.session.view.stage == k)
    assert win.exporter.copy_edits()
    step = win.session.trace.steps[k - 1]
    clip = QGuiApplication.clipboard().text()
    assert clip.startswith("### ") and all(md(e.text) in clip for e in step.edits)
    # on Original: every layer at a glance
    win.stepper.set_current(0)
    qtbot.waitUntil(lambda: win.session.view.stage == 0)
    assert win.exporter.copy_edits()
    assert all(md(s.layer) in QGuiApplication.clipboard().text() for s in win.session.trace.steps)
    # the summary the last layer made, in full
    win.stepper.set_current(len(win.session.trace.steps))
    qtbot.waitUntil(lambda: win.session.view.stage == len(win.session.trace.steps))
    assert win.exporter.copy_summary()
    made = next(s for s in win.session.trace.steps if s.summary and not s.error)
    assert made.summary["text"] in QGuiApplication.clipboard().text()
    # the same copies are in the message list's and the edit list's context menus
    assert win.messages.view.contextMenuPolicy() == Qt.ActionsContextMenu
    assert "Copy Message as Markdown" in [a.text() for a in win.messages.view.actions()]
    assert "Copy Edits as Markdown" in [a.text() for a in win.diff_panel.edits.actions()]


def test_time_and_usage_in_the_message_list_and_the_inspector(qtbot, win, corpus, tmp_path):
    open_wait(qtbot, win, corpus / CC_ONE)
    win.session.view.set_stage(0)        # it opens at its first compaction's layer (issue 23): the recorded messages
    model = win.messages.model
    conv = win.session.source.conversation
    i = next(i for i, m in enumerate(model.messages) if win.session.source.meta_of(m) is not None
             and win.session.source.meta_of(m).usage is not None and win.session.source.meta_of(m).usage.cache_read_input_tokens)
    meta = model.meta_of(i)
    assert meta is win.session.source.meta_of(model.messages[i]) and meta.usage is not None
    tip = model.data(model.index(model.row_of(i), 0), Qt.ToolTipRole)
    assert f"time {when(meta.timestamp)}" in tip
    assert f"cache read {meta.usage.cache_read_input_tokens:,}" in tip and "cache write" in tip
    # a row shows its time and its call's usage in its header (drawn, so look at the pixels' source: the text)
    assert usage_short(meta.usage).startswith("in ")
    win.resize(1920, 1080)
    qtbot.wait(50)
    win.select_message(i)
    qtbot.waitUntil(lambda: win.inspector.current is not None and win.inspector.current[0] == i)
    title = win.inspector.title.text()
    assert f"cache read {meta.usage.cache_read_input_tokens:,}" in title
    assert when(meta.timestamp) in title and meta.model in title
    assert f"{Path(meta.provenance.path).name}:{meta.provenance.line}" in title or str(meta.provenance) in title
    # messages a layer made have no meta; rows without it keep their plain header
    assert model.meta_of(i) is not None and conv.meta_at(0) is not None
    for size in ((1024, 768), (1920, 1080)):
        win.resize(*size)
        qtbot.wait(50)
        img = win.grab().toImage()
        assert img.width() >= size[0] - 20
        img.save(str(tmp_path / f"usage-{size[0]}.png"))


def test_screenshots_one_png_per_layer_step(tmp_path):
    out = tmp_path / "shots"
    r = subprocess.run([sys.executable, "-m", "compactscope", str(EXAMPLE), "--screenshots", str(out), "--size",
                        "1024x768"], capture_output=True, text=True, timeout=180, cwd=ROOT,
                       env={**__import__("os").environ, "QT_QPA_PLATFORM": "offscreen"})
    assert r.returncode == 0, r.stderr
    pngs = sorted(out.glob("*.png"))
    assert [p.name[:2] for p in pngs] == [f"{k:02d}" for k in range(len(pngs))]
    assert pngs[0].name == "00-original.png" and len(pngs) == 5      # Original + s08's four layers
    assert [str(p) for p in pngs] == r.stdout.split()
    for p in pngs:
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_frame_sources_add_frames(make_window, qtbot):
    from compactscope.app import screenshots
    w = make_window()
    open_wait(qtbot, w, EXAMPLE)
    seen = []

    def slides(win):
        return [screenshots.Frame("slide-1", lambda: seen.append(1))]
    screenshots.register_frames(slides)
    try:
        names = [f.name for f in screenshots.frames(w)]
        assert names[0] == "00-original" and names[-1] == "slide-1"
        screenshots.frames(w)[-1].show()
        assert seen == [1]
    finally:
        screenshots.FRAME_SOURCES.remove(slides)
