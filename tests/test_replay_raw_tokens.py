"""The raw history's tokens: while the running context is the whole recorded history (nothing compacted, no real
compaction reset it), the walk takes them from the pipeline's first step instead of counting the history again.
They must be what counting the history gives, call by call, for every built-in strategy."""
from __future__ import annotations

import pytest

from compactscope import asset_path
from compactscope.core.files.workspace import Workspace
from compactscope.core.loaders import load
from compactscope.core.model.conversation import Conversation, Usage
from compactscope.core.pipeline.engine import Engine
from compactscope.core.replay import replay
from compactscope.core.replay import walk

STRATEGIES = ["s08", "claude_code", "hermes", "inspect_edit", "codex", "gemini_cli"]


def _chain(n: int) -> Conversation:
    """A session that never compacts under any strategy: short turns, each answer with its recorded usage."""
    msgs = []
    for i in range(n):
        msgs.append({"role": "user", "content": f"question {i}"})
        msgs.append({"role": "assistant", "content": [{"type": "text", "text": f"answer {i}"}]})
    conv = Conversation(msgs)
    total = 0
    for m, meta in zip(conv.messages, conv.meta):
        if m["role"] == "assistant":
            meta.usage = Usage(input_tokens=3000 + total // 4, output_tokens=5)
        total += len(repr(m))
    return conv


def _raw(conv, strategy: str, tmp_path, counted: bool, monkeypatch) -> list[tuple[int, int]]:
    if counted:       # the plain definition: the history counted at every call
        monkeypatch.setattr(walk._RawGrowth, "add", lambda self, new, count=True, _add=walk._RawGrowth.add:
                            _add(self, new, True))
    try:
        res = replay(conv, engine=Engine(strategy, workspace=Workspace(tmp_path / f"{strategy}-{counted}")))
    finally:
        monkeypatch.undo()
    return [(c.raw_size, c.raw_tokens) for c in res.calls]


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_raw_tokens_of_a_session_that_never_compacts(strategy, tmp_path, monkeypatch):
    conv = _chain(60)
    got = _raw(conv, strategy, tmp_path, False, monkeypatch)
    assert len(got) == 60
    assert got == _raw(conv, strategy, tmp_path, True, monkeypatch)


@pytest.mark.parametrize("strategy", ["claude_code", "s08"])
def test_raw_tokens_across_real_and_simulated_compactions(strategy, tmp_path, monkeypatch):
    conv = load(str(asset_path("examples", "cc_real_compaction.jsonl"))).main
    got = _raw(conv, strategy, tmp_path, False, monkeypatch)
    assert got and got == _raw(conv, strategy, tmp_path, True, monkeypatch)


@pytest.mark.parametrize("strategy", ["claude_code", "s08"])
def test_the_first_calls_raw_tokens_are_counted_as_a_run_counts_them(strategy, tmp_path):
    """Call 0's history is counted with the estimator bound to the recording (Claude Code's anchors its count on
    the recorded usage), as every later call's is: it was counted before the first run bound it (426 tokens at call
    0 against 15,915 at call 1 on a real session). (Not hermes: its replay calibrates its estimate with the recorded
    overhead, which a run does not.)"""
    conv = load(str(asset_path("examples", "cc_real_compaction.jsonl"))).main
    res = replay(conv, engine=Engine(strategy, workspace=Workspace(tmp_path / "replay")), max_calls=2)
    first = res.calls[0]
    context = conv.messages[:first.message_index]
    trace = Engine(strategy, workspace=Workspace(tmp_path / "run")).run(context, conversation=conv)
    assert first.raw_tokens == trace.steps[0].tokens_before
    assert res.calls[1].raw_tokens >= first.raw_tokens
