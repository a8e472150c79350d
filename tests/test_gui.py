"""The debugger window, offscreen with pytest-qt."""
from __future__ import annotations

import html
import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pytestqt")

from PySide6.QtCore import QMimeData, QPointF, Qt, QUrl  # noqa: E402
from PySide6.QtGui import QDropEvent, QImage  # noqa: E402

from compactscope.core.pipeline.align import DUPLICATED, align  # noqa: E402
from compactscope.core.loaders import LoadError, load  # noqa: E402
from compactscope.core.model.messages import ToolPairIndex  # noqa: E402
from compactscope.core.summarizers import CachedSummarizer, SummaryError  # noqa: E402
from helpers import BlockingSummarizer  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "assets" / "examples"
EXAMPLE_FILES = ["long_session.json", "boundary_case.json", "short_session.json"]
CORPUS_FILES = [
    "claude-code-viewer/1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl",
    "learn-claude-code/s01.json",
    "entireio-cli/37-995ebed6e4-2-full.jsonl",
    "swe-agent/function_calling_simple.traj.json",
]


pytestmark = pytest.mark.usefixtures("isolated_settings")


@pytest.fixture
def win(make_window):
    return make_window()


def open_wait(qtbot, w, path) -> None:
    with qtbot.waitSignal(w.sigTraceReady, timeout=60000):
        assert w.open_path(str(path)), getattr(w, "last_error", "")


def wait_run(qtbot, w, fn) -> None:
    with qtbot.waitSignal(w.sigTraceReady, timeout=60000):
        fn()


def check_stage_matches_trace(w) -> None:
    """The views show exactly the core trace's data for the current stage."""
    k = w.session.view.stage
    tr = w.session.trace
    msgs = tr.stages()[k][1]
    assert len(w.messages.model.messages) == len(msgs)
    assert all(a is b for a, b in zip(w.messages.model.messages, msgs))
    if k == 0:
        assert w.diff_panel.model.rowCount() == 0
        return
    step = tr.steps[k - 1]
    rows = w.diff_panel.model.rows
    assert rows == align(step)
    m = w.diff_panel.model
    # right column, in order, is the layer's output; left column (without repeats) is its input
    rights = [m.message(r, 1) for r in range(m.rowCount()) if m.rows[r].right is not None]
    lefts = [m.message(r, 0) for r in range(m.rowCount()) if m.rows[r].left is not None
             and m.rows[r].kind != DUPLICATED]
    assert len(rights) == len(step.messages) and all(a is b for a, b in zip(rights, step.messages))
    assert len(lefts) == len(step.input) and all(a is b for a, b in zip(lefts, step.input))
    # the stepper's words are the step's own explanation
    assert step.explain().split(":")[0][:30].replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;") \
        in w.stepper.explain.text()


def step_all_with_keyboard(qtbot, w) -> list[int]:
    w.messages.view.setFocus()
    qtbot.keyClick(w.messages.view, Qt.Key_End)
    assert w.session.view.stage == len(w.session.trace.steps)
    qtbot.keyClick(w.messages.view, Qt.Key_Home)
    assert w.session.view.stage == 0
    seen = [w.session.view.stage]
    check_stage_matches_trace(w)
    for k in range(1, len(w.session.trace.steps) + 1):
        qtbot.keyClick(w.messages.view, Qt.Key_Right)
        assert w.session.view.stage == k
        check_stage_matches_trace(w)
        seen.append(w.session.view.stage)
    qtbot.keyClick(w.messages.view, Qt.Key_Right)       # past the end stays at the end
    assert w.session.view.stage == len(w.session.trace.steps)
    qtbot.keyClick(w.messages.view, Qt.Key_Left)
    assert w.session.view.stage == len(w.session.trace.steps) - 1
    return seen


@pytest.mark.parametrize("name", EXAMPLE_FILES)
def test_examples_step_all_layers(qtbot, win, name):
    path = EXAMPLES / name
    if not path.is_file():
        pytest.skip(f"{name} not generated")
    open_wait(qtbot, win, path)
    assert len(win.stepper.stages) == len(win.session.trace.steps) + 1
    seen = step_all_with_keyboard(qtbot, win)
    assert seen == list(range(len(win.session.trace.steps) + 1))
    statuses = [s[2] for s in win.stepper.stages[1:]]
    assert statuses == ["failed" if s.error else "changed" if s.changed else "unchanged" for s in win.session.trace.steps]
    if name == "short_session.json":
        assert all(not s.changed for s in win.session.trace.steps)
        assert "no change" in win.stepper._explanations[2]
    if name == "long_session.json":
        assert all(s.changed for s in win.session.trace.steps)


