"""Hermes agent ``state.db`` (SQLite): table ``messages`` (id order, session_id,
role, content, tool_call_id, tool_calls JSON text, tool_name, timestamp,
token_count, finish_reason, reasoning..., active, compacted) and table
``sessions`` (system_prompt, parent_session_id, model...).

List/dict content is stored as the text ``"\\x00json:" + JSON``. One
Conversation per session, the one with the most messages first. Its messages
are the full history in id order; rows with ``compacted=1`` are the
summarised-away history and rows with ``active=1`` the live context
(``extra["active"]``). Summary rows (content starting with "[CONTEXT
COMPACTION" or "[CONTEXT SUMMARY]:") become CompactionEvents of kind "hermes"
and start a segment. The database is opened read-only (``mode=ro``).
"""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from urllib.parse import quote

from ..conversation import CompactionEvent, Conversation, LoadResult, MessageMeta, Problem, Provenance, Usage
from ..messages import OPENAI
from .base import LoadError, Probe, parse_timestamp
from .openai_chat import summary_events

FORMAT = "hermes-db"
JSON_PREFIX = "\x00json:"


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


def _connect(path: Path, immutable: bool = False) -> sqlite3.Connection:
    uri = "file:" + quote(str(path.resolve())) + "?mode=ro" + ("&immutable=1" if immutable else "")
    con = sqlite3.connect(uri, uri=True)
    con.row_factory = sqlite3.Row
    return con


def _columns(con, table: str) -> list[str]:
    return [r[1] for r in con.execute(f"PRAGMA table_info({table})")]


def load(probe: Probe) -> LoadResult:
    path = str(probe.path)
    last = None
    for immutable in (False, True):
        try:
            con = _connect(probe.path, immutable)
        except sqlite3.Error as e:
            last = e
            continue
        try:
            result = _load(con, path)
            if immutable:
                # e.g. a WAL database in a folder we may not write: its -shm file cannot be made
                result.problems.append(Problem(path, 0, f"opened as immutable ({last}); changes still in its "
                                                        "-wal file are not shown", "warning"))
            return result
        except sqlite3.OperationalError as e:
            last = e            # retry once as immutable
        except sqlite3.DatabaseError as e:
            raise LoadError(path, 0, f"cannot read the SQLite database: {e}") from None
        finally:
            con.close()
    raise LoadError(path, 0, f"cannot open the SQLite database read-only: {last}")


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
            for r in con.execute("SELECT * FROM sessions"):
                sessions[r[key]] = dict(r)
    order = "id" if "id" in cols else "rowid"
    by_session: dict = {}
    for r in con.execute(f"SELECT * FROM messages ORDER BY {order}"):
        sid = r["session_id"] if "session_id" in cols else None
        by_session.setdefault(sid, []).append(dict(r))
    if not by_session:
        raise LoadError(path, 0, "the Hermes database holds no messages")
    convs = []
    for sid, rows in by_session.items():
        convs.append(_conversation(path, sid, rows, sessions.get(sid, {})))
    # a compaction may rotate into a child session: link parents and children both ways
    for c in convs:
        parent = c.extra["session"].get("parent_session_id")
        c.extra["parent_session_id"] = parent
        c.extra["child_session_ids"] = [d.extra["session_id"] for d in convs
                                        if d.extra["session"].get("parent_session_id") == c.extra["session_id"]
                                        and c.extra["session_id"] is not None]
    convs.sort(key=lambda c: -len(c.messages))
    problems = [p for c in convs for p in c.problems]
    return LoadResult(path, FORMAT, convs, problems)


_ROW_KEYS = ("role", "content", "tool_call_id", "tool_calls", "tool_name", "session_id", "timestamp")


def _conversation(path: str, sid, rows: list, sess: dict) -> Conversation:
    msgs, meta, active, compacted = [], [], [], []
    problems: list[Problem] = []
    for r in rows:
        role = r.get("role")
        if not isinstance(role, str):
            problems.append(Problem(path, 0, f"row id {r.get('id')}: no role, skipped"))
            continue
        content = decode(r.get("content"))
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
        tok = r.get("token_count")
        usage = Usage(0, int(tok)) if role == "assistant" and isinstance(tok, int) else None
        extra = {k: v for k, v in r.items() if k not in _ROW_KEYS and k not in msg and v is not None}
        msgs.append(msg)
        meta.append(MessageMeta(Provenance(path, 0, note=f"messages row id {r.get('id')}"),
                                parse_timestamp(r.get("timestamp")), usage, None,
                                str(r["id"]) if r.get("id") is not None else None, extra))
        active.append(bool(r.get("active", 1)))
        compacted.append(bool(r.get("compacted", 0)))
    events, segments = summary_events(msgs, meta)
    for e in events:
        e.extra["compacted_rows_before"] = sum(compacted[:e.message_index])
    if any(compacted) and not events:
        first_live = next((i for i, (a, c) in enumerate(zip(active, compacted)) if a and not c and i > 0
                           and compacted[i - 1]), None)
        if first_live is not None:
            events.append(CompactionEvent("hermes", first_live, provenance=meta[first_live].provenance,
                                          extra={"compacted_rows_before": sum(compacted[:first_live])}))
            segments.append(first_live)
    system = sess.get("system_prompt")
    model = sess.get("model") if isinstance(sess.get("model"), str) else None
    extra = {"session_id": sid, "active": active, "compacted": compacted,
             "live_context": [i for i, (a, c) in enumerate(zip(active, compacted)) if a and not c],
             "session": {k: v for k, v in sess.items() if k != "system_prompt"}}
    return Conversation(msgs, OPENAI, system, None, model, str(sess.get("title") or sid or "session"), path,
                        FORMAT, meta, events, problems, extra, segments)
