"""The window's menus and keyboard shortcuts: File, View, Live, Navigate, and the stepping keys."""
from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import QApplication

from compactscope.app.export import install as install_export
from compactscope.app.live import install_menu
from compactscope.widgets.i18n import tr


def install_actions(win, examples) -> None:
    mb = win.menuBar()
    fm = mb.addMenu(tr("&File"))
    a = fm.addAction(tr("&Open…"), win.open_dialog)
    a.setShortcut(QKeySequence.StandardKey.Open)
    win.recent_menu = fm.addMenu(tr("Open &Recent"))
    a = fm.addAction(tr("Open &Fleet…"), lambda: _open_fleet(win))
    a.setShortcut(QKeySequence("Ctrl+Shift+O"))
    a.setToolTip(tr("Open the results of compactscope fleet (a Parquet file): the whole archive's distribution"))
    fm.addSeparator()
    a = fm.addAction(tr("Load &Strategy from File…"), win.load_strategy_dialog)
    a.setShortcut(QKeySequence("Ctrl+Shift+L"))
    a.setToolTip(tr("Your own compactor: a Python file with a function messages -> messages (docs/plugins.md)"))
    win.recent_strategies_menu = fm.addMenu(tr("Recent S&trategies"))
    fm.addSeparator()
    win.examples_menu = fm.addMenu(tr("Open &Example"))
    for p in sorted(examples.glob("*.json")):
        win.examples_menu.addAction(p.name, lambda p=p: win.open_path(str(p)))
    fm.addSeparator()
    fm.addAction(tr("Export as &PNG…"), win.save_screenshot_dialog).setToolTip(tr("A screenshot of the window"))
    fm.addSeparator()
    q = fm.addAction(tr("&Quit"), win.close)
    q.setShortcut(QKeySequence.StandardKey.Quit)
    rebuild_recent(win)
    rebuild_recent_strategies(win)
    # File > Export as HTML / Markdown (before PNG), and the Edit menu's copies as Markdown (app/export.py)
    install_export(win, fm, mb)
    vm = mb.addMenu(tr("&View"))
    for text, keys, slot in ((tr("Zoom &In"), [QKeySequence.StandardKey.ZoomIn, QKeySequence("Ctrl+=")],
                              lambda: win.set_zoom(win.zoom + 1)),
                             (tr("Zoom &Out"), [QKeySequence.StandardKey.ZoomOut], lambda: win.set_zoom(win.zoom - 1)),
                             (tr("&Reset Zoom"), [QKeySequence("Ctrl+0")], lambda: win.set_zoom(0))):
        a = vm.addAction(text, slot)
        a.setShortcuts(keys)
    win.dark_action = vm.addAction(tr("&Dark palette"), lambda: win.set_dark(win.dark_action.isChecked()))
    win.dark_action.setCheckable(True)
    win.dark_action.setShortcut(QKeySequence("Ctrl+Shift+D"))
    win.presenter_action = vm.addAction(tr("&Presenter mode"), lambda: win.set_presenter(win.presenter_action.isChecked()))
    win.presenter_action.setCheckable(True)
    win.presenter_action.setShortcut(QKeySequence("F11"))
    win.presenter_action.setToolTip(tr("Large type; the inspector and parameters hidden; the narration shown in a lesson"))
    _language_menu(win, vm)
    vm.addSeparator()
    for d in (win.dock_inspector, win.dock_params, win.dock_chart, win.dock_findings, win.dock_narration):
        vm.addAction(d.toggleViewAction())
    _lesson_menu(win, mb)
    install_menu(win)            # Live: agent, recording proxy and follow mode in a dock (app/live.py)
    nm = mb.addMenu(tr("&Navigate"))
    for text, key, slot in ((tr("&Find\u2026"), QKeySequence.StandardKey.Find, win.focus_search),
                            (tr("Find &Next"), QKeySequence.StandardKey.FindNext, lambda: win.next_match(1)),
                            (tr("Find &Previous"), QKeySequence.StandardKey.FindPrevious, lambda: win.next_match(-1)),
                            (tr("Jump to tool &partner"), QKeySequence("Ctrl+J"), win.jump_to_partner),
                            (tr("Run the pipeline &again"), QKeySequence("F5"), win.run_pipeline)):
        a = nm.addAction(text, slot)
        a.setShortcut(key)
    # stepping keys: window shortcuts (text fields keep their own arrows); in the timeline, arrows and
    # Home/End move its cursor over the model calls instead
    for key, slot in ((Qt.Key.Key_Right, lambda: _arrow(win, 1)), (Qt.Key.Key_Left, lambda: _arrow(win, -1)),
                      (Qt.Key.Key_Home, lambda: _arrow(win, "home")), (Qt.Key.Key_End, lambda: _arrow(win, "end")),
                      (Qt.Key.Key_P, win.stepper.toggle_play)):
        sc = QShortcut(QKeySequence(key), win)
        sc.setContext(Qt.ShortcutContext.WindowShortcut)
        sc.activated.connect(slot)


