"""Issue 11: real Claude Code sessions shown and replayed as they really ran (loader, checker, contexts,
inference, images)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from compactscope.core.analysis.checker import RESULT_BEFORE_FILE, check, check_conversation, rejected
from compactscope.core.loaders import load

from conftest import CORPUS
from test_loaders_formats import _asst
from test_loaders_formats import _cc as _cc_record

CC = CORPUS / "entireio-cli"


def _cc(uuid, parent, type_, message=None, version="2.1.14", ts="2026-01-01T00:00:00.000Z", **kw):
    """A Claude Code record (test_loaders_formats' helper) with this test's session id, version and time."""
    return _cc_record(uuid, parent, type_, message, **{"sessionId": "s1", "version": version, "timestamp": ts, **kw})


def _tu(i, name="Bash"):
    return {"type": "tool_use", "id": f"t{i}", "name": name, "input": {"command": f"echo {i}"}}


def _res(i, text="ok"):
    return {"type": "tool_result", "tool_use_id": f"t{i}", "content": text}


def _write(tmp_path, recs, name="s.jsonl"):
    p = tmp_path / name
    p.write_text("\n".join(json.dumps(r) for r in recs) + "\n")
    return p


# ----------------------------------------------------------------- loader: typed text with tool results

def test_typed_text_on_a_sibling_tool_result_is_kept(tmp_path):
    """Parallel calls: the user typed while the tools ran; Claude Code wrote the text with the FIRST
    result, whose line is a sibling of the chain (the next call hangs off the second result)."""
    recs = [
        _cc("u1", None, "user", {"role": "user", "content": "go"}),
        _cc("a1", "u1", "assistant", _asst("m1", _tu(1))),
        _cc("a2", "a1", "assistant", _asst("m1", _tu(2))),
        _cc("r1", "a2", "user", {"role": "user", "content": [
            _res(1), {"type": "text", "text": "and make sure this is tested"}]}),
        _cc("r2", "a2", "user", {"role": "user", "content": [_res(2)]}),
        _cc("a3", "r2", "assistant", _asst("m2", {"type": "text", "text": "done"})),
    ]
    conv = load(_write(tmp_path, recs)).main
    assert [m["role"] for m in conv.messages] == ["user", "assistant", "user", "assistant"]
    blocks = conv.messages[2]["content"]
    # as the API received them: the results first, then what the user typed
    assert [b["type"] for b in blocks] == ["tool_result", "tool_result", "text"]
    assert blocks[2]["text"] == "and make sure this is tested"
    assert check(conv.messages) == []
    assert conv.extra["abandoned_records"] == 0


def test_a_rewound_branch_is_still_left_out(tmp_path):
    recs = [
        _cc("u1", None, "user", {"role": "user", "content": "go"}),
        _cc("a1", "u1", "assistant", _asst("m1", _tu(1))),
        _cc("r1", "a1", "user", {"role": "user", "content": [_res(1), {"type": "text", "text": "old words"}]}),
        _cc("a2", "r1", "assistant", _asst("m2", {"type": "text", "text": "first try"})),
        # rewound: the same result answered again on a new branch
        _cc("r1b", "a1", "user", {"role": "user", "content": [_res(1), {"type": "text", "text": "new words"}]}),
        _cc("a3", "r1b", "assistant", _asst("m3", {"type": "text", "text": "second try"})),
    ]
    conv = load(_write(tmp_path, recs)).main
    texts = json.dumps(conv.messages)
    assert "new words" in texts and "old words" not in texts and "first try" not in texts
    assert conv.extra["abandoned_records"] == 2


def test_fc_keeps_both_records_with_results_and_typed_text(corpus):
    conv = load(CC / "fc-99c919b212-0-full.jsonl").main
    typed = [m for m in conv.messages if m["role"] == "user" and isinstance(m["content"], list)
             and any(b.get("type") == "tool_result" for b in m["content"])
             and any(b.get("type") == "text" for b in m["content"])]
    text = json.dumps(typed)
    assert "let's not leave _all_ the tests to the very end" in text
    assert "consolidate the agent-specific hook types" in text


# ----------------------------------------------------------------- checker: a result before the file

def test_a_result_whose_call_is_before_the_file_is_its_own_kind(tmp_path):
    recs = [
        _cc("r0", "outside-uuid", "user", {"role": "user", "content": [_res(0)]}),
        _cc("a1", "r0", "assistant", _asst("m1", {"type": "text", "text": "ok"})),
    ]
    conv = load(_write(tmp_path, recs)).main
    assert conv.extra["starts_mid_session"] and conv.extra["results_before_file"] == ["t0"]
    findings = check_conversation(conv)
    assert [f.code for f in findings] == [RESULT_BEFORE_FILE]
    assert "before this file's first line" in findings[0].text and not rejected(findings)
    # without the conversation's knowledge the same list is an ordinary rejection
    assert [f.code for f in check(conv.messages)] == ["orphan_tool_result"]


def test_e1_starts_mid_session_and_is_not_rejected(corpus):
    conv = load(CC / "e1-2c3e2b3f2a-0-full.jsonl").main
    findings = check_conversation(conv)
    assert [f.code for f in findings] == [RESULT_BEFORE_FILE]
    assert findings[0].message == 0 and not rejected(findings)


# ----------------------------------------------------------------- defaults read from the session

from compactscope.core.strategies import Inferred, infer_params  # noqa: E402


def _usage(ctx, out=1):
    return {"input_tokens": 10, "cache_creation_input_tokens": 0, "cache_read_input_tokens": ctx - 10,
            "output_tokens": out}


def _grow(tmp_path, sizes, version="2.1.14", minutes=1, name="g.jsonl"):
    """A session whose real context is ``sizes[k]`` at call k (one Bash call per call)."""
    recs = [_cc("u0", None, "user", {"role": "user", "content": "start"}, version=version)]
    prev = "u0"
    for k, t in enumerate(sizes):
        ts = f"2026-01-01T{(k * minutes) // 60:02d}:{(k * minutes) % 60:02d}:00.000Z"
        recs.append(_cc(f"a{k}", prev, "assistant", _asst(f"m{k}", _tu(k), usage=_usage(t)), version=version, ts=ts))
        recs.append(_cc(f"r{k}", f"a{k}", "user", {"role": "user", "content": [_res(k, "x" * 400)]},
                        version=version, ts=ts))
        prev = f"r{k}"
    return load(_write(tmp_path, recs, name)).main


def test_strategies_without_inference_answer_an_empty_one(corpus):
    conv = load(CC / "b8-659b3a4dd4-0-full.jsonl").main
    for name in ("s08", "hermes"):
        inf = infer_params(name, conv)
        assert isinstance(inf, Inferred) and inf.params == {} and inf.reasons == {} and not inf
    assert infer_params("claude_code", None).params == {}


@pytest.mark.parametrize("name,cap,threshold", [("b8-659b3a4dd4-0-full.jsonl", False, 155_000),
                                                ("a6-e4c2a0fbd1-0-full.jsonl", False, 155_000),
                                                ("fc-99c919b212-0-full.jsonl", True, 167_000)])
def test_the_version_picks_the_threshold_rule(corpus, name, cap, threshold):
    from compactscope.core import strategies
    from compactscope.core.layers.claude_code import threshold as cc_threshold
    conv = load(CC / name).main
    inf = infer_params("claude_code", conv)
    assert inf.params["cap_reserve"] is cap
    assert conv.extra["versions"][0] in inf.reasons["cap_reserve"]
    assert f"{threshold:,}" in inf.reasons["cap_reserve"]
    assert cc_threshold(strategies.get("claude_code").resolve(inf.apply())) == threshold
    # --set wins
    assert inf.apply({"cap_reserve": not cap})["cap_reserve"] is (not cap)
    # no drop of the real context without a boundary in these sessions: time-based microcompact stays off
    assert inf.params["idle_gap_minutes"] == 0 and "did not run" in inf.reasons["idle_gap_minutes"]


def test_a_drop_of_the_real_context_turns_time_micro_on(tmp_path):
    conv = _grow(tmp_path, [40_000, 50_000, 60_000, 30_000, 35_000], minutes=70)
    inf = infer_params("claude_code", conv)
    assert inf.params["idle_gap_minutes"] == 60
    assert "dropped by 30,000 tokens at call 3" in inf.reasons["idle_gap_minutes"]
    # a session that only grows keeps it off
    flat = _grow(tmp_path, [40_000, 50_000, 60_000], minutes=70, name="flat.jsonl")
    assert infer_params("claude_code", flat).params["idle_gap_minutes"] == 0


def test_window_and_autocompact_read_from_the_real_context(tmp_path):
    big = _grow(tmp_path, [150_000, 190_000, 230_000], version="2.1.40", name="big.jsonl")
    inf = infer_params("claude_code", big)
    assert inf.params["window"] == 1_000_000 and "230,000" in inf.reasons["window"]
    assert "autocompact" not in inf.params
    off = _grow(tmp_path, [150_000, 170_000, 190_000], version="2.1.14", name="off.jsonl")
    inf = infer_params("claude_code", off)
    assert inf.params["autocompact"] is False and "never auto-compacted" in inf.reasons["autocompact"]
    below = _grow(tmp_path, [100_000, 120_000, 140_000], version="2.1.14", name="below.jsonl")
    assert "autocompact" not in infer_params("claude_code", below).params


def test_version_parsing_and_rules():
    from compactscope.core.strategies.claude_code_versions import parse_version, rule_for
    assert parse_version("2.1.7") < parse_version("2.1.12") < parse_version("2.1.21")
    assert parse_version("nope") is None
    assert dict(rule_for(parse_version("2.1.20")).params)["cap_reserve"] is False
    assert dict(rule_for(parse_version("2.1.21")).params)["cap_reserve"] is True
    assert dict(rule_for(None).params)["cap_reserve"] is True     # unknown: the newest rule


# ----------------------------------------------------------------- accuracy with default settings

AUTO_SESSIONS = ["a6-e4c2a0fbd1-0-full.jsonl", "ca-fca7ea73ac-0-full.jsonl", "e1-2c3e2b3f2a-0-full.jsonl",
                 "b8-659b3a4dd4-0-full.jsonl", "b0-2936744f3b-0-full.jsonl", "fc-99c919b212-0-full.jsonl"]


@pytest.mark.parametrize("name", AUTO_SESSIONS)
def test_first_simulated_auto_compaction_within_one_call_with_defaults(corpus, tmp_path, name):
    from compactscope.core.pipeline.engine import Engine
    from compactscope.core.replay import replay
    from compactscope.core.files.workspace import Workspace
    conv = load(CC / name).main
    inf = infer_params("claude_code", conv)
    for free in (False, True):
        res = replay(conv, engine=Engine("claude_code", inf.apply(), workspace=Workspace(tmp_path)), keep_inputs=False,
                     free=free)
        real = next(e for e in res.real_events if e["trigger"] == "auto")
        if free:
            sim = next(c.index for c in res.calls if "auto_compact" in c.fired)
        else:       # following reality a late one is found by the replay's own context carried past the real one
            sim = next(c.index for c in res.calls if "auto_compact" in c.fired and c.index <= real["call"]) \
                if real["call"] not in res.late else res.late[real["call"]]["call"]
        assert abs(sim - real["call"]) <= 1, (free, sim, real)


@pytest.mark.parametrize("name", ["10-a740e118e0-0-full.jsonl", "37-995ebed6e4-2-full.jsonl"])
def test_no_simulated_auto_compaction_where_none_happened(corpus, tmp_path, name):
    from compactscope.core.pipeline.engine import Engine
    from compactscope.core.replay import replay
    from compactscope.core.files.workspace import Workspace
    conv = load(CC / name).main
    res = replay(conv, engine=Engine("claude_code", infer_params("claude_code", conv).apply(),
                                     workspace=Workspace(tmp_path)), keep_inputs=False)
    assert not any("auto_compact" in c.fired for c in res.calls)


def test_the_estimate_is_claude_codes_own_count_at_the_boundary(corpus):
    """tokenCountWithEstimation: the last response's usage + chars/4 of what came after it reproduces the
    preTokens Claude Code wrote in the boundary record."""
    from compactscope.core.layers.claude_code import SessionTokens
    conv = load(CC / "b8-659b3a4dd4-0-full.jsonl").main
    tok = SessionTokens()
    tok.bind(conv)
    ev = conv.events[0]
    before = conv.messages[:ev.message_index]     # segment 0 up to the boundary
    assert abs(tok.tokens(before) - ev.pre_tokens) <= 2 and tok.anchored
    # a list with a changed message is no longer the recorded context: the rough count scaled by what this session measured,
    # plus the system prompt and tools, plus (b8 is an excerpt) the history from before the file
    changed = before[:1] + [dict(before[1])] + before[2:]     # (layers share unchanged messages, as here)
    estimate = tok.tokens(changed)
    assert not tok.anchored and tok.hidden > 0 and 1.0 < tok.scale < 2.0
    assert abs(estimate - ev.pre_tokens) < 0.1 * ev.pre_tokens
    # a change after a response keeps that response's usage and counts the rest roughly
    late = before[:40] + [dict(before[40])] + before[41:]
    assert abs(tok.tokens(late) - ev.pre_tokens) < 0.05 * ev.pre_tokens and tok.anchored


# ----------------------------------------------------------------- a real API context is the unit

import subprocess  # noqa: E402
import sys  # noqa: E402

from compactscope.core.model import contexts  # noqa: E402


def _cli(*args):
    p = subprocess.run([sys.executable, "-m", "compactscope", *map(str, args)], capture_output=True, text=True,
                       timeout=120)
    return p.returncode, p.stdout, p.stderr


def test_segments_and_calls_of_a_session_with_two_compactions(corpus):
    conv = load(CC / "b8-659b3a4dd4-0-full.jsonl").main
    segs = contexts.segments(conv)
    assert [s.start for s in segs] == conv.segments and len(segs) == 3
    assert segs[0].event is None and segs[1].event.pre_tokens == 155_277 and segs[2].event.trigger == "auto"
    assert sum(s.calls for s in segs) == len(contexts.call_indices(conv))
    last = contexts.real_context(conv)                  # default: the last segment
    assert last.messages == conv.messages[conv.segments[-1]:] and last.messages[0] is conv.messages[conv.segments[-1]]
    assert last.events[0].message_index == 0 and last.extra["context"]["segment"] == 2
    assert last.context_of is conv and last.segments == [0]
    # exactly what was sent at call N: its segment's messages before the call's answer
    calls = contexts.call_indices(conv)
    n = segs[1].first_call + 3
    ctx = contexts.call_context(conv, n)
    assert ctx.messages == conv.messages[segs[1].start:calls[n]]
    assert ctx.extra["context"]["call"] == n
    with pytest.raises(contexts.ContextError, match="169 model call"):
        contexts.call_context(conv, 500)
    with pytest.raises(contexts.ContextError, match="3 segment"):
        contexts.segment_context(conv, 3)
    # a conversation never compacted is its own context
    plain = load(CC / "10-a740e118e0-0-full.jsonl").main
    assert contexts.real_context(plain) is plain


def test_the_estimate_at_a_call_is_what_claude_code_counted(corpus):
    from compactscope.core.layers.claude_code import SessionTokens
    conv = load(CC / "b8-659b3a4dd4-0-full.jsonl").main
    segs = contexts.segments(conv)
    tok = SessionTokens()
    first_after = contexts.call_context(conv, segs[1].first_call)
    tok.bind(first_after)
    # no answer before it in its segment: the call's own usage (an exact count of all it sent, which Claude Code
    # did not have) less what Claude Code's count misses from one call to the next, as this session shows it
    real = conv.meta[contexts.call_indices(conv)[segs[1].first_call]].usage.context_tokens
    misses = []
    at = contexts.call_indices(conv)
    for s in segs:
        inside = [i for i in at if s.start <= i < s.end and conv.meta[i].usage is not None]
        for i0, i1 in zip(inside, inside[1:]):
            u0, u1 = conv.meta[i0].usage, conv.meta[i1].usage
            misses.append(u1.context_tokens - (u0.context_tokens + u0.output_tokens + tok.rough(conv.messages[i0 + 1:i1])))
    misses.sort()
    assert tok.undercount == misses[len(misses) // 2] > 0
    assert tok.tokens(first_after.messages) == real - tok.undercount and tok.anchored


def test_an_excerpts_first_call_is_not_counted_with_its_own_exact_usage(corpus):
    """qa #30: at the first call of an excerpt the agent counted from a response before the file; the call's own
    usage is an exact count it never had, so the replay's estimate there is below it."""
    from compactscope.core.replay import replay
    conv = load(CC / "e1-2c3e2b3f2a-0-full.jsonl").main
    rr = replay(conv, "claude_code")
    own = conv.meta[contexts.call_indices(conv)[0]].usage.context_tokens
    assert rr.calls[0].real_tokens == own
    assert rr.calls[0].tokens_before < own


def test_run_b8_starts_from_a_real_context(corpus):
    rc, out, err = _cli("run", CC / "b8-659b3a4dd4-0-full.jsonl", "--strategy", "claude_code", "--json",
                        "--no-messages")
    assert rc == 0, err
    d = json.loads(out)
    assert d["input"]["context"]["segment"] == 2 and d["input"]["messages"] == 120
    first = d["steps"][0]
    assert first["tokens_before"] <= 160_000
    assert d["inferred"]["params"]["cap_reserve"] is False
    # the whole history is no longer summarised as one list
    assert not any(s["layer"] == "auto_compact" and s["changed"] for s in d["steps"])


@pytest.mark.parametrize("path", sorted(CC.glob("*.jsonl")) if CC.is_dir() else [], ids=lambda p: p.name[:14])
def test_run_and_check_agree_on_every_context(corpus, path):
    from compactscope.core.pipeline.engine import Engine
    try:
        conv = load(path).main
    except Exception:
        pytest.skip("not loadable")
    verdicts = []
    for seg in contexts.segments(conv):
        ctx = contexts.segment_context(conv, seg.index)
        trace = Engine("claude_code", {}).run(ctx.messages, conversation=ctx, layers=[])
        verdicts.append(rejected(check_conversation(ctx)))
        assert rejected(trace.input_findings) == verdicts[-1]
        assert [f.code for f in trace.input_findings] == [f.code for f in check_conversation(ctx)]
    # the file's verdict is the verdict of its contexts
    assert rejected(check_conversation(conv)) == any(verdicts)
    rc, _, _ = _cli("check", path, "--segment", -1)
    assert rc == (1 if verdicts[-1] else 0)


# ----------------------------------------------------------------- simulation vs reality

def _replay_json(path, *extra):
    rc, out, err = _cli("replay", path, "--strategy", "claude_code", "--json", *extra)
    assert rc == 0, err
    return json.loads(out)


def test_replay_json_says_where_simulation_and_reality_meet(corpus):
    d = _replay_json(CC / "b8-659b3a4dd4-0-full.jsonl")
    assert d["version"] == "2.1.14" and d["divergence"]["version"] == "2.1.14"
    rows = d["divergence"]["compactions"]
    assert [r["real_call"] for r in rows] == [26, 109]
    assert rows[0]["first_simulated_call"] == 26 and rows[0]["calls_apart"] == 0
    assert rows[0]["token_error"] == rows[0]["estimate_before"] - 155_277
    assert not d["divergence"]["diverged"]
    assert d["inferred"]["params"]["cap_reserve"] is False


def test_the_token_error_is_measured_before_the_replay_compacted():
    """qa #4: a simulation that fires a call or two early is no divergence; the token error is the estimate just
    before the first simulated compaction against preTokens, not the estimate after it."""
    d = _replay_json(Path(__file__).resolve().parent.parent / "assets" / "examples" / "cc_real_compaction.jsonl")
    row = d["divergence"]["compactions"][0]
    assert row["first_simulated_call"] < row["real_call"] and abs(row["calls_apart"]) <= 2
    assert row["estimate_call"] == row["first_simulated_call"]
    assert abs(row["token_error_share"]) < 0.05 and not row["diverges"] and not d["divergence"]["diverged"]
    rc, out, _ = _cli("replay", Path(__file__).resolve().parent.parent / "assets" / "examples" /
                      "cc_real_compaction.jsonl", "--strategy", "claude_code")
    assert rc == 0 and "diverge" not in out and "preTokens 157,570" in out


def test_a_divergence_is_flagged_with_the_setting_that_explains_it(corpus):
    d = _replay_json(CC / "b8-659b3a4dd4-0-full.jsonl", "--no-infer")
    rows = d["divergence"]["compactions"]
    assert d["divergence"]["diverged"] and rows[0]["calls_apart"] > 2
    assert "cap_reserve=false" in rows[0]["explanation"] and "155,000" in rows[0]["explanation"]
    # each real compaction is matched with its own simulated one, in order
    assert rows[1]["first_simulated_call"] > rows[0]["first_simulated_call"]
    # time-based microcompact that the session never ran: the explanation names it
    d = _replay_json(CC / "fc-99c919b212-0-full.jsonl", "--set", "idle_gap_minutes=60")
    row = d["divergence"]["compactions"][0]
    assert row["diverges"] and "idle_gap_minutes=0" in row["explanation"]
    rc, out, _ = _cli("replay", CC / "fc-99c919b212-0-full.jsonl", "--strategy", "claude_code", "--set",
                      "idle_gap_minutes=60")
    assert "! simulation and reality diverge at the real compaction before call 112" in out
    rc, out, _ = _cli("replay", CC / "fc-99c919b212-0-full.jsonl", "--strategy", "claude_code")
    assert "diverge" not in out and "inferred from the session" in out


# ----------------------------------------------------------------- images count as image tokens

import base64 as _b64  # noqa: E402
import struct as _struct  # noqa: E402
import zlib as _zlib  # noqa: E402


def _png(w, h, pad=0):
    ihdr = _struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)
    chunk = _struct.pack(">I", len(ihdr)) + b"IHDR" + ihdr + _struct.pack(">I", _zlib.crc32(b"IHDR" + ihdr))
    return b"\x89PNG\r\n\x1a\n" + chunk + b"\0" * pad


