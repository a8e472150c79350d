"""Logs written by the real packages (corpus MANIFEST section 5): inspect-ai 0.3.285 ``.eval``/``.json``
with CompactionEvents, hermes-agent 0.19.0 ``state.db`` (rotation chain and in-place archives) and its JSON
snapshots. Expected values come from ../shared/corpus-facts/ (read back by inspect-ai itself), from the
MANIFEST, or from the raw files read here with the standard library (sqlite3, json, and zstd through
backports.zstd), independently of the loaders."""
from __future__ import annotations

import json
import sqlite3
import sys

import pytest

from compactscope.core.loaders import load
from compactscope.core.replay import replay

from conftest import CORPUS

FACTS = CORPUS.parent / "corpus-facts" / "inspect_ai-react-compaction.json"
INSPECT = ["react-compaction-edit", "react-compaction-trim", "react-compaction-summary"]
LOGS = [f"{s}.{ext}" for s in INSPECT for ext in ("eval", "json")]


def _zipfile():
    if sys.version_info >= (3, 14):
        import zipfile
        return zipfile
    from backports.zstd import zipfile
    return zipfile


def _facts(name):
    if not FACTS.is_file():
        pytest.skip("../shared/corpus-facts is not present")
    return {s["id"]: s for s in json.loads(FACTS.read_text())[name]["per_sample"]}


def _raw_samples(path):
    """The samples of a log as stored, by id (stdlib json; zstd members through the zipfile backport)."""
    if path.suffix == ".json":
        return {s["id"]: s for s in json.loads(path.read_text())["samples"]}
    with _zipfile().ZipFile(path) as z:
        return {s["id"]: s for s in (json.loads(z.read(n)) for n in z.namelist()
                                     if n.startswith("samples/") and n.endswith(".json"))}


def _sig(m):
    """What identifies a message in both representations: role, text, tool call ids, tool_call_id."""
    c = m.get("content")
    if isinstance(c, list):
        c = "".join(p.get("text", "") for p in c if isinstance(p, dict) and p.get("type") == "text")
    calls = tuple(tc["id"] for tc in m.get("tool_calls") or [])
    return m["role"], c or "", calls, m.get("tool_call_id")


def _resolve(value, attachments):
    if isinstance(value, str) and value.startswith("attachment://"):
        return attachments.get(value[len("attachment://"):], value)
    if isinstance(value, list):
        return [_resolve(v, attachments) for v in value]
    if isinstance(value, dict):
        return {k: _resolve(v, attachments) for k, v in value.items()}
    return value


@pytest.fixture(scope="module")
def logs():
    if not CORPUS.is_dir():
        pytest.skip("../shared/corpus is not present")
    return {name: load(CORPUS / "inspect_ai" / name) for name in LOGS}


@pytest.mark.parametrize("name", LOGS)
def test_inspect_logs_match_the_facts(logs, name):
    facts = _facts(name)
    result = logs[name]
    assert result.format == "inspect-log" and not result.problems
    assert [c.extra["id"] for c in result.conversations] == ["config-bug", "queue-registry"]
    for conv in result.conversations:
        f = facts[conv.extra["id"]]
        new = [i for i, m in enumerate(conv.meta) if "copy_of" not in m.extra]
        assert len(new) == conv.extra["history_messages"] == f["messages"]
        assert len(conv.extra["calls"]) == f["model_events"]
        assert [(e.kind, e.extra["type"], e.pre_tokens, e.post_tokens, e.extra["strategy"], e.extra["messages_before"],
                 e.extra["messages_after"], e.trigger) for e in conv.events] == \
            [("inspect", c["type"], c["tokens_before"], c["tokens_after"], c["metadata"]["strategy"],
              c["metadata"]["messages_before"], c["metadata"]["messages_after"], c["metadata"]["trigger"])
             for c in f["compaction_events"]]
        # a segment per compaction, each the real context: the old one is what was compacted, the new one
        # opens with the compacted list (copies of earlier messages, or the summary)
        assert conv.segments == [0] + [e.message_index for e in conv.events]
        ends = conv.segments[1:] + [len(conv.messages)]
        for k, e in enumerate(conv.events):
            assert ends[k] - conv.segments[k] == e.extra["messages_before"]
            after = range(e.message_index, e.message_index + e.extra["messages_after"])
            assert all("copy_of" in conv.meta[i].extra or i == e.summary_index for i in after)
            if after.stop < ends[k + 1]:
                assert "copy_of" not in conv.meta[after.stop].extra     # then what the agent added
        # the history (non-copies) is the sample's messages in order
        raw = _raw_samples(CORPUS / "inspect_ai" / name)[conv.extra["id"]]
        att = raw["attachments"]
        assert [_sig(conv.messages[i]) for i in new][:3] == \
            [_sig({**m, "content": _resolve(m["content"], att),
                   "tool_calls": [{"id": t["id"]} for t in m.get("tool_calls") or []]})
             for m in raw["messages"][:3]]


