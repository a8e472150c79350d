"""OpenAI Codex CLI rollout files (``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<uuid>.jsonl``): one
``{timestamp, type, payload}`` record a line.

* ``session_meta``: the CLI version, cwd, model provider; its ``base_instructions`` become the system prompt
  (Codex sends them as the first developer item of every request; the CLI may trim sections the turn's tools
  do not need, so the rollout's copy is the template, not always the exact text sent);
* ``response_item``: the Responses items, mapped onto OpenAI chat messages as the OpenAI loader keeps them:
  ``message`` (developer, user, assistant), ``reasoning`` (its summary as ``reasoning_content``),
  ``function_call`` / ``custom_tool_call`` / ``local_shell_call`` (``tool_calls`` of the assistant message of
  their response: the items of one model response are one assistant message, one model call), and
  ``function_call_output`` / ``custom_tool_call_output`` (``tool`` messages);
* ``turn_context``: the model and the turn's settings; ``event_msg`` ``token_count``: the usage per call (its
  ``last_token_usage``; ``token_usage_record`` lines, when present, are read instead) and the model's window;
* ``compacted``: a compaction. Its ``replacement_history`` is the new history: a new segment starts with it,
  the messages it re-sends carry ``meta.extra["copy_of"]`` (the index of the message they repeat) and the
  summary message (``SUMMARY_PREFIX`` + the summary) ``meta.extra["compaction_summary"]``. The answer to the
  compaction request (a ``response_item`` with ``metadata.compaction_output``) is no model call of the agent:
  it is kept on the event. A ``compacted`` line without a replacement history (older CLIs) gets the history
  Codex rebuilds from it, marked ``reconstructed``. The ``item_completed`` event of a ``ContextCompaction`` item
  (and the older ``context_compacted`` event) is noted on the event.

Other records (``world_state``, other events, ``{"record_type": "state"}`` markers) are read past. A rollout of the
bare era (codex-cli before about September 2025: a first line ``{id, timestamp, instructions}``, then the items
without envelope) loads the same way. A broken line, a record that is not an object or
has no type, an item of an unknown type: a problem with its line, the rest loads.
"""
from __future__ import annotations

import json
from collections import Counter
from typing import TYPE_CHECKING, Any

from ..model.conversation import CompactionEvent, Conversation, LoadResult, MessageMeta, Problem, Provenance, Usage
from ..model.messages import OPENAI
from ..runtime.lazy import lazy_module
from .base import LINE_TOO_LONG, JSONDecodeError, LoadError, Probe, iter_lines, loads_lenient, parse_timestamp

if TYPE_CHECKING:
    from ..layers import codex_rules as R
else:                  # (every command that loads a file tries this loader first: the rules only for a rollout)
    R = lazy_module(__package__.rpartition(".")[0] + ".layers.codex_rules", globals(), "R")

FORMAT = "codex-rollout"
AGENT = "Codex CLI"
RECORD_TYPES = frozenset({"session_meta", "response_item", "turn_context", "event_msg", "compacted", "world_state",
                          "token_usage_record"})
_KEY_TYPES = ("session_meta", "response_item", "turn_context", "compacted")
CALL_ITEMS = frozenset({"function_call", "custom_tool_call", "local_shell_call"})
OUTPUT_ITEMS = frozenset({"function_call_output", "custom_tool_call_output"})
# model-generated items that carry nothing a chat message holds (noted on their call, counted on the conversation)
OPAQUE_ITEMS = frozenset({"web_search_call", "image_generation_call", "tool_search_call", "tool_search_output",
                          "ghost_snapshot", "other"})
SUMMARY_ITEMS = frozenset({"compaction", "context_compaction", "compaction_summary"})
ITEM_TYPES = CALL_ITEMS | OUTPUT_ITEMS | OPAQUE_ITEMS | {"message", "reasoning"}


def sniff(probe: Probe) -> bool:
    if not probe.starts_with(b"{"):
        return False
    recs = [x for x in probe.first_json_lines(5) if isinstance(x, dict)]
    if not recs:
        v = probe.first_line_value()
        recs = [v] if isinstance(v, dict) else []
    if any(_kind(r) in _KEY_TYPES and isinstance(r.get("payload"), dict) for r in recs):
        return True
    return bool(recs) and _legacy_header(recs[0]) and any(_bare(r) for r in recs[1:])


