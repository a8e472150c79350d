"""What a compaction kept and what it lost.

For each real compaction (the file's) and each simulated one (the replay's), the items of the context it replaced:

* ``request``: what the user asked (the first line of each user message with text; the last one is ``last``);
* ``path``: file paths (tool inputs, paths written in the user's and the model's text, then up to
  ``RESULT_PATHS`` that only tool results name);
* ``tool``: the tools called;
* ``error``: the first line of each tool result that failed;
* ``identifier`` and ``number``: names (snake_case, camelCase, dotted) and numbers of 3+ digits that recur in
  the text of the replaced messages (the user's, the model's, the tool inputs).

The replaced context is the messages that left: a real compaction's segment before it, less what the segment
after it repeats unchanged (hermes and Inspect re-send their kept head and tail); a simulated one's pipeline input,
less the messages its output still holds. What replaced it is the new context up to the next model reply (the
summary and whatever was restored after it: the files Claude Code re-attaches, the tail hermes keeps); for a
simulated compaction, the whole context the pipeline left.

An item is **kept** when its text occurs in what replaced it as a whole word (not inside a longer name) and
**lost** when it does not occur there at all; an item that occurs only inside a longer word is neither (it cannot
be told). ``text`` is always an exact substring of a replaced message's text as the file holds it. Pure Python.
"""
from __future__ import annotations

import re
from collections import Counter
from typing import Any, Callable, Iterable, Iterator

from ..runtime.record import field, record
from .session_events import TextCache, call_output, first_reply, message_text, real_compactions
from ..model.messages import block_type, blocks

PATH, REQUEST, TOOL, ERROR, IDENTIFIER, NUMBER = "path", "request", "tool", "error", "identifier", "number"
ITEM_KINDS = (REQUEST, PATH, TOOL, ERROR, IDENTIFIER, NUMBER)
CAPS = {REQUEST: 12, PATH: 40, TOOL: 30, ERROR: 12, IDENTIFIER: 20, NUMBER: 10}
REQUEST_CHARS = 160
RESULT_PATHS = 10          # paths only tool results name (a listing, a grep) are the last ones kept
SUMMARY_MARKS = ("This session is being continued from a previous conversation", "[CONTEXT COMPACTION",
                 "<state_snapshot>", "Caveat:", "[Request interrupted")
PATH_RX = re.compile(r"(?<![\w/.~-])(?:~|\.{1,2})?/?(?:[\w.-]+/)+[\w.-]*\w\.[A-Za-z0-9]{1,8}(?![\w/])")
IDENT_RX = re.compile(r"(?<![\w./-])[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*(?![\w/-])")
NUMBER_RX = re.compile(r"(?<![\w.,:/-])\d{3,}(?![\w.,:/-])")
# the characters a path match (and the characters its look-arounds test) can be made of: a match lies inside one run
# of them, and the look-arounds at the run's ends see a character outside it, or none, alike
_NOT_PATH_CHARS = re.compile(r"[^\w./~-]+")
PATH_KEYS = ("file_path", "path", "notebook_path", "filename", "file", "target_file")


@record(frozen=True)
class Item:
    kind: str
    text: str
    last: bool = False          # the last request before the compaction

    def to_json(self) -> dict:
        d: dict[str, Any] = {"kind": self.kind, "text": self.text}
        if self.last:
            d["last"] = True
        return d


@record
class Retention:
    kind: str                    # "real" | "simulated"
    call: int | None
    segment: int
    kept: list[Item] = field(default_factory=list)
    lost: list[Item] = field(default_factory=list)
    # (the text that replaced the context is judged against, not kept: a snipping replay's 50,000 compactions at
    # 100k messages each held its whole output context's text, half a gigabyte in the window)
    replaced_messages: int = 0
    summary: str = ""            # the summary itself, when one was made

    def to_json(self) -> dict:
        return {"kind": self.kind, "call": self.call, "segment": self.segment,
                "replaced_messages": self.replaced_messages,
                "kept": [i.to_json() for i in self.kept], "lost": [i.to_json() for i in self.lost]}

    def last_request(self) -> tuple[Item, bool] | None:
        """The user's last request before the compaction and whether it was kept."""
        for i in self.kept:
            if i.last:
                return i, True
        for i in self.lost:
            if i.last:
                return i, False
        return None


