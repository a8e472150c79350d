"""Fleet rows are sessions: every Inspect sample and hermes chain a row of its own, subagents counted in their
session, and the same session found twice (a hermes state.db and its JSON snapshots, an Inspect .eval and
its .json, a copied file) marked as one, so the figures count it once."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

pytest.importorskip("pyarrow")

from compactscope.core.fleet import make_config, replay_session  # noqa: E402
from compactscope.core.fleet.engines import InProcess  # noqa: E402
from compactscope.core.fleet.identity import duplicates, identity_keys, session_rows  # noqa: E402
from compactscope.core.fleet.model import FleetData  # noqa: E402
from compactscope.core.fleet.run import run_fleet  # noqa: E402
from compactscope.core.fleet.store import read_compactions, read_sessions  # noqa: E402
from compactscope.core.fleet.worker import SessionTask  # noqa: E402
from compactscope.core.loaders import load  # noqa: E402


@pytest.fixture
def mixed(corpus, tmp_path):
    """An archive of several formats, with the same sessions found twice."""
    root = tmp_path / "archive"
    (root / "inspect").mkdir(parents=True)
    for name in ("react-compaction-edit.eval", "react-compaction-edit.json", "react-compaction-trim.json"):
        shutil.copy(corpus / "inspect_ai" / name, root / "inspect" / name)
    shutil.copytree(corpus / "hermes-agent" / "rotation", root / "hermes")
    (root / "cc" / "copy").mkdir(parents=True)
    shutil.copy(corpus / "entireio-cli" / "a6-e4c2a0fbd1-0-full.jsonl", root / "cc" / "a6.jsonl")
    shutil.copy(corpus / "entireio-cli" / "a6-e4c2a0fbd1-0-full.jsonl", root / "cc" / "copy" / "a6-backup.jsonl")
    shutil.copy(corpus / "claude-code-viewer" / "fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl", root / "cc" / "fe5e.jsonl")
    return root


def _task(path) -> SessionTask:
    st = Path(path).stat()
    return SessionTask(str(Path(path).resolve()), st.st_size, st.st_mtime_ns)


def test_every_inspect_sample_is_a_row(corpus):
    """Both samples of a log: queue-registry's 7 compactions are no longer lost behind config-bug's 9."""
    rows = replay_session(_task(corpus / "inspect_ai" / "react-compaction-edit.eval"), make_config())
    assert [(r["conversation"], r["sample"], r["real_compactions"]) for r in rows] == \
        [(0, "config-bug epoch 1", 9), (1, "queue-registry epoch 1", 7)]
    assert all(r["error"] is None and r["calls"] > 0 for r in rows)
    assert rows[0]["calls"] != rows[1]["calls"] and rows[0]["identity"] != rows[1]["identity"]


def test_subagents_belong_to_their_session(corpus):
    """A Claude Code file's sidechains are not rows: they are counted in the session's row."""
    result = load(corpus / "claude-code-viewer" / "fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl")
    assert session_rows(result) == [(0, [1, 2, 3, 4, 5])]
    [row] = replay_session(_task(result.path), make_config())
    assert row["subagents"] == 5 and row["conversation"] == 0


def test_identity_keys_tell_copies_from_other_parts_of_a_session(corpus):
    """entire.io checkpoints of one Claude Code session (the same sessionId, different records) are different
    parts of it, not copies; a hermes snapshot shares a session id with its database's chain."""
    parts = [load(corpus / "entireio-cli" / n).main for n in ("b8-659b3a4dd4-0-full.jsonl",
                                                                "e1-2c3e2b3f2a-0-full.jsonl")]
    assert parts[0].extra["session_id"] == parts[1].extra["session_id"]
    assert not set(identity_keys(parts[0], "claude-code")) & set(identity_keys(parts[1], "claude-code"))
    db = load(corpus / "hermes-agent" / "rotation" / "state.db").main
    snap = next((corpus / "hermes-agent" / "rotation" / "sessions").glob("*142405*.json"))
    assert set(identity_keys(db, "hermes-db")) & set(identity_keys(load(snap).main, "hermes-session"))
    rows = [{"path": "b", "conversation": 0, "identity": "x y", "calls": 5, "messages": 9, "format": "hermes-session"},
            {"path": "a", "conversation": 0, "identity": "y", "calls": 9, "messages": 9, "format": "hermes-db"},
            {"path": "c", "conversation": 1, "identity": "x", "calls": 1, "messages": 1, "format": "hermes-session"},
            {"path": "d", "conversation": 0, "identity": "z", "calls": 1, "messages": 1, "format": "hermes-session"}]
    assert duplicates(rows) == {"b#0": "a#0", "c#1": "a#0"}       # through b, c is the same session as a


