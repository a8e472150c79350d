"""A loaded conversation: messages plus where each came from and what the file
recorded about it (usage, real compaction events, metadata)."""
from __future__ import annotations

from typing import Any

from ..runtime.record import field, record
from .messages import ANTHROPIC


@record(slots=True, unsafe_hash=True)
class Provenance:
    """Where a message came from: file and 1-based line(s) (line 0 = whole file), or for a
    database, the table and the row (its rowid/primary key) that holds it. A value: never changed once made,
    hashed by its fields. (Not ``frozen``: a frozen dataclass sets each field through ``object.__setattr__``,
    and one Provenance per message of 300,000 cost 0.5 s of a load.)"""
    path: str
    line: int = 0
    end_line: int | None = None
    note: str = ""
    table: str = ""
    row: Any = None

    def __str__(self) -> str:
        if self.line <= 0:
            if self.table:
                return f"{self.path} [{self.table} row {self.row}]" if self.row is not None \
                    else f"{self.path} [{self.table}]"
            return self.path
        if self.end_line and self.end_line != self.line:
            return f"{self.path}:{self.line}-{self.end_line}"
        return f"{self.path}:{self.line}"


@record(frozen=True, slots=True)
class Usage:
    """Token usage of one assistant response as the API reported it."""
    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0

    @property
    def context_tokens(self) -> int:
        """What the model really saw: input + cache creation + cache read."""
        return self.input_tokens + self.cache_creation_input_tokens + self.cache_read_input_tokens

    @classmethod
    def from_dict(cls, d: Any) -> "Usage | None":
        if not isinstance(d, dict):
            return None

        def num(key: str) -> int:
            v = d.get(key)
            return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else 0
        return cls(num("input_tokens") or num("prompt_tokens"), num("output_tokens") or num("completion_tokens"),
                   num("cache_creation_input_tokens"), num("cache_read_input_tokens"))


@record(slots=True)
class MessageMeta:
    """What the file says about one message, beyond the API content. (Slots: one per message, 100k+ of
    them in a big session.)"""
    provenance: Provenance | None = None
    timestamp: float | None = None     # seconds since the epoch
    usage: Usage | None = None
    model: str | None = None
    uuid: str | None = None
    extra: dict = field(default_factory=dict)


class _SharedEmpty(dict):
    """The ``extra`` of the messages a document loader found nothing more about: one empty dict for all of them
    (an empty dict each was 64 bytes a message, 0.05x of a 180 MB document). Equal to ``{}``, written as ``{}``;
    it refuses writes, so nothing can fill it for every message at once: ``own_extra(meta)`` gives the meta a
    dict of its own first."""
    __slots__ = ()

    def _shared(self, *args, **kwargs):
        raise TypeError("this MessageMeta.extra is shared while empty: write through own_extra(meta)")

    __setitem__ = __delitem__ = setdefault = update = pop = popitem = clear = __ior__ = _shared


NO_EXTRA: dict = _SharedEmpty()


def own_extra(meta: MessageMeta) -> dict:
    """``meta.extra`` to write to: the meta's own dict, made when it still has the shared empty one."""
    extra = meta.extra
    if type(extra) is _SharedEmpty:          # (a copy made by pickle or deepcopy is one too)
        extra = meta.extra = {}
    return extra


@record
class CompactionEvent:
    """A compaction that really happened, as the file records it."""
    kind: str                      # "claude_code", "hermes", "inspect", "recording"
    message_index: int             # index in Conversation.messages of the first message after it
    trigger: str | None = None     # "auto" | "manual" | ...
    pre_tokens: int | None = None
    post_tokens: int | None = None
    summary_index: int | None = None
    provenance: Provenance | None = None
    extra: dict = field(default_factory=dict)


@record
class Problem:
    """Something wrong in the file that did not stop the load."""
    path: str
    line: int
    text: str
    severity: str = "warning"

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        return f"{where}: {self.text}"


