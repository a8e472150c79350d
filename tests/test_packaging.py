"""The wheel installs everything under the one name ``compactscope`` (no generic top-level packages)."""
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
tomllib = pytest.importorskip("tomllib")


def _config():
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]


def test_every_source_package_is_listed():
    cfg = _config()
    listed = set(cfg["packages"])
    for name, folder in cfg["package-dir"].items():
        for init in (ROOT / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / folder)
            dotted = ".".join([name, *rel.parts]) if rel.parts else name
            assert dotted in listed, f"{init.parent} holds an __init__.py but {dotted} is not in pyproject's packages"
    assert all(p.split(".")[0] == "compactscope" for p in listed)


def test_wheel_claims_only_the_compactscope_name(tmp_path):
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q",
                        "-w", str(tmp_path), str(ROOT)], capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        pytest.skip(f"no wheel could be built here: {r.stderr.strip()[-300:]}")
    wheel = next(tmp_path.glob("compactscope-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith((".dist-info", ".data"))}
    assert tops == {"compactscope"}
    assert "compactscope/core/pipeline/engine.py" in names
    assert "compactscope/assets/examples/long_session.json" in names
    assert "compactscope/__main__.py" in names


def test_python_dash_m_runs_the_cli():
    r = subprocess.run([sys.executable, "-m", "compactscope", "strategies"], capture_output=True, text=True,
                       timeout=120, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert "s08" in r.stdout and "hermes" in r.stdout
