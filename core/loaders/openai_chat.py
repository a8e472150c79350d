"""OpenAI chat-completions messages (roles system/developer/user/assistant/tool,
``tool_calls``): a list, a request body, JSONL, an agent trajectory with a
``history``/``messages`` field (SWE-agent ``.traj``), or a Hermes session
snapshot ``{session_id, model, system_prompt, tools, messages}``.

Messages keep their API fields; anything else a tool wrote next to them
(SWE-agent's thought/action/agent, keys starting with ``_``) moves into the
message metadata. Hermes summary messages (content starting with
"[CONTEXT COMPACTION" or "[CONTEXT SUMMARY]:") become compaction events.
"""
from __future__ import annotations

import json
import re

from ..model.markers import HERMES_MERGED_SUMMARY_DELIMITER, HERMES_SUMMARY_FLAG
from ..model.conversation import (NO_EXTRA, CompactionEvent, Conversation, LoadResult, MessageMeta, Problem, Provenance,
                                  Usage, own_extra)
from ..model.messages import OPENAI, detect_dialect
from .anthropic_messages import fix_repr, first_line_is_object, read_messages
from .base import LoadError, Probe, document_lines, note_problems, parse_timestamp, read_json_streamed
from ..files.jsonio import list_at

FORMAT = "openai-chat"
HERMES_FORMAT = "hermes-session"
TRAJECTORY_FORMAT = "agent-trajectory"

API_KEYS = {"role", "content", "tool_calls", "tool_call_id", "name", "reasoning", "reasoning_content",
            "reasoning_details", "refusal", "function_call", "audio"}
SUMMARY_PREFIXES = ("[CONTEXT COMPACTION", "[CONTEXT SUMMARY]:")
_MARKERS = re.compile(r'"(tool_calls|tool_call_id|session_id|system_prompt)"\s*:|"role"\s*:\s*"(tool|system|developer)"')
_TRAJ = re.compile(r'"(history|trajectory)"\s*:\s*\[')


def sniff(probe: Probe) -> bool:
    if not probe.starts_with(b"[", b"{"):
        return False
    head = probe.text_head
    if probe.starts_with(b"{") and _TRAJ.search(head):
        return True
    return bool(_MARKERS.search(head)) and ('"role"' in head or '"messages"' in head or '"history"' in head)


def normalize(m: dict) -> tuple[dict, dict]:
    """(API message, extra fields) for one OpenAI-style message."""
    msg = {k: v for k, v in m.items() if k in API_KEYS}
    extra = {k: v for k, v in m.items() if k not in API_KEYS}
    if msg.get("role") == "tool" and "tool_call_id" not in msg:
        ids = m.get("tool_call_ids")
        if isinstance(ids, list) and ids and isinstance(ids[0], str):
            msg["tool_call_id"] = ids[0]
            if len(ids) > 1:
                extra["note"] = f"one tool message for {len(ids)} calls; tied to the first"
    if "content" not in msg:
        msg["content"] = None if msg.get("tool_calls") else ""
    return msg, extra


def is_summary(m: dict) -> bool:
    """A hermes compaction summary by its text: the prefix, also after the delimiter hermes uses when it
    merges the summary into the first kept message (both roles taken)."""
    c = m.get("content")
    if isinstance(c, list):
        c = next((p.get("text") for p in c if isinstance(p, dict) and isinstance(p.get("text"), str)), "")
    if not isinstance(c, str):
        return False
    if HERMES_MERGED_SUMMARY_DELIMITER in c:
        c = c.split(HERMES_MERGED_SUMMARY_DELIMITER, 1)[1]
    return c.lstrip().startswith(SUMMARY_PREFIXES)


def copy_keys(m: dict) -> set:
    """What identifies an OpenAI message across a compaction that re-sends it (hermes, Inspect): its
    tool-call ids (a tool result's call, an assistant's calls), else its role and text. A compaction may
    rewrite the content (a digest, "(Tool result removed)"), never the ids."""
    out = set()
    if m.get("role") == "tool" and m.get("tool_call_id"):
        out.add(("result", _hashable(m["tool_call_id"])))
    calls = list_at(m, "tool_calls")
    ids = tuple(_hashable(tc.get("id")) for tc in calls if isinstance(tc, dict) and tc.get("id"))
    if ids:
        out.add(("calls", ids))
    if not out:
        c = m.get("content")
        text = c if isinstance(c, str) else json.dumps(c, sort_keys=True, default=str) if c else ""
        if text.strip():
            out.add(("text", text))
    return out


