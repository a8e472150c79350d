"""What every loader shares: the error type, the probe, and line reading."""
from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

# shared with the loaders from here (explicit re-exports)
from ..runtime.record import field, record
from ..files.jsonio import (
    LINE_TOO_LONG as LINE_TOO_LONG, MAX_LINE_BYTES as MAX_LINE_BYTES, JSONDecodeError as JSONDecodeError,
    NotAFile as NotAFile, drop_mistyped as drop_mistyped, iter_lines as iter_lines, loads as loads,
    loads_deep as loads_deep, loads_lenient as loads_lenient, parse_timestamp as parse_timestamp,
    wrong_type as wrong_type,
)
from ..files.jsonio import open_regular as _open_regular
from ..files.jsonio import lenient_number_hooks

PROBE_BYTES = 256 * 1024
_UNSET = object()
MAX_JSON_BYTES = 2 * 1024 * 1024 * 1024  # a whole-document JSON file larger than this is refused


class LoadError(Exception):
    """A file could not be loaded. Always names the file and, where known, the line."""

    def __init__(self, path: str, line: int, message: str):
        super().__init__(message)
        self.path, self.line, self.message = str(path), line, message

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        return f"{where}: {self.message}"


@record
class Probe:
    """The first bytes of a file, read once and shared by every sniffer."""
    path: Path
    head: bytes
    size: int
    _first_lines: list | None = field(default=None, repr=False)
    _first_value: Any = field(default=None, repr=False)
    # a load's probe: a one-line document read for its first line is read whole in the same pass, kept for
    # its loader (``take_document``); other probes (a sniff, a look at siblings) only skim it
    keep_document: bool = field(default=False, repr=False)
    _document: tuple | None = field(default=None, repr=False, compare=False)

    def __post_init__(self):
        self._first_value = _UNSET

    @property
    def text_head(self) -> str:
        return self.head.decode("utf-8", errors="replace")

    def first_json_lines(self, n: int = 20) -> list:
        """Up to n parsed complete lines from the head (unparseable lines are None). Read as the loaders
        read (``loads_lenient``), so a line with a lone surrogate or NaN still tells the format."""
        if self._first_lines is None:
            out = []
            lines = self.head.split(b"\n")
            if len(self.head) < self.size:
                lines = lines[:-1]   # last line may be cut off
            for raw in lines:
                raw = raw.strip()
                if not raw:
                    continue
                try:
                    out.append(loads_lenient(raw))
                except (ValueError, RecursionError):
                    out.append(None)
                if len(out) >= max(n, 20):
                    break
            self._first_lines = out
        return self._first_lines[:n]

    def first_line_value(self):
        """The first non-blank line parsed as JSON. When that line is longer than the probe (a JSONL file
        whose first record is huge, or a whole document on one line), its top-level object is read in
        chunks, each of its values over ``jsonstream.SHALLOW_MAX`` standing as an empty one of its kind
        ({}, [], ""): enough to tell a format, never the whole file in memory. None when it is not one
        JSON value."""
        if self._first_value is not _UNSET:
            return self._first_value
        value = None
        h = self.head.lstrip(b"\xef\xbb\xbf \t\r\n")
        nl = h.find(b"\n")
        try:
            if nl >= 0 or len(self.head) >= self.size:
                value = loads_lenient(h[:nl] if nl >= 0 else h)
            elif h.startswith(b"{"):
                from ..files.jsonstream import shallow_value
                with open_regular(self.path) as f:
                    value = self._document_first_value(f) if self.keep_document and \
                        STREAM_BYTES <= self.size <= MAX_JSON_BYTES else _UNSET
                    if value is _UNSET:
                        f.seek(0)
                        value = shallow_value(f, lambda raw, depth: loads_lenient(raw))
        except (OSError, MemoryError, LoadError, ValueError, RecursionError) + tuple(JSONDecodeError):
            value = None
        self._first_value = value
        return value

    def _document_first_value(self, f) -> Any:
        """``first_line_value`` of a load's probe: the pass that reads the first line's top-level object also
        reads the document's ``messages`` as ``read_json_streamed`` does, and keeps it when that was the whole
        file. _UNSET when the stricter walk of that pass finds the file broken (the shallow one says more)."""
        from ..files.jsonstream import Broken, Pieces, probe_document
        pieces = Pieces()
        try:
            value, whole = probe_document(f, pieces, ("messages",))
        except (Broken, MemoryError, RecursionError):
            return _UNSET
        if whole is not None:
            self._document = (whole[0], whole[1], pieces.notes)
        return value

    def take_document(self) -> tuple | None:
        """(value, lines, notes) as ``read_json_streamed(path, notes)`` gives them, when this load's probe read
        the whole one-line document already (``keep_document``); once (the probe lets go of it), else None."""
        doc, self._document = self._document, None
        return doc

    def starts_with(self, *prefixes: bytes) -> bool:
        h = self.head.lstrip(b"\xef\xbb\xbf \t\r\n")
        return any(h.startswith(p) for p in prefixes)

    def describe_unknown(self) -> str:
        if self.starts_with(b"{", b"["):
            return ("this JSON is not a format Compactscope knows: expected a list of messages, a request body with "
                    "\"messages\", JSONL with one message per line, a Claude Code session, an Inspect log, or a "
                    "recording")
        return "not a conversation file Compactscope can read (no JSON, JSONL, SQLite or zip content found)"


