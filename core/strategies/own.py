"""Which strategy runs when the user names none: the file's own pipeline, the one rule every
command (run, check --strategy, replay, report, the window; the fleet) uses.

* a Claude Code session (or a recording of Claude Code's requests) -> ``claude_code``;
* a Hermes agent session JSON or state database -> ``hermes``;
* a Gemini CLI session (JSONL, or the older JSON document) -> ``gemini_cli``;
* an Inspect log whose compaction events name CompactionEdit / CompactionTrim / CompactionSummary
  -> ``inspect_edit`` / ``inspect_trim`` / ``inspect_summary``;
* a recording of Compactscope's own agent -> the strategy it ran (``s08`` by default);
* anything else (no agent-specific pipeline is known for it) -> ``s08``, the course pipeline.

``own_strategy(source)`` answers the rule for a LoadResult or a Conversation (a real-context view is
read through the conversation it was cut from); ``choose_strategy(source, spec)`` is what a command
runs: the ``spec`` the user chose (``--strategy``, the window's box) or, without one, the file's own,
with the words every output's header prints (``StrategyChoice.header``) and a warning when a chosen
strategy is not the pipeline the file's agent ran (``StrategyChoice.warning``). Pure Python, no Qt.
"""
from __future__ import annotations

from collections import Counter

from ..runtime.record import record
from ..i18n import english as words
from ..files.jsonio import dict_at

FALLBACK = "s08"
# the agent whose pipeline a built-in strategy is (the rule below, read the other way); any other strategy (s08,
# the course pipeline; a plugin) is no agent's and fits every file; Compactscope's agent runs any of them
AGENTS = {"claude_code": "Claude Code", "hermes": "Hermes agent", "inspect_edit": "Inspect AI",
          "inspect_trim": "Inspect AI", "inspect_summary": "Inspect AI", "codex": "Codex CLI", "gemini_cli": "Gemini CLI"}
RUNS_ANY = "Compactscope's agent"
OWN = "the file's own pipeline"
BY_OPTION = "with --strategy"                  # how a command's user chose (the window: WINDOW)
WINDOW = "in the window"

# an Inspect compaction event's strategy (metadata.strategy, else its type) -> the built-in strategy
_INSPECT = {"CompactionEdit": "inspect_edit", "CompactionTrim": "inspect_trim", "CompactionSummary": "inspect_summary",
            "edit": "inspect_edit", "trim": "inspect_trim", "summary": "inspect_summary"}


@record(frozen=True)
class Own:
    """The file's own pipeline: the strategy, who wrote the file ("" when no agent is recognised) and why,
    in words."""
    name: str
    agent: str
    why: str

    @property
    def known(self) -> bool:
        """The file names the agent whose pipeline it is (a different choice deserves a warning)."""
        return bool(self.agent)


@record(frozen=True)
class StrategyChoice:
    """The strategy a command runs and why: ``name`` (a strategy spec), ``chosen`` (the user named it)
    and the file's ``own`` pipeline."""
    name: str
    chosen: bool
    own: Own
    how: str = BY_OPTION           # how it was chosen, in words ("with --strategy", "in the window")

    @property
    def origin(self) -> str:
        return f"chosen {self.how}" if self.chosen else OWN

    @property
    def matches(self) -> bool:
        return self.name == self.own.name

    def reason(self) -> str:
        """Why this strategy runs, in words (no leading strategy name)."""
        if not self.chosen:
            return f"{OWN} ({self.own.why})"
        if self.matches:
            return f"{self.origin}, also {OWN} ({self.own.why})"
        return self.origin

    def header(self) -> str:
        """The header line of every output: which strategy ran, and why."""
        return f"strategy {self.name}: {self.reason()}"

    def warning(self) -> str:
        """A chosen strategy that is not the pipeline the file's agent ran ("" otherwise)."""
        if not self.chosen or self.matches or not self.own.known:
            return ""
        undo = "leave out --strategy" if self.how == BY_OPTION else "pick it in the strategy box"
        return (f"{self.name} is not this file's own pipeline: {self.own.why}, which runs {self.own.name}; figures "
                f"will not match what the agent did ({undo} to run {self.own.name})")

    def to_json(self) -> dict:
        return {"name": self.name, "origin": "option" if self.chosen else "file", "reason": self.reason(),
                "own": self.own.name, "own_reason": self.own.why, "agent": self.own.agent or None,
                "warning": self.warning() or None}


def _conversations(source) -> tuple[object, list]:
    """(the conversation asked about, every conversation of its file) for a LoadResult or a Conversation;
    a real-context view stands for the conversation it was cut from."""
    if source is None:
        return None, []
    if hasattr(source, "conversations") and not hasattr(source, "messages"):
        convs = list(source.conversations or [])
        return (convs[0] if convs else None), convs
    conv = getattr(source, "context_of", None) or source
    return conv, [conv]


