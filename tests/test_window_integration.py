"""Issues 5 and 6 in the window: the hermes-agent verdict, the boundary explainer for every
strategy, the replay comparison, playback that drives the stepper, the iteration budget."""
from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pytestqt")
pytest.importorskip("pyqtgraph")

from PySide6.QtCore import Qt  # noqa: E402

from compactscope.core.analysis.explain import boundary_explanation, find_boundary_step  # noqa: E402
from compactscope.core.oracles.hermes_agent import ABSENT, MATCH, check_trace, module  # noqa: E402
from compactscope.core.loaders import load  # noqa: E402
from compactscope.core.analysis.moa import budget_for_replay  # noqa: E402
from compactscope.core.pipeline.engine import Engine  # noqa: E402
from compactscope.core.replay import parse_run_spec, replay  # noqa: E402
from compactscope.core.summarizers import make_summarizer  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
LONG = ROOT / "assets" / "examples" / "long_session.json"


@pytest.fixture
def win(make_window):
    w = make_window()
    yield w
    w.timeline_panel.timeline.play(False)
    w.session.close()


def conv():
    return load(str(LONG)).conversations[0]


def hermes_window(qtbot, win, **params):
    win.set_strategy("hermes")
    win.session.setup.set_params(params)
    with qtbot.waitSignal(win.sigOracleReady, timeout=60000) as blocker:
        assert win.open_path(str(LONG))
    return blocker.args[0]


def stage_of(win, layer):
    return [s.layer for s in win.session.trace.steps].index(layer) + 1


# ------------------------------------------------------------------ 1. hermes in the window
def test_hermes_run_shows_the_oracle_verdict(qtbot, win):
    verdict = hermes_window(qtbot, win, trigger="always")
    assert win.session.trace.strategy == "hermes" and win.session.trace.step("hermes_summarize").summary
    expected = check_trace(win.session.trace)                # the same check, run here on the GUI thread
    assert verdict == expected == win.session.crosscheck.check.verdict.text
    if module() is not None:
        assert verdict == MATCH
    else:
        assert verdict == ABSENT
    assert win.oracle_label.isVisible() and verdict in win.oracle_label.text()
    # the verdict is also the last line of the step explanation, at every stage
    for k in (0, stage_of(win, "hermes_assemble")):
        win.stepper.set_current(k)
        last = win.diff_panel.edits.item(win.diff_panel.edits.count() - 1).text()
        assert "hermes-agent 0.19.0 cross-check" in last and verdict in last


def test_oracle_reports_a_difference(qtbot, win, monkeypatch):
    """A run whose output differs from hermes-agent's: the window names the first difference."""
    if module() is None:
        pytest.skip("hermes-agent is not installed")
    hermes_window(qtbot, win, trigger="always")
    import compactscope.core.oracles.hermes_agent as ho
    real = ho.first_difference

    def tampered(ours, theirs):
        ours = [dict(m) for m in ours]
        ours[-1]["content"] = "tampered"
        return real(ours, theirs)
    monkeypatch.setattr(ho, "first_difference", tampered)
    with qtbot.waitSignal(win.sigOracleReady, timeout=60000) as blocker:
        win.run_pipeline()
    v = blocker.args[0]
    assert v != MATCH and v == win.session.crosscheck.check.verdict.text
    assert win.oracle_label.text().startswith("\u2716 " + v[:40])          # shown, marked, maybe shortened
    assert v in win.oracle_label.toolTip()
    assert v.startswith(f"message {len(win.session.trace.output) - 1} ") and "tampered" in v


def test_hermes_boundaries_explained_in_the_boundary_tab(qtbot, win):
    hermes_window(qtbot, win, trigger="always")
    k = stage_of(win, "hermes_boundaries")
    win.stepper.set_current(k)
    step = win.session.trace.steps[k - 1]
    text = win.explainer.toPlainText()
    assert "no snip layer ran" not in text and "did not cut" not in text
    assert win.tabs.tabText(win.tabs.indexOf(win.explainer)) == "Boundaries"
    cs, ce = step.vars["compress_start"], step.vars["compress_end"]
    moves = [e for e in step.edits if e.kind == "boundary"]
    assert moves, "the example moves the cut"
    for e in moves:                                  # every move, with its reason
        assert f"{e.var} {e.old} \u2192 {e.new}:" in text
    assert f"summarised: {cs}..{ce - 1} ({ce - cs} messages)" in text
    assert f"last real user message: #{step.vars['last_user']}" in text
    # the reason of the token walk agrees with the numbers: this tail is heavier than the ceiling
    assert step.vars["tail_tokens"] > step.vars["soft_ceiling"]
    assert "over the soft ceiling" in text and "fit under" not in text
    # cut lines in the message list at compress_start and compress_end
    assert cs in win.messages.model.cuts and ce in win.messages.model.cuts
    assert "compress_start" in win.messages.model.cuts[cs][0][0]
    # the verdict sits under the boundaries
    assert win.session.crosscheck.check.verdict.text in text


