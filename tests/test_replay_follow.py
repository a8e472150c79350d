"""Issue 24: the replay follows reality (after a real compaction it goes on from the real context), pairs each
real compaction with at most one simulated one, infers from evidence only, and counts what Claude Code 2.1.21+
counts after the last usage."""
from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from compactscope.core.analysis import divergence
from compactscope.core.loaders import load
from compactscope.core.pipeline.engine import Engine
from compactscope.core.replay import replay
from compactscope.core.replay.pairing import extra_compactions, pairs
from compactscope.core.strategies import infer_params
from compactscope.core.files.workspace import Workspace

from conftest import CORPUS
from test_cc_sessions import _asst, _cc, _grow, _res, _tu, _usage, _write

CC = CORPUS / "entireio-cli"
SUMMARY = ("This session is being continued from a previous conversation that ran out of context. The summary "
           "below covers the earlier portion of the conversation.\n\nSummary: " + "s" * 2000)


def _compacting(tmp_path, segments=3, version="2.1.14", name="multi.jsonl"):
    """A Claude Code session that auto-compacts ``segments - 1`` times, each time just past 155,000 tokens: every
    segment grows by tool results to 154,900 real tokens, then one more 4,000-char result makes Claude Code's count
    pass the threshold; the boundary's preTokens is that count."""
    recs = [_cc("u0", None, "user", {"role": "user", "content": "start"}, version=version)]
    prev, k = "u0", 0
    for seg in range(segments):
        sizes = [60_000 + 20_000 * i for i in range(5)] + [154_900] if seg == 0 else \
            [40_000 + 25_000 * i for i in range(5)] + [154_900]
        for t in sizes:
            ts = f"2026-01-01T{k // 60:02d}:{k % 60:02d}:00.000Z"
            recs.append(_cc(f"a{k}", prev, "assistant", _asst(f"m{k}", _tu(k), usage=_usage(t)), version=version,
                            ts=ts))
            recs.append(_cc(f"r{k}", f"a{k}", "user", {"role": "user", "content": [_res(k, "x" * 4000)]},
                            version=version, ts=ts))
            prev = f"r{k}"
            k += 1
        if seg == segments - 1:
            break
        pre = 154_900 + 1 + 4000 // 4
        recs.append(_cc(f"b{seg}", None, "system", version=version, subtype="compact_boundary",
                        logicalParentUuid=prev, compactMetadata={"trigger": "auto", "preTokens": pre}))
        recs.append(_cc(f"s{seg}", f"b{seg}", "user", {"role": "user", "content": SUMMARY}, version=version,
                        isCompactSummary=True))
        prev = f"s{seg}"
    return load(_write(tmp_path, recs, name)).main


def _run(conv, tmp_path, free=False, **params):
    inf = infer_params("claude_code", conv)
    return replay(conv, engine=Engine("claude_code", inf.apply(params), workspace=Workspace(tmp_path)), free=free)


# ----------------------------------------------------------------- 1. follow reality by default
def test_after_a_real_compaction_the_replay_goes_on_from_the_real_context(tmp_path):
    conv = _compacting(tmp_path)
    assert len(conv.events) == 2
    fol, free = _run(conv, tmp_path), _run(conv, tmp_path, free=True)
    assert fol.mode == "follow" and free.mode == "free"
    summaries = [conv.messages[e.summary_index] for e in conv.events]
    for ev, summary in zip(fol.real_events, summaries, strict=True):
        k = ev["call"]
        rec = fol.calls[k]
        # the call after the real compaction checks the replay's own context up to the boundary ...
        assert rec.reset is not None and rec.real_boundary is not None
        assert not any(m is summary for m in fol.inputs[k])
        # ... and the next call starts from the real context: the real summary first, the recorded messages after it
        nxt = fol.inputs[k + 1]
        assert nxt[0] is summary
        start = next(i for i, m in enumerate(conv.messages) if m is summary)
        assert all(a is b for a, b in zip(nxt, conv.messages[start:start + len(nxt)], strict=True))
        # each real compaction predicted from the real start: fired at the real call, the count = preTokens
        assert "auto_compact" in rec.fired and rec.tokens_before == ev["pre_tokens"]
    # the free-running what-if never sees a real summary
    assert not any(s is m for s in summaries for ctx in free.inputs for m in ctx)
    rows = divergence.report(fol, conv)["compactions"]
    assert [r["calls_apart"] for r in rows] == [0, 0] and all(r["token_error"] == 0 for r in rows)


