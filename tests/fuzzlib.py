"""Fuzzing Compactscope end to end: corpus-like seeds of every input format, mutated, then sent through
every loader, the checker, every strategy (defaults and aggressive parameters), ``run --json`` and
``replay``. Used by tests/test_fuzz.py (a few hundred inputs) and bench/bench_fuzz.py (100,000+).

A failure is anything but the documented outcomes: ``load`` raising something other than ``LoadError``,
the checker or a strategy raising, a layer that raised (``Step.internal``: the engine turned a bug into
the layer's error), output that is not strict JSON, a CLI exit code other than 0/1/2, or a call that
takes longer than the time limit.
"""
from __future__ import annotations

import contextlib
import gc
import io
import json
import random
import shutil
import sqlite3
import time
import traceback
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "corpus"

# ------------------------------------------------------------------ seeds (corpus-like, every format)
S = "2026-01-20T15:07:58.839Z"


def _cc(uuid, parent, type_, message, **kw):
    return {"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": "/home/dev/p",
            "sessionId": "s1", "version": "2.1.14", "gitBranch": "main", "type": type_, "uuid": uuid,
            "timestamp": S, "message": message, **kw}


def _tool_use(i, name="Read", inp=None):
    return {"type": "tool_use", "id": f"toolu_{i}", "name": name, "input": inp or {"file_path": f"/p/f{i}.py"}}


def _tool_result(i, text="x" * 300, **kw):
    return {"type": "tool_result", "tool_use_id": f"toolu_{i}", "content": text, **kw}


def claude_code_records() -> list:
    usage = {"input_tokens": 5, "cache_creation_input_tokens": 900, "cache_read_input_tokens": 15000,
             "output_tokens": 40}
    recs = [
        {"type": "file-history-snapshot", "messageId": "m0", "snapshot": {"trackedFileBackups": {}}},
        _cc("u1", None, "user", {"role": "user", "content": "fix the bug in f1.py"}),
        _cc("a1", "u1", "assistant", {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-x",
                                      "content": [{"type": "thinking", "thinking": "look", "signature": "sig"}],
                                      "stop_reason": None, "usage": usage}),
        _cc("a2", "a1", "assistant", {"id": "msg_1", "role": "assistant", "model": "claude-x",
                                      "content": [_tool_use(1), _tool_use(2, "Bash", {"command": "ls"})],
                                      "usage": usage}),
        _cc("r1", "a2", "user", {"role": "user", "content": [_tool_result(1)]},
            toolUseResult={"type": "text", "file": {"filePath": "/p/f1.py", "content": "print()"}}),
        _cc("r2", "r1", "user", {"role": "user", "content": [_tool_result(2, "a\nb", is_error=True)]}),
        {"type": "progress", "uuid": "p1", "parentUuid": "r2", "sessionId": "s1", "timestamp": S,
         "parentToolUseID": "toolu_9", "data": {"type": "agent_progress", "agentId": "ag1", "prompt": "sub task",
                                                "message": _cc("sa1", None, "user", {"role": "user",
                                                                                     "content": "sub task"})}},
        _cc("a3", "r2", "assistant", {"id": "msg_2", "role": "assistant", "model": "claude-x",
                                      "content": [{"type": "text", "text": "done with the first part"}],
                                      "usage": usage}),
        {"type": "system", "subtype": "compact_boundary", "uuid": "b1", "parentUuid": None,
         "logicalParentUuid": "a3", "sessionId": "s1", "timestamp": S, "content": "Conversation compacted",
         "compactMetadata": {"trigger": "auto", "preTokens": 155250}},
        _cc("s1", "b1", "user", {"role": "user", "content": "This session is being continued from a previous "
                                                            "conversation. Summary: fixed f1."},
            isCompactSummary=True, isVisibleInTranscriptOnly=True),
        _cc("u2", "s1", "user", {"role": "user", "content": [{"type": "text", "text": "now f2"},
                                                            {"type": "image", "source": {
                                                                "type": "base64", "media_type": "image/png",
                                                                "data": "iVBORw0KGgo="}}]}),
        _cc("a4", "u2", "assistant", {"id": "msg_3", "role": "assistant", "model": "claude-x",
                                      "content": [_tool_use(3, "Edit", {"file_path": "/p/f2.py",
                                                                        "old_string": "a", "new_string": "b"})],
                                      "usage": usage}),
        _cc("r3", "a4", "user", {"role": "user", "content": [_tool_result(3, [{"type": "text", "text": "ok"}])]}),
        _cc("side1", "u1", "user", {"role": "user", "content": "a sidechain"}, isSidechain=True),
        {"type": "summary", "summary": "Fix the bug", "leafUuid": "r3"},
    ]
    return recs


