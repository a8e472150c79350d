"""The replay timeline widget, offscreen: curve data, markers, cursor, clicks, playback,
the comparison table. Assertions are on the data, not on pixels."""
from __future__ import annotations


import numpy as np
import pytest

pytest.importorskip("pyqtgraph")
pytest.importorskip("pytestqt")

from PySide6.QtCore import Qt  # noqa: E402

from compactscope.core.model.conversation import CompactionEvent, Conversation, MessageMeta, Usage  # noqa: E402
from compactscope.core.replay import replay  # noqa: E402
from compactscope.core.summarizers import FixedSummarizer  # noqa: E402
from compactscope.core.files.workspace import Workspace  # noqa: E402
from compactscope.widgets.comparison_table import ComparisonTable  # noqa: E402
from compactscope.widgets.timeline import TimelineWidget  # noqa: E402


def session(n, size=2000):
    msgs = [{"role": "user", "content": "start"}]
    meta = [MessageMeta()]
    for k in range(n):
        msgs.append({"role": "assistant", "content": [{"type": "tool_use", "id": f"t{k}", "name": "Bash",
                                                       "input": {"command": str(k)}}]})
        meta.append(MessageMeta(usage=Usage(input_tokens=1000 + 50 * k)))
        msgs.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{k}",
                                                  "content": "r" * size}]})
        meta.append(MessageMeta())
    return Conversation(msgs, meta=meta, events=[CompactionEvent("claude_code", 21, "auto", pre_tokens=4321)])


@pytest.fixture
def result(tmp_path):
    return replay(session(40), "s08", {"context_limit": 12_000, "keep_recent": 100},
                  workspace=Workspace(tmp_path), summarizer=FixedSummarizer("S"))


def test_curves_follow_the_replay(qtbot, result):
    w = TimelineWidget()
    qtbot.addWidget(w)
    w.set_replay(result)
    n = len(result.calls)
    x, y = w.curve_data("after")
    assert list(x) == list(range(n)) and list(y) == [c.tokens_after for c in result.calls]
    assert list(w.curve_data("raw")[1]) == [c.raw_tokens for c in result.calls]
    assert list(w.curve_data("before")[1]) == [c.tokens_before for c in result.calls]
    real = w.curve_data("real")[1]
    assert real[0] == 1000 and np.isnan(real[-1])          # the pending last call has no usage
    # a marker per firing, at the sent size of that call
    for name in result.layer_names:
        mx, my = w.curve_data(f"marker:{name}")
        fired = [c.index for c in result.calls if name in c.fired]
        assert list(mx) == fired
        assert list(my) == [result.calls[i].tokens_after for i in fired]
    assert len(w.curve_data("marker:compact_history")[0]) == result.totals()["summaries"] > 0
    # the real boundary (message 21 = the assistant of call 10) with its preTokens
    rx, ry = w.curve_data("real_markers")
    assert list(rx) == [10] and list(ry) == [4321]
    # threshold: s08's is in chars, shown approximately in tokens, exactly in chars
    assert w.threshold_line.value() == pytest.approx(12_000 / 4)
    w.set_unit("size")
    assert list(w.curve_data("after")[1]) == [c.size_after for c in result.calls]
    assert w.threshold_line.value() == 12_000
    assert len(w.curve_data("real")[0]) == 0


def test_set_replay_updates_in_place(qtbot, result, tmp_path):
    w = TimelineWidget()
    qtbot.addWidget(w)
    w.set_replay(result)
    curve, items = w.after_curve, set(map(id, w.plot.getPlotItem().items))
    other = replay(session(15), "claude_code", {"window": 40_000}, workspace=Workspace(tmp_path))
    w.set_replay(other)
    assert w.after_curve is curve
    assert list(w.curve_data("after")[1]) == [c.tokens_after for c in other.calls]
    assert len(w.curve_data("marker:compact_history")[0]) == 0          # hidden: not a layer of this run
    w.set_replay(result)
    assert set(map(id, w.plot.getPlotItem().items)) >= items
    w.set_replay(None)
    assert len(w.curve_data("after")[0]) == 0


def test_cursor_click_and_keys(qtbot, result):
    w = TimelineWidget()
    qtbot.addWidget(w)
    w.resize(900, 500)
    w.show()
    qtbot.waitExposed(w)
    w.set_replay(result)
    w.set_cursor(7)
    assert w.cursor() == 7 and w.cursor_line.value() == 7
    w.set_cursor(10_000)
    assert w.cursor() == len(result.calls) - 1
    # a click at call 12 selects it (once the view has its range)
    qtbot.wait(30)
    view = w.plot
    scene_pt = w.scene_pos_of_call(12)
    pos = view.mapFromScene(scene_pt)
    with qtbot.waitSignal(w.sigCallSelected, timeout=2000) as blocker:
        qtbot.mouseClick(view.viewport(), Qt.LeftButton, pos=pos)
    assert blocker.args == [12] and w.cursor() == 12
    with qtbot.waitSignal(w.sigCallSelected, timeout=1000) as blocker:
        qtbot.keyClick(w, Qt.Key_Right)
    assert blocker.args == [13]
    qtbot.keyClick(w, Qt.Key_Left, Qt.ShiftModifier)
    assert w.cursor() == 3


def test_playback_steps_the_cursor(qtbot, result):
    w = TimelineWidget()
    qtbot.addWidget(w)
    w.set_replay(result)
    w.set_cursor(0)
    w.speed.setValue(200)
    seen = []
    w.sigCallSelected.connect(seen.append)
    qtbot.keyClick(w, Qt.Key_Space)
    assert w.playing()
    qtbot.waitUntil(lambda: len(seen) >= 3, timeout=3000)
    qtbot.keyClick(w, Qt.Key_Space)
    assert not w.playing()
    assert seen == list(range(1, len(seen) + 1))


