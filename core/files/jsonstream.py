"""One JSON document read in chunks, its big arrays element by element: never the whole file in memory.

A file that holds one JSON value (a request body ``{"model": ..., "messages": [...]}``, a bare list of
messages, a session snapshot) is read a megabyte at a time. Each chunk of a document of ``NUMPY_BYTES`` (1 GB)
or more is scanned with numpy: the quotes that open or close a string (a quote after an odd run of backslashes
is escaped, also across chunks), the punctuation outside strings, and the nesting level of each bracket, all
in C; only the punctuation of the outermost one or two containers is walked in Python (a few tokens per
message). A smaller document is scanned without numpy (its import would be most of the peak's excess): a
regex consumes whole strings and whole bracketed groups below the levels it walks, so a message costs a match or
two (``TextScan``, the same tokens). Each piece between two such separators (a key, a value of the top-level
object, an element of a streamed array) is parsed on its own with ``parse`` (the loaders' lenient reader)
from its bytes, which are then dropped; short string values (a role, a block type) are kept once for the document (``share_strings``).
So the peak is the parsed value plus a chunk, never the file's bytes beside its parsed tree.

``read_document`` returns the value the whole parse would return, and the line of each element of the
streamed arrays. Anything the scanner does not take as well-formed (broken or truncated JSON, a scalar
document, text after the value, a key that is not a string) raises ``Broken``: the caller then parses
the file whole, as before, for its exact error message. ``shallow_value`` reads the top-level object of
a file's first line without its big values (a probe, which must not read a whole document); ``probe_document``
gives that and, in the same pass, ``read_document``'s answer for a one-line document (a load's probe).

The scans themselves are ``jsonscan``'s. Neutral ground like ``jsonio``: it imports nothing else of Compactscope
but ``jsonio``, ``jsonscan`` and ``safeio``."""
from __future__ import annotations

import re
from typing import Any, Callable, Iterator

from .jsonio import JSONDecodeError, loads
from .jsonscan import GROUP_BYTES, GROUP_LEVELS, RUN, Scan, TextScan, split_run

CHUNK = 1024 * 1024
SHALLOW_MAX = 1024 * 1024      # a top-level value bigger than this is not parsed by ``shallow_value``
_WS = b" \t\r\n"
_NONSPACE = re.compile(rb"[^ \t\r\n]")
_OPEN, _CLOSE = (0x5B, 0x7B), (0x5D, 0x7D)


class Pieces:
    """Each piece read as ``jsonio.loads_lenient`` reads a whole document: orjson first; what only a lenient
    parser takes is made valid, as deep in the document as the piece sits (so a cut of deep nesting falls
    where the whole parse makes it), and ``notes`` are in the order the whole parse gives them (invalid
    UTF-8, then the parser's, then what was made valid), each once."""

    def __init__(self):
        self.decoded: list = []
        self.parsed: list = []
        self.made_safe: list = []

    @property
    def notes(self) -> list:
        return list(dict.fromkeys(self.decoded + self.parsed + self.made_safe))

    def __call__(self, raw: bytes, depth: int = 0) -> Any:
        try:
            return loads(raw)
        except JSONDecodeError as first:
            err = first
        return self._lenient(raw, depth, err)

    def _lenient(self, raw: bytes, depth: int, err: Exception) -> Any:
        import json

        from .jsonio import lenient_number_hooks, loads_deep
        from .safeio import MAX_DEPTH, json_safe
        parsed: list = []
        try:
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                text = raw.decode("utf-8", errors="replace")
                self.decoded.append("invalid UTF-8 replaced by U+FFFD")
            try:
                value = json.loads(text, **lenient_number_hooks(parsed))
            except RecursionError:
                cut: list = []
                value = loads_deep(text, max_depth=max(MAX_DEPTH - depth, 1), notes=cut)
                if cut:
                    parsed.append(f"nested deeper than {MAX_DEPTH} levels: the deeper part is cut")
        except (ValueError, RecursionError, MemoryError):
            raise err from None
        self.parsed += parsed
        return json_safe(value, self.made_safe, depth)


SHARE_LEN = 20          # a string value this short is kept once for the whole document ("assistant", "text")
SHARE_MAX = 50_000      # strings kept at most (then only looked up)


