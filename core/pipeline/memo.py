"""One identity cache: a value computed once per object, keyed by the object's identity.

Messages are never changed in place and are shared between the stages of a trace, so what is
derived from one (its chips, its block sizes, its search text, a step's aligned rows) can be kept
by ``id``. Each entry holds its object, so the id cannot be reused by another object while the
entry exists. The cache is bounded by the largest list shown: it forgets everything when it holds
more than ``factor`` times the most objects ``shown()`` at once (at least ``floor``), so a short
stage (a snip keeps 51 of 10k messages) never throws away what the long stages beside it share.
"""
from __future__ import annotations

import threading
from typing import Any, Callable, Generic, TypeVar

V = TypeVar("V")


class IdentityCache(Generic[V]):
    """(Two dicts, id -> object and id -> value, rather than an (object, value) tuple per entry: 100k
    entries are then no 100k more objects for the cyclic GC to walk at each full collection.)"""

    def __init__(self, compute: Callable[[Any], V], factor: int = 4, floor: int = 1000):
        self.compute = compute
        self.factor = factor
        self.peak = floor
        self._refs: dict[int, Any] = {}
        self._d: dict[int, V] = {}
        self._lock = threading.Lock()

    def get(self, obj: Any) -> V:
        k = id(obj)
        if self._refs.get(k) is obj:
            try:
                return self._d[k]
            except KeyError:          # cleared meanwhile by another thread
                pass
        v = self.compute(obj)
        with self._lock:
            self._refs[k] = obj
            self._d[k] = v
        return v

    __call__ = get

    def peek(self, obj: Any) -> V | None:
        """The cached value, or None when it was not computed yet (nothing is computed)."""
        k = id(obj)
        return self._d.get(k) if self._refs.get(k) is obj else None

    def forget(self, obj: Any) -> None:
        with self._lock:
            self._refs.pop(id(obj), None)
            self._d.pop(id(obj), None)

    def shown(self, n: int) -> None:
        """A list of ``n`` objects is shown: the bound follows the largest; trim when over it."""
        if n > self.peak:
            self.peak = n
        if len(self._d) > self.factor * self.peak:
            self.clear()

    def retain(self, objs) -> None:
        """Forget every entry but those of ``objs``."""
        keep = {id(o): o for o in objs}
        with self._lock:
            for k in [k for k, o in self._refs.items() if keep.get(k) is not o]:
                del self._refs[k]
                self._d.pop(k, None)

    def clear(self) -> None:
        with self._lock:
            self._refs.clear()
            self._d.clear()

    def __len__(self) -> int:
        return len(self._d)
