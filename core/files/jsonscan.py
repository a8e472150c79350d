"""The scans of a JSON document's chunks, for ``jsonstream``: the punctuation outside strings of the outermost
levels, with each token's nesting level, and what one chunk leaves to the next. ``Scan`` is numpy's, for a
document of ``jsonstream.NUMPY_BYTES`` or more; ``TextScan`` is the pure-Python one (regexes), with its
``RUN`` tokens for elements on one line.

Neutral ground like ``jsonio``: it imports nothing else of Compactscope but ``jsonio``."""
from __future__ import annotations

import re
from typing import Any

from .jsonio import loads


class Scan:
    """The tokens of one chunk after another: the punctuation outside strings whose container is at most
    ``max_level`` deep (the root container is level 1), with what one chunk leaves to the next (inside a
    string or not, a run of backslashes at its end, the nesting level)."""

    def __init__(self, max_level: int):
        self.max_level = max_level
        self.parsed: dict = {}       # (``TextScan.parsed``: this scan parses no run)
        self.in_str = 0
        self.bs = 0
        self.depth = 0

    def _quotes(self, buf):
        import numpy as np
        q = np.flatnonzero(buf == 0x22)
        if not len(q):
            return q
        after = np.zeros(len(q), dtype=bool)
        inner = q > 0
        after[inner] = buf[q[inner] - 1] == 0x5C
        carry_first = q[0] == 0 and self.bs > 0
        if not (after.any() or carry_first):
            return q
        esc = np.zeros(len(q), dtype=bool)
        if after.any():
            b = np.flatnonzero(buf == 0x5C)
            starts = b[np.concatenate(([True], np.diff(b) != 1))]
            qb = q[after]
            rs = starts[np.searchsorted(starts, qb - 1, side="right") - 1]
            run = (qb - rs) + np.where(rs == 0, self.bs, 0)
            esc[after] = (run & 1) == 1
        if carry_first:
            esc[0] = (self.bs & 1) == 1
        return q[~esc]

    def tokens(self, chunk: bytes, base: int) -> tuple[list, list, list]:
        import numpy as np
        buf = np.frombuffer(chunk, dtype=np.uint8)
        q = self._quotes(buf)
        if chunk.endswith(b"\\"):
            run = len(chunk) - len(chunk.rstrip(b"\\"))
            self.bs = run + (self.bs if run == len(chunk) else 0)
        else:
            self.bs = 0
        m = buf == 0x2C                          # , : [ ] { } (six compares beat a table look-up)
        for byte in (0x3A, 0x5B, 0x5D, 0x7B, 0x7D):
            m |= buf == byte
        s = np.flatnonzero(m)
        del m
        if len(q) or self.in_str:
            s = s[((np.searchsorted(q, s) + self.in_str) & 1) == 0]
        self.in_str = (len(q) + self.in_str) & 1
        c = buf[s]
        opens = (c == 0x5B) | (c == 0x7B)
        closes = (c == 0x5D) | (c == 0x7D)
        level = np.cumsum(opens.astype(np.int64) - closes.astype(np.int64)) + self.depth
        if len(level):
            self.depth = int(level[-1])
        own = level + closes
        keep = own <= self.max_level
        return (s[keep] + base).tolist(), c[keep].tolist(), own[keep].tolist()


# the pure-Python scan (``TextScan``): one regex match consumes everything up to the next token it must look at,
# whole strings included (possessive: no backtracking); a backslash escapes the next quote or backslash inside and
# outside strings alike, as the vectorised scan reads a quote after an odd run of backslashes
_STRING = rb'"[^"\\]*+(?:\\.[^"\\]*+)*+"'
_OUTSIDE_BS = rb'\\[\\"]|\\(?=[^\\"])'
_SHALLOW = re.compile(rb'(?:[^"\[\]{},:\\]++|' + _STRING + rb'|' + _OUTSIDE_BS + rb')*+', re.S)
_DEEP = re.compile(rb'(?:[^"\[\]{}\\]++|' + _STRING + rb'|' + _OUTSIDE_BS + rb')*+', re.S)
_IN_STRING = re.compile(rb'[^"\\]*+(?:\\.[^"\\]*+)*+', re.S)
GROUP_LEVELS = 8               # how deep a bracketed group the scan without numpy consumes in one regex match
GROUP_BYTES = 256 * 1024       # a smaller document is scanned bracket by bracket (the group regex takes 4 ms to compile)