def share_strings(value: Any, cache: dict, depth: int = 4) -> None:
    """Replace, in place, each short string value of ``value`` (to ``depth`` levels) by the one equal string
    ``cache`` keeps: a role, a block type or a tool name is then one object for the whole document, not one per
    message (orjson shares keys, not values). Equal values, so nothing else can tell."""
    if type(value) is dict:
        pairs: Any = value.items()
    elif type(value) is list:
        pairs = enumerate(value)
    else:
        return
    get = cache.get
    for k, x in pairs:
        t = type(x)
        if t is str:
            if len(x) <= SHARE_LEN:
                y = get(x)
                if y is None:
                    if len(cache) < SHARE_MAX:
                        cache[x] = x
                elif y is not x:
                    value[k] = y
        elif depth and (t is dict or t is list):
            share_strings(x, cache, depth - 1)


class Broken(ValueError):
    """The file is not one well-formed JSON object or array as the scanner reads it (its offset)."""

    def __init__(self, message: str, offset: int):
        super().__init__(f"{message} at byte {offset}")
        self.offset = offset


class _Window:
    """The bytes of the file from the start of the piece being read to the end of the last chunk, and the
    line number of any later position (a cursor that only moves forward)."""

    def __init__(self):
        self.buf = bytearray()
        self.base = 0            # the file offset of buf[0]
        self.cur = 0             # the line cursor: offset and its 1-based line
        self.cur_line = 1

    def add(self, chunk: bytes) -> None:
        self.buf += chunk

    @property
    def end(self) -> int:
        return self.base + len(self.buf)

    def piece(self, a: int, b: int) -> bytes:
        return bytes(self.buf[a - self.base:b - self.base])

    def first_nonspace(self, a: int, b: int) -> int:
        m = _NONSPACE.search(self.buf, a - self.base, b - self.base)
        return b if m is None else m.start() + self.base

    def blank(self, a: int, b: int) -> bool:
        return self.first_nonspace(a, b) >= b

    def line_at(self, p: int) -> int:
        if p > self.cur:
            self.cur_line += self.buf.count(b"\n", self.cur - self.base, p - self.base)
            self.cur = p
        return self.cur_line

    def drop_before(self, p: int) -> None:
        """Forget the bytes before ``p`` (the line cursor moved there first)."""
        p = min(p, self.end)
        if p <= self.base:
            return
        self.line_at(p)
        del self.buf[:p - self.base]
        self.base = p


# the bytes of held-back elements parsed in one ``loads``: orjson sets aside about 14 times its input while it
# parses (a 1 MB batch peaked 14 MB above its values: 0.7x of a 20 MB document), so a batch stays small
BATCH_BYTES = 64 * 1024


