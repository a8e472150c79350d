"""Hardening (issue 13): exit codes, the checker and the strategies total over odd content, layer bugs shown
as the layer's error, hermes-agent's own IndexError reproduced faithfully, atomic writes."""
from __future__ import annotations

import functools
import json
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compactscope.app.cli import main
from compactscope.core.analysis.checker import check
from compactscope.core.model.messages import ANTHROPIC, OPENAI
from compactscope.core.pipeline.engine import Engine
from compactscope.core.files.workspace import Workspace
from conftest import EXAMPLES


@pytest.fixture
def cache_home(tmp_path, monkeypatch):
    """The user cache (errors/ and sessions/) inside the test's folder."""
    home = tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    return home


def run_cli(capsys, *argv):
    rc = main([str(a) for a in argv])
    out = capsys.readouterr()
    return rc, out.out, out.err


# ------------------------------------------------------------------ exit codes
def _write(tmp_path, name, value) -> Path:
    p = tmp_path / name
    p.write_text(json.dumps(value))
    return p


def test_exit_codes_are_distinct(capsys, tmp_path, cache_home, monkeypatch):
    good = _write(tmp_path, "good.json", [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}])
    rejected = _write(tmp_path, "rej.json", [{"role": "assistant", "content": "first"}])
    broken = tmp_path / "broken.json"
    broken.write_text('[{"role": "user", "content": ')
    assert run_cli(capsys, "check", good)[0] == 0
    assert run_cli(capsys, "check", rejected)[0] == 1
    rc, out, err = run_cli(capsys, "check", broken)
    assert rc == 2 and str(broken) in err and "Traceback" not in err
    assert run_cli(capsys, "run", tmp_path / "missing.json")[0] == 2
    assert run_cli(capsys, "run", good, "--set", "nope=1")[0] == 2
    # an internal error: one line naming the file with the details, exit 3
    import compactscope.core.analysis.checker as checker

    def boom(*a, **k):
        raise ZeroDivisionError("a planted bug")
    monkeypatch.setattr(checker, "check_conversation", boom)
    rc, out, err = run_cli(capsys, "check", good)
    assert rc == 3
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "internal error" in lines[0] and "ZeroDivisionError: a planted bug" in lines[0]
    details = Path(lines[0].rsplit("details in ", 1)[1])
    assert details.is_file() and details.resolve().is_relative_to(cache_home.resolve())
    assert "Traceback" in details.read_text() and "boom" in details.read_text()


@pytest.fixture
def broken_snip():
    """s08's snip_compact layer replaced by one that raises (a planted bug), restored afterwards."""
    from compactscope.core import strategies
    layer = strategies.get("s08").layer("snip_compact")
    original = layer.fn

    def broken(messages, ctx):
        raise KeyError("planted")
    object.__setattr__(layer, "fn", broken)          # Layer is a frozen dataclass
    yield layer
    object.__setattr__(layer, "fn", original)


def test_a_layer_bug_is_the_layers_error_and_exit_3(capsys, tmp_path, cache_home, broken_snip):
    msgs = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]
    t = Engine("s08", workspace=Workspace(tmp_path / "ws")).run(msgs)
    step = t.step("snip_compact")
    assert step.internal and "KeyError" in step.internal
    assert "internal error" in step.error and "planted" in step.error
    assert step.messages is msgs and not step.changed          # passed on unchanged
    assert t.step("micro_compact") is not None                   # the later layers still ran
    assert t.internal_errors == [step]
    p = _write(tmp_path, "m.json", msgs)
    rc, out, err = run_cli(capsys, "run", p, "--json", "--workdir", tmp_path / "w")
    assert rc == 3 and json.loads(out)["steps"][1]["internal_error"] is True
    assert "layer snip_compact raised" in err and "details in" in err
    rc, out, err = run_cli(capsys, "replay", p, "--workdir", tmp_path / "w2")
    assert rc == 3 and "replay: layer snip_compact raised" in err