def _balanced(levels: int = GROUP_LEVELS) -> tuple[Any, Any, Any]:
    """``_SHALLOW`` and ``_DEEP`` that also consume whole bracketed groups, nested up to ``levels`` deep, with
    their strings: every token inside such a group sits deeper than the level the scan is at, so none is lost, and
    a message or a whole array of them costs one match, not one per bracket. (Any closing bracket closes a group,
    as the scan counts depth.) A group the match cannot take whole (cut by the chunk's end, or deeper) is left to
    the bracket-by-bracket walk. Compiled once, when a document is first scanned."""
    hit = _BALANCED.get(levels)
    if hit is None:
        atom = rb'[^"\[\]{}\\]++|' + _STRING + rb'|' + _OUTSIDE_BS
        group = rb'[\[{](?:' + atom + rb')*+[\]}]'
        for _ in range(levels - 1):
            group = rb'[\[{](?:' + atom + rb'|' + group + rb')*+[\]}]'
        shallow = rb'(?:[^"\[\]{},:\\]++|' + _STRING + rb'|' + _OUTSIDE_BS + rb'|' + group + rb')*+'
        deep = rb'(?:' + atom + rb'|' + group + rb')*+'
        run = rb'(?:' + shallow + rb',)*+'
        hit = _BALANCED[levels] = (re.compile(shallow, re.S).match, re.compile(deep, re.S).match,
                                   re.compile(run, re.S).match)
    return hit


_BALANCED: dict = {}


