"""CompactionEdit's pass carried from one model call to the next (a replay's running context).

In a replay the handler runs before every call over a context that only grows at its end, and once its edits no
longer bring the context under the threshold every call runs the edit pass (and its repeats) over the whole
history. What the pass does with a message depends on the message and on two boundaries that only move forward
as the list grows: which assistant turns are older than the last ``keep_thinking_turns`` (their reasoning is
cleared) and which tool uses are older than the last ``keep_tool_uses`` (their results are cleared). So the state
after a list (per position: the message's structure, the assistant positions, the tool uses and their results,
the output message, the changes in words) is kept in the engine's memo (``LayerContext.memo``: None outside a
replay, where ``inspect_rules.edit_pass`` runs as before), and a call costs the messages new to it, the messages
that crossed a boundary, and the positions whose message is another object than in the list the state was made
for (found by identity, in C: the repeated pass's input is the last pass's output, made of the same copies). A
message's rewritten copy is made once per message object, so consecutive outputs share their copies.

Only the default shape is carried (``keep_tool_inputs``: results replaced in place; every id a plain key; no
result found after a later message, no tool message answering two uses): any other list runs the full pass. The
output (messages, origin, changes, edits, info) is the full pass's: a property test compares the two on random
growing lists.
"""
from __future__ import annotations

from bisect import bisect_left, bisect_right
from itertools import compress, count
from operator import is_not
from typing import Any

from ..pipeline.trace import DROP, NOTE, REPLACE, SNIP, SUMMARY, CountedEdits, Edit, SameOrigin
from . import inspect_rules as R

KEY = "inspect.edit_pass"
MIN_MESSAGES = 64            # below this the full pass is as cheap
_MAX_STATES = 4
_MAX_OBJECTS = 400_000
_ASSISTANT, _TOOL, _OTHER = 1, 2, 0


class Unsupported(Exception):
    """The list is not of the shape carried here: the full pass runs."""


class _Facts:
    """Per message object (held, so its id is not reused): its structure and the copies the pass makes of it."""
    __slots__ = ("m", "kind", "key", "calls", "tcid", "listy", "had", "hit", "w", "mem", "r", "old_len")

    def __init__(self, m: Any, skip: tuple):
        self.m = m
        r = R.role(m)
        self.kind = _ASSISTANT if r == "assistant" else _TOOL if r == "tool" else _OTHER
        self.calls: tuple = ()
        self.tcid: Any = None
        self.w: Any = None
        self.mem: Any = None
        self.r: Any = None
        self.listy = self.had = self.hit = False
        self.old_len = 0
        if self.kind == _ASSISTANT:
            calls = R.calls_of(m)
            kept = []
            for c in calls:
                name = R.call_name(c)
                if name in R.SKIP_TOOLS or (skip and name in skip):
                    continue
                cid = c.get("id")
                if not (cid is None or isinstance(cid, (str, int))):
                    raise Unsupported("a call id that is no plain key")
                kept.append((cid, c))
            self.calls = tuple(kept)
            self.listy = R.content_is_list(m)
            self.had = bool(R.reasoning_of(m)) or any(isinstance(p, dict) and p.get("type") == "reasoning"
                                                       for p in m.get("content") or []
                                                       if isinstance(m.get("content"), list))
            self.mem = R.memory_hit(m)
            self.hit = self.mem is not None
            self.key: Any = (_ASSISTANT, tuple((cid, R.call_name(c)) for cid, c in kept))
        elif self.kind == _TOOL:
            cid = m.get("tool_call_id")
            if not (cid is None or isinstance(cid, (str, int))):
                raise Unsupported("a tool_call_id that is no plain key")
            self.tcid = cid
            self.old_len = len(str(m.get("content") or ""))
            self.key = (_TOOL, cid)
        else:
            self.key = (_OTHER,)

    def without_reasoning(self) -> Any:
        if self.w is None:
            self.w = R.without_reasoning(self.m)
        return self.w

    def cleared(self, mm: "_Memo") -> Any:
        """``{**m, "content": "(Tool result removed)"}``, made once. A copy that is itself such a copy of a
        message: the message it copies when that is a cleared result too (the two stand for each other: a
        compaction in the replay's context clears the results its last one cleared, and would otherwise make a
        new copy of every one of them each time)."""
        if self.r is None:
            self.r = {**self.m, "content": R.TOOL_RESULT_REMOVED}
            back = mm.objects.get(id(self.r))
            if back is None or back.m is not self.r:
                back = mm.objects[id(self.r)] = _Facts(self.r, mm.params[2])
            if back.r is None and self.m.get("content") == R.TOOL_RESULT_REMOVED and \
                    list(self.m) == list(self.r):
                back.r = self.m
        return self.r


