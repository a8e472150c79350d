"""Background work for the window: results are posted back to the GUI thread.

Shaped after Orange's ConcurrentWidgetMixin: ``TaskRunner.start(fn, *args)``
runs ``fn(*args, cancel=Event)`` in a QThreadPool and emits ``sigDone(task_id,
result)`` or ``sigFailed(task_id, exception)`` in the GUI thread; ``cancel()``
sets the task's Event (Engine.run checks it between layers and summarizers may
check it during a call). Stale results are recognised by their task id.

The jobs themselves are pure core functions (``core.pipeline.run_with_variants``,
``core.replay.compare``, ``ReplayResult.rerun``).
"""
from __future__ import annotations

import threading
import time
from typing import Callable

from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal


class _Signals(QObject):
    done = Signal(int, object)
    failed = Signal(int, object)
    progress = Signal(int, str)


class _Task(QRunnable):
    def __init__(self, task_id: int, fn: Callable, args: tuple, kwargs: dict, cancel: threading.Event,
                 signals: _Signals):
        super().__init__()
        self.setAutoDelete(True)
        self.task_id, self.fn, self.args, self.kwargs, self.cancel = task_id, fn, args, kwargs, cancel
        self.signals = signals

    def run(self) -> None:
        kwargs = dict(self.kwargs)
        if kwargs.pop("_progress", False):
            kwargs["progress"] = lambda text: self.signals.progress.emit(self.task_id, str(text))
        try:
            res = self.fn(*self.args, cancel=self.cancel, **kwargs)
        except BaseException as e:  # noqa: BLE001 - posted to the GUI thread, shown with what to do
            self.signals.failed.emit(self.task_id, e)
            return
        self.signals.done.emit(self.task_id, res)


class TaskRunner(QObject):
    """One logical job at a time (a new start cancels the previous one)."""
    sigStarted = Signal(int)
    sigDone = Signal(int, object)
    sigFailed = Signal(int, object)
    sigProgress = Signal(int, str)

    def __init__(self, parent=None, pool: QThreadPool | None = None):
        super().__init__(parent)
        self.pool = pool or QThreadPool.globalInstance()
        # no parent: a task still running when the window closes keeps its signal object alive (it
        # holds a reference) and Qt drops the connection to the destroyed runner instead of crashing
        self._signals = _Signals()
        self._signals.done.connect(self._done)
        self._signals.failed.connect(self._failed)
        self._signals.progress.connect(self._progress)
        self._next = 0
        self.current: int | None = None
        self._cancel: threading.Event | None = None
        self.started_at = 0.0

    def start(self, fn: Callable, *args, progress: bool = False, **kwargs) -> int:
        """``progress=True``: fn gets a ``progress(text)`` callable whose calls arrive as sigProgress."""
        self.cancel()
        if progress:
            kwargs["_progress"] = True
        self._next += 1
        tid = self._next
        self.current = tid
        self._cancel = threading.Event()
        self.started_at = time.perf_counter()
        self.pool.start(_Task(tid, fn, args, kwargs, self._cancel, self._signals))
        self.sigStarted.emit(tid)
        return tid

    def cancel(self) -> None:
        if self._cancel is not None:
            self._cancel.set()

    @property
    def busy(self) -> bool:
        return self.current is not None

    def _progress(self, tid: int, text: str) -> None:
        if tid == self.current:
            self.sigProgress.emit(tid, text)

    def _done(self, tid: int, res) -> None:
        if tid != self.current:
            return           # a stale result from a cancelled run
        self.current = None
        self.sigDone.emit(tid, res)

    def _failed(self, tid: int, exc) -> None:
        if tid != self.current:
            return
        self.current = None
        self.sigFailed.emit(tid, exc)

    def wait(self, ms: int = 30000) -> bool:
        return self.pool.waitForDone(ms)