def _os_message(e: OSError) -> str:
    if e.errno == errno.ENAMETOOLONG:
        return "the file name is too long for this system"
    if e.errno in (errno.ENOENT, errno.ENOTDIR):
        return "no such file"
    if e.errno == errno.ELOOP:
        return "too many levels of symbolic links"
    if e.errno in (errno.EACCES, errno.EPERM):
        return "permission denied: the file cannot be read"
    return f"cannot read the file: {e.strerror or e}"


def open_regular(path: str | os.PathLike, buffering: int = -1):
    """``jsonio.open_regular`` with its refusal as a LoadError naming the file (a FIFO, a device such as
    /dev/zero, a socket or a folder is refused at once; a name the system cannot take says so)."""
    try:
        return _open_regular(path, buffering)
    except NotAFile as e:
        raise LoadError(str(path), 0, e.message) from None
    except OSError as e:
        raise LoadError(str(path), 0, _os_message(e)) from None


def read_probe(path: str | Path) -> Probe:
    p = Path(path)
    with open_regular(p) as f:
        try:
            size = os.fstat(f.fileno()).st_size
            head = f.read(PROBE_BYTES)
        except OSError as e:
            raise LoadError(str(p), 0, _os_message(e)) from None
    if size == 0 or not head.strip():
        raise LoadError(str(p), 0, "the file is empty")
    probe = Probe(p, head, size)
    is_zip = head.startswith(b"PK\x03\x04")
    is_sqlite = head.startswith(b"SQLite format 3\x00")
    if not (is_zip or is_sqlite) and b"\x00" in head[:8192]:
        raise LoadError(str(p), 0, "this is a binary file, not a JSON or JSONL transcript")
    return probe


STREAM_BYTES = 2 * 1024 * 1024   # a JSON document this big is read in chunks (``read_json_streamed``)