class _State:
    """The pass over ``src[:n]``: per position its structure and output, the assistants, the tool uses."""
    __slots__ = ("src", "n", "last", "keys", "asst", "had", "uses", "tpos", "open", "mem", "full", "res", "res_edits",
                 "c1", "cl", "noid", "ids", "dups", "copies", "back", "out")

    def __init__(self):
        self.src: list = []
        self.n = 0
        self.last: Any = None         # src[n - 1] when it was made (the grown-in-place check)
        self.keys: list = []          # per position: the message's structure (_Facts.key)
        self.asst: list = []          # positions of the assistant messages, ascending
        self.had: list = []           # those whose message had reasoning, ascending
        self.uses: list = []          # (assistant position, call, tool message position), in the pass's order
        self.tpos: dict = {}          # tool message position -> its use
        self.open: dict = {}          # call id -> how many calls with it found no result yet
        self.mem: list = []           # positions of the assistants whose memory calls are cleared, ascending
        self.full: list = []          # the output before the trailing assistant messages are dropped
        self.res: list = []           # the change of each cleared use, in order
        self.res_edits: dict = {}     # where -> (the edits of the first cleared uses, in order; those made again)
        self.c1 = 0                   # how many assistants have their reasoning cleared
        self.cl = 0                   # how many uses have their result cleared
        self.noid: list = []          # the uses (their order in ``uses``) whose call has no id, ascending: their
        #                               cleared result's edit names no tool (the records count those that do)
        # the ids of its input's messages and of the copies in its output (how many positions hold each): a copy
        # made for an earlier list is never put where it would be one of the input's messages (the full pass
        # makes new ones); while no message is there twice (``dups``), each input message is in the output at
        # its place or not at all (``back``: per position, k or None)
        self.ids: dict = {}
        self.dups = 0
        self.copies: dict = {}
        self.back: list = []
        self.out: list | None = None  # the last output made from this state

    def copy(self) -> "_State":
        c = _State()
        c.src, c.n, c.last, c.keys, c.asst, c.had = self.src, self.n, self.last, list(self.keys), self.asst[:], self.had[:]
        c.uses, c.tpos, c.open, c.mem, c.full = self.uses[:], dict(self.tpos), dict(self.open), self.mem[:], \
            self.full[:]
        c.res, c.res_edits, c.c1, c.cl = self.res[:], {w: (e[0][:], e[1][:]) for w, e in self.res_edits.items()}, self.c1, self.cl
        c.noid = self.noid[:]
        c.ids, c.dups, c.copies, c.out, c.back = dict(self.ids), self.dups, dict(self.copies), None, self.back[:]
        return c


class _Memo:
    def __init__(self, params: tuple):
        self.params = params
        self.states: dict[int, _State] = {}
        self.objects: dict[int, _Facts] = {}
        # id(output) -> (output, the output made before it from the same state, the positions changed since)
        self.lineage: dict[int, tuple] = {}
        self.identity: dict[int, tuple] = {}    # id(input) -> (its output, input, its length, the state)


class _Positions:
    """``pos.get(i)`` of an identity origin of ``n`` messages (``_edits``' output index of input message i)."""
    __slots__ = ("n",)

    def __init__(self, n: int):
        self.n = n

    def get(self, i: Any, default: Any = None) -> Any:
        return i if i.__class__ is int and 0 <= i < self.n else default


def edit_pass(messages: list, memo: dict | None, keep_thinking_turns: int | str, keep_tool_uses: int,
              keep_tool_inputs: bool, exclude_tools: tuple, memory: bool) -> R.Pass:
    """``inspect_rules.edit_pass``, carried over the lists of a replay in ``memo`` (see above)."""
    if memo is None or not keep_tool_inputs or len(messages) < MIN_MESSAGES:
        return R.edit_pass(messages, keep_thinking_turns, keep_tool_uses, keep_tool_inputs, exclude_tools, memory)
    params = (keep_thinking_turns, keep_tool_uses, exclude_tools, memory)
    mm = memo.get(KEY)
    if mm is None or mm.params != params:
        mm = memo[KEY] = _Memo(params)
    try:
        st, dirty = _advance(mm, messages)
    except Unsupported:
        mm.states.pop(id(messages), None)
        return R.edit_pass(messages, keep_thinking_turns, keep_tool_uses, keep_tool_inputs, exclude_tools, memory)
    mm.states.pop(id(messages), None)
    while len(mm.states) >= _MAX_STATES:
        mm.states.pop(next(iter(mm.states)))
    mm.states[id(messages)] = st
    ps = _result(st, mm)
    out = ps.messages
    if st.out is not None:
        mm.lineage.pop(id(out), None)
        while len(mm.lineage) >= _MAX_STATES:
            mm.lineage.pop(next(iter(mm.lineage)))
        mm.lineage[id(out)] = (out, st.out, dirty)
    st.out = out
    mm.identity.pop(id(messages), None)
    if not st.dups:
        while len(mm.identity) >= _MAX_STATES:
            mm.identity.pop(next(iter(mm.identity)))
        mm.identity[id(messages)] = (out, messages, len(messages), st)
    return ps


