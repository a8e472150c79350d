"""Inspect AI eval logs: ``.json`` (one EvalLog document) and the zipped
``.eval`` (``header.json`` + ``samples/<id>_epoch_<n>.json``), with any
compression Inspect writes (deflate, and zstd, method 93, which the standard
``zipfile`` reads only from Python 3.14 on: ``backports.zstd`` before that).
One Conversation per sample, the first sample first.

Inspect messages become OpenAI chat messages (``tool_calls`` with JSON-string
arguments, ``tool`` messages with ``tool_call_id``); ``attachment://<hash>``
(and the older ``tc://``) references are resolved from the sample's
``attachments``. Model events stored condensed (``input_refs`` ranges into
``sample.events_data.messages``) are expanded, so every model call's real input
is known.

Conversation.messages is the sample's history split into real API contexts,
like Claude Code's compact boundaries: segment 0 is what the model saw up to the
first ``CompactionEvent``; each compaction starts a new segment holding exactly
the compacted input of the next model call (the always-kept prefix, a summary,
edited or kept messages), followed by what the agent added afterwards. A message
the compaction re-sent has ``meta.extra["copy_of"]`` = the index of its first
appearance (``"edited": True`` when the compaction changed it, e.g. Inspect's
"(Tool result removed)"); those are not new history, and replays skip them. So
``messages[seg_start:k]`` is the real input of the call that produced message k.
Each compaction becomes a ``CompactionEvent`` (kind "inspect"; trigger
"threshold"/"forced"; tokens before/after; ``extra``: type, strategy,
messages_before/after, the summary model call); a summary message
(``metadata.summary``) has ``meta.extra["compaction_summary"]``.
``Conversation.extra["calls"]`` lists every model call (agent, summary, side)
with its usage, output and real input.
"""
from __future__ import annotations

import json
import sys
from typing import Any, Iterable, TypeGuard

from ..model.conversation import CompactionEvent, Conversation, LoadResult, MessageMeta, Problem, Provenance, Usage
from ..model.messages import OPENAI
from .base import (
    MAX_JSON_BYTES, JSONDecodeError, LoadError, Probe, loads_lenient, parse_timestamp, read_json_streamed,
)
from .openai_chat import copy_keys
from ..files.jsonio import dict_at, list_at

if sys.version_info >= (3, 14):   # pragma: no cover - the standard zipfile reads zstd itself
    import zipfile
    ZSTD = True
else:
    try:
        from backports.zstd import zipfile   # the 3.14 zipfile, with ZIP_ZSTANDARD
        ZSTD = True
    except ImportError:  # pragma: no cover - a dependency; without it only zstd members fail
        import zipfile  # type: ignore[no-redef]  # the standard one in its place
        ZSTD = False

FORMAT = "inspect-log"
MAX_MEMBER_BYTES = 1024 * 1024 * 1024
# What all the members read from one archive may decompress to, together (a zip bomb is many small
# members too): the same limit as one .json log of the same content.
MAX_TOTAL_BYTES = MAX_JSON_BYTES
_REFS = ("attachment://", "tc://")
MAX_INPUT = 200_000        # messages in one model call's expanded input (refs may repeat a range at will)


def sniff(probe: Probe) -> bool:
    if probe.head.startswith(b"PK\x03\x04"):
        return b"header.json" in probe.head or b"samples/" in probe.head or b"_journal/" in probe.head \
            or _zip_has_samples(probe)
    if not probe.starts_with(b"{"):
        return False
    head = probe.text_head
    return '"eval"' in head and '"version"' in head and ('"samples"' in head or '"plan"' in head
                                                          or '"results"' in head or '"task"' in head)


def _zip_has_samples(probe: Probe) -> bool:
    try:
        with zipfile.ZipFile(probe.path) as z:
            names = z.namelist()
    except (zipfile.BadZipFile, OSError, ValueError, EOFError, NotImplementedError):
        return False
    return "header.json" in names or any(n.startswith("samples/") for n in names)


