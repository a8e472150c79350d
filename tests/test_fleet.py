"""Fleet: discovery, one session's row, the results file, resuming, the engines (in this process,
a local process pool, a real dask.distributed cluster on loopback), and the threshold
re-evaluation against real replays."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

from compactscope.core.replay.pairing import pairs

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from compactscope.core.fleet import discover, make_config, replay_session  # noqa: E402
from compactscope.core.fleet.engines import InProcess, LocalPool  # noqa: E402
from compactscope.core.fleet.model import FleetData  # noqa: E402
from compactscope.core.fleet.run import run_fleet  # noqa: E402
from compactscope.core.fleet.store import read_compactions, read_sessions  # noqa: E402
from compactscope.core.fleet.worker import SessionTask  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
CC = ["a6-e4c2a0fbd1-0-full.jsonl", "ca-fca7ea73ac-0-full.jsonl", "e1-2c3e2b3f2a-0-full.jsonl",
      "4b-7d5121b42a-0-full.jsonl", "37-995ebed6e4-2-full.jsonl"]


def cfg_defaults() -> dict:
    from compactscope.core import strategies
    return strategies.get("claude_code").defaults()


def _task(path) -> SessionTask:
    st = os.stat(path)
    return SessionTask(str(Path(path).resolve()), st.st_size, st.st_mtime_ns)


@pytest.fixture
def projects(corpus, tmp_path):
    """A Claude Code projects folder made of corpus sessions (copied into the test's temp folder)."""
    root = tmp_path / "claude" / "projects"
    a, b = root / "-home-dev-alpha", root / "-home-dev-beta"
    a.mkdir(parents=True)
    b.mkdir(parents=True)
    for i, name in enumerate(CC):
        shutil.copy(corpus / "entireio-cli" / name, (a if i % 2 else b) / f"session-{i}.jsonl")
    viewer = corpus / "claude-code-viewer"
    for f in viewer.glob("*.jsonl"):
        shutil.copy(f, a / f.name)          # includes old-style agent-*.jsonl files of session 5c0375b4
    # newer Claude Code: <session>/subagents/agent-*.jsonl belongs to <session>.jsonl
    sub = a / "session-1" / "subagents"
    sub.mkdir(parents=True)
    shutil.copy(viewer / "agent-test-hash-123.jsonl", sub / "agent-abc.jsonl")
    (root / ".hidden").mkdir()
    shutil.copy(corpus / "entireio-cli" / CC[0], root / ".hidden" / "x.jsonl")
    (b / "notes.txt").write_text("not a session")
    (b / "node_modules" / "pkg").mkdir(parents=True)
    (b / "node_modules" / "pkg" / "package.json").write_text('{"name": "pkg"}')
    return root


def _strip(table):
    """The table without what legitimately differs between two runs (timings), sorted by path."""
    t = table.drop_columns(["seconds", "worker_peak_mb"]).sort_by("path")
    return t.to_pylist()


# ---------------------------------------------------------------- discovery
def test_discovery_finds_sessions_and_attaches_subagent_files(projects, monkeypatch):
    found = discover([projects])
    names = sorted(Path(s.path).name for s in found.sessions)
    assert names == sorted([f"session-{i}.jsonl" for i in range(len(CC))]
                           + ["1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl", "5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl",
                              "fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl"])
    parent = next(s for s in found.sessions if s.path.endswith("5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl"))
    assert sorted(Path(p).name for p in parent.subagent_files) == ["agent-test-hash-123.jsonl",
                                                                     "agent-test-hash-456.jsonl"]
    assert not found.orphan_agents
    assert all(s.size == os.path.getsize(s.path) for s in found.sessions)
    # no PATH: the projects folder of $CLAUDE_CONFIG_DIR
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(projects.parent))
    assert [s.path for s in discover().sessions] == [s.path for s in found.sessions]
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(projects.parent / "nowhere"))
    d = discover()
    assert not d.sessions and d.missing


def test_an_agent_file_without_its_session_is_reported_not_replayed(corpus, tmp_path):
    shutil.copy(corpus / "claude-code-viewer" / "agent-test-hash-123.jsonl", tmp_path / "agent-test-hash-123.jsonl")
    d = discover([tmp_path])
    assert not d.sessions and len(d.orphan_agents) == 1