@pytest.mark.parametrize("rel", CORPUS_FILES)
def test_corpus_files(qtbot, win, corpus, rel):
    path = corpus / rel
    if not path.is_file():
        pytest.skip(f"{rel} not in the corpus")
    try:
        load(path)
    except LoadError as e:
        # a file the loaders cannot read yet: the window says so, names the file, and keeps going
        assert not win.open_path(str(path))
        assert win.banner.isVisible() and path.name in win.banner.text() and "What to do" in win.banner.text()
        assert html.escape(e.message, quote=False) in win.banner.text()      # the loader's own words
        return
    open_wait(qtbot, win, path)
    step_all_with_keyboard(qtbot, win)


def test_models_pass_qtmodeltester(qtbot, qtmodeltester, win):
    open_wait(qtbot, win, EXAMPLES / "long_session.json")
    qtmodeltester.check(win.messages.model)
    for k in range(1, len(win.session.trace.steps) + 1):
        win.stepper.set_current(k)
        qtmodeltester.check(win.diff_panel.model)
    win.messages.model.set_filters(role="user")
    qtmodeltester.check(win.messages.model)


def test_selecting_tool_result_highlights_its_partner(qtbot, win):
    open_wait(qtbot, win, EXAMPLES / "long_session.json")
    win.stepper.first()
    msgs = win.messages.model.messages
    pairs = ToolPairIndex(msgs)
    pair = next(p for p in pairs if p.complete and p.use[0] != p.result[0])
    res_msg, use_msg = pair.result[0], pair.use[0]
    # click on the tool_result row
    win.messages.view.scrollTo(win.messages.model.index_of_message(res_msg))
    rect = win.messages.view.visualRect(win.messages.model.index_of_message(res_msg))
    qtbot.mouseClick(win.messages.view.viewport(), Qt.LeftButton, pos=rect.center())
    assert win.messages.view.currentIndex().data(Qt.UserRole + 2) == res_msg
    assert use_msg in win.messages.model.highlight
    from compactscope.widgets.message_model import HighlightRole
    assert win.messages.model.index_of_message(use_msg).data(HighlightRole) is True
    assert win.messages.model.index_of_message(res_msg).data(HighlightRole) is False
    # the jump command goes to the partner
    assert win.jump_to_partner()
    assert win.messages.view.currentIndex().data(Qt.UserRole + 2) == use_msg
    assert res_msg in win.messages.model.highlight


def test_dragging_the_threshold_reruns_the_pipeline(qtbot, win):
    open_wait(qtbot, win, EXAMPLES / "long_session.json")
    tp = win.session.setup.strategy.threshold_param
    runs = win.session.runs
    assert win.session.trace.step("compact_history").triggered is True
    line = win.chart.threshold
    assert line.value() == win.session.setup.params[tp]
    new = 400_000
    wait_run(qtbot, win, lambda: (line.setValue(new), line.sigPositionChangeFinished.emit(line)))
    assert win.session.runs == runs + 1
    assert win.session.trace.params[tp] == new
    assert win.params_panel.values()[tp] == new
    assert win.session.trace.step("compact_history").triggered is False     # now under the limit
    # the chart shows the new run's sizes
    x, y = win.chart.size_curve.getData()
    assert list(y) == [win.session.meter.size(win.session.trace.input)] + [s.size_after for s in win.session.trace.steps]


def test_param_edit_reruns(qtbot, win):
    open_wait(qtbot, win, EXAMPLES / "long_session.json")
    assert len(win.params_panel.editors) == len(win.session.setup.strategy.params)
    _, ed = win.params_panel.editors["max_messages"]
    wait_run(qtbot, win, lambda: (ed.setValue(500), win.params_panel.flush()))
    assert win.session.trace.params["max_messages"] == 500
    assert not win.session.trace.step("snip_compact").changed


