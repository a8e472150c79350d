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

from array import array
from collections.abc import Mapping, Sequence
from itertools import repeat
from operator import is_not
from typing import Any, NamedTuple

from .trace import SameOrigin

KEPT = "kept"
CHANGED = "changed"
REMOVED = "removed"
INSERTED = "inserted"
DUPLICATED = "duplicated"
KINDS = (KEPT, CHANGED, REMOVED, INSERTED, DUPLICATED)
_KIND_CODE = {k: c for c, k in enumerate(KINDS)}
_CHANGED_CODE = _KIND_CODE[CHANGED]


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


_new = tuple.__new__          # Row(...) without the Python-level NamedTuple.__new__ (10k rows per step)


def align_origin(n_in: int, origin: list, same=None) -> list[Row]:
    """Rows for an output whose ``origin`` maps each output to an input index
    (or None). ``same(i, j)`` says whether output j is input i unchanged."""
    rows, _, _ = _align(n_in, origin, same, None, None)
    return rows


def _align(n_in: int, origin, same, inp, outp, maps: bool = True, packed: bool = False) -> tuple:
    """(rows, left_rows, right_rows): the rows, and where each input / output index sits among them
    (the first non-duplicated row of an input). With ``inp`` and ``outp`` given, "unchanged" is
    ``outp[j] is inp[i]`` (tested inline: no call per row)."""
    if inp is not None and outp is not None:
        kinds = set(map(type, origin))
        if kinds <= {int, type(None)}:
            return _align_runs(n_in, origin, inp, outp, maps, packed)
    rows: list[Row] = []
    left_rows: dict[int, int] = {}
    right_rows: dict[int, int] = {}
    append = rows.append
    nxt = 0                      # every input index < nxt is already placed; none >= nxt is
    pending: list[int] = []      # inserted outputs waiting for the removed run before them
    ident = inp is not None and outp is not None
    for j, i in enumerate(origin):
        if i is None or i.__class__ is not int or not (0 <= i < n_in):
            pending.append(j)
            continue
        if i < nxt:
            if pending:
                for p in pending:
                    right_rows[p] = len(rows)
                    append(_new(Row, (None, p, INSERTED, (), ())))
                pending.clear()
            right_rows[j] = len(rows)
            append(_new(Row, (i, j, DUPLICATED, (), ())))
            continue
        if i > nxt:
            for k in range(nxt, min(i, n_in)):
                left_rows[k] = len(rows)
                append(_new(Row, (k, None, REMOVED, (), ())))
        if pending:
            for p in pending:
                right_rows[p] = len(rows)
                append(_new(Row, (None, p, INSERTED, (), ())))
            pending.clear()
        ri = len(rows)
        left_rows[i] = ri
        right_rows[j] = ri
        if ident:
            kept = outp[j] is inp[i]
        else:
            kept = same is None or same(i, j)
        append(_new(Row, (i, j, KEPT if kept else CHANGED, (), ())))
        nxt = i + 1
    for k in range(nxt, n_in):
        left_rows[k] = len(rows)
        append(_new(Row, (k, None, REMOVED, (), ())))
    for p in pending:
        right_rows[p] = len(rows)
        append(_new(Row, (None, p, INSERTED, (), ())))
    return rows, left_rows, right_rows


