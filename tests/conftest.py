import os
import tempfile
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
# Tests never read or write the user's own settings (QSettings follows XDG_CONFIG_HOME on Linux).
os.environ["XDG_CONFIG_HOME"] = tempfile.mkdtemp(prefix="compactscope-test-config-")
# ... nor the user's cache (workspaces of default engines, error reports): a folder of their own.
os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="compactscope-test-cache-")
ROOT = Path(__file__).resolve().parent.parent

import pytest  # noqa: E402

CORPUS = ROOT.parent / "shared" / "corpus"
EXAMPLES = ROOT / "assets" / "examples"


@pytest.fixture
def corpus():
    if not CORPUS.is_dir():
        pytest.skip("../shared/corpus is not present")
    return CORPUS


@pytest.fixture
def examples():
    return EXAMPLES


@pytest.fixture
def isolated_settings(tmp_path):
    """Fresh QSettings for one test."""
    from PySide6.QtCore import QSettings
    for fmt in (QSettings.NativeFormat, QSettings.IniFormat):
        QSettings.setPath(fmt, QSettings.UserScope, str(tmp_path / "settings"))
    return tmp_path / "settings"


@pytest.fixture
def make_window(qtbot, tmp_path, isolated_settings):
    """A factory of shown main windows with their own settings and workspace."""
    from compactscope.app.main_window import MainWindow
    from compactscope.app.settings import Settings
    from compactscope.core.files.workspace import Workspace

    def make():
        w = MainWindow(Settings(), workspace=Workspace(tmp_path / "ws"))
        qtbot.addWidget(w)
        w.resize(1400, 900)
        w.show()
        return w
    return make
