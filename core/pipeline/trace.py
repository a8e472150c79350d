"""Traces: what each layer did, in data a view can show without re-deriving it.

A ``Step`` is one layer's run: the input and output lists, for each output
message the index of the input message it came from (``None`` for an inserted
placeholder or summary), the edits in words and data, the layer's working
variables, sizes and tokens before and after, and the checker's findings on the
output. A ``Trace`` is the ordered steps of one pipeline run.
"""
from __future__ import annotations

from operator import is_not
from typing import Any, Iterable, Sequence

from ..runtime.record import field, record
from ..analysis.checker import Finding

# Edit kinds
SNIP = "snip"            # a range of input messages removed (and maybe a placeholder inserted)
REPLACE = "replace"      # a block's content replaced (old and new length)
PERSIST = "persist"      # a block's full content written to a file, a preview left in place
SUMMARY = "summary"      # a summary inserted, replacing a range of input messages
BOUNDARY = "boundary"    # a working variable (a boundary) moved, with the reason
INSERT = "insert"        # a message inserted (restored file, note, ...)
DROP = "drop"            # messages or blocks removed (not a contiguous snip)
CONVERT = "convert"      # dialect conversion
NOTE = "note"            # an observation that changed nothing (quirk, skipped block, ...)


@record(slots=True)
class Edit:
    """One thing a layer did, in words and where: the input range or message (and block) it touched, the output
    message it made, and the tool call it concerns."""
    kind: str
    text: str                                   # the edit in words
    start: int | None = None                    # input range [start, end)
    end: int | None = None
    message: int | None = None                  # input message index (block edits)
    block: int | None = None                    # block index within that message
    out: int | None = None                      # output message index it produced
    tool_id: str | None = None
    old_len: int | None = None
    new_len: int | None = None
    path: str | None = None                     # file written (persisted result, transcript)
    var: str | None = None                      # for BOUNDARY: the variable
    old: Any = None                             # for BOUNDARY: value before
    new: Any = None                             # for BOUNDARY: value after
    data: dict | None = None

    def to_json(self) -> dict:
        d = {"kind": self.kind, "text": self.text}
        for k in ("start", "end", "message", "block", "out", "tool_id", "old_len", "new_len", "path",
                  "var", "old", "new", "data"):
            v = getattr(self, k)
            if v is not None:
                d[k] = v
        return d


class SameOrigin(Sequence):
    """The origin of a list that kept every message at its place (``[0, 1, ..., n-1]``), without a list of n
    ints: at 100k messages each layer that changes nothing or replaces in place would otherwise hold 4 MB.
    It reads like that list (index, iterate, ``in``, ``index``, ``==`` a list, ``+`` a list)."""
    __slots__ = ("n",)

    def __init__(self, n: int):
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, k):
        r = range(self.n)[k]
        return list(r) if isinstance(k, slice) else r

    def __iter__(self):
        return iter(range(self.n))

    def __reversed__(self):
        return reversed(range(self.n))

    def __contains__(self, x) -> bool:
        return x.__class__ is int and 0 <= x < self.n

    def index(self, x, start: int = 0, stop: int | None = None) -> int:
        start, stop, _ = slice(start, stop).indices(self.n)
        if x.__class__ is int and start <= x < stop:
            return x
        raise ValueError(f"{x!r} is not in list")

    def count(self, x) -> int:
        return 1 if x in self else 0

    def __eq__(self, other) -> bool:
        if isinstance(other, SameOrigin):
            return self.n == other.n
        if isinstance(other, (list, tuple, range)):
            return len(other) == self.n and all(o.__class__ is int and o == i for i, o in enumerate(other))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # equal to a list, so unhashable like one

    def __add__(self, other):
        return list(range(self.n)) + list(other)

    def __radd__(self, other):
        return list(other) + list(range(self.n))

    def __reduce__(self):
        return SameOrigin, (self.n,)

    def __repr__(self) -> str:
        return f"SameOrigin({self.n})"


CLEARING = (REPLACE, PERSIST)      # the kinds of edit that clear a tool result's content (with its ``tool_id``)


class CountedEdits(list):
    """A step's edits, a plain list, with ``cleared``: how many of them clear a tool result (``tool_id`` set, kind in
    ``CLEARING``), counted where they are made (a replay's records read it instead of looking at every edit: an edit
    pass carried between calls lists n/2 cleared results at every call)."""
    __slots__ = ("cleared",)

    def __init__(self, edits=(), cleared: int = 0):
        super().__init__(edits)
        self.cleared = cleared

    def __reduce__(self):
        return CountedEdits, (list(self), self.cleared)


