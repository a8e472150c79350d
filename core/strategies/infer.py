"""Session-inferred defaults: what a strategy reads from a recorded conversation to run as that
agent really ran (e.g. Claude Code's version picks its threshold rule).

``infer_params(strategy, conversation)`` returns an ``Inferred``: ``params`` (overrides to apply
under the user's own ``--set``), ``reasons`` (param -> why, in words), ``facts`` (what was read
from the session). A strategy without inference answers an empty one. Pure Python, no Qt.
"""
from __future__ import annotations

from typing import Any

from ..runtime.record import field, record
from ..i18n import english as words
from ..i18n.catalog import translate


@record
class Inferred:
    """Parameters read from a recording (its versions, model, real compactions), with why each was set."""
    params: dict = field(default_factory=dict)
    reasons: dict = field(default_factory=dict)      # param -> why, in words
    facts: dict = field(default_factory=dict)        # what was read: versions, model, peak real tokens, ...
    notes: list = field(default_factory=list)        # caveats that change no parameter
    evidence: dict = field(default_factory=dict)     # param -> what it rests on: {"call", "gap_minutes", "drop", ...}

    def __bool__(self) -> bool:
        return bool(self.params or self.notes)

    def set(self, name: str, value: Any, why: str, evidence: dict | None = None) -> None:
        self.params[name] = value
        self.reasons[name] = why
        if evidence:
            self.evidence[name] = dict(evidence)

    def evidence_words(self, name: str) -> str:
        """A parameter's evidence in a few words ("call 18, 72 idle min, -13,638 tokens"), or ""."""
        e = self.evidence.get(name) or {}
        parts = []
        if e.get("call") is not None:
            parts.append(f"call {e['call']}")
        if e.get("gap_minutes") is not None:
            parts.append(f"{e['gap_minutes']:g} idle min")
        if e.get("drop") is not None:
            parts.append(f"-{e['drop']:,} tokens")
        if e.get("growth") is not None:
            parts.append(f"+{e['growth']:,} tokens")
        if e.get("tokens") is not None:
            parts.append(f"{e['tokens']:,} tokens")
        if e.get("version"):
            parts.append(f"version {e['version']}")
        if e.get("responses") and len(parts) == 0:
            parts.append(f"no drop over {e['responses']:,} recorded responses")
        if e.get("records"):
            parts.append(f"{e['records']} microcompact_boundary record(s)")
        return ", ".join(translate(x) for x in parts)      # in the run's language (the catalogue's templates)

    def apply(self, overrides: dict | None = None) -> dict:
        """The inferred parameters under the user's overrides (``--set`` wins)."""
        return {**self.params, **(overrides or {})}

    def overridden(self, overrides: dict | None) -> list[str]:
        return [k for k in self.params if k in (overrides or {})]

    def to_json(self, overrides: dict | None = None) -> dict:
        d: dict[str, Any] = {"params": dict(self.params), "reasons": dict(self.reasons), "facts": dict(self.facts),
                             "evidence": {k: dict(v) for k, v in self.evidence.items()}}
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
            ev = self.evidence_words(k)
            out.append(f"{k} = {words.value(v)}{tail}: {self.reasons.get(k, '')}"
                       + (f" [evidence: {ev}]" if ev else ""))
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


@record
class Evidence:
    """What a recording says about a threshold, measured with a strategy's own estimate of the real
    contexts (``Conversation.segments``: each the context the API saw after a real compaction):

    * ``quiet``: ``(call, tokens)`` before every model call that no compaction preceded: the check did not fire;
    * ``fired``: ``(call, tokens)`` of the context each real compaction compacted (the whole real context just
      before it; ``call`` is the first call after it): the check fired;
    * ``segments``: per real context, its quiet figures and the fired one that closed it (None: it was not
      closed by a compaction in the file).

    Calls are numbered as replay numbers them: the assistant messages that no compaction re-sent, in order."""
    quiet: list = field(default_factory=list)
    fired: list = field(default_factory=list)
    segments: list = field(default_factory=list)

    @property
    def below(self) -> int | None:
        """The largest figure that did not compact."""
        return max((t for _, t in self.quiet), default=None)

    @property
    def lowest_fired(self) -> int | None:
        return min((t for _, t in self.fired), default=None)

    def errors(self, threshold: float, strictly_greater: bool = False) -> int:
        """Real contexts a check at ``threshold`` gets wrong: it fires before the real compaction (a quiet
        figure reaches it) or does not fire by the end of a context the agent compacted."""
        def over(t):
            return t > threshold if strictly_greater else t >= threshold
        bad = 0
        for quiet, fired in self.segments:
            if any(over(t) for _, t in quiet) or (fired is not None and not over(fired[1])):
                bad += 1
        return bad


def context_evidence(conversation, estimator, meter=None) -> Evidence:
    """The ``Evidence`` of ``conversation``'s real contexts, by ``estimator`` (a token estimator of
    ``core.size``; an additive one is followed message by message, so a long recording costs one pass)."""
    from ..pipeline.size import SizeMeter, is_additive
    meter = meter or SizeMeter()
    msgs, metas = conversation.messages, conversation.meta
    n = len(msgs)
    starts = sorted({s for s in (conversation.segments or [0]) if 0 <= s <= n} | {0})
    event_at = {e.message_index for e in getattr(conversation, "events", None) or ()}
    system, tools = getattr(conversation, "system", None), getattr(conversation, "tools", None)
    additive = is_additive(estimator)
    ev = Evidence()
    call = 0
    def figure(a: int, k: int, total: int) -> int:
        """The estimate of the segment from a up to k (total: the running sum of its per-message figures)."""
        if additive:
            return estimator.tokens_from(total, k - a, msgs[a] if a < n else None, system=system, tools=tools)
        return estimator.tokens(msgs[a:k], meter, system=system, tools=tools)
    for a, b in zip(starts, starts[1:] + [n]):
        total, quiet = 0, []
        for k in range(a, b):
            m = msgs[k]
            copy = k < len(metas) and "copy_of" in metas[k].extra
            if isinstance(m, dict) and m.get("role") == "assistant" and not copy:
                if k > a:
                    quiet.append((call, figure(a, k, total)))
                call += 1
            if additive:
                total += meter.figure(m, estimator.figure, estimator.figure_fn)
        fired = (call, figure(a, b, total)) if b in event_at and b < n and b > a else None
        ev.quiet += quiet
        if fired is not None:
            ev.fired.append(fired)
        ev.segments.append((quiet, fired))
    return ev
