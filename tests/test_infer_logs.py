"""Session-inferred defaults for hermes-agent and Inspect logs (``strategies.infer_params``): the settings a
log records, or that its real compaction points imply, so a default replay reproduces its real compactions."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from compactscope.core.analysis import divergence
from compactscope.core import strategies
from compactscope.core.loaders import load
from compactscope.core.replay import replay
from compactscope.core.strategies.infer import context_evidence


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "compactscope.app.cli", *map(str, args)], capture_output=True,
                          text=True, timeout=300)


def _replay_inferred(conv, name):
    inf = strategies.infer_params(name, conv)
    return inf, replay(conv, name, inf.apply(), keep_inputs=False)


@pytest.mark.parametrize("db", ["rotation", "inplace"])
def test_hermes_window_inferred_from_the_compaction_points(corpus, db):
    """The corpus runs used a 64k window (threshold 54,400); the database stores neither: the window is read
    from where it compacted and where it did not, and the default replay then makes the three compactions
    within one call of the real ones (without inference: none, at the 200k default)."""
    conv = load(corpus / "hermes-agent" / db / "state.db").main
    inf, res = _replay_inferred(conv, "hermes")
    assert inf.params == {"context_length": 64_000}
    why = inf.reasons["context_length"]
    assert "does not store the window" in why and "54,400" in why and "3 time(s)" in why
    assert res.threshold == 54_400
    # following reality (the default) each real compaction is paired with a simulated one within one call (a late
    # one found by the replay's own context carried past the real one); free-running, its own compactions are too
    rows = divergence.report(res, conv)["compactions"]
    assert len(rows) == 3 and all(abs(r["calls_apart"]) <= 1 for r in rows), rows
    assert not divergence.report(res, conv)["diverged"]
    free = replay(conv, "hermes", inf.apply(), keep_inputs=False, free=True)
    sims = [c.index for c in free.calls if c.compacted]
    real = [e["call"] for e in free.real_events]
    assert len(sims) == len(real) == 3
    assert all(abs(s - r) <= 1 for s, r in zip(sims, real, strict=True)), (sims, real)
    plain = replay(conv, "hermes", keep_inputs=False)
    assert plain.threshold == 150_000 and not any(c.compacted for c in plain.calls)


def test_hermes_evidence_and_the_rules_edges():
    """A synthetic chain: the window follows the compaction points (a 128k run infers 128,000), a record of the
    window in model_config wins, and a run that never compacted keeps the default unless it grew past it."""
    from compactscope.core.model.conversation import CompactionEvent, Conversation, MessageMeta
    from compactscope.core.layers.hermes import threshold

    def chain(fire_at: list[int], quiet_top: int, model_config=None):
        """Real contexts of user messages of ~2,000 tokens, each answered; a compacted one ends with the user
        message that pushed it over (the agent compacted before answering it)."""
        msgs, meta, segs, events = [], [], [0], []
        for i, top in enumerate(fire_at + [None]):
            target = top if top is not None else quiet_top
            if i:
                segs.append(len(msgs))
                events.append(CompactionEvent("hermes", len(msgs)))
            n = 0
            while True:
                msgs.append({"role": "user", "content": "x" * 8_000})
                meta.append(MessageMeta())
                n += 2_000
                if n >= target and top is not None:
                    break
                msgs.append({"role": "assistant", "content": "ok"})
                meta.append(MessageMeta())
                if n >= target:
                    break
        extra = {"session": {"model_config": json.dumps(model_config)}} if model_config else {}
        return Conversation(msgs, "openai", format="hermes-db", meta=meta, events=events, segments=segs,
                            extra=extra)
    conv = chain([96_000, 96_000], 30_000)
    ev = context_evidence(conv, strategies.get("hermes").token_estimator())
    assert len(ev.fired) == 2 and ev.below < ev.lowest_fired
    inf = strategies.infer_params("hermes", conv)
    assert inf.params["context_length"] == 128_000 and threshold({"context_length": 128_000}) == 96_000
    assert strategies.infer_params("hermes", chain([100_000], 1, {"context_length": 131_072})).params == \
        {"context_length": 131_072}
    quiet = strategies.infer_params("hermes", chain([], 40_000))
    assert not quiet.params and "agrees" in quiet.notes[0]
    grown = strategies.infer_params("hermes", chain([], 170_000))
    assert threshold({"context_length": grown.params["context_length"]}) > 170_000
    other = Conversation(conv.messages, "openai", format="claude-code", meta=conv.meta, events=conv.events,
                         segments=conv.segments)
    assert not strategies.infer_params("hermes", other).params      # only hermes-agent's own recordings


@pytest.mark.parametrize("kind,expect", [
    ("edit", {"threshold": 4000.0, "keep_tool_uses": 3, "keep_tool_inputs": True, "keep_thinking_turns": 1}),
    ("trim", {"threshold": 4000.0, "preserve": 0.5}),
    ("summary", {"threshold": 4000.0})])
def test_inspect_settings_read_from_the_log(corpus, kind, expect):
    """react()'s compaction as the log's plan records it; the replay with only these reproduces every real
    threshold compaction at its call (both samples, both the .eval and the .json)."""
    for suffix in ("eval", "json"):
        for conv in load(corpus / "inspect_ai" / f"react-compaction-{kind}.{suffix}").conversations:
            inf, res = _replay_inferred(conv, f"inspect_{kind}")
            assert {k: inf.params[k] for k in expect} == expect
            assert "the log's plan" in inf.reasons["threshold"]
            forced = min((e["call"] for e in res.real_events if e["trigger"] == "forced"), default=len(res.calls))
            for b in res.boundary_report():
                if b["real_call"] < forced:
                    assert b["simulated_call"] == b["real_call"], (kind, suffix, b)


def test_inspect_threshold_from_the_events_when_the_plan_says_nothing(corpus):
    conv = load(corpus / "inspect_ai" / "react-compaction-trim.json").main
    del conv.extra["compaction_config"]
    inf = strategies.infer_params("inspect_trim", conv)
    assert inf.params == {"threshold": 4000.0}
    assert "fired at 4,164 tokens" in inf.reasons["threshold"]
    other = strategies.infer_params("inspect_edit", load(corpus / "inspect_ai" / "react-compaction-trim.json").main)
    assert other.params == {"threshold": 4000.0, "memory": True}       # shared settings only, and it says so
    assert "the log ran CompactionTrim" in other.reasons["threshold"]
    none = load(corpus / "inspect_ai" / "2025-05-12T20-27-36-04-00_browser.json").main
    assert not strategies.infer_params("inspect_edit", none)


def test_cli_replay_says_what_it_inferred(corpus, tmp_path):
    out = _cli("replay", corpus / "hermes-agent" / "rotation" / "state.db", "--strategy", "hermes", "--json",
               "--workdir", tmp_path)
    d = json.loads(out.stdout)
    assert d["inferred"]["params"] == {"context_length": 64000}
    # following reality: each of the 3 real compactions paired within one call; free-running: 3 of its own
    assert d["mode"] == "follow" and len(d["divergence"]["compactions"]) == 3
    assert all(abs(r["calls_apart"]) <= 1 for r in d["divergence"]["compactions"])
    free = json.loads(_cli("replay", corpus / "hermes-agent" / "rotation" / "state.db", "--strategy", "hermes",
                           "--json", "--workdir", tmp_path, "--free").stdout)
    assert free["mode"] == "free" and free["totals"]["compactions"] == 3
    snap = _cli("replay", corpus / "hermes-agent" / "rotation" / "sessions" /
                "session_20261130_142405_9aacdb.json", "--strategy", "hermes", "--workdir", tmp_path)
    assert "diverge" not in snap.stdout and "not in the file" not in snap.stdout
