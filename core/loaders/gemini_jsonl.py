"""Gemini CLI session JSONL (``~/.gemini/tmp/<project>/chats/session-*.jsonl``, Gemini CLI 0.5x on; the older
releases wrote one JSON document, ``core/loaders/gemini.py``).

One JSON object a line:

* a header ``{sessionId, projectHash, startTime, lastUpdated, kind}`` (written again by every resume);
* a message record ``{id, timestamp, type: user|gemini|info|error|warning, content, toolCalls?, thoughts?,
  tokens?, model?}``; a record whose id was seen replaces that message in place (the CLI writes a model
  answer first without and then with its ``toolCalls``);
* ``{"$set": {...}}``: metadata (``lastUpdated``, ``sessionId``, ...); ``{"$set": {"messages": [...]}}``
  replaces the whole history, in the API's own shape (``content`` holds ``functionCall`` and
  ``functionResponse`` parts);
* ``{"$rewindTo": id}``: the history from that message on is dropped.

A ``$set messages`` is one of three things, told apart by where it stands and what it holds: **a resume**
(right after a header and a one-message ``$set`` of the session context, maybe a ``$set sessionId`` between:
the CLI re-opened the file and wrote the history it rebuilt; sometimes it writes no header: then between
turns, a history holding nothing the current one lacks), **a masking** (the same history with old tool outputs
masked by the CLI's tool output masking service: noted in ``Conversation.extra["maskings"]``, no compression)
or **a compression** (anything else: the chat compression service's new history: the session context, the
``<state_snapshot>`` summary, the model's acknowledgement, the kept tail).
A compression starts a new segment holding the new history (the re-sent messages marked ``copy_of``, the
summary ``compaction_summary``); a resume changes no context and is noted in ``Conversation.extra["resumes"]``
(with the tool responses it duplicated: the CLI sends them twice, merged into one content), and the first
message after it is marked ``after_resume`` (a resumed chat starts its token count from an estimate). A
rewind starts a segment of the messages it kept.

One message per API content, as the CLI sends them (Anthropic dialect: consecutive user records are one
message, as the CLI merges them into one content): a model answer is an assistant message of text and
``tool_use`` blocks; a ``functionResponse`` part a ``tool_result`` block. ``tokens.input`` is the request's
``promptTokenCount``: the context size; ``tokens.cached`` counts as cache reads.
"""
from __future__ import annotations

import json
from typing import Any

from ..runtime.record import field, record
from ..model.conversation import CompactionEvent, Conversation, LoadResult, MessageMeta, Problem, Provenance, Usage
from ..model.messages import ANTHROPIC
from .gemini import result_text
from .base import LINE_TOO_LONG, JSONDecodeError, LoadError, Probe, iter_lines, loads_lenient, parse_timestamp

FORMAT = "gemini-cli-jsonl"
AGENT = "Gemini CLI"
ACK = "Got it. Thanks for the additional context!"      # the model turn the CLI puts after the summary
SNAPSHOT = "<state_snapshot>"
MASKED = "<tool_output_masked>"                          # the CLI's tag around a masked tool output
MESSAGE_TYPES = ("user", "gemini", "info", "error", "warning")
_HEADER_KEYS = ("sessionId", "projectHash")


def _is_header(rec: Any) -> bool:
    return isinstance(rec, dict) and all(k in rec for k in _HEADER_KEYS) and "type" not in rec \
        and not isinstance(rec.get("messages"), list)


def _is_record(r: Any) -> bool:
    return isinstance(r, dict) and ("$set" in r or "$rewindTo" in r or (
        r.get("type") in MESSAGE_TYPES and isinstance(r.get("id"), str) and "content" in r and "message" not in r))


def sniff(probe: Probe) -> bool:
    if not probe.starts_with(b"{"):
        return False
    first = probe.first_line_value()
    rest = [r for r in probe.first_json_lines(4)[1:] if r is not None]
    if _is_header(first):
        return not rest or any(_is_record(r) for r in rest)
    # a file that lost its first lines (cut from a longer one): its records, a $set among them
    return _is_record(first) and any(isinstance(r, dict) and "$set" in r for r in [first, *rest])


# ------------------------------------------------------------------ parts -> messages
def _num(d: dict, k: str) -> int:
    v = d.get(k)
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0 else 0


def usage_of(rec: dict) -> Usage | None:
    tok = rec.get("tokens")
    if not isinstance(tok, dict):
        return None
    cached = _num(tok, "cached")
    return Usage(max(_num(tok, "input") - cached, 0), _num(tok, "output") + _num(tok, "thoughts"), 0, cached)