# ---------------------------------------------------------------- one session
def test_a_sessions_row_matches_its_replay(corpus, tmp_path):
    from compactscope.core.loaders import load
    from compactscope.core.replay import replay
    from compactscope.core.files.workspace import Workspace
    path = corpus / "entireio-cli" / "b8-659b3a4dd4-0-full.jsonl"
    from compactscope.core.strategies import infer_params
    cfg = make_config("claude_code", {"idle_gap_minutes": "0"}, ["later=claude_code:cap_reserve=true"])
    rows = replay_session(_task(path), cfg)
    assert len(rows) == 1
    row = rows[0]
    assert row["error"] is None and row["conversation"] == 0 and row["identity"]
    conv = load(path).main
    # the session's own defaults (its version's threshold rule), under the user's --set
    inferred = infer_params("claude_code", conv)
    assert inferred.params and json.loads(row["inferred"])["params"] == inferred.params
    assert set(json.loads(row["inferred"])["reasons"]) == set(inferred.reasons)
    params = inferred.apply({"idle_gap_minutes": "0"})
    # the summary names its transcript's path: a workspace path as long as the worker's keeps tokens equal
    ws = Workspace(Path(tempfile.mkdtemp(prefix="compactscope-fleet-")) / "main")
    # the row's main columns are the free-running replay's (what the threshold slider re-evaluates)
    res = replay(conv, "claude_code", params, workspace=ws, keep_inputs=False, free=True)
    autos = [e for e in res.real_events if e["trigger"] == "auto"]
    assert row["replay_mode"] == "free"
    # the real compactions paired in both modes: following reality (the default replay) and free-running
    ws2 = Workspace(Path(tempfile.mkdtemp(prefix="compactscope-fleet-")) / "follow")
    fol = replay(conv, "claude_code", params, workspace=ws2, keep_inputs=False)
    for col, run in (("pairs", fol), ("free_pairs", res)):
        got = json.loads(row[col])
        assert [p["simulated_call"] for p in got] == [p["call"] if p else None for p in pairs(run)]
        assert all(abs(p["calls_apart"]) <= 1 for p in got)
    assert row["follow_sim_compactions"] == sum(1 for c in fol.calls if c.compacted)
    assert row["format"] == "claude-code" and row["version"] == "2.1.14"
    assert row["calls"] == len(res.calls) and row["messages"] == len(conv.messages)
    assert row["real_compactions"] == len(res.real_events) == row["real_auto_compactions"] == 2
    assert row["first_real_auto_call"] == autos[0]["call"]
    assert row["first_real_pre_tokens"] == autos[0]["pre_tokens"]
    assert row["first_simulated_call"] == res.summary_calls()[0]
    assert row["distance_calls"] == res.summary_calls()[0] - autos[0]["call"]
    assert row["threshold"] == 155_000 and row["threshold_unit"] == "tokens"
    real = [c.real_tokens for c in res.calls if c.real_tokens is not None]
    assert row["peak_context_tokens"] == max(real) and row["total_input_tokens"] == sum(real)
    assert row["sim_tokens_sent"] == res.totals()["total_input_tokens"]
    changed = {k: v for k, v in res.params.items() if res.params[k] != cfg_defaults()[k]}
    assert json.loads(row["params"]) == changed and changed["idle_gap_minutes"] == 0
    # the --compare run (167k: the reserve capped at 20,000 as from 2.1.21) fires later
    assert row["cmp_later_threshold"] == 167_000
    assert row["cmp_later_first_call"] > row["first_simulated_call"]
    # compactions: the real ones and both runs' simulated ones, with what they dropped
    kinds = [(c["kind"], c["run"]) for c in row["compactions"]]
    assert kinds.count(("real", "")) == 2
    assert kinds.count(("simulated", "")) == len(res.summary_calls())
    assert kinds.count(("simulated", "later")) == row["cmp_later_compactions"]
    real0 = next(c for c in row["compactions"] if c["kind"] == "real")
    assert real0["pre_tokens"] == autos[0]["pre_tokens"] and real0["messages_dropped"] > 0
    sim0 = next(c for c in row["compactions"] if c["kind"] == "simulated")
    assert sim0["pre_tokens"] > 155_000 and sim0["tokens_after"] < sim0["tokens_before"]
    assert sim0["dropped_tools"]          # e.g. "Bash 20, Read 9"
    # the series: one value per call; before the first summary it is what the replay compared
    assert len(row["series_context"]) == len(row["series_real"]) == row["calls"]
    k = res.summary_calls()[0]
    assert row["series_context"][:k + 1] == [c.tokens_before for c in res.calls[:k + 1]]
    assert row["series_real"] == [c.real_tokens for c in res.calls]