def by_identity(memo: dict | None, inp: list, out: list) -> list | None:
    """Each message of ``out``'s index in ``inp`` (its last), None where it is not there: known without a look
    at every message when ``inp`` is the last output of a state (see ``_State``) made from ``out`` as it
    is now. None when not known."""
    mm = memo.get(KEY) if memo is not None else None
    e = mm.identity.get(id(out)) if mm is not None else None
    if e is None or e[0] is not inp or e[1] is not out or len(out) != e[2]:
        return None
    st = e[3]
    if st.dups or st.src is not out or st.n != len(out) or st.out is not inp:
        return None
    nout = len(inp)
    return st.back[:nout] + [None] * (len(out) - nout)


def _facts(mm: _Memo, m: Any) -> _Facts:
    f = mm.objects.get(id(m))
    if f is None or f.m is not m:
        if len(mm.objects) >= _MAX_OBJECTS:
            mm.objects.clear()
        f = mm.objects[id(m)] = _Facts(m, mm.params[2])
    return f


def _base(mm: _Memo, messages: list) -> tuple[_State, list]:
    """The state to go on from (a copy unless it is this very list's) and the positions it covers whose message
    is another object now."""
    st = mm.states.get(id(messages))
    if st is not None and st.src is messages and st.n <= len(messages) and \
            (st.n == 0 or messages[st.n - 1] is st.last):
        return st, []             # the same list, grown in place (lists are values: nobody replaces a message)
    made = mm.lineage.get(id(messages))
    if made is not None and made[0] is messages:
        # an output of ours (the repeated pass's input): the output made before it from the same state differs
        # from it only where that state changed since; that output's own state is taken over (its list is
        # superseded: asked again, it is made anew)
        parent = made[1]
        st = mm.states.get(id(parent))
        if st is not None and st.src is parent and st.n == len(parent) <= len(messages) and \
                (st.n == 0 or parent[-1] is st.last):
            del mm.states[id(parent)]
            st.out = None
            return st, [k for k in made[2] if k < st.n]
    best: tuple | None = None
    for old in reversed(list(mm.states.values())):
        if old.n > len(messages) or not old.n:
            continue
        changed = list(compress(count(), map(is_not, messages[:old.n], old.src)))
        if best is None or len(changed) < len(best[1]):
            best = (old, changed)
    if best is None or len(best[1]) * 2 > best[0].n:
        return _State(), []
    return best[0].copy(), best[1]


def _advance(mm: _Memo, messages: list) -> tuple[_State, list]:
    """The state after ``messages`` (from the state of a list it extends or resembles) and the positions of the
    output that changed since that state's last output."""
    memory = mm.params[3]
    st, changed = _base(mm, messages)
    n0, c1_old, cl_old = st.n, st.c1, st.cl
    dirty = _take_changed(mm, st, messages, changed)
    st.src = messages
    _take_new(mm, st, messages, n0)
    st.n = len(messages)
    st.last = messages[-1] if messages else None
    dirty += _move_boundaries(mm, st, messages, c1_old, cl_old)
    # the output: the new messages, then the old positions that changed or crossed a boundary
    full, back = st.full, st.back
    for k in range(n0, len(messages)):
        full.append(None)
        back.append(k)
        _place(mm, st, k, messages[k], memory)
    for k in dirty:
        if k < n0:
            _place(mm, st, k, messages[k], memory)
    for k in changed:                     # a cleared result's change names its message's content length
        u = st.tpos.get(k)
        if u is not None and u < cl_old:
            st.res[u] = _result_change(mm, messages, st.uses[u])
            for edits, stale in st.res_edits.values():
                if u < len(edits):
                    edits[u] = None
                    stale.append(u)
    return st, dirty


