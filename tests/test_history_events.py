"""Events, retention and watch (core/analysis/session_events.py, core/analysis/retention.py, core/analysis/watch.py, app/cli_events.py):
on the corpus (every claim of retention checked against the file's own text, read here without the loaders) and
on small synthetic cases."""
from __future__ import annotations

import io
import json
import sqlite3
from contextlib import redirect_stdout
from pathlib import Path

import pytest

from compactscope.core.analysis.session_events import (DIVERGENCE, FINDING, LAYER, LOOP, REAL, SIMULATED, history_events,
                                               loops, replay_for)
from compactscope.core.loaders import load
from compactscope.core.analysis.retention import context_items, judge, retention
from compactscope.core.analysis.watch import ranges, watch
from compactscope.core.files.workspace import Workspace

from conftest import CORPUS

EXAMPLES = Path(__file__).resolve().parents[1] / "assets" / "examples"
CC_COMPACTED = {   # file -> (trigger, preTokens) of each compact_boundary (MANIFEST.md)
    "a6-e4c2a0fbd1-0-full.jsonl": [("auto", 155250)],
    "ca-fca7ea73ac-0-full.jsonl": [("auto", 155461)],
    "e1-2c3e2b3f2a-0-full.jsonl": [("auto", 156286)],
    "4b-7d5121b42a-0-full.jsonl": [("manual", 153739)],
    "b8-659b3a4dd4-0-full.jsonl": [("auto", 155277), ("auto", 155475)],
    "44-785715c3f5-2-full.jsonl": [("manual", 153697), ("manual", 148841)],
    "b0-2936744f3b-0-full.jsonl": [("auto", 155829), ("auto", 155203)],
    "fc-99c919b212-0-full.jsonl": [("auto", 167174)],
}
OTHERS = ["hermes-agent/rotation/state.db", "hermes-agent/inplace/state.db", "inspect_ai/react-compaction-edit.json",
          "inspect_ai/react-compaction-trim.json", "inspect_ai/react-compaction-summary.json"]


def _replay(conv, tmp_path):
    return replay_for(conv, workspace=Workspace(tmp_path))


def _cli(argv) -> tuple[int, str]:
    from compactscope.app.cli import main
    out = io.StringIO()
    with redirect_stdout(out):
        code = main(argv)
    return code, out.getvalue()


# ------------------------------------------------------------------ the file's own text, read without the loaders
def _strings(v, out):
    if isinstance(v, str):
        out.append(v)
    elif isinstance(v, dict):
        for x in v.values():
            _strings(x, out)
    elif isinstance(v, list):
        for x in v:
            _strings(x, out)


def _cc_records(path: Path) -> list[dict]:
    recs = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            r = json.loads(line)
        except ValueError:
            continue
        if isinstance(r, dict):
            recs.append(r)
    return recs


def _cc_contexts(path: Path) -> list[tuple[str, str]]:
    """For each compact_boundary of the raw JSONL: (the text of the user and assistant records since the previous
    boundary, the text of the records after it up to the first assistant record)."""
    recs = _cc_records(path)
    bounds = [i for i, r in enumerate(recs) if r.get("subtype") == "compact_boundary"]
    out = []
    for n, b in enumerate(bounds):
        start = bounds[n - 1] + 1 if n else 0
        before: list = []
        for r in recs[start:b]:
            if r.get("type") in ("user", "assistant") and not r.get("isSidechain"):
                _strings(r.get("message"), before)
        after: list = []
        for r in recs[b + 1:]:
            if r.get("type") == "assistant" and not r.get("isSidechain"):
                break
            if r.get("type") == "user" and not r.get("isSidechain"):
                _strings(r.get("message"), after)
        out.append(("\n".join(before), "\n".join(after)))
    return out


@pytest.mark.parametrize("name", sorted(CC_COMPACTED))
def test_events_list_each_real_compaction_at_its_call(corpus, tmp_path, name):
    path = corpus / "entireio-cli" / name
    conv = load(path).main
    res = _replay(conv, tmp_path)
    events = history_events(conv, res)
    real = [e for e in events if e.kind == REAL]
    assert [(e.data["trigger"], e.data["pre_tokens"]) for e in real] == CC_COMPACTED[name]
    # at the call replay puts it (the first call after the boundary), in the segment it opened
    assert [e.call for e in real] == [ev["call"] for ev in res.real_events]
    assert [e.segment for e in real] == list(range(1, len(real) + 1))
    for e in real:
        assert e.data["summary"].startswith("This session is being continued")
        assert f"call {e.call}" in e.text and f"{e.data['pre_tokens']:,}" in e.text
    # in call order; every simulated compaction of the replay is there
    calls = [e.call for e in events if e.call is not None]
    assert calls == sorted(calls)
    assert [e.call for e in events if e.kind == SIMULATED] == [c.index for c in res.calls if c.compacted]


