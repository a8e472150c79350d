"""What Codex's compaction reads of a history, made message by message and carried from list to list.

A replay asks Codex's compaction at nearly every call once the recorded totals pass the limit, and each time the
layers read the whole history: which messages are the user's prompts (and their tokens), which are the initial
context (the first of equal texts), Codex's item estimate of the whole, the digests of the request's pieces. The
running context only grows at its end from call to call, and a compaction's new history starts with the prompts
the previous one kept: so the scan of a list is carried on from the scan of a list it shares a prefix with
(``ListMemo``), undone to that prefix when it covered more, and only the messages past it are read.

``CodexScan`` holds, for ``messages[:covered]``: the kind bits of each message, the positions of the prompts and
the prefix sums of their tokens (``approx_tokens`` of their text), the positions of the initial context (each
key once, the first), a byte per message that is 1 where it is not initial context (for ``itertools.compress``),
the prefix sums of Codex's item estimate, and (filled on demand) the digests of the request's pieces.
``select`` is ``codex_rules.select_user_messages`` from the prefix sums: the same picks, found by bisection.
"""
from __future__ import annotations

from bisect import bisect_left, bisect_right
from typing import Any, Callable

from ..runtime.listmemo import ListMemo

DIGEST = 32                     # bytes per piece digest (sha256)


class CodexScan:
    __slots__ = ("kinds", "notinit", "prompts", "psum", "ctx", "keys", "seen", "tok", "dig")

    def __init__(self):
        self.kinds = bytearray()        # per message: its kind bits (PROMPT | SUMMARY_ITEM | INITIAL)
        self.notinit = bytearray()      # per message: 1 when it is not initial context
        self.prompts: list[int] = []    # positions of the prompts
        self.psum: list[int] = [0]      # psum[j]: the tokens of the first j prompts
        self.ctx: list[int] = []        # positions of the initial context, each key's first
        self.keys: list = []            # their keys (role, text)
        self.seen: dict = {}            # key -> its position in ctx's positions
        self.tok: list[int] = [0]       # tok[i]: Codex's item estimate of messages[:i]
        self.dig = bytearray()          # the piece digests of messages[:len(dig) // DIGEST]

    @property
    def covered(self) -> int:
        return len(self.kinds)

    def copy(self) -> "CodexScan":
        return self.rolled_back(self.covered)

    def rolled_back(self, k: int) -> "CodexScan":
        """A new scan of the first ``k`` messages alone (``k`` at most what this one covers); this one unchanged."""
        c = CodexScan()
        c.kinds, c.notinit = self.kinds[:k], self.notinit[:k]
        j = bisect_left(self.prompts, k)
        c.prompts, c.psum = self.prompts[:j], self.psum[:j + 1]
        q = bisect_left(self.ctx, k)
        c.ctx, c.keys = self.ctx[:q], self.keys[:q]
        c.seen = dict(zip(c.keys, c.ctx))
        c.tok = self.tok[:k + 1]
        c.dig = self.dig[:k * DIGEST]
        return c

    def add(self, m: Any, bits: int, initial: int, prompt: int, text_tokens: Callable[[Any], tuple[str, int]],
            tokens: int, key: Callable[[Any], Any]) -> None:
        i = len(self.kinds)
        self.kinds.append(bits)
        self.notinit.append(0 if bits & initial else 1)
        if bits & prompt:
            self.prompts.append(i)
            self.psum.append(self.psum[-1] + text_tokens(m)[1])
        if bits & initial:
            k = key(m)
            if k not in self.seen:
                self.seen[k] = i
                self.ctx.append(i)
                self.keys.append(k)
        self.tok.append(self.tok[-1] + tokens)

    def digests(self, messages: list, start: int, end: int, joined: Callable[[list], bytes | None]) -> bytes:
        """The piece digests of ``messages[start:end]`` one after the other (``end`` at most what is covered),
        those not kept yet made by ``joined`` (the table's)."""
        have = len(self.dig) // DIGEST
        if have < end:
            self.dig += joined(messages[have:end]) or b""
        return bytes(self.dig[start * DIGEST:end * DIGEST])

    def select(self, budget: int) -> tuple[int, int, int | None]:
        """``select_user_messages`` over the covered messages from the prefix sums: (the first prompt taken whole,
        as an index into ``prompts``; how many are taken whole; the index of the one cut to what is left, or None),
        with ``budget - taken tokens`` left. The walk newest first takes prompt i whole while the tokens after it
        leave room (``S(i+1) < budget``) and it fits (``S(i) <= budget``); the first that fails stops it, and is
        cut when room is left. ``S`` is non-increasing, so where it stops is found by bisection."""
        n = len(self.prompts)
        if budget <= 0 or n == 0:
            return n, 0, None
        total = self.psum[n]
        # S(i) = total - psum[i]; S(i) > budget <=> psum[i] < total - budget; S(i) >= budget <=> psum[i] <= ...
        a = bisect_left(self.psum, total - budget, 0, n + 1) - 1          # the last i with S(i) > budget
        b = bisect_right(self.psum, total - budget, 0, n + 1) - 1         # the last i with S(i) >= budget
        stop = max(a, b - 1, -1)
        first = stop + 1
        cut = stop if stop >= 0 and total - self.psum[stop + 1] < budget else None
        return first, n - first, cut

    def left(self, budget: int, first: int) -> int:
        """What is left of ``budget`` after the prompts from ``first`` on."""
        return budget - (self.psum[len(self.prompts)] - self.psum[first])


_SCANS = ListMemo()


def codex_scan(messages: list, upto: int, owner: Any, add: Callable[[CodexScan, Any], None]) -> CodexScan:
    """The scan of ``messages[:upto]``: carried on from the scan of a list this one extends or shares a prefix with,
    undone to that prefix when it covered more, else made from the start (``add(scan, message)`` reads one more
    message); remembered per ``owner`` (the conversation's metadata)."""
    st, k, same = _SCANS.find(messages, owner)
    if st is None:
        st, k, same = CodexScan(), 0, True
    k = min(k, upto)
    made = k < upto
    if k < st.covered:
        st, made = st.rolled_back(k), True
    elif not same and k < upto:
        st = st.copy()
    for i in range(k, upto):
        add(st, messages[i])
    if made:
        _SCANS.store(messages, upto, st)
    return st


def forget() -> None:
    _SCANS.clear()
