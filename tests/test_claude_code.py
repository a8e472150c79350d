"""The claude_code strategy: threshold arithmetic, time-based microcompact, restore budgets,
circuit breaker, prompt-too-long retry."""
from __future__ import annotations

import copy

import pytest

from compactscope.core import strategies
from compactscope.core.analysis.checker import check, rejected
from compactscope.core.model.conversation import MessageMeta
from compactscope.core.layers import claude_code as cc
from compactscope.core.layers.base import LayerContext
from compactscope.core.pipeline.engine import Engine
from compactscope.core.summarizers import FixedSummarizer, SummaryError
from compactscope.core.files.workspace import Workspace

T0 = 1_700_000_000.0


def user(text):
    return {"role": "user", "content": text}


def call(tid, name="Read", **inp):
    return {"role": "assistant", "content": [{"type": "tool_use", "id": tid, "name": name,
                                              "input": inp or {"file_path": f"/src/{tid}.py"}}]}


def result(tid, content="x" * 300, is_error=False):
    b = {"type": "tool_result", "tool_use_id": tid, "content": content}
    if is_error:
        b["is_error"] = True
    return {"role": "user", "content": [b]}


class Tokens:
    """A token estimator that says what the test wants."""
    name = "fixed"

    def __init__(self, n):
        self.n = n

    def tokens(self, messages, meter, *, system=None, tools=None):
        return self.n


class Failing:
    name = "failing"

    def __init__(self, kind="api"):
        self.kind = kind
        self.calls = 0

    def summarize(self, request, cancel=None):
        self.calls += 1
        raise SummaryError("boom", kind=self.kind)


class TooLong:
    """Fails with prompt_too_long while the request holds more than ``fits`` messages."""
    name = "too long"

    def __init__(self, fits, gap_text=""):
        self.fits = fits
        self.sizes = []
        self.gap_text = gap_text

    def summarize(self, request, cancel=None):
        from compactscope.core.summarizers import SummaryResult
        self.sizes.append(len(request.messages))
        if len(request.messages) > self.fits:
            raise SummaryError("prompt too long" + self.gap_text, kind="prompt_too_long")
        return SummaryResult("<analysis>thinking</analysis>\n<summary>1. Primary Request and Intent: x</summary>",
                             self.name)


def engine(tmp_path, summarizer=None, tokens=None, **params):
    return Engine("claude_code", params, workspace=Workspace(tmp_path), tokens=tokens,
                  summarizer=summarizer or FixedSummarizer("<analysis>a</analysis><summary>S</summary>"))


def session(n_reads=8, minutes_apart=1.0, name="Read"):
    msgs = [user("please fix the bug")]
    times = [T0]
    for k in range(n_reads):
        msgs += [call(f"t{k}", name, file_path=f"/src/f{k}.py"), result(f"t{k}", f"content of f{k} " * 30)]
        times += [T0 + 60 * minutes_apart * (k + 1)] * 2
    msgs.append({"role": "assistant", "content": [{"type": "text", "text": "done"}]})
    times.append(times[-1] + 5)
    meta = {id(m): MessageMeta(timestamp=t) for m, t in zip(msgs, times)}
    return msgs, meta, times[-1]


# ------------------------------------------------------------------ threshold
def test_registry_and_threshold_arithmetic():
    s = strategies.get("claude_code")
    assert s.name == "claude_code" and s.layer_names == ["tool_result_budget", "snip_compact",
                                                         "time_micro_compact", "auto_compact"]
    d = s.defaults()
    assert cc.threshold(d) == 200_000 - 20_000 - 13_000 == 167_000
    assert cc.threshold({**d, "window": 1_000_000}) == 967_000
    assert cc.threshold({**d, "max_output": 8_000}) == 200_000 - 8_000 - 13_000
    assert cc.threshold({**d, "buffer": 0, "max_output": 64_000}) == 180_000
    for p in s.params:
        assert p.help, p.name


@pytest.mark.parametrize("tokens,fires", [(166_999, False), (167_000, True), (180_000, True)])
def test_auto_compact_fires_at_the_threshold(tmp_path, tokens, fires):
    msgs, _, _ = session(3)
    tr = engine(tmp_path, tokens=Tokens(tokens)).run(msgs)
    step = tr.step("auto_compact")
    assert step.triggered is fires
    assert step.vars["threshold"] == 167_000
    if fires:
        assert step.messages[0]["content"].startswith(cc.SUMMARY_INTRO)
        assert not rejected(check(step.messages))
    else:
        assert step.messages is step.input


