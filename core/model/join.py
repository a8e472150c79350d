"""Two views of one session: a Claude Code session file (every message, usage, compactions, but no
system prompt and no tools) and a proxy recording of the same session (the requests as sent: system
prompt, tools, the messages of each call). ``partners`` finds the other view of a conversation among
files; ``borrow`` gives a conversation the system prompt and tools the other view holds. Pure Python,
no Qt.

Two conversations are the same session when they carry the same session id (Claude Code's
``sessionId``; in a request, ``metadata.user_id`` ends with ``_session_<id>``) or, failing that, begin
with the same first words the user typed (at least ``MIN_FIRST_TEXT`` characters).
"""
from __future__ import annotations

import re
from pathlib import Path

from ..runtime.record import replace

MIN_FIRST_TEXT = 20
MAX_FILES = 200
_SESSION_RE = re.compile(r"session_([0-9a-fA-F-]{8,})")


def session_id(conv) -> str | None:
    extra = getattr(conv, "extra", None) or {}
    sid = extra.get("session_id")
    if isinstance(sid, str) and sid:
        return sid
    for call in extra.get("calls") or ():
        uid = call.get("user_id") if isinstance(call, dict) else None
        m = _SESSION_RE.search(uid) if isinstance(uid, str) else None
        if m:
            return m.group(1)
    return None


def first_user_text(conv) -> str:
    """The first words the user typed (command wrappers and system reminders left out), normalised."""
    for m in getattr(conv, "messages", ())[:50]:
        if not (isinstance(m, dict) and m.get("role") == "user"):
            continue
        c = m.get("content")
        texts = [c] if isinstance(c, str) else [b.get("text") for b in c if isinstance(b, dict)
                                               and b.get("type") == "text"] if isinstance(c, list) else []
        for t in texts:
            if isinstance(t, str) and t.strip() and not t.lstrip().startswith("<"):
                return " ".join(t.split())[:400]
    return ""


def same_session(a, b) -> str | None:
    """Why ``a`` and ``b`` are one session (in words), or None."""
    sa, sb = session_id(a), session_id(b)
    if sa and sb:
        return f"the same session id {sa}" if sa == sb else None
    fa, fb = first_user_text(a), first_user_text(b)
    if len(fa) >= MIN_FIRST_TEXT and fa == fb:
        return f"the same first user message ({fa[:40]}…)"
    return None


HEAD_BYTES = 64 * 1024             # what a cheap look reads of a file
FIRST_CALL_BYTES = 4 * 1024 * 1024  # ... or up to its first three lines: a recording's first call (system, tools,
#                                     then the metadata that names the session)
_PLAIN = re.compile(r"[A-Za-z0-9 .,;:!?'()-]{20,}")


def _head(p: Path) -> bytes:
    """The first bytes of ``p``: its first 64 KB, or up to its first three lines (at most 4 MB): a recording's
    first call holds the session id in its metadata, after the system prompt and tools. Never the file."""
    from ..files.jsonio import open_regular
    try:
        with open_regular(p) as f:
            head = f.read(HEAD_BYTES)
            lines = head.count(b"\n")
            while lines < 3 and len(head) < FIRST_CALL_BYTES:
                more = f.read(HEAD_BYTES)
                if not more:
                    break
                head += more
                lines += more.count(b"\n")
            return head
    except (OSError, ValueError):
        return b""


def _probes(conv) -> list[bytes]:
    """What a file holding the same session must have in its first lines: the session id, else a plain
    stretch of the first words the user typed (written the same in any JSON)."""
    sid = session_id(conv)
    if sid:
        return [sid.encode("utf-8", "replace")]
    text = first_user_text(conv)
    if len(text) < MIN_FIRST_TEXT:
        return []
    runs = sorted(_PLAIN.findall(text), key=len, reverse=True)
    return [runs[0][:80].strip().encode()] if runs else []


def _session_file(p: Path, conv) -> dict | None:
    """``partners``' entry for ``p`` when its first lines show a Claude Code session file of ``conv``'s session id
    (its first conversation record's ``sessionId``, which its load takes as the session's), told without loading it:
    such a file never holds a system prompt or tools, so there is nothing more to read in it. A subagent's transcript
    (``agent-*.jsonl``, every record a sidechain's) carries its parent session's id and is listed too (its load made
    a sidechain conversation without the id, which was not). None: load it to tell (another format, no complete
    record in its first lines, another id, or ``conv`` has no session id)."""
    from ..loaders import LoadError, claude_code, read_probe, sniff_format
    from ..loaders.side_files import kind
    sid = session_id(conv)
    if not sid:
        return None
    try:
        probe = read_probe(p)
    except LoadError:
        return None
    if claude_code.head_session_id(probe) != sid or sniff_format(probe) != claude_code.FORMAT or kind(probe):
        return None
    return {"path": str(p), "conversation": None, "index": 0, "reason": f"the same session id {sid}",
            "has_system": False, "has_tools": False}


def partners(path, conv, folders=None, limit: int = MAX_FILES) -> list[dict]:
    """Other files (the file's own folder, and ``folders``) holding the same session:
    ``{"path", "conversation", "index", "reason", "has_system", "has_tools"}``, the fullest first.

    A sibling is loaded only when its first lines name the session (its id, or the first words the user
    typed): a session among big files of other sessions costs a look at their first 64 KB, not their load. A
    Claude Code session file of the same session id is told from its first lines alone (``conversation`` None):
    it holds no system prompt or tools to lend, and a session's folder may hold big ones (a resumed session, a
    copy)."""
    from ..loaders import LoadError, load
    probes = _probes(conv)
    if not probes:
        return []
    here = Path(path).resolve()
    seen, out = set(), []
    for folder in [here.parent, *[Path(f) for f in folders or ()]]:
        try:
            files = sorted(p for p in Path(folder).iterdir() if p.suffix in (".jsonl", ".json") and p.is_file())
        except OSError:
            continue
        for p in files[:limit]:
            rp = p.resolve()
            if rp == here or rp in seen:
                continue
            seen.add(rp)
            head = _head(p)
            if not any(x in head for x in probes):
                continue
            told = _session_file(p, conv)
            if told is not None:
                out.append(told)
                continue
            try:
                res = load(p)
            except LoadError:
                continue
            for k, other in enumerate(res.conversations):
                why = same_session(conv, other)
                if why:
                    out.append({"path": str(p), "conversation": other, "index": k, "reason": why,
                                "has_system": bool(other.system), "has_tools": bool(other.tools)})
                    break
    out.sort(key=lambda d: (not d["has_system"], not d["has_tools"]))
    return out


def borrow(conv, other, reason: str = ""):
    """``conv`` with the system prompt and tools of ``other`` where it has none (its messages and
    everything else kept); ``extra["joined"]`` says from where and why."""
    system = conv.system if conv.system else other.system
    tools = conv.tools if conv.tools else other.tools
    extra = dict(conv.extra or {})
    extra["joined"] = {"source": getattr(other, "source", ""), "format": getattr(other, "format", ""),
                       "reason": reason or same_session(conv, other) or "",
                       "system_from_other": not conv.system and bool(other.system),
                       "tools_from_other": not conv.tools and bool(other.tools)}
    return replace(conv, system=system, tools=tools, extra=extra)