@pytest.mark.parametrize("rel", OTHERS)
def test_events_work_for_hermes_and_inspect(corpus, tmp_path, rel):
    conv = load(corpus / rel).main
    res = _replay(conv, tmp_path)
    events = history_events(conv, res)
    real = [e for e in events if e.kind == REAL]
    assert len(real) == len(conv.events) > 0
    assert [e.call for e in real] == [ev["call"] for ev in res.real_events]
    assert all(e.kind in (REAL, SIMULATED, LAYER, FINDING, DIVERGENCE, LOOP) for e in events)
    assert any(e.kind == SIMULATED for e in events)


def test_events_cli_json_shape(corpus):
    code, out = _cli(["events", str(corpus / "entireio-cli" / "b0-2936744f3b-0-full.jsonl"), "--json"])
    assert code == 0
    d = json.loads(out)
    assert list(d) == ["events"]
    for e in d["events"]:
        assert list(e)[:4] == ["kind", "call", "segment", "text"]
    assert [e["call"] for e in d["events"] if e["kind"] == "real_compaction"] != []
    code, out = _cli(["events", str(corpus / "entireio-cli" / "b0-2936744f3b-0-full.jsonl"), "--strategy", "s08"])
    assert code == 0 and "s08 compacts before call" in out


def _check_claims(found, replaced_text: str, replacement_text: str, tally: list) -> None:
    for it in found.kept:
        tally.append(it.text in replacement_text and it.text in replaced_text)
    for it in found.lost:
        tally.append(it.text in replaced_text and it.text not in replacement_text)


@pytest.mark.parametrize("name", sorted(CC_COMPACTED))
def test_retention_claims_hold_against_the_raw_jsonl(corpus, tmp_path, name):
    path = corpus / "entireio-cli" / name
    conv = load(path).main
    found = [r for r in retention(conv, _replay(conv, tmp_path)) if r.kind == "real"]
    raw = _cc_contexts(path)
    assert len(found) == len(raw) == len(CC_COMPACTED[name])
    tally: list = []
    for r, (before, after) in zip(found, raw, strict=True):
        assert r.kept or r.lost
        _check_claims(r, before, after, tally)
        requests = [i for i in r.kept + r.lost if i.kind == "request"]
        assert sum(i.last for i in requests) == (1 if requests else 0)
        if requests:
            assert r.last_request()[0] is requests[-1] or r.last_request()[0].last
    assert tally and sum(tally) / len(tally) >= 0.98, f"{sum(tally)} of {len(tally)} claims hold"
    assert all(tally), f"{len(tally) - sum(tally)} of {len(tally)} claims do not hold"


def _hermes_rows(db: Path) -> str:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        cols = [r[1] for r in con.execute("PRAGMA table_info(messages)")]
        text_cols = [c for c in cols if c in ("content", "tool_calls", "tool_call_id", "tool_name")]
        rows = con.execute(f"SELECT {', '.join(text_cols)} FROM messages").fetchall()
    finally:
        con.close()
    return "\n".join(str(v) for row in rows for v in row if v is not None)


@pytest.mark.parametrize("rel", OTHERS)
def test_retention_claims_hold_for_hermes_and_inspect(corpus, tmp_path, rel):
    path = corpus / rel
    conv = load(path).main
    res = _replay(conv, tmp_path)
    found = retention(conv, res)
    assert any(r.kind == "real" for r in found) and any(r.kind == "simulated" for r in found)
    whole = _hermes_rows(path) if path.suffix == ".db" else path.read_text(encoding="utf-8")
    starts = list(conv.segments) + [len(conv.messages)]
    tally: list = []
    for r in found:
        for it in r.kept + r.lost:        # every item's text is the file's, as it holds it
            assert it.text in whole or json.dumps(it.text)[1:-1] in whole, it
        if r.kind == "real":
            k = r.segment
            before = "\n".join(json.dumps(m, ensure_ascii=False) for m in conv.messages[starts[k - 1]:starts[k]])
            before += "\n" + "\n".join(_flat(m) for m in conv.messages[starts[k - 1]:starts[k]])
            after = "\n".join(_flat(m) for m in conv.messages[starts[k]:starts[k + 1]]
                              [:_first_reply(conv, starts[k], starts[k + 1]) - starts[k]])
        else:
            before = "\n".join(_flat(m) for m in res.inputs[r.call])
            after = "\n".join(_flat(m) for m in res.inputs[r.call + 1][:res.calls[r.call].messages_after]) \
                if r.call + 1 < len(res.inputs) else "\n".join(_flat(m) for m in res.rerun(r.call).output)
        _check_claims(r, before, after, tally)
    assert tally and all(tally), f"{len(tally) - sum(tally)} of {len(tally)} claims do not hold"


