"""The fleet view: the slider re-evaluates figures and table, the table sorts and filters, and a
double-click opens the session in the debugger at that call (offscreen, pytest-qt)."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

pytest.importorskip("pyarrow")

from compactscope.core.fleet import make_config  # noqa: E402
from compactscope.core.fleet.engines import InProcess  # noqa: E402
from compactscope.core.fleet.model import FleetData  # noqa: E402
from compactscope.core.fleet.run import run_fleet  # noqa: E402
from compactscope.core.fleet.table import FILTERS, KEYS  # noqa: E402

NAMES = ["b8-659b3a4dd4-0-full.jsonl", "a6-e4c2a0fbd1-0-full.jsonl", "ca-fca7ea73ac-0-full.jsonl",
         "37-995ebed6e4-2-full.jsonl", "fc-99c919b212-0-full.jsonl"]


@pytest.fixture(scope="module")
def results(corpus_dir, tmp_path_factory):
    d = tmp_path_factory.mktemp("fleet")
    for n in NAMES:
        shutil.copy(corpus_dir / "entireio-cli" / n, d / n)
    (d / "broken.jsonl").write_text("{nope\n")
    out = d / "r.parquet"
    run_fleet([d], make_config(), out, engine=InProcess())
    return out


@pytest.fixture(scope="module")
def corpus_dir():
    corpus = Path(__file__).resolve().parent.parent.parent / "shared" / "corpus"
    if not corpus.is_dir():
        pytest.skip("../shared/corpus is not present")
    return corpus


def _rows(view):
    p = view.proxy
    return [p.mapToSource(p.index(r, 0)).row() for r in range(p.rowCount())]


def test_slider_reevaluates_figures_and_table(qtbot, results):
    from compactscope.widgets.fleet_view import FleetView
    data = FleetData.load(results)
    v = FleetView(data, threshold=167_000)
    qtbot.addWidget(v)
    v.resize(1024, 768)
    v.show()
    assert v.threshold == 167_000
    at167 = v.reeval
    v.set_threshold(100_000)
    qtbot.waitUntil(lambda: v.reeval is not at167 and v.reeval.threshold == 100_000)
    r = v.reeval
    group = v.data                    # the figures' rows: the sessions replayed with claude_code (not the broken file)
    assert group.strategy == "claude_code" and group.n == data.n - 1 and list(group.index) == \
        [i for i in range(data.n) if not data.errors[i]]
    truth = group.reevaluate(100_000)
    assert (r.compactions == truth.compactions).all() and r.total_compactions > at167.total_compactions
    # the figures show the re-evaluation (data, not pixels)
    pre = v.figure_data("pre")
    assert int(pre.series[-1].counts.sum()) == len(truth.pre_tokens)
    assert v.whatif_line.value() == 100_000
    assert "at 100k tokens" in v.whatif.text()
    # the table's at-T columns follow
    col = KEYS.index("at")
    shown = {v.model.index(i, 0).data(): v.model.index(i, col).data() for i in range(v.model.rowCount())}
    for k, i in enumerate(group.index):
        assert shown[v.table.names[i]] == f"{int(truth.compactions[k]):,}"
    # each session at its own replayed threshold: the replay's own compactions
    v.set_threshold(None)
    qtbot.waitUntil(lambda: v.reeval.per_session)
    assert (v.reeval.compactions == group.sim_compactions).all()
    # the red line dragged = a new threshold
    v.whatif_line.setValue(120_000)
    v.whatif_line.sigPositionChangeFinished.emit(v.whatif_line)
    qtbot.waitUntil(lambda: v.reeval.threshold == 120_000 and not v.reeval.per_session)


def test_table_sorts_and_filters(qtbot, results):
    from PySide6.QtCore import Qt

    from compactscope.widgets.fleet_view import FleetView
    data = FleetData.load(results)
    v = FleetView(data)
    qtbot.addWidget(v)
    v.view.sortByColumn(KEYS.index("calls"), Qt.DescendingOrder)
    calls = [int(data.calls[i]) for i in _rows(v)]
    assert calls == sorted(calls, reverse=True)
    v.view.sortByColumn(KEYS.index("first_real"), Qt.AscendingOrder)
    firsts = [int(data.first_real[i]) for i in _rows(v)]
    known = [f for f in firsts if f >= 0]
    assert known == sorted(known) and firsts[:len(known)] == known      # sessions without one sort last
    v.filter_kind.setCurrentIndex(list(FILTERS).index("errors"))
    assert [data.paths[i] for i in _rows(v)] == [p for p, e in zip(data.paths, data.errors) if e]
    assert "1 of 6 rows" in v.count_label.text()
    v.filter_kind.setCurrentIndex(0)
    v.filter_edit.setText("b8-659")
    assert [data.paths[i].rsplit("/", 1)[-1] for i in _rows(v)] == ["b8-659b3a4dd4-0-full.jsonl"]


def test_double_click_opens_the_session_at_that_call(qtbot, make_window, results):
    from compactscope.app.fleet import FleetWindow
    win = make_window()
    win.wait_idle()
    data = FleetData.load(results)
    fw = FleetWindow(data, win, threshold=150_000)
    qtbot.addWidget(fw)
    fw.show()
    v = fw.view
    v.filter_edit.setText("b8-659")
    assert v.proxy.rowCount() == 1
    i = v.proxy.mapToSource(v.proxy.index(0, 0)).row()
    want = int(data.first_real[i])
    assert want > 0
    opened = []
    v.sigOpenSession.connect(opened.append)
    v.view.doubleClicked.emit(v.proxy.index(0, 0))
    assert opened and opened[0]["call"] == want and opened[0]["path"] == data.paths[i]
    qtbot.waitUntil(lambda: win.session.source.path == data.paths[i], timeout=30_000)
    qtbot.waitUntil(lambda: win.timeline_panel.timeline._cursor == want, timeout=60_000)
    assert win.tabs.currentIndex() == 2
    assert win.session.setup.strategy.name == "claude_code"
    # the parameters it was replayed with (its inferred defaults), not the window's defaults
    assert win.session.setup.params["cap_reserve"] is False
    assert win.session.replay.replay_result.threshold == data.thresholds[i]
    # a call column opens its own call
    col = KEYS.index("first_at")
    opened.clear()
    v.view.doubleClicked.emit(v.proxy.index(0, col))
    assert opened[0]["call"] == int(v.reeval.first_call[list(v.data.index).index(i)]) != want


def test_one_strategy_at_a_time(qtbot, corpus_dir, tmp_path):
    """A fleet of several formats: the figures, the slider and the at-T columns are one strategy's sessions at
    a time, on that strategy's own scale; the table keeps every row, duplicates marked."""
    from compactscope.widgets.fleet_view import FleetView
    for n in ("react-compaction-edit.eval", "react-compaction-edit.json"):
        shutil.copy(corpus_dir / "inspect_ai" / n, tmp_path / n)
    shutil.copy(corpus_dir / "entireio-cli" / NAMES[0], tmp_path / NAMES[0])
    out = tmp_path / "r.parquet"
    run_fleet([tmp_path], make_config(), out, engine=InProcess())
    data = FleetData.load(out)
    v = FleetView(data)
    qtbot.addWidget(v)
    v.resize(1024, 768)
    v.show()
    assert v.group_box.isVisible() and v.group_box.count() == 2
    assert v.data.strategy == "inspect_edit" and v.threshold == 3000         # the largest group first
    assert v.spin.maximum() < 100_000 and v.figure_data("pre").edges[-1] < 10_000
    assert v.model.rowCount() == data.n == 5
    notes = [v.table.text(i, "error") for i in range(data.n)]
    assert sum(n.startswith("the same session as") for n in notes) == 2
    cc = next(i for i in range(data.n) if data.strings("strategy")[i] == "claude_code")
    assert v.table.text(cc, "at") == ""                                       # not in the group shown
    v.set_group(1)
    qtbot.waitUntil(lambda: v.reeval is not None and v.reeval.threshold == 150_000)
    assert v.data.strategy == "claude_code" and v.table.text(cc, "at") != ""
    assert v.figure_data("pre").edges[0] > 100_000