def anthropic_messages() -> list:
    return [
        {"role": "user", "content": "list the files"},
        {"role": "assistant", "content": [{"type": "text", "text": "sure"}, _tool_use(1, "bash", {"command": "ls"})]},
        {"role": "user", "content": [_tool_result(1, "a.py\nb.py\n" * 40)]},
        {"role": "assistant", "content": [_tool_use(2, "read_file", {"path": "a.py"}),
                                          _tool_use(3, "read_file", {"path": "b.py"})]},
        {"role": "user", "content": [_tool_result(2, "y" * 3000), _tool_result(3, "z" * 200)]},
        {"role": "assistant", "content": "[TextBlock(citations=None, text='done', type='text'), ToolUseBlock("
                                         "id='toolu_4', input={'command': 'pytest'}, name='bash', "
                                         "type='tool_use')]"},
        {"role": "user", "content": [_tool_result(4, "ok")]},
        {"role": "assistant", "content": [{"type": "text", "text": "all good"}]},
    ]


def openai_messages() -> list:
    def call(i, name="read"):
        return {"id": f"call_{i}", "type": "function", "function": {"name": name, "arguments": json.dumps(
            {"path": f"f{i}.py"})}}
    return [
        {"role": "system", "content": "you are an agent"},
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [call(i) for i in range(3)]},
        *[{"role": "tool", "tool_call_id": f"call_{i}", "content": "q" * 400} for i in range(3)],
        {"role": "assistant", "content": "thinking", "reasoning": "hmm", "tool_calls": [call(7, "bash")]},
        {"role": "tool", "tool_call_id": "call_7", "content": [{"type": "text", "text": "out"}]},
        {"role": "user", "content": "[CONTEXT SUMMARY]: earlier work"},
        {"role": "assistant", "content": "ok"},
    ]


def recording_records() -> list:
    msgs = anthropic_messages()
    header = {"type": "header", "format": "compactscope.recording", "version": 1, "created": S, "source": "proxy"}
    out = [header]
    for k, n in enumerate((1, 3, 5, 7)):
        out.append({"type": "call", "seq": k + 1, "kind": "model", "t_start": S, "t_end": S, "duration_ms": 5,
                    "request": {"model": "claude-x", "system": "sys", "max_tokens": 100, "messages": msgs[:n],
                                "tools": [{"name": "bash", "input_schema": {"type": "object"}}]},
                    "response": {"id": f"msg_{k}", "role": "assistant", "model": "claude-x",
                                 "content": msgs[n]["content"] if isinstance(msgs[n]["content"], list)
                                 else [{"type": "text", "text": "t"}], "stop_reason": "tool_use"},
                    "usage": {"input_tokens": 100 * n, "output_tokens": 5}, "error": None,
                    "trace": {"steps": [{"layer": "snip_compact", "changed": k == 3}]}})
    out.append({"type": "event", "kind": "reactive", "t": S})
    out.append({"type": "call", "seq": 5, "kind": "summary", "request": {"model": "m", "messages": [
        {"role": "user", "content": "summarise"}]}, "response": None, "usage": None, "error": {"kind": "auth"}})
    return out


def proxy_log_records() -> list:
    msgs = anthropic_messages()[:3]
    sse = ("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"role\":\"assistant\","
           "\"content\":[],\"usage\":{\"input_tokens\":9}}}\n\nevent: content_block_start\ndata: {\"type\":"
           "\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
           "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":"
           "\"text_delta\",\"text\":\"hi\"}}\n\nevent: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":"
           "{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":3}}\n\n")
    return [
        {"request": {"timestamp": 1700000000, "method": "POST", "url": "https://api.anthropic.com/v1/messages",
                     "body": {"model": "claude-x", "messages": msgs[:1]}},
         "response": {"timestamp": 1700000001, "status_code": 200, "body": {"content": [
             {"type": "text", "text": "sure"}], "usage": {"input_tokens": 10, "output_tokens": 2}}}},
        {"request": {"timestamp": 1700000002, "method": "POST", "url": "https://api.anthropic.com/v1/messages",
                     "body": json.dumps({"model": "claude-x", "messages": msgs})},
         "response": {"timestamp": 1700000003, "status_code": 200, "body_raw": sse}},
    ]


