"""core/ and the headless CLI never import Qt: prove it with PySide6 made unimportable."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

BLOCK = r"""
import importlib, importlib.abc, pkgutil, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split('.')[0] in ('PySide6', 'shiboken6', 'pyqtgraph'):
            raise ImportError('Qt is blocked in this test: ' + name)
sys.meta_path.insert(0, Block())
"""


def test_every_core_module_imports_without_qt():
    code = BLOCK + r"""
import compactscope.core as core
names = []
for m in pkgutil.walk_packages(core.__path__, 'compactscope.core.'):
    importlib.import_module(m.name)
    names.append(m.name)
assert not any(k.split('.')[0] in ('PySide6', 'pyqtgraph') for k in sys.modules)
print(len(names))
"""
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert int(r.stdout.strip().splitlines()[-1]) >= 15


def test_headless_cli_runs_without_qt():
    code = BLOCK + r"""
from compactscope.app.cli import main
rc = main(['run', 'assets/examples/short_session.json', '--json', '--no-messages'])
assert rc == 0
assert 'PySide6' not in sys.modules
"""
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert '"steps"' in r.stdout


def test_window_start_does_not_load_the_fleet_stack():
    """The fleet view (pyarrow, Parquet) is imported when File > Open Fleet asks for it, not when the window starts."""
    code = r"""
import sys
import compactscope.app.main_window
import compactscope.app.gui
heavy = sorted(k for k in sys.modules if k.split('.')[0] in ('pyarrow', 'dask', 'distributed', 'pandas'))
print(heavy)
assert not heavy, heavy
import compactscope.app.fleet
assert 'pyarrow' in sys.modules
"""
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                       env={**__import__("os").environ, "QT_QPA_PLATFORM": "offscreen"})
    assert r.returncode == 0, r.stdout + r.stderr
