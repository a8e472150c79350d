"""Issue 23, point 5: charts that read at a glance. Tokens on their own axis (characters behind the unit box),
"155k" / "1.3M" on every axis of every chart (never "155000" or "1.5e+06"), ticks at message indices on the
per-message bars, the timeline's y axis with its unit and its real context without the records that have no
usage (a `<synthetic>` record with zero usage is no context of 0 tokens)."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from compactscope.core.loaders import load
from compactscope.core.replay import replay
from compactscope.widgets.axes import IndexAxis, ShortAxis, short_number

from conftest import CORPUS

B0 = CORPUS / "entireio-cli" / "b0-2936744f3b-0-full.jsonl"      # 2 real compactions, a <synthetic> record


def tick_strings(ax) -> list[str]:
    """The labels the axis draws over its current range, every tick level."""
    lo, hi = sorted(ax.range)
    size = ax.geometry().height() if ax.orientation in ("left", "right") else ax.geometry().width()
    out = []
    for spacing, values in ax.tickValues(lo, hi, max(size, 100.0)):
        out += ax.tickStrings(values, 1.0, spacing)
    return out


def tick_values(ax) -> list[float]:
    lo, hi = sorted(ax.range)
    size = ax.geometry().height() if ax.orientation in ("left", "right") else ax.geometry().width()
    return sorted(v for _, values in ax.tickValues(lo, hi, max(size, 100.0)) for v in values)


def plain(strings) -> bool:
    """No scientific notation and no long run of digits ("155000") among the labels."""
    return all("e+" not in s and "e-" not in s and sum(c.isdigit() for c in s) <= 4 for s in strings)


# ------------------------------------------------------------------ the formatter
@pytest.mark.parametrize("v, text", [(0, "0"), (950, "950"), (1_500, "1.5k"), (155_000, "155k"), (149_148, "149k"),
                                     (383_443, "383k"), (1_300_000, "1.3M"), (1_500_000, "1.5M"), (2.5e9, "2.5B"),
                                     (-2_000, "-2k"), (999_999, "1M")])
def test_short_number_reads_at_a_glance(v, text):
    assert short_number(v) == text


def test_tick_labels_tell_neighbours_apart_and_never_use_a_scale(qtbot):
    assert [short_number(v, 2_500) for v in (0, 2_500, 5_000, 7_500)] == ["0", "2.5k", "5k", "7.5k"]
    assert [short_number(v, 250_000) for v in (750_000, 1e6, 1.25e6)] == ["750k", "1M", "1.25M"]
    assert [short_number(v, 0.5) for v in (0, 0.5, 1)] == ["0", "0.5", "1"]
    ax = ShortAxis("left")
    assert ax.tickStrings([0, 500_000, 1_000_000, 1_500_000], 1.0, 500_000) == ["0", "0.5M", "1M", "1.5M"]
    assert ax.tickStrings([0, 50_000, 100_000, 150_000], 1.0, 50_000) == ["0", "50k", "100k", "150k"]
    assert ax.autoSIPrefix is False                     # no "(x1e+06)" beside the axis title
    assert short_number(math.nan) == ""


def test_index_axis_ticks_only_whole_indices_of_the_count(qtbot):
    ax = IndexAxis("bottom")
    ax.set_count(6)
    values = sorted(v for _, vs in ax.tickValues(-0.5, 9.5, 600) for v in vs)
    assert values == [0, 1, 2, 3, 4, 5]
    ax.set_count(None)
    assert all(v == int(v) for _, vs in ax.tickValues(-0.5, 2.5, 600) for v in vs)
    assert ax.tickStrings([10_000, 20_000], 1.0, 10_000) == ["10k", "20k"]
    assert ax.tickStrings([12_340, 12_350], 1.0, 10) == ["12340", "12350"]     # no "12.34k" for an index


# ------------------------------------------------------------------ the size chart
@pytest.fixture
def chart(qtbot):
    from compactscope.widgets.token_chart import TokenChart
    ch = TokenChart()
    qtbot.addWidget(ch)
    ch.resize(1000, 260)
    ch.show()
    qtbot.waitExposed(ch)
    return ch


def test_tokens_and_characters_never_share_an_axis(qtbot, chart):
    """1.3M characters beside a 155k-token threshold: the tokens axis shows tokens and the line well up the plot;
    the characters are another axis, behind the unit box, where the token threshold is not drawn."""
    sizes = [1_300_000, 1_300_000, 60_000]
    tokens = [149_000, 149_000, 16_000]
    chart.set_series(["Original", "micro", "auto-compact"], sizes, tokens, 155_000, "tokens", "threshold")
    qtbot.wait(20)
    ax = chart.stage_plot.getAxis("left")
    (_, top) = chart.stage_plot.vb.viewRange()[1]
    assert chart.shown_unit == "tokens" and chart.tokens_curve.isVisible() and not chart.size_curve.isVisible()
    assert 155_000 < top < 2 * 155_000                  # the line is not flattened to the floor by 1.3M
    assert chart.threshold.isVisible() and chart.threshold.value() / top > 0.5
    ticks = tick_strings(ax)
    assert ticks and plain(ticks) and any(t.endswith("k") for t in ticks), ticks
    assert "tokens" in ax.labelText
    assert [t.toPlainText() for t in chart.value_labels] == ["149k", "149k", "16k"]
    # the characters: their own axis range, "M" on the ticks, no token line on it
    chart.unit_box.setCurrentIndex(chart.unit_box.findData("size"))
    qtbot.wait(20)
    (_, top) = chart.stage_plot.vb.viewRange()[1]
    assert chart.shown_unit == "size" and chart.size_curve.isVisible() and not chart.tokens_curve.isVisible()
    assert top > 1_300_000 and not chart.threshold.isVisible()
    ticks = tick_strings(ax)
    assert plain(ticks) and any(t.endswith("M") for t in ticks), ticks
    assert "chars" in ax.labelText and [t.toPlainText() for t in chart.value_labels] == ["1.3M", "1.3M", "60k"]
    assert "155,000 tokens" in chart.bar_legend.text()          # the threshold is still said under the charts
    # the user's pick holds for the next run
    chart.set_series(["Original"], [900_000], [100_000], 155_000, "tokens", "threshold")
    assert chart.shown_unit == "size"


def test_a_size_threshold_is_drawn_on_the_characters_axis(qtbot, chart):
    """s08's threshold is in characters: the chart opens on the characters with its line."""
    chart.set_series(["Original", "compact"], [60_000, 20_000], [15_000, 5_000], 50_000, "size", "context_limit")
    assert chart.shown_unit == "size" and chart.threshold.isVisible() and chart.threshold.value() == 50_000
    assert chart.unit_box.currentData() == "size"
    # a strategy without a threshold (a plugin function): tokens
    chart.set_series(["Original", "keep_tail"], [60_000, 20_000], [15_000, 5_000], None, "size", "")
    assert chart.shown_unit == "tokens" and not chart.threshold.isVisible()
    assert "threshold" not in chart.bar_legend.text()


