"""One replay of a conversation per configuration, shared by the views that ask for the same one.

The window replays a conversation for two views: the events dock (what each compaction kept and lost) and the
timeline. Under the same strategy, parameters, layer order, summarizer, workspace and mode the two replays are the
same run: at 100k messages each cost 25-50 s of CPU and kept 1.5 GB of inputs. ``shared`` runs it once: the first
asker computes it, an asker meanwhile waits for that result (checking its own ``cancel`` as it waits), and a later
asker gets the finished result while the asker that computed it still holds its copy (only a weak reference is
kept here: the views own their results). A run that was cancelled or failed is not shared; a waiter then computes its own.

Each asker gets its own shallow copy, labelled as it asks (the calls, inputs and engine are shared: nobody changes
them). ``key`` says what makes two replays the same; a caller that replays differently (a comparison of several
runs, whose calibration is decided over all of them) does not share.
"""
from __future__ import annotations

import copy
import queue
import threading
import time
import weakref
from sys import getrefcount
from typing import Any, Callable

from ..runtime.jobs import CourteousEvent

MAX_KEYS = 4
WAIT_STEP = 0.2          # seconds between a waiter's looks at its own cancel Event
RELEASE_CHUNK = 256      # items of a list or a dict taken out at a time by ``release``
RELEASE_SETTLE = 0.05    # seconds more before it is taken apart
RELEASE_WAIT = 100       # x 10 ms: how long ``release`` waits for its caller to let go of the object


class _Entry:
    __slots__ = ("done", "ref")

    def __init__(self):
        self.done = threading.Event()
        self.ref: Any = None          # a weak reference to the finished result, None while running or when not shared


_LOCK = threading.Lock()
_ENTRIES: dict[tuple, _Entry] = {}


def key(conv: Any, strategy: Any, params: dict, *, order: Any = None, summarizer: str = "offline",
        workspace: Any = None, free: bool = False) -> tuple:
    """What makes two replays of ``conv`` the same run: the conversation as it is now (its message list and
    length: a live one grows), the strategy and its resolved parameters, the layer order, the summarizer's spec,
    the workspace and the mode."""
    resolved = strategy.resolve(dict(params or {}))
    return (id(conv), id(conv.messages), len(conv.messages), strategy.name, repr(sorted(resolved.items())),
            tuple(order) if order is not None else None, str(summarizer), id(workspace), bool(free))


def _claim(k: tuple) -> tuple[Any, _Entry, bool]:
    """(a finished result, None, False) | (None, the entry to wait on, False) | (None, our own new entry, True)."""
    with _LOCK:
        e = _ENTRIES.get(k)
        if e is not None:
            if not e.done.is_set():
                return None, e, False
            r = e.ref() if e.ref is not None else None
            if r is not None:
                return r, e, False
        mine = _ENTRIES[k] = _Entry()
        while len(_ENTRIES) > MAX_KEYS:
            old = next((x for x, v in _ENTRIES.items() if v.done.is_set()), None)
            if old is None:
                break
            del _ENTRIES[old]
        return None, mine, True


def shared(k: tuple, compute: Callable[[], Any], label: str, cancel: Any = None,
           complete: Callable[[Any], bool] | None = None) -> Any:
    """The replay ``compute()`` makes, computed once for every asker of ``k`` (see the module); a copy labelled
    ``label``. None when ``cancel`` was set while waiting for another asker's run. ``complete(result)`` says
    whether a finished run may be shared (default: ``cancel`` is not set)."""
    while True:
        found, entry, owner = _claim(k)
        if found is not None:
            return _labelled(found, label)
        if owner:
            break
        while not entry.done.wait(WAIT_STEP):
            if cancel is not None and cancel.is_set():
                return None
    out = None
    try:
        result = compute()
        ok = result is not None and (complete(result) if complete is not None else
                                     not (cancel is not None and cancel.is_set()))
        out = _labelled(result, label) if result is not None else None
        if ok:
            entry.ref = weakref.ref(out)     # the copy this asker holds: shared while it is
    finally:
        with _LOCK:
            if entry.ref is None and _ENTRIES.get(k) is entry:
                del _ENTRIES[k]            # not shared: the next asker runs its own
            entry.done.set()
    return out


