"""The Events dock's views with the tens of thousands of entries of a 100k-message file (issue 27): the "Kept and
lost" box lists every compaction, in order, filled in one go and as wide as a title whatever their number; the
events list's counts and column widths come with its rows; a parameter change keeps what the dock shows until the
new events are there, saying they are computed again."""
from __future__ import annotations

from PySide6.QtWidgets import QComboBox

from compactscope.app.events_dock import make_pairs
from compactscope.widgets.events_panel import EventRow, EventsPanel, row_stats
from compactscope.widgets.retention_view import Pair, RetentionView, Side

from conftest import EXAMPLES

EXAMPLE = EXAMPLES / "cc_real_compaction.jsonl"


def _pairs(n: int) -> list[Pair]:
    return [Pair(f"Simulated compaction before call {k}", None,
                 Side(f"Simulated by s08, before call {k}", f"summary {k}")) for k in range(n)]


def test_the_kept_and_lost_box_lists_every_compaction_in_order(qtbot):
    v = RetentionView()
    qtbot.addWidget(v)
    v.show()
    empty_width = v.box.sizeHint().width()
    pairs = _pairs(20_000)
    v.set_pairs(pairs)
    assert v.box.count() == 20_000 and v.box.isEnabled()
    assert [v.box.itemText(k) for k in (0, 1, 9_999, 19_999)] == [pairs[k].title for k in (0, 1, 9_999, 19_999)]
    assert v.box.currentIndex() == 0 and "before call 0" in v.simulated.toPlainText()
    # as wide as a title, whatever the number of entries (not measured over each of them)
    assert v.box.sizeHint().width() == empty_width
    assert v.box.sizeAdjustPolicy() == QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon
    assert v.box.fontMetrics().horizontalAdvance(pairs[0].title) <= v.box.width()
    # choosing one shows it; filled again, the box holds the new entries only
    seen = []
    v.sigPairChanged.connect(seen.append)
    v.box.setCurrentIndex(12_345)
    assert seen == [12_345] and "before call 12345" in v.simulated.toPlainText()
    v.set_pairs(pairs[:3])
    assert v.box.count() == 3 and v.box.currentIndex() == 0 and "before call 0" in v.simulated.toPlainText()
    v.set_pairs([], busy=True)
    assert v.box.count() == 0 and not v.box.isEnabled() and "Computing" in v.real.toPlainText()


def test_the_box_drops_its_list_down_with_every_entry(qtbot):
    v = RetentionView()
    qtbot.addWidget(v)
    v.show()
    v.set_pairs(_pairs(5_000))
    v.box.showPopup()
    view = v.box.view()
    assert view.model().rowCount() == 5_000 and view.uniformItemSizes()
    assert view.model().index(4_999, 0).data() == "Simulated compaction before call 4999"
    v.box.hidePopup()


def test_the_events_list_counts_come_with_its_rows(qtbot):
    rows = [EventRow("real_compaction", 3, 0, "a"), EventRow("finding", 7, 2, "b"),
            EventRow("simulated_compaction", 12, 1, "c"), EventRow("finding", None, 2, "d")]
    st = row_stats(rows)
    assert st.counts == (("real_compaction", 1), ("finding", 2), ("simulated_compaction", 1))
    assert (st.max_call, st.max_segment) == (12, 2)
    p = EventsPanel()
    qtbot.addWidget(p)
    p.set_events(rows, busy=False, stats=st)
    assert p.tree.topLevelItemCount() == 4 and p.rows is rows
    assert p.summary.text().startswith("4 event(s): 1 \u00d7 real compaction, 2 \u00d7 API finding")
    assert "replaying" not in p.summary.text()
    # computed again: the rows stay, the line says so; made without stats, the panel counts them itself
    p.set_busy(True)
    assert p.tree.topLevelItemCount() == 4 and "replaying the simulated compactions" in p.summary.text()
    p.set_events(rows[:1], busy=False)
    assert p.stats.counts == (("real_compaction", 1),) and p.summary.text().startswith("1 event(s)")
    assert p.tree.columnWidth(0) >= p.tree.fontMetrics().horizontalAdvance("12")


