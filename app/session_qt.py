"""The Qt side of ``core.session.Session``: its events as ``sig``-named Qt signals.

``QtSession(session)`` forwards every session event (``session.events.<type>``) to the signal
``sig<Type>Changed`` (``stage`` -> ``sigStageChanged``, ``replay_running`` ->
``sigReplayRunningChanged``) with the event's value, in the thread that emitted it (the session's
executor posts to the GUI thread). Views connect to these signals; they call the session's methods
to change anything.
"""
from __future__ import annotations

from PySide6.QtCore import QObject, Signal

from compactscope.core.runtime.jobs import user_active
from compactscope.core.session.model import EVENTS, Session

# the events that follow what the user does: courteous background work waits meanwhile (core.runtime.jobs)
USER_EVENTS = frozenset({"stage", "selection", "view_mode", "filters", "tab", "cursor", "params", "strategy",
                         "ready"})                 # (a result shown: the user is about to look at it)


def signal_name(event_type: str) -> str:
    return "sig" + "".join(p.capitalize() for p in event_type.split("_")) + "Changed"


class QtSession(QObject):
    sigSourceChanged = Signal(object)
    sigStrategyChanged = Signal(object)
    sigParamsChanged = Signal(object)
    sigSummarizerChanged = Signal(object)
    sigOrderChanged = Signal(object)
    sigRunningChanged = Signal(object)
    sigProgressChanged = Signal(object)
    sigResultChanged = Signal(object)
    sigStageChanged = Signal(object)
    sigViewModeChanged = Signal(object)
    sigSelectionChanged = Signal(object)
    sigErrorChanged = Signal(object)
    sigVerdictChanged = Signal(object)
    sigCompareChanged = Signal(object)
    sigReplayRunningChanged = Signal(object)
    sigReplayChanged = Signal(object)
    sigCallChanged = Signal(object)
    sigCursorChanged = Signal(object)
    sigFollowChanged = Signal(object)
    sigTabChanged = Signal(object)
    sigFiltersChanged = Signal(object)
    sigPreparedChanged = Signal(object)       # the chart's bars of the lists shown are made
    sigReadyChanged = Signal(object)          # a result is shown: stage, selection and all (after sigResultChanged)

    def __init__(self, session: Session, parent=None):
        super().__init__(parent)
        self.session = session
        self._signals = {t: getattr(self, signal_name(t)) for t in EVENTS}
        session.events.changed.connect(self._forward)

    def _forward(self, ev) -> None:
        if ev.type in USER_EVENTS:
            user_active()
        sig = self._signals.get(ev.type)
        if sig is not None:
            sig.emit(ev.value)

    def detach(self) -> None:
        self.session.events.changed.disconnect(self._forward)