def _jpeg(w, h):
    app0 = b"\xff\xe0" + _struct.pack(">H", 16) + b"JFIF\0" + b"\0" * 9
    sof = b"\xff\xc0" + _struct.pack(">HBHHB", 11, 8, h, w, 1) + b"\x01\x11\x00"
    return b"\xff\xd8" + app0 + sof + b"\0" * 100


def _img(raw, media="image/png"):
    return {"type": "image", "source": {"type": "base64", "media_type": media,
                                        "data": _b64.b64encode(raw).decode()}}


def test_image_tokens_follow_anthropics_rule():
    from compactscope.core.model import images
    small = images.info(_img(_png(200, 150)))
    assert (small.width, small.height) == (200, 150) and small.tokens == 40       # 200*150/750
    big = images.info(_img(_png(4000, 3000)))                                      # scaled: ~1,600 at most
    assert big.tokens <= images.MAX_TOKENS and big.tokens > 1500
    jpg = images.info(_img(_jpeg(1000, 500), "image/jpeg"))
    assert (jpg.width, jpg.height, jpg.tokens) == (1000, 500, 667)
    url = images.info({"type": "image", "source": {"type": "url", "url": "https://example.invalid/x.png"}})
    assert url.tokens == images.FALLBACK_TOKENS and "URL" in url.rule
    broken = images.info({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "!!!"}})
    assert broken.tokens == images.FALLBACK_TOKENS and "not readable" in broken.rule
    assert "200x150" in small.describe() and "image/png" in small.describe()


