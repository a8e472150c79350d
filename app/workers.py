"""Background work for the window: results are posted back to the GUI thread.

Shaped after Orange's ConcurrentWidgetMixin: ``TaskRunner.start(fn, *args)``
runs ``fn(*args, cancel=Event)`` in a QThreadPool and emits ``sigDone(task_id,
result)`` or ``sigFailed(task_id, exception)`` in the GUI thread; ``cancel()``
sets the task's Event (Engine.run checks it between layers and summarizers may
check it during a call). Stale results are recognised by their task id.

``run_pipeline_job`` is the pure (Qt-free) job the window runs.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal


@dataclass
class PipelineResult:
    trace: Any
    readme_trace: Any = None
    readme_error: str | None = None
    seconds: float = 0.0
    cancelled: bool = False
    params: dict = field(default_factory=dict)


def snip_prefix(strategy) -> list[str] | None:
    """The layer names up to and including the first snip layer (for the README variant run)."""
    names = strategy.layer_names
    for k, n in enumerate(names):
        if "snip" in n:
            return names[:k + 1]
    return None


def has_readme_variant(strategy) -> bool:
    try:
        p = strategy.param("variant")
    except KeyError:
        return False
    return bool(p.choices) and "readme" in p.choices


def with_progress(strategy, progress: Callable[[str], Any] | None):
    """A copy of the strategy whose layers report "k/n name" before they run (same names, same functions)."""
    if progress is None:
        return strategy
    import dataclasses
    n = len(strategy.layers)

    def wrap(k, layer):
        def fn(messages, ctx, _fn=layer.fn, _label=f"{k}/{n} {layer.label or layer.name}"):
            progress(_label + (" (LLM)" if layer.llm else ""))
            return _fn(messages, ctx)
        return dataclasses.replace(layer, fn=fn)
    return dataclasses.replace(strategy, layers=tuple(wrap(k + 1, l) for k, l in enumerate(strategy.layers)))


def run_pipeline_job(messages: list, conversation, strategy, params: dict, summarizer, workspace, meter=None,
                     compare_readme: bool = True, cancel: threading.Event | None = None,
                     progress: Callable[[str], Any] | None = None) -> PipelineResult:
    """Run the strategy (and, when it has one, the README snip variant up to the snip layer).
    ``progress(text)`` is called before each layer runs."""
    from compactscope.core import strategies as _strategies
    from compactscope.core.pipeline import Engine
    from compactscope.core.size import SizeMeter
    t0 = time.perf_counter()
    meter = meter or SizeMeter()
    if isinstance(strategy, str):
        strategy = _strategies.get(strategy)
    engine = Engine(with_progress(strategy, progress), dict(params), workspace=workspace, summarizer=summarizer,
                    meter=meter)
    trace = engine.run(messages, conversation=conversation, cancel=cancel)
    readme_trace = readme_error = None
    if compare_readme and has_readme_variant(strategy) and engine.params.get("variant") != "readme" \
            and not (cancel is not None and cancel.is_set()):
        if progress is not None:
            progress("README variant")
        layers = snip_prefix(strategy)
        if layers:
            try:
                rp = dict(engine.params, variant="readme")
                readme = Engine(strategy, rp, workspace=workspace, summarizer=summarizer, meter=meter)
                readme_trace = readme.run(messages, conversation=conversation, cancel=cancel, layers=layers)
            except Exception as e:   # the comparison must never sink the main result
                readme_error = f"the README variant could not run: {type(e).__name__}: {e}"
    cancelled = bool(cancel is not None and cancel.is_set())
    return PipelineResult(trace, readme_trace, readme_error, time.perf_counter() - t0, cancelled, dict(engine.params))


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
