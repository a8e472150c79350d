"""Claude Code session JSONL (``~/.claude/projects/<cwd>/<sessionId>.jsonl``).

Rebuilds what the API saw from the one-record-per-line log:

* assistant records that share ``message.id`` (streaming writes one line per
  content block; parallel tool calls) become one assistant message;
* consecutive user records (parallel tool results, interrupts, meta lines)
  become one user message;
* non-conversation records (system, summary, file-history-snapshot, progress,
  queue-operation, unknown types) are dropped from the messages and kept as
  metadata in ``Conversation.extra["records"]``;
* a ``compact_boundary`` record starts a new segment: ``Conversation.messages``
  is the full history (following ``logicalParentUuid`` across boundaries) and
  ``Conversation.segments`` marks where each post-compaction context starts (its
  first message is the ``isCompactSummary`` user message);
* records on an abandoned branch (a rewind) are left out, and counted;
* sidechains (``isSidechain: true``) and subagent messages carried by
  ``progress``/``agent_progress`` records become separate conversations after
  the main one.

A corrupt line is reported as a Problem with its line number; records joined on
one line are recovered. The file is streamed and parsed with orjson.

Per message, ``MessageMeta.extra`` is the first line's record without its
``message`` and without the envelope every line repeats (uuid, timestamp,
parentUuid, sessionId, cwd, version, gitBranch...: kept in ``MessageMeta`` and
``Conversation.extra``, not once per message: at 100k messages that is ~100 MB),
every other field it had, known or not, plus ``lines`` (all the lines
merged into the message), ``api_id``/``api_stop_reason``, and ``merged`` /
``merged_uuids`` for the further lines. ``usage`` is the last line's usage (note:
Claude Code writes the streaming-start usage, so ``output_tokens`` is often far
below the real count; the input and cache counts are exact).
"""
from __future__ import annotations

import re

from ..model.conversation import CompactionEvent, Conversation, LoadResult, MessageMeta, Problem, Provenance, Usage
from ..model.messages import ANTHROPIC
from .base import (
    LINE_TOO_LONG, MAX_LINE_BYTES, JSONDecodeError, LoadError, Probe, drop_mistyped, iter_lines, loads, loads_lenient,
    open_regular, parse_timestamp, recover_records,
)
from ..files.jsonio import dict_at
from .claude_code_chain import (
    CONVERSATION_TYPES, Record, agent_groups, first_text, first_text_of, group_sidechains, main_records,
    records_before_file, task_prompts,
)

FORMAT = "claude-code"

KNOWN_TYPES = {"user", "assistant", "system", "summary", "file-history-snapshot", "progress", "queue-operation",
               "attachment", "custom-title", "last-prompt", "pr-link", "tag", "agent-name"}
# Record fields every line carries (left out of copied metadata; see _Builder._new).
_STANDARD = {"parentUuid", "isSidechain", "userType", "cwd", "sessionId", "version", "gitBranch", "slug", "type",
             "message", "uuid", "timestamp", "logicalParentUuid"}
# Fields dropped as each conversation line is read:
# - what every line repeats and nothing reads per line (the session's first values and every version seen
#   are kept once, in _Envelope), so the records waiting to become messages do not hold 100k copies of the
#   cwd, the session id, the branch...;
# - toolUseResult: Claude Code's own copy of a tool's output for its terminal UI (a Read's whole file, an
#   Edit's original file and patch). The API never sees it (the tool_result block in the message is what
#   was sent), and in real sessions it is as large as all the messages together.
# - the links (parentUuid, logicalParentUuid, isSidechain): read into the Record first.
_DROPPED_AT_READ = frozenset({"userType", "cwd", "sessionId", "version", "gitBranch", "slug", "toolUseResult",
                              "parentUuid", "logicalParentUuid", "isSidechain"})
# one string object for each block type, shared by every block of a loaded session
_BLOCK_TYPES = {t: t for t in ("text", "tool_use", "tool_result", "thinking", "redacted_thinking", "image",
                               "document", "server_tool_use", "web_search_tool_result")}


