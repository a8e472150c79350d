"""The live panel and its controller, driving the real agent, proxy and follower."""
from __future__ import annotations

import anthropic
import pytest

pytest.importorskip("PySide6")

from compactscope.app.live import LiveController, attach_to_main_window   # noqa: E402
from compactscope.core.live.recorder import read_recording                    # noqa: E402
from tests.fakeapi import FakeAnthropic, error, message, reply, text_block, tool_use_block   # noqa: E402
from compactscope.widgets.live_panel import LivePanel                     # noqa: E402

KEY = "-".join(("sk", "ant", "live-panel-test-0123456789"))   # a fake key, assembled so secret scanners skip the source


def setup_panel(qtbot, tmp_path, fake, answers=("once",)):
    panel = LivePanel()
    qtbot.addWidget(panel)
    ctl = LiveController(panel, strategy=lambda: ("s08", {}))
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    panel.workdir.setText(str(ws))
    panel.key_edit.setText(KEY)
    panel.base_url.setText(fake.url)
    panel.model_edit.setText("fake-model")
    panel.agent_record.setText(str(tmp_path / "live.jsonl"))
    asked = []
    it = iter(answers)
    panel.ask_bash = lambda cmd: asked.append(cmd) or next(it)
    return panel, ctl, asked


def send(qtbot, panel, ctl, text):
    panel.input.setPlainText(text)
    with qtbot.waitSignal(ctl.sigFinished, timeout=20000) as blocker:
        panel.send_btn.click()
    return blocker.args[0]


def test_panel_runs_a_session_with_bash_confirmation(qtbot, tmp_path):
    script = [reply(message([text_block("Listing."), tool_use_block("bash", {"command": "echo made > f.txt"}, "b1")])),
              reply(message([tool_use_block("read_file", {"path": "f.txt"}, "r1")])),
              reply(message([text_block("The file says made.")]))]
    with FakeAnthropic(script) as fake:
        panel, ctl, asked = setup_panel(qtbot, tmp_path, fake)
        traces = []
        ctl.sigTrace.connect(lambda conv, tr: traces.append((conv, tr)))
        assert send(qtbot, panel, ctl, "make a file") == "done"
        ctl.shutdown()
    assert asked == ["echo made > f.txt"]
    assert (tmp_path / "ws" / "f.txt").read_text().strip() == "made"
    log = panel.log.toPlainText()
    assert "make a file" in log and "bash" in log and "The file says made." in log and "made" in log
    assert len(traces) == 3 and traces[0][1].order[0] == "tool_result_budget"
    assert len(traces[2][0].messages) == 5
    assert panel.error_box.isHidden() and panel.send_btn.isEnabled() and not panel.stop_btn.isEnabled()
    rr = read_recording(tmp_path / "live.jsonl")
    assert len(rr.calls) == 3 and KEY not in (tmp_path / "live.jsonl").read_text()


def test_panel_shows_what_to_do_on_a_wrong_key(qtbot, tmp_path):
    with FakeAnthropic([error(401, "authentication_error", "invalid x-api-key")]) as fake:
        panel, ctl, _ = setup_panel(qtbot, tmp_path, fake)
        panel.show()
        assert send(qtbot, panel, ctl, "hi") == "error"
        ctl.shutdown()
    text = panel.error_box.text()
    assert not panel.error_box.isHidden() and "What to do" in text and "key" in text
    assert panel.state == "error"
    ctl.configure_agent(panel.agent_settings())
    ctl.agent.messages = [{"role": "user", "content": "old"}]
    panel.new_btn.click()
    assert ctl.agent.messages == [] and panel.error_box.isHidden() and "new session" in panel.log.toPlainText()
    ctl.shutdown()


def test_denied_bash_and_stop(qtbot, tmp_path):
    script = [reply(message([tool_use_block("bash", {"command": "touch nope"}, "b1")])),
              reply(message([tool_use_block("bash", {"command": "sleep 30"}, "b2")])),
              reply(message([text_block("never")]))]
    with FakeAnthropic(script) as fake:
        panel, ctl, asked = setup_panel(qtbot, tmp_path, fake, answers=("deny", "session"))
        panel.input.setPlainText("go")
        with qtbot.waitSignal(ctl.sigFinished, timeout=20000) as blocker:
            panel.send_btn.click()
            qtbot.waitUntil(lambda: len(asked) == 2, timeout=10000)
            qtbot.wait(300)                          # sleep 30 is running now
            panel.stop_btn.click()
        assert blocker.args[0] == "stopped"
        ctl.shutdown()
    assert not (tmp_path / "ws" / "nope").exists()
    assert "declined" in panel.log.toPlainText() and "stopped" in panel.log.toPlainText()
    assert ctl.agent is None


