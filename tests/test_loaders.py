"""Loaders against the real corpus (../shared/corpus, facts from its MANIFEST.md).

Where possible the expected values are computed from the raw file with the
standard library (independently of the loader); the compaction numbers and
feature counts come from MANIFEST.md.
"""
from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest

from compactscope.core.analysis.checker import check, pair_errors
from compactscope.core.loaders import LoadError, detect, load
from compactscope.core.model.messages import ToolPairIndex

from conftest import CORPUS
from compactscope.core.loaders import not_transcript
from compactscope.core.loaders.side_files import REQUEST_LOG

# every transcript of the corpus: its documents (MANIFEST.md, READMEs) and the request logs some sessions keep beside
# them are told apart by their content (core.loaders.not_transcript), as load() refuses them
ALL_FILES = sorted(p for p in CORPUS.rglob("*") if p.is_file() and not not_transcript(p)) if CORPUS.is_dir() else []
NOT_TRANSCRIPTS = sorted(p for p in CORPUS.rglob("*") if p.is_file() and not_transcript(p)) if CORPUS.is_dir() else []


def _claude_code_lines(path: Path) -> bool:
    """Read with the standard library: one of the first lines is a Claude Code record (a user or assistant record
    holding its API ``message``, or a summary record)."""
    with path.open(encoding="utf-8", errors="replace") as f:
        for _, line in zip(range(20), f):
            try:
                r = json.loads(line)
            except ValueError:
                continue
            if isinstance(r, dict) and (r.get("type") in ("user", "assistant") and isinstance(r.get("message"), dict)
                                        or r.get("type") == "summary" and "leafUuid" in r):
                return True
    return False


CC_FILES = [p for p in ALL_FILES if p.suffix == ".jsonl" and _claude_code_lines(p)]

# MANIFEST.md: compact boundaries (trigger, preTokens) per file
BOUNDARIES = {
    "a6-e4c2a0fbd1-0-full.jsonl": [("auto", 155250)],
    "ca-fca7ea73ac-0-full.jsonl": [("auto", 155461)],
    "e1-2c3e2b3f2a-0-full.jsonl": [("auto", 156286)],
    "4b-7d5121b42a-0-full.jsonl": [("manual", 153739)],
    "b8-659b3a4dd4-0-full.jsonl": [("auto", 155277), ("auto", 155475)],
    "44-785715c3f5-2-full.jsonl": [("manual", 153697), ("manual", 148841)],
    "b0-2936744f3b-0-full.jsonl": [("auto", 155829), ("auto", 155203)],
    "fc-99c919b212-0-full.jsonl": [("auto", 167174)],
    "10-a740e118e0-0-full.jsonl": [],
    "37-995ebed6e4-2-full.jsonl": [],
    "4c-02af2759b6-0-full.jsonl": [],
    "fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl": [],
}


def _raw_records(path: Path) -> list[tuple[int, dict]]:
    """Every record of a JSONL file, with stdlib json; joined records on one line are split."""
    out = []
    dec = json.JSONDecoder()
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        i, s = 0, line.strip()
        while i < len(s):
            obj, i = dec.raw_decode(s, i)
            out.append((n, obj))
    return out


def _main_records(path: Path) -> list[dict]:
    seen, out = set(), []
    for _, r in _raw_records(path):
        if r.get("type") in ("user", "assistant") and not r.get("isSidechain") and isinstance(r.get("message"), dict):
            if r.get("uuid") in seen:
                continue
            seen.add(r.get("uuid"))
            out.append(r)
    return out


def _blocks(r: dict) -> list:
    c = r["message"].get("content")
    return c if isinstance(c, list) else []


def _by_name(name: str) -> Path:
    hits = [p for p in ALL_FILES if p.name == name]
    if not hits:
        pytest.skip(f"{name} is not in the corpus")
    return hits[0]