def test_a_mixed_archive_has_a_row_per_session_and_each_session_counted_once(mixed, tmp_path):
    out = tmp_path / "r.parquet"
    s = run_fleet([mixed], make_config(), out, engine=InProcess())
    t = read_sessions(out).to_pylist()
    by = {(Path(r["path"]).name, r["conversation"]): r for r in t}
    # 3 Inspect logs x 2 samples, the hermes database and its 4 snapshots, 3 Claude Code files
    assert s.discovered == 11 and len(t) == 14 == s.rows
    names = {Path(r["path"]).name for r in t}
    assert "react-compaction-edit.eval" in names and "state.db" in names
    dup = {(Path(r["path"]).name, r["conversation"]): r["duplicate_of"] for r in t if r["duplicate_of"]}
    assert s.duplicates == len(dup) == 2 + 4 + 1
    edit_eval = str((mixed / "inspect" / "react-compaction-edit.eval").resolve())
    assert dup[("react-compaction-edit.json", 0)] == f"{edit_eval}#0"
    assert dup[("react-compaction-edit.json", 1)] == f"{edit_eval}#1"
    db = str((mixed / "hermes" / "state.db").resolve())
    assert [v for (n, _), v in dup.items() if n.startswith("session_")] == [f"{db}#0"] * 4
    assert ("a6-backup.jsonl", 0) in dup or ("a6.jsonl", 0) in dup
    # the trim run of the same scripted task sent other contexts: a session of its own
    assert ("react-compaction-trim.json", 0) not in dup and ("react-compaction-trim.json", 1) not in dup
    assert by[("fe5e.jsonl", 0)]["subagents"] == 5
    # the figures count each session once: the duplicates' compactions are not in them
    data = FleetData.load(out)
    assert int(data.ok.sum()) == 14 - 7
    pre, _ = data.real_pre_tokens()
    counted = sum(r["real_compactions"] for r in t if not r["duplicate_of"] and not r["error"])
    assert counted == 9 + 7 + 5 + 4 + 3 + 1
    assert len(pre) == counted - 3          # hermes records no preTokens: its 3 have no place on that axis
    every = read_compactions(out).column("kind").to_pylist()
    assert every.count("real") == counted + (9 + 7) + 3 + 1     # the duplicates' own (edit.json, 3 snapshots, a6), stored all the same
    assert "7 duplicate(s) of another row" in data.rows_line()
    # resumed: the rows carried over keep their marks
    again = run_fleet([mixed], make_config(), out, engine=InProcess())
    assert again.replayed == 0 and again.duplicates == 7
    assert sorted((r["path"], r["conversation"], r["duplicate_of"]) for r in read_sessions(out).to_pylist()) == \
        sorted((r["path"], r["conversation"], r["duplicate_of"]) for r in t)
    # the primary goes away: its copy now stands for the session
    (mixed / "cc" / "copy" / "a6-backup.jsonl").unlink()
    (mixed / "inspect" / "react-compaction-edit.eval").unlink()
    third = run_fleet([mixed], make_config(), tmp_path / "r2.parquet", engine=InProcess())
    t3 = read_sessions(tmp_path / "r2.parquet").to_pylist()
    assert third.duplicates == 4 and not any(r["duplicate_of"] for r in t3 if "inspect" in r["path"])


