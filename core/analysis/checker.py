"""API-validity checker: would the Messages API accept this list?

Runs on any message list, in either dialect, and after every layer. Each
finding carries the message (and block) position, a code, and a sentence.
Severity ``error`` = the API would reject the request; ``warning`` = legal but
suspicious (e.g. the last assistant message still waits for its results).
"""
from __future__ import annotations

from bisect import bisect_left
from operator import is_
import threading
from typing import Any, Callable

from ..runtime.record import record, replace
from ..model.messages import KNOWN_BLOCK_TYPES, OPENAI, block_type, blocks, detect_dialect
from ..i18n import english as words
from ..runtime.forget import on_forget
from ..runtime.listmemo import ListMemo


@record(frozen=True)
class Finding:
    """One thing the API checker found: a code, the message (and block) it is in, and words saying what is wrong."""
    code: str
    message: int
    text: str
    block: int | None = None
    severity: str = "error"
    tool_id: str | None = None

    def to_json(self) -> dict:
        d = {"code": self.code, "severity": self.severity, "message": self.message,
             "block": self.block, "text": self.text}
        if self.tool_id is not None:
            d["tool_id"] = self.tool_id
        return d

    def __str__(self) -> str:
        where = f"message {self.message}" + (f", block {self.block}" if self.block is not None else "")
        return f"{self.severity}: {where}: {self.text} [{self.code}]"


def _str_or_none(value):
    """A tool id as a set member or a finding's id: only a string is one (a list or object is not hashable,
    and the API would reject it anyway, see ``_block_fields``)."""
    return value if isinstance(value, str) else None


# block type -> {field: (the types the API takes, their names, required)}
_BLOCK_FIELDS: dict[str, dict] = {
    "text": {"text": ((str,), "a string", True)},
    "tool_use": {"id": ((str,), "a string", True), "name": ((str,), "a string", True),
                 "input": ((dict,), "an object", True)},
    "tool_result": {"tool_use_id": ((str,), "a string", True), "content": ((str, list), "a string or a list", False),
                    "is_error": ((bool,), "true or false", False)},
    "thinking": {"thinking": ((str,), "a string", True)},
    "image": {"source": ((dict,), "an object", True)},
    "document": {"source": ((dict,), "an object", True)},
}


def _kind(value) -> str:
    return "null" if value is None else {dict: "an object", list: "a list", str: "a string", bool: "a boolean",
                                          int: "a number", float: "a number"}.get(type(value), type(value).__name__)


def _block_fields(i: int, bi: int, t: str, b: dict) -> list[Finding]:
    """Fields of a known block that the API would reject: missing, or of the wrong type."""
    out = []
    for name, (types, want, required) in _BLOCK_FIELDS.get(t, {}).items():
        if name not in b:
            if required:
                out.append(Finding("bad_block_field", i, f"{t} block has no {name!r}", bi))
        elif not isinstance(b[name], types) or (bool not in types and isinstance(b[name], bool)):
            out.append(Finding("bad_block_field", i, f"{t} block's {name!r} is {_kind(b[name])}, not {want}", bi,
                               tool_id=_str_or_none(b.get("id") if t == "tool_use" else b.get("tool_use_id"))))
    return out


def _show_id(value) -> str:
    """An id or name as it reads in a sentence (a non-string one is shown short, as JSON would write it)."""
    if isinstance(value, str):
        return value
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _is_empty(content) -> bool:
    if content is None:
        return True
    if isinstance(content, str):
        return content.strip() == ""
    if isinstance(content, list):
        return len(content) == 0
    return False


RESULT_BEFORE_FILE = "result_before_file"
SYSTEM_IN_MESSAGES = "system_in_messages"
BAD_VALUE = "bad_value"          # a value of the wrong type in the file, made well-typed at load


