"""Strategy features (core/strategies/base.py) and the engine around them: the typed threshold and
its drag, variants run beside the main run, the cross-check, the iteration budget, layer roles and
colours, progress per layer, Engine.fork and cancelled runs. Pure core: no Qt."""
from __future__ import annotations

import threading


from compactscope.core import strategies
from compactscope.core.layers.base import MICRO, SNIP, SUMMARY, LayerProgress
from compactscope.core.pipeline.engine import Engine, run_with_variants
from compactscope.core.replay import replay, threshold_for
from compactscope.core.strategies.base import (DIFFER, MATCH, SKIPPED, SIZE, TOKENS, CrossCheck, Param, Strategy,
                                               Threshold, Verdict)
from compactscope.core.summarizers import CachedSummarizer, make_summarizer
from helpers import BlockingSummarizer
from compactscope.core.files.workspace import Workspace


def conv(n_pairs: int = 40, size: int = 500) -> list:
    out = [{"role": "user", "content": "start"}]
    for k in range(n_pairs):
        out.append({"role": "assistant", "content": [{"type": "tool_use", "id": f"t{k}", "name": "bash",
                                                      "input": {"command": f"echo {k}"}}]})
        out.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{k}",
                                                 "content": "x" * size}]})
    return out


# ------------------------------------------------------------------ threshold
def test_threshold_is_typed_with_its_value_and_unit():
    s08, cc, hermes = (strategies.get(n) for n in ("s08", "claude_code", "hermes"))
    assert s08.threshold.unit == SIZE and s08.threshold.param == "context_limit" and s08.threshold.movable
    assert s08.threshold_value({"context_limit": 1234}) == 1234.0
    p = cc.defaults()
    assert cc.threshold.unit == TOKENS and not cc.threshold.movable and cc.threshold.label == "compaction threshold"
    assert cc.threshold_value(p) == p["window"] - min(p["max_output"], p["summary_max_output"]) - p["buffer"]
    assert cc.threshold_value(dict(p, window=1_000_000)) == 1_000_000 - 20_000 - 13_000
    assert hermes.threshold.unit == TOKENS and hermes.threshold_value(hermes.defaults()) == 150_000
    assert threshold_for(cc, p) == (167_000.0, TOKENS)          # the replay helper reads the same feature
    # the old shorthand still builds the feature
    st = Strategy("x", "x", "x", s08.layers, s08.params, threshold_param="max_bytes", threshold_unit=SIZE)
    assert st.threshold == Threshold(SIZE, "max_bytes") and st.threshold_value({"max_bytes": 7}) == 7.0


def test_a_drag_maps_back_to_parameters():
    s08 = strategies.get("s08")
    base = s08.resolve({})
    assert s08.drag_threshold(123_456.7, base) == dict(base, context_limit=123_457)
    assert s08.drag_threshold(-50.0, base)["context_limit"] == 0           # clamped to the parameter's minimum
    cc = strategies.get("claude_code")
    assert cc.drag_threshold(1.0, cc.resolve({})) == cc.resolve({})         # derived and not draggable: unchanged
    # a derived threshold with to_params is draggable: the drag lands on the parameter it names
    window = Param("window", 100, "w", minimum=1)
    buffer = Param("buffer", 10, "b", minimum=0)
    st = Strategy("d", "d", "d", s08.layers, (window, buffer),
                  threshold=Threshold(TOKENS, fn=lambda p: p["window"] - p["buffer"],
                                      to_params=lambda v, p: {"buffer": max(0, int(p["window"] - v))}))
    assert st.threshold.movable
    new = st.drag_threshold(70.0, st.resolve({}))
    assert new == {"window": 100, "buffer": 30} and st.threshold_value(new) == 70.0