def test_a_session_without_real_compactions_is_the_same_in_both_modes(tmp_path):
    conv = _grow(tmp_path, [40_000, 60_000, 80_000])
    a, b = _run(conv, tmp_path), _run(conv, tmp_path, free=True)
    assert a.mode == b.mode == "free" and not a.late
    assert [c.tokens_before for c in a.calls] == [c.tokens_before for c in b.calls]


def test_a_late_simulation_is_found_by_the_own_context_carried_past_the_real_one(tmp_path):
    """Following reality, a compaction the check at the real boundary misses is looked for in the replay's own
    context carried on (never shown as the replay's context): how late it would have fired."""
    conv = _compacting(tmp_path, segments=2)
    res = _run(conv, tmp_path, buffer=11_000)          # threshold 157,000: 1,099 tokens past the real count
    real = res.real_events[0]["call"]
    assert not res.calls[real].compacted and real in res.late
    late = res.late[real]
    assert late["call"] > real and late["calls_late"] == late["call"] - real
    row = divergence.report(res, conv)["compactions"][0]
    assert row["late"] and row["simulated_call"] == late["call"] and row["calls_apart"] == late["calls_late"]
    assert "carried past the real one" in divergence.warning(row) or not row["diverges"]


def test_cli_json_and_text_say_the_mode(tmp_path, capsys):
    from compactscope.app.cli import main
    conv_path = tmp_path / "multi.jsonl"
    _compacting(tmp_path)
    for extra, mode in (([], "follow"), (["--free"], "free")):
        assert main(["replay", str(conv_path), "--json", *extra]) == 0
        d = json.loads(capsys.readouterr().out)
        assert d["mode"] == mode and d["divergence"]["mode"] == mode
        rows = d["divergence"]["compactions"]
        assert len(rows) == 2 and all("calls_apart" in r and "token_error" in r for r in rows)
        assert any("reset_to_real" in c for c in d["calls"]) == (mode == "follow")
    assert main(["replay", str(conv_path)]) == 0
    out = capsys.readouterr().out
    assert "following reality" in out and "then the real context" in out
    assert main(["replay", str(conv_path), "--free"]) == 0
    assert "free-running" in capsys.readouterr().out


def test_the_report_says_the_mode_and_each_pair(tmp_path, capsys):
    from compactscope.app.cli import main
    _compacting(tmp_path)
    out = tmp_path / "r.md"
    for extra, words in (([], "following reality"), (["--free"], "free-running")):
        assert main(["report", str(tmp_path / "multi.jsonl"), "--replay", "-o", str(out), *extra]) == 0
        text = out.read_text()
        assert words in text and "against preTokens just before" in text
    capsys.readouterr()


# ----------------------------------------------------------------- 2. pair honestly
def _fake(real_calls, sim_calls, mode="free", late=None, n=300):
    calls = [SimpleNamespace(index=i, compacted=i in sim_calls, tokens_before=1000 + i) for i in range(n)]
    return SimpleNamespace(calls=calls, real_events=[{"call": c} for c in real_calls], mode=mode, late=late or {})


def test_no_simulated_compaction_is_paired_twice():
    """The issue's case: one simulated compaction (call 164) between two real ones (100, 221) and a third real one
    (230): it is paired once, with the nearest (221); the others have none in their segment."""
    res = _fake([100, 221, 230], {164})
    got = pairs(res)
    assert [p and p["call"] for p in got] == [None, 164, None]
    # several simulated ones: each real compaction the nearest still free, never one twice
    res = _fake([50, 60, 120, 200], {49, 51, 58, 118, 119, 150})
    got = [p and p["call"] for p in pairs(res)]
    assert got in ([49, 58, 119, 150], [51, 58, 119, 150])
    paired = [c for c in got if c is not None]
    assert len(paired) == len(set(paired))
    assert set(extra_compactions(res)) == {49, 51, 58, 118, 119, 150} - set(paired)


