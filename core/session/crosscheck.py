"""The strategy's cross-check of the shown run against the real package (hermes-agent, inspect-ai): its state and verdict."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..runtime.jobs import LATEST, Executor, Worker
from .loading import checked_verdict
from .state import CheckState
from ..strategies.base import DIFFER, Verdict

if TYPE_CHECKING:
    from .model import Session


class CrossCheckPart:
    """The strategy's cross-check of the shown run against the real package (hermes-agent, inspect-ai): its state and verdict."""

    def __init__(self, s: Session, ex: Executor):
        self.s = s
        # courteous: it starts once the user has had a look at the result just shown (the real package's run over a
        # 100k-message trace took the interpreter from the window painting it: hermes's parameter change)
        self.checker = Worker(ex, self._check_done, self._check_failed, policy=LATEST,
                              name="cross-check", courteous=True)
        # cross-check
        self.check: CheckState | None = None
        self._checking = None                        # the trace being checked

    def set_check(self, state: CheckState | None) -> None:
        self.check = state
        self.s.events.verdict(state)

    def start_check(self) -> None:
        cc, tr = self.s.setup.strategy.cross_check, self.s.trace
        if cc is None or tr is None or tr.strategy != self.s.setup.strategy.name:
            self.set_check(None)
            return
        self._checking = tr
        self.set_check(CheckState(cc.name, cc.description))
        self.checker.start(self._checked, cc, tr)

    @staticmethod
    def _checked(cc, tr, state) -> tuple:
        """In the background: (the trace, its verdict); None when a newer run came first."""
        if state.cancel.is_set():       # (a courteous wait first, while the user looks at the result or steps)
            return tr, None
        return tr, checked_verdict(cc, tr)

    def _check_done(self, res) -> None:
        tr, verdict = res
        if tr is not self.s.trace or self.check is None or verdict is None:
            return                       # a newer run is shown (its check is waiting or running)
        self.set_check(CheckState(self.check.name, self.check.description, verdict))

    def _check_failed(self, exc: BaseException) -> None:
        if self.check is not None:
            self.set_check(CheckState(self.check.name, self.check.description,
                                       Verdict(DIFFER, f"the cross-check failed: {type(exc).__name__}: {exc}")))