# ------------------------------------------------------------------ messages
class _Resolver:
    """``attachment://<hash>`` strings -> their text (whole-string references, as Inspect writes them)."""

    def __init__(self, attachments):
        self.attachments = attachments if isinstance(attachments, dict) else {}

    def __call__(self, value, depth: int = 0):
        if depth > 50:
            return value
        if isinstance(value, str):
            for p in _REFS:
                if value.startswith(p):
                    got = self.attachments.get(value[len(p):])
                    return got if isinstance(got, str) else value
            return value
        if isinstance(value, list):
            return [self(v, depth + 1) for v in value]
        if isinstance(value, dict):
            return {k: self(v, depth + 1) for k, v in value.items()}
        return value


def _content(content):
    """Inspect content (str or list of Content items) -> OpenAI content and the reasoning found."""
    if isinstance(content, str) or content is None:
        return content or "", []
    if not isinstance(content, list):
        return str(content), []
    parts, reasoning = [], []
    for c in content:
        if not isinstance(c, dict):
            parts.append({"type": "text", "text": str(c)})
            continue
        t = c.get("type")
        if t == "text":
            parts.append({"type": "text", "text": str(c.get("text", ""))})
        elif t == "reasoning":
            reasoning.append(c)
        elif t == "image":
            parts.append({"type": "image_url", "image_url": {"url": str(c.get("image", ""))}})
        else:
            parts.append({"type": "text", "text": json.dumps(c, ensure_ascii=False, default=str)})
    if all(p.get("type") == "text" for p in parts):
        return "".join(p["text"] for p in parts), reasoning
    return parts, reasoning


def _message(m: dict) -> tuple[dict, dict]:
    role = m.get("role")
    content, reasoning = _content(m.get("content"))
    msg: dict = {"role": role, "content": content}
    extra = {k: v for k, v in m.items() if k not in ("role", "content", "tool_calls", "tool_call_id", "function")}
    if reasoning:
        extra["reasoning"] = reasoning
    if role == "assistant" and isinstance(m.get("tool_calls"), list) and m["tool_calls"]:
        calls = []
        for k, tc in enumerate(m["tool_calls"]):
            if not isinstance(tc, dict):
                continue
            args = tc.get("arguments")
            calls.append({"id": str(tc.get("id") or f"call_{k}"), "type": "function",
                          "function": {"name": str(tc.get("function") or "?"),
                                       "arguments": args if isinstance(args, str)
                                       else json.dumps(args if args is not None else {}, ensure_ascii=False)}})
        if calls:
            msg["tool_calls"] = calls
            if msg["content"] == "":
                msg["content"] = None
    if role == "tool":
        tid = m.get("tool_call_id")
        msg["tool_call_id"] = tid if isinstance(tid, str) or tid is None else str(tid)
        if m.get("function"):
            msg["name"] = m.get("function")
        if isinstance(m.get("error"), dict) and not msg["content"]:
            msg["content"] = str(m["error"].get("message", ""))
    md = m.get("metadata")
    if isinstance(md, dict) and md.get("summary") is True:
        extra["compaction_summary"] = True
        extra["summary_source"] = "metadata.summary"
    return msg, extra


def _usage(u) -> Usage | None:
    if not isinstance(u, dict):
        return None

    def num(k):
        v = u.get(k)
        return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else 0
    return Usage(num("input_tokens"), num("output_tokens"), num("input_tokens_cache_write"),
                 num("input_tokens_cache_read"))


def _int(v):
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _is_msg(m: Any) -> TypeGuard[dict]:
    return isinstance(m, dict) and isinstance(m.get("role"), str)


# ------------------------------------------------------------------ one sample
class _Lines:
    """Line numbers inside a pretty-printed .json log (empty for .eval members)."""

    def __init__(self, table: dict | None = None, i: int | None = None):
        self.table, self.i = table or {}, i

    def get(self, *path) -> list:
        return self.table.get(("samples", self.i) + path, []) if self.i is not None else []