@record
class Conversation:
    """A loaded conversation: its messages (in one dialect), system prompt and tools, per-message metadata,
    the real compactions it recorded, and the problems its loader met."""
    messages: list
    dialect: str = ANTHROPIC
    system: Any = None
    tools: list | None = None
    model: str | None = None
    title: str = ""
    source: str = ""               # file the conversation was read from
    format: str = ""               # detected format name
    meta: list[MessageMeta] = field(default_factory=list)   # parallel to messages (may be empty)
    events: list[CompactionEvent] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    extra: dict = field(default_factory=dict)
    # For conversations split at real compactions: the index in `messages` where each
    # segment (the context after a real compaction) starts. [0] when never compacted.
    segments: list[int] = field(default_factory=lambda: [0])
    # A real-context view (core.contexts): the whole conversation it was cut from (its messages are shared)
    context_of: "Conversation | None" = field(default=None, repr=False, compare=False)

    def meta_at(self, i: int) -> MessageMeta:
        return self.meta[i] if 0 <= i < len(self.meta) else MessageMeta()

    def meta_by_identity(self) -> dict[int, MessageMeta]:
        """Map id(message) -> its meta, so layers can find timestamps of shared messages (made once while
        the conversation is unchanged: every run and view asks; 100k messages take ~0.2 s)."""
        memo = self.__dict__.get("_by_identity")
        if memo is not None and memo[0] is self.messages and memo[1] == len(self.messages) and memo[2] is self.meta \
                and memo[3] == len(self.meta):
            return memo[4]
        d = dict(zip(map(id, self.messages), self.meta))       # (zip stops at the shorter: a message without meta has none)
        self.__dict__["_by_identity"] = (self.messages, len(self.messages), self.meta, len(self.meta), d)
        return d

    def history(self) -> list:
        """The messages without those a real compaction re-sent (``meta.extra["copy_of"]``: Inspect and
        hermes segments repeat the compacted context): each message once, as the agent accumulated them.
        The same list object while the conversation is unchanged (a window asks often; a pipeline run
        over it can then be resumed)."""
        memo = self.__dict__.get("_history")
        if memo is not None and memo[0] is self.messages and memo[1] == len(self.messages) and memo[2] is self.meta:
            return memo[3]
        if not any("copy_of" in m.extra for m in self.meta):
            out = self.messages
        else:
            out = [m for i, m in enumerate(self.messages) if "copy_of" not in self.meta_at(i).extra]
        self.__dict__["_history"] = (self.messages, len(self.messages), self.meta, out)
        return out

    def segment(self, k: int) -> list:
        """The messages of segment k (the context the API saw after the k-th real compaction)."""
        starts = self.segments + [len(self.messages)]
        return self.messages[starts[k]:starts[k + 1]]

    def calls(self, segment: int | None = None) -> list[int]:
        """Where the model calls are (each recorded answer: an assistant message), as positions in
        ``history()`` or, with ``segment``, in that segment (its own answers, not the copies a compaction
        re-sent)."""
        if segment is None:
            return [i for i, m in enumerate(self.history()) if isinstance(m, dict) and m.get("role") == "assistant"]
        off = self.segments[segment]
        return [i for i, m in enumerate(self.segment(segment)) if isinstance(m, dict) and m.get("role") == "assistant"
                and "copy_of" not in self.meta_at(off + i).extra]

    def select(self, segment: int | None = None, call: int | None = None) -> list:
        """The messages a pipeline runs on: the whole conversation (``history()``), or one segment (the
        context after a real compaction, copies included), or of either the context before model call
        ``call`` (see ``calls``; a call that is not there selects all of them)."""
        msgs = self.segment(segment) if segment is not None else self.history()
        if call is not None:
            at = self.calls(segment)
            if 0 <= call < len(at):
                msgs = msgs[:at[call]]
        return msgs


@record
class LoadResult:
    """Everything a file holds: one or more conversations, the main one first."""
    path: str
    format: str
    conversations: list[Conversation]
    problems: list[Problem] = field(default_factory=list)

    @property
    def main(self) -> Conversation:
        return self.conversations[0]