def read_json_streamed(path: Path, notes: list | None = None, stream: tuple = ("messages", ""),
                       inner: tuple = (), drop: tuple = ()) -> tuple[Any, dict]:
    """(``read_json_document``'s value, the line of each element of its streamed arrays) without the whole
    file in memory: a document of ``STREAM_BYTES`` or more is read in chunks, the arrays at the keys
    ``stream`` of its top-level object ("" for a top-level array) element by element, each piece parsed
    as ``loads_lenient`` parses (``files.jsonstream``). The lines are ``{(key,): [line, ...]}``, as
    ``document_lines`` gives them; ``inner``: patterns inside each streamed element (``("messages",)`` for
    the messages of each of an Inspect log's samples), their lines given as ``document_lines`` gives those
    of ``(key, "*", *pattern)``; ``drop``: streamed keys whose elements are checked but not kept (None each,
    when streamed). Broken JSON is read whole, as before, for its error's line and column."""
    doc: Any = _UNSET
    with open_regular(path) as f:
        size = os.fstat(f.fileno()).st_size
        _check_document_size(path, size)
        if size >= STREAM_BYTES:
            from ..files.jsonstream import Broken, Pieces, read_document
            pieces = Pieces()
            try:
                doc, lines = read_document(f, pieces, stream, inner_lines=_inner_lines(inner) if inner else None,
                                           drop=drop)
            except (Broken, MemoryError, RecursionError):
                doc = _UNSET
    if doc is not _UNSET:
        if notes is not None:
            notes.extend(pieces.notes)
        return doc, lines
    doc = read_json_document(path, notes)
    patterns = [()] if isinstance(doc, list) and "" in stream else \
        [(k,) for k in stream if isinstance(doc, dict) and isinstance(doc.get(k), list)]
    patterns += [(k, "*", *pattern) for k in stream if k for pattern in inner]
    lines = {}
    for pattern in patterns:
        lines.update(document_lines(path, pattern, doc))
    return doc, lines


def _inner_lines(patterns: tuple):
    """The lines of ``patterns`` inside one streamed element (its bytes), for ``read_document``."""
    def lines(key: str, piece: bytes) -> dict:
        out: dict = {}
        try:
            for pattern in patterns:
                out.update(array_element_lines(piece, pattern))
        except (MemoryError, RecursionError):
            pass
        return out
    return lines


def _check_document_size(path: Path, size: int) -> None:
    if size > MAX_JSON_BYTES:
        raise LoadError(str(path), 0, f"the file is {size:,} bytes, over the {MAX_JSON_BYTES:,}-byte limit for "
                                      "one JSON document")


def read_json_document(path: Path, notes: list | None = None) -> Any:
    """Parse a whole file as one JSON value; LoadError with line and column. What only a lenient parser
    reads (NaN, 1e400, lone surrogates, invalid UTF-8) is made valid and described in ``notes``
    (see ``loads_lenient``)."""
    with open_regular(path) as f:
        size = os.fstat(f.fileno()).st_size
        _check_document_size(path, size)
        data = f.read(size + 1)            # (read(n) sets aside n bytes at once: never the 2 GB limit itself)
    try:
        return loads_lenient(data, notes=notes)
    except JSONDecodeError as e:
        pos = getattr(e, "pos", None)
        if pos is None:
            import re
            m = re.search(r"char (\d+)", str(e))
            pos = int(m.group(1)) if m else 0
        line = data.count(b"\n", 0, pos) + 1
        col = pos - (data.rfind(b"\n", 0, pos) + 1) + 1
        msg = str(e).split(":")[0]
        raise LoadError(str(path), line, f"broken JSON at column {col}: {msg}") from None


