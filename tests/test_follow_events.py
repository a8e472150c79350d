"""Follow mode notices what happens to the file (issue 13): deletion, recreation, replacement, a folder in
its place, same-size in-place rewrites, truncate-then-regrow; each is an event, and following goes on."""
from __future__ import annotations

import json
import os
import shutil
import threading

from compactscope.core.live import follow as F
from compactscope.core.live.follow import FollowThread, Follower


def _line(i: int, text: str = "x") -> bytes:
    role = "user" if i % 2 == 0 else "assistant"
    return (json.dumps({"role": role, "content": f"{text}{i}"}) + "\n").encode()


def _lines(n: int, text: str = "x") -> bytes:
    return b"".join(_line(i, text) for i in range(n))


def _append(p, data: bytes) -> None:
    with p.open("ab") as fh:
        fh.write(data)


def _poll(f: Follower):
    u = f.poll()
    assert u is not None
    return u


def test_every_change_is_an_event_and_following_goes_on(tmp_path):
    p = tmp_path / "t.jsonl"
    p.write_bytes(_lines(4))
    f = Follower(p)
    u = f.poll(force=True)
    assert u.event == F.FIRST and u.lines == 4 and len(u.result.main.messages) == 4

    with p.open("ab") as fh:                               # appended
        fh.write(_lines(6)[len(_lines(4)):])
    u = _poll(f)
    assert u.event == F.APPENDED and u.lines == 6 and [n for n, _ in u.new_lines] == [5, 6]

    data = p.read_bytes()                                   # rewritten in place, same size
    p.write_bytes(data.replace(b'"x0"', b'"y0"'))
    os.utime(p, ns=(0, os.stat(p).st_mtime_ns + 10**9))
    u = _poll(f)
    assert u.event == F.REWRITTEN and u.restarted and u.reset and u.lines == 6
    assert u.result.main.messages[0]["content"] == "y0" and "rewritten" in u.detail

    p.write_bytes(_lines(2, "z") + _lines(9, "w")[len(_lines(2, "w")):])   # truncated, then longer again
    u = _poll(f)
    assert u.event in (F.TRUNCATED, F.REWRITTEN) and u.restarted and u.lines == 9
    assert [m["content"] for m in u.result.main.messages[:2]] == ["z0", "z1"]

    p.unlink()                                              # deleted
    u = _poll(f)
    assert u.event == F.DELETED and u.result is None and "gone" in u.error
    assert f.poll() is None                                 # said once

    p.write_bytes(_lines(3, "n"))                           # recreated
    u = _poll(f)
    assert u.event == F.RECREATED and u.lines == 3 and u.result.main.messages[2]["content"] == "n2"

    p.unlink()                                              # a folder in its place
    p.mkdir()
    u = _poll(f)
    assert u.event == F.NOT_A_FILE and "folder" in u.error
    p.rmdir()
    p.write_bytes(_lines(5))
    u = _poll(f)
    assert u.event == F.RECREATED and u.lines == 5

    other = tmp_path / "other.jsonl"                        # replaced by another file (a new inode)
    other.write_bytes(_lines(7, "r"))
    os.replace(other, p)
    u = _poll(f)
    assert u.event in (F.REPLACED, F.REWRITTEN) and u.lines == 7 and u.result.main.messages[0]["content"] == "r0"


def test_a_touch_without_a_change_reloads_nothing(tmp_path):
    p = tmp_path / "t.jsonl"
    p.write_bytes(_lines(4))
    f = Follower(p)
    f.poll(force=True)
    os.utime(p, ns=(0, os.stat(p).st_mtime_ns + 10**9))
    assert f.poll() is None and f.reloads == 1


def test_the_thread_survives_every_event(tmp_path):
    p = tmp_path / "t.jsonl"
    p.write_bytes(_lines(2))
    events: list = []
    seen = threading.Event()

    def on_update(u):
        events.append(u.event)
        seen.set()
    t = FollowThread(p, on_update, interval=0.02)
    t.start()
    try:
        def step(action, want):
            seen.clear()
            action()
            for _ in range(250):
                if want in events:
                    return
                seen.wait(0.02)
            raise AssertionError(f"{want} not seen: {events}")
        step(lambda: None, F.FIRST)
        step(lambda: p.unlink(), F.DELETED)
        step(lambda: p.mkdir(), F.NOT_A_FILE)
        step(lambda: (shutil.rmtree(p), p.write_bytes(_lines(3))), F.RECREATED)
        step(lambda: _append(p, _line(3)), F.APPENDED)
        assert t.is_alive()
    finally:
        t.stop()


def test_the_window_shows_what_happened_to_the_followed_file(qtbot, make_window, tmp_path):
    win = make_window()
    p = tmp_path / "live.jsonl"
    p.write_bytes(_lines(4))
    from compactscope.app.live import open_live
    open_live(win, 2)
    ctl, panel = win.live_controller, win.live_panel
    assert ctl.start_follow(str(p))
    try:
        qtbot.waitUntil(lambda: win.session.source.conversation is not None and len(win.session.source.conversation.messages) == 4, timeout=10000)
        data = p.read_bytes()                                # the same size, other content
        p.write_bytes(data.replace(b'"x0"', b'"q0"'))
        os.utime(p, ns=(0, os.stat(p).st_mtime_ns + 10**9))
        qtbot.waitUntil(lambda: win.session.source.conversation.messages[0]["content"] == "q0", timeout=10000)
        assert "rewritten in place" in panel.log.toPlainText()
        p.unlink()
        qtbot.waitUntil(lambda: panel.error_box.isVisible(), timeout=10000)
        assert "gone" in panel.error_box.text() and panel.state == "error"
        assert len(win.session.source.conversation.messages) == 4           # the last good load stays on screen
        win.grab().save(str(tmp_path / "follow-gone.png"))
        p.write_bytes(_lines(6, "b"))
        qtbot.waitUntil(lambda: len(win.session.source.conversation.messages) == 6, timeout=10000)
        assert not panel.error_box.isVisible() and "is back" in panel.log.toPlainText()
        assert ctl.follow is not None and ctl.follow.is_alive()
    finally:
        ctl.stop_follow()
