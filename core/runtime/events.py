"""Observable models without Qt: an ``EventGroup`` of named ``Emitter``s.

The idea of napari's ``EventedModel``, done small: a model owns ``self.events`` with one emitter
per thing that can change (``model.events.stage.connect(callback)``); every emission also goes to
``model.events.changed`` with the event's ``type``, so an adapter (e.g. the window's Qt bridge) can
forward everything through one connection. Callbacks run synchronously in the emitting thread;
an exception in one callback does not stop the others (it is re-raised after all ran).
"""
from __future__ import annotations

import contextlib
from typing import Any, Callable
from .record import record


@record(frozen=True)
class Event:
    type: str
    value: Any = None
    source: Any = None


class Emitter:
    def __init__(self, type: str, source: Any = None, parent: "Emitter | None" = None):
        self.type, self.source, self.parent = type, source, parent
        self._callbacks: list[Callable[[Event], Any]] = []
        self._blocked = 0

    def connect(self, callback: Callable[[Event], Any]) -> Callable[[Event], Any]:
        if callback not in self._callbacks:
            self._callbacks.append(callback)
        return callback

    def disconnect(self, callback: Callable[[Event], Any] | None = None) -> None:
        if callback is None:
            self._callbacks.clear()
        elif callback in self._callbacks:
            self._callbacks.remove(callback)

    @contextlib.contextmanager
    def blocked(self):
        self._blocked += 1
        try:
            yield
        finally:
            self._blocked -= 1

    def __call__(self, value: Any = None) -> Event:
        ev = Event(self.type, value, self.source)
        self._send(ev)
        return ev

    def _send(self, ev: Event) -> None:
        if self._blocked:
            return
        error = None
        for cb in list(self._callbacks):
            try:
                cb(ev)
            except Exception as e:  # noqa: BLE001 - the other observers still hear of it
                error = error or e
        if self.parent is not None:
            self.parent._send(ev)
        if error is not None:
            raise error


class EventGroup:
    """``group.<type>`` for each declared type, plus ``group.changed`` that hears all of them.

    A model declares its events as a subclass with one ``Emitter`` annotation each, so that readers and type
    checkers see them::

        class SessionEvents(EventGroup):
            stage: Emitter
            result: Emitter
    """

    changed: Emitter

    def __init__(self, source: Any):
        self.changed = Emitter("changed", source)
        self._types = self.declared()
        for t in self._types:
            self.__dict__[t] = Emitter(t, source, self.changed)

    @classmethod
    def declared(cls) -> tuple[str, ...]:
        """The event types a subclass declares, in declaration order (base classes first)."""
        names: list[str] = []
        for klass in reversed(cls.__mro__):
            for name, kind in vars(klass).get("__annotations__", {}).items():
                if name != "changed" and kind in ("Emitter", Emitter) and name not in names:
                    names.append(name)
        return tuple(names)

    @property
    def types(self) -> tuple[str, ...]:
        return self._types

    @contextlib.contextmanager
    def blocked(self):
        with contextlib.ExitStack() as stack:
            for t in self._types:
                stack.enter_context(getattr(self, t).blocked())
            yield