@pytest.mark.parametrize("path", NOT_TRANSCRIPTS, ids=lambda p: str(p.relative_to(CORPUS))[:40])
def test_what_is_not_a_transcript_is_refused_with_a_sentence(corpus, path):
    with pytest.raises(LoadError) as e:
        load(path)
    assert str(path) in str(e.value)
    assert not_transcript(path) in str(e.value) if not_transcript(path) == REQUEST_LOG \
        else "not a conversation file" in str(e.value)     # the sentence says what the file is instead


@pytest.mark.parametrize("path", ALL_FILES, ids=lambda p: p.name[:40])
def test_every_corpus_file_loads_with_provenance(corpus, path):
    result = load(path)
    assert result.conversations and result.main.messages
    assert detect(path) in {result.format, "claude_code", "claude-code", "inspect-log", "gemini-cli",
                            "anthropic-messages", "openai-chat", "agent-trajectory", "hermes-session", "hermes-db",
                            "codex-rollout"}
    for conv in result.conversations:
        assert len(conv.meta) == len(conv.messages)
        for m, meta in zip(conv.messages, conv.meta):
            assert isinstance(m, dict) and isinstance(m.get("role"), str)
            assert meta.provenance is not None and meta.provenance.path == str(path)
            if result.format == "hermes-db":
                # a database has no lines: the table and the row that hold the message
                assert meta.provenance.table == "messages" and isinstance(meta.provenance.row, int)
                assert f"[messages row {meta.provenance.row}]" in str(meta.provenance)
            elif path.suffix == ".eval":
                assert meta.provenance.note.startswith("samples/")     # the archive member that holds it
            elif "response" not in meta.provenance.note:
                assert meta.provenance.line > 0      # a line number even inside a pretty-printed document
        assert conv.segments[0] == 0 and conv.segments == sorted(set(conv.segments))


def test_formats_are_detected_by_content(corpus):
    assert load(_by_name("ab-2b9748b105-0-full.jsonl")).format == "gemini-cli"   # .jsonl name, JSON content
    assert load(_by_name("log_message_deduplication.eval")).format == "inspect-log"
    assert load(_by_name("2025-05-12T20-27-36-04-00_browser.json")).format == "inspect-log"
    assert load(_by_name("function_calling_simple.traj.json")).format == "agent-trajectory"
    for p in CC_FILES:
        assert load(p).format == "claude-code", p.name


@pytest.mark.parametrize("name", sorted(BOUNDARIES))
def test_compaction_boundaries_and_segments(corpus, name):
    path = _by_name(name)
    conv = load(path).main
    expected = BOUNDARIES[name]
    # the raw file agrees with the manifest
    raw = [r for _, r in _raw_records(path) if r.get("subtype") == "compact_boundary"]
    assert [(r["compactMetadata"]["trigger"], r["compactMetadata"]["preTokens"]) for r in raw] == expected
    assert [(e.trigger, e.pre_tokens) for e in conv.events] == expected
    assert all(e.kind == "claude_code" for e in conv.events)
    assert conv.segments == [0] + [e.message_index for e in conv.events]
    for e in conv.events:
        summary = conv.messages[e.summary_index]
        assert e.summary_index == e.message_index
        assert summary["role"] == "user"
        text = summary["content"] if isinstance(summary["content"], str) else summary["content"][0]["text"]
        assert text.startswith("This session is being continued from a previous conversation")
        assert conv.meta[e.summary_index].extra.get("isCompactSummary") is True
        assert e.provenance and e.provenance.line > 0
    # full history: every user/assistant record of the main chain is in some message
    lines = {n for m in conv.meta for n in (m.extra.get("lines") or [m.provenance.line])}
    assert len(lines) >= len({id(r) for r in _main_records(path)}) - 1   # the corrupt line holds 2 records


