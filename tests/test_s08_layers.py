"""The s08 layers reproduce the seeds' behaviour, quirks included, without mutating input."""
import copy
import json

import pytest
from helpers import a, tr, tu, u, worked_example

from compactscope.core.analysis.checker import check, pair_errors
from compactscope.core.layers.base import LayerContext
from compactscope.core.layers.s08 import (COMPACT_TOOL_RESULT, MICRO_PLACEHOLDER, compact_history, compact_tool, micro_compact,
                             reactive_compact, snip_compact, tool_result_budget)
from compactscope.core.pipeline.engine import Engine, run_pipeline
from compactscope.core.pipeline.size import SizeMeter, estimate_size
from compactscope.core.summarizers import CachedSummarizer, FixedSummarizer, SummaryError
from compactscope.core.pipeline.trace import BOUNDARY, PERSIST, REPLACE, SNIP, SUMMARY
from compactscope.core.files.workspace import Workspace


@pytest.fixture
def ctx(tmp_path):
    def make(**params):
        return LayerContext(params, Workspace(tmp_path / "ws"), CachedSummarizer(FixedSummarizer("SUM")))
    return make


# ---------------------------------------------------------------- snip
def test_snip_worked_example_from_seed(ctx):
    msgs = worked_example()
    before = copy.deepcopy(msgs)
    out = snip_compact(msgs, ctx(max_messages=8))
    assert msgs == before
    v = out.vars
    assert (v["keep_head"], v["keep_tail"]) == (3, 5)
    assert (v["head_end_initial"], v["tail_start_initial"]) == (3, 7)
    assert (v["head_end_after_guard"], v["tail_start_after_guard"]) == (4, 6)
    assert v["snipped"] == 2
    assert out.messages[4] == {"role": "user", "content": "[snipped 2 messages]"}
    assert out.origin == [0, 1, 2, 3, None, 6, 7, 8, 9, 10, 11]
    # unchanged messages are shared, not copied
    assert all(out.messages[i] is msgs[o] for i, o in enumerate(out.origin) if o is not None)
    moves = [e for e in out.edits if e.kind == BOUNDARY]
    assert [(e.var, e.old, e.new) for e in moves] == [("head_end", 3, 4), ("tail_start", 7, 6)]
    assert "message 2 is an assistant tool_use and message 3 holds its tool_result" in moves[0].text
    snip = next(e for e in out.edits if e.kind == SNIP)
    assert (snip.start, snip.end, snip.text) == (4, 6, "snipped 2 messages, 4..5")
    assert not pair_errors(check(out.messages))


def test_snip_unchanged_at_or_below_limit(ctx):
    msgs = worked_example()
    out = snip_compact(msgs, ctx(max_messages=12))
    assert out.messages is msgs
    assert "12 messages <= max_messages 12" in out.note


def test_snip_overlap_returns_input(ctx):
    # 9 messages, max 8: head_end 3 -> 5 (two tool_result messages), tail_start 9-5 = 4: overlap
    msgs = [u("0"), a("1"), tu("t2"), tr("t2"), tr("t2b"), a("5"), u("6"), a("7"), u("8")]
    out = snip_compact(msgs, ctx(max_messages=8))
    assert out.messages is msgs
    assert out.vars["head_end"] == 5 and out.vars["tail_start"] == 4
    assert "overlap" in out.note


def test_readme_variant_duplicates_messages_on_overlap(ctx):
    msgs = [u("0"), a("1"), tu("t2"), tr("t2"), tr("t2b"), a("5"), u("6"), a("7"), u("8")]
    out = snip_compact(msgs, ctx(max_messages=8, variant="readme"))
    assert out.vars["snipped"] == -1
    assert out.messages[5] == {"role": "user", "content": "[snipped -1 messages from conversation middle]"}
    assert len(out.messages) == 11                # 5 head + placeholder + 5 tail (from 4): message 4 twice
    assert out.origin.count(4) == 2
    assert "appear twice" in next(e for e in out.edits if e.kind == SNIP).text


