"""Inspect's token count of a message list, per message: what ``tiktoken`` gives for the newline-joined text of
every piece of the list, without tokenizing the whole list at every call of a replay.

Tokens of a joined text add up across a *safe* cut: a cut right after a ``"\\n"`` separator, before a piece that
starts with a printable character that is neither white space nor ``/``. At such a cut every pre-token of
``o200k_base`` (and of any tiktoken pattern of its family) ends: the separator can only belong to a white-space
run (``\\s*[\\r\\n]+``, ``\\s+``) or to the tail ``[\\r\\n/]*`` of a punctuation run, and none of them goes on into
a printable non-space character other than ``/``; no pre-token starts with a newline and then takes letters or
digits. The pre-tokens before the cut are the same with or without the text after it (the only look-ahead,
``\\s+(?!\\S)``, is never reached for a white-space run that holds a newline), so the count of the whole text is
the count of the part before the cut plus the count of the part after it.

So each message's pieces are cut once, at the safe cuts inside it, the runs between two of its cuts counted
once (cached by message identity), and only the runs that span messages (a message whose first piece is not
safe joins the run before it) are counted per list, by their text (cached too). Pure Python, no Qt.
"""
from __future__ import annotations

from typing import Any, Callable

from ..runtime.listmemo import equal_prefix

_MAX_MESSAGES = 200_000
_MAX_RUNS = 50_000
_MAX_LISTS = 32
_RESUME_LISTS = 4        # the most recent lists a new list is compared with
_MIN_KEPT = 8            # a shorter list is not kept (the one-message lists of the tool definitions, counted at
                         # every call, took the places of the contexts a replay's next lists resume from)
_START = [(0, 0, (), False)]     # the state before any message: (total, media, the open run, any text)


def safe_start(text: str) -> bool:
    """Whether a cut before ``text`` (right after a newline separator) is safe (see above)."""
    if not text:
        return False
    c = text[0]
    return c != "/" and c.isprintable() and not c.isspace()


def looks_same(a: list, b: list, samples: int = 8) -> bool:
    """Whether ``a`` and ``b`` hold the same objects at a few places spread over their common length (a cheap
    hint of which of two lists to compare first; never a proof)."""
    n = min(len(a), len(b))
    return n == 0 or all(a[j] is b[j] for j in range(n - 1, -1, -max(1, n // samples)))


def same_prefix(snapshot: list, messages: list) -> bool:
    """Whether ``messages`` starts with the messages of ``snapshot`` (equal values; the same objects in C's
    fast path)."""
    n = len(snapshot)
    return messages == snapshot if len(messages) == n else messages[:n] == snapshot


class JoinedCounter:
    """``count(pieces of messages joined with newlines)`` per message. ``pieces(m, texts, media)`` appends one
    message's text pieces and media token counts; ``encode_len(text)`` is the token count of a text."""

    def __init__(self, pieces: Callable[[Any, list, list], None], encode_len: Callable[[str], int]):
        self.pieces = pieces
        self.encode_len = encode_len
        self._messages: dict[int, tuple] = {}
        self._runs: dict[str, int] = {}
        # id(list) -> (its messages, the state after them): the last lists counted (a list's id may be reused once
        # it is freed: its messages are compared, never assumed)
        self._lists: dict[int, tuple] = {}

    def _split(self, m: Any) -> tuple:
        """(m, head, closed tokens, tail, has texts, media) of one message: ``head`` the pieces before its first
        safe one (they join the run before), ``closed`` the tokens of its runs that end inside it (each with its
        newline), ``tail`` the pieces of its last run (None when no piece is safe)."""
        e = self._messages.get(id(m))
        if e is not None and e[0] is m:
            return e
        texts: list = []
        media: list = []
        self.pieces(m, texts, media)
        cuts = [k for k, t in enumerate(texts) if safe_start(t)]
        if not cuts:
            e = (m, texts, 0, None, bool(texts), sum(media))
        else:
            closed = 0
            for a, b in zip(cuts, cuts[1:]):            # (by text: a new message of a text seen before, as
                closed += self._run(texts[a:b], True)   # a cleared tool result, is not tokenized again)
            e = (m, texts[:cuts[0]], closed, texts[cuts[-1]:], True, sum(media))
        if len(self._messages) >= _MAX_MESSAGES:
            self._messages.clear()
        self._messages[id(m)] = e
        return e

    def _run(self, texts: list, more: bool) -> int:
        s = "\n".join(texts) + ("\n" if more else "")
        n = self._runs.get(s)
        if n is None:
            n = self.encode_len(s)
            if len(self._runs) >= _MAX_RUNS:
                self._runs.clear()
            self._runs[s] = n
        return n

    def _resume(self, messages: list) -> tuple[int, list]:
        """(how many leading messages of ``messages`` a kept list stands for, that list's states up to there): the
        same list again or extended since (its first messages compared: a caller may have replaced a message in
        place; a list compares its items by identity first, in C, ~8x cheaper than ``is`` one by one; an equal
        message in its place has the same count), else the kept list sharing the longest prefix of equal
        messages with it (an edit pass's result: copies, mostly of the same content, of the last one's messages)."""
        last = self._lists.get(id(messages))
        if last is not None and len(messages) >= len(last[0]) > 0 and same_prefix(last[0], messages):
            return len(last[0]), last[1]
        best, states = 0, _START
        if messages:
            first = messages[0]
            later = []
            for old, old_states in reversed(list(self._lists.values())[-_RESUME_LISTS:]):
                if not old or old is messages or (old[0] is not first and old[0] != first):
                    continue
                if not looks_same(old, messages):      # (compared after the others: equal copies cost a compare
                    later.append((old, old_states))    # of their content each)
                    continue
                k = equal_prefix(old, messages)
                if k > best:
                    best, states = k, old_states
            if best * 2 < len(messages):
                for old, old_states in later:
                    k = equal_prefix(old, messages)
                    if k > best:
                        best, states = k, old_states
        return best, states[:best + 1]

    def count(self, messages: list) -> tuple[int, int, bool]:
        """(tokens of the joined text, media tokens, whether there is any text). The state after each message of
        the last lists counted is kept (``_resume``): the same list, extended in place since (a replay's running
        context), or a list that shares its first messages with one of them, costs the messages after those."""
        start, states = self._resume(messages)
        total, media, run_t, any_text = states[-1]
        run = list(run_t)                 # the open run: pieces since the last safe cut
        for m in messages[start:] if start else messages:
            _, head, closed, tail, has, med = self._split(m)
            media += med
            if has:
                any_text = True
                run.extend(head)
                if tail is not None:
                    if run:                               # the run before this message's first safe piece ends here
                        total += self._run(run, True)
                    total += closed
                    run = list(tail)
            states.append((total, media, tuple(run), any_text))
        if len(messages) >= _MIN_KEPT:
            self._lists.pop(id(messages), None)
            while len(self._lists) >= _MAX_LISTS:
                self._lists.pop(next(iter(self._lists)))
            self._lists[id(messages)] = (list(messages), states)
        if run:
            total += self._run(run, False)
        return total, media, any_text