def gemini_doc() -> dict:
    return {"sessionId": "s", "projectHash": "h", "startTime": S, "lastUpdated": S, "messages": [
        {"id": "1", "timestamp": S, "type": "user", "content": "list"},
        {"id": "2", "timestamp": S, "type": "gemini", "content": "ok", "model": "gemini-2.5-flash",
         "thoughts": [{"subject": "s", "description": "d"}], "tokens": {"input": 50, "output": 5, "cached": 10},
         "toolCalls": [{"id": "c1", "name": "ls", "args": {"p": "."}, "status": "success",
                        "result": [{"functionResponse": {"id": "c1", "name": "ls", "response": {"output": "a b"}}}]}]},
        {"id": "3", "timestamp": S, "type": "info", "content": "note"},
        {"id": "4", "timestamp": S, "type": "gemini", "content": [{"text": "done"}]}]}


def inspect_sample() -> dict:
    return {"id": "s1", "epoch": 1, "input": "task", "messages": [
        {"id": "m1", "role": "system", "content": "sys"},
        {"id": "m2", "role": "user", "content": "task", "source": "input"},
        {"id": "m3", "role": "assistant", "content": "", "model": "mockllm/model", "source": "generate",
         "tool_calls": [{"id": "c1", "function": "bash", "arguments": {"cmd": "ls"}, "type": "function"}]},
        {"id": "m4", "role": "tool", "tool_call_id": "c1", "function": "bash", "content": "attachment://a1"},
        {"id": "m5", "role": "assistant", "content": [{"type": "text", "text": "done"}]}],
        "attachments": {"a1": "file list " * 30},
        "events": [{"event": "model", "timestamp": S, "input": [], "output": {"usage": {"input_tokens": 20}}},
                   {"event": "compaction", "timestamp": S, "type": "summary", "tokens_before": 900,
                    "tokens_after": 100}]}


def inspect_log() -> dict:
    return {"version": 2, "status": "success", "eval": {"task": "t", "model": "mockllm/model", "created": S},
            "samples": [inspect_sample()]}


def hermes_snapshot() -> dict:
    return {"session_id": "20260101_000000_abc", "model": "hermes-4", "system_prompt": "sys", "platform": "cli",
            "tools": [{"type": "function", "function": {"name": "read", "parameters": {}}}],
            "messages": openai_messages()[1:]}


def trajectory() -> dict:
    return {"history": openai_messages(), "trajectory": [{"action": "ls", "observation": "a"}],
            "info": {"exit_status": "submitted"}, "replay_config": {"agent": {"model": {"name": "gpt-x"}}}}


def cycles_trace() -> dict:
    msgs = anthropic_messages()
    return {"prompt": "list", "cycles": [
        {"request": {"model": "m", "system": "s", "messages": msgs[:1]},
         "response": {"content": msgs[1]["content"], "usage": {"input_tokens": 5, "output_tokens": 3}}},
        {"request": {"model": "m", "system": "s", "messages": msgs[:3]},
         "response": {"content": [{"type": "unknown", "raw": "ThinkingBlock(thinking='t', type='thinking')"}],
                      "usage": {"input_tokens": 9, "output_tokens": 3}}}]}


def hermes_db_rows() -> dict:
    return {
        "sessions": [("a", "hermes-4", "sys A", None, "main task", None), ("b", "hermes-4", "sys B", "a", "child",
                                                                          "compression")],
        "messages": [
            ("a", "user", "do the thing", None, None, None, 1, 0),
            ("a", "assistant", None, None, json.dumps([{"id": "c1", "type": "function",
                                                        "function": {"name": "ls", "arguments": "{}"}}]), None, 1, 0),
            ("a", "tool", "\x00json:" + json.dumps([{"type": "text", "text": "out"}]), "c1", None, "ls", 1, 0),
            ("b", "user", "do the thing", None, None, None, 1, 0),
            ("b", "user", "[CONTEXT COMPACTION — REFERENCE ONLY] summary", None, None, None, 1, 0),
            ("b", "assistant", "finished", None, None, None, 1, 0)],
    }


@dataclass
class Seed:
    name: str
    kind: str          # jsonl | json | eval | db | raw
    value: object
    suffix: str = ".json"
    indent: int | None = None


