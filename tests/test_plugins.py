"""Plugins: a user's compactor (a .py file or a module) runs as a strategy in the engine, the CLI
and replay; what a plain function did is inferred; a broken plugin is an error naming it, never
a crash; the caller's messages are never mutated."""
import copy
import json
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from compactscope.core import strategies
from compactscope.core.pipeline.align import align
from compactscope.core.analysis.blackbox import infer_output
from compactscope.core.pipeline.engine import Engine
from compactscope.core.replay import compare, parse_run_spec, replay
from compactscope.core.strategies.plugin import PluginError, split_params
from compactscope.core.summarizers import FixedSummarizer
from compactscope.core.pipeline.trace import NOTE, REPLACE, SNIP, SUMMARY

from helpers import a, tr, tu, u, worked_example

ROOT = Path(__file__).resolve().parent.parent
PLUGINS = ROOT / "assets" / "plugins"


def write(tmp_path, text, name="mine.py"):
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return p


def long_conv(n=30, size=400):
    msgs = [u("the task")]
    for k in range(n):
        msgs += [tu(f"t{k}"), tr(f"t{k}", content=f"result {k} " + "x" * size)]
    msgs.append(a("done"))
    return msgs


# ------------------------------------------------------------------ inference
def test_infer_kept_changed_removed_inserted_and_summary():
    inp = [u("task"), a("one"), tu("t1"), tr("t1", content="y" * 500), u("more"), a("two"), u("last")]
    summary = {"role": "user", "content": "Summary: " + "s" * 300}
    placeholder_result = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                                       "content": "[cleared]"}]}
    # a fresh copy of message 0 (equal: shared), the summary in place of 1..2, message 3 changed, 4 kept
    out = [copy.deepcopy(inp[0]), summary, placeholder_result, inp[4], {"role": "assistant", "content": "note"},
           inp[6]]
    lo = infer_output(inp, out, who="f")
    assert lo.origin == [0, None, 3, 4, None, 6]
    assert lo.messages[0] is inp[0] and lo.messages[3] is inp[4]      # unchanged ones are the input objects
    kinds = [e.kind for e in lo.edits]
    assert SUMMARY in kinds and REPLACE in kinds and SNIP in kinds
    summ = next(e for e in lo.edits if e.kind == SUMMARY)
    assert (summ.start, summ.end, summ.out) == (1, 3, 1)
    rep = next(e for e in lo.edits if e.kind == REPLACE)
    assert rep.message == 3 and rep.block == 0 and rep.tool_id == "t1" and rep.old_len == 500
    snip = next(e for e in lo.edits if e.kind == SNIP)
    assert (snip.start, snip.end) == (5, 6)                          # message 5 removed, the note stands there
    assert lo.summary and lo.summary["inferred"] and lo.summary["text"].startswith("Summary:")
    assert lo.vars["inferred"]["removed"] == 3 and lo.vars["inferred"]["changed"] == 1


def test_infer_unchanged_returns_the_input_itself():
    inp = worked_example()
    lo = infer_output(inp, copy.deepcopy(inp))
    assert lo.messages is inp and lo.origin == list(range(len(inp))) and not lo.edits


def test_infer_duplicates_and_reorder_are_noted():
    inp = [u("a"), a("b"), u("c")]
    lo = infer_output(inp, [inp[2], inp[0], inp[0]])
    assert lo.origin == [2, 0, 0]
    texts = " ".join(e.text for e in lo.edits if e.kind == NOTE)
    assert "appears again" in texts and "order" in texts


def test_infer_short_placeholder_is_a_snip_not_a_summary():
    inp = [u(str(i)) if i % 2 == 0 else a(str(i)) for i in range(10)]
    out = inp[:1] + [u("[8 messages removed]")] + inp[9:]
    lo = infer_output(inp, out)
    assert [e.kind for e in lo.edits] == [SNIP] and lo.edits[0].out == 1 and lo.summary is None
    rows = align(_step(inp, lo))
    assert sum(r.kind == "removed" for r in rows) == 8 and sum(r.kind == "inserted" for r in rows) == 1