def test_following_reality_a_pair_stays_in_its_own_segment():
    # a simulated compaction after a real one belongs to the next segment (it ran on the real context)
    res = _fake([100, 200], {101, 199}, mode="follow")
    assert [p and p["call"] for p in pairs(res)] == [None, 199]
    res = _fake([100, 200], {150}, mode="follow", late={100: {"call": 102, "tokens_before": 9}})
    got = pairs(res)
    assert got[0]["call"] == 102 and got[0]["late"] and got[1]["call"] == 150


def test_several_real_compactions_get_one_simulated_each(tmp_path):
    conv = _compacting(tmp_path, segments=4)
    for free in (False, True):
        res = _run(conv, tmp_path, free=free)
        got = [p["call"] for p in pairs(res) if p is not None and not p["late"]]
        assert len(got) == len(set(got))
        rows = divergence.report(res, conv)["compactions"]
        assert len(rows) == 3
        sims = [r["simulated_call"] for r in rows if r["simulated_call"] is not None and not r["late"]]
        assert len(sims) == len(set(sims))
        bounds = res.boundary_report()
        assert [b.get("simulated_call") for b in bounds] == [r["simulated_call"] for r in rows]


def test_later_compactions_on_the_corpus_follow_reality(corpus, tmp_path):
    """b0 and b8 each compacted twice: following reality, the second is predicted at its call with the count
    Claude Code had (within 2 tokens of preTokens), where the free-running replay lands a call late."""
    for name in ("b0-2936744f3b-0-full.jsonl", "b8-659b3a4dd4-0-full.jsonl"):
        conv = load(CC / name).main
        res = _run(conv, tmp_path)
        rows = divergence.report(res, conv)["compactions"]
        assert len(rows) == 2
        for r in rows:
            assert r["calls_apart"] == 0 and abs(r["token_error"]) <= 200, r
        assert abs(rows[1]["token_error"]) <= 2


# ----------------------------------------------------------------- 3. infer from evidence only
def test_a_drop_after_a_short_idle_gap_is_not_time_based_microcompact(tmp_path):
    conv = _grow(tmp_path, [40_000, 50_000, 60_000, 30_000, 35_000], minutes=20, name="short.jsonl")
    inf = infer_params("claude_code", conv)
    assert inf.params["idle_gap_minutes"] == 0
    assert "after only 20 idle minutes" in inf.reasons["idle_gap_minutes"]
    assert inf.evidence["idle_gap_minutes"] == {"call": 3, "gap_minutes": 20.0, "drop": 30_000}
    assert any("not modelled" in n for n in inf.notes)
    # after a gap as long as the rule's, it is
    conv = _grow(tmp_path, [40_000, 50_000, 60_000, 30_000, 35_000], minutes=61, name="long.jsonl")
    inf = infer_params("claude_code", conv)
    assert inf.params["idle_gap_minutes"] == 60
    assert inf.evidence["idle_gap_minutes"] == {"call": 3, "gap_minutes": 61.0, "drop": 30_000}
    line = next(x for x in inf.lines() if x.startswith("idle_gap_minutes"))
    assert "[evidence: call 3, 61 idle min, -30,000 tokens]" in line
    assert inf.to_json()["evidence"]["idle_gap_minutes"]["gap_minutes"] == 61.0