# ------------------------------------------------------------------ the items of a context
def _user_texts(m: Any) -> list[str]:
    if not isinstance(m, dict) or m.get("role") != "user":
        return []
    c = m.get("content")
    if isinstance(c, str):
        return [c]
    return [b["text"] for b in blocks(m) if block_type(b) == "text" and isinstance(b.get("text"), str)]


def request_line(text: str) -> str | None:
    """What a user message asks, as a substring of it: its first non-empty line, cut at a word under
    ``REQUEST_CHARS``; None for what the user did not type (summaries, command output, reminders)."""
    s = text.strip()
    if not s or s.startswith("<") or any(s.startswith(p) for p in SUMMARY_MARKS):
        return None
    line = s.splitlines()[0].strip()
    if len(line) > REQUEST_CHARS:
        cut = line.rfind(" ", 0, REQUEST_CHARS)
        line = line[:cut if cut > 40 else REQUEST_CHARS].rstrip()
    return line if len(line) >= 3 else None


def _tool_inputs(m: Any) -> Iterator[tuple[str, Any]]:
    """(tool name, input) of each tool call of a message, in both dialects."""
    if not isinstance(m, dict) or m.get("role") != "assistant":
        return
    for b in blocks(m):
        if block_type(b) == "tool_use":
            yield str(b.get("name") or ""), b.get("input")
    for call in m.get("tool_calls") or []:
        if isinstance(call, dict):
            fn = call.get("function")
            if isinstance(fn, dict):
                yield str(fn.get("name") or ""), fn.get("arguments")


def _errors(m: Any) -> Iterator[str]:
    """The text of each failed tool result of a message."""
    if not isinstance(m, dict):
        return
    if m.get("role") == "tool":
        c = m.get("content")
        if isinstance(c, str) and re.match(r"\s*(\{\s*\"error\"|error\b|Error\b|Traceback)", c):
            yield c
        return
    for b in blocks(m):
        if block_type(b) == "tool_result" and b.get("is_error") is True:
            yield message_text(b.get("content"))


def _first_line(text: str, n: int = 120) -> str | None:
    for line in text.splitlines():
        line = line.strip()
        if len(line) >= 4:
            if len(line) > n:
                cut = line.rfind(" ", 0, n)
                line = line[:cut if cut > 20 else n].rstrip()
            return line
    return None


def _said(m: Any) -> list[str]:
    """What the user and the model wrote, and the tool inputs: where paths in text and recurring names are
    looked for (not tool results, whose file contents would drown them)."""
    out = list(_user_texts(m))
    if isinstance(m, dict) and m.get("role") == "assistant":
        c = m.get("content")
        if isinstance(c, str):
            out.append(c)
        out += [b["text"] for b in blocks(m) if block_type(b) == "text" and isinstance(b.get("text"), str)]
        out += [message_text(v) for _, v in _tool_inputs(m)]
    return out


def _paths_in(value: Any) -> Iterator[str]:
    strings: list = []
    if isinstance(value, dict):
        strings = [v for k, v in value.items() if k in PATH_KEYS and isinstance(v, str)]
    for s in strings:
        s = s.strip()
        if s and "\n" not in s and len(s) < 300 and ("/" in s or "." in s):
            yield s
    for s in _flat(value):
        yield from paths_in_text(s)


def paths_in_text(s: str) -> list[str]:
    """``PATH_RX.findall(s)``, the same list, found faster: only in the runs of path characters that hold a ``/`` (a
    path has one). The regex tried its look-behind and ``[\\w.-]+/`` at every character and backtracked through
    every word: a tool result without a slash (most file contents) cost as much as one full of paths."""
    if "/" not in s:
        return []
    out: list[str] = []
    for run in _NOT_PATH_CHARS.split(s):
        if "/" in run:
            out += PATH_RX.findall(run)
    return out