def test_infer_pairs_ten_thousand_rewritten_messages():
    """Every message rewritten: each is still paired with its own input (bench_plugins.py times it)."""
    inp = [u(f"message {i} " + "z" * 50) if i % 2 == 0 else a(f"reply {i}") for i in range(10_000)]
    out = [{**m, "content": m["content"] + " (edited)"} if isinstance(m["content"], str) else m for m in inp]
    lo = infer_output(inp, out)
    assert lo.origin == list(range(10_000))
    assert lo.vars["inferred"]["changed"] == 5_000


def _step(inp, lo):
    from compactscope.core.pipeline.trace import Step
    return Step("x", inp, lo.messages, lo.origin, lo.edits, lo.vars, lo.note, 0, 0, 0, 0)


# ------------------------------------------------------------------ plain functions
def test_plain_function_plugin_runs_with_params_from_its_signature(tmp_path):
    p = write(tmp_path, '''
        from typing import Annotated, Literal

        def compact(messages, keep: Annotated[int, "messages kept", {"minimum": 1}] = 4,
                    mode: Literal["tail", "head"] = "tail", ratio: float = 1, label=None):
            """Keep a few messages.

            Args:
                label: an optional label
            """
            return messages[:1] + messages[-keep:] if mode == "tail" else messages[:keep]
        ''')
    st = strategies.get(f"{p}:compact")
    assert st.name == f"{p.resolve()}:compact" and strategies.source(st) == f"file {p.resolve()}"
    params = {q.name: q for q in st.params}
    assert params["keep"].default == 4 and params["keep"].help == "messages kept" and params["keep"].minimum == 1
    assert params["mode"].choices == ("tail", "head")
    assert params["ratio"].default == 1.0 and isinstance(params["ratio"].default, float)
    assert params["label"].help == "an optional label"
    assert st.resolve({"keep": "6"})["keep"] == 6
    with pytest.raises(ValueError):
        st.resolve({"keep": "0"})
    with pytest.raises(ValueError):
        st.resolve({"mode": "middle"})
    msgs = worked_example()
    before = copy.deepcopy(msgs)
    trace = Engine(st, {"keep": 3}).run(msgs)
    assert msgs == before
    out = trace.output
    assert len(out) == 4 and out[0] is msgs[0] and all(x is y for x, y in zip(out[1:], msgs[-3:]))
    step = trace.steps[-1]
    assert step.origin == [0, 9, 10, 11] and step.changed
    assert any(e.kind == SNIP and (e.start, e.end) == (1, 9) for e in step.edits)
    assert step.vars["params"] == {"keep": 3, "mode": "tail", "ratio": 1.0, "label": None}


def test_a_plugin_that_mutates_its_input_never_touches_the_callers_messages(tmp_path):
    p = write(tmp_path, '''
        def compact(messages):
            for m in messages:
                if isinstance(m["content"], list):
                    for b in m["content"]:
                        if b.get("type") == "tool_result":
                            b["content"] = "[cleared]"
            del messages[1]
            return messages
        ''')
    msgs = worked_example()
    before = copy.deepcopy(msgs)
    trace = Engine(f"{p}:compact").run(msgs)
    assert msgs == before                                        # the caller's list and dicts are intact
    step = trace.steps[-1]
    assert step.origin[0] == 0 and 1 not in step.origin
    assert sum(e.kind == REPLACE and e.tool_id in ("t2", "t6") for e in step.edits) == 2
    assert any(e.kind == NOTE and "in place" in e.text for e in step.edits)
    assert step.messages[0] is msgs[0]                           # unchanged messages are shared


@pytest.mark.parametrize("body,expect", [
    ("raise ValueError('bad input')", "mine.py:compact raised ValueError: bad input (line 3 of mine.py)"),
    ("return None", "mine.py:compact returned nothing (None), not a list of messages"),
    ("return 'text'", "mine.py:compact returned a str, not a list of messages"),
    ("return [1, 2]", "mine.py:compact returned a list whose item 0 is not a message"),
    ("return [{'content': 'x'}]", "whose item 0 is not a message (a dict with a 'role')"),
])
def test_a_failing_plugin_is_an_error_naming_it(tmp_path, body, expect):
    p = write(tmp_path, f'''
        def compact(messages):
            {body}
        ''')
    msgs = worked_example()
    trace = Engine(f"{p}:compact").run(msgs)
    step = trace.steps[-1]
    assert expect in step.error
    assert step.messages is msgs and not step.changed            # messages kept