def response_text(resp: Any) -> str:
    """A function response's text as the CLI reads it: ``output`` (or ``error``) when it is all there is,
    else the JSON."""
    if isinstance(resp, str):
        return resp
    if isinstance(resp, dict) and set(resp) <= {"output", "error"} and resp:
        v = resp.get("output", resp.get("error", ""))
        return v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)
    return json.dumps(resp, ensure_ascii=False, default=str)


def _parts(content: Any) -> list:
    if isinstance(content, str):
        return [{"text": content}] if content else []
    if isinstance(content, list):
        return [p if isinstance(p, dict) else {"text": str(p)} for p in content]
    if isinstance(content, dict):
        return [content]
    return []


def _part_text(p: dict) -> str | None:
    t = p.get("text")
    if isinstance(t, str) and not p.get("thought"):
        return t
    return None


def _tool_use(fc: dict, fallback: str) -> dict:
    args = fc.get("args")
    return {"type": "tool_use", "id": str(fc.get("id") or fallback), "name": str(fc.get("name") or "?"),
            "input": args if isinstance(args, dict) else ({} if args is None else {"args": args})}


def _user_blocks(parts: list) -> list:
    """A user content's parts as blocks: a tool result per function response, a text block per text."""
    blocks: list = []
    for p in parts:
        fr = p.get("functionResponse")
        if isinstance(fr, dict):
            blocks.append({"type": "tool_result", "tool_use_id": str(fr.get("id") or ""),
                           "content": response_text(fr.get("response"))})
        elif _part_text(p) is not None:
            blocks.append({"type": "text", "text": _part_text(p)})
        elif p:
            blocks.append({"type": "text", "text": json.dumps(p, ensure_ascii=False)})
    return blocks


def record_messages(rec: dict, where: Provenance, answered: set) -> list[tuple[dict, MessageMeta]]:
    """The messages of one message record (live or inside a ``$set``), one per API content. ``answered``: the
    call ids a user record answers in the file: a model answer's ``toolCalls[].result`` becomes a tool result only
    for a call no user record answers (the older files)."""
    t = rec.get("type")
    ts = parse_timestamp(rec.get("timestamp"))
    rid = rec.get("id") if isinstance(rec.get("id"), str) else None
    extra = {k: v for k, v in rec.items() if k not in ("content", "toolCalls", "type", "timestamp", "id", "tokens",
                                                       "thoughts")}
    parts = _parts(rec.get("content"))
    if t == "user":
        blocks = _user_blocks(parts)
        return [({"role": "user", "content": blocks}, MessageMeta(where, ts, uuid=rid, extra=extra))] if blocks \
            else []
    if t != "gemini":
        return []
    text = "".join(x for x in (_part_text(p) for p in parts) if x is not None)
    content: list = [{"type": "text", "text": text}] if text else []
    content += [_tool_use(p["functionCall"], f"{rid}_{k}") for k, p in enumerate(parts)
                if isinstance(p.get("functionCall"), dict)]
    tc = rec.get("toolCalls")
    raw_calls: list = [c for c in tc if isinstance(c, dict)] if isinstance(tc, list) else []
    seen = {b["id"] for b in content if b["type"] == "tool_use"}
    for k, c in enumerate(raw_calls):
        use = _tool_use(c, f"{rid}_tc{k}")
        if use["id"] not in seen:
            content.append(use)
            seen.add(use["id"])
    model = rec.get("model") if isinstance(rec.get("model"), str) else None
    out = [({"role": "assistant", "content": content or ""}, MessageMeta(where, ts, usage_of(rec), model, rid,
                                                                         extra))]
    results = [{"type": "tool_result", "tool_use_id": str(c.get("id") or f"{rid}_tc{k}"), "content": result_text(c)}
               for k, c in enumerate(raw_calls) if str(c.get("id") or f"{rid}_tc{k}") not in answered]
    if results:
        out.append(({"role": "user", "content": results},
                    MessageMeta(Provenance(where.path, where.line, note="toolCalls[].result"), ts)))
    return out


@record
class _Out:
    """The messages being built, with their metadata."""
    path: str
    msgs: list = field(default_factory=list)
    meta: list = field(default_factory=list)

    def add(self, msg: dict, meta: MessageMeta) -> int:
        self.msgs.append(msg)
        self.meta.append(meta)
        return len(self.msgs) - 1