# ------------------------------------------------------------------ normalisation (one step, every loader)
def normalise_result(result) -> None:
    """The last step of every load: every message is given the shape the layers are written for, in place,
    and each message it touched is reported as a problem with its line. Two kinds of fix:

    * what the API would never carry and no writer can write back (``safeio.json_safe``): lone UTF-16
      surrogates become U+FFFD, NaN/Infinity null, integers beyond 64 bits floats, keys strings, nesting
      deeper than ``safeio.MAX_DEPTH`` is cut;
    * values of the wrong type for the API (``shape.fix_message``: a block ``type`` that is a list, an id
      that is an object, ``text`` that is a number...): made well-typed, and the message's meta keeps
      what was wrong (``extra["load_fixes"]``) so the checker still reports that the API would reject
      the list as the file holds it.

    A conversation with nothing to fix is checked in one C pass (orjson) plus a quick type check per
    message, and not copied."""
    from ..model.conversation import Problem, own_extra
    from ..files.safeio import json_safe
    from ..model.shape import fix_message, fix_system, fix_tools, well_shaped
    for conv in result.conversations:
        problems = conv.problems
        for attr, shape in (("system", fix_system), ("tools", fix_tools)):
            notes: list = []
            v = getattr(conv, attr)
            if v is not None:
                fixed = json_safe(v, notes)
                fixed, more = shape(fixed)
                notes += more
                if fixed is not v:
                    setattr(conv, attr, fixed)
                    problems.append(Problem(conv.source or result.path, 0, f"{attr}: " + "; ".join(
                        dict.fromkeys(notes)), "warning"))
        for attr in ("model", "title"):
            v = getattr(conv, attr)
            if v is not None and not isinstance(v, str):
                problems.append(Problem(conv.source or result.path, 0, f"the conversation's {attr} is "
                                        f"{wrong_type(v)}, not a string: ignored", "warning"))
                setattr(conv, attr, None if attr == "model" else "")
        msgs = conv.messages
        unsafe = _needs_fixing(msgs)
        # (when nothing is unsafe, only the messages not well shaped are looked at again: one pass in a listcomp)
        for i in range(len(msgs)) if unsafe else [i for i, m in enumerate(msgs) if not well_shaped(m)]:
            m = msgs[i]
            notes = []
            fixed = json_safe(m, notes) if unsafe else m
            if not well_shaped(fixed):
                fixed, more = fix_message(fixed)
                notes += more
                if fixed is None:                      # not a message at all: kept as text, in its place
                    fixed = {"role": "user", "content": _json_text(m)}
            if fixed is m:
                continue
            msgs[i] = fixed
            meta = conv.meta_at(i)
            if i < len(conv.meta):
                own_extra(meta)["load_fixes"] = list(dict.fromkeys(notes))
            line = meta.provenance.line if meta.provenance is not None else 0
            problems.append(Problem(meta.provenance.path if meta.provenance is not None else result.path, line,
                                    f"message {i}: " + "; ".join(dict.fromkeys(notes)), "warning"))
    # the LoadResult's own list holds the main conversation's problems (the window lists them)
    if result.conversations and result.problems is not result.conversations[0].problems:
        seen = {id(p) for p in result.problems}
        result.problems.extend(p for p in result.conversations[0].problems if id(p) not in seen)


def _json_text(value: Any) -> str:
    from ..files.safeio import dumps, json_safe
    return dumps(json_safe(value))


def _needs_fixing(messages: list) -> bool:
    try:
        import orjson as _orjson
    except ImportError:  # pragma: no cover
        return True
    try:
        # fails on lone surrogates, integers beyond 64 bits, non-string keys; a thousand messages at a time, so
        # that 100k messages are never one 150 MB bytes object beside the loaded conversation
        for i in range(0, len(messages), 1000):
            _orjson.dumps(messages[i:i + 1000])
    except (TypeError, _orjson.JSONEncodeError, RecursionError):
        return True
    return False                      # (NaN cannot come out of loads_lenient; writers make it null anyway)


def note_problems(path: str, notes: list, line: int = 0) -> list:
    """The notes of ``loads_lenient`` (what was made valid) as one warning for the file or line."""
    from ..model.conversation import Problem
    return [Problem(str(path), line, "; ".join(dict.fromkeys(notes)), "warning")] if notes else []


def path_str(p: Path) -> str:
    return os.fspath(p)


