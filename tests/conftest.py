import os
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

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