def merge_users(items: list) -> list[tuple[dict, MessageMeta]]:
    """Consecutive user messages as one, as the CLI sends them (one content; its parts in order)."""
    out: list[tuple[dict, MessageMeta]] = []
    for msg, meta in items:
        if out and msg["role"] == "user" and out[-1][0]["role"] == "user":
            prev, pmeta = out[-1]
            lines = list(pmeta.extra.get("lines") or [pmeta.provenance.line if pmeta.provenance else 0])
            line = meta.provenance.line if meta.provenance else 0
            where = Provenance(pmeta.provenance.path, pmeta.provenance.line, line, pmeta.provenance.note) \
                if pmeta.provenance else meta.provenance
            merged = MessageMeta(where, pmeta.timestamp, None, None, pmeta.uuid,
                                 {**meta.extra, **pmeta.extra, "lines": lines + [line]})
            out[-1] = ({"role": "user", "content": list(prev["content"]) + list(msg["content"])}, merged)
        else:
            out.append((msg, meta))
    return out


def _blocks(m: dict) -> list:
    c = m.get("content")
    return c if isinstance(c, list) else [{"type": "text", "text": c}] if c else []


def _key(m: dict) -> str:
    return json.dumps([m.get("role"), m.get("content")], ensure_ascii=False, sort_keys=True, default=str)