class _Envelope:
    """The repeated envelope of a session's conversation lines, kept once: the first line's values and the
    versions seen (in order)."""
    __slots__ = ("first", "versions", "names")

    def __init__(self):
        self.first: dict | None = None
        self.versions: dict = {}
        self.names: dict = {}                 # one string object per tool name

    def strip(self, rec: dict) -> dict:
        """``rec`` as the builder needs it, noting what its envelope said: a new, right-sized dict without
        the repeated fields, its message reduced to what becomes the API message and its metadata (the
        content, id, model, stop reason, usage), the usage as a ``Usage`` and the timestamp as seconds.
        What is dropped here is freed while the next line is read, so a big session is never held twice."""
        if self.first is None:
            self.first = {k: rec.get(k) for k in ("sessionId", "cwd", "gitBranch")}
        v = rec.get("version")
        if v.__class__ is str and v not in self.versions:
            self.versions[v] = None
        out = {k: x for k, x in rec.items() if k not in _DROPPED_AT_READ}
        m = out.get("message")
        if m.__class__ is dict:
            slim = {k: m[k] for k in _MESSAGE_KEPT if k in m}
            content = slim.get("content")
            if content.__class__ is list:
                names = self.names
                for b in content:
                    if b.__class__ is dict:
                        t = b.get("type")
                        t = _BLOCK_TYPES.get(t) if t.__class__ is str else None
                        if t is not None:
                            b["type"] = t
                            n = b.get("name")
                            if n.__class__ is str:
                                b["name"] = names.setdefault(n, n)
            u = slim.get("usage")
            if u.__class__ is dict:
                slim["usage"] = _usage(u)
            out["message"] = slim
        ts = out.get("timestamp")
        if ts.__class__ is str:
            out["timestamp"] = parse_timestamp(ts)
        return out


# the fields of a line's message that the builder reads (the rest of it is not kept)
_MESSAGE_KEPT = ("content", "id", "model", "stop_reason", "usage")


# metadata values many messages repeat, kept as one string object (the envelope's own are never metadata)
_REPEATED = ("api_stop_reason", "subtype", "level", "permissionMode")
# The types of the fields the loader reads (base.drop_mistyped): a field of another type (a "model" that is
# an object, a "uuid" that is a list) is reported for its line and ignored, and the rest of the record loads.
_FIELD_TYPES = {
    "type": (str,), "uuid": (str,), "parentUuid": (str,), "logicalParentUuid": (str,), "isSidechain": (bool,),
    "isCompactSummary": (bool,), "subtype": (str,), "parentToolUseID": (str,), "version": (str,),
    "message": {"id": (str,), "model": (str,), "role": (str,), "usage": (dict,), "stop_reason": (str,)},
    "compactMetadata": {"trigger": (str,), "preTokens": (int, float), "postTokens": (int, float)},
    "data": {"type": (str,), "agentId": (str,), "message": {"type": (str,), "uuid": (str,), "parentUuid": (str,),
                                                             "message": {"id": (str,), "model": (str,),
                                                                         "role": (str,), "usage": (dict,)}}},
}
_HEAD_RE = re.compile(rb'"(parentUuid|sessionId|leafUuid)"\s*:')


def _is_record(x) -> bool:
    if not isinstance(x, dict):
        return False
    t = x.get("type")
    if not isinstance(t, str):
        return False
    if t in CONVERSATION_TYPES:
        return isinstance(x.get("message"), dict) and ("uuid" in x or "sessionId" in x or "parentUuid" in x)
    return t in KNOWN_TYPES and any(k in x for k in ("uuid", "sessionId", "leafUuid", "messageId", "snapshot"))


