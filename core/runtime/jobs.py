"""Background work with results posted home: the one worker abstraction of the project.

Shaped after Orange's ``ConcurrentWidgetMixin``: a ``Worker`` runs one logical task at a time,
``start(fn, *args)`` calls ``fn(*args, state=TaskState)`` through an ``Executor`` and delivers
``on_done(result)``, ``on_partial(value)``, ``on_progress(text)`` or ``on_exception(exc)`` on the
executor's home thread; ``cancel()`` sets the task's Event (``Engine.run`` checks it between
layers, summarizers during their call), and a cancelled task's late results are dropped.

Executors decide where tasks run and where callbacks arrive:

* ``InlineExecutor``: runs the task at once in the caller's thread (tests, the CLI, lessons and
  reports that drive a ``Session`` without a window);
* ``ThreadExecutor``: a thread per task, callbacks queued until ``drain()`` (or delivered from the
  worker thread when it has no queue);
* the window's ``app.workers.QtExecutor``: a QThreadPool, callbacks posted to the GUI thread.

A ``Worker(courteous=True)`` runs background work nobody waits for (the window's events): each time its task
looks at ``state.cancel`` it first waits while the user is busy (``user_active()``, which the window calls on a
step, a selection...) or a ``Worker(foreground=True)`` task (a load, a pipeline run) runs in another thread, so
the interpreter lock is the window's and that run's meanwhile.

Pure Python, no Qt.
"""
from __future__ import annotations

import queue
import threading
import time
from typing import Any, Callable

REPLACE = "replace"      # a new start cancels the running task (its result is dropped)
LATEST = "latest"        # a new start waits for the running task; only the newest waiting one runs next


USER_PAUSE = 0.3        # seconds courteous work waits after the user's last action
MAX_WAIT = 2.0          # then it runs on for RUN_SLICE even while the user goes on (it is never starved)
RUN_SLICE = 0.2


class _Courtesy:
    """When courteous work waits: the end of the user's last action's pause, and the threads running a
    foreground task (thread id -> how many)."""

    def __init__(self) -> None:
        self.until = 0.0
        self.foreground: dict[int, int] = {}
        self.lock = threading.Lock()

    def should_wait(self) -> bool:
        me = threading.get_ident()
        return time.monotonic() < self.until or any(t != me for t in list(self.foreground))

    def enter(self) -> None:
        me = threading.get_ident()
        with self.lock:
            self.foreground[me] = self.foreground.get(me, 0) + 1

    def leave(self) -> None:
        me = threading.get_ident()
        with self.lock:
            n = self.foreground.get(me, 1) - 1
            if n > 0:
                self.foreground[me] = n
            else:
                self.foreground.pop(me, None)


COURTESY = _Courtesy()


def user_active(seconds: float = USER_PAUSE) -> None:
    """The user is doing something (a step, a selection): courteous work waits for ``seconds`` from now."""
    COURTESY.until = max(COURTESY.until, time.monotonic() + seconds)


class CourteousEvent(threading.Event):
    """A courteous task's cancel Event: ``is_set()`` first waits while ``COURTESY`` says so (at most
    ``MAX_WAIT`` at a time, then ``RUN_SLICE`` without waiting), sleeping with the interpreter lock released."""

    def __init__(self) -> None:
        super().__init__()
        self._free_until = 0.0

    def is_set(self) -> bool:
        now = time.monotonic()
        if now >= self._free_until:
            end = now + MAX_WAIT
            while not super().is_set() and COURTESY.should_wait():
                now = time.monotonic()
                if now >= end:
                    self._free_until = now + RUN_SLICE
                    break
                time.sleep(0.01)
        return super().is_set()


class TaskState:
    """What a running task sees: ``cancel`` (an Event), and ways to report back."""

    def __init__(self, worker: "Worker", tid: int, courteous: bool = False):
        self.cancel: threading.Event = CourteousEvent() if courteous else threading.Event()
        self._worker, self._tid = worker, tid

    def is_interruption_requested(self) -> bool:
        return self.cancel.is_set()

    def cancelled(self) -> bool:
        """Whether the task was cancelled, without a courteous task's wait (``cancel.is_set()`` waits first)."""
        return threading.Event.is_set(self.cancel)

    def set_partial_result(self, value: Any) -> None:
        self._worker._post(self._tid, "partial", value)

    def set_progress(self, text: str) -> None:
        self._worker._post(self._tid, "progress", str(text))


class Executor:
    """Runs ``task()`` somewhere and delivers ``callback(*args)`` on its home thread."""

    def submit(self, task: Callable[[], None]) -> None:
        raise NotImplementedError

    def post(self, callback: Callable, *args) -> None:
        raise NotImplementedError

    def wait(self, timeout: float | None = None) -> bool:
        """Block until every submitted task finished (and, where it applies, its callbacks ran)."""
        return True