def _hashable(x):
    return x if isinstance(x, (str, int, float)) else json.dumps(x, sort_keys=True, default=str)


def same_message(a: dict, b: dict) -> bool:
    """``b`` re-sends ``a`` (see ``copy_keys``)."""
    return a.get("role") == b.get("role") and bool(copy_keys(a) & copy_keys(b))


def summary_events(msgs: list, meta: list, kind: str = "hermes", one_context: bool = False) -> tuple[list, list]:
    """Compaction events at hermes summary messages, found by hermes' own ``_compressed_summary`` flag (kept
    in its JSON snapshots) or by the text. Each summary is marked in its meta (``compaction_summary``).

    A list of messages split at each summary (the summary starts a new segment), unless ``one_context``:
    a hermes snapshot is the agent's live context, in which the summary sits after the kept head, so the
    compaction happened before the whole list (event at message 0, no new segment)."""
    events, segments = [], [0]
    for i, m in enumerate(msgs):
        mm = meta[i] if i < len(meta) else None
        flagged = mm is not None and mm.extra.get(HERMES_SUMMARY_FLAG) is True
        if not (flagged or is_summary(m)):
            continue
        if mm is not None:
            extra = own_extra(mm)
            extra["compaction_summary"] = True
            extra["summary_source"] = HERMES_SUMMARY_FLAG if flagged else "text prefix"
        at = 0 if one_context else i
        events.append(CompactionEvent(kind, at, summary_index=i, provenance=mm.provenance if mm else None,
                                      extra={"in_context": True} if one_context else {}))
        if at > 0:
            segments.append(at)
    return events, segments


def reused_call_ids(msgs: list, meta: list, path: str) -> list[Problem]:
    """A tool-call id used by several calls (SWE-agent replays reuse them): pairs by id become ambiguous."""
    seen: dict = {}
    for i, m in enumerate(msgs):
        calls = m.get("tool_calls")
        for tc in calls if isinstance(calls, list) else ():
            if isinstance(tc, dict) and isinstance(tc.get("id"), str):
                seen.setdefault(tc["id"], []).append(i)
    out = []
    for tid, where in seen.items():
        if len(where) > 1:
            first = meta[where[1]].provenance if where[1] < len(meta) else None
            out.append(Problem(path, first.line if first else 0,
                               f"tool call id {tid} is used by {len(where)} calls (messages "
                               f"{', '.join(map(str, where))}); each result pairs with the call just before it"))
    return out


def _build(items: list, path: str, line_of, problems: list, consume: bool = False) -> tuple[list, list]:
    """The messages and meta of ``items``; ``consume``: each item is dropped from ``items`` (None in its place)
    once its message is made, so a big document's parsed items and their messages are never all held at once."""
    msgs, meta = [], []
    for i, m in enumerate(items):
        if consume:
            items[i] = None
        if not isinstance(m, dict) or not isinstance(m.get("role"), str):
            problems.append(Problem(path, line_of(i), f"item {i} is not a message (no \"role\"): skipped"))
            continue
        msg, extra = normalize(m)
        ts = None
        for k in ("timestamp", "created_at", "time"):
            if k in m:
                ts = parse_timestamp(m[k])
                break
        usage = Usage.from_dict(m.get("usage")) if isinstance(m.get("usage"), dict) else None
        msgs.append(msg)
        meta.append(MessageMeta(Provenance(path, line_of(i), note=f"message {i}"), ts, usage,
                                m.get("model") if isinstance(m.get("model"), str) else None,
                                m.get("id") if isinstance(m.get("id"), str) else None, extra or NO_EXTRA))
    return msgs, meta