def test_async_plugin_and_openai_dialect_declared(tmp_path):
    p = write(tmp_path, '''
        import asyncio

        async def compact(messages, keep: int = 2):
            await asyncio.sleep(0)
            assert all("tool_calls" in m or m["role"] != "assistant" or isinstance(m["content"], (str, type(None)))
                       for m in messages)
            return [m for m in messages if m["role"] != "tool"][-keep:]
        compact.dialect = "openai"
        ''')
    st = strategies.get(f"{p}:compact")
    assert st.dialect == "openai"
    trace = Engine(st).run(worked_example())
    assert [s.layer for s in trace.steps] == ["convert", "compact"]
    assert trace.steps[-1].dialect == "openai" and len(trace.output) == 2


def test_undeclared_dialect_gets_the_conversations_own(tmp_path):
    p = write(tmp_path, '''
        SEEN = []
        def compact(messages):
            SEEN.append(messages[1]["role"])
            return messages
        ''')
    st = strategies.get(f"{p}:compact")
    assert st.dialect == "any"
    oa = [{"role": "system", "content": "s"}, {"role": "user", "content": "hi"}]
    trace = Engine(st).run(oa)
    assert [s.layer for s in trace.steps] == ["compact"]                  # no conversion
    trace = Engine(st).run(worked_example())
    assert [s.layer for s in trace.steps] == ["compact"]


def test_an_undeclared_plugin_that_returns_the_other_dialect_is_detected(tmp_path):
    p = write(tmp_path, '''
        from compactscope.core.model.messages import to_openai
        def compact(messages):
            return to_openai(messages).messages
        ''')
    trace = Engine(f"{p}:compact").run(worked_example())
    step = trace.steps[-1]
    assert step.dialect == "openai" and trace.dialect == "openai"
    assert not [f for f in step.findings if f.severity == "error"]        # checked as OpenAI chat


def test_cancel_stops_an_async_plugin_and_abandons_a_hanging_one(tmp_path, monkeypatch):
    from compactscope.core.strategies import plugin
    monkeypatch.setattr(plugin, "CANCEL_GRACE", 0.3)
    p = write(tmp_path, '''
        import asyncio, threading, time
        STOP = threading.Event()
        async def slow(messages):
            await asyncio.sleep(60)
            return messages
        def hang(messages):
            STOP.wait(60)
            return messages
        ''')
    for name, expect in (("slow", "was cancelled"), ("hang", "did not stop within")):
        cancel = threading.Event()
        threading.Timer(0.2, cancel.set).start()
        eng = Engine(f"{p}:{name}")
        # the layer is called directly: the engine would not start a layer once cancel is set
        out = eng.strategy.layers[0].fn(worked_example(), eng.context(cancel=cancel))
        # an error, not the messages the plugin returns after its 60 s: it was not waited for
        assert expect in out.error and f"mine.py:{name}" in out.error
    sys.modules[plugin._module_name(str(p.resolve()))].STOP.set()


def test_summarize_keyword_uses_the_engines_summarizer(tmp_path):
    p = write(tmp_path, '''
        def compact(messages, keep: int = 2, *, summarize):
            text = summarize(messages[1:-keep])
            return messages[:1] + [{"role": "user", "content": "Earlier: " + text}] + messages[-keep:]
        ''')
    msgs = long_conv(5)
    trace = Engine(f"{p}:compact", summarizer=FixedSummarizer("what happened")).run(msgs)
    step = trace.steps[-1]
    assert step.summary["text"] == "what happened" and step.summary["calls"] == 1
    assert step.messages[1]["content"] == "Earlier: what happened"
    assert any(e.kind == SUMMARY and e.out == 1 for e in step.edits)
    assert strategies.get(f"{p}:compact").layers[0].llm