def sniff(probe: Probe) -> bool:
    if not probe.starts_with(b"{"):
        return False
    lines = [x for x in probe.first_json_lines(20) if x is not None]
    if lines:
        return any(_is_record(x) for x in lines) and not all(
            isinstance(x, dict) and "role" in x and "type" not in x for x in lines)
    # no complete line in the head: a first record longer than the probe, or a pretty-printed document
    h = probe.head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if b"\n" in h.rstrip(b"\r\n"):
        return False           # its first line is not JSON: a pretty-printed document
    if not (_HEAD_RE.search(h[:PROBE_SCAN]) or b'"message"' in h[:1024]):
        return False
    return _is_record(probe.first_line_value())


PROBE_SCAN = 64 * 1024


def head_session_id(probe: Probe) -> str | None:
    """The session id a load of the probed file takes (its first conversation record's ``sessionId``, as ``_read``
    keeps it in its envelope), when such a record is complete among its first lines; None otherwise."""
    for x in probe.first_json_lines(20):
        if isinstance(x, dict) and x.get("type") in CONVERSATION_TYPES and isinstance(x.get("message"), dict):
            sid = x.get("sessionId")
            return sid if isinstance(sid, str) else None
    return None


# --------------------------------------------------------------------------- reading

def _read(path_str: str, path) -> tuple:
    """Stream the file: conversation records, other records, the uuid->parent map, problems."""
    conv: list[Record] = []
    others: list[tuple[int, dict]] = []
    parents: dict = {}
    problems: list[Problem] = []
    types: dict = {}
    envelope = _Envelope()
    nonrecord = 0

    def take(n: int, rec) -> None:
        nonlocal nonrecord
        if not isinstance(rec, dict):
            nonrecord += 1
            problems.append(Problem(path_str, n, f"a JSON {type(rec).__name__}, not a record: skipped"))
            return
        _typed(n, rec, problems, path_str)
        t = rec.get("type")
        if not isinstance(t, str):
            t = "?"
        types[t] = types.get(t, 0) + 1
        u = rec.get("uuid")
        if isinstance(u, str):
            if u in parents:
                types["(duplicate)"] = types.get("(duplicate)", 0) + 1
                return          # the same record written twice
            p = rec.get("parentUuid")
            if p is None:
                p = rec.get("logicalParentUuid")
            parents[u] = p if isinstance(p, str) else None
        if t in CONVERSATION_TYPES and isinstance(rec.get("message"), dict):
            r = Record(n, rec)
            r.rec = envelope.strip(rec)
            conv.append(r)
        else:
            others.append((n, rec))

    conv_append, others_append = conv.append, others.append
    try:
        small = path.stat().st_size <= MAX_LINE_BYTES
    except OSError:
        small = False
    with open_regular(path, buffering=1 << 20) as f:
        # When the file is smaller than the longest line allowed, no line can be too long: the file
        # object's own (C) line iteration is used. Blank lines fail to parse and are skipped below.
        lines = enumerate(f, 1) if small else iter_lines(path)
        _read_lines(lines, path_str, problems, take, parents, types, conv_append, others_append, envelope.strip)
    return conv, others, parents, problems, types, envelope


