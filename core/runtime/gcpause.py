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
# [pauses open (any thread), whether the GC was on before the first, whether one of them freezes at the end]
_GC_PAUSES = [0, True, False]


class gc_paused:              # (lower case: used as ``with gc_paused():``, as the function it was)
    """The cyclic GC off for the block, what was made meanwhile frozen out of it after (see the module). Nests and
    may be held by several threads at once: the GC comes back (if it was on) when the last pause ends. In a
    worker this also keeps a collection from holding the interpreter lock (the window's thread) for the
    0.1-0.6 s a full collection over 100k messages takes. (Not freezing would leave every object made meanwhile,
    by any thread, to one collection of the youngest generation when the GC is back on: 0.14-0.23 s with the
    interpreter lock held after a hermes cross-check at 100k messages.) A class, not a generator: every pipeline
    run and replayed call opens one, and a ``contextmanager`` cost 1.9 us a use against 0.3 us."""

    __slots__ = ()
    FREEZES = True

    def __enter__(self) -> None:
        with _GC_LOCK:
            if _GC_PAUSES[0] == 0:
                _GC_PAUSES[1] = gc.isenabled()
                _GC_PAUSES[2] = False
                gc.disable()
            _GC_PAUSES[0] += 1
            if self.FREEZES:
                _GC_PAUSES[2] = True

    def __exit__(self, *exc: object) -> None:
        with _GC_LOCK:
            _GC_PAUSES[0] -= 1
            if _GC_PAUSES[0] == 0:
                if _GC_PAUSES[2]:
                    gc.freeze()
                elif not gc.get_freeze_count():  # (an unfreeze would also thaw what the program froze before)
                    gc.freeze()
                    gc.unfreeze()
                if _GC_PAUSES[1]:
                    gc.enable()


class gc_paused_load(gc_paused):
    """The pause a loader takes while it builds its result: a load makes a few objects per message and no cycles,
    and each collection walked every object made so far again (300,000 one-character messages: a load of 2.5 s
    CPU, 1.6 s without). Unless a freezing pause is open beside it, what was made goes to the oldest generation
    after (freeze + unfreeze, no traversal), not to the permanent one: a loaded file the user closes is not kept
    out of the GC for the rest of the program. It shares the count with ``gc_paused``: a load in one thread and a
    pipeline run in another, ending in either order, keep the GC off until both have ended (with two separate
    pauses a load begun before a run and ended inside it turned the GC back on while the run was building)."""

    __slots__ = ()
    FREEZES = False


def pauses_open() -> int:
    """How many ``gc_paused`` blocks are open now, in any thread (0: the GC is as the program set it)."""
    with _GC_LOCK:
        return _GC_PAUSES[0]
