"""What live sources say, as typed events and in words: the built-in agent's events and the
recording proxy's calls. Pure Python; the window's live controller shows these.

* ``agent_event(kind, data)`` turns ``core.agent.Agent``'s ``on_event(kind, data)`` into one of
  the event classes below (``AgentEvent`` subclasses), so a controller dispatches on types, not
  strings.
* ``ProxyWatch`` interprets the proxy's recorded calls one after another: the context tokens, an
  error in words (and whether clients retry it), whether the client changed its context between
  calls (a compaction?), and the conversation to show.
"""
from __future__ import annotations

from typing import Any

from ..runtime.record import field, fields, record
from ..model.conversation import Conversation, Usage


# ------------------------------------------------------------------ the agent's events
@record(frozen=True)
class AgentEvent:
    pass


@record(frozen=True)
class UserSent(AgentEvent):
    text: str


@record(frozen=True)
class PipelineRan(AgentEvent):
    """The strategy's pipeline ran before a model call (``call``: ``core.agent.CallInfo``)."""
    trace: Any
    messages: list
    call: Any


@record(frozen=True)
class Streamed(AgentEvent):
    text: str


@record(frozen=True)
class Responded(AgentEvent):
    message: dict
    usage: dict | None
    stop_reason: str | None
    call: Any
    seconds: float = 0.0
    messages: list = field(default_factory=list)

    @property
    def context_tokens(self) -> int:
        u = Usage.from_dict(self.usage or {})
        return u.context_tokens if u is not None else 0


@record(frozen=True)
class Retrying(AgentEvent):
    status: int
    text: str


@record(frozen=True)
class ToolRan(AgentEvent):
    name: str
    input: Any
    output: str
    is_error: bool
    id: str | None = None


@record(frozen=True)
class Compacted(AgentEvent):
    """A compaction outside the pipeline: "reactive" (prompt too long) or "compact_tool"."""
    kind: str
    trace: Any
    messages: list


@record(frozen=True)
class Failed(AgentEvent):
    error: Any                      # core.agent.AgentError
    call: Any = None


@record(frozen=True)
class TurnDone(AgentEvent):
    text: str
    calls: int


@record(frozen=True)
class TurnStopped(AgentEvent):
    calls: int


EVENT_TYPES: dict[str, Any] = {"user": UserSent, "trace": PipelineRan, "stream": Streamed, "response": Responded,
                                "retry": Retrying, "tool": ToolRan, "compaction": Compacted, "error": Failed,
                                "done": TurnDone, "stopped": TurnStopped}


def agent_event(kind: str, data: dict) -> AgentEvent | None:
    """The typed event for ``Agent.on_event(kind, data)``; None for a kind this version does not know."""
    cls = EVENT_TYPES.get(kind)
    if cls is None:
        return None
    names = {f.name for f in fields(cls)}
    return cls(**{k: v for k, v in data.items() if k in names})


# ------------------------------------------------------------------ the proxy's calls
@record
class ProxyCallView:
    """One proxied call, put into words."""
    n: int                               # 1-based call number
    model: str | None
    messages: int
    context_tokens: int
    output_tokens: Any
    status: str                          # the live status line
    note: str                            # the log line for this call
    failed: bool                         # the call ended in an error
    context_changed: str | None = None   # the client's context shrank or changed its start (a compaction?)
    conversation: Conversation | None = None     # the context the client sent (None: no messages)


def _fmt(n) -> str:
    try:
        return f"{int(n):,}"
    except (TypeError, ValueError):
        return "?"


def describe_error(err: dict) -> str:
    """A proxied call's error in words (clients usually retry 429, 529 and 5xx)."""
    if err.get("kind") == "client_disconnected":
        return "the client closed the connection mid-response"
    what = f"HTTP {err.get('status')} {err.get('type') or err.get('kind')}: {err.get('message') or ''}"
    status = err.get("status") or 0
    if status in (429, 529) or status >= 500:
        what += " (clients usually retry)"
    return what


class ProxyWatch:
    """Reads the proxy's recorded calls in order (``see(record)`` per call)."""

    def __init__(self):
        self.calls = 0
        self._prev: list | None = None

    def see(self, record: dict) -> ProxyCallView:
        self.calls += 1
        n = self.calls
        req = record.get("request") or {}
        msgs = req.get("messages") or []
        u = record.get("usage") or {}
        usage = Usage.from_dict(u)
        ctx = usage.context_tokens if usage is not None else 0
        prev, self._prev = self._prev, msgs
        changed = None
        if prev is not None and msgs and (len(msgs) < len(prev) or msgs[0] != prev[0]):
            changed = f"the client changed its context (a compaction?): {len(prev)} \u2192 {len(msgs)} messages"
        err = record.get("error")
        status = (f"{n} call(s); last: {req.get('model')}, {len(msgs)} messages, context {_fmt(ctx)} tokens"
                  + (f", error {err.get('kind')}" if err else ""))
        if err:
            note = f"call {n}: {describe_error(err)}"
        else:
            resp = record.get("response") or {}
            note = (f"call {n}: {req.get('model')}, {len(msgs)} messages, context {_fmt(ctx)} tokens, output "
                    f"{_fmt(u.get('output_tokens'))}, stop {resp.get('stop_reason')}")
        conv = Conversation(msgs, system=req.get("system"), tools=req.get("tools"), model=req.get("model"),
                            title=f"proxy call {n}", format="live") if msgs else None
        return ProxyCallView(n, req.get("model"), len(msgs), ctx, u.get("output_tokens"), status, note, bool(err),
                             changed, conv)