def _align_runs(n_in: int, origin, inp, outp, maps: bool = True, packed: bool = False) -> tuple:
    """``_align`` for an origin of ints and Nones, a run at a time: a layer keeps its input in a few
    runs of consecutive indexes (all of it, a head and a tail, ...), and each run's rows are built
    by C-level iteration (map/zip) instead of a Python loop per message. Same rows as the loop.
    ``maps=False`` skips the two index maps (only the edits need them). ``packed``: the rows are made
    as ``PackedRows`` (columns; no Row object per row) and the index maps as arrays."""
    from itertools import groupby
    rows: Any = PackedRows() if packed else []                   # (a PackedRows reads and grows like the list)
    left_rows: Any = _ArrayMap(n_in) if packed else {}           # (and an _ArrayMap like the dict)
    right_rows: Any = _ArrayMap(len(origin)) if packed else {}
    pending: list[int] = []
    nxt = 0
    if not maps:
        left_rows = right_rows = _Sink()

    def emit(n: int, lefts, rights, kinds) -> None:
        """n rows: ``lefts``/``rights`` a range or list of indexes, or None; ``kinds`` a list, or one kind."""
        if packed:
            rows.extend_columns(n, lefts, rights, kinds)
            return
        rows.extend(map(_new, repeat(Row), zip(repeat(None) if lefts is None else lefts,
                                               repeat(None) if rights is None else rights,
                                               repeat(kinds) if isinstance(kinds, str) else kinds,
                                               repeat(()), repeat(()))))

    def flush_pending() -> None:
        if pending:
            ri = len(rows)
            right_rows.update(zip(pending, range(ri, ri + len(pending))))
            emit(len(pending), None, pending, INSERTED)
            pending.clear()

    def removed(a: int, b: int) -> None:
        if b > a:
            ri = len(rows)
            _put_run(left_rows, range(a, b), ri)
            emit(b - a, range(a, b), None, REMOVED)

    # outputs whose origin minus their position is the same form a run of consecutive inputs (one run when each
    # output stands at its input's place: a layer that replaced messages in place, or changed none)
    if n_in and _in_place(origin, n_in):
        runs: Any = ((0, n_in),)
    else:
        keys = [None if o is None else o - k for k, o in enumerate(origin)]
        runs = ((d, sum(1 for _ in grp)) for d, grp in groupby(keys))
    j = 0
    for d, L in runs:
        j0, j1 = j, j + L                      # outputs j0..j1-1
        j = j1
        if d is None:
            pending.extend(range(j0, j1))
            continue
        v0 = j0 + d                            # their inputs v0..v0+L-1
        # values below 0: invalid, inserted
        cut = min(max(-v0, 0), L)
        if cut:
            pending.extend(range(j0, j0 + cut))
        a = cut
        # values in 0..nxt-1: already placed, duplicated
        b = min(max(nxt - v0, a), L)
        if b > a:
            flush_pending()
            ri = len(rows)
            _put_run(right_rows, range(j0 + a, j0 + b), ri)
            emit(b - a, range(v0 + a, v0 + b), range(j0 + a, j0 + b), DUPLICATED)
        # values in nxt..n_in-1: kept or changed
        c = min(max(n_in - v0, b), L)
        if c > b:
            removed(nxt, v0 + b)
            flush_pending()
            ri = len(rows)
            ins, outs = range(v0 + b, v0 + c), range(j0 + b, j0 + c)
            # each row's kind code: KEPT (0) when the output is its input, else CHANGED (1)
            codes = bytearray(map(is_not, outp[j0 + b:j0 + c], inp[v0 + b:v0 + c]))
            _put_run(left_rows, ins, ri)
            _put_run(right_rows, outs, ri)
            emit(c - b, ins, outs, codes if packed else [KINDS[k] for k in codes])
            nxt = v0 + c
        # values >= n_in: invalid, inserted
        if L > c:
            pending.extend(range(j0 + c, j1))
    removed(nxt, n_in)
    flush_pending()
    return rows, left_rows, right_rows


def _in_place(origin, n: int) -> bool:
    """Whether ``origin`` is ``[0, 1, ..., n-1]`` (each output at its input's place)."""
    if len(origin) != n:
        return False
    if isinstance(origin, SameOrigin):
        return True
    if isinstance(origin, range):
        return origin == range(n)
    return isinstance(origin, list) and origin[0] == 0 and origin[-1] == n - 1 and origin == list(range(n))


def _put_run(rows_of: Any, keys: range, first_row: int) -> None:
    """An index map's entries for the consecutive indexes ``keys``: rows ``first_row``, ``first_row + 1``, ..."""
    if rows_of.__class__ is _ArrayMap:
        rows_of.a[keys.start:keys.stop] = array("q", range(first_row, first_row + len(keys)))
    else:
        rows_of.update(zip(keys, range(first_row, first_row + len(keys))))


class _Sink(dict):
    """A dict that keeps nothing (the index maps when no edit needs them)."""

    def update(self, *a, **k) -> None:
        pass


class _ArrayMap:
    """An index map (index -> row) over 0..n-1 as one array('q'), for packed rows: the dict's methods the
    edits use, 8 bytes an index instead of a dict entry and two ints."""
    __slots__ = ("a",)

    def __init__(self, n: int):
        self.a = array("q", [-1]) * n

    def update(self, pairs) -> None:
        a = self.a
        for k, v in pairs:
            a[k] = v

    def get(self, k, default=None):
        if k.__class__ is int and 0 <= k < len(self.a):
            v = self.a[k]
            if v >= 0:
                return v
        return default

    def __contains__(self, k) -> bool:
        return self.get(k) is not None

    def __getitem__(self, k):
        v = self.get(k)
        if v is None:
            raise KeyError(k)
        return v