def _take_changed(mm: _Memo, st: _State, messages: list, changed: list) -> list:
    """Positions of the state's list holding another object in ``messages``: checked to have the same structure
    (else the full pass runs), their facts noted."""
    memory = mm.params[3]
    old_src = st.src
    for k in changed:
        _forget(st, old_src[k])
        _release(st, k)               # (its output is made again: the copy there may be this very message now)
    for k in changed:
        _note(st, messages[k])
        f = _facts(mm, messages[k])
        if f.key != st.keys[k]:
            raise Unsupported("a message of another structure in the prefix")
        if f.kind == _ASSISTANT:
            _toggle(st.had, k, f.had)
            _toggle(st.mem, k, memory and f.hit)
    return list(changed)


def _take_new(mm: _Memo, st: _State, messages: list, n0: int) -> None:
    """The messages from ``n0`` on: their structure, the tool uses they make and answer."""
    memory = mm.params[3]
    first_answer: dict = {}
    for m in messages[n0:]:
        _note(st, m)
    for k in range(n0, len(messages)):
        f = _facts(mm, messages[k])
        st.keys.append(f.key)
        if f.kind == _TOOL:
            first_answer.setdefault(f.tcid, []).append(k)
        elif f.kind == _ASSISTANT:
            st.asst.append(k)
            if f.had:
                st.had.append(k)
            if memory and f.hit:
                st.mem.append(k)
    if first_answer and any(cid in st.open for cid in first_answer):
        raise Unsupported("a result found after a later message")
    for k in st.asst[bisect_left(st.asst, n0):]:
        for cid, c in _facts(mm, messages[k]).calls:
            found = first_answer.get(cid, ())
            i = bisect_right(found, k)
            if i < len(found):
                t = found[i]
                if t in st.tpos:
                    raise Unsupported("a tool message answering two uses")
                st.tpos[t] = len(st.uses)
                st.uses.append((k, c, t))
            else:
                st.open[cid] = st.open.get(cid, 0) + 1


def _move_boundaries(mm: _Memo, st: _State, messages: list, c1_old: int, cl_old: int) -> list:
    """The two boundaries moved forward; the positions that crossed one (their output changes)."""
    keep_thinking, keep_uses = mm.params[0], mm.params[1]
    na = len(st.asst)
    st.c1 = 0 if keep_thinking == "all" else min(na, max(0, na - int(keep_thinking)))
    nu = len(st.uses)
    st.cl = nu if keep_uses == 0 else (nu - keep_uses if nu > keep_uses else 0)
    crossed = st.asst[c1_old:st.c1]
    for u in range(cl_old, st.cl):
        use = st.uses[u]
        st.res.append(_result_change(mm, messages, use))
        if use[1].get("id") is None:
            st.noid.append(u)
        crossed.append(use[2])
    return crossed


def _result_change(mm: _Memo, messages: list, use: tuple) -> tuple:
    _, c, t = use
    return ("result", t, t, f"tool result {c.get('id')} ({R.call_name(c)}) cleared",
            {"tool_id": c.get("id"), "old_len": _facts(mm, messages[t]).old_len,
             "new_len": len(R.TOOL_RESULT_REMOVED)})


def _note(st: _State, m: Any) -> None:
    """Message ``m`` is at one more position of the input."""
    i = id(m)
    if i in st.copies:
        raise Unsupported("a copy of ours in the input")
    c = st.ids.get(i, 0)
    st.ids[i] = c + 1
    if c == 1:
        st.dups += 1


def _forget(st: _State, m: Any) -> None:
    i = id(m)
    c = st.ids.get(i, 0)
    if c <= 1:
        st.ids.pop(i, None)
    else:
        st.ids[i] = c - 1
        if c == 2:
            st.dups -= 1


def _release(st: _State, k: int) -> None:
    """The copy at output position k (if any) leaves the output."""
    if st.back[k] is None:
        old = id(st.full[k])
        c = st.copies[old]
        if c == 1:
            del st.copies[old]
        else:
            st.copies[old] = c - 1
        st.back[k] = k


def _place(mm: _Memo, st: _State, k: int, m: Any, memory: bool) -> None:
    """The output at position k of input message ``m``: the message itself or its copy, made once, or made anew
    when the copy made before is one of the input's messages now."""
    _release(st, k)
    x = _output(mm, st, k, m, memory)
    if x is m:
        st.full[k], st.back[k] = m, k
        return
    if id(x) in st.ids:
        x = _output(_Memo(mm.params), st, k, m, memory)      # (per-message facts of its own: new copies)
    st.full[k], st.back[k] = x, None
    st.copies[id(x)] = st.copies.get(id(x), 0) + 1