def test_the_fleets_axes_read_at_a_glance(qtbot, results):
    """Issue 23: "155k" on the context axes, whole numbers of sessions and compactions, the what-if line's label
    inside the plot on the side with the room (it ran under the axis at 150k: "at-if 150k")."""
    from compactscope.widgets.fleet_view import FleetView
    v = FleetView(FleetData.load(results), threshold=150_000)
    qtbot.addWidget(v)
    v.resize(1600, 1000)
    v.show()
    qtbot.wait(100)
    for key, p in v.plots.items():
        for side in ("left", "bottom"):
            ax = p.getAxis(side)
            lo, hi = sorted(ax.range)
            size = ax.geometry().height() if side == "left" else ax.geometry().width()
            strings = [s for spacing, values in ax.tickValues(lo, hi, max(size, 100.0))
                       for s in ax.tickStrings(values, 1.0, spacing)]
            assert all("e+" not in s and sum(c.isdigit() for c in s) <= 4 for s in strings), (key, side, strings)
            if side == "left" and key != "tokens":
                assert strings and all(s.isdigit() for s in strings), (key, strings)     # counts are whole
    pre = v.plots["pre"]
    bottom = pre.getAxis("bottom")
    lo, hi = sorted(bottom.range)
    labels = [s for sp, vals in bottom.tickValues(lo, hi, bottom.geometry().width())
              for s in bottom.tickStrings(vals, 1.0, sp)]
    assert any(s.endswith("k") for s in labels), labels
    box = pre.getViewBox().sceneBoundingRect()
    r = v.whatif_label.sceneBoundingRect()
    assert box.left() - 1 <= r.left() and r.right() <= box.right() + 1, (r, box)