class _Reader:
    """The walk over the tokens of the top-level container (and of the arrays streamed inside it)."""

    def __init__(self, stream: frozenset, parse: Callable[[bytes, int], Any], shallow: bool = False):
        self.stream, self.parse, self.shallow = stream, parse, shallow
        self.w = _Window()
        self.root: Any = None
        self.kind = 0            # the root's bracket
        self.closed = -1         # where the root closed
        self.start = 0           # where the piece being read starts (after a separator)
        self.key: Any = None     # the key whose value is being read (an object root)
        self.inner = 0           # the level-2 container open: 0, or its bracket (streamed or not)
        self.items: list | None = None    # the streamed array being filled
        self.lines: dict = {}
        self.after = -1          # where a streamed array closed (its value must end there)
        self.big = False         # shallow: the value being read is too big, its bytes dropped
        self.big_value: Any = None
        self.skipped = False     # shallow: a value was too big to keep (the root is not the whole document)
        self.stream_at = -1      # where the value of the streamed array being filled starts
        self.big_streamed: list = []      # shallow: the streamed keys whose arrays are over ``SHALLOW_MAX``
        self.shared: dict = {}   # the short strings of the streamed elements (``share_strings``)
        self.inner_lines: Callable[[str, bytes], dict] | None = None
        self.drop: frozenset = frozenset()
        # a streamed array's elements are parsed a chunk's worth at a time when ``parse`` reads as ``Pieces``
        # does (orjson first): one C call for thousands of small messages instead of one each
        self.batch = isinstance(parse, Pieces)
        self.first = 0           # where the first element held back starts
        self.ends: list = []     # where each element held back ends (its comma)
        self.runs: list = []     # the ends that are ``RUN``s (elements on one line, their commas not told)
        self.parsed: dict = {}   # the scan's values of the ``RUN``s it parsed (``TextScan.parsed``)

    # -- the pieces
    def _value(self, a: int, b: int, depth: int = 1) -> Any:
        text = self.w.piece(a, b)
        if not text.strip(_WS):
            raise Broken("a value is missing", a)
        try:
            return self.parse(text, depth)
        except (ValueError, RecursionError, MemoryError) as e:
            raise Broken(f"not JSON ({type(e).__name__})", a) from None

    def _key(self, a: int, b: int) -> None:
        k = self._value(a, b)
        if not isinstance(k, str):
            raise Broken("a key is not a string", a)
        self.key = k

    def _element(self, a: int, b: int, lines: list, closing: bool, run: bool = False) -> None:
        """The element(s) from ``a`` to the separator at ``b`` (``run``: a ``RUN`` of them, ``b`` its last comma)."""
        assert self.items is not None
        if not closing and self.batch and (self.kind == 0x5B or self.inner_lines is None) \
                and self.key not in self.drop:
            if not self.ends:
                self.first = a
            self.ends.append(b)                        # (each next one starts after this one's comma)
            if run:
                self.runs.append(b)
            return None
        self.flush()
        if run:
            for e in self._run_ends(a, b):
                self._one(a, e, lines, False)
                a = e + 1
            return None
        self._one(a, b, lines, closing)

    def _run_ends(self, a: int, b: int) -> list:
        """The commas that end the elements of the ``RUN`` from ``a`` to its last comma at ``b``."""
        return [a + q for q in split_run(self.w.piece(a, b + 1))]

    def flush(self) -> None:
        """Parse the elements held back (``batch``): all in one ``loads`` of their bytes as one array, in C.
        When that fails (a broken or odd element, or nesting the array's one more level makes too deep) or gives
        another count, each is read on its own, in order, as it always was: the same values, lines, notes and
        errors either way."""
        ends = self.ends
        if not ends:
            return
        self.ends = []
        w, a0 = self.w, self.first
        lines = self.lines[()] if self.kind == 0x5B else self.lines[(self.key,)]
        try:
            values = loads(b"[" + w.buf[a0 - w.base:ends[-1] - w.base] + b"]")
        except (ValueError, RecursionError, MemoryError):      # (orjson's errors are ValueErrors)
            values = None
        one_line = not w.buf.count(b"\n", a0 - w.base, ends[-1] - w.base)
        if self.runs:
            if type(values) is list and one_line:
                self.runs = []
                ends = [0] * len(values)               # (a valid array: as many elements as its commas end)
            else:
                ends = self._told(a0, ends)
        parsed = type(values) is list and len(values) == len(ends)
        if parsed and one_line:
            lines.extend([w.line_at(a0)] * len(ends))  # one line holds them all
        else:
            for a, b in zip([a0, *(e + 1 for e in ends[:-1])], ends):   # (each starts after the comma before it)
                if not parsed:
                    self._one(a, b, lines, False)
                else:
                    w.line_at(a)
                    lines.append(w.line_at(w.first_nonspace(a, b)))
            if not parsed:
                return
        shared, items = self.shared, self.items
        assert items is not None
        for value in values:
            share_strings(value, shared)
        items.extend(values)

    def _parsed_run(self, p: int, values: list, own: int) -> bool:
        """A ``RUN`` the scan parsed whole, taken as its values when its array is streamed in batches (its
        elements are those a batch would parse); False (then read as any run) elsewhere."""
        if self.items is None or self.after >= 0 or own != (2 if self.kind == 0x7B else 1) or not self.batch \
                or not (self.kind == 0x5B or self.inner_lines is None) or self.key in self.drop:
            return False
        self.flush()
        lines = self.lines[()] if self.kind == 0x5B else self.lines[(self.key,)]
        lines.extend([self.w.line_at(self.start)] * len(values))    # (a run is on one line)
        shared = self.shared
        for value in values:
            share_strings(value, shared)
        self.items.extend(values)
        self.start = p + 1
        return True

    def _told(self, a0: int, ends: list) -> list:
        """``ends`` with each ``RUN`` in it told as the commas of its elements."""
        runs, self.runs = set(self.runs), []
        out: list = []
        a = a0
        for e in ends:
            out += self._run_ends(a, e) if e in runs else [e]
            a = e + 1
        return out

    def _one(self, a: int, b: int, lines: list, closing: bool) -> None:
        assert self.items is not None
        if closing and not lines and self.w.blank(a, b):
            return None                                # "[]": no element
        first = self.w.line_at(a)
        at = self.w.first_nonspace(a, b)
        lines.append(self.w.line_at(at))
        if self.inner_lines is not None and self.kind == 0x7B:
            index = len(self.items)
            for path, found in self.inner_lines(self.key, self.w.piece(a, b)).items():
                self.lines[(self.key, index) + tuple(path)] = [n + first - 1 for n in found]
        value = self._value(a, b, 1 if self.kind == 0x5B else 2)
        if self.key in self.drop:
            value = None                                 # read (a broken one is Broken), not kept
        else:
            share_strings(value, self.shared)
        self.items.append(value)

    # -- the tokens
    def token(self, p: int, ch: int, own: int) -> None:
        if ch == RUN and self.parsed:
            values = self.parsed.pop(p, None)
            if values is not None and self._parsed_run(p, values, own):
                return None
        if self.ends:
            if (ch == 0x2C or ch == RUN) and own == (2 if self.kind == 0x7B else 1):
                self.ends.append(p)                      # the next element of a held-back run (``_element``)
                if ch == RUN:
                    self.runs.append(p)
                self.start = p + 1
                if p - self.first >= BATCH_BYTES:
                    self.flush()
                return None
            self.flush()
        if own < 1:
            raise Broken("unbalanced brackets", p)
        if own == 2:
            return self._inner(p, ch)
        if not self.kind:
            if ch not in _OPEN or not self.w.blank(self.w.base, p):
                raise Broken("not a JSON object or array", p)
            self.kind = ch
            self.root = {} if ch == 0x7B else []
            if ch == 0x5B and "" in self.stream:
                self.items = self.root
                self.lines[()] = []
            self.start = p + 1
            return None
        if ch == 0x3A:                                   # ":"
            if self.kind != 0x7B or self.key is not None:
                raise Broken("a ':' out of place", p)
            self._key(self.start, p)
            self.start = p + 1
            return None
        if ch in _OPEN:
            raise Broken("unbalanced brackets", p)
        return self._end_piece(p, ch)

    def _end_piece(self, p: int, ch: int) -> None:
        """A ',' or the root's closing bracket: the piece before it ends."""
        if ch in _CLOSE and ch != self.kind + 2:
            raise Broken("mismatched brackets", p)
        if self.kind == 0x5B:
            if self.items is not None:
                self._element(self.start, p, self.lines[()], ch != 0x2C and ch != RUN, ch == RUN)
            else:
                raise Broken("unexpected array", p)      # (a root array is always streamed)
        elif self.key is None:
            if ch == 0x2C or not (self.w.blank(self.start, p) and not self.root):
                raise Broken("a key is missing", p)
        else:
            self._object_value(p)
        self.start = p + 1
        if ch in _CLOSE:
            self.closed = p
        return None

    def _object_value(self, p: int) -> None:
        assert isinstance(self.root, dict)
        if self.after >= 0:                             # a streamed array: nothing may follow it
            if not self.w.blank(self.after + 1, p):
                raise Broken("text after an array", self.after + 1)
            self.root[self.key] = self.items
            if self.shallow and p - self.stream_at > SHALLOW_MAX:   # (measured as any value is)
                self.big_streamed.append(self.key)
            self.after, self.items = -1, None
        elif self.big or (self.shallow and p - self.start > SHALLOW_MAX):
            self.check_big(p)
            self.root[self.key] = self.big_value
            self.big = False
        else:
            self.root[self.key] = self._value(self.start, p)
        self.key = None

    def _inner(self, p: int, ch: int) -> None:
        """A token of a container at level 2: a streamed array's (its elements split), or another's (skipped)."""
        if self.kind != 0x7B:
            return None                 # (a root array's elements are never split: they are read whole)
        if not self.inner:
            if ch not in _OPEN or self.key is None or self.after >= 0:
                raise Broken("unbalanced brackets", p)
            self.inner = ch
            if ch == 0x5B and self.key in self.stream and self.w.first_nonspace(self.start, p) == p:
                self.items, self.lines[(self.key,)] = [], []
                self.start, self.stream_at = p + 1, self.start
            return None
        streamed = self.items is not None and self.after < 0
        if ch in _OPEN:
            raise Broken("unbalanced brackets", p)
        if ch == 0x3A:
            if streamed:
                raise Broken("a ':' in an array", p)
            return None
        if ch in _CLOSE and ch != self.inner + 2:
            raise Broken("mismatched brackets", p)
        if streamed:
            self._element(self.start, p, self.lines[(self.key,)], ch != 0x2C and ch != RUN, ch == RUN)
            self.start = p + 1
        if ch in _CLOSE:
            self.inner = 0
            if streamed:
                self.after = p
        return None

    def keep_from(self) -> int:
        """The first byte still needed when this chunk's tokens are read."""
        if self.closed >= 0:
            return self.w.end
        if self.after >= 0:
            return self.after + 1
        return self.start

    def check_big(self, end: int = -1) -> None:
        """Shallow: a top-level value over ``SHALLOW_MAX`` is not kept, an empty one of its kind stands for it."""
        end = self.w.end if end < 0 else end
        if not self.shallow or self.big or self.key is None or self.items is not None \
                or end - self.start <= SHALLOW_MAX:
            return
        first = self.w.first_nonspace(self.start, end)
        c = self.w.buf[first - self.w.base]
        self.big_value = {} if c == 0x7B else [] if c == 0x5B else "" if c == 0x22 else None
        self.big = self.skipped = True


