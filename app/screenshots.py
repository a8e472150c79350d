"""``compactscope FILE --screenshots DIR``: one PNG of the window per frame: every layer step (Original,
then after each layer), and whatever other frame sources are registered.

A frame is a name and a way to bring the window to it. ``register_frames(source)`` adds a source, a
function ``source(win) -> [Frame]`` (lessons add one PNG per slide this way); ``frames(win)`` lists the
layer steps first, then each registered source's frames in the order they were registered.
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from compactscope.core.session.model import stage_label


def save_image(image, path) -> bool:
    """Write a QImage or QPixmap to ``path`` (format from its suffix, PNG by default) atomically: a temporary
    file beside it takes the name at the end, a symlink at ``path`` is refused (``core.safeio``), a new file
    gets the user's usual mode. False when it cannot be written."""
    from compactscope.core.files.safeio import atomic_path, new_file_mode
    fmt = (Path(path).suffix.lstrip(".") or "png").upper()
    try:
        with atomic_path(path, mode=new_file_mode(path)) as tmp:
            if not image.save(str(tmp), fmt):
                raise OSError(f"could not write {path}")
    except OSError:
        return False
    return True


@dataclass(frozen=True)
class Frame:
    name: str                          # the PNG's name, without ".png"
    show: Callable[[], None]           # bring the window to this frame


FRAME_SOURCES: list[Callable] = []


def register_frames(source: Callable) -> Callable:
    """Add a frame source (``source(win) -> [Frame]``); returns it, so it can decorate."""
    if source not in FRAME_SOURCES:
        FRAME_SOURCES.append(source)
    return source


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower()[:40] or "frame"


def layer_frames(win) -> list[Frame]:
    """Original, then the stage after each layer of the run shown."""
    s = win.session
    trace = s.trace
    names = ["original"] + ([st.layer for st in trace.steps] if trace is not None else [])
    return [Frame(f"{k:02d}-{slug(stage_label(s.setup.strategy, n))}", functools.partial(s.view.set_stage, k))
            for k, n in enumerate(names)]


def frames(win) -> list[Frame]:
    out = layer_frames(win)
    for source in FRAME_SOURCES:
        out += list(source(win))
    return out


def write_screenshots(app, win, folder: str, timeout_ms: int = 120000, only: list | None = None) -> list[Path]:
    """Show every frame in turn (``only`` these, else ``frames(win)``) and save a PNG of the window for each in
    ``folder`` (made if missing)."""
    out_dir = Path(folder)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for f in (frames(win) if only is None else only):
        f.show()
        win.wait_idle(timeout_ms)
        for _ in range(3):
            app.processEvents()
        path = out_dir / f"{f.name}.png"
        if not save_image(win.grab().toImage(), path):
            raise OSError(f"could not write {path}")
        written.append(path)
    return written


def save_screenshot_dialog(win) -> None:
    """File > Save Screenshot: the window as a PNG where the user picks; a file that cannot be written says so."""
    from PySide6.QtWidgets import QFileDialog

    from compactscope.widgets.i18n import tr
    path, _ = QFileDialog.getSaveFileName(win, tr("Save a screenshot"), "compactscope.png", tr("PNG (*.png)"))
    if path and not save_image(win.grab(), path):
        win.show_error(tr("The screenshot could not be written to {path}.").format(path=path),
                       tr("Choose another file or folder (one you can write to; not a symbolic link)."))
