"""A headless command imports only what it needs: no Qt, numpy, API client, tokenizer or fleet engine for a
plain run, check or info on a small file (issue 27; the start-up time itself is bench/bench_startup.py's)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("numpy", "PySide6", "anthropic", "tiktoken", "pyarrow", "dask", "distributed", "pyqtgraph")
SMALL = [ROOT / "assets" / "examples" / "short_session.json", ROOT / "assets" / "examples" / "cc_real_compaction.jsonl"]

# runs the command in this interpreter, then prints the heavy top-level modules it imported (stdout: the command's)
PROBE = """
import io, json, os, sys
from contextlib import redirect_stdout
from compactscope.app.cli import main
with redirect_stdout(io.StringIO()):
    code = main(sys.argv[1:])
heavy = sorted({m.split('.')[0] for m in sys.modules} & set(json.loads(os.environ['CS_HEAVY'])))
sys.stderr.write('\\nRESULT ' + json.dumps({'code': code, 'heavy': heavy}) + '\\n')
"""


def _imports(argv: list[str], tmp_path) -> dict:
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "CS_HEAVY": json.dumps(HEAVY)}
    r = subprocess.run([sys.executable, "-c", PROBE, *argv], cwd=ROOT, capture_output=True, text=True, timeout=120,
                       env=env)
    line = [x for x in r.stderr.splitlines() if x.startswith("RESULT ")]
    assert line, r.stderr[-2000:]
    return json.loads(line[-1][len("RESULT "):])


@pytest.mark.parametrize("path", SMALL, ids=lambda p: p.name)
@pytest.mark.parametrize("command", [["run", "{f}", "--json"], ["check", "{f}"], ["info", "{f}"],
                                     ["info", "{f}", "--json"]], ids=lambda c: " ".join(c).replace("{f}", "FILE"))
def test_a_headless_command_does_not_import_heavy_modules(command, path, tmp_path):
    got = _imports([a.replace("{f}", str(path)) for a in command], tmp_path)
    assert got["code"] in (0, 1)
    assert got["heavy"] == []


def test_the_plugin_machinery_is_not_imported_for_a_built_in_strategy(tmp_path):
    probe = ("import sys; from compactscope.core.pipeline.engine import Engine; Engine('s08'); "
             "print(sorted(m for m in sys.modules if m.endswith(('plugin', 'plugin_worker')) or m == 'subprocess'))")
    r = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"
