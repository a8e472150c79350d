"""Hermes agent ``state.db`` (SQLite), as hermes-agent writes it.

Tables read: ``messages`` (id order, session_id, role, content, tool_call_id,
tool_calls JSON text, tool_name, timestamp, token_count, finish_reason,
reasoning..., active, compacted, api_content), ``sessions`` (system_prompt,
parent_session_id, end_reason, model, title, token totals...) and
``session_model_usage`` (per session, model and task; ``task='compression'``
rows are the summary calls). List/dict content is stored as the text
``"\\x00json:" + JSON``.

One Conversation per conversation thread, the one with the most messages first:

* **Compression chain** (hermes' default): a compaction ends the session
  (``end_reason='compression'``) and starts a child (``parent_session_id``)
  whose first rows are the compacted context. The chain is joined into ONE
  conversation with a segment per session.
* **In-place compaction** (``compression.in_place``): one session keeps every
  row; a compaction flips the live rows to ``active=0, compacted=1`` and inserts
  the compacted context as new live rows. No column says which compaction
  archived a row, so the archived rows are split into their generations by
  reasoning from the data: a compaction writes the compacted context as fresh
  rows, so a new generation starts where the rows repeat the conversation from
  the start of the current generation (head copies: same role and tool-call ids,
  or same text; hermes may digest an old tool output) immediately followed by a
  summary message (a row that copies nothing) and copies of the LAST rows of the
  previous generation (the kept tail, in order). A tool-call id that repeats
  within a generation is impossible in one API context, so repeats are where to
  look; a summary text prefix alone also starts a generation. The live rows
  (``active=1``) are always the last generation.

Each segment is therefore a real API context: the compacted list (head copies,
summary, tail copies) then what the agent added. A copied row has
``meta.extra["copy_of"]`` = the index of the row it copies (``"edited": True``
when hermes changed it, e.g. a tool output digested to one line); replays skip
copies. Each compaction is a ``CompactionEvent`` (kind "hermes") at the
segment's first message with ``summary_index``, ``extra["messages_before"/
"messages_after"]`` (the generation it compacted, the compacted list) and the
summary call's usage row. The summary message is marked
``meta.extra["compaction_summary"]`` with ``summary_source``: "database" when its
place in the compacted list identifies it (whatever its text), "text prefix"
when only the "[CONTEXT COMPACTION" / "[CONTEXT SUMMARY]:" prefix does.

Provenance names the table and row (``Provenance.table``/``row``): a database
has no lines. The file is only read: it is opened read-only and never gets a
``-wal``/``-shm``/``-journal`` file beside it (a WAL database whose ``-wal`` has
no ``-shm`` is read from a private copy, so the rows still in the WAL are seen).
"""
from __future__ import annotations

import json
from typing import Any
import shutil
import sqlite3
import tempfile
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

from ..model.conversation import CompactionEvent, Conversation, LoadResult, MessageMeta, Problem, Provenance, Usage
from ..model.messages import OPENAI
from .base import LoadError, Probe, parse_timestamp
from .openai_chat import copy_keys, is_summary, same_message

FORMAT = "hermes-db"
JSON_PREFIX = "\x00json:"
MAX_HEAD = 64          # head copies looked for at a generation start (hermes protects the first few messages)


def sniff(probe: Probe) -> bool:
    return probe.head.startswith(b"SQLite format 3\x00")


def decode(value):
    """A stored content/JSON value: "\\x00json:"-prefixed text is JSON; other text stays text."""
    if isinstance(value, bytes):
        value = value.decode("utf-8", errors="replace")
    if isinstance(value, str) and value.startswith(JSON_PREFIX):
        try:
            return json.loads(value[len(JSON_PREFIX):])
        except (ValueError, RecursionError):
            return value[len(JSON_PREFIX):]
    return value


def _json_field(value):
    value = decode(value)
    if isinstance(value, str) and value.strip()[:1] in ("[", "{"):
        try:
            return json.loads(value)
        except (ValueError, RecursionError):
            return value
    return value


# ------------------------------------------------------------------ opening, strictly read-only
def _uri(path: Path, **params) -> str:
    return "file:" + quote(str(path.resolve())) + "?" + "&".join(f"{k}={v}" for k, v in params.items())


