"""Fuzzing (issue 13): corpus-like seeds of every input format, mutated, through every loader, the checker,
every strategy (defaults and aggressive parameters), ``run --json`` and ``replay``, with zero failures. A
few hundred inputs here (some tens of seconds); bench/bench_fuzz.py runs 100,000 and more.

Also the properties the campaign rests on: the load's normalisation gives every message the layers' shape
(and is idempotent), lenient parsing reads what only a lenient parser takes (and any nesting), and what
Compactscope writes is always strict JSON."""
from __future__ import annotations

import json
import math
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fuzzlib
from compactscope.core.files.jsonio import loads_deep, loads_lenient
from compactscope.core.loaders import load
from compactscope.core.files.safeio import DEEP_PLACEHOLDER, MAX_DEPTH, dumps
from compactscope.core.model.shape import fix_message, well_shaped

SEEDS = fuzzlib.builtin_seeds()


@pytest.fixture(scope="module")
def runner(tmp_path_factory):
    return fuzzlib.Runner(tmp_path_factory.mktemp("fuzz"), time_limit=None, replay_calls=4)   # (bench_fuzz times them)


def _report(stats: dict) -> str:
    return "\n".join(f"{g['count']}x {k} (seed {g['seed']}): {g['error']}\n{g['detail'][-1500:]}"
                     for k, g in stats["groups"].items())


def test_a_campaign_over_every_format_has_no_failure(tmp_path, runner, corpus):
    """Every built-in seed and the corpus pieces, mutated; through everything, the CLI included."""
    seeds = SEEDS + fuzzlib.corpus_seeds(corpus)
    stats = fuzzlib.campaign(5 * len(seeds), 13, tmp_path, seeds=seeds, runner=runner)
    assert stats["failures"] == 0, _report(stats)
    assert stats["inputs"] == 5 * len(seeds) and stats["loaded"] >= len(seeds) and stats["runs"] > 100


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(seed=st.sampled_from(SEEDS), rnd=st.randoms(use_true_random=False))
def test_any_mutation_of_any_seed(tmp_path_factory, runner, seed, rnd):
    folder = tmp_path_factory.mktemp("in")
    path = fuzzlib.make_input(seed, rnd, folder)
    runner.cli = False                     # (the campaign above covers the CLI)
    out = runner.run(path, rnd)
    assert not out.failures, "\n".join(f"{f.stage}: {f.error} at {f.where}\n{f.detail[-1500:]}" for f in out.failures)


def test_every_seed_loads_unmutated(tmp_path):
    """The seeds themselves are real inputs of their formats (a fuzzer over inputs that never load would
    prove little)."""
    for s in SEEDS:
        p = fuzzlib.make_input(s, random.Random(0), tmp_path, s.name, mutate=False)
        r = load(p)
        assert r.main.messages, s.name


_ODD_TEXT_KEYS = {"text", "content", "thinking"}


def _with_odd_values(v, odd):
    """``v`` with ``odd(text)`` for every string under a text-like key, and an extra field holding NaN,
    1e400 and a >64-bit integer in every object: values a real file may hold, that only a lenient reader
    takes, and that never change what is a message."""
    if isinstance(v, str) and v.startswith("{"):          # a request body kept as its JSON text
        return fuzzlib._Raw(json.dumps(fuzzlib._dumps(_with_odd_values(json.loads(v), odd))))
    if isinstance(v, dict):
        out = {k: (odd(x) if k in _ODD_TEXT_KEYS and isinstance(x, str) and not x.startswith("attachment:")
                   else _with_odd_values(x, odd)) for k, x in v.items()}
        out["x_odd"] = fuzzlib._Raw('[NaN, 1e400, 123456789012345678901234567890]')
        return out
    if isinstance(v, list):
        return [_with_odd_values(x, odd) for x in v]
    return v