# ------------------------------------------------------------------ checker totality
_json = st.recursive(
    st.none() | st.booleans() | st.integers(-2 ** 70, 2 ** 70) | st.floats(allow_nan=True) | st.text(max_size=6)
    | st.sampled_from(["text", "tool_use", "tool_result", "user", "assistant", "tool", "t1", "image"]),
    lambda ch: st.lists(ch, max_size=4) | st.dictionaries(
        st.sampled_from(["role", "content", "type", "id", "tool_use_id", "text", "name", "input", "tool_calls",
                         "tool_call_id", "function", "arguments", "is_error", "source"]), ch, max_size=5),
    max_leaves=20)


@settings(max_examples=300, deadline=None)
@given(st.lists(_json, max_size=6))
def test_checker_is_total(messages):
    for dialect in (None, ANTHROPIC, OPENAI):
        findings = check(messages, dialect)
        assert isinstance(findings, list)
        for f in findings:
            assert isinstance(f.text, str) and (f.tool_id is None or isinstance(f.tool_id, str))
            json.dumps(f.to_json())


@pytest.mark.parametrize("block,code", [
    ({"type": ["text"], "text": "x"}, "block_without_type"),
    ({"type": "text", "text": ["x"]}, "bad_block_field"),
    ({"type": "tool_use", "id": ["t"], "name": "b", "input": {}}, "bad_block_field"),
    ({"type": "tool_use", "id": "t", "name": "b", "input": "x"}, "bad_block_field"),
])
def test_checker_names_fields_of_the_wrong_type(block, code):
    msgs = [{"role": "user", "content": "go"}, {"role": "assistant", "content": [block]}]
    assert code in [f.code for f in check(msgs, ANTHROPIC) if f.message == 1]


def test_checker_tool_ids_that_are_not_strings():
    msgs = [{"role": "user", "content": "go"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": {"a": 1}, "name": "b", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": ["x"], "content": "r"}]}]
    codes = {f.code for f in check(msgs)}
    assert {"orphan_tool_result", "unanswered_tool_use", "bad_block_field"} <= codes
    msgs = [{"role": "user", "content": "go"},
            {"role": "assistant", "content": None, "tool_calls": [{"id": ["c"], "function": {"name": "f"}}]},
            {"role": "tool", "tool_call_id": {"c": 1}, "content": "r"}]
    codes = {f.code for f in check(msgs, OPENAI)}
    assert {"orphan_tool_result", "bad_tool_calls"} <= codes


# ------------------------------------------------------------------ hermes-agent's own IndexError
def _six_parallel_calls(k=6):
    msgs = [{"role": "user", "content": "go"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": f"c{i}", "type": "function", "function": {"name": "read", "arguments": "{}"}}
                for i in range(k)]}]
    return msgs + [{"role": "tool", "tool_call_id": f"c{i}", "content": "x" * 50} for i in range(k)]


def test_hermes_fails_where_hermes_agent_fails(tmp_path):
    msgs = _six_parallel_calls()
    t = Engine("hermes", {"trigger": "always"}, workspace=Workspace(tmp_path)).run(msgs, dialect=OPENAI)
    step = t.step("hermes_summarize")
    assert step.internal is None, step.internal                      # not a bug of ours: hermes' own failure
    assert step.error.startswith("hermes-agent 0.19.0 fails here too") and "IndexError" in step.error
    assert t.output is msgs or t.output == msgs
    assert not t.internal_errors
    from compactscope.core.oracles import hermes_agent as hermes_oracle
    if hermes_oracle.module() is None:
        return
    with pytest.raises(IndexError):                                  # the real package, same input
        hermes_oracle.TheirCompressor({}).compress(msgs)
    assert hermes_oracle.hermes_oracle_check(msgs).startswith("hermes-agent 0.19.0 raised IndexError")


def test_five_parallel_calls_still_compact(tmp_path):
    t = Engine("hermes", {"trigger": "always"}, workspace=Workspace(tmp_path)).run(_six_parallel_calls(5),
                                                                                 dialect=OPENAI)
    assert t.step("hermes_summarize").error is None