def check(messages: list, dialect: str | None = None, *, before_file=(), pause: Callable[[], Any] | None = None
          ) -> list[Finding]:
    """Findings for one message list. ``before_file``: ids of tool calls made before the file's first
    line (the file is an excerpt of a longer session, see ``known_before_file``): a result answering one
    of them is reported as ``result_before_file`` (a warning that says why), not as an orphan. ``pause``:
    called every ``PAUSE_EVERY`` messages (background work that waits there while the user acts: a list of
    100k messages is ~0.5 s of checking)."""
    dialect = dialect or detect_dialect(messages)
    if dialect == OPENAI:
        return _check_openai(messages, before_file, pause)
    return _check_anthropic(messages, before_file, pause)


PAUSE_EVERY = 2048


def _numbered(messages: list, pause: Callable[[], Any] | None):
    """``enumerate(messages)``, calling ``pause()`` before every ``PAUSE_EVERY``-th message (see ``check``)."""
    if pause is None:
        return enumerate(messages)
    return _paced(messages, pause)


def _paced(messages: list, pause: Callable[[], Any]):
    for start in range(0, len(messages), PAUSE_EVERY):
        pause()
        yield from enumerate(messages[start:start + PAUSE_EVERY], start)


def known_before_file(conversation) -> frozenset:
    """The tool-call ids a conversation answers but whose calls lie before its file's first line."""
    extra = getattr(conversation, "extra", None)
    ids = extra.get("results_before_file") if isinstance(extra, dict) else None
    return frozenset(i for i in ids if isinstance(i, str)) if isinstance(ids, (list, tuple, set, frozenset)) \
        else frozenset()


def _before_file_finding(i: int, bi: int | None, tid) -> Finding:
    return Finding(RESULT_BEFORE_FILE, i, f"tool_result {tid} answers a call made before this file's first line "
                   "(its record's parentUuid is not in the file: the file is an excerpt of a longer session). "
                   "The API saw that call when the session ran, so the request was valid: a warning that this "
                   "excerpt lacks the call, not an error", bi, "warning", tool_id=tid if isinstance(tid, str) else None)


_STR_LIST = (str, list)

# block type -> a test that a dict block of that type, in a message of that role, is one the API takes as it is
# (exactly: no finding of _block_fields, a known type, a tool block in the right role; a str or dict of a subclass
# fails it and goes the general way). What it accepts, the general checks accept too, so only speed changes.
_CLEAN: dict[str, Any] = {
    "text": lambda b, role: b.get("text").__class__ is str,
    "tool_use": lambda b, role: role == "assistant" and b.get("id").__class__ is str
    and b.get("name").__class__ is str and b.get("input").__class__ is dict,
    "tool_result": lambda b, role: role == "user" and b.get("tool_use_id").__class__ is str
    and ("content" not in b or b["content"].__class__ in _STR_LIST)
    and ("is_error" not in b or b["is_error"].__class__ is bool),
    "thinking": lambda b, role: b.get("thinking").__class__ is str,
    "image": lambda b, role: b.get("source").__class__ is dict,
    "document": lambda b, role: b.get("source").__class__ is dict,
    **{t: (lambda b, role: True) for t in KNOWN_BLOCK_TYPES - set(_BLOCK_FIELDS)},
}


# The last lists checked, per dialect (``ListMemo``): a list grown at its end since (a replay's running context,
# checked at every call), or a new one that starts with the same messages, is checked from there on: checking the
# whole context at every call made ``replay --check`` quadratic (a 50,000-message chain: 437 s). Anthropic: a
# message's findings read only it, the messages beside it and whether it is the last, so the per-message findings
# (and their messages) before the shared prefix's last message stand. A background check (``pause``) neither reads
# nor writes them.
_ANTHROPIC_KEPT = ListMemo(8)
on_forget(_ANTHROPIC_KEPT.clear)