def builtin_seeds() -> list[Seed]:
    return [
        Seed("claude_code", "jsonl", claude_code_records(), ".jsonl"),
        Seed("anthropic_list", "json", anthropic_messages(), ".json", 2),
        Seed("anthropic_body", "json", {"model": "claude-x", "system": [{"type": "text", "text": "s"}],
                                        "tools": [{"name": "bash"}], "messages": anthropic_messages()}, ".json"),
        Seed("anthropic_jsonl", "jsonl", anthropic_messages(), ".jsonl"),
        Seed("cycles", "json", cycles_trace(), ".json", 2),
        Seed("openai_body", "json", {"model": "gpt-x", "messages": openai_messages()}, ".json", 1),
        Seed("openai_jsonl", "jsonl", openai_messages(), ".jsonl"),
        Seed("trajectory", "json", trajectory(), ".traj"),
        Seed("hermes_snapshot", "json", hermes_snapshot(), ".json", 2),
        Seed("gemini", "json", gemini_doc(), ".json", 2),
        Seed("inspect_json", "json", inspect_log(), ".json", 2),
        Seed("inspect_eval", "eval", {"header.json": {"version": 2, "status": "success",
                                                      "eval": {"task": "t", "model": "mockllm/model"}},
                                      "samples/s1_epoch_1.json": inspect_sample(),
                                      "summaries.json": [{"id": "s1", "epoch": 1}]}, ".eval"),
        Seed("recording", "jsonl", recording_records(), ".jsonl"),
        Seed("proxy_log", "jsonl", proxy_log_records(), ".jsonl"),
        Seed("hermes_db", "db", hermes_db_rows(), ".db"),
    ]


CORPUS_PREFIXES = [("entireio-cli/a6-e4c2a0fbd1-0-full.jsonl", 40), ("entireio-cli/10-a740e118e0-0-full.jsonl", 30),
                   ("entireio-cli/37-995ebed6e4-2-full.jsonl", 30),
                   ("claude-code-viewer/1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl", 29),
                   ("claude-code-viewer/5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl", 25),
                   ("codex-cli/codex-01/rollout-2026-12-01T20-16-50-01a23340-beea-7b81-8b80-1fad83e190ae.jsonl", 36)]
CORPUS_DOCS = ["swe-agent/function_calling_simple.traj.json", "learn-claude-code/s01.json",
               "entireio-cli/ab-2b9748b105-0-full.jsonl", "inspect_ai/2025-05-12T20-27-36-04-00_browser.json"]


def corpus_seeds(corpus: Path = CORPUS) -> list[Seed]:
    """Small pieces of the real corpus (the first lines of sessions, whole small documents)."""
    out: list[Seed] = []
    if not corpus.is_dir():
        return out
    for rel, n in CORPUS_PREFIXES:
        p = corpus / rel
        if p.is_file():
            recs = []
            for line in p.read_bytes().splitlines()[:n]:
                try:
                    recs.append(json.loads(line))
                except ValueError:
                    continue
            out.append(Seed("corpus:" + rel, "jsonl", recs, ".jsonl"))
    for rel in CORPUS_DOCS:
        p = corpus / rel
        if p.is_file() and p.stat().st_size < 200_000:
            try:
                out.append(Seed("corpus:" + rel, "json", json.loads(p.read_bytes()), ".json", 1))
            except ValueError:
                continue
    return out


def all_seeds(corpus: Path = CORPUS) -> list[Seed]:
    return builtin_seeds() + corpus_seeds(corpus)


# ------------------------------------------------------------------ mutation
class _Raw:
    """A token written into the JSON text as it is (NaN, Infinity, 1e400: what json.dumps will not write)."""

    def __init__(self, text: str):
        self.text = text


_WEIRD_SCALARS = [None, True, False, 0, -1, 3, 2 ** 64, -(2 ** 63) - 1, 10 ** 30, 1.5, -0.0, "", " ", "x", "3a",
                  "\ud83d", "a\udc00b", "\ud83d\ude00", "\u0000", "\u202e", "💥" * 3, "user", "assistant", "tool",
                  "system", "text", "tool_use", "tool_result", "image", "thinking", "toolu_1", "call_1", "msg_1",
                  "null", "[CONTEXT SUMMARY]: x", "This session is being continued from a previous conversation",
                  "attachment://a1", "\x00json:{", "\x00json:[1,", "${x}", "../../etc/passwd",
                  _Raw("NaN"), _Raw("Infinity"), _Raw("-Infinity"), _Raw("1e400"), _Raw("-1e400"),
                  _Raw("123456789012345678901234567890123"), _Raw('"\\ud83d"'), _Raw('"\\udfff\\ud800"')]
_KEYS = ["role", "content", "type", "id", "text", "name", "input", "tool_use_id", "tool_call_id", "tool_calls",
         "function", "arguments", "uuid", "parentUuid", "message", "model", "usage", "seq", "request", "response",
         "isSidechain", "isCompactSummary", "compactMetadata", "subtype", "timestamp", "is_error", "source", "cache_control",
         "messages", "samples", "events", "attachments", "input_tokens", "output_tokens", "stop_reason", "data",
         "agentId", "leafUuid", "summary", "logicalParentUuid", "trigger", "preTokens", "thinking", "reasoning"]