def _read_lines(lines, path_str, problems, take, parents, types, conv_append, others_append, strip) -> None:
    last_u = None
    for n, raw in lines:
        if raw is None:
            problems.append(Problem(path_str, n, LINE_TOO_LONG, "error"))
            continue
        try:
            rec = loads(raw)
        except JSONDecodeError as e:
            if not raw.strip():
                continue               # a blank line
            notes: list = []
            try:
                rec = loads_lenient(raw, notes)   # NaN, 1e400, a lone surrogate: made valid, reported
            except JSONDecodeError:
                pass
            else:
                problems.append(Problem(path_str, n, "; ".join(notes), "warning"))
                take(n, rec)
                continue
            found = recover_records(raw, _is_record, notes)
            why = str(e).split(":")[0]
            if notes:
                problems.append(Problem(path_str, n, "; ".join(notes), "warning"))
            if found:
                problems.append(Problem(path_str, n, f"corrupt line ({why}): {len(found)} record(s) joined on one "
                                                     f"line; recovered " + ", ".join(
                                                         str(r.get("type")) for r in found), "error"))
                for r in found:
                    take(n, r)
            else:
                problems.append(Problem(path_str, n, f"corrupt line ({why}): skipped", "error"))
            continue
        # the common case of take(), inlined: this loop runs once per line of a 100 MB file
        if rec.__class__ is dict:
            t = rec.get("type")
            u = rec.get("uuid")
            m = rec.get("message")
            if m.__class__ is dict:
                mid, mm = m.get("id"), m.get("model")
                if (mid is not None and mid.__class__ is not str) or (mm is not None and mm.__class__ is not str):
                    take(n, rec)
                    continue
            elif t == "progress" or t == "system":
                take(n, rec)
                continue
            if t.__class__ is str and u.__class__ is str and u not in parents:
                types[t] = types.get(t, 0) + 1
                p = rec.get("parentUuid")
                if p is None:
                    p = rec.get("logicalParentUuid")
                if p.__class__ is str:
                    if p == last_u:
                        p = last_u        # the previous line's uuid object: this line's copy is freed now
                else:
                    p = None
                parents[u] = p
                last_u = u
                if (t == "user" or t == "assistant") and rec.get("message").__class__ is dict:
                    r = object.__new__(Record)
                    r.line, r.rec, r.uuid, r.parent = n, strip(rec), u, p
                    r.sidechain = rec.get("isSidechain") is True
                    conv_append(r)
                else:
                    others_append((n, rec))
                continue
        take(n, rec)


def _typed(n: int, rec: dict, problems: list, path_str: str) -> None:
    bad = drop_mistyped(rec, _FIELD_TYPES)
    if bad:
        problems.append(Problem(path_str, n, "; ".join(bad), "warning"))


# --------------------------------------------------------------------------- building

def _blocks_of(content) -> list:
    if isinstance(content, list):
        return list(content)
    if content is None:
        return []
    return [{"type": "text", "text": content if isinstance(content, str) else str(content)}]


def _has_tool_results(content) -> bool:
    return isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)


def _hoist_results(blocks: list) -> list:
    """Tool results first, in their order, then everything else (what the user typed while the tools
    ran): one user message answers the calls before anything else, as Claude Code sends it."""
    res = [b for b in blocks if isinstance(b, dict) and b.get("type") == "tool_result"]
    if not res or len(res) == len(blocks) or all(isinstance(b, dict) and b.get("type") == "tool_result"
                                                 for b in blocks[:len(res)]):
        return blocks
    return res + [b for b in blocks if not (isinstance(b, dict) and b.get("type") == "tool_result")]


def _usage(d) -> Usage | None:
    """Usage.from_dict, inlined for speed (one call per assistant message of a large session)."""
    if d.__class__ is not dict:
        return d if d.__class__ is Usage else Usage.from_dict(d)
    g = d.get
    i, o, cc, cr = g("input_tokens"), g("output_tokens"), g("cache_creation_input_tokens"), \
        g("cache_read_input_tokens")
    if i.__class__ is int and o.__class__ is int and (cc is None or cc.__class__ is int) \
            and (cr is None or cr.__class__ is int):
        return Usage(i, o, cc or 0, cr or 0)
    return Usage.from_dict(d)