# ------------------------------------------------------------------ atomic writes, never through a symlink
def test_workspace_never_writes_through_a_symlink(tmp_path):
    ws = Workspace(tmp_path / "ws")
    outside = tmp_path / "outside.txt"
    folder = ws.root / ".task_outputs" / "tool-results"
    folder.mkdir(parents=True)
    os.symlink(outside, folder / "t1.txt")                          # dangling, pointing outside
    rel, path = ws.persist_tool_result("t1", "the result")
    assert not outside.exists()
    assert path.parent == folder and path.name == "t1-2.txt" and path.read_text() == "the result"
    assert os.path.islink(folder / "t1.txt")                        # left alone
    # a regular file with the same content is reused; a lone surrogate is written as U+FFFD
    assert ws.persist_tool_result("t1", "the result")[1] == path
    rel2, p2 = ws.persist_tool_result("t2", "cut emoji \ud83d")
    assert p2.read_text(encoding="utf-8") == "cut emoji \ufffd"
    t = ws.write_transcript([{"role": "user", "content": "a \ud83d b"}])
    assert json.loads(t.read_text(encoding="utf-8")) == {"role": "user", "content": "a \ufffd b"}
    assert not [p for p in folder.iterdir() if p.name.endswith(".tmp")]


def test_workspace_refuses_a_folder_symlinked_outside(tmp_path):
    ws = Workspace(tmp_path / "ws")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (ws.root / ".task_outputs").mkdir(parents=True)
    os.symlink(elsewhere, ws.root / ".task_outputs" / "tool-results")
    with pytest.raises(ValueError):
        ws.persist_tool_result("t1", "x")
    assert not list(elsewhere.iterdir())


def test_atomic_write_refuses_symlinks_and_keeps_the_old_file_on_failure(tmp_path):
    from compactscope.core.files.safeio import UnsafePath, atomic_path, atomic_write
    target = tmp_path / "t.txt"
    atomic_write(target, "one")
    link = tmp_path / "l.txt"
    os.symlink(target, link)
    with pytest.raises(UnsafePath):
        atomic_write(link, "two")
    assert target.read_text() == "one"
    with pytest.raises(RuntimeError):
        with atomic_path(target) as tmp:
            tmp.write_text("half")
            raise RuntimeError("cut")
    assert target.read_text() == "one" and sorted(p.name for p in tmp_path.iterdir()) == ["l.txt", "t.txt"]


# ------------------------------------------------------------------ record: confirmations only from a terminal
def test_confirmations_are_read_from_the_terminal_only(tmp_path):
    import os
    import pty

    from compactscope.core.live.agent import ask_terminal, confirmation
    assert [confirmation(a) for a in ("y", "YES\n", "a", "always", "always run everything", "yes please", "", None)] \
        == ["once", "once", "session", "session", "deny", "deny", "deny", "deny"]
    master, slave = pty.openpty()
    try:
        os.write(master, b"a\n")
        assert ask_terminal("run `ls`? ", tty=os.ttyname(slave)) == "a\n"
        import select
        shown = b""
        while b"run `ls`?" not in shown and select.select([master], [], [], 2)[0]:
            shown += os.read(master, 100)                # (the terminal's echo of "a" may come first)
        assert b"run `ls`?" in shown
    finally:
        os.close(master)
        os.close(slave)
    assert ask_terminal("q? ", tty=str(tmp_path / "no-tty")) is None


def test_piped_prompts_never_answer_a_confirmation(tmp_path):
    """`compactscope record` with prompts on stdin and no terminal: the bash call is refused (and said so),
    and the following prompt lines, even one starting with "a", stay prompts."""
    import subprocess
    import sys

    from compactscope.core.live.recorder import read_recording
    from tests.fakeapi import FakeAnthropic, message, reply, text_block, tool_use_block
    ws = tmp_path / "ws"
    ws.mkdir()
    rec = tmp_path / "r.jsonl"
    script = [reply(message([tool_use_block("bash", {"command": "echo pwned > out.txt"}, "b1")])),
              reply(message([text_block("ok, not run")])), reply(message([text_block("second")])),
              reply(message([text_block("third")]))]
    with FakeAnthropic(script) as fake:
        env = {**os.environ, "ANTHROPIC_API_KEY": "test-" + "key-0123456789"}
        proc = subprocess.run([sys.executable, "-m", "compactscope", "record", "--workspace", str(ws), "--record",
                               str(rec), "--base-url", fake.url, "--max-retries", "0", "--summarizer", "offline"],
                              input="please run it\nalways yes\ny\n", capture_output=True, text=True, timeout=60,
                              start_new_session=True, env=env)     # a new session: no controlling terminal
    assert proc.returncode == 0, proc.stderr
    assert not (ws / "out.txt").exists()
    assert "no terminal to confirm `echo pwned > out.txt`" in proc.stderr
    calls = read_recording(rec).calls
    sent = [m["content"] for c in calls for m in c.messages if m.get("role") == "user" and isinstance(m["content"], str)]
    assert "always yes" in sent and "y" in sent          # the later lines were prompts, not answers
    results = [b for c in calls for m in c.messages if isinstance(m.get("content"), list) for b in m["content"]
               if isinstance(b, dict) and b.get("type") == "tool_result"]
    assert results and "declined" in str(results[0].get("content"))