def _touched_rows(edits: list, left_rows: Any, right_rows: Any) -> tuple[dict, list]:
    """(row -> the indexes of the edits that concern it, in edit order; the range edits over consecutive rows as
    (first row, end row, edit index))."""
    touched: dict[int, list] = {}
    spans: list = []      # (first row, end row, k): a range edit over consecutive rows (a summary of 100k)
    lget, rget = left_rows.get, right_rows.get
    for k, e in enumerate(edits):
        if e.message is not None:
            ri = lget(e.message)
            if ri is not None:
                touched.setdefault(ri, []).append(k)
        if e.out is not None:
            ri = rget(e.out)
            if ri is not None:
                touched.setdefault(ri, []).append(k)
        if e.start is not None and e.end is not None and e.end > e.start:
            get = lget
            a, b = max(e.start, 0), e.end
            # every input has one row and they follow the input order, so the range's rows are consecutive
            # when its ends are that far apart
            r0, r1 = get(a), get(b - 1)
            if r0 is not None and r1 is not None and r1 - r0 == b - 1 - a and (e.block is None or e.new_len is None):
                spans.append((r0, r1 + 1, k))
                continue
            for i in range(a, b):
                ri = get(i)
                if ri is not None:
                    touched.setdefault(ri, []).append(k)
    return touched, spans


def _edit_rows(step, rows: Sequence[Row], left_rows: Any, right_rows: Any) -> Sequence[Row]:
    """Attach edit indexes and block changes to the rows they concern (cost ~ rows touched by edits)."""
    if not step.edits:
        return rows
    touched, spans = _touched_rows(step.edits, left_rows, right_rows)
    # a span's rows are made in one go; the rows other edits touch too get the span's edit in their list
    # (and are made again below), and spans that overlap go row by row
    packed = isinstance(rows, PackedRows)
    out: Any = rows if packed else list(rows)     # packed rows take their edits in place
    spans.sort()
    for n, (a, b, k) in enumerate(spans):
        if (n and spans[n - 1][1] > a) or (n + 1 < len(spans) and spans[n + 1][0] < b):
            for ri in range(a, b):
                touched.setdefault(ri, []).append(k)
            continue
        ks: tuple | None = (k,)
        if packed:
            out.set_edits(a, b, ks)
        else:
            out[a:b] = [_new(Row, (r[0], r[1], r[2], ks, ())) for r in rows[a:b]]
        if len(touched) < b - a:
            for ri in [ri for ri in touched if a <= ri < b]:
                touched[ri].append(k)
        else:
            for ri in range(a, b):
                lst = touched.get(ri)
                if lst is not None:
                    lst.append(k)
    # each row's list is in edit order (k grows in the loop above) but for the spans added after, a k at
    # most twice in a row (as the message and as the output): otherwise its sorted set is taken
    shared: dict = {}
    single: dict = {}
    edits = step.edits
    if packed and touched and out._edits is None:
        out._edits = [()] * len(out._kind)
    for ri, lst in touched.items():
        n = len(lst)
        if n == 1 or (n == 2 and lst[0] == lst[1]):
            k0 = lst[0]
            ks = single.get(k0)
            if ks is None:
                ks = single[k0] = (k0,)
        else:
            key = tuple(lst)
            ks = shared.get(key)
            if ks is None:
                ks = shared[key] = tuple(sorted(set(lst)))
        if packed:                  # (the row's edits and block changes set in its columns: no Row made)
            out._edits[ri] = ks
            if out._kind[ri] != _CHANGED_CODE:
                out._blocks.pop(ri, None)
                continue
            left = out._left[ri]
            blocks = _block_changes(edits, ks, None if left < 0 else left)
            if blocks:
                out._blocks[ri] = blocks
            else:
                out._blocks.pop(ri, None)
            continue
        r = rows[ri]
        if r[2] != CHANGED:
            out[ri] = _new(Row, (r[0], r[1], r[2], ks, ()))
            continue
        out[ri] = _new(Row, (r[0], r[1], r[2], ks, _block_changes(edits, ks, r[0])))
    return out


