"""Screenshots of the events views (issue 23): the opening view of a compacted session, the events panel, the real
summary beside the simulated one, a watch; each at a window size, in a language.

    python -m compactscope.app.events_shots FILE TERM OUT_DIR [--sizes 1024x768,1920x1080] [--langs en,zh_CN]

Offscreen when there is no display (QT_QPA_PLATFORM=offscreen). Writes OUT_DIR/<lang>-<size>-<view>.png and
prints each path."""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

VIEWS = ("opening", "events", "summaries", "watch")


def shoot(win, term: str, out: Path, tag: str) -> list[Path]:
    """The four views of the window ``win`` (a compacted file already open and idle), saved under ``out``."""
    from PySide6.QtCore import Qt
    ec = win.events_controller
    paths = []

    def save(view: str) -> None:
        ec.wait(120000)
        p = out / f"{tag}-{view}.png"
        win.grab().save(str(p))
        paths.append(p)

    save("opening")
    ec.tabs.setCurrentWidget(ec.panel)
    ec.dock.raise_()
    win.resizeDocks([ec.dock], [max(220, win.height() // 3)], Qt.Vertical)
    ec.step(1)
    save("events")
    ec.tabs.setCurrentWidget(ec.retention_view)
    win.resizeDocks([ec.dock], [max(300, int(win.height() * 0.48))], Qt.Vertical)
    save("summaries")
    ec.watch_box.set_term(term)
    save("watch")
    return paths


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("file")
    ap.add_argument("term")
    ap.add_argument("out")
    ap.add_argument("--sizes", default="1024x768,1920x1080")
    ap.add_argument("--langs", default="en,zh_CN")
    args = ap.parse_args(argv)
    if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtWidgets import QApplication
    app = QApplication.instance() or QApplication([])
    from compactscope.app import language
    from compactscope.app.main_window import MainWindow
    from compactscope.app.settings import Settings
    from compactscope.core.files.workspace import Workspace
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for lang in args.langs.split(","):
        language.install(lang)
        for size in args.sizes.split(","):
            w, h = (int(x) for x in size.split("x"))
            with tempfile.TemporaryDirectory() as tmp:
                win = MainWindow(Settings(enabled=False), workspace=Workspace(Path(tmp) / "ws"))
                win.resize(w, h)
                win.show()
                if not win.open_path(args.file, remember=False):
                    print(f"cannot open {args.file}", file=sys.stderr)
                    return 2
                win.events_controller.wait(120000)
                for p in shoot(win, args.term, out, f"{lang}-{size}"):
                    print(p)
                win.close()
                app.processEvents()
    return 0


if __name__ == "__main__":
    sys.exit(main())
