"""The cyclic GC paused while a big long-lived result is built (a load, a pipeline run, one layer's output).

A full collection walks every tracked object. While a layer builds its output over 100k messages (a new dict per
replaced tool result, an edit per change) the youngest generations fill again and again and the oldest one is
collected whenever the objects promoted since the last full collection pass a quarter of those it kept: at 100k
messages micro_compact set off two full collections, and its cost per message was 1.7x the one at 10k (2.5x
without the loaded transcript frozen). What a pipeline run or a load builds is long-lived and acyclic (messages,
lists, rows, edits), so it is frozen out of the GC when the outermost pause ends (``gc.freeze`` moves the tracked
objects to the permanent generation without a traversal); the memory of frozen objects is still freed by
reference count when they are dropped.
"""
from __future__ import annotations

import gc
import threading

_GC_LOCK = threading.Lock()
_GC_PAUSES = [0, True]                 # [pauses open (any thread), whether the GC was on before the first]


class gc_paused:              # (lower case: used as ``with gc_paused():``, as the function it was)
    """The cyclic GC off for the block, what was made meanwhile frozen out of it after (see the module). Nests and
    may be held by several threads at once: the GC comes back (if it was on) when the last pause ends. In a
    worker this also keeps a collection from holding the interpreter lock (the window's thread) for the
    0.1-0.6 s a full collection over 100k messages takes. (Not freezing would leave every object made meanwhile,
    by any thread, to one collection of the youngest generation when the GC is back on: 0.14-0.23 s with the
    interpreter lock held after a hermes cross-check at 100k messages.) A class, not a generator: every pipeline
    run and replayed call opens one, and a ``contextmanager`` cost 1.9 us a use against 0.3 us."""

    __slots__ = ()

    def __enter__(self) -> None:
        with _GC_LOCK:
            if _GC_PAUSES[0] == 0:
                _GC_PAUSES[1] = gc.isenabled()
                gc.disable()
            _GC_PAUSES[0] += 1

    def __exit__(self, *exc: object) -> None:
        with _GC_LOCK:
            _GC_PAUSES[0] -= 1
            if _GC_PAUSES[0] == 0:
                gc.freeze()
                if _GC_PAUSES[1]:
                    gc.enable()


def pauses_open() -> int:
    """How many ``gc_paused`` blocks are open now, in any thread (0: the GC is as the program set it)."""
    with _GC_LOCK:
        return _GC_PAUSES[0]