def test_an_image_counts_as_its_tokens_in_sizes(corpus):
    from compactscope.core.model.images import images_in, info
    from compactscope.core.pipeline.size import SizeMeter
    raw = _png(800, 600, pad=300_000)
    m = {"role": "user", "content": [_img(raw), {"type": "text", "text": "look"}]}
    text_only = {"role": "user", "content": [{"type": "text", "text": "look"}]}
    meter = SizeMeter()
    assert meter.message_size(m) < 10_000 < len(repr(m))
    assert meter.message_size(m) - meter.message_size(text_only) < 4 * 640 + 200       # 800*600/750 = 640
    # the corpus session's screenshot: 1421x1999, ~1,600 tokens, not 415,000 chars
    conv = load(CC / "fc-99c919b212-0-full.jsonl").main
    msg = next(x for x in conv.messages if images_in(x))
    img = info(images_in(msg)[0])
    assert (img.width, img.height) == (1421, 1999) and 1500 < img.tokens <= 1600
    assert meter.message_size(msg) < 20_000 < len(repr(msg))


def test_the_seeds_still_decide_on_len_str_with_an_image(tmp_path):
    """s08 compacts on len(str(messages)) (its own code): an image's base64 still counts there, while the
    sizes shown count it as its tokens."""
    from compactscope.core.pipeline.engine import Engine
    from compactscope.core.files.workspace import Workspace
    msgs = [{"role": "user", "content": [_img(_png(100, 100, pad=90_000)), {"type": "text", "text": "what is it?"}]},
            {"role": "assistant", "content": "a square"}, {"role": "user", "content": "thanks"}]
    eng = Engine("s08", {"context_limit": 50_000}, workspace=Workspace(tmp_path))
    tr = eng.run(msgs)
    assert eng.meter.raw_total(msgs) == len(str(msgs)) > 100_000
    assert eng.meter.size(msgs) < 5_000
    step = tr.step("compact_history")
    assert step.changed and step.vars["size"] == len(str(msgs))


