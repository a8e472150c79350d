"""`compactscope --follow SESSION` opens the window following a growing session file."""
from compactscope.app import gui


def test_follow_flag_starts_following(qtbot, tmp_path, monkeypatch, corpus, isolated_settings):
    src = corpus / "claude-code-viewer" / "1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl"
    live = tmp_path / "session.jsonl"
    lines = src.read_text().splitlines(keepends=True)
    live.write_text("".join(lines[:10]))
    made = {}
    from PySide6.QtWidgets import QApplication
    monkeypatch.setattr(QApplication, "exec", lambda self: 0)
    from compactscope.app import main_window
    orig_show = main_window.MainWindow.show

    def show(self):
        made["win"] = self
        qtbot.addWidget(self)
        orig_show(self)
    monkeypatch.setattr(main_window.MainWindow, "show", show)
    assert gui.main(["--follow", str(live)]) == 0
    win = made["win"]
    try:
        assert win.live_controller.follow is not None
        assert win.live_panel.follow_path.text() == str(live)
        qtbot.waitUntil(lambda: win.session.source.conversation is not None, timeout=10000)
        n0 = len(win.session.source.conversation.messages)
        with live.open("a") as f:
            f.write("".join(lines[10:]))
        qtbot.waitUntil(lambda: len(win.session.source.conversation.messages) > n0, timeout=15000)
    finally:
        win.live_controller.stop_follow()


def test_follow_missing_file_is_exit_2(capsys, tmp_path):
    assert gui.main(["--follow", str(tmp_path / "nope.jsonl"), "--screenshot", str(tmp_path / "x.png")]) == 2
    assert "no such file to follow" in capsys.readouterr().err


def test_missing_x11_libraries_are_named_not_a_qt_abort(capsys, monkeypatch):
    import ctypes.util
    monkeypatch.delenv("QT_QPA_PLATFORM", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.setenv("DISPLAY", ":0")
    monkeypatch.setattr(gui.sys, "platform", "linux")
    monkeypatch.setattr(ctypes.util, "find_library", lambda n: None if n == "xcb-cursor" else f"lib{n}.so")
    assert gui.main(["assets/examples/short_session.json"]) == 2
    err = capsys.readouterr().err
    assert "libxcb-cursor" in err and "apt install" in err