def test_a_record_with_zero_usage_is_not_a_context(tmp_path):
    """A <synthetic> assistant record with all-zero usage between two real responses: no drop to 0 inferred, no
    real context of 0 tokens in the replay."""
    recs = [_cc("u0", None, "user", {"role": "user", "content": "start"})]
    prev = "u0"
    for k, t in enumerate([40_000, 50_000, 0, 60_000]):
        ts = f"2026-01-01T00:{k * 13:02d}:00.000Z"
        if t == 0:
            m = _asst(f"m{k}", {"type": "text", "text": "No response requested."}, usage=_usage(0, 0))
            m["model"] = "<synthetic>"
            m["usage"] = {"input_tokens": 0, "output_tokens": 0, "cache_creation_input_tokens": 0,
                          "cache_read_input_tokens": 0}
            recs.append(_cc(f"a{k}", prev, "assistant", m, ts=ts))
            recs.append(_cc(f"u{k}", f"a{k}", "user", {"role": "user", "content": "go on"}, ts=ts))
            prev = f"u{k}"
            continue
        recs.append(_cc(f"a{k}", prev, "assistant", _asst(f"m{k}", _tu(k), usage=_usage(t)), ts=ts))
        recs.append(_cc(f"r{k}", f"a{k}", "user", {"role": "user", "content": [_res(k, "x" * 400)]}, ts=ts))
        prev = f"r{k}"
    conv = load(_write(tmp_path, recs, "synthetic.jsonl")).main
    inf = infer_params("claude_code", conv)
    assert inf.facts["context_drops"] == [] and inf.params["idle_gap_minutes"] == 0
    res = _run(conv, tmp_path)
    assert [c.real_tokens for c in res.calls][:4] == [40_000, 50_000, None, 60_000]


def _big_result_session(tmp_path, kept: bool):
    """A 260,000-char tool result at call 2: the real context grew by about its size at call 3 (kept), or not
    (Claude Code persisted it: the file then holds only what the model saw)."""
    recs = [_cc("u0", None, "user", {"role": "user", "content": "start"})]
    prev = "u0"
    sizes = [20_000, 21_000, 22_000, 22_000 + (70_000 if kept else 500), 23_000 + (70_000 if kept else 500)]
    for k, t in enumerate(sizes):
        recs.append(_cc(f"a{k}", prev, "assistant", _asst(f"m{k}", _tu(k), usage=_usage(t))))
        text = "y" * 260_000 if (k == 2 and kept) else "x" * 400
        recs.append(_cc(f"r{k}", f"a{k}", "user", {"role": "user", "content": [_res(k, text)]}))
        prev = f"r{k}"
    return load(_write(tmp_path, recs, f"big-{kept}.jsonl")).main


def test_a_budget_the_real_session_contradicts_is_flagged_and_not_trusted(tmp_path):
    conv = _big_result_session(tmp_path, kept=True)
    inf = infer_params("claude_code", conv)
    assert inf.params["budget_chars"] >= 260_000
    assert inf.evidence["budget_chars"]["call"] == 3 and inf.evidence["budget_chars"]["growth"] == 70_000
    assert "the session kept them" in inf.reasons["budget_chars"]
    res = _run(conv, tmp_path)
    assert not any("tool_result_budget" in c.fired for c in res.calls)
    assert divergence.report(res, conv)["untrusted"] == []
    # with the documented default the budget persists the result the session kept: flagged, with the setting
    res = replay(conv, engine=Engine("claude_code", {"idle_gap_minutes": 0}, workspace=Workspace(tmp_path)))
    flagged = divergence.report(res, conv)["untrusted"]
    assert [(u["call"], u["layer"]) for u in flagged] == [(3, "tool_result_budget")]
    assert flagged[0]["drop"] > 50_000 and "budget_chars" in flagged[0]["setting"]
    assert divergence.report(res, conv)["diverged"]
    # a session without such a result infers nothing about the budget
    assert "budget_chars" not in infer_params("claude_code", _big_result_session(tmp_path, kept=False)).params


def test_time_micro_the_session_never_ran_is_flagged(corpus):
    import subprocess
    import sys
    r = subprocess.run([sys.executable, "-m", "compactscope", "replay", str(CC / "fc-99c919b212-0-full.jsonl"),
                        "--strategy", "claude_code", "--set", "idle_gap_minutes=60", "--json"],
                       capture_output=True, text=True, timeout=300)
    d = json.loads(r.stdout)
    flagged = d["divergence"]["untrusted"]
    assert flagged and flagged[0]["layer"] == "time_micro_compact" and flagged[0]["setting"] == "idle_gap_minutes=0"
    assert d["inferred"]["evidence"]["cap_reserve"] == {"version": "2.1.29"}


