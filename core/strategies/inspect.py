"""Inspect AI's compaction strategies (inspect-ai 0.3.285) as built-in strategies:
``inspect_edit`` (CompactionEdit), ``inspect_trim`` (CompactionTrim), ``inspect_summary``
(CompactionSummary), with the handler that ``react()`` runs before every model call (trigger,
repeated passes, always-kept prefix, provider merging). Native on the OpenAI-like chat dialect
Inspect uses; an Anthropic conversation is converted first. See docs/inspect.md.

CompactionNative and CompactionAuto (the provider compacts server-side) need the provider's API:
out of scope offline, named as such in each strategy's notes.
"""
from __future__ import annotations

from typing import Any

from compactscope.core.layers.inspect import layers_for, threshold, threshold_to_params
from compactscope.core.layers.inspect_rules import DEFAULT_WINDOW, MERGES, InspectTokens
from compactscope.core.model.messages import OPENAI
from compactscope.core.strategies.base import TOKENS, CrossCheck, Param, Strategy, Threshold
from compactscope.core.strategies.infer import Inferred

CLASSES = {"edit": "CompactionEdit", "trim": "CompactionTrim", "summary": "CompactionSummary"}

VERSION = "0.3.285"
NOT_REPRODUCED = ("CompactionNative and CompactionAuto: the provider compacts the context server-side (OpenAI "
                  "Responses compaction, Anthropic's context management), which needs the provider's API: out of "
                  "scope offline. Server-side tool uses (ContentToolUse) and citations have no place in the chat "
                  "dialect and are not modelled.")


class IntOrAll(Param):
    """A whole number >= 0, or "all" (edited as text in the window)."""
    text_editor = True

    def coerce(self, value: Any) -> Any:
        if isinstance(value, str) and value.strip().lower() == "all":
            return "all"
        try:
            n = int(str(value).strip()) if isinstance(value, str) else value
        except ValueError:
            raise ValueError(f"{self.name} takes a whole number or 'all', not {value!r}") from None
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            raise ValueError(f"{self.name} takes a whole number >= 0 or 'all', not {value!r}")
        return n


def _common() -> tuple[Param, ...]:
    return (
        Param("threshold", 0.9, "compact when Inspect's estimate (messages + tool definitions) is strictly greater "
              "than this: a token count (above 1), or a share of context_window (up to 1)", minimum=0.0),
        Param("context_window", DEFAULT_WINDOW, "the model's input window in tokens (for a threshold given as a share, "
              "and the summary's input fitting); 128,000 is Inspect's figure for a model it does not know",
              minimum=1, unit="tokens"),
        Param("trigger", "threshold", "'threshold' = compact only over the threshold; 'always' = compact now, like "
              "react()'s forced compaction after the model reports an overflow", choices=("threshold", "always")),
        Param("memory", True, "with a 'memory' tool: warn the model at 90% of the threshold to save notes (once per "
              "window), and clear the saved content from memory tool calls when compacting"),
        Param("provider_merging", "none", "the provider's merging of consecutive messages after compaction: none "
              "(OpenAI, mockllm), user (Azure AI, Hugging Face), user+assistant (Anthropic, Bedrock, vLLM, SGLang), "
              "system (OpenRouter)", choices=tuple(MERGES)),
    )


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
        from compactscope.core.strategies import get
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


def _strategy(kind: str, title: str, description: str, params: tuple[Param, ...]) -> Strategy:
    return Strategy(
        name=f"inspect_{kind}", title=f"Inspect AI {title} (inspect-ai {VERSION})", description=description,
        layers=layers_for(kind), params=_common() + params, dialect=OPENAI,
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
                         "the threshold; no model call", (
    IntOrAll("keep_thinking_turns", 1, "assistant turns (from the end) that keep their thinking blocks; 'all' keeps "
             "every one"),
    Param("keep_tool_uses", 3, "the most recent tool uses whose results are kept; the older ones are cleared "
          "(0 = clear all)", minimum=0),
    Param("keep_tool_inputs", True, "true = only the result is replaced by '(Tool result removed)'; false = the "
          "call and its result are removed, a note left in the assistant message"),
    Param("exclude_tools", "", "comma-separated tool names whose uses and results are never cleared"),
))

INSPECT_TRIM = _strategy("trim", "CompactionTrim", "keep the system and input messages and the newest `preserve` "
                         "share of the conversation, tool results only with their call and calls only with a result, "
                         "no trailing assistant message; no model call", (
    Param("preserve", 0.8, "share of the conversation messages (after system and input) kept, the newest",
          minimum=0.0, maximum=1.0),
))

INSPECT_SUMMARY = _strategy("summary", "CompactionSummary", "the conversation since the last summary summarised by "
                            "the model (its <analysis> scratchpad dropped); the context becomes system + input + the "
                            "summary, a user message marked as a summary", (
    Param("instructions", "", "extra instructions for the summary, inserted into the prompt"),
    Param("prompt", "", "the whole summary prompt instead of the default (put {addendums} where the instructions "
          "and the memory note go); empty = the default nine-section prompt"),
    Param("max_tokens", 0, "the summary model's max output tokens, reserved below context_window when the summary "
          "input is fitted (long tool output cut in its middle); 0 = unknown: 4,096", minimum=0, unit="tokens"),
))