@record(frozen=True)
class Delta:
    """What a layer changed, so the pipeline re-sizes in proportion to the change, not to the list:
    ``removed`` = input indices whose message is not in the output (dropped, or replaced by a new
    one), ``added`` = output indices of messages that are not in the input (inserted, or the
    replacements). Every other output message is an input message, shared."""
    removed: Sequence[int] = ()
    added: Sequence[int] = ()

    @classmethod
    def replaced(cls, indices: Iterable[int]) -> "Delta":
        """The messages at ``indices`` were replaced in place (the list keeps its length)."""
        idx = tuple(indices)
        return cls(idx, idx)


@record
class LayerOutput:
    """What a layer function returns. The pipeline wraps it into a Step."""
    messages: list
    origin: list | SameOrigin          # per output message: input index or None
    edits: list[Edit] = field(default_factory=list)
    vars: dict = field(default_factory=dict)
    note: str = ""                     # why nothing changed, or a one-line account
    triggered: bool | None = None      # for conditional layers (compact_history)
    state: dict = field(default_factory=dict)  # updates to the pipeline state (circuit breaker, ...)
    error: str | None = None           # the layer failed (e.g. summary API error); messages unchanged
    summary: dict | None = None        # {"summarizer", "cached", "text", ...} when an LLM summary was made
    dialect: str | None = None         # set when the layer changes the dialect
    delta: Delta | None = None         # what changed (None: the pipeline works it out)
    plugin_failed: bool = False        # ``error`` is a plugin's own failure (it raised, or returned no message list)

    @classmethod
    def unchanged(cls, messages: list, note: str = "", edits: list | None = None, vars: dict | None = None,
                  triggered: bool | None = None, state: dict | None = None, error: str | None = None,
                  **kw) -> "LayerOutput":
        """The output of a step that changes nothing: ``messages`` themselves, every one at its place."""
        # the fields by position (every layer that changes nothing comes here, at every call of a replay: keywords
        # and default factories cost 3-4x the construction itself)
        return cls(messages, SameOrigin(len(messages)), [] if edits is None else edits, {} if vars is None else vars,
                   note, triggered, {} if state is None else state, error, **kw)


@record
class Step:
    """One layer's run in a trace: its input and output lists, where each output message came from, its edits,
    working variables and note, and the sizes and tokens before and after."""
    layer: str
    input: list
    messages: list
    origin: list | SameOrigin
    edits: list[Edit]
    vars: dict
    note: str
    size_before: int
    size_after: int
    tokens_before: int
    tokens_after: int
    findings: list[Finding] = field(default_factory=list)
    triggered: bool | None = None
    error: str | None = None
    summary: dict | None = None
    dialect: str = "anthropic"
    seconds: float = 0.0
    description: str = ""
    role: str = ""                 # the layer's role (core.layers.base: "snip", "summary", ...)
    internal: str | None = None        # the layer raised (a bug in it): the traceback; ``error`` says it in words
    reads: frozenset | None = None     # the parameters the layer read (None: all of them, or not known)
    state_before: dict | None = None   # the pipeline state the layer started from
    plugin_failed: bool = False        # ``error`` is a plugin's own failure (LayerOutput.plugin_failed)

    @property
    def changed(self) -> bool:
        c = self.__dict__.get("_changed")        # computed once: views and replay ask often
        if c is None:
            if self.messages is self.input:
                c = False
            elif len(self.messages) != len(self.input):
                c = True
            else:
                c = any(map(is_not, self.messages, self.input))
            self.__dict__["_changed"] = c
        return c

    def new_messages(self) -> dict[int, Any]:
        """The output messages that are not input messages (inserted, or replacing one): index -> message.
        Every other output message ``j`` is ``input[origin[j]]``, shared."""
        inp, out = self.input, self.messages
        if out is inp:
            return {}
        n = len(inp)
        return {j: m for j, (m, o) in enumerate(zip(out, self.origin))
                if o is None or not 0 <= o < n or inp[o] is not m}

    def explain(self) -> str:
        """One sentence for the stepper: what happened, or why nothing did."""
        if self.error:
            return f"failed: {self.error}"
        if not self.changed:
            return f"no change: {self.note}" if self.note else "no change"
        return self.note or "; ".join(e.text for e in self.edits[:3])

    def to_json(self, include_messages: bool = True, *, shared: bool = False, lazy: bool = False) -> dict:
        """The step as JSON values. ``shared``: "messages" is the count and "new" holds only the messages
        this step made (index -> message); the others are the input's, found through "origin" (so a
        trace written this way holds each message once). ``lazy``: edits and findings as generators
        (for a streaming writer: never all built at once)."""
        edits = (e.to_json() for e in self.edits)
        findings = (f.to_json() for f in self.findings)
        d = {
            "layer": self.layer,
            "changed": self.changed,
            "size_before": self.size_before,
            "size_after": self.size_after,
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "origin": self.origin if isinstance(self.origin, list) else
            (iter(self.origin) if lazy else list(self.origin)),
            "edits": edits if lazy else list(edits),
            "vars": self.vars,
            "note": self.note,
            "findings": findings if lazy else list(findings),
        }
        if include_messages and not shared:
            d["messages"] = self.messages
        else:
            d["messages"] = len(self.messages)
        if include_messages and shared:
            d["new"] = {str(j): m for j, m in self.new_messages().items()}
        if self.triggered is not None:
            d["triggered"] = self.triggered
        if self.error is not None:
            d["error"] = self.error
        if self.internal is not None:
            d["internal_error"] = True
        if self.plugin_failed:
            d["plugin_failed"] = True
        if self.summary is not None:
            d["summary"] = self.summary
        if self.dialect != "anthropic":
            d["dialect"] = self.dialect
        return d