def test_a_value_label_never_sits_on_the_threshold_line(qtbot, chart):
    chart.resize(1000, 400)
    chart.set_series(["Original", "compact"], [400_000, 40_000], [149_000, 16_000], 155_000, "tokens", "t")
    qtbot.wait(50)
    chart._place_labels()
    near, far = chart.value_labels
    assert tuple(near.anchor) == (0.5, -0.3)              # 149k under 155k: its label goes under the point
    assert tuple(far.anchor) == (0.5, 1.3)


def test_the_message_bars_tick_at_message_indices(qtbot, chart):
    """6 messages: ticks 0 to 5 (ticks 0-9 before), whole numbers only; the bar heights' axis says "k"."""
    msgs = [{"role": "user" if k % 2 == 0 else "assistant", "content": "x" * (3_000 * (k + 1))} for k in range(6)]
    chart.set_messages(msgs)
    qtbot.wait(20)
    bottom = chart.bar_plot.getAxis("bottom")
    assert tick_values(bottom) == [0, 1, 2, 3, 4, 5]
    assert tick_strings(bottom) == ["0", "1", "2", "3", "4", "5"]
    left = tick_strings(chart.bar_plot.getAxis("left"))
    assert plain(left) and any(t.endswith("k") for t in left), left


def test_the_window_chart_of_a_whole_history(qtbot, make_window, corpus):
    """b0's whole history (869k characters, 300k tokens, 3 contexts): tokens on the axis in "k", the characters
    up to "1M"."""
    from compactscope.widgets.context_picker import NO_CALL
    win = make_window()
    assert win.open_path(str(B0), remember=False)
    assert win.wait_idle(60000)
    box = win.picker.segment_box                         # the whole history
    box.setCurrentIndex(next(i for i in range(box.count()) if box.itemData(i) == NO_CALL))
    assert win.wait_idle(60000)
    ch = win.chart
    assert max(ch.sizes) > 800_000 and ch.shown_unit == "tokens"
    qtbot.wait(50)
    ticks = tick_strings(ch.stage_plot.getAxis("left"))
    assert plain(ticks) and any(t.endswith("k") for t in ticks), ticks
    ch.unit_box.setCurrentIndex(ch.unit_box.findData("size"))
    qtbot.wait(50)
    ticks = tick_strings(ch.stage_plot.getAxis("left"))
    assert plain(ticks) and any(t.endswith("M") for t in ticks), ticks
    for plot in (ch.stage_plot, ch.bar_plot):
        assert plain(tick_strings(plot.getAxis("left")))