def test_a_parameter_change_keeps_the_events_shown_until_the_new_ones_are_there(qtbot, make_window):
    w = make_window()
    w.session.setup.set_strategy("claude_code")
    assert w.open_path(str(EXAMPLE), remember=False)
    ec = w.events_controller
    assert ec.wait(120000)
    rows, pairs = list(ec.panel.rows), list(ec.retention_view.pairs)
    assert rows and pairs and ec.retention_view.box.count() == len(pairs)
    ec.refresh()                      # what a parameter change does once its run is shown
    assert ec.worker.busy or ec.replay is None
    assert ec.panel.rows == rows and ec.retention_view.pairs == pairs
    assert "replaying the simulated compactions" in ec.panel.summary.text()
    assert ec.wait(120000)
    assert [r.text for r in ec.panel.rows] == [r.text for r in rows]
    assert [p.title for p in ec.retention_view.pairs] == [p.title for p in pairs]
    assert ec.retention_view.box.count() == len(pairs)
    assert "replaying" not in ec.panel.summary.text()
    # the worker made what the window's thread shows, with the same titles as made there
    again, _by_call = make_pairs(ec.retention, True, ec._paired, w.session.setup.strategy.name)
    assert [p.title for p in again] == [p.title for p in ec.retention_view.pairs]


def test_a_parameter_change_reuses_the_findings_of_the_same_conversation(qtbot, make_window, monkeypatch):
    """The API checker's findings of the real contexts depend on the conversation alone: a parameter change lists
    them again without checking every message again; another file is checked."""
    from compactscope.core.analysis import checker
    real, calls = checker.check_conversation, []
    monkeypatch.setattr(checker, "check_conversation", lambda conv, **k: calls.append(conv) or real(conv, **k))
    w = make_window()
    w.session.setup.set_strategy("s08")
    assert w.open_path(str(EXAMPLES / "readme_parallel.json"), remember=False)
    ec = w.events_controller
    assert ec.wait(120000)
    conv = w.session.source.conversation
    found = [r.text for r in ec.panel.rows if r.kind == "finding"]
    assert found and calls == [conv]
    w.session.setup.set_param("keep_recent", 1)
    assert ec.wait(120000) and w.session.setup.params["keep_recent"] == 1
    assert [r.text for r in ec.panel.rows if r.kind == "finding"] == found and calls == [conv]
    assert ec.replay is not None and ec.replay.params["keep_recent"] == 1
    assert w.open_path(str(EXAMPLES / "short_session.json"), remember=False)
    assert ec.wait(120000)
    assert len(calls) == 2 and calls[1] is w.session.source.conversation is not conv


def test_the_timeline_shows_the_totals_made_with_its_replay(qtbot, make_window):
    w = make_window()
    w.session.setup.set_strategy("claude_code")
    assert w.open_path(str(EXAMPLE), remember=False)
    assert w.events_controller.wait(120000)
    w.session.view.set_tab("timeline")
    assert w.wait_idle(120000)
    rp = w.session.replay
    results = rp.replay_results
    assert results and rp.replay_totals == [r.totals() for r in results]
    assert rp.iterations == results[0].iterations()
    tl, table = w.timeline_panel.timeline, w.timeline_panel.comparison
    t = results[0].totals()
    assert tl.info.text().startswith(f"{results[0].label}: {len(results[0].calls):,} calls, {t['compactions']} compactions")
    assert table.rowCount() == len(results) and table.item(0, 0).data(0x0100) == t[table_key(0)]
    assert "model call #0 of" in w.call_caption(0)
    # the markers of each layer that fired: one per call it fired at, at the size after that call
    for name, m in tl.markers.layers.items():
        fired = [c.index for c in results[0].calls if name in c.fired]
        assert list(m.data["x"]) == fired


def table_key(j: int) -> str:
    from compactscope.widgets.comparison_table import COMPARISON_COLUMNS
    return COMPARISON_COLUMNS[j][0]


def test_the_rows_and_pairs_a_view_replaces_are_freed_elsewhere_and_what_others_hold_stays(qtbot):
    """The events list and the Kept and lost box let go of what they showed in pieces, in the release thread (100k
    rows and 50k pairs freed at once held the window); a list someone else still holds is left whole."""
    import time
    import weakref
    p, v = EventsPanel(), RetentionView()
    qtbot.addWidget(p)
    qtbot.addWidget(v)
    p.set_events([EventRow("finding", k, 0, str(k)) for k in range(600)])
    first = weakref.ref(p.rows[0])
    mine = [EventRow("finding", 1, 0, "mine")]
    p.set_events(mine)
    qtbot.waitUntil(lambda: first() is None, timeout=10000)
    p.set_events([EventRow("finding", 2, 0, "new")])
    time.sleep(1.2)
    assert mine == [EventRow("finding", 1, 0, "mine")] and p.rows[0].text == "new"
    v.set_pairs([])
    v.set_pairs([])
    assert v.pairs == [] and not v.box.isEnabled()