def _flat(m) -> str:
    out: list = []
    _strings(m, out)
    return "\n".join(out)


def _first_reply(conv, start, end) -> int:
    for i in range(start, end):
        if conv.messages[i].get("role") == "assistant" and "copy_of" not in conv.meta_at(i).extra:
            return i
    return end


@pytest.mark.parametrize("name", ["b8-659b3a4dd4-0-full.jsonl", "a6-e4c2a0fbd1-0-full.jsonl"])
def test_watch_of_a_lost_item_says_where_it_went(corpus, tmp_path, name):
    conv = load(corpus / "entireio-cli" / name).main
    res = _replay(conv, tmp_path)
    found = [r for r in retention(conv, res) if r.kind == "real"]
    raw = _cc_contexts(corpus / "entireio-cli" / name)
    checked = 0
    for r, (before, after) in zip(found, raw, strict=True):
        for it in r.lost[:6]:
            w = watch(conv, it.text, res)
            assert w.contexts[r.segment - 1].present
            assert any(x.call == r.call and x.kind == "real" and x.segment == r.segment for x in w.lost_at), w
            assert it.text in before and it.text not in after
            checked += 1
    assert checked
    # JSON as the issue gives it
    code, out = _cli(["watch", str(corpus / "entireio-cli" / name), found[0].lost[0].text, "--json"])
    d = json.loads(out)
    assert code == 0 and d["term"] == found[0].lost[0].text
    assert {"segment", "present"} <= set(d["contexts"][0]) and {"call", "by"} <= set(d["lost_at"][0])


def test_retention_cli_json_shape(corpus):
    code, out = _cli(["retention", str(corpus / "inspect_ai" / "react-compaction-summary.json"), "--json"])
    assert code == 0
    d = json.loads(out)
    assert list(d) == ["compactions"]
    kinds = {c["kind"] for c in d["compactions"]}
    assert kinds == {"real", "simulated"}
    for c in d["compactions"]:
        assert {"kind", "call", "segment", "kept", "lost"} <= set(c)
        for it in c["kept"] + c["lost"]:
            assert it["kind"] in ("path", "request", "tool", "error", "identifier", "number") and it["text"]


# ------------------------------------------------------------------ synthetic cases
def test_loops_are_compactions_soon_after_another_that_free_little():
    assert loops([(10, 1000, 200), (12, 1000, 900), (30, 1000, 950), (31, 1000, 500)]) == [(12, 10, 0.1)]
    assert loops([]) == [] and loops([(3, 100, 99)]) == []
    assert loops([(5, 0, 0), (6, 100, 99)]) == [(6, 5, 0.01)]


def test_events_of_the_long_example_under_s08(tmp_path):
    conv = load(EXAMPLES / "long_session.json").main
    res = replay_for(conv, strategy="s08", workspace=Workspace(tmp_path))
    events = history_events(conv, res)
    kinds = {e.kind for e in events}
    assert SIMULATED in kinds and LAYER in kinds
    for e in events:
        if e.kind == LAYER:
            c = res.calls[e.call]
            assert not c.compacted and e.data["layer"] in c.fired
        if e.kind == LOOP:
            c = res.calls[e.call]
            assert c.compacted and (c.tokens_before - c.tokens_after) / c.tokens_before < 0.25
            assert e.call - e.data["previous_call"] <= 5