@pytest.mark.parametrize("name", LOGS)
def test_each_model_call_has_its_real_input(logs, name):
    """The condensed inputs (input_refs into events_data.messages, attachment:// texts) expanded by hand
    from the raw file equal the loaded call's input, and an agent call's input is the segment before it."""
    result = logs[name]
    raws = _raw_samples(CORPUS / "inspect_ai" / name)
    for conv in result.conversations:
        raw = raws[conv.extra["id"]]
        pool, att = raw["events_data"]["messages"], raw["attachments"]
        models = [(k, e) for k, e in enumerate(raw["events"]) if e["event"] == "model"]
        assert [c["event"] for c in conv.extra["calls"]] == [k for k, _ in models]
        for call, (_k, e) in zip(conv.extra["calls"], models):
            expected = [_resolve(pool[p], att) for a, b in e["input_refs"] for p in range(a, b)]
            assert [m["role"] for m in call["input"]] == [m["role"] for m in expected]
            assert [m.get("tool_call_id") for m in call["input"]] == [m.get("tool_call_id") for m in expected]
            for got, want in zip(call["input"], expected):
                if isinstance(want["content"], str):
                    assert got["content"] == want["content"] and "attachment://" not in want["content"][:0] + \
                        (got["content"] or "")
            if call["kind"] == "agent":
                start, end = call["input_range"]
                assert conv.messages[start:end] == call["input"]
                assert start in conv.segments and all(not (start < s < end) for s in conv.segments)
                usage = e["output"]["usage"]
                if call["output_index"] is not None:
                    u = conv.meta[call["output_index"]].usage
                    assert (u.input_tokens, u.output_tokens) == (usage["input_tokens"], usage["output_tokens"])
                    assert conv.meta[call["output_index"]].uuid == e["output"]["choices"][0]["message"]["id"]


def test_inspect_summaries_and_summary_calls(logs):
    conv = logs["react-compaction-summary.eval"].conversations[1]        # queue-registry: one forced
    assert [e.trigger for e in conv.events] == ["threshold", "forced", "threshold"]
    kinds = [c["kind"] for c in conv.extra["calls"]]
    assert kinds.count("summary") == 3 and kinds.count("agent") == 13
    for e in conv.events:
        s = conv.messages[e.summary_index]
        assert s["role"] == "user" and s["content"].startswith("[CONTEXT COMPACTION SUMMARY]")
        assert conv.meta[e.summary_index].extra["compaction_summary"] is True
        call = conv.extra["calls"][e.extra["summary_call"]]
        assert call["kind"] == "summary" and call["event"] < e.extra["event"] and call["usage"]["output_tokens"] > 0
        # the summary call summarised the old context, then an instruction the history does not hold
        assert call["input"][:e.extra["messages_before"]] == conv.messages[e.message_index - e.extra[
            "messages_before"]:e.message_index]
    # the model_length answer that forced the compaction is a call whose output left no message
    discarded = [c for c in conv.extra["calls"] if c.get("discarded")]
    assert [c["stop_reason"] for c in discarded] == ["model_length"]
    # edit rewrites old tool results in place: the new segment holds the rewritten copies
    edit = logs["react-compaction-edit.json"].main
    removed = [i for i, m in enumerate(edit.messages) if m.get("content") == "(Tool result removed)"]
    assert removed and all(edit.meta[i].extra["edited"] and edit.messages[edit.meta[i].extra["copy_of"]][
        "tool_call_id"] == edit.messages[i]["tool_call_id"] for i in removed)