# ------------------------------------------------------------------ resource attacks: input kinds, time and memory
def _bounded(fn, megabytes: float):
    """Run ``fn``; assert its peak Python memory (a quadratic parser shows there as much as in its time; the
    CPU time of these inputs is printed by bench/bench_hostile.py, no test asserts a time)."""
    import tracemalloc
    tracemalloc.start()
    try:
        return fn()
    finally:
        peak = tracemalloc.get_traced_memory()[1] / 1e6
        tracemalloc.stop()
        assert peak < megabytes, f"peak {peak:.0f} MB (bound {megabytes} MB)"


def _load_error(path):
    from compactscope.core.loaders import LoadError, load
    with pytest.raises(LoadError) as e:
        load(path)
    return str(e.value)


def test_a_fifo_or_a_device_is_refused_at_once(tmp_path, capsys):
    fifo = tmp_path / "session.jsonl"
    os.mkfifo(fifo)                                       # opening it for reading would wait for a writer forever
    msg = _bounded(lambda: _load_error(fifo), 20)
    assert str(fifo) in msg and "FIFO" in msg and "regular files" in msg
    link = tmp_path / "zero.jsonl"
    os.symlink("/dev/zero", link)                         # never ends
    msg = _bounded(lambda: _load_error(link), 20)
    assert "character device" in msg
    rc, out, err = run_cli(capsys, "info", fifo)
    assert rc == 2 and "FIFO" in err


def test_a_fifo_or_dev_zero_inside_subagents_is_refused_and_the_session_loads(tmp_path):
    from compactscope.core.loaders import load
    session = tmp_path / "abc.jsonl"
    session.write_text(json.dumps({"type": "user", "uuid": "u1", "parentUuid": None, "sessionId": "abc",
                                   "message": {"role": "user", "content": "hi"}}) + "\n")
    sub = tmp_path / "abc" / "subagents"
    sub.mkdir(parents=True)
    os.mkfifo(sub / "agent-fifo.jsonl")
    os.symlink("/dev/zero", sub / "agent-zero.jsonl")
    (sub / "agent-ok.jsonl").write_text(json.dumps({"type": "user", "uuid": "s1", "parentUuid": None,
                                                    "sessionId": "abc", "isSidechain": True,
                                                    "message": {"role": "user", "content": "sub"}}) + "\n")
    r = _bounded(lambda: load(session), 30)
    assert r.main.messages[0]["content"] == "hi"
    unreadable = [c for c in r.conversations if "unreadable" in c.title]
    assert len(unreadable) == 2
    assert {"FIFO" in str(c.problems[0]) or "character device" in str(c.problems[0]) for c in unreadable} == {True}
    assert any(c.messages and c.messages[0]["content"] == "sub" for c in r.conversations)


def test_an_over_long_file_name_is_a_clear_load_error(tmp_path):
    msg = _load_error(tmp_path / ("x" * 300 + ".jsonl"))
    assert "too long" in msg


def test_a_deeply_nested_corrupt_line_is_skipped_in_bounded_memory(tmp_path):
    from compactscope.core.loaders import load
    first = json.dumps({"type": "user", "uuid": "u0", "parentUuid": None, "sessionId": "s",
                        "message": {"role": "user", "content": "x"}})
    bad = '{"type":"user","uuid":"u","sessionId":"s","message":' + '{"a":' * 40_000     # 240 KB, never closed
    p = tmp_path / "s.jsonl"
    p.write_text(first + "\n" + bad + "\n" + bad + "\n")
    r = _bounded(lambda: load(p), 60)
    assert len(r.main.messages) == 1 and [pr.line for pr in r.problems if "corrupt" in pr.text] == [2, 3]