def _kind(item: Any) -> str | None:
    """An item's or record's ``type`` when it is a string (a file may hold anything there)."""
    t = item.get("type") if isinstance(item, dict) else None
    return t if isinstance(t, str) else None


def _legacy_header(r: dict) -> bool:
    """The first line of a rollout of the bare era (codex-cli before about September 2025): ``{id, timestamp,
    instructions, git?}``, no envelope."""
    return "type" not in r and "payload" not in r and isinstance(r.get("id"), str) and "timestamp" in r \
        and "instructions" in r


def _bare(r: dict) -> bool:
    """A line of the bare era: a Responses item without envelope, or a ``{"record_type": "state"}`` marker."""
    return r.get("record_type") == "state" or (_kind(r) in ITEM_TYPES and "payload" not in r)


# ------------------------------------------------------------------ items -> messages
def _content(parts: Any, assistant: bool) -> Any:
    """Responses content parts as chat content: one text part as a string, several as text parts, images as
    ``image_url`` parts. An assistant's parts are one string."""
    if isinstance(parts, str):
        return parts
    out: list = []
    for p in parts if isinstance(parts, list) else ():
        if not isinstance(p, dict):
            continue
        if isinstance(p.get("text"), str):
            out.append({"type": "text", "text": p["text"]})
        elif p.get("type") in ("input_image", "image") and isinstance(p.get("image_url"), str):
            out.append({"type": "image_url", "image_url": {"url": p["image_url"]}})
        elif isinstance(p.get("refusal"), str):
            out.append({"type": "text", "text": p["refusal"]})
    if assistant or all(x.get("type") == "text" for x in out) and len(out) <= 1:
        return "".join(x.get("text", "") for x in out)
    return out


def output_text(output: Any) -> str:
    """A tool output as text: a string; ``{content}`` (with ``success``); a list of content items."""
    if isinstance(output, str):
        return output
    if isinstance(output, dict):
        inner = output.get("content", output.get("output"))
        if inner is not None:
            return output_text(inner)
        return json.dumps(output, ensure_ascii=False)
    if isinstance(output, list):
        return "".join(str(p.get("text", "")) if isinstance(p, dict) else str(p) for p in output)
    return "" if output is None else json.dumps(output, ensure_ascii=False)


def _call(item: dict) -> dict:
    t = item.get("type")
    cid = str(item.get("call_id") or item.get("id") or "")
    if t == "custom_tool_call":
        name, args = str(item.get("name") or "?"), item.get("input")
    elif t == "local_shell_call":
        name, args = "local_shell", json.dumps(item.get("action") or {}, ensure_ascii=False)
    else:
        name, args = str(item.get("name") or "?"), item.get("arguments")
    return {"id": cid, "type": "function",
            "function": {"name": name, "arguments": args if isinstance(args, str) else json.dumps(args or {})}}


def _reasoning(item: dict) -> str:
    parts = [p.get("text", "") for p in item.get("summary") or () if isinstance(p, dict)]
    if not parts:
        parts = [p.get("text", "") for p in item.get("content") or () if isinstance(p, dict)]
    return "\n".join(t for t in parts if isinstance(t, str) and t)


