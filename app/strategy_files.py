"""Strategies from files (docs/plugins.md) in the window: which strategy a window starts with, the strategy
box with the recent plugins, and File > Load Strategy from File."""
from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QFileDialog, QInputDialog

from compactscope.core import strategies
from compactscope.widgets.i18n import tr


def initial_strategy(settings):
    """The strategy of the last session (a plugin file too, while it loads), else the first built-in."""
    names = strategies.available() or ["s08"]
    saved = str(settings.value("strategy", "s08"))
    if saved in names:
        return strategies.get(saved)
    if strategies.looks_like_plugin(saved):
        try:
            return strategies.get(saved)
        except KeyError:
            pass
    return strategies.get(names[0])


def fill_strategies(win) -> None:
    """The strategy box: every installed strategy, then the recent plugins (by their short names)."""
    names = list(strategies.available() or ["s08"])
    recent = [r for r in win.settings.recent_strategies() if r not in names]
    current = win.session.setup.strategy.name
    if current not in names and current not in recent:
        recent.insert(0, current)
    win.params_panel.set_strategies(names + recent, current,
                                     {r: strategies.short_label(r) for r in recent})


def load_strategy_dialog(win) -> None:
    """File > Load Strategy from File: a plugin (docs/plugins.md); which function when it has several."""
    start = str(win.settings.value("plugin_dir", "") or Path.home())
    path, _ = QFileDialog.getOpenFileName(win, tr("Load a compactor (a Python file)"), start,
                                          tr("Python files (*.py);;All files (*)"))
    if not path:
        return
    win.settings.set("plugin_dir", str(Path(path).parent))
    try:
        names = strategies.plugin.candidates(path)
    except KeyError as e:
        win.show_error(tr("Strategy {name}: {v}").format(name=Path(path).name, v=e.args[0] if e.args else e),
                       tr("Fix the file and load it again (docs/plugins.md describes what a compactor is)."))
        return
    if not names:
        win.show_error(tr("{name} defines no compactor.").format(name=Path(path).name),
                       tr("A compactor is a function messages -> messages, a list of them, or an object with 'layers' (docs/plugins.md)."))
        return
    name = names[0]
    if len(names) > 1:
        name, ok = QInputDialog.getItem(win, tr("Which compactor?"), tr("{name} defines several:").format(name=Path(path).name),
                                        names, 0, False)
        if not ok:
            return
    win.use_strategy(f"{Path(path).resolve()}:{name}")