@pytest.mark.parametrize("path", CC_FILES, ids=lambda p: p.name[:40])
def test_assistant_lines_sharing_an_id_are_one_message(corpus, path):
    result = load(path)
    conv = result.main
    ids_by_msg = defaultdict(list)
    for r in _main_records(path):
        if r["type"] == "assistant":
            ids_by_msg[r["message"].get("id")] += [b["id"] for b in _blocks(r) if b.get("type") == "tool_use"]
    where = {}
    for i, m in enumerate(conv.messages):
        if m["role"] == "assistant" and isinstance(m["content"], list):
            for b in m["content"]:
                if b.get("type") == "tool_use":
                    where[b["id"]] = i
    for mid, tool_ids in ids_by_msg.items():
        assert len({where.get(t) for t in tool_ids}) <= 1, f"{mid}: its tool calls are split over messages"
    # roles alternate within each segment: consecutive user lines were merged into one message
    starts = conv.segments + [len(conv.messages)]
    for k in range(len(conv.segments)):
        seg = conv.messages[starts[k]:starts[k + 1]]
        for a, b in zip(seg, seg[1:]):
            assert not (a["role"] == "user" and b["role"] == "user")


def test_parallel_tool_calls_merged(corpus):
    # 1af7...: one message with 5 parallel tool_use blocks
    conv = load(_by_name("1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl")).main
    counts = [sum(1 for b in m["content"] if b.get("type") == "tool_use") for m in conv.messages
              if m["role"] == "assistant" and isinstance(m["content"], list)]
    assert max(counts) == 5
    i = next(i for i, m in enumerate(conv.messages) if m["role"] == "assistant" and isinstance(m["content"], list)
             and sum(1 for b in m["content"] if b.get("type") == "tool_use") == 5)
    results = [b for b in conv.messages[i + 1]["content"] if b.get("type") == "tool_result"]
    assert len(results) == 5           # the 5 results are one user message
    assert conv.meta[i].provenance.end_line > conv.meta[i].provenance.line
    # ca...: 3 parallel groups, up to 3 calls
    conv = load(_by_name("ca-fca7ea73ac-0-full.jsonl")).main
    groups = [sum(1 for b in m["content"] if b.get("type") == "tool_use") for m in conv.messages
              if m["role"] == "assistant" and isinstance(m["content"], list)]
    assert sum(1 for g in groups if g > 1) == 3 and max(groups) == 3


@pytest.mark.parametrize("path", CC_FILES, ids=lambda p: p.name[:40])
def test_no_pair_errors_except_those_in_the_file(corpus, path):
    result = load(path)
    conv = result.main
    recs = _main_records(path)
    uses = [b["id"] for r in recs for b in _blocks(r) if b.get("type") == "tool_use"]
    answered = {b.get("tool_use_id") for r in recs for b in _blocks(r) if b.get("type") == "tool_result"}
    really_broken = {u for u in uses if u not in answered} | (answered - set(uses))
    last_ids = {b.get("id") for b in conv.messages[-1]["content"]} if isinstance(conv.messages[-1]["content"], list) \
        else set()
    found = {f.tool_id for f in pair_errors(check(conv.messages, conv.dialect))}
    assert found == really_broken - last_ids
    # each context the API saw after a real compaction is clean
    for k in range(1, len(conv.segments)):
        assert pair_errors(check(conv.segment(k), conv.dialect)) == []
    for side in result.conversations[1:]:
        assert not [f for f in pair_errors(check(side.messages, side.dialect)) if f.code == "orphan_tool_result"]


def test_the_one_unanswered_tool_use_in_fc(corpus):
    conv = load(_by_name("fc-99c919b212-0-full.jsonl")).main
    errs = pair_errors(check(conv.messages, conv.dialect))
    assert [f.code for f in errs] == ["unanswered_tool_use"]
    pairs = ToolPairIndex(conv.messages)
    assert (len(pairs), pairs.complete_count) == (127, 126)
    # an image block survived the rebuild
    assert any(isinstance(m["content"], list) and any(b.get("type") == "image" for b in m["content"]
                                                      if isinstance(b, dict)) for m in conv.messages)