class _Items:
    """Maps a stream of Responses items onto chat messages: the items of one model response become one
    assistant message (``close`` ends it; a usage record or any input item does)."""

    def __init__(self, path: str):
        self.path = path
        self.msgs: list = []
        self.meta: list[MessageMeta] = []
        self.open: int | None = None           # index of the assistant message still taking items
        self.responses = 0                     # assistant messages made (model responses and re-sent ones)
        self.skipped: Counter = Counter()

    def close(self) -> None:
        self.open = None

    def _assistant(self, prov: Provenance, ts: float | None, uid: Any) -> tuple[dict, MessageMeta]:
        if self.open is None:
            self.msgs.append({"role": "assistant", "content": None})
            self.meta.append(MessageMeta(prov, ts, uuid=uid if isinstance(uid, str) else None))
            self.open = len(self.msgs) - 1
            self.responses += 1
        mm = self.meta[self.open]
        if mm.provenance is not None and prov.line > mm.provenance.line:
            mm.provenance = Provenance(prov.path, mm.provenance.line, prov.line, mm.provenance.note)
        return self.msgs[self.open], mm

    def add(self, item: dict, prov: Provenance, ts: float | None) -> str | None:
        """Map one item; the problem in words when it is not one Compactscope knows."""
        t = _kind(item)
        if t == "message":
            return self._message(item, prov, ts)
        if t in OUTPUT_ITEMS:
            self.close()
            self.msgs.append({"role": "tool", "tool_call_id": str(item.get("call_id") or ""),
                              "content": output_text(item.get("output"))})
            self.meta.append(MessageMeta(prov, ts, uuid=item.get("id") if isinstance(item.get("id"), str) else None,
                                         extra={"codex_item": t}))
            return None
        if t in CALL_ITEMS or t == "reasoning":
            msg, mm = self._assistant(prov, ts, item.get("id"))
            if t == "reasoning":
                text = _reasoning(item)
                if text:
                    msg["reasoning_content"] = (msg.get("reasoning_content", "") + "\n" + text).lstrip("\n")
                enc = item.get("encrypted_content")
                if isinstance(enc, str):
                    mm.extra["encrypted_reasoning_chars"] = mm.extra.get("encrypted_reasoning_chars", 0) + len(enc)
            else:
                msg.setdefault("tool_calls", []).append(_call(item))
                if t != "function_call":
                    mm.extra.setdefault("codex_calls", {})[msg["tool_calls"][-1]["id"]] = t
            return None
        if t in OPAQUE_ITEMS:
            self.skipped[t] += 1
            return None
        return f"a response item of type {t!r} is not one Compactscope knows: skipped"

    def _message(self, item: dict, prov: Provenance, ts: float | None) -> str | None:
        role = item.get("role")
        if not isinstance(role, str):
            return "a message item without a role: skipped"
        uid = item.get("id") if isinstance(item.get("id"), str) else None
        if role == "assistant":
            msg, mm = self._assistant(prov, ts, uid)
            text = _content(item.get("content"), True)
            msg["content"] = (msg["content"] + "\n\n" + text) if msg["content"] and text else (msg["content"] or text)
            if not msg["content"] and not msg.get("tool_calls"):
                msg["content"] = ""
            if uid and mm.uuid is None:
                mm.uuid = uid
            return None
        self.close()
        self.msgs.append({"role": role, "content": _content(item.get("content"), False)})
        self.meta.append(MessageMeta(prov, ts, uuid=uid))
        return None


def _usage(u: Any) -> tuple[Usage, int] | None:
    """Codex's token usage as a Usage (its input counts the cached part) and its ``total_tokens``."""
    if not isinstance(u, dict):
        return None

    def num(k: str) -> int:
        v = u.get(k)
        return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else 0
    inp, cached, written = num("input_tokens"), num("cached_input_tokens"), num("cache_write_input_tokens")
    total = num("total_tokens") or inp + num("output_tokens")
    return Usage(max(inp - cached - written, 0), num("output_tokens"), written, cached), total


