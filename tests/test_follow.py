"""Following a Claude Code session file that is still being written."""
from __future__ import annotations

import threading
from pathlib import Path

import pytest

from compactscope.core.live.follow import FollowThread, Follower, LineTail
from compactscope.core.loaders import load

CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus" / "entireio-cli"
SESSION = CORPUS / "b8-659b3a4dd4-0-full.jsonl"     # 666 lines, 2 compact boundaries

needs_corpus = pytest.mark.skipif(not SESSION.exists(), reason="the shared corpus is not available")


def test_line_tail_keeps_partial_lines(tmp_path):
    p = tmp_path / "f.jsonl"
    p.write_bytes(b'{"a": 1}\n{"b"')
    t = LineTail(p)
    new, reset = t.read_new()
    assert new == [(1, b'{"a": 1}\n')] and t.partial == b'{"b"' and not reset
    assert t.read_new() == ([], False)
    with p.open("ab") as f:
        f.write(b': 2}\n{"c": 3}\n')
    new, _ = t.read_new()
    assert new == [(2, b'{"b": 2}\n'), (3, b'{"c": 3}\n')] and t.partial == b"" and t.offset == p.stat().st_size
    p.write_bytes(b'{"z": 0}\n')               # truncated and rewritten
    new, reset = t.read_new()
    assert reset and new == [(1, b'{"z": 0}\n')]


@needs_corpus
def test_follow_a_growing_claude_code_session(tmp_path):
    data = SESSION.read_bytes()
    live = tmp_path / "session.jsonl"
    live.write_bytes(b"")
    f = Follower(live)
    assert f.poll() is None or f.poll(force=True).result is None
    seen_segments = []
    pos = 0
    step = 39_989                                # chunks that cut lines anywhere
    updates = 0
    while pos < len(data):
        with live.open("ab") as fh:
            fh.write(data[pos:pos + step])
        pos += step
        upd = f.poll()
        if upd is None:
            continue
        updates += 1
        complete = data[:pos].count(b"\n")
        assert upd.lines == complete and upd.size == data[:pos].rfind(b"\n") + 1
        assert upd.partial == (not data[:pos].endswith(b"\n"))
        if upd.result is not None:
            # the line being written is never reported as broken
            assert all(p.line <= complete for p in upd.result.problems)
            assert not any("broken" in p.text or "corrupt" in p.text.lower() for p in upd.result.problems)
            seen_segments.append(len(upd.result.main.segments))
    assert updates > 30
    direct = load(SESSION)
    assert len(f.result.main.messages) == len(direct.main.messages)
    assert f.result.main.segments == direct.main.segments == [0, 53, 220]
    assert seen_segments[0] == 1 and 2 in seen_segments and seen_segments[-1] == 3
    assert seen_segments == sorted(seen_segments)   # compactions appear as the file grows, never vanish


def _wait(cond, timeout=5.0):
    import time
    end = time.monotonic() + timeout
    while not cond() and time.monotonic() < end:
        time.sleep(0.01)
    return cond()


def test_follow_thread_reports_and_stops(tmp_path):
    from compactscope.core.live.recorder import RecordingWriter
    p = tmp_path / "rec.jsonl"
    w = RecordingWriter(p, source="proxy")
    got = []
    ready = threading.Event()

    def on_update(u):
        got.append(u)
        if u.result is not None and len(u.result.main.extra["calls"]) == 2:
            ready.set()
    th = FollowThread(p, on_update, interval=0.02)
    th.start()
    try:
        assert _wait(lambda: got)
        w.call(request={"model": "m", "messages": [{"role": "user", "content": "one"}]})
        w.call(request={"model": "m", "messages": [{"role": "user", "content": "one"},
                                                   {"role": "assistant", "content": "x"},
                                                   {"role": "user", "content": "two"}]})
        assert ready.wait(5)
    finally:
        th.stop()
        w.close()
    assert not th.is_alive()
    assert got[0].error and "no model call yet" in got[0].error     # header only: said, not raised
    assert [m["content"] for m in got[-1].result.main.messages] == ["one", "x", "two"]


def test_file_removed_is_reported(tmp_path):
    p = tmp_path / "gone.jsonl"
    p.write_text('{"role": "user", "content": "hi"}\n')
    f = Follower(p)
    assert f.poll().result.main.messages[0]["content"] == "hi"
    p.unlink()
    u = f.poll()
    assert u.result is None and "gone" in u.error