@pytest.mark.parametrize("seed", [s for s in SEEDS if s.kind in ("json", "jsonl", "eval")], ids=lambda s: s.name)
@pytest.mark.parametrize("odd", ["cut emoji", "lone low"])
def test_odd_values_in_text_never_cost_a_message(tmp_path, seed, odd):
    """A cut emoji (a lone high surrogate, written as the escape real files hold) or a lone low surrogate in
    every text, NaN/1e400/huge integers in every object: every format still loads every message it loads
    without them, and the change is reported with its line."""
    mark = "\\ud83d" if odd == "cut emoji" else "x\\udc00"         # the escape, as a JSON file holds it
    plain = load(fuzzlib.make_input(seed, random.Random(0), tmp_path, "plain", mutate=False))
    value = _with_odd_values(seed.value, lambda t: fuzzlib._Raw(json.dumps(t)[:-1] + mark + '"'))
    p = tmp_path / ("odd" + seed.suffix)
    if seed.kind == "eval":                               # each member of the archive
        p.write_bytes(fuzzlib._eval_bytes(value, fuzzlib._Still(), 0.0))
    else:
        p.write_text(("\n".join(fuzzlib._dumps(r) for r in value) + "\n") if seed.kind == "jsonl"
                     else fuzzlib._dumps(value))
    r = load(p)
    assert [len(c.messages) for c in r.conversations] == [len(c.messages) for c in plain.conversations]
    assert any("surrogate" in pr.text for pr in r.problems + [q for c in r.conversations for q in c.problems])
    for c in r.conversations:
        dumps(c.messages).encode("utf-8")


def test_text_that_is_not_utf8_in_a_hermes_database_costs_that_text(tmp_path):
    """SQLite refuses a whole query over one value that is not UTF-8: the database is read again decoding
    leniently, every message loads, the replacement is reported."""
    import sqlite3
    seed = next(s for s in SEEDS if s.name == "hermes_db")
    p = fuzzlib.make_input(seed, random.Random(0), tmp_path, "state", mutate=False)
    plain = [len(c.messages) for c in load(p).conversations]
    con = sqlite3.connect(p)
    con.execute("UPDATE messages SET content = CAST(x'63757420eda0bd20656d6f6a69ff' AS TEXT) "
                "WHERE rowid = (SELECT min(rowid) FROM messages)")
    con.commit()
    con.close()
    r = load(p)
    assert [len(c.messages) for c in r.conversations] == plain
    assert "\ufffd" in r.main.messages[0]["content"] and r.main.messages[0]["content"].startswith("cut ")
    assert any("invalid UTF-8" in pr.text for pr in r.problems)


def test_containers_of_the_wrong_type_cost_that_field(tmp_path):
    """Found by bench/bench_fuzz.py: a Gemini session whose toolCalls is a number, a recording whose trace's
    steps is a number: each file loads (the calls of that message, the trace's layers ignored) and says so."""
    doc = fuzzlib.gemini_doc()
    doc["messages"][1]["toolCalls"] = 1.5
    p = tmp_path / "g.json"
    p.write_text(json.dumps(doc, indent=2))
    r = load(p)
    assert [m["role"] for m in r.main.messages] == ["user", "assistant", "assistant"]
    assert any("toolCalls is a number, not a list" in pr.text and pr.line > 1 for pr in r.problems)
    recs = fuzzlib.recording_records()
    for rec in recs:
        if rec.get("type") == "call" and rec.get("trace"):
            rec["trace"]["steps"] = 5
    p = tmp_path / "rec.jsonl"
    p.write_text("\n".join(json.dumps(x) for x in recs) + "\n")
    assert len(load(p).main.messages) == 8


# ------------------------------------------------------------------ the normalisation's properties
_MSGS = fuzzlib.anthropic_messages() + fuzzlib.openai_messages() + \
    [r["message"] for r in fuzzlib.claude_code_records() if "message" in r]


