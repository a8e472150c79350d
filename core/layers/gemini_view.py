"""The Gemini CLI's view of a history (``packages/core``: the contents it holds, ``estimateTokenCountSync``), and the
scan of a history that the check and the tool output masking read (``HistoryScan``), kept per list and resumed from
snapshots. Split from ``gemini_cli`` (the layers), which re-exports what it uses."""
from __future__ import annotations

import json
import math
from bisect import bisect_left
from operator import itemgetter
from typing import Any

from ..pipeline.facts import ObjFact
from ..runtime.listmemo import ListMemo
from .gemini_json import js_len

MASKED_TAG = "tool_output_masked"
_UNSET = object()                       # a name the log saw unset
EXEMPT_TOOLS = frozenset({"activate_skill", "ask_user", "enter_plan_mode", "exit_plan_mode"})


def text_of(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content] if content else []
    if isinstance(content, list):
        return [str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type", "text") == "text"]
    return [] if content is None else [str(content)]


def _args(call: dict) -> Any:
    raw = (call.get("function") or {}).get("arguments")
    try:
        return json.loads(raw) if isinstance(raw, str) else (raw or {})
    except ValueError:
        return raw


def result_text(content: Any) -> str:
    """A tool result's text (a string, or its text blocks joined)."""
    return content if isinstance(content, str) else "\n".join(text_of(content))


def _block_part(b: Any, names: dict) -> dict:
    if not isinstance(b, dict):
        return {"text": str(b)}
    t = b.get("type", "text")
    if t == "text":
        return {"text": str(b.get("text", ""))}
    if t == "tool_use":
        names[str(b.get("id"))] = str(b.get("name") or "")
        return {"functionCall": {"id": str(b.get("id")), "name": b.get("name"), "args": b.get("input") or {}}}
    if t == "tool_result":
        cid = str(b.get("tool_use_id") or "")
        return {"functionResponse": {"id": cid, "name": names.get(cid, ""),
                                     "response": {"output": result_text(b.get("content"))}}}
    return {k: v for k, v in b.items() if k != "type"} or {"text": ""}


def message_parts(m: dict, names: dict) -> tuple[str, list]:
    """(role, parts) of one message (either dialect) in the Gemini API's shape; ``names``: call id -> name."""
    role = m.get("role")
    if role == "tool":
        cid = str(m.get("tool_call_id") or "")
        return "user", [{"functionResponse": {"id": cid, "name": names.get(cid, ""),
                                              "response": {"output": result_text(m.get("content"))}}}]
    c = m.get("content")
    parts = [_block_part(b, names) for b in c] if isinstance(c, list) else ([{"text": c}] if c else [])
    if role == "assistant":
        for call in m.get("tool_calls") or ():
            if isinstance(call, dict):
                fn = call.get("function") or {}
                names[str(call.get("id"))] = str(fn.get("name") or "")
                parts.append({"functionCall": {"id": str(call.get("id")), "name": fn.get("name"),
                                               "args": _args(call)}})
        return "model", parts
    return ("user" if role != "system" else "system"), parts


def to_contents(messages: list) -> tuple[list, list]:
    """The history as the CLI holds it: contents of role user/model, consecutive messages of one role in one
    content (the request merges them so); with, per content, the message indices it holds."""
    contents: list = []
    owners: list = []
    names: dict = {}
    for i, m in enumerate(messages):
        if not isinstance(m, dict):
            continue
        role, parts = message_parts(m, names)
        if role == "system":
            continue
        if contents and contents[-1]["role"] == role:
            contents[-1]["parts"].extend(parts)
            owners[-1].append(i)
        else:
            contents.append({"role": role, "parts": list(parts)})
            owners.append([i])
    return contents, owners


def text_tokens(text: str) -> float:
    """The CLI's estimate of a text: a quarter token per ASCII character, 1.5 per other (chars/4 past 100k)."""
    if len(text) > 100_000:
        return len(text) / 4
    ascii_n = len(text.encode("ascii", "ignore"))        # the chars up to U+007F
    return ascii_n / 4 + (len(text) - ascii_n) * 1.5


def parts_tokens(parts: list) -> int:
    """``estimateTokenCountSync`` over parts: texts as above, a function response's name and JSON by
    chars/4, anything else its JSON by chars/4."""
    total = 0.0
    for p in parts:
        total += part_tokens(p)
    return math.floor(total)


def part_tokens(p: dict) -> float:
    """What ``parts_tokens`` adds for one part."""
    if isinstance(p.get("text"), str):
        return text_tokens(p["text"])
    if isinstance(p.get("functionResponse"), dict):
        fr = p["functionResponse"]
        resp = fr.get("response")
        return len(str(fr.get("name") or "")) / 4 + (len(resp) if isinstance(resp, str) else js_len(resp)) / 4
    return js_len(p) / 4


def estimate_from_scratch(messages: list) -> int:
    """The CLI's estimate of a history (``estimateTokenCountSync`` over all its parts), from its contents."""
    contents, _ = to_contents(messages)
    return parts_tokens([p for c in contents for p in c["parts"]])


class _Recorder(dict):
    """The names ``message_parts`` reads and sets for one message (it reads each function response's name)."""
    __slots__ = ("read",)

    def __init__(self):
        super().__init__()
        self.read: list = []

    def get(self, key, default=None):        # (message_parts reads names.get(cid, ""))
        self.read.append(key)
        return default


def _make_entry(m: Any) -> tuple | bool:
    """What one message adds to ``estimate`` (see ``_entry``), False when it is counted the long way."""
    rec = _Recorder()
    role, parts = message_parts(m, rec)
    if rec and rec.read:
        return False
    return math.fsum(part_tokens(p) for p in parts), tuple(rec.read), tuple(rec.items()), role == "system"


# kept in the table of per-message facts (core.pipeline.facts: bounded, and let go of by a fleet worker)
_ENTRIES: ObjFact = ObjFact("gemini_estimate_share", _make_entry)


def _entry(m: dict) -> tuple | None:
    """What one message adds to ``estimate``: (the tokens of its parts with every function response's name left
    empty, the call ids whose names' lengths / 4 come on top, the names it sets, whether it is a system message);
    None when it both sets names and reads them (counted the long way). Every part's figure is a multiple of a
    quarter, so float sums of them are exact and any grouping gives the same total."""
    return _ENTRIES.get(m) or None


def estimate(messages: list) -> int:
    """The CLI's estimate of a history (``estimateTokenCountSync`` over all its parts): ``estimate_from_scratch``,
    each message's share worked out once per message object (the checks of a compression ask it several times
    of lists that share their messages)."""
    names: dict = {}
    total = 0.0
    msgs = [m for m in messages if isinstance(m, dict)]
    for m, e in zip(msgs, _ENTRIES.values(msgs)):        # (the table read in passes in C)
        if not e:
            role, parts = message_parts(m, names)
            if role != "system":
                total += math.fsum(part_tokens(p) for p in parts)
            continue
        fixed, read, sets, system = e
        if not system:
            total += fixed
            for cid in read:
                total += len(names.get(cid, "")) / 4
        if sets:
            names.update(sets)
    return math.floor(total)


def responses(m: Any) -> list[tuple[int | None, str]]:
    """The function responses one message holds, newest first: (block index, or None for an OpenAI tool
    message; its text)."""
    if not isinstance(m, dict):
        return []
    if m.get("role") == "tool":
        return [(None, result_text(m.get("content")))]
    c = m.get("content")
    if m.get("role") != "user" or not isinstance(c, list):
        return []
    return [(j, result_text(b.get("content"))) for j, b in reversed(list(enumerate(c)))
            if isinstance(b, dict) and b.get("type") == "tool_result"]



class HistoryScan:
    """What the CLI's view of a history ``messages[:covered]`` holds for the check and the masking, made message by
    message in order (so a list that extends one scanned costs its new messages only): the call names as
    ``to_contents`` knows them, the running total of ``estimate`` (the same additions in the same order), and the
    tool outputs the masking weighs (per message, with prefix sums of their tokens and counts). The masking looks
    names up in the whole history: a name defined after an output that looked it up (never, in a real session)
    makes the scan ``stale``, and the caller computes from scratch.

    A list that differs from a scanned one past its first messages (the masking replaced an old output) resumes
    from the scan as it stood after their shared prefix (``rolled_back``): each position's total is kept, and
    each name a message set (and what it replaced) is logged, so the scan is undone to any position."""
    __slots__ = ("names", "total", "sums", "counts", "outputs", "looked", "stale", "totals", "log")

    def __init__(self):
        self.names: dict = {}
        self.total = 0.0
        self.sums, self.counts = [0], [0]
        self.outputs: list = []          # per message: its weighed outputs (i, j, name, text, tokens, tid), or ()
        self.looked: dict = {}           # call id -> the name an output was weighed with
        self.stale = False
        self.totals = [0.0]              # the total after each position
        self.log: list = []              # (position, looked: else names, call id, the value before, or _UNSET)

    def copy(self) -> "HistoryScan":
        c = HistoryScan()
        c.names, c.total, c.sums, c.counts = dict(self.names), self.total, list(self.sums), list(self.counts)
        c.outputs, c.looked, c.stale = list(self.outputs), dict(self.looked), self.stale
        c.totals, c.log = list(self.totals), list(self.log)
        return c

    def rolled_back(self, k: int) -> "HistoryScan":
        """A new scan of the first ``k`` messages alone (``k`` at most what this one covers)."""
        c = HistoryScan()
        at = bisect_left(self.log, k, key=itemgetter(0))
        c.names, c.looked = dict(self.names), dict(self.looked)
        for _, looked, cid, old in reversed(self.log[at:]):
            table = c.looked if looked else c.names
            if old is _UNSET:
                del table[cid]
            else:
                table[cid] = old
        c.sums, c.counts, c.outputs = self.sums[:k + 1], self.counts[:k + 1], self.outputs[:k]
        c.totals, c.log, c.total, c.stale = self.totals[:k + 1], self.log[:at], self.totals[k], self.stale
        return c

    def estimate(self) -> int:
        return math.floor(self.total)

    def add(self, i: int, m: Any, facts: tuple | None = None) -> None:
        """Scan message ``i``, ``m`` (``facts``: its ``_scan_facts``, when read already)."""
        if not isinstance(m, dict):
            self.sums.append(self.sums[-1])
            self.counts.append(self.counts[-1])
            self.outputs.append(())
            self.totals.append(self.total)
            return
        e, weighable, ids = facts if facts is not None else _scan_facts(m)
        names, looked, log = self.names, self.looked, self.log
        for cid in ids:
            log.append((i, False, cid, names.get(cid, _UNSET)))
        if e is None:
            role, parts = message_parts(m, names)
            if role != "system":
                for p in parts:
                    self.total += part_tokens(p)
        else:
            fixed, read, sets, system = e
            if not system:                  # (quarters: exact in any grouping)
                self.total += (fixed + sum(len(names.get(cid, "")) for cid in read) / 4) if read else fixed
            if sets:
                names.update(sets)
        for cid in ids:
            if cid in looked and looked[cid] != names.get(cid, ""):
                self.stale = True
        self.totals.append(self.total)
        if not weighable:
            self.outputs.append(())
            self.sums.append(self.sums[-1])
            self.counts.append(self.counts[-1])
            return
        weighed = []
        for j, text, tid, size in weighable:
            key = str(tid)
            log.append((i, True, key, looked.get(key, _UNSET)))
            name = looked[key] = names.get(key, "")
            if name in EXEMPT_TOOLS or f"<{MASKED_TAG}" in text:
                continue
            # parts_tokens of the response as the masking sees it: (its name's length + its JSON's) / 4, floored
            weighed.append((i, j, name, text, math.floor(len(name) / 4 + size / 4), tid))
        self.outputs.append(weighed or ())
        self.sums.append(self.sums[-1] + sum(w[4] for w in weighed))
        self.counts.append(self.counts[-1] + len(weighed))


def _make_weighable(m: dict) -> tuple:
    return tuple((j, text, m.get("tool_call_id") if j is None else m["content"][j].get("tool_use_id"),
                  js_len({"output": text})) for j, text in responses(m))


# ``responses(m)`` with each one's call id and the length of ``{"output": text}``'s JSON, once per message
_WEIGHABLE: ObjFact = ObjFact("gemini_weighable", _make_weighable)


def _weighable(m: dict) -> tuple:
    return _WEIGHABLE.get(m)


def _make_scan_facts(m: Any) -> tuple:
    return _entry(m), _weighable(m), tuple(dict.fromkeys(defined_ids(m)))


# what ``HistoryScan.add`` reads of one message: its ``_entry``, ``_weighable`` and ``defined_ids`` (once each)
_SCAN_FACTS: ObjFact = ObjFact("gemini_scan_facts", _make_scan_facts)


def _scan_facts(m: dict) -> tuple:
    return _SCAN_FACTS.get(m)


def defined_ids(m: dict) -> list[str]:
    """The call ids whose names ``message_parts`` records from ``m``."""
    if m.get("role") == "tool":
        return []
    c = m.get("content")
    out = [str(b.get("id")) for b in c if isinstance(b, dict) and b.get("type", "text") == "tool_use"] \
        if isinstance(c, list) else []
    if m.get("role") == "assistant":
        out += [str(call.get("id")) for call in m.get("tool_calls") or () if isinstance(call, dict)]
    return out


_SCANS = ListMemo()


def history_scan(messages: list, h: int, owner: Any = None) -> HistoryScan:
    """The scan of ``messages[:h]``: carried on from the scan of a list this one extends or shares a prefix with
    (``ListMemo``; undone to that prefix when it covered more), else made from its start; remembered per ``owner``
    (the conversation's metadata)."""
    st, k, same = _SCANS.find(messages, owner)
    if st is None or st.stale:
        st, k, same = HistoryScan(), 0, True
    k = min(k, h)
    made = k < h
    if k < len(st.sums) - 1:
        st, made = st.rolled_back(k), True
    elif not same and k < h:
        st = st.copy()
    if h - k > 8:                       # (the table read in passes in C)
        new = messages[k:h]
        known = _SCAN_FACTS.values([m for m in new if isinstance(m, dict)])
        it = iter(known)
        for i, m in enumerate(new, k):
            st.add(i, m, next(it) if isinstance(m, dict) else None)
    else:
        for i in range(k, h):
            st.add(i, messages[i])
    if made and not st.stale:
        _SCANS.store(messages, h, st)
    return st


# ------------------------------------------------------------------ the split point's view, per message
def _make_share(m: Any) -> tuple | bool:
    """What one message adds to the contents ``findCompressSplitPoint`` sizes: (its role, the JSON length of its
    parts with every function response's name left empty, how many parts, the call ids whose names come on top, the
    names it sets, whether a part is a function response, whether one is a function call); False when it both
    sets names and reads them (counted the long way)."""
    rec = _Recorder()
    role, parts = message_parts(m, rec)
    if rec and rec.read:
        return False
    return (role, sum(map(js_len, parts)), len(parts), tuple(rec.read), tuple(rec.items()),
            any("functionResponse" in p for p in parts), any("functionCall" in p for p in parts))


_SHARES: ObjFact = ObjFact("gemini_split_share", _make_share)
_OPEN = {"user": js_len({"role": "user", "parts": []}), "model": js_len({"role": "model", "parts": []})}


def _share(m: dict, e: tuple | bool, names: dict) -> tuple:
    """(role, JSON length of the parts, parts, has a function response, has a function call) of one message in
    the history so far (``e``: its ``_make_share``; ``names``: the call names set before it, updated)."""
    if not isinstance(e, tuple):
        role, parts = message_parts(m, names)
        return (role, sum(map(js_len, parts)), len(parts), any("functionResponse" in p for p in parts),
                any("functionCall" in p for p in parts))
    role, size, n, read, sets, fr, fc = e
    for cid in read:                    # the name's JSON string in place of "" (its quotes counted once)
        size += js_len(names.get(cid, "")) - 2
    if sets:
        names.update(sets)
    return role, size, n, fr, fc


def split_shape(messages: list, h: int) -> tuple[list, list, bool, list]:
    """What ``split_point`` reads of ``to_contents(messages[:h])``, from per-message figures: (each content's JSON
    length, whether it is a user text content (no function response), whether the last one is a model answer
    calling no function, each content's first message)."""
    names: dict = {}
    sizes: list[int] = []
    parts: list[int] = []
    texts: list[bool] = []
    firsts: list[int] = []
    calls = False
    last = None
    at = [i for i in range(h) if isinstance(messages[i], dict)]
    for i, e in zip(at, _SHARES.values([messages[i] for i in at])):     # (the table read in passes in C)
        role, size, n, fr, fc = _share(messages[i], e, names)
        if role == "system":
            continue
        if role == last:
            sizes[-1] += size
            parts[-1] += n
            texts[-1] = texts[-1] and not fr
            calls = calls or fc
        else:
            sizes.append(_OPEN["model" if role == "model" else "user"] + size)
            parts.append(n)
            texts.append(role == "user" and not fr)
            firsts.append(i)
            calls, last = fc, role
    for c, n in enumerate(parts):
        sizes[c] += max(n - 1, 0)       # the commas between parts
    return sizes, texts, bool(sizes) and last == "model" and not calls, firsts