# ----------------------------------------------------------------- mixed roles as sent

def _cc_request_recording(tmp_path):
    """A proxy recording of a newer Claude Code client: a system-role message (its agent list) inside an
    Anthropic messages list, next to the request's own system prompt and tools."""
    agents = "Available agent types:\n" + "\n".join(f"- agent-{k}: does thing {k} " + "x" * 80 for k in range(60))
    system = [{"type": "text", "text": "You are Claude Code."}]
    tools = [{"name": "Bash", "description": "run", "input_schema": {"type": "object"}}]
    msgs = [{"role": "system", "content": agents},
            {"role": "user", "content": [{"type": "text", "text": "list the files"}]}]
    call = {"type": "call", "seq": 1, "kind": "model", "source": "proxy", "t_start": "2026-07-01T10:00:00.000Z",
            "t_end": "2026-07-01T10:00:02.000Z",
            "request": {"model": "claude-opus-4-8", "max_tokens": 32000, "system": system, "tools": tools,
                        "messages": msgs, "metadata": {"user_id": "user_abc_account_1_session_s1"}},
            "response": {"id": "msg_1", "model": "claude-opus-4-8", "role": "assistant",
                         "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}],
                         "stop_reason": "tool_use"},
            "usage": {"input_tokens": 3000, "output_tokens": 20}, "error": None, "trace": None}
    head = {"type": "header", "format": "compactscope.recording", "version": 1,
            "created": "2026-07-01T10:00:00.000Z", "source": "proxy"}
    p = tmp_path / "proxy.jsonl"
    p.write_text(json.dumps(head) + "\n" + json.dumps(call) + "\n")
    return p, agents