def test_summary_format_strips_analysis_keeps_summary():
    out = cc.format_summary("<analysis>\nmy notes\n</analysis>\n\n<summary>\n1. Primary Request: fix\n</summary>")
    assert "my notes" not in out and "<analysis>" not in out
    assert out == "Summary:\n1. Primary Request: fix"
    assert cc.format_summary("plain text") == "plain text"
    for name in cc.SECTIONS:
        assert name in cc.COMPACT_PROMPT
    assert len(cc.SECTIONS) == 9


def test_summary_message_and_prompt(tmp_path):
    msgs, _, _ = session(2)
    seen = []

    class Spy(FixedSummarizer):
        def summarize(self, request, cancel=None):
            seen.append(request)
            return super().summarize(request, cancel)
    tr = engine(tmp_path, summarizer=Spy("<analysis>A</analysis><summary>THE SUMMARY</summary>"),
                tokens=Tokens(10**6)).run(msgs)
    text = tr.output[0]["content"]
    assert "THE SUMMARY" in text and ">A<" not in text and "Analysis" not in text
    assert text.rstrip().endswith("Continue with the last task that you were asked to work on.")
    req = seen[0]
    assert req.prompt.startswith("CRITICAL: Respond with TEXT ONLY") and "REMINDER" in req.prompt[-200:]
    assert req.max_tokens == 20_000
    assert len(req.messages) == len(msgs)


def test_the_summary_does_not_depend_on_where_the_workspace_is(tmp_path):
    """QA 16: the summary names the transcript inside the workspace, so a longer --workdir path gives the
    same text and the same figures; the edit still points at the file written."""
    msgs, _, _ = session(2)
    near, far = tmp_path / "w", tmp_path / ("a-much-longer-folder-name" * 3) / "w"
    outs = [engine(root, tokens=Tokens(10**6)).run(msgs) for root in (near, far)]
    texts = [tr.output[0]["content"] for tr in outs]
    assert texts[0] == texts[1] and str(tmp_path) not in texts[0]
    assert [s.size_after for s in outs[0].steps] == [s.size_after for s in outs[1].steps]
    edit = next(e for e in outs[1].step("auto_compact").edits if e.path)
    assert edit.path.startswith(str(far)) and (far / texts[1].split("transcript at: ")[1].split()[0]).is_file()


# ------------------------------------------------------------------ time-based microcompact
def _ctx(tmp_path, meta, now=None, **params):
    s = strategies.get("claude_code")
    return LayerContext.default(s.resolve(params), workspace=Workspace(tmp_path), meta=meta, now=now)


def test_micro_after_idle_gap_clears_all_but_five(tmp_path):
    msgs, meta, last = session(8)
    before = copy.deepcopy(msgs)
    out = cc.time_micro_compact(msgs, _ctx(tmp_path, meta, now=last + 61 * 60))
    cleared = [b["tool_use_id"] for m in out.messages if isinstance(m["content"], list)
               for b in m["content"] if b.get("type") == "tool_result" and b["content"] == cc.CLEARED]
    assert cleared == ["t0", "t1", "t2"]                 # 8 results, the 5 most recent kept
    assert out.vars["kept_recent"] == ["t3", "t4", "t5", "t6", "t7"]
    assert msgs == before                                 # input untouched
    changed = {e.message for e in out.edits if e.kind == "replace"}
    for i, (a, b) in enumerate(zip(msgs, out.messages)):
        assert (a is b) == (i not in changed)


def test_micro_not_before_the_gap_and_default_now(tmp_path):
    msgs, meta, last = session(8)
    out = cc.time_micro_compact(msgs, _ctx(tmp_path, meta, now=last + 59 * 60))
    assert out.messages is msgs and "< idle gap 60" in out.note
    # default now = the newest timestamp: a user message 2 hours after the last answer
    late = user("back from lunch")
    meta2 = {**meta, id(late): MessageMeta(timestamp=last + 7200)}
    out = cc.time_micro_compact(msgs + [late], _ctx(tmp_path, meta2))
    assert out.vars["gap_minutes"] == pytest.approx(120.0)
    assert out.vars["cleared"] == 3


