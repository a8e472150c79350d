"""What a replay counts as a compaction, and how it matches them to the recording's real ones.

A compaction is any pass that changed the context because the strategy decided to compact: a summary,
messages dropped (trim, snip, a plugin that drops messages), or a threshold-triggered pass that rewrote
messages in place (Inspect's CompactionEdit clears old tool results and keeps every message). Text, JSON,
the boundary report and the divergence all count the same ones.
"""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from compactscope.core.analysis import divergence
from compactscope.core.loaders import load
from compactscope.core.replay import replay


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "compactscope.app.cli", *map(str, args)], capture_output=True,
                          text=True, timeout=300)


@pytest.mark.parametrize("kind,params", [("edit", {}), ("trim", {"preserve": 0.5})])
def test_non_summary_compactions_match_the_real_ones(corpus, kind, params):
    """Both samples of the edit and trim logs: every real threshold compaction (before the forced one) has a
    simulated compaction at the same call; none diverges."""
    for conv in load(corpus / "inspect_ai" / f"react-compaction-{kind}.json").conversations:
        res = replay(conv, f"inspect_{kind}", {"threshold": 4000.0, **params}, keep_inputs=False)
        forced = min((e["call"] for e in res.real_events if e["trigger"] == "forced"), default=len(res.calls))
        sims = [c.index for c in res.calls if c.compacted]
        assert res.totals()["summaries"] == 0 and res.totals()["compactions"] == len(sims) > 0
        for b in res.boundary_report():
            if b["real_call"] < forced:
                assert b["simulated_call"] == b["real_call"], b
                assert b["simulated_layers"] == [f"inspect_{kind}"]
        rows = [r for r in divergence.report(res, conv)["compactions"] if r["real_call"] < forced]
        assert rows and not any(r["diverges"] for r in rows), rows


def test_a_triggered_in_place_edit_is_a_compaction_and_routine_clearing_is_not(corpus):
    """Inspect's edit changes no message count; s08's micro_compact clears results on most calls without a
    trigger: the first is a compaction, the second is not."""
    conv = load(corpus / "inspect_ai" / "react-compaction-edit.json").main
    res = replay(conv, "inspect_edit", {"threshold": 4000.0}, keep_inputs=False)
    edits = [c for c in res.calls if "inspect_edit" in c.fired]
    assert edits and all(not c.dropped and not c.summaries and c.compacted for c in edits)
    s08 = replay(load(corpus / "entireio-cli" / "b8-659b3a4dd4-0-full.jsonl").main, "s08", keep_inputs=False)
    micro_only = [c for c in s08.calls if c.fired == ["micro_compact"]]
    assert micro_only and not any(c.compacted for c in micro_only)


def test_text_and_json_counts_agree_and_no_python_none(corpus, tmp_path):
    f = corpus / "inspect_ai" / "react-compaction-edit.json"
    args = ["replay", f, "--strategy", "inspect_edit", "--set", "threshold=4000", "--workdir", tmp_path]
    text = _cli(*args)
    assert text.returncode == 0, text.stderr
    d = json.loads(_cli(*args, "--json").stdout)
    n = d["totals"]["compactions"]
    assert n == len(d["simulated_compactions"]) == 9
    assert f"compactions {n}," in text.stdout
    assert "no simulated summary" not in text.stdout and "no simulated compaction" not in text.stdout
    assert "diverge" not in text.stdout
    hermes = _cli("replay", corpus / "hermes-agent" / "rotation" / "state.db", "--strategy", "hermes",
                  "--workdir", tmp_path)
    info = _cli("info", corpus / "hermes-agent" / "rotation" / "state.db")
    for out in (hermes.stdout, info.stdout):
        assert "None" not in out
    assert "the recording holds no preTokens" in hermes.stdout


def test_a_plugin_that_only_drops_messages_compacts(tmp_path, examples):
    """A plugin that reports nothing and only drops messages: each call it dropped some is a compaction."""
    plugin = tmp_path / "dropper.py"
    plugin.write_text("def compact(messages, keep: int = 6):\n"
                      "    return messages if len(messages) <= keep + 1 else messages[:1] + messages[-keep:]\n")
    conv = load(examples / "long_session.json").main
    res = replay(conv, f"{plugin}:compact", keep_inputs=False)
    dropped = [c.index for c in res.calls if c.dropped]
    assert dropped and res.totals()["compactions"] == len(dropped) and res.totals()["summaries"] == 0
    assert [c["call"] for c in res.compactions] == dropped
