"""A lesson in the window: its slides shown one by one (``core.lessons``), the narration panel, the keys.

``LessonController(win)`` opens a ``core.lessons.Lesson`` and shows slide k: the session restores the slide's
state (file, strategy, parameters, variant, order, stage, mode, tab, selection, timeline), the window applies
its zoom and layout (the presenter preset: large type, inspector and parameters hidden, narration shown), the
explanations highlight its ``focus`` and the narration panel says its text in the window's language.
PageDown/PageUp (what presenter remotes send; also the media next/previous and forward/back keys) move
between slides. Each slide is a frame of ``compactscope FILE --screenshots DIR`` and ``compactscope lesson
NAME --export DIR`` (app/screenshots.py).
"""
from __future__ import annotations

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtGui import QKeySequence, QShortcut

from compactscope.core.session import lesson as lessons
from compactscope.core.session.model import TABS

from compactscope.app.screenshots import Frame, register_frames, slug
from compactscope.widgets.i18n import tr

NEXT_KEYS = (Qt.Key.Key_PageDown, Qt.Key.Key_MediaNext, Qt.Key.Key_Forward)
PREVIOUS_KEYS = (Qt.Key.Key_PageUp, Qt.Key.Key_MediaPrevious, Qt.Key.Key_Back)


class LessonController(QObject):
    sigSlideChanged = Signal(int)          # 1-based: the slide whose state the session is now restoring

    def __init__(self, win):
        super().__init__(win)
        self.win = win
        self.lesson: lessons.Lesson | None = None
        self.k = 0
        panel = win.narration
        panel.sigNext.connect(self.next)
        panel.sigPrevious.connect(self.previous)
        self.shortcuts = []
        for keys, slot in ((NEXT_KEYS, self.next), (PREVIOUS_KEYS, self.previous)):
            for key in keys:
                sc = QShortcut(QKeySequence(key), win)
                sc.setContext(Qt.WindowShortcut)
                sc.activated.connect(slot)
                self.shortcuts.append(sc)
        win.sigStageShown.connect(lambda _k: self._apply_focus())

    @property
    def active(self) -> bool:
        return self.lesson is not None

    @property
    def slide(self) -> lessons.Slide | None:
        return self.lesson.slides[self.k - 1] if self.lesson is not None and self.k else None

    def open(self, lesson: lessons.Lesson | str, k: int = 1) -> bool:
        """Open a lesson (or its name or path) at slide k; False with the error in the banner."""
        if not isinstance(lesson, lessons.Lesson):
            try:
                lesson = lessons.load(lesson)
            except lessons.LessonError as e:
                self.win.show_error(str(e), tr("Pick a lesson from the Lesson menu (compactscope lessons lists them)."))
                return False
        self.lesson = lesson
        self.win.dock_narration.show()
        self.win.dock_narration.raise_()
        return self.show(k)

    def close(self) -> None:
        self.lesson, self.k = None, 0
        self.win.dock_narration.hide()
        self.win.set_presenter(False)
        self.win.explainer.set_focus("")
        self.win.diff_panel.edits.set_focus("")

    def show(self, k: int) -> bool:
        if self.lesson is None:
            return False
        k = max(1, min(int(k), len(self.lesson.slides)))
        slide = self.lesson.slide(k)
        self.k = k
        self.say()
        st = slide.state
        self.win.set_presenter(st.get("layout", "presenter") == "presenter", zoom=st.get("zoom"))
        ok = lessons.play(self.win.session, self.lesson, slide)
        if st.get("show"):
            self.win.presenter_mode.show_panel(st["show"])       # the chart the narration points at, large
        elif self.win.tabs.currentIndex() >= len(TABS):            # a panel the previous slide showed: the tab again
            self.win.tabs.setCurrentIndex(TABS.index(self.win.session.view.tab))
        self.sigSlideChanged.emit(k)
        self._apply_focus()
        return ok

    def say(self) -> None:
        """The narration panel shows the current slide in the window's language."""
        if self.lesson is None or not self.k:
            return
        lang = getattr(self.win, "language", "en")
        slide = self.slide
        self.win.narration.show_slide(self.lesson.title_in(lang), self.k, len(self.lesson.slides),
                                      slide.title_in(lang), slide.narration_in(lang))

    def next(self) -> None:
        if self.lesson is not None and self.k < len(self.lesson.slides):
            self.show(self.k + 1)

    def previous(self) -> None:
        if self.lesson is not None and self.k > 1:
            self.show(self.k - 1)

    def _apply_focus(self) -> None:
        slide = self.slide
        focus = lessons.text(slide.state.get("focus"), "en") if slide is not None else ""
        self.win.explainer.set_focus(focus)
        self.win.diff_panel.edits.set_focus(focus)

    def frames(self) -> list[Frame]:
        """One frame per slide (the screenshots machinery's frame source)."""
        if self.lesson is None:
            return []
        return [Frame(f"{self.lesson.name}-{k:02d}-{slug(s.title_in('en'))}", lambda k=k: self.show(k))
                for k, s in enumerate(self.lesson.slides, 1)]


@register_frames
def lesson_frames(win) -> list[Frame]:
    """``--screenshots DIR``: the open lesson's slides after the layer steps."""
    c = getattr(win, "lesson_controller", None)
    return c.frames() if c is not None else []