@contextmanager
def _open(path: Path):
    """A read-only connection that leaves no file beside the database; yields (connection, note or None).

    SQLite makes ``-wal``/``-shm`` files beside a WAL database even for a ``mode=ro`` reader, unless both
    are there already (the agent has it open). So: a rollback-journal database is opened ``mode=ro``; a
    WAL database with its ``-wal`` and ``-shm`` too; a WAL database with a ``-wal`` but no ``-shm`` is
    copied (database and WAL) into a private temporary folder and read there; a WAL database without a
    ``-wal`` has nothing pending and is opened ``immutable``."""
    with path.open("rb") as f:
        header = f.read(100)
    wal_mode = len(header) >= 20 and header[18:20] == b"\x02\x02"
    wal, shm = Path(str(path) + "-wal"), Path(str(path) + "-shm")
    tmp: list = []

    def private_copy() -> str:
        d = tempfile.mkdtemp(prefix="compactscope-db-")
        tmp.append(d)
        copy = Path(d) / "state.db"
        shutil.copyfile(path, copy)
        if wal.exists():
            shutil.copyfile(wal, Path(str(copy) + "-wal"))
        return _uri(copy, mode="ro")

    def connect(uri: str):
        con = sqlite3.connect(uri, uri=True)
        try:
            con.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
        except sqlite3.Error:
            con.close()
            raise
        return con

    note = None
    try:
        if not wal_mode or (wal.exists() and shm.exists()):
            uri = _uri(path, mode="ro")
        elif wal.exists():
            uri = private_copy()
            note = "read from a private copy (its -wal file has no -shm beside it)"
        else:
            uri = _uri(path, mode="ro", immutable=1)
        try:
            con = connect(uri)
        except sqlite3.OperationalError as e:
            if "immutable" in uri or tmp:
                raise
            if wal_mode and wal.exists():
                # e.g. a -shm left by a crashed agent in a folder we may not write: read a private copy
                con = connect(private_copy())
                note = f"read from a private copy ({e})"
            else:
                # e.g. a hot journal that a read-only reader cannot roll back
                con = connect(_uri(path, mode="ro", immutable=1))
                note = f"opened as immutable ({e}); changes not yet in the database file are not shown"
        con.row_factory = sqlite3.Row
        try:
            yield con, note
        finally:
            con.close()
    finally:
        for d in tmp:
            shutil.rmtree(d, ignore_errors=True)


class _TolerantText:
    """A text factory for a database holding text that is not UTF-8: U+FFFD for what cannot be decoded (the
    rest reads), counted."""

    def __init__(self):
        self.replaced = 0

    def __call__(self, raw: bytes) -> str:
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            self.replaced += 1
            return raw.decode("utf-8", "replace")


def load(probe: Probe) -> LoadResult:
    path = str(probe.path)
    tolerant = None
    try:
        try:
            with _open(probe.path) as (con, note):
                result = _load(con, path)
        except sqlite3.OperationalError as e:
            if "decode" not in str(e):
                raise
            # a value that is not UTF-8 (sqlite3 refuses the whole query): read again, decoding leniently
            # (the usual database takes the fast path above)
            tolerant = _TolerantText()
            with _open(probe.path) as (con, note):
                con.text_factory = tolerant
                result = _load(con, path)
    except LoadError:
        raise
    except sqlite3.DatabaseError as e:
        raise LoadError(path, 0, f"cannot read the SQLite database read-only: {e}") from None
    except OSError as e:
        raise LoadError(path, 0, f"cannot read the SQLite database: {e.strerror or e}") from None
    if note:
        result.problems.append(Problem(path, 0, note, "info" if "copy" in note else "warning"))
    if tolerant is not None and tolerant.replaced:
        result.problems.append(Problem(path, 0, f"{tolerant.replaced:,} text value(s) held invalid UTF-8: "
                                                "replaced by U+FFFD", "warning"))
    return result


# ------------------------------------------------------------------ reading
def _columns(con, table: str) -> list[str]:
    return [r[1] for r in con.execute(f"PRAGMA table_info({table})")]