class _Builder:
    """Turns conversation records (in order) into API messages with metadata."""

    def __init__(self, path: str, copy: bool = False):
        self.path = path
        self.copy = copy                      # copy content lists (records kept as metadata elsewhere)
        self.msgs: list = []
        self.meta: list[MessageMeta] = []
        self.events: list[CompactionEvent] = []
        self.segments = [0]
        self.pending: tuple | None = None     # (line, boundary record)
        self.last_asst = -1                   # index of the last assistant message
        self.models: dict = {}
        self.last_id = None                   # message.id of the last assistant message
        self.raw_usage: dict = {}             # message index -> the API's usage dict (converted at the end)
        self.touched: set = set()             # indices of messages merged from several lines
        self.shared: dict = {}                # one string object per repeated envelope value (cwd, sessionId...)

    def boundary(self, line: int, rec: dict) -> None:
        self.pending = (line, rec)

    def _new(self, role: str | None, content, line: int, rec: dict, m: dict) -> None:
        # the record is dropped after the load, so its content list becomes the message's (no copy)
        if content is None:
            content = []
        elif self.copy and isinstance(content, list):
            content = list(content)
        msg = {"role": role, "content": content}
        # the line's own fields, in a new right-sized dict: the record is freed as soon as it is built
        extra = {k: v for k, v in rec.items() if k not in _STANDARD}
        i = len(self.msgs)
        model = None
        if role == "assistant":
            self.last_asst = i
            self.last_id = m.get("id")
            extra["api_id"] = self.last_id
            sr = m.get("stop_reason")
            if sr is not None:
                extra["api_stop_reason"] = sr
            model = m.get("model")
            if model:
                if model.__class__ is str:
                    model = self.shared.setdefault(model, model)
                self.models[model] = self.models.get(model, 0) + 1
                if model == "<synthetic>":
                    extra["synthetic"] = True
            u = m.get("usage")
            if u is not None:
                self.raw_usage[i] = u
        self._share(extra)
        self.msgs.append(msg)
        ts = rec.get("timestamp")             # (seconds already, from _Envelope.strip: parsed again only if not)
        if ts.__class__ is not float or ts > 1e11:
            ts = parse_timestamp(ts)
        self.meta.append(MessageMeta(Provenance(self.path, line), ts, None, model, rec.get("uuid"), extra))

    def _share(self, extra: dict) -> None:
        """Values many messages repeat (a stop reason, a subtype...) kept as one string object, not one per
        message (the envelope every line repeats is kept once at read: _Envelope)."""
        shared = self.shared
        for k in _REPEATED:
            v = extra.get(k)
            if v.__class__ is str:
                extra[k] = shared.setdefault(v, v)

    def _extend(self, i: int, content, line: int, rec: dict, m: dict) -> None:
        msg = self.msgs[i]
        if not isinstance(msg["content"], list):
            msg["content"] = _blocks_of(msg["content"])
        if isinstance(content, list):
            msg["content"].extend(content)
        else:
            msg["content"].extend(_blocks_of(content))
        if msg["role"] == "user" and _has_tool_results(content):
            msg["content"] = _hoist_results(msg["content"])
        extra = self.meta[i].extra
        lines = extra.get("lines")
        if lines is None:             # a message from several lines lists them (one line: its provenance)
            prov = self.meta[i].provenance
            lines = extra["lines"] = [prov.line if prov is not None else line]
        lines.append(line)
        self.touched.add(i)                   # its provenance gets the line range at the end
        u = rec.get("uuid")
        if u:
            extra.setdefault("merged_uuids", []).append(u)
        # the merged line's own fields (e.g. its requestId), without its message and envelope
        own = {k: v for k, v in rec.items() if k not in _STANDARD}
        if own:
            self._share(own)
            extra.setdefault("merged", []).append(own)
        if msg["role"] == "assistant":
            u = m.get("usage")
            if u is not None:
                self.raw_usage[i] = u          # the last streamed line has the final output count

    def add(self, r: Record) -> None:
        rec, line = r.rec, r.line
        m = rec["message"]
        role = rec.get("type")
        content = m.get("content")
        if self.pending is not None:
            bline, brec = self.pending
            self.pending = None
            cm = dict_at(brec, "compactMetadata")
            idx = len(self.msgs)
            if idx > 0:
                self.segments.append(idx)
            self._new(role, content, line, rec, m)
            pre = cm.get("preTokens")
            post = cm.get("postTokens")
            self.events.append(CompactionEvent(
                "claude_code", idx, cm.get("trigger"),
                pre if isinstance(pre, int) else None, post if isinstance(post, int) else None,
                idx if rec.get("isCompactSummary") else None, Provenance(self.path, bline),
                {k: v for k, v in brec.items() if k not in _STANDARD and k != "compactMetadata"} | {
                    "compactMetadata": cm, "uuid": brec.get("uuid"),
                    "logicalParentUuid": brec.get("logicalParentUuid"),
                    "timestamp": parse_timestamp(brec.get("timestamp"))}))
            return
        seg_start = self.segments[-1]
        if role == "assistant":
            mid = m.get("id")
            la = self.last_asst
            if mid and la >= seg_start and la >= len(self.msgs) - 2 \
                    and self.meta[la].extra.get("api_id") == mid \
                    and all(self.msgs[j]["role"] == "user" and _has_tool_results(self.msgs[j]["content"])
                            for j in range(la + 1, len(self.msgs))):
                self._extend(la, content, line, rec, m)
                return
            self._new("assistant", content, line, rec, m)
            return
        # user
        if self.msgs and len(self.msgs) - 1 >= seg_start and self.msgs[-1]["role"] == "user":
            self._extend(len(self.msgs) - 1, content, line, rec, m)
            return
        self._new("user", content, line, rec, m)

    def conversation(self, title: str, source: str, problems: list) -> Conversation:
        for i, u in self.raw_usage.items():
            self.meta[i].usage = _usage(u)
        self.raw_usage = {}
        for i in self.touched:
            lines = self.meta[i].extra.get("lines") or [0]
            self.meta[i].provenance = Provenance(self.path, lines[0], max(lines))
        self.touched = set()
        ranked = sorted(self.models, key=lambda k: (k == "<synthetic>", -self.models[k]))
        model = ranked[0] if ranked else None
        return Conversation(self.msgs, ANTHROPIC, None, None, model, title, source, FORMAT, self.meta,
                            self.events, problems, {}, self.segments)