def _chunks(f, size: int) -> Iterator[bytes]:
    while True:
        chunk = f.read(size)
        if not chunk:
            return
        yield chunk


def _skip_bom(f) -> int:
    """Where the text starts: after a BOM (the offsets stay the file's)."""
    pos = f.tell()
    if f.read(3) == b"\xef\xbb\xbf":
        return pos + 3
    f.seek(pos)
    return pos


# a document this big is scanned with numpy; a smaller one without (``TextScan``): numpy's import (~13 MB) is 0.07x
# of a 180 MB document (claude_code's run peaked at 2.10x the file with it, 2.02x without), ~1% of this size;
# the scan without it costs ~6 ns a byte against ~4 (+0.4 s CPU at 180 MB, on a run of 5-14 s)
NUMPY_BYTES = 1_000_000_000


RUN_ELEMENTS = True     # the scan without numpy takes elements on one line as a ``RUN`` (one token)


def _scanner(f, max_level: int) -> Any:
    """The scan for the file ``f``: numpy's for a big document (when numpy is there), else the pure-Python one,
    which imports nothing: numpy's import (~13 MB) would be most of the peak's excess on a 20 MB document."""
    at = f.tell()
    size = f.seek(0, 2)
    f.seek(at)
    if size >= NUMPY_BYTES:
        try:
            import numpy  # noqa: F401
        except ImportError:  # pragma: no cover - numpy comes with pyqtgraph
            return TextScan(max_level, GROUP_LEVELS if size >= GROUP_BYTES else 0, RUN_ELEMENTS)
        return Scan(max_level)
    return TextScan(max_level, GROUP_LEVELS if size >= GROUP_BYTES else 0, RUN_ELEMENTS)