def test_escaped_quotes_in_pretty_json_load_in_bounded_memory(tmp_path):
    from compactscope.core.loaders import load
    p = tmp_path / "q.json"
    p.write_text(json.dumps({"messages": [{"role": "user", "content": '"' * 2_500_000},
                                          {"role": "assistant", "content": "\\" * 1_000_000}]}, indent=2))
    r = _bounded(lambda: load(p), 400)                 # 5 MB of \\" took 2 GB (and 12-66 s: bench_hostile)
    assert [m.provenance.line for m in r.main.meta] == [3, 7]


def test_a_2mb_sdk_repr_loads_in_bounded_memory(tmp_path):
    """Python's own parser took 2.9 GB for 6 MB of this (about 480 bytes a byte, 1 GB here); the loader takes
    about 15 bytes a byte (31 MB here, 87 MB at 6 MB). bench_hostile.py loads the 6 MB one and prints its time."""
    from compactscope.core.loaders import load
    blocks = "[" + ", ".join(["TextBlock(citations=None, text='ab', type='text')"] * 40_000) + "]"
    p = tmp_path / "t.jsonl"
    p.write_text(json.dumps({"role": "user", "content": "hi"}) + "\n"
                 + json.dumps({"role": "assistant", "content": blocks}) + "\n")
    r = _bounded(lambda: load(p), 85)
    assert len(r.main.messages[1]["content"]) == 40_000 and r.main.messages[1]["content"][0] == \
        {"type": "text", "text": "ab"}


# ------------------------------------------------------------------ parameters: NaN and infinities refused
@pytest.mark.parametrize("value", ["nan", "NaN", "inf", "-inf", "1e400", "-1e400", float("nan"), float("inf")])
def test_non_finite_parameters_are_refused_by_validation(value):
    from compactscope.core import strategies
    for name in strategies.available():
        for p in strategies.get(name).params:
            if isinstance(p.default, (int, float)) and not isinstance(p.default, bool):
                with pytest.raises(ValueError, match=p.name):
                    p.coerce(value)


def test_set_threshold_nan_is_a_clear_usage_error(capsys, tmp_path, cache_home):
    p = _write(tmp_path, "m.json", [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}])
    rc, out, err = run_cli(capsys, "run", p, "--strategy", "hermes", "--set", "threshold_pct=nan")
    assert rc == 2 and "threshold_pct takes a finite number" in err and "Traceback" not in err
    rc, out, err = run_cli(capsys, "replay", p, "--set", "max_messages=1e400")
    assert rc == 2 and "max_messages takes a whole number" in err


def test_a_screenshot_is_written_atomically_and_never_through_a_symlink(tmp_path, examples, isolated_settings,
                                                                        capsys):
    from compactscope.app import gui
    target = tmp_path / "elsewhere.png"
    target.write_bytes(b"keep me")
    link = tmp_path / "shot.png"
    os.symlink(target, link)
    src = str(examples / "short_session.json")
    assert gui.main([src, "--screenshot", str(link), "--size", "640x480"]) == 2
    assert target.read_bytes() == b"keep me" and "could not write" in capsys.readouterr().err
    out = tmp_path / "ok.png"
    assert gui.main([src, "--screenshot", str(out), "--size", "640x480"]) == 0
    assert out.read_bytes()[:4] == b"\x89PNG" and not [p for p in tmp_path.iterdir() if p.suffix == ".tmp"]


# ------------------------------------------------------------------ writers: every value a layer may make
_EVIL_PLUGIN = '''
import math


def compact(messages):
    """Keeps the last four messages and adds values no strict reader takes."""
    out = messages[-4:]
    out.insert(0, {"role": "user", "content": [{"type": "text", "text": "cut \\ud83d emoji", "n": math.nan,
                                                 "big": 2 ** 70, "inf": [math.inf]}]})
    out.append({"role": "assistant", "content": "x\\udc00y", 5: "a key that is a number"})
    return out
'''