def _flat(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    return message_text(value).split("\n") if value is not None else []


def _add(found: dict, kind: str, text: str | None) -> None:
    """Keep the latest position of each item (a dict keeps insertion order: re-added items move last)."""
    if text:
        key = (kind, text)
        found.pop(key, None)
        found[key] = True


def _result_texts(m: Any) -> list[str]:
    """The tool results of a message (a tool message's content, tool_result blocks)."""
    if not isinstance(m, dict):
        return []
    if m.get("role") == "tool":
        return [message_text(m.get("content"))]
    return [message_text(b.get("content")) for b in blocks(m) if block_type(b) == "tool_result"]


def _scan(m: Any, found: dict, words: Counter, numbers: Counter, seen: dict) -> None:
    for t in _user_texts(m):
        _add(found, REQUEST, request_line(t))
    for name, inp in _tool_inputs(m):
        _add(found, TOOL, name or None)
        for p in _paths_in(inp):
            _add(found, PATH, p)
    for e in _errors(m):
        _add(found, ERROR, _first_line(e))
    for t in _result_texts(m):
        for p in paths_in_text(t):
            _add(seen, PATH, p)
    for s in _said(m):
        for p in paths_in_text(s):
            _add(found, PATH, p)
        for w in IDENT_RX.findall(s):
            if len(w) >= 4 and ("_" in w.strip("_") or "." in w or re.search(r"[a-z][A-Z]", w)):
                words[w] += 1
        for n in NUMBER_RX.findall(s):
            numbers[n] += 1


def context_items(messages: Iterable) -> list[Item]:
    """The items of ``messages`` (see the module doc), each once, the most recent last within its kind."""
    found: dict = {}
    seen: dict = {}            # paths only tool results mention: after the others, while there is room
    words: Counter = Counter()
    numbers: Counter = Counter()
    for m in messages:
        _scan(m, found, words, numbers, seen)
    by_kind: dict[str, list[str]] = {k: [] for k in ITEM_KINDS}
    for kind, text in found:
        by_kind[kind].append(text)
    named = set(by_kind[PATH])
    extra = [t for _, t in seen if t not in named][-RESULT_PATHS:]
    by_kind[PATH] = by_kind[PATH][-(CAPS[PATH] - len(extra)):] + extra
    taken = set(by_kind[TOOL])
    paths = by_kind[PATH]
    by_kind[IDENTIFIER] = [w for w, n in words.most_common() if n >= 2 and w not in taken
                           and not any(p.endswith(w) for p in paths)][:CAPS[IDENTIFIER]]
    by_kind[NUMBER] = [w for w, n in numbers.most_common() if n >= 2][:CAPS[NUMBER]]
    out: list[Item] = []
    for kind in ITEM_KINDS:
        texts = by_kind[kind][-CAPS[kind]:]
        for i, t in enumerate(texts):
            out.append(Item(kind, t, last=kind == REQUEST and i == len(texts) - 1))
    return out


def _word_in(text: str, hay: str) -> bool:
    """``text`` occurs in ``hay`` not inside a longer word or path: ``(?<![\\w/.-])TEXT(?![\\w/-])`` searched, found
    as the regex would find it (``\\w`` is ``str.isalnum()`` or ``_``, as ``re`` reads it in a str) but with
    ``str.find``, in C, and the characters either side of each occurrence looked at: the regex engine tried the
    look-behind at every character of the replacement (about 90 KB at every call of a snipping replay)."""
    if not text:
        return re.search(r"(?<![\w/.-])(?![\w/-])", hay) is not None
    n, end = len(text), len(hay)
    p = hay.find(text)
    while p >= 0:
        if p:
            c = hay[p - 1]
            if c.isalnum() or c in "_/.-":
                p = hay.find(text, p + 1)
                continue
        q = p + n
        if q == end:
            return True
        c = hay[q]
        if not (c.isalnum() or c in "_/-"):
            return True
        p = hay.find(text, p + 1)
    return False


class Joined:
    """Texts joined with newlines, searched as ``x in joined`` without the one string: held as chunks of at least
    ``chunk`` characters each (the last may be shorter), so each search is a short call in C. The events' replay
    runs in a worker beside the window; searching the joined text of 100k replaced messages (a 100 MB string, and
    building it) held the interpreter lock for a tenth of a second at a time, and the window froze meanwhile."""

    CHUNK = 1 << 18

    def __init__(self, texts: Iterable[str], chunk: int = CHUNK):
        self.chunk = chunk
        self.chunks: list[str] = []
        part: list[str] = []
        size = 0
        for t in texts:
            part.append(t)
            size += len(t) + 1
            if size >= chunk:
                self.chunks.append("\n".join(part))
                part, size = [], 0
        if part:
            self.chunks.append("\n".join(part))

    def __contains__(self, x: str) -> bool:
        chunks = self.chunks
        if len(x) > self.chunk:              # (longer than a chunk: it may span several, the whole text is searched)
            return x in "\n".join(chunks)
        k = len(x) - 1
        for i, c in enumerate(chunks):
            if x in c:
                return True
            # across the newline between this chunk and the next (each at least ``chunk`` long, but the last)
            if i + 1 < len(chunks) and x in c[len(c) - k:] + "\n" + chunks[i + 1][:k]:
                return True
        return not chunks and x == ""


def judge(items: list[Item], replaced: "str | Joined", replacement: str) -> tuple[list[Item], list[Item]]:
    """(kept, lost): kept when the item's text is a whole word of ``replacement``, lost when it is not in it at
    all; only items whose text is in ``replaced`` are judged."""
    kept, lost = [], []
    for it in items:
        if it.text not in replaced:
            continue
        if _word_in(it.text, replacement):
            kept.append(it)
        elif it.text not in replacement:
            lost.append(it)
    return kept, lost


# ------------------------------------------------------------------ real and simulated compactions
def _real(conv: Any, text: TextCache) -> Iterator[Retention]:
    from ..model.contexts import segments
    segs = segments(conv)
    starts = [s.start for s in segs] + [len(conv.messages)]
    for rc in real_compactions(conv):
        k = rc.segment
        prev = conv.messages[starts[k - 1]:starts[k]]
        seg = segs[k]
        first_call = first_reply(conv, seg)
        after = conv.messages[seg.start:first_call]
        after_texts = {text(m) for m in after}
        left = [m for m in prev if text(m) not in after_texts]
        yield _retention("real", rc.call, k, left, after, text, rc.summary)


def _retention(kind: str, call: int | None, segment: int, left: list, after: list, text: TextCache,
               summary: str = "", after_texts: list[str] | None = None) -> Retention:
    """``after_texts``: ``text`` of each message of ``after``, when the caller has them."""
    replaced = Joined(text.many(left))
    replacement = "\n".join(text.many(after) if after_texts is None else after_texts)
    kept, lost = judge(context_items(left), replaced, replacement)
    return Retention(kind, call, segment, kept, lost, len(left), summary)


def _simulated(conv: Any, result: Any, text: TextCache) -> Iterator[Retention]:
    from .session_events import call_segment
    from ..model.text import readable_message_text
    for c in result.calls:
        if not c.compacted or c.index >= len(result.inputs):
            continue
        before = result.inputs[c.index]
        out = call_output(result, c.index)
        kept_ids = set(map(id, out))
        out_list = text.many(out)                     # (the replacement's texts too)
        out_texts = set(out_list)
        left = [m for m in before if id(m) not in kept_ids and text(m) not in out_texts]
        summary = ""
        if c.summaries:
            before_ids = set(map(id, before))         # (once: made per message, it was quadratic in the context)
            summary = "\n".join(readable_message_text(m) for m in out if id(m) not in before_ids)
        yield _retention("simulated", c.index, call_segment(conv, c.index), left, out, text, summary, out_list)


def retention(conv: Any, result: Any = None, pause: Callable[[], Any] | None = None) -> list[Retention]:
    """Every real compaction's retention, then (with ``result``, a replay kept with its inputs) every simulated
    one's, in call order. ``pause()``, when given, is called before every 64th simulated compaction (a courteous
    task's ``cancel.is_set``: it waits while the user or a foreground run is busy); when it returns true the
    rest is left out (the task was cancelled)."""
    text = TextCache()
    out = list(_real(conv, text))
    if result is not None:
        for k, r in enumerate(_simulated(conv, result, text)):
            if pause is not None and k % 64 == 0 and pause():
                break
            out.append(r)
    big = 1 << 62
    out.sort(key=lambda r: (big if r.call is None else r.call, r.kind != "real"))
    return out


def retention_json(found: list[Retention]) -> dict:
    return {"compactions": [r.to_json() for r in found]}