def _labelled(result: Any, label: str) -> Any:
    out = copy.copy(result)
    out.label = label
    return out


def forget() -> None:
    """Drop every entry (tests; a fleet worker between sessions)."""
    with _LOCK:
        _ENTRIES.clear()


_RELEASING: queue.Queue = queue.Queue()
_RELEASER: list = []                 # the thread that frees what ``release`` is given, once started


def release(obj: Any) -> None:
    """Let go of a replay result (or anything) a view held, freed in pieces in a thread of its own: a replay's
    50,000 calls at 100k messages freed at once held the interpreter lock 0.25-0.5 s, the window's thread
    waiting (the events dock dropped its replay when the parameters changed). The caller drops its own reference
    after the call; what others still hold is left alone (see ``_free``)."""
    if obj is None:
        return
    with _LOCK:
        if not _RELEASER:
            t = threading.Thread(target=_release_loop, name="compactscope-release", daemon=True)
            _RELEASER.append(t)
            t.start()
    _RELEASING.put(obj)


# the freeing is courteous (``is_set()`` never true: it only waits): it waits while the user acts, while a run is on and
# just after a result is shown (the window calls ``user_active`` then), at most ``MAX_WAIT`` at a time; a parameter
# change freed the last run's replay beside showing the new run (0.3-0.6 s of CPU at 100k messages)
_PACE = CourteousEvent()


def _release_loop() -> None:
    while True:
        pieces = [_RELEASING.get()]
        for _ in range(RELEASE_WAIT):         # the caller lets go of its own reference just after the call
            if getrefcount(pieces[0]) <= 2:     # (the list and getrefcount's argument)
                break
            time.sleep(0.01)
        time.sleep(RELEASE_SETTLE)            # (the views the caller tells next let go of theirs)
        _PACE.is_set()
        _free(pieces)


def _free(pieces: list) -> None:
    """Take the objects of ``pieces`` apart when nothing but this list holds them: a list's or a dict's items and an
    object's attributes (its ``__dict__``) are moved out ``RELEASE_CHUNK`` at a time and taken apart in turn, so
    that no one deallocation frees much; the interpreter lock is handed over every few milliseconds. A piece
    someone else holds (another view's copy shares the calls) is only let go of, never emptied."""
    last = time.perf_counter()
    while pieces:
        x = pieces.pop()
        if getrefcount(x) <= 2:         # (x and getrefcount's argument): nobody else holds it
            _take_apart(x, pieces)
        del x
        if time.perf_counter() - last > 0.002:
            time.sleep(0)
            _PACE.is_set()
            last = time.perf_counter()


def _take_apart(x: Any, pieces: list) -> None:
    """Move a piece of what ``x`` holds onto ``pieces`` (the rest of ``x`` back on it, to be continued)."""
    t = type(x)
    if t is list:
        if len(x) > RELEASE_CHUNK:
            pieces.append(x)
        pieces += x[-RELEASE_CHUNK:]
        del x[-RELEASE_CHUNK:]
    elif t is dict:
        if len(x) > RELEASE_CHUNK:
            pieces.append(x)
        for _ in range(min(RELEASE_CHUNK, len(x))):
            pieces += x.popitem()
    elif t is tuple:
        pieces += x
    elif isinstance(getattr(x, "__dict__", None), dict) and not isinstance(x, type) and _unshared(x):
        d = x.__dict__
        pieces += d.values()
        d.clear()


def _unshared(x: Any) -> bool:
    """Whether nobody can reach ``x`` any more but the caller: its entry here (a weak reference another asker
    would take it from) is dropped first; an object someone else refers to weakly is left whole."""
    with _LOCK:
        for k, e in list(_ENTRIES.items()):
            if e.ref is not None and e.ref() is x:
                e.ref = None
                del _ENTRIES[k]
    return weakref.getweakrefcount(x) == 0