# ------------------------------------------------------------------ the timeline
def _cc_session(path, usages) -> None:
    """A Claude Code session: a user turn, then per usage an answer (``None``: an API error's `<synthetic>`
    record with zero usage, as Claude Code writes one) and the next user turn."""
    lines, parent = [], None

    def add(kind, message):
        nonlocal parent
        uid = f"00000000-0000-4000-8000-{len(lines):012d}"
        lines.append({"parentUuid": parent, "isSidechain": False, "type": kind, "sessionId": "s", "version": "2.1.14",
                      "message": message, "uuid": uid, "timestamp": f"2026-01-01T10:{len(lines):02d}:00.000Z"})
        parent = uid
    add("user", {"role": "user", "content": "start"})
    for k, n in enumerate(usages):
        zero = {"input_tokens": 0, "output_tokens": 0, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
        add("assistant", {"id": f"msg_{k}", "type": "message", "role": "assistant",
                          "model": "<synthetic>" if n is None else "claude-sonnet-4-5-20250929",
                          "content": [{"type": "text", "text": f"answer {k}" if n else "API Error: 529 overloaded"}],
                          "usage": zero if n is None else {**zero, "input_tokens": n, "output_tokens": 10}})
        add("user", {"role": "user", "content": f"question {k}"})
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")


def test_zero_usage_is_no_real_context(tmp_path):
    """A call answered by a record with zero usage (an API error's `<synthetic>` message) has no real context:
    replay records none there, not a context of 0 tokens (core.replay.walk)."""
    p = tmp_path / "s.jsonl"
    _cc_session(p, [1_000, None, 3_000, 4_000])
    res = replay(load(str(p)).main, "claude_code")
    assert [c.real_tokens for c in res.calls[:4]] == [1_000, None, 3_000, 4_000]


def test_the_timeline_skips_the_synthetic_record_and_says_its_unit(qtbot, corpus):
    from compactscope.widgets.timeline import TimelineWidget
    conv = load(str(B0)).main
    synthetic = [j for j, m in enumerate(conv.meta) if m.usage is not None and m.usage.context_tokens == 0]
    assert synthetic, "b0 holds a <synthetic> record with zero usage"
    res = replay(conv, "claude_code", {"summary_max_output": 32_000, "idle_gap_minutes": 0})
    at = [c.index for c in res.calls if c.message_index in synthetic]
    assert at
    assert all(res.calls[i].real_tokens is None for i in at)
    assert all(c.real_tokens is None or c.real_tokens > 0 for c in res.calls)
    w = TimelineWidget()
    qtbot.addWidget(w)
    w.resize(900, 500)
    w.show()
    w.set_replay(res)
    qtbot.wait(20)
    _, real = w.curve_data("real")
    assert np.isnan(real[at]).all() and np.nanmin(real) > 40_000       # no dip to 0 tokens
    (y0, y1) = w.plot.getPlotItem().vb.viewRange()[1]
    assert y0 <= 0 < 155_000 < y1                       # the axis starts at 0: a drop to 50k is not a drop to nothing
    left = w.plot.getPlotItem().getAxis("left")
    assert "tokens" in left.labelText and left.autoSIPrefix is False
    assert "color" in left.labelStyle               # not pyqtgraph's default black on the black plot
    ticks = tick_strings(left)
    assert plain(ticks) and any(t.endswith("k") for t in ticks), ticks
    assert all(s.isdigit() for s in tick_strings(w.plot.getPlotItem().getAxis("bottom")))
    # the threshold is said in the legend, the real compactions' labels level and inside the plot
    assert "threshold 155,000 tokens" in w.legend_label.text()
    box = w.plot.getPlotItem().vb.sceneBoundingRect()
    for line in w.real_lines[:2]:
        lab = next(c for c in line.childItems() if c.__class__.__name__ == "InfLineLabel")
        r = lab.sceneBoundingRect()
        assert lab.rotation() == 0 and lab.toPlainText() in ("real auto compaction (156k)",
                                                             "real auto compaction (155k)")
        assert box.top() - 1 <= r.top() and r.bottom() <= box.bottom() + 1, r
    # narrow (a projector at 1024 px): the labels say the preTokens alone and never run into each other
    w.resize(340, 420)
    qtbot.wait(50)
    labels = [next(c for c in ln.childItems() if c.__class__.__name__ == "InfLineLabel") for ln in w.real_lines[:2]]
    assert [lab.toPlainText() for lab in labels] == ["156k", "155k"]
    a, b = (lab.sceneBoundingRect() for lab in labels)
    assert a.right() <= b.left()
    w.set_unit("size")
    assert "chars" in left.labelText