class InlineExecutor(Executor):
    """Everything at once, in the calling thread."""

    def submit(self, task: Callable[[], None]) -> None:
        task()

    def post(self, callback: Callable, *args) -> None:
        callback(*args)


class ThreadExecutor(Executor):
    """A daemon thread per task. With ``queued=True`` callbacks wait in a queue until ``drain()``
    runs them in the calling thread (a headless event loop); otherwise they run in the worker."""

    def __init__(self, queued: bool = True):
        self.queued = queued
        self._q: queue.Queue = queue.Queue()
        self._threads: list[threading.Thread] = []

    def submit(self, task: Callable[[], None]) -> None:
        t = threading.Thread(target=task, name="compactscope-job", daemon=True)
        self._threads = [x for x in self._threads if x.is_alive()] + [t]
        t.start()

    def post(self, callback: Callable, *args) -> None:
        if self.queued:
            self._q.put((callback, args))
        else:
            callback(*args)

    def drain(self) -> int:
        n = 0
        while True:
            try:
                cb, args = self._q.get_nowait()
            except queue.Empty:
                return n
            cb(*args)
            n += 1

    def wait(self, timeout: float | None = None) -> bool:
        end = None if timeout is None else time.monotonic() + timeout
        while True:
            for t in list(self._threads):
                t.join(None if end is None else max(0.0, end - time.monotonic()))
            self.drain()
            if not any(t.is_alive() for t in self._threads) and self._q.empty():
                return True
            if end is not None and time.monotonic() >= end:
                return False


class Worker:
    """One logical task at a time (see the module doc). ``policy``: REPLACE (default) or LATEST."""

    def __init__(self, executor: Executor, on_done: Callable[[Any], Any] | None = None,
                 on_exception: Callable[[BaseException], Any] | None = None,
                 on_partial: Callable[[Any], Any] | None = None, on_progress: Callable[[str], Any] | None = None,
                 policy: str = REPLACE, name: str = "", courteous: bool = False, foreground: bool = False):
        """``courteous``: the task waits while the user is busy or a foreground task runs (see the module doc);
        ``foreground``: courteous tasks wait while this one's runs."""
        self.executor, self.policy, self.name = executor, policy, name
        self.courteous, self.foreground = courteous, foreground
        self.on_done, self.on_exception, self.on_partial, self.on_progress = on_done, on_exception, on_partial, \
            on_progress
        self._next = 0
        self.current: int | None = None            # the task whose results are delivered
        self._state: TaskState | None = None
        self._pending: tuple | None = None         # LATEST: (fn, args, kwargs) waiting for the current one
        self.started_at = 0.0
        self._lock = threading.Lock()

    @property
    def busy(self) -> bool:
        return self.current is not None or self._pending is not None

    @property
    def waiting(self) -> bool:
        """LATEST: a newer start waits for the running task."""
        return self._pending is not None

    def start(self, fn: Callable, *args, **kwargs) -> int:
        """Run ``fn(*args, state=TaskState, **kwargs)``; returns the task id."""
        if self.policy == LATEST and self.current is not None:
            self._pending = (fn, args, kwargs)
            return self.current
        self.cancel()
        self._next += 1
        tid = self._next
        state = TaskState(self, tid, self.courteous)
        self.current, self._state, self.started_at = tid, state, time.perf_counter()
        foreground = self.foreground

        def task():
            if foreground:
                COURTESY.enter()
            try:
                res = fn(*args, state=state, **kwargs)
            except BaseException as e:  # noqa: BLE001 - delivered home, shown with what to do
                self._post(tid, "exception", e)
                return
            finally:
                if foreground:
                    COURTESY.leave()
            self._post(tid, "done", res)
        self.executor.submit(task)
        return tid

    def cancel(self) -> None:
        """Ask the running task to stop; its results are no longer delivered. Drops a waiting start."""
        self._pending = None
        if self._state is not None:
            self._state.cancel.set()
        self.current = self._state = None

    def interrupt(self) -> None:
        """Ask the running task to stop early; what it made so far is still delivered (on_done)."""
        self._pending = None
        if self._state is not None:
            self._state.cancel.set()

    def _post(self, tid: int, kind: str, value: Any) -> None:
        self.executor.post(self._deliver, tid, kind, value)

    def _deliver(self, tid: int, kind: str, value: Any) -> None:
        if tid != self.current:
            return                          # a cancelled or replaced task
        if kind == "progress":
            if self.on_progress is not None:
                self.on_progress(value)
            return
        if kind == "partial":
            if self.on_partial is not None:
                self.on_partial(value)
            return
        self.current = self._state = None
        try:
            if kind == "done":
                if self.on_done is not None:
                    self.on_done(value)
            elif self.on_exception is not None:
                self.on_exception(value)
        finally:
            pending, self._pending = self._pending, None
            if pending is not None and self.current is None:
                fn, args, kwargs = pending
                self.start(fn, *args, **kwargs)
