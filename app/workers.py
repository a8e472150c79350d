"""Background work for the window: ``core.jobs`` workers on a Qt executor.

``QtExecutor`` runs tasks in a QThreadPool and posts their callbacks (done, partial, progress,
exception) to the GUI thread through a queued signal, so a ``core.jobs.Worker`` (the one worker
abstraction, shaped after Orange's ConcurrentWidgetMixin) drives the window's session, the live
agent and anything else that must not freeze the window. A task is started on the next turn of
the event loop, so the screen that asked for it is painted first.
"""
from __future__ import annotations

import sys

import shiboken6
from PySide6.QtCore import QObject, QRunnable, QThreadPool, QTimer, Signal, Slot

from compactscope.core.runtime.jobs import Executor


class _Poster(QObject):
    """Lives in the GUI thread; a signal emitted from a worker thread is queued to it."""
    sigPost = Signal(object, object)

    def __init__(self):
        super().__init__()
        self.sigPost.connect(self._call)

    @Slot(object, object)
    def _call(self, callback, args) -> None:
        owner = getattr(callback, "__self__", None)
        if isinstance(owner, QObject) and not shiboken6.isValid(owner):
            return                # its window or controller was deleted while the task ran: nobody to tell
        callback(*args)


class _Task(QRunnable):
    def __init__(self, task):
        super().__init__()
        self.setAutoDelete(True)
        self.task = task

    def run(self) -> None:
        self.task()


SWITCH_INTERVAL = 0.0002     # seconds a worker running Python keeps the interpreter lock from the GUI thread


def share_the_interpreter() -> None:
    """Workers run Python beside the GUI thread, which waits up to ``sys.getswitchinterval()`` for the
    interpreter lock each time it takes it back (each event, timer tick and paint handled in Python): with
    the default 5 ms a layer step at 10k messages took ~2.5x as long while a worker ran Python, with 1 ms
    ~1.6x (hermes, a busy worker thread, medians of 30 steps). A worker then hands the lock over more often
    only while the GUI thread asks for it."""
    if sys.getswitchinterval() > SWITCH_INTERVAL:
        sys.setswitchinterval(SWITCH_INTERVAL)


class QtExecutor(Executor):
    """Tasks in ``pool`` (default: the global pool), callbacks in the GUI thread."""

    def __init__(self, pool: QThreadPool | None = None, defer: bool = True):
        share_the_interpreter()
        self.pool = pool or QThreadPool.globalInstance()
        self.defer = defer
        # no parent: a task still running when the window closes keeps its poster alive, and its
        # worker drops the result (the window cancels its workers when it closes)
        self._poster = _Poster()

    def submit(self, task) -> None:
        if self.defer:
            QTimer.singleShot(0, lambda: self.pool.start(_Task(task)))
        else:
            self.pool.start(_Task(task))

    def post(self, callback, *args) -> None:
        try:
            self._poster.sigPost.emit(callback, args)
        except RuntimeError:      # the poster is gone (the application is exiting): nobody is left to tell
            pass

    def wait(self, timeout: float | None = None) -> bool:
        return self.pool.waitForDone(-1 if timeout is None else int(timeout * 1000))


def single_thread_executor(parent: QObject | None = None) -> QtExecutor:
    """An executor with its own one-thread pool (work that must never hold up the others)."""
    pool = QThreadPool(parent)
    pool.setMaxThreadCount(1)
    return QtExecutor(pool)
