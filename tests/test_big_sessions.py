"""A big file in the window's session: loaded in the background (its first messages shown at once, the
pipeline run when the whole file is there), a failure said in the banner, a parameter change resumed."""
from __future__ import annotations

import json
import time

import pytest

from compactscope.core.session import loading as S
from compactscope.core.runtime.jobs import ThreadExecutor
from compactscope.core.session.model import Session
from compactscope.core.files.workspace import Workspace


def write_session(path, n: int) -> None:
    """A Claude Code session of n messages (one record a line)."""
    parent = None
    with path.open("w") as f:
        for k in range(n):
            u = f"u{k:06d}"
            if k % 2 == 0:
                msg = {"role": "user", "content": f"question {k} " + "x" * 300}
            else:
                msg = {"role": "assistant", "id": f"m{k}", "content": [{"type": "text", "text": f"answer {k}"}],
                       "usage": {"input_tokens": 10, "output_tokens": 5}}
            f.write(json.dumps({"type": msg["role"], "uuid": u, "parentUuid": parent, "sessionId": "s",
                                "timestamp": f"2026-01-01T00:{k // 60 % 60:02d}:{k % 60:02d}Z", "message": msg}) + "\n")
            parent = u


def drain_until(ex: ThreadExecutor, cond, timeout: float = 60) -> None:
    end = time.monotonic() + timeout
    while not cond():
        ex.drain()
        assert time.monotonic() < end, "timed out"
        time.sleep(0.005)
    ex.drain()


@pytest.fixture
def small_limits(monkeypatch):
    monkeypatch.setattr(S, "BACKGROUND_LOAD_BYTES", 10_000)
    monkeypatch.setattr(S, "PREVIEW_BYTES", 20_000)


def test_a_big_file_loads_in_the_background_first_messages_at_once(tmp_path, small_limits):
    path = tmp_path / "big.jsonl"
    write_session(path, 600)
    ex = ThreadExecutor(queued=True)
    s = Session(Workspace(tmp_path / "ws"), executor=ex, strategy="s08")
    seen, shown = [], []
    s.events.changed.connect(lambda ev: seen.append((ev.type, ev.value)))
    s.events.changed.connect(lambda ev: shown.append((len(s.source.conversation.messages), s.source.title, s.result))
                             if ev.type == "source" else None)
    assert s.source.open(str(path)) is True                   # started, not done
    assert s.busy and s.source.loader.busy and s.trace is None
    assert ("running", "load") in seen
    drain_until(ex, lambda: not s.busy)
    # first the start of the file (shown while the rest loads, nothing run on it), then all of it
    (first, title, result), (last, _, _) = shown[0], shown[-1]
    assert 0 < first < 600 and "loading" in title and result is None
    assert last == 600
    assert len(s.source.conversation.messages) == 600 and s.trace is not None and s.trace.input is s.source.source_messages
    assert s.error is None and "loading" not in s.source.title


def test_a_big_file_that_fails_says_so(tmp_path, small_limits):
    bad = tmp_path / "bad.json"
    bad.write_text("[" + ", ".join(['{"role": "user", "content": "hi"}'] * 2000) + ", {")
    ex = ThreadExecutor(queued=True)
    s = Session(Workspace(tmp_path / "ws"), executor=ex)
    assert s.source.open(str(bad)) is True
    drain_until(ex, lambda: not s.busy)
    assert s.error is not None and "bad.json" in s.error.what and s.error.todo
    assert s.source.conversation is None


def test_a_parameter_change_reruns_from_the_layer_it_concerns(tmp_path):
    path = tmp_path / "s.jsonl"
    write_session(path, 200)
    s = Session(Workspace(tmp_path / "ws"), strategy="s08")
    s.setup.pin_strategy()                                    # as gui --strategy s08 (the file's own is claude_code)
    assert s.source.open(str(path))
    before = s.trace
    s.setup.set_param("context_limit", 1000)
    after = s.trace
    assert after is not before
    assert all(a is b for a, b in zip(after.steps[:-1], before.steps[:-1]))    # kept
    assert after.steps[-1] is not before.steps[-1] and after.steps[-1].changed
    s.setup.set_param("keep_recent", 1)                       # micro_compact's: it and what follows re-run
    third = s.trace
    assert third.steps[0] is after.steps[0] and third.steps[1] is after.steps[1]
    assert third.steps[2] is not after.steps[2]


def test_a_claude_code_parameter_change_reuses_the_summary_pair_index_and_figures(tmp_path, monkeypatch):
    """buffer is auto_compact's: the rerun starts there, finds the same summary in the summarizer's cache by
    the digests of its messages (no JSON of the conversation again), reads the tool pairs of the list the
    earlier run indexed, and sizes the conversation from the figures the shared meter holds."""
    from compactscope.core.layers import claude_code as cc
    path = tmp_path / "s.jsonl"
    write_session(path, 400)
    s = Session(Workspace(tmp_path / "ws"), strategy="claude_code")
    assert s.source.open(str(path))
    s.setup.set_param("window", 20_000)
    first = s.trace
    assert first.steps[-1].layer == "auto_compact" and first.steps[-1].summary
    assert first.steps[-1].summary.get("cached") is False
    built, counted = [], []
    real_chars = cc.content_chars
    monkeypatch.setattr(cc, "content_chars", lambda m: counted.append(1) or real_chars(m))
    from compactscope.core.analysis import pairs
    real_index = pairs.ToolPairIndex
    monkeypatch.setattr(pairs, "ToolPairIndex", lambda msgs: built.append(len(msgs)) or real_index(msgs))
    s.setup.set_param("buffer", 12_000)
    second = s.trace
    assert all(a is b for a, b in zip(first.steps[:-1], second.steps[:-1]))
    last = second.steps[-1]
    assert last is not first.steps[-1] and last.summary.get("cached") is True
    assert last.messages[0] == first.steps[-1].messages[0]          # the same summary message
    assert built == []
    assert len(counted) <= len(last.messages)                      # only the messages the rerun made


