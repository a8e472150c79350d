"""Session-inferred defaults: what a strategy reads from a recorded conversation to run as that
agent really ran (e.g. Claude Code's version picks its threshold rule).

``infer_params(strategy, conversation)`` returns an ``Inferred``: ``params`` (overrides to apply
under the user's own ``--set``), ``reasons`` (param -> why, in words), ``facts`` (what was read
from the session). A strategy without inference answers an empty one. Pure Python, no Qt.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Inferred:
    params: dict = field(default_factory=dict)
    reasons: dict = field(default_factory=dict)      # param -> why, in words
    facts: dict = field(default_factory=dict)        # what was read: versions, model, peak real tokens, ...
    notes: list = field(default_factory=list)        # caveats that change no parameter

    def __bool__(self) -> bool:
        return bool(self.params or self.notes)

    def set(self, name: str, value: Any, why: str) -> None:
        self.params[name] = value
        self.reasons[name] = why

    def apply(self, overrides: dict | None = None) -> dict:
        """The inferred parameters under the user's overrides (``--set`` wins)."""
        return {**self.params, **(overrides or {})}

    def overridden(self, overrides: dict | None) -> list[str]:
        return [k for k in self.params if k in (overrides or {})]

    def to_json(self, overrides: dict | None = None) -> dict:
        d = {"params": dict(self.params), "reasons": dict(self.reasons), "facts": dict(self.facts)}
        if self.notes:
            d["notes"] = list(self.notes)
        over = self.overridden(overrides)
        if over:
            d["overridden_by_user"] = over
        return d

    def lines(self, overrides: dict | None = None) -> list[str]:
        """One line per inferred parameter (and note), for a CLI header or a status tip."""
        over = set(self.overridden(overrides))
        out = []
        for k, v in self.params.items():
            tail = " (your --set wins)" if k in over else ""
            out.append(f"{k} = {v!r}{tail}: {self.reasons.get(k, '')}")
        out += [f"note: {n}" for n in self.notes]
        return out


def infer_params(strategy, conversation) -> Inferred:
    """What ``strategy`` (a name or a Strategy) infers from ``conversation`` (a Conversation, a
    LoadResult, or None); empty for strategies without inference."""
    from . import get
    if isinstance(strategy, str):
        strategy = get(strategy)
    if conversation is not None and not hasattr(conversation, "messages") and hasattr(conversation, "main"):
        conversation = conversation.main
    fn = getattr(strategy, "infer", None)
    if fn is None or conversation is None:
        return Inferred()
    return fn(conversation)