def test_a_system_role_message_in_an_anthropic_request_stays_where_it_was_sent(tmp_path):
    from compactscope.core.model.messages import ANTHROPIC, OPENAI, detect_dialect
    from compactscope.core.pipeline.engine import Engine
    from compactscope.core.files.workspace import Workspace
    path, agents = _cc_request_recording(tmp_path)
    conv = load(path).main
    assert conv.dialect == ANTHROPIC and conv.messages[0]["role"] == "system"
    findings = check_conversation(conv)
    assert [f.code for f in findings if f.severity == "error"] == []
    assert "system_in_messages" in [f.code for f in findings]
    tr = Engine("claude_code", {}, workspace=Workspace(tmp_path)).run(conv.messages, conversation=conv)
    assert not any(s.layer == "convert" for s in tr.steps)             # nothing moved into `system`
    assert tr.steps[0].size_before == len(str(conv.messages)) > len(agents)
    # dialect detection looks at the whole request; a plain OpenAI chat with a system message stays OpenAI
    assert detect_dialect([{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]) == OPENAI
    assert detect_dialect([{"role": "system", "content": "x"}, {"role": "user", "content": "hi"}],
                          system="You are Claude Code.") == ANTHROPIC
    assert detect_dialect([{"role": "system", "content": "x"}, {"role": "assistant", "content": None,
                                                                "tool_calls": [{"id": "c"}]}]) == OPENAI


def test_a_session_file_and_its_proxy_recording_are_joined(tmp_path):
    from compactscope.core.model.join import borrow, partners, same_session
    rec_path, _ = _cc_request_recording(tmp_path)
    recs = [_cc("u1", None, "user", {"role": "user", "content": "list the files"}),
            _cc("a1", "u1", "assistant", _asst("m1", _tu(1), usage=_usage(3000)))]
    for r in recs:
        r["sessionId"] = "a1b2c3d4-0000-1111-2222-333344445555"
    call = json.loads(rec_path.read_text().splitlines()[1])
    call["request"]["metadata"]["user_id"] = "user_x_account_y_session_a1b2c3d4-0000-1111-2222-333344445555"
    rec_path.write_text(rec_path.read_text().splitlines()[0] + "\n" + json.dumps(call) + "\n")
    sess_path = _write(tmp_path, recs, "session.jsonl")
    sess, rec = load(sess_path).main, load(rec_path).main
    assert sess.system is None and rec.system
    assert "a1b2c3d4-0000-1111-2222-333344445555" in same_session(sess, rec)
    found = partners(sess_path, sess)
    assert [d["path"] for d in found] == [str(rec_path)] and found[0]["has_system"] and found[0]["has_tools"]
    joined = borrow(sess, rec)
    assert joined.system == rec.system and joined.tools == rec.tools and joined.messages is sess.messages
    assert joined.extra["joined"]["system_from_other"]
    rc, out, _ = _cli("info", sess_path)
    assert rc == 0 and f"--with {rec_path}" in out
    rc, out, err = _cli("run", sess_path, "--with", rec_path, "--strategy", "claude_code")
    assert rc == 0, err
    assert f"joined with {rec_path}" in out and "system prompt and tools from it" in out


def test_the_iteration_budget_appears_only_for_strategies_that_have_one(corpus):
    from compactscope.core.replay import replay
    conv = load(CC / "a6-e4c2a0fbd1-0-full.jsonl").main
    cc = replay(conv, "claude_code", {}, keep_inputs=False)
    assert cc.iteration_cap is None and cc.totals()["iteration_cap"] is None and cc.totals()["user_turns"] >= 1
    assert all(it["used"] is None for it in cc.iterations())
    hermes = replay(conv, "hermes", {}, keep_inputs=False)
    assert hermes.iteration_cap == 90 and hermes.totals()["iterations_used"] == len(hermes.calls)
    # asked for explicitly, any strategy gets one
    assert replay(conv, "claude_code", {}, keep_inputs=False, iteration_cap=5).totals()["iteration_cap"] == 5
    rc, out, _ = _cli("replay", CC / "a6-e4c2a0fbd1-0-full.jsonl", "--strategy", "claude_code")
    assert rc == 0 and "iteration budget" not in out
    rc, out, _ = _cli("replay", CC / "a6-e4c2a0fbd1-0-full.jsonl", "--strategy", "hermes")
    assert "iteration budget (cap 90 per user turn)" in out


def test_the_window_session_opens_on_the_last_segment_with_inferred_defaults(corpus):
    from compactscope.core.session.model import Session
    s = Session(strategy="claude_code")
    assert s.source.open(str(CC / "b8-659b3a4dd4-0-full.jsonl"))
    conv = s.source.conversation
    assert s.source.segment == len(conv.segments) - 1 == 2
    assert s.setup.params["cap_reserve"] is False and s.setup.params["idle_gap_minutes"] == 0
    assert "cap_reserve=False" in s.view.status_text() and "2.1.14" in s.view.status_text()
    # what the user pins wins over what the session says
    s.setup.pin_params({"idle_gap_minutes": "60"}, run=False)
    assert s.setup.params["idle_gap_minutes"] == 60
    s.source.open(str(CC / "fc-99c919b212-0-full.jsonl"))
    assert s.setup.params["cap_reserve"] is True and s.setup.params["idle_gap_minutes"] == 60
    s.source.set_segment(None)
    assert s.source.segment is None


def test_the_inspector_shows_an_image_as_a_picture(qtbot):
    from compactscope.core.analysis.present import block_sizes, message_chips
    from compactscope.widgets.inspector import Inspector
    img = _img(_png(400, 300, pad=20_000))
    m = {"role": "user", "content": [img, {"type": "text", "text": "see"}]}
    chip = message_chips(m)[0]
    assert "400x300" in chip.summary and "160 tokens" in chip.summary and "chars" not in chip.summary
    assert block_sizes(m)["image"] == 4 * 160
    w = Inspector()
    qtbot.addWidget(w)
    w.show_message(0, m, block=0)
    # a picture that cannot be decoded (only a PNG header here) says so; the facts are still shown
    assert w.image.isVisibleTo(w) and "400x300" in w.text.toPlainText()
    from PySide6.QtCore import QBuffer, QByteArray, QIODevice
    from PySide6.QtGui import QColor, QImage
    q = QImage(64, 48, QImage.Format_RGB32)
    q.fill(QColor("#2563eb"))
    ba = QByteArray()
    buf = QBuffer(ba)
    buf.open(QIODevice.WriteOnly)
    q.save(buf, "PNG")
    real = {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                        "data": _b64.b64encode(bytes(ba)).decode()}}
    w.show_message(0, {"role": "user", "content": [real]}, block=0)
    assert w.image.pixmap() is not None and not w.image.pixmap().isNull()
    assert w.image.pixmap().width() == 64 and "64x48" in w.text.toPlainText()
    w.show_message(0, {"role": "user", "content": [real, {"type": "text", "text": "what is this?"}]})
    assert w.image.isVisibleTo(w) and w.image.pixmap().width() == 64       # a message shows its first image
    w.show_message(0, {"role": "user", "content": "plain"})
    assert not w.image.isVisibleTo(w)