@record
class Trace:
    """A pipeline's run over one list: the strategy and its parameters, the input, one step per layer, the
    estimators' names, and what the checker found."""
    strategy: str
    params: dict
    input: list
    steps: list[Step]
    size_estimator: str
    token_estimator: str
    input_findings: list[Finding] = field(default_factory=list)
    state_before: dict = field(default_factory=dict)
    state_after: dict = field(default_factory=dict)
    order: list[str] = field(default_factory=list)
    dialect: str = "anthropic"
    dialect_in: str = ""               # the input's dialect (a "convert" step changed it to ``dialect``)

    @property
    def output(self) -> list:
        return self.steps[-1].messages if self.steps else self.input

    @property
    def internal_errors(self) -> list[Step]:
        """Steps whose layer raised instead of returning (bugs; their input was passed on unchanged)."""
        return [s for s in self.steps if s.internal is not None]

    @property
    def final_findings(self) -> list[Finding]:
        return self.steps[-1].findings if self.steps else self.input_findings

    def step(self, layer: str) -> Step | None:
        for s in self.steps:
            if s.layer == layer:
                return s
        return None

    def map_index(self, i: int | None, a: int, b: int) -> int | None:
        """Follow message i of stage a (0 = the input, k = after step k) to stage b, through the
        origin maps: its index there, or None when a layer removed it."""
        steps = self.steps
        if i is None or not (0 <= a <= len(steps) and 0 <= b <= len(steps)):
            return None
        while a < b:                      # forward: the output that came from i
            try:
                i = steps[a].origin.index(i)
            except ValueError:
                return None
            a += 1
        while a > b:                      # backward: the input i came from
            o = steps[a - 1].origin
            if not 0 <= i < len(o) or o[i] is None:
                return None
            i = o[i]
            a -= 1
        return i

    def stages(self) -> list[tuple[str, list]]:
        """(name, messages) for Original and after every layer: what a stepper steps through."""
        return [("original", self.input)] + [(s.layer, s.messages) for s in self.steps]

    def to_json(self, include_messages: bool = True, *, shared: bool = False, lazy: bool = False) -> dict:
        """The trace as JSON values (see ``Step.to_json`` for ``shared`` and ``lazy``; with ``shared`` the
        input messages are written once, under "input_messages")."""
        steps = (s.to_json(include_messages, shared=shared, lazy=lazy) for s in self.steps)
        d = {
            "strategy": self.strategy,
            "params": self.params,
            "order": self.order,
            "estimators": {"size": self.size_estimator, "tokens": self.token_estimator},
            "steps": steps if lazy else list(steps),
            "findings": [f.to_json() for f in self.final_findings],
            "input_findings": [f.to_json() for f in self.input_findings],
            "state": self.state_after,
        }
        if shared and include_messages:
            d["input_messages"] = self.input
        return d