def _check_anthropic(messages: list, before_file=(), pause: Callable[[], Any] | None = None) -> list[Finding]:
    out: list[Finding] = []
    n = len(messages)
    if n == 0:
        return [Finding("empty_list", 0, "the message list is empty; the API needs at least one message")]
    k0 = next((k for k, m in enumerate(messages) if not (isinstance(m, dict) and m.get("role") == "system")), 0)
    first = messages[k0]
    if not isinstance(first, dict) or first.get("role") != "user":
        out.append(Finding("first_not_user", k0, "the first message is not from the user"))
    start, body, marks = 0, [], []
    kept, k, _ = _ANTHROPIC_KEPT.find(messages) if pause is None else (None, 0, False)
    if kept is not None and k > 0 and kept[0] == before_file:
        start = k - 1                         # the shared prefix's last message is checked again (its next changed)
        cut = bisect_left(kept[2], start)
        body, marks = kept[1][:cut], kept[2][:cut]
    new = _anthropic_messages(messages, start, before_file, pause)
    body = body + new
    marks = marks + [f.message for f in new]
    if pause is None:
        _ANTHROPIC_KEPT.store(messages, n, (before_file, body, marks))
    return out + body


def _anthropic_messages(messages: list, start: int, before_file, pause: Callable[[], Any] | None) -> list[Finding]:
    """The findings of ``messages[start:]``, each message's read with the messages beside it."""
    out: list[Finding] = []
    n = len(messages)
    for i, m in (_numbered(messages, pause) if not start else enumerate(messages[start:], start)):
        if not isinstance(m, dict):
            out.append(Finding("not_a_message", i, f"message is {words.a(type(m).__name__)}, not an object"))
            continue
        role = m.get("role")
        if role == "system":
            out.append(Finding(SYSTEM_IN_MESSAGES, i, "a system-role message inside messages: newer Claude Code "
                               "clients send one (their agent list) besides the request's system prompt; it is kept "
                               "and measured where it was sent", severity="warning"))
            continue
        if not isinstance(role, str) or role not in ("user", "assistant"):
            out.append(Finding("bad_role", i, f"role {role!r:.60} is not 'user' or 'assistant'"))
        content = m.get("content")
        if _is_empty(content) and not (i == n - 1 and role == "assistant"):
            out.append(Finding("empty_content", i, "content is empty"))
        elif content is not None and not isinstance(content, (str, list)):
            out.append(Finding("bad_content", i, f"content is {words.a(type(content).__name__)}, not a string or list"))
        uses = results = False              # (whether the message holds tool blocks: else it has no pairs to check)
        if isinstance(content, list):
            for bi, b in enumerate(content):
                if b.__class__ is dict:         # the usual block, well-formed: nothing to report (_CLEAN)
                    t = b.get("type")
                    clean = _CLEAN.get(t) if t.__class__ is str else None
                    if clean is not None and clean(b, role):
                        if t == "tool_use":
                            uses = True
                        elif t == "tool_result":
                            results = True
                        continue
                t = block_type(b)
                if t == "tool_use":
                    uses = True
                elif t == "tool_result":
                    results = True
                if isinstance(b, dict) and "type" in b and not isinstance(b["type"], str):
                    out.append(Finding("block_without_type", i, f"block type is {_kind(b['type'])}, not a string",
                                       bi))
                    continue
                if t is None:
                    out.append(Finding("block_without_type", i, "block has no type" if isinstance(b, dict)
                                       else f"block is {words.a(type(b).__name__)}, not an object", bi))
                    continue
                out += _block_fields(i, bi, t, b)
                if t not in KNOWN_BLOCK_TYPES:
                    out.append(Finding("unknown_block", i, f"unknown block type {t!r}", bi))
                elif t == "tool_result" and role != "user":
                    out.append(Finding("tool_result_not_in_user", i, "a tool_result must be in a user message", bi,
                                       tool_id=_str_or_none(b.get("tool_use_id"))))
                elif t == "tool_use" and role != "assistant":
                    out.append(Finding("tool_use_not_in_assistant", i, "a tool_use must be in an assistant message",
                                       bi, tool_id=_str_or_none(b.get("id"))))
        # pairs: every tool_result answers a tool_use of the immediately preceding message
        if results and role == "user" and isinstance(content, list):
            prev = messages[i - 1] if i > 0 else None
            prev_ids = {_str_or_none(b.get("id")) for b in blocks(prev) if block_type(b) == "tool_use"} \
                if isinstance(prev, dict) and prev.get("role") == "assistant" else set()
            for bi, b in enumerate(content):
                if block_type(b) == "tool_result":
                    tid = _str_or_none(b.get("tool_use_id"))
                    if tid is not None and tid not in prev_ids and tid in before_file:
                        out.append(_before_file_finding(i, bi, tid))
                    elif tid is None or tid not in prev_ids:
                        out.append(Finding("orphan_tool_result", i,
                                           f"tool_result {_show_id(b.get('tool_use_id'))} has no tool_use in the "
                                           "message before it", bi, tool_id=tid))
        if uses and role == "assistant" and isinstance(content, list):
            nxt = messages[i + 1] if i + 1 < n else None
            answered = {_str_or_none(b.get("tool_use_id")) for b in blocks(nxt) if block_type(b) == "tool_result"} \
                if isinstance(nxt, dict) and nxt.get("role") == "user" else set()
            for bi, b in enumerate(content):
                tid = _str_or_none(b.get("id")) if block_type(b) == "tool_use" else ""
                if block_type(b) == "tool_use" and (tid is None or tid not in answered):
                    last = i == n - 1
                    out.append(Finding("unanswered_tool_use", i,
                                       f"tool_use {_show_id(b.get('id'))} ({_show_id(b.get('name'))}) "
                                       + ("waits for its result (last message)" if last
                                          else "has no tool_result in the next message"),
                                       bi, "warning" if last else "error", tool_id=tid))
    return out