def _strict(text: str):
    def refuse(name):
        raise ValueError(f"not strict JSON: {name}")
    text.encode("utf-8")                                   # no lone surrogate
    return json.loads(text, parse_constant=refuse)


def test_every_writer_takes_what_a_layer_or_a_summary_makes(tmp_path, capsys, cache_home):
    """Lone surrogates, NaN, infinities, >64-bit integers and keys that are numbers, made by a plugin's layer or
    a summary (here a fixed one holding a cut emoji): run (text and --json), replay --json, the report (HTML
    and Markdown) and the transcript are written whole, as strict UTF-8 JSON where they are JSON."""
    plugin = tmp_path / "evil.py"
    plugin.write_text(_EVIL_PLUGIN)
    src = EXAMPLES / "long_session.json"
    work = tmp_path / "w"
    rc, out, err = run_cli(capsys, "run", src, "--strategy", plugin, "--workdir", work)
    assert rc == 0 and "Traceback" not in err
    rc, out, err = run_cli(capsys, "run", src, "--strategy", plugin, "--json", "--workdir", work)
    assert rc == 0, err
    d = _strict(out)
    last = d["steps"][-1]["messages"]
    assert last[0]["content"][0]["text"] == "cut \ufffd emoji" and last[0]["content"][0]["n"] is None
    assert last[-1]["content"] == "x\ufffdy" and last[-1]["5"] == "a key that is a number"
    rc, out, err = run_cli(capsys, "replay", src, "--strategy", plugin, "--json", "--workdir", work)
    assert rc == 0, err
    _strict(out)
    for name in ("r.html", "r.md"):
        rc, out, err = run_cli(capsys, "report", src, "--strategy", plugin, "-o", tmp_path / name, "--workdir", work)
        assert rc == 0, err
        assert "cut \ufffd emoji" in (tmp_path / name).read_text(encoding="utf-8")
    # a summary with a lone surrogate: in the output and in the transcript the summary layer writes
    rc, out, err = run_cli(capsys, "run", src, "--summarizer", "fixed:half \ud83d of an emoji", "--json",
                           "--workdir", work)
    assert rc == 0, err
    d = _strict(out)
    assert "half \ufffd of an emoji" in json.dumps(d["steps"][-1]["messages"][0], ensure_ascii=False)
    transcripts = list((work / ".transcripts").glob("transcript_*.jsonl"))
    assert transcripts
    for t in transcripts:
        for line in t.read_text(encoding="utf-8").splitlines():
            _strict(line)
    assert not [p for p in work.rglob("*") if p.name.endswith(".tmp")]


def test_a_transcript_is_never_half_written(tmp_path, monkeypatch):
    """A write that fails midway (a full disk) leaves no transcript and no temporary file; the next write of
    the same list makes the whole file."""
    from compactscope.core.files import workspace as wsmod
    ws = Workspace(tmp_path / "ws")
    msgs = [{"role": "user", "content": f"message {k}"} for k in range(50)]
    real = wsmod._line
    count = {"n": 0}

    def failing(m):
        count["n"] += 1
        if count["n"] == 30:
            raise OSError(28, "No space left on device")
        return real(m)
    monkeypatch.setattr(wsmod, "_line", failing)
    with pytest.raises(OSError):
        ws.write_transcript(msgs)
    folder = ws.root / ".transcripts"
    assert list(folder.iterdir()) == []
    monkeypatch.setattr(wsmod, "_line", real)
    path = ws.write_transcript(msgs)
    assert [json.loads(x)["content"] for x in path.read_text().splitlines()] == [m["content"] for m in msgs]
    assert [p.name for p in folder.iterdir()] == [path.name]


