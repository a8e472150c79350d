"""Inspect AI's compaction strategies (inspect-ai 0.3.285) as built-in strategies:
``inspect_edit`` (CompactionEdit), ``inspect_trim`` (CompactionTrim), ``inspect_summary``
(CompactionSummary), with the handler that ``react()`` runs before every model call (trigger,
repeated passes, always-kept prefix, provider merging). Native on the OpenAI-like chat dialect
Inspect uses; an Anthropic conversation is converted first. See docs/inspect.md.

CompactionNative and CompactionAuto (the provider compacts server-side) need the provider's API:
out of scope offline, named as such in each strategy's notes.
"""
from __future__ import annotations


from ..layers.inspect import PARAMS, layers_for, threshold, threshold_to_params
from ..layers.inspect_rules import InspectTokens
from ..model.messages import OPENAI
from .base import TOKENS, CrossCheck, Strategy, Threshold
from .infer import Inferred

CLASSES = {"edit": "CompactionEdit", "trim": "CompactionTrim", "summary": "CompactionSummary"}

VERSION = "0.3.285"
NOT_REPRODUCED = ("CompactionNative and CompactionAuto: the provider compacts the context server-side (OpenAI "
                  "Responses compaction, Anthropic's context management), which needs the provider's API: out of "
                  "scope offline. Server-side tool uses (ContentToolUse) and citations have no place in the chat "
                  "dialect and are not modelled.")


def _round_between(lo: int, hi: int) -> int:
    """The roundest whole number n with lo <= n < hi (4,000 between 3,956 and 4,283); hi - 1 when none."""
    if hi <= lo:
        return max(hi - 1, 0)
    for step in (10 ** k * m for k in range(9, -1, -1) for m in (5, 2, 1)):
        n = -(-lo // step) * step
        if n < hi:
            return n
    return lo


def logged_compaction(conversation) -> tuple[str | None, dict, str]:
    """What an Inspect log says its compaction was: (kind ``edit``/``trim``/``summary`` or None, the settings
    the log records, where they come from, in words)."""
    extra = getattr(conversation, "extra", None) or {}
    cfg = extra.get("compaction_config")
    if isinstance(cfg, dict):
        return str(cfg.get("type")), {k: v for k, v in cfg.items() if k != "type"}, "the log's plan"
    kinds = [e.extra.get("type") for e in getattr(conversation, "events", None) or () if e.kind == "inspect"]
    kinds = [k for k in kinds if isinstance(k, str)]
    return (kinds[0] if kinds else None), {}, "the log's compaction events"


def _threshold_from_events(conversation) -> tuple[int, str] | None:
    """The threshold a log's threshold compactions imply, with why: their handler compacts when its figure is
    strictly greater than the threshold, so it lies at or above every figure that did not compact (a call's
    reported input tokens) and below the smallest tokens_before of a threshold compaction."""
    events = [e for e in conversation.events if e.kind == "inspect" and e.trigger == "threshold"
              and isinstance(e.pre_tokens, int)]
    if not events:
        return None
    def new_call(k, m):
        return isinstance(m, dict) and m.get("role") == "assistant" and "copy_of" not in conversation.meta_at(k).extra
    after = {min((k for k, m in enumerate(conversation.messages) if k >= e.message_index and new_call(k, m)),
                 default=None) for e in conversation.events}
    quiet = [conversation.meta_at(k).usage.context_tokens for k, m in enumerate(conversation.messages)
             if k not in after and new_call(k, m) and conversation.meta_at(k).usage is not None]
    hi = min(e.pre_tokens for e in events)
    lo = max(quiet, default=0)
    t = _round_between(lo, hi)
    return t, (f"the log records no settings; its {len(events)} threshold compaction(s) fired at {hi:,} tokens and "
               f"more, and {len(quiet)} call(s) up to {lo:,} input tokens did not compact: a threshold of {t:,} "
               f"lies between")


def _infer_for(kind: str):
    def infer(conversation) -> Inferred:
        """inspect_<kind>'s settings from an Inspect log: the compaction its solver ran with (react()'s
        ``compaction`` in the plan), else the threshold its compaction events imply."""
        from . import get
        out = Inferred()
        if getattr(conversation, "format", "") != "inspect-log":
            return out
        ran, settings, where = logged_compaction(conversation)
        if ran is None:
            return out
        strategy = get(f"inspect_{kind}")
        own = ran == kind
        out.facts["compaction"] = {"type": ran, **settings}
        cls = CLASSES.get(ran, ran)
        tail = "" if own else f" (the log ran {cls}, this is {CLASSES[kind]}: the settings they share carry over)"
        for name, value in settings.items():
            if value is None:
                continue
            if name == "prompt":
                out.notes.append(f"the log's {cls} had its own summary prompt ({len(str(value)):,} chars); the "
                                 f"offline summarizer does not read one: --set prompt=... gives it to an LLM")
                continue
            try:
                param = strategy.param(name)
            except KeyError:
                if own:
                    out.notes.append(f"the log's {cls} setting {name}={value!r} is not modelled")
                continue
            if isinstance(value, (list, tuple)):
                value = ",".join(map(str, value))
            try:
                value = param.coerce(value)
            except ValueError as e:
                out.notes.append(f"the log's {name}={value!r} cannot be used: {e}")
                continue
            out.set(name, value, f"{where}: the solver ran {cls}({name}={value!r}){tail}")
        if "threshold" not in out.params:
            found = _threshold_from_events(conversation)
            if found is not None:
                out.set("threshold", float(found[0]), found[1] + tail)
        return out
    return infer


def _strategy(kind: str, title: str, description: str) -> Strategy:
    return Strategy(
        name=f"inspect_{kind}", title=f"Inspect AI {title} (inspect-ai {VERSION})", description=description,
        layers=layers_for(kind), params=PARAMS[kind].declared(), dialect=OPENAI,
        threshold=Threshold(TOKENS, fn=threshold, to_params=threshold_to_params,
                            formula="threshold tokens, or threshold x context_window when it is at most 1"),
        token_estimator=InspectTokens,
        cross_check=CrossCheck(f"inspect-ai {VERSION}", "compactscope.core.oracles.inspect_ai:cross_check",
                               "core.inspect_oracle ran the real inspect-ai compaction handler with the same "
                               "strategy, parameters, tools and summary text and compared the output message by "
                               "message."),
        notes={"source": f"inspect-ai {VERSION} inspect_ai/model/_compaction/", "docs": "docs/inspect.md",
               "not reproduced": NOT_REPRODUCED},
        infer=_infer_for(kind))


INSPECT_EDIT = _strategy("edit", "CompactionEdit", "clear thinking blocks of older turns and the oldest tool results "
                         "(placeholder '(Tool result removed)', or the whole call) beyond the most recent ones, over "
                         "the threshold; no model call")

INSPECT_TRIM = _strategy("trim", "CompactionTrim", "keep the system and input messages and the newest `preserve` "
                         "share of the conversation, tool results only with their call and calls only with a result, "
                         "no trailing assistant message; no model call")

INSPECT_SUMMARY = _strategy("summary", "CompactionSummary", "the conversation since the last summary summarised by "
                            "the model (its <analysis> scratchpad dropped); the context becomes system + input + the "
                            "summary, a user message marked as a summary")