def test_readme_variant_beside_guarded(qtbot, win):
    path = EXAMPLES / "boundary_case.json"
    open_wait(qtbot, win, path)
    assert win.session.result.variant("readme").trace is not None
    k = [s.layer for s in win.session.trace.steps].index("snip_compact") + 1
    win.stepper.set_current(k)
    lines = win.explainer.lines_guarded
    v = win.session.trace.steps[k - 1].vars
    he0, he1, ts0, ts1 = v["head_end_initial"], v["head_end"], v["tail_start_initial"], v["tail_start"]
    assert he1 != he0 and ts1 != ts0          # boundary_case: both guards move
    assert any(f"after the head guard: {he1}, because message {he0 - 1} is an assistant tool_use" in line
               for line in lines)
    assert any(f"after the tail guard: {ts1}, because message {ts0} is a user tool_result" in line for line in lines)
    text = win.explainer.toPlainText()
    assert "README variant" in text
    readme_snip = win.session.result.variant("readme").trace.step("snip_compact")
    # here both cuts keep every pair (the README code differs only at overlaps and the list's ends): each
    # column says so, and none lists broken pairs
    assert not [f for f in readme_snip.findings if f.code in ("orphan_tool_result", "unanswered_tool_use")]
    assert text.count("every tool_use still has its tool_result") == 2 and "broken tool pairs" not in text
    # cut lines in the message list, before the layer: where the cut started and where the guards moved it
    win.set_view_mode("before")
    he = win.session.trace.steps[k - 1].vars["head_end"]
    assert any(style == "cut" for _, style in win.messages.model.cuts[he])
    assert win.messages.model.cuts.get(win.session.trace.steps[k - 1].vars["head_end_initial"])


def test_search_filters_and_zoom(qtbot, win):
    open_wait(qtbot, win, EXAMPLES / "long_session.json")
    win.stepper.first()
    qtbot.keyClick(win, Qt.Key_F, Qt.ControlModifier)
    assert win.messages.search.hasFocus()
    qtbot.keyClicks(win.messages.search, "pool.py")
    expected = {i for i, m in enumerate(win.messages.model.messages) if "pool.py" in json.dumps(m, ensure_ascii=False).lower()
                or "pool.py" in str(m).lower()}
    assert win.messages.model.matches and win.messages.model.matches <= expected
    qtbot.keyClick(win.messages.search, Qt.Key_Return)
    assert win.messages.view.currentIndex().data(Qt.UserRole + 2) == min(win.messages.model.matches)
    win.messages.matches_only.setChecked(True)
    assert win.messages.model.rowCount() == len(win.messages.model.matches)
    win.messages.matches_only.setChecked(False)
    win.messages.search.clear()
    win.messages.role_filter.setCurrentText("assistant")
    assert win.messages.model.rowCount() > 0
    assert all(win.messages.model.messages[mi]["role"] == "assistant" for mi in win.messages.model.rows)
    win.messages.role_filter.setCurrentIndex(0)
    k = [s.layer for s in win.session.trace.steps].index("micro_compact") + 1
    win.stepper.set_current(k)
    win.messages.changed_only.setChecked(True)
    changed = {r.right for r in align(win.session.trace.steps[k - 1]) if r.kind == "changed"}
    assert set(win.messages.model.rows) == changed and changed
    win.messages.changed_only.setChecked(False)
    pt = win.messages.view.font().pointSizeF()
    qtbot.keyClick(win.messages.view, Qt.Key_Plus, Qt.ControlModifier)
    assert win.messages.view.font().pointSizeF() > pt
    qtbot.keyClick(win.messages.view, Qt.Key_Minus, Qt.ControlModifier)
    assert win.messages.view.font().pointSizeF() == pt


def test_inspector_shows_persisted_file(qtbot, win):
    open_wait(qtbot, win, EXAMPLES / "long_session.json")
    step = win.session.trace.step("tool_result_budget")
    persist = next(e for e in step.edits if e.kind == "persist")
    k = win.session.trace.steps.index(step) + 1
    win.stepper.set_current(k)
    win._block_selected(persist.out, persist.block)
    full = Path(persist.path).read_text(encoding="utf-8")
    assert len(full) == persist.old_len
    assert full[-200:] in win.inspector.persisted.toPlainText()
    assert "Full output" in win.inspector.text.toPlainText()
    assert win.inspector.text.isReadOnly()
    win.inspector.copy()
    from PySide6.QtGui import QGuiApplication
    assert QGuiApplication.clipboard().text() == win.inspector.visible_text()