def _walk(f, reader: _Reader, max_level: int, chunk_size: int, stop_at_root: bool = False) -> None:
    scan = _scanner(f, max_level)
    reader.parsed = scan.parsed
    w = reader.w
    pos = w.base = w.cur = _skip_bom(f)
    for chunk in _chunks(f, chunk_size):
        if reader.closed >= 0:
            if stop_at_root:
                return
            if chunk.strip(_WS):
                raise Broken("text after the value", pos)
            pos += len(chunk)
            continue
        w.add(chunk)
        for p, ch, own in zip(*scan.tokens(chunk, pos)):
            if reader.closed >= 0:
                if stop_at_root:
                    break
                raise Broken("text after the value", p)
            reader.token(p, ch, own)
        pos += len(chunk)
        if reader.closed >= 0:
            if stop_at_root:
                return
            if not w.blank(reader.closed + 1, w.end):
                raise Broken("text after the value", reader.closed + 1)
        reader.flush()
        reader.check_big()
        w.drop_before(reader.keep_from() if not reader.big else w.end)
    if reader.closed < 0:
        raise Broken("the file ends inside the value", pos)


def read_document(f, parse: Callable[[bytes, int], Any], stream: tuple = ("messages",),
                  chunk_size: int | None = None,
                  inner_lines: Callable[[str, bytes], dict] | None = None, drop: tuple = ()) -> tuple[Any, dict]:
    """(the value, the 1-based line of each streamed element) of the JSON document in the binary file ``f``.

    ``stream``: the keys of the top-level object whose array values are read element by element (``""``
    for a top-level array); every other value of the top-level object is parsed whole. The lines are
    ``{(key,): [line of element 0, ...]}`` (``()`` for the top-level array). ``parse`` reads one piece
    (bytes) and raises ValueError when it is not JSON. Broken when the file is not one JSON object or
    array as the scanner reads it. ``parse`` is given each piece and how deep it sits (``Pieces``).
    ``inner_lines(key, piece)``, when given, finds lines inside each streamed element of the top-level
    object (``{path: [line in the piece, ...]}``); they are added as ``{(key, index, *path): [line, ...]}``.
    ``drop``: streamed keys whose elements are read (checked) but not kept: each stands as None (a
    trajectory whose steps only count)."""
    head = f.read(64)
    f.seek(0)
    h = head.lstrip(b"\xef\xbb\xbf" + _WS)[:1]
    if h not in (b"{", b"["):
        raise Broken("not a JSON object or array", 0)
    reader = _Reader(frozenset(stream), parse)
    reader.inner_lines = inner_lines
    reader.drop = frozenset(drop)
    _walk(f, reader, 1 if h == b"[" else 2, chunk_size or CHUNK)
    return reader.root, reader.lines