def test_a_finding_is_an_event_at_the_call_that_sent_it(tmp_path):
    p = tmp_path / "broken.json"
    p.write_text(json.dumps([
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [{"type": "text", "text": "ok"}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_ghost", "content": "x"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "done"}]},
        {"role": "user", "content": "thanks"},
    ]))
    conv = load(p).main
    events = history_events(conv, replay_for(conv, strategy="s08", workspace=Workspace(tmp_path)))
    found = [e for e in events if e.kind == FINDING]
    assert found and found[0].data["code"] == "orphan_tool_result"
    assert found[0].call == 1 and found[0].data["message"] == 2 and found[0].segment == 0


def test_retention_marks_kept_and_lost_by_whole_words():
    msgs = [{"role": "user", "content": "Please fix src/app/main.py and keep the retry_count at 3000"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Read",
                                               "input": {"file_path": "/repo/src/app/main.py"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "is_error": True,
                                          "content": "Error: permission denied\nmore"}]},
            {"role": "assistant", "content": "retry_count is read twice; retry_count 3000"},
            {"role": "user", "content": "now run the tests"}]
    items = context_items(msgs)
    got = {(i.kind, i.text) for i in items}
    assert {("request", "Please fix src/app/main.py and keep the retry_count at 3000"), ("tool", "Read"),
            ("path", "/repo/src/app/main.py"), ("path", "src/app/main.py"), ("error", "Error: permission denied"),
            ("identifier", "retry_count"), ("number", "3000"), ("request", "now run the tests")} <= got
    assert [i.text for i in items if i.last] == ["now run the tests"]
    replaced = "\n".join(_flat(m) for m in msgs)
    kept, lost = judge(items, replaced, "Summary: the user asked to fix src/app/main.py; Reader; retry_counts")
    assert ("path", "src/app/main.py") in {(i.kind, i.text) for i in kept}
    lost_texts = {i.text for i in lost}
    assert "/repo/src/app/main.py" in lost_texts and "now run the tests" in lost_texts
    # "Read" is inside "Reader" and "retry_count" inside "retry_counts": neither kept nor lost
    assert "Read" not in lost_texts | {i.text for i in kept}
    assert "retry_count" not in lost_texts | {i.text for i in kept}


def test_watch_ranges_and_an_empty_term(tmp_path):
    assert ranges([False, True, True, False, True]) == [(1, 2), (4, 4)]
    assert ranges([]) == []
    conv = load(EXAMPLES / "cc_real_compaction.jsonl").main
    with pytest.raises(ValueError):
        watch(conv, "")


def test_watch_names_the_simulated_layer_that_removed_a_term(tmp_path):
    conv = load(EXAMPLES / "long_session.json").main
    res = replay_for(conv, strategy="s08", workspace=Workspace(tmp_path))
    first_user = conv.messages[0]["content"]
    term = first_user if isinstance(first_user, str) else first_user[0]["text"]
    term = term.split("\n")[0][:40]
    w = watch(conv, term, res)
    assert w.contexts[0].present and w.contexts[0].first_message == 0
    sims = [x for x in w.lost_at if x.kind == "simulated"]
    if sims:
        k = sims[0].call
        layer = sims[0].by.split(": ", 1)[1]
        assert layer in res.layer_names
        assert any(term in _flat(m) for m in res.inputs[k])
    assert w.simulated and w.simulated[0][0] == 0


def test_cli_watch_and_retention_text(tmp_path):
    code, out = _cli(["retention", str(EXAMPLES / "cc_real_compaction.jsonl")])
    assert code == 0 and "real compaction before call" in out and ("kept" in out or "LOST" in out)
    code, out = _cli(["watch", str(EXAMPLES / "cc_real_compaction.jsonl"), "zz-not-there-zz"])
    assert code == 0 and "never removed" in out and "absent" in out


def test_corpus_constant_is_where_the_fixture_looks():
    assert CORPUS.name == "corpus"


def test_report_has_an_events_and_a_retention_section(tmp_path):
    from html import escape
    out_html, out_md = tmp_path / "r.html", tmp_path / "r.md"
    path = EXAMPLES / "cc_real_compaction.jsonl"
    code, _ = _cli(["report", str(path), "-o", str(out_html), "--workdir", str(tmp_path / "w")])
    assert code == 0
    page = out_html.read_text(encoding="utf-8")
    assert 'id="events"' in page and 'id="retention"' in page and 'href="#events"' in page
    conv = load(path).main
    res = replay_for(conv, workspace=Workspace(tmp_path / "w2"))
    real = [e for e in history_events(conv, res) if e.kind == REAL]
    assert escape(real[0].text) in page
    found = retention(conv, res)
    some = (found[0].lost or found[0].kept)[0]
    assert escape(" ".join(some.text.split())[:60]) in page
    code, _ = _cli(["report", str(path), "-o", str(out_md), "--workdir", str(tmp_path / "w")])
    text = out_md.read_text(encoding="utf-8")
    assert code == 0 and "## Events (" in text and "## What each compaction kept and lost (" in text
    assert "real compaction before call" in text