def _load(con, path: str) -> LoadResult:
    tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    if "messages" not in tables:
        raise LoadError(path, 0, "a SQLite database without a \"messages\" table: not a Hermes state.db")
    cols = _columns(con, "messages")
    for need in ("role", "content"):
        if need not in cols:
            raise LoadError(path, 0, f"the \"messages\" table has no \"{need}\" column: not a Hermes state.db")
    sessions: dict = {}
    if "sessions" in tables:
        scols = _columns(con, "sessions")
        key = "id" if "id" in scols else ("session_id" if "session_id" in scols else None)
        if key:
            for r in con.execute("SELECT rowid AS _rowid, * FROM sessions"):
                sessions[r[key]] = dict(r)
    usage: dict = {}
    if "session_model_usage" in tables and "session_id" in _columns(con, "session_model_usage"):
        for r in con.execute("SELECT rowid AS _rowid, * FROM session_model_usage ORDER BY rowid"):
            usage.setdefault(r["session_id"], []).append(dict(r))
    order = "id" if "id" in cols else "rowid"
    by_session: dict = {}
    for r in con.execute(f"SELECT rowid AS _rowid, * FROM messages ORDER BY {order}"):
        d = dict(r)
        by_session.setdefault(d.get("session_id"), []).append(d)
    if not by_session:
        raise LoadError(path, 0, "the Hermes database holds no messages")
    chains = _chains(by_session, sessions)
    convs = [_Chain(path, chain, by_session, sessions, usage).conversation() for chain in chains]
    in_chain = {sid: c for c in convs for sid in c.extra["session_ids"]}
    # other parent/child links (not compressions: e.g. a delegated subagent) are kept both ways
    for c in convs:
        root = sessions.get(c.extra["session_id"], {})
        c.extra["parent_session_id"] = root.get("parent_session_id")
        c.extra["child_session_ids"] = [sid for sid, s in sessions.items()
                                        if s.get("parent_session_id") in c.extra["session_ids"]
                                        and sid not in c.extra["session_ids"] and sid in in_chain]
    convs.sort(key=lambda c: -len(c.messages))
    problems = [p for c in convs for p in c.problems]
    return LoadResult(path, FORMAT, convs, problems)


def _started(sessions: dict, sid) -> tuple:
    s = sessions.get(sid, {})
    t = s.get("started_at")
    return (0 if isinstance(t, (int, float)) else 1, t if isinstance(t, (int, float)) else 0, s.get("_rowid") or 0)


def _chains(by_session: dict, sessions: dict) -> list[list]:
    """Sessions joined at compressions: a child whose parent ended with ``end_reason='compression'`` (or,
    in a database without that column, whose rows open with a compaction summary) continues its parent."""
    def continues(child) -> bool:
        parent = sessions.get(child, {}).get("parent_session_id")
        if parent is None or parent not in by_session or parent == child:
            return False
        p = sessions.get(parent, {})
        if "end_reason" in p:
            return p.get("end_reason") == "compression"
        return any(is_summary({"role": r.get("role"), "content": decode(r.get("content"))})
                   for r in by_session.get(child, [])[:MAX_HEAD])
    next_of: dict = {}
    for sid in sorted(by_session, key=lambda s: _started(sessions, s)):
        if continues(sid):
            parent = sessions[sid]["parent_session_id"]
            next_of.setdefault(parent, sid)      # one continuation per session: the first started
    followers = set(next_of.values())
    chains = []
    for sid in sorted(by_session, key=lambda s: _started(sessions, s)):
        if sid in followers and sessions[sid]["parent_session_id"] in next_of \
                and next_of[sessions[sid]["parent_session_id"]] == sid:
            continue
        chain, seen = [sid], {sid}
        while chain[-1] in next_of and next_of[chain[-1]] not in seen:
            chain.append(next_of[chain[-1]])
            seen.add(chain[-1])
        chains.append(chain)
    return chains


_ROW_KEYS = ("role", "content", "tool_call_id", "tool_calls", "tool_name", "session_id", "timestamp", "_rowid",
             "api_content")


