"""The plain values a session holds and its views read: its declared events, the banner's notice, the stepper's
stages, a stage's view, the chart's series and the cross-check's state."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..runtime.record import field, record
from ..runtime.events import Emitter, EventGroup
from ..strategies.base import Strategy, Verdict


SNAPSHOT_VERSION = 1


AFTER, BEFORE = "after", "before"


TABS = ("diff", "boundary", "timeline")


FILTER_KEYS = ("search", "role", "block", "changed_only", "matches_only")


class SessionEvents(EventGroup):
    """What can change in a session: one emitter each (``session.events.stage.connect(cb)``), and
    ``session.events.changed`` hears them all."""

    source: Emitter
    strategy: Emitter
    params: Emitter
    summarizer: Emitter
    order: Emitter
    running: Emitter
    progress: Emitter
    result: Emitter
    stage: Emitter
    view_mode: Emitter
    selection: Emitter
    error: Emitter
    verdict: Emitter
    compare: Emitter
    replay_running: Emitter
    replay: Emitter
    call: Emitter
    cursor: Emitter
    follow: Emitter
    tab: Emitter
    filters: Emitter
    ready: Emitter
    prepared: Emitter       # the chart's bars of the lists shown are made (Session.prepare_lists)


EVENTS = SessionEvents.declared()


@record(frozen=True)
class Notice:
    """An error for the banner: what happened, and what to do."""
    what: str
    todo: str = ""


@record(frozen=True)
class StageInfo:
    """One stage of the stepper: Original, then one per step."""
    name: str
    label: str
    status: str            # "original" | "changed" | "unchanged" | "failed"
    explanation: str


@record
class StageView:
    """What the message list and the panels show for the current stage in the current view mode."""
    messages: list
    step: Any = None                                   # the layer's Step (None on Original)
    rows: Sequence | None = None                       # core.align rows of the step
    status: Mapping = field(default_factory=dict)      # message index -> changed/inserted/removed/duplicated
    findings: list = field(default_factory=list)
    cuts: dict = field(default_factory=dict)           # message index -> [(text, "cut" | "initial")]
    badges: dict = field(default_factory=dict)         # message index -> short note (who wrote a summary)
    where: str = ""                                    # "after L1 snip" / "in the conversation as loaded"
    shown: int = 0                                     # the stage whose messages these are


@record
class ChartSeries:
    labels: list
    sizes: list
    tokens: list
    threshold: float | None
    unit: str
    threshold_label: str
    movable: bool


@record
class CheckState:
    """The strategy's cross-check of the shown run: its name, the verdict (None while it runs)."""
    name: str
    description: str
    verdict: Verdict | None = None


def stage_label(strategy: Strategy, name: str) -> str:
    if name == "original":
        return "Original"
    try:
        return strategy.layer(name).label or name
    except (KeyError, AttributeError):
        return name