# ------------------------------------------------------------------ the file
@record
class _Reader:
    path: str
    answered: set
    out: _Out
    problems: list = field(default_factory=list)
    events: list = field(default_factory=list)
    segments: list = field(default_factory=lambda: [0])
    resumes: list = field(default_factory=list)
    rewinds: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    header: dict = field(default_factory=dict)
    live: dict = field(default_factory=dict)        # id -> (line, record) of the records since the segment began
    since_header: list = field(default_factory=list)  # what followed the last header: "context", "sessionId", ...
    last_usage: int | None = None
    model: str | None = None
    after_resume: set = field(default_factory=set)   # ids of the first message record after each resume
    resumed: bool = False
    turn_ended: bool = False                         # the last message record: a model answer calling nothing
    maskings: list = field(default_factory=list)

    # -- live records: kept in order, a repeated id replaces its record; emitted when the segment ends
    def flush(self) -> None:
        items = []
        for rid, (n, rec) in self.live.items():
            where = Provenance(self.path, n)
            for msg, meta in record_messages(rec, where, self.answered):
                if rid in self.after_resume:
                    meta.extra["after_resume"] = True     # the first request of a resumed chat
                items.append((msg, meta))
        self.live = {}
        out = self.out
        if items and out.msgs and len(out.msgs) > self.segments[-1] and out.msgs[-1]["role"] == "user" \
                and "copy_of" not in out.meta[-1].extra:
            items.insert(0, (out.msgs.pop(), out.meta.pop()))      # a user message goes on in the next content
        for msg, meta in merge_users(items):
            out.add(msg, meta)

    def message(self, n: int, rec: dict) -> None:
        t = rec.get("type")
        if t in ("info", "error", "warning"):
            self.notes.append({"line": n, "type": t, "content": rec.get("content"), "timestamp": rec.get("timestamp")})
            return
        if t not in ("user", "gemini"):
            self.problems.append(Problem(self.path, n, f"a message record of unknown type {t!r}: skipped"))
            return
        rid = rec.get("id") if isinstance(rec.get("id"), str) else f"line{n}"
        if self.resumed:
            self.after_resume.add(rid)
            self.resumed = False
        self.live[rid] = (n, rec)                   # a known id: the same message, updated in place
        self.since_header.append("message")
        self.turn_ended = t == "gemini" and not rec.get("toolCalls") and not any(
            isinstance(p, dict) and "functionCall" in p for p in _parts(rec.get("content")))
        if t == "gemini":
            u = usage_of(rec)
            if u is not None:
                self.last_usage = u.context_tokens
            if isinstance(rec.get("model"), str):
                self.model = rec["model"]

    def rewind(self, n: int, target: Any) -> None:
        if target in self.live:
            ids = list(self.live)
            for k in ids[ids.index(target):]:
                del self.live[k]
            self.flush()
            self.rewinds.append({"line": n, "to": target})
            return
        self.flush()
        ids = [m.uuid for m in self.out.meta]
        if target not in ids:
            self.problems.append(Problem(self.path, n, f"$rewindTo {str(target)[:60]!r}: no such message; ignored"))
            return
        cut = ids.index(target)
        start = len(self.out.msgs)
        seg_start = self.segments[-1]
        for i in range(seg_start, cut):
            if "copy_of" in self.out.meta[i].extra and self.out.meta[i].extra["copy_of"] is None:
                continue
            m = self.out.meta[i]
            self.out.add(self.out.msgs[i], MessageMeta(m.provenance, m.timestamp, m.usage, m.model, m.uuid,
                                                       {**m.extra, "copy_of": m.extra.get("copy_of", i)}))
        self.segments.append(start)
        self.rewinds.append({"line": n, "to": target, "segment": len(self.segments) - 1})

    def set_messages(self, n: int, history: list) -> None:
        kinds = self.since_header
        if kinds == [] and len(history) == 1:
            self.since_header = ["context"]          # the session context a (re)start writes first: new in the
            if not self.out.msgs and not self.live and isinstance(history[0], dict):    # file's first history only
                self.live[str(history[0].get("id") or f"line{n}")] = (n, history[0])
            return
        if kinds and kinds[0] == "context" and all(k == "sessionId" for k in kinds[1:]) or self._rebuilt(n, history):
            self._resume(n, history)
            return
        masked = self._masked(n, history)
        if masked:
            # the tool output masking service (before a request, past 50,000 protected tokens of tool output):
            # no compression; the masked outputs are noted, the messages kept as they were sent before
            self.maskings.append({"line": n, "masked_outputs": masked})
            return
        self._compression(n, history)

    def _masked(self, n: int, history: list) -> int:
        """How many function responses a ``$set messages`` newly masks when it is a masking: no snapshot, as many
        contents as the history, every difference a ``<tool_output_masked>`` output."""
        self.flush()
        mapped = self._mapped(n, history)
        current = self.out.msgs[self.segments[-1]:]
        if len(mapped) != len(current):
            return 0
        masked = 0
        for (m, _), c in zip(mapped, current, strict=True):
            if _key(m) == _key(c):
                continue
            new, old = _blocks(m), _blocks(c)
            if m["role"] != c["role"] or len(new) != len(old):
                return 0
            for a, b in zip(new, old, strict=True):
                if a == b:
                    continue
                if not (a.get("type") == "tool_result" and MASKED in str(a.get("content"))):
                    return 0
                masked += 1
        return masked

    def _rebuilt(self, n: int, history: list) -> bool:
        """A resume the CLI wrote without a header: between turns (the last record a model answer that calls
        no function), a history holding nothing the current one lacks (a compression brings its summary)."""
        if not self.turn_ended:
            return False
        self.flush()
        known = {json.dumps(b, sort_keys=True, ensure_ascii=False, default=str)
                 for m in self.out.msgs[self.segments[-1]:] for b in _blocks(m)}
        return all(json.dumps(b, sort_keys=True, ensure_ascii=False, default=str) in known
                   for m, _ in self._mapped(n, history) for b in _blocks(m))

    def _mapped(self, n: int, history: list) -> list[tuple[dict, MessageMeta]]:
        out = []
        for k, rec in enumerate(history):
            if not isinstance(rec, dict):
                self.problems.append(Problem(self.path, n, f"$set messages[{k}] is not an object: skipped"))
                continue
            out += record_messages(rec, Provenance(self.path, n, note=f"$set messages[{k}]"), set())
        return merge_users(out)

    def _resume(self, n: int, history: list) -> None:
        self.flush()
        mapped = self._mapped(n, history)
        current = {_key(m) for m in self.out.msgs[self.segments[-1]:]}
        seen: set = set()
        dup = 0
        for m, _ in mapped:
            for b in m["content"] if isinstance(m["content"], list) else ():
                if b.get("type") == "tool_result":
                    k = json.dumps(b, sort_keys=True, ensure_ascii=False)
                    dup += k in seen
                    seen.add(k)
        self.resumes.append({"line": n, "messages": len(history), "duplicated_tool_responses": dup,
                             "unknown_to_the_file": sum(1 for m, _ in mapped if _key(m) not in current)})
        self.since_header = ["resumed"]
        self.resumed = True

    def _compression(self, n: int, history: list) -> None:
        self.flush()
        mapped = self._mapped(n, history)
        prev = self.segments[-1]
        by_key: dict = {}
        for i in range(prev, len(self.out.msgs)):
            by_key[_key(self.out.msgs[i])] = self.out.meta[i].extra.get("copy_of", i) \
                if self.out.meta[i].extra.get("copy_of") is not None else i
        start = len(self.out.msgs)
        summary_at = None
        for k, (msg, meta) in enumerate(mapped):
            texts = [b.get("text", "") for b in msg["content"] if b.get("type") == "text"] \
                if isinstance(msg["content"], list) else [msg["content"]]
            # the summary (the first user text holding a snapshot; the CLI sends it in one content with the
            # session context) and the acknowledgement after it are new, even when a model wrote them twice
            summary = msg["role"] == "user" and summary_at is None and any(SNAPSHOT in t for t in texts)
            ack = msg["role"] == "assistant" and texts == [ACK] and summary_at == start + k - 1
            orig = None if summary or ack else by_key.get(_key(msg))
            marks: dict = {"copy_of": orig}
            if orig is None:
                marks["made_by_compaction"] = True
                if summary:
                    marks["compaction_summary"] = True
                    summary_at = start + k
                elif ack:
                    marks["acknowledgement"] = True
            self.out.add(msg, MessageMeta(meta.provenance, meta.timestamp, meta.usage, meta.model, meta.uuid,
                                          {**meta.extra, **marks}))
        self.segments.append(start)
        self.events.append(CompactionEvent(
            "gemini_cli", start, "auto" if summary_at is not None else None, self.last_usage, None, summary_at,
            Provenance(self.path, n, note="$set messages"),
            {"type": "compression" if summary_at is not None else "history replaced", "messages_after": len(history),
             "messages_before": start - prev}))
        self.since_header = ["compressed"]

    def take(self, n: int, rec: Any) -> None:
        if not isinstance(rec, dict):
            self.problems.append(Problem(self.path, n, f"a {type(rec).__name__} where a record was expected: skipped"))
            return
        if _is_header(rec):
            self.flush()
            if not self.header:
                self.header = dict(rec)
            self.since_header = []
            return
        if "$set" in rec:
            self._set(n, rec["$set"])
            return
        if "$rewindTo" in rec:
            self.rewind(n, rec["$rewindTo"])
            return
        if "type" in rec and ("id" in rec or "content" in rec):
            self.message(n, rec)
            return
        keys = ", ".join(sorted(map(str, rec))[:6])
        self.problems.append(Problem(self.path, n, f"not a Gemini CLI session record (keys: {keys}): skipped"))

    def _set(self, n: int, value: Any) -> None:
        if not isinstance(value, dict):
            self.problems.append(Problem(self.path, n, "$set holds no object: skipped"))
            return
        if "messages" in value:
            if isinstance(value["messages"], list):
                self.set_messages(n, value["messages"])
            else:
                self.problems.append(Problem(self.path, n, "$set messages is not a list: skipped"))
        for k, v in value.items():
            if k == "sessionId":
                self.since_header.append("sessionId")
            if k != "messages" and k != "lastUpdated":
                self.header[k] = v


