"""Caches that outlive one session, and the one call that empties them all between sessions.

A module that keeps per-session state beyond the shared per-message table (``pipeline.facts``), e.g. the lists a
layer remembers to resume from, registers how to drop it (``on_forget``) when it is imported; ``forget()`` runs
them all (a fleet worker between two sessions). A module never imported registers nothing and costs nothing."""
from __future__ import annotations

import threading
from typing import Callable

_LOCK = threading.Lock()
_CLEARS: list[Callable[[], object]] = []


def on_forget(clear: Callable[[], object]) -> Callable[[], object]:
    """Register ``clear`` to be called by ``forget()``; returns it."""
    with _LOCK:
        _CLEARS.append(clear)
    return clear


def forget() -> None:
    """Empty every registered cache."""
    with _LOCK:
        clears = list(_CLEARS)
    for clear in clears:
        clear()