def test_claude_code_snip_explained_when_on_and_off(qtbot, win):
    win.set_strategy("claude_code")
    with qtbot.waitSignal(win.sigTraceReady, timeout=60000):
        assert win.open_path(str(LONG))
    win.stepper.set_current(stage_of(win, "snip_compact"))
    assert "snip is off" in win.explainer.toPlainText()
    assert win.tabs.tabText(win.tabs.indexOf(win.explainer)) == "Snip boundary"
    with qtbot.waitSignal(win.sigTraceReady, timeout=60000):
        win.params_panel.set_value("snip_max_messages", 30)
        win.session.setup.set_params(win.params_panel.values())
    step = win.session.trace.step("snip_compact")
    win.stepper.set_current(stage_of(win, "snip_compact"))
    text = win.explainer.toPlainText()
    ts = step.vars["tail_start"]
    assert step.vars["snipped"] > 0 and f"after the tail guard: {ts}, because" in text
    assert f"snipped {step.vars['snipped']}" in text


def test_boundary_explanation_is_pure_and_generic():
    c = conv()
    tr = Engine("hermes", {"trigger": "always"}, summarizer=make_summarizer("offline")).run(c.messages, conversation=c)
    step = find_boundary_step(tr)
    assert step.layer == "hermes_boundaries"
    ex = boundary_explanation(step, "hermes")
    assert ex.kind == "hermes"
    assert len([t for t in ex.texts("move") if "\u2192" in t]) == sum(1 for e in step.edits if e.kind == "boundary")
    assert [i for i, _ in ex.cuts] == [step.vars["compress_start"], step.vars["compress_end"]]
    # not triggered: a sentence why, no cuts
    tr2 = Engine("hermes", {}).run(c.messages, conversation=c)
    ex2 = boundary_explanation(find_boundary_step(tr2))
    assert not ex2.cuts and "prune gate" in ex2.texts()[0]
    # s08: the snip rows
    tr3 = Engine("s08", {}).run(c.messages, conversation=c)
    ex3 = boundary_explanation(find_boundary_step(tr3))
    assert ex3.kind == "snip" and any("because" in t for t in ex3.texts("move"))
    assert boundary_explanation(None, "x").kind == "none"


# ------------------------------------------------------------------ 2. replay comparison and playback
def open_timeline(qtbot, win, compare=""):
    with qtbot.waitSignal(win.sigTraceReady, timeout=60000):
        assert win.open_path(str(LONG))
    if compare:
        win.set_compare(compare)
    with qtbot.waitSignal(win.sigReplayReady, timeout=120000):
        win.tabs.setCurrentIndex(2)
    return win.session.replay.replay_results


def test_compare_overlays_curves_and_fills_the_table(qtbot, win):
    results = open_timeline(qtbot, win, "hermes;claude_code;tight=s08:max_messages=20")
    labels = [r.label for r in results]
    assert labels == ["current: s08", "claude_code (defaults)", "hermes (defaults)", "tight"]
    assert results[3].params["max_messages"] == 20 and results[3].strategy == "s08"
    assert win.timeline_panel.timeline.result is results[0]
    for k, r in enumerate(results[1:]):
        x, y = win.timeline_panel.timeline.curve_data(f"overlay:{k}")
        assert list(y) == [c.tokens_after for c in r.calls]
    # the table holds each run's totals; hermes's equal an independent replay
    c = conv()
    ref = replay(c, "hermes", {}, summarizer=make_summarizer("offline")).totals()
    t = win.timeline_panel.comparison
    assert t.rowCount() == 4
    for key in ("compactions", "peak_tokens", "total_input_tokens", "messages_dropped", "tool_results_dropped",
                "summaries", "iterations_used", "iterations_refunded"):
        assert t.value(2, key) == ref[key], key
        assert [t.value(i, key) for i in range(4)] == [r.totals()[key] for r in results]
    assert t.value(3, "compactions") > t.value(0, "compactions")     # a tighter limit compacts more


def test_bad_compare_spec_says_what_to_do(qtbot, win):
    open_timeline(qtbot, win)
    win.timeline_panel.compare_extra.setText("nosuchstrategy:x=1")
    win.run_replay()
    assert win.banner.isVisible() and "nosuchstrategy" in win.banner.text() and "NAME" in win.banner.text()
    with pytest.raises(ValueError):
        parse_run_spec("s08:context_limit")