def _block_changes(edits: list, ks: tuple, left: int | None) -> tuple:
    """The block changes of a changed row (its input index ``left``) among the edits ``ks`` that concern it."""
    blocks = []
    for k in ks:
        e = edits[k]
        if e.block is not None and e.message == left and e.new_len is not None:
            blocks.append(_new(BlockChange, (e.block, e.kind, e.old_len, e.new_len, e.tool_id, e.path)))
    return tuple(blocks)


class KeptRows(Sequence):
    """The rows of a step that changed nothing: row i is (i, i, kept), made when read (an unchanged
    step over 100k messages needs no 100k rows in memory)."""
    __slots__ = ("n",)

    def __init__(self, n: int):
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [_new(Row, (k, k, KEPT, (), ())) for k in range(*i.indices(self.n))]
        if i < 0:
            i += self.n
        if not 0 <= i < self.n:
            raise IndexError(i)
        return _new(Row, (i, i, KEPT, (), ()))

    def __iter__(self):
        for k in range(self.n):
            yield _new(Row, (k, k, KEPT, (), ()))

    def __eq__(self, other) -> bool:
        return list(self) == list(other) if isinstance(other, (list, KeptRows)) else NotImplemented


class PackedRows(Sequence):
    """The rows of a step held as columns (each row's input and output index in ``array('q')``, -1 for none;
    its kind as one byte; its edits and block changes as references), made into ``Row``s when read: a step
    that removed or changed 100k messages holds ~25 bytes per row instead of a Row tuple and two int objects
    (~120). Built by ``_align_runs`` without any Row object, or from a list of rows."""
    __slots__ = ("_left", "_right", "_kind", "_edits", "_blocks")

    def __init__(self, rows=()):
        code = _KIND_CODE
        self._left = array("q", [-1 if r[0] is None else r[0] for r in rows])
        self._right = array("q", [-1 if r[1] is None else r[1] for r in rows])
        self._kind = bytearray([code[r[2]] for r in rows])
        edits = [r[3] for r in rows]
        self._edits = edits if any(edits) else None      # None: every row's edits are ()
        self._blocks = {i: r[4] for i, r in enumerate(rows) if r[4]}

    # ---------------------------------------------------------------- building
    def extend_columns(self, n: int, lefts, rights, kinds) -> None:
        """n more rows: ``lefts``/``rights`` a range or list of indexes, or None; ``kinds`` a list, or one kind."""
        self._left.extend(repeat(-1, n) if lefts is None else lefts)
        self._right.extend(repeat(-1, n) if rights is None else rights)
        if isinstance(kinds, bytearray):          # (kind codes)
            self._kind.extend(kinds)
        else:
            self._kind.extend(repeat(_KIND_CODE[kinds], n) if isinstance(kinds, str)
                              else map(_KIND_CODE.__getitem__, kinds))
        if self._edits is not None:
            self._edits.extend(repeat((), n))

    def set_edits(self, a: int, b: int, ks: tuple) -> None:
        """Rows a..b-1 concern the edits ``ks`` (one tuple shared by them)."""
        if self._edits is None:
            self._edits = [()] * len(self._kind)
        self._edits[a:b] = repeat(ks, b - a)

    def __setitem__(self, i: int, r) -> None:
        """Row i becomes ``r`` (the edits pass: its edits and block changes)."""
        self._left[i] = -1 if r[0] is None else r[0]
        self._right[i] = -1 if r[1] is None else r[1]
        self._kind[i] = _KIND_CODE[r[2]]
        if r[3] or self._edits is not None:
            if self._edits is None:
                self._edits = [()] * len(self._kind)
            self._edits[i] = r[3]
        if r[4]:
            self._blocks[i] = r[4]
        else:
            self._blocks.pop(i, None)

    # ---------------------------------------------------------------- reading
    def __len__(self) -> int:
        return len(self._kind)

    def _row(self, i: int) -> Row:
        lf, rt = self._left[i], self._right[i]
        return _new(Row, (None if lf < 0 else lf, None if rt < 0 else rt, KINDS[self._kind[i]],
                          self._edits[i] if self._edits is not None else (), self._blocks.get(i, ())))

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self._row(k) for k in range(*i.indices(len(self)))]
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(i)
        return self._row(i)

    def __iter__(self):
        blocks = self._blocks
        edits = self._edits if self._edits is not None else repeat(())
        for i, (lf, rt, k, e) in enumerate(zip(self._left, self._right, self._kind, edits)):
            yield _new(Row, (None if lf < 0 else lf, None if rt < 0 else rt, KINDS[k], e,
                             blocks.get(i, ()) if blocks else ()))

    def __eq__(self, other) -> bool:
        return list(self) == list(other) if isinstance(other, (list, PackedRows, KeptRows)) else NotImplemented

    def kind_counts(self) -> dict:
        """Rows per kind (in C: one count per kind over the kind bytes)."""
        return {KINDS[c]: n for c in range(len(KINDS)) if (n := self._kind.count(c))}

    def side_kinds(self, side: int, kinds: tuple, n: int) -> bytearray:
        """One byte per message of a side (0 = input, 1 = output): 1 + the KINDS index of its row's kind when
        that kind is in ``kinds``, else 0 (what ``RowKinds`` keeps)."""
        want = {_KIND_CODE[k] for k in kinds}
        codes = bytearray(n)
        for i, k in zip(self._left if side == 0 else self._right, self._kind):
            if k in want and 0 <= i < n:
                codes[i] = k + 1
        return codes

    def without(self, kind: str) -> "PackedRows":
        """The rows whose kind is not ``kind``, packed likewise."""
        c = _KIND_CODE[kind]
        keep = [i for i, k in enumerate(self._kind) if k != c]
        out = PackedRows()
        out._left = array("q", [self._left[i] for i in keep])
        out._right = array("q", [self._right[i] for i in keep])
        out._kind = bytearray([self._kind[i] for i in keep])
        out._edits = None if self._edits is None else [self._edits[i] for i in keep]
        out._blocks = {j: self._blocks[i] for j, i in enumerate(keep) if i in self._blocks}
        return out