def recover_records(raw: bytes | str, accept=None, notes: list | None = None) -> list:
    """Parse a broken JSONL line that holds several records joined together
    (e.g. ``{...}{...}`` with the newline lost, or a truncated record followed by
    a whole one). Returns the JSON objects found, in order, that ``accept``
    approves (default: any dict). Never raises.

    Linear time: the attempts together may read at most ``RECOVERY_BUDGET`` times the line (an attempt
    that fails deep inside costs what it read, one that overflows the nesting limit costs the rest of
    the line), so a corrupt, deeply nested line is given up on quickly instead of being re-parsed from
    each of its thousands of ``{"``. What only a lenient parser reads is made valid (``loads_lenient``)."""
    import json as _json
    text = raw.decode("utf-8", errors="replace") if isinstance(raw, (bytes, bytearray)) else str(raw)
    accept = accept or (lambda o: isinstance(o, dict))
    found: list = []
    dec = _json.JSONDecoder(**lenient_number_hooks(found))
    out: list = []
    i, n = 0, len(text)
    budget = RECOVERY_BUDGET * n + 4096
    while i < n and budget > 0:
        while i < n and text[i] in " \t\r\n":
            i += 1
        if i >= n:
            break
        try:
            obj, end = dec.raw_decode(text, i)
            budget -= end - i
        except ValueError as e:
            obj, end = None, -1
            budget -= max(getattr(e, "pos", n) - i, 1)
        except RecursionError:
            obj, end = None, -1
            budget -= n - i
        if end > i and accept(obj):
            out.append(obj)
            i = end
            continue
        j = text.find('{"', i + 1)   # resynchronise at the next object start
        if j < 0:
            break
        i = j
    if out:
        from ..files.safeio import json_safe
        out = [json_safe(o, found) for o in out]
        if notes is not None:
            notes.extend(dict.fromkeys(found))
    return out


RECOVERY_BUDGET = 16


_TOKEN = None
_NONSPACE = None


NUMPY_SCAN_BYTES = 2_000_000      # a document this big is scanned with numpy (~0.1-0.2 s to import)


def array_element_lines(data: bytes | str, pattern: tuple) -> dict:
    """1-based line numbers where each element of the arrays at ``pattern`` starts, in a JSON document.

    ``pattern`` is a path of object keys, with "*" for any array index, e.g. ("messages",) or
    ("samples", "*", "messages"). Returns {concrete path: [line of element 0, line of element 1, ...]}.
    A quick scan of strings and punctuation; on anything it does not understand it returns what it
    found so far (provenance is a help, never a reason to fail).

    With numpy (always there beside pyqtgraph) the scan is vectorised: the quotes and the punctuation
    outside strings are found in C, and only the punctuation of the containers at most as deep as the
    arrays asked for is walked in Python (for a list of 10k messages: ~10k commas instead of ~330k
    tokens). A document without a newline needs no scan of its lines at all.
    """
    raw = data.encode("utf-8", errors="surrogatepass") if isinstance(data, str) else bytes(data)
    if len(raw) < NUMPY_SCAN_BYTES:       # importing numpy costs more than the Python scan of a small document
        return _array_element_lines_py(raw, pattern)
    try:
        import numpy  # noqa: F401
    except ImportError:  # pragma: no cover - numpy comes with pyqtgraph
        return _array_element_lines_py(raw, pattern)
    try:
        return _array_element_lines_np(raw, pattern)
    except (IndexError, TypeError, ValueError, MemoryError):
        return {}


