"""How a window ends: deleted while Qt still runs, after the workers that post to it are done."""
from __future__ import annotations


def dispose(app, win) -> None:
    """Delete the closed window while Qt still runs: left to the interpreter's exit, the panels presenter mode
    moved between docks and tabs could be destroyed after their new parent (a crash at exit, exit code -11).
    A window still shown (an event loop that returned early: a test) is left alone."""
    if win.isVisible():
        return
    from PySide6.QtCore import QCoreApplication, QEvent, QThreadPool
    for pool in [QThreadPool.globalInstance()] + win.findChildren(QThreadPool):
        pool.waitForDone(30000)       # a replay or a cross-check still running posts to the window: let it end
    app.processEvents()
    qs = getattr(win, "qsession", None)
    if qs is not None:
        qs.detach()                   # what the session says from now on no longer reaches the window's signals
    win.deleteLater()
    QCoreApplication.sendPostedEvents(None, QEvent.DeferredDelete)
    app.processEvents()