def test_corrupt_line_reported_and_not_fatal(corpus):
    path = _by_name("37-995ebed6e4-2-full.jsonl")
    with pytest.raises(json.JSONDecodeError):
        json.loads(path.read_text().splitlines()[127])
    result = load(path)
    probs = [p for p in result.problems if p.line == 128]
    assert len(probs) == 1 and probs[0].path == str(path) and probs[0].severity == "error"
    conv = result.main
    # both records of the line recovered: the summary record, and the assistant record (same uuid as line 131)
    assert "Add agent name to logging context automatically" in conv.extra["summaries"]
    assert sum(1 for m in conv.meta if m.uuid == "3252495b-f5ee-4004-9370-21c6d432eb59"
               or "3252495b-f5ee-4004-9370-21c6d432eb59" in m.extra.get("merged_uuids", [])) == 1
    assert conv.messages and len(conv.messages) > 80
    assert "2.1.7" in conv.extra["versions"] and "2.1.12" in conv.extra["versions"]


def test_sidechains_are_separate_conversations(corpus):
    path = _by_name("fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl")
    result = load(path)
    side_lines = {n for n, r in _raw_records(path) if r.get("isSidechain") is True}
    assert len(side_lines) == 405
    sides = [c for c in result.conversations[1:] if c.extra.get("kind") == "sidechain"]
    assert len(sides) == 5             # 5 Task calls
    got = {n for c in sides for m in c.meta for n in (m.extra.get("lines") or [m.provenance.line])}
    assert got == side_lines
    main_lines = {n for m in result.main.meta for n in (m.extra.get("lines") or [m.provenance.line])}
    assert not main_lines & side_lines
    tasks = {b["id"] for m in result.main.messages if isinstance(m["content"], list) for b in m["content"]
             if b.get("type") == "tool_use" and b.get("name") == "Task"}
    assert {c.extra["parent_tool_use_id"] for c in sides} == tasks
    # a separate agent-*.jsonl file: the sidechain is the conversation
    r = load(_by_name("agent-test-hash-123.jsonl"))
    assert [m["role"] for m in r.main.messages] == ["user", "assistant"]


def test_agent_progress_subagent_is_a_separate_conversation(corpus):
    path = _by_name("10-a740e118e0-0-full.jsonl")
    result = load(path)
    subs = [c for c in result.conversations if c.extra.get("kind") == "agent_progress"]
    assert len(subs) == 1 and result.conversations[0] is result.main and result.main.extra.get("kind") is None
    sub = subs[0]
    task = next(b for m in result.main.messages if isinstance(m["content"], list) for b in m["content"]
                if b.get("type") == "tool_use" and b.get("name") == "Task")
    assert sub.extra["parent_tool_use_id"] == task["id"]
    assert sub.messages[0]["role"] == "user"
    assert pair_errors(check(sub.messages, sub.dialect)) == []
    assert ToolPairIndex(sub.messages).complete_count >= 10


def test_usage_timestamps_and_metadata(corpus):
    conv = load(_by_name("b0-2936744f3b-0-full.jsonl")).main
    asst = [m for m, x in zip(conv.meta, conv.messages) if x["role"] == "assistant"]
    assert all(m.usage is not None for m in asst if m.model != "<synthetic>")
    u = next(m.usage for m in asst if m.usage and m.usage.cache_read_input_tokens)
    assert u.context_tokens == u.input_tokens + u.cache_creation_input_tokens + u.cache_read_input_tokens
    ts = [m.timestamp for m in conv.meta]
    assert all(isinstance(t, float) for t in ts) and ts == sorted(ts)
    # non-conversation records are passed through as metadata, with their lines
    records = conv.extra["records"]
    assert sum(1 for _, r in records if r.get("subtype") == "api_error") == 29
    assert conv.extra["record_counts"]["file-history-snapshot"] == 16