MAX_SUBAGENT_FILES = 200


def _subagent_files(path, prompts: dict | None, main_msgs: list) -> list:
    """Newer Claude Code writes subagents to ``<sessionId>/subagents/agent-*.jsonl`` next to the session:
    each becomes a conversation after the main one (only read, like the session)."""
    folder = path.with_suffix("") / "subagents"
    try:
        files = sorted(folder.glob("agent-*.jsonl"))[:MAX_SUBAGENT_FILES] if folder.is_dir() else []
    except OSError:
        return []
    if not files:
        return []
    if prompts is None:
        prompts = task_prompts(main_msgs)
    out = []
    for f in files:
        try:
            conv, _others, _parents, problems, _types, _envelope = _read(str(f), f)
        except (OSError, LoadError) as e:
            why = e.message if isinstance(e, LoadError) else f"cannot read: {e}"
            out.append(Conversation([], ANTHROPIC, title=f"subagent file {f.name}: unreadable", source=str(f),
                                    format=FORMAT, problems=[Problem(str(f), 0, why, "error")]))
            continue
        sb = _Builder(str(f))
        for r in conv:
            sb.add(r)
        if not sb.msgs:
            continue
        c = sb.conversation(f"subagent {f.stem}: " + first_text(sb.msgs), str(f), problems)
        first_user = sb.msgs[0].get("content")
        key = " ".join(first_user.split()) if isinstance(first_user, str) else first_text_of(sb.msgs[0], 10 ** 9)
        c.extra = {"kind": "subagent_file", "file": str(f), "parent_tool_use_id": prompts.get(key)}
        out.append(c)
    return out


def load(probe: Probe) -> LoadResult:
    # (the cyclic GC is paused around every loader by core.loaders.load)
    return _load(probe)