# a list is checked in chunks of this many messages, each chunk's findings kept by its messages, its place and
# the calls open before it (``_OPENAI_CHUNKS``): a parameter change re-checking a re-run layer's list of 100k
# messages checks only the chunks after the first message it changed (a list of one chunk or less is not kept: the
# events' replay checks hundreds of short contexts, which would push a long list's chunks out)
CHECK_CHUNK = PAUSE_EVERY
_OPENAI_CHUNKS: dict = {}           # (start, id of its first message, length) -> (chunk, entry, before_file, out, exit)
_OPENAI_KEPT = 256
_OPENAI_LOCK = threading.Lock()
on_forget(_OPENAI_CHUNKS.clear)


# OpenAI: the scan's findings and its state after all of a list's messages (the calls still open), for a list that
# starts with all of them
_OPENAI_KEPT_LISTS = ListMemo(8)
on_forget(_OPENAI_KEPT_LISTS.clear)


def _check_openai(messages: list, before_file=(), pause: Callable[[], Any] | None = None) -> list[Finding]:
    out: list[Finding] = []
    if not messages:
        return [Finding("empty_list", 0, "the message list is empty")]
    state: tuple = (False, ())           # (a non-system message seen, the open calls as (id, (message, call)))
    kept, k, _ = _OPENAI_KEPT_LISTS.find(messages) if pause is None else (None, 0, False)
    if kept is not None and k == kept[1] and kept[0] == before_file:
        found, state = _openai_scan(messages[k:], k, kept[3], before_file)
        out = kept[2] + found
    elif len(messages) <= CHECK_CHUNK:   # one chunk: not kept by its messages (see CHECK_CHUNK)
        if pause is not None:
            pause()
        out, state = _openai_scan(messages, 0, state, before_file)
    else:
        for start in range(0, len(messages), CHECK_CHUNK):
            if pause is not None:
                pause()
            found, state = _openai_chunk(messages[start:start + CHECK_CHUNK], start, state, before_file)
            out += found
    if pause is None:
        _OPENAI_KEPT_LISTS.store(messages, len(messages), (before_file, len(messages), out, state))
    return out + _still_open(state)


def _still_open(state: tuple) -> list[Finding]:
    """The calls still open after the last message (``state``: the scan's after it)."""
    return [Finding("unanswered_tool_use", mi, f"tool call {tid} waits for its result (last message)", ci,
                    "warning", tool_id=tid) for tid, (mi, ci) in state[1]]


