"""The window's language: English or Simplified Chinese.

``install(lang)`` puts Qt's translator for ``lang`` in place (assets/i18n/compactscope_<lang>.qm, compiled from
the .ts next to it by ``pyside6-lrelease``), tells the Qt-free core catalogue (``core.i18n``) the language, and
makes sure Chinese can be drawn: when no font on the machine has Chinese glyphs, the bundled subset of Noto Sans
CJK SC (assets/fonts/, SIL Open Font License) is registered and put after the usual families. The default
language is the one saved in the settings, else the system's (``system_language``). ``switch(win, lang)`` rebuilds
the window in the new language and brings back what it showed (the session's snapshot, the lesson and slide,
zoom, palette, presenter mode and layout).
"""
from __future__ import annotations

from PySide6.QtCore import QCoreApplication, QLocale, QTranslator
from PySide6.QtGui import QFont, QFontDatabase
from PySide6.QtWidgets import QApplication

from compactscope import asset_path
from compactscope.core.i18n import catalog as core_i18n

LANGUAGES = {"en": "English", "zh_CN": "\u7b80\u4f53\u4e2d\u6587"}      # each in its own words
FONT_FILE = "NotoSansCJKsc-Regular-subset.otf"
_state: dict = {"translator": None, "lang": "en", "font": None, "windows": []}


def system_language() -> str:
    name = QLocale.system().name()
    return "zh_CN" if name.startswith("zh") else "en"


def normalise(lang: str | None) -> str:
    if not lang:
        return "en"
    lang = str(lang).replace("-", "_")
    if lang.lower().startswith("zh"):
        return "zh_CN"
    return "en" if lang.lower().startswith("en") else lang


def qm_path(lang: str):
    return asset_path("i18n", f"compactscope_{lang}.qm")


def current() -> str:
    return _state["lang"]


def install(lang: str) -> bool:
    """Use ``lang`` from now on (widgets made afterwards speak it). False when its catalogue is missing (then
    the window stays English)."""
    app = QCoreApplication.instance()
    lang = normalise(lang)
    old = _state["translator"]
    if old is not None and app is not None:
        app.removeTranslator(old)
        _state["translator"] = None
    ok = True
    if lang != "en":
        t = QTranslator(app)
        ok = t.load(str(qm_path(lang)))
        if ok and app is not None:
            app.installTranslator(t)
            _state["translator"] = t
    ensure_cjk_font()          # in every language: transcripts hold Chinese too (the seed's example does)
    _state["lang"] = lang if ok else "en"
    core_i18n.set_language(_state["lang"])
    return ok


def has_system_cjk_font() -> bool:
    return bool(QFontDatabase.families(QFontDatabase.WritingSystem.SimplifiedChinese))


def ensure_cjk_font() -> str | None:
    """The family that draws Chinese: a system font when there is one, else the bundled subset (registered once
    and put after every family the window uses, so Latin text keeps its font and Chinese falls back to it)."""
    if _state["font"] is not None:
        return _state["font"]
    if has_system_cjk_font():
        _state["font"] = QFontDatabase.families(QFontDatabase.WritingSystem.SimplifiedChinese)[0]
        return _state["font"]
    path = asset_path("fonts", FONT_FILE)
    fid = QFontDatabase.addApplicationFont(str(path)) if path.is_file() else -1
    if fid < 0:
        return None
    family = QFontDatabase.applicationFontFamilies(fid)[0]
    app = QApplication.instance()
    base = [app.font().family()] if app is not None else []
    for fam in dict.fromkeys(base + ["Sans Serif", "DejaVu Sans", "DejaVu Sans Mono", "Monospace", "monospace",
                                     "Helvetica", "Arial"]):
        subs = QFont.substitutes(fam)
        if family not in subs:
            QFont.insertSubstitution(fam, family)
    _state["font"] = family
    return family


def switch(win, lang: str):
    """The window again, in ``lang``: a new MainWindow showing what ``win`` showed; ``win`` closes. Returns the
    new window (the live agent or proxy of the old window stops with it)."""
    lang = normalise(lang)
    win.settings.set("view/language", lang)
    install(lang)
    snap = win.session.snapshot() if win.session.source.path else None
    lesson = win.lesson_controller.lesson
    k = win.lesson_controller.k
    presenter = win.presenter
    new = type(win)(win.settings, workspace=win.session.workspace)   # the window's own class: no import up
    new.restoreGeometry(win.saveGeometry())
    new.restoreState(win.saveState())
    new.splitter.restoreState(win.splitter.saveState())
    new.set_dark(win.dark_action.isChecked(), save=False)
    new.dark_action.setChecked(win.dark_action.isChecked())
    zoom = win.zoom if not presenter else win.presenter_mode.saved_zoom(win.zoom)
    new.set_zoom(zoom, save=False)
    new.resize(win.size())
    if win.isVisible():
        new.show()
    if lesson is not None:
        new.lesson_controller.open(lesson, k)
    else:
        if snap is not None:
            new.session.restore(snap)
        if presenter:
            new.set_presenter(True, zoom=win.zoom)
    _state["windows"] = [w for w in _state["windows"] if w is not win] + [new]
    win.close()
    return new
