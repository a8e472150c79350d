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

from typing import NamedTuple

KEPT = "kept"
CHANGED = "changed"
REMOVED = "removed"
INSERTED = "inserted"
DUPLICATED = "duplicated"
KINDS = (KEPT, CHANGED, REMOVED, INSERTED, DUPLICATED)


class BlockChange(NamedTuple):
    block: int
    kind: str                 # the edit kind (replace, persist, ...)
    old_len: int | None
    new_len: int | None
    tool_id: str | None = None
    path: str | None = None


class Row(NamedTuple):
    """One line of the diff (a NamedTuple: 10k+ rows are built per step, cheaply)."""
    left: int | None
    right: int | None
    kind: str
    edits: tuple = ()
    blocks: tuple = ()


def align_origin(n_in: int, origin: list, same=None) -> list[Row]:
    """Rows for an output whose ``origin`` maps each output to an input index
    (or None). ``same(i, j)`` says whether output j is input i unchanged."""
    rows: list[Row] = []
    nxt = 0                      # every input index < nxt is already placed; none >= nxt is
    pending: list[int] = []      # inserted outputs waiting for the removed run before them

    def flush_removed(upto: int) -> None:
        nonlocal nxt
        upto = min(upto, n_in)
        if upto > nxt:
            rows.extend([Row(i, None, REMOVED) for i in range(nxt, upto)])
            nxt = upto

    def flush_pending() -> None:
        for j in pending:
            rows.append(Row(None, j, INSERTED))
        pending.clear()

    append = rows.append
    for j, i in enumerate(origin):
        if i is None or i.__class__ is not int or not (0 <= i < n_in):
            pending.append(j)
            continue
        if i < nxt:
            if pending:
                flush_pending()
            append(Row(i, j, DUPLICATED))
            continue
        if i > nxt:
            flush_removed(i)
        if pending:
            flush_pending()
        append(Row(i, j, KEPT if (same is None or same(i, j)) else CHANGED))
        nxt = i + 1
    flush_removed(n_in)
    flush_pending()
    return rows


def _edit_rows(step, rows: list[Row]) -> list[Row]:
    """Attach edit indexes and block changes to the rows they concern (cost ~ rows touched by edits)."""
    if not step.edits:
        return rows
    left_rows: dict[int, int] = {}
    right_rows: dict[int, int] = {}
    for ri, r in enumerate(rows):
        if r.left is not None and r.kind != DUPLICATED and r.left not in left_rows:
            left_rows[r.left] = ri
        if r.right is not None:
            right_rows[r.right] = ri
    touched: dict[int, list] = {}
    for k, e in enumerate(step.edits):
        if e.message is not None and e.message in left_rows:
            touched.setdefault(left_rows[e.message], []).append(k)
        if e.out is not None and e.out in right_rows:
            touched.setdefault(right_rows[e.out], []).append(k)
        if e.start is not None and e.end is not None and e.end > e.start:
            get = left_rows.get
            for i in range(max(e.start, 0), e.end):
                ri = get(i)
                if ri is not None:
                    lst = touched.get(ri)
                    if lst is None:
                        touched[ri] = [k]
                    else:
                        lst.append(k)
    out = list(rows)
    shared: dict = {}
    for ri, ks_set in touched.items():
        r = rows[ri]
        key = tuple(ks_set)
        ks = shared.get(key)
        if ks is None:
            ks = shared[key] = tuple(sorted(set(ks_set)))
        blocks = []
        if r.kind == CHANGED:
            for k in ks:
                e = step.edits[k]
                if e.block is not None and e.message == r.left and e.new_len is not None:
                    blocks.append(BlockChange(e.block, e.kind, e.old_len, e.new_len, e.tool_id, e.path))
        out[ri] = Row(r.left, r.right, r.kind, ks, tuple(blocks))
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