def weird_value(rng: random.Random, depth: int = 0):
    r = rng.random()
    if r < 0.55 or depth > 3:
        return rng.choice(_WEIRD_SCALARS)
    if r < 0.65:
        return "x" * rng.choice([1000, 40_000, 300_000])
    if r < 0.72:
        v: object = "deep"
        for _ in range(rng.choice([50, 260, 600, 1000, 1030])):
            v = [v] if rng.random() < 0.5 else {"a": v}
        return v
    if r < 0.86:
        return [weird_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    return {rng.choice(_KEYS): weird_value(rng, depth + 1) for _ in range(rng.randint(0, 4))}


def _mutate_node(v, rng: random.Random):
    """One mutation of one node."""
    r = rng.random()
    if isinstance(v, dict) and v and r < 0.35:
        v = dict(v)
        k = rng.choice(list(v))
        op = rng.random()
        if op < 0.5:
            v[k] = weird_value(rng)
        elif op < 0.7:
            del v[k]
        elif op < 0.85:
            v[k] = [v[k]] if rng.random() < 0.5 else {"value": v[k]}      # a type flip
        else:
            v[rng.choice(_KEYS)] = weird_value(rng)
        return v
    if isinstance(v, list) and v and r < 0.35:
        v = list(v)
        i = rng.randrange(len(v))
        op = rng.random()
        if op < 0.35:
            v[i] = weird_value(rng)
        elif op < 0.55:
            del v[i]
        elif op < 0.75:
            v.insert(i, v[rng.randrange(len(v))])                         # a duplicate (ids repeat)
        elif op < 0.9:
            rng.shuffle(v)
        else:
            v = v[:i]
        return v
    return weird_value(rng)


def mutate_value(v, rng: random.Random, rate: float):
    """Walk ``v``; each node is mutated with probability ``rate`` (copy on write)."""
    if rng.random() < rate:
        return _mutate_node(v, rng)
    if isinstance(v, dict):
        out = None
        for k, x in v.items():
            nx = mutate_value(x, rng, rate)
            if nx is not x and out is None:
                out = dict(v)
            if out is not None:
                out[k] = nx
        return v if out is None else out
    if isinstance(v, list):
        out_l = None
        for i, x in enumerate(v):
            nx = mutate_value(x, rng, rate)
            if nx is not x and out_l is None:
                out_l = list(v)
            if out_l is not None:
                out_l[i] = nx
        return v if out_l is None else out_l
    return v


def _dumps(v, indent=None) -> str:
    """JSON text with the raw tokens spliced in (json.dumps writes lone surrogates as escapes)."""
    raws: dict[str, str] = {}

    def default(o):
        if isinstance(o, _Raw):
            key = f"__RAW{len(raws)}__"
            raws[key] = o.text
            return key
        return str(o)
    try:
        text = json.dumps(v, indent=indent, default=default)
    except RecursionError:
        text = json.dumps("deep")
    for key, raw in raws.items():
        text = text.replace(f'"{key}"', raw, 1)
    return text


def mutate_bytes(data: bytes, rng: random.Random) -> bytes:
    b = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        if not b:
            break
        op = rng.random()
        i = rng.randrange(len(b))
        if op < 0.25:
            b = b[:i]                                                      # cut off (a writer that stopped)
        elif op < 0.45:
            b[i] = rng.choice(b'{}[]":,\n\\ 0aZ\x00\xff\xc3\xed\xa0')
        elif op < 0.6:
            j = min(len(b), i + rng.randint(1, 200))
            del b[i:j]
        elif op < 0.7:
            j = min(len(b), i + rng.randint(1, 300))
            b[i:i] = b[i:j]
        elif op < 0.8:
            nl = b.find(b"\n", i)
            if nl >= 0:
                del b[nl]                                                  # two records joined on one line
        elif op < 0.9:
            b[i:i] = rng.choice([b"\xed\xa0\xbd", b"\xef\xbb\xbf", b"\\ud83d", b"\xf0\x9f", b"\r\n", b"\t"])
        else:
            b[i:i] = b"[" * rng.choice([100, 2000])
    return bytes(b)


def _eval_bytes(members: dict, rng: random.Random, rate: float) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=rng.choice([zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED])) as z:
        for name, value in members.items():
            text = _dumps(mutate_value(value, rng, rate)).encode("utf-8", "surrogatepass")
            if rng.random() < 0.1:
                text = mutate_bytes(text, rng)
            z.writestr(name, text)
    data = buf.getvalue()
    return mutate_bytes(data, rng) if rng.random() < 0.15 else data


_SCHEMA = """
CREATE TABLE sessions (id TEXT PRIMARY KEY, model TEXT, system_prompt TEXT, parent_session_id TEXT, title TEXT,
                       end_reason TEXT);
CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT, role TEXT, content TEXT,
                       tool_call_id TEXT, tool_calls TEXT, tool_name TEXT, active INTEGER, compacted INTEGER,
                       timestamp REAL, token_count INTEGER);
"""