def _openai_chunk(chunk: list, start: int, entry: tuple, before_file) -> tuple[list, tuple]:
    """(findings, state after) of ``chunk``, the messages from index ``start``, entered in state ``entry``: found
    when the same messages were checked at the same place from the same state, else checked."""
    key = (start, id(chunk[0]), len(chunk))
    e = _OPENAI_CHUNKS.get(key)
    if e is not None and e[1] == entry and (e[2] is before_file or e[2] == before_file) \
            and all(map(is_, e[0], chunk)):
        return e[3], e[4]
    found, after = _openai_scan(chunk, start, entry, before_file)
    with _OPENAI_LOCK:
        _OPENAI_CHUNKS.pop(key, None)
        while len(_OPENAI_CHUNKS) >= _OPENAI_KEPT:
            _OPENAI_CHUNKS.pop(next(iter(_OPENAI_CHUNKS)), None)
        _OPENAI_CHUNKS[key] = (chunk, entry, before_file, found, after)
    return found, after


def _openai_scan(chunk: list, start: int, entry: tuple, before_file) -> tuple[list, tuple]:  # noqa: C901
    """The OpenAI dialect's checks of ``chunk`` (see ``_openai_chunk``)."""
    out: list[Finding] = []
    seen_non_system = entry[0]
    open_calls: dict[str, tuple[int, int]] = dict(entry[1])
    for i, m in enumerate(chunk, start):
        if not isinstance(m, dict):
            out.append(Finding("not_a_message", i, f"message is {words.a(type(m).__name__)}, not an object"))
            continue
        role = m.get("role")
        if not isinstance(role, str) or role not in ("system", "developer", "user", "assistant", "tool"):
            out.append(Finding("bad_role", i, f"unknown role {_show_id(role) if isinstance(role, str) else role!r}"))
            role = None
        if role in ("system", "developer"):
            continue
        if not seen_non_system:
            seen_non_system = True
            if role != "user":
                out.append(Finding("first_not_user", i, "the first non-system message is not from the user",
                                   severity="warning"))
        if role == "tool":
            tid = _str_or_none(m.get("tool_call_id"))
            if tid is not None and tid not in open_calls and tid in before_file:
                out.append(_before_file_finding(i, None, tid))
            elif tid is None or tid not in open_calls:
                out.append(Finding("orphan_tool_result", i, f"tool message {_show_id(m.get('tool_call_id'))} "
                                   "answers no pending tool call", tool_id=tid))
            else:
                open_calls.pop(tid)
            continue
        # any non-tool message closes the previous assistant's calls
        for tid, (mi, ci) in open_calls.items():
            out.append(Finding("unanswered_tool_use", mi, f"tool call {tid} has no tool message", ci, tool_id=tid))
        open_calls = {}
        if role == "assistant":
            calls = m.get("tool_calls") or []
            if not isinstance(calls, list):
                out.append(Finding("bad_tool_calls", i, f"tool_calls is {_kind(calls)}, not a list"))
                calls = []
            for ci, c in enumerate(calls):
                if isinstance(c, dict) and isinstance(c.get("id"), str):
                    open_calls[c["id"]] = (i, ci)
                    fn = c.get("function")
                    if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
                        out.append(Finding("bad_tool_calls", i, f"tool call {c['id']} has no function name", ci,
                                           tool_id=c["id"]))
                else:
                    out.append(Finding("bad_tool_calls", i, "tool call without a string id" if isinstance(c, dict)
                                       else f"tool call is {_kind(c)}, not an object", ci))
            if _is_empty(m.get("content")) and not calls:
                out.append(Finding("empty_content", i, "assistant message has no content and no tool calls",
                                   severity="warning"))
        elif role == "user" and _is_empty(m.get("content")):
            out.append(Finding("empty_content", i, "content is empty"))
    return out, (seen_non_system, tuple(open_calls.items()))


def rejected(findings: list[Finding]) -> bool:
    """True when the API would reject the list."""
    return any(f.severity == "error" for f in findings)