def test_the_accuracy_bench_measures_excerpts_cut_before_the_compaction(corpus):
    """bench_cc_accuracy --excerpts: files cut from a compacted session (starting mid-session, as excerpts do) are
    measured like sessions, in both modes; one whose compaction precedes its first call is left out, and said to
    be; files cut before the first compaction count as sessions that never compacted."""
    import re
    bench = Path(__file__).resolve().parent.parent / "bench" / "bench_cc_accuracy.py"
    r = subprocess.run([sys.executable, str(bench), str(CC / "a6-e4c2a0fbd1-0-full.jsonl"), "--excerpts", "4", "-v"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    for mode in ("follow", "free"):
        lines = [line for line in r.stdout.splitlines() if line.split()[:1] == [mode]]
        cut = [line for line in lines if "-from-line" in line and "-to-line" not in line]
        heads = [line for line in lines if "-to-line" in line]
        assert len(cut) >= 2 and heads and all("never compacted" in line for line in heads)
        m = re.search(rf"{mode}: .*?first auto compaction within \+-1 call: (\d+)/(\d+).*?fired on files that never "
                      rf"compacted: (\d+)/(\d+)", r.stdout, re.S)
        counted = sum("real auto at call" in line for line in cut) + 1          # and the session itself
        assert m and int(m.group(2)) == counted and int(m.group(1)) >= counted - 1
        assert int(m.group(4)) == len(heads) and int(m.group(3)) == 0
    skipped = sum("none counted" in line for line in r.stdout.splitlines() if line.startswith("follow"))
    assert (f"{skipped} real auto compaction(s) not counted" in r.stdout) == (skipped > 0)