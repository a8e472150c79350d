"""One table of per-message facts, keyed by identity: one slot per message object, every figure a column.

Messages are never changed in place and are shared between the stages of a trace, so what is derived
from one (its chars, its repr size, a strategy's rough figure, its block sizes, the digest of its JSON,
its chips) can be kept by ``id``. Kept as N separate identity caches, each of the 100k messages of a
big session cost N identity dicts and N key objects; here it costs ONE entry in one dict
(``id -> slot``) plus one reference (``refs[slot]``, which keeps the object alive so its id is not
reused while the slot exists), and each figure 8 bytes in a typed column (``array('q')``) or one
reference in an object column (a list).

``FACTS`` is the table shared by the size meters, the views' caches and the layers' digests. It is
bounded by the longest list shown or measured: when it holds more than ``factor`` times that many
objects (at least ``floor``), it forgets everything (a new generation; readers holding the old one
finish on it). Thread-safe: slots are added under a lock; a value written into a generation that was
dropped meanwhile is simply lost.
"""
from __future__ import annotations

import threading
from array import array
from operator import is_
from sys import getrefcount
from typing import Any, Callable, Generic, Iterable, TypeVar, cast

V = TypeVar("V")
MISSING = -(1 << 63)            # an int column's "not computed" (figures are never this)
_CHUNK = 1024
# getrefcount(refs[s]) of an object only the table's refs list holds: the list and getrefcount's argument
_ONLY_HERE = 2


class _Generation:
    __slots__ = ("index", "refs", "ints", "objs", "bins", "cap")

    def __init__(self):
        self.index: dict[int, int] = {}       # id(obj) -> slot
        self.refs: list = []                  # slot -> obj
        self.ints: dict[str, array] = {}      # column name -> array('q'), len == cap
        self.objs: dict[str, list] = {}       # column name -> list, len == cap
        self.bins: dict[str, bytearray] = {}  # column name -> bytearray, len == cap x its stride
        self.cap = 0