def _sql_value(rng: random.Random, v):
    if rng.random() > 0.2:
        return v
    w = rng.choice([None, 0, -1, 2 ** 62, 1.5, float("inf"), "", "x", "\x00json:", "\x00json:{\"a\":",
                    "\x00json:[NaN]", b"\xed\xa0\xbd\xff", "[CONTEXT SUMMARY]: s", "user", "tool", "c1",
                    json.dumps([{"id": ["c1"], "function": "f"}]), "y" * 5000])
    return w


def _db_bytes(tables: dict, rng: random.Random, path: Path) -> None:
    con = sqlite3.connect(path)
    try:
        con.executescript(_SCHEMA)
        for row in tables["sessions"]:
            con.execute("INSERT OR IGNORE INTO sessions VALUES (?,?,?,?,?,?)", [_sql_value(rng, v) for v in row])
        for k, row in enumerate(tables["messages"]):
            if rng.random() < 0.1:
                continue
            vals = [_sql_value(rng, v) for v in row] + [_sql_value(rng, 1700000000.0 + k), _sql_value(rng, 7)]
            con.execute("INSERT INTO messages (session_id, role, content, tool_call_id, tool_calls, tool_name, active,"
                        " compacted, timestamp, token_count) VALUES (?,?,?,?,?,?,?,?,?,?)", vals)
        con.commit()
    finally:
        con.close()
    if rng.random() < 0.15:
        data = path.read_bytes()
        path.write_bytes(mutate_bytes(data, rng))


class _Still(random.Random):
    """A random source under which nothing is mutated (every probability test fails)."""

    def random(self):
        return 0.999999        # (below 1: random.Random draws choices from it too)


def make_input(seed: Seed, rng: random.Random, folder: Path, name: str = "input", mutate: bool = True) -> Path:
    """Write one mutated input of ``seed`` (``mutate=False``: the seed as it is) into ``folder``; its path."""
    path = folder / (name + seed.suffix)
    rate = rng.choice([0.0, 0.01, 0.03, 0.08, 0.2]) if mutate else 0.0
    if not mutate:
        rng = _Still()
    if seed.kind == "db":
        if path.exists():
            path.unlink()
        _db_bytes(seed.value, rng, path)
        return path
    if seed.kind == "eval":
        path.write_bytes(_eval_bytes(seed.value, rng, rate))
        return path
    value = mutate_value(seed.value, rng, rate)
    if seed.kind == "jsonl":
        lines = [_dumps(r) for r in value] if isinstance(value, list) else [_dumps(value)]
        text = "\n".join(lines) + ("\n" if rng.random() < 0.9 else "")
    else:
        # pretty-printed now and then (json's pure-Python encoder writes indented text, slowly)
        text = _dumps(value, seed.indent if rng.random() < 0.2 else None)
    data = text.encode("utf-8", "surrogatepass")
    if mutate and (rng.random() < 0.25 or rate == 0.0):
        data = mutate_bytes(data, rng)
    path.write_bytes(data)
    return path


# ------------------------------------------------------------------ running everything
@dataclass
class Failure:
    stage: str
    error: str
    where: str
    detail: str = ""

    @property
    def key(self) -> tuple:
        return self.stage, self.error.split(":")[0], self.where


@dataclass
class Outcome:
    loaded: bool = False
    conversations: int = 0
    runs: int = 0
    failures: list[Failure] = field(default_factory=list)
    seconds: float = 0.0


def aggressive_params(strategy, rng: random.Random) -> dict:
    """Every parameter pushed to where the strategy compacts the most (numbers at or near their minimum,
    switches and choices drawn at random)."""
    out = {}
    for p in strategy.params:
        if isinstance(p.default, bool):
            out[p.name] = rng.random() < 0.5
        elif p.choices:
            out[p.name] = rng.choice(list(p.choices))
        elif isinstance(p.default, (int, float)):
            lo = p.minimum if p.minimum is not None else 0
            out[p.name] = type(p.default)(rng.choice([lo, lo, lo + 1, lo + 2, lo * 2 + 3]))
            if p.maximum is not None:
                out[p.name] = min(out[p.name], p.maximum)
        elif p.name == "compactable_tools":
            out[p.name] = "*"
    return out


def _where(e: BaseException) -> str:
    tb = traceback.extract_tb(e.__traceback__)
    for fr in reversed(tb):
        if "/compactscope/" in fr.filename or "/core/" in fr.filename or "/app/" in fr.filename:
            return f"{Path(fr.filename).name}:{fr.lineno}"
    return f"{Path(tb[-1].filename).name}:{tb[-1].lineno}" if tb else "?"