class _Sample:
    """Builds one sample's conversation: history split into real contexts (see the module doc)."""

    def __init__(self, s: dict, path: str, where: str, lines: _Lines):
        self.s, self.path, self.where = s, path, where
        self.resolve = _Resolver(s.get("attachments"))
        self.problems: list[Problem] = []
        self.msg_lines, self.ev_lines = lines.get("messages"), lines.get("events")
        self.pool_lines = lines.get("events_data", "messages")
        raw = list_at(s, "messages")
        self.hist: list[dict] = []          # the sample's history, converted
        self.hist_extra: list[dict] = []
        self.hist_raw_i: list[int] = []     # index in sample.messages
        self.hist_id: dict = {}             # Inspect message id -> history index
        for i, m in enumerate(raw):
            if not _is_msg(m):
                self.problems.append(Problem(path, self._line(self.msg_lines, i),
                                             f"{where}: messages[{i}] is not a message: skipped"))
                continue
            msg, extra = _message(self.resolve(m))
            if isinstance(m.get("id"), str):
                self.hist_id.setdefault(m["id"], len(self.hist))
            self.hist.append(msg)
            self.hist_extra.append(extra)
            self.hist_raw_i.append(i)
        # the pools of condensed model events: ``events_data`` today, ``message_pool``/``call_pool`` in some
        # earlier 0.3 releases
        ed = dict_at(s, "events_data")
        pool = ed.get("messages") if isinstance(ed.get("messages"), list) else s.get("message_pool")
        self.pool = pool if isinstance(pool, list) else []
        calls = ed.get("calls") if isinstance(ed.get("calls"), list) else s.get("call_pool")
        self.call_pool = calls if isinstance(calls, list) else []
        self._pool_cache: dict = {}
        self._pool_all: list | None = None
        self._pool_holes = False
        # output
        self.msgs: list = []
        self.meta: list[MessageMeta] = []
        self.first: dict = {}               # history index -> index in msgs
        self.originals: dict = {}           # (role, copy key) -> the latest history message in msgs
        self._unsent = 0                    # every history message before it is emitted
        self.keys: list = []                # per msgs entry: identity of the message (for prefix matching)
        self.segments = [0]
        self.seg_keys: list = []            # keys of the current segment
        self.events: list[CompactionEvent] = []
        self.calls: list[dict] = []

    @staticmethod
    def _line(lines: list, i: int) -> int:
        return lines[i] if 0 <= i < len(lines) else 0

    # ---------------------------------------------------------- inputs
    def _pool_msg(self, p: int):
        """(converted message, extra, key, history index or None) of pool entry p."""
        got = self._pool_cache.get(p)
        if got is None:
            m = self.pool[p] if 0 <= p < len(self.pool) else None
            if not _is_msg(m):
                got = (None, None, None, None)
            else:
                mid = m.get("id") if isinstance(m.get("id"), str) else None
                h = self.hist_id.get(mid) if mid is not None else None
                if h is not None:
                    got = (self.hist[h], self.hist_extra[h], ("id", mid), h)
                else:
                    msg, extra = _message(self.resolve(m))
                    got = (msg, extra, ("id", mid) if mid else ("pool", p), None)
            self._pool_cache[p] = got
        return got

    def _pool_entries(self) -> list:
        """Every pool entry as (message, extra, key, history index, pool index), converted once (None for an
        entry that is not a message)."""
        if self._pool_all is None:
            self._pool_all = []
            for p in range(len(self.pool)):
                msg, extra, key, h = self._pool_msg(p)
                self._pool_all.append((msg, extra, key, h, p) if msg is not None else None)
            self._pool_holes = None in self._pool_all
        return self._pool_all

    def _input(self, e: dict) -> list | None:
        """The model call's real input: [(message, extra, key, history index, pool index)], or None when the
        event does not record it."""
        refs = e.get("input_refs")
        if isinstance(refs, list) and refs and not e.get("input"):
            pool = self._pool_entries()
            out: list = []
            n = len(pool)
            for r in refs:
                if type(r) not in (list, tuple) or len(r) != 2 or type(r[0]) is not int or type(r[1]) is not int:
                    continue
                if len(out) > MAX_INPUT:
                    self.problems.append(Problem(self.path, 0, f"{self.where}: a model input of more than "
                                                               f"{MAX_INPUT:,} messages was cut there", "error"))
                    break
                out.extend(pool[max(0, r[0]):min(r[1], n)])
            return [x for x in out if x is not None] if self._pool_holes else out
        inp = e.get("input")
        if isinstance(inp, list) and inp:
            out = []
            for m in inp:
                if not _is_msg(m):
                    continue
                mid = m.get("id") if isinstance(m.get("id"), str) else None
                h = self.hist_id.get(mid) if mid else None
                if h is not None:
                    out.append((self.hist[h], self.hist_extra[h], ("id", mid), h, None))
                else:
                    msg, extra = _message(self.resolve(m))
                    out.append((msg, extra, ("id", mid) if mid else ("json", json.dumps(msg, sort_keys=True,
                                                                                        default=str)), None, None))
            return out
        return None

    # ---------------------------------------------------------- emitting
    def _emit_hist(self, h: int, prov: Provenance | None = None) -> int:
        i = len(self.msgs)
        self.first[h] = i
        raw_i = self.hist_raw_i[h]
        self.msgs.append(self.hist[h])
        self.meta.append(MessageMeta(prov or Provenance(self.path, self._line(self.msg_lines, raw_i),
                                                        note=f"{self.where} messages[{raw_i}]"),
                                     None, None, None, None, dict(self.hist_extra[h])))
        m = self.s["messages"][raw_i]
        self.meta[i].model = m.get("model") if isinstance(m.get("model"), str) else None
        self.meta[i].uuid = m.get("id") if isinstance(m.get("id"), str) else None
        key = ("id", self.meta[i].uuid) if self.meta[i].uuid else ("hist", h)
        self.keys.append(key)
        self.seg_keys.append(key)
        role = self.hist[h].get("role")
        for k in copy_keys(self.hist[h]):
            self.originals[(role, k)] = i          # the latest history message with this identity
        return i

    def _emit_input(self, msg: dict, extra: dict, key, p, ev_i: int, marks: dict, why: str) -> int:
        """A message known only from a model call's input (a compaction's copy or rewrite)."""
        i = len(self.msgs)
        line = self._line(self.pool_lines, p) if p is not None else 0
        where = f"{self.where} events_data.messages[{p}]" if p is not None else f"{self.where} events[{ev_i}].input"
        self.msgs.append(dict(msg))        # its own dict: a copy is a separate message of the list
        ex = dict(extra or {})
        ex.update(marks)
        ex["sent_in"] = f"events[{ev_i}]"
        self.meta.append(MessageMeta(Provenance(self.path, line or self._line(self.ev_lines, ev_i),
                                                note=f"{where}, {why}"),
                                     None, None, None, key[1] if key and key[0] == "id" else None, ex))
        self.keys.append(key)
        self.seg_keys.append(key)
        return i

    def _original(self, msg: dict, h) -> int | None:
        """For a message a compaction re-sent or rewrote: where it first appeared in msgs."""
        if h is not None:
            return self.first.get(h)
        found = [self.originals.get((msg.get("role"), k)) for k in copy_keys(msg)]
        return max((j for j in found if j is not None), default=None)

    def _flush_hist(self, upto: int) -> None:
        """Emit the history messages before index ``upto`` that are not emitted yet (in history order)."""
        h = self._unsent
        while h < upto:
            if h not in self.first:
                self._emit_hist(h)
            h += 1
        while self._unsent in self.first:       # the first history message not emitted yet
            self._unsent += 1

    # ---------------------------------------------------------- the walk
    def build(self) -> None:
        events = list_at(self.s, "events")
        model_evs = [k for k, e in enumerate(events) if isinstance(e, dict) and e.get("event") == "model"]
        comp_evs = [k for k, e in enumerate(events) if isinstance(e, dict) and e.get("event") == "compaction"]
        # a summary-type compaction's summary model call: the last model event before it
        summary_call_of: dict = {}
        last_model = None                # the last model event since the previous compaction
        for k in sorted(model_evs + comp_evs):
            if events[k].get("event") == "model":
                last_model = k
                continue
            if events[k].get("type") == "summary" and last_model is not None:
                out_id = self._output_id(events[last_model])
                if out_id is not None and out_id not in self.hist_id:   # its answer is not in the history
                    summary_call_of[k] = last_model
            last_model = None
        summary_calls = set(summary_call_of.values())
        hist_assistants = [h for h, m in enumerate(self.hist) if m["role"] == "assistant"]
        by_id = any(self._output_id(events[k]) is not None for k in model_evs)
        pending: list[int] = []          # compaction events since the last agent call
        n_agent = 0
        for k in sorted(model_evs + comp_evs):
            e = events[k]
            if e.get("event") == "compaction":
                pending.append(k)
                continue
            out_id = self._output_id(e)
            if k in summary_calls:
                self._call_row(k, e, "summary", None, self._input(e))
                continue
            h_out = self.hist_id.get(out_id) if out_id is not None else None
            if not by_id and h_out is None and n_agent < len(hist_assistants):
                h_out = hist_assistants[n_agent]      # no message ids: the k-th call made the k-th answer
            inp = self._input(e)
            if h_out is None and not self._extends(inp) and not pending:
                self._call_row(k, e, "side", None, inp)   # a scorer, a sub-agent, a tool's own model call
                continue
            n_agent += 1
            if pending:
                self._compaction(pending, inp, h_out, events, summary_call_of)
                pending = []
            elif inp is not None:
                self._extend(inp, k)
            else:
                self._flush_hist(h_out if h_out is not None else len(self.hist))
            start, end = self.segments[-1], len(self.msgs)
            o = None
            if h_out is not None and h_out not in self.first:
                self._flush_hist(h_out)
                o = self._emit_hist(h_out)
            elif h_out is not None:
                o = self.first[h_out]
            if o is not None:
                self._output_meta(o, e)
            self._call_row(k, e, "agent", o, inp, (start, end))
        if pending:                       # compactions after the last call: nothing shows their result
            self._flush_hist(len(self.hist))
            for c in pending:
                self.events.append(self._event(c, events[c], len(self.msgs), None, summary_call_of))
        self._flush_hist(len(self.hist))   # what the agent added after its last call (e.g. the answer's tool result)

    def _output_id(self, e: dict):
        out = dict_at(e, "output")
        ch = list_at(out, "choices")
        if ch and isinstance(ch[0], dict) and isinstance(ch[0].get("message"), dict):
            mid = ch[0]["message"].get("id")
            return mid if isinstance(mid, str) else None
        return None

    def _extends(self, inp) -> bool:
        if not inp:
            return False
        n = len(self.seg_keys)
        return n > 0 and len(inp) >= n and [x[2] for x in inp[:n]] == self.seg_keys

    def _common(self, inp: list) -> int:
        """How many first messages of ``inp`` are the current segment's."""
        n = min(len(self.seg_keys), len(inp))
        if [x[2] for x in inp[:n]] == self.seg_keys[:n]:
            return n
        same = 0
        while same < n and inp[same][2] == self.seg_keys[same]:
            same += 1
        return same

    def _extend(self, inp: list, ev_i: int) -> None:
        """A call without a compaction before it: its input is the current segment plus new messages."""
        n = len(self.seg_keys)
        same = self._common(inp)
        for msg, extra, key, h, p in inp[same:]:
            if h is not None and h not in self.first:
                self._flush_hist(h)
                self._emit_hist(h)
            elif h is not None or same < n:
                # the input differs from the segment without a recorded compaction: keep the history, say so
                continue
            else:
                self._emit_input(msg, extra, key, p, ev_i, {"not_in_history": True}, "sent but not in the history")
        if same < n:
            self.problems.append(Problem(self.path, self._line(self.ev_lines, ev_i),
                                         f"{self.where} events[{ev_i}]: the model input differs from the context "
                                         "before it without a compaction event", "info"))

    def _compaction(self, pending: list, inp, h_out, events: list, summary_call_of: dict) -> None:
        """One or more compactions before this call: close the segment, the call's input is the new one."""
        # the history the old context held at the compaction: everything before the call's output and
        # before what the compaction made (the summary message)
        cand = [h for (_, _, _, h, _) in inp if h is not None] if inp is not None else range(len(self.hist))
        made = [h for h in cand if h not in self.first and (h_out is None or h < h_out)
                and self.hist_extra[h].get("compaction_summary")]
        newest = max((h for (_, _, _, h, _) in inp or [] if h is not None), default=None)
        bounds = [h_out, *made] + ([newest + 1] if newest is not None else [])
        upto = min([x for x in bounds if x is not None], default=len(self.hist))
        self._flush_hist(upto)
        for c in pending[:-1]:            # several compactions in a row: only the last one's result was sent
            self.events.append(self._event(c, events[c], len(self.msgs), None, summary_call_of))
        start = len(self.msgs)
        if inp is None:
            # no recorded input: the new context starts at the next message (as a Claude Code boundary)
            if start > 0:
                self.segments.append(start)
            self.seg_keys = []
            summary_at = self._emit_hist(made[0]) if made else None
            self.events.append(self._event(pending[-1], events[pending[-1]], start, summary_at, summary_call_of))
            return
        if start > 0:
            self.segments.append(start)
        self.seg_keys = []
        summary_at = None
        ev_i = pending[-1]
        for msg, extra, key, h, p in inp:
            if h is not None and h not in self.first:
                self._flush_hist(h)
                i = self._emit_hist(h)
            else:
                orig = self._original(msg, h)
                marks = {"copy_of": orig}
                if h is None:
                    marks["edited" if orig is not None else "made_by_compaction"] = True
                i = self._emit_input(msg, extra, key, p, ev_i, marks, "re-sent after a compaction")
            if self.meta[i].extra.get("compaction_summary"):
                summary_at = i
        self.events.append(self._event(ev_i, events[ev_i], start, summary_at, summary_call_of))

    def _event(self, k: int, e: dict, at: int, summary_at, summary_call_of: dict) -> CompactionEvent:
        md = dict_at(e, "metadata")
        extra = {"type": e.get("type"), "strategy": md.get("strategy"), "source": e.get("source"),
                 "messages_before": _int(md.get("messages_before")), "messages_after": _int(md.get("messages_after")),
                 "metadata": md, "event": k, "timestamp": parse_timestamp(e.get("timestamp"))}
        sc = summary_call_of.get(k)
        if sc is not None:
            extra["summary_call"] = next((i for i, c in enumerate(self.calls) if c["event"] == sc), None)
        if summary_at is not None and extra.get("summary_call") is not None:
            self.meta[summary_at].extra["summary_call"] = extra["summary_call"]
        trigger = md.get("trigger") if isinstance(md.get("trigger"), str) else None
        return CompactionEvent("inspect", at, trigger, _int(e.get("tokens_before")), _int(e.get("tokens_after")),
                               summary_at, Provenance(self.path, self._line(self.ev_lines, k),
                                                      note=f"{self.where} events[{k}]"), extra)

    def _output_meta(self, i: int, e: dict) -> None:
        out = dict_at(e, "output")
        m = self.meta[i]
        m.usage = _usage(out.get("usage"))
        m.timestamp = parse_timestamp(e.get("timestamp"))
        if isinstance(e.get("model"), str) and not m.model:
            m.model = e["model"]

    def _call_row(self, k: int, e: dict, kind: str, output, inp, rng: tuple | None = None) -> None:
        out = dict_at(e, "output")
        ch = list_at(out, "choices")
        first = ch[0] if ch and isinstance(ch[0], dict) else {}
        u = _usage(out.get("usage"))
        row = {"seq": len(self.calls), "event": k, "kind": kind, "model": e.get("model"),
               "t_start": parse_timestamp(e.get("timestamp")),
               "usage": {"input_tokens": u.input_tokens, "output_tokens": u.output_tokens,
                         "cache_creation_input_tokens": u.cache_creation_input_tokens,
                         "cache_read_input_tokens": u.cache_read_input_tokens} if u else None,
               "context_tokens": u.context_tokens if u else None, "stop_reason": first.get("stop_reason"),
               "output_index": output, "input": [x[0] for x in inp] if inp is not None else None,
               "input_messages": len(inp) if inp is not None else None,
               "line": self._line(self.ev_lines, k), "where": f"{self.where} events[{k}]"}
        if rng is not None and inp is not None and rng[1] - rng[0] == len(inp):
            row["input_range"] = rng
        if kind != "agent" and isinstance(first.get("message"), dict):
            msg, _ = _message(self.resolve(first["message"]))
            row["output"] = msg
        if output is None and kind == "agent":
            row["discarded"] = True        # e.g. a model_length answer that forced a compaction
        self.calls.append(row)