def test_eval_and_json_twins_load_alike(logs):
    for s in INSPECT:
        a, b = logs[f"{s}.eval"], logs[f"{s}.json"]
        for ca, cb in zip(a.conversations, b.conversations):
            assert [_sig(m) for m in ca.messages] == [_sig(m) for m in cb.messages]
            assert ca.segments == cb.segments
            assert [(e.pre_tokens, e.post_tokens, e.summary_index) for e in ca.events] == \
                [(e.pre_tokens, e.post_tokens, e.summary_index) for e in cb.events]


def test_replay_of_an_inspect_log_shows_the_real_compactions(logs):
    conv = logs["react-compaction-trim.eval"].main
    res = replay(conv, "s08")
    agent = [c for c in conv.extra["calls"] if c["kind"] == "agent"]
    assert len(res.calls) == len(agent)                 # copies are not new answers
    assert [e["call"] for e in res.real_events] == \
        [next(k for k, c in enumerate(agent) if c["input_range"][0] == e.message_index) for e in conv.events]
    for e, ev in zip(conv.events, res.real_events):
        assert res.calls[ev["call"]].real_boundary["pre_tokens"] == e.pre_tokens
    # the replayed context never holds a message twice (the copies were skipped)
    for ctx in res.inputs:
        ids = [id(m) for m in ctx]
        assert len(ids) == len(set(ids))


# ------------------------------------------------------------------ hermes-agent
def _db_rows(path):
    con = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
    try:
        rows = con.execute("SELECT id, session_id, role, active, compacted FROM messages ORDER BY id").fetchall()
        sessions = con.execute("SELECT id, parent_session_id, end_reason FROM sessions ORDER BY started_at").fetchall()
        usage = con.execute("SELECT session_id, input_tokens, output_tokens, api_call_count FROM "
                            "session_model_usage WHERE task='compression' ORDER BY first_seen").fetchall()
    finally:
        con.close()
    return rows, sessions, usage