def test_proxy_toggle_shows_each_call(qtbot, tmp_path):
    with FakeAnthropic([reply(message([text_block("one")])), reply(message([text_block("two")]))]) as fake:
        panel, ctl, _ = setup_panel(qtbot, tmp_path, fake)
        panel.port.setValue(0)
        panel.upstream.setText(fake.url)
        panel.proxy_record.setText(str(tmp_path / "proxy.jsonl"))
        panel.proxy_btn.click()
        assert ctl.proxy is not None and "127.0.0.1" in panel.proxy_hint.text()
        client = anthropic.Anthropic(api_key=KEY, base_url=ctl.proxy.url, max_retries=0, timeout=10)
        convs = []
        ctl.sigContext.connect(convs.append)
        client.messages.create(model="m", max_tokens=5, messages=[{"role": "user", "content": "long " * 50},
                                                                  {"role": "assistant", "content": "x"},
                                                                  {"role": "user", "content": "q"}])
        qtbot.waitUntil(lambda: len(convs) == 1, timeout=5000)
        client.messages.create(model="m", max_tokens=5, messages=[{"role": "user", "content": "summary"}])
        qtbot.waitUntil(lambda: len(convs) == 2, timeout=5000)
        panel.proxy_btn.click()
        assert ctl.proxy is None
    # the window gets the history so far (the recording, loaded): the client's compaction is a new segment
    assert [len(c.messages) for c in convs] == [4, 5]
    assert convs[-1].segments == [0, 3] and convs[-1].events[0].extra["call"] == 2
    assert "changed its context" in panel.log.toPlainText()
    assert len(read_recording(tmp_path / "proxy.jsonl").calls) == 2


def test_follow_from_the_panel(qtbot, tmp_path):
    p = tmp_path / "s.jsonl"
    p.write_text('{"role": "user", "content": "hi"}\n')
    panel = LivePanel()
    qtbot.addWidget(panel)
    ctl = LiveController(panel)
    convs = []
    ctl.sigContext.connect(convs.append)
    panel.follow_path.setText(str(p))
    panel.follow_btn.click()
    qtbot.waitUntil(lambda: len(convs) == 1, timeout=5000)
    with p.open("a") as f:
        f.write('{"role": "assistant", "content": "hello"}\n{"role": "us')
    qtbot.waitUntil(lambda: len(convs) == 2, timeout=5000)
    assert [m["content"] for m in convs[-1].messages] == ["hi", "hello"]
    panel.follow_btn.click()
    assert ctl.follow is None
    panel.follow_path.setText(str(tmp_path / "missing.jsonl"))
    panel.follow_btn.click()
    assert not panel.error_box.isHidden() and not panel.follow_btn.isChecked()


def test_main_window_follows_the_agent(qtbot, tmp_path):
    mw = pytest.importorskip("compactscope.app.main_window")
    from compactscope.app.settings import Settings
    win = mw.MainWindow(Settings(enabled=False))
    qtbot.addWidget(win)
    dock, ctl = attach_to_main_window(win)
    script = [reply(message([tool_use_block("write_file", {"path": "a.txt", "content": "A" * 500}, "w1")])),
              reply(message([text_block("ok")]))]
    with FakeAnthropic(script) as fake:
        panel = win.live_panel
        panel.workdir.setText(str(tmp_path))
        panel.key_edit.setText(KEY)
        panel.base_url.setText(fake.url)
        panel.agent_record.setText(str(tmp_path / "w.jsonl"))
        assert send(qtbot, panel, ctl, "write a") == "done"
        ctl.shutdown()
    assert win.session.trace is not None and win.session.trace.order == ["tool_result_budget", "snip_compact", "micro_compact",
                                                         "compact_history"]
    assert len(win.session.trace.input) == 3              # the stepper shows the agent's own run before its second call
    qtbot.waitUntil(lambda: win.session.source.conversation.title == "live agent: 2 call(s)", timeout=5000)
    assert [m["role"] for m in win.session.source.conversation.messages] == ["user", "assistant", "user", "assistant"]
    assert win.session.trace.input == win.session.source.conversation.messages[:3]