# ------------------------------------------------------------------ loading errors and specs
@pytest.mark.parametrize("text,spec,expect", [
    ("def compact(:\n", "compact", "line 1: SyntaxError"),
    ("import nonexistent_module_xyz\n", "compact", "importing it raised ModuleNotFoundError"),
    ("def compact(messages):\n    return messages\n", "other", "has no 'other' (it defines: compact)"),
    ("def compact(messages, n):\n    return messages\n", "compact", "parameter 'n' needs a default"),
    ("def compact():\n    return []\n", "compact", "takes the message list as its first argument"),
    ("X = 3\n", "X", "is an int: a compactor is a function"),
])
def test_load_errors_name_the_file(tmp_path, text, spec, expect):
    p = write(tmp_path, text)
    with pytest.raises(PluginError) as e:
        strategies.get(f"{p}:{spec}")
    assert expect in str(e.value) and "mine.py" in str(e.value)


def test_unknown_names_and_missing_files():
    with pytest.raises(KeyError, match="unknown strategy 'nope'.*PATH.py:NAME"):
        strategies.get("nope")
    with pytest.raises(PluginError, match="no such plugin file"):
        strategies.get("/nonexistent/dir/x.py:compact")
    with pytest.raises(PluginError, match="no module named"):
        strategies.get("no_such_module_abc:compact")


def test_a_file_is_reloaded_when_it_changes(tmp_path):
    p = write(tmp_path, "def compact(messages, keep: int = 1):\n    return messages[-keep:]\n")
    assert strategies.get(str(p)).params[0].default == 1
    time.sleep(0.01)
    p.write_text("def compact(messages, keep: int = 7):\n    return messages[-keep:]\n")
    assert strategies.get(str(p)).params[0].default == 7


def test_module_spec_and_a_strategy_object(tmp_path, monkeypatch):
    pkg = tmp_path / "my_compactors"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(textwrap.dedent('''
        from compactscope.core.strategies import get
        S08_COPY = get("s08")
        def compact(messages):
            return messages
        '''))
    monkeypatch.syspath_prepend(str(tmp_path))
    st = strategies.get("my_compactors:S08_COPY")
    assert st.name == "my_compactors:S08_COPY" and st.layer_names == strategies.get("s08").layer_names
    assert strategies.source(st) == "module my_compactors"
    assert strategies.get("my_compactors:compact").layers[0].name == "compact"


