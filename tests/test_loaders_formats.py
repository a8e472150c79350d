"""Loaders on small files the tests write: s08 repr transcripts, OpenAI/Hermes
sessions, a Hermes state.db, Claude Code edge cases, and bad input."""
from __future__ import annotations

import hashlib
import json
import sqlite3

import pytest

from compactscope.core.analysis.checker import check, pair_errors
from compactscope.core.analysis.info import describe
from compactscope.core.loaders import LoadError, detect, load
from compactscope.core.loaders.sdk_repr import ReprError, content_from_repr, parse_repr
from compactscope.core.model.messages import ToolPairIndex


def _jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


# ----------------------------------------------------------------- s08 repr transcripts

S08_ASSISTANT = ("[TextBlock(citations=None, text=\"Let me look: it's here\", type='text'), "
                 "ToolUseBlock(id='toolu_01A', input={'command': 'ls -la', 'timeout': None, 'n': -1}, "
                 "name='bash', type='tool_use')]")


def test_s08_repr_blocks_are_parsed_back(tmp_path):
    p = _jsonl(tmp_path / "t.jsonl", [
        {"role": "user", "content": "list files"},
        {"role": "assistant", "content": S08_ASSISTANT},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01A", "content": "a\nb"}]},
        {"role": "assistant", "content": ["TextBlock(citations=None, text='done', type='text')"]},
    ])
    result = load(p)
    conv = result.main
    assert result.format == "anthropic-messages"
    blocks = conv.messages[1]["content"]
    assert blocks[0] == {"type": "text", "text": "Let me look: it's here"}
    assert blocks[1] == {"type": "tool_use", "id": "toolu_01A", "name": "bash",
                         "input": {"command": "ls -la", "timeout": None, "n": -1}}
    assert conv.messages[3]["content"] == [{"type": "text", "text": "done"}]
    assert ToolPairIndex(conv.messages).complete_count == 1
    assert check(conv.messages, conv.dialect) == []
    assert conv.meta[1].extra.get("from_sdk_repr") is True
    assert [m.provenance.line for m in conv.meta] == [1, 2, 3, 4]


@pytest.mark.parametrize("text", [
    "__import__('os').system('echo hi')",
    "[TextBlock(text=open('/etc/passwd').read(), type='text')]",
    "TextBlock(text='a' + 'b', type='text')",
    "ToolUseBlock(**{'id': 'x'}, type='tool_use')",
    "[TextBlock(text=(lambda: 1)(), type='text')]",
])
def test_repr_parser_never_evaluates(text):
    with pytest.raises(ReprError):
        parse_repr(text)
    assert content_from_repr(text) == (text, False)


# ----------------------------------------------------------------- OpenAI / Hermes