def test_a_huge_file_or_line_is_refused_naming_the_file_and_line(tmp_path, monkeypatch):
    """A JSON document over the limit is refused at once (its size read, nothing parsed); a JSONL line over
    the limit is skipped with its line number and the limit, the other lines load."""
    from compactscope.core.loaders import base
    doc = tmp_path / "big.json"
    doc.write_text(json.dumps([{"role": "user", "content": "x" * 5000}]))
    monkeypatch.setattr(base, "MAX_JSON_BYTES", 4096)
    msg = _bounded(lambda: _load_error(doc), 5)
    assert str(doc) in msg and "5,0" in msg and "4,096-byte limit" in msg
    from compactscope.core.loaders import load
    lines = tmp_path / "big.jsonl"
    lines.write_text("\n".join(json.dumps({"role": r, "content": c}) for r, c in
                               (("user", "a"), ("assistant", "x" * 5000), ("user", "b"))) + "\n")
    monkeypatch.setattr(base.iter_lines, "__defaults__", (1000,))
    r = load(lines)
    assert [m["content"] for m in r.main.messages] == ["a", "b"]
    [p] = [p for p in r.problems if "too long" in p.text]
    assert p.path == str(lines) and p.line == 2 and "MB, the limit for one line" in p.text


def test_a_recent_file_whose_name_is_not_utf8_reopens_that_file(qapp, isolated_settings, tmp_path):
    """A file name with bytes that are not UTF-8 (Python keeps them as lone surrogates): Qt's settings would
    drop them and name another file; the recent-files list keeps the name's bytes."""
    from compactscope.app.settings import Settings
    odd = os.fsdecode(bytes(tmp_path) + b"/bad\xffname.json")
    Path(odd).write_text("[]")
    Settings().add_recent(odd)
    Settings().add_recent(str(tmp_path / "plain.json"))
    Settings().q.sync()
    assert Settings().recent_files() == [str((tmp_path / "plain.json").resolve()), str(Path(odd).resolve())]
    assert Path(Settings().recent_files()[1]).is_file()


def test_the_window_lists_what_the_load_skipped_or_made_valid(qtbot, make_window, tmp_path):
    """A file with a broken line and a cut emoji: the window opens the rest, and under the API findings it
    lists each problem with its line for as long as the file is open (the status bar shows only the first,
    for a while); another file without problems clears the list."""
    recs = [{"role": "user", "content": "first"}, {"role": "assistant", "content": "second"},
            {"role": "user", "content": "third"}, {"role": "assistant", "content": "fourth"}]
    lines = [json.dumps(r) for r in recs]
    lines[1] = '{"role": "assistant", "content": '                                 # cut mid-record
    lines[2] = lines[2].replace("third", "cut \\ud83d emoji")
    p = tmp_path / "odd.jsonl"
    p.write_text("\n".join(lines) + "\n")
    win = make_window()
    assert win.open_path(str(p))
    qtbot.waitUntil(lambda: win.session.source.conversation is not None and win.session.trace is not None, timeout=20000)

    def texts():
        return [win.findings.item(i).text() for i in range(win.findings.count())]
    qtbot.waitUntil(lambda: any("problem(s) while loading the file" in t for t in texts()), timeout=10000)
    t = texts()
    assert any(x.strip().startswith("odd.jsonl:2:") for x in t)
    assert any(x.strip().startswith("odd.jsonl:3:") and "surrogate" in x for x in t)
    assert [m["content"] for m in win.session.source.conversation.messages][-1] == "fourth"
    win.stepper.set_current(len(win.session.trace.steps))
    qtbot.waitUntil(lambda: win.session.view.stage == len(win.session.trace.steps), timeout=5000)
    assert any("problem(s) while loading the file" in x for x in texts())   # on every stage
    clean = tmp_path / "clean.json"
    clean.write_text(json.dumps(recs))
    assert win.open_path(str(clean))
    qtbot.waitUntil(lambda: win.session.source.conversation is not None and len(win.session.source.conversation.messages) == 4, timeout=20000)
    qtbot.waitUntil(lambda: not any("problem(s) while loading" in x for x in texts()), timeout=10000)


# ------------------------------------------------------------------ no leak: opening file after file
def test_a_session_forgets_what_it_measured_for_the_files_it_showed_before(tmp_path):
    """Each open (or reload of a followed file) makes new message objects. The session's size meter and the
    workspace's transcript digests held every message measured or written until a million (meter) or half a
    million (digests) were held: opening files one after another grew without bound."""
    from compactscope.core.pipeline.facts import FACTS
    from compactscope.core.session.model import Session
    from compactscope.core.files.workspace import LINE_DIGESTS
    ws = Workspace(tmp_path / "ws")
    s = Session(ws, strategy="s08")
    src = EXAMPLES / "long_session.json"
    n = 59
    assert s.source.open(str(src))
    first = list(s.source.conversation.messages)                     # held here, so their ids stay theirs
    for _ in range(12):
        assert s.source.open(str(src)) and s.trace is not None
    assert len(s.source.conversation.messages) == n
    assert s.meter.facts is FACTS
    assert len(FACTS) <= 3 * n                                # the messages shown and what the layers made
    assert 0 < len(LINE_DIGESTS) <= len(FACTS)                # transcripts were written, their digests bounded
    assert not any(FACTS.find(m) is not None for m in first)  # nothing of the earlier opens