def _answered_ids(path, problems: list) -> tuple[set, list]:
    """Pass 1: parse every line (problems named by line) and collect the call ids live user records answer."""
    records, answered = [], set()
    for n, raw in iter_lines(path):
        if raw is None:
            problems.append(Problem(str(path), n, LINE_TOO_LONG, "error"))
            continue
        notes: list = []
        try:
            rec = loads_lenient(raw, notes)
        except (RecursionError, *JSONDecodeError) as e:
            why = str(e).split(":")[0] if str(e) else type(e).__name__
            problems.append(Problem(str(path), n, f"broken JSON ({why}): line skipped", "error"))
            continue
        if notes:
            problems.append(Problem(str(path), n, "; ".join(dict.fromkeys(notes)), "warning"))
        records.append((n, rec))
        if isinstance(rec, dict) and rec.get("type") == "user" and isinstance(rec.get("content"), list):
            for p in rec["content"]:
                fr = p.get("functionResponse") if isinstance(p, dict) else None
                if isinstance(fr, dict) and fr.get("id"):
                    answered.add(str(fr["id"]))
    return answered, records


def load(probe: Probe) -> LoadResult:
    path = str(probe.path)
    problems: list[Problem] = []
    answered, records = _answered_ids(probe.path, problems)
    r = _Reader(path, answered, _Out(path), problems)
    for n, rec in records:
        r.take(n, rec)
    r.flush()
    if not r.out.msgs:
        raise LoadError(path, 1, "a Gemini CLI session with no user or model message")
    if not r.header:
        problems.insert(0, Problem(path, 1, "the file starts without its header (sessionId, projectHash): it was cut "
                                            "from a longer session"))
    extra: dict = {**r.header, "agent": {"name": AGENT, "version": None, "versions": "0.39.0 or later",
                                         "version_note": "the file records no exact version"},
                   "notes": r.notes, "resumes": r.resumes}
    if r.rewinds:
        extra["rewinds"] = r.rewinds
    if r.maskings:
        extra["maskings"] = r.maskings
    conv = Conversation(r.out.msgs, ANTHROPIC, None, None, r.model, str(r.header.get("sessionId") or probe.path.name),
                        path, FORMAT, r.out.meta, r.events, problems, extra, r.segments)
    return LoadResult(path, FORMAT, [conv], problems)
