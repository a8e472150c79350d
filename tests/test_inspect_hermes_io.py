"""Reading Inspect archives and hermes databases safely: zstd members, the total decompressed-size cap
(zip bombs), a missing zstd backport, and SQLite databases in WAL mode read strictly read-only."""
from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
import sys
import tracemalloc
import zlib

import pytest

from compactscope.core.loaders import LoadError, load
from compactscope.core.loaders import inspect as inspect_loader
from compactscope.core.loaders.base import Probe

from helpers import deflated_zeros, deflated_zip

SAMPLE = {"id": "s", "epoch": 1, "attachments": {"h": "the task"},
          "messages": [{"id": "a", "role": "system", "content": "sys"},
                       {"id": "b", "role": "user", "content": "attachment://h"},
                       {"role": "assistant", "content": "done", "id": "m1"}],
          "events": [{"event": "model", "model": "m", "input_refs": [[0, 2]], "input": [],
                      "output": {"choices": [{"message": {"id": "m1", "role": "assistant", "content": "done"}}],
                                 "usage": {"input_tokens": 12, "output_tokens": 3}}}],
          "events_data": {"messages": [{"id": "a", "role": "system", "content": "sys"},
                                       {"id": "b", "role": "user", "content": "attachment://h"}], "calls": []}}


def _zstd_zipfile():
    if sys.version_info >= (3, 14):
        import zipfile
        return zipfile
    from backports.zstd import zipfile
    return zipfile


def test_zstd_eval_written_by_the_zipfile_backport(tmp_path):
    zf = _zstd_zipfile()
    p = tmp_path / "log.eval"
    with zf.ZipFile(p, "w", compression=zf.ZIP_ZSTANDARD) as z:
        z.writestr("header.json", json.dumps({"eval": {"task": "t", "model": "m"}}))
        z.writestr("samples/s_epoch_1.json", json.dumps(SAMPLE))
    with zf.ZipFile(p) as z:
        assert {i.compress_type for i in z.infolist()} == {93}
    conv = load(p).main
    assert [m["content"] for m in conv.messages] == ["sys", "the task", "done"]
    [call] = conv.extra["calls"]
    assert [m["content"] for m in call["input"]] == ["sys", "the task"] and call["input_range"] == (0, 2)
    assert conv.meta[2].usage.input_tokens == 12


def test_zstd_without_the_backport_says_what_to_install(tmp_path, monkeypatch):
    import zipfile as stdlib_zipfile
    if sys.version_info >= (3, 14):
        pytest.skip("the standard zipfile reads zstd")
    if "zipfile_zstd" in sys.modules:
        pytest.skip("inspect-ai (imported by an earlier test: the [inspect] extra) patched the standard zipfile to "
                    "read zstd")
    zf = _zstd_zipfile()
    p = tmp_path / "log.eval"
    with zf.ZipFile(p, "w", compression=zf.ZIP_ZSTANDARD) as z:
        z.writestr("header.json", "{}")
        z.writestr("samples/s_epoch_1.json", json.dumps(SAMPLE))
    monkeypatch.setattr(inspect_loader, "zipfile", stdlib_zipfile)
    monkeypatch.setattr(inspect_loader, "ZSTD", False)
    with pytest.raises(LoadError, match="backports.zstd") as e:
        load(p)
    assert str(p) in str(e.value) and "zstd" in str(e.value)


def test_a_zip_bomb_is_refused_quickly(tmp_path, monkeypatch):
    """30 members of 90 MB of zeros each (2.7 GB) in a 2.7 MB file: every member is under the per-member
    limit, their total is not. Refused from the sizes the archive declares, before any decompression."""
    data, crc = deflated_zeros(90)
    bomb = deflated_zip([(f"samples/{k}_epoch_1.json", data, crc, 90 << 20) for k in range(30)])
    assert 2_000_000 < len(bomb) < 3_500_000
    p = tmp_path / "bomb.eval"
    p.write_bytes(bomb)
    tracemalloc.start()
    try:
        with pytest.raises(LoadError, match="zip bomb") as e:
            load(p)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert str(p) in str(e.value) and "2,831,155,200 bytes" in str(e.value)
    assert peak < 64 * 1024 * 1024                        # refused from the declared sizes: nothing inflated


def test_the_decompressed_cap_is_a_total_even_when_sizes_lie(tmp_path, monkeypatch):
    """Members that declare honest sizes under the cap each, but together exceed what is left: the running
    total stops the read at the member that crosses it."""
    monkeypatch.setattr(inspect_loader, "MAX_TOTAL_BYTES", 5 << 20)
    data, crc = deflated_zeros(2)
    p = tmp_path / "many.eval"
    p.write_bytes(deflated_zip([(f"samples/{k}_epoch_1.json", data, crc, 2 << 20) for k in range(4)]))
    with pytest.raises(LoadError, match="over the 5,242,880-byte limit"):
        load(p)
    # a member whose header understates its size is read only as far as it claims, then found broken
    small = json.dumps(SAMPLE).encode()
    lie = zlib.compressobj(9, zlib.DEFLATED, -15)
    big = small + bytes(8 << 20)
    body = lie.compress(big) + lie.flush()
    p2 = tmp_path / "lie.eval"
    p2.write_bytes(deflated_zip([("samples/s_epoch_1.json", body, zlib.crc32(big), len(small))]))
    with pytest.raises(LoadError, match="samples/s_epoch_1.json in the archive is broken"):
        load(p2)