class TextScan:
    """``Scan`` without numpy (the same tokens and carry from one chunk to the next), for a document too small
    to pay numpy's import (~13 MB and ~0.1 s): at the levels deeper than ``max_level`` only brackets stop the
    regex, its strings read in C; with ``group_levels`` (a document of ``GROUP_BYTES`` or more) a whole bracketed
    group below ``max_level``, up to that deep, is one match too (``_balanced``): a message, or a probe's whole
    array of them, costs one.

    ``runs`` (with ``group_levels``): in an array at ``max_level``, the elements that sit on one line, each with
    its comma, are one match and one token, ``RUN`` at the last comma (up to ``RUN_BYTES``): the reader parses
    them in one batch and needs no comma of theirs, as they all have one line; it finds them again
    (``split_run``) only when it must read them one by one. A run of objects that starts at a separator is first
    tried as one ``loads`` up to its last "},": when those bytes are valid JSON elements they end where the regex
    would end them, and their values (``parsed``, by the run's end) spare the reader its batch."""

    def __init__(self, max_level: int, group_levels: int = GROUP_LEVELS, runs: bool = False):
        self.group_levels = group_levels
        self.max_level = max_level
        self.runs = runs and group_levels > 0
        self.in_str = 0
        self.bs = 0
        self.depth = 0
        self.top_array = False       # the container open at ``max_level`` is an array
        self.last_sep = 0            # where the last comma (or bracket) at ``max_level`` was
        self.parsed: dict = {}       # a ``RUN``'s end -> its elements' values, when one loads parsed them all
        self.short = True            # the element before it was short: a run is worth trying after it

    def tokens(self, chunk: bytes, base: int) -> tuple[list, list, list]:
        pos, n = 0, len(chunk)
        if self.bs & 1 and n and chunk[0] in (0x22, 0x5C):
            pos = 1                                  # escaped by the odd run of backslashes the last chunk ended with
        if chunk.endswith(b"\\"):
            run = n - len(chunk.rstrip(b"\\"))
            self.bs = run + (self.bs if run == n else 0)
        else:
            self.bs = 0
        ps: list = []
        cs: list = []
        owns: list = []
        top, depth, in_str, top_array, short = self.max_level, self.depth, self.in_str, self.top_array, self.short
        shallow, deep, string = _SHALLOW.match, _DEEP.match, _IN_STRING.match
        shallow_groups, deep_groups, run_match = _balanced(self.group_levels) if self.group_levels else \
            (shallow, deep, shallow)            # (no runs without groups)
        runs = self.runs
        ran = -1                                     # where the last run stopped (not tried again there)
        sep_end = -1                                 # just after the last token at ``max_level`` in this chunk
        # groups are consumed whole at a depth up to ``whole``; one the match could not take is walked bracket by
        # bracket until it closes (so no byte is looked at by more than one failed match)
        whole = n
        while pos < n:
            if in_str:
                pos = string(chunk, pos).end()  # type: ignore[union-attr]  # (each pattern matches "")
                if pos >= n or chunk[pos] != 0x22:
                    break                            # the string goes on in the next chunk
                in_str, pos = 0, pos + 1
                continue
            if depth < top or depth > whole:
                pos = (deep if depth > top else shallow)(chunk, pos).end()  # type: ignore[union-attr]
            else:
                if runs and short and top_array and depth == top and pos != ran:
                    stop = pos + RUN_BYTES if pos + RUN_BYTES < n else n
                    nl = chunk.find(b"\n", pos, stop)
                    end = nl if nl >= 0 else stop
                    # objects from a separator on: the values one loads reads up to the last "}," (valid JSON
                    # elements end where the regex would end them), no regex over their bytes; else the regex
                    cut = chunk.rfind(b"},", pos, end) if pos == sep_end else -1
                    values = None
                    if cut > pos:
                        try:
                            values = loads(b"[" + chunk[pos:cut + 1] + b"]")
                        except (ValueError, RecursionError, MemoryError):
                            values = None
                    if values is not None:
                        ran = cut + 2
                        self.parsed[cut + 1 + base] = values
                    else:
                        ran = run_match(chunk, pos, end).end()  # type: ignore[union-attr]
                    if ran > pos:
                        ps.append(ran - 1 + base)    # elements on one line, each with its comma: one token
                        cs.append(RUN)
                        owns.append(depth)
                        self.last_sep = ran - 1 + base
                        pos = sep_end = ran
                        continue
                pos = (deep_groups if depth > top else shallow_groups)(chunk, pos).end()  # type: ignore[union-attr]
                if pos < n and (chunk[pos] == 0x5B or chunk[pos] == 0x7B):
                    whole = depth                    # a group not taken whole: walked inside
            if pos >= n:
                break
            c = chunk[pos]
            if c == 0x22:
                in_str, pos = 1, pos + 1             # a string the chunk cuts
                continue
            if c == 0x5C:
                break                                # a backslash that ends the chunk
            if c == 0x5B or c == 0x7B:
                depth += 1
                own = depth
                if depth == top:
                    top_array = c == 0x5B
            elif c == 0x5D or c == 0x7D:
                own = depth
                depth -= 1
                if depth <= whole:
                    whole = n
            else:
                own = depth
            if own <= top:
                ps.append(pos + base)
                cs.append(c)
                owns.append(own)
                if own == top and runs:
                    # after a long element (a tool result) the next is likely long too: no run tried on it
                    short = pos + base - self.last_sep < RUN_BYTES // 4
                    self.last_sep = pos + base
                    sep_end = pos + 1
            pos += 1
        self.depth, self.in_str, self.top_array, self.short = depth, in_str, top_array, short
        return ps, cs, owns


RUN = 0x12C             # ``TextScan``'s token for a run of elements on one line, at its last comma
RUN_BYTES = 32 * 1024   # a run is at most this long (a batch of them stays small: ``BATCH_BYTES``)


def split_run(piece: bytes) -> list:
    """The offsets in ``piece`` (elements and their commas, as one ``RUN`` holds them) of the commas that end
    its elements."""
    scan = TextScan(1, 0)
    ps, cs, owns = scan.tokens(b"[" + piece + b"]", -1)
    return [p for p, c in zip(ps, cs) if c == 0x2C]        # (tokens at level 1 only: the elements' own commas)