def load(probe: Probe) -> LoadResult:
    path = str(probe.path)
    head = probe.text_head
    if probe.starts_with(b"{") and (_TRAJ.search(head) or '"session_id"' in head or '"system_prompt"' in head) \
            and not first_line_is_object(probe):
        notes: list = []
        keys = ("messages", "history", "trajectory")
        doc, lines = read_json_streamed(probe.path, notes, keys, drop=("trajectory",))   # (steps only counted)
        if isinstance(doc, dict) and not any(isinstance(doc.get(k), list) for k in keys[:2]) \
                and isinstance(doc.get("trajectory"), list):
            notes = []
            doc, lines = read_json_streamed(probe.path, notes, keys)        # only steps: their messages are read
        if isinstance(doc, dict):
            result = _load_document(probe, doc, lines)
            result.main.problems[:0] = note_problems(path, notes)
            return result
    msgs, meta, system, tools, model, problems = read_messages(probe)
    out_msgs, out_meta = [], []
    for m, mm in zip(msgs, meta):
        msg, extra = normalize(m)
        if extra:
            own_extra(mm).update(extra)
        out_msgs.append(msg)
        out_meta.append(mm)
    events, segments = summary_events(out_msgs, out_meta)
    dialect = detect_dialect(out_msgs)
    fmt = FORMAT if dialect == OPENAI else "anthropic-messages"
    conv = Conversation(out_msgs, dialect, system, tools, model, probe.path.name, path, fmt, out_meta, events,
                        problems, segments=segments)
    return LoadResult(path, fmt, [conv], problems)


def _load_document(probe: Probe, doc: dict, found_lines: dict | None = None) -> LoadResult:
    path = str(probe.path)
    problems: list[Problem] = []
    key = next((k for k in ("messages", "history") if isinstance(doc.get(k), list)), None)
    if key is None:
        if isinstance(doc.get("trajectory"), list):
            return _load_trajectory_steps(probe, doc)
        raise LoadError(path, 1, "a JSON object with no \"messages\" or \"history\" list of messages")
    lines = (found_lines if found_lines is not None else document_lines(probe.path, (key,), doc)).get((key,), [])
    msgs, meta = _build(doc[key], path, lambda i: lines[i] if i < len(lines) else 0, problems, consume=True)
    if not msgs:
        raise LoadError(path, 1, f"the \"{key}\" list holds no message")
    hermes = "session_id" in doc or "system_prompt" in doc
    msgs = fix_repr(msgs, meta, path, problems)
    dialect = detect_dialect(msgs)
    if hermes and dialect != OPENAI and detect_dialect([*msgs, {"role": "system"}]) == OPENAI:
        dialect = OPENAI     # no mark of either dialect (one user message): hermes-agent keeps OpenAI chat messages
    fmt = HERMES_FORMAT if hermes else (TRAJECTORY_FORMAT if key == "history" or "trajectory" in doc
                                        else FORMAT if dialect == OPENAI else "anthropic-messages")
    system = doc.get("system_prompt") if hermes else doc.get("system")
    tools = doc.get("tools") if isinstance(doc.get("tools"), list) else None
    model = doc.get("model") if isinstance(doc.get("model"), str) else None
    if model is None and isinstance(doc.get("replay_config"), dict):
        agent = doc["replay_config"].get("agent")
        if isinstance(agent, dict) and isinstance(agent.get("model"), dict):
            model = agent["model"].get("name")
    events, segments = summary_events(msgs, meta, one_context=hermes)
    problems.extend(reused_call_ids(msgs, meta, path))
    title = str(doc.get("session_id") or doc.get("title") or probe.path.name)
    extra = {k: v for k, v in doc.items() if k not in (key, "tools", "system_prompt", "trajectory")}
    if isinstance(doc.get("trajectory"), list):
        extra["trajectory_steps"] = len(doc["trajectory"])
    conv = Conversation(msgs, dialect, system, tools, model, title, path,
                        fmt, meta, events, problems, extra, segments)
    return LoadResult(path, fmt, [conv], problems)


def _load_trajectory_steps(probe: Probe, doc: dict) -> LoadResult:
    """A trajectory with only ``trajectory`` steps (no history): the last step's ``messages`` if present."""
    path = str(probe.path)
    steps = [s for s in doc["trajectory"] if isinstance(s, dict)]
    for s in reversed(steps):
        if isinstance(s.get("messages"), list):
            problems: list[Problem] = []
            msgs, meta = _build(s["messages"], path, lambda i: 0, problems)
            if msgs:
                conv = Conversation(msgs, detect_dialect(msgs), None, None, None, probe.path.name, path,
                                    TRAJECTORY_FORMAT, meta, problems=problems)
                return LoadResult(path, TRAJECTORY_FORMAT, [conv], problems)
    raise LoadError(path, 1, "an agent trajectory with no \"history\" and no step holding \"messages\"")