@pytest.mark.parametrize("mode", ["rotation", "inplace"])
def test_hermes_databases_three_compressions(corpus, mode):
    path = corpus / "hermes-agent" / mode / "state.db"
    rows, sessions, usage = _db_rows(path)
    result = load(path)
    assert len(result.conversations) == 1
    conv = result.main
    assert len(conv.messages) == len(rows) == 120
    assert [m.provenance.row for m in conv.meta] == [r[0] for r in rows]
    # MANIFEST: 26 -> 18, 34 -> 20, 40 -> 17 messages
    assert [(e.extra["messages_before"], e.extra["messages_after"]) for e in conv.events] == [(26, 18), (34, 20),
                                                                                              (40, 17)]
    assert conv.segments == [0, 26, 60, 100]
    for e in conv.events:
        s = conv.messages[e.summary_index]
        assert s["role"] == "user" and s["content"].startswith("[CONTEXT COMPACTION — REFERENCE ONLY]")
        assert conv.meta[e.summary_index].extra["summary_source"] == "database"
        assert e.summary_index == e.message_index + e.extra["head_copies"]
        # the compacted list: copies of the old context's first and last messages around the summary
        for i in range(e.message_index, e.message_index + e.extra["messages_after"]):
            assert i == e.summary_index or conv.messages[conv.meta[i].extra["copy_of"]]["role"] == \
                conv.messages[i]["role"]
    assert [i for i, m in enumerate(conv.meta) if m.extra.get("compaction_summary")] == [29, 63, 103]
    # each segment is a real context: the pairs are whole in every one
    from compactscope.core.analysis.checker import check_conversation, pair_errors
    assert pair_errors(check_conversation(conv)) == []
    # summary calls: session_model_usage rows with task='compression'
    calls = conv.extra["summary_calls"]
    assert [(c["session_id"], c["input_tokens"], c["output_tokens"]) for c in calls] == [u[:3] for u in usage]
    if mode == "rotation":
        assert conv.extra["session_ids"] == [s[0] for s in sessions]
        assert [s[1] for s in sessions] == [None] + [s[0] for s in sessions[:-1]]
        assert [s[2] for s in sessions] == ["compression"] * 3 + [None]
        by_session = [sum(1 for r in rows if r[1] == s[0]) for s in sessions]
        assert by_session == [26, 34, 40, 20]
        assert [conv.segments[k + 1] - conv.segments[k] for k in range(3)] == by_session[:3]
        assert [e.extra["summary_call"]["usage"].input_tokens for e in conv.events] == [u[1] for u in usage]
    else:
        assert all(r[4] == 1 and r[3] == 0 for r in rows[:100]) and all(r[3] == 1 for r in rows[100:])
        assert conv.extra["live_context"] == list(range(100, 120))
        assert [e.extra["boundary"] for e in conv.events] == ["in_place (inferred)"] * 2 + ["in_place"]
        assert usage[0][3] == 3 and all(e.extra["summary_call"]["shared_by"] == 3 for e in conv.events)


def test_hermes_in_place_split_agrees_with_the_rotation_chain(corpus):
    """The same scripted run in both modes: the generations inferred from the archived rows are the
    sessions of the chain, message for message."""
    rot = load(corpus / "hermes-agent" / "rotation" / "state.db").main
    inp = load(corpus / "hermes-agent" / "inplace" / "state.db").main
    assert rot.segments == inp.segments
    assert [e.summary_index for e in rot.events] == [e.summary_index for e in inp.events]
    assert [m.extra.get("copy_of") for m in rot.meta] == [m.extra.get("copy_of") for m in inp.meta]


def test_replay_of_a_hermes_chain_shows_the_real_compactions(corpus):
    conv = load(corpus / "hermes-agent" / "rotation" / "state.db").main
    res = replay(conv, "hermes", {"context_length": 64000})
    new_answers = [i for i, m in enumerate(conv.messages) if m["role"] == "assistant" and "copy_of" not in
                   conv.meta[i].extra]
    assert len(res.calls) == len(new_answers) == 31          # MANIFEST: 31 agent calls
    # each real compaction lands on the first call after its boundary
    assert [new_answers[ev["call"]] for ev in res.real_events] == [44, 80, 117]     # rows 45, 81, 118
    for ctx in res.inputs:
        assert len({id(m) for m in ctx}) == len(ctx)


@pytest.mark.parametrize("name,count,source", [
    ("rotation/sessions/session_20261130_142348_26b578.json", 1, None),
    ("rotation/sessions/session_20261130_142357_bc8c8b.json", 26, "text prefix"),
    ("rotation/sessions/session_20261130_142405_9aacdb.json", 37, "text prefix"),
    ("rotation/sessions/session_20261130_142413_ba9091.json", 20, "_compressed_summary"),
    ("inplace/sessions/session_20261130_142434_da29ca.json", 37, "text prefix")])
def test_hermes_snapshots(corpus, name, count, source):
    path = corpus / "hermes-agent" / name
    raw = json.loads(path.read_text())
    conv = load(path).main
    assert len(conv.messages) == len(raw["messages"]) == count
    flagged = [i for i, m in enumerate(raw["messages"]) if m.get("_compressed_summary")]
    marked = [i for i, m in enumerate(conv.meta) if m.extra.get("compaction_summary")]
    assert marked == ([] if source is None else [3])
    assert flagged == (marked if source == "_compressed_summary" else [])
    if source:
        assert conv.meta[3].extra["summary_source"] == source and conv.segments == [0]
        assert [(e.message_index, e.summary_index) for e in conv.events] == [(0, 3)]