def _row_message(r: dict) -> tuple[dict, dict]:
    role = r.get("role")
    content = decode(r.get("content"))
    extra: dict = {}
    if r.get("api_content") not in (None, ""):
        # what was really sent (hermes' sidecar for prefetched/plugin context): the API content
        extra["stored_content"] = content
        content = decode(r["api_content"])
    msg: dict = {"role": role, "content": content}
    calls = _json_field(r.get("tool_calls")) if r.get("tool_calls") else None
    if isinstance(calls, list) and calls:
        msg["tool_calls"] = calls
    if r.get("tool_call_id"):
        msg["tool_call_id"] = r["tool_call_id"]
    if role == "tool" and r.get("tool_name"):
        msg["name"] = r["tool_name"]
    for k in ("reasoning", "reasoning_content", "reasoning_details"):
        if r.get(k):
            msg[k] = _json_field(r[k])
    extra.update({k: v for k, v in r.items() if k not in _ROW_KEYS and k not in msg and v is not None})
    return msg, extra


# ------------------------------------------------------------------ copies and generations
class _Index:
    """Which rows of a range a message copies (by its keys)."""

    def __init__(self, msgs: list, lo: int, hi: int):
        self.map: dict = {}
        for j in range(lo, hi):
            self.add(msgs, j)

    def add(self, msgs: list, j: int) -> None:
        for k in copy_keys(msgs[j]):
            self.map.setdefault((msgs[j].get("role"), k), []).append(j)

    def find(self, m: dict) -> list:
        out = []
        for k in copy_keys(m):
            out += self.map.get((m.get("role"), k), [])
        return sorted(set(out))


def _prefix(msgs: list, text_summary: list, gs: int, g: int, end: int, prev: _Index | None = None) -> tuple:
    """The compacted list at the start of generation [g, end) that follows generation [gs, g):
    (head copies h, summary index S or None, tail copies t, {copy index: original index}). ``prev``: an
    index of the previous generation's rows when the caller has one (rows at or after g in it are ignored)."""
    h = 0
    while h < MAX_HEAD and g + h < end and gs + h < g and same_message(msgs[g + h], msgs[gs + h]):
        h += 1
    prev = prev or _Index(msgs, gs, g)
    copies = {g + j: gs + j for j in range(h)}
    s = g + h
    if s >= end:
        return h, None, 0, copies
    if [j for j in prev.find(msgs[s]) if j < g] and not text_summary[s]:
        # no row between head and tail: a compaction whose summary is missing (or merged into the tail)
        summary = None
        first_tail = s
    else:
        summary = s
        first_tail = s + 1
    t, last = 0, gs + h - 1
    while first_tail + t < end:
        hits = [j for j in prev.find(msgs[first_tail + t]) if last < j < g]
        if not hits:
            break
        last = hits[0]
        copies[first_tail + t] = last
        t += 1
    if summary is not None and not text_summary[summary] and h == 0 and t == 0:
        summary = None         # nothing around it says it is a summary
    return h, summary, t, copies


def _generations(msgs: list, text_summary: list, lo: int, hi: int) -> list[tuple[int, int | None]]:
    """Generation starts inside the archived rows [lo, hi) of one session, inferred (see the module doc):
    [(start, summary index or None)], the first being (lo, None)."""
    out: list[tuple[int, int | None]] = [(lo, None)]
    gs, known = lo, None
    idx = _Index(msgs, lo, min(lo + 1, hi))
    i = lo + 1
    while i < hi:
        m = msgs[i]
        repeat = bool(idx.find(m))
        if (repeat or text_summary[i]) and i != known:
            g = None
            if repeat and same_message(m, msgs[gs]):
                g = i                                     # head copies start here
            elif repeat and i - 1 > gs and not idx.find(msgs[i - 1]):
                g = i - 1                                 # a summary just before the tail copies
            elif text_summary[i]:
                g = i
            if g is not None:
                h, s, t, _ = _prefix(msgs, text_summary, gs, g, hi, idx)
                ok = s is not None and (text_summary[s] or t >= 1 or h >= 1)
                if ok and (g == i - 1 and t < 1 and not text_summary[s]):
                    ok = False
                if ok:
                    out.append((g, s))
                    gs, known = g, s
                    idx = _Index(msgs, g, s + 1)
                    i = s + 1
                    continue
        idx.add(msgs, i)
        i += 1
    return out


