"""Which conversations of a file are sessions of their own, and when two rows are the same session.

A file holds one or more conversations (``LoadResult.conversations``). A fleet row is one *session*:

* every sample of an Inspect log (each is a run of its own);
* every compression chain of a hermes ``state.db`` (a database holds all of a user's sessions);
* the main conversation of a Claude Code session file or a recording;

while subagents belong to the session that started them and are counted in its ``subagents`` column:
Claude Code sidechains and subagent transcripts, a recording's side threads and summary calls, a hermes
session delegated by another session of the same database. Nothing is dropped silently: a conversation
that is neither is a row.

The same session is often found twice: a hermes ``state.db`` and the JSON snapshots hermes writes beside
it; an Inspect ``.eval`` and the ``.json`` it was converted to (or a second deterministic run of it); a
copy of a Claude Code session file, or an earlier copy of one that went on growing. Each row carries
``identity_keys``: two rows that share a key are one session (``duplicates`` groups them and picks the
fullest row; the others are marked ``duplicate_of`` it). The keys:

* ``hermes:<session id>`` for each session of a hermes chain (a snapshot names one of them);
* ``claude-code:<sessionId>:<first message uuid>`` (an excerpt that starts elsewhere in the same
  session is another part of it, not a copy);
* ``inspect:<eval_id>:<sample id>:<epoch>``;
* ``content:<sha1>`` of the conversation's messages as recorded (roles and readable text, and the contexts
  compactions re-sent), for every format, when they hold at least ``MIN_CONTENT_CHARS`` characters.
"""
from __future__ import annotations

import hashlib

from ..model.text import readable_message_text
from ..files.jsonio import dict_at

SUBAGENT_KINDS = {"sidechain", "agent_progress", "subagent_file", "summary_calls"}
SIDE_THREAD_FORMATS = {"recording", "proxy-log"}
MIN_CONTENT_CHARS = 200
# the fuller view of one session first: a database over the snapshots it was written with
FORMAT_RANK = {"hermes-db": 0, "inspect-log": 0, "claude-code": 0, "hermes-session": 1}


def _extra(conv) -> dict:
    extra = getattr(conv, "extra", None)
    return extra if isinstance(extra, dict) else {}


def session_rows(result) -> list[tuple[int, list[int]]]:
    """``[(index of a session's conversation, [indices of the conversations that belong to it])]`` for a
    LoadResult, in file order: every conversation is either a row or attached to one."""
    convs = list(result.conversations)
    fmt = getattr(result, "format", "")
    rows: dict[int, list[int]] = {}
    attached: dict[int, int] = {}
    hermes_sids: dict[str, int] = {}
    for k, c in enumerate(convs):
        for sid in _extra(c).get("session_ids") or ([_extra(c).get("session_id")] if fmt == "hermes-db" else []):
            if isinstance(sid, str):
                hermes_sids.setdefault(sid, k)
    for k, c in enumerate(convs):
        x = _extra(c)
        if k and (x.get("kind") in SUBAGENT_KINDS or fmt in SIDE_THREAD_FORMATS):
            attached[k] = 0
        elif fmt == "hermes-db" and hermes_sids.get(x.get("parent_session_id") or "", k) != k:
            attached[k] = hermes_sids[x["parent_session_id"]]          # delegated by a session of this database
        else:
            rows[k] = []
    for k, parent in attached.items():
        while parent in attached:                                      # a subagent's subagent
            parent = attached[parent]
        rows.setdefault(parent, []).append(k)
    return sorted(rows.items())


def sample_label(conv, fmt: str) -> str | None:
    """What the row is within its file, when a file holds several sessions: an Inspect sample and epoch, a
    hermes chain's first session id."""
    x = _extra(conv)
    if fmt == "inspect-log" and x.get("id") is not None:
        return f"{x['id']}" + (f" epoch {x['epoch']}" if x.get("epoch") is not None else "")
    if fmt == "hermes-db" and isinstance(x.get("session_id"), str):
        n = len(x.get("session_ids") or [])
        return x["session_id"] + (f" (+{n - 1} after compactions)" if n > 1 else "")
    return None


def content_hash(conv) -> tuple[str, int]:
    """(sha1 of the messages as recorded, roles and readable text, the contexts a compaction re-sent
    included: two runs of one scripted task with different compaction strategies accumulate the same messages
    but send different contexts; how many characters it covers)."""
    h = hashlib.sha1()
    chars = 0
    for m in conv.messages:
        role = m.get("role") if isinstance(m, dict) else ""
        text = readable_message_text(m)
        chars += len(text)
        h.update(f"{role}\x1f".encode())
        h.update(text.encode("utf-8", "replace"))
        h.update(b"\x1e")
    return h.hexdigest(), chars


def identity_keys(conv, fmt: str) -> list[str]:
    """The keys that identify ``conv``'s session across files (see the module doc)."""
    x = _extra(conv)
    keys = []
    if fmt in ("hermes-db", "hermes-session"):
        sids = x.get("session_ids") or [x.get("session_id")]
        keys += [f"hermes:{s}" for s in sids if isinstance(s, str) and s]
    elif fmt == "claude-code":
        sid = x.get("session_id")
        first = next((m.uuid for m in getattr(conv, "meta", ()) if getattr(m, "uuid", None)), None)
        if isinstance(sid, str) and sid and first:
            keys.append(f"claude-code:{sid}:{first}")
    elif fmt == "inspect-log":
        ev = dict_at(x, "eval")
        if ev.get("eval_id") and x.get("id") is not None:
            keys.append(f"inspect:{ev['eval_id']}:{x['id']}:{x.get('epoch')}")
    digest, chars = content_hash(conv)
    if chars >= MIN_CONTENT_CHARS:
        keys.append(f"content:{digest}")
    return keys


def row_id(path: str, conversation) -> str:
    """A row's name in ``duplicate_of``: the file, and ``#K`` for its conversation K."""
    return f"{path}#{conversation if conversation is not None else 0}"


def duplicates(rows: list[dict]) -> dict[str, str]:
    """``{row id: row id of the row it duplicates}`` over rows with ``identity`` (space-separated keys),
    ``path``, ``conversation``, ``calls``, ``messages`` and ``format``: rows that share a key, directly or
    through others, are one session; the row with the most calls (then messages, then the fuller format,
    then the path) stands for it."""
    parent: dict[int, int] = {}

    def find(i: int) -> int:
        while parent.setdefault(i, i) != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i
    owner: dict[str, int] = {}
    for i, r in enumerate(rows):
        for key in (r.get("identity") or "").split():
            j = owner.setdefault(key, i)
            if j != i:
                parent[find(i)] = find(j)
    groups: dict[int, list[int]] = {}
    for i in range(len(rows)):
        groups.setdefault(find(i), []).append(i)
    out = {}
    for members in groups.values():
        if len(members) < 2:
            continue
        def rank(i):
            r = rows[i]
            return (-(r.get("calls") or 0), -(r.get("messages") or 0), FORMAT_RANK.get(r.get("format"), 2),
                    str(r.get("path")), r.get("conversation") or 0)
        best = min(members, key=rank)
        for i in members:
            if i != best:
                out[row_id(rows[i]["path"], rows[i].get("conversation"))] = \
                    row_id(rows[best]["path"], rows[best].get("conversation"))
    return out