def test_entry_point_strategies_are_listed_with_their_package(tmp_path, monkeypatch):
    (tmp_path / "acme_compact.py").write_text("def trim(messages, keep: int = 3):\n    return messages[-keep:]\n")
    dist = tmp_path / "acme_compact-1.2.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-compact\nVersion: 1.2\n")
    (dist / "entry_points.txt").write_text("[compactscope.strategies]\nacme_trim = acme_compact:trim\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert "acme_trim" in strategies.available()
    st = strategies.get("acme_trim")
    assert st.name == "acme_trim" and st.params[0].name == "keep"
    assert strategies.source("acme_trim") == "entry point acme_trim = acme_compact:trim (acme-compact 1.2)"
    out = subprocess.run([sys.executable, "-m", "compactscope", "strategies", "--json"], capture_output=True,
                         text=True, env={**__import__("os").environ, "PYTHONPATH": str(tmp_path)}, timeout=60)
    listed = {s["name"]: s for s in json.loads(out.stdout)}
    assert listed["acme_trim"]["source"].startswith("entry point") and listed["s08"]["source"] == "built-in"
    strategies._cache.pop("acme_trim", None)


def test_split_params_and_run_specs():
    assert split_params("s08:context_limit=5") == ("s08", "context_limit=5")
    assert split_params("x/y.py:compact:keep=3,mode=a") == ("x/y.py:compact", "keep=3,mode=a")
    assert split_params("x/y.py:keep=3") == ("x/y.py", "keep=3")
    assert split_params("pkg.mod:NAME") == ("pkg.mod:NAME", "")
    assert split_params("hermes:focus_topic=a:b") == ("hermes", "focus_topic=a:b")
    assert split_params("C:\\dir\\p.py:compact:keep=1") == ("C:\\dir\\p.py:compact", "keep=1")
    assert parse_run_spec("mine=x/y.py:compact:keep=3") == ("mine", "x/y.py:compact", {"keep": "3"})


# ------------------------------------------------------------------ the bundled examples
def test_bundled_examples_run_step_and_replay(corpus):
    from compactscope.core.loaders import load
    conv = load(corpus / "claude-code-viewer" / "fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl").conversations[0]
    msgs = conv.messages
    snapshot = copy.deepcopy(msgs)
    multi = strategies.get(str(PLUGINS / "three_layers.py"))
    assert multi.layer_names == ["clear_old_tool_output", "drop_old_reasoning", "summarize_middle"]
    assert multi.threshold_param == "max_tokens" and multi.dialect == "openai"
    trace = Engine(multi, {"max_tokens": 2000}, summarizer=FixedSummarizer("S")).run(msgs, conversation=conv)
    assert [s.layer for s in trace.steps] == ["convert"] + multi.layer_names
    assert trace.step("summarize_middle").summary["text"] == "S" and not trace.final_findings
    assert any(e.kind == REPLACE for e in trace.step("clear_old_tool_output").edits)
    keep = strategies.get(str(PLUGINS / "keep_recent.py"))
    trace = Engine(keep, {"keep": 5}).run(msgs, conversation=conv)
    assert len(trace.output) <= 7 and not [f for f in trace.final_findings if f.severity == "error"]
    res = replay(conv, keep, {"keep": 6})
    assert res.calls and any(c.dropped for c in res.calls)
    fit = strategies.get(str(PLUGINS / "async_budget.py"))
    assert Engine(fit, {"budget": 100}).run(msgs, conversation=conv).steps[-1].error is None
    results = compare(conv, [("cc", "claude_code", {}), ("mine", str(PLUGINS / "keep_recent.py"), {"keep": 6})])
    assert [r.label for r in results] == ["cc", "mine"]
    assert msgs == snapshot


def test_cli_run_check_replay_strategies_with_a_plugin(tmp_path, examples):
    p = write(tmp_path, '''
        def compact(messages, keep: int = 3):
            """Keep the last few messages."""
            return messages[:1] + messages[-keep:]
        ''')
    f = str(examples / "long_session.json")
    def run(*a):
        return subprocess.run([sys.executable, "-m", "compactscope", *a], capture_output=True, text=True,
                              timeout=120)
    r = run("run", f, "--strategy", f"{p}:compact", "--set", "keep=4", "--json", "--no-messages")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["params"] == {"keep": 4} and d["steps"][-1]["layer"] == "compact"
    r = run("check", f, "--strategy", str(p), "--json")
    assert r.returncode in (0, 1) and json.loads(r.stdout)["strategy"].endswith("mine.py:compact")
    r = run("replay", f, "--strategy", "s08", "--compare", f"mine={p}:compact:keep=4", "--max-calls", "20")
    assert r.returncode == 0, r.stderr and "mine" in r.stdout
    r = run("strategies", str(p))
    assert "keep = 3" in r.stdout and f"from: file {p.resolve()}" in r.stdout
    r = run("run", f, "--strategy", f"{p}:nothere")
    assert r.returncode == 2 and "has no 'nothere'" in r.stderr and "Traceback" not in r.stderr


def test_the_fleet_replays_a_plugin_and_an_inspect_strategy_in_worker_processes(corpus, tmp_path):
    """"Our compactor against Claude Code's on all our sessions": the fleet's worker processes resolve
    the plugin spec through the same registry."""
    pytest.importorskip("pyarrow")
    from compactscope.core.fleet import make_config
    from compactscope.core.fleet.engines import LocalPool
    from compactscope.core.fleet.model import FleetData
    from compactscope.core.fleet.run import run_fleet
    p = write(tmp_path, "def compact(messages, keep: int = 30):\n    return messages[:1] + messages[-keep:]\n")
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    import shutil
    shutil.copy(corpus / "claude-code-viewer" / "fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl", sessions)
    cfg = make_config("claude_code", {}, [f"mine={p}:compact:keep=4", "trim=inspect_trim:threshold=2000"])
    run_fleet([sessions], cfg, tmp_path / "r.parquet", engine=LocalPool(1))
    import pyarrow.parquet as pq
    row = pq.read_table(tmp_path / "r.parquet").to_pylist()[0]
    assert row["error"] is None and row["cmp_mine_error"] is None and row["cmp_trim_error"] is None
    assert 0 < row["cmp_mine_peak_tokens"] < row["peak_context_tokens"]
    assert row["cmp_trim_threshold"] == 2000 and row["cmp_trim_tokens_sent"] < row["sim_tokens_sent"]
    assert FleetData.load(tmp_path / "r.parquet").paths