def test_settings_recent_files_and_layout(qtbot, make_window):
    w = make_window()
    open_wait(qtbot, w, EXAMPLES / "short_session.json")
    w.set_zoom(3)
    with qtbot.waitSignal(w.sigTraceReady, timeout=60000):
        w.params_panel.set_value("keep_recent", 5)
        w.params_panel._changed()
        w.params_panel.flush()
    w.close()
    w2 = make_window()
    assert str((EXAMPLES / "short_session.json").resolve()) == w2.settings.recent_files()[0]
    assert w2.zoom == 3
    assert w2.recent_menu.actions()[0].text().endswith("short_session.json")
    assert w2.session.setup.params["keep_recent"] == 5 and w2.params_panel.values()["keep_recent"] == 5


def test_drop_opens_file(qtbot, win):
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(EXAMPLES / "short_session.json"))])
    ev = QDropEvent(QPointF(10, 10), Qt.CopyAction, mime, Qt.LeftButton, Qt.NoModifier)
    wait_run(qtbot, win, lambda: win.dropEvent(ev))
    assert win.session.source.path.endswith("short_session.json")
    assert len(win.messages.model.messages) == len(load(EXAMPLES / "short_session.json").main.messages)


def test_bad_file_shows_what_to_do(qtbot, win, tmp_path):
    bad = tmp_path / "broken.json"
    bad.write_text('[{"role": "user", "content": "hi"},\n{"role": ', encoding="utf-8")
    assert not win.open_path(str(bad))
    assert win.banner.isVisible()
    assert "broken.json" in win.banner.text() and "What to do" in win.banner.text()
    with pytest.raises(LoadError) as e:
        load(bad)
    assert html.escape(e.value.message, quote=False) in win.banner.text()    # the loader's own words, line and all


class _Failing:
    name = "failing"

    def summarize(self, request, cancel=None):
        raise SummaryError("no API key", hint="set ANTHROPIC_API_KEY or pick the offline summarizer", kind="auth")


def test_summary_error_marks_step_failed(qtbot, win):
    win.session.setup.summarizers["failing"] = CachedSummarizer(_Failing())
    win.session.setup.set_summarizer("failing", run=False)
    open_wait(qtbot, win, EXAMPLES / "long_session.json")
    step = win.session.trace.step("compact_history")
    assert step.error and "no API key" in step.error
    k = win.session.trace.steps.index(step) + 1
    assert win.stepper.stages[k][2] == "failed"
    assert win.banner.isVisible() and "ANTHROPIC_API_KEY" in win.banner.text() and "nothing is lost" in \
        win.banner.text()
    win.stepper.set_current(k)
    assert all(a is b for a, b in zip(win.messages.model.messages, step.input))     # input kept


def test_slow_summary_runs_in_worker_and_cancels(qtbot, win):
    blocking = BlockingSummarizer()
    win.session.setup.summarizers["blocking"] = CachedSummarizer(blocking)
    win.session.setup.set_summarizer("blocking", run=False)
    assert win.open_path(str(EXAMPLES / "long_session.json"))
    qtbot.waitUntil(blocking.entered.is_set, timeout=20000)
    # the window is responsive while the summary is pending, and says which layer it waits for
    assert win.session.pipeline.busy and win.cancel_btn.isVisibleTo(win)
    qtbot.waitUntil(lambda: "4/4" in win.progress_label.text() and "(LLM)" in win.progress_label.text(),
                    timeout=5000)
    qtbot.keyClick(win.messages.view, Qt.Key_End)
    qtbot.wait(20)
    with qtbot.waitSignal(win.sigTraceReady, timeout=20000):
        win.cancel_btn.click()
    assert win.session.result.cancelled
    assert win.session.trace.step("compact_history").error


def test_screenshot_command_writes_png(tmp_path):
    out = tmp_path / "shot.png"
    r = subprocess.run([sys.executable, "-m", "compactscope", str(EXAMPLES / "long_session.json"), "--step", "2",
                        "--screenshot", str(out), "--size", "1200x800"], cwd=ROOT, capture_output=True, text=True,
                       timeout=120, env={**__import__("os").environ, "QT_QPA_PLATFORM": "offscreen"})
    assert r.returncode == 0, r.stderr
    img = QImage(str(out))
    assert img.width() == 1200 and img.height() == 800
    colors = {img.pixel(x, y) for x in range(0, img.width(), 13) for y in range(0, img.height(), 13)}
    assert len(colors) > 20          # not blank