def _array_element_lines_np(data: bytes, pattern: tuple) -> dict:
    import json
    import re

    import numpy as np
    global _NONSPACE
    if _NONSPACE is None:
        _NONSPACE = re.compile(rb"[^ \t\r\n]")
    buf = np.frombuffer(data, dtype=np.uint8)
    n = len(buf)
    # the quotes that open or close a string: a quote preceded by an odd run of backslashes is escaped
    q = np.flatnonzero(buf == 0x22)
    if len(q):
        after_bs = np.zeros(len(q), dtype=bool)
        inner = q > 0
        after_bs[inner] = buf[q[inner] - 1] == 0x5C
        if after_bs.any():
            # the length of the run of backslashes before each quote, for all quotes at once (linear time
            # whatever the text: 5 MB of \" or of \\\\ is no worse than any other 5 MB)
            pos = np.arange(n, dtype=np.int64)
            last_plain = np.where(buf == 0x5C, -1, pos)
            np.maximum.accumulate(last_plain, out=last_plain)
            del pos
            qb = q[after_bs]
            run = (qb - 1) - last_plain[qb - 1]
            escaped = np.zeros(len(q), dtype=bool)
            escaped[after_bs] = (run & 1) == 1
            del last_plain
            q = q[~escaped]
    # punctuation outside strings (a JSON string never holds a raw newline, so lines are not affected)
    lut = np.zeros(256, dtype=bool)
    lut[list(b"[]{},:")] = True
    s = np.flatnonzero(lut[buf])
    if len(q):
        s = s[(np.searchsorted(q, s) & 1) == 0]
    c = buf[s]
    opens = (c == 0x5B) | (c == 0x7B)
    closes = (c == 0x5D) | (c == 0x7D)
    level = np.cumsum(opens.astype(np.int32) - closes.astype(np.int32))
    # level of the container a token belongs to: an opening bracket belongs to the one it opens,
    # a closing one too (the running level already dropped), punctuation to the current one
    own = level + closes
    depth = len(pattern) + 1          # the arrays asked for are at this level (the root is level 1)
    keep = np.flatnonzero(own <= depth)
    pos_k = s[keep].tolist()
    chr_k = c[keep].tolist()

    def key_before(colon: int) -> str:
        k = int(np.searchsorted(q, colon)) - 1     # the quote closing the key
        if k < 1:
            return ""
        text = data[int(q[k - 1]) + 1:int(q[k])].decode("utf-8", errors="replace")
        if "\\" in text:
            try:
                text = json.loads('"' + text + '"')
            except ValueError:
                pass
        return text

    def matches(p) -> bool:
        return len(p) == len(pattern) and all(a == "*" or a == b for a, b in zip(pattern, p))

    found: dict = {}                 # path -> [byte offset of each element]
    stack: list = []                 # [is_array, path, index or key, offsets or None]
    try:
        for pos, ch in zip(pos_k, chr_k):
            if ch == 0x5B or ch == 0x7B:         # [ {
                if stack:
                    top = stack[-1]
                    path = top[1] + (top[2],)
                else:
                    path = ()
                if ch == 0x5B:
                    sink = found.setdefault(path, []) if matches(path) else None
                    stack.append([True, path, 0, sink])
                    if sink is not None:
                        m = _NONSPACE.search(data, pos + 1)
                        if m is not None and data[m.start()] != 0x5D:
                            sink.append(m.start())
                else:
                    stack.append([False, path, None, None])
            elif ch == 0x2C:                     # ,
                top = stack[-1]
                if top[0]:
                    top[2] += 1
                    if top[3] is not None:
                        m = _NONSPACE.search(data, pos + 1)
                        if m is not None and data[m.start()] != 0x5D:
                            top[3].append(m.start())
            elif ch == 0x3A:                     # :
                top = stack[-1]
                if not top[0]:
                    top[2] = key_before(pos)
            else:                                # ] }
                stack.pop()
    except (IndexError, TypeError):
        pass
    out: dict = {}
    if not found:
        return out
    nl = np.flatnonzero(buf == 0x0A) if n else np.zeros(0, dtype=np.int64)
    for path, offs in found.items():
        if not offs:
            continue
        if len(nl) == 0:
            out[path] = [1] * len(offs)
        else:
            out[path] = (np.searchsorted(nl, np.asarray(offs, dtype=np.int64)) + 1).tolist()
    return out