# ------------------------------------------------------------------ hermes: WAL, read-only
def _wal_copy(corpus, folder):
    """The rotation database copied into ``folder`` and turned into WAL mode by a writer that adds a row
    (committed into the -wal, not checkpointed); the writer is returned still open."""
    folder.mkdir()
    db = folder / "state.db"
    shutil.copyfile(corpus / "hermes-agent" / "rotation" / "state.db", db)
    w = sqlite3.connect(db)
    w.execute("PRAGMA journal_mode=WAL")
    w.execute("PRAGMA wal_autocheckpoint=0")
    sid = w.execute("SELECT id FROM sessions WHERE ended_at IS NULL").fetchone()[0]
    w.execute("INSERT INTO messages (session_id, role, content, timestamp, active, compacted) "
              "VALUES (?, 'user', 'written just now', 1796048700.0, 1, 0)", (sid,))
    w.commit()
    return db, w


def _fingerprint(folder):
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


def test_hermes_wal_database_while_the_agent_writes(corpus, tmp_path):
    db, w = _wal_copy(corpus, tmp_path / "live")
    try:
        assert sorted(p.name for p in db.parent.iterdir()) == ["state.db", "state.db-shm", "state.db-wal"]
        before = {n: h for n, h in _fingerprint(db.parent).items() if n != "state.db-shm"}
        conv = load(db).main
        assert conv.messages[-1]["content"] == "written just now" and len(conv.messages) == 121
        assert conv.meta[-1].provenance.row == 121 and conv.segments == [0, 26, 60, 100]
        after = {n: h for n, h in _fingerprint(db.parent).items() if n != "state.db-shm"}
        assert after == before and sorted(p.name for p in db.parent.iterdir()) == ["state.db", "state.db-shm",
                                                                                   "state.db-wal"]
    finally:
        w.close()


def test_hermes_wal_file_without_shm_is_read_without_touching_the_folder(corpus, tmp_path):
    """A WAL database copied with its -wal (the agent gone, nothing checkpointed): SQLite would make a -shm
    beside it even for a read-only reader; the loader reads a private copy instead."""
    db, w = _wal_copy(corpus, tmp_path / "live")
    snap = tmp_path / "copy"
    snap.mkdir()
    shutil.copyfile(db, snap / "state.db")
    shutil.copyfile(str(db) + "-wal", snap / "state.db-wal")
    w.close()
    before = _fingerprint(snap)
    result = load(snap / "state.db")
    assert result.main.messages[-1]["content"] == "written just now"
    assert _fingerprint(snap) == before          # no -shm appeared, nothing changed
    assert any("private copy" in p.text for p in result.problems)


def test_hermes_wal_database_without_wal_file_opens_immutable(corpus, tmp_path):
    db, w = _wal_copy(corpus, tmp_path / "live")
    w.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    w.close()            # the last connection: SQLite checkpoints and removes -wal and -shm
    assert sorted(p.name for p in db.parent.iterdir()) == ["state.db"]
    before = _fingerprint(db.parent)
    assert load(db).main.messages[-1]["content"] == "written just now"
    assert _fingerprint(db.parent) == before


def test_hostile_ids_in_an_inspect_sample(tmp_path):
    """Ids of any JSON type (a list, an object) in messages, tool calls and the pool: loaded, not a crash."""
    s = json.loads(json.dumps(SAMPLE))
    s["messages"].insert(2, {"id": ["x"], "role": "assistant", "content": "",
                             "tool_calls": [{"id": {"k": 1}, "function": "bash", "arguments": {}}]})
    s["messages"].insert(3, {"id": {"y": 2}, "role": "tool", "tool_call_id": {"k": 1}, "content": "out"})
    s["events_data"]["messages"].append({"id": 7, "role": "tool", "tool_call_id": [1], "content": "z"})
    s["events"].append({"event": "compaction", "type": "edit", "metadata": []})
    s["events"].append({"event": "model", "input_refs": [[0, 3], [2, 1], ["a", 1], [0, 10 ** 12]], "input": []})
    p = tmp_path / "log.json"
    p.write_text(json.dumps({"version": 2, "eval": {"task": "t"}, "samples": [s]}))
    conv = load(p).main
    assert conv.messages[3]["tool_call_id"] == "{'k': 1}" and len(conv.meta) == len(conv.messages)


def test_an_archive_asking_for_a_zip_version_zipfile_cannot_read_is_refused_in_words(tmp_path):
    import zipfile
    path = tmp_path / "v91.eval"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("header.json", json.dumps({"eval": {"task": "t"}, "version": 2}))
        z.writestr("samples/s_epoch_1.json", json.dumps(SAMPLE))
    data = bytearray(path.read_bytes())
    at = data.find(b"PK\x01\x02")
    while at >= 0:                       # each central directory entry's "version needed to extract": 9.1
        data[at + 6:at + 8] = (91).to_bytes(2, "little")
        at = data.find(b"PK\x01\x02", at + 4)
    path.write_bytes(bytes(data))
    before = path.read_bytes()
    for read in (load, lambda p: inspect_loader.load(Probe(p, p.read_bytes()[:65536], p.stat().st_size))):
        with pytest.raises(LoadError) as e:
            read(path)
        assert "zip file version 9.1" in str(e.value) and "inspect log convert --to json" in str(e.value)
        assert "NotImplementedError" not in str(e.value)
    assert path.read_bytes() == before
