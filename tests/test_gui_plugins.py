"""The window with plugins and the Inspect strategies: File > Load Strategy from File (which function
when there are several; recent strategies remembered), the plugin's parameters in the panel, a broken
plugin as a banner, and the inspect-ai verdict in the status bar."""
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LONG = ROOT / "assets" / "examples" / "long_session.json"
PLUGINS = ROOT / "assets" / "plugins"


@pytest.fixture
def win(make_window):
    return make_window()          # closed by qtbot at the end (closeEvent closes the session)


def open_wait(qtbot, win, path=LONG):
    with qtbot.waitSignal(win.sigTraceReady, timeout=60000):
        assert win.open_path(str(path))


def test_load_strategy_from_file_asks_which_and_remembers_it(qtbot, win, tmp_path, monkeypatch):
    from PySide6.QtWidgets import QFileDialog, QInputDialog
    open_wait(qtbot, win)
    p = tmp_path / "two.py"
    p.write_text(textwrap.dedent('''
        def keep_tail(messages, keep: int = 6):
            """Keep the first message and the last few."""
            return messages[:1] + messages[-keep:]

        def keep_all(messages):
            return messages
        '''))
    monkeypatch.setattr(QFileDialog, "getOpenFileName", lambda *a, **k: (str(p), "Python files (*.py)"))
    asked = []
    monkeypatch.setattr(QInputDialog, "getItem", lambda _w, _t, _l, items, *a: (asked.append(list(items)) or
                                                                              ("keep_tail", True)))
    with qtbot.waitSignal(win.sigTraceReady, timeout=60000):
        win.load_strategy_dialog()
    assert asked == [["keep_tail", "keep_all"]]                # in the order the file defines them
    spec = f"{p.resolve()}:keep_tail"
    assert win.session.setup.strategy.name == spec and win.session.trace.strategy == spec
    assert win.params_panel.current_strategy() == spec
    assert win.params_panel.strategy_box.currentText() == "two.py:keep_tail"
    assert list(win.params_panel.editors) == ["keep"] and "from: file" in win.params_panel.description.text()
    assert len(win.session.trace.output) == 7 and win.session.trace.steps[-1].edits
    # a parameter edit re-runs the plugin
    p_, ed = win.params_panel.editors["keep"]
    with qtbot.waitSignal(win.sigTraceReady, timeout=60000):
        ed.setValue(3)
        win.params_panel.flush()
    assert len(win.session.trace.output) == 4
    # remembered: the recent strategies menu and the next window's strategy box
    assert win.settings.recent_strategies()[0] == spec
    assert [a.text() for a in win.recent_strategies_menu.actions()][0] == "two.py:keep_tail"
    assert win.settings.value("strategy") == spec


def test_a_broken_plugin_is_a_banner_not_a_crash(qtbot, win, tmp_path):
    open_wait(qtbot, win)
    p = tmp_path / "bad.py"
    p.write_text("def compact(messages):\n    raise RuntimeError('boom')\n")
    with qtbot.waitSignal(win.sigTraceReady, timeout=60000):
        assert win.use_strategy(f"{p}:compact")
    step = win.session.trace.steps[-1]
    assert "bad.py:compact raised RuntimeError: boom (line 2 of bad.py)" in step.error
    p2 = tmp_path / "syntax.py"
    p2.write_text("def compact(:\n")
    assert not win.use_strategy(f"{p2}:compact")
    assert win.banner.isVisible() and "SyntaxError" in win.banner.text() and "What to do" in win.banner.text()


def test_inspect_strategy_shows_its_cross_check_verdict(qtbot, win):
    pytest.importorskip("inspect_ai")
    open_wait(qtbot, win)
    win.session.setup.set_params({}, run=False)
    with qtbot.waitSignal(win.sigOracleReady, timeout=120000) as blocker:
        win.set_strategy("inspect_summary")
        win.session.setup.set_params({"trigger": "always"})
    assert blocker.args[0].startswith("matches inspect-ai 0.3.285")
    assert win.oracle_label.isVisible() and "matches inspect-ai" in win.oracle_label.text()
    assert "CompactionNative" in win.params_panel.description.text()
    # keep_thinking_turns takes a number or "all": a text editor
    win.set_strategy("inspect_edit")
    qtbot.waitUntil(lambda: win.session.setup.strategy.name == "inspect_edit", timeout=10000)
    from PySide6.QtWidgets import QLineEdit
    assert isinstance(win.params_panel.editors["keep_thinking_turns"][1], QLineEdit)