def _zh_left(texts) -> dict:
    from compactscope.core.i18n import catalog as i18n
    return {t: left for t in texts if (left := i18n.untranslated(t))}


def test_every_event_text_has_a_chinese_template(corpus, tmp_path):
    texts = set()
    for path in [corpus / "entireio-cli" / n for n in sorted(CC_COMPACTED)] + [corpus / r for r in OTHERS] + \
            [EXAMPLES / "long_session.json", EXAMPLES / "cc_real_compaction.jsonl"]:
        conv = load(path).main
        res = _replay(conv, tmp_path)
        texts |= {e.text for e in history_events(conv, res)}
        w = watch(conv, conv.messages[0]["content"][:20] if isinstance(conv.messages[0].get("content"), str)
                  else "the", res)
        texts |= {x.by for x in w.lost_at if x.kind == "real"}
    for strategy in ("s08", "hermes", "inspect_edit", "inspect_trim", "inspect_summary"):
        conv = load(EXAMPLES / "long_session.json").main
        texts |= {e.text for e in history_events(conv, replay_for(conv, strategy=strategy,
                                                                  workspace=Workspace(tmp_path)))}
    assert len(texts) > 20
    assert _zh_left(texts) == {}


def test_events_retention_and_watch_on_a_recording(tmp_path):
    """A Compactscope recording of its own agent (s08's compact_history fired during the run): the recorded
    compaction is an event at its call, its retention's claims hold, and watch says what removed a lost item."""
    from compactscope.core.live.agent import Agent
    from compactscope.core.live.recorder import RecordingWriter
    from tests.fakeapi import FakeAnthropic, message, reply, text_block, tool_use_block
    key = "-".join(("sk", "ant", "fake-eventstest-0123456789"))
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "big.txt").write_text("line of text\n" * 40)
    script = [reply(message([tool_use_block("read_file", {"path": "big.txt"}, "t1")])),
              reply(message([tool_use_block("read_file", {"path": "big.txt"}, "t2")])),
              reply(message([text_block("read it twice")]))]
    rec = tmp_path / "agent.jsonl"
    with FakeAnthropic(script) as fake, RecordingWriter(rec, source="agent") as w:
        Agent(ws, api_key=key, base_url=fake.url, timeout=10, recorder=w, summarizer="offline",
              params={"context_limit": 1200}).send("read big.txt")
    conv = load(rec).main
    assert conv.events
    res = replay_for(conv, workspace=Workspace(tmp_path / "w"))
    events = history_events(conv, res)
    real = [e for e in events if e.kind == REAL]
    assert len(real) == len(conv.events) and real[0].call == res.real_events[0]["call"]
    found = [r for r in retention(conv, res) if r.kind == "real"]
    assert found
    starts = list(conv.segments) + [len(conv.messages)]
    tally: list = []
    for r in found:
        k = r.segment
        before = "\n".join(_flat(m) for m in conv.messages[starts[k - 1]:starts[k]])
        after = "\n".join(_flat(m) for m in conv.messages[starts[k]:_first_reply(conv, starts[k], starts[k + 1])])
        _check_claims(r, before, after, tally)
        for it in r.lost:
            w = watch(conv, it.text, res)
            assert w.contexts[k - 1].present and any(x.call == r.call and x.kind == "real" for x in w.lost_at)
    assert tally and all(tally)
    raw = rec.read_text(encoding="utf-8")
    assert all(json.dumps(i.text)[1:-1] in raw for r in found for i in r.kept + r.lost)


def test_retention_pauses_between_simulated_compactions_and_stops_when_told(tmp_path):
    """The events dock's retention runs in a courteous task: it calls ``pause`` (the task's cancel.is_set, which
    waits while a foreground run is busy) every 64 simulated compactions, and a true answer ends it early."""
    from compactscope.core.replay import replay
    conv = load(EXAMPLES / "long_session.json").main
    res = replay(conv, "s08", {"context_limit": 3000, "max_messages": 8}, workspace=Workspace(tmp_path / "w"))
    whole = retention(conv, res)
    simulated = [r for r in whole if r.kind == "simulated"]
    assert simulated
    asked = []
    same = retention(conv, res, pause=lambda: asked.append(1) and False)
    assert [r.to_json() for r in same] == [r.to_json() for r in whole]
    assert len(asked) == -(-len(simulated) // 64)
    assert [r.kind for r in retention(conv, res, pause=lambda: True)] == [r.kind for r in whole if r.kind == "real"]