def test_a_changed_message_is_a_different_summary_key():
    from compactscope.core.layers.claude_code import _compact_prompt
    from compactscope.core.summarizers import CachedSummarizer, SummaryRequest
    a = [{"role": "user", "content": "one"}, {"role": "assistant", "content": "two"}]
    b = [a[0], {"role": "assistant", "content": "two!"}]
    def key(msgs):
        return CachedSummarizer.key("x", SummaryRequest(prompt=_compact_prompt(msgs), messages=tuple(msgs)))
    assert key(a) == key([dict(m) for m in a])                     # equal messages, other objects: one key
    assert key(a) != key(b) and key(a) != key(a[:1])
    assert key(a) != CachedSummarizer.key("x", SummaryRequest(prompt=_compact_prompt(a).text()))


def test_workers_pause_the_cyclic_gc_and_give_it_back():
    import gc
    import threading
    assert gc.isenabled()
    inside, release = threading.Event(), threading.Event()

    def work():
        with S.gc_paused():
            inside.set()
            release.wait(10)
    t = threading.Thread(target=work)
    t.start()
    inside.wait(10)
    with S.gc_paused():
        assert not gc.isenabled()
    assert not gc.isenabled()                                      # the other worker is still inside
    release.set()
    t.join(10)
    assert gc.isenabled()


def test_the_preview_is_the_first_lines_and_reads_on_when_they_are_long(tmp_path, monkeypatch):
    """The preview holds the lines of the first PREVIEW_BYTES; when the first lines are longer (a big tool
    result at the start), it reads on up to PREVIEW_MAX_BYTES instead of showing nothing."""
    monkeypatch.setattr(S, "PREVIEW_BYTES", 20_000)
    monkeypatch.setattr(S, "PREVIEW_MAX_BYTES", 200_000)
    short = tmp_path / "short.jsonl"
    write_session(short, 600)                             # ~380 bytes a line
    conv = S.read_preview(str(short))
    assert conv is not None and 40 <= len(conv.messages) < 60
    long_head = tmp_path / "long.jsonl"
    write_session(long_head, 600)
    lines = long_head.read_text().splitlines(keepends=True)
    rec = json.loads(lines[0])
    rec["message"]["content"] = "x" * 30_000              # the first line alone is longer than PREVIEW_BYTES
    long_head.write_text(json.dumps(rec) + "\n" + "".join(lines[1:]))
    conv = S.read_preview(str(long_head))
    assert conv is not None and len(conv.messages) > 100 and conv.messages[0]["content"] == "x" * 30_000
    monkeypatch.setattr(S, "PREVIEW_MAX_BYTES", 25_000)   # nothing whole within the most it may read
    assert S.read_preview(str(long_head)) is None


@pytest.mark.parametrize("strategy,changes", [
    ("claude_code", [("buffer", 12_000), ("window", 60_000), ("buffer", 30_000)]),
    ("hermes", [("summary_target_ratio", 0.25), ("protect_last_n", 4)]),
    ("codex", None), ("gemini_cli", None)])
def test_parameter_changes_keep_the_token_estimator_and_equal_a_fresh_run(tmp_path, strategy, changes):
    """The session hands the strategy's token estimator (which learns the loaded conversation once) to the
    next run; each result equals the one a fresh session makes with the same parameters."""
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
    from bench_memory import write_session as write_tools_session
    path = tmp_path / "s.jsonl"
    write_tools_session(path, 600)
    s = Session(Workspace(tmp_path / "ws"), strategy=strategy)
    s.setup.pin_strategy()
    assert s.source.open(str(path))
    est = s.result.trace and s._tokens[1]
    if changes is None:                       # a change of the strategy's first parameter that is a number
        st = s.setup.strategy
        p = next(p for p in st.params if isinstance(p.default, int) and not isinstance(p.default, bool))
        changes = [(p.name, p.default * 2 or 3)]
    for k, (name, value) in enumerate(changes):
        s.setup.set_param(name, value)
        assert s._tokens[1] is est
        fresh = Session(Workspace(tmp_path / f"ws{k}"), strategy=strategy, params=dict(s.setup.params))
        fresh.setup.pin_strategy()
        assert fresh.source.open(str(path))
        assert dict(fresh.setup.params) == dict(s.setup.params)
        assert [st.layer for st in s.trace.steps] == [st.layer for st in fresh.trace.steps]
        for a, b in zip(s.trace.steps, fresh.trace.steps):
            assert json.dumps(a.messages, sort_keys=True, default=str) == \
                json.dumps(b.messages, sort_keys=True, default=str), (name, a.layer)
            assert (a.size_after, a.tokens_after, a.changed) == (b.size_after, b.tokens_after, b.changed)