def test_each_file_replayed_with_its_own_pipeline_and_figures_per_strategy(mixed, tmp_path):
    """No --strategy: every session with its file's own pipeline and the settings inferred from it (hermes'
    window, the Inspect log's compaction), so the replay lands on the real compactions; the figures and the
    summary are per strategy, never Inspect's 4k compactions on Claude Code's 155k axis."""
    out = tmp_path / "r.parquet"
    run_fleet([mixed], make_config(), out, engine=InProcess())
    t = [r for r in read_sessions(out).to_pylist() if not r["duplicate_of"]]
    by = {(Path(r["path"]).name, r["conversation"]): r for r in t}
    assert {r["strategy"] for r in t} == {"claude_code", "hermes", "inspect_edit", "inspect_trim"}
    assert all("the file's own pipeline" in r["strategy_reason"] and r["not_replayed"] is None for r in t)
    db = by[("state.db", 0)]
    assert db["threshold"] == 54_400 and db["sim_compactions"] == db["real_compactions"] == 3
    assert db["first_simulated_call"] == db["first_real_auto_call"]
    edit = by[("react-compaction-edit.eval", 0)]
    assert edit["threshold"] == 4000 and edit["sim_compactions"] == 9 and edit["distance_calls"] == 0
    trim = by[("react-compaction-trim.json", 1)]
    assert trim["strategy"] == "inspect_trim" and trim["distance_calls"] == 0
    data = FleetData.load(out)
    groups = {g.strategy: g for g in data.groups()}
    assert set(groups) == {"claude_code", "hermes", "inspect_edit", "inspect_trim"}
    pre, _ = groups["claude_code"].real_pre_tokens()
    assert len(pre) and pre.min() > 100_000                        # no 4k compaction among them
    assert groups["inspect_edit"].real_pre_tokens()[0].max() < 10_000
    assert groups["inspect_edit"].whatif_default() == 3000 and groups["hermes"].whatif_default() == 50_000
    lines = data.overview_lines()
    assert any(x.startswith("inspect_edit: real compactions: 16") for x in lines)
    assert any(x.startswith("hermes: hermes replayed at its inferred threshold (median 54k") for x in lines)
    import io

    from compactscope.core.fleet.report import render
    buf = io.StringIO()
    render(data, buf, [3500])
    page = buf.getvalue()
    assert page.count('id="g') >= 4 * 4 and page.count("<svg") == 4 * 4       # four figures per strategy
    assert "<td>3,500</td>" in page          # a --threshold goes to the strategy whose scale it is
    assert "Rows left out" in page and "react-compaction-edit.json" in page


def test_a_named_strategy_replays_only_what_it_fits(mixed, tmp_path):
    """--strategy claude_code: the Claude Code sessions; the Inspect samples and the hermes chain are rows that
    say why not (another agent's pipeline). s08, no agent's pipeline, fits every file."""
    out = tmp_path / "cc.parquet"
    run_fleet([mixed], make_config("claude_code"), out, engine=InProcess())
    t = [r for r in read_sessions(out).to_pylist() if not r["duplicate_of"]]
    skipped = {Path(r["path"]).name for r in t if r["not_replayed"]}
    assert skipped == {"react-compaction-edit.eval", "react-compaction-trim.json", "state.db"}
    why = next(r["not_replayed"] for r in t if r["not_replayed"] and "state.db" in r["path"])
    assert "claude_code is Claude Code's pipeline" in why and "whose own is hermes" in why
    assert all(r["sim_compactions"] is None and r["real_compactions"] > 0 for r in t if r["not_replayed"])
    data = FleetData.load(out)
    assert [g.strategy for g in data.groups()] == ["claude_code"] and "not replayed" in data.rows_line()
    s08 = tmp_path / "s08.parquet"
    run_fleet([mixed], make_config("s08"), s08, engine=InProcess())
    assert not any(r["not_replayed"] for r in read_sessions(s08).to_pylist())
    assert {r["strategy"] for r in read_sessions(s08).to_pylist() if not r["error"]} == {"s08"}