PACK_ROWS = 2000        # a step with at least this many rows keeps them packed


def pack_rows(rows: Sequence[Row]) -> Sequence[Row]:
    """``rows`` as ``PackedRows`` when there are many (a list otherwise: small steps are cheap as they are)."""
    return PackedRows(rows) if isinstance(rows, list) and len(rows) >= PACK_ROWS else rows


class RowKinds(Mapping):
    """message index -> row kind, for the messages of one side of a step's rows whose kind is one of
    ``kinds`` (the list's statuses): one byte per message of that side, not a dict entry per index
    (a layer that removed or changed 100k messages)."""
    __slots__ = ("_codes", "_len")

    def __init__(self, rows, side: int, kinds: tuple, n: int):
        if isinstance(rows, PackedRows):
            codes = rows.side_kinds(side, kinds, n)
        else:
            code = {k: KINDS.index(k) + 1 for k in kinds}
            codes = bytearray(n)
            get = code.get
            for r in rows:
                i = r[side]
                if i is not None:
                    c = get(r[2])
                    if c is not None and 0 <= i < n:
                        codes[i] = c
        self._codes = codes
        self._len = n - codes.count(0)

    def __getitem__(self, i):
        if i.__class__ is int and 0 <= i < len(self._codes):
            c = self._codes[i]
            if c:
                return KINDS[c - 1]
        raise KeyError(i)

    def get(self, i, default=None):
        try:
            return self[i]
        except KeyError:
            return default

    def __contains__(self, i) -> bool:
        return i.__class__ is int and 0 <= i < len(self._codes) and self._codes[i] != 0

    def __iter__(self):
        codes = self._codes
        k = 0
        for _ in range(self._len):                 # the indexes with a kind, in order
            while not codes[k]:
                k += 1
            yield k
            k += 1

    def __len__(self) -> int:
        return self._len


def align(step) -> Sequence[Row]:
    """The aligned rows of a Step (see the module docstring)."""
    inp, outp = step.input, step.messages
    if outp is inp and not step.edits:
        return KeptRows(len(inp))
    rows, left_rows, right_rows = _align(len(inp), step.origin, None, inp, outp, maps=bool(step.edits),
                                         packed=max(len(inp), len(outp)) >= PACK_ROWS)
    return pack_rows(_edit_rows(step, rows, left_rows, right_rows))


def summarize_rows(rows: Sequence[Row]) -> dict:
    """Counts per kind, for a one-line account."""
    counts = {k: 0 for k in KINDS}
    if isinstance(rows, PackedRows):
        counts.update(rows.kind_counts())
        return counts
    for r in rows:
        counts[r.kind] += 1
    return counts