def test_openai_request_body_and_list(tmp_path):
    msgs = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"},
            {"role": "assistant", "content": None,
             "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "x", "_db_persisted": True}]
    (tmp_path / "body.json").write_text(json.dumps({"model": "gpt-x", "messages": msgs}))
    (tmp_path / "list.json").write_text(json.dumps(msgs, indent=2))
    for name in ("body.json", "list.json"):
        r = load(tmp_path / name)
        assert r.format == "openai-chat" and r.main.dialect == "openai"
        assert "_db_persisted" not in r.main.messages[3]
        assert r.main.meta[3].extra["_db_persisted"] is True
        assert pair_errors(check(r.main.messages, "openai")) == []
    assert load(tmp_path / "body.json").main.model == "gpt-x"


def test_hermes_session_json_and_jsonl(tmp_path):
    msgs = [{"role": "user", "content": "task"},
            {"role": "user", "content": "[CONTEXT COMPACTION — REFERENCE ONLY] earlier turns...\nEND"},
            {"role": "assistant", "content": None,
             "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "text"},
            {"role": "assistant", "content": "done"}]
    (tmp_path / "session_1.json").write_text(json.dumps(
        {"session_id": "s1", "model": "hermes-3", "system_prompt": "You are Hermes.", "tools": [{"type": "function"}],
         "messages": msgs}, indent=1))
    r = load(tmp_path / "session_1.json")
    c = r.main
    assert r.format == "hermes-session" and c.system == "You are Hermes." and c.model == "hermes-3"
    assert c.tools == [{"type": "function"}]
    # a snapshot is the agent's live context: the summary sits after the kept head, the compaction happened
    # before the whole list (no split)
    assert [(e.kind, e.message_index, e.summary_index) for e in c.events] == [("hermes", 0, 1)]
    assert c.segments == [0] and c.meta[1].extra["compaction_summary"] is True
    r = load(_jsonl(tmp_path / "s.jsonl", msgs))
    assert r.main.dialect == "openai" and len(r.main.messages) == 5 and len(r.main.events) == 1
    assert r.main.segments == [0, 1]           # a plain list of messages: the summary starts a context
    # hermes' own marker is enough, whatever the text says
    flagged = [dict(msgs[0]), {"role": "user", "content": "Earlier work: read the files.", "_compressed_summary": True},
               *msgs[2:]]
    (tmp_path / "session_2.json").write_text(json.dumps({"session_id": "s2", "messages": flagged}))
    c = load(tmp_path / "session_2.json").main
    assert [(e.message_index, e.summary_index) for e in c.events] == [(0, 1)]
    assert c.meta[1].extra["summary_source"] == "_compressed_summary" and "_compressed_summary" not in c.messages[1]


def _hermes_db(path):
    con = sqlite3.connect(path)
    con.executescript("""
        CREATE TABLE sessions (id TEXT PRIMARY KEY, model TEXT, system_prompt TEXT, parent_session_id TEXT,
                               title TEXT);
        CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT, role TEXT, content TEXT,
                               tool_call_id TEXT, tool_calls TEXT, tool_name TEXT, timestamp REAL,
                               token_count INTEGER, finish_reason TEXT, active INTEGER, compacted INTEGER);
    """)
    con.execute("INSERT INTO sessions VALUES ('a', 'hermes-4', 'sys A', NULL, 'main task')")
    con.execute("INSERT INTO sessions VALUES ('b', 'hermes-4', 'sys B', 'a', 'other')")
    rows = [
        ("a", "user", "do the thing", None, None, None, 1, 1),
        ("a", "assistant", None, None, json.dumps([{"id": "c1", "type": "function",
                                                     "function": {"name": "ls", "arguments": "{}"}}]), None, 0, 1),
        ("a", "tool", "\x00json:" + json.dumps([{"type": "text", "text": "out"}]), "c1", None, "ls", 0, 1),
        ("a", "user", "[CONTEXT SUMMARY]: the thing was started", None, None, None, 1, 0),
        ("a", "assistant", "finished", None, None, None, 1, 0),
        ("b", "user", "hello", None, None, None, 1, 0),
    ]
    for i, (sid, role, content, tcid, calls, tname, active, compacted) in enumerate(rows):
        con.execute("INSERT INTO messages (session_id, role, content, tool_call_id, tool_calls, tool_name, "
                    "timestamp, token_count, active, compacted) VALUES (?,?,?,?,?,?,?,?,?,?)",
                    (sid, role, content, tcid, calls, tname, 1700000000.0 + i, 7 if role == "assistant" else None,
                     active, compacted))
    con.commit()
    con.close()


def test_hermes_state_db(tmp_path):
    db = tmp_path / "state.db"
    _hermes_db(db)
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    listing = sorted(p.name for p in tmp_path.iterdir())
    result = load(db)
    assert result.format == "hermes-db" and detect(db) == "hermes-db"
    assert [len(c.messages) for c in result.conversations] == [5, 1]     # the largest session first
    c = result.main
    assert c.system == "sys A" and c.model == "hermes-4" and c.title == "main task"
    assert c.messages[2]["content"] == [{"type": "text", "text": "out"}]   # "\x00json:" decoded
    assert c.messages[1]["tool_calls"][0]["id"] == "c1" and c.messages[2]["name"] == "ls"
    assert [(e.kind, e.message_index, e.summary_index) for e in c.events] == [("hermes", 3, 3)]
    assert c.events[0].extra["compacted_rows_before"] == 3
    assert c.segments == [0, 3]
    assert c.extra["live_context"] == [3, 4]
    assert c.extra["child_session_ids"] == ["b"] and result.conversations[1].extra["parent_session_id"] == "a"
    assert c.meta[4].usage.output_tokens == 7 and c.meta[0].timestamp == 1700000000.0
    assert pair_errors(check(c.messages, c.dialect)) == []
    # read-only: the database is untouched and no journal or WAL file appeared
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == listing


def test_sqlite_that_is_not_hermes(tmp_path):
    db = tmp_path / "other.db"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE t (x)")
    con.commit()
    con.close()
    with pytest.raises(LoadError, match="messages"):
        load(db)


# ----------------------------------------------------------------- Claude Code edge cases

def _cc(uuid, parent, type_, message=None, **kw):
    r = {"parentUuid": parent, "isSidechain": False, "sessionId": "s", "version": "2.1.0", "type": type_,
         "uuid": uuid, "timestamp": "2026-01-01T00:00:00.000Z"}
    if message is not None:
        r["message"] = message
    r.update(kw)
    return r


def _asst(mid, *blocks, usage=None):
    m = {"id": mid, "type": "message", "role": "assistant", "model": "claude-x", "content": list(blocks)}
    if usage:
        m["usage"] = usage
    return m


def _tu(i):
    return {"type": "tool_use", "id": f"t{i}", "name": "Bash", "input": {}}


def _tr(i):
    return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{i}", "content": "ok"}]}


def test_claude_code_interleaved_parallel_calls_rewind_and_unknown_records(tmp_path):
    recs = [
        _cc("u1", None, "user", {"role": "user", "content": "go"}),
        _cc("a1", "u1", "assistant", _asst("m1", _tu(1))),
        _cc("r1", "a1", "user", _tr(1)),                         # result written before the 2nd call line
        _cc("a2", "a1", "assistant", _asst("m1", _tu(2), usage={"input_tokens": 5, "output_tokens": 9,
                                                                "cache_read_input_tokens": 100})),
        _cc("r2", "a2", "user", _tr(2)),
        {"type": "brand-new-record", "uuid": "x1", "parentUuid": "r2", "sessionId": "s", "payload": [1, 2]},
        _cc("a3", "r2", "assistant", _asst("m2", {"type": "text", "text": "first answer"})),
        _cc("u2", "a3", "user", {"role": "user", "content": "abandoned question"}),
        _cc("a4", "u2", "assistant", _asst("m3", {"type": "text", "text": "abandoned answer"})),
        _cc("u3", "a3", "user", {"role": "user", "content": "rewound question"}, brandNewField=42),
        _cc("a5", "u3", "assistant", _asst("m4", {"type": "text", "text": "final"})),
    ]
    result = load(_jsonl(tmp_path / "s.jsonl", recs))
    c = result.main
    assert [m["role"] for m in c.messages] == ["user", "assistant", "user", "assistant", "user", "assistant"]
    assert [b["id"] for b in c.messages[1]["content"]] == ["t1", "t2"]
    assert [b["tool_use_id"] for b in c.messages[2]["content"]] == ["t1", "t2"]
    assert c.meta[1].usage.context_tokens == 105 and c.meta[1].provenance.end_line == 4
    assert c.messages[4]["content"] == "rewound question" and c.meta[4].extra["brandNewField"] == 42
    assert c.extra["abandoned_records"] == 2
    assert any("abandoned" in p.text for p in result.problems)
    assert [r["type"] for _, r in c.extra["records"]] == ["brand-new-record"]
    assert check(c.messages, c.dialect) == []


def test_claude_code_compaction_without_summary_text_and_boundary_order(tmp_path):
    recs = [
        _cc("u1", None, "user", {"role": "user", "content": "go"}),
        _cc("a1", "u1", "assistant", _asst("m1", {"type": "text", "text": "hi"})),
        _cc("b1", None, "system", subtype="compact_boundary", logicalParentUuid="a1",
            compactMetadata={"trigger": "manual", "preTokens": 1234}),
        _cc("s1", "b1", "user", {"role": "user", "content": "This session is being continued from a previous "
                                                            "conversation that ran out of context. Summary."},
            isCompactSummary=True),
        _cc("a2", "s1", "assistant", _asst("m2", {"type": "text", "text": "ok"})),
    ]
    c = load(_jsonl(tmp_path / "s.jsonl", recs)).main
    assert c.segments == [0, 2] and len(c.messages) == 4
    e = c.events[0]
    assert (e.trigger, e.pre_tokens, e.summary_index, e.provenance.line) == ("manual", 1234, 2, 3)
    assert c.segment(1)[0]["content"].startswith("This session is being continued")


def test_claude_code_corrupt_lines(tmp_path):
    a = json.dumps(_cc("u1", None, "user", {"role": "user", "content": "go"}))
    b = json.dumps(_cc("a1", "u1", "assistant", _asst("m1", {"type": "text", "text": "x}{y"})))
    c = json.dumps(_cc("u2", "a1", "user", {"role": "user", "content": "more"}))
    d = json.dumps(_cc("a2", "u2", "assistant", _asst("m2", {"type": "text", "text": "end"})))
    p = tmp_path / "s.jsonl"
    p.write_text(a + "\n" + b + c + "\n" + d[: len(d) // 2] + "\n" + d + "\n", encoding="utf-8")
    result = load(p)
    lines = sorted(pr.line for pr in result.problems)
    assert lines == [2, 3]
    assert [m["role"] for m in result.main.messages] == ["user", "assistant", "user", "assistant"]


# ----------------------------------------------------------------- bad input and info

@pytest.mark.parametrize("content, match", [
    (b"", "empty"),
    (b"   \n\n", "empty"),
    (b"\x00\x01\x02binary\xff" * 50, "binary"),
    (b"hello, this is not json\n", "not a conversation"),
    (b"42\n", "not a conversation"),
    (b'{"foo": 1}', "not a format"),
    (b'["a", "b"]', "message 0"),
    (b'{"messages": [1, 2]}', "message 0"),
    (b'[{"role": "user", "content": "x"', "broken JSON"),
    (b"PK\x03\x04 not really a zip", ""),
    (b"SQLite format 3\x00" + b"\x00" * 100, ""),
])
def test_bad_input_is_a_clear_error(tmp_path, content, match):
    p = tmp_path / "f.json"
    p.write_bytes(content)
    with pytest.raises(LoadError) as e:
        load(p)
    assert str(p) in str(e.value)
    assert match in str(e.value)


def test_directory_and_missing_file(tmp_path):
    with pytest.raises(LoadError, match="folder"):
        load(tmp_path)
    with pytest.raises(LoadError, match="no such file"):
        load(tmp_path / "nope.jsonl")


def test_info_reports_events_usage_and_problems(tmp_path):
    recs = [
        _cc("u1", None, "user", {"role": "user", "content": "go"}),
        _cc("a1", "u1", "assistant", _asst("m1", _tu(1), usage={"input_tokens": 3, "output_tokens": 4,
                                                                 "cache_creation_input_tokens": 10})),
        _cc("b1", None, "system", subtype="compact_boundary", logicalParentUuid="a1",
            compactMetadata={"trigger": "auto", "preTokens": 999}),
        _cc("s1", "b1", "user", {"role": "user", "content": "summary"}, isCompactSummary=True),
    ]
    p = tmp_path / "s.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in recs) + "{broken\n", encoding="utf-8")
    info = describe(load(p))
    assert info["format"] == "claude-code"
    c = info["conversations"][0]
    assert c["messages"] == 3 and c["tool_pairs"] == 1 and c["complete_pairs"] == 0
    assert [(e["trigger"], e["pre_tokens"]) for e in c["events"]] == [("auto", 999)]
    assert c["usage"]["calls"] == 1 and c["usage"]["peak_context_tokens"] == 13
    assert [f["code"] for f in c["findings"]] == ["unanswered_tool_use"]
    assert info["problem_list"][0]["line"] == 5 and info["problem_list"][0]["path"] == str(p)


def test_cli_info_json_and_check_accept_other_formats(tmp_path, capsys):
    from compactscope.app.cli import main
    db = tmp_path / "state.db"
    _hermes_db(db)
    assert main(["info", str(db), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["format"] == "hermes-db" and out["conversations"][0]["events"][0]["kind"] == "hermes"
    assert main(["check", str(db)]) == 0
    assert main(["info", str(tmp_path)]) == 2
    assert "folder" in capsys.readouterr().err


# ----------------------------------------------------------------- line numbers inside JSON documents

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from compactscope.core.loaders.base import array_element_lines  # noqa: E402

_json_text = st.text(alphabet=st.sampled_from(list('ab"\\{}[],: \n\té')), max_size=12)


@settings(max_examples=60, deadline=None)
@given(msgs=st.lists(st.fixed_dictionaries({"role": _json_text, "content": st.one_of(
    _json_text, st.lists(st.dictionaries(_json_text, _json_text, max_size=2), max_size=2))}), max_size=6),
    before=st.dictionaries(_json_text, st.lists(_json_text, max_size=2), max_size=2))
def test_array_element_lines_find_each_message(msgs, before):
    doc = {**{k: v for k, v in before.items() if k != "messages"}, "messages": msgs}
    text = json.dumps(doc, indent=1)
    lines = array_element_lines(text, ("messages",)).get(("messages",), [])
    assert len(lines) == len(msgs)
    rows = text.split("\n")
    assert all(rows[n - 1].strip() == "{" for n in lines)
    assert lines == sorted(set(lines))
    assert array_element_lines(json.dumps(doc), ("messages",)).get(("messages",), []) == [1] * len(msgs)


def test_documents_give_message_lines(tmp_path):
    msgs = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]
    p = tmp_path / "body.json"
    p.write_text(json.dumps({"model": "m", "messages": msgs}, indent=2))
    rows = p.read_text().split("\n")
    metas = load(p).main.meta
    assert [rows[m.provenance.line - 1].strip() for m in metas] == ["{", "{"]
    assert metas[0].provenance.line < metas[1].provenance.line


def test_first_line_longer_than_the_probe(tmp_path):
    from compactscope.core.loaders.base import PROBE_BYTES
    big = "x" * (PROBE_BYTES + 1000)
    p = _jsonl(tmp_path / "cc.jsonl", [
        {"message": {"role": "user", "content": big}, "parentUuid": None, "sessionId": "s", "type": "user",
         "uuid": "u1"},
        _cc("a1", "u1", "assistant", _asst("m1", {"type": "text", "text": "ok"}))])
    r = load(p)
    assert r.format == "claude-code" and len(r.main.messages[0]["content"]) == len(big)
    p = _jsonl(tmp_path / "m.jsonl", [{"role": "user", "content": big}, {"role": "assistant", "content": "ok"}])
    r = load(p)
    assert r.format == "anthropic-messages" and [m.provenance.line for m in r.main.meta] == [1, 2]


def test_hermes_wal_database_while_the_agent_has_it_open(tmp_path):
    db = tmp_path / "state.db"
    _hermes_db(db)
    live = sqlite3.connect(db)
    live.execute("PRAGMA journal_mode=WAL")
    live.execute("INSERT INTO messages (session_id, role, content, active, compacted) "
                 "VALUES ('a', 'user', 'written just now', 1, 0)")
    live.commit()                       # committed into the -wal file, not yet checkpointed
    try:
        c = load(db).main
        assert c.messages[-1]["content"] == "written just now"
    finally:
        live.close()


def test_inspect_samples_compaction_events_and_usage(tmp_path):
    def call(i):
        return {"role": "assistant", "content": "", "source": "generate",
                "tool_calls": [{"id": f"c{i}", "function": "bash", "arguments": {"cmd": "ls"}}]}

    def result(i):
        return {"role": "tool", "tool_call_id": f"c{i}", "function": "bash", "content": [{"type": "text", "text": "ok"}]}

    def model(n):
        return {"event": "model", "model": "m", "timestamp": "2026-01-01T00:00:0%dZ" % n,
                "output": {"usage": {"input_tokens": 100 * n, "output_tokens": n, "input_tokens_cache_read": 7}}}
    s1 = {"id": "a", "epoch": 1, "attachments": {"h1": "the task"},
          "messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": "attachment://h1"},
                       call(1), result(1), call(2), result(2), {"role": "assistant", "content": "done"}],
          "events": [model(1), {"event": "tool"}, model(2),
                     {"event": "compaction", "type": "summary", "tokens_before": 900, "tokens_after": 200,
                      "source": "auto"}, model(3)]}
    s2 = {"id": "b", "epoch": 1, "messages": [{"role": "user", "content": "hi"}], "events": []}
    p = tmp_path / "log.json"
    p.write_text(json.dumps({"version": 2, "eval": {"task": "demo", "model": "m"}, "samples": [s1, s2]}, indent=1))
    r = load(p)
    assert r.format == "inspect-log" and [c.extra["id"] for c in r.conversations] == ["a", "b"]
    c = r.main
    assert c.messages[1]["content"] == "the task"
    assert c.messages[3] == {"role": "tool", "content": "ok", "tool_call_id": "c1", "name": "bash"}
    assert json.loads(c.messages[2]["tool_calls"][0]["function"]["arguments"]) == {"cmd": "ls"}
    [e] = c.events
    assert (e.kind, e.trigger, e.pre_tokens, e.post_tokens, e.message_index) == ("inspect", None, 900, 200, 6)
    assert e.extra["type"] == "summary" and c.segments == [0, 6]
    assert [m.usage.input_tokens if m.usage else None for m in c.meta] == [None, None, 100, None, 200, None, 300]
    assert c.meta[6].usage.cache_read_input_tokens == 7
    assert pair_errors(check(c.messages, c.dialect)) == []


def test_claude_code_subagent_files_next_to_the_session(tmp_path):
    task = {"type": "tool_use", "id": "task1", "name": "Task", "input": {"prompt": "Count the files"}}
    session = _jsonl(tmp_path / "abc.jsonl", [
        _cc("u1", None, "user", {"role": "user", "content": "go"}),
        _cc("a1", "u1", "assistant", _asst("m1", task)),
        _cc("r1", "a1", "user", {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "task1",
                                                               "content": "3 files"}]})])
    (tmp_path / "abc" / "subagents").mkdir(parents=True)
    side = [dict(_cc("s1", None, "user", {"role": "user", "content": "Count the files"}), isSidechain=True),
            dict(_cc("s2", "s1", "assistant", _asst("m9", {"type": "text", "text": "3"})), isSidechain=True)]
    _jsonl(tmp_path / "abc" / "subagents" / "agent-x1.jsonl", side)
    r = load(session)
    assert len(r.conversations) == 2 and len(r.main.messages) == 3
    sub = r.conversations[1]
    assert sub.extra["kind"] == "subagent_file" and sub.extra["parent_tool_use_id"] == "task1"
    assert [m["role"] for m in sub.messages] == ["user", "assistant"]
    assert sub.meta[1].provenance.path.endswith("agent-x1.jsonl")


def test_anthropic_body_with_session_metadata_stays_anthropic(tmp_path):
    p = tmp_path / "body.json"
    p.write_text(json.dumps({"model": "claude", "metadata": {"session_id": "x"}, "system": "s", "messages": [
        {"role": "user", "content": "hi"}, {"role": "assistant", "content": S08_ASSISTANT},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01A", "content": "x"}]}]}))
    r = load(p)
    assert (r.format, r.main.dialect, r.main.system) == ("anthropic-messages", "anthropic", "s")
    assert r.main.messages[1]["content"][1]["type"] == "tool_use"
    assert check(r.main.messages, r.main.dialect) == []