class Facts:
    def __init__(self, factor: int = 4, floor: int = 4096):
        self.factor = factor
        self.floor = floor
        self.peak = 0
        self.gen = _Generation()
        self._lock = threading.Lock()
        self._strides: dict[str, int] = {}    # bytes column name -> bytes per slot (a flag byte + the value)

    # ------------------------------------------------------------------ slots
    def find(self, obj: Any, gen: _Generation | None = None) -> int | None:
        """The slot of ``obj`` in ``gen`` (the current generation), or None."""
        g = gen or self.gen
        s = g.index.get(id(obj))
        return s if s is not None and g.refs[s] is obj else None

    def slot(self, obj: Any) -> tuple[_Generation, int]:
        """(generation, slot) of ``obj``, added when missing."""
        g = self.gen
        k = id(obj)
        s = g.index.get(k)
        if s is not None and g.refs[s] is obj:
            return g, s
        with self._lock:
            return self._add(obj, k)

    def _add(self, obj: Any, k: int) -> tuple[_Generation, int]:
        """``slot``'s work under the lock: the slot of ``obj`` (whose id is ``k``), added when missing."""
        g = self.gen
        s = g.index.get(k)
        if s is not None and g.refs[s] is obj:
            return g, s
        if s is None and len(g.refs) >= max(self.factor * self.peak, self.floor):
            g = self.gen = _Generation()
        if s is None:
            s = len(g.refs)
            g.refs.append(obj)
            if s >= g.cap:
                self._grow(g)
        else:                     # the id's object died and the id was given to a new object
            g.refs[s] = obj
            for col in g.ints.values():
                col[s] = MISSING
            for ocol in g.objs.values():
                ocol[s] = None
            for name, bcol in g.bins.items():
                bcol[s * self._strides[name]] = 0
        g.index[k] = s
        return g, s

    def _grow(self, g: _Generation) -> None:
        """More capacity for every column of ``g``."""
        grow = max(_CHUNK, g.cap // 4)
        for col in g.ints.values():
            col.extend(array("q", [MISSING]) * grow)
        for ocol in g.objs.values():
            ocol.extend([None] * grow)
        for name, bcol in g.bins.items():
            bcol.extend(bytes(grow * self._strides[name]))
        g.cap += grow

    def _put_new(self, name: str, objs: list, values: list) -> bool:
        """``put_ints`` when every object is new to the table, each once, and all fit in its generation: slots,
        index and column written in C (300,000 new messages: 0.18 s in the loop). False, nothing done, else."""
        n = len(objs)
        g = self.gen
        s0 = len(g.refs)
        if n < 32 or s0 + n > max(self.factor * self.peak, self.floor):
            return False
        ids = list(map(id, objs))
        if not g.index.keys().isdisjoint(ids):
            return False
        new = dict(zip(ids, range(s0, s0 + n)))
        if len(new) != n:
            return False                              # an object twice
        try:
            column = array("q", values)
        except (TypeError, OverflowError):
            return False                              # (the loop says what is wrong with a value)
        while s0 + n > g.cap:
            self._grow(g)
        col = g.ints.get(name)
        if col is None:
            col = g.ints[name] = array("q", [MISSING]) * g.cap
        g.refs.extend(objs)
        g.index.update(new)
        col[s0:s0 + n] = column
        return True

    def put_ints(self, name: str, objs: list, values: list) -> None:
        """Set the int column ``name`` of each of ``objs`` to its value in ``values``, adding the slots that are
        missing: what ``slot`` and a column write do per object, for a whole list under one lock (the first
        sizing of 300,000 small messages spent 1.5 us on each in the table, 0.25 us on its figure)."""
        with self._lock:
            if self._put_new(name, objs, values):
                return
            g = self.gen
            index, refs = g.index, g.refs
            col = g.ints.get(name)
            bound = max(self.factor * self.peak, self.floor)
            for obj, v in zip(objs, values):
                k = id(obj)
                s = index.get(k)
                if s is None and col is not None and g is self.gen and len(refs) < min(bound, g.cap):
                    s = len(refs)                     # the usual case: a new slot within the capacity
                    refs.append(obj)
                    index[k] = s
                    col[s] = v
                    continue
                if s is None or refs[s] is not obj or col is None or g is not self.gen:
                    g, s = self._add(obj, k)          # a new generation, more capacity, a reused id: as ``slot``
                    index, refs = g.index, g.refs
                    col = g.ints.get(name)
                    if col is None:
                        col = g.ints[name] = array("q", [MISSING]) * g.cap
                col[s] = v

    def int_value(self, obj: Any, name: str) -> int | None:
        """The value of ``obj`` in the int column ``name``; None when not computed (or no slot)."""
        g = self.gen
        s = self.find(obj, g)
        col = g.ints.get(name) if s is not None else None
        if col is None or s is None:
            return None
        v = col[s]
        return None if v == MISSING else v

    def obj_value(self, obj: Any, name: str) -> Any:
        """The value of ``obj`` in the object column ``name``; None when not computed (or no slot)."""
        g = self.gen
        s = self.find(obj, g)
        col = g.objs.get(name) if s is not None else None
        return None if col is None or s is None else col[s]

    def _column(self, cols: dict, name: str, make: Callable[[], Any]):
        """Column ``name`` of one kind of a generation (``cols``: its ints, objs or bins), made by ``make()``
        (under the lock, so that its length is the generation's capacity) when it does not exist yet."""
        col = cols.get(name)
        if col is None:
            with self._lock:
                col = cols.get(name)
                if col is None:
                    col = cols[name] = make()
        return col

    def int_column(self, g: _Generation, name: str) -> array:
        return self._column(g.ints, name, lambda: array("q", [MISSING]) * g.cap)

    def obj_column(self, g: _Generation, name: str) -> list:
        return self._column(g.objs, name, lambda: [None] * g.cap)

    def bytes_column(self, g: _Generation, name: str, stride: int) -> bytearray:
        self._strides[name] = stride
        return self._column(g.bins, name, lambda: bytearray(g.cap * stride))

    # ------------------------------------------------------------------ bounds
    def expect(self, n: int) -> None:
        """A list of ``n`` objects is measured: the bound follows the longest (nothing is forgotten here)."""
        if n > self.peak:
            self.peak = n

    def shown(self, n: int) -> None:
        """A list of ``n`` objects is shown or measured: the bound follows the longest; forget everything when over it."""
        if n > self.peak:
            self.peak = n
        if len(self.gen.refs) > max(self.factor * self.peak, self.floor):
            self.clear()

    def clear(self) -> None:
        with self._lock:
            self.gen = _Generation()

    def collect(self, min_dead: int = 0) -> int:
        """Forget the objects nothing but this table refers to any more (the messages of a dropped result that a
        re-run replaced, of a file shown before): a new generation with the others and their values. Nothing
        is done unless more than ``min_dead`` would go; returns how many went."""
        old = self.gen
        refs = old.refs
        live = [s for s in range(len(refs)) if getrefcount(refs[s]) > _ONLY_HERE]
        dead = len(refs) - len(live)
        if dead <= min_dead:
            return 0
        new = _Generation()
        new.refs = [refs[s] for s in live]
        new.index = {id(o): k for k, o in enumerate(new.refs)}
        new.cap = len(live)
        for name, col in old.ints.items():
            new.ints[name] = array("q", map(col.__getitem__, live))
        for name, ocol in old.objs.items():
            new.objs[name] = list(map(ocol.__getitem__, live))
        for name, bcol in old.bins.items():
            st, mv = self._strides[name], memoryview(bcol)
            new.bins[name] = bytearray(b"".join([mv[s * st:s * st + st] for s in live]))
        with self._lock:
            if self.gen is not old:          # cleared meanwhile
                return 0
            self.gen = new
        return dead

    def __len__(self) -> int:
        return len(self.gen.refs)

    def column_count(self) -> int:
        g = self.gen
        return len(g.ints) + len(g.objs) + len(g.bins)


FACTS = Facts()


class _Fact(Generic[V]):
    """A value per object (never None), computed once (``compute(obj)``), kept in a column of ``facts``."""

    def __init__(self, name: str, compute: Callable[[Any], V], facts: Facts = FACTS):
        self.name = name
        self.compute = compute
        self.facts = facts

    def peek(self, obj: Any) -> V | None:
        raise NotImplementedError

    def _column(self, g: _Generation):
        raise NotImplementedError

    def get(self, obj: Any) -> V:
        v = self.peek(obj)
        if v is None:
            v = self.compute(obj)
            self.put(obj, v)
        return v

    __call__ = get

    def put(self, obj: Any, v: V) -> None:
        g, s = self.facts.slot(obj)
        self._column(g)[s] = v

    def shown(self, n: int) -> None:
        self.facts.shown(n)


class IntFact(_Fact[int]):
    """A non-negative int per object, in an int column (``array('q')``) of ``facts``."""

    def peek(self, obj: Any) -> int | None:
        return self.facts.int_value(obj, self.name)

    def _column(self, g: _Generation):
        return self.facts.int_column(g, self.name)


class ObjFact(_Fact[V]):
    """A value per object (never None), in an object column (a list) of ``facts``. The same methods as
    ``core.identity.IdentityCache`` (``get``, ``peek``, ``forget``, ``shown``, ``clear``)."""

    def peek(self, obj: Any) -> V | None:
        return self.facts.obj_value(obj, self.name)

    def _column(self, g: _Generation):
        return self.facts.obj_column(g, self.name)

    def values(self, objs: list) -> list:
        """``[self.get(o) for o in objs]``, with the table lookups made a pass each in C when every one of
        ``objs`` has its value already (a summary asked again over the same 100k turns after a parameter
        change: a ``get`` per message cost ~2 us); when only some are missing (a summary at every call of a replay:
        the history's new messages), those are made first and the passes made again; otherwise (or on a generation
        swapped meanwhile) one by one."""
        for _ in range(2):
            out, missing = self._known(objs)
            if out is not None:
                return out
            if not missing:
                break
            for o in missing:
                self.get(o)
        return list(map(self.get, objs))

    def _known(self, objs: list) -> tuple[list | None, list | None]:
        """(the values of ``objs``, None) when the table has each; else (None, the objects it has no value of), or
        (None, None) when the passes cannot tell (an id given to a new object)."""
        g = self.facts.gen
        col = g.objs.get(self.name)
        if col is None or not objs:
            return (None, list(objs)) if objs else ([], None)
        found = list(map(g.index.get, map(id, objs)))
        if None in found:
            return None, [o for o, s in zip(objs, found) if s is None]
        slots = cast("list[int]", found)
        refs = g.refs
        top = max(slots)
        if len(refs) > top and len(col) > top and all(map(is_, map(refs.__getitem__, slots), objs)):
            out = list(map(col.__getitem__, slots))
            if None not in out:
                return out, None
            return None, [o for o, v in zip(objs, out) if v is None]
        return None, None

    def forget(self, obj: Any) -> None:
        g = self.facts.gen
        s = self.facts.find(obj, g)
        col = g.objs.get(self.name)
        if s is not None and col is not None:
            col[s] = None

    def clear(self) -> None:
        """Forget this column's values (the other columns keep theirs)."""
        g = self.facts.gen
        col = g.objs.get(self.name)
        if col is not None:
            g.objs[self.name] = [None] * g.cap

    def __len__(self) -> int:
        col = self.facts.gen.objs.get(self.name)
        return 0 if col is None else sum(v is not None for v in col)


class BytesFact(_Fact[bytes]):
    """A value of ``width`` bytes per object (a digest), computed once (``compute(obj)``), kept in a bytes column
    of ``facts``: width + 1 bytes per slot, not a bytes object (33 + width bytes) and its reference."""

    def __init__(self, name: str, width: int, compute: Callable[[Any], bytes], facts: Facts = FACTS):
        super().__init__(name, compute, facts)
        self.width = width
        self.stride = width + 1

    def peek(self, obj: Any) -> bytes | None:
        g = self.facts.gen
        s = self.facts.find(obj, g)
        if s is None:
            return None
        col = g.bins.get(self.name)
        off = s * self.stride
        if col is None or not col[off]:
            return None
        return bytes(col[off + 1:off + self.stride])

    def put(self, obj: Any, v: bytes) -> None:
        if len(v) != self.width:
            raise ValueError(f"{self.name}: {len(v)} bytes, not {self.width}")
        g, s = self.facts.slot(obj)
        col = self.facts.bytes_column(g, self.name, self.stride)
        off = s * self.stride
        col[off + 1:off + self.stride] = v
        col[off] = 1

    def joined(self, objs: Iterable, compute: bool = True) -> bytes | None:
        """The values of ``objs`` one after the other, those missing computed (or, not ``compute``: None when one
        is missing), with the table lookup inlined: this loop runs over whole contexts (a digest per message of
        a 100k-message summary prompt), where a ``get`` per message cost 1.5-2 us."""
        g = self.facts.gen
        idx, refs, st = g.index.get, g.refs, self.stride
        col = g.bins.get(self.name)
        out = bytearray()
        for o in objs:
            s = idx(id(o))
            if col is not None and s is not None and refs[s] is o:
                off = s * st
                if col[off]:
                    out += col[off + 1:off + st]
                    continue
            if not compute:
                return None
            out += self.get(o)
            if col is None:
                col = g.bins.get(self.name)
        return bytes(out)

    def __len__(self) -> int:
        col = self.facts.gen.bins.get(self.name)
        return 0 if col is None else sum(1 for k in range(0, len(col), self.stride) if col[k])