# ------------------------------------------------------------------ variants
def test_variants_run_beside_the_main_run_up_to_their_layer(tmp_path):
    s08 = strategies.get("s08")
    (readme,) = s08.variants
    assert readme.until_role == SNIP and readme.params == {"variant": "readme"}
    assert s08.layers_until(SNIP) == ["tool_result_budget", "snip_compact"]
    assert s08.companion_variants(s08.resolve({})) == [readme]
    assert s08.companion_variants(s08.resolve({"variant": "readme"})) == []     # already the variant
    seen = []
    eng = Engine(s08, {}, workspace=Workspace(tmp_path), summarizer=make_summarizer("offline"))
    res = run_with_variants(eng, conv(), progress=seen.append)
    assert [s.layer for s in res.trace.steps] == s08.layer_names
    run = res.variant("readme")
    assert [s.layer for s in run.trace.steps] == ["tool_result_budget", "snip_compact"]
    assert run.trace.params["variant"] == "readme" and res.trace.params["variant"] == "guarded"
    assert run.step is run.trace.steps[1] and run.step.role == SNIP and run.error is None
    assert seen == [f"{k + 1}/4 {layer.label}" + (" (LLM)" if layer.llm else "") for k, layer in enumerate(s08.layers)] \
        + [readme.title]
    assert eng.params["variant"] == "guarded"                     # the variant ran on a fork
    # a strategy without variants runs only the main trace
    cc = run_with_variants(Engine("claude_code", {}, workspace=Workspace(tmp_path / "cc")), conv(10))
    assert cc.variants == [] and cc.trace.strategy == "claude_code"


def test_every_strategy_runs_through_the_job(tmp_path):
    for name in strategies.available():
        res = run_with_variants(Engine(name, {}, workspace=Workspace(tmp_path / name)), conv(10))
        assert res.trace.strategy == name and not res.cancelled
        assert [s.layer for s in res.trace.steps if s.layer != "convert"] == strategies.get(name).layer_names


# ------------------------------------------------------------------ roles and colours
def test_layer_roles_and_colours():
    s08, cc, hermes = (strategies.get(n) for n in ("s08", "claude_code", "hermes"))
    assert [layer.role for layer in s08.layers] == ["budget", SNIP, MICRO, SUMMARY]
    assert [layer.role for layer in cc.layers] == ["budget", SNIP, MICRO, SUMMARY]
    assert hermes.layer("hermes_boundaries").role == "boundaries" and hermes.layer("hermes_summarize").role == SUMMARY
    for st in (s08, cc, hermes):
        colors = st.layer_colors()
        assert list(colors) == [layer.name for layer in st.layers + st.extra_layers]
        shown = [colors[n] for n in st.layer_names]
        assert len(set(shown)) == len(shown), (st.name, colors)        # every pipeline layer its own colour
    # the same role has the same colour in every strategy
    assert s08.layer_colors()["micro_compact"] == cc.layer_colors()["time_micro_compact"]
    assert s08.layer_colors()["compact_history"] == hermes.layer_colors()["hermes_summarize"]
    tr = Engine("s08", {}).run(conv(30))
    assert [s.role for s in tr.steps] == [layer.role for layer in s08.layers]


# ------------------------------------------------------------------ cross-check
def test_cross_check_answers_a_typed_verdict():
    from compactscope.core.oracles import hermes_agent as hermes_oracle
    hermes = strategies.get("hermes")
    assert strategies.get("s08").cross_check is None and hermes.cross_check.name == "hermes-agent 0.19.0"
    msgs = conv(30, 3000)
    v = hermes.cross_check.run(Engine("hermes", {"trigger": "always"}).run(msgs))
    if hermes_oracle.module() is None:
        assert v == Verdict(SKIPPED, hermes_oracle.ABSENT)
    else:
        assert v.status == MATCH and v.ok and v.text.startswith(hermes_oracle.MATCH)
        quiet = hermes.cross_check.run(Engine("hermes", {}).run(msgs[:5]))        # nothing compacted
        assert quiet.status == SKIPPED and not quiet.ok and not quiet.failed
    boom = CrossCheck("broken", lambda tr: 1 / 0)
    v = boom.run(None)
    assert v.status == DIFFER and v.failed and "ZeroDivisionError" in v.text