def compaction_config(plan, depth: int = 0) -> dict | None:
    """The compaction strategy the log's solver ran with, as the log records it: the first ``compaction``
    object with a ``type`` among the plan's steps (react()'s ``params.compaction``: ``{"type": "trim",
    "threshold": 4000, "preserve": 0.5, ...}``), searched a few levels deep; None when the plan holds none."""
    if depth > 6:
        return None
    if isinstance(plan, dict):
        c = plan.get("compaction")
        if isinstance(c, dict) and isinstance(c.get("type"), str):
            return dict(c)
        items: Iterable[Any] = plan.values()
    elif isinstance(plan, list):
        items = plan
    else:
        return None
    for v in items:
        if isinstance(v, (dict, list)):
            found = compaction_config(v, depth + 1)
            if found is not None:
                return found
    return None


def _sample(s: dict, path: str, where: str, header: dict, lines: _Lines | None = None) -> Conversation:
    b = _Sample(s, path, where, lines or _Lines())
    b.build()
    model = None
    ev = dict_at(header, "eval")
    if isinstance(ev.get("model"), str):
        model = ev["model"]
    title = f"sample {s.get('id')} epoch {s.get('epoch')}"
    task = ev.get("task")
    if isinstance(task, str):
        title = f"{task}: {title}"
    extra = {k: s.get(k) for k in ("id", "epoch", "input", "target", "scores", "metadata", "model_usage",
                                   "total_time", "working_time", "error") if k in s}
    extra["calls"] = b.calls
    extra["history_messages"] = len(b.hist)
    extra["eval"] = {k: ev[k] for k in ("eval_id", "run_id", "task", "task_id", "created") if isinstance(ev.get(k), str)}
    config = compaction_config(header.get("plan"))
    if config is not None:
        extra["compaction_config"] = config
    return Conversation(b.msgs, OPENAI, None, None, model, title, path, FORMAT, b.meta, b.events, b.problems,
                        extra, b.segments)


