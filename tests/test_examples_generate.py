"""assets/examples/generate.py reproduces the committed examples byte for byte (the bundled files are
what the script makes, not hand edits)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "assets" / "examples"


def test_generate_reproduces_the_committed_examples(tmp_path):
    r = subprocess.run([sys.executable, str(EXAMPLES / "generate.py"), "--out", str(tmp_path)], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    def examples(folder):
        return sorted(p.name for p in folder.iterdir() if p.suffix in (".json", ".jsonl"))
    made = examples(tmp_path)
    assert made == examples(EXAMPLES) and made
    for name in made:
        assert (tmp_path / name).read_bytes() == (EXAMPLES / name).read_bytes(), f"{name} differs from generate.py"