def test_micro_results_younger_than_gap_are_kept(tmp_path):
    # results spread over 3 hours; idle 61 min: only those older than 60 min (and not in the last 5) go
    msgs, meta, last = session(10, minutes_apart=10)
    out = cc.time_micro_compact(msgs, _ctx(tmp_path, meta, now=last + 61 * 60, micro_keep_recent=2))
    cleared = {e.tool_id for e in out.edits if e.kind == "replace"}
    assert cleared == {f"t{k}" for k in range(8)}      # every result is >= 61 min old; 2 kept
    out = cc.time_micro_compact(msgs, _ctx(tmp_path, meta, now=last + 61 * 60, micro_keep_recent=2,
                                          idle_gap_minutes=90))
    assert out.messages is msgs                        # 61 min idle < 90


def test_micro_only_compactable_tools_and_needs_timestamps(tmp_path):
    msgs, meta, last = session(8, name="TodoWrite")
    out = cc.time_micro_compact(msgs, _ctx(tmp_path, meta, now=last + 7200))
    assert out.messages is msgs and out.vars["compactable_results"] == 0
    out = cc.time_micro_compact(msgs, _ctx(tmp_path, meta, now=last + 7200, compactable_tools="*"))
    assert out.vars["cleared"] == 3
    out = cc.time_micro_compact(msgs, _ctx(tmp_path, {}))
    assert out.messages is msgs and "no timestamps" in out.note


# ------------------------------------------------------------------ restore
def read_session(sizes):
    msgs = [user("go")]
    for k, n in enumerate(sizes):
        msgs += [call(f"r{k}", file_path=f"/src/f{k}.py"), result(f"r{k}", chr(97 + k) * n)]
    return msgs


def test_restore_most_recent_five_files(tmp_path):
    msgs = read_session([1000] * 7)
    # a failed read and a re-read of f6 do not count twice
    msgs += [call("bad", file_path="/src/missing.py"), result("bad", "no such file", is_error=True)]
    msgs += [call("again", file_path="/src/f6.py"), result("again", "g" * 800)]
    out = cc.auto_compact(msgs, dataclass_ctx(tmp_path, 10**6))
    paths = [r["path"] for r in out.vars["restored_files"]]
    assert paths == ["/src/f6.py", "/src/f5.py", "/src/f4.py", "/src/f3.py", "/src/f2.py"]
    assert out.vars["restored_files"][0]["tokens"] == 200       # the newest read: 800 chars / 4
    assert len(out.messages) == 1 + 5
    assert "g" * 800 in out.messages[1]["content"][0]["text"]
    assert not rejected(check(out.messages))


def dataclass_ctx(tmp_path, tokens, summarizer=None, **params):
    s = strategies.get("claude_code")
    return LayerContext.default(s.resolve(params), workspace=Workspace(tmp_path), tokens=Tokens(tokens),
                                summarizer=_cached(summarizer) if summarizer else None)


def test_restore_per_file_and_total_budgets(tmp_path):
    # 30,000 chars = 7,500 tokens > 5,000: truncated to 5,000 tokens
    out = cc.auto_compact(read_session([30_000, 400]), dataclass_ctx(tmp_path, 10**6))
    files = {r["path"]: r for r in out.vars["restored_files"]}
    assert files["/src/f0.py"]["truncated"] and files["/src/f0.py"]["tokens"] == 5_000
    assert not files["/src/f1.py"]["truncated"] and files["/src/f1.py"]["tokens"] == 100
    # total budget: 5 files of 18,000 tokens with a 20,000 per-file cap -> only 2 fit in 50,000
    msgs = read_session([72_000] * 5)
    out = cc.auto_compact(msgs, dataclass_ctx(tmp_path, 10**6, restore_tokens_per_file=20_000))
    assert [r["tokens"] for r in out.vars["restored_files"]] == [18_000, 18_000]
    assert out.vars["restored_tokens"] == 36_000 <= 50_000
    assert sum(1 for e in out.edits if e.kind == "note" and "restore budget" in e.text) == 3
    out = cc.auto_compact(msgs, dataclass_ctx(tmp_path, 10**6, restore_files=False))
    assert len(out.messages) == 1