def test_readme_variant_index_error_is_reported_not_raised(ctx):
    msgs = worked_example()
    out = snip_compact(msgs, ctx(max_messages=3, variant="readme"))   # keep_tail 0 -> tail_start == len
    assert out.error and "IndexError" in out.error
    assert out.messages is msgs


def test_readme_placeholder_text(ctx):
    out = snip_compact(worked_example(), ctx(max_messages=8, variant="readme"))
    assert out.messages[4]["content"] == "[snipped 2 messages from conversation middle]"


# ---------------------------------------------------------------- budget
def test_budget_persists_largest_first_until_under(ctx, tmp_path):
    big = "A" * 150_000
    mid = "B" * 90_000
    small = "C" * 20_000
    msgs = [u("go"), tu("t1", "t2", "t3"), {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "t1", "content": mid},
        {"type": "tool_result", "tool_use_id": "t2", "content": big},
        {"type": "tool_result", "tool_use_id": "t3", "content": small}]}]
    before = copy.deepcopy(msgs)
    out = tool_result_budget(msgs, ctx())
    assert msgs == before
    persisted = [e for e in out.edits if e.kind == PERSIST]
    assert [e.tool_id for e in persisted] == ["t2"]           # 260,000 -> 112,xxx after the largest
    blk = out.messages[-1]["content"][1]
    assert blk["content"].startswith("<persisted-output>\nFull output: .task_outputs/tool-results/t2.txt\nPreview:\n")
    assert blk["content"].endswith("\n</persisted-output>")
    assert blk["content"].count("A") == 2000
    assert open(persisted[0].path).read() == big
    assert out.messages[-1]["content"][0] is msgs[-1]["content"][0]     # untouched blocks shared
    assert out.messages[0] is msgs[0] and out.messages[1] is msgs[1]
    assert out.vars["total_before"] == 260_000 and out.vars["total_after"] <= 200_000


def test_budget_skips_results_under_threshold(ctx):
    msgs = [u("go"), tu(*[f"t{i}" for i in range(8)]), tr(*[f"t{i}" for i in range(8)], content="z" * 29_000)]
    out = tool_result_budget(msgs, ctx())
    assert out.messages is msgs                                  # 232,000 > 200,000 but each <= 30,000
    assert "no single result exceeds" in out.note


@pytest.mark.parametrize("last", [a("hi"), u("plain string")])
def test_budget_ignores_non_tool_result_last(ctx, last):
    msgs = [u("go"), last]
    assert tool_result_budget(msgs, ctx()).messages is msgs
    assert tool_result_budget([], ctx()).messages == []


@pytest.mark.parametrize("hostile", ["../../evil", "/etc/passwd", "..", "a/b\\c", "", "x" * 500])
def test_budget_hostile_ids_stay_inside_workspace(ctx, tmp_path, hostile):
    msgs = [u("go"), tu(hostile), {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": hostile, "content": "Q" * 250_000}]}]
    out = tool_result_budget(msgs, ctx())
    e = next(e for e in out.edits if e.kind == PERSIST)
    root = (tmp_path / "ws").resolve()
    assert root in __import__("pathlib").Path(e.path).resolve().parents


def test_budget_name_clash_never_overwrites(ctx):
    c = ctx()
    for content in ("1" * 250_000, "2" * 250_000):
        msgs = [u("go"), tu("same"), {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "same", "content": content}]}]
        tool_result_budget(msgs, c)
    files = sorted((c.workspace.root / ".task_outputs/tool-results").iterdir())
    assert [f.name for f in files] == ["same-2.txt", "same.txt"]
    assert {f.read_text()[0] for f in files} == {"1", "2"}