def rebuild_recent(win) -> None:
    win.recent_menu.clear()
    files = win.settings.recent_files()
    for f in files:
        win.recent_menu.addAction(f, lambda f=f: win.open_path(f))
    if files:
        win.recent_menu.addSeparator()
        win.recent_menu.addAction(tr("Clear"), lambda: (win.settings.clear_recent(), rebuild_recent(win)))
    win.recent_menu.setEnabled(bool(files))


def rebuild_recent_strategies(win) -> None:
    """File > Recent Strategies: the plugins loaded before (short names, the full spec as tooltip)."""
    from compactscope.core.strategies import short_label
    m = win.recent_strategies_menu
    m.clear()
    specs = win.settings.recent_strategies()
    for spec in specs:
        a = m.addAction(short_label(spec), lambda spec=spec: win.use_strategy(spec))
        a.setToolTip(spec)
    m.setToolTipsVisible(True)
    if specs:
        m.addSeparator()
        m.addAction(tr("Clear"), lambda: (win.settings.clear_recent_strategies(), rebuild_recent_strategies(win)))
    m.setEnabled(bool(specs))


def _timeline_focused(win) -> bool:
    w = QApplication.focusWidget()
    while w is not None:
        if w is win.timeline_panel.timeline:
            return True
        w = w.parentWidget()
    return False


def _arrow(win, d) -> None:
    if _timeline_focused(win):
        if d == "home":
            win.timeline_panel.timeline.set_cursor(0, emit=True)
        elif d == "end":
            win.timeline_panel.timeline.set_cursor(win.timeline_panel.timeline.call_count - 1, emit=True)
        else:
            win.timeline_panel.timeline.step(d)
        return
    if d == "home":
        win.stepper.first()
    elif d == "end":
        win.stepper.last()
    else:
        win.stepper.step(d)


def _lesson_menu(win, mb) -> None:
    """Lesson: the bundled lessons, next/previous slide (Page Down/Up), close."""
    from compactscope.core.session import lesson as lessons
    lm = mb.addMenu(tr("L&esson"))
    win.lesson_menu = lm
    for les in lessons.available():
        a = lm.addAction(les.title_in(win.language), lambda les=les: win.lesson_controller.open(les))
        a.setToolTip(les.name)
    lm.addSeparator()
    a = lm.addAction(tr("&Next slide"), win.lesson_controller.next)
    a.setToolTip(tr("Page Down, or a presenter remote's next key"))
    a = lm.addAction(tr("&Previous slide"), win.lesson_controller.previous)
    a.setToolTip(tr("Page Up, or a presenter remote's previous key"))
    lm.addAction(tr("&Close lesson"), win.lesson_controller.close)


def _language_menu(win, vm) -> None:
    """View > Language: each language in its own words; choosing one rebuilds the window in it."""
    from PySide6.QtGui import QActionGroup
    from compactscope.app import language
    lm = vm.addMenu(tr("&Language"))
    win.language_menu = lm
    group = QActionGroup(lm)
    group.setExclusive(True)
    win.language_actions = {}
    for code, name in language.LANGUAGES.items():
        a = lm.addAction(name, lambda code=code: win.set_language(code))
        a.setCheckable(True)
        a.setChecked(code == language.current())
        group.addAction(a)
        win.language_actions[code] = a


def _open_fleet(win) -> None:
    """File > Open Fleet: the fleet view (and pyarrow under it) is imported when first asked for, not at start."""
    from compactscope.app.fleet import open_fleet_dialog
    open_fleet_dialog(win)