def load(probe: Probe) -> LoadResult:
    path = str(probe.path)
    if probe.head.startswith(b"PK\x03\x04"):
        return _load_eval(probe)
    notes: list = []             # what only a lenient reader takes (a cut emoji, NaN): made valid, reported
    doc, table = read_json_streamed(probe.path, notes, ("samples",),
                                    (("messages",), ("events",), ("events_data", "messages")))
    if not isinstance(doc, dict):
        raise LoadError(path, 1, "not an Inspect log: the document is not an object")
    samples = doc.get("samples")
    if not isinstance(samples, list) or not samples:
        raise LoadError(path, 1, "an Inspect log with no samples (was it written with samples excluded?)")
    convs = [_sample(s, path, f"samples[{i}]", doc, _Lines(table, i))
             for i, s in enumerate(samples) if isinstance(s, dict)]
    if notes and convs:
        convs[0].problems.insert(0, Problem(path, 0, "; ".join(dict.fromkeys(notes)), "warning"))
    return _result(path, convs)


def _result(path: str, convs: list) -> LoadResult:
    convs = [c for c in convs if c.messages]
    if not convs:
        raise LoadError(path, 0, "an Inspect log whose samples hold no messages")
    problems = [p for c in convs for p in c.problems]
    return LoadResult(path, FORMAT, convs, problems)