# ---------------------------------------------------------------- micro
def test_micro_keeps_last_three_and_replaces_long_older(ctx):
    ids = [f"t{i}" for i in range(5)]
    msgs = [u("go")]
    for i in ids:
        msgs += [tu(i), tr(i, content=("y" * 121) if i != "t1" else "short")]
    out = micro_compact(msgs, ctx())
    repl = [e for e in out.edits if e.kind == REPLACE]
    assert [e.tool_id for e in repl] == ["t0"]                 # t1 is <= 120 chars, t2..t4 recent
    assert out.messages[2]["content"][0]["content"] == MICRO_PLACEHOLDER
    assert out.messages[4] is msgs[4]
    assert msgs[2]["content"][0]["content"] == "y" * 121       # input untouched


def test_micro_list_content_quirk_is_reproduced_and_explained(ctx):
    listy = [{"type": "text", "text": "L" * 5000}]
    msgs = [u("go"), tu("t0"), tr("t0", content=listy)]
    for i in range(1, 4):
        msgs += [tu(f"t{i}"), tr(f"t{i}")]
    out = micro_compact(msgs, ctx())
    assert out.messages is msgs
    assert any("len() counts blocks" in e.text for e in out.edits)


@pytest.mark.parametrize("weird", [None, 42, 3.5])
def test_micro_non_string_content_is_a_note_not_a_crash(ctx, weird):
    msgs = [u("go"), tu("t0"), tr("t0", content=weird)]
    for i in range(1, 4):
        msgs += [tu(f"t{i}"), tr(f"t{i}")]
    out = micro_compact(msgs, ctx())
    assert any("TypeError" in e.text for e in out.edits)


# ---------------------------------------------------------------- summary
def test_compact_history_threshold_and_summary(ctx):
    msgs = [u("task"), a("x" * 60_000)]
    c = ctx()
    out = compact_history(msgs, c)
    assert out.triggered
    assert out.messages == [{"role": "user", "content": "[Compacted]\n\nSUM"}]
    assert out.origin == [None]
    e = next(e for e in out.edits if e.kind == SUMMARY)
    lines = open(e.path).read().splitlines()
    assert [json.loads(line) for line in lines] == msgs
    small = [u("task")]
    out2 = compact_history(small, c)
    assert out2.triggered is False and out2.messages is small


class Failing:
    name = "failing"

    def __init__(self):
        self.calls = 0

    def summarize(self, req, cancel=None):
        self.calls += 1
        raise SummaryError("boom", "try later")


def test_circuit_breaker_after_three_failures(tmp_path):
    failing = Failing()
    eng = Engine("s08", {"context_limit": 100}, workspace=Workspace(tmp_path), summarizer=failing)
    msgs = [u("task"), a("x" * 500)]
    for k in range(1, 4):
        t = eng.run(msgs)
        s = t.step("compact_history")
        assert s.error and "boom" in s.error and s.messages is msgs
        assert eng.state["consecutive_failures"] == k
    t = eng.run(msgs)
    s = t.step("compact_history")
    assert s.error is None and s.triggered is False and "circuit breaker" in s.note
    assert failing.calls == 3


def test_reactive_compact_keeps_tail_with_guard(ctx):
    msgs = worked_example()[:8]               # ends: ..., tu(t6) at 6, tr(t6) at 7
    msgs = msgs + [u("8")]                    # 9 messages; tail_start = 4 -> no move
    out = reactive_compact(msgs, ctx())
    assert out.messages[0]["content"] == "[Reactive compact]\n\nSUM"
    assert out.origin == [None, 4, 5, 6, 7, 8]
    msgs2 = worked_example()[:8]              # 8 messages: tail_start = 3 is tr(t2), 2 is tu(t2) -> 2
    out2 = reactive_compact(msgs2, ctx())
    assert out2.vars["tail_start"] == 2
    assert out2.origin[1] == 2
    assert not pair_errors(check(out2.messages))