# ------------------------------------------------------------------ one conversation
class _Chain:
    def __init__(self, path: str, chain: list, by_session: dict, sessions: dict, usage: dict):
        self.path, self.chain, self.sessions, self.usage = path, chain, sessions, usage
        self.rows: list[dict] = []
        self.sids: list = []
        self.rewound = 0
        self.problems: list[Problem] = []
        for sid in chain:
            for r in by_session[sid]:
                if not r.get("active", 1) and not r.get("compacted", 0):
                    self.rewound += 1           # rewind/undo: the user took it back; in no context
                    continue
                self.rows.append(r)
                self.sids.append(sid)

    def conversation(self) -> Conversation:
        path = self.path
        msgs, meta = [], []
        for r in self.rows:
            role = r.get("role")
            if not isinstance(role, str):
                self.problems.append(Problem(path, 0, f"messages row {r.get('_rowid')}: no role, skipped"))
                continue
            msg, extra = _row_message(r)
            tok = r.get("token_count")
            usage = Usage(0, int(tok)) if role == "assistant" and isinstance(tok, int) else None
            rid = r.get("id", r.get("_rowid"))
            msgs.append(msg)
            meta.append(MessageMeta(Provenance(path, 0, note=f"messages row {rid} (session {r.get('session_id')})",
                                               table="messages", row=rid),
                                    parse_timestamp(r.get("timestamp")), usage, None,
                                    str(rid) if rid is not None else None, extra))
        rows = [r for r in self.rows if isinstance(r.get("role"), str)]
        sids = [s for r, s in zip(self.rows, self.sids) if isinstance(r.get("role"), str)]
        text_summary = [is_summary(m) for m in msgs]
        # certain boundaries: a new session of the chain; the first live row after archived rows
        starts: list[tuple[int, str, int | None]] = [(0, "first", None)]
        i = 0
        while i < len(rows):
            j = i
            while j < len(rows) and sids[j] == sids[i]:
                j += 1
            if i > 0:
                starts.append((i, "rotation", None))
            arch_end = i                 # archived rows precede the live ones (archiving flips rows in place)
            for k in range(i, j):
                if rows[k].get("compacted", 0):
                    arch_end = k + 1
            if arch_end > i:
                for g, _ in _generations(msgs, text_summary, i, arch_end)[1:]:
                    starts.append((g, "in_place (inferred)", None))
                if arch_end < j:
                    starts.append((arch_end, "in_place", None))
            i = j
        starts.sort()
        events, segments = [], [0]
        summaries: set = set()
        for k in range(1, len(starts)):
            gs, g = starts[k - 1][0], starts[k][0]
            end = starts[k + 1][0] if k + 1 < len(starts) else len(msgs)
            h, s, t, copies = _prefix(msgs, text_summary, gs, g, end)
            for c, o in copies.items():
                meta[c].extra["copy_of"] = o
                if msgs[c].get("content") != msgs[o].get("content"):
                    meta[c].extra["edited"] = True
            if s is not None:
                summaries.add(s)
                meta[s].extra["compaction_summary"] = True
                meta[s].extra["summary_source"] = "database" if (h or t) else "text prefix"
            segments.append(g)
            how = starts[k][1]
            extra = {"mode": "rotation" if how == "rotation" else "in_place", "boundary": how,
                     "session_id": sids[g], "messages_before": g - gs,
                     "messages_after": (h + (s is not None) + t) if (s is not None or h or t) else None,
                     "head_copies": h, "tail_copies": t,
                     "compacted_rows_before": sum(1 for r in rows[:g] if r.get("compacted", 0))}
            if how == "rotation":
                extra["parent_session_id"] = sids[gs] if sids[gs] != sids[g] else None
                extra["previous_session_id"] = sids[g - 1]
            events.append(CompactionEvent("hermes", g, None, None, None, s, meta[s if s is not None else g].provenance,
                                          extra))
        # a summary inside a context that no recorded boundary explains (a lineage inherited from before
        # the database, or a plain list of messages): the compaction happened before that context began
        for i, ts in enumerate(text_summary):
            if ts and i not in summaries:
                seg = max(x for x in segments if x <= i)
                meta[i].extra["compaction_summary"] = True
                meta[i].extra["summary_source"] = "text prefix"
                events.append(CompactionEvent("hermes", seg, None, None, None, i, meta[i].provenance,
                                              {"inherited": True, "session_id": sids[i],
                                               "compacted_rows_before": sum(1 for r in rows[:i]
                                                                            if r.get("compacted", 0))}))
        events.sort(key=lambda e: (e.message_index, e.summary_index or 0))
        summary_calls = self._summary_calls(events, sids)
        if self.rewound:
            self.problems.append(Problem(path, 0, f"{self.rewound} rewound row(s) (active=0, compacted=0: the user "
                                                  "took them back) are in no context and are left out", "info"))
        root = self.sessions.get(self.chain[0], {})
        last_sid = self.chain[-1]
        live_from = segments[-1]
        system = root.get("system_prompt")
        model = next((self.sessions.get(s, {}).get("model") for s in reversed(self.chain)
                      if isinstance(self.sessions.get(s, {}).get("model"), str)), None)
        title = str(root.get("title") or self.chain[0] or "session")
        if len(self.chain) > 1:
            title += f" ({len(self.chain)} sessions joined at compressions)"
        extra = {
            "session_id": self.chain[0], "session_ids": list(self.chain),
            "session_of_message": sids,
            "active": [bool(r.get("active", 1)) for r in rows],
            "compacted": [bool(r.get("compacted", 0)) for r in rows],
            "live_context": [i for i in range(live_from, len(rows)) if sids[i] == last_sid
                             and rows[i].get("active", 1) and not rows[i].get("compacted", 0)],
            "sessions": {s: {k: v for k, v in self.sessions.get(s, {}).items() if k != "system_prompt"}
                         for s in self.chain},
            "session": {k: v for k, v in root.items() if k != "system_prompt"},
            "summary_calls": summary_calls, "rewound_rows": self.rewound,
        }
        prompts = {self.sessions.get(s, {}).get("system_prompt") for s in self.chain} - {None}
        if len(prompts) > 1:
            extra["system_prompts"] = {s: self.sessions.get(s, {}).get("system_prompt") for s in self.chain}
        return Conversation(msgs, OPENAI, system, None, model, title, path, FORMAT, meta, events, self.problems,
                            extra, segments)

    def _summary_calls(self, events: list, sids: list) -> list[dict]:
        """``session_model_usage`` rows with ``task='compression'``: the summary calls, tied to the compactions
        made while that session was the live one (in place within it, or the rotation that ended it)."""
        out = []
        for sid in self.chain:
            for r in self.usage.get(sid, []):
                if r.get("task") != "compression":
                    continue
                mine = [k for k, e in enumerate(events) if not e.extra.get("inherited") and (
                    (e.extra.get("mode") == "in_place" and e.extra.get("session_id") == sid)
                    or (e.extra.get("mode") == "rotation" and e.extra.get("previous_session_id") == sid))]
                calls = r.get("api_call_count") if isinstance(r.get("api_call_count"), int) else None
                call = {"session_id": sid, "model": r.get("model"), "task": "compression", "api_call_count": calls,
                        "input_tokens": r.get("input_tokens"), "output_tokens": r.get("output_tokens"),
                        "cache_read_tokens": r.get("cache_read_tokens"), "cache_write_tokens":
                        r.get("cache_write_tokens"), "first_seen": r.get("first_seen"), "last_seen": r.get("last_seen"),
                        "compactions": mine, "table": "session_model_usage", "row": r.get("_rowid"),
                        "where": str(Provenance(self.path, 0, table="session_model_usage", row=r.get("_rowid")))}
                out.append(call)
                for k in mine:
                    share: dict[str, Any] = {"usage_row": len(out) - 1}
                    if len(mine) == 1 and calls in (None, 1):
                        share["usage"] = Usage(r.get("input_tokens") or 0, r.get("output_tokens") or 0,
                                               r.get("cache_write_tokens") or 0, r.get("cache_read_tokens") or 0)
                    else:
                        share["shared_by"] = len(mine)     # one row for several summary calls: totals only
                    events[k].extra["summary_call"] = share
        return out