def _toggle(positions: list, k: int, on: bool) -> None:
    i = bisect_left(positions, k)
    there = i < len(positions) and positions[i] == k
    if on and not there:
        positions.insert(i, k)
    elif there and not on:
        del positions[i]


def _output(mm: _Memo, st: _State, k: int, m: Any, memory: bool) -> Any:
    f = _facts(mm, m)
    if f.kind == _TOOL:
        u = st.tpos.get(k)
        return f.cleared(mm) if u is not None and u < st.cl else m
    if f.kind != _ASSISTANT:
        return m
    x = m
    if f.listy and bisect_left(st.asst, k) < st.c1:
        x = f.without_reasoning()
    if memory and f.hit:
        x = (_facts(mm, x) if x is not m else f).mem
    return x


def _result(st: _State, mm: _Memo) -> R.Pass:
    keep_thinking = mm.params[0]
    full, keys, src = st.full, st.keys, st.src
    nout = len(full)
    trailing: list = []
    while nout and keys[nout - 1][0] == _ASSISTANT:
        nout -= 1
        trailing.append(("trailing", nout, None, "trailing assistant message removed", {}))
    na = len(st.asst)
    reasoning: list = []
    if st.c1:
        cut = bisect_left(st.had, st.asst[st.c1 - 1] + 1)
        for k in reversed(st.had[:cut]):
            seen = na - bisect_left(st.asst, k)
            reasoning.append(("reasoning", k, k, f"message {k}: reasoning cleared (assistant turn {seen} from "
                                                 f"the end, only {keep_thinking} keep it)", {}))
    mem: list = [("memory", k, k, "memory tool call: saved content cleared from its arguments", {}) for k in st.mem]
    cleared = st.res[:st.cl]
    changes = reasoning + cleared[::-1] + mem + trailing
    pos = _Positions(nout)

    made_at, cl = st.n, st.cl

    def edits_for(where: str) -> list:
        if st.n != made_at or st.cl != cl or st.src is not src:      # (the state went on since: from the changes)
            return change_edits(changes, pos, where)
        lst, stale = st.res_edits.setdefault(where, ([], []))
        for u in stale:
            if lst[u] is None:
                lst[u] = change_edits([st.res[u]], pos, where)[0]
        stale.clear()
        if len(lst) < cl:
            lst.extend(change_edits(st.res[len(lst):cl], pos, where))
        # (every cleared result's edit names its tool but those of a call without an id; the other edits none)
        return CountedEdits(change_edits(reasoning, pos, where) + lst[:cl][::-1] +
                            change_edits(mem + trailing, pos, where), cl - bisect_left(st.noid, cl))
    msgs = full[:nout]
    return R.Pass(msgs, SameOrigin(nout), changes, info={"tool_uses": len(st.uses), "cleared": st.cl},
                  edits_for=edits_for)


def runs(indices: list) -> list[tuple[int, int]]:
    """Sorted indices as [start, end) runs."""
    out: list = []
    for i in sorted(set(indices)):
        if out and out[-1][1] == i:
            out[-1] = (out[-1][0], i + 1)
        else:
            out.append((i, i + 1))
    return out


def change_edits(changes: list, pos: Any, where: str = "") -> list[Edit]:
    """Edits in the trace's terms from a pass's changes (input indices; ``pos.get(i)``: input message i's output
    index)."""
    out: list[Edit] = []
    for kind, i, j, text, extra in changes:
        text = where + text
        if kind == "summary":
            rs = runs(extra.get("indices", []))
            a, b = (rs[0][0], rs[-1][1]) if rs else (None, None)
            out.append(Edit(SUMMARY, text + f"; the summary is message {j}", start=a, end=b, out=j))
        elif kind == "trimmed":
            rs = runs(extra.get("indices", []))
            for a, b in rs:
                out.append(Edit(SNIP, text if (a, b) == rs[0] else f"{where}messages {a}..{b - 1} trimmed",
                                start=a, end=b))
        elif kind in ("drop", "orphan", "trailing"):
            out.append(Edit(DROP, text, start=i, end=None if i is None else i + 1, message=i,
                            tool_id=extra.get("tool_id")))
        elif kind in ("result", "call", "reasoning", "memory", "calls"):
            out.append(Edit(REPLACE, text, message=i, out=pos.get(i), tool_id=extra.get("tool_id"),
                            old_len=extra.get("old_len"), new_len=extra.get("new_len")))
        else:
            out.append(Edit(NOTE, text, message=i))
    return out