def test_a_broken_file_is_a_row_with_its_error(tmp_path):
    bad = tmp_path / "broken.jsonl"
    bad.write_bytes(b'{"type": "user", "message": \n\x00\x01garbage')
    [row] = replay_session(_task(bad), make_config())
    assert row["error"] and "broken.jsonl" in row["error"]
    assert row["path"] == str(bad.resolve())


# ---------------------------------------------------------------- runs, results, resuming
def test_run_writes_the_tables_and_resumes(projects, tmp_path):
    bad = projects / "-home-dev-beta" / "broken.jsonl"
    bad.write_text("{not json\n")
    out = tmp_path / "fleet.parquet"
    cfg = make_config("claude_code", {}, ["cc155=claude_code:summary_max_output=32000"])
    s = run_fleet([projects], cfg, out, engine=InProcess())
    assert s.discovered == s.replayed == len(CC) + 4 and s.errors == 1 and s.rows == s.replayed
    t = read_sessions(out)
    assert t.num_rows == s.rows
    for col in ("path", "format", "version", "calls", "real_compactions", "first_real_auto_call",
                "first_simulated_call", "distance_calls", "peak_context_tokens", "total_input_tokens",
                "cmp_cc155_tokens_sent", "findings", "error"):
        assert col in t.column_names
    errs = {p: e for p, e in zip(t.column("path").to_pylist(), t.column("error").to_pylist()) if e}
    assert list(errs) == [str(bad.resolve())]
    comp = read_compactions(out)
    assert set(comp.column("kind").to_pylist()) == {"real", "simulated"}
    assert comp.num_rows == sum(len(c) for c in pq.read_table(out, columns=["compactions"])
                                .column("compactions").to_pylist())
    subs = dict(zip(t.column("path").to_pylist(), t.column("subagents").to_pylist()))
    assert subs[str((projects / "-home-dev-alpha" / "5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl").resolve())] >= 2
    # resumed: nothing changed, nothing replayed, same rows
    again = run_fleet([projects], cfg, out, engine=InProcess())
    assert again.replayed == 0 and again.skipped == s.discovered and again.rows == s.rows
    assert _strip(read_sessions(out)) == _strip(t)
    # one file changes: only it is replayed
    f = projects / "-home-dev-beta" / "session-0.jsonl"
    st = f.stat()
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns + 10 ** 9))
    third = run_fleet([projects], cfg, out, engine=InProcess())
    assert third.replayed == 1 and third.rows == s.rows
    # another configuration is refused instead of mixing results
    from compactscope.core.fleet import FleetError
    with pytest.raises(FleetError, match="another configuration"):
        run_fleet([projects], make_config("s08"), out, engine=InProcess())


def test_a_stopped_run_keeps_what_it_finished(projects, tmp_path):
    import threading
    out = tmp_path / "fleet.parquet"
    cancel = threading.Event()
    seen = []

    def progress(p):
        seen.append(p.done)
        if p.done:
            cancel.set()
    s = run_fleet([projects], make_config(), out, engine=InProcess(), cancel=cancel, progress=progress)
    assert s.stopped and 1 <= s.rows < s.discovered and seen[0] == 0      # told at once how much there is
    rest = run_fleet([projects], make_config(), out, engine=InProcess())
    assert rest.replayed == s.discovered - s.rows and rest.rows == s.discovered


def test_local_pool_gives_the_same_table(projects, tmp_path):
    cfg = make_config()
    a, b = tmp_path / "a.parquet", tmp_path / "b.parquet"
    run_fleet([projects], cfg, a, engine=InProcess())
    s = run_fleet([projects], cfg, b, engine=LocalPool(2))
    assert s.engine.startswith("local pool of 2")
    assert _strip(pq.read_table(a)) == _strip(pq.read_table(b))


