"""Before/after alignment of one Step, for a two-column diff view.

Pure Python (no Qt). ``align(step)`` walks the output list in order, using
``Step.origin`` (for each output message, the input index it came from or
``None``) and returns one ``Row`` per line of the diff:

* ``kept``       the same message object on both sides
* ``changed``    the output came from that input but is a new dict (a block replaced or persisted)
* ``removed``    an input message with no output (only on the left)
* ``inserted``   an output message with no input (placeholder, summary; only on the right)
* ``duplicated`` an input message that appears a second time in the output (the README snip bug)

Removed runs are placed before the inserted messages that stand in for them, so
a snip reads "removed 4..39" then "placeholder" then the kept tail. Each row also
lists the indexes of the step's edits that concern it, and for changed rows the
(block, old_len, new_len, kind, tool_id) of each changed block.
"""
from __future__ import annotations

from dataclasses import dataclass, field

KEPT = "kept"
CHANGED = "changed"
REMOVED = "removed"
INSERTED = "inserted"
DUPLICATED = "duplicated"
KINDS = (KEPT, CHANGED, REMOVED, INSERTED, DUPLICATED)


@dataclass(frozen=True)
class BlockChange:
    block: int
    kind: str                 # the edit kind (replace, persist, ...)
    old_len: int | None
    new_len: int | None
    tool_id: str | None = None
    path: str | None = None


@dataclass(frozen=True)
class Row:
    left: int | None
    right: int | None
    kind: str
    edits: tuple[int, ...] = ()
    blocks: tuple[BlockChange, ...] = field(default=())


def align_origin(n_in: int, origin: list, same=None) -> list[Row]:
    """Rows for an output whose ``origin`` maps each output to an input index
    (or None). ``same(i, j)`` says whether output j is input i unchanged."""
    rows: list[Row] = []
    seen: set[int] = set()
    nxt = 0                      # first input index not yet placed in order
    pending: list[int] = []      # inserted outputs waiting for the removed run before them

    def flush_removed(upto: int) -> None:
        nonlocal nxt
        for i in range(nxt, min(upto, n_in)):
            if i not in seen:
                rows.append(Row(i, None, REMOVED))
                seen.add(i)
        nxt = max(nxt, min(upto, n_in))

    def flush_pending() -> None:
        for j in pending:
            rows.append(Row(None, j, INSERTED))
        pending.clear()

    for j, i in enumerate(origin):
        if i is None or not isinstance(i, int) or not (0 <= i < n_in):
            pending.append(j)
            continue
        if i in seen:
            flush_pending()
            rows.append(Row(i, j, DUPLICATED))
            continue
        flush_removed(i)
        flush_pending()
        kind = KEPT if (same is None or same(i, j)) else CHANGED
        rows.append(Row(i, j, kind))
        seen.add(i)
        nxt = max(nxt, i + 1)
    flush_removed(n_in)
    flush_pending()
    return rows


def _edit_rows(step, rows: list[Row]) -> list[Row]:
    """Attach edit indexes and block changes to rows."""
    by_left: dict[int, list[int]] = {}
    by_right: dict[int, list[int]] = {}
    ranges: list[tuple[int, int, int]] = []
    for k, e in enumerate(step.edits):
        if e.message is not None:
            by_left.setdefault(e.message, []).append(k)
        if e.out is not None:
            by_right.setdefault(e.out, []).append(k)
        if e.start is not None and e.end is not None and e.end > e.start:
            ranges.append((e.start, e.end, k))
    out = []
    for r in rows:
        ks: list[int] = []
        if r.left is not None:
            ks += by_left.get(r.left, [])
            ks += [k for s, e, k in ranges if s <= r.left < e]
        if r.right is not None:
            ks += by_right.get(r.right, [])
        ks = sorted(set(ks))
        blocks = []
        if r.kind == CHANGED:
            for k in ks:
                e = step.edits[k]
                if e.block is not None and e.message == r.left and (e.old_len is not None or e.new_len is not None) \
                        and e.new_len is not None:
                    blocks.append(BlockChange(e.block, e.kind, e.old_len, e.new_len, e.tool_id, e.path))
        if ks or blocks:
            r = Row(r.left, r.right, r.kind, tuple(ks), tuple(blocks))
        out.append(r)
    return out


def align(step) -> list[Row]:
    """The aligned rows of a Step (see the module docstring)."""
    inp, outp = step.input, step.messages
    rows = align_origin(len(inp), list(step.origin), lambda i, j: outp[j] is inp[i])
    return _edit_rows(step, rows)


def summarize_rows(rows: list[Row]) -> dict:
    """Counts per kind, for a one-line account."""
    counts = {k: 0 for k in KINDS}
    for r in rows:
        counts[r.kind] += 1
    return counts