# ------------------------------------------------------------------ the reader
class _Reader:
    def __init__(self, probe: Probe):
        self.path = str(probe.path)
        self.items = _Items(self.path)
        self.problems: list[Problem] = []
        self.events: list[CompactionEvent] = []
        self.segments = [0]
        self.session: dict = {}
        self.turn: dict = {}
        self.model: str | None = None
        self.window: int | None = None
        self.usage_records = False
        self.pending_reply: dict | None = None      # the answer to a compaction request, until its compacted line
        self.after_output = False                   # the last item was a tool output (a compaction now is mid turn)
        self.by_id: dict = {}                       # item id -> first message (what a compaction may re-send)
        self.by_content: dict = {}                  # a message's JSON -> first message with it
        self.indexed = 0                            # messages indexed so far
        self.calls_at_event = 0                     # model responses when the last compaction was read
        self.first_line = 0                         # the line number of the first record

    # one record
    def record(self, n: int, rec: Any) -> None:
        if not isinstance(rec, dict):
            self.problems.append(Problem(self.path, n, "this line is not a JSON object: skipped", "error"))
            return
        t, payload = rec.get("type"), rec.get("payload")
        if rec.get("record_type") == "state" and t is None:
            return                                   # Codex's bookkeeping marker: nothing the model saw
        if n == self.first_line and _legacy_header(rec):
            self._session_meta(n, rec, None, rec)
            return
        if payload is None and _kind(rec) in ITEM_TYPES:      # the bare era: items without an envelope
            self._response_item(n, rec, parse_timestamp(rec.get("timestamp")), {})
            return
        if not isinstance(t, str) or not isinstance(payload, dict):
            self.problems.append(Problem(self.path, n, "a record without a \"type\" and a \"payload\" object: skipped",
                                         "error"))
            return
        if t not in RECORD_TYPES:
            self.problems.append(Problem(self.path, n, f"a record of type {t!r} is not one Compactscope knows: "
                                                       "skipped"))
            return
        ts = parse_timestamp(rec.get("timestamp"))
        getattr(self, "_" + t)(n, payload, ts, rec)

    def _session_meta(self, n: int, p: dict, ts: float | None, rec: dict) -> None:
        if not self.session:
            self.session = {k: p[k] for k in ("id", "session_id", "cwd", "originator", "cli_version", "source",
                                              "model_provider", "timestamp") if isinstance(p.get(k), (str, int))}
            bi = p.get("base_instructions", p.get("instructions"))       # ("instructions" before 2026)
            text = bi.get("text") if isinstance(bi, dict) else bi if isinstance(bi, str) else None
            if isinstance(text, str):
                self.session["base_instructions"] = text

    def _turn_context(self, n: int, p: dict, ts: float | None, rec: dict) -> None:
        if isinstance(p.get("model"), str):
            self.model = p["model"]
        keep = {k: v for k, v in p.items() if k in ("model", "cwd", "approval_policy", "sandbox_policy", "effort",
                                                    "summary", "model_context_window", "auto_compact_token_limit",
                                                    "model_auto_compact_token_limit", "truncation_policy")}
        self.turn = keep
        self.turn["line"] = n

    def _world_state(self, n: int, p: dict, ts: float | None, rec: dict) -> None:
        return None

    def _response_item(self, n: int, p: dict, ts: float | None, rec: dict) -> None:
        md = rec.get("metadata")
        if isinstance(md, dict) and md.get("compaction_output") is True:
            self.items.close()
            self.pending_reply = {"text": _content(p.get("content"), True), "line": n, "usage": None}
            return
        prov = Provenance(self.path, n, note=f"response_item {p.get('type')}")
        problem = self.items.add(p, prov, ts)
        if problem:
            self.problems.append(Problem(self.path, n, problem))
        elif _kind(p) in OUTPUT_ITEMS or _kind(p) == "message" and p.get("role") == "user":
            self.after_output = _kind(p) in OUTPUT_ITEMS

    def _token_usage_record(self, n: int, p: dict, ts: float | None, rec: dict) -> None:
        self.usage_records = True
        self._take_usage(_usage(p.get("usage")))

    def _take_usage(self, got: tuple[Usage, int] | None) -> None:
        if got is None:
            return
        if self.pending_reply is not None and self.pending_reply["usage"] is None:
            self.pending_reply["usage"] = got[0]
            return
        it = self.items
        k = it.open if it.open is not None else next(
            (i for i in range(len(it.msgs) - 1, self.segments[-1] - 1, -1) if it.msgs[i].get("role") == "assistant"),
            None)
        if k is not None and it.meta[k].usage is None and "copy_of" not in it.meta[k].extra:
            it.meta[k].usage = got[0]
            it.meta[k].extra["total_tokens"] = got[1]
        it.close()

    def _event_msg(self, n: int, p: dict, ts: float | None, rec: dict) -> None:
        t = p.get("type")
        if t == "token_count":
            info = _obj(p.get("info"))
            w = info.get("model_context_window")
            if isinstance(w, int) and not isinstance(w, bool) and w > 0:
                self.window = w
            last = _usage(info.get("last_token_usage"))
            if last is not None and self._post_tokens(last):
                return
            if not self.usage_records:
                self._take_usage(last)
        elif t == "item_completed":
            item = _obj(p.get("item"))
            if item.get("type") == "ContextCompaction" and self.events:
                self.events[-1].extra.setdefault("context_compaction_item", item.get("id"))
        elif t == "context_compacted" and self.events:
            self.events[-1].extra["context_compacted_event"] = n

    def _post_tokens(self, last: tuple[Usage, int]) -> bool:
        """The token count right after a compaction: Codex's own estimate of the new history (no input reported)."""
        if not self.events or self.events[-1].post_tokens is not None:
            return False
        ev = self.events[-1]
        if last[0].context_tokens == 0 and last[1] > 0 and self.items.responses == self.calls_at_event:
            ev.post_tokens = last[1]
            return True
        return False

    # a compaction
    def _compacted(self, n: int, p: dict, ts: float | None, rec: dict) -> None:
        it = self.items
        it.close()
        raw = p.get("message")
        message = raw if isinstance(raw, str) else ""
        reply = self.pending_reply or self._reply_in_history(message)
        self.pending_reply = None
        seg_start = self.segments[-1]
        before = len(it.msgs) - seg_start
        reported, since = self._figure_before(seg_start)
        start = len(it.msgs)
        hist = p.get("replacement_history")
        if isinstance(hist, list):
            self._replacement(n, hist, ts)
            reconstructed = False
        else:
            self._reconstruct(n, message, ts, seg_start)
            reconstructed = True
        summary = self._mark_copies(start, message)
        extra: dict = {"messages_before": before, "messages_after": len(it.msgs) - start, "timestamp": ts,
                       "phase": "mid_turn" if self.after_output else "between turns"}
        if reported is not None:
            extra.update(reported_total_before=reported, estimated_since=since)
        for k in ("window_number", "compaction_response_id"):
            if isinstance(p.get(k), (int, str)):
                extra[k] = p[k]
        if reconstructed:
            extra["reconstructed"] = True
        if reply is not None:
            extra["summary_reply_line"] = reply["line"]
            if reply.get("usage") is not None:
                extra["summary_call"] = {"usage": reply["usage"]}
        self.events.append(CompactionEvent("codex", start, "auto" if self.after_output else None,
                                           reported + since if reported is not None else None, None, summary,
                                           Provenance(self.path, n, note="compacted"), extra))
        if start < len(it.msgs):
            self.segments.append(start)
        self.after_output = False
        self.calls_at_event = it.responses

    def _figure_before(self, seg_start: int) -> tuple[int | None, int]:
        """What Codex checked before compacting: the last response's reported ``total_tokens`` and its estimate of
        the items recorded after it (tool outputs)."""
        it = self.items
        for i in range(len(it.msgs) - 1, seg_start - 1, -1):
            total = it.meta[i].extra.get("total_tokens")
            if it.msgs[i].get("role") == "assistant" and isinstance(total, int):
                return total, sum(R.message_tokens(m) for m in it.msgs[i + 1:])
        return None, 0

    def _reply_in_history(self, message: str) -> dict | None:
        """Older CLIs: the compaction's answer is the last assistant message, its text the summary's suffix."""
        it = self.items
        if not it.msgs or it.msgs[-1].get("role") != "assistant" or it.msgs[-1].get("tool_calls"):
            return None
        text = R.text_of(it.msgs[-1])
        if not text or not message.endswith(text):
            return None
        mm = it.meta.pop()
        it.msgs.pop()
        return {"text": text, "line": mm.provenance.line if mm.provenance else 0, "usage": mm.usage}

    def _replacement(self, n: int, hist: list, ts: float | None) -> None:
        it = self.items
        for k, item in enumerate(hist):
            prov = Provenance(self.path, n, note=f"compacted.replacement_history[{k}]")
            if not isinstance(item, dict):
                self.problems.append(Problem(self.path, n, f"replacement_history[{k}] is not an object: skipped"))
                continue
            if _kind(item) in SUMMARY_ITEMS:
                enc = item.get("encrypted_content")
                it.close()
                it.msgs.append({"role": "user", "content": f"[{item.get('type')}: an encrypted summary of "
                                                           f"{len(enc) if isinstance(enc, str) else 0:,} chars]"})
                it.meta.append(MessageMeta(prov, ts, extra={"codex_item": item.get("type"), "compaction_summary": True,
                                                            "summary_source": "encrypted compaction item"}))
                continue
            problem = it.add(item, prov, ts)
            if problem:
                self.problems.append(Problem(self.path, n, f"replacement_history[{k}]: {problem}"))
        it.close()

    def _reconstruct(self, n: int, message: str, ts: float | None, seg_start: int) -> None:
        """The history Codex rebuilds from a ``compacted`` line without one: initial context, the user's prompts
        within the budget, the summary."""
        it = self.items
        seg = it.msgs[seg_start:]
        prov = Provenance(self.path, n, note="compacted (history rebuilt as Codex does)")
        for i in R.initial_context(seg):
            it.msgs.append(seg[i])
            it.meta.append(MessageMeta(prov, ts))
        for _, text, _cut in R.select_user_messages(seg):
            it.msgs.append({"role": "user", "content": text})
            it.meta.append(MessageMeta(prov, ts))
        it.msgs.append({"role": "user", "content": message or R.NO_SUMMARY})
        it.meta.append(MessageMeta(prov, ts))

    def _mark_copies(self, start: int, message: str) -> int | None:
        """Each message of the new segment that repeats an earlier one: ``copy_of`` (by item id, else by role and
        content); the summary: ``compaction_summary``. Returns the summary's index."""
        it = self.items
        by_id, by_content = self.by_id, self.by_content
        for i in range(self.indexed, start):          # the messages before, indexed once for every compaction
            if "copy_of" in it.meta[i].extra or it.meta[i].extra.get("compaction_summary"):
                continue
            if it.meta[i].uuid:
                by_id.setdefault(it.meta[i].uuid, i)
            by_content.setdefault(_key(it.msgs[i]), i)
        self.indexed = len(it.msgs)
        summary = None
        for i in range(start, len(it.msgs)):
            mm, m = it.meta[i], it.msgs[i]
            if mm.extra.get("compaction_summary") or (m.get("role") == "user" and (
                    R.text_of(m) == message or R.is_summary_text(R.text_of(m)))):
                mm.extra["compaction_summary"] = True
                mm.extra.setdefault("summary_source", "compacted line")
                summary = i
                continue
            o = by_id.get(mm.uuid) if mm.uuid else None
            if o is None or _key(it.msgs[o]) != _key(m):
                o = by_content.get(_key(m))
            if o is not None:
                mm.extra["copy_of"] = o
        return summary

    def conversation(self) -> Conversation:
        it = self.items
        if not it.msgs:
            raise LoadError(self.path, 1, "a Codex rollout with no message (no response_item line)")
        s = self.session
        version = s.get("cli_version")
        extra: dict = {"agent": {"name": AGENT, "version": version or None}, "cli": "codex"}
        for k in ("cli_version", "cwd", "model_provider", "originator", "source"):
            if k in s:
                extra[k] = s[k]
        if self.window:
            extra["model_context_window"] = self.window
        if self.turn:
            extra["turn_context"] = self.turn
        if it.skipped:
            extra["items_not_shown"] = dict(it.skipped)
        title = str(s.get("id") or s.get("session_id") or "")
        return Conversation(it.msgs, OPENAI, s.get("base_instructions"), None, self.model, title, self.path, FORMAT,
                            it.meta, self.events, self.problems, extra, self.segments)


def _obj(v: Any) -> dict:
    return v if isinstance(v, dict) else {}


def _key(m: dict) -> str:
    return json.dumps(m, sort_keys=True, ensure_ascii=False, default=str)


def load(probe: Probe) -> LoadResult:
    reader = _Reader(probe)
    for n, raw in iter_lines(probe.path):
        if raw is None:
            reader.problems.append(Problem(reader.path, n, LINE_TOO_LONG, "error"))
            continue
        try:
            rec = loads_lenient(raw)
        except (RecursionError, *JSONDecodeError):
            reader.problems.append(Problem(reader.path, n, "broken JSON on this line: skipped", "error"))
            continue
        reader.first_line = reader.first_line or n
        reader.record(n, rec)
    conv = reader.conversation()
    return LoadResult(reader.path, FORMAT, [conv], conv.problems)