def test_overlay_and_comparison_table(qtbot, result, tmp_path):
    other = replay(session(40), "s08", {"context_limit": 30_000, "keep_recent": 100}, label="loose",
                   workspace=Workspace(tmp_path), summarizer=FixedSummarizer("S"))
    w = TimelineWidget()
    qtbot.addWidget(w)
    w.set_replays([result, other])
    assert list(w.curve_data("overlay:0")[1]) == [c.tokens_after for c in other.calls]
    t = ComparisonTable()
    qtbot.addWidget(t)
    t.set_results([result, other])
    assert t.rowCount() == 2
    assert t.value(1, "label") == "loose"
    assert t.value(0, "summaries") == result.totals()["summaries"] > t.value(1, "summaries")
    assert t.value(1, "total_input_tokens") == sum(c.tokens_after for c in other.calls)


def synthetic(n):
    """A ReplayResult of n calls built directly (a sawtooth), to test drawing without replaying."""
    from compactscope.core.replay import CallRecord, ReplayResult
    calls, ctx = [], 0
    for i in range(n):
        before = ctx + 1000
        fired = ["compact_history"] if before > 150_000 else (["micro_compact"] if i % 7 == 0 else [])
        after = 5_000 if fired == ["compact_history"] else before - (300 if fired else 0)
        calls.append(CallRecord(i, 2 * i + 1, 2, 4000 * i, 1000 * i, i, i, 4 * before, 4 * after, before, after,
                                [], fired, [], [], 0, 0, int(fired == ["compact_history"]),
                                real_tokens=before + 20_000 if i % 3 else None))
        ctx = after
    return ReplayResult("s08", {}, "synthetic", ["micro_compact", "compact_history"], calls, 600_000.0, "size",
                        [{"call": n // 2, "pre_tokens": 140_000, "trigger": "auto"}], "len", "chars/4")


def test_ten_thousand_calls_render_clipped_and_downsampled(qtbot):
    res = synthetic(10_000)
    w = TimelineWidget()
    qtbot.addWidget(w)
    w.resize(1200, 500)
    w.show()
    qtbot.waitExposed(w)
    w.set_replay(res)
    w.plot.repaint()
    for i in range(0, 10_000, 1000):
        w.set_cursor(i)
        w.plot.repaint()
    assert len(w.curve_data("after")[0]) == 10_000
    assert len(w.curve_data("marker:compact_history")[0]) == sum(c.summaries for c in res.calls)
    assert w.after_curve.opts["clipToView"] and w.after_curve.opts["autoDownsample"]
    # drawn clipped and downsampled, so a move costs the visible points (bench_gui.py prints the times)


def test_markers_added_in_chunks_end_as_one_setdata_makes_them(qtbot, result, tmp_path, monkeypatch):
    """A layer's markers are added a chunk per turn of the event loop (50k points at once held the window): once
    done, each scatter holds the points, sizes and data one setData of them all makes; new points for the
    markers (another replay) drop the chunks still to come."""
    import pyqtgraph as pg
    from compactscope.widgets import timeline as tl
    monkeypatch.setattr(tl, "MARKER_CHUNK", 2)
    w = TimelineWidget()
    qtbot.addWidget(w)
    w.set_replay(result)
    big = [name for name in result.layer_names if sum(name in c.fired for c in result.calls) > 2]
    assert big and w.markers_filling()
    qtbot.waitUntil(lambda: not w.markers_filling(), timeout=10000)
    for name in result.layer_names:
        m = w.markers.layers[name]
        fired = [c.index for c in result.calls if name in c.fired]
        whole = pg.ScatterPlotItem()
        whole.setData(np.array(fired, dtype=float), np.array([result.calls[i].tokens_after for i in fired], float),
                      size=9, data=[f"call {i}: {name}" for i in fired])
        for field in ("x", "y", "size", "data"):
            assert list(m.data[field]) == list(whole.data[field])
    other = replay(session(12), "s08", {"context_limit": 12_000, "keep_recent": 100},
                   workspace=Workspace(tmp_path / "o"), summarizer=FixedSummarizer("S"))
    w.set_replay(result)
    w.set_replay(other)                                  # before the first's chunks are all added
    qtbot.waitUntil(lambda: not w.markers_filling(), timeout=10000)
    for name in other.layer_names:
        assert list(w.curve_data(f"marker:{name}")[0]) == [c.index for c in other.calls if name in c.fired]


def test_the_columns_made_in_the_replays_worker_draw_what_the_calls_do(qtbot, result):
    """``timeline_columns`` (made with the replay, in its worker) gives the timeline the same curves and markers it
    reads from the calls itself, in either unit."""
    from compactscope.core.replay.views import timeline_columns
    names = ["raw", "before", "after", "real"] + [f"marker:{n}" for n in result.layer_names]
    own, given = TimelineWidget(), TimelineWidget()
    qtbot.addWidget(own)
    qtbot.addWidget(given)
    own.set_replays([result])
    given.set_replays([result], columns=timeline_columns(result))
    for unit in ("tokens", "size"):
        own.set_unit(unit)
        given.set_unit(unit)
        for name in names:
            a, b = own.curve_data(name), given.curve_data(name)
            np.testing.assert_array_equal(a[0], b[0])
            np.testing.assert_array_equal(a[1], b[1])
    assert own.legend_entries() == given.legend_entries()