def test_screenshot_bad_file_exits_2(tmp_path):
    r = subprocess.run([sys.executable, "-m", "compactscope", str(tmp_path / "missing.json"), "--screenshot",
                        str(tmp_path / "x.png")], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "missing.json" in r.stderr and "Traceback" not in r.stderr


def test_diff_hide_unchanged_rows(qtbot, win, qtmodeltester):
    open_wait(qtbot, win, EXAMPLES / "long_session.json")
    k = [s.layer for s in win.session.trace.steps].index("micro_compact") + 1
    win.stepper.set_current(k)
    rows = align(win.session.trace.steps[k - 1])
    win.diff_panel.changes_only.setChecked(True)
    assert win.diff_panel.model.rows == [r for r in rows if r.kind != "kept"] and win.diff_panel.model.rows
    qtmodeltester.check(win.diff_panel.model)
    assert f"{sum(1 for r in rows if r.kind == 'changed')}</b> changed" in win.diff_panel.counts.text()
    win.diff_panel.changes_only.setChecked(False)
    assert win.diff_panel.model.rows == rows


def test_timeline_tab_runs_replay_and_opens_a_call(qtbot, win):
    if win.timeline_panel.timeline is None:
        pytest.skip("widgets/timeline.py is not available")
    open_wait(qtbot, win, EXAMPLES / "long_session.json")
    with qtbot.waitSignal(win.sigReplayReady, timeout=120000):
        win.tabs.setCurrentIndex(2)
    rr = win.session.replay.replay_result
    assert rr is not None and len(rr.calls) > 0 and win.timeline_panel.timeline.result is rr
    i = len(rr.calls) - 1
    with qtbot.waitSignal(win.sigTraceReady, timeout=60000):
        win.timeline_panel.timeline.sigCallSelected.emit(i)
    assert len(win.session.trace.input) == rr.calls[i].messages_before


def test_object_names_for_automation(win):
    from PySide6.QtWidgets import QWidget
    for name in ("messageView", "diffView", "layerStepper", "tokenChart", "inspector", "paramsPanel",
                 "findingsPanel"):
        w = win.findChild(QWidget, name)
        assert w is not None, name


def test_selection_follows_the_message_across_stages(qtbot, win):
    open_wait(qtbot, win, EXAMPLES / "long_session.json")
    win.stepper.first()
    snip = win.session.trace.step("snip_compact")
    last = len(win.session.trace.input) - 1
    win.select_message(last)
    obj = win.messages.model.messages[last]
    win.stepper.set_current(win.session.trace.steps.index(snip) + 1)
    cur = win.messages.view.currentIndex().data(Qt.UserRole + 2)
    assert cur == len(snip.messages) - 1 and win.messages.model.messages[cur] is snip.messages[-1]
    k = win.session.trace.steps.index(snip) + 1
    assert win.map_index(last, 0, k) == cur and win.map_index(cur, k, 0) == last
    # switching to "before" keeps the message selected (found in the layer's input)
    win.set_view_mode("before")
    assert win.messages.view.currentIndex().data(Qt.UserRole + 2) == win.map_index(last, 0, k - 1)
    win.set_view_mode("after")
    assert win.messages.view.currentIndex().data(Qt.UserRole + 2) == cur
    # a re-run keeps it too
    with qtbot.waitSignal(win.sigTraceReady, timeout=60000):
        win.run_pipeline()
    assert win.messages.view.currentIndex().data(Qt.UserRole + 2) == cur
    # a message the snip removed has no place after it
    removed = snip.vars["head_end"]
    win.set_view_mode("before")
    win.select_message(removed)
    win.set_view_mode("after")
    assert win.map_index(removed, k - 1, k) is None
    assert obj is win.session.trace.input[last]


def test_clicking_a_bar_selects_the_message(qtbot, win):
    from PySide6.QtCore import QPointF
    open_wait(qtbot, win, EXAMPLES / "long_session.json")
    win.stepper.first()
    qtbot.wait(50)
    chart = win.chart
    target = 12
    vb = chart.bar_plot.vb
    scene_pos = vb.mapViewToScene(QPointF(target, 1.0))

    class Ev:
        def scenePos(self):
            return scene_pos
    with qtbot.waitSignal(chart.sigMessageClicked) as blocker:
        chart._clicked(Ev())
    assert blocker.args == [target]
    assert win.messages.view.currentIndex().data(Qt.UserRole + 2) == target
    assert chart.sel_line.value() == target


def test_play_expand_and_every_strategy(qtbot, win):
    from compactscope.core import strategies
    open_wait(qtbot, win, EXAMPLES / "long_session.json")
    win.stepper.first()
    win.stepper._timer.setInterval(10)
    win.stepper.toggle_play()
    qtbot.waitUntil(lambda: win.session.view.stage == len(win.session.trace.steps) and not win.stepper.playing, timeout=5000)
    # expanding a row makes it taller (lines for the block contents)
    win.stepper.first()
    mi = next(i for i, m in enumerate(win.messages.model.messages) if isinstance(m.get("content"), list)
              and any(b.get("type") == "tool_result" and len(str(b.get("content"))) > 200 for b in m["content"]))
    ix = win.messages.model.index_of_message(mi)
    h0 = win.messages.view.visualRect(ix).height()
    win.messages.model.toggle_expanded(mi)
    qtbot.waitUntil(lambda: win.messages.view.visualRect(win.messages.model.index_of_message(mi)).height() > h0, timeout=3000)
    for name in strategies.available():
        with qtbot.waitSignal(win.sigTraceReady, timeout=60000):
            if win.params_panel.strategy_box.currentText() == name:
                win.run_pipeline()
            else:
                win.params_panel.strategy_box.setCurrentText(name)
        assert win.session.trace.strategy == name
        assert len(win.params_panel.editors) == len(strategies.get(name).params)
        step_all_with_keyboard(qtbot, win)


def test_summary_names_its_summarizer(qtbot, win):
    win.session.setup.set_summarizer("fixed:The goal is X.", run=False)
    open_wait(qtbot, win, EXAMPLES / "long_session.json")
    step = win.session.trace.step("compact_history")
    assert step.summary["summarizer"]
    win.stepper.set_current(win.session.trace.steps.index(step) + 1)
    out = next(e.out for e in step.edits if e.kind == "summary")
    assert win.messages.model.badges[out].startswith("summary by " + step.summary["summarizer"].split(" (")[0])
    texts = [win.diff_panel.edits.item(i).text() for i in range(win.diff_panel.edits.count())]
    assert any(t.startswith("summary written by " + step.summary["summarizer"]) for t in texts)
    assert "The goal is X." in json.dumps(win.messages.model.messages[out])


def test_readme_duplicates_shown(qtbot, win, tmp_path):
    """Guards push head_end past tail_start: the README variant duplicates messages; the window shows it."""
    msgs = [{"role": "user", "content": "go"}, {"role": "assistant", "content": "ok"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": f"t{k}", "name": "a", "input": {}}
                                              for k in range(3)]}]
    msgs += [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{k}", "content": "r"}]}
             for k in range(3)]
    msgs += [{"role": "assistant", "content": "done"}, {"role": "user", "content": "next"}]
    path = tmp_path / "dup.json"
    path.write_text(json.dumps(msgs), encoding="utf-8")
    _, ed = win.params_panel.editors["max_messages"]
    win.params_panel.set_value("max_messages", 6)
    win.session.setup.set_params(win.params_panel.values())
    open_wait(qtbot, win, path)
    k = [s.layer for s in win.session.trace.steps].index("snip_compact") + 1
    win.stepper.set_current(k)
    readme = win.session.result.variant("readme").trace.step("snip_compact")
    assert readme.vars["snipped"] < 0
    assert any("appear twice" in line for line in win.explainer.lines_variant)
    assert "appear twice" in win.explainer.toPlainText()
    # now show the README variant itself: duplicated rows in the diff and the list
    win.params_panel.set_value("variant", "readme")
    with qtbot.waitSignal(win.sigTraceReady, timeout=60000):
        win.params_panel.sigParamsChanged.emit(win.params_panel.values())
    step = win.session.trace.step("snip_compact")
    dups = [r for r in win.diff_panel.model.rows if r.kind == DUPLICATED]
    assert [r.left for r in dups] == step.edits[-1].data["duplicated"]
    assert "duplicated" in win.messages.model.status.values()


def test_no_display_says_what_to_do(tmp_path):
    import os
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    if not sys.platform.startswith("linux"):
        pytest.skip("display detection is for Linux")
    r = subprocess.run([sys.executable, "-m", "compactscope", str(EXAMPLES / "short_session.json")], cwd=ROOT,
                       capture_output=True, text=True, timeout=60, env=env)
    assert r.returncode == 2 and "--screenshot" in r.stderr and "Traceback" not in r.stderr