def shallow_value(f, parse: Callable[[bytes, int], Any], chunk_size: int = 1024 * 1024) -> Any:
    """The JSON object that starts the binary file ``f`` (its first line, for JSONL), each top-level value
    bigger than ``SHALLOW_MAX`` replaced by an empty one of its kind ({}, [], ""): what a format's probe
    looks at, without reading a big first record or a whole one-line document. None when the file does
    not start with a well-formed object ending on its first line."""
    reader = _Reader(frozenset(), parse, shallow=True)
    try:
        _walk(f, reader, 1, chunk_size, stop_at_root=True)
    except Broken:
        return None
    return _first_line_object(reader)


def _first_line_object(reader: _Reader) -> Any:
    w = reader.w
    rest = w.buf[reader.closed + 1 - w.base:]
    nl = rest.find(b"\n")
    if rest[:nl if nl >= 0 else len(rest)].strip(_WS):
        return None                     # more on the first line than one value
    return reader.root if isinstance(reader.root, dict) else None


def probe_document(f, parse: Callable[[bytes, int], Any], stream: tuple = ("messages",),
                   chunk_size: int | None = None) -> tuple[Any, tuple | None]:
    """(``shallow_value``'s answer, ``read_document``'s (value, lines) or None) from one pass: the arrays at the
    keys ``stream`` are read element by element as ``read_document`` reads them, and stand in the shallow value
    as ``[]`` when over ``SHALLOW_MAX``, as any big value does. The second part is there only when that pass read
    the whole file as one document (no other value was too big to keep, nothing but blanks after it): a loader
    of such a one-line document then need not read it again. Broken (and the errors of ``parse``) as
    ``read_document`` raises them: the caller then asks ``shallow_value``, whose walk checks less."""
    reader = _Reader(frozenset(stream), parse, shallow=True)
    _walk(f, reader, 2, chunk_size or CHUNK, stop_at_root=True)
    value = _first_line_object(reader)
    if value is None:
        return None, None
    whole = None
    if not reader.skipped and not reader.w.buf[reader.closed + 1 - reader.w.base:].strip(_WS) \
            and all(not chunk.strip(_WS) for chunk in _chunks(f, chunk_size or CHUNK)):
        whole = (value, reader.lines)
    if reader.big_streamed:
        value = {k: [] if k in reader.big_streamed else v for k, v in value.items()}
    return value, whole
