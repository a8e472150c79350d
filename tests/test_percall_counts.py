"""The replay's per-call shortcuts give what the long way gives: a LayerContext with other parameters, and Claude
Code's token count of a list counted just before (or of what follows its anchor)."""
from __future__ import annotations

import dataclasses
import threading
from pathlib import Path

from compactscope.core.files.workspace import Workspace
from compactscope.core.layers.base import LayerContext
from compactscope.core.layers.claude_code import SessionTokens
from compactscope.core.loaders import load
from compactscope.core.pipeline.size import SizeMeter
from compactscope.core.summarizers import CachedSummarizer, OfflineSummarizer

ASSET = Path(__file__).resolve().parent.parent / "assets" / "examples" / "cc_real_compaction.jsonl"


def test_with_params_is_replace(tmp_path):
    ctx = LayerContext({"a": 1}, Workspace(tmp_path), CachedSummarizer(OfflineSummarizer()), SizeMeter(),
                       SessionTokens(), {"s": 1}, {1: 2}, 5.0, "sys", [{"name": "t"}], threading.Event(), {"m": 1})
    got = ctx.with_params({"b": 2})
    assert got == dataclasses.replace(ctx, params={"b": 2})
    assert got.params == {"b": 2} and ctx.params == {"a": 1}
    assert all(getattr(got, f.name) is getattr(ctx, f.name) for f in dataclasses.fields(ctx) if f.name != "params")


def test_a_list_counted_again_counts_as_a_fresh_estimator_does():
    conv = load(ASSET).main
    msgs = conv.messages
    assert len(msgs) > 10
    meter = SizeMeter()
    carried = SessionTokens()
    carried.bind(conv, meter=meter)
    running: list = []
    for k, m in enumerate(msgs):
        running.append(m)                       # grown in place, as a replay's running context
        fresh = SessionTokens()
        fresh.bind(conv, meter=SizeMeter())
        want = fresh.tokens(list(running), SizeMeter())
        for _ in range(2):                      # the second count is the remembered one
            assert carried.tokens(running, meter) == want, k
            assert carried.anchored == fresh.anchored, k
        tail = running[k // 2:]                 # another list: counted, not taken for the last one
        assert carried.tokens(tail, meter) == fresh.tokens(list(tail), SizeMeter())


def test_the_count_after_the_anchor_is_the_rough_count():
    conv = load(ASSET).main
    with_meter, without = SessionTokens(), SessionTokens()
    meter = SizeMeter()
    with_meter.bind(conv, meter=meter)
    without.bind(conv)
    seen_anchored = False
    for n in range(1, len(conv.messages) + 1):
        part = conv.messages[:n]
        assert with_meter.tokens(part, meter) == without.tokens(part), n
        seen_anchored |= with_meter.anchored
    assert seen_anchored