def _load(probe: Probe) -> LoadResult:
    path = str(probe.path)
    conv, others, parents, problems, types, envelope = _read(path, probe.path)
    if not conv and not any(r.get("type") == "progress" for _, r in others):
        raise LoadError(path, 0, "a Claude Code session with no user or assistant message"
                        + (f" ({problems[0]})" if problems else ""))
    kept, bounds, dropped = main_records(conv, others, parents)
    before_file, first_parent = records_before_file(kept, parents)    # (before the builder takes the messages)
    b = _Builder(path)
    add = b.add
    bi, nb = 0, len(bounds)
    for r in kept:
        while bi < nb and bounds[bi][0] <= r.line:
            b.boundary(*bounds[bi])
            bi += 1
        add(r)
        if not r.sidechain:     # built (sidechains are built again below): the line's dict is freed now
            r.rec = None
    if b.pending is not None:
        line, _ = b.pending
        problems.append(Problem(path, line, "compact boundary with no message after it"))
    summaries = [rec.get("summary") for _, rec in others if rec.get("type") == "summary"
                 and isinstance(rec.get("summary"), str)]
    titles = [rec.get("customTitle") or rec.get("title") for _, rec in others if rec.get("type") == "custom-title"]
    main_title = next((t for t in titles if isinstance(t, str)), None) or (summaries[-1] if summaries else "") \
        or first_text(b.msgs) or probe.path.name
    if dropped:
        problems.append(Problem(path, 0, f"{dropped} record(s) on an abandoned branch (rewound) left out", "info"))
    if first_parent is not None:
        problems.append(Problem(path, kept[0].line if kept else 0,
                                f"the file starts mid-session (its first record descends from {first_parent}, "
                                f"not in the file)" + (f": {len(before_file)} tool result(s) answer calls made "
                                                       f"before it" if before_file else ""),
                                "info"))
    main = b.conversation(main_title, path, list(problems))
    first = envelope.first or {}
    versions = sorted(envelope.versions)                    # every version seen (a session can change mid-file)
    main.extra = {
        "session_id": first.get("sessionId"), "cwd": first.get("cwd"), "git_branch": first.get("gitBranch"),
        "versions": versions, "record_counts": dict(types), "summaries": summaries,
        "abandoned_records": dropped,
        # an excerpt: the parent of the first record is not in the file (first_parent_uuid), and the
        # tool results that answer calls made before the file's first line (checker: result_before_file)
        "starts_mid_session": first_parent is not None, "first_parent_uuid": first_parent,
        "results_before_file": sorted(before_file),
        # non-conversation records, passed through as metadata: (line, record)
        "records": others,
    }
    convs = [main]
    groups = group_sidechains(conv, parents)
    prompts = task_prompts(b.msgs) if groups else {}
    for group in groups:
        sb = _Builder(path)
        for r in group:
            sb.add(r)
        if not sb.msgs:
            continue
        c = sb.conversation("sidechain: " + (first_text(sb.msgs) or f"line {group[0].line}"), path, [])
        first_user = sb.msgs[0].get("content")
        key = " ".join(first_user.split()) if isinstance(first_user, str) else first_text_of(sb.msgs[0], 10 ** 9)
        c.extra = {"kind": "sidechain", "root_uuid": group[0].uuid, "first_line": group[0].line,
                   "parent_tool_use_id": prompts.get(key)}
        convs.append(c)
    for agent, g in agent_groups(others).items():
        ab = _Builder(path, copy=True)
        for r in g["records"]:
            ab.add(r)
        if not ab.msgs:
            continue
        c = ab.conversation(f"subagent {agent}: " + (first_text(ab.msgs) or ""), path, [])
        c.extra = {"kind": "agent_progress", "agent_id": agent, "parent_tool_use_id": g["parent_tool_use_id"]}
        convs.append(c)
    convs.extend(_subagent_files(probe.path, prompts if groups else None, b.msgs))
    if not main.messages and len(convs) > 1:
        # a file that only holds a subagent (agent-*.jsonl): that is the main conversation
        convs = convs[1:]
        convs[0].problems = list(problems)
    return LoadResult(path, FORMAT, convs, problems)