# ----------------------------------------------------------------- 4. what 2.1.21+ counts after the last usage
def _thinking_session(tmp_path, version):
    """The last answer thinks 8,000 chars and calls a tool; the file records the stream's placeholder output (1)."""
    recs = [_cc("u0", None, "user", {"role": "user", "content": "start"}, version=version),
            _cc("a0", "u0", "assistant", _asst("m0", _tu(0), usage=_usage(100_000)), version=version),
            _cc("r0", "a0", "user", {"role": "user", "content": [_res(0, "x" * 400)]}, version=version),
            _cc("a1", "r0", "assistant", _asst("m1", {"type": "thinking", "thinking": "t" * 8000, "signature": "s"},
                                                _tu(1), usage=_usage(100_200, 1)), version=version),
            _cc("r1", "a1", "user", {"role": "user", "content": [_res(1, "z" * 800)]}, version=version)]
    return load(_write(tmp_path, recs, f"think-{version}.jsonl")).main


def test_claude_code_2_1_21_counts_the_answers_whole_output(tmp_path):
    from compactscope.core.layers.claude_code import SessionTokens
    from compactscope.core.pipeline.size import SizeMeter
    counts = {}
    for version in ("2.1.14", "2.1.30"):
        conv = _thinking_session(tmp_path, version)
        st, meter = SessionTokens(), SizeMeter()
        st.bind(conv, meter)
        counts[version] = st.tokens(conv.messages, meter)
        assert st.anchored
    # up to 2.1.14 the placeholder (what those versions counted: preTokens reproduced to 0-2 tokens on the corpus)
    assert counts["2.1.14"] == 100_200 + 1 + 800 // 4
    # from 2.1.21 the answer's whole output: at least its own rough count (thinking, tool call) stands in
    assert counts["2.1.30"] - counts["2.1.14"] >= 8000 // 4 - 1


def test_a_call_the_file_holds_no_result_for_counts_its_tools_median_result(tmp_path):
    from compactscope.core.layers.claude_code import SessionTokens
    from compactscope.core.pipeline.size import SizeMeter
    conv = _grow(tmp_path, [40_000, 50_000, 60_000])
    st, meter = SessionTokens(), SizeMeter()
    st.bind(conv, meter)
    last = len(conv.messages) - 1          # the list ends with the last tool call: its result is not in it
    assert st.tokens(conv.messages[:last], meter) - st.tokens(conv.messages[:last - 1], meter) \
        >= st.result_tokens["Bash"] > 0


@pytest.mark.parametrize("name", ["fc-99c919b212-0-full.jsonl"])
def test_fc_counts_closer_to_pre_tokens(corpus, name):
    from compactscope.core.layers.claude_code import SessionTokens
    from compactscope.core.pipeline.size import SizeMeter
    conv = load(CC / name).main
    st, meter = SessionTokens(), SizeMeter()
    st.bind(conv, meter)
    e = conv.events[0]
    before = conv.messages[:e.message_index]
    # the placeholder count was 625 under preTokens; the whole output and the missing result's stand-in close some
    assert -625 < st.tokens(before, meter) - e.pre_tokens < 0


# ----------------------------------------------------------------- the window's timeline
def test_the_timeline_says_which_replay_it_shows_and_toggles_it(qtbot, make_window, tmp_path):
    _compacting(tmp_path)
    w = make_window()
    w.session.setup.set_strategy("claude_code")
    assert w.open_path(str(tmp_path / "multi.jsonl"), remember=False)
    assert w.wait_idle(60000)
    with qtbot.waitSignal(w.sigReplayReady, timeout=60000):
        w.tabs.setCurrentIndex(2)
    tl = w.timeline_panel.timeline
    assert w.session.replay.replay_result.mode == "follow"
    assert tl.free_box.isEnabled() and not tl.free_box.isChecked()
    text = tl.pairs_label.text()
    assert tl.pairs_label.isVisibleTo(tl) and text.startswith("following reality")
    assert "real compaction before call" in text and "(+0 calls)" in text and "just before" in text
    # the box replays free-running, and says so
    with qtbot.waitSignal(w.sigReplayReady, timeout=60000):
        tl.free_box.setChecked(True)
    assert w.session.replay.replay_free and w.session.replay.replay_result.mode == "free"
    assert tl.free_box.isChecked() and tl.pairs_label.text().startswith("free-running")
    # the status bar states what the inference rests on
    assert "(version 2.1.14)" in w.session.setup.inferred_text()