def test_inspect_and_swe_agent_tool_pairs_intact(corpus):
    for name, calls in [("2025-05-12T20-27-36-04-00_browser.json", 4), ("log_message_deduplication.eval", 5),
                        ("function_calling_simple.traj.json", 5),
                        ("marshmallow-1867.function_calling_replace.traj.json", 11)]:
        conv = load(_by_name(name)).main
        assert conv.dialect == "openai"
        assert pair_errors(check(conv.messages, conv.dialect)) == [], name
        n_calls = sum(len(m.get("tool_calls") or []) for m in conv.messages)
        assert n_calls == calls, name
        # every call is answered by the tool message right after it
        for i, m in enumerate(conv.messages):
            for k, tc in enumerate(m.get("tool_calls") or []):
                assert conv.messages[i + 1 + k]["role"] == "tool"
                assert conv.messages[i + 1 + k]["tool_call_id"] == tc["id"]
    traj = load(_by_name("marshmallow-1867.function_calling_replace.traj.json")).main
    assert len(traj.messages) == 24 and traj.messages[0]["role"] == "system"
    assert traj.extra["info"]["exit_status"] == "submitted"
    # this replay reuses call ids: reported, since pairing by id alone is ambiguous there
    ids = [tc["id"] for m in traj.messages for tc in m.get("tool_calls") or []]
    reused = {i for i in ids if ids.count(i) > 1}
    reported = {p.text.split()[3] for p in load(_by_name("marshmallow-1867.function_calling_replace.traj.json")).problems
                if "is used by" in p.text}
    assert reused and reported == reused
    browser = load(_by_name("2025-05-12T20-27-36-04-00_browser.json")).main
    assert browser.events == []        # no compaction event in this log
    assert any(m.usage for m in browser.meta)


def test_gemini_session(corpus):
    conv = load(_by_name("ab-2b9748b105-0-full.jsonl")).main
    assert conv.model == "gemini-2.5-flash"
    assert sum(len(m.get("tool_calls") or []) for m in conv.messages) == 9
    assert pair_errors(check(conv.messages, conv.dialect)) == []
    assert any(n["type"] == "info" for n in conv.extra["notes"])


def test_api_trace_cycles(corpus):
    path = _by_name("s01.json")
    doc = json.loads(path.read_text())
    conv = load(path).main
    last = doc["cycles"][-1]
    assert conv.messages[:-1] == last["request"]["messages"]
    # the response's thinking block was stored as {"type": "unknown", "raw": "ThinkingBlock(...)"}
    assert last["response"]["content"][0]["type"] == "unknown"
    thinking, text = conv.messages[-1]["content"]
    assert thinking["type"] == "thinking" and thinking["signature"].startswith("809abb")
    assert thinking["thinking"].startswith("I've successfully found all Python files")
    assert text == last["response"]["content"][1]
    assert check(conv.messages, conv.dialect) == []
    assert conv.system == last["request"]["system"] and conv.tools == last["request"]["tools"]
    assert sum(m.usage.output_tokens for m in conv.meta if m.usage) == doc["total_output_tokens"]


def test_wrong_kind_of_corpus_use_is_a_clear_error(corpus, tmp_path):
    with pytest.raises(LoadError) as e:
        load(CORPUS)
    assert "folder" in str(e.value)


def test_messages_with_nothing_more_share_one_empty_extra_that_refuses_writes(tmp_path):
    import copy
    import pickle

    from compactscope.core.model.conversation import NO_EXTRA, MessageMeta, own_extra
    path = tmp_path / "body.json"
    path.write_text(json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"},
                                                           {"role": "assistant", "content": "yo"}]}))
    conv = load(path).conversations[0]
    assert all(m.extra is NO_EXTRA for m in conv.meta)            # one dict for every message, not one each
    meta = conv.meta[0]
    assert meta.extra == {} and repr(meta.extra) == "{}" and json.dumps(meta.extra) == "{}"
    assert meta == MessageMeta(meta.provenance, meta.timestamp)
    for write in (lambda e: e.__setitem__("k", 1), lambda e: e.setdefault("k", 1), lambda e: e.update(k=1)):
        with pytest.raises(TypeError):
            write(meta.extra)
    assert NO_EXTRA == {}
    for twin in (copy.deepcopy(meta), pickle.loads(pickle.dumps(meta))):
        assert twin == meta
        own_extra(twin)["k"] = 1
        assert twin.extra == {"k": 1}
    own_extra(meta)["k"] = 2
    assert meta.extra == {"k": 2} and conv.meta[1].extra is NO_EXTRA and NO_EXTRA == {}