def test_hermes_shrinks_arguments_nested_deeper_than_python_recurses():
    """Found by bench_fuzz: a tool call's arguments string (JSON text, not cut at load) nested deeper than
    Python recurses from where the layer runs: hermes_prune raised RecursionError (an internal error). Now
    such arguments are kept as they are; shallow ones are still shortened."""
    from compactscope.core.layers.hermes_rules import shrink_args_json

    def deep_stack(n, fn):                 # the layer runs deep in a caller's stack (a worker, the CLI)
        return fn() if n == 0 else deep_stack(n - 1, fn)
    for depth in (450, 5000):
        deep = '{"a": ' * depth + '"' + "x" * 500 + '"' + "}" * depth
        out = deep_stack(500, functools.partial(shrink_args_json, deep))
        assert out == deep or json.loads(out)
    assert shrink_args_json(json.dumps({"a": ["x" * 500]})) != json.dumps({"a": ["x" * 500]})


def test_a_recording_with_json_nested_deeper_than_the_parser_goes_loads(tmp_path):
    """Found by bench_fuzz (seed 20261130): a proxy log whose streamed answer (SSE) or request body holds JSON
    nested deeper than Python's parser recurses raised RecursionError out of the recording loader. Now that
    payload counts as unreadable (the event skipped, the call without that body) and the rest loads."""
    from compactscope.core.loaders import load
    deep = "[" * 100_000 + "]" * 100_000
    sse = ("event: message_start\ndata: " + json.dumps({"type": "message_start", "message": {
        "id": "m1", "role": "assistant", "content": [], "usage": {"input_tokens": 5, "output_tokens": 1}}})
        + "\n\nevent: content_block_delta\ndata: " + deep + "\n\n")
    ok = {"model": "claude-x", "messages": [{"role": "user", "content": "list the files"}]}
    recs = [{"request": {"timestamp": 1700000000, "method": "POST", "url": "https://api.anthropic.com/v1/messages",
                         "body": ok},
             "response": {"timestamp": 1700000001, "status_code": 200, "body_raw": sse}},
            {"request": {"timestamp": 1700000002, "method": "POST", "url": "https://api.anthropic.com/v1/messages",
                         "body": '{"model": "claude-x", "messages": ' + deep + "}"},
             "response": {"timestamp": 1700000003, "status_code": 200, "body": deep}}]
    p = tmp_path / "proxy.jsonl"
    p.write_text("\n".join(json.dumps(r) for r in recs) + "\n", encoding="utf-8")
    result = load(str(p))
    msgs = result.conversations[0].messages
    assert msgs[0]["content"] == "list the files"


def test_load_fixes_are_read_once_per_map_and_right_for_each():
    """A replay asks for the load's fixes once per model call with the same map: the answer is kept for that
    map (scanning every message per call made hermes and s08 replay grow with the history), and a different
    map gets its own answer."""
    from types import SimpleNamespace

    from compactscope.core.analysis.checker import load_fixes_by_identity
    a = {1: SimpleNamespace(extra={"load_fixes": ["uuid was a list"]}), 2: SimpleNamespace(extra={})}
    b = {3: SimpleNamespace(extra={"load_fixes": ["model was an object"]})}
    first = load_fixes_by_identity(a)
    assert first == {1: ["uuid was a list"]}
    assert load_fixes_by_identity(a) is first                  # the same map: the kept answer
    assert load_fixes_by_identity(b) == {3: ["model was an object"]}
    assert load_fixes_by_identity(a) == {1: ["uuid was a list"]}
    assert load_fixes_by_identity({}) == {}