@settings(max_examples=400, deadline=None)
@given(st.randoms(use_true_random=False))
def test_fix_message_gives_the_shape_and_is_idempotent(rnd):
    m = fuzzlib.mutate_value(rnd.choice(_MSGS), rnd, 0.2)
    fixed, notes = fix_message(m)
    assert well_shaped(m) == (not notes)
    if fixed is not None:
        assert well_shaped(fixed) and fix_message(fixed) == (fixed, [])
    if not notes:
        assert fixed is m                   # a well-shaped message is never copied


def test_odd_fields_cost_that_field_never_the_file(tmp_path):
    """A `model` that is an object, a `uuid` that is a list, a recording `seq` of "3a", a >64-bit integer and
    1e400 in a proxy log: each file loads, each oddity is a problem for its line."""
    cc = [{"type": "user", "uuid": "u1", "parentUuid": None, "sessionId": "s",
           "message": {"role": "user", "content": "hi"}},
          {"type": "assistant", "uuid": ["a1"], "parentUuid": "u1", "sessionId": "s",
           "message": {"id": "m1", "role": "assistant", "model": {"name": "x"}, "content": "yo"}}]
    p = tmp_path / "cc.jsonl"
    p.write_text("\n".join(json.dumps(r) for r in cc) + "\n")
    r = load(p)
    assert [m["content"] for m in r.main.messages] == ["hi", "yo"] or len(r.main.messages) >= 1
    assert any("uuid is a list" in pr.text for pr in r.problems)
    assert any("model is an object" in pr.text for pr in r.problems)
    rec = [{"type": "header", "format": "compactscope.recording", "version": 1},
           {"type": "call", "seq": "3a", "request": {"model": "m", "messages": [{"role": "user", "content": "a"}]},
            "response": {"content": [{"type": "text", "text": "b"}]}}]
    p = tmp_path / "rec.jsonl"
    p.write_text("\n".join(json.dumps(r) for r in rec) + "\n"
                 + '{"type":"call","seq":2,"usage":{"input_tokens":123456789012345678901234567890,'
                   '"output_tokens":1e400},"request":{"model":"m","messages":[{"role":"user","content":"a"},'
                   '{"role":"assistant","content":"b"},{"role":"user","content":"c"}]}}\n')
    r = load(p)
    assert [m["content"] for m in r.main.messages] == ["a", "b", "c"]
    texts = " ".join(pr.text for pr in r.problems)
    assert "seq is a string" in texts and "1e400" in texts


def test_wrong_types_in_messages_are_made_well_typed_and_still_checked(tmp_path, capsys):
    from compactscope.app.cli import main
    msgs = [{"role": "user", "content": "go"},
            {"role": "assistant", "content": [{"type": ["text"], "text": "a"},
                                              {"type": "tool_use", "id": {"x": 1}, "name": "b", "input": "s"}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": '{"x": 1}', "content": 5}]}]
    p = tmp_path / "odd.json"
    p.write_text(json.dumps(msgs))
    r = load(p)
    m1 = r.main.messages[1]["content"]
    assert m1[0]["type"] == '["text"]' and m1[1]["id"] == '{"x": 1}' and m1[1]["input"] == {"_value": "s"}
    assert r.main.messages[2]["content"][0]["content"] == "5"
    assert r.main.meta[1].extra["load_fixes"] and any(pr.line == 1 or "message 1" in pr.text for pr in r.problems)
    assert main(["check", str(p)]) == 1                    # the API would reject the file as written
    assert "bad_value" in capsys.readouterr().out
    for strategy in ("s08", "claude_code", "hermes"):
        assert main(["run", str(p), "--strategy", strategy, "--json", "--workdir", str(tmp_path / "w")]) == 0
        json.loads(capsys.readouterr().out)


def test_one_verdict_on_values_the_load_made_well_typed(tmp_path, capsys):
    """A tool id that is a list, answered by a result whose id is the same list: the load makes both the
    same string (so the pair matches), but the API would reject the file as written. check, run --json
    (before and after every layer that keeps those messages) and the window's session say so alike."""
    from compactscope.app.cli import main
    from compactscope.core.session.model import Session
    from compactscope.core.files.workspace import Workspace
    msgs = [{"role": "user", "content": "go"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": ["l"], "name": "bash", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": ["l"], "content": "ok"}]},
            {"role": "assistant", "content": "done"}]
    p = tmp_path / "ids.json"
    p.write_text(json.dumps(msgs))
    assert main(["check", str(p)]) == 1
    assert capsys.readouterr().out.count("[bad_value]") == 2
    assert main(["run", str(p), "--json", "--workdir", str(tmp_path / "w")]) == 0
    d = json.loads(capsys.readouterr().out)
    assert [(f["code"], f["message"]) for f in d["input_findings"]] == [("bad_value", 1), ("bad_value", 2)]
    assert all([f["code"] for f in s["findings"]] == ["bad_value"] * 2 for s in d["steps"])
    s = Session(Workspace(tmp_path / "ws"), strategy="s08")
    assert s.source.open(str(p))
    assert [(f.code, f.message) for f in s.trace.input_findings] == [("bad_value", 1), ("bad_value", 2)]
    assert any(f.severity == "error" for f in s.trace.steps[-1].findings)


# ------------------------------------------------------------------ lenient reading and strict writing
_json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2 ** 80, 2 ** 80) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda ch: st.lists(ch, max_size=4) | st.dictionaries(st.text(max_size=5), ch, max_size=4), max_leaves=25)


