"""One message, one character count (QA #21): the message list, the before/after table and the inspector
say the chars the size estimator counts for that message; the summary line says it counts the summary's text."""
from __future__ import annotations

import base64
import struct
from pathlib import Path

import pytest

pytest.importorskip("pytestqt")


from compactscope.core.analysis import present  # noqa: E402
from compactscope.core.pipeline.size import SizeMeter  # noqa: E402
from compactscope.widgets.inspector import Inspector  # noqa: E402
from compactscope.widgets.message_model import SizeRole  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.usefixtures("isolated_settings")


def png(w: int, h: int) -> str:
    head = b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR" + struct.pack(">II", w, h) + b"\x08\x02\x00\x00\x00"
    return base64.b64encode(head + b"\x00" * 3000).decode()


def title_chars(ins: Inspector) -> int:
    text = ins.title.text()
    return int(text.split(" chars")[0].rsplit("\u00b7 ", 1)[1].replace(",", ""))


def test_the_summary_message_has_one_count_in_every_view(qtbot, make_window):
    win = make_window()
    with qtbot.waitSignal(win.sigTraceReady, timeout=60000):
        assert win.open_path(str(ROOT / "assets" / "examples" / "long_session.json"))
    step = win.session.trace.steps[-1]
    assert step.summary and step.messages is not step.input
    win.stepper.set_current(len(win.session.trace.steps))            # the summary's stage, after it
    qtbot.waitUntil(lambda: win.messages.model.messages is step.messages or list(win.messages.model.messages) == step.messages)
    m = win.messages.model.messages[0]
    meter = SizeMeter()
    want = meter.message_size(m)
    assert want == len(str(m))                                # no image: the repr, as the estimator sums it
    assert win.messages.model.data(win.messages.model.index(win.messages.model.row_of(0), 0), SizeRole) == want
    win.select_message(0)
    qtbot.waitUntil(lambda: win.inspector.current is not None and win.inspector.current[0] == 0)
    assert title_chars(win.inspector) == want
    # the stage's size is the list's: the messages' chars plus the list's brackets and separators
    assert step.size_after == sum(meter.message_size(x) for x in step.messages) + 2 * len(step.messages)
    # the summary line says what its count counts: the summary text, a part of the message
    lines = [win.diff_panel.edits.item(k).text() for k in range(win.diff_panel.edits.count())]
    line = next(ln for ln in lines if "summary written by" in ln)
    assert f"summary text {step.summary['chars']:,} chars" in line
    assert step.summary["chars"] == len(step.summary["text"]) < want
    assert step.summary["text"] in str(m.get("content"))


def test_an_image_counts_alike_in_the_list_and_the_inspector(qtbot):
    img = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png(200, 150)}}
    m = {"role": "user", "content": [{"type": "text", "text": "look"}, img]}
    meter = SizeMeter()
    want = meter.message_size(m)
    assert want < len(str(m))                                 # the image as its tokens, not its base64
    assert present.chars.get(m) == want
    ins = Inspector()
    qtbot.addWidget(ins)
    ins.show_message(4, m)
    assert title_chars(ins) == want
    ins.show_message(4, m, block=1)                           # the block: as its chip counts it
    chip = present.message_chips(m)[1]
    assert title_chars(ins) == chip.size == present.block_chars(img) < len(str(img))
    ins.show_message(4, m, block=0)
    assert title_chars(ins) == len(str(m["content"][0])) == present.message_chips(m)[0].size