def pair_errors(findings: list[Finding]) -> list[Finding]:
    return [f for f in findings if f.code in ("orphan_tool_result", "unanswered_tool_use") and f.severity == "error"]


def check_conversation(conv, pause: Callable[[], Any] | None = None) -> list[Finding]:
    """Findings per real API context: a conversation split at real compactions (Claude Code
    segments) is checked one segment at a time, since each is what the API saw on its own.
    Message indices stay those of the full history. Values of the wrong type that the load made
    well-typed (``meta.extra["load_fixes"]``) are findings too: the API would reject the file's list. ``pause``:
    see ``check``."""
    before = known_before_file(conv)
    loaded = _load_fixes(conv)
    if len(conv.segments) <= 1:
        return loaded + check(conv.messages, conv.dialect, before_file=before, pause=pause)
    out: list[Finding] = list(loaded)
    starts = list(conv.segments) + [len(conv.messages)]
    for k in range(len(conv.segments)):
        off = starts[k]
        out += [replace(f, message=f.message + off)
                for f in check(conv.messages[off:starts[k + 1]], conv.dialect, before_file=before, pause=pause)]
    return out


# the last maps asked about: [(map, its size, its answer)], newest first. Two at least: a parameter change's run asks
# with the session's map after the events' replay asked with its own (one memo: ~40 ms at 100k messages again)
_FIXES_MEMO: list = []
_FIXES_KEPT = 4


def _forget_fixes() -> None:
    _FIXES_MEMO.clear()


on_forget(_forget_fixes)


def load_fixes_by_identity(meta_by_id: dict) -> dict:
    """id(message) -> what the load changed in it (``meta.extra["load_fixes"]``), for the messages that
    have such notes: from a ``meta_by_identity()`` map (empty when the load changed nothing). The answers
    for the last few maps are kept: a replay asks once per model call with the same map (O(messages) per
    call made hermes and s08 replay grow with the history), the session's runs with another."""
    for entry in list(_FIXES_MEMO):
        if entry[0] is meta_by_id and entry[1] == len(meta_by_id):
            return entry[2]
    out = {}
    for k, meta in meta_by_id.items():
        extra = getattr(meta, "extra", None)
        fixes = extra.get("load_fixes") if isinstance(extra, dict) else None
        if fixes:
            out[k] = fixes
    memo = [e for e in list(_FIXES_MEMO) if e[0] is not meta_by_id]
    _FIXES_MEMO[:] = [(meta_by_id, len(meta_by_id), out)] + memo[:_FIXES_KEPT - 1]
    return out


def load_fix_findings(messages: list, fixes: dict | None) -> list[Finding]:
    """A ``bad_value`` finding per value the load made well-typed, for each message of ``messages`` that is
    (the same object as) a loaded message it changed (``fixes``: ``load_fixes_by_identity``). A layer's
    output that still holds such a message still holds the file's value, as the agent would send it."""
    if not fixes:
        return []
    out = []
    for i, m in enumerate(messages):
        for text in fixes.get(id(m)) or ():
            out.append(Finding(BAD_VALUE, i, f"in the file: {text} (the API would reject the value as written)"))
    return out


def _load_fixes(conv) -> list[Finding]:
    """The findings of what the load changed, from the conversation's own lists: the answer of
    ``load_fixes_by_identity(conv.meta_by_identity())`` (a message object that comes twice takes its last meta's
    notes) without building that map of every message (for ``info`` and ``check`` on 300,000 messages, a
    twentieth of the command)."""
    msgs, metas = getattr(conv, "messages", None), getattr(conv, "meta", None)
    if not isinstance(msgs, list) or not isinstance(metas, list):
        return []
    fixes: dict = {}
    for m, meta in zip(msgs, metas):
        extra = getattr(meta, "extra", None)
        found = extra.get("load_fixes") if extra and isinstance(extra, dict) else None
        if found:
            fixes[id(m)] = found
        elif fixes and id(m) in fixes:
            del fixes[id(m)]                 # (the map keeps a message's last meta)
    return load_fix_findings(msgs, fixes)