# ------------------------------------------------------------------ iteration budget
def test_iteration_budget_comes_from_the_strategy():
    msgs = [{"role": "user", "content": "go"}]
    for k in range(5):
        msgs += [{"role": "assistant", "content": [{"type": "tool_use", "id": f"t{k}", "name": "a", "input": {}}]},
                 {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{k}", "content": "r"}]}]
    msgs.append({"role": "assistant", "content": "done"})
    s08 = strategies.get("s08")
    # only hermes' agent loop has an iteration cap (seed 002); s08's loop and Claude Code's have none
    assert strategies.get("hermes").iteration_budget.cap == 90 and s08.iteration_budget is None
    assert replay(msgs, "hermes", {}).iterations()[-1]["used"] == 6
    res = replay(msgs, "s08", {})
    assert res.iteration_cap is None and res.iterations()[-1]["used"] is None
    assert replay(msgs, "s08", {}, iteration_cap=4).iteration_totals()["iteration_cap_reached_at"] == 4
    assert res.layer_colors == s08.layer_colors()


# ------------------------------------------------------------------ progress, fork, cancel
def test_progress_is_reported_before_every_layer():
    seen: list[LayerProgress] = []
    tr = Engine("s08", {}).run(conv(30), progress=seen.append)
    assert [(p.index, p.total, p.layer.name) for p in seen] == [(k + 1, 4, s.layer) for k, s in enumerate(tr.steps)]
    assert seen[3].text == "4/4 L4 summary (LLM)"


def test_fork_shares_caches_but_never_state(tmp_path):
    eng = Engine("s08", {"context_limit": 1000}, workspace=Workspace(tmp_path), summarizer=make_summarizer("offline"))
    eng.state = {"consecutive_failures": 2}
    fork = eng.fork(params={"context_limit": 5})
    assert fork.workspace is eng.workspace and fork.summarizer is eng.summarizer and fork.meter is eng.meter
    assert fork.params["context_limit"] == 5 and eng.params["context_limit"] == 1000
    assert fork.state == eng.state and fork.state is not eng.state
    fork.run(conv(30))
    assert eng.state == {"consecutive_failures": 2}            # running the fork changed nothing here
    other = eng.fork(strategy="hermes")
    assert other.strategy.name == "hermes" and other.params == strategies.get("hermes").resolve({})
    assert type(other.tokens).__name__ == "HermesTokens"


def test_rerun_of_a_replayed_call_leaves_the_replay_engine_alone(tmp_path):
    res = replay(conv(40, 2000), "s08", {"context_limit": 20_000, "keep_recent": 100},
                 workspace=Workspace(tmp_path),
                 summarizer=make_summarizer("offline"))
    eng = res.engine
    state, tokens = dict(eng.state), eng.tokens
    i = next(c.index for c in res.calls if c.summaries)
    tr = res.rerun(i)
    assert len(tr.input) == res.calls[i].messages_before and len(tr.output) == res.calls[i].messages_after
    assert eng.state == state and eng.tokens is tokens
    # two reruns side by side in threads give the same traces as one after the other
    out = {}
    ts = [threading.Thread(target=lambda k=k: out.__setitem__(k, res.rerun(k))) for k in (i, i + 1)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert [len(out[k].output) for k in (i, i + 1)] == [res.calls[k].messages_after for k in (i, i + 1)]


def test_a_cancelled_run_stops_and_runs_no_variant(tmp_path):
    cancel = threading.Event()
    cancel.set()
    eng = Engine("s08", {}, workspace=Workspace(tmp_path))
    res = run_with_variants(eng, conv(), cancel=cancel)
    assert res.cancelled and res.trace.steps == [] and res.variants == []
    # cancelled during the summary: the summarizer stops, no later layer or variant runs
    blocking = BlockingSummarizer()
    cancel = threading.Event()
    eng = Engine("s08", {"context_limit": 100}, workspace=Workspace(tmp_path / "b"),
                 summarizer=CachedSummarizer(blocking))
    box = {}
    t = threading.Thread(target=lambda: box.setdefault("r", run_with_variants(eng, conv(), cancel=cancel)))
    t.start()
    assert blocking.entered.wait(20)
    cancel.set()
    t.join(20)
    assert not t.is_alive()
    r = box["r"]
    assert r.cancelled and r.variants == [] and r.trace.steps[-1].error
    # a replay stops between calls
    cancel = threading.Event()
    calls = []

    def progress(done, total):
        calls.append(done)
        cancel.set()
    res = replay(conv(120, 200), "s08", {}, cancel=cancel, progress=progress)
    assert calls == [1] and len(res.calls) == 1