def test_dask_cluster_on_loopback_gives_the_same_table(projects, tmp_path):
    distributed = pytest.importorskip("distributed")
    from compactscope.core.fleet.engines import DaskCluster
    cfg = make_config("claude_code", {}, ["s08"])
    a, b = tmp_path / "a.parquet", tmp_path / "b.parquet"
    run_fleet([projects], cfg, a, engine=InProcess())
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address="127.0.0.1:0", silence_logs=40) as cluster:
        assert cluster.scheduler_address.startswith("tcp://127.0.0.1:")
        s = run_fleet([projects], cfg, b, engine=DaskCluster(cluster.scheduler_address))
    assert s.replayed == s.discovered and s.engine.startswith("Dask cluster")
    assert _strip(pq.read_table(a)) == _strip(pq.read_table(b))


def test_cli_fleet(projects, tmp_path):
    """No PATH: the projects folder of $CLAUDE_CONFIG_DIR; a summary in words at the end."""
    out = tmp_path / "r.parquet"
    env = dict(os.environ, CLAUDE_CONFIG_DIR=str(projects.parent))
    r = subprocess.run([sys.executable, "-m", "compactscope", "fleet", "--out", str(out), "--workers", "0"],
                       capture_output=True, text=True, env=env, timeout=300, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert f"{len(CC) + 3} file(s) replayed" in r.stdout
    assert "real compactions:" in r.stdout and "at 150k tokens:" in r.stdout
    for bad, says in ((["--strategy", "nope"], "unknown strategy"), (["--set", "nope=1"], "no parameter 'nope'"),
                      (["--compare", "x=claude_code:window=big"], "whole number")):
        r = subprocess.run([sys.executable, "-m", "compactscope", "fleet", str(projects), "--out", str(out), *bad],
                           capture_output=True, text=True, timeout=120, cwd=ROOT)
        assert r.returncode == 2 and says in r.stderr and "Traceback" not in r.stderr, r.stderr
    html = tmp_path / "fleet.html"
    r = subprocess.run([sys.executable, "-m", "compactscope", "fleet-report", str(out), "-o", str(html)],
                       capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    text = html.read_text()
    assert text.count("<svg") == 4 and "what-if 150k" in text
    assert not re.findall(r"(?:https?:)?//(?!www\.w3\.org/2000/svg)[\w.-]+\.\w", text)     # nothing fetched
    r = subprocess.run([sys.executable, "-m", "compactscope", "fleet-report", str(tmp_path / "nope.parquet"),
                        "-o", str(html)], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert r.returncode == 2 and "nope.parquet" in r.stderr and "Traceback" not in r.stderr


# ---------------------------------------------------------------- re-evaluation
def test_reevaluation_reproduces_replays_at_other_thresholds(corpus, tmp_path):
    """The threshold slider's model against real replays: the first compaction lands on the same call,
    the count and the tokens sent are close."""
    names = ["b0-2936744f3b-0-full.jsonl", "b8-659b3a4dd4-0-full.jsonl", "fc-99c919b212-0-full.jsonl",
             "44-785715c3f5-2-full.jsonl", "e1-2c3e2b3f2a-0-full.jsonl"]
    for n in names:
        shutil.copy(corpus / "entireio-cli" / n, tmp_path / n)
    out = tmp_path / "r.parquet"
    run_fleet([tmp_path], make_config(), out, engine=InProcess())
    data = FleetData.load(out)
    # each session at its own inferred threshold (155k up to 2.1.20, 167k after)
    assert sorted(set(data.thresholds)) == [155_000, 167_000]
    at_replay = data.reevaluate(data.thresholds)
    assert at_replay.per_session
    fired = data.first_sim >= 0
    assert fired.any()
    assert (at_replay.first_call[fired] == data.first_sim[fired]).all()
    assert (at_replay.compactions == data.sim_compactions).all()
    for buffer in (30_000, 47_000, 77_000):              # thresholds 150k, 133k and 103k
        T = 200_000 - 20_000 - buffer
        fixed = {"buffer": str(buffer), "cap_reserve": "true"}       # the same threshold for every version
        other = run_fleet([tmp_path], make_config("claude_code", fixed), tmp_path / f"{T}.parquet",
                          engine=InProcess())
        truth = FleetData.load(other.out)
        assert set(truth.thresholds) == {T}
        r = data.reevaluate(T)
        order = [truth.paths.index(p) for p in data.paths]
        assert (r.first_call == truth.first_sim[order]).all()
        # later ones drift with where a summary leaves the context (the model resets to the replay's median)
        # later ones drift with where a summary leaves the context (the model resets to the replay's
        # median): within one compaction down to 133k, two at 103k (a third of the 167k threshold lower)
        diff = abs(r.compactions - truth.sim_compactions[order])
        assert diff.max() <= (1 if T >= 133_000 else 2), (T, r.compactions, truth.sim_compactions[order])
        assert abs(r.total_compactions - truth.sim_compactions.sum()) <= 0.2 * truth.sim_compactions.sum()
        rel = abs(r.tokens_sent - truth.sim_tokens[order]) / truth.sim_tokens[order]
        assert rel.max() < 0.15, rel
    # lower thresholds never compact less
    counts = [data.reevaluate(t).total_compactions for t in (190_000, 150_000, 110_000, 80_000)]
    assert counts == sorted(counts)


def test_every_column_is_documented():
    from compactscope.core.fleet.store import COMPACTION, schema
    doc = (ROOT / "docs" / "fleet.md").read_text()
    cfg = make_config("claude_code", {}, ["cc155=claude_code:summary_max_output=32000"])
    for name in schema(cfg).names:
        shown = name.replace("cmp_cc155_", "cmp_<key>_")
        assert f"| `{shown}` |" in doc, f"docs/fleet.md does not document the column {name}"
    for f in COMPACTION:
        assert f"| `{f.name}` |" in doc, f"docs/fleet.md does not document the compaction field {f.name}"


def test_report_figures_and_whatif_table_come_from_the_reevaluation(projects, tmp_path):
    import io

    from compactscope.core.fleet import figures
    from compactscope.core.fleet.report import render
    out = tmp_path / "r.parquet"
    run_fleet([projects], make_config(), out, engine=InProcess())
    data = FleetData.load(out)
    r = data.reevaluate(120_000)
    figs = {f.key: f for f in figures.all_figures(data, r)}
    pre = figs["pre"]
    real_pre, auto = data.real_pre_tokens()
    assert sum(int(s.counts.sum()) for s in pre.series if s.label.startswith("real")) == len(real_pre)
    assert int(pre.series[-1].counts.sum()) == len(r.pre_tokens) and len(r.pre_tokens) > 0
    assert any(abs(x - 120_000) < 1 for x, _, _ in pre.lines)
    assert all(pre.edges[0] <= x <= pre.edges[-1] for x, _, _ in pre.lines)
    per = figs["compactions"]
    assert int(per.series[-1].counts.sum()) == int((r.compactions > 0).sum())
    bars = figs["tokens"]
    assert bars.values[bars.labels.index("claude_code at 120k")] == pytest.approx(np.nansum(r.tokens_sent))
    rows = figures.whatif_table(data, [120_000, 167_000])
    assert rows[0]["compactions"] == r.total_compactions >= rows[1]["compactions"]
    buf = io.StringIO()
    render(data, buf, [120_000])
    page = buf.getvalue()
    assert f"<td>120k</td><td class=n>{r.total_compactions}</td>" in page
    assert page.count("<svg") == 4 and "Content-Security-Policy" in page


def test_a_worker_that_crashes_or_hangs_is_one_row(tmp_path, monkeypatch):
    """A replay that kills its worker process or never ends: that session is a row with the error (found by
    replaying the sessions in flight one at a time), every other session is replayed as usual."""
    # the plugin runs in the worker itself: in its own process (the default) its os._exit could not kill the
    # worker (tests/test_hardening2.py checks that)
    monkeypatch.setenv("COMPACTSCOPE_PLUGIN_ISOLATION", "thread")
    plugin = tmp_path / "trap.py"
    plugin.write_text(
        "import os, time\n"
        "def compact(messages):\n"
        "    text = repr(messages)\n"
        "    if 'FLEET-HANG' in text:\n"
        "        time.sleep(600)\n"
        "    if 'FLEET-CRASH' in text:\n"
        "        os._exit(3)\n"
        "    return messages\n")
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    for name, word in [("a", "hello"), ("b", "FLEET-CRASH"), ("c", "again"), ("d", "FLEET-HANG"), ("e", "more"),
                       ("f", "last")]:
        (sessions / f"{name}.json").write_text(json.dumps([{"role": "user", "content": f"{word} please"},
                                                           {"role": "assistant", "content": "done"},
                                                           {"role": "user", "content": "thanks"}]))
    cfg = make_config(f"{plugin}:compact", infer=False)
    out = tmp_path / "r.parquet"
    s = run_fleet([sessions], cfg, out, engine=LocalPool(2, timeout=4))
    t = read_sessions(out, ["path", "error", "calls"]).to_pylist()
    errors = {Path(r["path"]).stem: r["error"] for r in t if r["error"]}
    assert set(errors) == {"b", "d"} and s.rows == 6
    assert "died" in errors["b"] and "longer than 4 s" in errors["d"]
    assert all(r["calls"] == 2 for r in t if not r["error"])
    # the hanging session the last one replayed alone (it once went back to the shared pool, forever)
    for f in sessions.glob("*.json"):
        if f.stem not in ("a", "d"):
            f.unlink()
    s = run_fleet([sessions], cfg, tmp_path / "r2.parquet", engine=LocalPool(2, timeout=4))
    t = read_sessions(tmp_path / "r2.parquet", ["path", "error"]).to_pylist()
    assert s.rows == 2 and [Path(r["path"]).stem for r in t if r["error"]] == ["d"]


def test_progress_line_says_how_far_and_how_long():
    from compactscope.core.fleet.run import Progress
    p = Progress(done=10, total=40, bytes_done=50_000_000, bytes_total=200_000_000, errors=1, elapsed=25.0)
    assert p.eta == pytest.approx(75.0)          # by bytes: a quarter done in 25 s
    line = p.line()
    assert "10/40 files" in line and "50/200 MB" in line and "1 error" in line and "about 1 min 15 s left" in line
    assert Progress(total=3).eta is None


def test_workers_that_cannot_start_stop_the_run_with_what_to_do(tmp_path, corpus):
    """A program read from standard input cannot be imported by spawned workers: the run stops at once
    with a message (not one 'worker died' row per session), and writes no results file."""
    shutil.copy(corpus / "entireio-cli" / CC[0], tmp_path / "s.jsonl")
    out = tmp_path / "r.parquet"
    script = ("from compactscope.core.fleet import make_config, FleetError\n"
              "from compactscope.core.fleet.engines import LocalPool\n"
              "from compactscope.core.fleet.run import run_fleet\n"
              "try:\n"
              f"    run_fleet([{str(tmp_path)!r}], make_config(), {str(out)!r}, engine=LocalPool(2))\n"
              "except FleetError as e:\n"
              "    print('FleetError:', e)\n")
    r = subprocess.run([sys.executable, "-"], input=script, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert "FleetError: the worker processes cannot start" in r.stdout, r.stdout + r.stderr[-2000:]
    assert "--workers 0" in r.stdout and not out.exists()


def test_sessions_travel_in_groups_of_about_the_same_work():
    """The biggest sessions alone and first, the small ones by hundreds; every task once, in order."""
    from compactscope.core.fleet.engines import batches
    sizes = [50_000_000, 20_000_000] + [300_000] * 40 + [5_000] * 3_000
    tasks = [SessionTask(f"/s/{i}.jsonl", n, 0) for i, n in enumerate(sizes)]
    groups = batches(tasks, 20)          # 20 groups of about 20 MB of work (a session: its size + 100 KB)
    assert [t for g in groups for t in g] == tasks
    work = [sum(t.size + 100_000 for t in g) for g in groups]
    target = sum(work) / 20
    assert [len(g) for g in groups[:2]] == [1, 1] and 18 <= len(groups) <= 22
    assert all(0.9 * target <= w <= target for w in work[2:-1])
    assert max(len(g) for g in batches(tasks, 2)) == 500        # at most 500 sessions in a group
    assert batches([], 4) == [] and batches(tasks[:1], 0) == [tasks[:1]]


def _generated(tmp_path, sessions: int, mb: float) -> Path:
    sys.path.insert(0, str(ROOT / "bench"))
    from fleet_sessions import generate
    return Path(generate(tmp_path / "gen", sessions, mb, say=None, profile="projects", max_mb=0.5)["root"])


def test_a_generated_projects_folder_gives_one_table_in_process_and_on_dask_of_1_and_2_workers(corpus, tmp_path):
    """Small sessions grouped into tasks (several per group), the results table is the in-process engine's, with
    one Dask worker and with two, rows for every file (the generator's corrupt and non-JSON files included)."""
    distributed = pytest.importorskip("distributed")
    from compactscope.core.fleet.engines import DaskCluster
    root = _generated(tmp_path, 30, 1.5)
    cfg = make_config("claude_code")
    ref = tmp_path / "in.parquet"
    s0 = run_fleet([root], cfg, ref, engine=InProcess())
    assert s0.replayed == s0.discovered == 31 and s0.errors == 1
    for n in (1, 2):
        out = tmp_path / f"dask{n}.parquet"
        with distributed.LocalCluster(n_workers=n, threads_per_worker=1, processes=True, host="127.0.0.1",
                                      dashboard_address="127.0.0.1:0", silence_logs=40) as cluster:
            s = run_fleet([root], cfg, out, engine=DaskCluster(cluster.scheduler_address, per_thread=4))
        assert s.replayed == 31 and s.errors == 1
        assert _strip(pq.read_table(out)) == _strip(pq.read_table(ref)), f"{n} worker(s)"


def test_a_group_whose_dask_worker_dies_is_replayed_one_session_at_a_time(tmp_path, monkeypatch):
    """A session that kills its Dask worker takes down its group: the group's sessions are then replayed one
    per task, so only that session is a row with the error."""
    distributed = pytest.importorskip("distributed")
    import dask
    from compactscope.core.fleet.engines import DaskCluster
    monkeypatch.setenv("COMPACTSCOPE_PLUGIN_ISOLATION", "thread")     # the workers inherit it
    plugin = tmp_path / "trap.py"
    plugin.write_text("import os\n"
                      "def compact(messages):\n"
                      "    if 'FLEET-CRASH' in repr(messages):\n"
                      "        os._exit(3)\n"
                      "    return messages\n")
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    for name, word in [("a", "hello"), ("b", "FLEET-CRASH"), ("c", "again"), ("d", "more")]:
        (sessions / f"{name}.json").write_text(json.dumps([{"role": "user", "content": f"{word} please"},
                                                           {"role": "assistant", "content": "done"},
                                                           {"role": "user", "content": "thanks"}]))
    cfg = make_config(f"{plugin}:compact", infer=False)
    out = tmp_path / "r.parquet"
    with dask.config.set({"distributed.scheduler.allowed-failures": 0}), \
            distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, host="127.0.0.1",
                                     dashboard_address="127.0.0.1:0", silence_logs=50) as cluster:
        s = run_fleet([sessions], cfg, out, engine=DaskCluster(cluster.scheduler_address, per_thread=1))
    t = read_sessions(out, ["path", "error", "calls"]).to_pylist()
    errors = {Path(r["path"]).stem: r["error"] for r in t if r["error"]}
    assert s.rows == 4 and set(errors) == {"b"} and "Dask worker failed" in errors["b"]
    assert all(r["calls"] == 2 for r in t if not r["error"])


def test_a_fleet_worker_pins_nothing_in_memory(corpus):
    """A long-lived worker must not grow with the sessions it replayed: after a group of them, nothing is frozen
    out of the cyclic GC (the window's gc_paused, the commands' gc.freeze are not on the fleet's path; the
    loaders' freeze of what they made is undone at once), the GC is on, and the objects left are about as many as
    after the first session (the transcripts and replays are gone)."""
    script = (
        "import gc, sys\n"
        "from compactscope.core.fleet import make_config\n"
        "from compactscope.core.fleet.worker import SessionTask, replay_batch\n"
        "import os\n"
        "paths = sys.argv[1:]\n"
        "tasks = [SessionTask(p, os.path.getsize(p), 0) for p in paths]\n"
        "cfg = make_config('claude_code')\n"
        "replay_batch(tasks, cfg)\n"
        "first = len(gc.get_objects())\n"
        "rows = replay_batch(tasks * 3, cfg)\n"
        "assert all(r[0]['error'] is None for r in rows), rows\n"
        "del rows\n"
        "gc.collect()\n"
        "mods = [m for m in sys.modules if m.startswith(('compactscope.core.session', 'compactscope.app'))]\n"
        "print(gc.get_freeze_count(), gc.isenabled(), len(gc.get_objects()) - first, mods)\n")
    paths = [str(corpus / "entireio-cli" / n) for n in CC[:3]]
    r = subprocess.run([sys.executable, "-c", script, *paths], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    frozen, enabled, grown, mods = r.stdout.split(maxsplit=3)
    assert (frozen, enabled, mods.strip()) == ("0", "True", "[]")
    assert int(grown) < 300, r.stdout
