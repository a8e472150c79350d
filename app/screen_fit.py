"""The window fits the screen it opens on: never larger than the screen's available geometry (a projector at
1024x768 with no window manager shows all of it), its geometry remembered per screen in the settings.

``restore(win, saved)`` sizes a new window: the geometry saved for this screen (``window/geometry@NAME:WxH``), else
(settings from before screens were told apart) ``window/geometry``, else the default 1400x900; in every case cut
to the available geometry and moved inside it. ``save(win)`` keeps the geometry under the screen's key. ``fill(win)``
gives a presenter the whole screen (and ``unfill`` the size it had). The offscreen platform (screenshots, tests)
has no real screen: a window there keeps the size asked for.
"""
from __future__ import annotations

from PySide6.QtCore import QByteArray, QRect, QSize
from PySide6.QtGui import QGuiApplication

DEFAULT = QSize(1400, 900)


def real_screen() -> bool:
    """A screen a person looks at (xcb, wayland, windows, cocoa...): not the offscreen or minimal platform."""
    return QGuiApplication.platformName() not in ("offscreen", "minimal", "")


def screen_of(win):
    return win.screen() or QGuiApplication.primaryScreen()


def screen_key(screen) -> str:
    """The settings key of the geometry on this screen: its name and size (a projector plugged into the same port
    at another resolution is another screen)."""
    if screen is None:
        return "window/geometry"
    g = screen.geometry()
    name = (screen.name() or "screen").replace("/", "_")
    return f"window/geometry@{name}:{g.width()}x{g.height()}"


def available(win) -> QRect | None:
    s = screen_of(win)
    return s.availableGeometry() if s is not None and real_screen() else None


def frame_extra(win) -> QSize:
    """What the window manager's frame adds around the window (nothing without a window manager)."""
    f, g = win.frameGeometry(), win.geometry()
    return QSize(max(0, f.width() - g.width()), max(0, f.height() - g.height()))


def clamp(win, avail: QRect | None = None) -> None:
    """Cut the window to the available geometry and move it inside (nothing on the offscreen platform)."""
    avail = avail if avail is not None else available(win)
    if avail is None or avail.isEmpty():
        return
    extra = frame_extra(win)
    w = min(win.width(), avail.width() - extra.width())
    h = min(win.height(), avail.height() - extra.height())
    if (w, h) != (win.width(), win.height()):
        win.resize(max(w, 200), max(h, 150))
    f = win.frameGeometry()
    x = min(max(f.x(), avail.x()), avail.x() + avail.width() - f.width())
    y = min(max(f.y(), avail.y()), avail.y() + avail.height() - f.height())
    if (x, y) != (f.x(), f.y()):
        win.move(max(x, avail.x()), max(y, avail.y()))


def _per_screen(settings) -> bool:
    return str(settings.value("window/per_screen", "false")).lower() in ("true", "1")


def restore(win, settings) -> None:
    """Size a new window for its screen (see the module's text)."""
    avail = available(win)
    geo = settings.value(screen_key(screen_of(win))) if avail is not None else None
    if (not isinstance(geo, QByteArray) or geo.isEmpty()) and not _per_screen(settings):
        geo = settings.value("window/geometry")      # saved before screens were told apart
    if isinstance(geo, QByteArray) and not geo.isEmpty():
        win.restoreGeometry(geo)
    else:
        win.resize(DEFAULT)
        if avail is not None:
            win.move(avail.topLeft())
    clamp(win, avail)
    state = settings.value("window/state")
    if not isinstance(state, QByteArray) or state.isEmpty():
        small_screen_docks(win)


def small_screen_docks(win) -> None:
    """A first start on a small screen (a projector): the inspector takes a quarter of the width, not a third,
    (the chart keeps its height: shorter, its plots are squashed)."""
    from PySide6.QtCore import Qt
    if win.width() < 1280 and hasattr(win, "dock_inspector"):
        win.resizeDocks([win.dock_inspector], [max(220, int(win.width() * 0.25))], Qt.Horizontal)


def fit(win, w: int | None = None, h: int | None = None) -> None:
    """``--size WxH`` (or the default size when None), then cut to the screen."""
    win.resize(w or DEFAULT.width(), h or DEFAULT.height())
    clamp(win)


def save(win, settings) -> None:
    geo = win.saveGeometry()
    settings.set("window/geometry", geo)
    if real_screen():
        settings.set(screen_key(screen_of(win)), geo)
        settings.set("window/per_screen", True)


def fill(win) -> QByteArray | None:
    """The presenter's window: the whole available geometry; returns the geometry to come back to (None on the
    offscreen platform, where the window keeps its size)."""
    avail = available(win)
    if avail is None:
        return None
    before = win.saveGeometry()
    extra = frame_extra(win)
    win.move(avail.topLeft())
    win.resize(avail.width() - extra.width(), avail.height() - extra.height())
    return before


def unfill(win, before: QByteArray | None) -> None:
    if before is not None and not before.isEmpty():
        win.restoreGeometry(before)
        clamp(win)