# ------------------------------------------------------------------ .eval archives
def _member_error(name: str, path: str, e: Exception) -> LoadError:
    if isinstance(e, NotImplementedError):
        if not ZSTD:
            return LoadError(path, 0, f"{name} in the archive is compressed with zstd (method 93), which this "
                                      "Python cannot read: install backports.zstd (pip install backports.zstd) "
                                      "or use Python 3.14 or later")
        return LoadError(path, 0, f"{name} in the archive uses a compression method that cannot be read ({e})")
    return LoadError(path, 0, f"{name} in the archive is broken ({type(e).__name__}: {e})")


class _Budget:
    def __init__(self, total: int):
        self.left = total


def _read_member(z, name: str, path: str, budget: _Budget, notes: list | None = None):
    info = z.getinfo(name)
    if info.file_size > MAX_MEMBER_BYTES:
        raise LoadError(path, 0, f"{name} in the archive is {info.file_size:,} bytes: too large")
    try:
        with z.open(info) as f:
            data = f.read(min(budget.left, MAX_MEMBER_BYTES) + 1)
    except (NotImplementedError, zipfile.BadZipFile, EOFError, OSError, ValueError, RuntimeError) as e:
        raise _member_error(name, path, e) from None
    except Exception as e:   # zlib.error, the zstd module's ZstdError, lzma/bz2 errors
        raise _member_error(name, path, e) from None
    if len(data) > budget.left:
        raise LoadError(path, 0, f"the archive's members decompress to more than {MAX_TOTAL_BYTES:,} bytes "
                                 "(a zip bomb, or a log too large to open)")
    budget.left -= len(data)
    try:
        return loads_lenient(data, notes=notes)
    except (RecursionError, *JSONDecodeError) as e:
        raise LoadError(path, 0, f"{name} in the archive is broken JSON: {str(e).split(':')[0]}") from None