@settings(max_examples=300, deadline=None)
@given(_json_values, st.sampled_from([None, 1]))
def test_loads_deep_reads_what_json_reads(value, indent):
    text = json.dumps(value, indent=indent)
    assert loads_deep(text) == json.loads(text)


def test_any_nesting_is_read_without_recursion_and_cut():
    text = "[" * 50_000 + '"x"' + "]" * 50_000
    notes: list = []
    v = loads_lenient(text.encode(), notes)
    depth = 0
    while isinstance(v, list):
        v, depth = v[0], depth + 1
    assert v == DEEP_PLACEHOLDER and depth == MAX_DEPTH and "nested deeper" in notes[0]
    with pytest.raises(ValueError):
        loads_deep("[" * 10 + "]" * 9)


@settings(max_examples=300, deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.integers(-2 ** 100, 2 ** 100) | st.floats()
                    | st.text(alphabet=st.characters(), max_size=6),
                    lambda ch: st.lists(ch, max_size=3) | st.dictionaries(
                        st.one_of(st.text(max_size=4), st.integers(), st.none()), ch, max_size=3), max_leaves=20))
def test_what_compactscope_writes_is_strict_json(value):
    text = dumps(value)
    back = json.loads(text, parse_constant=lambda c: pytest.fail(f"{c} written"))
    import orjson
    orjson.loads(text.encode("utf-8"))                     # no lone surrogate survives; the fast reader reads it
    if isinstance(value, float) and math.isfinite(value):
        assert back == value


def test_the_window_takes_mutated_inputs(qtbot, make_window, tmp_path):
    """Mutated inputs of every format opened in the window: each loads (or says why not in the banner),
    every stage is shown and drawn; an exception in any view fails the test (pytest-qt reports it)."""
    win = make_window()
    rng = random.Random(5)
    shown = 0
    for k, seed in enumerate(SEEDS):
        p = fuzzlib.make_input(seed, rng, tmp_path, f"in{k}")
        ok = win.open_path(str(p), remember=False)
        qtbot.waitUntil(lambda: not win.session.busy, timeout=30000)
        if not ok:
            assert win.last_error and "Traceback" not in win.last_error
            continue
        if win.session.trace is None:
            continue
        shown += 1
        for stage in range(len(win.session.trace.steps) + 1):
            win.stepper.set_current(stage)
            qtbot.wait(1)
        win.grab()
    assert shown >= len(SEEDS) // 2