class Runner:
    """Sends inputs through everything; one instance per process (it keeps a workspace folder)."""

    def __init__(self, work: Path, *, time_limit: float | None = 20.0, cli: bool = True, max_conversations: int = 2,
                 replay_calls: int = 6):
        from compactscope.core import strategies
        self.work = work
        self.work.mkdir(parents=True, exist_ok=True)
        self.strategies = [strategies.get(n) for n in strategies.available()]
        self.time_limit = time_limit
        self.cli = cli
        self.max_conversations = max_conversations
        self.replay_calls = replay_calls
        self.count = 0

    def workspace(self):
        from compactscope.core.files.workspace import Workspace
        ws = self.work / "ws"
        if self.count % 200 == 0 and ws.exists():
            shutil.rmtree(ws, ignore_errors=True)
        return Workspace(ws)

    def run(self, path: Path, rng: random.Random) -> Outcome:
        out = Outcome()
        t0, c0 = time.perf_counter(), time.process_time()
        self.count += 1
        try:
            self._run(path, rng, out)
        except Exception as e:  # the harness itself must never stop the campaign
            out.failures.append(Failure("harness", f"{type(e).__name__}: {e}"[:300], _where(e),
                                        traceback.format_exc()))
        # the CLI freezes what it loaded out of the cyclic GC (right for a process that ends with the command);
        # thousands of commands in one process would keep every cycle of every earlier input: give them back,
        # and collect now and then (what unfreeze hands back does not count towards the next full collection)
        gc.unfreeze()
        if self.count % 20 == 0:
            gc.collect()
        out.seconds = time.perf_counter() - t0
        cpu = time.process_time() - c0
        # CPU time against the limit (the machine is shared: wall time says more about the neighbours than
        # about the input), wall time against a looser one (a hang waits without using the CPU)
        if self.time_limit is not None and (cpu > self.time_limit or out.seconds > 4 * self.time_limit):
            out.failures.append(Failure("time", f"took {out.seconds:.1f} s ({cpu:.1f} s of CPU)", path.name))
        return out

    def _stage(self, out: Outcome, stage: str, fn, *a, **kw):
        try:
            return True, fn(*a, **kw)
        except Exception as e:
            out.failures.append(Failure(stage, f"{type(e).__name__}: {e}"[:300], _where(e), traceback.format_exc()))
            return False, None

    def _run(self, path: Path, rng: random.Random, out: Outcome) -> None:
        from compactscope.core.analysis.checker import check, check_conversation
        from compactscope.core.analysis.info import describe
        from compactscope.core.loaders import LoadError, _loaders, detect, load
        from compactscope.core.loaders.base import read_probe
        from compactscope.core.pipeline.engine import Engine
        from compactscope.core.replay import replay
        from compactscope.core.files.safeio import dumps

        def only_load_errors(fn, *a):
            try:
                return fn(*a)
            except LoadError:
                return None

        def run_engine(strategy, params, messages, **kw):
            return Engine(strategy, params, workspace=self.workspace()).run(messages, **kw)

        def json_round_trip(obj):
            return json.loads(dumps(obj.to_json()))
        # every loader, each on its own (even those that would not have chosen this input)
        ok, probe = self._stage(out, "probe", only_load_errors, read_probe, path)
        if ok and probe is not None:
            self._stage(out, "detect", only_load_errors, detect, path)
            for mod in _loaders():
                ok, chose = self._stage(out, f"sniff {mod.FORMAT}", mod.sniff, probe)
                if ok and chose is not True and rng.random() < 0.7:
                    continue
                self._stage(out, f"loader {mod.FORMAT}", only_load_errors, mod.load, probe)
        ok, result = self._stage(out, "load", only_load_errors, load, path)
        if not ok or result is None:
            return
        out.loaded = True
        self._stage(out, "info", lambda: dumps(describe(result)))
        for ci, conv in enumerate(result.conversations[:self.max_conversations]):
            out.conversations += 1
            self._stage(out, "check", check_conversation, conv)
            self._stage(out, "check openai", check, conv.messages, "openai")
            # the main conversation through every strategy, defaults and aggressive; the others through one
            strategies_here = self.strategies if ci == 0 else [rng.choice(self.strategies)]
            json_checked = False
            for strategy in strategies_here:
                for params in ({}, aggressive_params(strategy, rng)):
                    ok, trace = self._stage(out, f"run {strategy.name}", run_engine, strategy, params,
                                            conv.messages, conversation=conv)
                    out.runs += 1
                    if not ok:
                        continue
                    for s in trace.internal_errors:
                        out.failures.append(Failure(f"layer {strategy.name}", s.error or "", s.layer, s.internal))
                    if not json_checked and rng.random() < 0.35:   # (one trace per conversation, now and then:
                        json_checked = True                        # run --json checks its output every time)
                        self._stage(out, f"json {strategy.name}", json_round_trip, trace)
                    extra = [x for x in (strategy.reactive_layer, strategy.compact_tool_layer) if x]
                    if extra and rng.random() < 0.3:
                        ok, t2 = self._stage(out, f"extra {strategy.name}", run_engine, strategy, params,
                                             trace.output, layers=[rng.choice(extra)])
                        if ok:
                            for s in t2.internal_errors:
                                out.failures.append(Failure(f"layer {strategy.name}", s.error or "", s.layer,
                                                            s.internal))
            strategy = rng.choice(self.strategies)
            params = aggressive_params(strategy, rng) if rng.random() < 0.5 else {}
            ok, res = self._stage(out, f"replay {strategy.name}", replay, conv,
                                  engine=Engine(strategy, params, workspace=self.workspace()),
                                  max_calls=self.replay_calls, keep_inputs=False, check=rng.random() < 0.3)
            if ok:
                for c in res.calls:
                    for rec in c.layers:
                        if rec.internal:
                            out.failures.append(Failure(f"replay layer {strategy.name}", rec.error or "",
                                                        rec.layer, rec.internal))
                self._stage(out, "replay json", json_round_trip, res)
        if self.cli:
            self._cli(out, path, rng)

    def _cli(self, out: Outcome, path: Path, rng: random.Random) -> None:
        from compactscope.app.cli import main
        strategy = rng.choice(self.strategies)
        ws = self.work / "cli-ws"
        runs = [["run", str(path), "--json", "--strategy", strategy.name, "--workdir", str(ws)],
                ["replay", str(path), "--json", "--max-calls", str(self.replay_calls), "--strategy",
                 rng.choice(self.strategies).name, "--workdir", str(ws)]]
        if rng.random() < 0.2:
            runs.append(["check", str(path), "--json"])
        if rng.random() < 0.5:
            runs[0] += ["--set", f"{rng.choice(strategy.params).name}={rng.choice(['0', '1', 'x', '1e9'])}"]
        for argv in runs:
            stdout, stderr = io.StringIO(), io.StringIO()
            try:
                with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
                    rc = main(argv)
            except SystemExit as e:                      # argparse usage errors exit 2
                rc = e.code
            except Exception as e:
                out.failures.append(Failure(f"cli {argv[0]}", f"{type(e).__name__}: {e}"[:300], _where(e),
                                            traceback.format_exc()))
                continue
            if rc not in (0, 1, 2):
                out.failures.append(Failure(f"cli {argv[0]}", f"exit {rc}: {stderr.getvalue()[:300]}", argv[0]))
            elif rc in (0, 1) and "--json" in argv:
                try:
                    json.loads(stdout.getvalue())
                except ValueError as e:
                    out.failures.append(Failure(f"cli {argv[0]} output", f"not JSON: {e}", argv[0]))


