"""The workspace cache: content-addressed files (the same input and layer write the same file once),
a size cap with least-recently-used pruning, and ``compactscope cache [--clear]``."""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from compactscope.app.cli import main
from compactscope.core.files import cache
from compactscope.core.files.workspace import Workspace


def big_conversation(n_turns: int = 30, size: int = 3000) -> list:
    msgs = [{"role": "user", "content": "Refactor the parser."}]
    for k in range(n_turns):
        tid = f"toolu_{k:04d}"
        msgs.append({"role": "assistant", "content": [{"type": "tool_use", "id": tid, "name": "Read",
                                                       "input": {"file_path": f"src/m{k}.py"}}]})
        msgs.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": tid,
                                                  "content": f"line {k}\n" * (size // 7)}]})
    msgs.append({"role": "assistant", "content": [{"type": "text", "text": "Done."}]})
    return msgs


@pytest.fixture
def user_cache(tmp_path, monkeypatch):
    """The user's cache folder, in a temporary place."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv(cache.ENV_MAX, raising=False)
    root = cache.cache_root()
    assert str(root).startswith(str(tmp_path))
    return root


def test_five_identical_runs_leave_the_cache_the_size_of_one(user_cache, tmp_path, capsys):
    src = tmp_path / "session.json"
    msgs = big_conversation()[:-1]
    msgs[-1]["content"][0]["content"] = "x" * 60_000          # the budget persists this fresh result
    src.write_text(json.dumps(msgs))
    # the summary fires (a transcript of the whole list) and the budget persists the big last result
    args = ["run", str(src), "--set", "context_limit=2000", "--set", "max_bytes=50000", "--json"]
    assert main(args) == 0
    first = json.loads(capsys.readouterr().out)
    ws = Path(first["workdir"])
    files = sorted(p for p in ws.rglob("*") if p.is_file())
    assert sorted(p.parent.name for p in files) == [".transcripts", "tool-results"]
    one = cache.usage()
    assert one.sessions == 1 and one.objects == 2 and one.bytes > 60_000 + 2_000
    for _ in range(4):
        assert main(args) == 0
        out = json.loads(capsys.readouterr().out)
        assert [s["changed"] for s in out["steps"]] == [s["changed"] for s in first["steps"]]
    five = cache.usage()
    assert five.sessions == 5 and five.objects == 2
    assert five.bytes == one.bytes                          # nothing was stored twice
    # every session has its own names (what the model was shown), each a link to the one stored file
    inodes = {os.stat(p).st_ino for s in (user_cache / cache.SESSIONS).iterdir() for p in s.rglob("*") if p.is_file()}
    assert len(inodes) == 2


def test_a_transcript_is_named_by_its_content(tmp_path):
    ws = Workspace(tmp_path / "ws")
    msgs = big_conversation(5, 100)
    a = ws.write_transcript(msgs)
    assert a.name.startswith("transcript_") and a.read_text().count("\n") == len(msgs)
    assert [json.loads(line) for line in a.read_text().splitlines()] == msgs
    assert ws.write_transcript(list(msgs)) == a                                  # the same list again
    assert Workspace(tmp_path / "ws").write_transcript(json.loads(json.dumps(msgs))) == a   # equal content
    changed = msgs[:3] + [{"role": "user", "content": "other"}] + msgs[4:]
    b = ws.write_transcript(changed)
    assert b != a and json.loads(b.read_text().splitlines()[3]) == {"role": "user", "content": "other"}
    assert sorted(p.name for p in a.parent.iterdir()) == sorted([a.name, b.name])   # no temporary left


def _session(root: Path, name: str, payload: bytes, used: float) -> Path:
    """A session folder whose one file is stored in the cache, last used at ``used``."""
    store = cache.Store(root)
    folder = root / cache.SESSIONS / name / ".transcripts"
    folder.mkdir(parents=True)
    assert cache.link(store.put(payload), folder / "t.jsonl")
    os.utime(root / cache.SESSIONS / name, (used, used))
    return root / cache.SESSIONS / name


def test_prune_removes_the_least_recently_used_sessions_down_to_the_cap(tmp_path):
    root = tmp_path / "c"
    now = time.time()
    old = _session(root, "old", b"a" * 4000, now - 3000)
    mid = _session(root, "mid", b"b" * 4000, now - 2000)
    shared = _session(root, "shared", b"a" * 4000, now - 2500)      # links the same object as "old"
    new = _session(root, "new", b"c" * 4000, now - 1000)
    assert cache.usage(root).bytes == 12_000 and cache.usage(root).objects == 3
    res = cache.prune(root, cap=8000)
    # "old" goes first but frees nothing ("shared" still links its content); then "shared" goes
    assert not old.exists() and not shared.exists() and mid.exists() and new.exists()
    assert res.sessions_removed == 2 and res.objects_removed == 1
    u = cache.usage(root)
    assert u.bytes == 8000 and u.objects == 2 and u.orphans == 0
    # the running process's workspaces are never pruned
    cache.mark_active(mid)
    cache.prune(root, cap=1)
    assert mid.exists() and not new.exists()


def test_a_default_workspace_prunes_the_cache_to_its_cap(user_cache, monkeypatch):
    now = time.time()
    for k in range(6):
        _session(user_cache, f"s{k}", bytes([65 + k]) * 50_000, now - 6000 + k * 600)
    monkeypatch.setenv(cache.ENV_MAX, "120kB")
    monkeypatch.setitem(cache._SCHEDULE, "next", 0)
    ws = Workspace()
    ws.persist_tool_result("t1", "fresh result " * 10)
    ws.pruning.join(30)                                   # the prune runs beside the work
    u = cache.usage()
    assert u.bytes <= 120_000
    assert {p.name for p in (user_cache / cache.SESSIONS).iterdir()} == {"s4", "s5", ws.root.name}
    assert ws.read_persisted(".task_outputs/tool-results/t1.txt") == "fresh result " * 10


def test_cache_command_shows_and_clears(user_cache, tmp_path, capsys):
    _session(user_cache, "a", b"x" * 3000, time.time() - 100)
    (user_cache / "recordings").mkdir()
    (user_cache / "recordings" / "live.jsonl").write_text("{}\n")        # the user's: never removed
    assert main(["cache"]) == 0
    out = capsys.readouterr().out
    assert str(user_cache) in out and "1 session folder(s)" in out and "3.0 kB" in out and "recordings/" in out
    assert main(["cache", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["sessions"] == 1 and d["bytes"] == 3000 and d["objects"] == 1
    assert main(["cache", "--clear"]) == 0
    assert "cleared: 1 session(s) and 1 stored file(s) removed" in capsys.readouterr().out
    u = cache.usage()
    assert u.sessions == 0 and u.objects == 0 and u.bytes == 0
    assert (user_cache / "recordings" / "live.jsonl").exists()
    assert main(["cache", "--max", "1MB"]) == 2                          # --max goes with --prune
    assert "--max goes with --prune" in capsys.readouterr().err
    assert main(["cache", "--prune", "--max", "lots"]) == 2
    assert "is not a size" in capsys.readouterr().err


def test_parse_size():
    assert cache.parse_size("500MB") == 500_000_000
    assert cache.parse_size("2 GiB") == 2 * 1024 ** 3
    assert cache.parse_size("1.5g") == 1_500_000_000
    assert cache.parse_size("0") == 0
    with pytest.raises(ValueError):
        cache.parse_size("-1MB")