def test_compact_tool_teaching_bug_and_deferred_fix(ctx):
    msgs = [u("task"), a("working"), {"role": "assistant", "content": [
        {"type": "tool_use", "id": "c1", "name": "compact", "input": {}},
        {"type": "tool_use", "id": "b1", "name": "bash", "input": {"command": "ls"}}]}]
    msgs[1] = u("more")  # keep alternation: user, user? make it valid
    msgs = [u("task"), a("ok"), u("go on"), msgs[2], tr("b1", content="listing")]
    teaching = compact_tool(msgs, ctx())
    assert teaching.messages[-1]["content"][-1]["content"] == COMPACT_TOOL_RESULT
    codes = {f.code for f in check(teaching.messages)}
    assert "orphan_tool_result" in codes                   # the seed's bug, made visible
    deferred = compact_tool(msgs, ctx(compact_tool_mode="deferred"))
    assert deferred.messages == [{"role": "user", "content": "[Compacted]\n\nSUM"}]
    assert not check(deferred.messages)


# ---------------------------------------------------------------- pipeline
def test_pipeline_order_and_sizes_on_long_example(examples, tmp_path):
    msgs = json.loads((examples / "long_session.json").read_text())
    before = copy.deepcopy(msgs)
    t = run_pipeline(msgs, "s08", workspace=Workspace(tmp_path), summarizer=FixedSummarizer("S"))
    assert msgs == before
    assert [s.layer for s in t.steps] == ["tool_result_budget", "snip_compact", "micro_compact", "compact_history"]
    assert all(s.changed for s in t.steps)
    assert t.steps[0].size_before == estimate_size(msgs)
    for s in t.steps:
        assert s.size_after == estimate_size(s.messages)
        assert s.tokens_after == s.size_after // 4
    assert t.steps[-1].triggered is True


def test_layer_order_override_loses_content(examples, tmp_path):
    """micro before budget: the big result of an earlier batch is replaced before it could be persisted."""
    big = "D" * 250_000
    msgs = [u("task"), tu("t0"), {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t0",
                                                               "content": big}]}]
    for i in range(1, 4):
        msgs += [tu(f"t{i}"), tr(f"t{i}")]
    # make the big batch the last message so budget sees it, with 3 later results in the same batch
    msgs = [u("task"), tu("t0", "t1", "t2", "t3"), {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "t0", "content": big},
        *[{"type": "tool_result", "tool_use_id": f"t{i}", "content": "r" * 200} for i in range(1, 4)]]}]
    seed_order = run_pipeline(msgs, "s08", workspace=Workspace(tmp_path / "a"))
    assert seed_order.step("tool_result_budget").edits[0].kind == PERSIST
    swapped = run_pipeline(msgs, "s08", workspace=Workspace(tmp_path / "b"),
                           order=["micro_compact", "tool_result_budget", "snip_compact", "compact_history"])
    assert swapped.steps[0].layer == "micro_compact"
    assert any(e.kind == REPLACE and e.tool_id == "t0" for e in swapped.steps[0].edits)
    assert not any(e.kind == PERSIST for e in swapped.step("tool_result_budget").edits)
    assert not (tmp_path / "b" / ".task_outputs").exists()      # the content is gone for good


def test_size_meter_matches_len_str_and_is_incremental(monkeypatch):
    from compactscope.core.pipeline import size as size_mod
    msgs = worked_example()
    meter = SizeMeter()
    assert meter.size(msgs) == len(str(msgs))
    assert meter.size([]) == len(str([]))
    calls = []
    orig = size_mod.measure_new

    def counting(f, ms):
        calls.extend(ms)
        return orig(f, ms)
    monkeypatch.setattr(size_mod, "measure_new", counting)
    new = msgs[:-1] + [u("fresh")]
    assert meter.size(new) == len(str(new))
    # only the new message had to be measured; the others hit the cache
    assert len(calls) == 1 and calls[0] is new[-1]
