"""Replay on the corpus Claude Code sessions: where the simulated auto-compaction fires next
to the real compact_boundary."""
from __future__ import annotations

import pytest

from compactscope.core.replay import replay

AUTO = {  # file -> real auto boundaries (call index), from the recorded compact_boundary records
    "b8-659b3a4dd4-0-full.jsonl": 2,
    "a6-e4c2a0fbd1-0-full.jsonl": 1,
    "ca-fca7ea73ac-0-full.jsonl": 1,
}


def _load(corpus, name):
    loaders = pytest.importorskip("compactscope.core.loaders")
    try:
        return loaders.load(corpus / "entireio-cli" / name).main
    except loaders.LoadError as e:
        pytest.skip(f"the Claude Code loader cannot read {name} yet: {e}")


@pytest.mark.parametrize("name", sorted(AUTO))
def test_simulated_auto_compaction_lands_at_the_real_boundary(corpus, tmp_path, name):
    from compactscope.core.files.workspace import Workspace
    conv = _load(corpus, name)
    if not conv.events:
        pytest.skip("the loader reports no compaction events")
    # Claude Code <= 2.1.14 reserved 32,000 tokens: 200,000 - 32,000 - 13,000 = 155,000
    res = replay(conv, "claude_code", {"summary_max_output": 32_000, "idle_gap_minutes": 0}, calibrate=True,
                 workspace=Workspace(tmp_path), keep_inputs=False)
    assert res.threshold == 155_000
    report = [b for b in res.boundary_report() if b["trigger"] == "auto"]
    assert len(report) == AUTO[name]
    for b in report:
        assert abs(b["calls_apart"]) <= 1, b
        assert abs(b["real_pre_tokens"] - b["simulated_tokens_before"]) < 3_000, b
    # with the 167,000 threshold of later versions it fires later, never earlier
    later = replay(conv, "claude_code", {"idle_gap_minutes": 0}, calibrate=True, workspace=Workspace(tmp_path),
                   keep_inputs=False)
    for b in later.boundary_report():
        if b["trigger"] == "auto":
            assert b["calls_apart"] >= 0
    calls = [c for c in res.calls if c.real_tokens is not None]
    assert calls and all(c.real_tokens > 0 for c in calls[1:])


def test_rerun_of_a_calibrated_call_fires_like_the_replay(corpus, tmp_path):
    from compactscope.core.files.workspace import Workspace
    conv = _load(corpus, "a6-e4c2a0fbd1-0-full.jsonl")
    res = replay(conv, "claude_code", {"summary_max_output": 32_000, "idle_gap_minutes": 0}, calibrate=True,
                 workspace=Workspace(tmp_path))
    k = res.summary_calls()[0]
    tr = res.rerun(k)
    assert tr.step("auto_compact").triggered
    assert tr.step("auto_compact").tokens_before == res.calls[k].tokens_before
    assert not res.rerun(k - 1).step("auto_compact").triggered


@pytest.mark.parametrize("name,calls", [("4b-7d5121b42a-0-full.jsonl", [9]),
                                        ("44-785715c3f5-2-full.jsonl", [37, 90])])
def test_real_manual_compacts_are_replayed_at_their_call(corpus, tmp_path, name, calls):
    """The user typed /compact: the replay runs the strategy's manual_compact at that very call, even
    below the auto threshold; without it, nothing fires there."""
    from compactscope.core.files.workspace import Workspace
    conv = _load(corpus, name)
    params = {"idle_gap_minutes": 0}
    res = replay(conv, "claude_code", params, workspace=Workspace(tmp_path), keep_inputs=False)
    manual = [b for b in res.boundary_report() if b["trigger"] == "manual"]
    assert [b["real_call"] for b in manual] == calls
    for c in calls:
        assert "manual_compact" in res.calls[c].fired
        assert res.calls[c].summaries == 1
    off = replay(conv, "claude_code", params, workspace=Workspace(tmp_path), keep_inputs=False,
                 manual_compacts=False)
    assert all("manual_compact" not in c.fired for c in off.calls)
    assert all("auto_compact" not in off.calls[c].fired for c in calls)