def _array_element_lines_py(data: bytes | str, pattern: tuple) -> dict:
    """The same scan in pure Python (the fallback without numpy): a regex over strings and punctuation."""
    import bisect
    import re
    global _TOKEN
    if _TOKEN is None:
        _TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{},:]')
    text = data.decode("utf-8", errors="replace") if isinstance(data, (bytes, bytearray)) else data
    newlines = [m.start() for m in re.finditer("\n", text)]
    out: dict = {}
    # stack entries: [kind, key or index, expecting_value]; path = keys/indices of enclosing containers
    stack: list = []
    path: list = []
    depth_pattern = len(pattern)

    def matches(p) -> bool:
        return len(p) == depth_pattern and all(a == "*" or a == b for a, b in zip(pattern, p))

    def line_of(pos: int) -> int:
        return bisect.bisect_right(newlines, pos - 1) + 1

    pending_key = None
    expect_elem = False
    try:
        for m in _TOKEN.finditer(text):
            tok = m.group()
            c = tok[0]
            top = stack[-1] if stack else None
            if top is not None and top[0] == "a" and expect_elem and c not in "]":
                # a new element of the array on top starts here
                if matches(path):
                    out.setdefault(tuple(path), []).append(line_of(m.start()))
                expect_elem = False
            if c == '"':
                if top is not None and top[0] == "o" and top[2] == "key":
                    pending_key = tok[1:-1]
                continue
            if c == ":":
                if top is not None and top[0] == "o":
                    top[2] = "value"
                continue
            if c == ",":
                if top is not None and top[0] == "o":
                    top[2] = "key"
                elif top is not None and top[0] == "a":
                    top[1] += 1
                    expect_elem = True
                continue
            if c in "{[":
                if top is not None:
                    path.append(pending_key if top[0] == "o" else top[1])
                stack.append(["o", None, "key"] if c == "{" else ["a", 0, None])
                if c == "[":
                    expect_elem = True
                continue
            if c in "}]":
                stack.pop()
                if stack:
                    path.pop()
                expect_elem = False
    except (IndexError, TypeError):
        pass
    return out


MAX_LINE_SCAN_BYTES = 64 * 1024 * 1024


def document_lines(path: Path, pattern: tuple, doc: Any = _UNSET) -> dict:
    """``array_element_lines`` for a file, or {} when it is too large to scan cheaply.

    ``doc``, the parsed document when the caller has it, answers a document written on one line
    (``json.dumps`` without indent) without any scan: every element is on line 1."""
    try:
        if path.stat().st_size > MAX_LINE_SCAN_BYTES:
            return {}
        data = path.read_bytes()
        end = len(data)
        while end and data[end - 1] in b" \t\r\n":   # trailing blank (no copy of the whole file)
            end -= 1
        if doc is not _UNSET and data.find(b"\n", 0, end) < 0:
            out: dict = {}
            _one_line_arrays(doc, pattern, (), out)
            return out
        return array_element_lines(data, pattern)
    except (OSError, MemoryError, RecursionError):
        return {}


def _one_line_arrays(value: Any, pattern: tuple, prefix: tuple, out: dict) -> None:
    """The arrays of a parsed one-line document at ``pattern`` ("*" = any index or key), each element on line 1."""
    if not pattern:
        if isinstance(value, list) and value:
            out[prefix] = [1] * len(value)
        return
    head, rest = pattern[0], pattern[1:]
    if isinstance(value, list):
        if head == "*":
            for i, x in enumerate(value):
                _one_line_arrays(x, rest, prefix + (i,), out)
        elif isinstance(head, int) and not isinstance(head, bool) and 0 <= head < len(value):
            _one_line_arrays(value[head], rest, prefix + (head,), out)
    elif isinstance(value, dict):
        if head == "*":
            for k, x in value.items():
                _one_line_arrays(x, rest, prefix + (k,), out)
        elif head in value:
            _one_line_arrays(value[head], rest, prefix + (head,), out)