# ------------------------------------------------------------------ the partition, carried
PART_KEY = "inspect.partition"


class _Part:
    __slots__ = ("src", "n", "last", "system", "inp", "conv", "summaries")

    def __init__(self):
        self.src: list = []
        self.n = 0
        self.last: Any = None
        self.system: list = []
        self.inp: list = []           # the messages marked as the sample's input (not system, not a summary)
        self.conv: list = []          # the others
        self.summaries: list = []


def partition(messages: list, meta: dict | None, memo: dict | None) -> tuple[R.Partition, list, list]:
    """(``inspect_rules.partition``, the input messages marked as such, the summaries' indices) of ``messages``;
    with a ``memo`` (a replay's), carried from the lists partitioned before (they grow at their end)."""
    if memo is None:
        part = R.partition(messages, meta)
        return (part, [i for i in part.input if R.message_facts(messages[i], meta)[2]],
                [i for i, m in enumerate(messages) if R.message_facts(m, meta)[1]])
    entry = memo.get(PART_KEY)
    if entry is None or entry[0] is not meta:
        entry = memo[PART_KEY] = (meta, {}, {})
    states: dict = entry[1]
    seen: dict = entry[2]            # id(message) -> (message, its facts): a list made anew (a compaction's
    if len(seen) >= _MAX_OBJECTS:     # output, grown) is partitioned at the cost of a dict look-up per message
        seen.clear()
    st = states.get(id(messages))
    if st is None or st.src is not messages or st.n > len(messages) or \
            (st.n and messages[st.n - 1] is not st.last):
        st = _Part()
        old = _like(states, messages, seen, meta)      # another list holding the same first messages (or copies)
        if old is not None:
            st.system, st.inp, st.conv, st.summaries = old.system[:], old.inp[:], old.conv[:], old.summaries[:]
            st.n = old.n
    for i in range(st.n, len(messages)):
        r, summary, marked = _message_facts(seen, messages[i], meta)
        if summary:
            st.summaries.append(i)
        (st.system if r == "system" else st.conv if summary or not marked else st.inp).append(i)
    st.src, st.n, st.last = messages, len(messages), messages[-1] if messages else None
    states.pop(id(messages), None)
    while len(states) >= _MAX_STATES:
        states.pop(next(iter(states)))
    states[id(messages)] = st
    if st.inp:
        return R.Partition(st.system[:], st.inp[:], st.conv[:]), st.inp[:], st.summaries[:]
    moved = _unmarked_input(messages, meta, st.conv)
    return R.Partition(st.system[:], st.conv[:moved], st.conv[moved:]), [], st.summaries[:]


def _message_facts(seen: dict, m: Any, meta: dict | None) -> tuple:
    """``inspect_rules.message_facts`` of ``m``, kept in ``seen`` by identity (the message held there)."""
    e = seen.get(id(m))
    if e is None or e[0] is not m:
        e = seen[id(m)] = (m, R.message_facts(m, meta))
    return e[1]


def _like(states: dict, messages: list, seen: dict, meta: dict | None) -> _Part | None:
    """A partitioned list whose messages are the first of ``messages``, or are where ``messages`` holds another
    object with the same part (system, input, conversation) and summary flag: the input of the call before, when
    a compaction there replaced a few of its messages (an edit pass's cleared copies). The positions that hold
    other objects are found in C; only they are looked at one by one."""
    for old in reversed(list(states.values())):
        if not (0 < old.n <= len(messages)) or old.src[old.n - 1] is not old.last:
            continue
        src = old.src
        diff = list(compress(count(), map(is_not, messages[:old.n], src)))
        if len(diff) * 8 > old.n:
            continue
        for k in diff:
            a, b = _message_facts(seen, src[k], meta), _message_facts(seen, messages[k], meta)
            if a[1:] != b[1:] or (a[0] == "system") != (b[0] == "system"):
                break
        else:
            return old
    return None


def _unmarked_input(messages: list, meta: dict | None, conv: list) -> int:
    """With no message marked as the input: how many of the conversation's first messages are (up to and
    including the first user message, stopping at a summary)."""
    moved = 0
    for i in conv:
        if R.message_facts(messages[i], meta)[1]:
            break
        moved += 1
        if R.role(messages[i]) == "user":
            break
    return moved
