"""Every benchmark script runs at a small size and prints its figures (the figures themselves are
measured by running the scripts at their real sizes; here only that they still run)."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
CORPUS = ROOT.parent / "shared" / "corpus"

# script -> the arguments of its small size ({tmp} is a fresh folder); None: needs the corpus
SMALL = {
    "bench_layers.py": ["--sizes", "150,300", "--repeat", "1"],
    "bench_gui.py": ["--messages", "300", "--frames", "5"],
    "bench_live.py": ["--calls", "5", "--requests", "3"],
    "bench_load.py": ["--mb", "0.3", "--repeat", "1", "--out", "{tmp}/load.jsonl"],
    "bench_memory.py": ["--messages", "300", "--strategies", "s08"],
    "bench_plugins.py": ["--sizes", "100", "--calls", "10"],
    "bench_replay.py": ["--scaling", "20,40", "--repeat", "1"],
    "bench_window.py": ["--messages", "100", "--strategies", "s08,claude_code,hermes,inspect_edit,codex,gemini_cli"],
    "bench_cache.py": ["--messages", "300", "--runs", "2"],
    "fleet_sessions.py": ["{tmp}/sessions", "--sessions", "2", "--mb", "0.1"],
    "bench_fleet.py": ["--dir", "{tmp}/fleet", "--sessions", "12", "--mb", "0.5", "--max-mb", "0.2"],
    "bench_logs.py": ["--repeat", "1"],
    "bench_report.py": ["--runs", "1"],
    "bench_cc_accuracy.py": [str(CORPUS / "claude-code-viewer")],
    "bench_fuzz.py": ["--inputs", "20", "--workers", "1"],
    "make_codex_sessions.py": ["--out", "{tmp}/codex", "--server-only", "--requests", "3"],
    "bench_hostile.py": ["--scale", "0.05", "--repeat", "1"],
    "make_gemini_sessions.py": ["--fake-only"],          # the real CLI needs npm: only the fake server here
    "bench_events.py": ["--mb", "0.3"],
    "bench_replay_limit.py": ["--sizes", "20,40", "--repeat", "1"],
    "ref_prefix_walk.py": ["--calls", "40", "--repeat", "1"],
    "bench_pathological.py": ["--chain", "400", "--self", "200", "--tiny", "2000", "--compactions", "400", "--siblings", "1"],
    "bench_run.py": ["--messages", "300", "--repeat", "1", "--strategies", "s08,hermes"],
    "ref_parse.py": ["--messages", "300"],
    "bench_startup.py": ["--repeat", "1"],
    "bench_json_document.py": ["--mb", "2.5", "--strategies", "s08", "--forms", "body,hermes,jsonl", "--whole"],
}
# the scripts that read ../shared/corpus (they skip, saying so, where it is absent)
NEEDS_CORPUS = {"bench_logs.py", "bench_report.py", "bench_cc_accuracy.py", "bench_load.py", "fleet_sessions.py",
                "bench_fleet.py", "bench_events.py"}


def test_every_bench_script_has_a_small_size():
    assert set(SMALL) == {p.name for p in BENCH.glob("*.py")}


def _run(name: str, tmp: Path) -> tuple[str, int, str]:
    own = tmp / name.removesuffix(".py")
    own.mkdir()
    args = [a.replace("{tmp}", str(own)) for a in SMALL[name]]
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "TMPDIR": str(own)}
    r = subprocess.run([sys.executable, str(BENCH / name), *args], cwd=ROOT, capture_output=True, text=True,
                       timeout=240, env=env)
    return name, r.returncode, r.stdout + r.stderr


@pytest.fixture(scope="module")
def bench_runs(tmp_path_factory) -> dict[str, tuple[int, str]]:
    """Every script that can run here, at its small size, two at a time (each is its own process)."""
    tmp = tmp_path_factory.mktemp("bench")
    names = [n for n in SMALL if n not in NEEDS_CORPUS or CORPUS.is_dir()]
    with ThreadPoolExecutor(max_workers=2) as pool:
        return {name: (rc, out) for name, rc, out in pool.map(lambda n: _run(n, tmp), names)}


@pytest.mark.parametrize("name", sorted(SMALL))
def test_every_bench_script_runs_small(name, bench_runs):
    if name in NEEDS_CORPUS and not CORPUS.is_dir():
        pytest.skip(f"{name} reads ../shared/corpus, which is not present")
    rc, out = bench_runs[name]
    assert rc == 0, f"{name} failed:\n{out[-2000:]}"
    assert "Traceback" not in out, f"{name}:\n{out[-2000:]}"
    assert re.search(r"\d", out), f"{name} printed no figure:\n{out[-500:]}"