def campaign(n: int, seed: int, work: Path, *, seeds: list[Seed] | None = None, progress=None,
             runner: Runner | None = None, keep_failures: Path | None = None) -> dict:
    """``n`` inputs from ``seed``: returns counts and the failures grouped by where they happened."""
    rng = random.Random(seed)
    seeds = seeds or all_seeds()
    runner = runner or Runner(work / "run")
    inputs = work / "inputs"
    inputs.mkdir(parents=True, exist_ok=True)
    stats = {"inputs": 0, "loaded": 0, "conversations": 0, "runs": 0, "failures": 0, "slowest": 0.0}
    groups: dict = {}
    for k in range(n):
        s = rng.choice(seeds)
        r = random.Random(rng.getrandbits(64))
        path = make_input(s, r, inputs, f"in{k % 4}")
        o = runner.run(path, r)
        stats["inputs"] += 1
        stats["loaded"] += o.loaded
        stats["conversations"] += o.conversations
        stats["runs"] += o.runs
        stats["slowest"] = max(stats["slowest"], o.seconds)
        if o.failures:
            stats["failures"] += 1
            for f in o.failures:
                g = groups.setdefault(f.key, {"count": 0, "seed": s.name, "error": f.error, "detail": f.detail})
                g["count"] += 1
                if keep_failures is not None and g["count"] == 1:
                    keep_failures.mkdir(parents=True, exist_ok=True)
                    shutil.copy(path, keep_failures / f"{len(groups):03d}-{s.name.replace('/', '_')}{s.suffix}")
        if progress is not None:
            progress(k + 1, stats)
    stats["groups"] = groups
    return stats