# ------------------------------------------------------------------ breaker and PTL
def test_circuit_breaker_after_three_failures(tmp_path):
    bad = Failing()
    eng = engine(tmp_path, summarizer=bad, tokens=Tokens(200_000))
    msgs, _, _ = session(3)
    for k in range(1, 4):
        step = eng.run(msgs).step("auto_compact")
        assert step.error and step.triggered and eng.state["consecutive_failures"] == k
        assert step.messages is step.input
    step = eng.run(msgs).step("auto_compact")
    assert not step.triggered and "circuit breaker" in step.note
    assert bad.calls == 3
    # a success resets the count
    eng2 = engine(tmp_path, tokens=Tokens(200_000))
    eng2.state["consecutive_failures"] = 2
    eng2.run(msgs)
    assert eng2.state["consecutive_failures"] == 0


def test_prompt_too_long_drops_oldest_groups_and_retries(tmp_path):
    msgs = read_session([100] * 10)                      # 21 messages, 11 API-round groups
    s = TooLong(fits=17)            # 21 -> 19 -> 17 messages: two retries
    out = cc.auto_compact(msgs, dataclass_ctx(tmp_path, 10**6, s))
    assert out.error is None and out.triggered
    assert s.sizes == [21, 19, 17]
    assert all(b < a for a, b in zip(s.sizes, s.sizes[1:]))
    assert out.vars["ptl_retries"] == 2
    # the last prompt's 17 messages: the retry's marker (the rest began with an assistant turn) and 16 of the 21
    assert out.vars["ptl_dropped_messages"] == 5
    assert "Summary:\n1. Primary Request" in out.messages[0]["content"]
    assert sum(1 for e in out.edits if e.kind == "drop") == out.vars["ptl_retries"]
    # never fits: gives up after 3 retries, the failure counts for the breaker
    s2 = TooLong(fits=0)
    out = cc.auto_compact(msgs, dataclass_ctx(tmp_path, 10**6, s2))
    assert out.error and len(s2.sizes) == 4 and out.state == {"consecutive_failures": 1}


def test_drop_oldest_groups_keeps_pairs_and_starts_with_user():
    msgs = read_session([10] * 5)
    rest, n = cc.drop_oldest_groups(msgs, None, 0.2)
    assert n == 1 and rest[0]["content"] == cc.PTL_MARKER and rest[1]["role"] == "assistant"
    assert not rejected(check(rest))
    rest2, n2 = cc.drop_oldest_groups(rest, None, 0.5)   # the marker of the last retry is not a group
    assert rest2[0]["content"] == cc.PTL_MARKER and len(rest2) < len(rest)
    assert not rejected(check(rest2))


def _cached(s):
    from compactscope.core.summarizers import CachedSummarizer
    return CachedSummarizer(s)


def test_budget_and_snip_reuse_s08(tmp_path):
    big = "y" * 150_000
    msgs = [user("go"), {"role": "assistant", "content": [
        {"type": "tool_use", "id": "a", "name": "Bash", "input": {}},
        {"type": "tool_use", "id": "b", "name": "Bash", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": big},
                                     {"type": "tool_result", "tool_use_id": "b", "content": big}]}]
    tr = engine(tmp_path).run(msgs)
    budget = tr.step("tool_result_budget")
    assert budget.changed and budget.vars["max_bytes"] == 200_000
    assert tr.step("snip_compact").changed is False
    long = [user("go")] + [m for k in range(40) for m in (call(f"s{k}"), result(f"s{k}", "z"))]
    tr = engine(tmp_path, snip_max_messages=20).run(long)
    snip = tr.step("snip_compact")
    assert snip.changed and snip.vars["max_messages"] == 20
    # head 3 + placeholder + tail 17, plus one message when the tail guard keeps a pair together
    assert len(snip.messages) == 3 + 1 + 17 + (snip.vars["tail_start_initial"] - snip.vars["tail_start"])
    assert not rejected(check(snip.messages))


def test_rough_tokens_count_images_flat():
    from compactscope.core.pipeline.size import SizeMeter
    img = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "A" * 400_000}}
    m = {"role": "user", "content": [img, {"type": "text", "text": "look"}]}
    plain = {"role": "user", "content": [{"type": "text", "text": "look"}]}
    meter, rough = SizeMeter(), cc.RoughTokens()
    assert rough.tokens([plain], meter) == meter.size([plain]) // 4
    assert 2000 <= rough.tokens([m], meter) < 2100
    # the strategy's own count (recorded usage + rough) also counts an image flat, by content
    session = cc.SessionTokens()
    assert 2000 <= session.tokens([m], meter) < 2010
    assert strategies.get("claude_code").token_estimator is cc.SessionTokens