def test_replay_leaves_the_real_summaries_out_of_the_history(logs):
    """Inspect's summary is a user message right after tool results: converted to the Messages API it would
    be merged into them, and the replay would carry the real summary as if the user had typed it."""
    conv = logs["react-compaction-summary.json"].conversations[1]
    for strategy in ("s08", "hermes"):
        res = replay(conv, strategy, free=True)
        assert res.iteration_totals()["user_turns"] == 1
        for ctx in res.inputs:
            assert "[CONTEXT COMPACTION SUMMARY]" not in json.dumps(ctx)
        assert [e["call"] for e in res.real_events] == [4, 6, 10]
        # following reality (the default) the real context after a compaction holds the real summary: a message of
        # its own, never merged into the tool results before it, and not a turn the user typed
        res = replay(conv, strategy)
        assert res.mode == "follow" and res.iteration_totals()["user_turns"] == 1
        held = [m for ctx in res.inputs for m in ctx if "[CONTEXT COMPACTION SUMMARY]" in json.dumps(m)]
        assert held
        for m in held:
            parts = m["content"] if isinstance(m.get("content"), list) else [m.get("content")]
            assert not any(isinstance(b, dict) and b.get("type") in ("tool_result",) for b in parts)
            assert m.get("role") != "tool"


def test_the_session_runs_over_the_history_or_one_real_context(corpus, tmp_path):
    """The window's model: the whole conversation is each message once; a segment is the real context the
    compaction left (copies included); a call inside it counts only the segment's own answers."""
    from compactscope.core.session.model import Session
    from compactscope.core.files.workspace import Workspace
    s = Session(workspace=Workspace(tmp_path), strategy="hermes")
    assert s.source.open(str(corpus / "hermes-agent" / "rotation" / "state.db"))
    conv = s.source.conversation
    assert s.source.segment == len(conv.segments) - 1       # opened on the last real context (issue 11)
    s.source.set_segment(None)                              # the whole history
    assert s.source.source_messages == conv.history() and len(s.source.source_messages) == 68
    s.source.set_segment(1)
    assert s.source.source_messages == conv.messages[26:60] and len(s.source.source_messages) == 34
    from compactscope.core.model.contexts import segments
    s.source.set_call(segments(conv)[1].first_call)    # the segment's first call (numbered over the history, as replay
    assert s.source.segment == 1                       # does): after its compacted list of 18
    assert len(s.source.source_messages) == 18


def test_hermes_generations_and_summaries_without_the_text_prefix(corpus, tmp_path):
    """The split and the summaries come from the rows' structure, not from hermes' wording: with every
    summary reworded, the in-place database still splits 26 -> 18, 34 -> 20, 40 -> 17 at the same rows."""
    import shutil
    db = tmp_path / "state.db"
    shutil.copyfile(corpus / "hermes-agent" / "inplace" / "state.db", db)
    con = sqlite3.connect(db)
    n = con.execute("UPDATE messages SET content = 'Notes on the work so far: ' || id "
                    "WHERE content LIKE '[CONTEXT COMPACTION%'").rowcount
    con.commit()
    con.close()
    assert n == 3
    conv = load(db).main
    assert conv.segments == [0, 26, 60, 100]
    assert [(e.extra["messages_before"], e.extra["messages_after"], e.summary_index) for e in conv.events] == \
        [(26, 18, 29), (34, 20, 63), (40, 17, 103)]
    assert all(conv.meta[e.summary_index].extra["summary_source"] == "database" for e in conv.events)
    assert conv.messages[29]["content"] == "Notes on the work so far: 30"