def test_playback_drives_the_stepper_as_if_live(qtbot, win):
    results = open_timeline(qtbot, win)
    rr = results[0]
    win.timeline_panel.timeline.speed.setValue(50)
    assert win.timeline_panel.timeline.timer.interval() == 20
    win.timeline_panel.timeline.setFocus()
    win.timeline_panel.timeline.set_cursor(0)
    seen = []
    win.sigCallShown.connect(seen.append)
    qtbot.keyClick(win.timeline_panel.timeline, Qt.Key_Space)
    assert win.timeline_panel.timeline.playing()
    qtbot.waitUntil(lambda: len(seen) >= 3 and seen[-1] >= 5, timeout=60000)
    qtbot.keyClick(win.timeline_panel.timeline, Qt.Key_Space)
    assert not win.timeline_panel.timeline.playing()
    assert seen == sorted(seen) and len(set(seen)) == len(seen)          # forward, never back
    qtbot.waitUntil(lambda: not win.session.replay.call_running, timeout=60000)
    i = win.session.replay.shown_call
    assert i == seen[-1]
    # the stepper shows the pipeline run before call i: its input is that call's running context
    assert len(win.session.trace.input) == rr.calls[i].messages_before
    assert len(win.session.trace.output) == rr.calls[i].messages_after
    assert win.messages.model.messages == win.stage_messages(win.session.view.stage) or win.session.view.view_mode == "before"
    assert f"model call #{i} of {len(rr.calls)}" in win.status_label.text()
    # arrows in the focused timeline move its cursor, not the stepper's layer
    stage = win.session.view.stage
    cur = win.timeline_panel.timeline.cursor()
    with qtbot.waitSignal(win.sigCallShown, timeout=60000) as b:
        qtbot.keyClick(win.timeline_panel.timeline, Qt.Key_Right)
    assert b.args[0] == cur + 1 and win.session.view.stage == stage and win.session.replay.shown_call == cur + 1
    # follow off: the cursor moves, the stepper stays
    win.timeline_panel.follow_box.setChecked(False)
    win.timeline_panel.timeline.set_cursor(0, emit=True)
    qtbot.wait(50)
    assert win.session.replay.shown_call == cur + 1 and not win.session.replay.call_running


# ------------------------------------------------------------------ 3. the iteration budget
def test_iteration_budget_in_replay_json_csv_and_window(qtbot, win, tmp_path, capsys):
    from compactscope.app.cli import main as cli_main
    args = ["replay", str(LONG), "--set", "max_messages=20", "--workdir", str(tmp_path / "w"), "--iteration-cap", "5"]
    assert cli_main(args + ["--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert cli_main(args + ["--csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    calls = data["calls"]
    assert len(rows) == len(calls) == 30
    for row, c in zip(rows, calls):
        assert int(row["iterations_used"]) == c["iterations"]["used"]
        assert int(row["iterations_refunded"]) == c["iterations"]["refunded"]
        assert row["iteration_refused"] == str(c["iterations"]["refused"])
        if not c["iterations"]["refused"]:
            assert c["iterations"]["refunded"] == (1 if (c["dropped_messages"] or c["summaries"]) else 0)
    # agrees with core.moa.budget_for_replay: the cap stops the loop at the same call
    # (in the first user turn, which is longer than the cap)
    res = replay(conv(), "s08", {"max_messages": 20}, workspace=None, iteration_cap=5)
    budget, refused_at = budget_for_replay(res, 5)
    first_turn = [c for c in res.calls if c.turn == 1]
    assert len(first_turn) > 5
    assert data["totals"]["iteration_cap_reached_at"] == refused_at
    assert calls[refused_at]["iterations"]["refused"] and not calls[refused_at - 1]["iterations"]["refused"]
    # the next user turn starts with a fresh budget
    k2 = len(first_turn)
    assert calls[k2]["iterations"]["turn"] == 2 and calls[k2]["iterations"]["used"] == 1
    assert not calls[k2]["iterations"]["refused"]
    assert data["totals"]["user_turns"] == 3
    # the window: the call caption and the table
    results = open_timeline(qtbot, win)
    rr = results[0]
    k = next(c.index for c in rr.calls if c.compacted)
    t = rr.calls[k].turn
    # s08's agent loop has no iteration budget (only hermes' has): the window shows none for it
    assert f"user turn {t}" in win.call_caption(k) and "iterations" not in win.call_caption(k)
    assert win.timeline_panel.comparison.value(0, "iterations_refunded") is None
    win.timeline_panel.timeline.set_cursor(k)
    assert f"turn {t}" in win.timeline_panel.timeline.cursor_label.text()
    assert "iterations" not in win.timeline_panel.timeline.cursor_label.text()
    tip = win.timeline_panel.timeline.call_tooltip(k)
    assert "iterations" not in tip and f"model call {k} " in tip


def test_iteration_budget_is_fresh_for_every_user_turn():
    """hermes-agent makes a new IterationBudget per run_conversation (one user turn)."""
    msgs = []
    for turn in range(2):
        msgs.append({"role": "user", "content": f"task {turn}"})
        for k in range(4):
            msgs.append({"role": "assistant", "content": [{"type": "tool_use", "id": f"t{turn}{k}", "name": "Bash",
                                                           "input": {}}]})
            msgs.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{turn}{k}",
                                                      "content": "ok"}]})
        msgs.append({"role": "assistant", "content": "done"})
    res = replay(msgs, "s08", {}, iteration_cap=3)
    it = res.iterations()
    assert [c.turn for c in res.calls] == [1] * 5 + [2] * 5
    assert [r["used"] for r in it] == [1, 2, 3, 3, 3] * 2
    assert [r["refused"] for r in it] == [False, False, False, True, True] * 2
    t = res.totals()
    assert t["user_turns"] == 2 and t["iterations_used"] == 6 and t["iteration_cap_reached_at"] == 3