def test_live_menu_opens_the_dock_and_close_stops_the_proxy(qtbot, tmp_path):
    mw = pytest.importorskip("compactscope.app.main_window")
    from compactscope.app.settings import Settings
    win = mw.MainWindow(Settings(enabled=False))
    qtbot.addWidget(win)
    menu = getattr(win, "live_menu", None)
    assert menu is not None and getattr(win, "live_dock", None) is None     # created on first use
    proxy_action = [a for a in menu.actions() if "proxy" in a.text().lower()][0]
    proxy_action.trigger()
    assert win.live_dock.isVisibleTo(win) and win.live_panel.tabs.currentIndex() == 1
    win.live_panel.port.setValue(0)
    win.live_panel.upstream.setText("http://127.0.0.1:9")
    win.live_panel.proxy_record.setText(str(tmp_path / "p.jsonl"))
    win.live_panel.proxy_btn.click()
    proxy = win.live_controller.proxy
    assert proxy is not None
    win.close()
    assert win.live_controller.proxy is None
    with pytest.raises(OSError):
        import socket
        socket.create_connection(("127.0.0.1", proxy.port), timeout=1)


def test_panel_fields_are_remembered_but_never_the_key(qtbot, tmp_path, isolated_settings):
    mw = pytest.importorskip("compactscope.app.main_window")
    from compactscope.app.live import open_live
    from compactscope.app.settings import Settings
    win = mw.MainWindow(Settings())
    qtbot.addWidget(win)
    open_live(win, 0)
    p = win.live_panel
    p.workdir.setText(str(tmp_path))
    p.model_edit.setText("claude-haiku-4-5")
    p.key_edit.setText(KEY)
    p.agent_record.setText(str(tmp_path / "r.jsonl"))
    p.sigAgentSettings.emit(p.agent_settings())
    win.live_controller.shutdown()
    win.settings.sync()
    saved = "".join(p.read_text(errors="replace") for p in (tmp_path / "settings").rglob("*") if p.is_file())
    assert "claude-haiku-4-5" in saved and KEY not in saved
    win2 = mw.MainWindow(Settings())
    qtbot.addWidget(win2)
    open_live(win2, 0)
    assert win2.live_panel.workdir.text() == str(tmp_path) and win2.live_panel.key_edit.text() == ""
    win2.live_controller.shutdown()


def test_parameter_and_strategy_changes_apply_from_the_next_call(qtbot, tmp_path):
    with FakeAnthropic([reply(message([text_block("one")])), reply(message([text_block("two")])),
                        reply(message([text_block("three")]))]) as fake:
        panel, ctl, _ = setup_panel(qtbot, tmp_path, fake)
        current = {"name": "s08", "params": {}}
        ctl.strategy = lambda: (current["name"], dict(current["params"]))
        assert send(qtbot, panel, ctl, "a") == "done"
        agent = ctl.agent
        current["params"] = {"context_limit": 12345}
        assert send(qtbot, panel, ctl, "b") == "done"
        assert ctl.agent is agent and agent.engine.params["context_limit"] == 12345
        current["name"] = "claude_code"
        current["params"] = {}
        assert send(qtbot, panel, ctl, "c") == "done"
        assert ctl.agent is agent and agent.engine.strategy.name == "claude_code"
        ctl.shutdown()
    assert len(fake.message_requests[2]["body"]["messages"]) == 5        # the conversation was kept
    log = panel.log.toPlainText()
    assert "context_limit=12345" in log and "strategy is now claude_code" in log


def test_a_message_sent_while_a_turn_runs_is_queued_never_lost(qtbot, tmp_path):
    script = [reply(message([tool_use_block("bash", {"command": "sleep 1"}, "b1")])),
              reply(message([text_block("first done")])),
              reply(message([text_block("second done")]))]
    with FakeAnthropic(script) as fake:
        panel, ctl, asked = setup_panel(qtbot, tmp_path, fake, answers=("once",))
        finished = []
        ctl.sigFinished.connect(finished.append)
        panel.input.setPlainText("first")
        panel.send_btn.click()
        qtbot.waitUntil(lambda: len(asked) == 1, timeout=30000)        # the first turn is running its tool
        assert ctl.busy and panel.send_btn.isEnabled()
        panel.input.setPlainText("second")
        panel.send_btn.click()                                          # sent while the turn runs
        assert panel.input.toPlainText() == "" and ctl.queue == ["second"]
        qtbot.waitUntil(lambda: len(finished) == 2, timeout=60000)    # two turns on a loaded machine
        ctl.shutdown()
    assert finished == ["done", "done"] and ctl.queue == []
    users = [r["body"]["messages"] for r in fake.message_requests]
    assert len(users) == 3 and users[2][-1]["content"] == "second"     # the queued message reached the model
    log = panel.log.toPlainText()
    assert "queued" in log and "first done" in log and "second done" in log
    assert not panel.stop_btn.isEnabled() and panel.send_btn.text() == "Send"
