"""A load pauses the cyclic GC while the loader builds its result and leaves it as it found it."""
from __future__ import annotations

import gc
import json

from compactscope.core.loaders import load


def test_a_load_leaves_the_gc_as_it_was(tmp_path):
    p = tmp_path / "tiny.json"
    p.write_text(json.dumps({"messages": [{"role": "user" if i % 2 == 0 else "assistant", "content": "x"}
                                          for i in range(2000)]}))
    assert gc.isenabled()
    res = load(p)
    assert gc.isenabled() and len(res.main.messages) == 2000
    gc.disable()
    try:
        load(p)
        assert not gc.isenabled()
    finally:
        gc.enable()
