"""s08's micro_compact carried from one model call to the next (the replay's incremental path).

In a replay the pipeline runs before every model call over the last call's output plus the new messages; s08's
snip then cuts a few messages out after the head and puts its placeholder there. So micro_compact's input is,
for the most part, its own last output: a head, then one new message (the placeholder), then the last output
from some point on, then the new messages; every other message the same dict (layers never change a message).
What micro_compact does with a message depends only on the message and ``micro_min_chars``, except which of its
tool results are among the last ``keep_recent``. So it keeps, in a memo the engine owns (``LayerContext.memo``:
None outside a replay, where the full scan runs as before), its last output and per position what it found in
that message: its tool results, and those that make an edit once they are older (a result to replace, a quirk
to note). A call checks by identity, in C, how its input is made of that output; it classifies only the messages
that are not in it (the placeholder, the new ones) and walks in Python only the results that make an edit. An
input made otherwise (a summary, another layer order, changed parameters) is scanned whole.

The output (messages, origin, edits, vars, note, delta) is the full scan's (``s08.micro_compact``): a property
test compares the two on random growing conversations.
"""
from __future__ import annotations

from itertools import accumulate, compress, count, islice, repeat
from operator import is_, is_not, itemgetter
from typing import Any, Callable

from ..pipeline.trace import NOTE, REPLACE, Delta, Edit, LayerOutput

KEY = "s08.micro_compact"
MIN_MESSAGES = 256         # below this the full scan is as cheap as the checks by identity (s08's window is 50)
# what an older tool result makes: nothing (no class), a note (its content has no len(), or is a list whose
# text is long), a replacement
NOTE_TYPE, NOTE_LIST, REPLACED = 1, 2, 3
EMPTY = (0, (), ())            # the entry of a message holding no tool result

_COUNT = itemgetter(0)
_LOUD = itemgetter(2)


def _classify(b: dict, min_chars: int, placeholder: str) -> tuple | None:
    """What the full scan does with this result when it is an older one: None (nothing, no edit), or
    (class, length, chars) for its edit."""
    content = b.get("content", "")
    if content.__class__ is str and content == placeholder:
        return None
    try:
        length = len(content)
    except TypeError:
        return NOTE_TYPE, 0, 0
    if length <= min_chars:
        if isinstance(content, list):
            chars = len(str(content))
            if chars > min_chars:
                return NOTE_LIST, length, chars
        return None
    if content == placeholder:
        return None
    return REPLACED, length, 0


def entry(m: Any, min_chars: int, placeholder: str) -> tuple:
    """(its tool results, the results in order, those that make an edit as (k, block index, block, class,
    length, chars) with k the result's place among the message's results): the full scan's view of one message."""
    if not (isinstance(m, dict) and m.get("role") == "user"):
        return EMPTY
    c = m.get("content")
    if not isinstance(c, list):
        return EMPTY
    found: list = []
    loud: list = []
    for bi, b in enumerate(c):
        if isinstance(b, dict) and b.get("type") == "tool_result":
            what = _classify(b, min_chars, placeholder)
            if what is not None:
                loud.append((len(found), bi, b) + what)
            found.append(b)
    return (len(found), tuple(found), tuple(loud)) if found else EMPTY


def _find(seq: list, x: Any, start: int, stop: int) -> int | None:
    """The first index in [start, stop) of ``x`` in ``seq`` by identity (in C), or None."""
    return next(compress(count(start), map(is_, islice(seq, start, stop), repeat(x))), None)


def _from_last(messages: list, last: list, n_last: int, ents: list) -> list | None:
    """The entries of ``messages`` when it is ``last[:a]`` + one message + ``last[b:n_last]`` + new messages, or
    ``last[:n_last]`` + new messages (checked by identity): the known entries sliced, the others None; None
    otherwise. (``last`` had ``n_last`` messages then; it may have grown since: a replay extends its running
    context in place, and only at its end.)"""
    n = len(messages)
    if len(last) < n_last:
        return None
    a = next(compress(count(), map(is_not, messages, islice(last, n_last))), min(n, n_last))
    if a == n_last:
        return ents + [None] * (n - a)
    if a + 1 >= n:
        return None
    b = _find(last, messages[a + 1], a, n_last)
    if b is None:
        return None
    m = n_last - b                                 # last[b:n_last] should follow the one new message
    if a + 1 + m > n or not all(map(is_, islice(messages, a + 1, a + 1 + m), islice(last, b, n_last))):
        return None
    return ents[:a] + [None] + ents[b:] + [None] * (n - (a + 1 + m))


def _entries(messages: list, memo: dict, min_chars: int, placeholder: str) -> list:
    key = (min_chars, placeholder)
    kept = memo.get(KEY)
    ents = _from_last(messages, kept[1], kept[2], kept[3]) if kept is not None and kept[0] == key else None
    if ents is None:
        return [entry(m, min_chars, placeholder) for m in messages]
    if None in ents:
        for i in list(compress(range(len(ents)), map(is_, ents, repeat(None)))):
            ents[i] = entry(messages[i], min_chars, placeholder)
    return ents