def _load_eval(probe: Probe) -> LoadResult:
    path = str(probe.path)
    try:
        with zipfile.ZipFile(probe.path) as z:
            infos = z.infolist()
            names = [i.filename for i in infos]
            head_name = next((h for h in ("header.json", "_journal/start.json") if h in names), None)
            sample_names = [n for n in names if n.startswith("samples/") and n.endswith(".json")
                            and n.count("/") == 1]
            if not sample_names:
                if any(n.startswith("samples/") and n.endswith("/sample.json") for n in names):
                    raise LoadError(path, 0, "this .eval log stores its samples chunked (samples/<id>/...), a "
                                             "layout Compactscope does not read yet: convert it with `inspect log "
                                             "convert --to json` and open the .json")
                raise LoadError(path, 0, "a zip archive with no samples/*.json: not an Inspect .eval log")
            # the sizes the archive declares, checked before anything is decompressed
            wanted = set(sample_names) | ({head_name} if head_name else set())
            declared = sum(i.file_size for i in infos if i.filename in wanted)
            if declared > MAX_TOTAL_BYTES:
                raise LoadError(path, 0, f"the archive's samples would decompress to {declared:,} bytes, over the "
                                         f"{MAX_TOTAL_BYTES:,}-byte limit (a zip bomb, or a log too large to open)")
            budget = _Budget(MAX_TOTAL_BYTES)
            head_notes: list = []
            header = _read_member(z, head_name, path, budget, head_notes) if head_name else {}

            def order(n):
                stem = n[len("samples/"):-len(".json")]
                sid, _, ep = stem.rpartition("_epoch_")
                return (0, int(sid), int(ep or 0)) if sid.isdigit() and ep.isdigit() else (1, stem, 0)
            convs = []
            for n in sorted(sample_names, key=order):
                notes: list = []
                s = _read_member(z, n, path, budget, notes)
                if isinstance(s, dict):
                    convs.append(_sample(s, path, n, header if isinstance(header, dict) else {}))
                    notes = head_notes + notes if len(convs) == 1 else notes
                    if notes:      # what only a lenient reader takes (a cut emoji, NaN): made valid, reported
                        convs[-1].problems.insert(0, Problem(path, 0, f"{n}: " + "; ".join(dict.fromkeys(notes)),
                                                             "warning"))
    except zipfile.BadZipFile as e:
        raise LoadError(path, 0, f"a broken zip archive: {e}") from None
    except NotImplementedError as e:     # (its directory asks for a zip version or feature zipfile does not read)
        raise LoadError(path, 0, f"a zip archive Compactscope cannot read ({e}): re-save the log with `inspect log "
                                 "convert --to json` and open the .json") from None
    except (OSError, EOFError, ValueError, KeyError) as e:
        raise LoadError(path, 0, f"cannot read the archive: {type(e).__name__}: {e}") from None
    return _result(path, convs)