def _inspect_kind(convs: list) -> str | None:
    """The built-in strategy the compaction events of an Inspect log name (the asked-for conversation's
    first; else the most common over the file's samples: one log, one solver)."""
    for group in (convs[:1], convs):
        names: Counter[str] = Counter()
        for c in group:
            for e in getattr(c, "events", None) or ():
                extra = e.extra if isinstance(getattr(e, "extra", None), dict) else {}
                name = _INSPECT.get(str(extra.get("strategy") or "")) or _INSPECT.get(str(extra.get("type") or ""))
                if name:
                    names[name] += 1
        if names:
            return names.most_common(1)[0][0]
    return None


def _recorded_strategy(conv) -> str | None:
    """The strategy Compactscope's own agent ran in a recording: its header says it (``record``, the window's
    live agent), else the pipeline traces its calls carry."""
    extra = getattr(conv, "extra", None) or {}
    header = dict_at(extra, "recording")
    ran = header.get("strategy")
    if header.get("source") == "agent" and isinstance(ran, str) and ran:
        return ran
    names = Counter(c["trace"]["strategy"] for c in extra.get("calls") or ()
                    if isinstance(c, dict) and isinstance(c.get("trace"), dict)
                    and isinstance(c["trace"].get("strategy"), str) and c["trace"]["strategy"])
    if names:
        return names.most_common(1)[0][0]
    return FALLBACK if header.get("source") == "agent" else None


def _claude_code_client(conv) -> bool:
    """A recording of Claude Code's own requests: its system prompt names Claude Code, or its requests carry
    Claude Code's ``metadata.user_id`` (``..._account_..._session_<id>``)."""
    system = getattr(conv, "system", None)
    if "You are Claude Code" in str(system or "")[:4000]:
        return True
    for call in (getattr(conv, "extra", None) or {}).get("calls") or ():
        uid = call.get("user_id") if isinstance(call, dict) else None
        if isinstance(uid, str) and "_account_" in uid and "_session_" in uid:
            return True
    return False


def own_strategy(source) -> Own:
    """The file's own pipeline for a LoadResult (its main conversation) or a Conversation."""
    conv, convs = _conversations(source)
    fmt = str(getattr(conv, "format", "") or "")
    if fmt == "claude-code":
        return Own("claude_code", "Claude Code", "a Claude Code session")
    if fmt in ("hermes-session", "hermes-db"):
        return Own("hermes", "Hermes agent", "a Hermes agent " + ("session" if fmt == "hermes-session" else
                                                                  "state database"))
    if fmt == "codex-rollout":
        version = (getattr(conv, "extra", None) or {}).get("cli_version")
        return Own("codex", "Codex CLI", "a Codex CLI session" + (f" (codex-cli {version})" if version else ""))
    if fmt in ("gemini-cli", "gemini-cli-jsonl"):
        return Own("gemini_cli", "Gemini CLI", "a Gemini CLI session")
    if fmt == "inspect-log":
        kind = _inspect_kind(convs)
        if kind:
            return Own(kind, "Inspect AI", f"an Inspect log whose compaction events name "
                                           f"Compaction{kind.split('_', 1)[1].capitalize()}")
        return Own(FALLBACK, "", "an Inspect log without compaction events: no agent pipeline to reproduce, so s08, "
                                 "the course pipeline")
    if fmt == "recording" and conv is not None:
        ran = _recorded_strategy(conv)
        if ran:
            return Own(ran, RUNS_ANY, f"a recording of Compactscope's agent running {ran}")
        if _claude_code_client(conv):
            return Own("claude_code", "Claude Code", "a recording of Claude Code's requests")
    what = f"{words.a(fmt)} file" if fmt else "a conversation"
    return Own(FALLBACK, "", f"no agent-specific pipeline is known for {what}, so s08, the course pipeline")


def agent_of(name: str) -> str:
    """The agent whose pipeline the strategy ``name`` is ("" for none: s08, a plugin)."""
    return AGENTS.get(str(name), "")


def fits(choice: StrategyChoice) -> bool:
    """A choice replays its file as the file's agent could have run it: the file's own pipeline, a strategy of
    no agent, another strategy of the same agent (inspect_edit over a CompactionTrim log), or any strategy over
    a recording of Compactscope's agent. A chosen strategy of another agent (claude_code over an Inspect log)
    does not fit: the fleet does not replay it (its row says why)."""
    agent = agent_of(choice.name)
    return not choice.chosen or choice.matches or not agent or agent == choice.own.agent or \
        choice.own.agent == RUNS_ANY


def choose_strategy(source, spec: str | None = None, how: str = BY_OPTION) -> StrategyChoice:
    """What a command runs over ``source``: ``spec`` when the user named one (``how``: in words), else the
    file's own pipeline."""
    own = own_strategy(source)
    if spec:
        return StrategyChoice(str(spec), True, own, how)
    return StrategyChoice(own.name, False, own, how)


def strategy_choice_of(source, name: str) -> StrategyChoice:
    """How a strategy that ran over ``source`` stands against the file's own pipeline when nobody said
    whether it was chosen: the file's own when the names agree, else chosen (with its warning)."""
    own = own_strategy(source)
    return StrategyChoice(name, name != own.name, own)