def _kept_recent(ents: list, keep_recent: int) -> list:
    """The tool_use ids of the last ``keep_recent`` results (the full scan's ``f_b[-keep_recent:]``)."""
    if keep_recent <= 0:
        return []
    last: list = []
    for e in compress(reversed(ents), map(_COUNT, reversed(ents))):
        last[:0] = e[1]
        if len(last) >= keep_recent:
            break
    return [b.get("tool_use_id") for b in last[-keep_recent:]]


def micro_compact_memo(messages: list, memo: dict, keep_recent: int, min_chars: int, placeholder: str,
                       fmt: Callable[[int], str], explain: bool = True) -> LayerOutput:
    """``s08.micro_compact`` carried from the last call's output in ``memo`` (see the module's docstring)."""
    ents = _entries(messages, memo, min_chars, placeholder)
    memo[KEY] = ((min_chars, placeholder), messages, len(messages), ents)
    v, early, n_older = micro_start(messages, sum(map(_COUNT, ents)), keep_recent, explain)
    if early is not None:
        return early
    edits: list[Edit] = []
    changed: dict[int, list] = {}
    loud = list(compress(range(len(ents)), map(_LOUD, ents)))
    if loud:
        starts = list(accumulate(map(_COUNT, ents), initial=0))
        for mi in loud:
            if starts[mi] >= n_older:
                break
            _edits(messages, mi, ents[mi][2], n_older - starts[mi], placeholder, fmt, edits, changed)
    v["replaced"] = sum(1 for e in edits if e.kind == REPLACE)
    v["kept_recent"] = _kept_recent(ents, keep_recent)
    result = micro_finish(messages, changed, edits, v, n_older, keep_recent, min_chars, explain)
    if changed:
        out = result.messages
        out_ents = list(ents)
        for mi in changed:
            out_ents[mi] = entry(out[mi], min_chars, placeholder)
        memo[KEY] = ((min_chars, placeholder), out, len(out), out_ents)    # what the next call's input is made of
    return result


def micro_start(messages: list, n_found: int, keep_recent: int, explain: bool = True
                ) -> tuple[dict, LayerOutput | None, int]:
    """micro_compact's vars, its output when no result is older than the last ``keep_recent`` (else None), and
    how many are older (both paths, the full scan's and the carried one). Not ``explain``: that output without its
    note and vars (``LayerContext.explain``)."""
    v: dict[str, Any] = {"tool_results": n_found, "keep_recent": keep_recent}
    if n_found <= keep_recent:
        if not explain:
            return v, LayerOutput.unchanged(messages), 0
        return v, LayerOutput.unchanged(messages, f"{n_found} tool result(s) <= keep_recent {keep_recent}",
                                        vars=v), 0
    return v, None, n_found - keep_recent if keep_recent > 0 else n_found


def micro_finish(messages: list, changed: dict, edits: list, v: dict, n_older: int, keep_recent: int,
                 min_chars: int, explain: bool = True) -> LayerOutput:
    """micro_compact's output from the new contents of the messages it ``changed`` (both paths); when it changed
    none and not ``explain``, without its note and vars."""
    if not changed:
        if not explain:
            return LayerOutput.unchanged(messages, edits=edits)
        return LayerOutput.unchanged(messages, f"all {n_older} older tool result(s) are <= {min_chars} chars "
                                               "or not strings", edits=edits, vars=v)
    out = list(messages)
    for mi, content in changed.items():
        out[mi] = {**messages[mi], "content": content}
    return LayerOutput(out, list(range(len(out))), edits, v,
                       f"replaced {v['replaced']} of {n_older} older tool result(s); kept the last {keep_recent}",
                       delta=Delta.replaced(changed))


def type_note(tid: Any, content: Any, mi: int, bi: int) -> Edit:
    """The note on an older result whose content has no len() (the seed code would raise there)."""
    return Edit(NOTE, f"skipped {tid}: its content is {type(content).__name__}; the teaching code would raise "
                      "TypeError on len() here", message=mi, block=bi, tool_id=tid)


def list_note(tid: Any, length: int, chars: int, fmt: Callable[[int], str], mi: int, bi: int) -> Edit:
    """The note on an older result whose content is a list of blocks with a long text (the seed's quirk)."""
    return Edit(NOTE, f"kept {tid}: its content is a list of {length} block(s), and len() counts blocks, not "
                      f"characters ({fmt(chars)} chars): the seed's quirk never compacts list results",
                message=mi, block=bi, tool_id=tid, old_len=chars)


def _edits(messages: list, mi: int, loud: tuple, older: int, placeholder: str, fmt: Callable[[int], str],
           edits: list, changed: dict) -> None:
    """The edits of message ``mi``'s results that make one, among its first ``older`` results (the older ones)."""
    add_edit = edits.append
    for k, bi, b, what, length, chars in loud:
        if k >= older:
            break
        tid = b.get("tool_use_id")
        if what == NOTE_TYPE:
            add_edit(type_note(tid, b.get("content", ""), mi, bi))
        elif what == NOTE_LIST:
            add_edit(list_note(tid, length, chars, fmt, mi, bi))
        else:
            blocks_ = changed.get(mi)
            if blocks_ is None:
                blocks_ = changed[mi] = list(messages[mi]["content"])
            blocks_[bi] = {**b, "content": placeholder}
            add_edit(Edit(REPLACE, f"replaced {tid} ({length:,} chars) with the placeholder", None, None, mi, bi, mi,
                          tid, length, len(placeholder)))
